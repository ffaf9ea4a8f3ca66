// SPDX-License-Identifier: GPL-2.0

//! Sharing an ECN-marking fabric with DCTCP: an opt-in CE response for the delay-based
//! controls (`ecn_share`, off by default).
//!
//! A delay-based control beside DCTCP on a queue that CE-marks above a threshold `K` either
//! ignores the marks (and DCTCP holds the queue at `K` alone) or answers them as RFC 3168
//! asks, by halving once per marked window, while DCTCP cuts only by `alpha / 2`: either way
//! the delay-based flows get a fraction of a percent of the link. With `ecn_share` 1 they
//! answer marks as DCTCP does:
//!
//! ```text
//! once per window of data:  alpha = (1 - g) alpha + g F        g = 1/16, F marked fraction
//! if that window saw marks: x     = x (1 - alpha / 2)           x: the control's own state
//! ```
//!
//! `alpha` is DCTCP's, computed by [`dctcp::update_alpha`] (the kernel's integer arithmetic,
//! `g` = 1/16 as `dctcp_shift_g`'s default) and starting at 1.0 as `dctcp_alpha_on_init`'s
//! default, so the first marked window halves as RFC 3168 would. The state `x` is each
//! control's own: TIMELY's rate, Swift's fabric window (the marks are the fabric's), DX's
//! window (through `ssthresh`, as DCTCP; DX keeps a whole [`dctcp::Dctcp`], which has room
//! in its socket area).
//!
//! [`EcnShare`] is the compact form TIMELY and Swift keep (6 bytes: TIMELY's state fills the
//! socket's private area but for them). A window ends on the ACK by which at least as many
//! packets were delivered since it began as were in flight before that ACK (at least one,
//! at most [`MAX_WINDOW_PKTS`]): one window of data, about one RTT, as DCTCP's window that
//! ends when `snd_una` passes what was sent when it began. The counts are the socket's
//! `delivered` and `delivered_ce` (packets the peer's ECN echo acknowledged), kept as their
//! low 16 bits: their differences are exact while a window delivers fewer than 2^16
//! packets, which [`MAX_WINDOW_PKTS`] ensures but for a single ACK of more than 2^15.
//!
//! The cut is applied at the end of the window whose marks it answers (with the `alpha`
//! that includes them); DCTCP cuts on the window's first echo with the previous `alpha`.
//! Either way: once per window, and only for a window that saw marks.

use super::dctcp::{self, WindowEnd, MAX_ALPHA};
use super::param::ParamSpec;

/// The modules' parameter, in each law's `spec::ALL` (`timely`, `swift`, `dx`): 0 (the
/// default) keeps today's behaviour, 1 registers the ECN-sharing ops (see the modules).
pub const ECN_SHARE: ParamSpec = ParamSpec::new("ecn_share", 0, 0, 1);

/// DCTCP's EWMA shift, `g` = 1/16 (`dctcp_shift_g`'s default).
pub const SHIFT_G: u32 = dctcp::spec::DCTCP_SHIFT_G.default;
/// `alpha` of a new flow, 1.0 (`dctcp_alpha_on_init`'s default).
pub const INIT_ALPHA: u32 = dctcp::spec::DCTCP_ALPHA_ON_INIT.default;
/// Longest window, in packets: keeps the 16-bit counts' differences exact.
pub const MAX_WINDOW_PKTS: u32 = 1 << 15;

const _: () = assert!(SHIFT_G == 4 && INIT_ALPHA == MAX_ALPHA && MAX_ALPHA < 1 << 16);

/// Per-flow state (6 bytes). All-zero until [`EcnShare::new`] (the socket's zeroed area):
/// then `alpha` is 0 and the first ACK ends a window.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[cfg_attr(MODULE, derive(pin_init::Zeroable))]
pub struct EcnShare {
    /// Low 16 bits of `delivered` when the window began.
    old_delivered: u16,
    /// Low 16 bits of `delivered_ce` when the window began.
    old_delivered_ce: u16,
    /// Estimated fraction of marked packets, 1024 = 1.0.
    alpha: u16,
}

impl EcnShare {
    /// A flow whose socket has delivered `delivered_pkts` packets, `delivered_ce_pkts` of
    /// them with an echoed mark; `alpha` [`INIT_ALPHA`].
    pub fn new(delivered_pkts: u32, delivered_ce_pkts: u32) -> EcnShare {
        EcnShare {
            old_delivered: delivered_pkts as u16,
            old_delivered_ce: delivered_ce_pkts as u16,
            alpha: INIT_ALPHA as u16,
        }
    }

    /// The marked fraction's moving average, 1024 = 1.0.
    pub fn alpha(&self) -> u32 {
        u32::from(self.alpha)
    }

    /// An ACK, after which the socket has delivered `delivered_pkts` packets,
    /// `delivered_ce_pkts` of them with an echoed mark; `in_flight_pkts` were in flight
    /// before it. If it ends the window, updates `alpha` from the window's counts (DCTCP's
    /// arithmetic), starts the next window and returns the counts: the caller cuts its state
    /// by [`keep`] with the new `alpha` when `delivered_ce_pkts` is not 0.
    pub fn on_ack(
        &mut self,
        delivered_pkts: u32,
        delivered_ce_pkts: u32,
        in_flight_pkts: u32,
    ) -> Option<WindowEnd> {
        let delivered = u32::from((delivered_pkts as u16).wrapping_sub(self.old_delivered));
        if delivered < in_flight_pkts.clamp(1, MAX_WINDOW_PKTS) {
            return None;
        }
        let marked = (delivered_ce_pkts as u16).wrapping_sub(self.old_delivered_ce);
        // More marked than delivered only if the counters were not the socket's: none.
        let marked = u32::from(marked).min(delivered);
        // update_alpha returns at most MAX_ALPHA: fits.
        self.alpha = dctcp::update_alpha(self.alpha(), SHIFT_G, delivered, marked) as u16;
        self.old_delivered = delivered_pkts as u16;
        self.old_delivered_ce = delivered_ce_pkts as u16;
        Some(WindowEnd {
            delivered_pkts: delivered,
            delivered_ce_pkts: marked,
        })
    }
}

/// What an ACK tells the controls of ECN (the socket's counts after it).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct EcnAck {
    /// The ACK echoed a mark (`FLAG_ECE`).
    pub ece: bool,
    /// TCP is in its CWR state (entered on an echo, or on local congestion).
    pub in_cwr: bool,
    /// The socket's `delivered` after the ACK.
    pub delivered_pkts: u32,
    /// The socket's `delivered_ce` after the ACK.
    pub delivered_ce_pkts: u32,
    /// Packets in flight before the ACK.
    pub in_flight_pkts: u32,
}

impl EcnShare {
    /// [`EcnShare::on_ack`] on `a`'s counts: `Some(alpha)` when a window with marks ended,
    /// the `alpha` to cut by.
    pub fn cut_on(&mut self, a: &EcnAck) -> Option<u32> {
        let end = self.on_ack(a.delivered_pkts, a.delivered_ce_pkts, a.in_flight_pkts)?;
        (end.delivered_ce_pkts > 0).then_some(self.alpha())
    }
}

/// `x (1 - alpha / 2)`: what a cut by `alpha / 2` keeps of `x`, the cut `x alpha / 2048`
/// rounded down as DCTCP's [`dctcp::ssthresh_pkts`] rounds it (exact in 64 bits for any
/// `x`). `alpha` above [`MAX_ALPHA`] counts as [`MAX_ALPHA`].
pub fn keep(x: u64, alpha: u32) -> u64 {
    let a = u64::from(alpha.min(MAX_ALPHA));
    let shift = dctcp::ALPHA_SHIFT + 1;
    // x = q 2^11 + r: x a / 2^11 = q a + r a / 2^11, q a < 2^53 * 2^10.
    let cut = (x >> shift) * a + (((x & ((1 << shift) - 1)) * a) >> shift);
    x - cut
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::Rng;

    #[test]
    fn the_spec_is_off_by_default() {
        assert_eq!((ECN_SHARE.default, ECN_SHARE.min, ECN_SHARE.max), (0, 0, 1));
        assert!(ECN_SHARE.check(2).is_err());
    }

    #[test]
    fn a_new_flow_starts_at_alpha_one() {
        assert_eq!(EcnShare::new(7, 3).alpha(), 1024);
        assert_eq!(EcnShare::default().alpha(), 0);
    }

    /// Window by window, alpha is exactly DCTCP's (`dctcp::Dctcp` on the same counts, its
    /// window ending on the same ACKs), including across the counters' wrap.
    #[test]
    fn alpha_matches_dctcps_integer_arithmetic() {
        let mut rng = Rng::new(0xec75);
        for _ in 0..2000 {
            let start = rng.next_u64() as u32;
            let start_ce = rng.next_u64() as u32;
            let mut e = EcnShare::new(start, start_ce);
            let counters = |d: u32, ce: u32| dctcp::Counters {
                snd_una: d,
                snd_nxt: d,
                delivered_pkts: d,
                delivered_ce_pkts: ce,
            };
            let mut d = dctcp::Dctcp::new(INIT_ALPHA, &counters(start, start_ce), 0);
            let (mut delivered, mut ce) = (start, start_ce);
            for _ in 0..50 {
                let window = rng.range(1, 3000) as u32;
                let marked = rng.range(0, u64::from(window)) as u32;
                delivered = delivered.wrapping_add(window);
                ce = ce.wrapping_add(marked);
                let ours = e.on_ack(delivered, ce, window);
                let theirs = d.on_ack(SHIFT_G, &counters(delivered, ce));
                assert_eq!(ours, theirs);
                assert_eq!(e.alpha(), d.alpha);
            }
        }
    }

    #[test]
    fn a_window_ends_once_a_window_of_data_is_delivered() {
        let mut e = EcnShare::new(100, 0);
        // 10 in flight: 9 delivered is not a window yet; 10 is.
        assert_eq!(e.on_ack(109, 9, 10), None);
        assert_eq!(e.alpha(), 1024);
        let end = e.on_ack(110, 5, 10);
        assert_eq!(
            end,
            Some(WindowEnd {
                delivered_pkts: 10,
                delivered_ce_pkts: 5
            })
        );
        assert_eq!(e.alpha(), 1024 - 64 + 32);
        // Nothing in flight (an idle restart): one packet ends the window.
        assert!(e.on_ack(111, 5, 0).is_some());
        assert_eq!(e.alpha(), 930);
        // A huge flight: the window ends at 2^15 packets.
        assert!(e.on_ack(111 + (1 << 15) - 1, 5, u32::MAX).is_none());
        assert!(e.on_ack(111 + (1 << 15), 5, u32::MAX).is_some());
    }

    #[test]
    fn without_marks_alpha_decays_to_zero() {
        let mut e = EcnShare::new(0, 0);
        let mut delivered = 0u32;
        let mut windows = 0;
        while e.alpha() > 0 {
            delivered = delivered.wrapping_add(20);
            let w = e.on_ack(delivered, 0, 20).map(|w| w.delivered_ce_pkts);
            assert_eq!(w, Some(0));
            windows += 1;
        }
        // (1 - 1/16)^n 1024 < 16 from n = 65; then cleared.
        assert!((60..80).contains(&windows), "{windows}");
    }

    #[test]
    fn keep_cuts_by_half_alpha_as_dctcp() {
        assert_eq!(keep(100, 1024), 50);
        assert_eq!(keep(100, 512), 75);
        assert_eq!(keep(100, 0), 100);
        assert_eq!(keep(100, 5000), 50);
        assert_eq!(keep(u64::MAX, 1024), u64::MAX - (u64::MAX >> 1));
        assert_eq!(keep(0, 1024), 0);
        let mut rng = Rng::new(0x5a5a);
        for _ in 0..100_000 {
            let x = rng.next_u64() >> rng.range(0, 63);
            let a = rng.range(0, 1100) as u32;
            let k = keep(x, a);
            let exact = u128::from(x) - u128::from(x) * u128::from(a.min(1024)) / 2048;
            assert_eq!(u128::from(k), exact);
            // Below 2^22 packets DCTCP's 32-bit ssthresh is the same cut (floor 2 apart).
            if (4..1 << 21).contains(&x) {
                assert_eq!(
                    k.max(2),
                    u64::from(dctcp::ssthresh_pkts(x as u32, a.min(1024)))
                );
            }
        }
    }
}
