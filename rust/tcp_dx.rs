// SPDX-License-Identifier: GPL-2.0

//! DX: window congestion control on the one-way queuing delay.
//!
//! Lee, Park, Jang, Moon and Han, "Accurate Latency-based Congestion Feedback for
//! Datacenters", USENIX ATC 2015. The control law (Eq. 1 with `V` from Eq. 8, the base-OWD
//! drift rule, what the paper leaves open) is in `core/src/dx.rs`, shared with the host
//! tests; this file connects it to TCP:
//! - the ops carry `TCP_CONG_DELAY_STAMPS`: an active open offers the delay-stamp TCP
//!   option (patches/0009), and when the peer answers, every ACK that echoes a data
//!   segment brings its one-way delay and network RTT; the queuing delay is the one-way
//!   delay less its base. The samples come from the devices' hardware timestamps where both
//!   ends have them on (patches/0016), else from software stamps at the device boundary;
//!   the two clocks differ, so software samples are ignored while hardware ones keep
//!   coming (any in the last `SILENT_ROUNDS` rounds);
//! - when the peer does not answer (or on a passive open, whose SYN-ACK only echoes what
//!   the peer offered), the queuing delay is the kernel's RTT sample less its minimum, and
//!   `ss -ti` says so (`pacing_gain:3`); so it is after `SILENT_ROUNDS` rounds in a row
//!   without a delay sample on a connection that negotiated the option (a middlebox that
//!   strips options from ACKs), until samples come again;
//! - rounds are counted as DCTCP does: a round ends when the cumulative ACK passes what was
//!   sent when it began, and then Eq. 1 sets the window;
//! - slow start is Reno's, and ends at the first round whose average queuing delay reaches
//!   the headroom (the window becomes Eq. 1's); loss halves the window, as Reno does, and
//!   so does an ECN echo (`ssthresh`, TCP's CWR);
//! - `ecn_share` 1 (0 by default) registers other ops under the same name: they request
//!   ECN (`TCP_CONG_NEEDS_ECN`; a connection whose peer refuses it runs as `dx-reno`,
//!   ECN-less, as DCTCP's `dctcp-reno`) and answer an echo as DCTCP does: `alpha`, the
//!   marked fraction's moving average, is updated once per window of data
//!   (`in_ack_event`), and an echo sets `ssthresh` to `cwnd (1 - alpha / 2)`, once per
//!   window (TCP's CWR); a loss still halves. The state is DCTCP's own
//!   (`core/src/dctcp.rs`), its receiver side too. The ops' flags are constants the stack
//!   reads at SYN time, and the parameter is read-only: it picks the ops once, at load.
//!
//! `ss -ti` shows the state in the BBR layout: `mrtt` is DX's minimum network RTT (ms),
//! `cwnd_gain` the last round's average queuing delay in microseconds, `pacing_gain` the
//! source of its samples (1 hardware stamps, 2 software stamps, 3 RTT fallback, 0 none yet)
//! and `bw` the stack's pacing rate.

use kernel::net::tcp::cong::{
    AckEventFlags, AckSample, Algorithm, CaState, Event, Flags, Info, InfoSock, Ops, Registration,
    Sock,
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

// The pure control laws, shared with the host tests; not every item is used here.
#[allow(unreachable_pub, dead_code)]
#[path = "core/src/lib.rs"]
mod cc_core;

use cc_core::dctcp::{Counters, Dctcp};
use cc_core::dx::{self, DelaySample, Dx, DxParams};
use cc_core::ecn_share;
use cc_core::sample::SampleSource;
use cc_core::seq;

/// The module: DX's ops, or with `ecn_share` 1 its ECN-sharing ops, registered for the
/// module's lifetime (`module_tcp_cong!` registers a fixed list; here the parameter picks).
struct TcpDx {
    _plain: Option<Registration<DxCc<false>>>,
    _ecn_share: Option<Registration<DxCc<true>>>,
}

impl kernel::Module for TcpDx {
    fn init(module: &'static kernel::ThisModule) -> Result<Self> {
        check_params()?;
        static PLAIN: Ops<DxCc<false>> = Ops::new();
        static ECN_SHARE: Ops<DxCc<true>> = Ops::new();
        let share = crate::module_parameters::ecn_share.value() == 1;
        Ok(TcpDx {
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
    type: TcpDx,
    name: "tcp_dx",
    authors: ["rfl-tcp-cc developers"],
    description: "DX: congestion control on one-way queuing delay",
    license: "GPL",
    params: {
        headroom_ns: u32 {
            default: crate::cc_core::dx::spec::HEADROOM_NS.default,
            description: "queuing delay below which the window grows (ns), [1, 2000000000]",
            permissions: 0o444,
        },
        min_cwnd_pkts: u32 {
            default: crate::cc_core::dx::spec::MIN_CWND_PKTS.default,
            description: "smallest window DX leaves (packets), [1, 65535]",
            permissions: 0o444,
        },
        max_decrease_ppm: u32 {
            default: crate::cc_core::dx::spec::MAX_DECREASE_PPM.default,
            description: "largest cut of one round (ppm of the window), [1, 1000000]",
            permissions: 0o444,
        },
        base_rtt_slack_ns: u32 {
            default: crate::cc_core::dx::spec::BASE_RTT_SLACK_NS.default,
            description: "RTT within this of its minimum refreshes the base OWD (ns), [0, 2000000000], at most headroom_ns",
            permissions: 0o444,
        },
        min_rtt_expiry_rounds: u32 {
            default: crate::cc_core::dx::spec::MIN_RTT_EXPIRY_ROUNDS.default,
            description: "rounds without a base refresh before the minimum RTT expires, [0, 10000]; 0: never",
            permissions: 0o444,
        },
        ecn_share: u32 {
            default: crate::cc_core::dx::spec::ECN_SHARE.default,
            description: "[0, 1]; 1: request ECN and cut the window by alpha/2 per marked window, as dctcp; 0: halve",
            permissions: 0o444,
        },
    },
}

/// The parameters as `check_params` validated them at load: they are read-only (0o444),
/// and `params()` is on every ACK's path, where reading each module parameter is a call.
static PARAMS: SetOnce<DxParams> = SetOnce::new();

fn params() -> DxParams {
    PARAMS.as_ref().copied().unwrap_or_else(read_params)
}

fn read_params() -> DxParams {
    use crate::module_parameters as m;
    DxParams {
        headroom_ns: m::headroom_ns.value(),
        min_cwnd_pkts: m::min_cwnd_pkts.value(),
        max_decrease_ppm: m::max_decrease_ppm.value(),
        base_rtt_slack_ns: m::base_rtt_slack_ns.value(),
        min_rtt_expiry_rounds: m::min_rtt_expiry_rounds.value(),
    }
}

/// Per-socket state, in `icsk_ca_priv`.
#[derive(Clone, Copy, Zeroable)]
struct State {
    dx: Dx,
    /// The round ends when the cumulative ACK passes this sequence number.
    round_end_seq: u32,
    /// The connection negotiated the delay-stamp option.
    stamps: bool,
    /// The current round had a delay sample.
    round_stamped: bool,
    /// Rounds in a row without one (saturating).
    silent_rounds: u8,
    /// The current round had a hardware-stamped sample.
    round_hw: bool,
    /// Rounds in a row without one (saturating; `SILENT_ROUNDS` until the first).
    hw_silent_rounds: u8,
    /// `ecn_share`'s DCTCP state: alpha, its window, the receiver's CE state (unused by
    /// the plain ops).
    dctcp: Dctcp,
}

/// Rounds in a row without a delay sample after which a connection that negotiated the
/// option uses the RTT instead.
const SILENT_ROUNDS: u8 = 4;

/// DX; `ECN`: the `ecn_share` ops.
struct DxCc<const ECN: bool>;

/// tcp:tcp_cong_decision's `what` at a round's end: slow start goes on, slow start ends
/// (Eq. 1 sets cwnd and ssthresh), Eq. 1 sets them in congestion avoidance, or no increase
/// for an application-limited flow.
const TRACE_SLOW_START: u32 = 0;
const TRACE_SLOW_START_END: u32 = 1;
const TRACE_EQ1: u32 = 2;
const TRACE_APP_LIMITED: u32 = 3;
/// `ecn_share`: alpha updated at the end of an observation window (DCTCP's event).
const TRACE_ECN_ALPHA: u32 = 4;

/// Published words, read by `get_info` without the socket lock.
const INFO_MIN_RTT_NS: usize = 0;
const INFO_Q_NS: usize = 1;
const INFO_SOURCE: usize = 2;

fn counters(sk: &Sock<'_>) -> Counters {
    Counters {
        snd_una: sk.snd_una(),
        snd_nxt: sk.snd_nxt(),
        delivered_pkts: sk.delivered(),
        delivered_ce_pkts: sk.delivered_ce(),
    }
}

impl<const ECN: bool> DxCc<ECN> {
    fn publish(sk: &mut Sock<'_>, st: &State) {
        let source = st.dx.source().map_or(0, |s| s as u32);
        sk.publish_info(&[st.dx.min_rtt_ns(), st.dx.last_q_ns(), source]);
    }

    fn start_round(sk: &Sock<'_>, st: &mut State) {
        st.round_end_seq = sk.snd_nxt();
    }

    /// The `ecn_share` answer is in force: these are its ops and the peer agreed to ECN.
    /// The ECN-less sibling (`dx-reno`, after `fall_back_from_ecn`) is the same type; it
    /// behaves as the plain ops do, as C `dctcp-reno` behaves as Reno.
    fn shares_ecn(sk: &Sock<'_>) -> bool {
        ECN && !sk.ecn_fallback_active()
    }
}

#[vtable]
impl<const ECN: bool> Algorithm for DxCc<ECN> {
    const NAME: &'static CStr = c"dx";
    // Restricted, as in-tree algorithms other than Reno are; the `ecn_share` ops need ECN,
    // as DCTCP.
    const FLAGS: Flags = if ECN {
        Flags::DELAY_STAMPS.union(Flags::NEEDS_ECN)
    } else {
        Flags::DELAY_STAMPS
    };
    const INFO_WORDS: usize = 3;
    type Data = State;

    fn init(sk: &mut Sock<'_>, st: &mut State) {
        st.stamps = sk.delay_stamps_negotiated();
        st.hw_silent_rounds = SILENT_ROUNDS;
        Self::start_round(sk, st);
        if ECN {
            st.dctcp = Dctcp::new(ecn_share::INIT_ALPHA, &counters(sk), sk.rcv_nxt());
            // A peer that refused ECN: the ECN-less sibling, so that no packet goes out
            // ECN-capable (a listener's or a closed socket's children negotiate later).
            if !sk.ecn_fallback_active() && !sk.ecn_enabled() && !sk.is_listen_or_close() {
                sk.fall_back_from_ecn();
            }
        }
        Self::publish(sk, st);
    }

    fn in_ack_event(sk: &mut Sock<'_>, st: &mut State, _flags: AckEventFlags) {
        // `ecn_share`: DCTCP's observation window, as C dctcp_update_alpha().
        if !Self::shares_ecn(sk) || seq::before(sk.snd_una(), st.dctcp.next_seq) {
            return;
        }
        let alpha_before = st.dctcp.alpha;
        if let Some(w) = st.dctcp.on_ack(ecn_share::SHIFT_G, &counters(sk)) {
            // tcp:tcp_cong_decision (docs/dx.md): the window's packets, marked ones, alpha
            // before; alpha after, cwnd.
            let inputs = [w.delivered_pkts, w.delivered_ce_pkts, alpha_before];
            let outputs = [u64::from(st.dctcp.alpha), u64::from(sk.cwnd())];
            sk.trace_decision(TRACE_ECN_ALPHA, inputs.map(u64::from), outputs);
        }
    }

    fn pkts_acked(_sk: &mut Sock<'_>, st: &mut State, sample: &AckSample) {
        let p = params();
        let use_rtt = !st.stamps || st.silent_rounds >= SILENT_ROUNDS;
        let sample = match (sample.delay, use_rtt, sample.rtt_us) {
            (Some(d), _, _) if st.stamps => {
                let source = delay_source::sample_source(d.source);
                if source == SampleSource::Hardware {
                    st.round_hw = true;
                    st.hw_silent_rounds = 0;
                } else if st.hw_silent_rounds < SILENT_ROUNDS {
                    // While hardware samples come, software ones (another clock) would
                    // restart the estimator.
                    return;
                }
                DelaySample {
                    source,
                    owd_ns: d.owd_ns,
                    rtt_ns: d.net_rtt_ns,
                }
            }
            // Without the option, the RTT less its minimum; the kernel's samples of
            // retransmitted data are already left out (Karn).
            (None, true, Some(rtt_us)) => {
                let rtt_ns = rtt_us.saturating_mul(1000);
                DelaySample {
                    source: SampleSource::KernelRtt,
                    owd_ns: rtt_ns,
                    rtt_ns,
                }
            }
            _ => return,
        };
        if sample.source != SampleSource::KernelRtt {
            st.round_stamped = true;
        }
        st.dx.on_sample(&sample, &p);
    }

    fn cong_avoid(sk: &mut Sock<'_>, st: &mut State, ack: u32, acked: u32) {
        let p = params();
        if seq::after(ack, st.round_end_seq) {
            let cwnd = sk.cwnd();
            let next = st.dx.on_round_end(cwnd, &p);
            Self::start_round(sk, st);
            st.silent_rounds = if st.round_stamped {
                0
            } else {
                st.silent_rounds.saturating_add(1)
            };
            st.round_stamped = false;
            st.hw_silent_rounds = if st.round_hw {
                0
            } else {
                st.hw_silent_rounds.saturating_add(1)
            };
            st.round_hw = false;
            // tcp:tcp_cong_decision's code (docs/dx.md).
            let mut what = TRACE_SLOW_START;
            if sk.in_slow_start() {
                if st.dx.exit_slow_start(&p) {
                    what = TRACE_SLOW_START_END;
                    sk.set_cwnd(next);
                    sk.set_ssthresh(next);
                }
            } else if next < cwnd || sk.is_cwnd_limited() {
                what = TRACE_EQ1;
                // An application-limited flow gets no increase, as with Reno.
                let next = next.min(sk.cwnd_clamp());
                sk.set_cwnd(next);
                // Eq. 1 owns the window after slow start: ssthresh follows it, or a cut
                // below the threshold left by slow start would be slow-started straight
                // back, pinning each flow at the window it had when slow start ended.
                sk.set_ssthresh(next);
            } else {
                what = TRACE_APP_LIMITED;
            }
            let q_ns = u64::from(st.dx.last_q_ns());
            let inputs = [q_ns, u64::from(st.dx.min_rtt_ns()), u64::from(cwnd)];
            sk.trace_decision(
                what,
                inputs,
                [u64::from(sk.cwnd()), u64::from(sk.ssthresh())],
            );
            Self::publish(sk, st);
        }
        if sk.in_slow_start() && sk.is_cwnd_limited() {
            let _leftover = sk.slow_start(acked);
        }
    }

    fn ssthresh(sk: &mut Sock<'_>, st: &mut State) -> u32 {
        // Halved; with `ecn_share` cwnd (1 - alpha / 2), a loss then halving it (set_state,
        // cwnd_event), as DCTCP.
        let share = if Self::shares_ecn(sk) {
            Some(&mut st.dctcp)
        } else {
            None
        };
        dx::ssthresh_pkts(sk.cwnd(), share)
    }

    fn undo_cwnd(sk: &mut Sock<'_>, _st: &mut State) -> u32 {
        sk.cwnd().max(sk.prior_cwnd())
    }

    fn set_state(sk: &mut Sock<'_>, st: &mut State, new_state: CaState) {
        if Self::shares_ecn(sk)
            && new_state == CaState::Recovery
            && sk.ca_state() != CaState::Recovery
        {
            // Fast recovery halves, whatever alpha says (a timeout: cwnd_event).
            sk.set_ssthresh(st.dctcp.on_loss(sk.cwnd()));
        }
        if matches!(new_state, CaState::Loss) {
            // After a timeout the window restarts; so does the round.
            Self::start_round(sk, st);
        }
    }

    fn cwnd_event(sk: &mut Sock<'_>, st: &mut State, event: Event) {
        match event {
            Event::CwndRestart => Self::start_round(sk, st),
            // Only the `ecn_share` ops are told of CE: DCTCP's receiver, which echoes ECE
            // exactly for the CE-marked data an ACK acknowledges.
            Event::EcnIsCe | Event::EcnNoCe => {
                let ce = event == Event::EcnIsCe;
                if let Some(prior) = st.dctcp.on_ecn(ce, sk.rcv_nxt()) {
                    // The delayed ACK covers data received in the previous state.
                    if sk.delayed_ack_pending() {
                        sk.set_demand_cwr(prior.ce);
                        sk.send_ack(prior.rcv_nxt);
                    }
                    sk.request_immediate_ack();
                }
                sk.set_demand_cwr(ce);
            }
            // A timeout halves, whatever alpha says.
            Event::Loss if Self::shares_ecn(sk) => sk.set_ssthresh(st.dctcp.on_loss(sk.cwnd())),
            _ => {}
        }
    }

    fn get_info(sk: &InfoSock<'_>, published: &[u32]) -> Option<Info> {
        Some(Info::Bbr {
            bw_bytes_per_sec: sk.pacing_rate_bytes_per_sec(),
            min_rtt_us: published[INFO_MIN_RTT_NS] / 1000,
            pacing_gain: published[INFO_SOURCE] * 256,
            // Microseconds as a gain (1/256 units): ns * 256 / 1000, below 2^32 for any
            // queuing delay up to 16.7 s.
            cwnd_gain: (u64::from(published[INFO_Q_NS]) * 256 / 1000).min(u64::from(u32::MAX))
                as u32,
        })
    }
}

fn check_params() -> Result {
    let share = crate::module_parameters::ecn_share.value();
    module_params::check(dx::spec::ECN_SHARE.check(share))?;
    module_params::load(&PARAMS, read_params(), DxParams::validate)
}

#[kunit_tests(rust_dx)]
mod tests {
    use super::*;
    use kernel::net::tcp::cong::{testing::TestSocket, DelaySample as Stamped, DelaySource};

    const CWND: u32 = 100;
    /// Minimum network RTT of the tests' samples, and the clocks' offset.
    const BASE_RTT_NS: u32 = 100_000;
    const OFFSET_NS: u32 = 4_000_000_000;

    /// The same ACK stream as the kernel's C controllers (no delay samples: the RTT
    /// fallback); prints the costs. The window stays within its bounds.
    #[test]
    fn cpu_cost_beside_c_controllers() -> Result {
        use crate::kunit_cpu_cost::{ns_per_ack, report, report_c_references};
        let mut s = TestSocket::with_algorithm::<DxCc<false>>()?;
        report("rust_dx", "dx", ns_per_ack(&mut s, false));
        assert!(s.cwnd() >= params().min_cwnd_pkts && s.cwnd() <= 10_000);
        report_c_references("rust_dx")
    }

    /// A socket in congestion avoidance at `CWND`, limited by it, with a round that ends
    /// when sequence 100_000 is ACKed.
    fn socket(stamps: bool) -> Result<TestSocket> {
        let mut s = TestSocket::before_init::<DxCc<false>>()?;
        s.set_delay_stamps(stamps);
        s.set_window(CWND, CWND / 2, 10_000);
        s.set_cwnd_limited(true, CWND);
        s.set_seq(0, 100_000, 0);
        s.init();
        Ok(s)
    }

    /// A sample whose data queued `q_ns` behind the minimum.
    fn stamped(s: &mut TestSocket, q_ns: u32) {
        let sample = Stamped {
            source: DelaySource::Device,
            owd_ns: OFFSET_NS.wrapping_add(30_000 + q_ns),
            net_rtt_ns: BASE_RTT_NS + q_ns,
        };
        s.pkts_acked_with_delay(1, -1, 0, Some(sample));
    }

    /// Ends the round; the next one ends at `next_end`.
    fn end_round(s: &mut TestSocket, next_end: u32) {
        s.set_seq(100_001, next_end, 0);
        s.ack(100_001, 1);
    }

    /// `(pacing_gain, cwnd_gain)` of `ss`'s BBR layout, in 1/256.
    /// (An error, not a panic, if dx reports nothing: a panic would end the KUnit guest.)
    fn gains(s: &mut TestSocket) -> Result<(u32, u32)> {
        let (_, b) = s.get_info().ok_or(EINVAL)?;
        let word = |i: usize| u32::from_ne_bytes([b[i], b[i + 1], b[i + 2], b[i + 3]]);
        Ok((word(12), word(16)))
    }

    #[test]
    fn queue_above_headroom_cuts_by_eq1() -> Result {
        let mut s = socket(true)?;
        stamped(&mut s, 0);
        for _ in 0..3 {
            stamped(&mut s, 60_000);
        }
        end_round(&mut s, 200_000);
        // Average queuing delay 45 us; W* = W on the first round.
        let want = cc_core::dx::next_cwnd_pkts(CWND, CWND, 45_000, BASE_RTT_NS, &params());
        assert_eq!(s.cwnd(), want);
        assert!((CWND / 2..CWND).contains(&want));
        // Software stamps; 45 us.
        assert_eq!(gains(&mut s)?, (2 * 256, 45 * 256));
        Ok(())
    }

    #[test]
    fn a_cut_below_the_slow_start_threshold_stays() -> Result {
        // Congestion avoidance as slow start leaves it: ssthresh == cwnd.
        let mut s = socket(true)?;
        s.set_window(CWND, CWND, 10_000);
        stamped(&mut s, 0);
        stamped(&mut s, 400_000);
        end_round(&mut s, 200_000);
        let cut = s.cwnd();
        assert!(cut < CWND);
        assert_eq!(s.ssthresh(), cut);
        // ACKs inside the next round, limited by the window, do not grow it back.
        for seq in [120_000, 140_000, 160_000] {
            s.ack(seq, 10);
        }
        assert_eq!(s.cwnd(), cut);
        Ok(())
    }

    #[test]
    fn queue_below_headroom_adds_one() -> Result {
        let mut s = socket(true)?;
        stamped(&mut s, 0);
        stamped(&mut s, 10_000);
        end_round(&mut s, 200_000);
        assert_eq!(s.cwnd(), CWND + 1);
        // ACKs inside the next round do not move the window.
        s.ack(150_000, 1);
        assert_eq!(s.cwnd(), CWND + 1);
        Ok(())
    }

    #[test]
    fn without_the_option_the_rtt_is_used() -> Result {
        let mut s = socket(false)?;
        // A stray echo on a connection that did not negotiate the option is not used.
        stamped(&mut s, 500_000);
        s.pkts_acked(1, 100, 0);
        s.pkts_acked(1, 180, 0);
        end_round(&mut s, 200_000);
        // Queuing delay from the RTT: (0 + 80 us) / 2 = 40 us, above the headroom.
        assert!(s.cwnd() < CWND);
        assert_eq!(gains(&mut s)?, (3 * 256, 40 * 256));
        Ok(())
    }

    #[test]
    fn negotiated_but_silent_falls_back_to_the_rtt() -> Result {
        let mut s = socket(true)?;
        let mut end = 100_000u32;
        for round in 0..=SILENT_ROUNDS {
            // RTT samples only: not used while the option may still deliver.
            s.pkts_acked(1, 100, 0);
            s.pkts_acked(1, 400, 0);
            end += 100_000;
            s.set_seq(end - 99_999, end, 0);
            s.ack(end - 99_999, 1);
            let want = if round < SILENT_ROUNDS { 0 } else { 3 * 256 };
            assert_eq!(gains(&mut s)?.0, want);
        }
        // Delay samples again: back to them.
        stamped(&mut s, 0);
        end += 100_000;
        s.set_seq(end - 99_999, end, 0);
        s.ack(end - 99_999, 1);
        assert_eq!(gains(&mut s)?.0, 2 * 256);
        Ok(())
    }

    #[test]
    fn slow_start_ends_when_the_queue_reaches_the_headroom() -> Result {
        let mut s = socket(true)?;
        s.set_window(10, u32::MAX >> 1, 10_000);
        s.set_cwnd_limited(true, 10);
        stamped(&mut s, 0);
        stamped(&mut s, 5_000);
        end_round(&mut s, 200_000);
        // No queue yet: still in slow start, grown by the ACK.
        assert_eq!(s.cwnd(), 11);
        stamped(&mut s, 50_000);
        s.set_seq(200_001, 300_000, 0);
        s.ack(200_001, 1);
        let cwnd = s.cwnd();
        assert!(cwnd < 11);
        assert_eq!(s.ssthresh(), cwnd);
        Ok(())
    }

    /// A sample of `source` whose clocks are `offset_ns` apart, queued `q_ns`.
    fn stamped_from(s: &mut TestSocket, source: DelaySource, offset_ns: u32, q_ns: u32) {
        let sample = Stamped {
            source,
            owd_ns: offset_ns.wrapping_add(30_000 + q_ns),
            net_rtt_ns: BASE_RTT_NS + q_ns,
        };
        s.pkts_acked_with_delay(1, -1, 0, Some(sample));
    }

    #[test]
    fn hardware_samples_win_over_software_ones() -> Result {
        let mut s = socket(true)?;
        let mut end = 100_000u32;
        let mut next_round = |s: &mut TestSocket| {
            end += 100_000;
            s.set_seq(end - 99_999, end, 0);
            s.ack(end - 99_999, 1);
        };
        // Software first; then hardware, in a clock 1 s away: the estimator starts over.
        stamped_from(&mut s, DelaySource::Device, OFFSET_NS, 0);
        next_round(&mut s);
        assert_eq!(gains(&mut s)?.0, 2 * 256);
        stamped_from(&mut s, DelaySource::Hardware, 1_000_000_000, 0);
        stamped_from(&mut s, DelaySource::Hardware, 1_000_000_000, 2_000);
        // Interleaved software samples (another clock, 60 us of apparent queue) are ignored.
        stamped_from(&mut s, DelaySource::Device, OFFSET_NS, 60_000);
        next_round(&mut s);
        // Hardware source; the round's queuing delay is the hardware samples' (a few us),
        // not the software sample's 60 us.
        let (source, q) = gains(&mut s)?;
        assert_eq!(source, 256);
        assert!(q <= 2 * 256);
        // Without hardware samples for SILENT_ROUNDS rounds, software ones are used again.
        for _ in 0..SILENT_ROUNDS {
            stamped_from(&mut s, DelaySource::Device, OFFSET_NS, 0);
            next_round(&mut s);
            assert_eq!(gains(&mut s)?.0, 256);
        }
        stamped_from(&mut s, DelaySource::Device, OFFSET_NS, 0);
        next_round(&mut s);
        assert_eq!(gains(&mut s)?.0, 2 * 256);
        Ok(())
    }

    /// `ecn_share` 1's ops: they need ECN; alpha follows DCTCP's observation windows; an
    /// echo (TCP entering CWR, once per window) sets ssthresh to cwnd (1 - alpha / 2); a
    /// loss still halves.
    #[test]
    fn ecn_share_cuts_by_half_alpha() -> Result {
        let mut s = TestSocket::with_algorithm_ecn::<DxCc<true>>()?;
        assert!(s.ops_flags() & kernel::bindings::TCP_CONG_NEEDS_ECN != 0);
        assert_eq!(s.ops_name(), c"dx");
        s.set_window(100, 100, 10_000);
        // alpha starts at 1.0: the first echo halves, as RFC 3168 would.
        assert_eq!(s.enter_loss_ssthresh(), 50);
        // The first observation window ends: 10 delivered, 5 marked: alpha 992.
        s.set_seq(1000, 2000, 0);
        s.deliver(10, 5);
        s.in_ack_event(0);
        // Inside the next window: no update.
        s.set_seq(1500, 2000, 0);
        s.deliver(10, 10);
        s.in_ack_event(0);
        s.set_window(100, 100, 10_000);
        assert_eq!(s.enter_loss_ssthresh(), 100 - ((100 * 992) >> 11));
        // It ends: 10 of 10 marked: alpha 992 - 62 + 64 = 994.
        s.set_seq(2000, 3000, 0);
        s.in_ack_event(0);
        assert_eq!(s.enter_loss_ssthresh(), 100 - ((100 * 994) >> 11));
        // Fast recovery halves, whatever alpha says.
        s.set_ca_state(CaState::Recovery);
        assert_eq!(s.ssthresh(), 50);
        Ok(())
    }

    /// `ecn_share` 0's ops halve on an echo, as before; without ECN negotiated the
    /// `ecn_share` ops move to `dx-reno`, which halves too; as receivers they echo CE as
    /// DCTCP's do.
    #[test]
    fn ecn_share_off_halves_and_on_falls_back_and_echoes_ce() -> Result {
        let mut plain = socket(true)?;
        assert_eq!(plain.enter_loss_ssthresh(), CWND / 2);
        let mut s = TestSocket::with_algorithm::<DxCc<true>>()?;
        assert_eq!(s.ops_name(), c"dx-reno");
        assert!(s.ops_flags() & kernel::bindings::TCP_CONG_NEEDS_ECN == 0);
        // The sibling behaves as the plain ops: a window that ends moves no alpha and CWR
        // halves (the ECN ops' alpha would be 1024 - 64 = 960 here, ssthresh 54).
        s.set_window(100, 100, 10_000);
        s.set_seq(1000, 2000, 0);
        s.deliver(10, 0);
        s.in_ack_event(0);
        assert_eq!(s.enter_loss_ssthresh(), 50);
        let ack_now = kernel::bindings::inet_csk_ack_state_t_ICSK_ACK_NOW as u8;
        let demand_cwr = kernel::bindings::TCP_ECN_DEMAND_CWR as u8;
        let mut r = TestSocket::with_algorithm_ecn::<DxCc<true>>()?;
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
    fn absurd_samples_keep_the_window_in_bounds() -> Result {
        let mut s = socket(true)?;
        let mut end = 100_000u32;
        for (owd_ns, net_rtt_ns) in [
            (0, 0),
            (u32::MAX, u32::MAX),
            (1, 1),
            (u32::MAX, 1),
            (0x8000_0000, 2_000_000_000),
            (7, 3_000_000_000),
        ] {
            let sample = Stamped {
                source: DelaySource::Tcp,
                owd_ns,
                net_rtt_ns,
            };
            s.pkts_acked_with_delay(1, i32::MIN, u32::MAX, Some(sample));
            s.pkts_acked(1, i32::MAX, 0);
            end = end.wrapping_add(100_000);
            s.set_seq(end.wrapping_sub(99_999), end, 0);
            s.ack(end.wrapping_sub(99_999), 1);
            let cwnd = s.cwnd();
            assert!((params().min_cwnd_pkts..=CWND + 6).contains(&cwnd));
        }
        Ok(())
    }
}
