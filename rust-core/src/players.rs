//! Players: who is joined, with which session token, and which body, combatant and wallet
//! are theirs.
//!
//! A player id is the player record's sharded-slab key plus one (see [`crate::arena`]), so a
//! lookup is one slab `get` with no map and no lock, and the key's generation makes an id
//! from before a leave miss instead of finding whoever reuses the slot.
//!
//! Concurrency contract: records are immutable after insert except `stage`, an atomic that
//! moves forward only (live, then lingering or leaving, then leaving), each step won by
//! exactly one caller. Writers: join (insert) and leave, or the end of a linger (stage, then
//! remove);
//! readers: every service resolving a player id, from any thread. A reader holding a record's
//! guard keeps the slot from being reused until it drops the guard (sharded-slab defers the
//! removal), so what it read stays consistent; it may still be working with a player who is
//! in the middle of leaving, which each service handles (the body and wallet have their own
//! "closed" state checked under their own lock). No lock is taken here.

use crate::arena::{ArenaConfig, key_from_player_id, player_id_from_key};
use crate::capacity::CapacityGate;
use crate::economy::WalletHandle;
use sharded_slab::Slab;
use std::sync::atomic::{AtomicU8, Ordering};

/// What join hands back to the client.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct JoinTicket {
    /// The new player's id.
    pub player_id: u64,
    /// A random, non-zero session token the client must present with every request.
    pub session_token: u64,
    /// The player's movement slot plus one, for the front to pass back in every
    /// [`crate::records::MoveRecord::slot_hint`]: a move then finds its body without an arena
    /// lookup. Server-side only (the client never sees it).
    pub slot_hint: u32,
    /// Where the player stands, metres: the spawn point the join asked for or, for an
    /// account whose last session's body was still lingering, where that body stood.
    pub x_m: f32,
    /// See `x_m`.
    pub y_m: f32,
}

/// [`PlayerRecord`]'s stages: in session, ...
const STAGE_LIVE: u8 = 0;
/// ... its session ended while its body stays in the world (`logout_linger_ms`) ...
const STAGE_LINGERING: u8 = 1;
/// ... and being torn down by the one caller that won the leave (or the linger's end).
const STAGE_LEAVING: u8 = 2;

/// One joined player. Immutable after insert except `stage`.
#[derive(Debug)]
pub struct PlayerRecord {
    /// Random session token. Written at join, read by every authenticated request but a move
    /// (the body keeps a copy, which a move checks under the body's lock).
    pub session_token: u64,
    /// Movement slot: indexes the body table and the grid's position table. Written at join,
    /// read by leave and by a move whose slot hint missed (a move's hint usually names the
    /// slot; an area-of-interest query finds it in the snapshot).
    pub slot: u32,
    /// Key of the combatant. Written at join, read by combat.
    pub combatant_key: usize,
    /// Where the wallet lives. Written at join, read by the economy.
    pub wallet: WalletHandle,
    /// Faction, copied from the combatant for cheap friendly-fire checks.
    pub faction: u8,
    /// The account the player joined as (0: none). Written at join, read by leave (which
    /// keeps the player's combat state for the account's next session).
    pub account: u64,
    /// Live, lingering or leaving (the `STAGE_*` constants). Moved forward by the one `leave`
    /// call that wins and by whoever ends a linger (the tick, or the account's next join);
    /// read by every session check ([`PlayerRecord::in_session`]).
    stage: AtomicU8,
}

impl PlayerRecord {
    /// A record for a player about to be inserted.
    pub fn new(session_token: u64, slot: u32, combatant_key: usize, wallet: WalletHandle, faction: u8, account: u64) -> Self {
        Self { session_token, slot, combatant_key, wallet, faction, account, stage: AtomicU8::new(STAGE_LIVE) }
    }

    fn advance(&self, from: u8, to: u8) -> bool {
        self.stage.compare_exchange(from, to, Ordering::AcqRel, Ordering::Acquire).is_ok()
    }

    /// Claims the right to tear this player down now; `true` for exactly one caller, and
    /// never once the player lingers.
    pub fn claim_leave(&self) -> bool {
        self.advance(STAGE_LIVE, STAGE_LEAVING)
    }

    /// Ends the session but not the player: `true` for exactly one caller, which then owns
    /// the linger (the body stays in the world until [`PlayerRecord::claim_linger_end`]).
    pub fn begin_linger(&self) -> bool {
        self.advance(STAGE_LIVE, STAGE_LINGERING)
    }

    /// Claims the right to tear a lingering player down; `true` for exactly one caller (the
    /// tick whose time has come, or the account's next join).
    pub fn claim_linger_end(&self) -> bool {
        self.advance(STAGE_LINGERING, STAGE_LEAVING)
    }

    /// Whether `token` is this player's session's: the token it joined with, and a session
    /// that has not ended in a linger. (A player in the middle of an immediate leave still
    /// answers to its token: each service finds its body or wallet closed under their locks.)
    #[inline]
    pub fn in_session(&self, token: u64) -> bool {
        self.session_token == token && self.stage.load(Ordering::Acquire) != STAGE_LINGERING
    }
}

/// The player arena and its capacity gate.
pub struct Players {
    /// Player records keyed by `player_id - 1`. Written by join/leave, read by everyone.
    arena: Slab<PlayerRecord, ArenaConfig>,
    /// Live player count against `player_capacity`.
    gate: CapacityGate,
}

/// A borrowed player record; holding it keeps the slot from being reused.
pub type PlayerGuard<'a> = sharded_slab::Entry<'a, PlayerRecord, ArenaConfig>;

impl Players {
    /// An empty arena admitting at most `capacity` players.
    pub fn new(capacity: u32) -> Self {
        Self { arena: Slab::new_with_config::<ArenaConfig>(), gate: CapacityGate::new(capacity) }
    }

    /// Reserves room for one more player; `false` when full.
    pub fn admit(&self) -> bool {
        self.gate.try_acquire(1)
    }

    /// Returns a reservation taken by [`Players::admit`] that was not used.
    pub fn unadmit(&self) {
        self.gate.release(1);
    }

    /// Reserves a slot, learning the player id before the record exists (so the body and
    /// wallet can be created with it).
    pub fn vacant(&self) -> Option<sharded_slab::VacantEntry<'_, PlayerRecord, ArenaConfig>> {
        self.arena.vacant_entry()
    }

    /// The player id a vacant entry will have.
    pub fn id_of_vacant(entry: &sharded_slab::VacantEntry<'_, PlayerRecord, ArenaConfig>) -> u64 {
        player_id_from_key(entry.key())
    }

    /// Looks a player up; `None` for an unknown, departed or malformed id.
    #[inline]
    pub fn get(&self, player_id: u64) -> Option<PlayerGuard<'_>> {
        self.arena.get(key_from_player_id(player_id)?)
    }

    /// Removes a player's record (after its services are torn down) and frees its capacity.
    pub fn remove(&self, player_id: u64) -> bool {
        let removed = key_from_player_id(player_id).is_some_and(|key| self.arena.remove(key));
        if removed {
            self.gate.release(1);
        }
        removed
    }

    /// Players joined right now.
    pub fn live(&self) -> u32 {
        self.gate.in_use()
    }
}

/// A random, non-zero session token from the OS's CSPRNG.
pub fn new_session_token() -> u64 {
    loop {
        let mut bytes = [0u8; 8];
        // getrandom only fails if the OS has no entropy source at all; there is no safe
        // fallback for a security token, so that is fatal.
        getrandom::fill(&mut bytes).expect("the OS random source is unavailable");
        let token = u64::from_le_bytes(bytes);
        if token != 0 {
            return token;
        }
    }
}

#[cfg(all(test, not(mmo_loom)))]
mod tests {
    use super::*;

    #[test]
    fn session_tokens_are_never_zero_and_differ() {
        let tokens: std::collections::HashSet<u64> = (0..1_000).map(|_| new_session_token()).collect();
        assert_eq!(tokens.len(), 1_000);
        assert!(!tokens.contains(&0));
    }
}
