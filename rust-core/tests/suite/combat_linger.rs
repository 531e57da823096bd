//! Leaving in combat: a player who leaves within `logout_linger_ms` of a landed hit between
//! two players ends its session at once, but its body stays in the world, attackable and
//! killable, until the first tick at or after the last tick's time plus `logout_linger_ms`,
//! or until its account's next join, which takes up from it. So leaving cannot deny a kill,
//! not even a leave racing the attack on another thread.

use crate::common::*;
use mmo_core::records::EconomyKind;
use mmo_core::{AttackError, CoreConfig, Engine, LeaveError};
use std::sync::Barrier;

/// 200 hit points, 100 a hit, no cooldown; the dead wait 1,000 ms, a leave in combat 2,000.
fn linger_engine(logout_linger_ms: u32) -> Engine {
    Engine::new(CoreConfig { player_hp: 200, attack_cooldown_ms: 0, respawn_ms: 1_000, logout_linger_ms, ..small_config() }).unwrap()
}

fn join_account(e: &Engine, account: u64, x: f32, y: f32, faction: u8) -> Who {
    Who::of(e.join_account(account, x, y, faction).unwrap())
}

#[test]
fn a_leave_in_combat_ends_the_session_but_not_the_body() {
    let e = linger_engine(2_000);
    let a = join_account(&e, 1, 100.0, 100.0, 1);
    let b = join_account(&e, 2, 103.0, 100.0, 2);
    e.tick(50);
    assert_eq!(e.attack(b.id, b.token, a.id, 100).unwrap().hp_left, 100);
    e.tick(150);
    e.leave(a.id, a.token).unwrap();
    // The session is over: every call with its token is refused, a second leave too.
    assert_eq!(e.leave(a.id, a.token), Err(LeaveError::UnknownPlayer));
    assert_eq!(e.attack(a.id, a.token, b.id, 200), Err(AttackError::WrongSession));
    let refused = apply(&e, &[mv(a, 1, 0, 100.5, 100.0)], 200);
    assert_eq!(refused[0].detail, 2, "a move is refused wrong_session");
    assert_eq!(status(&run_op(&e, op(a, 1, EconomyKind::Transfer, b.id, 1, 0, 0))), mmo_core::records::EconomyStatus::WrongSession);
    // The body is not: it is found, hit and killed where it stood.
    let p = e.player(a.id).expect("the lingering body");
    assert_eq!((p.x_m, p.y_m, p.hp), (100.0, 100.0, 100));
    assert!(e.attack(b.id, b.token, a.id, 300).unwrap().killed);
    e.tick(2_149);
    assert!(e.player(a.id).is_some(), "until the first tick at or after 150 + 2,000");
    assert_eq!(e.stats().lingers_ended, 0);
    e.tick(2_150);
    assert!(e.player(a.id).is_none(), "the linger is over");
    let s = e.stats();
    assert_eq!((s.leaves, s.leaves_lingered, s.lingers_ended, s.lingers_resumed, s.kills), (1, 1, 1, 0, 1));
    // The kill stood (dead from 300 until 1,300): the respawn tick, at 2,149, found the body
    // still lingering and brought it back, so the account's next session starts alive.
    let a2 = join_account(&e, 1, 100.0, 100.0, 1);
    assert_eq!(e.player(a2.id).unwrap().hp, 200, "respawned during the linger");
    assert_eq!(e.stats().respawns, 1);
    assert!(e.economy_audit().is_conserved());
}

#[test]
fn the_accounts_next_join_takes_up_from_its_lingering_body() {
    let e = linger_engine(2_000);
    let a = join_account(&e, 1, 100.0, 100.0, 1);
    let b = join(&e, 103.0, 100.0, 2);
    e.tick(50);
    e.attack(a.id, a.token, b.id, 100).unwrap(); // the attacker is in combat too
    e.leave(a.id, a.token).unwrap();
    assert_eq!(e.attack(b.id, b.token, a.id, 120).unwrap().hp_left, 100);
    // Whatever spawn point the join asks for, it takes up where the body stood.
    let ticket = e.join_account(1, 500.0, 500.0, 1).unwrap();
    assert_eq!((ticket.x_m, ticket.y_m), (100.0, 100.0));
    let a2 = Who::of(ticket);
    assert!(e.player(a.id).is_none(), "the old body is gone the moment the account is back");
    let p = e.player(a2.id).unwrap();
    assert_eq!((p.hp, p.x_m, p.y_m), (100, 100.0, 100.0), "with the hit points the linger left, where it stood");
    // Still in combat (until 120 + 2,000, carried with the account): leaving again lingers.
    e.leave(a2.id, a2.token).unwrap();
    assert!(e.player(a2.id).is_some());
    let s = e.stats();
    assert_eq!((s.leaves_lingered, s.lingers_resumed), (2, 1));
    // The tick at 4,000 ends that linger (50 + 2,000); then, out of combat by the last
    // tick's clock, a leave takes the body out at once.
    e.tick(4_000);
    assert!(e.player(a2.id).is_none());
    let a3 = join_account(&e, 1, 100.0, 100.0, 1);
    e.tick(4_200);
    e.leave(a3.id, a3.token).unwrap();
    assert!(e.player(a3.id).is_none(), "no hit within 2,000 ms of 4,200: no linger");
    assert_eq!(e.stats().leaves_lingered, 2);
}

#[test]
fn raid_objects_are_no_combat_and_zero_turns_the_linger_off() {
    let e = linger_engine(2_000);
    let a = join(&e, 100.0, 100.0, 1);
    let add = one_object(&e, 101.0, 100.0, 1_000, 9);
    e.tick(50);
    e.attack(a.id, a.token, add, 100).unwrap();
    e.leave(a.id, a.token).unwrap();
    assert!(e.player(a.id).is_none(), "hitting a raid object is not a fight");
    let off = linger_engine(0);
    let a = join(&off, 100.0, 100.0, 1);
    let b = join(&off, 103.0, 100.0, 2);
    off.attack(b.id, b.token, a.id, 100).unwrap();
    off.leave(a.id, a.token).unwrap();
    assert!(off.player(a.id).is_none());
    assert_eq!(off.stats().leaves_lingered, 0);
}

#[test]
fn a_tick_ends_at_most_256_lingers_and_the_next_the_rest() {
    // 150 attackers, each with two victims who leave in combat: 300 lingers due at once.
    let e = Engine::new(CoreConfig { player_capacity: 600, logout_linger_ms: 1_000, attack_cooldown_ms: 0, ..small_config() }).unwrap();
    e.tick(10);
    let mut leaving = Vec::new();
    for i in 0..150u32 {
        let (x, y) = (20.0 + 6.0 * (i % 150) as f32, 100.0);
        let attacker = join(&e, x, y, 1);
        let v1 = join(&e, x, y + 2.0, 2);
        let v2 = join(&e, x, y - 2.0, 2);
        e.attack(attacker.id, attacker.token, v1.id, 20).unwrap();
        e.attack(attacker.id, attacker.token, v2.id, 20).unwrap();
        leaving.extend([v1, v2]);
    }
    for v in &leaving {
        e.leave(v.id, v.token).unwrap();
    }
    e.tick(1_010);
    assert_eq!(e.stats().lingers_ended, 256, "one tick's bound");
    e.tick(1_020);
    assert_eq!(e.stats().lingers_ended, 300, "the rest at the next");
    assert!(leaving.iter().all(|v| e.player(v.id).is_none()));
}

#[test]
fn a_leave_racing_the_killing_blow_never_denies_it() {
    // Every victim is in combat (hit once, 100 of 200 hit points left). One thread leaves each
    // victim while another strikes the killing blow: before the leave the blow finds the
    // player, after it the lingering body, so every blow lands and kills, and every account,
    // rejoining after both, comes back dead.
    const VICTIMS: u64 = 48;
    let e = linger_engine(5_000);
    for round in 0..4u64 {
        let base = 20_000 * round + 10;
        e.tick(base);
        let pairs: Vec<(Who, Who, u64)> = (0..VICTIMS)
            .map(|i| {
                let account = 1 + i + round * VICTIMS;
                let (x, y) = (20.0 + 15.0 * (i % 8) as f32, 20.0 + 15.0 * (i / 8) as f32);
                let attacker = join(&e, x + 3.0, y, 1);
                let victim = join_account(&e, account, x, y, 2);
                assert_eq!(e.attack(attacker.id, attacker.token, victim.id, base + 40).unwrap().hp_left, 100);
                (attacker, victim, account)
            })
            .collect();
        let barrier = Barrier::new(2);
        let blows = std::thread::scope(|s| {
            let attacks = s.spawn(|| {
                barrier.wait();
                pairs.iter().map(|(attacker, victim, _)| e.attack(attacker.id, attacker.token, victim.id, base + 90)).collect::<Vec<_>>()
            });
            s.spawn(|| {
                barrier.wait();
                for (_, victim, _) in &pairs {
                    e.leave(victim.id, victim.token).unwrap();
                }
            });
            attacks.join().unwrap()
        });
        for blow in &blows {
            let report = blow.as_ref().expect("the player or its lingering body is there to be hit");
            assert!(report.killed, "100 hit points left, 100 taken");
        }
        let rejoined: Vec<Who> = pairs.iter().map(|(_, _, account)| join_account(&e, *account, 0.0, 0.0, 2)).collect();
        for who in &rejoined {
            assert_eq!(e.player(who.id).unwrap().hp, 0, "the kill stood");
        }
        // Out of combat by 10,000 ms on: everyone leaves at once, and the dead have respawned.
        e.tick(base + 10_000);
        for who in &rejoined {
            assert_eq!(e.player(who.id).unwrap().hp, 200);
        }
        for (attacker, _, _) in &pairs {
            e.leave(attacker.id, attacker.token).unwrap();
        }
        for who in &rejoined {
            e.leave(who.id, who.token).unwrap();
        }
        assert_eq!(e.tick(base + 10_001).players_live, 0);
    }
    let s = e.stats();
    assert_eq!(s.kills, 4 * VICTIMS);
    assert_eq!(
        (s.leaves_lingered, s.lingers_resumed, s.lingers_ended),
        (4 * VICTIMS, 4 * VICTIMS, 0),
        "every linger ended once, by the rejoin"
    );
}
