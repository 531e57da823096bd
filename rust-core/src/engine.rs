//! The engine: one value that owns every service and is shared by every thread.
//!
//! `Engine` is `Send + Sync`; the network front holds it behind an `Arc` (or the FFI's
//! handle) and calls it from all workers at once. Each entry point touches only the services
//! it needs, in a fixed order (player record -> body lock -> one grid shard at a time;
//! player records -> economy wallets in ascending arena key -> one economy home), and no
//! entry point holds a lock while calling into a service that could take a lock held by its
//! caller, so there is no deadlock cycle. The locks that exist are listed in each module's
//! doc; none is taken by every update, and every wait on one is counted ([`crate::locks`]).
//!
//! The area of interest is answered from the tick's published world snapshot
//! ([`crate::snapshot`]), never from the live grid: [`Engine::tick`] builds and publishes it,
//! [`Engine::area_of_interest`] and [`Engine::area_of_interest_batch`] pin it.

use crate::capacity::CapacityGate;
use crate::combat::{Combat, DamageOutcome, ExpiryHeap, RaidError, RaidReport, RespawnBound};
use crate::config::{AOI_K_MAX, ConfigError, CoreConfig, ITEM_KINDS};
use crate::durability::{CommitPolicy, Durability};
use crate::economy::{AccountError, Counterparty, Economy, EconomyAudit, LootCreditError, Outcome, TradeClose, WalletHandle};
use crate::grid::{Grid, ObjectMember, prefetch_lines};
use crate::ledger::EconomyStore;
use crate::locks::{LockKind, LockWaits};
use crate::loot::{LOOT_CLAIMED, LootContents, LootTable};
use crate::movement::{BodyState, CarriedBody, MoveRules, Movement};
use crate::players::{JoinTicket, PlayerGuard, PlayerRecord, Players, new_session_token};
use crate::records::{
    AoiEntry, AttackError, EconomyOp, EconomyResult, EconomyStatus, EntityKind, EventKind, LootError, MoveEvent, MoveRecord,
    RaidSpawnRequest, RejectReason, TradeAnswer, TradeOffer, TradeStack,
};
use crate::reserved::ReservedTable;
use crate::snapshot::{
    AoiHint, AoiLook, NOT_IN_SNAPSHOT, PlayerInSnapshot, SnapshotBoard, SnapshotBuilder, SnapshotGeometry, SnapshotWriter, WorldSnapshot,
    hint_reach_m,
};
use crate::stats::{Counter, Stats, StatsSnapshot};
use crate::tick::{TickBoard, TickInfo};
use dashmap::DashMap;
use parking_lot::Mutex;
use smallvec::SmallVec;
use std::collections::BinaryHeap;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

/// Why a join was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum JoinError {
    /// `player_capacity` players are already joined.
    ServerFull,
    /// The spawn point is outside the world.
    OutOfBounds,
    /// A live session already uses the account.
    AccountInSession,
    /// A store is open and the join names no account (0).
    AccountRequired,
    /// The economy's journals are full (its disk is behind): try again.
    StorageBusy,
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
    /// The player is live but not in the latest world snapshot: it joined after the last tick
    /// (or no tick has run yet). Its area of interest exists from the next tick on.
    NotInSnapshot,
}

/// What an area-of-interest batch read.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct AoiBatchInfo {
    /// Tick of the snapshot the batch read (0: none published yet).
    pub tick: u32,
    /// Server time of that tick, milliseconds.
    pub now_ms: u64,
    /// Players of the batch found in the snapshot.
    pub found: u32,
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

impl AttackError {
    fn counter(self) -> Counter {
        match self {
            AttackError::UnknownPlayer => Counter::AttackRejectedUnknownPlayer,
            AttackError::WrongSession => Counter::AttackRejectedWrongSession,
            AttackError::AttackerDead => Counter::AttackRejectedAttackerDead,
            AttackError::UnknownTarget => Counter::AttackRejectedUnknownTarget,
            AttackError::FriendlyFire => Counter::AttackRejectedFriendlyFire,
            AttackError::TargetDead => Counter::AttackRejectedTargetDead,
            AttackError::OutOfRange => Counter::AttackRejectedOutOfRange,
            AttackError::Cooldown => Counter::AttackRejectedCooldown,
        }
    }
}

/// What a landed attack did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AttackReport {
    /// Hit points taken (the configured `attack_damage`, or what the target had left).
    pub damage: i32,
    /// Hit points the target has left (0 when killed).
    pub hp_left: i32,
    /// Whether this attack brought the target to zero (exactly one attack per target does).
    pub killed: bool,
    /// What the target is: a player or a raid object's kind.
    pub target_kind: EntityKind,
    /// Whether the kill dropped loot (a killed add does; the killer may claim it).
    pub loot_dropped: bool,
}

impl LootError {
    fn counter(self) -> Counter {
        match self {
            LootError::UnknownPlayer => Counter::LootRejectedUnknownPlayer,
            LootError::WrongSession => Counter::LootRejectedWrongSession,
            LootError::UnknownLoot => Counter::LootRejectedUnknownLoot,
            LootError::NoLoot => Counter::LootRejectedNoLoot,
            LootError::NotYours => Counter::LootRejectedNotYours,
            LootError::OutOfRange => Counter::LootRejectedOutOfRange,
            LootError::WalletFull => Counter::LootRejectedWalletFull,
            LootError::StorageBusy => Counter::LootRejectedStorageBusy,
            LootError::Dead => Counter::LootRejectedDead,
        }
    }
}

/// What [`Engine::open_store`] found.
#[derive(Clone, Debug)]
pub struct Recovery {
    /// Accounts loaded.
    pub accounts: u64,
    /// Ledger entries the store had applied since it was created.
    pub entries: u64,
    /// What the store repaired while opening (an interrupted commit rolled back); empty when
    /// it opened clean.
    pub repairs: Vec<String>,
    /// How long opening, loading and checking the books took.
    pub elapsed: Duration,
}

/// What a loot claim got.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LootReport {
    /// The loot's contents (the server's roll; the same on a repeat).
    pub contents: LootContents,
    /// The claimer's gold after the claim.
    pub gold_after: u64,
    /// `true` when the claimer had already claimed this loot: this answer repeats it and
    /// credited nothing.
    pub repeat: bool,
    /// Tell it only once the economy is durable through this (0: at once).
    pub ledger_seq: u64,
}

/// The result record of an economy request.
fn economy_result(transaction_id: u64, player_id: u64, o: &Outcome) -> EconomyResult {
    EconomyResult {
        transaction_id,
        player_id,
        gold_balance: o.gold_after,
        status: o.status as u8,
        duplicate: u8::from(o.duplicate),
        _reserved: [0; 6],
        ledger_seq: o.ledger_seq,
    }
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
    /// The right to publish world snapshots.
    writer: SnapshotWriter,
    /// Scratch for building snapshots (grows to the world's size once).
    builder: SnapshotBuilder,
    /// Scratch for one cell's expired raid objects (grows to the largest cell's once).
    expired: Vec<ObjectMember>,
    /// One bit per grid cell: cells already gathered into this tick's snapshot (cleared again
    /// after each build).
    gathered: Vec<u64>,
}

/// The game state. See the crate docs for the path of a move through it.
pub struct Engine {
    config: CoreConfig,
    rules: MoveRules,
    /// What a killed add drops. Read by claims.
    loot_table: LootTable,
    /// Player records. Written by join/leave; read by every request.
    players: Players,
    /// Bodies by slot. Written by each player's mover, join and leave.
    movement: Movement,
    /// The collision grid and player positions. Written by movers, raid spawn, the tick; read
    /// by contact queries and the snapshot build.
    grid: Grid,
    /// The published world snapshot. Written by the tick; read by area-of-interest queries.
    snapshots: SnapshotBoard<WorldSnapshot>,
    /// Each movement slot's area-of-interest hint. Written and read by the worker computing the
    /// slot's player's area of interest, cleared by the join that takes the slot.
    aoi_hints: ReservedTable<AoiHint>,
    /// Combatants, raid objects, bursts.
    combat: Combat,
    /// The committer, once [`Engine::open_store`] started it; stopped (after a last group) when
    /// the engine drops. Declared before `economy` so it drops first: the committer is joined
    /// and lets go of its reference, and the economy is freed on the dropping thread.
    durability: Mutex<Option<Durability>>,
    /// Wallets. Shared with the committer thread when a store is open.
    economy: Arc<Economy>,
    /// Tick counter and expiry heap. Locked by the tick driver only, once per tick.
    tick_state: Mutex<TickState>,
    /// Per-tick summary. Written by the tick, read by anyone.
    board: TickBoard,
    /// Counters. Written by every entry point and the committer, read by stats readers.
    stats: Arc<Stats>,
    /// What each account's last session left its player (hit points, and what its body
    /// carries: the attack cooldown, the distance budget, when it respawns if dead), by account
    /// id, so a reconnect changes none of it. Written by leave (insert, before the account's
    /// wallet is released) and taken by the account's next join (remove, after its wallet is
    /// bound): an account has one session at a time, so the two never race for one account.
    /// One entry per account that has left, as the economy keeps one wallet per account.
    saved_players: DashMap<u64, SavedPlayer>,
    /// When the next dead body (`Body::respawn_at_ms`) may be due: lowered by whoever marks a
    /// body dead (a kill, a join resuming a dead account), taken by the tick before its sweep
    /// ([`RespawnBound`]'s protocol).
    next_respawn: RespawnBound,
    /// The players whose session ended in combat while their body stays in the world: player
    /// id to when the linger ends (`logout_linger_ms` after the leave, by the last tick's
    /// clock; the first tick at or after it ends it). Inserted by the leave that began the linger (after
    /// winning [`PlayerRecord::begin_linger`]), removed by whoever ends it (the tick, or the
    /// account's next join, after winning [`PlayerRecord::claim_linger_end`]); read by the tick.
    lingering: DashMap<u64, u64>,
    /// The lingering player of each account (account id to player id), for the account's next
    /// join to end the linger and take up where it left off. Written beside `lingering`.
    lingering_accounts: DashMap<u64, u64>,
    /// When the earliest linger may end: lowered by the leave that begins one, taken by the
    /// tick before it looks through `lingering` (the same protocol as `next_respawn`).
    next_linger_end: RespawnBound,
}

/// At most this many lingers end in one tick; the rest end at the next (a bound on the
/// tick's work, and the size of the stack array it gathers them in).
const LINGERS_ENDED_PER_TICK_MAX: usize = 256;

/// What a player's account keeps between its sessions ([`Engine::leave`] to the next
/// [`Engine::join_account`]).
#[derive(Clone, Copy, Debug)]
struct SavedPlayer {
    /// Hit points (0: dead, and `body.respawn_at_ms` says until when).
    hp: i32,
    /// What the body carries over.
    body: CarriedBody,
}

/// Per-batch counts, summed locally and added to the striped counters once per batch.
#[derive(Default)]
struct MoveTally {
    applied: u64,
    rejected: [u64; 7],
    crossings: u64,
    contacts: u64,
    truncated: u64,
    grid_waits: LockWaits,
    body_waits: LockWaits,
    moves_waited_grid: u64,
    moves_waited_body: u64,
}

impl Engine {
    /// Validates `config` and builds every service. Nothing is pre-warmed: `player_capacity`
    /// and `raid_object_capacity` are admission limits, not reservations. The arenas grow
    /// (sharded-slab pages, each twice the last, never moved or freed) as players join and
    /// raids spawn, on the thread that inserts, and keep their pages for reuse; the
    /// capacity-sized tables are [`crate::reserved::ReservedTable`]s, resident only where used.
    pub fn new(config: CoreConfig) -> Result<Self, ConfigError> {
        config.validate()?;
        let geometry = SnapshotGeometry::new(config.world_size_m, config.snapshot_cell_m, config.aoi_radius_m);
        let (snapshots, writer) = SnapshotBoard::new(|| WorldSnapshot::empty(geometry));
        let cells = (config.cells_per_side() as usize).pow(2);
        let engine = Self {
            rules: MoveRules::new(config.max_speed_m_per_s, config.clock_slack_ms, config.speed_slack_m),
            loot_table: LootTable::new(&config),
            players: Players::new(config.player_capacity),
            movement: Movement::new(config.player_capacity),
            grid: Grid::new(&config),
            snapshots,
            // SAFETY: all-zero bytes are an `AoiHint` (two atomic integers; a zero reach is "no
            // hint").
            aoi_hints: unsafe { ReservedTable::new_zeroed(config.player_capacity as usize) },
            combat: Combat::new(&config),
            durability: Mutex::new(None),
            economy: Arc::new(Economy::new(config.player_capacity)),
            tick_state: Mutex::new(TickState {
                tick: 0,
                expiry: BinaryHeap::with_capacity(config.raid_burst_capacity as usize),
                writer,
                builder: SnapshotBuilder::default(),
                expired: Vec::new(),
                gathered: vec![0; cells.div_ceil(64)],
            }),
            board: TickBoard::new(),
            stats: Arc::new(Stats::new()),
            saved_players: DashMap::new(),
            next_respawn: RespawnBound::new(),
            lingering: DashMap::new(),
            lingering_accounts: DashMap::new(),
            next_linger_end: RespawnBound::new(),
            config,
        };
        Ok(engine)
    }

    /// Opens the economy's store in `data_dir` (`economy.redb` and its commit log's segments,
    /// created if absent, [`crate::commit_log`]), loads
    /// every account's wallet from it and starts the committer: from then on every change to a
    /// wallet is durable before its result may be told (see [`crate::ledger`]), and joins must
    /// name an account. `on_durable` runs on the committer thread after each durable group.
    /// Call once, before any join.
    pub fn open_store(&self, data_dir: &Path, policy: CommitPolicy, on_durable: Box<dyn Fn() + Send>) -> Result<Recovery, String> {
        let store = crate::commit_log::LoggedStore::open_with(data_dir, policy.log_segment_bytes).map_err(|e| e.to_string())?;
        self.open_store_with(Box::new(store), policy, on_durable)
    }

    /// [`Engine::open_store`] with any store.
    pub fn open_store_with(
        &self,
        mut store: Box<dyn EconomyStore>,
        policy: CommitPolicy,
        on_durable: Box<dyn Fn() + Send>,
    ) -> Result<Recovery, String> {
        let started = Instant::now();
        let mut durability = self.durability.lock();
        if durability.is_some() || self.players.live() != 0 {
            return Err("the store opens once, before any player joins".into());
        }
        let recovered = store.load().map_err(|e| format!("reading the economy store: {e}"))?;
        // A failed restore leaves nothing behind; so does a committer that cannot start.
        let undo = self.economy.restore(&recovered)?;
        let mut books = self.economy.books();
        books.entries = recovered.books.entries;
        let recovery = Recovery {
            accounts: recovered.wallets.len() as u64,
            entries: recovered.books.entries,
            repairs: recovered.repairs,
            elapsed: started.elapsed(),
        };
        match crate::durability::start(Arc::clone(&self.economy), Arc::clone(&self.stats), store, books, policy, on_durable) {
            Ok(started) => *durability = Some(started),
            Err(e) => {
                self.economy.undo_restore(undo);
                return Err(format!("starting the committer: {e}"));
            }
        }
        Ok(recovery)
    }

    /// Every economy result whose `ledger_seq` is at most this may be told (with no store:
    /// `u64::MAX`).
    pub fn economy_durable_through(&self) -> u64 {
        let ledger = self.economy.ledger();
        if ledger.enabled() { ledger.durable_through() } else { u64::MAX }
    }

    /// The configuration in force.
    pub fn config(&self) -> &CoreConfig {
        &self.config
    }

    /// Worst-case events one move can produce (an ack and the contact cap).
    pub fn events_per_move_max(&self) -> usize {
        1 + self.config.contacts_per_move_max as usize
    }

    /// Joins a player with no account (a wallet for this session only) at a spawn point.
    /// Refused `AccountRequired` once a store is open.
    pub fn join(&self, x_m: f32, y_m: f32, faction: u8) -> Result<JoinTicket, JoinError> {
        self.join_account(0, x_m, y_m, faction)
    }

    /// Joins a player of `account` at a spawn point: the account's wallet is resumed (the
    /// first join creates it with the starting gold). One live session per account.
    pub fn join_account(&self, account: u64, x_m: f32, y_m: f32, faction: u8) -> Result<JoinTicket, JoinError> {
        if !self.grid.in_world(x_m, y_m) {
            self.stats.bump(Counter::JoinsRefusedBounds);
            return Err(JoinError::OutOfBounds);
        }
        // The account's player still lingering from its last session: that session's leave
        // ends now (its state saved as a leave saves it), and this join takes up from it,
        // where the body stood, whatever spawn point was asked for.
        let (mut x_m, mut y_m) = (x_m, y_m);
        if account != 0
            && let Some(player_id) = self.lingering_accounts.get(&account).map(|entry| *entry)
        {
            if let Some((x, y)) = self.end_linger(player_id) {
                self.stats.bump(Counter::LingersResumed);
                (x_m, y_m) = (x, y);
            } else if self.players.get(player_id).is_none() {
                // An entry left naming a player already gone (see `leave`).
                self.lingering_accounts.remove_if(&account, |_, lingering_id| *lingering_id == player_id);
            }
        }
        if !self.players.admit() {
            self.stats.bump(Counter::JoinsRefusedFull);
            return Err(JoinError::ServerFull);
        }
        let (wallet, created) = match self.economy.open_account(account, self.config.starting_gold) {
            Ok(opened) => opened,
            Err(e) => {
                self.players.unadmit();
                self.stats.bump(Counter::JoinsRefusedAccount);
                return Err(match e {
                    AccountError::InSession => JoinError::AccountInSession,
                    AccountError::Required => JoinError::AccountRequired,
                    AccountError::StorageBusy => JoinError::StorageBusy,
                    AccountError::Full => JoinError::ServerFull,
                });
            }
        };
        let Some(vacant) = self.players.vacant() else {
            self.economy.release(wallet);
            self.players.unadmit();
            self.stats.bump(Counter::JoinsRefusedFull);
            return Err(JoinError::ServerFull);
        };
        if account != 0 {
            self.stats.bump(if created { Counter::AccountsCreated } else { Counter::AccountsResumed });
        }
        let player_id = Players::id_of_vacant(&vacant);
        let session_token = new_session_token();
        let cell = self.grid.cell_of(x_m, y_m);
        let slot = self.movement.claim_slot().expect("a movement slot for every admitted player");
        // An account's player comes back as its last session left it (the wallet is bound to
        // this join now, so no other session of the account can be saving or taking this).
        let saved = if account != 0 { self.saved_players.remove(&account).map(|(_, s)| s) } else { None };
        let saved = saved.unwrap_or(SavedPlayer { hp: self.config.player_hp, body: CarriedBody::default() });
        let combatant_key =
            self.combat.add_combatant(player_id, faction, saved.hp).expect("combatant arena shard exhausted (capacity is gated)");
        // Position, the slot's id (which the snapshot build then sees) and cell first, then
        // the body, then the record: the first move finds everything in place.
        let mut waits = LockWaits::default();
        self.grid.insert_player(cell, player_id, slot, x_m, y_m, &mut waits);
        self.aoi_hints[slot as usize].clear();
        self.movement.spawn(slot, player_id, session_token, (x_m, y_m), cell, &saved.body);
        if saved.body.respawn_at_ms != 0 {
            self.next_respawn.lower(saved.body.respawn_at_ms);
        }
        vacant.insert(PlayerRecord::new(session_token, slot, combatant_key, wallet, faction, account));
        self.stats.add_waits(LockKind::Grid, waits);
        self.stats.bump(Counter::Joins);
        Ok(JoinTicket { player_id, session_token, slot_hint: Movement::slot_hint(slot), x_m, y_m })
    }

    /// Ends a player's session. Out of combat (no landed hit between it and another player
    /// within `logout_linger_ms`, by the last tick's clock) the player is removed at once:
    /// its body leaves the grid, its wallet is handed to persistence (the economy's departed
    /// totals), and its id goes stale. In combat, only the session ends (its token is
    /// refused from now on) and the body lingers where it stands, attackable and killable,
    /// until the first tick at or after the last tick's time plus `logout_linger_ms`, or the
    /// account's next join; then it is removed as above.
    pub fn leave(&self, player_id: u64, session_token: u64) -> Result<(), LeaveError> {
        let refuse = |e| {
            self.stats.bump(Counter::LeavesRefused);
            Err(e)
        };
        let Some(player) = self.players.get(player_id) else { return refuse(LeaveError::UnknownPlayer) };
        if player.session_token != session_token {
            return refuse(LeaveError::WrongSession);
        }
        let now_ms = self.board.read().now_ms;
        let linger_ms = u64::from(self.config.logout_linger_ms);
        let mut body_waits = LockWaits::default();
        if linger_ms > 0 {
            let body = self.movement.body(player.slot);
            let mut state = body_waits.lock(&body.state);
            // Decided under the body's lock, which every hit's mark takes: a hit that lands
            // before this look holds the player; one after it finds the body leaving or
            // lingering, and a lingering body is still in the world to be hit.
            if state.alive && state.player_id == player_id && state.combat_until_ms > now_ms && player.begin_linger() {
                // The session's token is refused from now on: moves check the body's copy,
                // replaced by one nobody holds; every other call checks the record's stage.
                state.session_token = new_session_token();
                drop(state);
                let until_ms = now_ms.saturating_add(linger_ms);
                let account = player.account;
                drop(player);
                // `lingering` first: a join finds the player only through the account's entry,
                // so whoever ends the linger finds both entries to remove. (A tick can end it
                // in between only if this thread stalls for the whole linger: the account's
                // entry it then leaves names a player gone, which the account's next join
                // clears.)
                self.lingering.insert(player_id, until_ms);
                if account != 0 {
                    self.lingering_accounts.insert(account, player_id);
                }
                self.next_linger_end.lower(until_ms);
                self.stats.add_waits(LockKind::Body, body_waits);
                self.stats.bump(Counter::Leaves);
                self.stats.bump(Counter::LeavesLingered);
                return Ok(());
            }
        }
        if !player.claim_leave() {
            self.stats.add_waits(LockKind::Body, body_waits);
            return refuse(LeaveError::UnknownPlayer);
        }
        self.remove_player(player_id, player, body_waits);
        self.stats.bump(Counter::Leaves);
        Ok(())
    }

    /// Ends the linger of `player_id` now: where the body stood, for the one caller (the tick,
    /// or the account's next join) that wins [`PlayerRecord::claim_linger_end`], which removes
    /// the player as an immediate leave does; `None` for every other.
    fn end_linger(&self, player_id: u64) -> Option<(f32, f32)> {
        let player = self.players.get(player_id)?;
        if !player.claim_linger_end() {
            return None;
        }
        self.lingering.remove(&player_id);
        if player.account != 0 {
            self.lingering_accounts.remove_if(&player.account, |_, lingering_id| *lingering_id == player_id);
        }
        Some(self.remove_player(player_id, player, LockWaits::default()))
    }

    /// Ends every linger due by `now_ms` (the tick's), at most
    /// [`LINGERS_ENDED_PER_TICK_MAX`] a tick (the rest at the next; which of more than that
    /// end first is unspecified). Looks through the lingering players only once the earliest
    /// end is due ([`RespawnBound`]'s protocol). Returns how many it ended.
    fn lingers_due(&self, now_ms: u64) -> u64 {
        if !self.next_linger_end.take_if_due(now_ms) {
            return 0;
        }
        let mut due = [0u64; LINGERS_ENDED_PER_TICK_MAX];
        let mut count = 0;
        // Gathered first, ended after: ending one removes it from the map being read.
        for entry in self.lingering.iter() {
            let until_ms = *entry.value();
            if until_ms <= now_ms && count < due.len() {
                due[count] = *entry.key();
                count += 1;
            } else {
                self.next_linger_end.lower(until_ms);
            }
        }
        let mut ended = 0;
        for &player_id in &due[..count] {
            if self.end_linger(player_id).is_some() {
                ended += 1;
            } else if self.players.get(player_id).is_none() {
                // Ended meanwhile by its account's join, which removes the entry itself; never
                // left behind for the next sweep (player ids are never reused).
                self.lingering.remove(&player_id);
            }
        }
        ended
    }

    /// Takes a player whose leave (or linger's end) this caller won, holding its record, out
    /// of the world: the body off the grid, its state saved for its account, its wallet
    /// released, its record removed. Returns where the body stood.
    fn remove_player(&self, player_id: u64, player: PlayerGuard<'_>, mut body_waits: LockWaits) -> (f32, f32) {
        let (slot, combatant_key, wallet, account) = (player.slot, player.combatant_key, player.wallet, player.account);
        drop(player);
        let mut grid_waits = LockWaits::default();
        let (saved, stood) = {
            let body = self.movement.body(slot);
            let mut state = body_waits.lock(&body.state);
            debug_assert!(state.alive && state.player_id == player_id, "a live record's slot holds its body");
            state.alive = false;
            let removed = self.grid.remove_player(state.cell, slot, &mut grid_waits);
            debug_assert!(removed, "a live body is registered in its cell");
            // Every hit point is taken as it is read: a hit after this finds the player dead.
            let hp = self.combat.combatant(combatant_key).map_or(0, |c| c.health.take_all());
            let mut respawn_at_ms = body.respawn_at_ms.swap(0, Ordering::AcqRel);
            if respawn_at_ms == 0 && hp == 0 {
                // Killed, and the kill found the body gone before it could say until when.
                respawn_at_ms = self.respawn_at(self.board.read().now_ms);
            }
            (SavedPlayer { hp, body: CarriedBody::of(&state, respawn_at_ms) }, (state.x_m, state.y_m))
        };
        self.movement.release(slot);
        self.combat.remove_combatant(combatant_key);
        // Saved before the wallet is released: the account's next join binds the wallet first.
        if account != 0 {
            self.saved_players.insert(account, saved);
        }
        self.economy.release(wallet);
        self.players.remove(player_id);
        self.stats.add_waits(LockKind::Grid, grid_waits);
        self.stats.add_waits(LockKind::Body, body_waits);
        stood
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
            RejectReason::Dead,
        ] {
            s.add(Counter::for_reject(reason), tally.rejected[reason as usize]);
        }
        s.add(Counter::CellCrossings, tally.crossings);
        s.add(Counter::ContactsReported, tally.contacts);
        s.add(Counter::ContactsTruncated, tally.truncated);
        s.add_waits(LockKind::Grid, tally.grid_waits);
        s.add_waits(LockKind::Body, tally.body_waits);
        s.add(Counter::MovesWaitedGrid, tally.moves_waited_grid);
        s.add(Counter::MovesWaitedBody, tally.moves_waited_body);
        Ok(report)
    }

    /// One move: rules, body, position (and cell on a crossing), then the proximity query.
    /// Returns events written.
    #[inline]
    fn apply_move(&self, rec: &MoveRecord, now_ms: u64, out: &mut [MoveEvent], tally: &mut MoveTally) -> Result<usize, RejectReason> {
        let (x, y) = (rec.x_m, rec.y_m);
        let (grid_waited, body_waited) = (tally.grid_waits.contended, tally.body_waits.contended);
        // The body's lock is held for this block only; the contact query after it reads the grid.
        let slot = {
            // The front passes back the slot the join ticket named: the body's lock then says
            // whose the body is, with no arena lookup (a sharded-slab `get` and its cache miss
            // on every move). A hint naming no live body of this player (none, out of range,
            // stale after a leave, or hostile) falls back to the player record.
            let hinted = self.movement.hinted_slot(rec.slot_hint).and_then(|slot| {
                let state = tally.body_waits.lock(&self.movement.body(slot).state);
                (state.alive && state.player_id == rec.player_id).then_some((slot, state))
            });
            let (slot, mut state) = match hinted {
                Some(found) => found,
                None => {
                    let slot = self.players.get(rec.player_id).ok_or(RejectReason::UnknownPlayer)?.slot;
                    let state = tally.body_waits.lock(&self.movement.body(slot).state);
                    // The record was looked up without holding it: a leave (and a join reusing
                    // the slot) may have happened since. The body says whose it is now.
                    if !state.alive || state.player_id != rec.player_id {
                        return Err(RejectReason::UnknownPlayer);
                    }
                    (slot, state)
                }
            };
            // The body keeps its session's token (set with its id at join), so both paths
            // check the same one.
            if state.session_token != rec.session_token {
                return Err(RejectReason::WrongSession);
            }
            if self.movement.body(slot).dead() {
                return Err(RejectReason::Dead);
            }
            let budget = self.rules.check(&state, rec, now_ms, self.grid.in_world(x, y))?;
            state.x_m = x;
            state.y_m = y;
            state.facing_rad = rec.facing_rad;
            state.last_sequence = rec.sequence;
            state.budget_um = budget.left_um;
            state.budget_ms = budget.at_ms;
            state.has_moved = true;
            state.budget_set = true;
            state.payload = rec.payload;
            // A move in its cell writes only its position: no cell lock, no search.
            self.grid.positions().set(slot, x, y);
            let cell = self.grid.cell_with_hysteresis(state.cell, x, y);
            if cell != state.cell {
                let moved = self.grid.relocate_player(state.cell, cell, slot, &mut tally.grid_waits);
                debug_assert!(moved, "a live body is registered in its cell");
                state.cell = cell;
                tally.crossings += 1;
            }
            slot
        };
        tally.applied += 1;
        out[0] = MoveEvent { player_id: rec.player_id, sequence: rec.sequence, kind: EventKind::Ack as u8, ..MoveEvent::default() };
        let mut written = 1;
        let cap = out.len();
        // Contacts fill the buffer; the grid counts the ones past its end without visiting them.
        let near =
            self.grid.for_each_near(x, y, self.config.contact_radius_m, slot, &mut tally.grid_waits, |other_id, kind, distance_m2| {
                if written < cap {
                    out[written] = MoveEvent {
                        player_id: rec.player_id,
                        other_id,
                        sequence: rec.sequence,
                        distance_m: distance_m2.sqrt(),
                        kind: EventKind::Contact as u8,
                        detail: kind as u8,
                        _reserved: [0; 6],
                    };
                    written += 1;
                }
                written < cap
            });
        let reported = written - 1;
        debug_assert!(near >= reported, "every contact written was found");
        tally.contacts += reported as u64;
        tally.truncated += (near - reported) as u64;
        tally.moves_waited_grid += u64::from(tally.grid_waits.contended > grid_waited);
        tally.moves_waited_body += u64::from(tally.body_waits.contended > body_waited);
        Ok(written)
    }

    /// Spawns a raid burst. Whole or nothing.
    pub fn raid_spawn(&self, req: &RaidSpawnRequest) -> Result<RaidReport, RaidError> {
        let mut waits = LockWaits::default();
        let result = self.combat.raid_spawn(req, self.board.current_tick(), &self.grid, &mut waits);
        self.stats.add_waits(LockKind::Grid, waits);
        match result {
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
        if !attacker.in_session(session_token) {
            return Err(DamageError::WrongSession);
        }
        let (faction, attacker_slot) = (attacker.faction, attacker.slot);
        drop(attacker);
        if amount <= 0 {
            return Err(DamageError::InvalidAmount);
        }
        if let Some(object) = self.combat.object(target_id) {
            if object.faction() == faction {
                return Err(DamageError::FriendlyFire);
            }
            return Ok(object.health.damage(amount));
        }
        let target = self.players.get(target_id).ok_or(DamageError::UnknownTarget)?;
        if target.faction == faction {
            return Err(DamageError::FriendlyFire);
        }
        let victim_slot = target.slot;
        let combatant = self.combat.combatant(target.combatant_key).ok_or(DamageError::UnknownTarget)?;
        drop(target);
        let outcome = combatant.health.damage(amount);
        if matches!(outcome, DamageOutcome::Hit { .. } | DamageOutcome::Killed) {
            // This call has no clock of its own: the hit (and a death) is dated by the last tick.
            let now_ms = self.board.read().now_ms;
            let mut waits = LockWaits::default();
            self.record_hit(attacker_id, attacker_slot, now_ms, false, &mut waits);
            self.record_hit(target_id, victim_slot, now_ms, outcome == DamageOutcome::Killed, &mut waits);
            self.stats.add_waits(LockKind::Body, waits);
        }
        Ok(outcome)
    }

    /// When a player who died at server time `died_ms` respawns (never 0, which means alive).
    fn respawn_at(&self, died_ms: u64) -> u64 {
        died_ms.saturating_add(u64::from(self.config.respawn_ms)).max(1)
    }

    /// Puts a body (its lock held) in combat until `logout_linger_ms` after a landed hit
    /// between players at `now_ms`: never earlier than a mark it already has.
    fn mark_in_combat(&self, state: &mut BodyState, now_ms: u64) {
        state.combat_until_ms = state.combat_until_ms.max(now_ms.saturating_add(u64::from(self.config.logout_linger_ms)));
    }

    /// What a landed hit between two players does to one of them, the body of `player_id` in
    /// `slot`, at server time `now_ms`: puts it in combat until `logout_linger_ms` later, and,
    /// if `killed` (its health has just reached 0), marks it dead until the tick respawns it.
    /// Nothing if the player has left meanwhile (its leave then dates a death itself); no
    /// second mark on a body already dead.
    fn record_hit(&self, player_id: u64, slot: u32, now_ms: u64, killed: bool, waits: &mut LockWaits) {
        let body = self.movement.body(slot);
        let mut state = waits.lock(&body.state);
        if !state.alive || state.player_id != player_id {
            return;
        }
        self.mark_in_combat(&mut state, now_ms);
        if !killed || body.dead() {
            return;
        }
        let respawn_at_ms = self.respawn_at(now_ms);
        body.respawn_at_ms.store(respawn_at_ms, Ordering::Release);
        drop(state);
        self.next_respawn.lower(respawn_at_ms);
    }

    /// Respawns every dead player whose time has come by `now_ms` (the tick's): full hit
    /// points, where it stands. Sweeps the bodies only once the earliest respawn is due
    /// ([`RespawnBound`]), and locks only the bodies that are due. Returns how many it
    /// brought back.
    fn respawn_due(&self, now_ms: u64, waits: &mut LockWaits) -> u64 {
        if !self.next_respawn.take_if_due(now_ms) {
            return 0;
        }
        let still_dead = |due_ms: u64| self.next_respawn.lower(due_ms);
        let mut respawned = 0;
        for slot in 0..self.movement.slots_used() {
            let body = self.movement.body(slot);
            let due_ms = body.respawn_at_ms.load(Ordering::Acquire);
            if due_ms == 0 {
                continue;
            }
            if due_ms > now_ms {
                still_dead(due_ms);
                continue;
            }
            let state = waits.lock(&body.state);
            // Left (and perhaps taken by a join resuming a dead account) since the look above.
            let due_ms = body.respawn_at_ms.load(Ordering::Relaxed);
            if !state.alive || due_ms == 0 {
                continue;
            }
            // Not due yet, or a join that has not inserted its record yet: the next sweep.
            let player = if due_ms > now_ms { None } else { self.players.get(state.player_id) };
            let Some(player) = player else {
                still_dead(due_ms);
                continue;
            };
            let revived = self.combat.combatant(player.combatant_key).is_some_and(|c| c.health.revive(self.config.player_hp));
            debug_assert!(revived, "a body marked dead has a dead combatant");
            body.respawn_at_ms.store(0, Ordering::Release);
            respawned += 1;
        }
        respawned
    }

    /// A player's attack at server time `now_ms`: the server decides whether it lands and what
    /// it does. Checked in [`AttackError`]'s order: the attacker (alive, right session), the
    /// target (a live player or raid object of another faction, alive), the distance between
    /// them (at most `attack_range_m`, the attacker's body position against the target's), and
    /// the attacker's cooldown (`attack_cooldown_ms` of server time since its last landed
    /// attack). A landed attack takes `attack_damage` hit points. The attacker's body lock is
    /// held from the range check to the cooldown's update, so one player's concurrent attacks
    /// land at most once per cooldown; the target's health is a saturating CAS, so exactly one
    /// of any number of concurrent attacks reports the kill.
    pub fn attack(&self, attacker_id: u64, session_token: u64, target_id: u64, now_ms: u64) -> Result<AttackReport, AttackError> {
        let (mut body_waits, mut grid_waits) = (LockWaits::default(), LockWaits::default());
        let result = self.attack_inner(attacker_id, session_token, target_id, now_ms, &mut body_waits, &mut grid_waits);
        self.stats.add_waits(LockKind::Body, body_waits);
        self.stats.add_waits(LockKind::Grid, grid_waits);
        match result {
            Ok(report) => {
                self.stats.bump(Counter::AttacksLanded);
                self.stats.bump(Counter::DamageApplied);
                if report.killed {
                    self.stats.bump(Counter::Kills);
                }
                if report.loot_dropped {
                    self.stats.bump(Counter::LootDropped);
                }
            }
            Err(e) => self.stats.bump(e.counter()),
        }
        result
    }

    fn attack_inner(
        &self,
        attacker_id: u64,
        session_token: u64,
        target_id: u64,
        now_ms: u64,
        body_waits: &mut LockWaits,
        grid_waits: &mut LockWaits,
    ) -> Result<AttackReport, AttackError> {
        let attacker = self.players.get(attacker_id).ok_or(AttackError::UnknownPlayer)?;
        if !attacker.in_session(session_token) {
            return Err(AttackError::WrongSession);
        }
        let (faction, slot, combatant_key, wallet) = (attacker.faction, attacker.slot, attacker.combatant_key, attacker.wallet);
        drop(attacker);
        if self.combat.combatant(combatant_key).is_none_or(|c| c.health.hp() <= 0) {
            return Err(AttackError::AttackerDead);
        }
        // The target: a raid object (position fixed at spawn) or a player (position from the
        // grid's table, written by its mover).
        enum Target<'a> {
            Object(crate::combat::RaidObjectRef<'a>),
            Player(sharded_slab::Entry<'a, crate::combat::Combatant, crate::arena::ArenaConfig>, u32),
        }
        let (target, target_faction, (tx, ty), target_kind) = if let Some(object) = self.combat.object(target_id) {
            let (f, pos, kind) = (object.faction(), (object.x_m, object.y_m), object.kind());
            (Target::Object(object), f, pos, kind)
        } else {
            let player = self.players.get(target_id).ok_or(AttackError::UnknownTarget)?;
            let (f, target_slot, key) = (player.faction, player.slot, player.combatant_key);
            drop(player);
            let combatant = self.combat.combatant(key).ok_or(AttackError::UnknownTarget)?;
            (Target::Player(combatant, target_slot), f, self.grid.positions().get(target_slot), EntityKind::Player)
        };
        if target_faction == faction {
            return Err(AttackError::FriendlyFire);
        }
        let health = match &target {
            Target::Object(o) => &o.health,
            Target::Player(p, _) => &p.health,
        };
        if health.hp() <= 0 {
            return Err(AttackError::TargetDead);
        }
        let mut body = body_waits.lock(&self.movement.body(slot).state);
        if !body.alive || body.player_id != attacker_id {
            return Err(AttackError::UnknownPlayer); // left while we looked it up
        }
        // Killed since its hit points were read above (its killer marks the body after letting
        // go of its own lock, so the mark may not be there yet; the hit points are, and only
        // the tick gives them back, under this lock): it lands nothing.
        if self.movement.body(slot).dead() || self.combat.combatant(combatant_key).is_none_or(|c| c.health.hp() <= 0) {
            return Err(AttackError::AttackerDead);
        }
        let (dx, dy) = (tx - body.x_m, ty - body.y_m);
        let range_m = self.config.attack_range_m;
        if dx * dx + dy * dy > range_m * range_m {
            return Err(AttackError::OutOfRange);
        }
        if now_ms < body.attack_ready_ms {
            return Err(AttackError::Cooldown);
        }
        let (damage, hp_left, killed) = match health.damage_reporting(self.config.attack_damage) {
            (taken, DamageOutcome::Hit { hp_left }) => (taken, hp_left, false),
            (taken, DamageOutcome::Killed) => (taken, 0, true),
            // Another attack took the last hit points since the check above.
            (_, DamageOutcome::AlreadyDead) => return Err(AttackError::TargetDead),
        };
        body.attack_ready_ms = now_ms.saturating_add(u64::from(self.config.attack_cooldown_ms));
        if matches!(target, Target::Player(..)) {
            self.mark_in_combat(&mut body, now_ms);
        }
        drop(body);
        // The one killing attack drops the add's loot: the killer's wallet in its loot word (the
        // loot is the account's, not the session's: WalletHandle::loot_owner), and the corpse
        // shown as loot in its cell.
        let loot_dropped = match &target {
            Target::Object(o) if killed && o.kind() == EntityKind::Add => {
                o.loot.store(wallet.loot_owner(), Ordering::Release);
                self.grid.relabel_object(o.cell, target_id, o.x_m, o.y_m, EntityKind::Loot, grid_waits);
                true
            }
            // The victim is in combat now, and a killed one is dead until the tick respawns it
            // (the attacker's lock is released above: two body locks are never held at once).
            Target::Player(_, victim_slot) => {
                self.record_hit(target_id, *victim_slot, now_ms, killed, body_waits);
                false
            }
            _ => false,
        };
        Ok(AttackReport { damage, hp_left, killed, target_kind, loot_dropped })
    }

    /// A player's claim of the loot on raid object `loot_id` ([`crate::loot`]). Checked in
    /// [`LootError`]'s order: the claimer (live, right session), the object (exists, holds
    /// loot, a kill of the claimer's account or session), the distance from the claimer's body to it (at most
    /// `loot_range_m`); then the loot is taken and credited in one step under the claimer's
    /// wallet's lock, or left where it is if the wallet cannot hold it. Of any number of
    /// concurrent claims exactly one credits; a claim of loot this account (or session) already
    /// claimed is answered again with `repeat` set.
    pub fn claim_loot(&self, player_id: u64, session_token: u64, loot_id: u64) -> Result<LootReport, LootError> {
        let (mut body_waits, mut economy_waits) = (LockWaits::default(), LockWaits::default());
        let result = self.claim_loot_inner(player_id, session_token, loot_id, &mut body_waits, &mut economy_waits);
        self.stats.add_waits(LockKind::Body, body_waits);
        self.stats.add_waits(LockKind::Economy, economy_waits);
        match result {
            Ok(report) if report.repeat => self.stats.bump(Counter::LootClaimRepeats),
            Ok(report) => {
                self.stats.bump(Counter::LootClaimed);
                self.stats.add(Counter::LootGoldClaimed, report.contents.gold);
                self.stats.add(Counter::LootItemsClaimed, u64::from(report.contents.item_count));
            }
            Err(e) => self.stats.bump(e.counter()),
        }
        result
    }

    fn claim_loot_inner(
        &self,
        player_id: u64,
        session_token: u64,
        loot_id: u64,
        body_waits: &mut LockWaits,
        economy_waits: &mut LockWaits,
    ) -> Result<LootReport, LootError> {
        let player = self.players.get(player_id).ok_or(LootError::UnknownPlayer)?;
        if !player.in_session(session_token) {
            return Err(LootError::WrongSession);
        }
        let (slot, wallet) = (player.slot, player.wallet);
        drop(player);
        let object = self.combat.object(loot_id).ok_or(LootError::UnknownLoot)?;
        let state = object.loot.load(Ordering::Acquire);
        if state == 0 {
            return Err(LootError::NoLoot);
        }
        if state & !LOOT_CLAIMED != wallet.loot_owner() {
            return Err(LootError::NotYours);
        }
        let contents = self.loot_table.roll(loot_id);
        if state & LOOT_CLAIMED != 0 {
            // The credit may still be in a journal.
            let gold_after = self.economy.balance(wallet).map_or(0, |b| b.gold);
            return Ok(LootReport { contents, gold_after, repeat: true, ledger_seq: self.economy.ledger().after_everything_so_far() });
        }
        {
            let body = body_waits.lock(&self.movement.body(slot).state);
            if !body.alive || body.player_id != player_id {
                return Err(LootError::UnknownPlayer); // left while we looked it up
            }
            if self.movement.body(slot).dead() {
                return Err(LootError::Dead);
            }
            let (dx, dy) = (object.x_m - body.x_m, object.y_m - body.y_m);
            let range_m = self.config.loot_range_m;
            if dx * dx + dy * dy > range_m * range_m {
                return Err(LootError::OutOfRange);
            }
        }
        let take = || object.loot.compare_exchange(state, state | LOOT_CLAIMED, Ordering::AcqRel, Ordering::Acquire).is_ok();
        match self.economy.credit_loot(wallet, &contents, take, economy_waits) {
            Ok(credit) => {
                Ok(LootReport { contents, gold_after: credit.gold_after, repeat: !credit.credited, ledger_seq: credit.ledger_seq })
            }
            Err(LootCreditError::Departed) => Err(LootError::UnknownPlayer),
            Err(LootCreditError::Full) => Err(LootError::WalletFull),
            Err(LootCreditError::StorageBusy) => Err(LootError::StorageBusy),
        }
    }

    /// Applies a batch of economy operations, writing one result per operation, in order.
    /// `out` must hold `ops.len()` results; otherwise nothing is applied.
    pub fn apply_economy(&self, ops: &[EconomyOp], out: &mut [EconomyResult]) -> Result<usize, BatchError> {
        if out.len() < ops.len() {
            self.stats.bump(Counter::EconomyBatchesRefused);
            return Err(BatchError::OutputTooSmall { required: ops.len() });
        }
        let mut waits = LockWaits::default();
        for (op, slot) in ops.iter().zip(out.iter_mut()) {
            *slot = self.economy_one(op, &mut waits);
        }
        self.stats.add_waits(LockKind::Economy, waits);
        Ok(ops.len())
    }

    fn economy_one(&self, op: &EconomyOp, waits: &mut LockWaits) -> EconomyResult {
        let outcome = match self.economy_parties(op.player_id, op.session_token, op.counterparty_id) {
            Err(status) => Outcome::refused(status),
            Ok((initiator, counterparty)) => {
                let outcome = self.economy.execute(op, initiator, counterparty, waits);
                self.count_economy(&outcome);
                outcome
            }
        };
        economy_result(op.transaction_id, op.player_id, &outcome)
    }

    /// Resolves the initiator of an economy request (live, right session) to its wallet, and
    /// `other_id` to a counterparty; a refusal is counted and handed back as the result.
    fn economy_parties(&self, player_id: u64, session_token: u64, other_id: u64) -> Result<(WalletHandle, Counterparty), EconomyStatus> {
        let Some(player) = self.players.get(player_id) else {
            self.stats.bump(Counter::EconomyUnknownPlayer);
            return Err(EconomyStatus::UnknownPlayer);
        };
        if !player.in_session(session_token) {
            self.stats.bump(Counter::EconomyWrongSession);
            return Err(EconomyStatus::WrongSession);
        }
        let wallet = player.wallet;
        drop(player);
        let other = match other_id {
            0 => Counterparty::Absent,
            id if id == player_id => Counterparty::Initiator,
            id => self.players.get(id).map_or(Counterparty::Unknown, |c| Counterparty::Wallet(c.wallet)),
        };
        Ok((wallet, other))
    }

    /// A trade offer at server time `now_ms` ([`crate::economy::Economy::offer`]): the maker's
    /// `give` goes into escrow for `trade_timeout_ms`, until its taker accepts or declines, the
    /// maker cancels, or it times out. The offer's id is its transaction id.
    pub fn trade_offer(&self, offer: &TradeOffer, now_ms: u64) -> EconomyResult {
        let mut waits = LockWaits::default();
        let result = match self.economy_parties(offer.player_id, offer.session_token, offer.counterparty_id) {
            Err(status) => economy_result(offer.transaction_id, offer.player_id, &Outcome::refused(status)),
            Ok((maker, taker)) => {
                let (o, closed_expired) = self.economy.offer(offer, maker, taker, now_ms, self.config.trade_timeout_ms, &mut waits);
                self.count_economy(&o);
                if o.status == EconomyStatus::Applied && !o.duplicate {
                    self.stats.bump(Counter::TradeOffers);
                }
                if closed_expired {
                    self.stats.bump(Counter::TradesExpired);
                }
                economy_result(offer.transaction_id, offer.player_id, &o)
            }
        };
        self.stats.add_waits(LockKind::Economy, waits);
        result
    }

    /// An answer to a trade offer at server time `now_ms` ([`crate::economy::Economy::answer`]):
    /// the taker accepts (both sides move at once) or declines, or the maker cancels.
    pub fn trade_answer(&self, answer: &TradeAnswer, now_ms: u64) -> EconomyResult {
        let mut waits = LockWaits::default();
        let result = match self.economy_parties(answer.player_id, answer.session_token, answer.maker_id) {
            Err(status) => economy_result(answer.transaction_id, answer.player_id, &Outcome::refused(status)),
            Ok((me, maker)) => {
                let (o, close) = self.economy.answer(answer, me, maker, now_ms, &mut waits);
                self.count_economy(&o);
                match close {
                    TradeClose::None => {}
                    TradeClose::Accepted => self.stats.bump(Counter::TradesAccepted),
                    TradeClose::Declined => self.stats.bump(Counter::TradesDeclined),
                    TradeClose::Cancelled => self.stats.bump(Counter::TradesCancelled),
                    TradeClose::Expired => self.stats.bump(Counter::TradesExpired),
                }
                economy_result(answer.transaction_id, answer.player_id, &o)
            }
        };
        self.stats.add_waits(LockKind::Economy, waits);
        result
    }

    /// An admin grant of `stack` to `player_id` (the admin's word, never a client's): the one
    /// source of value besides starting gold and loot, counted apart (`grants`, `grant_gold`,
    /// `grant_items`, and the audit's `minted_by_grant`). At most once per (player,
    /// `grant_id`), ids increasing per player.
    pub fn grant(&self, player_id: u64, grant_id: u64, stack: &TradeStack) -> EconomyResult {
        let Some(player) = self.players.get(player_id) else {
            self.stats.bump(Counter::EconomyUnknownPlayer);
            return economy_result(grant_id, player_id, &Outcome::refused(EconomyStatus::UnknownPlayer));
        };
        let wallet = player.wallet;
        drop(player);
        let mut waits = LockWaits::default();
        let o = self.economy.grant(wallet, grant_id, stack, &mut waits);
        self.stats.add_waits(LockKind::Economy, waits);
        if o.status == EconomyStatus::Applied && !o.duplicate {
            self.stats.bump(Counter::Grants);
            self.stats.add(Counter::GrantGold, stack.gold as u64);
            self.stats.add(Counter::GrantItems, u64::from(stack.item_count as u32));
        } else {
            self.count_economy(&o);
        }
        economy_result(grant_id, player_id, &o)
    }

    fn count_economy(&self, o: &Outcome) {
        self.stats.bump(if o.duplicate { Counter::EconomyDuplicates } else { Counter::for_economy(o.status) });
    }

    /// Runs one tick at server time `now_ms`: expires due raid bursts, builds the world
    /// snapshot and publishes it with the tick's summary. Meant for one tick driver;
    /// concurrent callers serialise.
    pub fn tick(&self, now_ms: u64) -> TickInfo {
        let mut state = self.tick_state.lock();
        let state = &mut *state;
        state.tick = state.tick.wrapping_add(1);
        let mut waits = LockWaits::default();
        self.combat.collect_new_bursts(&mut state.expiry, &self.grid, &mut state.expired, &mut waits);
        let expired = self.combat.expire_due(&mut state.expiry, state.tick, &self.grid, &mut state.expired, &mut waits);
        // Timed-out trade offers: every escrow is back at the first tick at or after its timeout.
        let mut economy_waits = LockWaits::default();
        let offers_expired = self.economy.expire_offers(now_ms, &mut economy_waits);
        self.stats.add(Counter::TradesExpired, u64::from(offers_expired));
        let mut body_waits = LockWaits::default();
        self.stats.add(Counter::Respawns, self.respawn_due(now_ms, &mut body_waits));
        self.stats.add_waits(LockKind::Body, body_waits);
        self.stats.add(Counter::LingersEnded, self.lingers_due(now_ms));
        self.stats.add_waits(LockKind::Economy, economy_waits);
        let snapshot_entities = self.publish_snapshot(state, now_ms, &mut waits);
        let info = TickInfo {
            tick: state.tick,
            now_ms,
            players_live: self.players.live(),
            objects_live: self.combat.live_objects(),
            objects_expired: expired.objects,
            bursts_live: self.combat.live_bursts(),
            snapshot_entities: snapshot_entities.unwrap_or(0),
        };
        self.board.publish(&info);
        self.stats.bump(Counter::Ticks);
        self.stats.add(Counter::RaidObjectsDespawned, u64::from(expired.objects));
        self.stats.add_waits(LockKind::Grid, waits);
        info
    }

    /// Gathers every player (from the movement slots and the position table) and every raid
    /// object of the live bursts (one read lock per cell of their rectangles, each cell once)
    /// into the snapshot builder, and publishes the result. Returns the entities published,
    /// or `None` if readers pinned every spare buffer (the publication is skipped).
    fn publish_snapshot(&self, state: &mut TickState, now_ms: u64, waits: &mut LockWaits) -> Option<u32> {
        let builder = &mut state.builder;
        let slots = self.movement.slots_used();
        builder.clear(self.players.live() as usize + self.combat.live_objects() as usize);
        for slot in 0..slots {
            let id = self.grid.player_in(slot);
            if id != 0 {
                let (x, y) = self.grid.positions().get(slot);
                builder.add_player(slot, id, x, y);
            }
        }
        let side = self.grid.cells_per_side();
        let mut visit_bursts = |gather: bool| {
            for burst in Combat::live_burst_areas(&state.expiry) {
                for cy in u32::from(burst.cy0)..=u32::from(burst.cy1) {
                    for cx in u32::from(burst.cx0)..=u32::from(burst.cx1) {
                        let cell = cy * side + cx;
                        let (word, bit) = ((cell / 64) as usize, 1u64 << (cell % 64));
                        if gather && state.gathered[word] & bit == 0 {
                            state.gathered[word] |= bit;
                            self.grid.for_each_object(cell, waits, |m| builder.add_object(m.id, m.x_m, m.y_m, m.kind));
                        } else if !gather {
                            state.gathered[word] &= !bit;
                        }
                    }
                }
            }
        };
        visit_bursts(true);
        visit_bursts(false);
        match self.snapshots.begin_write(&mut state.writer) {
            Some(mut slot) => {
                state.builder.build_into(&mut slot, state.tick, now_ms);
                let entities = slot.len() as u32;
                self.snapshots.publish(slot);
                self.stats.bump(Counter::SnapshotsPublished);
                Some(entities)
            }
            None => {
                self.stats.bump(Counter::SnapshotsSkipped);
                None
            }
        }
    }

    /// The latest tick's summary (consistent: all fields from the same tick).
    pub fn tick_info(&self) -> TickInfo {
        self.board.read()
    }

    /// Writes the nearest entities around a player within the AoI radius (at most
    /// `min(out.len(), aoi_k)`), nearest first, as of the latest world snapshot; returns how
    /// many.
    pub fn area_of_interest(&self, player_id: u64, out: &mut [AoiEntry]) -> Result<usize, AoiError> {
        if self.players.get(player_id).is_none() {
            self.stats.bump(Counter::AoiNotInSnapshot);
            return Err(AoiError::UnknownPlayer);
        }
        let k = out.len().min(self.config.aoi_k as usize);
        // `viewer_in` checks the snapshot's slot against the grid's id-by-slot table, so the
        // viewer it finds is in the slot the player's record names.
        let result = self.snapshots.pin().and_then(|snapshot| {
            let viewer = self.viewer_in(&snapshot, player_id)?;
            Some(self.nearest_hinted(&snapshot, viewer, &mut out[..k]))
        });
        match result {
            Some(n) => {
                self.stats.bump(Counter::AoiQueries);
                Ok(n)
            }
            None => {
                self.stats.bump(Counter::AoiNotInSnapshot);
                Err(AoiError::NotInSnapshot)
            }
        }
    }

    /// The area of interest of every player in `players` from one pinned snapshot: player `i`'s
    /// entries go to `out[i * k ..][.. min(k, aoi_k)]` and their count to `counts[i]`, or
    /// [`NOT_IN_SNAPSHOT`] for a player not in the snapshot (unknown, joined after it, or left
    /// since).
    /// `k` is at most [`AOI_K_MAX`]; `out` must hold `players.len() * k` entries and `counts`
    /// `players.len()`, or nothing is written. Allocates nothing.
    pub fn area_of_interest_batch(
        &self,
        players: &[u64],
        k: usize,
        out: &mut [AoiEntry],
        counts: &mut [u32],
    ) -> Result<AoiBatchInfo, BatchError> {
        let k = k.min(AOI_K_MAX as usize);
        let required = players.len().saturating_mul(k);
        if out.len() < required || counts.len() < players.len() {
            return Err(BatchError::OutputTooSmall { required });
        }
        let per_player = k.min(self.config.aoi_k as usize);
        let mut info = AoiBatchInfo::default();
        let snapshot = self.snapshots.pin();
        if let Some(s) = &snapshot {
            info.tick = s.tick;
            info.now_ms = s.now_ms;
        }
        // The viewers of up to `AOI_LOOKAHEAD` players are found first, then their queries
        // run: the lookups (the snapshot's player index, the grid's id-by-slot table) are
        // independent of each other, so their cache misses overlap, where one lookup per query
        // waited for each in turn; the hints they will read are asked for meanwhile.
        const AOI_LOOKAHEAD: usize = 64;
        for (chunk_at, chunk) in players.chunks(AOI_LOOKAHEAD).enumerate() {
            // Inline and filled only as far as the chunk goes: the worker's calls bring a
            // handful of sessions, and an array of 64 written whole (1.5 KB of `None`s) was
            // 1.2% of the engine's raid samples (a `memset` under this function).
            let mut viewers = SmallVec::<[Option<PlayerInSnapshot>; AOI_LOOKAHEAD]>::new();
            viewers.extend(chunk.iter().map(|&player_id| {
                let viewer = snapshot.as_ref().and_then(|s| self.viewer_in(s, player_id));
                if let Some(v) = viewer {
                    prefetch_lines(std::slice::from_ref(&self.aoi_hints[v.slot as usize]));
                }
                viewer
            }));
            for (j, viewer) in viewers.iter().enumerate() {
                let i = chunk_at * AOI_LOOKAHEAD + j;
                counts[i] = match (&snapshot, viewer) {
                    (Some(s), Some(v)) => {
                        info.found += 1;
                        self.nearest_hinted(s, *v, &mut out[i * k..i * k + per_player]) as u32
                    }
                    _ => NOT_IN_SNAPSHOT,
                };
            }
        }
        drop(snapshot);
        self.stats.add(Counter::AoiQueries, u64::from(info.found));
        self.stats.add(Counter::AoiNotInSnapshot, (players.len() as u64).saturating_sub(u64::from(info.found)));
        Ok(info)
    }

    /// The player `player_id` in `snapshot`, if it is there and still in the slot it had then:
    /// the snapshot's player index and one load from the grid's id-by-slot table, no arena
    /// lookup. A player who has left since (or is leaving: leave frees the slot before the
    /// record) is not a viewer, as an unknown id is not.
    #[inline]
    fn viewer_in(&self, snapshot: &WorldSnapshot, player_id: u64) -> Option<PlayerInSnapshot> {
        snapshot.player(player_id).filter(|v| self.grid.player_in(v.slot) == player_id)
    }

    /// One player's nearest entities from `snapshot`, looking first as far as its last answer
    /// can be now (that answer's reach plus the player's own move since), then leaving the
    /// reach of this answer for the next tick's query ([`crate::snapshot::hint_reach_m`]). The
    /// answer does not depend on the hint (a stale or lost one costs a second, wider look).
    fn nearest_hinted(&self, snapshot: &WorldSnapshot, viewer: PlayerInSnapshot, out: &mut [AoiEntry]) -> usize {
        let hint = &self.aoi_hints[viewer.slot as usize];
        let at = snapshot.position(viewer.entity);
        let (n, look) = snapshot.nearest_hinted(viewer.entity, hint.hint_m(at), out);
        if look == AoiLook::Wide {
            self.stats.bump(Counter::AoiWideLooks);
        }
        let k = out.len().min(AOI_K_MAX as usize);
        hint.set(hint_reach_m(&out[..n], k, self.config.aoi_player_closing_m()), at);
        n
    }

    /// All counters (see [`crate::stats`] for the consistency they give).
    pub fn stats(&self) -> StatsSnapshot {
        self.stats.snapshot()
    }

    /// A consistent reading of the whole economy (locks every wallet and home briefly).
    pub fn economy_audit(&self) -> EconomyAudit {
        self.economy.audit()
    }

    /// One player's state, or `None` if not joined.
    pub fn player(&self, player_id: u64) -> Option<PlayerView> {
        let player = self.players.get(player_id)?;
        let state = *self.movement.body(player.slot).state.lock();
        if !state.alive || state.player_id != player_id {
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
