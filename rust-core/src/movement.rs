//! Movement: player bodies and the rules a move must pass.
//!
//! A body holds what the movement rules need (position, facing, last sequence, the clocks of
//! the last accepted move, the cell it is registered in). Bodies live in a sharded-slab arena
//! so any thread can create, find and free them without a shared lock.
//!
//! Rules, checked in this order for each [`MoveRecord`] (each refusal counted by reason):
//! 1. the player exists and the session token matches ([`RejectReason::UnknownPlayer`],
//!    [`RejectReason::WrongSession`]);
//! 2. the sequence is newer than the last applied one in serial arithmetic (RFC 1982), so a
//!    replayed or reordered datagram is refused ([`RejectReason::StaleSequence`]);
//! 3. the position is finite and inside the world ([`RejectReason::OutOfBounds`]);
//! 4. the distance covered is at most `max_speed * dt + speed_slack`, where `dt` is the client's
//!    clock delta capped by the server's own clock delta plus `clock_slack_ms`, so a client
//!    cannot bank time by lying about its clock; for the first move after join `dt` is
//!    `clock_slack_ms` ([`RejectReason::TooFast`]).
//!
//! Concurrency contract: each body has its own `parking_lot::Mutex` (one byte, uncontended in
//! practice because one player's datagrams arrive on one network worker). It is the only lock
//! a move takes besides one grid shard at a time, and it is per entity, never shared between
//! players. While holding it, the mover writes the body and that entity's grid entries, so an
//! entity's grid registration always agrees with its body once the lock is released. Readers
//! (AoI) lock the body only to copy its position out.

use crate::arena::ArenaConfig;
use crate::grid::CellKey;
use crate::records::{MoveRecord, RejectReason};
use parking_lot::Mutex;
use sharded_slab::Slab;

/// A body's mutable state, guarded by the body's own lock.
#[derive(Clone, Copy, Debug, PartialEq)]
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
#[derive(Debug)]
pub struct Body {
    /// The body's state. Writers: the thread applying this player's move, and leave.
    /// Readers: AoI (copies the position out).
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

/// The body arena.
pub struct Movement {
    /// Bodies keyed by the key stored in the player record. Inserted by join, removed by
    /// leave, read by every move of that player.
    bodies: Slab<Body, ArenaConfig>,
}

/// A borrowed body.
pub type BodyGuard<'a> = sharded_slab::Entry<'a, Body, ArenaConfig>;

impl Default for Movement {
    fn default() -> Self {
        Self::new()
    }
}

impl Movement {
    /// An empty arena.
    pub fn new() -> Self {
        Self { bodies: Slab::new_with_config::<ArenaConfig>() }
    }

    /// Creates a body at a spawn point in `cell`.
    pub fn spawn(&self, player_id: u64, x: f32, y: f32, cell: CellKey) -> Option<usize> {
        self.bodies.insert(Body {
            state: Mutex::new(BodyState {
                player_id,
                x_m: x,
                y_m: y,
                facing_rad: 0.0,
                last_sequence: 0,
                last_client_ms: 0,
                last_server_ms: 0,
                has_moved: false,
                cell,
                alive: true,
                payload: [0; 32],
            }),
        })
    }

    /// Finds a body.
    #[inline]
    pub fn get(&self, key: usize) -> Option<BodyGuard<'_>> {
        self.bodies.get(key)
    }

    /// Frees a body (deferred by sharded-slab until readers drop their guards).
    pub fn despawn(&self, key: usize) -> bool {
        self.bodies.remove(key)
    }

    /// Grows the calling thread's shard to hold `slots` bodies without allocating.
    pub(crate) fn prewarm_current_thread(&self, slots: usize) {
        crate::arena::prewarm(&self.bodies, slots, || Body {
            state: Mutex::new(BodyState {
                player_id: 0,
                x_m: 0.0,
                y_m: 0.0,
                facing_rad: 0.0,
                last_sequence: 0,
                last_client_ms: 0,
                last_server_ms: 0,
                has_moved: false,
                cell: 0,
                alive: false,
                payload: [0; 32],
            }),
        });
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
            facing_rad: 0.0,
            last_sequence: 10,
            last_client_ms: 1_000,
            last_server_ms: 5_000,
            has_moved: true,
            cell: 0,
            alive: true,
            payload: [0; 32],
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
}
