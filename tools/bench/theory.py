# SPDX-License-Identifier: GPL-2.0
"""What theory predicts for patched TIMELY, to hold the bench's runs against: Theorem 5 of
"ECN or Delay" (Zhu et al., CoNEXT'16), N flows sharing a link of capacity C converge to

    RTT* = RTT_ref (1 + N delta / (beta' C))

with beta' the patch's multiplicative constant (`patched_beta_ppm`), delta the additive step
and RTT_ref T_low unless `rtt_ref_us` sets it."""
import re

from netbench import payload_per_frame  # the capacity netbench counts utilization against

# The module's defaults (rust/tcp_timely.rs), for what a parameter string leaves out.
DEFAULT_T_LOW_US = 50
DEFAULT_DELTA_KBPS = 10_000
DEFAULT_BETA_PPM = 8000


def timely_param(params, name, default):
    """The value of `name=N` in a module parameter string, or `default`."""
    m = re.search(rf"(?:^|\s){name}=(\d+)", params)
    return int(m.group(1)) if m else default


def theorem5_constants(params):
    """Theorem 5's constants from TIMELY's module parameters: RTT_ref in us, delta in
    bit/s, beta'."""
    t_low = timely_param(params, "t_low_us", DEFAULT_T_LOW_US)
    rtt_ref = timely_param(params, "rtt_ref_us", 0) or t_low
    delta_bps = timely_param(params, "delta_kbps", DEFAULT_DELTA_KBPS) * 1000
    beta = timely_param(params, "patched_beta_ppm", DEFAULT_BETA_PPM) / 1e6
    return rtt_ref, delta_bps, beta


def payload_capacity_bps(sc):
    """The scenario's bottleneck in payload bit/s (C of the theorem)."""
    return sc["rate_mbit"] * 1e6 * payload_per_frame(sc)


def theorem5_rtt_us(rtt_ref_us, n, delta_bps, beta, cap_bps):
    """RTT* of N flows sharing cap_bps."""
    return rtt_ref_us * (1 + n * delta_bps / (beta * cap_bps))


def total_rate_range_mbps(r):
    """The smallest and largest sum of the flows' pacing rates (`ss`) over the
    measurement window, from the sampling rounds that saw every measured flow: a range
    of a tenth of C or more is a cycle around the theorem's point, not the point."""
    lo, hi = r.get("window_s") or (0, float("inf"))
    rounds = {}
    for x in r.get("samples", []):
        if lo <= x["t"] <= hi and x.get("pacing_bps"):
            rounds.setdefault(x["t"], {})[x["flow"]] = x["pacing_bps"]
    n = len(r.get("per_flow_mbps") or [])
    sums = [sum(v.values()) / 1e6 for v in rounds.values() if len(v) == n]
    return (min(sums), max(sums)) if sums else None


def theorem5_runs(rs):
    """The runs the theorem speaks of: patched TIMELY's long flows sharing a full link.
    Runs whose measured flows use less than 90% of it (flows ended early, a stalled flow)
    are left out, and so are workloads of short flows."""
    return [r for r in rs if r.get("ok") and r["algo"].split("+")[0] == "timely_patched"
            and r.get("ctl_rtt_p50_us") and r.get("per_flow_mbps") and "fct" not in r
            and (r.get("util_pct") or 0) >= 90]


def theorem5_check(r, rtt_ref, delta_bps, beta, cap_bps):
    """One run against the theorem, on the RTT the controller acts on (its completion
    RTT's median), with the queue as RTT* less the idle RTT: N, RTT* predicted, the queue
    predicted and measured (us), the deviation of the queue in % (None without a
    predicted queue) and the flows' total rate range."""
    n = len(r["per_flow_mbps"])
    pred = theorem5_rtt_us(rtt_ref, n, delta_bps, beta, cap_bps)
    base = r.get("idle_rtt_us") or 0
    q_pred, q_meas = pred - base, r["ctl_rtt_p50_us"] - base
    dev = 100 * (q_meas - q_pred) / q_pred if q_pred > 0 else None
    return {"n": n, "rtt_pred_us": pred, "queue_pred_us": q_pred, "queue_meas_us": q_meas,
            "queue_dev_pct": dev, "total_rate_mbps": total_rate_range_mbps(r)}
