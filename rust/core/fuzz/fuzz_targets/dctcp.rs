// SPDX-License-Identifier: GPL-2.0

//! DCTCP: `update_alpha` and `ssthresh_pkts` on any values, and a flow's state machine
//! (`Dctcp`) over streams of ACKs whose counters move any way (forward, backward, wrapping,
//! more marks than deliveries), ECN echoes, losses, undos and receiver CE changes.
//!
//! Checked: no panic or overflow; alpha stays within [0, 1.0] and moves as the EWMA says
//! (down without marks, never below the decayed value with them, not down with more marks);
//! ssthresh is at least 2 and at most the window, and at least half of it below 2^22
//! packets; and every result equals net/ipv4/tcp_dctcp.c's `dctcp_update_alpha`,
//! `dctcp_ssthresh`, `dctcp_react_to_loss`, `dctcp_cwnd_undo` and tcp_dctcp.h's
//! `dctcp_ece_ack_update`, transcribed below with C's 32-bit unsigned arithmetic.

#![no_main]

use libfuzzer_sys::fuzz_target;
use tcp_cc_core::dctcp::{
    ssthresh_pkts, update_alpha, CeChange, Counters, Dctcp, WindowEnd, MAX_ALPHA, MAX_SHIFT_G,
    PLB_SCALE,
};
use tcp_cc_core::seq;
use tcp_cc_core_fuzz::Input;

/// The kernel's `min_not_zero(a, b)`.
fn min_not_zero(a: u32, b: u32) -> u32 {
    match (a, b) {
        (0, b) => b,
        (a, 0) => a,
        (a, b) => a.min(b),
    }
}

/// dctcp_update_alpha()'s EWMA step, `shift_g` being a value the module parameter accepts
/// (0..=10).
fn kernel_alpha(alpha: u32, shift_g: u32, delivered: u32, delivered_ce: u32) -> u32 {
    let mut alpha = alpha.wrapping_sub(min_not_zero(alpha, alpha >> shift_g));
    if delivered_ce != 0 {
        let ce = (delivered_ce << (10 - shift_g)) / delivered.max(1);
        alpha = alpha.wrapping_add(ce).min(1024);
    }
    alpha
}

/// dctcp_ssthresh()
fn kernel_ssthresh(cwnd: u32, alpha: u32) -> u32 {
    cwnd.wrapping_sub(cwnd.wrapping_mul(alpha) >> 11).max(2)
}

/// The PLB ratio dctcp_update_alpha() computes for a window.
fn kernel_plb(delivered: u32, delivered_ce: u32) -> Option<i32> {
    (delivered > 0).then(|| match delivered_ce {
        0 => 0,
        ce => ((ce << PLB_SCALE) / delivered) as i32,
    })
}

/// struct dctcp, as the kernel updates it.
#[derive(Debug)]
struct Kernel {
    alpha: u32,
    next_seq: u32,
    old_delivered: u32,
    old_delivered_ce: u32,
    ce_state: bool,
    prior_rcv_nxt: u32,
    loss_cwnd: u32,
}

impl Kernel {
    fn reset(&mut self, c: &Counters) {
        self.next_seq = c.snd_nxt;
        self.old_delivered = c.delivered_pkts;
        self.old_delivered_ce = c.delivered_ce_pkts;
    }

    fn check(&self, d: &Dctcp) {
        let got = (
            d.alpha,
            d.next_seq,
            d.old_delivered_pkts,
            d.old_delivered_ce_pkts,
        );
        let want = (
            self.alpha,
            self.next_seq,
            self.old_delivered,
            self.old_delivered_ce,
        );
        assert_eq!(got, want, "{d:?}\nkernel {self:?}");
        assert_eq!(
            (d.ce, d.prior_rcv_nxt, d.loss_cwnd_pkts),
            (self.ce_state, self.prior_rcv_nxt, self.loss_cwnd)
        );
    }
}

/// Properties of one EWMA step from a valid alpha.
fn check_alpha_step(alpha: u32, g: u32, delivered: u32, ce: u32) {
    let next = update_alpha(alpha, g, delivered, ce);
    assert!(next <= MAX_ALPHA);
    let decayed = update_alpha(alpha, g, delivered, 0);
    assert!(decayed < alpha || alpha == 0, "no decay: {alpha} g {g}");
    if ce <= delivered {
        // (More marks than deliveries: the kernel's sum wraps.)
        assert!(
            next >= decayed,
            "{alpha} g {g} {ce}/{delivered} -> {next} < {decayed}"
        );
        // (Up to where the 32-bit `ce << (10 - g)` loses bits: 2^(22 + g) marks.)
        if ce < delivered && u64::from(ce) + 1 < 1 << (22 + g) {
            let more = update_alpha(alpha, g, delivered, ce + 1);
            assert!(
                more >= next,
                "{alpha} g {g}: {ce}/{delivered} -> {next}, one more mark -> {more}"
            );
        }
    }
}

fn check_ssthresh(cwnd: u32, alpha: u32) {
    let ss = ssthresh_pkts(cwnd, alpha);
    assert_eq!(ss, kernel_ssthresh(cwnd, alpha.min(MAX_ALPHA)));
    assert!(
        ss >= 2 && (ss <= cwnd || cwnd < 2),
        "ssthresh({cwnd}, {alpha}) = {ss}"
    );
    if cwnd < 1 << 22 {
        assert!(ss >= cwnd / 2);
    }
}

fuzz_target!(|data: &[u8]| {
    let mut i = Input::new(data);
    // The module accepts 0..=10; the core treats anything above as 10.
    let raw_g = i.u32();
    let g = raw_g.min(MAX_SHIFT_G);

    // The pure functions on any values, valid alpha or not.
    let (alpha, delivered, ce) = (i.u32(), i.u32(), i.u32());
    assert_eq!(
        update_alpha(alpha, raw_g, delivered, ce),
        kernel_alpha(alpha, g, delivered, ce)
    );
    check_ssthresh(i.u32(), alpha);

    // A flow.
    let mut c = Counters {
        snd_una: i.u32(),
        snd_nxt: i.u32(),
        delivered_pkts: i.u32(),
        delivered_ce_pkts: i.u32(),
    };
    let alpha_on_init = i.u32();
    let rcv_nxt = i.u32();
    let mut d = Dctcp::new(alpha_on_init, &c, rcv_nxt);
    let mut k = Kernel {
        alpha: alpha_on_init.min(1024),
        next_seq: 0,
        old_delivered: 0,
        old_delivered_ce: 0,
        ce_state: false,
        prior_rcv_nxt: rcv_nxt,
        loss_cwnd: 0,
    };
    k.reset(&c);
    k.check(&d);
    let mut cwnd = i.u32();
    for _ in 0..1024 {
        if i.is_empty() {
            break;
        }
        match i.u8() % 8 {
            0..=3 => {
                // An ACK: the counters move by anything, usually forward by a little.
                let step = |i: &mut Input, x: u32| match i.u8() % 4 {
                    0 => i.u32(),
                    1 => x.wrapping_sub(u32::from(i.u8())),
                    _ => x.wrapping_add(u32::from(i.u8())),
                };
                c.snd_una = step(&mut i, c.snd_una);
                c.snd_nxt = step(&mut i, c.snd_nxt);
                let delivered_step = u32::from(i.u8());
                c.delivered_pkts = match i.u8() % 8 {
                    0 => i.u32(),
                    _ => c.delivered_pkts.wrapping_add(delivered_step),
                };
                c.delivered_ce_pkts = match i.u8() % 8 {
                    0 => i.u32(),
                    1 => c.delivered_ce_pkts.wrapping_add(u32::from(i.u8())),
                    n => c.delivered_ce_pkts.wrapping_add(delivered_step >> (n - 2)),
                };
                let before = d;
                let end = d.on_ack(raw_g, &c);
                if seq::before(c.snd_una, k.next_seq) {
                    assert_eq!(end, None);
                } else {
                    let delivered = c.delivered_pkts.wrapping_sub(k.old_delivered);
                    let ce = c.delivered_ce_pkts.wrapping_sub(k.old_delivered_ce);
                    let want = WindowEnd {
                        delivered_pkts: delivered,
                        delivered_ce_pkts: ce,
                    };
                    assert_eq!(end, Some(want));
                    assert_eq!(want.plb_ce_ratio(), kernel_plb(delivered, ce));
                    check_alpha_step(before.alpha, g, delivered, ce);
                    k.alpha = kernel_alpha(k.alpha, g, delivered, ce);
                    k.reset(&c);
                }
                assert_eq!(
                    seq::before(c.snd_una, k.next_seq),
                    (c.snd_una.wrapping_sub(k.next_seq) as i32) < 0
                );
            }
            4 => {
                // ECN echo: cut in proportion to alpha.
                let ss = d.ssthresh(cwnd);
                assert_eq!(ss, kernel_ssthresh(cwnd, k.alpha));
                check_ssthresh(cwnd, d.alpha);
                k.loss_cwnd = cwnd;
                cwnd = if i.bool() { ss } else { i.u32() };
            }
            5 => {
                let ss = d.on_loss(cwnd);
                assert_eq!(ss, (cwnd >> 1).max(2));
                k.loss_cwnd = cwnd;
                cwnd = if i.bool() { ss } else { 1 };
            }
            6 => {
                let undone = d.undo_cwnd(cwnd);
                assert_eq!(undone, cwnd.max(k.loss_cwnd));
                cwnd = undone;
            }
            _ => {
                // Receiver: a data segment with or without CE.
                let ce = i.bool();
                let rcv_nxt = i.u32();
                let prior = CeChange {
                    ce: k.ce_state,
                    rcv_nxt: k.prior_rcv_nxt,
                };
                let change = d.on_ecn(ce, rcv_nxt);
                assert_eq!(change, (k.ce_state != ce).then_some(prior));
                k.ce_state = ce;
                k.prior_rcv_nxt = rcv_nxt;
            }
        }
        assert!(d.alpha <= MAX_ALPHA);
        k.check(&d);
    }
});
