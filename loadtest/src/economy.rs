//! One bot's economy traffic: reliable requests with retransmits and deliberate duplicates,
//! and a ledger of what the server answered, so the run can check the server's books.
//!
//! Each bot's working capital is an admin `GRANT` made before play (gold and one item kind;
//! see `run.rs`): no client request creates value. On a fixed schedule the bot then alternates
//! gifts (`TRANSFER` of gold to a random other bot) and trade offers (`TRADE_OFFER`: some gold
//! for some of a random other bot's items). A bot told of an offer for it (`TRADE_NOTICE`)
//! answers it (`TRADE_ANSWER`), accepting most and declining the rest; answers go before the
//! schedule's next transaction. A request is resent with the `RETRANSMIT` flag every
//! `timeout` until its `ECONOMY_RESULT` arrives; some requests are also sent twice on purpose
//! (same transaction id, `RETRANSMIT` set) to exercise the server's de-duplication. One
//! transaction is in flight per bot at a time, far inside the engine's 32-id de-duplication
//! window, so no answer is ever `TransactionTooOld`.
//!
//! The ledger ([`EconomyTally`]) is what the economy check compares with the server's
//! figures. The subtle part: a transaction whose every result was lost may still have been
//! applied. So the agent resends until *some* result arrives (a resend of a decided
//! transaction returns the recorded outcome with `duplicate = 1`), and every transaction ends
//! with a known outcome, counted once by transaction id. If one never gets an answer it is
//! counted as unknown, and the check fails rather than guess. A server that falls behind
//! (answers seconds late) leaves a bot with transactions due that it could not start during
//! the run: once the run and its drain are over they are not started but counted
//! (`not_started`), and the settle time goes to the one in flight. The ledger also catches the
//! server breaking at-most-once: two first-time (`duplicate = 0`) answers for one transaction,
//! or a duplicate answer whose status differs from the recorded one.
//!
//! The agent does no I/O: [`EconomyAgent::poll`] says what to send, [`EconomyAgent::on_result`]
//! and [`EconomyAgent::on_trade_notice`] take what arrived, which keeps it testable without a
//! server.

use crate::protocol::{
    EconomyKind, EconomyRequest, EconomyResult, EconomyStatus, Flags, Message, TradeAnswer, TradeEvent, TradeNotice, TradeOffer, TradeSide,
};
use crate::rng::Rng;
use crate::schedule::{Pacer, Schedule, elapsed_us};
use mmo_core::config::ITEM_KINDS;
use serde::Serialize;
use std::time::{Duration, Instant};

/// What a bot trades with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EconomyMode {
    /// The economy scenario: working capital granted before play; gifts of gold alternate with
    /// offers of gold for the taker's items.
    Capital,
    /// The raid scenario: only what the bot looted. It offers one item of a kind it claimed
    /// for some gold (nothing, when it holds no item), and answers offers like any bot.
    Loot,
}

/// How a bot trades.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct EconomyPlan {
    /// What the bot trades with.
    pub mode: EconomyMode,
    /// Time between intended starts of transactions.
    pub interval: Duration,
    /// Resend an unanswered request after this long.
    pub timeout: Duration,
    /// Share of transactions deliberately sent twice at once.
    pub duplicate_ratio: f64,
    /// Sends of one transaction (first send included) before its outcome is declared unknown.
    pub max_attempts: u32,
    /// Gold each bot is granted before play (its working capital).
    pub grant_gold: i64,
    /// Items of [`Self::item_kind`] granted with it.
    pub grant_items: i32,
    /// The item kind granted and traded.
    pub item_kind: u16,
    /// A transfer moves 1 to this much gold.
    pub transfer_gold_max: i64,
    /// An offer gives this much gold for [`Self::trade_items`] of the taker's items.
    pub trade_gold: i64,
    /// Items wanted per offer.
    pub trade_items: i32,
    /// Share of offers their taker accepts (the rest it declines).
    pub accept_ratio: f64,
}

impl Default for EconomyPlan {
    fn default() -> Self {
        EconomyPlan {
            mode: EconomyMode::Capital,
            interval: Duration::from_millis(500),
            timeout: Duration::from_millis(200),
            duplicate_ratio: 0.1,
            max_attempts: 100,
            grant_gold: 100_000,
            grant_items: 1_000,
            item_kind: 3,
            transfer_gold_max: 50,
            trade_gold: 5,
            trade_items: 1,
            accept_ratio: 0.8,
        }
    }
}

/// A reliable economy request: a gift (or any `ECONOMY_REQUEST`), a trade offer, or an
/// answer to one. All three are answered by `ECONOMY_RESULT` and de-duplicated by the
/// initiator's transaction id.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Request {
    /// An `ECONOMY_REQUEST`.
    Economy(EconomyRequest),
    /// A `TRADE_OFFER`.
    Offer(TradeOffer),
    /// A `TRADE_ANSWER`.
    Answer(TradeAnswer),
}

impl Request {
    /// Its transaction id.
    pub fn transaction_id(&self) -> u64 {
        match self {
            Request::Economy(r) => r.transaction_id,
            Request::Offer(o) => o.transaction_id,
            Request::Answer(a) => a.transaction_id,
        }
    }

    /// The message to send.
    pub fn message(&self) -> Message<'static> {
        match *self {
            Request::Economy(r) => r.into(),
            Request::Offer(o) => o.into(),
            Request::Answer(a) => a.into(),
        }
    }

    fn kind(&self) -> Kind {
        match self {
            Request::Economy(_) => Kind::Gift,
            Request::Offer(_) => Kind::Offer,
            Request::Answer(a) if a.accept => Kind::Accept,
            Request::Answer(_) => Kind::Decline,
        }
    }
}

/// What a transaction was, for the tally of applied ones.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
enum Kind {
    #[default]
    Gift,
    Offer,
    Accept,
    Decline,
}

/// A request to put on the wire.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Outgoing {
    /// The request.
    pub request: Request,
    /// `RETRANSMIT` on every send but the first.
    pub flags: Flags,
}

/// Offers a bot was told of and has yet to answer, at most (more are counted, not answered:
/// they time out on the server).
pub const ANSWER_QUEUE: usize = 8;

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
    /// Transactions due by the schedule that were not started by the end of the run and its
    /// drain (one in flight at a time: the server answered too slowly for the schedule).
    pub not_started: u64,
    /// Of the applied: trade offers opened.
    pub offers_applied: u64,
    /// Of the applied: accepts (both sides of a trade moved).
    pub accepts_applied: u64,
    /// Of the applied: declines.
    pub declines_applied: u64,
    /// `TRADE_NOTICE`s received, by event (index = event byte; 0 unused).
    pub trade_notices: [u64; 4],
    /// Offers told of but not answered (the answer queue was full).
    pub offers_unanswered: u64,
    /// Schedule slots with nothing to offer (a looting bot holding no item).
    pub idle_slots: u64,
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
    pub refused_by_status: [u64; 19],
    /// `StorageBusy` answers: not decisions (the server's disk was behind); resent.
    pub storage_busy: u64,
}

impl EconomyTally {
    /// Adds another bot's tally.
    pub fn add(&mut self, o: &EconomyTally) {
        self.started += o.started;
        self.applied += o.applied;
        self.refused += o.refused;
        self.unknown += o.unknown;
        self.not_started += o.not_started;
        self.offers_applied += o.offers_applied;
        self.accepts_applied += o.accepts_applied;
        self.declines_applied += o.declines_applied;
        for (a, b) in self.trade_notices.iter_mut().zip(o.trade_notices) {
            *a += b;
        }
        self.offers_unanswered += o.offers_unanswered;
        self.idle_slots += o.idle_slots;
        self.requests_sent += o.requests_sent;
        self.retransmits += o.retransmits;
        self.deliberate_duplicates += o.deliberate_duplicates;
        self.results_received += o.results_received;
        self.duplicate_results += o.duplicate_results;
        self.stray_results += o.stray_results;
        self.repeated_first_answers += o.repeated_first_answers;
        self.inconsistent_answers += o.inconsistent_answers;
        self.storage_busy += o.storage_busy;
        for (a, b) in self.refused_by_status.iter_mut().zip(o.refused_by_status) {
            *a += b;
        }
    }
}

struct InFlight {
    request: Request,
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
    kind: Kind,
}

const RECENT: usize = 16;

/// One bot's economy state machine.
pub struct EconomyAgent {
    plan: EconomyPlan,
    player_id: u64,
    session_token: u64,
    pacer: Pacer,
    next_transaction: u64,
    in_flight: Option<InFlight>,
    recent: [Decided; RECENT],
    /// Offers to answer: (maker, offer id, what the maker gives, decline whatever the dice
    /// say), oldest first.
    answers: [(u64, u64, TradeSide, bool); ANSWER_QUEUE],
    answers_head: usize,
    answers_len: usize,
    /// When the oldest queued answer became due.
    answer_due: Instant,
    /// Items the bot believes it holds, per kind (its loot, what it traded): what a looting
    /// bot offers. A wrong belief costs a refused offer, nothing else.
    inventory: [u64; ITEM_KINDS],
    /// Its own open offer: (offer id, what it gave), to take back on a decline or refusal.
    open_offer: Option<(u64, TradeSide)>,
    /// What the offer it is accepting gives it (credited to the inventory once applied).
    answering: Option<TradeSide>,
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
            answers: [(0, 0, TradeSide::default(), false); ANSWER_QUEUE],
            inventory: [0; ITEM_KINDS],
            open_offer: None,
            answering: None,
            answers_head: 0,
            answers_len: 0,
            answer_due: measure_from,
            measure_from,
            tally: EconomyTally::default(),
        }
    }

    /// When [`Self::poll`] next has something to do.
    pub fn next_deadline(&self) -> Option<Instant> {
        match &self.in_flight {
            Some(f) => Some(f.next_retry),
            // An answer is due from its notice's arrival: at once.
            None if self.answers_len > 0 => Some(self.answer_due),
            None => self.pacer.next_deadline(),
        }
    }

    /// Whether nothing is in flight, no offer waits for its answer, and no transaction is left
    /// to start.
    pub fn settled(&self) -> bool {
        self.in_flight.is_none() && self.answers_len == 0 && self.pacer.is_done()
    }

    /// A `TRADE_NOTICE` for this bot: an offer for it is queued to be answered; an accept or
    /// decline of its own offer is counted.
    pub fn on_trade_notice(&mut self, n: &TradeNotice, now: Instant) {
        self.tally.trade_notices[usize::from(n.event.as_u8()).min(3)] += 1;
        if n.event != TradeEvent::Offered {
            if let Some((id, give)) = self.open_offer
                && id == n.offer_id
            {
                self.open_offer = None;
                if n.event == TradeEvent::Declined {
                    self.take_back(&give);
                }
            }
            return;
        }
        self.queue_answer((n.maker_id, n.offer_id, n.give, false), now);
    }

    fn queue_answer(&mut self, answer: (u64, u64, TradeSide, bool), now: Instant) {
        if self.answers_len == ANSWER_QUEUE {
            self.tally.offers_unanswered += 1;
            return;
        }
        if self.answers_len == 0 {
            self.answer_due = now;
        }
        self.answers[(self.answers_head + self.answers_len) % ANSWER_QUEUE] = answer;
        self.answers_len += 1;
    }

    fn start(&mut self, request: Request, intended: Instant, now: Instant, rng: &mut Rng) -> [Option<Outgoing>; 2] {
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

    /// Starts no new transaction (an early stop); the one in flight is still resent.
    pub fn stop_starting(&mut self) {
        self.pacer.stop();
    }

    /// The run and its drain are over: the transactions the schedule still has are not
    /// started, and counted in `not_started`; the one in flight and the answers owed to other
    /// bots' offers are still sent.
    pub fn end_of_run(&mut self) {
        self.tally.not_started += self.pacer.left();
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
        if self.answers_len > 0 {
            let (maker_id, offer_id, give, must_decline) = self.answers[self.answers_head];
            self.answers_head = (self.answers_head + 1) % ANSWER_QUEUE;
            self.answers_len -= 1;
            self.answer_due = now;
            let answer = TradeAnswer {
                player_id: self.player_id,
                session_token: self.session_token,
                transaction_id: self.take_transaction_id(),
                maker_id,
                offer_id,
                accept: !must_decline && rng.chance(self.plan.accept_ratio),
            };
            self.answering = answer.accept.then_some(give);
            return self.start(Request::Answer(answer), now, now, rng);
        }
        let Some((k, intended)) = self.pacer.take_due(now) else {
            return [None, None];
        };
        match self.build(k, rng, peers) {
            Some(request) => self.start(request, intended, now, rng),
            None => {
                self.tally.idle_slots += 1;
                [None, None]
            }
        }
    }

    /// Loot the bot claimed: items it may offer.
    pub fn on_loot(&mut self, item_kind: u16, item_count: u32) {
        if let Some(held) = self.inventory.get_mut(usize::from(item_kind)) {
            *held += u64::from(item_count);
        }
    }

    fn take_back(&mut self, s: &TradeSide) {
        self.on_loot(s.item_kind, s.item_count.max(0) as u32);
    }

    fn take_transaction_id(&mut self) -> u64 {
        let id = self.next_transaction;
        self.next_transaction += 1;
        id
    }

    fn build(&mut self, k: u64, rng: &mut Rng, peers: &[u64]) -> Option<Request> {
        let others = peers.iter().filter(|&&p| p != self.player_id).count() as u64;
        let counterparty_id = match others {
            0 => 0, // a lone bot's gift goes nowhere: refused unknown_player, a known outcome
            n => peers.iter().copied().filter(|&p| p != self.player_id).nth(rng.below(n) as usize).unwrap_or(0),
        };
        if self.plan.mode == EconomyMode::Loot {
            // One looted item for some gold, to a random other bot; nothing to offer, no offer.
            let kind = self.inventory.iter().position(|&n| n > 0)?;
            if others == 0 {
                return None;
            }
            self.inventory[kind] -= 1;
            let give = TradeSide { gold: 0, item_count: 1, item_kind: kind as u16 };
            let transaction_id = self.take_transaction_id();
            self.open_offer = Some((transaction_id, give));
            return Some(Request::Offer(TradeOffer {
                player_id: self.player_id,
                session_token: self.session_token,
                transaction_id,
                counterparty_id,
                give,
                want: TradeSide { gold: self.plan.trade_gold, item_count: 0, item_kind: 0 },
            }));
        }
        let transaction_id = self.take_transaction_id();
        if k.is_multiple_of(2) || others == 0 {
            let gold = 1 + rng.below(self.plan.transfer_gold_max.max(1) as u64) as i64;
            return Some(Request::Economy(EconomyRequest {
                player_id: self.player_id,
                session_token: self.session_token,
                transaction_id,
                counterparty_id,
                gold,
                item_count: 0,
                item_kind: 0,
                kind: EconomyKind::Transfer,
            }));
        }
        Some(Request::Offer(TradeOffer {
            player_id: self.player_id,
            session_token: self.session_token,
            transaction_id,
            counterparty_id,
            give: TradeSide { gold: self.plan.trade_gold, item_count: 0, item_kind: 0 },
            want: TradeSide { gold: 0, item_count: self.plan.trade_items, item_kind: self.plan.item_kind },
        }))
    }

    /// What a decided transaction did to the goods the bot believes it holds: a refused offer's
    /// give comes back; an applied accept brings the maker's give.
    fn settle_goods(&mut self, request: &Request, status: EconomyStatus) {
        match request {
            Request::Offer(o) if status != EconomyStatus::Applied && self.open_offer.is_some_and(|(id, _)| id == o.transaction_id) => {
                self.open_offer = None;
                self.take_back(&o.give);
            }
            Request::Answer(a) if a.accept => {
                let give = self.answering.take();
                match (status, give) {
                    (EconomyStatus::Applied, Some(give)) => self.take_back(&give),
                    // It could not pay: decline, so the maker's escrow goes back now rather
                    // than at the offer's timeout.
                    (EconomyStatus::InsufficientFunds | EconomyStatus::InsufficientItems, Some(give)) => {
                        self.queue_answer((a.maker_id, a.offer_id, give, true), self.answer_due)
                    }
                    _ => {}
                }
            }
            _ => {}
        }
    }

    /// Gives up on the transaction in flight: its outcome is unknown unless an answer still
    /// arrives later.
    pub fn abandon_in_flight(&mut self) {
        if let Some(f) = self.in_flight.take() {
            self.tally.unknown += 1;
            let kind = f.request.kind();
            self.remember(Decided { transaction_id: f.request.transaction_id(), status: None, first_answers: f.first_answers, kind });
        }
    }

    fn remember(&mut self, d: Decided) {
        self.recent[(d.transaction_id % RECENT as u64) as usize] = d;
    }

    fn decide(&mut self, status: EconomyStatus, kind: Kind) {
        if status == EconomyStatus::Applied {
            self.tally.applied += 1;
            match kind {
                Kind::Gift => {}
                Kind::Offer => self.tally.offers_applied += 1,
                Kind::Accept => self.tally.accepts_applied += 1,
                Kind::Decline => self.tally.declines_applied += 1,
            }
        } else {
            self.tally.refused += 1;
            self.tally.refused_by_status[usize::from(status.as_u8()).min(18)] += 1;
        }
    }

    /// Takes one `ECONOMY_RESULT`. Returns the transaction's latency (from its first send's
    /// intended time) when this result decides a transaction intended after the warm-up.
    pub fn on_result(&mut self, now: Instant, r: &EconomyResult) -> Option<u64> {
        self.tally.results_received += 1;
        if r.duplicate {
            self.tally.duplicate_results += 1;
        }
        if r.status == EconomyStatus::StorageBusy {
            // Not a decision: the server's disk was behind and nothing was recorded; the
            // transaction stays in flight and the resend timer asks again.
            self.tally.storage_busy += 1;
            return None;
        }
        if let Some(f) = self.in_flight.as_ref().filter(|f| f.request.transaction_id() == r.transaction_id) {
            let first_answers = f.first_answers + u32::from(!r.duplicate);
            let kind = f.request.kind();
            let (request, intended) = (f.request, f.intended);
            self.in_flight = None;
            self.settle_goods(&request, r.status);
            self.decide(r.status, kind);
            self.remember(Decided { transaction_id: r.transaction_id, status: Some(r.status), first_answers, kind });
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
                self.decide(r.status, d.kind);
            }
            Some(s) if s != r.status => self.tally.inconsistent_answers += 1,
            Some(_) => {}
        }
        self.recent[slot] = d;
        None
    }
}
