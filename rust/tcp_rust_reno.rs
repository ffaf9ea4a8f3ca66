// SPDX-License-Identifier: GPL-2.0

//! Reno in Rust: the first controller built on the `kernel::net::tcp::cong` abstractions.
//!
//! Selectable as `rust_reno`. Its decisions are the kernel's `reno`'s, ACK for ACK; the KUnit
//! suite below drives both on the same ACK sequences and compares them.

use kernel::net::tcp::cong::{self, Algorithm, Flags, Sock};
use kernel::prelude::*;

// Per-ACK CPU cost figures printed by the KUnit suite (shared with the other modules).
#[cfg(CONFIG_KUNIT)]
#[path = "kunit_cpu_cost.rs"]
mod kunit_cpu_cost;

// The pure control law, shared with the host tests; not every item of it is used here.
#[allow(unreachable_pub, dead_code)]
#[path = "core/src/reno.rs"]
mod reno;

kernel::module_tcp_cong! {
    algorithms: [RustReno],
    name: "tcp_rust_reno",
    authors: ["rfl-tcp-cc developers"],
    description: "TCP Reno congestion control, in Rust",
    license: "GPL",
}

struct RustReno;

#[vtable]
impl Algorithm for RustReno {
    const NAME: &'static CStr = c"rust_reno";
    // Unrestricted like C `reno`, the fallback every kernel allows: a port of it, nothing more.
    const FLAGS: Flags = Flags::NON_RESTRICTED;
    // Reno keeps its additive-increase credit in the socket's `snd_cwnd_cnt`, which the stack
    // resets on loss, so it needs no private state.
    type Data = ();

    fn ssthresh(sk: &mut Sock<'_>, _data: &mut ()) -> u32 {
        reno::ssthresh_after_loss(sk.cwnd())
    }

    fn undo_cwnd(sk: &mut Sock<'_>, _data: &mut ()) -> u32 {
        reno::undo_cwnd(sk.cwnd(), sk.prior_cwnd())
    }

    fn cong_avoid(sk: &mut Sock<'_>, _data: &mut (), _ack: u32, acked: u32) {
        let mut w = reno::Window {
            cwnd_pkts: sk.cwnd(),
            ssthresh_pkts: sk.ssthresh(),
            ai_credit_pkts: sk.cwnd_cnt(),
            clamp_pkts: sk.cwnd_clamp(),
        };
        w.on_ack(acked, sk.is_cwnd_limited());
        sk.set_cwnd(w.cwnd_pkts);
        sk.set_cwnd_cnt(w.ai_credit_pkts);
    }
}

#[kunit_tests(rust_reno)]
mod tests {
    use super::*;
    use kernel::net::tcp::cong::testing::TestSocket;

    /// Same ACK stream, same window as C reno; prints both costs and cubic's and dctcp's.
    #[test]
    fn cpu_cost_beside_c_reno() -> Result {
        use crate::kunit_cpu_cost::{ns_per_ack, report, report_c_references};
        let mut rust = TestSocket::with_algorithm::<RustReno>()?;
        let mut c = TestSocket::with_c_reno()?;
        let ns = ns_per_ack(&mut rust, false);
        ns_per_ack(&mut c, false);
        assert_eq!(rust.cwnd(), c.cwnd());
        assert_eq!(rust.ssthresh(), c.ssthresh());
        report("rust_reno", "rust_reno", ns);
        report_c_references("rust_reno")
    }

    /// What happens to a connection between two window observations.
    #[derive(Clone, Copy)]
    enum Step {
        /// An ACK for this many packets while the sender filled the window.
        Ack(u32),
        /// An ACK while the application left the window unused.
        IdleAck(u32),
        /// Loss repaired by fast recovery.
        FastRecovery,
        /// Retransmission timeout.
        Timeout,
        /// The last reduction was spurious.
        Undo,
    }

    fn drive(s: &mut TestSocket, step: Step, seq: &mut u32) {
        match step {
            Step::Ack(n) | Step::IdleAck(n) => {
                let limited = matches!(step, Step::Ack(_));
                let cwnd = s.cwnd();
                s.set_cwnd_limited(limited, if limited { cwnd } else { 0 });
                *seq = seq.wrapping_add(n);
                s.ack(*seq, n);
            }
            Step::FastRecovery => s.fast_recovery(),
            Step::Timeout => s.timeout(),
            Step::Undo => s.undo(),
        }
    }

    /// Runs the same steps through C `reno` and `rust_reno`, comparing after each step.
    fn same_decisions(steps: &[Step], cwnd: u32, ssthresh: u32, clamp: u32) -> Result {
        let mut c = TestSocket::with_c_reno()?;
        let mut r = TestSocket::with_algorithm::<RustReno>()?;
        c.set_window(cwnd, ssthresh, clamp);
        r.set_window(cwnd, ssthresh, clamp);
        let (mut seq_c, mut seq_r) = (0u32, 0u32);
        for (i, step) in steps.iter().enumerate() {
            drive(&mut c, *step, &mut seq_c);
            drive(&mut r, *step, &mut seq_r);
            if (c.cwnd(), c.ssthresh()) != (r.cwnd(), r.ssthresh()) {
                pr_err!(
                    "step {i}: reno cwnd {} ssthresh {}, rust_reno cwnd {} ssthresh {}\n",
                    c.cwnd(),
                    c.ssthresh(),
                    r.cwnd(),
                    r.ssthresh()
                );
                return Err(EINVAL);
            }
        }
        Ok(())
    }

    #[test]
    fn slow_start_then_avoidance() -> Result {
        let mut steps = KVec::new();
        for _ in 0..400 {
            steps.push(Step::Ack(1), GFP_KERNEL)?;
        }
        same_decisions(&steps, 10, cong::INFINITE_SSTHRESH, 65535)?;
        same_decisions(&steps, 10, 37, 65535)
    }

    #[test]
    fn stretch_acks_and_idle() -> Result {
        let mut steps = KVec::new();
        for i in 0..300u32 {
            let n = 1 + (i * 7919) % 23;
            let step = if i % 11 == 5 {
                Step::IdleAck(n)
            } else {
                Step::Ack(n)
            };
            steps.push(step, GFP_KERNEL)?;
        }
        same_decisions(&steps, 3, 50, 65535)
    }

    #[test]
    fn losses_timeouts_and_undo() -> Result {
        let mut steps = KVec::new();
        for i in 0..600u32 {
            let step = match i % 97 {
                13 => Step::FastRecovery,
                41 => Step::Timeout,
                42 if i % 2 == 0 => Step::Undo,
                _ => Step::Ack(1 + i % 3),
            };
            steps.push(step, GFP_KERNEL)?;
        }
        same_decisions(&steps, 10, cong::INFINITE_SSTHRESH, 65535)
    }

    #[test]
    fn window_clamp() -> Result {
        let mut steps = KVec::new();
        for _ in 0..200 {
            steps.push(Step::Ack(4), GFP_KERNEL)?;
        }
        same_decisions(&steps, 10, cong::INFINITE_SSTHRESH, 57)
    }
}
