// SPDX-License-Identifier: GPL-2.0

//! The kernel's source of a delay sample as the core's [`SampleSource`]: the one place the
//! modules that take the delay-stamp option's samples (`tcp_timely`, `tcp_dx`) map it.

use kernel::net::tcp::cong::DelaySource;

use crate::cc_core::sample::SampleSource;

/// The core's name for where the kernel's delay sample `source` came from.
pub(crate) fn sample_source(source: DelaySource) -> SampleSource {
    match source {
        DelaySource::Hardware => SampleSource::Hardware,
        // Software stamps at the device boundary; the first samples of a connection may
        // take t2 or t4 from TCP's clock, software too.
        DelaySource::Device | DelaySource::Tcp => SampleSource::Software,
    }
}
