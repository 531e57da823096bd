//! The spatial collision grid: cell key -> the entities in that cell, in a `DashMap`.
//!
//! The world is a square of `cells_per_side`² cells. Each cell's members are a
//! [`CellMembers`] array holding a copy of the member's id, kind and position, so proximity
//! and area-of-interest queries read one contiguous array per cell and never chase an arena
//! pointer. The first [`CELL_INLINE_MEMBERS`] members live inline in the map's own slot, so a
//! cell touched for the first time (a player walking into new ground) costs no allocation;
//! only a crowded cell (a raid's) moves its members to the heap, and keeps that room.
//!
//! Concurrency contract:
//! - Writers: the thread applying an entity's move (holding that entity's body lock, so one
//!   entity's grid entries are only ever changed by one thread at a time), raid spawn (its new
//!   objects) and the tick (expiring objects). Each write locks one `DashMap` shard (the map
//!   has [`crate::CoreConfig::grid_shards`] of them), never the whole map, and never holds a
//!   cell while touching another cell: a relocation is "remove from the old cell, release,
//!   insert into the new cell". Holding a `Ref` of one cell while locking another can
//!   deadlock when both hash to the same shard; no code here does it.
//! - Readers: proximity and AoI queries take one shard read lock per visited cell, one cell at
//!   a time. A reader may see a moving entity at its previous or its new position, and during
//!   a relocation may miss it for that instant; it never sees an entity in two cells.
//! - The map is created with room for every cell of the world (each shard reserves its share,
//!   which hashbrown rounds up), so it does not resize when cells are first touched (a resize
//!   under load stalls a shard for milliseconds); `map_never_resizes_when_every_cell_is_used`
//!   checks this for the default world. A cell's members start inline; when a cell first
//!   outgrows its inline room it reserves [`crate::CoreConfig::cell_member_capacity`] (or what
//!   the burst needs) on the heap and keeps that capacity when members leave, so steady play
//!   stops allocating once each crowded cell has seen its busiest moment.
//! - Locks: the `DashMap` shard locks. None is global: a cell maps to one of
//!   `grid_shards` shards, and concurrent updates in different shards never meet.

use crate::config::CoreConfig;
use crate::records::{AoiEntry, EntityKind};
use dashmap::DashMap;
use rustc_hash::FxBuildHasher;
use smallvec::SmallVec;

/// Members a cell holds inline, in the map's slot, before it needs the heap. Four covers a
/// cell of the default 32 m grid in ordinary play (5,000 players over 16,384 cells).
pub const CELL_INLINE_MEMBERS: usize = 4;

/// One cell's members.
pub type CellMembers = SmallVec<[Member; CELL_INLINE_MEMBERS]>;

/// Index of a cell: `cy * cells_per_side + cx`.
pub type CellKey = u32;

/// `expires_tick` of a member that never expires (players).
pub const NEVER_EXPIRES: u32 = u32::MAX;

/// One entity as the grid sees it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Member {
    /// Player id or raid object id.
    pub id: u64,
    /// Position, metres.
    pub x_m: f32,
    /// Position, metres.
    pub y_m: f32,
    /// Tick at which a raid object expires; [`NEVER_EXPIRES`] for players.
    pub expires_tick: u32,
    /// What the entity is.
    pub kind: EntityKind,
}

const _: () = assert!(std::mem::size_of::<Member>() == 24);

/// The collision grid. See the module doc for who may touch it and when.
pub struct Grid {
    /// Cell -> members. Written by movers, raid spawn and the tick; read by queries.
    cells: DashMap<CellKey, CellMembers, FxBuildHasher>,
    cells_per_side: u32,
    cell_size_m: f32,
    inv_cell_size: f32,
    hysteresis_m: f32,
    world_size_m: f32,
    member_capacity: usize,
}

impl Grid {
    /// An empty grid sized for `config`'s world (no cell allocated yet; the map itself is
    /// pre-sized for every cell).
    pub fn new(config: &CoreConfig) -> Self {
        let cells_per_side = config.cells_per_side();
        let total = (cells_per_side as usize) * (cells_per_side as usize);
        Self {
            cells: DashMap::with_capacity_and_hasher_and_shard_amount(total, FxBuildHasher, config.grid_shards as usize),
            cells_per_side,
            cell_size_m: config.cell_size_m,
            inv_cell_size: 1.0 / config.cell_size_m,
            hysteresis_m: config.cell_hysteresis_m,
            world_size_m: config.world_size_m,
            member_capacity: config.cell_member_capacity as usize,
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

    /// Adds `member` to `cell`.
    pub fn insert(&self, cell: CellKey, member: Member) {
        let mut members = self.cells.entry(cell).or_default();
        Self::reserve(&mut members, 1, self.member_capacity);
        members.push(member);
    }

    /// Makes room for `extra` more members; the first time a cell leaves its inline room it
    /// reserves at least `capacity` on the heap, so a crowded cell grows once, not by doubling.
    fn reserve(members: &mut CellMembers, extra: usize, capacity: usize) {
        let needed = members.len() + extra;
        if needed > members.capacity() {
            let target = if members.spilled() { needed } else { needed.max(capacity) };
            members.reserve_exact(target - members.len());
        }
    }

    /// Removes entity `id` from `cell`, returning it if it was there.
    pub fn remove(&self, cell: CellKey, id: u64) -> Option<Member> {
        let mut members = self.cells.get_mut(&cell)?;
        let at = members.iter().position(|m| m.id == id)?;
        Some(members.swap_remove(at))
    }

    /// Updates the stored position of `id` in `cell`; `false` if it is not there.
    pub fn update_position(&self, cell: CellKey, id: u64, x: f32, y: f32) -> bool {
        let Some(mut members) = self.cells.get_mut(&cell) else { return false };
        match members.iter_mut().find(|m| m.id == id) {
            Some(m) => {
                m.x_m = x;
                m.y_m = y;
                true
            }
            None => false,
        }
    }

    /// Moves `id` from `from` to `to` with its new position. Between the two steps the entity
    /// is briefly in no cell (never in two). Returns `false` if it was not in `from`.
    pub fn relocate(&self, from: CellKey, to: CellKey, id: u64, x: f32, y: f32) -> bool {
        let Some(mut member) = self.remove(from, id) else { return false };
        member.x_m = x;
        member.y_m = y;
        self.insert(to, member);
        true
    }

    /// Runs `fill` with exclusive access to `cell`'s member vector (created if missing), for
    /// bulk inserts such as a raid burst. `fill` must not touch the grid.
    /// `extra` is how many members `fill` will add (reserved up front, so the burst's cell
    /// grows at most once).
    pub fn with_cell_mut<R>(&self, cell: CellKey, extra: usize, fill: impl FnOnce(&mut CellMembers) -> R) -> R {
        let mut members = self.cells.entry(cell).or_default();
        Self::reserve(&mut members, extra, self.member_capacity);
        fill(&mut members)
    }

    /// Removes from `cell` every raid object whose `expires_tick <= now_tick`, calling
    /// `on_expired` for each (under the cell's lock: it must not touch the grid); returns how
    /// many were removed.
    pub fn expire_cell(&self, cell: CellKey, now_tick: u32, mut on_expired: impl FnMut(&Member)) -> usize {
        let Some(mut members) = self.cells.get_mut(&cell) else { return 0 };
        let before = members.len();
        members.retain(|m| {
            let keep = m.kind == EntityKind::Player || m.expires_tick > now_tick;
            if !keep {
                on_expired(m);
            }
            keep
        });
        before - members.len()
    }

    /// The up-to-nine cells around `(x, y)`'s cell (fewer at the world's edge).
    #[inline]
    fn neighbourhood(&self, x: f32, y: f32) -> impl Iterator<Item = CellKey> + use<> {
        let (cx, cy) = (self.coord(x) as i64, self.coord(y) as i64);
        let side = self.cells_per_side as i64;
        (-1i64..=1)
            .flat_map(move |dy| (-1i64..=1).map(move |dx| (cx + dx, cy + dy)))
            .filter_map(move |(nx, ny)| (nx >= 0 && ny >= 0 && nx < side && ny < side).then_some((ny * side + nx) as CellKey))
    }

    /// Calls `visit(member, distance)` for every member other than `exclude_id` within
    /// `radius_m` of `(x, y)`. `visit` runs under a cell's read lock and must not touch the
    /// grid. Returns the number visited.
    ///
    /// Only the cells that can hold such a member are visited: a member is registered in a
    /// cell whose bounds, grown by the hysteresis margin, contain it, so it can only be in a
    /// cell overlapping the square `(x, y) ± (radius + hysteresis)`. With the default 8 m
    /// radius, 2 m margin and 32 m cells that is one cell for a point in a cell's middle and
    /// at most four near a corner, instead of always nine (at most nine, and complete, as
    /// long as `radius + hysteresis <= cell size`, checked by [`CoreConfig::validate`]).
    pub fn for_each_near(&self, x: f32, y: f32, radius_m: f32, exclude_id: u64, mut visit: impl FnMut(&Member, f32)) -> usize {
        let r2 = radius_m * radius_m;
        let reach = radius_m + self.hysteresis_m;
        let (cx0, cx1) = (self.coord((x - reach).max(0.0)), self.coord(x + reach));
        let (cy0, cy1) = (self.coord((y - reach).max(0.0)), self.coord(y + reach));
        let mut visited = 0;
        for cy in cy0..=cy1 {
            for cx in cx0..=cx1 {
                let Some(members) = self.cells.get(&(cy * self.cells_per_side + cx)) else { continue };
                for m in members.iter() {
                    let (dx, dy) = (m.x_m - x, m.y_m - y);
                    let d2 = dx * dx + dy * dy;
                    if d2 <= r2 && m.id != exclude_id {
                        visit(m, d2.sqrt());
                        visited += 1;
                    }
                }
            }
        }
        visited
    }

    /// Writes the nearest `out.len()` entities (other than `exclude_id`) in the 3x3 cells
    /// around `(x, y)` into `out`, nearest first; returns how many were written. Uses no heap:
    /// the candidates are kept sorted in `out` itself (insertion into a fixed array).
    pub fn nearest_k(&self, x: f32, y: f32, exclude_id: u64, out: &mut [AoiEntry]) -> usize {
        let k = out.len();
        if k == 0 {
            return 0;
        }
        let mut filled = 0usize;
        for cell in self.neighbourhood(x, y) {
            let Some(members) = self.cells.get(&cell) else { continue };
            for m in members.iter() {
                if m.id == exclude_id {
                    continue;
                }
                let (dx, dy) = (m.x_m - x, m.y_m - y);
                let d = (dx * dx + dy * dy).sqrt();
                if filled == k && d >= out[k - 1].distance_m {
                    continue;
                }
                // Shift the farther entries right by one and drop the new one in place.
                let mut at = filled.min(k - 1);
                while at > 0 && out[at - 1].distance_m > d {
                    out[at] = out[at - 1];
                    at -= 1;
                }
                out[at] = AoiEntry { entity_id: m.id, x_m: m.x_m, y_m: m.y_m, distance_m: d, kind: m.kind as u8, _reserved: [0; 3] };
                filled = (filled + 1).min(k);
            }
        }
        filled
    }

    /// Every cell that currently lists `id` (audit and test use: walks the whole grid and
    /// allocates).
    pub fn cells_containing(&self, id: u64) -> Vec<CellKey> {
        let mut found: Vec<CellKey> = self.cells.iter().filter(|e| e.value().iter().any(|m| m.id == id)).map(|e| *e.key()).collect();
        found.sort_unstable();
        found
    }

    /// Total members of each kind across the grid (audit and test use: walks the whole grid).
    pub fn census(&self) -> GridCensus {
        let mut census = GridCensus::default();
        for entry in self.cells.iter() {
            for m in entry.value().iter() {
                match m.kind {
                    EntityKind::Player => census.players += 1,
                    _ => census.objects += 1,
                }
            }
        }
        census
    }

    /// Members registered in a cell their position does not belong to (outside the cell grown
    /// by the hysteresis margin). Always 0 for a consistent grid; audit and test use.
    pub fn misplaced(&self) -> usize {
        self.cells
            .iter()
            .map(|entry| entry.value().iter().filter(|m| self.cell_with_hysteresis(*entry.key(), m.x_m, m.y_m) != *entry.key()).count())
            .sum()
    }
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

    fn player(id: u64, x: f32, y: f32) -> Member {
        Member { id, x_m: x, y_m: y, expires_tick: NEVER_EXPIRES, kind: EntityKind::Player }
    }

    #[test]
    fn map_never_resizes_when_every_cell_is_used() {
        let g = grid();
        let reserved = g.cells.capacity();
        let side = g.cells_per_side();
        for cell in 0..side * side {
            g.insert(cell, player(u64::from(cell) + 1, 0.0, 0.0));
        }
        assert_eq!(g.cells.len(), (side * side) as usize);
        assert_eq!(g.cells.capacity(), reserved, "the cell map grew");
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
    fn insert_update_relocate_remove() {
        let g = grid();
        let a = g.cell_of(10.0, 10.0);
        let b = g.cell_of(40.0, 10.0);
        g.insert(a, player(1, 10.0, 10.0));
        assert!(g.update_position(a, 1, 11.0, 10.0));
        assert!(!g.update_position(b, 1, 11.0, 10.0));
        assert!(g.relocate(a, b, 1, 40.0, 10.0));
        assert_eq!(g.cells_containing(1), vec![b]);
        assert!(!g.relocate(a, b, 1, 40.0, 10.0));
        assert_eq!(g.remove(b, 1).map(|m| m.x_m), Some(40.0));
        assert!(g.cells_containing(1).is_empty());
        assert_eq!(g.remove(b, 1), None);
        assert_eq!(g.remove(12345, 1), None);
    }

    #[test]
    fn proximity_searches_neighbour_cells_and_respects_radius() {
        let g = grid();
        // Querier just left of a cell boundary, neighbour just right of it.
        g.insert(g.cell_of(31.0, 5.0), player(1, 31.0, 5.0));
        g.insert(g.cell_of(33.0, 5.0), player(2, 33.0, 5.0));
        g.insert(g.cell_of(50.0, 5.0), player(3, 50.0, 5.0));
        let mut seen = vec![];
        g.for_each_near(31.0, 5.0, 8.0, 1, |m, d| seen.push((m.id, d)));
        assert_eq!(seen, vec![(2, 2.0)]);
    }

    #[test]
    fn proximity_matches_brute_force_with_hysteresis_displaced_members() {
        let g = grid();
        let mut all = vec![];
        let mut seed = 0x1234_5678_u64;
        let mut next = || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            (seed >> 40) as f32 / (1u64 << 24) as f32
        };
        // Members near boundaries, registered in whichever neighbouring cell (any of the
        // eight directions) still holds them within the margin, as a walker arriving from
        // that side would be.
        let mut displaced = 0;
        for id in 1..=3_000u64 {
            let (x, y) = (100.0 + next() * 200.0, 100.0 + next() * 200.0);
            let raw = g.cell_of(x, y);
            let (dx, dy) = (((next() * 3.0) as i32 - 1) as f32 * 1.9, ((next() * 3.0) as i32 - 1) as f32 * 1.9);
            let beside = g.cell_of(x + dx, y + dy);
            let cell = if g.cell_with_hysteresis(beside, x, y) == beside { beside } else { raw };
            displaced += usize::from(cell != raw);
            g.insert(cell, player(id, x, y));
            all.push((id, x, y));
        }
        assert!(displaced > 100, "the test displaces members: {displaced}");
        assert_eq!(g.misplaced(), 0);
        for _ in 0..500 {
            let (qx, qy) = (90.0 + next() * 220.0, 90.0 + next() * 220.0);
            let mut found = vec![];
            g.for_each_near(qx, qy, 8.0, 0, |m, _| found.push(m.id));
            found.sort_unstable();
            let mut expected: Vec<u64> =
                all.iter().filter(|(_, x, y)| (x - qx).powi(2) + (y - qy).powi(2) <= 64.0).map(|(id, _, _)| *id).collect();
            expected.sort_unstable();
            assert_eq!(found, expected, "query at ({qx}, {qy})");
        }
    }

    #[test]
    fn nearest_k_is_sorted_and_capped() {
        let g = grid();
        for i in 0..20u64 {
            let x = 100.0 + i as f32;
            g.insert(g.cell_of(x, 100.0), player(i + 1, x, 100.0));
        }
        let mut out = [AoiEntry::default(); 5];
        let n = g.nearest_k(109.5, 100.0, 0, &mut out);
        assert_eq!(n, 5);
        let dists: Vec<f32> = out.iter().map(|e| e.distance_m).collect();
        assert_eq!(dists, vec![0.5, 0.5, 1.5, 1.5, 2.5]);
        let ids: std::collections::HashSet<u64> = out.iter().map(|e| e.entity_id).collect();
        assert_eq!(ids, [9, 10, 11, 8, 12].into_iter().collect());
        let mut few = [AoiEntry::default(); 64];
        assert_eq!(g.nearest_k(109.5, 100.0, 10, &mut few), 19);
        assert!(few[..19].windows(2).all(|w| w[0].distance_m <= w[1].distance_m));
    }

    #[test]
    fn expiry_keeps_players_and_live_objects() {
        let g = grid();
        let c = g.cell_of(5.0, 5.0);
        g.insert(c, player(1, 5.0, 5.0));
        for (id, expires) in [(10u64, 3u32), (11, 4), (12, 9)] {
            g.insert(c, Member { id: id | crate::arena::OBJECT_ID_TAG, x_m: 5.0, y_m: 5.0, expires_tick: expires, kind: EntityKind::Add });
        }
        let mut expired = vec![];
        assert_eq!(g.expire_cell(c, 4, |m| expired.push(m.id & !crate::arena::OBJECT_ID_TAG)), 2);
        expired.sort();
        assert_eq!(expired, vec![10, 11]);
        assert_eq!(g.census(), GridCensus { players: 1, objects: 1 });
        assert_eq!(g.expire_cell(c, 100, |_| {}), 1);
        assert_eq!(g.expire_cell(c + 1, 100, |_| {}), 0);
    }
}
