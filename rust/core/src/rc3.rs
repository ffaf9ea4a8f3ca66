// SPDX-License-Identifier: GPL-2.0

//! RC3's recursive low-priority loop (RLP): which packet goes out at which priority level
//! (Mittal, PhD thesis UCB/EECS-2018-103, chapter 2; NSDI'14).
//!
//! Besides the primary loop (unmodified TCP, level 0, sending from the head of the send
//! buffer), RC3 sends the same buffer from its tail backwards, once, at lower priorities:
//! the packets nearest the tail at level 1, then level 2, and so on (a larger level number
//! is a lower priority). This file decides the levels and walks an abstract write queue;
//! the kernel's mechanism (`net/ipv4/tcp_rc3.c` in the patched tree) does the same walk on
//! the real one with the bounds computed here.
//!
//! **Position.** A packet's position is its distance from the tail in packets, counted
//! from 1: the packet holding the last byte is at position 1, whether full or not. For a
//! byte sequence number `seq` (the packet's first byte) and the buffer's tail `tail_seq`
//! (one past the last byte), `position = ceil((tail_seq - seq) / mss)` (modulo 2^32, as
//! TCP's sequence space). The thesis's code divides rounding down, which with a short last
//! packet puts 41 packets at level 1; rounding up keeps the counts what the text says.
//!
//! **The two readings of the thesis's levels.** Section 2.1 says "the first 40 packets
//! (from right) are sent at priority 1; the next 400 at priority 2; the next 4000 at
//! priority 3": level sizes 40, 400, 4000, i.e. upper bounds 40, 440, 4440
//! ([`Reading::Additive`]). Section 2.3's Linux code assigns "if this value is <= 40,
//! priority 1, if <= 400, priority 2, and so on": upper bounds 40, 400, 4000, i.e. sizes
//! 40, 360, 3600 ([`Reading::Cumulative`]). Both read the same list of numbers; the thesis's
//! figure 2.3 example (62 RLP packets: 40 at level 1, 22 at level 2) fits both. The default
//! is the cumulative reading: it is what was measured (section 2.4.2) and what the
//! "exponential" split of footnote 2 describes (each level ends at ten times the
//! previous bound); footnote 2 also says the exact counts "have little significance".
//! Either way the list is turned into cumulative upper bounds ([`Bounds`]), which is all
//! the kernel sees.
//!
//! **Beyond the last bound.** The thesis goes on "and so on"; a prio qdisc has at most 16
//! bands (level 0 and 15 RLP levels), so the list is finite and its last level is open:
//! every packet past the last bound is at the last level.
//!
//! **TSO.** An skb that spans several levels goes out at the lowest priority of what it
//! holds (section 2.3.2): the highest level number, which is the level of its first byte,
//! the one furthest from the tail ([`Bounds::skb_level`]).
//!
//! **DSCP.** Each level's packets carry that level's DSCP ([`DscpMap`]). The default maps
//! every RLP level to Lower-Effort (LE, DSCP 1, RFC 8622): in a network that does not know
//! RC3's levels, everything the RLP sends is at least below best effort, which is what RC3
//! needs to never hurt other traffic. A network configured for RC3 (strict priority per
//! level, the thesis's "WQoS") wants a codepoint per level: [`DscpMap::LOCAL_LEVELS`]
//! gives level `n` the codepoint `4n - 1` (3, 7, 11, ..., 59), all from RFC 2474's pool 2
//! (`xxxx11`), reserved for experimental or local use.
//!
//! **The tail walk** ([`walk`]): from the last skb backwards, each skb not yet sent by the
//! RLP goes out at its level and is marked; the walk stops at the first skb the RLP has
//! already sent (a previous walk went on from there) or at the primary's send point (the
//! primary has sent, or will send, everything before it). Data appended later starts a
//! new walk from the new tail, positions counted from that tail (the thesis's guard for
//! small send buffers, section 2.3.2). An skb is never sent twice by the RLP.

use super::param::ParamSpec;
use super::seq;

/// Most RLP levels: a prio qdisc has 16 bands, band 0 being the primary's.
pub const MAX_LEVELS: usize = 15;

/// Largest DSCP (6 bits).
pub const MAX_DSCP: u8 = 63;

/// Lower-Effort per-hop behaviour (RFC 8622).
pub const DSCP_LE: u8 = 1;

/// `tcp_rc3`'s module parameters: their defaults and ranges, written only here
/// ([`super::param`]). The defaults make [`Policy::DEFAULT`]: the thesis's 40, 400 and 4000
/// packets, in the cumulative reading, every level Lower-Effort.
pub mod spec {
    use super::{ParamSpec, MAX_LEVELS};

    pub const LEVELS: ParamSpec = ParamSpec::new("levels", 3, 1, MAX_LEVELS as u32);
    /// Any value: the list of levels it makes is checked as a whole ([`super::Bounds::new`]).
    pub const FIRST_LEVEL_PKTS: ParamSpec = ParamSpec::new("first_level_pkts", 40, 0, u32::MAX);
    /// Any value, as `first_level_pkts`.
    pub const LEVEL_FACTOR: ParamSpec = ParamSpec::new("level_factor", 10, 0, u32::MAX);
    /// [`super::Reading::from_u32`].
    pub const READING: ParamSpec = ParamSpec::new("reading", 0, 0, 1);
    /// 0: [`super::DscpMap::LOWER_EFFORT`], 1: [`super::DscpMap::LOCAL_LEVELS`].
    pub const DSCP_MAP: ParamSpec = ParamSpec::new("dscp_map", 0, 0, 1);
    /// The line rate the loop's copies are paced at, Mbit/s (1 Mbit/s to 1.6 Tbit/s): each
    /// walk schedules at most one minimum RTT of them at this rate, one bandwidth-delay
    /// product.
    pub const LINE_RATE_MBPS: ParamSpec = ParamSpec::new("line_rate_mbps", 1000, 1, 1_600_000);

    /// Every parameter, in the module's order.
    pub const ALL: [ParamSpec; 6] = [
        LEVELS,
        FIRST_LEVEL_PKTS,
        LEVEL_FACTOR,
        READING,
        DSCP_MAP,
        LINE_RATE_MBPS,
    ];
}

/// How a list of level sizes is read (see the module's documentation).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reading {
    /// Each number is the level's cumulative upper bound: 40, 400, 4000 gives levels of
    /// 40, 360 and 3600 packets (the thesis's Linux code).
    Cumulative,
    /// Each number is the level's size: 40, 400, 4000 gives upper bounds 40, 440 and 4440
    /// (the thesis's section 2.1).
    Additive,
}

impl Reading {
    /// From the module parameter's encoding: 0 cumulative, 1 additive.
    pub fn from_u32(v: u32) -> Option<Reading> {
        match v {
            0 => Some(Reading::Cumulative),
            1 => Some(Reading::Additive),
            _ => None,
        }
    }
}

/// A level list or DSCP map that cannot be used.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Rc3Error {
    /// No level at all.
    NoLevels,
    /// More than [`MAX_LEVELS`] levels.
    TooManyLevels {
        /// How many were given.
        levels: usize,
    },
    /// A level of zero packets.
    EmptyLevel {
        /// The level (1-based).
        level: u8,
    },
    /// In the cumulative reading, a bound not above the one before it.
    NotIncreasing {
        /// The level (1-based).
        level: u8,
        /// Its bound.
        bound_pkts: u32,
        /// The previous level's bound.
        previous_pkts: u32,
    },
    /// In the additive reading, bounds that pass 2^32 - 1 packets.
    TooLarge {
        /// The first level whose bound does not fit.
        level: u8,
    },
    /// A DSCP above [`MAX_DSCP`].
    BadDscp {
        /// The level (1-based).
        level: u8,
        /// The value given.
        dscp: u32,
    },
    /// A DSCP map with another number of entries than levels.
    DscpCount {
        /// Entries given.
        given: usize,
        /// Levels.
        levels: usize,
    },
}

impl core::fmt::Display for Rc3Error {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match *self {
            Rc3Error::NoLevels => write!(f, "at least one level is needed"),
            Rc3Error::TooManyLevels { levels } => {
                write!(f, "{levels} levels: at most {MAX_LEVELS}")
            }
            Rc3Error::EmptyLevel { level } => write!(f, "level {level} has 0 packets"),
            Rc3Error::NotIncreasing {
                level,
                bound_pkts,
                previous_pkts,
            } => write!(
                f,
                "level {level} ends at {bound_pkts} packets, not above level {}'s {previous_pkts}",
                level - 1
            ),
            Rc3Error::TooLarge { level } => {
                write!(f, "level {level} ends beyond {} packets", u32::MAX)
            }
            Rc3Error::BadDscp { level, dscp } => {
                write!(f, "level {level}: DSCP {dscp} out of range [0, {MAX_DSCP}]")
            }
            Rc3Error::DscpCount { given, levels } => {
                write!(f, "{given} DSCP values for {levels} levels")
            }
        }
    }
}

/// Cumulative upper bounds of the levels, in packets from the tail: level `l` (1-based)
/// holds positions `bound[l - 2] + 1 ..= bound[l - 1]`, the last level every position past
/// the one before it. Invariant: `1 <= levels <= MAX_LEVELS`, bounds strictly increasing
/// and at least 1; entries past `levels` are `u32::MAX`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Bounds {
    upper_pkts: [u32; MAX_LEVELS],
    levels: u8,
}

impl Bounds {
    /// The thesis's levels, 40, 400, 4000 packets, in the cumulative reading.
    pub const THESIS: Bounds = Bounds {
        upper_pkts: {
            // Unused levels end at u32::MAX, as `Bounds` keeps them.
            let mut upper = [u32::MAX; MAX_LEVELS];
            upper[0] = 40;
            upper[1] = 400;
            upper[2] = 4000;
            upper
        },
        levels: 3,
    };

    /// Bounds from a list of level sizes read as `reading`.
    pub fn new(reading: Reading, list_pkts: &[u32]) -> Result<Bounds, Rc3Error> {
        if list_pkts.is_empty() {
            return Err(Rc3Error::NoLevels);
        }
        if list_pkts.len() > MAX_LEVELS {
            return Err(Rc3Error::TooManyLevels {
                levels: list_pkts.len(),
            });
        }
        let mut upper_pkts = [u32::MAX; MAX_LEVELS];
        let mut previous_pkts = 0u32;
        for (i, &n) in list_pkts.iter().enumerate() {
            // At most MAX_LEVELS entries: the level number fits in u8.
            let level = (i + 1) as u8;
            if n == 0 {
                return Err(Rc3Error::EmptyLevel { level });
            }
            let bound_pkts = match reading {
                Reading::Cumulative if n <= previous_pkts => {
                    return Err(Rc3Error::NotIncreasing {
                        level,
                        bound_pkts: n,
                        previous_pkts,
                    })
                }
                Reading::Cumulative => n,
                Reading::Additive => previous_pkts
                    .checked_add(n)
                    .ok_or(Rc3Error::TooLarge { level })?,
            };
            upper_pkts[i] = bound_pkts;
            previous_pkts = bound_pkts;
        }
        Ok(Bounds {
            upper_pkts,
            levels: list_pkts.len() as u8,
        })
    }

    /// Number of RLP levels (1..=[`MAX_LEVELS`]).
    pub fn levels(&self) -> u8 {
        self.levels
    }

    /// The cumulative upper bounds, one per level (the last one is open: positions past
    /// it are at the last level too).
    pub fn upper_pkts(&self) -> &[u32] {
        &self.upper_pkts[..usize::from(self.levels)]
    }

    /// The level (1..=levels) of the packet at `position` (1 = the last packet; 0 is read
    /// as 1).
    pub fn level(&self, position: u32) -> u8 {
        let position = position.max(1);
        let last = usize::from(self.levels) - 1;
        // Bounds increase: the first one at or above the position.
        let i = self.upper_pkts[..last]
            .iter()
            .position(|&b| position <= b)
            .unwrap_or(last);
        (i + 1) as u8
    }

    /// The level of an skb whose first byte is `seq`, in a buffer whose tail is
    /// `tail_seq`, at `mss` bytes per packet: the level of its packet furthest from the
    /// tail, i.e. of its first byte (the TSO rule: an skb goes out at the lowest priority
    /// of what it holds).
    pub fn skb_level(&self, seq: u32, tail_seq: u32, mss: u32) -> u8 {
        self.level(position(seq, tail_seq, mss))
    }
}

/// Position (1-based, from the tail) of the packet whose first byte is `seq`, in a buffer
/// ending before `tail_seq`, at `mss` bytes per packet (0 read as 1): `ceil((tail_seq -
/// seq) / mss)`, the difference modulo 2^32. A `seq` at the tail (nothing after it) is
/// position 1.
pub fn position(seq: u32, tail_seq: u32, mss: u32) -> u32 {
    let bytes = tail_seq.wrapping_sub(seq);
    let mss = mss.max(1);
    bytes.div_ceil(mss).max(1)
}

/// DSCP of each RLP level (index 0 is level 1). Invariant: every entry is at most
/// [`MAX_DSCP`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DscpMap([u8; MAX_LEVELS]);

impl DscpMap {
    /// Every level at Lower-Effort (RFC 8622): the default.
    pub const LOWER_EFFORT: DscpMap = DscpMap([DSCP_LE; MAX_LEVELS]);

    /// Level `n` at `4n - 1` (3, 7, ..., 59): RFC 2474 pool 2, experimental or local use,
    /// for a network that gives each level its own strict-priority queue.
    pub const LOCAL_LEVELS: DscpMap = {
        let mut m = [0u8; MAX_LEVELS];
        let mut i = 0;
        while i < MAX_LEVELS {
            m[i] = 4 * (i as u8 + 1) - 1;
            i += 1;
        }
        DscpMap(m)
    };

    /// From the module parameter's encoding: 0 every level Lower-Effort, 1 a codepoint per
    /// level ([`DscpMap::LOCAL_LEVELS`]).
    pub fn from_u32(v: u32) -> Option<DscpMap> {
        match v {
            0 => Some(DscpMap::LOWER_EFFORT),
            1 => Some(DscpMap::LOCAL_LEVELS),
            _ => None,
        }
    }

    /// A map from one value per level (`values.len()` must be `levels`); entries past the
    /// given levels are Lower-Effort.
    pub fn new(values: &[u32], levels: u8) -> Result<DscpMap, Rc3Error> {
        if usize::from(levels) > MAX_LEVELS {
            return Err(Rc3Error::TooManyLevels {
                levels: levels.into(),
            });
        }
        if values.len() != usize::from(levels) {
            return Err(Rc3Error::DscpCount {
                given: values.len(),
                levels: levels.into(),
            });
        }
        let mut m = [DSCP_LE; MAX_LEVELS];
        for (i, &v) in values.iter().enumerate() {
            if v > u32::from(MAX_DSCP) {
                return Err(Rc3Error::BadDscp {
                    level: (i + 1) as u8,
                    dscp: v,
                });
            }
            m[i] = v as u8;
        }
        Ok(DscpMap(m))
    }

    /// The DSCP of `level` (1..=[`MAX_LEVELS`]; others read as the nearest).
    pub fn dscp(&self, level: u8) -> u8 {
        let i = usize::from(level.clamp(1, MAX_LEVELS as u8)) - 1;
        self.0[i]
    }

    /// All entries, level 1 first.
    pub fn values(&self) -> &[u8; MAX_LEVELS] {
        &self.0
    }
}

impl Default for DscpMap {
    fn default() -> DscpMap {
        DscpMap::LOWER_EFFORT
    }
}

/// Everything the kernel's mechanism needs: the levels and their DSCPs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Policy {
    /// Level bounds.
    pub bounds: Bounds,
    /// DSCP per level.
    pub dscp: DscpMap,
}

impl Policy {
    /// The thesis's levels (cumulative reading), every level Lower-Effort.
    pub const DEFAULT: Policy = Policy {
        bounds: Bounds::THESIS,
        dscp: DscpMap::LOWER_EFFORT,
    };
}

/// One skb of an abstract write queue: its first byte's sequence number, its length and
/// what the RLP did with it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Skb {
    /// First byte (TCP_SKB_CB(skb)->seq).
    pub seq: u32,
    /// Bytes.
    pub len: u32,
    /// 0: not sent by the RLP; else the level it went out at.
    pub rlp_level: u8,
}

/// Outcome of one tail walk.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct WalkStats {
    /// Skbs sent.
    pub skbs: u32,
    /// Bytes sent.
    pub bytes: u64,
}

/// One RLP pass over `queue` (the write queue in sequence order; the tail is the end of
/// its last skb): from the last skb backwards, each skb that starts at or after
/// `send_point_seq` (the primary's next byte, snd_nxt) and that the RLP has not sent yet
/// is given its level, marked, and passed to `send(index, level)`. Stops at the first skb
/// already sent by the RLP or before the send point. Sequence numbers compare modulo 2^32
/// (the queue spans less than 2^31 bytes, as TCP's does).
pub fn walk(
    queue: &mut [Skb],
    send_point_seq: u32,
    mss: u32,
    bounds: &Bounds,
    mut send: impl FnMut(usize, u8),
) -> WalkStats {
    let mut stats = WalkStats::default();
    let Some(last) = queue.last() else {
        return stats;
    };
    let tail_seq = last.seq.wrapping_add(last.len);
    for (i, skb) in queue.iter_mut().enumerate().rev() {
        if skb.rlp_level != 0 || seq::before(skb.seq, send_point_seq) {
            break;
        }
        let level = bounds.skb_level(skb.seq, tail_seq, mss);
        skb.rlp_level = level;
        stats.skbs += 1;
        stats.bytes += u64::from(skb.len);
        send(i, level);
    }
    stats
}

#[cfg(test)]
mod tests {
    extern crate std;
    use super::*;
    use crate::testing::Rng;
    use std::format;
    use std::vec::Vec;

    const LIST: [u32; 3] = [40, 400, 4000];

    #[test]
    fn the_parameters_defaults_make_the_default_policy() {
        crate::param::assert_consistent(&spec::ALL);
        let levels = spec::LEVELS.default as usize;
        let list: Vec<u32> = (0..levels as u32)
            .map(|i| spec::FIRST_LEVEL_PKTS.default * spec::LEVEL_FACTOR.default.pow(i))
            .collect();
        let reading = Reading::from_u32(spec::READING.default).unwrap();
        assert_eq!(Bounds::new(reading, &list), Ok(Policy::DEFAULT.bounds));
        let dscp = DscpMap::from_u32(spec::DSCP_MAP.default);
        assert_eq!(dscp, Some(Policy::DEFAULT.dscp));
        // Every value in range has a meaning, and none beyond.
        let (reading, dscp) = (spec::READING, spec::DSCP_MAP);
        assert!((reading.min..=reading.max).all(|v| Reading::from_u32(v).is_some()));
        assert!((dscp.min..=dscp.max).all(|v| DscpMap::from_u32(v).is_some()));
        assert_eq!(Reading::from_u32(reading.max + 1), None);
        assert_eq!(DscpMap::from_u32(dscp.max + 1), None);
    }

    /// A queue of `n` single-packet skbs of `mss` bytes from `seq0`.
    fn packets(n: u32, mss: u32, seq0: u32) -> Vec<Skb> {
        (0..n)
            .map(|i| Skb {
                seq: seq0.wrapping_add(i * mss),
                len: mss,
                rlp_level: 0,
            })
            .collect()
    }

    fn count_per_level(queue: &[Skb]) -> [u32; MAX_LEVELS + 1] {
        let mut c = [0; MAX_LEVELS + 1];
        for s in queue {
            c[usize::from(s.rlp_level)] += 1;
        }
        c
    }

    #[test]
    fn readings() {
        let c = Bounds::new(Reading::Cumulative, &LIST).unwrap();
        assert_eq!(c, Bounds::THESIS);
        assert_eq!(c.upper_pkts(), &[40, 400, 4000]);
        let a = Bounds::new(Reading::Additive, &LIST).unwrap();
        assert_eq!(a.upper_pkts(), &[40, 440, 4440]);
        for (b, cases) in [
            (c, [(1, 1), (40, 1), (41, 2), (400, 2), (401, 3), (4000, 3)]),
            (a, [(1, 1), (40, 1), (41, 2), (440, 2), (441, 3), (4440, 3)]),
        ] {
            for (pos, level) in cases {
                assert_eq!(b.level(pos), level, "{b:?} at {pos}");
            }
            // The last level is open.
            assert_eq!(b.level(4441), 3);
            assert_eq!(b.level(u32::MAX), 3);
            assert_eq!(b.level(0), 1);
        }
        assert_eq!(Reading::from_u32(0), Some(Reading::Cumulative));
        assert_eq!(Reading::from_u32(1), Some(Reading::Additive));
        assert_eq!(Reading::from_u32(2), None);
    }

    #[test]
    fn invalid_lists() {
        use Reading::*;
        assert_eq!(Bounds::new(Cumulative, &[]), Err(Rc3Error::NoLevels));
        assert_eq!(
            Bounds::new(Additive, &[1; 16]),
            Err(Rc3Error::TooManyLevels { levels: 16 })
        );
        assert_eq!(
            Bounds::new(Additive, &[4, 0]),
            Err(Rc3Error::EmptyLevel { level: 2 })
        );
        let e = Bounds::new(Cumulative, &[40, 400, 400]).unwrap_err();
        assert_eq!(
            e,
            Rc3Error::NotIncreasing {
                level: 3,
                bound_pkts: 400,
                previous_pkts: 400
            }
        );
        assert_eq!(
            format!("{e}"),
            "level 3 ends at 400 packets, not above level 2's 400"
        );
        assert_eq!(
            Bounds::new(Additive, &[u32::MAX, 1]),
            Err(Rc3Error::TooLarge { level: 2 })
        );
        // Fifteen levels fit, in both readings, up to the 32-bit limit.
        assert!(Bounds::new(Additive, &[1; 15]).is_ok());
        assert!(Bounds::new(Additive, &[u32::MAX]).is_ok());
        let ten: Vec<u32> = (0..9).map(|i| 4 * 10u32.pow(i + 1)).collect();
        assert_eq!(Bounds::new(Cumulative, &ten).unwrap().levels(), 9);
    }

    #[test]
    fn positions() {
        assert_eq!(position(100, 100, 10), 1);
        assert_eq!(position(99, 100, 10), 1);
        assert_eq!(position(90, 100, 10), 1);
        assert_eq!(position(89, 100, 10), 2);
        assert_eq!(position(0, 100, 0), 100);
        // Across the wrap of the sequence space.
        assert_eq!(position(u32::MAX - 9, 10, 10), 2);
    }

    /// Figure 2.3: 66 packets, the primary sent 4: the RLP sends 40 at level 1 and 22 at
    /// level 2 (both readings).
    #[test]
    fn thesis_example() {
        for reading in [Reading::Cumulative, Reading::Additive] {
            let b = Bounds::new(reading, &LIST).unwrap();
            let mut q = packets(66, 1460, 1000);
            let mut order = Vec::new();
            let s = walk(&mut q, 1000 + 4 * 1460, 1460, &b, |i, l| order.push((i, l)));
            assert_eq!(s.skbs, 62);
            let c = count_per_level(&q);
            assert_eq!(&c[..4], &[4, 40, 22, 0]);
            // Tail first, levels never decrease along the walk.
            assert_eq!(order[0], (65, 1));
            assert!(order
                .windows(2)
                .all(|w| w[0].0 > w[1].0 && w[0].1 <= w[1].1));
            // A second walk sends nothing.
            let s = walk(&mut q, 1000 + 4 * 1460, 1460, &b, |_, _| panic!("twice"));
            assert_eq!(s, WalkStats::default());
        }
    }

    /// Level sizes over a long buffer: 40/360/3600/rest against 40/400/4000/rest.
    #[test]
    fn level_sizes() {
        for (reading, sizes) in [
            (Reading::Cumulative, [40, 360, 5600]),
            (Reading::Additive, [40, 400, 5560]),
        ] {
            let b = Bounds::new(reading, &LIST).unwrap();
            let mut q = packets(6000, 1000, 0);
            walk(&mut q, 0, 1000, &b, |_, _| {});
            assert_eq!(&count_per_level(&q)[1..4], &sizes);
        }
    }

    /// A TSO skb goes out at the level of its first byte, the lowest priority it holds.
    #[test]
    fn tso_rule() {
        let b = Bounds::THESIS;
        // 10 packets of 100 bytes after a 64-packet skb: positions 11..=74 -> levels 1, 2.
        let mut q = Vec::from([Skb {
            seq: 0,
            len: 6400,
            rlp_level: 0,
        }]);
        q.extend(packets(10, 100, 6400));
        walk(&mut q, 0, 100, &b, |_, _| {});
        assert_eq!(q[0].rlp_level, 2);
        assert!(q[1..].iter().all(|s| s.rlp_level == 1));
        // An skb ending exactly at a bound stays at that level.
        assert_eq!(b.skb_level(0, 4000, 100), 1);
        assert_eq!(b.skb_level(0, 4001, 100), 2);
    }

    #[test]
    fn dscp_maps() {
        assert_eq!(DscpMap::default().dscp(1), DSCP_LE);
        assert!(DscpMap::LOWER_EFFORT.values().iter().all(|&d| d == 1));
        assert_eq!(DscpMap::LOCAL_LEVELS.dscp(1), 3);
        assert_eq!(DscpMap::LOCAL_LEVELS.dscp(2), 7);
        assert_eq!(DscpMap::LOCAL_LEVELS.dscp(15), 59);
        // Pool 2 (xxxx11), distinct.
        let v = DscpMap::LOCAL_LEVELS.values();
        assert!(v.iter().all(|&d| d & 3 == 3 && d <= MAX_DSCP));
        assert!(v.windows(2).all(|w| w[0] < w[1]));
        let m = DscpMap::new(&[8, 16, 24], 3).unwrap();
        assert_eq!((m.dscp(1), m.dscp(3), m.dscp(4)), (8, 24, DSCP_LE));
        assert_eq!(
            DscpMap::new(&[8, 64], 2),
            Err(Rc3Error::BadDscp { level: 2, dscp: 64 })
        );
        assert_eq!(
            DscpMap::new(&[8], 2),
            Err(Rc3Error::DscpCount {
                given: 1,
                levels: 2
            })
        );
        assert_eq!(Policy::DEFAULT.bounds.levels(), 3);
    }

    /// A random list, valid or not, for either reading.
    fn random_list(rng: &mut Rng) -> Vec<u32> {
        let n = rng.range(0, 16) as usize;
        let mut v = Vec::new();
        let mut x = 0u32;
        for _ in 0..n {
            x = match rng.range(0, 9) {
                0 => 0,
                1 => u32::MAX,
                2 => x,
                3 => rng.next_u64() as u32,
                _ => x.saturating_add(rng.range(1, 5000) as u32),
            };
            v.push(x);
        }
        v
    }

    /// The reference: level by counting bounds at or below the position.
    fn naive_level(upper: &[u32], position: u32) -> u8 {
        let position = position.max(1);
        let below = upper.iter().filter(|&&b| b < position).count();
        (below + 1).min(upper.len()) as u8
    }

    #[test]
    fn property_levels() {
        let mut rng = Rng::new(3);
        for _ in 0..20_000 {
            let list = random_list(&mut rng);
            let reading = if rng.range(0, 1) == 0 {
                Reading::Cumulative
            } else {
                Reading::Additive
            };
            let Ok(b) = Bounds::new(reading, &list) else {
                continue;
            };
            let upper = b.upper_pkts();
            assert!(upper.windows(2).all(|w| w[0] < w[1]) && upper[0] >= 1);
            for _ in 0..20 {
                let p = match rng.range(0, 3) {
                    0 => rng.next_u64() as u32,
                    1 => upper[rng.range(0, upper.len() as u64 - 1) as usize],
                    _ => upper[rng.range(0, upper.len() as u64 - 1) as usize].wrapping_add(1),
                };
                let l = b.level(p);
                assert_eq!(l, naive_level(upper, p), "{upper:?} at {p}");
                assert!((1..=b.levels()).contains(&l));
                // Monotonic in the position.
                assert!(b.level(p.saturating_add(1)) >= l);
            }
        }
    }

    /// Random write queues that grow at the tail while the primary advances and the RLP
    /// walks: no skb is sent twice, none before the send point, each at the level of its
    /// first byte relative to the tail at that walk, walks go tail first with levels that
    /// never decrease, and a walk stops at the first skb it cannot send.
    #[test]
    fn property_walks() {
        let mut rng = Rng::new(7);
        for _ in 0..2_000 {
            let mss = rng.range(1, 9000) as u32;
            let b = if rng.range(0, 1) == 0 {
                Bounds::THESIS
            } else {
                let n = rng.range(1, 6) as usize;
                let list: Vec<u32> = (0..n).map(|_| rng.range(1, 30) as u32).collect();
                Bounds::new(Reading::Additive, &list).unwrap()
            };
            let seq0 = rng.next_u64() as u32;
            let mut q: Vec<Skb> = Vec::new();
            let mut tail = seq0;
            let mut snd_nxt = seq0;
            let mut sent = Vec::new();
            for _ in 0..rng.range(1, 40) {
                match rng.range(0, 3) {
                    0 | 1 => {
                        for _ in 0..rng.range(1, 20) {
                            let len = rng.range(1, u64::from(mss) * 4) as u32;
                            q.push(Skb {
                                seq: tail,
                                len,
                                rlp_level: 0,
                            });
                            tail = tail.wrapping_add(len);
                        }
                    }
                    2 => {
                        // The primary sends whole skbs from its send point.
                        let k = rng.range(0, 5) as usize;
                        let first = q.iter().position(|s| !seq::before(s.seq, snd_nxt));
                        if let Some(f) = first {
                            let last = (f + k).min(q.len());
                            if last > f {
                                let s = q[last - 1];
                                snd_nxt = s.seq.wrapping_add(s.len);
                            }
                        }
                    }
                    _ => {
                        let before_walk = q.clone();
                        let mut order = Vec::new();
                        walk(&mut q, snd_nxt, mss, &b, |i, l| order.push((i, l)));
                        for (n, &(i, l)) in order.iter().enumerate() {
                            assert_eq!(before_walk[i].rlp_level, 0, "sent twice");
                            assert!(!seq::before(q[i].seq, snd_nxt));
                            assert_eq!(l, b.skb_level(q[i].seq, tail, mss));
                            assert_eq!(i, q.len() - 1 - n, "not tail first");
                            sent.push(q[i].seq);
                        }
                        assert!(order.windows(2).all(|w| w[0].1 <= w[1].1));
                        // The walk stopped where it had to.
                        if let Some(&(i, _)) = order.last() {
                            if i > 0 {
                                let s = before_walk[i - 1];
                                assert!(s.rlp_level != 0 || seq::before(s.seq, snd_nxt));
                            }
                        }
                        // Everything it did not touch is as it was.
                        for (i, s) in q.iter().enumerate() {
                            if !order.iter().any(|&(j, _)| j == i) {
                                assert_eq!(*s, before_walk[i]);
                            }
                        }
                    }
                }
            }
            let mut dedup = sent.clone();
            dedup.sort_unstable();
            dedup.dedup();
            assert_eq!(dedup.len(), sent.len());
        }
    }
}
