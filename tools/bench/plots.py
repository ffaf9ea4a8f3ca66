# SPDX-License-Identifier: GPL-2.0
"""The bench report's figures (matplotlib): per scenario, the RTT and queue CDFs, the flows'
throughput, RTT and pacing rate and the queue over time, and flow completion times by size;
each names its scenario file, commit and kernel at its foot."""
import os

from common import sorted_runs


def save(fig, plots, sc, kind, title, label, foot=0.04, dpi=90):
    """Titles, stamps and writes a figure; every figure names its scenario file, commit and
    kernel at its foot. Returns the PNG's name."""
    import matplotlib.pyplot as plt

    fig.suptitle(f"{sc['name']}: {title}", fontsize=10)
    fig.tight_layout(rect=(0, foot, 1, 1))
    fig.text(0.005, 0.005, label, fontsize=6, color="0.4", ha="left", va="bottom")
    name = f"{sc['name']}-{kind}.png"
    fig.savefig(os.path.join(plots, name), dpi=dpi)
    plt.close(fig)
    return name


def plot_scenario(plots, sc, rs, label):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    # Repeated scenarios: the plots show the first repetition (the tables, every one).
    ok = [r for r in sorted_runs(rs) if r.get("ok") and r.get("rep", 0) == 0]
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
    files.append(save(fig, plots, sc, "cdf", "RTT and queue distributions", label))
    if not sc.get("flows"):
        # A workload alone: no long flow to follow over time.
        return files + [plot_fct(plots, sc, ok, label)]
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
    files.append(save(fig, plots, sc, "time", "per-flow throughput, RTT and pacing rate (ss -ti), "
                      "and the bottleneck queue (tc), over time", label, foot=0.03, dpi=80))
    if any("fct_by_size" in r for r in ok):
        files.append(plot_fct(plots, sc, ok, label))
    return files


def plot_fct(plots, sc, ok, label):
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
    return save(fig, plots, sc, "fct", "flow completion time by size", label)


def plot_frontier(plots, sc, pts, label):
    """Utilization against p99 queueing delay, one point per (control, knob value) of a
    frontier set (frontier.points()), each control its own colour, its knob beside the
    point, the Pareto frontier as a line through its points."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(9, 5))
    good = [p for p in pts if p["util"] is not None and p["q99_us"] is not None]
    for i, control in enumerate(sorted({p["control"] for p in good})):
        mine = [p for p in good if p["control"] == control]
        ax.scatter([p["q99_us"] for p in mine], [p["util"] for p in mine], color=f"C{i % 10}",
                   marker="os^Dv<>"[i // 10 % 7], label=control, zorder=3)
        for p in mine:
            if p["knob"] not in ("-", "defaults"):
                ax.annotate(p["knob"], (p["q99_us"], p["util"]), fontsize=6,
                            xytext=(3, 3), textcoords="offset points")
    front = sorted((p for p in good if p.get("pareto")), key=lambda p: p["q99_us"])
    if front:
        ax.plot([p["q99_us"] for p in front], [p["util"] for p in front], "k--", lw=0.8,
                label="Pareto frontier", zorder=2)
    ax.set_xscale("log")
    ax.set_xlabel("p99 queueing delay at the bottleneck (us, log)")
    ax.set_ylabel("utilization of the control's own payload capacity (%)")
    ax.grid(alpha=0.3, which="both")
    ax.legend(fontsize=7, ncol=2)
    return save(fig, plots, sc, "frontier", "utilization against p99 queue delay, "
                "each control at each knob value", label)
