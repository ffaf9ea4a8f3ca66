// SPDX-License-Identifier: GPL-2.0

//! DCTCP (Alizadeh et al., "Data Center TCP (DCTCP)", SIGCOMM 2010; analysis in Alizadeh,
//! Javanmard and Prabhakar, "Analysis of DCTCP: Stability, Convergence, and Fairness",
//! SIGMETRICS 2011): Reno whose window cut follows the fraction of CE-marked packets.
//!
//! Once per observation window (about one RTT: until `snd_una` passes the `snd_nxt` of the
//! window's start), the sender updates its estimate `alpha` of the fraction `F` of packets
//! the network marked, and on an ECN echo cuts the window in proportion to it:
//!
//! ```text
//! alpha    = (1 - g) alpha + g F          g = 1 / 2^shift_g
//! ssthresh = cwnd (1 - alpha / 2)         at least 2 packets
//! ```
//!
//! A loss (fast recovery, or a timeout) still halves the window, as Reno does.
//!
//! Fixed point: `alpha` is a fraction with 10 fractional bits ([`MAX_ALPHA`] = 1024 = 1.0).
//! Counts are packets (`_pkts`), sequence numbers are the 32-bit TCP ones, compared modulo
//! 2^32.
//!
//! Written to make the same decisions as the kernel's `tcp_dctcp.c`, including its 32-bit
//! arithmetic where that can wrap (noted at each place), so that the two can be compared
//! ACK by ACK.

use super::param::ParamSpec;
use super::reno;
use super::seq;

/// `alpha` of 1.0: every packet of the window was marked.
pub const MAX_ALPHA: u32 = 1 << ALPHA_SHIFT;
/// Fractional bits of `alpha`.
pub const ALPHA_SHIFT: u32 = 10;
/// Largest EWMA shift: `g` = 1/1024.
pub const MAX_SHIFT_G: u32 = ALPHA_SHIFT;
/// Fixed-point shift of the CE ratio given to Protective Load Balancing (`TCP_PLB_SCALE`).
pub const PLB_SCALE: u32 = 8;

/// `tcp_rust_dctcp`'s module parameters, named as C dctcp's: their defaults and ranges,
/// written only here ([`super::param`]).
pub mod spec {
    use super::{ParamSpec, MAX_ALPHA, MAX_SHIFT_G};

    /// The kernel's default EWMA shift, `g` = 1/16 (the paper's value).
    pub const DCTCP_SHIFT_G: ParamSpec = ParamSpec::new("dctcp_shift_g", 4, 0, MAX_SHIFT_G);
    /// The kernel's default `alpha` of a new flow: 1.0, so that the first ECN echo halves
    /// the window, as Reno would, before any marks have been measured. C accepts any value
    /// and caps it at 1024; the module refuses one it would change.
    pub const DCTCP_ALPHA_ON_INIT: ParamSpec =
        ParamSpec::new("dctcp_alpha_on_init", MAX_ALPHA, 0, MAX_ALPHA);

    /// Every parameter, in the module's order.
    pub const ALL: [ParamSpec; 2] = [DCTCP_SHIFT_G, DCTCP_ALPHA_ON_INIT];
}

/// One EWMA step of `alpha` at the end of an observation window in which `delivered_pkts`
/// packets were delivered, `delivered_ce_pkts` of them CE-marked.
///
/// As the kernel computes it: the decay `alpha >> shift_g` is rounded down, but an `alpha`
/// smaller than `2^shift_g` (whose decay rounds to 0) is cleared, so that without marks
/// `alpha` reaches 0 rather than sticking at `2^shift_g - 1`. The new term is
/// `(ce << (10 - shift_g)) / delivered`, in 32 bits: bits shifted out are lost (only for
/// 2^(22 + g) marks or more per window) and the sum wraps before the cap (only if more packets
/// are marked than delivered, which the stack never reports). `shift_g` above
/// [`MAX_SHIFT_G`] counts as [`MAX_SHIFT_G`].
pub fn update_alpha(alpha: u32, shift_g: u32, delivered_pkts: u32, delivered_ce_pkts: u32) -> u32 {
    let shift_g = shift_g.min(MAX_SHIFT_G);
    let decay = alpha >> shift_g;
    // The kernel's min_not_zero(alpha, decay).
    let mut alpha = alpha - if decay == 0 { alpha } else { decay.min(alpha) };
    if delivered_ce_pkts > 0 {
        let marked = (delivered_ce_pkts << (ALPHA_SHIFT - shift_g)) / delivered_pkts.max(1);
        alpha = alpha.wrapping_add(marked).min(MAX_ALPHA);
    }
    alpha
}

/// Slow-start threshold after an ECN echo: `cwnd (1 - alpha / 2)`, at least 2 packets.
///
/// The product `cwnd * alpha` is 32-bit, as in the kernel: it wraps for windows of 2^22
/// packets and more (then the cut is the wrapped product's, never more than the window).
/// `alpha` above [`MAX_ALPHA`] counts as [`MAX_ALPHA`].
pub fn ssthresh_pkts(cwnd_pkts: u32, alpha: u32) -> u32 {
    let cut = cwnd_pkts.wrapping_mul(alpha.min(MAX_ALPHA)) >> (ALPHA_SHIFT + 1);
    (cwnd_pkts - cut).max(reno::MIN_SSTHRESH_PKTS)
}

/// The socket's counters DCTCP reads on an ACK.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Counters {
    /// First unacknowledged sequence number.
    pub snd_una: u32,
    /// Next sequence number to send.
    pub snd_nxt: u32,
    /// Packets delivered so far (the socket's `delivered`).
    pub delivered_pkts: u32,
    /// Of those, packets that carried a CE mark (`delivered_ce`).
    pub delivered_ce_pkts: u32,
}

/// The counts of an observation window that just ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WindowEnd {
    /// Packets delivered in the window.
    pub delivered_pkts: u32,
    /// Of those, packets that carried a CE mark.
    pub delivered_ce_pkts: u32,
}

impl WindowEnd {
    /// The window's CE ratio for Protective Load Balancing, `<< PLB_SCALE`; `None` if nothing
    /// was delivered (then PLB is not told about the window). 32-bit as in the kernel.
    pub fn plb_ce_ratio(&self) -> Option<i32> {
        if self.delivered_pkts == 0 {
            return None;
        }
        let ratio = match self.delivered_ce_pkts {
            0 => 0,
            ce => (ce << PLB_SCALE) / self.delivered_pkts,
        };
        Some(ratio as i32)
    }
}

/// What the receiver side must report before its CE state changes: the ACK it has delayed
/// (if any) covers data up to `rcv_nxt` that arrived in CE state `ce`, so it must go out
/// with that state's ECE before the state changes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CeChange {
    /// The CE state of the data received so far.
    pub ce: bool,
    /// `rcv_nxt` when that state was last confirmed.
    pub rcv_nxt: u32,
}

/// Per-flow DCTCP state (28 bytes), the fields of the kernel's `struct dctcp` but PLB's.
/// All-zero until [`Dctcp::new`]: in the kernel it lives in the socket's zeroed congestion
/// control area.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[cfg_attr(MODULE, derive(pin_init::Zeroable))]
pub struct Dctcp {
    /// Estimated fraction of marked packets, 1024 = 1.0.
    pub alpha: u32,
    /// The observation window ends when `snd_una` reaches this sequence number.
    pub next_seq: u32,
    /// `delivered` at the start of the observation window.
    pub old_delivered_pkts: u32,
    /// `delivered_ce` at the start of the observation window.
    pub old_delivered_ce_pkts: u32,
    /// Receiver side: whether the last data packet received carried CE.
    pub ce: bool,
    /// Receiver side: `rcv_nxt` when the CE state was last confirmed.
    pub prior_rcv_nxt: u32,
    /// Window when the last reduction began, for undo; 0 before any.
    pub loss_cwnd_pkts: u32,
}

impl Dctcp {
    /// A flow starting with `alpha_on_init` (capped at [`MAX_ALPHA`]), its first observation
    /// window ending at the current `snd_nxt`.
    pub fn new(alpha_on_init: u32, now: &Counters, rcv_nxt: u32) -> Dctcp {
        let mut d = Dctcp {
            alpha: alpha_on_init.min(MAX_ALPHA),
            prior_rcv_nxt: rcv_nxt,
            ..Dctcp::default()
        };
        d.start_window(now);
        d
    }

    fn start_window(&mut self, now: &Counters) {
        self.next_seq = now.snd_nxt;
        self.old_delivered_pkts = now.delivered_pkts;
        self.old_delivered_ce_pkts = now.delivered_ce_pkts;
    }

    /// An ACK arrived. If it ends the observation window, updates `alpha` from the window's
    /// counts, starts the next window (ending at the current `snd_nxt`), and returns the
    /// window's counts.
    pub fn on_ack(&mut self, shift_g: u32, now: &Counters) -> Option<WindowEnd> {
        if seq::before(now.snd_una, self.next_seq) {
            return None;
        }
        // Counters wrap; their differences do not.
        let delivered = now.delivered_pkts.wrapping_sub(self.old_delivered_pkts);
        let delivered_ce = now
            .delivered_ce_pkts
            .wrapping_sub(self.old_delivered_ce_pkts);
        self.alpha = update_alpha(self.alpha, shift_g, delivered, delivered_ce);
        self.start_window(now);
        Some(WindowEnd {
            delivered_pkts: delivered,
            delivered_ce_pkts: delivered_ce,
        })
    }

    /// Slow-start threshold after an ECN echo (see [`ssthresh_pkts`]); remembers the window
    /// for undo.
    pub fn ssthresh(&mut self, cwnd_pkts: u32) -> u32 {
        self.loss_cwnd_pkts = cwnd_pkts;
        ssthresh_pkts(cwnd_pkts, self.alpha)
    }

    /// Slow-start threshold after a loss (fast recovery or timeout): halved as by Reno,
    /// whatever `alpha` says; remembers the window for undo.
    pub fn on_loss(&mut self, cwnd_pkts: u32) -> u32 {
        self.loss_cwnd_pkts = cwnd_pkts;
        reno::ssthresh_after_loss(cwnd_pkts)
    }

    /// Window to restore when a reduction was spurious.
    pub fn undo_cwnd(&self, cwnd_pkts: u32) -> u32 {
        cwnd_pkts.max(self.loss_cwnd_pkts)
    }

    /// Receiver side: a data packet arrived with (`ce`) or without a CE mark, `rcv_nxt`
    /// being the receive point after it. Returns the previous state if this one differs:
    /// DCTCP then ACKs at once, so that the sender learns exactly which packets were marked
    /// (first sending an ACK it had delayed, with the previous state's ECE).
    pub fn on_ecn(&mut self, ce: bool, rcv_nxt: u32) -> Option<CeChange> {
        let prior = CeChange {
            ce: self.ce,
            rcv_nxt: self.prior_rcv_nxt,
        };
        self.prior_rcv_nxt = rcv_nxt;
        self.ce = ce;
        (prior.ce != ce).then_some(prior)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::Rng;

    #[test]
    fn parameter_defaults_are_in_range() {
        crate::param::assert_consistent(&spec::ALL);
    }

    fn counters(snd_una: u32, snd_nxt: u32, delivered: u32, ce: u32) -> Counters {
        Counters {
            snd_una,
            snd_nxt,
            delivered_pkts: delivered,
            delivered_ce_pkts: ce,
        }
    }

    #[test]
    fn alpha_without_marks_decays_by_g() {
        assert_eq!(update_alpha(1024, 4, 10, 0), 960);
        assert_eq!(update_alpha(960, 4, 10, 0), 900);
        assert_eq!(update_alpha(1024, 1, 10, 0), 512);
        assert_eq!(update_alpha(0, 4, 10, 0), 0);
    }

    #[test]
    fn alpha_below_two_to_the_g_is_cleared() {
        // 15 >> 4 rounds to 0: min_not_zero clears it instead of keeping it forever.
        assert_eq!(update_alpha(15, 4, 10, 0), 0);
        assert_eq!(update_alpha(16, 4, 10, 0), 15);
        // So, from zero, a marking fraction whose term is below 2^g never builds up: it is
        // cleared and re-added every window (the kernel does the same).
        let mut alpha = 0;
        for _ in 0..100 {
            alpha = update_alpha(alpha, 4, 64, 3);
        }
        assert_eq!(alpha, 3);
    }

    #[test]
    fn alpha_with_marks_moves_towards_the_fraction() {
        // All marked: g * 1.0 = 64 per window from zero; stays at 1.0 from 1.0.
        assert_eq!(update_alpha(0, 4, 10, 10), 64);
        assert_eq!(update_alpha(1024, 4, 10, 10), 1024);
        // Half marked: 1024 - 64 + 32.
        assert_eq!(update_alpha(1024, 4, 10, 5), 992);
        // g = 1 (shift 0): alpha is the last window's fraction.
        assert_eq!(update_alpha(700, 0, 4, 1), 256);
        // g = 1/1024: the term is ce / delivered, rounded down.
        assert_eq!(update_alpha(1024, 10, 3, 2), 1023);
    }

    #[test]
    fn marks_without_delivery_and_wrapping_terms() {
        // Nothing delivered: divides by 1, capped at 1.0.
        assert_eq!(update_alpha(0, 4, 0, 3), 192);
        assert_eq!(update_alpha(0, 4, 0, 100), 1024);
        // 2^31 marks << 6 loses the high bits, as the kernel's u32 does.
        assert_eq!(update_alpha(0, 4, 1, 1 << 31), 0);
        // More marked than delivered: the sum wraps before the cap, as in the kernel.
        // 960 + (2^32 - 64) wraps to 896.
        assert_eq!(update_alpha(1024, 4, 1, u32::MAX >> 6), 896);
        // shift_g beyond the maximum behaves as the maximum.
        assert_eq!(update_alpha(1024, 40, 3, 2), update_alpha(1024, 10, 3, 2));
    }

    #[test]
    fn ssthresh_cuts_by_half_alpha() {
        assert_eq!(ssthresh_pkts(100, 1024), 50);
        assert_eq!(ssthresh_pkts(100, 512), 75);
        assert_eq!(ssthresh_pkts(100, 0), 100);
        assert_eq!(ssthresh_pkts(100, 5000), 50);
        assert_eq!(ssthresh_pkts(3, 1024), 2);
        assert_eq!(ssthresh_pkts(0, 1024), 2);
        // 2^22 * 1024 wraps to 0 in 32 bits: no cut (the kernel's arithmetic).
        assert_eq!(ssthresh_pkts(1 << 22, 1024), 1 << 22);
        assert_eq!(
            ssthresh_pkts(u32::MAX, 1024),
            u32::MAX - ((u32::MAX << 10) >> 11)
        );
    }

    fn window(delivered: u32, ce: u32) -> Option<WindowEnd> {
        Some(WindowEnd {
            delivered_pkts: delivered,
            delivered_ce_pkts: ce,
        })
    }

    #[test]
    fn plb_ratio() {
        let ratio = |d, ce| window(d, ce).and_then(|w| w.plb_ce_ratio());
        assert_eq!(ratio(0, 5), None);
        assert_eq!(ratio(10, 0), Some(0));
        assert_eq!(ratio(10, 5), Some(128));
        assert_eq!(ratio(10, 10), Some(256));
        assert_eq!(ratio(3, 1), Some(85));
    }

    #[test]
    fn window_ends_when_snd_una_reaches_next_seq() {
        let mut d = Dctcp::new(1024, &counters(1000, 5000, 7, 0), 42);
        assert_eq!(
            (d.next_seq, d.old_delivered_pkts, d.prior_rcv_nxt),
            (5000, 7, 42)
        );
        // Still inside the window: nothing changes.
        assert_eq!(d.on_ack(4, &counters(4999, 9000, 17, 5)), None);
        assert_eq!(d.alpha, 1024);
        // snd_una reached next_seq: 10 delivered, 5 marked.
        assert_eq!(d.on_ack(4, &counters(5000, 9000, 17, 5)), window(10, 5));
        assert_eq!(d.alpha, 992);
        assert_eq!(
            (d.next_seq, d.old_delivered_pkts, d.old_delivered_ce_pkts),
            (9000, 17, 5)
        );
        // A window in which nothing was delivered still decays alpha.
        assert_eq!(d.on_ack(4, &counters(9000, 9100, 17, 5)), window(0, 0));
        assert_eq!(d.alpha, 930);
    }

    #[test]
    fn window_survives_sequence_and_counter_wrap() {
        let mut d = Dctcp::new(
            0,
            &counters(u32::MAX - 10, u32::MAX - 5, u32::MAX - 1, u32::MAX),
            0,
        );
        assert_eq!(d.on_ack(4, &counters(u32::MAX - 6, 20, 3, 4)), None);
        // 20 - (-5) wraps: past next_seq. 5 delivered, 5 marked.
        assert_eq!(d.on_ack(4, &counters(10, 20, 3, 4)), window(5, 5));
        assert_eq!(d.alpha, 64);
    }

    #[test]
    fn losses_halve_and_undo_restores() {
        let mut d = Dctcp::new(256, &Counters::default(), 0);
        assert_eq!(d.ssthresh(80), 70);
        assert_eq!(d.undo_cwnd(70), 80);
        assert_eq!(d.on_loss(60), 30);
        assert_eq!(d.undo_cwnd(30), 60);
        assert_eq!(d.undo_cwnd(90), 90);
        assert_eq!(d.on_loss(3), 2);
    }

    #[test]
    fn ce_state_machine() {
        let mut d = Dctcp::new(1024, &Counters::default(), 100);
        // Unmarked data in the unmarked state: no change to report.
        assert_eq!(d.on_ecn(false, 200), None);
        // The first mark: report the unmarked data up to 200 first.
        assert_eq!(
            d.on_ecn(true, 300),
            Some(CeChange {
                ce: false,
                rcv_nxt: 200
            })
        );
        assert_eq!(d.on_ecn(true, 400), None);
        assert_eq!(
            d.on_ecn(false, 500),
            Some(CeChange {
                ce: true,
                rcv_nxt: 400
            })
        );
        assert_eq!((d.ce, d.prior_rcv_nxt), (false, 500));
    }

    /// Over random shifts, states and windows (including empty ones and more marks than
    /// packets): no panic (overflow panics in test builds), alpha stays within [0, 1.0], it
    /// moves down without marks and never down more than the decay with them, and it is
    /// monotone in the number of marks of a window.
    #[test]
    fn property_alpha_bounds_and_monotonicity() {
        let mut rng = Rng::new(0xdc7c);
        for _ in 0..200_000 {
            let g = rng.range(0, u64::from(MAX_SHIFT_G)) as u32;
            let alpha = rng.range(0, u64::from(MAX_ALPHA)) as u32;
            let delivered = match rng.range(0, 4) {
                0 => 0,
                1 => rng.range(0, u64::from(u32::MAX)) as u32,
                _ => rng.range(1, 1000) as u32,
            };
            let ce = rng.range(0, u64::from(delivered)) as u32;
            let next = update_alpha(alpha, g, delivered, ce);
            assert!(next <= MAX_ALPHA);
            let decayed = update_alpha(alpha, g, delivered, 0);
            assert!(decayed < alpha || alpha == 0);
            assert!(next >= decayed);
            // (Below 2^22 marks, ce + 1 included: from there the kernel's 32-bit shift
            // loses bits at g = 0.)
            if ce < delivered && ce + 1 < 1 << 22 {
                assert!(update_alpha(alpha, g, delivered, ce + 1) >= next);
            }
            let _ = update_alpha(alpha, g, rng.next_u64() as u32, rng.next_u64() as u32);
            let cwnd = rng.range(0, u64::from(u32::MAX)) as u32;
            let ss = ssthresh_pkts(cwnd, next);
            assert!(ss >= 2 && (ss <= cwnd || cwnd < 2));
            if cwnd < 1 << 22 {
                assert!(ss >= cwnd / 2);
            }
        }
    }

    /// With a constant marking fraction F, alpha starting at 1.0 settles within 2^g of
    /// F * 1024 (the EWMA's fixed point, up to the rounding of its two terms); without marks
    /// it reaches 0 within 1024 windows.
    #[test]
    fn property_alpha_converges_to_the_marking_fraction() {
        let mut rng = Rng::new(0x5eed);
        for _ in 0..5000 {
            let g = rng.range(0, 8) as u32;
            let delivered = rng.range(1, 500) as u32;
            let ce = rng.range(0, u64::from(delivered)) as u32;
            let mut alpha = MAX_ALPHA;
            for _ in 0..(64 << g) {
                alpha = update_alpha(alpha, g, delivered, ce);
            }
            let target = i64::from(ce) * 1024 / i64::from(delivered);
            assert!(
                (i64::from(alpha) - target).abs() <= 1 << g,
                "g {g}: {ce}/{delivered} gives alpha {alpha}, target {target}"
            );
            let mut alpha = rng.range(0, u64::from(MAX_ALPHA)) as u32;
            let mut windows = 0;
            while alpha > 0 {
                alpha = update_alpha(alpha, g, delivered, 0);
                windows += 1;
            }
            assert!(windows <= 1024);
        }
    }
}
