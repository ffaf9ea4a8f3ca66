# SPDX-License-Identifier: GPL-2.0
"""The bench's runs: each (scenario, algorithm, repetition) in its own boot of the UML test
kernel (tools/testbed/uml-run.sh), running tools/bench/netbench.py there, scheduled on the
host's CPUs; the results land in <raw>/<scenario>/<algo>.<rep>.json, with <raw>/meta.json
naming the commit, kernel and TIMELY parameters, and are then packed into the scenario's
archive (results/runs/<scenario>.json.xz, kept in git; common.pack_runs)."""
import datetime
import glob
import json
import os
import subprocess
import time
from concurrent.futures import ThreadPoolExecutor, wait

from common import (ROOT, archive_path, config, fmt, load_scenarios, pack_runs,
                    read_archive)


def raw_path(raw, sc, algo, rep):
    # A mixed run ("timely/cubic") is one file, not a directory.
    return os.path.join(raw, sc["name"], f"{algo.replace('/', '-vs-')}.{rep}.json")


def ok_result(path):
    try:
        with open(path) as f:
            return json.load(f).get("ok", False)
    except (OSError, ValueError):
        return False


# The most tcp_rc3.ko's line_rate_mbps takes (rust/core/src/rc3.rs): +rc3burst's.
RC3_BURST_MBPS = 1_600_000


def rc3_insmod(algo, sc):
    """The guest's command that loads RC3's policy for ALGO in scenario SC: the module's
    levels (+rc3: one DSCP for every level; +rc3lv: each level at its own DSCP,
    netbench.split_algo), its copies paced at the scenario's bottleneck rate, the line
    rate of its one-bottleneck path (patch rc3/0012); +rc3burst: at the most the module
    takes, so that neither budget nor spacing binds (the loop before that patch)."""
    rate = RC3_BURST_MBPS if "+rc3burst" in algo else int(sc["rate_mbit"])
    params = (" dscp_map=1" if "+rc3lv" in algo else "") + f" line_rate_mbps={rate}"
    return "insmod rust/tcp_rc3.ko" + params


def run_job(raw, job, timely_params, prov):
    sc, algo, rep, clock = job
    out = raw_path(raw, sc, algo, rep)
    os.makedirs(os.path.dirname(out), exist_ok=True)
    if os.path.exists(out):
        os.remove(out)
    params = sc.get("timely_params", timely_params)
    dx_params = sc.get("dx_params", config("DX_PARAMS_1G"))
    swift_params = sc.get("swift_params", "")
    if "+ecnshare" in algo:
        # +ecnshare: the delay-based controls answer marks as dctcp does (ecn_share=1, a
        # read-only choice of ops at load: netbench.split_algo).
        params, dx_params, swift_params = (f"{x} ecn_share=1".strip()
                                           for x in (params, dx_params, swift_params))
    rc3 = f" && {rc3_insmod(algo, sc)}" if "+rc3" in algo else ""
    guest = (f"insmod rust/tcp_rust_reno.ko && insmod rust/tcp_timely.ko {params} && "
             f"insmod rust/tcp_dx.ko {dx_params} && insmod rust/tcp_swift.ko {swift_params}{rc3} "
             "|| exit 1; "
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
    it ran. The bench's own outputs (results/) and the documentation are not code."""
    git = ["git", "-C", ROOT]
    commit = subprocess.run(git + ["rev-parse", "--short", "HEAD"],
                            capture_output=True, text=True).stdout.strip()
    changed = subprocess.run(git + ["status", "--porcelain", "--untracked-files=no", "--",
                                    ".", ":(exclude)results", ":(exclude)README.md",
                                    ":(exclude)docs"],
                             capture_output=True, text=True).stdout.strip()
    return {
        "commit": commit + ("-dirty" if changed else ""),
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
    }


def run(paths, names, clock, jobs_at_once, missing):
    """Every run of the scenarios named (all of them if none), on `clock` unless a scenario
    pins its own; with `missing`, only the runs with no successful result yet. Returns the
    exit status: 1 if a run failed."""
    scs = load_scenarios(paths.scenarios, names)
    # A scenario may pin its clock (the normal-clock calibration); the others take `clock`.
    jobs = [(sc, algo, rep, c) for sc in scs for c in [sc.get("clock", clock)]
            for algo in sc["algos"]
            for rep in range(sc.get("repetitions", 1 if c == "simulated" else 3))]
    if missing:
        # Only the runs with no successful result yet (a bench cut short, resumed).
        jobs = [j for j in jobs if not ok_result(raw_path(paths.raw, j[0], j[1], j[2]))]
    timely_params = config("TIMELY_PARAMS_1G")
    os.makedirs(paths.raw, exist_ok=True)
    prov = provenance()  # at the start: the code the runs execute
    meta = {
        **prov,
        "kernel": f"Linux {config('KERNEL_DEB_VERSION')} (linux-source-{config('KERNEL_SERIES')}) "
                  "ARCH=um with patches/series",
        "clock": clock, "timely_params": timely_params,
    }
    with open(os.path.join(paths.raw, "meta.json"), "w") as f:
        json.dump(meta, f)
    # Simulated time does not depend on the host's load, so those runs share the CPUs;
    # normal-clock runs measure real time, so each runs alone, after the others.
    simulated = [j for j in jobs if j[3] == "simulated"]
    normal = [j for j in jobs if j[3] != "simulated"]
    print(f"{len(jobs)} runs: {len(simulated)} on simulated time, {jobs_at_once} at a time; "
          f"{len(normal)} on the normal clock, one at a time", flush=True)
    done = 0
    failed = 0
    with ThreadPoolExecutor(jobs_at_once) as pool, ThreadPoolExecutor(1) as alone:
        sim_futures = [pool.submit(run_job, paths.raw, j, timely_params, prov) for j in simulated]

        def after_simulated(job):
            wait(sim_futures)
            return run_job(paths.raw, job, timely_params, prov)

        futures = sim_futures + [alone.submit(after_simulated, j) for j in normal]
        for fut in futures:
            r = fut.result()
            done += 1
            if r.get("ok"):
                line = (f"ok: {r['mbps']:.0f} Mbit/s ({fmt(r.get('util_payload_pct'), '{:.1f}')}% "
                        f"of its payload capacity), queue p50/p99 "
                        f"{fmt(r.get('queue_p50_us'))}/{fmt(r.get('queue_p99_us'))} us, sRTT p99 "
                        f"{fmt(r['rtt_p99_us'])} us, Jain {fmt(r['jain'], '{:.3f}')}")
            else:
                failed += 1
                line = f"FAILED: {r.get('error', '?')[:200]}"
            print(f"[{done}/{len(jobs)}] {r['scenario']} {r['algo']} #{r['rep']} "
                  f"({r['wall_s']:.0f} s wall): {line}", flush=True)
    print(f"{done - failed} runs ok, {failed} failed")
    packed = pack_runs(paths, sorted({sc["name"] for sc in scs}))
    if packed:
        print(f"packed into {os.path.relpath(paths.archive, ROOT)}/: {', '.join(packed)}")
    return 1 if failed else 0


def resummarize_run(sc, r):
    """A successful run's metrics again from its samples; a run whose samples no longer
    cover the window (a flow without a sample at its end) becomes a failed one."""
    import netbench
    try:
        r.update(netbench.summarize(sc, r))
    except netbench.WindowError as e:
        r.update(ok=False, error=str(e))
        print(f"{sc['name']} {r['algo']} #{r.get('rep', 0)}: FAILED: {e}")


def resummarize(paths, names):
    """The metrics of each successful run, again, from the samples it recorded, with the
    scenario file as it is now (its measurement window); the samples are unchanged. The
    raw directory's runs, then packed; a scenario with none there, its archive's."""
    for sc in load_scenarios(paths.scenarios, names):
        n = 0
        files = sorted(glob.glob(os.path.join(paths.raw, sc["name"], "*.json")))
        for f in files:
            r = json.load(open(f))
            if not r.get("ok"):
                continue
            resummarize_run(sc, r)
            with open(f, "w") as out:
                json.dump(r, out)
            n += 1
        if files:
            pack_runs(paths, [sc["name"]])
        elif os.path.exists(archive_path(paths, sc["name"])):
            # Through the raw directory, so that packing writes the archive back.
            a = read_archive(archive_path(paths, sc["name"]))
            for r in a["runs"]:
                out = raw_path(paths.raw, sc, r["algo"], r.get("rep", 0))
                os.makedirs(os.path.dirname(out), exist_ok=True)
                if r.get("ok"):
                    resummarize_run(sc, r)
                    n += 1
                with open(out, "w") as f:
                    json.dump(r, f)
            pack_runs(paths, [sc["name"]])
        print(f"{sc['name']}: {n} runs resummarized")
    return 0
