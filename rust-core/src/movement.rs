//! Movement: player bodies and the rules a move must pass.
//!
//! A body holds what the movement rules need (position, facing, last sequence, the distance
//! budget and the server time it was last brought up to, the cell it is registered in). Bodies live in a dense table indexed
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
//!    replayed or reordered datagram is refused ([`RejectReason::StaleSequence`]); the first
//!    move after join may carry any sequence, as the front's replay window admits any first
//!    sequence (a client starting at `0x8000_0000` is not locked out by either);
//! 3. the position is finite and inside the world ([`RejectReason::OutOfBounds`]);
//! 4. the distance covered fits the body's **distance budget** ([`RejectReason::TooFast`]).
//!
//! The budget is kept on the server's clock only. It starts full at a join (an account's
//! player resumes the budget its last session left instead, [`CarriedBody`]), accrues
//! `max_speed` times the *server* time that passed (the batch's `now_ms`), is capped at the
//! fixed allowance `max_speed * clock_slack_ms + speed_slack_m` (3.5 m by default), and each
//! applied move spends its length. So over any window of server time `T` a player covers at
//! most `max_speed * T + allowance`, however many moves it sends and whatever its
//! `client_time_ms` says: the client's clock is echoed in the ack, never credited. The
//! allowance is what absorbs network jitter (a late datagram followed by an early one) and
//! the first move's distance from the spawn point; it does not grow with the number of moves.
//!
//! Budgets are integer micrometres and speeds integer micrometres per millisecond (rounded
//! down), and a move's length is rounded *up* to the next micrometre, so the arithmetic is
//! exact and conservative and the baseline engine computes the same verdict bit for bit.
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
use crate::reserved::ReservedTable;
use crossbeam_queue::ArrayQueue;
use parking_lot::Mutex;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};

/// A body's mutable state, guarded by the body's own lock.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct BodyState {
    /// Owning player id.
    pub player_id: u64,
    /// The owning session's token, checked by every move (set by spawn with the id).
    pub session_token: u64,
    /// Position, metres.
    pub x_m: f32,
    /// Position, metres.
    pub y_m: f32,
    /// Facing, radians.
    pub facing_rad: f32,
    /// Sequence of the last applied move (0 at join, meaningless until `has_moved`).
    pub last_sequence: u32,
    /// Micrometres the body may still cover as of `budget_ms` (meaningless until `budget_set`:
    /// the budget is full at a join that resumed none).
    pub budget_um: u64,
    /// Server clock (a batch's `now_ms`) the budget was last brought up to: the latest
    /// `now_ms` of an applied move.
    pub budget_ms: u64,
    /// Whether any move of this session has been applied yet (the first may carry any
    /// sequence; whether it finds the budget full is `budget_set`'s business).
    pub has_moved: bool,
    /// Whether `budget_um` and `budget_ms` hold a reckoned budget: set by the first applied
    /// move, or at join from the budget the account's last session left
    /// ([`CarriedBody`]), so a reconnect does not refill it.
    pub budget_set: bool,
    /// Server clock from which this player's next attack may land (0 at join). Written by
    /// the player's landed attacks, under this lock.
    pub attack_ready_ms: u64,
    /// Server clock until which the player is in combat: a leave before then lingers
    /// (`logout_linger_ms`). Raised, never lowered, by every landed hit between two players,
    /// on both bodies, under this lock.
    pub combat_until_ms: u64,
    /// The grid cell the body is registered in.
    pub cell: CellKey,
    /// Cleared by leave, under the lock, before the body is freed.
    pub alive: bool,
    /// Payload of the last applied move.
    pub payload: [u8; 32],
}

/// What a body carries from its account's last session to the next (taken at leave, given
/// back at the account's next join), so a reconnect neither refills the distance budget, nor
/// ends the attack cooldown, nor brings the dead back early, nor ends a fight.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CarriedBody {
    /// [`BodyState::attack_ready_ms`].
    pub attack_ready_ms: u64,
    /// [`BodyState::budget_um`].
    pub budget_um: u64,
    /// [`BodyState::budget_ms`].
    pub budget_ms: u64,
    /// [`BodyState::budget_set`].
    pub budget_set: bool,
    /// [`Body::respawn_at_ms`]: 0 alive, else when the dead player respawns.
    pub respawn_at_ms: u64,
    /// [`BodyState::combat_until_ms`]: so leaving, coming back and leaving again still lingers.
    pub combat_until_ms: u64,
}

impl CarriedBody {
    /// What a body's state and respawn time carry over.
    pub fn of(state: &BodyState, respawn_at_ms: u64) -> Self {
        Self {
            attack_ready_ms: state.attack_ready_ms,
            budget_um: state.budget_um,
            budget_ms: state.budget_ms,
            budget_set: state.budget_set,
            respawn_at_ms,
            combat_until_ms: state.combat_until_ms,
        }
    }
}

/// One player body: its state behind its own lock.
#[derive(Debug, Default)]
pub struct Body {
    /// The body's state. Writers: the thread applying this player's move, its attacks (the
    /// cooldown), join and leave. Lockers besides: its loot claims, a kill of its player
    /// (marking it dead) and the tick respawning it. Readers: the player view.
    pub state: Mutex<BodyState>,
    /// 0 while the body's player is alive; once it is dead, the server time (ms) from which
    /// the tick respawns it. Written only under `state`'s lock (by the kill that took the last
    /// hit point, a join resuming a dead account, leave and the respawning tick), so a mover
    /// holding the lock reads it exactly; the tick reads it without the lock to find the due
    /// bodies (then locks each and looks again).
    pub respawn_at_ms: AtomicU64,
}

impl Body {
    /// Whether the body's player is dead (until the tick respawns it). Exact for a caller
    /// holding `state`'s lock, which every write of the mark holds.
    #[inline]
    pub fn dead(&self) -> bool {
        self.respawn_at_ms.load(Ordering::Relaxed) != 0
    }
}

/// The limits a move is checked against, derived from the config once.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MoveRules {
    /// The speed limit in micrometres per millisecond (millimetres per second), rounded down.
    pub speed_um_per_ms: u64,
    /// The budget's cap, micrometres: `speed * clock_slack_ms + speed_slack_m`.
    pub allowance_um: u64,
}

/// The body's distance budget after an applied move: what [`MoveRules::check`] hands back for
/// the mover to store.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Budget {
    /// Micrometres left.
    pub left_um: u64,
    /// Server clock it is reckoned at.
    pub at_ms: u64,
}

impl MoveRules {
    /// The rules for a speed limit (m/s), a jitter window (ms) and a fixed slack (m), all
    /// validated finite and non-negative by the config.
    pub fn new(max_speed_m_per_s: f32, clock_slack_ms: u32, speed_slack_m: f32) -> Self {
        // `as` from a float saturates, so an absurd (but finite) speed cannot wrap.
        let speed_um_per_ms = (f64::from(max_speed_m_per_s) * 1_000.0) as u64;
        let slack_um = (f64::from(speed_slack_m) * 1_000_000.0) as u64;
        let allowance_um = speed_um_per_ms.saturating_mul(u64::from(clock_slack_ms)).saturating_add(slack_um);
        Self { speed_um_per_ms, allowance_um }
    }

    /// A move's length in micrometres, rounded up (in `f64`, whose square root is correctly
    /// rounded, so both engines agree). Positions must be finite (the bounds test runs first).
    #[inline]
    pub fn length_um(from_x: f32, from_y: f32, to_x: f32, to_y: f32) -> u64 {
        let (dx, dy) = (f64::from(to_x) - f64::from(from_x), f64::from(to_y) - f64::from(from_y));
        ((dx * dx + dy * dy).sqrt() * 1_000_000.0).ceil() as u64
    }

    /// The budget as of `now_ms`: full before the first move (unless a join resumed one), else what was left plus what
    /// accrued since, capped. A batch clock older than the budget's accrues nothing (and the
    /// budget keeps its newer time, so no interval is credited twice).
    #[inline]
    pub fn budget_at(&self, prev: &BodyState, now_ms: u64) -> Budget {
        if !prev.budget_set {
            return Budget { left_um: self.allowance_um, at_ms: now_ms };
        }
        let elapsed_ms = now_ms.saturating_sub(prev.budget_ms);
        let accrued = prev.budget_um.saturating_add(self.speed_um_per_ms.saturating_mul(elapsed_ms));
        Budget { left_um: accrued.min(self.allowance_um), at_ms: now_ms.max(prev.budget_ms) }
    }

    /// Checks a move against the body's previous state. `in_world` is the grid's bounds test.
    /// On success hands back the budget the body is left with.
    #[inline]
    pub fn check(&self, prev: &BodyState, rec: &MoveRecord, now_ms: u64, in_world: bool) -> Result<Budget, RejectReason> {
        if prev.has_moved && (rec.sequence.wrapping_sub(prev.last_sequence) as i32) <= 0 {
            return Err(RejectReason::StaleSequence);
        }
        if !in_world || !rec.facing_rad.is_finite() {
            return Err(RejectReason::OutOfBounds);
        }
        let budget = self.budget_at(prev, now_ms);
        let length_um = Self::length_um(prev.x_m, prev.y_m, rec.x_m, rec.y_m);
        if length_um > budget.left_um {
            return Err(RejectReason::TooFast);
        }
        Ok(Budget { left_um: budget.left_um - length_um, at_ms: budget.at_ms })
    }
}

/// The body table and its slots.
pub struct Movement {
    /// Bodies by slot. Re-initialised by join, marked dead by leave, locked by every move of
    /// the slot's player.
    bodies: ReservedTable<Body>,
    /// Slots returned by leave, handed out again by join (lock-free; sized for every slot, so
    /// a push never fails).
    free: ArrayQueue<u32>,
    /// Slots handed out at least once: slots `0..high_water` are the only ones ever used.
    /// Written by join (fetch-add), read by the snapshot build.
    high_water: AtomicU32,
}

impl Movement {
    /// A table for `capacity` players. The tables are [`ReservedTable`]s: a slot's memory
    /// becomes resident when a join first uses it.
    pub fn new(capacity: u32) -> Self {
        // SAFETY: every bit of a `Body` may be zero: its lock is a parking_lot `Mutex`, whose
        // raw lock is one `AtomicU8` where 0 means unlocked, its state is plain integers,
        // floats (0.0), booleans (false) and a byte array, and `respawn_at_ms` an `AtomicU64`
        // (0: alive). All-zero is `Body::default()`.
        let bodies = unsafe { ReservedTable::<Body>::new_zeroed(capacity as usize) };
        debug_assert!(bodies.first().is_none_or(|b| *b.state.lock() == BodyState::default()));
        Self { bodies, free: ArrayQueue::new(capacity.max(1) as usize), high_water: AtomicU32::new(0) }
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

    /// Puts a player's body in `slot` at a spawn point in `cell`, with what its account's last
    /// session left it (`CarriedBody::default()` for a fresh start). (Who holds a slot is the
    /// grid's table: `Grid::insert_player` and `Grid::remove_player`.)
    pub fn spawn(&self, slot: u32, player_id: u64, session_token: u64, (x, y): (f32, f32), cell: CellKey, carried: &CarriedBody) {
        let body = &self.bodies[slot as usize];
        let mut state = body.state.lock();
        *state = BodyState {
            player_id,
            session_token,
            x_m: x,
            y_m: y,
            cell,
            alive: true,
            attack_ready_ms: carried.attack_ready_ms,
            budget_um: carried.budget_um,
            budget_ms: carried.budget_ms,
            budget_set: carried.budget_set,
            combat_until_ms: carried.combat_until_ms,
            ..BodyState::default()
        };
        body.respawn_at_ms.store(carried.respawn_at_ms, Ordering::Release);
        drop(state);
    }

    /// What a join ticket hands the front for `slot` ([`crate::players::JoinTicket::slot_hint`]):
    /// the slot plus one, so 0 means no hint. Slots are below `player_capacity` (at most 2^24).
    #[inline]
    pub fn slot_hint(slot: u32) -> u32 {
        debug_assert!(slot < u32::MAX, "slots stay far below u32::MAX");
        slot + 1
    }

    /// The slot a move's `slot_hint` names, if it is one that was ever handed out: 0 and
    /// anything past the high-water mark are `None`, so any u32 is safe to pass.
    #[inline]
    pub fn hinted_slot(&self, slot_hint: u32) -> Option<u32> {
        let slot = slot_hint.checked_sub(1)?;
        (slot < self.slots_used()).then_some(slot)
    }

    /// Frees `slot` (its body already marked dead and out of the grid by leave) for a later
    /// join.
    pub fn release(&self, slot: u32) {
        let pushed = self.free.push(slot);
        debug_assert!(pushed.is_ok(), "the free list holds every slot");
    }

    /// The body in `slot`.
    #[inline]
    pub fn body(&self, slot: u32) -> &Body {
        &self.bodies[slot as usize]
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
    use proptest::prelude::*;

    /// 10 m/s, 250 ms of jitter and 0.5 m: a 3 m allowance.
    fn rules() -> MoveRules {
        MoveRules::new(10.0, 250, 0.5)
    }

    /// A body that has moved, with an empty budget as of server time 5 s.
    fn state() -> BodyState {
        BodyState {
            player_id: 1,
            x_m: 100.0,
            y_m: 100.0,
            last_sequence: 10,
            budget_um: 0,
            budget_ms: 5_000,
            has_moved: true,
            budget_set: true,
            alive: true,
            ..BodyState::default()
        }
    }

    fn mv(seq: u32, t: u32, x: f32, y: f32) -> MoveRecord {
        MoveRecord { player_id: 1, session_token: 1, sequence: seq, client_time_ms: t, x_m: x, y_m: y, ..Default::default() }
    }

    #[test]
    fn rules_are_integer_and_rounded_down() {
        assert_eq!(rules(), MoveRules { speed_um_per_ms: 10_000, allowance_um: 3_000_000 });
        assert_eq!(MoveRules::new(12.0, 250, 0.5), MoveRules { speed_um_per_ms: 12_000, allowance_um: 3_500_000 });
        // Absurd but finite limits saturate instead of wrapping.
        assert_eq!(MoveRules::new(f32::MAX, u32::MAX, f32::MAX).allowance_um, u64::MAX);
        assert_eq!(MoveRules::length_um(0.0, 0.0, 3.0, 4.0), 5_000_000);
        assert_eq!(MoveRules::length_um(0.0, 0.0, 0.0, 0.0), 0);
    }

    #[test]
    fn sequence_must_be_newer_in_serial_arithmetic() {
        let r = rules();
        let prev = BodyState { budget_um: r.allowance_um, ..state() };
        assert_eq!(r.check(&prev, &mv(10, 1100, 100.0, 100.0), 5_100, true), Err(RejectReason::StaleSequence));
        assert_eq!(r.check(&prev, &mv(9, 1100, 100.0, 100.0), 5_100, true), Err(RejectReason::StaleSequence));
        assert!(r.check(&prev, &mv(11, 1100, 100.0, 100.0), 5_100, true).is_ok());
        let wrapped = BodyState { last_sequence: u32::MAX - 1, ..prev };
        assert!(r.check(&wrapped, &mv(3, 1100, 100.0, 100.0), 5_100, true).is_ok(), "wraps around");
        assert_eq!(r.check(&wrapped, &mv(u32::MAX - 5, 1100, 100.0, 100.0), 5_100, true), Err(RejectReason::StaleSequence));
    }

    #[test]
    fn the_first_move_may_carry_any_sequence() {
        // The front's replay window admits any first sequence; so does the engine, or a client
        // starting at 0x8000_0000 would be admitted by one and refused by the other for good.
        let r = rules();
        let fresh = BodyState { has_moved: false, budget_set: false, last_sequence: 0, budget_um: 0, budget_ms: 0, ..state() };
        for first in [0, 1, 0x7FFF_FFFF, 0x8000_0000, 0x8000_0001, u32::MAX] {
            assert!(r.check(&fresh, &mv(first, 0, 100.0, 100.0), 5_000, true).is_ok(), "first sequence {first:#x}");
            let after =
                BodyState { has_moved: true, budget_set: true, last_sequence: first, budget_um: r.allowance_um, budget_ms: 5_000, ..fresh };
            assert!(r.check(&after, &mv(first.wrapping_add(1), 0, 100.0, 100.0), 5_050, true).is_ok());
            assert_eq!(r.check(&after, &mv(first, 0, 100.0, 100.0), 5_050, true), Err(RejectReason::StaleSequence));
        }
    }

    #[test]
    fn the_budget_accrues_with_server_time_only() {
        let r = rules();
        let prev = state();
        // 100 ms of server time at 10 m/s: 1 m, whatever the client's clock says.
        for client_ms in [0, 1_100, 11_000, u32::MAX] {
            assert_eq!(r.check(&prev, &mv(11, client_ms, 100.99, 100.0), 5_100, true).map(|b| b.at_ms), Ok(5_100));
            assert_eq!(r.check(&prev, &mv(11, client_ms, 101.01, 100.0), 5_100, true), Err(RejectReason::TooFast));
        }
        // What is not spent stays.
        let left = r.check(&prev, &mv(11, 0, 100.25, 100.0), 5_100, true).unwrap();
        assert_eq!(left, Budget { left_um: 750_000, at_ms: 5_100 });
        // No server time, no budget: a second move in the same batch has only what is left.
        let after = BodyState { x_m: 100.25, last_sequence: 11, budget_um: left.left_um, budget_ms: left.at_ms, ..prev };
        assert!(r.check(&after, &mv(12, 0, 100.99, 100.0), 5_100, true).is_ok());
        assert_eq!(r.check(&after, &mv(12, 0, 101.01, 100.0), 5_100, true), Err(RejectReason::TooFast));
    }

    #[test]
    fn the_budget_is_capped_at_the_allowance() {
        let r = rules();
        let prev = state();
        // A player that stood still for an hour still has only the 3 m allowance.
        assert!(r.check(&prev, &mv(11, 0, 102.99, 100.0), 3_605_000, true).is_ok());
        assert_eq!(r.check(&prev, &mv(11, 0, 103.01, 100.0), 3_605_000, true), Err(RejectReason::TooFast));
        // The first move after join finds the budget full.
        let fresh = BodyState { has_moved: false, budget_set: false, last_sequence: 0, budget_um: 0, budget_ms: 0, ..prev };
        assert!(r.check(&fresh, &mv(1, 0, 102.99, 100.0), 5_000, true).is_ok());
        assert_eq!(r.check(&fresh, &mv(1, 0, 103.01, 100.0), 5_000, true), Err(RejectReason::TooFast));
    }

    #[test]
    fn a_server_clock_going_backwards_credits_nothing_twice() {
        let r = rules();
        let prev = state();
        // An older batch clock accrues nothing and keeps the newer reckoning time.
        assert_eq!(r.check(&prev, &mv(11, 0, 100.0, 100.0), 4_000, true), Ok(Budget { left_um: 0, at_ms: 5_000 }));
        assert_eq!(r.check(&prev, &mv(11, 0, 100.01, 100.0), 4_000, true), Err(RejectReason::TooFast));
    }

    #[test]
    fn bounds_and_nan() {
        let r = rules();
        let prev = state();
        assert_eq!(r.check(&prev, &mv(11, 1_100, 100.0, 100.0), 5_100, false), Err(RejectReason::OutOfBounds));
        let mut nan_facing = mv(11, 1_100, 100.0, 100.0);
        nan_facing.facing_rad = f32::NAN;
        assert_eq!(r.check(&prev, &nan_facing, 5_100, true), Err(RejectReason::OutOfBounds));
    }

    /// One attempted move: server time since the previous attempt, the step the client asks
    /// for (any length, any direction) and any client clock.
    fn attempts() -> impl Strategy<Value = Vec<(u64, f32, f32, u32)>> {
        prop::collection::vec((0u64..400, 0f32..8.0, 0f32..std::f32::consts::TAU, any::<u32>()), 1..160)
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

        /// Whatever the moves and the client's clocks, over every window of server time the
        /// applied moves cover at most `speed * window + allowance` (exactly, in micrometres
        /// of true `f64` length).
        #[test]
        fn no_sequence_of_moves_beats_the_speed_limit(steps in attempts(), speed in 1f32..20.0, slack_ms in 0u32..500, slack_m in 0f32..1.0) {
            let r = MoveRules::new(speed, slack_ms, slack_m);
            let mut body = BodyState { x_m: 2_000.0, y_m: 2_000.0, alive: true, ..BodyState::default() };
            let mut now_ms = 1_000u64;
            // (server time, true length in µm) of each applied move.
            let mut applied: Vec<(u64, f64)> = Vec::new();
            for (i, &(dt_ms, step_m, angle, client_ms)) in steps.iter().enumerate() {
                now_ms += dt_ms;
                let (x, y) = (body.x_m + step_m * angle.cos(), body.y_m + step_m * angle.sin());
                let rec = mv(i as u32 + 1, client_ms, x, y);
                if let Ok(left) = r.check(&body, &rec, now_ms, true) {
                    let (dx, dy) = (f64::from(x) - f64::from(body.x_m), f64::from(y) - f64::from(body.y_m));
                    applied.push((now_ms, (dx * dx + dy * dy).sqrt() * 1e6));
                    body = BodyState { x_m: x, y_m: y, last_sequence: rec.sequence, budget_um: left.left_um, budget_ms: left.at_ms, has_moved: true, budget_set: true, ..body };
                }
            }
            // Windows [t_a, t_b] starting at join (a = none) or at an applied move.
            for a in 0..=applied.len() {
                let (start_ms, first) = if a == 0 { (applied.first().map_or(0, |m| m.0), 0) } else { (applied[a - 1].0, a) };
                let mut covered_um = 0.0f64;
                for &(at_ms, len_um) in &applied[first..] {
                    covered_um += len_um;
                    let limit_um = (r.speed_um_per_ms * (at_ms - start_ms) + r.allowance_um) as f64;
                    prop_assert!(covered_um <= limit_um, "covered {covered_um} µm in {} ms, limit {limit_um}", at_ms - start_ms);
                }
            }
        }
    }

    #[test]
    fn slots_are_reused_after_release_and_never_exceed_capacity() {
        let m = Movement::new(3);
        let slots: Vec<u32> = (0..3).map(|_| m.claim_slot().unwrap()).collect();
        assert_eq!(slots, vec![0, 1, 2]);
        assert_eq!(m.claim_slot(), None, "full");
        m.spawn(1, 77, 0xABCD, (5.0, 6.0), 0, &CarriedBody::default());
        let state = *m.body(1).state.lock();
        assert_eq!((state.player_id, state.session_token, state.alive), (77, 0xABCD, true));
        // A join's hint names its slot; a move's hint names a slot only if one that far was
        // ever handed out.
        assert_eq!(m.hinted_slot(Movement::slot_hint(1)), Some(1));
        assert_eq!(m.hinted_slot(Movement::slot_hint(2)), Some(2));
        for hint in [0, Movement::slot_hint(3), u32::MAX] {
            assert_eq!(m.hinted_slot(hint), None, "hint {hint}");
        }
        m.release(1);
        assert_eq!(m.claim_slot(), Some(1), "a released slot comes back");
        assert_eq!(m.slots_used(), 3);
    }
}
