// SPDX-License-Identifier: GPL-2.0

//! `fixed::mul_div` against 128-bit arithmetic: exact (capped at `u64::MAX`) wherever its
//! doc says it is, never above the exact value anywhere, `u64::MAX` for `d == 0`, and no
//! panic for any arguments.

#![no_main]

use libfuzzer_sys::fuzz_target;
use tcp_cc_core::fixed::mul_div;
use tcp_cc_core_fuzz::Input;

fn check(i: &mut Input) {
    let (a, b, d) = (i.u64(), i.u64(), i.u64());
    let got = mul_div(a, b, d);
    if d == 0 {
        assert_eq!(got, u64::MAX);
        return;
    }
    let exact = u128::from(a) * u128::from(b) / u128::from(d);
    let capped = exact.min(u128::from(u64::MAX)) as u64;
    // "Exact while (d - 1) * b and (a / d) * b fit in 64 bits".
    let in_domain = (d - 1).checked_mul(b).is_some() && (a / d).checked_mul(b).is_some();
    if in_domain {
        assert_eq!(got, capped, "mul_div({a}, {b}, {d})");
    }
    // Beyond it: no wrapping, so never more than the exact result.
    assert!(
        u128::from(got) <= exact,
        "mul_div({a}, {b}, {d}) = {got} > {exact}"
    );
}

// Several calls per input.
fuzz_target!(|data: &[u8]| {
    let mut i = Input::new(data);
    for _ in 0..64 {
        check(&mut i);
        if i.is_empty() {
            break;
        }
    }
});
