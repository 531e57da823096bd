//! The sharded-slab configuration every arena uses, and how arena keys become entity ids.
//!
//! sharded-slab packs (generation, thread shard, page address) into one `usize` key. The
//! default configuration spends its bits on 4,096 possible threads and leaves few for the
//! generation, so a slot reused a few thousand times (a raid arena reuses slots every burst)
//! could hand a stale id to the new occupant. [`ArenaConfig`] allows 4,096 threads (13 bits,
//! as many as sharded-slab's default: a thread beyond the limit would panic on insert) and
//! 2^26 slots per thread (27 address bits), reserves the top 2 bits of every key so the id
//! encodings below can never overflow or collide, and leaves 22 bits of generation: a slot
//! must be reused 4 million times before an old id could match again.

use sharded_slab::Config;

/// The arena configuration: 4,096 threads, 64-slot first pages, 2 reserved high bits.
#[derive(Clone, Copy, Debug)]
pub struct ArenaConfig;

impl Config for ArenaConfig {
    /// Far more threads than any server here runs (workers + tick + admin); a thread's shard
    /// is reused once it exits.
    const MAX_THREADS: usize = 4_096;
    /// 20 pages doubling from 64 slots: about 67M slots per thread shard.
    const MAX_PAGES: usize = 20;
    /// A first page of 64 slots: small arenas stay small, and each later page doubles.
    const INITIAL_PAGE_SIZE: usize = 64;
    /// Bits 62 and 63 of every key are always zero (see [`player_id_from_key`]).
    const RESERVED_BITS: usize = 2;
}

/// The raid object arena's configuration: like [`ArenaConfig`], but with a first page of
/// 4,096 slots.
///
/// sharded-slab's insert walks a thread's pages from the first, and every full page it passes
/// costs an atomic swap on that page's remote free list. With 64-slot first pages an
/// 11,000-object burst walks past up to eight full pages per insert, which profiled as the
/// largest cost of a raid spawn; with a 4,096-slot first page the first two pages (4,096 +
/// 8,192 = 12,288 slots) hold a whole burst of the size the product is built for, which walks
/// past one full page at most, and bursts alive together spill into the third (16,384 slots).
/// A page is allocated when a thread first reaches it and touched whole (sharded-slab builds
/// every slot), so the first pages' sizes are what a burst leaves resident: 12,288 48-byte
/// slots (0.6 MB), where a 16,384-slot first page left 0.8 MB (after a 1,000-bot raid of
/// 11,000-object bursts the server's anonymous resident memory was 13,204 and 13,264 KiB in two
/// runs, against 13,500 with the 16,384-slot page). 13 pages keep the 26 address bits (4,096 x
/// 8,191, about 2^25 slots per thread, more than `raid_object_capacity`'s limit of 2^24 in one
/// burst's thread) and 23 generation bits.
#[derive(Clone, Copy, Debug)]
pub struct RaidArenaConfig;

impl Config for RaidArenaConfig {
    const MAX_THREADS: usize = 4_096;
    const MAX_PAGES: usize = 13;
    const INITIAL_PAGE_SIZE: usize = 4_096;
    const RESERVED_BITS: usize = 2;
}

// What the doc above says of the layout: sharded-slab needs a power-of-two first page, and one
// thread's pages hold the largest `raid_object_capacity` the configuration accepts (2^24), so a
// burst spawned on one thread never runs out of address space before the capacity gate refuses it.
const _: () = assert!(RaidArenaConfig::INITIAL_PAGE_SIZE.is_power_of_two());
const _: () = assert!(RaidArenaConfig::INITIAL_PAGE_SIZE * ((1 << RaidArenaConfig::MAX_PAGES) - 1) >= 1 << 24);

/// Bit 63 marks a raid object id; player ids never have it.
pub const OBJECT_ID_TAG: u64 = 1 << 63;

/// A player id is its arena key plus one, so 0 is never a valid id.
#[inline]
pub fn player_id_from_key(key: usize) -> u64 {
    debug_assert!((key as u64) < (1 << 62));
    key as u64 + 1
}

/// The arena key of a player id; `None` for 0 and for object ids.
#[inline]
pub fn key_from_player_id(id: u64) -> Option<usize> {
    if id == 0 || id & OBJECT_ID_TAG != 0 || id > (1 << 62) {
        return None;
    }
    Some((id - 1) as usize)
}

/// A raid object id is its arena key plus one, tagged with [`OBJECT_ID_TAG`].
#[inline]
pub fn object_id_from_key(key: usize) -> u64 {
    debug_assert!((key as u64) < (1 << 62));
    (key as u64 + 1) | OBJECT_ID_TAG
}

/// The arena key of a raid object id; `None` for anything that is not one.
#[inline]
pub fn key_from_object_id(id: u64) -> Option<usize> {
    if id & OBJECT_ID_TAG == 0 {
        return None;
    }
    let raw = id & !OBJECT_ID_TAG;
    if raw == 0 || raw > (1 << 62) {
        return None;
    }
    Some((raw - 1) as usize)
}

#[cfg(all(test, not(mmo_loom)))]
mod tests {
    use super::*;

    #[test]
    fn ids_round_trip_and_never_collide() {
        for key in [0usize, 1, 77, (1 << 62) - 1] {
            let p = player_id_from_key(key);
            let o = object_id_from_key(key);
            assert_ne!(p, 0);
            assert_ne!(p, o);
            assert_eq!(key_from_player_id(p), Some(key));
            assert_eq!(key_from_object_id(o), Some(key));
            assert_eq!(key_from_player_id(o), None);
            assert_eq!(key_from_object_id(p), None);
        }
        assert_eq!(key_from_player_id(0), None);
        assert_eq!(key_from_object_id(OBJECT_ID_TAG), None);
        assert_eq!(key_from_player_id(u64::MAX >> 1), None);
    }

    #[test]
    fn stale_keys_miss_after_reuse() {
        let slab = sharded_slab::Slab::<u32>::new_with_config::<ArenaConfig>();
        let first = slab.insert(1).unwrap();
        assert!(slab.remove(first));
        let second = slab.insert(2).unwrap();
        assert_ne!(first, second, "a reused slot gets a new generation");
        assert!(slab.get(first).is_none());
        assert_eq!(*slab.get(second).unwrap(), 2);
        // Well past the default config's generation period.
        let mut key = second;
        for i in 0..20_000u32 {
            assert!(slab.remove(key));
            key = slab.insert(i).unwrap();
            assert!(slab.get(first).is_none() && slab.get(second).is_none());
        }
    }
}
