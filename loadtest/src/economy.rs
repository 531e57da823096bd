//! One bot's economy traffic: reliable requests with retransmits and deliberate duplicates,
//! and a ledger of what the server answered, so the run can check the server's books.
//!
//! Each bot first picks up loot (minting gold and items), then, on a fixed schedule, makes
//! transfers and trades with random other bots. A request is resent with the `RETRANSMIT`
//! flag every `timeout` until its `ECONOMY_RESULT` arrives; some requests are also sent twice
//! on purpose (same transaction id, `RETRANSMIT` set) to exercise the server's de-duplication.
//! One transaction is in flight per bot at a time, far inside the engine's 32-id
//! de-duplication window, so no answer is ever `TransactionTooOld`.
//!
//! The ledger ([`EconomyTally`]) is what the economy check compares with the server's
//! figures. The subtle part: a transaction whose every result was lost may still have been
//! applied. So the agent resends until *some* result arrives (a resend of a decided
//! transaction returns the recorded outcome with `duplicate = 1`), and every transaction ends
//! with a known outcome, counted once by transaction id. If one never gets an answer it is
//! counted as unknown, and the check fails rather than guess. The ledger also catches the
//! server breaking at-most-once: two first-time (`duplicate = 0`) answers for one transaction,
//! or a duplicate answer whose status differs from the recorded one.
//!
//! The agent does no I/O: [`EconomyAgent::poll`] says what to send, [`EconomyAgent::on_result`]
//! takes what arrived, which keeps it testable without a server.

use crate::protocol::{EconomyKind, EconomyRequest, EconomyResult, EconomyStatus, Flags};
use crate::rng::Rng;
use crate::schedule::{Pacer, Schedule, elapsed_us};
use serde::Serialize;
use std::time::{Duration, Instant};

/// How a bot trades.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct EconomyPlan {
    /// Time between intended starts of transactions.
    pub interval: Duration,
    /// Resend an unanswered request after this long.
    pub timeout: Duration,
    /// Share of transactions deliberately sent twice at once.
    pub duplicate_ratio: f64,
    /// Sends of one transaction (first send included) before its outcome is declared unknown.
    pub max_attempts: u32,
    /// Gold minted by the first transaction (a loot pickup).
    pub loot_gold: i64,
    /// Items minted with it.
    pub loot_items: i32,
    /// The item kind looted and traded.
    pub item_kind: u16,
    /// A transfer moves 1 to this much gold.
    pub transfer_gold_max: i64,
    /// A trade pays this much gold for [`Self::trade_items`] items.
    pub trade_gold: i64,
    /// Items bought per trade.
    pub trade_items: i32,
}

impl Default for EconomyPlan {
    fn default() -> Self {
        EconomyPlan {
            interval: Duration::from_millis(500),
            timeout: Duration::from_millis(200),
            duplicate_ratio: 0.1,
            max_attempts: 100,
            loot_gold: 100_000,
            loot_items: 1_000,
            item_kind: 3,
            transfer_gold_max: 50,
            trade_gold: 5,
            trade_items: 1,
        }
    }
}

/// A request to put on the wire.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Outgoing {
    /// The request.
    pub request: EconomyRequest,
    /// `RETRANSMIT` on every send but the first.
    pub flags: Flags,
}

/// What the bots saw of the economy; summed over bots for the economy check.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct EconomyTally {
    /// Transactions started.
    pub started: u64,
    /// Transactions with a known outcome of "applied", counted once per transaction id.
    pub applied: u64,
    /// Transactions with a known outcome other than applied.
    pub refused: u64,
    /// Transactions that never got any answer (outcome unknown; the check fails on any).
    pub unknown: u64,
    /// Gold minted by applied loot pickups.
    pub loot_gold_applied: u64,
    /// Requests sent (first sends, retransmits and deliberate duplicates).
    pub requests_sent: u64,
    /// Resends after a timeout.
    pub retransmits: u64,
    /// Deliberate immediate duplicates.
    pub deliberate_duplicates: u64,
    /// `ECONOMY_RESULT`s received.
    pub results_received: u64,
    /// Of those, answers to resends (`duplicate = 1`).
    pub duplicate_results: u64,
    /// Results for a transaction id this bot never had in flight.
    pub stray_results: u64,
    /// Transactions that got a second first-time answer (at-most-once broken).
    pub repeated_first_answers: u64,
    /// Answers whose status differed from the transaction's recorded outcome.
    pub inconsistent_answers: u64,
    /// Known refusals by status (index = status byte).
    pub refused_by_status: [u64; 13],
}

impl EconomyTally {
    /// Adds another bot's tally.
    pub fn add(&mut self, o: &EconomyTally) {
        self.started += o.started;
        self.applied += o.applied;
        self.refused += o.refused;
        self.unknown += o.unknown;
        self.loot_gold_applied += o.loot_gold_applied;
        self.requests_sent += o.requests_sent;
        self.retransmits += o.retransmits;
        self.deliberate_duplicates += o.deliberate_duplicates;
        self.results_received += o.results_received;
        self.duplicate_results += o.duplicate_results;
        self.stray_results += o.stray_results;
        self.repeated_first_answers += o.repeated_first_answers;
        self.inconsistent_answers += o.inconsistent_answers;
        for (a, b) in self.refused_by_status.iter_mut().zip(o.refused_by_status) {
            *a += b;
        }
    }
}

struct InFlight {
    request: EconomyRequest,
    intended: Instant,
    next_retry: Instant,
    attempts: u32,
    first_answers: u32,
}

/// A decided (or abandoned) transaction, remembered to judge late answers.
#[derive(Clone, Copy, Default)]
struct Decided {
    transaction_id: u64,
    /// `None`: abandoned without an answer (outcome unknown until one arrives).
    status: Option<EconomyStatus>,
    first_answers: u32,
    loot_gold: u64,
}

const RECENT: usize = 16;

fn loot_gold_of(request: &EconomyRequest) -> u64 {
    if request.kind == EconomyKind::LootPickup { request.gold.max(0) as u64 } else { 0 }
}

/// One bot's economy state machine.
pub struct EconomyAgent {
    plan: EconomyPlan,
    player_id: u64,
    session_token: u64,
    pacer: Pacer,
    next_transaction: u64,
    in_flight: Option<InFlight>,
    recent: [Decided; RECENT],
    measure_from: Instant,
    /// The ledger.
    pub tally: EconomyTally,
}

impl EconomyAgent {
    /// An agent for one session whose transaction `k` is intended for `schedule.intended(k)`,
    /// starting none intended at or after `end`. Latencies of transactions intended before
    /// `measure_from` (the warm-up) are not reported; they are still counted in the ledger.
    pub fn new(plan: EconomyPlan, player_id: u64, session_token: u64, schedule: Schedule, end: Instant, measure_from: Instant) -> Self {
        EconomyAgent {
            plan,
            player_id,
            session_token,
            pacer: Pacer::until(schedule, end),
            next_transaction: 1,
            in_flight: None,
            recent: [Decided::default(); RECENT],
            measure_from,
            tally: EconomyTally::default(),
        }
    }

    /// When [`Self::poll`] next has something to do.
    pub fn next_deadline(&self) -> Option<Instant> {
        match &self.in_flight {
            Some(f) => Some(f.next_retry),
            None => self.pacer.next_deadline(),
        }
    }

    /// Whether nothing is in flight and no transaction is left to start.
    pub fn settled(&self) -> bool {
        self.in_flight.is_none() && self.pacer.is_done()
    }

    /// Starts no new transaction (an early stop); the one in flight is still resent.
    pub fn stop_starting(&mut self) {
        self.pacer.stop();
    }

    /// What to send at `now`: a retransmit, or a new transaction (with, sometimes, its
    /// deliberate duplicate). `peers` are the other bots' player ids to trade with.
    pub fn poll(&mut self, now: Instant, rng: &mut Rng, peers: &[u64]) -> [Option<Outgoing>; 2] {
        if let Some(f) = &mut self.in_flight {
            if now < f.next_retry {
                return [None, None];
            }
            if f.attempts < self.plan.max_attempts {
                f.attempts += 1;
                f.next_retry = now + self.plan.timeout;
                self.tally.retransmits += 1;
                self.tally.requests_sent += 1;
                return [Some(Outgoing { request: f.request, flags: Flags::RETRANSMIT }), None];
            }
            self.abandon_in_flight();
        }
        let Some((k, intended)) = self.pacer.take_due(now) else {
            return [None, None];
        };
        let request = self.build(k, rng, peers);
        self.in_flight = Some(InFlight { request, intended, next_retry: now + self.plan.timeout, attempts: 1, first_answers: 0 });
        self.tally.started += 1;
        self.tally.requests_sent += 1;
        let duplicate = rng.chance(self.plan.duplicate_ratio).then(|| {
            self.tally.deliberate_duplicates += 1;
            self.tally.requests_sent += 1;
            Outgoing { request, flags: Flags::RETRANSMIT }
        });
        [Some(Outgoing { request, flags: Flags::NONE }), duplicate]
    }

    fn build(&mut self, k: u64, rng: &mut Rng, peers: &[u64]) -> EconomyRequest {
        let transaction_id = self.next_transaction;
        self.next_transaction += 1;
        let base = EconomyRequest {
            player_id: self.player_id,
            session_token: self.session_token,
            transaction_id,
            counterparty_id: 0,
            gold: 0,
            item_count: 0,
            item_kind: self.plan.item_kind,
            kind: EconomyKind::LootPickup,
        };
        let others = peers.iter().filter(|&&p| p != self.player_id).count() as u64;
        if k == 0 || others == 0 {
            // The first transaction mints the bot's working capital; a lone bot only loots.
            let (gold, items) = if k == 0 { (self.plan.loot_gold, self.plan.loot_items) } else { (1, 0) };
            return EconomyRequest { gold, item_count: items, ..base };
        }
        let pick = rng.below(others) as usize;
        let counterparty_id = peers.iter().copied().filter(|&p| p != self.player_id).nth(pick).unwrap_or(0);
        if k % 2 == 1 {
            let gold = 1 + rng.below(self.plan.transfer_gold_max.max(1) as u64) as i64;
            EconomyRequest { counterparty_id, gold, kind: EconomyKind::Transfer, ..base }
        } else {
            EconomyRequest {
                counterparty_id,
                gold: self.plan.trade_gold,
                item_count: self.plan.trade_items,
                kind: EconomyKind::Trade,
                ..base
            }
        }
    }

    /// Gives up on the transaction in flight: its outcome is unknown unless an answer still
    /// arrives later.
    pub fn abandon_in_flight(&mut self) {
        if let Some(f) = self.in_flight.take() {
            self.tally.unknown += 1;
            let loot_gold = loot_gold_of(&f.request);
            self.remember(Decided { transaction_id: f.request.transaction_id, status: None, first_answers: f.first_answers, loot_gold });
        }
    }

    fn remember(&mut self, d: Decided) {
        self.recent[(d.transaction_id % RECENT as u64) as usize] = d;
    }

    fn decide(&mut self, status: EconomyStatus, loot_gold: u64) {
        if status == EconomyStatus::Applied {
            self.tally.applied += 1;
            self.tally.loot_gold_applied += loot_gold;
        } else {
            self.tally.refused += 1;
            self.tally.refused_by_status[usize::from(status.as_u8()).min(12)] += 1;
        }
    }

    /// Takes one `ECONOMY_RESULT`. Returns the transaction's latency (from its first send's
    /// intended time) when this result decides a transaction intended after the warm-up.
    pub fn on_result(&mut self, now: Instant, r: &EconomyResult) -> Option<u64> {
        self.tally.results_received += 1;
        if r.duplicate {
            self.tally.duplicate_results += 1;
        }
        if let Some(f) = self.in_flight.as_ref().filter(|f| f.request.transaction_id == r.transaction_id) {
            let first_answers = f.first_answers + u32::from(!r.duplicate);
            let loot_gold = loot_gold_of(&f.request);
            let intended = f.intended;
            self.in_flight = None;
            self.decide(r.status, loot_gold);
            self.remember(Decided { transaction_id: r.transaction_id, status: Some(r.status), first_answers, loot_gold });
            return (intended >= self.measure_from).then(|| elapsed_us(intended, now));
        }
        let slot = (r.transaction_id % RECENT as u64) as usize;
        let d = self.recent[slot];
        if d.transaction_id != r.transaction_id || r.transaction_id == 0 {
            self.tally.stray_results += 1;
            return None;
        }
        let mut d = d;
        if !r.duplicate {
            d.first_answers += 1;
            if d.first_answers >= 2 {
                self.tally.repeated_first_answers += 1;
            }
        }
        match d.status {
            None => {
                // A late answer for an abandoned transaction: its outcome is known after all.
                self.tally.unknown -= 1;
                d.status = Some(r.status);
                self.decide(r.status, d.loot_gold);
            }
            Some(s) if s != r.status => self.tally.inconsistent_answers += 1,
            Some(_) => {}
        }
        self.recent[slot] = d;
        None
    }
}
