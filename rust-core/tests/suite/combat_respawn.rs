//! Death and respawn: a killed player is dead (its moves and loot claims refused) until the
//! first tick at or after its death plus `respawn_ms`; its death, hit points, cooldown and
//! distance budget belong to its account, so a reconnect, even one racing the killing blow,
//! neither heals it nor loses the kill.

use crate::common::*;
use mmo_core::records::{EventKind, RejectReason};
use mmo_core::{AttackError, CoreConfig, Engine};
use std::sync::Barrier;

/// One hit kills (100 hp, 100 damage); the dead wait 1,000 ms. No linger: a leave takes the
/// body out at once, so a kill races the leave itself (`combat_linger.rs` has the linger).
fn respawn_engine() -> Engine {
    Engine::new(CoreConfig { player_hp: 100, attack_cooldown_ms: 0, respawn_ms: 1_000, logout_linger_ms: 0, ..small_config() }).unwrap()
}

fn join_account(e: &Engine, account: u64, x: f32, y: f32, faction: u8) -> Who {
    Who::of(e.join_account(account, x, y, faction).unwrap())
}

/// The reject reason of a lone move, or `None` if it was applied.
fn move_verdict(e: &Engine, who: Who, seq: u32, now_ms: u64, x: f32, y: f32) -> Option<RejectReason> {
    let events = apply(e, &[mv(who, seq, 0, x, y)], now_ms);
    match events[0].kind {
        k if k == EventKind::Ack as u8 => None,
        _ => Some(match events[0].detail {
            1 => RejectReason::UnknownPlayer,
            2 => RejectReason::WrongSession,
            3 => RejectReason::StaleSequence,
            4 => RejectReason::TooFast,
            5 => RejectReason::OutOfBounds,
            6 => RejectReason::Dead,
            other => panic!("reject detail {other}"),
        }),
    }
}

#[test]
fn the_dead_stay_dead_until_the_tick_that_respawns_them() {
    let e = respawn_engine();
    let a = join(&e, 100.0, 100.0, 1);
    let b = join(&e, 103.0, 100.0, 2);
    e.tick(50);
    assert!(e.attack(a.id, a.token, b.id, 200).unwrap().killed);
    assert_eq!(move_verdict(&e, b, 1, 300, 100.5, 100.0), Some(RejectReason::Dead));
    assert_eq!(e.attack(b.id, b.token, a.id, 300), Err(AttackError::AttackerDead));
    e.tick(1_199);
    assert_eq!(e.player(b.id).unwrap().hp, 0, "dead until 200 + 1,000");
    assert_eq!(move_verdict(&e, b, 2, 1_199, 103.5, 100.0), Some(RejectReason::Dead));
    e.tick(1_200);
    assert_eq!(e.player(b.id).unwrap().hp, 100, "full hit points");
    // Where it stood, and its first move may carry any sequence still.
    assert_eq!(e.player(b.id).unwrap().x_m, 103.0);
    assert_eq!(move_verdict(&e, b, 1, 1_200, 103.5, 100.0), None);
    let s = e.stats();
    assert_eq!((s.kills, s.respawns, s.move_rejected_dead), (1, 1, 2));
}

#[test]
fn a_reconnect_neither_heals_nor_loses_a_kill_that_races_it() {
    // Each victim's account leaves and rejoins on one thread while its attacker strikes on
    // another: whichever comes first, the account ends dead exactly when the attack reported
    // the kill, and every dead account respawns on the same tick.
    // At least four rounds, and more (up to 64) until some attack has struck before its
    // leave: on a loaded machine one thread may run a whole round before the other starts.
    const VICTIMS: u64 = 48;
    const ROUNDS_MAX: u64 = 64;
    let e = respawn_engine();
    e.tick(10);
    for round in 0..ROUNDS_MAX {
        let pairs: Vec<(Who, Who, u64)> = (0..VICTIMS)
            .map(|i| {
                let account = 1 + i + round * VICTIMS;
                let (x, y) = (20.0 + 15.0 * (i % 8) as f32, 20.0 + 15.0 * (i / 8) as f32);
                (join(&e, x + 3.0, y, 1), join_account(&e, account, x, y, 2), account)
            })
            .collect();
        let barrier = Barrier::new(2);
        let (kills, rejoined) = std::thread::scope(|s| {
            let attacks = s.spawn(|| {
                barrier.wait();
                pairs
                    .iter()
                    .map(|(attacker, victim, _)| e.attack(attacker.id, attacker.token, victim.id, 100).is_ok_and(|r| r.killed))
                    .collect::<Vec<_>>()
            });
            let reconnects = s.spawn(|| {
                barrier.wait();
                pairs
                    .iter()
                    .map(|(_, victim, account)| {
                        e.leave(victim.id, victim.token).unwrap();
                        let p = e.player(victim.id);
                        assert!(p.is_none(), "the old session is gone");
                        join_account(&e, *account, 0.0, 0.0, 2)
                    })
                    .collect::<Vec<_>>()
            });
            (attacks.join().unwrap(), reconnects.join().unwrap())
        });
        for (killed, who) in kills.iter().zip(&rejoined) {
            let hp = e.player(who.id).unwrap().hp;
            assert_eq!(hp == 0, *killed, "dead after the reconnect exactly when the attack killed (hp {hp})");
            let verdict = move_verdict(&e, *who, 1, 200, 0.5, 0.0);
            assert_eq!(verdict, killed.then_some(RejectReason::Dead));
        }
        // A death the leave had to date itself is dated by the last tick (10 + 1,000), one the
        // kill dated by the attack (100 + 1,000): all are back by 1,100.
        e.tick(1_100 + round * 2_000);
        for who in &rejoined {
            assert_eq!(e.player(who.id).unwrap().hp, 100);
        }
        for (attacker, _, _) in &pairs {
            e.leave(attacker.id, attacker.token).unwrap();
        }
        for who in &rejoined {
            e.leave(who.id, who.token).unwrap();
        }
        e.tick(1_200 + round * 2_000);
        if round >= 3 && e.stats().kills > 0 {
            break;
        }
    }
    let s = e.stats();
    assert!(s.kills > 0, "some attacks struck before the leave in {ROUNDS_MAX} rounds");
    assert_eq!(s.respawns, s.kills, "every kill respawned once");
}

#[test]
fn a_session_without_an_account_keeps_nothing() {
    let e = respawn_engine();
    let a = join(&e, 100.0, 100.0, 1);
    let b = join(&e, 103.0, 100.0, 2);
    assert!(e.attack(a.id, a.token, b.id, 100).unwrap().killed);
    e.leave(b.id, b.token).unwrap();
    let b2 = join(&e, 103.0, 100.0, 2);
    assert_eq!(e.player(b2.id).unwrap().hp, 100);
    assert_eq!(move_verdict(&e, b2, 1, 200, 103.5, 100.0), None);
}
