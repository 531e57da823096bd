//! Loot: what a killed raid add drops, decided by the server, and the one claim that takes it.
//!
//! ## The drop
//! The attack that kills an add (the one attack its health CAS reports `Killed` to) drops loot
//! on the corpse: it stores its owner in the object's `loot` word and relabels the object `Loot`
//! in its grid cell, so areas of interest and contacts show it. The owner is the killer's
//! wallet ([`crate::economy::WalletHandle::loot_owner`]), not its session: a killer of an
//! account who reconnects (or whose claim's answer was lost with its connection) claims its
//! drop from its new session; a session with no account owns its drops only while it lasts. The corpse keeps
//! its place in its pack and in the grid until its burst expires; that is the loot's expiry.
//!
//! What the loot holds is a pure function of the configured loot table, its secret key and the
//! dead object's id ([`LootTable::roll`]): SipHash-2-4 of the id under the key (a
//! pseudo-random function: without the key, the ids a client sees and the drops it was shown
//! say nothing about the next drop), then integer arithmetic on a SplitMix64 stream from that.
//! With the same key the C++ baseline rolls the same contents bit for bit; with none
//! configured each engine draws its own from the OS. Nothing a client sends (an amount, a
//! kind, a price) enters the roll.
//!
//! ## The claim
//! Only the owner may claim (a claim of another player's kill is refused `NotYours`), from
//! within `loot_range_m` of the corpse (the claimer's body position, as the server has it).
//! The claim takes the loot with one compare-and-swap of the `loot` word from `owner` to
//! `owner | LOOT_CLAIMED`, made under the claimer's wallet lock after the wallet's
//! room is checked ([`crate::economy::Economy::credit_loot`]): the CAS and the credit happen
//! together or not at all, so of any number of concurrent claims exactly one credits, and a
//! refused credit (a full wallet) leaves the loot on the ground. A claim of loot already
//! claimed by the same owner is answered again (`repeat`) with the same contents and
//! credits nothing, so a client may retransmit a claim whose answer it lost.
//!
//! Loot is booked as minted (and separately as minted by loot) in its home's totals,
//! so the conservation audit holds and shows how much value loot created.

use crate::combat::SplitMix64;
use crate::config::{CoreConfig, ITEM_KINDS};
use siphasher::sip::SipHasher24;

/// Set in a raid object's `loot` word once its loot was claimed (bit 62: no player id has it,
/// [`crate::arena`]).
pub const LOOT_CLAIMED: u64 = 1 << 62;

/// What one drop holds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LootContents {
    /// Gold.
    pub gold: u64,
    /// Item kind of the stack (0 when `item_count` is 0).
    pub item_kind: u16,
    /// Items in the stack; 0 when the drop holds only gold.
    pub item_count: u32,
}

/// The loot table, from [`CoreConfig`]'s `loot_*` fields.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LootTable {
    gold_min: u32,
    gold_max: u32,
    item_permille: u32,
    item_count_max: u32,
    /// The key the rolls are made under (never all zero: one was drawn if none was set).
    key: [u8; 16],
}

impl LootTable {
    /// The table a validated configuration describes; its key is `loot_key`, or one drawn from
    /// the OS's random source if that is all zero.
    pub fn new(config: &CoreConfig) -> Self {
        let mut key = config.loot_key;
        while key == [0; 16] {
            // getrandom only fails if the OS has no entropy source at all; a secret drawn
            // from nothing is no secret, so that is fatal (as for session tokens).
            getrandom::fill(&mut key).expect("the OS random source is unavailable");
        }
        Self {
            gold_min: config.loot_gold_min,
            gold_max: config.loot_gold_max,
            item_permille: config.loot_item_permille,
            item_count_max: config.loot_item_count_max.max(1),
            key,
        }
    }

    /// The contents of the loot dropped by raid object `object_id`. Three draws of
    /// SplitMix64 seeded with SipHash-2-4 of the id's 8 little-endian bytes under the table's
    /// key: gold uniform in
    /// `gold_min..=gold_max`; a stack of items with probability `item_permille / 1000`; its
    /// kind uniform in `0..ITEM_KINDS` and its count uniform in `1..=item_count_max`.
    pub fn roll(&self, object_id: u64) -> LootContents {
        let mut rng = SplitMix64(SipHasher24::new_with_key(&self.key).hash(&object_id.to_le_bytes()));
        let span = u64::from(self.gold_max - self.gold_min) + 1;
        let gold = u64::from(self.gold_min) + rng.next_u64() % span;
        let has_items = rng.next_u64() % 1_000 < u64::from(self.item_permille);
        let stack = rng.next_u64();
        if !has_items {
            return LootContents { gold, item_kind: 0, item_count: 0 };
        }
        let item_kind = (stack % ITEM_KINDS as u64) as u16;
        let item_count = 1 + ((stack >> 32) % u64::from(self.item_count_max)) as u32;
        LootContents { gold, item_kind, item_count }
    }
}

#[cfg(all(test, not(mmo_loom)))]
mod tests {
    use super::*;

    #[test]
    fn rolls_stay_inside_the_table_and_are_reproducible() {
        let config = CoreConfig::default();
        let table = LootTable::new(&config);
        let mut with_items = 0u32;
        for id in 0..10_000u64 {
            let object_id = (id + 1) | crate::arena::OBJECT_ID_TAG;
            let loot = table.roll(object_id);
            assert_eq!(loot, table.roll(object_id), "a roll depends on the object id only");
            assert!((u64::from(config.loot_gold_min)..=u64::from(config.loot_gold_max)).contains(&loot.gold));
            if loot.item_count > 0 {
                with_items += 1;
                assert!((loot.item_kind as usize) < ITEM_KINDS);
                assert!(loot.item_count <= config.loot_item_count_max);
            } else {
                assert_eq!(loot.item_kind, 0);
            }
        }
        // 25% of drops hold items by default: 2,500 expected, far more than 5 sigma inside.
        assert!((2_200..2_800).contains(&with_items), "{with_items} drops with items");
    }

    #[test]
    fn degenerate_tables_roll_their_only_outcome() {
        let config = CoreConfig { loot_gold_min: 7, loot_gold_max: 7, loot_item_permille: 0, ..CoreConfig::default() };
        let table = LootTable::new(&config);
        assert!((1..500u64).all(|id| table.roll(id) == LootContents { gold: 7, item_kind: 0, item_count: 0 }));
        let config = CoreConfig { loot_gold_min: 0, loot_gold_max: u32::MAX, loot_item_permille: 1_000, ..CoreConfig::default() };
        let table = LootTable::new(&config);
        assert!((1..500u64).all(|id| table.roll(id).item_count >= 1));
    }

    /// The key of the known vectors: bytes 0x00..=0x0F, as in SipHash's paper.
    const TEST_KEY: [u8; 16] = [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15];

    #[test]
    fn the_roll_is_keyed_by_siphash_2_4() {
        // The paper's vector for the 8-byte message 00..07 under the key 00..0F: the PRF the
        // baseline computes with highwayhash is the one specified, not a look-alike.
        let message: [u8; 8] = [0, 1, 2, 3, 4, 5, 6, 7];
        assert_eq!(SipHasher24::new_with_key(&TEST_KEY).hash(&message), 0x93f5_f579_9a93_2462);
    }

    #[test]
    fn a_known_roll_matches_the_baseline_vector() {
        // The same key and id are rolled by the baseline's test (baseline_test.cpp,
        // BaselineLoot.RollsTheSameContentsAsTheCore): the engines must agree bit for bit.
        let table = LootTable::new(&CoreConfig { loot_key: TEST_KEY, ..CoreConfig::default() });
        let loot = table.roll(0x8000_0000_0000_002A);
        assert_eq!(loot, LOOT_VECTOR);
    }

    #[test]
    fn without_a_key_each_table_draws_its_own() {
        // Two engines started with no key roll differently: 1,000 drops of 46 possible gold
        // amounts agreeing by chance is out of the question.
        let (a, b) = (LootTable::new(&CoreConfig::default()), LootTable::new(&CoreConfig::default()));
        assert_ne!(a.key, [0; 16]);
        let ids = (1..=1_000u64).map(|id| id | crate::arena::OBJECT_ID_TAG);
        assert!(ids.clone().map(|id| a.roll(id)).ne(ids.map(|id| b.roll(id))));
        // Nor does a key differing in one bit roll like its neighbour.
        let mut flipped = TEST_KEY;
        flipped[15] ^= 0x80;
        let (c, d) = (
            LootTable::new(&CoreConfig { loot_key: TEST_KEY, ..CoreConfig::default() }),
            LootTable::new(&CoreConfig { loot_key: flipped, ..CoreConfig::default() }),
        );
        let ids = (1..=1_000u64).map(|id| id | crate::arena::OBJECT_ID_TAG);
        assert!(ids.clone().map(|id| c.roll(id)).ne(ids.map(|id| d.roll(id))));
    }

    /// The roll of object id 0x800000000000002A under [`TEST_KEY`] with the default table.
    const LOOT_VECTOR: LootContents = LootContents { gold: 7, item_kind: 7, item_count: 3 };
}
