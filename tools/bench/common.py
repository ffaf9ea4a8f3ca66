# SPDX-License-Identifier: GPL-2.0
"""What the bench's parts share: where things are, the scenarios, the algorithms' order,
the testbed's settings (tools/testbed/config.sh) and the tables' number formats."""
import functools
import glob
import json
import os
import re
import subprocess
import sys
from dataclasses import dataclass

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
ALGO_ORDER = ["cubic", "dctcp", "bbr", "rust_reno", "timely", "timely_patched"]


@dataclass(frozen=True)
class Paths:
    """The bench's inputs and outputs; the defaults are the repository's (a test gives its
    own). The plots go next to the report, which links them as plots/<name>.png."""
    scenarios: str = os.path.join(ROOT, "tools", "bench", "scenarios")
    raw: str = os.path.join(ROOT, "results", "raw")
    report: str = os.path.join(ROOT, "results", "BENCH.md")

    @property
    def plots(self):
        return os.path.join(os.path.dirname(self.report), "plots")


def algo_key(algo):
    """Report order: by control (ALGO_ORDER, others after), each plain before its variants."""
    base = algo.split("/")[0].split("+")[0]
    # Numbers in a variant sort by value: +k2, +k5, +k20.
    natural = [(0, int(t), "") if t.isdigit() else (1, 0, t)
               for t in re.split(r"(\d+)", algo) if t]
    return (ALGO_ORDER.index(base) if base in ALGO_ORDER else len(ALGO_ORDER), base,
            algo != base, natural)


def sorted_runs(rs):
    """Report order: by algorithm (algo_key), then repetition."""
    return sorted(rs, key=lambda r: (algo_key(r["algo"]), r.get("rep", 0)))


@functools.lru_cache(maxsize=None)
def config(var):
    """A variable of tools/testbed/config.sh."""
    return subprocess.run(["bash", "-c", f"source {ROOT}/tools/testbed/config.sh; echo ${var}"],
                          capture_output=True, text=True, check=True).stdout.strip()


def load_scenarios(directory, names=()):
    """The scenarios of `directory` (every *.json), or only those named; each with its
    file's path relative to the repository (the guest runs there)."""
    files = sorted(glob.glob(os.path.join(directory, "*.json")))
    scs = []
    for f in files:
        with open(f) as fd:
            scs.append(dict(json.load(fd), file=os.path.relpath(f, ROOT)))
    if names:
        missing = set(names) - {s["name"] for s in scs}
        if missing:
            sys.exit(f"error: no scenario named {', '.join(sorted(missing))} in {directory}")
        scs = [s for s in scs if s["name"] in names]
    return scs


def fmt(v, spec="{:.0f}"):
    return "-" if v is None else spec.format(v)


def median_range(ok, k, spec="{:.0f}"):
    """Runs' `k` as "median (min-max)", the median alone for one run, "-" for none."""
    xs = sorted(r[k] for r in ok if r.get(k) is not None)
    if not xs:
        return "-"
    m = spec.format(xs[len(xs) // 2])
    return m if len(xs) == 1 else f"{m} ({spec.format(xs[0])}-{spec.format(xs[-1])})"
