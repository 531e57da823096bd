//! Players: who is joined, with which session token, and which body, combatant and wallet
//! are theirs.
//!
//! A player id is the player record's sharded-slab key plus one (see [`crate::arena`]), so a
//! lookup is one slab `get` with no map and no lock, and the key's generation makes an id
//! from before a leave miss instead of finding whoever reuses the slot.
//!
//! Concurrency contract: records are immutable after insert except `leaving`, an atomic flag
//! that exactly one `leave` call wins. Writers: join (insert) and leave (flag, then remove);
//! readers: every service resolving a player id, from any thread. A reader holding a record's
//! guard keeps the slot from being reused until it drops the guard (sharded-slab defers the
//! removal), so what it read stays consistent; it may still be working with a player who is
//! in the middle of leaving, which each service handles (the body and wallet have their own
//! "closed" state checked under their own lock). No lock is taken here.

use crate::arena::{ArenaConfig, key_from_player_id, player_id_from_key};
use crate::capacity::CapacityGate;
use crate::economy::WalletHandle;
use sharded_slab::Slab;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};

/// What join hands back to the client.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct JoinTicket {
    /// The new player's id.
    pub player_id: u64,
    /// A random, non-zero session token the client must present with every request.
    pub session_token: u64,
}

/// One joined player. Immutable after insert except `leaving`.
#[derive(Debug)]
pub struct PlayerRecord {
    /// Random session token. Written at join, read by every authenticated request.
    pub session_token: u64,
    /// Movement slot: indexes the body table and the grid's position table. Written at join,
    /// read by every move, AoI query and leave.
    pub slot: u32,
    /// Key of the combatant. Written at join, read by combat.
    pub combatant_key: usize,
    /// Where the wallet lives. Written at join, read by the economy.
    pub wallet: WalletHandle,
    /// Faction, copied from the combatant for cheap friendly-fire checks.
    pub faction: u8,
    /// Set by the one `leave` call that wins; read by other `leave` calls.
    leaving: AtomicBool,
    /// How far from `aoi_viewer_at` this player's last area of interest can be a tick later,
    /// metres, as `f32` bits (0: no hint, the whole radius; see
    /// [`crate::snapshot::hint_reach_m`]). With `aoi_viewer_at`, the hint for the next query:
    /// a hint only (any value gives the same answer, see
    /// [`crate::snapshot::WorldSnapshot::nearest_hinted`]), so a reach and a position from two
    /// different queries, should two workers ever race on one player, cost a wider look at
    /// most. Written and read by whichever worker computes this player's area of interest,
    /// normally one per tick, so Relaxed.
    aoi_reach_m: AtomicU32,
    /// Where this player stood for its last area-of-interest query: `x` bits in the low half,
    /// `y` bits in the high half. Written and read with `aoi_reach_m`.
    aoi_viewer_at: AtomicU64,
}

impl PlayerRecord {
    /// A record for a player about to be inserted.
    pub fn new(session_token: u64, slot: u32, combatant_key: usize, wallet: WalletHandle, faction: u8) -> Self {
        Self {
            session_token,
            slot,
            combatant_key,
            wallet,
            faction,
            leaving: AtomicBool::new(false),
            aoi_reach_m: AtomicU32::new(0),
            aoi_viewer_at: AtomicU64::new(0),
        }
    }

    /// How far from `viewer_at`, where this player stands now, its next area-of-interest
    /// query should look first, metres (0: no hint): its last answer's reach plus how far it
    /// has moved since.
    #[inline]
    pub fn aoi_hint_m(&self, viewer_at: (f32, f32)) -> f32 {
        let reach_m = f32::from_bits(self.aoi_reach_m.load(Ordering::Relaxed));
        if reach_m <= 0.0 {
            return 0.0;
        }
        let at = self.aoi_viewer_at.load(Ordering::Relaxed);
        let (dx, dy) = (viewer_at.0 - f32::from_bits(at as u32), viewer_at.1 - f32::from_bits((at >> 32) as u32));
        reach_m + (dx * dx + dy * dy).sqrt()
    }

    /// Records this player's last area of interest for its next query: how far from
    /// `viewer_at`, where it stood, that answer can be a tick later (0: no hint).
    #[inline]
    pub fn set_aoi_reach(&self, reach_m: f32, viewer_at: (f32, f32)) {
        self.aoi_reach_m.store(reach_m.to_bits(), Ordering::Relaxed);
        self.aoi_viewer_at.store(u64::from(viewer_at.0.to_bits()) | u64::from(viewer_at.1.to_bits()) << 32, Ordering::Relaxed);
    }

    /// Claims the right to tear this player down; `true` for exactly one caller.
    pub fn claim_leave(&self) -> bool {
        self.leaving.compare_exchange(false, true, Ordering::AcqRel, Ordering::Acquire).is_ok()
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

    #[test]
    fn the_aoi_hint_is_the_last_reach_plus_the_walk_since() {
        let record = PlayerRecord::new(1, 0, 0, WalletHandle::NONE, 0);
        assert_eq!(record.aoi_hint_m((10.0, 10.0)), 0.0, "no answer yet: no hint");
        record.set_aoi_reach(5.0, (10.0, 10.0));
        assert_eq!(record.aoi_hint_m((10.0, 10.0)), 5.0);
        assert_eq!(record.aoi_hint_m((13.0, 14.0)), 10.0, "a 5 m walk since");
        record.set_aoi_reach(0.0, (13.0, 14.0));
        assert_eq!(record.aoi_hint_m((13.0, 14.0)), 0.0, "the last answer held fewer than k");
    }
}
