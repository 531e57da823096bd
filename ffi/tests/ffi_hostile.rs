//! Every exported function fed hostile input from Rust: NULL and misaligned engines, NULL
//! and misaligned out-pointers, NULL slices with lengths, absurd lengths, buffers shared between
//! arguments, positions that are not positions, and random bytes posing as move, economy, raid
//! and grant records. Nothing may crash, hang or write an output on failure, and the engine's
//! books must still balance afterwards.

use mmo_ffi::*;
use proptest::prelude::*;
use std::ptr::{null, null_mut};

/// The side of [`engine`]'s world, metres.
const ENGINE_WORLD_M: f32 = 1024.0;

fn engine() -> *mut MmoEngine {
    let mut config = MmoConfig::from(&mmo_core::CoreConfig::default());
    config.world_size_m = ENGINE_WORLD_M;
    config.player_capacity = 64;
    config.raid_object_capacity = 4096;
    config.starting_gold = 100;
    let mut e = null_mut();
    // SAFETY: valid pointers.
    assert_eq!(unsafe { mmo_engine_new(&config, &mut e) }, MMO_OK);
    e
}

/// A pointer that is non-null but misaligned for `T` (inside a real buffer).
fn misaligned<T>(buf: &mut [u64; 64]) -> *mut T {
    (buf.as_mut_ptr() as *mut u8).wrapping_add(1).cast()
}

#[test]
fn null_engine_is_refused_by_every_engine_call() {
    every_engine_call_refuses(null(), MMO_ERR_NULL_POINTER);
}

#[test]
fn misaligned_engine_is_refused_by_every_engine_call() {
    // Inside a real allocation, one byte past an engine-aligned address: refused before it
    // is read as an engine.
    const { assert!(align_of::<MmoEngine>() > 1, "an engine has an alignment to miss") };
    let mut backing = [0u64; 64];
    every_engine_call_refuses(misaligned::<MmoEngine>(&mut backing).cast_const(), MMO_ERR_MISALIGNED_POINTER);
}

/// Every call that takes an engine, given the bad handle `e`: each answers `expected` and
/// writes nothing.
fn every_engine_call_refuses(e: *const MmoEngine, expected: MmoStatus) {
    let mut buf = [0u64; 64];
    let p = buf.as_mut_ptr();
    let mut n = 0usize;
    // SAFETY: every call is given a NULL or misaligned engine, which the boundary must refuse
    // first.
    unsafe {
        assert_eq!(mmo_join(e, 0, 1.0, 1.0, 1, p.cast()), expected);
        assert_eq!(mmo_leave(e, 1, 1), expected);
        assert_eq!(mmo_move_events_required(e, 1, &mut n), expected);
        assert_eq!(mmo_apply_moves(e, null(), 0, 0, null_mut(), 0, &mut n), expected);
        assert_eq!(mmo_raid_spawn(e, p.cast(), p.cast()), expected);
        assert_eq!(mmo_damage(e, 1, 1, 1, 1, p.cast()), expected);
        assert_eq!(mmo_attack(e, 1, 1, 1, 1, p.cast()), expected);
        assert_eq!(mmo_claim_loot(e, 1, 1, 1, p.cast()), expected);
        assert_eq!(mmo_trade_offer(e, p.cast(), 1, p.cast()), expected);
        assert_eq!(mmo_trade_answer(e, p.cast(), 1, p.cast()), expected);
        assert_eq!(mmo_grant(e, 1, 1, p.cast(), p.cast()), expected);
        assert_eq!(mmo_apply_economy(e, null(), 0, null_mut(), 0, &mut n), expected);
        assert_eq!(mmo_tick(e, 0, p.cast()), expected);
        assert_eq!(mmo_area_of_interest(e, 1, null_mut(), 0, &mut n), expected);
        assert_eq!(mmo_area_of_interest_batch(e, null(), 0, 8, null_mut(), 0, null_mut(), 0, p.cast()), expected);
        assert_eq!(mmo_stats(e, p.cast()), expected);
        assert_eq!(mmo_economy_audit(e, p.cast()), expected);
        assert_eq!(mmo_player_view(e, 1, p.cast()), expected);
        assert_eq!(mmo_debug_inject_panic(e), expected);
        assert_eq!(mmo_economy_open(e, b"d".as_ptr(), 1, 1000, 0, None, null_mut(), p.cast(), null_mut(), 0), expected);
        assert_eq!(mmo_economy_durable_through(e, p.cast()), expected);
        mmo_engine_free(null_mut());
    }
    assert_eq!(n, 0, "no output written on failure");
    assert!(buf.iter().all(|&w| w == 0), "no output written on failure");
}

#[test]
fn null_and_misaligned_outputs_are_refused_and_nothing_changes() {
    let e = engine();
    let mut buf = [0u64; 64];
    // SAFETY: live engine; pointers are NULL or misaligned on purpose.
    unsafe {
        assert_eq!(mmo_join(e, 0, 1.0, 1.0, 1, null_mut()), MMO_ERR_NULL_POINTER);
        assert_eq!(mmo_join(e, 0, 1.0, 1.0, 1, misaligned(&mut buf)), MMO_ERR_MISALIGNED_POINTER);
        assert_eq!(mmo_tick(e, 0, misaligned(&mut buf)), MMO_ERR_MISALIGNED_POINTER);
        assert_eq!(mmo_stats(e, null_mut()), MMO_ERR_NULL_POINTER);
        assert_eq!(mmo_economy_audit(e, misaligned(&mut buf)), MMO_ERR_MISALIGNED_POINTER);
        assert_eq!(mmo_player_view(e, 1, null_mut()), MMO_ERR_NULL_POINTER);
        assert_eq!(mmo_damage(e, 1, 1, 1, 1, null_mut()), MMO_ERR_NULL_POINTER);
        assert_eq!(mmo_attack(e, 1, 1, 1, 1, null_mut()), MMO_ERR_NULL_POINTER);
        assert_eq!(mmo_attack(e, 1, 1, 1, 1, misaligned(&mut buf)), MMO_ERR_MISALIGNED_POINTER);
        assert_eq!(mmo_claim_loot(e, 1, 1, 1, null_mut()), MMO_ERR_NULL_POINTER);
        assert_eq!(mmo_claim_loot(e, 1, 1, 1, misaligned(&mut buf)), MMO_ERR_MISALIGNED_POINTER);
        let offer = TradeOffer::default();
        let answer = TradeAnswer::default();
        let stack = TradeStack::default();
        let mut result = EconomyResult::default();
        assert_eq!(mmo_trade_offer(e, null(), 1, &mut result), MMO_ERR_NULL_POINTER);
        assert_eq!(mmo_trade_offer(e, &offer, 1, null_mut()), MMO_ERR_NULL_POINTER);
        assert_eq!(mmo_trade_offer(e, misaligned(&mut buf), 1, &mut result), MMO_ERR_MISALIGNED_POINTER);
        assert_eq!(mmo_trade_answer(e, null(), 1, &mut result), MMO_ERR_NULL_POINTER);
        assert_eq!(mmo_trade_answer(e, &answer, 1, misaligned(&mut buf)), MMO_ERR_MISALIGNED_POINTER);
        assert_eq!(mmo_grant(e, 1, 1, null(), &mut result), MMO_ERR_NULL_POINTER);
        assert_eq!(mmo_grant(e, 1, 1, &stack, null_mut()), MMO_ERR_NULL_POINTER);
        assert_eq!(result, EconomyResult::default(), "no output written on failure");
        let mut n = 5usize;
        assert_eq!(mmo_apply_moves(e, misaligned(&mut buf), 1, 0, null_mut(), 0, &mut n), MMO_ERR_MISALIGNED_POINTER);
        assert_eq!(mmo_apply_economy(e, null(), 3, null_mut(), 3, &mut n), MMO_ERR_NULL_POINTER);
        assert_eq!(mmo_area_of_interest(e, 1, misaligned(&mut buf), 4, &mut n), MMO_ERR_MISALIGNED_POINTER);
        assert_eq!(mmo_area_of_interest(e, 1, null_mut(), 4, &mut n), MMO_ERR_NULL_POINTER);
        assert_eq!(n, 5);
        // NULL and misaligned single outputs of the other calls.
        let mut entries = [AoiEntry::default(); 4];
        assert_eq!(mmo_area_of_interest(e, 1, entries.as_mut_ptr(), 4, null_mut()), MMO_ERR_NULL_POINTER);
        assert_eq!(mmo_move_events_required(e, 1, null_mut()), MMO_ERR_NULL_POINTER);
        assert_eq!(mmo_move_events_required(e, 1, misaligned(&mut buf)), MMO_ERR_MISALIGNED_POINTER);
        assert_eq!(mmo_economy_audit(e, null_mut()), MMO_ERR_NULL_POINTER);
        assert_eq!(mmo_economy_durable_through(e, null_mut()), MMO_ERR_NULL_POINTER);
        assert_eq!(mmo_player_view(e, 1, misaligned(&mut buf)), MMO_ERR_MISALIGNED_POINTER);
        let request = RaidSpawnRequest {
            kind: 1,
            count: 1,
            center_x_m: 100.0,
            center_y_m: 100.0,
            half_extent_m: 5.0,
            lifetime_ms: 1_000,
            hp: 10,
            ..RaidSpawnRequest::default()
        };
        assert_eq!(mmo_raid_spawn(e, &request, null_mut()), MMO_ERR_NULL_POINTER);
        assert_eq!(mmo_raid_spawn(e, &request, misaligned(&mut buf)), MMO_ERR_MISALIGNED_POINTER);
        assert_eq!(mmo_raid_spawn(e, misaligned(&mut buf), null_mut()), MMO_ERR_MISALIGNED_POINTER);
        // Lengths so large the byte size overflows are refused before any pointer use.
        let dangling = std::ptr::NonNull::<MoveRecord>::dangling().as_ptr();
        assert_eq!(mmo_apply_moves(e, dangling, usize::MAX, 0, null_mut(), 0, &mut n), MMO_ERR_INVALID_ARGUMENT);
        let mut stats = StatsSnapshot::default();
        assert_eq!(mmo_stats(e, &mut stats), MMO_OK);
        assert_eq!(stats.joins, 0, "refused joins created nobody");
        assert_eq!(stats.ticks, 0, "refused ticks did not run");
        assert_eq!(stats.raid_objects_spawned, 0, "refused raid spawns spawned nothing");
        assert!(buf.iter().all(|&w| w == 0), "no output written on failure");
        // A batch whose input and output overlap is refused.
        let mut records = [MoveRecord::default(); 4];
        let alias = records.as_mut_ptr().cast::<MoveEvent>();
        assert_eq!(mmo_apply_moves(e, records.as_ptr(), 1, 0, alias, 2, &mut n), MMO_ERR_INVALID_ARGUMENT);
        // So is an economy batch whose results would overwrite its operations, whole or in
        // part (the results slice starting inside the operations).
        let mut ops = [EconomyOp::default(); 4];
        let op_bytes = ops.as_mut_ptr().cast::<u8>();
        for at in [0usize, size_of::<EconomyOp>()] {
            let results = op_bytes.add(at).cast::<EconomyResult>();
            assert_eq!(mmo_apply_economy(e, ops.as_ptr(), 2, results, 2, &mut n), MMO_ERR_INVALID_ARGUMENT, "results at byte {at}");
        }
        assert!(ops.iter().all(|op| *op == EconomyOp::default()), "the operations are not written");
        assert_eq!(n, 5, "no count written on failure");
        // A count pointer inside the input or the output is refused too: the count would
        // overwrite a record or an event.
        let mut events = [MoveEvent::default(); 4];
        let in_records = records.as_mut_ptr().cast::<usize>();
        let in_events = events.as_mut_ptr().cast::<usize>();
        assert_eq!(mmo_apply_moves(e, records.as_ptr(), 1, 0, events.as_mut_ptr(), 4, in_records), MMO_ERR_INVALID_ARGUMENT);
        assert_eq!(mmo_apply_moves(e, records.as_ptr(), 1, 0, events.as_mut_ptr(), 4, in_events), MMO_ERR_INVALID_ARGUMENT);
        assert!(records.iter().all(|r| *r == MoveRecord::default()) && events.iter().all(|ev| *ev == MoveEvent::default()));
        // Empty spans overlap nothing, wherever they point.
        assert_eq!(mmo_apply_moves(e, records.as_ptr(), 0, 0, records.as_mut_ptr().cast(), 0, &mut n), MMO_OK);
        assert_eq!(n, 0);
        mmo_engine_free(e);
    }
}

/// A join at a position that is no position (NaN, either infinity, in either coordinate) or
/// outside the world is refused as out of bounds and counted; nobody joins and the ticket is
/// not written.
#[test]
fn join_refuses_positions_that_are_not_in_the_world() {
    let e = engine();
    let world_m = ENGINE_WORLD_M;
    let bad = [f32::NAN, f32::INFINITY, f32::NEG_INFINITY, -0.5, world_m, world_m * 2.0, f32::MAX, f32::MIN];
    let mut refused = 0u64;
    // SAFETY: live engine, valid out-pointers.
    unsafe {
        for &v in &bad {
            for (x, y) in [(v, 100.0), (100.0, v), (v, v)] {
                let mut ticket = MmoJoinTicket { player_id: 7, session_token: 7, slot_hint: 7, x_m: 7.0, y_m: 7.0, _reserved: 7 };
                assert_eq!(mmo_join(e, 0, x, y, 1, &mut ticket), MMO_ERR_OUT_OF_BOUNDS, "join at ({x}, {y})");
                assert_eq!(
                    ticket,
                    MmoJoinTicket { player_id: 7, session_token: 7, slot_hint: 7, x_m: 7.0, y_m: 7.0, _reserved: 7 },
                    "no ticket written for ({x}, {y})"
                );
                refused += 1;
            }
        }
        let mut stats = StatsSnapshot::default();
        assert_eq!(mmo_stats(e, &mut stats), MMO_OK);
        assert_eq!((stats.joins, stats.joins_refused_bounds), (0, refused));
        // The world's own edge is in it.
        let mut ticket = MmoJoinTicket::default();
        assert_eq!(mmo_join(e, 0, 0.0, world_m.next_down(), 1, &mut ticket), MMO_OK);
        mmo_engine_free(e);
    }
}

/// The server's clock is the front's to give, and the engine takes whatever it is given: a
/// clock that jumps back, stands at 0 or at `u64::MAX` across moves, attacks, offers, answers
/// and ticks is never a panic or a poisoned engine, and never mints or loses value.
#[test]
fn any_server_clock_leaves_the_engine_whole() {
    let e = engine();
    let (mut maker, mut taker) = (MmoJoinTicket::default(), MmoJoinTicket::default());
    let clocks = [5_000u64, 1_000, 0, u64::MAX, u64::MAX - 1, 3, u64::MAX / 2, 2];
    // SAFETY: live engine, valid pointers and lengths.
    unsafe {
        assert_eq!(mmo_join(e, 0, 500.0, 500.0, 1, &mut maker), MMO_OK);
        assert_eq!(mmo_join(e, 0, 501.0, 500.0, 2, &mut taker), MMO_OK);
        let mut required = 0usize;
        assert_eq!(mmo_move_events_required(e, 1, &mut required), MMO_OK);
        let mut events = vec![MoveEvent::default(); required];
        for (i, &now_ms) in clocks.iter().enumerate() {
            let i = i as u64 + 1;
            let step = MoveRecord {
                player_id: maker.player_id,
                session_token: maker.session_token,
                sequence: i as u32,
                client_time_ms: now_ms as u32,
                x_m: 500.0 + 0.1 * i as f32,
                y_m: 500.0,
                ..MoveRecord::default()
            };
            let mut written = 0usize;
            assert_eq!(mmo_apply_moves(e, &step, 1, now_ms, events.as_mut_ptr(), events.len(), &mut written), MMO_OK, "move at {now_ms}");
            let mut hit = MmoAttackResult::default();
            assert_eq!(
                mmo_attack(e, maker.player_id, maker.session_token, taker.player_id, now_ms, &mut hit),
                MMO_OK,
                "attack at {now_ms}"
            );
            let offer = TradeOffer {
                player_id: maker.player_id,
                session_token: maker.session_token,
                transaction_id: i,
                counterparty_id: taker.player_id,
                give: TradeStack { gold: 1, ..TradeStack::default() },
                want: TradeStack::default(),
            };
            let mut r = EconomyResult::default();
            assert_eq!(mmo_trade_offer(e, &offer, now_ms, &mut r), MMO_OK, "offer at {now_ms}");
            if i.is_multiple_of(2) {
                let answer = TradeAnswer {
                    player_id: taker.player_id,
                    session_token: taker.session_token,
                    transaction_id: i,
                    maker_id: maker.player_id,
                    offer_id: i - 1,
                    accept: 1,
                    ..TradeAnswer::default()
                };
                assert_eq!(mmo_trade_answer(e, &answer, now_ms, &mut r), MMO_OK, "answer at {now_ms}");
                assert!(EconomyStatus::try_from(r.status).is_ok());
            }
            let mut info = MmoTickInfo::default();
            assert_eq!(mmo_tick(e, now_ms, &mut info), MMO_OK, "tick at {now_ms}");
            assert_eq!(info.now_ms, now_ms, "the tick reports the clock it was given");
            let mut audit = MmoEconomyAudit::default();
            assert_eq!(mmo_economy_audit(e, &mut audit), MMO_OK);
            assert_eq!(audit.conserved, 1, "value conserved after the clock read {now_ms}");
        }
        let mut stats = StatsSnapshot::default();
        assert_eq!(mmo_stats(e, &mut stats), MMO_OK);
        assert_eq!(stats.ticks, clocks.len() as u64);
        mmo_engine_free(e);
    }
}

/// The area-of-interest batch: every way its four pointers and two capacities can be wrong is
/// refused with nothing written; a well-formed batch marks unknown players and players who
/// joined after the tick, and fills the rest.
#[test]
fn area_of_interest_batch_refuses_bad_buffers_and_marks_absent_players() {
    let e = engine();
    let (mut a, mut b, mut late) = (MmoJoinTicket::default(), MmoJoinTicket::default(), MmoJoinTicket::default());
    let mut info = MmoAoiBatchInfo { now_ms: 77, tick: 77, found: 77 };
    // SAFETY: live engine; buffers are valid, or NULL / misaligned / short / overlapping on purpose.
    unsafe {
        assert_eq!(mmo_join(e, 0, 500.0, 500.0, 1, &mut a), MMO_OK);
        assert_eq!(mmo_join(e, 0, 503.0, 500.0, 1, &mut b), MMO_OK);
        let players = [a.player_id, b.player_id, 999, 0];
        let mut entries = [AoiEntry::default(); 4 * 4];
        let mut counts = [7u32; 4];
        let mut raw = [0u64; 64];
        let ep = entries.as_mut_ptr();
        let cp = counts.as_mut_ptr();
        assert_eq!(mmo_area_of_interest_batch(e, null(), 4, 4, ep, 16, cp, 4, &mut info), MMO_ERR_NULL_POINTER);
        assert_eq!(mmo_area_of_interest_batch(e, players.as_ptr(), 4, 4, null_mut(), 16, cp, 4, &mut info), MMO_ERR_NULL_POINTER);
        assert_eq!(mmo_area_of_interest_batch(e, players.as_ptr(), 4, 4, ep, 16, null_mut(), 4, &mut info), MMO_ERR_NULL_POINTER);
        assert_eq!(mmo_area_of_interest_batch(e, players.as_ptr(), 4, 4, ep, 16, cp, 4, null_mut()), MMO_ERR_NULL_POINTER);
        assert_eq!(
            mmo_area_of_interest_batch(e, players.as_ptr(), 4, 4, misaligned(&mut raw), 16, cp, 4, &mut info),
            MMO_ERR_MISALIGNED_POINTER
        );
        assert_eq!(mmo_area_of_interest_batch(e, players.as_ptr(), 4, 4, ep, 15, cp, 4, &mut info), MMO_ERR_BUFFER_TOO_SMALL);
        assert_eq!(mmo_area_of_interest_batch(e, players.as_ptr(), 4, 4, ep, 16, cp, 3, &mut info), MMO_ERR_BUFFER_TOO_SMALL);
        assert_eq!(mmo_area_of_interest_batch(e, players.as_ptr(), 4, 65, ep, 16, cp, 4, &mut info), MMO_ERR_INVALID_ARGUMENT);
        assert_eq!(
            mmo_area_of_interest_batch(e, players.as_ptr(), 4, 1, cp.cast(), 4, cp, 4, &mut info),
            MMO_ERR_INVALID_ARGUMENT,
            "overlap"
        );
        assert_eq!(mmo_area_of_interest_batch(e, players.as_ptr(), usize::MAX, 1, ep, 16, cp, 4, &mut info), MMO_ERR_INVALID_ARGUMENT);
        // The players' ids shared with the entries or with the counts: refused, the ids kept.
        let mut ids_and_entries = [0u64; 4 * 4 * (size_of::<AoiEntry>() / 8)];
        ids_and_entries[..4].copy_from_slice(&players);
        let shared = ids_and_entries.as_mut_ptr();
        assert_eq!(mmo_area_of_interest_batch(e, shared, 4, 4, shared.cast(), 16, cp, 4, &mut info), MMO_ERR_INVALID_ARGUMENT);
        let mut ids_and_counts = [0u64; 4];
        ids_and_counts.copy_from_slice(&players);
        let shared = ids_and_counts.as_mut_ptr();
        assert_eq!(
            mmo_area_of_interest_batch(e, shared, 4, 4, ep, 16, shared.cast::<u32>().add(2), 4, &mut info),
            MMO_ERR_INVALID_ARGUMENT
        );
        assert_eq!((&ids_and_entries[..4], ids_and_counts), (&players[..], players), "the ids are not written");
        assert_eq!(counts, [7; 4], "nothing written on failure");
        assert_eq!((info.tick, info.found), (77, 77));
        // Before any tick: nobody is in a snapshot.
        assert_eq!(mmo_area_of_interest_batch(e, players.as_ptr(), 4, 4, ep, 16, cp, 4, &mut info), MMO_OK);
        assert_eq!(counts, [MMO_AOI_NOT_IN_SNAPSHOT; 4]);
        assert_eq!((info.tick, info.found), (0, 0));
        let mut tick = MmoTickInfo::default();
        assert_eq!(mmo_tick(e, 1_000, &mut tick), MMO_OK);
        assert_eq!(tick.snapshot_entities, 2);
        assert_eq!(mmo_join(e, 0, 501.0, 500.0, 1, &mut late), MMO_OK);
        let with_late = [a.player_id, late.player_id, 999, b.player_id];
        assert_eq!(mmo_area_of_interest_batch(e, with_late.as_ptr(), 4, 4, ep, 16, cp, 4, &mut info), MMO_OK);
        assert_eq!(counts, [1, MMO_AOI_NOT_IN_SNAPSHOT, MMO_AOI_NOT_IN_SNAPSHOT, 1]);
        assert_eq!((info.tick, info.now_ms, info.found), (1, 1_000, 2));
        assert_eq!((entries[0].entity_id, entries[0].distance_m), (b.player_id, 3.0));
        assert_eq!(entries[12].entity_id, a.player_id);
        let mut n = 9usize;
        assert_eq!(mmo_area_of_interest(e, late.player_id, ep, 4, &mut n), MMO_ERR_NOT_IN_SNAPSHOT);
        assert_eq!(n, 9);
        mmo_engine_free(e);
    }
}

#[test]
fn config_check_names_the_field_and_writes_only_what_fits() {
    let mut config = MmoConfig::from(&mmo_core::CoreConfig::default());
    let mut message = [0x55u8; 64];
    // SAFETY: valid pointers and lengths.
    unsafe {
        assert_eq!(mmo_config_check(&config, message.as_mut_ptr().cast(), message.len()), MMO_OK);
        assert_eq!(message, [0x55; 64], "nothing written on success");
        config.aoi_k = 0;
        assert_eq!(mmo_config_check(&config, message.as_mut_ptr().cast(), message.len()), MMO_ERR_INVALID_CONFIG);
        let text = std::ffi::CStr::from_bytes_until_nul(&message).unwrap().to_str().unwrap();
        assert!(text.starts_with("aoi_k must be"), "{text}");
        let mut tiny = [0x55u8; 6];
        assert_eq!(mmo_config_check(&config, tiny.as_mut_ptr().cast(), tiny.len()), MMO_ERR_INVALID_CONFIG);
        assert_eq!(&tiny, b"aoi_k\0", "cut to fit, NUL-terminated");
        assert_eq!(mmo_config_check(&config, null_mut(), 0), MMO_ERR_INVALID_CONFIG, "no buffer: status only");
        assert_eq!(mmo_config_check(null(), null_mut(), 0), MMO_ERR_NULL_POINTER);
        assert_eq!(mmo_config_check(&config, null_mut(), 8), MMO_ERR_NULL_POINTER, "a NULL buffer said to hold 8 bytes");
        config.aoi_k = 32;
        config._reserved[2] = 1;
        assert_eq!(mmo_config_check(&config, null_mut(), 0), MMO_ERR_INVALID_ARGUMENT);
        config._reserved[2] = 0;
        config.logout_linger_ms = 600_001;
        assert_eq!(mmo_config_check(&config, null_mut(), 0), MMO_ERR_INVALID_CONFIG);
        config.logout_linger_ms = 0;
        assert_eq!(mmo_config_check(&config, null_mut(), 0), MMO_OK, "0: no linger");
        config._reserved[6] = 1;
        assert_eq!(mmo_config_check(&config, null_mut(), 0), MMO_ERR_INVALID_ARGUMENT);
        let mut e = null_mut();
        assert_eq!(mmo_engine_new(&config, &mut e), MMO_ERR_INVALID_ARGUMENT);
        assert!(e.is_null(), "no engine on failure");
        // A config that is not a config's alignment, in and out.
        let mut raw = [0u64; 64];
        assert_eq!(mmo_config_check(misaligned(&mut raw), null_mut(), 0), MMO_ERR_MISALIGNED_POINTER);
        assert_eq!(mmo_config_default(misaligned(&mut raw)), MMO_ERR_MISALIGNED_POINTER);
        assert_eq!(mmo_engine_new(misaligned(&mut raw), &mut e), MMO_ERR_MISALIGNED_POINTER);
        assert!(raw.iter().all(|&w| w == 0), "nothing written on failure");
        assert!(e.is_null());
    }
}

/// Configurations whose lengths are each in range but whose area-of-interest walk would not be
/// bounded: a world a nanometre wide with every length scaled to it (a millimetre of edge
/// slack is then some 10^10 snapshot cells), and a radius spanning more snapshot cells than
/// `MAX_AOI_REACH_CELLS`. Both are refused by the check and by `mmo_engine_new`; a radius at
/// the limit is accepted and its query answers.
#[test]
fn a_config_whose_aoi_walk_is_unbounded_is_refused() {
    let mut tiny = MmoConfig::from(&mmo_core::CoreConfig::default());
    tiny.world_size_m = 1e-9;
    tiny.cell_size_m = 1e-9 / 1024.0;
    tiny.cell_hysteresis_m = 0.0;
    tiny.contact_radius_m = 1e-9 / 2048.0;
    tiny.aoi_radius_m = 1e-9;
    tiny.attack_range_m = 1e-9;
    tiny.loot_range_m = 1e-9;
    tiny.snapshot_cell_m = 1e-9 / 60_000.0;
    let mut wide = MmoConfig::from(&mmo_core::CoreConfig::default());
    wide.aoi_radius_m = 1_024.0;
    wide.snapshot_cell_m = 1.0;
    let mut at_limit = MmoConfig::from(&mmo_core::CoreConfig::default());
    at_limit.aoi_radius_m = 256.0;
    at_limit.snapshot_cell_m = 1.0;
    // SAFETY: valid pointers throughout; the engine is freed once.
    unsafe {
        for (config, field) in [(&tiny, "world_size_m"), (&wide, "aoi_radius_m / snapshot_cell_m")] {
            let mut message = [0u8; 96];
            assert_eq!(mmo_config_check(config, message.as_mut_ptr().cast(), message.len()), MMO_ERR_INVALID_CONFIG);
            let text = std::ffi::CStr::from_bytes_until_nul(&message).unwrap().to_str().unwrap();
            assert!(text.starts_with(field), "{text}");
            let mut e = null_mut();
            assert_eq!(mmo_engine_new(config, &mut e), MMO_ERR_INVALID_CONFIG);
            assert!(e.is_null());
        }
        let mut e = null_mut();
        assert_eq!(mmo_engine_new(&at_limit, &mut e), MMO_OK);
        let (mut a, mut b) = (MmoJoinTicket::default(), MmoJoinTicket::default());
        assert_eq!(mmo_join(e, 0, 100.0, 100.0, 1, &mut a), MMO_OK);
        assert_eq!(mmo_join(e, 0, 350.0, 100.0, 1, &mut b), MMO_OK);
        let mut info = MmoTickInfo::default();
        assert_eq!(mmo_tick(e, 100, &mut info), MMO_OK);
        let mut entries = [AoiEntry::default(); 4];
        let mut n = 0usize;
        assert_eq!(mmo_area_of_interest(e, a.player_id, entries.as_mut_ptr(), entries.len(), &mut n), MMO_OK);
        assert_eq!((n, entries[0].entity_id, entries[0].distance_m), (1, b.player_id, 250.0), "the other player, 250 m off");
        mmo_engine_free(e);
    }
}

#[test]
fn panic_status_then_poisoned() {
    let mut config = MmoConfig::from(&mmo_core::CoreConfig::default());
    config.fault_injection = 2;
    let mut e = null_mut();
    // SAFETY: valid pointers throughout; the panic is caught by the boundary.
    unsafe {
        assert_eq!(mmo_engine_new(&config, &mut e), MMO_ERR_INVALID_ARGUMENT, "fault_injection is 0 or 1");
        config.fault_injection = 1;
        assert_eq!(mmo_engine_new(&config, &mut e), MMO_OK);
        assert_eq!(mmo_debug_inject_panic(e), MMO_ERR_PANIC);
        let mut stats = StatsSnapshot::default();
        assert_eq!(mmo_stats(e, &mut stats), MMO_ERR_POISONED);
        mmo_engine_free(e);
    }
}

/// A move's slot hint, whatever it holds (the ticket's own, none, the other player's, past
/// every slot, or any small value that names some slot): the move is answered as it would be
/// without one. The real player's moves are applied; the same record under the other player's
/// id, or with a wrong token, is refused as a wrong session; the other player's body is never
/// touched.
#[test]
fn a_move_with_any_slot_hint_is_answered_as_without_one() {
    let e = engine();
    let (mut me, mut other) = (MmoJoinTicket::default(), MmoJoinTicket::default());
    // SAFETY: live engine, valid pointers, buffers sized by the library's own answer.
    unsafe {
        assert_eq!(mmo_join(e, 0, 500.0, 500.0, 1, &mut me), MMO_OK);
        assert_eq!(mmo_join(e, 0, 600.0, 500.0, 2, &mut other), MMO_OK);
        assert!(me.slot_hint != 0 && other.slot_hint != 0 && me.slot_hint != other.slot_hint, "{me:?} {other:?}");
        assert_eq!((me._reserved, other._reserved), (0, 0));
        let mut hints = vec![me.slot_hint, 0, other.slot_hint, me.slot_hint.max(other.slot_hint) + 1, 1 << 31, u32::MAX];
        let mut x = 0x9E37_79B9u32;
        for _ in 0..58 {
            // xorshift32; small values name the two real slots and ones never handed out
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            hints.push(x % 8);
        }
        let mut required = 0usize;
        assert_eq!(mmo_move_events_required(e, 3, &mut required), MMO_OK);
        let mut events = vec![MoveEvent::default(); required];
        for (i, &hint) in hints.iter().enumerate() {
            let seq = i as u32 + 1;
            let now_ms = 1_000 + 100 * u64::from(seq);
            let mine = MoveRecord {
                player_id: me.player_id,
                session_token: me.session_token,
                sequence: seq,
                client_time_ms: now_ms as u32,
                x_m: 500.0 + 0.1 * seq as f32,
                y_m: 500.0,
                slot_hint: hint,
                ..MoveRecord::default()
            };
            let forged = MoveRecord { player_id: other.player_id, ..mine };
            let wrong_token = MoveRecord { session_token: me.session_token ^ 1, sequence: seq + 1_000, ..mine };
            let batch = [forged, wrong_token, mine];
            let mut written = 0usize;
            assert_eq!(mmo_apply_moves(e, batch.as_ptr(), batch.len(), now_ms, events.as_mut_ptr(), events.len(), &mut written), MMO_OK);
            let firsts: Vec<&MoveEvent> =
                events[..written].iter().filter(|ev| matches!(ev.event_kind(), Some(EventKind::Ack | EventKind::Reject))).collect();
            assert_eq!(firsts.len(), batch.len(), "hint {hint}");
            for refused in &firsts[..2] {
                assert_eq!(
                    (refused.event_kind(), refused.detail),
                    (Some(EventKind::Reject), RejectReason::WrongSession as u8),
                    "hint {hint}"
                );
            }
            assert_eq!((firsts[2].event_kind(), firsts[2].sequence), (Some(EventKind::Ack), seq), "hint {hint}");
        }
        // The other body is where it joined and has applied nothing: a short step with
        // sequence 1 is legal only from there.
        let step = MoveRecord {
            player_id: other.player_id,
            session_token: other.session_token,
            sequence: 1,
            client_time_ms: 9_000,
            x_m: 600.1,
            y_m: 500.0,
            slot_hint: other.slot_hint,
            ..MoveRecord::default()
        };
        let mut written = 0usize;
        assert_eq!(mmo_apply_moves(e, &step, 1, 9_000, events.as_mut_ptr(), events.len(), &mut written), MMO_OK);
        assert_eq!(events[0].event_kind(), Some(EventKind::Ack));
        mmo_engine_free(e);
    }
}

fn arbitrary<T: Copy>(bytes: &[u8]) -> T {
    assert!(bytes.len() >= std::mem::size_of::<T>());
    // SAFETY: T is a plain-old-data record (integers, floats, byte arrays): every bit
    // pattern is a valid value; read_unaligned copes with the byte buffer's alignment.
    unsafe { std::ptr::read_unaligned(bytes.as_ptr().cast()) }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    /// Random bytes as move, economy and raid records: every move gets exactly one Ack or
    /// Reject first, every economy op one result, and the books still balance.
    #[test]
    fn random_records_never_break_the_engine(
        moves in proptest::collection::vec(proptest::collection::vec(any::<u8>(), 72), 0..40),
        ops in proptest::collection::vec(proptest::collection::vec(any::<u8>(), 48), 0..40),
        raids in proptest::collection::vec(proptest::collection::vec(any::<u8>(), 32), 0..4),
        attacks in proptest::collection::vec((any::<u64>(), any::<u64>(), any::<u64>(), any::<u64>()), 0..16),
        claims in proptest::collection::vec((any::<u64>(), any::<u64>(), any::<u64>()), 0..16),
        offers in proptest::collection::vec(proptest::collection::vec(any::<u8>(), 64), 0..16),
        answers in proptest::collection::vec(proptest::collection::vec(any::<u8>(), 48), 0..16),
        grants in proptest::collection::vec((any::<u64>(), any::<u64>(), proptest::collection::vec(any::<u8>(), 16), any::<bool>()), 0..8),
        aim_at_real_player in any::<bool>(),
    ) {
        let e = engine();
        let mut ticket = MmoJoinTicket::default();
        // SAFETY: live engine, valid pointers, buffers sized by the library's own answer.
        unsafe {
            prop_assert_eq!(mmo_join(e, 0, 500.0, 500.0, 1, &mut ticket), MMO_OK);
            let mut records: Vec<MoveRecord> = moves.iter().map(|b| arbitrary(b)).collect();
            let mut economy: Vec<EconomyOp> = ops.iter().map(|b| arbitrary(b)).collect();
            if aim_at_real_player {
                for r in &mut records { r.player_id = ticket.player_id; r.session_token = ticket.session_token; }
                for o in &mut economy { o.player_id = ticket.player_id; o.session_token = ticket.session_token; }
            }
            let mut required = 0usize;
            prop_assert_eq!(mmo_move_events_required(e, records.len(), &mut required), MMO_OK);
            let mut events = vec![MoveEvent::default(); required];
            let mut written = 0usize;
            prop_assert_eq!(mmo_apply_moves(e, records.as_ptr(), records.len(), 1_000, events.as_mut_ptr(), events.len(), &mut written), MMO_OK);
            let firsts = events[..written].iter().filter(|ev| matches!(ev.event_kind(), Some(EventKind::Ack | EventKind::Reject))).count();
            prop_assert_eq!(firsts, records.len());
            let mut results = vec![EconomyResult::default(); economy.len()];
            prop_assert_eq!(mmo_apply_economy(e, economy.as_ptr(), economy.len(), results.as_mut_ptr(), results.len(), &mut written), MMO_OK);
            prop_assert_eq!(written, economy.len());
            prop_assert!(results.iter().all(|r| EconomyStatus::try_from(r.status).is_ok()));
            for raw in &raids {
                let request: RaidSpawnRequest = arbitrary(raw);
                let mut report = MmoRaidReport::default();
                let status = mmo_raid_spawn(e, &request, &mut report);
                prop_assert!(matches!(status, MMO_OK | MMO_ERR_BAD_ENUM | MMO_ERR_INVALID_ARGUMENT | MMO_ERR_OUT_OF_BOUNDS | MMO_ERR_CAPACITY), "status {}", status);
            }
            // Attacks with any ids, tokens and clocks: each is a result (landed or a known
            // refusal), never an error, and a refusal writes nothing else.
            let mut foe = MmoJoinTicket::default();
            prop_assert_eq!(mmo_join(e, 0, 502.0, 500.0, 2, &mut foe), MMO_OK);
            for &(attacker, token, target, now_ms) in &attacks {
                let (attacker, token, target) =
                    if aim_at_real_player { (ticket.player_id, ticket.session_token, foe.player_id) } else { (attacker, token, target) };
                let mut result = MmoAttackResult::default();
                prop_assert_eq!(mmo_attack(e, attacker, token, target, now_ms, &mut result), MMO_OK);
                if result.refusal == 0 {
                    prop_assert!(result.damage > 0 && result.hp_left >= 0 && result.target_kind != 0);
                } else {
                    prop_assert!(mmo_core::AttackError::try_from(result.refusal).is_ok(), "refusal {}", result.refusal);
                    prop_assert_eq!(MmoAttackResult { refusal: 0, ..result }, MmoAttackResult::default());
                }
            }
            // Claims with any ids and tokens (or the real player's, of any object): each is a
            // result; a refusal writes nothing else, and nothing a claim does mints anything
            // no kill dropped (no attack here killed an add).
            for &(claimer, token, loot_id) in &claims {
                let (claimer, token) = if aim_at_real_player { (ticket.player_id, ticket.session_token) } else { (claimer, token) };
                let mut result = MmoLootResult::default();
                prop_assert_eq!(mmo_claim_loot(e, claimer, token, loot_id, &mut result), MMO_OK);
                prop_assert!(mmo_core::LootError::try_from(result.refusal).is_ok(), "refusal {}", result.refusal);
                prop_assert_eq!(MmoLootResult { refusal: 0, ..result }, MmoLootResult::default());
            }
            // Random bytes as trade offers and answers (the real players' ids and tokens when
            // aimed): each is a result with a known status; value only ever moves, escrowed
            // or not, and nothing is minted.
            for raw in &offers {
                let mut o: TradeOffer = arbitrary(raw);
                if aim_at_real_player {
                    (o.player_id, o.session_token, o.counterparty_id) = (ticket.player_id, ticket.session_token, foe.player_id);
                }
                let mut r = EconomyResult::default();
                prop_assert_eq!(mmo_trade_offer(e, &o, 1_500, &mut r), MMO_OK);
                prop_assert!(EconomyStatus::try_from(r.status).is_ok(), "status {}", r.status);
            }
            for raw in &answers {
                let mut a: TradeAnswer = arbitrary(raw);
                if aim_at_real_player {
                    (a.player_id, a.session_token, a.maker_id) = (foe.player_id, foe.session_token, ticket.player_id);
                }
                let mut r = EconomyResult::default();
                prop_assert_eq!(mmo_trade_answer(e, &a, 1_600, &mut r), MMO_OK);
                prop_assert!(EconomyStatus::try_from(r.status).is_ok(), "status {}", r.status);
            }
            // Admin grants of random stacks (any gold, item count and kind, reserved bits
            // included) under random grant ids, to a random id or the real player: each is a
            // result with a known status, and exactly what was applied is minted.
            let (mut granted_gold, mut granted_items) = (0u64, 0u64);
            for (player, grant_id, raw, tame) in &grants {
                let player = if aim_at_real_player { ticket.player_id } else { *player };
                let mut stack: TradeStack = arbitrary(raw);
                if *tame {
                    // A stack a wallet can take, so that some grants apply.
                    stack.gold = stack.gold.rem_euclid(1_000);
                    stack.item_count = stack.item_count.rem_euclid(5);
                    stack.item_kind %= mmo_core::config::ITEM_KINDS as u16;
                    stack._reserved = 0;
                }
                let mut r = EconomyResult::default();
                prop_assert_eq!(mmo_grant(e, player, *grant_id, &stack, &mut r), MMO_OK);
                let status = EconomyStatus::try_from(r.status);
                prop_assert!(status.is_ok(), "status {}", r.status);
                if status == Ok(EconomyStatus::Applied) && r.duplicate == 0 {
                    prop_assert!(stack.gold >= 0 && stack.item_count >= 0, "a grant of a negative amount applied: {:?}", stack);
                    granted_gold += stack.gold as u64;
                    granted_items += stack.item_count as u64;
                }
            }
            let mut info = MmoTickInfo::default();
            prop_assert_eq!(mmo_tick(e, 2_000, &mut info), MMO_OK);
            let mut audit = MmoEconomyAudit::default();
            prop_assert_eq!(mmo_economy_audit(e, &mut audit), MMO_OK);
            prop_assert_eq!(audit.conserved, 1);
            prop_assert_eq!((audit.loot_minted_gold, audit.loot_minted_items), (0, 0));
            prop_assert_eq!((audit.grant_minted_gold, audit.grant_minted_items), (granted_gold, granted_items));
            mmo_engine_free(e);
        }
    }
}

#[test]
fn every_status_has_its_own_name() {
    let statuses = [
        MMO_OK,
        MMO_ERR_NULL_POINTER,
        MMO_ERR_MISALIGNED_POINTER,
        MMO_ERR_BUFFER_TOO_SMALL,
        MMO_ERR_INVALID_CONFIG,
        MMO_ERR_INVALID_ARGUMENT,
        MMO_ERR_BAD_ENUM,
        MMO_ERR_UNKNOWN_PLAYER,
        MMO_ERR_WRONG_SESSION,
        MMO_ERR_SERVER_FULL,
        MMO_ERR_OUT_OF_BOUNDS,
        MMO_ERR_CAPACITY,
        MMO_ERR_ABI_MISMATCH,
        MMO_ERR_UNKNOWN_TARGET,
        MMO_ERR_FRIENDLY_FIRE,
        MMO_ERR_NOT_IN_SNAPSHOT,
        MMO_ERR_ACCOUNT_IN_SESSION,
        MMO_ERR_ACCOUNT_REQUIRED,
        MMO_ERR_STORAGE_BUSY,
        MMO_ERR_STORAGE,
        MMO_ERR_POISONED,
        MMO_ERR_PANIC,
    ];
    // SAFETY: mmo_status_name returns a static NUL-terminated string.
    let name_of = |s: MmoStatus| unsafe { std::ffi::CStr::from_ptr(mmo_status_name(s)) }.to_str().unwrap().to_owned();
    let names: std::collections::HashSet<String> = statuses.iter().map(|&s| name_of(s)).collect();
    assert_eq!(names.len(), statuses.len(), "names are distinct");
    assert!(!names.contains("MMO_UNKNOWN_STATUS"));
    assert!(statuses[1..].iter().all(|&s| (1001..=1099).contains(&s)), "errors sit in their own range");
    assert_eq!(name_of(1000), "MMO_UNKNOWN_STATUS");
    // The list above is every status there is: any other code in the range has no name (a
    // status added without a name, or named here without a test, fails this).
    for code in (1001..=1099).filter(|c| !statuses.contains(c)) {
        assert_eq!(name_of(code), "MMO_UNKNOWN_STATUS", "status {code} has a name but is not in this test's list");
    }
}

fn temp_dir(name: &str) -> std::path::PathBuf {
    let mut bytes = [0u8; 8];
    getrandom::fill(&mut bytes).unwrap();
    let dir = std::env::temp_dir().join(format!("mmo-ffi-{name}-{:x}", u64::from_le_bytes(bytes)));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

unsafe extern "C" fn count_durable(context: *mut std::ffi::c_void) {
    // SAFETY: the test passes a live AtomicU64 that outlives the engine.
    unsafe { &*context.cast::<std::sync::atomic::AtomicU64>() }.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
}

#[test]
fn economy_open_refuses_bad_paths_and_pointers_and_writes_nothing_on_failure() {
    let e = engine();
    let mut info = MmoRecoveryInfo::default();
    let mut buf = [0u64; 64];
    let mut message = [0 as std::ffi::c_char; 128];
    // SAFETY: live engine; pointers are NULL, misaligned or lengths absurd on purpose.
    unsafe {
        assert_eq!(mmo_economy_open(e, null(), 5, 1000, 0, None, null_mut(), &mut info, null_mut(), 0), MMO_ERR_NULL_POINTER);
        assert_eq!(
            mmo_economy_open(e, b"x".as_ptr(), usize::MAX, 1000, 0, None, null_mut(), &mut info, null_mut(), 0),
            MMO_ERR_INVALID_ARGUMENT
        );
        assert_eq!(mmo_economy_open(e, b"x".as_ptr(), 1, 1000, 0, None, null_mut(), null_mut(), null_mut(), 0), MMO_ERR_NULL_POINTER);
        assert_eq!(
            mmo_economy_open(e, b"x".as_ptr(), 1, 1000, 0, None, null_mut(), misaligned(&mut buf), null_mut(), 0),
            MMO_ERR_MISALIGNED_POINTER
        );
        let not_utf8 = [0xffu8, 0xfe, b'/'];
        let m = message.as_mut_ptr();
        assert_eq!(
            mmo_economy_open(e, not_utf8.as_ptr(), 3, 1000, 0, None, null_mut(), &mut info, m, message.len()),
            MMO_ERR_INVALID_ARGUMENT
        );
        assert_eq!(mmo_economy_open(e, b"".as_ptr(), 0, 1000, 0, None, null_mut(), &mut info, m, message.len()), MMO_ERR_INVALID_ARGUMENT);
        for linger_us in [100_001, u32::MAX] {
            assert_eq!(
                mmo_economy_open(e, b"x".as_ptr(), 1, linger_us, 0, None, null_mut(), &mut info, m, message.len()),
                MMO_ERR_INVALID_ARGUMENT
            );
            assert!(std::ffi::CStr::from_ptr(m).to_str().unwrap().contains("linger"));
        }
        for segment_kib in [1, 63, 1_048_577, u32::MAX] {
            assert_eq!(
                mmo_economy_open(e, b"x".as_ptr(), 1, 0, segment_kib, None, null_mut(), &mut info, m, message.len()),
                MMO_ERR_INVALID_ARGUMENT
            );
            assert!(std::ffi::CStr::from_ptr(m).to_str().unwrap().contains("segment"));
        }
        // A path that cannot be a directory: a file in the way.
        let dir = temp_dir("blocked");
        let file = dir.join("a-file");
        std::fs::write(&file, b"not a directory").unwrap();
        let path = file.join("data");
        let path = path.to_str().unwrap();
        assert_eq!(mmo_economy_open(e, path.as_ptr(), path.len(), 1000, 0, None, null_mut(), &mut info, m, 3), MMO_ERR_STORAGE);
        assert_eq!(std::ffi::CStr::from_ptr(m).to_bytes().len(), 2, "the message is cut to its capacity, NUL included");
        std::fs::remove_dir_all(&dir).unwrap();
        let mut through = 7u64;
        assert_eq!(mmo_economy_durable_through(e, misaligned(&mut buf)), MMO_ERR_MISALIGNED_POINTER);
        assert_eq!(mmo_economy_durable_through(e, &mut through), MMO_OK);
        assert_eq!(through, u64::MAX, "no store: nothing waits");
        mmo_engine_free(e);
    }
    assert_eq!(info, MmoRecoveryInfo::default(), "no output written on failure");
}

#[test]
fn economy_open_makes_results_wait_and_calls_back_when_durable() {
    let e = engine();
    let dir = temp_dir("open");
    let path = dir.to_str().unwrap();
    let calls = std::sync::atomic::AtomicU64::new(0);
    let mut info = MmoRecoveryInfo::default();
    // SAFETY: live engine, valid slices; `calls` outlives the engine.
    unsafe {
        let context = (&raw const calls).cast_mut().cast();
        assert_eq!(mmo_economy_open(e, path.as_ptr(), path.len(), 1000, 0, Some(count_durable), context, &mut info, null_mut(), 0), MMO_OK);
        assert_eq!((info.accounts, info.entries, info.repaired), (0, 0, 0));
        assert_eq!(
            mmo_economy_open(e, path.as_ptr(), path.len(), 1000, 0, None, null_mut(), &mut info, null_mut(), 0),
            MMO_ERR_STORAGE,
            "opens once"
        );
        let mut t = MmoJoinTicket::default();
        assert_eq!(mmo_join(e, 0, 10.0, 10.0, 1, &mut t), MMO_ERR_ACCOUNT_REQUIRED);
        assert_eq!(mmo_join(e, 42, 10.0, 10.0, 1, &mut t), MMO_OK);
        let mut again = MmoJoinTicket::default();
        assert_eq!(mmo_join(e, 42, 10.0, 10.0, 1, &mut again), MMO_ERR_ACCOUNT_IN_SESSION);
        assert_eq!(again, MmoJoinTicket::default());
        let op = EconomyOp {
            player_id: t.player_id,
            session_token: t.session_token,
            transaction_id: 1,
            gold: 5,
            kind: EconomyKind::Spend as u8,
            ..EconomyOp::default()
        };
        let mut result = [EconomyResult::default()];
        let mut n = 0;
        assert_eq!(mmo_apply_economy(e, &op, 1, result.as_mut_ptr(), 1, &mut n), MMO_OK);
        assert_eq!((result[0].status, result[0].gold_balance), (EconomyStatus::Applied as u8, 95));
        assert!(result[0].ledger_seq > 0);
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        let mut through = 0u64;
        while through < result[0].ledger_seq {
            assert!(std::time::Instant::now() < deadline, "the spend never became durable");
            assert_eq!(mmo_economy_durable_through(e, &mut through), MMO_OK);
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        assert!(calls.load(std::sync::atomic::Ordering::Relaxed) >= 1, "the callback ran after the durable group");
        mmo_engine_free(e);
    }
    std::fs::remove_dir_all(&dir).unwrap();
}
