# SPDX-License-Identifier: GPL-2.0
"""Host tests of tstamp.py's pure parts: UAPI struct parsing, flag naming, statistics,
calibration and the probe protocol. No root, no network.

    python3 -m unittest discover -s tools -p 'test_*.py'     (from the project root)
    cd tools && python3 -m unittest test_tstamp
"""
import contextlib
import errno
import io
import math
import os
import socket
import struct
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import tstamp  # noqa: E402


def ts_cmsg(sw=(0, 0), hw=(0, 0), ctype=37):
    """An SCM_TIMESTAMPING control message as recvmsg returns it."""
    return (socket.SOL_SOCKET, ctype, struct.pack("=6q", *sw, 0, 0, *hw))


def serr_cmsg(ee_errno=errno.ENOMSG, origin=4, info=0, data=0, level=0, ctype=11):
    """A sock_extended_err (IP_RECVERR) followed by a zeroed offender address."""
    serr = struct.pack("=IBBBBII", ee_errno, origin, 0, 0, 0, info, data)
    return (level, ctype, serr + bytes(16))


class Naming(unittest.TestCase):
    def test_sof_values_match_net_tstamp_h(self):
        self.assertEqual(tstamp.SOF["TX_HARDWARE"], 1 << 0)
        self.assertEqual(tstamp.SOF["RAW_HARDWARE"], 1 << 6)
        self.assertEqual(tstamp.SOF["OPT_ID"], 1 << 7)
        self.assertEqual(tstamp.SOF["OPT_TSONLY"], 1 << 11)
        self.assertEqual(tstamp.SOF["OPT_TX_SWHW"], 1 << 14)
        self.assertEqual(tstamp.SOF["TX_COMPLETION"], 1 << 18)

    def test_sof_names(self):
        self.assertEqual(tstamp.sof_names(0x1A), ["SOF_TIMESTAMPING_TX_SOFTWARE",
                                                  "SOF_TIMESTAMPING_RX_SOFTWARE",
                                                  "SOF_TIMESTAMPING_SOFTWARE"])
        self.assertEqual(tstamp.sof_names(1 << 31), ["bit 31"])
        self.assertEqual(tstamp.sof_names(0), [])

    def test_enum_masks(self):
        self.assertEqual(tstamp.tx_types_names(0b11), ["HWTSTAMP_TX_OFF", "HWTSTAMP_TX_ON"])
        self.assertEqual(tstamp.rx_filters_names(1 << 0 | 1 << 1 | 1 << 15),
                         ["HWTSTAMP_FILTER_NONE", "HWTSTAMP_FILTER_ALL", "HWTSTAMP_FILTER_NTP_ALL"])
        self.assertEqual(tstamp.rx_filters_names(1 << 20), ["HWTSTAMP_FILTER_20?"])
        self.assertEqual(tstamp.tx_type_name(1), "HWTSTAMP_TX_ON")
        self.assertEqual(tstamp.tx_type_name(9), "HWTSTAMP_TX_9?")
        self.assertEqual(tstamp.rx_filter_name(15), "HWTSTAMP_FILTER_NTP_ALL")

    def test_hw_caps_missing(self):
        self.assertEqual(tstamp.hw_caps_missing({"so_timestamping": 0x1A}),
                         ["SOF_TIMESTAMPING_TX_HARDWARE", "SOF_TIMESTAMPING_RX_HARDWARE",
                          "SOF_TIMESTAMPING_RAW_HARDWARE"])
        self.assertEqual(tstamp.hw_caps_missing({"so_timestamping": 0x5F}), [])


class Structs(unittest.TestCase):
    def test_ethtool_ts_info(self):
        # cmd, so_timestamping, phc_index, tx_types, tx_reserved[3], rx_filters, rx_reserved[3]
        raw = struct.pack("=IIiI3II3I", 0x41, 0x5F, 3, 0b11, 7, 7, 7, 0b10, 7, 7, 7)
        self.assertEqual(tstamp.TS_INFO.size, 44)
        self.assertEqual(tstamp.parse_ts_info(raw), {"so_timestamping": 0x5F, "phc_index": 3,
                                                     "tx_types": 0b11, "rx_filters": 0b10})
        no_phc = struct.pack("=IIi", 0x41, 0, -1) + bytes(32)
        self.assertEqual(tstamp.parse_ts_info(no_phc)["phc_index"], -1)

    def test_hwtstamp_config(self):
        self.assertEqual(tstamp.parse_hwtstamp_config(struct.pack("=iii", 0, 1, 1)),
                         {"flags": 0, "tx_type": 1, "rx_filter": 1})

    def test_scm_timestamping(self):
        raw = struct.pack("=6q", 1, 500, 99, 99, 2, 7)
        self.assertEqual(tstamp.parse_scm_timestamping(raw), (1_000_000_500, 2_000_000_007))

    def test_rx_cmsgs(self):
        pktinfo = (0, 8, struct.pack("=i4s4s", 3, bytes(4), bytes(4)))
        got = tstamp.parse_cmsgs([ts_cmsg(sw=(5, 6)), pktinfo])
        self.assertEqual(got["stamps"], {"software": 5_000_000_006})
        self.assertEqual(got["ifindex"], 3)
        self.assertIsNone(got["serr"])
        # SCM_TIMESTAMPING_NEW has the same layout on 64-bit.
        got = tstamp.parse_cmsgs([ts_cmsg(hw=(1, 1), ctype=65)])
        self.assertEqual(got["stamps"], {"hardware": 1_000_000_001})
        pktinfo6 = (41, socket.IPV6_PKTINFO, struct.pack("=16si", bytes(16), 4))
        self.assertEqual(tstamp.parse_cmsgs([pktinfo6])["ifindex"], 4)

    def test_tx_stamp(self):
        got = tstamp.tx_stamp_of(tstamp.parse_cmsgs([ts_cmsg(sw=(1, 2)), serr_cmsg(data=42)]))
        self.assertEqual(got, (42, {"software": 1_000_000_002}))
        # IPv6 sockets get the same struct in IPV6_RECVERR.
        cmsgs = [ts_cmsg(hw=(3, 0)), serr_cmsg(data=7, level=41, ctype=25)]
        got = tstamp.tx_stamp_of(tstamp.parse_cmsgs(cmsgs))
        self.assertEqual(got, (7, {"hardware": 3_000_000_000}))

    def test_not_a_tx_stamp(self):
        for serr in (serr_cmsg(origin=2, ee_errno=errno.ECONNREFUSED),  # ICMP error
                     serr_cmsg(info=1),                                 # SCM_TSTAMP_SCHED
                     serr_cmsg(ee_errno=0)):
            self.assertIsNone(tstamp.tx_stamp_of(tstamp.parse_cmsgs([ts_cmsg(sw=(1, 0)), serr])))
        self.assertIsNone(tstamp.tx_stamp_of(tstamp.parse_cmsgs([ts_cmsg(sw=(1, 0))])))


class Stats(unittest.TestCase):
    def test_percentile(self):
        v = [1, 2, 3, 4, 5]
        self.assertEqual(tstamp.percentile(v, 0), 1)
        self.assertEqual(tstamp.percentile(v, 50), 3)
        self.assertEqual(tstamp.percentile(v, 25), 2)
        self.assertEqual(tstamp.percentile(v, 100), 5)
        self.assertAlmostEqual(tstamp.percentile([0, 10], 1), 0.1)
        self.assertEqual(tstamp.percentile([7], 99), 7)
        with self.assertRaises(ValueError):
            tstamp.percentile([], 50)

    def test_summarize(self):
        st = tstamp.summarize([9, 2, 4, 4, 4, 5, 5, 7])
        self.assertEqual(st["n"], 8)
        self.assertEqual(st["mean"], 5)
        self.assertAlmostEqual(st["sd"], math.sqrt(32 / 7))
        self.assertEqual((st["min"], st["max"], st["range"]), (2, 9, 7))
        self.assertEqual(st["p50"], 4.5)
        # Median 4.5, absolute deviations 0.5 0.5 0.5 0.5 0.5 2.5 2.5 4.5: MAD 0.5.
        self.assertAlmostEqual(st["sd_robust"], 1.4826 * 0.5)
        # One huge outlier moves the sd, hardly the robust estimate.
        noisy = tstamp.summarize([9, 2, 4, 4, 4, 5, 5, 7, 10_000])
        self.assertGreater(noisy["sd"], 1000)
        self.assertLess(noisy["sd_robust"], 2)
        self.assertIsNone(tstamp.summarize([]))
        self.assertEqual(tstamp.summarize([3])["sd"], 0.0)

    def test_calibrate(self):
        self.assertEqual(tstamp.calibrate([0, 100, 150, 1000], 100), ([0, 100, 200, 1000], 1))
        # A batch of three: each moves behind the one before it, corrected.
        self.assertEqual(tstamp.calibrate([0, 10, 20], 100), ([0, 100, 200], 2))
        self.assertEqual(tstamp.calibrate([0, None, 50, 300], 100), ([0, None, 100, 300], 1))
        self.assertEqual(tstamp.calibrate([], 100), ([], 0))

    def test_wire_bytes(self):
        self.assertEqual(tstamp.wire_bytes(1472), 1538)  # a full 1500-byte IPv4 packet
        self.assertEqual(tstamp.wire_bytes(1452, ipv6=True), 1538)
        self.assertEqual(tstamp.wire_bytes(1), 84)       # minimum frame

    def test_probe_metrics(self):
        self.assertEqual(tstamp.probe_metrics([100, 1150, 1200, 2400]), (2250, 1050, 1200))
        self.assertEqual(tstamp.probe_metrics([100, 1150, None, 2400]), (None, 1050, None))
        self.assertEqual(tstamp.probe_metrics([None, None, None, None]), (None, None, None))

    def test_source_report(self):
        # Clocks 1000 ns apart; one probe queued 30 ns more on the way out; one lacks t4.
        rows = [[0, 1100, 1200, 300], [1000, 2130, 2200, 1300], [2000, 3100, 3200, None]]
        rep = tstamp.source_report(rows)
        self.assertEqual(rep["missing"], {"t1": 0, "t2": 0, "t3": 0, "t4": 1})
        self.assertEqual(rep["probes_missing"], 1)
        self.assertEqual(rep["rtt"]["n"], 2)
        self.assertEqual((rep["rtt"]["min"], rep["rtt"]["max"]), (200, 230))
        self.assertEqual(rep["owd"]["base"], 1100)
        self.assertEqual((rep["owd"]["min"], rep["owd"]["max"], rep["owd"]["n"]), (0, 30, 3))
        self.assertEqual(rep["owd_reverse"]["base"], -900)
        self.assertNotIn("calibration_moved", rep)

    def test_source_report_calibrated(self):
        rows = [[0, 500, 600, 1100], [10, 510, 610, 1110]]
        rep = tstamp.source_report(rows, gap_ns=100)
        self.assertEqual(rep["calibration_moved"], {"t1": 1, "t2": 1, "t3": 1, "t4": 1})
        self.assertEqual(rep["rtt"]["sd"], 0.0)
        self.assertEqual(rows[1][0], 10)  # the caller's rows are left alone


class Protocol(unittest.TestCase):
    def test_probe_roundtrip(self):
        data = tstamp.pack_probe(tstamp.PROBE, 12345, ["software", "hardware"], 64)
        self.assertEqual(len(data), 64)
        self.assertEqual(tstamp.unpack(data), (tstamp.PROBE, 12345, ["software", "hardware"], None))

    def test_followup_roundtrip(self):
        data = tstamp.pack_followup(7, ["hardware"], {"software": 11, "hardware": 13},
                                    {"software": 12}, "server: s0 has no hardware stamps")
        kind, probe_id, sources, body = tstamp.unpack(data)
        self.assertEqual((kind, probe_id, sources), (tstamp.FOLLOWUP, 7, ["hardware"]))
        self.assertEqual(body["stamps"], {"software": (11, 12), "hardware": (13, None)})
        self.assertEqual(body["reason"], "server: s0 has no hardware stamps")

    def test_foreign_datagrams(self):
        self.assertIsNone(tstamp.unpack(b"hello, world, not a probe"))
        self.assertIsNone(tstamp.unpack(b"TSd1"))
        self.assertIsNone(tstamp.unpack(tstamp.HEADER.pack(tstamp.MAGIC, tstamp.FOLLOWUP, 1, 0, 1)))
        self.assertIsNone(tstamp.unpack(tstamp.HEADER.pack(tstamp.MAGIC, 9, 1, 0, 1)))


class FakeSocket:
    """Records sendmsg calls; refuses SCM_TS_OPT_ID like a kernel before 6.13 if old."""

    def __init__(self, old):
        self.old, self.sent = old, []

    def sendmsg(self, buffers, ancdata, flags, *addr):
        if ancdata and self.old:
            raise OSError(errno.EINVAL, "Invalid argument")
        self.sent.append((buffers[0], ancdata, addr))


class Sender(unittest.TestCase):
    def test_explicit_keys(self):
        sock = FakeSocket(old=False)
        sender = tstamp.StampedSender(sock)
        self.assertEqual([sender.send(b"a"), sender.send(b"b", ("10.0.0.1", 9))], [0, 1])
        self.assertEqual(sock.sent[1][1], [(socket.SOL_SOCKET, 81, struct.pack("=I", 1))])
        self.assertEqual(sock.sent[1][2], (("10.0.0.1", 9),))

    def test_counting_on_older_kernels(self):
        sock = FakeSocket(old=True)
        sender = tstamp.StampedSender(sock)
        self.assertEqual([sender.send(b"a"), sender.send(b"b")], [0, 1])
        self.assertEqual([s[1] for s in sock.sent], [[], []])


class Waiting(unittest.TestCase):
    def test_probe_complete(self):
        p = tstamp.Probe(sent=0)
        self.assertFalse(p.complete(["software", "hardware"]))
        p.replied = p.followed = True
        # No RX stamp of the reply for either source: no TX stamp to wait for.
        self.assertTrue(p.complete(["software", "hardware"]))
        p.t["software"][3] = 5
        self.assertFalse(p.complete(["software", "hardware"]))
        p.t["software"][0] = 1
        self.assertTrue(p.complete(["software", "hardware"]))


class HardwareStatus(unittest.TestCase):
    def status(self, so_timestamping, cfg):
        saved = tstamp.get_ts_info, tstamp.get_hwtstamp
        tstamp.get_ts_info = lambda _: {"so_timestamping": so_timestamping, "phc_index": -1,
                                        "tx_types": 3, "rx_filters": 3}
        tstamp.get_hwtstamp = lambda _: cfg
        try:
            return tstamp.hw_status("c0")
        finally:
            tstamp.get_ts_info, tstamp.get_hwtstamp = saved

    def test_reasons(self):
        usable, why = self.status(0x1A, None)
        self.assertFalse(usable)
        self.assertIn("lacks SOF_TIMESTAMPING_TX_HARDWARE", why)
        usable, why = self.status(0x5F, {"flags": 0, "tx_type": 0, "rx_filter": 0})
        self.assertFalse(usable)
        self.assertIn("off on c0 (HWTSTAMP_TX_OFF, HWTSTAMP_FILTER_NONE)", why)
        self.assertIn("tstamp.py hwenable c0", why)
        self.assertTrue(self.status(0x5F, {"flags": 0, "tx_type": 1, "rx_filter": 1})[0])


class CommandLine(unittest.TestCase):
    def test_hwenable_errors_are_clear(self):
        def refuse(err):
            def set_hwtstamp(*_):
                raise OSError(err, os.strerror(err))
            return set_hwtstamp

        saved = tstamp.set_hwtstamp
        try:
            for err, words in ((errno.EOPNOTSUPP, "EOPNOTSUPP"), (errno.EPERM, "CAP_NET_ADMIN"),
                               (errno.ERANGE, "ERANGE")):
                tstamp.set_hwtstamp = refuse(err)
                with self.assertRaises(tstamp.ToolError) as cm:
                    tstamp.cmd_hwenable(tstamp.parse_args(["hwenable", "veth0"]))
                self.assertIn(words, str(cm.exception))
                self.assertIn("veth0", str(cm.exception))
        finally:
            tstamp.set_hwtstamp = saved

    def test_client_args(self):
        args = tstamp.parse_args(["client", "--connect", "10.10.2.2", "--source", "both"])
        self.assertEqual((args.port, args.count, args.interval_us, args.json),
                         (9000, 1000, 1000, False))
        for bad in (["--size", "8"], ["--count", "0"], ["--source", "ptp"]):
            with self.assertRaises(SystemExit), contextlib.redirect_stderr(io.StringIO()):
                tstamp.parse_args(["client", "--connect", "x", *bad])

    def test_json_rounding(self):
        self.assertEqual(tstamp.rounded({"a": [1.26, 3], "b": {"c": 2.04}}),
                         {"a": [1.3, 3], "b": {"c": 2.0}})


if __name__ == "__main__":
    unittest.main()
