// SPDX-License-Identifier: GPL-2.0

//! Reno (RFC 5681): slow start, then one packet per window of ACKed packets; halve on loss.
//!
//! Written to make the same decisions as the kernel's `tcp_reno` (net/ipv4/tcp_cong.c),
//! including its handling of stretch ACKs in slow start and of credits accumulated at a
//! larger window, so the two can be compared ACK by ACK.

/// The window state Reno reads and updates, all in packets.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Window {
    /// Congestion window.
    pub cwnd_pkts: u32,
    /// Slow-start threshold.
    pub ssthresh_pkts: u32,
    /// ACKed packets credited towards the next additive increase.
    pub ai_credit_pkts: u32,
    /// Upper bound on the window.
    pub clamp_pkts: u32,
}

/// Smallest slow-start threshold Reno sets after a loss.
pub const MIN_SSTHRESH_PKTS: u32 = 2;

impl Window {
    /// Whether the window is below the slow-start threshold.
    pub fn in_slow_start(&self) -> bool {
        self.cwnd_pkts < self.ssthresh_pkts
    }

    /// Processes an ACK for `acked_pkts` packets. `cwnd_limited` says whether the sender
    /// used the window (the window does not grow when the application left it idle).
    pub fn on_ack(&mut self, acked_pkts: u32, cwnd_limited: bool) {
        if !cwnd_limited {
            return;
        }
        let mut acked = acked_pkts;
        if self.in_slow_start() {
            acked = self.slow_start(acked);
            if acked == 0 {
                return;
            }
        }
        self.additive_increase(self.cwnd_pkts, acked);
    }

    /// Grows the window by up to `acked` packets, not past `ssthresh`; returns the packets
    /// left for congestion avoidance.
    fn slow_start(&mut self, acked: u32) -> u32 {
        let cwnd = self.cwnd_pkts.saturating_add(acked).min(self.ssthresh_pkts);
        let used = cwnd - self.cwnd_pkts;
        self.cwnd_pkts = cwnd.min(self.clamp_pkts);
        acked - used
    }

    /// One packet of window per `w` packets ACKed.
    fn additive_increase(&mut self, w: u32, acked: u32) {
        let w = w.max(1);
        // Credit earned at a larger window is spent one packet at a time.
        if self.ai_credit_pkts >= w {
            self.ai_credit_pkts = 0;
            self.cwnd_pkts = self.cwnd_pkts.saturating_add(1);
        }
        self.ai_credit_pkts = self.ai_credit_pkts.saturating_add(acked);
        if self.ai_credit_pkts >= w {
            let delta = self.ai_credit_pkts / w;
            self.ai_credit_pkts -= delta * w;
            self.cwnd_pkts = self.cwnd_pkts.saturating_add(delta);
        }
        self.cwnd_pkts = self.cwnd_pkts.min(self.clamp_pkts);
    }
}

/// Slow-start threshold after a loss: half the window, at least [`MIN_SSTHRESH_PKTS`].
pub fn ssthresh_after_loss(cwnd_pkts: u32) -> u32 {
    (cwnd_pkts >> 1).max(MIN_SSTHRESH_PKTS)
}

/// Window to restore when a loss was spurious: the larger of now and before recovery.
pub fn undo_cwnd(cwnd_pkts: u32, prior_cwnd_pkts: u32) -> u32 {
    cwnd_pkts.max(prior_cwnd_pkts)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn win(cwnd: u32, ssthresh: u32) -> Window {
        Window {
            cwnd_pkts: cwnd,
            ssthresh_pkts: ssthresh,
            ai_credit_pkts: 0,
            clamp_pkts: 10_000,
        }
    }

    #[test]
    fn slow_start_doubles_per_round() {
        let mut w = win(10, u32::MAX >> 1);
        for _ in 0..10 {
            w.on_ack(1, true);
        }
        assert_eq!(w.cwnd_pkts, 20);
    }

    #[test]
    fn slow_start_hands_leftover_to_avoidance() {
        let mut w = win(10, 12);
        w.on_ack(5, true);
        // 2 packets reach ssthresh, 3 are credited at w = 12.
        assert_eq!(w.cwnd_pkts, 12);
        assert_eq!(w.ai_credit_pkts, 3);
    }

    #[test]
    fn avoidance_adds_one_per_window() {
        let mut w = win(20, 10);
        for _ in 0..19 {
            w.on_ack(1, true);
        }
        assert_eq!(w.cwnd_pkts, 20);
        w.on_ack(1, true);
        assert_eq!(w.cwnd_pkts, 21);
        assert_eq!(w.ai_credit_pkts, 0);
    }

    #[test]
    fn stretch_ack_in_avoidance() {
        let mut w = win(10, 5);
        w.on_ack(25, true);
        assert_eq!(w.cwnd_pkts, 12);
        assert_eq!(w.ai_credit_pkts, 5);
    }

    #[test]
    fn idle_window_does_not_grow() {
        let mut w = win(10, 5);
        w.on_ack(100, false);
        assert_eq!(w, win(10, 5));
    }

    #[test]
    fn clamp_is_respected() {
        let mut w = Window {
            cwnd_pkts: 99,
            ssthresh_pkts: 1000,
            ai_credit_pkts: 0,
            clamp_pkts: 100,
        };
        w.on_ack(50, true);
        assert_eq!(w.cwnd_pkts, 100);
    }

    #[test]
    fn loss_halves_with_floor() {
        assert_eq!(ssthresh_after_loss(100), 50);
        assert_eq!(ssthresh_after_loss(3), 2);
        assert_eq!(ssthresh_after_loss(0), 2);
        assert_eq!(undo_cwnd(5, 40), 40);
        assert_eq!(undo_cwnd(50, 40), 50);
    }

    #[test]
    fn no_overflow_at_extremes() {
        let mut w = Window {
            cwnd_pkts: u32::MAX,
            ssthresh_pkts: u32::MAX,
            ai_credit_pkts: u32::MAX,
            clamp_pkts: u32::MAX,
        };
        w.on_ack(u32::MAX, true);
        let mut w = win(0, 0);
        w.on_ack(u32::MAX, true);
        assert!(w.cwnd_pkts >= 1);
    }
}
