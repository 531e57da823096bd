//! The world snapshot: every entity's position as of one tick, published for lock-free reads.
//!
//! ## Why
//! The area of interest (each player's nearest `K` entities) is the heaviest read the server
//! makes: every player, every tick. Reading the live grid for it would scan crowded cells under
//! the locks movers need. Instead, once per tick, the tick copies every position into an
//! immutable [`WorldSnapshot`] and publishes it; network workers then compute their own
//! players' areas of interest from it, pinning it for one batch. The area of interest is
//! therefore "as of tick T" (the protocol says so), and no reader of it ever holds a lock a
//! mover needs.
//!
//! ## Layout (structure of arrays, entities contiguous by cell)
//! The snapshot has its own fine grid ([`crate::CoreConfig::snapshot_cell_m`], 5 m by
//! default: a crowded raid cell of the collision grid holds a thousand entities, a snapshot
//! cell about twenty). Entities are sorted by snapshot cell and, within a cell, from west to
//! east (an LSD radix sort on [`SnapshotGeometry::sort_key`]: the cell key, then the place in
//! the cell's width in steps of about a millimetre) into parallel arrays `xs`, `ys`, `ids`,
//! `kinds`, so each row's entities run west to east; the occupied cells are listed in key
//! order with their first entity, and `row_start` gives each row's first occupied cell, so a
//! query finds where a row's entities pass the viewer's column with one slice and, unless the
//! row's occupied cells run unbroken up to it, a binary search. Nothing is stored for empty
//! cells: a 4 km world costs a row index, not a cell index.
//!
//! ## Nearest K
//! [`WorldSnapshot::nearest`] returns the `k` entities nearest the viewer within
//! [`crate::CoreConfig::aoi_radius_m`], nearest first, ties broken by id (both by squared
//! distance in `f32`, as the C++ baseline computes it). It visits the viewer's row first and
//! then rows outward, and skips any row whose nearest point is farther than the current `k`-th
//! candidate (or the radius while fewer than `k` are known). Within a row it reads the members
//! contiguously from the viewer's column outward, east then west, and ends each direction at
//! the first member whose distance in `x` alone is past that bound: a band about as wide as
//! the bound, where a scan by cells read every cell the band touches. In a raid crowd a query
//! reads a few dozen entities, not the thousands in the collision grid's 3x3 cells.
//! [`WorldSnapshot::nearest_hinted`] first looks only as far as the caller's hint and looks
//! again over the whole radius only if fewer than `k` lie within it; the answer is the same
//! for any hint. The engine's hint is where last tick's answer can be now ([`hint_reach_m`]:
//! raid objects where they were, players up to a tick's walk farther) plus how far the viewer
//! itself has moved since.
//!
//! ## Publication: [`SnapshotBoard`]
//! Three snapshot buffers are allocated once and reused forever: publishing never allocates
//! once the buffers have grown to the world's size. Each buffer has one atomic word: its
//! reader count, plus a `WRITING` bit. The tick (the only writer, holding the board's
//! [`SnapshotWriter`] token) claims a buffer that is not current by a compare-and-swap of that
//! word from 0 to `WRITING`, builds into it, clears the bit and makes it current. A reader
//! pins the current buffer with a fetch-add on the same word: if the bit was set, the buffer is
//! being built and the reader lets go and retries; otherwise its count keeps the writer's CAS
//! from succeeding until it un-pins (a fetch-sub). Exclusion therefore rests on one word per
//! buffer and its modification order alone (no store/load race between two locations), and the
//! release/acquire pairs on that word order the writer's build before any read of it and every
//! read before the next rebuild. After pinning, the reader checks the buffer is still current
//! and retries if not, so it reads the latest snapshot, not merely a complete one. With three
//! buffers the writer finds one free unless readers hold two different old snapshots at once;
//! it then skips that tick's publication (counted) rather than wait. The protocol is
//! model-checked in `tests/loom/snapshot_board.rs`.
//!
//! Why not crossbeam-epoch: it was the first choice and is what this job is usually given. Its
//! deferred functions wait in a per-thread bag of 64 until the bag is sealed, so a retired
//! snapshot comes back only after 64 more retirements unless the writer flushes, and every
//! flush allocates the sealed bag's queue node (about 2 KiB). Either the pool holds 65
//! snapshots or publishing allocates every tick; a reader count per buffer needs neither, and
//! readers pin once per batch, so the count is touched a few times per tick.

use crate::candidate_sort;
use crate::config::AOI_K_MAX;
use crate::records::{AoiEntry, EntityKind};
use crate::sync::{AtomicUsize, ConstPtr, MutPtr, Ordering, UnsafeCell};
use crossbeam_utils::CachePadded;
// The hints are plain std atomics under loom too: zero-initialised in a reserved table, and
// no part of the publication protocol the loom model checks.
use std::sync::atomic::{AtomicU32, AtomicU64};

/// Buffers a [`SnapshotBoard`] cycles through.
pub const SNAPSHOT_BUFFERS: usize = 3;
/// Attempts a reader makes to pin the current snapshot before it gives up (each failed attempt
/// means a publication happened meanwhile; publications come once per tick).
pub const PIN_ATTEMPTS_MAX: u32 = 64;
/// `current` when nothing has been published yet.
const NONE: usize = usize::MAX;
/// The bit of a buffer's word that says the writer is building in it.
const WRITING: usize = 1 << (usize::BITS - 1);

struct Buffer<T> {
    /// Readers pinning this buffer, plus [`WRITING`] while the writer builds in it. Readers
    /// fetch-add / fetch-sub it; the writer claims it by CAS from 0 and releases the bit.
    /// On its own 128-byte block: readers on different cores touch it once per batch, and it
    /// must not share a line with the buffer's data (x86-64's adjacent-line prefetch pulls
    /// pairs of 64-byte lines).
    state: CachePadded<AtomicUsize>,
    /// The snapshot. Written by the writer while it holds [`WRITING`]; read by readers holding
    /// a pin.
    value: UnsafeCell<T>,
}

/// Single-writer, many-reader publication of a value rebuilt in place. See the module doc.
pub struct SnapshotBoard<T> {
    /// Which writer token may write here.
    id: u64,
    buffers: [Buffer<T>; SNAPSHOT_BUFFERS],
    /// Index of the published buffer, or `NONE`. Written by the writer, read by readers.
    current: CachePadded<AtomicUsize>,
}

// SAFETY: the board hands out `&T` to readers on any thread (so `T: Sync`) and the writer
// writes a `T` built on its own thread into a buffer no reader holds (so `T: Send`); the
// protocol in the module doc keeps those two apart.
unsafe impl<T: Send + Sync> Sync for SnapshotBoard<T> {}
// SAFETY: as above; moving the board moves the buffers with it.
unsafe impl<T: Send> Send for SnapshotBoard<T> {}

/// The right to write to one board: made only by [`SnapshotBoard::new`], together with the
/// board, and held by its one writer (not `Clone`), so there is one writer per board.
#[derive(Debug)]
pub struct SnapshotWriter {
    /// The board this token writes.
    board: u64,
}

/// Source of board ids (process-wide; not part of the publication protocol).
static NEXT_BOARD_ID: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);

/// A buffer the writer may fill; hand it to [`SnapshotBoard::publish`].
pub struct WriteSlot<'a, T> {
    board: &'a SnapshotBoard<T>,
    index: usize,
    value: MutPtr<T>,
}

impl<T> std::ops::Deref for WriteSlot<'_, T> {
    type Target = T;
    fn deref(&self) -> &T {
        // SAFETY: begin_write chose a buffer that is not current and that no reader pins, and a
        // reader can only pin a current buffer; the writer token makes this the only writer.
        unsafe { self.value.deref() }
    }
}

impl<T> std::ops::DerefMut for WriteSlot<'_, T> {
    fn deref_mut(&mut self) -> &mut T {
        // SAFETY: as for deref; `&mut self` makes this the only reference through the slot.
        unsafe { self.value.deref() }
    }
}

/// A pinned snapshot; dereferences to it. Un-pins when dropped.
pub struct SnapshotGuard<'a, T> {
    board: &'a SnapshotBoard<T>,
    index: usize,
    /// The read access; `None` only while the guard drops (the access ends before the pin).
    value: Option<ConstPtr<T>>,
}

impl<T> std::ops::Deref for SnapshotGuard<'_, T> {
    type Target = T;
    fn deref(&self) -> &T {
        let value = self.value.as_ref().expect("a live guard holds its access");
        // SAFETY: the pin keeps the writer away from this buffer until the guard drops.
        unsafe { value.deref() }
    }
}

impl<T> Drop for SnapshotGuard<'_, T> {
    fn drop(&mut self) {
        // End the read access first: once the count drops, the writer may rebuild the buffer.
        self.value = None;
        // Release: this reader's reads happen before the writer's next claim (an acquire CAS).
        let before = self.board.buffers[self.index].state.fetch_sub(1, Ordering::Release);
        debug_assert!(before & !WRITING > 0 && before & WRITING == 0, "un-pinned a buffer nobody pinned");
    }
}

impl<T> SnapshotBoard<T> {
    /// A board with nothing published, its buffers made by `make`, and its writer token.
    pub fn new(make: impl Fn() -> T) -> (Self, SnapshotWriter) {
        let id = NEXT_BOARD_ID.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let board = Self {
            id,
            buffers: std::array::from_fn(|_| Buffer { state: CachePadded::new(AtomicUsize::new(0)), value: UnsafeCell::new(make()) }),
            current: CachePadded::new(AtomicUsize::new(NONE)),
        };
        (board, SnapshotWriter { board: id })
    }

    /// A buffer to build the next snapshot in, or `None` when readers held every buffer but
    /// the current one as the writer looked at it (the writer skips this publication; it never
    /// waits). One pass: a reader moving its pin from one buffer to the next just as the
    /// writer looks can make a pass miss both, which costs one tick's publication, counted.
    pub fn begin_write<'a>(&'a self, writer: &'a mut SnapshotWriter) -> Option<WriteSlot<'a, T>> {
        assert_eq!(writer.board, self.id, "a snapshot writer token used on another board");
        // Only this writer stores `current`, so this load sees its own last publication.
        let current = self.current.load(Ordering::Relaxed);
        (0..SNAPSHOT_BUFFERS)
            .find(|&i| {
                // Acquire: every read of this buffer by its last readers happens before the build.
                i != current && self.buffers[i].state.compare_exchange(0, WRITING, Ordering::Acquire, Ordering::Relaxed).is_ok()
            })
            .map(|index| WriteSlot { board: self, index, value: self.buffers[index].value.get_mut() })
    }

    /// Makes a filled buffer the current snapshot.
    pub fn publish(&self, slot: WriteSlot<'_, T>) {
        assert!(std::ptr::eq(slot.board, self), "a slot of another board");
        let WriteSlot { index, value, .. } = slot;
        // The writer's access ends before readers can pin the buffer (under loom the pointer
        // tracks the access and ends it when dropped).
        #[allow(clippy::drop_non_drop)]
        drop(value);
        // Release: the build happens before any pin that finds the bit cleared.
        let before = self.buffers[index].state.fetch_and(!WRITING, Ordering::Release);
        debug_assert_eq!(before, WRITING, "no reader holds a buffer being built");
        // Release: a reader that finds this index current finds the build complete.
        self.current.store(index, Ordering::Release);
    }

    /// Pins the current snapshot, or `None` if nothing is published yet (or, after
    /// [`PIN_ATTEMPTS_MAX`] attempts each overtaken by a publication, if the writer keeps
    /// publishing faster than this reader can pin).
    pub fn pin(&self) -> Option<SnapshotGuard<'_, T>> {
        for _ in 0..PIN_ATTEMPTS_MAX {
            let index = self.current.load(Ordering::Acquire);
            if index == NONE {
                return None;
            }
            let buffer = &self.buffers[index];
            // Acquire: pairs with the writer's release of WRITING, so a complete build is seen.
            let before = buffer.state.fetch_add(1, Ordering::Acquire);
            if before & WRITING == 0 && self.current.load(Ordering::Acquire) == index {
                return Some(SnapshotGuard { board: self, index, value: Some(buffer.value.get()) });
            }
            // Being rebuilt, or overtaken by a publication: let go and retry.
            buffer.state.fetch_sub(1, Ordering::Release);
        }
        None
    }
}

/// How [`WorldSnapshot::nearest_hinted`] found its answer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AoiLook {
    /// Within the hint alone.
    Hinted,
    /// Within the hint, which held fewer than k, then again over the whole radius.
    Wide,
    /// Over the whole radius only: no usable hint.
    Whole,
}

/// How far from where a viewer stood the `k` entities of its last answer (`answer`, all `k` of
/// them) can be one tick later, metres, or 0 if the answer held fewer than `k`: each entry's
/// distance, plus `player_closing_m` (the most a player walks in a tick,
/// [`crate::CoreConfig::aoi_player_closing_m`]) for a player. Raid objects do not move (they
/// spawn, change kind and expire), so they add nothing. With the viewer's own move since
/// added, this is the hint for its next query ([`WorldSnapshot::nearest_hinted`]): usually
/// `k` entities still lie within it, so the narrow look is the answer; when not (an object
/// expired, a player outran the tick's walk, more than a tick passed since the last query),
/// the wide look follows, and the answer is the same either way.
pub fn hint_reach_m(answer: &[AoiEntry], k: usize, player_closing_m: f32) -> f32 {
    if k == 0 || answer.len() < k {
        return 0.0;
    }
    answer[..k]
        .iter()
        .map(|e| if e.kind == EntityKind::Player as u8 { e.distance_m + player_closing_m } else { e.distance_m })
        .fold(0.0, f32::max)
}

/// One player's hint for its next area-of-interest query: how far from `viewer_at` its last
/// answer can be a tick later ([`hint_reach_m`]), and where it stood for that answer. The
/// engine keeps one per movement slot in a table of its own (all-zero: no hint), so a query
/// touches 16 bytes of a dense table instead of the player's arena record.
///
/// A hint only: any value gives the same answer ([`WorldSnapshot::nearest_hinted`]), so a
/// reach and a position from two different queries, should two workers ever race on one
/// player (or a slot's last player on its next, across a leave and a join), cost a wider look
/// at most. Written and read by whichever worker computes the slot's player's area of interest,
/// normally one per tick, and cleared by the join that takes the slot; all Relaxed.
#[derive(Debug, Default)]
pub struct AoiHint {
    /// The last answer's reach, metres, as `f32` bits (0: no hint, the whole radius).
    reach_m: AtomicU32,
    /// Where the player stood for its last query: `x` bits in the low half, `y` bits in the high
    /// half.
    viewer_at: AtomicU64,
}

const _: () = assert!(std::mem::size_of::<AoiHint>() == 16, "four hints to a cache line");

impl AoiHint {
    /// How far from `viewer_at`, where the player stands now, its next query should look first,
    /// metres (0: no hint): its last answer's reach plus how far it has moved since.
    #[inline]
    pub fn hint_m(&self, viewer_at: (f32, f32)) -> f32 {
        let reach_m = f32::from_bits(self.reach_m.load(Ordering::Relaxed));
        if reach_m <= 0.0 {
            return 0.0;
        }
        let at = self.viewer_at.load(Ordering::Relaxed);
        let (dx, dy) = (viewer_at.0 - f32::from_bits(at as u32), viewer_at.1 - f32::from_bits((at >> 32) as u32));
        reach_m + (dx * dx + dy * dy).sqrt()
    }

    /// Records the player's last area of interest for its next query: how far from
    /// `viewer_at`, where it stood, that answer can be a tick later (0: no hint).
    #[inline]
    pub fn set(&self, reach_m: f32, viewer_at: (f32, f32)) {
        self.reach_m.store(reach_m.to_bits(), Ordering::Relaxed);
        self.viewer_at.store(u64::from(viewer_at.0.to_bits()) | u64::from(viewer_at.1.to_bits()) << 32, Ordering::Relaxed);
    }

    /// Forgets the hint (a new player in the slot).
    #[inline]
    pub fn clear(&self) {
        self.reach_m.store(0, Ordering::Relaxed);
    }
}

/// Members a query's cell scan tests at once (see `nearest_within`): 8 `f32`s are two SSE2
/// registers (the x86-64 baseline this builds for) or one AVX register, and a raid cell of
/// about twenty members is two chunks and a part.
const SCAN_LANES: usize = 8;

/// What the batch query reports for a player not in the snapshot (joined after it was built,
/// left since, or unknown); also a raid object's slot on its way into a snapshot.
pub const NOT_IN_SNAPSHOT: u32 = u32::MAX;

/// A player found in a snapshot by [`WorldSnapshot::player`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PlayerInSnapshot {
    /// Its entity index in the snapshot (the viewer of its queries).
    pub entity: usize,
    /// The movement slot it occupied when the snapshot was built.
    pub slot: u32,
}

/// One entry of a snapshot's player index (open addressing, linear probing): the player id
/// (0: vacant, ids start at 1), its entity index and its movement slot. 16 bytes, four to a
/// cache line, so a lookup is usually one line and needs nothing else: a query's viewer comes
/// out of the snapshot the query reads, not out of the player arena (a sharded-slab `get`,
/// whose reference count is two atomic writes to a line of its own; 4% of the engine's
/// samples in a 1,000-bot raid when each query started there).
#[derive(Clone, Copy, Debug, Default)]
struct PlayerIndexEntry {
    id: u64,
    entity: u32,
    slot: u32,
}

const _: () = assert!(std::mem::size_of::<PlayerIndexEntry>() == 16);

/// The player index's first probe for `id` in a table of `1 << bits` entries (Fibonacci
/// hashing: player ids are arena keys, whose low bits alone would cluster).
#[inline]
fn player_index_home(id: u64, bits: u32) -> usize {
    (id.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> (64 - bits)) as usize
}

/// The geometry of a snapshot's grid and the area-of-interest query, fixed per engine.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SnapshotGeometry {
    /// Side of a snapshot cell, metres.
    pub cell_m: f32,
    /// `1 / cell_m`.
    pub inv_cell: f32,
    /// Cells along one side of the world.
    pub side: u32,
    /// Area-of-interest radius, metres.
    pub radius_m: f32,
    /// Bits of a sort key ([`Self::sort_key`]) below the cell key: where in its cell's width
    /// an entity stands, in `1 << column_bits` steps (12 bits, about 1 mm, for the default
    /// world and cells; fewer when the cell key needs more than 20 of the 32).
    column_bits: u32,
}

/// The most bits a sort key spends on an entity's place within its cell: 16 bits of a cell a
/// few metres wide are already finer than an `f32` position far from the world's origin.
const COLUMN_BITS_MAX: u32 = 16;

impl SnapshotGeometry {
    /// The geometry for a world of `world_size_m` with `cell_m` cells and an AoI `radius_m`.
    pub fn new(world_size_m: f32, cell_m: f32, radius_m: f32) -> Self {
        let side = (world_size_m / cell_m).ceil().max(1.0) as u32;
        // Cell keys run to `side * side - 1` (at most `u32::MAX`: at most 65,536 cells a side,
        // `CoreConfig::validate`); the rest of a 32-bit sort key places the entity in its cell.
        let cell_bits = u64::BITS - (u64::from(side) * u64::from(side) - 1).leading_zeros();
        assert!(cell_bits <= 32, "a snapshot has at most 65,536 cells a side");
        Self { cell_m, inv_cell: 1.0 / cell_m, side, radius_m, column_bits: (32 - cell_bits).min(COLUMN_BITS_MAX) }
    }

    #[inline]
    fn coord(&self, v: f32) -> u32 {
        ((v * self.inv_cell) as u32).min(self.side - 1)
    }

    /// The snapshot cell key of a position.
    #[inline]
    pub fn key(&self, x: f32, y: f32) -> u32 {
        self.coord(y) * self.side + self.coord(x)
    }

    /// The key a build sorts entities by: the cell key, then where in the cell's width the
    /// entity stands, so that a row's entities (its cells in column order, each cell's members
    /// by `x`) run from west to east. `x * inv_cell` only grows with `x`, and so do its whole
    /// part (the column) and its fraction's steps: an entity later in a row is never west of
    /// an earlier one by more than one step of its cell (see `row_disorder_m`).
    #[inline]
    pub fn sort_key(&self, x: f32, y: f32) -> u32 {
        let steps = 1u32 << self.column_bits;
        // The clamp keeps an `x` on the world's far edge (or beyond it) in its cell's last step.
        let step = (((x * self.inv_cell - self.coord(x) as f32) * steps as f32) as u32).min(steps - 1);
        (self.key(x, y) << self.column_bits) | step
    }

    /// The cell key of a sort key.
    #[inline]
    fn cell_of_sort_key(&self, sort_key: u32) -> u32 {
        sort_key >> self.column_bits
    }

    /// How far west of an earlier member of its row a later one can stand, metres: one step
    /// of a cell ([`Self::sort_key`]), plus a few units of the last place of the world's
    /// largest coordinate for the rounding of `x * inv_cell`.
    #[inline]
    fn row_disorder_m(&self) -> f32 {
        self.cell_m / (1u32 << self.column_bits) as f32 + self.side as f32 * self.cell_m * 4.0 * f32::EPSILON
    }
}

/// One entity on its way into a snapshot (the build's scratch). Its sort key is not kept with
/// it: the build computes the key once from the position, into the entity's sort word, and
/// reads it from there. Its kind and (for a player) its slot are kept beside it, in
/// [`SnapshotBuilder`]'s `kinds` and `slots`, so the entity itself stays 16 bytes.
#[derive(Clone, Copy, Debug)]
struct Pending {
    x: f32,
    y: f32,
    id: u64,
}

const _: () = assert!(std::mem::size_of::<Pending>() == 16);

/// The immutable world as of one tick. See the module doc for the layout.
#[derive(Debug)]
pub struct WorldSnapshot {
    /// Tick the snapshot was built at (0: never built).
    pub tick: u32,
    /// Server time of that tick, milliseconds.
    pub now_ms: u64,
    geometry: SnapshotGeometry,
    xs: Vec<f32>,
    ys: Vec<f32>,
    ids: Vec<u64>,
    kinds: Vec<u8>,
    /// Column of each occupied cell, in key order.
    cell_cx: Vec<u32>,
    /// First entity of each occupied cell; one more entry than cells (the end).
    cell_start: Vec<u32>,
    /// First occupied cell of each row; `side + 1` entries.
    row_start: Vec<u32>,
    /// The players by id: a power-of-two table at most half full (empty when no player is in
    /// the snapshot). See [`PlayerIndexEntry`].
    by_player: Vec<PlayerIndexEntry>,
}

impl WorldSnapshot {
    /// An empty snapshot with the engine's geometry.
    pub fn empty(geometry: SnapshotGeometry) -> Self {
        Self {
            tick: 0,
            now_ms: 0,
            geometry,
            xs: Vec::new(),
            ys: Vec::new(),
            ids: Vec::new(),
            kinds: Vec::new(),
            cell_cx: Vec::new(),
            cell_start: vec![0],
            row_start: vec![0; geometry.side as usize + 1],
            by_player: Vec::new(),
        }
    }

    /// Entities in the snapshot.
    pub fn len(&self) -> usize {
        self.ids.len()
    }

    /// Whether the snapshot holds no entity.
    pub fn is_empty(&self) -> bool {
        self.ids.is_empty()
    }

    /// The player `player_id`, if it is in the snapshot: its entity and its slot as of the
    /// snapshot's tick. One probe sequence in a table at most half full (a few entries at most;
    /// the loop is bounded by the table's length regardless).
    #[inline]
    pub fn player(&self, player_id: u64) -> Option<PlayerInSnapshot> {
        let len = self.by_player.len();
        if len == 0 || player_id == 0 {
            return None;
        }
        let mask = len - 1;
        let mut at = player_index_home(player_id, len.trailing_zeros());
        for _ in 0..len {
            let entry = self.by_player[at];
            if entry.id == player_id {
                return Some(PlayerInSnapshot { entity: entry.entity as usize, slot: entry.slot });
            }
            if entry.id == 0 {
                return None;
            }
            at = (at + 1) & mask;
        }
        None
    }

    /// The entity index of the player `player_id` in `slot`, if that player is in the snapshot
    /// in that slot.
    #[inline]
    pub fn entity_of_slot(&self, slot: u32, player_id: u64) -> Option<usize> {
        self.player(player_id).filter(|p| p.slot == slot).map(|p| p.entity)
    }

    /// Position of entity `index`.
    pub fn position(&self, index: usize) -> (f32, f32) {
        (self.xs[index], self.ys[index])
    }

    /// Writes the `out.len()` (at most [`AOI_K_MAX`]) entities nearest entity `viewer` within
    /// the AoI radius, nearest first (ties by id), excluding the viewer; returns how many.
    pub fn nearest(&self, viewer: usize, out: &mut [AoiEntry]) -> usize {
        self.nearest_within(viewer, self.geometry.radius_m, out, ShortAnswer::Keep)
    }

    /// [`Self::nearest`], looking first only within `hint_m` of the viewer: the same answer
    /// for any hint, cheaper when the hint is a little beyond the k-th nearest entity.
    ///
    /// If `k` entities lie within `hint_m`, they are the `k` nearest (everything else is
    /// farther), so the narrow query is the answer; otherwise the query runs again with the
    /// whole radius. A hint outside `(0, radius)` (NaN included) goes straight to the whole
    /// radius. The engine hints each player's query with [`hint_reach_m`] of its last answer
    /// plus the viewer's own move since: neighbours move little between ticks, so the narrow
    /// bound prunes from the first cell, where a query with no hint fills its `k` with
    /// whatever it meets first and then replaces most of them
    /// (`benches/benches/design/aoi.rs`, `*/snapshot_hinted`).
    ///
    /// Returns how many were written and how they were found ([`AoiLook`]).
    pub fn nearest_hinted(&self, viewer: usize, hint_m: f32, out: &mut [AoiEntry]) -> (usize, AoiLook) {
        let k = out.len().min(AOI_K_MAX as usize);
        if hint_m > 0.0 && hint_m < self.geometry.radius_m {
            let n = self.nearest_within(viewer, hint_m, out, ShortAnswer::Drop);
            if n == k {
                return (n, AoiLook::Hinted);
            }
            return (self.nearest_within(viewer, self.geometry.radius_m, out, ShortAnswer::Keep), AoiLook::Wide);
        }
        (self.nearest_within(viewer, self.geometry.radius_m, out, ShortAnswer::Keep), AoiLook::Whole)
    }

    /// The `out.len()` (at most [`AOI_K_MAX`]) entities nearest `viewer` within `reach_m`
    /// (at most the AoI radius), nearest first, ties by id; returns how many. Fewer than `k`
    /// are written only if `short` says to keep them ([`ShortAnswer`]).
    fn nearest_within(&self, viewer: usize, reach_m: f32, out: &mut [AoiEntry], short: ShortAnswer) -> usize {
        let k = out.len().min(AOI_K_MAX as usize);
        if k == 0 {
            return 0;
        }
        let g = &self.geometry;
        debug_assert!(reach_m > 0.0 && reach_m <= g.radius_m, "a reach within the AoI radius");
        let (vx, vy) = (self.xs[viewer], self.ys[viewer]);
        let r2 = reach_m * reach_m;
        // Candidates as 8-byte keys, `(squared distance bits << 32) | entity index`: for the
        // non-negative, finite squared distances here the bits order as the floats do, so one
        // integer comparison orders by distance (equal distances fall back to the ids, below).
        // `best[..n]` valid; appended unsorted until there are k, then kept sorted.
        let mut best = [0u64; AOI_K_MAX as usize];
        let mut n = 0usize;
        let key = |d2: f32, i: usize| (u64::from(d2.to_bits()) << 32) | i as u64;
        let d2_of = |key: u64| f32::from_bits((key >> 32) as u32);
        // Whether candidate `a` comes before `b`: nearer, or as near with a lower id.
        let before = |a: u64, b: u64| {
            if a >> 32 != b >> 32 { a < b } else { self.ids[(a & 0xFFFF_FFFF) as usize] < self.ids[(b & 0xFFFF_FFFF) as usize] }
        };
        // Pruning bound: a row or member whose nearest point is farther cannot be a candidate.
        let bound = |best: &[u64], n: usize| if n < k { r2 } else { d2_of(best[k - 1]) };
        // A row's key was computed from rounded products; widen its bounds by this much so a
        // pruning test never skips an entity that sits exactly on an edge.
        const EDGE_SLACK_M: f32 = 1e-3;
        let disorder_m = g.row_disorder_m();
        let side = i64::from(g.side);
        // Rows beyond the grid's side hold nothing: the walk never needs more than `side` rows
        // each way (`CoreConfig::validate` keeps a configured radius within
        // `MAX_AOI_REACH_CELLS` cells; this keeps the loop bounded whatever the geometry).
        let reach = ((reach_m + EDGE_SLACK_M) * g.inv_cell).ceil().min(side as f32) as i64 + 1;
        let (vcx, vcy) = (g.coord(vx) as i64, g.coord(vy) as i64);
        // Tests members `run` (at most `SCAN_LANES`, consecutive) against the farthest kept
        // (or the radius) and keeps the nearer ones. The members come in chunks of
        // `SCAN_LANES`: each chunk's distances and its mask of members not farther than `worst`
        // come from `lanes_not_farther` (two SSE2 quads and a `movemask` on x86-64), and only
        // the set bits are looked at one by one, against `worst` as it is by then (it only
        // falls, so the mask is a superset and the answer is the scalar loop's). A run shorter
        // than the lanes is read as a whole chunk that starts at it or, at the arrays' end, one
        // that ends at it (the arrays are contiguous), with the lanes outside the run masked
        // off. A run of fewer than half the lanes takes the same test one member at a time:
        // there the vector form measured slower (`benches/README.md`).
        let scan = |run: std::ops::Range<usize>, best: &mut [u64; AOI_K_MAX as usize], n: &mut usize| {
            let lanes = run.len();
            debug_assert!(lanes <= SCAN_LANES);
            let mut worst = if *n == k { d2_of(best[k - 1]) } else { r2 };
            let mut d2s = [0f32; SCAN_LANES];
            let run_lanes = (1u32 << lanes) - 1;
            let (base, mut mask) = if lanes < SCAN_LANES / 2 {
                (run.start, members_not_farther(&self.xs[run.clone()], &self.ys[run.clone()], (vx, vy), worst, &mut d2s))
            } else if let Some((xs, ys)) =
                self.xs[run.start..].first_chunk::<SCAN_LANES>().zip(self.ys[run.start..].first_chunk::<SCAN_LANES>())
            {
                (run.start, lanes_not_farther(xs, ys, (vx, vy), worst, &mut d2s) & run_lanes)
            } else {
                // The arrays' last members: the chunk that ends with the run (the snapshot
                // holds at least the run's `SCAN_LANES / 2`; fewer than `SCAN_LANES` in all
                // takes the scalar test).
                match run.end.checked_sub(SCAN_LANES) {
                    Some(base) => {
                        let (xs, ys) = (self.xs[base..].first_chunk::<SCAN_LANES>(), self.ys[base..].first_chunk::<SCAN_LANES>());
                        let (xs, ys) = xs.zip(ys).expect("a chunk ending in the arrays");
                        (base, lanes_not_farther(xs, ys, (vx, vy), worst, &mut d2s) & (run_lanes << (SCAN_LANES - lanes)))
                    }
                    None => (run.start, members_not_farther(&self.xs[run.clone()], &self.ys[run.clone()], (vx, vy), worst, &mut d2s)),
                }
            };
            while mask != 0 {
                let l = mask.trailing_zeros() as usize;
                mask &= mask - 1;
                let (d2, i) = (d2s[l], base + l);
                // The viewer is skipped by index.
                if d2 > worst || i == viewer {
                    continue;
                }
                let candidate = key(d2, i);
                if *n < k {
                    // Filling: append unsorted, and sort once when the k-th arrives.
                    best[*n] = candidate;
                    *n += 1;
                    if *n == k {
                        sort_candidates(&mut best[..k], &before);
                        worst = d2_of(best[k - 1]);
                    }
                    continue;
                }
                if !before(candidate, best[k - 1]) {
                    continue;
                }
                // Insert into the sorted candidates, dropping the farthest.
                let mut to = k - 1;
                while to > 0 && before(candidate, best[to - 1]) {
                    best[to] = best[to - 1];
                    to -= 1;
                }
                best[to] = candidate;
                worst = d2_of(best[k - 1]);
            }
        };
        // Rows: the viewer's, then alternately one further up and down.
        for step in 0..=(2 * reach) {
            let dy_rows = if step % 2 == 0 { step / 2 } else { -(step + 1) / 2 };
            let cy = vcy + dy_rows;
            if cy < 0 || cy >= side {
                continue;
            }
            let row_gap = axis_gap(vy, cy, g.cell_m, EDGE_SLACK_M);
            let row_gap2 = row_gap * row_gap;
            if row_gap2 > bound(&best, n) {
                continue;
            }
            let cells = self.row_start[cy as usize] as usize..self.row_start[cy as usize + 1] as usize;
            if cells.is_empty() {
                continue;
            }
            // The row's members run from west to east (`SnapshotGeometry::sort_key`). They are
            // read from the viewer's column outward, east then west, one chunk at a time; a
            // direction ends at the first chunk whose nearest member (by `x`, less the row's
            // disorder) is past the bound, as every member after it is farther still. So a
            // query reads a band about the bound's width in each row, not whole cells.
            let mid = cells.start + first_cell_not_west(&self.cell_cx[cells.clone()], vcx);
            let (first, split, end) =
                (self.cell_start[cells.start] as usize, self.cell_start[mid] as usize, self.cell_start[cells.end] as usize);
            // East from the split, then west from it: one loop, so `scan` has one call site
            // and is inlined (two sites kept it a call, with the candidates and their count
            // spilled to the stack around each).
            let (mut east, mut west) = (split, split);
            loop {
                let run = if east < end {
                    let gap = (self.xs[east] - vx - disorder_m).max(0.0);
                    if gap * gap + row_gap2 > bound(&best, n) {
                        east = end;
                        continue;
                    }
                    let to = (east + SCAN_LANES).min(end);
                    let run = east..to;
                    east = to;
                    run
                } else if west > first {
                    let gap = (vx - self.xs[west - 1] - disorder_m).max(0.0);
                    if gap * gap + row_gap2 > bound(&best, n) {
                        break;
                    }
                    let from = west.saturating_sub(SCAN_LANES).max(first);
                    let run = from..west;
                    west = from;
                    run
                } else {
                    break;
                };
                scan(run, &mut best, &mut n);
            }
        }
        if n < k {
            if short == ShortAnswer::Drop {
                return n;
            }
            // Fewer than k in range: the buffer was never sorted.
            sort_candidates(&mut best[..n], &before);
        }
        for (slot, &candidate) in out.iter_mut().zip(&best[..n]) {
            let i = (candidate & 0xFFFF_FFFF) as usize;
            *slot = AoiEntry {
                entity_id: self.ids[i],
                x_m: self.xs[i],
                y_m: self.ys[i],
                distance_m: d2_of(candidate).sqrt(),
                kind: self.kinds[i],
                _reserved: [0; 3],
            };
        }
        n
    }
}

/// What [`WorldSnapshot::nearest_within`] does with an answer of fewer than `k`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum ShortAnswer {
    /// Sorts and writes it: the look covered the whole radius, so that is the answer.
    Keep,
    /// Returns only the count, `out` untouched: a narrow (hinted) look that falls short is
    /// asked again with the whole radius, so its sort and its writes would be thrown away
    /// (about 2% of the queries in a 1,000-bot raid, `engine_aoi_wide_looks`).
    Drop,
}

/// Squared distances of `SCAN_LANES` members from `viewer` into `d2s`, and the mask of those
/// not farther than `worst` (bit `l` for member `l`; NaN counts as not farther, as in the
/// scalar `!(d2 > worst)`). Each distance is `dx * dx + dy * dy` rounded as the scalar code
/// rounds it (a multiply, a multiply, an add; no fused multiply-add), so the answer does not
/// depend on which of the two bodies ran.
#[inline(always)]
fn lanes_not_farther(xs: &[f32; SCAN_LANES], ys: &[f32; SCAN_LANES], viewer: (f32, f32), worst: f32, d2s: &mut [f32; SCAN_LANES]) -> u32 {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::{
            _mm_add_ps, _mm_cmpngt_ps, _mm_loadu_ps, _mm_movemask_ps, _mm_mul_ps, _mm_set1_ps, _mm_storeu_ps, _mm_sub_ps,
        };
        const QUADS: usize = SCAN_LANES / 4;
        let mut mask = 0u32;
        for q in 0..QUADS {
            // SAFETY: SSE2 is part of every x86-64 target; each unaligned load and store reads or
            // writes lanes 4q..4q+4 of an array of SCAN_LANES (a multiple of 4, asserted below).
            unsafe {
                let dx = _mm_sub_ps(_mm_loadu_ps(xs.as_ptr().add(4 * q)), _mm_set1_ps(viewer.0));
                let dy = _mm_sub_ps(_mm_loadu_ps(ys.as_ptr().add(4 * q)), _mm_set1_ps(viewer.1));
                let d2 = _mm_add_ps(_mm_mul_ps(dx, dx), _mm_mul_ps(dy, dy));
                _mm_storeu_ps(d2s.as_mut_ptr().add(4 * q), d2);
                mask |= (_mm_movemask_ps(_mm_cmpngt_ps(d2, _mm_set1_ps(worst))) as u32) << (4 * q);
            }
        }
        mask
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        members_not_farther(xs, ys, viewer, worst, d2s)
    }
}

/// [`lanes_not_farther`] one member at a time, for any number of members up to
/// `SCAN_LANES` (`xs` and `ys` alike long): a chunk too short for the vector form, or a target
/// without SSE2.
#[inline(always)]
fn members_not_farther(xs: &[f32], ys: &[f32], viewer: (f32, f32), worst: f32, d2s: &mut [f32; SCAN_LANES]) -> u32 {
    let mut mask = 0u32;
    for (l, (&x, &y)) in xs.iter().zip(ys).enumerate() {
        let (d2, keep) = lane_not_farther(x, y, viewer, worst);
        d2s[l] = d2;
        mask |= u32::from(keep) << l;
    }
    mask
}

/// One member's squared distance from `viewer`, and whether it is not farther than `worst`
/// (NaN counts as not farther): the scalar form of [`lanes_not_farther`].
#[inline(always)]
fn lane_not_farther(x: f32, y: f32, viewer: (f32, f32), worst: f32) -> (f32, bool) {
    let (dx, dy) = (x - viewer.0, y - viewer.1);
    let d2 = dx * dx + dy * dy;
    (d2, d2.partial_cmp(&worst) != Some(std::cmp::Ordering::Greater))
}

const _: () = assert!(SCAN_LANES.is_multiple_of(4) && SCAN_LANES <= 32, "whole SSE quads, and a mask that fits a u32");

/// The index of the first of a row's occupied cells (`row_cx`, their columns, strictly
/// increasing, not empty) whose column is not west of `column`: the partition point of
/// `cx < column`. Columns are distinct integers, so `row_cx[i] >= row_cx[0] + i`, and the
/// answer is at most `column - row_cx[0]`; in a crowd, where the occupied cells run unbroken,
/// it is exactly that, found with one load instead of a binary search's chain of dependent
/// loads (one per halving: 9% of the query's own samples under raid load, each row of the
/// walk paying it). Elsewhere the binary search runs over that prefix only.
#[inline]
fn first_cell_not_west(row_cx: &[u32], column: i64) -> usize {
    debug_assert!(!row_cx.is_empty() && row_cx.is_sorted_by(|a, b| a < b));
    let bound = usize::try_from(column - i64::from(row_cx[0])).unwrap_or(0).min(row_cx.len());
    if bound == 0 || i64::from(row_cx[bound - 1]) < column {
        return bound;
    }
    row_cx[..bound - 1].partition_point(|&cx| i64::from(cx) < column)
}

/// Sorts candidate keys by `before` (distance, then id): the plain `u64` keys (distance bits,
/// then entity index) sorted as integers ([`candidate_sort::sort_keys`]: a branch-free
/// sorting network for up to 32 on AVX2, else the standard library's unstable sort), then each
/// run of equal distances, rare outside a lattice, again by `before` with an insertion sort.
/// Sorting plain integers needs no call per comparison; an insertion sort by `before` over all
/// of them, as before, was a third of a crowded query's samples and 8% to 10% slower
/// (`benches/README.md`).
#[inline]
fn sort_candidates(keys: &mut [u64], before: &impl Fn(u64, u64) -> bool) {
    candidate_sort::sort_keys(keys);
    // Ties: the keys' low halves are entity indices, not ids, so a run of equal distances is
    // ordered again by id.
    for run in keys.chunk_by_mut(|a, b| a >> 32 == b >> 32) {
        for j in 1..run.len() {
            let c = run[j];
            let mut at = j;
            while at > 0 && before(c, run[at - 1]) {
                run[at] = run[at - 1];
                at -= 1;
            }
            run[at] = c;
        }
    }
}

/// Distance from coordinate `v` to the band of cells with index `c` (0 inside it), shrunk by
/// `slack` so the bound stays conservative.
#[inline]
fn axis_gap(v: f32, c: i64, cell_m: f32, slack: f32) -> f32 {
    let lo = c as f32 * cell_m;
    let hi = lo + cell_m;
    let gap = if v < lo {
        lo - v
    } else if v >= hi {
        v - hi
    } else {
        0.0
    };
    (gap - slack).max(0.0)
}

/// The tick's scratch for building snapshots: grows to the world's size once, then reused.
/// The radix sort moves 8-byte `(sort key << 32) | index` words, not the entities themselves,
/// and borrows the snapshot's own `ids` (about to be rewritten, and as long) as its second
/// buffer, so the scratch is 25 bytes per entity (the pending entity, its kind and its sort
/// word) and 4 per player (its slot).
#[derive(Debug, Default)]
pub struct SnapshotBuilder {
    pending: Vec<Pending>,
    /// The kind of each entity of `pending`.
    kinds: Vec<u8>,
    /// The slot of each player added. Players come first, so entity `i` of `pending` is a
    /// player if `i < slots.len()`, and its slot is `slots[i]`.
    slots: Vec<u32>,
    /// One `(sort key << 32) | index into pending` word per entity, made and sorted by
    /// [`SnapshotBuilder::build_into`].
    order: Vec<u64>,
}

/// Digits of the radix sort on sort keys ([`SnapshotGeometry::sort_key`]): 11 bits each.
const RADIX_BITS: u32 = 11;
const RADIX_BUCKETS: usize = 1 << RADIX_BITS;

impl SnapshotBuilder {
    /// Starts a build of about `entities` entities: forgets the previous one's (keeps the
    /// room) and makes room for these, exactly (memory follows the world's size, without the
    /// doubling slack of growing push by push).
    pub fn clear(&mut self, entities: usize) {
        self.pending.clear();
        self.pending.reserve_exact(entities);
        self.kinds.clear();
        self.kinds.reserve_exact(entities);
        self.slots.clear();
    }

    /// Adds the player `id` (not 0; each id once per build) at `slot`. Every player is added
    /// before any raid object.
    #[inline]
    pub fn add_player(&mut self, slot: u32, id: u64, x: f32, y: f32) {
        assert_eq!(self.slots.len(), self.pending.len(), "a snapshot's players are added before its raid objects");
        debug_assert!(id != 0 && slot != NOT_IN_SNAPSHOT, "a player has an id and a slot");
        self.pending.push(Pending { x, y, id });
        self.kinds.push(EntityKind::Player as u8);
        self.slots.push(slot);
    }

    /// Adds a raid object.
    #[inline]
    pub fn add_object(&mut self, id: u64, x: f32, y: f32, kind: EntityKind) {
        self.pending.push(Pending { x, y, id });
        self.kinds.push(kind as u8);
    }

    /// Sorts what was added by cell, and each cell's entities from west to east
    /// ([`SnapshotGeometry::sort_key`]), and writes it into `out` for `tick` at `now_ms`, with
    /// the index of its players by id.
    pub fn build_into(&mut self, out: &mut WorldSnapshot, tick: u32, now_ms: u64) {
        let g = out.geometry;
        let n = self.pending.len();
        assert!(u32::try_from(n).is_ok(), "a snapshot's entities are indexed by u32");
        self.order.clear();
        self.order.reserve_exact(n);
        self.order.extend(self.pending.iter().enumerate().map(|(i, e)| (u64::from(g.sort_key(e.x, e.y)) << 32) | i as u64));
        // The ids are rewritten below; until then they are the sort's second buffer, which
        // the sort writes before it reads: the last build's words are kept (not zeroed, 8
        // bytes an entity each tick), and only a longer build's new tail is written here.
        out.ids.truncate(n);
        out.ids.reserve_exact(n - out.ids.len());
        out.ids.resize(n, 0);
        if radix_sort_by_key(&mut self.order, &mut out.ids) {
            self.order.copy_from_slice(&out.ids);
        }
        out.tick = tick;
        out.now_ms = now_ms;
        for v in [&mut out.cell_cx, &mut out.cell_start, &mut out.row_start] {
            v.clear();
        }
        out.xs.clear();
        out.ys.clear();
        out.kinds.clear();
        out.xs.reserve_exact(n);
        out.ys.reserve_exact(n);
        out.kinds.reserve_exact(n);
        // The player index: at most half full, so a probe sequence stays short. Resized (not
        // reallocated, once it has grown) to the players of this build.
        out.by_player.clear();
        let players = self.slots.len();
        let index_len = if players == 0 { 0 } else { (2 * players).next_power_of_two().max(16) };
        out.by_player.reserve_exact(index_len);
        out.by_player.resize(index_len, PlayerIndexEntry::default());
        let (index_bits, index_mask) = (index_len.trailing_zeros(), index_len.wrapping_sub(1));
        let mut last_key = u32::MAX;
        for (i, &word) in self.order.iter().enumerate() {
            let key = g.cell_of_sort_key((word >> 32) as u32);
            let from = (word & 0xFFFF_FFFF) as usize;
            let e = &self.pending[from];
            debug_assert_eq!(key, g.key(e.x, e.y), "the sort's key starts with the entity's cell");
            if key != last_key {
                // A new occupied cell; rows up to and including its row start here.
                let cy = (key / g.side) as usize;
                while out.row_start.len() <= cy {
                    out.row_start.push(out.cell_cx.len() as u32);
                }
                out.cell_cx.push(key % g.side);
                out.cell_start.push(i as u32);
                last_key = key;
            }
            out.xs.push(e.x);
            out.ys.push(e.y);
            out.ids[i] = e.id;
            out.kinds.push(self.kinds[from]);
            if from < players {
                let mut at = player_index_home(e.id, index_bits);
                // Terminates: the table is at most half full.
                while out.by_player[at].id != 0 {
                    debug_assert_ne!(out.by_player[at].id, e.id, "a player is added once per build");
                    at = (at + 1) & index_mask;
                }
                out.by_player[at] = PlayerIndexEntry { id: e.id, entity: i as u32, slot: self.slots[from] };
            }
        }
        out.cell_start.push(n as u32);
        while out.row_start.len() <= g.side as usize {
            out.row_start.push(out.cell_cx.len() as u32);
        }
        debug_assert_eq!(out.row_start.len(), g.side as usize + 1);
        debug_assert_eq!(out.cell_start.len(), out.cell_cx.len() + 1);
    }
}

/// Passes of the radix sort: 3 of [`RADIX_BITS`] cover a 32-bit key.
const RADIX_PASSES: usize = 3;
const _: () = assert!(RADIX_PASSES as u32 * RADIX_BITS >= 32);

/// Sorts `words` stably by their high 32 bits (an LSD radix sort, [`RADIX_PASSES`] passes of
/// [`RADIX_BITS`]; a pass whose digit is the same for every word is skipped), using `spare`
/// (as long as `words`) as the second buffer. Returns whether the sorted words ended in
/// `spare`. Every pass's counts come from one read of the words before the first pass (a pass
/// moves words, it does not change them), so the sort reads the words once more than it
/// moves them, not twice per pass.
fn radix_sort_by_key(words: &mut [u64], spare: &mut [u64]) -> bool {
    assert_eq!(words.len(), spare.len(), "the spare buffer is as long as the words");
    let n = words.len();
    let digit = |word: u64, pass: usize| ((word >> (32 + pass as u32 * RADIX_BITS)) as usize) & (RADIX_BUCKETS - 1);
    let mut all_counts = [[0u32; RADIX_BUCKETS]; RADIX_PASSES];
    for &word in words.iter() {
        for (pass, counts) in all_counts.iter_mut().enumerate() {
            counts[digit(word, pass)] += 1;
        }
    }
    let (mut from, mut to) = (words, spare);
    let mut in_spare = false;
    for (pass, counts) in all_counts.iter_mut().enumerate() {
        if counts.iter().any(|&c| c as usize == n) {
            continue;
        }
        let mut sum = 0u32;
        for c in counts.iter_mut() {
            let here = *c;
            *c = sum;
            sum += here;
        }
        for &word in from.iter() {
            let bucket = digit(word, pass);
            to[counts[bucket] as usize] = word;
            counts[bucket] += 1;
        }
        std::mem::swap(&mut from, &mut to);
        in_spare = !in_spare;
    }
    in_spare
}

#[cfg(all(test, not(mmo_loom)))]
mod tests {
    use super::*;

    fn geometry() -> SnapshotGeometry {
        SnapshotGeometry::new(4096.0, 8.0, 48.0)
    }

    /// Brute force: every entity within the radius but the viewer, by (d2, id), first k.
    fn brute(entities: &[(u64, f32, f32)], viewer: usize, k: usize, radius: f32) -> Vec<(u64, f32)> {
        let (vid, vx, vy) = entities[viewer];
        let mut all: Vec<(f32, u64)> = entities
            .iter()
            .filter(|e| e.0 != vid)
            .map(|&(id, x, y)| {
                let (dx, dy) = (x - vx, y - vy);
                (dx * dx + dy * dy, id)
            })
            .filter(|&(d2, _)| d2 <= radius * radius)
            .collect();
        all.sort_by(|a, b| a.partial_cmp(b).unwrap());
        all.into_iter().take(k).map(|(d2, id)| (id, d2.sqrt())).collect()
    }

    fn build(entities: &[(u64, f32, f32)]) -> WorldSnapshot {
        build_in(geometry(), entities)
    }

    fn build_in(g: SnapshotGeometry, entities: &[(u64, f32, f32)]) -> WorldSnapshot {
        let mut b = SnapshotBuilder::default();
        b.clear(entities.len());
        for (slot, &(id, x, y)) in entities.iter().enumerate() {
            b.add_player(slot as u32, id, x, y);
        }
        let mut s = WorldSnapshot::empty(g);
        b.build_into(&mut s, 7, 700);
        s
    }

    fn lcg(seed: &mut u64) -> f32 {
        *seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        (*seed >> 40) as f32 / (1u64 << 24) as f32
    }

    /// The lane scan against the scalar test it stands for, bit for bit: the same squared
    /// distances and the same mask, for positions across the world, equal to the viewer's, on
    /// `worst` exactly, NaN positions and a NaN `worst` (both "not farther", as `!(d2 > w)`).
    #[test]
    #[allow(clippy::neg_cmp_op_on_partial_ord, reason = "`!(d2 > worst)` is the test being pinned, NaN included")]
    fn the_lane_scan_matches_the_scalar_test_bit_for_bit() {
        let mut seed = 11u64;
        for round in 0..2_000 {
            let mut xs: [f32; SCAN_LANES] = std::array::from_fn(|_| lcg(&mut seed) * 4096.0);
            let mut ys: [f32; SCAN_LANES] = std::array::from_fn(|_| lcg(&mut seed) * 4096.0);
            let viewer = (xs[round % SCAN_LANES], ys[(round + 3) % SCAN_LANES]);
            if round % 5 == 0 {
                xs[1] = f32::NAN;
                ys[6] = f32::NAN;
            }
            let (dx, dy) = (xs[2] - viewer.0, ys[2] - viewer.1);
            let worst = match round % 4 {
                0 => dx * dx + dy * dy, // lane 2 lies exactly on it
                1 => f32::NAN,
                _ => lcg(&mut seed) * 4096.0 * 4096.0,
            };
            let mut d2s = [0f32; SCAN_LANES];
            let mask = lanes_not_farther(&xs, &ys, viewer, worst, &mut d2s);
            for l in 0..SCAN_LANES {
                let (dx, dy) = (xs[l] - viewer.0, ys[l] - viewer.1);
                let d2 = dx * dx + dy * dy;
                assert_eq!(d2s[l].to_bits(), d2.to_bits(), "round {round} lane {l}");
                assert_eq!(mask >> l & 1 == 1, !(d2 > worst), "round {round} lane {l}");
                let (lane_d2, lane_keep) = lane_not_farther(xs[l], ys[l], viewer, worst);
                assert_eq!((lane_d2.to_bits(), lane_keep), (d2.to_bits(), mask >> l & 1 == 1), "round {round} lane {l}");
            }
            if round % 4 == 0 {
                assert!(mask & 0b100 != 0, "a member exactly on worst is kept");
            }
        }
    }

    #[test]
    fn the_first_cell_not_west_is_the_partition_point_in_crowds_gaps_and_beyond_either_end() {
        let rows: [&[u32]; 5] = [&[7], &[3, 4, 5, 6, 7, 8], &[0, 2, 9, 10, 11, 40], &[5, 100, 101, 102], &[0, 1, 2, 3, 700]];
        for row in rows {
            for column in -3..=800i64 {
                let expected = row.partition_point(|&cx| i64::from(cx) < column);
                assert_eq!(first_cell_not_west(row, column), expected, "row {row:?} column {column}");
            }
        }
    }

    /// The radix sort against a stable sort by key, for keys that need 1, 2 and 3 passes and
    /// keys whose middle digit is the same for all (a skipped pass): the words come out in
    /// key order, ties in their first order, in whichever buffer it reports.
    #[test]
    fn radix_sort_orders_by_key_stably_whichever_passes_run() {
        let mut seed = 5u64;
        let mut next = move || {
            seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            (seed >> 32) as u32
        };
        let masks: [u32; 5] = [0x7FF, 0x3F_FFFF, u32::MAX, 0xFFC0_07FF, 0];
        for mask in masks {
            for n in [0usize, 1, 2, 1000] {
                let mut words: Vec<u64> = (0..n).map(|i| (u64::from(next() & mask) << 32) | i as u64).collect();
                let mut expected = words.clone();
                expected.sort_by_key(|w| w >> 32);
                let mut spare = vec![0u64; n];
                let in_spare = radix_sort_by_key(&mut words, &mut spare);
                let sorted = if in_spare { &spare } else { &words };
                assert_eq!(sorted, &expected, "mask {mask:#x}, {n} words");
            }
        }
    }

    #[test]
    fn nearest_matches_brute_force_in_crowds_sparse_ground_and_at_the_edges() {
        let mut seed = 42u64;
        let mut entities = vec![];
        // A raid crowd (120 m square), sparse players across the world, and some on the
        // world's edges and on exact cell boundaries.
        for id in 1..=3_000u64 {
            entities.push((id, 1_000.0 + lcg(&mut seed) * 120.0, 1_000.0 + lcg(&mut seed) * 120.0));
        }
        for id in 3_001..=3_500u64 {
            entities.push((id, lcg(&mut seed) * 4095.0, lcg(&mut seed) * 4095.0));
        }
        for (i, &(x, y)) in [(0.0, 0.0), (4095.9, 4095.9), (8.0, 8.0), (16.0, 8.0), (8.0, 56.0), (0.0, 40.0)].iter().enumerate() {
            entities.push((10_000 + i as u64, x, y));
        }
        let s = build(&entities);
        assert_eq!(s.len(), entities.len());
        let mut out = [AoiEntry::default(); 32];
        for viewer in (0..entities.len()).step_by(7).chain(entities.len() - 6..entities.len()) {
            let (id, _, _) = entities[viewer];
            let index = s.entity_of_slot(viewer as u32, id).unwrap();
            let n = s.nearest(index, &mut out);
            let got: Vec<(u64, f32)> = out[..n].iter().map(|e| (e.entity_id, e.distance_m)).collect();
            assert_eq!(got, brute(&entities, viewer, 32, 48.0), "viewer {viewer}");
        }
    }

    /// A query reads each row from the viewer's column outward and stops a direction at the
    /// first member past the bound, trusting the row's west-to-east order only to within one
    /// step of a cell ([`SnapshotGeometry::row_disorder_m`]). Held against brute force where
    /// that order is coarse (a world of 65,536 cells a side leaves the sort key no bits for
    /// the place in a cell, so a cell's members are in any order; 40,000 a side leaves one
    /// bit) as well as fine (14 bits), with members on shared `x` values, on cell edges, and
    /// viewers placed so that neighbours straddle the split between the row's two directions.
    #[test]
    fn nearest_matches_brute_force_however_coarse_the_rows_order() {
        for (world_m, cell_m, bits) in [(4096.0f32, 8.0f32, 14u32), (40_000.0, 1.0, 1), (131_072.0, 2.0, 0)] {
            let g = SnapshotGeometry::new(world_m, cell_m, 48.0);
            assert_eq!(g.column_bits, bits, "world {world_m} m, cells {cell_m} m");
            let origin = 1_000.0f32;
            let mut seed = 5u64;
            let mut entities = vec![];
            for id in 1..=1_500u64 {
                let x = match id % 4 {
                    // A few shared columns of members, some on a cell's west edge.
                    0 => origin + (id % 7) as f32 * cell_m,
                    1 => origin + (id % 5) as f32 * 0.25 * cell_m + 0.001,
                    _ => origin + lcg(&mut seed) * 60.0,
                };
                entities.push((id, x, origin + lcg(&mut seed) * 60.0));
            }
            let s = build_in(g, &entities);
            let mut out = [AoiEntry::default(); 32];
            for viewer in (0..entities.len()).step_by(3) {
                let (id, _, _) = entities[viewer];
                let index = s.entity_of_slot(viewer as u32, id).unwrap();
                for k in [1usize, 8, 32] {
                    let n = s.nearest(index, &mut out[..k]);
                    let got: Vec<(u64, f32)> = out[..n].iter().map(|e| (e.entity_id, e.distance_m)).collect();
                    assert_eq!(got, brute(&entities, viewer, k, 48.0), "world {world_m} m, viewer {viewer}, k {k}");
                }
            }
        }
    }

    #[test]
    fn a_hint_never_changes_the_answer() {
        // A raid crowd and sparse ground; every viewer asked with hints that are too small,
        // exact, a little beyond its k-th, beyond the radius, and not hints at all.
        let mut seed = 7u64;
        let mut entities = vec![];
        for id in 1..=1_500u64 {
            entities.push((id, 500.0 + lcg(&mut seed) * 60.0, 500.0 + lcg(&mut seed) * 60.0));
        }
        for id in 1_501..=1_800u64 {
            entities.push((id, 300.0 + lcg(&mut seed) * 400.0, 300.0 + lcg(&mut seed) * 400.0));
        }
        let s = build(&entities);
        let (mut plain, mut hinted) = ([AoiEntry::default(); 32], [AoiEntry::default(); 32]);
        let mut narrow_answers = 0;
        for viewer in (0..entities.len()).step_by(5) {
            let index = s.entity_of_slot(viewer as u32, entities[viewer].0).unwrap();
            let n = s.nearest(index, &mut plain);
            let kth_m = if n > 0 { plain[n - 1].distance_m } else { 0.0 };
            for hint_m in
                [kth_m, kth_m + 1.7, kth_m * 0.5, kth_m.next_down(), kth_m.next_up(), 0.01, 48.0, 1e9, 0.0, -3.0, f32::NAN, f32::INFINITY]
            {
                hinted.fill(AoiEntry::default());
                let (m, _) = s.nearest_hinted(index, hint_m, &mut hinted);
                assert_eq!((m, &hinted[..m]), (n, &plain[..n]), "viewer {viewer}, hint {hint_m} m");
            }
            // The narrow look alone answers when the hint reaches the k-th.
            narrow_answers += usize::from(s.nearest_hinted(index, kth_m + 1.7, &mut hinted).1 == AoiLook::Hinted);
        }
        assert!(narrow_answers > 250, "most viewers have 32 within their hint ({narrow_answers})");
    }

    #[test]
    fn ties_go_to_the_lower_id_and_k_caps() {
        // Four entities at exactly 3 m, one at 1 m.
        let entities = [(50, 100.0, 100.0), (9, 103.0, 100.0), (4, 97.0, 100.0), (7, 100.0, 103.0), (5, 100.0, 97.0), (60, 101.0, 100.0)];
        let s = build(&entities);
        let mut out = [AoiEntry::default(); 3];
        let viewer = s.entity_of_slot(0, 50).unwrap();
        assert_eq!(s.nearest(viewer, &mut out), 3);
        let ids: Vec<u64> = out.iter().map(|e| e.entity_id).collect();
        assert_eq!(ids, vec![60, 4, 5]);
    }

    /// Entities on a 1 m lattice (ids shuffled against position), so most distances tie with
    /// several others: the first k sorted at once, the insertions after them, and the final
    /// sort of fewer than k all put ties in id order, as a brute-force sort by (distance, id).
    #[test]
    fn a_lattice_of_ties_matches_brute_force() {
        let mut entities = vec![];
        for row in 0..40u64 {
            for col in 0..40u64 {
                let id = (row * 40 + col).wrapping_mul(0x9E37_79B9) % 1_000_003 + 1;
                entities.push((id, 1_000.0 + col as f32, 1_000.0 + row as f32));
            }
        }
        let s = build(&entities);
        for k in [1usize, 7, 32, 64] {
            let mut out = vec![AoiEntry::default(); k];
            for viewer in (0..entities.len()).step_by(13) {
                let index = s.entity_of_slot(viewer as u32, entities[viewer].0).unwrap();
                let n = s.nearest(index, &mut out);
                let got: Vec<(u64, f32)> = out[..n].iter().map(|e| (e.entity_id, e.distance_m)).collect();
                assert_eq!(got, brute(&entities, viewer, k, 48.0), "viewer {viewer}, k {k}");
            }
        }
        // Fewer than k in range, ties among them: only the final sort orders them.
        let four = [(9, 100.0, 100.0), (8, 102.0, 100.0), (3, 98.0, 100.0), (6, 100.0, 102.0), (2, 100.0, 98.0)];
        let s = build(&four);
        let mut out = [AoiEntry::default(); 8];
        assert_eq!(s.nearest(s.entity_of_slot(0, 9).unwrap(), &mut out), 4);
        assert_eq!(out[..4].iter().map(|e| e.entity_id).collect::<Vec<_>>(), vec![2, 3, 6, 8]);
    }

    /// The hint for a viewer's next query: raid objects stay where they were, players may walk
    /// a tick's closing farther; an answer of fewer than k gives no hint.
    #[test]
    fn the_next_hint_reaches_the_farthest_entry_where_it_can_be_a_tick_later() {
        let entry = |distance_m: f32, kind: EntityKind| AoiEntry { distance_m, kind: kind as u8, ..AoiEntry::default() };
        let answer =
            [entry(1.0, EntityKind::Add), entry(2.5, EntityKind::Player), entry(3.0, EntityKind::Loot), entry(3.2, EntityKind::Add)];
        assert_eq!(hint_reach_m(&answer, 4, 1.7), 4.2, "the player at 2.5 m may be 4.2 m away");
        assert_eq!(hint_reach_m(&answer, 4, 0.5), 3.2, "the farthest object");
        assert_eq!(hint_reach_m(&answer[..3], 4, 1.7), 0.0, "fewer than k: no hint");
        assert_eq!(hint_reach_m(&answer, 0, 1.7), 0.0, "k = 0: no hint");
        assert_eq!(hint_reach_m(&answer, 2, 1.7), 4.2, "only the first k count");
    }

    #[test]
    fn the_aoi_hint_is_the_last_reach_plus_the_walk_since() {
        let hint = AoiHint::default();
        assert_eq!(hint.hint_m((10.0, 10.0)), 0.0, "no answer yet: no hint");
        hint.set(5.0, (10.0, 10.0));
        assert_eq!(hint.hint_m((10.0, 10.0)), 5.0);
        assert_eq!(hint.hint_m((13.0, 14.0)), 10.0, "a 5 m walk since");
        hint.set(0.0, (13.0, 14.0));
        assert_eq!(hint.hint_m((13.0, 14.0)), 0.0, "the last answer held fewer than k");
        hint.set(5.0, (10.0, 10.0));
        hint.clear();
        assert_eq!(hint.hint_m((10.0, 10.0)), 0.0, "a new player in the slot starts with none");
    }

    #[test]
    fn a_slot_reused_after_the_snapshot_is_not_its_new_player() {
        let s = build(&[(11, 5.0, 5.0), (12, 6.0, 5.0)]);
        assert_eq!(s.entity_of_slot(1, 12), Some(s.entity_of_slot(1, 12).unwrap()));
        assert_eq!(s.entity_of_slot(1, 99), None, "another player took slot 1 after the tick");
        assert_eq!(s.entity_of_slot(5, 12), None, "a slot beyond the snapshot");
    }

    /// The player index finds every player of the build, with its entity and slot, and nothing
    /// else: not a raid object's id, not an id of an earlier build, not id 0. Ids chosen to
    /// share their first probe (multiples of a large power of two) still resolve.
    #[test]
    fn the_player_index_finds_each_player_of_its_build_and_nothing_else() {
        let g = geometry();
        let mut b = SnapshotBuilder::default();
        let mut s = WorldSnapshot::empty(g);
        let mut seed = 7u64;
        let ids: Vec<u64> = (1..=300u64).map(|i| i << 40).chain((1..=300u64).map(|i| i * 7919)).collect();
        b.clear(ids.len() + 50);
        for (slot, &id) in ids.iter().enumerate() {
            b.add_player(slot as u32 * 3, id, lcg(&mut seed) * 4000.0, lcg(&mut seed) * 4000.0);
        }
        for object in 0..50u64 {
            b.add_object(1_000_000_000 + object, lcg(&mut seed) * 4000.0, lcg(&mut seed) * 4000.0, EntityKind::Add);
        }
        b.build_into(&mut s, 1, 50);
        assert!(s.by_player.len().is_power_of_two() && s.by_player.len() >= 2 * ids.len(), "at most half full");
        for (slot, &id) in ids.iter().enumerate() {
            let found = s.player(id).unwrap_or_else(|| panic!("player {id} is in the snapshot"));
            assert_eq!(found.slot, slot as u32 * 3);
            assert_eq!(s.ids[found.entity], id, "the entity is the player's");
            assert_eq!(s.entity_of_slot(found.slot, id), Some(found.entity));
        }
        for absent in [0, 1_000_000_000, 1_000_000_049, 301 << 40, 5, u64::MAX] {
            assert_eq!(s.player(absent), None, "{absent} is no player of this build");
        }
        // A smaller build into the same snapshot forgets the players it no longer has.
        b.clear(1);
        b.add_player(0, ids[10], 10.0, 10.0);
        b.build_into(&mut s, 2, 100);
        assert_eq!(s.player(ids[10]), Some(PlayerInSnapshot { entity: 0, slot: 0 }));
        assert_eq!(s.player(ids[11]), None);
        // And a build with objects only has an empty index.
        b.clear(1);
        b.add_object(3, 10.0, 10.0, EntityKind::Loot);
        b.build_into(&mut s, 3, 150);
        assert!(s.by_player.is_empty());
        assert_eq!(s.player(3), None, "a raid object is not a player");
        assert_eq!(s.player(ids[10]), None);
    }

    /// The build sorts what it gathered: every entity comes out once, with its own position
    /// and kind, in cell order (stable: the order of adding within a cell), and the cells and
    /// rows index it.
    #[test]
    fn the_build_holds_each_entity_once_with_its_position_and_kind_in_cell_order() {
        let g = geometry();
        let mut b = SnapshotBuilder::default();
        let mut s = WorldSnapshot::empty(g);
        let mut seed = 11u64;
        let kinds = [EntityKind::Add, EntityKind::Projectile, EntityKind::Loot];
        let mut added: Vec<(u64, f32, f32, u8)> = Vec::new();
        // Twice into the same snapshot and scratch, the second build smaller and crowded, so
        // nothing of the first survives into the second.
        for (round, (players, objects, span_m)) in [(200u64, 3_000u64, 4_000.0f32), (50, 700, 40.0)].into_iter().enumerate() {
            added.clear();
            b.clear((players + objects) as usize);
            for p in 0..players {
                let (x, y) = (lcg(&mut seed) * span_m, lcg(&mut seed) * span_m);
                b.add_player(p as u32, p + 1, x, y);
                added.push((p + 1, x, y, EntityKind::Player as u8));
            }
            for o in 0..objects {
                let (x, y, kind) = (lcg(&mut seed) * span_m, lcg(&mut seed) * span_m, kinds[o as usize % 3]);
                b.add_object(1 << 40 | o, x, y, kind);
                added.push((1 << 40 | o, x, y, kind as u8));
            }
            b.build_into(&mut s, round as u32 + 1, 0);
            let got: Vec<(u64, f32, f32, u8)> = (0..s.len()).map(|i| (s.ids[i], s.xs[i], s.ys[i], s.kinds[i])).collect();
            let mut expected = added.clone();
            expected.sort_by_key(|e| g.sort_key(e.1, e.2));
            assert_eq!(got, expected, "round {round}: the added entities, stably in cell order, each cell west to east");
            for row in 0..g.side as usize {
                let members = s.cell_start[s.row_start[row] as usize] as usize..s.cell_start[s.row_start[row + 1] as usize] as usize;
                for i in members.start + 1..members.end {
                    assert!(s.xs[i] >= s.xs[i - 1] - g.row_disorder_m(), "round {round}: row {row} runs west to east");
                }
            }
            for cell in 0..s.cell_cx.len() {
                let (first, end) = (s.cell_start[cell] as usize, s.cell_start[cell + 1] as usize);
                assert!(first < end, "an occupied cell holds entities");
                let key = g.key(s.xs[first], s.ys[first]);
                assert_eq!(key % g.side, s.cell_cx[cell]);
                let row = (key / g.side) as usize;
                assert!((s.row_start[row] as usize..s.row_start[row + 1] as usize).contains(&cell), "its row lists it");
                assert!((first..end).all(|i| g.key(s.xs[i], s.ys[i]) == key), "one cell's entities share its key");
            }
            for p in 0..players {
                let found = s.player(p + 1).expect("each player is indexed");
                assert_eq!((s.ids[found.entity], found.slot), (p + 1, p as u32));
            }
        }
    }

    #[test]
    #[should_panic(expected = "players are added before its raid objects")]
    fn a_player_added_after_a_raid_object_is_refused() {
        let mut b = SnapshotBuilder::default();
        b.clear(2);
        b.add_object(1 << 40, 10.0, 10.0, EntityKind::Add);
        b.add_player(0, 1, 20.0, 20.0);
    }

    #[test]
    fn nobody_in_range_gives_an_empty_area() {
        let s = build(&[(1, 100.0, 100.0), (2, 149.0, 100.0)]);
        let mut out = [AoiEntry::default(); 8];
        assert_eq!(s.nearest(s.entity_of_slot(0, 1).unwrap(), &mut out), 0, "49 m > 48 m");
    }

    #[test]
    fn the_board_publishes_reuses_and_skips_while_readers_pin() {
        let (board, mut writer) = SnapshotBoard::new(|| 0u64);
        assert!(board.pin().is_none(), "nothing published yet");
        for v in 1..=5u64 {
            let mut slot = board.begin_write(&mut writer).unwrap();
            *slot = v;
            board.publish(slot);
            assert_eq!(*board.pin().unwrap(), v);
        }
        // Readers pin the current snapshot (5) ...
        let a = board.pin().unwrap();
        let mut slot = board.begin_write(&mut writer).unwrap();
        *slot = 6;
        board.publish(slot);
        // ... and the next one (6): both other buffers are pinned, so the writer skips.
        let b = board.pin().unwrap();
        let mut slot = board.begin_write(&mut writer).unwrap();
        *slot = 7;
        board.publish(slot);
        assert!(board.begin_write(&mut writer).is_none(), "5 and 6 are pinned, 7 is current");
        assert_eq!((*a, *b), (5, 6), "pinned snapshots never change under their readers");
        drop(a);
        assert!(board.begin_write(&mut writer).is_some());
        drop(b);
    }
}
