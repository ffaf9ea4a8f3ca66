#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""Host tests of the packet peer's verdicts on the kernel's counters (no guest needed)."""

import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import pktpeer  # noqa: E402


def counters(**kw):
    d = {k: 0 for k in pktpeer.COUNTERS}
    d.update(kw)
    return d


class SkippedDataSentAgain(unittest.TestCase):
    RUN = {"lp_segments": 60, "bumped_resent": 1}

    def verdict(self, **kw):
        delta = counters(TCPRC3Sent=60, TCPRC3SackSkip=34, TCPSACKDiscard=83, **kw)
        return pktpeer.counter_expectations("rc3_sack_beyond_snd_nxt", delta, False, False,
                                            self.RUN)

    def test_resent_without_reneging_fails(self):
        self.assertTrue(any("sent again" in w for w in self.verdict()))

    def test_resent_after_declared_reneging_passes(self):
        # The kernel's RTO forgot the SACKs of a receiver that looked like reneging.
        self.assertEqual(self.verdict(TCPSACKReneging=1), [])

    def test_nothing_resent_passes(self):
        delta = counters(TCPRC3Sent=60, TCPRC3SackSkip=34)
        self.assertEqual(pktpeer.counter_expectations(
            "rc3_sack_beyond_snd_nxt", delta, False, False,
            {"lp_segments": 60, "bumped_resent": 0}), [])

    def test_no_skip_still_fails(self):
        delta = counters(TCPRC3Sent=60, TCPSACKReneging=1)
        self.assertTrue(any("TCPRC3SackSkip" in w for w in pktpeer.counter_expectations(
            "rc3_sack_beyond_snd_nxt", delta, False, False, self.RUN)))


class DelayReplay(unittest.TestCase):
    # 69 echoes, the first of a t1 never sent; 140 replayed on duplicate ACKs.
    RUN = {"delay_echoes": 69, "delay_forged": 1, "delay_replays": 140}

    def verdict(self, **kw):
        return pktpeer.counter_expectations("delay_replay", counters(**kw), True, True,
                                            self.RUN)

    def test_bound_samples_pass(self):
        self.assertEqual(self.verdict(TCPDelayStampSample=66, TCPDelayStampBad=140), [])

    def test_replayed_samples_fail(self):
        # What the kernel did before: replays past the device path's misses were samples.
        self.assertTrue(any("replayed" in w for w in self.verdict(
            TCPDelayStampSample=80, TCPDelayStampBad=0)))

    def test_uncounted_replays_fail(self):
        self.assertTrue(any("bad +0" in w for w in self.verdict(TCPDelayStampSample=60)))

    def test_no_samples_fail(self):
        self.assertNotEqual(self.verdict(TCPDelayStampBad=140), [])

    def test_not_offered_wants_nothing(self):
        self.assertEqual(pktpeer.counter_expectations("delay_replay", counters(), False, False,
                                                      {}), [])


class Md5Sig(unittest.TestCase):
    def test_layout(self):
        b = pktpeer.md5sig("10.10.9.2", b"key")
        self.assertEqual(len(b), 216)  # sizeof(struct tcp_md5sig)
        self.assertEqual(b[4:8], bytes([10, 10, 9, 2]))
        self.assertEqual(b[130:132], (3).to_bytes(2, sys.byteorder))
        self.assertEqual(b[136:139], b"key")


if __name__ == "__main__":
    unittest.main()
