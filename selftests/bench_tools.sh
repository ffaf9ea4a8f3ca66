#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Selftest of the bench's own instruments, in the guest: the netlink sampler reads what
# `ss -ti` and `tc -s qdisc` print, and the flow-size workload completes and times its flows.
#
#   selftests/bench_tools.sh
source "$(dirname "$0")/lib.sh"
cd "$(dirname "$0")/.." || exit 1
trap ns_cleanup EXIT

ktap_plan 7
setup_dumbbell 100 500 100 || { echo "Bail out! dumbbell setup failed"; exit 1; }

# A queue that holds still: the bottleneck drains one packet per 1.5 s, so 20 pings sent
# back to back leave a backlog that both readers must report identically.
tc -n $NS_RTR class change dev r1 parent 1: classid 1:1 htb rate 8kbit burst 1514 cburst 1514 quantum 1514 2>/dev/null
ip netns exec $NS_CLI ping -c 20 -i 0.01 -s 1400 -W 0.01 -q $SRV_ADDR >/dev/null 2>&1
tc_backlog_pkts() {
	tc -n $NS_RTR -s qdisc show dev r1 |
		awk '/^qdisc pfifo 10:/ {on = 1} on && /backlog/ {sub("p", "", $3); print $3; exit}'
}
# The queue only drains (a packet per 1.5 s), and a loaded host may take longer than that
# between two readings: tc before and after bracket the netlink reading.
tc_before=$(tc_backlog_pkts)
nl_backlog=$(python3 -c 'import sys; sys.path.insert(0, "tools/bench"); import nlsample
print(nlsample.NetlinkSampler("cli", "rtr").qdisc_backlog("r1", 0x00100000))')
tc_after=$(tc_backlog_pkts)
check "netlink qdisc backlog equals tc's (tc ${tc_before}p, netlink ${nl_backlog}p, tc ${tc_after}p)" \
	test "$nl_backlog" -gt 0 -a "$nl_backlog" -le "$tc_before" -a "$nl_backlog" -ge "$tc_after"
tc -n $NS_RTR class change dev r1 parent 1: classid 1:1 htb rate 100mbit burst 3000 cburst 3000 quantum 1514 2>/dev/null

# A connection gone idle after 200 KB, so its state holds still: every field the bench
# records must equal what ss prints.
ip netns exec $NS_SRV python3 -c 'import socket, time
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("0.0.0.0", 5999)); s.listen(); c, _ = s.accept(); n = 0
while n < 200000: n += len(c.recv(1 << 16))
time.sleep(30)' &
disown
sleep 0.5
compare=$(ip netns exec $NS_CLI python3 -c '
import socket, subprocess, sys, time
sys.path.insert(0, "tools/bench")
import nlsample
c = socket.create_connection(("10.10.2.2", 5999))
c.setsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, b"cubic")
c.sendall(bytes(200000))
time.sleep(1)
ss = subprocess.run(["ss", "-tinH", "state", "established", "dport", "5999"],
                    capture_output=True, text=True).stdout
nl = [s for s in nlsample.NetlinkSampler("cli", "rtr").tcp_established() if s["dport"] == 5999][0]
want = {"rtt_us": round(float(ss.split("rtt:")[1].split("/")[0]) * 1000),
        "cwnd": int(ss.split("cwnd:")[1].split()[0]),
        "bytes_acked": int(ss.split("bytes_acked:")[1].split()[0]),
        "pacing_bps": int(ss.split("pacing_rate ")[1].split("bps")[0])}
got = {k: nl[k] for k in want}
print("ok" if got == want else f"netlink {got} != ss {want}")' 2>&1)
check "netlink tcp_info equals ss -ti (${compare})" test "$compare" = ok

# The flow-size workload: every planned flow completes, each no faster than a round trip.
ip netns exec $NS_SRV python3 tools/bench/fctflow.py server --port 6000 &
disown
sleep 0.5
# The debug kernel forwards about 5 Mbit/s, a sixth of this workload's 30 Mbit/s (18 of 25
# flows had completed after the 5 s of grace): there the flows get 40 s to complete.
grace_s=5 client_timeout=60
if debug_kernel; then
	grace_s=40 client_timeout=120
	diag "debug kernel: $grace_s s of grace for the flows to complete (5 s on the normal kernel)"
fi
workload='{"rate_mbit": 100, "load_pct": 30, "start_s": 0, "stop_s": 1, "grace_s": '$grace_s', "seed": 3,
	"sizes_kb": [[2, 50], [64, 30], [512, 20]]}'
out=$(mktemp)
ip netns exec $NS_CLI timeout $client_timeout python3 tools/bench/fctflow.py client --dst $SRV_ADDR --port 6000 \
	--algo cubic --workload "$workload" --out "$out"
check "workload client ends with status 0" test $? = 0
summary=$(python3 -c 'import json, sys; r = json.load(open(sys.argv[1])); fs = r["flows"]
done = [f for f in fs if "fct_us" in f]
# From the first data byte: after the handshake (at least one base RTT less), never negative.
data_ok = all(f["fct_data_us"] >= 0 and f["fct_us"] - f["fct_data_us"] >= 400 for f in done)
print(r["planned"], len(fs), len(done), min((f["fct_us"] for f in done), default=0),
      min((f["fct_data_us"] for f in done), default=0), int(data_ok))' "$out")
read -r planned recorded completed min_fct min_data data_ok <<<"$summary"
check "every planned flow is recorded ($recorded of $planned)" test "$planned" -gt 5 -a "$recorded" = "$planned"
check "every flow completed ($completed of $planned)" test "$completed" = "$planned"
check "no flow faster than the base RTT (fastest ${min_fct} us, RTT >= 500 us)" \
	python3 -c "import sys; sys.exit(not float('$min_fct') >= 500)"
check "each FCT from the first data byte leaves the handshake out (fastest ${min_data} us)" test "$data_ok" = 1
rm -f "$out"
ktap_finish
