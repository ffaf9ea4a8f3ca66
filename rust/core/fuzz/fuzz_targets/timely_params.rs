// SPDX-License-Identifier: GPL-2.0

//! TIMELY parameter sets, valid and invalid: `Params::validate` accepts exactly the ranges
//! of the README's table and names a parameter that is out of its range; on a valid set,
//! `for_mss` keeps it valid and raises only the floor, to one MSS per 20 ms at most, and
//! the derived quantities stay in bounds.

#![no_main]

use libfuzzer_sys::fuzz_target;
use tcp_cc_core::fixed::PPM;
use tcp_cc_core::timely::{
    cwnd_cap_pkts, Params, Timely, DEFAULT_LINK_MBPS, MAX_PACKET_GAP_US, MAX_RATE_MBPS, MAX_RTT_US,
    MAX_SEG_BYTES, MIN_CWND_PKTS,
};
use tcp_cc_core_fuzz::{params, Input};

/// The README's table: each parameter's name, value and allowed range, computed in 64 bits
/// from the values of the parameters the range depends on.
fn table(p: &Params) -> [(&'static str, u32, u64, u64); 20] {
    let ppm = PPM;
    // max_rate_mbps 0: each flow's C from its link, at most MAX_RATE_MBPS.
    let c_mbps = match p.max_rate_mbps {
        0 => MAX_RATE_MBPS,
        c => c,
    };
    let kbps = u64::from(c_mbps) * 1000;
    let rtt = u64::from(MAX_RTT_US);
    [
        ("t_low_us", p.t_low_us, 1, rtt - 1),
        ("t_high_us", p.t_high_us, u64::from(p.t_low_us) + 1, rtt),
        ("delta_kbps", p.delta_kbps, 1, kbps),
        ("beta_ppm", p.beta_ppm, 1, ppm),
        ("alpha_ppm", p.alpha_ppm, 1, ppm),
        ("min_rtt_us", p.min_rtt_us, 1, rtt),
        ("hai_threshold", p.hai_threshold, 1, 1000),
        ("hai_factor", p.hai_factor, 1, 100),
        ("min_rate_kbps", p.min_rate_kbps, 1, kbps),
        ("max_rate_mbps", p.max_rate_mbps, 0, MAX_RATE_MBPS.into()),
        ("init_rate_mbps", p.init_rate_mbps, 0, c_mbps.into()),
        ("seg_bytes", p.seg_bytes, 1, MAX_SEG_BYTES.into()),
        ("line_rate_mbps", p.line_rate_mbps, 0, MAX_RATE_MBPS.into()),
        ("patched_beta_ppm", p.patched_beta_ppm, 1, ppm),
        ("rtt_ref_us", p.rtt_ref_us, 0, rtt),
        (
            "rtt_window_bytes",
            p.rtt_window_bytes,
            0,
            MAX_SEG_BYTES.into(),
        ),
        ("loss_rtt_us", p.loss_rtt_us, 0, rtt),
        ("update_scaling", p.update_scaling, 0, 1),
        ("t_high_last_sample", p.t_high_last_sample, 0, 1),
        ("patched_rtt_window_rtts", p.patched_rtt_window_rtts, 0, 64),
    ]
}

fn out_of_range(v: u32, lo: u64, hi: u64) -> bool {
    u64::from(v) < lo || u64::from(v) > hi
}

fn check_valid(base: &Params, i: &mut Input) {
    // A flow's parameters: C from the link when max_rate_mbps is 0 (any speed a driver
    // may report, or none), else the set C whatever the link.
    let link_mbps = if i.bool() { Some(i.u32()) } else { None };
    let c_mbps = base.flow_c_mbps(link_mbps);
    let flow = base.for_flow(c_mbps, 0);
    assert_eq!(flow.validate(), Ok(()), "for_flow({c_mbps}) of {base:?}");
    assert_eq!(flow.max_rate_mbps, c_mbps);
    if base.max_rate_mbps == 0 {
        let link = link_mbps.filter(|&m| m > 0).unwrap_or(DEFAULT_LINK_MBPS);
        assert_eq!(
            c_mbps,
            link.clamp(base.min_rate_kbps.div_ceil(1000), MAX_RATE_MBPS)
        );
    } else {
        assert_eq!(flow, base.for_mss(0));
    }
    check_flow(&flow, i);
}

fn check_flow(p: &Params, i: &mut Input) {
    let (lo, hi) = (p.min_rate_bps(), p.max_rate_bps());
    assert!(lo <= hi && hi <= u64::from(MAX_RATE_MBPS) * 1_000_000);
    assert!(p.delta_bps() <= hi);
    assert!((1..=MAX_RTT_US).contains(&p.rtt_ref_us()));

    // for_mss: still valid, only the floor changes, and it is raised to one MSS per
    // MAX_PACKET_GAP_US unless that is above the ceiling.
    let mss = i.u32();
    let q = p.for_mss(mss);
    assert_eq!(q.validate(), Ok(()), "for_mss({mss}) of {p:?}");
    assert_eq!(
        Params {
            min_rate_kbps: p.min_rate_kbps,
            ..q
        },
        *p
    );
    assert!(q.min_rate_kbps >= p.min_rate_kbps);
    let gap_floor_kbps = (u64::from(mss) * 8 * 1000).div_ceil(MAX_PACKET_GAP_US);
    if gap_floor_kbps <= u64::from(p.max_rate_mbps) * 1000 {
        // One packet per MAX_PACKET_GAP_US or faster at the floor.
        assert!(u64::from(mss) * 8 * 1_000_000 <= MAX_PACKET_GAP_US * q.min_rate_bps());
        // Raised no more than needed.
        assert!(q.min_rate_kbps == p.min_rate_kbps || u64::from(q.min_rate_kbps) == gap_floor_kbps);
    } else {
        assert_eq!(q.min_rate_kbps, p.max_rate_mbps * 1000);
    }
    assert_eq!(q.for_mss(mss), q);

    // Initial rate: in bounds, the fair share when not set, never rising with more flows.
    let n = i.u32();
    let m = n.saturating_add(u32::from(i.u8()));
    for q in [p, &q] {
        let (lo, hi) = (q.min_rate_bps(), q.max_rate_bps());
        let r = q.init_rate_bps(n);
        assert!(lo <= r && r <= hi);
        if q.init_rate_mbps == 0 {
            assert_eq!(r, (hi / (u64::from(n) + 1)).clamp(lo, hi));
        } else {
            assert_eq!(r, (u64::from(q.init_rate_mbps) * 1_000_000).clamp(lo, hi));
        }
        assert!(q.init_rate_bps(m) <= r);
        let t = Timely::new(q, i.u64());
        assert!(lo <= t.rate_bps && t.rate_bps <= hi);
    }

    // In-flight cap: within its bounds and never smaller for a higher rate.
    let (r1, r2, mss) = (i.u64(), i.u64(), i.u32());
    let (c1, c2) = (cwnd_cap_pkts(&q, r1, mss), cwnd_cap_pkts(&q, r2, mss));
    for c in [c1, c2] {
        assert!((MIN_CWND_PKTS..=u32::MAX >> 1).contains(&c));
    }
    if r1 <= r2 {
        assert!(c1 <= c2);
    }
}

/// One parameter set, as a module load would get it.
fn check(i: &mut Input) {
    let p = params(i);
    let table = table(&p);
    let bad: Vec<_> = table
        .iter()
        .filter(|(_, v, lo, hi)| out_of_range(*v, *lo, *hi))
        .collect();
    match p.validate() {
        Ok(()) => {
            assert!(
                bad.is_empty(),
                "accepted, but out of range: {bad:?} in {p:?}"
            );
            check_valid(&p, i);
        }
        Err(e) => {
            let (name, value, lo, hi) = *table
                .iter()
                .find(|t| t.0 == e.name)
                .unwrap_or_else(|| panic!("unknown parameter {}", e.name));
            assert_eq!(e.value, value, "{e:?}");
            assert_eq!((u64::from(e.min), u64::from(e.max)), (lo, hi), "{e:?}");
            assert!(
                out_of_range(value, lo, hi),
                "{name} rejected within range: {e:?}"
            );
        }
    }
    // Out-of-range sets are refused at module load, but for_mss runs on whatever is given.
    let _ = p.for_mss(i.u32());
}

// Several parameter sets per input, so that one input can visit several rejections.
fuzz_target!(|data: &[u8]| {
    let mut i = Input::new(data);
    for _ in 0..64 {
        check(&mut i);
        if i.is_empty() {
            break;
        }
    }
});
