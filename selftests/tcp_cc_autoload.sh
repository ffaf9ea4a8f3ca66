#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Autoload, as on a host where the modules are installed but not loaded: each algorithm is
# loaded on demand by the three ways Linux selects a congestion control, and none of them
# hangs. A route's congctl is the hard one: `ip route ... congctl NAME` calls
# request_module("tcp_NAME") while holding RTNL, so a module whose init takes RTNL (a
# netdevice notifier, as tcp_timely registers for link speeds) deadlocked there. The
# algorithms a module registers beside its own name (timely_patched in tcp_timely) need a
# module alias to be found at all. Runs in the UML guest.
#
#   tcp_cc_autoload.sh MODULE.ko:ALGO[,ALGO...] ...     (copied to a tmpfs /lib/modules)
#   tcp_cc_autoload.sh MODULE:ALGO[,ALGO...] ...        (installed where modprobe finds them)
set -u
source "$(dirname "$0")/lib.sh"

specs=("$@")
out=$(mktemp -d /run/selftest.XXXXXX)
trap 'ns_cleanup; rm -rf "$out"' EXIT

# The UML guest shares the host's root file system: the modules go to a tmpfs over
# /lib/modules, a mount only this guest sees, where modprobe (the kernel's request_module
# helper) finds them through depmod's index. Given by name, not as MODULE.ko, they are
# installed already (the x86_64 guest: tools/vm/, the modules package).
moddir=/lib/modules/$(uname -r)
: > "$out/depmod.err"
if [[ "${specs[0]%%:*}" == *.ko ]]; then
	mount -t tmpfs -o size=64m rfl-modules /lib/modules
	mkdir -p "$moddir/extra"
	for spec in "${specs[@]}"; do cp "${spec%%:*}" "$moddir/extra/"; done
	touch "$moddir"/modules.{order,builtin,builtin.modinfo}   # none: every module is out of tree
	depmod -a 2> "$out/depmod.err"
fi

# Every request_module() through a route holds RTNL until it returns: 30 s is far beyond a
# load (well under a second here) and still ends a hang.
HANG_S=30
loaded() { grep -q "^$1 " /proc/modules; }
unload() { local i; for i in $(seq 50); do rmmod "$1" 2>/dev/null && return 0; loaded "$1" || return 0; sleep 0.1; done; rmmod "$1"; }

# via_route ALGO MOD: a route with congctl ALGO, the module not loaded before.
via_route() {
	local algo=$1 mod=$2 status
	unload "$mod" || { echo "cannot unload $mod before the test"; return 1; }
	timeout $HANG_S ip -n $NS_CLI route add 10.98.0.0/24 via 10.10.1.2 congctl "$algo"
	status=$?
	[ $status = 124 ] && { echo "ip route add ... congctl $algo hung for ${HANG_S}s (RTNL)"; return 1; }
	[ $status = 0 ] || { echo "ip route add ... congctl $algo failed ($status)"; return 1; }
	loaded "$mod" || { echo "$mod not loaded by the route"; return 1; }
	# RTNL free again: the module's deferred work may take it now, and so may anyone.
	timeout $HANG_S ip -n $NS_CLI route show 10.98.0.0/24 | grep -qw "congctl $algo" ||
		{ echo "route does not carry congctl $algo"; return 1; }
	ip -n $NS_CLI route del 10.98.0.0/24
	unload "$mod"
}

# via_sysctl ALGO MOD: the initial namespace's default, loaded on demand.
via_sysctl() {
	local algo=$1 mod=$2 before
	unload "$mod" || { echo "cannot unload $mod before the test"; return 1; }
	before=$(sysctl -n net.ipv4.tcp_congestion_control)
	timeout $HANG_S sysctl -qw net.ipv4.tcp_congestion_control="$algo" ||
		{ echo "sysctl net.ipv4.tcp_congestion_control=$algo failed"; return 1; }
	loaded "$mod" || { echo "$mod not loaded by the sysctl"; return 1; }
	sysctl -qw net.ipv4.tcp_congestion_control="$before"
	unload "$mod"
}

# via_setsockopt ALGO MOD: TCP_CONGESTION by a process with CAP_NET_ADMIN.
via_setsockopt() {
	local algo=$1 mod=$2
	unload "$mod" || { echo "cannot unload $mod before the test"; return 1; }
	timeout $HANG_S python3 -c '
import socket, sys
s = socket.socket()
s.setsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, sys.argv[1].encode())
got = s.getsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, 16).rstrip(b"\0").decode()
s.close()
sys.exit(0 if got == sys.argv[1] else "selected " + got)' "$algo" || return 1
	loaded "$mod" || { echo "$mod not loaded by setsockopt"; return 1; }
	unload "$mod"
}

n=0
for spec in "${specs[@]}"; do algos=${spec#*:}; n=$((n + 3 * $(tr ',' '\n' <<<"$algos" | wc -l))); done
ktap_plan $((n + 2))
dmesg -C
check "depmod indexes the installed modules" test -s "$moddir/modules.dep"
diag_lines "$(cat "$out/depmod.err")"

if ! setup_dumbbell 100 500 100; then
	diag "could not build the netns dumbbell"; ktap_not_ok "dumbbell setup"; ktap_finish
fi
for spec in "${specs[@]}"; do
	mod=$(basename "${spec%%:*}" .ko)
	for algo in $(tr ',' ' ' <<<"${spec#*:}"); do
		check "$algo: ip route ... congctl autoloads $mod without hanging (RTNL held)" via_route "$algo" "$mod"
		check "$algo: sysctl net.ipv4.tcp_congestion_control autoloads $mod" via_sysctl "$algo" "$mod"
		check "$algo: setsockopt(TCP_CONGESTION) autoloads $mod" via_setsockopt "$algo" "$mod"
	done
done
check "dmesg has no WARN, BUG, Oops or relocation error" dmesg_clean
ktap_finish
