#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Packet timestamps from user space (SO_TIMESTAMPING), and how noisy they are.

    tstamp.py caps IFACE [--json]             what the device can stamp, and its hardware config
    tstamp.py hwenable IFACE [--off]          hardware stamping on (TX_ON, FILTER_ALL) or off
    tstamp.py server --bind ADDR [--port P]
    tstamp.py client --connect ADDR [--port P] [--count N] [--interval-us U]
                     [--source software|hardware|both] [--burst B] [--calibrate-bps RATE] [--json]

The client and server play UDP ping-pong and measure, per timestamp source, what DX
(Lee et al., ATC'15, section 2 and figures 6-8) measures: per probe, t1 = the client's TX
stamp, t2 = the server's RX stamp, t3 = the server's TX stamp of its reply, t4 = the
client's RX stamp of that reply;

    network RTT = (t4 - t1) - (t3 - t2)       (the server's own delay taken out)
    OWD         = t2 - t1                     (across two clocks: only its noise counts,
                                               reported as OWD - min(OWD), DX's queuing delay)

The server learns t3 only once its reply has left, so it answers in two steps, as PTP
does: the reply itself, then a follow-up datagram carrying (probe id, t2, t3) per source.
--calibrate-bps applies DX's calibration to each stamp series (t1s, t2s, t3s, t4s) first:
a stamp closer than one transmission time at RATE to the previous one is moved to the
previous plus that time; it matters when probes go back to back (--burst).

Only the standard UAPI is used (include/uapi/linux/net_tstamp.h, errqueue.h, ethtool.h,
sockios.h; Documentation/networking/timestamping.rst), so any driver that implements
SIOCSHWTSTAMP and ETHTOOL_GET_TS_INFO works unchanged.

Times are integers in nanoseconds internally and in --json; the text report is in
microseconds. A stamp of 0 means "none", as the kernel's scm_timestamping has it.
Exit status: 0 measured (even if a source was unavailable), 1 a real error (no reply at
all, socket or ioctl errors), 2 usage.
"""
import argparse
import array
import errno
import fcntl
import json
import select
import socket
import statistics
import struct
import sys
import time

# --- UAPI constants -----------------------------------------------------------------

# include/uapi/asm-generic/socket.h: on 64-bit (and x32) user space SO_TIMESTAMPING is
# SO_TIMESTAMPING_OLD; its timespec is then 64-bit anyway, so both carry the same layout.
SO_TIMESTAMPING_OLD, SO_TIMESTAMPING_NEW = 37, 65
SO_TIMESTAMPING = SO_TIMESTAMPING_OLD
SCM_TIMESTAMPING_TYPES = (SO_TIMESTAMPING_OLD, SO_TIMESTAMPING_NEW)

# enum of SOF_TIMESTAMPING_* (net_tstamp.h): bit i is SOF_NAMES[i].
SOF_NAMES = (
    "TX_HARDWARE", "TX_SOFTWARE", "RX_HARDWARE", "RX_SOFTWARE", "SOFTWARE",
    "SYS_HARDWARE", "RAW_HARDWARE", "OPT_ID", "TX_SCHED", "TX_ACK", "OPT_CMSG",
    "OPT_TSONLY", "OPT_STATS", "OPT_PKTINFO", "OPT_TX_SWHW", "BIND_PHC", "OPT_ID_TCP",
    "OPT_RX_FILTER", "TX_COMPLETION",
)
SOF = {name: 1 << bit for bit, name in enumerate(SOF_NAMES)}

# enum hwtstamp_tx_types and enum hwtstamp_rx_filters: ethtool_ts_info's tx_types and
# rx_filters have bit (1 << value) set for each value the device supports.
HWTSTAMP_TX_NAMES = ("OFF", "ON", "ONESTEP_SYNC", "ONESTEP_P2P")
HWTSTAMP_FILTER_NAMES = (
    "NONE", "ALL", "SOME", "PTP_V1_L4_EVENT", "PTP_V1_L4_SYNC", "PTP_V1_L4_DELAY_REQ",
    "PTP_V2_L4_EVENT", "PTP_V2_L4_SYNC", "PTP_V2_L4_DELAY_REQ", "PTP_V2_L2_EVENT",
    "PTP_V2_L2_SYNC", "PTP_V2_L2_DELAY_REQ", "PTP_V2_EVENT", "PTP_V2_SYNC",
    "PTP_V2_DELAY_REQ", "NTP_ALL",
)
HWTSTAMP_TX_OFF, HWTSTAMP_TX_ON = 0, 1
HWTSTAMP_FILTER_NONE, HWTSTAMP_FILTER_ALL = 0, 1

# sockios.h, ethtool.h
SIOCETHTOOL, SIOCSHWTSTAMP, SIOCGHWTSTAMP = 0x8946, 0x89B0, 0x89B1
ETHTOOL_GET_TS_INFO = 0x41
IFNAMSIZ, IFREQ_SIZE = 16, 40
# struct ethtool_ts_info: cmd, so_timestamping, phc_index, tx_types, tx_reserved[3],
# rx_filters, rx_reserved[3].
TS_INFO = struct.Struct("=IIiI12xI12x")
# struct hwtstamp_config: flags, tx_type, rx_filter.
HWTSTAMP_CONFIG = struct.Struct("=iii")

# errqueue.h: struct sock_extended_err, then the origins and scm_timestamping's kinds.
SOCK_EE = struct.Struct("=IBBBBII")
SO_EE_ORIGIN_TIMESTAMPING = 4
SCM_TSTAMP_SND = 0
# struct scm_timestamping: ts[3] of struct timespec (two 64-bit words on x86_64):
# ts[0] software, ts[1] legacy (unused), ts[2] hardware, raw (the device's clock).
SCM_TS = struct.Struct("=6q")
# IP_RECVERR / IPV6_RECVERR carry the sock_extended_err of an error-queue message.
IP_RECVERR, IPV6_RECVERR = 11, 25
IP_PKTINFO = 8                     # struct in_pktinfo: ifindex, spec_dst, addr
IN_PKTINFO = struct.Struct("=i4s4s")
IN6_PKTINFO = struct.Struct("=16si")  # addr, ifindex
SOL_IP, SOL_IPV6 = 0, 41

SOURCES = ("software", "hardware")
SLOTS = ("t1", "t2", "t3", "t4")
# What each source asks of the socket. Generating flags (TX_*, RX_*) make stamps,
# reporting flags (SOFTWARE, RAW_HARDWARE) hand them to us; OPT_ID numbers TX stamps per
# datagram, OPT_TSONLY returns them without a copy of the packet, and OPT_TX_SWHW keeps the
# software TX stamp when the device stamps too (the kernel drops it otherwise).
SOURCE_FLAGS = {
    "software": SOF["TX_SOFTWARE"] | SOF["RX_SOFTWARE"] | SOF["SOFTWARE"],
    "hardware": SOF["TX_HARDWARE"] | SOF["RX_HARDWARE"] | SOF["RAW_HARDWARE"],
}
COMMON_FLAGS = SOF["OPT_ID"] | SOF["OPT_TSONLY"]
HW_CAPS_NEEDED = ("TX_HARDWARE", "RX_HARDWARE", "RAW_HARDWARE")


class ToolError(Exception):
    """A real error: the message is printed and the tool exits with status 1."""


# --- naming and parsing (pure) ------------------------------------------------------

def sof_names(mask):
    """SOF_TIMESTAMPING_* names of the bits set in mask; unknown bits as "bit N"."""
    return [f"SOF_TIMESTAMPING_{SOF_NAMES[b]}" if b < len(SOF_NAMES) else f"bit {b}"
            for b in range(32) if mask >> b & 1]


def enum_mask_names(mask, names, prefix):
    """Names of the enum values whose bit (1 << value) is set in mask (tx_types, rx_filters)."""
    return [f"{prefix}{names[v]}" if v < len(names) else f"{prefix}{v}?"
            for v in range(32) if mask >> v & 1]


def enum_name(value, names, prefix):
    return f"{prefix}{names[value]}" if 0 <= value < len(names) else f"{prefix}{value}?"


def tx_type_name(value):
    return enum_name(value, HWTSTAMP_TX_NAMES, "HWTSTAMP_TX_")


def rx_filter_name(value):
    return enum_name(value, HWTSTAMP_FILTER_NAMES, "HWTSTAMP_FILTER_")


def tx_types_names(mask):
    return enum_mask_names(mask, HWTSTAMP_TX_NAMES, "HWTSTAMP_TX_")


def rx_filters_names(mask):
    return enum_mask_names(mask, HWTSTAMP_FILTER_NAMES, "HWTSTAMP_FILTER_")


def parse_ts_info(data):
    """struct ethtool_ts_info as a dict."""
    _cmd, so_ts, phc, tx_types, rx_filters = TS_INFO.unpack(data[:TS_INFO.size])
    return {"so_timestamping": so_ts, "phc_index": phc, "tx_types": tx_types,
            "rx_filters": rx_filters}


def parse_hwtstamp_config(data):
    flags, tx_type, rx_filter = HWTSTAMP_CONFIG.unpack(data[:HWTSTAMP_CONFIG.size])
    return {"flags": flags, "tx_type": tx_type, "rx_filter": rx_filter}


def timespec_ns(sec, nsec):
    return sec * 1_000_000_000 + nsec


def parse_scm_timestamping(data):
    """(software_ns, hardware_ns) of a struct scm_timestamping; 0 where there is none."""
    s0, n0, _s1, _n1, s2, n2 = SCM_TS.unpack(data[:SCM_TS.size])
    return timespec_ns(s0, n0), timespec_ns(s2, n2)


def parse_sock_extended_err(data):
    ee_errno, origin, ee_type, code, _pad, info, ee_data = SOCK_EE.unpack(data[:SOCK_EE.size])
    return {"errno": ee_errno, "origin": origin, "type": ee_type, "code": code,
            "info": info, "data": ee_data}


def parse_cmsgs(ancdata):
    """The parts of a recvmsg's control messages this tool uses: stamps
    {source: ns} (non-zero only), the sock_extended_err (error queue) and the ifindex."""
    out = {"stamps": {}, "serr": None, "ifindex": None}
    for level, ctype, data in ancdata:
        if level == socket.SOL_SOCKET and ctype in SCM_TIMESTAMPING_TYPES \
                and len(data) >= SCM_TS.size:
            sw, hw = parse_scm_timestamping(data)
            if sw:
                out["stamps"]["software"] = sw
            if hw:
                out["stamps"]["hardware"] = hw
        elif (level, ctype) in ((SOL_IP, IP_RECVERR), (SOL_IPV6, IPV6_RECVERR)) \
                and len(data) >= SOCK_EE.size:
            out["serr"] = parse_sock_extended_err(data)
        elif (level, ctype) == (SOL_IP, IP_PKTINFO) and len(data) >= IN_PKTINFO.size:
            out["ifindex"] = IN_PKTINFO.unpack(data[:IN_PKTINFO.size])[0]
        elif (level, ctype) == (SOL_IPV6, socket.IPV6_PKTINFO) and len(data) >= IN6_PKTINFO.size:
            out["ifindex"] = IN6_PKTINFO.unpack(data[:IN6_PKTINFO.size])[1]
    return out


def tx_stamp_of(cmsgs):
    """(key, {source: ns}) of an error-queue message if it is a TX-completion stamp
    (SCM_TSTAMP_SND, ee_data = the OPT_ID key), else None."""
    serr = cmsgs["serr"]
    if serr is None or serr["origin"] != SO_EE_ORIGIN_TIMESTAMPING \
            or serr["errno"] != errno.ENOMSG or serr["info"] != SCM_TSTAMP_SND:
        return None
    return serr["data"], cmsgs["stamps"]


# --- statistics (pure) --------------------------------------------------------------

def percentile(sorted_values, p):
    """p-th percentile (0..100), linear between the closest ranks (numpy's default)."""
    if not sorted_values:
        raise ValueError("no values")
    pos = (len(sorted_values) - 1) * p / 100
    lo = int(pos)
    hi = min(lo + 1, len(sorted_values) - 1)
    return sorted_values[lo] + (sorted_values[hi] - sorted_values[lo]) * (pos - lo)


def summarize(values):
    """n, mean, standard deviation (sample, n - 1), its robust estimate (1.4826 times the
    median absolute deviation: the sd of normal noise, which a few outliers such as a
    stalled host do not move), min, max, range, p1, p50, p99; None if there are no
    values. Same unit as the values."""
    if not values:
        return None
    v = sorted(values)
    median = statistics.median(v)
    return {
        "n": len(v), "mean": statistics.fmean(v),
        "sd": statistics.stdev(v) if len(v) > 1 else 0.0,
        "sd_robust": 1.4826 * statistics.median(abs(x - median) for x in v),
        "min": v[0], "max": v[-1], "range": v[-1] - v[0],
        "p1": percentile(v, 1), "p50": percentile(v, 50), "p99": percentile(v, 99),
    }


def calibrate(series, gap_ns):
    """DX's calibration of a stamp series (in send order): a stamp closer than one
    transmission time to the previous one is moved to previous + transmission time, since
    the link cannot have carried the packets closer together (the device stamped a batch).
    None entries (missing stamps) are kept and skipped. Returns (series, how many moved)."""
    out, prev, moved = [], None, 0
    for t in series:
        if t is not None and prev is not None and t - prev < gap_ns:
            t = prev + gap_ns
            moved += 1
        out.append(t)
        if t is not None:
            prev = t
    return out, moved


def wire_bytes(payload, ipv6=False):
    """Bytes a UDP datagram of payload bytes occupies on an Ethernet link: headers, FCS,
    preamble and inter-frame gap (1538 for a 1500-byte MTU frame, 1.23 us at 10 Gbit/s as
    in DX's figure 3), at least the 64-byte minimum frame."""
    frame = max(payload + 8 + (40 if ipv6 else 20) + 14 + 4, 64)
    return frame + 8 + 12


def probe_metrics(t):
    """(rtt, owd, owd_reverse) of one probe's [t1, t2, t3, t4]; None where a stamp lacks."""
    t1, t2, t3, t4 = t
    rtt = (t4 - t1) - (t3 - t2) if None not in t else None
    owd = t2 - t1 if t1 is not None and t2 is not None else None
    owd_rev = t4 - t3 if t3 is not None and t4 is not None else None
    return rtt, owd, owd_rev


def source_report(rows, gap_ns=None):
    """Report of one source over the answered probes' rows [t1, t2, t3, t4] (None for a
    missing stamp): missing stamps per slot, probes lacking any, and the statistics of
    RTT, OWD - min(OWD) and reverse OWD - min (ns). gap_ns: calibrate each slot's series
    first (DX's back-to-back calibration)."""
    rows = [list(r) for r in rows]
    rep = {"available": True}
    if gap_ns:
        moved = {}
        for i, slot in enumerate(SLOTS):
            col, moved[slot] = calibrate([r[i] for r in rows], gap_ns)
            for r, t in zip(rows, col):
                r[i] = t
        rep["calibration_moved"] = moved
    rep["missing"] = {slot: sum(r[i] is None for r in rows) for i, slot in enumerate(SLOTS)}
    rep["probes_missing"] = sum(None in r for r in rows)
    metrics = [probe_metrics(r) for r in rows]
    rep["rtt"] = summarize([m[0] for m in metrics if m[0] is not None])
    for key, idx in (("owd", 1), ("owd_reverse", 2)):
        vals = [m[idx] for m in metrics if m[idx] is not None]
        st = summarize([x - min(vals) for x in vals]) if vals else None
        if st:
            st["base"] = min(vals)  # includes the clocks' offset
        rep[key] = st
    return rep


# --- the wire protocol (pure) -------------------------------------------------------
# Every datagram starts with magic, type, the sources the client wants (bit 0 software,
# bit 1 hardware) and the probe id. Reply and probe have the same size (--size), so both
# directions see the same transmission time; the follow-up carries the server's stamps
# (0 = none) and, when it lacks hardware stamps, why.

MAGIC = b"TSd1"
HEADER = struct.Struct("!4sBBHI")
PROBE, REPLY, FOLLOWUP = 1, 2, 3
FOLLOWUP_BODY = struct.Struct("!qqqqH")  # sw t2, sw t3, hw t2, hw t3, reason length
MIN_SIZE = HEADER.size + FOLLOWUP_BODY.size


def source_bits(sources):
    return sum(1 << SOURCES.index(s) for s in sources)


def bits_sources(bits):
    return [s for i, s in enumerate(SOURCES) if bits >> i & 1]


def pack_probe(kind, probe_id, sources, size):
    return HEADER.pack(MAGIC, kind, source_bits(sources), 0, probe_id).ljust(size, b"\0")


def pack_followup(probe_id, sources, t2, t3, reason=""):
    """t2, t3: {source: ns} of the server's stamps."""
    why = reason.encode()[:512]
    return HEADER.pack(MAGIC, FOLLOWUP, source_bits(sources), 0, probe_id) + FOLLOWUP_BODY.pack(
        t2.get("software", 0), t3.get("software", 0), t2.get("hardware", 0),
        t3.get("hardware", 0), len(why)) + why


def unpack(data):
    """(kind, probe_id, sources, body) of a datagram of this protocol, or None."""
    if len(data) < HEADER.size:
        return None
    magic, kind, bits, _pad, probe_id = HEADER.unpack(data[:HEADER.size])
    if magic != MAGIC or kind not in (PROBE, REPLY, FOLLOWUP):
        return None
    body = None
    if kind == FOLLOWUP:
        if len(data) < MIN_SIZE:
            return None
        sw2, sw3, hw2, hw3, n = FOLLOWUP_BODY.unpack(data[HEADER.size:MIN_SIZE])
        stamps = {"software": (sw2 or None, sw3 or None), "hardware": (hw2 or None, hw3 or None)}
        body = {"stamps": stamps, "reason": data[MIN_SIZE:MIN_SIZE + n].decode(errors="replace")}
    return kind, probe_id, bits_sources(bits), body


# --- device ioctls ------------------------------------------------------------------

def _ioctl_ifreq_data(ifname, request, data):
    """ioctl(request) with a struct ifreq whose ifr_data points at a copy of data; returns
    what the kernel left in that copy."""
    name = ifname.encode()
    if not name or len(name) >= IFNAMSIZ:
        raise ToolError(f"bad interface name {ifname!r}")
    buf = array.array("B", data)  # its address stays put for the call
    ifreq = bytearray(struct.pack("16sP", name, buf.buffer_info()[0]).ljust(IFREQ_SIZE, b"\0"))
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        fcntl.ioctl(s.fileno(), request, ifreq)
    return buf.tobytes()


def get_ts_info(ifname):
    data = struct.pack("=I", ETHTOOL_GET_TS_INFO).ljust(TS_INFO.size, b"\0")
    return parse_ts_info(_ioctl_ifreq_data(ifname, SIOCETHTOOL, data))


def get_hwtstamp(ifname):
    """The device's current struct hwtstamp_config, or None where the driver has none
    (EOPNOTSUPP)."""
    try:
        data = _ioctl_ifreq_data(ifname, SIOCGHWTSTAMP, bytes(HWTSTAMP_CONFIG.size))
    except OSError as e:
        if e.errno == errno.EOPNOTSUPP:
            return None
        raise
    return parse_hwtstamp_config(data)


def set_hwtstamp(ifname, tx_type, rx_filter):
    """SIOCSHWTSTAMP; returns the config the driver applied (it may widen the filter)."""
    data = HWTSTAMP_CONFIG.pack(0, tx_type, rx_filter)
    return parse_hwtstamp_config(_ioctl_ifreq_data(ifname, SIOCSHWTSTAMP, data))


def hw_caps_missing(info):
    """The SOF_TIMESTAMPING_* capabilities hardware stamping needs that the device lacks."""
    return [f"SOF_TIMESTAMPING_{n}" for n in HW_CAPS_NEEDED if not info["so_timestamping"] & SOF[n]]


def hw_status(ifname):
    """(usable, why) of hardware stamping on ifname, for messages."""
    try:
        info = get_ts_info(ifname)
    except OSError as e:
        return False, f"{ifname}: ETHTOOL_GET_TS_INFO failed: {e.strerror}"
    lacking = hw_caps_missing(info)
    if lacking:
        return False, (f"{ifname} has no hardware stamps "
                       f"(ETHTOOL_GET_TS_INFO lacks {', '.join(lacking)})")
    try:
        cfg = get_hwtstamp(ifname)
    except OSError as e:
        return True, f"{ifname}: SIOCGHWTSTAMP failed ({e.strerror}): state unknown"
    if cfg is None:
        return True, f"{ifname}: SIOCGHWTSTAMP not supported: state unknown"
    if cfg["tx_type"] == HWTSTAMP_TX_OFF or cfg["rx_filter"] == HWTSTAMP_FILTER_NONE:
        return False, (f"hardware stamping is off on {ifname} ({tx_type_name(cfg['tx_type'])}, "
                       f"{rx_filter_name(cfg['rx_filter'])}): turn it on with "
                       f"'tstamp.py hwenable {ifname}'")
    return True, f"{ifname}: hardware stamping on"


def errname(num):
    # errno.errorcode names 95 ENOTSUP; the kernel and its documentation say EOPNOTSUPP.
    return "EOPNOTSUPP" if num == errno.EOPNOTSUPP else errno.errorcode.get(num, str(num))


def ifname_of(ifindex):
    try:
        return socket.if_indextoname(ifindex)
    except (OSError, TypeError):
        return None


# --- caps and hwenable --------------------------------------------------------------

def cmd_caps(args):
    try:
        info = get_ts_info(args.iface)
    except OSError as e:
        raise ToolError(f"{args.iface}: ETHTOOL_GET_TS_INFO: {e.strerror}") from e
    try:
        cfg = get_hwtstamp(args.iface)
        cfg_error = None
    except OSError as e:
        cfg, cfg_error = None, e.strerror
    hw_tx = bool(info["so_timestamping"] & SOF["TX_HARDWARE"])
    hw_rx = bool(info["so_timestamping"] & SOF["RX_HARDWARE"])
    if args.json:
        out = dict(info, interface=args.iface,
                   so_timestamping_names=sof_names(info["so_timestamping"]),
                   tx_type_names=tx_types_names(info["tx_types"]),
                   rx_filter_names=rx_filters_names(info["rx_filters"]),
                   hardware_tx=hw_tx, hardware_rx=hw_rx, hwtstamp_config=cfg)
        if cfg_error:
            out["hwtstamp_config_error"] = cfg_error
        print(json.dumps(out))
        return 0
    print(f"{args.iface}: time stamping capabilities (ETHTOOL_GET_TS_INFO)")
    print(f"  so_timestamping: 0x{info['so_timestamping']:x}"
          f" {' '.join(sof_names(info['so_timestamping'])) or '(none)'}")
    phc = info["phc_index"]
    print(f"  phc_index: {phc}{' (no PTP clock)' if phc < 0 else f' (/dev/ptp{phc})'}")
    print(f"  tx_types: 0x{info['tx_types']:x} "
          f"{' '.join(tx_types_names(info['tx_types'])) or '(none)'}")
    print(f"  rx_filters: 0x{info['rx_filters']:x} "
          f"{' '.join(rx_filters_names(info['rx_filters'])) or '(none)'}")
    if cfg_error:
        print(f"  hardware config (SIOCGHWTSTAMP): error: {cfg_error}")
    elif cfg is None:
        print("  hardware config (SIOCGHWTSTAMP): not supported")
    else:
        print(f"  hardware config (SIOCGHWTSTAMP): flags 0x{cfg['flags']:x} "
              f"{tx_type_name(cfg['tx_type'])} {rx_filter_name(cfg['rx_filter'])}")
    print(f"  hardware stamps: tx {'yes' if hw_tx else 'no'}, rx {'yes' if hw_rx else 'no'}")
    return 0


def cmd_hwenable(args):
    if args.off:
        tx, rx = HWTSTAMP_TX_OFF, HWTSTAMP_FILTER_NONE
    else:
        tx, rx = HWTSTAMP_TX_ON, HWTSTAMP_FILTER_ALL
    want = f"{tx_type_name(tx)}, {rx_filter_name(rx)}"
    try:
        cfg = set_hwtstamp(args.iface, tx, rx)
    except OSError as e:
        why = {
            errno.EOPNOTSUPP: "the device does not support hardware time stamping",
            errno.EPERM: "not permitted: SIOCSHWTSTAMP needs CAP_NET_ADMIN",
            errno.ERANGE: "the device supports time stamping but not this mode",
            errno.ENODEV: "no such device",
        }.get(e.errno, e.strerror)
        raise ToolError(f"{args.iface}: SIOCSHWTSTAMP ({want}): {why} "
                        f"({errname(e.errno)})") from e
    print(f"{args.iface}: hardware time stamping {'off' if args.off else 'on'}: "
          f"{tx_type_name(cfg['tx_type'])}, {rx_filter_name(cfg['rx_filter'])}")
    return 0


# --- sockets ------------------------------------------------------------------------

def resolve(host, port):
    try:
        family, _, _, _, addr = socket.getaddrinfo(host, port, 0, socket.SOCK_DGRAM)[0]
    except socket.gaierror as e:
        raise ToolError(f"{host}: {e.strerror}") from e
    return family, addr


def open_socket(family, sources):
    """A UDP socket stamping with the given sources, reporting the ingress interface."""
    sock = socket.socket(family, socket.SOCK_DGRAM)
    flags = COMMON_FLAGS
    for s in sources:
        flags |= SOURCE_FLAGS[s]
    if len(sources) > 1:
        flags |= SOF["OPT_TX_SWHW"]
    sock.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPING, flags)
    if family == socket.AF_INET6:
        sock.setsockopt(SOL_IPV6, socket.IPV6_RECVPKTINFO, 1)
    else:
        sock.setsockopt(SOL_IP, IP_PKTINFO, 1)
    return sock


ANC_SIZE = 512
SCM_TS_OPT_ID = 81  # asm-generic/socket.h, Linux 6.13


class StampedSender:
    """Sends datagrams on a socket with OPT_ID and tells the key their TX stamps will
    carry. Where the kernel takes it (SCM_TS_OPT_ID, Linux 6.13), the key is set per
    datagram, so a failed send cannot shift the keys of later ones; before that the
    kernel counts the socket's stamped datagrams from 0, and so do we."""

    def __init__(self, sock):
        self.sock, self.next_key, self.explicit = sock, 0, True

    def send(self, data, addr=None):
        key = self.next_key
        self.next_key = (self.next_key + 1) & 0xFFFFFFFF
        dest = () if addr is None else (addr,)
        if self.explicit:
            try:
                opt_id = (socket.SOL_SOCKET, SCM_TS_OPT_ID, struct.pack("=I", key))
                self.sock.sendmsg([data], [opt_id], 0, *dest)
                return key
            except OSError as e:
                if e.errno != errno.EINVAL or key != 0:
                    raise
                self.explicit = False  # an older kernel: nothing was sent, its count is 0
        self.sock.sendmsg([data], [], 0, *dest)
        return key


def read_errqueue(sock):
    """All TX stamps waiting on the error queue: [(key, {source: ns})]."""
    out = []
    while True:
        try:
            _data, anc, _flags, _addr = sock.recvmsg(64, ANC_SIZE,
                                                     socket.MSG_ERRQUEUE | socket.MSG_DONTWAIT)
        except BlockingIOError:
            return out
        got = tx_stamp_of(parse_cmsgs(anc))
        if got is not None:
            out.append(got)


def read_datagram(sock):
    """(data, addr, cmsgs) of the next datagram, or None if there is none now."""
    try:
        data, anc, _flags, addr = sock.recvmsg(65536, ANC_SIZE, socket.MSG_DONTWAIT)
    except BlockingIOError:
        return None
    return data, addr, parse_cmsgs(anc)


def wait_readable(sock, timeout_s):
    """Wait until data or an error-queue message (POLLERR) may be there. select() keeps
    microsecond timeouts (poll() rounds up to a millisecond)."""
    if timeout_s > 0:
        select.select([sock], [], [], timeout_s)


# --- server -------------------------------------------------------------------------

class Server:
    """Answers each probe with a reply, then, once the reply's TX stamps are in (or
    --stamp-wait-ms passed), with a follow-up carrying t2 and t3."""

    def __init__(self, sock, stamp_wait_s):
        self.sock, self.stamp_wait_s = sock, stamp_wait_s
        self.sender = StampedSender(sock)
        self.pending = {}   # key of a reply -> what its follow-up needs
        self.hw_why = {}    # ifindex -> (time, why hardware stamps are missing)

    def send(self, data, addr):
        """The OPT_ID key of the datagram sent, or None if it could not be sent."""
        try:
            return self.sender.send(data, addr)
        except OSError as e:
            print(f"tstamp server: send to {addr[0]}: {e.strerror}", file=sys.stderr)
            return None

    def on_probe(self, data, addr, cmsgs, probe_id, sources):
        key = self.send(pack_probe(REPLY, probe_id, sources, len(data)), addr)
        if key is None:
            return
        rx = cmsgs["stamps"]
        # Wait for a TX stamp only of a source that stamped the probe on the way in: a
        # device that gave no RX stamp will give no TX stamp either.
        want = [s for s in sources if s in rx]
        self.pending[key] = {"addr": addr, "id": probe_id, "sources": sources, "t2": rx,
                             "t3": {}, "want": want, "ifindex": cmsgs["ifindex"],
                             "deadline": time.monotonic() + self.stamp_wait_s}

    def on_tx_stamp(self, key, stamps):
        p = self.pending.get(key)
        if p is not None:
            p["t3"].update(stamps)

    def hardware_why(self, ifindex):
        now = time.monotonic()
        cached = self.hw_why.get(ifindex)
        if cached and now - cached[0] < 1:
            return cached[1]
        name = ifname_of(ifindex)
        why = hw_status(name)[1] if name else "ingress interface unknown"
        self.hw_why[ifindex] = (now, why)
        return why

    def flush(self):
        """Send the follow-ups whose stamps are in or whose wait is over."""
        now = time.monotonic()
        for key in list(self.pending):
            p = self.pending[key]
            if now < p["deadline"] and not all(s in p["t3"] for s in p["want"]):
                continue
            del self.pending[key]
            reason = ""
            if "hardware" in p["sources"] and not ("hardware" in p["t2"] and "hardware" in p["t3"]):
                reason = "server: " + self.hardware_why(p["ifindex"])
            self.send(pack_followup(p["id"], p["sources"], p["t2"], p["t3"], reason), p["addr"])

    def next_deadline(self):
        return min((p["deadline"] for p in self.pending.values()), default=None)

    def run(self):
        while True:
            for key, stamps in read_errqueue(self.sock):
                self.on_tx_stamp(key, stamps)
            got = read_datagram(self.sock)
            if got is not None:
                data, addr, cmsgs = got
                msg = unpack(data)
                if msg and msg[0] == PROBE:
                    self.on_probe(data, addr, cmsgs, msg[1], msg[2])
                    # A software TX stamp is usually there as soon as sendto() returns.
                    for key, stamps in read_errqueue(self.sock):
                        self.on_tx_stamp(key, stamps)
                self.flush()
                continue
            self.flush()
            deadline = self.next_deadline()
            wait_readable(self.sock, 3600 if deadline is None else deadline - time.monotonic())


def cmd_server(args):
    family, addr = resolve(args.bind, args.port)
    sock = open_socket(family, SOURCES)
    try:
        sock.bind(addr)
    except OSError as e:
        raise ToolError(f"bind {args.bind} port {args.port}: {e.strerror}") from e
    print(f"tstamp server: listening on {args.bind} port {args.port}", flush=True)
    try:
        Server(sock, args.stamp_wait_ms / 1000).run()
    except KeyboardInterrupt:
        return 0
    except OSError as e:
        raise ToolError(f"server socket: {e.strerror}") from e


# --- client -------------------------------------------------------------------------

class Probe:
    def __init__(self, sent):
        self.sent = sent
        self.replied = False
        self.followed = False
        self.t = {s: [None] * 4 for s in SOURCES}  # [t1, t2, t3, t4] per source
        self.reason = ""

    def complete(self, sources):
        """Reply and follow-up in, and every TX stamp that can still come: a source whose
        RX stamp of the reply is there has stamped the probe on the way out too."""
        if not (self.replied and self.followed):
            return False
        return all(self.t[s][0] is not None for s in sources if self.t[s][3] is not None)


class Client:
    def __init__(self, sock, sources, size, timeout_s):
        self.sock, self.sources, self.size, self.timeout_s = sock, sources, size, timeout_s
        self.probes = {}
        self.key_to_id = {}
        self.sender = StampedSender(sock)
        self.ifindex = None

    def handle_input(self):
        for key, stamps in read_errqueue(self.sock):
            probe = self.probes.get(self.key_to_id.get(key))
            if probe:
                for s, ns in stamps.items():
                    probe.t[s][0] = ns
        while (got := read_datagram(self.sock)) is not None:
            data, _addr, cmsgs = got
            msg = unpack(data)
            if not msg or msg[1] not in self.probes:
                continue
            kind, probe_id, _sources, body = msg
            probe = self.probes[probe_id]
            if kind == REPLY:
                probe.replied = True
                for s, ns in cmsgs["stamps"].items():
                    probe.t[s][3] = ns
                self.ifindex = cmsgs["ifindex"] or self.ifindex
            elif kind == FOLLOWUP:
                probe.followed = True
                for s, (t2, t3) in body["stamps"].items():
                    probe.t[s][1], probe.t[s][2] = t2, t3
                probe.reason = body["reason"]

    def pump(self, until, done=lambda: False):
        """Take in whatever arrives until the monotonic time until, or done()."""
        while True:
            self.handle_input()
            if done():
                return
            left = until - time.monotonic()
            if left <= 0:
                return
            wait_readable(self.sock, left)

    def run(self, n, interval_s, burst=1):
        """n probes, a burst of them back to back every interval_s; each burst waits for
        its replies (or the timeout) before the next."""
        start = time.monotonic()
        for first in range(0, n, burst):
            self.pump(start + first // burst * interval_s)
            ids = range(first, min(first + burst, n))
            for i in ids:
                self.probes[i] = Probe(time.monotonic())
                self.key_to_id[self.sender.send(pack_probe(PROBE, i, self.sources, self.size))] = i
            self.pump(self.probes[first].sent + self.timeout_s,
                      lambda: all(self.probes[i].complete(self.sources) for i in ids))


def cmd_client(args):
    sources = list(SOURCES) if args.source == "both" else [args.source]
    family, addr = resolve(args.connect, args.port)
    sock = open_socket(family, sources)
    try:
        sock.connect(addr)  # so that an ICMP port unreachable fails the next recv
    except OSError as e:
        raise ToolError(f"connect {args.connect} port {args.port}: {e.strerror}") from e
    # Early probes may go unstamped: the kernel turns RX software stamping on through a
    # deferred static-key switch. Warm-up probes are sent and not counted.
    client = Client(sock, sources, args.size, args.timeout_ms / 1000)
    try:
        client.run(args.warmup + args.count, args.interval_us / 1e6, args.burst)
    except ConnectionRefusedError as e:
        raise ToolError(f"no server at {args.connect} port {args.port} "
                        "(ICMP port unreachable)") from e
    except OSError as e:
        raise ToolError(f"client socket: {e.strerror}") from e
    probes = [client.probes[i] for i in range(args.warmup, args.warmup + args.count)]
    answered = [p for p in probes if p.replied]
    if not answered:
        raise ToolError(f"no reply from {args.connect} port {args.port} to {args.count} probes")

    gap_ns = None
    if args.calibrate_bps:
        gap_ns = wire_bytes(args.size, family == socket.AF_INET6) * 8 * 1e9 / args.calibrate_bps
    report = {
        "unit": "ns", "server": f"{args.connect} port {args.port}", "count": args.count,
        "warmup": args.warmup, "interval_us": args.interval_us, "burst": args.burst,
        "size": args.size,
        "answered": len(answered), "lost": len(probes) - len(answered),
        "followups_missing": sum(not p.followed for p in answered),
        "client_interface": ifname_of(client.ifindex) if client.ifindex else None,
        "calibrate_bps": args.calibrate_bps, "calibrate_gap_ns": gap_ns, "sources": {},
    }
    for s in sources:
        rows = [p.t[s] for p in answered]
        if all(t is None for r in rows for t in r):
            report["sources"][s] = {"available": False, "reason": why_missing(s, client, answered)}
        else:
            rep = report["sources"][s] = source_report(rows, gap_ns)
            if rep["probes_missing"]:
                rep["missing_reason"] = why_missing(s, client, answered)
    if args.json:
        print(json.dumps(rounded(report)))
    else:
        print_report(report)
    return 0


def why_missing(source, client, answered):
    """Why stamps of a source are missing, as far as each side's device tells."""
    if source == "software":
        return "the kernel gave no software stamp for some packets"
    whys = []
    name = ifname_of(client.ifindex) if client.ifindex else None
    if name:
        whys.append(f"client: {hw_status(name)[1]}")
    server_why = next((p.reason for p in answered if p.reason), "")
    if server_why:
        whys.append(server_why)
    return "; ".join(whys) or "no reason known"


def rounded(obj):
    """obj with its floats rounded to 0.1 (ns: more digits are noise)."""
    if isinstance(obj, float):
        return round(obj, 1)
    if isinstance(obj, dict):
        return {k: rounded(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [rounded(v) for v in obj]
    return obj


def print_report(r):
    burst = f"bursts of {r['burst']} " if r["burst"] > 1 else ""
    print(f"tstamp: {r['count']} probes of {r['size']} bytes to {r['server']}, {burst}every "
          f"{r['interval_us']} us ({r['warmup']} warm-up probes not counted): "
          f"{r['answered']} answered, {r['lost']} lost, {r['followups_missing']} follow-ups "
          f"missing; client interface {r['client_interface']}")
    if r["calibrate_bps"]:
        print(f"calibrated at {r['calibrate_bps']:g} bit/s: "
              f"one transmission = {r['calibrate_gap_ns']:.1f} ns")
    print("times in us; sd = sample standard deviation; OWD = t2 - t1 and reverse OWD = t4 - t3,"
          " each minus its minimum (DX's queuing delay: the clocks' offset cancels)")
    for s, rep in r["sources"].items():
        if not rep["available"]:
            print(f"{s}: unavailable: {rep['reason']}")
            continue
        miss = ", ".join(f"{k} {v}" for k, v in rep["missing"].items())
        print(f"{s}: {rep['probes_missing']} probes lacked a stamp (missing {miss})")
        if "missing_reason" in rep:
            print(f"  why: {rep['missing_reason']}")
        if "calibration_moved" in rep:
            moved = ", ".join(f"{k} {v}" for k, v in rep["calibration_moved"].items())
            print(f"  calibration moved: {moved}")
        for key, label in (("rtt", "RTT"), ("owd", "OWD"), ("owd_reverse", "reverse OWD")):
            st = rep[key]
            if st is None:
                print(f"  {label:<12} no samples")
                continue
            us = {k: v / 1000 for k, v in st.items() if k not in ("n", "base")}
            print(f"  {label:<12} n {st['n']:<6} mean {us['mean']:9.3f} sd {us['sd']:8.3f} "
                  f"min {us['min']:9.3f} max {us['max']:9.3f} range {us['range']:9.3f} "
                  f"p1 {us['p1']:9.3f} p50 {us['p50']:9.3f} p99 {us['p99']:9.3f}")


# --- command line -------------------------------------------------------------------

def parse_args(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("caps", help="an interface's time stamping capabilities and hardware config")
    p.add_argument("iface")
    p.add_argument("--json", action="store_true")
    p = sub.add_parser("hwenable", help="hardware time stamping on (TX_ON, FILTER_ALL) or off")
    p.add_argument("iface")
    p.add_argument("--off", action="store_true")
    p = sub.add_parser("server", help="answer probes with reply and follow-up")
    p.add_argument("--bind", required=True)
    p.add_argument("--port", type=int, default=9000)
    p.add_argument("--stamp-wait-ms", type=float, default=20,
                   help="how long to wait for a reply's TX stamps before the follow-up")
    p = sub.add_parser("client", help="send probes, report timestamp noise per source")
    p.add_argument("--connect", required=True)
    p.add_argument("--port", type=int, default=9000)
    p.add_argument("--count", type=positive, default=1000)
    p.add_argument("--interval-us", type=positive, default=1000)
    p.add_argument("--source", choices=("software", "hardware", "both"), default="software")
    p.add_argument("--burst", type=positive, default=1,
                   help="probes sent back to back every interval (calibration corrects batching)")
    p.add_argument("--size", type=int, default=64, help="probe and reply payload bytes")
    p.add_argument("--warmup", type=int, default=5, help="probes sent first and not counted")
    p.add_argument("--timeout-ms", type=positive, default=1000,
                   help="how long to wait for a probe's reply and follow-up")
    p.add_argument("--calibrate-bps", type=float, default=None,
                   help="apply DX's back-to-back calibration at this link rate")
    p.add_argument("--json", action="store_true", help="one JSON object, times in ns")
    args = ap.parse_args(argv)
    if args.cmd == "client" and not MIN_SIZE <= args.size <= 65000:
        ap.error(f"--size must be in {MIN_SIZE}..65000")
    if args.cmd == "client" and args.calibrate_bps is not None and args.calibrate_bps <= 0:
        ap.error("--calibrate-bps must be positive")
    return args


def positive(text):
    v = int(text)
    if v <= 0:
        raise argparse.ArgumentTypeError(f"{text}: must be positive")
    return v


def main(argv=None):
    args = parse_args(argv)
    run = {"caps": cmd_caps, "hwenable": cmd_hwenable, "server": cmd_server, "client": cmd_client}
    try:
        return run[args.cmd](args) or 0
    except ToolError as e:
        print(f"tstamp: {e}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
