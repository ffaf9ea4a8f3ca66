#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Compare congestion controls through one bottleneck, inside the UML guest.

For each algorithm: build the three-namespace dumbbell of selftests/lib.sh (drop-tail FIFO,
or RED step marking at K packets for ECN algorithms such as dctcp), run N parallel iperf3
flows from cli to srv, sample every flow's smoothed RTT with `ss -ti` every 10 ms, and
report throughput, utilization, RTT p50/p99, retransmits and Jain's fairness index.

    netbench.py --algos rust_reno,cubic,dctcp --rate-mbit 100 --delay-us 500 \
                --queue-pkts 100 --ecn-k-pkts 20 --flows 4 --seconds 5 [--json out.json]
"""
import argparse
import json
import os
import re
import subprocess
import sys
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LIB = os.path.join(ROOT, "selftests", "lib.sh")
SRV = "10.10.2.2"
ECN_ALGOS = {"dctcp"}


def sh(cmd, check=True, **kw):
    return subprocess.run(["bash", "-c", cmd], check=check, capture_output=True, text=True, **kw)


def lib(cmd):
    return sh(f"source {LIB}; {cmd}")


def percentile(xs, p):
    if not xs:
        return None
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(p / 100 * len(xs)))]


def jain(xs):
    xs = [x for x in xs if x is not None]
    if not xs or sum(xs) == 0:
        return None
    return sum(xs) ** 2 / (len(xs) * sum(x * x for x in xs))


RTT_RE = re.compile(r"\brtt:([0-9.]+)/")
BYTES_RE = re.compile(r"\bbytes_sent:(\d+)")


def sample_rtts(stop, out):
    """Smoothed RTT (us) of every bulk flow, every 10 ms, until stop is set."""
    while not stop.is_set():
        r = sh(f"ip netns exec cli ss -tinH state established dst {SRV}", check=False)
        lines = r.stdout.splitlines()
        for info in lines[1::2]:
            b = BYTES_RE.search(info)
            m = RTT_RE.search(info)
            # Skip iperf3's control connection, which carries a few hundred bytes.
            if m and b and int(b.group(1)) > 1_000_000:
                out.append(float(m.group(1)) * 1000)
        time.sleep(0.01)


def run_one(algo, a):
    ecn_k = a.ecn_k_pkts if algo in ECN_ALGOS else ""
    lib(f"setup_dumbbell {a.rate_mbit} {a.delay_us} {a.queue_pkts} {ecn_k} && start_iperf_server")
    rtts, stop = [], threading.Event()
    t = threading.Thread(target=sample_rtts, args=(stop, rtts))
    t.start()
    r = sh(f"ip netns exec cli timeout {a.seconds + 30} iperf3 -c {SRV} -J -t {a.seconds} "
           f"-P {a.flows} -C {algo} --omit 1", check=False)
    stop.set()
    t.join()
    res = {"algo": algo, "flows": a.flows, "ok": False}
    try:
        d = json.loads(r.stdout)
        end = d["end"]
        mbps = end["sum_received"]["bits_per_second"] / 1e6
        per_flow = [s["receiver"]["bits_per_second"] / 1e6 for s in end["streams"]]
        res.update(ok=True,
                   cc=end.get("sender_tcp_congestion", "?"),
                   mbps=round(mbps, 1),
                   util_pct=round(100 * mbps / a.rate_mbit, 1),
                   rtt_p50_us=percentile(rtts, 50),
                   rtt_p99_us=percentile(rtts, 99),
                   rtt_samples=len(rtts),
                   retransmits=end["sum_sent"].get("retransmits"),
                   jain=round(jain(per_flow), 3) if jain(per_flow) else None,
                   per_flow_mbps=[round(x, 1) for x in per_flow])
        if res["cc"] != algo:
            res.update(ok=False, error=f"flows used {res['cc']}, not {algo}")
    except (ValueError, KeyError) as e:
        res["error"] = f"iperf3 failed: {e}: {r.stdout[-300:]} {r.stderr[-300:]}"
    lib("ns_cleanup")
    return res


def fmt(v, spec="{:.0f}"):
    return "-" if v is None else spec.format(v)


def table(results, a):
    lines = [f"{a.flows} flow(s), {a.seconds} s, {a.rate_mbit} Mbit/s bottleneck, "
             f"{a.queue_pkts}-packet drop-tail FIFO (ECN step at K={a.ecn_k_pkts} for "
             f"{'/'.join(sorted(ECN_ALGOS))}), {a.delay_us} us base delay",
             "",
             "| algorithm | throughput Mbit/s | utilization | RTT p50 us | RTT p99 us "
             "| retransmits | Jain |",
             "|---|---:|---:|---:|---:|---:|---:|"]
    for r in results:
        if not r["ok"]:
            lines.append(f"| {r['algo']} | FAILED: {r.get('error', '?')} | | | | | |")
            continue
        lines.append(f"| {r['algo']} | {r['mbps']:.1f} | {r['util_pct']:.1f}% | "
                     f"{fmt(r['rtt_p50_us'])} | {fmt(r['rtt_p99_us'])} | "
                     f"{fmt(r['retransmits'])} | {fmt(r['jain'], '{:.3f}')} |")
    return "\n".join(lines)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--algos", default="cubic,dctcp")
    p.add_argument("--rate-mbit", type=int, default=100)
    p.add_argument("--delay-us", type=int, default=500)
    p.add_argument("--queue-pkts", type=int, default=100)
    p.add_argument("--ecn-k-pkts", type=int, default=20)
    p.add_argument("--flows", type=int, default=4)
    p.add_argument("--seconds", type=int, default=5)
    p.add_argument("--json")
    a = p.parse_args()
    results = []
    for algo in a.algos.split(","):
        print(f"# running {algo}: {a.flows} flow(s) for {a.seconds} s", flush=True)
        results.append(run_one(algo, a))
    print(table(results, a), flush=True)
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"params": vars(a), "results": results}, f, indent=1)
    return 0 if all(r["ok"] for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
