// SPDX-License-Identifier: GPL-2.0

//! Model check of the TIMELY control laws: N flows through one bottleneck, simulated in
//! 100 ns steps with the same `Timely` code the kernel module runs.
//!
//! Each flow sends as a fluid at its rate and completes a segment every `seg_bytes`; the
//! segment's RTT is the propagation RTT plus the bottleneck queue's delay when it was sent,
//! and the controller sees it one RTT later (so the feedback delay grows with the queue, as
//! in [Z]'s model). The queue is a FIFO without a limit (TIMELY assumes a lossless fabric).
//!
//! Checked against the analysis of Zhu et al., "ECN or Delay" (CoNEXT'16):
//! - patched TIMELY reaches equal rates and the RTT of Theorem 5,
//!   `T_low * (1 + N delta / (beta C))`, whatever the starting rates;
//! - original TIMELY's operating point depends on where the flows start (Theorem 4: a
//!   continuum of fixed points, so fairness is not guaranteed).

extern crate std;

use super::timely::{Params, Timely, Variant};
use std::{collections::VecDeque, vec::Vec};

const STEP_NS: u64 = 100;

/// Result of one simulation: averages over the last quarter of the run.
#[derive(Debug)]
pub struct Outcome {
    pub rates_bps: Vec<f64>,
    pub rtt_us: f64,
    pub jain: f64,
    pub utilization: f64,
}

pub struct Scenario {
    pub variant: Variant,
    pub params: Params,
    pub capacity_bps: u64,
    pub prop_rtt_ns: u64,
    pub seg_bytes: u64,
    pub start_rates_bps: Vec<u64>,
    pub duration_ns: u64,
}

pub fn jain(xs: &[f64]) -> f64 {
    let s: f64 = xs.iter().sum();
    let s2: f64 = xs.iter().map(|x| x * x).sum();
    s * s / (xs.len() as f64 * s2)
}

struct Flow {
    cc: Timely,
    /// Bits sent since the last segment boundary.
    seg_bits: u64,
    /// (time the completion is seen, RTT in ns) of segments in flight.
    pending: VecDeque<(u64, u64)>,
    /// Bits delivered during the measurement window.
    measured_bits: u64,
}

pub fn simulate(s: &Scenario) -> Outcome {
    let mut flows: Vec<Flow> = s
        .start_rates_bps
        .iter()
        .map(|&r| Flow {
            cc: Timely::new(&s.params, r),
            seg_bits: 0,
            pending: VecDeque::new(),
            measured_bits: 0,
        })
        .collect();
    // Queue in bit-nanoseconds / 1e9 terms: keep bits * 1e9 to stay integral.
    let mut queue_bit_ns: u128 = 0;
    let measure_from = s.duration_ns - s.duration_ns / 4;
    let (mut rtt_sum, mut rtt_n, mut served_bits) = (0f64, 0u64, 0u128);
    let mut t = 0;
    while t < s.duration_ns {
        let queue_delay_ns = (queue_bit_ns / u128::from(s.capacity_bps)) as u64;
        let rtt_ns = s.prop_rtt_ns + queue_delay_ns;
        let mut arrivals: u128 = 0;
        for f in flows.iter_mut() {
            let bits_ns = u128::from(f.cc.rate_bps) * u128::from(STEP_NS);
            arrivals += bits_ns;
            f.seg_bits += (bits_ns / 1_000_000_000) as u64;
            if f.seg_bits >= s.seg_bytes * 8 {
                f.seg_bits -= s.seg_bytes * 8;
                // The segment's last bit leaves the queue after the current backlog.
                f.pending.push_back((t + rtt_ns, rtt_ns));
            }
            while let Some(&(due, rtt)) = f.pending.front() {
                if due > t {
                    break;
                }
                f.pending.pop_front();
                f.cc.on_completion(&s.params, s.variant, (rtt / 1000) as u32, false);
            }
            if t >= measure_from {
                f.measured_bits += (bits_ns / 1_000_000_000) as u64;
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
        .map(|f| f.measured_bits as f64 / window_s)
        .collect();
    Outcome {
        jain: jain(&rates),
        rates_bps: rates,
        rtt_us: rtt_sum / rtt_n as f64,
        utilization: served_bits as f64 / 1e9 / window_s / s.capacity_bps as f64,
    }
}

fn paper_scenario(variant: Variant, start_rates_bps: Vec<u64>, duration_ns: u64) -> Scenario {
    Scenario {
        variant,
        params: Params::PAPER,
        capacity_bps: 10_000_000_000,
        prop_rtt_ns: 10_000,
        seg_bytes: 16 * 1024,
        start_rates_bps,
        duration_ns,
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

    fn check_patched(n: usize, starts: Vec<u64>) {
        let s = paper_scenario(Variant::Patched, starts, 200_000_000);
        let o = simulate(&s);
        let expect = theorem5_rtt_us(&s.params, n, s.capacity_bps);
        println!(
            "patched N={n}: RTT {:.1} us (Theorem 5: {expect:.1}), Jain {:.4}, utilization {:.3}, rates {:?}",
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
        check_patched(2, std::vec![7_000_000_000, 3_000_000_000]);
    }

    #[test]
    fn patched_ten_flows() {
        let starts = (0..10).map(|i| 250_000_000 + i * 200_000_000).collect();
        check_patched(10, starts);
    }

    #[test]
    fn original_operating_point_depends_on_start() {
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
        println!(
            "original from 5/5: {:?} Jain {:.4} RTT {:.1}",
            even.rates_bps, even.jain, even.rtt_us
        );
        println!(
            "original from 7/3: {:?} Jain {:.4} RTT {:.1}",
            skewed.rates_bps, skewed.jain, skewed.rtt_us
        );
        let ratio = skewed.rates_bps[0] / skewed.rates_bps[1];
        assert!(
            !(1.0 / 1.2..=1.2).contains(&ratio),
            "7/3 start ended at ratio {ratio}"
        );
        assert!(even.jain > skewed.jain);
    }
}
