// SPDX-License-Identifier: GPL-2.0

//! TIMELY and patched TIMELY: rate-based congestion control from the RTT gradient.
//!
//! Registers two algorithms:
//! - `timely`: Algorithm 1 of Mittal et al., "TIMELY: RTT-based Congestion Control for the
//!   Datacenter", SIGCOMM 2015;
//! - `timely_patched`: Algorithm 2 of Zhu et al., "ECN or Delay: Lessons Learnt from
//!   Analysis of DCQCN and TIMELY", CoNEXT 2016, whose fixed point is unique and fair.
//!
//! The control law is in `core/src/timely.rs` (shared with the host tests and the model
//! check); this file connects it to TCP:
//! - the rate is enforced with TCP's internal pacing (`sk_pacing_rate`), so no `fq` qdisc
//!   is needed; cwnd only caps what is in flight at the rate times `T_high + min_rtt`;
//! - ACKs are grouped into completions of `seg_bytes`; the law runs once per completion.
//!   A completion's RTT is the minimum of its samples over the last `rtt_window_bytes`
//!   (64 KB; 0 takes the segment's last sample, the paper's rule), minus the segment's
//!   serialization time when `line_rate_mbps` is set;
//! - the samples are, best first, the network RTT of the delay-stamp option
//!   (patches/0009, 0016: `(t4 - t1) - (t3 - t2)`, the receiver's hold removed, from
//!   the devices' hardware stamps or software stamps at the device boundary), which the
//!   ops offer on an active open (`TCP_CONG_DELAY_STAMPS`), as TIMELY's NIC timestamps
//!   intend; else the kernel's microsecond RTT of the ACK (samples of retransmitted data,
//!   and of ACKs the receiver may have held for its delayed-ACK timer, are skipped). A
//!   worse source is used only after the better one was silent for four `T_high`; a
//!   change of source restarts the gradient;
//! - a completion the stack marked application-limited, and whose delivery rate was below
//!   80% of the target, never raises the rate;
//! - a new flow starts at the fair share C / (N + 1) ("ECN or Delay", section 4), unless
//!   `init_rate_mbps` is set; N counts the flows of either variant that had data ACKed in
//!   the last 32-64 ms in the new flow's network namespace through its output device
//!   (`timely::recent_senders`, kept in `timely_senders.rs`); C is `max_rate_mbps` or,
//!   with 0 (the default), the link speed of its output device where the driver reports
//!   one, which a netdevice notifier keeps (`timely_link_speeds.rs`), else 10 Gbit/s;
//! - entering fast recovery or a retransmission timeout halves the rate, once per episode,
//!   unless the last RTT was below `loss_rtt_us` (T_high by default: below it the delay
//!   law holds the queue, and a loss is not taken as congestion); but completions that
//!   lost one packet in four, over whole segments of at least 12 packets
//!   (`timely::LossWindow`), halve it at any RTT (an AQM that drops);
//! - an ECN congestion mark the peer echoes (TCP's CWR state, once per window) halves the
//!   rate at any RTT, as RFC 3168 asks: where ECN is negotiated it is answered;
//! - `ecn_share` 1 (0 by default) registers other ops under the same two names, for both
//!   variants: they request ECN (`TCP_CONG_NEEDS_ECN`; a connection whose peer refuses it
//!   runs on the ECN-less sibling ops, `timely-reno`, and `timely_patched` under its own
//!   name, which leaves no room for the suffix) and answer marks as DCTCP does instead of
//!   halving: once per window of data the marked fraction's moving average `alpha` is
//!   updated, and a window with marks cuts the rate by `alpha / 2`
//!   (`core/src/ecn_share.rs`). As receivers they echo CE as DCTCP's receivers do. The
//!   ops' flags are constants the stack reads at SYN time, and the parameter is
//!   read-only: it picks the ops once, at load.
//!
//! `ss -ti` shows the state in the BBR layout: `bw` is the TIMELY rate, `mrtt` the last
//! completion's RTT, `cwnd_gain` the mode of the last update (see `Mode` in the core),
//! `pacing_gain` the source of its RTT samples (1 hardware stamps, 2 software stamps,
//! 3 the kernel's RTT, 0 none yet).

use kernel::net::netdev;
use kernel::net::tcp::cong::{
    AckFlags, AckSample, Algorithm, CaState, Event, Flags, Info, InfoSock, Ops, RateSample,
    Registration, Sock,
};
use kernel::prelude::*;
use kernel::sync::SetOnce;

#[path = "delay_source.rs"]
mod delay_source;
// Per-ACK CPU cost figures printed by the KUnit suite (shared with the other modules).
#[cfg(CONFIG_KUNIT)]
#[path = "kunit_cpu_cost.rs"]
mod kunit_cpu_cost;
#[path = "module_params.rs"]
mod module_params;
#[path = "timely_link_speeds.rs"]
mod timely_link_speeds;
#[path = "timely_senders.rs"]
mod timely_senders;

// The pure control laws, shared with the host tests; not every item is used here.
#[allow(unreachable_pub, dead_code)]
#[path = "core/src/lib.rs"]
mod cc_core;

use cc_core::ecn_share::{EcnAck, EcnShare};
use cc_core::timely::{self, Completion, LossWindow, Mode, Params, Segmenter, Timely, Variant};
use timely_link_speeds::{LinkSpeeds, LINKS};
use timely_senders::SenderSlot;

/// The ops of both variants, or with `ecn_share` 1 their ECN-sharing ops.
type Plain = (
    Registration<TimelyCc<false, false>>,
    Registration<TimelyCc<true, false>>,
);
type Shared = (
    Registration<TimelyCc<false, true>>,
    Registration<TimelyCc<true, true>>,
);

/// The module: the algorithms `ecn_share` picks (`module_tcp_cong!` registers a fixed
/// list), then the link-speed notifier, as that macro orders them. Fields drop in order:
/// the algorithms are unregistered before the notifier.
struct TcpTimely {
    _plain: Option<Plain>,
    _ecn_share: Option<Shared>,
    _notifier: netdev::Registration<LinkSpeeds>,
}

impl kernel::Module for TcpTimely {
    fn init(module: &'static kernel::ThisModule) -> Result<Self> {
        check_params()?;
        static ORIGINAL: Ops<TimelyCc<false, false>> = Ops::new();
        static PATCHED: Ops<TimelyCc<true, false>> = Ops::new();
        static ORIGINAL_ECN: Ops<TimelyCc<false, true>> = Ops::new();
        static PATCHED_ECN: Ops<TimelyCc<true, true>> = Ops::new();
        let share = crate::module_parameters::ecn_share.value() == 1;
        let (mut plain, mut shared) = (None, None);
        if share {
            let original = Registration::new(module, &ORIGINAL_ECN)?;
            shared = Some((original, Registration::new(module, &PATCHED_ECN)?));
        } else {
            let original = Registration::new(module, &ORIGINAL)?;
            plain = Some((original, Registration::new(module, &PATCHED)?));
        }
        // Last: a later failure would drop a deferred registration, whose drop waits for a
        // work item that may be waiting for RTNL, held by the task that waits for this init
        // (see `netdev::Registration::new`).
        static BLOCK: netdev::NotifierBlock<LinkSpeeds> = netdev::NotifierBlock::new();
        let notifier = netdev::Registration::new(&BLOCK)?;
        Ok(TcpTimely {
            _plain: plain,
            _ecn_share: shared,
            _notifier: notifier,
        })
    }
}

module! {
    type: TcpTimely,
    name: "tcp_timely",
    authors: ["rfl-tcp-cc developers"],
    description: "TIMELY and patched TIMELY congestion control",
    license: "GPL",
    // The kernel autoloads an algorithm NAME as module tcp_NAME; timely_patched lives here.
    alias: ["tcp_timely_patched"],
    params: {
        t_low_us: u32 {
            default: crate::cc_core::timely::spec::T_LOW_US.default,
            description: "RTT below which the rate grows additively (us), [1, 9999999], below t_high_us",
            permissions: 0o444,
        },
        t_high_us: u32 {
            default: crate::cc_core::timely::spec::T_HIGH_US.default,
            description: "RTT above which the rate is cut (us), [2, 10000000], above t_low_us",
            permissions: 0o444,
        },
        delta_kbps: u32 {
            default: crate::cc_core::timely::spec::DELTA_KBPS.default,
            description: "additive increase step (kbit/s), [1, 400000000], at most C",
            permissions: 0o444,
        },
        beta_ppm: u32 {
            default: crate::cc_core::timely::spec::BETA_PPM.default,
            description: "decrease factor (ppm), [1, 1000000]",
            permissions: 0o444,
        },
        alpha_ppm: u32 {
            default: crate::cc_core::timely::spec::ALPHA_PPM.default,
            description: "EWMA weight of a new RTT difference (ppm), [1, 1000000]",
            permissions: 0o444,
        },
        min_rtt_us: u32 {
            default: crate::cc_core::timely::spec::MIN_RTT_US.default,
            description: "fixed propagation RTT normalising the gradient (us), [1, 10000000]",
            permissions: 0o444,
        },
        hai_threshold: u32 {
            default: crate::cc_core::timely::spec::HAI_THRESHOLD.default,
            description: "negative gradients in a row before hyperactive increase, [1, 1000]",
            permissions: 0o444,
        },
        hai_factor: u32 {
            default: crate::cc_core::timely::spec::HAI_FACTOR.default,
            description: "hyperactive increase step, in units of delta, [1, 100]",
            permissions: 0o444,
        },
        min_rate_kbps: u32 {
            default: crate::cc_core::timely::spec::MIN_RATE_KBPS.default,
            description: "rate floor (kbit/s), [1, 400000000], at most C",
            permissions: 0o444,
        },
        max_rate_mbps: u32 {
            default: crate::cc_core::timely::spec::MAX_RATE_MBPS.default,
            description: "rate ceiling C, the line rate (Mbit/s), [0, 400000]; 0: the output device's link speed, else 10000",
            permissions: 0o444,
        },
        init_rate_mbps: u32 {
            default: crate::cc_core::timely::spec::INIT_RATE_MBPS.default,
            description: "rate of a new flow (Mbit/s), [0, 400000], at most C; 0: C / (flows + 1)",
            permissions: 0o444,
        },
        seg_bytes: u32 {
            default: crate::cc_core::timely::spec::SEG_BYTES.default,
            description: "bytes ACKed per update, [1, 65536]",
            permissions: 0o444,
        },
        line_rate_mbps: u32 {
            default: crate::cc_core::timely::spec::LINE_RATE_MBPS.default,
            description: "line rate for serialization correction (Mbit/s), [0, 400000]; 0: none",
            permissions: 0o444,
        },
        patched_beta_ppm: u32 {
            default: crate::cc_core::timely::spec::PATCHED_BETA_PPM.default,
            description: "timely_patched: decrease factor (ppm), [1, 1000000]",
            permissions: 0o444,
        },
        rtt_ref_us: u32 {
            default: crate::cc_core::timely::spec::RTT_REF_US.default,
            description: "timely_patched: reference RTT (us), [0, 10000000]; 0: t_low_us",
            permissions: 0o444,
        },
        rtt_window_bytes: u32 {
            default: crate::cc_core::timely::spec::RTT_WINDOW_BYTES.default,
            description: "minimum RTT over this many bytes of ACKs, [0, 65536]; 0: last",
            permissions: 0o444,
        },
        update_scaling: u32 {
            default: crate::cc_core::timely::spec::UPDATE_SCALING.default,
            description: "[0, 1]; 1: scale each update by min(1, its duration / min_rtt_us), 0: none",
            permissions: 0o444,
        },
        loss_rtt_us: u32 {
            default: crate::cc_core::timely::spec::LOSS_RTT_US.default,
            description: "a loss halves the rate only at or above this RTT (us), [0, 10000000]; 0: t_high_us",
            permissions: 0o444,
        },
        patched_rtt_window_rtts: u32 {
            default: crate::cc_core::timely::spec::PATCHED_RTT_WINDOW_RTTS.default,
            description: "timely_patched: the RTT window spans at most this many RTTs, [0, 64]; 0: off",
            permissions: 0o444,
        },
        t_high_last_sample: u32 {
            default: crate::cc_core::timely::spec::T_HIGH_LAST_SAMPLE.default,
            description: "[0, 1]; 1: T_high on the segment's last RTT sample, 0: on the completion's",
            permissions: 0o444,
        },
        ecn_share: u32 {
            default: crate::cc_core::timely::spec::ECN_SHARE.default,
            description: "[0, 1]; both variants: 1: request ECN and cut the rate by alpha/2 per marked window, as dctcp; 0: halve once per marked window",
            permissions: 0o444,
        },
    },
}

/// The parameters as `check_params` validated them at load: they are read-only (0o444),
/// and `params()` is on every ACK's path, where reading each module parameter is a call.
static PARAMS: SetOnce<Params> = SetOnce::new();

fn params() -> Params {
    PARAMS.as_ref().copied().unwrap_or_else(read_params)
}

fn read_params() -> Params {
    use crate::module_parameters as m;
    Params {
        t_low_us: m::t_low_us.value(),
        t_high_us: m::t_high_us.value(),
        delta_kbps: m::delta_kbps.value(),
        beta_ppm: m::beta_ppm.value(),
        alpha_ppm: m::alpha_ppm.value(),
        min_rtt_us: m::min_rtt_us.value(),
        hai_threshold: m::hai_threshold.value(),
        hai_factor: m::hai_factor.value(),
        min_rate_kbps: m::min_rate_kbps.value(),
        max_rate_mbps: m::max_rate_mbps.value(),
        init_rate_mbps: m::init_rate_mbps.value(),
        seg_bytes: m::seg_bytes.value(),
        line_rate_mbps: m::line_rate_mbps.value(),
        patched_beta_ppm: m::patched_beta_ppm.value(),
        rtt_ref_us: m::rtt_ref_us.value(),
        rtt_window_bytes: m::rtt_window_bytes.value(),
        loss_rtt_us: m::loss_rtt_us.value(),
        update_scaling: m::update_scaling.value(),
        t_high_last_sample: m::t_high_last_sample.value(),
        patched_rtt_window_rtts: m::patched_rtt_window_rtts.value(),
    }
}

/// The slots of an open-addressed `table` a lookup of `key` visits: `count` of them from
/// the key's slot on, wrapping around. The slot is a multiplicative hash of the key, so that
/// consecutive namespace cookies and ifindexes spread over the table. Both of TIMELY's
/// tables use it: the recent senders' and the link speeds'.
fn probe<T, const N: usize>(table: &[T; N], key: u64, count: usize) -> impl Iterator<Item = &T> {
    // The hash's top bits index the table: a power of two, at least 2 slots.
    const { assert!(N.is_power_of_two() && N > 1) };
    let start = (key.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> (64 - N.trailing_zeros())) as usize;
    (0..count.min(N)).map(move |i| &table[(start + i) % N])
}

/// A flow's C: `max_rate_mbps`, or its output device's link speed where known.
fn flow_c_mbps(sk: &Sock<'_>, p: &Params) -> u32 {
    let link = || LINKS.speed_mbps(sk.netns_cookie(), sk.out_ifindex()?);
    p.flow_c_mbps(if p.max_rate_mbps == 0 { link() } else { None })
}

/// The parameters of the socket's flow: its variant's, its C (kept in its state since
/// `init`) and MSS.
fn flow_params(sk: &Sock<'_>, st: &State, variant: Variant) -> Params {
    params()
        .for_variant(variant)
        .for_flow(st.cc.c_mbps, sk.mss())
}

/// The slot key of the socket's namespace and output device.
fn sender_key(sk: &Sock<'_>) -> u64 {
    timely::sender_key(sk.netns_cookie(), sk.out_ifindex().unwrap_or(0))
}

/// Per-socket state, in `icsk_ca_priv`, which it fills: the sender count's epoch and the
/// CWR state of the RFC 3168 answer are kept in `cc` (`Timely`), where there was room.
#[derive(Clone, Copy, Zeroable)]
struct State {
    cc: Timely,
    seg: Segmenter,
    /// Packets lost over the last completions, for the heavy-loss test.
    loss: LossWindow,
    /// `ecn_share`'s marked fraction and window (unused by the plain ops).
    ecn: EcnShare,
}

/// TIMELY; `PATCHED` selects Algorithm 2 of "ECN or Delay" in the gradient zone, `ECN` the
/// `ecn_share` ops.
struct TimelyCc<const PATCHED: bool, const ECN: bool>;

impl<const PATCHED: bool, const ECN: bool> TimelyCc<PATCHED, ECN> {
    const VARIANT: Variant = if PATCHED {
        Variant::Patched
    } else {
        Variant::Original
    };

    /// Enforces the rate: pacing at the rate, in-flight capped. Publishes what `ss` shows.
    fn apply(sk: &mut Sock<'_>, st: &State, p: &Params) {
        sk.set_pacing_rate_bytes_per_sec(timely::pacing_bytes_per_sec(st.cc.rate_bps));
        sk.set_cwnd(timely::cwnd_cap_pkts(p, st.cc.rate_bps, sk.mss()));
        let rtt_us = st.cc.last_rtt_us.min(INFO_RTT_MAX_US);
        sk.publish_info(&[rtt_us
            | (u32::from(st.cc.mode & INFO_MODE_MASK) << INFO_MODE_SHIFT)
            | (u32::from(st.seg.source) << INFO_SOURCE_SHIFT)]);
    }

    /// One completed segment through the law.
    fn complete(st: &mut State, p: &Params, c: Completion, stack_app_limited: bool, mss: u32) {
        if c.new_source {
            st.cc.restart_gradient();
        }
        if st.loss.on_completion(p.seg_bytes, mss) {
            st.cc.on_heavy_loss(p);
            return;
        }
        // The 80% rule, where the stack saw the application leave the pipe idle: a
        // per-segment delivery rate alone is too noisy (ACK compression) to block
        // increases on its own.
        let app_limited =
            stack_app_limited && timely::is_app_limited(c.delivered_bps, st.cc.rate_bps);
        st.cc.on_segment(p, Self::VARIANT, &c, app_limited);
    }
}

fn in_loss_recovery(state: CaState) -> bool {
    matches!(state, CaState::Recovery | CaState::Loss)
}

#[vtable]
impl<const PATCHED: bool, const ECN: bool> Algorithm for TimelyCc<PATCHED, ECN> {
    const NAME: &'static CStr = if PATCHED {
        c"timely_patched"
    } else {
        c"timely"
    };
    // Restricted, as in-tree algorithms other than Reno are; an administrator allows it
    // for unprivileged users through net.ipv4.tcp_allowed_congestion_control. An active
    // open offers the delay-stamp option; the `ecn_share` ops need ECN, as DCTCP.
    const FLAGS: Flags = if ECN {
        Flags::DELAY_STAMPS.union(Flags::NEEDS_ECN)
    } else {
        Flags::DELAY_STAMPS
    };
    // One word: the state fills icsk_ca_priv but for it and the abstraction's tag.
    const INFO_WORDS: usize = 1;
    type Data = State;

    fn init(sk: &mut Sock<'_>, st: &mut State) {
        let p = params();
        let p = p.for_flow(flow_c_mbps(sk, &p), sk.mss());
        // The clock now: an idle socket's last packet (`now_us`) may be long past. The
        // latter is never ahead of the clock but on KUnit's sockets, whose clock a test sets.
        let epoch = timely::sender_epoch(sk.clock_us().max(sk.now_us()));
        let others = SenderSlot::find(sender_key(sk), epoch, false)
            .map_or(0, |slot| timely::recent_senders(slot.words(), epoch));
        st.cc = Timely::new(&p, p.init_rate_bps(others));
        st.seg.restart(sk.now_us());
        sk.request_internal_pacing();
        if ECN {
            st.ecn = EcnShare::new(sk.delivered(), sk.delivered_ce());
            // A peer that refused ECN: the ECN-less sibling, so that no packet goes out
            // ECN-capable (a listener's or a closed socket's children negotiate later).
            if !sk.ecn_fallback_active() && !sk.ecn_enabled() && !sk.is_listen_or_close() {
                sk.fall_back_from_ecn();
            }
        }
        Self::apply(sk, st, &p);
    }

    fn cong_control(sk: &mut Sock<'_>, st: &mut State, _ack: u32, f: AckFlags, rs: &RateSample) {
        let p = flow_params(sk, st, Self::VARIANT);
        let epoch = timely::sender_epoch(sk.now_us());
        if rs.acked_sacked > 0 && st.cc.counted_epoch != epoch + 1 {
            // Once per epoch: a hash, a probe and an atomic add.
            if let Some(slot) = SenderSlot::find(sender_key(sk), epoch, true) {
                slot.count(epoch);
            }
            st.cc.counted_epoch = epoch + 1;
        }
        // Without `ecn_share`: the first echo of a CWR episode (one window) halves the rate;
        // with it, a window with marks cuts it by alpha / 2 when it ends.
        let (delivered, delivered_ce) = if ECN {
            (sk.delivered(), sk.delivered_ce())
        } else {
            (0, 0)
        };
        let ecn = EcnAck {
            ece: f.ece(),
            in_cwr: sk.ca_state() == CaState::Cwr,
            delivered_pkts: delivered,
            delivered_ce_pkts: delivered_ce,
            in_flight_pkts: rs.prior_in_flight,
        };
        let rate_before_ecn_bps = st.cc.rate_bps;
        let share = if ECN { Some(&mut st.ecn) } else { None };
        let ecn_cut = st.cc.on_ecn_ack(&p, share, &ecn) && ECN;
        let rate_after_ecn_bps = st.cc.rate_bps;
        st.loss.on_loss(rs.losses);
        let acked_bytes = rs.acked_sacked.saturating_mul(sk.mss());
        // The kernel's RTT, not where it may include the receiver's delayed-ACK wait; the
        // segmenter takes it only while the delay-stamp option gives no network RTT.
        let rtt_us = timely::usable_rtt_us(rs.rtt_us, rs.is_ack_delayed);
        let rate_before_bps = st.cc.rate_bps;
        let completion = st.seg.on_ack(&p, sk.now_us(), acked_bytes, rtt_us);
        if let Some(c) = completion {
            Self::complete(st, &p, c, rs.is_app_limited, sk.mss());
        }
        Self::apply(sk, st, &p);
        if ecn_cut {
            // tcp:tcp_cong_decision for an ecn_share cut (docs/timely.md): alpha, 0, rate
            // before; rate after, cwnd cap.
            let inputs = [u64::from(st.ecn.alpha()), 0, rate_before_ecn_bps];
            let outputs = [rate_after_ecn_bps, u64::from(sk.cwnd())];
            sk.trace_decision(Mode::EcnShare as u32, inputs, outputs);
        }
        if let Some(c) = completion {
            // tcp:tcp_cong_decision, per completion (docs/timely.md): the mode of the
            // update; RTT, gradient (signed), rate before; rate after, cwnd cap.
            let gradient_ppm = i64::from(st.cc.gradient_ppm) as u64;
            let inputs = [u64::from(c.rtt_us), gradient_ppm, rate_before_bps];
            sk.trace_decision(
                u32::from(st.cc.mode),
                inputs,
                [st.cc.rate_bps, u64::from(sk.cwnd())],
            );
        }
    }

    fn pkts_acked(sk: &mut Sock<'_>, st: &mut State, sample: &AckSample) {
        // Called for this ACK before cong_control: its network RTT joins the segment the
        // ACK's bytes complete there.
        let Some(d) = sample.delay else {
            return;
        };
        let source = delay_source::sample_source(d.source);
        // The source rule reads T_high and the window only: no need for the MSS's floor.
        st.seg
            .offer(&params(), sk.now_us(), d.net_rtt_ns.div_ceil(1000), source);
    }

    fn set_state(sk: &mut Sock<'_>, st: &mut State, new_state: CaState) {
        // CWR lasts until the data in flight when it began is acknowledged: one window.
        st.cc.on_ca_state(new_state == CaState::Cwr);
        if in_loss_recovery(new_state) && !in_loss_recovery(sk.ca_state()) {
            let p = flow_params(sk, st, Self::VARIANT);
            st.cc.on_loss(&p);
            Self::apply(sk, st, &p);
        }
    }

    fn tx_start(sk: &mut Sock<'_>, st: &mut State) {
        // Back from idle: the next segment's delivery rate must not span the gap.
        let p = flow_params(sk, st, Self::VARIANT);
        if st.seg.on_tx_start(&p, sk.now_us(), st.cc.rate_bps) {
            // After an idle period the RTT history describes another path state.
            st.cc.restart_gradient();
        }
    }

    fn cwnd_event(sk: &mut Sock<'_>, _st: &mut State, event: Event) {
        // Only the `ecn_share` ops (TCP_CONG_NEEDS_ECN) are told of CE.
        if let Event::EcnIsCe | Event::EcnNoCe = event {
            echo_ce(sk, event == Event::EcnIsCe);
        }
    }

    fn ssthresh(sk: &mut Sock<'_>, _st: &mut State) -> u32 {
        // Rate-based: a loss does not change the window through ssthresh (see set_state).
        sk.ssthresh()
    }

    fn undo_cwnd(sk: &mut Sock<'_>, _st: &mut State) -> u32 {
        sk.cwnd()
    }

    fn get_info(sk: &InfoSock<'_>, published: &[u32]) -> Option<Info> {
        // The pacing rate is the TIMELY rate (see `apply`).
        Some(Info::Bbr {
            bw_bytes_per_sec: sk.pacing_rate_bytes_per_sec(),
            min_rtt_us: published[0] & INFO_RTT_MAX_US,
            pacing_gain: (published[0] >> INFO_SOURCE_SHIFT) * 256,
            cwnd_gain: ((published[0] >> INFO_MODE_SHIFT) & u32::from(INFO_MODE_MASK)) * 256,
        })
    }
}

/// The published word: the last completion's RTT in the low 24 bits (up to 16.7 s), the
/// mode of the last update in the next 4, the source of the RTT samples in the top 4.
const INFO_MODE_SHIFT: u32 = 24;
const INFO_MODE_MASK: u8 = 0xf;
const INFO_SOURCE_SHIFT: u32 = 28;
const INFO_RTT_MAX_US: u32 = (1 << INFO_MODE_SHIFT) - 1;

/// Receiver side of the `ecn_share` ops, DCTCP's: an ACK echoes ECE exactly when the data
/// it acknowledges was CE-marked, so a change of the CE state is ACKed at once (RFC 3168
/// would echo until the sender's CWR, a whole RTT of echoes per mark). DCTCP first sends
/// the ACK it had delayed with the previous state; there is no room to keep where that
/// data ended, so the delayed ACK's packets (one or two) take the new state.
fn echo_ce(sk: &mut Sock<'_>, ce: bool) {
    if sk.demand_cwr() != ce {
        sk.request_immediate_ack();
    }
    sk.set_demand_cwr(ce);
}

fn check_params() -> Result {
    let share = crate::module_parameters::ecn_share.value();
    module_params::check(timely::spec::ECN_SHARE.check(share))?;
    module_params::load(&PARAMS, read_params(), Params::validate)
}

#[kunit_tests(rust_timely)]
mod tests {
    use super::*;
    use crate::timely_link_speeds::{LinkTable, LINK_SLOTS, SLOT_NEVER_USED};
    use crate::timely_senders::SENDERS;
    use cc_core::sample::SampleSource;
    use kernel::net::tcp::cong::{testing::TestSocket, DelaySample, DelaySource, Pacing};
    use kernel::sync::atomic::Relaxed;

    const MSS: u32 = 1448;
    /// ACKs of one 16 KB segment: 12 packets.
    const SEG_PKTS: u32 = 12;

    /// Both variants on the same ACK stream as the kernel's C controllers; prints the
    /// costs. The rate stays within its bounds.
    #[test]
    fn cpu_cost_beside_c_controllers() -> Result {
        use crate::kunit_cpu_cost::{ns_per_ack, report, report_c_references};
        let mut original = TestSocket::with_algorithm::<TimelyCc<false, false>>()?;
        let mut patched = TestSocket::with_algorithm::<TimelyCc<true, false>>()?;
        report("rust_timely", "timely", ns_per_ack(&mut original, false));
        report(
            "rust_timely",
            "timely_patched",
            ns_per_ack(&mut patched, false),
        );
        for s in [&mut original, &mut patched] {
            let rate = s.sock().pacing_rate_bytes_per_sec();
            assert!(rate > 0 && rate <= params().max_rate_bps() / 8);
        }
        report_c_references("rust_timely")
    }

    /// One segment's ACKs, `gap_us` apart, all with RTT sample `rtt_us`.
    fn segment(s: &mut TestSocket, now_us: &mut u64, rtt_us: i64, delayed: bool) {
        for _ in 0..SEG_PKTS {
            *now_us += 10;
            s.set_mss_and_clock(MSS, *now_us);
            s.cong_control(1, rtt_us, false, delayed);
        }
    }

    /// A socket of `T` that starts with no recent sender counted: the other tests' sockets
    /// are recent senders of the test sockets' namespace and device.
    fn alone<T: Algorithm>() -> Result<TestSocket> {
        for slot in &SENDERS {
            slot.key.store(0, Relaxed);
        }
        TestSocket::with_algorithm::<T>()
    }

    fn rate_bytes_per_sec(s: &mut TestSocket) -> u64 {
        s.sock().pacing_rate_bytes_per_sec()
    }

    #[test]
    fn link_speeds_are_kept_per_namespace_and_device() {
        // A table of its own: the module's is the notifier's, written under RTNL. Emptied
        // first, for a second run of the suite in the same boot.
        static T: LinkTable = LinkTable::new();
        for slot in &T.0 {
            slot.write(SLOT_NEVER_USED, 0);
        }
        let used = || {
            T.0.iter()
                .filter(|s| s.netns.load(Relaxed) != SLOT_NEVER_USED)
                .count()
        };
        // Three namespaces whose device 3 has the same first slot.
        let a = 1 << 40;
        let first = |netns| T.probe(netns, 3).next().map(core::ptr::from_ref);
        let mut same_start = (a + 1..).filter(|&k| first(k) == first(a));
        let (b, c) = (
            same_start.next().unwrap_or(0),
            same_start.next().unwrap_or(0),
        );
        T.set_speed(a, 3, Some(25_000));
        T.set_speed(b, 3, Some(1_000));
        assert_eq!(T.speed_mbps(a, 3), Some(25_000));
        assert_eq!(T.speed_mbps(b, 3), Some(1_000));
        assert_eq!(T.speed_mbps(a, 4), None);
        // A new speed replaces the old; a device that goes down is forgotten, and the
        // device after it in the probe order (b's, same hash) is still found.
        T.set_speed(a, 3, Some(10_000));
        assert_eq!(T.speed_mbps(a, 3), Some(10_000));
        T.set_speed(a, 3, None);
        assert_eq!(T.speed_mbps(a, 3), None);
        assert_eq!(T.speed_mbps(b, 3), Some(1_000));
        // The forgotten slot is reused by a device of the same hash, not a new one.
        T.set_speed(c, 3, Some(100));
        assert_eq!((T.speed_mbps(c, 3), used()), (Some(100), 2));
        // More devices than slots: those that do not fit are unknown (their flows take
        // the default C), the others keep their speeds, and freed slots are reused.
        let n = LINK_SLOTS as u32 + 8;
        (0..n).for_each(|i| T.set_speed(a, 100 + i, Some(i + 1)));
        let known = |i: u32| T.speed_mbps(a, 100 + i) == Some(i + 1);
        assert_eq!((0..n).filter(|&i| known(i)).count(), LINK_SLOTS - 2);
        assert_eq!(T.speed_mbps(a, 5000), None);
        T.set_speed(b, 3, None);
        T.set_speed(a, 5000, Some(40_000));
        assert_eq!(T.speed_mbps(a, 5000), Some(40_000));
        assert_eq!(T.speed_mbps(c, 3), Some(100));
    }

    #[test]
    fn init_paces_at_the_initial_rate() -> Result {
        let mut s = alone::<TimelyCc<false, false>>()?;
        let p = params();
        assert_eq!(s.sock().pacing(), Pacing::Internal);
        assert_eq!(rate_bytes_per_sec(&mut s), p.init_rate_bps(0) / 8);
        assert_eq!(s.cwnd(), timely::cwnd_cap_pkts(&p, p.init_rate_bps(0), MSS));
        Ok(())
    }

    #[test]
    fn new_flow_starts_at_its_fair_share() -> Result {
        let line_rate = params().init_rate_bps(0) / 8;
        // A clock far from the other tests' (all in the first epochs), so that only this
        // test's flows are recent senders of the test sockets' namespace and device.
        let mut now = 1 << 40;
        let start = |patched: bool, now: u64| -> Result<TestSocket> {
            let mut s = if patched {
                TestSocket::before_init::<TimelyCc<true, false>>()?
            } else {
                TestSocket::before_init::<TimelyCc<false, false>>()?
            };
            s.set_mss_and_clock(MSS, now);
            s.init();
            Ok(s)
        };
        let send = |s: &mut TestSocket, now: u64| {
            s.set_mss_and_clock(MSS, now);
            s.cong_control(1, -1, false, false);
        };
        let mut first = start(false, now)?;
        assert_eq!(rate_bytes_per_sec(&mut first), line_rate);
        // A socket counts once it has had data ACKed: before, it may only be receiving.
        let _receiver = start(false, now)?;
        assert_eq!(rate_bytes_per_sec(&mut start(false, now)?), line_rate);
        send(&mut first, now);
        // Both variants count, each flow once per epoch.
        let mut second = start(true, now)?;
        assert_eq!(rate_bytes_per_sec(&mut second), line_rate / 2);
        send(&mut second, now);
        send(&mut second, now + 1);
        assert_eq!(rate_bytes_per_sec(&mut start(false, now)?), line_rate / 3);
        // The next epoch: the last epoch's senders still count.
        now += timely::SENDER_EPOCH_US;
        assert_eq!(rate_bytes_per_sec(&mut start(false, now)?), line_rate / 3);
        // Only the first sends on; an epoch later the second is forgotten, two later all.
        send(&mut first, now);
        now += timely::SENDER_EPOCH_US;
        assert_eq!(rate_bytes_per_sec(&mut start(true, now)?), line_rate / 2);
        now += timely::SENDER_EPOCH_US;
        assert_eq!(rate_bytes_per_sec(&mut start(false, now)?), line_rate);
        Ok(())
    }

    #[test]
    fn high_rtt_completion_cuts_pacing_rate() -> Result {
        let mut s = alone::<TimelyCc<false, false>>()?;
        let start = rate_bytes_per_sec(&mut s);
        let mut now = 1000;
        // The first completion only initialises the RTT history.
        segment(&mut s, &mut now, 1000, false);
        assert_eq!(rate_bytes_per_sec(&mut s), start);
        segment(&mut s, &mut now, 1000, false);
        // T_high 500 us, RTT 1000 us: 1 - 0.8 * (1 - 0.5) = 0.6.
        assert_eq!(rate_bytes_per_sec(&mut s), start * 6 / 10);
        Ok(())
    }

    #[test]
    fn delayed_ack_and_invalid_samples_are_ignored() -> Result {
        let mut s = alone::<TimelyCc<false, false>>()?;
        let start = rate_bytes_per_sec(&mut s);
        let mut now = 1000;
        for _ in 0..4 {
            segment(&mut s, &mut now, 5000, true);
            segment(&mut s, &mut now, -1, false);
        }
        assert_eq!(rate_bytes_per_sec(&mut s), start);
        // The same RTT, not flagged: 5000 us > T_high cuts (after the first completion).
        segment(&mut s, &mut now, 5000, false);
        segment(&mut s, &mut now, 5000, false);
        assert!(rate_bytes_per_sec(&mut s) < start);
        Ok(())
    }

    #[test]
    fn zero_and_absurd_samples_keep_the_rate_in_bounds() -> Result {
        let p = params().for_mss(MSS);
        let (min, max) = (p.min_rate_bps() / 8, p.max_rate_bps() / 8);
        for patched in [false, true] {
            let mut s = if patched {
                alone::<TimelyCc<true, false>>()?
            } else {
                alone::<TimelyCc<false, false>>()?
            };
            let mut now = 1000;
            for rtt_us in [
                0,
                i64::MAX,
                i64::from(u32::MAX),
                1,
                i64::MIN,
                0,
                10_000_000_000,
            ] {
                segment(&mut s, &mut now, rtt_us, false);
                let rate = rate_bytes_per_sec(&mut s);
                assert!(min <= rate && rate <= max);
                assert!(s.cwnd() >= timely::MIN_CWND_PKTS);
            }
        }
        Ok(())
    }

    #[test]
    fn loss_halves_once_per_episode_when_queued() -> Result {
        let mut s = alone::<TimelyCc<false, false>>()?;
        let start = rate_bytes_per_sec(&mut s);
        // No RTT sample yet: a loss counts as congestion.
        s.set_ca_state(CaState::Recovery);
        assert_eq!(rate_bytes_per_sec(&mut s), start / 2);
        s.set_ca_state(CaState::Loss);
        assert_eq!(rate_bytes_per_sec(&mut s), start / 2);
        s.set_ca_state(CaState::Open);
        // RTT 30 us < T_high: the delay law holds the queue, so the loss is not congestion.
        let mut now = 1000;
        segment(&mut s, &mut now, 30, false);
        let before = rate_bytes_per_sec(&mut s);
        s.set_ca_state(CaState::Recovery);
        assert_eq!(rate_bytes_per_sec(&mut s), before);
        Ok(())
    }

    #[test]
    fn an_echoed_congestion_mark_halves_once_per_window() -> Result {
        let mut s = alone::<TimelyCc<true, false>>()?;
        // RTT 30 us < T_high: a loss would not count, a CE mark does.
        let mut now = 1000;
        segment(&mut s, &mut now, 30, false);
        let before = rate_bytes_per_sec(&mut s);
        let ece = || kernel::bindings::FLAG_ECE;
        // CWR without an echo (a local qdisc's push-back): no cut.
        s.set_ca_state(CaState::Cwr);
        s.cong_control(0, -1, false, false);
        assert_eq!(rate_bytes_per_sec(&mut s), before);
        // An echo in it: one cut, however many echoes the window brings.
        s.cong_control_with(0, -1, false, false, ece());
        assert_eq!(rate_bytes_per_sec(&mut s), before / 2);
        s.cong_control_with(0, -1, false, false, ece());
        assert_eq!(rate_bytes_per_sec(&mut s), before / 2);
        // The next window's mark cuts again.
        s.set_ca_state(CaState::Open);
        s.set_ca_state(CaState::Cwr);
        s.cong_control_with(0, -1, false, false, ece());
        assert_eq!(rate_bytes_per_sec(&mut s), before / 4);
        // Echoes outside CWR (recovery handles its own) do not cut.
        s.set_ca_state(CaState::Recovery);
        let in_recovery = rate_bytes_per_sec(&mut s);
        s.cong_control_with(0, -1, false, false, ece());
        assert_eq!(rate_bytes_per_sec(&mut s), in_recovery);
        Ok(())
    }

    /// `ecn_share` 1's ops, both variants: they need ECN; an echo in CWR does not halve;
    /// a window that saw marks cuts the rate by alpha / 2 once, at its end; one without
    /// marks does not.
    #[test]
    fn ecn_share_cuts_by_half_alpha_once_per_marked_window() -> Result {
        use cc_core::ecn_share::keep;
        let ece = kernel::bindings::FLAG_ECE;
        for patched in [false, true] {
            for slot in &SENDERS {
                slot.key.store(0, Relaxed);
            }
            let mut s = if patched {
                TestSocket::with_algorithm_ecn::<TimelyCc<true, true>>()?
            } else {
                TestSocket::with_algorithm_ecn::<TimelyCc<false, true>>()?
            };
            assert!(s.ops_flags() & kernel::bindings::TCP_CONG_NEEDS_ECN != 0);
            let start = rate_bytes_per_sec(&mut s) * 8;
            let p = flow_params_of(&mut s, patched);
            // An echo in CWR, no packet delivered: no window ends, no cut.
            s.set_ca_state(CaState::Cwr);
            s.cong_control_with(0, -1, false, false, ece);
            assert_eq!(rate_bytes_per_sec(&mut s) * 8, start);
            // Nothing in flight before each ACK (the test socket's): each ACK that delivers
            // ends a window. 10 delivered, 5 marked: alpha 1024 - 64 + 32 = 992.
            s.deliver(10, 5);
            s.cong_control_with(0, -1, false, false, ece);
            let once = keep(start, 992).clamp(p.min_rate_bps(), p.max_rate_bps());
            assert_eq!(rate_bytes_per_sec(&mut s), once / 8);
            // The next window has no marks (an echo still): alpha 930, no cut.
            s.deliver(10, 0);
            s.cong_control_with(0, -1, false, false, ece);
            assert_eq!(rate_bytes_per_sec(&mut s), once / 8);
            // One of ten marked: alpha 930 - 58 + 6 = 878.
            s.deliver(10, 1);
            s.cong_control_with(0, -1, false, false, 0);
            let twice = keep(once, 878).clamp(p.min_rate_bps(), p.max_rate_bps());
            assert_eq!(rate_bytes_per_sec(&mut s), twice / 8);
            s.set_ca_state(CaState::Open);
        }
        Ok(())
    }

    /// The parameters of a test socket's flow.
    fn flow_params_of(s: &mut TestSocket, patched: bool) -> Params {
        let variant = if patched {
            Variant::Patched
        } else {
            Variant::Original
        };
        let sk = s.sock();
        let p = params().for_variant(variant);
        p.for_flow(flow_c_mbps(&sk, &p), sk.mss())
    }

    /// Without ECN negotiated the `ecn_share` ops move to their ECN-less sibling; as
    /// receivers they echo CE as DCTCP's receivers do.
    #[test]
    fn ecn_share_falls_back_and_echoes_ce_at_once() -> Result {
        let s = TestSocket::with_algorithm::<TimelyCc<false, true>>()?;
        assert_eq!(s.ops_name(), c"timely-reno");
        assert!(s.ops_flags() & kernel::bindings::TCP_CONG_NEEDS_ECN == 0);
        let s = TestSocket::with_algorithm::<TimelyCc<true, true>>()?;
        assert!(s.ops_flags() & kernel::bindings::TCP_CONG_NEEDS_ECN == 0);
        let ack_now = kernel::bindings::inet_csk_ack_state_t_ICSK_ACK_NOW as u8;
        let demand_cwr = kernel::bindings::TCP_ECN_DEMAND_CWR as u8;
        let mut r = TestSocket::with_algorithm_ecn::<TimelyCc<true, true>>()?;
        r.cwnd_event(Event::EcnNoCe);
        assert_eq!(r.ack_pending() & ack_now, 0);
        r.cwnd_event(Event::EcnIsCe);
        assert!(r.ack_pending() & ack_now != 0);
        assert!(r.ecn_flags() & demand_cwr != 0);
        r.cwnd_event(Event::EcnNoCe);
        assert!(r.ecn_flags() & demand_cwr == 0);
        Ok(())
    }

    #[test]
    fn patched_variant_uses_the_weighted_law() -> Result {
        let mut s = alone::<TimelyCc<true, false>>()?;
        let start = rate_bytes_per_sec(&mut s);
        let mut now = 1000;
        segment(&mut s, &mut now, 200, false);
        segment(&mut s, &mut now, 200, false);
        // Gradient 0 (w = 1/2), error (200 - 50) / 50 = 3: rate * (1 - 0.008 * 0.5 * 3)
        // + delta / 2, in bytes per second.
        let expect = start * 988 / 1000 + 10_000_000 / 2 / 8;
        assert_eq!(rate_bytes_per_sec(&mut s), expect);
        let word = info_words(&mut s)?;
        assert_eq!(u64::from(word(0)) | (u64::from(word(1)) << 32), expect);
        assert_eq!(word(2), 200);
        // The kernel's RTT samples.
        assert_eq!(word(3), u32::from(SampleSource::KernelRtt.code()) * 256);
        assert_eq!(word(4), Mode::Weighted as u32 * 256);
        Ok(())
    }

    /// The `i`-th 32-bit word of the BBR layout `ss` shows (bw low and high, min RTT,
    /// pacing gain, cwnd gain); an error, not a panic, if TIMELY reports another layout.
    fn info_words(s: &mut TestSocket) -> Result<impl Fn(usize) -> u32> {
        let (attr, b) = s.get_info().ok_or(EINVAL)?;
        if attr != kernel::bindings::INET_DIAG_BBRINFO {
            return Err(EINVAL);
        }
        Ok(
            move |i: usize| {
                u32::from_ne_bytes([b[4 * i], b[4 * i + 1], b[4 * i + 2], b[4 * i + 3]])
            },
        )
    }

    /// One segment's ACKs, each with the delay-stamp option's network RTT `net_rtt_us`
    /// from `source` (given to pkts_acked first, as the stack does) and the kernel's RTT
    /// `kernel_rtt_us`, which includes the receiver's hold.
    fn stamped_segment(
        s: &mut TestSocket,
        now_us: &mut u64,
        net_rtt_us: u32,
        source: DelaySource,
        kernel_rtt_us: i32,
    ) {
        for _ in 0..SEG_PKTS {
            *now_us += 10;
            s.set_mss_and_clock(MSS, *now_us);
            let delay = DelaySample {
                source,
                owd_ns: 12_345,
                net_rtt_ns: net_rtt_us * 1000,
            };
            s.pkts_acked_with_delay(1, kernel_rtt_us, 0, Some(delay));
            s.cong_control(1, kernel_rtt_us.into(), false, false);
        }
    }

    /// `(min_rtt_us, pacing_gain)` as `ss` shows them.
    fn rtt_and_source(s: &mut TestSocket) -> Result<(u32, u32)> {
        let word = info_words(s)?;
        Ok((word(2), word(3)))
    }

    #[test]
    fn the_options_network_rtt_replaces_the_kernel_rtt() -> Result {
        let mut s = alone::<TimelyCc<true, false>>()?;
        let start = rate_bytes_per_sec(&mut s);
        let mut now = 1000;
        // Network RTT 200 us; the kernel's, with a 4.8 ms hold, is above T_high.
        stamped_segment(&mut s, &mut now, 200, DelaySource::Device, 5000);
        stamped_segment(&mut s, &mut now, 200, DelaySource::Device, 5000);
        // As `patched_variant_uses_the_weighted_law` on a 200 us RTT: no T_high cut.
        let expect = start * 988 / 1000 + 10_000_000 / 2 / 8;
        assert_eq!(rate_bytes_per_sec(&mut s), expect);
        assert_eq!(rtt_and_source(&mut s)?, (200, 2 * 256));
        // Hardware stamps take over; the gradient restarts: their first completion only
        // sets the previous RTT.
        stamped_segment(&mut s, &mut now, 190, DelaySource::Hardware, 5000);
        assert_eq!(rate_bytes_per_sec(&mut s), expect);
        assert_eq!(rtt_and_source(&mut s)?, (190, 256));
        // The option stops (a middlebox strips it): after four T_high of silence the
        // kernel's RTT is used, and cuts.
        now += u64::from(4 * params().t_high_us);
        segment(&mut s, &mut now, 5000, false);
        segment(&mut s, &mut now, 5000, false);
        assert!(rate_bytes_per_sec(&mut s) < expect);
        assert_eq!(rtt_and_source(&mut s)?, (5000, 3 * 256));
        Ok(())
    }
}
