#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# The tcp:tcp_cong_decision tracepoint (patches/cong: "a tracepoint for a congestion
# control's decisions"), in the UML guest: with the event enabled through tracefs, a short
# flow of each controller through the dumbbell (RED marking above K, so that DCTCP's
# windows see marks) records its decisions with the flow's addresses, the algorithm's name
# and sane values (see docs/timely.md, docs/dx.md, docs/dctcp.md for the fields); a filter
# on the name keeps the others out; disabled, the event records nothing.
#
#   tcp_cc_trace.sh MODULE.ko [PARAM=VALUE...]...   (tcp_timely.ko, tcp_dx.ko, tcp_rust_dctcp.ko)
set -u
source "$(dirname "$0")/lib.sh"
RATE_MBIT=100 DELAY_US=500 QUEUE_PKTS=100 ECN_K_PKTS=20 SECONDS_PER_RUN=2
ALGOS=(timely dx rust_dctcp)
TRACING=/sys/kernel/tracing
EVENT=$TRACING/events/tcp/tcp_cong_decision
parse_module_args "$@" || { echo "usage: $0 MODULE.ko [PARAM=VALUE...]..." >&2; exit 2; }
selftest_dir

ktap_plan $((2 + 2 * ${#ALGOS[@]} + 2))
dmesg -C

loaded() {
	local i
	for i in "${!kos[@]}"; do
		# shellcheck disable=SC2086 # params[i] is a list of PARAM=VALUE words
		insmod "${kos[$i]}" ${params[$i]} || return 1
	done
}
check "insmod $(basename -a "${kos[@]}" | tr '\n' ' ')" loaded

mountpoint -q $TRACING || mount -t tracefs nodev $TRACING 2>/dev/null
if [ ! -d "$EVENT" ]; then
	# A kernel without CONFIG_TRACING (the test kernel has it: tools/testbed/kernel.config).
	while [ "$ktap_n" -lt $((2 + 2 * ${#ALGOS[@]} + 2)) ]; do
		ktap_skip "tcp:tcp_cong_decision" "no $EVENT (CONFIG_TRACING off?)"
	done
	ktap_finish
fi
fields() { # the event's format names its fields
	local f
	for f in saddr daddr sport dport sock_cookie ca what in0 in1 in2 out0 out1; do
		grep -q "field:.* $f\(\[.*\]\)\?;" "$EVENT/format" || { echo "no field $f"; cat "$EVENT/format"; return 1; }
	done
}
check "tracefs lists tcp:tcp_cong_decision with its fields" fields

setup_dumbbell $RATE_MBIT $DELAY_US $QUEUE_PKTS $ECN_K_PKTS && start_iperf_server || diag "dumbbell setup failed"
echo 8192 > $TRACING/buffer_size_kb

# run ALGO: a flow of ALGO from cli to srv, the event on; its lines in $out/trace.ALGO, the
# packets the bottleneck marked CE meanwhile in $out/marked.ALGO.
run() {
	local marked_before
	marked_before=$(bottleneck_marked)
	echo 0 > "$EVENT/enable"
	: > $TRACING/trace
	echo 1 > "$EVENT/enable"
	ip netns exec $NS_CLI timeout 30 iperf3 -c $SRV_ADDR -J -t $SECONDS_PER_RUN -C "$1" > "$out/$1.json" 2>&1
	echo 0 > "$EVENT/enable"
	grep ' tcp_cong_decision: ' $TRACING/trace > "$out/trace.$1"
	echo $(($(bottleneck_marked) - marked_before)) > "$out/marked.$1"
}

# sane ALGO: every event of the flow's sender names ALGO and the flow's addresses, and its
# values are in the ranges the algorithm's documentation gives; prints the number of events
# and the last one, and fails on the first bad event or on fewer than 10. DCTCP's windows
# must have seen a mark if the bottleneck marked any packet (a slow guest may never fill
# the queue to K in the run: then there is nothing to see, and that is said).
sane() {
	awk -v algo="$1" -v src=10.10.1.1 -v dst="$SRV_ADDR:5201" -v red_marked="$(cat "$out/marked.$1")" '
	function bad(why) { print "bad event (" why "): " $0; exit 1 }
	{
		delete f
		for (i = 1; i <= NF; i++) if (split($i, kv, "=") == 2) f[kv[1]] = kv[2]
		if (f["ca"] != algo) bad("ca")
		# iperf3 -C sets the server'"'"'s socket too (an IPv4-mapped one in srv): the
		# receiver'"'"'s decisions are counted, the sender'"'"'s checked.
		if (f["src"] ~ /:5201$/) { receiver++; next }
		if (f["src"] !~ "^" src ":[0-9]+$" || f["dest"] != dst) bad("addresses")
		if (f["family"] != "AF_INET" || f["sock_cookie"] == "") bad("family or cookie")
		w = f["what"] + 0; in0 = f["in0"] + 0; in1 = f["in1"] + 0; in2 = f["in2"] + 0
		out0 = f["out0"] + 0; out1 = f["out1"] + 0
		if (algo == "timely") {
			# mode 0-8 (0: a first completion, which only sets the previous RTT); RTT (us)
			# under 10 s; rates within [100 kbit/s, 100 Mbit/s]; cwnd >= 1
			if (w > 8) bad("mode")
			if (in0 < 1 || in0 > 10000000) bad("rtt")
			if (in2 < 100000 || in2 > 100000000 || out0 < 100000 || out0 > 100000000) bad("rate")
			if (out1 < 1) bad("cwnd")
			rates[out0] = 1
		} else if (algo == "dx") {
			# code 0-3; queuing delay and base RTT under 10 s (ns); windows >= 1
			if (w > 3) bad("code")
			if (in0 > 10000000000 || in1 > 10000000000) bad("delay")
			if (in2 < 1 || out0 < 1 || out1 < 1) bad("window")
		} else {
			# alpha update; marked <= delivered; alpha <= 1024; cwnd >= 1
			if (w != 1) bad("code")
			if (in1 > in0) bad("marked > delivered")
			if (in2 > 1024 || out0 > 1024 || out1 < 1) bad("alpha or cwnd")
			if (in1 > 0) marked++
		}
		n++; last = $0
	}
	END {
		if (algo == "rust_dctcp") print marked + 0 " windows saw CE marks; the bottleneck marked " red_marked " packets"
		print n + 0 " events from the sender, " receiver + 0 " from the receiver; last: " last
		if (n < 10) exit 1
		if (algo == "timely" && length(rates) < 2) { print "the rate never changed"; exit 1 }
		if (algo == "rust_dctcp" && !marked && red_marked > 0) {
			print "the bottleneck marked " red_marked " packets; no window saw a CE mark"; exit 1
		}
	}' "$out/trace.$1"
}

for algo in "${ALGOS[@]}"; do
	run "$algo"
	check "$algo: the flow ran (iperf3 -C $algo)" grep -q '"sum_received"' "$out/$algo.json"
	check "$algo: events name $algo, the flow's addresses, sane values (>= 10)" sane "$algo"
	sane "$algo" | tail -n 2 | sed 's/^ *//' | cut -c1-400 | while read -r line; do diag "$algo: $line"; done
done

# A filter on the name: a timely flow under 'ca == "dx"' records nothing.
filtered() {
	echo 'ca == "dx"' > "$EVENT/filter" || return 1
	run timely
	echo 0 > "$EVENT/filter"
	[ ! -s "$out/trace.timely" ] || { echo "$(wc -l < "$out/trace.timely") events passed the filter"; return 1; }
}
check "a filter on ca keeps other algorithms' events out" filtered
# Disabled: nothing recorded.
disabled() {
	: > $TRACING/trace
	ip netns exec $NS_CLI timeout 30 iperf3 -c $SRV_ADDR -t 1 -C timely > /dev/null 2>&1
	! grep -q ' tcp_cong_decision: ' $TRACING/trace
}
check "disabled, the event records nothing; dmesg clean" eval 'disabled && dmesg_clean'
ktap_finish
