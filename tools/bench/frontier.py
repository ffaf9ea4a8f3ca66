#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""The frontier: utilization against p99 queueing delay, each control at several values
of its own knob (dctcp's K, paced and not; dx's headroom_ns; TIMELY's and patched TIMELY's
delta and T_low; Swift's base_target_ns; bbr and cubic as they come, and over fq), so that
controls are compared at equal utilization, not each at one setting.

A frontier set is a base scenario (tools/bench/scenarios/frontier_<set>.json: the
baselines, dctcp's K sweep as +kN and +fq+kN variants, and each project control at its
default) and one scenario per module-parameter value (frontier_<set>_<knob>.json), as
module parameters are a scenario's (`timely_params`, `dx_params`, `swift_params`;
incast16_10g_delta5 is the model). Every file names its set and knob in its `frontier`
field.

    tools/bench/frontier.py --write    # (re)writes the frontier scenario files
"""
import json
import os
import re
import sys

import netbench

SCENARIOS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "scenarios")
# Five runs each, randomized starts: issue 31's count for Swift against tuned dctcp.
REPETITIONS = 5
# The module defaults at 10 Gbit/s (rust/tcp_timely.rs, rust/core/src/dx.rs).
TIMELY_DEFAULTS = {"delta_kbps": 10000, "t_low_us": 50}
DX_HEADROOM_DEFAULT = 20000
DX_SLACK_NS = 5000
DELTAS = [2500, 5000, 20000]
T_LOWS = [25, 100]
HEADROOMS = [5000, 10000, 40000]
# Swift's fabric target (rust/core/src/swift.rs: 50 us by default) below and above it.
SWIFT_TARGET_DEFAULT = 50000
SWIFT_TARGETS = [35000, 75000, 100000]
# The controls whose one knob a point names from its scenario's module parameters, even at
# the default: the parameters' field, the knob, its default.
OWN_KNOB = {"dx": ("dx_params", "headroom_ns", DX_HEADROOM_DEFAULT),
            "swift": ("swift_params", "base_target_ns", SWIFT_TARGET_DEFAULT)}
# dctcp's K per MTU (packets): the scenario's default first, then the sweep. At 1500
# the DCTCP paper's 65 packets for 10 Gbit/s; at 9000 the bench's 11 frames.
K_SWEEP = {1500: (65, [5, 10, 20, 40, 100]), 9000: (11, [2, 5, 20, 40])}
# Buffers of about 1.8 MB at either MTU.
QUEUE_PKTS = {1500: 1200, 9000: 200}

# Estimated wall time per run on 2 cores, from docs/bench.md's costs: incast16_10g (16
# flows, 10 Gbit/s, MTU 9000, 1 s) takes 18-82 s, median 33 s; at MTU 1500 a simulated
# second carries 9014 / 1514 = 5.95 times the packets; 64 flows cost up to 1.6 times 16's
# (64 flows at 1 Gbit/s: 12-21 s per simulated second against one flow's 13 s).
WALL_S = {("incast16", 9000): (18, 33, 82), ("incast16", 1500): (107, 196, 488),
          ("incast64", 9000): (22, 58, 144), ("incast64", 1500): (131, 345, 857),
          ("bdp", 1500): (60, 60, 60)}


def base_algos(mtu):
    k_default, ks = K_SWEEP[mtu]
    return (["cubic", "cubic+fq", "bbr", "bbr+fq", "dctcp"] + [f"dctcp+k{k}" for k in ks]
            + ["dctcp+fq"] + [f"dctcp+fq+k{k}" for k in ks]
            + ["timely", "timely_patched", "dx", "swift"])


def sets():
    """Each frontier set: name, flows, MTU, delay (us), and its text."""
    out = []
    for n in (16, 64):
        for mtu in (1500, 9000):
            out.append((f"incast{n}_10g_mtu{mtu}", n, mtu, 20,
                        f"{n} flows into one receiver at 10 Gbit/s, 20 us base delay, MTU {mtu}"))
    out.append(("dx_bdp_10g_100us", 2, 1500, 100,
                "2 flows at 10 Gbit/s, 100 us base delay, MTU 1500: a bandwidth-delay product "
                "of about 125 KB, 83 frames, some 41 per flow (dx where the BDP is many "
                "packets per flow)"))
    return out


def scenario_files():
    """{file name: scenario} of every frontier set."""
    files = {}
    for name, n, mtu, delay, text in sets():
        k_default, _ = K_SWEEP[mtu]
        kind = "bdp" if name.startswith("dx_bdp") else f"incast{n}"
        lo, med, hi = WALL_S[(kind, mtu)]
        base = {
            "rate_mbit": 10000, "delay_us": delay, "queue_pkts": QUEUE_PKTS[mtu],
            "ecn_k_pkts": k_default, "mtu": mtu, "timely_params": "",
            "dx_params": f"headroom_ns={DX_HEADROOM_DEFAULT} base_rtt_slack_ns={DX_SLACK_NS}",
            "repetitions": REPETITIONS, "start_jitter_ms": 1, "group": "frontier",
            "flows": [{"count": n, "start_s": 0, "stop_s": 1}], "measure_s": [0.5, 1.0]}
        if n > 16:
            # As incast64_10g: connections established first, flows from 0.1 s.
            base.update(preconnect=True, flows=[{"count": n, "start_s": 0.1, "stop_s": 1.1}],
                        measure_s=[0.6, 1.1])
        cost = ("Estimated wall time per run on 2 cores, from docs/bench.md's costs: "
                + (f"{lo}-{hi} s, about {med} s." if lo != hi else f"about {med} s."))
        what = f"Frontier set {name}: {text}, a {QUEUE_PKTS[mtu]}-packet buffer. "
        files[f"frontier_{name}.json"] = dict(
            base, name=f"frontier_{name}", algos=base_algos(mtu),
            frontier={"set": name, "knob": "defaults"},
            description=what + f"The baselines as they come and over fq, dctcp's K swept "
            f"(default {k_default}, and {', '.join(map(str, K_SWEEP[mtu][1]))}) unpaced and "
            f"paced, TIMELY and patched TIMELY with the module's defaults (delta 10 Mbit/s, "
            f"T_low 50 us), dx with headroom {DX_HEADROOM_DEFAULT} ns, Swift with its default "
            f"target ({SWIFT_TARGET_DEFAULT} ns). {cost}")
        for knob, values, algos in (("delta_kbps", DELTAS, ["timely", "timely_patched"]),
                                    ("t_low_us", T_LOWS, ["timely", "timely_patched"]),
                                    ("headroom_ns", HEADROOMS, ["dx"]),
                                    ("base_target_ns", SWIFT_TARGETS, ["swift"])):
            for v in values:
                short = {"delta_kbps": "delta", "t_low_us": "tlow", "headroom_ns": "headroom",
                         "base_target_ns": "target"}[knob]
                sc = dict(base, name=f"frontier_{name}_{short}{v}", algos=algos,
                          frontier={"set": name, "knob": f"{knob}={v}"})
                if knob == "headroom_ns":
                    sc["dx_params"] = f"headroom_ns={v} base_rtt_slack_ns={min(DX_SLACK_NS, v)}"
                elif knob == "base_target_ns":
                    sc["swift_params"] = f"{knob}={v}"
                else:
                    sc["timely_params"] = f"{knob}={v}"
                sc["description"] = what + f"{' and '.join(algos)} with {knob}={v}. {cost}"
                files[f"{sc['name']}.json"] = sc
    return files


def write_files(directory=SCENARIOS):
    for fname, sc in scenario_files().items():
        with open(os.path.join(directory, fname), "w") as f:
            json.dump(sc, f, indent=1)
            f.write("\n")


# --- The report's side: points, the Pareto frontier, who is on it at equal utilization.

def control_of(algo):
    """The control a point belongs to: the algorithm less its knob (dctcp's +kN), keeping
    pacing (+fq) apart: "dctcp+fq+k5" -> "dctcp+fq"."""
    base, variant = netbench.split_algo(algo)
    return base + ("+fq" if variant.get("fq") else "")


def knob_of(sc, algo):
    """The knob value of a point: dctcp's K; for the project's controls, the scenario's
    module parameter (`frontier.knob`, "defaults" in the base scenario)."""
    base, variant = netbench.split_algo(algo)
    if base in netbench.ECN_ALGOS:
        return f"K={variant.get('ecn_k', sc.get('ecn_k_pkts'))}"
    if base in OWN_KNOB:
        params, knob, default = OWN_KNOB[base]
        m = re.search(rf"(?:^|\s){knob}=(\d+)", sc.get(params, ""))
        return f"{knob}={m.group(1) if m else default}"
    if base in netbench.STAMP_ALGOS:
        return sc.get("frontier", {}).get("knob", "defaults")
    return "-"


def median(xs):
    xs = sorted(x for x in xs if x is not None)
    return xs[len(xs) // 2] if xs else None


def points(results, scs, set_name):
    """One point per (control, knob value) of a frontier set: the median over its runs
    of the utilization (of the control's own payload capacity) and of the p99 queueing
    delay at the bottleneck (us)."""
    by = {}
    for name, sc in scs.items():
        if sc.get("frontier", {}).get("set") != set_name:
            continue
        for r in results.get(name, []):
            key = (control_of(r["algo"]), knob_of(sc, r["algo"]))
            by.setdefault(key, []).append(r)
    out = []
    for (control, knob), rs in sorted(by.items()):
        ok = [r for r in rs if r.get("ok")]
        out.append({"control": control, "knob": knob, "runs": rs, "n_ok": len(ok),
                    "util": median(r.get("util_payload_pct") for r in ok),
                    "q99_us": median(r.get("queue_p99_us") for r in ok)})
    return out


def mark_pareto(pts):
    """Marks each point with `pareto`: no other point has at least its utilization and at
    most its p99 queue delay, one of them strictly. Points without both are off it."""
    for p in pts:
        p["pareto"] = p["util"] is not None and p["q99_us"] is not None and not any(
            o is not p and o["util"] is not None and o["q99_us"] is not None
            and o["util"] >= p["util"] and o["q99_us"] <= p["q99_us"]
            and (o["util"] > p["util"] or o["q99_us"] < p["q99_us"]) for o in pts)
    return pts


UTIL_LEVELS = [95.0, 99.0]


def best_at(pts, util_min):
    """Per control, its point with the lowest p99 queue delay among those at util_min %
    or more of utilization (None where none reaches it)."""
    best = {}
    for p in pts:
        best.setdefault(p["control"], None)
        if p["util"] is None or p["q99_us"] is None or p["util"] < util_min:
            continue
        if best[p["control"]] is None or p["q99_us"] < best[p["control"]]["q99_us"]:
            best[p["control"]] = p
    return best


def set_names(scs):
    return sorted({sc["frontier"]["set"] for sc in scs.values() if sc.get("frontier")})


def base_scenario(set_name):
    return f"frontier_{set_name}"


def section_lines(results, scs, set_name, commits, plots_dir=None, label=""):
    """The frontier's part of its base scenario's section: every point, the Pareto
    frontier marked, and who is on it at equal utilization; the plot, given a directory."""
    pts = mark_pareto([p for p in points(results, scs, set_name) if p["runs"]])
    if not pts:
        return []

    def f(v, spec="{:.0f}"):
        return "-" if v is None else spec.format(v)

    lines = ["", f"Frontier of set `{set_name}`: every (control, knob value) of its scenarios "
             "(frontier_" + set_name + "*), utilization of the control's own payload capacity "
             "against the p99 queueing delay at the bottleneck, medians over the runs; * on "
             "the Pareto frontier (no other point has at least its utilization at no more "
             "delay):", "",
             "| control | knob | runs ok | util | p99 queue us | frontier | commit |",
             "|---|---|---:|---:|---:|:---:|---|"]
    for p in sorted(pts, key=lambda p: (p["control"], p["knob"])):
        lines.append(f"| {p['control']} | {p['knob']} | {p['n_ok']}/{len(p['runs'])} "
                     f"| {f(p['util'], '{:.1f}%')} | {f(p['q99_us'])} "
                     f"| {'*' if p['pareto'] else ''} | {commits(p['runs'])} |")
    best = {u: best_at(pts, u) for u in UTIL_LEVELS}
    lines += ["", "Who is on the frontier, at equal utilization: each control's lowest p99 "
              "queue delay (us) among its knob values at or above the utilization, and the "
              "knob that gave it:", "",
              "| control | " + " | ".join(f">= {u:g}% util" for u in UTIL_LEVELS) + " |",
              "|---|" + "---|" * len(UTIL_LEVELS)]
    for control in sorted({p["control"] for p in pts}):
        cells = []
        for u in UTIL_LEVELS:
            b = best[u][control]
            cells.append("not reached" if b is None else
                         f"{b['q99_us']:.0f} us ({b['knob']})" + (" *" if b["pareto"] else ""))
        lines.append(f"| {control} | " + " | ".join(cells) + " |")
    if plots_dir is not None:
        import plots
        png = plots.plot_frontier(plots_dir, scs.get(base_scenario(set_name),
                                                     {"name": base_scenario(set_name)}),
                                  pts, label)
        lines += ["", f"![{png}](plots/{png})"]
    return lines


def main():
    if sys.argv[1:] == ["--write"]:
        write_files()
        print(f"wrote {len(scenario_files())} frontier scenarios to {SCENARIOS}")
        return 0
    print(__doc__)
    return 2


if __name__ == "__main__":
    sys.exit(main())
