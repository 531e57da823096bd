//! Loom model of [`mmo_core::combat::Health`]: concurrent hits saturate at zero, never
//! resurrect, and exactly one hit reports the kill.
//!
//! Run: `RUSTFLAGS="--cfg mmo_loom" cargo test -p mmo-core --release --test loom -- health::`

use loom::sync::Arc;
use loom::thread;
use mmo_core::combat::{DamageOutcome, Health};

#[test]
fn two_lethal_hits_kill_once() {
    loom::model(|| {
        let health = Arc::new(Health::new(10));
        let other = health.clone();
        let t = thread::spawn(move || other.damage(6));
        let here = health.damage(6);
        let there = t.join().unwrap();
        let outcomes = [here, there];
        assert_eq!(outcomes.iter().filter(|o| **o == DamageOutcome::Killed).count(), 1);
        assert!(outcomes.contains(&DamageOutcome::Hit { hp_left: 4 }));
        assert_eq!(health.hp(), 0);
    });
}

#[test]
fn hits_after_death_change_nothing() {
    loom::model(|| {
        let health = Arc::new(Health::new(3));
        let handles: Vec<_> = (0..2)
            .map(|_| {
                let h = health.clone();
                thread::spawn(move || h.damage(3))
            })
            .collect();
        let a = health.damage(1);
        let mut outcomes: Vec<DamageOutcome> = handles.into_iter().map(|h| h.join().unwrap()).collect();
        outcomes.push(a);
        let kills = outcomes.iter().filter(|o| **o == DamageOutcome::Killed).count();
        assert_eq!(kills, 1);
        // Whatever the order, hp never goes below zero and nothing heals.
        assert_eq!(health.hp(), 0);
        // Only the 1-point hit can leave the target alive, and only from full health.
        let survived: Vec<&DamageOutcome> = outcomes.iter().filter(|o| matches!(o, DamageOutcome::Hit { .. })).collect();
        assert!(survived.len() <= 1);
        assert!(survived.iter().all(|o| **o == DamageOutcome::Hit { hp_left: 2 }));
        // Every call is accounted for: one kill, at most one survivable hit, the rest corpses.
        let corpses = outcomes.iter().filter(|o| **o == DamageOutcome::AlreadyDead).count();
        assert_eq!(kills + survived.len() + corpses, 3);
    });
}
