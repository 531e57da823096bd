//! Economy: wallets (gold and item stacks), reliable operations, and conservation.
//!
//! ## Design: wallet shards locked in index order
//!
//! Correctness comes first here: a trade must move gold one way and items the other, both or
//! neither; a retransmitted request must never apply twice; and
//! `sum(balances) + departed == minted - sunk` must hold, per currency and per item kind, at
//! every moment a reader can observe. Wallets are therefore kept in [`ECONOMY_SHARDS`] shards,
//! each a `parking_lot::Mutex` around a vector of wallets, the shard's free list and the
//! shard's minted / sunk / departed totals. An operation locks the initiator's shard, plus the
//! counterparty's if it is a different one, **always in ascending shard index**, so two
//! trades in opposite directions cannot deadlock. While it holds those locks it checks, writes
//! both wallets and the shard totals, and records its decision; nobody can see half of it.
//!
//! Readers observe the economy only through [`Economy::audit`], which locks every shard in
//! the same ascending order, so it sees a state between operations and recomputes balances
//! from the wallets themselves (not from a running total that could drift).
//!
//! Why not one economy writer thread fed by a queue? Results must go back to the calling
//! network worker within its batch, and a hand-off per operation would add a thread wake-up
//! to every trade's round trip; economy traffic is light next to movement, and with 64 shards
//! two operations only meet when they touch the same shard.
//!
//! ## At most once
//!
//! Every request carries `(player, transaction_id)`. Each wallet remembers the decision of the
//! last [`DEDUP_WINDOW`] transaction ids (status and the balance it left). A retransmit of a
//! decided id gets that recorded decision back with `duplicate = 1`, whether it was applied or
//! refused; an id older than the window is refused as `TransactionTooOld` (it may have been
//! applied, so it is never applied now). Clients number transactions upwards and keep fewer
//! than [`DEDUP_WINDOW`] in flight.
//!
//! ## Locks
//!
//! The shard mutexes are the only locks. None is global: movement, combat and the tick never
//! take them, and an economy operation takes at most two of the 64. Waits on them are counted
//! and timed ([`crate::locks`]).

use crate::config::{AMOUNT_MAX, ITEM_KINDS};
use crate::locks::LockWaits;
use crate::loot::LootContents;
use crate::records::{EconomyKind, EconomyOp, EconomyStatus, TradeAnswer, TradeOffer, TradeStack};
use crossbeam_utils::CachePadded;
use parking_lot::{Mutex, MutexGuard};
use std::sync::atomic::{AtomicUsize, Ordering};

/// Number of wallet shards.
pub const ECONOMY_SHARDS: usize = 64;
/// Transaction ids remembered per wallet.
pub const DEDUP_WINDOW: usize = 32;

/// Where a wallet lives. Stale after the wallet closes (its generation moves on).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WalletHandle {
    shard: u16,
    slot: u32,
    generation: u32,
}

impl WalletHandle {
    /// A handle that matches no wallet.
    pub const NONE: WalletHandle = WalletHandle { shard: u16::MAX, slot: u32::MAX, generation: u32::MAX };
}

/// Gold and items, as exact totals (u128 cannot overflow from u64 balances).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Holdings {
    /// Gold.
    pub gold: u128,
    /// Items, per kind.
    pub items: [u128; ITEM_KINDS],
}

impl Holdings {
    fn add(&mut self, other: &Holdings) {
        self.gold += other.gold;
        for (a, b) in self.items.iter_mut().zip(other.items) {
            *a += b;
        }
    }

    fn add_stack(&mut self, s: &Stack) {
        self.gold += u128::from(s.gold);
        self.items[s.item_kind] += u128::from(s.item_count);
    }

    fn add_wallet(&mut self, w: &Wallet) {
        self.gold += u128::from(w.gold);
        for (a, &b) in self.items.iter_mut().zip(&w.items) {
            *a += u128::from(b);
        }
    }
}

/// One wallet's balances as read by [`Economy::balance`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Balance {
    /// Gold.
    pub gold: u64,
    /// Items, per kind.
    pub items: [u64; ITEM_KINDS],
}

#[derive(Clone, Copy, Debug, Default)]
struct Decision {
    transaction_id: u64,
    gold_after: u64,
    status: u8,
}

/// Gold and one item stack, validated (what a trade side moves).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Stack {
    gold: u64,
    item_kind: usize,
    item_count: u64,
}

/// The one open trade offer a wallet may have as its maker. Its `give` is in escrow: out of
/// the maker's balances, counted by the audit as escrowed, until the offer closes.
#[derive(Clone, Copy, Debug)]
struct OpenOffer {
    /// The maker's transaction id of the offer.
    offer_id: u64,
    taker: WalletHandle,
    taker_id: u64,
    give: Stack,
    want: Stack,
    /// Server clock at which it times out.
    expires_ms: u64,
}

struct Wallet {
    generation: u32,
    open: bool,
    gold: u64,
    items: [u64; ITEM_KINDS],
    highest_transaction: u64,
    decisions: [Decision; DEDUP_WINDOW],
    /// Its open trade offer, if any (escrow included).
    offer: Option<OpenOffer>,
    /// The highest admin grant id applied (grants are numbered upwards per player).
    last_grant: u64,
}

impl Wallet {
    fn closed() -> Self {
        Self {
            generation: 0,
            open: false,
            gold: 0,
            items: [0; ITEM_KINDS],
            highest_transaction: 0,
            decisions: [Decision::default(); DEDUP_WINDOW],
            offer: None,
            last_grant: 0,
        }
    }

    fn has(&self, s: &Stack) -> Result<(), EconomyStatus> {
        if self.gold < s.gold {
            return Err(EconomyStatus::InsufficientFunds);
        }
        if s.item_count > 0 && self.items[s.item_kind] < s.item_count {
            return Err(EconomyStatus::InsufficientItems);
        }
        Ok(())
    }

    fn can_take(&self, s: &Stack) -> bool {
        self.gold.checked_add(s.gold).is_some() && (s.item_count == 0 || self.items[s.item_kind].checked_add(s.item_count).is_some())
    }

    /// Takes `s` out (the caller checked [`Wallet::has`]).
    fn take_out(&mut self, s: &Stack) {
        self.gold -= s.gold;
        if s.item_count > 0 {
            self.items[s.item_kind] -= s.item_count;
        }
    }

    /// Puts `s` in (the caller checked [`Wallet::can_take`]).
    fn put_in(&mut self, s: &Stack) {
        self.gold += s.gold;
        if s.item_count > 0 {
            self.items[s.item_kind] += s.item_count;
        }
    }

    /// Closes its open offer, if any, the escrow back in the wallet (it came from here, so it
    /// fits). Returns whether there was one.
    fn return_escrow(&mut self) -> bool {
        match self.offer.take() {
            Some(o) => {
                self.put_in(&o.give);
                true
            }
            None => false,
        }
    }

    /// Closes its open offer if it timed out by `now_ms`, the escrow back in the wallet.
    /// Returns whether it did.
    fn settle_expired_offer(&mut self, now_ms: u64) -> bool {
        self.offer.is_some_and(|o| now_ms >= o.expires_ms) && self.return_escrow()
    }

    /// The answer already owed to `transaction_id`, if it is not new: the recorded decision
    /// (`duplicate` set) for an id inside the window, `TransactionTooOld` for one below it.
    fn earlier(&self, transaction_id: u64) -> Option<Outcome> {
        if self.highest_transaction >= DEDUP_WINDOW as u64 && transaction_id <= self.highest_transaction - DEDUP_WINDOW as u64 {
            return Some(Outcome { status: EconomyStatus::TransactionTooOld, duplicate: false, gold_after: 0 });
        }
        let d = self.decisions[(transaction_id % DEDUP_WINDOW as u64) as usize];
        (d.transaction_id == transaction_id).then(|| {
            let status = EconomyStatus::try_from(d.status).expect("recorded statuses are valid");
            Outcome { status, duplicate: true, gold_after: d.gold_after }
        })
    }

    fn record(&mut self, transaction_id: u64, status: EconomyStatus) {
        let gold_after = if status == EconomyStatus::Applied { self.gold } else { 0 };
        self.decisions[(transaction_id % DEDUP_WINDOW as u64) as usize] = Decision { transaction_id, gold_after, status: status as u8 };
        self.highest_transaction = self.highest_transaction.max(transaction_id);
    }
}

struct EconomyShard {
    wallets: Vec<Wallet>,
    free: Vec<u32>,
    /// Wallets of this shard with an open offer.
    open_offers: u32,
    /// No open offer of this shard times out before this (server ms; `u64::MAX` when none):
    /// the tick's sweep skips the shard until then. Lowered by each offer, recomputed by the
    /// sweep (an accept or cancel leaves it early, which costs one scan finding nothing).
    next_expiry_ms: u64,
    /// The part of `minted` admin grants created.
    minted_by_grant: Holdings,
    minted: Holdings,
    /// The part of `minted` that loot claims created.
    minted_by_loot: Holdings,
    sunk: Holdings,
    departed: Holdings,
}

impl EconomyShard {
    fn wallet_mut(&mut self, h: WalletHandle) -> Option<&mut Wallet> {
        self.wallets.get_mut(h.slot as usize).filter(|w| w.open && w.generation == h.generation)
    }
}

/// Who the other side of an operation is, as resolved by the caller.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Counterparty {
    /// `counterparty_id` was 0.
    Absent,
    /// `counterparty_id` is the initiator.
    Initiator,
    /// No live player has that id.
    Unknown,
    /// The counterparty's wallet.
    Wallet(WalletHandle),
}

/// What the economy decided for one operation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Outcome {
    /// The decision.
    pub status: EconomyStatus,
    /// Whether this repeats an earlier decision (a retransmit).
    pub duplicate: bool,
    /// Initiator's gold right after applying (0 when not applied).
    pub gold_after: u64,
}

/// How an answer closed an offer (for the counters and the notice to the maker).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TradeClose {
    /// It closed nothing (refused, or a retransmit).
    None,
    /// The taker accepted: both sides moved.
    Accepted,
    /// The taker declined: the escrow went back.
    Declined,
    /// The maker cancelled: the escrow went back.
    Cancelled,
    /// It had timed out: the escrow went back, the answer is refused `OfferExpired`.
    Expired,
}

/// Whether `w`, having given `out` (which it holds), can take `inn` without a balance
/// overflowing.
fn fits_after(w: &Wallet, out: &Stack, inn: &Stack) -> bool {
    let gold_ok = (w.gold - out.gold).checked_add(inn.gold).is_some();
    let same_kind = out.item_count > 0 && out.item_kind == inn.item_kind;
    let held = w.items[inn.item_kind] - if same_kind { out.item_count } else { 0 };
    gold_ok && (inn.item_count == 0 || held.checked_add(inn.item_count).is_some())
}

/// A wire stack, validated: amounts not negative (`InvalidAmount`), at most `AMOUNT_MAX`
/// (`Overflow`), a known item kind when items move (`UnknownItem`).
fn stack_of(s: &TradeStack) -> Result<Stack, EconomyStatus> {
    if s.gold < 0 || s.item_count < 0 {
        return Err(EconomyStatus::InvalidAmount);
    }
    if s.gold > AMOUNT_MAX || i64::from(s.item_count) > AMOUNT_MAX {
        return Err(EconomyStatus::Overflow);
    }
    let item_count = s.item_count as u64;
    if item_count > 0 && s.item_kind as usize >= ITEM_KINDS {
        return Err(EconomyStatus::UnknownItem);
    }
    Ok(Stack { gold: s.gold as u64, item_kind: if item_count > 0 { s.item_kind as usize } else { 0 }, item_count })
}

/// What [`Economy::credit_loot`] did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LootCredit {
    /// The wallet's gold after the call.
    pub gold_after: u64,
    /// `false` when `take` refused (another claim had taken the loot): nothing was credited.
    pub credited: bool,
}

/// Why [`Economy::credit_loot`] credited nothing and left the loot where it was.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LootCreditError {
    /// The wallet is closed (its player left).
    Departed,
    /// A balance would overflow.
    Full,
}

/// Sunk amounts of one applied operation (for the shard totals): no client request mints.
#[derive(Default)]
struct Flow {
    sunk_gold: u64,
    sunk_items: u64,
}

/// A consistent reading of the whole economy, from [`Economy::audit`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct EconomyAudit {
    /// Sum of every open wallet, recomputed from the wallets.
    pub live: Holdings,
    /// Holdings of players who left (handed to persistence).
    pub departed: Holdings,
    /// Everything ever minted: starting gold, loot claims, admin grants.
    pub minted: Holdings,
    /// The part of `minted` that loot claims created (server-rolled drops, [`crate::loot`]).
    pub minted_by_loot: Holdings,
    /// The part of `minted` that admin grants created.
    pub minted_by_grant: Holdings,
    /// Held in escrow by open trade offers (out of their makers' balances).
    pub escrowed: Holdings,
    /// Open trade offers.
    pub open_offers: u32,
    /// Everything ever sunk (spending).
    pub sunk: Holdings,
    /// Open wallets.
    pub open_wallets: u32,
}

impl EconomyAudit {
    /// `live + escrowed + departed == minted - sunk`, for gold and every item kind.
    pub fn is_conserved(&self) -> bool {
        let ok = |live: u128, departed: u128, minted: u128, sunk: u128| minted >= sunk && live + departed == minted - sunk;
        let (live, escrow) = (&self.live, &self.escrowed);
        ok(live.gold + escrow.gold, self.departed.gold, self.minted.gold, self.sunk.gold)
            && (0..ITEM_KINDS)
                .all(|k| ok(live.items[k] + escrow.items[k], self.departed.items[k], self.minted.items[k], self.sunk.items[k]))
    }
}

/// The economy service.
pub struct Economy {
    /// Wallet shards; each padded to its own cache lines so two shards' locks never share one.
    shards: Box<[CachePadded<Mutex<EconomyShard>>]>,
    /// Round-robin shard choice for new wallets. Written by join.
    next_shard: AtomicUsize,
}

impl Economy {
    /// Shards with room reserved for `player_capacity` wallets: joins up to that number of
    /// open wallets allocate nothing, whatever the churn. The room is reserved, not filled: a
    /// wallet's memory is touched when a join first creates it, so memory follows the players
    /// who joined, not the capacity.
    pub fn new(player_capacity: u32) -> Self {
        let per_shard = (player_capacity as usize).div_ceil(ECONOMY_SHARDS) + 1;
        let shards = (0..ECONOMY_SHARDS)
            .map(|_| {
                let wallets: Vec<Wallet> = Vec::with_capacity(per_shard);
                let free = Vec::with_capacity(per_shard);
                CachePadded::new(Mutex::new(EconomyShard {
                    wallets,
                    free,
                    minted: Holdings::default(),
                    minted_by_loot: Holdings::default(),
                    open_offers: 0,
                    next_expiry_ms: u64::MAX,
                    minted_by_grant: Holdings::default(),
                    sunk: Holdings::default(),
                    departed: Holdings::default(),
                }))
            })
            .collect::<Vec<_>>()
            .into_boxed_slice();
        Self { shards, next_shard: AtomicUsize::new(0) }
    }

    /// Opens a wallet holding `starting_gold` (minted).
    ///
    /// Shards are tried round-robin; the chosen one reuses a closed wallet, or creates one in
    /// its reserved room. If it has neither (join/leave churn can unbalance them), the next ones
    /// are tried, and only when all 64 are full does a shard grow its wallet vector.
    pub fn open_wallet(&self, starting_gold: u64) -> WalletHandle {
        let start = self.next_shard.fetch_add(1, Ordering::Relaxed) % ECONOMY_SHARDS;
        let mut chosen = None;
        for attempt in 0..ECONOMY_SHARDS {
            let index = (start + attempt) % ECONOMY_SHARDS;
            let mut shard = self.shards[index].lock();
            if let Some(slot) = shard.free.pop() {
                chosen = Some((index, shard, slot));
                break;
            }
            if shard.wallets.len() < shard.wallets.capacity() {
                shard.wallets.push(Wallet::closed());
                let slot = (shard.wallets.len() - 1) as u32;
                chosen = Some((index, shard, slot));
                break;
            }
        }
        let (shard_index, mut shard, slot) = chosen.unwrap_or_else(|| {
            let mut shard = self.shards[start].lock();
            shard.wallets.push(Wallet::closed());
            let slot = (shard.wallets.len() - 1) as u32;
            (start, shard, slot)
        });
        let w = &mut shard.wallets[slot as usize];
        let generation = w.generation;
        *w = Wallet { generation, open: true, gold: starting_gold, ..Wallet::closed() };
        shard.minted.gold += u128::from(starting_gold);
        WalletHandle { shard: shard_index as u16, slot, generation }
    }

    /// Closes a wallet: its holdings move to the shard's departed totals (the hand-off to
    /// persistence), and its handle goes stale. `false` if it was already closed.
    pub fn close_wallet(&self, handle: WalletHandle) -> bool {
        let Some(shard) = self.shards.get(handle.shard as usize) else { return false };
        let mut shard = shard.lock();
        let shard = &mut *shard;
        let Some(w) = shard.wallets.get_mut(handle.slot as usize).filter(|w| w.open && w.generation == handle.generation) else {
            return false;
        };
        // An open offer closes with its maker: the escrow goes back into the wallet first.
        if w.return_escrow() {
            shard.open_offers -= 1;
        }
        shard.departed.add_wallet(w);
        w.open = false;
        w.gold = 0;
        w.items = [0; ITEM_KINDS];
        w.generation = w.generation.wrapping_add(1);
        shard.free.push(handle.slot);
        true
    }

    /// A wallet's balances, if it is open.
    pub fn balance(&self, handle: WalletHandle) -> Option<Balance> {
        let mut shard = self.shards.get(handle.shard as usize)?.lock();
        shard.wallet_mut(handle).map(|w| Balance { gold: w.gold, items: w.items })
    }

    /// Locks the shard of `a` and, if `b` lives in another one, `b`'s, always in ascending
    /// shard index (so two operations in opposite directions cannot deadlock).
    fn lock_two(
        &self,
        a: WalletHandle,
        b: Option<WalletHandle>,
        waits: &mut LockWaits,
    ) -> (MutexGuard<'_, EconomyShard>, Option<MutexGuard<'_, EconomyShard>>) {
        let a_shard = (a.shard as usize).min(ECONOMY_SHARDS - 1);
        let b_shard = b.map(|h| h.shard as usize).filter(|&s| s != a_shard && s < ECONOMY_SHARDS);
        match b_shard {
            Some(s) if s < a_shard => {
                let theirs = waits.lock(&self.shards[s]);
                (waits.lock(&self.shards[a_shard]), Some(theirs))
            }
            Some(s) => {
                let mine = waits.lock(&self.shards[a_shard]);
                (mine, Some(waits.lock(&self.shards[s])))
            }
            None => (waits.lock(&self.shards[a_shard]), None),
        }
    }

    /// Decides one authenticated operation from `initiator`'s wallet. The caller has checked
    /// the player id and session; everything else is decided (and recorded) here.
    /// Waits on the shard locks are added to `waits`.
    pub fn execute(&self, op: &EconomyOp, initiator: WalletHandle, counterparty: Counterparty, waits: &mut LockWaits) -> Outcome {
        let refuse = |status| Outcome { status, duplicate: false, gold_after: 0 };
        if op.transaction_id == 0 {
            return refuse(EconomyStatus::InvalidTransaction);
        }
        if initiator.shard as usize >= ECONOMY_SHARDS {
            return refuse(EconomyStatus::PlayerDeparted);
        }
        let other = match counterparty {
            Counterparty::Wallet(h) if h == initiator => None,
            Counterparty::Wallet(h) => Some(h),
            _ => None,
        };
        let (mut mine, mut theirs) = self.lock_two(initiator, other, waits);
        let mine = &mut *mine;
        let (me, them) = two_wallets(mine, theirs.as_deref_mut(), initiator, other);
        let Some(me) = me.filter(|w| w.open && w.generation == initiator.generation) else {
            return refuse(EconomyStatus::PlayerDeparted);
        };
        if let Some(earlier) = me.earlier(op.transaction_id) {
            return earlier;
        }
        let result = settle(op, me, them, counterparty, other.is_some());
        let status = match result {
            Ok(flow) => {
                mine.sunk.gold += u128::from(flow.sunk_gold);
                let kind = op.item_kind as usize;
                if flow.sunk_items > 0 {
                    mine.sunk.items[kind] += u128::from(flow.sunk_items);
                }
                EconomyStatus::Applied
            }
            Err(status) => status,
        };
        // Re-borrow the initiator's wallet (the split borrow above has ended) to record.
        let me = &mut mine.wallets[initiator.slot as usize];
        me.record(op.transaction_id, status);
        Outcome { status, duplicate: false, gold_after: if status == EconomyStatus::Applied { me.gold } else { 0 } }
    }

    /// A trade offer from `maker` to the taker (`taker`, resolved by the caller from
    /// `offer.counterparty_id`) at server time `now_ms`, open for `timeout_ms`. Checked in
    /// order: the transaction id (de-duplicated like every request), the amounts, the taker,
    /// the maker's open offer (one at a time; an expired one is closed first), the maker's
    /// funds; then `give` moves into escrow. Only the maker's shard is locked. Also says whether
    /// it closed the maker's timed-out offer.
    pub fn offer(
        &self,
        offer: &TradeOffer,
        maker: WalletHandle,
        taker: Counterparty,
        now_ms: u64,
        timeout_ms: u32,
        waits: &mut LockWaits,
    ) -> (Outcome, bool) {
        let refuse = |status| (Outcome { status, duplicate: false, gold_after: 0 }, false);
        if offer.transaction_id == 0 {
            return refuse(EconomyStatus::InvalidTransaction);
        }
        let Some(shard) = self.shards.get(maker.shard as usize) else { return refuse(EconomyStatus::PlayerDeparted) };
        let mut shard = waits.lock(shard);
        let shard = &mut *shard;
        let Some(w) = shard.wallets.get_mut(maker.slot as usize).filter(|w| w.open && w.generation == maker.generation) else {
            return refuse(EconomyStatus::PlayerDeparted);
        };
        if let Some(earlier) = w.earlier(offer.transaction_id) {
            return (earlier, false);
        }
        let closed_expired = w.settle_expired_offer(now_ms);
        if closed_expired {
            shard.open_offers -= 1;
        }
        let decided = (|| {
            let (give, want) = (stack_of(&offer.give)?, stack_of(&offer.want)?);
            if give == Stack::default() && want == Stack::default() {
                return Err(EconomyStatus::InvalidAmount);
            }
            let taker = match taker {
                Counterparty::Absent | Counterparty::Unknown => return Err(EconomyStatus::UnknownPlayer),
                Counterparty::Initiator => return Err(EconomyStatus::SelfTrade),
                Counterparty::Wallet(h) if h == maker => return Err(EconomyStatus::SelfTrade),
                Counterparty::Wallet(h) => h,
            };
            if w.offer.is_some() {
                return Err(EconomyStatus::OfferPending);
            }
            w.has(&give)?;
            w.take_out(&give);
            let expires_ms = now_ms.saturating_add(u64::from(timeout_ms));
            w.offer = Some(OpenOffer { offer_id: offer.transaction_id, taker, taker_id: offer.counterparty_id, give, want, expires_ms });
            Ok(())
        })();
        let status = match decided {
            Ok(()) => {
                shard.open_offers += 1;
                shard.next_expiry_ms = shard.next_expiry_ms.min(now_ms.saturating_add(u64::from(timeout_ms)));
                EconomyStatus::Applied
            }
            Err(status) => status,
        };
        let w = &mut shard.wallets[maker.slot as usize];
        w.record(offer.transaction_id, status);
        (Outcome { status, duplicate: false, gold_after: if status == EconomyStatus::Applied { w.gold } else { 0 } }, closed_expired)
    }

    /// An answer to maker `maker_id`'s offer `answer.offer_id` at server time `now_ms`: its
    /// taker accepts (both sides move at once: `want` from the taker to the maker, the escrowed
    /// `give` to the taker) or declines (the escrow goes back), or the maker cancels
    /// (`accept` 0 from the maker). Checked in order: the transaction id (de-duplicated), the
    /// offer (open, this id, not timed out: a timed-out one is closed here, its escrow back),
    /// who answers (the taker; the maker may only cancel), and for an accept the taker's
    /// funds and both sides' room. Both shards are locked, in ascending index.
    pub fn answer(
        &self,
        answer: &TradeAnswer,
        me: WalletHandle,
        maker: Counterparty,
        now_ms: u64,
        waits: &mut LockWaits,
    ) -> (Outcome, TradeClose) {
        let refuse = |status| (Outcome { status, duplicate: false, gold_after: 0 }, TradeClose::None);
        if answer.transaction_id == 0 {
            return refuse(EconomyStatus::InvalidTransaction);
        }
        if me.shard as usize >= ECONOMY_SHARDS {
            return refuse(EconomyStatus::PlayerDeparted);
        }
        let maker_h = match maker {
            Counterparty::Wallet(h) if h != me => Some(h),
            _ => None,
        };
        let (mut mine, mut theirs) = self.lock_two(me, maker_h, waits);
        let mine = &mut *mine;
        let (w, their) = two_wallets(mine, theirs.as_deref_mut(), me, maker_h);
        let Some(w) = w.filter(|w| w.open && w.generation == me.generation) else {
            return refuse(EconomyStatus::PlayerDeparted);
        };
        if let Some(earlier) = w.earlier(answer.transaction_id) {
            return (earlier, TradeClose::None);
        }
        let cancelling = matches!(maker, Counterparty::Initiator) || maker_h.is_none() && matches!(maker, Counterparty::Wallet(_));
        let decided: Result<TradeClose, EconomyStatus> = (|| {
            // The maker's wallet: another's, or (cancelling) the answerer's own.
            let maker_w: &mut Wallet = match (maker, their) {
                (Counterparty::Absent | Counterparty::Unknown, _) => return Err(EconomyStatus::UnknownPlayer),
                _ if cancelling => {
                    if answer.accept != 0 {
                        return Err(EconomyStatus::SelfTrade);
                    }
                    let offer = w.offer.filter(|o| o.offer_id == answer.offer_id).ok_or(EconomyStatus::NoSuchOffer)?;
                    if now_ms >= offer.expires_ms {
                        w.settle_expired_offer(now_ms);
                        return Ok(TradeClose::Expired);
                    }
                    w.return_escrow();
                    return Ok(TradeClose::Cancelled);
                }
                (_, None) => return Err(EconomyStatus::PlayerDeparted),
                (_, Some(m)) => m,
            };
            let offer = maker_w.offer.filter(|o| o.offer_id == answer.offer_id).ok_or(EconomyStatus::NoSuchOffer)?;
            if now_ms >= offer.expires_ms {
                maker_w.settle_expired_offer(now_ms);
                return Ok(TradeClose::Expired);
            }
            if offer.taker != me || offer.taker_id != answer.player_id {
                return Err(EconomyStatus::NotYourOffer);
            }
            if answer.accept == 0 {
                maker_w.return_escrow();
                return Ok(TradeClose::Declined);
            }
            w.has(&offer.want)?;
            // Room on both sides, checked before anything moves.
            if !fits_after(w, &offer.want, &offer.give) || !maker_w.can_take(&offer.want) {
                return Err(EconomyStatus::Overflow);
            }
            w.take_out(&offer.want);
            maker_w.put_in(&offer.want);
            w.put_in(&offer.give);
            maker_w.offer = None;
            Ok(TradeClose::Accepted)
        })();
        let (status, close) = match decided {
            Ok(TradeClose::Expired) => (EconomyStatus::OfferExpired, TradeClose::Expired),
            Ok(close) => (EconomyStatus::Applied, close),
            Err(status) => (status, TradeClose::None),
        };
        if close != TradeClose::None {
            // The maker's shard: the answerer's own when cancelling or when both share one.
            match theirs.as_deref_mut() {
                Some(t) if !cancelling => t.open_offers -= 1,
                _ => mine.open_offers -= 1,
            }
        }
        let w = &mut mine.wallets[me.slot as usize];
        w.record(answer.transaction_id, status);
        (Outcome { status, duplicate: false, gold_after: if status == EconomyStatus::Applied { w.gold } else { 0 } }, close)
    }

    /// Closes every offer timed out by `now_ms`, its escrow back to its maker; returns how
    /// many. A shard whose next timeout is later costs one uncontended lock and a compare, so
    /// the tick runs this every tick and an offer's escrow is back at the first tick at or
    /// after its timeout (the same tick in both engines, whatever their shard layouts).
    pub fn expire_offers(&self, now_ms: u64, waits: &mut LockWaits) -> u32 {
        let mut expired = 0;
        for shard in self.shards.iter() {
            let mut shard = waits.lock(shard);
            let shard = &mut *shard;
            if now_ms < shard.next_expiry_ms {
                continue;
            }
            let (mut closed, mut next) = (0, u64::MAX);
            for w in shard.wallets.iter_mut().filter(|w| w.open) {
                closed += u32::from(w.settle_expired_offer(now_ms));
                if let Some(o) = &w.offer {
                    next = next.min(o.expires_ms);
                }
            }
            shard.open_offers -= closed;
            shard.next_expiry_ms = next;
            expired += closed;
        }
        expired
    }

    /// An admin grant of `stack` to a wallet: the one source of value besides starting gold
    /// and loot, booked as minted and as minted by grant. At most once per (wallet,
    /// `grant_id`): grants are numbered upwards per player; a repeat of the last applied id
    /// is answered as a duplicate, an older one refused as too old.
    pub fn grant(&self, handle: WalletHandle, grant_id: u64, stack: &TradeStack, waits: &mut LockWaits) -> Outcome {
        let refuse = |status| Outcome { status, duplicate: false, gold_after: 0 };
        if grant_id == 0 {
            return refuse(EconomyStatus::InvalidTransaction);
        }
        let Some(shard) = self.shards.get(handle.shard as usize) else { return refuse(EconomyStatus::PlayerDeparted) };
        let mut shard = waits.lock(shard);
        let shard = &mut *shard;
        let Some(w) = shard.wallets.get_mut(handle.slot as usize).filter(|w| w.open && w.generation == handle.generation) else {
            return refuse(EconomyStatus::PlayerDeparted);
        };
        if grant_id == w.last_grant {
            return Outcome { status: EconomyStatus::Applied, duplicate: true, gold_after: w.gold };
        }
        if grant_id < w.last_grant {
            return refuse(EconomyStatus::TransactionTooOld);
        }
        let s = match stack_of(stack) {
            Ok(s) if s != Stack::default() => s,
            Ok(_) => return refuse(EconomyStatus::InvalidAmount),
            Err(status) => return refuse(status),
        };
        if !w.can_take(&s) {
            return refuse(EconomyStatus::Overflow);
        }
        w.put_in(&s);
        w.last_grant = grant_id;
        let gold_after = w.gold;
        shard.minted.add_stack(&s);
        shard.minted_by_grant.add_stack(&s);
        Outcome { status: EconomyStatus::Applied, duplicate: false, gold_after }
    }

    /// Credits a loot drop to a wallet, taking the loot with `take` (the claim's CAS) under the
    /// wallet's shard lock once the wallet is known to have room: the take and the credit are
    /// one step, so loot is never taken without being credited nor credited twice. Books the
    /// contents as minted, and as minted by loot.
    pub fn credit_loot(
        &self,
        handle: WalletHandle,
        loot: &LootContents,
        take: impl FnOnce() -> bool,
        waits: &mut LockWaits,
    ) -> Result<LootCredit, LootCreditError> {
        let Some(shard) = self.shards.get(handle.shard as usize) else { return Err(LootCreditError::Departed) };
        let mut shard = waits.lock(shard);
        let shard = &mut *shard;
        let kind = loot.item_kind as usize;
        if loot.item_count > 0 && kind >= ITEM_KINDS {
            return Err(LootCreditError::Full); // not a table's roll; refuse rather than index out of bounds
        }
        let s = Stack { gold: loot.gold, item_kind: kind, item_count: u64::from(loot.item_count) };
        let Some(w) = shard.wallet_mut(handle) else { return Err(LootCreditError::Departed) };
        if !w.can_take(&s) {
            return Err(LootCreditError::Full);
        }
        if !take() {
            return Ok(LootCredit { gold_after: w.gold, credited: false });
        }
        w.put_in(&s);
        let gold_after = w.gold;
        shard.minted.add_stack(&s);
        shard.minted_by_loot.add_stack(&s);
        Ok(LootCredit { gold_after, credited: true })
    }

    /// Locks every shard in ascending order and reads the whole economy at one instant.
    pub fn audit(&self) -> EconomyAudit {
        let guards: Vec<MutexGuard<'_, EconomyShard>> = self.shards.iter().map(|s| s.lock()).collect();
        let mut audit = EconomyAudit::default();
        for shard in &guards {
            for w in shard.wallets.iter().filter(|w| w.open) {
                audit.live.add_wallet(w);
                audit.open_wallets += 1;
                if let Some(o) = &w.offer {
                    audit.escrowed.add_stack(&o.give);
                    audit.open_offers += 1;
                }
            }
            audit.minted.add(&shard.minted);
            audit.minted_by_loot.add(&shard.minted_by_loot);
            audit.minted_by_grant.add(&shard.minted_by_grant);
            audit.sunk.add(&shard.sunk);
            audit.departed.add(&shard.departed);
        }
        audit
    }
}

/// Borrows the wallet of `a` (from `mine`, its shard; unchecked: the caller checks it is open
/// and of `a`'s generation) and, if any, the open wallet of `b` (from `theirs` when that is
/// another shard, else from `mine`; `None` if closed, stale, or `a` itself).
fn two_wallets<'a>(
    mine: &'a mut EconomyShard,
    theirs: Option<&'a mut EconomyShard>,
    a: WalletHandle,
    b: Option<WalletHandle>,
) -> (Option<&'a mut Wallet>, Option<&'a mut Wallet>) {
    match (b, theirs) {
        (Some(h), Some(their_shard)) => (mine.wallets.get_mut(a.slot as usize), their_shard.wallet_mut(h)),
        (Some(h), None) => {
            let (ai, bi, len) = (a.slot as usize, h.slot as usize, mine.wallets.len());
            if ai != bi && ai < len && bi < len && (h.shard as usize) < ECONOMY_SHARDS {
                let [x, y] = mine.wallets.get_disjoint_mut([ai, bi]).expect("distinct slots in range");
                let y = (y.open && y.generation == h.generation).then_some(y);
                (Some(x), y)
            } else {
                (mine.wallets.get_mut(ai), None)
            }
        }
        (None, _) => (mine.wallets.get_mut(a.slot as usize), None),
    }
}

/// Validates `op` and, if it is legal, applies it to the wallets. Pure wallet arithmetic:
/// either every write happens or none does.
fn settle(
    op: &EconomyOp,
    me: &mut Wallet,
    them: Option<&mut Wallet>,
    counterparty: Counterparty,
    wanted_them: bool,
) -> Result<Flow, EconomyStatus> {
    let kind = EconomyKind::try_from(op.kind).map_err(|_| EconomyStatus::BadKind)?;
    // A client no longer names what it loots (loot is claimed: crate::loot) nor takes another
    // player's items at its own price (trades are offered and accepted: Economy::offer).
    if matches!(kind, EconomyKind::Trade | EconomyKind::LootPickup) {
        return Err(EconomyStatus::KindRetired);
    }
    if op.gold < 0 || op.item_count < 0 {
        return Err(EconomyStatus::InvalidAmount);
    }
    if op.gold > AMOUNT_MAX || i64::from(op.item_count) > AMOUNT_MAX {
        return Err(EconomyStatus::Overflow);
    }
    let gold = op.gold as u64;
    let count = op.item_count as u64;
    let item = op.item_kind as usize;
    if count > 0 && item >= ITEM_KINDS {
        return Err(EconomyStatus::UnknownItem);
    }
    if gold == 0 && count == 0 {
        return Err(EconomyStatus::InvalidAmount);
    }
    fn resolve(them: Option<&mut Wallet>, counterparty: Counterparty, wanted_them: bool) -> Result<&mut Wallet, EconomyStatus> {
        match counterparty {
            Counterparty::Absent | Counterparty::Unknown => Err(EconomyStatus::UnknownPlayer),
            Counterparty::Initiator => Err(EconomyStatus::SelfTrade),
            Counterparty::Wallet(_) if !wanted_them => Err(EconomyStatus::SelfTrade),
            Counterparty::Wallet(_) => them.ok_or(EconomyStatus::PlayerDeparted),
        }
    }
    let with_other = |them| resolve(them, counterparty, wanted_them);
    let item_of = |w: &Wallet| if count > 0 { w.items[item] } else { 0 };
    match kind {
        EconomyKind::Transfer => {
            let them = with_other(them)?;
            if me.gold < gold {
                return Err(EconomyStatus::InsufficientFunds);
            }
            if item_of(me) < count {
                return Err(EconomyStatus::InsufficientItems);
            }
            let their_gold = them.gold.checked_add(gold).ok_or(EconomyStatus::Overflow)?;
            let their_items = item_of(them).checked_add(count).ok_or(EconomyStatus::Overflow)?;
            me.gold -= gold;
            them.gold = their_gold;
            if count > 0 {
                me.items[item] -= count;
                them.items[item] = their_items;
            }
            Ok(Flow::default())
        }
        EconomyKind::Trade | EconomyKind::LootPickup => Err(EconomyStatus::KindRetired),
        EconomyKind::Spend => {
            if me.gold < gold {
                return Err(EconomyStatus::InsufficientFunds);
            }
            if item_of(me) < count {
                return Err(EconomyStatus::InsufficientItems);
            }
            me.gold -= gold;
            if count > 0 {
                me.items[item] -= count;
            }
            Ok(Flow { sunk_gold: gold, sunk_items: count })
        }
    }
}

#[cfg(all(test, not(mmo_loom)))]
mod tests {
    use super::*;

    fn transfer(txn: u64, gold: i64) -> EconomyOp {
        EconomyOp {
            player_id: 1,
            session_token: 1,
            transaction_id: txn,
            counterparty_id: 2,
            gold,
            kind: EconomyKind::Transfer as u8,
            ..Default::default()
        }
    }

    #[test]
    fn a_wallet_closed_mid_request_is_departed_not_unknown() {
        let eco = Economy::new(8);
        let (a, b) = (eco.open_wallet(100), eco.open_wallet(100));
        assert!(eco.close_wallet(b));
        assert!(!eco.close_wallet(b), "closing twice is refused");
        let out = eco.execute(&transfer(1, 10), a, Counterparty::Wallet(b), &mut LockWaits::default());
        assert_eq!(out.status, EconomyStatus::PlayerDeparted);
        assert!(eco.close_wallet(a));
        let out = eco.execute(&transfer(2, 10), a, Counterparty::Absent, &mut LockWaits::default());
        assert_eq!(out.status, EconomyStatus::PlayerDeparted);
        let audit = eco.audit();
        assert!(audit.is_conserved());
        assert_eq!(audit.departed.gold, 200);
    }

    #[test]
    fn same_shard_transfers_split_the_borrow_correctly() {
        let eco = Economy::new(1);
        // 65 wallets over 64 shards: the first and the 65th share shard 0.
        let handles: Vec<WalletHandle> = (0..65).map(|_| eco.open_wallet(50)).collect();
        let (a, b) = (handles[0], handles[64]);
        assert_eq!(a.shard, b.shard);
        let out = eco.execute(&transfer(1, 20), a, Counterparty::Wallet(b), &mut LockWaits::default());
        assert_eq!((out.status, out.gold_after), (EconomyStatus::Applied, 30));
        assert_eq!(eco.balance(b).unwrap().gold, 70);
        assert!(eco.audit().is_conserved());
    }

    #[test]
    fn churn_reuses_free_slots_in_other_shards_before_growing() {
        let eco = Economy::new(64);
        let handles: Vec<WalletHandle> = (0..128).map(|_| eco.open_wallet(0)).collect();
        // Free every wallet in shards 1..64; the next opens land there, not in a grown shard 0.
        for h in handles.iter().filter(|h| h.shard != 0) {
            assert!(eco.close_wallet(*h));
        }
        let lens_before: Vec<usize> = eco.shards.iter().map(|s| s.lock().wallets.len()).collect();
        for _ in 0..100 {
            eco.open_wallet(0);
        }
        let lens_after: Vec<usize> = eco.shards.iter().map(|s| s.lock().wallets.len()).collect();
        assert_eq!(lens_before, lens_after, "no shard grew while others had room");
    }
}
