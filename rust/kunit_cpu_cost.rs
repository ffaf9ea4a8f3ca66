// SPDX-License-Identifier: GPL-2.0

//! CPU cost of a congestion control's per-ACK hooks, for the modules' KUnit suites.
//!
//! Each module's suite drives its controllers and the kernel's C ones (reno, cubic, dctcp)
//! through the same ACK stream in the same run and prints one line per controller:
//!
//! ```text
//! cpu_cost: <suite>: <name> <ns> ns/ACK (best of 5 x 20000 ACKs)
//! ```
//!
//! `tools/testbed/run-tests.sh` shows those lines and `make bench` reports them. The figures are
//! measurements, not pass/fail thresholds: the tests that print them assert behaviour only.
//!
//! The stream is congestion avoidance with one MSS per ACK, the window limiting the sender,
//! RTT samples that wander over a few microseconds, and one CE mark in ten on ECN
//! connections. Per ACK it calls what `tcp_ack()` calls, in its order: `pkts_acked`,
//! `in_ack_event`, then `cong_control` or `cong_avoid` (each only if the controller has
//! it). The test socket's own bookkeeping (sequence numbers, clock) is inside the
//! figure, the same for every controller.

use kernel::net::tcp::cong::testing::TestSocket;
use kernel::prelude::*;
use kernel::time::{Instant, Monotonic};

/// ACKs per measurement.
pub(crate) const ACKS: u32 = 20_000;
/// Measurements; the fastest is reported (the others include interrupts and the host's
/// scheduling of the UML guest).
const RUNS: u32 = 5;
const MSS: u32 = 1448;

/// Drives `s` through `ACKS` ACKs `RUNS` times; the best run's nanoseconds per ACK.
/// `ecn`: one ACK in ten reports a CE mark.
pub(crate) fn ns_per_ack(s: &mut TestSocket, ecn: bool) -> u64 {
    let mut now_us = 1_000_000u64;
    let mut una = 0u32;
    s.set_window(100, 50, 10_000);
    s.set_cwnd_limited(true, 200);
    s.set_rtt_us(100, 90);
    let mut best = u64::MAX;
    for _ in 0..RUNS {
        let start = Instant::<Monotonic>::now();
        for i in 0..ACKS {
            now_us += 12;
            una = una.wrapping_add(MSS);
            s.set_mss_and_clock(MSS, now_us);
            s.set_seq(una, una.wrapping_add(s.cwnd().wrapping_mul(MSS)), 0);
            let ce = u32::from(ecn && i % 10 == 0);
            s.deliver(1, ce);
            let rtt_us = 100 + i64::from(i % 7);
            s.pkts_acked(1, rtt_us as i32, s.cwnd().wrapping_mul(MSS));
            s.in_ack_event(0);
            s.cong_control(1, rtt_us, false, false);
            s.ack(una, 1);
        }
        let ns = start.elapsed().as_nanos().max(0) as u64;
        best = best.min(ns / u64::from(ACKS));
    }
    best
}

/// Prints one figure in the format `tools/testbed/run-tests.sh` collects.
pub(crate) fn report(suite: &str, name: &str, ns: u64) {
    pr_info!(
        "cpu_cost: {}: {} {} ns/ACK (best of {} x {} ACKs)\n",
        suite,
        name,
        ns,
        RUNS,
        ACKS
    );
}

/// Measures the kernel's C reno, cubic and dctcp (all built in), for comparison in the
/// same run; `Err` if one is missing.
pub(crate) fn report_c_references(suite: &str) -> Result {
    let mut reno = TestSocket::with_c_reno()?;
    report(suite, "reno (C)", ns_per_ack(&mut reno, false));
    let mut cubic = TestSocket::with_builtin_c(c"cubic", false)?;
    report(suite, "cubic (C)", ns_per_ack(&mut cubic, false));
    let mut dctcp = TestSocket::with_builtin_c(c"dctcp", true)?;
    report(suite, "dctcp (C)", ns_per_ack(&mut dctcp, true));
    Ok(())
}
