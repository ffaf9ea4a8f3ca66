// SPDX-License-Identifier: GPL-2.0

//! DCTCP in Rust: a port of the kernel's `net/ipv4/tcp_dctcp.c`, selectable as `rust_dctcp`.
//!
//! DataCenter TCP (Alizadeh et al., SIGCOMM 2010) is Reno whose window cut after an ECN echo
//! follows `alpha`, a moving average of the fraction of packets the network CE-marked, so a
//! switch queue held at its marking threshold costs a flow a little of its window, not half.
//! The law is in `core/src/dctcp.rs` (shared with the host tests); this file connects it to
//! TCP, callback for callback as the C module does:
//! - sender: `alpha` is updated once per observation window (about one RTT) from the
//!   socket's `delivered` and `delivered_ce` counts (`in_ack_event`); an ECN echo cuts the
//!   window to `cwnd (1 - alpha / 2)` (`ssthresh`); a loss, in fast recovery (`set_state`)
//!   or by timeout (`cwnd_event`), halves it as Reno does; undo restores the window before
//!   the last cut; growth is Reno's;
//! - receiver: an ACK echoes ECE exactly for the CE-marked data it acknowledges, so each
//!   change of the CE state forces an immediate ACK (first sending the ACK it had delayed,
//!   with the previous state's ECE);
//! - without ECN negotiated, the socket moves to the ECN-less ops `rust_dctcp-reno`, behaves
//!   as Reno and reports itself disabled in `ss -ti` (C dctcp moves to `dctcp-reno`);
//! - Protective Load Balancing is told each window's CE ratio, as in C (active only with
//!   `net.ipv4.tcp_plb_enabled`).
//!
//! The KUnit suite below drives the C `dctcp` and `rust_dctcp` through the same ACK
//! sequences and compares them after every step.

use kernel::net::tcp::cong::{
    self, AckEventFlags, Algorithm, CaState, Event, Flags, Info, InfoSock, Plb, Sock,
};
use kernel::prelude::*;

// Per-ACK CPU cost figures printed by the KUnit suite (shared with the other modules).
#[cfg(CONFIG_KUNIT)]
#[path = "kunit_cpu_cost.rs"]
mod kunit_cpu_cost;

// The pure control laws, shared with the host tests; not every item is used here.
#[allow(unreachable_pub, dead_code)]
#[path = "core/src/lib.rs"]
mod cc_core;
// `load` is for parameter sets kept for callbacks; DCTCP reads its two where it uses them.
#[allow(dead_code)]
#[path = "module_params.rs"]
mod module_params;

use cc_core::dctcp::{self, Counters, Dctcp};
use cc_core::reno;
use cc_core::seq;

kernel::module_tcp_cong! {
    algorithms: [RustDctcp],
    check: check_params,
    name: "tcp_rust_dctcp",
    authors: ["rfl-tcp-cc developers"],
    description: "DataCenter TCP (DCTCP), in Rust",
    license: "GPL",
    params: {
        dctcp_shift_g: u32 {
            default: crate::cc_core::dctcp::spec::DCTCP_SHIFT_G.default,
            description: "parameter g for updating dctcp_alpha: g = 1/2^dctcp_shift_g, [0, 10]",
            permissions: 0o444,
        },
        dctcp_alpha_on_init: u32 {
            default: crate::cc_core::dctcp::spec::DCTCP_ALPHA_ON_INIT.default,
            description: "parameter for initial alpha value: 1024 = 1.0, [0, 1024]",
            permissions: 0o444,
        },
    },
}

/// tcp:tcp_cong_decision's `what` for an alpha update, at the end of an observation window.
const TRACE_ALPHA: u32 = 1;

/// `in_ack_event` at the end of an observation window: alpha, PLB, the published state.
#[cold]
#[inline(never)]
fn end_of_window(sk: &mut Sock<'_>, st: &mut State) {
    let alpha_before = st.cc.alpha;
    let Some(window) = st.cc.on_ack(shift_g(), &counters(sk)) else {
        return;
    };
    // tcp:tcp_cong_decision (docs/dctcp.md): the window's packets, marked ones, alpha before;
    // alpha after, cwnd.
    let inputs = [
        window.delivered_pkts,
        window.delivered_ce_pkts,
        alpha_before,
    ];
    let outputs = [u64::from(st.cc.alpha), u64::from(sk.cwnd())];
    sk.trace_decision(TRACE_ALPHA, inputs.map(u64::from), outputs);
    // `alpha` smooths over many windows; PLB reacts to each window's own ratio.
    if let Some(ratio) = window.plb_ce_ratio() {
        sk.plb_update_state(&mut st.plb, ratio);
        sk.plb_check_rehash(&mut st.plb);
    }
    publish(sk, &st.cc);
}

fn shift_g() -> u32 {
    crate::module_parameters::dctcp_shift_g.value()
}

fn alpha_on_init() -> u32 {
    crate::module_parameters::dctcp_alpha_on_init.value()
}

/// Validates parameter values; `ERANGE`, logged with the parameter's name and range, if one
/// is out of range. C accepts any `dctcp_alpha_on_init` and caps it at 1024; a value it
/// would change is refused here instead.
fn check(shift_g: u32, alpha_on_init: u32) -> Result {
    module_params::check(dctcp::spec::DCTCP_SHIFT_G.check(shift_g))?;
    module_params::check(dctcp::spec::DCTCP_ALPHA_ON_INIT.check(alpha_on_init))
}

fn check_params() -> Result {
    check(shift_g(), alpha_on_init())
}

/// Per-socket state, in `icsk_ca_priv` (the fields of C's `struct dctcp`).
#[derive(Zeroable)]
struct State {
    cc: Dctcp,
    plb: Plb,
    /// ECN was not negotiated: every callback behaves as Reno's.
    fallback: bool,
}

// The words published for `get_info`, which cannot see `State`.
/// Non-zero: the socket fell back to Reno. Zero before `init`, as C reports a socket whose
/// ops are not (yet) `dctcp-reno`.
const INFO_FALLBACK: usize = 0;
const INFO_CE_STATE: usize = 1;
const INFO_ALPHA: usize = 2;
const INFO_OLD_DELIVERED: usize = 3;
const INFO_OLD_DELIVERED_CE: usize = 4;

fn counters(sk: &Sock<'_>) -> Counters {
    Counters {
        snd_una: sk.snd_una(),
        snd_nxt: sk.snd_nxt(),
        delivered_pkts: sk.delivered(),
        delivered_ce_pkts: sk.delivered_ce(),
    }
}

fn publish(sk: &mut Sock<'_>, cc: &Dctcp) {
    let mut words = [0; RustDctcp::INFO_WORDS];
    words[INFO_CE_STATE] = u32::from(cc.ce);
    words[INFO_ALPHA] = cc.alpha;
    words[INFO_OLD_DELIVERED] = cc.old_delivered_pkts;
    words[INFO_OLD_DELIVERED_CE] = cc.old_delivered_ce_pkts;
    sk.publish_info(&words);
}

/// Fast recovery or a timeout: Reno's halving, once per episode.
fn react_to_loss(sk: &mut Sock<'_>, st: &mut State) {
    let ssthresh = st.cc.on_loss(sk.cwnd());
    sk.set_ssthresh(ssthresh);
}

struct RustDctcp;

#[vtable]
impl Algorithm for RustDctcp {
    const NAME: &'static CStr = c"rust_dctcp";
    // Restricted, as C dctcp.
    const FLAGS: Flags = Flags::NEEDS_ECN;
    const INFO_WORDS: usize = 5;
    type Data = State;

    fn init(sk: &mut Sock<'_>, st: &mut State) {
        // A reconnect of a socket that fell back keeps the ECN-less ops, and stays Reno, as
        // C's `dctcp-reno` (which has no init) does.
        if sk.ecn_fallback_active() {
            st.fallback = true;
            let mut words = [0; Self::INFO_WORDS];
            words[INFO_FALLBACK] = 1;
            sk.publish_info(&words);
            return;
        }
        // A listening or closed socket may be given the algorithm before it negotiates.
        if sk.ecn_enabled() || sk.is_listen_or_close() {
            st.cc = Dctcp::new(alpha_on_init(), &counters(sk), sk.rcv_nxt());
            // PLB's zeroed state is the one `tcp_plb_init()` sets.
            publish(sk, &st.cc);
            return;
        }
        // Reno from now on, under the ECN-less ops `rust_dctcp-reno`, so that the stack stops
        // marking the socket's packets ECN-capable (C switches to `dctcp-reno`).
        st.fallback = true;
        sk.fall_back_from_ecn();
        let mut words = [0; Self::INFO_WORDS];
        words[INFO_FALLBACK] = 1;
        sk.publish_info(&words);
    }

    fn ssthresh(sk: &mut Sock<'_>, st: &mut State) -> u32 {
        if st.fallback {
            return reno::ssthresh_after_loss(sk.cwnd());
        }
        st.cc.ssthresh(sk.cwnd())
    }

    fn undo_cwnd(sk: &mut Sock<'_>, st: &mut State) -> u32 {
        if st.fallback {
            return reno::undo_cwnd(sk.cwnd(), sk.prior_cwnd());
        }
        st.cc.undo_cwnd(sk.cwnd())
    }

    fn cong_avoid(sk: &mut Sock<'_>, _st: &mut State, ack: u32, acked: u32) {
        sk.reno_cong_avoid(ack, acked);
    }

    fn in_ack_event(sk: &mut Sock<'_>, st: &mut State, _flags: AckEventFlags) {
        // Most ACKs end no observation window: as C's dctcp_update_alpha(), read nothing
        // else before knowing (the parameter, the counters: once per window).
        if st.fallback || seq::before(sk.snd_una(), st.cc.next_seq) {
            return;
        }
        end_of_window(sk, st);
    }

    fn set_state(sk: &mut Sock<'_>, st: &mut State, new_state: CaState) {
        // A timeout is handled in `cwnd_event`, so that one loss episode cuts once.
        if !st.fallback && new_state == CaState::Recovery && sk.ca_state() != CaState::Recovery {
            react_to_loss(sk, st);
        }
    }

    fn cwnd_event(sk: &mut Sock<'_>, st: &mut State, event: Event) {
        if st.fallback {
            return;
        }
        match event {
            Event::EcnIsCe | Event::EcnNoCe => {
                let ce = event == Event::EcnIsCe;
                if let Some(prior) = st.cc.on_ecn(ce, sk.rcv_nxt()) {
                    // The delayed ACK covers data received in the previous state.
                    if sk.delayed_ack_pending() {
                        sk.set_demand_cwr(prior.ce);
                        sk.send_ack(prior.rcv_nxt);
                    }
                    sk.request_immediate_ack();
                }
                sk.set_demand_cwr(ce);
                publish(sk, &st.cc);
            }
            Event::Loss => {
                sk.plb_update_state_upon_rto(&mut st.plb);
                react_to_loss(sk, st);
            }
            Event::CwndRestart | Event::CompleteCwr => {}
        }
    }

    fn tx_start(sk: &mut Sock<'_>, st: &mut State) {
        // Nothing in flight: the best moment for PLB to move the flow.
        if !st.fallback {
            sk.plb_check_rehash(&mut st.plb);
        }
    }

    fn get_info(sk: &InfoSock<'_>, published: &[u32]) -> Option<Info> {
        if published[INFO_FALLBACK] != 0 {
            return Some(Info::Dctcp {
                enabled: 0,
                ce_state: 0,
                alpha: 0,
                ab_ecn: 0,
                ab_tot: 0,
            });
        }
        // Bytes (acked, and acked with ECE) of the current observation window, 32-bit as in C.
        let window_bytes = |now: u32, start: u32| sk.mss().wrapping_mul(now.wrapping_sub(start));
        Some(Info::Dctcp {
            enabled: 1,
            ce_state: published[INFO_CE_STATE] as u16,
            alpha: published[INFO_ALPHA],
            ab_ecn: window_bytes(sk.delivered_ce(), published[INFO_OLD_DELIVERED_CE]),
            ab_tot: window_bytes(sk.delivered(), published[INFO_OLD_DELIVERED]),
        })
    }
}

// `#[kunit_tests]` maps `assert!` and `assert_eq!` to KUnit: a failure fails that test and the
// suite goes on. Nothing else is mapped: a failed assert_ne, an unwrap or expect of an error,
// any panic ends the whole kernel (and the suites after it), so write `assert!(a != b)` and
// return errors (`make check` refuses the others).
#[kunit_tests(rust_dctcp)]
mod tests {
    use super::*;
    use kernel::bindings;
    use kernel::net::tcp::cong::testing::TestSocket;

    const MSS: u32 = 1448;
    const SLOWPATH: u32 = bindings::tcp_ca_ack_event_flags_CA_ACK_SLOWPATH;
    const WIN_UPDATE: u32 = bindings::tcp_ca_ack_event_flags_CA_ACK_WIN_UPDATE;
    const ECE: u32 = bindings::tcp_ca_ack_event_flags_CA_ACK_ECE;
    const ACK_NOW: u8 = bindings::inet_csk_ack_state_t_ICSK_ACK_NOW as u8;
    const DEMAND_CWR: u8 = bindings::TCP_ECN_DEMAND_CWR as u8;

    /// Same ACK stream with CE marks, same window as C dctcp; prints both costs.
    #[test]
    fn cpu_cost_beside_c_dctcp() -> Result {
        use crate::kunit_cpu_cost::{ns_per_ack, report, report_c_references};
        let mut rust = TestSocket::with_algorithm_ecn::<RustDctcp>()?;
        let mut c = TestSocket::with_builtin_c(c"dctcp", true)?;
        let ns = ns_per_ack(&mut rust, true);
        ns_per_ack(&mut c, true);
        assert_eq!(rust.cwnd(), c.cwnd());
        assert_eq!(rust.ssthresh(), c.ssthresh());
        report("rust_dctcp", "rust_dctcp", ns);
        report_c_references("rust_dctcp")
    }

    /// What happens to the connection between two observations.
    #[derive(Clone, Copy, Debug)]
    enum Step {
        /// An ACK newly acknowledging `pkts` packets, `ce` of which the network marked (the
        /// ACK carries ECE if any was); `limited`: the sender had filled the window.
        Ack { pkts: u32, ce: u32, limited: bool },
        /// Loss detected by duplicate ACKs: fast recovery until the recovery point is ACKed.
        Recovery,
        /// Retransmission timeout.
        Timeout,
        /// The last reduction was spurious (D-SACK, F-RTO or timestamps tell).
        Undo,
        /// A data segment arrives (receiver side), CE-marked or not.
        Data { ce: bool },
        /// The sender leaves an idle period (`CA_EVENT_TX_START`).
        TxStart,
        /// The window restarts after idle (`CA_EVENT_CWND_RESTART`).
        CwndRestart,
    }

    /// The C `dctcp` and `rust_dctcp` on the same connection, driven as `tcp_ack()`,
    /// `tcp_fastretrans_alert()`, `tcp_enter_loss()` and `tcp_data_queue()` drive them.
    struct Pair {
        c: TestSocket,
        r: TestSocket,
        clamp: u32,
        snd_una: u32,
        rcv_nxt: u32,
        /// The recovery point of the current CWR, Recovery or Loss episode.
        high_seq: u32,
        /// Steps run so far.
        steps: usize,
        /// Comparisons passed so far.
        compared: usize,
        /// Episodes entered: CWR (ECN echo), fast recovery, timeout, undone.
        episodes: [usize; 4],
    }

    impl Pair {
        fn new(ecn: bool, cwnd: u32, ssthresh: u32, clamp: u32) -> Result<Pair> {
            let c = TestSocket::with_builtin_c(c"dctcp", ecn)?;
            let r = if ecn {
                TestSocket::with_algorithm_ecn::<RustDctcp>()?
            } else {
                TestSocket::with_algorithm::<RustDctcp>()?
            };
            let mut p = Pair {
                c,
                r,
                clamp,
                snd_una: 0,
                rcv_nxt: 0,
                high_seq: 0,
                steps: 0,
                compared: 0,
                episodes: [0; 4],
            };
            p.both(|s| s.set_window(cwnd, ssthresh, clamp));
            p.compare(None)?;
            Ok(p)
        }

        fn both(&mut self, f: impl Fn(&mut TestSocket)) {
            f(&mut self.c);
            f(&mut self.r);
        }

        fn state(&mut self) -> CaState {
            self.c.sock().ca_state()
        }

        fn snd_nxt(&self) -> u32 {
            // The sender keeps the window full.
            self.snd_una.wrapping_add(self.c.cwnd().wrapping_mul(MSS))
        }

        fn set_seq(&mut self) {
            let (una, nxt, rcv) = (self.snd_una, self.snd_nxt(), self.rcv_nxt);
            self.both(|s| s.set_seq(una, nxt, rcv));
        }

        /// cwnd becomes ssthresh, as at the end of a reduction.
        fn cwnd_to_ssthresh(&mut self) {
            let clamp = self.clamp;
            self.both(|s| {
                let ssthresh = s.ssthresh();
                s.set_window(ssthresh, ssthresh, clamp)
            });
        }

        /// `tcp_init_cwnd_reduction()`: `prior_cwnd` saved and `ssthresh` from the algorithm,
        /// with cwnd unchanged (`fast_recovery()` also sets cwnd: put it back).
        fn init_cwnd_reduction(&mut self) {
            let clamp = self.clamp;
            self.both(|s| {
                let cwnd = s.cwnd();
                s.fast_recovery();
                let ssthresh = s.ssthresh();
                s.set_window(cwnd, ssthresh, clamp);
            });
            self.high_seq = self.snd_nxt();
        }

        fn run(&mut self, step: Step) -> Result {
            match step {
                Step::Ack { pkts, ce, limited } => self.ack(pkts, ce, limited),
                Step::Recovery => {
                    let state = self.state();
                    if !matches!(state, CaState::Recovery | CaState::Loss) {
                        // In CWR, the reduction under way continues (`tcp_enter_recovery()`).
                        self.episodes[1] += 1;
                        if state == CaState::Cwr {
                            self.high_seq = self.snd_nxt();
                        } else {
                            self.init_cwnd_reduction();
                        }
                        self.both(|s| s.set_ca_state(CaState::Recovery));
                        // Proportional rate reduction brings cwnd to ssthresh.
                        self.cwnd_to_ssthresh();
                    }
                }
                Step::Timeout => {
                    if self.state() != CaState::Loss {
                        self.episodes[2] += 1;
                        self.init_cwnd_reduction();
                        let clamp = self.clamp;
                        self.both(|s| {
                            s.cwnd_event(Event::Loss);
                            let ssthresh = s.ssthresh();
                            s.set_window(1, ssthresh, clamp);
                            s.set_ca_state(CaState::Loss);
                        });
                    }
                }
                Step::Undo => {
                    if matches!(self.state(), CaState::Recovery | CaState::Loss) {
                        self.episodes[3] += 1;
                        self.both(|s| {
                            s.undo();
                            s.set_ca_state(CaState::Open);
                        });
                    }
                }
                Step::Data { ce } => {
                    let event = if ce { Event::EcnIsCe } else { Event::EcnNoCe };
                    self.both(|s| s.cwnd_event(event));
                    self.rcv_nxt = self.rcv_nxt.wrapping_add(MSS);
                    self.set_seq();
                }
                Step::TxStart => self.both(|s| s.tx_start()),
                Step::CwndRestart => self.both(|s| s.cwnd_event(Event::CwndRestart)),
            }
            self.steps += 1;
            self.compare(Some(step))
        }

        fn ack(&mut self, pkts: u32, ce: u32, limited: bool) {
            self.snd_una = self.snd_una.wrapping_add(pkts.wrapping_mul(MSS));
            self.set_seq();
            let flags = if ce > 0 {
                SLOWPATH | ECE
            } else if pkts % 3 == 0 {
                SLOWPATH | WIN_UPDATE
            } else {
                0
            };
            self.both(|s| {
                s.deliver(pkts, ce);
                s.in_ack_event(flags);
            });
            // `tcp_fastretrans_alert()`: the end of an episode, or CWR on an ECN echo.
            let past_high_seq = !seq::before(self.snd_una, self.high_seq);
            match self.state() {
                CaState::Cwr | CaState::Recovery if past_high_seq => {
                    self.cwnd_to_ssthresh();
                    self.both(|s| {
                        s.cwnd_event(Event::CompleteCwr);
                        s.set_ca_state(CaState::Open);
                    });
                }
                CaState::Loss if past_high_seq => self.both(|s| s.set_ca_state(CaState::Open)),
                _ => {}
            }
            if ce > 0 && matches!(self.state(), CaState::Open | CaState::Disorder) {
                self.episodes[0] += 1;
                self.init_cwnd_reduction();
                self.both(|s| s.set_ca_state(CaState::Cwr));
                // The reduction is paced by PRR; it ends at ssthresh.
                self.cwnd_to_ssthresh();
            }
            // `tcp_cong_control()`: during a reduction PRR sets cwnd, else the algorithm.
            if !matches!(self.state(), CaState::Cwr | CaState::Recovery) {
                let una = self.snd_una;
                self.both(|s| {
                    let cwnd = s.cwnd();
                    s.set_cwnd_limited(limited, if limited { cwnd } else { 0 });
                    s.ack(una, pkts);
                });
            }
        }

        /// Compares everything the algorithms can change and report.
        fn compare(&mut self, step: Option<Step>) -> Result {
            let (ci, ri) = (self.c.get_info(), self.r.get_info());
            let c = (
                self.c.cwnd(),
                self.c.ssthresh(),
                self.c.ecn_flags(),
                self.c.ack_pending(),
            );
            let r = (
                self.r.cwnd(),
                self.r.ssthresh(),
                self.r.ecn_flags(),
                self.r.ack_pending(),
            );
            if c != r || ci != ri {
                pr_err!(
                    "step {} {:?}: dctcp (cwnd, ssthresh, ecn_flags, ack_pending) {:?} info {:?}, \
                     rust_dctcp {:?} info {:?}\n",
                    self.steps,
                    step,
                    c,
                    dctcp_info(&ci),
                    r,
                    dctcp_info(&ri)
                );
                return Err(EINVAL);
            }
            self.compared += 1;
            Ok(())
        }
    }

    impl Drop for Pair {
        fn drop(&mut self) {
            let [cwr, recovery, timeout, undo] = self.episodes;
            pr_info!(
                "{} steps, {} identical comparisons (episodes: {cwr} CWR, {recovery} recovery, {timeout} timeout, \
                 {undo} undone)\n",
                self.steps,
                self.compared
            );
        }
    }

    /// `(attr, enabled, ce_state, alpha, ab_ecn, ab_tot)` of a `get_info` answer.
    fn dctcp_info<const N: usize>(
        info: &Option<(u32, [u8; N])>,
    ) -> Option<(u32, u16, u16, u32, u32, u32)> {
        let (attr, b) = info.as_ref()?;
        let half = |i: usize| u16::from_ne_bytes([b[i], b[i + 1]]);
        let word = |i: usize| u32::from_ne_bytes([b[i], b[i + 1], b[i + 2], b[i + 3]]);
        Some((*attr, half(0), half(2), word(4), word(8), word(12)))
    }

    /// Deterministic pseudo-random numbers (xorshift64*), so a failure repeats.
    struct Rng(u64);

    impl Rng {
        fn below(&mut self, n: u32) -> u32 {
            self.0 ^= self.0 >> 12;
            self.0 ^= self.0 << 25;
            self.0 ^= self.0 >> 27;
            (self.0.wrapping_mul(0x2545_f491_4f6c_dd1d) >> 32) as u32 % n.max(1)
        }
    }

    /// ACKs of 1 to 3 packets, `num` of every `den` packets marked (spread evenly).
    fn acks(p: &mut Pair, rng: &mut Rng, n: usize, num: u32, den: u32, sent: &mut u32) -> Result {
        for _ in 0..n {
            let pkts = 1 + rng.below(3);
            let mut ce = 0;
            for _ in 0..pkts {
                if (*sent * num) % den < num {
                    ce += 1;
                }
                *sent += 1;
            }
            p.run(Step::Ack {
                pkts,
                ce,
                limited: rng.below(8) != 0,
            })?;
        }
        Ok(())
    }

    fn alpha(p: &mut Pair) -> u32 {
        dctcp_info(&p.r.get_info()).map_or(0, |i| i.3)
    }

    fn old_delivered(p: &mut Pair) -> u32 {
        // ab_tot / MSS is `delivered - old_delivered`; old_delivered moves per window.
        p.r.sock()
            .delivered()
            .wrapping_sub(dctcp_info(&p.r.get_info()).map_or(0, |i| i.5) / MSS)
    }

    #[test]
    fn alpha_tracks_marking_fraction_over_many_rtts() -> Result {
        let mut p = Pair::new(true, 10, cong::INFINITE_SSTHRESH, 65535)?;
        let mut rng = Rng(0xdc7c);
        let mut sent = 0;
        let mut windows = 0;
        // Slow start, then phases of marking fractions, each long enough for many
        // observation windows: alpha must end near each fraction, as C's does.
        acks(&mut p, &mut rng, 40, 0, 1, &mut sent)?;
        for (num, den) in [(1, 4), (1, 2), (1, 1), (0, 1), (1, 16), (3, 4), (1, 10)] {
            let mut last = old_delivered(&mut p);
            for _ in 0..600 {
                acks(&mut p, &mut rng, 1, num, den, &mut sent)?;
                let now = old_delivered(&mut p);
                if now != last {
                    windows += 1;
                    last = now;
                }
            }
            let target = 1024 * num / den;
            let alpha = alpha(&mut p);
            if alpha.abs_diff(target) > 64 {
                pr_err!("fraction {num}/{den}: alpha {alpha}, expected about {target}\n");
                return Err(EINVAL);
            }
        }
        pr_info!("{windows} observation windows\n");
        assert!(windows > 300);
        Ok(())
    }

    #[test]
    fn random_acks_marks_losses_timeouts_and_undo() -> Result {
        for seed in 1..=8u64 {
            let mut p = Pair::new(true, 2 + seed as u32, cong::INFINITE_SSTHRESH, 65535)?;
            let mut rng = Rng(seed * 0x9e37_79b9);
            let mut after_loss = false;
            for _ in 0..1500 {
                // Spurious losses are undone soon after, if at all.
                let undo_now = after_loss && rng.below(3) == 0;
                let step = match rng.below(100) {
                    _ if undo_now => Step::Undo,
                    0 => Step::Recovery,
                    1 => Step::Timeout,
                    2 | 3 => Step::Undo,
                    4..=7 => Step::Data {
                        ce: rng.below(2) == 0,
                    },
                    8 => Step::TxStart,
                    9 => Step::CwndRestart,
                    _ => {
                        let pkts = 1 + rng.below(4);
                        let marked = match seed % 4 {
                            0 => 0,
                            1 => rng.below(pkts + 1),
                            2 => u32::from(rng.below(10) == 0),
                            _ => pkts,
                        };
                        Step::Ack {
                            pkts,
                            ce: marked.min(pkts),
                            limited: rng.below(6) != 0,
                        }
                    }
                };
                after_loss = matches!(step, Step::Recovery | Step::Timeout);
                p.run(step)?;
            }
        }
        Ok(())
    }

    #[test]
    fn ssthresh_remembers_the_window_for_undo() -> Result {
        // Not a sequence the stack produces (it never undoes a CWR, and a loss always
        // follows `ssthresh` with `set_state` or `CA_EVENT_LOSS`, which remember the same
        // window), but C's `ssthresh` remembers it too.
        let mut p = Pair::new(true, 40, cong::INFINITE_SSTHRESH, 65535)?;
        p.both(|s| {
            s.enter_loss_ssthresh();
            s.set_window(20, 30, 65535);
            s.undo();
        });
        p.compare(None)?;
        assert_eq!(p.r.cwnd(), 40);
        Ok(())
    }

    #[test]
    fn counters_out_of_the_ordinary() -> Result {
        // More marks than packets, windows of 2^23 packets (the 32-bit shift loses bits),
        // counters wrapping: the stack never reports these, but both must compute alike.
        let mut p = Pair::new(true, 10, cong::INFINITE_SSTHRESH, 65535)?;
        for (pkts, ce) in [
            (1, (1 << 26) - 1),
            (1, 5),
            (0, 3),
            (1 << 23, 1 << 23),
            (1 << 23, (1 << 23) - 1),
            (u32::MAX - 100, 0),
            (200, 100),
            (7, 0),
        ] {
            p.run(Step::Ack {
                pkts,
                ce,
                limited: true,
            })?;
            p.run(Step::Ack {
                pkts: 1,
                ce: 0,
                limited: true,
            })?;
        }
        Ok(())
    }

    #[test]
    fn loss_in_recovery_and_timeout_then_undo() -> Result {
        let mut p = Pair::new(true, 10, cong::INFINITE_SSTHRESH, 65535)?;
        let mut rng = Rng(7);
        let mut sent = 0;
        acks(&mut p, &mut rng, 60, 1, 8, &mut sent)?;
        let ack = Step::Ack {
            pkts: 2,
            ce: 0,
            limited: true,
        };
        for step in [
            Step::Recovery,
            ack,
            Step::Undo,
            ack,
            Step::Recovery,
            ack,
            Step::Timeout,
            ack,
            ack,
            Step::Undo,
            ack,
            Step::Timeout,
            Step::Timeout,
            ack,
        ] {
            p.run(step)?;
        }
        // Recovery entered in CWR: no second ssthresh computation.
        acks(&mut p, &mut rng, 30, 1, 1, &mut sent)?;
        p.run(Step::Ack {
            pkts: 1,
            ce: 1,
            limited: true,
        })?;
        p.run(Step::Recovery)?;
        acks(&mut p, &mut rng, 200, 1, 20, &mut sent)
    }

    #[test]
    fn receiver_ce_transitions_ask_for_an_immediate_ack() -> Result {
        let mut p = Pair::new(true, 10, cong::INFINITE_SSTHRESH, 65535)?;
        // No delayed ACK is pending: a detached socket must never send one.
        assert_eq!(p.c.ack_pending(), 0);
        p.run(Step::Data { ce: false })?;
        assert_eq!(p.r.ack_pending() & ACK_NOW, 0);
        p.run(Step::Data { ce: true })?;
        assert!((p.r.ack_pending() & ACK_NOW) != 0);
        assert!((p.r.ecn_flags() & DEMAND_CWR) != 0);
        p.run(Step::Data { ce: true })?;
        p.run(Step::Data { ce: false })?;
        assert_eq!(p.r.ecn_flags() & DEMAND_CWR, 0);
        let mut rng = Rng(99);
        for _ in 0..300 {
            let ce = rng.below(3) == 0;
            p.run(Step::Data { ce })?;
        }
        // A fresh pair, whose first change of state comes from CE.
        let mut p = Pair::new(true, 10, cong::INFINITE_SSTHRESH, 65535)?;
        p.run(Step::Data { ce: true })?;
        assert!((p.c.ack_pending() & ACK_NOW) != 0);
        Ok(())
    }

    #[test]
    fn without_ecn_falls_back_to_reno() -> Result {
        let mut p = Pair::new(false, 10, cong::INFINITE_SSTHRESH, 65535)?;
        // Both moved to ECN-less ops, so the stack no longer marks their packets ECT.
        assert_eq!(p.c.ops_name(), c"dctcp-reno");
        assert_eq!(p.r.ops_name(), c"rust_dctcp-reno");
        let needs_ecn = bindings::TCP_CONG_NEEDS_ECN;
        assert_eq!(p.c.ops_flags() & needs_ecn, 0);
        assert_eq!(p.r.ops_flags() & needs_ecn, 0);
        assert_eq!(
            dctcp_info(&p.r.get_info()),
            Some((bindings::INET_DIAG_DCTCPINFO, 0, 0, 0, 0, 0))
        );
        let ecn = Pair::new(true, 10, cong::INFINITE_SSTHRESH, 65535)?;
        assert_eq!(ecn.r.ops_name(), c"rust_dctcp");
        assert!((ecn.r.ops_flags() & needs_ecn) != 0);
        drop(ecn);
        assert_eq!(
            dctcp_info(&p.r.get_info()),
            Some((bindings::INET_DIAG_DCTCPINFO, 0, 0, 0, 0, 0))
        );
        let mut rng = Rng(0xfa11);
        for _ in 0..1500 {
            let step = match rng.below(40) {
                0 => Step::Recovery,
                1 => Step::Timeout,
                2 => Step::Undo,
                3 | 4 => Step::Data { ce: true },
                5 => Step::Data { ce: false },
                6 => Step::TxStart,
                _ => {
                    let pkts = 1 + rng.below(3);
                    Step::Ack {
                        pkts,
                        ce: rng.below(pkts + 1),
                        limited: rng.below(5) != 0,
                    }
                }
            };
            p.run(step)?;
        }
        // Nothing reached the DCTCP state machine.
        assert_eq!(p.r.ecn_flags() & DEMAND_CWR, 0);
        assert_eq!(p.r.ack_pending(), 0);
        Ok(())
    }

    #[test]
    fn large_windows_cut_with_32_bit_arithmetic() -> Result {
        for cwnd in [1000, (1 << 22) - 1, 1 << 22, 5_000_000, (1 << 30) + 12345] {
            let mut p = Pair::new(true, cwnd, cong::INFINITE_SSTHRESH, u32::MAX)?;
            for ce in [3, 0, 0, 1, 2] {
                p.run(Step::Ack {
                    pkts: 4,
                    ce,
                    limited: true,
                })?;
            }
            p.run(Step::Timeout)?;
        }
        Ok(())
    }

    #[test]
    fn parameter_ranges() {
        use dctcp::spec::{DCTCP_ALPHA_ON_INIT, DCTCP_SHIFT_G};
        let defaults = (DCTCP_SHIFT_G.default, DCTCP_ALPHA_ON_INIT.default);
        assert!(check(defaults.0, defaults.1).is_ok());
        assert!(check(0, 0).is_ok());
        assert!(check(10, 1024).is_ok());
        assert_eq!(check(11, 1024), Err(ERANGE));
        assert_eq!(check(u32::MAX, 0), Err(ERANGE));
        assert_eq!(check(4, 1025), Err(ERANGE));
        assert_eq!(check(4, u32::MAX), Err(ERANGE));
        // The suite compares with C dctcp's defaults.
        assert_eq!((shift_g(), alpha_on_init()), defaults);
    }
}
