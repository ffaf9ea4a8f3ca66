#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""Host tests of the bench report (report.py): a report written from fake raw results of
two scenarios in a temporary directory, its contents and groups; and the committed
results/BENCH.md against the layout the generator gives it."""

import contextlib
import io
import json
import os
import re
import sys
import tempfile
import unittest
from unittest import mock

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import report  # noqa: E402
import run  # noqa: E402
import theory  # noqa: E402
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
        self.assertIn("| cubic | 1 | 900.0 | 94.1% | 300 | 450 | 10/20 |", text)
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
        self.assertIn("| cubic | 0 | 900.0 | 94.1% | 7000 |", second)
        self.assertNotIn("| cubic | 0 | 900.0 | 94.1% | 5000 |", second)
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
        self.assertIn("Intro.\n\n## Contents", text)
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
