// SPDX-License-Identifier: GPL-2.0

//! DX, driven as a kernel module would drive it: parameter sets (valid or not) as module
//! loads get them, then per-ACK delay samples from any source (OWDs near the base, at the
//! far side of the 32-bit circle, anywhere; RTTs of 0, `u32::MAX`, around the bound, around
//! the minimum and its slack), round ends with any window, new flows, and the back-to-back
//! calibration of TX and RX stamp streams.
//!
//! Checked after every event:
//! - `DxParams::validate` accepts exactly the documented ranges and names an offending
//!   parameter with its value and range;
//! - exact agreement of every sample's estimate, every returned window and every accessor
//!   with a reference written independently in 128-bit arithmetic from `dx.rs`'s docs, and
//!   of the window with exact rational arithmetic within the documented rounding;
//! - the promises of the docs: the window never below `min_cwnd_pkts`, never more than one
//!   packet up, never more than `max_decrease_ppm` down; a used sample's estimate never
//!   above its RTT; every sample either used or counted as ignored;
//! - the estimates do not depend on the clock offset: a second flow sees every OWD shifted
//!   by a constant (wrapping) and must agree on everything but the base, shifted the same;
//! - calibrated stamps agree with the rule, and are at least one transmission time apart
//!   whenever the rule applied;
//! - no panic, overflow or failed debug assertion anywhere (the build keeps both checks).

#![no_main]

use libfuzzer_sys::fuzz_target;
use tcp_cc_core::dx::{
    calibrate_stamp_ns, next_cwnd_pkts, tx_time_ns, DelaySample, Dx, DxParams, StampCalibrator,
    FRAC_ONE, MAX_CALIBRATION_NS, MAX_EXPIRY_ROUNDS, MAX_MIN_CWND_PKTS, MAX_RTT_NS,
};
use tcp_cc_core::sample::SampleSource;
use tcp_cc_core_fuzz::Input;

/// Events per input (a sample or a round end each).
const MAX_EVENTS: usize = 4096;
const PPM: u64 = 1_000_000;

/// The docs' table: each parameter's name, value and allowed range.
fn table(p: &DxParams) -> [(&'static str, u32, u32, u32); 5] {
    [
        ("headroom_ns", p.headroom_ns, 1, MAX_RTT_NS),
        ("min_cwnd_pkts", p.min_cwnd_pkts, 1, MAX_MIN_CWND_PKTS),
        ("max_decrease_ppm", p.max_decrease_ppm, 1, PPM as u32),
        ("base_rtt_slack_ns", p.base_rtt_slack_ns, 0, p.headroom_ns),
        (
            "min_rtt_expiry_rounds",
            p.min_rtt_expiry_rounds,
            0,
            MAX_EXPIRY_ROUNDS,
        ),
    ]
}

/// A parameter set: a preset (possibly with one field replaced by anything), one drawn
/// from the valid ranges, or raw values.
fn params(i: &mut Input) -> DxParams {
    let mut p = match i.u8() % 8 {
        0 => DxParams::DEFAULT,
        1 => DxParams::HARDWARE,
        2 => {
            return DxParams {
                headroom_ns: i.u32(),
                min_cwnd_pkts: i.u32(),
                max_decrease_ppm: i.u32(),
                base_rtt_slack_ns: i.u32(),
                min_rtt_expiry_rounds: i.u32(),
            }
        }
        _ => {
            let headroom_ns = i.in_range(1, MAX_RTT_NS);
            return DxParams {
                headroom_ns,
                min_cwnd_pkts: i.in_range(1, MAX_MIN_CWND_PKTS),
                max_decrease_ppm: i.in_range(1, PPM as u32),
                base_rtt_slack_ns: i.in_range(0, headroom_ns),
                // Small expiries too, so that expiry happens within an input.
                min_rtt_expiry_rounds: match i.u8() % 2 {
                    0 => i.in_range(0, 8),
                    _ => i.in_range(0, MAX_EXPIRY_ROUNDS),
                },
            };
        }
    };
    let v = i.u32();
    match i.u8() % 8 {
        0 => p.headroom_ns = v,
        1 => p.min_cwnd_pkts = v,
        2 => p.max_decrease_ppm = v,
        3 => p.base_rtt_slack_ns = v,
        4 => p.min_rtt_expiry_rounds = v,
        _ => {}
    }
    p
}

fn check_validation(p: &DxParams) -> bool {
    let table = table(p);
    let bad = table.iter().find(|(_, v, lo, hi)| v < lo || v > hi);
    match (p.validate(), bad) {
        (Ok(()), None) => true,
        (Ok(()), Some(b)) => panic!("accepted, but out of range: {b:?} in {p:?}"),
        (Err(e), _) => {
            let (_, value, lo, hi) = *table
                .iter()
                .find(|t| t.0 == e.name)
                .unwrap_or_else(|| panic!("unknown parameter {}", e.name));
            assert_eq!((e.value, e.min, e.max), (value, lo, hi), "{e:?}");
            assert!(value < lo || value > hi, "rejected within range: {e:?}");
            // The first offending parameter in the table's order.
            assert_eq!(bad.map(|b| b.0), Some(e.name));
            false
        }
    }
}

/// `owd - base` modulo 2^32, as a signed value in [-2^31, 2^31).
fn signed_diff(owd: u32, base: u32) -> i64 {
    let d = (i64::from(owd) - i64::from(base)).rem_euclid(1 << 32);
    if d >= 1 << 31 {
        d - (1 << 32)
    } else {
        d
    }
}

/// Eq. 1 with the docs' rounding, in 128 bits: `Q / R` as a binary fraction rounded down
/// and capped at 2, times `(W* - 1) / W*` rounded down; the cut `(W f + 2 W) / 2^32`
/// rounded down and at least 1; then the bounds.
fn eq1(p: &DxParams, w: u32, w_star: u32, q: u32, r: u32) -> u32 {
    let floor = u128::from(p.min_cwnd_pkts);
    let w128 = u128::from(w);
    if q < p.headroom_ns {
        return (w128 + 1).min(u128::from(u32::MAX)).max(floor) as u32;
    }
    let one = u128::from(FRAC_ONE);
    let eq1 = if w_star <= 1 || r == 0 {
        0
    } else {
        let q_over_r = (u128::from(q) * one / u128::from(r)).min(2 * one);
        let f = q_over_r * u128::from(w_star - 1) / u128::from(w_star);
        if f >= one {
            0
        } else {
            let cut = ((w128 * f + 2 * w128) / one).max(1);
            w128.saturating_sub(cut)
        }
    };
    let keep = u128::from(PPM) - u128::from(p.max_decrease_ppm).min(u128::from(PPM));
    let bounded = (w128 * keep).div_ceil(u128::from(PPM));
    eq1.max(bounded).max(floor) as u32
}

/// The window against exact rational arithmetic: the cut is the exact `W Q (W* - 1) /
/// (R W*)` plus at most `2 W / 2^32`, rounded down, at least 1; then the bounds. And the
/// bounds stated directly.
fn check_window(p: &DxParams, w: u32, w_star: u32, q: u32, r: u32, got: u32) {
    let floor = p.min_cwnd_pkts;
    assert!(got >= floor);
    assert!(got <= w.saturating_add(1).max(floor));
    let lost = u64::from(w.saturating_sub(got));
    assert!(lost * PPM <= u64::from(w) * u64::from(p.max_decrease_ppm));
    if q < p.headroom_ns {
        assert_eq!(got, w.saturating_add(1).max(floor));
        return;
    }
    let bound = |x: u128| {
        let keep = u128::from(PPM - u64::from(p.max_decrease_ppm));
        x.max((u128::from(w) * keep).div_ceil(u128::from(PPM)))
            .max(u128::from(floor)) as u32
    };
    if w_star <= 1 || r == 0 {
        assert_eq!(got, bound(0));
        return;
    }
    let num = u128::from(w) * u128::from(q) * u128::from(w_star - 1);
    let den = u128::from(r) * u128::from(w_star);
    if u128::from(q) * u128::from(w_star - 1) >= den {
        // Q >= V.
        assert_eq!(got, bound(0));
        return;
    }
    let exact_cut = (num / den).max(1);
    // A larger cut c is allowed where c - num / den <= 2 W / 2^32.
    let allowed = |c: u128| {
        c == exact_cut || (c * den - num) * u128::from(FRAC_ONE) <= 2 * u128::from(w) * den
    };
    let ok = (exact_cut..exact_cut + 3)
        .any(|c| allowed(c) && got == bound(u128::from(w).saturating_sub(c)));
    assert!(
        ok,
        "W {w} W* {w_star} Q {q} R {r}: {got}, exact {}",
        bound(u128::from(w).saturating_sub(exact_cut))
    );
}

/// `Dx` as its docs describe it, written plainly.
#[derive(Debug, Default)]
struct Model {
    source: Option<SampleSource>,
    base: u32,
    min_rtt: u32,
    sum: u128,
    count: u64,
    round_min: Option<(u32, u32)>,
    last_q: u32,
    sampled: bool,
    samples: u32,
    ignored: u32,
    stale: u32,
    prev_cwnd: Option<u32>,
}

impl Model {
    fn sample(&mut self, p: &DxParams, s: &DelaySample) -> Option<u32> {
        let (owd, rtt) = (s.owd_ns, s.rtt_ns);
        if rtt == 0 || rtt > MAX_RTT_NS {
            self.ignored = self.ignored.wrapping_add(1);
            return None;
        }
        if self.source != Some(s.source) {
            self.source = Some(s.source);
            self.min_rtt = rtt;
            self.round_min = None;
        }
        if self.round_min.is_none_or(|(r, _)| rtt < r) {
            self.round_min = Some((rtt, owd));
        }
        self.min_rtt = self.min_rtt.min(rtt);
        let q = if u64::from(rtt) <= u64::from(self.min_rtt) + u64::from(p.base_rtt_slack_ns) {
            self.base = owd;
            self.stale = 0;
            0
        } else {
            let d = signed_diff(owd, self.base);
            if d.abs() > i64::from(rtt) {
                self.ignored = self.ignored.wrapping_add(1);
                return None;
            }
            if d < 0 {
                self.base = owd;
            }
            d.max(0) as u32
        };
        self.samples = self.samples.wrapping_add(1);
        if self.count < u64::from(u32::MAX) {
            self.count += 1;
            self.sum += u128::from(q);
        }
        Some(q)
    }

    fn round_end(&mut self, p: &DxParams, cwnd: u32) -> u32 {
        let w_star = match self.prev_cwnd {
            Some(w) if w != 0 => w,
            _ => cwnd,
        };
        self.prev_cwnd = Some(cwnd);
        if self.count == 0 {
            self.sampled = false;
            return cwnd.max(p.min_cwnd_pkts);
        }
        let q = u32::try_from(self.sum / u128::from(self.count)).unwrap();
        self.last_q = q;
        self.sampled = true;
        let next = eq1(p, cwnd, w_star, q, self.min_rtt);
        check_window(p, cwnd, w_star, q, self.min_rtt, next);
        self.stale = (self.stale + 1).min(u32::from(u16::MAX));
        if p.min_rtt_expiry_rounds != 0 && self.stale > p.min_rtt_expiry_rounds {
            if let Some((rtt, owd)) = self.round_min {
                self.min_rtt = rtt;
                self.base = owd;
                self.stale = 0;
            }
        }
        self.sum = 0;
        self.count = 0;
        self.round_min = None;
        next
    }

    fn check(&self, p: &DxParams, d: &Dx) {
        let min_rtt = if self.source.is_some() {
            self.min_rtt
        } else {
            0
        };
        let got = (
            d.source(),
            d.min_rtt_ns(),
            d.last_q_ns(),
            d.last_round_sampled(),
            d.samples(),
            d.ignored_samples(),
            u64::from(d.round_samples()),
            d.stale_rounds(),
        );
        let want = (
            self.source,
            min_rtt,
            self.last_q,
            self.sampled,
            self.samples,
            self.ignored,
            self.count,
            self.stale,
        );
        assert_eq!(got, want, "dx {d:?}\nmodel {self:?}");
        if self.source.is_some() {
            assert_eq!(d.base_owd_ns(), self.base);
        }
        assert_eq!(
            d.exit_slow_start(p),
            self.sampled && self.last_q >= p.headroom_ns
        );
    }
}

/// One flow, and its twin whose OWDs all carry `offset` more.
struct Flow {
    dx: Dx,
    twin: Dx,
    model: Model,
    offset: u32,
    cwnd: u32,
}

impl Flow {
    fn new(offset: u32, cwnd: u32) -> Flow {
        Flow {
            dx: Dx::default(),
            twin: Dx::default(),
            model: Model::default(),
            offset,
            cwnd,
        }
    }

    fn sample(&mut self, p: &DxParams, s: &DelaySample) {
        let got = self.dx.on_sample(s, p);
        assert_eq!(got, self.model.sample(p, s), "sample {s:?}");
        if let Some(q) = got {
            assert!(q <= s.rtt_ns);
        }
        let shifted = DelaySample {
            owd_ns: s.owd_ns.wrapping_add(self.offset),
            ..*s
        };
        assert_eq!(
            self.twin.on_sample(&shifted, p),
            got,
            "offset {}",
            self.offset
        );
    }

    fn round_end(&mut self, p: &DxParams, cwnd: u32) {
        let next = self.dx.on_round_end(cwnd, p);
        assert_eq!(next, self.model.round_end(p, cwnd));
        assert_eq!(self.twin.on_round_end(cwnd, p), next);
        self.cwnd = next;
    }

    fn check(&self, p: &DxParams) {
        self.model.check(p, &self.dx);
        assert_eq!(self.twin.source(), self.dx.source());
        if self.dx.source().is_some() {
            assert_eq!(
                self.twin.base_owd_ns(),
                self.dx.base_owd_ns().wrapping_add(self.offset)
            );
        }
        let twin = (
            self.twin.min_rtt_ns(),
            self.twin.last_q_ns(),
            self.twin.samples(),
            self.twin.ignored_samples(),
            self.twin.round_samples(),
            self.twin.stale_rounds(),
        );
        let dx = (
            self.dx.min_rtt_ns(),
            self.dx.last_q_ns(),
            self.dx.samples(),
            self.dx.ignored_samples(),
            self.dx.round_samples(),
            self.dx.stale_rounds(),
        );
        assert_eq!(twin, dx);
    }
}

/// An RTT, often an edge or near the flow's minimum and its slack.
fn rtt(i: &mut Input, p: &DxParams, f: &Flow) -> u32 {
    let min = f.dx.min_rtt_ns();
    let near = |x: u32, d: i8| x.saturating_add_signed(i32::from(d));
    match i.u8() % 16 {
        0 => 0,
        1 => u32::MAX,
        2 => MAX_RTT_NS,
        3 => MAX_RTT_NS + 1,
        4 => near(min, i.u8() as i8),
        5 => near(min.saturating_add(p.base_rtt_slack_ns), i.u8() as i8),
        6 => i.u32(),
        _ => min
            .max(1000)
            .saturating_add(u32::from(i.u8()) * u32::from(i.u8()) * 16),
    }
}

/// An OWD, often near the base (either side), at the far side of the circle, or anywhere.
fn owd(i: &mut Input, f: &Flow, rtt: u32) -> u32 {
    let base = f.dx.base_owd_ns();
    match i.u8() % 16 {
        0 => i.u32(),
        1 => base.wrapping_add(1 << 31),
        2 => base.wrapping_add(rtt),
        3 => base.wrapping_add(rtt).wrapping_add(1),
        4 => base.wrapping_sub(rtt),
        5 => base.wrapping_sub(rtt).wrapping_sub(1),
        6 => base.wrapping_sub(u32::from(i.u8())),
        _ => base.wrapping_add(u32::from(i.u8()) * u32::from(i.u8()) * 8),
    }
}

fn source(i: &mut Input) -> SampleSource {
    match i.u8() % 8 {
        0 => SampleSource::Hardware,
        1 => SampleSource::KernelRtt,
        _ => SampleSource::Software,
    }
}

/// A stream of stamps through `StampCalibrator` and `calibrate_stamp_ns`, against the rule.
fn calibrate(i: &mut Input, c: &mut StampCalibrator, prev: &mut Option<u32>) {
    let stamp = match (i.u8() % 4, *prev) {
        (0, _) | (_, None) => i.u32(),
        (1, Some(p)) => p.wrapping_sub(i.u32() % (2 * MAX_CALIBRATION_NS)),
        (_, Some(p)) => p.wrapping_add(u32::from(i.u8()) * 32),
    };
    let bytes = match i.u8() % 4 {
        0 => i.u32(),
        _ => 1538,
    };
    let rate = match i.u8() % 4 {
        0 => i.u32(),
        1 => 0,
        _ => 10_000,
    };
    let tx = match rate {
        0 => 0,
        r => (u64::from(bytes) * 8000 / u64::from(r)).min(u64::from(MAX_CALIBRATION_NS)) as u32,
    };
    assert_eq!(tx_time_ns(bytes, rate), tx);
    let got = c.calibrate(stamp, bytes, rate);
    let want = match *prev {
        None => stamp,
        Some(p) => {
            let gap = signed_diff(stamp, p);
            let applies = tx > 0 && gap < i64::from(tx) && gap >= -i64::from(MAX_CALIBRATION_NS);
            let out = if applies { p.wrapping_add(tx) } else { stamp };
            assert_eq!(calibrate_stamp_ns(p, stamp, bytes, rate), out);
            if applies {
                assert_eq!(out.wrapping_sub(p), tx);
            }
            out
        }
    };
    assert_eq!(got, want);
    *prev = Some(got);
}

/// One module load with valid parameters: flows and their events until the input asks
/// for the next load.
fn load(i: &mut Input, p: &DxParams, events: &mut usize) {
    let mut f = Flow::new(i.u32(), i.u32());
    let mut cal = [StampCalibrator::default(); 2];
    let mut cal_prev = [None; 2];
    // Sanity of the pure function on its own, over any arguments.
    let (w, w_star, q, r) = (i.u32(), i.u32(), i.u32(), i.u32());
    let next = next_cwnd_pkts(w, w_star, q, r, p);
    assert_eq!(next, eq1(p, w, w_star, q, r));
    check_window(p, w, w_star, q, r, next);
    while *events < MAX_EVENTS && !i.is_empty() {
        *events += 1;
        match i.u8() % 16 {
            0..=8 => {
                let source = source(i);
                let rtt = rtt(i, p, &f);
                let owd = if source == SampleSource::KernelRtt && i.bool() {
                    rtt
                } else {
                    owd(i, &f, rtt)
                };
                f.sample(
                    p,
                    &DelaySample {
                        source,
                        owd_ns: owd,
                        rtt_ns: rtt,
                    },
                );
            }
            9 => {
                // A run of samples at one queue level (a round's worth).
                let (source, n, queue) = (source(i), i.u8() % 64, u32::from(i.u8()) * 256);
                *events += usize::from(n);
                let min = f.dx.min_rtt_ns().max(1);
                let base = f.dx.base_owd_ns();
                for k in 0..n {
                    let jitter = u32::from(k % 7) * 100;
                    let s = DelaySample {
                        source,
                        owd_ns: base.wrapping_add(queue + jitter),
                        rtt_ns: min.saturating_add(queue + jitter),
                    };
                    f.sample(p, &s);
                }
            }
            10..=11 => {
                let cwnd = match i.u8() % 4 {
                    0 => i.u32(),
                    _ => f.cwnd,
                };
                f.round_end(p, cwnd);
            }
            12 => {
                let k = usize::from(i.u8() % 2);
                calibrate(i, &mut cal[k], &mut cal_prev[k]);
            }
            13 => f = Flow::new(i.u32(), i.u32()),
            14 => {
                // Many empty rounds, or rounds of one sample: the stale count and expiry.
                let n = i.u8() % 64;
                *events += usize::from(n);
                let s = DelaySample {
                    source: source(i),
                    owd_ns: f.dx.base_owd_ns().wrapping_add(5000),
                    rtt_ns: f.dx.min_rtt_ns().saturating_add(20_000).min(MAX_RTT_NS),
                };
                let with_samples = i.bool();
                for _ in 0..n {
                    if with_samples {
                        f.sample(p, &s);
                    }
                    f.round_end(p, f.cwnd);
                }
            }
            _ => return, // Module reloaded.
        }
        f.check(p);
    }
}

fuzz_target!(|data: &[u8]| {
    let mut i = Input::new(data);
    let mut events = 0;
    while events < MAX_EVENTS && !i.is_empty() {
        let p = params(&mut i);
        if check_validation(&p) {
            load(&mut i, &p, &mut events);
        } else {
            events += 1;
        }
    }
});
