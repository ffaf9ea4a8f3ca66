#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# A Rust congestion control module behaves like any other: it loads, is listed, is
# selectable by sysctl, setsockopt(TCP_CONGESTION) and route congctl, carries traffic
# through a bottleneck (also with loss and reordering), cannot be removed while a socket
# uses it, can be removed after, and leaves no WARN/BUG/Oops behind. Like in-tree algorithms
# it is restricted (only CAP_NET_ADMIN may select it until an administrator allows it), and
# the values of its module parameters can be read back from sysfs. Runs in the UML guest.
#
#   tcp_cc_module.sh MODULE.ko ALGORITHM [PARAM=VALUE...]   (parameters for insmod)
set -u
ko=$1 algo=$2
shift 2
mod_params=("$@")
mod=$(basename "$ko" .ko)
source "$(dirname "$0")/lib.sh"
# A queue deeper than any algorithm's target delay (60 ms): this test checks function,
# not queueing; the bench measures that.
RATE_MBIT=100 DELAY_US=500 QUEUE_PKTS=500
selftest_dir

# iperf3 from cli to srv; JSON into $out/$1.json. Extra iperf3 arguments follow.
iperf() {
	local tag=$1; shift
	ip netns exec $NS_CLI timeout 30 iperf3 -c $SRV_ADDR -J "$@" > "$out/$tag.json" 2>&1
}
sender_cc() { json "$out/$1.json" "d['end'].get('sender_tcp_congestion', '?')"; }
mbps() { json "$out/$1.json" "round(d['end']['sum_received']['bits_per_second'] / 1e6, 1)"; }
kbps() { json "$out/$1.json" "int(d['end']['sum_received']['bits_per_second'] / 1e3)"; }

# expect_cc TAG [cubic]: the test's sender used $algo. With "cubic" (only the sender selected
# $algo), an algorithm that needs ECN may run as its ECN-less sibling "$algo-reno", as C dctcp
# runs as "dctcp-reno": a receiver whose own algorithm does not need ECN refuses ECN for a SYN
# marked ECT, as such an algorithm's SYN is (tcp_ecn_create_request()).
expect_cc() {
	local got; got=$(sender_cc "$1")
	[ "$got" = "$algo" ] && return 0
	[ "${2-}" = cubic ] && [ "$got" = "$algo-reno" ] && return 0
	echo "sender congestion control is '$got', expected '$algo'"; return 1
}
expect_kbps() { # TAG MIN_KBIT_S
	local got; got=$(kbps "$1")
	[ -n "$got" ] && [ "$got" -ge "$2" ] || { echo "received ${got:-?} kbit/s, expected >= $2"; return 1; }
}
expect_cc_and_traffic() { expect_cc "$1" && expect_kbps "$1" "$2"; }

# Function, not performance (the bench measures that): a quarter of the link is far above
# a stalled or window-starved flow and far below what any working controller gets here;
# with 1% loss and reordering, 5 Mbit/s. The debug kernel forwards only about 5 Mbit/s
# through this dumbbell (5-6 Mbit/s measured for rust_reno, timely and rust_dctcp; 1-4 with
# the loss): there the floors are 1 Mbit/s and 250 kbit/s, still far above a stall.
if debug_kernel; then
	min_kbps=1000 min_lossy_kbps=250
	traffic_name="(debug kernel: >= 1 Mbit/s, ~20% of the ~5 Mbit/s it forwards)"
	lossy_name="(debug kernel: >= 250 kbit/s)"
elif [[ " timely timely_patched dx swift " == *" $algo "* ]]; then
	# The delay-based controllers read the guest's clock, whose timers fire hundreds of
	# microseconds late and later still when the host is busy: that noise is queueing to
	# them, and they slow down (measured on the normal clock: timely 68-79 Mbit/s on an
	# idle host, 9.5 with two kernel builds beside it; dx on the RTT fallback 28-58). On
	# simulated time that noise is gone (make demo). This check is about
	# function, so the floors are those of the debug kernel: far above a stall.
	min_kbps=1000 min_lossy_kbps=250
	traffic_name="(>= 1 Mbit/s: a delay-based controller on the guest's clock)"
	lossy_name="(>= 250 kbit/s: a delay-based controller on the guest's clock)"
else
	min_kbps=$((RATE_MBIT * 1000 / 4)) min_lossy_kbps=5000
	traffic_name="(>= 25% of ${RATE_MBIT} Mbit/s)" lossy_name="(>= 5 Mbit/s)"
fi

# Every algorithm is restricted, as in-tree ones are, except rust_reno, which mirrors C reno
# (the fallback every kernel allows).
case $algo in rust_reno) restricted=no ;; *) restricted=yes ;; esac

# select_unprivileged ALGO: setsockopt(TCP_CONGESTION) as user nobody; prints the errno name.
select_unprivileged() {
	setpriv --reuid=65534 --regid=65534 --clear-groups python3 -c '
import errno, socket, sys
s = socket.socket()
try:
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, sys.argv[1].encode())
    print("OK")
except OSError as e:
    print(errno.errorcode[e.errno])' "$1"
}
expect_restriction() {
	local allowed got
	allowed=$(cat /proc/sys/net/ipv4/tcp_allowed_congestion_control)
	got=$(select_unprivileged "$algo")
	if [ $restricted = yes ]; then
		if grep -qw "$algo" <<<"$allowed"; then echo "$algo in tcp_allowed_congestion_control: $allowed"; return 1; fi
		[ "$got" = EPERM ] || { echo "unprivileged setsockopt: $got, expected EPERM"; return 1; }
	else
		grep -qw "$algo" <<<"$allowed" || { echo "$algo not in tcp_allowed_congestion_control: $allowed"; return 1; }
		[ "$got" = OK ] || { echo "unprivileged setsockopt: $got, expected success"; return 1; }
	fi
}
# Each PARAM=VALUE given to insmod reads back from /sys/module/MOD/parameters/PARAM.
expect_params_readable() {
	local p name want got
	for p in "${mod_params[@]}"; do
		name=${p%%=*} want=${p#*=}
		got=$(cat "/sys/module/$mod/parameters/$name" 2>&1)
		[ "$got" = "$want" ] || { echo "$name: read '$got', loaded with '$want'"; return 1; }
	done
}

ktap_plan 13
dmesg -C

check "insmod $mod ${mod_params[*]}" insmod "$ko" "${mod_params[@]}"
check "$algo listed in tcp_available_congestion_control" \
	grep -qw "$algo" /proc/sys/net/ipv4/tcp_available_congestion_control
if [ $restricted = yes ]; then
	check "restricted: not allowed by default, EPERM for an unprivileged setsockopt" expect_restriction
else
	check "unrestricted: allowed by default, an unprivileged setsockopt succeeds" expect_restriction
fi
if [ ${#mod_params[@]} -gt 0 ]; then
	check "module parameters read back from /sys/module/$mod/parameters" expect_params_readable
else
	ktap_skip "module parameters read back from /sys/module/$mod/parameters" "none given"
fi

if ! setup_dumbbell $RATE_MBIT $DELAY_US $QUEUE_PKTS || ! start_iperf_server; then
	diag "could not build the netns dumbbell"; ktap_not_ok "dumbbell setup"; ktap_finish
fi
diag "dumbbell: ${RATE_MBIT} Mbit/s bottleneck, ${QUEUE_PKTS}-packet FIFO, ${DELAY_US} us reverse delay"

# Selected as the namespace's default by sysctl. Outside the initial namespace the kernel
# accepts only an allowed algorithm there, so first allow it, as an administrator would.
allowed_before=$(cat /proc/sys/net/ipv4/tcp_allowed_congestion_control)
echo "$allowed_before $algo" > /proc/sys/net/ipv4/tcp_allowed_congestion_control
ip netns exec $NS_CLI sysctl -qw net.ipv4.tcp_congestion_control="$algo"
iperf sysctl -t 2
check "selected by sysctl net.ipv4.tcp_congestion_control (once allowed)" expect_cc sysctl cubic
ip netns exec $NS_CLI sysctl -qw net.ipv4.tcp_congestion_control=cubic
echo "$allowed_before" > /proc/sys/net/ipv4/tcp_allowed_congestion_control

# Selected per socket with setsockopt(TCP_CONGESTION).
iperf setsockopt -t 3 -C "$algo"
check "selected by setsockopt(TCP_CONGESTION) (iperf3 -C)" expect_cc setsockopt
check "carries traffic through the bottleneck $traffic_name" expect_kbps setsockopt $min_kbps
diag "$algo: $(mbps setsockopt) Mbit/s"

# Selected per route.
ip -n $NS_CLI route replace $SRV_ADDR/32 via 10.10.1.2 congctl "$algo"
iperf route -t 2
check "selected by ip route ... congctl" expect_cc route cubic
ip -n $NS_CLI route del $SRV_ADDR/32

# 1% loss and reordering at the bottleneck must not stall a flow.
tc -n $NS_RTR qdisc del dev r1 parent 1:1
tc -n $NS_RTR qdisc add dev r1 parent 1:1 handle 10: \
	netem loss 1% reorder 5% 50% delay 200us limit $QUEUE_PKTS
iperf lossy -t 3 -C "$algo"
check "keeps going with 1% loss and 5% reordering $lossy_name" expect_cc_and_traffic lossy $min_lossy_kbps
diag "$algo with loss and reordering: $(mbps lossy) Mbit/s," \
	"$(json "$out/lossy.json" "d['end']['sum_sent']['retransmits']") retransmits"
tc -n $NS_RTR qdisc del dev r1 parent 1:1
tc -n $NS_RTR qdisc add dev r1 parent 1:1 handle 10: pfifo limit $QUEUE_PKTS

# A socket using the algorithm pins the module.
ip netns exec $NS_CLI iperf3 -c $SRV_ADDR -t 30 -C "$algo" >/dev/null 2>&1 &
iperf_pid=$!
uses_algo() { cc_of_flows | grep -qx "$algo"; }
# Up to 5 s for the connection to be established and listed. The debug kernel can take
# longer than that (its first interval of data took 1.8 s after the connect, and each poll
# costs about 0.1 s there): up to 60 s.
debug_kernel && pin_wait=60 || pin_wait=5
deadline=$((SECONDS + pin_wait))
until uses_algo || [ $SECONDS -ge $deadline ]; do sleep 0.1; done
if uses_algo && ! rmmod "$mod" 2>"$out/rmmod.err"; then
	ktap_ok "rmmod refused while a socket uses $algo"
	diag "rmmod said: $(cat "$out/rmmod.err")"
else
	ktap_not_ok "rmmod refused while a socket uses $algo"
	diag "flows: $(cc_of_flows | tr '\n' ' ')"
fi
kill "$iperf_pid" 2>/dev/null; wait "$iperf_pid" 2>/dev/null
check "rmmod succeeds once the sockets are closed" rmmod_retry "$mod" 50
check "$algo no longer listed after rmmod" \
	bash -c "! grep -qw '$algo' /proc/sys/net/ipv4/tcp_available_congestion_control"

check "dmesg has no WARN, BUG, Oops or relocation error" dmesg_clean
ktap_finish
