#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Writes the hand-made seeds corpus/<target>/seed-*: realistic runs encoded in the byte
format the targets decode with src/lib.rs (Input), so fuzzing starts from the project's parameter sets and
from ACK streams that visit every zone. The rest of each corpus is what `make fuzz-cmin`
kept from fuzzing runs. Rerun after changing the input format: python3 seeds.py"""

import os
import struct

HERE = os.path.dirname(os.path.abspath(__file__))
U32_MAX, U64_MAX = 2**32 - 1, 2**64 - 1
U32_EDGES = {0: 0, 1: 1, 2: 2, U32_MAX: 3, U32_MAX - 1: 4, 2**31 - 1: 5, 2**31: 6, 2**22: 7}


def u8(v):
    return bytes([v & 0xFF])


def u32(v):
    if v in U32_EDGES:
        return u8(U32_EDGES[v])
    if v < 256:
        return u8(8) + u8(v)
    if v < 65536:
        return u8(11) + struct.pack("<H", v)
    return u8(13) + struct.pack("<I", v)


def u64(v):
    if v == 0:
        return u8(0)
    if v <= U32_MAX:
        return u8(5) + u32(v)
    return u8(4) + struct.pack("<Q", v)


def forward(dt):
    """Input::clock stepping forward by dt."""
    if dt == 0:
        return u8(0)
    if dt < 256:
        return u8(10) + u8(dt)
    if dt < 65536:
        return u8(6) + struct.pack("<H", dt)
    return u8(5) + u64(dt)


def rtt(v):
    """Input::rtt_sample: -1 (no sample) or a value in 0..=u32::MAX."""
    return u8(0) if v < 0 else u8(15) + u32(v)


PAPER, P1G, P100M = 0, 1, 2
T_LOW = {PAPER: 50, P1G: 500, P100M: 5000}


def preset(which):
    return u8(which) + u32(0) + u8(15)  # the preset, no field replaced


def timely(which, events, mss=1448, others=0):
    out = preset(which) + u32(mss) + u64(0) + u32(others) + u8(0)  # no link speed
    for e in events:
        kind = e[0]
        if kind == "ack":  # ("ack", dt, packets, rtt, delayed, app_limited)
            _, dt, pkts, sample, delayed, app = e
            out += u8(0) + forward(dt) + u8(1) + u8(pkts) + rtt(sample)
            out += u8(int(delayed) | int(app) << 1)
        elif kind == "tx":  # ("tx", dt)
            out += u8(10) + forward(e[1])
        elif kind == "loss":
            out += u8(12)
        elif kind == "mss":
            out += u8(14) + u32(e[1])
        elif kind == "init":
            out += u8(15) + u8(0) + u32(e[1])
        elif kind == "reload":  # ("reload", preset): the module loaded again
            out += u8(15) + u8(1) + preset(e[1]) + u32(1448) + u64(0) + u32(0)
    return out


def acks(n, dt, rtt_of, pkts=2, **kw):
    return [("ack", dt, pkts, rtt_of(k), kw.get("delayed", False), kw.get("app", False))
            for k in range(n)]


def timely_seeds():
    s = {}
    # 10 Gbit/s, RTT below T_low: additive increase every 16 KB.
    s["paper-low-rtt"] = timely(PAPER, acks(120, 3, lambda k: 30))
    # RTT climbing through the gradient zone past T_high, then draining: decrease, HAI.
    s["paper-queue-builds-and-drains"] = timely(
        PAPER, acks(100, 3, lambda k: 60 + 6 * k) + acks(100, 3, lambda k: max(60, 660 - 6 * k)))
    # 1 Gbit/s flow, noisy RTT around T_low..T_high, a loss, application-limited stretch.
    s["1g-noisy-loss-app-limited"] = timely(
        P1G, acks(80, 30, lambda k: 700 + (k * 37) % 900) + [("loss",)]
        + acks(60, 60, lambda k: 800, app=True) + acks(40, 30, lambda k: 6000))
    # 100 Mbit/s: no samples (-1), maybe-delayed ACKs, idle gaps, an MSS change, re-init.
    s["100m-idle-delayed-mss"] = timely(
        P100M, acks(20, 120, lambda k: -1) + acks(30, 120, lambda k: 45000, delayed=True)
        + acks(40, 120, lambda k: 6000) + [("tx", 400000)] + acks(40, 120, lambda k: 52000)
        + [("mss", 536)] + acks(40, 120, lambda k: 5200) + [("init", 3)]
        + acks(40, 120, lambda k: 4000) + [("reload", PAPER)] + acks(40, 3, lambda k: 100))
    # Extreme samples: 0, u32::MAX, and a clock that jumps.
    s["paper-absurd-samples"] = timely(
        PAPER, acks(30, 3, lambda k: [0, U32_MAX, 10_000_001, 1][k % 4])
        + [("tx", 2**40)] + acks(30, 0, lambda k: 100))
    return s


def params_seeds():
    return {
        # No link speed (u8(0)), then the MSS.
        "paper": preset(PAPER) + u8(0) + u32(1448),
        "1g": preset(P1G) + u8(0) + u32(1448),
        "100m-floor-raised": preset(P100M) + u8(0) + u32(1448) + u32(3),
        # max_rate_mbps=0 (C from the link, the module's default) on a 1 Gbit/s link.
        "paper-link-1g": u8(PAPER) + u32(0) + u8(9) + u8(1) + u32(1000) + u32(1448),
        # t_high_us=50 <= t_low_us: rejected, names t_high_us.
        "paper-bad-t-high": u8(PAPER) + u32(50) + u8(1),
        # max_rate_mbps=400001: rejected.
        "paper-bad-max-rate": u8(PAPER) + u32(400001) + u8(9),
    }


def reno_seeds():
    def window(cwnd, ssthresh, credit, clamp):
        return u32(cwnd) + u32(ssthresh) + u32(credit) + u32(clamp)

    def ack(n, limited=True):
        return u8(0) + u8(1) + u8(n) + u8(1 if limited else 0)

    slow_start = window(10, 2**31 - 1, 0, 10000) + ack(1) * 40
    return {
        "slow-start-loss-avoidance-undo": slow_start + u8(5) + u8(0) + ack(2) * 60 + u8(6) + ack(3) * 20,
        "timeout-to-one": window(64, 32, 5, 10000) + ack(1) * 10 + u8(5) + u8(1) + ack(1) * 30,
        "clamped": window(99, 1000, 0, 100) + ack(50) + u8(7) + u32(20) + ack(5) * 5,
        "idle-not-limited": window(10, 5, 0, 10000) + ack(100, False) * 3,
    }


def dctcp_seeds():
    def flow(g, alpha, una, nxt, dlv, ce, rcv, cwnd):
        return (u32(g) + u32(1024) + u32(100) + u32(10) + u32(1000)
                + u32(una) + u32(nxt) + u32(dlv) + u32(ce) + u32(alpha) + u32(rcv) + u32(cwnd))

    def ack(una_step, nxt_step, delivered, marked_shift):
        # marked = delivered >> shift (shift 0..5), via the `n` branch of the CE counter.
        return (u8(0) + u8(2) + u8(una_step) + u8(2) + u8(nxt_step) + u8(delivered)
                + u8(1) + u8(2 + marked_shift))

    half_marked = flow(4, 1024, 1000, 5000, 7, 0, 42, 100)
    half_marked += (ack(200, 200, 10, 1) * 30 + u8(4) + u8(1) + ack(200, 200, 10, 5) * 20
                    + u8(5) + u8(1) + u8(6))
    receiver = flow(4, 0, 0, 0, 0, 0, 100, 10)
    for k in range(20):
        receiver += u8(7) + u8(k % 3 == 0) + u32(100 + 1448 * k)
    wrap = flow(10, 0, U32_MAX - 10, U32_MAX - 5, U32_MAX - 1, U32_MAX, 0, 2**22)
    wrap += ack(20, 30, 5, 0) * 10 + u8(4) + u8(0) + u32(2**22 + 1) + u8(4) + u8(1)
    return {"half-marked-ece-loss-undo": half_marked, "receiver-ce-changes": receiver,
            "sequence-wrap-big-window": wrap}


def fixed_seeds():
    def call(a, b, d):
        return u64(a) + u64(b) + u64(d)

    return {
        "decrease": call(10_000_000_000, 600_000, 1_000_000),
        "high-rtt-excess": call(1_000_000, 500, 1000),
        "delivery-rate": call(16384 * 8, 1_000_000, 262),
        "divide-by-zero": call(7, 3, 0),
        "saturates": call(U64_MAX, U64_MAX, 1),
    }


def dx_seeds():
    DEFAULT, HARDWARE, RAW = 0, 1, 2
    SW, HW, RTT = 2, 0, 1  # Input::u8 % 8 in fuzz_targets/dx.rs: 0 Hardware, 1 Rtt, else Software

    def load(preset, field=None, value=0, offset=123_456_789, cwnd=10):
        # A preset, one field replaced (0..4) or none (7); the flow's OWD offset and window;
        # then one call of the pure next_cwnd_pkts.
        out = u8(preset) + u32(value) + u8(7 if field is None else field)
        return out + u32(offset) + u32(cwnd) + u32(50) + u32(50) + u32(30_000) + u32(100_000)

    def ab(v, scale):
        """Two bytes whose product times scale is about v."""
        k = min(255, max(0, round((v / scale) ** 0.5)))
        return u8(k) + u8(k)

    def sample(source, rtt_above_min, owd_above_base):
        # rtt: max(min RTT, 1 us) + a b 16 (the first sample sets the minimum from 1 us);
        # owd: base + a b 8.
        return u8(0) + u8(source) + u8(7) + ab(rtt_above_min, 16) + u8(7) + ab(owd_above_base, 8)

    def rtt_sample(rtt_above_min):
        return u8(0) + u8(RTT) + u8(7) + ab(rtt_above_min, 16) + u8(1)

    def run(source, n, queue_ns):
        # n samples at min RTT + queue, OWD base + queue (queue in steps of 256 ns).
        return u8(9) + u8(source) + u8(n) + u8(queue_ns // 256)

    def round_end(cwnd=None):
        return u8(10) + (u8(1) if cwnd is None else u8(0) + u32(cwnd))

    def rounds(n, with_samples, source=SW):
        return u8(14) + u8(n) + u8(source) + u8(int(with_samples))

    # DX's cycle at 10 Gbit/s: the queue builds by a packet per round up to the headroom
    # (20 us), a decrease drains it, again; then a slow-start-like jump.
    cycles = load(DEFAULT) + sample(SW, 49_000, 0)
    for _ in range(3):
        for q in range(0, 26_000, 2_500):
            cycles += run(SW, 40, q) + round_end()
    cycles += round_end(200) + run(SW, 60, 60_000) + round_end() + run(SW, 60, 0) + round_end()

    # NIC stamps, 3-round expiry: the path lengthens by 30 us and the minimum follows it
    # (runs are relative to the current minimum, so each later run is 30 us longer still);
    # then rounds of one fixed sample, which the expiry turns into the minimum, and empty
    # rounds.
    expiry = load(HARDWARE, 4, 3) + sample(HW, 29_000, 0) + round_end()
    for _ in range(5):
        expiry += run(HW, 20, 30_000) + round_end()
    expiry += rounds(32, True, HW) + rounds(32, False, HW)

    # Absurd samples around a flow: RTT 0, u32::MAX, the bound and just above, OWDs at the
    # far side of the circle and one RTT off either way, then a clock step absorbed.
    absurd = load(DEFAULT) + sample(SW, 49_000, 0)
    for rtt_branch in [0, 1, 2, 3]:
        absurd += u8(0) + u8(SW) + u8(rtt_branch) + u8(7) + u8(0) + u8(0)
    for owd_branch in [1, 2, 3, 4, 5, 0]:
        absurd += u8(0) + u8(SW) + u8(7) + ab(20_000, 16) + u8(owd_branch)
        if owd_branch == 0:
            absurd += u32(2**31 + 12345)
    absurd += u8(0) + u8(SW) + u8(4) + u8(0) + u8(1) + round_end()

    # The kernel's RTT as the signal (owd = rtt), then a switch to software stamps.
    switch = load(DEFAULT, cwnd=40) + rtt_sample(79_000)
    for q in [0, 10_000, 30_000, 50_000, 5_000, 0]:
        switch += rtt_sample(q) + rtt_sample(q) + round_end()
    switch += sample(SW, 49_000, 0) + run(SW, 30, 25_000) + round_end()

    # Back-to-back calibration: a TX burst of 10 stamped together at 10 Gbit/s, RX stamps
    # with gaps, a step back of more than 1 ms, an unknown link rate.
    cal = load(DEFAULT)
    cal += u8(12) + u8(0) + u8(0) + u32(1_000_000) + u8(1) + u8(2)
    cal += (u8(12) + u8(0) + u8(2) + u8(0) + u8(1) + u8(2)) * 10
    cal += u8(12) + u8(1) + u8(0) + u32(4_000_000_000) + u8(1) + u8(2)
    for gap in [40, 38, 1, 0, 200]:
        cal += u8(12) + u8(1) + u8(2) + u8(gap) + u8(1) + u8(2)
    cal += u8(12) + u8(0) + u8(1) + u32(1_500_000) + u8(1) + u8(2)
    cal += u8(12) + u8(0) + u8(2) + u8(0) + u8(1) + u8(1)

    # Rejected sets (each names its parameter), then a valid one.
    invalid = u8(RAW) + u32(0) + u32(2) + u32(500_000) + u32(0) + u32(0)
    invalid += u8(DEFAULT) + u32(30_000) + u8(3)
    invalid += u8(DEFAULT) + u32(1_000_001) + u8(2)
    invalid += u8(HARDWARE) + u32(10_001) + u8(4)
    invalid += load(DEFAULT) + sample(SW, 49_000, 0) + run(SW, 10, 40_000) + round_end(3)

    return {"default-queue-cycles": cycles, "hardware-path-change-expiry": expiry,
            "absurd-samples-clock-step": absurd, "kernel-rtt-then-stamps": switch,
            "calibration-batches": cal, "invalid-params": invalid}


def rc3_seeds():
    CUMULATIVE, ADDITIVE = 0, 1

    def levels(reading, values):
        # Each value as an Input::u32 (branch 0 of the target's choice).
        return u8(reading) + u8(len(values)) + b"".join(u8(0) + u32(v) for v in values)

    def dscp(values):
        return b"".join(u8(v) for v in values)

    def append(n, length):
        return (u8(0) + u32(length)) * n

    def primary(k):
        return u8(2) + u8(k)

    walk = u8(3)
    # The thesis's example (66 packets of 1460 bytes, the primary sends 4), both readings.
    thesis = levels(CUMULATIVE, [40, 400, 4000]) + dscp([1, 1, 1]) + u32(1460) + u32(1000)
    thesis += append(66, 1460) + primary(4) + walk + walk
    additive = levels(ADDITIVE, [40, 400, 4000]) + dscp([3, 7, 11]) + u32(1460) + u32(2**32 - 50_000)
    additive += append(100, 1460) + walk + append(600, 1460) + primary(7) + walk
    # TSO skbs of 64 KB over the level bounds, appended between walks.
    tso = levels(CUMULATIVE, [10, 100, 1000, 10000]) + dscp([3, 7, 11, 15]) + u32(1448) + u32(0)
    for _ in range(4):
        tso += append(20, 65160) + walk + primary(3)
    invalid = levels(CUMULATIVE, [400, 40]) + dscp([63, 64, 1]) + u32(1) + u32(0) + append(3, 1) + walk
    return {"thesis-example": thesis, "additive-wrap": additive, "tso-bursts": tso,
            "invalid-list": invalid}


def main():
    for target, seeds in [("timely", timely_seeds()), ("timely_params", params_seeds()),
                          ("reno", reno_seeds()), ("dctcp", dctcp_seeds()),
                          ("fixed", fixed_seeds()), ("dx", dx_seeds()),
                          ("rc3", rc3_seeds())]:
        d = os.path.join(HERE, "corpus", target)
        os.makedirs(d, exist_ok=True)
        for name, data in seeds.items():
            with open(os.path.join(d, "seed-" + name), "wb") as f:
                f.write(data)


if __name__ == "__main__":
    main()
