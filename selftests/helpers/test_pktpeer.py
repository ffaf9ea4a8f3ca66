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


if __name__ == "__main__":
    unittest.main()
