#!/usr/bin/env bash
# One-command setup: install what is missing, fetch and verify the pinned
# kernel source, apply patches/series, configure and build the User-mode
# Linux test kernel. Idempotent; slow artefacts live in $CACHE_DIR.
#
#   tools/testbed/setup.sh [deps|bindgen|cargo-fuzz|source|kernel|all]   (default: all)
set -euo pipefail
source "$(dirname "$0")/config.sh"

# Everything from Debian 12's own archive (bookworm, bookworm-updates, bookworm-security): a bare
# install with only sudo, git, ca-certificates and make (to clone over https and run make) has
# all the README's commands need after this (`make bare-debian-check` checks it in a chroot,
# tools/testbed/bare-debian.sh). The Rust toolchain is the -web one of bookworm-security, one
# version throughout (1.96): rustc, its core/alloc source, clippy, cargo (bindgen-cli and
# cargo-fuzz are built with it, and `make check` runs cargo fmt/clippy) and rustfmt. Each of
# these packages Conflicts: with Debian's older rustc, cargo, rustfmt, ... and with Debian's
# rustup package (trixie on; not in bookworm), none of which this installs over: install_deps
# stops and names them. A rustup toolchain (~/.cargo/bin, not a Debian package) does not
# conflict, and when it is first on PATH its cargo is used.
DEBIAN_PACKAGES=(
	rustc-web rust-web-src rust-web-clippy libclang-19-dev  # matched rustc, core/alloc source, clippy; bindgen's libclang
	cargo-web rustfmt-web                              # cargo and rustfmt of the same release
	build-essential flex bison bc libelf-dev libssl-dev cpio python3 rsync curl xz-utils
	ca-certificates                                    # https: crates.io for cargo, curl
	kmod iproute2 iperf3 ethtool iputils-ping procps util-linux
	qemu-system-x86 python3-matplotlib                 # matplotlib: the bench report's plots
)
# The debug flavour is built with clang (KASAN with Rust needs it; see tools/testbed/config.sh).
case "$KERNEL_FLAVOR" in normal|nonetns) ;; *) DEBIAN_PACKAGES+=(clang-19 lld-19 llvm-19) ;; esac
# x86_64: packaged by the kernel's bindeb-pkg; its guests' image built by mmdebstrap.
[ "$KERNEL_ARCH" = um ] || DEBIAN_PACKAGES+=(dpkg-dev fakeroot debhelper libdw-dev mmdebstrap)

# The config fragments merged over the base config (defconfig), in order: kernel.config,
# then the flavour's; x86_64-kcsan and x86_64-release are x86_64's with their own on top.
CONFIG_FRAGMENTS=("$PROJECT_ROOT/tools/testbed/kernel.config")
case "$KERNEL_FLAVOR" in x86_64-*) CONFIG_FRAGMENTS+=("$PROJECT_ROOT/tools/testbed/kernel-x86_64.config") ;; esac
[ "$KERNEL_FLAVOR" = normal ] || CONFIG_FRAGMENTS+=("$PROJECT_ROOT/tools/testbed/kernel-$KERNEL_FLAVOR.config")
# RFL_BASE_CONFIG (x86_64 flavours only): a kernel config to start from instead of
# defconfig, such as the running host's /boot/config-$(uname -r) (make x86-packages
# X86_BASE_CONFIG=host); the fragments still go over it. A distribution's config builds
# thousands of modules: hours here, against about 22 minutes for the small base.
if [ -n "${RFL_BASE_CONFIG:-}" ]; then
	[ "$KERNEL_ARCH" = x86_64 ] || die "RFL_BASE_CONFIG is for the x86_64 flavours (KERNEL_FLAVOR=$KERNEL_FLAVOR)"
	[ -f "$RFL_BASE_CONFIG" ] || die "RFL_BASE_CONFIG=$RFL_BASE_CONFIG: no such file"
fi

sudo_maybe() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }

install_deps() {
	local missing=()
	for p in "${DEBIAN_PACKAGES[@]}"; do
		dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
	done
	if [ ${#missing[@]} -eq 0 ]; then step "Debian packages: all present"; return; fi
	# Debian's other Rust packages that the -web ones conflict with: apt would remove them
	# (and what depends on them); say so and stop instead (apt-get --no-remove below, too).
	local conflicting=() c
	for c in rustc cargo rustfmt rust-src rust-clippy rustup rustc-mozilla cargo-mozilla rust-mozilla-src; do
		dpkg-query -W -f='${Status}' "$c" 2>/dev/null | grep -q 'install ok installed' && conflicting+=("$c")
	done
	[ ${#conflicting[@]} -eq 0 ] || die "Debian packages ${conflicting[*]} conflict with the toolchain this project uses (rustc-web, cargo-web, rustfmt-web, ... of bookworm-security): remove them first (sudo apt-get remove ${conflicting[*]}); a rustup toolchain in ~/.cargo/bin can stay"
	step "installing Debian packages: ${missing[*]}"
	sudo_maybe apt-get update -qq || die "apt-get update failed: check the network and /etc/apt/sources.list"
	DEBIAN_FRONTEND=noninteractive sudo_maybe apt-get install -y -qq --no-remove "${missing[@]}" >/dev/null \
		|| die "apt-get install ${missing[*]} failed: see the apt output above (the -web toolchain packages come from bookworm-security: is it in /etc/apt/sources.list*?)"
	[ -x "$RUSTC" ] || die "$RUSTC missing after installing rustc-web"
	[ -d "$RUST_LIB_SRC" ] || die "$RUST_LIB_SRC missing after installing rust-web-src"
	[ -x /usr/bin/cargo ] && [ -x /usr/bin/rustfmt ] || die "/usr/bin/cargo or /usr/bin/rustfmt missing after installing cargo-web and rustfmt-web"
}

# The cargo that builds bindgen-cli and cargo-fuzz: the first on PATH if it runs (a rustup
# toolchain's, as on CI's machine; rustup's shim without a toolchain does not), else Debian's
# (cargo-web). Either builds with $RUSTC, Debian's rustc (config.sh exports RUSTC). Elsewhere
# the scripts and the Makefile call plain `cargo`, which is Debian's when no other is on PATH.
find_cargo() {
	local c
	if c=$(command -v cargo) && "$c" --version >/dev/null 2>&1; then echo "$c"; return; fi
	[ -x /usr/bin/cargo ] || die "cargo not found: run 'tools/testbed/setup.sh deps' (Debian's cargo-web)"
	echo /usr/bin/cargo
}

install_bindgen() {
	if [ -x "$BINDGEN" ] && "$BINDGEN" --version 2>/dev/null | grep -q " $BINDGEN_VERSION"; then
		step "bindgen $BINDGEN_VERSION: present"; return
	fi
	local cargo; cargo=$(find_cargo)
	step "installing bindgen-cli $BINDGEN_VERSION from crates.io with $cargo (about 2 minutes)"
	"$cargo" install --locked --root "$CACHE_DIR/bindgen" --version "$BINDGEN_VERSION" bindgen-cli \
		|| die "cargo install bindgen-cli@$BINDGEN_VERSION failed"
}

# make fuzz (tools/fuzz.sh): cargo-fuzz builds libFuzzer (vendored by libfuzzer-sys) with the
# C++ compiler of build-essential; no other package.
install_cargo_fuzz() {
	local bin=$CACHE_DIR/cargo-fuzz/bin/cargo-fuzz
	if [ -x "$bin" ] && "$bin" --version 2>/dev/null | grep -q " $CARGO_FUZZ_VERSION"; then
		step "cargo-fuzz $CARGO_FUZZ_VERSION: present"; return
	fi
	local cargo; cargo=$(find_cargo)
	step "installing cargo-fuzz $CARGO_FUZZ_VERSION from crates.io with $cargo (about a minute)"
	"$cargo" install --locked --root "$CACHE_DIR/cargo-fuzz" --version "$CARGO_FUZZ_VERSION" cargo-fuzz \
		|| die "cargo install cargo-fuzz@$CARGO_FUZZ_VERSION failed"
}

fetch_source() {
	local deb=$CACHE_DIR/$KERNEL_DEB src=$CACHE_DIR/pristine/linux-source-$KERNEL_SERIES
	if [ -f "$src/.complete" ]; then step "kernel source $KERNEL_DEB_VERSION: cached"; return; fi
	mkdir -p "$CACHE_DIR"
	if ! echo "$KERNEL_DEB_SHA256  $deb" | sha256sum -c --status 2>/dev/null; then
		step "downloading $KERNEL_DEB (167 MB)"
		curl -fSL --retry 3 -o "$deb.part" \
			"$KERNEL_DEB_MIRROR/pool/main/l/linux/${KERNEL_DEB//\~/%7E}" \
			|| die "cannot download $KERNEL_DEB from $KERNEL_DEB_MIRROR: the version may have left $KERNEL_DEB_SUITE; set KERNEL_DEB_MIRROR to a mirror that keeps it, or update KERNEL_DEB_VERSION/KERNEL_DEB_SHA256 in tools/testbed/config.sh"
		echo "$KERNEL_DEB_SHA256  $deb.part" | sha256sum -c --status \
			|| die "checksum mismatch for $KERNEL_DEB (expected $KERNEL_DEB_SHA256): delete $deb.part and retry; if it persists the mirror serves a different file"
		mv "$deb.part" "$deb"
	fi
	step "unpacking kernel source"
	rm -rf "$CACHE_DIR/pristine" "$CACHE_DIR/deb-x"
	mkdir -p "$CACHE_DIR/pristine" "$CACHE_DIR/deb-x"
	dpkg-deb -x "$deb" "$CACHE_DIR/deb-x"
	tar -C "$CACHE_DIR/pristine" -xf "$CACHE_DIR"/deb-x/usr/src/linux-source-$KERNEL_SERIES.tar.*
	rm -rf "$CACHE_DIR/deb-x"
	[ -f "$src/Makefile" ] || die "unexpected layout in $KERNEL_DEB: no $src/Makefile"
	touch "$src/.complete"
}

# The build tree's identity: kernel version, patch series, config fragment.
# The key of what was applied is recorded in the tree; a different key
# reverts the old series and applies the new one in place, so make
# rebuilds only what the changed patches touch.
series_key() {
	local list p
	list=$(series_list) || return 1
	{ echo "$KERNEL_DEB_VERSION"; echo "$list";
	  for p in $list; do cat "$PROJECT_ROOT/patches/$p"; done
	  cat "$PROJECT_ROOT/tools/testbed/kernel.config"
	  # Other flavours: their fragment and toolchain too (the normal key is unchanged).
	  if [ "$KERNEL_FLAVOR" != normal ]; then
		echo "$KERNEL_FLAVOR ${KERNEL_MAKE_ARGS[*]}"; cat "${CONFIG_FRAGMENTS[@]:1}"
	  fi
	  [ -z "${RFL_BASE_CONFIG:-}" ] || cat "$RFL_BASE_CONFIG"; } | sha256sum | cut -c1-16
}
# Every patch in the order they apply, as paths under ROOT (default patches/): the series
# that patches/series names, each one's patches from its own series file (tools/series.sh).
series_list() { "$PROJECT_ROOT/tools/series.sh" list "$@"; }

prepare_tree() {
	local src=$CACHE_DIR/pristine/linux-source-$KERNEL_SERIES applied=$KERNEL_TREE/.rfl-applied
	local list old p
	list=$(series_list) || die "cannot list the patch series (patches/series)"
	if [ ! -f "$KERNEL_TREE/.rfl-tree-complete" ]; then
		step "creating build tree $KERNEL_TREE"
		rm -rf "$KERNEL_TREE"
		cp -a "$src" "$KERNEL_TREE"
		rm -f "$KERNEL_TREE/.complete"
		touch "$KERNEL_TREE/.rfl-tree-complete"
	fi
	if [ -d "$applied" ]; then
		# A copy of the patches/ that was applied; tools/series.sh list reads its layout
		# too when it is the flat one of before the split into series (one patches/series
		# of patch files).
		old=$(series_list "$applied") \
			|| die "cannot read the applied series in $applied: delete $KERNEL_TREE and rerun setup"
		if [ "$old" = "$list" ] &&
		   (for p in $list; do cmp -s "$applied/$p" "$PROJECT_ROOT/patches/$p" || exit 1; done); then
			return
		fi
		step "reverting the previously applied patch series"
		# Files the new series leaves as they were get their old mtime back below, so
		# that make rebuilds only what the changed patches touch (reverting and
		# reapplying rewrites every file of the series).
		(cd "$KERNEL_TREE" &&
			{ for p in $old; do cat "$applied/$p"; done
			  for p in $list; do cat "$PROJECT_ROOT/patches/$p"; done; } |
			sed -n 's|^+++ b/||p' | sort -u | while read -r f; do
				[ -f "$f" ] && printf '%s %s\t%s\n' "$(sha256sum < "$f" | cut -c1-64)" \
					"$(stat -c %y "$f")" "$f"
			done) > "$KERNEL_TREE/.rfl-mtimes"
		for p in $(echo "$old" | tac); do
			patch -d "$KERNEL_TREE" -p1 -R -s -f < "$applied/$p" \
				|| die "cannot revert $p from $KERNEL_TREE: delete $KERNEL_TREE and rerun setup"
		done
		rm -rf "$applied"
	fi
	for p in $list; do
		step "applying patches/$p"
		patch -d "$KERNEL_TREE" -p1 -s -f -N --dry-run < "$PROJECT_ROOT/patches/$p" >/dev/null \
			|| die "patches/$p does not apply to linux $KERNEL_DEB_VERSION: rebase it (see README, 'Changing the patches')"
		patch -d "$KERNEL_TREE" -p1 -s -f -N < "$PROJECT_ROOT/patches/$p" >/dev/null
	done
	if [ -f "$KERNEL_TREE/.rfl-mtimes" ]; then
		local sum_when sum when f kept=0
		while IFS=$'\t' read -r sum_when f; do
			sum=${sum_when%% *} when=${sum_when#* }
			if [ -f "$KERNEL_TREE/$f" ] &&
			   [ "$(sha256sum < "$KERNEL_TREE/$f" | cut -c1-64)" = "$sum" ]; then
				touch -d "$when" "$KERNEL_TREE/$f" && kept=$((kept + 1))
			fi
		done < "$KERNEL_TREE/.rfl-mtimes"
		rm -f "$KERNEL_TREE/.rfl-mtimes"
		step "$kept files unchanged by the new series keep their build time"
	fi
	mkdir -p "$applied"
	cp -R "$PROJECT_ROOT/patches/." "$applied/"
}

# Lines of the config fragments that the final .config does not carry (of an option set in
# several fragments, the last setting).
config_not_taken() {
	local l
	cat "${CONFIG_FRAGMENTS[@]}" | grep -E '^CONFIG_[A-Z0-9_]+=' | tac | awk -F= '!seen[$1]++' | while read -r l; do
		if [ "${l%=n}" != "$l" ]; then
			if grep -q "^${l%=n}=" "$KERNEL_TREE/.config"; then echo "$l"; fi
		elif ! grep -qx "$l" "$KERNEL_TREE/.config"; then
			echo "$l"
		fi
	done
}

kernel_image() { if [ "$KERNEL_ARCH" = um ]; then echo linux; else echo arch/x86/boot/bzImage; fi; }

build_kernel() {
	local key; key=$(series_key)
	if [ -f "$KERNEL_TREE/.rfl-built" ] && [ "$(cat "$KERNEL_TREE/.rfl-built")" = "$key" ] \
	   && [ -f "$KERNEL_TREE/$(kernel_image)" ]; then
		step "kernel build $key: cached"; return
	fi
	prepare_tree
	local what="UML kernel" minutes=6 image=linux targets=(linux modules)
	case "$KERNEL_FLAVOR" in normal) ;; nonetns) what="UML kernel without CONFIG_NET_NS" ;;
	*) what="$KERNEL_FLAVOR UML kernel"; minutes=20 ;; esac
	# x86_64: the kernel's own Debian packages (linux-image, linux-headers), in $CACHE_DIR.
	[ "$KERNEL_ARCH" = um ] || { what="$KERNEL_ARCH kernel packages"; minutes=45
		image=arch/x86/boot/bzImage targets=(bindeb-pkg); }
	step "configuring $what"
	if [ -n "${RFL_BASE_CONFIG:-}" ]; then
		cp "$RFL_BASE_CONFIG" "$KERNEL_TREE/.config"
		# A distribution's config names its own signing keys, which this tree has not.
		"$KERNEL_TREE/scripts/config" --file "$KERNEL_TREE/.config" --set-str SYSTEM_TRUSTED_KEYS "" \
			--set-str SYSTEM_REVOCATION_KEYS "" --disable MODULE_SIG_ALL
		"${KMAKE[@]}" -s olddefconfig >/dev/null
	else
		"${KMAKE[@]}" -s defconfig >/dev/null
	fi
	"$KERNEL_TREE/scripts/kconfig/merge_config.sh" -m -O "$KERNEL_TREE" \
		"$KERNEL_TREE/.config" "${CONFIG_FRAGMENTS[@]}" >/dev/null
	"${KMAKE[@]}" -s olddefconfig
	local missing; missing=$(config_not_taken)
	[ -z "$missing" ] || die "kernel config did not take: $(echo $missing) (a dependency is missing; run 'make -C $KERNEL_TREE ARCH=$KERNEL_ARCH menuconfig' to see why)"
	"${KMAKE[@]}" -s rustavailable >/dev/null || die "Rust is not available for the kernel build: rerun 'tools/testbed/setup.sh deps bindgen'"
	step "building $what (about $minutes minutes on 2 cores the first time)"
	local t0=$SECONDS limit=()
	# RFL_BUILD_DEADLINE (epoch seconds): stop the compiler there, with status 75, rather
	# than overrun a CI budget; make keeps what it finished, so the next run resumes.
	if [ -n "${RFL_BUILD_DEADLINE:-}" ]; then
		local left=$((RFL_BUILD_DEADLINE - $(date +%s)))
		[ "$left" -gt 0 ] || { step "no time left before RFL_BUILD_DEADLINE: $what not built"; exit 75; }
		limit=(timeout -k 30 "$left")
	fi
	set +e +o pipefail
	"${limit[@]}" "${KMAKE[@]}" -j"$(( $(nproc) + 1 ))" -s "${targets[@]}" 2>&1 | grep -v '^\s*$' | tail -n 40
	local status=${PIPESTATUS[0]}
	set -e -o pipefail
	if { [ "$status" = 124 ] || [ "$status" = 137 ]; } && [ ${#limit[@]} -gt 0 ]; then
		step "$what: build stopped at RFL_BUILD_DEADLINE after $((SECONDS - t0)) s; it resumes from $KERNEL_TREE"
		exit 75
	fi
	[ "$status" = 0 ] || die "kernel build failed (output above); the tree is $KERNEL_TREE"
	echo "$key" > "$KERNEL_TREE/.rfl-built"
	step "kernel built in $((SECONDS - t0)) s: $KERNEL_TREE/$image"
}

case "${1:-all}" in
deps) install_deps ;;
bindgen) install_bindgen ;;
cargo-fuzz) install_cargo_fuzz ;;
source) fetch_source ;;
kernel) build_kernel ;;
all) install_deps; install_bindgen; install_cargo_fuzz; fetch_source; build_kernel ;;
*) die "usage: $0 [deps|bindgen|cargo-fuzz|source|kernel|all]" ;;
esac
