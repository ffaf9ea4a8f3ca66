// SPDX-License-Identifier: GPL-2.0

//! Where a delay or RTT sample comes from, for the laws that take them (TIMELY's
//! segmenter, DX's estimator). The kernel names the delay-stamp option's sources in its own
//! type (`kernel::net::tcp::cong::DelaySource`); the modules map it to this one in one
//! place (`rust/delay_source.rs`).

/// Where a sample comes from, best first. The numbers are what `ss -ti` shows as
/// `pacing_gain` (in 1/256) for TIMELY and DX, 0 meaning no sample yet; the laws keep a
/// source as its number in the socket's private area ([`SampleSource::code`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
#[repr(u8)]
pub enum SampleSource {
    /// The delay-stamp option on the devices' hardware stamps (NIC clocks, the DX paper's
    /// hardware mode, about 0.5 us of noise): the network RTT (t4' - t1') - (t3 - t2),
    /// the receiver's hold removed, and a one-way delay across two NIC clocks.
    Hardware = 1,
    /// The delay-stamp option on software stamps at the device boundary (the DX paper's
    /// software mode): the network RTT (t4 - t1) - (t3 - t2), and a one-way delay across
    /// two host clocks.
    Software = 2,
    /// The kernel's RTT sample of the ACK, which includes the receiver's hold; no one-way
    /// delay (DX takes the RTT as one, so its queuing delay is the RTT less its minimum).
    KernelRtt = 3,
}

impl SampleSource {
    /// The source's number (1 to 3; 0 stands for none).
    pub const fn code(self) -> u8 {
        self as u8
    }

    /// The source numbered `code`; `None` for 0 (no sample yet) or any other number.
    pub const fn from_code(code: u8) -> Option<SampleSource> {
        match code {
            1 => Some(SampleSource::Hardware),
            2 => Some(SampleSource::Software),
            3 => Some(SampleSource::KernelRtt),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_round_trip_and_order_best_first() {
        let all = [
            SampleSource::Hardware,
            SampleSource::Software,
            SampleSource::KernelRtt,
        ];
        for (i, s) in all.into_iter().enumerate() {
            assert_eq!(usize::from(s.code()), i + 1);
            assert_eq!(SampleSource::from_code(s.code()), Some(s));
        }
        assert!(all
            .windows(2)
            .all(|w| w[0] < w[1] && w[0].code() < w[1].code()));
        assert_eq!(SampleSource::from_code(0), None);
        assert_eq!(SampleSource::from_code(4), None);
    }
}
