//! Counters per service and per rejection reason, readable while writers run.
//!
//! Writers are every thread that applies work (network workers through the FFI, the tick
//! driver). A single shared atomic per counter would make every update bounce one cache line
//! between cores, so counters are striped: each thread is given one of [`STRIPES`] stripes on
//! first use and only ever increments its own stripe. Each stripe is a
//! `crossbeam_utils::CachePadded` block (128 bytes on x86-64: adjacent-line prefetch pulls
//! lines in pairs, so 64 is not enough to stop false sharing).
//!
//! Concurrency contract: increments are `Relaxed` `fetch_add`s on the writer's own stripe.
//! [`Stats::snapshot`] sums all stripes with `Relaxed` loads: each counter in the snapshot is a
//! value it held at some instant during the read and never goes backwards between snapshots,
//! but two counters are not read at the same instant (use the economy audit for figures that
//! must agree with each other).

use crate::locks::{LockKind, LockWaits};
use crate::records::{EconomyStatus, RejectReason};
use crossbeam_utils::CachePadded;
use std::cell::Cell;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

/// Number of counter stripes. Threads beyond this share stripes (still correct, just more
/// cache traffic).
pub const STRIPES: usize = 16;

macro_rules! define_counters {
    ($( $variant:ident / $field:ident : $doc:literal, )*) => {
        /// Every counter the core keeps.
        #[repr(usize)]
        #[derive(Clone, Copy, Debug, PartialEq, Eq)]
        pub enum Counter { $( #[doc = $doc] $variant, )* }

        /// Number of counters.
        pub const COUNTER_COUNT: usize = [$(Counter::$variant),*].len();

        /// Every counter's name: its `StatsSnapshot` field (and `MmoStats` field) name, in
        /// field order. The server reports each as `engine_<name>`.
        pub const COUNTER_NAMES: [&str; COUNTER_COUNT] = [$(stringify!($field)),*];

        impl StatsSnapshot {
            fn from_sums(sums: &[u64; COUNTER_COUNT]) -> Self {
                Self { $( $field: sums[Counter::$variant as usize], )* }
            }
            /// The value of one counter.
            pub fn get(&self, counter: Counter) -> u64 {
                match counter { $( Counter::$variant => self.$field, )* }
            }
        }
    };
}

/// A point-in-time reading of every counter (see the module doc for what "point in time"
/// means). `#[repr(C)]`: the FFI hands it out as is (C name `MmoStats`). Written out rather
/// than generated so cbindgen can read it; `define_counters!` below maps every
/// [`Counter`] to its field (a missing field fails to compile) and the size assertion after
/// it catches a field with no counter.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct StatsSnapshot {
    /// Moves applied.
    pub moves_applied: u64,
    /// Moves refused: no such player.
    pub move_rejected_unknown_player: u64,
    /// Moves refused: session token mismatch.
    pub move_rejected_wrong_session: u64,
    /// Moves refused: sequence not newer.
    pub move_rejected_stale_sequence: u64,
    /// Moves refused: faster than the speed limit.
    pub move_rejected_too_fast: u64,
    /// Moves refused: outside the world.
    pub move_rejected_out_of_bounds: u64,
    /// Moves refused: the player is dead (until it respawns).
    pub move_rejected_dead: u64,
    /// Moves that moved their entity to another grid cell.
    pub cell_crossings: u64,
    /// Contact events written.
    pub contacts_reported: u64,
    /// Contacts not reported because a move hit its cap.
    pub contacts_truncated: u64,
    /// Move batches applied.
    pub move_batches: u64,
    /// Move batches refused whole (output buffer too small).
    pub move_batches_refused: u64,
    /// Economy batches refused whole (output buffer too small).
    pub economy_batches_refused: u64,
    /// Players joined.
    pub joins: u64,
    /// Joins refused: player capacity reached.
    pub joins_refused_full: u64,
    /// Joins refused: spawn point outside the world.
    pub joins_refused_bounds: u64,
    /// Players left.
    pub leaves: u64,
    /// Leaves refused: unknown player or wrong session.
    pub leaves_refused: u64,
    /// Leaves of players in combat: the session ended, the body stayed in the world
    /// (`logout_linger_ms`).
    pub leaves_lingered: u64,
    /// Lingering bodies taken out of the world by the tick, their linger over.
    pub lingers_ended: u64,
    /// Lingering bodies taken out of the world by their account's next join.
    pub lingers_resumed: u64,
    /// Raid bursts spawned.
    pub raid_bursts: u64,
    /// Raid objects spawned.
    pub raid_objects_spawned: u64,
    /// Raid objects expired and freed.
    pub raid_objects_despawned: u64,
    /// Raid spawns refused: object or burst capacity.
    pub raid_refused_capacity: u64,
    /// Raid spawns refused: invalid request.
    pub raid_refused_invalid: u64,
    /// Damage calls that took hit points.
    pub damage_applied: u64,
    /// Combatants brought to zero hit points.
    pub kills: u64,
    /// Dead players brought back to full hit points by the tick, `respawn_ms` after their death.
    pub respawns: u64,
    /// Damage calls refused (unknown target, same faction, dead, bad amount).
    pub damage_rejected: u64,
    /// Attacks (a player's `ATTACK`, damage from the server's rules) that landed.
    pub attacks_landed: u64,
    /// Attacks refused: the attacker is not a live player.
    pub attack_rejected_unknown_player: u64,
    /// Attacks refused: session token mismatch.
    pub attack_rejected_wrong_session: u64,
    /// Attacks refused: the attacker has no hit points.
    pub attack_rejected_attacker_dead: u64,
    /// Attacks refused: no such live player or raid object.
    pub attack_rejected_unknown_target: u64,
    /// Attacks refused: same faction (or itself).
    pub attack_rejected_friendly_fire: u64,
    /// Attacks refused: the target has no hit points.
    pub attack_rejected_target_dead: u64,
    /// Attacks refused: farther than attack_range_m.
    pub attack_rejected_out_of_range: u64,
    /// Attacks refused: sooner than attack_cooldown_ms after its last landed attack.
    pub attack_rejected_cooldown: u64,
    /// Killed adds that dropped loot.
    pub loot_dropped: u64,
    /// Loot claims that credited their loot (one per drop at most).
    pub loot_claimed: u64,
    /// Loot claims answered again: the claimer had already claimed that loot.
    pub loot_claim_repeats: u64,
    /// Gold credited by loot claims.
    pub loot_gold_claimed: u64,
    /// Items credited by loot claims.
    pub loot_items_claimed: u64,
    /// Loot claims refused: the claimer is not a live player.
    pub loot_rejected_unknown_player: u64,
    /// Loot claims refused: session token mismatch.
    pub loot_rejected_wrong_session: u64,
    /// Loot claims refused: no such raid object.
    pub loot_rejected_unknown_loot: u64,
    /// Loot claims refused: the object holds no loot.
    pub loot_rejected_no_loot: u64,
    /// Loot claims refused: another player's kill.
    pub loot_rejected_not_yours: u64,
    /// Loot claims refused: farther than loot_range_m.
    pub loot_rejected_out_of_range: u64,
    /// Loot claims refused: the wallet cannot hold it.
    pub loot_rejected_wallet_full: u64,
    /// Economy operations applied.
    pub economy_applied: u64,
    /// Economy retransmits answered from the de-duplication record.
    pub economy_duplicates: u64,
    /// Economy refused: invalid amount.
    pub economy_invalid_amount: u64,
    /// Economy refused: amount or balance overflow.
    pub economy_overflow: u64,
    /// Economy refused: self-trade.
    pub economy_self_trade: u64,
    /// Economy refused: unknown item.
    pub economy_unknown_item: u64,
    /// Economy refused: insufficient funds.
    pub economy_insufficient_funds: u64,
    /// Economy refused: insufficient items.
    pub economy_insufficient_items: u64,
    /// Economy refused: unknown player.
    pub economy_unknown_player: u64,
    /// Economy refused: player departed.
    pub economy_player_departed: u64,
    /// Economy refused: wrong session.
    pub economy_wrong_session: u64,
    /// Economy refused: transaction older than the window.
    pub economy_too_old: u64,
    /// Economy refused: unknown operation kind.
    pub economy_bad_kind: u64,
    /// Economy refused: transaction id 0, or more than 2^20 above the account's highest.
    pub economy_invalid_transaction: u64,
    /// Economy refused: the maker already has an open trade offer.
    pub economy_offer_pending: u64,
    /// Economy refused: no open trade offer with that id.
    pub economy_no_such_offer: u64,
    /// Economy refused: an answer to another player's trade offer.
    pub economy_not_your_offer: u64,
    /// Economy refused: the trade offer had timed out.
    pub economy_offer_expired: u64,
    /// Economy refused: a retired kind (trade without consent, loot pickup).
    pub economy_kind_retired: u64,
    /// Economy refused: the journal was full (the disk behind); retransmit.
    pub economy_storage_busy: u64,
    /// Loot claims refused: the economy's journal was full.
    pub loot_rejected_storage_busy: u64,
    /// Loot claims refused: the claimer is dead (until it respawns).
    pub loot_rejected_dead: u64,
    /// Accounts whose first join created their wallet.
    pub accounts_created: u64,
    /// Joins that resumed their account's wallet.
    pub accounts_resumed: u64,
    /// Joins refused: the account is in a live session, or none was named with a store open.
    pub joins_refused_account: u64,
    /// Groups of ledger entries made durable (one store commit, one fsync, each).
    pub ledger_groups: u64,
    /// Ledger entries made durable.
    pub ledger_entries: u64,
    /// Store commits that failed (retried; nothing told until one succeeds).
    pub ledger_commit_failures: u64,
    /// Trade offers opened (their give in escrow).
    pub trade_offers: u64,
    /// Trade offers accepted: both sides moved.
    pub trades_accepted: u64,
    /// Trade offers declined by their taker.
    pub trades_declined: u64,
    /// Trade offers cancelled by their maker.
    pub trades_cancelled: u64,
    /// Trade offers that timed out (escrow back to the maker), found by an answer, a new
    /// offer or the tick's sweep.
    pub trades_expired: u64,
    /// Admin grants applied.
    pub grants: u64,
    /// Gold admin grants minted.
    pub grant_gold: u64,
    /// Items admin grants minted.
    pub grant_items: u64,
    /// Ticks run.
    pub ticks: u64,
    /// Area-of-interest snapshots built.
    pub aoi_queries: u64,
    /// Area-of-interest queries that found no entry for their player in the latest world
    /// snapshot (unknown or departed player, or one who joined after the snapshot's tick).
    pub aoi_not_in_snapshot: u64,
    /// Area-of-interest queries whose first look, within the player's hint (last tick's k-th
    /// nearest distance plus what a tick can close), found fewer than k entities and so looked
    /// again over the whole radius (a crowd thinned: despawns, departures; a first query).
    pub aoi_wide_looks: u64,
    /// World snapshots published by the tick.
    pub snapshots_published: u64,
    /// Ticks that published no snapshot because readers pinned every spare buffer.
    pub snapshots_skipped: u64,
    /// Grid shard acquisitions that found the shard locked (moves, joins, leaves, spawns, expiry, snapshot builds).
    pub lock_grid_contended: u64,
    /// Nanoseconds spent waiting for grid shards.
    pub lock_grid_wait_ns: u64,
    /// Body lock acquisitions that found the lock held.
    pub lock_body_contended: u64,
    /// Nanoseconds spent waiting for body locks.
    pub lock_body_wait_ns: u64,
    /// Economy lock acquisitions (wallets, homes) that found the lock held.
    pub lock_economy_contended: u64,
    /// Nanoseconds spent waiting for economy locks (wallets, homes).
    pub lock_economy_wait_ns: u64,
    /// Moves that waited at least once for a grid shard.
    pub moves_waited_grid: u64,
    /// Moves that waited for their body lock.
    pub moves_waited_body: u64,
}

define_counters! {
    MovesApplied / moves_applied: "Moves applied.",
    MoveRejectedUnknownPlayer / move_rejected_unknown_player: "Moves refused: no such player.",
    MoveRejectedWrongSession / move_rejected_wrong_session: "Moves refused: session token mismatch.",
    MoveRejectedStaleSequence / move_rejected_stale_sequence: "Moves refused: sequence not newer.",
    MoveRejectedTooFast / move_rejected_too_fast: "Moves refused: faster than the speed limit.",
    MoveRejectedOutOfBounds / move_rejected_out_of_bounds: "Moves refused: outside the world.",
    MoveRejectedDead / move_rejected_dead: "Moves refused: the player is dead (until it respawns).",
    CellCrossings / cell_crossings: "Moves that moved their entity to another grid cell.",
    ContactsReported / contacts_reported: "Contact events written.",
    ContactsTruncated / contacts_truncated: "Contacts not reported because a move hit its cap.",
    MoveBatches / move_batches: "Move batches applied.",
    MoveBatchesRefused / move_batches_refused: "Move batches refused whole (output buffer too small).",
    EconomyBatchesRefused / economy_batches_refused: "Economy batches refused whole (output buffer too small).",
    Joins / joins: "Players joined.",
    JoinsRefusedFull / joins_refused_full: "Joins refused: player capacity reached.",
    JoinsRefusedBounds / joins_refused_bounds: "Joins refused: spawn point outside the world.",
    Leaves / leaves: "Players left.",
    LeavesRefused / leaves_refused: "Leaves refused: unknown player or wrong session.",
    LeavesLingered / leaves_lingered: "Leaves of players in combat: the session ended, the body stayed in the world (`logout_linger_ms`).",
    LingersEnded / lingers_ended: "Lingering bodies taken out of the world by the tick, their linger over.",
    LingersResumed / lingers_resumed: "Lingering bodies taken out of the world by their account's next join.",
    RaidBursts / raid_bursts: "Raid bursts spawned.",
    RaidObjectsSpawned / raid_objects_spawned: "Raid objects spawned.",
    RaidObjectsDespawned / raid_objects_despawned: "Raid objects expired and freed.",
    RaidRefusedCapacity / raid_refused_capacity: "Raid spawns refused: object or burst capacity.",
    RaidRefusedInvalid / raid_refused_invalid: "Raid spawns refused: invalid request.",
    DamageApplied / damage_applied: "Damage calls that took hit points.",
    Kills / kills: "Combatants brought to zero hit points.",
    Respawns / respawns: "Dead players brought back to full hit points by the tick, `respawn_ms` after their death.",
    DamageRejected / damage_rejected: "Damage calls refused (unknown target, same faction, dead, bad amount).",
    AttacksLanded / attacks_landed: "Attacks (a player's `ATTACK`, damage from the server's rules) that landed.",
    AttackRejectedUnknownPlayer / attack_rejected_unknown_player: "Attacks refused: the attacker is not a live player.",
    AttackRejectedWrongSession / attack_rejected_wrong_session: "Attacks refused: session token mismatch.",
    AttackRejectedAttackerDead / attack_rejected_attacker_dead: "Attacks refused: the attacker has no hit points.",
    AttackRejectedUnknownTarget / attack_rejected_unknown_target: "Attacks refused: no such live player or raid object.",
    AttackRejectedFriendlyFire / attack_rejected_friendly_fire: "Attacks refused: same faction (or itself).",
    AttackRejectedTargetDead / attack_rejected_target_dead: "Attacks refused: the target has no hit points.",
    AttackRejectedOutOfRange / attack_rejected_out_of_range: "Attacks refused: farther than attack_range_m.",
    AttackRejectedCooldown / attack_rejected_cooldown: "Attacks refused: sooner than attack_cooldown_ms after its last landed attack.",
    LootDropped / loot_dropped: "Killed adds that dropped loot.",
    LootClaimed / loot_claimed: "Loot claims that credited their loot (one per drop at most).",
    LootClaimRepeats / loot_claim_repeats: "Loot claims answered again: the claimer had already claimed that loot.",
    LootGoldClaimed / loot_gold_claimed: "Gold credited by loot claims.",
    LootItemsClaimed / loot_items_claimed: "Items credited by loot claims.",
    LootRejectedUnknownPlayer / loot_rejected_unknown_player: "Loot claims refused: the claimer is not a live player.",
    LootRejectedWrongSession / loot_rejected_wrong_session: "Loot claims refused: session token mismatch.",
    LootRejectedUnknownLoot / loot_rejected_unknown_loot: "Loot claims refused: no such raid object.",
    LootRejectedNoLoot / loot_rejected_no_loot: "Loot claims refused: the object holds no loot.",
    LootRejectedNotYours / loot_rejected_not_yours: "Loot claims refused: another player's kill.",
    LootRejectedOutOfRange / loot_rejected_out_of_range: "Loot claims refused: farther than loot_range_m.",
    LootRejectedWalletFull / loot_rejected_wallet_full: "Loot claims refused: the wallet cannot hold it.",
    EconomyApplied / economy_applied: "Economy operations applied.",
    EconomyDuplicates / economy_duplicates: "Economy retransmits answered from the de-duplication record.",
    EconomyInvalidAmount / economy_invalid_amount: "Economy refused: invalid amount.",
    EconomyOverflow / economy_overflow: "Economy refused: amount or balance overflow.",
    EconomySelfTrade / economy_self_trade: "Economy refused: self-trade.",
    EconomyUnknownItem / economy_unknown_item: "Economy refused: unknown item.",
    EconomyInsufficientFunds / economy_insufficient_funds: "Economy refused: insufficient funds.",
    EconomyInsufficientItems / economy_insufficient_items: "Economy refused: insufficient items.",
    EconomyUnknownPlayer / economy_unknown_player: "Economy refused: unknown player.",
    EconomyPlayerDeparted / economy_player_departed: "Economy refused: player departed.",
    EconomyWrongSession / economy_wrong_session: "Economy refused: wrong session.",
    EconomyTooOld / economy_too_old: "Economy refused: transaction older than the window.",
    EconomyBadKind / economy_bad_kind: "Economy refused: unknown operation kind.",
    EconomyInvalidTransaction / economy_invalid_transaction: "Economy refused: transaction id 0, or more than 2^20 above the account's highest.",
    EconomyOfferPending / economy_offer_pending: "Economy refused: the maker already has an open trade offer.",
    EconomyNoSuchOffer / economy_no_such_offer: "Economy refused: no open trade offer with that id.",
    EconomyNotYourOffer / economy_not_your_offer: "Economy refused: an answer to another player's trade offer.",
    EconomyOfferExpired / economy_offer_expired: "Economy refused: the trade offer had timed out.",
    EconomyKindRetired / economy_kind_retired: "Economy refused: a retired kind (trade without consent, loot pickup).",
    EconomyStorageBusy / economy_storage_busy: "Economy refused: the journal was full (the disk behind); retransmit.",
    LootRejectedStorageBusy / loot_rejected_storage_busy: "Loot claims refused: the economy's journal was full.",
    LootRejectedDead / loot_rejected_dead: "Loot claims refused: the claimer is dead (until it respawns).",
    AccountsCreated / accounts_created: "Accounts whose first join created their wallet.",
    AccountsResumed / accounts_resumed: "Joins that resumed their account's wallet.",
    JoinsRefusedAccount / joins_refused_account: "Joins refused: the account is in a live session, or none was named with a store open.",
    LedgerGroups / ledger_groups: "Groups of ledger entries made durable (one store commit, one fsync, each).",
    LedgerEntries / ledger_entries: "Ledger entries made durable.",
    LedgerCommitFailures / ledger_commit_failures: "Store commits that failed (retried; nothing told until one succeeds).",
    TradeOffers / trade_offers: "Trade offers opened (their give in escrow).",
    TradesAccepted / trades_accepted: "Trade offers accepted: both sides moved.",
    TradesDeclined / trades_declined: "Trade offers declined by their taker.",
    TradesCancelled / trades_cancelled: "Trade offers cancelled by their maker.",
    TradesExpired / trades_expired: "Trade offers that timed out (escrow back to the maker).",
    Grants / grants: "Admin grants applied.",
    GrantGold / grant_gold: "Gold admin grants minted.",
    GrantItems / grant_items: "Items admin grants minted.",
    Ticks / ticks: "Ticks run.",
    AoiQueries / aoi_queries: "Area-of-interest snapshots built.",
    AoiNotInSnapshot / aoi_not_in_snapshot: "Area-of-interest queries that found no entry for their player in the latest world snapshot.",
    AoiWideLooks / aoi_wide_looks: "Area-of-interest queries that looked again over the whole radius (their hint held fewer than k).",
    SnapshotsPublished / snapshots_published: "World snapshots published by the tick.",
    SnapshotsSkipped / snapshots_skipped: "Ticks that published no snapshot because readers pinned every spare buffer.",
    LockGridContended / lock_grid_contended: "Grid shard acquisitions that found the shard locked.",
    LockGridWaitNs / lock_grid_wait_ns: "Nanoseconds spent waiting for grid shards.",
    LockBodyContended / lock_body_contended: "Body lock acquisitions that found the lock held.",
    LockBodyWaitNs / lock_body_wait_ns: "Nanoseconds spent waiting for body locks.",
    LockEconomyContended / lock_economy_contended: "Economy lock acquisitions (wallets, homes) that found the lock held.",
    LockEconomyWaitNs / lock_economy_wait_ns: "Nanoseconds spent waiting for economy locks (wallets, homes).",
    MovesWaitedGrid / moves_waited_grid: "Moves that waited at least once for a grid shard.",
    MovesWaitedBody / moves_waited_body: "Moves that waited for their body lock.",
}

const _: () = assert!(std::mem::size_of::<StatsSnapshot>() == COUNTER_COUNT * 8);

impl StatsSnapshot {
    /// Moves refused, all reasons together.
    pub fn moves_rejected(&self) -> u64 {
        self.move_rejected_unknown_player
            + self.move_rejected_wrong_session
            + self.move_rejected_stale_sequence
            + self.move_rejected_too_fast
            + self.move_rejected_out_of_bounds
            + self.move_rejected_dead
    }
}

impl Counter {
    /// The counter for a move rejection reason.
    pub fn for_reject(reason: RejectReason) -> Counter {
        match reason {
            RejectReason::UnknownPlayer => Counter::MoveRejectedUnknownPlayer,
            RejectReason::WrongSession => Counter::MoveRejectedWrongSession,
            RejectReason::StaleSequence => Counter::MoveRejectedStaleSequence,
            RejectReason::TooFast => Counter::MoveRejectedTooFast,
            RejectReason::OutOfBounds => Counter::MoveRejectedOutOfBounds,
            RejectReason::Dead => Counter::MoveRejectedDead,
        }
    }

    /// The counter for an economy outcome that was decided now (not a duplicate).
    pub fn for_economy(status: EconomyStatus) -> Counter {
        match status {
            EconomyStatus::Applied => Counter::EconomyApplied,
            EconomyStatus::InvalidAmount => Counter::EconomyInvalidAmount,
            EconomyStatus::Overflow => Counter::EconomyOverflow,
            EconomyStatus::SelfTrade => Counter::EconomySelfTrade,
            EconomyStatus::UnknownItem => Counter::EconomyUnknownItem,
            EconomyStatus::InsufficientFunds => Counter::EconomyInsufficientFunds,
            EconomyStatus::InsufficientItems => Counter::EconomyInsufficientItems,
            EconomyStatus::UnknownPlayer => Counter::EconomyUnknownPlayer,
            EconomyStatus::PlayerDeparted => Counter::EconomyPlayerDeparted,
            EconomyStatus::WrongSession => Counter::EconomyWrongSession,
            EconomyStatus::TransactionTooOld => Counter::EconomyTooOld,
            EconomyStatus::BadKind => Counter::EconomyBadKind,
            EconomyStatus::InvalidTransaction => Counter::EconomyInvalidTransaction,
            EconomyStatus::OfferPending => Counter::EconomyOfferPending,
            EconomyStatus::NoSuchOffer => Counter::EconomyNoSuchOffer,
            EconomyStatus::NotYourOffer => Counter::EconomyNotYourOffer,
            EconomyStatus::OfferExpired => Counter::EconomyOfferExpired,
            EconomyStatus::KindRetired => Counter::EconomyKindRetired,
            EconomyStatus::StorageBusy => Counter::EconomyStorageBusy,
        }
    }
}

type Stripe = CachePadded<[AtomicU64; COUNTER_COUNT]>;

/// Striped counters. Written by every applying thread (own stripe), read by stats readers.
pub struct Stats {
    /// One block of counters per stripe; a thread writes only the stripe it was given.
    stripes: Box<[Stripe]>,
}

static NEXT_STRIPE: AtomicUsize = AtomicUsize::new(0);

thread_local! {
    /// This thread's stripe, assigned round-robin on first use (const-initialised: reading it
    /// never allocates).
    static MY_STRIPE: Cell<usize> = const { Cell::new(usize::MAX) };
}

fn my_stripe() -> usize {
    MY_STRIPE.with(|s| {
        let mut v = s.get();
        if v == usize::MAX {
            v = NEXT_STRIPE.fetch_add(1, Ordering::Relaxed) % STRIPES;
            s.set(v);
        }
        v
    })
}

impl Default for Stats {
    fn default() -> Self {
        Self::new()
    }
}

impl Stats {
    /// All counters at zero.
    pub fn new() -> Self {
        let stripes =
            (0..STRIPES).map(|_| CachePadded::new(std::array::from_fn(|_| AtomicU64::new(0)))).collect::<Vec<Stripe>>().into_boxed_slice();
        Self { stripes }
    }

    /// Adds `n` to `counter` on the calling thread's stripe.
    #[inline]
    pub fn add(&self, counter: Counter, n: u64) {
        if n != 0 {
            self.stripes[my_stripe()][counter as usize].fetch_add(n, Ordering::Relaxed);
        }
    }

    /// Adds one to `counter`.
    #[inline]
    pub fn bump(&self, counter: Counter) {
        self.add(counter, 1);
    }

    /// Adds a tally of waits on one kind of lock to that kind's two counters.
    #[inline]
    pub fn add_waits(&self, kind: LockKind, waits: LockWaits) {
        let (contended, wait_ns) = match kind {
            LockKind::Grid => (Counter::LockGridContended, Counter::LockGridWaitNs),
            LockKind::Body => (Counter::LockBodyContended, Counter::LockBodyWaitNs),
            LockKind::Economy => (Counter::LockEconomyContended, Counter::LockEconomyWaitNs),
        };
        self.add(contended, waits.contended);
        self.add(wait_ns, waits.wait_ns);
    }

    /// Sums every stripe (see the module doc for the consistency this gives).
    pub fn snapshot(&self) -> StatsSnapshot {
        let mut sums = [0u64; COUNTER_COUNT];
        for stripe in self.stripes.iter() {
            for (sum, cell) in sums.iter_mut().zip(stripe.iter()) {
                *sum += cell.load(Ordering::Relaxed);
            }
        }
        StatsSnapshot::from_sums(&sums)
    }
}

#[cfg(all(test, not(mmo_loom)))]
mod tests {
    use super::*;

    #[test]
    fn counts_from_many_threads_add_up() {
        let stats = Stats::new();
        std::thread::scope(|s| {
            for _ in 0..4 {
                s.spawn(|| {
                    for _ in 0..10_000 {
                        stats.bump(Counter::MovesApplied);
                    }
                    stats.add(Counter::Kills, 3);
                });
            }
        });
        let snap = stats.snapshot();
        assert_eq!(snap.moves_applied, 40_000);
        assert_eq!(snap.kills, 12);
        assert_eq!(snap.get(Counter::Kills), 12);
        assert_eq!(snap.joins, 0);
    }

    #[test]
    fn every_reason_has_its_own_counter() {
        use std::collections::HashSet;
        let reasons = [1u8, 2, 3, 4, 5, 6].map(|v| Counter::for_reject(RejectReason::try_from(v).unwrap()) as usize);
        assert_eq!(reasons.iter().collect::<HashSet<_>>().len(), reasons.len());
        let statuses: Vec<usize> = (0u8..=18).map(|v| Counter::for_economy(EconomyStatus::try_from(v).unwrap()) as usize).collect();
        assert_eq!(statuses.iter().collect::<HashSet<_>>().len(), statuses.len());
    }
}
