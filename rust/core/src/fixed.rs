// SPDX-License-Identifier: GPL-2.0

//! Fixed-point helpers. Fractions are integers in parts per million.

/// 1.0 in parts per million.
pub const PPM: u64 = 1_000_000;

/// `a * b / d`, rounded down, computed without 128-bit division (which the kernel does not
/// provide) as `(a / d) * b + (a % d) * b / d`. Exact while `(d - 1) * b` and
/// `(a / d) * b` fit in 64 bits; beyond that the result is not specified (it neither panics
/// nor wraps to above the exact value; every caller stays in the exact domain). `d == 0` gives
/// `u64::MAX`.
pub fn mul_div(a: u64, b: u64, d: u64) -> u64 {
    if d == 0 {
        return u64::MAX;
    }
    (a / d)
        .saturating_mul(b)
        .saturating_add((a % d).saturating_mul(b) / d)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::Rng;

    #[test]
    fn matches_wide_arithmetic() {
        let mut rng = Rng::new(1);
        for _ in 0..100_000 {
            let d = rng.range(1, 10_000_000);
            let b = rng.range(0, 10_000_000_000);
            let a = rng.range(0, 1 << 62);
            let exact = u128::from(a) * u128::from(b) / u128::from(d);
            if exact <= u128::from(u64::MAX) {
                assert_eq!(u128::from(mul_div(a, b, d)), exact, "{a} * {b} / {d}");
            } else {
                assert_eq!(mul_div(a, b, d), u64::MAX);
            }
        }
        assert_eq!(mul_div(7, 3, 0), u64::MAX);
    }
}
