// SPDX-License-Identifier: GPL-2.0

//! Swift, driven as the kernel module drives it: parameter sets (valid or not) as module
//! loads get them, then ACKs with any fabric and endpoint delays (0, `u32::MAX`, around
//! `MAX_DELAY_NS`, around the targets), any packet counts and any clock (backwards and
//! wrapping too), fast recoveries and timeouts.
//!
//! Checked after every event:
//! - `SwiftParams::validate` and `Law::new` accept exactly the documented ranges, and name
//!   an offending parameter with its value and range;
//! - both windows and `cwnd` stay within `[min_cwnd, max_cwnd]`; an increase never adds
//!   more than `ai` per packet ACKed (per `w` packets above one packet); a decrease never
//!   removes more than `max_mdf`; a held step changes nothing; a reset is to `min_cwnd`;
//! - flow scaling stays within `[0, fs_range]` and never grows with the window;
//! - the paced rate is `cwnd * mss / RTT` (128-bit reference, saturating);
//! - no panic, overflow or failed debug assertion anywhere (the build keeps both checks).

#![no_main]

use libfuzzer_sys::fuzz_target;
use tcp_cc_core::param::ParamError;
use tcp_cc_core::sample::SampleSource;
use tcp_cc_core::swift::{
    mpkts_to_fp, Law, Sample, Step, Swift, SwiftParams, FP_ONE, MAX_ACKED_PKTS, MAX_AI_MPKTS,
    MAX_CWND_LIMIT_PKTS, MAX_DELAY_NS, MAX_HOPS, MAX_PER_HOP_NS, MAX_RETX_RESET_THRESHOLD,
    MAX_TARGET_NS,
};
use tcp_cc_core_fuzz::Input;

const MAX_EVENTS: usize = 4096;
const PPM: u64 = 1_000_000;

/// The docs' table: each parameter's name, value and allowed range (as narrowed).
fn table(p: &SwiftParams) -> [(&'static str, u32, u32, u32); 13] {
    let fs_max_mpkts = p.fs_max_cwnd_pkts.saturating_mul(1000);
    let max_mpkts = p.max_cwnd_pkts.saturating_mul(1000);
    [
        ("base_target_ns", p.base_target_ns, 1, MAX_TARGET_NS),
        ("per_hop_ns", p.per_hop_ns, 0, MAX_PER_HOP_NS),
        ("hops", p.hops, 0, MAX_HOPS),
        ("fs_range_ns", p.fs_range_ns, 0, MAX_TARGET_NS),
        (
            "fs_max_cwnd_pkts",
            p.fs_max_cwnd_pkts,
            1,
            MAX_CWND_LIMIT_PKTS,
        ),
        (
            "fs_min_cwnd_mpkts",
            p.fs_min_cwnd_mpkts,
            1,
            fs_max_mpkts.saturating_sub(1),
        ),
        ("ai_mpkts", p.ai_mpkts, 1, MAX_AI_MPKTS),
        ("beta_md_ppm", p.beta_md_ppm, 1, PPM as u32),
        ("max_mdf_ppm", p.max_mdf_ppm, 1, PPM as u32),
        ("max_cwnd_pkts", p.max_cwnd_pkts, 1, MAX_CWND_LIMIT_PKTS),
        ("min_cwnd_mpkts", p.min_cwnd_mpkts, 1, max_mpkts),
        (
            "retx_reset_threshold",
            p.retx_reset_threshold,
            1,
            MAX_RETX_RESET_THRESHOLD,
        ),
        ("endpoint_target_ns", p.endpoint_target_ns, 0, MAX_TARGET_NS),
    ]
}

/// A parameter set: the defaults (possibly with one field replaced), one from the valid
/// ranges, or raw values.
fn params(i: &mut Input) -> SwiftParams {
    match i.u8() % 4 {
        0 => SwiftParams::DEFAULT,
        1 => SwiftParams {
            base_target_ns: i.u32(),
            per_hop_ns: i.u32(),
            hops: i.u32(),
            fs_range_ns: i.u32(),
            fs_min_cwnd_mpkts: i.u32(),
            fs_max_cwnd_pkts: i.u32(),
            ai_mpkts: i.u32(),
            beta_md_ppm: i.u32(),
            max_mdf_ppm: i.u32(),
            min_cwnd_mpkts: i.u32(),
            max_cwnd_pkts: i.u32(),
            retx_reset_threshold: i.u32(),
            endpoint_target_ns: i.u32(),
        },
        _ => {
            let fs_max = i.in_range(1, MAX_CWND_LIMIT_PKTS);
            let max_cwnd = i.in_range(1, MAX_CWND_LIMIT_PKTS);
            SwiftParams {
                base_target_ns: i.in_range(1, MAX_TARGET_NS),
                per_hop_ns: i.in_range(0, MAX_PER_HOP_NS),
                hops: i.in_range(0, MAX_HOPS),
                fs_range_ns: i.in_range(0, MAX_TARGET_NS),
                fs_min_cwnd_mpkts: i.in_range(1, fs_max * 1000 - 1),
                fs_max_cwnd_pkts: fs_max,
                ai_mpkts: i.in_range(1, MAX_AI_MPKTS),
                beta_md_ppm: i.in_range(1, PPM as u32),
                max_mdf_ppm: i.in_range(1, PPM as u32),
                min_cwnd_mpkts: i.in_range(1, max_cwnd * 1000),
                max_cwnd_pkts: max_cwnd,
                retx_reset_threshold: i.in_range(1, 8),
                endpoint_target_ns: i.in_range(0, MAX_TARGET_NS),
            }
        }
    }
}

/// The first parameter of the table out of its range, as `validate` must report it.
fn expected_error(p: &SwiftParams) -> Option<ParamError> {
    // validate checks fs_max before fs_min and max_cwnd before min_cwnd, as the table.
    for (name, value, min, max) in table(p) {
        if !(min..=max).contains(&value) {
            return Some(ParamError {
                name,
                value,
                min,
                max,
            });
        }
    }
    None
}

fn delay(i: &mut Input, around: u32) -> u32 {
    match i.u8() % 6 {
        0 => around,
        1 => around.saturating_add(u32::from(i.u8())),
        2 => around.saturating_sub(u32::from(i.u8())),
        3 => MAX_DELAY_NS
            .wrapping_add(u32::from(i.u8() % 3))
            .wrapping_sub(1),
        _ => i.u32(),
    }
}

fuzz_target!(|data: &[u8]| {
    let mut i = Input::new(data);
    let p = params(&mut i);
    let law = match (Law::new(&p), expected_error(&p)) {
        (Ok(law), None) => law,
        (Err(e), Some(want)) => {
            assert_eq!(e, want);
            return;
        }
        (got, want) => panic!("{p:?}: {got:?} vs {want:?}"),
    };
    let (lo, hi) = (law.min_cwnd_fp(), law.max_cwnd_fp());
    let mut s = Swift::new(&law, i.u32());
    let mut now = i.u64();
    let mss = i.u32();
    for _ in 0..MAX_EVENTS {
        if i.is_empty() {
            break;
        }
        now = match i.u8() % 8 {
            0 => i.u64(),
            _ => now.wrapping_add(u64::from(i.u32() % 400_000)),
        };
        let before = (s.fcwnd_fp(), s.ecwnd_fp(), s.endpoint_on());
        let acked = i.u32();
        let target = law.fabric_target_ns(s.cwnd_fp(&law));
        let a = match i.u8() % 8 {
            0 => s.on_fast_recovery(&law, now),
            1 => s.on_timeout(&law, now),
            2 => s.on_ack(&law, now, acked, None),
            3 => {
                let sample = Sample {
                    source: SampleSource::KernelRtt,
                    fabric_ns: delay(&mut i, target),
                    endpoint_ns: i.bool().then(|| i.u32()),
                };
                s.on_ack(&law, now, acked, Some(&sample))
            }
            _ => {
                let source = if i.bool() {
                    SampleSource::Hardware
                } else {
                    SampleSource::Software
                };
                let sample = Sample {
                    source,
                    fabric_ns: delay(&mut i, target),
                    endpoint_ns: i.bool().then(|| delay(&mut i, p.endpoint_target_ns)),
                };
                s.on_ack(&law, now, acked, Some(&sample))
            }
        };
        for (w, w0, step, from_w0) in [
            (s.fcwnd_fp(), before.0, a.fabric, true),
            (s.ecwnd_fp(), before.1, a.endpoint, before.2),
        ] {
            assert!((lo..=hi).contains(&w), "{w} not in [{lo}, {hi}]");
            if !from_w0 {
                continue;
            }
            let w0 = w0.clamp(lo, hi);
            match step {
                Step::Increase => {
                    let n = u128::from(acked.min(MAX_ACKED_PKTS));
                    let most = u128::from(mpkts_to_fp(p.ai_mpkts)) * n;
                    let most = if w0 >= FP_ONE {
                        most * u128::from(FP_ONE) / u128::from(w0)
                    } else {
                        most
                    };
                    assert!(w >= w0 && u128::from(w - w0) <= most, "{w0} -> {w}");
                }
                Step::Decrease | Step::LossCut => {
                    let keep = PPM - u64::from(p.max_mdf_ppm);
                    let least = (u128::from(w0) * u128::from(keep) / u128::from(PPM)) as u64;
                    assert!(w <= w0 && w >= least.max(lo), "{w0} -> {w}");
                }
                Step::Held | Step::LossHeld => assert_eq!(w, w0),
                Step::Reset => assert_eq!(w, lo),
                Step::None => {}
                Step::EcnCut => panic!("an ecn_share cut on a delay sample or a loss"),
            }
        }
        let cwnd = s.cwnd_fp(&law);
        assert!((lo..=hi).contains(&cwnd));
        let fs = law.flow_scaling_ns(cwnd);
        assert!(fs <= p.fs_range_ns);
        assert!(law.flow_scaling_ns(cwnd.saturating_add(FP_ONE)) <= fs);
        if let Some(rate) = s.paced_rate_bytes_per_sec(&law, mss) {
            let exact =
                u128::from(cwnd) * u128::from(mss) * 1_000_000_000 / u128::from(s.rtt_ns()) >> 20;
            // Exact while cwnd * mss fits 64 bits (the documented saturation beyond).
            let bytes = u128::from(cwnd) * u128::from(mss);
            if exact < u128::from(u64::MAX >> 20) && bytes <= u128::from(u64::MAX) {
                assert_eq!(u128::from(rate), exact);
            }
        }
    }
});
