// SPDX-License-Identifier: GPL-2.0

//! Shared decoding for the fuzz targets: turns libFuzzer's byte stream into values biased
//! towards the edges the core must survive (0, 1, `u32::MAX`, `i32::MAX`, range bounds),
//! and into TIMELY parameter sets. An exhausted input reads as zeros, so every prefix of
//! an input is itself a valid input.

use libfuzzer_sys::arbitrary::Unstructured;
use tcp_cc_core::fixed::PPM;
use tcp_cc_core::timely::{Params, MAX_RATE_MBPS, MAX_RTT_US, MAX_SEG_BYTES};

/// Reads the fuzzer's bytes.
pub struct Input<'a>(pub Unstructured<'a>);

impl<'a> Input<'a> {
    /// Reads `data`.
    pub fn new(data: &'a [u8]) -> Input<'a> {
        Input(Unstructured::new(data))
    }

    /// Whether every byte has been read.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// One byte (0 once the input is exhausted).
    pub fn u8(&mut self) -> u8 {
        self.0.arbitrary().unwrap_or(0)
    }

    /// One flag.
    pub fn bool(&mut self) -> bool {
        self.u8() & 1 == 1
    }

    fn raw_u16(&mut self) -> u16 {
        self.0.arbitrary().unwrap_or(0)
    }

    fn raw_u32(&mut self) -> u32 {
        self.0.arbitrary().unwrap_or(0)
    }

    fn raw_u64(&mut self) -> u64 {
        self.0.arbitrary().unwrap_or(0)
    }

    /// A `u32`, often an edge value, else small, 16-bit or any.
    pub fn u32(&mut self) -> u32 {
        match self.u8() % 16 {
            0 => 0,
            1 => 1,
            2 => 2,
            3 => u32::MAX,
            4 => u32::MAX - 1,
            5 => i32::MAX as u32,
            6 => 1 << 31,
            7 => 1 << 22,
            8..=10 => u32::from(self.u8()),
            11 | 12 => u32::from(self.raw_u16()),
            _ => self.raw_u32(),
        }
    }

    /// A `u64`, often an edge value, else a `u32` from [`Input::u32`] or any.
    pub fn u64(&mut self) -> u64 {
        match self.u8() % 8 {
            0 => 0,
            1 => u64::MAX,
            2 => u64::MAX - 1,
            3 => i64::MAX as u64,
            4 => self.raw_u64(),
            _ => u64::from(self.u32()),
        }
    }

    /// A value in `lo..=hi` (`lo <= hi`), often one of the bounds or next to one.
    pub fn in_range(&mut self, lo: u32, hi: u32) -> u32 {
        debug_assert!(lo <= hi);
        let v = match self.u8() % 8 {
            0 => lo,
            1 => hi,
            2 => lo.saturating_add(1),
            3 => hi.saturating_sub(1),
            _ => {
                let span = u64::from(hi - lo) + 1;
                lo + (u64::from(self.u32()) % span) as u32
            }
        };
        v.clamp(lo, hi)
    }

    /// A signed value as the kernel's `long` RTT samples carry it (`-1`: no sample),
    /// often relative to the parameters' thresholds.
    pub fn rtt_sample(&mut self, p: &Params) -> i64 {
        let near = |x: u32, d: i64| i64::from(x) + d;
        match self.u8() % 24 {
            0 => -1,
            1 => 0,
            2 => 1,
            3 => i64::from(u32::MAX),
            4 => i64::from(u32::MAX) + 1,
            5 => i64::MAX,
            6 => i64::MIN,
            7 => near(MAX_RTT_US, 0),
            8 => near(MAX_RTT_US, 1),
            9 => near(p.t_low_us, -1),
            10 => near(p.t_low_us, 0),
            11 => near(p.t_high_us, 0),
            12 => near(p.t_high_us, 1),
            13 => near(p.rtt_ref_us(), 0),
            14 => i64::from(self.raw_u64() as i32),
            15 | 16 => i64::from(self.u32()),
            // Around the thresholds: where the zones and the gradient change.
            _ => {
                let base = match self.u8() % 3 {
                    0 => p.t_low_us,
                    1 => p.t_high_us,
                    _ => p.rtt_ref_us(),
                };
                near(base, i64::from(self.u8() as i8))
            }
        }
    }

    /// A step of the microsecond clock: usually forward by a little, sometimes far, to 0,
    /// to the end of time, or backwards.
    pub fn clock(&mut self, now: u64) -> u64 {
        match self.u8() % 16 {
            0 => now,
            1 => 0,
            2 => u64::MAX,
            3 => now.wrapping_sub(u64::from(self.u8()) + 1),
            4 => now.wrapping_sub(u64::from(self.u32())),
            5 => now.wrapping_add(self.u64()),
            6..=9 => now.wrapping_add(u64::from(self.raw_u16())),
            _ => now.wrapping_add(u64::from(self.u8())),
        }
    }
}

/// TIMELY's parameters at 1 Gbit/s and 100 Mbit/s (`tools/testbed/config.sh`).
pub const TIMELY_1G: Params = Params {
    t_low_us: 500,
    t_high_us: 5000,
    delta_kbps: 1000,
    min_rtt_us: 200,
    min_rate_kbps: 1000,
    max_rate_mbps: 1000,
    ..Params::PAPER
};
/// See [`TIMELY_1G`].
pub const TIMELY_100M: Params = Params {
    t_low_us: 5000,
    t_high_us: 50000,
    delta_kbps: 100,
    min_rtt_us: 2000,
    min_rate_kbps: 100,
    max_rate_mbps: 100,
    ..Params::PAPER
};

/// Any 16 values, valid or not.
pub fn raw_params(i: &mut Input) -> Params {
    Params {
        t_low_us: i.u32(),
        t_high_us: i.u32(),
        delta_kbps: i.u32(),
        beta_ppm: i.u32(),
        alpha_ppm: i.u32(),
        min_rtt_us: i.u32(),
        hai_threshold: i.u32(),
        hai_factor: i.u32(),
        min_rate_kbps: i.u32(),
        max_rate_mbps: i.u32(),
        init_rate_mbps: i.u32(),
        seg_bytes: i.u32(),
        line_rate_mbps: i.u32(),
        patched_beta_ppm: i.u32(),
        rtt_ref_us: i.u32(),
        rtt_window_bytes: i.u32(),
        loss_rtt_us: i.u32(),
        update_scaling: i.u32(),
        t_high_last_sample: i.u32(),
        patched_rtt_window_rtts: i.u32(),
    }
}

/// A parameter set within the documented ranges (README's table), each value drawn from
/// its range, bounds included.
pub fn valid_params(i: &mut Input) -> Params {
    let ppm = PPM as u32;
    let t_low_us = i.in_range(1, MAX_RTT_US - 1);
    // 0: each flow's C from its link, up to MAX_RATE_MBPS.
    let max_rate_mbps = i.in_range(0, MAX_RATE_MBPS);
    let c_mbps = match max_rate_mbps {
        0 => MAX_RATE_MBPS,
        c => c,
    };
    let kbps = c_mbps * 1000;
    Params {
        t_low_us,
        t_high_us: i.in_range(t_low_us + 1, MAX_RTT_US),
        delta_kbps: i.in_range(1, kbps),
        beta_ppm: i.in_range(1, ppm),
        alpha_ppm: i.in_range(1, ppm),
        min_rtt_us: i.in_range(1, MAX_RTT_US),
        hai_threshold: i.in_range(1, 1000),
        hai_factor: i.in_range(1, 100),
        min_rate_kbps: i.in_range(1, kbps),
        max_rate_mbps,
        init_rate_mbps: i.in_range(0, c_mbps),
        seg_bytes: i.in_range(1, MAX_SEG_BYTES),
        line_rate_mbps: i.in_range(0, MAX_RATE_MBPS),
        patched_beta_ppm: i.in_range(1, ppm),
        rtt_ref_us: i.in_range(0, MAX_RTT_US),
        rtt_window_bytes: i.in_range(0, MAX_SEG_BYTES),
        loss_rtt_us: i.in_range(0, MAX_RTT_US),
        update_scaling: i.in_range(0, 1),
        t_high_last_sample: i.in_range(0, 1),
        patched_rtt_window_rtts: i.in_range(0, 64),
    }
}

/// A parameter set, valid or not: one of the project's presets (possibly with one field
/// replaced), one drawn from the valid ranges, or raw values. First byte: which.
pub fn params(i: &mut Input) -> Params {
    let mut p = match i.u8() % 8 {
        0 => Params::PAPER,
        1 => TIMELY_1G,
        2 => TIMELY_100M,
        3 => return raw_params(i),
        _ => return valid_params(i),
    };
    // A preset with one value replaced by anything.
    let v = i.u32();
    let fields: [&mut u32; 20] = [
        &mut p.t_low_us,
        &mut p.t_high_us,
        &mut p.delta_kbps,
        &mut p.beta_ppm,
        &mut p.alpha_ppm,
        &mut p.min_rtt_us,
        &mut p.hai_threshold,
        &mut p.hai_factor,
        &mut p.min_rate_kbps,
        &mut p.max_rate_mbps,
        &mut p.init_rate_mbps,
        &mut p.seg_bytes,
        &mut p.line_rate_mbps,
        &mut p.patched_beta_ppm,
        &mut p.rtt_ref_us,
        &mut p.rtt_window_bytes,
        &mut p.loss_rtt_us,
        &mut p.update_scaling,
        &mut p.t_high_last_sample,
        &mut p.patched_rtt_window_rtts,
    ];
    match i.u8() % 21 {
        20 => {}
        n => *fields.into_iter().nth(usize::from(n)).unwrap() = v,
    }
    p
}
