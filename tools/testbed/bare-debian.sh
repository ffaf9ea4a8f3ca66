#!/usr/bin/env bash
# `make bare-debian-check` (issue 27): the README's two commands, `make demo` then `make test`,
# run verbatim by a normal user on a bare Debian 12, in a chroot: a minbase root file system
# (mmdebstrap) with only sudo, git, ca-certificates and make added, no Rust toolchain. Everything
# else comes from tools/testbed/setup.sh installing Debian's packages from the registry, as it
# would on the user's machine, so a package missing from its list fails here.
#
#   tools/testbed/bare-debian.sh        (as root, or through sudo; needs the normal kernel
#                                        built by `make setup` to share, see below)
#   tools/testbed/bare-debian.sh image  only make (or find) the cached image
#
# What is cached, in $CACHE_DIR/bare-debian-12/:
#   image-KEY.tar   the root file system as mmdebstrap made it; KEY is the hash of the suites,
#                   mirrors and package list, so a change of any makes a new one
#   apt-archives/   the .debs the chroot's apt downloaded (apt still resolves every install
#                   against the registry's current lists; only the download is saved)
#   logs/           the last run's output, each line with the seconds since its command began
# The root file system is unpacked afresh for every run under /var/tmp and deleted after
# (BARE_DEBIAN_KEEP=1 keeps it).
#
# The slow part, the UML kernel (about 6 minutes on 2 cores cold, longer on a loaded machine),
# is shared: the host's $CACHE_DIR/linux-7.3 and the unpacked source it came from are bound
# read-only into the chroot at the same path, and the user's RFL_CC_CACHE is that path, so the
# absolute paths the tree embeds hold inside. The user's cache directory is otherwise its own
# and starts empty: bindgen-cli and cargo-fuzz are built there with Debian's cargo, as on a
# user's machine. The tree is shared only when it was built from the clone's patch series
# (setup.sh's series key) and the registry's rustc-web and gcc-12 are the versions installed
# on the host (a module must be built by the compiler that built the kernel); otherwise the
# user's `make demo` builds the kernel itself, which this says.
#
# Checks: both commands exit 0; make demo printed its table with a row of numbers for every
# algorithm it ran; make test's last line is "N passed, 0 failed" with N > 0; neither command
# built the kernel when it was shared. Mounts are made in a private mount namespace (unshare),
# so none is seen outside nor outlives the run. The guests' traffic stays inside UML, as on
# the host. Exit status 0 only if every check passed.
set -euo pipefail
source "$(dirname "$0")/config.sh"

SUITE=bookworm
VARIANT=minbase
IMAGE_PACKAGES=(sudo git ca-certificates make)
BARE_USER=dev
BARE_UID=1000
BARE_DIR=$CACHE_DIR/bare-debian-12
DEMO_TIMEOUT=${BARE_DEBIAN_DEMO_TIMEOUT:-2700}
TEST_TIMEOUT=${BARE_DEBIAN_TEST_TIMEOUT:-3600}

if [ "$(id -u)" != 0 ]; then
	command -v sudo >/dev/null || die "run as root: it makes a chroot"
	exec sudo RFL_CC_CACHE="$CACHE_DIR" BARE_DEBIAN_KEEP="${BARE_DEBIAN_KEEP:-0}" "$0" "$@"
fi

say() { echo "bare-debian: $*"; }

# Runs "$@" with every line also written to LOG, prefixed by the seconds since the start.
logged() { # LOG COMMAND...
	local log=$1 t0=$SECONDS line; shift
	: > "$log"
	set +e
	"$@" 2>&1 | while IFS= read -r line || [ -n "$line" ]; do
		printf '%s\n' "$line"; printf '%5d %s\n' $((SECONDS - t0)) "$line" >> "$log"
	done
	local status=${PIPESTATUS[0]}
	set -e
	return "$status"
}

# The mirror (URI) of the first enabled `deb` source for SUITE in /etc/apt/sources.list*,
# one-line or deb822 format.
apt_mirror() { # SUITE
	local f uri
	for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
		[ -f "$f" ] || continue
		uri=$(awk -v want="$1" '$1 == "deb" { i = 2
			if ($2 ~ /^\[/) { while (i <= NF && $i !~ /\]$/) i++; i++ }
			if ($(i + 1) == want) { print $i; exit } }' "$f")
		[ -z "$uri" ] || { echo "${uri%/}"; return; }
	done
	for f in /etc/apt/sources.list.d/*.sources; do
		[ -f "$f" ] || continue
		uri=$(awk -v want="$1" 'BEGIN { RS = "" } {
			types = ""; uris = ""; suites = ""; enabled = "yes"; n = split($0, L, "\n")
			for (i = 1; i <= n; i++) {
				if (L[i] ~ /^#/ || !match(L[i], /^[A-Za-z-]+:/)) continue
				k = tolower(substr(L[i], 1, RLENGTH - 1)); v = substr(L[i], RLENGTH + 1)
				gsub(/^[ \t]+|[ \t]+$/, "", v)
				if (k == "types") types = v; else if (k == "uris") uris = v
				else if (k == "suites") suites = v; else if (k == "enabled") enabled = v
			}
			if (types !~ /(^| )deb( |$)/ || enabled == "no") next
			ns = split(suites, S, " ")
			for (j = 1; j <= ns; j++) if (S[j] == want) { split(uris, U, " "); print U[1]; exit }
		}' "$f")
		[ -z "$uri" ] || { echo "${uri%/}"; return; }
	done
}

# The host's trust anchors that no file of Debian's ca-certificates provides (a site's own CA,
# such as a TLS-inspecting proxy's, added to the host's bundle): the chroot uses the host's
# network, so it needs them too, like its resolv.conf. Prints how many it wrote to OUTDIR.
host_extra_cas() { # OUTDIR
	find /usr/share/ca-certificates -name '*.crt' -print0 | xargs -0 -r cat | awk -v out="$1" '
		/-----BEGIN CERTIFICATE-----/ { body = ""; pem = ""; on = 1; next }
		/-----END CERTIFICATE-----/ { on = 0
			if (FILENAME == "-") known[body] = 1
			else if (!(body in known)) { n++; f = sprintf("%s/host-ca-%d.crt", out, n)
				print "-----BEGIN CERTIFICATE-----\n" pem "\n-----END CERTIFICATE-----" > f; close(f) }
			next }
		on { gsub(/[ \r\t]/, ""); body = body $0; pem = (pem == "" ? $0 : pem "\n" $0) }
		END { print n + 0 }' - /etc/ssl/certs/ca-certificates.crt
}

# ---- inside the private mount namespace: ROOT is the unpacked file system ----------------
inside() {
	local root=$1 logs=$BARE_DIR/logs
	BARE_ROOT=$root
	local home=/home/$BARE_USER src=/srv/rfl-tcp-cc.git
	local t0=$SECONDS status=0

	# The chroot's processes that are still running (a guest left behind by a killed
	# command): they are this run's, ended by their ids.
	end_strays() {
		local p
		for p in /proc/[0-9]*; do
			[ "$(readlink "$p/root" 2>/dev/null)" = "$BARE_ROOT" ] && kill -KILL "${p#/proc/}" 2>/dev/null
		done
		return 0
	}
	trap end_strays EXIT

	mount -t proc proc "$root/proc"
	mount -t sysfs sysfs "$root/sys"
	mount --rbind /dev "$root/dev"
	mount -t tmpfs -o mode=1777,nosuid,nodev tmpfs "$root/dev/shm"   # UML's guest memory
	mount -t tmpfs -o mode=755,nosuid,nodev tmpfs "$root/run"
	# /tmp stays the image's directory on its disk, as on an installed bookworm.
	mkdir -p "$BARE_DIR/apt-archives/partial"
	mount --bind "$BARE_DIR/apt-archives" "$root/var/cache/apt/archives"

	as_user() { # COMMAND: run by bash -l as the user, in its home, environment from scratch
		chroot "$root" runuser -u "$BARE_USER" -- env -i HOME="$home" USER="$BARE_USER" \
			LOGNAME="$BARE_USER" SHELL=/bin/bash LANG=C.UTF-8 TERM=dumb \
			RFL_CC_CACHE="$CACHE_DIR" bash -l -c "cd && $1"
	}

	# The project as the user gets it: a clone, from a bare copy of the checkout's HEAD that
	# the user owns, as a server's would be.
	as_user "git -c advice.detachedHead=false -c init.defaultBranch=main clone -q $src rfl-tcp-cc &&
		git -C rfl-tcp-cc log -1 --format='bare-debian: cloned %h %s'" \
		|| { say "FAIL: git clone of $PROJECT_ROOT in the chroot"; return 1; }

	# The user's cache directory: its own (bindgen-cli, cargo-fuzz, fuzz corpora are built
	# there as on a user's machine), at the host's cache path; /root is 700.
	mkdir -p "$root$CACHE_DIR"
	local d=$CACHE_DIR
	while [ "$d" != / ]; do chmod o+x "$root$d"; d=$(dirname "$d"); done
	chroot "$root" chown "$BARE_USER:" "$CACHE_DIR"
	if [ -d "$CACHE_DIR/pristine" ]; then  # the unpacked kernel source (saves its download)
		mkdir -p "$root$CACHE_DIR/pristine"
		mount --bind "$CACHE_DIR/pristine" "$root$CACHE_DIR/pristine"
		mount -o remount,bind,ro "$root$CACHE_DIR/pristine"
	fi

	# Share the host's kernel tree? Only if the clone's own setup finds it built from the
	# clone's patches (tools/testbed/setup.sh kernel, as the user, on the read-only tree: it
	# says "cached", or fails at its first write) and the registry's compilers are the host's.
	local share=1 why="" lists=/var/tmp/rfl-apt-lists apt_o cand hostv p
	if [ ! -x "$KERNEL_TREE/linux" ]; then
		share=0 why="no kernel built at $KERNEL_TREE (run 'make setup' first to share it)"
	else
		mkdir -p "$root$KERNEL_TREE"
		mount --bind "$KERNEL_TREE" "$root$KERNEL_TREE"
		mount -o remount,bind,ro "$root$KERNEL_TREE"
		if ! as_user "cd rfl-tcp-cc && tools/testbed/setup.sh kernel" > "$logs/kernel-check.log" 2>&1 ||
		   ! grep -q '^==> kernel build [0-9a-f]*: cached' "$logs/kernel-check.log"; then
			share=0 why="the clone's setup does not find $KERNEL_TREE built from its patch series ($(tail -1 "$logs/kernel-check.log"))"
		else
			# setup's key leaves the compilers out: a module must be built by the rustc (and
			# gcc, or make check sees kbuild's warning) that built the kernel.
			apt_o=(-o Dir::State::Lists=$lists -o Dir::Cache::pkgcache= -o Dir::Cache::srcpkgcache=)
			mkdir -p "$root$lists/partial"
			chroot "$root" apt-get -qq "${apt_o[@]}" update >/dev/null 2>&1 || true
			for p in rustc-web gcc-12; do
				cand=$(chroot "$root" apt-cache "${apt_o[@]}" policy "$p" 2>/dev/null | awk '/Candidate:/ {print $2}')
				hostv=$(dpkg-query -W -f='${Version}' "$p" 2>/dev/null || true)
				if [ -z "$cand" ] || [ "$cand" != "$hostv" ]; then
					share=0 why="the registry's $p is ${cand:-unknown}, the host's (which built $KERNEL_TREE) ${hostv:-not installed}: upgrade the host's and rerun make setup to share it"
				fi
			done
			rm -rf "${root:?}$lists"
		fi
		if [ "$share" = 0 ]; then umount "$root$KERNEL_TREE"; rmdir "$root$KERNEL_TREE"; fi
	fi
	if [ "$share" = 1 ]; then
		say "kernel: the host's $KERNEL_TREE ($(sed -n 's/^==> //p' "$logs/kernel-check.log")), read-only at the same path"
	else
		say "NOTE: kernel not shared: $why; the user's make demo builds it (12 minutes cold on 2 busy cores)"
	fi
	echo "$share" > "$logs/kernel-shared"
	say "chroot ready in $((SECONDS - t0)) s; now, as $BARE_USER in ~/rfl-tcp-cc: make demo, then make test"

	local t1=$SECONDS
	logged "$logs/demo.log" as_user "cd rfl-tcp-cc && timeout -k 30 $DEMO_TIMEOUT make demo" || status=$?
	echo "make-demo $status $((SECONDS - t1))" > "$logs/status"
	end_strays
	if [ "$status" != 0 ]; then
		say "FAIL: make demo exited with status $status"
		[ "$share" = 0 ] || ! grep -q "$KERNEL_TREE.*Read-only file system" "$logs/demo.log" ||
			say "(the shared $KERNEL_TREE no longer matched the clone: rebuilt by a make setup on the host during this run?)"
		return 1
	fi
	t1=$SECONDS
	logged "$logs/test.log" as_user "cd rfl-tcp-cc && timeout -k 30 $TEST_TIMEOUT make test" || status=$?
	echo "make-test $status $((SECONDS - t1))" >> "$logs/status"
	end_strays
	[ "$status" = 0 ] || { say "FAIL: make test exited with status $status"; return 1; }
	chroot "$root" apt-get -qq autoclean || true   # the cached .debs: only current versions
}

if [ "${1:-}" = --inside ]; then inside "$2"; exit; fi

# ---- on the host ------------------------------------------------------------------------
started=$SECONDS
mkdir -p "$BARE_DIR/logs"
rm -f "$BARE_DIR"/logs/*
main_mirror=${BARE_DEBIAN_MIRROR:-$(apt_mirror $SUITE)}
security_mirror=${BARE_DEBIAN_SECURITY_MIRROR:-$(apt_mirror $SUITE-security)}
main_mirror=${main_mirror:-http://deb.debian.org/debian}
security_mirror=${security_mirror:-http://deb.debian.org/debian-security}
sources=("deb $main_mirror $SUITE main" "deb $main_mirror $SUITE-updates main"
	 "deb $security_mirror $SUITE-security main")
key=$(printf '%s\n' "$VARIANT" "${IMAGE_PACKAGES[@]}" "${sources[@]}" | sha256sum | cut -c1-16)
image=$BARE_DIR/image-$key.tar

t0=$SECONDS
if [ -f "$image" ]; then
	image_how=cached
else
	if ! command -v mmdebstrap >/dev/null; then
		say "installing mmdebstrap (Debian's package)"
		apt-get update -qq || die "apt-get update failed"
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq mmdebstrap >/dev/null \
			|| die "apt-get install mmdebstrap failed"
	fi
	say "building the bare Debian 12 image ($VARIANT + ${IMAGE_PACKAGES[*]}) from $main_mirror, $security_mirror"
	rm -f "$BARE_DIR"/image-*.tar "$BARE_DIR"/image-*.tar.part
	mmdebstrap --quiet --variant=$VARIANT --include="$(IFS=,; echo "${IMAGE_PACKAGES[*]}")" \
		--format=tar $SUITE "$image.part" "${sources[@]}" || die "mmdebstrap failed"
	mv "$image.part" "$image"
	image_how=built
fi
image_s=$((SECONDS - t0))
say "image $image: $image_how in $image_s s ($(du -m "$image" | cut -f1) MB)"
[ "${1:-}" != image ] || exit 0

t0=$SECONDS
root=$(mktemp -d /var/tmp/rfl-bare-debian.XXXXXX)
chmod 755 "$root"
cleanup() {
	[ "${BARE_DEBIAN_KEEP:-0}" = 1 ] && { say "kept $root"; return; }
	# The mounts were in the namespace, gone with it; delete nothing if one is seen here.
	if grep -q " ${root}[/ ]" /proc/self/mountinfo; then
		say "mounts remain under $root: not deleted"; return
	fi
	rm -rf --one-file-system "$root"
}
trap cleanup EXIT
tar -C "$root" --numeric-owner -xpf "$image"
! findmnt -n -o OPTIONS -T "$root" | grep -qw nosuid || die "$root is on a nosuid mount: sudo cannot work there"
cp -L /etc/resolv.conf "$root/etc/resolv.conf"   # the chroot shares the host's network and name
mkdir -p "$root/usr/local/share/ca-certificates"
if [ "$(host_extra_cas "$root/usr/local/share/ca-certificates")" != 0 ]; then
	chroot "$root" update-ca-certificates >/dev/null 2>&1 || die "update-ca-certificates failed in the chroot"
fi
hostname > "$root/etc/hostname"
printf '127.0.0.1\tlocalhost\n127.0.1.1\t%s\n' "$(hostname)" > "$root/etc/hosts"  # for sudo
# An installed Debian has a kernel, so /lib/modules; a root file system from mmdebstrap has
# none. make test's cc_autoload selftest mounts its guest's tmpfs there: without the
# directory the mount fails and the guest, writing through hostfs as the user, cannot create it.
mkdir -p "$root/usr/lib/modules"
# As in any chroot: packages do not start their services (there is no init to own them).
printf '#!/bin/sh\nexit 101\n' > "$root/usr/sbin/policy-rc.d"
chmod 755 "$root/usr/sbin/policy-rc.d"
chroot "$root" useradd -m -s /bin/bash -u $BARE_UID "$BARE_USER"
echo "$BARE_USER ALL=(ALL) NOPASSWD: ALL" > "$root/etc/sudoers.d/$BARE_USER"
chmod 0440 "$root/etc/sudoers.d/$BARE_USER"
# The checkout's history, copied (--no-local: no hard links to the checkout's objects, which
# the chown would change too); the user clones it in the chroot.
git -c init.defaultBranch=main clone -q --bare --no-local "$PROJECT_ROOT" "$root/srv/rfl-tcp-cc.git"
chroot "$root" chown -R "$BARE_USER:" /srv/rfl-tcp-cc.git
say "unpacked in $((SECONDS - t0)) s at $root; user $BARE_USER with passwordless sudo"

status=0
unshare --mount --propagation private -- "$0" --inside "$root" || status=$?

# ---- what the two commands printed ------------------------------------------------------
logs=$BARE_DIR/logs
fail=0
check() { "$@" || { fail=1; return 1; }; }
# Seconds from a step's "==> WHAT" line to the next "==> " line (or the log's end).
step_s() { # LOG REGEX
	awk -v re="$2" 'started && /^ *[0-9]+ ==> / { print $1 - t; done = 1; exit }
		$0 ~ "^ *[0-9]+ ==> " re { t = $1; started = 1 }
		END { if (started && !done) print last - t } { last = $1 }' "$1"
}
kernel_state() { # LOG: what the command's setup did with the kernel
	if grep -qE '==> kernel build [0-9a-f]+: cached' "$1"; then echo cached
	elif grep -q '==> building' "$1"; then echo "built in $(step_s "$1" building) s"
	else echo "not reached"; fi
}
if [ -f "$logs/status" ]; then
	demo_s=$(awk '$1 == "make-demo" {print $3}' "$logs/status")
	test_s=$(awk '$1 == "make-test" {print $3}' "$logs/status")
fi
if [ -s "$logs/demo.log" ]; then
	say "make demo: ${demo_s:-?} s; in it: apt install $(step_s "$logs/demo.log" 'installing Debian packages')s," \
		"bindgen-cli $(step_s "$logs/demo.log" 'installing bindgen-cli')s," \
		"cargo-fuzz $(step_s "$logs/demo.log" 'installing cargo-fuzz')s," \
		"kernel: $(kernel_state "$logs/demo.log")"
	algos=$(sed -n 's/^ *[0-9]* clock: [a-z]*; algorithms: //p' "$logs/demo.log")
	demo_check() {
		local a ok=0
		grep -q '| algorithm | throughput Mbit/s |' "$logs/demo.log" || { say "FAIL: make demo printed no table"; return 1; }
		[ -n "$algos" ] || { say "FAIL: make demo did not say its algorithms"; return 1; }
		for a in ${algos//,/ }; do
			grep -qE "^ *[0-9]+ \| $a \| [0-9.]+ \| [0-9.]+% \|" "$logs/demo.log" || { say "FAIL: demo table: no result for $a"; ok=1; }
		done
		return $ok
	}
	check demo_check && say "demo table: a result for each of ${algos//,/ }"
fi
if [ -s "$logs/test.log" ]; then
	say "make test: ${test_s:-?} s; kernel: $(kernel_state "$logs/test.log")"
	summary=$(grep -E '^ *[0-9]+ [0-9]+ passed, [0-9]+ failed$' "$logs/test.log" | tail -1 | sed 's/^ *[0-9]* //')
	test_check() {
		[[ "$summary" =~ ^([0-9]+)\ passed,\ 0\ failed$ ]] && [ "${BASH_REMATCH[1]}" -gt 0 ] && return
		say "FAIL: make test's summary is '${summary:-missing}', expected 'N passed, 0 failed'"; return 1
	}
	check test_check
fi
# A shared kernel must not be rebuilt by either command (it is read-only: a try fails anyway).
if [ "$(cat "$logs/kernel-shared" 2>/dev/null)" = 1 ]; then
	for l in "$logs"/demo.log "$logs"/test.log; do
		[ -f "$l" ] || continue
		if ! grep -qE '==> kernel build [0-9a-f]+: cached' "$l"; then
			say "FAIL: $(basename "$l" .log): setup did not find the shared kernel cached"; fail=1
		fi
	done
fi
[ "$status" = 0 ] || fail=1
say "logs: $logs; whole run $((SECONDS - started)) s"
if [ "$fail" = 0 ]; then
	say "ok: make demo and make test passed as a user on bare Debian 12"
	echo "bare-debian: $summary"
else
	say "FAILED"
	exit 1
fi
