//! Sorting an area-of-interest query's candidates: up to [`NETWORK_KEYS`] plain `u64` keys
//! (squared-distance bits, then entity index) put in ascending order, once per query.
//!
//! Why not only `sort_unstable`: in a server's raid the one sort of a query's first 32
//! candidates was 8-9% of the Rust engine's perf samples (`quicksort` and `ipnsort` under
//! `WorldSnapshot::nearest_within`, `docs/results/compare-pgo/`), about twice what a
//! micro-bench of the same sort takes: the keys come in the scan's order, so the sort's
//! branches are as good as random, and in the server they start each query with the branch
//! predictor trained on the kernel's work. A sorting network has no data-dependent branch at
//! all. With AVX2 (every mainstream x86-64 server CPU since 2013; detected at run time, cached by the
//! standard library) the 32 keys are eight 4-lane registers: the columns sorted by the optimal
//! 19-exchange network on 8, a 4 x 4 transpose turns them into four sorted runs of 8, and two
//! rounds of bitonic merges make one run of 32. A compare-exchange of four pairs is one 64-bit
//! compare and two blends; the whole sort is about 270 instructions and no data-dependent
//! branch. Without
//! AVX2, or for more than 32 keys, the standard library's sort.
//!
//! AVX2 compares 64-bit lanes as signed integers: each key's top bit is flipped on the way in
//! and out, so the order is the unsigned one whatever the keys hold (tests pin it against
//! `sort_unstable` with the top bit set, `u64::MAX` and runs of equal keys).

/// The most keys the network sorts: eight registers of four.
pub const NETWORK_KEYS: usize = 32;

/// Sorts `keys` ascending (as `u64`s; equal keys are indistinguishable, so stability does not
/// arise). Up to [`NETWORK_KEYS`] keys on a CPU with AVX2 take the sorting network (fewer are
/// padded with `u64::MAX`, which sorts last); anything else takes `sort_unstable`.
#[inline]
pub fn sort_keys(keys: &mut [u64]) {
    if keys.len() < 2 {
        return;
    }
    #[cfg(target_arch = "x86_64")]
    if keys.len() <= NETWORK_KEYS && std::arch::is_x86_feature_detected!("avx2") {
        match <&mut [u64; NETWORK_KEYS]>::try_from(&mut *keys) {
            // SAFETY: AVX2 was detected on this CPU just above.
            Ok(all) => unsafe { avx2::sort32(all) },
            Err(_) => {
                let mut padded = [u64::MAX; NETWORK_KEYS];
                padded[..keys.len()].copy_from_slice(keys);
                // SAFETY: as above.
                unsafe { avx2::sort32(&mut padded) };
                keys.copy_from_slice(&padded[..keys.len()]);
            }
        }
        return;
    }
    keys.sort_unstable();
}

#[cfg(target_arch = "x86_64")]
mod avx2 {
    use std::arch::x86_64::{
        __m256i, _mm256_blend_epi32, _mm256_blendv_epi8, _mm256_cmpgt_epi64, _mm256_loadu_si256, _mm256_permute2x128_si256,
        _mm256_permute4x64_epi64, _mm256_set1_epi64x, _mm256_setzero_si256, _mm256_shuffle_epi32, _mm256_storeu_si256,
        _mm256_unpackhi_epi64, _mm256_unpacklo_epi64, _mm256_xor_si256,
    };

    /// Lane-wise (min, max) of two registers of signed 64-bit keys.
    #[target_feature(enable = "avx2")]
    #[inline]
    fn exchange(a: __m256i, b: __m256i) -> (__m256i, __m256i) {
        let a_greater = _mm256_cmpgt_epi64(a, b);
        (_mm256_blendv_epi8(a, b, a_greater), _mm256_blendv_epi8(b, a, a_greater))
    }

    /// Lanes 3, 2, 1, 0 of `v`.
    #[target_feature(enable = "avx2")]
    #[inline]
    fn reversed(v: __m256i) -> __m256i {
        _mm256_permute4x64_epi64(v, 0b00_01_10_11)
    }

    /// One register's last two stages of a bitonic merge: lanes 2 apart, then 1 apart, the
    /// smaller to the lower lane.
    #[target_feature(enable = "avx2")]
    #[inline]
    fn merge_in_register(v: __m256i) -> __m256i {
        let (low, high) = exchange(v, _mm256_permute4x64_epi64(v, 0b01_00_11_10));
        let v = _mm256_blend_epi32(low, high, 0b1111_0000);
        let (low, high) = exchange(v, _mm256_shuffle_epi32(v, 0b01_00_11_10));
        _mm256_blend_epi32(low, high, 0b1100_1100)
    }

    /// Sorts `v` ascending, lane 0 of `v[0]` first, given that it is bitonic: ascending, then
    /// descending. Half-cleaners at register distances N/2 .. 1, then the two in-register stages.
    #[target_feature(enable = "avx2")]
    #[inline]
    fn bitonic_merge<const N: usize>(v: &mut [__m256i; N]) {
        let mut distance = N / 2;
        while distance >= 1 {
            for block in (0..N).step_by(2 * distance) {
                for i in block..block + distance {
                    (v[i], v[i + distance]) = exchange(v[i], v[i + distance]);
                }
            }
            distance /= 2;
        }
        for r in v.iter_mut() {
            *r = merge_in_register(*r);
        }
    }

    /// Rows `a`..`d` (4 lanes each) as columns: lane `i` of the result's register `j` is lane
    /// `j` of row `i`.
    #[target_feature(enable = "avx2")]
    #[inline]
    fn transpose(a: __m256i, b: __m256i, c: __m256i, d: __m256i) -> [__m256i; 4] {
        let (ab_even, ab_odd) = (_mm256_unpacklo_epi64(a, b), _mm256_unpackhi_epi64(a, b));
        let (cd_even, cd_odd) = (_mm256_unpacklo_epi64(c, d), _mm256_unpackhi_epi64(c, d));
        [
            _mm256_permute2x128_si256(ab_even, cd_even, 0x20),
            _mm256_permute2x128_si256(ab_odd, cd_odd, 0x20),
            _mm256_permute2x128_si256(ab_even, cd_even, 0x31),
            _mm256_permute2x128_si256(ab_odd, cd_odd, 0x31),
        ]
    }

    /// Sorts 32 keys ascending as unsigned integers.
    ///
    /// # Safety
    /// The CPU must have AVX2.
    #[target_feature(enable = "avx2")]
    #[rustfmt::skip::macros(columns)]
    pub unsafe fn sort32(keys: &mut [u64; 32]) {
        // Signed compares give the unsigned order with every key's top bit flipped.
        let flip = _mm256_set1_epi64x(i64::MIN);
        let at = keys.as_mut_ptr().cast::<__m256i>();
        let mut rows = [_mm256_setzero_si256(); 8];
        for (i, row) in rows.iter_mut().enumerate() {
            // SAFETY: register `i` reads keys 4i..4i+4 of the 32 (an unaligned load).
            *row = _mm256_xor_si256(unsafe { _mm256_loadu_si256(at.add(i)) }, flip);
        }
        // The columns: the optimal (19 exchanges, depth 6) sorting network on 8 inputs (Knuth,
        // TAOCP vol. 3, 5.3.4), applied to the 8 registers lane by lane, so it sorts each of the
        // 4 columns. Written out, not looped over a table: with constant indices the rows stay
        // in registers (a loop over a table of pairs went through the stack, a store and a
        // reload per exchange, with bounds checks).
        macro_rules! columns {
            ($(($a:literal, $b:literal)),* $(,)?) => {
                $( (rows[$a], rows[$b]) = exchange(rows[$a], rows[$b]); )*
            };
        }
        columns!(
            (0, 2), (1, 3), (4, 6), (5, 7),
            (0, 4), (1, 5), (2, 6), (3, 7),
            (0, 1), (2, 3), (4, 5), (6, 7),
            (2, 4), (3, 5),
            (1, 4), (3, 6),
            (1, 2), (3, 4), (5, 6),
        );
        // Column c (lane c of rows 0..8) is sorted: run c is then registers (top[c], bottom[c]).
        let top = transpose(rows[0], rows[1], rows[2], rows[3]);
        let bottom = transpose(rows[4], rows[5], rows[6], rows[7]);
        // Runs 0 and 1, and runs 2 and 3, into runs of 16: the second of each pair reversed
        // makes the pair bitonic.
        let mut first = [top[0], bottom[0], reversed(bottom[1]), reversed(top[1])];
        let mut second = [top[2], bottom[2], reversed(bottom[3]), reversed(top[3])];
        bitonic_merge(&mut first);
        bitonic_merge(&mut second);
        let mut all =
            [first[0], first[1], first[2], first[3], reversed(second[3]), reversed(second[2]), reversed(second[1]), reversed(second[0])];
        bitonic_merge(&mut all);
        for (i, row) in all.iter().enumerate() {
            // SAFETY: register `i` writes keys 4i..4i+4 of the 32 (an unaligned store).
            unsafe { _mm256_storeu_si256(at.add(i), _mm256_xor_si256(*row, flip)) };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn sorted(keys: &[u64]) -> Vec<u64> {
        let mut v = keys.to_vec();
        v.sort_unstable();
        v
    }

    fn check(keys: &[u64]) {
        let mut v = keys.to_vec();
        sort_keys(&mut v);
        assert_eq!(v, sorted(keys), "input {keys:x?}");
    }

    #[test]
    fn edge_keys_sort_as_unsigned() {
        let edges = [0, 1, u64::MAX, u64::MAX - 1, 1 << 63, (1 << 63) - 1, (1 << 63) + 1, 1 << 32, (1 << 32) - 1];
        for len in 0..=NETWORK_KEYS + 3 {
            let keys: Vec<u64> = (0..len).map(|i| edges[(i * 7 + len) % edges.len()]).collect();
            check(&keys);
            let mut backwards = keys.clone();
            backwards.reverse();
            check(&backwards);
        }
    }

    #[test]
    #[cfg(target_arch = "x86_64")]
    fn the_network_itself_sorts_where_the_cpu_has_avx2() {
        // `sort_keys` falls back to `sort_unstable` without AVX2, where every other test here
        // would pass without touching the network: this one calls it directly, and says when
        // it cannot.
        if !std::arch::is_x86_feature_detected!("avx2") {
            eprintln!("candidate_sort: this CPU has no AVX2; the network is not tested here");
            return;
        }
        let mut state = 0x9E37_79B9_7F4A_7C15u64;
        for _ in 0..10_000 {
            let mut keys: [u64; NETWORK_KEYS] = std::array::from_fn(|_| {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                state
            });
            let mut expected = keys;
            expected.sort_unstable();
            // SAFETY: AVX2 was detected above.
            unsafe { avx2::sort32(&mut keys) };
            assert_eq!(keys, expected);
        }
    }

    #[test]
    fn descending_rotated_and_threshold_inputs_are_sorted() {
        // Descending and rotated runs of distinct keys, and every descending 0-1 threshold
        // pattern, for every length up to the network's.
        for len in 1..=NETWORK_KEYS {
            let descending: Vec<u64> = (0..len as u64).rev().collect();
            check(&descending);
            for r in 0..len {
                let mut rotated: Vec<u64> = (0..len as u64).collect();
                rotated.rotate_left(r);
                check(&rotated);
            }
            for split in 0..=len {
                let zero_one: Vec<u64> = (0..len).map(|i| u64::from(i >= split)).rev().collect();
                check(&zero_one);
            }
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2_000))]

        #[test]
        fn sorts_as_sort_unstable(keys in proptest::collection::vec(any::<u64>(), 0..=NETWORK_KEYS + 8)) {
            check(&keys);
        }

        #[test]
        fn sorts_zero_one_inputs(keys in proptest::collection::vec(0..=1u64, 0..=NETWORK_KEYS)) {
            // The 0-1 principle: a comparator network that sorts every sequence of 0s and 1s
            // sorts every sequence. All 2^32 are too many for a test; these are a sample.
            check(&keys);
        }

        #[test]
        fn sorts_candidate_keys_with_ties(
            distances in proptest::collection::vec(0u32..6, NETWORK_KEYS),
            len in 0..=NETWORK_KEYS,
        ) {
            // What a query sorts: squared-distance bits over entity indices, few distinct
            // distances, so many equal high halves.
            let keys: Vec<u64> = distances[..len]
                .iter()
                .enumerate()
                .map(|(i, &d)| (u64::from((d as f32 * 0.25).to_bits()) << 32) | (i as u64 * 7919 % 12_000))
                .collect();
            check(&keys);
        }
    }
}
