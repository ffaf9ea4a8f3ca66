// SPDX-License-Identifier: GPL-2.0

//! Control laws of the project's TCP congestion controls.
//!
//! Pure integer arithmetic with no dependencies and no `std`, so the same files compile into
//! the kernel modules (each module includes the files it needs with `#[path]`) and into this
//! crate for host tests. Units are in the names (`_us`, `_pkts`, `_bps`); fixed-point formats
//! are stated where they are defined.

#![no_std]
#![forbid(unsafe_code)]

pub mod reno;
