// SPDX-License-Identifier: GPL-2.0

//! Module parameters: each one's default and range, written once, in the core beside the
//! law that reads it (`timely::spec`, `dx::spec`, `dctcp::spec`, `rc3::spec`). The module
//! declares the parameter with the spec's default, its check at load is the spec's range
//! (narrowed where another parameter bounds it), and the message of a refused value comes
//! from [`ParamError`]. The sysfs description states the same range; a host test
//! (`tests/module_params.rs`) holds the modules' declarations to the specs.

use core::fmt;

/// One module parameter. Its unit is in its name (`_us`, `_ppm`, `_pkts`, ...).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ParamSpec {
    /// The parameter's name, as the module declares it.
    pub name: &'static str,
    /// Its value when the module is loaded without it.
    pub default: u32,
    /// Smallest value the parameter can take; another parameter may raise it
    /// ([`ParamSpec::check_in`]).
    pub min: u32,
    /// Largest value the parameter can take; another parameter may lower it.
    pub max: u32,
}

impl ParamSpec {
    /// A parameter; a default outside `[min, max]` fails the build.
    pub const fn new(name: &'static str, default: u32, min: u32, max: u32) -> ParamSpec {
        assert!(min <= default && default <= max);
        ParamSpec {
            name,
            default,
            min,
            max,
        }
    }

    /// Whether `value` is within the parameter's range; if not, why.
    pub fn check(&self, value: u32) -> Result<(), ParamError> {
        self.check_in(value, self.min, self.max)
    }

    /// Whether `value` is within `[min, max]`, the parameter's range as other parameters'
    /// values narrow it (never wider than [`ParamSpec::min`] to [`ParamSpec::max`]); if
    /// not, why, with the narrowed range.
    pub fn check_in(&self, value: u32, min: u32, max: u32) -> Result<(), ParamError> {
        let (min, max) = (min.max(self.min), max.min(self.max));
        if (min..=max).contains(&value) {
            Ok(())
        } else {
            Err(ParamError {
                name: self.name,
                value,
                min,
                max,
            })
        }
    }
}

/// A parameter outside its allowed range.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ParamError {
    /// Parameter name.
    pub name: &'static str,
    /// Its value.
    pub value: u32,
    /// Smallest allowed value.
    pub min: u32,
    /// Largest allowed value.
    pub max: u32,
}

/// The kernel's way of writing a refused value and its range (a closed interval):
/// `t_low_us=0: out of range [1, 9999999]`; the module's log line adds its name in front.
impl fmt::Display for ParamError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}={}: out of range [{}, {}]",
            self.name, self.value, self.min, self.max
        )
    }
}

/// Every spec of `specs` has a default within its range and a name of its own.
#[cfg(test)]
pub(crate) fn assert_consistent(specs: &[ParamSpec]) {
    for (i, s) in specs.iter().enumerate() {
        assert!(s.min <= s.default && s.default <= s.max, "{s:?}");
        assert_eq!(s.check(s.default), Ok(()));
        assert!(
            specs[..i].iter().all(|t| t.name != s.name),
            "{} twice",
            s.name
        );
    }
}

#[cfg(test)]
mod tests {
    extern crate std;
    use super::*;
    use std::string::ToString;

    const SPEC: ParamSpec = ParamSpec::new("t_low_us", 50, 1, 9_999_999);

    #[test]
    fn refused_values_name_the_parameter_and_the_kernel_style_range() {
        assert_eq!(SPEC.check(1), Ok(()));
        assert_eq!(SPEC.check(9_999_999), Ok(()));
        let e = SPEC.check(0).unwrap_err();
        assert_eq!(e.to_string(), "t_low_us=0: out of range [1, 9999999]");
        let e = SPEC.check(10_000_000).unwrap_err();
        assert_eq!((e.min, e.max, e.value), (1, 9_999_999, 10_000_000));
    }

    #[test]
    fn another_parameter_narrows_the_range_never_widens_it() {
        assert_eq!(SPEC.check_in(60, 61, u32::MAX).unwrap_err().min, 61);
        assert_eq!(SPEC.check_in(60, 0, 59).unwrap_err().max, 59);
        let e = SPEC.check_in(0, 0, u32::MAX).unwrap_err();
        assert_eq!((e.min, e.max), (1, 9_999_999));
        assert_eq!(SPEC.check_in(61, 61, 100), Ok(()));
    }
}
