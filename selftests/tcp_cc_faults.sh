#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Fault matrix for congestion control modules, in the UML guest. For every control the
# given modules register:
#   1. load/unload cycles under traffic: insmod, a short flow with the control, rmmod
#      refused while the flow is open, close, rmmod succeeds; dmesg clean after;
#   2. many concurrent flows (all controls, round-robin) through one bottleneck: every
#      flow makes progress, none stalls; min/median bytes per flow;
#   3. netem faults at the bottleneck (loss 0/1/5/10%, reordering, duplication,
#      corruption, delay jitter, link flaps): a fixed transfer per fault and control,
#      SHA-256 of what arrived checked against what was sent; throughput and retransmits;
#      where the kernel has veth's emulated NIC clocks (patch 0018), with hardware
#      timestamping on at both hosts and net.ipv4.tcp_delay_stamps_hw=1, so that dx's
#      transfers run on hardware delay stamps (patch 0016) through every fault, counted;
#   4. every module parameter, below its minimum and above its maximum, fails the load
#      with a message naming it and its allowed range (table below);
#   5. an unprivileged process selecting a control that is not allowed gets EPERM, and
#      its socket keeps the control it had;
#   6. with -r RC3.ko, RC3's low-priority loop (patches 0011-0015) over cubic: the policy
#      module loaded and unloaded under RC3 traffic (transfers checksummed, the loop runs
#      while it is loaded and sends nothing once it is gone), the netem faults of item 3,
#      and many concurrent flows, every one with RC3 on.
#
#   tcp_cc_faults.sh [-c CYCLES] [-f FLOWS] [-t FLOW_SECONDS] [-b BYTES] [-B BUDGET_S] \
#                    [-r RC3.ko] MODULE.ko [PARAM=VALUE...] [MODULE.ko [PARAM=VALUE...]]...
#
# PARAM=VALUE words are insmod parameters of the module before them (as for
# tcp_cc_stress.sh). Defaults: 200 cycles in all, 1000 flows for 8 s, 2000000-byte
# transfers with a 20 s budget each.
set -u
source "$(dirname "$0")/lib.sh"
helper=$(cd "$(dirname "$0")/.." && pwd)/selftests/helpers/ccfaults.py
PORT=5401
RATE_MBIT=100 DELAY_US=500 QUEUE_PKTS=500

# Parameter ranges, checked by item 4: module|parameter|min|max|why. Each value is tried
# alone, the module's other parameters at their defaults, so ranges that depend on
# another parameter are given at that parameter's default. A min of 0 has nothing below
# it to try (the parameters are u32). Every parameter `modinfo -p` lists must be here.
# Sources: README.md's table, Params::validate() in rust/core/src/timely.rs,
# check() in rust/tcp_rust_dctcp.rs, DxParams::validate() in rust/core/src/dx.rs,
# SwiftParams::validate() in rust/core/src/swift.rs.
PARAM_TABLE=(
	"tcp_timely|t_low_us|1|9999999|"
	"tcp_timely|t_high_us|51|10000000|min t_low_us+1, t_low_us at its default 50"
	"tcp_timely|delta_kbps|1|400000000|max max_rate_mbps*1000, 400000000 at its default 0 (C from the link)"
	"tcp_timely|beta_ppm|1|1000000|"
	"tcp_timely|alpha_ppm|1|1000000|"
	"tcp_timely|min_rtt_us|1|10000000|"
	"tcp_timely|hai_threshold|1|1000|"
	"tcp_timely|hai_factor|1|100|"
	"tcp_timely|min_rate_kbps|1|400000000|max max_rate_mbps*1000, 400000000 at its default 0"
	"tcp_timely|max_rate_mbps|0|400000|"
	"tcp_timely|init_rate_mbps|0|400000|max max_rate_mbps, 400000 at its default 0"
	"tcp_timely|seg_bytes|1|65536|"
	"tcp_timely|line_rate_mbps|0|400000|"
	"tcp_timely|patched_beta_ppm|1|1000000|"
	"tcp_timely|rtt_ref_us|0|10000000|"
	"tcp_timely|rtt_window_bytes|0|65536|"
	"tcp_timely|loss_rtt_us|0|10000000|"
	"tcp_timely|update_scaling|0|1|"
	"tcp_timely|t_high_last_sample|0|1|"
	"tcp_timely|patched_rtt_window_rtts|0|64|"
	"tcp_timely|ecn_share|0|1|"
	"tcp_rust_dctcp|dctcp_shift_g|0|10|"
	"tcp_rust_dctcp|dctcp_alpha_on_init|0|1024|"
	"tcp_dx|headroom_ns|1|2000000000|"
	"tcp_dx|min_cwnd_pkts|1|65535|"
	"tcp_dx|max_decrease_ppm|1|1000000|"
	"tcp_dx|base_rtt_slack_ns|0|20000|max headroom_ns, at its default 20000"
	"tcp_dx|min_rtt_expiry_rounds|0|10000|"
	"tcp_dx|ecn_share|0|1|"
	"tcp_swift|base_target_ns|1|100000000|"
	"tcp_swift|per_hop_ns|0|1000000|"
	"tcp_swift|hops|0|64|"
	"tcp_swift|fs_range_ns|0|100000000|"
	"tcp_swift|fs_min_cwnd_mpkts|1|99999|max fs_max_cwnd_pkts*1000-1, at its default 100"
	"tcp_swift|fs_max_cwnd_pkts|1|1000000|"
	"tcp_swift|ai_mpkts|1|100000|"
	"tcp_swift|beta_md_ppm|1|1000000|"
	"tcp_swift|max_mdf_ppm|1|1000000|"
	"tcp_swift|min_cwnd_mpkts|1|10000000|max max_cwnd_pkts*1000, at its default 10000"
	"tcp_swift|max_cwnd_pkts|1|1000000|"
	"tcp_swift|retx_reset_threshold|1|1000|"
	"tcp_swift|endpoint_target_ns|0|100000000|"
	"tcp_swift|ecn_share|0|1|"
)

# Faults at the bottleneck (item 3): name|netem arguments ("flap": no impairment, the
# bottleneck device is set down for FLAP_DOWN_MS and up again FLAPS times during the
# transfer, when 20%, 45% and 70% of it are acknowledged).
FLAPS=3 FLAP_DOWN_MS=250
FAULTS=(
	"loss 0%|loss 0%"
	"loss 1%|loss 1%"
	"loss 5%|loss 5%"
	"loss 10%|loss 10%"
	"reordering|delay 1ms reorder 25% 50%"
	"duplication|duplicate 5%"
	"corruption|corrupt 1%"
	"delay jitter|delay 1ms 1ms"
	"link flaps|flap"
)
# Only here may a transfer that runs out of its budget pass, and only if the receiver got
# some of it, intact. At 10% random loss a retransmission is itself lost one time in ten,
# and each such loss doubles the retransmission timeout: how long 2 MB takes then depends
# on luck and on the host (UML on the normal clock), which is performance, measured by the
# bench; no progress at all would be a stall, a functional failure.
PARTIAL_OK_FAULT="loss 10%"

usage() {
	echo "usage: $0 [-c CYCLES] [-f FLOWS] [-t FLOW_SECONDS] [-b BYTES] [-B BUDGET_S] MODULE.ko [PARAM=VALUE...]..." >&2
	exit 2
}
cycles=200 flows=1000 flow_seconds=8 xfer_bytes=2000000 budget=20 rc3_ko=""
# Item 6: policy load/unload cycles, and flows with RC3 on.
RC3_CYCLES=50 RC3_FLOWS=200 RC3_FLOW_SECONDS=4
# On the debug kernel the sender writes to about 3 new RC3 flows a second (each write also
# runs the low-priority loop over the tail: 93 of 200 flows had been written to after
# 31.6 s), so the flows run 120 s there, and every flow is written to.
debug_kernel && RC3_FLOW_SECONDS=120
# The debug kernel's sender gets to about 20 new flows a second (each write costs tens of
# milliseconds there: 186 of 1000 flows had been written to after 8.9 s): there the flows
# run 90 s, so that every flow is written to and "every flow made progress" still means it.
debug_kernel && flow_seconds=90
while getopts c:f:t:b:B:r: opt; do
	case $opt in
	r) rc3_ko=$OPTARG ;;
	c) cycles=$OPTARG ;;
	f) flows=$OPTARG ;;
	t) flow_seconds=$OPTARG ;;
	b) xfer_bytes=$OPTARG ;;
	B) budget=$OPTARG ;;
	*) usage ;;
	esac
done
shift $((OPTIND - 1))
parse_module_args "$@" || usage
modname() { basename "$1" .ko; }

selftest_dir
server_pid=""

# The controls each module registers, found by loading it once (before the plan, which
# depends on them). A module that does not load registers none; its insmod test fails.
dmesg -C
mod_controls=()
for i in "${!kos[@]}"; do
	available_controls > "$out/avail.before"
	# shellcheck disable=SC2086 # a list of PARAM=VALUE words
	if insmod "${kos[$i]}" ${params[$i]} 2> "$out/discover.$i.err"; then
		available_controls > "$out/avail.after"
		mod_controls+=("$(comm -13 "$out/avail.before" "$out/avail.after" | paste -sd " ")")
		rmmod "$(modname "${kos[$i]}")"
	else
		mod_controls+=("")
	fi
done
controls=$(printf '%s ' "${mod_controls[@]}" | xargs)
n_controls=$(wc -w <<<"$controls")
nk=${#kos[@]}

rc3_tests=0
[ -z "$rc3_ko" ] || rc3_tests=$((5 + ${#FAULTS[@]}))
ktap_plan $((3 * nk + 8 + n_controls * (${#FAULTS[@]} + 1) + rc3_tests))
diag "modules: ${kos[*]}; controls: ${controls:-none}"
for i in "${!kos[@]}"; do
	[ -n "${mod_controls[$i]}" ] ||
		diag "$(modname "${kos[$i]}") did not load: $(cat "$out/discover.$i.err")"
done

# ---------------------------------------------------------------- 4. invalid parameters
# out_of_range MODULE.ko NAME VALUE MIN MAX: insmod NAME=VALUE fails, the kernel log says
# "NAME=VALUE: out of range [MIN, MAX]", and nothing stays registered.
out_of_range() { rejects "$1" "$2=$3: out of range \[$4, $5]" "$2=$3"; }
params_rejected() { # MODULE.ko: every table row of the module, below min and above max
	local ko=$1 mod listed table row m name min max note tried=0 bad=0 log
	mod=$(modname "$ko")
	listed=$(modinfo -p "$ko" 2>/dev/null | cut -d: -f1 | sort)
	table=$(printf '%s\n' "${PARAM_TABLE[@]}" | awk -F'|' -v m="$mod" '$1 == m { print $2 }' | sort)
	if [ "$listed" != "$table" ]; then
		echo "modinfo -p lists: $(echo $listed); the table has: $(echo $table)"
		return 1
	fi
	for row in "${PARAM_TABLE[@]}"; do
		IFS='|' read -r m name min max note <<<"$row"
		[ "$m" = "$mod" ] || continue
		if [ "$min" -gt 0 ]; then
			tried=$((tried + 1))
			log=$(out_of_range "$ko" "$name" $((min - 1)) "$min" "$max") || { bad=$((bad + 1)); echo "$log"; }
		fi
		tried=$((tried + 1))
		log=$(out_of_range "$ko" "$name" $((max + 1)) "$min" "$max") || { bad=$((bad + 1)); echo "$log"; }
	done
	echo "$tried values tried, $bad not rejected as expected"
	[ $bad -eq 0 ]
}
for ko in "${kos[@]}"; do
	mod=$(modname "$ko")
	if [ -z "$(modinfo -p "$ko" 2>/dev/null)" ] &&
		! printf '%s\n' "${PARAM_TABLE[@]}" | grep -q "^$mod|"; then
		ktap_ok "$mod: invalid parameters rejected at load (it has none)"
		diag "$mod: modinfo -p lists no parameters: 0 values tried"
		continue
	fi
	if params_rejected "$ko" > "$out/params.$mod" 2>&1; then
		ktap_ok "$mod: every parameter below min / above max fails insmod, dmesg names it and its range"
	else
		ktap_not_ok "$mod: every parameter below min / above max fails insmod, dmesg names it and its range"
	fi
	diag_lines "$(sed "s/^/$mod: /" "$out/params.$mod")"
done

# ---------------------------------------------------------------- dumbbell and server
# One listener for everything: with many flows, the server needs the descriptors and
# the listen backlog.
ulimit -n $((2 * flows + 1024)) 2>/dev/null || ulimit -n "$(ulimit -Hn)"
start_server() {
	setup_dumbbell $RATE_MBIT $DELAY_US $QUEUE_PKTS || { echo "dumbbell setup failed"; return 1; }
	ip netns exec $NS_SRV sysctl -qw net.core.somaxconn=$((2 * flows + 128)) \
		net.ipv4.tcp_max_syn_backlog=$((2 * flows + 128))
	start_helper_server "$helper" $PORT --log "$out/server.log"
}
if start_server > "$out/setup.log" 2>&1; then
	ktap_ok "dumbbell up, server listening"
else
	ktap_not_ok "dumbbell up, server listening"; diag_lines "$(cat "$out/setup.log")"
fi
diag "dumbbell: ${RATE_MBIT} Mbit/s bottleneck, ${QUEUE_PKTS}-packet FIFO, ${DELAY_US} us reverse delay;" \
	"fd limit $(ulimit -n); guest memory $(awk '/MemTotal/ {print int($2 / 1024)}' /proc/meminfo) MB"

# ---------------------------------------------------------------- 1. load/unload cycles
cycle_args=()
for i in "${!kos[@]}"; do
	[ -n "${mod_controls[$i]}" ] || continue
	cycle_args+=(--module "${kos[$i]}" "${mod_controls[$i]// /,}" "${params[$i]# }")
done
cycles_run() {
	[ ${#cycle_args[@]} -gt 0 ] || { echo "no module registered a control"; return 1; }
	ip netns exec $NS_CLI python3 -I "$helper" cycles --dst $SRV_ADDR --port $PORT \
		--cycles "$cycles" "${cycle_args[@]}" > "$out/cycles.json" 2> "$out/cycles.err" ||
		{ json "$out/cycles.json" "'\n'.join(d['errors'])"; cat "$out/cycles.err"; return 1; }
}
check "load/unload cycles: insmod, flow, rmmod refused while open, close, rmmod ($cycles)" cycles_run
diag "rmmod while a flow was open said: $(json "$out/cycles.json" "d.get('refusal_message', '-')")"
diag "cycles: $(json "$out/cycles.json" "f\"{d['cycles']} done in {d['seconds']} s\"
	f\" (median {d.get('cycle_ms_median')} ms, max {d.get('cycle_ms_max')} ms per cycle),\"
	f\" {d['refusals']} rmmod refusals while a flow was open, {d['rmmod_retries']} rmmod retries\"
	f\" after close; by control {d['by_control']};\"
	f\" background flow {d['background_bytes'] >> 20} MiB\"")"
check "dmesg clean after the parameter checks and the load/unload cycles" dmesg_clean
# A failed cycle may leave its module loaded: unload it, so the items below still run.
for ko in "${kos[@]}"; do
	mod=$(modname "$ko")
	[ -d "/sys/module/$mod" ] || continue
	diag "$mod left loaded by the cycles: $(rmmod_retry "$mod" 2>&1 && echo unloaded)"
done

# ---------------------------------------------------------------- load for items 2, 3, 5
for i in "${!kos[@]}"; do
	# shellcheck disable=SC2086
	check "insmod $(modname "${kos[$i]}")${params[$i]}" insmod "${kos[$i]}" ${params[$i]}
done

# ---------------------------------------------------------------- 2. many flows
# The bottleneck's buffer holds 4 packets per flow (at least QUEUE_PKTS): TIMELY's smallest
# window (MIN_CWND_PKTS) and the fewest in flight with which a loss is still repaired by
# fast retransmit rather than a timeout. With less, the flows' smallest windows alone
# overflow it for good, and TCP's timeout backoff locks random flows out for seconds
# whatever their control (seen at 500 packets: 22 of 1000 flows, of all three controls,
# without an ACK for the last 4 s of an 8 s run): a lottery, not a test of the modules.
flow_queue=$((4 * flows > QUEUE_PKTS ? 4 * flows : QUEUE_PKTS))
flows_run() {
	[ -n "$controls" ] || { echo "no controls"; return 1; }
	ip netns exec $NS_CLI python3 -I "$helper" flows --dst $SRV_ADDR --port $PORT \
		--controls "${controls// /,}" --flows "$flows" --seconds "$flow_seconds" \
		> "$out/flows.json" 2> "$out/flows.err"
	flows_status=$?
	json "$out/flows.json" "d['connected']" > /dev/null ||
		{ echo "no result:"; cat "$out/flows.json" "$out/flows.err"; return 1; }
}
tc -n $NS_RTR qdisc change dev r1 parent 1:1 handle 10: pfifo limit $flow_queue
debug_kernel && diag "debug kernel: the flows run $flow_seconds s (8 s on the normal kernel)"
flows_run > "$out/flows.log" 2>&1
tc -n $NS_RTR qdisc change dev r1 parent 1:1 handle 10: pfifo limit $QUEUE_PKTS
connected=$(json "$out/flows.json" "d['connected']")
if [ "${connected:-0}" = "$flows" ]; then
	ktap_ok "$flows flows connected through the bottleneck"
else
	ktap_not_ok "$flows flows connected through the bottleneck"
	diag_lines "$(cat "$out/flows.log")"
	diag "connected ${connected:-?}; errors: $(json "$out/flows.json" "d['errors'][:5]")"
fi
diag "flows: $(json "$out/flows.json" "f\"{d['connected']} flows over {len(d['by_control'])} controls\"
	f\" through a $flow_queue-packet FIFO, connected in {d['connect_seconds']} s, sent for\"
	f\" {d['seconds']} s; data bytes acked per flow min {d['bytes_min']} median {d['bytes_median']}\"
	f\" max {d['bytes_max']}, total {d['bytes_total'] >> 20} MiB\"
	f\" ({d['bytes_total'] * 8 / d['seconds'] / 1e6:.1f} Mbit/s), {d['retransmits']} retransmits;\"
	f\" longest wait for an ACK with data outstanding {d['stall_max_s']} s (sampled every\"
	f\" ~{d['seconds'] / max(d['samples'], 1):.1f} s); lowest MemAvailable {d['mem_available_kb_min'] >> 10} MB,\"
	f\" TCP memory at most {d['tcp_mem_pages_max'] * 4 >> 10} MB\"") (tcp_mem: pressure at $(($(awk '{print $2}' /proc/sys/net/ipv4/tcp_mem) * 4 >> 10)) MB, limit $(($(awk '{print $3}' /proc/sys/net/ipv4/tcp_mem) * 4 >> 10)) MB)"
diag "flows by control: $(json "$out/flows.json" "'; '.join(f'{c}: {v[\"flows\"]} flows, bytes min {v[\"min\"]} median {v[\"median\"]}, {v[\"retransmits\"]} retransmits' for c, v in d['by_control'].items())")"
every_flow_progressed() {
	local n errors
	n=$(json "$out/flows.json" "d['no_progress']")
	errors=$(json "$out/flows.json" "'; '.join(d['errors'][:5])")
	[ "${n:-1}" = 0 ] && [ -z "$errors" ] && [ "${flows_status:-1}" = 0 ] ||
		{ echo "${n:-?} flows without a byte acked (nor retransmitted); errors: ${errors:-none}"; return 1; }
}
# A flow with nothing acked that retransmits is in backoff (its first segment and each
# retransmission lost); whether its timer keeps firing is the next check's.
check "every flow made progress (bytes acked > 0, or retransmitting on its timeout)" every_flow_progressed
diag "flows with nothing acked, retransmitting (in backoff): $(json "$out/flows.json" "d['backoff_unacked']")"
# A stall is a flow whose sender gave up: data outstanding at the end, and neither an ACK
# for more of it nor a retransmission for longer than its own retransmission timeout
# (backoff included, read from tcp_info) allows. Waiting out timeouts is not a stall (each
# timeout retransmits); heavy loss at the shared bottleneck can make a flow wait seconds
# for its ACKs (the longest wait is reported above). Judged against the half run instead,
# one RC3 flow of 200 in backoff (its timeout at 1.6 s after four in a row) failed CI.
no_stall() {
	local n
	n=$(json "$out/flows.json" "d['stalled']")
	[ "${n:-1}" = 0 ] ||
		{ echo "${n:-?} flows with data outstanding and no ACK or retransmission beyond their timeout"; return 1; }
}
check "no flow stalled (data outstanding, and no ACK or retransmission for longer than its timeout allows)" no_stall
diag "flows with data outstanding at half time and no ACK for it by the end (waiting out timeouts): $(json "$out/flows.json" "d['no_ack_second_half']")"
# Aborted flows release their controls at once; give the server a moment to read the RSTs.
sleep 1

# ---------------------------------------------------------------- 3. netem faults
bottleneck() { # netem arguments, at the bottleneck's leaf
	tc -n $NS_RTR qdisc del dev r1 parent 1:1 2>/dev/null
	# shellcheck disable=SC2086
	tc -n $NS_RTR qdisc add dev r1 parent 1:1 handle 10: netem $* limit $QUEUE_PKTS
}
# fault_on FAULT: an entry of FAULTS at the bottleneck; sets name (the fault's) and flap
# (a transfer's arguments for the link flaps, or none).
fault_on() {
	local args=${1#*|}
	name=${1%%|*} flap=()
	if [ "$args" = flap ]; then
		args="loss 0%" flap=(--flap "$NS_RTR:r1" --flaps $FLAPS --flap-down-ms $FLAP_DOWN_MS)
	fi
	bottleneck "$args" || diag "tc netem $args failed"
}
fault_off() { # the bottleneck's FIFO back
	tc -n $NS_RTR qdisc del dev r1 parent 1:1
	tc -n $NS_RTR qdisc add dev r1 parent 1:1 handle 10: pfifo limit $QUEUE_PKTS
}
# xfer_verdict TEST_NAME STATUS OUTCOME JSON ERR: the test line of a transfer under fault
# $name (its status, outcome, JSON report and stderr): intact, or partial but intact where
# the fault allows it.
xfer_verdict() {
	if [ "$2" = 0 ] && [ "$3" = complete ]; then
		ktap_ok "$1"
	elif [ "$2" = 0 ] && [ "$3" = partial ] && [ "$name" = "$PARTIAL_OK_FAULT" ]; then
		ktap_ok "$1 (partial within the ${budget} s budget: progress, intact)"
	else
		ktap_not_ok "$1"
		diag "outcome ${3:-?}; errors: $(json "$4" "'; '.join(d['errors'])")"
		diag_lines "$(cat "$5")"
	fi
}
# Hardware delay stamps through the faults: each host's NIC clock its own (seconds apart,
# one drifting 20 ppm, 500 ns of noise), single-segment skbs so that transmit stamps reach
# TCP (see README, "Hardware stamps").
stamp_counter() { tcpext $NS_CLI "$1"; } # NAME: the sender's TcpExt counter
hw_stamps() { # on|off
	local nd ns dev
	for nd in "$NS_CLI:c0:4000000000:0" "$NS_SRV:s0:-2000000000:20000"; do
		IFS=: read -r ns dev offset drift <<<"$nd"
		if [ "$1" = on ]; then
			nic_clock_on "$ns" "$dev" "$offset" "$drift" 500 &&
				ip netns exec "$ns" sysctl -qw net.ipv4.tcp_delay_stamps_hw=1 || return 1
		else
			nic_clock_off "$ns" "$dev"
			ip netns exec "$ns" sysctl -qw net.ipv4.tcp_delay_stamps_hw=0
		fi
	done
	if [ "$1" = on ]; then gso_max_segs 1; else gso_max_segs 65535; fi
}
hw_on=0
if has_nic_clock && hw_stamps on; then
	hw_on=1
	hw0=$(stamp_counter TCPDelayStampHwSample) bad0=$(stamp_counter TCPDelayStampBad)
fi
xfer_n=0
for fault in "${FAULTS[@]}"; do
	fault_on "$fault"
	for control in $controls; do
		xfer_n=$((xfer_n + 1))
		f=$out/xfer.$xfer_n.json
		ip netns exec $NS_CLI python3 -I "$helper" transfer --dst $SRV_ADDR --port $PORT \
			--control "$control" --bytes "$xfer_bytes" --budget "$budget" --seed $xfer_n \
			--server-log "$out/server.log" "${flap[@]}" > "$f" 2> "$f.err"
		status=$?
		ip -n $NS_RTR link set r1 up 2>/dev/null
		outcome=$(json "$f" "d['outcome']")
		figures=$(json "$f" "f\"{d['received']} of {d['bytes']} bytes in {d['seconds']} s,\"
			f\" {d['mbps']} Mbit/s, {d['retransmits']} retransmits, {d['integrity']}\"
			+ (f\", {d['flaps']} link flaps of $FLAP_DOWN_MS ms at \" + '/'.join(f'{b * 100 // d[\"bytes\"]}%' for b in d['flap_at_acked']) + ' acked' if d['flaps'] else '')")
		xfer_verdict "$name: $control: $xfer_bytes bytes arrive intact" $status "$outcome" \
			"$f" "$f.err"
		diag "$name: $control: ${outcome:-?}: ${figures:-no result}"
	done
done
fault_off
hw_test="netem faults: dx's transfers ran on hardware delay stamps (TCPDelayStampHwSample)"
if [ $hw_on = 1 ]; then
	hw_n=$(($(stamp_counter TCPDelayStampHwSample) - hw0)) bad_n=$(($(stamp_counter TCPDelayStampBad) - bad0))
	hw_stamps off
	diag "netem faults with hardware stamps on: $hw_n hardware delay samples, $bad_n options counted bad at the sender"
	if [[ " $controls " == *" dx "* ]]; then
		check "$hw_test" test "$hw_n" -gt 0
	else
		ktap_skip "$hw_test" "no dx among the controls"
	fi
else
	ktap_skip "$hw_test" "no emulated NIC clock on the testbed's veth (CONFIG_VETH_HWTSTAMP_EMUL)"
fi

# ---------------------------------------------------------------- 6. RC3
# RC3's loop runs in TCP's send and ACK paths whatever the control: it is tested over
# cubic (built in), with net.ipv4.tcp_rc3=1 in the sender's namespace and send buffers
# that hold a whole transfer, so that the loop copies real tails.
rc3_sent() { tcpext $NS_CLI TCPRC3Sent; }
rc3_xfer() { # NAME BYTES SEED [transfer args...]: one checksummed cubic transfer
	local name=$1 bytes=$2 seed=$3
	shift 3
	ip netns exec $NS_CLI python3 -I "$helper" transfer --dst $SRV_ADDR --port $PORT \
		--control cubic --bytes "$bytes" --budget "$budget" --seed "$seed" \
		--server-log "$out/server.log" "$@" > "$out/rc3.$name.json" 2> "$out/rc3.$name.err"
}
rc3_outcome() { json "$out/rc3.$1.json" "d['outcome']"; }
if [ -n "$rc3_ko" ]; then
	rc3_mod=$(modname "$rc3_ko")
	wmem_before=$(ip netns exec $NS_CLI sysctl -n net.ipv4.tcp_wmem)
	rc3_allow_netns 1  # cli is not the initial namespace
	ip netns exec $NS_CLI sysctl -qw net.ipv4.tcp_rc3=1 net.ipv4.tcp_wmem="4096 4194304 8388608"

	# 6a. The policy module loaded and unloaded while RC3 flows run: a background loop
	# of 4 MB transfers throughout, and one 300 KB transfer per cycle.
	touch "$out/rc3.bg.run"
	(
		n=0
		while [ -e "$out/rc3.bg.run" ]; do
			n=$((n + 1))
			rc3_xfer "bg.$n" 4000000 $((5000 + n))
			echo "$n $(rc3_outcome "bg.$n")" >> "$out/rc3.bg.log"
		done
	) &
	bg_pid=$!
	pids+=($bg_pid)
	rc3_cycles() {
		local c bad=0 sent0 loaded_sent=0 t0=$SECONDS before
		sent0=$(rc3_sent)
		for c in $(seq $RC3_CYCLES); do
			insmod "$rc3_ko" || { echo "cycle $c: insmod failed"; return 1; }
			rc3_xfer "cycle" 300000 "$c"
			[ "$(rc3_outcome cycle)" = complete ] ||
				{ bad=$((bad + 1)); echo "cycle $c: $(json "$out/rc3.cycle.json" "d['outcome'], d['errors']")"; }
			# The policy module is not pinned by the sockets using it: rmmod succeeds
			# while the background transfer runs, and the loop stops.
			rmmod "$rc3_mod" || { echo "cycle $c: rmmod refused"; return 1; }
		done
		loaded_sent=$(($(rc3_sent) - sent0))
		before=$(rc3_sent)
		rc3_xfer "unloaded" 300000 1
		echo "$RC3_CYCLES cycles in $((SECONDS - t0)) s, $bad transfers not intact;" \
			"TCPRC3Sent +$loaded_sent over the cycles, +$(($(rc3_sent) - before)) in a transfer" \
			"after the last unload ($(rc3_outcome unloaded))"
		[ $bad = 0 ] && [ "$loaded_sent" -gt 0 ] && [ "$(rc3_sent)" = "$before" ] &&
			[ "$(rc3_outcome unloaded)" = complete ]
	}
	rc3_cycles > "$out/rc3.cycles" 2>&1
	rc3_cycles_status=$?
	rm -f "$out/rc3.bg.run"
	wait $bg_pid
	if [ $rc3_cycles_status = 0 ]; then
		ktap_ok "rc3: $RC3_CYCLES policy load/unload cycles under RC3 traffic: transfers intact, the loop runs only while loaded"
	else
		ktap_not_ok "rc3: $RC3_CYCLES policy load/unload cycles under RC3 traffic: transfers intact, the loop runs only while loaded"
	fi
	diag_lines "$(sed 's/^/rc3 cycles: /' "$out/rc3.cycles")"
	bg_intact() {
		local n bad
		n=$(wc -l < "$out/rc3.bg.log" 2>/dev/null || echo 0)
		bad=$(awk '$2 != "complete"' "$out/rc3.bg.log" 2>/dev/null | wc -l)
		echo "$n background transfers of 4 MB across the cycles, $bad not intact"
		[ "$n" -gt 0 ] && [ "$bad" = 0 ]
	}
	check "rc3: background transfers across the cycles intact" bg_intact
	diag "rc3: $(bg_intact)"

	# 6b. The netem faults of item 3, RC3 on, the policy loaded.
	insmod "$rc3_ko" || diag "insmod $rc3_mod failed"
	for fault in "${FAULTS[@]}"; do
		fault_on "$fault"
		before=$(rc3_sent)
		xfer_n=$((xfer_n + 1))
		rc3_xfer "fault" "$xfer_bytes" "$xfer_n" "${flap[@]}"
		status=$?
		ip -n $NS_RTR link set r1 up 2>/dev/null
		outcome=$(rc3_outcome fault)
		xfer_verdict "rc3: $name: cubic with RC3: $xfer_bytes bytes arrive intact" $status \
			"$outcome" "$out/rc3.fault.json" "$out/rc3.fault.err"
		diag "rc3: $name: ${outcome:-?}: $(json "$out/rc3.fault.json" "f\"{d['received']} of {d['bytes']} bytes in {d['seconds']} s, {d['retransmits']} retransmits\"")," \
			"$(($(rc3_sent) - before)) packets at low priority"
	done
	fault_off

	# 6c. Many concurrent flows, every one with RC3 on (send buffers that hold 256 KB).
	rc3_queue=$((4 * RC3_FLOWS > QUEUE_PKTS ? 4 * RC3_FLOWS : QUEUE_PKTS))
	tc -n $NS_RTR qdisc change dev r1 parent 1:1 handle 10: pfifo limit $rc3_queue
	before=$(rc3_sent)
	ip netns exec $NS_CLI python3 -I "$helper" flows --dst $SRV_ADDR --port $PORT \
		--controls cubic --flows $RC3_FLOWS --seconds $RC3_FLOW_SECONDS --sndbuf 262144 \
		--chunk 262144 > "$out/rc3.flows.json" 2> "$out/rc3.flows.err"
	rc3_flows_status=$?
	tc -n $NS_RTR qdisc change dev r1 parent 1:1 handle 10: pfifo limit $QUEUE_PKTS
	rc3_flows_ok() {
		local connected n stalled
		connected=$(json "$out/rc3.flows.json" "d['connected']")
		n=$(json "$out/rc3.flows.json" "d['no_progress']")
		stalled=$(json "$out/rc3.flows.json" "d['stalled']")
		[ "${connected:-0}" = $RC3_FLOWS ] && [ "${n:-1}" = 0 ] && [ "${stalled:-1}" = 0 ] &&
			[ $rc3_flows_status = 0 ] ||
			{ echo "connected ${connected:-?}, ${n:-?} without progress, ${stalled:-?} stalled;" \
				"errors: $(json "$out/rc3.flows.json" "d['errors'][:5]") $(head -c 300 "$out/rc3.flows.err")"; return 1; }
	}
	check "rc3: $RC3_FLOWS concurrent flows with RC3: all connected, every one made progress, none stalled" rc3_flows_ok
	rc3_flow_sent=$(($(rc3_sent) - before))
	check "rc3: the flows sent at low priority" test "$rc3_flow_sent" -gt 0
	diag "rc3 flows: $(json "$out/rc3.flows.json" "f\"{d['connected']} flows for {d['seconds']} s; bytes acked per flow min {d['bytes_min']} median {d['bytes_median']}, {d['retransmits']} retransmits, longest wait for an ACK {d['stall_max_s']} s\""); $rc3_flow_sent packets at low priority"
	check "rmmod $rc3_mod" rmmod_retry "$rc3_mod"
	ip netns exec $NS_CLI sysctl -qw net.ipv4.tcp_rc3=0 net.ipv4.tcp_wmem="$wmem_before"
	rc3_allow_netns 0
fi

# ---------------------------------------------------------------- 5. unprivileged selection
# Allow only reno and cubic, so that none of the controls under test is allowed (rust_reno
# is allowed by default, like reno).
echo "reno cubic" > /proc/sys/net/ipv4/tcp_allowed_congestion_control
allowed=$(cat /proc/sys/net/ipv4/tcp_allowed_congestion_control)
refcnts() { local ko; for ko in "${kos[@]}"; do echo "$(modname "$ko") $(cat "/sys/module/$(modname "$ko")/refcnt" 2>&1)"; done; }
refcnts > "$out/refcnt.before"
ip netns exec $NS_CLI setpriv --reuid=65534 --regid=65534 --clear-groups \
	python3 -I - unpriv --dst $SRV_ADDR --port $PORT --controls "${controls// /,}" --base reno \
	< "$helper" > "$out/unpriv.json" 2> "$out/unpriv.err"
refcnts > "$out/refcnt.after"
allowed_after=$(cat /proc/sys/net/ipv4/tcp_allowed_congestion_control)
echo "$allowed_before" > /proc/sys/net/ipv4/tcp_allowed_congestion_control
diag "unprivileged (uid $(json "$out/unpriv.json" "d['uid']")), allowed: $allowed;" \
	"module refcounts before: $(paste -sd, "$out/refcnt.before"), after: $(paste -sd, "$out/refcnt.after")"
for control in $controls; do
	unpriv_ok() {
		local ok
		grep -qw "$control" <<<"$allowed" && { echo "$control is allowed: $allowed"; return 1; }
		ok=$(json "$out/unpriv.json" "d['controls']['$control']['ok']")
		[ "$ok" = True ] || { json "$out/unpriv.json" "d['errors']"; cat "$out/unpriv.err"; return 1; }
		cmp -s "$out/refcnt.before" "$out/refcnt.after" || { echo "module refcounts changed"; return 1; }
		[ "$allowed_after" = "$allowed" ] || { echo "allowed list changed: $allowed_after"; return 1; }
	}
	check "unprivileged setsockopt($control) not allowed: EPERM, socket keeps its control" unpriv_ok
	diag "$control: $(json "$out/unpriv.json" "(lambda r: f\"fresh socket {r['fresh_before']} -> {r['fresh_errno']} -> {r['fresh_after']};\"
		f\" live {r.get('live_before')} connection -> {r.get('live_errno')} -> {r.get('live_after')},\"
		f\" data intact: {r.get('live_intact')}\")(d['controls']['$control'])")"
done

# ---------------------------------------------------------------- unload, dmesg
for ((i = ${#kos[@]} - 1; i >= 0; i--)); do
	check "rmmod $(modname "${kos[$i]}")" rmmod_retry "$(modname "${kos[$i]}")"
done
[ -z "$server_pid" ] || { kill -TERM "$server_pid"; wait "$server_pid"; } 2>/dev/null
diag "server: $(cat "$out/server.json" 2>/dev/null)"
check "dmesg has no WARN, BUG, Oops, sanitizer, lockdep or out-of-memory report" dmesg_clean
ktap_finish
