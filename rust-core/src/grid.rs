//! The spatial collision grid: where every player and raid object is, for contact queries.
//!
//! Two structures, each written by the cheapest thing that can keep it right:
//!
//! - **Player positions**: a dense table of packed `(x, y)` atomics, one per movement slot
//!   ([`PositionTable`]). A move writes its player's position there with one atomic store: no
//!   lock, no search. Readers (contact queries, the tick's snapshot) load it.
//! - **Cell membership**: a `DashMap` of cell key -> [`Cell`]. A cell lists its players by
//!   movement slot alone, 4 bytes each (the position is read from the table, so a move that
//!   stays in its cell never touches its cell; the id from the grid's id-by-slot table, only
//!   for a contact the query reports), and its raid objects with their positions (objects
//!   never move), stored by field: x and y columns apart from ids, expiry and kind
//!   (`CellObjects`).
//!   Membership changes only when a player crosses into another cell (beyond the hysteresis
//!   margin), joins or leaves, and when raid bursts spawn or expire.
//!
//! The area of interest does not read this grid at all: it reads the tick's published world
//! snapshot ([`crate::snapshot`]), so no reader scans crowded cells under their locks.
//!
//! Concurrency contract:
//! - Writers of a player's position and membership: the thread applying that player's move,
//!   holding the player's body lock (so one player's grid state only changes on one thread at
//!   a time), and join/leave. Raid spawn appends objects; the tick removes expired ones.
//! - Each membership write locks one `DashMap` shard (the map has
//!   [`crate::CoreConfig::grid_shards`] of them), never two at once: a crossing is "remove from
//!   the old cell, release, insert into the new cell", so the player is briefly in no cell,
//!   never in two. Holding a `Ref` of one cell while locking another could deadlock when both
//!   hash to the same shard; no code here does it.
//! - Readers (contact queries) take one shard read lock per visited cell, one cell at a time,
//!   and load player positions from the table. A reader may see a moving player at its
//!   previous or its new position, or miss it for the instant of a crossing.
//! - Nothing slow happens under a cell lock: raid spawn creates its objects (arena inserts)
//!   before it locks a cell and appends them with one copy; expiry moves the due objects out
//!   with one compaction pass and counts their packs down (freeing the emptied ones) after it
//!   releases the cell.
//! - A cell keeps its raid objects grouped by sub-cell ([`OBJECT_SUBCELLS_PER_SIDE`] squared
//!   of them, row-major), so a contact query reads only the sub-cells its radius reaches: in a
//!   raid crowd an 8 m query looks at about a quarter of a 32 m cell's objects instead of all
//!   of them in up to four cells. A spawn appends to an unordered tail (one copy, nothing
//!   more on the spawner's request); the tick, when it takes in the new burst, merges each of
//!   the burst's cells' tail into the order ([`Grid::order_objects`]: a counting sort and one
//!   pass of moves under the cell's lock). Until then, at most one tick, a contact query also
//!   reads the tail whole.
//! - Crowded cells grow geometrically (`Vec`'s doubling) and keep their room, so once a cell
//!   has seen its busiest moment it never reallocates under its lock again. A cell's first
//!   [`CELL_INLINE_PLAYERS`] players live inline in the map's slot and its raid objects behind
//!   one pointer (allocated when a raid first reaches it), so walking into untouched ground
//!   allocates only the map entry's share of a shard's table.
//! - Every shard lock is taken through [`LockWaits`]: a held lock is counted and its wait
//!   timed, so "moves never wait on the grid" is a measured figure.
//!
//! Memory follows use: the map is pre-sized for the cells the configured players can occupy
//! (at most one each, or the world's cell count if that is smaller), not for every cell of
//! a large world, and each shard for the largest table that does not exceed its share, so no
//! table is born half empty (`cells_filling_a_table`); beyond that a shard grows on its own,
//! stalling only that shard.

use crate::config::CoreConfig;
use crate::locks::LockWaits;
use crate::records::EntityKind;
use crate::reserved::ReservedTable;
use dashmap::DashMap;
use dashmap::try_result::TryResult;
use rustc_hash::FxBuildHasher;
use smallvec::SmallVec;
use std::ops::Range;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

/// Players a cell holds inline, in the map's slot, before it needs the heap: eight 4-byte
/// slots in the room two `(id, slot)` pairs took, so a cell of the default 32 m grid holds a
/// small group inline, not only the one or two of ordinary play (5,000 players over 16,384
/// cells).
pub const CELL_INLINE_PLAYERS: usize = 8;

/// Index of a cell: `cy * cells_per_side + cx`.
pub type CellKey = u32;

/// What [`Grid::for_each_near`] takes as the player to leave out when it should leave out none
/// (no movement slot is this high: slots are below the player capacity, a `u32`).
pub const NO_SLOT: u32 = u32::MAX;

/// A raid object as its cell lists it (immutable: objects do not move).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ObjectMember {
    /// Raid object id.
    pub id: u64,
    /// Position, metres.
    pub x_m: f32,
    /// Position, metres.
    pub y_m: f32,
    /// Tick at which the tick frees it.
    pub expires_tick: u32,
    /// What it is.
    pub kind: EntityKind,
}

const _: () = assert!(std::mem::size_of::<ObjectMember>() == 24);

/// Sub-cells along one side of a cell that its raid objects are grouped by (4 m with the
/// default 32 m cells: the contact radius, 8 m, then reaches 3 to 5 sub-cells a side).
pub const OBJECT_SUBCELLS_PER_SIDE: usize = 8;

/// Sub-cells of one cell.
const OBJECT_SUBCELLS: usize = OBJECT_SUBCELLS_PER_SIDE * OBJECT_SUBCELLS_PER_SIDE;

/// Where each sub-cell's objects begin in a cell's [`CellObjects`]; entry `s + 1` is where
/// sub-cell `s`'s end.
type SubcellStarts = [u32; OBJECT_SUBCELLS + 1];

/// What a cell keeps of a raid object besides its position.
#[derive(Clone, Copy, Debug)]
struct ObjectTag {
    id: u64,
    expires_tick: u32,
    kind: EntityKind,
}

const _: () = assert!(std::mem::size_of::<ObjectTag>() == 16);

impl ObjectTag {
    /// `m`'s tag.
    #[inline]
    fn of(m: &ObjectMember) -> Self {
        Self { id: m.id, expires_tick: m.expires_tick, kind: m.kind }
    }
}

/// A cell's raid objects, by field: positions in two columns apart from the rest, so the count
/// of a contact query reads 8 bytes an object, four objects to an SSE instruction, and only a
/// visited object's id and kind (the count is most of a raid move's query: 8 contacts
/// reported, some 150 counted). First the objects grouped by sub-cell (row-major, see
/// [`Grid::object_subcell`]), then the tail spawns appended since the tick last ordered them.
/// Index `i` of each column is the same object. Boxed in its cell, which carries only the
/// pointer until a raid reaches it; once allocated it is kept, with its columns' room.
#[derive(Debug, Default)]
struct CellObjects {
    /// Each object's x, metres, in the order (sub-cell 0's first, then the unordered tail).
    /// Appended to by raid spawn, ordered by the tick, compacted by expiry (as are `ys` and
    /// `tags`); read by contact queries and the snapshot build.
    xs: Vec<f32>,
    /// Each object's y, metres.
    ys: Vec<f32>,
    /// Each object's id, expiry and kind. The kind is also rewritten by a kill's relabel.
    tags: Vec<ObjectTag>,
    /// Sub-cell boundaries in the columns; entry [`OBJECT_SUBCELLS`] is where the tail
    /// begins. `None` until the tick first orders the cell.
    starts: Option<SubcellStarts>,
}

impl CellObjects {
    /// Objects held.
    #[inline]
    fn len(&self) -> usize {
        self.tags.len()
    }

    /// Object `i`, whole.
    #[inline]
    fn get(&self, i: usize) -> ObjectMember {
        let t = self.tags[i];
        ObjectMember { id: t.id, x_m: self.xs[i], y_m: self.ys[i], expires_tick: t.expires_tick, kind: t.kind }
    }

    /// Overwrites object `i`.
    #[inline]
    fn set(&mut self, i: usize, m: &ObjectMember) {
        self.xs[i] = m.x_m;
        self.ys[i] = m.y_m;
        self.tags[i] = ObjectTag::of(m);
    }

    /// Object `from` copied over object `to`.
    #[inline]
    fn copy(&mut self, from: usize, to: usize) {
        self.xs[to] = self.xs[from];
        self.ys[to] = self.ys[from];
        self.tags[to] = self.tags[from];
    }

    /// Appends `piece` (each column grows geometrically, as a `Vec` does).
    fn extend_from_slice(&mut self, piece: &[ObjectMember]) {
        self.xs.extend(piece.iter().map(|m| m.x_m));
        self.ys.extend(piece.iter().map(|m| m.y_m));
        self.tags.extend(piece.iter().map(ObjectTag::of));
    }

    /// Keeps the first `len` objects.
    fn truncate(&mut self, len: usize) {
        self.xs.truncate(len);
        self.ys.truncate(len);
        self.tags.truncate(len);
    }

    /// Objects `range`, whole, in order.
    fn members(&self, range: Range<usize>) -> impl Iterator<Item = ObjectMember> + '_ {
        range.map(|i| self.get(i))
    }

    /// Where the unordered tail begins.
    #[inline]
    fn ordered(&self) -> usize {
        self.starts.as_ref().map_or(0, |starts| starts[OBJECT_SUBCELLS] as usize)
    }

    /// The objects spawns appended since the tick last ordered the cell.
    #[inline]
    fn tail(&self) -> Range<usize> {
        self.ordered()..self.len()
    }

    /// Merges `piece` (taken off the tail, which must be empty now) into the cell's order,
    /// `subcell(m)` being the sub-cell of `m` and `added[s]..added[s + 1]` the places sub-cell
    /// `s`'s new objects take among the piece's (a prefix sum of its counts). Each sub-cell's
    /// old objects shift right by the new objects of the sub-cells before it, last sub-cell
    /// first, so nothing is overwritten before it has moved; then each new object is written
    /// into its sub-cell's gap. One pass of moves, no allocation beyond the columns' geometric
    /// growth.
    fn merge(&mut self, piece: &[ObjectMember], added: &SubcellStarts, subcell: impl Fn(&ObjectMember) -> usize) {
        debug_assert_eq!(added[OBJECT_SUBCELLS] as usize, piece.len());
        let old_len = self.len();
        // The length the merge ends with; these copies are overwritten below.
        self.extend_from_slice(piece);
        let starts = self.starts.get_or_insert([0; OBJECT_SUBCELLS + 1]);
        debug_assert_eq!(starts[OBJECT_SUBCELLS] as usize, old_len);
        if old_len > 0 {
            for s in (0..OBJECT_SUBCELLS).rev() {
                let (from, to) = (starts[s] as usize, starts[s + 1] as usize);
                let shift = added[s] as usize;
                if shift > 0 && to > from {
                    self.xs.copy_within(from..to, from + shift);
                    self.ys.copy_within(from..to, from + shift);
                    self.tags.copy_within(from..to, from + shift);
                }
            }
        }
        // Sub-cell `s`'s gap begins after its old objects, shifted: `starts[s + 1] + added[s]`.
        let mut gap: SubcellStarts = [0; OBJECT_SUBCELLS + 1];
        for s in 0..OBJECT_SUBCELLS {
            gap[s] = starts[s + 1] + added[s];
        }
        for (start, add) in starts.iter_mut().zip(added) {
            *start += add;
        }
        debug_assert_eq!(self.ordered(), self.len());
        for m in piece {
            let at = &mut gap[subcell(m)];
            self.set(*at as usize, m);
            *at += 1;
        }
    }

    /// The objects of sub-cells `sx0..=sx1` in sub-row `sy` (contiguous in the order).
    #[inline]
    fn row_span(&self, sy: usize, sx0: usize, sx1: usize) -> Range<usize> {
        match &self.starts {
            Some(starts) => {
                let row = sy * OBJECT_SUBCELLS_PER_SIDE;
                starts[row + sx0] as usize..starts[row + sx1 + 1] as usize
            }
            None => 0..0,
        }
    }
}

/// One cell's members.
#[derive(Debug, Default)]
pub struct Cell {
    /// Players registered here, by movement slot. Written by movers crossing in or out, join
    /// and leave. A crowded raid cell's thirty-odd players are two cache lines to scan, where
    /// `(id, slot)` pairs took eight.
    players: SmallVec<[u32; CELL_INLINE_PLAYERS]>,
    /// Raid objects registered here (`None` until the first arrives). Appended to by raid
    /// spawn, ordered and compacted by the tick.
    objects: Option<Box<CellObjects>>,
}

/// The most cells a shard's table holds without growing, for the largest table that holds at
/// most `need`. hashbrown keeps a power of two of buckets at most 7/8 full (3 in 4, 7 in 8),
/// so a shard asked for 64 cells takes 128 buckets and leaves half of them empty for good,
/// while 56 fill 64. A bucket is a cell's whole entry (56 bytes), and the cells in use are
/// scattered over the table by their hash, so many of the never-used buckets share pages with
/// used ones. With the default 8,192 players over 128 shards the map is 0.44 MiB instead of
/// 0.88 MiB, with room for 7,168 cells instead of 8,192 before a shard grows; the server's
/// peak RSS in a 1,000-bot raid run fell by 0.17 MiB (two runs each, when an entry was 80
/// bytes).
fn cells_filling_a_table(need: usize) -> usize {
    let holds = |buckets: usize| if buckets <= 8 { buckets - 1 } else { buckets / 8 * 7 };
    let mut buckets = 4;
    if need < holds(buckets) {
        return need;
    }
    while holds(buckets * 2) <= need {
        buckets *= 2;
    }
    holds(buckets)
}

// A map entry (key and cell): what each bucket of a shard's table costs.
const _: () = assert!(std::mem::size_of::<(CellKey, Cell)>() == 56);

/// Packed player positions by movement slot: `x` in the low 32 bits, `y` in the high 32, as
/// `f32` bits, so a reader always gets both coordinates of one write.
pub struct PositionTable {
    /// Written by the player's mover (and join), read by contact queries and the snapshot.
    packed: ReservedTable<AtomicU64>,
}

impl PositionTable {
    /// A table for `slots` players, all at the origin (resident only where written).
    pub fn new(slots: usize) -> Self {
        Self { packed: ReservedTable::zeroed_atomics(slots) }
    }

    /// Stores `slot`'s position.
    #[inline]
    pub fn set(&self, slot: u32, x_m: f32, y_m: f32) {
        let packed = u64::from(x_m.to_bits()) | (u64::from(y_m.to_bits()) << 32);
        // Relaxed: a position is self-contained (one word holds both coordinates), and readers
        // want a recent one, not one ordered with other memory.
        self.packed[slot as usize].store(packed, Ordering::Relaxed);
    }

    /// Loads `slot`'s position.
    #[inline]
    pub fn get(&self, slot: u32) -> (f32, f32) {
        let packed = self.packed[slot as usize].load(Ordering::Relaxed);
        (f32::from_bits(packed as u32), f32::from_bits((packed >> 32) as u32))
    }
}

/// The collision grid. See the module doc for who may touch it and when.
pub struct Grid {
    /// Cell -> members. Written by crossing movers, join/leave, raid spawn and the tick; read
    /// by contact queries and the tick's snapshot build.
    cells: DashMap<CellKey, Cell, FxBuildHasher>,
    /// Player positions by movement slot.
    positions: PositionTable,
    /// Player id by movement slot, 0 for a free slot: the one table of who holds a slot.
    /// Written (Release) by [`Grid::insert_player`] (join) after the slot's position and before
    /// the slot is listed in a cell, and cleared by [`Grid::remove_player`] (leave) after the
    /// slot is unlisted, before leave frees the slot for another join. Read (Acquire) by the
    /// tick's snapshot build (every slot handed out; a non-zero id finds its position already
    /// stored), by the area-of-interest check that a viewer still holds its slot, under a
    /// cell's lock by contact queries for the players they report, and by audits. A slot
    /// listed in a cell keeps its id while the reader holds that cell's lock: the id is
    /// cleared only after the slot leaves the cell under its write lock.
    player_ids: ReservedTable<AtomicU64>,
    cells_per_side: u32,
    cell_size_m: f32,
    inv_cell_size: f32,
    /// `OBJECT_SUBCELLS_PER_SIDE / cell_size_m`.
    inv_subcell_size: f32,
    hysteresis_m: f32,
    world_size_m: f32,
}

impl Grid {
    /// An empty grid for `config`'s world. The map is sized for the cells the configured
    /// players can occupy (see the module doc); the position table for every player slot.
    pub fn new(config: &CoreConfig) -> Self {
        let cells_per_side = config.cells_per_side();
        let total = (cells_per_side as usize) * (cells_per_side as usize);
        let expected_cells = total.min(config.player_capacity as usize);
        let shards = config.grid_shards as usize;
        let per_shard = cells_filling_a_table(expected_cells.div_ceil(shards));
        Self {
            cells: DashMap::with_capacity_and_hasher_and_shard_amount(per_shard * shards, FxBuildHasher, shards),
            positions: PositionTable::new(config.player_capacity as usize),
            player_ids: ReservedTable::zeroed_atomics(config.player_capacity as usize),
            cells_per_side,
            cell_size_m: config.cell_size_m,
            inv_cell_size: 1.0 / config.cell_size_m,
            inv_subcell_size: OBJECT_SUBCELLS_PER_SIDE as f32 / config.cell_size_m,
            hysteresis_m: config.cell_hysteresis_m,
            world_size_m: config.world_size_m,
        }
    }

    /// Cells along one side.
    pub fn cells_per_side(&self) -> u32 {
        self.cells_per_side
    }

    /// Side of one cell, metres.
    pub fn cell_size_m(&self) -> f32 {
        self.cell_size_m
    }

    /// The player position table.
    #[inline]
    pub fn positions(&self) -> &PositionTable {
        &self.positions
    }

    /// Whether `(x, y)` is a finite point inside the world.
    #[inline]
    pub fn in_world(&self, x: f32, y: f32) -> bool {
        x.is_finite() && y.is_finite() && x >= 0.0 && y >= 0.0 && x < self.world_size_m && y < self.world_size_m
    }

    #[inline]
    fn coord(&self, v: f32) -> u32 {
        ((v * self.inv_cell_size) as u32).min(self.cells_per_side - 1)
    }

    /// The cell containing `(x, y)` (clamped to the world's edge cells).
    #[inline]
    pub fn cell_of(&self, x: f32, y: f32) -> CellKey {
        self.coord(y) * self.cells_per_side + self.coord(x)
    }

    /// `(cx, cy)` of a cell.
    #[inline]
    pub fn cell_coords(&self, cell: CellKey) -> (u32, u32) {
        (cell % self.cells_per_side, cell / self.cells_per_side)
    }

    /// The corner of `cell` nearest the origin, metres.
    #[inline]
    fn cell_origin(&self, cell: CellKey) -> (f32, f32) {
        let (cx, cy) = self.cell_coords(cell);
        (cx as f32 * self.cell_size_m, cy as f32 * self.cell_size_m)
    }

    /// The sub-cell column (or row) of coordinate `v` in a cell starting at `origin`, clamped
    /// to the cell: monotone in `v`, so the sub-cells of the values in `[a, b]` are exactly
    /// those from `a`'s to `b`'s, whatever the rounding (an object registered just outside
    /// its cell, within the hysteresis margin, counts in the edge sub-cell).
    #[inline]
    fn subcell_axis(&self, v: f32, origin: f32) -> usize {
        // Clamped as a float (`max` maps NaN to 0), then truncated: both steps are monotone.
        ((v - origin) * self.inv_subcell_size).max(0.0).min((OBJECT_SUBCELLS_PER_SIDE - 1) as f32) as usize
    }

    /// The sub-cell (row-major) of an object at `(x, y)` in a cell starting at `origin`.
    #[inline]
    fn object_subcell(&self, origin: (f32, f32), x: f32, y: f32) -> usize {
        self.subcell_axis(y, origin.1) * OBJECT_SUBCELLS_PER_SIDE + self.subcell_axis(x, origin.0)
    }

    /// The cell an entity at `(x, y)` should be registered in, given that it is now in
    /// `current`: it stays while within `current` grown by the hysteresis margin.
    #[inline]
    pub fn cell_with_hysteresis(&self, current: CellKey, x: f32, y: f32) -> CellKey {
        let (cx, cy) = self.cell_coords(current);
        let (x0, y0) = (cx as f32 * self.cell_size_m, cy as f32 * self.cell_size_m);
        let h = self.hysteresis_m;
        let inside = x >= x0 - h && x < x0 + self.cell_size_m + h && y >= y0 - h && y < y0 + self.cell_size_m + h;
        if inside { current } else { self.cell_of(x, y) }
    }

    /// The cell's entry for writing (created if missing), counting a wait on its shard.
    #[inline]
    fn cell_mut(&self, cell: CellKey, waits: &mut LockWaits) -> dashmap::mapref::one::RefMut<'_, CellKey, Cell> {
        match self.cells.try_entry(cell) {
            Some(entry) => entry.or_default(),
            None => {
                let since = Instant::now();
                let entry = self.cells.entry(cell).or_default();
                waits.waited_since(since);
                entry
            }
        }
    }

    /// The cell's entry for writing if it exists, counting a wait on its shard.
    #[inline]
    fn existing_cell_mut(&self, cell: CellKey, waits: &mut LockWaits) -> Option<dashmap::mapref::one::RefMut<'_, CellKey, Cell>> {
        match self.cells.try_get_mut(&cell) {
            TryResult::Present(r) => Some(r),
            TryResult::Absent => None,
            TryResult::Locked => {
                let since = Instant::now();
                let r = self.cells.get_mut(&cell);
                waits.waited_since(since);
                r
            }
        }
    }

    /// The cell's entry for reading if it exists, counting a wait on its shard.
    #[inline]
    fn existing_cell(&self, cell: CellKey, waits: &mut LockWaits) -> Option<dashmap::mapref::one::Ref<'_, CellKey, Cell>> {
        match self.cells.try_get(&cell) {
            TryResult::Present(r) => Some(r),
            TryResult::Absent => None,
            TryResult::Locked => {
                let since = Instant::now();
                let r = self.cells.get(&cell);
                waits.waited_since(since);
                r
            }
        }
    }

    /// Registers player `id`, in movement slot `slot`, in `cell` at `(x, y)` (join). The slot
    /// must be in no cell.
    pub fn insert_player(&self, cell: CellKey, id: u64, slot: u32, x_m: f32, y_m: f32, waits: &mut LockWaits) {
        self.positions.set(slot, x_m, y_m);
        self.player_ids[slot as usize].store(id, Ordering::Release);
        self.cell_mut(cell, waits).players.push(slot);
    }

    /// Removes the player in `slot` from `cell` and frees the slot's id (leave), returning
    /// whether it was listed there. The id is freed either way: leave frees the slot next,
    /// and a slot with no player must never reach a snapshot as a player left behind at its
    /// last position. (A live body not in its own cell is a bug the caller asserts against.)
    pub fn remove_player(&self, cell: CellKey, slot: u32, waits: &mut LockWaits) -> bool {
        let removed = self.unlist_player(cell, slot, waits);
        self.player_ids[slot as usize].store(0, Ordering::Release);
        removed
    }

    /// The player id in `slot`, 0 when the slot is free (see the `player_ids` field).
    #[inline]
    pub fn player_in(&self, slot: u32) -> u64 {
        self.player_ids[slot as usize].load(Ordering::Acquire)
    }

    /// Takes `slot` out of `cell`'s players, returning whether it was listed there.
    fn unlist_player(&self, cell: CellKey, slot: u32, waits: &mut LockWaits) -> bool {
        let Some(mut c) = self.existing_cell_mut(cell, waits) else { return false };
        match c.players.iter().position(|&s| s == slot) {
            Some(at) => {
                c.players.swap_remove(at);
                true
            }
            None => false,
        }
    }

    /// Moves the player in `slot` from `from` to `to` (a crossing). The position must already
    /// be stored. Between the two steps the player is briefly in no cell (never in two).
    /// Returns `false` if it was not in `from`.
    pub fn relocate_player(&self, from: CellKey, to: CellKey, slot: u32, waits: &mut LockWaits) -> bool {
        if !self.unlist_player(from, slot, waits) {
            return false;
        }
        self.cell_mut(to, waits).players.push(slot);
        true
    }

    /// Appends raid objects to `cell`'s unordered tail with one copy under its lock (they were
    /// created before); the tick orders them ([`Grid::order_objects`]). Each must lie in
    /// `cell` grown by the hysteresis margin, as players do: contact queries look for them
    /// only there.
    pub fn append_objects(&self, cell: CellKey, objects: &[ObjectMember], waits: &mut LockWaits) {
        if objects.is_empty() {
            return;
        }
        debug_assert!(objects.iter().all(|m| self.cell_with_hysteresis(cell, m.x_m, m.y_m) == cell), "objects lie in their cell");
        self.cell_mut(cell, waits).objects.get_or_insert_with(Box::default).extend_from_slice(objects);
    }

    /// Merges `cell`'s unordered tail into its sub-cell order, under its write lock: the tail
    /// is copied into `scratch` (the tick's; it grows to the largest tail once), counted by
    /// sub-cell, and merged with one pass of moves. Returns how many objects it ordered. The
    /// tick calls it for each cell of a burst it takes in.
    pub fn order_objects(&self, cell: CellKey, scratch: &mut Vec<ObjectMember>, waits: &mut LockWaits) -> usize {
        let origin = self.cell_origin(cell);
        let Some(mut c) = self.existing_cell_mut(cell, waits) else { return 0 };
        let Some(objects) = c.objects.as_deref_mut() else { return 0 };
        let ordered = objects.ordered();
        let tail = objects.len() - ordered;
        if tail == 0 {
            return 0;
        }
        scratch.clear();
        scratch.extend(objects.members(objects.tail()));
        objects.truncate(ordered);
        // `added[s + 1]` counts sub-cell `s`, then the prefix sum makes `added[s]` its start.
        let mut added: SubcellStarts = [0; OBJECT_SUBCELLS + 1];
        for m in scratch.iter() {
            added[self.object_subcell(origin, m.x_m, m.y_m) + 1] += 1;
        }
        for s in 0..OBJECT_SUBCELLS {
            added[s + 1] += added[s];
        }
        objects.merge(scratch, &added, |m| self.object_subcell(origin, m.x_m, m.y_m));
        tail
    }

    /// Moves every raid object of `cell` whose `expires_tick <= now_tick` into `expired` (one
    /// compaction pass under the cell's lock; the caller counts their packs down after). Returns
    /// how many moved.
    pub fn take_expired(&self, cell: CellKey, now_tick: u32, expired: &mut Vec<ObjectMember>, waits: &mut LockWaits) -> usize {
        let Some(mut c) = self.existing_cell_mut(cell, waits) else { return 0 };
        let Some(objects) = c.objects.as_deref_mut() else { return 0 };
        let before = expired.len();
        let len = objects.len();
        // Compaction sub-cell by sub-cell, then the tail: what stays keeps its order, and each
        // sub-cell's new start is where its first survivor lands.
        let mut kept = 0usize;
        let mut read = 0usize;
        let mut keep = |read: usize, kept: &mut usize, objects: &mut CellObjects| {
            if objects.tags[read].expires_tick > now_tick {
                objects.copy(read, *kept);
                *kept += 1;
            } else {
                expired.push(objects.get(read));
            }
        };
        if let Some(mut starts) = objects.starts {
            for s in 0..OBJECT_SUBCELLS {
                let end = starts[s + 1] as usize;
                starts[s] = kept as u32;
                while read < end {
                    keep(read, &mut kept, objects);
                    read += 1;
                }
            }
            starts[OBJECT_SUBCELLS] = kept as u32;
            objects.starts = Some(starts);
        }
        while read < len {
            keep(read, &mut kept, objects);
            read += 1;
        }
        objects.truncate(kept);
        expired.len() - before
    }

    /// Changes the kind of raid object `id`, registered in `cell` at `(x_m, y_m)` (a killed add
    /// becomes the loot it dropped, so areas of interest and contacts show loot). One scan of
    /// the object's sub-cell (and the unordered tail, if any) under the cell's write lock;
    /// `false` if the object is not there (already expired).
    pub fn relabel_object(&self, cell: CellKey, id: u64, x_m: f32, y_m: f32, kind: EntityKind, waits: &mut LockWaits) -> bool {
        let s = self.object_subcell(self.cell_origin(cell), x_m, y_m);
        let Some(mut c) = self.existing_cell_mut(cell, waits) else { return false };
        let Some(objects) = c.objects.as_deref_mut() else { return false };
        let span = match &objects.starts {
            Some(starts) => starts[s] as usize..starts[s + 1] as usize,
            None => 0..0,
        };
        match span.chain(objects.tail()).find(|&i| objects.tags[i].id == id) {
            Some(i) => {
                objects.tags[i].kind = kind;
                true
            }
            None => false,
        }
    }

    /// Calls `visit` for each raid object of `cell` under its read lock (the snapshot build).
    /// `visit` must not touch the grid.
    pub fn for_each_object(&self, cell: CellKey, waits: &mut LockWaits, mut visit: impl FnMut(&ObjectMember)) {
        if let Some(c) = self.existing_cell(cell, waits)
            && let Some(objects) = c.objects.as_deref()
        {
            objects.members(0..objects.len()).for_each(|m| visit(&m));
        }
    }

    /// Calls `visit(id, kind, squared distance)` for the entities other than the player in
    /// `exclude_slot` ([`NO_SLOT`]: none) within `radius_m` of `(x, y)` (squared, so a visitor
    /// that keeps only some of them takes a square root only for those), in the cells' order,
    /// until `visit` returns `false` (it has all it wants); the rest are counted, not visited.
    /// `visit` runs under a cell's read lock and must not touch the grid. Returns how many
    /// entities are within the radius, visited or counted.
    ///
    /// Only the cells that can hold such an entity are visited: an entity is registered in a
    /// cell whose bounds, grown by the hysteresis margin, contain it, so it can only be in a
    /// cell overlapping the square `(x, y) ± (radius + hysteresis)`. With the default 8 m
    /// radius, 2 m margin and 32 m cells that is one cell for a point in a cell's middle and
    /// at most four near a corner (complete as long as `radius + hysteresis <= cell size`,
    /// checked by [`CoreConfig::validate`]). In each, only the raid objects of the sub-cells
    /// that overlap the square `(x, y) ± radius` are read, and the tail not ordered yet.
    ///
    /// Why counting is a separate pass: a move reports at most `contacts_per_move_max` (8)
    /// contacts, and in a raid crowd some 150 objects lie within 8 m of it. Once the visitor
    /// is full, each remaining member costs a distance and a compare added to the count, with
    /// no branch on the result and no call, a loop the compiler unrolls.
    pub fn for_each_near(
        &self,
        x: f32,
        y: f32,
        radius_m: f32,
        exclude_slot: u32,
        waits: &mut LockWaits,
        mut visit: impl FnMut(u64, EntityKind, f32) -> bool,
    ) -> usize {
        let r2 = radius_m * radius_m;
        let reach = radius_m + self.hysteresis_m;
        let (cx0, cx1) = (self.coord((x - reach).max(0.0)), self.coord(x + reach));
        let (cy0, cy1) = (self.coord((y - reach).max(0.0)), self.coord(y + reach));
        // The sub-cell range is widened by a few units of the coordinates' last place, so an
        // object exactly on the radius is not lost to the rounding of `x - radius`.
        let edge = radius_m + (self.world_size_m + radius_m) * 4.0 * f32::EPSILON;
        let within = |mx: f32, my: f32| {
            let (dx, dy) = (mx - x, my - y);
            let d2 = dx * dx + dy * dy;
            (d2 <= r2, d2)
        };
        let mut found = 0usize;
        // Whether the visitor still wants entities (once `false`, members are only counted).
        let mut visiting = true;
        for cy in cy0..=cy1 {
            for cx in cx0..=cx1 {
                let cell = cy * self.cells_per_side + cx;
                let Some(c) = self.existing_cell(cell, waits) else { continue };
                for &slot in &c.players {
                    let (px, py) = self.positions.get(slot);
                    let (near, d2) = within(px, py);
                    let near = near && slot != exclude_slot;
                    found += usize::from(near);
                    if near && visiting {
                        visiting = visit(self.player_ids[slot as usize].load(Ordering::Acquire), EntityKind::Player, d2);
                    }
                }
                let Some(objects) = c.objects.as_deref() else { continue };
                if objects.len() == 0 {
                    continue;
                }
                let origin = self.cell_origin(cell);
                let (sx0, sx1) = (self.subcell_axis(x - edge, origin.0), self.subcell_axis(x + edge, origin.0));
                let (sy0, sy1) = (self.subcell_axis(y - edge, origin.1), self.subcell_axis(y + edge, origin.1));
                // The sub-rows' spans of the order, then the tail the tick has not ordered yet.
                let spans = (sy0..=sy1).map(|sy| objects.row_span(sy, sx0, sx1)).chain(std::iter::once(objects.tail()));
                // Every span's positions asked for before the first is read: between two moves
                // the worker's sends through the kernel evict them, and a span of some fifty
                // objects (two columns of 200 bytes) ends before the hardware prefetcher has
                // caught its stream. Ids and kinds are read only for the contacts visited.
                spans.clone().for_each(|span| {
                    prefetch_lines(&objects.xs[span.clone()]);
                    prefetch_lines(&objects.ys[span]);
                });
                for span in spans {
                    let mut counted_from = span.start;
                    if visiting {
                        counted_from = span.end;
                        let (xs, ys) = (&objects.xs[span.clone()], &objects.ys[span.clone()]);
                        for (i, ((&mx, &my), tag)) in xs.iter().zip(ys).zip(&objects.tags[span.clone()]).enumerate() {
                            let (near, d2) = within(mx, my);
                            if near {
                                found += 1;
                                if !visit(tag.id, tag.kind, d2) {
                                    visiting = false;
                                    counted_from = span.start + i + 1;
                                    break;
                                }
                            }
                        }
                    }
                    // Counted in `u32` lanes, four to an SSE register (a span holds far fewer
                    // than 2^32 objects).
                    let (xs, ys) = (&objects.xs[counted_from..span.end], &objects.ys[counted_from..span.end]);
                    found += xs.iter().zip(ys).map(|(&mx, &my)| u32::from(within(mx, my).0)).sum::<u32>() as usize;
                }
            }
        }
        found
    }

    /// Every cell that currently lists `id` (audit and test use: walks the whole grid and
    /// allocates).
    pub fn cells_containing(&self, id: u64) -> Vec<CellKey> {
        let mut found: Vec<CellKey> = self
            .cells
            .iter()
            .filter(|e| {
                let c = e.value();
                c.players.iter().any(|&slot| self.player_ids[slot as usize].load(Ordering::Acquire) == id)
                    || c.objects.as_deref().is_some_and(|o| o.tags.iter().any(|t| t.id == id))
            })
            .map(|e| *e.key())
            .collect();
        found.sort_unstable();
        found
    }

    /// Total members of each kind across the grid (audit and test use: walks the whole grid).
    pub fn census(&self) -> GridCensus {
        let mut census = GridCensus::default();
        for entry in self.cells.iter() {
            census.players += entry.value().players.len();
            census.objects += entry.value().objects.as_deref().map_or(0, CellObjects::len);
        }
        census
    }

    /// Members registered in a cell their position does not belong to (outside the cell grown
    /// by the hysteresis margin), plus ordered raid objects outside their sub-cell's place in
    /// the cell's order. Always 0 for a consistent grid at rest; audit and test use.
    pub fn misplaced(&self) -> usize {
        self.cells
            .iter()
            .map(|entry| {
                let key = *entry.key();
                let c = entry.value();
                let players = c
                    .players
                    .iter()
                    .filter(|&&slot| {
                        let (x, y) = self.positions.get(slot);
                        self.cell_with_hysteresis(key, x, y) != key
                    })
                    .count();
                let Some(objects) = c.objects.as_deref() else { return players };
                let columns_apart = usize::from(objects.xs.len() != objects.len() || objects.ys.len() != objects.len());
                let origin = self.cell_origin(key);
                let out_of_order = match &objects.starts {
                    Some(starts) => {
                        (0..OBJECT_SUBCELLS)
                            .map(|s| {
                                let span = starts[s] as usize..(starts[s + 1] as usize).min(objects.len());
                                objects.members(span).filter(|m| self.object_subcell(origin, m.x_m, m.y_m) != s).count()
                            })
                            .sum::<usize>()
                            + (starts[OBJECT_SUBCELLS] as usize).saturating_sub(objects.len())
                    }
                    None => 0,
                };
                let outside = objects.members(0..objects.len()).filter(|m| self.cell_with_hysteresis(key, m.x_m, m.y_m) != key).count();
                players + columns_apart + out_of_order + outside
            })
            .sum()
    }

    /// Cells the map holds and the cells it has room for without growing (audit use).
    pub fn cell_map_size(&self) -> (usize, usize) {
        (self.cells.len(), self.cells.capacity())
    }
}

/// Asks the cache for every line of `members` (a hint: no effect on what is read, and none on
/// targets without it).
#[inline]
pub(crate) fn prefetch_lines<T>(members: &[T]) {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::{_MM_HINT_T0, _mm_prefetch};
        /// x86-64's cache line.
        const LINE: usize = 64;
        let bytes = std::mem::size_of_val(members);
        let start = members.as_ptr().cast::<i8>();
        // The last line too: a span need not start on a line.
        for offset in (0..bytes).step_by(LINE).chain(bytes.checked_sub(1)) {
            // SAFETY: `offset < bytes`, so the address lies within `members`; a prefetch reads
            // nothing into the program and cannot fault.
            unsafe { _mm_prefetch::<_MM_HINT_T0>(start.add(offset)) };
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = members;
}

/// Counts from [`Grid::census`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct GridCensus {
    /// Player members.
    pub players: usize,
    /// Raid object members.
    pub objects: usize,
}

#[cfg(all(test, not(mmo_loom)))]
mod tests {
    use super::*;

    fn grid() -> Grid {
        Grid::new(&CoreConfig::default())
    }

    /// A reproducible sequence of values in `[0, 1)` (xorshift64) for placing members.
    fn unit_sequence(mut seed: u64) -> impl FnMut() -> f32 {
        move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            (seed >> 40) as f32 / (1u64 << 24) as f32
        }
    }

    #[test]
    fn a_shard_is_sized_for_a_whole_table() {
        // What hashbrown's tables of 4, 8, 16, 32, 64 and 128 buckets hold.
        for (need, cells) in [(0, 0), (2, 2), (3, 3), (6, 3), (7, 7), (13, 7), (14, 14), (27, 14), (55, 28), (56, 56), (64, 56), (112, 112)]
        {
            assert_eq!(cells_filling_a_table(need), cells, "need {need}");
        }
        for need in 0..2_000 {
            let cells = cells_filling_a_table(need);
            assert!(cells <= need && cells * 2 + 1 >= need, "need {need}: {cells}");
            // A table asked for exactly that many has no room to spare, and holds them all.
            let table: std::collections::HashMap<u32, ()> = std::collections::HashMap::with_capacity(cells);
            assert!(cells < 3 || table.capacity() == cells, "need {need}: {cells} in a table of {}", table.capacity());
        }
    }

    #[test]
    fn the_default_grid_has_room_for_7_cells_in_8_players_and_no_more() {
        let config = CoreConfig::default();
        let (_, capacity) = grid().cell_map_size();
        assert_eq!(capacity, config.player_capacity as usize / 8 * 7);
        assert_eq!(capacity % config.grid_shards as usize, 0, "every shard alike");
    }

    /// Registers player `id` (slot `id`) at `(x, y)` in the cell its position maps to.
    fn put(g: &Grid, id: u64, x: f32, y: f32) {
        g.insert_player(g.cell_of(x, y), id, id as u32, x, y, &mut LockWaits::default());
    }

    #[test]
    fn cells_and_hysteresis() {
        let g = grid();
        assert_eq!(g.cell_of(0.0, 0.0), 0);
        assert_eq!(g.cell_of(33.0, 0.0), 1);
        assert_eq!(g.cell_of(0.0, 33.0), 128);
        assert_eq!(g.cell_of(4095.9, 4095.9), 128 * 128 - 1);
        let home = g.cell_of(31.0, 10.0);
        // 1 m past the edge: inside the 2 m margin, stays.
        assert_eq!(g.cell_with_hysteresis(home, 33.0, 10.0), home);
        // 3 m past: moves.
        assert_eq!(g.cell_with_hysteresis(home, 35.0, 10.0), g.cell_of(35.0, 10.0));
        // And walking back 1 m into the old cell does not bounce back.
        let next = g.cell_of(35.0, 10.0);
        assert_eq!(g.cell_with_hysteresis(next, 31.0, 10.0), next);
        assert!(!g.in_world(-0.1, 5.0) && !g.in_world(5.0, 4096.0) && !g.in_world(f32::NAN, 1.0));
    }

    #[test]
    fn positions_round_trip_both_coordinates_together() {
        let t = PositionTable::new(4);
        t.set(2, 1234.5, -0.25);
        assert_eq!(t.get(2), (1234.5, -0.25));
        assert_eq!(t.get(1), (0.0, 0.0));
    }

    #[test]
    fn a_leave_given_the_wrong_cell_still_frees_the_slot() {
        let g = grid();
        let w = &mut LockWaits::default();
        let (a, b) = (g.cell_of(10.0, 10.0), g.cell_of(40.0, 10.0));
        g.insert_player(a, 9, 2, 10.0, 10.0, w);
        assert!(!g.remove_player(b, 2, w), "not listed in that cell");
        assert_eq!(g.player_in(2), 0, "no snapshot may show a player who left");
    }

    #[test]
    fn insert_relocate_remove() {
        let g = grid();
        let w = &mut LockWaits::default();
        let a = g.cell_of(10.0, 10.0);
        let b = g.cell_of(40.0, 10.0);
        assert_eq!(g.player_in(0), 0, "a slot never taken is free");
        g.insert_player(a, 1, 0, 10.0, 10.0, w);
        assert_eq!(g.player_in(0), 1);
        g.positions().set(0, 40.0, 10.0);
        assert!(g.relocate_player(a, b, 0, w));
        assert_eq!(g.cells_containing(1), vec![b]);
        assert_eq!(g.player_in(0), 1, "a crossing keeps the slot's player");
        assert!(!g.relocate_player(a, b, 0, w), "not in the old cell any more");
        assert!(!g.remove_player(b, 1, w), "slot 1 is not the player's");
        assert_eq!(g.player_in(0), 1, "a removal of another slot frees nothing of this one");
        assert!(g.remove_player(b, 0, w));
        assert_eq!(g.player_in(0), 0, "leave frees the slot");
        assert!(g.cells_containing(1).is_empty());
        assert!(!g.remove_player(b, 0, w));
        assert!(!g.remove_player(12345, 0, w));
        // The slot taken again by another player: the cell reports the new player's id.
        g.insert_player(a, 7, 0, 10.0, 10.0, w);
        assert_eq!(g.player_in(0), 7);
        assert_eq!(g.cells_containing(7), vec![a]);
        assert!(g.cells_containing(1).is_empty(), "the slot's last player is gone");
        let mut seen = vec![];
        g.for_each_near(12.0, 10.0, 8.0, NO_SLOT, w, |id, _, _| {
            seen.push(id);
            true
        });
        assert_eq!(seen, vec![7]);
        assert_eq!(*w, LockWaits::default(), "one thread never waits");
    }

    #[test]
    fn proximity_searches_neighbour_cells_and_respects_radius() {
        let g = grid();
        // Querier just left of a cell boundary, neighbour just right of it.
        put(&g, 1, 31.0, 5.0);
        put(&g, 2, 33.0, 5.0);
        put(&g, 3, 50.0, 5.0);
        let mut seen = vec![];
        g.for_each_near(31.0, 5.0, 8.0, 1, &mut LockWaits::default(), |id, kind, d| {
            seen.push((id, kind, d));
            true
        });
        assert_eq!(seen, vec![(2, EntityKind::Player, 4.0)]);
    }

    #[test]
    fn a_full_visitor_stops_visiting_and_the_rest_are_counted() {
        let g = grid();
        // The querier (1) and five players within 8 m across a cell boundary, one outside.
        for (id, x) in [(1, 30.0), (2, 26.0), (3, 29.0), (4, 31.0), (5, 34.0), (6, 37.0), (7, 39.0)] {
            put(&g, id, x, 5.0);
        }
        for wanted in 1..=6 {
            let mut seen = vec![];
            let near = g.for_each_near(30.0, 5.0, 8.0, 1, &mut LockWaits::default(), |id, kind, _| {
                assert_eq!(kind, EntityKind::Player);
                seen.push(id);
                seen.len() < wanted
            });
            assert_eq!(near, 5, "the querier excluded, the one 9 m away not near");
            assert_eq!(seen.len(), wanted.min(5));
            assert!(!seen.contains(&1) && !seen.contains(&7));
        }
    }

    #[test]
    fn an_in_cell_move_is_seen_through_the_position_table() {
        let g = grid();
        put(&g, 1, 10.0, 10.0);
        put(&g, 2, 20.0, 10.0);
        let mut seen = 0;
        g.for_each_near(10.0, 10.0, 8.0, 1, &mut LockWaits::default(), |_, _, _| {
            seen += 1;
            true
        });
        assert_eq!(seen, 0);
        g.positions().set(2, 15.0, 10.0); // what a move in its cell writes, and all it writes
        g.for_each_near(10.0, 10.0, 8.0, 1, &mut LockWaits::default(), |id, _, d| {
            assert_eq!((id, d), (2, 25.0));
            seen += 1;
            true
        });
        assert_eq!(seen, 1);
    }

    #[test]
    fn proximity_matches_brute_force_with_hysteresis_displaced_members() {
        let g = grid();
        let mut all = vec![];
        let mut next = unit_sequence(0x1234_5678);
        // Members near boundaries, registered in whichever neighbouring cell (any of the
        // eight directions) still holds them within the margin, as a walker arriving from
        // that side would be; every third one a raid object.
        let mut displaced = 0;
        let w = &mut LockWaits::default();
        for id in 1..=3_000u64 {
            let (x, y) = (100.0 + next() * 200.0, 100.0 + next() * 200.0);
            let raw = g.cell_of(x, y);
            let (dx, dy) = (((next() * 3.0) as i32 - 1) as f32 * 1.9, ((next() * 3.0) as i32 - 1) as f32 * 1.9);
            let beside = g.cell_of(x + dx, y + dy);
            let cell = if g.cell_with_hysteresis(beside, x, y) == beside { beside } else { raw };
            displaced += usize::from(cell != raw);
            if id % 3 == 0 {
                g.append_objects(cell, &[ObjectMember { id, x_m: x, y_m: y, expires_tick: 9, kind: EntityKind::Add }], w);
            } else {
                g.insert_player(cell, id, id as u32, x, y, w);
            }
            all.push((id, x, y));
        }
        assert!(displaced > 100, "the test displaces members: {displaced}");
        assert_eq!(g.misplaced(), 0);
        for _ in 0..500 {
            let (qx, qy) = (90.0 + next() * 220.0, 90.0 + next() * 220.0);
            let mut found = vec![];
            g.for_each_near(qx, qy, 8.0, NO_SLOT, w, |id, _, _| {
                found.push(id);
                true
            });
            found.sort_unstable();
            let mut expected: Vec<u64> =
                all.iter().filter(|(_, x, y)| (x - qx).powi(2) + (y - qy).powi(2) <= 64.0).map(|(id, _, _)| *id).collect();
            expected.sort_unstable();
            assert_eq!(found, expected, "query at ({qx}, {qy})");
        }
    }

    #[test]
    fn objects_keep_their_subcell_order_through_bursts_and_expiry() {
        let g = grid();
        let w = &mut LockWaits::default();
        let mut next = unit_sequence(0x00DD_BA11);
        let mut live: Vec<ObjectMember> = vec![];
        let check = |g: &Grid, live: &[ObjectMember], next: &mut dyn FnMut() -> f32, w: &mut LockWaits| {
            assert_eq!(g.misplaced(), 0, "every object in its sub-cell's place");
            assert_eq!(g.census().objects, live.len());
            for q in 0..300 {
                // Every tenth query sits exactly one radius east of an object.
                let (qx, qy) = match live.get(q * 7) {
                    Some(m) if q % 10 == 0 => (m.x_m + 8.0, m.y_m),
                    _ => (60.0 + next() * 140.0, 60.0 + next() * 140.0),
                };
                let mut found = vec![];
                let near = g.for_each_near(qx, qy, 8.0, NO_SLOT, w, |id, _, _| {
                    found.push(id);
                    true
                });
                assert_eq!(near, found.len(), "everything found was visited");
                // A visitor that has had enough after `wanted`: it saw the first `wanted` of
                // the same order, and the rest were counted.
                let wanted = q % 12 + 1;
                let mut first = vec![];
                let counted = g.for_each_near(qx, qy, 8.0, NO_SLOT, w, |id, _, _| {
                    first.push(id);
                    first.len() < wanted
                });
                assert_eq!(counted, near, "query at ({qx}, {qy}) wanting {wanted}");
                assert_eq!(first[..], found[..wanted.min(near)], "the first {wanted} visited, no more");
                found.sort_unstable();
                let mut expected: Vec<u64> = live
                    .iter()
                    .filter(|m| {
                        let (dx, dy) = (m.x_m - qx, m.y_m - qy);
                        dx * dx + dy * dy <= 64.0
                    })
                    .map(|m| m.id)
                    .collect();
                expected.sort_unstable();
                assert_eq!(found, expected, "query at ({qx}, {qy})");
            }
        };
        let mut id = 0u64;
        for burst in 0..4u32 {
            // A burst over a 100 m square (four to nine cells), grouped by cell and appended in
            // pieces of every size, some larger than a spawn's chunk.
            let mut by_cell: std::collections::BTreeMap<CellKey, Vec<ObjectMember>> = Default::default();
            for _ in 0..3_000 {
                id += 1;
                let (x, y) = (70.0 + next() * 100.0, 70.0 + next() * 100.0);
                let m = ObjectMember { id, x_m: x, y_m: y, expires_tick: burst + 1 + (id % 3) as u32, kind: EntityKind::Add };
                by_cell.entry(g.cell_of(x, y)).or_default().push(m);
                live.push(m);
            }
            let cells: Vec<CellKey> = by_cell.keys().copied().collect();
            for (cell, objects) in by_cell {
                let mut rest = &objects[..];
                while !rest.is_empty() {
                    let n = (1 + (next() * 700.0) as usize).min(rest.len());
                    g.append_objects(cell, &rest[..n], w);
                    rest = &rest[n..];
                }
            }
            // Appended, not ordered yet: queries read the tails whole.
            check(&g, &live, &mut next, w);
            // The tick orders the burst's cells (every other burst, one more burst lands
            // before it does, so a tail holds two bursts' objects).
            if burst % 2 == 1 {
                let mut scratch = vec![];
                let ordered: usize = cells.iter().map(|&c| g.order_objects(c, &mut scratch, w)).sum();
                assert!(ordered >= 3_000, "this burst and what is left of the last: {ordered}");
                let ordered_now: usize =
                    cells.iter().map(|&c| g.cells.get(&c).map_or(0, |e| e.objects.as_deref().map_or(0, CellObjects::ordered))).sum();
                assert_eq!(ordered_now, g.census().objects, "no tail left in the burst's cells");
                assert!(cells.iter().all(|&c| g.order_objects(c, &mut scratch, w) == 0), "ordered once");
            }
            check(&g, &live, &mut next, w);
            // A kill relabels its add where the order put it.
            for m in live.iter_mut().step_by(97) {
                let cell = g.cell_of(m.x_m, m.y_m);
                assert!(g.relabel_object(cell, m.id, m.x_m, m.y_m, EntityKind::Loot, w), "object {} found", m.id);
                assert!(!g.relabel_object(cell, m.id + 1_000_000, m.x_m, m.y_m, EntityKind::Loot, w));
                m.kind = EntityKind::Loot;
                let mut seen = None;
                g.for_each_near(m.x_m, m.y_m, 0.5, NO_SLOT, w, |id, kind, _| {
                    if id == m.id {
                        seen = Some(kind);
                    }
                    true
                });
                assert_eq!(seen, Some(EntityKind::Loot));
            }
            // The tick after: what is due leaves every cell.
            let mut expired = vec![];
            for cell in 0..g.cells_per_side() * 8 {
                g.take_expired(cell, burst + 1, &mut expired, w);
            }
            let due = live.iter().filter(|m| m.expires_tick <= burst + 1).count();
            assert_eq!(expired.len(), due);
            live.retain(|m| m.expires_tick > burst + 1);
            check(&g, &live, &mut next, w);
        }
    }

    /// Contact counts and visits against brute force (the same f32 arithmetic) where the
    /// choice of cells and sub-cells to read could go wrong: objects on sub-cell and cell boundaries and one ulp
    /// either side, objects displaced into a neighbouring cell by up to the hysteresis margin,
    /// queries whose circle passes through sub-cell corners or exactly through an object, in
    /// the default world and in one whose sizes are not powers of two.
    #[test]
    fn contact_counts_match_brute_force_on_subcell_boundaries() {
        let odd = CoreConfig { world_size_m: 3_000.0, cell_size_m: 30.0, cell_hysteresis_m: 1.7, ..CoreConfig::default() };
        for (config, radius) in [(CoreConfig::default(), 8.0f32), (odd, 7.3)] {
            let g = Grid::new(&config);
            let w = &mut LockWaits::default();
            let mut next = unit_sequence(0x5EB_CE11);
            let sub = config.cell_size_m / OBJECT_SUBCELLS_PER_SIDE as f32;
            let base = config.cell_size_m * 20.0;
            let mut all: Vec<ObjectMember> = vec![];
            let mut by_cell: std::collections::BTreeMap<CellKey, Vec<ObjectMember>> = Default::default();
            let mut id = 0u64;
            let mut place = |x: f32, y: f32, next: &mut dyn FnMut() -> f32| {
                id += 1;
                let m = ObjectMember { id, x_m: x, y_m: y, expires_tick: 9, kind: EntityKind::Add };
                // Now and then filed under the neighbouring cell that still holds it within the
                // margin, as a walker arriving from that side would be.
                let (dx, dy) = (
                    ((next() * 3.0) as i32 - 1) as f32 * config.cell_hysteresis_m,
                    ((next() * 3.0) as i32 - 1) as f32 * config.cell_hysteresis_m,
                );
                let beside = g.cell_of(x + dx, y + dy);
                let cell = if g.cell_with_hysteresis(beside, x, y) == beside { beside } else { g.cell_of(x, y) };
                by_cell.entry(cell).or_default().push(m);
                all.push(m);
            };
            // A lattice on the sub-cell boundaries of a 3 x 3 block of cells, each point also
            // one ulp either side, and a scatter between.
            let lines = 3 * OBJECT_SUBCELLS_PER_SIDE;
            for i in 0..=lines {
                for j in (0..=lines).step_by(3) {
                    let (x, y) = (base + i as f32 * sub, base + j as f32 * sub);
                    for (x, y) in [(x, y), (x.next_up(), y.next_down()), (x.next_down(), y.next_up())] {
                        place(x, y, &mut next);
                        place(y, x, &mut next);
                    }
                }
            }
            for _ in 0..3_000 {
                let extent = 3.0 * config.cell_size_m;
                place(base + next() * extent, base + next() * extent, &mut next);
            }
            let cells: Vec<CellKey> = by_cell.keys().copied().collect();
            for (cell, objects) in &by_cell {
                g.append_objects(*cell, objects, w);
            }
            let check = |g: &Grid, next: &mut dyn FnMut() -> f32, w: &mut LockWaits| {
                for q in 0..2_000 {
                    let (qx, qy) = match q % 3 {
                        // The circle through a lattice corner (or an ulp beside it).
                        0 => {
                            let (i, j) = ((next() * lines as f32) as usize, (next() * lines as f32) as usize);
                            let angle = next() * std::f32::consts::TAU;
                            let (cx, cy) = (base + i as f32 * sub, base + j as f32 * sub);
                            let (qx, qy) = (cx + radius * angle.cos(), cy + radius * angle.sin());
                            if q % 2 == 0 { (qx, qy) } else { (qx.next_up(), qy.next_down()) }
                        }
                        // Exactly one radius east of an object.
                        1 => {
                            let m = all[(next() * all.len() as f32) as usize % all.len()];
                            (m.x_m + radius, m.y_m)
                        }
                        _ => (base + next() * 3.0 * config.cell_size_m, base + next() * 3.0 * config.cell_size_m),
                    };
                    let r2 = radius * radius;
                    let mut expected: Vec<u64> = all
                        .iter()
                        .filter(|m| {
                            let (dx, dy) = (m.x_m - qx, m.y_m - qy);
                            dx * dx + dy * dy <= r2
                        })
                        .map(|m| m.id)
                        .collect();
                    expected.sort_unstable();
                    let mut found = vec![];
                    let near = g.for_each_near(qx, qy, radius, NO_SLOT, w, |id, _, _| {
                        found.push(id);
                        true
                    });
                    found.sort_unstable();
                    assert_eq!(found, expected, "query at ({qx}, {qy}), radius {radius}");
                    assert_eq!(near, expected.len());
                    // A visitor full at once: everything else only counted.
                    let counted = g.for_each_near(qx, qy, radius, NO_SLOT, w, |_, _, _| false);
                    assert_eq!(counted, expected.len(), "counted at ({qx}, {qy}), radius {radius}");
                }
            };
            // The tails first, then the order the tick makes.
            check(&g, &mut next, w);
            let mut scratch = vec![];
            let ordered: usize = cells.iter().map(|&c| g.order_objects(c, &mut scratch, w)).sum();
            assert_eq!(ordered, all.len());
            assert_eq!(g.misplaced(), 0);
            check(&g, &mut next, w);
        }
    }

    #[test]
    fn expiry_takes_only_due_objects_and_keeps_players() {
        let g = grid();
        let w = &mut LockWaits::default();
        let c = g.cell_of(5.0, 5.0);
        put(&g, 1, 5.0, 5.0);
        let objects: Vec<ObjectMember> = [(10u64, 3u32), (11, 4), (12, 9)]
            .iter()
            .map(|&(id, expires_tick)| ObjectMember { id, x_m: 5.0, y_m: 5.0, expires_tick, kind: EntityKind::Add })
            .collect();
        g.append_objects(c, &objects, w);
        let mut expired = Vec::new();
        assert_eq!(g.take_expired(c, 4, &mut expired, w), 2);
        let mut ids: Vec<u64> = expired.iter().map(|m| m.id).collect();
        ids.sort_unstable();
        assert_eq!(ids, vec![10, 11]);
        assert_eq!(g.census(), GridCensus { players: 1, objects: 1 });
        assert_eq!(g.take_expired(c, 100, &mut expired, w), 1);
        assert_eq!(g.take_expired(c + 1, 100, &mut expired, w), 0);
        assert_eq!(g.census(), GridCensus { players: 1, objects: 0 });
    }

    #[test]
    fn the_cell_map_is_sized_for_the_players_not_for_every_cell() {
        let config = CoreConfig { world_size_m: 65_536.0, player_capacity: 1_000, ..CoreConfig::default() };
        let g = Grid::new(&config);
        let (_, room) = g.cell_map_size();
        // Each shard takes the largest whole table within its share of 1,000 (8 of them: 7).
        assert_eq!(room, 7 * config.grid_shards as usize, "room for 7 cells in 8 players: {room}");
        assert!(room <= 1_000 + config.grid_shards as usize, "not 4M cells' worth: {room}");
    }

    #[test]
    fn a_held_shard_is_counted_as_a_wait() {
        let g = std::sync::Arc::new(grid());
        let cell = g.cell_of(10.0, 10.0);
        put(&g, 1, 10.0, 10.0);
        let held = g.cells.get_mut(&cell).unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        let reader = {
            let g = std::sync::Arc::clone(&g);
            std::thread::spawn(move || {
                let mut w = LockWaits::default();
                tx.send(()).unwrap();
                g.for_each_near(12.0, 10.0, 8.0, NO_SLOT, &mut w, |_, _, _| true);
                w
            })
        };
        rx.recv().unwrap();
        std::thread::sleep(std::time::Duration::from_millis(100));
        drop(held);
        let w = reader.join().unwrap();
        assert_eq!(w.contended, 1, "the query found its cell's shard write-locked once");
        assert!(w.wait_ns > 0);
    }
}
