//! **aoi**: one tick's area of interest in a raid crowd, on one thread: 1,000 players in a
//! 100 m square and 11,000 raid objects in a 120 m square around them; every player's 32
//! nearest entities within 48 m. Each variant is timed as a tick would pay it: build what it
//! queries from the tick's positions, then answer the 1,000 queries.
//!
//! - `snapshot`: the core's world snapshot (`mmo_core::snapshot`): radix-sort the entities
//!   into 5 m cells (structure of arrays), then the pruned nearest-K per player.
//! - `grid_3x3_scan`: what the core did before: scan the collision grid's 3x3 cells of 32 m
//!   around each player, every member, into a sorted top-K (no build: the live grid is
//!   already there; that grid costs locks the others do not).
//! - `kiddo_immutable`: kiddo's `ImmutableKdTree` built from the positions, then
//!   `nearest_n_within` per player.
//! - `rstar_bulk_load`: rstar's bulk-loaded R-tree, then its nearest-neighbour iterator per
//!   player, cut at 32 and the radius.
//!
//! In the load tester's raid worlds, the engine's query too: `snapshot_hinted` (each query
//! first looks as far as its last answer can be now), and `snapshot_hinted_after_512k`, the
//! same queries alone timed with 512 KiB written between two of them, as a server's worker
//! meets them (the kernel and the front run through the core between its queries); and
//! `snapshot_build`, the tick's build alone (gather, sort by cell, index the players).
//!
//! `aoi_candidate_sort`: the query's one sort of its first 32 candidates, the core's
//! (`mmo_core::candidate_sort`, a sorting network on AVX2) against `sort_unstable`.
//!
//! Every variant answers the same question; the bench checks their answers agree (the
//! distances of the first players' answers) before timing them.

use criterion::{Criterion, criterion_group};
use kiddo::{ImmutableKdTree, SquaredEuclidean};
use mmo_core::records::{AoiEntry, EntityKind};
use mmo_core::snapshot::{AoiHint, SnapshotBuilder, SnapshotGeometry, WorldSnapshot, hint_reach_m};
use rustc_hash::FxHashMap;
use std::hint::black_box;
use std::num::NonZero;
use std::time::{Duration, Instant};

const PLAYERS: usize = 1_000;
const OBJECTS: usize = 11_000;
const K: usize = 32;
const RADIUS_M: f32 = 48.0;
const WORLD_M: f32 = 4_096.0;
const SNAPSHOT_CELL_M: f32 = 5.0;
const GRID_CELL_M: f32 = 32.0;

/// One entity: id, position. Players are the first `PLAYERS`.
#[derive(Clone, Copy)]
struct Entity {
    id: u64,
    x: f32,
    y: f32,
}

/// A reproducible source of uniform numbers in `[0, 1)` (a 64-bit LCG's top 24 bits).
fn uniform(mut seed: u64) -> impl FnMut() -> f32 {
    move || {
        seed = seed.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
        (seed >> 40) as f32 / (1u64 << 24) as f32
    }
}

fn crowd() -> Vec<Entity> {
    let mut unit = uniform(0x5EED_u64);
    let (cx, cy) = (2_048.0f32, 2_048.0f32);
    let mut out = Vec::with_capacity(PLAYERS + OBJECTS);
    for i in 0..PLAYERS {
        out.push(Entity { id: i as u64 + 1, x: cx - 50.0 + unit() * 100.0, y: cy - 50.0 + unit() * 100.0 });
    }
    for i in 0..OBJECTS {
        out.push(Entity { id: (i as u64 + 1) | 1 << 63, x: cx - 60.0 + unit() * 120.0, y: cy - 60.0 + unit() * 120.0 });
    }
    out
}

/// The load tester's raid (`mmo-loadtest --scenario raid`, its defaults): 1,000 players
/// walking within 100 m of the centre, and `objects` raid objects in the 120 m square around
/// it (11,000 while a burst lives, none between bursts). Most players stand in a thin crowd,
/// so their queries read many sparse cells, where the bench's crowd reads a few full ones.
fn loadtest_raid(objects: usize) -> Vec<Entity> {
    let mut unit = uniform(0xBEEF_u64);
    let (cx, cy) = (2_048.0f32, 2_048.0f32);
    let mut out = Vec::with_capacity(PLAYERS + objects);
    while out.len() < PLAYERS {
        let (dx, dy) = (unit() * 200.0 - 100.0, unit() * 200.0 - 100.0);
        if dx * dx + dy * dy <= 100.0 * 100.0 {
            out.push(Entity { id: out.len() as u64 + 1, x: cx + dx, y: cy + dy });
        }
    }
    for i in 0..objects {
        out.push(Entity { id: (i as u64 + 1) | 1 << 63, x: cx - 60.0 + unit() * 120.0, y: cy - 60.0 + unit() * 120.0 });
    }
    out
}

/// Builds the tick's snapshot of `world` (its first `PLAYERS` are the players).
fn build_snapshot(world: &[Entity], builder: &mut SnapshotBuilder, snapshot: &mut WorldSnapshot) {
    builder.clear(world.len());
    for (i, e) in world.iter().enumerate() {
        if i < PLAYERS {
            builder.add_player(i as u32, e.id, e.x, e.y);
        } else {
            builder.add_object(e.id, e.x, e.y, EntityKind::Add);
        }
    }
    builder.build_into(snapshot, 1, 0);
}

/// The core's snapshot: build, then every player's query. Returns the entries found.
fn snapshot_tick(world: &[Entity], builder: &mut SnapshotBuilder, snapshot: &mut WorldSnapshot, out: &mut [AoiEntry]) -> usize {
    build_snapshot(world, builder, snapshot);
    let mut found = 0;
    for (slot, e) in world[..PLAYERS].iter().enumerate() {
        let viewer = snapshot.entity_of_slot(slot as u32, e.id).expect("every player is in the snapshot");
        found += snapshot.nearest(viewer, &mut out[..K]);
    }
    found
}

/// The collision grid's cells (32 m), as the live grid holds them.
fn grid_of(world: &[Entity]) -> FxHashMap<(i32, i32), Vec<Entity>> {
    let mut cells: FxHashMap<(i32, i32), Vec<Entity>> = FxHashMap::default();
    for e in world {
        cells.entry(((e.x / GRID_CELL_M) as i32, (e.y / GRID_CELL_M) as i32)).or_default().push(*e);
    }
    cells
}

/// The former query: every member of the 3x3 cells, kept sorted by (squared distance, id) in a
/// fixed array, radius applied.
fn grid_3x3(cells: &FxHashMap<(i32, i32), Vec<Entity>>, v: Entity, best: &mut [(f32, u64); K]) -> usize {
    let (cx, cy) = ((v.x / GRID_CELL_M) as i32, (v.y / GRID_CELL_M) as i32);
    let mut n = 0;
    for dy in -1..=1 {
        for dx in -1..=1 {
            let Some(members) = cells.get(&(cx + dx, cy + dy)) else { continue };
            for m in members {
                let (ddx, ddy) = (m.x - v.x, m.y - v.y);
                let d2 = ddx * ddx + ddy * ddy;
                if m.id == v.id || d2 > RADIUS_M * RADIUS_M || (n == K && (d2, m.id) >= best[K - 1]) {
                    continue;
                }
                let mut at = n.min(K - 1);
                while at > 0 && best[at - 1] > (d2, m.id) {
                    best[at] = best[at - 1];
                    at -= 1;
                }
                best[at] = (d2, m.id);
                n = (n + 1).min(K);
            }
        }
    }
    n
}

fn kiddo_tick(world: &[Entity]) -> usize {
    let points: Vec<[f32; 2]> = world.iter().map(|e| [e.x, e.y]).collect();
    let tree = ImmutableKdTree::new_from_slice(&points).expect("a tree of the crowd");
    world[..PLAYERS].iter().enumerate().map(|(i, e)| kiddo_query(&tree, e, i).len()).sum()
}

/// kiddo's nearest `K + 1` within the radius, the viewer removed.
fn kiddo_query(tree: &ImmutableKdTree<f32, 2>, e: &Entity, viewer: usize) -> Vec<f32> {
    let found = tree
        .query(&[e.x, e.y])
        .nearest_n::<SquaredEuclidean<f32>>(NonZero::new(K + 1).expect("non-zero"))
        .within(RADIUS_M * RADIUS_M)
        .execute();
    found.iter().filter(|n| n.item as usize != viewer).take(K).map(|n| n.distance).collect()
}

fn rstar_tick(world: &[Entity]) -> usize {
    let tree =
        rstar::RTree::bulk_load(world.iter().enumerate().map(|(i, e)| rstar::primitives::GeomWithData::new([e.x, e.y], i)).collect());
    world[..PLAYERS]
        .iter()
        .enumerate()
        .map(|(i, e)| {
            tree.nearest_neighbor_iter_with_distance_2([e.x, e.y])
                .take_while(|(_, d2)| *d2 <= RADIUS_M * RADIUS_M)
                .filter(|(p, _)| p.data != i)
                .take(K)
                .count()
        })
        .sum()
}

/// The variants agree on what they find (squared distances of the first players' answers).
fn check_agreement(world: &[Entity]) {
    let mut builder = SnapshotBuilder::default();
    let mut snapshot = WorldSnapshot::empty(SnapshotGeometry::new(WORLD_M, SNAPSHOT_CELL_M, RADIUS_M));
    let mut out = [AoiEntry::default(); K];
    snapshot_tick(world, &mut builder, &mut snapshot, &mut out);
    let cells = grid_of(world);
    let points: Vec<[f32; 2]> = world.iter().map(|e| [e.x, e.y]).collect();
    let tree = ImmutableKdTree::new_from_slice(&points).expect("a tree of the crowd");
    for (slot, v) in world[..20].iter().enumerate() {
        let n = snapshot.nearest(snapshot.entity_of_slot(slot as u32, v.id).expect("in snapshot"), &mut out);
        let ours: Vec<u32> = out[..n].iter().map(|a| a.distance_m.to_bits()).collect();
        let mut best = [(0.0f32, 0u64); K];
        let m = grid_3x3(&cells, *v, &mut best);
        let grid: Vec<u32> = best[..m].iter().map(|(d2, _)| d2.sqrt().to_bits()).collect();
        assert_eq!(ours, grid, "snapshot and 3x3 scan disagree for player {slot}");
        let kd: Vec<u32> = kiddo_query(&tree, v, slot).iter().map(|d2| d2.sqrt().to_bits()).collect();
        assert_eq!(kd, grid, "kiddo and the 3x3 scan disagree for player {slot}");
    }
}

fn bench_aoi(c: &mut Criterion) {
    let world = crowd();
    check_agreement(&world);
    let mut group = c.benchmark_group("aoi_raid_tick_1000_players_11000_objects");
    group.sample_size(20).warm_up_time(Duration::from_secs(1)).measurement_time(Duration::from_secs(4));

    let mut builder = SnapshotBuilder::default();
    let mut snapshot = WorldSnapshot::empty(SnapshotGeometry::new(WORLD_M, SNAPSHOT_CELL_M, RADIUS_M));
    let mut out = [AoiEntry::default(); K];
    group.bench_function("snapshot", |b| b.iter(|| black_box(snapshot_tick(&world, &mut builder, &mut snapshot, &mut out))));
    bench_hinted(&mut group, &world, &mut builder, &mut snapshot, &mut out);

    let cells = grid_of(&world);
    group.bench_function("grid_3x3_scan", |b| {
        b.iter(|| {
            let mut best = [(0.0f32, 0u64); K];
            world[..PLAYERS].iter().map(|v| grid_3x3(&cells, *v, &mut best)).sum::<usize>()
        })
    });
    group.bench_function("kiddo_immutable", |b| b.iter(|| black_box(kiddo_tick(&world))));
    group.bench_function("rstar_bulk_load", |b| b.iter(|| black_box(rstar_tick(&world))));
    group.finish();

    // The load tester's raid, during a burst and between bursts: the snapshot, without and
    // with the engine's per-player hint (last answer's reach plus the viewer's walk since).
    for (name, objects) in
        [("aoi_loadtest_raid_burst_1000_players_11000_objects", OBJECTS), ("aoi_loadtest_between_bursts_1000_players", 0)]
    {
        let world = loadtest_raid(objects);
        check_agreement(&world);
        let mut group = c.benchmark_group(name);
        group.sample_size(20).warm_up_time(Duration::from_secs(1)).measurement_time(Duration::from_secs(4));
        group.bench_function("snapshot", |b| b.iter(|| black_box(snapshot_tick(&world, &mut builder, &mut snapshot, &mut out))));
        group.bench_function("snapshot_build", |b| {
            b.iter(|| {
                build_snapshot(&world, &mut builder, &mut snapshot);
                black_box(snapshot.len())
            })
        });
        bench_hinted(&mut group, &world, &mut builder, &mut snapshot, &mut out);
        group.finish();
    }
}

/// `snapshot_hinted`: two ticks a walk apart, alternated, so every hint was left one tick
/// before, as the engine hints at the server's 10 Hz.
fn bench_hinted(
    group: &mut criterion::BenchmarkGroup<'_, criterion::measurement::WallTime>,
    world: &[Entity],
    builder: &mut SnapshotBuilder,
    snapshot: &mut WorldSnapshot,
    out: &mut [AoiEntry],
) {
    let hints: Vec<AoiHint> = (0..PLAYERS).map(|_| AoiHint::default()).collect();
    let mut ticks = [world.to_vec(), world.to_vec()];
    walk(&mut ticks[1]);
    let mut tick = 0usize;
    group.bench_function("snapshot_hinted", |b| {
        b.iter(|| {
            tick ^= 1;
            black_box(snapshot_tick_hinted(&ticks[tick], builder, snapshot, out, &hints))
        })
    });
    // The same queries as a server's worker meets them: between two queries the kernel's
    // sends and receives and the front run through the core, so each query starts with
    // little of its data in the core's caches. Modelled by writing one word per cache line
    // of `EVICTION_BYTES` between queries; only the queries are timed (not the build).
    let mut eviction = vec![0u64; EVICTION_BYTES / 8];
    let closing_m = closing_m();
    group.bench_function("snapshot_hinted_after_512k", |b| {
        b.iter_custom(|ticks_timed| {
            let mut timed = Duration::ZERO;
            for _ in 0..ticks_timed {
                tick ^= 1;
                build_snapshot(&ticks[tick], builder, snapshot);
                for player in &ticks[tick][..PLAYERS] {
                    for word in eviction.iter_mut().step_by(8) {
                        *word = word.wrapping_add(1);
                    }
                    black_box(&eviction);
                    let started = Instant::now();
                    black_box(query_hinted(player, snapshot, out, &hints, closing_m));
                    timed += started.elapsed();
                }
            }
            timed
        })
    });
}

/// Memory written between two queries in `snapshot_hinted_after_512k`: this VM's L2 per core.
const EVICTION_BYTES: usize = 512 << 10;

/// The server's tick: 10 Hz (`mmo-server --tick-hz`).
const SERVER_TICK_MS: u32 = 100;

/// Moves every player one tick's walk (0.8 m: the load tester's 8 m/s for 100 ms), each its
/// own way.
fn walk(world: &mut [Entity]) {
    for (i, e) in world[..PLAYERS].iter_mut().enumerate() {
        let angle = i as f32 * 0.7;
        e.x += 0.8 * angle.cos();
        e.y += 0.8 * angle.sin();
    }
}

/// As the engine queries (`Engine::nearest_hinted`): the viewer comes from the snapshot's
/// player index, and each player's hint (its slot's `AoiHint`) is its last answer's reach
/// (`mmo_core::snapshot::hint_reach_m`) plus how far it has walked since.
fn snapshot_tick_hinted(
    world: &[Entity],
    builder: &mut SnapshotBuilder,
    snapshot: &mut WorldSnapshot,
    out: &mut [AoiEntry],
    hints: &[AoiHint],
) -> usize {
    build_snapshot(world, builder, snapshot);
    let closing_m = closing_m();
    world[..PLAYERS].iter().map(|e| query_hinted(e, snapshot, out, hints, closing_m)).sum()
}

/// What two entities at the speed limit close in one server tick (the hint's margin).
fn closing_m() -> f32 {
    mmo_core::CoreConfig { tick_ms: SERVER_TICK_MS, ..mmo_core::CoreConfig::default() }.aoi_player_closing_m()
}

/// One player's query as the engine runs it (`Engine::nearest_hinted`); returns the entries.
fn query_hinted(player: &Entity, snapshot: &WorldSnapshot, out: &mut [AoiEntry], hints: &[AoiHint], closing_m: f32) -> usize {
    let viewer = snapshot.player(player.id).expect("every player is in the snapshot");
    let hint = &hints[viewer.slot as usize];
    let at = snapshot.position(viewer.entity);
    let (n, _) = snapshot.nearest_hinted(viewer.entity, hint.hint_m(at), &mut out[..K]);
    hint.set(hint_reach_m(&out[..n], K, closing_m), at);
    n
}

/// `aoi_candidate_sort`: the one sort of a query's first 32 candidates, as
/// `WorldSnapshot::nearest_within` asks it (`mmo_core::candidate_sort::sort_keys`: a sorting
/// network on AVX2) against the standard library's `sort_unstable`, over 4,096 sets of keys
/// shaped as a query's (squared-distance bits of entities up to 48 m away, over entity indices
/// up to 12,000), each set copied into place and sorted; so the two differ by the sorts alone.
fn bench_candidate_sort(c: &mut Criterion) {
    let mut unit = uniform(0xC0DE_u64);
    let sets: Vec<[u64; K]> = (0..4_096)
        .map(|_| {
            std::array::from_fn(|_| {
                let d = unit() * RADIUS_M;
                (u64::from((d * d).to_bits()) << 32) | (unit() * 12_000.0) as u64
            })
        })
        .collect();
    let mut group = c.benchmark_group("aoi_candidate_sort_4096_sets_of_32");
    group.sample_size(30).warm_up_time(Duration::from_secs(1)).measurement_time(Duration::from_secs(3));
    let mut keys = [0u64; K];
    group.bench_function("sort_keys", |b| {
        b.iter(|| {
            let mut first = 0;
            for set in &sets {
                keys = *set;
                mmo_core::candidate_sort::sort_keys(black_box(&mut keys));
                first ^= keys[0];
            }
            first
        })
    });
    group.bench_function("sort_unstable", |b| {
        b.iter(|| {
            let mut first = 0;
            for set in &sets {
                keys = *set;
                black_box(&mut keys).sort_unstable();
                first ^= keys[0];
            }
            first
        })
    });
    group.finish();
}

criterion_group!(benches, bench_aoi, bench_candidate_sort);
