# SPDX-License-Identifier: GPL-2.0
"""TCP sockets' state over inet_diag netlink (NETLINK_SOCK_DIAG: what `ss -ti` reads),
and the netlink dump they share with rtnetlink queries.

    with inetdiag.InetDiag() as diag:           # this namespace; InetDiag("cli"): another's
        for s in diag.tcp(ext=inetdiag.EXT_INFO | inetdiag.EXT_CONG,
                          states=1 << inetdiag.TCP_ESTABLISHED):
            s.sport, s.dport, s.cc, s.tcp_info(("rtt", "snd_cwnd"))

One dump costs a system call or two, where spawning `ss` costs tens of milliseconds in the
UML guest, and a getsockopt per socket a system call each. inet_diag takes no socket
lock: a dump's get_info races the ACK path, as ss's does. Layouts: include/uapi/linux/
netlink.h, sock_diag.h, inet_diag.h.
"""
import contextlib
import ctypes
import os
import socket
import struct
import threading

import tcpinfo

NETLINK_ROUTE, NETLINK_SOCK_DIAG = 0, 4
NLM_F_REQUEST, NLM_F_DUMP = 0x1, 0x300
NLMSG_ERROR, NLMSG_DONE = 2, 3
NLMSG_HDR = struct.Struct("IHHII")  # struct nlmsghdr: len, type, flags, seq, pid
SOCK_DIAG_BY_FAMILY = 20
INET_DIAG_MSG_LEN = 72  # struct inet_diag_msg, before its attributes
# Attributes of an inet_diag answer, and the idiag_ext bits that ask for them (bit type - 1).
INET_DIAG_INFO, INET_DIAG_VEGASINFO, INET_DIAG_CONG = 2, 3, 4
INET_DIAG_DCTCPINFO, INET_DIAG_BBRINFO = 9, 16
EXT_INFO = 1 << (INET_DIAG_INFO - 1)
EXT_CONG = 1 << (INET_DIAG_CONG - 1)
# idiag_ext is 8 bits, so DCTCPINFO and BBRINFO have no bit of their own: as for ss, the
# VEGASINFO bit asks every control for its info, each answering in its own layout
# (bbr_get_info() with the BBR one, as this project's timely and dx do).
EXT_CC_INFO = 1 << (INET_DIAG_VEGASINFO - 1)
CC_INFO_TYPES = (INET_DIAG_VEGASINFO, INET_DIAG_DCTCPINFO, INET_DIAG_BBRINFO)
TCP_ESTABLISHED = 1
ALL_STATES = 0xFFFFFFFF
CLONE_NEWNET = 0x40000000

_libc = ctypes.CDLL(None, use_errno=True)


@contextlib.contextmanager
def in_netns(netns):
    """Run the body in a named network namespace (/run/netns/NAME). setns(CLONE_NEWNET)
    moves only the calling thread, and a socket stays in the namespace it was created in:
    switch, create, switch back."""
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


def attrs(buf, off=0, end=None):
    """(type, payload) of each netlink attribute in buf[off:end]."""
    end = len(buf) if end is None else end
    while off + 4 <= end:
        alen, atype = struct.unpack_from("HH", buf, off)
        if alen < 4:
            return
        yield atype & 0x3FFF, bytes(buf[off + 4:off + alen])
        off += (alen + 3) & ~3


def messages(buf):
    """(type, seq, payload) of each netlink message in one datagram."""
    off = 0
    while off + NLMSG_HDR.size <= len(buf):
        mlen, mtype, _, seq, _ = NLMSG_HDR.unpack_from(buf, off)
        if mlen < NLMSG_HDR.size:
            raise OSError("netlink: malformed message")
        yield mtype, seq, bytes(buf[off + NLMSG_HDR.size:off + mlen])
        off += (mlen + 3) & ~3


class Netlink:
    """A netlink socket of one protocol in one network namespace (this one by default),
    for dumps. sock: an already open socket (tests)."""

    def __init__(self, proto, netns=None, sock=None):
        if sock is None:
            if netns is None:
                sock = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, proto)
            else:
                with in_netns(netns):
                    sock = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, proto)
            sock.bind((0, 0))
        self.sock = sock
        self.seq = 0

    def close(self):
        self.sock.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def dump(self, msg_type, payload):
        """Send a dump request; the payloads of the answer's messages. OSError with the
        kernel's errno if it answers with an error."""
        self.seq += 1
        self.sock.send(NLMSG_HDR.pack(NLMSG_HDR.size + len(payload), msg_type,
                                      NLM_F_REQUEST | NLM_F_DUMP, self.seq, 0) + payload)
        out = []
        while True:
            for mtype, seq, msg in messages(self.sock.recv(1 << 20)):
                if seq != self.seq:  # left over from an earlier dump
                    continue
                if mtype == NLMSG_DONE:
                    return out
                if mtype == NLMSG_ERROR:
                    err = -struct.unpack_from("i", msg, 0)[0]
                    raise OSError(err, f"netlink dump: {os.strerror(err)}")
                out.append(msg)


class DiagSocket:
    """One socket of an inet_diag dump: its ports and its attributes by type."""

    def __init__(self, msg):
        self.sport, self.dport = struct.unpack_from(">HH", msg, 4)
        self.attrs = dict(attrs(msg, INET_DIAG_MSG_LEN))

    @property
    def cc(self):
        """The congestion control's name (with EXT_CONG), or None."""
        data = self.attrs.get(INET_DIAG_CONG)
        return None if data is None else data.split(b"\0", 1)[0].decode(errors="replace")

    @property
    def cc_info(self):
        """(attribute type, payload) of the control's own info (with EXT_CC_INFO), or None."""
        for t in CC_INFO_TYPES:
            if t in self.attrs:
                return t, self.attrs[t]
        return None

    def tcp_info(self, names=None):
        """The named struct tcp_info fields (with EXT_INFO; tcpinfo.FIELDS), or None."""
        data = self.attrs.get(INET_DIAG_INFO)
        return None if data is None else tcpinfo.parse(data, names)


def tcp_request(ext=0, states=ALL_STATES, family=socket.AF_INET):
    """struct inet_diag_req_v2 for a TCP dump: family, protocol, ext, pad, states, then a
    zero inet_diag_sockid (every socket)."""
    return struct.pack("BBBxI", family, socket.IPPROTO_TCP, ext, states) + bytes(48)


class InetDiag(Netlink):
    """inet_diag of one network namespace (this one by default)."""

    def __init__(self, netns=None, sock=None):
        super().__init__(NETLINK_SOCK_DIAG, netns, sock)

    def tcp(self, ext=0, states=ALL_STATES, family=socket.AF_INET):
        """The TCP sockets in the given states (bit 1 << TCP_*), with the attributes ext
        asks for (EXT_*), as DiagSockets."""
        return [DiagSocket(m) for m in self.dump(SOCK_DIAG_BY_FAMILY,
                                                 tcp_request(ext, states, family))]
