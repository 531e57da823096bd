//! Combat: hit points, damage, and raid bursts of short-lived objects.
//!
//! - **Combatants** (one per player: hp, faction, owner) live in their own sharded-slab arena.
//! - **Raid objects** (adds, projectiles, loot) live in a second arena in *packs*: one slot
//!   ([`RaidPack`]) holds up to [`RAID_PACK_OBJECTS`] (64) objects of one burst, created one
//!   after another, with what they share (kind, faction) kept once. The arena's first page
//!   ([`crate::arena::RaidArenaConfig`]: 256 packs, one 11,000-object burst in 172) a thread
//!   allocates with its first raid and reuses for every later one; `raid_object_capacity` caps
//!   how many objects are alive. A raid spawn creates N of them around a point in one call,
//!   each registered in the grid with its expiry tick; an object's id is its pack's key and its
//!   index in the pack. A killed add keeps its place until its burst expires and carries the
//!   loot it dropped ([`crate::loot`]).
//! - **Spawning** places the objects cell by cell (`Placer`), writes them into packs of 64
//!   (one arena insert per pack: sharded-slab's per-insert costs, a lifecycle compare-and-swap,
//!   a walk past full pages and a free-list pop on a cold line, were 80% of a spawn with a slot
//!   per object), and appends each cell's objects to its unordered tail with one copy under
//!   the cell's lock per [`SPAWN_CHUNK`]; the tick, taking the burst in, merges the tails of
//!   its cells into their sub-cell order ([`Grid::order_objects`]).
//! - **Expiry**: a burst is remembered only as `(expires_tick, rectangle of cells)`, a fixed
//!   12-byte [`BurstExpiry`]. The spawner hands it to the tick through a bounded lock-free
//!   `ArrayQueue`; the tick keeps a pre-sized heap ordered by expiry and, when a burst is due,
//!   moves each cell's due objects out with one compaction pass under the cell's lock and,
//!   after releasing it, counts each pack's share down, freeing a pack when its last object
//!   (in whichever cell) is gone. Nothing about a burst is heap-allocated, so a burst costs the
//!   same whichever threads spawn and expire it, and the object count released is exactly
//!   what the sweep removed (an overlapping burst's due objects are taken out and counted by
//!   whichever sweep reaches them first, and a pack freed by whichever takes its last object).
//!
//! Spawning is whole or nothing: a [`CapacityGate`] admits the full count of objects and one
//! burst slot before anything is created, so the queue can never be full when the spawner
//! pushes to it (its capacity equals the burst limit).
//!
//! Concurrency contract:
//! - [`Health`] is a hand-written atomic protocol: a compare-and-swap loop that saturates at
//!   zero, so concurrent hits never resurrect or over-kill, and exactly one hit reports
//!   [`DamageOutcome::Killed`] (model-checked in `tests/loom/health.rs`). [`RespawnBound`] is
//!   the other: the tick's lower bound on the next respawn (`tests/loom/respawn_bound.rs`).
//! - Raid objects are immutable after spawn apart from their health and loot word; only the
//!   tick frees them, a pack at a time. A reader holding an object ([`RaidObjectRef`], a guard
//!   on its pack) delays the pack's reuse, never sees it reused.
//! - Locks: none of this module's own; the tick's expiry heap is behind the tick's lock
//!   ([`crate::tick`]), and grid writes take one grid shard at a time.

use crate::arena::{ArenaConfig, RAID_PACK_OBJECTS, RaidArenaConfig, object_id_from_pack, pack_of_object_id};
use crate::capacity::CapacityGate;
use crate::config::{CoreConfig, RAID_BURST_MAX};
use crate::grid::{Grid, ObjectMember};
use crate::locks::LockWaits;
use crate::records::{EntityKind, RaidSpawnRequest};
use crate::sync::{AtomicI32, AtomicU32, AtomicU64, Ordering};
use crossbeam_queue::ArrayQueue;
use sharded_slab::Slab;
use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// Hit points, shared by every thread that deals damage.
#[derive(Debug)]
pub struct Health {
    /// Current hit points, never below zero. Written by damage (CAS), read by anyone.
    hp: AtomicI32,
}

/// What one damage call did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DamageOutcome {
    /// The target survived with this many hit points.
    Hit {
        /// Hit points left.
        hp_left: i32,
    },
    /// This call brought the target to zero (reported to exactly one caller).
    Killed,
    /// The target was already at zero; nothing changed.
    AlreadyDead,
}

impl Health {
    /// Full health.
    pub fn new(hp: i32) -> Self {
        Self { hp: AtomicI32::new(hp.max(0)) }
    }

    /// Current hit points.
    pub fn hp(&self) -> i32 {
        self.hp.load(Ordering::Acquire)
    }

    /// Takes every hit point at once and hands back what there was (a leaving player's, kept
    /// for its account): from then on every hit finds it dead, so none lands after the read.
    pub fn take_all(&self) -> i32 {
        self.hp.swap(0, Ordering::AcqRel)
    }

    /// Brings a dead combatant back with `hp` (> 0) hit points; `false` if it was not dead.
    pub fn revive(&self, hp: i32) -> bool {
        debug_assert!(hp > 0);
        self.hp.compare_exchange(0, hp, Ordering::AcqRel, Ordering::Acquire).is_ok()
    }

    /// Takes `amount` (> 0) hit points, saturating at zero.
    pub fn damage(&self, amount: i32) -> DamageOutcome {
        self.damage_reporting(amount).1
    }

    /// Takes `amount` (> 0) hit points, saturating at zero; also hands back how many it took
    /// (`amount`, or what was left when that was less; 0 when already dead).
    pub fn damage_reporting(&self, amount: i32) -> (i32, DamageOutcome) {
        debug_assert!(amount > 0);
        let mut current = self.hp.load(Ordering::Acquire);
        loop {
            if current <= 0 {
                return (0, DamageOutcome::AlreadyDead);
            }
            let next = current.saturating_sub(amount).max(0);
            match self.hp.compare_exchange_weak(current, next, Ordering::AcqRel, Ordering::Acquire) {
                Ok(_) if next == 0 => return (current, DamageOutcome::Killed),
                Ok(_) => return (current - next, DamageOutcome::Hit { hp_left: next }),
                Err(seen) => current = seen,
            }
        }
    }
}

/// A lower bound on when the next dead player is due to respawn, or `u64::MAX` while none is
/// known: the engine's tick sweeps the bodies for due respawns only once it has come, so a
/// death costs one sweep when it is due, not one per tick while it lasts.
///
/// The protocol (model-checked in `tests/loom/respawn_bound.rs`): whoever marks a body dead
/// stores its respawn time first, then [`RespawnBound::lower`]s the bound to it; the tick asks
/// [`RespawnBound::take_if_due`], which raises the bound to `u64::MAX` when it has come, then
/// reads every body's respawn time and lowers the bound again for each body still dead. Both
/// changes are read-modify-writes of this one atomic, so a mark made while the tick sweeps is
/// either seen by the sweep (the swap read the marker's `fetch_min`, so the store before it
/// is visible) or leaves its bound in place for the next tick. Nothing raises it otherwise: a
/// bound left by a body that has gone costs one idle sweep.
#[derive(Debug)]
pub struct RespawnBound {
    /// Written by markers (`fetch_min`) and the tick (`swap`); read by the tick.
    next_ms: AtomicU64,
}

impl Default for RespawnBound {
    fn default() -> Self {
        Self::new()
    }
}

impl RespawnBound {
    /// No dead player known.
    pub fn new() -> Self {
        Self { next_ms: AtomicU64::new(u64::MAX) }
    }

    /// A body was marked dead until `at_ms` (call after the mark is stored).
    pub fn lower(&self, at_ms: u64) {
        self.next_ms.fetch_min(at_ms, Ordering::AcqRel);
    }

    /// Whether a sweep is due at `now_ms`; if so the bound is raised to `u64::MAX`, and the
    /// sweep must [`RespawnBound::lower`] it again for every body it leaves dead.
    pub fn take_if_due(&self, now_ms: u64) -> bool {
        if self.next_ms.load(Ordering::Acquire) > now_ms {
            return false;
        }
        self.next_ms.swap(u64::MAX, Ordering::AcqRel);
        true
    }

    /// The bound as it stands (`u64::MAX`: none).
    pub fn get(&self) -> u64 {
        self.next_ms.load(Ordering::Acquire)
    }
}

/// A player's combat state.
#[derive(Debug)]
pub struct Combatant {
    /// Hit points.
    pub health: Health,
    /// Faction; same-faction damage is refused.
    pub faction: u8,
    /// Owning player id.
    pub owner: u64,
}

/// One spawned raid object: what differs between the objects of a pack.
#[derive(Debug)]
pub struct RaidObject {
    /// Hit points (adds can be fought; projectiles and loot usually have 1).
    pub health: Health,
    /// Where it was spawned, metres (raid objects never move): read by an attack's range check.
    /// The grid keeps its own copy, inline in the cell, for proximity queries.
    pub x_m: f32,
    /// Where it was spawned, metres.
    pub y_m: f32,
    /// The grid cell it was registered in at spawn (where a kill relabels it).
    pub cell: u32,
    /// Its loot ([`crate::loot`]): 0 while it has none; its owner once a killing attack
    /// dropped loot on it (the killer's wallet, [`crate::economy::WalletHandle::loot_owner`]);
    /// that with [`crate::loot::LOOT_CLAIMED`] set once claimed.
    /// Written by the killing attack (store) and the one winning claim (CAS); read by claims.
    pub loot: AtomicU64,
}

// (Loom's instrumented atomics are larger; the layout is asserted for the real build.)
#[cfg(not(mmo_loom))]
const _: () = assert!(std::mem::size_of::<RaidObject>() == 24);

/// Up to [`RAID_PACK_OBJECTS`] objects of one burst, created one after another by its spawn:
/// the raid arena's slot. What the objects share (kind, faction) is kept once; their expiry
/// is the grid's to know.
/// A pack's objects may lie in two or more cells (a burst is spawned cell by cell, in packs of
/// 64 across the cells' shares); the tick frees the pack when the last of them has expired.
#[derive(Debug)]
pub struct RaidPack {
    /// Objects of this pack not yet taken out of the grid by an expiry sweep. Set by the spawn
    /// before the pack is inserted; counted down (and the pack freed at zero) only by the
    /// tick's sweep.
    live: AtomicU32,
    /// How many of `objects` are in use (1..=64).
    len: u8,
    /// What every object of the pack is.
    kind: EntityKind,
    /// Their faction.
    faction: u8,
    /// The objects; the first `len` are in use.
    objects: [RaidObject; RAID_PACK_OBJECTS],
}

// A slot of 1,560 bytes (the arena adds a lifecycle and a free-list word): what the raid
// arena's first page of 256 slots is sized by (`arena::RaidArenaConfig`).
// `None` fits in `kind`'s spare values, so the arena's `Option<RaidPack>` is no larger.
#[cfg(not(mmo_loom))]
const _: () = assert!(std::mem::size_of::<RaidPack>() == 8 + 24 * RAID_PACK_OBJECTS);
const _: () = assert!(std::mem::size_of::<Option<RaidPack>>() == std::mem::size_of::<RaidPack>());

/// A raid object, read through its pack: holding it delays the pack's reuse (as any arena
/// guard does), never sees it reused.
pub struct RaidObjectRef<'a> {
    pack: sharded_slab::Entry<'a, RaidPack, RaidArenaConfig>,
    index: usize,
}

impl RaidObjectRef<'_> {
    /// What it is (as spawned; the grid's label changes when an add is killed).
    pub fn kind(&self) -> EntityKind {
        self.pack.kind
    }

    /// Its faction.
    pub fn faction(&self) -> u8 {
        self.pack.faction
    }
}

impl std::ops::Deref for RaidObjectRef<'_> {
    type Target = RaidObject;

    fn deref(&self) -> &RaidObject {
        &self.pack.objects[self.index]
    }
}

/// What the tick must sweep when a burst expires: its expiry tick and the rectangle of grid
/// cells its objects were put in (inclusive cell coordinates).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct BurstExpiry {
    /// Tick at which the burst's objects expire.
    pub expires_tick: u32,
    /// Lowest cell column.
    pub cx0: u16,
    /// Lowest cell row.
    pub cy0: u16,
    /// Highest cell column.
    pub cx1: u16,
    /// Highest cell row.
    pub cy1: u16,
}

const _: () = assert!(std::mem::size_of::<BurstExpiry>() == 12);

/// The tick's expiry heap, soonest first.
pub type ExpiryHeap = BinaryHeap<Reverse<BurstExpiry>>;

/// Why a raid spawn was refused. Nothing was spawned.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RaidError {
    /// `kind` is not `Add`, `Projectile` or `Loot`.
    BadKind,
    /// `count` is 0 or above [`RAID_BURST_MAX`].
    BadCount,
    /// `lifetime_ms` is 0 or `hp` is not positive.
    BadLifetimeOrHp,
    /// The centre is outside the world, or the extent is negative or not finite.
    OutOfBounds,
    /// The objects would exceed `raid_object_capacity`, or too many bursts are alive.
    CapacityExceeded,
}

/// What a raid spawn did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RaidReport {
    /// Objects spawned (always the requested count).
    pub spawned: u32,
    /// Grid cells the burst covers.
    pub cells: u32,
    /// Tick at which the burst expires.
    pub expires_tick: u32,
}

/// What one tick's expiry pass did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ExpiryReport {
    /// Bursts freed.
    pub bursts: u32,
    /// Objects freed.
    pub objects: u32,
}

/// Objects a raid spawn appends to a cell under one acquisition of the cell's lock, at most
/// (12 KiB of stack).
pub const SPAWN_CHUNK: usize = 512;

/// Whether two raid object ids are of the same pack.
fn same_pack(a: u64, b: u64) -> bool {
    pack_of_object_id(a).map(|(key, _)| key) == pack_of_object_id(b).map(|(key, _)| key)
}

/// Where a spawn's objects go, one after another: each cell the burst's square overlaps gets a
/// share of the count proportional to its overlap (cumulative rounding, so the shares add up
/// exactly), cells row by row, each share's positions uniform over the cell's part of the
/// square. The order and the draws are the baseline's (`baseline_raid.cpp`).
struct Placer {
    /// The burst's rectangle of cells, inclusive: `(cx0, cy0, cx1, cy1)`.
    cells: (u32, u32, u32, u32),
    /// The square, clamped to the world.
    square: (f32, f32, f32, f32),
    area: f32,
    top: f32,
    cell_size_m: f32,
    cells_per_side: u32,
    count: u32,
    rng: SplitMix64,
    /// The cell being filled (`cx`, `cy`; before the first, the one before `(cx0, cy0)` in row
    /// order) and its overlap with the square.
    at: (u32, u32),
    overlap: (f32, f32, f32, f32),
    cell_index: u32,
    area_before: f64,
    placed_before: u32,
    /// Objects of the current cell's share still to place.
    share_left: u32,
}

impl Placer {
    fn new(req: &RaidSpawnRequest, world_size_m: f32, grid: &Grid) -> Self {
        // A degenerate square (zero width or height) is widened to a tiny one so every object
        // still gets a position inside the world.
        let top = world_size_m.next_down();
        let h = req.half_extent_m.max(0.001);
        let (x0, x1) = ((req.center_x_m - h).max(0.0), (req.center_x_m + h).min(top));
        let (y0, y1) = ((req.center_y_m - h).max(0.0), (req.center_y_m + h).min(top));
        let (cx0, cy0) = grid.cell_coords(grid.cell_of(x0, y0));
        let (cx1, cy1) = grid.cell_coords(grid.cell_of(x1, y1));
        Self {
            cells: (cx0, cy0, cx1, cy1),
            square: (x0, y0, x1, y1),
            area: (x1 - x0) * (y1 - y0),
            top,
            cell_size_m: grid.cell_size_m(),
            cells_per_side: grid.cells_per_side(),
            count: req.count,
            rng: SplitMix64(u64::from(req.seed) ^ 0xA5A5_5A5A_DEAD_BEEF),
            at: (cx1, cy0.wrapping_sub(1)),
            overlap: (0.0, 0.0, 0.0, 0.0),
            cell_index: 0,
            area_before: 0.0,
            placed_before: 0,
            share_left: 0,
        }
    }

    /// Cells the burst's rectangle covers.
    fn total_cells(&self) -> u32 {
        let (cx0, cy0, cx1, cy1) = self.cells;
        (cx1 - cx0 + 1) * (cy1 - cy0 + 1)
    }

    /// Objects whose cell share has been drawn so far (all of them once the last cell is reached).
    fn placed(&self) -> u32 {
        self.placed_before
    }

    /// The next object's cell and position. Called at most `count` times.
    fn next(&mut self) -> (u32, f32, f32) {
        let (cx0, _, cx1, cy1) = self.cells;
        let (x0, y0, x1, y1) = self.square;
        // Bounded: the last cell's share is whatever is left of the count, so a call within the
        // count always finds a cell with some before it runs out of cells.
        while self.share_left == 0 {
            let (mut cx, mut cy) = self.at;
            if cx >= cx1 {
                cx = cx0;
                cy = cy.wrapping_add(1);
            } else {
                cx += 1;
            }
            assert!(cy <= cy1, "raid spawn placed more objects than its count");
            self.at = (cx, cy);
            self.cell_index += 1;
            let size = self.cell_size_m;
            // This cell's overlap with the square.
            let (ox0, ox1) = (x0.max(cx as f32 * size), x1.min((cx + 1) as f32 * size));
            let (oy0, oy1) = (y0.max(cy as f32 * size), y1.min((cy + 1) as f32 * size));
            self.area_before += ((ox1 - ox0).max(0.0) * (oy1 - oy0).max(0.0)) as f64;
            let placed_after = if self.cell_index == self.total_cells() {
                self.count
            } else {
                ((self.count as f64 * self.area_before / self.area as f64) as u32).min(self.count)
            };
            self.share_left = placed_after - self.placed_before;
            self.placed_before = placed_after;
            // Clamped so a share on a cell with (numerically) no area still lands inside it.
            self.overlap = (ox0, oy0, ox1.max(ox0), oy1.max(oy0));
        }
        self.share_left -= 1;
        let (ox0, oy0, ox1, oy1) = self.overlap;
        let x = (ox0 + self.rng.unit() * (ox1 - ox0)).min(self.top);
        let y = (oy0 + self.rng.unit() * (oy1 - oy0)).min(self.top);
        (self.at.1 * self.cells_per_side + self.at.0, x, y)
    }
}

/// A spawn's objects on their way to the grid: consecutive objects of one cell, appended with
/// one acquisition of its lock when the cell changes or [`SPAWN_CHUNK`] are waiting.
struct MemberRun {
    cell: u32,
    len: usize,
    members: [ObjectMember; SPAWN_CHUNK],
}

impl MemberRun {
    fn new(expires_tick: u32, kind: EntityKind) -> Self {
        Self { cell: 0, len: 0, members: [ObjectMember { id: 0, x_m: 0.0, y_m: 0.0, expires_tick, kind }; SPAWN_CHUNK] }
    }

    fn push(&mut self, cell: u32, id: u64, x_m: f32, y_m: f32, grid: &Grid, waits: &mut LockWaits) {
        if self.len == SPAWN_CHUNK || (self.len > 0 && cell != self.cell) {
            self.flush(grid, waits);
        }
        self.cell = cell;
        let member = &mut self.members[self.len];
        (member.id, member.x_m, member.y_m) = (id, x_m, y_m);
        self.len += 1;
    }

    fn flush(&mut self, grid: &Grid, waits: &mut LockWaits) {
        if self.len > 0 {
            grid.append_objects(self.cell, &self.members[..self.len], waits);
            self.len = 0;
        }
    }
}

/// Small, fast, seedable generator (SplitMix64): spawn positions and loot rolls. The C++
/// baseline has the same one (`baseline_util.hpp`), so both engines roll the same loot.
pub(crate) struct SplitMix64(pub(crate) u64);

impl SplitMix64 {
    #[inline]
    pub(crate) fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `[0, 1)`.
    #[inline]
    fn unit(&mut self) -> f32 {
        (self.next_u64() >> 40) as f32 * (1.0 / (1u64 << 24) as f32)
    }
}

/// The combat service: combatant and raid arenas, burst records, and the expiry hand-off.
pub struct Combat {
    /// Player combatants. Inserted by join, removed by leave, read by damage.
    combatants: Slab<Combatant, ArenaConfig>,
    /// Raid objects, in packs. Inserted by raid spawn, removed by the tick, read by damage,
    /// attacks and loot claims.
    packs: Slab<RaidPack, RaidArenaConfig>,
    /// Spawner -> tick hand-off of burst expiries; capacity = burst limit.
    expiry_inbox: ArrayQueue<BurstExpiry>,
    /// Live raid objects against `raid_object_capacity`.
    object_gate: CapacityGate,
    /// Live bursts against `raid_burst_capacity`.
    burst_gate: CapacityGate,
    tick_ms: u32,
    world_size_m: f32,
}

impl Combat {
    /// Empty arenas for `config`.
    pub fn new(config: &CoreConfig) -> Self {
        Self {
            combatants: Slab::new_with_config::<ArenaConfig>(),
            packs: Slab::new_with_config::<RaidArenaConfig>(),
            expiry_inbox: ArrayQueue::new(config.raid_burst_capacity as usize),
            object_gate: CapacityGate::new(config.raid_object_capacity),
            burst_gate: CapacityGate::new(config.raid_burst_capacity),
            tick_ms: config.tick_ms,
            world_size_m: config.world_size_m,
        }
    }

    /// Creates a player's combatant.
    pub fn add_combatant(&self, owner: u64, faction: u8, hp: i32) -> Option<usize> {
        self.combatants.insert(Combatant { health: Health::new(hp), faction, owner })
    }

    /// Frees a player's combatant.
    pub fn remove_combatant(&self, key: usize) -> bool {
        self.combatants.remove(key)
    }

    /// A player's combatant.
    pub fn combatant(&self, key: usize) -> Option<sharded_slab::Entry<'_, Combatant, ArenaConfig>> {
        self.combatants.get(key)
    }

    /// A raid object by id.
    pub fn object(&self, object_id: u64) -> Option<RaidObjectRef<'_>> {
        let (key, index) = pack_of_object_id(object_id)?;
        let pack = self.packs.get(key)?;
        (index < usize::from(pack.len)).then_some(RaidObjectRef { pack, index })
    }

    /// Raid objects alive now.
    pub fn live_objects(&self) -> u32 {
        self.object_gate.in_use()
    }

    /// Raid bursts alive now.
    pub fn live_bursts(&self) -> u32 {
        self.burst_gate.in_use()
    }

    fn validate(&self, req: &RaidSpawnRequest) -> Result<EntityKind, RaidError> {
        let kind = match EntityKind::try_from(req.kind) {
            Ok(k @ (EntityKind::Add | EntityKind::Projectile | EntityKind::Loot)) => k,
            _ => return Err(RaidError::BadKind),
        };
        if req.count == 0 || req.count > RAID_BURST_MAX {
            return Err(RaidError::BadCount);
        }
        if req.lifetime_ms == 0 || req.hp <= 0 {
            return Err(RaidError::BadLifetimeOrHp);
        }
        let (cx, cy, h) = (req.center_x_m, req.center_y_m, req.half_extent_m);
        let inside = |v: f32| v.is_finite() && v >= 0.0 && v < self.world_size_m;
        if !inside(cx) || !inside(cy) || !h.is_finite() || h < 0.0 {
            return Err(RaidError::OutOfBounds);
        }
        Ok(kind)
    }

    /// Spawns `req.count` objects uniformly over the square around the centre (clamped to
    /// the world), expiring `lifetime_ms` from `now_tick`. Whole or nothing.
    ///
    /// Objects are placed cell by cell (`Placer`: each cell the square overlaps gets a share
    /// proportional to its overlap), created in packs of [`RAID_PACK_OBJECTS`] (one arena
    /// insert each), and appended to their cells with one lock acquisition per cell and up to
    /// [`SPAWN_CHUNK`] objects. No sort, no per-object lock or arena insert.
    pub fn raid_spawn(&self, req: &RaidSpawnRequest, now_tick: u32, grid: &Grid, waits: &mut LockWaits) -> Result<RaidReport, RaidError> {
        let kind = self.validate(req)?;
        if !self.object_gate.try_acquire(req.count) {
            return Err(RaidError::CapacityExceeded);
        }
        if !self.burst_gate.try_acquire(1) {
            self.object_gate.release(req.count);
            return Err(RaidError::CapacityExceeded);
        }
        // `now_tick` is the last published tick; the next one to run is `now_tick + 1`, and
        // may already be sweeping. Expiring at `now_tick + ticks + 1` keeps every object alive
        // for at least `lifetime_ms` and out of reach of a sweep already under way.
        let lifetime_ticks = req.lifetime_ms.div_ceil(self.tick_ms).max(1);
        let expires_tick = now_tick.saturating_add(lifetime_ticks).saturating_add(1);

        let mut placer = Placer::new(req, self.world_size_m, grid);
        let mut members = MemberRun::new(expires_tick, kind);
        let mut left = req.count as usize;
        while left > 0 {
            // The next pack: up to 64 objects in spawn order, written one after another, then
            // one arena insert; their ids come from its key.
            let n = left.min(RAID_PACK_OBJECTS);
            let mut placed = [(0u32, 0.0f32, 0.0f32); RAID_PACK_OBJECTS];
            for p in &mut placed[..n] {
                *p = placer.next();
            }
            let pack = RaidPack {
                live: AtomicU32::new(n as u32),
                len: n as u8,
                kind,
                faction: req.faction,
                objects: std::array::from_fn(|i| {
                    let (cell, x_m, y_m) = placed[i];
                    RaidObject { health: Health::new(if i < n { req.hp } else { 0 }), x_m, y_m, cell, loot: AtomicU64::new(0) }
                }),
            };
            let key = self.packs.insert(pack).expect("raid arena shard exhausted (capacity is gated)");
            for (index, &(cell, x_m, y_m)) in placed[..n].iter().enumerate() {
                members.push(cell, object_id_from_pack(key, index), x_m, y_m, grid, waits);
            }
            left -= n;
        }
        members.flush(grid, waits);
        debug_assert_eq!(placer.placed(), req.count);
        let (cx0, cy0, cx1, cy1) = placer.cells;
        let expiry = BurstExpiry { expires_tick, cx0: cx0 as u16, cy0: cy0 as u16, cx1: cx1 as u16, cy1: cy1 as u16 };
        // Cannot fail: the burst gate admits at most `capacity` bursts and every queued or
        // heaped burst holds one admission.
        self.expiry_inbox.push(expiry).expect("expiry inbox over capacity");
        Ok(RaidReport { spawned: req.count, cells: placer.total_cells(), expires_tick })
    }

    /// Moves newly spawned bursts from the inbox to the tick's heap, and orders each new
    /// burst's cells: their objects were appended unordered, and from here a contact query
    /// reads only the sub-cells it reaches ([`Grid::order_objects`]; `scratch` is the tick's).
    /// Tick thread only.
    pub(crate) fn collect_new_bursts(&self, heap: &mut ExpiryHeap, grid: &Grid, scratch: &mut Vec<ObjectMember>, waits: &mut LockWaits) {
        // Bounded: the inbox holds at most raid_burst_capacity entries, each a rectangle of
        // cells in the world.
        while let Some(expiry) = self.expiry_inbox.pop() {
            debug_assert!(heap.len() < heap.capacity(), "expiry heap is pre-sized to the burst limit");
            heap.push(Reverse(expiry));
            for cy in u32::from(expiry.cy0)..=u32::from(expiry.cy1) {
                for cx in u32::from(expiry.cx0)..=u32::from(expiry.cx1) {
                    grid.order_objects(cy * grid.cells_per_side() + cx, scratch, waits);
                }
            }
        }
    }

    /// Sweeps every burst in `heap` due at `now_tick`: each cell of its rectangle loses its
    /// expired objects (moved into `expired`, the tick's scratch, under the cell's lock), whose
    /// packs are then counted down outside it, and freed when emptied. Tick thread only.
    ///
    /// An object taken out of its cell stays reachable by id until its pack is freed: later in
    /// the same call, when the sweep has taken the pack's objects from its other cells (every
    /// object of a pack has its burst's expiry, so whichever burst's sweep takes the first of
    /// them, the rest are due in this call too). An attack or claim in that window acts on an
    /// object no longer shown, as one arriving just before the sweep would.
    pub(crate) fn expire_due(
        &self,
        heap: &mut ExpiryHeap,
        now_tick: u32,
        grid: &Grid,
        expired: &mut Vec<ObjectMember>,
        waits: &mut LockWaits,
    ) -> ExpiryReport {
        let mut report = ExpiryReport::default();
        while let Some(&Reverse(due)) = heap.peek() {
            if due.expires_tick > now_tick {
                break;
            }
            heap.pop();
            let mut freed = 0u32;
            for cy in u32::from(due.cy0)..=u32::from(due.cy1) {
                for cx in u32::from(due.cx0)..=u32::from(due.cx1) {
                    expired.clear();
                    grid.take_expired(cy * grid.cells_per_side() + cx, now_tick, expired, waits);
                    // Freed in id order (a pack's objects are consecutive ids, the cell's packs
                    // in arena key order), outside the cell's lock. A cell hands its objects back in
                    // sub-cell order, which scatters their packs; freed that way the arena's free
                    // lists would hand the next burst slots all over its pages, and its inserts
                    // would miss the cache (measured in the server's raid when the arena held
                    // one object per slot: a spawn of 11,000 took 0.93 ms with the cell's order
                    // against 0.28 ms with this).
                    expired.sort_unstable_by_key(|m| m.id);
                    for run in expired.chunk_by(|a, b| same_pack(a.id, b.id)) {
                        let (key, _) = pack_of_object_id(run[0].id).expect("only raid objects expire");
                        let emptied = {
                            let pack = self.packs.get(key).expect("a pack lives while any of its objects is in the grid");
                            // Only this sweep counts down; the spawn's count was published by
                            // the arena's insert.
                            let before = pack.live.fetch_sub(run.len() as u32, Ordering::Relaxed);
                            assert!(before >= run.len() as u32, "a pack lost more objects than it holds");
                            before == run.len() as u32
                        };
                        if emptied {
                            let removed = self.packs.remove(key);
                            debug_assert!(removed, "raid pack freed twice");
                        }
                    }
                    freed += expired.len() as u32;
                }
            }
            expired.clear();
            self.object_gate.release(freed);
            self.burst_gate.release(1);
            report.bursts += 1;
            report.objects += freed;
        }
        report
    }

    /// The cell rectangles of the bursts in `heap` (the live ones the tick knows), for the
    /// snapshot build.
    pub(crate) fn live_burst_areas(heap: &ExpiryHeap) -> impl Iterator<Item = BurstExpiry> + '_ {
        heap.iter().map(|Reverse(b)| *b)
    }
}

#[cfg(all(test, not(mmo_loom)))]
mod tests {
    use super::*;

    #[test]
    fn health_saturates_and_reports_one_kill() {
        let h = Health::new(10);
        assert_eq!(h.damage(4), DamageOutcome::Hit { hp_left: 6 });
        assert_eq!(h.damage(100), DamageOutcome::Killed);
        assert_eq!(h.hp(), 0);
        assert_eq!(h.damage(1), DamageOutcome::AlreadyDead);
        let h = Health::new(i32::MAX);
        assert_eq!(h.damage(i32::MAX), DamageOutcome::Killed);
    }

    #[test]
    fn concurrent_hits_kill_exactly_once() {
        let h = Health::new(1_000);
        let kills = std::sync::atomic::AtomicU32::new(0);
        std::thread::scope(|s| {
            for _ in 0..4 {
                s.spawn(|| {
                    for _ in 0..400 {
                        if h.damage(1) == DamageOutcome::Killed {
                            kills.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                        }
                    }
                });
            }
        });
        assert_eq!(kills.into_inner(), 1);
        assert_eq!(h.hp(), 0);
    }
}
