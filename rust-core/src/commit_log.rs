//! The economy's commit log: an append-only file of ledger entries in front of the redb store.
//!
//! A group commit straight to redb costs a transaction: copy-on-write B-tree pages, a commit
//! slot, an fsync, about 140 µs of CPU for a one-entry group on the development machine
//! (`cargo bench -p mmo-benches --bench economy_store`, part 3), where appending the same
//! bytes to a preallocated file and `fdatasync`ing costs about 20 µs. Under a raid the
//! economy is a trickle of one-entry groups, so that difference was most of the store's CPU.
//! [`LoggedStore`] makes a group durable with one record appended to the active log segment
//! and one `fdatasync`; redb becomes the checkpoint the log is folded into, one segment at a
//! time, on its own thread.
//!
//! ## Files (in the data directory)
//!
//! - `economy.redb`: the checkpoint ([`crate::store::RedbStore`]): every wallet, decision and
//!   the books as of entry `books.entries`, the ledger's global index.
//! - `economy-<n>.log` (`n` in 16 digits): segments of [`SEGMENT_BYTES`], zero-filled and
//!   `fsync`ed (file and directory) before the first record is written into them, so an
//!   `fdatasync` after an append flushes data only, never the file's size or extents. At most
//!   three exist: the one being checkpointed, the active one, and either the next one
//!   (prepared for the switch) or, once the committer has moved on to it, a full one waiting
//!   for its checkpoint.
//!
//! ## A record
//!
//! `magic u32 | body_len u32 | crc32 u32 | count u32 | first_index u64 | body`, little-endian;
//! the CRC-32 covers `count`, `first_index` and the body; the body is `count` entries, each
//! `seq u64 | wallet_count u8 | wallet_count x (account u64 | wallet row | decision row) |
//! minted | mint cause u8 | sunk` with the rows of [`crate::store`]. `first_index` is the
//! global index (`books.entries` before the group) of its first entry; sequence numbers start
//! at 0 in every run of the server, the index does not.
//!
//! ## Checkpoints
//!
//! When a record does not fit in the rest of the active segment, the committer switches to
//! the next segment and hands the checkpoint thread what the full one held, collapsed (the
//! last image of each wallet, the last decision of each window slot, the books after it:
//! [`StateDelta`]). That thread prepares the segment after next, then writes the full one to
//! redb in one transaction and deletes it. Preparing first gives the committer a segment to
//! go on with during the checkpoint: it waits only if it fills two segments while one
//! checkpoint runs (then the journals fill and new operations are refused `StorageBusy`: a
//! bound, not a queue).
//!
//! ## Recovery
//!
//! Open redb (the checkpoint, as of index `E`), then read the segments in order and apply
//! every entry with index `E` or more: each entry is wallet images (state, not deltas), so
//! applying one twice would be harmless, and the books are rebuilt with [`Books::add`], as the
//! committer built them. A record stops the reading of its segment where its header is all
//! zeros (the unwritten rest) or where it does not check out (a torn write of a commit that
//! was never acknowledged: reported as a repair and dropped). A record that checks out after
//! a damaged one, or a gap in the indexes, is damage to acknowledged entries: the store is
//! refused, not half-loaded. What was read is then checkpointed to redb, the old segments are
//! deleted and two fresh ones made, so a restart costs at most three segments of reading.

use crate::config::ITEM_KINDS;
use crate::ledger::{
    Books, DEDUP_WINDOW, DecisionImage, EconomyStore, LedgerEntry, MintCause, Recovered, StackImage, StoredWallet, WalletImage,
};
use crate::store::{DECISION_ROW, RedbStore, WALLET_ROW, decode_decision, decode_wallet, encode_decision, encode_wallet};
use rustc_hash::FxHashMap;
use std::fs::{File, OpenOptions};
use std::io;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, RecvTimeoutError, SyncSender};
use std::thread::JoinHandle;
use std::time::Duration;

/// A segment's size by default. Each full segment is one redb checkpoint, whose cost grows
/// with the rows the segment touched (up to 33 per account: the wallet and its window): with
/// 8 MiB segments the checkpoint every few seconds at 5,000 economy operations a second wrote
/// tens of thousands of rows at once and took the economy round trip p99.9 from about 6.5 ms
/// to 10-12 ms on the development machine (the committer's fsyncs queued behind it); 1 MiB
/// (a checkpoint about every half second there) and 64 KiB measured the same as no
/// checkpoint at all. The largest possible group ([`RECORD_BYTES_MAX`], every journal full) is
/// bigger; it gets a segment of its own, which grows for it.
pub const SEGMENT_BYTES: u64 = 1 << 20;
/// The smallest segment accepted (smaller ones switch, and checkpoint, more often; a group
/// larger than a segment is still written whole, into a segment of its own that grows).
pub const SEGMENT_BYTES_MIN: u64 = 64 << 10;
/// The largest segment accepted (a restart reads up to three).
pub const SEGMENT_BYTES_MAX: u64 = 1 << 30;
/// "MML1": the record layout's version is in the magic; another layout is not misread.
const MAGIC: u32 = u32::from_le_bytes(*b"MML1");
const HEADER_BYTES: usize = 4 + 4 + 4 + 4 + 8;
const STACK_BYTES: usize = 8 + 1 + 8;
const WALLET_BYTES: usize = 8 + WALLET_ROW + DECISION_ROW;
/// The largest entry: two wallets.
const ENTRY_BYTES_MAX: usize = 8 + 1 + 2 * WALLET_BYTES + STACK_BYTES + 1 + STACK_BYTES;
/// The largest record: every journal full, in one group.
pub const RECORD_BYTES_MAX: usize =
    HEADER_BYTES + crate::economy::ECONOMY_SHARDS * crate::ledger::JOURNAL_ENTRIES_PER_SHARD * ENTRY_BYTES_MAX;
const _: () = assert!(SEGMENT_BYTES_MIN <= SEGMENT_BYTES && SEGMENT_BYTES <= SEGMENT_BYTES_MAX);
/// How long a switch of segments waits for the checkpoint thread before the commit fails (and
/// the committer, which retries failed commits, tries again).
const SPARE_WAIT: Duration = Duration::from_secs(1);
/// Zeros written per call while preparing a segment: a static (zero pages, never resident
/// as the heap would keep them), not an allocation per segment.
static ZEROS: [u8; 64 << 10] = [0; 64 << 10];

/// What a stretch of the log changed, collapsed: the last image of each wallet (its
/// decision left out), the last decision in each window slot, the books after it.
#[derive(Clone, Debug, Default)]
pub struct StateDelta {
    /// Account -> the wallet as the last entry left it.
    pub wallets: FxHashMap<u64, WalletImage>,
    /// (Account, window slot) -> the last decision recorded there.
    pub decisions: FxHashMap<(u64, u8), DecisionImage>,
    /// The books after the stretch.
    pub books: Books,
}

impl StateDelta {
    fn apply(&mut self, e: &LedgerEntry) {
        for w in e.wallets() {
            self.wallets.insert(w.account, WalletImage { decision: DecisionImage::default(), ..*w });
            if w.decision.transaction_id != 0 {
                self.decisions.insert((w.account, w.decision.window_slot()), w.decision);
            }
        }
    }

    /// Folds it into `redb` (one transaction, one fsync).
    fn write_to(&self, redb: &mut RedbStore) -> io::Result<()> {
        redb.write_state(self.wallets.values(), self.decisions.iter().map(|(&(account, _), d)| (account, d)), &self.books)
    }

    fn is_empty(&self) -> bool {
        self.wallets.is_empty() && self.decisions.is_empty()
    }
}

fn invalid(message: String) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, message)
}

/// The segment file named `n`.
fn segment_path(dir: &Path, n: u64) -> PathBuf {
    dir.join(format!("economy-{n:016}.log"))
}

/// The number of a segment's file name, if it is one.
fn segment_number(name: &str) -> Option<u64> {
    let digits = name.strip_prefix("economy-")?.strip_suffix(".log")?;
    (digits.len() == 16 && digits.bytes().all(|b| b.is_ascii_digit())).then(|| digits.parse().ok()).flatten()
}

fn sync_dir(dir: &Path) -> io::Result<()> {
    File::open(dir)?.sync_all()
}

/// A segment being written.
struct Segment {
    number: u64,
    file: File,
    /// Bytes of records written (and durable) so far.
    written: u64,
}

/// Creates segment `n`: zero-filled to `bytes`, file and directory synced, closed again (the
/// committer opens it: a file handle never crosses threads).
fn prepare_segment(dir: &Path, n: u64, bytes: u64) -> io::Result<u64> {
    let path = segment_path(dir, n);
    let file = OpenOptions::new().create(true).truncate(true).read(true).write(true).open(&path)?;
    let mut at = 0u64;
    while at < bytes {
        let n = (bytes - at).min(ZEROS.len() as u64) as usize;
        file.write_all_at(&ZEROS[..n], at)?;
        at += n as u64;
    }
    file.sync_all()?;
    sync_dir(dir)?;
    Ok(n)
}

/// Opens prepared segment `n` to append records to.
fn open_segment(dir: &Path, n: u64) -> io::Result<Segment> {
    Ok(Segment { number: n, file: OpenOptions::new().write(true).open(segment_path(dir, n))?, written: 0 })
}

/// A segment handed to the checkpoint thread: what it held, to fold into redb.
struct Checkpoint {
    segment: u64,
    delta: StateDelta,
}

/// The checkpoint thread's end of things, held by the store.
struct Checkpointer {
    /// Full segments to fold into redb (room for one: the committer sends the next only after
    /// it received the segment the checkpoint thread prepared on taking the previous one).
    to_fold: Option<SyncSender<Checkpoint>>,
    /// Segments prepared for the next switch, one per checkpoint.
    prepared: Receiver<u64>,
    /// Set by the store's drop: a failing step is not retried any more (what it left undone
    /// stays in the log's segments, which the next open reads).
    stop: Arc<AtomicBool>,
    handle: Option<JoinHandle<()>>,
}

/// The economy's store: an append-only commit log with redb as its checkpoint (see the module
/// docs). Open with [`LoggedStore::open`], then [`EconomyStore::load`] once before any commit.
pub struct LoggedStore {
    dir: PathBuf,
    /// Bytes a segment is prepared with.
    segment_bytes: u64,
    /// redb, until `load` hands it to the checkpoint thread.
    redb: Option<RedbStore>,
    /// The segment records are appended to (none before `load`).
    active: Option<Segment>,
    /// A prepared segment received but not yet opened (its open failed; the retry opens it).
    next: Option<u64>,
    /// What the active segment holds, collapsed, for its checkpoint.
    delta: StateDelta,
    /// The global index of the next entry (`books.entries` after the last commit).
    next_index: u64,
    /// The record being written (reused; the committer's thread only).
    record: Vec<u8>,
    checkpointer: Option<Checkpointer>,
}

impl LoggedStore {
    /// Opens (or creates) the store in `dir`: `economy.redb` and any log segments, with
    /// segments of [`SEGMENT_BYTES`].
    pub fn open(dir: &Path) -> io::Result<Self> {
        Self::open_with(dir, SEGMENT_BYTES)
    }

    /// [`LoggedStore::open`] with segments of `segment_bytes`
    /// ([`SEGMENT_BYTES_MIN`]..=[`SEGMENT_BYTES_MAX`]).
    pub fn open_with(dir: &Path, segment_bytes: u64) -> io::Result<Self> {
        if !(SEGMENT_BYTES_MIN..=SEGMENT_BYTES_MAX).contains(&segment_bytes) {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("a log segment of {segment_bytes} bytes: {SEGMENT_BYTES_MIN}..={SEGMENT_BYTES_MAX} allowed"),
            ));
        }
        let redb = RedbStore::open(dir)?;
        Ok(Self {
            dir: dir.to_path_buf(),
            segment_bytes,
            redb: Some(redb),
            active: None,
            next: None,
            delta: StateDelta::default(),
            next_index: 0,
            record: Vec::new(),
            checkpointer: None,
        })
    }

    /// The log segments in `dir`, by number.
    fn segments(&self) -> io::Result<Vec<u64>> {
        let mut numbers = Vec::new();
        for entry in std::fs::read_dir(&self.dir)? {
            if let Some(n) = entry?.file_name().to_str().and_then(segment_number) {
                numbers.push(n);
            }
        }
        numbers.sort_unstable();
        Ok(numbers)
    }

    fn load_unstarted(&mut self) -> io::Result<Recovered> {
        let mut redb = self.redb.take().ok_or_else(|| io::Error::other("the store was loaded already"))?;
        let mut recovered = redb.load()?;
        let segments = self.segments()?;
        let mut replay = Replay::new(&mut recovered);
        for &n in &segments {
            let path = segment_path(&self.dir, n);
            let bytes = std::fs::read(&path)?;
            replay.segment(&path, &bytes)?;
        }
        let delta = replay.finish();
        if !delta.is_empty() {
            delta.write_to(&mut redb)?;
        }
        for &n in &segments {
            std::fs::remove_file(segment_path(&self.dir, n))?;
        }
        let first = segments.last().map_or(0, |n| n + 1);
        self.active = Some(open_segment(&self.dir, prepare_segment(&self.dir, first, self.segment_bytes)?)?);
        self.next_index = recovered.books.entries;
        self.delta.books = recovered.books;
        self.checkpointer = Some(start_checkpointer(self.dir.clone(), redb, first + 1, self.segment_bytes)?);
        Ok(recovered)
    }

    fn commit_loaded(&mut self, entries: &[LedgerEntry], books: &Books) -> io::Result<()> {
        if self.active.is_none() {
            return Err(io::Error::other("the store must be loaded before a commit"));
        }
        let first_index = books.entries.checked_sub(entries.len() as u64).filter(|&i| i == self.next_index).ok_or_else(|| {
            invalid(format!(
                "a group of {} entries ending at index {} does not follow index {}",
                entries.len(),
                books.entries,
                self.next_index
            ))
        })?;
        encode_record(&mut self.record, first_index, entries);
        assert!(self.record.len() <= RECORD_BYTES_MAX, "a group is at most every journal full");
        let active = self.active.as_ref().expect("checked above");
        // A record larger than a whole segment (only with small segments) is written into a
        // fresh one, which grows past its prepared size for it.
        if active.written > 0 && active.written + self.record.len() as u64 > self.segment_bytes {
            self.switch_segment()?;
        }
        let active = self.active.as_mut().expect("a segment is active once loaded");
        active.file.write_all_at(&self.record, active.written)?;
        active.file.sync_data()?;
        // Durable: only now does the store's own state move (a failed commit is retried with
        // the same group, at the same place).
        active.written += self.record.len() as u64;
        entries.iter().for_each(|e| self.delta.apply(e));
        self.delta.books = *books;
        self.next_index = books.entries;
        Ok(())
    }

    /// Makes the prepared segment active and hands the full one to the checkpoint thread.
    fn switch_segment(&mut self) -> io::Result<()> {
        let checkpointer = self.checkpointer.as_mut().expect("started by load");
        let number = match self.next.take() {
            Some(number) => number,
            None => match checkpointer.prepared.recv_timeout(SPARE_WAIT) {
                Ok(number) => number,
                Err(RecvTimeoutError::Timeout) => {
                    return Err(io::Error::other("the next log segment is not prepared yet (its checkpoint runs)"));
                }
                Err(RecvTimeoutError::Disconnected) => return Err(io::Error::other("the checkpoint thread stopped")),
            },
        };
        let next = open_segment(&self.dir, number).inspect_err(|_| self.next = Some(number))?;
        let full = std::mem::replace(self.active.as_mut().expect("started by load"), next);
        let books = self.delta.books;
        let delta = std::mem::replace(&mut self.delta, StateDelta { books, ..StateDelta::default() });
        let sender = checkpointer.to_fold.as_ref().expect("open until drop");
        // The channel is empty: the segment just received was prepared after the checkpoint
        // thread took the previous full segment off it.
        sender.send(Checkpoint { segment: full.number, delta }).map_err(|_| io::Error::other("the checkpoint thread stopped"))
    }
}

impl EconomyStore for LoggedStore {
    fn commit(&mut self, entries: &[LedgerEntry], books: &Books) -> io::Result<()> {
        self.commit_loaded(entries, books)
    }

    fn load(&mut self) -> io::Result<Recovered> {
        self.load_unstarted()
    }
}

impl Drop for LoggedStore {
    /// Lets the checkpoint thread finish the checkpoint it has (the active segment stays; the
    /// next open reads it).
    fn drop(&mut self) {
        if let Some(mut c) = self.checkpointer.take() {
            c.stop.store(true, Ordering::Release);
            drop(c.to_fold.take());
            if let Some(handle) = c.handle.take() {
                let _ = handle.join();
            }
        }
    }
}

/// Starts the checkpoint thread: it prepares segment `next` at once, then for each full
/// segment `n` it receives prepares segment `n + 2`, folds `n` into redb and deletes it.
fn start_checkpointer(dir: PathBuf, mut redb: RedbStore, next: u64, segment_bytes: u64) -> io::Result<Checkpointer> {
    let (to_fold, folds) = std::sync::mpsc::sync_channel::<Checkpoint>(1);
    let (prepared_tx, prepared) = std::sync::mpsc::sync_channel::<u64>(1);
    let stop = Arc::new(AtomicBool::new(false));
    let stopping = Arc::clone(&stop);
    let handle = std::thread::Builder::new().name("mmo-economy-checkpoint".into()).spawn(move || {
        let prepare = |n: u64| retried(&format!("preparing log segment {n}"), &stopping, || prepare_segment(&dir, n, segment_bytes));
        let Some(first) = prepare(next) else { return };
        if prepared_tx.send(first).is_err() {
            return;
        }
        // Ends when the store is dropped (the sender with it).
        for Checkpoint { segment, delta } in folds {
            // Segment n + 2 first, so the committer has somewhere to go while n is folded: it
            // waits at a switch only when two segments fill during one checkpoint. Segments on
            // disk meanwhile: n (folding), n + 1 (active), n + 2; n - 1 was deleted before n
            // was received, so never more than three.
            let Some(next) = prepare(segment + 2) else { return };
            if prepared_tx.send(next).is_err() {
                return;
            }
            if retried(&format!("the checkpoint of log segment {segment} (the segment stays)"), &stopping, || delta.write_to(&mut redb))
                .is_none()
            {
                return;
            }
            if let Err(e) = std::fs::remove_file(segment_path(&dir, segment)) {
                // Harmless: a later open reads it and skips what the checkpoint has.
                eprintln!("economy store: could not delete checkpointed log segment {segment}: {e}");
            }
        }
    })?;
    Ok(Checkpointer { to_fold: Some(to_fold), prepared, stop, handle: Some(handle) })
}

/// Runs `step` until it succeeds, pausing up to 100 ms between attempts and saying so now and
/// then (the committer meanwhile waits for the segment, then refuses new operations
/// `StorageBusy`: nothing is lost, nothing is told); `None` once `stop` is set and it failed.
fn retried<T>(what: &str, stop: &AtomicBool, mut step: impl FnMut() -> io::Result<T>) -> Option<T> {
    let mut attempt = 0u32;
    loop {
        match step() {
            Ok(done) => return Some(done),
            Err(_) if stop.load(Ordering::Acquire) => return None,
            Err(e) => {
                attempt += 1;
                if attempt.is_power_of_two() {
                    eprintln!("economy store: {what} failed ({attempt} so far; retrying): {e}");
                }
                std::thread::sleep(Duration::from_millis(u64::from(attempt.min(100))));
            }
        }
    }
}

/// Little-endian writer appending to a record.
fn put_u64(out: &mut Vec<u8>, v: u64) {
    out.extend_from_slice(&v.to_le_bytes());
}

fn put_stack(out: &mut Vec<u8>, s: &StackImage) {
    put_u64(out, s.gold);
    out.push(s.item_kind);
    put_u64(out, s.item_count);
}

/// Encodes one group as a record into `out` (cleared first).
fn encode_record(out: &mut Vec<u8>, first_index: u64, entries: &[LedgerEntry]) {
    out.clear();
    out.extend_from_slice(&MAGIC.to_le_bytes());
    out.extend_from_slice(&[0u8; 8]); // body_len, crc: below
    out.extend_from_slice(&(entries.len() as u32).to_le_bytes());
    put_u64(out, first_index);
    let mut wallet_row = [0u8; WALLET_ROW];
    let mut decision_row = [0u8; DECISION_ROW];
    for e in entries {
        put_u64(out, e.seq);
        let wallets = e.wallets();
        out.push(wallets.len() as u8);
        for w in wallets {
            put_u64(out, w.account);
            encode_wallet(w, &mut wallet_row);
            out.extend_from_slice(&wallet_row);
            encode_decision(&w.decision, &mut decision_row);
            out.extend_from_slice(&decision_row);
        }
        put_stack(out, &e.minted);
        out.push(e.mint_cause as u8);
        put_stack(out, &e.sunk);
    }
    let body_len = (out.len() - HEADER_BYTES) as u32;
    let crc = crc32fast::hash(&out[12..]);
    out[4..8].copy_from_slice(&body_len.to_le_bytes());
    out[8..12].copy_from_slice(&crc.to_le_bytes());
}

/// Little-endian reader over a record's checked body; `None` when it runs out.
struct Reader<'a> {
    bytes: &'a [u8],
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        let (head, rest) = self.bytes.split_at_checked(n)?;
        self.bytes = rest;
        Some(head)
    }
    fn u8(&mut self) -> Option<u8> {
        Some(self.take(1)?[0])
    }
    fn u64(&mut self) -> Option<u64> {
        Some(u64::from_le_bytes(self.take(8)?.try_into().ok()?))
    }
    fn stack(&mut self) -> Option<StackImage> {
        Some(StackImage { gold: self.u64()?, item_kind: self.u8()?, item_count: self.u64()? })
    }
}

/// One entry from a record's body.
fn decode_entry(r: &mut Reader<'_>) -> io::Result<LedgerEntry> {
    let short = || invalid("a log record ends inside an entry".into());
    let mut e = LedgerEntry { seq: r.u64().ok_or_else(short)?, wallet_count: r.u8().ok_or_else(short)?, ..LedgerEntry::default() };
    if !(1..=2).contains(&e.wallet_count) {
        return Err(invalid(format!("a log entry touching {} wallets", e.wallet_count)));
    }
    for w in e.wallets.iter_mut().take(usize::from(e.wallet_count)) {
        let account = r.u64().ok_or_else(short)?;
        *w = decode_wallet(account, r.take(WALLET_ROW).ok_or_else(short)?)?;
        w.decision = decode_decision(r.take(DECISION_ROW).ok_or_else(short)?)?;
        if account == 0 {
            return Err(invalid("a log entry of account 0".into()));
        }
    }
    e.minted = r.stack().ok_or_else(short)?;
    e.mint_cause = match r.u8().ok_or_else(short)? {
        0 => MintCause::None,
        1 => MintCause::Starting,
        2 => MintCause::Loot,
        3 => MintCause::Grant,
        other => return Err(invalid(format!("a log entry minting for unknown cause {other}"))),
    };
    e.sunk = r.stack().ok_or_else(short)?;
    if [e.minted, e.sunk].iter().any(|s| usize::from(s.item_kind) >= ITEM_KINDS) {
        return Err(invalid("a log entry of an unknown item kind".into()));
    }
    Ok(e)
}

/// A record whose header and CRC check out.
struct CheckedRecord<'a> {
    count: usize,
    first_index: u64,
    body: &'a [u8],
}

/// The record at `at` in `bytes`, if its magic, length and CRC check out.
fn checked_record(bytes: &[u8], at: usize) -> Option<CheckedRecord<'_>> {
    let header = bytes.get(at..at + HEADER_BYTES)?;
    let word = |i: usize| u32::from_le_bytes(header[i..i + 4].try_into().expect("4 bytes"));
    if word(0) != MAGIC {
        return None;
    }
    let body = bytes.get(at + HEADER_BYTES..)?.get(..word(4) as usize)?;
    let mut crc = crc32fast::Hasher::new();
    crc.update(&header[12..]);
    crc.update(body);
    (crc.finalize() == word(8)).then(|| CheckedRecord {
        count: word(12) as usize,
        first_index: u64::from_le_bytes(header[16..24].try_into().expect("8 bytes")),
        body,
    })
}

/// Applies the log's segments, in order, over what redb held: the books entry by entry (their
/// count is the index the next record must follow), the wallets and decisions collapsed and
/// merged at the end.
struct Replay<'a> {
    recovered: &'a mut Recovered,
    /// What was applied, for the merge and the checkpoint after the replay.
    delta: StateDelta,
    /// Where a damaged record was found, if one was: nothing valid may follow it.
    damaged_at: Option<String>,
}

impl<'a> Replay<'a> {
    fn new(recovered: &'a mut Recovered) -> Self {
        let delta = StateDelta { books: recovered.books, ..StateDelta::default() };
        Self { recovered, delta, damaged_at: None }
    }

    /// Reads one segment's records (bounded by its length: every record moves forward).
    fn segment(&mut self, path: &Path, bytes: &[u8]) -> io::Result<()> {
        let mut at = 0usize;
        while let Some(header) = bytes.get(at..at + HEADER_BYTES) {
            if header.iter().all(|&b| b == 0) {
                return Ok(()); // the unwritten rest of the segment
            }
            let Some(record) = checked_record(bytes, at) else {
                // A torn record hides where the next one starts: look for any record that
                // checks out after it, which would be one acknowledged after the damage.
                let later = (at + 1..bytes.len().saturating_sub(HEADER_BYTES))
                    .find(|&p| bytes[p..p + 4] == MAGIC.to_le_bytes() && checked_record(bytes, p).is_some());
                if let Some(p) = later {
                    return Err(invalid(format!(
                        "the economy log {} is damaged at byte {at}, before a record that was acknowledged (at byte {p}); refusing to start",
                        path.display()
                    )));
                }
                if self.damaged_at.is_none() {
                    self.damaged_at = Some(format!("{} at byte {at}", path.display()));
                    self.recovered.repairs.push(format!(
                        "{}: the record at byte {at} is torn (a commit interrupted before it was acknowledged); dropped",
                        path.display()
                    ));
                }
                return Ok(());
            };
            if let Some(where_) = &self.damaged_at {
                return Err(invalid(format!(
                    "the economy log is damaged at {where_}, before records that were acknowledged ({} at byte {at}); refusing to start",
                    path.display()
                )));
            }
            self.record(record.first_index, record.count, record.body)
                .map_err(|e| invalid(format!("{} at byte {at}: {e}", path.display())))?;
            at += HEADER_BYTES + record.body.len();
        }
        Ok(())
    }

    fn record(&mut self, first_index: u64, count: usize, body: &[u8]) -> io::Result<()> {
        let applied_through = self.recovered.books.entries;
        if first_index > applied_through {
            return Err(invalid(format!("entries {applied_through}..{first_index} are missing from the log")));
        }
        let mut r = Reader { bytes: body };
        for i in 0..count as u64 {
            let e = decode_entry(&mut r)?;
            if first_index + i < applied_through {
                continue; // in the checkpoint already
            }
            self.apply(&e);
        }
        if !r.bytes.is_empty() {
            return Err(invalid(format!("{} bytes after the record's {count} entries", r.bytes.len())));
        }
        Ok(())
    }

    fn apply(&mut self, e: &LedgerEntry) {
        self.recovered.books.add(e);
        self.delta.apply(e);
    }

    /// Merges what was applied into the recovered wallets; returns it for the checkpoint.
    fn finish(mut self) -> StateDelta {
        let wallets = &mut self.recovered.wallets;
        let mut by_account: FxHashMap<u64, usize> = wallets.iter().enumerate().map(|(i, w)| (w.image.account, i)).collect();
        for (&account, image) in &self.delta.wallets {
            let i = *by_account.entry(account).or_insert_with(|| {
                wallets.push(StoredWallet { image: *image, decisions: [DecisionImage::default(); DEDUP_WINDOW] });
                wallets.len() - 1
            });
            wallets[i].image = *image;
        }
        for (&(account, slot), d) in &self.delta.decisions {
            // A decision's wallet changed in the same entry, so it has its place by now.
            wallets[by_account[&account]].decisions[usize::from(slot)] = *d;
        }
        self.delta.books = self.recovered.books;
        self.delta
    }
}

#[cfg(all(test, not(mmo_loom)))]
mod tests {
    use super::*;
    use crate::store::tests::tempdir;

    fn entry(seq: u64, account: u64, other: u64, gold: u64, tx: u64) -> LedgerEntry {
        let image = |account, gold| WalletImage {
            account,
            gold,
            highest_transaction: tx,
            decision: DecisionImage { transaction_id: tx, gold_after: gold, status: 0 },
            ..WalletImage::default()
        };
        LedgerEntry {
            seq,
            wallets: [image(account, gold), image(other, gold + 1)],
            wallet_count: if other == 0 { 1 } else { 2 },
            minted: StackImage { gold: 3, item_kind: 1, item_count: 2 },
            mint_cause: MintCause::Loot,
            sunk: StackImage { gold: 1, ..StackImage::default() },
        }
    }

    /// Group `g` of `size` entries over 50 accounts, varied by `salt`.
    fn group(g: u64, size: u64, salt: u64) -> Vec<LedgerEntry> {
        (0..size)
            .map(|i| entry(g * size + i, 1 + (g * 7 + i + salt) % 50, 1 + (g + i * 3) % 50, g * 10 + i + salt, g * size + i + 1))
            .collect()
    }

    /// Commits `groups` groups of `size` entries, adding them to `books` and `expected`.
    fn write(store: &mut LoggedStore, books: &mut Books, expected: &mut StateDelta, groups: u64, size: u64, salt: u64) {
        for g in 0..groups {
            let group = group(g, size, salt);
            for e in &group {
                books.add(e);
                expected.apply(e);
            }
            store.commit(&group, books).unwrap();
        }
    }

    /// Every wallet and window slot `r` holds is what `expected` says, and no other.
    fn assert_holds(r: &Recovered, expected: &StateDelta, books: &Books) {
        assert_eq!(r.books, *books);
        assert_eq!(r.wallets.len(), expected.wallets.len());
        for w in &r.wallets {
            assert_eq!(Some(&w.image), expected.wallets.get(&w.image.account));
            for (slot, d) in w.decisions.iter().enumerate() {
                let want = expected.decisions.get(&(w.image.account, slot as u8)).copied().unwrap_or_default();
                assert_eq!(*d, want, "account {} slot {slot}", w.image.account);
            }
        }
    }

    #[test]
    fn what_was_committed_reads_back_across_restarts_and_checkpoints() {
        let dir = tempdir();
        let mut books = Books::default();
        let mut expected = StateDelta::default();
        for run in 0..3u64 {
            // Small segments: each run switches and checkpoints dozens of times while it commits.
            let mut store = LoggedStore::open_with(&dir, 256 << 10).unwrap();
            let r = store.load().unwrap();
            assert_holds(&r, &expected, &books);
            assert!(r.repairs.is_empty());
            write(&mut store, &mut books, &mut expected, 700, 64, run);
        }
        let r = LoggedStore::open(&dir).unwrap().load().unwrap();
        assert_holds(&r, &expected, &books);
        let logs = std::fs::read_dir(&dir)
            .unwrap()
            .filter(|e| segment_number(e.as_ref().unwrap().file_name().to_str().unwrap()).is_some())
            .count();
        assert!(logs <= 3, "{logs} segments on disk");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// A store in a fresh directory that committed `groups` groups of `size`, closed; and the
    /// segment it wrote them into.
    fn a_written_store(groups: u64, size: u64) -> (PathBuf, PathBuf) {
        let dir = tempdir();
        {
            let mut store = LoggedStore::open(&dir).unwrap();
            store.load().unwrap();
            write(&mut store, &mut Books::default(), &mut StateDelta::default(), groups, size, 0);
        }
        let path = written_segment(&dir);
        (dir, path)
    }

    fn written_segment(dir: &Path) -> PathBuf {
        let mut numbers: Vec<u64> =
            std::fs::read_dir(dir).unwrap().filter_map(|e| segment_number(e.unwrap().file_name().to_str().unwrap())).collect();
        numbers.sort_unstable();
        // The active one is the first of the two fresh segments.
        segment_path(dir, numbers[0])
    }

    #[test]
    fn a_torn_last_record_is_dropped_and_reported_never_half_applied() {
        let dir = tempdir();
        let mut books = Books::default();
        let record_len;
        {
            let mut store = LoggedStore::open(&dir).unwrap();
            store.load().unwrap();
            write(&mut store, &mut books, &mut StateDelta::default(), 10, 3, 0);
            record_len = store.record.len();
        }
        let path = written_segment(&dir);
        let mut bytes = std::fs::read(&path).unwrap();
        // Tear the tenth record halfway.
        let tenth = 9 * record_len;
        bytes[tenth + record_len / 2..tenth + record_len].iter_mut().for_each(|b| *b = 0);
        std::fs::write(&path, &bytes).unwrap();
        let mut store = LoggedStore::open(&dir).unwrap();
        let r = store.load().unwrap();
        assert_eq!(r.books.entries, 27, "nine whole groups of three");
        assert_eq!(r.repairs.len(), 1, "{:?}", r.repairs);
        drop(store);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn damage_before_acknowledged_records_refuses_the_store() {
        let (dir, path) = a_written_store(10, 3);
        let mut bytes = std::fs::read(&path).unwrap();
        bytes[HEADER_BYTES + 5] ^= 0x40; // inside the first record's body
        std::fs::write(&path, &bytes).unwrap();
        let mut store = LoggedStore::open(&dir).unwrap();
        let message = store.load().unwrap_err().to_string();
        assert!(message.contains("refusing"), "{message}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn hostile_segment_bytes_are_an_error_or_a_repair_never_a_panic() {
        let (dir, path) = a_written_store(20, 2);
        let original = std::fs::read(&path).unwrap();
        let mut x = 0x2545_f491_4f6c_dd1du64;
        let mut rand = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        for case in 0..200 {
            let scratch = tempdir();
            std::fs::copy(dir.join(crate::store::STORE_FILE), scratch.join(crate::store::STORE_FILE)).unwrap();
            let mut bytes = original[..4096].to_vec();
            match case % 4 {
                0 => bytes.iter_mut().take(2048).for_each(|b| *b = rand() as u8),
                1 => (0..8).for_each(|_| bytes[rand() as usize % 2048] ^= 1 << (rand() % 8)),
                2 => bytes[4..8].copy_from_slice(&(rand() as u32).to_le_bytes()),
                _ => {
                    // A record that checks out but lies: a crc over a hostile body.
                    let body = (0..(rand() % 600) as usize).map(|_| rand() as u8).collect::<Vec<_>>();
                    let mut r = MAGIC.to_le_bytes().to_vec();
                    r.extend_from_slice(&(body.len() as u32).to_le_bytes());
                    r.extend_from_slice(&[0; 4]);
                    r.extend_from_slice(&((rand() % 4) as u32).to_le_bytes());
                    r.extend_from_slice(&(rand() % 3).to_le_bytes());
                    r.extend_from_slice(&body);
                    let crc = crc32fast::hash(&r[12..]);
                    r[8..12].copy_from_slice(&crc.to_le_bytes());
                    bytes = r;
                }
            }
            std::fs::write(segment_path(&scratch, 0), &bytes).unwrap();
            let mut store = LoggedStore::open(&scratch).unwrap();
            match store.load() {
                Ok(r) => assert!(r.books.entries <= 40),
                Err(e) => assert!(!e.to_string().is_empty()),
            }
            drop(store);
            std::fs::remove_dir_all(&scratch).unwrap();
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_group_larger_than_a_segment_is_written_whole() {
        let dir = tempdir();
        let mut books = Books::default();
        let mut expected = StateDelta::default();
        {
            let mut store = LoggedStore::open_with(&dir, SEGMENT_BYTES_MIN).unwrap();
            store.load().unwrap();
            // 400 two-wallet entries: about 170 KiB, over two segments' worth, twice.
            write(&mut store, &mut books, &mut expected, 2, 400, 0);
            write(&mut store, &mut books, &mut expected, 3, 1, 1);
        }
        let r = LoggedStore::open_with(&dir, SEGMENT_BYTES_MIN).unwrap().load().unwrap();
        assert_holds(&r, &expected, &books);
        assert!(LoggedStore::open_with(&dir, SEGMENT_BYTES_MIN - 1).is_err());
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_group_that_does_not_follow_the_last_one_is_refused() {
        let dir = tempdir();
        let mut store = LoggedStore::open(&dir).unwrap();
        assert!(store.commit(&[entry(0, 1, 0, 1, 1)], &Books { entries: 1, ..Books::default() }).is_err(), "not loaded");
        store.load().unwrap();
        assert!(store.commit(&[entry(0, 1, 0, 1, 1)], &Books { entries: 5, ..Books::default() }).is_err(), "a gap");
        let mut books = Books::default();
        let e = entry(0, 1, 0, 1, 1);
        books.add(&e);
        store.commit(&[e], &books).unwrap();
        drop(store);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
