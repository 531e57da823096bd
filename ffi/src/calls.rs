//! The engine calls: creation and teardown, joins and leaves, move and economy batches, raid
//! spawn, damage, the tick, area of interest, and the read-only views; with the records they
//! write back.

use crate::boundary::*;
use crate::config::MmoConfig;
use crate::status::*;
use mmo_core::combat::{DamageOutcome, RaidError};
use mmo_core::durability::CommitPolicy;
use mmo_core::{AoiError, CoreConfig, DamageError, Engine, JoinError, LeaveError};
use std::ffi::c_char;
use std::mem::{offset_of, size_of};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::AtomicBool;

pub use mmo_core::records::{
    AoiEntry, EconomyKind, EconomyOp, EconomyResult, EconomyStatus, EntityKind, EventKind, MoveEvent, MoveRecord, RaidSpawnRequest,
    RejectReason, TradeAnswer, TradeOffer, TradeStack,
};
pub use mmo_core::stats::StatsSnapshot;

/// What [`mmo_join`] hands back.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct MmoJoinTicket {
    /// The new player's id (never 0).
    pub player_id: u64,
    /// The session token every later request must carry (never 0).
    pub session_token: u64,
    /// For the front, not the client: pass it back as `MmoMoveRecord::slot_hint` in every move
    /// of this session, and a move finds its player's body without an arena lookup (0: none;
    /// any value is safe, a wrong one only costs that lookup).
    pub slot_hint: u32,
    /// Where the player stands, metres: the spawn point asked for or, for an account whose
    /// last session's body was still lingering (`logout_linger_ms`), where that body stood.
    pub x_m: f32,
    /// See `x_m`.
    pub y_m: f32,
    /// Zero.
    pub _reserved: u32,
}

/// What [`mmo_raid_spawn`] did.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MmoRaidReport {
    /// Objects spawned (always the requested count).
    pub spawned: u32,
    /// Grid cells the burst's square covers.
    pub cells: u32,
    /// Tick at which the burst expires.
    pub expires_tick: u32,
    /// Zero.
    pub _reserved: u32,
}

/// The latest tick's summary.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MmoTickInfo {
    /// Server time of the tick, milliseconds.
    pub now_ms: u64,
    /// Tick number.
    pub tick: u32,
    /// Players joined.
    pub players_live: u32,
    /// Raid objects alive after the tick.
    pub objects_live: u32,
    /// Raid objects the tick freed.
    pub objects_expired: u32,
    /// Raid bursts alive after the tick.
    pub bursts_live: u32,
    /// Entities in the world snapshot this tick published (0 if it published none because
    /// readers held every spare buffer; counted in `MmoStats::snapshots_skipped`).
    pub snapshot_entities: u32,
}

/// What an area-of-interest batch read, from [`mmo_area_of_interest_batch`].
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MmoAoiBatchInfo {
    /// Server time of the snapshot's tick, milliseconds.
    pub now_ms: u64,
    /// Tick of the snapshot the batch read (0: none published yet).
    pub tick: u32,
    /// Players of the batch found in the snapshot.
    pub found: u32,
}

/// `counts[i]` of [`mmo_area_of_interest_batch`] for a player not in the snapshot (unknown,
/// departed, or joined after the snapshot's tick).
pub const MMO_AOI_NOT_IN_SNAPSHOT: u32 = 0xFFFF_FFFF;
const _: () = assert!(MMO_AOI_NOT_IN_SNAPSHOT == mmo_core::snapshot::NOT_IN_SNAPSHOT);

/// How far above an account's highest decided transaction id a new economy request's id may
/// be; one further is refused `MMO_ECONOMY_STATUS_INVALID_TRANSACTION`, recorded nowhere.
pub const MMO_TRANSACTION_STEP_MAX: u64 = 1 << 20;
const _: () = assert!(MMO_TRANSACTION_STEP_MAX == mmo_core::economy::TRANSACTION_STEP_MAX);

/// What a damage call did: `outcome` is 1 (hit), 2 (killed: this call brought hp to zero)
/// or 3 (already dead).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MmoDamageResult {
    /// Hit points left.
    pub hp_left: i32,
    /// 1 hit, 2 killed, 3 already dead.
    pub outcome: u8,
    /// Zero.
    pub _reserved: [u8; 3],
}

/// What an attack did ([`mmo_attack`]). `refusal` is 0 when it landed, else the
/// `MmoAttackError` that refused it (and the other fields are 0).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MmoAttackResult {
    /// Hit points taken: the configured `attack_damage`, or what the target had left.
    pub damage: i32,
    /// Hit points the target has left.
    pub hp_left: i32,
    /// 0 landed, else an `MmoAttackError`.
    pub refusal: u8,
    /// 1 when this attack brought the target to zero (exactly one attack per target).
    pub killed: u8,
    /// The target's `MmoEntityKind` (0 when refused).
    pub target_kind: u8,
    /// Zero.
    pub _reserved: [u8; 5],
}

/// What a loot claim got ([`mmo_claim_loot`]). `refusal` is 0 when the loot is the claimer's
/// (credited now, or earlier when `repeat` is 1), else the `MmoLootError` that refused it (and
/// the other fields are 0).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MmoLootResult {
    /// Gold the loot holds.
    pub gold: u64,
    /// The claimer's gold after the claim.
    pub gold_after: u64,
    /// Items the loot holds (0: gold only).
    pub item_count: u32,
    /// Their kind.
    pub item_kind: u16,
    /// 0 claimed, else an `MmoLootError`.
    pub refusal: u8,
    /// 1 when this repeats an earlier successful claim by the same player (nothing credited now).
    pub repeat: u8,
    /// Tell the claimer only once `mmo_economy_durable_through() >= ledger_seq` (0: at once).
    pub ledger_seq: u64,
}

/// What [`mmo_economy_open`] found in the store.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MmoRecoveryInfo {
    /// Accounts loaded.
    pub accounts: u64,
    /// Ledger entries the store has applied since it was created.
    pub entries: u64,
    /// Microseconds opening, loading and checking the books took.
    pub elapsed_us: u64,
    /// 1 when the store rolled back an interrupted commit (a torn or truncated write) while
    /// opening; the message says so.
    pub repaired: u8,
    /// Zero.
    pub _reserved: [u8; 7],
}

/// Called on the committer thread after each group of economy changes is durable, with the
/// `context` given to [`mmo_economy_open`]. It may read [`mmo_economy_durable_through`] (the
/// server sends the replies that waited from here) and must call nothing else in the engine;
/// keep it short: the next group's commit waits for it to return.
pub type MmoDurableCallback = Option<unsafe extern "C" fn(context: *mut std::ffi::c_void)>;

/// The callback and its context, sent to the committer thread.
struct DurableNotice {
    callback: unsafe extern "C" fn(*mut std::ffi::c_void),
    context: *mut std::ffi::c_void,
}

// SAFETY: the caller of mmo_economy_open promises the callback may be called with `context`
// from another thread until the engine is freed.
unsafe impl Send for DurableNotice {}

impl DurableNotice {
    fn call(&self) {
        // SAFETY: the caller's promise at mmo_economy_open (see above).
        unsafe { (self.callback)(self.context) }
    }
}

/// A consistent reading of the economy's gold (saturating at `UINT64_MAX`), from
/// [`mmo_economy_audit`].
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MmoEconomyAudit {
    /// Gold in open wallets.
    pub live_gold: u64,
    /// Gold of players who left.
    pub departed_gold: u64,
    /// Gold ever minted.
    pub minted_gold: u64,
    /// Gold ever sunk.
    pub sunk_gold: u64,
    /// The part of `minted_gold` that loot claims created.
    pub loot_minted_gold: u64,
    /// Items loot claims created, all kinds together.
    pub loot_minted_items: u64,
    /// The part of `minted_gold` that admin grants created.
    pub grant_minted_gold: u64,
    /// Items admin grants created, all kinds together.
    pub grant_minted_items: u64,
    /// Gold held in escrow by open trade offers (in none of the wallets' balances).
    pub escrowed_gold: u64,
    /// Open wallets.
    pub open_wallets: u32,
    /// Open trade offers.
    pub open_offers: u32,
    /// 1 when `live + departed == minted - sunk` holds for gold and every item kind.
    pub conserved: u8,
    /// Zero.
    pub _reserved: [u8; 3],
}

/// One player's state, from [`mmo_player_view`].
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct MmoPlayerView {
    /// Position, metres.
    pub x_m: f32,
    /// Position, metres.
    pub y_m: f32,
    /// Last applied move sequence.
    pub last_sequence: u32,
    /// Grid cell the player is registered in.
    pub cell: u32,
    /// Hit points.
    pub hp: i32,
    /// Faction.
    pub faction: u8,
    /// Zero.
    pub _reserved: [u8; 3],
    /// Gold.
    pub gold: u64,
    /// Items, per kind.
    pub items: [u64; 16],
}

const _: () = assert!(mmo_core::config::ITEM_KINDS == 16);

const _: () = assert!(size_of::<MmoJoinTicket>() == 32 && offset_of!(MmoJoinTicket, slot_hint) == 16);
const _: () = assert!(offset_of!(MmoJoinTicket, x_m) == 20 && offset_of!(MmoJoinTicket, y_m) == 24);
const _: () = assert!(size_of::<MmoRaidReport>() == 16);
const _: () = assert!(size_of::<MmoTickInfo>() == 32 && offset_of!(MmoTickInfo, tick) == 8);
const _: () = assert!(size_of::<MmoAoiBatchInfo>() == 16 && offset_of!(MmoAoiBatchInfo, found) == 12);
const _: () = assert!(size_of::<MmoDamageResult>() == 8 && offset_of!(MmoDamageResult, outcome) == 4);
const _: () = assert!(size_of::<MmoAttackResult>() == 16 && offset_of!(MmoAttackResult, refusal) == 8);
const _: () = assert!(size_of::<MmoEconomyAudit>() == 88 && offset_of!(MmoEconomyAudit, conserved) == 80);
const _: () = assert!(size_of::<MmoLootResult>() == 32 && offset_of!(MmoLootResult, refusal) == 22);
const _: () = assert!(size_of::<MmoRecoveryInfo>() == 32 && offset_of!(MmoRecoveryInfo, repaired) == 24);
const _: () = assert!(size_of::<MmoPlayerView>() == 160 && offset_of!(MmoPlayerView, gold) == 24);
const _: () = assert!(size_of::<StatsSnapshot>() == 8 * mmo_core::stats::COUNTER_COUNT);

/// The ABI version this library implements ([`MMO_ABI_VERSION`]).
#[unsafe(no_mangle)]
pub extern "C" fn mmo_abi_version() -> u32 {
    boundary_or(0, || MMO_ABI_VERSION)
}

/// [`MMO_OK`] if the caller's `expected_version` (pass `MMO_ABI_VERSION` from the header it
/// was compiled with) matches this library, else [`MMO_ERR_ABI_MISMATCH`].
#[unsafe(no_mangle)]
pub extern "C" fn mmo_abi_check(expected_version: u32) -> MmoStatus {
    boundary(|| if expected_version == MMO_ABI_VERSION { MMO_OK } else { MMO_ERR_ABI_MISMATCH })
}

/// A static, NUL-terminated name for a status code ("MMO_OK", "MMO_ERR_PANIC", ...), or
/// "MMO_UNKNOWN_STATUS". Never NULL; never freed.
#[unsafe(no_mangle)]
pub extern "C" fn mmo_status_name(status: MmoStatus) -> *const c_char {
    const UNKNOWN: &[u8] = b"MMO_UNKNOWN_STATUS\0";
    boundary_or(UNKNOWN.as_ptr().cast(), || status_name(status).as_ptr().cast())
}

/// Checks `*config` as [`mmo_engine_new`] would. [`MMO_OK`] if an engine would accept it;
/// otherwise [`MMO_ERR_INVALID_CONFIG`] (or [`MMO_ERR_INVALID_ARGUMENT`] for the reserved
/// fields) and, when `message`/`message_capacity` is a buffer, the reason naming the field,
/// NUL-terminated and cut to fit. Nothing is written on success.
///
/// # Safety
/// `config` NULL or an initialised `MmoConfig`; `message`/`message_capacity` a borrowed
/// output slice (length 0: no message).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn mmo_config_check(config: *const MmoConfig, message: *mut c_char, message_capacity: usize) -> MmoStatus {
    boundary(|| {
        // SAFETY: checked by in_ref; initialised per the contract.
        let config = check!(unsafe { in_ref(config) });
        // SAFETY: forwarded contract.
        let message = check!(unsafe { output(message.cast::<u8>(), message_capacity) });
        let (status, why) = if config.fault_injection > 1 || config._reserved != [0; 7] {
            (MMO_ERR_INVALID_ARGUMENT, "fault_injection must be 0 or 1, and _reserved zero".to_string())
        } else {
            match CoreConfig::from(config).validate() {
                Ok(()) => return MMO_OK,
                Err(e) => (MMO_ERR_INVALID_CONFIG, e.0.to_string()),
            }
        };
        write_message(message, &why);
        status
    })
}

/// Creates an engine from `*config` and writes its handle to `*out_engine`. Free it with
/// [`mmo_engine_free`]. Nothing is pre-warmed: memory follows the players joined and the
/// raids spawned (see `Engine::new`).
///
/// # Safety
/// `config` must be NULL or point to an initialised `MmoConfig`; `out_engine` NULL or
/// writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn mmo_engine_new(config: *const MmoConfig, out_engine: *mut *mut MmoEngine) -> MmoStatus {
    boundary(|| {
        // SAFETY: checked by in_ref; initialised per the contract.
        let config = check!(unsafe { in_ref(config) });
        let out_engine = check!(out_ptr(out_engine));
        if config.fault_injection > 1 || config._reserved != [0; 7] {
            return MMO_ERR_INVALID_ARGUMENT;
        }
        let Ok(engine) = Engine::new(CoreConfig::from(config)) else { return MMO_ERR_INVALID_CONFIG };
        let handle = Box::new(MmoEngine { engine, poisoned: AtomicBool::new(false), fault_injection: config.fault_injection == 1 });
        // SAFETY: checked by out_ptr.
        unsafe { out_engine.write(Box::into_raw(handle)) };
        MMO_OK
    })
}

/// Frees an engine. NULL is ignored. No other call on this engine may run concurrently or
/// follow.
///
/// # Safety
/// `engine` must be NULL or a pointer from [`mmo_engine_new`] not yet freed.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn mmo_engine_free(engine: *mut MmoEngine) {
    if engine.is_null() {
        return;
    }
    // Dropping the engine can run arbitrary destructors; a panic there must not unwind
    // into C. There is nothing to report it to, so it is swallowed.
    let _ = catch_unwind(AssertUnwindSafe(|| {
        // SAFETY: from Box::into_raw in mmo_engine_new, freed once per the contract.
        drop(unsafe { Box::from_raw(engine) });
    }));
}

/// Joins a player of `account_id` at `(x_m, y_m)` in `faction`; writes the ticket to
/// `*out_ticket`. The account's wallet is resumed (its first join creates it with the starting
/// gold); account 0 is a wallet for this session only, refused `MMO_ERR_ACCOUNT_REQUIRED`
/// once `mmo_economy_open` has opened a store. One live session per account
/// (`MMO_ERR_ACCOUNT_IN_SESSION`).
///
/// # Safety
/// `engine` a live engine or NULL; `out_ticket` writable or NULL.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn mmo_join(
    engine: *const MmoEngine,
    account_id: u64,
    x_m: f32,
    y_m: f32,
    faction: u8,
    out_ticket: *mut MmoJoinTicket,
) -> MmoStatus {
    // SAFETY: forwarded contract.
    unsafe {
        engine_boundary(engine, Access::Mutates, |h| {
            let out = check!(out_ptr(out_ticket));
            match h.engine.join_account(account_id, x_m, y_m, faction) {
                Ok(t) => {
                    out.write(MmoJoinTicket {
                        player_id: t.player_id,
                        session_token: t.session_token,
                        slot_hint: t.slot_hint,
                        x_m: t.x_m,
                        y_m: t.y_m,
                        _reserved: 0,
                    });
                    MMO_OK
                }
                Err(JoinError::ServerFull) => MMO_ERR_SERVER_FULL,
                Err(JoinError::OutOfBounds) => MMO_ERR_OUT_OF_BOUNDS,
                Err(JoinError::AccountInSession) => MMO_ERR_ACCOUNT_IN_SESSION,
                Err(JoinError::AccountRequired) => MMO_ERR_ACCOUNT_REQUIRED,
                Err(JoinError::StorageBusy) => MMO_ERR_STORAGE_BUSY,
            }
        })
    }
}

/// Ends a player's session: out of combat the player is removed at once (their id goes
/// stale; their wallet is handed to persistence); within `logout_linger_ms` of a landed hit
/// between players, only the session ends (its token is refused from now on) and the body
/// stays in the world until the first tick at or after the last tick's time plus
/// `logout_linger_ms`, or the account's next [`mmo_join`].
///
/// # Safety
/// `engine` a live engine or NULL.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn mmo_leave(engine: *const MmoEngine, player_id: u64, session_token: u64) -> MmoStatus {
    // SAFETY: forwarded contract.
    unsafe {
        engine_boundary(engine, Access::Mutates, |h| match h.engine.leave(player_id, session_token) {
            Ok(()) => MMO_OK,
            Err(LeaveError::UnknownPlayer) => MMO_ERR_UNKNOWN_PLAYER,
            Err(LeaveError::WrongSession) => MMO_ERR_WRONG_SESSION,
        })
    }
}

/// The event capacity a move batch of `moves_len` records needs (its worst case).
///
/// # Safety
/// `engine` a live engine or NULL; `out_events` writable or NULL.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn mmo_move_events_required(engine: *const MmoEngine, moves_len: usize, out_events: *mut usize) -> MmoStatus {
    // SAFETY: forwarded contract.
    unsafe {
        engine_boundary(engine, Access::Reads, |h| {
            let out = check!(out_ptr(out_events));
            let Some(required) = moves_len.checked_mul(h.engine.events_per_move_max()) else { return MMO_ERR_INVALID_ARGUMENT };
            out.write(required);
            MMO_OK
        })
    }
}

/// Applies a batch of moves received at server time `now_ms`. For each record, in order,
/// writes an `Ack` and its `Contact`s, or one `Reject`, into `events`; writes the number of
/// events to `*out_events_written`. `events_capacity` must be at least
/// [`mmo_move_events_required`] for `moves_len`, or nothing is applied
/// ([`MMO_ERR_BUFFER_TOO_SMALL`]).
///
/// # Safety
/// `moves`/`moves_len` and `events`/`events_capacity` are borrowed slices (see the rules);
/// they must not overlap. `out_events_written` writable or NULL.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn mmo_apply_moves(
    engine: *const MmoEngine,
    moves: *const MoveRecord,
    moves_len: usize,
    now_ms: u64,
    events: *mut MoveEvent,
    events_capacity: usize,
    out_events_written: *mut usize,
) -> MmoStatus {
    // SAFETY: forwarded contract.
    unsafe {
        engine_boundary(engine, Access::Mutates, |h| {
            batch(moves, moves_len, events, events_capacity, out_events_written, |moves, events| {
                h.engine.apply_moves(moves, now_ms, events).map(|report| report.events)
            })
        })
    }
}

/// Spawns a raid burst (whole or nothing).
///
/// # Safety
/// `engine` a live engine or NULL; `request` readable or NULL; `out_report` writable or NULL.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn mmo_raid_spawn(
    engine: *const MmoEngine,
    request: *const RaidSpawnRequest,
    out_report: *mut MmoRaidReport,
) -> MmoStatus {
    // SAFETY: forwarded contract.
    unsafe {
        engine_boundary(engine, Access::Mutates, |h| {
            let request = check!(in_ref(request));
            let out = check!(out_ptr(out_report));
            match h.engine.raid_spawn(request) {
                Ok(r) => {
                    out.write(MmoRaidReport { spawned: r.spawned, cells: r.cells, expires_tick: r.expires_tick, _reserved: 0 });
                    MMO_OK
                }
                Err(RaidError::BadKind) => MMO_ERR_BAD_ENUM,
                Err(RaidError::BadCount | RaidError::BadLifetimeOrHp) => MMO_ERR_INVALID_ARGUMENT,
                Err(RaidError::OutOfBounds) => MMO_ERR_OUT_OF_BOUNDS,
                Err(RaidError::CapacityExceeded) => MMO_ERR_CAPACITY,
            }
        })
    }
}

/// Deals `amount` damage from a player to a player or raid object.
///
/// # Safety
/// `engine` a live engine or NULL; `out_result` writable or NULL.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn mmo_damage(
    engine: *const MmoEngine,
    attacker_id: u64,
    session_token: u64,
    target_id: u64,
    amount: i32,
    out_result: *mut MmoDamageResult,
) -> MmoStatus {
    // SAFETY: forwarded contract.
    unsafe {
        engine_boundary(engine, Access::Mutates, |h| {
            let out = check!(out_ptr(out_result));
            let (outcome, hp_left) = match h.engine.damage(attacker_id, session_token, target_id, amount) {
                Ok(DamageOutcome::Hit { hp_left }) => (1, hp_left),
                Ok(DamageOutcome::Killed) => (2, 0),
                Ok(DamageOutcome::AlreadyDead) => (3, 0),
                Err(DamageError::UnknownAttacker) => return MMO_ERR_UNKNOWN_PLAYER,
                Err(DamageError::WrongSession) => return MMO_ERR_WRONG_SESSION,
                Err(DamageError::UnknownTarget) => return MMO_ERR_UNKNOWN_TARGET,
                Err(DamageError::FriendlyFire) => return MMO_ERR_FRIENDLY_FIRE,
                Err(DamageError::InvalidAmount) => return MMO_ERR_INVALID_ARGUMENT,
            };
            out.write(MmoDamageResult { hp_left, outcome, _reserved: [0; 3] });
            MMO_OK
        })
    }
}

/// A player's attack on a player or raid object at server time `now_ms`: the server's rules
/// decide whether it lands (range, cooldown, faction, both alive) and what it takes
/// (`attack_damage`). A refused attack is a result, not an error: it returns [`MMO_OK`] with
/// `refusal` set.
///
/// # Safety
/// `engine` a live engine or NULL; `out_result` writable or NULL.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn mmo_attack(
    engine: *const MmoEngine,
    attacker_id: u64,
    session_token: u64,
    target_id: u64,
    now_ms: u64,
    out_result: *mut MmoAttackResult,
) -> MmoStatus {
    // SAFETY: forwarded contract.
    unsafe {
        engine_boundary(engine, Access::Mutates, |h| {
            let out = check!(out_ptr(out_result));
            let result = match h.engine.attack(attacker_id, session_token, target_id, now_ms) {
                Ok(r) => MmoAttackResult {
                    damage: r.damage,
                    hp_left: r.hp_left,
                    refusal: 0,
                    killed: u8::from(r.killed),
                    target_kind: r.target_kind as u8,
                    _reserved: [0; 5],
                },
                Err(refusal) => MmoAttackResult { refusal: refusal as u8, ..MmoAttackResult::default() },
            };
            out.write(result);
            MMO_OK
        })
    }
}

/// A player's claim of the loot a killed add dropped (`loot_id`: the add's id): the server
/// decides whether it is the claimer's (its kill, within `loot_range_m`) and what it holds
/// (the configured loot table). A refused claim is a result, not an error: it returns
/// [`MMO_OK`] with `refusal` set.
///
/// # Safety
/// `engine` a live engine or NULL; `out_result` writable or NULL.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn mmo_claim_loot(
    engine: *const MmoEngine,
    player_id: u64,
    session_token: u64,
    loot_id: u64,
    out_result: *mut MmoLootResult,
) -> MmoStatus {
    // SAFETY: forwarded contract.
    unsafe {
        engine_boundary(engine, Access::Mutates, |h| {
            let out = check!(out_ptr(out_result));
            let result = match h.engine.claim_loot(player_id, session_token, loot_id) {
                Ok(r) => MmoLootResult {
                    gold: r.contents.gold,
                    gold_after: r.gold_after,
                    item_count: r.contents.item_count,
                    item_kind: r.contents.item_kind,
                    refusal: 0,
                    repeat: u8::from(r.repeat),
                    ledger_seq: r.ledger_seq,
                },
                Err(refusal) => MmoLootResult { refusal: refusal as u8, ..MmoLootResult::default() },
            };
            out.write(result);
            MMO_OK
        })
    }
}

/// Opens the economy's store in the directory `data_dir` (`data_dir_len` bytes of UTF-8, no
/// NUL needed; `economy.redb` and the commit log's `economy-*.log` are created if absent),
/// loads every account's wallet and
/// starts the committer thread. From then on every change to a wallet is made durable in groups
/// (one fsync each) and each economy result carries a `ledger_seq`: tell it only once
/// [`mmo_economy_durable_through`] reaches it. After an idle spell the committer lets the first
/// change wait up to `commit_linger_us` (0..=100000; 0: not at all) for others, or until 16
/// wait, before it commits: fewer commits under a trickle of operations, at that much latency.
/// Commits append to a log whose segments are `log_segment_kib` KiB (0: 1024; else
/// 64..=1048576), each folded into `economy.redb` when full.
/// `on_durable(context)` is called on the committer thread after each durable group (NULL: not called; poll instead). Call once, after
/// `mmo_engine_new` and before any join. On failure nothing is opened and `message` (if
/// non-NULL) holds a NUL-terminated reason, truncated to `message_capacity`.
///
/// # Safety
/// `engine` a live engine or NULL; `data_dir`/`data_dir_len` a borrowed slice; `out_info`
/// writable or NULL; `message`/`message_capacity` a writable slice or NULL/0; `on_durable`
/// callable with `context` from any thread until `mmo_engine_free`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn mmo_economy_open(
    engine: *const MmoEngine,
    data_dir: *const u8,
    data_dir_len: usize,
    commit_linger_us: u32,
    log_segment_kib: u32,
    on_durable: MmoDurableCallback,
    context: *mut std::ffi::c_void,
    out_info: *mut MmoRecoveryInfo,
    message: *mut c_char,
    message_capacity: usize,
) -> MmoStatus {
    // SAFETY: forwarded contract.
    unsafe {
        engine_boundary(engine, Access::Mutates, |h| {
            let out = check!(out_ptr(out_info));
            let bytes = check!(input(data_dir, data_dir_len));
            let write_message = |text: &str| {
                if let Ok(buf) = output(message.cast::<u8>(), message_capacity) {
                    write_message(buf, text);
                }
            };
            let Ok(dir) = std::str::from_utf8(bytes) else {
                write_message("data_dir is not UTF-8");
                return MMO_ERR_INVALID_ARGUMENT;
            };
            if dir.is_empty() {
                write_message("data_dir is empty");
                return MMO_ERR_INVALID_ARGUMENT;
            }
            let policy = match CommitPolicy::lingering_us(commit_linger_us).and_then(|p| p.with_log_segment_kib(log_segment_kib)) {
                Ok(policy) => policy,
                Err(e) => {
                    write_message(&e);
                    return MMO_ERR_INVALID_ARGUMENT;
                }
            };
            let notice = on_durable.map(|callback| DurableNotice { callback, context });
            let on_durable: Box<dyn Fn() + Send> = Box::new(move || {
                if let Some(n) = &notice {
                    n.call();
                }
            });
            match h.engine.open_store(std::path::Path::new(dir), policy, on_durable) {
                Ok(r) => {
                    out.write(MmoRecoveryInfo {
                        accounts: r.accounts,
                        entries: r.entries,
                        elapsed_us: u64::try_from(r.elapsed.as_micros()).unwrap_or(u64::MAX),
                        repaired: u8::from(!r.repairs.is_empty()),
                        _reserved: [0; 7],
                    });
                    write_message(&r.repairs.join("; "));
                    MMO_OK
                }
                Err(e) => {
                    write_message(&e);
                    MMO_ERR_STORAGE
                }
            }
        })
    }
}

/// Writes to `*out_seq` how far the economy is durable: every result whose `ledger_seq` is at
/// most this may be told. With no store open, `UINT64_MAX`. Lock-free (one atomic load).
///
/// # Safety
/// `engine` a live engine or NULL; `out_seq` writable or NULL.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn mmo_economy_durable_through(engine: *const MmoEngine, out_seq: *mut u64) -> MmoStatus {
    // SAFETY: forwarded contract.
    unsafe {
        engine_boundary(engine, Access::Reads, |h| {
            let out = check!(out_ptr(out_seq));
            out.write(h.engine.economy_durable_through());
            MMO_OK
        })
    }
}

/// Applies a batch of economy operations, one result per operation in order; writes the
/// count to `*out_results_written`. `results_capacity` must be at least `ops_len`.
///
/// # Safety
/// `ops`/`ops_len` and `results`/`results_capacity` are borrowed slices (see the rules);
/// `out_results_written` writable or NULL.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn mmo_apply_economy(
    engine: *const MmoEngine,
    ops: *const EconomyOp,
    ops_len: usize,
    results: *mut EconomyResult,
    results_capacity: usize,
    out_results_written: *mut usize,
) -> MmoStatus {
    // SAFETY: forwarded contract.
    unsafe {
        engine_boundary(engine, Access::Mutates, |h| {
            batch(ops, ops_len, results, results_capacity, out_results_written, |ops, results| h.engine.apply_economy(ops, results))
        })
    }
}

/// A trade offer at server time `now_ms`: the maker's `give` goes into escrow until the taker
/// accepts or declines, the maker cancels, or `trade_timeout_ms` passes. The offer's id is its
/// `transaction_id`. A refused offer is a result (`status`), not an error.
///
/// # Safety
/// `engine` a live engine or NULL; `offer` readable or NULL; `out_result` writable or NULL.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn mmo_trade_offer(
    engine: *const MmoEngine,
    offer: *const TradeOffer,
    now_ms: u64,
    out_result: *mut EconomyResult,
) -> MmoStatus {
    // SAFETY: forwarded contract.
    unsafe {
        engine_boundary(engine, Access::Mutates, |h| {
            let offer = check!(in_ref(offer));
            let out = check!(out_ptr(out_result));
            out.write(h.engine.trade_offer(offer, now_ms));
            MMO_OK
        })
    }
}

/// An answer to a trade offer at server time `now_ms`: its taker accepts (both sides move at
/// once) or declines, or its maker cancels (`accept` 0, `maker_id` its own). A refused answer is
/// a result (`status`), not an error.
///
/// # Safety
/// `engine` a live engine or NULL; `answer` readable or NULL; `out_result` writable or NULL.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn mmo_trade_answer(
    engine: *const MmoEngine,
    answer: *const TradeAnswer,
    now_ms: u64,
    out_result: *mut EconomyResult,
) -> MmoStatus {
    // SAFETY: forwarded contract.
    unsafe {
        engine_boundary(engine, Access::Mutates, |h| {
            let answer = check!(in_ref(answer));
            let out = check!(out_ptr(out_result));
            out.write(h.engine.trade_answer(answer, now_ms));
            MMO_OK
        })
    }
}

/// An admin grant of `stack` to `player_id`, applied at most once per (player, `grant_id`),
/// ids increasing per player. For the admin path only: no client request reaches it. A refused
/// grant is a result (`status`), not an error.
///
/// # Safety
/// `engine` a live engine or NULL; `stack` readable or NULL; `out_result` writable or NULL.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn mmo_grant(
    engine: *const MmoEngine,
    player_id: u64,
    grant_id: u64,
    stack: *const TradeStack,
    out_result: *mut EconomyResult,
) -> MmoStatus {
    // SAFETY: forwarded contract.
    unsafe {
        engine_boundary(engine, Access::Mutates, |h| {
            let stack = check!(in_ref(stack));
            let out = check!(out_ptr(out_result));
            out.write(h.engine.grant(player_id, grant_id, stack));
            MMO_OK
        })
    }
}

/// Runs one tick at server time `now_ms`; writes its summary to `*out_info`.
///
/// # Safety
/// `engine` a live engine or NULL; `out_info` writable or NULL.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn mmo_tick(engine: *const MmoEngine, now_ms: u64, out_info: *mut MmoTickInfo) -> MmoStatus {
    // SAFETY: forwarded contract.
    unsafe {
        engine_boundary(engine, Access::Mutates, |h| {
            let out = check!(out_ptr(out_info));
            let i = h.engine.tick(now_ms);
            out.write(MmoTickInfo {
                now_ms: i.now_ms,
                tick: i.tick,
                players_live: i.players_live,
                objects_live: i.objects_live,
                objects_expired: i.objects_expired,
                bursts_live: i.bursts_live,
                snapshot_entities: i.snapshot_entities,
            });
            MMO_OK
        })
    }
}

/// Writes the nearest entities around a player into `entries` (at most
/// `min(capacity, aoi_k)`, within the AoI radius), nearest first, as of the latest world
/// snapshot; writes the count to `*out_written`. [`MMO_ERR_NOT_IN_SNAPSHOT`] for a live player
/// who joined after the latest tick (or before the first).
///
/// # Safety
/// `entries`/`capacity` is a borrowed output slice; `out_written` writable or NULL.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn mmo_area_of_interest(
    engine: *const MmoEngine,
    player_id: u64,
    entries: *mut AoiEntry,
    capacity: usize,
    out_written: *mut usize,
) -> MmoStatus {
    // SAFETY: forwarded contract.
    unsafe {
        engine_boundary(engine, Access::Reads, |h| {
            let entries = check!(output(entries, capacity));
            let written = check!(out_ptr(out_written));
            match h.engine.area_of_interest(player_id, entries) {
                Ok(n) => {
                    written.write(n);
                    MMO_OK
                }
                Err(AoiError::UnknownPlayer) => MMO_ERR_UNKNOWN_PLAYER,
                Err(AoiError::NotInSnapshot) => MMO_ERR_NOT_IN_SNAPSHOT,
            }
        })
    }
}

/// The areas of interest of `players_len` players from one pinned world snapshot (what a
/// network worker calls once per chunk of its sessions after each tick). Player `i`'s entries
/// (at most `min(k, aoi_k)`, nearest first) go to `entries[i * k ..]` and their count to
/// `counts[i]`, or [`MMO_AOI_NOT_IN_SNAPSHOT`] for a player not in the snapshot. `k` is at
/// most 64; `entries_capacity` must be at least `players_len * k` and `counts_capacity` at
/// least `players_len`, or nothing is written ([`MMO_ERR_BUFFER_TOO_SMALL`]). Writes the
/// snapshot's tick to `*out_info`. Allocates nothing.
///
/// # Safety
/// `players`/`players_len`, `entries`/`entries_capacity` and `counts`/`counts_capacity` are
/// borrowed slices (see the rules) that must not overlap; `out_info` writable or NULL.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn mmo_area_of_interest_batch(
    engine: *const MmoEngine,
    players: *const u64,
    players_len: usize,
    k: u32,
    entries: *mut AoiEntry,
    entries_capacity: usize,
    counts: *mut u32,
    counts_capacity: usize,
    out_info: *mut MmoAoiBatchInfo,
) -> MmoStatus {
    // SAFETY: forwarded contract.
    unsafe {
        engine_boundary(engine, Access::Reads, |h| {
            if k > mmo_core::config::AOI_K_MAX {
                return MMO_ERR_INVALID_ARGUMENT;
            }
            // Checked and tested for overlap before any slice is borrowed (see `batch`).
            check!(span_ok(players, players_len));
            check!(span_ok(entries, entries_capacity));
            check!(span_ok(counts, counts_capacity));
            let info_out = check!(out_ptr(out_info));
            let info_ptr = info_out.cast_const();
            if spans_overlap(players, players_len, entries, entries_capacity)
                || spans_overlap(players, players_len, counts, counts_capacity)
                || spans_overlap(entries, entries_capacity, counts, counts_capacity)
                || spans_overlap(info_ptr, 1, players, players_len)
                || spans_overlap(info_ptr, 1, entries, entries_capacity)
                || spans_overlap(info_ptr, 1, counts, counts_capacity)
            {
                return MMO_ERR_INVALID_ARGUMENT;
            }
            let players = check!(input(players, players_len));
            let entries = check!(output(entries, entries_capacity));
            let counts = check!(output(counts, counts_capacity));
            match h.engine.area_of_interest_batch(players, k as usize, entries, counts) {
                Ok(info) => {
                    info_out.write(MmoAoiBatchInfo { now_ms: info.now_ms, tick: info.tick, found: info.found });
                    MMO_OK
                }
                Err(_) => MMO_ERR_BUFFER_TOO_SMALL,
            }
        })
    }
}

/// Writes every counter to `*out_stats` (readable while other threads apply work).
///
/// # Safety
/// `engine` a live engine or NULL; `out_stats` writable or NULL.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn mmo_stats(engine: *const MmoEngine, out_stats: *mut StatsSnapshot) -> MmoStatus {
    // SAFETY: forwarded contract.
    unsafe {
        engine_boundary(engine, Access::Reads, |h| {
            let out = check!(out_ptr(out_stats));
            out.write(h.engine.stats());
            MMO_OK
        })
    }
}

/// Writes a consistent reading of the economy's gold to `*out_audit` (locks every wallet
/// shard briefly: for audits and tests, not the hot path).
///
/// # Safety
/// `engine` a live engine or NULL; `out_audit` writable or NULL.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn mmo_economy_audit(engine: *const MmoEngine, out_audit: *mut MmoEconomyAudit) -> MmoStatus {
    // SAFETY: forwarded contract.
    unsafe {
        engine_boundary(engine, Access::Reads, |h| {
            let out = check!(out_ptr(out_audit));
            let a = h.engine.economy_audit();
            let sat = |v: u128| u64::try_from(v).unwrap_or(u64::MAX);
            out.write(MmoEconomyAudit {
                live_gold: sat(a.live.gold),
                departed_gold: sat(a.departed.gold),
                minted_gold: sat(a.minted.gold),
                sunk_gold: sat(a.sunk.gold),
                loot_minted_gold: sat(a.minted_by_loot.gold),
                loot_minted_items: sat(a.minted_by_loot.items.iter().sum()),
                grant_minted_gold: sat(a.minted_by_grant.gold),
                grant_minted_items: sat(a.minted_by_grant.items.iter().sum()),
                escrowed_gold: sat(a.escrowed.gold),
                open_offers: a.open_offers,
                open_wallets: a.open_wallets,
                conserved: u8::from(a.is_conserved()),
                _reserved: [0; 3],
            });
            MMO_OK
        })
    }
}

/// Writes one player's state to `*out_view`.
///
/// # Safety
/// `engine` a live engine or NULL; `out_view` writable or NULL.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn mmo_player_view(engine: *const MmoEngine, player_id: u64, out_view: *mut MmoPlayerView) -> MmoStatus {
    // SAFETY: forwarded contract.
    unsafe {
        engine_boundary(engine, Access::Reads, |h| {
            let out = check!(out_ptr(out_view));
            let Some(v) = h.engine.player(player_id) else { return MMO_ERR_UNKNOWN_PLAYER };
            out.write(MmoPlayerView {
                x_m: v.x_m,
                y_m: v.y_m,
                last_sequence: v.last_sequence,
                cell: v.cell,
                hp: v.hp,
                faction: v.faction,
                _reserved: [0; 3],
                gold: v.gold,
                items: v.items,
            });
            MMO_OK
        })
    }
}

/// Test hook: panics inside a state-changing call, to prove the boundary catches it. Only
/// engines created with `fault_injection = 1` accept it ([`MMO_ERR_INVALID_ARGUMENT`]
/// otherwise). Returns [`MMO_ERR_PANIC`] and leaves the engine poisoned.
///
/// # Safety
/// `engine` a live engine or NULL.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn mmo_debug_inject_panic(engine: *const MmoEngine) -> MmoStatus {
    // SAFETY: forwarded contract.
    unsafe {
        engine_boundary(engine, Access::Mutates, |h| {
            if !h.fault_injection {
                return MMO_ERR_INVALID_ARGUMENT;
            }
            panic!("mmo_debug_inject_panic: injected fault");
        })
    }
}
