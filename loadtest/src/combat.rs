//! The raid scenario's fighting: each bot attacks the raid's adds it sees, and keeps the
//! tally the checks compare with the server's books.
//!
//! How a bot fights:
//! - **Targets come from its area of interest.** On each `AOI_SNAPSHOT` the bot picks the
//!   nearest raid add within `--attack-range-m` of where it is now (the snapshot is as of the
//!   last tick; the server measures from where it has the bot, and says so if it disagrees),
//!   skipping the last [`DEAD_REMEMBERED`] targets it saw die.
//! - **One attack in flight, at most one per `--attack-interval-ms`.** The server's cooldown is
//!   its own; attacking no faster than it keeps refusals for the rules the bot cannot see
//!   (range, another bot's kill), which the tally counts by reason.
//! - **Claims after kills.** A kill of an add drops loot only the killer may claim: the bot
//!   queues the dead add's id and sends `LOOT_CLAIM` at its next wake, one claim in flight,
//!   resent every [`CLAIM_RESEND`] until answered (a claim is idempotent: a resend of a claim
//!   already credited is answered again as a `repeat`), given up after [`CLAIM_ATTEMPTS`].
//!   Each loot is counted once, on its first answer that says it is the bot's, so the gold and
//!   items the bots counted must equal what the server credited. Once the run and its drain
//!   are over no new claim starts (queued loot is counted as left), and the bot waits for the
//!   answer to the claim in flight, which the server may already have credited.
//! - **An attack given up is still counted when its answer comes.** An attack whose result has
//!   not come after two intervals is given up so the next may go; the last
//!   [`GIVEN_UP_REMEMBERED`] given up are remembered, and a result that echoes one of them
//!   (once) is a late answer: counted as answered, with what it says (a kill queues its loot),
//!   and in `late_answers`. A tester that falls behind reads its sockets late, so on a loaded
//!   machine an answer sent in time can be read after its attack was given up; only a result
//!   that echoes no attack of the bot's, or one already answered, is `unexpected`.
//! - **Sequences between moves.** `ATTACK` shares the session's sequence space (and replay
//!   window) with `MOVE`: moves carry even sequences (`2 * (k + 1)` for move `k`), and an
//!   attack sent after move `k` carries the odd one after it, so both stay strictly increasing
//!   in send order and never collide.
//!
//! Nothing here allocates: the dead-target memory and the claim queue are fixed rings.

use crate::protocol::{AoiEntry, AttackRefusal, AttackResult, EntityKind, LootRefusal, LootResult, WireList};
use serde::Serialize;
use std::time::{Duration, Instant};

/// Targets a bot remembers seeing die (killed, or refused as already dead).
pub const DEAD_REMEMBERED: usize = 32;
/// Attacks given up without an answer that a bot remembers, so their late answers count.
pub const GIVEN_UP_REMEMBERED: usize = 4;
/// Kills whose loot waits for its claim, at most (a kill beyond it is counted, not claimed).
pub const LOOT_QUEUE: usize = 8;
/// An unanswered claim is resent after this long.
pub const CLAIM_RESEND: Duration = Duration::from_millis(250);
/// Sends of one claim (the first included) before it is given up as unanswered.
pub const CLAIM_ATTEMPTS: u32 = 8;

/// How the raid's bots fight.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CombatPlan {
    /// Attack only adds at most this far away, metres (the server's `attack_range_m` decides).
    pub range_m: f32,
    /// At most one attack per this long (the server's `attack_cooldown_ms` decides).
    pub interval: Duration,
}

/// What a bot's attacks got, and what the checks compare with the server's counters.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct CombatTally {
    /// `ATTACK`s sent.
    pub attacks_sent: u64,
    /// `ATTACK_RESULT`s received for them.
    pub answers: u64,
    /// Of those, attacks that landed.
    pub landed: u64,
    /// Of those, attacks that killed their target.
    pub kills: u64,
    /// Hit points the landed attacks took.
    pub damage: u64,
    /// Answers refusing the attack, by `ATTACK_RESULT.refusal` (index 0 unused).
    pub refused: [u64; 9],
    /// Results for no attack of the bot's (none in flight or given up echoes their sequence and
    /// target), or for one already answered.
    pub unexpected: u64,
    /// Of the answers, those that came after their attack was given up (counted in `answers`
    /// and by what they say).
    pub late_answers: u64,
    /// `KILL_NOTICE`s received: kills by other players in this bot's area of interest.
    pub kill_notices: u64,
    /// `LOOT_CLAIM`s sent, resends included.
    pub claims_sent: u64,
    /// Of those, resends of a claim whose answer had not come.
    pub claim_resends: u64,
    /// Loot the server said was the bot's (each loot once, credited now or as a repeat).
    pub loot_claimed: u64,
    /// Gold in that loot.
    pub loot_gold: u64,
    /// Items in that loot.
    pub loot_items: u64,
    /// Answers with `repeat` set.
    pub claim_repeats: u64,
    /// Answers refusing a claim, by `LOOT_RESULT.refusal` (index 0 unused).
    pub claim_refused: [u64; 10],
    /// Claims given up after [`CLAIM_ATTEMPTS`] sends without an answer.
    pub claims_unanswered: u64,
    /// Kills whose loot was not claimed: the queue was full, or the run had ended.
    pub loot_left: u64,
    /// `LOOT_RESULT`s for no claim in flight: a resend's late answer (a `repeat`), or stray.
    pub claim_late_answers: u64,
}

impl CombatTally {
    /// Adds another bot's tally.
    pub fn add(&mut self, o: &CombatTally) {
        self.attacks_sent += o.attacks_sent;
        self.answers += o.answers;
        self.landed += o.landed;
        self.kills += o.kills;
        self.damage += o.damage;
        for (a, b) in self.refused.iter_mut().zip(o.refused) {
            *a += b;
        }
        self.unexpected += o.unexpected;
        self.late_answers += o.late_answers;
        self.kill_notices += o.kill_notices;
        self.claims_sent += o.claims_sent;
        self.claim_resends += o.claim_resends;
        self.loot_claimed += o.loot_claimed;
        self.loot_gold += o.loot_gold;
        self.loot_items += o.loot_items;
        self.claim_repeats += o.claim_repeats;
        for (a, b) in self.claim_refused.iter_mut().zip(o.claim_refused) {
            *a += b;
        }
        self.claims_unanswered += o.claims_unanswered;
        self.loot_left += o.loot_left;
        self.claim_late_answers += o.claim_late_answers;
    }

    /// Claims refused, every reason.
    pub fn claims_refused_total(&self) -> u64 {
        self.claim_refused.iter().sum()
    }

    /// Claims refused for `reason` (0 for [`LootRefusal::Claimed`]).
    pub fn claims_refused_for(&self, reason: LootRefusal) -> u64 {
        self.claim_refused[usize::from(reason.as_u8())]
    }

    /// Refused answers, every reason.
    pub fn refused_total(&self) -> u64 {
        self.refused.iter().sum()
    }

    /// Answers refused for `reason` (0 for [`AttackRefusal::Landed`]).
    pub fn refused_for(&self, reason: AttackRefusal) -> u64 {
        self.refused[usize::from(reason.as_u8())]
    }
}

// `refused` and `claim_refused` have one slot per refusal byte the codec decodes, the
// success value's included.
const _: () = assert!(AttackRefusal::ALL.len() == 9);
const _: () = assert!(LootRefusal::ALL.len() == 10);

/// A claim awaiting its answer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct ClaimInFlight {
    loot_id: u64,
    sent_at: Instant,
    attempts: u32,
}

/// The attack a bot should send now.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AttackOrder {
    /// Whom.
    pub target_id: u64,
    /// With this sequence (odd: after the last move's).
    pub sequence: u32,
}

/// One bot's fighting state.
#[derive(Clone, Debug)]
pub struct CombatAgent {
    plan: CombatPlan,
    target: Option<u64>,
    next_at: Instant,
    /// The attack awaiting its result: (sequence, target).
    in_flight: Option<(u32, u64)>,
    /// The last attacks given up without a result, (sequence, target), a ring; a slot is
    /// cleared when its late answer comes, so each is answered once.
    given_up: [Option<(u32, u64)>; GIVEN_UP_REMEMBERED],
    given_up_next: usize,
    /// The last sequence an attack used (never reused).
    last_sequence: u32,
    /// When [`CombatAgent::poll`] last ran: a deadline not after it is no reason to wake.
    polled_at: Instant,
    dead: [u64; DEAD_REMEMBERED],
    dead_next: usize,
    /// Loot to claim, oldest first: `loot_queue[loot_head..loot_head + loot_len]` (mod size).
    loot_queue: [u64; LOOT_QUEUE],
    loot_head: usize,
    loot_len: usize,
    /// When the oldest queued loot became claimable (a wake-up due at once).
    loot_due: Option<Instant>,
    claim: Option<ClaimInFlight>,
    /// The run is over ([`CombatAgent::end_of_run`]): no new claim starts.
    ended: bool,
    /// The bot's tally so far.
    pub tally: CombatTally,
}

impl CombatAgent {
    /// An agent that may first attack at `start`.
    pub fn new(plan: CombatPlan, start: Instant) -> CombatAgent {
        CombatAgent {
            plan,
            target: None,
            next_at: start,
            in_flight: None,
            given_up: [None; GIVEN_UP_REMEMBERED],
            given_up_next: 0,
            last_sequence: 0,
            polled_at: start,
            dead: [0; DEAD_REMEMBERED],
            dead_next: 0,
            loot_queue: [0; LOOT_QUEUE],
            loot_head: 0,
            loot_len: 0,
            loot_due: None,
            claim: None,
            ended: false,
            tally: CombatTally::default(),
        }
    }

    fn known_dead(&self, id: u64) -> bool {
        id != 0 && self.dead.contains(&id)
    }

    fn remember_dead(&mut self, id: u64) {
        self.dead[self.dead_next] = id;
        self.dead_next = (self.dead_next + 1) % DEAD_REMEMBERED;
    }

    /// Picks the nearest add in `entries` within range of `me`, not known dead.
    pub fn on_snapshot(&mut self, me: (f32, f32), entries: &WireList<'_, AoiEntry>) {
        let range_sq = self.plan.range_m * self.plan.range_m;
        let mut best: Option<(f32, u64)> = None;
        for e in entries.iter() {
            if e.kind != EntityKind::Add || self.known_dead(e.entity_id) {
                continue;
            }
            let (dx, dy) = (e.x_m - me.0, e.y_m - me.1);
            let d = dx * dx + dy * dy;
            if d <= range_sq && best.is_none_or(|(b, _)| d < b) {
                best = Some((d, e.entity_id));
            }
        }
        self.target = best.map(|(_, id)| id);
    }

    /// The attack to send at `now`, if one is due: a target, no attack in flight, the interval
    /// passed, and a move sent since the last attack (`last_move_sequence`, even) whose odd
    /// successor is free.
    pub fn poll(&mut self, now: Instant, last_move_sequence: Option<u32>) -> Option<AttackOrder> {
        self.polled_at = now;
        let target_id = self.target?;
        let sequence = last_move_sequence?.wrapping_add(1);
        if self.in_flight.is_some() || now < self.next_at || sequence == self.last_sequence {
            return None;
        }
        self.target = None;
        self.next_at = now + self.plan.interval;
        self.in_flight = Some((sequence, target_id));
        self.last_sequence = sequence;
        self.tally.attacks_sent += 1;
        Some(AttackOrder { target_id, sequence })
    }

    /// An `ATTACK_RESULT` that arrived at `now`: the answer to the attack in flight, or a late
    /// one to an attack given up (see the module doc), or unexpected.
    pub fn on_result(&mut self, r: &AttackResult, now: Instant) {
        let echo = Some((r.sequence, r.target_id));
        if self.in_flight == echo {
            self.in_flight = None;
        } else if let Some(slot) = self.given_up.iter_mut().find(|g| **g == echo) {
            *slot = None;
            self.tally.late_answers += 1;
        } else {
            self.tally.unexpected += 1;
            return;
        }
        self.tally.answers += 1;
        match r.refusal {
            AttackRefusal::Landed => {
                self.tally.landed += 1;
                self.tally.damage += u64::try_from(r.damage).unwrap_or(0);
                if r.killed {
                    self.tally.kills += 1;
                    self.remember_dead(r.target_id);
                    if r.target_kind == Some(EntityKind::Add) {
                        self.queue_loot(r.target_id, now);
                    }
                }
            }
            refusal => {
                // Every refusal byte the codec decodes indexes the array (Landed is 0, unused).
                self.tally.refused[usize::from(refusal.as_u8())] += 1;
                if refusal == AttackRefusal::TargetDead {
                    self.remember_dead(r.target_id);
                }
            }
        }
    }

    fn queue_loot(&mut self, loot_id: u64, now: Instant) {
        if self.ended {
            self.tally.loot_left += 1;
            return;
        }
        if self.loot_len == LOOT_QUEUE {
            self.tally.loot_left += 1;
            return;
        }
        self.loot_queue[(self.loot_head + self.loot_len) % LOOT_QUEUE] = loot_id;
        self.loot_len += 1;
        self.loot_due.get_or_insert(now);
    }

    /// The loot to claim at `now`, if any: a resend of the claim in flight once
    /// [`CLAIM_RESEND`] passed without an answer, else the oldest queued loot when no claim is
    /// in flight.
    pub fn poll_claim(&mut self, now: Instant) -> Option<u64> {
        if self.ended && self.claim.is_none() {
            return None;
        }
        if let Some(c) = &mut self.claim {
            if now < c.sent_at + CLAIM_RESEND {
                return None;
            }
            if c.attempts < CLAIM_ATTEMPTS {
                c.attempts += 1;
                c.sent_at = now;
                self.tally.claims_sent += 1;
                self.tally.claim_resends += 1;
                return Some(c.loot_id);
            }
            self.tally.claims_unanswered += 1;
            self.claim = None;
        }
        if self.loot_len == 0 {
            return None;
        }
        let loot_id = self.loot_queue[self.loot_head];
        self.loot_head = (self.loot_head + 1) % LOOT_QUEUE;
        self.loot_len -= 1;
        self.loot_due = (self.loot_len > 0).then_some(now);
        self.claim = Some(ClaimInFlight { loot_id, sent_at: now, attempts: 1 });
        self.tally.claims_sent += 1;
        Some(loot_id)
    }

    /// A `LOOT_RESULT`. Returns whether it made loot the bot's (counted now, once per loot).
    pub fn on_loot_result(&mut self, r: &LootResult) -> bool {
        if self.claim.map(|c| c.loot_id) != Some(r.loot_id) {
            self.tally.claim_late_answers += 1;
            return false;
        }
        self.claim = None;
        if self.loot_len > 0 {
            self.loot_due = Some(self.polled_at);
        }
        match r.refusal {
            LootRefusal::Claimed => {
                self.tally.loot_claimed += 1;
                self.tally.loot_gold += r.gold;
                self.tally.loot_items += u64::from(r.item_count);
                self.tally.claim_repeats += u64::from(r.repeat);
                true
            }
            refusal => {
                self.tally.claim_refused[usize::from(refusal.as_u8())] += 1;
                false
            }
        }
    }

    /// A `KILL_NOTICE`: another player killed `target_id`, which is not worth attacking.
    pub fn on_kill_notice(&mut self, target_id: u64) {
        self.tally.kill_notices += 1;
        self.remember_dead(target_id);
        if self.target == Some(target_id) {
            self.target = None;
        }
    }

    /// The run and its drain are over: no new claim starts (the loot still queued, and any a
    /// late answer's kill would queue, is counted in `loot_left`); the claim in flight is still
    /// resent until answered ([`CombatAgent::settled`]).
    pub fn end_of_run(&mut self) {
        if !self.ended {
            self.ended = true;
            self.tally.loot_left += self.loot_len as u64;
            self.loot_len = 0;
            self.loot_due = None;
        }
    }

    /// Whether no claim awaits its answer: the server may have credited a claim in flight,
    /// so a bot waits for its answer before it stops.
    pub fn settled(&self) -> bool {
        self.claim.is_none()
    }

    /// The bot stops (its hard stop): a claim still in flight is counted unanswered.
    pub fn abandon_claim(&mut self) {
        if self.claim.take().is_some() {
            self.tally.claims_unanswered += 1;
        }
    }

    /// Gives up an attack whose result has not come in two intervals (lost, or not read yet),
    /// so the next may go; it is remembered in case its answer comes late.
    pub fn on_timeout(&mut self, now: Instant) {
        if self.in_flight.is_some() && now >= self.next_at + self.plan.interval {
            self.given_up[self.given_up_next] = self.in_flight.take();
            self.given_up_next = (self.given_up_next + 1) % GIVEN_UP_REMEMBERED;
        }
    }

    /// When the agent next needs a wake-up of its own: with a target, the end of the
    /// interval, or with an attack in flight, the moment it is given up. A deadline already
    /// passed at the last poll is none: what held the attack back then was the lack of a
    /// fresh move sequence, and the next move brings its own wake-up. (Answering a past
    /// deadline would make the driver spin on this bot until its next move.)
    pub fn next_deadline(&self) -> Option<Instant> {
        let claim = match &self.claim {
            Some(c) => Some(c.sent_at + CLAIM_RESEND),
            None => self.loot_due,
        };
        let attack = self.target.and_then(|_| {
            let at = if self.in_flight.is_some() { self.next_at + self.plan.interval } else { self.next_at };
            (at > self.polled_at).then_some(at)
        });
        // A claim never waits on anything but time, so a due one is a reason to wake at once.
        match (attack, claim) {
            (Some(a), Some(c)) => Some(a.min(c)),
            (a, c) => a.or(c),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan() -> CombatPlan {
        CombatPlan { range_m: 6.0, interval: Duration::from_millis(500) }
    }

    fn add(id: u64, x: f32, y: f32) -> AoiEntry {
        AoiEntry { entity_id: id, x_m: x, y_m: y, kind: EntityKind::Add }
    }

    fn result(sequence: u32, target_id: u64, refusal: AttackRefusal, killed: bool) -> AttackResult {
        AttackResult { sequence, refusal, killed, target_kind: Some(EntityKind::Add), target_id, damage: 100, hp_left: 0 }
    }

    #[test]
    fn picks_the_nearest_live_add_in_range_and_sends_between_moves() {
        let t0 = Instant::now();
        let mut a = CombatAgent::new(plan(), t0);
        let player = AoiEntry { entity_id: 5, x_m: 100.5, y_m: 100.0, kind: EntityKind::Player };
        let entries = [player, add(7, 104.0, 100.0), add(8, 101.0, 100.0), add(9, 120.0, 100.0)];
        a.on_snapshot((100.0, 100.0), &WireList::from_items(&entries));
        assert_eq!(a.poll(t0, None), None, "no move sent yet: no sequence to follow");
        assert_eq!(a.poll(t0, Some(4)), Some(AttackOrder { target_id: 8, sequence: 5 }));
        assert_eq!(a.poll(t0, Some(6)), None, "one in flight");
        a.on_result(&result(5, 8, AttackRefusal::Landed, true), t0);
        assert_eq!((a.tally.landed, a.tally.kills, a.tally.damage), (1, 1, 100));
        // The killed add is skipped from now on; the next is 4 m away.
        a.on_snapshot((100.0, 100.0), &WireList::from_items(&entries));
        assert_eq!(a.poll(t0 + Duration::from_millis(499), Some(6)), None, "interval");
        assert_eq!(a.poll(t0 + Duration::from_millis(500), Some(6)), Some(AttackOrder { target_id: 7, sequence: 7 }));
        a.on_result(&result(7, 7, AttackRefusal::TargetDead, false), t0);
        assert_eq!(a.tally.refused_for(AttackRefusal::TargetDead), 1);
        a.on_snapshot((100.0, 100.0), &WireList::from_items(&entries));
        assert_eq!(a.poll(t0 + Duration::from_secs(5), Some(8)), None, "every add in range is dead");
    }

    #[test]
    fn a_sequence_is_never_reused_and_strays_are_counted() {
        let t0 = Instant::now();
        let mut a = CombatAgent::new(plan(), t0);
        let entries = [add(7, 101.0, 100.0)];
        a.on_snapshot((100.0, 100.0), &WireList::from_items(&entries));
        assert_eq!(a.poll(t0, Some(2)).map(|o| o.sequence), Some(3));
        a.on_result(&result(3, 7, AttackRefusal::Cooldown, false), t0);
        a.on_snapshot((100.0, 100.0), &WireList::from_items(&entries));
        assert_eq!(a.poll(t0 + Duration::from_secs(1), Some(2)), None, "no move since: 3 is spent");
        assert_eq!(a.next_deadline(), None, "waiting for a move is no reason to wake (no spinning)");
        a.on_result(&result(3, 7, AttackRefusal::Landed, false), t0);
        assert_eq!(a.tally.unexpected, 1, "a result for no attack in flight");
        // A lost result frees the slot after two intervals.
        assert!(a.poll(t0 + Duration::from_secs(1), Some(4)).is_some());
        a.on_timeout(t0 + Duration::from_millis(1_600));
        assert!(a.in_flight.is_some());
        a.on_timeout(t0 + Duration::from_millis(2_000));
        assert!(a.in_flight.is_none());
        assert_eq!((a.tally.attacks_sent, a.tally.answers), (2, 1));
    }

    #[test]
    fn an_answer_after_its_attack_was_given_up_is_late_not_unexpected() {
        let t0 = Instant::now();
        let mut a = CombatAgent::new(plan(), t0);
        let entries = [add(7, 101.0, 100.0), add(8, 100.0, 101.5)];
        a.on_snapshot((100.0, 100.0), &WireList::from_items(&entries));
        assert_eq!(a.poll(t0, Some(2)).map(|o| (o.sequence, o.target_id)), Some((3, 7)));
        a.on_timeout(t0 + Duration::from_secs(1));
        assert!(a.in_flight.is_none(), "given up after two intervals");
        // The next attack goes, and the first one's answer comes while it is in flight.
        a.on_snapshot((100.0, 100.0), &WireList::from_items(&entries[1..]));
        assert_eq!(a.poll(t0 + Duration::from_secs(1), Some(4)).map(|o| (o.sequence, o.target_id)), Some((5, 8)));
        a.on_result(&result(3, 7, AttackRefusal::Landed, true), t0 + Duration::from_millis(1_100));
        assert_eq!((a.tally.answers, a.tally.late_answers, a.tally.unexpected), (1, 1, 0));
        assert_eq!((a.tally.landed, a.tally.kills), (1, 1), "what a late answer says is counted");
        assert_eq!(a.poll_claim(t0 + Duration::from_millis(1_100)), Some(7), "its kill's loot is claimed");
        assert_eq!(a.in_flight, Some((5, 8)), "the attack in flight is still awaited");
        // The same answer again, and one that echoes no attack of the bot's, are unexpected.
        a.on_result(&result(3, 7, AttackRefusal::Landed, true), t0 + Duration::from_millis(1_200));
        a.on_result(&result(1, 7, AttackRefusal::Landed, false), t0 + Duration::from_millis(1_200));
        assert_eq!((a.tally.answers, a.tally.unexpected), (1, 2));
        a.on_result(&result(5, 8, AttackRefusal::Cooldown, false), t0 + Duration::from_millis(1_300));
        assert_eq!((a.tally.attacks_sent, a.tally.answers, a.tally.late_answers), (2, 2, 1));
        assert!(a.in_flight.is_none());
    }

    #[test]
    fn only_the_last_attacks_given_up_are_remembered() {
        let t0 = Instant::now();
        let mut a = CombatAgent::new(plan(), t0);
        let entries = [add(7, 101.0, 100.0)];
        let interval = plan().interval;
        let mut now = t0;
        // GIVEN_UP_REMEMBERED + 1 attacks, each given up: the first is forgotten.
        for k in 0..=GIVEN_UP_REMEMBERED as u32 {
            a.on_snapshot((100.0, 100.0), &WireList::from_items(&entries));
            assert_eq!(a.poll(now, Some(2 * (k + 1))).map(|o| o.sequence), Some(2 * (k + 1) + 1));
            now += 2 * interval;
            a.on_timeout(now);
            assert!(a.in_flight.is_none());
        }
        a.on_result(&result(3, 7, AttackRefusal::Landed, false), now);
        assert_eq!((a.tally.late_answers, a.tally.unexpected), (0, 1), "the oldest is forgotten");
        a.on_result(&result(5, 7, AttackRefusal::Landed, false), now);
        assert_eq!((a.tally.late_answers, a.tally.unexpected), (1, 1));
    }

    fn loot(loot_id: u64, gold: u64, refusal: LootRefusal, repeat: bool) -> LootResult {
        LootResult { loot_id, gold, item_count: 1, item_kind: 3, refusal, repeat }
    }

    #[test]
    fn a_kill_is_claimed_once_resent_until_answered_and_counted_once() {
        let t0 = Instant::now();
        let mut a = CombatAgent::new(plan(), t0);
        a.on_snapshot((100.0, 100.0), &WireList::from_items(&[add(7, 101.0, 100.0), add(8, 102.0, 100.0)]));
        assert_eq!(a.poll_claim(t0), None, "nothing killed yet");
        assert_eq!(a.poll(t0, Some(2)).map(|o| o.target_id), Some(7));
        a.on_result(&result(3, 7, AttackRefusal::Landed, true), t0);
        assert_eq!(a.next_deadline(), Some(t0), "a claim is due at once");
        assert_eq!(a.poll_claim(t0), Some(7));
        assert_eq!(a.poll_claim(t0 + CLAIM_RESEND / 2), None, "one in flight");
        // The answer is lost: resent; the resend's answer is a repeat, counted as the loot.
        assert_eq!(a.poll_claim(t0 + CLAIM_RESEND), Some(7));
        a.on_loot_result(&loot(7, 25, LootRefusal::Claimed, true));
        assert_eq!((a.tally.loot_claimed, a.tally.loot_gold, a.tally.loot_items, a.tally.claim_repeats), (1, 25, 1, 1));
        // The first answer, late: not counted twice.
        a.on_loot_result(&loot(7, 25, LootRefusal::Claimed, false));
        assert_eq!((a.tally.loot_claimed, a.tally.claim_late_answers), (1, 1));
        assert_eq!((a.tally.claims_sent, a.tally.claim_resends), (2, 1));
        assert_eq!(a.poll_claim(t0 + CLAIM_RESEND * 4), None);
    }

    #[test]
    fn refusals_are_counted_by_reason_and_silence_is_given_up() {
        let t0 = Instant::now();
        let mut a = CombatAgent::new(plan(), t0);
        for id in 1..=(LOOT_QUEUE as u64 + 2) {
            a.on_result(&AttackResult { sequence: 0, ..result(0, id, AttackRefusal::Landed, true) }, t0);
        }
        assert_eq!(a.tally.unexpected, LOOT_QUEUE as u64 + 2, "no attack was in flight");
        assert_eq!(a.tally.loot_left, 0, "unexpected results queue nothing");
        // Kills through the front door: the queue holds LOOT_QUEUE, the rest are left.
        for (seq, id) in (1u32..).zip(10..(10 + LOOT_QUEUE as u64 + 2)) {
            a.on_snapshot((100.0, 100.0), &WireList::from_items(&[add(id, 101.0, 100.0)]));
            let now = t0 + a.plan.interval * seq;
            let order = a.poll(now, Some(2 * seq)).unwrap();
            a.on_result(&result(order.sequence, id, AttackRefusal::Landed, true), now);
        }
        assert_eq!(a.tally.loot_left, 2);
        let t1 = t0 + Duration::from_secs(60);
        assert_eq!(a.poll_claim(t1), Some(10));
        a.on_loot_result(&LootResult {
            loot_id: 10,
            gold: 0,
            item_count: 0,
            item_kind: 0,
            refusal: LootRefusal::OutOfRange,
            repeat: false,
        });
        assert_eq!(a.tally.claims_refused_for(LootRefusal::OutOfRange), 1);
        assert_eq!(a.poll_claim(t1), Some(11));
        let mut t = t1;
        for _ in 1..CLAIM_ATTEMPTS {
            t += CLAIM_RESEND;
            assert_eq!(a.poll_claim(t), Some(11));
        }
        t += CLAIM_RESEND;
        assert_eq!(a.poll_claim(t), Some(12), "11 given up, the next one goes");
        assert_eq!(a.tally.claims_unanswered, 1);
    }

    #[test]
    fn at_the_end_of_the_run_no_claim_starts_and_the_one_in_flight_is_awaited() {
        let t0 = Instant::now();
        let mut a = CombatAgent::new(plan(), t0);
        // Two kills: the first claimed, the second queued.
        for (k, id) in [(0u32, 7u64), (1, 8)] {
            a.on_snapshot((100.0, 100.0), &WireList::from_items(&[add(id, 101.0, 100.0)]));
            let now = t0 + Duration::from_secs(u64::from(k));
            let order = a.poll(now, Some(2 * (k + 1))).expect("an attack");
            a.on_result(&result(order.sequence, id, AttackRefusal::Landed, true), now);
        }
        assert_eq!(a.poll_claim(t0 + Duration::from_secs(1)), Some(7));
        assert!(!a.settled(), "claim 7 awaits its answer");
        a.end_of_run();
        assert_eq!(a.tally.loot_left, 1, "loot 8 stays unclaimed");
        // Claim 7 is still resent, and nothing new starts once it is answered.
        assert_eq!(a.poll_claim(t0 + Duration::from_secs(2)), Some(7));
        a.on_loot_result(&LootResult { loot_id: 7, gold: 10, item_count: 0, item_kind: 0, refusal: LootRefusal::Claimed, repeat: false });
        assert!(a.settled());
        assert_eq!(a.poll_claim(t0 + Duration::from_secs(3)), None);
        // A kill told after the end (a late answer) is not claimed either.
        a.given_up[0] = Some((9, 9));
        a.on_result(&result(9, 9, AttackRefusal::Landed, true), t0 + Duration::from_secs(3));
        assert_eq!((a.tally.kills, a.tally.loot_left), (3, 2));
        assert_eq!(a.poll_claim(t0 + Duration::from_secs(4)), None);
        a.abandon_claim();
        assert_eq!(a.tally.claims_unanswered, 0, "nothing was in flight");
    }
}
