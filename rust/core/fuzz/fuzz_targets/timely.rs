// SPDX-License-Identifier: GPL-2.0

//! TIMELY and patched TIMELY, driven as `rust/tcp_timely.rs` drives them: a stream of ACKs
//! (bytes ACKed, RTT samples as the kernel's `long`: -1, 0, `u32::MAX`, beyond), clock
//! steps (forward, backward, to 0 and to the end of time), the delay-stamp option's
//! network RTTs from hardware or software stamps, transmissions after idle,
//! losses, MSS changes, re-initialisation and module reloads with new parameters, through
//! `Segmenter` and `Timely`.
//!
//! Checked after every event, for both variants:
//! - the promises of the docs: the rate stays within `[min_rate, max_rate]` of the
//!   parameters in force, one update never cuts it by more than half, each zone moves it
//!   the way it says (up below `T_low`, down above `T_high`, the original law down on a
//!   positive gradient and up otherwise, the patched law never down at or below its
//!   reference RTT), application-limited completions never raise it, the first completion
//!   only initialises, a loss halves it unless the last RTT showed no queue; the EWMA of
//!   RTT differences stays within the range that keeps its products inside 64 bits;
//! - exact agreement with a reference written independently in 128-bit arithmetic (the
//!   formulas of `timely.rs`'s module doc with its rounding rules), and of `Segmenter`
//!   with a plain model (a list of the last segments' minima, the source rule);
//! - no panic, overflow or failed debug assertion anywhere (the build keeps both checks).

#![no_main]

use std::collections::VecDeque;

use libfuzzer_sys::fuzz_target;
use tcp_cc_core::sample::SampleSource;
use tcp_cc_core::timely::{
    cwnd_cap_pkts, is_app_limited, pacing_bytes_per_sec, usable_rtt_us, Completion, Mode, Params,
    Segmenter, Timely, Variant, MAX_RTT_US, MAX_SEG_BYTES, MIN_CWND_PKTS, RTT_WINDOW_SEGS,
    SOURCE_SILENCE_T_HIGHS,
};
use tcp_cc_core_fuzz::{params, Input};

const PPM: i128 = 1_000_000;
/// Events per input: enough for many segments and long HAI runs.
const MAX_EVENTS: usize = 4096;

fn sat_u64(x: i128) -> u64 {
    x.clamp(0, i128::from(u64::MAX)) as u64
}

/// `rate * keep / PPM`, `keep = max(1 - cut, 1/2)`: the decrease with its half-cut floor.
fn cut(rate: u64, cut_ppm: i128) -> u64 {
    let keep = (PPM - cut_ppm).max(PPM / 2);
    sat_u64(i128::from(rate) * keep / PPM)
}

/// What `on_completion` must produce, from the module doc's formulas: rate before the
/// final clamp, new EWMA, gradient, HAI count and mode.
struct Expected {
    rate: u64,
    rtt_diff_ns: i64,
    gradient_ppm: i32,
    neg_gradients: u32,
    mode: Mode,
}

/// `rtt` is the completion's RTT, `high` the one `T_high` is tested on.
fn expected(p: &Params, v: Variant, t: &Timely, rtt: u32, high: u32) -> Expected {
    let alpha = i128::from(p.alpha_ppm);
    let new_diff = (i128::from(rtt) - i128::from(t.prev_rtt_us)) * 1000;
    // Rust's division truncates towards zero, as i128's does.
    let diff = ((PPM - alpha) * i128::from(t.rtt_diff_ns) + alpha * new_diff) / PPM;
    let gradient = (diff * 1000 / i128::from(p.min_rtt_us)).clamp(i32::MIN.into(), i32::MAX.into());
    let rate = i128::from(t.rate_bps);
    let delta = i128::from(p.delta_kbps) * 1000;
    let mut neg = 0;
    let (new_rate, mode) = if rtt < p.t_low_us {
        (sat_u64(rate + delta), Mode::LowRtt)
    } else if high > p.t_high_us {
        let excess = PPM - PPM * i128::from(p.t_high_us) / i128::from(high);
        (
            cut(t.rate_bps, i128::from(p.beta_ppm) * excess / PPM),
            Mode::HighRtt,
        )
    } else if v == Variant::Original {
        if gradient <= 0 {
            // HAI counts negative gradients only; 0 breaks the run.
            neg = if gradient < 0 {
                // A 16-bit count, saturating (only compared with hai_threshold <= 1000).
                u32::from(t.neg_gradients.saturating_add(1))
            } else {
                0
            };
            if neg >= p.hai_threshold {
                (sat_u64(rate + delta * i128::from(p.hai_factor)), Mode::Hai)
            } else {
                (sat_u64(rate + delta), Mode::Increase)
            }
        } else {
            (
                cut(t.rate_bps, i128::from(p.beta_ppm) * gradient / PPM),
                Mode::Decrease,
            )
        }
    } else {
        neg = u32::from(t.neg_gradients);
        let w = (2 * gradient + PPM / 2).clamp(0, PPM);
        let rtt_ref = i128::from(p.rtt_ref_us());
        let error = ((i128::from(rtt) - rtt_ref) * PPM / rtt_ref).min(PPM * PPM);
        let increase = delta * (PPM - w) / PPM;
        let change = i128::from(p.patched_beta_ppm) * w / PPM * error.abs() / PPM;
        let kept = if error >= 0 {
            cut(t.rate_bps, change)
        } else {
            sat_u64(rate + rate * change / PPM)
        };
        (sat_u64(i128::from(kept) + increase), Mode::Weighted)
    };
    Expected {
        rate: new_rate,
        rtt_diff_ns: i64::try_from(diff).expect("EWMA beyond 64 bits"),
        gradient_ppm: gradient as i32,
        neg_gradients: neg,
        mode,
    }
}

fn in_bounds(p: &Params, rate: u64) -> bool {
    (p.min_rate_bps()..=p.max_rate_bps()).contains(&rate)
}

fn check_completion(
    p: &Params,
    v: Variant,
    before: &Timely,
    after: &Timely,
    rtt_in: u32,
    high_in: u32,
    interval_us: u64,
    app: bool,
) {
    let rtt = rtt_in.clamp(1, MAX_RTT_US);
    let high = high_in.clamp(1, MAX_RTT_US);
    assert_eq!((after.last_rtt_us, after.prev_rtt_us), (rtt, rtt));
    if before.prev_rtt_us == 0 {
        // The first completion only initialises the RTT history.
        assert_eq!(
            Timely {
                prev_rtt_us: 0,
                last_rtt_us: before.last_rtt_us,
                ..*after
            },
            *before
        );
        return;
    }
    let clamp = |r: u64| r.clamp(p.min_rate_bps(), p.max_rate_bps());
    let e = expected(p, v, before, rtt, high);
    // Update scaling: the change times min(1, interval / min RTT), in ppm, truncated.
    let e_rate = if p.update_scaling == 1 && interval_us < u64::from(p.min_rtt_us) {
        let scale = i128::from(interval_us) * PPM / i128::from(p.min_rtt_us);
        let change = (i128::from(e.rate) - i128::from(before.rate_bps)).abs() * scale / PPM;
        if e.rate >= before.rate_bps {
            sat_u64(i128::from(before.rate_bps) + change)
        } else {
            sat_u64(i128::from(before.rate_bps) - change)
        }
    } else {
        e.rate
    };
    let rate = if app && e_rate > before.rate_bps {
        before.rate_bps
    } else {
        e_rate
    };
    let got = (
        after.rate_bps,
        after.rtt_diff_ns,
        after.gradient_ppm,
        u32::from(after.neg_gradients),
        after.mode,
    );
    let want = (
        clamp(rate),
        e.rtt_diff_ns,
        e.gradient_ppm,
        e.neg_gradients,
        e.mode as u8,
    );
    assert_eq!(
        got, want,
        "{v:?} rtt {rtt} high {high} app_limited {app}\nbefore {before:?}\nparams {p:?}"
    );

    // The documented invariants, stated directly.
    assert!(in_bounds(p, after.rate_bps));
    assert!(after.rtt_diff_ns.unsigned_abs() <= u64::from(MAX_RTT_US) * 1000);
    assert!(
        after.rate_bps >= clamp(before.rate_bps / 2),
        "cut by more than half"
    );
    let (up, down) = (
        after.rate_bps >= clamp(before.rate_bps),
        after.rate_bps <= clamp(before.rate_bps),
    );
    if app {
        assert!(down);
    }
    if rtt < p.t_low_us {
        assert!(up && after.mode == Mode::LowRtt as u8);
    } else if high > p.t_high_us {
        assert!(down && after.mode == Mode::HighRtt as u8);
    } else if v == Variant::Original {
        assert!(if after.gradient_ppm > 0 { down } else { up });
        if after.mode == Mode::Hai as u8 {
            assert!(u32::from(after.neg_gradients) >= p.hai_threshold);
        }
    } else if rtt <= p.rtt_ref_us() {
        assert!(up);
    }
}

/// `Segmenter` written plainly: bytes and minimum (or latest) sample of the open segment,
/// the minima of the last segments in a list as long as the window's segments (one to
/// four), and the source whose samples are taken.
#[derive(Debug)]
struct SegModel {
    acked: u64,
    min_rtt: Option<u32>,
    /// The open segment's latest sample.
    last: Option<u32>,
    start: u64,
    last_ack: u64,
    recent: VecDeque<u32>,
    source: Option<SampleSource>,
    /// When `source` last gave a sample (the clock's low 32 bits).
    seen: u32,
    changed: bool,
}

impl SegModel {
    fn new(now: u64) -> SegModel {
        SegModel {
            acked: 0,
            min_rtt: None,
            last: None,
            start: now,
            last_ack: now,
            recent: VecDeque::new(),
            source: None,
            seen: 0,
            changed: false,
        }
    }

    fn tx_start(&mut self, p: &Params, now: u64, rate: u64) -> bool {
        let burst_us = u128::from(MAX_SEG_BYTES) * 8 * 1_000_000 / u128::from(rate.max(1));
        let idle =
            u128::from(now.saturating_sub(self.last_ack)) > u128::from(p.t_high_us) + burst_us;
        if idle {
            // A new segment; the source stays.
            *self = SegModel {
                source: self.source,
                seen: self.seen,
                changed: self.changed,
                ..SegModel::new(now)
            };
        }
        idle
    }

    fn offer(&mut self, p: &Params, now: u64, rtt: u32, source: SampleSource) -> bool {
        let silence = u64::from(p.t_high_us) * u64::from(SOURCE_SILENCE_T_HIGHS);
        let since = u64::from((now as u32).wrapping_sub(self.seen));
        let silent = since > silence.min(u64::from(u32::MAX));
        if self.source.is_some_and(|cur| source > cur) && !silent {
            return false;
        }
        if self.source != Some(source) {
            self.changed |= self.source.is_some();
            self.source = Some(source);
            self.min_rtt = None;
            self.last = None;
            self.recent.clear();
        }
        self.seen = now as u32;
        let r = rtt.clamp(1, MAX_RTT_US);
        self.min_rtt = Some(match (self.min_rtt, p.rtt_window_bytes) {
            (Some(m), w) if w != 0 => m.min(r),
            _ => r,
        });
        self.last = Some(r);
        true
    }

    fn ack(&mut self, p: &Params, now: u64, bytes: u32, rtt: Option<u32>) -> Option<Completion> {
        if let Some(r) = rtt {
            self.offer(p, now, r, SampleSource::KernelRtt);
        }
        self.last_ack = now;
        // The count saturates at 4 GB (only reached without any RTT sample).
        self.acked = (self.acked + u64::from(bytes)).min(u64::from(u32::MAX));
        let min_rtt = self.min_rtt?;
        if self.acked < u64::from(p.seg_bytes) {
            return None;
        }
        let elapsed = now.saturating_sub(self.start).max(1);
        let delivered_bps = u128::from(self.acked) * 8 * 1_000_000 / u128::from(elapsed);
        let window_min = if p.rtt_window_bytes == 0 {
            min_rtt
        } else {
            let segs = u64::from(p.rtt_window_bytes).div_ceil(u64::from(p.seg_bytes));
            let slots = segs.clamp(1, RTT_WINDOW_SEGS as u64) as usize;
            self.recent.push_back(min_rtt);
            while self.recent.len() > slots {
                self.recent.pop_front();
            }
            // At most `patched_rtt_window_rtts` of this segment's RTT, in whole segments of its
            // duration, at least one.
            let segs = match p.patched_rtt_window_rtts {
                0 => slots,
                m => (u64::from(m) * u64::from(min_rtt) / elapsed).clamp(1, slots as u64) as usize,
            };
            *self.recent.iter().rev().take(segs).min().unwrap()
        };
        // Only the last-sample rule's sample waited for the segment's serialization.
        let serialization = match (p.line_rate_mbps, p.rtt_window_bytes) {
            (line, 0) if line != 0 => p.seg_bytes * 8 / line,
            _ => 0,
        };
        let last = self.last.take().unwrap();
        self.acked = 0;
        self.min_rtt = None;
        self.start = now;
        let new_source = self.changed;
        self.changed = false;
        Some(Completion {
            rtt_us: window_min.saturating_sub(serialization).max(1),
            last_rtt_us: last.saturating_sub(serialization).max(1),
            delivered_bps: u64::try_from(delivered_bps).unwrap(),
            interval_us: elapsed,
            new_source,
        })
    }

    fn check(&self, s: &Segmenter) {
        let got = (
            u64::from(s.acked_bytes),
            s.rtt_us(),
            s.last_rtt_us,
            s.start_us,
            s.last_ack_us,
            s.source(),
            s.source_changed,
        );
        let want = (
            self.acked,
            self.min_rtt.unwrap_or(0),
            self.last.unwrap_or(0),
            self.start,
            self.last_ack,
            self.source,
            self.changed,
        );
        assert_eq!(got, want, "segmenter {s:?}\nmodel {self:?}");
    }
}

struct Flow {
    variant: Variant,
    cc: Timely,
    seg: Segmenter,
    model: SegModel,
}

impl Flow {
    /// The module's `init`.
    fn init(variant: Variant, p: &Params, others: u32, now: u64) -> Flow {
        let cc = Timely::new(p, p.init_rate_bps(others));
        assert!(in_bounds(p, cc.rate_bps));
        assert_eq!(cc.mode, Mode::Start as u8);
        let mut seg = Segmenter::default();
        seg.restart(now);
        Flow {
            variant,
            cc,
            seg,
            model: SegModel::new(now),
        }
    }

    /// The module's `apply`: pacing rate and in-flight cap from the rate.
    fn apply(&self, p: &Params, mss: u32) {
        assert_eq!(pacing_bytes_per_sec(self.cc.rate_bps), self.cc.rate_bps / 8);
        let window_us = u128::from(p.t_high_us) + u128::from(p.min_rtt_us);
        let bytes = u128::from(self.cc.rate_bps / 8) * window_us / 1_000_000;
        let pkts =
            (bytes / u128::from(mss.max(1))).clamp(MIN_CWND_PKTS.into(), (u32::MAX >> 1).into());
        assert_eq!(u128::from(cwnd_cap_pkts(p, self.cc.rate_bps, mss)), pkts);
    }

    /// The module's `cong_control`, with its variant's parameters.
    fn ack(&mut self, p: &Params, now: u64, bytes: u32, sample: i64, delayed: bool, app: bool) {
        let own = p.for_variant(self.variant);
        // Only the patched law's own rule differs between the variants.
        let expect_rtts = match self.variant {
            Variant::Original => 0,
            Variant::Patched => p.patched_rtt_window_rtts,
        };
        assert_eq!(
            own,
            Params {
                patched_rtt_window_rtts: expect_rtts,
                ..*p
            }
        );
        let p = &own;
        let rtt = usable_rtt_us(u32::try_from(sample).ok(), delayed);
        assert_eq!(rtt, u32::try_from(sample).ok().filter(|_| !delayed));
        let c = self.seg.on_ack(p, now, bytes, rtt);
        assert_eq!(c, self.model.ack(p, now, bytes, rtt));
        self.model.check(&self.seg);
        if let Some(c) = c {
            assert!((1..=MAX_RTT_US).contains(&c.rtt_us));
            if c.new_source {
                self.cc.restart_gradient();
            }
            let app_limited = app && is_app_limited(c.delivered_bps, self.cc.rate_bps);
            assert_eq!(
                app_limited,
                app && u128::from(c.delivered_bps) * 5 < u128::from(self.cc.rate_bps) * 4
            );
            let before = self.cc;
            self.cc.on_segment(p, self.variant, &c, app_limited);
            let high = match p.t_high_last_sample {
                0 => c.rtt_us,
                _ => c.last_rtt_us,
            };
            check_completion(
                p,
                self.variant,
                &before,
                &self.cc,
                c.rtt_us,
                high,
                c.interval_us,
                app_limited,
            );
        }
    }

    /// The module's `set_state` entering recovery or loss.
    fn loss(&mut self, p: &Params) {
        let before = self.cc;
        self.cc.on_loss(p);
        // The documented gate: `loss_rtt_us`, 0 meaning `t_high_us`.
        let gate = if p.loss_rtt_us == 0 {
            p.t_high_us
        } else {
            p.loss_rtt_us
        };
        if before.last_rtt_us != 0 && before.last_rtt_us < gate {
            assert_eq!(self.cc, before, "a loss below the gate changed the rate");
        } else {
            let half = (before.rate_bps / 2).clamp(p.min_rate_bps(), p.max_rate_bps());
            assert_eq!(
                self.cc,
                Timely {
                    rate_bps: half,
                    neg_gradients: 0,
                    mode: Mode::Loss as u8,
                    ..before
                }
            );
        }
        assert!(in_bounds(p, self.cc.rate_bps) || self.cc == before);
    }

    /// The module's `pkts_acked` with a delay sample: its network RTT, rounded up to us.
    fn stamp(&mut self, p: &Params, now: u64, rtt_ns: u32, source: SampleSource) {
        let rtt = rtt_ns.div_ceil(1000);
        let taken = self.seg.offer(p, now, rtt, source);
        assert_eq!(taken, self.model.offer(p, now, rtt, source));
        self.model.check(&self.seg);
    }

    fn tx_start(&mut self, p: &Params, now: u64) {
        let idle = self.seg.on_tx_start(p, now, self.cc.rate_bps);
        assert_eq!(idle, self.model.tx_start(p, now, self.cc.rate_bps));
        self.model.check(&self.seg);
        if idle {
            // The module forgets the RTT history after idle.
            self.cc.restart_gradient();
            assert_eq!((self.cc.prev_rtt_us, self.cc.rtt_diff_ns), (0, 0));
        }
    }
}

/// One module load with parameters `base`: flows and their events, until the input asks for
/// the next load. Counts events in `events`.
fn load(i: &mut Input, base: &Params, events: &mut usize) {
    let mut mss = i.u32();
    let mut now = i.u64();
    let others = i.u32();
    // The flow's C: from its link's speed (any a driver may report, or none) if the
    // module's max_rate_mbps is 0.
    let c_mbps = base.flow_c_mbps(if i.bool() { Some(i.u32()) } else { None });
    let mut p = base.for_flow(c_mbps, mss);
    let mut flows = [Variant::Original, Variant::Patched].map(|v| Flow::init(v, &p, others, now));
    while *events < MAX_EVENTS && !i.is_empty() {
        *events += 1;
        match i.u8() % 16 {
            0..=9 => {
                now = i.clock(now);
                let acked_sacked = match i.u8() % 4 {
                    0 => i.u32(),
                    _ => u32::from(i.u8()),
                };
                let sample = i.rtt_sample(&p);
                let flags = i.u8();
                let bytes = acked_sacked.saturating_mul(mss);
                for f in &mut flows {
                    f.ack(&p, now, bytes, sample, flags & 1 != 0, flags & 2 != 0);
                }
            }
            10 => {
                now = i.clock(now);
                for f in &mut flows {
                    f.tx_start(&p, now);
                }
            }
            11 => {
                let source = if i.bool() {
                    SampleSource::Hardware
                } else {
                    SampleSource::Software
                };
                let rtt_ns = i.u32();
                for f in &mut flows {
                    f.stamp(&p, now, rtt_ns, source);
                }
            }
            12 | 13 => flows.iter_mut().for_each(|f| f.loss(&p)),
            14 => {
                // Path MTU changed: the floor follows the MSS.
                mss = i.u32();
                p = base.for_flow(c_mbps, mss);
                assert_eq!(p.validate(), Ok(()));
            }
            _ => {
                if i.bool() {
                    return; // Module reloaded.
                }
                let others = i.u32();
                flows =
                    [Variant::Original, Variant::Patched].map(|v| Flow::init(v, &p, others, now));
            }
        }
        for f in &flows {
            f.apply(&p, mss);
        }
    }
}

fuzz_target!(|data: &[u8]| {
    let mut i = Input::new(data);
    let mut events = 0;
    while events < MAX_EVENTS && !i.is_empty() {
        let base = params(&mut i);
        if base.validate().is_ok() {
            load(&mut i, &base, &mut events);
        } // else the module refuses to load with them.
    }
});
