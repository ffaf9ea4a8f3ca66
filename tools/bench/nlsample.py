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
import contextlib
import ctypes
import os
import socket
import struct
import threading

NETLINK_ROUTE, NETLINK_SOCK_DIAG = 0, 4
NLM_F_REQUEST, NLM_F_DUMP = 0x1, 0x300
NLMSG_ERROR, NLMSG_DONE = 2, 3
SOCK_DIAG_BY_FAMILY = 20
RTM_GETQDISC = 38
INET_DIAG_INFO, INET_DIAG_VEGASINFO, INET_DIAG_CONG, INET_DIAG_BBRINFO = 2, 3, 4, 16
TCP_ESTABLISHED = 1
TCA_KIND, TCA_STATS2 = 1, 7
TCA_STATS_QUEUE = 3
CLONE_NEWNET = 0x40000000

# struct tcp_info: offset and format of the fields the bench records.
TCP_INFO_FIELDS = {
    "options": (5, "B"),          # tcpi_options (TCPI_OPT_ECN: 8, ECN negotiated)
    "rtt_us": (68, "I"),          # tcpi_rtt, smoothed, us (ss prints it in ms)
    "cwnd": (80, "I"),            # tcpi_snd_cwnd
    "total_retrans": (100, "I"),  # tcpi_total_retrans
    "pacing_bps": (104, "Q"),     # tcpi_pacing_rate, bytes/s (converted below)
    "bytes_acked": (120, "Q"),    # tcpi_bytes_acked
}
TCP_INFO_MIN_LEN = 128
INET_DIAG_MSG_LEN = 72  # struct inet_diag_msg


_libc = ctypes.CDLL(None, use_errno=True)


@contextlib.contextmanager
def in_netns(netns):
    """Run the body in a named network namespace. setns(CLONE_NEWNET) moves only the
    calling thread, and a socket stays in the namespace it was created in: switch, create,
    switch back."""
    back = os.open(f"/proc/self/task/{threading.get_native_id()}/ns/net", os.O_RDONLY)
    target = os.open(f"/run/netns/{netns}", os.O_RDONLY)
    try:
        if _libc.setns(target, CLONE_NEWNET) != 0:
            err = ctypes.get_errno()
            raise OSError(err, f"setns to netns {netns}: {os.strerror(err)}")
        yield
    finally:
        _libc.setns(back, CLONE_NEWNET)
        os.close(target)
        os.close(back)


def _socket_in(netns, proto):
    with in_netns(netns):
        s = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, proto)
    s.bind((0, 0))
    return s


def _attrs(buf, off, end):
    """(type, payload) of each netlink attribute in buf[off:end]."""
    while off + 4 <= end:
        alen, atype = struct.unpack_from("HH", buf, off)
        if alen < 4:
            return
        yield atype & 0x3FFF, buf[off + 4:off + alen]
        off += (alen + 3) & ~3


class NetlinkSampler:
    def __init__(self, tcp_netns, qdisc_netns):
        self.diag = _socket_in(tcp_netns, NETLINK_SOCK_DIAG)
        self.route = _socket_in(qdisc_netns, NETLINK_ROUTE)
        self.ifindex = {}
        self.qdisc_netns = qdisc_netns
        self.seq = 0

    def close(self):
        self.diag.close()
        self.route.close()

    def _dump(self, sock, msg_type, payload):
        """Send a dump request; return the payloads of the answer's messages."""
        self.seq += 1
        sock.send(struct.pack("IHHII", 16 + len(payload), msg_type, NLM_F_REQUEST | NLM_F_DUMP,
                              self.seq, 0) + payload)
        out = []
        while True:
            buf = sock.recv(1 << 20)
            off = 0
            while off + 16 <= len(buf):
                mlen, mtype, _, seq, _ = struct.unpack_from("IHHII", buf, off)
                if mlen < 16:
                    raise OSError("netlink: malformed message")
                if seq == self.seq:
                    if mtype == NLMSG_DONE:
                        return out
                    if mtype == NLMSG_ERROR:
                        err = -struct.unpack_from("i", buf, off + 16)[0]
                        raise OSError(err, f"netlink dump: {os.strerror(err)}")
                    out.append(buf[off + 16:off + mlen])
                off += (mlen + 3) & ~3

    def tcp_established(self):
        """IPv4 TCP sockets in ESTABLISHED, with their tcp_info fields."""
        # struct inet_diag_req_v2: family, protocol, ext, pad, states, then a zero sockid.
        # idiag_ext is 8 bits: as ss does, the VEGASINFO bit asks every control for its
        # info (bbr_get_info() answers it with the BBR layout).
        ext = (1 << (INET_DIAG_INFO - 1)) | (1 << (INET_DIAG_VEGASINFO - 1)) \
            | (1 << (INET_DIAG_CONG - 1))
        req = struct.pack("BBBxI", socket.AF_INET, socket.IPPROTO_TCP, ext,
                          1 << TCP_ESTABLISHED) + bytes(48)
        socks = []
        for msg in self._dump(self.diag, SOCK_DIAG_BY_FAMILY, req):
            sport, dport = struct.unpack_from(">HH", msg, 4)
            s = {"sport": sport, "dport": dport}
            for atype, data in _attrs(msg, INET_DIAG_MSG_LEN, len(msg)):
                if atype == INET_DIAG_INFO and len(data) >= TCP_INFO_MIN_LEN:
                    for name, (off, fmt) in TCP_INFO_FIELDS.items():
                        s[name] = struct.unpack_from(fmt, data, off)[0]
                    s["pacing_bps"] *= 8
                elif atype == INET_DIAG_CONG:
                    s["cc"] = data.split(b"\0", 1)[0].decode(errors="replace")
                elif atype == INET_DIAG_BBRINFO and len(data) >= 20:
                    # bw (2 words), min_rtt (us), pacing_gain and cwnd_gain (1/256).
                    s["cc_min_rtt_us"], s["cc_pacing_gain"], s["cc_cwnd_gain"] = \
                        struct.unpack_from("III", data, 8)
            socks.append(s)
        return socks

    def qdisc_backlog(self, ifname, handle):
        """Packets queued in the qdisc with this handle on ifname (tc's "backlog ...p")."""
        if ifname not in self.ifindex:
            with in_netns(self.qdisc_netns):
                self.ifindex[ifname] = socket.if_nametoindex(ifname)
        # struct tcmsg: family, pad, pad, ifindex, handle, parent, info.
        req = struct.pack("BxxxiIII", socket.AF_UNSPEC, self.ifindex[ifname], 0, 0, 0)
        for msg in self._dump(self.route, RTM_GETQDISC, req):
            ifindex, qhandle = struct.unpack_from("iI", msg, 4)
            if ifindex != self.ifindex[ifname] or qhandle != handle:
                continue
            for atype, data in _attrs(msg, 20, len(msg)):
                if atype == TCA_STATS2:
                    for stype, sdata in _attrs(data, 0, len(data)):
                        if stype == TCA_STATS_QUEUE:
                            return struct.unpack_from("I", sdata, 0)[0]  # qlen
        return None
