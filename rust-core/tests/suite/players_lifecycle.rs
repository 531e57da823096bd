//! Join and leave: capacity, sessions, stale ids, and what leave frees.

use crate::common::*;
use mmo_core::{CoreConfig, Engine, JoinError, LeaveError};

#[test]
fn join_gives_distinct_ids_and_random_tokens() {
    let e = engine();
    let a = join(&e, 1.0, 1.0, 1);
    let b = join(&e, 1.0, 1.0, 1);
    assert_ne!(a.id, b.id);
    assert_ne!(a.token, b.token);
    assert!(a.token != 0 && b.token != 0);
    assert_eq!(e.live_players(), 2);
    assert_eq!(e.grid().census().players, 2);
    assert_eq!(e.join(-1.0, 5.0, 1), Err(JoinError::OutOfBounds));
    assert_eq!(e.join(5.0, f32::INFINITY, 1), Err(JoinError::OutOfBounds));
    assert_eq!(e.stats().joins_refused_bounds, 2);
}

#[test]
fn capacity_is_enforced_and_freed_by_leave() {
    let e = Engine::new(CoreConfig { player_capacity: 3, ..small_config() }).unwrap();
    let who: Vec<Who> = (0..3).map(|_| join(&e, 5.0, 5.0, 1)).collect();
    assert_eq!(e.join(5.0, 5.0, 1), Err(JoinError::ServerFull));
    e.leave(who[1].id, who[1].token).unwrap();
    let again = join(&e, 5.0, 5.0, 1);
    assert_ne!(again.id, who[1].id);
    assert_eq!(e.stats().joins_refused_full, 1);
}

#[test]
fn leave_checks_session_and_happens_once() {
    let e = engine();
    let a = join(&e, 5.0, 5.0, 1);
    assert_eq!(e.leave(a.id, a.token ^ 1), Err(LeaveError::WrongSession));
    assert_eq!(e.leave(0, a.token), Err(LeaveError::UnknownPlayer));
    e.leave(a.id, a.token).unwrap();
    assert_eq!(e.leave(a.id, a.token), Err(LeaveError::UnknownPlayer));
    assert!(e.player(a.id).is_none());
    assert!(e.grid().cells_containing(a.id).is_empty());
    assert_eq!(e.live_players(), 0);
    let s = e.stats();
    assert_eq!((s.leaves, s.leaves_refused), (1, 3));
}

#[test]
fn leave_racing_moves_ticks_and_aoi_of_the_same_player_leaves_nothing_behind() {
    use mmo_core::records::{AoiEntry, MoveEvent};
    let e = engine();
    let watcher = join(&e, 300.0, 300.0, 1);
    let mut now_ms = 0;
    for round in 0..40 {
        let p = join(&e, 300.0, 300.0, 1);
        std::thread::scope(|s| {
            s.spawn(|| {
                // The tick builds snapshots (reading the slot tables) while the player leaves.
                for t in 0..20u64 {
                    e.tick(round * 1_000 + t);
                }
            });
            s.spawn(|| {
                let mut events = vec![MoveEvent::default(); e.events_per_move_max()];
                let mut aoi = [AoiEntry::default(); 8];
                for seq in 1..200u32 {
                    // Walk back and forth across the cell boundary at x = 320.
                    let x = if seq % 2 == 0 { 317.0 } else { 323.0 };
                    let _ = e.apply_moves(&[mv(p, seq, seq * 1_000, x, 300.0)], u64::from(seq) * 1_000, &mut events);
                    let _ = e.area_of_interest(p.id, &mut aoi);
                    let _ = e.area_of_interest(watcher.id, &mut aoi);
                }
            });
            s.spawn(|| {
                for _ in 0..round * 3 {
                    std::hint::spin_loop();
                }
                e.leave(p.id, p.token).unwrap();
            });
        });
        assert!(e.grid().cells_containing(p.id).is_empty(), "round {round}: the departed player is still in the grid");
        assert!(e.player(p.id).is_none());
        // A newcomer takes the freed slot: the last snapshot still lists the departed player
        // there, which is not the newcomer.
        let newcomer = join(&e, 310.0, 300.0, 1);
        let mut aoi = [AoiEntry::default(); 8];
        assert_eq!(e.area_of_interest(p.id, &mut aoi), Err(mmo_core::AoiError::UnknownPlayer));
        assert_eq!(e.area_of_interest(newcomer.id, &mut aoi), Err(mmo_core::AoiError::NotInSnapshot));
        now_ms += 1_000;
        e.tick(round * 1_000 + 999);
        assert_eq!(e.area_of_interest(newcomer.id, &mut aoi), Ok(1), "sees the watcher");
        assert_eq!(aoi[0].entity_id, watcher.id);
        e.leave(newcomer.id, newcomer.token).unwrap();
    }
    assert!(now_ms > 0);
    assert_eq!(e.grid().census().players, 1);
    assert_eq!(e.grid().misplaced(), 0);
    assert_eq!(e.live_players(), 1);
}

#[test]
fn concurrent_leaves_of_one_player_tear_down_once() {
    let e = engine();
    for _ in 0..50 {
        let a = join(&e, 5.0, 5.0, 1);
        let wins = std::sync::atomic::AtomicU32::new(0);
        std::thread::scope(|s| {
            for _ in 0..2 {
                s.spawn(|| {
                    if e.leave(a.id, a.token).is_ok() {
                        wins.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    }
                });
            }
        });
        assert_eq!(wins.into_inner(), 1);
    }
    assert_eq!(e.live_players(), 0);
    assert_eq!(e.grid().census().players, 0);
    assert!(e.economy_audit().is_conserved());
}
