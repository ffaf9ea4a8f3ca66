// SPDX-License-Identifier: GPL-2.0

//! Module parameters checked at load against their specs in the pure core
//! (`core/src/param.rs`): the message of a refused value, and, for the modules whose
//! parameters form one set (`tcp_timely`, `tcp_dx`), the set kept for the callbacks.

use kernel::prelude::*;
use kernel::sync::SetOnce;

use crate::cc_core::param::ParamError;

/// `Ok`, or `ERANGE` after logging `<module>: <name>=<value>: out of range [<min>, <max>]`
/// (the core's words): a refused value fails the load.
pub(crate) fn check(result: Result<(), ParamError>) -> Result {
    result.map_err(|e| {
        // In the module's crate, so the line carries the module's prefix. The core formats
        // with core::fmt; Arguments bridges to the kernel's Display.
        pr_err!("{}\n", format_args!("{e}"));
        ERANGE
    })
}

/// Validates `params` at load and keeps them in `cell`, where the callbacks read them
/// (the parameters are read-only, 0o444). A value out of its range fails the load
/// ([`check`]).
pub(crate) fn load<P>(
    cell: &SetOnce<P>,
    params: P,
    validate: fn(&P) -> Result<(), ParamError>,
) -> Result {
    check(validate(&params))?;
    cell.populate(params);
    Ok(())
}
