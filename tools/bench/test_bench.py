#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""Host tests of the bench report (report.py): a report written from fake raw results of
two scenarios in a temporary directory, its contents and groups, the commits its rows name,
runs from dirty trees, the archive it is derived from; netbench's flow schedule and
measurement window; and the committed results/BENCH.md against the layout the generator
gives it."""

import contextlib
import importlib.util
import io
import json
import lzma
import os
import re
import sys
import shutil
import tempfile
import unittest
from unittest import mock

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import netbench  # noqa: E402
import report  # noqa: E402
import run  # noqa: E402
import theory  # noqa: E402
import common  # noqa: E402
import frontier  # noqa: E402
from common import Paths, load_scenarios  # noqa: E402

META = {"commit": "abc1234", "date": "2026-01-01 00:00 UTC",
        "kernel": "Linux 7.3.4-1~bpo13+1 (linux-source-7.3) ARCH=um with patches/series",
        "clock": "simulated", "timely_params": "t_low_us=500 t_high_us=5000 delta_kbps=1000"}


def fake_run(scenario, algo, rep=0, flows=1, mbps=900.0, rtt_us=300.0, ok=True):
    """A raw result as tools/bench/run.py leaves it, with samples for the plots."""
    if not ok:
        return {"algo": algo, "scenario": scenario, "ok": False, "error": "no result",
                "rep": rep, "clock": "simulated", "wall_s": 3.0, **META}
    samples = [{"t": i / 100, "flow": f, "rtt_us": rtt_us + i, "pacing_bps": mbps * 1e6 / flows,
                "bytes_acked": int(i * mbps * 1e6 / 8 / 100 / flows)}
               for i in range(1, 60) for f in range(flows)]
    return {"algo": algo, "scenario": scenario, "ok": True, "rep": rep, "clock": "simulated",
            "wall_s": 12.3, **META, "mbps": mbps, "util_pct": mbps / 9.56, "rtt_p50_us": rtt_us,
            "rtt_p99_us": rtt_us * 1.5, "queue_p50_pkts": 10, "queue_p99_pkts": 20,
            "retransmits": 0, "jain": 1.0, "convergence_s": 0.1, "idle_rtt_us": 200,
            "per_flow_mbps": [mbps / flows] * flows, "window_s": [0.1, 0.6],
            "ctl_rtt_p50_us": rtt_us if "timely" in algo else None,
            "ctl_rtt_p99_us": rtt_us * 1.2 if "timely" in algo else None, "ctl_sources": [3],
            "samples": samples, "queue": [{"t": i / 100, "pkts": 10} for i in range(60)]}


SCENARIOS = {
    "calibration": {"name": "calibration", "group": "calibration", "description": "One cubic flow.",
                    "rate_mbit": 1000, "delay_us": 200, "queue_pkts": 500, "mtu": 1500,
                    "algos": ["cubic"], "repetitions": 2,
                    "flows": [{"count": 1, "start_s": 0, "stop_s": 1}]},
    "incast4": {"name": "incast4", "group": "incast", "description": "Four flows into one.",
                "rate_mbit": 1000, "delay_us": 200, "queue_pkts": 500, "mtu": 1500,
                "algos": ["cubic", "timely_patched"], "repetitions": 1,
                "flows": [{"count": 4, "start_s": 0, "stop_s": 1}]},
}


class Bench(unittest.TestCase):
    """A temporary bench: scenario files, raw results and the report's place."""

    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        d = self.tmp.name
        self.paths = Paths(scenarios=os.path.join(d, "scenarios"), raw=os.path.join(d, "raw"),
                           report=os.path.join(d, "results", "BENCH.md"))
        os.makedirs(self.paths.scenarios)
        for name, sc in SCENARIOS.items():
            with open(os.path.join(self.paths.scenarios, f"{name}.json"), "w") as f:
                json.dump(sc, f)
        os.makedirs(self.paths.raw)
        with open(os.path.join(self.paths.raw, "meta.json"), "w") as f:
            json.dump(META, f)
        self.write_raw(fake_run("calibration", "cubic", 0))
        self.write_raw(fake_run("calibration", "cubic", 1))
        self.write_raw(fake_run("incast4", "cubic", flows=4, rtt_us=5000))
        self.write_raw(fake_run("incast4", "timely_patched", flows=4, rtt_us=600))

    def tearDown(self):
        self.tmp.cleanup()

    def write_raw(self, r):
        d = os.path.join(self.paths.raw, r["scenario"])
        os.makedirs(d, exist_ok=True)
        with open(os.path.join(d, f"{r['algo']}.{r['rep']}.json"), "w") as f:
            json.dump(r, f)

    def report_text(self):
        with open(self.paths.report) as f:
            return f.read()


class Layout(Bench):
    def test_index_headline_then_groups(self):
        self.assertEqual(report.write_report(self.paths, plots=False), ["calibration", "incast4"])
        text = self.report_text()
        lines = text.split("\n")
        h2 = [ln for ln in lines if ln.startswith("## ")]
        self.assertEqual(h2, ["## Contents", "## Headline", "## How the bench measures",
                              "## Calibration: the testbed itself",
                              "## Incast: 1 to 64 flows into one receiver"])
        h3 = [ln for ln in lines if ln.startswith("### ")]
        self.assertEqual(h3, ["### calibration", "### incast4"])
        # Each scenario under its group's heading.
        self.assertLess(lines.index("## Calibration: the testbed itself"),
                        lines.index("### calibration"))
        self.assertLess(lines.index("### calibration"),
                        lines.index("## Incast: 1 to 64 flows into one receiver"))
        self.assertLess(lines.index("## Incast: 1 to 64 flows into one receiver"),
                        lines.index("### incast4"))
        # The contents link every heading below them, each to an anchor that exists.
        contents = text.split("## Contents", 1)[1].split("## Headline", 1)[0]
        self.assertIn("[Calibration: the testbed itself](#calibration-the-testbed-itself), "
                      "1 scenario:", contents)
        self.assertIn("[Incast: 1 to 64 flows into one receiver]"
                      "(#incast-1-to-64-flows-into-one-receiver), 1 scenario:", contents)
        self.assertIn("  - [calibration](#calibration)", contents)
        self.assertIn("  - [incast4](#incast4)", contents)
        seen = {}
        anchors = [report.slug(ln.lstrip("#"), seen) for ln in lines if ln.startswith("##")]
        self.assertEqual(len(anchors), len(set(anchors)))
        self.assertEqual(set(re.findall(r"\]\(#([^)]+)\)", contents)), set(anchors) - {"contents"})
        # The sections: their tables; Theorem 5 for patched TIMELY.
        # Queue first (packets, then us: 10 x 1514 B x 8 / 1000 Mbit/s = 121 us), the
        # smoothed RTT after it.
        self.assertIn("| cubic | 1 | 900.0 | 94.1% | 0.00% | 10/20 | 121/242 | 300/450 |", text)
        self.assertIn("Utilization of one cubic flow: 94.1%, 94.1%", text)
        self.assertIn("Patched TIMELY's operating point against Theorem 5", text)
        self.assertTrue(text.endswith("\n") and not text.endswith("\n\n"))

    def test_rewrite_keeps_other_sections_and_round_trips(self):
        report.write_report(self.paths, plots=False)
        first = self.report_text()
        # Reassembling what is read back gives the same text.
        scs = {s["name"]: s for s in load_scenarios(self.paths.scenarios)}
        self.assertEqual(report.assemble_report(report.parse_report(first), scs), first)
        # One scenario's runs only (a fresh clone's): the other keeps its section.
        for f in os.listdir(os.path.join(self.paths.raw, "calibration")):
            os.remove(os.path.join(self.paths.raw, "calibration", f))
        os.rmdir(os.path.join(self.paths.raw, "calibration"))
        self.write_raw(fake_run("incast4", "cubic", flows=4, rtt_us=7000))
        with contextlib.redirect_stdout(io.StringIO()) as out:
            report.write_report(self.paths, plots=False)
        self.assertIn("headline kept: no runs here of one_flow", out.getvalue())
        second = self.report_text()
        self.assertIn("| cubic | 0 | 900.0 | 94.1% | 0.00% | 10/20 | 121/242 | 7000/10500 |",
                      second)
        self.assertNotIn("| 5000/7500 |", second)
        old, new = report.parse_report(first), report.parse_report(second)
        self.assertEqual(old.sections["calibration"], new.sections["calibration"])
        self.assertEqual(old.headline, new.headline)

    def test_regroup_follows_the_scenario_files(self):
        report.write_report(self.paths, plots=False)
        sc = dict(SCENARIOS["incast4"], group="timely")
        with open(os.path.join(self.paths.scenarios, "incast4.json"), "w") as f:
            json.dump(sc, f)
        report.regroup_report(self.paths)
        text = self.report_text()
        self.assertIn("## TIMELY studies: settings and patches", text)
        self.assertNotIn("## Incast", text)
        self.assertLess(text.index("## TIMELY studies"), text.index("### incast4"))

    def test_unknown_group_and_failed_run(self):
        self.write_raw(fake_run("gone", "cubic", ok=False))
        report.write_report(self.paths, plots=False)
        text = self.report_text()
        self.assertIn("## Other scenarios", text)
        self.assertIn("| cubic | 0 | FAILED: no result |", text)
        self.assertLess(text.index("## Other scenarios"), text.index("### gone"))

    def test_flat_report_of_earlier_layout(self):
        """A report laid out before the groups (every section at the second level, in the
        order added) is read section by section and rewritten in groups."""
        os.makedirs(os.path.dirname(self.paths.report))
        with open(self.paths.report, "w") as f:
            f.write("# Bench report\n\nIntro.\n\nMethod.\n\n## Headline\n\n| old |\n\n"
                    "## incast4\n\nOld incast4.\n\n## calibration\n\nOld calibration.\n")
        rep = report.parse_report(self.report_text())
        self.assertEqual((rep.intro, rep.method, rep.headline), (["Intro."], ["Method."], ["| old |"]))
        self.assertEqual(rep.sections, {"incast4": ["Old incast4."],
                                        "calibration": ["Old calibration."]})
        report.write_report(self.paths, ["incast4"], plots=False)
        text = self.report_text()
        self.assertIn("### calibration\n\nOld calibration.\n", text)
        self.assertNotIn("Old incast4.", text)
        # The intro kept, its word on provenance that of the runs here.
        self.assertIn("Intro.\n\nEvery table row names the commit", text)
        self.assertLess(text.index("### calibration"), text.index("### incast4"))


class Runs(Bench):
    """run.py's scheduling, each boot replaced by a fake that writes the run's result."""

    def fake_job(self, raw, job, timely_params, prov):
        sc, algo, rep, clock = job
        r = dict(fake_run(sc["name"], algo, rep, flows=4), clock=clock, **prov)
        out = run.raw_path(raw, sc, algo, rep)
        os.makedirs(os.path.dirname(out), exist_ok=True)
        with open(out, "w") as f:
            json.dump(r, f)
        self.jobs.append((sc["name"], algo, rep, clock))
        return r

    def bench_run(self, names, missing=False):
        self.jobs = []
        with mock.patch.object(run, "run_job", self.fake_job), \
                contextlib.redirect_stdout(io.StringIO()):
            return run.run(self.paths, names, "simulated", 2, missing)

    def test_every_run_then_only_the_missing(self):
        self.assertEqual(self.bench_run([]), 0)
        self.assertEqual(sorted(self.jobs), [("calibration", "cubic", 0, "simulated"),
                                             ("calibration", "cubic", 1, "simulated"),
                                             ("incast4", "cubic", 0, "simulated"),
                                             ("incast4", "timely_patched", 0, "simulated")])
        with open(os.path.join(self.paths.raw, "meta.json")) as f:
            self.assertIn("timely_params", json.load(f))
        os.remove(run.raw_path(self.paths.raw, SCENARIOS["incast4"], "cubic", 0))
        self.assertEqual(self.bench_run(["incast4"], missing=True), 0)
        self.assertEqual(self.jobs, [("incast4", "cubic", 0, "simulated")])


class Provenance(Bench):
    """Commits in the tables, runs from dirty trees, and the archive the report is
    derived from."""

    def write(self, **kw):
        with contextlib.redirect_stdout(io.StringIO()) as out:
            report.write_report(self.paths, plots=False, **kw)
        return self.report_text(), out.getvalue()

    def test_rows_name_their_commit_and_pooling(self):
        self.write_raw(dict(fake_run("calibration", "cubic", 1, mbps=800.0), commit="def5678"))
        text, _ = self.write()
        self.assertIn("| 12 | abc1234 |", text)  # a run's row: wall s, then its commit
        self.assertIn("| 12 | def5678 |", text)
        # The median row of calibration's two runs pools two commits and says so.
        self.assertIn("| cubic | median (min-max) of 2 |", text)
        self.assertIn("| abc1234 + def5678 (pooled) |", text)
        self.assertIn("pooled: the row's runs came from several commits", text)
        self.assertNotIn("-dirty", text)

    def test_dirty_runs_left_out_unless_allowed(self):
        for rep_ in (0, 1):
            self.write_raw(dict(fake_run("calibration", "cubic", rep_), commit="abc1234-dirty"))
        self.write_raw(dict(fake_run("incast4", "timely_patched", flows=4, rtt_us=600),
                            commit="abc1234-dirty"))
        text, out = self.write()
        # Said on the terminal and in the report, with the way to include them.
        self.assertIn("left out: calibration: 2 of 2 runs from dirty trees (abc1234-dirty)", out)
        self.assertIn("left out: incast4: 1 of 2 runs", out)
        self.assertIn("--allow-dirty", out)
        self.assertIn("Left out: runs from trees with uncommitted changes", text)
        self.assertIn("calibration (2 of 2 runs, `abc1234-dirty`)", text)
        section = report.parse_report(text).sections
        self.assertEqual(section["calibration"][-1].split(":")[0], "Left out of this report")
        self.assertNotIn("| cubic | 0 | 900.0", "\n".join(section["calibration"]))
        # incast4 keeps its clean run only.
        incast4 = "\n".join(section["incast4"])
        self.assertIn("Left out: 1 of its 2 runs", incast4)
        self.assertIn("| cubic | 0 | 900.0 |", incast4)
        self.assertNotIn("| timely_patched | 0 | 900.0 |", incast4)
        self.assertNotIn("-dirty |", text)
        # Allowed: in, marked in the commit column, with the footnote.
        text, out = self.write(allow_dirty=True)
        self.assertNotIn("left out", out)
        self.assertIn("| 12 | abc1234-dirty |", text)
        self.assertIn("`-dirty`: the run's tree had uncommitted changes", text)
        self.assertIn("Included by `--allow-dirty`", text)
        self.assertIn("| timely_patched | 0 | 900.0 |", text)

    def test_report_derived_again_from_the_archive(self):
        """The report packs the raw runs into runs/<scenario>.json.xz; without the raw
        directory (a fresh clone) the same report comes from the archive alone."""
        first, _ = self.write()
        path = os.path.join(self.paths.archive, "calibration.json.xz")
        with lzma.open(path, "rt") as f:
            a = json.load(f)
        self.assertEqual(a["meta"], META)
        self.assertEqual([(r["algo"], r["rep"]) for r in a["runs"]], [("cubic", 0), ("cubic", 1)])
        self.assertIn("samples", a["runs"][0])
        shutil.rmtree(self.paths.raw)
        os.remove(self.paths.report)
        second, _ = self.write()
        self.assertEqual(first, second)

    def test_a_run_repacks_over_the_archive(self):
        self.write()
        os.remove(run.raw_path(self.paths.raw, SCENARIOS["calibration"], "cubic", 1))
        self.write_raw(fake_run("calibration", "cubic", 0, mbps=800.0))
        self.assertEqual(common.pack_runs(self.paths, ["calibration"]), ["calibration"])
        runs = common.read_archive(os.path.join(self.paths.archive, "calibration.json.xz"))["runs"]
        # The new run replaces its namesake; the run no longer in raw/ stays archived.
        self.assertEqual([(r["rep"], r["mbps"]) for r in runs], [(0, 800.0), (1, 900.0)])


def flow_run(sc, ends_s):
    """A run of `sc`'s flows, each sending 100 Mbit/s from its start until its end in
    `ends_s` (as iperf3 ran it), sampled every 10 ms as netbench's sampler does."""
    flows = netbench.expand_flows(sc)
    per_flow = [{"start_s": a, "stop_s": b, "cc": "cubic", "mbps": 100.0, "bytes": 0,
                 "retransmits": 0} for a, b in flows]
    samples = []
    for i, ((a, _), end) in enumerate(zip(flows, ends_s)):
        for k in range(int(round(a * 100)) + 1, int(round(end * 100)) + 1):
            t = k / 100
            samples.append({"t": t, "flow": i, "conn": 40000 + i, "rtt_us": 300,
                            "cwnd": 10, "pacing_bps": 1e8, "ecn": False,
                            "bytes_acked": int((t - a) * 100e6 / 8)})
    samples.sort(key=lambda s: s["t"])
    return {"flows": per_flow, "samples": samples,
            "queue": [{"t": k / 100, "pkts": 5} for k in range(500)]}


class Window(unittest.TestCase):
    """Finding 5 of issue 30: flows scheduled across the measurement window must cover
    it, and a run in which one does not is a failed run, not a summary without it."""

    def scenario(self, name):
        return load_scenarios(Paths().scenarios, [name])[0]

    def test_iperf3_seconds_rounds_up(self):
        # 2.5 s was round()ed half to even, to 2: the flow ended 0.5 s early.
        self.assertEqual(netbench.iperf3_seconds(1.5, 4), 3)
        self.assertEqual(netbench.iperf3_seconds(1.5071, 4), 3)  # jittered: 2.49 s
        self.assertEqual(netbench.iperf3_seconds(0.5134, 4), 4)  # 3.49 s
        self.assertEqual(netbench.iperf3_seconds(0.1, 1.1), 1)  # not 2 for 1.0000000000000002
        # A flow to leave before the window: rounded down, out of it ...
        self.assertEqual(netbench.iperf3_seconds(0, 2.5, [2.6, 3.8]), 2)
        # ... unless rounding up keeps it out too.
        self.assertEqual(netbench.iperf3_seconds(0, 2.5, [3.5, 3.8]), 3)

    def test_every_scenario_flow_covers_its_window(self):
        for sc in load_scenarios(Paths().scenarios):
            for rep in range(sc.get("repetitions", 1)):
                flows = netbench.jitter_starts(sc, netbench.expand_flows(sc), rep)
                if not flows:
                    continue
                a, b = netbench.measure_window(sc, flows)
                for start, stop in flows:
                    end = start + netbench.iperf3_seconds(start, stop, [a, b])
                    if stop >= b:
                        self.assertGreaterEqual(end, stop, (sc["name"], rep, start))
                    if stop <= a:
                        self.assertLessEqual(end, a, (sc["name"], rep, start))

    def test_summary_over_every_flow(self):
        sc = self.scenario("random_loss")
        res = flow_run(sc, [4.0, 4.5, 4.0, 4.5])
        out = netbench.summarize(sc, res)
        self.assertEqual(out["window_s"], [2.0, 3.8])
        self.assertEqual(out["per_flow_mbps"], [100.0] * 4)
        self.assertEqual(out["jain"], 1.0)

    def test_flow_ended_inside_the_window_fails_the_run(self):
        """What round() did to random_loss: flows 1 and 3 ended at 3.5 s, in the window
        2.0-3.8 s; the summary was over the other two."""
        sc = self.scenario("random_loss")
        res = flow_run(sc, [4.0, 3.5, 4.0, 3.5])
        with self.assertRaises(netbench.WindowError) as e:
            netbench.summarize(sc, res)
        self.assertIn("flow 1 (scheduled 0.5-4 s) has no sample at the measurement window's "
                      "end, 3.8 s: its last is at 3.5 s", str(e.exception))
        # A flow with no samples at all, too.
        res = flow_run(sc, [4.0, 4.0, 4.0, 1.5])
        with self.assertRaisesRegex(netbench.WindowError, "flow 3 .*it has no samples"):
            netbench.summarize(sc, res)
        # Resummarized, such a run becomes a failed one.
        r = dict(flow_run(sc, [4.0, 3.5, 4.0, 3.5]), algo="cubic", ok=True, rep=0)
        with contextlib.redirect_stdout(io.StringIO()):
            run.resummarize_run(sc, r)
        self.assertFalse(r["ok"])
        self.assertIn("flow 1", r["error"])

    def test_resummarize_the_archive(self):
        """With no raw directory (a clone), `bench.py resummarize` recomputes the archived
        runs, and writes them back."""
        sc = self.scenario("random_loss")
        with tempfile.TemporaryDirectory() as d:
            paths = Paths(scenarios=os.path.join(d, "scenarios"), raw=os.path.join(d, "raw"),
                          report=os.path.join(d, "BENCH.md"))
            os.makedirs(paths.scenarios)
            with open(os.path.join(paths.scenarios, "random_loss.json"), "w") as f:
                json.dump(sc, f)
            good = dict(flow_run(sc, [4.0, 4.5, 4.0, 4.5]), scenario="random_loss",
                        algo="cubic", rep=0, ok=True, commit="abc1234")
            short = dict(flow_run(sc, [4.0, 3.5, 4.0, 3.5]), scenario="random_loss",
                         algo="cubic", rep=1, ok=True, commit="abc1234")
            os.makedirs(paths.archive)
            with lzma.open(common.archive_path(paths, "random_loss"), "wt") as f:
                json.dump({"meta": META, "runs": [good, short]}, f)
            with contextlib.redirect_stdout(io.StringIO()) as out:
                run.resummarize(paths, ["random_loss"])
            self.assertIn("random_loss cubic #1: FAILED: flow 1", out.getvalue())
            runs = common.read_archive(common.archive_path(paths, "random_loss"))["runs"]
            self.assertEqual([(r["rep"], r["ok"]) for r in runs], [(0, True), (1, False)])
            self.assertEqual(runs[0]["per_flow_mbps"], [100.0] * 4)


def stamp_run(scenario, algo, mbps, q_pkts, rep=0, stamp_samples=100, **kw):
    """A successful run of a long-flow scenario whose queue p50/p99 are q_pkts, as an
    archive holds it (summarized before the derived metrics existed)."""
    r = fake_run(scenario, algo, rep, flows=4, mbps=mbps)
    r.update(queue_p50_pkts=q_pkts[0], queue_p99_pkts=q_pkts[1], **kw)
    if algo.split("+")[0] in netbench.STAMP_ALGOS:
        r.update(stamp_samples=stamp_samples, stamp_hw_samples=0)
    return r


class QueueMetric(unittest.TestCase):
    """Item 1 of issue 30's review: every control's delay from the bottleneck queue, in
    packets and in us, and the headline's ratios on it."""

    SC10 = {"name": "x", "rate_mbit": 10000, "mtu": 9000, "delay_us": 20}
    SC1 = {"name": "y", "rate_mbit": 1000, "mtu": 1500, "delay_us": 200}

    def test_queue_delay_is_frames_on_the_wire(self):
        # 1514 B frames at 1 Gbit/s: 12.112 us each; 9014 B at 10 Gbit/s: 7.2112 us.
        self.assertEqual(netbench.frame_bytes(self.SC1), 1514)
        self.assertEqual(netbench.queue_delay_us(self.SC1, 10), 121.1)
        self.assertEqual(netbench.queue_delay_us(self.SC10, 100), 721.1)
        self.assertIsNone(netbench.queue_delay_us(self.SC10, None))

    def test_summary_has_the_queue_in_us(self):
        sc = load_scenarios(Paths().scenarios, ["random_loss"])[0]
        out = netbench.summarize(sc, flow_run(sc, [4.0, 4.5, 4.0, 4.5]))
        self.assertEqual(out["queue_p99_pkts"], 5)
        self.assertEqual(out["queue_p99_us"], netbench.queue_delay_us(sc, 5))

    def test_headline_ratios_on_the_queue_not_the_rtt(self):
        """A control whose smoothed RTT is far below dctcp's but whose queue is not: the
        ratio is the queue's."""
        results = {"incast16_10g": [
            dict(stamp_run("incast16_10g", "dctcp", 9900, (10, 20)), rtt_p99_us=1000),
            dict(stamp_run("incast16_10g", "dctcp+fq+k5", 9900, (4, 5)), rtt_p99_us=900),
            dict(stamp_run("incast16_10g", "dctcp+k2", 9000, (1, 2)), rtt_p99_us=900),
            dict(stamp_run("incast16_10g", "timely_patched", 9900, (8, 10)), rtt_p99_us=100)]}
        sc = {"incast16_10g": dict(self.SC10, name="incast16_10g")}
        report.add_derived(results, sc)
        lines = "\n".join(report.headline(results))
        # 10 / 20 frames = 0.50 of dctcp's; 10 / 5 = 2.00 of the best-tuned dctcp's (k2's
        # utilization is below 95%, so it is not the best-tuned).
        self.assertIn("| timely_patched | 0.50x / 2.00x |", lines)
        self.assertIn("incast16_10g: dctcp+fq+k5, 36 us", lines)
        self.assertIn("| dctcp | 10 / 20 pkts; 72 / 144 us |", lines)
        # The detail table: queue in frames and us, the sRTT after it.
        self.assertIn("| 8 / 10 | 58 / 72 | 100 |", lines)


class PayloadUtil(unittest.TestCase):
    """Item 2: each control's utilization against the payload its own segments carry."""

    SC = {"name": "y", "rate_mbit": 1000, "mtu": 1500, "delay_us": 200}

    def test_stamp_controls_carry_8_bytes_less(self):
        r = stamp_run("y", "timely_patched", 952.0, (1, 2))
        d = netbench.derived_metrics(self.SC, r)
        self.assertEqual((d["mss"], d["mss_source"]), (1440, "the sender's TCPDelayStampSample count"))
        # 952 / (1000 x 1440 / 1514) = 100.1%; of the timestamp MSS, 952 / 956.4 = 99.5%.
        self.assertEqual(d["util_payload_pct"], 100.1)
        self.assertEqual(d["option_cost_pct"], 0.55)
        # The option refused (+rtt: no stamp samples): the full MSS, no cost.
        d = netbench.derived_metrics(self.SC, stamp_run("y", "timely_patched+rtt", 952.0, (1, 2),
                                                        stamp_samples=0))
        self.assertEqual((d["mss"], d["option_cost_pct"]), (1448, 0.0))
        # No counters (an old run): the controller's RTT sources say it.
        r = fake_run("y", "dx", mbps=952.0)
        r["ctl_sources"] = [2]
        self.assertEqual(netbench.derived_metrics(self.SC, r)["mss"], 1440)
        self.assertEqual(netbench.derived_metrics(self.SC, fake_run("y", "cubic"))["mss"], 1448)

    def test_snd_mss_samples_win(self):
        r = fake_run("y", "dx", mbps=952.0)
        for s in r["samples"]:
            s["snd_mss"] = 1436
        d = netbench.derived_metrics(self.SC, r)
        self.assertEqual((d["mss"], d["mss_source"]), (1436, "snd_mss samples"))

    def test_initial_window_stated(self):
        rs = [fake_run("y", a) for a in ("cubic", "dctcp+iw17", "timely")]
        text = " ".join(report.initial_window_lines({"name": "y"}, rs))
        self.assertIn("cubic, timely: the kernel's initial window (10 segments", text)
        self.assertIn("dctcp+iw17: initcwnd 17 segments, initrwnd 17", text)
        text = " ".join(report.initial_window_lines({"initcwnd": 4, "initrwnd": 4000},
                                                    rs[:1] + rs[2:]))
        self.assertIn("the same for every algorithm here: initcwnd 4 segments, initrwnd 4000", text)

    def test_paced_dctcp_in_every_headline_scenario(self):
        """dctcp+fq beside dctcp, and each K of a sweep paced as well, wherever the
        headline draws on dctcp."""
        names = set(report.HEADLINE_SCENARIOS) | {n for _, n, _, _ in report.PAPER_SCALE_COLUMNS}
        names.add(report.PAPER_SCALE_FCT)
        for sc in load_scenarios(Paths().scenarios, sorted(names)):
            algos = set(sc["algos"])
            if "dctcp" not in algos:
                continue
            self.assertIn("dctcp+fq", algos, sc["name"])
            for a in algos:
                if a.startswith("dctcp+k"):
                    self.assertIn("dctcp+fq+" + a[len("dctcp+"):], algos, sc["name"])


class Frontier(unittest.TestCase):
    """Item 3: the frontier of utilization against p99 queue delay, from runs in the
    archive's format (summaries without the derived metrics, added at report time)."""

    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        d = self.tmp.name
        self.paths = Paths(scenarios=os.path.join(d, "scenarios"), raw=os.path.join(d, "raw"),
                           report=os.path.join(d, "results", "BENCH.md"))
        os.makedirs(self.paths.scenarios)
        files = frontier.scenario_files()
        self.scs = {}
        for fname, sc in files.items():
            if sc["frontier"]["set"] == "incast16_10g_mtu9000":
                with open(os.path.join(self.paths.scenarios, fname), "w") as f:
                    json.dump(sc, f)
                self.scs[sc["name"]] = sc
        os.makedirs(self.paths.raw)
        with open(os.path.join(self.paths.raw, "meta.json"), "w") as f:
            json.dump(META, f)
        base = "frontier_incast16_10g_mtu9000"
        # (scenario, algo, Mbit/s, queue p99 frames): 9014-byte frames at 10 Gbit/s are
        # 7.2 us each; capacity 10000 x 8948 / 9014 = 9926.8 Mbit/s (8940 with the option:
        # 9918.0).
        for rep_ in range(2):
            for name, algo, mbps, q in [
                    (base, "cubic", 9900.0, 190), (base, "dctcp", 9900.0, 20),
                    (base, "dctcp+k2", 9300.0, 3), (base, "dctcp+fq+k5", 9860.0, 8),
                    (base, "timely_patched", 9850.0, 12), (base, "dx", 9700.0, 4),
                    (base + "_delta5000", "timely_patched", 9830.0, 9),
                    (base + "_headroom5000", "dx", 9400.0, 2),
                    (base, "swift", 9880.0, 6), (base + "_target100000", "swift", 9910.0, 9)]:
                r = stamp_run(name, algo, mbps, (q // 2, q), rep=rep_)
                r.pop("queue_p99_us", None)
                d = os.path.join(self.paths.raw, name)
                os.makedirs(d, exist_ok=True)
                with open(os.path.join(d, f"{algo}.{rep_}.json"), "w") as f:
                    json.dump(r, f)

    def tearDown(self):
        self.tmp.cleanup()

    def test_committed_frontier_scenarios_are_the_generators(self):
        files = frontier.scenario_files()
        for fname, sc in files.items():
            path = os.path.join(Paths().scenarios, fname)
            with open(path) as f:
                self.assertEqual(json.load(f), sc, fname)
        sets = {sc["frontier"]["set"] for sc in files.values()}
        self.assertEqual(sets, {"incast16_10g_mtu1500", "incast16_10g_mtu9000",
                                "incast64_10g_mtu1500", "incast64_10g_mtu9000",
                                "dx_bdp_10g_100us"})
        base = files["frontier_incast64_10g_mtu1500.json"]
        self.assertEqual((base["rate_mbit"], base["mtu"], base["ecn_k_pkts"]), (10000, 1500, 65))
        for a in ("dctcp+k5", "dctcp+fq+k5", "dctcp+fq", "bbr", "cubic", "dx"):
            self.assertIn(a, base["algos"])
        self.assertEqual(files["frontier_incast16_10g_mtu9000_tlow25.json"]["timely_params"],
                         "t_low_us=25")
        self.assertEqual(files["frontier_dx_bdp_10g_100us_headroom40000.json"]["dx_params"],
                         "headroom_ns=40000 base_rtt_slack_ns=5000")
        self.assertIn("swift", base["algos"])
        self.assertEqual(files["frontier_incast64_10g_mtu9000_target75000.json"]["swift_params"],
                         "base_target_ns=75000")

    def test_points_pareto_and_equal_utilization(self):
        results = {}
        for name in self.scs:
            results[name], _ = common.raw_runs(self.paths.raw, name)
        report.add_derived(results, self.scs)
        pts = frontier.mark_pareto(frontier.points(results, self.scs, "incast16_10g_mtu9000"))
        by = {(p["control"], p["knob"]): p for p in pts}
        self.assertEqual(set(by), {("cubic", "-"), ("dctcp", "K=11"), ("dctcp", "K=2"),
                                   ("dctcp+fq", "K=5"), ("timely_patched", "defaults"),
                                   ("dx", "headroom_ns=20000"), ("dx", "headroom_ns=5000"),
                                   ("timely_patched", "delta_kbps=5000"),
                                   ("swift", "base_target_ns=50000"),
                                   ("swift", "base_target_ns=100000")})
        self.assertEqual(by[("dctcp", "K=11")]["q99_us"], 144.2)  # 20 x 9014 x 8 / 10000
        self.assertEqual(by[("dx", "headroom_ns=5000")]["util"], 94.8)  # 9400 / 9918.0
        on = {k for k, p in by.items() if p["pareto"]}
        # cubic fills the most (9900 of 9926.8) but with the longest queue; dctcp K=11
        # as much with a shorter one; dctcp+fq K=5 at 99.3%; dx at 97.8% with 4 frames.
        # patched TIMELY at delta 5 Mbit/s (99.1%, 65 us) is behind dctcp+fq K=5 (99.3%,
        # 58 us); dctcp K=2 (93.7%, 22 us) behind dx at 5 us of headroom (94.8%, 14 us).
        # Swift at its default target (99.6%, 6 frames) puts dctcp+fq K=5 and dctcp K=11
        # off the frontier; at 100 us (99.9%, 9 frames) it fills more than cubic.
        self.assertEqual(on, {("dx", "headroom_ns=20000"), ("dx", "headroom_ns=5000"),
                              ("swift", "base_target_ns=50000"),
                              ("swift", "base_target_ns=100000")})
        best = frontier.best_at(pts, 99.0)
        self.assertEqual(best["dctcp+fq"]["knob"], "K=5")
        self.assertEqual(best["swift"]["knob"], "base_target_ns=50000")
        self.assertIsNone(best["dx"])
        self.assertEqual(frontier.best_at(pts, 95.0)["dx"]["knob"], "headroom_ns=20000")

    def test_report_section_and_plot(self):
        with contextlib.redirect_stdout(io.StringIO()):
            report.write_report(self.paths, ["frontier_incast16_10g_mtu9000_delta5000"],
                                plots=False)
        with open(self.paths.report) as f:
            text = f.read()
        section = text.split("### frontier_incast16_10g_mtu9000\n", 1)[1].split("\n### ", 1)[0]
        self.assertIn("## Frontier: utilization against queueing delay", text)
        self.assertIn("| dctcp+fq | K=5 | 2/2 | 99.3% | 58 |  | abc1234 |", section)
        self.assertIn("| swift | base_target_ns=50000 | 2/2 | 99.6% | 43 | * | abc1234 |",
                      section)
        self.assertIn("| cubic | - | 2/2 | 99.7% | 1370 |  | abc1234 |", section)
        self.assertIn("| dx | 29 us (headroom_ns=20000) * | not reached |", section)
        self.assertIn("| timely_patched | 65 us (delta_kbps=5000) | 65 us (delta_kbps=5000) |",
                      section)
        if importlib.util.find_spec("matplotlib") is None:
            self.skipTest("no matplotlib")
        with contextlib.redirect_stdout(io.StringIO()):
            report.write_report(self.paths, ["frontier_incast16_10g_mtu9000"])
        self.assertTrue(os.path.exists(os.path.join(self.paths.plots,
                                                    "frontier_incast16_10g_mtu9000-frontier.png")))
        with open(self.paths.report) as f:
            self.assertIn("(plots/frontier_incast16_10g_mtu9000-frontier.png)", f.read())


class Theory(unittest.TestCase):
    def test_theorem5(self):
        rtt_ref, delta_bps, beta = theory.theorem5_constants("t_low_us=50 delta_kbps=10000")
        self.assertEqual((rtt_ref, delta_bps, beta), (50, 10_000_000, 0.008))
        self.assertEqual(theory.theorem5_constants("rtt_ref_us=40 t_low_us=50")[0], 40)
        # 16 flows at 10 Gbit/s: 50 (1 + 16 x 10 / 80) = 150 us.
        self.assertAlmostEqual(theory.theorem5_rtt_us(50, 16, 10e6, 0.008, 10e9), 150.0)


class Repository(unittest.TestCase):
    def test_every_scenario_in_a_group(self):
        groups = {g[0] for g in report.GROUPS}
        for sc in load_scenarios(Paths().scenarios):
            self.assertIn(sc.get("group"), groups, sc["name"])

    def test_committed_report_in_the_generators_layout(self):
        """results/BENCH.md as the generator lays it out: contents, headline, method, and
        the sections in the groups their scenario files name (else: bench.py report
        --regroup)."""
        path = Paths().report
        if not os.path.exists(path):
            self.skipTest("no results/BENCH.md")
        with open(path) as f:
            text = f.read()
        scs = {s["name"]: s for s in load_scenarios(Paths().scenarios)}
        self.assertEqual(report.assemble_report(report.parse_report(text), scs), text)
        self.assertTrue(text.startswith("# Bench report\n"))
        self.assertIn("\n## Contents\n", text)


if __name__ == "__main__":
    unittest.main()


class Rc3Policy(unittest.TestCase):
    def test_the_policy_paces_at_the_scenarios_bottleneck_rate(self):
        sc = {"rate_mbit": 1000}
        self.assertEqual(run.rc3_insmod("cubic+rc3", sc),
                         "insmod rust/tcp_rc3.ko line_rate_mbps=1000")
        self.assertEqual(run.rc3_insmod("dx+rc3lv", {"rate_mbit": 10000.0}),
                         "insmod rust/tcp_rc3.ko dscp_map=1 line_rate_mbps=10000")
        self.assertEqual(run.rc3_insmod("dx+rc3burst", sc),
                         "insmod rust/tcp_rc3.ko line_rate_mbps=1600000")

    def test_the_burst_variant_asks_for_the_most_the_module_takes(self):
        src = open(os.path.join(run.ROOT, "rust", "core", "src", "rc3.rs")).read()
        m = re.search(r'ParamSpec::new\("line_rate_mbps", \d+, \d+, ([\d_]+)\)', src)
        self.assertEqual(int(m.group(1).replace("_", "")), run.RC3_BURST_MBPS)


class Rc3Rows(unittest.TestCase):
    """RC3's FCT table: each variant (one level, levels at their DSCPs) against the plain
    control, flows paired by position, the reduction also from the first data byte."""

    @staticmethod
    def run_(algo, rep, fcts, data=None):
        flows = [{"size": s, "fct_us": f} for s, f in fcts]
        for f, d in zip(flows, data or []):
            f["fct_data_us"] = d
        return {"algo": algo, "rep": rep, "ok": True, "fct": {"flows": flows},
                "commit": "abc1234"}

    def test_both_variants_paired_with_the_plain_control(self):
        base = self.run_("cubic", 0, [(1000, 2000.0), (2000, 4000.0)], [1000.0, 3000.0])
        one = self.run_("cubic+rc3", 0, [(1000, 1000.0), (2000, 4000.0)], [500.0, 3000.0])
        lv = self.run_("cubic+rc3lv", 0, [(1000, 2000.0), (2000, 2000.0)], [1000.0, 1000.0])
        rows = report.rc3_rows([base, one, lv])
        one_row = next(r for r in rows if r.startswith("| cubic | +rc3 |"))
        lv_row = next(r for r in rows if r.startswith("| cubic | +rc3lv |"))
        # Over flows, from connect(): 1 - 5000/6000 for one level, 1 - 4000/6000 with levels.
        self.assertIn("| 16.7 |", one_row)
        self.assertIn("| 33.3 |", lv_row)
        # From the first data byte: 1 - 3500/4000 and 1 - 2000/4000.
        self.assertIn("| 12.5 |", one_row)
        self.assertIn("| 50.0 |", lv_row)
        self.assertTrue(any("+rc3lv" in r and "dscp_map=1" in r for r in rows))

    def test_runs_without_the_first_byte_time_show_a_dash(self):
        base = self.run_("dx", 0, [(1000, 2000.0)])
        rc3 = self.run_("dx+rc3", 0, [(1000, 1000.0)])
        row = next(r for r in report.rc3_rows([base, rc3]) if r.startswith("| dx | +rc3 |"))
        self.assertIn("| 50.0 |", row)
        self.assertIn("| - |", row)
