#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# The delay-based controls' opt-in answer to ECN marks as dctcp gives it (`ecn_share`,
# rust/core/src/ecn_share.rs; docs/timely.md, dx.md, swift.md), in the UML guest, over the
# dumbbell with a bottleneck that CE-marks above a few packets:
#  - loaded as they are by default (ecn_share 0), the controls do not ask for ECN on a
#    sender whose net.ipv4.tcp_ecn is 0;
#  - loaded with ecn_share=1 (the parameter reads 1 in sysfs), the same sender negotiates
#    ECN with a listener whose control needs it (`ss` shows `ecn` and the control's own
#    name), and the control's tracepoint records its ECN answers while the bottleneck marks
#    (timely and timely_patched: mode 9, a cut by alpha/2; dx: code 4, the window's alpha;
#    swift: what 0x307, a cut of the fabric window);
#  - against a listener that refuses ECN (cubic's, which refuses a SYN marked ECT) the
#    connection runs on the ECN-less sibling ops `NAME-reno` (timely_patched keeps its
#    name: the suffix does not fit in TCP_CA_NAME_MAX), as dctcp runs as dctcp-reno, with
#    no ECN, and carries data;
#  - ecn_share=2 fails the load, naming the parameter and its range; after all, the
#    modules unload and dmesg is clean.
#
#   tcp_ecn_share.sh MODULE.ko [PARAM=VALUE...]...   (tcp_timely.ko, tcp_dx.ko, tcp_swift.ko)
set -u
source "$(dirname "$0")/lib.sh"
# A bottleneck that marks above 3 packets (360 us at 100 Mbit/s): every control's queue
# passes that in a 2-second flow, so marks come whatever its target.
RATE_MBIT=100 DELAY_US=500 QUEUE_PKTS=200 ECN_K_PKTS=3 SECONDS_PER_RUN=2 PORT=5301
TRACING=/sys/kernel/tracing
EVENT=$TRACING/events/tcp/tcp_cong_decision
parse_module_args "$@" || { echo "usage: $0 MODULE.ko [PARAM=VALUE...]..." >&2; exit 2; }
selftest_dir

controls_of() { # MODULE.ko: the controls it registers
	case $(basename "$1") in
	tcp_timely.ko) echo timely timely_patched ;;
	tcp_dx.ko) echo dx ;;
	tcp_swift.ko) echo swift ;;
	esac
}
# The tracepoint's code for an ecn_share answer, per control (see the header).
ecn_what() { case $1 in timely|timely_patched) echo 9 ;; dx) echo 4 ;; swift) echo 775 ;; esac; }
# Each module's parameters without ecn_share (a Rust module parameter given twice fails the
# load), then ecn_share=VALUE.
with_share() { echo "$(sed 's/ ecn_share=[0-9]*//' <<<"${params[$1]}") ecn_share=$2"; }

controls=()
for ko in "${kos[@]}"; do
	# shellcheck disable=SC2207 # the control names are single words
	controls+=($(controls_of "$ko"))
done
ktap_plan $((2 * ${#kos[@]} + 4 * ${#controls[@]} + 2))
dmesg -C

load_all() { # SHARE: every module with ecn_share=SHARE, its controls allowed (only the
	# initial namespace may make a restricted control another namespace's default)
	local i
	for i in "${!kos[@]}"; do
		# shellcheck disable=SC2046 # parameters are PARAM=VALUE words
		insmod "${kos[$i]}" $(with_share "$i" "$1") || return 1
	done
	echo "$allowed_before ${controls[*]}" > /proc/sys/net/ipv4/tcp_allowed_congestion_control
}
unload_all() {
	local ko
	for ko in "${kos[@]}"; do rmmod_retry "$(basename "$ko" .ko)" || return 1; done
}

setup_dumbbell $RATE_MBIT $DELAY_US $QUEUE_PKTS $ECN_K_PKTS || diag "dumbbell setup failed"
# The sender does not ask for ECN of itself; a listener accepts it when asked.
ip netns exec $NS_CLI sysctl -qw net.ipv4.tcp_ecn=0
ip netns exec $NS_SRV sysctl -qw net.ipv4.tcp_ecn=2
mountpoint -q $TRACING || mount -t tracefs nodev $TRACING 2>/dev/null
[ -d "$EVENT" ] && echo 8192 > $TRACING/buffer_size_kb

# flow CC LISTENER TAG: a flow from cli (default control CC) to a fresh iperf3 listener in
# srv created while srv's default control is LISTENER (a listener's control decides
# whether it accepts a SYN marked ECT, tcp_ecn_create_request()); the connection's `ss`
# samples in $out/TAG.ss, iperf3's report in $out/TAG.json, the tracepoint's events in
# $out/TAG.trace, the packets the bottleneck marked in $out/TAG.marked.
flow() {
	local cc=$1 listener=$2 tag=$3 marked_before pid
	: > "$out/$tag.ss"; : > "$out/$tag.trace"; echo 0 > "$out/$tag.marked"
	ip netns exec $NS_SRV sysctl -qw net.ipv4.tcp_congestion_control="$listener" ||
		{ diag "$tag: srv's default control could not be $listener"; return 1; }
	ip netns exec $NS_CLI sysctl -qw net.ipv4.tcp_congestion_control="$cc" ||
		{ diag "$tag: cli's default control could not be $cc"; return 1; }
	PORT=$((PORT + 1))
	ip netns exec $NS_SRV iperf3 -s -1 -p $PORT > /dev/null 2>&1 &
	pid=$!
	pids+=("$pid")
	wait_listening $NS_SRV tcp $PORT || { diag "$tag: iperf3 not listening on $PORT"; return 1; }
	ip netns exec $NS_SRV sysctl -qw net.ipv4.tcp_congestion_control=cubic
	marked_before=$(bottleneck_marked)
	if [ -d "$EVENT" ]; then
		: > $TRACING/trace
		echo 1 > "$EVENT/enable"
	fi
	ip netns exec $NS_CLI timeout 30 iperf3 -c $SRV_ADDR -p $PORT -J -t $SECONDS_PER_RUN \
		> "$out/$tag.json" 2>&1 &
	local client=$!
	# -e: ss prints the options (ts, sack, ecn) only with it. Sampled every quarter second
	# at real-time priority: ss -i takes the socket's lock, which a busy sender may hold
	# whenever one sample comes (on the guest's one CPU iperf3 re-takes it first).
	while kill -0 $client 2>/dev/null; do
		ip netns exec $NS_CLI chrt -f 10 ss -tieH state established dst $SRV_ADDR \
			dport = :$PORT >> "$out/$tag.ss" 2>&1
		sleep 0.25
	done
	wait $client
	if [ -d "$EVENT" ]; then
		echo 0 > "$EVENT/enable"
		grep ' tcp_cong_decision: ' $TRACING/trace > "$out/$tag.trace"
	else
		: > "$out/$tag.trace"
	fi
	echo $(($(bottleneck_marked) - marked_before)) > "$out/$tag.marked"
	wait "$pid" 2>/dev/null
	ip netns exec $NS_CLI sysctl -qw net.ipv4.tcp_congestion_control=cubic
	return 0
}
# The data connection's `ss` line (iperf3's control connection carries no data: the one
# with the most bytes acked). Its info lines are the indented ones (a sample may hold no
# socket, or only the control connection).
data_conn() {
	awk '!/^[ \t]/ { next } { b = 0; for (i = 1; i <= NF; i++) if ($i ~ /^bytes_acked:/) { split($i, kv, ":"); b = kv[2] } if (b >= best) { best = b; line = $0 } } END { print line }' "$out/$1.ss"
}
received_mbps() { json "$out/$1.json" "round(d['end']['sum_received']['bits_per_second'] / 1e6, 1)"; }
# expect TAG NAME ECN(yes|no): the data connection ran under NAME, with or without ECN,
# and carried data.
expect() {
	local line mbps
	line=$(data_conn "$1")
	mbps=$(received_mbps "$1")
	echo "ss: $line"
	echo "received ${mbps:-?} Mbit/s; the bottleneck marked $(cat "$out/$1.marked") packets"
	[ -n "$line" ] || { echo "no connection seen"; return 1; }
	grep -qw -- "$2" <<<"$line" || { echo "the connection's control is not $2"; return 1; }
	if [ "$3" = yes ]; then
		grep -qw ecn <<<"$line" || { echo "ECN was not negotiated"; return 1; }
	else
		! grep -qw ecn <<<"$line" || { echo "ECN was negotiated"; return 1; }
	fi
	# Any data: with marks above 3 packets from the first window, ecn_share's TIMELY cuts to
	# about 1 Mbit/s in these 2 s (a rate that grows per completion recovers slowly).
	[ -n "$mbps" ] && awk -v m="$mbps" 'BEGIN { exit !(m > 0) }' || { echo "no data"; return 1; }
}
# ecn_answers CC TAG: the sender's events with the control's ECN code, if the bottleneck
# marked any packet (a debug kernel, which forwards a few Mbit/s, may never queue to K:
# then that is said and the check is skipped).
ecn_answers() {
	local cc=$1 tag=$2 n marked
	marked=$(cat "$out/$tag.marked")
	n=$(awk -v ca="$cc" -v what="$(ecn_what "$cc")" '{
		delete f
		for (i = 1; i <= NF; i++) if (split($i, kv, "=") == 2) f[kv[1]] = kv[2]
		if (f["ca"] == ca && f["what"] + 0 == what && f["src"] ~ /^10\.10\.1\.1:/) n++
	} END { print n + 0 }' "$out/$tag.trace")
	echo "$n ECN answers (what $(ecn_what "$cc")) of $(wc -l < "$out/$tag.trace") events; the bottleneck marked $marked packets"
	[ "$n" -gt 0 ]
}

# loaded_with SHARE: the modules load with ecn_share=SHARE, and each one's parameter reads
# SHARE back from sysfs.
loaded_with() {
	local ko m
	check "insmod $(basename -a "${kos[@]}" | tr '\n' ' ')(ecn_share=$1)" load_all "$1"
	for ko in "${kos[@]}"; do
		m=$(basename "$ko" .ko)
		check "$m: /sys/module/$m/parameters/ecn_share reads $1" \
			grep -qx "$1" "/sys/module/$m/parameters/ecn_share"
	done
}

# ---------------------------------------------------------------- ecn_share 0: no ECN asked
loaded_with 0
for cc in "${controls[@]}"; do
	flow "$cc" "$cc" "plain.$cc"
	check "$cc (ecn_share 0): no ECN asked with net.ipv4.tcp_ecn=0" expect "plain.$cc" "$cc" no
done
check "the modules unload" unload_all

# ---------------------------------------------------------------- ecn_share 1
loaded_with 1
for cc in "${controls[@]}"; do
	flow "$cc" "$cc" "share.$cc"
	check "$cc (ecn_share 1): ECN negotiated with net.ipv4.tcp_ecn=0, under its own name" \
		expect "share.$cc" "$cc" yes
	if [ ! -d "$EVENT" ]; then
		ktap_skip "$cc: its ECN answers traced" "no $EVENT (CONFIG_TRACING off?)"
	elif [ "$(cat "$out/share.$cc.marked")" = 0 ] && debug_kernel; then
		ktap_skip "$cc: its ECN answers traced" "the bottleneck marked nothing (debug kernel)"
	else
		check "$cc: its ECN answers traced while the bottleneck marks" ecn_answers "$cc" "share.$cc"
	fi
	diag "$cc (ecn_share 1): $(received_mbps "share.$cc") Mbit/s; $(ecn_answers "$cc" "share.$cc")"
	sibling=$cc-reno
	[ ${#sibling} -lt 16 ] || sibling=$cc
	flow "$cc" cubic "refused.$cc"
	check "$cc (ecn_share 1), ECN refused by the listener: runs as $sibling without ECN" \
		expect "refused.$cc" "$sibling" no
done
unload_all > /dev/null 2>&1
rejected() { # ecn_share=2 on each module
	local ko
	for ko in "${kos[@]}"; do
		rejects "$ko" "ecn_share=2: out of range \[0, 1]" ecn_share=2 || return 1
	done
}
check "ecn_share=2 fails each module's load, naming the parameter and [0, 1]" rejected
check "dmesg clean" dmesg_clean
ktap_finish
