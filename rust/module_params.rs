// SPDX-License-Identifier: GPL-2.0

//! Loading a module's parameters through the pure core's validation, for the modules
//! whose parameters form one set (`tcp_timely`, `tcp_dx`).

use kernel::net::tcp::cong;
use kernel::prelude::*;
use kernel::sync::SetOnce;

use crate::cc_core::timely::ParamError;

/// Validates `params` at load and keeps them in `cell`, where the callbacks read them
/// (the parameters are read-only, 0o444). A value out of its range fails the load with
/// `<module>: invalid parameter <name>=<value>: allowed range <min>..=<max>`.
pub(crate) fn load<P>(
    module: &str,
    cell: &SetOnce<P>,
    params: P,
    validate: fn(&P) -> Result<(), ParamError>,
) -> Result {
    validate(&params).or_else(|e| {
        let (value, min, max) = (e.value.into(), e.min.into(), e.max.into());
        cong::check_param_range(module, e.name, value, min, max).and(Err(ERANGE))
    })?;
    cell.populate(params);
    Ok(())
}
