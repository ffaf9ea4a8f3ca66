// SPDX-License-Identifier: GPL-2.0

//! `ecn_share`: a flow's `EcnShare` over streams of ACKs whose counters move any way
//! (forward, backward, wrapping, more marks than deliveries, any packets in flight), and
//! `keep` on any values.
//!
//! Checked: no panic or overflow; a window ends exactly when the 16-bit count of packets
//! delivered since it began reaches the packets in flight (at least 1, at most 2^15);
//! alpha then takes dctcp's EWMA step (`dctcp::update_alpha`, g = 1/16) on the window's
//! counts, marks capped at deliveries, and stays within [0, 1.0]; `keep` is the exact
//! `x - floor(x alpha / 2048)`, at least half of `x`.

#![no_main]

use libfuzzer_sys::fuzz_target;
use tcp_cc_core::dctcp::{update_alpha, WindowEnd, MAX_ALPHA};
use tcp_cc_core::ecn_share::{keep, EcnShare, INIT_ALPHA, MAX_WINDOW_PKTS, SHIFT_G};
use tcp_cc_core_fuzz::Input;

fuzz_target!(|data: &[u8]| {
    let mut i = Input::new(data);
    let x = i.u64();
    let a = i.u32();
    let k = keep(x, a);
    let exact = u128::from(x) - u128::from(x) * u128::from(a.min(MAX_ALPHA)) / 2048;
    assert_eq!(u128::from(k), exact);
    assert!(k >= x / 2 && k <= x);

    let (mut delivered, mut ce) = (i.u32(), i.u32());
    let mut e = EcnShare::new(delivered, ce);
    assert_eq!(e.alpha(), INIT_ALPHA);
    let (mut start, mut start_ce) = (delivered, ce);
    let mut alpha = INIT_ALPHA;
    while !i.is_empty() {
        delivered = delivered.wrapping_add(i.u32());
        ce = ce.wrapping_add(i.u32());
        let in_flight = i.u32();
        let got = e.on_ack(delivered, ce, in_flight);
        let window = u32::from((delivered as u16).wrapping_sub(start as u16));
        let want = if window >= in_flight.clamp(1, MAX_WINDOW_PKTS) {
            let marked = u32::from((ce as u16).wrapping_sub(start_ce as u16)).min(window);
            alpha = update_alpha(alpha, SHIFT_G, window, marked);
            (start, start_ce) = (delivered, ce);
            Some(WindowEnd {
                delivered_pkts: window,
                delivered_ce_pkts: marked,
            })
        } else {
            None
        };
        assert_eq!(got, want);
        assert_eq!(e.alpha(), alpha);
        assert!(alpha <= MAX_ALPHA);
    }
});
