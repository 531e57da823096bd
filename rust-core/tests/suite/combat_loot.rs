//! Loot: a killed add drops what the server's table rolls, only its killer may claim it, from
//! within range, exactly once however many claims race, and every coin of it is booked as
//! minted by loot.

use crate::common::*;
use mmo_core::loot::LootTable;
use mmo_core::records::{AoiEntry, EconomyKind, EntityKind, TradeStack};
use mmo_core::{CoreConfig, Engine, LootError};
use std::sync::Barrier;

/// 100 damage, 6 m attack range, 4 m loot range, 1,000 starting gold.
/// A key of the test's own, so `LootTable::new` of the same config rolls what the engine rolls
/// (with none, each draws its own).
fn loot_config() -> CoreConfig {
    CoreConfig { loot_range_m: 4.0, starting_gold: 1_000, loot_key: *b"combat_loot test", ..small_config() }
}

/// An add with 100 hp at (x, y), and the player who killed it from `from`.
fn killed_add(e: &Engine, x: f32, y: f32, from: (f32, f32)) -> (u64, Who) {
    let add = one_object(e, x, y, 100, 9);
    let killer = join(e, from.0, from.1, 1);
    let r = e.attack(killer.id, killer.token, add, 1_000).unwrap();
    assert!(r.killed && r.loot_dropped, "{r:?}");
    (add, killer)
}

#[test]
fn the_killer_claims_the_servers_roll_once_and_it_is_booked_as_loot() {
    let config = loot_config();
    let e = Engine::new(config.clone()).unwrap();
    let (add, killer) = killed_add(&e, 300.0, 300.0, (295.0, 300.0)); // 5 m: in attack range only
    let expected = LootTable::new(&config).roll(add);
    // The corpse is shown as loot.
    e.tick(2);
    let mut aoi = [AoiEntry::default(); 8];
    let n = e.area_of_interest(killer.id, &mut aoi).unwrap();
    assert_eq!(aoi[..n].iter().find(|a| a.entity_id == add).map(|a| a.kind), Some(EntityKind::Loot as u8));
    // Out of loot range until the killer walks up to it.
    assert_eq!(e.claim_loot(killer.id, killer.token, add), Err(LootError::OutOfRange));
    let ev = apply(&e, &[mv(killer, 1, 0, 297.0, 300.0)], 1_100);
    assert_eq!(ev[0].kind, 1, "the step is within the speed budget");
    let got = e.claim_loot(killer.id, killer.token, add).unwrap();
    assert_eq!((got.contents, got.repeat, got.gold_after), (expected, false, 1_000 + expected.gold));
    let view = e.player(killer.id).unwrap();
    assert_eq!(view.gold, 1_000 + expected.gold);
    assert_eq!(view.items[expected.item_kind as usize], u64::from(expected.item_count));
    // A retransmitted claim is answered again and credits nothing.
    let again = e.claim_loot(killer.id, killer.token, add).unwrap();
    assert_eq!((again.contents, again.repeat, again.gold_after), (expected, true, 1_000 + expected.gold));
    assert_eq!(e.player(killer.id).unwrap().gold, 1_000 + expected.gold);
    let audit = e.economy_audit();
    assert!(audit.is_conserved());
    assert_eq!(audit.minted_by_loot.gold, u128::from(expected.gold));
    assert_eq!(audit.minted_by_loot.items.iter().sum::<u128>(), u128::from(expected.item_count));
    let s = e.stats();
    assert_eq!((s.loot_dropped, s.loot_claimed, s.loot_claim_repeats), (1, 1, 1));
    assert_eq!((s.loot_gold_claimed, s.loot_items_claimed), (expected.gold, u64::from(expected.item_count)));
    assert_eq!(s.loot_rejected_out_of_range, 1);
}

#[test]
fn every_refusal_is_reported_in_order_and_counted_by_reason() {
    let e = Engine::new(loot_config()).unwrap();
    let (add, killer) = killed_add(&e, 300.0, 300.0, (298.0, 300.0));
    let bystander = join(&e, 299.0, 300.0, 1);
    let alive = one_object(&e, 500.0, 500.0, 100, 9);
    let projectile = {
        let mut r = raid(700.0, 700.0, 1, 60_000);
        (r.half_extent_m, r.kind) = (0.0, EntityKind::Projectile as u8);
        e.raid_spawn(&r).unwrap();
        e.tick(3);
        let mut aoi = [AoiEntry::default(); 8];
        let seer = join(&e, 700.0, 700.0, 1);
        e.tick(4);
        let n = e.area_of_interest(seer.id, &mut aoi).unwrap();
        let id = aoi[..n].iter().find(|a| a.kind == EntityKind::Projectile as u8).unwrap().entity_id;
        // A killed projectile drops nothing: only adds carry loot.
        assert!(!e.attack(seer.id, seer.token, id, 1_000).unwrap().loot_dropped);
        id
    };
    assert_eq!(e.claim_loot(0, killer.token, add), Err(LootError::UnknownPlayer));
    assert_eq!(e.claim_loot(killer.id, killer.token ^ 1, add), Err(LootError::WrongSession));
    assert_eq!(e.claim_loot(killer.id, killer.token, bystander.id), Err(LootError::UnknownLoot));
    assert_eq!(e.claim_loot(killer.id, killer.token, add ^ 0x3000), Err(LootError::UnknownLoot));
    assert_eq!(e.claim_loot(killer.id, killer.token, alive), Err(LootError::NoLoot));
    assert_eq!(e.claim_loot(killer.id, killer.token, projectile), Err(LootError::NoLoot));
    assert_eq!(e.claim_loot(bystander.id, bystander.token, add), Err(LootError::NotYours));
    // Nothing any of them did moved a coin.
    assert_eq!(e.player(killer.id).unwrap().gold, 1_000);
    assert_eq!(e.economy_audit().minted_by_loot.gold, 0);
    let s = e.stats();
    assert_eq!(
        (
            s.loot_rejected_unknown_player,
            s.loot_rejected_wrong_session,
            s.loot_rejected_unknown_loot,
            s.loot_rejected_no_loot,
            s.loot_rejected_not_yours
        ),
        (1, 1, 2, 2, 1)
    );
    // The killer still gets it afterwards.
    assert!(!e.claim_loot(killer.id, killer.token, add).unwrap().repeat);
}

#[test]
fn a_wallet_that_cannot_hold_the_loot_leaves_it_on_the_ground() {
    let config = CoreConfig { starting_gold: 0, ..loot_config() };
    let e = Engine::new(config).unwrap();
    let (add, killer) = killed_add(&e, 300.0, 300.0, (298.0, 300.0));
    // Fill the killer's gold to u64::MAX: 65,535 grants of 2^48, then 2^48 - 1.
    let gold = |g| TradeStack { gold: g, item_count: 0, item_kind: 0, _reserved: 0 };
    let mut txn = 0;
    for _ in 0..65_535 {
        txn += 1;
        assert_eq!(e.grant(killer.id, txn, &gold(1 << 48)).status, 0);
    }
    e.grant(killer.id, txn + 1, &gold((1 << 48) - 1));
    assert_eq!(e.player(killer.id).unwrap().gold, u64::MAX);
    assert_eq!(e.claim_loot(killer.id, killer.token, add), Err(LootError::WalletFull));
    assert_eq!(e.stats().loot_rejected_wallet_full, 1);
    // Spending makes room, and the loot is still there to claim.
    run_op(&e, op(killer, 1, EconomyKind::Spend, 0, 1_000, 0, 0));
    let got = e.claim_loot(killer.id, killer.token, add).unwrap();
    assert!(!got.repeat);
    assert!(e.economy_audit().is_conserved());
}

#[test]
fn loot_expires_with_its_burst() {
    let e = Engine::new(loot_config()).unwrap();
    let mut r = raid(300.0, 300.0, 1, 100);
    (r.half_extent_m, r.hp) = (0.0, 100);
    e.raid_spawn(&r).unwrap();
    let killer = join(&e, 298.0, 300.0, 1);
    e.tick(1);
    let mut aoi = [AoiEntry::default(); 4];
    let n = e.area_of_interest(killer.id, &mut aoi).unwrap();
    let add = aoi[..n].iter().find(|a| a.kind == EntityKind::Add as u8).unwrap().entity_id;
    assert!(e.attack(killer.id, killer.token, add, 1_000).unwrap().loot_dropped);
    for t in 2..10 {
        e.tick(t * 50);
    }
    assert_eq!(e.live_raid_objects(), 0);
    assert_eq!(e.claim_loot(killer.id, killer.token, add), Err(LootError::UnknownLoot));
}

#[test]
fn racing_claims_credit_exactly_once() {
    let config = loot_config();
    for _ in 0..20 {
        let e = Engine::new(config.clone()).unwrap();
        let (add, killer) = killed_add(&e, 300.0, 300.0, (298.0, 300.0));
        let expected = LootTable::new(&config).roll(add);
        let barrier = Barrier::new(4);
        let credited: usize = std::thread::scope(|s| {
            let handles: Vec<_> = (0..4)
                .map(|_| {
                    s.spawn(|| {
                        barrier.wait();
                        let r = e.claim_loot(killer.id, killer.token, add).unwrap();
                        assert_eq!(r.contents, expected);
                        usize::from(!r.repeat)
                    })
                })
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).sum()
        });
        assert_eq!(credited, 1);
        assert_eq!(e.player(killer.id).unwrap().gold, 1_000 + expected.gold);
        assert_eq!(e.economy_audit().minted_by_loot.gold, u128::from(expected.gold));
    }
}

/// Four fighters kill a field of adds and claim what they killed, all at once: every kill
/// drops once, every drop is claimed once by its killer, and loot is the only value created.
#[test]
fn a_raid_fought_and_looted_by_racing_players_creates_only_the_loot() {
    let config = CoreConfig { attack_cooldown_ms: 0, attack_damage: 50, ..loot_config() };
    let e = Engine::new(config.clone()).unwrap();
    let table = LootTable::new(&config);
    let mut r = raid(300.0, 300.0, 400, 60_000);
    (r.half_extent_m, r.hp) = (3.0, 100);
    e.raid_spawn(&r).unwrap();
    let fighters: Vec<Who> = (0..4).map(|i| join(&e, 300.0 + i as f32 * 0.5, 300.0, 1)).collect();
    e.tick(1);
    let ids: Vec<u64> = {
        let mut aoi = [AoiEntry::default(); 64];
        let n = e.area_of_interest(fighters[0].id, &mut aoi).unwrap();
        aoi[..n].iter().filter(|a| a.kind == EntityKind::Add as u8).map(|a| a.entity_id).collect()
    };
    assert!(ids.len() >= 20);
    let barrier = Barrier::new(fighters.len());
    let (kills, claimed_gold): (u64, u64) = std::thread::scope(|s| {
        let handles: Vec<_> = fighters
            .iter()
            .map(|&f| {
                let (ids, barrier, e, table) = (&ids, &barrier, &e, &table);
                s.spawn(move || {
                    barrier.wait();
                    let (mut kills, mut gold) = (0u64, 0u64);
                    for round in 0..3u64 {
                        for &id in ids {
                            if let Ok(r) = e.attack(f.id, f.token, id, 1_000 + round) {
                                kills += u64::from(r.killed);
                            }
                            match e.claim_loot(f.id, f.token, id) {
                                Ok(l) if !l.repeat => {
                                    assert_eq!(l.contents, table.roll(id));
                                    gold += l.contents.gold;
                                }
                                Ok(_) | Err(LootError::NoLoot | LootError::NotYours) => {}
                                Err(other) => panic!("unexpected refusal {other:?}"),
                            }
                        }
                    }
                    (kills, gold)
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).fold((0, 0), |(k, g), (k2, g2)| (k + k2, g + g2))
    });
    assert_eq!(kills, ids.len() as u64, "every add in sight killed exactly once");
    let s = e.stats();
    assert_eq!((s.loot_dropped, s.loot_claimed), (kills, kills), "every drop claimed once, by its killer");
    let audit = e.economy_audit();
    assert!(audit.is_conserved());
    assert_eq!(audit.minted_by_loot.gold, u128::from(claimed_gold));
    assert_eq!(s.loot_gold_claimed, claimed_gold);
    assert_eq!(audit.minted.gold, u128::from(claimed_gold) + 1_000 * fighters.len() as u128, "starting gold and loot, nothing else");
}
