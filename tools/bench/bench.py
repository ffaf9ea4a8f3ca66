#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""The comparison bench: scenarios (tools/bench/scenarios/*.json) x algorithms, each run in
its own boot of the project's UML kernel, on simulated time by default, then a report.

    tools/bench/bench.py run [--clock simulated|normal] [--jobs N] [SCENARIO...]
    tools/bench/bench.py report          # results/BENCH.md and results/plots/*.png

`make bench` does both for every scenario. Raw results: results/raw/<scenario>/<algo>.<rep>.json.
"""
import argparse
import datetime
import glob
import json
import os
import re
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor, wait

from netbench import payload_per_frame  # the capacity netbench counts utilization against

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCENARIOS = os.path.join(ROOT, "tools", "bench", "scenarios")
RAW = os.path.join(ROOT, "results", "raw")
PLOTS = os.path.join(ROOT, "results", "plots")
REPORT = os.path.join(ROOT, "results", "BENCH.md")
ALGO_ORDER = ["cubic", "dctcp", "bbr", "rust_reno", "timely", "timely_patched"]
# The scenarios the headline's 1 Gbit/s table draws on.
HEADLINE_SCENARIOS = ["one_flow", "four_flows", "incast16", "flows_leaving", "convergence",
                      "fct_websearch"]


def algo_key(algo):
    """Report order: by control (ALGO_ORDER, others after), each plain before its variants."""
    base = algo.split("/")[0].split("+")[0]
    # Numbers in a variant sort by value: +k2, +k5, +k20.
    natural = [(0, int(t), "") if t.isdigit() else (1, 0, t)
               for t in re.split(r"(\d+)", algo) if t]
    return (ALGO_ORDER.index(base) if base in ALGO_ORDER else len(ALGO_ORDER), base,
            algo != base, natural)


def config(var):
    return subprocess.run(["bash", "-c", f"source {ROOT}/tools/testbed/config.sh; echo ${var}"],
                          capture_output=True, text=True, check=True).stdout.strip()


def load_scenarios(names):
    files = sorted(glob.glob(os.path.join(SCENARIOS, "*.json")))
    scs = [dict(json.load(open(f)), file=os.path.relpath(f, ROOT)) for f in files]
    if names:
        missing = set(names) - {s["name"] for s in scs}
        if missing:
            sys.exit(f"error: no scenario named {', '.join(sorted(missing))} in {SCENARIOS}")
        scs = [s for s in scs if s["name"] in names]
    return scs


def raw_path(sc, algo, rep):
    # A mixed run ("timely/cubic") is one file, not a directory.
    return os.path.join(RAW, sc["name"], f"{algo.replace('/', '-vs-')}.{rep}.json")


def ok_result(path):
    try:
        return json.load(open(path)).get("ok", False)
    except (OSError, ValueError):
        return False


def run_job(job, timely_params, prov):
    sc, algo, rep, clock = job
    out = raw_path(sc, algo, rep)
    os.makedirs(os.path.dirname(out), exist_ok=True)
    if os.path.exists(out):
        os.remove(out)
    params = sc.get("timely_params", timely_params)
    dx_params = sc.get("dx_params", config("DX_PARAMS_1G"))
    rc3 = " && insmod rust/tcp_rc3.ko" if algo.endswith("+rc3") else ""
    guest = (f"insmod rust/tcp_rust_reno.ko && insmod rust/tcp_timely.ko {params} && "
             f"insmod rust/tcp_dx.ko {dx_params}{rc3} || exit 1; "
             f"python3 tools/bench/netbench.py --scenario {sc['file']} --algo {algo} --rep {rep} "
             f"--json {out}")
    cmd = [os.path.join(ROOT, "tools", "testbed", "uml-run.sh"), "--timeout", "1500"]
    if clock == "simulated":
        cmd.append("--time-travel")
    t0 = time.monotonic()
    r = subprocess.run(cmd + ["--", "bash", "-c", guest], capture_output=True, text=True, cwd=ROOT)
    wall = time.monotonic() - t0
    try:
        res = json.load(open(out))
    except (OSError, ValueError):
        tail = (r.stdout + r.stderr).strip().splitlines()[-3:]
        res = {"algo": algo, "scenario": sc["name"], "ok": False,
               "error": f"no result (guest status {r.returncode}): {' | '.join(tail)}"}
    res.update(rep=rep, clock=clock, wall_s=round(wall, 1), **prov)
    with open(out, "w") as f:
        json.dump(res, f)
    return res


def provenance():
    """What a figure must name: the commit (dirty if the code differed from it) and when
    it ran. The bench's own outputs (results/, the README's headline) are not code."""
    git = ["git", "-C", ROOT]
    commit = subprocess.run(git + ["rev-parse", "--short", "HEAD"],
                            capture_output=True, text=True).stdout.strip()
    changed = subprocess.run(git + ["status", "--porcelain", "--untracked-files=no", "--",
                                    ".", ":(exclude)results", ":(exclude)README.md"],
                             capture_output=True, text=True).stdout.strip()
    return {
        "commit": commit + ("-dirty" if changed else ""),
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
    }


def cmd_run(a):
    scs = load_scenarios(a.scenarios)
    # A scenario may pin its clock (the normal-clock calibration); the others take --clock.
    jobs = [(sc, algo, rep, clock) for sc in scs for clock in [sc.get("clock", a.clock)]
            for algo in sc["algos"]
            for rep in range(sc.get("repetitions", 1 if clock == "simulated" else 3))]
    if a.missing:
        # Only the runs with no successful result yet (a bench cut short, resumed).
        jobs = [j for j in jobs if not ok_result(raw_path(j[0], j[1], j[2]))]
    timely_params = config("TIMELY_PARAMS_1G")
    os.makedirs(RAW, exist_ok=True)
    prov = provenance()  # at the start: the code the runs execute
    meta = {
        **prov,
        "kernel": f"Linux {config('KERNEL_DEB_VERSION')} (linux-source-{config('KERNEL_SERIES')}) "
                  "ARCH=um with patches/series",
        "clock": a.clock, "timely_params": timely_params,
    }
    with open(os.path.join(RAW, "meta.json"), "w") as f:
        json.dump(meta, f)
    # Simulated time does not depend on the host's load, so those runs share the CPUs;
    # normal-clock runs measure real time, so each runs alone, after the others.
    simulated = [j for j in jobs if j[3] == "simulated"]
    normal = [j for j in jobs if j[3] != "simulated"]
    print(f"{len(jobs)} runs: {len(simulated)} on simulated time, {a.jobs} at a time; "
          f"{len(normal)} on the normal clock, one at a time", flush=True)
    done = 0
    failed = 0
    with ThreadPoolExecutor(a.jobs) as pool, ThreadPoolExecutor(1) as alone:
        sim_futures = [pool.submit(run_job, j, timely_params, prov) for j in simulated]

        def after_simulated(job):
            wait(sim_futures)
            return run_job(job, timely_params, prov)

        futures = sim_futures + [alone.submit(after_simulated, j) for j in normal]
        for fut in futures:
            r = fut.result()
            done += 1
            if r.get("ok"):
                line = (f"ok: {r['mbps']:.0f} Mbit/s ({r['util_pct']:.1f}%), RTT p50/p99 "
                        f"{fmt(r['rtt_p50_us'])}/{fmt(r['rtt_p99_us'])} us, Jain {fmt(r['jain'], '{:.3f}')}")
            else:
                failed += 1
                line = f"FAILED: {r.get('error', '?')[:200]}"
            print(f"[{done}/{len(jobs)}] {r['scenario']} {r['algo']} #{r['rep']} "
                  f"({r['wall_s']:.0f} s wall): {line}", flush=True)
    print(f"{done - failed} runs ok, {failed} failed")
    return 1 if failed else 0


def fmt(v, spec="{:.0f}"):
    return "-" if v is None else spec.format(v)


def load_results():
    meta = json.load(open(os.path.join(RAW, "meta.json")))
    results = {}
    for f in sorted(glob.glob(os.path.join(RAW, "*", "*.json"))):
        r = json.load(open(f))
        results.setdefault(r["scenario"], []).append(r)
    return meta, results


def order(rs):
    return sorted(rs, key=lambda r: (algo_key(r["algo"]), r.get("rep", 0)))


def save(fig, sc, kind, title, label, foot=0.04, dpi=90):
    """Titles, stamps and writes a figure; every figure names its scenario file, commit and
    kernel at its foot. Returns the PNG's name."""
    import matplotlib.pyplot as plt

    fig.suptitle(f"{sc['name']}: {title}", fontsize=10)
    fig.tight_layout(rect=(0, foot, 1, 1))
    fig.text(0.005, 0.005, label, fontsize=6, color="0.4", ha="left", va="bottom")
    name = f"{sc['name']}-{kind}.png"
    fig.savefig(os.path.join(PLOTS, name), dpi=dpi)
    plt.close(fig)
    return name


def plot_scenario(sc, rs, label):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    # Repeated scenarios: the plots show the first repetition (the tables, every one).
    ok = [r for r in order(rs) if r.get("ok") and r.get("rep", 0) == 0]
    if not ok:
        return []
    files = []
    # RTT and queue CDFs, one line per algorithm.
    fig, axes = plt.subplots(1, 2, figsize=(11, 3.6))
    for r in ok:
        for ax, xs in ((axes[0], [s["rtt_us"] for s in r["samples"] if s["rtt_us"]]),
                       (axes[1], [q["pkts"] for q in r["queue"]])):
            xs = sorted(xs)
            if xs:
                ax.plot(xs, [i / len(xs) for i in range(len(xs))], label=r["algo"])
    axes[0].set_xscale("log")
    axes[0].set_xlabel("flow RTT, smoothed (us, log)")
    axes[1].set_xlabel("bottleneck queue (packets)")
    for ax in axes:
        ax.set_ylabel("CDF")
        ax.grid(alpha=0.3)
    axes[1].legend(fontsize=8)
    files.append(save(fig, sc, "cdf", "RTT and queue distributions", label))
    if not sc.get("flows"):
        # A workload alone: no long flow to follow over time.
        return files + [plot_fct(sc, ok, label)]
    # Per-flow throughput, RTT and pacing rate, and the bottleneck queue, over time; one
    # row per algorithm.
    fig, axes = plt.subplots(len(ok), 4, figsize=(16, 2.2 * len(ok)), squeeze=False)
    for row, r in zip(axes, ok):
        series = {}
        for s in r["samples"]:
            if not s.get("fct"):
                series.setdefault(s.get("conn", s["flow"]), []).append(s)
        for flow, ss in sorted(series.items()):
            ts, rates = [], []
            for prev, cur in zip(ss, ss[1:]):
                # 100 ms of ACKed bytes per point, to smooth the 10 ms samples.
                if cur["t"] - prev["t"] > 0:
                    ts.append(cur["t"])
                    rates.append((cur["bytes_acked"] - prev["bytes_acked"]) * 8 / (cur["t"] - prev["t"]) / 1e6)
            k = 10
            sm = [sum(rates[i:i + k]) / len(rates[i:i + k]) for i in range(0, len(rates), k)]
            row[0].plot(ts[::k][:len(sm)], sm, lw=0.8)
            row[1].plot([s["t"] for s in ss], [s["rtt_us"] for s in ss], lw=0.6)
            row[2].plot([s["t"] for s in ss], [s["pacing_bps"] / 1e6 for s in ss], lw=0.6)
        row[3].plot([q["t"] for q in r["queue"]], [q["pkts"] for q in r["queue"]], lw=0.6,
                    color="black")
        row[0].set_ylabel(f"{r['algo']}\nMbit/s", fontsize=8)
        row[1].set_ylabel("RTT us", fontsize=8)
        row[2].set_ylabel("pacing rate Mbit/s", fontsize=8)
        row[2].set_yscale("log")
        row[3].set_ylabel("queue packets", fontsize=8)
        for ax in row:
            ax.grid(alpha=0.3)
            ax.tick_params(labelsize=7)
    for ax in axes[-1]:
        ax.set_xlabel("time (s)")
    files.append(save(fig, sc, "time", "per-flow throughput, RTT and pacing rate (ss -ti), "
                      "and the bottleneck queue (tc), over time", label, foot=0.03, dpi=80))
    if any("fct_by_size" in r for r in ok):
        files.append(plot_fct(sc, ok, label))
    return files


def plot_fct(sc, ok, label):
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(8, 3.8))
    for i, r in enumerate(r for r in ok if "fct_by_size" in r):
        sizes = [b["size"] / 1024 for b in r["fct_by_size"]]
        color = f"C{i}"
        ax.plot(sizes, [b["p99_us"] / 1000 for b in r["fct_by_size"]], "o-", color=color,
                label=f"{r['algo']} p99")
        ax.plot(sizes, [b["p50_us"] / 1000 for b in r["fct_by_size"]], "x--", color=color,
                lw=0.8, label=f"{r['algo']} p50")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("flow size (KB, log)")
    ax.set_ylabel("flow completion time (ms, log)")
    ax.grid(alpha=0.3, which="both")
    ax.legend(fontsize=7, ncol=2)
    return save(fig, sc, "fct", "flow completion time by size", label)


# Size classes of the FCT table, as the papers group them.
FCT_CLASSES = [("< 100 KB", 0, 100 * 1024), ("100 KB - 1 MB", 100 * 1024, 1024 * 1024),
               (">= 1 MB", 1024 * 1024, float("inf"))]


def fct_rows(rs):
    ok = [r for r in rs if r.get("ok") and "fct" in r]
    if not ok:
        return []
    rows = ["", "Flow completion times of the workload, in ms, p50 / p99 per size class "
            "(every size: the FCT plot):", "",
            "| algorithm | run | flows done / planned | workload Mbit/s | "
            + " | ".join(c[0] for c in FCT_CLASSES) + " |",
            "|---|---:|---:|---:|" + "---:|" * len(FCT_CLASSES)]
    for r in ok:
        cells = []
        for _, lo, hi in FCT_CLASSES:
            xs = sorted(f["fct_us"] for f in r["fct"]["flows"]
                        if "fct_us" in f and lo <= f["size"] < hi)
            p50 = xs[len(xs) // 2] if xs else None
            p99 = xs[min(len(xs) - 1, int(0.99 * len(xs)))] if xs else None
            cells.append(f"{fmt(p50 and p50 / 1000, '{:.2f}')} / {fmt(p99 and p99 / 1000, '{:.2f}')}"
                         f" (n={len(xs)})")
        done = r["fct_planned"] - r["fct_unfinished"]
        unfinished = f" ({r['fct_unfinished']} UNFINISHED)" if r["fct_unfinished"] else ""
        rows.append(f"| {r['algo']} | {r.get('rep', 0)} | {done} / {r['fct_planned']}{unfinished} | "
                    f"{r['fct_mbps']:.0f} | " + " | ".join(cells) + " |")
    return rows


def rc3_rows(rs):
    """RC3 against the same congestion control without it, per repetition (the same
    flows: one seed per repetition): the mean FCT per size, the reduction averaged over
    flows and weighted by bytes (the thesis's Table 2.1), and the large flows' goodput.
    Only flows that finished in both runs are paired."""
    runs = {(r["algo"], r.get("rep", 0)): r for r in rs if r.get("ok") and "fct" in r}
    pairs = {}
    for (algo, rep), r in runs.items():
        base = algo[:-len("+rc3")] if algo.endswith("+rc3") else None
        if base and (base, rep) in runs:
            pairs.setdefault(base, []).append((rep, runs[(base, rep)], r))
    if not pairs:
        return []

    def paired(tcp, rc3):
        a, b = tcp["fct"]["flows"], rc3["fct"]["flows"]
        return [(x["size"], x["fct_us"], y["fct_us"]) for x, y in zip(a, b)
                if x["size"] == y["size"] and "fct_us" in x and "fct_us" in y]

    def med(xs):
        xs = sorted(xs)
        return (xs[len(xs) // 2], xs[0], xs[-1]) if xs else None

    def spread(t, spec="{:.1f}"):
        if t is None:
            return "-"
        m, lo, hi = t
        return spec.format(m) + (f" ({spec.format(lo)} to {spec.format(hi)})" if hi != lo else "")

    rows = ["", "RC3 against the same control without it: mean FCT in ms and its reduction, "
            "per repetition paired flow by flow (the same arrivals and sizes), median and "
            "(min to max) over repetitions. Over flows: 1 - mean(FCT with RC3) / mean(FCT "
            "without); over bytes: the same with each flow weighted by its size. Large-flow "
            "goodput: mean of size / FCT over flows of 1 MB or more.", "",
            "| control | reps | flows paired | mean FCT ms: without / with RC3 | reduction over "
            "flows % | reduction over bytes % | large-flow goodput Mbit/s: without / with |",
            "|---|---:|---:|---:|---:|---:|---:|"]
    by_size = {}
    for base, reps in pairs.items():
        n, fct_a, fct_b, red_f, red_b, gp_a, gp_b = [], [], [], [], [], [], []
        for rep, tcp, rc3 in sorted(reps, key=lambda t: t[0]):
            p = paired(tcp, rc3)
            if not p:
                continue
            n.append(len(p))
            ma = sum(x[1] for x in p) / len(p)
            mb = sum(x[2] for x in p) / len(p)
            fct_a.append(ma / 1000)
            fct_b.append(mb / 1000)
            red_f.append(100 * (1 - mb / ma))
            wa = sum(x[0] * x[1] for x in p)
            wb = sum(x[0] * x[2] for x in p)
            red_b.append(100 * (1 - wb / wa))
            big = [x for x in p if x[0] >= 1024 * 1024]
            if big:
                gp_a.append(sum(x[0] * 8 / x[1] for x in big) / len(big))
                gp_b.append(sum(x[0] * 8 / x[2] for x in big) / len(big))
            for size, a, b in p:
                by_size.setdefault((base, size), {}).setdefault(rep, []).append((a, b))
        rows.append(f"| {base} | {len(n)} | {sum(n)} | {spread(med(fct_a), '{:.1f}')} / "
                    f"{spread(med(fct_b), '{:.1f}')} | {spread(med(red_f))} | {spread(med(red_b))} "
                    f"| {spread(med(gp_a), '{:.0f}')} / {spread(med(gp_b), '{:.0f}')} |")
    rows += ["", "By flow size: mean FCT in ms without / with RC3 and the reduction, "
             "median over repetitions (min to max):", "",
             "| control | size KB | flows | without | with RC3 | reduction % |",
             "|---|---:|---:|---:|---:|---:|"]
    for (base, size), reps in sorted(by_size.items()):
        fa = [sum(a for a, _ in v) / len(v) / 1000 for v in reps.values()]
        fb = [sum(b for _, b in v) / len(v) / 1000 for v in reps.values()]
        red = [100 * (1 - b / a) for a, b in zip(fa, fb)]
        flows = sum(len(v) for v in reps.values())
        rows.append(f"| {base} | {size / 1024:g} | {flows} | {spread(med(fa), '{:.1f}')} "
                    f"| {spread(med(fb), '{:.1f}')} | {spread(med(red))} |")
    return rows


def scenario_section(name, sc, rs, meta, calibration):
    """The report's section of one scenario: its table, spreads, FCT and RC3 rows, plots."""
    out = []
    out += [f"## {name}", "", sc.get("description", ""), "",
            f"Scenario file: `{sc.get('file', '?')}`. Runs: "
            + ", ".join(sorted({f"commit `{r.get('commit', meta['commit'])}`, "
                                f"{r.get('date', meta['date'])}, {r.get('clock')} time"
                                for r in rs})) + ".", ""]
    if sc.get("timely_params"):
        out += [f"TIMELY parameters in this scenario: `{sc['timely_params']}`.", ""]
    if sc.get("paper"):
        out += [f"Paper: {sc['paper']}", ""]
    out += ["| algorithm | run | Mbit/s | util | RTT p50 us | RTT p99 us | queue p50/p99 pkts "
            "| retrans | Jain | converge s | idle RTT us | wall s |",
            "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in rs:
        if not r.get("ok"):
            out.append(f"| {r['algo']} | {r.get('rep', 0)} | FAILED: {r.get('error', '?')[:120]} "
                       "| | | | | | | | | |")
            continue
        out.append(
            f"| {r['algo']} | {r.get('rep', 0)} | {r['mbps']:.1f} | {r['util_pct']:.1f}% | "
            f"{fmt(r['rtt_p50_us'])} | {fmt(r['rtt_p99_us'])} | "
            f"{fmt(r['queue_p50_pkts'])}/{fmt(r['queue_p99_pkts'])} | {fmt(r['retransmits'])} | "
            f"{fmt(r['jain'], '{:.3f}')} | {fmt(r['convergence_s'], '{:.1f}')} | "
            f"{fmt(r['idle_rtt_us'])} | {fmt(r.get('wall_s'))} |")
    out += spread_rows(rs)
    out += mix_rows(rs)
    out += ctl_rows(rs)
    out += theorem5_rows(sc, rs, sc.get("timely_params", meta["timely_params"]))
    out += stamp_rows(rs)
    out += fct_rows(rs)
    out += rc3_rows(rs)
    if calibration:
        out += [""] + calibration_notes(sc, rs)
    out.append("")
    label = (f"{sc.get('file', name)}, commit "
             + ", ".join(sorted({r.get("commit", meta["commit"]) for r in rs}))
             + f", {config('KERNEL_DEB_VERSION')} ARCH=um + patches/series, "
             + ", ".join(sorted({f"{r.get('clock')} time" for r in rs})))
    for png in plot_scenario(sc, rs, label):
        out += [f"![{png}](plots/{png})", ""]
    return out


def splice_section(text, name, section):
    """The report with the section headed `## name` replaced by `section` (or added at
    its end)."""
    lines = text.rstrip("\n").split("\n")
    head = f"## {name}"
    if head in lines:
        i = lines.index(head)
        j = next((k for k in range(i + 1, len(lines)) if lines[k].startswith("## ")), len(lines))
        lines[i:j] = section.rstrip("\n").split("\n") + [""]
    else:
        lines += [""] + section.rstrip("\n").split("\n")
    return "\n".join(lines).rstrip("\n") + "\n"


def cmd_resummarize(a):
    """The metrics of each successful run, again, from the samples it recorded, with the
    scenario file as it is now (its measurement window); the samples are unchanged."""
    import netbench
    for sc in load_scenarios(a.scenarios):
        n = 0
        for f in sorted(glob.glob(os.path.join(RAW, sc["name"], "*.json"))):
            r = json.load(open(f))
            if not r.get("ok"):
                continue
            r.update(netbench.summarize(sc, r))
            with open(f, "w") as out:
                json.dump(r, out)
            n += 1
        print(f"{sc['name']}: {n} runs resummarized")
    return 0


def cmd_report(a):
    meta, results = load_results()
    os.makedirs(PLOTS, exist_ok=True)
    scs = {s["name"]: s for s in load_scenarios([])}
    out = ["# Bench report", "",
           "Generated by `make bench` (`tools/bench/bench.py run && tools/bench/bench.py report`); each "
           "scenario below names the commit, date and clock of its runs. Kernel: "
           f"{meta['kernel']}. TIMELY parameters: `{meta['timely_params']}` (the papers' "
           "10 Gbit/s constants scaled to 1 Gbit/s by the spec's rule: delta/C, Seg/(C T_low) "
           "and T_high/T_low preserved).", "",
           "Every run is a fresh boot of the test kernel. Topology: sender namespace, router "
           "namespace holding the bottleneck (htb at the scenario's rate; drop-tail FIFO, or "
           "RED step ECN marking at K packets for dctcp, the receiver running dctcp too, "
           "non-ECN packets queued, not dropped unless a scenario says so, in a buffer of the "
           "same size), receiver namespace; the devices' TSO, GSO and GRO off, but TCP "
           "always builds GSO skbs (up to 64 KB, segmented in software before the sender's "
           "device), so the headline runs with GSO on, and a scenario with "
           "`gso_max_segs` 1 runs with one packet per skb (GSO off); the bottleneck queue "
           "counts packets either way. One-way delay on the reverse path. Throughput is TCP "
           "goodput; utilization is goodput over the bottleneck's goodput capacity (payload "
           "bytes per frame of the scenario's MTU: 1448 per 1514 at 1500). RTT is each flow's smoothed RTT as `ss -ti` shows it, every 10 ms; queue "
           "is the bottleneck backlog as `tc -s qdisc` shows it, every 10 ms (both read over "
           "netlink). Metrics are over each scenario's measurement window; convergence is the time from the last change in the flow set "
           "until the flows hold >= 90% of capacity with Jain >= 0.9 per 100 ms.", "",
           "## Headline", ""] + headline(results) + [""]
    calibrations = sorted(n for n in results if n.startswith("calibration"))
    names = a.scenarios or calibrations + sorted(n for n in results if n not in calibrations)
    missing = [n for n in names if n not in results]
    if missing:
        sys.exit(f"error: no results for {', '.join(missing)} in {RAW}")
    # results/raw/ is not kept in git: a fresh clone has the runs it made itself. Only the
    # scenarios with runs here are rewritten; the others keep their sections (which name
    # their runs' commit) and their plots, and the headline is rewritten only when every
    # scenario it draws on has runs here.
    text = open(REPORT).read() if os.path.exists(REPORT) else ""
    if not a.scenarios and text.count("\n## ") == 0:
        text = "\n".join(out)
    for name in names:
        sec = scenario_section(name, scs.get(name, {"name": name}), order(results[name]),
                               meta, name in calibrations)
        text = splice_section(text, name, "\n".join(sec))
    if not a.scenarios:
        # The preamble and the headline, up to the first scenario's section.
        first = text.index("\n## ", text.index("## Headline") + 1) if "## Headline" in text \
            else text.index("\n## ")
        if all(n in results for n in HEADLINE_SCENARIOS):
            text = "\n".join(out) + text[first:]
        else:
            print("headline kept: no runs here of "
                  + ", ".join(n for n in HEADLINE_SCENARIOS if n not in results))
    with open(REPORT, "w") as f:
        f.write(text)
    print(f"rewrote {', '.join(names)} in {os.path.relpath(REPORT, ROOT)}")
    if not a.scenarios and all(n in results for n in HEADLINE_SCENARIOS) \
            and update_readme(headline(results)):
        print("updated the headline table in README.md")
    return 0


README = os.path.join(ROOT, "README.md")
HEADLINE_MARKS = ("<!-- headline: written by tools/bench/bench.py report -->", "<!-- headline end -->")


# The papers' scale (10 Gbit/s, 20 us, MTU 9000, the unscaled constants): column title,
# scenario, variant suffix of the algorithm, the cell's keys (its title names any but
# util / p99 RTT).
UTIL_P99 = ["util_pct", "rtt_p99_us"]
PAPER_SCALE_COLUMNS = [("1 flow", "one_flow_10g", "", UTIL_P99),
                       ("4 flows", "timely_noise_10g", "", UTIL_P99),
                       ("4 flows, 0-100 us noise", "timely_noise_10g", "+jit100", UTIL_P99),
                       ("16 flows", "incast16_10g", "", UTIL_P99),
                       ("32 flows", "incast32_10g", "", UTIL_P99),
                       ("64 flows", "incast64_10g", "", UTIL_P99),
                       ("4 flows, 1% random loss: util / Jain", "random_loss_10g", "+loss1",
                        ["util_pct", "jain"]),
                       ("16 -> 2 flows: converge", "flows_leaving_10g", "", ["convergence_s"]),
                       ("2nd flow joins: Jain / converge", "convergence_10g", "",
                        ["jain", "convergence_s"])]
# The web-search workload at 10 Gbit/s: its FCT p99 columns close the table.
PAPER_SCALE_FCT = "fct_websearch_10g"


def headline(results):
    """One row per algorithm (and tuned baseline variant) across the main scenarios: the
    median over a scenario's repetitions, with their number where there are several."""
    def runs(name, algo):
        return [r for r in results.get(name, []) if r["algo"] == algo]

    def fmt_key(k, v):
        if v is None:
            return "never" if k == "convergence_s" else "-"
        return {"util_pct": lambda x: f"{x:.0f}%", "rtt_p99_us": lambda x: f"{x:.0f} us",
                "jain": lambda x: f"J {x:.2f}", "convergence_s": lambda x: f"{x:.1f} s"}[k](v)

    def cell(name, algo, keys):
        rs = runs(name, algo)
        if not rs:
            return "-"
        ok = [r for r in rs if r.get("ok")]
        if not ok:
            return "FAILED"
        parts = []
        for k in keys:
            xs = sorted(r[k] for r in ok if r.get(k) is not None)
            # A convergence that some runs never reach: "never" if most did not.
            v = xs[len(ok) // 2] if len(xs) > len(ok) // 2 else None
            parts.append(fmt_key(k, v))
        failed = len(rs) - len(ok)
        return " / ".join(parts) + (f" ({len(ok)} runs{f', {failed} failed' if failed else ''})"
                                    if len(rs) > 1 else "")

    def fct_p99(algo, small, name="fct_websearch"):
        # Over every run's flows (each run draws its own arrivals and sizes).
        rs = [r for r in runs(name, algo) if r.get("ok") and "fct" in r]
        if not rs:
            return "-"
        xs = sorted(f["fct_us"] for r in rs for f in r["fct"]["flows"] if "fct_us" in f
                    and (f["size"] < 100 * 1024 if small else f["size"] >= 1024 * 1024))
        return f"{xs[min(len(xs) - 1, int(0.99 * len(xs)))] / 1000:.1f} ms" if xs else "-"

    # The papers' scale first: each base algorithm (and tuned baseline) that ran any of its
    # scenarios; the noise and loss variants are columns, not rows.
    paper_names = [name for _, name, _, _ in PAPER_SCALE_COLUMNS] + [PAPER_SCALE_FCT]
    paper_algos = sorted({r["algo"] for name in paper_names for r in results.get(name, [])
                          if "+jit" not in r["algo"] and "+loss" not in r["algo"]},
                         key=algo_key)
    lines = []
    if paper_algos:
        lines += ["At the papers' scale (10 Gbit/s, 20 us base delay, MTU 9000, a 200-frame "
                  "drop-tail FIFO, dctcp K = 11 frames or +kN, TIMELY with the unscaled "
                  "constants); each cell util / p99 RTT (`ss`) unless its column says "
                  "otherwise, median of the runs (5 each); the web-search FCT p99 over the "
                  "flows of 5 runs:", "",
                  "| algorithm | " + " | ".join(t for t, _, _, _ in PAPER_SCALE_COLUMNS)
                  + " | web-search FCT p99, < 100 KB | >= 1 MB |",
                  "|---|" + "---|" * (len(PAPER_SCALE_COLUMNS) + 2)]
        for a in paper_algos:
            cells = [cell(name, a + suffix, keys).split(" (")[0]
                     for _, name, suffix, keys in PAPER_SCALE_COLUMNS]
            cells += [fct_p99(a, small, PAPER_SCALE_FCT) for small in (True, False)]
            lines.append(f"| {a} | " + " | ".join(cells) + " |")
        lines += ["", "At 1 Gbit/s (200 us base delay, MTU 1500, a 500-packet FIFO, the "
                  "constants scaled by 10; 5 runs each unless stated):", ""]
    present = {r["algo"] for name in HEADLINE_SCENARIOS for r in results.get(name, [])}
    algos = [a for a in sorted(present, key=algo_key) if a.split("+")[0] != "rust_reno"]
    lines += ["| algorithm | 1 flow: util / p99 RTT | 4 flows: util / p99 RTT / Jain "
             "| 16 flows (incast): util / p99 RTT / Jain | 16 -> 2 flows: converge "
             "| 2nd flow joins: Jain / converge | web-search FCT p99, < 100 KB | >= 1 MB |",
             "|---|---|---|---|---|---|---|---|"]
    for a in algos:
        lines.append(f"| {a} | {cell('one_flow', a, ['util_pct', 'rtt_p99_us'])} "
                     f"| {cell('four_flows', a, ['util_pct', 'rtt_p99_us', 'jain'])} "
                     f"| {cell('incast16', a, ['util_pct', 'rtt_p99_us', 'jain'])} "
                     f"| {cell('flows_leaving', a, ['convergence_s'])} "
                     f"| {cell('convergence', a, ['jain', 'convergence_s'])} "
                     f"| {fct_p99(a, True)} | {fct_p99(a, False)} |")
    paper = [r for r in results.get("incast16_10g", []) if r.get("ok")]
    if paper:
        lines += ["", "The papers' incast in detail (`incast16_10g`: 16 flows into one "
                  "receiver at 10 Gbit/s; median (min-max) of the runs):", "",
                  "| algorithm | runs | util | p99 RTT us | controller's RTT p50 / p99 us "
                  "| queue p50 frames | Jain |", "|---|---:|---:|---:|---:|---:|---:|"]
        for a in sorted({r["algo"] for r in paper}, key=algo_key):
            ok = [r for r in paper if r["algo"] == a]
            ctl = (f"{median_range(ok, 'ctl_rtt_p50_us')} / {median_range(ok, 'ctl_rtt_p99_us')}"
                   if any(r.get("ctl_rtt_p50_us") for r in ok) else "-")
            lines.append(f"| {a} | {len(ok)} | {median_range(ok, 'util_pct', '{:.1f}%')} "
                         f"| {median_range(ok, 'rtt_p99_us')} | {ctl} "
                         f"| {median_range(ok, 'queue_p50_pkts')} "
                         f"| {median_range(ok, 'jain', '{:.3f}')} |")
    return lines


def update_readme(lines):
    """Replace the headline table between the README's markers, if it has them."""
    text = open(README).read()
    start, end = HEADLINE_MARKS
    if start not in text or end not in text:
        return False
    head, rest = text.split(start, 1)
    _, tail = rest.split(end, 1)
    with open(README, "w") as f:
        f.write(head + start + "\n" + "\n".join(lines) + "\n" + end + tail)
    return True


def median_range(ok, k, spec="{:.0f}"):
    """Runs' `k` as "median (min-max)", the median alone for one run, "-" for none."""
    xs = sorted(r[k] for r in ok if r.get(k) is not None)
    if not xs:
        return "-"
    m = spec.format(xs[len(xs) // 2])
    return m if len(xs) == 1 else f"{m} ({spec.format(xs[0])}-{spec.format(xs[-1])})"


def spread_rows(rs):
    """For repeated runs: median and (min-max) per algorithm, when the runs differ."""
    rows = []
    cell = median_range

    for algo in dict.fromkeys(r["algo"] for r in rs):
        ok = [r for r in rs if r["algo"] == algo and r.get("ok")]
        keys = ["mbps", "rtt_p50_us", "rtt_p99_us", "queue_p50_pkts"]
        if len(ok) < 2 or all(ok[0][k] == r[k] for r in ok for k in keys):
            continue
        rows.append(f"| {algo} | median (min-max) of {len(ok)} | {cell(ok, 'mbps')} | "
                    f"{cell(ok, 'util_pct', '{:.1f}%')} | {cell(ok, 'rtt_p50_us')} | "
                    f"{cell(ok, 'rtt_p99_us')} | {cell(ok, 'queue_p50_pkts')} / "
                    f"{cell(ok, 'queue_p99_pkts')} | {cell(ok, 'retransmits')} | "
                    f"{cell(ok, 'jain', '{:.3f}')} | | | |")
    return rows


def mix_rows(rs):
    """Mixed runs ("timely_patched/dctcp"): each control's share of the throughput,
    median (min-max) over the runs, and how many of its connections negotiated ECN."""
    rows = []
    for algo in dict.fromkeys(r["algo"] for r in rs):
        ok = [r for r in rs if r["algo"] == algo and r.get("ok") and r.get("share_by_cc")]
        if not ok:
            continue
        ccs = list(dict.fromkeys(cc for r in ok for cc in r["share_by_cc"]))
        shares = []
        for cc in ccs:
            xs = [dict(share=r["share_by_cc"].get(cc, 0.0)) for r in ok]
            ecn = [r.get("ecn_by_cc", {}).get(cc, [0, 0]) for r in ok]
            shares.append(f"{cc} {median_range(xs, 'share', '{:.1f}%')} "
                          f"(ECN {sum(e[1] for e in ecn)}/{sum(e[0] for e in ecn)})")
        rows.append(f"| {algo} | {len(ok)} | {'; '.join(shares)} "
                    f"| {median_range(ok, 'util_pct', '{:.1f}%')} "
                    f"| {median_range(ok, 'queue_p50_pkts')} "
                    f"| {median_range(ok, 'retransmits')} |")
    if not rows:
        return []
    return ["", "Each control's share of the throughput over the measurement window, median "
            "(min-max) over the runs (an even split is 50%), and its connections that "
            "negotiated ECN:", "",
            "| mix | runs | share per control (ECN connections) | util | queue p50 pkts "
            "| retransmits |", "|---|---:|---|---:|---:|---:|"] + rows


SOURCE_NAMES = {1: "hardware stamps", 2: "software stamps", 3: "kernel RTT"}


def ctl_rows(rs):
    """The RTT this project's controllers act on (`ss -ti`'s BBR words, sampled with the
    flows): TIMELY's completion RTT, dx's base RTT plus queuing delay; median (min-max) of
    the runs' p50 and p99, and the sources of the samples."""
    rows = []
    for algo in dict.fromkeys(r["algo"] for r in rs):
        ok = [r for r in rs if r["algo"] == algo and r.get("ok") and r.get("ctl_rtt_p50_us")]
        if not ok:
            continue
        sources = sorted({src for r in ok for src in r.get("ctl_sources", [])})
        rows.append(f"| {algo} | {len(ok)} | {median_range(ok, 'ctl_rtt_p50_us')} "
                    f"| {median_range(ok, 'ctl_rtt_p99_us')} "
                    f"| {', '.join(SOURCE_NAMES.get(x, str(x)) for x in sources)} |")
    if not rows:
        return []
    return ["", "The RTT the controller acts on (TIMELY: its completion RTT; dx: base RTT plus "
            "queuing delay), from `ss -ti`'s words, median (min-max) over the runs:", "",
            "| algorithm | runs | controller RTT p50 us | p99 us | sources |",
            "|---|---:|---:|---:|---|"] + rows


def timely_param(params, name, default):
    m = re.search(rf"(?:^|\s){name}=(\d+)", params)
    return int(m.group(1)) if m else default




def theorem5_rows(sc, rs, params):
    """Patched TIMELY's operating point against Theorem 5 of "ECN or Delay": N flows
    sharing C converge to RTT* = RTT_ref (1 + N delta / (beta C)), beta being
    `patched_beta_ppm`. Checked on the RTT the controller acts on (its completion RTT's
    median), with the queue as RTT* less the idle RTT."""
    # The theorem is about flows that share a full link: runs whose measured flows use
    # less than 90% of it (flows ended early, a stalled flow) are left out.
    ok = [r for r in rs if r.get("ok") and r["algo"].split("+")[0] == "timely_patched"
          and r.get("ctl_rtt_p50_us") and r.get("per_flow_mbps") and "fct" not in r
          and (r.get("util_pct") or 0) >= 90]
    if not ok:
        return []
    t_low = timely_param(params, "t_low_us", 50)
    rtt_ref = timely_param(params, "rtt_ref_us", 0) or t_low
    delta_bps = timely_param(params, "delta_kbps", 10_000) * 1000
    beta = timely_param(params, "patched_beta_ppm", 8000) / 1e6
    cap_bps = sc["rate_mbit"] * 1e6 * payload_per_frame(sc)
    rows = ["", "Patched TIMELY's operating point against Theorem 5 of \"ECN or Delay\" "
            f"(RTT* = RTT_ref (1 + N delta / (beta' C)), RTT_ref {rtt_ref} us, delta "
            f"{delta_bps / 1e6:g} Mbit/s, beta' (patched_beta_ppm) {beta:g}, "
            f"C {cap_bps / 1e6:.0f} Mbit/s of "
            "payload), on the controller's RTT; queue = RTT less the idle RTT:", "",
            "| algorithm | run | N | RTT* predicted us | controller RTT p50 us | "
            "queue predicted / measured us | queue deviation | flows' total rate, min-max "
            "Mbit/s |",
            "|---|---:|---:|---:|---:|---:|---:|---:|"]
    for r in ok:
        n = len(r["per_flow_mbps"])
        pred = rtt_ref * (1 + n * delta_bps / (beta * cap_bps))
        base = r.get("idle_rtt_us") or 0
        q_pred, q_meas = pred - base, r["ctl_rtt_p50_us"] - base
        dev = f"{100 * (q_meas - q_pred) / q_pred:+.1f}%" if q_pred > 0 else "-"
        lo_hi = total_rate_range_mbps(r)
        swing = f"{lo_hi[0]:.0f}-{lo_hi[1]:.0f}" if lo_hi else "-"
        rows.append(f"| {r['algo']} | {r.get('rep', 0)} | {n} | {pred:.0f} | "
                    f"{r['ctl_rtt_p50_us']:.0f} | {q_pred:.0f} / {q_meas:.0f} | {dev} | "
                    f"{swing} |")
    rows += ["", "At the point the flows' total rate holds still; a range of a tenth of C "
             "or more is a cycle around it, whose median need not be the point (a lone "
             "flow at 1 Gbit/s: the model check's `patched_single_flow_circles_theorem5`)."]
    return rows


def total_rate_range_mbps(r):
    """The smallest and largest sum of the flows' pacing rates (`ss`) over the
    measurement window, from the sampling rounds that saw every measured flow."""
    lo, hi = r.get("window_s") or (0, float("inf"))
    rounds = {}
    for x in r.get("samples", []):
        if lo <= x["t"] <= hi and x.get("pacing_bps"):
            rounds.setdefault(x["t"], {})[x["flow"]] = x["pacing_bps"]
    n = len(r.get("per_flow_mbps") or [])
    sums = [sum(v.values()) / 1e6 for v in rounds.values() if len(v) == n]
    return (min(sums), max(sums)) if sums else None


def stamp_rows(rs):
    """Where the delay-stamp option ran: the sender's samples, and how many were hardware
    ones (TcpExt TCPDelayStampSample, TCPDelayStampHwSample), per run."""
    ok = [r for r in rs if r.get("ok") and "stamp_samples" in r]
    if not ok:
        return []
    rows = ["", "Delay samples the sender's congestion control got, per run: of which from "
            "hardware stamps, and software ones with t1 at the device boundary:", "",
            "| algorithm | run | samples | hardware | device t1 |", "|---|---:|---:|---:|---:|"]
    for r in ok:
        rows.append(f"| {r['algo']} | {r.get('rep', 0)} | {r['stamp_samples']} | "
                    f"{r['stamp_hw_samples']} | {fmt(r.get('stamp_dev_samples'))} |")
    return rows


def calibration_notes(sc, rs):
    ok = [r for r in rs if r.get("ok")]
    if not ok:
        return ["Calibration failed: no numbers."]
    pkt_us = 1514 * 8 / sc["rate_mbit"]
    utils = ", ".join("{:.1f}%".format(r["util_pct"]) for r in ok)
    # Only where the bottleneck held a queue: otherwise the link was not the bottleneck
    # (on the normal clock, the guest's CPU is) and the RTT grew somewhere else.
    per_pkt = ", ".join("{:.1f} us/packet".format((r["rtt_p50_us"] - r["idle_rtt_us"])
                                                   / r["queue_p50_pkts"])
                        if r["queue_p50_pkts"] else "no queue at the bottleneck"
                        for r in ok if r["idle_rtt_us"] and r["rtt_p50_us"])
    notes = [f"- Utilization of one cubic flow: {utils} (target >= 97%).",
             f"- Idle RTT (ping before the flow): {', '.join(fmt(r['idle_rtt_us']) for r in ok)} us "
             f"against {sc['delay_us']} us of configured delay (the rest is the stack).",
             f"- Queueing: one packet is {pkt_us:.1f} us at {sc['rate_mbit']} Mbit/s; median RTT "
             f"minus idle RTT, over the median queue: {per_pkt}."]
    if len(ok) >= 2:
        keys = ["mbps", "rtt_p50_us", "rtt_p99_us", "retransmits", "queue_p50_pkts"]
        same = all(ok[0][k] == r[k] for r in ok[1:] for k in keys)
        notes.append(f"- Repeatability: {len(ok)} runs gave "
                     + ("identical" if same else "DIFFERENT") + f" {', '.join(keys)}.")
    return notes


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run")
    r.add_argument("--clock", choices=["simulated", "normal"], default="simulated")
    r.add_argument("--jobs", type=int, default=2)
    r.add_argument("--missing", action="store_true",
                   help="run only what has no successful result in results/raw yet")
    r.add_argument("scenarios", nargs="*")
    rep = sub.add_parser("report")
    rep.add_argument("scenarios", nargs="*",
                     help="rewrite only these scenarios' sections of results/BENCH.md")
    res = sub.add_parser("resummarize")
    res.add_argument("scenarios", nargs="+",
                     help="recompute these scenarios' metrics from their raw samples (after "
                          "a change of the scenario's measurement window)")
    a = p.parse_args()
    return {"run": cmd_run, "report": cmd_report, "resummarize": cmd_resummarize}[a.cmd](a)


if __name__ == "__main__":
    sys.exit(main())
