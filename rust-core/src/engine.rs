//! The engine: one value that owns every service and is shared by every thread.
//!
//! `Engine` is `Send + Sync`; the network front holds it behind an `Arc` (or the FFI's
//! handle) and calls it from all workers at once. Each entry point touches only the services
//! it needs, in a fixed order (player record -> body lock -> one grid shard at a time;
//! player records -> economy shards in ascending order), and no entry point holds a lock
//! while calling into a service that could take a lock held by its caller, so there is no
//! deadlock cycle. The locks that exist are listed in each module's doc; none is taken by
//! every update.

use crate::capacity::CapacityGate;
use crate::combat::{Combat, DamageOutcome, ExpiryHeap, RaidError, RaidReport};
use crate::config::{ConfigError, CoreConfig, ITEM_KINDS};
use crate::economy::{Counterparty, Economy, EconomyAudit};
use crate::grid::{Grid, Member, NEVER_EXPIRES};
use crate::movement::{MoveRules, Movement};
use crate::players::{JoinTicket, PlayerRecord, Players, new_session_token};
use crate::records::{AoiEntry, EconomyOp, EconomyResult, EntityKind, EventKind, MoveEvent, MoveRecord, RaidSpawnRequest, RejectReason};
use crate::stats::{Counter, Stats, StatsSnapshot};
use crate::tick::{TickBoard, TickInfo};
use parking_lot::Mutex;
use std::collections::BinaryHeap;

/// Why a join was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum JoinError {
    /// `player_capacity` players are already joined.
    ServerFull,
    /// The spawn point is outside the world.
    OutOfBounds,
}

/// Why a leave was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LeaveError {
    /// No live player has that id (or another leave for it is already under way).
    UnknownPlayer,
    /// The session token does not match.
    WrongSession,
}

/// Why a whole batch was refused. Nothing in it was applied.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BatchError {
    /// The output buffer cannot hold the worst case for this batch; it needs `required`
    /// records. (Checked up front so a batch is never half applied.)
    OutputTooSmall {
        /// Records the output buffer must hold.
        required: usize,
    },
}

/// Why an area-of-interest query was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AoiError {
    /// No live player has that id.
    UnknownPlayer,
}

/// Why a damage call was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DamageError {
    /// The attacker is not a live player.
    UnknownAttacker,
    /// The attacker's session token does not match.
    WrongSession,
    /// The target is not a live player or raid object.
    UnknownTarget,
    /// Attacker and target are of the same faction.
    FriendlyFire,
    /// The amount is not positive.
    InvalidAmount,
}

/// What a move batch did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MoveBatchReport {
    /// Events written to the output buffer.
    pub events: usize,
    /// Moves applied.
    pub applied: usize,
    /// Moves refused (each has a `Reject` event).
    pub rejected: usize,
}

/// A read-only view of one player, for tests, admin tools and the conformance runner.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PlayerView {
    /// Position, metres.
    pub x_m: f32,
    /// Position, metres.
    pub y_m: f32,
    /// Last applied sequence.
    pub last_sequence: u32,
    /// Grid cell the player is registered in.
    pub cell: u32,
    /// Hit points.
    pub hp: i32,
    /// Faction.
    pub faction: u8,
    /// Gold.
    pub gold: u64,
    /// Items per kind.
    pub items: [u64; ITEM_KINDS],
}

/// The tick's private state. Only `Engine::tick` locks it.
struct TickState {
    /// Ticks run so far.
    tick: u32,
    /// Bursts waiting to expire, soonest first; pre-sized to the burst limit.
    expiry: ExpiryHeap,
}

/// The game state. See the crate docs for the path of a move through it.
pub struct Engine {
    config: CoreConfig,
    rules: MoveRules,
    /// Player records. Written by join/leave; read by every request.
    players: Players,
    /// Bodies. Written by each player's mover and leave; read by AoI.
    movement: Movement,
    /// The collision grid. Written by movers, raid spawn, the tick; read by queries.
    grid: Grid,
    /// Combatants, raid objects, bursts.
    combat: Combat,
    /// Wallets.
    economy: Economy,
    /// Tick counter and expiry heap. Locked by the tick driver only, once per tick.
    tick_state: Mutex<TickState>,
    /// Per-tick summary. Written by the tick, read by anyone.
    board: TickBoard,
    /// Counters. Written by every entry point, read by stats readers.
    stats: Stats,
}

/// Per-batch counts, summed locally and added to the striped counters once per batch.
#[derive(Default)]
struct MoveTally {
    applied: u64,
    rejected: [u64; 6],
    crossings: u64,
    contacts: u64,
    truncated: u64,
}

impl Engine {
    /// Validates `config`, builds every service and pre-warms the calling thread's arena
    /// shards (other threads call [`Engine::prewarm_current_thread`] when they start).
    pub fn new(config: CoreConfig) -> Result<Self, ConfigError> {
        config.validate()?;
        let engine = Self {
            rules: MoveRules {
                max_speed_m_per_ms: config.max_speed_m_per_s / 1000.0,
                speed_slack_m: config.speed_slack_m,
                clock_slack_ms: config.clock_slack_ms,
            },
            players: Players::new(config.player_capacity),
            movement: Movement::new(),
            grid: Grid::new(&config),
            combat: Combat::new(&config),
            economy: Economy::new(config.player_capacity),
            tick_state: Mutex::new(TickState { tick: 0, expiry: BinaryHeap::with_capacity(config.raid_burst_capacity as usize) }),
            board: TickBoard::new(),
            stats: Stats::new(),
            config,
        };
        engine.prewarm_current_thread();
        Ok(engine)
    }

    /// Grows the calling thread's arena shards to the configured capacities, so joins and raid
    /// spawns made from this thread reuse memory instead of allocating. Each network worker
    /// calls this once at start-up.
    pub fn prewarm_current_thread(&self) {
        let c = &self.config;
        self.players.prewarm_current_thread(c.player_capacity as usize);
        self.movement.prewarm_current_thread(c.player_capacity as usize);
        self.combat.prewarm_current_thread(c.player_capacity as usize, c.raid_object_capacity as usize);
    }

    /// The configuration in force.
    pub fn config(&self) -> &CoreConfig {
        &self.config
    }

    /// Worst-case events one move can produce (an ack and the contact cap).
    pub fn events_per_move_max(&self) -> usize {
        1 + self.config.contacts_per_move_max as usize
    }

    /// Joins a player at a spawn point.
    pub fn join(&self, x_m: f32, y_m: f32, faction: u8) -> Result<JoinTicket, JoinError> {
        if !self.grid.in_world(x_m, y_m) {
            self.stats.bump(Counter::JoinsRefusedBounds);
            return Err(JoinError::OutOfBounds);
        }
        if !self.players.admit() {
            self.stats.bump(Counter::JoinsRefusedFull);
            return Err(JoinError::ServerFull);
        }
        let Some(vacant) = self.players.vacant() else {
            self.players.unadmit();
            self.stats.bump(Counter::JoinsRefusedFull);
            return Err(JoinError::ServerFull);
        };
        let player_id = Players::id_of_vacant(&vacant);
        let session_token = new_session_token();
        let cell = self.grid.cell_of(x_m, y_m);
        let body_key = self.movement.spawn(player_id, x_m, y_m, cell).expect("body arena shard exhausted (capacity is gated)");
        let combatant_key = self
            .combat
            .add_combatant(player_id, faction, self.config.player_hp)
            .expect("combatant arena shard exhausted (capacity is gated)");
        let wallet = self.economy.open_wallet(self.config.starting_gold);
        // Registered in the grid before the record is visible, so the first move finds it.
        self.grid.insert(cell, Member { id: player_id, x_m, y_m, expires_tick: NEVER_EXPIRES, kind: EntityKind::Player });
        vacant.insert(PlayerRecord::new(session_token, body_key, combatant_key, wallet, faction));
        self.stats.bump(Counter::Joins);
        Ok(JoinTicket { player_id, session_token })
    }

    /// Removes a player: their body leaves the grid, their wallet is handed to persistence
    /// (the economy's departed totals), and their id goes stale.
    pub fn leave(&self, player_id: u64, session_token: u64) -> Result<(), LeaveError> {
        let refuse = |e| {
            self.stats.bump(Counter::LeavesRefused);
            Err(e)
        };
        let Some(player) = self.players.get(player_id) else { return refuse(LeaveError::UnknownPlayer) };
        if player.session_token != session_token {
            return refuse(LeaveError::WrongSession);
        }
        if !player.claim_leave() {
            return refuse(LeaveError::UnknownPlayer);
        }
        let (body_key, combatant_key, wallet) = (player.body_key, player.combatant_key, player.wallet);
        drop(player);
        if let Some(body) = self.movement.get(body_key) {
            let mut state = body.state.lock();
            state.alive = false;
            let removed = self.grid.remove(state.cell, player_id);
            debug_assert!(removed.is_some(), "a live body is registered in its cell");
        }
        self.movement.despawn(body_key);
        self.combat.remove_combatant(combatant_key);
        self.economy.close_wallet(wallet);
        self.players.remove(player_id);
        self.stats.bump(Counter::Leaves);
        Ok(())
    }

    /// Applies a batch of moves. `now_ms` is the server's clock when the batch was received.
    ///
    /// For each record, in order, writes either `Ack` followed by up to
    /// `contacts_per_move_max` `Contact` events, or one `Reject`. `out` must hold
    /// `batch.len() * events_per_move_max()` events; otherwise nothing is applied. Allocates
    /// nothing once the cells involved have been visited before.
    pub fn apply_moves(&self, batch: &[MoveRecord], now_ms: u64, out: &mut [MoveEvent]) -> Result<MoveBatchReport, BatchError> {
        let per_move = self.events_per_move_max();
        let required = batch.len().saturating_mul(per_move);
        if out.len() < required {
            self.stats.bump(Counter::MoveBatchesRefused);
            return Err(BatchError::OutputTooSmall { required });
        }
        let mut tally = MoveTally::default();
        let mut report = MoveBatchReport::default();
        for rec in batch {
            let slots = &mut out[report.events..report.events + per_move];
            match self.apply_move(rec, now_ms, slots, &mut tally) {
                Ok(written) => {
                    report.events += written;
                    report.applied += 1;
                }
                Err(reason) => {
                    slots[0] = MoveEvent {
                        player_id: rec.player_id,
                        sequence: rec.sequence,
                        kind: EventKind::Reject as u8,
                        detail: reason as u8,
                        ..MoveEvent::default()
                    };
                    tally.rejected[reason as usize] += 1;
                    report.events += 1;
                    report.rejected += 1;
                }
            }
        }
        let s = &self.stats;
        s.bump(Counter::MoveBatches);
        s.add(Counter::MovesApplied, tally.applied);
        for reason in [
            RejectReason::UnknownPlayer,
            RejectReason::WrongSession,
            RejectReason::StaleSequence,
            RejectReason::TooFast,
            RejectReason::OutOfBounds,
        ] {
            s.add(Counter::for_reject(reason), tally.rejected[reason as usize]);
        }
        s.add(Counter::CellCrossings, tally.crossings);
        s.add(Counter::ContactsReported, tally.contacts);
        s.add(Counter::ContactsTruncated, tally.truncated);
        Ok(report)
    }

    /// One move: rules, body, grid, then the proximity query. Returns events written.
    #[inline]
    fn apply_move(&self, rec: &MoveRecord, now_ms: u64, out: &mut [MoveEvent], tally: &mut MoveTally) -> Result<usize, RejectReason> {
        let player = self.players.get(rec.player_id).ok_or(RejectReason::UnknownPlayer)?;
        if player.session_token != rec.session_token {
            return Err(RejectReason::WrongSession);
        }
        let body = self.movement.get(player.body_key).ok_or(RejectReason::UnknownPlayer)?;
        drop(player);
        let (x, y) = (rec.x_m, rec.y_m);
        {
            let mut state = body.state.lock();
            if !state.alive {
                return Err(RejectReason::UnknownPlayer);
            }
            self.rules.check(&state, rec, now_ms, self.grid.in_world(x, y))?;
            state.x_m = x;
            state.y_m = y;
            state.facing_rad = rec.facing_rad;
            state.last_sequence = rec.sequence;
            state.last_client_ms = rec.client_time_ms;
            state.last_server_ms = now_ms;
            state.has_moved = true;
            state.payload = rec.payload;
            let cell = self.grid.cell_with_hysteresis(state.cell, x, y);
            if cell != state.cell {
                let moved = self.grid.relocate(state.cell, cell, rec.player_id, x, y);
                debug_assert!(moved, "a live body is registered in its cell");
                state.cell = cell;
                tally.crossings += 1;
            } else {
                let updated = self.grid.update_position(cell, rec.player_id, x, y);
                debug_assert!(updated, "a live body is registered in its cell");
            }
        }
        drop(body);
        tally.applied += 1;
        out[0] = MoveEvent { player_id: rec.player_id, sequence: rec.sequence, kind: EventKind::Ack as u8, ..MoveEvent::default() };
        let mut written = 1;
        let cap = out.len();
        self.grid.for_each_near(x, y, self.config.contact_radius_m, rec.player_id, |m, distance_m| {
            if written < cap {
                out[written] = MoveEvent {
                    player_id: rec.player_id,
                    other_id: m.id,
                    sequence: rec.sequence,
                    distance_m,
                    kind: EventKind::Contact as u8,
                    detail: m.kind as u8,
                    _reserved: [0; 6],
                };
                written += 1;
            } else {
                tally.truncated += 1;
            }
        });
        tally.contacts += (written - 1) as u64;
        Ok(written)
    }

    /// Spawns a raid burst. Whole or nothing.
    pub fn raid_spawn(&self, req: &RaidSpawnRequest) -> Result<RaidReport, RaidError> {
        match self.combat.raid_spawn(req, self.board.current_tick(), &self.grid) {
            Ok(report) => {
                self.stats.bump(Counter::RaidBursts);
                self.stats.add(Counter::RaidObjectsSpawned, u64::from(report.spawned));
                Ok(report)
            }
            Err(e) => {
                self.stats.bump(if e == RaidError::CapacityExceeded { Counter::RaidRefusedCapacity } else { Counter::RaidRefusedInvalid });
                Err(e)
            }
        }
    }

    /// Deals `amount` damage from a player to a player or raid object of another faction.
    pub fn damage(&self, attacker_id: u64, session_token: u64, target_id: u64, amount: i32) -> Result<DamageOutcome, DamageError> {
        let result = self.damage_inner(attacker_id, session_token, target_id, amount);
        match result {
            Ok(DamageOutcome::Killed) => {
                self.stats.bump(Counter::DamageApplied);
                self.stats.bump(Counter::Kills);
            }
            Ok(DamageOutcome::Hit { .. }) => self.stats.bump(Counter::DamageApplied),
            Ok(DamageOutcome::AlreadyDead) | Err(_) => self.stats.bump(Counter::DamageRejected),
        }
        result
    }

    fn damage_inner(&self, attacker_id: u64, session_token: u64, target_id: u64, amount: i32) -> Result<DamageOutcome, DamageError> {
        let attacker = self.players.get(attacker_id).ok_or(DamageError::UnknownAttacker)?;
        if attacker.session_token != session_token {
            return Err(DamageError::WrongSession);
        }
        let faction = attacker.faction;
        drop(attacker);
        if amount <= 0 {
            return Err(DamageError::InvalidAmount);
        }
        if let Some(object) = self.combat.object(target_id) {
            if object.faction == faction {
                return Err(DamageError::FriendlyFire);
            }
            return Ok(object.health.damage(amount));
        }
        let target = self.players.get(target_id).ok_or(DamageError::UnknownTarget)?;
        if target.faction == faction {
            return Err(DamageError::FriendlyFire);
        }
        let combatant = self.combat.combatant(target.combatant_key).ok_or(DamageError::UnknownTarget)?;
        Ok(combatant.health.damage(amount))
    }

    /// Applies a batch of economy operations, writing one result per operation, in order.
    /// `out` must hold `ops.len()` results; otherwise nothing is applied.
    pub fn apply_economy(&self, ops: &[EconomyOp], out: &mut [EconomyResult]) -> Result<usize, BatchError> {
        if out.len() < ops.len() {
            self.stats.bump(Counter::EconomyBatchesRefused);
            return Err(BatchError::OutputTooSmall { required: ops.len() });
        }
        for (op, slot) in ops.iter().zip(out.iter_mut()) {
            *slot = self.economy_one(op);
        }
        Ok(ops.len())
    }

    fn economy_one(&self, op: &EconomyOp) -> EconomyResult {
        use crate::records::EconomyStatus;
        let result = |status: EconomyStatus, duplicate: bool, gold_balance: u64| EconomyResult {
            transaction_id: op.transaction_id,
            player_id: op.player_id,
            gold_balance,
            status: status as u8,
            duplicate: duplicate as u8,
            _reserved: [0; 6],
        };
        let Some(player) = self.players.get(op.player_id) else {
            self.stats.bump(Counter::EconomyUnknownPlayer);
            return result(EconomyStatus::UnknownPlayer, false, 0);
        };
        if player.session_token != op.session_token {
            self.stats.bump(Counter::EconomyWrongSession);
            return result(EconomyStatus::WrongSession, false, 0);
        }
        let initiator = player.wallet;
        drop(player);
        let counterparty = match op.counterparty_id {
            0 => Counterparty::Absent,
            id if id == op.player_id => Counterparty::Initiator,
            id => self.players.get(id).map_or(Counterparty::Unknown, |c| Counterparty::Wallet(c.wallet)),
        };
        let outcome = self.economy.execute(op, initiator, counterparty);
        self.stats.bump(if outcome.duplicate { Counter::EconomyDuplicates } else { Counter::for_economy(outcome.status) });
        result(outcome.status, outcome.duplicate, outcome.gold_after)
    }

    /// Runs one tick at server time `now_ms`: expires due raid bursts and publishes the
    /// tick's summary. Meant for one tick driver; concurrent callers serialise.
    pub fn tick(&self, now_ms: u64) -> TickInfo {
        let mut state = self.tick_state.lock();
        let state = &mut *state;
        state.tick = state.tick.wrapping_add(1);
        self.combat.collect_new_bursts(&mut state.expiry);
        let expired = self.combat.expire_due(&mut state.expiry, state.tick, &self.grid);
        let info = TickInfo {
            tick: state.tick,
            now_ms,
            players_live: self.players.live(),
            objects_live: self.combat.live_objects(),
            objects_expired: expired.objects,
            bursts_live: self.combat.live_bursts(),
        };
        self.board.publish(&info);
        self.stats.bump(Counter::Ticks);
        self.stats.add(Counter::RaidObjectsDespawned, u64::from(expired.objects));
        info
    }

    /// The latest tick's summary (consistent: all fields from the same tick).
    pub fn tick_info(&self) -> TickInfo {
        self.board.read()
    }

    /// Writes the nearest entities around a player (at most `min(out.len(), aoi_k)`),
    /// nearest first; returns how many.
    pub fn area_of_interest(&self, player_id: u64, out: &mut [AoiEntry]) -> Result<usize, AoiError> {
        let player = self.players.get(player_id).ok_or(AoiError::UnknownPlayer)?;
        let body = self.movement.get(player.body_key).ok_or(AoiError::UnknownPlayer)?;
        drop(player);
        let (x, y, alive) = {
            let s = body.state.lock();
            (s.x_m, s.y_m, s.alive)
        };
        if !alive {
            return Err(AoiError::UnknownPlayer);
        }
        let k = out.len().min(self.config.aoi_k as usize);
        self.stats.bump(Counter::AoiQueries);
        Ok(self.grid.nearest_k(x, y, player_id, &mut out[..k]))
    }

    /// All counters (see [`crate::stats`] for the consistency they give).
    pub fn stats(&self) -> StatsSnapshot {
        self.stats.snapshot()
    }

    /// A consistent reading of the whole economy (locks every wallet shard briefly).
    pub fn economy_audit(&self) -> EconomyAudit {
        self.economy.audit()
    }

    /// One player's state, or `None` if not joined.
    pub fn player(&self, player_id: u64) -> Option<PlayerView> {
        let player = self.players.get(player_id)?;
        let body = self.movement.get(player.body_key)?;
        let state = *body.state.lock();
        if !state.alive {
            return None;
        }
        let hp = self.combat.combatant(player.combatant_key).map_or(0, |c| c.health.hp());
        let balance = self.economy.balance(player.wallet)?;
        Some(PlayerView {
            x_m: state.x_m,
            y_m: state.y_m,
            last_sequence: state.last_sequence,
            cell: state.cell,
            hp,
            faction: player.faction,
            gold: balance.gold,
            items: balance.items,
        })
    }

    /// Hit points of a raid object, or `None` if it is not alive.
    pub fn raid_object_hp(&self, object_id: u64) -> Option<i32> {
        self.combat.object(object_id).map(|o| o.health.hp())
    }

    /// The grid, for audits and tests (its queries are read-only).
    pub fn grid(&self) -> &Grid {
        &self.grid
    }

    /// Players joined now.
    pub fn live_players(&self) -> u32 {
        self.players.live()
    }

    /// Raid objects alive now.
    pub fn live_raid_objects(&self) -> u32 {
        self.combat.live_objects()
    }
}

// The engine is shared by every network thread.
const _: () = {
    const fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<Engine>();
    assert_send_sync::<CapacityGate>();
};
