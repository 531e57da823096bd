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
//! ## Accounts and durability
//!
//! A wallet belongs to an account ([`Economy::open_account`]): the first join of an account
//! creates it with the starting gold, later joins (from any address, after a restart) resume
//! it, and it stays when its player leaves. Account 0 means no account: a wallet for one
//! session, closed at leave with its holdings counted as departed (tests, and servers run
//! without a store). With a store open ([`Economy::restore`], then [`crate::durability`]),
//! every change to a wallet — a decision recorded for at-most-once included — is a
//! [`crate::ledger`] entry taken under the shard locks, and its result carries the entry's
//! `ledger_seq`: the network layer tells it only once the entry is durable. A shard whose
//! journal is full (the disk is behind) refuses new operations `StorageBusy`, before anything
//! is decided, so a retransmit can try again.
//!
//! ## Locks
//!
//! The shard mutexes are the only locks (the account index, a `DashMap`, is taken before a
//! shard and only by joins). None is global: movement, combat and the tick never
//! take them, and an economy operation takes at most two of the 64. Waits on them are counted
//! and timed ([`crate::locks`]).

use crate::config::{AMOUNT_MAX, ITEM_KINDS};
use crate::ledger::{Books, DecisionImage, JOURNAL_ENTRIES_PER_SHARD, Ledger, LedgerEntry, MintCause, Recovered, StackImage, WalletImage};
use crate::locks::LockWaits;
use crate::loot::LootContents;
use crate::records::{EconomyKind, EconomyOp, EconomyStatus, TradeAnswer, TradeOffer, TradeStack};
use crossbeam_utils::CachePadded;
use dashmap::DashMap;
use dashmap::mapref::entry::Entry;
use parking_lot::{Mutex, MutexGuard};
use rustc_hash::FxBuildHasher;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicUsize, Ordering};

/// Number of wallet shards.
pub const ECONOMY_SHARDS: usize = 64;
/// Transaction ids remembered per wallet (defined with the ledger, which stores the window).
pub use crate::ledger::DEDUP_WINDOW;

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
    /// Its ledger entry's number plus one (0: none, or already durable when it was loaded): a
    /// retransmit's answer waits for the same entry as the original's.
    ledger_seq: u64,
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
    /// Its account (0: a wallet for one session).
    account: u64,
    /// Whether a live session uses it (an account's wallet stays open between sessions).
    bound: bool,
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
            account: 0,
            bound: false,
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
            return Some(Outcome::refused(EconomyStatus::TransactionTooOld));
        }
        let d = self.decisions[(transaction_id % DEDUP_WINDOW as u64) as usize];
        (d.transaction_id == transaction_id).then(|| {
            let status = EconomyStatus::try_from(d.status).expect("recorded statuses are valid");
            Outcome { status, duplicate: true, gold_after: d.gold_after, ledger_seq: d.ledger_seq }
        })
    }

    /// Records `transaction_id`'s decision, made under ledger number `ledger_seq` (see
    /// [`Decision::ledger_seq`]), and returns the outcome to tell.
    fn record(&mut self, transaction_id: u64, status: EconomyStatus, ledger_seq: u64) -> Outcome {
        let gold_after = if status == EconomyStatus::Applied { self.gold } else { 0 };
        self.decisions[(transaction_id % DEDUP_WINDOW as u64) as usize] =
            Decision { transaction_id, gold_after, status: status as u8, ledger_seq };
        self.highest_transaction = self.highest_transaction.max(transaction_id);
        Outcome { status, duplicate: false, gold_after, ledger_seq }
    }

    /// The wallet as it is now, for the ledger; with `decided`, the decision recorded for that
    /// transaction id.
    fn image(&self, decided: Option<u64>) -> WalletImage {
        let decision = decided.map_or(DecisionImage::default(), |tx| {
            let d = self.decisions[(tx % DEDUP_WINDOW as u64) as usize];
            DecisionImage { transaction_id: d.transaction_id, gold_after: d.gold_after, status: d.status }
        });
        WalletImage {
            account: self.account,
            gold: self.gold,
            items: self.items,
            escrow: self.offer.map_or(StackImage::default(), |o| image_of_stack(&o.give)),
            highest_transaction: self.highest_transaction,
            last_grant: self.last_grant,
            decision,
        }
    }
}

fn image_of_stack(s: &Stack) -> StackImage {
    StackImage { gold: s.gold, item_kind: s.item_kind as u8, item_count: s.item_count }
}

/// A ledger entry for one or two wallets (`b`'s image only if it has an account).
fn entry_of(seq: u64, a: WalletImage, b: Option<WalletImage>) -> LedgerEntry {
    let b = b.filter(|b| b.account != 0);
    LedgerEntry { seq, wallets: [a, b.unwrap_or_default()], wallet_count: 1 + u8::from(b.is_some()), ..LedgerEntry::default() }
}

struct EconomyShard {
    wallets: Vec<Wallet>,
    free: Vec<u32>,
    /// Ledger entries of operations on this shard's wallets not yet taken by the committer,
    /// in sequence order (bounded: [`JOURNAL_ENTRIES_PER_SHARD`]). Pushed by operations under
    /// this shard's lock; drained by the committer under it.
    journal: Vec<LedgerEntry>,
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
    /// Tell it only once the ledger is durable through this (0: at once). See [`crate::ledger`].
    pub ledger_seq: u64,
}

impl Outcome {
    /// A refusal nothing recorded (so nothing to wait for).
    pub fn refused(status: EconomyStatus) -> Self {
        Self { status, duplicate: false, gold_after: 0, ledger_seq: 0 }
    }
}

/// Why [`Economy::open_account`] opened no wallet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AccountError {
    /// A live session already uses the account's wallet.
    InSession,
    /// Wallets are durable and the join names no account.
    Required,
    /// The journals are full (the disk is behind): try again.
    StorageBusy,
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
    /// Tell it only once the ledger is durable through this (0: at once).
    pub ledger_seq: u64,
}

/// Why [`Economy::credit_loot`] credited nothing and left the loot where it was.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LootCreditError {
    /// The wallet is closed (its player left).
    Departed,
    /// A balance would overflow.
    Full,
    /// The journal is full (the disk is behind): the loot stays where it is; claim again.
    StorageBusy,
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
    /// Account -> its wallet. Written by the first join of an account and by restore; read by
    /// every join.
    accounts: DashMap<u64, WalletHandle, FxBuildHasher>,
    /// Ledger numbers and the durable watermark. See [`crate::ledger`].
    ledger: Ledger,
    /// The committer thread, woken by the first entry after each of its commits. Set once by
    /// [`crate::durability`].
    committer: OnceLock<std::thread::Thread>,
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
                    journal: Vec::new(),
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
        Self {
            shards,
            next_shard: AtomicUsize::new(0),
            accounts: DashMap::with_hasher(FxBuildHasher),
            ledger: Ledger::new(),
            committer: OnceLock::new(),
        }
    }

    /// The ledger's numbers and watermark.
    pub fn ledger(&self) -> &Ledger {
        &self.ledger
    }

    /// Opens a wallet holding `starting_gold` (minted) for one session (no account).
    pub fn open_wallet(&self, starting_gold: u64) -> WalletHandle {
        self.open_wallet_for(0, starting_gold).expect("a wallet without an account is never journaled")
    }

    /// Opens a wallet for `account` (0: none) holding `starting_gold` (minted), bound to the
    /// joining session; with the ledger on and an account, its creation is an entry.
    ///
    /// Shards are tried round-robin; the chosen one reuses a closed wallet, or creates one in
    /// its reserved room. If it has neither (join/leave churn can unbalance them), the next ones
    /// are tried, and only when all 64 are full does a shard grow its wallet vector. A shard
    /// whose journal is full is passed over.
    fn open_wallet_for(&self, account: u64, starting_gold: u64) -> Result<WalletHandle, AccountError> {
        let journaled = account != 0 && self.ledger.enabled();
        let start = self.next_shard.fetch_add(1, Ordering::Relaxed) % ECONOMY_SHARDS;
        let mut chosen = None;
        let mut with_room = None;
        for attempt in 0..ECONOMY_SHARDS {
            let index = (start + attempt) % ECONOMY_SHARDS;
            let mut shard = self.shards[index].lock();
            if journaled && !self.ledger.has_room(&shard.journal) {
                continue;
            }
            with_room.get_or_insert(index);
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
        let (shard_index, mut shard, slot) = match chosen {
            Some(c) => c,
            None => {
                let index = with_room.ok_or(AccountError::StorageBusy)?;
                let mut shard = self.shards[index].lock();
                if !self.ledger.has_room(&shard.journal) {
                    return Err(AccountError::StorageBusy);
                }
                shard.wallets.push(Wallet::closed());
                let slot = (shard.wallets.len() - 1) as u32;
                (index, shard, slot)
            }
        };
        let shard = &mut *shard;
        let w = &mut shard.wallets[slot as usize];
        let generation = w.generation;
        *w = Wallet { generation, open: true, account, bound: true, gold: starting_gold, ..Wallet::closed() };
        shard.minted.gold += u128::from(starting_gold);
        if journaled {
            let image = w.image(None);
            self.push_mint(shard, image, StackImage { gold: starting_gold, ..StackImage::default() }, MintCause::Starting);
        }
        Ok(WalletHandle { shard: shard_index as u16, slot, generation })
    }

    /// The wallet of `account` for a joining session: the account's own (resumed) if it has
    /// one, else a new one with `starting_gold`; `true` with it when this join created it.
    /// Account 0 opens a wallet for this session only, unless wallets are durable (then every
    /// session needs an account).
    pub fn open_account(&self, account: u64, starting_gold: u64) -> Result<(WalletHandle, bool), AccountError> {
        if account == 0 {
            if self.ledger.enabled() {
                return Err(AccountError::Required);
            }
            return Ok((self.open_wallet_for(0, starting_gold)?, true));
        }
        // The account index's shard is held while the wallet is found or made, so two joins
        // of one account cannot both create it.
        match self.accounts.entry(account) {
            Entry::Occupied(e) => {
                let h = *e.get();
                let mut shard = self.shards[h.shard as usize].lock();
                let w = shard.wallet_mut(h).expect("an account's wallet never closes");
                if w.bound {
                    return Err(AccountError::InSession);
                }
                w.bound = true;
                Ok((h, false))
            }
            Entry::Vacant(v) => {
                let h = self.open_wallet_for(account, starting_gold)?;
                v.insert(h);
                Ok((h, true))
            }
        }
    }

    /// The session using `handle` ended: an account's wallet stays (unbound, its open offer
    /// too, until it times out); a session's own wallet closes ([`Economy::close_wallet`]).
    /// `false` if the wallet was not open.
    pub fn release(&self, handle: WalletHandle) -> bool {
        let Some(shard) = self.shards.get(handle.shard as usize) else { return false };
        let mut shard = shard.lock();
        match shard.wallet_mut(handle) {
            Some(w) if w.account != 0 => {
                w.bound = false;
                true
            }
            Some(_) => {
                drop(shard);
                self.close_wallet(handle)
            }
            None => false,
        }
    }

    /// Closes a wallet: its holdings move to the shard's departed totals (the hand-off to
    /// persistence), and its handle goes stale. `false` if it was already closed, or if it
    /// belongs to an account (those never close: see [`Economy::release`]).
    pub fn close_wallet(&self, handle: WalletHandle) -> bool {
        let Some(shard) = self.shards.get(handle.shard as usize) else { return false };
        let mut shard = shard.lock();
        let shard = &mut *shard;
        let Some(w) = shard.wallets.get_mut(handle.slot as usize).filter(|w| w.open && w.generation == handle.generation) else {
            return false;
        };
        if w.account != 0 {
            return false;
        }
        // An open offer closes with its maker: the escrow goes back into the wallet first.
        if w.return_escrow() {
            shard.open_offers -= 1;
        }
        shard.departed.add_wallet(w);
        w.open = false;
        w.bound = false;
        w.gold = 0;
        w.items = [0; ITEM_KINDS];
        w.generation = w.generation.wrapping_add(1);
        shard.free.push(handle.slot);
        true
    }

    /// Loads what a store held (before any operation, on an economy with no wallets yet) and
    /// turns the ledger on: from now on every change to an account's wallet is an entry, and
    /// account 0 is refused. Each account's wallet comes back unbound, its window of decisions
    /// with it; an offer that was open when the store last committed is not: its escrow goes
    /// back to its maker (the taker never saw it accepted, or the accept would be durable).
    /// Fails, loading nothing more, when the books and the wallets disagree.
    pub fn restore(&self, recovered: &Recovered) -> Result<(), String> {
        if !self.accounts.is_empty() || self.ledger.enabled() {
            return Err("restore: the economy already has accounts or a ledger".into());
        }
        for shard in self.shards.iter() {
            let mut shard = shard.lock();
            shard.journal.reserve_exact(JOURNAL_ENTRIES_PER_SHARD);
        }
        for (i, stored) in recovered.wallets.iter().enumerate() {
            let image = &stored.image;
            if image.account == 0 || self.accounts.contains_key(&image.account) {
                return Err(format!("restore: account {} twice, or account 0", image.account));
            }
            let index = i % ECONOMY_SHARDS;
            let mut shard = self.shards[index].lock();
            let shard = &mut *shard;
            let mut w = Wallet { open: true, account: image.account, gold: image.gold, items: image.items, ..Wallet::closed() };
            w.highest_transaction = image.highest_transaction;
            w.last_grant = image.last_grant;
            for (slot, d) in w.decisions.iter_mut().zip(&stored.decisions) {
                *slot = Decision { transaction_id: d.transaction_id, gold_after: d.gold_after, status: d.status, ledger_seq: 0 };
            }
            if EconomyStatus::try_from(stored.decisions.iter().map(|d| d.status).max().unwrap_or(0)).is_err() {
                return Err(format!("restore: account {}: a decision with an unknown status", image.account));
            }
            let escrow = Stack {
                gold: image.escrow.gold,
                item_kind: usize::from(image.escrow.item_kind) % ITEM_KINDS,
                item_count: image.escrow.item_count,
            };
            if !w.can_take(&escrow) {
                return Err(format!("restore: account {}: its escrow does not fit back", image.account));
            }
            w.put_in(&escrow);
            shard.wallets.push(w);
            let slot = (shard.wallets.len() - 1) as u32;
            self.accounts.insert(image.account, WalletHandle { shard: index as u16, slot, generation: 0 });
        }
        {
            let books = &recovered.books;
            let mut shard = self.shards[0].lock();
            let holdings = |gold: u128, items: &[u128; ITEM_KINDS]| Holdings { gold, items: *items };
            shard.minted.add(&holdings(books.minted_gold, &books.minted_items));
            shard.minted_by_loot.add(&holdings(books.loot_gold, &books.loot_items));
            shard.minted_by_grant.add(&holdings(books.grant_gold, &books.grant_items));
            shard.sunk.add(&holdings(books.sunk_gold, &books.sunk_items));
        }
        let audit = self.audit();
        if !audit.is_conserved() {
            return Err(format!(
                "restore: the books do not balance: {} gold in wallets, {} minted, {} sunk",
                audit.live.gold, audit.minted.gold, audit.sunk.gold
            ));
        }
        self.ledger.enable();
        Ok(())
    }

    /// The books as they stand (for the committer's first group after a restore).
    pub fn books(&self) -> Books {
        let a = self.audit();
        Books {
            minted_gold: a.minted.gold,
            minted_items: a.minted.items,
            loot_gold: a.minted_by_loot.gold,
            loot_items: a.minted_by_loot.items,
            grant_gold: a.minted_by_grant.gold,
            grant_items: a.minted_by_grant.items,
            sunk_gold: a.sunk.gold,
            sunk_items: a.sunk.items,
            entries: 0,
        }
    }

    /// Registers the committer thread (woken when entries wait). Once.
    pub fn set_committer(&self, thread: std::thread::Thread) {
        let _ = self.committer.set(thread);
    }

    /// Pushes `entry` into `shard`'s journal (the caller holds its lock, took the entry's
    /// number under it, and checked room before deciding) and wakes the committer if it may
    /// be asleep.
    fn push_entry(&self, shard: &mut EconomyShard, entry: LedgerEntry) {
        assert!(shard.journal.len() < JOURNAL_ENTRIES_PER_SHARD, "room is checked before an operation decides");
        debug_assert!(shard.journal.last().is_none_or(|last| last.seq < entry.seq), "a shard's journal is in number order");
        shard.journal.push(entry);
        if self.ledger.note_pending()
            && let Some(t) = self.committer.get()
        {
            t.unpark();
        }
    }

    /// Journals a change that minted `minted` (for `cause`) into the wallet now `image`, under
    /// `shard`'s lock; returns the answer's `ledger_seq`.
    fn push_mint(&self, shard: &mut EconomyShard, image: WalletImage, minted: StackImage, cause: MintCause) -> u64 {
        let seq = self.ledger.take_seq();
        let mut entry = entry_of(seq, image, None);
        entry.minted = minted;
        entry.mint_cause = cause;
        self.push_entry(shard, entry);
        seq + 1
    }

    /// Moves every journaled entry numbered below `cut` into `out` (shard by shard, each under
    /// its lock; see [`crate::ledger`] for why that finds them all). Returns how many.
    pub fn drain_journal(&self, cut: u64, out: &mut Vec<LedgerEntry>) -> usize {
        let before = out.len();
        for shard in self.shards.iter() {
            let mut shard = shard.lock();
            let below = shard.journal.partition_point(|e| e.seq < cut);
            out.extend(shard.journal.drain(..below));
        }
        out.len() - before
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
        let refuse = Outcome::refused;
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
        let room = self.ledger.has_room(&mine.journal);
        let (me, them) = two_wallets(mine, theirs.as_deref_mut(), initiator, other);
        let Some(me) = me.filter(|w| w.open && w.generation == initiator.generation) else {
            return refuse(EconomyStatus::PlayerDeparted);
        };
        if let Some(earlier) = me.earlier(op.transaction_id) {
            return earlier;
        }
        if !room {
            return refuse(EconomyStatus::StorageBusy);
        }
        let result = settle(op, me, them, counterparty, other.is_some());
        let (status, sunk) = match result {
            Ok(flow) => {
                mine.sunk.gold += u128::from(flow.sunk_gold);
                let kind = op.item_kind as usize;
                if flow.sunk_items > 0 {
                    mine.sunk.items[kind] += u128::from(flow.sunk_items);
                }
                let item_kind = if flow.sunk_items > 0 { op.item_kind as u8 } else { 0 };
                (EconomyStatus::Applied, StackImage { gold: flow.sunk_gold, item_kind, item_count: flow.sunk_items })
            }
            Err(status) => (status, StackImage::default()),
        };
        // Re-borrow the wallets (the split borrow above has ended) to record.
        let seq = self.ledger.enabled().then(|| self.ledger.take_seq());
        let me = &mut mine.wallets[initiator.slot as usize];
        let outcome = me.record(op.transaction_id, status, seq.map_or(0, |s| s + 1));
        if let Some(seq) = seq {
            let mine_image = me.image(Some(op.transaction_id));
            let their_image = other.filter(|_| status == EconomyStatus::Applied).map(|h| match theirs.as_deref() {
                Some(t) => t.wallets[h.slot as usize].image(None),
                None => mine.wallets[h.slot as usize].image(None),
            });
            let mut entry = entry_of(seq, mine_image, their_image);
            entry.sunk = sunk;
            self.push_entry(mine, entry);
        }
        outcome
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
        let refuse = |status| (Outcome::refused(status), false);
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
        if !self.ledger.has_room(&shard.journal) {
            return refuse(EconomyStatus::StorageBusy);
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
        let seq = self.ledger.enabled().then(|| self.ledger.take_seq());
        let w = &mut shard.wallets[maker.slot as usize];
        let outcome = w.record(offer.transaction_id, status, seq.map_or(0, |s| s + 1));
        if let Some(seq) = seq {
            let entry = entry_of(seq, w.image(Some(offer.transaction_id)), None);
            self.push_entry(shard, entry);
        }
        (outcome, closed_expired)
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
        let refuse = |status| (Outcome::refused(status), TradeClose::None);
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
        let room = self.ledger.has_room(&mine.journal);
        let (w, their) = two_wallets(mine, theirs.as_deref_mut(), me, maker_h);
        let Some(w) = w.filter(|w| w.open && w.generation == me.generation) else {
            return refuse(EconomyStatus::PlayerDeparted);
        };
        if let Some(earlier) = w.earlier(answer.transaction_id) {
            return (earlier, TradeClose::None);
        }
        if !room {
            return refuse(EconomyStatus::StorageBusy);
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
        let seq = self.ledger.enabled().then(|| self.ledger.take_seq());
        let w = &mut mine.wallets[me.slot as usize];
        let outcome = w.record(answer.transaction_id, status, seq.map_or(0, |s| s + 1));
        if let Some(seq) = seq {
            let mine_image = w.image(Some(answer.transaction_id));
            // The maker's wallet changed if the offer closed (accepted, declined or expired).
            let maker_image = maker_h.filter(|_| close != TradeClose::None).map(|h| match theirs.as_deref() {
                Some(t) => t.wallets[h.slot as usize].image(None),
                None => mine.wallets[h.slot as usize].image(None),
            });
            self.push_entry(mine, entry_of(seq, mine_image, maker_image));
        }
        (outcome, close)
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
            for i in 0..shard.wallets.len() {
                let w = &mut shard.wallets[i];
                if !w.open {
                    continue;
                }
                // With the disk behind, an expired offer waits for the next tick (the
                // escrow is not the owner's to spend until the return is journaled).
                let journaled = self.ledger.enabled() && w.account != 0;
                if journaled && !self.ledger.has_room(&shard.journal) {
                    if let Some(o) = &w.offer {
                        next = next.min(o.expires_ms);
                    }
                    continue;
                }
                let settled = w.settle_expired_offer(now_ms);
                closed += u32::from(settled);
                if let Some(o) = &w.offer {
                    next = next.min(o.expires_ms);
                }
                if settled && journaled {
                    let entry = entry_of(self.ledger.take_seq(), w.image(None), None);
                    self.push_entry(shard, entry);
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
        let refuse = Outcome::refused;
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
            // The grant may still be in a journal.
            let ledger_seq = self.ledger.after_everything_so_far();
            return Outcome { status: EconomyStatus::Applied, duplicate: true, gold_after: w.gold, ledger_seq };
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
        let journaled = self.ledger.enabled() && w.account != 0;
        if !self.ledger.has_room(&shard.journal) {
            return refuse(EconomyStatus::StorageBusy);
        }
        w.put_in(&s);
        w.last_grant = grant_id;
        let gold_after = w.gold;
        let image = journaled.then(|| w.image(None));
        shard.minted.add_stack(&s);
        shard.minted_by_grant.add_stack(&s);
        let ledger_seq = image.map_or(0, |image| self.push_mint(shard, image, image_of_stack(&s), MintCause::Grant));
        Outcome { status: EconomyStatus::Applied, duplicate: false, gold_after, ledger_seq }
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
        let room = self.ledger.has_room(&shard.journal);
        let Some(w) = shard.wallet_mut(handle) else { return Err(LootCreditError::Departed) };
        if !w.can_take(&s) {
            return Err(LootCreditError::Full);
        }
        let journaled = self.ledger.enabled() && w.account != 0;
        if !room {
            return Err(LootCreditError::StorageBusy);
        }
        if !take() {
            // Another claim credited it, and may still be in a journal.
            return Ok(LootCredit { gold_after: w.gold, credited: false, ledger_seq: self.ledger.after_everything_so_far() });
        }
        w.put_in(&s);
        let gold_after = w.gold;
        let image = journaled.then(|| w.image(None));
        shard.minted.add_stack(&s);
        shard.minted_by_loot.add_stack(&s);
        let ledger_seq = image.map_or(0, |image| self.push_mint(shard, image, image_of_stack(&s), MintCause::Loot));
        Ok(LootCredit { gold_after, credited: true, ledger_seq })
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
