//! The economy's wallets in one redb file, `economy.redb`, in the data directory: the
//! checkpoint behind the commit log ([`crate::commit_log::LoggedStore`], which the server
//! uses), or a store of its own ([`RedbStore`] implements [`EconomyStore`]: a transaction per
//! group, as the server did before the log; the benches compare the two).
//!
//! redb is an embedded, crash-safe B-tree store: a commit with `Durability::Immediate` writes
//! the new pages with checksums, flips the commit slot and calls `fsync` once; after a crash
//! the last commit whose checksum verifies is the state (an interrupted one is rolled back,
//! and the open reports that it repaired the file).
//!
//! Three tables:
//! - `wallets`: account -> balances, escrow, highest transaction id, last grant id;
//! - `decisions`: (account, slot) -> the at-most-once decision in that slot of the account's
//!   window (`transaction_id % DEDUP_WINDOW`), so a retransmit after a restart gets its
//!   original answer;
//! - `books`: what was minted (and why) and sunk since the store was created, and how many
//!   entries it has applied.
//!
//! The store holds state, not a log: an entry overwrites its wallets' rows, so opening costs
//! one read per account and per recorded decision, whatever the number of operations that
//! led there.

use crate::config::ITEM_KINDS;
use crate::ledger::{Books, DEDUP_WINDOW, DecisionImage, EconomyStore, LedgerEntry, Recovered, StackImage, StoredWallet, WalletImage};
use redb::{Database, Durability, ReadableDatabase, ReadableTable, TableDefinition};
use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

const WALLETS: TableDefinition<u64, &[u8]> = TableDefinition::new("wallets");
const DECISIONS: TableDefinition<(u64, u8), &[u8]> = TableDefinition::new("decisions");
const BOOKS: TableDefinition<&str, &[u8]> = TableDefinition::new("books");

/// Layout version of the rows; a store written by another layout is refused, not misread.
const ROW_VERSION: u8 = 1;
pub(crate) const WALLET_ROW: usize = 1 + 8 + 8 * ITEM_KINDS + (8 + 1 + 8) + 8 + 8;
pub(crate) const DECISION_ROW: usize = 1 + 8 + 8 + 1;
const BOOKS_ROW: usize = 1 + 4 * 16 * (1 + ITEM_KINDS) + 8;

/// redb's page cache (its write buffer is at most half of it). redb's default, 1 GiB, keeps
/// every page it ever wrote or read in the heap: behind the commit log the file is written a
/// segment's checkpoint at a time on a thread of its own and read once at start, so a cache
/// buys little there, and what it holds during a checkpoint is resident. Under the raid load
/// of `make compare` the server's peak RSS was 32.9 MiB with the default (heaptrack: 3.4 MiB
/// of it redb's dirty pages of one checkpoint) and 27.9 MiB with this bound. In three
/// interleaved `loadtest/scripts/with-server.sh` raid runs each, a 4 MiB bound gave
/// 37.7-38.0 MiB and this one 34.8-35.1 MiB, with the same update latency and CPU
/// (docs/results/redb-cache-ab/). Pages past the write buffer's half are written to the file
/// (the kernel's page cache) during the checkpoint instead of at its commit.
pub const CACHE_BYTES: usize = 1 << 20;

/// The file name inside the data directory.
pub const STORE_FILE: &str = "economy.redb";

/// The economy's wallets in a redb file.
pub struct RedbStore {
    db: Database,
    path: PathBuf,
    /// What redb repaired while opening.
    repairs: Vec<String>,
}

fn io_error(context: &str, e: impl std::fmt::Display) -> io::Error {
    io::Error::other(format!("{context}: {e}"))
}

/// Runs `f`, turning a panic inside redb into an error: redb recovers a torn or truncated
/// commit by itself, but a file whose committed pages were overwritten can make it panic on a
/// page it cannot parse. The server then refuses to start with that reason instead of dying.
fn guarded<T>(what: &str, f: impl FnOnce() -> io::Result<T>) -> io::Result<T> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)).unwrap_or_else(|panic| {
        let why = panic.downcast_ref::<String>().map(String::as_str).or_else(|| panic.downcast_ref::<&str>().copied()).unwrap_or("a panic");
        Err(io::Error::new(io::ErrorKind::InvalidData, format!("{what}: {STORE_FILE} is corrupt ({why})")))
    })
}

impl RedbStore {
    /// Opens (or creates) `dir/economy.redb`, creating `dir` if needed.
    pub fn open(dir: &Path) -> io::Result<Self> {
        guarded("opening", || Self::open_unguarded(dir))
    }

    fn open_unguarded(dir: &Path) -> io::Result<Self> {
        std::fs::create_dir_all(dir)?;
        let path = dir.join(STORE_FILE);
        let repairs = Arc::new(Mutex::new(Vec::new()));
        let seen = Arc::clone(&repairs);
        let db = Database::builder()
            .set_cache_size(CACHE_BYTES)
            .set_repair_callback(move |session| {
                let mut seen = seen.lock().unwrap_or_else(|p| p.into_inner());
                if seen.is_empty() {
                    seen.push(format!(
                        "{}: the last commit was interrupted (torn or truncated); rolled back to the last complete one ({:.0}% checked)",
                        STORE_FILE,
                        session.progress() * 100.0
                    ));
                }
            })
            .create(&path)
            .map_err(|e| io_error(&format!("opening {}", path.display()), e))?;
        let repairs = std::mem::take(&mut *repairs.lock().unwrap_or_else(|p| p.into_inner()));
        Ok(Self { db, path, repairs })
    }

    /// The file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl EconomyStore for RedbStore {
    fn commit(&mut self, entries: &[LedgerEntry], books: &Books) -> io::Result<()> {
        guarded("committing", || self.commit_unguarded(entries, books))
    }

    fn load(&mut self) -> io::Result<Recovered> {
        guarded("reading", || self.load_unguarded())
    }
}

impl RedbStore {
    fn commit_unguarded(&mut self, entries: &[LedgerEntry], books: &Books) -> io::Result<()> {
        let wallets = entries.iter().flat_map(LedgerEntry::wallets);
        self.write_rows(wallets.clone(), wallets.map(|w| (w.account, &w.decision)), books)
    }

    /// Writes wallets and decisions as a stretch of the commit log left them, and the books
    /// after it, in one transaction and one fsync: a checkpoint of the log
    /// ([`crate::commit_log`]).
    pub(crate) fn write_state<'a>(
        &mut self,
        wallets: impl Iterator<Item = &'a WalletImage>,
        decisions: impl Iterator<Item = (u64, &'a DecisionImage)>,
        books: &Books,
    ) -> io::Result<()> {
        guarded("checkpointing", || self.write_rows(wallets, decisions, books))
    }

    /// Inserts (overwrites) each wallet row, each decision with a transaction id into its
    /// window slot, and the books, in that order, and commits once with an fsync.
    fn write_rows<'a>(
        &mut self,
        wallets: impl Iterator<Item = &'a WalletImage>,
        decisions: impl Iterator<Item = (u64, &'a DecisionImage)>,
        books: &Books,
    ) -> io::Result<()> {
        let mut txn = self.db.begin_write().map_err(|e| io_error("begin", e))?;
        txn.set_durability(Durability::Immediate).map_err(|e| io_error("durability", e))?;
        {
            let mut wallet_table = txn.open_table(WALLETS).map_err(|e| io_error("wallets", e))?;
            let mut row = [0u8; WALLET_ROW];
            for w in wallets {
                encode_wallet(w, &mut row);
                wallet_table.insert(w.account, row.as_slice()).map_err(|e| io_error("wallet row", e))?;
            }
            let mut decision_table = txn.open_table(DECISIONS).map_err(|e| io_error("decisions", e))?;
            let mut decision_row = [0u8; DECISION_ROW];
            for (account, d) in decisions.filter(|(_, d)| d.transaction_id != 0) {
                encode_decision(d, &mut decision_row);
                decision_table.insert((account, d.window_slot()), decision_row.as_slice()).map_err(|e| io_error("decision row", e))?;
            }
            let mut books_table = txn.open_table(BOOKS).map_err(|e| io_error("books", e))?;
            let mut books_row = [0u8; BOOKS_ROW];
            encode_books(books, &mut books_row);
            books_table.insert("books", books_row.as_slice()).map_err(|e| io_error("books row", e))?;
        }
        txn.commit().map_err(|e| io_error("commit", e))
    }

    fn load_unguarded(&mut self) -> io::Result<Recovered> {
        let txn = self.db.begin_read().map_err(|e| io_error("begin read", e))?;
        let mut recovered = Recovered { repairs: std::mem::take(&mut self.repairs), ..Recovered::default() };
        let wallets = match txn.open_table(WALLETS) {
            Ok(t) => t,
            Err(redb::TableError::TableDoesNotExist(_)) => return Ok(recovered),
            Err(e) => return Err(io_error("wallets", e)),
        };
        let mut by_account = rustc_hash::FxHashMap::default();
        for row in wallets.iter().map_err(|e| io_error("wallets", e))? {
            let (account, bytes) = row.map_err(|e| io_error("wallet row", e))?;
            let image = decode_wallet(account.value(), bytes.value())?;
            by_account.insert(account.value(), recovered.wallets.len());
            recovered.wallets.push(StoredWallet { image, decisions: [DecisionImage::default(); DEDUP_WINDOW] });
        }
        let decisions = txn.open_table(DECISIONS).map_err(|e| io_error("decisions", e))?;
        for row in decisions.iter().map_err(|e| io_error("decisions", e))? {
            let (key, bytes) = row.map_err(|e| io_error("decision row", e))?;
            let (account, slot) = key.value();
            let d = decode_decision(bytes.value())?;
            let Some(&i) = by_account.get(&account) else {
                return Err(io::Error::new(io::ErrorKind::InvalidData, format!("a decision of account {account}, which has no wallet")));
            };
            if usize::from(slot) >= DEDUP_WINDOW || d.window_slot() != slot {
                return Err(io::Error::new(io::ErrorKind::InvalidData, format!("account {account}: decision in the wrong slot {slot}")));
            }
            recovered.wallets[i].decisions[usize::from(slot)] = d;
        }
        let books = txn.open_table(BOOKS).map_err(|e| io_error("books", e))?;
        if let Some(row) = books.get("books").map_err(|e| io_error("books row", e))? {
            recovered.books = decode_books(row.value())?;
        }
        Ok(recovered)
    }
}

/// Little-endian writer over a fixed row.
struct Put<'a> {
    buf: &'a mut [u8],
    at: usize,
}

impl Put<'_> {
    fn bytes(&mut self, b: &[u8]) {
        self.buf[self.at..self.at + b.len()].copy_from_slice(b);
        self.at += b.len();
    }
    fn u8(&mut self, v: u8) {
        self.bytes(&[v]);
    }
    fn u64(&mut self, v: u64) {
        self.bytes(&v.to_le_bytes());
    }
    fn u128(&mut self, v: u128) {
        self.bytes(&v.to_le_bytes());
    }
}

/// Little-endian reader over a row whose length was checked.
struct Get<'a> {
    buf: &'a [u8],
    at: usize,
}

impl Get<'_> {
    fn take<const N: usize>(&mut self) -> [u8; N] {
        let b: [u8; N] = self.buf[self.at..self.at + N].try_into().expect("length checked by the caller");
        self.at += N;
        b
    }
    fn u8(&mut self) -> u8 {
        self.take::<1>()[0]
    }
    fn u64(&mut self) -> u64 {
        u64::from_le_bytes(self.take())
    }
    fn u128(&mut self) -> u128 {
        u128::from_le_bytes(self.take())
    }
}

fn check_row(what: &str, bytes: &[u8], len: usize) -> io::Result<()> {
    if bytes.len() != len || bytes[0] != ROW_VERSION {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!("{what} row of {} bytes, version {:?}: expected {len} bytes, version {ROW_VERSION}", bytes.len(), bytes.first()),
        ));
    }
    Ok(())
}

pub(crate) fn encode_wallet(w: &WalletImage, row: &mut [u8; WALLET_ROW]) {
    let mut p = Put { buf: row, at: 0 };
    p.u8(ROW_VERSION);
    p.u64(w.gold);
    w.items.iter().for_each(|&i| p.u64(i));
    p.u64(w.escrow.gold);
    p.u8(w.escrow.item_kind);
    p.u64(w.escrow.item_count);
    p.u64(w.highest_transaction);
    p.u64(w.last_grant);
    debug_assert_eq!(p.at, WALLET_ROW);
}

pub(crate) fn decode_wallet(account: u64, bytes: &[u8]) -> io::Result<WalletImage> {
    check_row("wallet", bytes, WALLET_ROW)?;
    let mut g = Get { buf: bytes, at: 1 };
    let gold = g.u64();
    let mut items = [0u64; ITEM_KINDS];
    items.iter_mut().for_each(|i| *i = g.u64());
    let escrow = StackImage { gold: g.u64(), item_kind: g.u8(), item_count: g.u64() };
    if usize::from(escrow.item_kind) >= ITEM_KINDS {
        return Err(io::Error::new(io::ErrorKind::InvalidData, format!("account {account}: escrow of unknown item kind")));
    }
    Ok(WalletImage { account, gold, items, escrow, highest_transaction: g.u64(), last_grant: g.u64(), decision: DecisionImage::default() })
}

pub(crate) fn encode_decision(d: &DecisionImage, row: &mut [u8; DECISION_ROW]) {
    let mut p = Put { buf: row, at: 0 };
    p.u8(ROW_VERSION);
    p.u64(d.transaction_id);
    p.u64(d.gold_after);
    p.u8(d.status);
}

pub(crate) fn decode_decision(bytes: &[u8]) -> io::Result<DecisionImage> {
    check_row("decision", bytes, DECISION_ROW)?;
    let mut g = Get { buf: bytes, at: 1 };
    Ok(DecisionImage { transaction_id: g.u64(), gold_after: g.u64(), status: g.u8() })
}

fn encode_books(b: &Books, row: &mut [u8; BOOKS_ROW]) {
    let mut p = Put { buf: row, at: 0 };
    p.u8(ROW_VERSION);
    for (gold, items) in
        [(b.minted_gold, &b.minted_items), (b.loot_gold, &b.loot_items), (b.grant_gold, &b.grant_items), (b.sunk_gold, &b.sunk_items)]
    {
        p.u128(gold);
        items.iter().for_each(|&i| p.u128(i));
    }
    p.u64(b.entries);
    debug_assert_eq!(p.at, BOOKS_ROW);
}

fn decode_books(bytes: &[u8]) -> io::Result<Books> {
    check_row("books", bytes, BOOKS_ROW)?;
    let mut g = Get { buf: bytes, at: 1 };
    let mut b = Books::default();
    for (gold, items) in [
        (&mut b.minted_gold, &mut b.minted_items),
        (&mut b.loot_gold, &mut b.loot_items),
        (&mut b.grant_gold, &mut b.grant_items),
        (&mut b.sunk_gold, &mut b.sunk_items),
    ] {
        *gold = g.u128();
        items.iter_mut().for_each(|i| *i = g.u128());
    }
    b.entries = g.u64();
    Ok(b)
}

const _: () = assert!(DEDUP_WINDOW <= u8::MAX as usize, "a window slot fits the decision key's u8");

#[cfg(all(test, not(mmo_loom)))]
pub(crate) mod tests {
    use super::*;

    fn image(account: u64, gold: u64, tx: u64) -> WalletImage {
        let mut items = [0; ITEM_KINDS];
        items[3] = 7;
        WalletImage {
            account,
            gold,
            items,
            escrow: StackImage { gold: 5, item_kind: 2, item_count: 1 },
            highest_transaction: tx,
            last_grant: 4,
            decision: DecisionImage { transaction_id: tx, gold_after: gold, status: 0 },
        }
    }

    #[test]
    fn a_commit_reads_back_after_reopening() {
        let dir = tempdir();
        let mut books = Books::default();
        {
            let mut store = RedbStore::open(&dir).unwrap();
            let e1 = LedgerEntry { seq: 0, wallets: [image(9, 100, 1), image(10, 50, 0)], wallet_count: 2, ..Default::default() };
            let e2 = LedgerEntry { seq: 1, wallets: [image(9, 90, 33), WalletImage::default()], wallet_count: 1, ..Default::default() };
            books.add(&e1);
            books.add(&e2);
            books.minted_gold = 140;
            store.commit(&[e1, e2], &books).unwrap();
        }
        let mut store = RedbStore::open(&dir).unwrap();
        let r = store.load().unwrap();
        assert!(r.repairs.is_empty(), "{:?}", r.repairs);
        assert_eq!(r.books, books);
        let mut wallets = r.wallets.clone();
        wallets.sort_by_key(|w| w.image.account);
        assert_eq!(wallets.len(), 2);
        assert_eq!(wallets[0].image, WalletImage { decision: DecisionImage::default(), ..image(9, 90, 33) });
        // Slot 1 holds transaction 1 and slot 1 again holds 33 (33 % 32 == 1): the later wins.
        assert_eq!(wallets[0].decisions[1].transaction_id, 33);
        assert_eq!(wallets[1].image.gold, 50);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_row_of_another_layout_is_refused_not_misread() {
        assert!(decode_wallet(1, &[0u8; WALLET_ROW]).is_err());
        assert!(decode_decision(&[ROW_VERSION; 3]).is_err());
        assert!(decode_books(&[]).is_err());
        let mut row = [0u8; WALLET_ROW];
        encode_wallet(&image(1, 1, 1), &mut row);
        row[WALLET_ROW - 8 - 8 - 8 - 1] = 200; // the escrow's item kind
        assert!(decode_wallet(1, &row).is_err());
    }

    pub(crate) fn tempdir() -> PathBuf {
        let mut bytes = [0u8; 8];
        getrandom::fill(&mut bytes).unwrap();
        let dir = std::env::temp_dir().join(format!("mmo-store-test-{}", u64::from_le_bytes(bytes)));
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }
}
