// SPDX-License-Identifier: GPL-2.0

//! RC3's level lists, DSCP maps and tail walks from any input.
//!
//! A level list of any length and values, in either reading, is accepted exactly when it
//! is valid (checked against a plain restatement of the rules), and then its bounds
//! increase and every position gets the level a naive count gives. A write queue grows at
//! its tail (skbs of any length, sequence numbers anywhere in the 32-bit space, the MSS
//! anything) while the primary's send point advances and the RLP walks: no skb is sent
//! twice, none before the send point, each at its first byte's level relative to the
//! tail of its walk, tail first, and a walk stops only at an skb it may not send.

#![no_main]

use libfuzzer_sys::fuzz_target;
use tcp_cc_core::rc3::{position, Bounds, DscpMap, Rc3Error, Reading, Skb, MAX_DSCP, MAX_LEVELS};
use tcp_cc_core::seq;
use tcp_cc_core_fuzz::Input;

/// What a list must satisfy, stated directly.
fn valid(reading: Reading, list: &[u32]) -> bool {
    if list.is_empty() || list.len() > MAX_LEVELS || list.contains(&0) {
        return false;
    }
    match reading {
        Reading::Cumulative => list.windows(2).all(|w| w[0] < w[1]),
        Reading::Additive => list.iter().map(|&n| u64::from(n)).sum::<u64>() <= u64::from(u32::MAX),
    }
}

fuzz_target!(|data: &[u8]| {
    let mut i = Input::new(data);
    let reading = if i.bool() {
        Reading::Additive
    } else {
        Reading::Cumulative
    };
    let n = usize::from(i.u8() % 18);
    let list: Vec<u32> = (0..n)
        .map(|_| match i.u8() % 4 {
            0 => i.u32(),
            _ => u32::from(i.u8()).saturating_mul(u32::from(i.u8()) + 1),
        })
        .collect();
    let bounds = match Bounds::new(reading, &list) {
        Ok(b) => {
            assert!(valid(reading, &list), "{list:?} accepted");
            b
        }
        Err(e) => {
            assert!(!valid(reading, &list), "{list:?} refused: {e}");
            if list.is_empty() {
                assert_eq!(e, Rc3Error::NoLevels);
            }
            Bounds::THESIS
        }
    };
    let upper = bounds.upper_pkts();
    assert_eq!(upper.len(), usize::from(bounds.levels()));
    assert!(upper[0] >= 1 && upper.windows(2).all(|w| w[0] < w[1]));

    // A DSCP map for these levels, valid or not.
    let dscp: Vec<u32> = (0..usize::from(bounds.levels()))
        .map(|_| u32::from(i.u8() % 70))
        .collect();
    match DscpMap::new(&dscp, bounds.levels()) {
        Ok(m) => {
            assert!(dscp.iter().all(|&d| d <= u32::from(MAX_DSCP)));
            for (l, &d) in dscp.iter().enumerate() {
                assert_eq!(u32::from(m.dscp(l as u8 + 1)), d);
            }
        }
        Err(_) => assert!(dscp.iter().any(|&d| d > u32::from(MAX_DSCP))),
    }

    let mss = i.u32();
    let mut q: Vec<Skb> = Vec::new();
    let mut tail = i.u32();
    let mut snd_nxt = tail;
    let mut ever_sent: Vec<u32> = Vec::new();
    while !i.is_empty() && q.len() < 4096 {
        match i.u8() % 4 {
            0 | 1 => {
                // Keep the queue under 2^31 bytes, as TCP's.
                let len = (i.u32() % (1 << 20)).max(1);
                if tail.wrapping_sub(q.first().map_or(tail, |s| s.seq)) > (1 << 30) {
                    continue;
                }
                q.push(Skb {
                    seq: tail,
                    len,
                    rlp_level: 0,
                });
                tail = tail.wrapping_add(len);
            }
            2 => {
                let k = usize::from(i.u8() % 8);
                if let Some(f) = q.iter().position(|s| !seq::before(s.seq, snd_nxt)) {
                    let last = (f + k).min(q.len());
                    if last > f {
                        snd_nxt = q[last - 1].seq.wrapping_add(q[last - 1].len);
                    }
                }
            }
            _ => {
                let prior = q.clone();
                let mut order = Vec::new();
                let stats = tcp_cc_core::rc3::walk(&mut q, snd_nxt, mss, &bounds, |j, l| {
                    order.push((j, l))
                });
                assert_eq!(stats.skbs as usize, order.len());
                for (n, &(j, l)) in order.iter().enumerate() {
                    assert_eq!(j, q.len() - 1 - n);
                    assert_eq!(prior[j].rlp_level, 0);
                    assert!(!seq::before(q[j].seq, snd_nxt));
                    assert_eq!(l, bounds.level(position(q[j].seq, tail, mss)));
                    assert_eq!(q[j].rlp_level, l);
                    assert!(!ever_sent.contains(&q[j].seq));
                    ever_sent.push(q[j].seq);
                }
                assert!(order.windows(2).all(|w| w[0].1 <= w[1].1));
                let stop = q.len() - order.len();
                if stop > 0 {
                    let s = prior[stop - 1];
                    assert!(s.rlp_level != 0 || seq::before(s.seq, snd_nxt));
                }
                assert_eq!(&q[..stop], &prior[..stop]);
            }
        }
    }
});
