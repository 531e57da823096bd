//! The cost of the C ABI: one `mmo_apply_moves` batch call through `mmo-ffi` against the same
//! batch applied by calling `mmo_core::Engine::apply_moves` directly, for batches of 1, 16
//! and 64 moves (criterion reports time per call; its throughput line gives time per record).
//! Every record carries its join ticket's slot hint, as the network front sends them; a third
//! row (`direct_call_unhinted`) sends the same moves with no hint, so each move finds its
//! player through the arena: the difference is what the hint saves.
//!
//! What it shows: the boundary adds a null/alignment check per slice, the poisoned check
//! and a `catch_unwind` frame per call, and copies nothing (the records are the core's own
//! types). The difference between the two rows is that overhead; divided by the batch size
//! it is the per-record price of crossing, which is why the network front hands whole
//! `recvmmsg` batches across in one call.

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group};
use mmo_core::records::{MoveEvent, MoveRecord};
use mmo_core::{CoreConfig, Engine};
use mmo_ffi::{MMO_OK, MmoConfig, MmoEngine, MmoJoinTicket};
use std::hint::black_box;

const PLAYERS: usize = 64;

/// A batch of `n` legal moves that stays legal when replayed with [`advance`]: every player
/// steps 0.25 m back and forth along x.
struct Batch {
    records: Vec<MoveRecord>,
    events: Vec<MoveEvent>,
    now_ms: u64,
}

/// Moves the first `n` players one step (sequence, clocks and position).
fn advance(batch: &mut Batch, n: usize) {
    batch.now_ms += 100;
    for r in &mut batch.records[..n] {
        r.sequence += 1;
        r.client_time_ms += 100;
        r.x_m += if r.sequence % 2 == 0 { 0.25 } else { -0.25 };
    }
}

/// One batch record per player; a benchmark of size `n` uses the first `n`, so sequences
/// keep increasing across batch sizes.
fn batch_for(tickets: &[(u64, u64, u32)], events_per_move: usize) -> Batch {
    let records = tickets
        .iter()
        .enumerate()
        .map(|(i, &(player_id, session_token, slot_hint))| MoveRecord {
            player_id,
            session_token,
            slot_hint,
            sequence: 0,
            client_time_ms: 0,
            x_m: 100.0 + (i % 8) as f32 * 20.0,
            y_m: 100.0 + (i / 8) as f32 * 20.0,
            ..Default::default()
        })
        .collect();
    Batch { records, events: vec![MoveEvent::default(); tickets.len() * events_per_move], now_ms: 1_000 }
}

fn spawn_points() -> impl Iterator<Item = (f32, f32)> {
    (0..PLAYERS).map(|i| (100.0 + (i % 8) as f32 * 20.0, 100.0 + (i / 8) as f32 * 20.0))
}

fn ffi_batches(c: &mut Criterion) {
    let mut config = MmoConfig::from(&CoreConfig::default());
    config.player_capacity = 1_024;
    let mut handle: *mut MmoEngine = std::ptr::null_mut();
    // SAFETY: valid config and out-pointer.
    assert_eq!(unsafe { mmo_ffi::mmo_engine_new(&config, &mut handle) }, MMO_OK);
    let ffi_tickets: Vec<(u64, u64, u32)> = spawn_points()
        .map(|(x, y)| {
            let mut t = MmoJoinTicket::default();
            // SAFETY: live engine, valid out-pointer.
            assert_eq!(unsafe { mmo_ffi::mmo_join(handle, 0, x, y, 1, &mut t) }, MMO_OK);
            (t.player_id, t.session_token, t.slot_hint)
        })
        .collect();
    let direct_engine = || Engine::new(CoreConfig { player_capacity: 1_024, ..CoreConfig::default() }).unwrap();
    let joined = |e: &Engine| -> Vec<(u64, u64, u32)> {
        spawn_points()
            .map(|(x, y)| {
                let t = e.join(x, y, 1).unwrap();
                (t.player_id, t.session_token, t.slot_hint)
            })
            .collect()
    };
    let (direct, unhinted) = (direct_engine(), direct_engine());
    let direct_tickets = joined(&direct);
    let unhinted_tickets: Vec<(u64, u64, u32)> = joined(&unhinted).into_iter().map(|(id, token, _)| (id, token, 0)).collect();
    let per_move = direct.events_per_move_max();

    let mut b_ffi = batch_for(&ffi_tickets, per_move);
    let mut b_direct = batch_for(&direct_tickets, per_move);
    let mut b_unhinted = batch_for(&unhinted_tickets, per_move);
    let mut group = c.benchmark_group("ffi_move_batch");
    group.warm_up_time(std::time::Duration::from_secs(1)).measurement_time(std::time::Duration::from_secs(3));
    for n in [1usize, 16, 64] {
        group.throughput(Throughput::Elements(n as u64));
        group.bench_with_input(BenchmarkId::new("ffi_call", n), &n, |b, _| {
            b.iter(|| {
                advance(&mut b_ffi, n);
                let mut written = 0usize;
                // SAFETY: live engine; slices valid for the call; out-pointer valid.
                let status = unsafe {
                    mmo_ffi::mmo_apply_moves(
                        handle,
                        b_ffi.records.as_ptr(),
                        n,
                        b_ffi.now_ms,
                        b_ffi.events.as_mut_ptr(),
                        b_ffi.events.len(),
                        &mut written,
                    )
                };
                assert_eq!(status, MMO_OK);
                black_box(written)
            })
        });
        group.bench_with_input(BenchmarkId::new("direct_call", n), &n, |b, _| {
            b.iter(|| {
                advance(&mut b_direct, n);
                let report = direct.apply_moves(&b_direct.records[..n], b_direct.now_ms, &mut b_direct.events).unwrap();
                black_box(report.events)
            })
        });
        group.bench_with_input(BenchmarkId::new("direct_call_unhinted", n), &n, |b, _| {
            b.iter(|| {
                advance(&mut b_unhinted, n);
                let report = unhinted.apply_moves(&b_unhinted.records[..n], b_unhinted.now_ms, &mut b_unhinted.events).unwrap();
                black_box(report.events)
            })
        });
        assert_eq!(direct.stats().moves_rejected(), 0, "every benchmarked move is legal");
        assert_eq!(unhinted.stats().moves_rejected(), 0, "every benchmarked move is legal");
    }
    group.finish();
    let mut stats = mmo_ffi::StatsSnapshot::default();
    // SAFETY: live engine, valid out-pointer; then freed once.
    unsafe {
        assert_eq!(mmo_ffi::mmo_stats(handle, &mut stats), MMO_OK);
        assert_eq!(stats.moves_rejected(), 0, "every benchmarked move is legal");
        mmo_ffi::mmo_engine_free(handle);
    }
}

criterion_group!(benches, ffi_batches);
