// SPDX-License-Identifier: GPL-2.0

//! TIMELY's count of recent senders, for the fair-share start: a lock-free table of the
//! flows of either variant that sent recently, per (network namespace, output device).
//! The epoch and count arithmetic is the core's (`timely::sender_epoch`,
//! `sender_word_add`, `recent_senders`); this file keeps the words where every socket can
//! reach them.

use kernel::sync::atomic::{Atomic, Relaxed};

use crate::cc_core::timely;
use crate::probe;

/// The flows of either variant that sent recently, per (network namespace, output device):
/// those a new flow starts at its fair share among (`timely::recent_senders`). A socket
/// that only receives is never counted: the stack calls no congestion control for its
/// ACKs. Slots are found by their key's hash, probing [`SENDER_PROBES`] in a row; a slot
/// whose flows all stopped sending two epochs ago may be taken by another key.
pub(crate) struct SenderSlot {
    /// `timely::sender_key()`, 0 while free.
    pub(crate) key: Atomic<u64>,
    /// Per epoch parity: `timely::sender_word_add()`'s epoch and count.
    words: [Atomic<u32>; 2],
}

/// 4 KB: namespaces times devices with TIMELY senders a host may have. A key that finds no
/// slot within its probes is not counted (its new flows start at C).
const SENDER_SLOTS: usize = 256;
const SENDER_PROBES: usize = 16;

pub(crate) static SENDERS: [SenderSlot; SENDER_SLOTS] = [const {
    SenderSlot {
        key: Atomic::new(0),
        words: [Atomic::new(0), Atomic::new(0)],
    }
}; SENDER_SLOTS];

impl SenderSlot {
    pub(crate) fn words(&self) -> [u32; 2] {
        [self.words[0].load(Relaxed), self.words[1].load(Relaxed)]
    }

    /// The slot of `key`, taking a free or stale one if `claim` (a flow about to count
    /// itself) and none has it yet.
    pub(crate) fn find(key: u64, epoch: u32, claim: bool) -> Option<&'static SenderSlot> {
        let slots = || probe(&SENDERS, key, SENDER_PROBES);
        if let Some(slot) = slots().find(|slot| slot.key.load(Relaxed) == key) {
            return Some(slot);
        }
        if !claim {
            return None;
        }
        slots().find(|slot| {
            let old = slot.key.load(Relaxed);
            let free = old == 0 || timely::recent_senders(slot.words(), epoch) == 0;
            // Taken from under us by another key: probe on.
            free && slot.key.cmpxchg(old, key, Relaxed).is_ok()
        })
    }

    /// Counts one more flow in `epoch`.
    pub(crate) fn count(&self, epoch: u32) {
        let word = &self.words[(epoch & 1) as usize];
        let mut old = word.load(Relaxed);
        while let Err(now) = word.cmpxchg(old, timely::sender_word_add(old, epoch), Relaxed) {
            old = now;
        }
    }
}
