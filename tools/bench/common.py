# SPDX-License-Identifier: GPL-2.0
"""What the bench's parts share: where things are, the scenarios, the algorithms' order,
the testbed's settings (tools/testbed/config.sh), the archive of the runs and the tables'
number formats."""
import functools
import glob
import json
import lzma
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
    own). The plots go next to the report, which links them as plots/<name>.png; so does
    the archive of the runs (runs/<scenario>.json.xz, kept in git) unless `archive_dir`
    says where (a report written elsewhere from the repository's archive)."""
    scenarios: str = os.path.join(ROOT, "tools", "bench", "scenarios")
    raw: str = os.path.join(ROOT, "results", "raw")
    report: str = os.path.join(ROOT, "results", "BENCH.md")
    archive_dir: str = None

    @property
    def plots(self):
        return os.path.join(os.path.dirname(self.report), "plots")

    @property
    def archive(self):
        return self.archive_dir or os.path.join(os.path.dirname(self.report), "runs")


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


# The archive: every run of a scenario, raw as netbench.py and run.py wrote it (samples
# included), in one xz-compressed JSON file, {"meta": <raw>/meta.json, "runs": [...]};
# <raw> itself is not kept in git, the archive is, so the report can be derived again.
def archive_path(paths, name):
    return os.path.join(paths.archive, f"{name}.json.xz")


def read_archive(path):
    with lzma.open(path, "rt") as f:
        return json.load(f)


def raw_runs(raw, name):
    """The runs of scenario `name` in the raw directory, with the newest file's mtime."""
    runs, newest = [], 0.0
    for path in sorted(glob.glob(os.path.join(raw, name, "*.json"))):
        with open(path) as f:
            runs.append(json.load(f))
        newest = max(newest, os.path.getmtime(path))
    return runs, newest


def pack_runs(paths, names=None):
    """Writes the archive of each scenario named (every scenario with runs in paths.raw if
    None) whose raw runs are newer than its archive: the archived runs, each replaced by
    the raw run of the same algorithm and repetition. Returns the names repacked."""
    if names is None:
        names = sorted(os.path.basename(os.path.dirname(d))
                       for d in glob.glob(os.path.join(paths.raw, "*", "")))
    meta_path = os.path.join(paths.raw, "meta.json")
    meta = {}
    if os.path.exists(meta_path):
        with open(meta_path) as f:
            meta = json.load(f)
    packed = []
    for name in names:
        runs, newest = raw_runs(paths.raw, name)
        out = archive_path(paths, name)
        # Equal times: repacked (a file system may stamp whole seconds only).
        if not runs or (os.path.exists(out) and os.path.getmtime(out) > newest):
            continue
        old = read_archive(out) if os.path.exists(out) else {"meta": {}, "runs": []}
        by_run = {(r["algo"], r.get("rep", 0)): r for r in old["runs"]}
        by_run.update({(r["algo"], r.get("rep", 0)): r for r in runs})
        os.makedirs(paths.archive, exist_ok=True)
        tmp = out + ".tmp"
        with lzma.open(tmp, "wt") as f:
            json.dump({"meta": meta or old["meta"], "runs": sorted_runs(by_run.values())}, f,
                      separators=(",", ":"))
        os.replace(tmp, out)
        packed.append(name)
    return packed


def load_archive(paths):
    """Every archived run by scenario, and the newest meta among the archives (the raw
    directory's meta.json if it has one)."""
    results, metas = {}, []
    for path in sorted(glob.glob(os.path.join(paths.archive, "*.json.xz"))):
        a = read_archive(path)
        for r in a["runs"]:
            results.setdefault(r["scenario"], []).append(r)
        if a.get("meta"):
            metas.append(a["meta"])
    meta_path = os.path.join(paths.raw, "meta.json")
    if os.path.exists(meta_path):
        with open(meta_path) as f:
            return json.load(f), results
    return max(metas, key=lambda m: m.get("date", ""), default=None), results
