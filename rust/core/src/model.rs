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
            rtt_sum += rtt_ns as f64 / 1000.0;
            rtt_n += 1;
            served_bits += served;
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
