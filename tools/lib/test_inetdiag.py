#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Host tests of tools/lib's netlink dump, inet_diag and struct tcp_info parsing: canned
kernel answers, and a live dump of this namespace where netlink is allowed."""
import errno
import os
import socket
import struct
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import inetdiag  # noqa: E402
import tcpinfo  # noqa: E402


def nlmsg(mtype, seq, payload):
    """One netlink message, padded to 4 bytes as the kernel sends it."""
    msg = struct.pack("IHHII", 16 + len(payload), mtype, 2, seq, 0) + payload
    return msg + bytes(-len(msg) % 4)


def nlattr(atype, payload):
    attr = struct.pack("HH", 4 + len(payload), atype) + payload
    return attr + bytes(-len(attr) % 4)


def tcp_info_bytes(length=232, **fields):
    data = bytearray(length)
    for name, value in fields.items():
        off, fmt = tcpinfo.FIELDS[name]
        struct.pack_into(fmt, data, off, value)
    return bytes(data)


def diag_msg(sport, dport, *attrs):
    """struct inet_diag_msg (family, state, timer, retrans, sockid with the ports in
    network order, expires, rqueue, wqueue, uid, inode), then its attributes."""
    head = struct.pack("BBBB", socket.AF_INET, 1, 0, 0) + struct.pack(">HH", sport, dport)
    head += bytes(inetdiag.INET_DIAG_MSG_LEN - len(head))
    return head + b"".join(attrs)


class FakeNetlink:
    """A netlink socket that answers each send with the canned datagrams."""

    def __init__(self, datagrams):
        self.datagrams, self.sent = list(datagrams), []

    def send(self, data):
        self.sent.append(data)
        return len(data)

    def recv(self, size):
        return self.datagrams.pop(0)

    def close(self):
        pass


BBR = struct.pack("IIIII", 1000, 0, 512, 256, 512)  # bw lo/hi, min_rtt, pacing, cwnd gain


class CannedDump(unittest.TestCase):
    def answer(self):
        info = tcp_info_bytes(options=8, rto=204000, rtt=1500, snd_cwnd=10,
                              total_retrans=3, pacing_rate=1250000, bytes_acked=200001)
        first = diag_msg(40000, 5201, nlattr(inetdiag.INET_DIAG_INFO, info),
                         nlattr(inetdiag.INET_DIAG_CONG, b"dx\0"),
                         nlattr(inetdiag.INET_DIAG_BBRINFO, BBR))
        second = diag_msg(40001, 5201, nlattr(inetdiag.INET_DIAG_CONG, b"cubic\0"))
        return [
            # A message of an earlier dump, then this dump's first socket, in one datagram.
            nlmsg(20, 0, diag_msg(1, 2)) + nlmsg(20, 1, first),
            nlmsg(20, 1, second) + nlmsg(inetdiag.NLMSG_DONE, 1, struct.pack("i", 0)),
        ]

    def test_sockets_and_attributes(self):
        fake = FakeNetlink(self.answer())
        diag = inetdiag.InetDiag(sock=fake)
        socks = diag.tcp(ext=inetdiag.EXT_INFO | inetdiag.EXT_CONG,
                         states=1 << inetdiag.TCP_ESTABLISHED)
        self.assertEqual([(s.sport, s.dport) for s in socks], [(40000, 5201), (40001, 5201)])
        a, b = socks
        self.assertEqual((a.cc, b.cc), ("dx", "cubic"))
        self.assertEqual(a.cc_info, (inetdiag.INET_DIAG_BBRINFO, BBR))
        self.assertIsNone(b.cc_info)
        self.assertEqual(a.tcp_info(("rtt", "snd_cwnd", "bytes_acked", "rto")),
                         {"rtt": 1500, "snd_cwnd": 10, "bytes_acked": 200001, "rto": 204000})
        self.assertEqual(a.tcp_info()["pacing_rate"], 1250000)
        self.assertIsNone(b.tcp_info())

    def test_request(self):
        fake = FakeNetlink(self.answer())
        inetdiag.InetDiag(sock=fake).tcp(ext=inetdiag.EXT_INFO, states=1 << 1)
        (req,) = fake.sent
        mlen, mtype, flags, seq, _ = struct.unpack_from("IHHII", req)
        self.assertEqual((mlen, mtype, seq), (len(req), inetdiag.SOCK_DIAG_BY_FAMILY, 1))
        self.assertEqual(flags, inetdiag.NLM_F_REQUEST | inetdiag.NLM_F_DUMP)
        family, proto, ext, states = struct.unpack_from("BBBxI", req, 16)
        self.assertEqual((family, proto, ext, states),
                         (socket.AF_INET, socket.IPPROTO_TCP, inetdiag.EXT_INFO, 2))
        self.assertEqual(len(req), 16 + 8 + 48)  # inet_diag_req_v2 with its sockid

    def test_error_answer(self):
        fake = FakeNetlink([nlmsg(inetdiag.NLMSG_ERROR, 1, struct.pack("i", -errno.EPERM))])
        with self.assertRaises(OSError) as cm:
            inetdiag.InetDiag(sock=fake).tcp()
        self.assertEqual(cm.exception.errno, errno.EPERM)

    def test_malformed_message(self):
        fake = FakeNetlink([struct.pack("IHHII", 8, 20, 0, 1, 0)])
        with self.assertRaises(OSError):
            inetdiag.InetDiag(sock=fake).tcp()

    def test_nested_attributes(self):
        # rtnetlink's TCA_STATS2 nests TCA_STATS_QUEUE: attrs() reads both levels.
        inner = nlattr(3, struct.pack("IIIII", 7, 0, 0, 0, 0))
        outer = nlattr(7, inner) + nlattr(1, b"pfifo\0")
        (t, data), (t2, kind) = list(inetdiag.attrs(outer))
        self.assertEqual((t, t2, kind), (7, 1, b"pfifo\0"))
        self.assertEqual([(st, struct.unpack_from("I", d)[0]) for st, d in inetdiag.attrs(data)],
                         [(3, 7)])

    def test_truncated_attribute_stops(self):
        self.assertEqual(list(inetdiag.attrs(struct.pack("HH", 2, 1) + bytes(8))), [])


class TcpInfo(unittest.TestCase):
    def test_layout(self):
        # Fields in order, none overlapping, all within what getsockopt asks for.
        spans = sorted((off, off + struct.calcsize(fmt)) for off, fmt in tcpinfo.FIELDS.values())
        for (_, end), (start, _) in zip(spans, spans[1:]):
            self.assertLessEqual(end, start)
        self.assertLessEqual(spans[-1][1], tcpinfo.TCP_INFO_LEN)

    def test_short_struct(self):
        data = tcp_info_bytes(length=104, total_retrans=5, options=8)
        self.assertEqual(tcpinfo.parse(data, ("total_retrans", "options")),
                         {"total_retrans": 5, "options": 8})
        self.assertIsNone(tcpinfo.parse(data, ("bytes_acked",)))

    def test_getsockopt(self):
        ls = socket.create_server(("127.0.0.1", 0))
        c = socket.create_connection(ls.getsockname())
        s, _ = ls.accept()
        c.sendall(b"x" * 1000)
        s.recv(1000)
        info = tcpinfo.get(c)
        self.assertGreater(info["snd_cwnd"], 0)
        self.assertGreaterEqual(info["bytes_acked"], 1)
        for x in (c, s, ls):
            x.close()


class LiveDump(unittest.TestCase):
    """inet_diag of this namespace finds a connection of this process."""

    def test_finds_own_connection(self):
        try:
            diag = inetdiag.InetDiag()
        except OSError as e:
            self.skipTest(f"no NETLINK_SOCK_DIAG here: {e}")
        ls = socket.create_server(("127.0.0.1", 0))
        c = socket.create_connection(ls.getsockname())
        s, _ = ls.accept()
        try:
            socks = diag.tcp(ext=inetdiag.EXT_INFO | inetdiag.EXT_CONG,
                             states=1 << inetdiag.TCP_ESTABLISHED)
            mine = [d for d in socks if d.sport == c.getsockname()[1]]
            self.assertEqual(len(mine), 1)
            self.assertEqual(mine[0].dport, ls.getsockname()[1])
            self.assertTrue(mine[0].cc)
            self.assertIsNotNone(mine[0].tcp_info(("rtt", "snd_cwnd")))
        finally:
            for x in (c, s, ls):
                x.close()
            diag.close()


if __name__ == "__main__":
    unittest.main()
