// SPDX-License-Identifier: GPL-2.0

//! Swift: window congestion control that holds a delay target.
//!
//! Kumar et al., "Swift: Delay is Simple and Effective for Congestion Control in the
//! Datacenter", SIGCOMM 2020. The control law (a fabric and an endpoint window, the target
//! scaled by hops and by the window, AIMD once per RTT, the loss rules, what the paper
//! leaves open) is in `core/src/swift.rs`, shared with the host tests; this file connects
//! it to TCP:
//! - the ops carry `TCP_CONG_DELAY_STAMPS`: an active open offers the delay-stamp option,
//!   and when the peer answers, every ACK that echoes a data segment brings the network RTT
//!   `(t4 - t1) - (t3 - t2)`, Swift's fabric delay. The endpoint delay is the kernel's RTT
//!   sample of the same ACK less that network RTT: the receiver's hold `t3 - t2` plus the
//!   sender's own time from the device to TCP, both of which the paper counts as endpoint
//!   delay. An ACK of one segment, or one the stack flags as possibly delayed, may have
//!   waited for the receiver's delayed-ACK timer (its ACK policy, not its congestion): its
//!   endpoint delay counts only below the endpoint target (`sample` below);
//! - without the option (the peer did not answer, a passive open, or no echo for
//!   `SILENT_RTTS` RTTs on a connection that negotiated it) the fabric delay is the
//!   kernel's RTT sample (not of possibly delayed ACKs) and the endpoint window is off;
//! - the law runs on every ACK in `cong_control`, which owns cwnd and the pacing rate;
//!   the pacer is TCP's internal one (no `fq` needed). Below `PACED_BELOW_PKTS` (2) packets
//!   cwnd is 2 and the flow paces at the law's `cwnd * mss / RTT`: one packet every
//!   `RTT / cwnd`, and two in flight so that a Linux receiver ACKs each pair at once
//!   instead of holding a lone segment for its delayed-ACK timer. Above, cwnd is the law's
//!   window rounded down and the pacing rate is twice the window per RTT: the window, not
//!   the pacer, limits the flow (the paper's ACK clocking), while a window's burst is spread
//!   over half an RTT, which keeps bursts from reading as queueing delay;
//! - entering fast recovery, or CWR (an ECN echo or local congestion), is the paper's fast
//!   recovery cut; a retransmission timeout its timeout rule. `ssthresh` is not used;
//! - `ecn_share` 1 (0 by default) registers other ops under the same name: they request
//!   ECN (`TCP_CONG_NEEDS_ECN`; a connection whose peer refuses it runs as `swift-reno`,
//!   ECN-less, as DCTCP's `dctcp-reno`) and answer marks as DCTCP does: once per window of
//!   data the marked fraction's moving average `alpha` is updated, and a window with marks
//!   cuts the fabric window by `alpha / 2` (`core/src/ecn_share.rs`); CWR no longer cuts.
//!   As receivers they echo CE as DCTCP's receivers do, so that the sender counts marked
//!   packets, not RTTs of echoes. The ops' flags are constants the stack reads at SYN time,
//!   and the parameter is read-only: it picks the ops once, at load.
//!
//! `ss -ti` shows the state in the BBR layout: `bw` is the pacing rate, `mrtt` the last
//! fabric delay (ms), `pacing_gain` the source of the samples (1 hardware stamps, 2
//! software stamps, 3 kernel RTT, 0 none yet) and `cwnd_gain` the law's window in packets,
//! fractional (docs/swift.md).

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
// `load` keeps a parameter set; swift keeps the law derived from it (check_params).
#[allow(dead_code)]
#[path = "module_params.rs"]
mod module_params;

// The pure control laws, shared with the host tests; not every item is used here.
#[allow(unreachable_pub, dead_code)]
#[path = "core/src/lib.rs"]
mod cc_core;

use cc_core::ecn_share::{EcnAck, EcnShare};
use cc_core::sample::SampleSource;
use cc_core::swift::{Action, Law, Sample, Swift, SwiftParams, FP_ONE, FP_SHIFT};

/// The module: Swift's ops, or with `ecn_share` 1 its ECN-sharing ops, registered for the
/// module's lifetime (`module_tcp_cong!` registers a fixed list; here the parameter picks).
struct TcpSwift {
    _plain: Option<Registration<SwiftCc<false>>>,
    _ecn_share: Option<Registration<SwiftCc<true>>>,
}

impl kernel::Module for TcpSwift {
    fn init(module: &'static kernel::ThisModule) -> Result<Self> {
        check_params()?;
        static PLAIN: Ops<SwiftCc<false>> = Ops::new();
        static ECN_SHARE: Ops<SwiftCc<true>> = Ops::new();
        let share = crate::module_parameters::ecn_share.value() == 1;
        Ok(TcpSwift {
            _plain: (!share)
                .then(|| Registration::new(module, &PLAIN))
                .transpose()?,
            _ecn_share: share
                .then(|| Registration::new(module, &ECN_SHARE))
                .transpose()?,
        })
    }
}

module! {
    type: TcpSwift,
    name: "tcp_swift",
    authors: ["rfl-tcp-cc developers"],
    description: "Swift: delay-target congestion control with fabric and endpoint windows",
    license: "GPL",
    params: {
        base_target_ns: u32 {
            default: crate::cc_core::swift::spec::BASE_TARGET_NS.default,
            description: "fabric target of a path without hops, large window (ns), [1, 100000000]",
            permissions: 0o444,
        },
        per_hop_ns: u32 {
            default: crate::cc_core::swift::spec::PER_HOP_NS.default,
            description: "fabric target added per hop (ns), [0, 1000000]",
            permissions: 0o444,
        },
        hops: u32 {
            default: crate::cc_core::swift::spec::HOPS.default,
            description: "hops of every path, [0, 64]",
            permissions: 0o444,
        },
        fs_range_ns: u32 {
            default: crate::cc_core::swift::spec::FS_RANGE_NS.default,
            description: "largest flow-scaling addition to the fabric target (ns), [0, 100000000]; 0: none",
            permissions: 0o444,
        },
        fs_min_cwnd_mpkts: u32 {
            default: crate::cc_core::swift::spec::FS_MIN_CWND_MPKTS.default,
            description: "window with all of fs_range_ns (milli-packets), [1, 999999999], below fs_max_cwnd_pkts",
            permissions: 0o444,
        },
        fs_max_cwnd_pkts: u32 {
            default: crate::cc_core::swift::spec::FS_MAX_CWND_PKTS.default,
            description: "window with no flow scaling (packets), [1, 1000000]",
            permissions: 0o444,
        },
        ai_mpkts: u32 {
            default: crate::cc_core::swift::spec::AI_MPKTS.default,
            description: "additive increase per RTT (milli-packets), [1, 100000]",
            permissions: 0o444,
        },
        beta_md_ppm: u32 {
            default: crate::cc_core::swift::spec::BETA_MD_PPM.default,
            description: "decrease per relative excess delay (ppm), [1, 1000000]",
            permissions: 0o444,
        },
        max_mdf_ppm: u32 {
            default: crate::cc_core::swift::spec::MAX_MDF_PPM.default,
            description: "largest cut of one decrease (ppm of the window), [1, 1000000]",
            permissions: 0o444,
        },
        min_cwnd_mpkts: u32 {
            default: crate::cc_core::swift::spec::MIN_CWND_MPKTS.default,
            description: "smallest window (milli-packets), [1, 1000000000], at most max_cwnd_pkts",
            permissions: 0o444,
        },
        max_cwnd_pkts: u32 {
            default: crate::cc_core::swift::spec::MAX_CWND_PKTS.default,
            description: "largest window (packets), [1, 1000000]",
            permissions: 0o444,
        },
        retx_reset_threshold: u32 {
            default: crate::cc_core::swift::spec::RETX_RESET_THRESHOLD.default,
            description: "timeouts in a row that set the window to min_cwnd_mpkts, [1, 1000]",
            permissions: 0o444,
        },
        endpoint_target_ns: u32 {
            default: crate::cc_core::swift::spec::ENDPOINT_TARGET_NS.default,
            description: "endpoint target (ns), [0, 100000000]; 0: no endpoint window",
            permissions: 0o444,
        },
        ecn_share: u32 {
            default: crate::cc_core::swift::spec::ECN_SHARE.default,
            description: "[0, 1]; 1: request ECN and cut the fabric window by alpha/2 per marked window, as dctcp; 0: CWR is a fast recovery cut",
            permissions: 0o444,
        },
    },
}

/// The law of the parameters `check_params` validated at load: they are read-only (0o444),
/// and the law is needed on every ACK, where reading each module parameter is a call and
/// the flow-scaling constants would need a square root.
static LAW: SetOnce<Law> = SetOnce::new();

fn law() -> Law {
    LAW.as_ref().copied().unwrap_or_else(Law::default_law)
}

fn read_params() -> SwiftParams {
    use crate::module_parameters as m;
    SwiftParams {
        base_target_ns: m::base_target_ns.value(),
        per_hop_ns: m::per_hop_ns.value(),
        hops: m::hops.value(),
        fs_range_ns: m::fs_range_ns.value(),
        fs_min_cwnd_mpkts: m::fs_min_cwnd_mpkts.value(),
        fs_max_cwnd_pkts: m::fs_max_cwnd_pkts.value(),
        ai_mpkts: m::ai_mpkts.value(),
        beta_md_ppm: m::beta_md_ppm.value(),
        max_mdf_ppm: m::max_mdf_ppm.value(),
        min_cwnd_mpkts: m::min_cwnd_mpkts.value(),
        max_cwnd_pkts: m::max_cwnd_pkts.value(),
        retx_reset_threshold: m::retx_reset_threshold.value(),
        endpoint_target_ns: m::endpoint_target_ns.value(),
    }
}

/// Per-socket state, in `icsk_ca_priv`.
#[derive(Clone, Copy, Zeroable)]
struct State {
    swift: Swift,
    /// Clock of the last delay-stamp sample (ns).
    stamped_ns: u64,
    /// This ACK's network RTT from `pkts_acked`, for `cong_control` (0: none).
    pending_net_rtt_ns: u32,
    /// Its [`SampleSource::code`].
    pending_source: u8,
    /// The connection negotiated the delay-stamp option.
    stamps: bool,
    /// `ecn_share`'s marked fraction and window (unused by the plain ops).
    ecn: EcnShare,
}

/// RTTs without a delay sample after which a connection that negotiated the option uses
/// the kernel's RTT (at least `SILENT_MIN_NS`).
const SILENT_RTTS: u64 = 4;
const SILENT_MIN_NS: u64 = 1_000_000;

/// Below this window (packets) cwnd is `PACED_BELOW_PKTS` and the pacer sets the rate.
const PACED_BELOW_PKTS: u32 = 2;

/// Whether the law's window `w_fp` is in the paced regime (below `PACED_BELOW_PKTS`).
fn paced(w_fp: u64) -> bool {
    w_fp < u64::from(PACED_BELOW_PKTS) << FP_SHIFT
}
/// Above it, the pacing rate is this many times the window per RTT.
const PACING_GAIN: u64 = 2;

/// tcp:tcp_cong_decision's `what` for a loss event; an ACK's is the law's step code
/// (`Action::code`: fabric step in bits 0-3, endpoint step in bits 4-7).
const TRACE_FAST_RECOVERY: u32 = 1 << 8;
const TRACE_TIMEOUT: u32 = 2 << 8;
/// `ecn_share`: a window with marks ended and cut the fabric window by `alpha / 2`.
const TRACE_ECN_SHARE: u32 = 3 << 8;

/// Published words, read by `get_info` without the socket lock.
const INFO_FABRIC_NS: usize = 0;
const INFO_SOURCE: usize = 1;
const INFO_CWND_256: usize = 2;

/// Swift; `ECN`: the `ecn_share` ops.
struct SwiftCc<const ECN: bool>;

impl<const ECN: bool> SwiftCc<ECN> {
    /// The `ecn_share` answer is in force: these are its ops and the peer agreed to ECN.
    /// The ECN-less sibling (`swift-reno`, after `fall_back_from_ecn`) is the same type; it
    /// behaves as the plain ops do (CWR is a fast recovery cut), as C `dctcp-reno` behaves
    /// as Reno.
    fn shares_ecn(sk: &Sock<'_>) -> bool {
        ECN && !sk.ecn_fallback_active()
    }

    /// Sets cwnd and the pacing rate from the law; publishes what `ss` shows.
    fn apply(sk: &mut Sock<'_>, st: &State, law: &Law) {
        let w_fp = st.swift.cwnd_fp(law);
        let mss = sk.mss();
        let (cwnd, rate) = match st.swift.paced_rate_bytes_per_sec(law, mss) {
            Some(rate) if paced(w_fp) => (PACED_BELOW_PKTS, rate.max(1)),
            Some(rate) => (
                u32::try_from(w_fp >> FP_SHIFT).unwrap_or(u32::MAX),
                rate.saturating_mul(PACING_GAIN),
            ),
            // No RTT yet: the window alone, unpaced.
            None => (
                u32::try_from(w_fp >> FP_SHIFT)
                    .unwrap_or(u32::MAX)
                    .max(PACED_BELOW_PKTS),
                u64::MAX,
            ),
        };
        sk.set_cwnd(cwnd.max(PACED_BELOW_PKTS));
        sk.set_pacing_rate_bytes_per_sec(rate);
        let source = st.swift.source().map_or(0, |s| u32::from(s.code()));
        // The window in 1/256 packets (`ss` shows it as a gain).
        let cwnd_256 = u32::try_from(w_fp >> (FP_SHIFT - 8)).unwrap_or(u32::MAX);
        sk.publish_info(&[st.swift.fabric_ns(), source, cwnd_256]);
    }

    fn trace(sk: &Sock<'_>, st: &State, what: u32, law: &Law) {
        let s = &st.swift;
        let mpkts = |w: u64| cc_core::swift::fp_to_mpkts(w);
        sk.trace_decision(
            what,
            [
                u64::from(s.fabric_ns()),
                u64::from(s.target_ns()),
                u64::from(s.endpoint_ns()),
            ],
            [mpkts(s.fcwnd_fp()), mpkts(s.cwnd_fp(law))],
        );
    }

    /// This ACK's sample: the option's network RTT (with the endpoint delay where the
    /// kernel's RTT is usable), else the kernel's RTT once the option is absent or silent.
    ///
    /// A Linux receiver ACKs a second full segment at once (unless its application lags
    /// behind: a real endpoint delay, or in quickack mode) but holds a lone one's ACK until
    /// the next segment or its delayed-ACK timer (tens of ms). The stack flags an ACK as
    /// maybe delayed only for one segment shorter than `mss_cache` with nothing else
    /// delivered meanwhile (with the option's 8 bytes, a lone full segment). So the hold
    /// of an ACK of one segment, or of one flagged, beyond the endpoint target may be the
    /// receiver's ACK policy, not its congestion: above two packets it gives no endpoint
    /// delay (ACKs of two will come), and in the paced regime, where every segment leaves
    /// alone and no ACK of two comes at a slow rate, it counts as none (the core stops the
    /// endpoint window's growth at the fabric window). Otherwise a flow whose endpoint
    /// window fell below two packets (after a real hold) stayed there: its pacer, slowed by
    /// that delay, kept segments alone, and their ACKs never let the window grow (10 Gbit/s
    /// incasts' flows held at 2 Mbit/s; docs/swift.md). The price: a receiver congested
    /// while the flow is paced is seen only on ACKs of two segments. Without the option
    /// the kernel's RTT is the fabric delay, a flagged ACK's excepted.
    fn sample(
        st: &mut State,
        law: &Law,
        now_ns: u64,
        rs: &RateSample,
        paced: bool,
    ) -> Option<Sample> {
        let maybe_held = rs.is_ack_delayed || rs.acked_sacked <= 1;
        let kernel_rtt_ns = rs.rtt_us.map(|us| u64::from(us) * 1000);
        let net_rtt_ns = core::mem::take(&mut st.pending_net_rtt_ns);
        if st.stamps && net_rtt_ns != 0 {
            st.stamped_ns = now_ns;
            let source = SampleSource::from_code(st.pending_source)?;
            let endpoint_ns = kernel_rtt_ns
                .map(|k| u32::try_from(k.saturating_sub(net_rtt_ns.into())).unwrap_or(u32::MAX))
                .and_then(|e| match maybe_held && e >= law.p.endpoint_target_ns {
                    false => Some(e),
                    true if paced => Some(0),
                    true => None,
                });
            return Some(Sample {
                source,
                fabric_ns: net_rtt_ns,
                endpoint_ns,
            });
        }
        let silent_ns = (SILENT_RTTS * u64::from(st.swift.rtt_ns())).max(SILENT_MIN_NS);
        let silent = now_ns.saturating_sub(st.stamped_ns) >= silent_ns;
        if st.stamps && !silent {
            return None;
        }
        Some(Sample {
            source: SampleSource::KernelRtt,
            fabric_ns: u32::try_from(kernel_rtt_ns.filter(|_| !rs.is_ack_delayed)?)
                .unwrap_or(u32::MAX),
            endpoint_ns: None,
        })
    }
}

#[vtable]
impl<const ECN: bool> Algorithm for SwiftCc<ECN> {
    const NAME: &'static CStr = c"swift";
    // Restricted, as in-tree algorithms other than Reno are; an active open offers the
    // delay-stamp option; the `ecn_share` ops need ECN, as DCTCP.
    const FLAGS: Flags = if ECN {
        Flags::DELAY_STAMPS.union(Flags::NEEDS_ECN)
    } else {
        Flags::DELAY_STAMPS
    };
    const INFO_WORDS: usize = 3;
    type Data = State;

    fn init(sk: &mut Sock<'_>, st: &mut State) {
        let law = law();
        st.swift = Swift::new(&law, sk.cwnd());
        st.stamps = sk.delay_stamps_negotiated();
        st.stamped_ns = sk.now_us().saturating_mul(1000);
        sk.request_internal_pacing();
        if ECN {
            st.ecn = EcnShare::new(sk.delivered(), sk.delivered_ce());
            // A peer that refused ECN: the ECN-less sibling, so that no packet goes out
            // ECN-capable (a listener's or a closed socket's children negotiate later).
            if !sk.ecn_fallback_active() && !sk.ecn_enabled() && !sk.is_listen_or_close() {
                sk.fall_back_from_ecn();
            }
        }
        Self::apply(sk, st, &law);
    }

    fn pkts_acked(_sk: &mut Sock<'_>, st: &mut State, sample: &AckSample) {
        // Called for this ACK before cong_control, which uses it.
        if let Some(d) = sample.delay {
            st.pending_net_rtt_ns = d.net_rtt_ns;
            st.pending_source = delay_source::sample_source(d.source).code();
        }
    }

    fn cong_control(sk: &mut Sock<'_>, st: &mut State, _ack: u32, f: AckFlags, rs: &RateSample) {
        let law = law();
        let now_ns = sk.now_us().saturating_mul(1000);
        let sample = Self::sample(st, &law, now_ns, rs, paced(st.swift.cwnd_fp(&law)));
        let action = st
            .swift
            .on_ack(&law, now_ns, rs.acked_sacked, sample.as_ref());
        // With `ecn_share`: a window with marks that ends here cuts the fabric window.
        let ecn_cut = if Self::shares_ecn(sk) {
            let a = EcnAck {
                ece: f.ece(),
                in_cwr: sk.ca_state() == CaState::Cwr,
                delivered_pkts: sk.delivered(),
                delivered_ce_pkts: sk.delivered_ce(),
                in_flight_pkts: rs.prior_in_flight,
            };
            st.swift.on_ecn_ack(&law, now_ns, Some(&mut st.ecn), &a)
        } else {
            None
        };
        Self::apply(sk, st, &law);
        if sample.is_some() {
            // tcp:tcp_cong_decision per ACK with a sample (docs/swift.md).
            Self::trace(sk, st, action.code(), &law);
        }
        if let Some(cut) = ecn_cut {
            Self::trace(sk, st, TRACE_ECN_SHARE | cut.code(), &law);
        }
    }

    fn set_state(sk: &mut Sock<'_>, st: &mut State, new_state: CaState) {
        let law = law();
        let now_ns = sk.now_us().saturating_mul(1000);
        let reducing = |s: CaState| matches!(s, CaState::Cwr | CaState::Recovery | CaState::Loss);
        let action: Action;
        let what = match new_state {
            CaState::Loss => {
                action = st.swift.on_timeout(&law, now_ns);
                TRACE_TIMEOUT
            }
            // With `ecn_share`, marks are answered per window (cong_control).
            CaState::Cwr if !reducing(sk.ca_state()) => {
                let Some(cut) = st.swift.on_cwr(&law, now_ns, Self::shares_ecn(sk)) else {
                    return;
                };
                action = cut;
                TRACE_FAST_RECOVERY
            }
            CaState::Recovery if !reducing(sk.ca_state()) => {
                action = st.swift.on_fast_recovery(&law, now_ns);
                TRACE_FAST_RECOVERY
            }
            _ => return,
        };
        Self::apply(sk, st, &law);
        Self::trace(sk, st, what | action.code(), &law);
    }

    fn cwnd_event(sk: &mut Sock<'_>, _st: &mut State, event: Event) {
        // Only the `ecn_share` ops (TCP_CONG_NEEDS_ECN) are told of CE.
        if let Event::EcnIsCe | Event::EcnNoCe = event {
            echo_ce(sk, event == Event::EcnIsCe);
        }
    }

    fn ssthresh(sk: &mut Sock<'_>, _st: &mut State) -> u32 {
        // The law sets the window on loss (set_state); ssthresh is left as it is.
        sk.ssthresh()
    }

    fn undo_cwnd(sk: &mut Sock<'_>, _st: &mut State) -> u32 {
        sk.cwnd()
    }

    fn get_info(sk: &InfoSock<'_>, published: &[u32]) -> Option<Info> {
        Some(Info::Bbr {
            bw_bytes_per_sec: sk.pacing_rate_bytes_per_sec(),
            min_rtt_us: published[INFO_FABRIC_NS] / 1000,
            pacing_gain: published[INFO_SOURCE] * 256,
            cwnd_gain: published[INFO_CWND_256],
        })
    }
}

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

// One packet is 2^20 in the law's windows; the published window is 1/256 packets.
const _: () = assert!(FP_ONE == 1 << 20 && FP_SHIFT >= 8);

fn check_params() -> Result {
    let share = crate::module_parameters::ecn_share.value();
    module_params::check(cc_core::swift::spec::ECN_SHARE.check(share))?;
    let p = read_params();
    module_params::check(p.validate())?;
    if let Ok(law) = Law::new(&p) {
        LAW.populate(law);
    }
    Ok(())
}

#[kunit_tests(rust_swift)]
mod tests {
    use super::*;
    use kernel::net::tcp::cong::{testing::TestSocket, DelaySample, DelaySource};

    const MSS: u32 = 1448;

    /// The same ACK stream as the kernel's C controllers (no delay samples: the kernel's
    /// RTT); prints the costs. The window stays within its bounds.
    #[test]
    fn cpu_cost_beside_c_controllers() -> Result {
        use crate::kunit_cpu_cost::{ns_per_ack, report, report_c_references};
        let mut s = TestSocket::with_algorithm::<SwiftCc<false>>()?;
        report("rust_swift", "swift", ns_per_ack(&mut s, false));
        assert!(s.cwnd() >= PACED_BELOW_PKTS && s.cwnd() <= law().p.max_cwnd_pkts);
        report_c_references("rust_swift")
    }

    /// A socket at window `cwnd`, with or without the option, clock at 1 s.
    fn socket(stamps: bool, cwnd: u32) -> Result<TestSocket> {
        let mut s = TestSocket::before_init::<SwiftCc<false>>()?;
        s.set_delay_stamps(stamps);
        s.set_window(cwnd, u32::MAX >> 1, 100_000);
        s.set_cwnd_limited(true, cwnd);
        s.set_mss_and_clock(MSS, 1_000_000);
        s.init();
        Ok(s)
    }

    /// One ACK of one packet at `now_us` with a network RTT of `net_ns` and a kernel RTT of
    /// `rtt_us` (-1: none).
    fn stamped_ack(s: &mut TestSocket, now_us: u64, net_ns: u32, rtt_us: i32) {
        stamped_acks(s, now_us, net_ns, rtt_us, 1);
    }

    /// The same for an ACK of `pkts` packets.
    fn stamped_acks(s: &mut TestSocket, now_us: u64, net_ns: u32, rtt_us: i32, pkts: u32) {
        s.set_mss_and_clock(MSS, now_us);
        let d = DelaySample {
            source: DelaySource::Device,
            owd_ns: 12_345,
            net_rtt_ns: net_ns,
        };
        s.pkts_acked_with_delay(pkts, rtt_us, 0, Some(d));
        s.cong_control(pkts, rtt_us.into(), false, false);
    }

    fn rtt_ack(s: &mut TestSocket, now_us: u64, rtt_us: i32, delayed: bool) {
        s.set_mss_and_clock(MSS, now_us);
        s.pkts_acked(1, rtt_us, 0);
        s.cong_control(1, rtt_us.into(), false, delayed);
    }

    /// `(mrtt in us, pacing_gain, cwnd_gain)` of `ss`'s BBR layout (gains in 1/256).
    /// (An error, not a panic, if swift reports nothing: a panic would end the KUnit guest.)
    fn info(s: &mut TestSocket) -> Result<(u32, u32, u32)> {
        let (_, b) = s.get_info().ok_or(EINVAL)?;
        let word = |i: usize| u32::from_ne_bytes([b[i], b[i + 1], b[i + 2], b[i + 3]]);
        Ok((word(8), word(12), word(16)))
    }

    #[test]
    fn below_target_grows_above_cuts_once_per_rtt() -> Result {
        let mut s = socket(true, 10)?;
        assert!(s.sock().pacing() == kernel::net::tcp::cong::Pacing::Internal);
        // 20 us of network RTT, 25 us kernel RTT: below both targets; each ACK adds
        // 1 / cwnd, eleven of them a little over one packet.
        for i in 0..11 {
            stamped_ack(&mut s, 1_000_010 + i, 20_000, 25);
        }
        assert_eq!(s.cwnd(), 11);
        let (mrtt_us, source, cwnd_256) = info(&mut s)?;
        assert_eq!((mrtt_us, source), (20, 2 * 256));
        assert!((11 * 256..12 * 256).contains(&cwnd_256));
        // 200 us of network RTT against 50: cut by max_mdf (0.8 * 150 / 200 > 0.5).
        stamped_ack(&mut s, 1_000_100, 200_000, 205);
        assert_eq!(s.cwnd(), 5);
        // Within that RTT: held.
        stamped_ack(&mut s, 1_000_200, 200_000, 205);
        assert_eq!(s.cwnd(), 5);
        stamped_ack(&mut s, 1_000_400, 200_000, 205);
        assert_eq!(s.cwnd(), 2);
        Ok(())
    }

    #[test]
    fn below_two_packets_paces_at_the_laws_rate() -> Result {
        let mut s = socket(true, 2)?;
        let mut now = 1_000_000;
        for _ in 0..6 {
            now += 1_000;
            stamped_ack(&mut s, now, 400_000, 405);
        }
        // The law's window is below one packet; TCP's is 2, the pacer sets the rate.
        let (_, _, cwnd_256) = info(&mut s)?;
        assert!(cwnd_256 < 256);
        assert_eq!(s.cwnd(), PACED_BELOW_PKTS);
        let l = law();
        let st_rate =
            cc_core::swift::rate_bytes_per_sec(u64::from(cwnd_256) << (FP_SHIFT - 8), MSS, 405_000)
                .ok_or(EINVAL)?;
        let rate = s.sock().pacing_rate_bytes_per_sec();
        // Within the rounding of the published window.
        assert!(
            rate >= st_rate && rate <= st_rate + u64::from(MSS) * 1_000_000_000 / 405_000 / 256
        );
        assert!(rate < u64::from(MSS) * 1_000_000_000 / 405_000);
        assert!(l.min_cwnd_fp() <= u64::from(cwnd_256) << (FP_SHIFT - 8));
        Ok(())
    }

    /// An ACK of one segment may have waited for the receiver's delayed-ACK timer: its
    /// hold is not endpoint delay, and the pacer keeps the fabric's rate. An ACK of two
    /// segments is sent at once: its hold is.
    #[test]
    fn a_lone_segments_ack_brings_no_endpoint_delay() -> Result {
        let mut s = socket(true, 1)?;
        // Fabric 80 us; the kernel's RTT 30 ms, a delayed ACK's hold.
        let ack = |s: &mut TestSocket, now_us: u64, pkts: u32| {
            stamped_acks(s, now_us, 80_000, 30_000, pkts);
        };
        // Fabric 80 us, above the target: the window drops below one packet, paced.
        ack(&mut s, 1_001_000, 1);
        let (mrtt_us, source, cwnd_256) = info(&mut s)?;
        assert_eq!((mrtt_us, source), (80, 2 * 256));
        assert!(cwnd_256 < 256 && s.cwnd() == PACED_BELOW_PKTS);
        // At the law's window per 80 us (about 15 MB/s), not per 30 ms (about 40 KB/s).
        let one_pkt_per_ms = u64::from(MSS) * 1000;
        assert!(s.sock().pacing_rate_bytes_per_sec() > one_pkt_per_ms);
        ack(&mut s, 1_001_100, 1);
        assert!(s.sock().pacing_rate_bytes_per_sec() > one_pkt_per_ms);
        // Two segments: the 30 ms is the receiver's, endpoint delay.
        ack(&mut s, 1_001_200, 2);
        assert!(s.sock().pacing_rate_bytes_per_sec() < one_pkt_per_ms);
        Ok(())
    }

    #[test]
    fn without_the_option_the_kernel_rtt_is_the_fabric_delay() -> Result {
        let mut s = socket(false, 10)?;
        // A stray echo on a connection that did not negotiate the option is not used.
        stamped_ack(&mut s, 1_000_010, 900_000, 30);
        assert_eq!(info(&mut s)?.0, 30);
        assert_eq!(info(&mut s)?.1, 3 * 256);
        // Possibly delayed ACKs bring no sample.
        rtt_ack(&mut s, 1_000_100, 40_000, true);
        assert_eq!(info(&mut s)?.0, 30);
        rtt_ack(&mut s, 1_000_200, 300, false);
        assert!(s.cwnd() < 10);
        Ok(())
    }

    #[test]
    fn negotiated_but_silent_falls_back_to_the_kernel_rtt() -> Result {
        let mut s = socket(true, 10)?;
        stamped_ack(&mut s, 1_000_010, 20_000, 25);
        // Kernel RTT samples only: not used while the option may still deliver.
        rtt_ack(&mut s, 1_000_020, 30, false);
        assert_eq!(info(&mut s)?.1, 2 * 256);
        // After SILENT_MIN_NS (1 ms, more than 4 RTTs here) without an echo: used.
        rtt_ack(&mut s, 1_001_100, 30, false);
        assert_eq!(info(&mut s)?, (30, 3 * 256, info(&mut s)?.2));
        // Echoes again: back to them.
        stamped_ack(&mut s, 1_001_200, 21_000, 26);
        assert_eq!(info(&mut s)?.1, 2 * 256);
        Ok(())
    }

    #[test]
    fn endpoint_delay_limits_the_window() -> Result {
        let mut s = socket(true, 20)?;
        let mut now = 1_000_000;
        // Fabric 20 us, kernel RTT 420 us: 400 us of endpoint delay against 100 us, on
        // ACKs of two segments (one's may be a delayed ACK's hold: not counted).
        for _ in 0..4 {
            now += 1_000;
            stamped_acks(&mut s, now, 20_000, 420, 2);
        }
        assert!(s.cwnd() <= 3);
        // The same delay on ACKs flagged as possibly delayed: a 40 ms hold, maybe the
        // receiver's delayed-ACK timer, cuts nothing (paced: counted as no endpoint delay).
        let before = s.cwnd();
        for _ in 0..40 {
            now += 10;
            s.set_mss_and_clock(MSS, now);
            let d = DelaySample {
                source: DelaySource::Device,
                owd_ns: 1,
                net_rtt_ns: 20_000,
            };
            s.pkts_acked_with_delay(1, 40_000, 0, Some(d));
            s.cong_control(1, 40_000, false, true);
        }
        assert!(s.cwnd() >= before);
        Ok(())
    }

    #[test]
    fn fast_recovery_and_timeouts_cut_the_window() -> Result {
        let mut s = socket(true, 16)?;
        stamped_ack(&mut s, 1_000_010, 20_000, 25);
        let w = s.cwnd();
        s.set_mss_and_clock(MSS, 1_000_100);
        s.set_ca_state(CaState::Recovery);
        assert_eq!(s.cwnd(), w / 2);
        s.set_ca_state(CaState::Open);
        // Three timeouts in a row, each an RTT apart: halved, halved, floor.
        for (i, want) in [(1u64, w / 4), (2, PACED_BELOW_PKTS), (3, PACED_BELOW_PKTS)] {
            s.set_mss_and_clock(MSS, 1_000_100 + i * 1_000);
            s.set_ca_state(CaState::Loss);
            assert_eq!(s.cwnd(), want.max(PACED_BELOW_PKTS));
            s.set_ca_state(CaState::Open);
        }
        let (_, _, cwnd_256) = info(&mut s)?;
        assert!(u64::from(cwnd_256) <= (law().min_cwnd_fp() >> (FP_SHIFT - 8)) + 1);
        Ok(())
    }

    /// `ecn_share` 1's ops: they need ECN; CWR does not cut; a window that saw marks cuts
    /// the fabric window by alpha / 2 once, at its end; one without marks does not.
    #[test]
    fn ecn_share_cuts_by_half_alpha_once_per_marked_window() -> Result {
        use cc_core::ecn_share::keep;
        let ece = kernel::bindings::FLAG_ECE;
        let mut s = TestSocket::with_algorithm_ecn::<SwiftCc<true>>()?;
        assert!(s.ops_flags() & kernel::bindings::TCP_CONG_NEEDS_ECN != 0);
        assert_eq!(s.ops_name(), c"swift");
        // The law's window as published, in 1/256 packets; `keep` on 2^-20 packets.
        let w = |s: &mut TestSocket| -> Result<u64> { Ok(u64::from(info(s)?.2)) };
        let start = 10 << FP_SHIFT;
        let published = |w_fp: u64| w_fp >> (FP_SHIFT - 8);
        assert_eq!(w(&mut s)?, published(start));
        // CWR (an echo, or local congestion) alone: no cut.
        s.set_ca_state(CaState::Cwr);
        assert_eq!(w(&mut s)?, published(start));
        // Nothing in flight before each ACK (the test socket's): each ACK ends a window.
        // 10 delivered, all marked: alpha stays 1.0, halved.
        s.deliver(10, 10);
        s.cong_control_with(10, -1, false, false, ece);
        assert_eq!(w(&mut s)?, published(keep(start, 1024)));
        assert_eq!(s.cwnd(), 5);
        // An echo without new marks: alpha 960, no cut.
        s.deliver(10, 0);
        s.cong_control_with(10, -1, false, false, ece);
        assert_eq!(w(&mut s)?, published(keep(start, 1024)));
        // One of ten marked: alpha 960 - 60 + 6 = 906, one cut by 906 / 2048.
        s.deliver(10, 1);
        s.cong_control_with(10, -1, false, false, ece);
        assert_eq!(w(&mut s)?, published(keep(keep(start, 1024), 906)));
        s.set_ca_state(CaState::Open);
        Ok(())
    }

    /// Without ECN negotiated the `ecn_share` ops move to `swift-reno`, which sends no
    /// packet ECN-capable and cuts on CWR as the plain ops do; as receivers they echo CE as
    /// DCTCP's receivers do.
    #[test]
    fn ecn_share_falls_back_and_echoes_ce_at_once() -> Result {
        let s = TestSocket::with_algorithm::<SwiftCc<true>>()?;
        assert_eq!(s.ops_name(), c"swift-reno");
        assert!(s.ops_flags() & kernel::bindings::TCP_CONG_NEEDS_ECN == 0);
        // The sibling behaves as the plain ops: CWR is the fast recovery cut.
        let mut f = TestSocket::before_init::<SwiftCc<true>>()?;
        f.set_delay_stamps(true);
        f.set_window(16, u32::MAX >> 1, 100_000);
        f.set_cwnd_limited(true, 16);
        f.set_mss_and_clock(MSS, 1_000_000);
        f.init();
        assert_eq!(f.ops_name(), c"swift-reno");
        stamped_ack(&mut f, 1_000_010, 20_000, 25);
        let w = f.cwnd();
        f.set_mss_and_clock(MSS, 1_000_100);
        f.set_ca_state(CaState::Cwr);
        assert_eq!(f.cwnd(), w / 2);
        let ack_now = kernel::bindings::inet_csk_ack_state_t_ICSK_ACK_NOW as u8;
        let demand_cwr = kernel::bindings::TCP_ECN_DEMAND_CWR as u8;
        let mut r = TestSocket::with_algorithm_ecn::<SwiftCc<true>>()?;
        r.cwnd_event(Event::EcnNoCe);
        assert_eq!(r.ack_pending() & ack_now, 0);
        r.cwnd_event(Event::EcnIsCe);
        assert!(r.ack_pending() & ack_now != 0);
        assert!(r.ecn_flags() & demand_cwr != 0);
        r.cwnd_event(Event::EcnNoCe);
        assert!(r.ecn_flags() & demand_cwr == 0);
        Ok(())
    }

    /// `ecn_share` 0's ops: CWR is the fast recovery cut, as before.
    #[test]
    fn without_ecn_share_cwr_is_a_fast_recovery_cut() -> Result {
        let mut s = socket(true, 16)?;
        stamped_ack(&mut s, 1_000_010, 20_000, 25);
        let w = s.cwnd();
        s.set_mss_and_clock(MSS, 1_000_100);
        s.set_ca_state(CaState::Cwr);
        assert_eq!(s.cwnd(), w / 2);
        Ok(())
    }

    #[test]
    fn absurd_samples_keep_the_window_in_bounds() -> Result {
        let mut s = socket(true, 10)?;
        let mut now = 1_000_000u64;
        for (net_ns, rtt_us) in [
            (0, -1),
            (u32::MAX, i32::MAX),
            (1, 0),
            (u32::MAX, -1),
            (1 << 31, 1),
            (7, i32::MIN),
        ] {
            now += 1_000;
            s.set_mss_and_clock(MSS, now);
            let d = DelaySample {
                source: DelaySource::Tcp,
                owd_ns: u32::MAX,
                net_rtt_ns: net_ns,
            };
            s.pkts_acked_with_delay(u32::MAX, rtt_us, u32::MAX, Some(d));
            s.cong_control(u32::MAX, rtt_us.into(), true, false);
            s.cong_control(0, -1, false, false);
            let cwnd = s.cwnd();
            assert!((PACED_BELOW_PKTS..=law().p.max_cwnd_pkts).contains(&cwnd));
        }
        Ok(())
    }
}
