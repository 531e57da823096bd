//! Economy: wallets (gold and item stacks), reliable operations, and conservation.
//!
//! ## Design: a wallet arena, per-wallet locks, and 64 homes
//!
//! Correctness comes first here: a trade must move gold one way and items the other, both or
//! neither; a retransmitted request must never apply twice; and
//! `sum(balances) + escrow + departed == minted - sunk` must hold, per currency and per item
//! kind, at every moment a reader can observe.
//!
//! Wallets live in the economy's own sharded-slab arena, each behind its own
//! `parking_lot::Mutex`; a [`WalletHandle`] is the wallet's arena key (its generation included,
//! so a handle to a closed wallet misses once the slot is reused). An account reaches its
//! wallet through the account index (`accounts`). Two operations therefore meet only when they
//! touch a common wallet: two trades between four different players never wait on each other.
//!
//! Each wallet also has a **home**, one of [`ECONOMY_SHARDS`], chosen round-robin when it
//! opens. A home holds three things for its wallets: the member list (which wallets exist, for
//! the audit and the offer sweep), the books (the ledger journal and the minted / sunk /
//! departed totals of operations its wallets started), and the earliest time one of their
//! offers times out.
//!
//! ## Concurrency contract
//!
//! Locks are taken in this order, never against it, and each level at most as stated:
//!
//! 1. the account index's shard (a `DashMap` shard; joins only);
//! 2. home member lists (one; the audit takes all 64 in ascending home index);
//! 3. wallets, **in ascending arena key**: one for a spend, a grant, a loot credit or an
//!    offer, two for a transfer or a trade answer, every open wallet for the audit;
//! 4. home books: one (the initiator's home; the audit takes all 64 in ascending index).
//!
//! An operation locks its wallets, decides with them locked, then locks the initiator's home
//! books, and while it holds all of them it applies, adds to the totals, takes its ledger
//! number and pushes its entry: nobody sees half of it. Every change to a wallet is made while
//! its lock is held, and every change to a home's totals while a wallet lock of the operation is
//! held too. So the audit, once it holds every member list (no wallet opens or closes), every
//! wallet in key order (no operation is between its first write and its last) and then every
//! home's books, reads one instant between operations and recomputes the balances from the
//! wallets themselves (not from a running total that could drift). `rust-core/tests/
//! loom/ledger.rs` model-checks the wallet-then-books order against the ledger's cut.
//!
//! Why not one economy writer thread fed by a queue? Results must go back to the calling
//! network worker within its batch, and a hand-off per operation would add a thread wake-up
//! to every trade's round trip; economy traffic is light next to movement, and with a lock
//! per wallet two operations only meet when players trade with the same player.
//!
//! ## At most once
//!
//! Every request carries `(player, transaction_id)`. Each wallet remembers the decision of the
//! last [`DEDUP_WINDOW`] transaction ids (status and the balance it left). A retransmit of a
//! decided id gets that recorded decision back with `duplicate = 1`, whether it was applied or
//! refused; an id older than the window is refused as `TransactionTooOld` (it may have been
//! applied, so it is never applied now). Clients number transactions upwards and keep fewer
//! than [`DEDUP_WINDOW`] in flight. A new id more than [`TRANSACTION_STEP_MAX`] above the
//! wallet's highest is refused `InvalidTransaction` and recorded nowhere: the window only moves
//! up, so one request for id `u64::MAX` would otherwise leave the account no id to use, ever
//! (its window is stored with it).
//!
//! ## Accounts and durability
//!
//! A wallet belongs to an account ([`Economy::open_account`]): the first join of an account
//! creates it with the starting gold, later joins (from any address, after a restart) resume
//! it, and it stays when its player leaves. Account 0 means no account: a wallet for one
//! session, closed at leave with its holdings counted as departed (tests, and servers run
//! without a store). With a store open ([`Economy::restore`], then [`crate::durability`]),
//! every change to a wallet — a decision recorded for at-most-once included — is a
//! [`crate::ledger`] entry, numbered while the operation holds its wallets and its home's books
//! and pushed into that home's journal, and its result carries the entry's `ledger_seq`: the
//! network layer tells it only once the entry is durable. A home whose journal is full (the
//! disk is behind) refuses new operations `StorageBusy`, before anything is decided, so a
//! retransmit can try again.
//!
//! ## Locks are not global
//!
//! Movement, combat and the tick's movement work never take these locks; an economy operation
//! takes at most two wallets and one home. Waits on them are counted and timed
//! ([`crate::locks`]). Zero allocations per operation: a wallet is allocated when a join
//! creates it (account wallets never close; a session's wallet is freed when its slot is,
//! after its leave), and the arena grows a page when a join finds its thread's pages full.

use crate::arena::ArenaConfig;
use crate::config::{AMOUNT_MAX, ITEM_KINDS};
use crate::ledger::{
    Books, DecisionImage, JOURNAL_ENTRIES_PER_SHARD, Ledger, LedgerEntry, MintCause, Recovered, StackImage, WalletImage, window_slot,
};
use crate::locks::LockWaits;
use crate::loot::LootContents;
use crate::records::{EconomyKind, EconomyOp, EconomyStatus, TradeAnswer, TradeOffer, TradeStack};
use crossbeam_utils::CachePadded;
use dashmap::DashMap;
use dashmap::mapref::entry::Entry;
use parking_lot::{Mutex, MutexGuard};
use rustc_hash::FxBuildHasher;
use sharded_slab::Slab;
use std::num::NonZeroU64;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

/// Number of homes (member lists, journals and books), each wallet in one.
pub const ECONOMY_SHARDS: usize = 64;
/// Transaction ids remembered per wallet (defined with the ledger, which stores the window).
pub use crate::ledger::DEDUP_WINDOW;

/// How far above a wallet's highest decided transaction id a new id may be (the first id of
/// an account: how far above 0). A client counting upwards never comes near it; a client
/// that jumps further is refused `InvalidTransaction`, the wallet untouched. At this step,
/// moving an account's window to the top of the range takes 2^44 accepted requests.
pub const TRANSACTION_STEP_MAX: u64 = 1 << 20;

const _: () = assert!(TRANSACTION_STEP_MAX >= DEDUP_WINDOW as u64, "a client may skip a window's worth of ids");

/// A wallet: its key in the economy's arena. Stale once the wallet closes (the arena's
/// generation moves on when the slot is reused, and a stale key finds nothing).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WalletHandle {
    key: usize,
}

impl WalletHandle {
    /// A handle that matches no wallet.
    pub const NONE: WalletHandle = WalletHandle { key: usize::MAX };

    /// Who a raid drop belongs to, as a dropped add's `loot` word holds it ([`crate::loot`]):
    /// the wallet the loot will be credited to, its arena key plus one. An account's wallet
    /// outlives its sessions, so a killer who reconnects still owns its drops; a session's own
    /// wallet (account 0) goes with its session, and the arena's generation makes a later
    /// wallet in the same slot a different owner. Never 0 (no loot) and never has bit 62
    /// ([`crate::loot::LOOT_CLAIMED`]) set: arena keys stay below `1 << 62`.
    pub fn loot_owner(self) -> u64 {
        const _: () = assert!(RESERVED_KEY_SHIFT <= 62, "arena keys must leave bit 62 to LOOT_CLAIMED");
        debug_assert!((self.key as u64) < (1 << RESERVED_KEY_SHIFT) - 1);
        self.key as u64 + 1
    }
}
/// What [`Economy::restore`] added to the first home's books, as they were before it: what
/// [`Economy::undo_restore`] puts back.
#[derive(Debug)]
pub struct RestoreUndo {
    minted: Holdings,
    minted_by_loot: Holdings,
    minted_by_grant: Holdings,
    sunk: Holdings,
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

/// One remembered decision of a wallet's retransmit window, in the slot of its transaction id
/// ([`window_slot`]). Every wallet keeps [`DEDUP_WINDOW`] of them, so their size is most of a
/// wallet's (and of the wallet arena's memory). The id itself is not stored: a wallet keeps
/// each slot either vacant or holding the decision of the one id of that slot inside its window
/// (see [`Wallet::record`]), so the slot and the wallet's highest id name it, and the status
/// rides in the low byte of the ledger number: 16 bytes where the plain fields took 32, and
/// the window half a kilobyte where, with the ids, it took 768 bytes.
#[derive(Clone, Copy, Debug, Default)]
struct Decision {
    gold_after: u64,
    /// `ledger_seq << 8 | DECIDED | status`; 0: a vacant slot. The ledger number is its
    /// entry's number plus one (0: none, or already durable when it was loaded): a
    /// retransmit's answer waits for the same entry as the original's. Numbers stay below 2^56
    /// (at a million entries a second, two thousand years).
    seq_status: u64,
}

const _: () = assert!(size_of::<Decision>() == 16, "a decision is two words");

impl Decision {
    const SEQ_LIMIT: u64 = 1 << 56;
    /// The bit of `seq_status` that says the slot holds a decision (statuses stay below it).
    const DECIDED: u64 = 0x80;
    /// A slot with no decision.
    const VACANT: Decision = Decision { gold_after: 0, seq_status: 0 };

    fn new(gold_after: u64, status: u8) -> Decision {
        assert!(u64::from(status) < Self::DECIDED, "status {status} does not fit below the decided bit");
        Decision { gold_after, seq_status: Self::DECIDED | u64::from(status) }
    }

    fn is_decided(&self) -> bool {
        self.seq_status & Self::DECIDED != 0
    }

    fn status(&self) -> u8 {
        (self.seq_status & (Self::DECIDED - 1)) as u8
    }

    fn ledger_seq(&self) -> u64 {
        self.seq_status >> 8
    }

    fn set_ledger_seq(&mut self, ledger_seq: u64) {
        assert!(ledger_seq < Self::SEQ_LIMIT, "ledger number {ledger_seq} past 2^56");
        self.seq_status = ledger_seq << 8 | (self.seq_status & 0xFF);
    }
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
    /// The taker's player id. Never 0 (an offer to no one is refused), which gives
    /// `Option<OpenOffer>` its tag for free: see the wallet's size assertion.
    taker_id: NonZeroU64,
    give: Stack,
    want: Stack,
    /// Server clock at which it times out.
    expires_ms: u64,
}

struct Wallet {
    /// Whether it is open (a closed wallet stays readable until every borrow of its arena slot
    /// ends; it refuses everything).
    open: bool,
    /// Its home (see the module docs). Set when it opens, never changed.
    home: u16,
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
    /// An open wallet of `account` in `home`, holding `gold`.
    fn opened(home: usize, account: u64, gold: u64) -> Self {
        Self {
            open: true,
            home: home as u16,
            account,
            bound: false,
            gold,
            items: [0; ITEM_KINDS],
            highest_transaction: 0,
            decisions: [Decision::VACANT; DEDUP_WINDOW],
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

    /// Whether `transaction_id` is inside the window: not above the highest id decided, nor
    /// [`DEDUP_WINDOW`] or more below it (ids start at 1).
    fn window_holds(&self, transaction_id: u64) -> bool {
        transaction_id != 0 && transaction_id <= self.highest_transaction && self.highest_transaction - transaction_id < DEDUP_WINDOW as u64
    }

    /// The answer already owed to `transaction_id`, if it is not new: the recorded decision
    /// (`duplicate` set) for an id inside the window, `TransactionTooOld` for one below it,
    /// `InvalidTransaction` for one more than [`TRANSACTION_STEP_MAX`] above the highest.
    fn earlier(&self, transaction_id: u64) -> Option<Outcome> {
        if transaction_id > self.highest_transaction {
            if transaction_id - self.highest_transaction > TRANSACTION_STEP_MAX {
                return Some(Outcome::refused(EconomyStatus::InvalidTransaction));
            }
            // New. Its slot may still hold the decision of an id a window or more below it.
            return None;
        }
        if !self.window_holds(transaction_id) {
            return Some(Outcome::refused(EconomyStatus::TransactionTooOld));
        }
        let d = self.decisions[usize::from(window_slot(transaction_id))];
        d.is_decided().then(|| {
            let status = EconomyStatus::try_from(d.status()).expect("recorded statuses are valid");
            Outcome { status, duplicate: true, gold_after: d.gold_after, ledger_seq: d.ledger_seq() }
        })
    }

    /// Records the decision of `transaction_id`, a new id ([`Wallet::earlier`] said so), and
    /// returns the outcome to tell (nothing to wait for yet: see [`Wallet::set_ledger_seq`]).
    ///
    /// Keeps the window's rule: each slot is vacant or holds the decision of the one id of its
    /// slot inside the window. An id above the highest moves the window up; the ids it passes
    /// over enter the window undecided, so their slots (which may hold decisions of ids a
    /// window or more below them) are emptied: at most `DEDUP_WINDOW - 1` of them, however far
    /// the client jumps.
    fn record(&mut self, transaction_id: u64, status: EconomyStatus) -> Outcome {
        let at = usize::from(window_slot(transaction_id));
        if transaction_id > self.highest_transaction {
            debug_assert!(
                transaction_id - self.highest_transaction <= TRANSACTION_STEP_MAX,
                "a jump too far is refused before it is recorded"
            );
            let passed_over = (self.highest_transaction + 1).max(transaction_id.saturating_sub(DEDUP_WINDOW as u64 - 1));
            for id in passed_over..transaction_id {
                self.decisions[usize::from(window_slot(id))] = Decision::VACANT;
            }
            self.highest_transaction = transaction_id;
            // Its own slot may hold the decision of the id a window below it: overwritten.
        } else {
            debug_assert!(self.window_holds(transaction_id), "a new id below the window is refused before it is recorded");
            debug_assert!(!self.decisions[at].is_decided(), "a decided id is answered by earlier(), never decided again");
        }
        let gold_after = if status == EconomyStatus::Applied { self.gold } else { 0 };
        self.decisions[at] = Decision::new(gold_after, status as u8);
        Outcome { status, duplicate: false, gold_after, ledger_seq: 0 }
    }

    /// The recorded decision of `transaction_id` was journaled: a retransmit's answer waits
    /// for `ledger_seq` too (see [`Decision::seq_status`]).
    fn set_ledger_seq(&mut self, transaction_id: u64, ledger_seq: u64) {
        debug_assert!(self.window_holds(transaction_id), "set right after record, under the same lock");
        let d = &mut self.decisions[usize::from(window_slot(transaction_id))];
        debug_assert!(d.is_decided(), "set right after record, under the same lock");
        d.set_ledger_seq(ledger_seq);
    }

    /// The wallet as it is now, for the ledger; with `decided`, the decision recorded for that
    /// transaction id.
    fn image(&self, decided: Option<u64>) -> WalletImage {
        let decision = decided.map_or(DecisionImage::default(), |tx| {
            let d = self.decisions[usize::from(window_slot(tx))];
            debug_assert!(self.window_holds(tx) && d.is_decided(), "the image of a decision just recorded");
            DecisionImage { transaction_id: tx, gold_after: d.gold_after, status: d.status() }
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

/// A ledger entry for one or two wallets (`b`'s image only if it has an account), numbered
/// when it is pushed ([`Economy::push_entry`]).
fn entry_of(a: WalletImage, b: Option<WalletImage>) -> LedgerEntry {
    let b = b.filter(|b| b.account != 0);
    LedgerEntry { wallets: [a, b.unwrap_or_default()], wallet_count: 1 + u8::from(b.is_some()), ..LedgerEntry::default() }
}

/// A home's books: the ledger journal and the totals of the operations its wallets started.
#[derive(Default)]
struct HomeBooks {
    /// Ledger entries of operations started from this home's wallets not yet taken by the
    /// committer, in sequence order (bounded: [`JOURNAL_ENTRIES_PER_SHARD`]). Pushed by
    /// operations holding their wallets and these books; drained by the committer under these
    /// books' lock.
    journal: Vec<LedgerEntry>,
    /// The part of `minted` admin grants created.
    minted_by_grant: Holdings,
    minted: Holdings,
    /// The part of `minted` that loot claims created.
    minted_by_loot: Holdings,
    sunk: Holdings,
    departed: Holdings,
}

/// One of the [`ECONOMY_SHARDS`] homes. Each part is padded to its own cache lines (two
/// 64-byte lines: AMD and Intel prefetch lines in adjacent pairs), so the books every operation
/// of the home writes never share a line with the member list joins write, nor with another
/// home's.
struct Home {
    /// Arena keys of the open wallets whose home this is. Written by joins (open) and leaves
    /// (close); read by the audit and by the tick's offer sweep.
    members: CachePadded<Mutex<Vec<usize>>>,
    /// Journal and totals. Written by every operation started from one of its wallets, drained
    /// by the committer, read by the audit.
    books: CachePadded<Mutex<HomeBooks>>,
    /// No offer of its wallets times out before this (server ms; `u64::MAX` when none).
    /// Lowered (fetch_min) by each offer while its maker's wallet is locked; raised only by the
    /// tick's sweep, which stores `u64::MAX` before it scans and lowers it again by what it
    /// found, so an offer made during the scan is never forgotten (model-checked:
    /// `tests/loom/offer_expiry.rs`).
    next_expiry_ms: CachePadded<AtomicU64>,
}

/// The arena holds each wallet boxed: a slot is then a pointer, and only the wallets that
/// exist take their 768 bytes. sharded-slab grows a thread's shard by pages twice the last,
/// so with wallets inline about half of the last page's slots sat empty: at 1,000 joined
/// players, 2.0 MB of arena for 1.0 MB of (then kilobyte) wallets (heaptrack, raid load). A box is
/// allocated when a wallet is created (a join) and freed when its slot is (a session
/// wallet's leave); an operation follows one more pointer to a wallet it has found.
type WalletArena = Slab<Box<Mutex<Wallet>>, ArenaConfig>;
/// Arena keys use the bits below this; the ones above are [`ArenaConfig`]'s reserved bits.
const RESERVED_KEY_SHIFT: u32 = usize::BITS - <ArenaConfig as sharded_slab::Config>::RESERVED_BITS as u32;
// What a wallet costs (its box): the at-most-once window is most of it. At most 768 bytes
// because that is one of mimalloc's size classes: its classes run four per doubling (512, 640,
// 768, 896, 1,024, ...), so a box a word over a class takes the next one. At 1,032 bytes (before
// the offer's taker id gave the open offer's `Option` a niche) a wallet took a 1,280-byte block;
// at 1,024 (before its decisions left their ids out) a 1,024-byte one; now 768.
const _: () = assert!(std::mem::size_of::<Mutex<Wallet>>() <= 768, "a wallet outgrew mimalloc's 768-byte class");
type WalletEntry<'a> = sharded_slab::Entry<'a, Box<Mutex<Wallet>>, ArenaConfig>;

/// Locks `a` and, if any, `b` (another wallet) in ascending arena key: the one order every
/// operation takes wallets in, so two trades in opposite directions cannot deadlock.
fn lock_pair<'a>(
    a: &'a WalletEntry<'_>,
    b: Option<&'a WalletEntry<'_>>,
    waits: &mut LockWaits,
) -> (MutexGuard<'a, Wallet>, Option<MutexGuard<'a, Wallet>>) {
    match b {
        Some(b) if b.key() < a.key() => {
            let theirs = waits.lock(b);
            (waits.lock(a), Some(theirs))
        }
        Some(b) => {
            debug_assert_ne!(a.key(), b.key(), "one wallet is not a pair");
            let mine = waits.lock(a);
            (mine, Some(waits.lock(b)))
        }
        None => (waits.lock(a), None),
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
    /// The wallet arena has no room (the join is refused as a full server).
    Full,
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
    /// Every open wallet (and closed ones until their last borrow ends). Inserted into by joins
    /// and restore, removed from by leaves (a session's wallet), read by every operation.
    wallets: WalletArena,
    /// The homes. See [`Home`] for who writes each part.
    homes: Box<[Home]>,
    /// Round-robin home choice for new wallets. Written by joins.
    next_home: AtomicUsize,
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
    /// An economy with member lists reserved for `player_capacity` wallets: joins up to that
    /// number of open wallets grow no list. The arena is not pre-filled: a wallet's memory is
    /// taken when a join creates it, so memory follows the players who joined, not the
    /// capacity.
    pub fn new(player_capacity: u32) -> Self {
        let per_home = (player_capacity as usize).div_ceil(ECONOMY_SHARDS) + 1;
        let homes = (0..ECONOMY_SHARDS)
            .map(|_| Home {
                members: CachePadded::new(Mutex::new(Vec::with_capacity(per_home))),
                books: CachePadded::new(Mutex::new(HomeBooks::default())),
                next_expiry_ms: CachePadded::new(AtomicU64::new(u64::MAX)),
            })
            .collect::<Vec<_>>()
            .into_boxed_slice();
        Self {
            wallets: Slab::new_with_config::<ArenaConfig>(),
            homes,
            next_home: AtomicUsize::new(0),
            accounts: DashMap::with_hasher(FxBuildHasher),
            ledger: Ledger::new(),
            committer: OnceLock::new(),
        }
    }

    /// The ledger's numbers and watermark.
    pub fn ledger(&self) -> &Ledger {
        &self.ledger
    }

    /// The wallet behind `handle`, if its arena slot still holds it (open or closing).
    ///
    /// A key with a reserved high bit set finds nothing: sharded-slab ignores those bits, so
    /// such a key would alias a live wallet under a different number, and two "different"
    /// handles to one wallet would lock its mutex twice.
    fn wallet(&self, handle: WalletHandle) -> Option<WalletEntry<'_>> {
        if handle.key >> RESERVED_KEY_SHIFT != 0 {
            return None;
        }
        self.wallets.get(handle.key)
    }

    /// Opens a wallet holding `starting_gold` (minted) for one session (no account).
    pub fn open_wallet(&self, starting_gold: u64) -> WalletHandle {
        self.open_wallet_for(0, starting_gold).expect("a wallet without an account is never journaled")
    }

    /// Opens a wallet for `account` (0: none) holding `starting_gold` (minted), bound to the
    /// joining session; with the ledger on and an account, its creation is an entry.
    ///
    /// Homes are tried round-robin; the first whose member list has reserved room is taken.
    /// If none has (join/leave churn can unbalance them), the first with journal room grows its
    /// list. A home whose journal is full is passed over.
    fn open_wallet_for(&self, account: u64, starting_gold: u64) -> Result<WalletHandle, AccountError> {
        let journaled = account != 0 && self.ledger.enabled();
        let start = self.next_home.fetch_add(1, Ordering::Relaxed) % ECONOMY_SHARDS;
        let mut with_room = None;
        for attempt in 0..ECONOMY_SHARDS {
            let index = (start + attempt) % ECONOMY_SHARDS;
            let home = &self.homes[index];
            let members = home.members.lock();
            let books = home.books.lock();
            if journaled && !self.ledger.has_room(&books.journal) {
                continue;
            }
            if members.len() < members.capacity() {
                return self.open_in(index, members, books, account, starting_gold, journaled);
            }
            with_room.get_or_insert(index);
        }
        let index = with_room.ok_or(AccountError::StorageBusy)?;
        let (members, books) = (self.homes[index].members.lock(), self.homes[index].books.lock());
        if journaled && !self.ledger.has_room(&books.journal) {
            return Err(AccountError::StorageBusy);
        }
        self.open_in(index, members, books, account, starting_gold, journaled)
    }

    /// Creates the wallet in home `index`, whose member list and books the caller holds (no
    /// audit can see it half made; nobody else knows its key yet, so its own lock is not needed).
    fn open_in(
        &self,
        index: usize,
        mut members: MutexGuard<'_, Vec<usize>>,
        mut books: MutexGuard<'_, HomeBooks>,
        account: u64,
        starting_gold: u64,
        journaled: bool,
    ) -> Result<WalletHandle, AccountError> {
        let wallet = Wallet { bound: true, ..Wallet::opened(index, account, starting_gold) };
        let image = wallet.image(None);
        let key = self.wallets.insert(Box::new(Mutex::new(wallet))).ok_or(AccountError::Full)?;
        members.push(key);
        books.minted.gold += u128::from(starting_gold);
        if journaled {
            self.push_mint(&mut books, image, StackImage { gold: starting_gold, ..StackImage::default() }, MintCause::Starting);
        }
        Ok(WalletHandle { key })
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
                let entry = self.wallet(h).expect("an account's wallet never closes");
                let mut w = entry.lock();
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
        let Some(entry) = self.wallet(handle) else { return false };
        let mut w = entry.lock();
        match w.open {
            true if w.account != 0 => {
                w.bound = false;
                true
            }
            true => {
                drop(w);
                self.close_wallet(handle)
            }
            false => false,
        }
    }

    /// Closes a wallet: its holdings move to its home's departed totals (the hand-off to
    /// persistence), and its handle goes stale. `false` if it was already closed, or if it
    /// belongs to an account (those never close: see [`Economy::release`]).
    pub fn close_wallet(&self, handle: WalletHandle) -> bool {
        let Some(entry) = self.wallet(handle) else { return false };
        // A wallet's home never changes, so it may be read before the member list is locked.
        let home = &self.homes[usize::from(entry.lock().home)];
        let mut members = home.members.lock();
        let mut w = entry.lock();
        if !w.open || w.account != 0 {
            return false;
        }
        // An open offer closes with its maker: the escrow goes back into the wallet first.
        w.return_escrow();
        home.books.lock().departed.add_wallet(&w);
        w.open = false;
        w.bound = false;
        w.gold = 0;
        w.items = [0; ITEM_KINDS];
        drop(w);
        let at = members.iter().position(|&k| k == handle.key).expect("an open wallet is a member of its home");
        members.swap_remove(at);
        drop(members);
        drop(entry);
        // The slot is freed once every borrow of it ends (an operation that found it before it
        // closed sees it closed and refuses PlayerDeparted).
        self.wallets.remove(handle.key);
        true
    }

    /// Loads what a store held (before any operation, on an economy with no wallets yet) and
    /// turns the ledger on: from now on every change to an account's wallet is an entry, and
    /// account 0 is refused. Each account's wallet comes back unbound, its window of decisions
    /// with it; an offer that was open when the store last committed is not: its escrow goes
    /// back to its maker (the taker never saw it accepted, or the accept would be durable).
    /// Fails when the books and the wallets disagree, or a wallet cannot be loaded, and then
    /// leaves the economy as it found it (no wallet, no account, the books as they were, the
    /// ledger off), so a later restore can run. The answer on success takes the restore back
    /// ([`Economy::undo_restore`]) if the store then cannot start committing.
    pub fn restore(&self, recovered: &Recovered) -> Result<RestoreUndo, String> {
        if !self.accounts.is_empty() || self.ledger.enabled() || self.homes.iter().any(|h| !h.members.lock().is_empty()) {
            return Err("restore: the economy already has wallets or a ledger".into());
        }
        // Wallets that have all closed leave their gold and items in the books (minted, then
        // departed): restored over, those would be minted with no wallet and no departure the
        // store knows of, and the store's next open would find its books unbalanced.
        let untouched = Holdings::default();
        if self.homes.iter().any(|h| {
            let b = h.books.lock();
            [b.minted, b.sunk, b.departed].iter().any(|held| *held != untouched)
        }) {
            return Err("restore: the economy has already minted or sunk (wallets opened and closed before it)".into());
        }
        let undo = {
            let b = self.homes[0].books.lock();
            RestoreUndo { minted: b.minted, minted_by_loot: b.minted_by_loot, minted_by_grant: b.minted_by_grant, sunk: b.sunk }
        };
        match self.load_recovered(recovered) {
            Ok(()) => {
                self.ledger.enable();
                Ok(undo)
            }
            Err(e) => {
                self.undo_restore(undo);
                Err(e)
            }
        }
    }

    /// Takes a restore back: every wallet goes (a restore starts with none), the account
    /// index empties, the first home's books return to what they were, and the ledger is off.
    /// For a restore that failed part-way, or whose store could not start committing; no
    /// session may have joined since (the engine opens its store before any join).
    pub fn undo_restore(&self, undo: RestoreUndo) {
        self.ledger.disable();
        self.accounts.clear();
        for home in self.homes.iter() {
            let keys = std::mem::take(&mut *home.members.lock());
            for key in keys {
                self.wallets.remove(key);
            }
        }
        let mut b = self.homes[0].books.lock();
        (b.minted, b.minted_by_loot, b.minted_by_grant, b.sunk) = (undo.minted, undo.minted_by_loot, undo.minted_by_grant, undo.sunk);
    }

    /// The wallets and books of `recovered`, loaded into an economy with none (see
    /// [`Economy::restore`], which takes them back if this fails).
    fn load_recovered(&self, recovered: &Recovered) -> Result<(), String> {
        for home in self.homes.iter() {
            home.books.lock().journal.reserve_exact(JOURNAL_ENTRIES_PER_SHARD);
        }
        for (i, stored) in recovered.wallets.iter().enumerate() {
            let image = &stored.image;
            if image.account == 0 || self.accounts.contains_key(&image.account) {
                return Err(format!("restore: account {} twice, or account 0", image.account));
            }
            let index = i % ECONOMY_SHARDS;
            let mut w = Wallet { items: image.items, ..Wallet::opened(index, image.account, image.gold) };
            w.highest_transaction = image.highest_transaction;
            w.last_grant = image.last_grant;
            if EconomyStatus::try_from(stored.decisions.iter().map(|d| d.status).max().unwrap_or(0)).is_err() {
                return Err(format!("restore: account {}: a decision with an unknown status", image.account));
            }
            for (slot, d) in stored.decisions.iter().enumerate() {
                if d.transaction_id == 0 {
                    continue;
                }
                if usize::from(d.window_slot()) != slot || d.transaction_id > w.highest_transaction {
                    return Err(format!(
                        "restore: account {}: decision {} in slot {slot} of a window whose highest id is {}",
                        image.account, d.transaction_id, w.highest_transaction
                    ));
                }
                // A slot's decision from below the window is one a retransmit can no longer
                // get (its id is refused as too old, or a newer id of its slot was passed over):
                // the slot is vacant, as the window's rule wants (see `Wallet::record`).
                if w.window_holds(d.transaction_id) {
                    w.decisions[slot] = Decision::new(d.gold_after, d.status);
                }
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
            let key = self.wallets.insert(Box::new(Mutex::new(w))).ok_or("restore: the wallet arena is full")?;
            // The member list is let go before the account index is written (the index comes
            // first in the lock order).
            self.homes[index].members.lock().push(key);
            self.accounts.insert(image.account, WalletHandle { key });
        }
        {
            let books = &recovered.books;
            let mut home = self.homes[0].books.lock();
            let holdings = |gold: u128, items: &[u128; ITEM_KINDS]| Holdings { gold, items: *items };
            home.minted.add(&holdings(books.minted_gold, &books.minted_items));
            home.minted_by_loot.add(&holdings(books.loot_gold, &books.loot_items));
            home.minted_by_grant.add(&holdings(books.grant_gold, &books.grant_items));
            home.sunk.add(&holdings(books.sunk_gold, &books.sunk_items));
        }
        let audit = self.audit();
        if !audit.is_conserved() {
            return Err(format!(
                "restore: the books do not balance: {} gold in wallets, {} minted, {} sunk",
                audit.live.gold, audit.minted.gold, audit.sunk.gold
            ));
        }
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

    /// Takes the next ledger number and pushes `entry` under it into `books`' journal (the
    /// caller holds those books and the wallets the entry images, and checked room before
    /// deciding), waking the committer if it may be asleep. Returns the answer's `ledger_seq`.
    fn push_entry(&self, books: &mut HomeBooks, mut entry: LedgerEntry) -> u64 {
        assert!(books.journal.len() < JOURNAL_ENTRIES_PER_SHARD, "room is checked before an operation decides");
        entry.seq = self.ledger.take_seq();
        debug_assert!(books.journal.last().is_none_or(|last| last.seq < entry.seq), "a journal is in number order");
        books.journal.push(entry);
        if self.ledger.note_pending(entry.seq)
            && let Some(t) = self.committer.get()
        {
            t.unpark();
        }
        entry.seq + 1
    }

    /// Journals a change that minted `minted` (for `cause`) into the wallet now `image`, under
    /// its lock and its home's books; returns the answer's `ledger_seq`.
    fn push_mint(&self, books: &mut HomeBooks, image: WalletImage, minted: StackImage, cause: MintCause) -> u64 {
        let mut entry = entry_of(image, None);
        entry.minted = minted;
        entry.mint_cause = cause;
        self.push_entry(books, entry)
    }

    /// Moves every journaled entry numbered below `cut` into `out` (home by home, each under
    /// its books' lock; see [`crate::ledger`] for why that finds them all). Returns how many.
    pub fn drain_journal(&self, cut: u64, out: &mut Vec<LedgerEntry>) -> usize {
        let before = out.len();
        for home in self.homes.iter() {
            let mut books = home.books.lock();
            let below = books.journal.partition_point(|e| e.seq < cut);
            out.extend(books.journal.drain(..below));
        }
        out.len() - before
    }

    /// A wallet's balances, if it is open.
    pub fn balance(&self, handle: WalletHandle) -> Option<Balance> {
        let entry = self.wallet(handle)?;
        let w = entry.lock();
        w.open.then(|| Balance { gold: w.gold, items: w.items })
    }

    /// Decides one authenticated operation from `initiator`'s wallet. The caller has checked
    /// the player id and session; everything else is decided (and recorded) here.
    /// Waits on the wallet and home locks are added to `waits`.
    pub fn execute(&self, op: &EconomyOp, initiator: WalletHandle, counterparty: Counterparty, waits: &mut LockWaits) -> Outcome {
        let refuse = Outcome::refused;
        if op.transaction_id == 0 {
            return refuse(EconomyStatus::InvalidTransaction);
        }
        let Some(mine) = self.wallet(initiator) else { return refuse(EconomyStatus::PlayerDeparted) };
        let other = match counterparty {
            Counterparty::Wallet(h) if h == initiator => None,
            Counterparty::Wallet(h) => Some(h),
            _ => None,
        };
        let theirs = other.and_then(|h| self.wallet(h));
        let (mut me, mut them) = lock_pair(&mine, theirs.as_ref(), waits);
        if !me.open {
            return refuse(EconomyStatus::PlayerDeparted);
        }
        if let Some(earlier) = me.earlier(op.transaction_id) {
            return earlier;
        }
        let mut books = waits.lock(&self.homes[usize::from(me.home)].books);
        if !self.ledger.has_room(&books.journal) {
            return refuse(EconomyStatus::StorageBusy);
        }
        let result = settle(op, &mut me, them.as_deref_mut().filter(|w| w.open), counterparty, other.is_some());
        let (status, sunk) = match result {
            Ok(flow) => {
                books.sunk.gold += u128::from(flow.sunk_gold);
                if flow.sunk_items > 0 {
                    books.sunk.items[op.item_kind as usize] += u128::from(flow.sunk_items);
                }
                let item_kind = if flow.sunk_items > 0 { op.item_kind as u8 } else { 0 };
                (EconomyStatus::Applied, StackImage { gold: flow.sunk_gold, item_kind, item_count: flow.sunk_items })
            }
            Err(status) => (status, StackImage::default()),
        };
        let their_image = || them.as_deref().filter(|_| status == EconomyStatus::Applied).map(|t| t.image(None));
        self.record_decision(&mut books, &mut me, op.transaction_id, status, their_image, sunk)
    }

    /// Records `transaction_id`'s decision in the initiator's wallet `w` and, with the ledger
    /// on, journals the change into `books` (`w` as it is now with that decision, the
    /// counterparty's image if `other` gives one, what it sank); the outcome carries the
    /// entry's `ledger_seq`. The caller holds `w`, the counterparty and `books`.
    fn record_decision(
        &self,
        books: &mut HomeBooks,
        w: &mut Wallet,
        transaction_id: u64,
        status: EconomyStatus,
        other: impl FnOnce() -> Option<WalletImage>,
        sunk: StackImage,
    ) -> Outcome {
        let outcome = w.record(transaction_id, status);
        if !self.ledger.enabled() {
            return outcome;
        }
        let mut entry = entry_of(w.image(Some(transaction_id)), other());
        entry.sunk = sunk;
        let ledger_seq = self.push_entry(books, entry);
        w.set_ledger_seq(transaction_id, ledger_seq);
        Outcome { ledger_seq, ..outcome }
    }

    /// A trade offer from `maker` to the taker (`taker`, resolved by the caller from
    /// `offer.counterparty_id`) at server time `now_ms`, open for `timeout_ms`. Checked in
    /// order: the transaction id (de-duplicated like every request), the amounts, the taker,
    /// the maker's open offer (one at a time; an expired one is closed first), the maker's
    /// funds; then `give` moves into escrow. Only the maker's wallet is locked. Also says
    /// whether it closed the maker's timed-out offer.
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
        let Some(entry) = self.wallet(maker) else { return refuse(EconomyStatus::PlayerDeparted) };
        let mut w = waits.lock(&*entry);
        if !w.open {
            return refuse(EconomyStatus::PlayerDeparted);
        }
        if let Some(earlier) = w.earlier(offer.transaction_id) {
            return (earlier, false);
        }
        let home = &self.homes[usize::from(w.home)];
        let mut books = waits.lock(&home.books);
        if !self.ledger.has_room(&books.journal) {
            return refuse(EconomyStatus::StorageBusy);
        }
        let closed_expired = w.settle_expired_offer(now_ms);
        let expires_ms = now_ms.saturating_add(u64::from(timeout_ms));
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
            let taker_id = NonZeroU64::new(offer.counterparty_id).ok_or(EconomyStatus::UnknownPlayer)?;
            if w.offer.is_some() {
                return Err(EconomyStatus::OfferPending);
            }
            w.has(&give)?;
            w.take_out(&give);
            w.offer = Some(OpenOffer { offer_id: offer.transaction_id, taker, taker_id, give, want, expires_ms });
            Ok(())
        })();
        let status = match decided {
            Ok(()) => {
                // While the maker's wallet is locked: see `Home::next_expiry_ms`.
                home.next_expiry_ms.fetch_min(expires_ms, Ordering::AcqRel);
                EconomyStatus::Applied
            }
            Err(status) => status,
        };
        let outcome = self.record_decision(&mut books, &mut w, offer.transaction_id, status, || None, StackImage::default());
        (outcome, closed_expired)
    }

    /// An answer to maker `maker_id`'s offer `answer.offer_id` at server time `now_ms`: its
    /// taker accepts (both sides move at once: `want` from the taker to the maker, the escrowed
    /// `give` to the taker) or declines (the escrow goes back), or the maker cancels
    /// (`accept` 0 from the maker). Checked in order: the transaction id (de-duplicated), the
    /// offer (open, this id, not timed out: a timed-out one is closed here, its escrow back),
    /// who answers (the taker; the maker may only cancel), and for an accept the taker's
    /// funds and both sides' room. Both wallets are locked, in ascending arena key.
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
        let Some(mine) = self.wallet(me) else { return refuse(EconomyStatus::PlayerDeparted) };
        let maker_h = match maker {
            Counterparty::Wallet(h) if h != me => Some(h),
            _ => None,
        };
        let theirs = maker_h.and_then(|h| self.wallet(h));
        let (mut w, mut their) = lock_pair(&mine, theirs.as_ref(), waits);
        if !w.open {
            return refuse(EconomyStatus::PlayerDeparted);
        }
        if let Some(earlier) = w.earlier(answer.transaction_id) {
            return (earlier, TradeClose::None);
        }
        let mut books = waits.lock(&self.homes[usize::from(w.home)].books);
        if !self.ledger.has_room(&books.journal) {
            return refuse(EconomyStatus::StorageBusy);
        }
        let cancelling = matches!(maker, Counterparty::Initiator) || maker_h.is_none() && matches!(maker, Counterparty::Wallet(_));
        let decided: Result<TradeClose, EconomyStatus> = (|| {
            // The maker's wallet: another's, or (cancelling) the answerer's own.
            let maker_w: &mut Wallet = match (maker, their.as_deref_mut().filter(|m| m.open)) {
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
            if offer.taker != me || offer.taker_id.get() != answer.player_id {
                return Err(EconomyStatus::NotYourOffer);
            }
            if answer.accept == 0 {
                maker_w.return_escrow();
                return Ok(TradeClose::Declined);
            }
            w.has(&offer.want)?;
            // Room on both sides, checked before anything moves.
            if !fits_after(&w, &offer.want, &offer.give) || !maker_w.can_take(&offer.want) {
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
        // The maker's wallet changed if the offer closed (accepted, declined or expired).
        let maker_image = || their.as_deref().filter(|_| close != TradeClose::None).map(|m| m.image(None));
        (self.record_decision(&mut books, &mut w, answer.transaction_id, status, maker_image, StackImage::default()), close)
    }

    /// Closes every offer timed out by `now_ms`, its escrow back to its maker; returns how
    /// many. A home whose next timeout is later costs one atomic load, so the tick runs this
    /// every tick and an offer's escrow is back at the first tick at or after its timeout (the
    /// same tick in both engines, whatever their layouts).
    pub fn expire_offers(&self, now_ms: u64, waits: &mut LockWaits) -> u32 {
        let mut expired = 0;
        for home in self.homes.iter() {
            if now_ms < home.next_expiry_ms.load(Ordering::Acquire) {
                continue;
            }
            let members = waits.lock(&home.members);
            home.next_expiry_ms.store(u64::MAX, Ordering::Release);
            let mut next = u64::MAX;
            for &key in members.iter() {
                let Some(entry) = self.wallets.get(key) else { continue };
                let mut w = waits.lock(&*entry);
                let Some(offer) = w.offer.filter(|_| w.open) else { continue };
                if now_ms < offer.expires_ms {
                    next = next.min(offer.expires_ms);
                    continue;
                }
                let journaled = self.ledger.enabled() && w.account != 0;
                let mut books = waits.lock(&home.books);
                // With the disk behind, an expired offer waits for the next tick (the escrow
                // is not the owner's to spend until the return is journaled).
                if journaled && !self.ledger.has_room(&books.journal) {
                    next = next.min(offer.expires_ms);
                    continue;
                }
                w.return_escrow();
                expired += 1;
                if journaled {
                    self.push_entry(&mut books, entry_of(w.image(None), None));
                }
            }
            home.next_expiry_ms.fetch_min(next, Ordering::AcqRel);
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
        let Some(entry) = self.wallet(handle) else { return refuse(EconomyStatus::PlayerDeparted) };
        let mut w = waits.lock(&*entry);
        if !w.open {
            return refuse(EconomyStatus::PlayerDeparted);
        }
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
        let mut books = waits.lock(&self.homes[usize::from(w.home)].books);
        if !self.ledger.has_room(&books.journal) {
            return refuse(EconomyStatus::StorageBusy);
        }
        w.put_in(&s);
        w.last_grant = grant_id;
        books.minted.add_stack(&s);
        books.minted_by_grant.add_stack(&s);
        let journaled = self.ledger.enabled() && w.account != 0;
        let ledger_seq = if journaled { self.push_mint(&mut books, w.image(None), image_of_stack(&s), MintCause::Grant) } else { 0 };
        Outcome { status: EconomyStatus::Applied, duplicate: false, gold_after: w.gold, ledger_seq }
    }

    /// Credits a loot drop to a wallet, taking the loot with `take` (the claim's CAS) under the
    /// wallet's lock once the wallet is known to have room: the take and the credit are one
    /// step, so loot is never taken without being credited nor credited twice. Books the
    /// contents as minted, and as minted by loot.
    pub fn credit_loot(
        &self,
        handle: WalletHandle,
        loot: &LootContents,
        take: impl FnOnce() -> bool,
        waits: &mut LockWaits,
    ) -> Result<LootCredit, LootCreditError> {
        let kind = loot.item_kind as usize;
        if loot.item_count > 0 && kind >= ITEM_KINDS {
            return Err(LootCreditError::Full); // not a table's roll; refuse rather than index out of bounds
        }
        let s = Stack { gold: loot.gold, item_kind: kind, item_count: u64::from(loot.item_count) };
        let Some(entry) = self.wallet(handle) else { return Err(LootCreditError::Departed) };
        let mut w = waits.lock(&*entry);
        if !w.open {
            return Err(LootCreditError::Departed);
        }
        if !w.can_take(&s) {
            return Err(LootCreditError::Full);
        }
        let mut books = waits.lock(&self.homes[usize::from(w.home)].books);
        if !self.ledger.has_room(&books.journal) {
            return Err(LootCreditError::StorageBusy);
        }
        if !take() {
            // Another claim credited it, and may still be in a journal.
            return Ok(LootCredit { gold_after: w.gold, credited: false, ledger_seq: self.ledger.after_everything_so_far() });
        }
        w.put_in(&s);
        books.minted.add_stack(&s);
        books.minted_by_loot.add_stack(&s);
        let journaled = self.ledger.enabled() && w.account != 0;
        let ledger_seq = if journaled { self.push_mint(&mut books, w.image(None), image_of_stack(&s), MintCause::Loot) } else { 0 };
        Ok(LootCredit { gold_after: w.gold, credited: true, ledger_seq })
    }

    /// Reads the whole economy at one instant between operations: every home's member list,
    /// then every open wallet in ascending arena key, then every home's books (the order of the
    /// concurrency contract; see the module docs). Allocates (it is the admin's and the tests'
    /// reading, not an operation).
    pub fn audit(&self) -> EconomyAudit {
        let members: Vec<MutexGuard<'_, Vec<usize>>> = self.homes.iter().map(|h| h.members.lock()).collect();
        let mut keys: Vec<usize> = members.iter().flat_map(|m| m.iter().copied()).collect();
        keys.sort_unstable();
        let entries: Vec<WalletEntry<'_>> = keys.iter().map(|&k| self.wallets.get(k).expect("a member is in the arena")).collect();
        let wallets: Vec<MutexGuard<'_, Wallet>> = entries.iter().map(|e| e.lock()).collect();
        let books: Vec<MutexGuard<'_, HomeBooks>> = self.homes.iter().map(|h| h.books.lock()).collect();
        let mut audit = EconomyAudit::default();
        for w in wallets.iter().filter(|w| w.open) {
            audit.live.add_wallet(w);
            audit.open_wallets += 1;
            if let Some(o) = &w.offer {
                audit.escrowed.add_stack(&o.give);
                audit.open_offers += 1;
            }
        }
        for b in &books {
            audit.minted.add(&b.minted);
            audit.minted_by_loot.add(&b.minted_by_loot);
            audit.minted_by_grant.add(&b.minted_by_grant);
            audit.sunk.add(&b.sunk);
            audit.departed.add(&b.departed);
        }
        audit
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
    fn a_decision_keeps_its_status_and_ledger_number_apart() {
        assert!(!Decision::VACANT.is_decided());
        for status in [0u8, 1, 7, 127] {
            for seq in [0u64, 1, 255, 256, 1 << 40, Decision::SEQ_LIMIT - 1] {
                let mut d = Decision::new(42, status);
                assert_eq!((d.is_decided(), d.status(), d.ledger_seq()), (true, status, 0));
                d.set_ledger_seq(seq);
                assert_eq!((d.is_decided(), d.gold_after, d.status(), d.ledger_seq()), (true, 42, status, seq));
            }
        }
    }

    /// A restored window keeps the decisions a retransmit can still get, leaves vacant a slot
    /// whose stored decision is from below the window (its id in the window is new), and
    /// refuses a decision in another id's slot or above the wallet's highest id.
    #[test]
    fn a_restored_window_keeps_what_a_retransmit_can_still_get() {
        use crate::ledger::{DecisionImage, StoredWallet};
        let stored = |decisions: &[DecisionImage], highest: u64| {
            let mut w = StoredWallet::default();
            w.image.account = 7;
            w.image.highest_transaction = highest;
            for d in decisions {
                w.decisions[usize::from(d.window_slot())] = *d;
            }
            Recovered { wallets: vec![w], ..Recovered::default() }
        };
        let decision =
            |transaction_id, gold_after, status: EconomyStatus| DecisionImage { transaction_id, gold_after, status: status as u8 };
        let in_window = decision(90, 77, EconomyStatus::Applied);
        let below_window = decision(95 - DEDUP_WINDOW as u64, 5, EconomyStatus::Applied);
        let eco = Economy::new(8);
        eco.restore(&stored(&[in_window, below_window], 100)).expect("a consistent window restores");
        let (wallet, created) = eco.open_account(7, 0).expect("the account is back");
        assert!(!created);
        let spend = |transaction_id| EconomyOp { transaction_id, gold: 1, kind: EconomyKind::Spend as u8, ..Default::default() };
        let run = |transaction_id| eco.execute(&spend(transaction_id), wallet, Counterparty::Absent, &mut LockWaits::default());
        let again = run(90);
        assert_eq!((again.status, again.duplicate, again.gold_after), (EconomyStatus::Applied, true, 77));
        let fresh = run(95);
        assert_eq!((fresh.status, fresh.duplicate), (EconomyStatus::InsufficientFunds, false), "id 95 was never decided");
        assert_eq!(run(100 - DEDUP_WINDOW as u64).status, EconomyStatus::TransactionTooOld);

        let mut misplaced = stored(&[in_window], 100);
        misplaced.wallets[0].decisions.swap(usize::from(in_window.window_slot()), 0);
        assert!(Economy::new(8).restore(&misplaced).is_err(), "a decision in another id's slot");
        assert!(Economy::new(8).restore(&stored(&[decision(101, 0, EconomyStatus::Applied)], 100)).is_err(), "above the highest id");
    }

    #[test]
    #[should_panic(expected = "below the decided bit")]
    fn a_status_on_the_decided_bit_is_refused() {
        Decision::new(0, 128);
    }

    /// The window without ids in its slots answers as one that remembers every decision ever
    /// made: an id at or below `highest - DEDUP_WINDOW` is too old, any other id decided before
    /// gets its decision back, and the rest are new. Driven by the ids a hostile client can
    /// send: steps up, retransmits, ids just inside and outside the window, jumps of whole
    /// windows (whose ids share every slot), jumps to either side of [`TRANSACTION_STEP_MAX`]
    /// and of 2^32 (refused `InvalidTransaction`, nothing recorded), and the top of the range.
    #[test]
    fn the_window_answers_as_if_it_kept_every_decision() {
        use std::collections::HashMap;
        const WINDOW: u64 = DEDUP_WINDOW as u64;
        let mut seed = 0x2545_F491_4F6C_DD1Du64;
        let mut next = move |bound: u64| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed % bound
        };
        let statuses = [EconomyStatus::Applied, EconomyStatus::InsufficientFunds, EconomyStatus::OfferPending];
        for run in 0..200 {
            let mut w = Wallet::opened(0, 0, 1_000);
            let mut decided: HashMap<u64, (EconomyStatus, u64, u64)> = HashMap::new();
            let start = if run % 10 == 9 { u64::MAX - 5 * WINDOW } else { 0 };
            w.highest_transaction = start;
            for step in 0..400u64 {
                let h = w.highest_transaction;
                let tx = match next(9) {
                    0 => h.saturating_add(1),
                    1 => h.saturating_add(1 + next(2 * WINDOW)),
                    2 => h.saturating_sub(next(2 * WINDOW)),
                    3 => h.saturating_add(WINDOW * (1 + next(3))),
                    4 => h.saturating_sub(WINDOW - 1 + next(3)),
                    5 if next(2) == 0 => h.saturating_add(1 << 32),
                    5 => h.saturating_add(TRANSACTION_STEP_MAX - 1 + next(3)),
                    6 => start.saturating_add(1 + next(3 * WINDOW)),
                    // The top of the range pins the window there: only in the runs that
                    // start near it. Elsewhere, jumps of about a window (the edge of what
                    // `record` empties).
                    7 if start != 0 => u64::MAX - next(3),
                    7 => h.saturating_add(WINDOW - 1 + next(3)),
                    _ => decided.keys().copied().max().unwrap_or(1).saturating_sub(next(WINDOW)),
                }
                .max(1);
                let too_old = h >= WINDOW && tx <= h - WINDOW;
                let too_far = tx > h && tx - h > TRANSACTION_STEP_MAX;
                match w.earlier(tx) {
                    Some(o) if too_old => assert_eq!((o.status, o.duplicate), (EconomyStatus::TransactionTooOld, false)),
                    Some(o) if too_far => {
                        assert_eq!((o.status, o.duplicate), (EconomyStatus::InvalidTransaction, false), "run {run} step {step}: id {tx}");
                    }
                    Some(o) => {
                        let (status, gold_after, seq) = decided[&tx];
                        assert!(o.duplicate, "run {run} step {step}: id {tx} answered as decided");
                        assert_eq!((o.status, o.gold_after, o.ledger_seq), (status, gold_after, seq), "run {run} step {step}: id {tx}");
                    }
                    None => {
                        assert!(
                            !too_old && !too_far && !decided.contains_key(&tx),
                            "run {run} step {step}: id {tx} (highest {h}) is not new"
                        );
                        w.gold = 1_000 + step;
                        let status = statuses[next(3) as usize];
                        let o = w.record(tx, status);
                        assert_eq!(w.highest_transaction, h.max(tx));
                        let seq = next(4);
                        if seq != 0 {
                            w.set_ledger_seq(tx, seq);
                        }
                        assert_eq!(w.image(Some(tx)).decision.transaction_id, tx);
                        decided.insert(tx, (status, o.gold_after, seq));
                    }
                }
            }
        }
    }

    #[test]
    #[should_panic(expected = "past 2^56")]
    fn a_ledger_number_past_the_packing_is_refused() {
        Decision::new(0, 1).set_ledger_seq(Decision::SEQ_LIMIT);
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
    fn an_offer_to_a_wallet_with_no_taker_id_is_refused_and_escrows_nothing() {
        // The engine resolves the taker from `counterparty_id`, so 0 never comes with a
        // wallet from there; the economy still refuses the pair rather than keep an offer
        // no answer could match (the open offer stores the taker's id as a `NonZeroU64`).
        let eco = Economy::new(2);
        let (a, b) = (eco.open_wallet(50), eco.open_wallet(50));
        let stack = TradeStack { gold: 10, ..TradeStack::default() };
        let offer = TradeOffer { player_id: 1, session_token: 1, transaction_id: 1, counterparty_id: 0, give: stack, want: stack };
        let (out, _) = eco.offer(&offer, a, Counterparty::Wallet(b), 0, 1_000, &mut LockWaits::default());
        assert_eq!(out.status, EconomyStatus::UnknownPlayer);
        assert_eq!(eco.balance(a).unwrap().gold, 50, "nothing went into escrow");
        let (out, _) = eco.offer(
            &TradeOffer { transaction_id: 2, counterparty_id: 7, ..offer },
            a,
            Counterparty::Wallet(b),
            0,
            1_000,
            &mut LockWaits::default(),
        );
        assert_eq!(out.status, EconomyStatus::Applied, "the same offer with a taker id opens");
        assert_eq!(eco.balance(a).unwrap().gold, 40);
        assert!(eco.audit().is_conserved());
    }

    #[test]
    fn transfers_both_ways_lock_in_key_order_whichever_side_starts() {
        let eco = Economy::new(2);
        let (a, b) = (eco.open_wallet(50), eco.open_wallet(50));
        assert!(a.key < b.key || b.key < a.key);
        let out = eco.execute(&transfer(1, 20), a, Counterparty::Wallet(b), &mut LockWaits::default());
        assert_eq!((out.status, out.gold_after), (EconomyStatus::Applied, 30));
        let out = eco.execute(&transfer(1, 5), b, Counterparty::Wallet(a), &mut LockWaits::default());
        assert_eq!((out.status, out.gold_after), (EconomyStatus::Applied, 65));
        assert_eq!(eco.balance(a).unwrap().gold, 35);
        assert!(eco.audit().is_conserved());
    }

    #[test]
    fn a_stale_or_forged_handle_finds_no_wallet() {
        let eco = Economy::new(4);
        let old = eco.open_wallet(10);
        assert!(eco.close_wallet(old));
        let new = eco.open_wallet(10);
        assert_ne!(old, new, "a reused slot gets a new generation");
        let forged = [
            WalletHandle::NONE,
            WalletHandle { key: old.key ^ 1 },
            WalletHandle { key: 1 << 61 },
            WalletHandle { key: usize::MAX >> 2 },
            // The live wallet's key with a reserved bit set: sharded-slab alone would find it.
            WalletHandle { key: new.key | 1 << 62 },
            WalletHandle { key: new.key | 1 << 63 },
        ];
        for h in std::iter::once(old).chain(forged) {
            assert_eq!(eco.balance(h), None, "{h:?}");
            let out = eco.execute(&transfer(1, 1), h, Counterparty::Wallet(new), &mut LockWaits::default());
            assert_eq!(out.status, EconomyStatus::PlayerDeparted, "{h:?}");
            let out = eco.execute(&transfer(2, 1), new, Counterparty::Wallet(h), &mut LockWaits::default());
            assert_eq!(out.status, EconomyStatus::PlayerDeparted, "{h:?}");
            assert!(!eco.close_wallet(h) && !eco.release(h));
        }
        assert_eq!(eco.balance(new).unwrap().gold, 10);
        assert!(eco.audit().is_conserved());
    }

    #[test]
    fn churn_fills_reserved_member_room_before_growing_a_list() {
        let eco = Economy::new(64 * 3);
        let handles: Vec<WalletHandle> = (0..64 * 4).map(|_| eco.open_wallet(0)).collect();
        let capacities: Vec<usize> = eco.homes.iter().map(|h| h.members.lock().capacity()).collect();
        for h in handles.iter().step_by(2) {
            assert!(eco.close_wallet(*h));
        }
        for _ in 0..64 * 2 {
            eco.open_wallet(0);
        }
        let after: Vec<usize> = eco.homes.iter().map(|h| h.members.lock().capacity()).collect();
        assert_eq!(capacities, after, "no member list grew while others had room");
        assert_eq!(eco.audit().open_wallets, 64 * 4);
    }
}
