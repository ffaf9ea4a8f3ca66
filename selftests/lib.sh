#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Shared helpers for the netns selftests: KTAP output, and a three-namespace dumbbell
#
#   cli (10.10.1.1) --- (10.10.1.2) rtr (10.10.2.1) --- (10.10.2.2) srv
#
# whose bottleneck is rtr's egress towards srv, so the queue is never the sender's own
# qdisc. Runs inside the UML guest; namespaces are removed on exit whatever happens.

KSFT_PASS=0 KSFT_FAIL=1 KSFT_SKIP=4
# The tools the tests use: tools/tstamp.py, and tools/lib, the Python modules the tools and
# the selftests' helpers share (struct tcp_info, inet_diag, the test server), for Python
# a test writes itself (sys.path.insert(0, os.environ["TOOLS_LIB"])).
TSTAMP_TOOL=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/tools/tstamp.py
export TOOLS_LIB=${TSTAMP_TOOL%/tstamp.py}/lib
ktap_n=0 ktap_fail=0 ktap_skip=0
NS_CLI=cli NS_RTR=rtr NS_SRV=srv
SRV_ADDR=10.10.2.2 SRV_ADDR6=fd00:10:2::2

# The debug kernel (make test-debug: KASAN, lockdep, UBSAN, ...; tools/testbed/uml-run.sh gives the
# guest RFL_KERNEL_FLAVOR=debug) moves packets about 15 times slower: about 5 Mbit/s through
# the dumbbell whatever its rate (its CPU, not the link, is the bottleneck). A check of
# throughput or timing that cannot hold there relaxes its bound on it and says so in its
# name, or is skipped with the reason: never silently.
debug_kernel() { [ "${RFL_KERNEL_FLAVOR:-normal}" = debug ]; }

ktap_plan() { echo "TAP version 13"; echo "1..$1"; }
ktap_ok() { ktap_n=$((ktap_n + 1)); echo "ok $ktap_n $*"; }
ktap_not_ok() { ktap_n=$((ktap_n + 1)); ktap_fail=$((ktap_fail + 1)); echo "not ok $ktap_n $*"; }
ktap_skip() { ktap_n=$((ktap_n + 1)); ktap_skip=$((ktap_skip + 1)); echo "ok $ktap_n $1 # SKIP ${*:2}"; }
diag() { echo "# $*"; }
# check NAME COMMAND...: one test line from a command's status; its output is kept as
# diagnostics when it fails.
check() {
	local name=$1 output; shift
	if output=$("$@" 2>&1); then ktap_ok "$name"; else ktap_not_ok "$name"; diag_lines "$output"; fi
}
diag_lines() { [ -n "$1" ] && sed 's/^/# /' <<<"$1"; return 0; }
ktap_finish() {
	echo "# totals: pass:$((ktap_n - ktap_fail - ktap_skip)) fail:$ktap_fail skip:$ktap_skip"
	[ $ktap_fail -eq 0 ] && exit $KSFT_PASS || exit $KSFT_FAIL
}

# selftest_dir: $out, a fresh directory for the test's files, and pids=(), processes to
# kill at the end; on exit, those are killed, the namespaces removed, the allowed
# congestion controls set back to what they are now, and $out removed.
selftest_dir() {
	out=$(mktemp -d /run/selftest.XXXXXX)
	pids=()
	allowed_before=$(cat /proc/sys/net/ipv4/tcp_allowed_congestion_control)
	trap selftest_cleanup EXIT
}
selftest_cleanup() {
	local p
	for p in "${pids[@]}"; do kill -KILL "$p" 2>/dev/null; done
	ns_cleanup
	echo "$allowed_before" > /proc/sys/net/ipv4/tcp_allowed_congestion_control 2>/dev/null
	rm -rf "$out"
}

ns_cleanup() {
	local ns
	for ns in $NS_CLI $NS_RTR $NS_SRV; do
		ip netns pids "$ns" 2>/dev/null | xargs -r kill -KILL 2>/dev/null
		ip netns del "$ns" 2>/dev/null
	done
	return 0
}

# setup_dumbbell RATE_MBIT DELAY_US QUEUE_PKTS [ECN_K_PKTS [MTU [NON_ECT]]]
# Bottleneck: htb at RATE on rtr->srv with a drop-tail FIFO of QUEUE packets, or, with
# ECN_K, RED marking CE above K packets (DCTCP-style step) in a buffer of the same size;
# above K, packets that cannot be marked are queued (NON_ECT "queue", the default) or
# dropped ("drop"). DELAY_US of one-way delay on the reverse path (srv->rtr), so the base
# RTT is DELAY_US plus stack time.
# The delay-stamp option is off by default (net.ipv4.tcp_delay_stamps=0): cli and srv opt
# in (1: answer it, and offer it where the control asks, as dx and TIMELY do), as the
# administrator of a host running those controls must; DUMBBELL_DEFAULTS=1 leaves both at
# the kernel's defaults (tcp_wire_defaults.sh).
setup_dumbbell() {
	local rate=$1 delay_us=$2 queue=$3 ecn_k=${4:-} mtu=${5:-1500} non_ect=${6:-queue} ns dev nd
	ns_cleanup
	ip netns add $NS_CLI && ip netns add $NS_RTR && ip netns add $NS_SRV || return 1
	# IPv6 off on the dumbbell's devices unless a test asks for it (dumbbell_ipv6): no
	# router solicitations or MLD reports in the measured queues.
	if [ -d /proc/sys/net/ipv6 ]; then
		for ns in $NS_CLI $NS_RTR $NS_SRV; do
			ip netns exec $ns sysctl -qw net.ipv6.conf.default.disable_ipv6=1 net.ipv6.conf.all.disable_ipv6=1
		done
	fi
	ip link add c0 netns $NS_CLI type veth peer name r0 netns $NS_RTR || return 1
	ip link add r1 netns $NS_RTR type veth peer name s0 netns $NS_SRV || return 1
	ip -n $NS_CLI addr add 10.10.1.1/24 dev c0
	ip -n $NS_RTR addr add 10.10.1.2/24 dev r0
	ip -n $NS_RTR addr add 10.10.2.1/24 dev r1
	ip -n $NS_SRV addr add 10.10.2.2/24 dev s0
	for ns in $NS_CLI $NS_RTR $NS_SRV; do ip -n $ns link set lo up; done
	for nd in $NS_CLI:c0 $NS_RTR:r0 $NS_RTR:r1 $NS_SRV:s0; do
		ns=${nd%%:*} dev=${nd#*:}
		# Packet-sized skbs, so the bottleneck queue counts real packets.
		ip netns exec "$ns" ethtool -K "$dev" gso off tso off gro off >/dev/null 2>&1
		ip -n "$ns" link set "$dev" mtu "$mtu" up || return 1
	done
	ip -n $NS_CLI route add default via 10.10.1.2
	ip -n $NS_SRV route add default via 10.10.2.1
	ip netns exec $NS_RTR sysctl -qw net.ipv4.ip_forward=1
	for ns in $NS_CLI $NS_SRV; do ip netns exec $ns sysctl -qw net.ipv4.tcp_ecn=1; done
	if [ "${DUMBBELL_DEFAULTS:-0}" != 1 ]; then
		for ns in $NS_CLI $NS_SRV; do
			ip netns exec $ns sysctl -qw net.ipv4.tcp_delay_stamps=1 || return 1
		done
	fi

	# One frame of the MTU (1514 bytes at 1500); the shaper's burst holds two of them.
	local frame=$((mtu + 14)) burst=3000
	[ $((2 * frame)) -gt $burst ] && burst=$((2 * frame))
	tc -n $NS_RTR qdisc add dev r1 root handle 1: htb default 1 || return 1
	tc -n $NS_RTR class add dev r1 parent 1: classid 1:1 htb rate "${rate}mbit" \
		burst $burst cburst $burst quantum $frame || return 1
	bottleneck_queue 1:1 10: "$rate" "$queue" "$ecn_k" "$mtu" "$non_ect" || return 1
	tc -n $NS_SRV qdisc add dev s0 root netem delay "${delay_us}us" limit 100000 || return 1
	return 0
}

# bottleneck_queue PARENT HANDLE RATE_MBIT QUEUE_PKTS ECN_K_PKTS MTU NON_ECT: a queue of
# QUEUE_PKTS frames of the MTU on rtr's r1 under htb class PARENT: a drop-tail FIFO, or,
# with ECN_K_PKTS, RED marking CE above K (DCTCP-style step). nodrop: a packet that is not
# ECN-capable (SYN, FIN, pure ACK) is queued, not dropped, above K, as datacenter switches
# do; only the full buffer drops. NON_ECT "drop": dropped above K instead (a switch that
# drops non-ECT data).
bottleneck_queue() {
	local parent=$1 handle=$2 rate=$3 queue=$4 ecn_k=$5 mtu=$6 non_ect=$7
	local frame=$((mtu + 14)) k_bytes nodrop=nodrop
	if [ -z "$ecn_k" ]; then
		tc -n $NS_RTR qdisc add dev r1 parent "$parent" handle "$handle" pfifo limit "$queue"
		return
	fi
	k_bytes=$((ecn_k * frame))
	[ "$non_ect" = drop ] && nodrop=
	tc -n $NS_RTR qdisc add dev r1 parent "$parent" handle "$handle" red \
		limit $((queue * frame)) min $k_bytes max $((k_bytes + 1)) avpkt $frame \
		burst $((ecn_k + 1)) probability 1.0 bandwidth "${rate}mbit" ecn $nodrop
}

# bottleneck_marked: how many packets the dumbbell's RED queue (handle 10:) has marked CE
# so far; 0 for a FIFO.
bottleneck_marked() {
	tc -n $NS_RTR -s qdisc show dev r1 |
		awk '/^qdisc / { q = ($2 == "red" && $3 == "10:") } q && /marked/ { for (i = 1; i < NF; i++) if ($i == "marked") { print $(i + 1); exit } }' |
		grep . || echo 0
}

# dumbbell_ipv6: IPv6 on the dumbbell too (after setup_dumbbell): cli fd00:10:1::1,
# rtr fd00:10:1::2 and fd00:10:2::1, srv fd00:10:2::2 ($SRV_ADDR6); no DAD, so the
# addresses work at once.
dumbbell_ipv6() {
	local ns nd
	for ns in $NS_CLI $NS_RTR $NS_SRV; do
		ip netns exec $ns sysctl -qw net.ipv6.conf.all.disable_ipv6=0 || return 1
	done
	for nd in $NS_CLI:c0 $NS_RTR:r0 $NS_RTR:r1 $NS_SRV:s0; do
		ip netns exec "${nd%%:*}" sysctl -qw "net.ipv6.conf.${nd#*:}.disable_ipv6=0" || return 1
	done
	ip -n $NS_CLI addr add fd00:10:1::1/64 dev c0 nodad &&
		ip -n $NS_RTR addr add fd00:10:1::2/64 dev r0 nodad &&
		ip -n $NS_RTR addr add fd00:10:2::1/64 dev r1 nodad &&
		ip -n $NS_SRV addr add $SRV_ADDR6/64 dev s0 nodad &&
		ip netns exec $NS_RTR sysctl -qw net.ipv6.conf.all.forwarding=1 &&
		ip -n $NS_CLI -6 route add default via fd00:10:1::2 &&
		ip -n $NS_SRV -6 route add default via fd00:10:2::1
}

# wait_listening NS tcp|udp PORT [TRIES]: wait, TRIES tenths of a second at most (50 by
# default), until a socket of namespace NS listens on PORT; status 1 if none did.
wait_listening() {
	local i flags=-ltnH
	[ "$2" = udp ] && flags=-lunH
	for i in $(seq "${4:-50}"); do
		[ -n "$(ss -N "$1" $flags "sport = :$3" 2>/dev/null)" ] && return 0
		sleep 0.1
	done
	return 1
}

# start_helper_server SCRIPT PORT [ARGS...]: `SCRIPT server --port PORT ARGS...` (a Python
# helper, in isolated mode) in srv, its stdout in $out/server.json and stderr in
# $out/server.err; server_pid set and added to pids; status 1 if nothing listens on PORT.
start_helper_server() {
	local script=$1 port=$2; shift 2
	ip netns exec $NS_SRV python3 -I "$script" server --port "$port" "$@" \
		> "$out/server.json" 2> "$out/server.err" &
	server_pid=$!
	pids+=($server_pid)
	wait_listening $NS_SRV tcp "$port" ||
		{ echo "server not listening on $port"; cat "$out/server.err"; return 1; }
}

# Start an iperf3 server in srv that accepts any number of tests.
start_iperf_server() {
	ip netns exec $NS_SRV iperf3 -s -D --pidfile /run/iperf3-srv.pid >/dev/null 2>&1
	wait_listening $NS_SRV tcp 5201
}

# iperf_sampled JSON SS_LOG PERIOD_S IPERF3_ARGS...: iperf3 from cli to srv (30 s at most;
# its JSON report in JSON) and, while it runs, `ss -ti` of cli's connections to srv every
# PERIOD_S appended to SS_LOG, each sample followed by a line "--- TIME". iperf3's status.
# ss -i takes each socket's lock (lock_sock_fast() in tcp_get_info()). On the guest's one
# CPU, iperf3 re-takes its socket's lock before a woken ss of normal priority runs, and ss
# could wait out the whole run; at real-time priority it runs as soon as the lock is free.
iperf_sampled() {
	local json=$1 log=$2 period=$3 pid; shift 3
	ip netns exec $NS_CLI timeout 30 iperf3 -c $SRV_ADDR -J "$@" > "$json" 2>&1 &
	pid=$!
	while kill -0 $pid 2>/dev/null; do
		ip netns exec $NS_CLI chrt -f 10 ss -tinH state established dst $SRV_ADDR >> "$log" 2>&1
		echo "--- $EPOCHREALTIME" >> "$log"
		sleep "$period"
	done
	wait $pid
}

# Name of the congestion control of the established connection(s) from cli to srv.
cc_of_flows() {
	ip netns exec $NS_CLI ss -tniH state established dst $SRV_ADDR 2>/dev/null |
		awk 'NR % 2 == 0 { print $1 }' | sort -u
}

# The congestion controls registered, one a line, sorted.
available_controls() { tr ' ' '\n' < /proc/sys/net/ipv4/tcp_available_congestion_control | sort -u; }

# rmmod_retry MODULE [TRIES]: unloads it, retrying for TRIES tenths of a second (100 by
# default) while its last sockets finish closing (orphans drain under their control first).
rmmod_retry() {
	local i
	for i in $(seq "${2:-100}"); do rmmod "$1" 2>/dev/null && return 0; sleep 0.1; done
	rmmod "$1"
}

# rejects MODULE.ko PATTERN [PARAM=VALUE...]: insmod with the parameters must fail, the
# kernel log's lines since must match PATTERN (grep, basic regular expression), and it
# must leave no module loaded and the registered controls as they were. Says why not.
rejects() {
	local ko=$1 want=$2 mod seen new avail; shift 2
	mod=$(basename "$ko" .ko)
	seen=$(dmesg | wc -l)
	avail=$(available_controls)
	if insmod "$ko" "$@" 2>/dev/null; then rmmod "$mod"; echo "loaded with $*"; return 1; fi
	new=$(dmesg | tail -n +$((seen + 1)))
	grep -q -- "$want" <<<"$new" ||
		{ echo "$*: no '$want' in dmesg: $(tail -3 <<<"$new" | tr '\n' ' ')"; return 1; }
	[ "$(available_controls)" = "$avail" ] || { echo "$*: registered controls changed"; return 1; }
	[ ! -d "/sys/module/$mod" ] || { echo "$*: module left loaded"; return 1; }
}
# rejects_param MODULE.ko NAME PARAM=VALUE...: rejects, the log naming parameter NAME and
# its allowed range, as the modules say it: "NAME=VALUE: out of range [MIN, MAX]".
rejects_param() { rejects "$1" "$2=[^ ]*: out of range \[" "${@:3}"; }

# dmesg_clean: the kernel log has no warning, BUG, Oops, sanitizer, lockdep, refcount or
# out-of-memory report (prints the lines that are).
BAD_DMESG='WARNING:|BUG:|Oops|Call Trace|general protection|KASAN|UBSAN|refcount_t:|possible recursive|circular locking|Unknown rela|out of memory|page allocation failure'
dmesg_clean() { ! dmesg | grep -E "$BAD_DMESG"; }

# json FILE EXPR: the Python expression EXPR of FILE's JSON document d, printed (nothing,
# status 1, if the file is not JSON or EXPR fails).
json() { python3 -c "import json,sys; d=json.load(open('$1')); print($2)" 2>/dev/null; }

# parse_module_args ARG...: "MODULE.ko [PARAM=VALUE...] [MODULE.ko ...]" into kos[] and
# params[] (the space-separated parameters of kos[i] in params[i]). Status 1 if malformed.
parse_module_args() {
	kos=() params=()
	local arg
	for arg; do
		case $arg in
		*.ko) kos+=("$arg") params+=("") ;;
		*=*) [ ${#kos[@]} -gt 0 ] || return 1; params[-1]+=" $arg" ;;
		*) return 1 ;;
		esac
	done
	[ ${#kos[@]} -gt 0 ]
}

# rc3_allow_netns [0|1]: whether namespaces other than the initial one may turn RC3's
# low-priority loop on (net.ipv4.tcp_rc3_netns_allowed, off by default; the initial
# namespace's administrator's choice), 1 unless told.
rc3_allow_netns() { sysctl -qw net.ipv4.tcp_rc3_netns_allowed="${1:-1}"; }

# tcpext NS NAME...: the TcpExt counters NAME... of namespace NS, one a line (0 for one
# the kernel does not have). The selftests' and the bench's (netbench.py) reader of
# /proc/net/netstat; only pktpeer.py, which reads every counter around each of its
# exchanges in one Python process, reads it itself.
tcpext() {
	local ns=$1; shift
	ip netns exec "$ns" awk -v names="$*" '$1 == "TcpExt:" {
		if (!n) { for (i = 2; i <= NF; i++) col[$i] = i; n = 1 } else for (i = 2; i <= NF; i++) v[i] = $i }
		END { k = split(names, w, " "); for (j = 1; j <= k; j++) print v[col[w[j]]] + 0 }' /proc/net/netstat
}

# The emulated NIC clocks of the testbed's veth (patch 0018, CONFIG_VETH_HWTSTAMP_EMUL):
# /sys/class/net/DEV/hwts_emul/{offset_ns,drift_ppb,noise_ns}, the device's stamps being
# the clock plus offset_ns, drifting drift_ppb, with noise of standard deviation noise_ns.
# nic_clock_set NS DEV ATTR=VALUE...: those of DEV set, in that order.
nic_clock_set() {
	local ns=$1 dev=$2 kv cmd=""; shift 2
	for kv; do cmd+="echo ${kv#*=} > /sys/class/net/$dev/hwts_emul/${kv%%=*} && "; done
	ip netns exec "$ns" sh -c "${cmd}true"
}
# hw_stamping NS DEV [--off]: hardware timestamping on (off) at DEV the standard way
# (SIOCSHWTSTAMP, tools/tstamp.py hwenable); the tool's line on stdout, its error on stderr.
hw_stamping() { ip netns exec "$1" python3 "$TSTAMP_TOOL" hwenable "$2" "${@:3}"; }
# nic_clock_on NS DEV OFFSET_NS DRIFT_PPB NOISE_NS: DEV's clock set, hardware stamping on.
nic_clock_on() {
	nic_clock_set "$1" "$2" offset_ns="$3" drift_ppb="$4" noise_ns="$5" &&
		hw_stamping "$1" "$2" > /dev/null
}
nic_clock_off() { hw_stamping "$1" "$2" --off > /dev/null; }
# has_nic_clock: the testbed's veth emulates NIC clocks (CONFIG_VETH_HWTSTAMP_EMUL).
has_nic_clock() { ip netns exec $NS_CLI test -d /sys/class/net/c0/hwts_emul; }

# gso_max_segs N: TCP's skbs of at most N segments at both ends (c0, s0). A hardware
# transmit stamp reaches TCP only for an skb the driver gets whole: software GSO's
# segments are new skbs. A NIC with TSO stamps TCP's skb; 1 makes every skb one segment.
gso_max_segs() {
	ip -n $NS_CLI link set dev c0 gso_max_segs "$1" && ip -n $NS_SRV link set dev s0 gso_max_segs "$1"
}

# ss_sources FILE: the distinct sources of delay samples dx and TIMELY reported in FILE of
# `ss -ti` lines (pacing_gain: 1 hardware stamps, 2 software stamps, 3 RTT), once they
# had one, as "2 " or "1 2 ".
ss_sources() { ss_source_each "$1" | sort -u | tr '\n' ' '; }
# ss_source_each FILE: the source of each of FILE's samples that had one, a line each.
ss_source_each() {
	grep -o 'bbr:([^)]*pacing_gain:[0-9]*' "$1" | sed 's/.*pacing_gain://' | grep -v '^0$'
}
# ss_source_counts FILE: how many of FILE's samples reported each source, "N:count ...".
ss_source_counts() { ss_source_each "$1" | sort | uniq -c | awk '{ printf "%s:%s ", $2, $1 }'; }
# ss_source_pct FILE N: the percentage of FILE's samples (with a source) that reported N.
ss_source_pct() {
	ss_source_each "$1" |
		awk -v n="$2" '{ all++; if ($1 == n) hit++ } END { print all ? int(100 * hit / all) : 0 }'
}
