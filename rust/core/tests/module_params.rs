// SPDX-License-Identifier: GPL-2.0

//! The kernel modules declare their parameters as the core's specs say: the same names in
//! the same order, each default taken from its spec (`default: crate::cc_core::<law>::spec::
//! <NAME>.default`, never a number), and each description stating the spec's range in the
//! kernel's way, `[min, max]`, as `modinfo` shows it. The module's declaration is macro
//! input that the core cannot see, so this test reads the modules' source.

use tcp_cc_core::param::ParamSpec;
use tcp_cc_core::{dctcp, dx, rc3, swift, timely};

/// One `name: u32 { default: ..., description: "...", ... }` entry of a module's `params`.
#[derive(Debug)]
struct Declared {
    name: String,
    default: String,
    description: String,
}

/// The parameters `file` (under `rust/`) declares, in order.
fn declared(file: &str) -> Vec<Declared> {
    let path = format!("{}/../{file}", env!("CARGO_MANIFEST_DIR"));
    let source = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    let block = source
        .split_once("\n    params: {\n")
        .unwrap_or_else(|| panic!("{file}: no params block"))
        .1;
    let mut params = Vec::new();
    let mut lines = block.lines().map(str::trim);
    while let Some(line) = lines.next() {
        if line == "}," || line == "}" {
            // The end of the block (entries end with their own `},` after the fields).
            break;
        }
        let name = line
            .strip_suffix(": u32 {")
            .unwrap_or_else(|| panic!("{file}: not a u32 parameter: {line}"));
        let mut entry = Declared {
            name: name.to_string(),
            default: String::new(),
            description: String::new(),
        };
        for field in lines.by_ref() {
            if field == "}," {
                break;
            }
            if let Some(v) = field.strip_prefix("default: ") {
                entry.default = v.trim_end_matches(',').to_string();
            } else if let Some(v) = field.strip_prefix("description: \"") {
                entry.description = v.trim_end_matches("\",").to_string();
            }
        }
        params.push(entry);
    }
    params
}

fn check(file: &str, law: &str, specs: &[ParamSpec]) {
    let declared = declared(file);
    let names = |d: &[Declared]| d.iter().map(|p| p.name.clone()).collect::<Vec<_>>();
    let spec_names: Vec<_> = specs.iter().map(|s| s.name.to_string()).collect();
    assert_eq!(names(&declared), spec_names, "{file}: parameters and specs");
    for (d, s) in declared.iter().zip(specs) {
        let default = format!(
            "crate::cc_core::{law}::spec::{}.default",
            s.name.to_uppercase()
        );
        assert_eq!(d.default, default, "{file}: {}'s default", s.name);
        // A parameter that takes any value has no range to state.
        if (s.min, s.max) != (0, u32::MAX) {
            let range = format!("[{}, {}]", s.min, s.max);
            assert!(
                d.description.contains(&range),
                "{file}: {}'s description \"{}\" does not state {range}",
                s.name,
                d.description
            );
        }
        assert!(!d.description.contains("..="), "{file}: {}", d.description);
    }
}

#[test]
fn tcp_timely_declares_the_timely_specs() {
    check("tcp_timely.rs", "timely", &timely::spec::ALL);
}

#[test]
fn tcp_dx_declares_the_dx_specs() {
    check("tcp_dx.rs", "dx", &dx::spec::ALL);
}

#[test]
fn tcp_rust_dctcp_declares_the_dctcp_specs() {
    check("tcp_rust_dctcp.rs", "dctcp", &dctcp::spec::ALL);
}

#[test]
fn tcp_rc3_declares_the_rc3_specs() {
    check("tcp_rc3.rs", "rc3", &rc3::spec::ALL);
}

#[test]
fn tcp_swift_declares_the_swift_specs() {
    check("tcp_swift.rs", "swift", &swift::spec::ALL);
}
