// SPDX-License-Identifier: GPL-2.0

//! TIMELY (Mittal et al., SIGCOMM 2015, Algorithm 1) and patched TIMELY (Zhu et al.,
//! "ECN or Delay", CoNEXT 2016, Algorithm 2): rate-based control from the RTT gradient.
//!
//! The controller runs once per *completion*, the ACK of a whole segment of `seg_bytes`
//! (16 KB by default), never on every ACK: Algorithm 1's gains assume at most one update per
//! minimum RTT, and applying it per ACK would multiply them. With an RTT sample `rtt`:
//!
//! ```text
//! rtt_diff  = (1 - alpha) rtt_diff + alpha (rtt - prev_rtt);  prev_rtt = rtt
//! gradient  = rtt_diff / min_rtt
//! rtt < T_low            : rate += delta
//! rtt > T_high           : rate *= 1 - beta (1 - T_high / rtt)
//! original, gradient <= 0: rate += N delta   (N = hai_factor after hai_threshold
//!                                            consecutive gradients < 0, else 1)
//! original, gradient > 0 : rate *= 1 - beta gradient
//! patched                : w = clamp(2 gradient + 1/2, 0, 1); e = (rtt - rtt_ref) / rtt_ref
//!                          rate = delta (1 - w) + rate (1 - beta_patched w e)
//! ```
//!
//! Fixed point: every fraction (alpha, beta, gradient, weight, error) is an integer in parts
//! per million (`_ppm`, 1_000_000 = 1.0); rates are bits per second (`_bps`); times are
//! microseconds (`_us`), except the EWMA of RTT differences, kept in nanoseconds for
//! resolution (a 1 us step over a 20 us minimum RTT is a gradient of 0.05).
//!
//! What the papers leave open, and what is done here:
//! - initial rate: the fair share C / (N + 1) of "ECN or Delay", N flows having sent
//!   recently from the same network namespace through the same device (see
//!   [`Params::init_rate_bps`], [`recent_senders`]), unless `init_rate_mbps` is set;
//! - first sample: it only initialises `prev_rtt` (as eRPC's port of the authors' code);
//! - a decrease never cuts the rate by more than half in one update (as eRPC), and the rate
//!   is always kept within `[min_rate_bps, max_rate_bps]`;
//! - HAI counts consecutive completions whose (smoothed) gradient is < 0, as the paper
//!   does, and is reset by any other outcome (a zero gradient too); it never applies in
//!   the `T_low` zone (as the paper states);
//! - after an idle period the RTT history is forgotten: the first completion after it only
//!   sets the previous RTT, as at the start (a gradient across the gap would compare the
//!   RTT of a drained path with that of a busy one);
//! - application-limited completions (the application sent less than 80% of the target
//!   rate) may decrease but never increase the rate;
//! - loss, which both papers assume away, halves the rate once per recovery episode when
//!   the RTT showed a queue, and is ignored when it did not (see [`Timely::on_loss`]).

use super::fixed::{mul_div, PPM};
use super::param::{ParamError, ParamSpec};
use super::sample::SampleSource;

/// Which law runs in the gradient zone.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Variant {
    /// TIMELY as published (Algorithm 1), with hyperactive increase.
    Original,
    /// Patched TIMELY (Algorithm 2): weighted decrease on the absolute RTT error.
    Patched,
}

/// What the last update did; shown by `ss -ti`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum Mode {
    /// No completion yet.
    Start = 0,
    /// RTT below `T_low`: additive increase.
    LowRtt = 1,
    /// RTT above `T_high`: multiplicative decrease on the RTT.
    HighRtt = 2,
    /// Gradient zone, rate increased (`delta`).
    Increase = 3,
    /// Gradient zone, hyperactive increase (`hai_factor * delta`).
    Hai = 4,
    /// Gradient zone, rate decreased.
    Decrease = 5,
    /// Patched law applied in the gradient zone.
    Weighted = 6,
    /// Halved after a loss.
    Loss = 7,
    /// Halved after an ECN congestion mark.
    Ce = 8,
    /// Cut by `alpha / 2` at the end of a window with ECN marks (`ecn_share` 1).
    EcnShare = 9,
}

/// Controller parameters, in the units of the kernel module's parameters (same names), so
/// that a validation error names what the user typed. Validated by [`Params::validate`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Params {
    /// Below this RTT the rate grows additively.
    pub t_low_us: u32,
    /// Above this RTT the rate is cut in proportion to the excess.
    pub t_high_us: u32,
    /// Additive increase step.
    pub delta_kbps: u32,
    /// Multiplicative decrease factor of the original law and of the `T_high` zone.
    pub beta_ppm: u32,
    /// EWMA weight of a new RTT difference.
    pub alpha_ppm: u32,
    /// Fixed propagation RTT normalising the gradient ("known ahead of time").
    pub min_rtt_us: u32,
    /// Consecutive non-positive gradients before hyperactive increase.
    pub hai_threshold: u32,
    /// Multiplier of `delta` in hyperactive increase.
    pub hai_factor: u32,
    /// Rate floor.
    pub min_rate_kbps: u32,
    /// Rate ceiling C, the line rate, for every flow; 0: each flow's own, its output
    /// device's link speed where the kernel knows it, else [`DEFAULT_LINK_MBPS`] (see
    /// [`Params::flow_c_mbps`]).
    pub max_rate_mbps: u32,
    /// Rate of a new flow; 0 starts at `max_rate_mbps`.
    pub init_rate_mbps: u32,
    /// Bytes ACKed per completion (one controller update).
    pub seg_bytes: u32,
    /// Line rate used to subtract a segment's serialization time from its RTT, with the
    /// paper's last-sample rule (`rtt_window_bytes` 0) only; 0: none.
    pub line_rate_mbps: u32,
    /// Patched law: decrease factor (`beta` of Algorithm 2).
    pub patched_beta_ppm: u32,
    /// Patched law: reference RTT the error is measured against; 0 means `t_low_us`.
    pub rtt_ref_us: u32,
    /// A completion's RTT is the minimum over the samples of the last `rtt_window_bytes`
    /// (rounded up to whole segments, at most [`RTT_WINDOW_SEGS`]); 0: the last sample of
    /// the segment, the paper's rule (one timestamp per segment).
    pub rtt_window_bytes: u32,
    /// A loss halves the rate only if the last completion's RTT was at least this; 0
    /// means `t_high_us` (see [`Timely::on_loss`]).
    pub loss_rtt_us: u32,
    /// 1: scale each update by min(1, the completion's duration / `min_rtt_us`), TIMELY
    /// section 5's rule for more than one completion per minimum RTT (eRPC's too); 0: none.
    pub update_scaling: u32,
    /// 1: test `T_high` on the segment's last sample (the paper's instantaneous RTT); 0:
    /// on the completion's RTT, the minimum over `rtt_window_bytes` (no difference with
    /// `rtt_window_bytes` 0).
    pub t_high_last_sample: u32,
    /// Patched law only ([`Params::for_variant`]). 0: the RTT window is
    /// `rtt_window_bytes` of ACKs. N (default 4): it also spans at most N of the flow's
    /// RTTs, whole segments of the current one's duration, at least one: with many flows a
    /// segment takes two RTTs or more, and a minimum over four of them lags the queue by
    /// six RTTs or more. The original law's flows drift apart with a short window (Jain
    /// 0.09-0.29).
    pub patched_rtt_window_rtts: u32,
}

/// Largest RTT sample taken at face value; larger ones are clamped to it.
pub const MAX_RTT_US: u32 = 10_000_000;
/// Largest supported rate ceiling, 400 Gbit/s: keeps every product below 2^64.
pub const MAX_RATE_MBPS: u32 = 400_000;
/// C of a flow whose device's link speed is unknown (`lo`, most virtual devices), with
/// `max_rate_mbps` 0: the papers' 10 Gbit/s.
pub const DEFAULT_LINK_MBPS: u32 = 10_000;
/// Largest segment: a TSO burst without BIG TCP.
pub const MAX_SEG_BYTES: u32 = 65_536;
/// Smallest fraction of the rate one decrease may leave.
pub const MAX_CUT_PPM: u64 = PPM / 2;
/// Longest gap allowed between paced packets: half the shortest delayed-ACK timeout of a
/// Linux receiver (40 ms). Paced further apart, every packet waits for the receiver's
/// timer, every RTT sample carries tens of milliseconds that TIMELY reads as queueing, and
/// the rate never recovers; within it, every second packet is ACKed at once, and the
/// minimum over a segment's samples is the network's RTT.
pub const MAX_PACKET_GAP_US: u64 = 20_000;

/// `tcp_timely`'s module parameters, one per [`Params`] field and named as it: the default
/// and range of each, written only here ([`super::param`]). The defaults are the papers'
/// values at 10 Gbit/s ([T] §6, [Z] footnote 4 and §4.3), but for C (`max_rate_mbps` 0:
/// each flow's link speed) and `patched_rtt_window_rtts`. A range that another parameter
/// bounds is written at its widest; [`Params::validate`] narrows it.
pub mod spec {
    use super::{ParamSpec, MAX_RTT_US, MAX_SEG_BYTES, PPM};

    const PPM_U32: u32 = PPM as u32;
    /// C's largest value in kbit/s.
    const MAX_RATE_KBPS: u32 = super::MAX_RATE_MBPS * 1000;

    /// Below `t_high_us`.
    pub const T_LOW_US: ParamSpec = ParamSpec::new("t_low_us", 50, 1, MAX_RTT_US - 1);
    /// Above `t_low_us`.
    pub const T_HIGH_US: ParamSpec = ParamSpec::new("t_high_us", 500, 2, MAX_RTT_US);
    /// At most C.
    pub const DELTA_KBPS: ParamSpec = ParamSpec::new("delta_kbps", 10_000, 1, MAX_RATE_KBPS);
    pub const BETA_PPM: ParamSpec = ParamSpec::new("beta_ppm", 800_000, 1, PPM_U32);
    pub const ALPHA_PPM: ParamSpec = ParamSpec::new("alpha_ppm", 875_000, 1, PPM_U32);
    pub const MIN_RTT_US: ParamSpec = ParamSpec::new("min_rtt_us", 20, 1, MAX_RTT_US);
    pub const HAI_THRESHOLD: ParamSpec = ParamSpec::new("hai_threshold", 5, 1, 1000);
    pub const HAI_FACTOR: ParamSpec = ParamSpec::new("hai_factor", 5, 1, 100);
    /// At most C.
    pub const MIN_RATE_KBPS: ParamSpec = ParamSpec::new("min_rate_kbps", 10_000, 1, MAX_RATE_KBPS);
    /// 0: each flow's C is its output device's link speed ([`super::Params::flow_c_mbps`]).
    pub const MAX_RATE_MBPS: ParamSpec =
        ParamSpec::new("max_rate_mbps", 0, 0, super::MAX_RATE_MBPS);
    /// At most C.
    pub const INIT_RATE_MBPS: ParamSpec =
        ParamSpec::new("init_rate_mbps", 0, 0, super::MAX_RATE_MBPS);
    pub const SEG_BYTES: ParamSpec = ParamSpec::new("seg_bytes", 16_384, 1, MAX_SEG_BYTES);
    pub const LINE_RATE_MBPS: ParamSpec =
        ParamSpec::new("line_rate_mbps", 0, 0, super::MAX_RATE_MBPS);
    pub const PATCHED_BETA_PPM: ParamSpec = ParamSpec::new("patched_beta_ppm", 8_000, 1, PPM_U32);
    pub const RTT_REF_US: ParamSpec = ParamSpec::new("rtt_ref_us", 0, 0, MAX_RTT_US);
    pub const RTT_WINDOW_BYTES: ParamSpec =
        ParamSpec::new("rtt_window_bytes", MAX_SEG_BYTES, 0, MAX_SEG_BYTES);
    pub const UPDATE_SCALING: ParamSpec = ParamSpec::new("update_scaling", 0, 0, 1);
    pub const LOSS_RTT_US: ParamSpec = ParamSpec::new("loss_rtt_us", 0, 0, MAX_RTT_US);
    /// Not the papers': without it, 64 flows at 10 Gbit/s leave a third of the link unused
    /// (README, "RTT window").
    pub const PATCHED_RTT_WINDOW_RTTS: ParamSpec =
        ParamSpec::new("patched_rtt_window_rtts", 4, 0, 64);
    pub const T_HIGH_LAST_SAMPLE: ParamSpec = ParamSpec::new("t_high_last_sample", 0, 0, 1);
    /// Not a [`Params`] field: it selects the ops the module registers (`ecn_share.rs`).
    pub const ECN_SHARE: ParamSpec = super::super::ecn_share::ECN_SHARE;

    /// Every parameter, in the module's order.
    pub const ALL: [ParamSpec; 21] = [
        T_LOW_US,
        T_HIGH_US,
        DELTA_KBPS,
        BETA_PPM,
        ALPHA_PPM,
        MIN_RTT_US,
        HAI_THRESHOLD,
        HAI_FACTOR,
        MIN_RATE_KBPS,
        MAX_RATE_MBPS,
        INIT_RATE_MBPS,
        SEG_BYTES,
        LINE_RATE_MBPS,
        PATCHED_BETA_PPM,
        RTT_REF_US,
        RTT_WINDOW_BYTES,
        UPDATE_SCALING,
        LOSS_RTT_US,
        PATCHED_RTT_WINDOW_RTTS,
        T_HIGH_LAST_SAMPLE,
        ECN_SHARE,
    ];
}

impl Params {
    /// The module's defaults ([`spec`]).
    pub const DEFAULT: Params = Params {
        t_low_us: spec::T_LOW_US.default,
        t_high_us: spec::T_HIGH_US.default,
        delta_kbps: spec::DELTA_KBPS.default,
        beta_ppm: spec::BETA_PPM.default,
        alpha_ppm: spec::ALPHA_PPM.default,
        min_rtt_us: spec::MIN_RTT_US.default,
        hai_threshold: spec::HAI_THRESHOLD.default,
        hai_factor: spec::HAI_FACTOR.default,
        min_rate_kbps: spec::MIN_RATE_KBPS.default,
        max_rate_mbps: spec::MAX_RATE_MBPS.default,
        init_rate_mbps: spec::INIT_RATE_MBPS.default,
        seg_bytes: spec::SEG_BYTES.default,
        line_rate_mbps: spec::LINE_RATE_MBPS.default,
        patched_beta_ppm: spec::PATCHED_BETA_PPM.default,
        rtt_ref_us: spec::RTT_REF_US.default,
        rtt_window_bytes: spec::RTT_WINDOW_BYTES.default,
        loss_rtt_us: spec::LOSS_RTT_US.default,
        update_scaling: spec::UPDATE_SCALING.default,
        t_high_last_sample: spec::T_HIGH_LAST_SAMPLE.default,
        patched_rtt_window_rtts: spec::PATCHED_RTT_WINDOW_RTTS.default,
    };

    /// The papers' parameters at 10 Gbit/s: the module's defaults with C set to the
    /// papers' link speed.
    pub const PAPER: Params = Params {
        max_rate_mbps: DEFAULT_LINK_MBPS,
        ..Params::DEFAULT
    };

    /// Additive step in bit/s.
    pub fn delta_bps(&self) -> u64 {
        u64::from(self.delta_kbps) * 1000
    }

    /// Rate floor in bit/s.
    pub fn min_rate_bps(&self) -> u64 {
        u64::from(self.min_rate_kbps) * 1000
    }

    /// The parameters for a flow with this MSS: the rate floor raised, if needed, to one
    /// packet per [`MAX_PACKET_GAP_US`] (580 kbit/s at MSS 1448), never above the cap.
    pub fn for_mss(&self, mss_bytes: u32) -> Params {
        // kbit/s = bits * 1000 / us, rounded up.
        let gap_floor_kbps = (u64::from(mss_bytes) * 8 * 1000).div_ceil(MAX_PACKET_GAP_US);
        let gap_floor_kbps = gap_floor_kbps.min(u64::from(self.c_mbps()) * 1000) as u32;
        Params {
            min_rate_kbps: self.min_rate_kbps.max(gap_floor_kbps),
            ..*self
        }
    }

    /// C of a flow whose output device runs at `link_mbps` (`None`: the kernel does not
    /// know): `max_rate_mbps` if set, else the link speed, never below the rate floor nor
    /// above [`MAX_RATE_MBPS`].
    pub fn flow_c_mbps(&self, link_mbps: Option<u32>) -> u32 {
        match self.max_rate_mbps {
            0 => link_mbps
                .filter(|&m| m > 0)
                .unwrap_or(DEFAULT_LINK_MBPS)
                .clamp(self.min_rate_kbps.div_ceil(1000).max(1), MAX_RATE_MBPS),
            c => c,
        }
    }

    /// The parameters of a flow whose C is `c_mbps` ([`Params::flow_c_mbps`]; 0, as in a
    /// state no `init` filled, as for an unknown link) and whose MSS is `mss_bytes` (see
    /// [`Params::for_mss`]). Valid if `self` is.
    pub fn for_flow(&self, c_mbps: u32, mss_bytes: u32) -> Params {
        let p = match self.max_rate_mbps {
            0 => {
                // Within the flow's C, as validate() asks of a set C: the step and the
                // initial rate.
                let c_mbps = self.flow_c_mbps(Some(c_mbps));
                Params {
                    max_rate_mbps: c_mbps,
                    delta_kbps: self.delta_kbps.min(c_mbps * 1000),
                    init_rate_mbps: self.init_rate_mbps.min(c_mbps),
                    ..*self
                }
            }
            _ => *self,
        };
        p.for_mss(mss_bytes)
    }

    /// The parameters of a flow of `variant`: those of the other variant's law off.
    pub fn for_variant(&self, variant: Variant) -> Params {
        match variant {
            Variant::Original => Params {
                patched_rtt_window_rtts: 0,
                ..*self
            },
            Variant::Patched => *self,
        }
    }

    /// C in Mbit/s: `max_rate_mbps`, or with 0 (each flow its own, see
    /// [`Params::for_flow`]) [`DEFAULT_LINK_MBPS`].
    pub fn c_mbps(&self) -> u32 {
        match self.max_rate_mbps {
            0 => DEFAULT_LINK_MBPS,
            c => c,
        }
    }

    /// Rate ceiling in bit/s: C.
    pub fn max_rate_bps(&self) -> u64 {
        u64::from(self.c_mbps()) * 1_000_000
    }

    /// Rate of a new flow in bit/s when `other_flows` flows of this controller are already
    /// active at this host: `init_rate_mbps` if set, else the fair share C / (N + 1) that
    /// "ECN or Delay" (section 4) proposes, C being `max_rate_mbps`; never below the floor.
    /// Starting every flow at C instead overflows the bottleneck when N flows start
    /// together: N line-rate bursts for the RTT or two before the first RTT gradient.
    pub fn init_rate_bps(&self, other_flows: u32) -> u64 {
        let rate = match self.init_rate_mbps {
            0 => self.max_rate_bps() / (u64::from(other_flows) + 1),
            r => u64::from(r) * 1_000_000,
        };
        rate.clamp(self.min_rate_bps(), self.max_rate_bps())
    }

    /// Reference RTT of the patched law.
    pub fn rtt_ref_us(&self) -> u32 {
        match self.rtt_ref_us {
            0 => self.t_low_us,
            r => r,
        }
    }

    /// RTT at or above which a loss is taken as the buffer's overflow.
    pub fn loss_rtt_us(&self) -> u32 {
        match self.loss_rtt_us {
            0 => self.t_high_us,
            r => r,
        }
    }

    /// Checks every parameter against its range ([`spec`]), narrowed where another
    /// parameter bounds it. On failure returns the first offending parameter's name, its
    /// value and its allowed range.
    pub fn validate(&self) -> Result<(), ParamError> {
        let p = self;
        spec::T_LOW_US.check(p.t_low_us)?;
        spec::T_HIGH_US.check_in(p.t_high_us, p.t_low_us + 1, MAX_RTT_US)?;
        spec::MIN_RTT_US.check(p.min_rtt_us)?;
        spec::BETA_PPM.check(p.beta_ppm)?;
        spec::ALPHA_PPM.check(p.alpha_ppm)?;
        spec::PATCHED_BETA_PPM.check(p.patched_beta_ppm)?;
        spec::RTT_REF_US.check(p.rtt_ref_us)?;
        spec::HAI_THRESHOLD.check(p.hai_threshold)?;
        spec::HAI_FACTOR.check(p.hai_factor)?;
        spec::MAX_RATE_MBPS.check(p.max_rate_mbps)?;
        // With C from each flow's link (0), a flow's C is raised to the floor if need be.
        let c_mbps = match p.max_rate_mbps {
            0 => MAX_RATE_MBPS,
            c => c,
        };
        let c_kbps = c_mbps.saturating_mul(1000);
        spec::MIN_RATE_KBPS.check_in(p.min_rate_kbps, 1, c_kbps)?;
        spec::DELTA_KBPS.check_in(p.delta_kbps, 1, c_kbps)?;
        spec::INIT_RATE_MBPS.check_in(p.init_rate_mbps, 0, c_mbps)?;
        spec::SEG_BYTES.check(p.seg_bytes)?;
        spec::LINE_RATE_MBPS.check(p.line_rate_mbps)?;
        spec::RTT_WINDOW_BYTES.check(p.rtt_window_bytes)?;
        spec::LOSS_RTT_US.check(p.loss_rtt_us)?;
        spec::UPDATE_SCALING.check(p.update_scaling)?;
        spec::T_HIGH_LAST_SAMPLE.check(p.t_high_last_sample)?;
        spec::PATCHED_RTT_WINDOW_RTTS.check(p.patched_rtt_window_rtts)?;
        Ok(())
    }
}

/// Per-flow controller state (40 bytes). All-zero is a valid (unstarted) state: in the
/// kernel it lives in the socket's zeroed congestion control area.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[cfg_attr(MODULE, derive(pin_init::Zeroable))]
pub struct Timely {
    /// Current target rate.
    pub rate_bps: u64,
    /// EWMA of RTT differences, nanoseconds.
    pub rtt_diff_ns: i64,
    /// Previous completion's RTT; 0 before the first completion.
    pub prev_rtt_us: u32,
    /// Last completion's RTT.
    pub last_rtt_us: u32,
    /// Last normalised gradient.
    pub gradient_ppm: i32,
    /// This flow's C ([`Params::flow_c_mbps`]), for [`Params::for_flow`]: with
    /// `max_rate_mbps` 0, the link speed of the flow's device when it started.
    pub c_mbps: u32,
    /// The kernel module's: the sender-count epoch ([`sender_epoch`]) this flow last counted
    /// itself in, plus one (0: never). Here, not in the module's state, for room: with
    /// `ecn_share` that state holds an [`EcnShare`](super::ecn_share::EcnShare) too.
    pub counted_epoch: u32,
    /// Consecutive completions with a negative gradient (saturating: only compared with
    /// `hai_threshold`, at most 1000).
    pub neg_gradients: u16,
    /// What the last update did.
    pub mode: u8,
    /// The kernel module's: in TCP's CWR state, not yet halved for it ([`Timely::on_ce`]).
    pub ce_armed: bool,
}

// The socket's private area holds it beside the segmenter and the module's state.
const _: () = assert!(core::mem::size_of::<Timely>() == 40);

impl Timely {
    /// A controller starting at `initial_rate_bps` (clamped into the parameters' range),
    /// with the C of `p` (a flow's parameters, [`Params::for_flow`]).
    pub fn new(p: &Params, initial_rate_bps: u64) -> Timely {
        Timely {
            rate_bps: initial_rate_bps.clamp(p.min_rate_bps(), p.max_rate_bps()),
            mode: Mode::Start as u8,
            c_mbps: p.c_mbps(),
            ..Timely::default()
        }
    }

    /// Forgets the RTT history (the previous RTT, the smoothed difference and the HAI
    /// count), keeping the rate: the next completion only sets the previous RTT. For a
    /// change in what the RTT measures (its source).
    pub fn restart_gradient(&mut self) {
        self.prev_rtt_us = 0;
        self.rtt_diff_ns = 0;
        self.neg_gradients = 0;
    }

    /// One completion with RTT `rtt_us` (already net of the segment's serialization time).
    /// `app_limited`: the application did not keep up with the rate, so no increase.
    pub fn on_completion(&mut self, p: &Params, variant: Variant, rtt_us: u32, app_limited: bool) {
        self.on_completion_after(p, variant, rtt_us, app_limited, u64::MAX);
    }

    /// [`Timely::on_completion`] for a completion that took `interval_us`: with
    /// `update_scaling`, the change of rate is scaled by min(1, interval / `min_rtt_us`),
    /// both ways, so that completions shorter than the minimum RTT together move the rate
    /// as one per minimum RTT would. The fixed point stays where it was.
    pub fn on_completion_after(
        &mut self,
        p: &Params,
        variant: Variant,
        rtt_us: u32,
        app_limited: bool,
        interval_us: u64,
    ) {
        self.update(p, variant, rtt_us, rtt_us, app_limited, interval_us);
    }

    /// A completed segment through the law ([`Timely::on_completion_after`] with the
    /// segment's duration): `T_high` is tested on its last sample with
    /// `t_high_last_sample`, on its RTT otherwise; the rest of the law always takes its
    /// RTT.
    pub fn on_segment(&mut self, p: &Params, variant: Variant, c: &Completion, app_limited: bool) {
        let high_rtt_us = match p.t_high_last_sample {
            0 => c.rtt_us,
            _ => c.last_rtt_us,
        };
        self.update(
            p,
            variant,
            c.rtt_us,
            high_rtt_us,
            app_limited,
            c.interval_us,
        );
    }

    fn update(
        &mut self,
        p: &Params,
        variant: Variant,
        rtt_us: u32,
        high_rtt_us: u32,
        app_limited: bool,
        interval_us: u64,
    ) {
        let rtt_us = rtt_us.clamp(1, MAX_RTT_US);
        let high_rtt_us = high_rtt_us.clamp(1, MAX_RTT_US);
        self.last_rtt_us = rtt_us;
        if self.prev_rtt_us == 0 {
            self.prev_rtt_us = rtt_us;
            return;
        }
        let new_diff_ns = (i64::from(rtt_us) - i64::from(self.prev_rtt_us)) * 1000;
        self.prev_rtt_us = rtt_us;
        let alpha = i64::from(p.alpha_ppm);
        // |rtt_diff_ns| <= MAX_RTT_US * 1000 = 1e10, times PPM stays below 2^63.
        self.rtt_diff_ns =
            ((PPM as i64 - alpha) * self.rtt_diff_ns + alpha * new_diff_ns) / PPM as i64;
        // gradient = rtt_diff / min_rtt, in ppm: rtt_diff_ns * 1000 / min_rtt_us.
        let gradient_ppm = (self.rtt_diff_ns * 1000 / i64::from(p.min_rtt_us.max(1)))
            .clamp(i64::from(i32::MIN), i64::from(i32::MAX));
        self.gradient_ppm = gradient_ppm as i32;

        let rate = self.rate_bps;
        let (new_rate, mode) = if rtt_us < p.t_low_us {
            self.neg_gradients = 0;
            (rate.saturating_add(p.delta_bps()), Mode::LowRtt)
        } else if high_rtt_us > p.t_high_us {
            self.neg_gradients = 0;
            // beta * (1 - T_high / rtt), in ppm.
            let excess_ppm = PPM - mul_div(PPM, p.t_high_us.into(), high_rtt_us.into());
            let cut_ppm = mul_div(p.beta_ppm.into(), excess_ppm, PPM);
            (decrease(rate, cut_ppm), Mode::HighRtt)
        } else {
            match variant {
                Variant::Original => self.gradient_zone_original(p, rate, gradient_ppm),
                Variant::Patched => (patched_rate(p, rate, gradient_ppm, rtt_us), Mode::Weighted),
            }
        };
        let new_rate = if p.update_scaling == 0 || interval_us >= u64::from(p.min_rtt_us) {
            new_rate
        } else {
            let scale_ppm = mul_div(interval_us, PPM, u64::from(p.min_rtt_us.max(1)));
            if new_rate >= rate {
                rate + mul_div(new_rate - rate, scale_ppm, PPM)
            } else {
                rate - mul_div(rate - new_rate, scale_ppm, PPM)
            }
        };
        let new_rate = if app_limited && new_rate > rate {
            rate
        } else {
            new_rate
        };
        self.rate_bps = new_rate.clamp(p.min_rate_bps(), p.max_rate_bps());
        self.mode = mode as u8;
    }

    fn gradient_zone_original(&mut self, p: &Params, rate: u64, gradient_ppm: i64) -> (u64, Mode) {
        if gradient_ppm <= 0 {
            // HAI after `hai_threshold` negative gradients in a row ([T] Algorithm 1).
            self.neg_gradients = if gradient_ppm < 0 {
                self.neg_gradients.saturating_add(1)
            } else {
                0
            };
            if u32::from(self.neg_gradients) >= p.hai_threshold {
                let step = p.delta_bps().saturating_mul(p.hai_factor.into());
                (rate.saturating_add(step), Mode::Hai)
            } else {
                (rate.saturating_add(p.delta_bps()), Mode::Increase)
            }
        } else {
            self.neg_gradients = 0;
            let cut_ppm = mul_div(p.beta_ppm.into(), gradient_ppm as u64, PPM);
            (decrease(rate, cut_ppm), Mode::Decrease)
        }
    }

    /// A loss episode began (fast recovery or timeout). Both papers assume a lossless
    /// network. A loss while the last RTT showed a high queue (at or above `loss_rtt_us`,
    /// `T_high` by default, or before any sample) is taken as a buffer overflow: halve the
    /// rate, once per episode, so the flow does not overflow the buffer again at once. A
    /// loss below it is not taken as congestion (corruption, a policer elsewhere, or a
    /// burst's overflow while the delay law holds the queue below `T_high`): the delay
    /// signal already steers the rate. Gated at `T_low` instead, every random loss halved
    /// patched TIMELY, whose fixed point lies above `T_low`, to 45-51% of a link it
    /// otherwise filled to 56% (bench `random_loss` against `random_loss_gate`); on a
    /// buffer shallower than `T_high` set `loss_rtt_us` to the buffer's drain time.
    /// The last RTT is the completion's (the window's minimum) even with
    /// `t_high_last_sample`: the state has no room for the last sample too.
    pub fn on_loss(&mut self, p: &Params) {
        if self.last_rtt_us != 0 && self.last_rtt_us < p.loss_rtt_us() {
            return;
        }
        self.halve(p, Mode::Loss);
    }

    /// The peer echoed a congestion mark (ECN CE), once per window (TCP's CWR episode):
    /// a queue above a switch's marking threshold, whatever the RTT says. Answered as
    /// RFC 3168 asks, as a loss would be: the rate is halved. A controller that negotiated
    /// ECN and ignored the marks would hold the queue above the threshold and starve the
    /// flows that answer them (dctcp).
    pub fn on_ce(&mut self, p: &Params) {
        self.halve(p, Mode::Ce);
    }

    /// Completions that lost at least one packet in [`HEAVY_LOSS_DIVISOR`] (see
    /// [`LossWindow`]): congestion at any RTT, halved once per window. A queue an AQM
    /// holds below `T_high` by dropping (a switch that drops packets that are not
    /// ECN-capable above its marking threshold) never lets the RTT reach the loss gate, and
    /// a flow that ignored those drops would take the link from the flows that answer them.
    pub fn on_heavy_loss(&mut self, p: &Params) {
        self.halve(p, Mode::Loss);
    }

    /// TCP's congestion state changed; `cwr`: to CWR, which lasts until the data in flight
    /// when it began is acknowledged, one window. Arms [`Timely::on_ecn_ack`]'s halving.
    pub fn on_ca_state(&mut self, cwr: bool) {
        self.ce_armed = cwr;
    }

    /// An ACK's ECN step; whether it changed the rate.
    ///
    /// `share` `None` (`ecn_share` 0, the default): the RFC 3168 answer, as before
    /// `ecn_share`: the first ACK that echoes a mark in a CWR episode halves the rate
    /// ([`Timely::on_ce`]): `tcp_enter_cwr()` on this ACK's echo, or a mark echoed later in
    /// a CWR the stack entered for another reason (a local qdisc's push-back, a loss a
    /// tail-loss probe repaired), which alone does not cut.
    ///
    /// `share` `Some` (`ecn_share` 1): DCTCP's answer, whatever TCP's state: a window with
    /// marks cuts the rate by `alpha / 2` when it ends ([`Timely::on_ecn_share`]).
    pub fn on_ecn_ack(
        &mut self,
        p: &Params,
        share: Option<&mut super::ecn_share::EcnShare>,
        a: &super::ecn_share::EcnAck,
    ) -> bool {
        match share {
            None if self.ce_armed && a.ece && a.in_cwr => {
                self.ce_armed = false;
                self.on_ce(p);
                true
            }
            None => false,
            Some(share) => match share.cut_on(a) {
                Some(alpha) => {
                    self.on_ecn_share(p, alpha);
                    true
                }
                None => false,
            },
        }
    }

    /// With `ecn_share` 1, instead of [`Timely::on_ce`]: a window whose packets the peer
    /// echoed marks for ended, and `alpha` is the marked fraction's moving average
    /// ([`EcnShare`](super::ecn_share::EcnShare)): the rate is cut by `alpha / 2`, as DCTCP
    /// cuts its window, within the rate's bounds.
    pub fn on_ecn_share(&mut self, p: &Params, alpha: u32) {
        let rate = super::ecn_share::keep(self.rate_bps, alpha);
        self.rate_bps = rate.clamp(p.min_rate_bps(), p.max_rate_bps());
        self.neg_gradients = 0;
        self.mode = Mode::EcnShare as u8;
    }

    fn halve(&mut self, p: &Params, mode: Mode) {
        self.rate_bps =
            decrease(self.rate_bps, MAX_CUT_PPM).clamp(p.min_rate_bps(), p.max_rate_bps());
        self.neg_gradients = 0;
        self.mode = mode as u8;
    }
}

/// Packets lost in this many (25%) were lost to congestion, whatever the RTT: random loss
/// of 1% loses three of [`HEAVY_LOSS_MIN_PKTS`] in 0.02% of windows (two in 0.6%, too
/// often to halve for).
pub const HEAVY_LOSS_DIVISOR: u32 = 4;
/// The fewest packets the heavy-loss test looks at: a 16 KB segment of 1448-byte packets,
/// one segment; of jumbo frames (two packets per segment), six. Over a single two-packet
/// segment any loss would be heavy, and random loss of 1% held patched TIMELY to a
/// quarter of a 10 Gbit/s link (bench `random_loss_10g`).
pub const HEAVY_LOSS_MIN_PKTS: u32 = 12;

/// The packets lost over the last completions, for the heavy-loss test: a window of whole
/// segments spanning at least [`HEAVY_LOSS_MIN_PKTS`] packets (2 bytes, saturating).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[cfg_attr(MODULE, derive(pin_init::Zeroable))]
pub struct LossWindow {
    /// Packets TCP marked lost since the window began.
    pub lost_pkts: u8,
    /// Packets of the window's completed segments (`seg_bytes` / MSS, rounded up, each).
    pub seg_pkts: u8,
}

impl LossWindow {
    /// TCP marked `lost_pkts` packets lost.
    pub fn on_loss(&mut self, lost_pkts: u32) {
        let lost = u8::try_from(lost_pkts).unwrap_or(u8::MAX);
        self.lost_pkts = self.lost_pkts.saturating_add(lost);
    }

    /// A segment of `seg_bytes` completed, of packets of `mss_bytes`: whether the window
    /// it closes lost at least one packet in [`HEAVY_LOSS_DIVISOR`]. A window short of
    /// [`HEAVY_LOSS_MIN_PKTS`] stays open.
    pub fn on_completion(&mut self, seg_bytes: u32, mss_bytes: u32) -> bool {
        let seg_pkts = seg_bytes.div_ceil(mss_bytes.max(1)).max(1);
        let pkts = u32::from(self.seg_pkts).saturating_add(seg_pkts);
        if pkts < HEAVY_LOSS_MIN_PKTS {
            // Below 12: fits.
            self.seg_pkts = pkts as u8;
            return false;
        }
        let lost = u32::from(core::mem::take(self).lost_pkts);
        lost > 0 && lost * HEAVY_LOSS_DIVISOR >= pkts
    }
}

/// `rate * (1 - cut)`, never below half of `rate`.
fn decrease(rate_bps: u64, cut_ppm: u64) -> u64 {
    let keep_ppm = PPM.saturating_sub(cut_ppm).max(PPM - MAX_CUT_PPM);
    mul_div(rate_bps, keep_ppm, PPM)
}

/// Patched TIMELY's weight: 0 at gradient <= -1/4, 1 at >= 1/4, linear between.
pub fn patched_weight_ppm(gradient_ppm: i64) -> u64 {
    (2 * gradient_ppm + PPM as i64 / 2).clamp(0, PPM as i64) as u64
}

fn patched_rate(p: &Params, rate: u64, gradient_ppm: i64, rtt_us: u32) -> u64 {
    let w = patched_weight_ppm(gradient_ppm);
    let rtt_ref = i64::from(p.rtt_ref_us().max(1));
    // error = (rtt - rtt_ref) / rtt_ref, in ppm; |error| < MAX_RTT_US * PPM.
    // Bounded so that the products below stay within 64 bits; beyond 10^6 the cut is
    // maximal anyway.
    let error_ppm =
        ((i64::from(rtt_us) - rtt_ref) * PPM as i64 / rtt_ref).min(PPM as i64 * PPM as i64);
    let increase = mul_div(p.delta_bps(), PPM - w, PPM);
    // beta * w * |error|, in ppm of the rate.
    let bw_ppm = mul_div(p.patched_beta_ppm.into(), w, PPM);
    let change_ppm = mul_div(bw_ppm, error_ppm.unsigned_abs(), PPM);
    let kept = if error_ppm >= 0 {
        decrease(rate, change_ppm)
    } else {
        rate.saturating_add(mul_div(rate, change_ppm, PPM))
    };
    kept.saturating_add(increase)
}

/// Smallest in-flight cap, so a flow at the rate floor still gets ACKs back promptly
/// (the receiver ACKs every second segment).
pub const MIN_CWND_PKTS: u32 = 4;

/// In-flight cap for a paced flow: what the rate delivers in `T_high + min_rtt`, the largest
/// RTT the controller tolerates before cutting hard; the rate, not this cap, is the control.
pub fn cwnd_cap_pkts(p: &Params, rate_bps: u64, mss_bytes: u32) -> u32 {
    let window_us = u64::from(p.t_high_us) + u64::from(p.min_rtt_us);
    let bytes = mul_div(rate_bps / 8, window_us, 1_000_000);
    let pkts = bytes / u64::from(mss_bytes.max(1));
    pkts.clamp(u64::from(MIN_CWND_PKTS), u64::from(u32::MAX >> 1)) as u32
}

/// Pacing rate in bytes per second for a rate in bits per second.
pub fn pacing_bytes_per_sec(rate_bps: u64) -> u64 {
    rate_bps / 8
}

/// One completed segment.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Completion {
    /// RTT of the segment (with the paper's rule and `line_rate_mbps`, net of its
    /// serialization time at the line rate).
    pub rtt_us: u32,
    /// The segment's last sample, the paper's instantaneous RTT (with the paper's rule,
    /// `rtt_us`): what `T_high` is tested on with `t_high_last_sample`.
    pub last_rtt_us: u32,
    /// Rate at which the segment was delivered.
    pub delivered_bps: u64,
    /// Time the segment took, from the previous completion (us, at least 1).
    pub interval_us: u64,
    /// The RTT comes from another source than the previous completion's: a gradient
    /// across the two would measure the change of source, not of the queue.
    pub new_source: bool,
}

/// Segments whose minimum RTTs are kept: the largest TSO burst (64 KB) in 16 KB segments.
pub const RTT_WINDOW_SEGS: usize = 4;

/// How long the best source may stay silent before a worse one is taken instead, in
/// units of `t_high_us` (any RTT TIMELY can live with is below it).
pub const SOURCE_SILENCE_T_HIGHS: u32 = 4;

/// Turns the stream of ACKs into completions of `seg_bytes` each (48 bytes), from the best
/// source of RTT samples the connection has.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[cfg_attr(MODULE, derive(pin_init::Zeroable))]
pub struct Segmenter {
    /// Bytes ACKed in the current segment.
    pub acked_bytes: u32,
    /// Latest RTT sample taken in the current segment; 0 if none yet.
    pub last_rtt_us: u32,
    /// When the current segment began.
    pub start_us: u64,
    /// When the last ACK arrived.
    pub last_ack_us: u64,
    /// Ring of per-segment RTTs (0: empty slot): slot `recent_next` holds the current
    /// segment's smallest (or, with `rtt_window_bytes` 0, latest) sample, the others the
    /// minima of the segments before it. Keeping the current one in the ring leaves room
    /// for `last_rtt_us` in the socket's private area.
    pub recent_min_us: [u32; RTT_WINDOW_SEGS],
    /// Low 32 bits of the time (us) a sample of `source` was last taken.
    pub source_seen_us: u32,
    /// Slot of `recent_min_us` the current segment fills; always below the window's slots,
    /// which the parameters (fixed while a flow lives) set.
    pub recent_next: u8,
    /// [`SampleSource::code`] of the samples taken; 0 before the first.
    pub source: u8,
    /// `source` changed since the last completion.
    pub source_changed: bool,
}

// The socket's private area holds it beside the controller and the module's state.
const _: () = assert!(core::mem::size_of::<Segmenter>() == 48);

impl Segmenter {
    /// Starts a new segment at `now_us` (at init, and after idle periods, so that the
    /// delivery rate does not span the gap). The source of samples is kept.
    pub fn restart(&mut self, now_us: u64) {
        *self = Segmenter {
            start_us: now_us,
            last_ack_us: now_us,
            source_seen_us: self.source_seen_us,
            source: self.source,
            source_changed: self.source_changed,
            ..Segmenter::default()
        };
    }

    /// Transmission starts with nothing in flight. A paced flow drains its pipe between
    /// bursts all the time, and a slow one between every two bursts; only a real idle
    /// period (no ACK for longer than `t_high_us` plus the time the largest burst, 64 KB,
    /// takes at `rate_bps`) starts a new segment. Without the burst time, a flow whose
    /// bursts are further apart than `t_high_us` would restart at every burst, never
    /// complete a segment, and its rate would never change again.
    /// Returns whether it was an idle period (the segment started over): the caller then
    /// forgets the RTT history too ([`Timely::restart_gradient`]).
    pub fn on_tx_start(&mut self, p: &Params, now_us: u64, rate_bps: u64) -> bool {
        let burst_us = mul_div(u64::from(MAX_SEG_BYTES) * 8, 1_000_000, rate_bps.max(1));
        let idle_after_us = u64::from(p.t_high_us).saturating_add(burst_us);
        let idle = now_us.saturating_sub(self.last_ack_us) > idle_after_us;
        if idle {
            self.restart(now_us);
        }
        idle
    }

    /// An RTT sample from `source`, taken unless a better source has given one within the
    /// last [`SOURCE_SILENCE_T_HIGHS`] `T_high`: the delay-stamp option's network RTT when
    /// the connection has it, the kernel's RTT when it has not (the peer refused the
    /// option, or a middlebox strips it). Hardware and software stamps are both network
    /// RTTs on one clock each, but their noise differs; the kernel's RTT is larger by the
    /// receiver's hold. A change of source starts the minimum over afresh, and the next
    /// completion says so ([`Completion::new_source`]). Returns whether it was taken.
    pub fn offer(&mut self, p: &Params, now_us: u64, rtt_us: u32, source: SampleSource) -> bool {
        let now = now_us as u32;
        let silence_us = p.t_high_us.saturating_mul(SOURCE_SILENCE_T_HIGHS);
        let silent = now.wrapping_sub(self.source_seen_us) > silence_us;
        let src = source.code();
        if self.source != 0 && src > self.source && !silent {
            return false;
        }
        if src != self.source {
            if self.source != 0 {
                self.source_changed = true;
            }
            self.source = src;
            self.recent_min_us = [0; RTT_WINDOW_SEGS];
        }
        self.source_seen_us = now;
        let rtt = rtt_us.clamp(1, MAX_RTT_US);
        let current = self.rtt_us();
        self.recent_min_us[self.current_slot()] = if current == 0 || p.rtt_window_bytes == 0 {
            rtt
        } else {
            current.min(rtt)
        };
        self.last_rtt_us = rtt;
        true
    }

    /// The current segment's smallest (or, with `rtt_window_bytes` 0, latest) RTT sample;
    /// 0 if none yet.
    pub fn rtt_us(&self) -> u32 {
        self.recent_min_us[self.current_slot()]
    }

    fn current_slot(&self) -> usize {
        usize::from(self.recent_next) % RTT_WINDOW_SEGS
    }

    /// The source of the samples taken, if any.
    pub fn source(&self) -> Option<SampleSource> {
        SampleSource::from_code(self.source)
    }

    /// An ACK for `acked_bytes`, with the kernel's RTT sample of it, if any (the kernel has
    /// none for retransmitted data); the delay-stamp option's sample of the same ACK, if
    /// any, came first through [`Segmenter::offer`]. Returns the completion when the
    /// segment is full and has an RTT sample.
    ///
    /// The completion's RTT is, by default, the smallest sample of the last 64 KB of ACKs
    /// (the last `64 KB / seg_bytes` segments, at least this one; `rtt_window_bytes`).
    /// TIMELY timestamps one NIC-generated ACK per segment, and subtracts the segment's own
    /// serialization; Linux gives a sample per ACK, and sends TSO bursts of up to 64 KB
    /// back to back, so the samples of one burst climb by its own serialization at the
    /// bottleneck (hundreds of microseconds at 1 Gbit/s), and some include the receiver's
    /// delayed-ACK wait or a scheduling hiccup. The minimum over a window as large as the
    /// largest burst is the RTT of a burst's first packet: it drops self-queueing and those
    /// outliers, and still rises with a standing queue at the bottleneck, which delays
    /// every packet. With `rtt_window_bytes` 0 it is the segment's last sample instead,
    /// the paper's rule.
    pub fn on_ack(
        &mut self,
        p: &Params,
        now_us: u64,
        acked_bytes: u32,
        kernel_rtt_us: Option<u32>,
    ) -> Option<Completion> {
        if let Some(rtt) = kernel_rtt_us {
            self.offer(p, now_us, rtt, SampleSource::KernelRtt);
        }
        self.last_ack_us = now_us;
        self.acked_bytes = self.acked_bytes.saturating_add(acked_bytes);
        let segment_rtt_us = self.rtt_us();
        if self.acked_bytes < p.seg_bytes || segment_rtt_us == 0 {
            return None;
        }
        let elapsed_us = now_us.saturating_sub(self.start_us).max(1);
        let delivered_bps = mul_div(u64::from(self.acked_bytes) * 8, 1_000_000, elapsed_us);
        // The last sample of a segment (the paper's rule) is its last packet's, which
        // waited for the whole segment's serialization; the window's minimum is a burst
        // head's, which did not. bits / (Mbit/s) = microseconds.
        let serialization_us = match (p.line_rate_mbps, p.rtt_window_bytes) {
            (0, _) | (_, 1..) => 0,
            (line, 0) => p.seg_bytes.saturating_mul(8) / line,
        };
        // Slots of the ring in the window: one with the paper's rule (the segment's last
        // sample), else the window in whole segments.
        let slots = match p.rtt_window_bytes {
            0 => 1,
            window => window
                .div_ceil(p.seg_bytes.max(1))
                .clamp(1, RTT_WINDOW_SEGS as u32) as usize,
        };
        debug_assert!(usize::from(self.recent_next) < slots, "parameters changed");
        // With `patched_rtt_window_rtts`, no more segments than this one's duration allows.
        let segs = match p.patched_rtt_window_rtts {
            0 => slots,
            rtts => {
                let span_us = u64::from(rtts) * u64::from(segment_rtt_us);
                (span_us / elapsed_us).clamp(1, slots as u64) as usize
            }
        };
        // Burst-head RTT: the minimum over the window's last `segs` segments, the current
        // one included.
        let current = self.current_slot();
        let window_min_us = (0..segs)
            .map(|back| self.recent_min_us[(current + slots - back) % slots])
            .filter(|&r| r != 0)
            .min()
            .unwrap_or(segment_rtt_us);
        let rtt_us = window_min_us.saturating_sub(serialization_us).max(1);
        // With the paper's rule the segment's RTT is this same last sample.
        let last_rtt_us = self.last_rtt_us.saturating_sub(serialization_us).max(1);
        let new_source = self.source_changed;
        self.source_changed = false;
        self.acked_bytes = 0;
        self.last_rtt_us = 0;
        self.start_us = now_us;
        // The next segment takes the oldest slot, whose segment has left the window.
        self.recent_next = ((self.current_slot() + 1) % slots) as u8;
        let next = self.current_slot();
        self.recent_min_us[next] = 0;
        Some(Completion {
            rtt_us,
            last_rtt_us,
            delivered_bps,
            interval_us: elapsed_us,
            new_source,
        })
    }
}

/// The RTT sample of an ACK, if TIMELY should use it. `maybe_delayed` is the stack's flag
/// (`FLAG_ACK_MAYBE_DELAYED`) for the ACK of a lone runt, less than one MSS in flight,
/// which the receiver may have held for its delayed-ACK timer. TIMELY's NIC-generated
/// ACKs are never held, so such a sample is skipped. No RTT threshold tells the wait
/// apart: the timer can fire after a few milliseconds (jiffy rounding, a lowered
/// `rto_min` caps it). Runts are rare in a bulk flow, and a slow flow's full-size packets
/// are never flagged, so skipping them costs no flow its samples.
pub fn usable_rtt_us(rtt_us: Option<u32>, maybe_delayed: bool) -> Option<u32> {
    rtt_us.filter(|_| !maybe_delayed)
}

/// TIMELY's application-limited rule: only increase when the flow delivered more than
/// 80% of its target rate.
pub fn is_app_limited(delivered_bps: u64, rate_bps: u64) -> bool {
    delivered_bps.saturating_mul(5) < rate_bps.saturating_mul(4)
}

/// The fair-share start counts the flows that sent recently from the new flow's network
/// namespace through its output device ("ECN or Delay", section 4, counts the flows sharing
/// the bottleneck; flows elsewhere, or idle ones, do not). A flow counts itself once per
/// epoch in which it had data ACKed, in a word per epoch parity of its (namespace, device)
/// slot: the epoch in the top [`SENDER_EPOCH_BITS`], the count below. A new flow's N is the
/// larger of the current and the previous epoch's counts, so a flow is counted within
/// [`SENDER_EPOCH_US`] of its last ACK and forgotten at most two epochs later. A TIMELY
/// flow is ACKed at least every 20 ms ([`MAX_PACKET_GAP_US`]), within one epoch.
pub const SENDER_EPOCH_US: u64 = 32_768;
/// Bits of the epoch in a slot word; the epoch wraps after 2^20 epochs (9.5 hours).
pub const SENDER_EPOCH_BITS: u32 = 20;
const SENDER_COUNT_BITS: u32 = 32 - SENDER_EPOCH_BITS;
const SENDER_COUNT_MAX: u32 = (1 << SENDER_COUNT_BITS) - 1;
const SENDER_EPOCH_MASK: u32 = (1 << SENDER_EPOCH_BITS) - 1;

/// The sender-count epoch of a time (us).
pub fn sender_epoch(now_us: u64) -> u32 {
    (now_us / SENDER_EPOCH_US) as u32 & SENDER_EPOCH_MASK
}

/// A slot word after one more flow counted itself in `epoch` (a word of an older epoch
/// starts again at 1; the count saturates).
pub fn sender_word_add(word: u32, epoch: u32) -> u32 {
    if word >> SENDER_COUNT_BITS != epoch {
        return (epoch << SENDER_COUNT_BITS) | 1;
    }
    if word & SENDER_COUNT_MAX == SENDER_COUNT_MAX {
        word
    } else {
        word + 1
    }
}

/// Recent senders of a slot at `epoch`, from its two words (indexed by epoch parity).
pub fn recent_senders(words: [u32; 2], epoch: u32) -> u32 {
    let count_in = |e: u32| {
        let w = words[(e & 1) as usize];
        if w >> SENDER_COUNT_BITS == e {
            w & SENDER_COUNT_MAX
        } else {
            0
        }
    };
    count_in(epoch).max(count_in(epoch.wrapping_sub(1) & SENDER_EPOCH_MASK))
}

/// The slot key of a (namespace, output device) pair; never 0, which marks a free slot.
pub fn sender_key(netns_cookie: u64, ifindex: u32) -> u64 {
    (netns_cookie.wrapping_mul(0x9e37_79b9_7f4a_7c15)
        ^ u64::from(ifindex).wrapping_mul(0xc2b2_ae3d_27d4_eb4f))
        | 1
}

#[cfg(test)]
mod tests {
    extern crate std;
    use super::*;
    use crate::testing::Rng;
    use std::string::ToString;
    use std::vec::Vec;

    const P: Params = Params::PAPER;

    /// Random ECN events: CWR entered and left, ACKs with and without an echo, in CWR or
    /// not, with and without newly marked packets.
    fn ecn_events(rng: &mut Rng, n: usize) -> Vec<Option<crate::ecn_share::EcnAck>> {
        let (mut delivered, mut ce) = (rng.next_u64() as u32, rng.next_u64() as u32);
        let mut in_cwr = false;
        (0..n)
            .map(|_| {
                if rng.range(0, 4) == 0 {
                    in_cwr = !in_cwr;
                    return None;
                }
                let acked = rng.range(0, 20) as u32;
                let marked = if rng.range(0, 1) == 0 {
                    0
                } else {
                    rng.range(0, acked.into()) as u32
                };
                delivered = delivered.wrapping_add(acked);
                ce = ce.wrapping_add(marked);
                Some(crate::ecn_share::EcnAck {
                    ece: marked > 0 || rng.range(0, 5) == 0,
                    in_cwr,
                    delivered_pkts: delivered,
                    delivered_ce_pkts: ce,
                    in_flight_pkts: rng.range(0, 40) as u32,
                })
            })
            .collect()
    }

    /// `ecn_share` 0: on any sequence with marks, the rate, mode and state are those of the
    /// code before `ecn_share` (the module's: halve on the first echo of a CWR episode).
    #[test]
    fn ecn_share_off_answers_marks_as_before() {
        let mut rng = Rng::new(0xece0);
        let mut differed = false;
        for _ in 0..500 {
            let start = rng.range(P.min_rate_bps(), P.max_rate_bps());
            let mut t = Timely::new(&P, start);
            let mut before = t;
            let mut shared = t;
            let mut share = crate::ecn_share::EcnShare::new(0, 0);
            let mut armed = false;
            for e in ecn_events(&mut rng, 200) {
                match e {
                    None => {
                        let cwr = !armed && rng.range(0, 1) == 0;
                        t.on_ca_state(cwr);
                        shared.on_ca_state(cwr);
                        armed = cwr;
                    }
                    Some(a) => {
                        t.on_ecn_ack(&P, None, &a);
                        shared.on_ecn_ack(&P, Some(&mut share), &a);
                        // The module's code before ecn_share.
                        if armed && a.ece && a.in_cwr {
                            armed = false;
                            before.on_ce(&P);
                        }
                    }
                }
                before.ce_armed = armed;
                assert_eq!(t, before);
                differed |= shared.rate_bps != t.rate_bps;
            }
        }
        assert!(differed);
    }

    /// `ecn_share` 1: the rate is cut by `alpha / 2` once per window that saw marks, never
    /// otherwise; CWR and echoes alone do nothing.
    #[test]
    fn ecn_share_on_cuts_by_half_alpha_once_per_marked_window() {
        use crate::ecn_share::{EcnAck, EcnShare};
        let mut t = Timely::new(&P, 4_000_000_000);
        let mut share = EcnShare::new(1000, 0);
        let ack = |delivered, ce, in_cwr| EcnAck {
            ece: true,
            in_cwr,
            delivered_pkts: delivered,
            delivered_ce_pkts: ce,
            in_flight_pkts: 10,
        };
        t.on_ca_state(true);
        // Inside the window: nothing, echo and CWR or not.
        assert!(!t.on_ecn_ack(&P, Some(&mut share), &ack(1005, 5, true)));
        assert_eq!(t.rate_bps, 4_000_000_000);
        // The window ends with 5 of 10 marked: alpha 1024 - 64 + 32 = 992, cut by 992/2048.
        assert!(t.on_ecn_ack(&P, Some(&mut share), &ack(1010, 5, true)));
        assert_eq!(t.rate_bps, 4_000_000_000 - 4_000_000_000 * 992 / 2048);
        assert_eq!(t.mode, Mode::EcnShare as u8);
        // A window without marks (echoes still set): alpha decays, no cut.
        let r = t.rate_bps;
        assert!(!t.on_ecn_ack(&P, Some(&mut share), &ack(1020, 5, false)));
        assert_eq!((t.rate_bps, share.alpha()), (r, 930));
        // One mark in the next window: cut by alpha / 2 (alpha 930 - 58 + 6 = 878).
        assert!(t.on_ecn_ack(&P, Some(&mut share), &ack(1030, 6, false)));
        assert_eq!(share.alpha(), 878);
        assert_eq!(t.rate_bps, crate::ecn_share::keep(r, 878));
        // Never below the floor.
        for i in 0..2000u32 {
            t.on_ecn_ack(
                &P,
                Some(&mut share),
                &ack(1040 + 10 * i, 16 + 10 * i, false),
            );
        }
        assert_eq!(t.rate_bps, P.min_rate_bps());
    }

    #[test]
    fn the_defaults_are_valid_and_each_in_its_range() {
        crate::param::assert_consistent(&spec::ALL);
        assert_eq!(Params::DEFAULT.validate(), Ok(()));
        assert_eq!(Params::PAPER.validate(), Ok(()));
    }

    #[test]
    fn a_range_another_parameter_bounds_is_reported_narrowed() {
        let e = Params {
            t_low_us: 600,
            ..Params::DEFAULT
        };
        assert_eq!(
            e.validate().unwrap_err().to_string(),
            "t_high_us=500: out of range [601, 10000000]"
        );
        let e = Params {
            max_rate_mbps: 1000,
            delta_kbps: 1_000_001,
            ..Params::DEFAULT
        };
        assert_eq!(
            e.validate().unwrap_err().to_string(),
            "delta_kbps=1000001: out of range [1, 1000000]"
        );
    }

    fn warmed(variant: Variant, rate: u64, rtt: u32) -> Timely {
        let mut t = Timely::new(&P, rate);
        t.on_completion(&P, variant, rtt, false);
        t
    }

    #[test]
    fn paper_params_are_valid() {
        assert_eq!(P.validate(), Ok(()));
    }

    #[test]
    fn rate_floor_keeps_packets_within_the_delayed_ack_timeout() {
        let low = Params {
            min_rate_kbps: 100,
            max_rate_mbps: 100,
            ..P
        };
        let p = low.for_mss(1448);
        assert_eq!(p.min_rate_kbps, 580);
        assert_eq!(p.validate(), Ok(()));
        // A gap of one MSS at the floor is within the limit.
        assert!(1448 * 8 * 1_000_000 / p.min_rate_bps() <= MAX_PACKET_GAP_US);
        // A higher configured floor is kept; the cap is never exceeded.
        assert_eq!(P.for_mss(1448).min_rate_kbps, P.min_rate_kbps);
        let tiny_cap = Params {
            min_rate_kbps: 1,
            max_rate_mbps: 1,
            delta_kbps: 1,
            ..P
        };
        assert_eq!(tiny_cap.for_mss(65_535).min_rate_kbps, 1000);
        assert_eq!(tiny_cap.for_mss(65_535).validate(), Ok(()));
        // Delayed-ACK-sized RTTs push the rate down to the floor, not below it.
        let mut t = Timely::new(&p, p.max_rate_bps());
        for i in 0..200 {
            t.on_completion(&p, Variant::Original, 40_000 + (i % 7) * 300, false);
            assert!(t.rate_bps >= 580_000);
        }
    }

    #[test]
    fn invalid_params_name_the_parameter() {
        let bad = Params { t_high_us: 50, ..P };
        assert_eq!(bad.validate().unwrap_err().name, "t_high_us");
        let bad = Params { beta_ppm: 0, ..P };
        assert_eq!(bad.validate().unwrap_err().name, "beta_ppm");
        let bad = Params {
            beta_ppm: 1_000_001,
            ..P
        };
        assert_eq!(
            bad.validate().unwrap_err(),
            ParamError {
                name: "beta_ppm",
                value: 1_000_001,
                min: 1,
                max: 1_000_000
            }
        );
        let bad = Params {
            max_rate_mbps: MAX_RATE_MBPS + 1,
            ..P
        };
        assert_eq!(bad.validate().unwrap_err().name, "max_rate_mbps");
        let bad = Params {
            min_rate_kbps: P.max_rate_mbps * 1000 + 1,
            ..P
        };
        assert_eq!(bad.validate().unwrap_err().name, "min_rate_kbps");
        for seg_bytes in [0, 65_537] {
            let bad = Params { seg_bytes, ..P };
            assert_eq!(bad.validate().unwrap_err().name, "seg_bytes");
        }
    }

    #[test]
    fn first_sample_only_initialises() {
        let t = warmed(Variant::Original, 1_000_000_000, 100);
        assert_eq!(t.rate_bps, 1_000_000_000);
        assert_eq!(t.prev_rtt_us, 100);
        assert_eq!(t.mode, Mode::Start as u8);
    }

    #[test]
    fn low_rtt_adds_delta_without_hai() {
        let mut t = warmed(Variant::Original, 1_000_000_000, 30);
        for i in 1..=10u64 {
            t.on_completion(&P, Variant::Original, 30, false);
            assert_eq!(t.rate_bps, 1_000_000_000 + i * P.delta_bps());
            assert_eq!(t.mode, Mode::LowRtt as u8);
        }
    }

    #[test]
    fn high_rtt_cuts_in_proportion() {
        let mut t = warmed(Variant::Original, 1_000_000_000, 1000);
        t.on_completion(&P, Variant::Original, 1000, false);
        // 1 - 0.8 * (1 - 500/1000) = 0.6
        assert_eq!(t.rate_bps, 600_000_000);
        assert_eq!(t.mode, Mode::HighRtt as u8);
    }

    #[test]
    fn rising_rtt_in_gradient_zone_decreases() {
        let mut t = warmed(Variant::Original, 1_000_000_000, 100);
        t.on_completion(&P, Variant::Original, 101, false);
        // diff 1 us -> EWMA 0.875 us -> gradient 0.04375 -> factor 1 - 0.035.
        assert_eq!(t.gradient_ppm, 43_750);
        assert_eq!(t.rate_bps, 965_000_000);
        assert_eq!(t.mode, Mode::Decrease as u8);
    }

    #[test]
    fn hai_after_five_negative_gradients() {
        let mut t = warmed(Variant::Original, 1_000_000_000, 200);
        let mut rate = t.rate_bps;
        for i in 1..=8u32 {
            t.on_completion(&P, Variant::Original, 200 - i, false);
            let step = if i >= 5 {
                5 * P.delta_bps()
            } else {
                P.delta_bps()
            };
            assert_eq!(t.rate_bps, rate + step, "completion {i}");
            rate = t.rate_bps;
        }
        assert_eq!(t.mode, Mode::Hai as u8);
        t.on_completion(&P, Variant::Original, 210, false);
        assert_eq!(t.neg_gradients, 0);
        // A flat RTT: gradients of 0 increase by delta, and never count towards HAI.
        let mut t = warmed(Variant::Original, 1_000_000_000, 100);
        for _ in 0..8 {
            t.on_completion(&P, Variant::Original, 100, false);
            assert_eq!((t.gradient_ppm, t.neg_gradients), (0, 0));
            assert_eq!(t.mode, Mode::Increase as u8);
        }
    }

    #[test]
    fn decrease_never_more_than_half() {
        let mut t = warmed(Variant::Original, 1_000_000_000, 60);
        t.on_completion(&P, Variant::Original, 400, false);
        assert_eq!(t.rate_bps, 500_000_000);
    }

    #[test]
    fn app_limited_never_increases() {
        let mut t = warmed(Variant::Original, 1_000_000_000, 30);
        t.on_completion(&P, Variant::Original, 30, true);
        assert_eq!(t.rate_bps, 1_000_000_000);
        t.on_completion(&P, Variant::Original, 1000, true);
        assert!(t.rate_bps < 1_000_000_000);
    }

    #[test]
    fn patched_weight_function() {
        assert_eq!(patched_weight_ppm(-300_000), 0);
        assert_eq!(patched_weight_ppm(-250_000), 0);
        assert_eq!(patched_weight_ppm(0), 500_000);
        assert_eq!(patched_weight_ppm(100_000), 700_000);
        assert_eq!(patched_weight_ppm(250_000), PPM);
        assert_eq!(patched_weight_ppm(i64::from(i32::MAX)), PPM);
    }

    #[test]
    fn patched_fixed_point_balances() {
        // At the fixed point gradient = 0 (w = 1/2) and delta/2 = rate * beta/2 * error,
        // i.e. rate = delta / (beta error). With RTT 60 us, error = 0.2: rate = 6.25 Gbit/s.
        let (rtt, rate) = (60, 6_250_000_000);
        let mut t = warmed(Variant::Patched, rate, rtt);
        t.on_completion(&P, Variant::Patched, rtt, false);
        assert_eq!(t.rate_bps, rate);
        assert_eq!(t.mode, Mode::Weighted as u8);
        // Above it the rate falls, below it the rate rises.
        let mut hi = warmed(Variant::Patched, rate, rtt + 10);
        hi.on_completion(&P, Variant::Patched, rtt + 10, false);
        assert!(hi.rate_bps < rate);
        let mut lo = warmed(Variant::Patched, rate, rtt - 5);
        lo.on_completion(&P, Variant::Patched, rtt - 5, false);
        assert!(lo.rate_bps > rate);
    }

    /// The rate after a loss, from 1 Gbit/s with `last_rtt_us` as the last completion's RTT.
    fn rate_after_loss(p: &Params, variant: Variant, last_rtt_us: u32) -> u64 {
        let mut t = warmed(variant, 1_000_000_000, last_rtt_us);
        t.on_loss(p);
        t.rate_bps
    }

    #[test]
    fn loss_below_t_high_is_ignored() {
        let after = |rtt| rate_after_loss(&P, Variant::Original, rtt);
        assert_eq!(after(30), 1_000_000_000);
        assert_eq!(after(P.t_high_us - 1), 1_000_000_000);
        assert_eq!(after(P.t_high_us), 500_000_000);
    }

    #[test]
    fn recent_senders_count_per_epoch_and_age_out() {
        let e = sender_epoch(5 * SENDER_EPOCH_US + 7);
        assert_eq!(e, 5);
        let mut words = [0u32; 2];
        assert_eq!(recent_senders(words, e), 0);
        for _ in 0..3 {
            words[(e & 1) as usize] = sender_word_add(words[(e & 1) as usize], e);
        }
        assert_eq!(recent_senders(words, e), 3);
        // Next epoch: two of them sent again; the previous epoch's 3 still count.
        let n = e + 1;
        for _ in 0..2 {
            words[(n & 1) as usize] = sender_word_add(words[(n & 1) as usize], n);
        }
        assert_eq!(recent_senders(words, n), 3);
        // Two epochs on, only those that sent in the last one count; three on, none.
        assert_eq!(recent_senders(words, n + 1), 2);
        assert_eq!(recent_senders(words, n + 2), 0);
        // A word of an older epoch of the same parity starts again.
        assert_eq!(sender_word_add(words[(n & 1) as usize], n + 2) & 0xfff, 1);
        // Wrap-around of the epoch.
        let last = (1 << SENDER_EPOCH_BITS) - 1;
        let w = [0, sender_word_add(0, last)];
        assert_eq!(recent_senders(w, 0), 1);
        // Saturation.
        let mut w = sender_word_add(0, 2);
        for _ in 0..10_000 {
            w = sender_word_add(w, 2);
        }
        assert_eq!(recent_senders([w, 0], 2), 4095);
    }

    #[test]
    fn sender_keys_differ_by_namespace_and_device() {
        let k = sender_key(1, 2);
        assert_ne!(k, 0);
        assert_eq!(sender_key(0, 0), 1);
        assert_ne!(k, sender_key(2, 2));
        assert_ne!(k, sender_key(1, 3));
    }

    #[test]
    fn loss_threshold_is_a_parameter() {
        // A buffer shallower than T_high: the gate at T_low, as before its default moved.
        let p = Params {
            loss_rtt_us: P.t_low_us,
            ..P
        };
        assert_eq!(p.loss_rtt_us(), P.t_low_us);
        assert_eq!(P.loss_rtt_us(), P.t_high_us);
        let after = |rtt| rate_after_loss(&p, Variant::Patched, rtt);
        assert_eq!(after(P.t_low_us - 1), 1_000_000_000);
        assert_eq!(after(P.t_low_us), 500_000_000);
    }

    #[test]
    fn update_scaling_scales_both_ways_and_keeps_the_zero() {
        let p = Params {
            update_scaling: 1,
            ..P
        };
        // Below T_low: + delta, a quarter of it for a completion of a quarter min RTT.
        let mut full = warmed(Variant::Original, 1_000_000_000, 30);
        let mut quarter = full;
        full.on_completion_after(&p, Variant::Original, 30, false, u64::from(P.min_rtt_us));
        quarter.on_completion_after(
            &p,
            Variant::Original,
            30,
            false,
            u64::from(P.min_rtt_us) / 4,
        );
        assert_eq!(full.rate_bps - 1_000_000_000, p.delta_bps());
        assert_eq!(quarter.rate_bps - 1_000_000_000, p.delta_bps() / 4);
        // Above T_high: a quarter of the cut.
        let mut full = warmed(Variant::Original, 1_000_000_000, 30);
        let mut quarter = full;
        full.on_completion_after(&p, Variant::Original, 1000, false, 1_000_000);
        quarter.on_completion_after(
            &p,
            Variant::Original,
            1000,
            false,
            u64::from(P.min_rtt_us) / 4,
        );
        let cut = 1_000_000_000 - full.rate_bps;
        assert_eq!(1_000_000_000 - quarter.rate_bps, cut / 4);
        // Off: no scaling whatever the interval.
        let mut off = warmed(Variant::Original, 1_000_000_000, 30);
        off.on_completion_after(&P, Variant::Original, 30, false, 1);
        assert_eq!(off.rate_bps - 1_000_000_000, P.delta_bps());
    }

    #[test]
    fn heavy_loss_is_one_packet_in_four() {
        // 16 KB of 1448-byte packets: 12 (rounded up), one segment a window.
        let heavy = |lost: u32, mss: u32| {
            let mut w = LossWindow::default();
            w.on_loss(lost);
            w.on_completion(16_384, mss)
        };
        assert!(!heavy(0, 1448));
        assert!(!heavy(2, 1448));
        assert!(heavy(3, 1448));
        assert!(!heavy(0, 0));
        // Jumbo frames: two packets a segment, a window of six segments; the window's
        // losses count wherever they fell, and it starts again after.
        let mut w = LossWindow::default();
        w.on_loss(2);
        for _ in 0..5 {
            assert!(!w.on_completion(16_384, 8948));
        }
        w.on_loss(1);
        assert!(w.on_completion(16_384, 8948));
        assert_eq!(w, LossWindow::default());
        w.on_loss(2);
        assert!(!(0..6).any(|_| w.on_completion(16_384, 8948)));
        // Saturating, never wrapping; the window's packets saturate too.
        w.on_loss(u32::MAX);
        w.on_loss(300);
        assert_eq!(w.lost_pkts, u8::MAX);
        assert!(w.on_completion(16_384, 1448));
        w.on_loss(u32::MAX);
        assert!(!w.on_completion(MAX_SEG_BYTES, 1));
        let mut t = warmed(Variant::Patched, 1_000_000_000, 30);
        t.on_heavy_loss(&P);
        assert_eq!((t.rate_bps, t.mode), (500_000_000, Mode::Loss as u8));
    }

    #[test]
    fn a_congestion_mark_halves_at_any_rtt() {
        let mut t = warmed(Variant::Original, 1_000_000_000, 30);
        t.on_ce(&P);
        assert_eq!((t.rate_bps, t.mode), (500_000_000, Mode::Ce as u8));
        let mut t = Timely::new(&P, P.min_rate_bps());
        t.on_ce(&P);
        assert_eq!(t.rate_bps, P.min_rate_bps());
    }

    #[test]
    fn loss_halves_within_bounds() {
        let mut t = Timely::new(&P, 1_000_000_000);
        t.on_loss(&P);
        assert_eq!(t.rate_bps, 500_000_000);
        let mut t = Timely::new(&P, P.min_rate_bps());
        t.on_loss(&P);
        assert_eq!(t.rate_bps, P.min_rate_bps());
    }

    fn random_params(rng: &mut Rng) -> Params {
        let t_low = rng.range(1, 100_000) as u32;
        let max_rate = rng.range(1, u64::from(MAX_RATE_MBPS)) as u32;
        let p = Params {
            t_low_us: t_low,
            t_high_us: rng.range(u64::from(t_low) + 1, u64::from(MAX_RTT_US)) as u32,
            delta_kbps: rng.range(1, u64::from(max_rate) * 1000) as u32,
            beta_ppm: rng.range(1, PPM) as u32,
            alpha_ppm: rng.range(1, PPM) as u32,
            min_rtt_us: rng.range(1, u64::from(MAX_RTT_US)) as u32,
            hai_threshold: rng.range(1, 1000) as u32,
            hai_factor: rng.range(1, 100) as u32,
            min_rate_kbps: rng.range(1, u64::from(max_rate) * 1000) as u32,
            max_rate_mbps: max_rate,
            init_rate_mbps: rng.range(0, u64::from(max_rate)) as u32,
            seg_bytes: rng.range(1, u64::from(MAX_SEG_BYTES)) as u32,
            line_rate_mbps: rng.range(0, u64::from(MAX_RATE_MBPS)) as u32,
            patched_beta_ppm: rng.range(1, PPM) as u32,
            rtt_ref_us: rng.range(0, u64::from(MAX_RTT_US)) as u32,
            rtt_window_bytes: rng.range(0, u64::from(MAX_SEG_BYTES)) as u32,
            loss_rtt_us: rng.range(0, u64::from(MAX_RTT_US)) as u32,
            update_scaling: rng.range(0, 1) as u32,
            t_high_last_sample: rng.range(0, 1) as u32,
            patched_rtt_window_rtts: rng.range(0, 64) as u32,
        };
        assert_eq!(p.validate(), Ok(()));
        p
    }

    /// Over random valid parameters and arbitrary RTT sequences (including 0 and absurd
    /// values): no panic (overflow panics in test builds), the rate stays in bounds, and
    /// each reaction goes the way the zone says.
    #[test]
    fn property_bounds_and_directions() {
        let mut rng = Rng::new(0x7131);
        for _ in 0..2000 {
            let p = random_params(&mut rng);
            for variant in [Variant::Original, Variant::Patched] {
                let mut t = Timely::new(&p, rng.range(0, u64::MAX >> 1));
                let draw = |rng: &mut Rng| match rng.range(0, 9) {
                    0 => 0,
                    1 => u32::MAX,
                    2 => rng.range(0, u64::from(p.t_low_us)) as u32,
                    3 => rng.range(u64::from(p.t_high_us) + 1, u64::from(MAX_RTT_US)) as u32,
                    _ => rng.range(u64::from(p.t_low_us), u64::from(p.t_high_us)) as u32,
                };
                for _ in 0..200 {
                    let rtt = draw(&mut rng);
                    // The segment's last sample: its minimum, or any other.
                    let last = match rng.range(0, 2) {
                        0 => rtt,
                        _ => draw(&mut rng),
                    };
                    let app_limited = rng.range(0, 9) == 0;
                    let before = t;
                    let c = Completion {
                        rtt_us: rtt,
                        last_rtt_us: last,
                        delivered_bps: 0,
                        interval_us: u64::MAX,
                        new_source: false,
                    };
                    t.on_segment(&p, variant, &c, app_limited);
                    assert!(t.rate_bps >= p.min_rate_bps() && t.rate_bps <= p.max_rate_bps());
                    if before.prev_rtt_us == 0 {
                        continue;
                    }
                    let clamped = |r: u64| r.clamp(p.min_rate_bps(), p.max_rate_bps());
                    let rtt = rtt.clamp(1, MAX_RTT_US);
                    let high_rtt = match p.t_high_last_sample {
                        0 => rtt,
                        _ => last.clamp(1, MAX_RTT_US),
                    };
                    if rtt < p.t_low_us {
                        let expect = if app_limited {
                            before.rate_bps
                        } else {
                            before.rate_bps + p.delta_bps()
                        };
                        assert_eq!(t.rate_bps, clamped(expect.max(before.rate_bps)));
                    } else if high_rtt > p.t_high_us {
                        assert_eq!(t.mode, Mode::HighRtt as u8);
                        assert!(t.rate_bps <= clamped(before.rate_bps));
                        assert!(t.rate_bps >= clamped(before.rate_bps / 2));
                    } else if variant == Variant::Original {
                        if t.gradient_ppm > 0 {
                            assert!(t.rate_bps <= clamped(before.rate_bps));
                        } else {
                            assert!(t.rate_bps >= clamped(before.rate_bps));
                        }
                    }
                    if app_limited {
                        assert!(t.rate_bps <= clamped(before.rate_bps));
                    }
                    if rng.range(0, 50) == 0 {
                        t.on_loss(&p);
                        assert!(t.rate_bps >= p.min_rate_bps() && t.rate_bps <= p.max_rate_bps());
                    }
                }
            }
        }
    }

    #[test]
    fn t_high_on_the_last_sample_is_an_option() {
        // The window's minimum (100 us) is in the gradient zone, the segment's last
        // sample (1000 us) above T_high (500 us).
        let c = Completion {
            rtt_us: 100,
            last_rtt_us: 1000,
            delivered_bps: 0,
            interval_us: 1000,
            new_source: false,
        };
        let run = |p: &Params| {
            let mut t = Timely::new(p, 500_000_000);
            t.on_completion(p, Variant::Original, 100, false);
            t.on_segment(p, Variant::Original, &c, false);
            t
        };
        let default = run(&P);
        assert_eq!(default.mode, Mode::Increase as u8);
        let last = run(&Params {
            t_high_last_sample: 1,
            ..P
        });
        assert_eq!(last.mode, Mode::HighRtt as u8);
        // beta (1 - T_high / rtt) = 0.8 x 0.5: 40% off.
        assert_eq!(last.rate_bps, 300_000_000);
        // The rest of the law keeps the window's minimum.
        assert_eq!((last.last_rtt_us, last.prev_rtt_us), (100, 100));
        // With the paper's rule the two are one sample.
        let mut s = Segmenter::default();
        let paper = Params {
            rtt_window_bytes: 0,
            ..P
        };
        s.restart(0);
        s.on_ack(&paper, 10, 8192, Some(300));
        let c = s.on_ack(&paper, 20, 8192, Some(200)).unwrap();
        assert_eq!((c.rtt_us, c.last_rtt_us), (200, 200));
    }

    #[test]
    fn rtt_window_bounded_by_rtts() {
        // Segments of 1000 us at an RTT of 300-400 us: three RTTs cover one segment, so
        // the window is the current segment alone; at 0 the minimum spans four.
        let bounded = Params {
            patched_rtt_window_rtts: 3,
            ..P
        };
        let unbounded = Params {
            patched_rtt_window_rtts: 0,
            ..P
        };
        for (p, second) in [(unbounded, 300), (bounded, 400)] {
            let mut s = Segmenter::default();
            s.restart(0);
            assert_eq!(
                s.on_ack(&p, 1000, P.seg_bytes, Some(300)).unwrap().rtt_us,
                300
            );
            assert_eq!(
                s.on_ack(&p, 2000, P.seg_bytes, Some(400)).unwrap().rtt_us,
                second
            );
        }
        // Segments shorter than the RTT: the window keeps its four segments.
        let mut s = Segmenter::default();
        s.restart(0);
        s.on_ack(&bounded, 100, P.seg_bytes, Some(300)).unwrap();
        assert_eq!(
            s.on_ack(&bounded, 200, P.seg_bytes, Some(400))
                .unwrap()
                .rtt_us,
            300
        );
    }

    #[test]
    fn segmenter_keeps_the_last_sample_of_each_segment() {
        let mut s = Segmenter::default();
        s.restart(0);
        s.on_ack(&P, 10, 8192, Some(300));
        s.on_ack(&P, 15, 100, None);
        let c = s.on_ack(&P, 20, 8192, Some(900)).unwrap();
        assert_eq!((c.rtt_us, c.last_rtt_us), (300, 900));
        // A new segment starts without a sample; the window's minimum spans segments.
        assert_eq!((s.rtt_us(), s.last_rtt_us), (0, 0));
        assert_eq!(s.on_ack(&P, 30, P.seg_bytes, None), None);
        let c = s.on_ack(&P, 40, 1, Some(700)).unwrap();
        assert_eq!((c.rtt_us, c.last_rtt_us), (300, 700));
        // A change of source starts both over.
        s.offer(&P, 50, 800, SampleSource::Software);
        let c = s.on_ack(&P, 60, P.seg_bytes, None).unwrap();
        assert_eq!((c.rtt_us, c.last_rtt_us, c.new_source), (800, 800, true));
    }

    #[test]
    fn segmenter_completes_once_per_segment() {
        let p = Params {
            line_rate_mbps: 1000,
            ..P
        };
        let mut s = Segmenter::default();
        s.restart(1000);
        assert_eq!(s.on_ack(&p, 1100, 8192, Some(300)), None);
        assert_eq!(s.on_ack(&p, 1150, 8000, None), None);
        // 16384 bytes in 262 us; the smallest sample (300 us, not 400), a burst head's,
        // which no serialization of the segment delayed.
        let c = s.on_ack(&p, 1262, 192, Some(400)).unwrap();
        assert_eq!(
            c,
            Completion {
                rtt_us: 300,
                last_rtt_us: 400,
                delivered_bps: 16384 * 8 * 1_000_000 / 262,
                interval_us: 262,
                new_source: false,
            }
        );
        assert_eq!(s.acked_bytes, 0);
        // No RTT sample yet (only retransmissions ACKed): no completion.
        assert_eq!(s.on_ack(&p, 2000, 20_000, None), None);
        assert!(s.on_ack(&p, 2100, 1, Some(0)).is_some());
    }

    #[test]
    fn segmenter_reports_the_minimum_over_64_kb() {
        let mut s = Segmenter::default();
        s.restart(0);
        let mut now = 0;
        let mut complete = |s: &mut Segmenter, rtt| {
            now += 100;
            s.on_ack(&P, now, P.seg_bytes, Some(rtt)).unwrap().rtt_us
        };
        // A burst's head segment sees 200 us, its tail segments its own queue.
        assert_eq!(complete(&mut s, 200), 200);
        assert_eq!(complete(&mut s, 450), 200);
        assert_eq!(complete(&mut s, 520), 200);
        assert_eq!(complete(&mut s, 600), 200);
        // Four segments (64 KB) later the 200 us sample has left the window.
        assert_eq!(complete(&mut s, 700), 450);
        assert_eq!(complete(&mut s, 300), 300);
        // With 64 KB segments the window is the segment itself.
        let p = Params {
            seg_bytes: 65_536,
            ..P
        };
        let mut s = Segmenter::default();
        s.restart(0);
        assert_eq!(s.on_ack(&p, 10, 65_536, Some(200)).unwrap().rtt_us, 200);
        assert_eq!(s.on_ack(&p, 20, 65_536, Some(900)).unwrap().rtt_us, 900);
    }

    #[test]
    fn segmenter_survives_short_drains_not_idle() {
        let mut s = Segmenter::default();
        s.restart(0);
        s.on_ack(&P, 100, 10_000, Some(80));
        // The pipe drained for less than T_high: the segment goes on.
        // (At 10 Gbit/s a 64 KB burst takes 52 us.)
        s.on_tx_start(&P, 100 + u64::from(P.t_high_us) + 52, 10_000_000_000);
        assert_eq!(s.acked_bytes, 10_000);
        // A real idle period starts over.
        s.on_tx_start(&P, 101 + 2 * u64::from(P.t_high_us), 10_000_000_000);
        assert_eq!(s.acked_bytes, 0);
        assert_eq!(s.start_us, 101 + 2 * u64::from(P.t_high_us));
    }

    #[test]
    fn segmenter_completes_segments_of_a_flow_slower_than_a_packet_per_t_high() {
        // 2 Mbit/s, MSS 1500: a packet every 6 ms, 12 T_high; each ACK drains the pipe.
        let (rate, mss) = (2_000_000, 1500);
        let mut s = Segmenter::default();
        s.restart(0);
        let mut now = 0;
        let mut completions = 0;
        for _ in 0..40 {
            now += 6000;
            s.on_tx_start(&P, now, rate);
            if s.on_ack(&P, now + 300, mss, Some(300)).is_some() {
                completions += 1;
            }
        }
        // 40 packets of 1500 bytes are 3 segments of 16 KB.
        assert_eq!(completions, 3);
        // A gap longer than a 64 KB burst takes (262 ms) is idle again.
        s.on_tx_start(&P, now + 300_000, rate);
        assert_eq!(s.acked_bytes, 0);
    }

    #[test]
    fn stamped_rtts_win_over_kernel_ones_while_they_come() {
        let mut s = Segmenter::default();
        s.restart(0);
        // The option's network RTT of an ACK comes first (pkts_acked), then the kernel's
        // RTT of the same ACK (cong_control), larger by the receiver's hold.
        assert!(s.offer(&P, 10, 120, SampleSource::Software));
        let c = s.on_ack(&P, 10, P.seg_bytes, Some(90)).unwrap();
        assert_eq!((c.rtt_us, c.new_source), (120, false));
        assert_eq!(s.source(), Some(SampleSource::Software));
        // Hardware samples replace software ones at once, and the change is reported once.
        assert!(s.offer(&P, 20, 110, SampleSource::Hardware));
        assert!(!s.offer(&P, 21, 50, SampleSource::Software));
        let c = s.on_ack(&P, 22, P.seg_bytes, Some(40)).unwrap();
        assert_eq!((c.rtt_us, c.new_source), (110, true));
        assert!(s.offer(&P, 30, 130, SampleSource::Hardware));
        let c = s.on_ack(&P, 30, P.seg_bytes, None).unwrap();
        // The window restarted with the source: 110 us is the only earlier sample in it.
        assert_eq!((c.rtt_us, c.new_source), (110, false));
        // Silent for more than four T_high: the kernel's samples are taken...
        let later = 30 + u64::from(SOURCE_SILENCE_T_HIGHS * P.t_high_us) + 1;
        let c = s.on_ack(&P, later, P.seg_bytes, Some(300)).unwrap();
        assert_eq!((c.rtt_us, c.new_source), (300, true));
        assert_eq!(s.source(), Some(SampleSource::KernelRtt));
        // ...until stamped samples come again.
        assert!(s.offer(&P, later + 5, 140, SampleSource::Software));
        assert_eq!(s.source(), Some(SampleSource::Software));
        assert!(!s.offer(&P, later + 6, 100, SampleSource::KernelRtt));
    }

    #[test]
    fn the_papers_rule_takes_the_last_sample_of_a_segment() {
        let p = Params {
            rtt_window_bytes: 0,
            ..P
        };
        let mut s = Segmenter::default();
        s.restart(0);
        assert_eq!(s.on_ack(&p, 10, 8192, Some(200)), None);
        assert_eq!(s.on_ack(&p, 20, 8192, Some(450)).unwrap().rtt_us, 450);
        // The last packet waited for the segment's serialization: 131 us at 1 Gbit/s.
        let paper = Params {
            line_rate_mbps: 1000,
            ..p
        };
        assert_eq!(s.on_ack(&paper, 25, 8192, Some(700)), None);
        assert_eq!(
            s.on_ack(&paper, 26, 8192, Some(600)).unwrap().rtt_us,
            600 - 131
        );
        assert_eq!(
            s.on_ack(&p, 30, P.seg_bytes, Some(300)).unwrap().rtt_us,
            300
        );
        // A window of one segment: the segment's own minimum, nothing older.
        let p = Params {
            rtt_window_bytes: 1,
            ..P
        };
        let mut s = Segmenter::default();
        s.restart(0);
        assert_eq!(s.on_ack(&p, 10, 8192, Some(200)), None);
        assert_eq!(s.on_ack(&p, 20, 8192, Some(450)).unwrap().rtt_us, 200);
        assert_eq!(
            s.on_ack(&p, 30, P.seg_bytes, Some(300)).unwrap().rtt_us,
            300
        );
    }

    #[test]
    fn any_sequence_of_sources_and_samples_keeps_the_segmenter_sound() {
        let mut rng = Rng::new(0x7133);
        for _ in 0..200 {
            let p = random_params(&mut rng);
            let mut s = Segmenter::default();
            let mut now = rng.range(0, u64::from(u32::MAX) * 2);
            s.restart(now);
            for _ in 0..300 {
                now = now.wrapping_add(rng.range(0, 50_000));
                let rtt = rng.range(0, u64::from(u32::MAX)) as u32;
                match rng.range(0, 4) {
                    0 => {
                        s.offer(&p, now, rtt, SampleSource::Hardware);
                    }
                    1 => {
                        s.offer(&p, now, rtt, SampleSource::Software);
                    }
                    _ => {}
                }
                let sample = (rng.range(0, 2) == 0).then_some(rtt);
                let bytes = rng.range(0, 70_000) as u32;
                if let Some(c) = s.on_ack(&p, now, bytes, sample) {
                    assert!((1..=MAX_RTT_US).contains(&c.rtt_us));
                }
                assert!(s.source <= SampleSource::KernelRtt.code());
                assert!(usize::from(s.recent_next) < RTT_WINDOW_SEGS);
            }
        }
    }

    #[test]
    fn samples_of_maybe_delayed_acks_are_skipped() {
        assert_eq!(usable_rtt_us(Some(45_000), false), Some(45_000));
        assert_eq!(usable_rtt_us(Some(45_000), true), None);
        assert_eq!(usable_rtt_us(Some(400), true), None);
        assert_eq!(usable_rtt_us(None, true), None);
        assert_eq!(usable_rtt_us(None, false), None);
    }

    #[test]
    fn app_limited_rule_is_80_percent() {
        assert!(is_app_limited(799, 1000));
        assert!(!is_app_limited(800, 1000));
        assert!(!is_app_limited(u64::MAX, u64::MAX));
    }

    #[test]
    fn initial_rate_is_the_fair_share_of_active_flows() {
        assert_eq!(P.init_rate_bps(0), 10_000_000_000);
        assert_eq!(P.init_rate_bps(1), 5_000_000_000);
        assert_eq!(P.init_rate_bps(3), 2_500_000_000);
        // Never below the floor, however many flows are open.
        assert_eq!(P.init_rate_bps(u32::MAX), P.min_rate_bps());
        // An explicit initial rate does not depend on the other flows.
        let fixed = Params {
            init_rate_mbps: 300,
            ..P
        };
        assert_eq!(fixed.init_rate_bps(0), 300_000_000);
        assert_eq!(fixed.init_rate_bps(99), 300_000_000);
    }

    #[test]
    fn c_comes_from_the_link_unless_max_rate_mbps_is_set() {
        let auto = Params {
            max_rate_mbps: 0,
            ..P
        };
        assert_eq!(auto.validate(), Ok(()));
        // Each flow its link's speed; the papers' 10 Gbit/s where the kernel does not know.
        assert_eq!(auto.flow_c_mbps(Some(25_000)), 25_000);
        assert_eq!(auto.flow_c_mbps(None), DEFAULT_LINK_MBPS);
        assert_eq!(auto.flow_c_mbps(Some(0)), DEFAULT_LINK_MBPS);
        // Never below the floor (10 Mbit/s in P), never above what the arithmetic allows.
        assert_eq!(auto.flow_c_mbps(Some(1)), 10);
        assert_eq!(auto.flow_c_mbps(Some(u32::MAX)), MAX_RATE_MBPS);
        // A set max_rate_mbps is every flow's C, whatever the link.
        assert_eq!(P.flow_c_mbps(Some(25_000)), P.max_rate_mbps);
        // A flow's parameters carry its C: fair share, ceiling, and the state keeps it.
        let flow = auto.for_flow(auto.flow_c_mbps(Some(1000)), 1448);
        assert_eq!(flow.max_rate_bps(), 1_000_000_000);
        assert_eq!(flow.init_rate_bps(3), 250_000_000);
        let mut t = Timely::new(&flow, u64::MAX);
        assert_eq!((t.rate_bps, t.c_mbps), (1_000_000_000, 1000));
        assert_eq!(auto.for_flow(t.c_mbps, 1448), flow);
        for _ in 0..100 {
            t.on_completion(&flow, Variant::Original, 1, false);
        }
        assert_eq!(t.rate_bps, 1_000_000_000);
        // Unresolved (a zeroed state's c_mbps 0), C is the default; nothing panics.
        assert_eq!(auto.for_flow(0, 1448).max_rate_bps(), P.max_rate_bps());
        assert_eq!(
            auto.max_rate_bps(),
            u64::from(DEFAULT_LINK_MBPS) * 1_000_000
        );
        // With a set C, the flow's parameters are the module's.
        assert_eq!(P.for_flow(25_000, 1448), P.for_mss(1448));
    }

    /// An RTT sample as the abstraction hands it over: the kernel's `long` (-1 for none, as
    /// for retransmitted data) converted with `u32::try_from`, so negative values and values
    /// beyond `u32::MAX` are no sample at all.
    fn kernel_sample(rtt_us: i64) -> Option<u32> {
        u32::try_from(rtt_us).ok()
    }

    #[test]
    fn bad_samples_never_make_or_distort_a_completion() {
        let mut s = Segmenter::default();
        s.restart(0);
        // A segment whose only samples are -1 (or beyond u32) never completes...
        for rtt in [-1, i64::MIN, 1 << 40, -1] {
            let sample = usable_rtt_us(kernel_sample(rtt), false);
            assert_eq!(s.on_ack(&P, 100, P.seg_bytes, sample), None);
        }
        // ...until a real one arrives: 0 counts as 1 us, absurd values as 10 s.
        let c = s.on_ack(&P, 200, 1, kernel_sample(0)).unwrap();
        assert_eq!(c.rtt_us, 1);
        let mut s = Segmenter::default();
        s.restart(0);
        let mut last = None;
        for rtt in [i64::from(u32::MAX), i64::from(MAX_RTT_US) + 1] {
            last = s.on_ack(&P, 300, P.seg_bytes, kernel_sample(rtt));
            assert_eq!(last.unwrap().rtt_us, MAX_RTT_US);
        }
        // A clamped absurd sample drives the law like a 10 s RTT: a bounded cut, no overflow.
        let mut t = warmed(Variant::Original, 1_000_000_000, 100);
        t.on_completion(&P, Variant::Original, last.unwrap().rtt_us, false);
        assert_eq!(t.mode, Mode::HighRtt as u8);
        assert!(t.rate_bps >= 500_000_000 && t.rate_bps < 1_000_000_000);
    }

    #[test]
    fn clock_jumps_neither_fake_idle_nor_break_rates() {
        let mut s = Segmenter::default();
        s.restart(10_000);
        assert_eq!(s.on_ack(&P, 10_100, 8192, Some(80)), None);
        // The clock steps back: no idle period is read into it, the segment goes on.
        let before = s;
        s.on_tx_start(&P, 5_000, 10_000_000_000);
        assert_eq!(s, before);
        // Completed before it began: the elapsed time counts as 1 us (a finite rate), and
        // the next segment starts at the new clock.
        let c = s.on_ack(&P, 5_000, 8192, Some(90)).unwrap();
        assert_eq!(c.delivered_bps, 16_384 * 8 * 1_000_000);
        assert_eq!(c.rtt_us, 80);
        assert_eq!(s.start_us, 5_000);
        // Back to 0 and to the end of time: saturating, never wrapping.
        assert_eq!(s.on_ack(&P, 0, 100, Some(80)), None);
        s.on_tx_start(&P, u64::MAX, 10_000_000_000);
        assert_eq!(
            (s.acked_bytes, s.start_us),
            (0, u64::MAX),
            "a jump forward is idle"
        );
        let c = s.on_ack(&P, u64::MAX, P.seg_bytes, Some(80)).unwrap();
        assert_eq!(c.delivered_bps, u64::from(P.seg_bytes) * 8 * 1_000_000);
        s.on_tx_start(&P, 0, 10_000_000_000);
        assert_eq!(
            s.start_us,
            u64::MAX,
            "a jump back from the end of time is not idle"
        );
        // A jump forward within a segment: a very low delivery rate, so the completion
        // counts as application-limited and cannot raise the rate.
        let mut s = Segmenter::default();
        s.restart(0);
        let c = s.on_ack(&P, 1 << 40, P.seg_bytes, Some(30)).unwrap();
        assert!(is_app_limited(c.delivered_bps, P.min_rate_bps()));
        let mut t = warmed(Variant::Original, 1_000_000_000, 30);
        t.on_completion(&P, Variant::Original, c.rtt_us, true);
        assert_eq!(t.rate_bps, 1_000_000_000);
    }

    /// ACK streams as the kernel may deliver them, through `Segmenter` into the law, over
    /// random valid parameters: samples of -1, 0, `u32::MAX` and beyond (and ACKs flagged
    /// as maybe delayed) mixed with real ones, ACKs of 0 bytes up to `u32::MAX`, and a clock
    /// that steps back (to 0, too) and jumps forward (to the end of time, too), with idle
    /// restarts and losses. No panic or overflow (test builds check); every completion has
    /// a usable sample behind it, an RTT within [1 us, 10 s] and no larger than its own
    /// segment's smallest sample, the delivery rate of the bytes over the elapsed time (at
    /// least 1 us); the rate stays within its bounds and the window cap above its floor.
    #[test]
    fn property_bad_samples_and_clock_jumps() {
        let mut rng = Rng::new(0x5eed_c10c);
        // Completions seen, and those of segments the clock stepped back into.
        let (mut completions, mut backwards) = (0, 0);
        for _ in 0..300 {
            let p = random_params(&mut rng);
            for variant in [Variant::Original, Variant::Patched] {
                let mut now = rng.range(0, u64::MAX);
                let mut s = Segmenter::default();
                s.restart(now);
                let mut t = Timely::new(&p, p.init_rate_bps(rng.range(0, 100) as u32));
                // Smallest usable sample of the current segment (clamped), if any.
                let mut seg_min: Option<u32> = None;
                for _ in 0..300 {
                    now = match rng.range(0, 19) {
                        0 => now.saturating_sub(rng.range(1, 1 << 40)),
                        1 => 0,
                        2 => now.saturating_add(rng.range(1, 1 << 40)),
                        3 => u64::MAX - rng.range(0, 1000),
                        _ => now.saturating_add(rng.range(0, 2000)),
                    };
                    match rng.range(0, 9) {
                        0 => {
                            let before = s;
                            s.on_tx_start(&p, now, t.rate_bps);
                            if now <= before.last_ack_us {
                                assert_eq!(s, before, "idle read into a clock step back");
                            }
                            if s != before {
                                assert_eq!((s.acked_bytes, s.rtt_us(), s.start_us), (0, 0, now));
                                seg_min = None;
                            }
                        }
                        1 => {
                            t.on_loss(&p);
                        }
                        _ => {
                            let rtt = match rng.range(0, 9) {
                                0 => -1,
                                1 => 0,
                                2 => i64::from(u32::MAX),
                                3 => rng.range(u64::from(u32::MAX), u64::MAX >> 1) as i64,
                                4 => -(rng.range(1, 1 << 62) as i64),
                                5 => rng.range(u64::from(MAX_RTT_US), u64::from(u32::MAX)) as i64,
                                _ => rng.range(1, u64::from(p.t_high_us) * 2) as i64,
                            };
                            let sample = usable_rtt_us(kernel_sample(rtt), rng.range(0, 9) == 0);
                            let acked = match rng.range(0, 19) {
                                0 => 0,
                                1 => u32::MAX,
                                _ => rng.range(1, 2 * 1448) as u32,
                            };
                            if let Some(r) = sample {
                                let r = r.clamp(1, MAX_RTT_US);
                                seg_min = Some(seg_min.map_or(r, |m| m.min(r)));
                            }
                            let before = s;
                            if let Some(c) = s.on_ack(&p, now, acked, sample) {
                                let min = seg_min.expect("a completion without a usable sample");
                                assert!((1..=min).contains(&c.rtt_us));
                                let bytes = u128::from(before.acked_bytes.saturating_add(acked));
                                assert!(bytes >= u128::from(p.seg_bytes));
                                let elapsed =
                                    u128::from(now.saturating_sub(before.start_us).max(1));
                                let exact = bytes * 8 * 1_000_000 / elapsed;
                                assert_eq!(u128::from(c.delivered_bps), exact.min(u64::MAX.into()));
                                assert_eq!((s.acked_bytes, s.rtt_us(), s.start_us), (0, 0, now));
                                seg_min = None;
                                completions += 1;
                                backwards += usize::from(now < before.start_us);
                                let app = is_app_limited(c.delivered_bps, t.rate_bps);
                                t.on_completion(&p, variant, c.rtt_us, app);
                            }
                        }
                    }
                    assert!(t.rate_bps >= p.min_rate_bps() && t.rate_bps <= p.max_rate_bps());
                    assert!(cwnd_cap_pkts(&p, t.rate_bps, 1448) >= MIN_CWND_PKTS);
                    assert!(pacing_bytes_per_sec(t.rate_bps) <= p.max_rate_bps() / 8);
                }
            }
        }
        assert!(
            completions > 5_000 && backwards > 1_000,
            "{completions} / {backwards}"
        );
    }

    #[test]
    fn cwnd_cap_covers_t_high() {
        // 1 Gbit/s for 520 us = 65 000 bytes = 44 packets of 1448 bytes.
        assert_eq!(cwnd_cap_pkts(&P, 1_000_000_000, 1448), 44);
        assert_eq!(cwnd_cap_pkts(&P, 0, 1448), MIN_CWND_PKTS);
        assert_eq!(cwnd_cap_pkts(&P, u64::MAX, 0), u32::MAX >> 1);
    }
}
