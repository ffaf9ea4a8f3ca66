#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# DX and the delay-stamp option, in the UML guest:
# - invalid module parameters fail the load with a message naming the parameter and range;
# - dx offers the option and the receiver (any congestion control) answers, both having
#   opted in (net.ipv4.tcp_delay_stamps=1, which setup_dumbbell sets; 0 by default):
#   samples reach dx (TCPDelayStampSample), none is bad, ss shows software stamps (source 2),
#   and all but a few take the sender's t1 at the device boundary, the time TCP's skb went
#   to the driver (TCPDelayStampDevTx), not TCP's departure time (one that cannot be moved
#   is dropped, not mixed in);
# - with the receiver's net.ipv4.tcp_delay_stamps=0 the option is refused: dx falls back to
#   the RTT (source 3 in ss), no sample and no bad option is counted, traffic flows;
# - flows that do not use dx carry no option (no sample counted);
# - with hardware timestamping on at both ends (veth's emulated NIC clocks, with an offset,
#   a drift and noise; CONFIG_VETH_HWTSTAMP_EMUL) but net.ipv4.tcp_delay_stamps_hw at its
#   default 0, no sample is a hardware one; with it 1 on both hosts, the samples are
#   hardware ones (TCPDelayStampHwSample), ss shows hardware stamps (source 1), none is
#   bad, and no software sample takes the device-boundary t1 (data that asks for a hardware
#   stamp keeps TCP's t1); with the receiver's hardware stamping off again, software stamps
#   come back;
# - with DX's back-to-back calibration on at both ends (net.ipv4.tcp_delay_stamps_calibrate,
#   at 10 Gbit/s, above the dumbbell's rates), stamps are moved at both ends
#   (TCPDelayStampCalibrated), every sample stays valid and dx carries traffic.
#
#   tcp_dx.sh MODULE.ko [PARAM=VALUE...]
set -u
ko=$1; shift
mod_params=("$@")
source "$(dirname "$0")/lib.sh"
RATE_MBIT=100 DELAY_US=500 QUEUE_PKTS=500 FLOWS=2 SECONDS_PER_RUN=3
selftest_dir

ktap_plan 30
dmesg -C

check "rejects headroom_ns=0" rejects_param "$ko" headroom_ns headroom_ns=0
check "rejects min_cwnd_pkts=0" rejects_param "$ko" min_cwnd_pkts min_cwnd_pkts=0
check "rejects max_decrease_ppm above 1000000" rejects_param "$ko" max_decrease_ppm max_decrease_ppm=1000001
check "rejects base_rtt_slack_ns above headroom_ns" rejects_param "$ko" base_rtt_slack_ns headroom_ns=1000 base_rtt_slack_ns=2000
check "insmod with the testbed parameters" insmod "$ko" "${mod_params[@]}"

setup_dumbbell $RATE_MBIT $DELAY_US $QUEUE_PKTS && start_iperf_server || diag "dumbbell setup failed"

COUNTERS="TCPDelayStampSample TCPDelayStampBad TCPDelayStampHwSample TCPDelayStampDevTx TCPDelayStampCalibrated"
# run NAME CC: iperf3 with CC for SECONDS_PER_RUN, sampling `ss -ti` into $out/ss.NAME;
# counters before and after in $out/ctr{0,1}.NAME, a line "COUNTER CLI SRV" each.
counters() {
	local names=($COUNTERS) cli srv i
	cli=($(tcpext $NS_CLI $COUNTERS)) srv=($(tcpext $NS_SRV $COUNTERS))
	for i in "${!names[@]}"; do echo "${names[$i]} ${cli[$i]} ${srv[$i]}"; done
}
run() {
	local name=$1 cc=$2
	counters > "$out/ctr0.$name"
	iperf_sampled "$out/$name.json" "$out/ss.$name" 0.2 -P $FLOWS -t $SECONDS_PER_RUN -C "$cc"
	counters > "$out/ctr1.$name"
}
# delta NAME COUNTER SIDE(2 cli, 3 srv): how much the counter grew during run NAME.
delta() {
	echo $(( $(awk -v c="$2" -v f="$3" '$1 == c { print $f }' "$out/ctr1.$1") -
		 $(awk -v c="$2" -v f="$3" '$1 == c { print $f }' "$out/ctr0.$1") ))
}
# throughput NAME: Mbit/s received; fails below 1 Mbit/s, far above a stall (on the debug
# kernel, which forwards about 5 Mbit/s through this dumbbell, below 500 kbit/s). DX reads
# the guest's late timers as queueing, more so when the host is busy (25-60 Mbit/s
# measured); the bench measures its performance on simulated time.
if debug_kernel; then MIN_BPS=500000; else MIN_BPS=1000000; fi
throughput() {
	python3 - "$out/$1.json" $MIN_BPS <<'PY'
import json, sys
end = json.load(open(sys.argv[1]))["end"]
total = end["sum_received"]["bits_per_second"]
print("Mbit/s:", round(total / 1e6, 1))
sys.exit(0 if total >= int(sys.argv[2]) else 1)
PY
}
# ss_check RUN NAME CMD...: check NAME, or skip it when ss got no sample while RUN's flows
# ran (on a starved host one ss call has taken a whole run).
ss_check() {
	local run=$1 name=$2; shift 2
	if grep -q 'bytes_acked:' "$out/ss.$run" 2>/dev/null; then check "$name" "$@"
	else ktap_skip "$name" "ss got no sample while the flows ran"; fi
}
# devtx_most NAME: run NAME's samples at the sender took the device-boundary t1, all but a
# few (those before the connection's first: a sample that cannot be moved is dropped).
devtx_most() {
	local dev all
	dev=$(delta "$1" TCPDelayStampDevTx 2) all=$(delta "$1" TCPDelayStampSample 2)
	echo "device t1 in $dev of $all samples"
	[ "$dev" -gt 100 ] && [ $((dev * 100)) -ge $((all * 98)) ]
}
sources() { ss_sources "$out/ss.$1"; } # NAME: the sample sources dx reported in run NAME

# iperf3 -C selects the control after connect(), when the SYN has gone without dx's
# offer: the route selects dx at connect() (as a setsockopt(TCP_CONGESTION) before
# connect() would; a namespace other than the initial one cannot default to a restricted
# control).
ip -n $NS_CLI route add $SRV_ADDR/32 via 10.10.1.2 congctl dx
run stamps dx
check "option negotiated: dx carries traffic (>= $((MIN_BPS / 1000)) kbit/s)" throughput stamps
diag "option negotiated: $(throughput stamps 2>&1), samples $(delta stamps TCPDelayStampSample 2), device t1 $(delta stamps TCPDelayStampDevTx 2), bad $(delta stamps TCPDelayStampBad 2)/$(delta stamps TCPDelayStampBad 3) (cli/srv)"
check "option negotiated: delay samples reach dx" test "$(delta stamps TCPDelayStampSample 2)" -gt 100
# No bad option on either side. On two CPUs (the x86_64 guest) the server, which sends only
# on iperf3's control connection, has counted one bad sample in each run (of a handful
# there; none of the 1000+ of the data connection, none in UML): an open item (issue 29),
# measured and allowed there as at most 1 in 100 samples, and reported.
bad_name="no bad option on either side"
[ "$(nproc)" -lt 2 ] || bad_name="at most 1% bad options (two CPUs: see the comment)"
few_bad() { # RUN
	local samples bad
	samples=$(( $(delta "$1" TCPDelayStampSample 2) + $(delta "$1" TCPDelayStampSample 3) ))
	bad=$(( $(delta "$1" TCPDelayStampBad 2) + $(delta "$1" TCPDelayStampBad 3) ))
	if [ "$(nproc)" -lt 2 ]; then test "$bad" -eq 0; else test $((bad * 100)) -le "$samples"; fi
}
check "option negotiated: $bad_name" few_bad stamps
check "option negotiated: no hardware sample without hardware stamping" \
	test "$(delta stamps TCPDelayStampHwSample 2)" -eq 0
check "option negotiated: >= 98% of samples take t1 at the device boundary (TCPDelayStampDevTx)" \
	devtx_most stamps
ss_check stamps "option negotiated: ss shows software stamps (pacing_gain:2)" test "$(sources stamps)" = "2 "
diag "dx ss sample: $(grep -o 'bbr:([^)]*)' "$out/ss.stamps" | tail -1)"

# DX's back-to-back calibration at both ends, at 10 Gbit/s: the segments of a GSO skb,
# which share one stamp, and stamps closer than 1.2 us are moved apart.
for ns in $NS_CLI $NS_SRV; do ip netns exec $ns sysctl -qw net.ipv4.tcp_delay_stamps_calibrate=10000; done
run calibrated dx
check "calibrated: dx carries traffic (>= $((MIN_BPS / 1000)) kbit/s)" throughput calibrated
diag "calibrated: $(throughput calibrated 2>&1), samples $(delta calibrated TCPDelayStampSample 2), stamps moved $(delta calibrated TCPDelayStampCalibrated 2)/$(delta calibrated TCPDelayStampCalibrated 3), bad $(delta calibrated TCPDelayStampBad 2)/$(delta calibrated TCPDelayStampBad 3) (cli/srv)"
# The sender's segments of a GSO skb share one stamp: moved on any kernel. At the receiver
# stamps move only where arrivals came closer than 1.2 us, and the debug kernel's work per
# packet (KASAN) spaces them further apart (0 moved of 407 samples in a CI run): there only
# the sender's are required.
calibrated_moved() {
	test "$(delta calibrated TCPDelayStampCalibrated 2)" -gt 0 || return 1
	debug_kernel || test "$(delta calibrated TCPDelayStampCalibrated 3)" -gt 0
}
check "calibrated: stamps moved at the sender and (but on the debug kernel) at the receiver" \
	calibrated_moved
calibrated_come() { test "$(delta calibrated TCPDelayStampSample 2)" -gt 100 && few_bad calibrated; }
check "calibrated: samples still come, $bad_name" calibrated_come
for ns in $NS_CLI $NS_SRV; do ip netns exec $ns sysctl -qw net.ipv4.tcp_delay_stamps_calibrate=0; done

# Hardware stamps: the sender's device stamps t1 and t4, the receiver's t2, each from its
# own emulated clock (seconds apart, one drifting 40 ppm, the paper's figure, with 300 ns
# of noise on both), enabled the standard way (SIOCSHWTSTAMP).
# Each skb is one segment, so that transmit stamps reach TCP (see gso_max_segs in lib.sh).
check "hardware stamping on at both ends (SIOCSHWTSTAMP)" \
	eval 'gso_max_segs 1 && nic_clock_on $NS_CLI c0 5000000000 0 300 &&
	      nic_clock_on $NS_SRV s0 -3000000000 40000 300'
run hwoptout dx
check "hardware stamping on, tcp_delay_stamps_hw=0: no hardware sample, samples still come" \
	test "$(delta hwoptout TCPDelayStampHwSample 2)" -eq 0 -a "$(delta hwoptout TCPDelayStampSample 2)" -gt 100
check "hardware stamping on, tcp_delay_stamps_hw=0: >= 98% of samples take the device-boundary t1" \
	devtx_most hwoptout
for ns in $NS_CLI $NS_SRV; do ip netns exec $ns sysctl -qw net.ipv4.tcp_delay_stamps_hw=1; done
run hw dx
check "hardware stamps: dx carries traffic (>= $((MIN_BPS / 1000)) kbit/s)" throughput hw
diag "hardware stamps: $(throughput hw 2>&1), samples $(delta hw TCPDelayStampSample 2), hardware $(delta hw TCPDelayStampHwSample 2), device t1 $(delta hw TCPDelayStampDevTx 2), bad $(delta hw TCPDelayStampBad 2)/$(delta hw TCPDelayStampBad 3) (cli/srv)"
check "hardware stamps: most samples are hardware ones" \
	test "$(( $(delta hw TCPDelayStampHwSample 2) * 2 ))" -gt "$(delta hw TCPDelayStampSample 2)" \
	-a "$(delta hw TCPDelayStampHwSample 2)" -gt 100
check "hardware stamps: $bad_name" few_bad hw
check "hardware stamps: no software sample takes the device-boundary t1" \
	test "$(delta hw TCPDelayStampDevTx 2)" -eq 0
ss_check hw "hardware stamps: ss shows hardware stamps (pacing_gain:1)" test "$(sources hw)" = "1 "
diag "dx ss sample: $(grep -o 'bbr:([^)]*)' "$out/ss.hw" | tail -1)"
nic_clock_off $NS_SRV s0
run hwoff dx
ss_check hwoff "receiver's hardware stamping off: software stamps again (pacing_gain:2)" \
	test "$(sources hwoff)" = "2 "
nic_clock_off $NS_CLI c0
gso_max_segs 65535

ip netns exec $NS_SRV sysctl -qw net.ipv4.tcp_delay_stamps=0
run refused dx
ip netns exec $NS_SRV sysctl -qw net.ipv4.tcp_delay_stamps=1
ip -n $NS_CLI route del $SRV_ADDR/32
check "option refused: dx carries traffic (>= $((MIN_BPS / 1000)) kbit/s)" throughput refused
diag "option refused: $(throughput refused 2>&1)"
check "option refused: no sample, no bad option" \
	test "$(delta refused TCPDelayStampSample 2)" -eq 0 -a "$(delta refused TCPDelayStampBad 2)" -eq 0 \
	-a "$(delta refused TCPDelayStampBad 3)" -eq 0
ss_check refused "option refused: ss shows the RTT fallback (pacing_gain:3)" test "$(sources refused)" = "3 "

run cubic cubic
check "cubic: carries traffic" throughput cubic
check "cubic: no option, no sample" test "$(delta cubic TCPDelayStampSample 2)" -eq 0 \
	-a "$(delta cubic TCPDelayStampBad 3)" -eq 0
check "option refused, cubic: no device-boundary t1" \
	test "$(delta refused TCPDelayStampDevTx 2)" -eq 0 -a "$(delta cubic TCPDelayStampDevTx 2)" -eq 0
ss_check stamps "ss -ti shows dx's queuing delay, minimum RTT and source" \
	grep -q 'bbr:(bw:[0-9.]*[KMG]\?bps,mrtt:[0-9.]*,pacing_gain:2,cwnd_gain:[0-9.e+-]*)' "$out/ss.stamps"
ktap_finish
