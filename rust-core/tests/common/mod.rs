//! Fixtures shared by the integration tests.
#![allow(dead_code)]

use mmo_core::records::{EconomyKind, EconomyOp, EconomyResult, EconomyStatus, EventKind, MoveEvent, MoveRecord, RaidSpawnRequest};
use mmo_core::{CoreConfig, Engine};

/// A small engine: a 1 km world, modest capacities, so tests start fast.
pub fn small_config() -> CoreConfig {
    CoreConfig {
        world_size_m: 1024.0,
        player_capacity: 256,
        raid_object_capacity: 16_384,
        raid_burst_capacity: 16,
        ..CoreConfig::default()
    }
}

pub fn engine() -> Engine {
    Engine::new(small_config()).unwrap()
}

/// A joined player: id, token, and the slot hint the front would pass back with its moves.
#[derive(Clone, Copy, Debug)]
pub struct Who {
    pub id: u64,
    pub token: u64,
    pub slot_hint: u32,
}

impl Who {
    pub fn of(t: mmo_core::players::JoinTicket) -> Who {
        Who { id: t.player_id, token: t.session_token, slot_hint: t.slot_hint }
    }
}

pub fn join(e: &Engine, x: f32, y: f32, faction: u8) -> Who {
    Who::of(e.join(x, y, faction).unwrap())
}

pub fn mv(who: Who, seq: u32, client_ms: u32, x: f32, y: f32) -> MoveRecord {
    MoveRecord {
        player_id: who.id,
        session_token: who.token,
        sequence: seq,
        client_time_ms: client_ms,
        x_m: x,
        y_m: y,
        slot_hint: who.slot_hint,
        ..Default::default()
    }
}

/// Applies moves and returns the written events.
pub fn apply(e: &Engine, batch: &[MoveRecord], now_ms: u64) -> Vec<MoveEvent> {
    let mut out = vec![MoveEvent::default(); batch.len() * e.events_per_move_max()];
    let report = e.apply_moves(batch, now_ms, &mut out).unwrap();
    out.truncate(report.events);
    out
}

pub fn kinds(events: &[MoveEvent]) -> Vec<EventKind> {
    events.iter().map(|ev| ev.event_kind().unwrap()).collect()
}

pub fn op(who: Who, txn: u64, kind: EconomyKind, counterparty: u64, gold: i64, item_kind: u16, item_count: i32) -> EconomyOp {
    EconomyOp {
        player_id: who.id,
        session_token: who.token,
        transaction_id: txn,
        counterparty_id: counterparty,
        gold,
        item_count,
        item_kind,
        kind: kind as u8,
        _reserved: 0,
    }
}

pub fn run_op(e: &Engine, o: EconomyOp) -> EconomyResult {
    let mut out = [EconomyResult::default()];
    e.apply_economy(&[o], &mut out).unwrap();
    out[0]
}

pub fn status(r: &EconomyResult) -> EconomyStatus {
    EconomyStatus::try_from(r.status).unwrap()
}

pub fn raid(x: f32, y: f32, count: u32, lifetime_ms: u32) -> RaidSpawnRequest {
    RaidSpawnRequest {
        center_x_m: x,
        center_y_m: y,
        half_extent_m: 40.0,
        count,
        lifetime_ms,
        hp: 50,
        seed: 7,
        kind: mmo_core::records::EntityKind::Add as u8,
        faction: 9,
        _reserved: [0; 2],
    }
}

/// The one raid object of a 1-object burst at (x, y) with `hp` and `faction`, found through a
/// player's area of interest (the player joins, looks and leaves).
pub fn one_object(e: &Engine, x: f32, y: f32, hp: i32, faction: u8) -> u64 {
    let mut r = raid(x, y, 1, 60_000);
    r.half_extent_m = 0.0;
    r.hp = hp;
    r.faction = faction;
    e.raid_spawn(&r).unwrap();
    let seer = join(e, x, y, 77);
    e.tick(1);
    let mut aoi = [mmo_core::records::AoiEntry::default(); 4];
    let n = e.area_of_interest(seer.id, &mut aoi).unwrap();
    let id = aoi[..n].iter().find(|a| a.kind == mmo_core::records::EntityKind::Add as u8).expect("the object is in sight").entity_id;
    e.leave(seer.id, seer.token).unwrap();
    id
}

/// A fresh directory under the system's temporary directory (an economy store's), named for
/// `name` and a random suffix; the caller removes it.
pub fn temp_dir(name: &str) -> std::path::PathBuf {
    let mut bytes = [0u8; 8];
    getrandom::fill(&mut bytes).unwrap();
    let dir = std::env::temp_dir().join(format!("mmo-{name}-{:x}", u64::from_le_bytes(bytes)));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}
