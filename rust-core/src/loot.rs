//! Loot: what a killed raid add drops, decided by the server, and the one claim that takes it.
//!
//! ## The drop
//! The attack that kills an add (the one attack its health CAS reports `Killed` to) drops loot
//! on the corpse: it stores its owner in the object's `loot` word and relabels the object `Loot`
//! in its grid cell, so areas of interest and contacts show it. The owner is the killer's
//! wallet ([`crate::economy::WalletHandle::loot_owner`]), not its session: a killer of an
//! account who reconnects (or whose claim's answer was lost with its connection) claims its
//! drop from its new session; a session with no account owns its drops only while it lasts. The corpse keeps
//! its arena slot and its place in the grid until its burst expires; that is the loot's expiry.
//!
//! What the loot holds is a pure function of the configured loot table, its seed and the dead
//! object's id ([`LootTable::roll`]): integer arithmetic on a SplitMix64 stream, so tests can
//! predict it and the C++ baseline rolls the same contents bit for bit. Nothing a client sends
//! (an amount, a kind, a price) enters the roll.
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
    seed: u32,
}

impl LootTable {
    /// The table a validated configuration describes.
    pub fn new(config: &CoreConfig) -> Self {
        Self {
            gold_min: config.loot_gold_min,
            gold_max: config.loot_gold_max,
            item_permille: config.loot_item_permille,
            item_count_max: config.loot_item_count_max.max(1),
            seed: config.loot_seed,
        }
    }

    /// The contents of the loot dropped by raid object `object_id`. Three draws of
    /// SplitMix64 seeded with `(seed << 32) ^ object_id`: gold uniform in
    /// `gold_min..=gold_max`; a stack of items with probability `item_permille / 1000`; its
    /// kind uniform in `0..ITEM_KINDS` and its count uniform in `1..=item_count_max`.
    pub fn roll(&self, object_id: u64) -> LootContents {
        let mut rng = SplitMix64((u64::from(self.seed) << 32) ^ object_id);
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

    #[test]
    fn a_known_roll_matches_the_baseline_vector() {
        // The same seed and id are rolled by the baseline's test (baseline_test.cpp,
        // BaselineLoot.RollsTheSameContentsAsTheCore): the engines must agree bit for bit.
        let table = LootTable::new(&CoreConfig::default());
        let loot = table.roll(0x8000_0000_0000_002A);
        assert_eq!(loot, LOOT_VECTOR);
    }

    /// The default table's roll of object id 0x800000000000002A.
    const LOOT_VECTOR: LootContents = LootContents { gold: 10, item_kind: 2, item_count: 3 };
}
