//! The sharded-slab configurations the arenas use, and how arena keys become entity ids.
//!
//! sharded-slab packs (generation, thread shard, page address) into one `usize` key. The
//! default configuration spends its bits on 4,096 possible threads and leaves few for the
//! generation, so a slot reused a few thousand times (a raid arena reuses slots every burst)
//! could hand a stale id to the new occupant. [`ArenaConfig`] (players, combatants, wallets)
//! allows 4,096 threads (13 bits, as many as sharded-slab's default: a thread beyond the limit
//! would panic on insert) and 2^26 slots per thread (27 address bits), reserves the top 2 bits
//! of every key so a player id can never overflow or collide with an object id, and leaves 22
//! bits of generation: a slot must be reused 4 million times before an old id could match
//! again. [`RaidArenaConfig`] (raid objects, a slot per pack of 64) reserves 8 bits, 6 of them
//! for an object's index in its pack.

use crate::config::RAID_BURST_CAPACITY_MAX;
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

/// The raid arena's configuration: one slot per [`RAID_PACK_OBJECTS`] raid objects (a *pack*,
/// [`crate::combat::RaidPack`]), a first page of 256 packs.
///
/// A raid spawn inserts one pack per 64 objects, not one slot per object. sharded-slab's insert
/// pays, per call, a compare-and-swap on the slot's lifecycle, a walk of the thread's pages from
/// the first (an atomic swap on each full page's remote free list it passes) and a pop of a free
/// list last written when the previous burst expired, on a cold line: with a slot per object
/// that was 80% of an 11,000-object spawn (`perf record -e cpu-clock` of the raid bench, 318 µs).
/// With packs those costs are paid 172 times per burst instead of 11,000, and the objects are
/// written one after another into the pack.
///
/// 256 packs (16,384 objects, 1,560-byte slots: 0.4 MB) hold a burst of the size the product is
/// built for on the first page; bursts alive together spill into the second (512 packs). A page
/// is allocated when a thread first reaches it and touched whole (sharded-slab builds every
/// slot), so the first page is what a burst leaves resident: 0.4 MB, where the per-object arena's
/// first two pages (4,096 and 8,192 48-byte slots) left 0.6 MB. 11 pages hold 256 x 2,047 packs
/// per thread, more than `raid_object_capacity`'s limit of 2^24 objects needs in one burst's
/// thread (2^18 full packs, and one partly empty pack per live burst: `RAID_BURST_CAPACITY_MAX`, 65,536); 8 reserved bits leave room for the object's index in its id
/// ([`object_id_from_pack`]) and 23 generation bits: a pack slot must be reused 8 million times
/// before an old id could match again.
#[derive(Clone, Copy, Debug)]
pub struct RaidArenaConfig;

impl Config for RaidArenaConfig {
    const MAX_THREADS: usize = 4_096;
    const MAX_PAGES: usize = 11;
    const INITIAL_PAGE_SIZE: usize = 256;
    const RESERVED_BITS: usize = 8;
}

/// Raid objects per pack: a burst's objects are created in runs of this many, in spawn order,
/// one arena slot per run. An object's id is its pack's key and its index in the pack.
pub const RAID_PACK_OBJECTS: usize = 64;

/// Bits of an object id that hold its index in its pack.
const PACK_INDEX_BITS: u32 = RAID_PACK_OBJECTS.trailing_zeros();

// What the doc above says of the layout: sharded-slab needs a power-of-two first page, one
// thread's pages hold the packs of the largest `raid_object_capacity` the configuration accepts
// (2^24 objects, in full packs and one partly empty pack per live burst), so a burst spawned on
// one thread never runs out of address space before the capacity gate refuses it, and the
// reserved bits leave room for an object's index in its id.
const _: () = assert!(RaidArenaConfig::INITIAL_PAGE_SIZE.is_power_of_two());
const _: () = assert!(RAID_PACK_OBJECTS.is_power_of_two() && RAID_PACK_OBJECTS <= 256);
const _: () = assert!(
    RaidArenaConfig::INITIAL_PAGE_SIZE * ((1 << RaidArenaConfig::MAX_PAGES) - 1)
        >= (1 << 24) / RAID_PACK_OBJECTS + RAID_BURST_CAPACITY_MAX as usize
);
const _: () = assert!(RaidArenaConfig::RESERVED_BITS >= 2 + PACK_INDEX_BITS as usize);

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

/// A raid object id: its pack's arena key and its index in the pack, plus one, tagged with
/// [`OBJECT_ID_TAG`].
#[inline]
pub fn object_id_from_pack(key: usize, index: usize) -> u64 {
    debug_assert!((key as u64) < (1 << (62 - PACK_INDEX_BITS)) && index < RAID_PACK_OBJECTS);
    (((key as u64) << PACK_INDEX_BITS | index as u64) + 1) | OBJECT_ID_TAG
}

/// The pack's arena key and the object's index in it, of a raid object id; `None` for anything
/// that is not one.
#[inline]
pub fn pack_of_object_id(id: u64) -> Option<(usize, usize)> {
    if id & OBJECT_ID_TAG == 0 {
        return None;
    }
    let raw = id & !OBJECT_ID_TAG;
    if raw == 0 || raw > (1 << 62) {
        return None;
    }
    let raw = raw - 1;
    Some(((raw >> PACK_INDEX_BITS) as usize, (raw & (RAID_PACK_OBJECTS as u64 - 1)) as usize))
}

#[cfg(all(test, not(mmo_loom)))]
mod tests {
    use super::*;

    #[test]
    fn ids_round_trip_and_never_collide() {
        for key in [0usize, 1, 77, (1 << 62) - 1] {
            let p = player_id_from_key(key);
            assert_ne!(p, 0);
            assert_eq!(key_from_player_id(p), Some(key));
            assert_eq!(pack_of_object_id(p), None);
        }
        for key in [0usize, 1, 77, (1 << (62 - PACK_INDEX_BITS)) - 1] {
            for index in [0, 1, RAID_PACK_OBJECTS - 1] {
                let o = object_id_from_pack(key, index);
                assert_ne!(o & !OBJECT_ID_TAG, 0);
                assert_eq!(pack_of_object_id(o), Some((key, index)));
                assert_eq!(key_from_player_id(o), None);
            }
        }
        assert_eq!(key_from_player_id(0), None);
        assert_eq!(pack_of_object_id(OBJECT_ID_TAG), None);
        assert_eq!(pack_of_object_id(u64::MAX), None);
        assert_eq!(key_from_player_id(u64::MAX >> 1), None);
    }

    #[test]
    fn real_pack_keys_round_trip_through_object_ids() {
        // Keys the arena hands out (generation 0: the reserved bits' room for the index is
        // guarded by the const assertions above, not by this).
        let slab = sharded_slab::Slab::<u64>::new_with_config::<RaidArenaConfig>();
        let mut keys = Vec::new();
        for i in 0..2_000u64 {
            keys.push(slab.insert(i).unwrap());
        }
        for &key in &keys {
            assert!((key as u64) < 1 << (62 - PACK_INDEX_BITS), "key {key:#x} overlaps the index bits");
            let id = object_id_from_pack(key, RAID_PACK_OBJECTS - 1);
            assert_eq!(pack_of_object_id(id), Some((key, RAID_PACK_OBJECTS - 1)));
        }
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
