//! Combat through the engine: raid bursts (whole or nothing, placement, expiry, slot reuse)
//! and damage outcomes and refusals.

use crate::common::*;
use mmo_core::combat::{DamageOutcome, RaidError};
use mmo_core::records::{EntityKind, EventKind};
use mmo_core::{DamageError, Engine};

#[test]
fn raid_burst_spawns_everything_inside_the_square_and_expires_on_time() {
    let e = engine();
    let p = join(&e, 500.0, 500.0, 1);
    e.tick(0);
    let report = e.raid_spawn(&raid(500.0, 500.0, 11_000, 120)).unwrap();
    assert_eq!(report.spawned, 11_000);
    assert_eq!(report.expires_tick, 1 + 3 + 1, "120 ms at 50 ms ticks rounds up to 3 whole ticks after the current one");
    assert_eq!(e.live_raid_objects(), 11_000);
    assert_eq!(e.grid().census().objects, 11_000);
    assert_eq!(e.grid().misplaced(), 0, "every object is in the cell its position maps to");
    // The next tick's snapshot holds them; every object is where the square says.
    let info = e.tick(50);
    assert_eq!((info.objects_expired, info.snapshot_entities), (0, 11_001), "alive for at least 120 ms, and in the snapshot");
    let mut aoi = vec![mmo_core::records::AoiEntry::default(); 64];
    let n = e.area_of_interest(p.id, &mut aoi).unwrap();
    assert_eq!(n, e.config().aoi_k as usize);
    for entry in &aoi[..n] {
        assert_eq!(entry.kind, EntityKind::Add as u8);
        assert!((460.0..=540.0).contains(&entry.x_m) && (460.0..=540.0).contains(&entry.y_m));
        assert_eq!(e.raid_object_hp(entry.entity_id), Some(50));
    }
    for now_ms in [100, 150] {
        assert_eq!(e.tick(now_ms).objects_expired, 0, "alive for at least 120 ms");
    }
    let info = e.tick(200);
    assert_eq!((info.tick, info.objects_expired, info.objects_live, info.bursts_live), (5, 11_000, 0, 0));
    assert_eq!(e.grid().census(), mmo_core::grid::GridCensus { players: 1, objects: 0 });
    assert_eq!(e.raid_object_hp(aoi[0].entity_id), None, "expired ids miss");
    let s = e.stats();
    assert_eq!((s.raid_bursts, s.raid_objects_spawned, s.raid_objects_despawned), (1, 11_000, 11_000));
    assert_eq!(e.tick_info(), info);
}

#[test]
fn raid_spawn_is_whole_or_nothing() {
    let e = engine(); // 16,384 object capacity, 16 bursts
    e.raid_spawn(&raid(300.0, 300.0, 16_000, 1_000)).unwrap();
    assert_eq!(e.raid_spawn(&raid(300.0, 300.0, 385, 1_000)), Err(RaidError::CapacityExceeded));
    assert_eq!(e.live_raid_objects(), 16_000, "a refused burst leaves nothing behind");
    e.raid_spawn(&raid(300.0, 300.0, 384, 1_000)).unwrap();
    assert_eq!(e.grid().census().objects, 16_384);
    // Burst slots are capped too.
    let e = engine();
    for _ in 0..16 {
        e.raid_spawn(&raid(300.0, 300.0, 1, 1_000)).unwrap();
    }
    assert_eq!(e.raid_spawn(&raid(300.0, 300.0, 1, 1_000)), Err(RaidError::CapacityExceeded));
    assert_eq!(e.live_raid_objects(), 16);
    assert_eq!(e.stats().raid_refused_capacity, 1);
}

#[test]
fn invalid_raid_requests_are_refused() {
    let e = engine();
    let mut bad = Vec::new();
    let mut r = raid(300.0, 300.0, 10, 100);
    r.kind = EntityKind::Player as u8;
    bad.push((r, RaidError::BadKind));
    r = raid(300.0, 300.0, 10, 100);
    r.kind = 99;
    bad.push((r, RaidError::BadKind));
    bad.push((raid(300.0, 300.0, 0, 100), RaidError::BadCount));
    bad.push((raid(300.0, 300.0, 70_000, 100), RaidError::BadCount));
    bad.push((raid(300.0, 300.0, 10, 0), RaidError::BadLifetimeOrHp));
    r = raid(300.0, 300.0, 10, 100);
    r.hp = 0;
    bad.push((r, RaidError::BadLifetimeOrHp));
    bad.push((raid(-1.0, 300.0, 10, 100), RaidError::OutOfBounds));
    bad.push((raid(300.0, f32::NAN, 10, 100), RaidError::OutOfBounds));
    r = raid(300.0, 300.0, 10, 100);
    r.half_extent_m = f32::INFINITY;
    bad.push((r, RaidError::OutOfBounds));
    for (i, (req, err)) in bad.iter().enumerate() {
        assert_eq!(e.raid_spawn(req), Err(*err), "case {i}");
    }
    assert_eq!(e.live_raid_objects(), 0);
    assert_eq!(e.stats().raid_refused_invalid, bad.len() as u64);
}

#[test]
fn bursts_at_the_world_edge_and_of_zero_extent_stay_inside() {
    let e = engine();
    let mut corner = raid(1023.9, 1023.9, 500, 100);
    corner.half_extent_m = 100.0;
    e.raid_spawn(&corner).unwrap();
    let mut point = raid(10.0, 10.0, 300, 100);
    point.half_extent_m = 0.0;
    e.raid_spawn(&point).unwrap();
    assert_eq!(e.grid().census().objects, 800);
    assert_eq!(e.grid().misplaced(), 0);
    // Players at the corner and the point see objects within the world only.
    let p = join(&e, 1020.0, 1020.0, 1);
    let q = join(&e, 10.0, 10.0, 1);
    e.tick(0);
    let mut aoi = vec![mmo_core::records::AoiEntry::default(); 32];
    let n = e.area_of_interest(p.id, &mut aoi).unwrap();
    assert!(n > 0 && aoi[..n].iter().all(|a| a.x_m < 1024.0 && a.y_m < 1024.0 && a.x_m >= 923.0));
    let n = e.area_of_interest(q.id, &mut aoi).unwrap();
    assert!(n > 0 && aoi[..n].iter().all(|a| (a.x_m - 10.0).abs() < 0.01 && (a.y_m - 10.0).abs() < 0.01));
}

#[test]
fn raid_objects_show_up_as_contacts() {
    let e = engine();
    let p = join(&e, 700.0, 700.0, 1);
    let mut r = raid(700.0, 700.0, 5, 10_000);
    r.half_extent_m = 2.0;
    r.kind = EntityKind::Loot as u8;
    e.raid_spawn(&r).unwrap();
    let events = apply(&e, &[mv(p, 1, 0, 700.5, 700.0)], 1_000);
    assert_eq!(events.iter().filter(|ev| ev.event_kind() == Some(EventKind::Contact)).count(), 5);
    assert!(events[1..].iter().all(|ev| ev.detail == EntityKind::Loot as u8 && ev.other_id & mmo_core::arena::OBJECT_ID_TAG != 0));
}

#[test]
fn expired_slots_are_reused_and_stale_ids_miss() {
    let e = engine();
    let p = join(&e, 200.0, 200.0, 1);
    e.tick(0);
    let mut r = raid(200.0, 200.0, 1, 50);
    r.half_extent_m = 0.0;
    e.raid_spawn(&r).unwrap();
    let mut aoi = [mmo_core::records::AoiEntry::default(); 4];
    assert_eq!(e.tick(50).objects_expired, 0, "a 50 ms object outlives the tick already under way");
    assert_eq!(e.area_of_interest(p.id, &mut aoi), Ok(1));
    let old = aoi[0].entity_id;
    assert_eq!(e.tick(100).objects_expired, 1);
    e.raid_spawn(&r).unwrap();
    assert_eq!(e.tick(150).objects_expired, 0);
    assert_eq!(e.area_of_interest(p.id, &mut aoi), Ok(1));
    let new = aoi[0].entity_id;
    assert_ne!(old, new);
    assert_eq!(e.raid_object_hp(old), None);
    assert_eq!(e.raid_object_hp(new), Some(50));
    assert_eq!(e.damage(p.id, p.token, old, 5), Err(DamageError::UnknownTarget));
}

#[test]
fn damage_outcomes_and_refusals() {
    let e: Engine = engine();
    let a = join(&e, 10.0, 10.0, 1);
    let b = join(&e, 12.0, 10.0, 2);
    let ally = join(&e, 14.0, 10.0, 1);
    let hp = e.config().player_hp;
    assert_eq!(e.damage(a.id, a.token, b.id, 100), Ok(DamageOutcome::Hit { hp_left: hp - 100 }));
    assert_eq!(e.damage(a.id, a.token, b.id, hp), Ok(DamageOutcome::Killed));
    assert_eq!(e.damage(a.id, a.token, b.id, 1), Ok(DamageOutcome::AlreadyDead));
    assert_eq!(e.player(b.id).unwrap().hp, 0);
    assert_eq!(e.damage(a.id, a.token, ally.id, 1), Err(DamageError::FriendlyFire));
    assert_eq!(e.damage(a.id, a.token ^ 1, b.id, 1), Err(DamageError::WrongSession));
    assert_eq!(e.damage(999, a.token, b.id, 1), Err(DamageError::UnknownAttacker));
    assert_eq!(e.damage(a.id, a.token, 4242, 1), Err(DamageError::UnknownTarget));
    assert_eq!(e.damage(a.id, a.token, b.id, 0), Err(DamageError::InvalidAmount));
    assert_eq!(e.damage(a.id, a.token, b.id, -3), Err(DamageError::InvalidAmount));
    // Raid objects: faction 9 adds.
    let mut r = raid(10.0, 10.0, 1, 1_000);
    r.half_extent_m = 0.0;
    e.raid_spawn(&r).unwrap();
    e.tick(0);
    let mut aoi = [mmo_core::records::AoiEntry::default(); 8];
    let n = e.area_of_interest(a.id, &mut aoi).unwrap();
    let add = aoi[..n].iter().find(|x| x.kind == EntityKind::Add as u8).unwrap().entity_id;
    assert_eq!(e.damage(a.id, a.token, add, 49), Ok(DamageOutcome::Hit { hp_left: 1 }));
    assert_eq!(e.damage(a.id, a.token, add, 49), Ok(DamageOutcome::Killed));
    let s = e.stats();
    assert_eq!((s.damage_applied, s.kills, s.damage_rejected), (4, 2, 7));
}

#[test]
fn a_thinned_crowd_is_answered_by_a_second_wider_look() {
    let e = engine();
    let p = join(&e, 500.0, 500.0, 1);
    // Three players 30-40 m away: beyond the hint a crowd of adds leaves, inside the radius.
    let far: Vec<u64> = [(530.0, 500.0), (500.0, 535.0), (460.0, 500.0)].iter().map(|&(x, y)| join(&e, x, y, 1).id).collect();
    e.tick(0);
    let mut burst = raid(500.0, 500.0, 2_000, 100);
    burst.half_extent_m = 10.0;
    e.raid_spawn(&burst).unwrap();
    let mut aoi = [mmo_core::records::AoiEntry::default(); 32];
    // The first query has no hint (a whole-radius look, not a second one) and leaves one;
    // the next tick's query answers within it.
    e.tick(50);
    assert_eq!(e.area_of_interest(p.id, &mut aoi), Ok(32));
    assert!(aoi.iter().all(|a| a.kind == EntityKind::Add as u8 && a.distance_m < 3.0), "the 32 nearest are adds close by");
    e.tick(100);
    assert_eq!(e.area_of_interest(p.id, &mut aoi), Ok(32));
    assert_eq!(e.stats().aoi_wide_looks, 0, "the hint held 32");
    // The burst expires: within the hint nothing is left, so the query looks again and finds
    // the three far players, nearest first.
    for _ in 0..10 {
        if e.live_raid_objects() == 0 {
            break;
        }
        e.tick(e.tick_info().now_ms + 50);
    }
    assert_eq!(e.live_raid_objects(), 0, "a 100 ms burst is gone within ten ticks");
    assert_eq!(e.area_of_interest(p.id, &mut aoi), Ok(3));
    assert_eq!(aoi[..3].iter().map(|a| a.entity_id).collect::<Vec<_>>(), vec![far[0], far[1], far[2]]);
    assert_eq!(aoi[..3].iter().map(|a| a.distance_m).collect::<Vec<_>>(), vec![30.0, 35.0, 40.0]);
    assert_eq!(e.stats().aoi_wide_looks, 1);
    // Fewer than 32 in the radius leaves no hint: the next query is a whole-radius look.
    e.tick(e.tick_info().now_ms + 50);
    assert_eq!(e.area_of_interest(p.id, &mut aoi), Ok(3));
    assert_eq!(e.stats().aoi_wide_looks, 1);
}

#[test]
fn a_burst_in_packs_answers_every_id_it_spawned_and_no_other() {
    use mmo_core::arena::{RAID_PACK_OBJECTS, object_id_from_pack, pack_of_object_id};
    use std::collections::{BTreeMap, BTreeSet};
    let e = engine();
    let p = join(&e, 500.0, 500.0, 1);
    e.tick(0);
    // 130 objects over a square across cell borders (32 m cells): packs of 64, 64 and 2, the
    // full ones holding objects of more than one cell.
    e.raid_spawn(&raid(512.0, 512.0, 130, 120)).unwrap();
    let grid = e.grid();
    let cells: BTreeSet<u32> =
        [472.0f32, 504.0, 536.0, 551.9].iter().flat_map(|&x| [472.0f32, 504.0, 536.0, 551.9].map(|y| grid.cell_of(x, y))).collect();
    let mut ids = Vec::new();
    let mut cells_of_pack: BTreeMap<usize, BTreeSet<u32>> = BTreeMap::new();
    let mut waits = mmo_core::locks::LockWaits::default();
    for &cell in &cells {
        grid.for_each_object(cell, &mut waits, |m| {
            ids.push(m.id);
            cells_of_pack.entry(pack_of_object_id(m.id).expect("a raid object id").0).or_default().insert(cell);
        });
    }
    assert_eq!(ids.len(), 130);
    let mut packs: BTreeMap<usize, Vec<usize>> = BTreeMap::new();
    for &id in &ids {
        let (key, index) = pack_of_object_id(id).unwrap();
        packs.entry(key).or_default().push(index);
        assert_eq!(e.raid_object_hp(id), Some(50), "every spawned id answers");
    }
    let mut sizes: Vec<usize> = packs.values().map(Vec::len).collect();
    sizes.sort_unstable();
    assert_eq!(sizes, [2, RAID_PACK_OBJECTS, RAID_PACK_OBJECTS]);
    for indices in packs.values_mut() {
        indices.sort_unstable();
        assert!(indices.iter().copied().eq(0..indices.len()), "a pack's objects are its first indices, each once");
    }
    assert!(cells_of_pack.values().any(|c| c.len() > 1), "a pack spans cells");
    // Ids no pack holds miss: past the short pack's end, and any index of a key never handed out.
    let short = *packs.iter().find(|(_, i)| i.len() == 2).unwrap().0;
    for index in 2..RAID_PACK_OBJECTS {
        let id = object_id_from_pack(short, index);
        assert_eq!(e.raid_object_hp(id), None);
        assert_eq!(e.damage(p.id, p.token, id, 5), Err(DamageError::UnknownTarget));
    }
    let unused = packs.keys().max().unwrap() + 1;
    assert_eq!(e.raid_object_hp(object_id_from_pack(unused, 0)), None);
    // The whole burst expires at once, packs freed only when their last object (in whichever
    // cell) is swept: every id misses, and a new burst's ids are new.
    for now_ms in [50, 100, 150] {
        assert_eq!(e.tick(now_ms).objects_expired, 0);
    }
    let info = e.tick(200);
    assert_eq!((info.objects_expired, info.objects_live), (130, 0));
    assert!(ids.iter().all(|&id| e.raid_object_hp(id).is_none()), "expired ids miss");
    e.raid_spawn(&raid(512.0, 512.0, 130, 120)).unwrap();
    assert!(ids.iter().all(|&id| e.raid_object_hp(id).is_none()), "a reused pack's old ids still miss");
    assert_eq!(e.live_raid_objects(), 130);
}
