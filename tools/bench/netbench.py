#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Run congestion controls through one bottleneck, inside the UML guest.

Builds the three-namespace dumbbell of selftests/lib.sh (cli -> rtr -> srv; the bottleneck
is rtr's egress: an htb at the scenario's rate with a drop-tail FIFO, or RED step ECN
marking at K packets for ECN algorithms such as dctcp; the devices' GSO/TSO/GRO off so the
queue counts packets, though TCP still builds GSO skbs unless a scenario sets gso_max_segs),
starts one iperf3 flow per scheduled flow, and while they run samples every
10 ms: each flow's RTT, cwnd and pacing rate (`ss -ti`'s fields) and the bottleneck backlog
(`tc -s qdisc`'s), read over netlink (tools/bench/nlsample.py). A scenario may add a flow-size
workload (tools/bench/fctflow.py): short flows at Poisson arrivals beside the long ones, reported
as flow completion times by size.
Writes everything, with summary metrics, as JSON.

Two ways to call it:
    netbench.py --scenario tools/bench/scenarios/x.json --algo timely --json out.json
    netbench.py --algos rust_reno,cubic,dctcp --rate-mbit 100 --flows 4 --seconds 5
The second (used by `make demo`) prints a table.
"""
import argparse
import json
import math
import os
import random
import re
import subprocess
import sys
import tempfile
import threading
import time

import nlsample

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
LIB = os.path.join(ROOT, "selftests", "lib.sh")
FCTFLOW = os.path.join(ROOT, "tools", "bench", "fctflow.py")
BULKFLOW = os.path.join(ROOT, "tools", "bench", "bulkflow.py")
SRV = "10.10.2.2"
# A mixed run's second address of the receiver: the flows of mix 1 connect to it.
SRV_MIX1 = "10.10.2.3"
BASE_PORT = 5201
FCT_PORT = 6000
ECN_ALGOS = {"dctcp", "rust_dctcp"}
# Controls that use the delay-stamp option (patches/0009).
STAMP_ALGOS = {"dx", "swift", "timely", "timely_patched"}
SAMPLE_S = 0.01
TCPI_OPT_ECN = 8
# The DS field of mix 1's flows with "class_queues" (CS1).
CLASS_DS_FIELD = "0x20"
# The delay-stamp option's cost on every data segment it rides on, in bytes
# (docs/delay-stamps.md: "The option costs 8 bytes of every data segment").
STAMP_OPTION_BYTES = 8


# Goodput capacity of the bottleneck: TCP payload per Ethernet frame (timestamps on).
def payload_per_frame(sc, mss=None):
    """TCP payload per Ethernet frame at the scenario's MTU (IP and TCP headers with the
    timestamp option: 52 bytes; Ethernet header: 14; the htb counts no more), or, given
    the MSS a control's segments actually carried, that payload per frame_bytes()."""
    mtu = sc.get("mtu", 1500)
    return (mss if mss is not None else mtu - 52) / frame_bytes(sc)


def frame_bytes(sc):
    """Bytes of one full-size frame on the bottleneck as the bench's capacity counts it
    (payload_per_frame()'s denominator): the MTU plus the 14-byte Ethernet header (1514
    at MTU 1500, 9014 at 9000); the htb's rate counts these bytes and no preamble or gap."""
    return sc.get("mtu", 1500) + 14


def queue_delay_us(sc, pkts):
    """The queueing delay of `pkts` packets in the bottleneck's backlog: pkts x
    frame_bytes(sc) (a full frame of the scenario's MTU, IP header to payload plus the
    Ethernet header) x 8 / the link rate. The backlog counts packets, not bytes; the data
    direction's packets are full frames but for a flow's last segment or a SYN/FIN, so
    this is the delay the backlog puts on the next packet, to within a frame."""
    if pkts is None:
        return None
    return round(pkts * frame_bytes(sc) * 8 / sc["rate_mbit"], 1)  # bits / (bits/us)


def base_mss(sc):
    """The MSS of a segment with the timestamp option at the scenario's MTU (1448 at 1500)."""
    return sc.get("mtu", 1500) - 52


def stamp_option_used(algo, r):
    """Whether the run's connections carried the delay-stamp option, and how that is
    known: the sender's count of delay samples (TCPDelayStampSample, recorded where a
    stamp control ran), else the sources of the controller's RTT samples (1 hardware, 2
    software stamps), else from how the harness set it up: the sender offers the option
    on every connection of a run with a stamp control (net.ipv4.tcp_delay_stamps=2) and
    the receiver answers it unless the variant is +rtt."""
    ccs, variant = split_mix(algo)
    if not STAMP_ALGOS & set(ccs):
        return False, "no stamp control in the run: the option is not offered"
    if r.get("stamp_samples") is not None:
        return r["stamp_samples"] > 0, "the sender's TCPDelayStampSample count"
    if r.get("ctl_sources"):
        return bool({1, 2} & set(r["ctl_sources"])), "the controller's RTT sources"
    return not variant.get("rtt"), "the harness's settings (tcp_delay_stamps)"


def run_mss(sc, r):
    """The MSS the run's data segments used, and its source: the median of the flows'
    snd_mss over the measurement window where the samples hold it (runs recorded from
    this field on), else the timestamp MSS less the delay-stamp option's 8 bytes where
    the option was negotiated (stamp_option_used())."""
    lo, hi = r.get("window_s") or (float("-inf"), float("inf"))
    mss = [s["snd_mss"] for s in r.get("samples", []) if s.get("snd_mss") and lo <= s["t"] <= hi]
    if mss:
        return percentile(mss, 50), "snd_mss samples"
    used, how = stamp_option_used(r.get("algo", ""), r)
    return base_mss(sc) - (STAMP_OPTION_BYTES if used else 0), how


def derived_metrics(sc, r):
    """Metrics every control gets alike, from a successful run's summary: the bottleneck
    queue's p50/p99 as queueing delay (queue_delay_us()); the MSS its segments carried;
    its utilization of the payload capacity those segments can carry (the bottleneck's
    rate x MSS / frame bytes), against util_pct's of the timestamp MSS (1448 at 1500);
    and the delay-stamp option's cost: the share of the link's payload capacity the
    option takes from the segments that carry it (0 where none does)."""
    mss, how = run_mss(sc, r)
    cap = sc["rate_mbit"] * payload_per_frame(sc, mss)
    return {
        "queue_p50_us": queue_delay_us(sc, r.get("queue_p50_pkts")),
        "queue_p99_us": queue_delay_us(sc, r.get("queue_p99_pkts")),
        "mss": mss, "mss_source": how,
        "util_payload_pct": round(100 * r["mbps"] / cap, 1) if r.get("mbps") is not None else None,
        "option_cost_pct": round(100 * (base_mss(sc) - mss) / base_mss(sc), 2),
    }


def sh(cmd, check=True, **kw):
    return subprocess.run(["bash", "-c", cmd], check=check, capture_output=True, text=True, **kw)


def lib(cmd):
    return sh(f"source {LIB}; {cmd}")


def percentile(xs, p):
    if not xs:
        return None
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(p / 100 * len(xs)))]


def jain(xs):
    xs = [x for x in xs if x is not None]
    if not xs or sum(xs) == 0:
        return None
    return sum(xs) ** 2 / (len(xs) * sum(x * x for x in xs))


def expand_flows(sc):
    """The scenario's flow groups as a list of (start_s, stop_s)."""
    flows = []
    for g in sc["flows"]:
        flows += [(g.get("start_s", 0.0), g["stop_s"])] * g.get("count", 1)
    return flows


def flow_mix(sc):
    """Each scheduled flow's place in a mixed run ("timely_patched/dctcp"): the index of
    its control, the flow group's `mix` (0 by default)."""
    mix = []
    for g in sc["flows"]:
        mix += [g.get("mix", 0)] * g.get("count", 1)
    return mix


def split_mix(algo):
    """"timely_patched/dctcp+k20" -> (["timely_patched", "dctcp"], {"ecn_k": 20}): the
    controls of a mixed run, flow group `mix` i running the i-th, and the variants of
    all parts (each applies to the whole run)."""
    ccs, variant = [], {}
    for part in algo.split("/"):
        cc, v = split_algo(part)
        ccs.append(cc)
        variant.update(v)
    return ccs, variant


def sender_namespaces(sc):
    """The sender namespaces of a scenario: the dumbbell's cli, and with "senders": N,
    N - 1 more (cli1, ...), each with its own device c0 and its own link to the router,
    so that a control that counts its flows per namespace and device (TIMELY's fair-share
    start) counts only its own."""
    return ["cli"] + [f"cli{i}" for i in range(1, int(sc.get("senders", 1)))]


def sender_gateway(i):
    """The router's address on sender i's link: the dumbbell's 10.10.1.2 for cli, and
    10.10.(100 + i).2 for the others (sender at .1 on its /24, as cli is on 10.10.1.0/24)."""
    return "10.10.1.2" if i == 0 else f"10.10.{100 + i}.2"


def sender_subnet(i):
    return "10.10.1.0/24" if i == 0 else f"10.10.{100 + i}.0/24"


def flow_sender(sc, i):
    """The index of the sender namespace flow i runs from: round robin."""
    return i % len(sender_namespaces(sc))


def extra_senders_commands(sc):
    """The commands that attach the scenario's extra sender namespaces to the dumbbell's
    router (after setup_dumbbell, which builds cli, rtr and srv): each namespace cliI
    with a veth c0 (10.10.(100 + I).1/24) whose peer rcI (10.10.(100 + I).2/24) is in rtr,
    set up as setup_dumbbell sets up cli and its link (IPv6 off, offloads off, the MTU,
    ECN asked for, the delay-stamp option answered, default route via the router). The
    router forwards already, and srv's default route leads back through it."""
    mtu = sc.get("mtu", 1500)
    cmds = []
    for i, ns in enumerate(sender_namespaces(sc)):
        if i == 0:
            continue
        me, gw = sender_gateway(i)[:-1] + "1", sender_gateway(i)
        cmds += [f"ip netns add {ns}",
                 f"ip netns exec {ns} sysctl -qw net.ipv6.conf.default.disable_ipv6=1 "
                 "net.ipv6.conf.all.disable_ipv6=1",
                 f"ip link add c0 netns {ns} type veth peer name rc{i} netns rtr",
                 f"ip -n {ns} addr add {me}/24 dev c0",
                 f"ip -n rtr addr add {gw}/24 dev rc{i}",
                 f"ip -n {ns} link set lo up",
                 f"ip netns exec {ns} ethtool -K c0 gso off tso off gro off",
                 f"ip netns exec rtr ethtool -K rc{i} gso off tso off gro off",
                 f"ip -n {ns} link set c0 mtu {mtu} up",
                 f"ip -n rtr link set rc{i} mtu {mtu} up",
                 f"ip -n {ns} route add default via {gw}",
                 f"ip netns exec {ns} sysctl -qw net.ipv4.tcp_ecn=1",
                 f"ip netns exec {ns} sysctl -qw net.ipv4.tcp_delay_stamps=1"]
    return cmds


def extra_senders_cleanup(sc):
    """Commands that remove the extra sender namespaces (lib.sh's ns_cleanup knows only
    cli, rtr and srv), their processes first."""
    return [f"ip netns pids {ns} 2>/dev/null | xargs -r kill -KILL; ip netns del {ns} 2>/dev/null"
            for ns in sender_namespaces(sc)[1:]]


def sender_commands(sc, variant, ccs):
    """The per-sender settings of a run, for every sender namespace alike: fq at its
    egress (+fq), ECN not asked (+noecn), random loss at its egress (+lossP), the
    scenario's "cli" sysctls, the initial window (the route's initcwnd and, at the
    receiver, initrwnd for the sender's subnet), RC3 on (+rc3) and the delay-stamp
    option offered on every connection (a run with a stamp control)."""
    cmds = []
    initcwnd = variant.get("init_cwnd") or sc.get("initcwnd")
    initrwnd = variant.get("init_cwnd") or sc.get("initrwnd")
    for i, ns in enumerate(sender_namespaces(sc)):
        if variant.get("fq"):
            cmds.append(f"tc -n {ns} qdisc replace dev c0 root fq")
        if variant.get("no_ecn"):
            cmds.append(f"ip netns exec {ns} sysctl -qw net.ipv4.tcp_ecn=0")
        if variant.get("loss_pct"):
            cmds.append(f"tc -n {ns} qdisc replace dev c0 root netem loss "
                        f"{variant['loss_pct']}% limit 100000")
        values = sc.get("sysctls", {}).get("cli")
        if values:
            sets = " ".join(f"{k}='{v}'" for k, v in values.items())
            cmds.append(f"ip netns exec {ns} sysctl -qw {sets}")
        if initcwnd:
            cmds.append(f"ip -n {ns} route replace default via {sender_gateway(i)} "
                        f"initcwnd {initcwnd}")
        if initrwnd:
            cmds.append(f"ip -n srv route replace {sender_subnet(i)} via 10.10.2.1 "
                        f"initrwnd {initrwnd}")
        if variant.get("rc3"):
            cmds.append(f"ip netns exec {ns} sysctl -qw net.ipv4.tcp_rc3=1")
        if STAMP_ALGOS & set(ccs):
            cmds.append(f"ip netns exec {ns} sysctl -qw net.ipv4.tcp_delay_stamps=2")
    return cmds


BOTTLENECK = ("r1", 0x00100000)  # rtr's device towards srv, qdisc 10: (handles are hex)
# With "class_queues": the htb root, whose backlog is both classes' queues together.
BOTTLENECK_CLASSES = ("r1", 0x00010000)


class Sampler(threading.Thread):
    """Samples flows (the fields of `ss -ti`) and the bottleneck queue (`tc -s qdisc`'s
    backlog) every SAMPLE_S until stopped, over netlink: spawning ss and tc 200 times a
    second was most of a run's wall time in the guest."""

    def __init__(self, t0, bottleneck=BOTTLENECK, senders=("cli",)):
        super().__init__()
        self.t0, self.stop, self.flows, self.queue = t0, threading.Event(), [], []
        self.bottleneck = bottleneck
        self.senders = list(senders)
        self.error = None

    def run(self):
        try:
            diags = [nlsample.NetlinkSampler(tcp_netns=ns, qdisc_netns="rtr")
                     for ns in self.senders]
            while not self.stop.is_set():
                self.sample(diags)
                self.stop.wait(SAMPLE_S)
            for diag in diags:
                diag.close()
        except OSError as e:
            self.error = f"sampler: {e}"

    def sample(self, diags):
        t = round(time.monotonic() - self.t0, 3)
        socks = [(k, so) for k, diag in enumerate(diags) for so in diag.tcp_established()]
        for k, so in socks:
            if "rtt_us" not in so:
                continue
            # flow: the schedule entry (its server port); conn: the connection (its port,
            # offset by 65536 per sender namespace, whose ports may coincide).
            s = {"t": t, "flow": so["dport"] - BASE_PORT, "conn": so["sport"] + 65536 * k,
                 **{k: so[k] for k in ("rtt_us", "cwnd", "pacing_bps", "bytes_acked")},
                 "snd_mss": so.get("snd_mss"),
                 "ecn": bool(so.get("options", 0) & TCPI_OPT_ECN),
                 **controller_rtt(so)}
            if so["dport"] == FCT_PORT:
                s["fct"] = True  # a workload flow: its RTT counts, it has no time series
                self.flows.append(s)
            # iperf3's control connection shares the port; it carries a few bytes.
            elif s["bytes_acked"] > 100_000:
                self.flows.append(s)
        backlog = diags[0].qdisc_backlog(*self.bottleneck)
        if backlog is not None:
            self.queue.append({"t": t, "pkts": backlog})


def same_control(used, asked, variant):
    """Whether a flow ran the control it was asked to. With +ecnshare the ops need ECN and
    fall back to their ECN-less sibling ("swift-reno", "dx-reno", "timely-reno") where it
    was not negotiated, for example after a SYN dropped at a full queue (its retransmission
    carries no ECN, RFC 3168 6.1.1.1): the module's own answer, run and counted
    (`ecn_fallback_flows`), not a harness error."""
    return used == asked or (bool(variant.get("ecn_share")) and used == f"{asked}-reno")


def controller_rtt(so):
    """The RTT the controller itself acts on, and the source of its samples (1 hardware
    stamps, 2 software stamps, 3 the kernel's RTT), for this project's controllers:
    TIMELY's last completion RTT; dx's base RTT plus its last round's queuing delay;
    Swift's last fabric delay (docs/swift.md, "What ss -ti shows")."""
    cc = so.get("cc", "")
    if "cc_min_rtt_us" not in so or not (cc.startswith(("timely", "swift")) or cc == "dx"):
        return {}
    rtt = so["cc_min_rtt_us"]
    if cc == "dx":
        rtt += so["cc_cwnd_gain"] / 256
    return {"ctl_rtt_us": rtt, "ctl_source": so["cc_pacing_gain"] // 256}


def split_algo(algo):
    """"cubic+rc3" -> ("cubic", {"rc3": True}): the congestion control, and its variant:
    +rc3   RC3's low-priority loop beside it (patches rc3/, rust/tcp_rc3.ko loaded with its
           defaults: the thesis's levels of 40, 400 and 4000 packets read as cumulative
           bounds, every level at one DSCP, Lower-Effort): one-level RC3, a labelled variant;
    +rc3lv RC3 as the thesis runs it: the same levels, each at its own DSCP (dscp_map=1:
           level n at DSCP 4n - 1), served in strict priority at the bottleneck;
           both pace the copies at the scenario's bottleneck rate, one BDP per walk;
    +rc3burst  as +rc3 with the loop's line rate at the most the module takes (1.6
           Tbit/s): no budget or spacing in effect, the loop as before patch rc3/0012;
    +hw    the delay-stamp option on the NICs' hardware stamps (veth's emulated clocks,
           patch 0018); +hwN adds N ns of timestamp noise (standard deviation) at the
           receiver's NIC, so the one-way delay carries that noise (DX's Fig 11);
    +rtt   the receiver refuses the delay-stamp option (dx's RTT fallback; TIMELY on the
           kernel's RTT);
    +calN  DX's back-to-back calibration of the software stamps at N Mbit/s at both ends
           (net.ipv4.tcp_delay_stamps_calibrate, patch 0020);
    +jitN  RTT noise: each packet of the reverse path (the ACKs) delayed by an extra
           uniform [0, N] us at the receiver's egress (TIMELY's Fig 12; ACKs may reorder);
    +lossP random loss of P% of the sender's packets, independent of congestion (netem at
           the sender's egress; with gso_max_segs 1 each skb is one packet);
    +fq    the fq qdisc at the sender's egress (pacing for cubic and bbr, as their users
           run them, and for dctcp alike);
    +kN    the bottleneck's ECN marking threshold at N packets instead of the scenario's;
    +noecn the sender does not ask for ECN (net.ipv4.tcp_ecn=0; dctcp asks regardless);
    +ecnshare  the delay-based controls (timely, timely_patched, dx, swift) loaded with
           ecn_share=1 (tools/bench/run.py): they ask for ECN and answer marks as dctcp
           does (alpha/2 per marked window; docs/timely.md, dx.md, swift.md);
    +iwN   an initial congestion window of N packets (the sender's route's initcwnd, the
           receiver's initrwnd), as a user who matches a window control's start to the
           path's bandwidth-delay product would set it (TIMELY starts without slow start).
    Variants combine: "dctcp+fq+k20" is dctcp paced by fq with K = 20 (each variant once)."""
    base, *extras = algo.split("+")
    variant = {}
    for extra in extras:
        v = one_variant(extra, algo)
        if set(v) & set(variant):
            sys.exit(f"error: variant '+{extra}' given twice in '{algo}'")
        variant.update(v)
    if variant.get("fq") and variant.get("loss_pct"):
        # Both are the sender's root qdisc: netem's loss would replace fq's pacing.
        sys.exit(f"error: '{algo}': +fq and +lossP both need the sender's root qdisc")
    return base, variant


def one_variant(extra, algo):
    """One "+..." part of an algorithm's name as split_algo() documents it."""
    m = re.fullmatch(r"hw(\d*)", extra)
    cal = re.fullmatch(r"cal(\d+)", extra)
    jit = re.fullmatch(r"jit(\d+)", extra)
    loss = re.fullmatch(r"loss(\d+(?:\.\d+)?)", extra)
    k = re.fullmatch(r"k(\d+)", extra)
    iw = re.fullmatch(r"iw(\d+)", extra)
    if iw and int(iw.group(1)) > 0:
        return {"init_cwnd": int(iw.group(1))}
    if extra == "fq":
        return {"fq": True}
    if k and int(k.group(1)) > 0:
        return {"ecn_k": int(k.group(1))}
    if extra == "noecn":
        return {"no_ecn": True}
    if extra == "ecnshare":
        return {"ecn_share": True}
    if extra == "rc3":
        return {"rc3": True}
    if extra == "rc3lv":
        return {"rc3": True, "rc3_dscp_map": 1}
    if extra == "rc3burst":
        return {"rc3": True, "rc3_burst": True}
    if m:
        return {"hw_noise_ns": int(m.group(1) or 0)}
    if extra == "rtt":
        return {"rtt": True}
    if cal:
        return {"calibrate_mbps": int(cal.group(1))}
    if jit:
        return {"ack_jitter_us": int(jit.group(1))}
    if loss:
        return {"loss_pct": float(loss.group(1))}
    sys.exit(f"error: unknown variant '+{extra}' in '{algo}' "
             "(+rc3, +rc3lv, +rc3burst, +hw[N], +rtt, +calN, +jitN, +lossP, +fq, +kN, +noecn, +ecnshare, "
             "+iwN)")


def hardware_stamps(noise_ns):
    """Hardware timestamping on at the sender's and the receiver's NICs (c0, s0), and
    used for the delay-stamp option (net.ipv4.tcp_delay_stamps_hw), each with its own
    emulated clock: the sender's 5 s ahead, the receiver's 3 s behind and
    drifting 40 ppm (DX's figure), and `noise_ns` of noise on the receiver's."""
    lib(f"nic_clock_on cli c0 5000000000 0 0 && "
        f"nic_clock_on srv s0 -3000000000 40000 {noise_ns}")
    for ns in ("cli", "srv"):
        sh(f"ip netns exec {ns} sysctl -qw net.ipv4.tcp_delay_stamps_hw=1", check=False)


def stamp_counters(senders=("cli",)):
    """The senders' delay-stamp counters (samples delivered, of which hardware ones, and
    software ones that took t1 at the device), through lib.sh's tcpext, summed over the
    sender namespaces."""
    keys = {"stamp_samples": "TCPDelayStampSample", "stamp_hw_samples": "TCPDelayStampHwSample",
            "stamp_dev_samples": "TCPDelayStampDevTx"}
    total = dict.fromkeys(keys, 0)
    for ns in senders:
        out = sh(f"source {LIB}; tcpext {ns} {' '.join(keys.values())}", check=False).stdout.split()
        if len(out) != len(keys):
            out = [0] * len(keys)
        for k, v in zip(keys, out):
            total[k] += int(v)
    return total


def jitter_starts(sc, flows, rep):
    """Each flow's start moved by a seeded random delay of up to `start_jitter_ms`
    (repetition `rep` draws its own), so that repetitions differ."""
    ms = sc.get("start_jitter_ms", 0)
    if not ms:
        return flows
    rng = random.Random(1000 + rep)
    return [(round(a + rng.uniform(0, ms / 1000), 4), b) for a, b in flows]


# The DS fields of RC3's levels: Lower-Effort (DSCP 1, RFC 8622, the default map) and
# the per-level map's 3, 7, 11, 15 (dscp_map=1). Everything else is band 1.
RC3_DS_FIELDS = ["0x04", "0x0c", "0x1c", "0x2c", "0x3c"]


def wait_until(t0, start):
    """Sleep until `start` seconds after `t0` (time.monotonic()), if that is still ahead."""
    delay = start - (time.monotonic() - t0)
    if delay > 0:
        time.sleep(delay)


def iperf3_seconds(start, stop, window=None):
    """iperf3's -t for a flow from start to stop (s). iperf3 reads -t as an integer and
    truncates ("0.9992" is 0, which means no limit, and "2.98" is 2): whole seconds, at
    least one, rounded up, so that the flow runs at least until `stop` and covers the
    measurement window it spans (round() took 2.5 s to 2, half to even: random_loss's
    flow from 1.5 to 4 s ended at 3.5 s, inside its window of 2.0-3.8 s). A flow that
    is to leave before `window` ([a, b]) begins is rounded down instead, so that it does
    not run into it."""
    dur_s = round(stop - start, 6)  # 1.1 - 0.1 is 1.0000000000000002, not 1
    n = math.ceil(dur_s)
    if window is not None and stop <= window[0] < start + n:
        n = math.floor(dur_s)
    return max(1, n)


def measure_window(sc, flows):
    """The scenario's measurement window [a, b] (s) for flows [(start_s, stop_s)]: its
    `measure_s`, else from `warmup_s` after the last start to 0.2 s before the first stop
    (all flows of the final set active)."""
    return sc.get("measure_s", [max(a for a, _ in flows) + sc.get("warmup_s", 0.5),
                                min(b for _, b in flows) - 0.2])


class WindowError(ValueError):
    """A run whose samples do not cover its measurement window: its metrics would leave
    a flow out."""


def add_priority_queues(ns, dev, parent, limit):
    """A strict-priority qdisc ("WQoS", the thesis's priority scheduling and dropping):
    band 1 for ordinary traffic, bands 2.. for RC3's levels by their DS field, each band
    a drop-tail FIFO of `limit` packets, so low-priority packets never take the room or
    the turn of ordinary ones."""
    bands = 1 + len(RC3_DS_FIELDS)
    where = f"parent {parent} handle 10:" if parent else "root handle 10:"
    if parent:
        sh(f"tc -n {ns} qdisc del dev {dev} parent {parent}")  # the dumbbell's FIFO
    sh(f"tc -n {ns} qdisc replace dev {dev} {where} prio bands {bands} "
       f"priomap {' '.join(['0'] * 16)}")
    for band in range(1, bands + 1):
        sh(f"tc -n {ns} qdisc add dev {dev} parent 10:{band:x} pfifo limit {limit}")
    for i, ds in enumerate(RC3_DS_FIELDS):
        sh(f"tc -n {ns} filter add dev {dev} parent 10: prio {i + 1} protocol ip "
           f"u32 match ip dsfield {ds} 0xfc flowid 10:{i + 2:x}")


def add_class_queues(sc, ecn_k):
    """Two queues at the bottleneck, each guaranteed half the rate and lending the rest to
    the other (htb classes 1:10 and 1:20 under the link's 1:1, one packet a turn): the flows
    of mix 1 (their DS field CLASS_DS_FIELD) in 1:20, everything else in 1:10; each the
    scenario's queue, marking at K if a control of the run needs ECN. The DX paper's
    arrangement for delay-based traffic beside loss-based traffic."""
    rate = sc["rate_mbit"]
    sh("tc -n rtr qdisc del dev r1 parent 1:1")
    for cls in (10, 20):
        sh(f"tc -n rtr class add dev r1 parent 1:1 classid 1:{cls} htb rate {rate // 2}mbit "
           f"ceil {rate}mbit burst 3000 cburst 3000 quantum 1514")
        lib(f"bottleneck_queue 1:{cls} {cls}: {rate} {sc['queue_pkts']} '{ecn_k}' "
            f"{sc.get('mtu', 1500)} {sc.get('non_ect_above_k', 'queue')}")
    sh(f"tc -n rtr filter add dev r1 parent 1: prio 1 protocol ip u32 match ip dsfield "
       f"{CLASS_DS_FIELD} 0xfc flowid 1:20")
    sh("tc -n rtr filter add dev r1 parent 1: prio 2 protocol all u32 match u32 0 0 "
       "flowid 1:10")


def run_scenario(sc, algo, log=print, rep=0):
    ccs, variant = split_mix(algo)
    cc = ccs[0]
    flows = jitter_starts(sc, expand_flows(sc), rep)
    mix = flow_mix(sc)
    if max(mix, default=0) >= len(ccs):
        sys.exit(f"error: flow group mix {max(mix)} needs a control '{algo}' does not name")
    flow_cc = [ccs[m] for m in mix]
    ecn_k = (variant.get("ecn_k", sc.get("ecn_k_pkts", ""))
             if ECN_ALGOS & set(ccs) else "")
    # Non-ECT packets above K: queued (RED nodrop) by default, dropped as a switch would
    # with "non_ect_above_k": "drop" (the mixed scenarios).
    senders = sender_namespaces(sc)
    if len(senders) > 1:
        unsupported = [what for what, on in (
            ("mixed controls", len(ccs) > 1), ("preconnect", sc.get("preconnect")),
            ("hardware stamps", "hw_noise_ns" in variant), ("gso_max_segs", sc.get("gso_max_segs")),
            ("priority_queues", sc.get("priority_queues")), ("a workload", sc.get("workload")),
            ("calibration", variant.get("calibrate_mbps"))) if on]
        if unsupported:
            sys.exit(f"error: 'senders' with {', '.join(unsupported)} is not supported")
    for cmd in extra_senders_cleanup(sc):
        sh(cmd, check=False)
    lib(f"setup_dumbbell {sc['rate_mbit']} {sc['delay_us']} {sc['queue_pkts']} "
        f"'{ecn_k}' {sc.get('mtu', 1500)} {sc.get('non_ect_above_k', 'queue')}")
    for cmd in extra_senders_commands(sc):
        # ethtool may be missing its offloads on a device: as setup_dumbbell, not fatal.
        sh(cmd, check="ethtool" not in cmd)
    for ecn_cc in ECN_ALGOS & set(ccs):
        # The receiver runs the ECN control too, as a DCTCP deployment does: its ACKs then
        # echo each CE mark once (dctcp_ece_ack_update()), not from the first mark until
        # the sender's CWR as an RFC 3168 receiver does, which inflates the sender's
        # estimate of the marked fraction. Its listener also accepts an ECN-capable SYN,
        # which dctcp sends when chosen before connect() (congctl routes).
        # A child namespace's default must be an allowed control (it is restricted).
        allowed = sh("sysctl -n net.ipv4.tcp_allowed_congestion_control").stdout.split()
        if ecn_cc not in allowed:
            sh(f"sysctl -qw net.ipv4.tcp_allowed_congestion_control='{' '.join(allowed + [ecn_cc])}'")
        sh(f"ip netns exec srv sysctl -qw net.ipv4.tcp_congestion_control={ecn_cc}")
    if len(ccs) > 1:
        # Each control by route (congctl), as a host running two would be set up: the
        # flow's control is chosen before its SYN, so ECN is negotiated as that control
        # asks (dctcp always; the others as net.ipv4.tcp_ecn says), which iperf3 -C,
        # choosing after connect(), would not do.
        sh(f"ip -n srv addr add {SRV_MIX1}/24 dev s0")
        for dst, mcc in ((SRV, ccs[0]), (SRV_MIX1, ccs[1])):
            sh(f"ip -n cli route replace {dst}/32 via 10.10.1.2 congctl {mcc}")
    if sc.get("class_queues"):
        add_class_queues(sc, ecn_k)
    if variant.get("init_cwnd") and len(ccs) > 1:
        sys.exit(f"error: '{algo}': +iwN applies to the default route, not a mixed run's")
    if sc.get("gso_max_segs"):
        # TCP's skbs of at most this many segments, for every algorithm: a hardware
        # transmit stamp reaches TCP only for an skb the driver gets whole.
        lib(f"gso_max_segs {sc['gso_max_segs']}")
    if "hw_noise_ns" in variant:
        hardware_stamps(variant["hw_noise_ns"])
    if variant.get("ack_jitter_us"):
        # Uniform [0, N] us on top of the path's delay: netem's jitter is +-J around its
        # delay (uniform without a distribution table).
        j = variant["ack_jitter_us"]
        sh(f"tc -n srv qdisc change dev s0 root netem delay {sc['delay_us'] + j / 2}us "
           f"{j / 2}us limit 100000")
    if variant.get("rtt"):
        sh("ip netns exec srv sysctl -qw net.ipv4.tcp_delay_stamps=0")
    if variant.get("calibrate_mbps"):
        for ns in ("cli", "srv"):
            sh(f"ip netns exec {ns} sysctl -qw "
               f"net.ipv4.tcp_delay_stamps_calibrate={variant['calibrate_mbps']}")
    for key, value in sc.get("guest_sysctls", {}).items():
        # Global (not per-namespace) settings: the veth backlog a burst lands in.
        sh(f"sysctl -qw {key}='{value}'")
    for ns, values in sc.get("sysctls", {}).items():
        # Per-namespace settings every algorithm of the scenario gets (socket buffers);
        # the senders' ("cli") in sender_commands(), for each sender namespace.
        if ns == "cli":
            continue
        sets = " ".join(f"{k}='{v}'" for k, v in values.items())
        sh(f"ip netns exec {ns} sysctl -qw {sets}")
    # Each sender's settings: fq, ECN, loss, sysctls, the sender's initial window and the
    # receiver's first one (for every algorithm of a scenario, the RC3 thesis's baseline:
    # 4, RC3 sending only within the receiver's; or a variant's +iwN, both), RC3, and
    # the delay-stamp option offered (iperf3 -C selects the control after connect(), when
    # the SYN has gone: the option is offered on every connect instead, dx runs only).
    if variant.get("rc3"):
        # Off by default outside the initial namespace: the guest's administrator allows it.
        sh("sysctl -qw net.ipv4.tcp_rc3_netns_allowed=1")
    for cmd in sender_commands(sc, variant, ccs):
        sh(cmd)
    if sc.get("priority_queues"):
        # Strict priority at the sender's egress and at the bottleneck, for every
        # algorithm of the scenario (without RC3 everything is band 1).
        if ecn_k:
            sys.exit("error: priority_queues with an ECN algorithm is not supported")
        add_priority_queues("cli", "c0", None, 10000)
        add_priority_queues("rtr", "r1", "1:1", sc["queue_pkts"])
    uniform = len(set(flows)) == 1 and len(ccs) == 1 and len(senders) == 1
    # "preconnect": every connection established before any flow sends (tools/bench/bulkflow.py)
    # instead of one iperf3 per flow connecting at its start.
    preconnect = sc.get("preconnect", False)
    bulk_srv = None
    if preconnect:
        if len(ccs) > 1 or sc.get("class_queues"):
            sys.exit("error: preconnect supports neither mixed controls nor class queues")
        bulk_srv = subprocess.Popen(
            ["ip", "netns", "exec", "srv", "python3", BULKFLOW, "server", "--port",
             str(BASE_PORT), "--count", str(len(flows))]
            + (["--read-mbps", str(sc["receiver_read_mbps"])]
               if sc.get("receiver_read_mbps") else []),
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        bulk_srv.stdout.readline()  # "listening"
    for i in range(0 if preconnect else 1 if uniform else len(flows)):
        sh(f"ip netns exec srv iperf3 -s -D -1 -p {BASE_PORT + i}")
    time.sleep(0.2)
    idle_rtt = sh(f"ip netns exec cli ping -c 3 -i 0.05 -q {SRV}", check=False).stdout
    m = re.search(r"= ([0-9.]+)/", idle_rtt)
    res = {"algo": algo, "scenario": sc.get("name"), "n_flows": len(flows),
           "idle_rtt_us": float(m.group(1)) * 1000 if m else None, "ok": False}

    workload = None
    if sc.get("workload"):
        fct_srv = subprocess.Popen(["ip", "netns", "exec", "srv", "python3", FCTFLOW, "server",
                                    "--port", str(FCT_PORT)])
        time.sleep(0.5)
        fct_out = tempfile.NamedTemporaryFile(prefix="fct-", suffix=".json", delete=False).name
        w = dict(sc["workload"], rate_mbit=sc["rate_mbit"])
        # Repetition r draws its own arrivals and sizes (seed + r); every algorithm of one
        # repetition sees the same flows.
        w["seed"] = w.get("seed", 1) + rep
        fct_timeout = w["stop_s"] + w.get("grace_s", 5.0) + 30
    t0 = time.monotonic()
    sampler = Sampler(t0, BOTTLENECK_CLASSES if sc.get("class_queues") else BOTTLENECK, senders)
    sampler.start()
    if sc.get("workload"):
        workload = subprocess.Popen(
            ["ip", "netns", "exec", "cli", "timeout", str(int(fct_timeout)), "python3", FCTFLOW,
             "client", "--dst", SRV, "--port", str(FCT_PORT), "--algo", cc,
             "--workload", json.dumps(w), "--out", fct_out],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    procs = []

    window = measure_window(sc, flows) if flows else None

    def start_flow(i, start, stop):
        wait_until(t0, start)
        dur = iperf3_seconds(start, stop, window)
        tos = ["-S", CLASS_DS_FIELD] if sc.get("class_queues") and mix[i] == 1 else []
        dst = SRV_MIX1 if mix[i] == 1 else SRV
        p = subprocess.Popen(
            ["ip", "netns", "exec", senders[flow_sender(sc, i)], "timeout", str(int(dur + 30)),
             "iperf3", "-c", dst,
             "-p", str(BASE_PORT + i), "-t", str(dur), "-C", flow_cc[i], "-J", *tos],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        procs.append((i, start, p))

    if not flows:
        per_flow = []  # a workload alone (the RC3 flow-completion scenarios)
    elif preconnect:
        schedule = [[flow_cc[i], a, b] for i, (a, b) in enumerate(flows)]
        with tempfile.NamedTemporaryFile(suffix=".json", delete=False) as f:
            bulk_out = f.name
        out = sh(f"ip netns exec cli timeout {int(max(b for _, b in flows) + 30)} python3 "
                 f"{BULKFLOW} client --dst {SRV} --port {BASE_PORT} --t0 {t0} "
                 f"--schedule '{json.dumps(schedule)}' --out {bulk_out}", check=False)
        bulk_srv.kill()
        try:
            per_flow = json.load(open(bulk_out))
        except (OSError, ValueError) as e:
            per_flow = [{"error": f"bulkflow: {e}: {(out.stdout + out.stderr)[-200:]}"}]
        finally:
            os.unlink(bulk_out)
        if out.stderr:
            log(out.stderr.strip())
    elif uniform:
        # One flow set for the whole run: one iperf3 with parallel streams, so that all
        # start together even where process start-up is slow (the guest's normal clock).
        # A jittered start (one flow) waits for its time, as start_flow does.
        start, stop = flows[0]
        wait_until(t0, start)
        out = sh(f"ip netns exec cli timeout {int(stop + 30)} iperf3 -c {SRV} -p {BASE_PORT} "
                 f"-t {iperf3_seconds(start, stop)} -P {len(flows)} -C {cc} -J",
                 check=False).stdout
        try:
            end = json.loads(out)["end"]
            cc = end.get("sender_tcp_congestion")
            per_flow = [{"start_s": start, "stop_s": stop, "cc": cc,
                         "mbps": st["receiver"]["bits_per_second"] / 1e6,
                         "bytes": st["receiver"]["bytes"],
                         "retransmits": st["sender"].get("retransmits", 0)}
                        for st in end["streams"]]
        except (ValueError, KeyError) as e:
            per_flow = [{"error": f"iperf3: {e}: {out[-200:]}"}]
    else:
        starters = [threading.Thread(target=start_flow, args=(i, a, b))
                    for i, (a, b) in enumerate(flows)]
        for s in starters:
            s.start()
        for s in starters:
            s.join()
        per_flow = [None] * len(flows)
        for i, start, p in procs:
            out, _ = p.communicate()
            try:
                end = json.loads(out)["end"]
                per_flow[i] = {
                    "start_s": start, "stop_s": flows[i][1],
                    "cc": end.get("sender_tcp_congestion"),
                    "mbps": end["sum_received"]["bits_per_second"] / 1e6,
                    "bytes": end["sum_received"]["bytes"],
                    "retransmits": end["sum_sent"].get("retransmits", 0),
                }
            except (ValueError, KeyError) as e:
                per_flow[i] = {"error": f"flow {i}: {e}: {out[-200:]}"}
    if workload:
        out, _ = workload.communicate()
        fct_srv.kill()
        try:
            res["fct"] = json.load(open(fct_out))
        except (OSError, ValueError) as e:
            per_flow.append({"error": f"workload client (status {workload.returncode}): {e}: "
                                      f"{out[-200:]}"})
        finally:
            os.unlink(fct_out)
    sampler.stop.set()
    sampler.join()
    if STAMP_ALGOS & set(ccs):
        res.update(stamp_counters(senders))
    if os.environ.get("NETBENCH_COUNTERS"):
        for ns in ("cli", "srv"):
            log(f"{ns}: " + sh(f"ip netns exec {ns} nstat -az", check=False).stdout)
    lib("ns_cleanup")
    for cmd in extra_senders_cleanup(sc):
        sh(cmd, check=False)
    res["senders"] = len(senders)

    if sampler.error:
        per_flow.append({"error": sampler.error})
    res["flows"] = per_flow
    res["samples"] = sampler.flows
    res["queue"] = sampler.queue
    errors = [f["error"] for f in per_flow if "error" in f]
    asked = [flow_cc[min(i, len(flow_cc) - 1)] for i in range(len(per_flow))]
    wrong = [(f["cc"], a) for f, a in zip(per_flow, asked)
             if "cc" in f and not same_control(f["cc"], a, variant)]
    res["ecn_fallback_flows"] = sum(1 for f, a in zip(per_flow, asked)
                                    if f.get("cc") == f"{a}-reno")
    if errors:
        res["error"] = "; ".join(errors)[:500]
    elif wrong:
        res["error"] = f"flows used {wrong[0][0]}, not {wrong[0][1]}"
    else:
        try:
            res.update(summarize(sc, res))
            res["ok"] = True
        except WindowError as e:
            res["error"] = str(e)
    return res


def acked_at(series, t):
    """Bytes ACKed by time t, from a flow's (t, bytes_acked) samples (linear between)."""
    # Tolerate sampling gaps (on the guest's normal clock a sample can take 20 ms).
    if not series or t > series[-1][0] + 0.05:
        return None
    if t < series[0][0] - 0.05:
        # Not connected yet (a SYN the full queue dropped waits for its 1 s timeout): a
        # connection is sampled from its first 100 KB on, every 10 ms.
        return 0.0
    prev = series[0]
    for cur in series:
        if cur[0] >= t:
            if cur[0] == prev[0]:
                return cur[1]
            return prev[1] + (cur[1] - prev[1]) * (t - prev[0]) / (cur[0] - prev[0])
        prev = cur
    return series[-1][1]


def flow_series(res):
    """Per connection: (schedule entry, [(t, bytes_acked)]) from the ss samples."""
    series = {}
    for s in res["samples"]:
        if s["bytes_acked"] is not None:
            series.setdefault(s["conn"], (s["flow"], []))[1].append((s["t"], s["bytes_acked"]))
    return series


def flow_window_rates(series, flow_ids, a, b):
    """(schedule entry, mean delivery rate in Mbit/s over [a, b)) of each connection of
    the given schedule entries, from its ACKed bytes."""
    rates = []
    for flow, samples in series.values():
        if flow not in flow_ids:
            continue
        x, y = acked_at(samples, a), acked_at(samples, b)
        if x is not None and y is not None and b > a:
            rates.append((flow, (y - x) * 8 / (b - a) / 1e6))
    return rates


def window_rates(series, flow_ids, a, b):
    return [r for _, r in flow_window_rates(series, flow_ids, a, b)]


def shares_by_cc(flows, flow_rates):
    """A mixed run's throughput (Mbit/s) and share (%) per control, from (schedule entry,
    Mbit/s) pairs."""
    by = {}
    for flow, rate in flow_rates:
        cc = flows[flow]["cc"]
        by[cc] = by.get(cc, 0.0) + rate
    total = sum(by.values())
    return {"mbps_by_cc": {cc: round(v, 1) for cc, v in by.items()},
            "share_by_cc": {cc: round(100 * v / total, 1) if total else None
                            for cc, v in by.items()}}


def check_window(flows, series, active, b):
    """Raises WindowError unless each flow scheduled across the window [a, b] has a
    connection sampled at b: one that ended early would drop out of the metrics, and
    the others' throughput and fairness would pass for all of theirs."""
    for i in sorted(active):
        conns = [samples for flow, samples in series.values() if flow == i]
        if any(acked_at(samples, b) is not None for samples in conns):
            continue
        last = max((samples[-1][0] for samples in conns), default=None)
        f = flows[i]
        raise WindowError(
            f"flow {i} (scheduled {f['start_s']:g}-{f['stop_s']:g} s) has no sample at the "
            f"measurement window's end, {b:g} s: "
            + (f"its last is at {last:g} s" if last is not None else "it has no samples"))


def summarize(sc, res):
    """Metrics over the scenario's measurement window (all flows of the final set active)."""
    flows = res["flows"]
    series = flow_series(res)
    cap = sc["rate_mbit"] * payload_per_frame(sc)
    if not flows:
        # A workload alone: its flow-completion times, RTTs and queue over its arrivals.
        return workload_only_summary(sc, res, cap)
    a, b = measure_window(sc, [(f["start_s"], f["stop_s"]) for f in flows])
    active = {i for i, f in enumerate(flows) if f["start_s"] <= a and f["stop_s"] >= b}
    if len({(f["start_s"], f["stop_s"]) for f in flows}) == 1 and "measure_s" not in sc:
        # One flow set for the whole run: iperf3's per-stream receiver totals, exact on
        # either clock (on the normal clock samples can be hundreds of ms apart under load).
        flow_rates = list(enumerate(f["mbps"] for f in flows))
    else:
        check_window(flows, series, active, b)
        flow_rates = flow_window_rates(series, active, a, b)
    rates = [r for _, r in flow_rates]
    rtts = [s["rtt_us"] for s in res["samples"] if s["rtt_us"] and a <= s["t"] <= b]
    ctl = [s for s in res["samples"] if s.get("ctl_rtt_us") and a <= s["t"] <= b]
    queue = [q["pkts"] for q in res["queue"] if a <= q["t"] <= b]
    out = {
        "window_s": [a, b],
        "ctl_rtt_p50_us": percentile([s["ctl_rtt_us"] for s in ctl], 50),
        "ctl_rtt_p99_us": percentile([s["ctl_rtt_us"] for s in ctl], 99),
        "ctl_sources": sorted({s["ctl_source"] for s in ctl}),
        "mbps": round(sum(rates), 1),
        "util_pct": round(100 * sum(rates) / cap, 1),
        "rtt_p50_us": percentile(rtts, 50), "rtt_p99_us": percentile(rtts, 99),
        "queue_p50_pkts": percentile(queue, 50), "queue_p99_pkts": percentile(queue, 99),
        "retransmits": sum(f["retransmits"] for f in flows),
        "jain": round(jain(rates), 3) if rates else None,
        "per_flow_mbps": [round(r, 1) for r in rates],
    }
    if len({f.get("cc") for f in flows}) > 1:
        out.update(shares_by_cc(flows, flow_rates))
        # Which connections negotiated ECN, per control (connections, of them with ECN).
        ecn = {}
        for conn, flow in {(s["conn"], s["flow"]) for s in res["samples"]
                           if s["flow"] in active}:
            on = any(s.get("ecn") for s in res["samples"] if s["conn"] == conn)
            n = ecn.setdefault(flows[flow]["cc"], [0, 0])
            n[0] += 1
            n[1] += on
        out["ecn_by_cc"] = ecn
    # With a workload beside them the long flows are not meant to fill the link.
    out["convergence_s"] = None if "fct" in res else convergence_time(flows, series, cap)
    if "fct" in res:
        out.update(fct_summary(sc, res["fct"]))
    out.update(derived_metrics(sc, {**res, **out}))
    return out


def workload_only_summary(sc, res, cap):
    w = sc["workload"]
    a, b = w.get("start_s", 0.0), w["stop_s"]
    rtts = [s["rtt_us"] for s in res["samples"] if s["rtt_us"] and a <= s["t"] <= b]
    queue = [q["pkts"] for q in res["queue"] if a <= q["t"] <= b]
    out = {"window_s": [a, b], "rtt_p50_us": percentile(rtts, 50),
           "rtt_p99_us": percentile(rtts, 99), "queue_p50_pkts": percentile(queue, 50),
           "queue_p99_pkts": percentile(queue, 99), "retransmits": None, "jain": None,
           "per_flow_mbps": [], "convergence_s": None}
    out.update(fct_summary(sc, res["fct"]))
    out["mbps"] = out["fct_mbps"]
    out["util_pct"] = round(100 * out["fct_mbps"] / cap, 1)
    out.update(derived_metrics(sc, {**res, **out}))
    return out


def fct_summary(sc, fct):
    """Flow completion times by size: count, p50, p99 (us), and the flows left unfinished."""
    by_size = {}
    for f in fct["flows"]:
        if "fct_us" in f:
            by_size.setdefault(f["size"], []).append(f["fct_us"])
    w = sc["workload"]
    done_bytes = sum(f["size"] for f in fct["flows"] if "fct_us" in f)
    return {
        "fct_by_size": [{"size": size, "n": len(xs), "p50_us": percentile(xs, 50),
                         "p99_us": percentile(xs, 99)} for size, xs in sorted(by_size.items())],
        "fct_planned": fct["planned"],
        "fct_unfinished": sum(1 for f in fct["flows"] if "unfinished" in f),
        "fct_mbps": round(done_bytes * 8 / (w["stop_s"] - w.get("start_s", 0)) / 1e6, 1),
    }


def convergence_time(flows, series, cap):
    """Seconds from the last change in the flow set until the remaining flows hold >= 90%
    of capacity with Jain >= 0.9 over 100 ms intervals for the rest of the run."""
    changes = sorted({f["start_s"] for f in flows} | {f["stop_s"] for f in flows})
    end = changes[-1]
    t_change = max([c for c in changes if c < end - 1e-6] or [0.0])
    step = 0.1
    t, good_since = t_change, None
    while t + step <= end - step + 1e-6:
        active = {i for i, f in enumerate(flows)
                  if f["start_s"] <= t + 1e-6 and f["stop_s"] >= t + step - 1e-6}
        if len(set((f["start_s"], f["stop_s"]) for f in flows)) == 1:
            # One flow set: one iperf3 with parallel streams, all on schedule entry 0, or
            # (several sender namespaces) one iperf3 per flow: every entry sampled.
            active = {flow for flow, _ in series.values()}
        rates = window_rates(series, active, t, t + step)
        ok = rates and sum(rates) >= 0.9 * cap and (jain(rates) or 0) >= 0.9
        if ok and good_since is None:
            good_since = t
        elif not ok:
            good_since = None
        t = round(t + step, 3)
    return None if good_since is None else round(good_since - t_change, 2)


def fmt(v, spec="{:.0f}"):
    return "-" if v is None else spec.format(v)


def table(results, sc):
    lines = [f"{len(expand_flows(sc))} flow(s), {sc['rate_mbit']} Mbit/s bottleneck, "
             f"{sc['queue_pkts']}-packet drop-tail FIFO (ECN step at K={sc.get('ecn_k_pkts')} "
             f"for {'/'.join(sorted(ECN_ALGOS))}), {sc['delay_us']} us base delay",
             "",
             "| algorithm | throughput Mbit/s | utilization | RTT p50 us | RTT p99 us "
             "| retransmits | Jain |",
             "|---|---:|---:|---:|---:|---:|---:|"]
    for r in results:
        if not r["ok"]:
            lines.append(f"| {r['algo']} | FAILED: {r.get('error', '?')} | | | | | |")
            continue
        lines.append(f"| {r['algo']} | {r['mbps']:.1f} | {r['util_pct']:.1f}% | "
                     f"{fmt(r['rtt_p50_us'])} | {fmt(r['rtt_p99_us'])} | "
                     f"{fmt(r['retransmits'])} | {fmt(r['jain'], '{:.3f}')} |")
    return "\n".join(lines)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--scenario", help="scenario JSON file")
    p.add_argument("--algo", help="with --scenario: the algorithm to run ('cubic', or "
                   "'cubic+rc3' for RC3's low-priority loop beside it)")
    p.add_argument("--rep", type=int, default=0,
                   help="with --scenario: the repetition (a workload's seed is offset by it)")
    p.add_argument("--algos", default="cubic,dctcp")
    p.add_argument("--rate-mbit", type=int, default=100)
    p.add_argument("--delay-us", type=int, default=500)
    p.add_argument("--queue-pkts", type=int, default=100)
    p.add_argument("--ecn-k-pkts", type=int, default=20)
    p.add_argument("--flows", type=int, default=4)
    p.add_argument("--seconds", type=int, default=5)
    p.add_argument("--json")
    a = p.parse_args()
    if a.scenario:
        sc = json.load(open(a.scenario))
        res = run_scenario(sc, a.algo, rep=a.rep)
        if a.json:
            with open(a.json, "w") as f:
                json.dump(res, f)
        print(table([res], sc), flush=True)
        return 0 if res["ok"] else 1
    sc = {"name": "demo", "rate_mbit": a.rate_mbit, "delay_us": a.delay_us,
          "queue_pkts": a.queue_pkts, "ecn_k_pkts": a.ecn_k_pkts, "warmup_s": 1,
          "flows": [{"count": a.flows, "start_s": 0, "stop_s": a.seconds}]}
    results = []
    for algo in a.algos.split(","):
        print(f"# running {algo}: {a.flows} flow(s) for {a.seconds} s", flush=True)
        results.append(run_scenario(sc, algo))
    print(table(results, sc), flush=True)
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"scenario": sc, "results": results}, f)
    return 0 if all(r["ok"] for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
