#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""Host tests of netbench's algorithm variants (the part that needs no guest)."""

import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import netbench  # noqa: E402


class IperfSeconds(unittest.TestCase):
    def test_whole_seconds_never_zero(self):
        # A jittered start must not truncate to "-t 0", which iperf3 runs without end.
        self.assertEqual(netbench.iperf3_seconds(0.0008, 1), 1)
        self.assertEqual(netbench.iperf3_seconds(0.0192, 3), 3)
        self.assertEqual(netbench.iperf3_seconds(0.0008, 2), 2)
        self.assertEqual(netbench.iperf3_seconds(1.0, 1.4), 1)
        self.assertEqual(netbench.iperf3_seconds(0, 0.2), 1)


class SplitAlgo(unittest.TestCase):
    def test_plain_and_known_variants(self):
        self.assertEqual(netbench.split_algo("cubic"), ("cubic", {}))
        self.assertEqual(netbench.split_algo("cubic+rc3"), ("cubic", {"rc3": True}))
        self.assertEqual(netbench.split_algo("dx+hw2000"), ("dx", {"hw_noise_ns": 2000}))
        self.assertEqual(netbench.split_algo("dx+cal1000"), ("dx", {"calibrate_mbps": 1000}))

    def test_noise_and_loss(self):
        self.assertEqual(netbench.split_algo("timely+jit50"), ("timely", {"ack_jitter_us": 50}))
        self.assertEqual(netbench.split_algo("dctcp+loss0.5"), ("dctcp", {"loss_pct": 0.5}))
        self.assertEqual(netbench.split_algo("cubic+loss1"), ("cubic", {"loss_pct": 1.0}))

    def test_baseline_tuning(self):
        self.assertEqual(netbench.split_algo("bbr+fq"), ("bbr", {"fq": True}))
        self.assertEqual(netbench.split_algo("dctcp+k20"), ("dctcp", {"ecn_k": 20}))
        self.assertEqual(netbench.split_algo("timely+noecn"), ("timely", {"no_ecn": True}))
        self.assertEqual(netbench.split_algo("cubic+iw17"), ("cubic", {"init_cwnd": 17}))

    def test_variants_combine(self):
        self.assertEqual(netbench.split_algo("dctcp+fq+k20"), ("dctcp", {"fq": True, "ecn_k": 20}))
        self.assertEqual(netbench.split_algo("dctcp+fq+jit100"),
                         ("dctcp", {"fq": True, "ack_jitter_us": 100}))
        for bad in ("dctcp+k5+k20", "dctcp+fq+loss1"):
            with self.assertRaises(SystemExit):
                netbench.split_algo(bad)

    def test_mixed_runs(self):
        self.assertEqual(netbench.split_mix("timely_patched/dctcp+k20"),
                         (["timely_patched", "dctcp"], {"ecn_k": 20}))
        self.assertEqual(netbench.split_mix("cubic"), (["cubic"], {}))
        sc = {"flows": [{"count": 2, "stop_s": 3}, {"count": 1, "stop_s": 3, "mix": 1}]}
        self.assertEqual(netbench.flow_mix(sc), [0, 0, 1])
        flows = [{"cc": "timely"}, {"cc": "timely"}, {"cc": "cubic"}]
        self.assertEqual(netbench.shares_by_cc(flows, [(0, 100.0), (1, 200.0), (2, 700.0)]),
                         {"mbps_by_cc": {"timely": 300.0, "cubic": 700.0},
                          "share_by_cc": {"timely": 30.0, "cubic": 70.0}})

    def test_unknown_variant_names_the_known_ones(self):
        for bad in ("timely+jit", "cubic+loss", "cubic+lossx", "cubic+fast", "dctcp+k0",
                    "cubic+iw0", "cubic+iw"):
            with self.assertRaises(SystemExit) as e:
                netbench.split_algo(bad)
            self.assertIn("+jitN, +lossP", str(e.exception.code))


if __name__ == "__main__":
    unittest.main()
