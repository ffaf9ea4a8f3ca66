# SPDX-License-Identifier: GPL-2.0
"""TCP socket and qdisc state straight from netlink, without spawning `ss` or `tc`.

The bench samples every 10 ms. In the UML guest each `ss`/`tc` process costs tens of
milliseconds of wall time (process creation is UML's slowest operation), which on
simulated time made sampling most of a run's wall time; these queries cost a system call.

    diag = NetlinkSampler(tcp_netns="cli", qdisc_netns="rtr")
    diag.tcp_established()      # [{"sport", "dport", "rtt_us", "cwnd", ..., "cc", ...}]
    diag.qdisc_backlog("r1", 0x00100000)   # packets queued in qdisc 10: on r1 (handles are hex)

The fields are the ones `ss -ti` prints, read from the same struct tcp_info
(include/uapi/linux/tcp.h) and gnet_stats_queue (include/uapi/linux/gen_stats.h), plus
the congestion control's name and, where it reports the BBR layout (bbr, and this
project's timely and dx), struct tcp_bbr_info's three words: for TIMELY the last
completion's RTT and the source of its samples, for dx its base RTT and queuing delay.
"""
import os
import socket
import struct
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import inetdiag  # noqa: E402 (tools/lib: the netlink dump, shared with the selftests)

RTM_GETQDISC = 38
TCA_KIND, TCA_STATS2 = 1, 7
TCA_STATS_QUEUE = 3

# The struct tcp_info fields the bench records: its name for each (tools/lib/tcpinfo.py).
RECORDED = {
    "options": "options",            # TCPI_OPT_ECN: 8, ECN negotiated
    "rtt_us": "rtt",                 # smoothed, us (ss prints it in ms)
    "cwnd": "snd_cwnd",
    "total_retrans": "total_retrans",
    "pacing_bps": "pacing_rate",     # bytes/s in tcp_info (converted below)
    "bytes_acked": "bytes_acked",
    "snd_mss": "snd_mss",            # the MSS the segments carry (less options: 8 bytes
                                     # less with the delay-stamp option)
}


class NetlinkSampler:
    def __init__(self, tcp_netns, qdisc_netns):
        self.diag = inetdiag.InetDiag(tcp_netns)
        self.route = inetdiag.Netlink(inetdiag.NETLINK_ROUTE, qdisc_netns)
        self.ifindex = {}
        self.qdisc_netns = qdisc_netns

    def close(self):
        self.diag.close()
        self.route.close()

    def tcp_established(self):
        """IPv4 TCP sockets in ESTABLISHED, with their tcp_info fields."""
        socks = []
        for d in self.diag.tcp(ext=inetdiag.EXT_INFO | inetdiag.EXT_CC_INFO | inetdiag.EXT_CONG,
                               states=1 << inetdiag.TCP_ESTABLISHED):
            s = {"sport": d.sport, "dport": d.dport}
            info = d.tcp_info(RECORDED.values())
            if info is not None:
                for name, field in RECORDED.items():
                    s[name] = info[field]
                s["pacing_bps"] *= 8
            if d.cc is not None:
                s["cc"] = d.cc
            bbr = d.attrs.get(inetdiag.INET_DIAG_BBRINFO)
            if bbr is not None and len(bbr) >= 20:
                # bw (2 words), min_rtt (us), pacing_gain and cwnd_gain (1/256).
                s["cc_min_rtt_us"], s["cc_pacing_gain"], s["cc_cwnd_gain"] = \
                    struct.unpack_from("III", bbr, 8)
            socks.append(s)
        return socks

    def qdisc_backlog(self, ifname, handle):
        """Packets queued in the qdisc with this handle on ifname (tc's "backlog ...p")."""
        if ifname not in self.ifindex:
            with inetdiag.in_netns(self.qdisc_netns):
                self.ifindex[ifname] = socket.if_nametoindex(ifname)
        # struct tcmsg: family, pad, pad, ifindex, handle, parent, info.
        req = struct.pack("BxxxiIII", socket.AF_UNSPEC, self.ifindex[ifname], 0, 0, 0)
        for msg in self.route.dump(RTM_GETQDISC, req):
            ifindex, qhandle = struct.unpack_from("iI", msg, 4)
            if ifindex != self.ifindex[ifname] or qhandle != handle:
                continue
            for atype, data in inetdiag.attrs(msg, 20):
                if atype == TCA_STATS2:
                    for stype, sdata in inetdiag.attrs(data):
                        if stype == TCA_STATS_QUEUE:
                            return struct.unpack_from("I", sdata, 0)[0]  # qlen
        return None
