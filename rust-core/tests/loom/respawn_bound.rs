//! Loom model of the respawn sweep's bound ([`mmo_core::combat::RespawnBound`], as
//! `Engine::record_death` and `Engine::respawn_due` use it): a kill stores the victim body's
//! respawn time, then lowers the bound; the tick skips its sweep while the bound is in the
//! future, else raises it to `u64::MAX`, reads each body's respawn time (respawning those due)
//! and lowers the bound again for those still dead. Unlike the economy's offer sweep, no lock
//! orders a kill against the sweep: only the bound's read-modify-writes do.
//!
//! In every interleaving of a sweep with deaths marked meanwhile, no death is forgotten: after
//! both, every body still dead has the bound at or below its respawn time, so the first tick
//! at or after it sweeps and respawns it. (The sweep's steps are written out here as the
//! engine takes them; the bound is the engine's own type, with loom's atomics.)
//!
//! Run: `RUSTFLAGS="--cfg mmo_loom" cargo test -p mmo-core --release --test loom -- respawn_bound::`

use loom::sync::Arc;
use loom::sync::atomic::{AtomicU64, Ordering};
use loom::thread;
use mmo_core::combat::RespawnBound;

/// Two bodies' respawn times (0: alive) and the bound, as the engine holds them.
struct World {
    bodies: [AtomicU64; 2],
    bound: RespawnBound,
}

impl World {
    /// `Engine::record_death`: the mark, then the bound.
    fn kill(&self, body: usize, respawn_at_ms: u64) {
        self.bodies[body].store(respawn_at_ms, Ordering::Release);
        self.bound.lower(respawn_at_ms);
    }

    /// `Engine::respawn_due` at `now_ms`; returns which bodies it respawned.
    fn tick(&self, now_ms: u64) -> [bool; 2] {
        let mut respawned = [false; 2];
        if !self.bound.take_if_due(now_ms) {
            return respawned;
        }
        for (body, done) in self.bodies.iter().zip(&mut respawned) {
            match body.load(Ordering::Acquire) {
                0 => {}
                due_ms if due_ms > now_ms => self.bound.lower(due_ms),
                _ => {
                    body.store(0, Ordering::Release);
                    *done = true;
                }
            }
        }
        respawned
    }

    /// Every body still dead will be swept by the first tick at or after its time.
    fn nothing_forgotten(&self) {
        for body in &self.bodies {
            let due_ms = body.load(Ordering::Acquire);
            if due_ms != 0 {
                assert!(self.bound.get() <= due_ms, "a dead body the sweeps would skip (due {due_ms}, bound {})", self.bound.get());
            }
        }
    }
}

#[test]
fn a_death_marked_during_a_sweep_is_never_forgotten() {
    loom::model(|| {
        // Body 0 died earlier and is due at 100; body 1 is killed (due at 100, or at 300)
        // while the tick at 100 sweeps.
        for later in [100, 300] {
            let world = Arc::new(World { bodies: [AtomicU64::new(100), AtomicU64::new(0)], bound: RespawnBound::new() });
            world.bound.lower(100);
            let killer = {
                let world = Arc::clone(&world);
                thread::spawn(move || world.kill(1, later))
            };
            let first = world.tick(100);
            killer.join().unwrap();
            assert!(first[0], "the due body respawned");
            world.nothing_forgotten();
            // The next tick at or after the later death respawns it, whoever saw it first.
            let second = world.tick(later);
            assert!(first[1] || second[1], "the body killed during the sweep respawned");
            assert_eq!(world.bodies[1].load(Ordering::Acquire), 0);
        }
    });
}

#[test]
fn two_deaths_racing_a_sweep_that_is_not_due_keep_the_earliest() {
    loom::model(|| {
        // Two kills (due at 200 and 150) race a tick at 50 that finds nothing due.
        let world = Arc::new(World { bodies: [AtomicU64::new(0), AtomicU64::new(0)], bound: RespawnBound::new() });
        let killers: Vec<_> = [(0, 200), (1, 150)]
            .into_iter()
            .map(|(body, at)| {
                let world = Arc::clone(&world);
                thread::spawn(move || world.kill(body, at))
            })
            .collect();
        let early = world.tick(50);
        for k in killers {
            k.join().unwrap();
        }
        assert_eq!(early, [false, false], "nothing respawned before its time");
        world.nothing_forgotten();
        assert_eq!(world.tick(150), [false, true]);
        assert_eq!(world.tick(200), [true, false]);
    });
}
