//! A small, seedable random number generator (SplitMix64) for bots' walks, nonces,
//! counterparties and hostile choices. Reproducible from `--seed` and the bot's index, and
//! with no shared state, so bots never contend on it; not for cryptography.

/// SplitMix64: 64 bits of state, one add and three mixes per number.
#[derive(Clone, Debug)]
pub struct Rng(u64);

impl Rng {
    /// A generator for `seed`.
    pub fn new(seed: u64) -> Rng {
        Rng(seed)
    }

    /// A generator for participant `index` of a run seeded with `seed` (streams of different
    /// indices are unrelated).
    pub fn for_index(seed: u64, index: u64) -> Rng {
        let mut r = Rng(seed ^ index.wrapping_mul(0xA24B_AED4_963E_E407));
        r.next_u64();
        r
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A uniform float in `[0, 1)`.
    pub fn unit_f64(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }

    /// A uniform float in `[lo, hi)`.
    pub fn range_f32(&mut self, lo: f32, hi: f32) -> f32 {
        let v = lo + (hi - lo) * self.unit_f64() as f32;
        // Rounding to f32 can land on `hi`; stay in the half-open range.
        if v >= hi { lo } else { v }
    }

    /// A uniform integer in `[0, n)` (0 when `n` is 0).
    pub fn below(&mut self, n: u64) -> u64 {
        if n == 0 {
            return 0;
        }
        ((u128::from(self.next_u64()) * u128::from(n)) >> 64) as u64
    }

    /// `true` with probability `p`.
    pub fn chance(&mut self, p: f64) -> bool {
        self.unit_f64() < p
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_hold_and_streams_differ() {
        let mut r = Rng::for_index(7, 1);
        for _ in 0..10_000 {
            let f = r.range_f32(10.0, 20.0);
            assert!((10.0..20.0).contains(&f));
            assert!(r.below(5) < 5);
            assert!((0.0..1.0).contains(&r.unit_f64()));
        }
        assert_eq!(r.below(0), 0);
        assert_ne!(Rng::for_index(7, 1).next_u64(), Rng::for_index(7, 2).next_u64());
        assert_eq!(Rng::for_index(7, 1).next_u64(), Rng::for_index(7, 1).next_u64());
    }
}
