// SPDX-License-Identifier: GPL-2.0

//! Model check of the TIMELY control laws: N flows through one bottleneck, simulated in
//! 100 ns steps with the same `Timely` code the kernel module runs.
//!
//! Each flow sends as a fluid at its rate; every `ack_bytes` (two 1448-byte packets, as a
//! Linux receiver ACKs) an ACK carries an RTT sample: the propagation RTT plus the
//! bottleneck queue's delay when the data was sent, plus a uniform [0, `ack_jitter_ns`]
//! of host noise, rounded to the microsecond as the kernel's samples are. The controller
//! sees it one RTT later (so the feedback delay grows with the queue, as in [Z]'s model),
//! through the kernel module's own `Segmenter` (segments of `seg_bytes`, the 64 KB window
//! minimum), and updates once per completion, with its duration. The queue is a FIFO
//! without a limit (TIMELY assumes a lossless fabric).
//!
//! Checked against the analysis of Zhu et al., "ECN or Delay" (CoNEXT'16):
//! - patched TIMELY reaches equal rates and the RTT of Theorem 5,
//!   `T_low * (1 + N delta / (beta C))`, whatever the starting rates;
//! - a lone patched flow circles that point at the papers' constants, which are short
//!   of damping for one flow, unless its rate ceiling sits just above the link's rate;
//! - with 64 flows, the 64 KB window's minimum lags the queue enough to cost patched
//!   TIMELY a large part of the link, and a window of one segment does not;
//! - original TIMELY has no unique fixed point (Theorem 4): with exact samples its flows
//!   stay where they start; through the segmenter they drift together, and its deep
//!   gradient cuts leave part of the link unused.

extern crate std;

use super::fixed::PPM;
use super::timely::{patched_weight_ppm, Mode, Params, Segmenter, Timely, Variant};
use std::{collections::VecDeque, vec::Vec};

const STEP_NS: u64 = 100;

/// Result of one simulation: averages over the last quarter of the run.
#[derive(Debug)]
pub struct Outcome {
    pub rates_bps: Vec<f64>,
    pub rtt_us: f64,
    pub jain: f64,
    pub utilization: f64,
    /// Of the patched law's weighted updates in the measured quarter, the share whose
    /// gradient weight was 0 or 1.
    pub saturated_weight_share: f64,
    /// The mean completion RTT of those updates whose weight was 1 (all cut, no
    /// increase), and of those whose weight was 0 (all increase); 0 if none.
    pub rtt_at_weight_one_us: f64,
    pub rtt_at_weight_zero_us: f64,
    /// The smallest and largest sum of the flows' rates, and network RTT, over the
    /// measured quarter: how far the flows swing around their mean.
    pub total_rate_range_bps: (u64, u64),
    pub rtt_range_us: (f64, f64),
}

pub struct Scenario {
    pub variant: Variant,
    pub params: Params,
    pub capacity_bps: u64,
    pub prop_rtt_ns: u64,
    pub start_rates_bps: Vec<u64>,
    pub duration_ns: u64,
    /// Bytes each ACK acknowledges.
    pub ack_bytes: u64,
    /// Each ACK's RTT sample is late by a uniform [0, `ack_jitter_ns`] (seeded).
    pub ack_jitter_ns: u64,
}

pub fn jain(xs: &[f64]) -> f64 {
    let s: f64 = xs.iter().sum();
    let s2: f64 = xs.iter().map(|x| x * x).sum();
    s * s / (xs.len() as f64 * s2)
}

struct Flow {
    cc: Timely,
    seg: Segmenter,
    /// Bits sent since the last ACK boundary, times 1e9 (bit-nanoseconds per second): a
    /// flow slower than 10 Mbit/s sends less than a bit per step, which whole bits would
    /// lose.
    ack_bit_ns: u128,
    /// (time the ACK is seen, its RTT sample in ns) of data in flight, in order.
    pending: VecDeque<(u64, u64)>,
    /// Bits delivered during the measurement window, times 1e9.
    measured_bit_ns: u128,
}

/// A seeded generator for the ACKs' jitter (64-bit LCG, high bits).
struct Lcg(u64);

impl Lcg {
    fn below(&mut self, n: u64) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        if n == 0 {
            0
        } else {
            (self.0 >> 33) % (n + 1)
        }
    }
}

pub fn simulate(s: &Scenario) -> Outcome {
    // As the module passes them: the other variant's rules off.
    let params = s.params.for_variant(s.variant);
    let mut flows: Vec<Flow> = s
        .start_rates_bps
        .iter()
        .map(|&r| Flow {
            cc: Timely::new(&params, r),
            seg: Segmenter::default(),
            ack_bit_ns: 0,
            pending: VecDeque::new(),
            measured_bit_ns: 0,
        })
        .collect();
    let mut rng = Lcg(1);
    // Queue in bit-nanoseconds / 1e9 terms: keep bits * 1e9 to stay integral.
    let mut queue_bit_ns: u128 = 0;
    let measure_from = s.duration_ns - s.duration_ns / 4;
    let (mut rtt_sum, mut rtt_n, mut served_bits) = (0f64, 0u64, 0u128);
    let mut updates = 0u64;
    // (sum of completion RTTs in us, count) at weight 1 and at weight 0: the saturated
    // updates.
    let (mut at_one, mut at_zero) = ((0u64, 0u64), (0u64, 0u64));
    let (mut total_rate_range_bps, mut rtt_range_us) = ((u64::MAX, 0), (f64::MAX, 0f64));
    let mut t = 0;
    while t < s.duration_ns {
        let queue_delay_ns = (queue_bit_ns / u128::from(s.capacity_bps)) as u64;
        let rtt_ns = s.prop_rtt_ns + queue_delay_ns;
        let mut arrivals: u128 = 0;
        for f in flows.iter_mut() {
            let bits_ns = u128::from(f.cc.rate_bps) * u128::from(STEP_NS);
            arrivals += bits_ns;
            f.ack_bit_ns += bits_ns;
            let ack_bit_ns = u128::from(s.ack_bytes * 8) * 1_000_000_000;
            while f.ack_bit_ns >= ack_bit_ns {
                f.ack_bit_ns -= ack_bit_ns;
                // The ACKed data's last bit leaves the queue after the current backlog;
                // the sample carries the host's noise, and ACKs arrive in order.
                let sample = rtt_ns + rng.below(s.ack_jitter_ns);
                let due = f.pending.back().map_or(0, |&(d, _)| d).max(t + sample);
                f.pending.push_back((due, sample));
            }
            while let Some(&(due, rtt)) = f.pending.front() {
                if due > t {
                    break;
                }
                f.pending.pop_front();
                // Rounded to the microsecond, as the kernel's samples are.
                let rtt_us = ((rtt + 500) / 1000) as u32;
                if let Some(c) = f
                    .seg
                    .on_ack(&params, t / 1000, s.ack_bytes as u32, Some(rtt_us))
                {
                    f.cc.on_segment(&params, s.variant, &c, false);
                    if t >= measure_from && f.cc.mode == Mode::Weighted as u8 {
                        let w = patched_weight_ppm(f.cc.gradient_ppm.into());
                        updates += 1;
                        let at = match w {
                            0 => &mut at_zero,
                            PPM => &mut at_one,
                            _ => continue,
                        };
                        at.0 += u64::from(c.rtt_us);
                        at.1 += 1;
                    }
                }
            }
            if t >= measure_from {
                f.measured_bit_ns += bits_ns;
            }
        }
        let service = u128::from(s.capacity_bps) * u128::from(STEP_NS);
        let backlog = queue_bit_ns + arrivals;
        let served = backlog.min(service);
        queue_bit_ns = backlog - served;
        if t >= measure_from {
            let rtt_us = rtt_ns as f64 / 1000.0;
            rtt_sum += rtt_us;
            rtt_n += 1;
            served_bits += served;
            // The flows' rates this step, as they sent: what `arrivals` summed.
            let total_bps = (arrivals / u128::from(STEP_NS)) as u64;
            total_rate_range_bps = (
                total_rate_range_bps.0.min(total_bps),
                total_rate_range_bps.1.max(total_bps),
            );
            rtt_range_us = (rtt_range_us.0.min(rtt_us), rtt_range_us.1.max(rtt_us));
        }
        t += STEP_NS;
    }
    let window_s = (s.duration_ns - measure_from) as f64 / 1e9;
    let rates: Vec<f64> = flows
        .iter()
        .map(|f| f.measured_bit_ns as f64 / 1e9 / window_s)
        .collect();
    Outcome {
        jain: jain(&rates),
        rates_bps: rates,
        rtt_us: rtt_sum / rtt_n as f64,
        utilization: served_bits as f64 / 1e9 / window_s / s.capacity_bps as f64,
        saturated_weight_share: (at_one.1 + at_zero.1) as f64 / updates.max(1) as f64,
        rtt_at_weight_one_us: at_one.0 as f64 / at_one.1.max(1) as f64,
        rtt_at_weight_zero_us: at_zero.0 as f64 / at_zero.1.max(1) as f64,
        total_rate_range_bps,
        rtt_range_us,
    }
}

fn paper_scenario(variant: Variant, start_rates_bps: Vec<u64>, duration_ns: u64) -> Scenario {
    Scenario {
        variant,
        params: Params::PAPER,
        capacity_bps: 10_000_000_000,
        prop_rtt_ns: 10_000,
        start_rates_bps,
        duration_ns,
        ack_bytes: 2 * 1448,
        ack_jitter_ns: 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::println;

    fn theorem5_rtt_us(p: &Params, n: usize, capacity_bps: u64) -> f64 {
        let x = n as f64 * p.delta_bps() as f64
            / (p.patched_beta_ppm as f64 / 1e6 * capacity_bps as f64);
        p.rtt_ref_us() as f64 * (1.0 + x)
    }

    /// Patched TIMELY from `starts`, with up to `ack_jitter_ns` of noise on each sample:
    /// equal rates, a full link and Theorem 5's RTT (within 10%).
    fn check_patched(starts: Vec<u64>, ack_jitter_ns: u64) {
        let n = starts.len();
        let s = Scenario {
            ack_jitter_ns,
            ..paper_scenario(Variant::Patched, starts, 200_000_000)
        };
        let o = simulate(&s);
        let expect = theorem5_rtt_us(&s.params, n, s.capacity_bps);
        println!(
            "patched N={n}, jitter {ack_jitter_ns} ns: RTT {:.1} us (Theorem 5: {expect:.1}), Jain {:.4}, utilization {:.3}, rates {:?}",
            o.rtt_us, o.jain, o.utilization,
            o.rates_bps.iter().map(|r| (r / 1e6).round()).collect::<Vec<_>>()
        );
        assert!(o.jain >= 0.99, "Jain {}", o.jain);
        assert!(
            (o.rtt_us - expect).abs() <= 0.1 * expect,
            "RTT {} vs {expect}",
            o.rtt_us
        );
        assert!(o.utilization >= 0.95, "utilization {}", o.utilization);
    }

    #[test]
    fn patched_two_flows_from_unequal_starts() {
        check_patched(std::vec![7_000_000_000, 3_000_000_000], 0);
    }

    #[test]
    fn patched_ten_flows() {
        let starts = (0..10).map(|i| 250_000_000 + i * 200_000_000).collect();
        check_patched(starts, 0);
    }

    #[test]
    fn patched_four_flows_with_ack_jitter() {
        // Host noise of up to 5 us on every ACK's sample (a quarter of the 20 us minimum
        // RTT): the 64 KB window minimum keeps the fixed point.
        check_patched(
            std::vec![4_000_000_000, 3_000_000_000, 2_000_000_000, 1_000_000_000],
            5_000,
        );
    }

    #[test]
    fn original_leaves_capacity_unused() {
        // Theorem 4's continuum of fixed points: in a fluid model with exact samples the
        // flows stay where they start (from 7/3 Gbit/s it ended at 9.8/0.19). Through the
        // kernel's segmenter, with samples rounded to the microsecond and the 64 KB window
        // minimum, the flows drift towards each other instead, and the original law's
        // deep gradient cuts leave a tenth of the link unused either way.
        let even = simulate(&paper_scenario(
            Variant::Original,
            std::vec![5_000_000_000; 2],
            200_000_000,
        ));
        let skewed = simulate(&paper_scenario(
            Variant::Original,
            std::vec![7_000_000_000, 3_000_000_000],
            200_000_000,
        ));
        for (name, o) in [("5/5", &even), ("7/3", &skewed)] {
            println!(
                "original from {name}: {:?} Mbit/s, Jain {:.4}, RTT {:.1} us, utilization {:.3}",
                o.rates_bps
                    .iter()
                    .map(|r| (r / 1e6).round())
                    .collect::<Vec<_>>(),
                o.jain,
                o.rtt_us,
                o.utilization
            );
            assert!(o.utilization < 0.95, "utilization {}", o.utilization);
        }
    }

    #[test]
    fn patched_many_flows_need_a_short_window() {
        // 64 flows at 10 Gbit/s: a flow completes a 16 KB segment every 0.84 ms, so an
        // unbounded 64 KB window's minimum lags the queue by three of them (about six RTTs
        // at the fixed point) and the flows overshoot and back off together. A window of
        // one segment, or one bounded by three or four RTTs (`patched_rtt_window_rtts`,
        // default 4), holds the link, with 64 flows at Theorem 5's point. The bench sees the
        // same (`incast64_10g_nobound` against `incast64_10g_window16k`: 66.9% against
        // 99.2%). With 128 flows the point (850 us) lies above T_high, where Theorem 5 does
        // not hold.
        for n in [64u64, 128] {
            let starts: Vec<u64> = (0..n).map(|i| 5_000_000_000 / n * (1 + i % 3)).collect();
            let run = |window: u32, rtts: u32| {
                let mut s = paper_scenario(Variant::Patched, starts.clone(), 200_000_000);
                s.params.rtt_window_bytes = window;
                s.params.patched_rtt_window_rtts = rtts;
                s.ack_bytes = 2 * 8948;
                s.ack_jitter_ns = 1000;
                let o = simulate(&s);
                println!(
                    "patched N={n}, window {window}, {rtts} RTTs: RTT {:.1} us, Jain {:.4}, utilization {:.3}",
                    o.rtt_us, o.jain, o.utilization
                );
                o
            };
            let expect = theorem5_rtt_us(&Params::PAPER, n as usize, 10_000_000_000);
            let default = Params::PAPER.patched_rtt_window_rtts;
            for o in [run(16_384, 0), run(65_536, 3), run(65_536, default)] {
                assert!(o.utilization >= 0.99, "utilization {}", o.utilization);
                assert!(o.jain >= 0.99, "Jain {}", o.jain);
                if n == 64 {
                    assert!(
                        (o.rtt_us - expect).abs() <= 0.1 * expect,
                        "RTT {}",
                        o.rtt_us
                    );
                }
            }
            let unbounded = run(Params::PAPER.rtt_window_bytes, 0);
            assert!(
                unbounded.utilization < 0.9,
                "utilization {}",
                unbounded.utilization
            );
        }
        // The bound is the patched law's: the original law's flows ignore it.
        let starts: Vec<u64> = (0..4).map(|i| 1_250_000_000 * (1 + i % 3)).collect();
        let original = |rtts: u32| {
            let mut s = paper_scenario(Variant::Original, starts.clone(), 50_000_000);
            s.params.patched_rtt_window_rtts = rtts;
            let o = simulate(&s);
            (o.rates_bps, o.rtt_us)
        };
        assert_eq!(original(3), original(0));
    }

    /// The bench's 1 Gbit/s set (tools/testbed/config.sh): the papers' constants scaled by 10, a
    /// 200 us base RTT and 956 Mbit/s of payload through the bottleneck.
    fn one_gbit_scenario(starts: Vec<u64>, max_rate_mbps: u32) -> Scenario {
        let params = Params {
            t_low_us: 500,
            t_high_us: 5000,
            delta_kbps: 1000,
            min_rtt_us: 200,
            min_rate_kbps: 1000,
            max_rate_mbps,
            ..Params::PAPER
        };
        Scenario {
            variant: Variant::Patched,
            params,
            capacity_bps: 956_000_000,
            prop_rtt_ns: 200_000,
            start_rates_bps: starts,
            duration_ns: 2_000_000_000,
            ack_bytes: 2 * 1448,
            ack_jitter_ns: 0,
        }
    }

    #[test]
    fn patched_single_flow_circles_theorem5() {
        // Linearized around Theorem 5's point, with r = C / N per flow and one update per
        // 16 KB (tau = 8 seg / r), the patched law is a damped spring on the queue q:
        //   q'' = -w0^2 q - 2 zeta w0 q',  w0^2 = C beta' / (16 seg N RTT_ref),
        //   2 zeta w0 = 4 N delta / (C min_rtt) + delta / (16 seg)
        // (the gradient's weight carries most of the damping, the cut's proportion to the
        // rate the rest). The RTT feedback comes at least one RTT d late, which takes
        // w0^2 d off the damping. For one flow at 1 Gbit/s: w0^2 = 58,000 /s^2 (a 26 ms
        // period), damping 25 /s, less than w0^2 d = 33 /s at d = 565 us: the point is
        // unstable, and the flow circles it, its rate swinging by about a tenth of C in a
        // cycle of 30-40 ms (the bench: 895-1000 Mbit/s every 33.6 ms, `one_flow`). With
        // N flows the gradient's damping grows as N and w0^2 falls as 1/N, so two flows
        // already hold the point. At the papers' scale the numbers are the same ten times
        // faster. The rate ceiling clips the cycle's top: at 10 Gbit/s the default one
        // (10,000 Mbit/s) sits 0.7% above the link's 9,927 Mbit/s of payload, which stops
        // the cycle (`one_flow_10g`); at 1 Gbit/s the bench's 1,000 sits 4.6% above 956,
        // which does not. The cycle reaches below T_low, where the law adds delta whatever
        // the gradient, and nearly empties the queue, so the RTT's mean (here) and median
        // (the bench: the controller's RTT p50 465 us against 565) sit under the point.
        // 64 KB segments (w0^2 / 4) or the gradient normalized by 50 us (its damping x 4)
        // hold the point; 32 KB or 100 us shrink the cycle and centre it on the point but
        // do not stop it, though the criterion above says they would: the loop's delay is
        // longer than one RTT (the gradient's EWMA, the 64 KB window's minimum).
        let theorem5 =
            |s: &Scenario| theorem5_rtt_us(&s.params, s.start_rates_bps.len(), s.capacity_bps);
        let run = |label: &str, s: Scenario| {
            let o = simulate(&s);
            let expect = theorem5(&s);
            let swing = (o.total_rate_range_bps.1 - o.total_rate_range_bps.0) as f64
                / s.capacity_bps as f64;
            println!(
                "{label}: RTT {:.1} us (Theorem 5 {expect:.1}), from {:.0} to {:.0} us, total \
                 rate {:.0}-{:.0} Mbit/s, utilization {:.3}",
                o.rtt_us,
                o.rtt_range_us.0,
                o.rtt_range_us.1,
                o.total_rate_range_bps.0 as f64 / 1e6,
                o.total_rate_range_bps.1 as f64 / 1e6,
                o.utilization
            );
            ((o.rtt_us - expect) / expect, swing, o.utilization)
        };
        let unbounded = 2000; // a rate ceiling that never binds
        let one = std::vec![300_000_000];
        let two = std::vec![300_000_000, 600_000_000];
        // One flow: a cycle whose mean RTT sits well under the point, with the 64 KB
        // window or the paper's own last sample.
        let (dev, swing, util) = run("1 flow", one_gbit_scenario(one.clone(), unbounded));
        assert!(
            dev < -0.10 && swing > 0.10 && util > 0.99,
            "{dev} {swing} {util}"
        );
        let mut last_sample = one_gbit_scenario(one.clone(), unbounded);
        last_sample.params.rtt_window_bytes = 0;
        let (dev, swing, _) = run("1 flow, last sample", last_sample);
        assert!(dev < -0.05 && swing > 0.10, "{dev} {swing}");
        // Two flows, the same constants: at the point, steady.
        let (dev, swing, _) = run("2 flows", one_gbit_scenario(two, unbounded));
        assert!(dev.abs() < 0.02 && swing < 0.02, "{dev} {swing}");
        // One flow held: by a ceiling within 0.5% of the payload rate, 64 KB segments, or
        // the gradient normalized by 50 us. Half-way (32 KB, 100 us) the cycle shrinks and
        // centres on the point but goes on.
        let (dev, swing, _) = run("1 flow, ceiling 960", one_gbit_scenario(one.clone(), 960));
        assert!(dev.abs() < 0.02 && swing < 0.02, "{dev} {swing}");
        for (seg_bytes, min_rtt_us, held) in [
            (65_536, 200, true),
            (16_384, 50, true),
            (32_768, 200, false),
            (16_384, 100, false),
        ] {
            let mut s = one_gbit_scenario(one.clone(), unbounded);
            s.params.seg_bytes = seg_bytes;
            s.params.min_rtt_us = min_rtt_us;
            let (dev, swing, _) = run(
                &std::format!("1 flow, {seg_bytes} B segments, min_rtt_us {min_rtt_us}"),
                s,
            );
            assert!(dev.abs() < 0.02, "{dev}");
            assert_eq!(swing < 0.01, held, "{swing}");
        }
        // The papers' scale: the same cycle, clipped by the bench's 10 Gbit/s ceiling.
        let paper = |max_rate_mbps: u32| Scenario {
            params: Params {
                max_rate_mbps,
                ..Params::PAPER
            },
            capacity_bps: 9_927_000_000,
            ack_bytes: 2 * 8948,
            ack_jitter_ns: 1000,
            ..paper_scenario(Variant::Patched, std::vec![3_000_000_000], 400_000_000)
        };
        let (dev, swing, _) = run("1 flow, 10 Gbit/s, ceiling 20000", paper(20_000));
        assert!(dev < -0.10 && swing > 0.10, "{dev} {swing}");
        let (dev, _, _) = run("1 flow, 10 Gbit/s, ceiling 10000", paper(10_000));
        assert!(dev.abs() < 0.02, "{dev}");
    }

    #[test]
    fn patched_saturated_gradient_sits_under_theorem5() {
        // 64 flows at 10 Gbit/s, the window bounded to 4 RTTs: a flow's completions are
        // about 0.9 ms apart, and its RTT moves by more than min_rtt / 4 (5 us) between two
        // of them, so the gradient weight is 0 or 1 in most updates, not the 1/2 Theorem 5
        // assumes at the fixed point. It is 1 when this RTT is above the last one, which is
        // when the RTT is above its mean: the cuts meet larger errors than the increases,
        // and the RTT settles under Theorem 5's. With the gradient scaled ten times less
        // (min_rtt_us 200) the weight stays inside (0, 1) and the RTT is the theorem's.
        // The bench shows the same gap, larger (incast64_10g_rtts4: -19%).
        let n = 64u64;
        let starts: Vec<u64> = (0..n).map(|i| 5_000_000_000 / n * (1 + i % 3)).collect();
        let expect = theorem5_rtt_us(&Params::PAPER, n as usize, 10_000_000_000);
        let run = |min_rtt_us: u32| {
            let mut s = paper_scenario(Variant::Patched, starts.clone(), 200_000_000);
            s.params.min_rtt_us = min_rtt_us;
            s.ack_bytes = 2 * 8948;
            s.ack_jitter_ns = 1000;
            let o = simulate(&s);
            println!(
                "patched N=64, min_rtt_us {min_rtt_us}: RTT {:.1} us (Theorem 5 {expect:.1}), \
                 Jain {:.4}, utilization {:.3}, weight 0 or 1 in {:.0}% of updates, their RTT \
                 {:.1} / {:.1} us",
                o.rtt_us,
                o.jain,
                o.utilization,
                100.0 * o.saturated_weight_share,
                o.rtt_at_weight_zero_us,
                o.rtt_at_weight_one_us
            );
            o
        };
        let saturated = run(Params::PAPER.min_rtt_us);
        assert!(saturated.rtt_us < 0.95 * expect, "RTT {}", saturated.rtt_us);
        assert!(saturated.saturated_weight_share > 0.8);
        assert!(saturated.rtt_at_weight_one_us > saturated.rtt_at_weight_zero_us);
        let smooth = run(200);
        assert!(
            (smooth.rtt_us - expect).abs() <= 0.02 * expect,
            "RTT {}",
            smooth.rtt_us
        );
        assert!(smooth.saturated_weight_share < 0.05);
    }
}
