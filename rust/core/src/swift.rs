// SPDX-License-Identifier: GPL-2.0

//! Swift (Kumar et al., "Swift: Delay is Simple and Effective for Congestion Control in the
//! Datacenter", SIGCOMM 2020): window AIMD that holds an end-to-end delay *target*, with the
//! delay split into a fabric part and an endpoint part, each with its own window.
//!
//! Per ACK that brings a delay sample (section 3.2, Algorithm 1), for each window `w` with
//! its delay `d` and target `t`:
//!
//! ```text
//! d <  t : w += ai * acked / w    (w >= 1)        additive increase
//!          w += ai * acked        (w <  1)
//! d >= t : w *= max(1 - beta_md (d - t) / d, 1 - max_mdf)
//!          at most once per RTT since that window's last decrease
//! cwnd = min(fcwnd, ecwnd), both clamped to [min_cwnd, max_cwnd]
//! ```
//!
//! The fabric target grows with the path's hops and shrinks with the window (section 3.3,
//! topology- and flow-based scaling): `base_target + hops * per_hop + fs(fcwnd)`, with
//! `fs(w) = alpha / sqrt(w) + beta` clamped to `[0, fs_range]`, where alpha and beta make
//! `fs(fs_min_cwnd) = fs_range` and `fs(fs_max_cwnd) = 0`. A flow with a small window
//! (many flows on the bottleneck) tolerates more delay than one with a large window, so
//! the larger windows cut first: the fixed point is fair, and the queue grows like
//! `1 / sqrt(fair share)`, not linearly in the number of flows. The endpoint target is a
//! constant.
//!
//! Loss (section 3.5): entering fast recovery cuts each window by `max_mdf`, at most once
//! per RTT; so does a retransmission timeout, and `retx_reset_threshold` timeouts in a row
//! (no ACK between them) set both windows to `min_cwnd`. Every ACK ends such a run.
//!
//! Below one packet (section 3.4) Swift paces, one packet every `RTT / cwnd`:
//! [`Swift::paced_rate_bytes_per_sec`] is `cwnd * mss / RTT`, the rate at which a window
//! of `cwnd` packets per RTT leaves; the module decides when it applies.
//!
//! Fixed point and units: windows are packets times 2^20 (`_fp`, [`FP_ONE`] = one packet;
//! `min_cwnd` 0.001 packet is 1049); parameters that may be fractional packets are
//! milli-packets (`_mpkts`); fractions are parts per million (`_ppm`); delays nanoseconds
//! (`_ns`, `u32`), the clock nanoseconds (`u64`). The flow-scaling curve works on
//! `2^20 / sqrt(w)` (`_isqrt`), from an integer square root.
//!
//! What the paper leaves to the implementation, and what is done here:
//! - the delays: fabric = the network RTT of the delay-stamp option `(t4 - t1) - (t3 - t2)`;
//!   endpoint = what the module measures of the receiver's hold and the sender's own stack
//!   (`rust/tcp_swift.rs`); without the option ([`SampleSource::KernelRtt`]) the fabric
//!   delay is the kernel's RTT sample and the endpoint window is off (its window follows
//!   the fabric one, so that it starts from there when samples with an endpoint delay come
//!   back);
//! - "once per RTT" is measured against the last sample's whole RTT (fabric plus endpoint
//!   delay), and each window keeps its own time of last decrease (a decrease of one does
//!   not hold the other); a clock that went back allows a decrease;
//! - Algorithm 1 records the time of the last decrease when the window *did not* grow (a
//!   misprint: it would block the decreases themselves); here it is recorded when a window
//!   shrank;
//! - an ACK without a usable sample changes no window (no evidence either way) but still
//!   ends a run of timeouts; samples of 0 or above [`MAX_DELAY_NS`] are ignored and counted;
//! - `acked` above [`MAX_ACKED_PKTS`] counts as that (a stretch ACK of more is a burst the
//!   additive increase must not multiply);
//! - no slow start (the paper has none): a flow starts at the stack's initial window;
//! - the endpoint window grows no further than the fabric window (above it, it does not
//!   bind; the paper lets it grow unchecked).

use super::fixed::{mul_div, PPM};
use super::param::{ParamError, ParamSpec};
use super::sample::SampleSource;

/// Bits of fraction in a window (`_fp`).
pub const FP_SHIFT: u32 = 20;
/// One packet as a window (`_fp`).
pub const FP_ONE: u64 = 1 << FP_SHIFT;
/// Largest delay sample taken at face value (2 s); larger ones (and 0) are ignored.
pub const MAX_DELAY_NS: u32 = 2_000_000_000;
/// Largest value of each part of a target (`base_target_ns`, `fs_range_ns`,
/// `endpoint_target_ns`; 100 ms): the fabric target's sum stays far below 2^32 ns.
pub const MAX_TARGET_NS: u32 = 100_000_000;
/// Largest `per_hop_ns` (1 ms).
pub const MAX_PER_HOP_NS: u32 = 1_000_000;
/// Largest `hops`.
pub const MAX_HOPS: u32 = 64;
/// Largest `max_cwnd_pkts` and `fs_max_cwnd_pkts` (2^40 as a window).
pub const MAX_CWND_LIMIT_PKTS: u32 = 1_000_000;
/// Largest `ai_mpkts` (100 packets per RTT).
pub const MAX_AI_MPKTS: u32 = 100_000;
/// Largest `retx_reset_threshold`.
pub const MAX_RETX_RESET_THRESHOLD: u32 = 1000;
/// Packets one ACK may count for the additive increase.
pub const MAX_ACKED_PKTS: u32 = 65_536;
/// Fixed point of the flow-scaling curve: `2^20 / sqrt(w)` with `w` in packets.
const ISQRT_ONE: u64 = 1 << 20;

/// One ACK's delays.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Sample {
    /// Where the fabric delay comes from.
    pub source: SampleSource,
    /// Fabric delay: the network RTT (for [`SampleSource::KernelRtt`] the kernel's RTT).
    pub fabric_ns: u32,
    /// Endpoint delay, if this ACK measured one (never with [`SampleSource::KernelRtt`]).
    pub endpoint_ns: Option<u32>,
}

/// Parameters, in the units of the kernel module's parameters (same names), so that a
/// validation error names what the user typed. Validated by [`SwiftParams::validate`];
/// [`Law::new`] adds what is derived from them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SwiftParams {
    /// Fabric target of a path without hops, for a window of `fs_max_cwnd_pkts` or more.
    pub base_target_ns: u32,
    /// Target added per hop of the path.
    pub per_hop_ns: u32,
    /// Hops (switches) of the path, for every flow (the paper reads them off the TTL).
    pub hops: u32,
    /// Largest flow-scaling term; 0: no flow scaling.
    pub fs_range_ns: u32,
    /// Window at and below which flow scaling adds all of `fs_range_ns`.
    pub fs_min_cwnd_mpkts: u32,
    /// Window at and above which flow scaling adds nothing.
    pub fs_max_cwnd_pkts: u32,
    /// Additive increase per RTT.
    pub ai_mpkts: u32,
    /// Multiplicative decrease per unit of relative excess delay.
    pub beta_md_ppm: u32,
    /// Largest fraction of a window one decrease removes.
    pub max_mdf_ppm: u32,
    /// Smallest window.
    pub min_cwnd_mpkts: u32,
    /// Largest window.
    pub max_cwnd_pkts: u32,
    /// Retransmission timeouts in a row that set the windows to `min_cwnd`.
    pub retx_reset_threshold: u32,
    /// Endpoint target; 0: no endpoint window.
    pub endpoint_target_ns: u32,
}

impl SwiftParams {
    /// The module's defaults ([`spec`]), for a 10 Gbit/s datacenter host whose stamps are
    /// software stamps in the kernel (network RTT of an idle path 15-30 us):
    ///
    /// - `base_target_ns` 50 us: the idle network RTT plus 20-35 us of queue (16-28 MTU
    ///   packets at 10 Gbit/s), the same allowance DX's headroom gives software stamps.
    ///   With NIC stamps and a known RTT the paper's targets are tighter (a few us of
    ///   queue per hop);
    /// - `per_hop_ns` 1 us, about one MTU packet of queue per switch at 10 Gbit/s, and
    ///   `hops` 0: until the option echoes the TTL the base target covers the path;
    /// - `fs_range_ns` 50 us (the base target again), `fs_min_cwnd_mpkts` 0.1 packet,
    ///   `fs_max_cwnd_pkts` 100: at 10 Gbit/s and ~50 us a fair share of one packet means
    ///   about 40 flows, where the target grows by 16 us; at 0.1 packet (400 flows) by the
    ///   whole 50 us; above 100 packets (more than the path's BDP: one flow) not at all;
    /// - `ai_mpkts` 1 packet per RTT (Reno's), `beta_md_ppm` 0.8 and `max_mdf_ppm` 0.5 (a
    ///   decrease never cuts more than a loss does);
    /// - `min_cwnd_mpkts` 0.01 packet: one packet every 100 RTTs, 2 ms at 20 us and 20 ms
    ///   at 200 us, still within the 40 ms of a receiver's delayed-ACK timer; 1,600 flows
    ///   fit a 10 Gbit/s incast at 20 us;
    /// - `max_cwnd_pkts` 10,000 (the stack's `snd_cwnd_clamp` also applies);
    /// - `retx_reset_threshold` 3: one timeout halves, a second quarters, a third in a row
    ///   means halving does not shed the load (an incast) and the windows go to the floor;
    /// - `endpoint_target_ns` 100 us: the receiver's stack holds an ACK a few microseconds
    ///   when it keeps up; tens of microseconds more are its queues.
    pub const DEFAULT: SwiftParams = SwiftParams {
        base_target_ns: spec::BASE_TARGET_NS.default,
        per_hop_ns: spec::PER_HOP_NS.default,
        hops: spec::HOPS.default,
        fs_range_ns: spec::FS_RANGE_NS.default,
        fs_min_cwnd_mpkts: spec::FS_MIN_CWND_MPKTS.default,
        fs_max_cwnd_pkts: spec::FS_MAX_CWND_PKTS.default,
        ai_mpkts: spec::AI_MPKTS.default,
        beta_md_ppm: spec::BETA_MD_PPM.default,
        max_mdf_ppm: spec::MAX_MDF_PPM.default,
        min_cwnd_mpkts: spec::MIN_CWND_MPKTS.default,
        max_cwnd_pkts: spec::MAX_CWND_PKTS.default,
        retx_reset_threshold: spec::RETX_RESET_THRESHOLD.default,
        endpoint_target_ns: spec::ENDPOINT_TARGET_NS.default,
    };

    /// Checks every parameter against its range ([`spec`]), narrowed where another
    /// parameter bounds it. On failure returns the first offending parameter's name, its
    /// value and its allowed range.
    pub fn validate(&self) -> Result<(), ParamError> {
        spec::BASE_TARGET_NS.check(self.base_target_ns)?;
        spec::PER_HOP_NS.check(self.per_hop_ns)?;
        spec::HOPS.check(self.hops)?;
        spec::FS_RANGE_NS.check(self.fs_range_ns)?;
        spec::FS_MAX_CWND_PKTS.check(self.fs_max_cwnd_pkts)?;
        // Strictly below fs_max_cwnd: the curve needs two distinct ends.
        let fs_max_mpkts = self.fs_max_cwnd_pkts * 1000;
        spec::FS_MIN_CWND_MPKTS.check_in(self.fs_min_cwnd_mpkts, 0, fs_max_mpkts - 1)?;
        spec::AI_MPKTS.check(self.ai_mpkts)?;
        spec::BETA_MD_PPM.check(self.beta_md_ppm)?;
        spec::MAX_MDF_PPM.check(self.max_mdf_ppm)?;
        spec::MAX_CWND_PKTS.check(self.max_cwnd_pkts)?;
        let max_mpkts = self.max_cwnd_pkts * 1000;
        spec::MIN_CWND_MPKTS.check_in(self.min_cwnd_mpkts, 0, max_mpkts)?;
        spec::RETX_RESET_THRESHOLD.check(self.retx_reset_threshold)?;
        spec::ENDPOINT_TARGET_NS.check(self.endpoint_target_ns)?;
        Ok(())
    }
}

/// `tcp_swift`'s module parameters, one per [`SwiftParams`] field and named as it: the
/// default and range of each, written only here ([`super::param`]); the defaults are
/// explained at [`SwiftParams::DEFAULT`]. A range that another parameter bounds is written
/// at its widest; [`SwiftParams::validate`] narrows it.
pub mod spec {
    use super::{
        ParamSpec, MAX_AI_MPKTS, MAX_CWND_LIMIT_PKTS, MAX_HOPS, MAX_PER_HOP_NS,
        MAX_RETX_RESET_THRESHOLD, MAX_TARGET_NS, PPM,
    };

    pub const BASE_TARGET_NS: ParamSpec =
        ParamSpec::new("base_target_ns", 50_000, 1, MAX_TARGET_NS);
    pub const PER_HOP_NS: ParamSpec = ParamSpec::new("per_hop_ns", 1_000, 0, MAX_PER_HOP_NS);
    pub const HOPS: ParamSpec = ParamSpec::new("hops", 0, 0, MAX_HOPS);
    /// 0: no flow scaling.
    pub const FS_RANGE_NS: ParamSpec = ParamSpec::new("fs_range_ns", 50_000, 0, MAX_TARGET_NS);
    /// Below `fs_max_cwnd_pkts`.
    pub const FS_MIN_CWND_MPKTS: ParamSpec =
        ParamSpec::new("fs_min_cwnd_mpkts", 100, 1, MAX_CWND_LIMIT_PKTS * 1000 - 1);
    pub const FS_MAX_CWND_PKTS: ParamSpec =
        ParamSpec::new("fs_max_cwnd_pkts", 100, 1, MAX_CWND_LIMIT_PKTS);
    pub const AI_MPKTS: ParamSpec = ParamSpec::new("ai_mpkts", 1000, 1, MAX_AI_MPKTS);
    pub const BETA_MD_PPM: ParamSpec = ParamSpec::new("beta_md_ppm", 800_000, 1, PPM as u32);
    pub const MAX_MDF_PPM: ParamSpec = ParamSpec::new("max_mdf_ppm", 500_000, 1, PPM as u32);
    /// At most `max_cwnd_pkts`.
    pub const MIN_CWND_MPKTS: ParamSpec =
        ParamSpec::new("min_cwnd_mpkts", 10, 1, MAX_CWND_LIMIT_PKTS * 1000);
    pub const MAX_CWND_PKTS: ParamSpec =
        ParamSpec::new("max_cwnd_pkts", 10_000, 1, MAX_CWND_LIMIT_PKTS);
    pub const RETX_RESET_THRESHOLD: ParamSpec =
        ParamSpec::new("retx_reset_threshold", 3, 1, MAX_RETX_RESET_THRESHOLD);
    /// 0: no endpoint window.
    pub const ENDPOINT_TARGET_NS: ParamSpec =
        ParamSpec::new("endpoint_target_ns", 100_000, 0, MAX_TARGET_NS);

    /// Not a [`SwiftParams`] field: it selects the ops the module registers
    /// (`ecn_share.rs`).
    pub const ECN_SHARE: ParamSpec = super::super::ecn_share::ECN_SHARE;

    /// Every parameter, in the module's order.
    pub const ALL: [ParamSpec; 14] = [
        BASE_TARGET_NS,
        PER_HOP_NS,
        HOPS,
        FS_RANGE_NS,
        FS_MIN_CWND_MPKTS,
        FS_MAX_CWND_PKTS,
        AI_MPKTS,
        BETA_MD_PPM,
        MAX_MDF_PPM,
        MIN_CWND_MPKTS,
        MAX_CWND_PKTS,
        RETX_RESET_THRESHOLD,
        ENDPOINT_TARGET_NS,
        ECN_SHARE,
    ];
}

/// `floor(sqrt(n))`, bit by bit.
pub fn isqrt(n: u64) -> u64 {
    let (mut rem, mut root) = (n, 0u64);
    let mut bit = 1u64 << 62;
    while bit > rem {
        bit >>= 2;
    }
    while bit != 0 {
        if rem >= root + bit {
            rem -= root + bit;
            root = (root >> 1) + bit;
        } else {
            root >>= 1;
        }
        bit >>= 2;
    }
    root
}

/// `2^20 / sqrt(w)` for a window `w_fp` of at least one 2^-20 packet and at most 2^44
/// packets, rounded down: `2^40 / sqrt(w_fp 2^20)`.
pub fn inv_sqrt(w_fp: u64) -> u64 {
    let w_fp = w_fp.clamp(1, 1 << 44);
    (ISQRT_ONE << 20) / isqrt(w_fp << 20)
}

/// Milli-packets as a window, rounded to nearest, at least 1.
pub const fn mpkts_to_fp(mpkts: u32) -> u64 {
    let fp = (mpkts as u64 * FP_ONE + 500) / 1000;
    if fp == 0 {
        1
    } else {
        fp
    }
}

/// A window in milli-packets, rounded down (saturating).
pub fn fp_to_mpkts(w_fp: u64) -> u64 {
    mul_div(w_fp, 1000, FP_ONE)
}

/// Validated parameters and what the law derives from them once, at load.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Law {
    /// The parameters.
    pub p: SwiftParams,
    min_cwnd_fp: u64,
    max_cwnd_fp: u64,
    ai_fp: u64,
    /// `base_target + hops * per_hop`.
    fabric_base_ns: u32,
    fs_min_fp: u64,
    fs_max_fp: u64,
    /// Flow scaling `fs(w) = alpha / sqrt(w) + beta`: with `s(w) = 2^20 / sqrt(w)`,
    /// `alpha = fs_range / (s(fs_min) - s(fs_max))` per unit of `s`, and
    /// `beta = -alpha s(fs_max)`; kept as the two `s` values that define them.
    fs_isqrt_max: u64,
    fs_isqrt_span: u64,
}

impl Law {
    /// The law of valid parameters `p`; the first invalid parameter otherwise.
    pub fn new(p: &SwiftParams) -> Result<Law, ParamError> {
        p.validate()?;
        Ok(Law::derive(p))
    }

    /// The law of [`SwiftParams::DEFAULT`] (valid: tested).
    pub fn default_law() -> Law {
        Law::derive(&SwiftParams::DEFAULT)
    }

    /// What the law derives from `p`; no overflow for any `p`, but only a valid `p` gives
    /// the documented law.
    fn derive(p: &SwiftParams) -> Law {
        let fs_min_fp = mpkts_to_fp(p.fs_min_cwnd_mpkts);
        let fs_max_fp = u64::from(p.fs_max_cwnd_pkts) << FP_SHIFT;
        let fs_isqrt_max = inv_sqrt(fs_max_fp);
        Law {
            p: *p,
            min_cwnd_fp: mpkts_to_fp(p.min_cwnd_mpkts),
            max_cwnd_fp: (u64::from(p.max_cwnd_pkts) << FP_SHIFT).max(1),
            ai_fp: mpkts_to_fp(p.ai_mpkts),
            // Below 2^32 for valid parameters (1e8 + 64 * 1e6).
            fabric_base_ns: p
                .base_target_ns
                .saturating_add(p.hops.saturating_mul(p.per_hop_ns)),
            fs_min_fp,
            fs_max_fp,
            fs_isqrt_max,
            fs_isqrt_span: inv_sqrt(fs_min_fp).saturating_sub(fs_isqrt_max),
        }
    }

    /// Smallest window.
    pub fn min_cwnd_fp(&self) -> u64 {
        self.min_cwnd_fp
    }

    /// Largest window.
    pub fn max_cwnd_fp(&self) -> u64 {
        self.max_cwnd_fp
    }

    /// `w_fp` within `[min_cwnd, max_cwnd]`.
    pub fn clamp(&self, w_fp: u64) -> u64 {
        w_fp.clamp(self.min_cwnd_fp, self.max_cwnd_fp)
    }

    /// Flow scaling `fs(w)` (section 3.3): `fs_range` at and below `fs_min_cwnd`, 0 at and
    /// above `fs_max_cwnd`, `alpha / sqrt(w) + beta` between (rounded down; never above
    /// `fs_range`, non-increasing in `w`).
    pub fn flow_scaling_ns(&self, w_fp: u64) -> u32 {
        let range = u64::from(self.p.fs_range_ns);
        if w_fp <= self.fs_min_fp {
            return self.p.fs_range_ns;
        }
        if w_fp >= self.fs_max_fp || self.fs_isqrt_span == 0 {
            return 0;
        }
        let above = inv_sqrt(w_fp).saturating_sub(self.fs_isqrt_max);
        // above, span <= 2^25 (w >= 0.001 packet), range < 2^27: exact.
        mul_div(above, range, self.fs_isqrt_span).min(range) as u32
    }

    /// Fabric target for a fabric window `fcwnd_fp`: `base_target + hops * per_hop +
    /// fs(fcwnd)`.
    pub fn fabric_target_ns(&self, fcwnd_fp: u64) -> u32 {
        self.fabric_base_ns
            .saturating_add(self.flow_scaling_ns(fcwnd_fp))
    }

    /// One window's AIMD step on one ACK (Algorithm 1): returns the new window and what
    /// was done. `may_decrease`: the window's last decrease is at least an RTT old.
    pub fn step(
        &self,
        w_fp: u64,
        delay_ns: u32,
        target_ns: u32,
        acked_pkts: u32,
        may_decrease: bool,
    ) -> (u64, Step) {
        let w = self.clamp(w_fp);
        if delay_ns < target_ns {
            // ai_fp * acked <= 2^27 * 2^16; times 2^20 / w by mul_div, exact (w <= 2^40).
            let gain = self.ai_fp * u64::from(acked_pkts.min(MAX_ACKED_PKTS));
            let add = if w >= FP_ONE {
                mul_div(gain, FP_ONE, w)
            } else {
                gain
            };
            return (self.clamp(w.saturating_add(add)), Step::Increase);
        }
        if !may_decrease {
            return (w, Step::Held);
        }
        (
            self.decrease(w, md_keep_ppm(&self.p, delay_ns, target_ns)),
            Step::Decrease,
        )
    }

    /// `w` times `keep_ppm`, within the bounds.
    fn decrease(&self, w_fp: u64, keep_ppm: u64) -> u64 {
        // w <= 2^40, keep <= 1e6: exact.
        self.clamp(mul_div(w_fp, keep_ppm, PPM))
    }
}

/// The fraction of a window a decrease keeps at delay `delay_ns` over target `target_ns`:
/// `max(1 - beta_md (d - t) / d, 1 - max_mdf)`, in ppm, rounded up (the cut rounded down).
pub fn md_keep_ppm(p: &SwiftParams, delay_ns: u32, target_ns: u32) -> u64 {
    let d = u64::from(delay_ns.max(1));
    let excess = d.saturating_sub(target_ns.into());
    // (d - t) / d in ppm, then times beta: both below 1e6 * 1e6.
    let excess_ppm = mul_div(excess, PPM, d);
    let cut_ppm = excess_ppm * u64::from(p.beta_md_ppm) / PPM;
    let floor_ppm = PPM - u64::from(p.max_mdf_ppm).min(PPM);
    (PPM - cut_ppm.min(PPM)).max(floor_ppm)
}

/// What one window did on an event; the tracepoint's codes (docs/swift.md).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum Step {
    /// Nothing: no sample, or the window is off.
    None = 0,
    /// Additive increase: the delay was below the target.
    Increase = 1,
    /// Multiplicative decrease on the delay (possibly by nothing, at the target).
    Decrease = 2,
    /// At or above the target, but the window decreased less than an RTT ago.
    Held = 3,
    /// Cut by `max_mdf`: fast recovery or a timeout.
    LossCut = 4,
    /// A loss within an RTT of the last decrease: not cut again.
    LossHeld = 5,
    /// `retx_reset_threshold` timeouts in a row: set to `min_cwnd`.
    Reset = 6,
    /// Cut by `alpha / 2` at the end of a window with ECN marks (`ecn_share` 1).
    EcnCut = 7,
}

/// What an ACK or a loss event did to each window.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Action {
    /// The fabric window's step.
    pub fabric: Step,
    /// The endpoint window's step.
    pub endpoint: Step,
}

impl Action {
    const NONE: Action = Action {
        fabric: Step::None,
        endpoint: Step::None,
    };

    /// The two steps as one code: fabric in the low 4 bits, endpoint in the next 4.
    pub fn code(&self) -> u32 {
        u32::from(self.fabric as u8) | (u32::from(self.endpoint as u8) << 4)
    }
}

/// Per-flow Swift state (64 bytes). Built by [`Swift::new`]; an all-zero state (the
/// socket's zeroed area before `init`) is safe to use: its windows read as `min_cwnd`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[cfg_attr(MODULE, derive(pin_init::Zeroable))]
pub struct Swift {
    fcwnd_fp: u64,
    ecwnd_fp: u64,
    /// Clock of each window's last decrease.
    fabric_decreased_ns: u64,
    endpoint_decreased_ns: u64,
    /// The last usable sample's fabric delay, endpoint delay (0: none) and their sum.
    fabric_ns: u32,
    endpoint_ns: u32,
    rtt_ns: u32,
    /// The fabric target the last sample was held to.
    target_ns: u32,
    /// Timeouts in a row, without an ACK between them (saturating).
    timeouts: u32,
    /// Samples used and ignored, modulo 2^32.
    samples: u32,
    ignored: u32,
    /// [`SampleSource::code`] of the last sample used; 0: none yet.
    source: u8,
    /// Whether the endpoint window is on (the last sample had the option's delays and the
    /// endpoint target is not 0).
    endpoint_on: bool,
}

// The kernel module keeps this with its own data in the 104-byte `icsk_ca_priv`.
const _: () = assert!(core::mem::size_of::<Swift>() <= 64);

impl Swift {
    /// A flow starting with both windows at `init_cwnd_pkts` (the stack's initial window).
    pub fn new(law: &Law, init_cwnd_pkts: u32) -> Swift {
        let w = law.clamp(u64::from(init_cwnd_pkts) << FP_SHIFT);
        Swift {
            fcwnd_fp: w,
            ecwnd_fp: w,
            endpoint_on: law.p.endpoint_target_ns != 0,
            ..Swift::default()
        }
    }

    fn may_decrease(&self, now_ns: u64, decreased_ns: u64) -> bool {
        // A clock behind the last decrease went back: allow.
        now_ns < decreased_ns || now_ns - decreased_ns >= u64::from(self.rtt_ns)
    }

    /// One ACK of `acked_pkts` packets at `now_ns`, with its delays if it had any. See the
    /// module doc.
    pub fn on_ack(
        &mut self,
        law: &Law,
        now_ns: u64,
        acked_pkts: u32,
        sample: Option<&Sample>,
    ) -> Action {
        self.timeouts = 0;
        let Some(s) = sample else {
            return Action::NONE;
        };
        if s.fabric_ns == 0 || s.fabric_ns > MAX_DELAY_NS {
            self.ignored = self.ignored.wrapping_add(1);
            return Action::NONE;
        }
        let endpoint_ns = match s.endpoint_ns {
            Some(e) if e <= MAX_DELAY_NS && s.source != SampleSource::KernelRtt => Some(e),
            _ => None,
        };
        self.samples = self.samples.wrapping_add(1);
        self.source = s.source.code();
        self.fabric_ns = s.fabric_ns;
        if endpoint_ns.is_some() || s.source == SampleSource::KernelRtt {
            self.endpoint_ns = endpoint_ns.unwrap_or(0);
        }
        self.rtt_ns = self.fabric_ns.saturating_add(self.endpoint_ns);
        let fcwnd = law.clamp(self.fcwnd_fp);
        self.target_ns = law.fabric_target_ns(fcwnd);
        let may = self.may_decrease(now_ns, self.fabric_decreased_ns);
        let (next, fabric) = law.step(fcwnd, s.fabric_ns, self.target_ns, acked_pkts, may);
        if next < fcwnd {
            self.fabric_decreased_ns = now_ns;
        }
        self.fcwnd_fp = next;
        let was_on = self.endpoint_on;
        self.endpoint_on = law.p.endpoint_target_ns != 0 && s.source != SampleSource::KernelRtt;
        let endpoint = match endpoint_ns {
            Some(e) if self.endpoint_on => {
                let ecwnd = if was_on {
                    law.clamp(self.ecwnd_fp)
                } else {
                    self.fcwnd_fp
                };
                let may = self.may_decrease(now_ns, self.endpoint_decreased_ns);
                let target = law.p.endpoint_target_ns;
                let (next, step) = law.step(ecwnd, e, target, acked_pkts, may);
                if next < ecwnd {
                    self.endpoint_decreased_ns = now_ns;
                }
                // Growth stops at the fabric window: above it the endpoint window does not
                // bind, and unchecked it would run to max_cwnd while the fabric one limits.
                self.ecwnd_fp = if next > ecwnd {
                    next.min(self.fcwnd_fp.max(ecwnd))
                } else {
                    next
                };
                step
            }
            _ => {
                if !self.endpoint_on {
                    // Off: it follows the fabric window, to start from there.
                    self.ecwnd_fp = self.fcwnd_fp;
                }
                Step::None
            }
        };
        Action { fabric, endpoint }
    }

    /// A cut by `max_mdf` of each window (at most once per RTT), or to `min_cwnd` when
    /// `reset`.
    fn loss_cut(&mut self, law: &Law, now_ns: u64, reset: bool) -> Action {
        let keep_ppm = PPM - u64::from(law.p.max_mdf_ppm).min(PPM);
        let cut = |w: &mut u64, decreased: &mut u64, may: bool| {
            let before = law.clamp(*w);
            let (after, step) = if reset {
                (law.min_cwnd_fp, Step::Reset)
            } else if may {
                (law.decrease(before, keep_ppm), Step::LossCut)
            } else {
                (before, Step::LossHeld)
            };
            if after < before || reset {
                *decreased = now_ns;
            }
            *w = after;
            step
        };
        let may_f = self.may_decrease(now_ns, self.fabric_decreased_ns);
        let may_e = self.may_decrease(now_ns, self.endpoint_decreased_ns);
        let fabric = cut(&mut self.fcwnd_fp, &mut self.fabric_decreased_ns, may_f);
        let endpoint = if self.endpoint_on {
            cut(&mut self.ecwnd_fp, &mut self.endpoint_decreased_ns, may_e)
        } else {
            self.ecwnd_fp = self.fcwnd_fp;
            Step::None
        };
        Action { fabric, endpoint }
    }

    /// The stack entered fast recovery (or another window reduction: an ECN echo): each
    /// window is cut by `max_mdf`, at most once per RTT (section 3.5).
    pub fn on_fast_recovery(&mut self, law: &Law, now_ns: u64) -> Action {
        self.timeouts = 0;
        self.loss_cut(law, now_ns, false)
    }

    /// TCP entered CWR (an ECN echo, or local congestion): `share` false (`ecn_share` 0,
    /// the default), the fast recovery cut ([`Swift::on_fast_recovery`]); `share` true,
    /// nothing: the marks are answered by [`Swift::on_ecn_ack`].
    pub fn on_cwr(&mut self, law: &Law, now_ns: u64, share: bool) -> Option<Action> {
        (!share).then(|| self.on_fast_recovery(law, now_ns))
    }

    /// An ACK's ECN step. `share` `None` (`ecn_share` 0): nothing, an echo is answered when
    /// TCP enters CWR ([`Swift::on_cwr`]). `Some`: a window with marks cuts the fabric
    /// window by `alpha / 2` when it ends ([`Swift::on_ecn_share`]).
    pub fn on_ecn_ack(
        &mut self,
        law: &Law,
        now_ns: u64,
        share: Option<&mut super::ecn_share::EcnShare>,
        a: &super::ecn_share::EcnAck,
    ) -> Option<Action> {
        let alpha = share?.cut_on(a)?;
        Some(self.on_ecn_share(law, now_ns, alpha))
    }

    /// With `ecn_share` 1: a window whose packets the peer echoed ECN marks for ended, and
    /// `alpha` is the marked fraction's moving average
    /// ([`EcnShare`](super::ecn_share::EcnShare)). The fabric window (the marks are the
    /// fabric's) is cut by `alpha / 2`, as DCTCP cuts its window, within the bounds; once
    /// per window, whatever the last decrease (it counts as one for the delay rule). The
    /// endpoint window is the receiver's and keeps its value.
    pub fn on_ecn_share(&mut self, law: &Law, now_ns: u64, alpha: u32) -> Action {
        let before = law.clamp(self.fcwnd_fp);
        let after = law.clamp(super::ecn_share::keep(before, alpha));
        if after < before {
            self.fabric_decreased_ns = now_ns;
        }
        self.fcwnd_fp = after;
        if !self.endpoint_on {
            self.ecwnd_fp = self.fcwnd_fp;
        }
        Action {
            fabric: Step::EcnCut,
            endpoint: Step::None,
        }
    }

    /// A retransmission timeout: as fast recovery, but the `retx_reset_threshold`-th in a
    /// row sets the windows to `min_cwnd` (section 3.5).
    pub fn on_timeout(&mut self, law: &Law, now_ns: u64) -> Action {
        self.timeouts = self.timeouts.saturating_add(1);
        let reset = self.timeouts >= law.p.retx_reset_threshold;
        self.loss_cut(law, now_ns, reset)
    }

    /// The window: `min(fcwnd, ecwnd)` (the fabric window alone when the endpoint window is
    /// off), within `[min_cwnd, max_cwnd]`.
    pub fn cwnd_fp(&self, law: &Law) -> u64 {
        let f = law.clamp(self.fcwnd_fp);
        if self.endpoint_on {
            f.min(law.clamp(self.ecwnd_fp))
        } else {
            f
        }
    }

    /// The rate at which the window leaves in one RTT, `cwnd * mss / RTT`, in bytes per
    /// second (rounded down, saturating); `None` before the first sample (no RTT).
    pub fn paced_rate_bytes_per_sec(&self, law: &Law, mss_bytes: u32) -> Option<u64> {
        if self.rtt_ns == 0 {
            return None;
        }
        rate_bytes_per_sec(self.cwnd_fp(law), mss_bytes, self.rtt_ns)
    }

    /// Fabric window.
    pub fn fcwnd_fp(&self) -> u64 {
        self.fcwnd_fp
    }

    /// Endpoint window (equal to the fabric window while it is off).
    pub fn ecwnd_fp(&self) -> u64 {
        self.ecwnd_fp
    }

    /// Whether the endpoint window is on.
    pub fn endpoint_on(&self) -> bool {
        self.endpoint_on
    }

    /// The last usable sample's fabric delay (0 before any).
    pub fn fabric_ns(&self) -> u32 {
        self.fabric_ns
    }

    /// The last endpoint delay measured (0 before any, and while the endpoint is off).
    pub fn endpoint_ns(&self) -> u32 {
        self.endpoint_ns
    }

    /// The RTT the law uses: the last fabric plus endpoint delay (0 before any sample).
    pub fn rtt_ns(&self) -> u32 {
        self.rtt_ns
    }

    /// The fabric target the last sample was held to (0 before any).
    pub fn target_ns(&self) -> u32 {
        self.target_ns
    }

    /// Timeouts in a row.
    pub fn timeouts(&self) -> u32 {
        self.timeouts
    }

    /// Source of the last sample used; `None` before any.
    pub fn source(&self) -> Option<SampleSource> {
        SampleSource::from_code(self.source)
    }

    /// Samples used so far, modulo 2^32.
    pub fn samples(&self) -> u32 {
        self.samples
    }

    /// Samples ignored as absurd so far, modulo 2^32.
    pub fn ignored_samples(&self) -> u32 {
        self.ignored
    }
}

/// `w * mss / rtt` in bytes per second, rounded down, saturating; `None` for `rtt_ns` 0.
pub fn rate_bytes_per_sec(w_fp: u64, mss_bytes: u32, rtt_ns: u32) -> Option<u64> {
    if rtt_ns == 0 {
        return None;
    }
    // w * mss < 2^40 * 2^32 may exceed 2^64 only for absurd windows: saturate.
    let bytes_fp = w_fp.saturating_mul(u64::from(mss_bytes));
    Some(mul_div(bytes_fp, 1_000_000_000, rtt_ns.into()) >> FP_SHIFT)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::Rng;

    extern crate std;
    use std::vec::Vec;

    const P: SwiftParams = SwiftParams::DEFAULT;
    const US: u64 = 1000;

    fn law() -> Law {
        Law::new(&P).expect("defaults are valid")
    }

    /// `ecn_share` 0: on any sequence of CWR entries and ACKs with marks, the windows are
    /// those of the code before `ecn_share`: CWR is the fast recovery cut, echoes alone
    /// nothing.
    #[test]
    fn ecn_share_off_answers_marks_as_before() {
        use crate::ecn_share::EcnAck;
        let l = law();
        let mut rng = Rng::new(0x5ec0);
        for _ in 0..500 {
            let mut s = Swift::new(&l, rng.range(1, 200) as u32);
            let _ = s.on_ack(&l, 0, 1, Some(&stamped(20_000, 10_000)));
            let mut before = s;
            let (mut now, mut delivered, mut ce) = (0u64, 0u32, 0u32);
            for _ in 0..300 {
                now += rng.range(0, 100) * US;
                if rng.range(0, 3) == 0 {
                    let a = s.on_cwr(&l, now, false);
                    assert_eq!(a, Some(before.on_fast_recovery(&l, now)));
                } else {
                    delivered += rng.range(0, 20) as u32;
                    ce += rng.range(0, 5) as u32;
                    let a = EcnAck {
                        ece: true,
                        in_cwr: rng.range(0, 1) == 1,
                        delivered_pkts: delivered,
                        delivered_ce_pkts: ce,
                        in_flight_pkts: rng.range(0, 30) as u32,
                    };
                    assert_eq!(s.on_ecn_ack(&l, now, None, &a), None);
                }
                assert_eq!(s, before);
            }
        }
    }

    /// `ecn_share` 1: CWR does not cut; a window with marks cuts the fabric window by
    /// `alpha / 2` when it ends, once; the endpoint window keeps its value.
    #[test]
    fn ecn_share_on_cuts_the_fabric_window_once_per_marked_window() {
        use crate::ecn_share::{keep, EcnAck, EcnShare};
        let l = law();
        let mut s = Swift::new(&l, 100);
        let _ = s.on_ack(&l, 0, 1, Some(&stamped(20_000, 10_000)));
        let (f, e) = (s.fcwnd_fp(), s.ecwnd_fp());
        assert_eq!(s.on_cwr(&l, 1000, true), None);
        assert_eq!((s.fcwnd_fp(), s.ecwnd_fp()), (f, e));
        let mut share = EcnShare::new(0, 0);
        let ack = |delivered, ce| EcnAck {
            ece: true,
            in_cwr: true,
            delivered_pkts: delivered,
            delivered_ce_pkts: ce,
            in_flight_pkts: 100,
        };
        assert_eq!(s.on_ecn_ack(&l, 2000, Some(&mut share), &ack(99, 99)), None);
        let a = s.on_ecn_ack(&l, 3000, Some(&mut share), &ack(100, 99));
        assert_eq!(a.map(|a| a.code()), Some(Step::EcnCut as u32));
        // alpha stays 1.0 (99 of 100 marked: 1024 - 64 + 63): halved, less a rounding.
        assert_eq!(share.alpha(), 1023);
        assert_eq!(s.fcwnd_fp(), keep(f, 1023));
        assert_eq!(s.ecwnd_fp(), e);
        // The next window without marks: no cut.
        assert_eq!(
            s.on_ecn_ack(&l, 4000, Some(&mut share), &ack(200, 99)),
            None
        );
        assert_eq!(s.fcwnd_fp(), keep(f, 1023));
        // Cut to the floor at most.
        for i in 0..3000 {
            let _ = s.on_ecn_ack(
                &l,
                5000,
                Some(&mut share),
                &ack(300 + 100 * i, 100 + 100 * i),
            );
        }
        assert_eq!(s.cwnd_fp(&l), l.min_cwnd_fp());
    }

    fn pkts(w: f64) -> u64 {
        (w * FP_ONE as f64).round() as u64
    }

    fn stamped(fabric_ns: u32, endpoint_ns: u32) -> Sample {
        Sample {
            source: SampleSource::Software,
            fabric_ns,
            endpoint_ns: Some(endpoint_ns),
        }
    }

    fn kernel_rtt(rtt_ns: u32) -> Sample {
        Sample {
            source: SampleSource::KernelRtt,
            fabric_ns: rtt_ns,
            endpoint_ns: None,
        }
    }

    #[test]
    fn defaults_are_valid_and_the_state_small() {
        crate::param::assert_consistent(&spec::ALL);
        assert_eq!(P.validate(), Ok(()));
        assert_eq!(Law::new(&P), Ok(Law::default_law()));
        assert!(core::mem::size_of::<Swift>() <= 64);
        // The zeroed state (before init): windows at the floor, no RTT, no pacing.
        let l = law();
        let z = Swift::default();
        assert_eq!(z.cwnd_fp(&l), l.min_cwnd_fp());
        assert_eq!(z.paced_rate_bytes_per_sec(&l, 1448), None);
        assert_eq!(z.source(), None);
    }

    #[test]
    fn invalid_params_name_the_parameter_and_range() {
        let err = |p: SwiftParams| p.validate().unwrap_err();
        assert_eq!(
            err(SwiftParams {
                base_target_ns: 0,
                ..P
            }),
            ParamError {
                name: "base_target_ns",
                value: 0,
                min: 1,
                max: MAX_TARGET_NS
            }
        );
        // fs_min_cwnd must lie below fs_max_cwnd.
        let e = err(SwiftParams {
            fs_min_cwnd_mpkts: 100_000,
            ..P
        });
        assert_eq!((e.name, e.min, e.max), ("fs_min_cwnd_mpkts", 1, 99_999));
        // min_cwnd at most max_cwnd.
        let e = err(SwiftParams {
            min_cwnd_mpkts: 2001,
            max_cwnd_pkts: 2,
            ..P
        });
        assert_eq!((e.name, e.min, e.max), ("min_cwnd_mpkts", 1, 2000));
        for max_mdf_ppm in [0, 1_000_001] {
            assert_eq!(err(SwiftParams { max_mdf_ppm, ..P }).name, "max_mdf_ppm");
        }
        for (p, name) in [
            (SwiftParams { hops: 65, ..P }, "hops"),
            (SwiftParams { ai_mpkts: 0, ..P }, "ai_mpkts"),
            (
                SwiftParams {
                    beta_md_ppm: 0,
                    ..P
                },
                "beta_md_ppm",
            ),
            (
                SwiftParams {
                    retx_reset_threshold: 0,
                    ..P
                },
                "retx_reset_threshold",
            ),
            (
                SwiftParams {
                    max_cwnd_pkts: MAX_CWND_LIMIT_PKTS + 1,
                    ..P
                },
                "max_cwnd_pkts",
            ),
            (
                SwiftParams {
                    per_hop_ns: MAX_PER_HOP_NS + 1,
                    ..P
                },
                "per_hop_ns",
            ),
            (
                SwiftParams {
                    endpoint_target_ns: MAX_TARGET_NS + 1,
                    ..P
                },
                "endpoint_target_ns",
            ),
        ] {
            assert_eq!(err(p).name, name);
            assert_eq!(Law::new(&p).unwrap_err().name, name);
        }
    }

    #[test]
    fn isqrt_is_floor_sqrt() {
        let mut rng = Rng::new(0x5a);
        let check = |n: u64| {
            let r = isqrt(n);
            assert!(u128::from(r) * u128::from(r) <= u128::from(n), "{n}");
            assert!(u128::from(r + 1) * u128::from(r + 1) > u128::from(n), "{n}");
        };
        for n in [
            0,
            1,
            2,
            3,
            4,
            15,
            16,
            17,
            u64::MAX,
            u64::MAX - 1,
            1 << 62,
            (1 << 62) - 1,
        ] {
            check(n);
        }
        for _ in 0..100_000 {
            let n = rng.next_u64() >> rng.range(0, 63);
            check(n);
        }
        // 2^20 / sqrt(w): one packet is 2^20, four packets half of it, a quarter twice.
        assert_eq!(inv_sqrt(FP_ONE), 1 << 20);
        assert_eq!(inv_sqrt(4 * FP_ONE), 1 << 19);
        assert_eq!(inv_sqrt(FP_ONE / 4), 1 << 21);
    }

    #[test]
    fn flow_scaling_at_its_ends_and_monotone() {
        let l = law();
        let range = P.fs_range_ns;
        let fs_min = mpkts_to_fp(P.fs_min_cwnd_mpkts);
        let fs_max = u64::from(P.fs_max_cwnd_pkts) << FP_SHIFT;
        assert_eq!(l.flow_scaling_ns(fs_min), range);
        assert_eq!(l.flow_scaling_ns(1), range);
        assert_eq!(l.flow_scaling_ns(0), range);
        assert_eq!(l.flow_scaling_ns(fs_max), 0);
        assert_eq!(l.flow_scaling_ns(u64::MAX), 0);
        assert!(l.flow_scaling_ns(fs_max - 1) <= 1);
        assert!(l.flow_scaling_ns(fs_min + 1) >= range - 1);
        // alpha / sqrt(w) + beta, with alpha and beta from the two ends (float reference).
        let (a_min, a_max) = (0.1f64, 100f64);
        let alpha = f64::from(range) / (1.0 / a_min.sqrt() - 1.0 / a_max.sqrt());
        let beta = -alpha / a_max.sqrt();
        for w in [0.2, 0.5, 1.0, 2.0, 10.0, 50.0, 99.0] {
            let want = alpha / f64::sqrt(w) + beta;
            let got = f64::from(l.flow_scaling_ns(pkts(w)));
            assert!((got - want).abs() <= 2.0, "w {w}: {got} vs {want}");
        }
        // Non-increasing over the whole range of windows.
        let mut prev = u32::MAX;
        let mut w = 1u64;
        while w < 1 << 42 {
            let fs = l.flow_scaling_ns(w);
            assert!(fs <= prev && fs <= range, "{w}");
            prev = fs;
            w += w / 64 + 1;
        }
        // No flow scaling at all.
        let flat = Law::new(&SwiftParams {
            fs_range_ns: 0,
            ..P
        })
        .unwrap();
        assert_eq!(flat.flow_scaling_ns(1), 0);
        assert_eq!(flat.fabric_target_ns(1), P.base_target_ns);
    }

    #[test]
    fn target_adds_hops_and_flow_scaling() {
        let p = SwiftParams {
            hops: 5,
            per_hop_ns: 2_000,
            ..P
        };
        let l = Law::new(&p).unwrap();
        // Large window: base + 5 hops.
        assert_eq!(l.fabric_target_ns(pkts(1000.0)), 50_000 + 10_000);
        // Tiny window: the whole range on top.
        assert_eq!(l.fabric_target_ns(pkts(0.01)), 60_000 + P.fs_range_ns);
        // Largest valid parts: no overflow.
        let top = SwiftParams {
            base_target_ns: MAX_TARGET_NS,
            per_hop_ns: MAX_PER_HOP_NS,
            hops: MAX_HOPS,
            fs_range_ns: MAX_TARGET_NS,
            ..P
        };
        let l = Law::new(&top).unwrap();
        assert_eq!(l.fabric_target_ns(1), 264_000_000);
    }

    #[test]
    fn additive_increase_above_and_below_one_packet() {
        let l = law();
        // w = 10: + ai / w = 0.1 packet per packet ACKed; a window's worth adds one.
        let (w, step) = l.step(pkts(10.0), 10_000, 50_000, 1, true);
        assert_eq!(step, Step::Increase);
        assert_eq!(w, pkts(10.0) + pkts(0.1) - 1); // 2^20 / 10 rounded down
        let (w, _) = l.step(pkts(10.0), 10_000, 50_000, 10, true);
        assert_eq!(w, pkts(11.0));
        // w = 0.5: + ai per packet ACKed.
        let (w, step) = l.step(pkts(0.5), 10_000, 50_000, 1, false);
        assert_eq!((w, step), (pkts(1.5), Step::Increase));
        // Half a packet of ai.
        let half = Law::new(&SwiftParams { ai_mpkts: 500, ..P }).unwrap();
        assert_eq!(half.step(pkts(0.25), 0, 1, 1, true).0, pkts(0.75));
        // A stretch ACK counts at most MAX_ACKED_PKTS packets; the ceiling holds.
        let wide = Law::new(&SwiftParams {
            max_cwnd_pkts: MAX_CWND_LIMIT_PKTS,
            ..P
        })
        .unwrap();
        let (w, _) = wide.step(pkts(0.5), 1, 50_000, u32::MAX, true);
        assert_eq!(w, pkts(0.5) + u64::from(MAX_ACKED_PKTS) * FP_ONE);
        let (w, _) = l.step(l.max_cwnd_fp(), 1, 50_000, 1, true);
        assert_eq!(w, l.max_cwnd_fp());
    }

    #[test]
    fn multiplicative_decrease_bounded_by_max_mdf() {
        let l = law();
        // Delay twice the target: keep 1 - 0.8 * 0.5 = 0.6.
        assert_eq!(md_keep_ppm(&P, 100_000, 50_000), 600_000);
        let (w, step) = l.step(pkts(10.0), 100_000, 50_000, 1, true);
        assert_eq!((w, step), (pkts(6.0), Step::Decrease));
        // 10% above: keep 1 - 0.8 * 10 / 110.
        assert_eq!(md_keep_ppm(&P, 110_000, 100_000), 927_273);
        // Far above: the bound, half.
        assert_eq!(md_keep_ppm(&P, u32::MAX, 50_000), 500_000);
        assert_eq!(
            l.step(pkts(10.0), MAX_DELAY_NS, 50_000, 1, true).0,
            pkts(5.0)
        );
        // At the target: a decrease by nothing.
        assert_eq!(md_keep_ppm(&P, 50_000, 50_000), PPM);
        assert_eq!(
            l.step(pkts(3.0), 50_000, 50_000, 1, true),
            (pkts(3.0), Step::Decrease)
        );
        // Never below min_cwnd.
        assert_eq!(
            l.step(l.min_cwnd_fp(), u32::MAX, 1, 1, true).0,
            l.min_cwnd_fp()
        );
        // Within an RTT of the last decrease: held.
        assert_eq!(
            l.step(pkts(10.0), 100_000, 50_000, 1, false),
            (pkts(10.0), Step::Held)
        );
    }

    #[test]
    fn decrease_at_most_once_per_rtt() {
        let l = law();
        let mut s = Swift::new(&l, 10);
        let now = 1_000_000 * US;
        // RTT 100 us (fabric 98 us over a 50 us target, endpoint 2 us).
        let high = stamped(98_000, 2_000);
        let a = s.on_ack(&l, now, 1, Some(&high));
        assert_eq!(a.fabric, Step::Decrease);
        let after_one = s.fcwnd_fp();
        assert!(after_one < pkts(10.0));
        for dt in [1, 50, 99] {
            let a = s.on_ack(&l, now + dt * US, 1, Some(&high));
            assert_eq!(a.fabric, Step::Held);
            assert_eq!(s.fcwnd_fp(), after_one);
        }
        // An RTT later: again.
        assert_eq!(
            s.on_ack(&l, now + 100 * US, 1, Some(&high)).fabric,
            Step::Decrease
        );
        assert!(s.fcwnd_fp() < after_one);
        // Below the target increases are not held.
        let w = s.fcwnd_fp();
        assert_eq!(
            s.on_ack(&l, now + 101 * US, 1, Some(&stamped(10_000, 1_000)))
                .fabric,
            Step::Increase
        );
        assert!(s.fcwnd_fp() > w);
        // A clock that went back allows a decrease.
        assert_eq!(s.on_ack(&l, 5, 1, Some(&high)).fabric, Step::Decrease);
    }

    #[test]
    fn endpoint_window_grows_no_further_than_the_fabric_window() {
        let l = law();
        let mut s = Swift::new(&l, 10);
        let mut now = 1_000_000 * US;
        // Fabric above its target (held or cut), endpoint delay nil: only the endpoint
        // window would grow (2,000 increases); it stays at its own 10 packets, above the
        // fabric window, and is not cut by the cap either.
        for _ in 0..2_000 {
            now += 10 * US;
            s.on_ack(&l, now, 1, Some(&stamped(200_000, 0)));
            assert!(s.ecwnd_fp() <= pkts(10.0).max(s.fcwnd_fp()));
        }
        assert!(s.fcwnd_fp() < pkts(1.0));
        assert_eq!(s.ecwnd_fp(), pkts(10.0));
        // Both below their targets, from the same window: they grow together.
        let mut s = Swift::new(&l, 2);
        for _ in 0..200 {
            now += 10 * US;
            s.on_ack(&l, now, 1, Some(&stamped(20_000, 0)));
            assert_eq!(s.ecwnd_fp(), s.fcwnd_fp());
        }
        assert!(s.fcwnd_fp() > pkts(3.0));
    }

    #[test]
    fn endpoint_window_binds_on_endpoint_delay() {
        let l = law();
        let mut s = Swift::new(&l, 20);
        let mut now = 1_000_000 * US;
        // Fabric below its target, endpoint at 300 us against 100: the endpoint window
        // falls, the fabric one grows; the window is the smaller.
        for _ in 0..5 {
            now += 400 * US;
            let a = s.on_ack(&l, now, 1, Some(&stamped(20_000, 300_000)));
            assert_eq!((a.fabric, a.endpoint), (Step::Increase, Step::Decrease));
            assert_eq!(a.code(), 1 | (2 << 4));
        }
        assert!(s.ecwnd_fp() < pkts(3.0) && s.fcwnd_fp() > pkts(20.0));
        assert_eq!(s.cwnd_fp(&l), s.ecwnd_fp());
        assert_eq!(
            (s.fabric_ns(), s.endpoint_ns(), s.rtt_ns()),
            (20_000, 300_000, 320_000)
        );
        // Endpoint target 0: no endpoint window.
        let off = Law::new(&SwiftParams {
            endpoint_target_ns: 0,
            ..P
        })
        .unwrap();
        let mut s = Swift::new(&off, 20);
        let a = s.on_ack(&off, now, 1, Some(&stamped(20_000, 300_000)));
        assert_eq!(a.endpoint, Step::None);
        assert!(!s.endpoint_on());
        assert_eq!(s.cwnd_fp(&off), s.fcwnd_fp());
    }

    #[test]
    fn fallback_without_the_option() {
        let l = law();
        let mut s = Swift::new(&l, 20);
        let mut now = 1_000_000 * US;
        // Endpoint congestion first: the endpoint window is small.
        for _ in 0..5 {
            now += 400 * US;
            s.on_ack(&l, now, 1, Some(&stamped(20_000, 300_000)));
        }
        assert!(s.cwnd_fp(&l) < pkts(3.0));
        // Then only the kernel's RTT: it is the fabric delay and the endpoint window is
        // off; an endpoint delay on such a sample is not used.
        let mut rtt = kernel_rtt(30_000);
        rtt.endpoint_ns = Some(900_000);
        let a = s.on_ack(&l, now + 1, 1, Some(&rtt));
        assert_eq!((a.fabric, a.endpoint), (Step::Increase, Step::None));
        assert!(!s.endpoint_on());
        assert_eq!(s.cwnd_fp(&l), s.fcwnd_fp());
        assert_eq!(s.ecwnd_fp(), s.fcwnd_fp());
        assert_eq!((s.rtt_ns(), s.endpoint_ns()), (30_000, 0));
        assert_eq!(s.source(), Some(SampleSource::KernelRtt));
        // The RTT above the target cuts the fabric window.
        let w = s.fcwnd_fp();
        let a = s.on_ack(&l, now + 1_000 * US, 1, Some(&kernel_rtt(200_000)));
        assert_eq!(a.fabric, Step::Decrease);
        assert!(s.fcwnd_fp() < w);
        // Stamps again: the endpoint window comes back, from the fabric window.
        let a = s.on_ack(&l, now + 2_000 * US, 1, Some(&stamped(20_000, 1_000)));
        assert_eq!(a.endpoint, Step::Increase);
        assert!(s.endpoint_on() && s.ecwnd_fp() > s.fcwnd_fp() - pkts(0.01));
    }

    #[test]
    fn fast_recovery_and_timeouts() {
        let l = law();
        let mut s = Swift::new(&l, 16);
        let now = 1_000_000 * US;
        s.on_ack(&l, now, 1, Some(&stamped(20_000, 5_000)));
        let w = s.fcwnd_fp();
        // Fast recovery: both windows halved, once per RTT (25 us).
        let a = s.on_fast_recovery(&l, now + US);
        assert_eq!((a.fabric, a.endpoint), (Step::LossCut, Step::LossCut));
        assert_eq!(s.fcwnd_fp(), w / 2);
        let a = s.on_fast_recovery(&l, now + 10 * US);
        assert_eq!(a.fabric, Step::LossHeld);
        assert_eq!(s.fcwnd_fp(), w / 2);
        // Timeouts: the first two in a row cut (an RTT apart), the third resets.
        let a = s.on_timeout(&l, now + 100 * US);
        assert_eq!(a.fabric, Step::LossCut);
        assert_eq!(s.fcwnd_fp(), w / 4);
        assert_eq!(s.timeouts(), 1);
        let a = s.on_timeout(&l, now + 110 * US);
        assert_eq!(a.fabric, Step::LossHeld);
        let a = s.on_timeout(&l, now + 300 * US);
        assert_eq!((a.fabric, a.endpoint), (Step::Reset, Step::Reset));
        assert_eq!(s.cwnd_fp(&l), l.min_cwnd_fp());
        assert_eq!(
            (s.fcwnd_fp(), s.ecwnd_fp()),
            (l.min_cwnd_fp(), l.min_cwnd_fp())
        );
        // An ACK, with or without a sample, ends the run.
        s.on_ack(&l, now + 400 * US, 1, None);
        assert_eq!(s.timeouts(), 0);
        let a = s.on_timeout(&l, now + 500 * US);
        assert_eq!(a.fabric, Step::LossCut);
        // Threshold 1: every timeout resets.
        let one = Law::new(&SwiftParams {
            retx_reset_threshold: 1,
            ..P
        })
        .unwrap();
        let mut s = Swift::new(&one, 16);
        assert_eq!(s.on_timeout(&one, now).fabric, Step::Reset);
        assert_eq!(s.cwnd_fp(&one), one.min_cwnd_fp());
    }

    #[test]
    fn pacing_rate_is_the_window_per_rtt() {
        let l = law();
        // Half a packet of 1500 bytes per 20 us: 37.5 MB/s.
        assert_eq!(
            rate_bytes_per_sec(pkts(0.5), 1500, 20_000),
            Some(37_500_000)
        );
        assert_eq!(rate_bytes_per_sec(pkts(0.5), 1500, 0), None);
        // Saturates instead of wrapping.
        assert!(rate_bytes_per_sec(u64::MAX, u32::MAX, 1).unwrap() > 0);
        let mut s = Swift::new(&l, 1);
        assert_eq!(s.paced_rate_bytes_per_sec(&l, 1500), None);
        s.on_ack(&l, 1, 1, Some(&stamped(18_000, 2_000)));
        // 2 packets (1 + ai) per 20 us.
        assert_eq!(s.paced_rate_bytes_per_sec(&l, 1500), Some(150_000_000));
    }

    #[test]
    fn absurd_samples_and_clocks_never_panic() {
        let l = law();
        let mut s = Swift::new(&l, 10);
        for fabric in [0, MAX_DELAY_NS + 1, u32::MAX] {
            let a = s.on_ack(&l, 7, 1, Some(&stamped(fabric, 0)));
            assert_eq!(a, Action::NONE);
        }
        assert_eq!((s.ignored_samples(), s.samples()), (3, 0));
        assert_eq!(s.fcwnd_fp(), pkts(10.0));
        // An absurd endpoint delay is dropped, the fabric delay used.
        let a = s.on_ack(&l, 8, 1, Some(&stamped(1, u32::MAX)));
        assert_eq!((a.fabric, a.endpoint), (Step::Increase, Step::None));
        for now in [0, 1, u64::MAX, u64::MAX - 1, 0] {
            for acked in [0, 1, u32::MAX] {
                for sample in [stamped(MAX_DELAY_NS, MAX_DELAY_NS), stamped(1, 0)] {
                    s.on_ack(&l, now, acked, Some(&sample));
                    let w = s.cwnd_fp(&l);
                    assert!((l.min_cwnd_fp()..=l.max_cwnd_fp()).contains(&w));
                }
                s.on_timeout(&l, now);
                s.on_fast_recovery(&l, now);
            }
        }
    }

    fn random_params(rng: &mut Rng) -> SwiftParams {
        let fs_max = rng.range(1, u64::from(MAX_CWND_LIMIT_PKTS)) as u32;
        let max_cwnd = rng.range(1, u64::from(MAX_CWND_LIMIT_PKTS)) as u32;
        let p = SwiftParams {
            base_target_ns: rng.range(1, u64::from(MAX_TARGET_NS)) as u32,
            per_hop_ns: rng.range(0, u64::from(MAX_PER_HOP_NS)) as u32,
            hops: rng.range(0, u64::from(MAX_HOPS)) as u32,
            fs_range_ns: rng.range(0, u64::from(MAX_TARGET_NS)) as u32,
            fs_min_cwnd_mpkts: rng.range(1, u64::from(fs_max) * 1000 - 1) as u32,
            fs_max_cwnd_pkts: fs_max,
            ai_mpkts: rng.range(1, u64::from(MAX_AI_MPKTS)) as u32,
            beta_md_ppm: rng.range(1, PPM) as u32,
            max_mdf_ppm: rng.range(1, PPM) as u32,
            min_cwnd_mpkts: rng.range(1, u64::from(max_cwnd) * 1000) as u32,
            max_cwnd_pkts: max_cwnd,
            retx_reset_threshold: rng.range(1, 8) as u32,
            endpoint_target_ns: rng.range(0, u64::from(MAX_TARGET_NS)) as u32,
        };
        assert_eq!(p.validate(), Ok(()));
        p
    }

    fn any_u32(rng: &mut Rng) -> u32 {
        match rng.range(0, 7) {
            0 => 0,
            1 => 1,
            2 => u32::MAX,
            3 => MAX_DELAY_NS,
            4 => rng.range(0, 200_000) as u32,
            _ => rng.next_u64() as u32,
        }
    }

    /// Random parameters and events: every window stays within `[min_cwnd, max_cwnd]`; an
    /// ACK's increase never exceeds `ai` per packet (per `w` packets above one packet); a
    /// decrease never removes more than `max_mdf`; flow scaling stays within its range.
    #[test]
    fn property_windows_within_bounds() {
        let mut rng = Rng::new(0x5f1f7);
        for _ in 0..400 {
            let p = random_params(&mut rng);
            let l = Law::new(&p).unwrap();
            let mut s = Swift::new(&l, rng.range(0, 100) as u32);
            let mut now = rng.next_u64();
            for _ in 0..500 {
                now = match rng.range(0, 20) {
                    0 => rng.next_u64(),
                    _ => now.wrapping_add(rng.range(0, 300_000)),
                };
                let before = (s.fcwnd_fp(), s.ecwnd_fp());
                let endpoint_was_on = s.endpoint_on();
                let acked = any_u32(&mut rng);
                let a = match rng.range(0, 10) {
                    0 => s.on_fast_recovery(&l, now),
                    1 => s.on_timeout(&l, now),
                    2 => s.on_ack(&l, now, acked, None),
                    3 => s.on_ack(&l, now, acked, Some(&kernel_rtt(any_u32(&mut rng)))),
                    _ => {
                        let e = any_u32(&mut rng);
                        s.on_ack(&l, now, acked, Some(&stamped(any_u32(&mut rng), e)))
                    }
                };
                for (w, w0, step, from_w0) in [
                    (s.fcwnd_fp(), before.0, a.fabric, true),
                    // A window turned on starts from the fabric window.
                    (s.ecwnd_fp(), before.1, a.endpoint, endpoint_was_on),
                ] {
                    assert!((l.min_cwnd_fp()..=l.max_cwnd_fp()).contains(&w), "{p:?}");
                    if !from_w0 {
                        continue;
                    }
                    let w0 = l.clamp(w0);
                    match step {
                        Step::Increase => {
                            let acked = u64::from(acked.min(MAX_ACKED_PKTS));
                            let most = mpkts_to_fp(p.ai_mpkts) * acked;
                            let most = if w0 >= FP_ONE {
                                most * FP_ONE / w0
                            } else {
                                most
                            };
                            assert!(w >= w0 && w - w0 <= most, "{w0} -> {w}");
                        }
                        Step::Decrease | Step::LossCut => {
                            let keep = PPM - u64::from(p.max_mdf_ppm);
                            assert!(w <= w0);
                            assert!(w >= (w0 * keep / PPM).max(l.min_cwnd_fp()), "{w0} -> {w}");
                        }
                        Step::Held | Step::LossHeld => assert_eq!(w, w0),
                        // Not on these events.
                        Step::EcnCut => unreachable!(),
                        Step::Reset => assert_eq!(w, l.min_cwnd_fp()),
                        Step::None => {}
                    }
                }
                let w = s.cwnd_fp(&l);
                assert!((l.min_cwnd_fp()..=l.max_cwnd_fp()).contains(&w));
                assert!(l.flow_scaling_ns(w) <= p.fs_range_ns);
                if let Some(rate) = s.paced_rate_bytes_per_sec(&l, 1448) {
                    let want = rate_bytes_per_sec(w, 1448, s.rtt_ns()).unwrap();
                    assert_eq!(rate, want);
                }
            }
        }
    }

    /// A decrease is by `max(1 - beta (d - t) / d, 1 - max_mdf)`, exactly (128-bit
    /// reference, rounded as documented).
    #[test]
    fn property_decrease_matches_wide_arithmetic() {
        let mut rng = Rng::new(0xdec);
        for _ in 0..100_000 {
            let p = random_params(&mut rng);
            let l = Law::new(&p).unwrap();
            let w = l.clamp(rng.range(0, 1 << 40));
            let t = rng.range(0, u64::from(MAX_DELAY_NS)) as u32;
            let d = rng.range(u64::from(t).max(1), u64::from(MAX_DELAY_NS)) as u32;
            let (got, step) = l.step(w, d, t, 1, true);
            assert_eq!(step, Step::Decrease);
            let (d, t) = (u128::from(d), u128::from(t));
            let excess_ppm = (d - t) * 1_000_000 / d;
            let cut = excess_ppm * u128::from(p.beta_md_ppm) / 1_000_000;
            let keep = (1_000_000 - cut).max(1_000_000 - u128::from(p.max_mdf_ppm));
            let want = (u128::from(w) * keep / 1_000_000) as u64;
            assert_eq!(got, l.clamp(want));
        }
    }

    /// Fluid model of N flows sharing one 10 Gbit/s bottleneck (1230 ns per 1538-byte
    /// packet) on a path of 20 us base network RTT, in 1 us steps. A flow at or above one
    /// packet sends its window per RTT (`w / (R + queue)`); below one packet it sends at
    /// the law's paced rate (`cwnd * mss / RTT` of its last sample, MSS 1500). Each packet
    /// is ACKed one RTT later (the base plus the queue it met), every packet (as the
    /// paper's stack), with the fabric delay of that RTT plus +-1 us of noise and an
    /// endpoint delay of 2-4 us. Flows start 200 us apart at 10 packets; measured over 60
    /// ms after the last start plus 30 ms.
    mod fluid {
        use super::*;
        use std::collections::VecDeque;

        const PKT_NS: f64 = 1230.0;
        const R_NS: f64 = 20_000.0;
        const STEP_NS: u64 = 1000;
        const STAGGER_NS: u64 = 200_000;
        const WARM_NS: u64 = 30_000_000;
        const MEASURE_NS: u64 = 60_000_000;
        const MSS: u32 = 1500;

        pub struct Outcome {
            /// Mean queuing delay, and mean (target - base RTT): where the queue should sit.
            pub queue_ns: f64,
            pub target_queue_ns: f64,
            pub jain: f64,
            pub utilization: f64,
        }

        struct Flow {
            cc: Swift,
            credit: f64,
            inflight: VecDeque<(u64, u32)>,
            delivered: u64,
        }

        pub fn simulate(n: usize, law: &Law, seed: u64) -> Outcome {
            let mut rng = Rng::new(seed);
            let mut flows: Vec<Flow> = Vec::new();
            let warm = n as u64 * STAGGER_NS + WARM_NS;
            let end = warm + MEASURE_NS;
            let mut queue_pkts = 0f64;
            let (mut q_sum, mut target_sum, mut busy, mut steps) = (0f64, 0f64, 0u64, 0u64);
            let mut t = 0u64;
            while t < end {
                if flows.len() < n && t >= flows.len() as u64 * STAGGER_NS {
                    flows.push(Flow {
                        cc: Swift::new(law, 10),
                        credit: 0.0,
                        inflight: VecDeque::new(),
                        delivered: 0,
                    });
                }
                let queue_ns = queue_pkts * PKT_NS;
                let rtt_ns = R_NS + queue_ns;
                let measuring = t >= warm;
                let mut arrivals = 0f64;
                for f in flows.iter_mut() {
                    let w_fp = f.cc.cwnd_fp(law);
                    let rate_pkts_per_ns = if w_fp >= FP_ONE {
                        w_fp as f64 / FP_ONE as f64 / rtt_ns
                    } else {
                        let bps = f.cc.paced_rate_bytes_per_sec(law, MSS).unwrap_or(0);
                        bps as f64 / f64::from(MSS) / 1e9
                    };
                    let sent = rate_pkts_per_ns * STEP_NS as f64;
                    arrivals += sent;
                    f.credit += sent;
                    while f.credit >= 1.0 {
                        f.credit -= 1.0;
                        f.inflight.push_back((t + rtt_ns as u64, rtt_ns as u32));
                    }
                    while let Some(&(due, rtt)) = f.inflight.front() {
                        if due > t {
                            break;
                        }
                        f.inflight.pop_front();
                        let noise = rng.range(0, 2000) as i64 - 1000;
                        let s = Sample {
                            source: SampleSource::Software,
                            fabric_ns: (i64::from(rtt) + noise) as u32,
                            endpoint_ns: Some(2000 + rng.range(0, 2000) as u32),
                        };
                        f.cc.on_ack(law, t, 1, Some(&s));
                        if measuring {
                            f.delivered += 1;
                            target_sum += f64::from(f.cc.target_ns()) - R_NS;
                        }
                    }
                }
                let service = STEP_NS as f64 / PKT_NS;
                let backlog = queue_pkts + arrivals;
                if measuring {
                    q_sum += queue_ns;
                    busy += u64::from(backlog >= service);
                    steps += 1;
                }
                queue_pkts = (backlog - service).max(0.0);
                t += STEP_NS;
            }
            let shares: Vec<f64> = flows.iter().map(|f| f.delivered as f64).collect();
            let s: f64 = shares.iter().sum();
            let s2: f64 = shares.iter().map(|x| x * x).sum();
            Outcome {
                queue_ns: q_sum / steps as f64,
                target_queue_ns: target_sum / s,
                jain: s * s / (n as f64 * s2),
                utilization: busy as f64 / steps as f64,
            }
        }
    }

    /// N = 2, 16, 64 flows (fair shares of about 21, 4 and 1.2 packets: the last near one
    /// packet, where the flows pace after a decrease) settle with the queue where the
    /// targets put it and fair shares (Jain >= 0.98), the link busy (>= 95% of steps).
    /// The queue's mean lies within 20% of (target - base RTT) plus half a round of the
    /// flows' aggregate additive increase (N ai packets reach the queue before the flows
    /// see it): measured, N=2: 32.7 us of queue against 31.9, N=16: 45.1 against 37.5,
    /// N=64: 73.5 against 43.3 (the overshoot, N ai packets = 79 us a round, dominates);
    /// Jain 1.000, 1.000, 0.997.
    #[test]
    fn fluid_model_converges_to_the_target_and_fair_shares() {
        let l = law();
        for n in [2, 16, 64] {
            let o = fluid::simulate(n, &l, 0x5eed + n as u64);
            std::println!(
                "N={n}: queue {:.1} us, target - base RTT {:.1} us, Jain {:.4}, busy {:.3}",
                o.queue_ns / 1000.0,
                o.target_queue_ns / 1000.0,
                o.jain,
                o.utilization
            );
            // One RTT of the flows' aggregate increase (N ai packets) arrives before they
            // see it: the queue overshoots the target by up to that, half of it on average.
            let overshoot_ns = n as f64 * f64::from(P.ai_mpkts) / 1000.0 * 1230.0 / 2.0;
            let allowed = 0.2 * o.target_queue_ns + overshoot_ns;
            assert!(
                (o.queue_ns - o.target_queue_ns).abs() <= allowed,
                "N={n}: queue {} vs {} (+- {allowed})",
                o.queue_ns,
                o.target_queue_ns
            );
            assert!(o.jain >= 0.98, "N={n}: Jain {}", o.jain);
            assert!(o.utilization >= 0.95, "N={n}: busy {}", o.utilization);
        }
    }
}
