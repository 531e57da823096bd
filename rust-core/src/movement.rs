//! Movement: player bodies and the rules a move must pass.
//!
//! A body holds what the movement rules need (position, facing, last sequence, the clocks of
//! the last accepted move, the cell it is registered in). Bodies live in a dense table indexed
//! by the player's *slot*, a small integer handed out at join from a lock-free free list and
//! returned at leave; the player record (the one sharded-slab lookup a move makes, see
//! [`crate::players`]) carries the slot. The same slot indexes the grid's position table
//! ([`crate::grid::PositionTable`]), which is what a move in its cell writes instead of its
//! cell. The table is allocated once for the configured player capacity, so joining never
//! allocates and a slot is never moved.
//!
//! Rules, checked in this order for each [`MoveRecord`] (each refusal counted by reason):
//! 1. the player exists and the session token matches ([`RejectReason::UnknownPlayer`],
//!    [`RejectReason::WrongSession`]);
//! 2. the sequence is newer than the last applied one in serial arithmetic (RFC 1982), so a
//!    replayed or reordered datagram is refused ([`RejectReason::StaleSequence`]);
//! 3. the position is finite and inside the world ([`RejectReason::OutOfBounds`]);
//! 4. the distance covered is at most `max_speed * dt + speed_slack`, where `dt` is the client's
//!    clock delta capped by the server's own clock delta plus `clock_slack_ms`; for the first
//!    move after join `dt` is `clock_slack_ms` ([`RejectReason::TooFast`]).
//!
//! Concurrency contract: each body has its own `parking_lot::Mutex` (one byte, uncontended in
//! practice because one player's datagrams arrive on one network worker; waits on it are
//! counted, see [`crate::locks`]). It is the only lock a move takes besides a grid shard when
//! it crosses cells or looks for contacts, and it is per player. While holding it, the mover
//! writes the body, the player's position in the grid's table and, on a crossing, the player's
//! cell membership, so a player's grid state always agrees with its body once the lock is
//! released. A slot's body is re-initialised under its lock at join and marked dead under it at
//! leave; a mover that looked the player up before a leave finds `alive == false` or another
//! `player_id` there and refuses the move.

use crate::grid::CellKey;
use crate::records::{MoveRecord, RejectReason};
use crossbeam_queue::ArrayQueue;
use parking_lot::Mutex;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};

/// A body's mutable state, guarded by the body's own lock.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct BodyState {
    /// Owning player id.
    pub player_id: u64,
    /// Position, metres.
    pub x_m: f32,
    /// Position, metres.
    pub y_m: f32,
    /// Facing, radians.
    pub facing_rad: f32,
    /// Sequence of the last applied move (0 at join: the first move must be newer).
    pub last_sequence: u32,
    /// Client clock of the last applied move.
    pub last_client_ms: u32,
    /// Server clock (the batch's `now_ms`) of the last applied move (0 before the first).
    pub last_server_ms: u64,
    /// Whether any move has been applied yet (the first has no client clock to compare).
    pub has_moved: bool,
    /// The grid cell the body is registered in.
    pub cell: CellKey,
    /// Cleared by leave, under the lock, before the body is freed.
    pub alive: bool,
    /// Payload of the last applied move.
    pub payload: [u8; 32],
}

/// One player body: its state behind its own lock.
#[derive(Debug, Default)]
pub struct Body {
    /// The body's state. Writers: the thread applying this player's move, join and leave.
    /// Readers: the player view.
    pub state: Mutex<BodyState>,
}

/// The limits a move is checked against, copied out of the config once.
#[derive(Clone, Copy, Debug)]
pub struct MoveRules {
    /// Metres per millisecond.
    pub max_speed_m_per_ms: f32,
    /// Extra metres allowed per move.
    pub speed_slack_m: f32,
    /// Milliseconds the client clock may run ahead of the server clock.
    pub clock_slack_ms: u32,
}

impl MoveRules {
    /// Checks a move against the body's previous state. `in_world` is the grid's bounds test.
    #[inline]
    pub fn check(&self, prev: &BodyState, rec: &MoveRecord, now_ms: u64, in_world: bool) -> Result<(), RejectReason> {
        if (rec.sequence.wrapping_sub(prev.last_sequence) as i32) <= 0 {
            return Err(RejectReason::StaleSequence);
        }
        if !in_world || !rec.facing_rad.is_finite() {
            return Err(RejectReason::OutOfBounds);
        }
        let dt_ms = if prev.has_moved {
            let server_dt_ms = now_ms.saturating_sub(prev.last_server_ms).min(u32::MAX as u64) as u32;
            let client_dt = rec.client_time_ms.wrapping_sub(prev.last_client_ms) as i32;
            (client_dt.max(0) as u32).min(server_dt_ms.saturating_add(self.clock_slack_ms))
        } else {
            // The first move after join has no earlier clock to compare with: it may be at
            // most one clock slack's worth of movement from the spawn point.
            self.clock_slack_ms
        };
        let (dx, dy) = (rec.x_m - prev.x_m, rec.y_m - prev.y_m);
        let allowed_m = self.max_speed_m_per_ms * dt_ms as f32 + self.speed_slack_m;
        if dx * dx + dy * dy > allowed_m * allowed_m {
            return Err(RejectReason::TooFast);
        }
        Ok(())
    }
}

/// The body table and its slots.
pub struct Movement {
    /// Bodies by slot. Re-initialised by join, marked dead by leave, locked by every move of
    /// the slot's player.
    bodies: Box<[Body]>,
    /// Player id by slot, 0 for a free slot. Written by join and leave; read by the tick's
    /// snapshot build.
    occupants: Box<[AtomicU64]>,
    /// Slots returned by leave, handed out again by join (lock-free; sized for every slot, so
    /// a push never fails).
    free: ArrayQueue<u32>,
    /// Slots handed out at least once: slots `0..high_water` are the only ones ever used.
    /// Written by join (fetch-add), read by the snapshot build.
    high_water: AtomicU32,
}

impl Movement {
    /// A table for `capacity` players. The tables are allocated zeroed, which the allocator
    /// hands out as untouched pages: a slot's memory is touched when a join first uses it.
    pub fn new(capacity: u32) -> Self {
        let bodies = Box::<[Body]>::new_zeroed_slice(capacity as usize);
        // SAFETY: every bit of a `Body` may be zero: its lock is a parking_lot `Mutex`, whose
        // raw lock is one `AtomicU8` where 0 means unlocked, and its state is plain integers,
        // floats (0.0), booleans (false) and a byte array. All-zero is `Body::default()`.
        let bodies = unsafe { bodies.assume_init() };
        debug_assert!(bodies.first().is_none_or(|b| *b.state.lock() == BodyState::default()));
        Self {
            bodies,
            occupants: crate::grid::zeroed_atomics(capacity as usize),
            free: ArrayQueue::new(capacity.max(1) as usize),
            high_water: AtomicU32::new(0),
        }
    }

    /// Takes a free slot; `None` only when every slot is taken. Callers admit players through
    /// a capacity gate first, so a gated join always gets one.
    pub fn claim_slot(&self) -> Option<u32> {
        if let Some(slot) = self.free.pop() {
            return Some(slot);
        }
        let capacity = self.bodies.len() as u32;
        self.high_water.fetch_update(Ordering::AcqRel, Ordering::Acquire, |used| (used < capacity).then_some(used + 1)).ok()
    }

    /// Puts a player's body in `slot` at a spawn point in `cell` and marks the slot occupied.
    pub fn spawn(&self, slot: u32, player_id: u64, x: f32, y: f32, cell: CellKey) {
        *self.bodies[slot as usize].state.lock() = BodyState { player_id, x_m: x, y_m: y, cell, alive: true, ..BodyState::default() };
        self.occupants[slot as usize].store(player_id, Ordering::Release);
    }

    /// Frees `slot` (its body already marked dead by leave) for a later join.
    pub fn release(&self, slot: u32) {
        self.occupants[slot as usize].store(0, Ordering::Release);
        let pushed = self.free.push(slot);
        debug_assert!(pushed.is_ok(), "the free list holds every slot");
    }

    /// The body in `slot`.
    #[inline]
    pub fn body(&self, slot: u32) -> &Body {
        &self.bodies[slot as usize]
    }

    /// The player id in `slot` (0 when free).
    #[inline]
    pub fn occupant(&self, slot: u32) -> u64 {
        self.occupants[slot as usize].load(Ordering::Acquire)
    }

    /// Slots `0..slots_used()` are the only ones ever handed out.
    #[inline]
    pub fn slots_used(&self) -> u32 {
        self.high_water.load(Ordering::Acquire)
    }
}

#[cfg(all(test, not(mmo_loom)))]
mod tests {
    use super::*;

    const RULES: MoveRules = MoveRules { max_speed_m_per_ms: 0.01, speed_slack_m: 0.5, clock_slack_ms: 250 };

    fn state() -> BodyState {
        BodyState {
            player_id: 1,
            x_m: 100.0,
            y_m: 100.0,
            last_sequence: 10,
            last_client_ms: 1_000,
            last_server_ms: 5_000,
            has_moved: true,
            alive: true,
            ..BodyState::default()
        }
    }

    fn mv(seq: u32, t: u32, x: f32, y: f32) -> MoveRecord {
        MoveRecord { player_id: 1, session_token: 1, sequence: seq, client_time_ms: t, x_m: x, y_m: y, ..Default::default() }
    }

    #[test]
    fn sequence_must_be_newer_in_serial_arithmetic() {
        let prev = state();
        assert_eq!(RULES.check(&prev, &mv(10, 1100, 100.0, 100.0), 5_100, true), Err(RejectReason::StaleSequence));
        assert_eq!(RULES.check(&prev, &mv(9, 1100, 100.0, 100.0), 5_100, true), Err(RejectReason::StaleSequence));
        assert_eq!(RULES.check(&prev, &mv(11, 1100, 100.0, 100.0), 5_100, true), Ok(()));
        let wrapped = BodyState { last_sequence: u32::MAX - 1, ..prev };
        assert_eq!(RULES.check(&wrapped, &mv(3, 1100, 100.0, 100.0), 5_100, true), Ok(()), "wraps around");
        assert_eq!(RULES.check(&wrapped, &mv(u32::MAX - 5, 1100, 100.0, 100.0), 5_100, true), Err(RejectReason::StaleSequence));
    }

    #[test]
    fn speed_uses_client_clock_capped_by_server_clock() {
        let prev = state();
        // 100 ms at 10 m/s = 1 m, + 0.5 slack.
        assert_eq!(RULES.check(&prev, &mv(11, 1_100, 101.4, 100.0), 5_100, true), Ok(()));
        assert_eq!(RULES.check(&prev, &mv(11, 1_100, 101.6, 100.0), 5_100, true), Err(RejectReason::TooFast));
        // Client claims 10 s passed but the server saw 100 ms: credit is 100 + 250 ms.
        assert_eq!(RULES.check(&prev, &mv(11, 11_000, 103.9, 100.0), 5_100, true), Ok(()));
        assert_eq!(RULES.check(&prev, &mv(11, 11_000, 104.1, 100.0), 5_100, true), Err(RejectReason::TooFast));
        // A client clock going backwards gives no credit.
        assert_eq!(RULES.check(&prev, &mv(11, 900, 100.6, 100.0), 5_100, true), Err(RejectReason::TooFast));
        // First move: no earlier clock, so the credit is clock_slack_ms (2.5 m + 0.5 m slack).
        let fresh = BodyState { has_moved: false, last_sequence: 0, ..prev };
        assert_eq!(RULES.check(&fresh, &mv(1, 0, 103.0, 100.0), 5_000, true), Ok(()));
        assert_eq!(RULES.check(&fresh, &mv(1, 0, 103.1, 100.0), 5_000, true), Err(RejectReason::TooFast));
    }

    #[test]
    fn bounds_and_nan() {
        let prev = state();
        assert_eq!(RULES.check(&prev, &mv(11, 1_100, 100.0, 100.0), 5_100, false), Err(RejectReason::OutOfBounds));
        let mut nan_facing = mv(11, 1_100, 100.0, 100.0);
        nan_facing.facing_rad = f32::NAN;
        assert_eq!(RULES.check(&prev, &nan_facing, 5_100, true), Err(RejectReason::OutOfBounds));
    }

    #[test]
    fn slots_are_reused_after_release_and_never_exceed_capacity() {
        let m = Movement::new(3);
        let slots: Vec<u32> = (0..3).map(|_| m.claim_slot().unwrap()).collect();
        assert_eq!(slots, vec![0, 1, 2]);
        assert_eq!(m.claim_slot(), None, "full");
        m.spawn(1, 77, 5.0, 6.0, 0);
        assert_eq!(m.occupant(1), 77);
        m.release(1);
        assert_eq!(m.occupant(1), 0);
        assert_eq!(m.claim_slot(), Some(1), "a released slot comes back");
        assert_eq!(m.slots_used(), 3);
    }
}
