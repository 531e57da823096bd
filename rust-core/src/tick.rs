//! The tick: advances game time, expires raid bursts, and publishes a per-tick summary.
//!
//! ## Who runs it
//! One tick driver (the server's tick thread) calls [`crate::Engine::tick`] at the tick rate.
//! The tick's own state (the tick counter and the expiry heap) sits behind a
//! `parking_lot::Mutex` that only `tick` takes, once per tick: no move, spawn or trade ever
//! takes it, so it is not a lock updates share. A second concurrent caller simply waits.
//!
//! ## Limits
//! The tick number is a `u32`: at 20 Hz it wraps after 6.8 years of uptime, and raid bursts
//! spawned just before the wrap would then never expire. A server restarts long before.
//!
//! ## What readers get, and why it needs no reclamation
//! Readers (the stats endpoint, raid spawns reading the current tick) need a handful of numbers that must agree with each other: the tick number,
//! its server time, and the live counts it saw. They are published on a [`TickBoard`], a
//! sequence lock over a fixed block of atomic words that the tick rewrites in place. Nothing
//! is ever freed or swapped out, so there is nothing to reclaim and no reader can hold a
//! pointer to a retired version: crossbeam-epoch (or an `Arc` swap) would add an allocation
//! per tick to solve a problem this structure does not have. Every word is an atomic, so a
//! reader racing the writer reads stale-but-defined values and retries; the protocol is
//! model-checked in `tests/loom/tick_board.rs`.

use crate::sync::{AtomicU32, AtomicU64, Ordering, fence};

/// The per-tick summary readers get.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TickInfo {
    /// Tick number (0 before the first tick).
    pub tick: u32,
    /// Server time the tick ran at, milliseconds (the caller's clock).
    pub now_ms: u64,
    /// Players joined when the tick ran.
    pub players_live: u32,
    /// Raid objects alive after the tick's expiry pass.
    pub objects_live: u32,
    /// Raid objects the tick freed.
    pub objects_expired: u32,
    /// Raid bursts alive after the tick's expiry pass.
    pub bursts_live: u32,
    /// Entities in the world snapshot this tick published (0 if it published none: readers
    /// pinned every spare buffer, counted in `snapshots_skipped`).
    pub snapshot_entities: u32,
}

const WORDS: usize = 4;

impl TickInfo {
    fn pack(&self) -> [u64; WORDS] {
        [
            u64::from(self.tick) | (u64::from(self.snapshot_entities) << 32),
            self.now_ms,
            u64::from(self.players_live) | (u64::from(self.objects_live) << 32),
            u64::from(self.objects_expired) | (u64::from(self.bursts_live) << 32),
        ]
    }

    fn unpack(w: [u64; WORDS]) -> Self {
        Self {
            tick: w[0] as u32,
            snapshot_entities: (w[0] >> 32) as u32,
            now_ms: w[1],
            players_live: w[2] as u32,
            objects_live: (w[2] >> 32) as u32,
            objects_expired: w[3] as u32,
            bursts_live: (w[3] >> 32) as u32,
        }
    }
}

/// A single-writer sequence lock over a [`TickInfo`].
///
/// Writer (one at a time; the tick's mutex guarantees it): make the sequence odd, store the
/// words, make it even again. Reader: read an even sequence, read the words, read the
/// sequence again; equal means the words belong together. Readers never block the writer.
#[derive(Debug)]
pub struct TickBoard {
    /// Even: stable; odd: a write is in progress. Written by the tick, read by anyone.
    sequence: AtomicU32,
    /// The packed [`TickInfo`]. Written by the tick, read by anyone.
    words: [AtomicU64; WORDS],
    /// The current tick number alone, for readers that need only that (raid spawn).
    tick: AtomicU32,
}

impl Default for TickBoard {
    fn default() -> Self {
        Self::new()
    }
}

impl TickBoard {
    /// A board showing `TickInfo::default()`.
    pub fn new() -> Self {
        Self { sequence: AtomicU32::new(0), words: std::array::from_fn(|_| AtomicU64::new(0)), tick: AtomicU32::new(0) }
    }

    /// Publishes `info`. Must not be called from two threads at once.
    pub fn publish(&self, info: &TickInfo) {
        let seq = self.sequence.load(Ordering::Relaxed);
        debug_assert!(seq.is_multiple_of(2), "two writers on one tick board");
        self.sequence.store(seq.wrapping_add(1), Ordering::Relaxed);
        // Orders the odd sequence before the data stores (a reader that sees new data then
        // also sees the odd or a later sequence on its second read).
        fence(Ordering::Release);
        for (word, value) in self.words.iter().zip(info.pack()) {
            word.store(value, Ordering::Relaxed);
        }
        self.sequence.store(seq.wrapping_add(2), Ordering::Release);
        self.tick.store(info.tick, Ordering::Release);
    }

    /// Reads a consistent [`TickInfo`].
    pub fn read(&self) -> TickInfo {
        let mut attempts = 0u32;
        loop {
            let before = self.sequence.load(Ordering::Acquire);
            if before.is_multiple_of(2) {
                let mut words = [0u64; WORDS];
                for (out, word) in words.iter_mut().zip(&self.words) {
                    *out = word.load(Ordering::Relaxed);
                }
                // Orders the data loads before the second sequence load.
                fence(Ordering::Acquire);
                if self.sequence.load(Ordering::Relaxed) == before {
                    return TickInfo::unpack(words);
                }
            }
            attempts += 1;
            backoff(attempts);
        }
    }

    /// The current tick number.
    pub fn current_tick(&self) -> u32 {
        self.tick.load(Ordering::Acquire)
    }
}

#[cfg(mmo_loom)]
fn backoff(_attempts: u32) {
    loom::thread::yield_now();
}

/// How many times a reader retries before it yields the CPU between attempts. A writer
/// holds the board for a few stores, so a reader normally succeeds on the first or second try.
#[cfg(not(mmo_loom))]
const READ_SPINS_BEFORE_YIELD: u32 = 64;

#[cfg(not(mmo_loom))]
fn backoff(attempts: u32) {
    if attempts < READ_SPINS_BEFORE_YIELD {
        std::hint::spin_loop();
    } else {
        std::thread::yield_now();
    }
}

#[cfg(all(test, not(mmo_loom)))]
mod tests {
    use super::*;

    #[test]
    fn readers_never_see_a_torn_summary() {
        let board = TickBoard::new();
        let info = |t: u32| TickInfo {
            tick: t,
            now_ms: u64::from(t) * 50,
            players_live: t,
            objects_live: t ^ 0xFFFF,
            objects_expired: t / 2,
            bursts_live: t % 7,
            snapshot_entities: t.wrapping_mul(3),
        };
        board.publish(&info(0));
        let stop = std::sync::atomic::AtomicBool::new(false);
        std::thread::scope(|s| {
            s.spawn(|| {
                for t in 1..=200_000u32 {
                    board.publish(&info(t));
                }
                stop.store(true, std::sync::atomic::Ordering::Release);
            });
            s.spawn(|| {
                let mut last = 0;
                while !stop.load(std::sync::atomic::Ordering::Acquire) {
                    let i = board.read();
                    assert_eq!(i.now_ms, u64::from(i.tick) * 50);
                    assert_eq!(i.players_live, i.tick);
                    assert_eq!(i.objects_live, i.tick ^ 0xFFFF);
                    assert_eq!(i.objects_expired, i.tick / 2);
                    assert_eq!(i.bursts_live, i.tick % 7);
                    assert_eq!(i.snapshot_entities, i.tick.wrapping_mul(3));
                    assert!(i.tick >= last, "ticks never go backwards");
                    last = i.tick;
                }
            });
        });
        assert_eq!(board.read().tick, 200_000);
        assert_eq!(board.current_tick(), 200_000);
    }
}
