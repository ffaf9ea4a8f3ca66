// SPDX-License-Identifier: GPL-2.0

//! Loading a module's parameters through the pure core's validation, for the modules
//! whose parameters form one set (`tcp_timely`, `tcp_dx`).

use kernel::prelude::*;
use kernel::sync::SetOnce;

use crate::cc_core::timely::ParamError;

/// Validates `params` at load and keeps them in `cell`, where the callbacks read them
/// (the parameters are read-only, 0o444). A value out of its range fails the load with
/// `<module>: invalid parameter <name>=<value>: allowed range <min>..=<max>` (the words of
/// `cong::check_param_range`, which modules that check values one by one use).
pub(crate) fn load<P>(
    cell: &SetOnce<P>,
    params: P,
    validate: fn(&P) -> Result<(), ParamError>,
) -> Result {
    validate(&params).map_err(|e| {
        // In the module's crate, so the line carries the module's prefix.
        pr_err!(
            "invalid parameter {}={}: allowed range {}..={}\n",
            e.name,
            e.value,
            e.min,
            e.max
        );
        ERANGE
    })?;
    cell.populate(params);
    Ok(())
}
