// SPDX-License-Identifier: GPL-2.0

//! RC3's policy: the levels of TCP's low-priority loop and their DSCPs (Mittal et al.,
//! "Recursively Cautious Congestion Control", NSDI'14; thesis chapter 2).
//!
//! Loading the module installs the policy for every socket that has RC3 on (`TCP_RC3`, or
//! `net.ipv4.tcp_rc3`), under whatever congestion control; unloading it stops the loop.
//! Levels grow geometrically, as the thesis's "40 packets, then 400, then 4000": `levels`
//! numbers `first_level_pkts * level_factor^i`, read as cumulative bounds or as level sizes
//! (`reading`, the thesis's two readings, see `core/src/rc3.rs`). The copies leave outside
//! the congestion window, so the loop paces them at `line_rate_mbps` and schedules at most
//! one minimum RTT of them ahead: one bandwidth-delay product per walk.

use kernel::net::tcp::rc3::{Policy, Registration};
use kernel::prelude::*;

// The pure control laws and RC3's level logic, shared with the host tests; not every item
// is used here.
#[allow(unreachable_pub, dead_code)]
#[path = "core/src/lib.rs"]
mod cc_core;

use cc_core::rc3::{spec, Bounds, DscpMap, Reading, MAX_LEVELS};

// `load` is for parameter sets kept for callbacks; the policy is read once, here.
#[allow(dead_code)]
#[path = "module_params.rs"]
mod module_params;

module! {
    type: Rc3Policy,
    name: "tcp_rc3",
    authors: ["rfl-tcp-cc developers"],
    description: "RC3 policy: levels and DSCPs of TCP's low-priority loop",
    license: "GPL",
    params: {
        levels: u32 {
            default: crate::cc_core::rc3::spec::LEVELS.default,
            description: "number of low-priority levels, [1, 15]",
            permissions: 0o444,
        },
        first_level_pkts: u32 {
            default: crate::cc_core::rc3::spec::FIRST_LEVEL_PKTS.default,
            description: "the first level's number (packets)",
            permissions: 0o444,
        },
        level_factor: u32 {
            default: crate::cc_core::rc3::spec::LEVEL_FACTOR.default,
            description: "each next level's number is this many times the previous",
            permissions: 0o444,
        },
        reading: u32 {
            default: crate::cc_core::rc3::spec::READING.default,
            description: "[0, 1]; 0: the numbers are cumulative bounds (thesis code), 1: level sizes (thesis text)",
            permissions: 0o444,
        },
        dscp_map: u32 {
            default: crate::cc_core::rc3::spec::DSCP_MAP.default,
            description: "[0, 1]; 0: every level Lower-Effort (DSCP 1), 1: level n at DSCP 4n-1",
            permissions: 0o444,
        },
        line_rate_mbps: u32 {
            default: crate::cc_core::rc3::spec::LINE_RATE_MBPS.default,
            description: "[1, 1600000]; the line rate (Mbit/s) the copies are paced at, one BDP per walk",
            permissions: 0o444,
        },
    },
}

struct Rc3Policy {
    _registration: Registration,
}

/// The policy the parameters describe, or why not.
fn policy() -> Result<Policy> {
    use crate::module_parameters as m;
    let levels = m::levels.value();
    module_params::check(spec::LEVELS.check(levels))?;
    let reading = m::reading.value();
    module_params::check(spec::READING.check(reading))?;
    let dscp_map = m::dscp_map.value();
    module_params::check(spec::DSCP_MAP.check(dscp_map))?;
    let line_rate_mbps = m::line_rate_mbps.value();
    module_params::check(spec::LINE_RATE_MBPS.check(line_rate_mbps))?;
    // Every value in the specs' ranges has a meaning (host-tested).
    let reading = Reading::from_u32(reading).ok_or(ERANGE)?;
    let dscp = DscpMap::from_u32(dscp_map).ok_or(ERANGE)?;
    let mut list = [0u32; MAX_LEVELS];
    let mut n = m::first_level_pkts.value();
    for x in list.iter_mut().take(levels as usize) {
        *x = n;
        n = n.saturating_mul(m::level_factor.value());
    }
    let bounds = Bounds::new(reading, &list[..levels as usize]).map_err(|e| {
        // The core formats with core::fmt; Arguments bridges to the kernel's Display.
        pr_err!("invalid levels: {}\n", format_args!("{e}"));
        EINVAL
    })?;
    Policy::new(bounds.upper_pkts(), &dscp.values()[..levels as usize])?
        .with_line_rate(line_rate_mbps)
}

impl kernel::Module for Rc3Policy {
    fn init(_module: &'static ThisModule) -> Result<Self> {
        let policy = policy()?;
        pr_info!(
            "{} levels, copies paced at {} Mbit/s\n",
            policy.levels(),
            policy.line_rate_mbps()
        );
        Ok(Rc3Policy {
            _registration: Registration::new(&policy)?,
        })
    }
}
