// SPDX-License-Identifier: GPL-2.0

//! TCP sequence numbers, compared modulo 2^32 as the kernel's `before()` and `after()`
//! (`include/net/tcp.h`): `a` is before `b` when `b` is less than 2^31 ahead of it. Two
//! numbers exactly 2^31 apart are each before the other, as in the kernel.

/// `a` is before `b` in sequence space (the kernel's `before()`).
pub fn before(a: u32, b: u32) -> bool {
    (a.wrapping_sub(b) as i32) < 0
}

/// `a` is after `b` in sequence space (the kernel's `after()`).
pub fn after(a: u32, b: u32) -> bool {
    before(b, a)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::Rng;

    #[test]
    fn wraps_around_zero() {
        assert!(before(u32::MAX, 0) && after(0, u32::MAX));
        assert!(before(u32::MAX - 10, 5) && after(5, u32::MAX - 10));
        assert!(!before(7, 7) && !after(7, 7));
        // Half the space apart: each is before the other, as in the kernel.
        assert!(before(0, 1 << 31) && before(1 << 31, 0));
        assert!(after(0, 1 << 31) && after(1 << 31, 0));
    }

    #[test]
    fn less_than_half_the_space_ahead_is_after() {
        let mut rng = Rng::new(27);
        for _ in 0..100_000 {
            let a = rng.next_u64() as u32;
            let d = rng.range(1, (1 << 31) - 1) as u32;
            let b = a.wrapping_add(d);
            assert!(before(a, b) && after(b, a), "{a} {b}");
            assert!(!before(b, a) && !after(a, b), "{a} {b}");
        }
    }
}
