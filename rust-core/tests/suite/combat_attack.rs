//! Attacks: damage from the server's rules (range, cooldown, faction, alive), every refusal
//! counted by its reason, and exactly one kill however many attacks race.

use crate::common::*;
use mmo_core::records::EntityKind;
use mmo_core::{AttackError, AttackReport, CoreConfig, Engine};
use std::sync::Barrier;

/// Defaults: 100 damage, 6 m range, 500 ms cooldown; players have 1,000 hp.
fn attack_engine() -> Engine {
    Engine::new(CoreConfig { player_hp: 1_000, ..small_config() }).unwrap()
}

#[test]
fn an_attack_takes_the_servers_damage_and_reports_the_kill_once() {
    let e = attack_engine();
    let a = join(&e, 100.0, 100.0, 1);
    let b = join(&e, 104.0, 100.0, 2);
    let report = e.attack(a.id, a.token, b.id, 1_000).unwrap();
    assert_eq!(report, AttackReport { damage: 100, hp_left: 900, killed: false, target_kind: EntityKind::Player, loot_dropped: false });
    assert_eq!(e.player(b.id).unwrap().hp, 900);
    // Ten landed attacks, one per cooldown, kill; the tenth reports it.
    let mut now_ms = 1_000;
    for i in 2..=10 {
        now_ms += 500;
        let r = e.attack(a.id, a.token, b.id, now_ms).unwrap();
        assert_eq!((r.hp_left, r.killed), (1_000 - 100 * i, i == 10));
    }
    now_ms += 500;
    assert_eq!(e.attack(a.id, a.token, b.id, now_ms), Err(AttackError::TargetDead));
    // A dead player cannot attack either.
    assert_eq!(e.attack(b.id, b.token, a.id, now_ms), Err(AttackError::AttackerDead));
    let s = e.stats();
    assert_eq!((s.attacks_landed, s.damage_applied, s.kills), (10, 10, 1));
    assert_eq!((s.attack_rejected_target_dead, s.attack_rejected_attacker_dead), (1, 1));
}

#[test]
fn a_raid_object_is_fought_in_range_and_its_last_hit_points_are_all_a_kill_takes() {
    let e = attack_engine();
    let object = one_object(&e, 300.0, 300.0, 150, 9);
    let a = join(&e, 294.5, 300.0, 1); // 5.5 m away: in range
    let far = join(&e, 293.0, 300.0, 1); // 7 m away
    assert_eq!(e.attack(far.id, far.token, object, 1_000), Err(AttackError::OutOfRange));
    let r = e.attack(a.id, a.token, object, 1_000).unwrap();
    assert_eq!(r, AttackReport { damage: 100, hp_left: 50, killed: false, target_kind: EntityKind::Add, loot_dropped: false });
    let r = e.attack(a.id, a.token, object, 1_500).unwrap();
    assert_eq!(r, AttackReport { damage: 50, hp_left: 0, killed: true, target_kind: EntityKind::Add, loot_dropped: true });
    assert_eq!(e.raid_object_hp(object), Some(0));
    // Objects of the attacker's own faction are friends.
    let friend = one_object(&e, 500.0, 500.0, 150, 1);
    let c = join(&e, 500.0, 501.0, 1);
    assert_eq!(e.attack(c.id, c.token, friend, 1_000), Err(AttackError::FriendlyFire));
}

#[test]
fn every_refusal_is_reported_in_order_and_counted_by_reason() {
    let e = attack_engine();
    let a = join(&e, 100.0, 100.0, 1);
    let friend = join(&e, 101.0, 100.0, 1);
    let foe = join(&e, 102.0, 100.0, 2);
    let far_foe = join(&e, 110.0, 100.0, 2);
    let checks: [(u64, u64, u64, u64, AttackError); 7] = [
        (a.id + 10_000, a.token, foe.id, 1_000, AttackError::UnknownPlayer),
        (a.id, a.token ^ 1, foe.id, 1_000, AttackError::WrongSession),
        (a.id, a.token, 0, 1_000, AttackError::UnknownTarget),
        (a.id, a.token, mmo_core::arena::OBJECT_ID_TAG | 12_345, 1_000, AttackError::UnknownTarget),
        (a.id, a.token, friend.id, 1_000, AttackError::FriendlyFire),
        (a.id, a.token, a.id, 1_000, AttackError::FriendlyFire),
        (a.id, a.token, far_foe.id, 1_000, AttackError::OutOfRange),
    ];
    for (attacker, token, target, now_ms, want) in checks {
        assert_eq!(e.attack(attacker, token, target, now_ms), Err(want), "{want:?}");
    }
    // Refusals start no cooldown: the first real attack lands at once.
    assert!(e.attack(a.id, a.token, foe.id, 1_000).is_ok());
    // The cooldown runs on the server's clock: 499 ms is too soon, 500 ms is not.
    assert_eq!(e.attack(a.id, a.token, foe.id, 1_499), Err(AttackError::Cooldown));
    assert_eq!(e.attack(a.id, a.token, foe.id, 1_000), Err(AttackError::Cooldown));
    assert!(e.attack(a.id, a.token, foe.id, 1_500).is_ok());
    // A left target is unknown; a left attacker too (out of combat by the last tick's clock,
    // 12,000: the last hit at 1,500 held them until 11,500, so they leave at once).
    e.tick(12_000);
    e.leave(foe.id, foe.token).unwrap();
    assert_eq!(e.attack(a.id, a.token, foe.id, 13_000), Err(AttackError::UnknownTarget));
    e.leave(a.id, a.token).unwrap();
    assert_eq!(e.attack(a.id, a.token, far_foe.id, 13_000), Err(AttackError::UnknownPlayer));
    let s = e.stats();
    assert_eq!(s.attack_rejected_unknown_player, 2);
    assert_eq!(s.attack_rejected_wrong_session, 1);
    assert_eq!(s.attack_rejected_unknown_target, 3);
    assert_eq!(s.attack_rejected_friendly_fire, 2);
    assert_eq!(s.attack_rejected_out_of_range, 1);
    assert_eq!(s.attack_rejected_cooldown, 2);
    assert_eq!((s.attacks_landed, s.kills), (2, 0));
    assert_eq!(e.player(far_foe.id).unwrap().hp, 1_000, "refused attacks take nothing");
}

#[test]
fn range_is_measured_from_where_the_server_put_the_attacker() {
    let e = attack_engine();
    let a = join(&e, 100.0, 100.0, 1);
    let foe = join(&e, 108.0, 100.0, 2);
    assert_eq!(e.attack(a.id, a.token, foe.id, 1_000), Err(AttackError::OutOfRange));
    // Walk 2.5 m closer (a legal move), then the foe is 5.5 m away.
    let events = apply(&e, &[mv(a, 1, 0, 102.5, 100.0)], 1_000);
    assert_eq!(events[0].event_kind(), Some(mmo_core::records::EventKind::Ack));
    assert!(e.attack(a.id, a.token, foe.id, 1_000).is_ok());
}

/// Runs `attempt` on `THREADS` threads released together; sums what each returns.
fn race(attempt: impl Fn() -> (usize, usize) + Sync) -> (usize, usize) {
    const THREADS: usize = 4;
    let barrier = Barrier::new(THREADS);
    std::thread::scope(|s| {
        let handles: Vec<_> = (0..THREADS)
            .map(|_| {
                s.spawn(|| {
                    barrier.wait();
                    attempt()
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).fold((0, 0), |(a, b), (x, y)| (a + x, b + y))
    })
}

#[test]
fn racing_attacks_kill_once() {
    let e = attack_engine();
    let object = one_object(&e, 600.0, 600.0, 1_000, 9);
    let attackers: Vec<_> = (0..32).map(|i| join(&e, 598.0 + (i % 4) as f32, 598.0 + (i / 8) as f32, 1)).collect();
    // Four threads make all 32 attackers attack at once: 1,000 hp at 100 a hit lets exactly
    // ten land, the tenth kills, and every other attack is refused (dead, or the attacker's
    // cooldown when another thread's attack of the same attacker landed first).
    let (landed, kills) = race(|| {
        let (mut landed, mut kills) = (0, 0);
        for who in &attackers {
            if let Ok(r) = e.attack(who.id, who.token, object, 1_000) {
                landed += 1;
                kills += usize::from(r.killed);
            }
        }
        (landed, kills)
    });
    assert_eq!((landed, kills), (10, 1));
    let s = e.stats();
    assert_eq!((s.attacks_landed, s.kills), (10, 1));
    assert_eq!(s.attack_rejected_cooldown + s.attack_rejected_target_dead + 10, 4 * 32, "each attack landed or refused, once");
}

#[test]
fn one_attacker_lands_once_per_cooldown_however_many_threads_send() {
    let e = attack_engine();
    let object = one_object(&e, 800.0, 800.0, 1_000_000, 9);
    let a = join(&e, 801.0, 800.0, 1);
    for round in 0..5u64 {
        let now_ms = 1_000 + round * 500;
        let (landed, _) = race(|| ((0..50).filter(|_| e.attack(a.id, a.token, object, now_ms).is_ok()).count(), 0));
        assert_eq!(landed, 1, "round {round}");
    }
    assert_eq!(e.raid_object_hp(object), Some(1_000_000 - 5 * 100));
    assert_eq!(e.stats().attack_rejected_cooldown, 5 * (4 * 50 - 1));
}
