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
        self.assertEqual(netbench.split_algo("dx+rc3lv"), ("dx", {"rc3": True, "rc3_dscp_map": 1}))
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
        self.assertEqual(netbench.split_algo("swift+ecnshare"), ("swift", {"ecn_share": True}))
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


class Senders(unittest.TestCase):
    """Item 4 of issue 30's review: incast from several sender namespaces."""

    SC = {"rate_mbit": 10000, "mtu": 9000, "senders": 4,
          "flows": [{"count": 16, "start_s": 0, "stop_s": 1}]}

    def test_namespaces_addresses_and_flows(self):
        self.assertEqual(netbench.sender_namespaces({}), ["cli"])
        self.assertEqual(netbench.sender_namespaces(self.SC), ["cli", "cli1", "cli2", "cli3"])
        self.assertEqual([netbench.flow_sender(self.SC, i) for i in range(6)], [0, 1, 2, 3, 0, 1])
        cmds = netbench.extra_senders_commands(self.SC)
        for i in (1, 2, 3):
            self.assertIn(f"ip netns add cli{i}", cmds)
            self.assertIn(f"ip link add c0 netns cli{i} type veth peer name rc{i} netns rtr", cmds)
            self.assertIn(f"ip -n cli{i} addr add 10.10.{100 + i}.1/24 dev c0", cmds)
            self.assertIn(f"ip -n rtr addr add 10.10.{100 + i}.2/24 dev rc{i}", cmds)
            self.assertIn(f"ip -n cli{i} link set c0 mtu 9000 up", cmds)
            self.assertIn(f"ip -n cli{i} route add default via 10.10.{100 + i}.2", cmds)
            self.assertIn(f"ip netns exec cli{i} sysctl -qw net.ipv4.tcp_delay_stamps=1", cmds)
        # Addresses only inside the guest's namespaces, none of the dumbbell's own.
        self.assertFalse(any("10.10.1." in c or "10.10.2." in c for c in cmds))
        self.assertEqual(netbench.extra_senders_commands({}), [])
        self.assertEqual(len(netbench.extra_senders_cleanup(self.SC)), 3)

    def test_every_sender_tuned_alike(self):
        _, variant = netbench.split_algo("dctcp+fq+iw17")
        cmds = netbench.sender_commands(self.SC, variant, ["dctcp"])
        for i, ns in enumerate(["cli", "cli1", "cli2", "cli3"]):
            self.assertIn(f"tc -n {ns} qdisc replace dev c0 root fq", cmds)
            gw = "10.10.1.2" if i == 0 else f"10.10.{100 + i}.2"
            self.assertIn(f"ip -n {ns} route replace default via {gw} initcwnd 17", cmds)
        self.assertIn("ip -n srv route replace 10.10.103.0/24 via 10.10.2.1 initrwnd 17", cmds)
        cmds = netbench.sender_commands(self.SC, {}, ["timely"])
        self.assertEqual(cmds, [f"ip netns exec {ns} sysctl -qw net.ipv4.tcp_delay_stamps=2"
                                for ns in ["cli", "cli1", "cli2", "cli3"]])
        # One sender: what the dumbbell alone had.
        self.assertEqual(netbench.sender_commands({}, {"fq": True}, ["cubic"]),
                         ["tc -n cli qdisc replace dev c0 root fq"])

    def test_scenarios(self):
        import json
        d = os.path.join(os.path.dirname(os.path.abspath(__file__)), "scenarios")
        for name, n in (("incast16_10g_senders4", 4), ("incast16_10g_senders16", 16),
                        ("incast16_senders4", 4), ("incast16_senders16", 16)):
            with open(os.path.join(d, f"{name}.json")) as f:
                sc = json.load(f)
            self.assertEqual((sc["name"], sc["senders"]), (name, n))
            self.assertFalse(sc.get("preconnect"))


class StampControls(unittest.TestCase):
    """Every control that acts on the delay-stamp option gets it offered, and its own RTT
    recorded (Swift's was missing: its ecn_share_10g rows at da86712 ran on the kernel RTT)."""

    def test_each_stamp_control_offers_the_option(self):
        for cc in ("timely", "timely_patched", "dx", "swift"):
            self.assertEqual(netbench.sender_commands({}, {}, [cc]),
                             ["ip netns exec cli sysctl -qw net.ipv4.tcp_delay_stamps=2"], cc)
        self.assertEqual(netbench.sender_commands({}, {}, ["dctcp"]), [])

    def test_controller_rtt(self):
        so = {"cc_min_rtt_us": 50, "cc_pacing_gain": 2 * 256, "cc_cwnd_gain": 10 * 256}
        self.assertEqual(netbench.controller_rtt(dict(so, cc="swift")),
                         {"ctl_rtt_us": 50, "ctl_source": 2})
        self.assertEqual(netbench.controller_rtt(dict(so, cc="swift-reno")),
                         {"ctl_rtt_us": 50, "ctl_source": 2})
        self.assertEqual(netbench.controller_rtt(dict(so, cc="dx")),
                         {"ctl_rtt_us": 60, "ctl_source": 2})
        self.assertEqual(netbench.controller_rtt(dict(so, cc="bbr")), {})


class EcnFallback(unittest.TestCase):
    def test_ecn_share_sibling_counts_as_the_control(self):
        _, share = netbench.split_mix("swift+ecnshare/cubic")
        self.assertTrue(netbench.same_control("swift-reno", "swift", share))
        self.assertTrue(netbench.same_control("dx", "dx", share))
        self.assertFalse(netbench.same_control("cubic", "swift", share))
        _, plain = netbench.split_mix("swift/cubic")
        self.assertFalse(netbench.same_control("swift-reno", "swift", plain))


class SlowReceiver(unittest.TestCase):
    """Issue 31 item 3: the bulk server reads every connection together no faster than
    --read-mbps (on a fake clock: the reader sleeps exactly as far as it is ahead)."""

    def test_reads_no_faster_than_its_rate(self):
        from unittest import mock
        import bulkflow
        clock = [100.0]
        with mock.patch.object(bulkflow.time, "monotonic", lambda: clock[0]), \
                mock.patch.object(bulkflow.time, "sleep",
                                  lambda s: clock.__setitem__(0, clock[0] + s)):
            r = bulkflow.SlowReader([], read_mbps=8)  # 1 MB/s, no listening port
            for _ in range(10):
                r.received(None, None, b"x" * 100_000)
            # 1 MB read: 1 s from the first read on (the first chunk is free).
            self.assertAlmostEqual(clock[0], 101.0)
            clock[0] += 5  # idle: the reader may catch up, no faster than on average
            r.received(None, None, b"x" * 2_000_000)
            self.assertAlmostEqual(clock[0], 106.0)  # 3 MB in 6 s: behind, no sleep
            r.received(None, None, b"x" * 4_000_000)
            self.assertAlmostEqual(clock[0], 107.0)  # 7 MB: 1 s ahead


if __name__ == "__main__":
    unittest.main()
