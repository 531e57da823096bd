//! Plain `#[repr(C)]` records that cross batch boundaries.
//!
//! These are the exact layouts the C ABI (`mmo-ffi`, header `mmo_core.h`) hands across: the
//! core reads move batches and writes event batches in place, so the FFI layer copies nothing.
//! Every field has an explicit width, padding is spelled out as `_reserved` fields (written as
//! zero, ignored on input), and sizes and offsets are asserted at compile time below.
//!
//! Enums that arrive from the network travel as integers (`kind: u8`, `detail: u8`) and are
//! converted with `TryFrom`, so an out-of-range value is a counted rejection, never undefined
//! behaviour.

use std::mem::{align_of, offset_of, size_of};

/// One client position update, as validated by the network front.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct MoveRecord {
    /// Player id returned by join.
    pub player_id: u64,
    /// Session token returned by join; a move with another token is rejected.
    pub session_token: u64,
    /// Client sequence number; must be newer (serial arithmetic) than the last applied one.
    pub sequence: u32,
    /// Client clock in milliseconds when the move was made.
    pub client_time_ms: u32,
    /// New position, metres.
    pub x_m: f32,
    /// New position, metres.
    pub y_m: f32,
    /// Facing, radians.
    pub facing_rad: f32,
    /// The `slot_hint` of this player's join ticket (0: none). A hint only: the engine takes
    /// the body it names when that body is this player's (id and session token, checked under
    /// the body's lock) and otherwise finds the player by id, so a wrong, stale or hostile hint
    /// costs one lookup, never a wrong answer.
    pub slot_hint: u32,
    /// Opaque game payload (animation state, stance...), stored with the body and forwarded
    /// in area-of-interest snapshots.
    pub payload: [u8; 32],
}

/// What an event written by a move batch reports.
#[repr(u8)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum EventKind {
    /// The move was applied; `sequence` echoes it.
    Ack = 1,
    /// After the move, `other_id` is within the contact radius; `detail` is its [`EntityKind`].
    Contact = 2,
    /// The move was refused; `detail` is the [`RejectReason`].
    Reject = 3,
}

/// Why a move was refused. Each reason has its own counter in [`crate::stats`].
#[repr(u8)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum RejectReason {
    /// No live player has that id (never joined, left, or a stale id).
    UnknownPlayer = 1,
    /// The session token does not match the player's.
    WrongSession = 2,
    /// The sequence number is not newer than the last applied one (replay or reorder).
    StaleSequence = 3,
    /// The move covers more distance than the speed limit allows in the elapsed time.
    TooFast = 4,
    /// The position is outside the world or not a finite number.
    OutOfBounds = 5,
    /// The player is dead: from the attack that took its last hit point until the tick that
    /// respawns it (`respawn_ms` later). Checked third, after the session (the number is the
    /// order it came to the wire in, not the order it is checked in).
    Dead = 6,
}

/// Why an attack was refused, in the order the rules are checked (0 on the wire and across
/// the C ABI means it landed). Each is counted under `attack_rejected_<reason>`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum AttackError {
    /// The attacker is not a live player.
    UnknownPlayer = 1,
    /// The attacker's session token does not match.
    WrongSession = 2,
    /// The attacker has no hit points left.
    AttackerDead = 3,
    /// The target is not a live player or raid object.
    UnknownTarget = 4,
    /// Attacker and target are of the same faction (a player attacking itself included).
    FriendlyFire = 5,
    /// The target has no hit points left (another attack killed it first).
    TargetDead = 6,
    /// The target is farther than `attack_range_m` from the attacker.
    OutOfRange = 7,
    /// The attacker's last landed attack was less than `attack_cooldown_ms` ago.
    Cooldown = 8,
}

/// Why a loot claim was refused, in the order the rules are checked (0 on the wire and across
/// the C ABI means it was claimed). Each is counted under `loot_rejected_<reason>`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum LootError {
    /// The claimer is not a live player.
    UnknownPlayer = 1,
    /// The claimer's session token does not match.
    WrongSession = 2,
    /// No raid object has that id (never spawned, or its burst expired).
    UnknownLoot = 3,
    /// The object holds no loot: it is alive, or it is not an add, or no attack killed it.
    NoLoot = 4,
    /// Another player killed it: its loot is the killer's (its account's, or its session's
    /// when it joined with none).
    NotYours = 5,
    /// The loot is farther than `loot_range_m` from the claimer.
    OutOfRange = 6,
    /// The claimer's wallet cannot hold it (a balance would overflow); the loot stays.
    WalletFull = 7,
    /// The economy's journal is full (its disk is behind); the loot stays: claim again.
    StorageBusy = 8,
    /// The claimer is dead (until the tick respawns it). Checked after `NotYours` and a repeat
    /// (a claim already credited is answered again even to the dead), before `OutOfRange`.
    Dead = 9,
}

/// The kind of an entity in the grid.
#[repr(u8)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum EntityKind {
    /// A joined player.
    Player = 1,
    /// A raid add (a spawned hostile).
    Add = 2,
    /// A raid projectile.
    Projectile = 3,
    /// A loot object on the ground.
    Loot = 4,
}

/// One event written by a move batch into the caller's buffer.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct MoveEvent {
    /// The player the event is for (the mover).
    pub player_id: u64,
    /// For `Contact`: the other entity's id. Otherwise 0.
    pub other_id: u64,
    /// The move's sequence number.
    pub sequence: u32,
    /// For `Contact`: distance in metres. Otherwise 0.
    pub distance_m: f32,
    /// An [`EventKind`] as an integer.
    pub kind: u8,
    /// `Reject`: a [`RejectReason`]; `Contact`: the other's [`EntityKind`]; `Ack`: 0.
    pub detail: u8,
    /// Zero.
    pub _reserved: [u8; 6],
}

impl MoveEvent {
    /// The decoded kind, if the integer is a known one.
    pub fn event_kind(&self) -> Option<EventKind> {
        EventKind::try_from(self.kind).ok()
    }
}

/// A request to spawn a burst of short-lived objects around a point.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct RaidSpawnRequest {
    /// Centre of the spawn square, metres.
    pub center_x_m: f32,
    /// Centre of the spawn square, metres.
    pub center_y_m: f32,
    /// Half the side of the spawn square (clamped to the world), metres.
    pub half_extent_m: f32,
    /// Objects to spawn, `1..=RAID_BURST_MAX`.
    pub count: u32,
    /// Lifetime of every object in the burst, milliseconds: each lives at least this long
    /// (rounded up to whole ticks, plus the part of the current tick already gone).
    pub lifetime_ms: u32,
    /// Starting hit points of each object (adds; projectiles and loot may use 1).
    pub hp: i32,
    /// Seed for the positions, so a burst is reproducible.
    pub seed: u32,
    /// An [`EntityKind`] other than `Player`, as an integer.
    pub kind: u8,
    /// Faction of the spawned objects.
    pub faction: u8,
    /// Zero.
    pub _reserved: [u8; 2],
}

/// What an economy operation does.
#[repr(u8)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum EconomyKind {
    /// Move `gold` and/or `item_count` of `item_kind` from the player to the counterparty.
    Transfer = 1,
    /// Retired: refused `KindRetired`. It took the counterparty's items at the initiator's
    /// price without their consent; trades are now a [`TradeOffer`] its taker accepts.
    Trade = 2,
    /// Retired: refused `KindRetired`. It minted whatever the client named; loot is now
    /// claimed from a kill ([`crate::loot`]), value otherwise granted by the admin.
    LootPickup = 3,
    /// Spend at a vendor: sink `gold` and/or items from the player's wallet.
    Spend = 4,
}

/// One reliable economy request. Applied at most once per (`player_id`, `transaction_id`).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct EconomyOp {
    /// The player who initiates (and whose transaction id this is).
    pub player_id: u64,
    /// The initiator's session token.
    pub session_token: u64,
    /// Client-chosen transaction id, increasing per player; 0 is invalid.
    pub transaction_id: u64,
    /// The other player for `Transfer` and `Trade`; 0 otherwise.
    pub counterparty_id: u64,
    /// Gold amount (signed on the wire so a negative value is a typed error, not a wrap).
    pub gold: i64,
    /// Item count (signed on the wire for the same reason).
    pub item_count: i32,
    /// Item kind, `0..ITEM_KINDS`.
    pub item_kind: u16,
    /// An [`EconomyKind`] as an integer.
    pub kind: u8,
    /// Zero.
    pub _reserved: u8,
}

/// One side of a trade offer: gold and one stack of items (signed on the wire, so a negative
/// amount is a typed refusal, not a wrap).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TradeStack {
    /// Gold.
    pub gold: i64,
    /// Items (0: gold only).
    pub item_count: i32,
    /// Their kind, `0..ITEM_KINDS` (ignored when `item_count` is 0).
    pub item_kind: u16,
    /// Zero.
    pub _reserved: u16,
}

/// A trade offer: the maker (`player_id`) offers `give` to the taker (`counterparty_id`) for
/// `want`. `give` goes into escrow until the taker accepts or declines, the maker cancels, or
/// the offer times out. The offer's id is the maker's `transaction_id`. At most once per
/// (`player_id`, `transaction_id`), like every economy request.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TradeOffer {
    /// The maker.
    pub player_id: u64,
    /// The maker's session token.
    pub session_token: u64,
    /// The maker's transaction id; also the offer's id.
    pub transaction_id: u64,
    /// The taker.
    pub counterparty_id: u64,
    /// What the maker gives.
    pub give: TradeStack,
    /// What the maker wants from the taker.
    pub want: TradeStack,
}

/// An answer to a trade offer: the taker accepts (`accept` = 1) or declines (0), or the maker
/// cancels its own offer (`accept` = 0 with `maker_id` = `player_id`). At most once per
/// (`player_id`, `transaction_id`).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TradeAnswer {
    /// Who answers (the taker, or the maker cancelling).
    pub player_id: u64,
    /// Their session token.
    pub session_token: u64,
    /// Their transaction id.
    pub transaction_id: u64,
    /// The offer's maker.
    pub maker_id: u64,
    /// The offer's id (the maker's transaction id of the offer).
    pub offer_id: u64,
    /// 1 accept, 0 decline (or cancel).
    pub accept: u8,
    /// Zero.
    pub _reserved: [u8; 7],
}

/// Outcome of an economy request. Each non-applied status has its own counter.
#[repr(u8)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum EconomyStatus {
    /// Applied (or, with `duplicate` set, applied earlier: this is the recorded outcome).
    Applied = 0,
    /// An amount is zero where it must not be, or negative.
    InvalidAmount = 1,
    /// An amount is above `AMOUNT_MAX`, or a balance would overflow.
    Overflow = 2,
    /// The counterparty is the initiator.
    SelfTrade = 3,
    /// `item_kind` is not a known item.
    UnknownItem = 4,
    /// Not enough gold.
    InsufficientFunds = 5,
    /// Not enough items.
    InsufficientItems = 6,
    /// No live player has that id (initiator or counterparty).
    UnknownPlayer = 7,
    /// The player or counterparty left while the request was being applied.
    PlayerDeparted = 8,
    /// The session token does not match.
    WrongSession = 9,
    /// The transaction id is older than the de-duplication window: it may have been applied,
    /// so it is never applied now.
    TransactionTooOld = 10,
    /// `kind` is not an [`EconomyKind`].
    BadKind = 11,
    /// Transaction id 0, or one more than `TRANSACTION_STEP_MAX` (2^20) above the account's highest
    /// decided id (refused, recorded nowhere).
    InvalidTransaction = 12,
    /// A trade offer from a maker who already has one open (one at a time).
    OfferPending = 13,
    /// The maker has no open offer with that id (never made, or already closed).
    NoSuchOffer = 14,
    /// The offer is for another player: only its taker may accept or decline it.
    NotYourOffer = 15,
    /// The offer timed out (its escrow went back to the maker).
    OfferExpired = 16,
    /// A kind clients may no longer request: a `Trade` (it took the other side's items without
    /// their consent; use a trade offer) or a `LootPickup` (it minted what the client named;
    /// loot is claimed). Refused before anything is read.
    KindRetired = 17,
    /// The economy's journal is full (its disk is behind): nothing was decided or recorded;
    /// retransmit later.
    StorageBusy = 18,
}

/// The result written for one [`EconomyOp`].
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct EconomyResult {
    /// Echo of the request's transaction id.
    pub transaction_id: u64,
    /// Echo of the request's player id.
    pub player_id: u64,
    /// Initiator's gold balance right after the operation was applied (0 if it was not).
    pub gold_balance: u64,
    /// An [`EconomyStatus`] as an integer.
    pub status: u8,
    /// 1 when this is a retransmit of an already-decided transaction.
    pub duplicate: u8,
    /// Zero.
    pub _reserved: [u8; 6],
    /// Tell the client only once the economy is durable through this
    /// (`mmo_economy_durable_through() >= ledger_seq`); 0: at once.
    pub ledger_seq: u64,
}

/// One entity in an area-of-interest snapshot.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct AoiEntry {
    /// Entity id (player id or raid object id).
    pub entity_id: u64,
    /// Position, metres.
    pub x_m: f32,
    /// Position, metres.
    pub y_m: f32,
    /// Distance from the viewer, metres.
    pub distance_m: f32,
    /// An [`EntityKind`] as an integer.
    pub kind: u8,
    /// Zero.
    pub _reserved: [u8; 3],
}

/// `TryFrom<u8>` for a wire enum from the list of its variants and values. The list must name
/// every variant: a `match` over the listed ones, with no catch-all, fails to compile when a
/// variant is added to the enum and not here (a missing one would decode as unknown).
macro_rules! wire_enum_try_from {
    ($ty:ident { $($variant:ident = $value:literal),* $(,)? }) => {
        const _: () = {
            #[allow(dead_code)]
            fn every_variant_listed(v: $ty) {
                match v {
                    $($ty::$variant => {})*
                }
            }
        };
        impl TryFrom<u8> for $ty {
            type Error = u8;
            /// Decodes the integer, handing back the unknown value on failure.
            fn try_from(value: u8) -> Result<Self, u8> {
                match value {
                    $($value => Ok($ty::$variant),)*
                    other => Err(other),
                }
            }
        }
    };
}

wire_enum_try_from!(EventKind { Ack = 1, Contact = 2, Reject = 3 });
wire_enum_try_from!(RejectReason { UnknownPlayer = 1, WrongSession = 2, StaleSequence = 3, TooFast = 4, OutOfBounds = 5, Dead = 6 });
wire_enum_try_from!(AttackError {
    UnknownPlayer = 1, WrongSession = 2, AttackerDead = 3, UnknownTarget = 4, FriendlyFire = 5,
    TargetDead = 6, OutOfRange = 7, Cooldown = 8,
});
wire_enum_try_from!(LootError {
    UnknownPlayer = 1, WrongSession = 2, UnknownLoot = 3, NoLoot = 4, NotYours = 5, OutOfRange = 6, WalletFull = 7,
    StorageBusy = 8, Dead = 9,
});
wire_enum_try_from!(EntityKind { Player = 1, Add = 2, Projectile = 3, Loot = 4 });
wire_enum_try_from!(EconomyKind { Transfer = 1, Trade = 2, LootPickup = 3, Spend = 4 });
wire_enum_try_from!(EconomyStatus {
    Applied = 0, InvalidAmount = 1, Overflow = 2, SelfTrade = 3, UnknownItem = 4,
    InsufficientFunds = 5, InsufficientItems = 6, UnknownPlayer = 7, PlayerDeparted = 8,
    WrongSession = 9, TransactionTooOld = 10, BadKind = 11, InvalidTransaction = 12, OfferPending = 13,
    NoSuchOffer = 14, NotYourOffer = 15, OfferExpired = 16, KindRetired = 17, StorageBusy = 18,
});

// Layouts are part of the ABI: any change here is a protocol change.
const _: () = assert!(size_of::<MoveRecord>() == 72 && align_of::<MoveRecord>() == 8);
const _: () = assert!(offset_of!(MoveRecord, sequence) == 16);
const _: () = assert!(offset_of!(MoveRecord, x_m) == 24);
const _: () = assert!(offset_of!(MoveRecord, payload) == 40);
const _: () = assert!(size_of::<MoveEvent>() == 32 && align_of::<MoveEvent>() == 8);
const _: () = assert!(offset_of!(MoveEvent, kind) == 24 && offset_of!(MoveEvent, detail) == 25);
const _: () = assert!(size_of::<RaidSpawnRequest>() == 32 && align_of::<RaidSpawnRequest>() == 4);
const _: () = assert!(offset_of!(RaidSpawnRequest, kind) == 28);
const _: () = assert!(size_of::<EconomyOp>() == 48 && align_of::<EconomyOp>() == 8);
const _: () = assert!(offset_of!(EconomyOp, gold) == 32 && offset_of!(EconomyOp, kind) == 46);
const _: () = assert!(size_of::<EconomyResult>() == 40 && align_of::<EconomyResult>() == 8);
const _: () = assert!(offset_of!(EconomyResult, status) == 24);
const _: () = assert!(size_of::<TradeStack>() == 16 && align_of::<TradeStack>() == 8);
const _: () = assert!(size_of::<TradeOffer>() == 64 && offset_of!(TradeOffer, give) == 32 && offset_of!(TradeOffer, want) == 48);
const _: () = assert!(size_of::<TradeAnswer>() == 48 && offset_of!(TradeAnswer, accept) == 40);
const _: () = assert!(size_of::<AoiEntry>() == 24 && align_of::<AoiEntry>() == 8);
const _: () = assert!(offset_of!(AoiEntry, kind) == 20);

#[cfg(all(test, not(mmo_loom)))]
mod tests {
    use super::*;

    #[test]
    fn wire_enums_round_trip_and_refuse_unknown_values() {
        for v in 0..=u8::MAX {
            if let Ok(k) = EventKind::try_from(v) {
                assert_eq!(k as u8, v)
            }
            if let Ok(k) = RejectReason::try_from(v) {
                assert_eq!(k as u8, v)
            }
            if let Ok(k) = EntityKind::try_from(v) {
                assert_eq!(k as u8, v)
            }
            if let Ok(k) = EconomyKind::try_from(v) {
                assert_eq!(k as u8, v)
            }
            if let Ok(k) = EconomyStatus::try_from(v) {
                assert_eq!(k as u8, v)
            }
            if let Ok(k) = LootError::try_from(v) {
                assert_eq!(k as u8, v)
            }
        }
        assert_eq!(EventKind::try_from(0), Err(0));
        assert_eq!(EntityKind::try_from(5), Err(5));
        assert_eq!(EconomyKind::try_from(200), Err(200));
        assert_eq!(EconomyStatus::try_from(19), Err(19));
        assert_eq!(RejectReason::try_from(6), Ok(RejectReason::Dead));
        assert_eq!(RejectReason::try_from(7), Err(7));
        assert_eq!(AttackError::try_from(8), Ok(AttackError::Cooldown));
        assert_eq!(AttackError::try_from(9), Err(9));
        assert_eq!(LootError::try_from(0), Err(0));
        assert_eq!(LootError::try_from(9), Ok(LootError::Dead));
        assert_eq!(LootError::try_from(10), Err(10));
    }
}
