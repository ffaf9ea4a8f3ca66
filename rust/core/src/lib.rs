// SPDX-License-Identifier: GPL-2.0

//! Control laws of the project's TCP congestion controls.
//!
//! Pure integer arithmetic with no dependencies and no `std`. The kernel modules include
//! this file as a module (`#[path = "core/src/lib.rs"] mod cc_core;`), so items refer to
//! each other with `super::`, which means the same in both places. Units are in the names
//! (`_us`, `_pkts`, `_bps`); fixed-point formats are stated where they are defined.

// Only the crate root may say no_std; in a kernel module this file is a plain module.
#![cfg_attr(not(MODULE), no_std)]
#![forbid(unsafe_code)]

pub mod dctcp;
pub mod dx;
pub mod ecn_share;
pub mod fixed;
pub mod param;
pub mod rc3;
pub mod reno;
pub mod sample;
pub mod seq;
pub mod swift;
pub mod timely;

#[cfg(test)]
mod ecn_model;
#[cfg(test)]
mod model;
#[cfg(test)]
mod testing;
