// SPDX-License-Identifier: GPL-2.0

//! Reno's window updates from any state (windows, thresholds, credits and clamps of any
//! size), over streams of ACKs of any size, losses, undos and clamp changes.
//!
//! Checked after every event: no panic or overflow; the window never exceeds the clamp
//! after a window-limited ACK and never shrinks on an ACK except to the clamp; a window of
//! at least one packet stays so; the credit stays below the window it was earned at; and,
//! wherever the kernel's 32-bit arithmetic does not wrap, the new state equals what
//! net/ipv4/tcp_cong.c's `tcp_reno_cong_avoid`, `tcp_reno_ssthresh` and
//! `tcp_reno_undo_cwnd` compute (transcribed below in 64-bit arithmetic).

#![no_main]

use libfuzzer_sys::fuzz_target;
use tcp_cc_core::reno::{self, Window, MIN_SSTHRESH_PKTS};
use tcp_cc_core_fuzz::Input;

/// The kernel's state, in 64 bits; `None` from an operation whose 32-bit result would have
/// wrapped (or divided by zero) in C, where the two need not agree.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Kernel {
    cwnd: u64,
    ssthresh: u64,
    cnt: u64,
    clamp: u64,
}

fn fits(x: u64) -> Option<u64> {
    (x <= u64::from(u32::MAX)).then_some(x)
}

impl Kernel {
    fn from(w: &Window) -> Kernel {
        Kernel {
            cwnd: w.cwnd_pkts.into(),
            ssthresh: w.ssthresh_pkts.into(),
            cnt: w.ai_credit_pkts.into(),
            clamp: w.clamp_pkts.into(),
        }
    }

    /// tcp_slow_start()
    fn slow_start(&mut self, acked: u64) -> Option<u64> {
        let cwnd = fits(self.cwnd + acked)?.min(self.ssthresh);
        let acked = acked - (cwnd - self.cwnd);
        self.cwnd = cwnd.min(self.clamp);
        Some(acked)
    }

    /// tcp_cong_avoid_ai()
    fn cong_avoid_ai(&mut self, w: u64, acked: u64) -> Option<()> {
        if w == 0 {
            return None;
        }
        if self.cnt >= w {
            self.cnt = 0;
            self.cwnd = fits(self.cwnd + 1)?;
        }
        self.cnt = fits(self.cnt + acked)?;
        if self.cnt >= w {
            let delta = self.cnt / w;
            self.cnt -= delta * w;
            self.cwnd = fits(self.cwnd + delta)?;
        }
        self.cwnd = self.cwnd.min(self.clamp);
        Some(())
    }

    /// tcp_reno_cong_avoid()
    fn cong_avoid(&mut self, acked: u64, cwnd_limited: bool) -> Option<()> {
        if !cwnd_limited {
            return Some(());
        }
        let mut acked = acked;
        if self.cwnd < self.ssthresh {
            acked = self.slow_start(acked)?;
            if acked == 0 {
                return Some(());
            }
        }
        self.cong_avoid_ai(self.cwnd, acked)
    }
}

fuzz_target!(|data: &[u8]| {
    let mut i = Input::new(data);
    let mut w = Window {
        cwnd_pkts: i.u32(),
        ssthresh_pkts: i.u32(),
        ai_credit_pkts: i.u32(),
        clamp_pkts: i.u32(),
    };
    let mut prior_cwnd = w.cwnd_pkts;
    for _ in 0..1024 {
        if i.is_empty() {
            break;
        }
        let before = w;
        match i.u8() % 8 {
            0..=4 => {
                let acked = match i.u8() % 4 {
                    0 => i.u32(),
                    _ => u32::from(i.u8()),
                };
                let cwnd_limited = i.u8() & 7 != 0;
                let mut k = Kernel::from(&w);
                let exact = k.cong_avoid(acked.into(), cwnd_limited);
                w.on_ack(acked, cwnd_limited);
                if exact.is_some() {
                    assert_eq!(
                        Kernel::from(&w),
                        k,
                        "on_ack({acked}, {cwnd_limited}) from {before:?}"
                    );
                }
                assert_eq!(w.ssthresh_pkts, before.ssthresh_pkts);
                assert_eq!(w.clamp_pkts, before.clamp_pkts);
                if !cwnd_limited {
                    assert_eq!(w, before);
                    continue;
                }
                assert!(w.cwnd_pkts <= w.clamp_pkts, "{before:?} -> {w:?}");
                assert!(
                    w.cwnd_pkts >= before.cwnd_pkts.min(w.clamp_pkts),
                    "{before:?} -> {w:?}"
                );
                if before.cwnd_pkts >= 1 && w.clamp_pkts >= 1 {
                    assert!(w.cwnd_pkts >= 1);
                }
                // Growth per ACK: slow start adds at most `acked`, avoidance one packet per
                // window's worth of credit (plus one from credit earned at a larger window).
                let grown = u64::from(w.cwnd_pkts.saturating_sub(before.cwnd_pkts));
                let w0 = u64::from(before.cwnd_pkts.max(1));
                let bound = u64::from(acked)
                    + 1
                    + (u64::from(before.ai_credit_pkts) + u64::from(acked)) / w0;
                assert!(grown <= bound, "{before:?} + {acked} -> {w:?}");
            }
            5 => {
                // Loss: ssthresh halves (at least 2), the window drops to it (end of
                // recovery) or to 1 (timeout).
                let ss = reno::ssthresh_after_loss(w.cwnd_pkts);
                assert_eq!(ss, (w.cwnd_pkts >> 1).max(2));
                assert!(ss >= MIN_SSTHRESH_PKTS);
                assert!(ss <= w.cwnd_pkts.max(MIN_SSTHRESH_PKTS));
                prior_cwnd = w.cwnd_pkts;
                w.ssthresh_pkts = ss;
                w.cwnd_pkts = if i.bool() { 1 } else { ss };
                w.ai_credit_pkts = 0;
            }
            6 => {
                let undone = reno::undo_cwnd(w.cwnd_pkts, prior_cwnd);
                assert_eq!(undone, w.cwnd_pkts.max(prior_cwnd));
                w.cwnd_pkts = undone;
            }
            _ => w.clamp_pkts = i.u32(),
        }
    }
});
