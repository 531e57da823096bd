//! # mmo-ffi: the C ABI over `mmo-core`
//!
//! The C++ network front calls the Rust core through these functions, tens of thousands of
//! times a second. The header `ffi/include/mmo_core.h` is generated from this crate by
//! cbindgen 0.29.4 (`make header`) and committed; CI regenerates it and fails on any
//! difference.
//!
//! ## Rules (repeated at the top of the header)
//! - **Status codes.** Every fallible function returns an [`MmoStatus`]: [`MMO_OK`] (0) or a
//!   code in the distinct range 1001..=1099, so a status is never mistaken for a count or a
//!   boolean. [`mmo_status_name`] names each one.
//! - **Outputs only on success.** Out-parameters are written only when the call returns
//!   [`MMO_OK`]; on any error they are left untouched.
//! - **Borrowed slices.** A `(pointer, length)` pair is borrowed for the duration of the call
//!   only and never retained. Length 0 means "empty" and the pointer may then be NULL. A NULL
//!   pointer with a non-zero length is [`MMO_ERR_NULL_POINTER`]; a pointer not aligned for its
//!   type is [`MMO_ERR_MISALIGNED_POINTER`]; a batch's input and output overlapping is
//!   [`MMO_ERR_INVALID_ARGUMENT`]. Output buffers must be initialised memory (zeroed is fine):
//!   the core takes them as Rust slices.
//! - **Whole batches.** A batch call whose output buffer cannot hold the worst case is
//!   refused whole with [`MMO_ERR_BUFFER_TOO_SMALL`] before anything is applied.
//! - **Enums are integers.** Records carry enums as `uint8_t`; the core decodes them with
//!   `TryFrom`, and an unknown value is a per-record refusal or [`MMO_ERR_BAD_ENUM`], never
//!   undefined behaviour.
//! - **No unwinding across the boundary.** Every exported body runs inside one
//!   `catch_unwind`. A panic returns [`MMO_ERR_PANIC`]; if it happened in a call that
//!   changes state, the engine is marked poisoned and every later call on it returns
//!   [`MMO_ERR_POISONED`] (its state may be half-updated; the process should restart it).
//!   After [`MMO_ERR_PANIC`] a batch call's output buffer may be partly written.
//!   C++ exceptions must never be thrown through these functions.
//! - **Threads.** [`mmo_engine_new`] and [`mmo_engine_free`] must not race with any other
//!   call on the same engine. Every other function may be called from any thread at the same
//!   time. [`mmo_tick`] is meant for one tick-driver thread (concurrent calls serialise).
//!   Each thread that will join players or spawn raids should call
//!   [`mmo_engine_prewarm_thread`] once before it starts serving.
//! - **Ownership.** The engine is owned by the caller between `mmo_engine_new` and
//!   `mmo_engine_free` (a `_new`/`_free` pair). Every buffer is owned by the caller.
//!
//! ## Allocator
//! The library does not choose an allocator: Rust's allocations go through `malloc`, so the
//! process that links it decides for both languages. A production binary links mimalloc's
//! `malloc` override; the test builds keep glibc's, so AddressSanitizer, valgrind and
//! heaptrack see every allocation the core makes.
//!
//! The batch records (`MmoMoveRecord`, `MmoMoveEvent`, `MmoEconomyOp`, ...) are
//! `mmo_core::records` itself, re-exported: the core reads and writes the caller's buffers in
//! place, so nothing is copied at the boundary and there is one definition of each layout.

use mmo_core::combat::{DamageOutcome, RaidError};
use mmo_core::{AoiError, BatchError, CoreConfig, DamageError, Engine, JoinError, LeaveError};
use std::ffi::c_char;
use std::mem::{align_of, offset_of, size_of};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicBool, Ordering};

pub use mmo_core::records::{
    AoiEntry, EconomyKind, EconomyOp, EconomyResult, EconomyStatus, EntityKind, EventKind, MoveEvent, MoveRecord, RaidSpawnRequest,
    RejectReason,
};
pub use mmo_core::stats::StatsSnapshot;

/// Version of this ABI. Bumped on any change to a function signature or record layout.
pub const MMO_ABI_VERSION: u32 = 1;

/// Result of a call: [`MMO_OK`] or an error code in 1001..=1099.
pub type MmoStatus = u32;

/// Success.
pub const MMO_OK: MmoStatus = 0;
/// A required pointer was NULL (or a non-empty slice had a NULL pointer).
pub const MMO_ERR_NULL_POINTER: MmoStatus = 1001;
/// A pointer was not aligned for its type.
pub const MMO_ERR_MISALIGNED_POINTER: MmoStatus = 1002;
/// An output buffer cannot hold the worst case for the batch; nothing was applied.
pub const MMO_ERR_BUFFER_TOO_SMALL: MmoStatus = 1003;
/// The configuration was refused by `CoreConfig::validate`.
pub const MMO_ERR_INVALID_CONFIG: MmoStatus = 1004;
/// An argument is out of range (non-positive amount, length too large, disabled hook).
pub const MMO_ERR_INVALID_ARGUMENT: MmoStatus = 1005;
/// An integer that should name an enum value does not.
pub const MMO_ERR_BAD_ENUM: MmoStatus = 1006;
/// No live player has that id.
pub const MMO_ERR_UNKNOWN_PLAYER: MmoStatus = 1007;
/// The session token does not match the player's.
pub const MMO_ERR_WRONG_SESSION: MmoStatus = 1008;
/// Player capacity is reached.
pub const MMO_ERR_SERVER_FULL: MmoStatus = 1009;
/// A position is outside the world or not finite.
pub const MMO_ERR_OUT_OF_BOUNDS: MmoStatus = 1010;
/// Raid object or burst capacity is reached; nothing was spawned.
pub const MMO_ERR_CAPACITY: MmoStatus = 1011;
/// The caller was built against another ABI version.
pub const MMO_ERR_ABI_MISMATCH: MmoStatus = 1012;
/// The damage target is not a live player or raid object.
pub const MMO_ERR_UNKNOWN_TARGET: MmoStatus = 1013;
/// Attacker and target are of the same faction.
pub const MMO_ERR_FRIENDLY_FIRE: MmoStatus = 1014;
/// An earlier call panicked while changing this engine's state; it must be recreated.
pub const MMO_ERR_POISONED: MmoStatus = 1098;
/// The core panicked during this call (caught; see [`MMO_ERR_POISONED`]).
pub const MMO_ERR_PANIC: MmoStatus = 1099;

/// Engine configuration. Field meanings and defaults: `mmo_core::CoreConfig`; fill it with
/// [`mmo_config_default`] and change what you need.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct MmoConfig {
    /// Side of the square world, metres.
    pub world_size_m: f32,
    /// Side of a grid cell, metres.
    pub cell_size_m: f32,
    /// Cell-change hysteresis margin, metres.
    pub cell_hysteresis_m: f32,
    /// Speed limit, metres per second.
    pub max_speed_m_per_s: f32,
    /// Extra metres allowed per move.
    pub speed_slack_m: f32,
    /// Contact radius, metres.
    pub contact_radius_m: f32,
    /// Client clock credit beyond the server's, milliseconds.
    pub clock_slack_ms: u32,
    /// Contact events per move, at most.
    pub contacts_per_move_max: u32,
    /// Entities per area-of-interest snapshot.
    pub aoi_k: u32,
    /// Players joined at once, at most.
    pub player_capacity: u32,
    /// Raid objects alive at once, at most.
    pub raid_object_capacity: u32,
    /// Raid bursts alive at once, at most.
    pub raid_burst_capacity: u32,
    /// Heap room a grid cell reserves when it first outgrows its inline members.
    pub cell_member_capacity: u32,
    /// Lock shards of the grid map (power of two).
    pub grid_shards: u32,
    /// Tick period, milliseconds.
    pub tick_ms: u32,
    /// Hit points a player joins with.
    pub player_hp: i32,
    /// Gold a new wallet starts with.
    pub starting_gold: u64,
    /// 1 enables [`mmo_debug_inject_panic`] on this engine (tests only); 0 in production.
    pub fault_injection: u8,
    /// Zero (checked: a non-zero value is [`MMO_ERR_INVALID_ARGUMENT`], so these bytes can
    /// carry new fields later).
    pub _reserved: [u8; 7],
}

/// What [`mmo_join`] hands back.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MmoJoinTicket {
    /// The new player's id (never 0).
    pub player_id: u64,
    /// The session token every later request must carry (never 0).
    pub session_token: u64,
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
    /// Zero.
    pub _reserved: u32,
}

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
    /// Open wallets.
    pub open_wallets: u32,
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
const _: () = assert!(size_of::<MmoConfig>() == 80 && align_of::<MmoConfig>() == 8);
const _: () = assert!(offset_of!(MmoConfig, starting_gold) == 64 && offset_of!(MmoConfig, fault_injection) == 72);
const _: () = assert!(size_of::<MmoJoinTicket>() == 16);
const _: () = assert!(size_of::<MmoRaidReport>() == 16);
const _: () = assert!(size_of::<MmoTickInfo>() == 32 && offset_of!(MmoTickInfo, tick) == 8);
const _: () = assert!(size_of::<MmoDamageResult>() == 8 && offset_of!(MmoDamageResult, outcome) == 4);
const _: () = assert!(size_of::<MmoEconomyAudit>() == 40 && offset_of!(MmoEconomyAudit, conserved) == 36);
const _: () = assert!(size_of::<MmoPlayerView>() == 160 && offset_of!(MmoPlayerView, gold) == 24);
const _: () = assert!(size_of::<StatsSnapshot>() == 8 * mmo_core::stats::COUNTER_COUNT);

impl From<&CoreConfig> for MmoConfig {
    fn from(c: &CoreConfig) -> Self {
        Self {
            world_size_m: c.world_size_m,
            cell_size_m: c.cell_size_m,
            cell_hysteresis_m: c.cell_hysteresis_m,
            max_speed_m_per_s: c.max_speed_m_per_s,
            speed_slack_m: c.speed_slack_m,
            contact_radius_m: c.contact_radius_m,
            clock_slack_ms: c.clock_slack_ms,
            contacts_per_move_max: c.contacts_per_move_max,
            aoi_k: c.aoi_k,
            player_capacity: c.player_capacity,
            raid_object_capacity: c.raid_object_capacity,
            raid_burst_capacity: c.raid_burst_capacity,
            cell_member_capacity: c.cell_member_capacity,
            grid_shards: c.grid_shards,
            tick_ms: c.tick_ms,
            player_hp: c.player_hp,
            starting_gold: c.starting_gold,
            fault_injection: 0,
            _reserved: [0; 7],
        }
    }
}

impl From<&MmoConfig> for CoreConfig {
    fn from(c: &MmoConfig) -> Self {
        Self {
            world_size_m: c.world_size_m,
            cell_size_m: c.cell_size_m,
            cell_hysteresis_m: c.cell_hysteresis_m,
            max_speed_m_per_s: c.max_speed_m_per_s,
            speed_slack_m: c.speed_slack_m,
            clock_slack_ms: c.clock_slack_ms,
            contact_radius_m: c.contact_radius_m,
            contacts_per_move_max: c.contacts_per_move_max,
            aoi_k: c.aoi_k,
            player_capacity: c.player_capacity,
            raid_object_capacity: c.raid_object_capacity,
            raid_burst_capacity: c.raid_burst_capacity,
            cell_member_capacity: c.cell_member_capacity,
            grid_shards: c.grid_shards,
            tick_ms: c.tick_ms,
            player_hp: c.player_hp,
            starting_gold: c.starting_gold,
        }
    }
}

/// An engine as the C side holds it: opaque.
pub struct MmoEngine {
    /// The core. Shared by every calling thread.
    engine: Engine,
    /// Set when a state-changing call panicked. Written by the boundary, read by every call.
    poisoned: AtomicBool,
    /// Whether [`mmo_debug_inject_panic`] may be used. Fixed at creation.
    fault_injection: bool,
}

/// Whether a call changes engine state (a panic in it poisons the engine).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Access {
    Reads,
    Mutates,
}

/// The one panic boundary for calls that need no engine.
fn boundary(body: impl FnOnce() -> MmoStatus) -> MmoStatus {
    boundary_or(MMO_ERR_PANIC, body)
}

/// The panic boundary for the few calls that return a value instead of a status: a panic
/// returns `fallback`.
fn boundary_or<T>(fallback: T, body: impl FnOnce() -> T) -> T {
    catch_unwind(AssertUnwindSafe(body)).unwrap_or(fallback)
}

/// The one panic boundary for calls on an engine: validates the handle, refuses a poisoned
/// engine, catches any panic and poisons the engine if the call was changing state.
///
/// # Safety
/// `engine` must be NULL or a pointer returned by [`mmo_engine_new`] and not yet freed.
unsafe fn engine_boundary(engine: *const MmoEngine, access: Access, body: impl FnOnce(&MmoEngine) -> MmoStatus) -> MmoStatus {
    if engine.is_null() {
        return MMO_ERR_NULL_POINTER;
    }
    if !(engine as usize).is_multiple_of(align_of::<MmoEngine>()) {
        return MMO_ERR_MISALIGNED_POINTER;
    }
    // SAFETY: non-null and aligned; the caller promises it came from mmo_engine_new.
    let handle = unsafe { &*engine };
    if handle.poisoned.load(Ordering::Acquire) {
        return MMO_ERR_POISONED;
    }
    match catch_unwind(AssertUnwindSafe(|| body(handle))) {
        Ok(status) => status,
        Err(_) => {
            if access == Access::Mutates {
                handle.poisoned.store(true, Ordering::Release);
            }
            MMO_ERR_PANIC
        }
    }
}

/// The checks every pointer from C gets: non-null and aligned for `T`, and `len` elements of
/// `T` within `isize::MAX` bytes (as `slice::from_raw_parts` requires).
fn check_ptr<T>(ptr: *const T, len: usize) -> Result<(), MmoStatus> {
    if ptr.is_null() {
        Err(MMO_ERR_NULL_POINTER)
    } else if !(ptr as usize).is_multiple_of(align_of::<T>()) {
        Err(MMO_ERR_MISALIGNED_POINTER)
    } else if len > isize::MAX as usize / size_of::<T>().max(1) {
        Err(MMO_ERR_INVALID_ARGUMENT)
    } else {
        Ok(())
    }
}

/// Borrows a `(pointer, length)` input slice for the call. Length 0 is empty whatever the
/// pointer.
///
/// # Safety
/// If `len > 0` and `ptr` is non-null and aligned, it must point to `len` initialised `T`s
/// that stay valid and unmodified for the call.
unsafe fn input<'a, T>(ptr: *const T, len: usize) -> Result<&'a [T], MmoStatus> {
    if len == 0 {
        return Ok(&[]);
    }
    check_ptr(ptr, len)?;
    // SAFETY: checked non-null, aligned and in size range; validity is the caller's promise.
    Ok(unsafe { std::slice::from_raw_parts(ptr, len) })
}

/// Borrows a `(pointer, capacity)` output slice for the call.
///
/// # Safety
/// As [`input`], for `capacity` writable `T`s not aliased by any other argument.
unsafe fn output<'a, T>(ptr: *mut T, capacity: usize) -> Result<&'a mut [T], MmoStatus> {
    if capacity == 0 {
        return Ok(&mut []);
    }
    check_ptr(ptr, capacity)?;
    // SAFETY: as for `input`; exclusivity is the caller's promise.
    Ok(unsafe { std::slice::from_raw_parts_mut(ptr, capacity) })
}

/// Checks a single out-pointer.
fn out_ptr<T>(ptr: *mut T) -> Result<*mut T, MmoStatus> {
    check_ptr(ptr, 1).map(|()| ptr)
}

/// Checks a single in-pointer and borrows its value for the call.
///
/// # Safety
/// If non-null and aligned, `ptr` must point to an initialised `T`.
unsafe fn in_ref<'a, T>(ptr: *const T) -> Result<&'a T, MmoStatus> {
    check_ptr(ptr, 1)?;
    // SAFETY: checked non-null and aligned; validity is the caller's promise.
    Ok(unsafe { &*ptr })
}

/// The shape every batch call shares: borrow the input slice and the output buffer, run the
/// batch, and write the count of outputs only on success.
///
/// # Safety
/// As [`input`] and [`output`] for the two slices (which must not overlap); `out_written`
/// NULL or writable.
unsafe fn batch<I, O>(
    input_ptr: *const I,
    input_len: usize,
    output_ptr: *mut O,
    output_capacity: usize,
    out_written: *mut usize,
    apply: impl FnOnce(&[I], &mut [O]) -> Result<usize, BatchError>,
) -> MmoStatus {
    // SAFETY: forwarded contract.
    let inputs = match unsafe { input(input_ptr, input_len) } {
        Ok(s) => s,
        Err(status) => return status,
    };
    // SAFETY: forwarded contract.
    let outputs = match unsafe { output(output_ptr, output_capacity) } {
        Ok(s) => s,
        Err(status) => return status,
    };
    let written = match out_ptr(out_written) {
        Ok(p) => p,
        Err(status) => return status,
    };
    let input_bytes = inputs.as_ptr_range();
    let output_bytes = outputs.as_ptr_range();
    let overlap = (input_bytes.start as usize) < (output_bytes.end as usize) && (output_bytes.start as usize) < (input_bytes.end as usize);
    if overlap {
        return MMO_ERR_INVALID_ARGUMENT;
    }
    match apply(inputs, outputs) {
        Ok(n) => {
            // SAFETY: checked by out_ptr.
            unsafe { written.write(n) };
            MMO_OK
        }
        Err(BatchError::OutputTooSmall { .. }) => MMO_ERR_BUFFER_TOO_SMALL,
    }
}

/// Evaluates a `Result<T, MmoStatus>`, returning the status from the enclosing closure on error.
macro_rules! check {
    ($e:expr) => {
        match $e {
            Ok(v) => v,
            Err(status) => return status,
        }
    };
}

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

fn status_name(status: MmoStatus) -> &'static [u8] {
    match status {
        MMO_OK => b"MMO_OK\0",
        MMO_ERR_NULL_POINTER => b"MMO_ERR_NULL_POINTER\0",
        MMO_ERR_MISALIGNED_POINTER => b"MMO_ERR_MISALIGNED_POINTER\0",
        MMO_ERR_BUFFER_TOO_SMALL => b"MMO_ERR_BUFFER_TOO_SMALL\0",
        MMO_ERR_INVALID_CONFIG => b"MMO_ERR_INVALID_CONFIG\0",
        MMO_ERR_INVALID_ARGUMENT => b"MMO_ERR_INVALID_ARGUMENT\0",
        MMO_ERR_BAD_ENUM => b"MMO_ERR_BAD_ENUM\0",
        MMO_ERR_UNKNOWN_PLAYER => b"MMO_ERR_UNKNOWN_PLAYER\0",
        MMO_ERR_WRONG_SESSION => b"MMO_ERR_WRONG_SESSION\0",
        MMO_ERR_SERVER_FULL => b"MMO_ERR_SERVER_FULL\0",
        MMO_ERR_OUT_OF_BOUNDS => b"MMO_ERR_OUT_OF_BOUNDS\0",
        MMO_ERR_CAPACITY => b"MMO_ERR_CAPACITY\0",
        MMO_ERR_ABI_MISMATCH => b"MMO_ERR_ABI_MISMATCH\0",
        MMO_ERR_UNKNOWN_TARGET => b"MMO_ERR_UNKNOWN_TARGET\0",
        MMO_ERR_FRIENDLY_FIRE => b"MMO_ERR_FRIENDLY_FIRE\0",
        MMO_ERR_POISONED => b"MMO_ERR_POISONED\0",
        MMO_ERR_PANIC => b"MMO_ERR_PANIC\0",
        _ => b"MMO_UNKNOWN_STATUS\0",
    }
}

/// Writes the default configuration into `*out`.
///
/// # Safety
/// `out` must be NULL or point to writable memory for one `MmoConfig`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn mmo_config_default(out: *mut MmoConfig) -> MmoStatus {
    boundary(|| {
        let out = check!(out_ptr(out));
        // SAFETY: checked by out_ptr; writable per the contract.
        unsafe { out.write(MmoConfig::from(&CoreConfig::default())) };
        MMO_OK
    })
}

/// Creates an engine from `*config` and writes its handle to `*out_engine`. Free it with
/// [`mmo_engine_free`]. Pre-warms the calling thread's arenas.
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

/// Pre-warms the calling thread's arena shards: every thread that will join players or spawn
/// raids calls this once at start-up (a network worker does both).
///
/// # Safety
/// `engine` must be NULL or a live engine.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn mmo_engine_prewarm_thread(engine: *const MmoEngine) -> MmoStatus {
    // SAFETY: forwarded contract.
    unsafe {
        engine_boundary(engine, Access::Mutates, |h| {
            h.engine.prewarm_current_thread();
            MMO_OK
        })
    }
}

/// Joins a player at `(x_m, y_m)` in `faction`; writes the ticket to `*out_ticket`.
///
/// # Safety
/// `engine` a live engine or NULL; `out_ticket` writable or NULL.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn mmo_join(engine: *const MmoEngine, x_m: f32, y_m: f32, faction: u8, out_ticket: *mut MmoJoinTicket) -> MmoStatus {
    // SAFETY: forwarded contract.
    unsafe {
        engine_boundary(engine, Access::Mutates, |h| {
            let out = check!(out_ptr(out_ticket));
            match h.engine.join(x_m, y_m, faction) {
                Ok(t) => {
                    out.write(MmoJoinTicket { player_id: t.player_id, session_token: t.session_token });
                    MMO_OK
                }
                Err(JoinError::ServerFull) => MMO_ERR_SERVER_FULL,
                Err(JoinError::OutOfBounds) => MMO_ERR_OUT_OF_BOUNDS,
            }
        })
    }
}

/// Removes a player (their id goes stale; their wallet is handed to persistence).
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
                _reserved: 0,
            });
            MMO_OK
        })
    }
}

/// Writes the nearest entities around a player into `entries` (at most
/// `min(capacity, aoi_k)`), nearest first; writes the count to `*out_written`.
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

// After `check!` is defined: macro_rules are in scope textually.
pub mod latency;
pub use latency::{MmoLatency, MmoLatencySummary};
