// SPDX-License-Identifier: GPL-2.0

//! TIMELY's C from the output device: a lock-free table of the link speeds of the devices
//! TIMELY flows may leave through, which a netdevice notifier keeps ([`LinkSpeeds`]) and
//! `init` reads where the driver cannot be asked.

use kernel::net::netdev::{Event, Notification, Notifier};
use kernel::sync::atomic::{Acquire, Atomic, Relaxed, Release};
use kernel::sync::barrier::{smp_mb, Read, Write};

use crate::probe;

/// The link speed of the devices TIMELY flows may leave through, per (network namespace,
/// ifindex), as the netdevice notifier last read it ([`LinkSpeeds`]): `init` runs in
/// softirq for a passive open, where the driver's speed (ethtool, under RTNL) cannot be
/// read. Written by one writer at a time (the notifier, under RTNL), read locklessly: each
/// slot is a sequence-counted pair of words. Open addressing from the key's hash: a lookup
/// stops at a slot never used; a forgotten device leaves a tombstone that a new one reuses.
/// A device that does not fit leaves its flows at the default C.
pub(crate) struct LinkTable(pub(crate) [LinkSlot; LINK_SLOTS]);

pub(crate) struct LinkSlot {
    /// Odd while the slot is being written.
    seq: Atomic<u32>,
    /// `net_cookie` of the device's namespace; [`SLOT_NEVER_USED`] or [`SLOT_FORGOTTEN`].
    pub(crate) netns: Atomic<u64>,
    /// The ifindex (high 32 bits) and link speed in Mbit/s (low 32 bits).
    dev: Atomic<u64>,
}

/// 6 KB: devices with a known link speed a host may have.
pub(crate) const LINK_SLOTS: usize = 256;
/// Namespace cookies count from 1 at boot; these two are never reached.
pub(crate) const SLOT_NEVER_USED: u64 = 0;
const SLOT_FORGOTTEN: u64 = u64::MAX;

pub(crate) static LINKS: LinkTable = LinkTable::new();

impl LinkSlot {
    /// Writes the slot; the caller excludes other writers.
    pub(crate) fn write(&self, netns: u64, dev: u64) {
        let seq = self.seq.load(Relaxed);
        self.seq.store(seq.wrapping_add(1), Relaxed);
        smp_mb(Write);
        self.netns.store(netns, Relaxed);
        self.dev.store(dev, Relaxed);
        self.seq.store(seq.wrapping_add(2), Release);
    }

    /// A consistent `(netns, dev)` of the slot, retried while a writer is at it; `None` if
    /// it never was consistent.
    fn read(&self) -> Option<(u64, u64)> {
        (0..4).find_map(|_| {
            let seq = self.seq.load(Acquire);
            let words = (self.netns.load(Relaxed), self.dev.load(Relaxed));
            smp_mb(Read);
            (seq & 1 == 0 && self.seq.load(Relaxed) == seq).then_some(words)
        })
    }
}

impl LinkTable {
    pub(crate) const fn new() -> Self {
        LinkTable(
            [const {
                LinkSlot {
                    seq: Atomic::new(0),
                    netns: Atomic::new(SLOT_NEVER_USED),
                    dev: Atomic::new(0),
                }
            }; LINK_SLOTS],
        )
    }

    /// Slot order for a device: from its hash on, around the table once.
    pub(crate) fn probe(&self, netns: u64, ifindex: u32) -> impl Iterator<Item = &LinkSlot> {
        let key = netns ^ (u64::from(ifindex) << 32 | u64::from(ifindex));
        probe(&self.0, key, LINK_SLOTS)
    }

    /// The known link speed of device `ifindex` of namespace `netns`. A slot a writer holds
    /// throughout the retries is passed over: a slot being written never becomes a
    /// never-used one, so only a device in that very slot can be missed (it is being
    /// brought up or down meanwhile; the flow takes the default C).
    pub(crate) fn speed_mbps(&self, netns: u64, ifindex: u32) -> Option<u32> {
        for slot in self.probe(netns, ifindex) {
            let Some(words) = slot.read() else {
                continue;
            };
            match words {
                (SLOT_NEVER_USED, _) => return None,
                (n, dev) if n == netns && (dev >> 32) as u32 == ifindex => return Some(dev as u32),
                _ => {}
            }
        }
        None
    }

    /// Records device `ifindex` of `netns` at `speed_mbps`, or forgets it (`None`). Only
    /// from the notifier (RTNL serialises its calls), or on a table no notifier writes.
    pub(crate) fn set_speed(&self, netns: u64, ifindex: u32, speed_mbps: Option<u32>) {
        let dev_word = |speed: u32| (u64::from(ifindex) << 32) | u64::from(speed);
        // The one writer's own plain reads are consistent.
        let mut free = None;
        let mut own = None;
        for slot in self.probe(netns, ifindex) {
            let n = slot.netns.load(Relaxed);
            if n == netns && (slot.dev.load(Relaxed) >> 32) as u32 == ifindex {
                own = Some(slot);
                break;
            }
            if n == SLOT_FORGOTTEN || n == SLOT_NEVER_USED {
                free = free.or(Some(slot));
            }
            if n == SLOT_NEVER_USED {
                break;
            }
        }
        match (own, speed_mbps) {
            (Some(slot), Some(speed)) => slot.write(netns, dev_word(speed)),
            (Some(slot), None) => slot.write(SLOT_FORGOTTEN, 0),
            (None, Some(speed)) => {
                if let Some(slot) = free {
                    slot.write(netns, dev_word(speed));
                }
            }
            (None, None) => {}
        }
    }
}

/// Keeps [`LINKS`] up to date: a device's speed is read when it comes up and when its
/// state changes (a carrier change, as a NIC that renegotiates its speed makes), and
/// forgotten when it goes down or away. A speed changed without either (ethtool on a
/// device whose carrier stays up, as tun's) is seen at the next one.
pub(crate) struct LinkSpeeds;

impl Notifier for LinkSpeeds {
    fn notify(n: &Notification<'_>) {
        let speed = match n.event() {
            Event::Up | Event::Change => n.link_speed_mbps(),
            Event::Down | Event::Unregister => None,
        };
        LINKS.set_speed(n.netns_cookie(), n.ifindex(), speed);
    }
}
