//! The economy's ledger: every change to a durable wallet as an entry, numbered, made durable
//! in groups, and the watermark that says which results may be told.
//!
//! ## Why a number per entry
//!
//! Economy operations run on many network threads at once, each holding its wallets' locks
//! and then its home's books ([`crate::economy`]). An operation that changes a wallet of an
//! account takes the next ledger sequence number **while it holds all of those locks** and
//! pushes its entry into that home's journal before letting go. Two operations that touch a
//! common wallet therefore take their numbers in the order they held it, and an entry with a
//! number below any number already handed out is already in some home's journal or is being
//! pushed by a thread that still holds that home's books. So the committer
//! ([`crate::durability`]) can take a cut `c` (the next number to be handed out), lock the
//! homes' books one at a time, take every entry below `c`, and have all of them, with no lock
//! over the whole economy and no wait on any thread. `rust-core/tests/loom/ledger.rs`
//! model-checks this.
//!
//! ## Why post-images
//!
//! An entry records each touched wallet as it was left (balances, escrow, the decision it
//! recorded), not the arithmetic that led there. Replaying it is an overwrite, so recovery does
//! not depend on re-running the rules, and a wallet's last image is its state.
//!
//! ## The watermark
//!
//! [`Ledger::durable_through`] is the cut of the last group the store made durable: every entry
//! numbered below it is on disk. A result carries `ledger_seq`, its entry's number plus one (0:
//! nothing to wait for); the network layer holds the reply until `durable_through >= ledger_seq`.
//! Moves, attacks and the tick never take a ledger number and never wait on it.

use crate::config::ITEM_KINDS;
use crate::sync::{AtomicBool, AtomicU64, Ordering};
use crossbeam_utils::CachePadded;
use std::io;

/// Entries a home's journal holds before operations started from its wallets are refused
/// `StorageBusy` (the committer is behind). At 5,000 operations a second over 64 homes, a
/// home gets about one entry per 13 ms; the committer takes them every group commit
/// (a few ms), so 64 is far from reached unless the disk stalls.
pub const JOURNAL_ENTRIES_PER_SHARD: usize = 64;

/// Transaction ids whose decisions each wallet remembers (the at-most-once window; slot
/// `transaction_id % DEDUP_WINDOW`). Re-exported as `economy::DEDUP_WINDOW`.
pub const DEDUP_WINDOW: usize = 32;

/// A decision recorded for at-most-once (transaction id 0: none).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DecisionImage {
    /// The client's transaction id.
    pub transaction_id: u64,
    /// The initiator's gold right after it (0 when refused).
    pub gold_after: u64,
    /// An `EconomyStatus` as an integer.
    pub status: u8,
}

/// The slot of `transaction_id` in its account's de-duplication window: the one place the
/// window's arithmetic lives (the live wallet, the ledger images, the store's rows).
pub fn window_slot(transaction_id: u64) -> u8 {
    const _: () = assert!(DEDUP_WINDOW <= u8::MAX as usize + 1, "a window slot fits a u8");
    (transaction_id % DEDUP_WINDOW as u64) as u8
}

impl DecisionImage {
    /// Its slot in the account's de-duplication window.
    pub fn window_slot(&self) -> u8 {
        window_slot(self.transaction_id)
    }
}

/// An amount of gold and of one item kind (what one operation mints or sinks).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct StackImage {
    /// Gold.
    pub gold: u64,
    /// Item kind (0 when `item_count` is 0).
    pub item_kind: u8,
    /// Items.
    pub item_count: u64,
}

impl StackImage {
    /// Whether it moves nothing.
    pub fn is_empty(&self) -> bool {
        self.gold == 0 && self.item_count == 0
    }
}

/// One wallet as an operation left it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct WalletImage {
    /// The account that owns it (never 0 in the ledger).
    pub account: u64,
    /// Gold, escrow excluded.
    pub gold: u64,
    /// Items per kind, escrow excluded.
    pub items: [u64; ITEM_KINDS],
    /// What its open trade offer holds in escrow (empty: no open offer).
    pub escrow: StackImage,
    /// Highest transaction id it has decided.
    pub highest_transaction: u64,
    /// Highest admin grant id applied.
    pub last_grant: u64,
    /// The decision this change recorded, if any.
    pub decision: DecisionImage,
}

/// Why value was created.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[repr(u8)]
pub enum MintCause {
    /// Nothing minted.
    #[default]
    None = 0,
    /// An account's starting gold.
    Starting = 1,
    /// A loot claim.
    Loot = 2,
    /// An admin grant.
    Grant = 3,
}

/// One change to one or two wallets, with what it minted or sank.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LedgerEntry {
    /// Its ledger sequence number.
    pub seq: u64,
    /// The wallets it touched, as it left them (`wallet_count` of them).
    pub wallets: [WalletImage; 2],
    /// 1 or 2.
    pub wallet_count: u8,
    /// What it minted, and why.
    pub minted: StackImage,
    /// Why it minted.
    pub mint_cause: MintCause,
    /// What it sank.
    pub sunk: StackImage,
}

// Journals reserve `JOURNAL_ENTRIES_PER_SHARD` of these per home: keep an entry's size in view.
const _: () = assert!(std::mem::size_of::<LedgerEntry>() <= 512, "a ledger entry outgrew its budget");

impl LedgerEntry {
    /// The touched wallets.
    pub fn wallets(&self) -> &[WalletImage] {
        &self.wallets[..usize::from(self.wallet_count.min(2))]
    }
}

/// Everything minted and sunk since the store was created: with the wallets, the books.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Books {
    /// Gold minted.
    pub minted_gold: u128,
    /// Items minted per kind.
    pub minted_items: [u128; ITEM_KINDS],
    /// Gold minted by loot claims.
    pub loot_gold: u128,
    /// Items minted by loot claims.
    pub loot_items: [u128; ITEM_KINDS],
    /// Gold minted by admin grants.
    pub grant_gold: u128,
    /// Items minted by admin grants.
    pub grant_items: [u128; ITEM_KINDS],
    /// Gold sunk.
    pub sunk_gold: u128,
    /// Items sunk per kind.
    pub sunk_items: [u128; ITEM_KINDS],
    /// Entries applied since the store was created.
    pub entries: u64,
}

impl Books {
    /// Adds one entry's minted and sunk amounts.
    pub fn add(&mut self, e: &LedgerEntry) {
        let add = |gold: &mut u128, items: &mut [u128; ITEM_KINDS], s: &StackImage| {
            *gold += u128::from(s.gold);
            if s.item_count > 0 {
                items[usize::from(s.item_kind) % ITEM_KINDS] += u128::from(s.item_count);
            }
        };
        add(&mut self.minted_gold, &mut self.minted_items, &e.minted);
        match e.mint_cause {
            MintCause::Loot => add(&mut self.loot_gold, &mut self.loot_items, &e.minted),
            MintCause::Grant => add(&mut self.grant_gold, &mut self.grant_items, &e.minted),
            MintCause::Starting | MintCause::None => {}
        }
        add(&mut self.sunk_gold, &mut self.sunk_items, &e.sunk);
        self.entries += 1;
    }
}

/// One account's wallet as the store holds it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct StoredWallet {
    /// Balances, escrow, highest ids (its `decision` field is unused: see `decisions`).
    pub image: WalletImage,
    /// Its de-duplication window, slot `transaction_id % DEDUP_WINDOW`.
    pub decisions: [DecisionImage; DEDUP_WINDOW],
}

/// What a store held when it was opened.
#[derive(Clone, Debug, Default)]
pub struct Recovered {
    /// Every account's wallet.
    pub wallets: Vec<StoredWallet>,
    /// The books.
    pub books: Books,
    /// What the store repaired or refused while opening (an interrupted commit rolled back,
    /// for example); empty when it opened clean.
    pub repairs: Vec<String>,
}

/// Where durable wallets live. The server's is [`crate::commit_log::LoggedStore`] (an
/// append-only commit log with an embedded redb file as its checkpoint); a plain
/// [`crate::store::RedbStore`] (a redb transaction per group) is one too, and a shared
/// database for several zone servers would be another.
///
/// Called from one thread, the committer's. `commit` is all or nothing: after an error, nothing
/// of that group is durable and the committer tries the same group again.
pub trait EconomyStore: Send {
    /// Makes `entries` (in sequence order) and the books after them durable, in one step.
    fn commit(&mut self, entries: &[LedgerEntry], books: &Books) -> io::Result<()>;
    /// Reads everything back (at start, before any operation).
    fn load(&mut self) -> io::Result<Recovered>;
}

/// The numbers and the watermark. Shared by every economy operation (which takes numbers) and
/// the committer (which moves the watermark).
pub struct Ledger {
    /// Whether wallets of accounts are durable (a store is open). Written once, before the
    /// engine serves; read by every economy operation.
    enabled: AtomicBool,
    /// The next sequence number. Taken (fetch_add) by operations under their wallet and home
    /// locks; read by the committer as its cut. Padded: it is the one line every economy operation writes.
    next_seq: CachePadded<AtomicU64>,
    /// Every entry numbered below this is durable. Written by the committer; read by the
    /// network layer to release held replies.
    durable_through: CachePadded<AtomicU64>,
    /// Set by an operation that pushed an entry, cleared by the committer before it takes a
    /// cut: only the first entry after a commit pays for waking the committer.
    wake_pending: AtomicBool,
    /// Entries waiting at which a lingering committer wants to be woken (0: it never lingers,
    /// so only the first entry wakes it). Written once by the committer as it starts; read by
    /// every push.
    group_target: AtomicU64,
}

impl Default for Ledger {
    fn default() -> Self {
        Self::new()
    }
}

impl Ledger {
    /// A disabled ledger: nothing is numbered, nothing waits.
    pub fn new() -> Self {
        Self {
            enabled: AtomicBool::new(false),
            next_seq: CachePadded::new(AtomicU64::new(0)),
            durable_through: CachePadded::new(AtomicU64::new(0)),
            wake_pending: AtomicBool::new(false),
            group_target: AtomicU64::new(0),
        }
    }

    /// Turns numbering on (a store was opened).
    pub fn enable(&self) {
        self.enabled.store(true, Ordering::Release);
    }

    /// Turns numbering off again: only to take back a restore whose store never started
    /// committing (nothing can have been numbered in between).
    pub fn disable(&self) {
        self.enabled.store(false, Ordering::Release);
    }

    /// Whether changes to accounts' wallets are numbered and made durable.
    pub fn enabled(&self) -> bool {
        self.enabled.load(Ordering::Acquire)
    }

    /// Takes the next number. Call only while holding the books of the home whose journal
    /// the entry goes into (see the module docs).
    pub fn take_seq(&self) -> u64 {
        self.next_seq.fetch_add(1, Ordering::AcqRel)
    }

    /// The next number to be handed out: every entry below it exists or is being pushed.
    pub fn head(&self) -> u64 {
        self.next_seq.load(Ordering::Acquire)
    }

    /// Whether a home's `journal` can take an entry (always, with the ledger off).
    pub fn has_room(&self, journal: &[LedgerEntry]) -> bool {
        !self.enabled() || journal.len() < JOURNAL_ENTRIES_PER_SHARD
    }

    /// The `ledger_seq` of an answer that repeats a change which may still be in a journal
    /// (a repeated grant or loot claim): it waits for every entry numbered so far. 0 with the
    /// ledger off.
    pub fn after_everything_so_far(&self) -> u64 {
        if self.enabled() { self.head() } else { 0 }
    }

    /// Every entry numbered below this is durable.
    pub fn durable_through(&self) -> u64 {
        self.durable_through.load(Ordering::Acquire)
    }

    /// The committer made every entry below `cut` durable.
    pub fn set_durable_through(&self, cut: u64) {
        let before = self.durable_through.swap(cut, Ordering::AcqRel);
        debug_assert!(before <= cut, "the watermark never moves back");
    }

    /// Marks that the entry numbered `seq` is waiting; returns whether the caller should wake
    /// the committer: the first entry since the committer last looked, and the one that makes
    /// a lingering committer's group target (see [`crate::durability`]).
    pub fn note_pending(&self, seq: u64) -> bool {
        let first = !self.wake_pending.swap(true, Ordering::AcqRel);
        let target = self.group_target.load(Ordering::Relaxed);
        first || target != 0 && seq + 1 == self.durable_through().saturating_add(target)
    }

    /// Sets the number of waiting entries at which [`Ledger::note_pending`] asks for a wake-up
    /// although the committer was already woken (a lingering committer's group target).
    pub fn set_group_target(&self, entries: u64) {
        self.group_target.store(entries, Ordering::Relaxed);
    }

    /// The committer is about to take a cut: later entries wake it again.
    pub fn clear_pending(&self) {
        self.wake_pending.store(false, Ordering::Release);
    }
}

const _: () = assert!(JOURNAL_ENTRIES_PER_SHARD >= 4, "a two-wallet entry and its followers need room");
const _: () = assert!(ITEM_KINDS <= u8::MAX as usize + 1, "an item kind fits the image's u8");
