//! **grid**: one move with a cell change followed by the 3x3 proximity query, the core's
//! hottest grid path, with the core's grid (positions in a lock-free table, membership in a
//! `DashMap`) against one `RwLock<HashMap>` around the whole grid and a single-writer-per-region
//! design (each thread owns its region's cells outright, no lock at all). 1 and 2 threads, each
//! moving its own 2,000 entities back and forth across a cell boundary inside its own half of
//! the world.
//!
//! What it shows: the `RwLock` makes every move wait for every other thread's moves and
//! queries; `DashMap` spreads them over 128 shard locks; the single-writer design is the
//! upper bound a sharded-by-region server could reach. It is measured at its best case: no
//! entity ever crosses into another thread's region and no query ever reads one, where a
//! real region server pays a hand-off through a queue and a cross-region read.
//!
//! **grid_contact_in_raid_crowd**: the contact query alone (8 m radius) at 1,000 points of a
//! raid burst's square, 11,000 objects spread over 120 m x 120 m as raid spawn spreads them
//! (appended per cell in chunks), one thread. This is the query a move in the raid crowd
//! makes; what it costs is how many objects it has to look at. Three variants:
//! - `visit_all_ordered`: every object within the radius visited, after the tick has ordered
//!   the burst's cells by sub-cell (how a burst is read for all but its first tick);
//! - `visit_all_tail`: the same before that tick (every object of the cells read);
//! - `engine_cap_8`: what a move asks for, the first 8 contacts visited and the rest only
//!   counted (`contacts_per_move_max`, default 8), cells ordered.

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group};
use mmo_benches::timed_rounds;
use mmo_core::CoreConfig;
use mmo_core::combat::SPAWN_CHUNK;
use mmo_core::grid::{CellKey, Grid, NO_SLOT, ObjectMember};
use mmo_core::locks::LockWaits;
use mmo_core::records::EntityKind;
use parking_lot::RwLock;
use rustc_hash::FxHashMap;
use std::hint::black_box;
use std::time::Duration;

const ENTITIES_PER_THREAD: usize = 2_000;
/// Every entity moves there and back each round, so the grid is in the same state after any
/// number of rounds (criterion runs a varying number per sample).
const MOVES_PER_ROUND: usize = 2 * ENTITIES_PER_THREAD;
const CELL_M: f32 = 32.0;
const CELLS_PER_SIDE: u32 = 32; // a 1,024 m world
const CONTACT_RADIUS_M: f32 = 8.0;

/// Entity `j` of thread `t` steps between two spots 3 m either side of a cell boundary in
/// thread `t`'s half (or whole, with one thread) of the world.
fn spot(threads: usize, t: usize, j: usize, side: bool) -> (f32, f32) {
    let columns = CELLS_PER_SIDE as usize / threads;
    let cx = t * columns + j % (columns - 1);
    let cy = (j / (columns - 1)) % CELLS_PER_SIDE as usize;
    let boundary = (cx + 1) as f32 * CELL_M;
    (if side { boundary + 3.0 } else { boundary - 3.0 }, cy as f32 * CELL_M + 16.0 + (j % 7) as f32)
}

fn cell_of(x: f32, y: f32) -> CellKey {
    (y / CELL_M) as u32 * CELLS_PER_SIDE + (x / CELL_M) as u32
}

fn entity_id(t: usize, j: usize) -> u64 {
    (t * ENTITIES_PER_THREAD + j + 1) as u64
}

/// An entity as the alternatives' cells hold it: id and position.
#[derive(Clone, Copy)]
struct Member {
    id: u64,
    x_m: f32,
    y_m: f32,
}

fn member(id: u64, x: f32, y: f32) -> Member {
    Member { id, x_m: x, y_m: y }
}

/// The core grid's movement slot of an entity (its index in the position table).
fn slot_of(id: u64) -> u32 {
    (id - 1) as u32
}

/// A thread's walk: which entity moves next and which side it is on.
struct Walk {
    next: usize,
    side: Vec<bool>,
}

impl Walk {
    fn new() -> Self {
        Self { next: 0, side: vec![false; ENTITIES_PER_THREAD] }
    }
    /// The next move: (entity index, from, to).
    fn step(&mut self, threads: usize, t: usize) -> (usize, (f32, f32), (f32, f32)) {
        let j = self.next;
        self.next = (self.next + 1) % ENTITIES_PER_THREAD;
        let from = spot(threads, t, j, self.side[j]);
        self.side[j] = !self.side[j];
        (j, from, spot(threads, t, j, self.side[j]))
    }
}

fn near(members: &[Member], x: f32, y: f32, id: u64) -> usize {
    let r2 = CONTACT_RADIUS_M * CONTACT_RADIUS_M;
    members.iter().filter(|m| m.id != id && (m.x_m - x).powi(2) + (m.y_m - y).powi(2) <= r2).count()
}

fn neighbourhood(x: f32, y: f32) -> impl Iterator<Item = CellKey> {
    let (cx, cy) = ((x / CELL_M) as i32, (y / CELL_M) as i32);
    (-1..=1).flat_map(move |dy| (-1..=1).map(move |dx| (cx + dx, cy + dy))).filter_map(|(nx, ny)| {
        (nx >= 0 && ny >= 0 && nx < CELLS_PER_SIDE as i32 && ny < CELLS_PER_SIDE as i32).then_some(ny as u32 * CELLS_PER_SIDE + nx as u32)
    })
}

/// The alternatives' cell map: move `id` from the cell at `from` to the cell at `to`.
fn relocate_in(cells: &mut FxHashMap<CellKey, Vec<Member>>, id: u64, from: (f32, f32), to: (f32, f32)) {
    let old = cells.get_mut(&cell_of(from.0, from.1)).expect("cell exists");
    let at = old.iter().position(|m| m.id == id).expect("member is there");
    old.swap_remove(at);
    cells.entry(cell_of(to.0, to.1)).or_default().push(member(id, to.0, to.1));
}

/// The alternatives' proximity query: contacts of `id` at `(x, y)` over all 9 neighbours.
fn contacts_in(cells: &FxHashMap<CellKey, Vec<Member>>, id: u64, x: f32, y: f32) -> usize {
    neighbourhood(x, y).filter_map(|c| cells.get(&c)).map(|members| near(members, x, y, id)).sum()
}

/// Times `iters` rounds on `threads` threads of one grid shared by all of them: each thread
/// walks its own entities, and `step(id, from, to)` moves one and returns its contact count.
fn walk_shared_grid(threads: usize, iters: u64, step: impl Fn(u64, (f32, f32), (f32, f32)) -> usize + Sync) -> Duration {
    timed_rounds(
        threads,
        iters,
        |_| Walk::new(),
        |t, walk| {
            for _ in 0..MOVES_PER_ROUND {
                let (j, from, to) = walk.step(threads, t);
                black_box(step(entity_id(t, j), from, to));
            }
        },
    )
}

fn bench_grid(c: &mut Criterion) {
    let mut group = c.benchmark_group("grid_move_cell_change_and_3x3_query");
    group.sample_size(20).warm_up_time(Duration::from_secs(1)).measurement_time(Duration::from_secs(3));
    for threads in [1usize, 2] {
        group.throughput(Throughput::Elements((MOVES_PER_ROUND * threads) as u64));

        // The core's grid.
        let config = CoreConfig {
            world_size_m: CELL_M * CELLS_PER_SIDE as f32,
            cell_size_m: CELL_M,
            player_capacity: (ENTITIES_PER_THREAD * threads) as u32,
            ..CoreConfig::default()
        };
        let grid = Grid::new(&config);
        for t in 0..threads {
            for j in 0..ENTITIES_PER_THREAD {
                let (x, y) = spot(threads, t, j, false);
                let id = entity_id(t, j);
                grid.insert_player(grid.cell_of(x, y), id, slot_of(id), x, y, &mut LockWaits::default());
            }
        }
        group.bench_function(BenchmarkId::new("dashmap", threads), |b| {
            b.iter_custom(|iters| {
                walk_shared_grid(threads, iters, |id, (fx, fy), (x, y)| {
                    let mut waits = LockWaits::default();
                    grid.positions().set(slot_of(id), x, y);
                    assert!(grid.relocate_player(grid.cell_of(fx, fy), grid.cell_of(x, y), slot_of(id), &mut waits));
                    let mut contacts = 0;
                    grid.for_each_near(x, y, CONTACT_RADIUS_M, slot_of(id), &mut waits, |_, _, _| {
                        contacts += 1;
                        true
                    });
                    contacts
                })
            })
        });

        // One lock around the whole grid.
        let locked: RwLock<FxHashMap<CellKey, Vec<Member>>> = RwLock::new(FxHashMap::default());
        for t in 0..threads {
            for j in 0..ENTITIES_PER_THREAD {
                let (x, y) = spot(threads, t, j, false);
                locked.write().entry(cell_of(x, y)).or_default().push(member(entity_id(t, j), x, y));
            }
        }
        group.bench_function(BenchmarkId::new("rwlock_hashmap", threads), |b| {
            b.iter_custom(|iters| {
                walk_shared_grid(threads, iters, |id, (fx, fy), (x, y)| {
                    relocate_in(&mut locked.write(), id, (fx, fy), (x, y));
                    contacts_in(&locked.read(), id, x, y)
                })
            })
        });

        // Each thread owns its region outright.
        group.bench_function(BenchmarkId::new("single_writer_regions", threads), |b| {
            b.iter_custom(|iters| {
                timed_rounds(
                    threads,
                    iters,
                    |t| {
                        let mut region: FxHashMap<CellKey, Vec<Member>> = FxHashMap::default();
                        for j in 0..ENTITIES_PER_THREAD {
                            let (x, y) = spot(threads, t, j, false);
                            region.entry(cell_of(x, y)).or_default().push(member(entity_id(t, j), x, y));
                        }
                        (Walk::new(), region)
                    },
                    |t, (walk, region)| {
                        for _ in 0..MOVES_PER_ROUND {
                            let (j, (fx, fy), (x, y)) = walk.step(threads, t);
                            let id = entity_id(t, j);
                            relocate_in(region, id, (fx, fy), (x, y));
                            black_box(contacts_in(region, id, x, y));
                        }
                    },
                )
            })
        });
    }
    group.finish();
}

/// Raid objects in the burst's square (as `Combat::raid_spawn` places them: uniformly) and the
/// points queried.
const RAID_OBJECTS: usize = 11_000;
const RAID_SQUARE_M: f32 = 120.0;
const RAID_ORIGIN_M: f32 = 1_000.0;
const CONTACT_QUERIES: usize = 1_000;
/// The raid's bots: how many, and within how far of the burst's centre (the load tester's
/// `--players` and `--raid-radius` defaults).
const RAID_PLAYERS: u32 = 1_000;
const RAID_PLAYER_RADIUS_M: f32 = 100.0;

fn bench_contact_in_raid_crowd(c: &mut Criterion) {
    let config = CoreConfig::default();
    let grid = Grid::new(&config);
    let mut seed = 0x9E37_79B9_7F4A_7C15_u64;
    let mut unit = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        (seed >> 40) as f32 / (1u64 << 24) as f32
    };
    let mut by_cell: FxHashMap<CellKey, Vec<ObjectMember>> = FxHashMap::default();
    for id in 1..=RAID_OBJECTS as u64 {
        let (x, y) = (RAID_ORIGIN_M + unit() * RAID_SQUARE_M, RAID_ORIGIN_M + unit() * RAID_SQUARE_M);
        by_cell.entry(grid.cell_of(x, y)).or_default().push(ObjectMember {
            id,
            x_m: x,
            y_m: y,
            expires_tick: u32::MAX,
            kind: EntityKind::Add,
        });
    }
    for (cell, objects) in &by_cell {
        for chunk in objects.chunks(SPAWN_CHUNK) {
            grid.append_objects(*cell, chunk, &mut LockWaits::default());
        }
    }
    let points: Vec<(f32, f32)> =
        (0..CONTACT_QUERIES).map(|_| (RAID_ORIGIN_M + unit() * RAID_SQUARE_M, RAID_ORIGIN_M + unit() * RAID_SQUARE_M)).collect();
    let mut group = c.benchmark_group("grid_contact_in_raid_crowd");
    group.sample_size(30).warm_up_time(Duration::from_secs(1)).measurement_time(Duration::from_secs(3));
    group.throughput(Throughput::Elements(CONTACT_QUERIES as u64));
    let visit_all = |grid: &Grid| {
        let mut waits = LockWaits::default();
        let mut contacts = 0usize;
        for &(x, y) in &points {
            grid.for_each_near(x, y, CONTACT_RADIUS_M, NO_SLOT, &mut waits, |_, _, _| {
                contacts += 1;
                true
            });
        }
        contacts
    };
    // Before the tick: every burst object is still in its cell's unordered tail.
    group.bench_function("visit_all_tail", |b| b.iter(|| black_box(visit_all(&grid))));
    let mut scratch = Vec::new();
    for cell in by_cell.keys() {
        grid.order_objects(*cell, &mut scratch, &mut LockWaits::default());
    }
    group.bench_function("visit_all_ordered", |b| b.iter(|| black_box(visit_all(&grid))));
    let cap = config.contacts_per_move_max as usize;
    // What a move asks: its first `cap` contacts visited, the rest only counted.
    let engine_queries = |grid: &Grid| {
        let mut waits = LockWaits::default();
        let (mut reported, mut truncated) = (0usize, 0usize);
        for &(x, y) in &points {
            let mut written = 0;
            let near = grid.for_each_near(x, y, CONTACT_RADIUS_M, NO_SLOT, &mut waits, |id, _, d2| {
                black_box((id, d2));
                written += 1;
                written < cap
            });
            reported += written;
            truncated += near - written;
        }
        (reported, truncated)
    };
    group.bench_function("engine_cap_8", |b| b.iter(|| black_box(engine_queries(&grid))));
    // The load tester's raid: its thousand bots within 100 m of the burst's centre, each in its
    // cell's player list (their positions in the position table, by slot), so a move's query
    // reads the players of the cells it reaches as well as the objects.
    let centre_m = RAID_ORIGIN_M + RAID_SQUARE_M / 2.0;
    for slot in 0..RAID_PLAYERS {
        let (radius, angle) = (RAID_PLAYER_RADIUS_M * unit().sqrt(), unit() * std::f32::consts::TAU);
        let (x, y) = (centre_m + radius * angle.cos(), centre_m + radius * angle.sin());
        grid.insert_player(grid.cell_of(x, y), slot as u64 + 1, slot, x, y, &mut LockWaits::default());
    }
    group.bench_function("engine_cap_8_with_raid_players", |b| b.iter(|| black_box(engine_queries(&grid))));
    group.finish();
}

criterion_group!(benches, bench_grid, bench_contact_in_raid_crowd);
