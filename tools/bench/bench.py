#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""The comparison bench: scenarios (tools/bench/scenarios/*.json) x algorithms, each run in
its own boot of the project's UML kernel, on simulated time by default, then a report.

    tools/bench/bench.py run [--clock simulated|normal] [--jobs N] [--missing] [SCENARIO...]
    tools/bench/bench.py report [--no-plots] [--allow-dirty] [SCENARIO...]   # results/BENCH.md
    tools/bench/bench.py report --regroup   # the report laid out again, no raw results
    tools/bench/bench.py resummarize SCENARIO...

`make bench` runs and reports every scenario. Raw results: results/raw/<scenario>/<algo>.<rep>.json
(not kept in git), packed after a run, and by the report, into the archive the report is
derived from: results/runs/<scenario>.json.xz (kept in git). --raw, --report, --archive
and --scenario-dir point elsewhere (the plots go to plots/ beside the report). The report
leaves out runs from trees with uncommitted changes unless --allow-dirty. The parts: run.py
runs the jobs, report.py writes the report (plots.py its figures, theory.py the predictions
it holds the runs against).
"""
import argparse
import os
import sys

import report
import run
from common import ROOT, Paths


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    default = Paths()
    p.add_argument("--raw", default=default.raw, help="the raw results' directory")
    p.add_argument("--report", default=default.report, help="the report's file")
    p.add_argument("--scenario-dir", default=default.scenarios, help="the scenarios' directory")
    p.add_argument("--archive", default=default.archive,
                   help="the archive's directory (runs packed from the raw directory, one "
                        "<scenario>.json.xz each, which the report is derived from)")
    sub = p.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run", help="run scenarios, each algorithm and repetition in its own boot")
    r.add_argument("--clock", choices=["simulated", "normal"], default="simulated")
    r.add_argument("--jobs", type=int, default=2)
    r.add_argument("--missing", action="store_true",
                   help="run only what has no successful result in the raw directory yet")
    r.add_argument("scenarios", nargs="*")
    rep = sub.add_parser("report", help="write the report from the runs (the raw directory's "
                         "packed into the archive first)")
    rep.add_argument("--no-plots", action="store_true",
                     help="draw no plots (and link none): the tables alone")
    rep.add_argument("--allow-dirty", action="store_true",
                     help="include runs from trees with uncommitted changes (commit "
                          "'<hash>-dirty'), marked; without it they are left out, and the "
                          "report says which")
    rep.add_argument("--regroup", action="store_true",
                     help="no raw results: lay the report out again, its sections in the "
                          "groups the scenario files name")
    rep.add_argument("scenarios", nargs="*",
                     help="rewrite only these scenarios' sections of the report")
    res = sub.add_parser("resummarize", help="recompute runs' metrics from their samples")
    res.add_argument("scenarios", nargs="+",
                     help="recompute these scenarios' metrics from their raw samples (after "
                          "a change of the scenario's measurement window)")
    a = p.parse_args()
    paths = Paths(scenarios=os.path.abspath(a.scenario_dir), raw=os.path.abspath(a.raw),
                  report=os.path.abspath(a.report), archive_dir=os.path.abspath(a.archive))
    if a.cmd == "run":
        return run.run(paths, a.scenarios, a.clock, a.jobs, a.missing)
    if a.cmd == "resummarize":
        return run.resummarize(paths, a.scenarios)
    if a.regroup:
        report.regroup_report(paths)
        print(f"regrouped {os.path.relpath(paths.report, ROOT)}")
        return 0
    names = report.write_report(paths, a.scenarios, plots=not a.no_plots,
                                allow_dirty=a.allow_dirty)
    print(f"rewrote {', '.join(names)} in {os.path.relpath(paths.report, ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
