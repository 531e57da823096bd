//! The committer: one thread that makes the economy's ledger entries durable in groups.
//!
//! Each round it takes a cut (the next ledger number), drains every journaled entry below it
//! ([`crate::economy::Economy::drain_journal`]), commits them and the books after them to the
//! store in one step (one `fdatasync`: an append to the commit log, [`crate::commit_log`]),
//! and only then moves the durable watermark to the
//! cut and calls the caller's `on_durable` (the network layer wakes its workers to send the
//! replies that waited). While a commit runs, new entries gather in the journals: the next
//! round takes them all, so the group grows with the load and the `fsync`s per operation fall
//! (group commit). No economy operation waits for the disk; only its reply does.
//!
//! ## Lingering after an idle spell
//!
//! Under a steady trickle of operations (a raid's loot claims and trades: a few hundred a
//! second, one at a time) every entry would find the committer idle and pay for a whole commit
//! and `fsync` alone, which costs about the same for one entry as for ten. So when the committer is woken from idle, it lets the first entry wait up
//! to [`CommitPolicy::linger`] for others, or until [`CommitPolicy::group_target`] entries wait
//! (the push that reaches it wakes the committer at once). Entries that gathered while a
//! commit ran are committed right after it, without lingering: under load the commits
//! themselves form the groups, and a reply never waits for more than one linger.
//!
//! It is off by default ([`CommitPolicy::default`]): measured with `make commit-linger`, it
//! trades reply latency for committer CPU about one for one, and 1 ms of it already takes the
//! economy round trip p99 at 5,000 operations a second past 5 ms on the development machine.
//! An operator whose economy is a trickle and whose CPU is short turns it on
//! (`server.economy_commit_linger_us`; 3 ms halved the committer's CPU per entry at 500
//! operations a second). Those figures were taken when each group was a redb transaction;
//! the commit log made a commit about four times cheaper in CPU, so lingering buys less now.
//!
//! A failed commit is retried (with a pause that grows to 100 ms) with the same group: the
//! watermark does not move, replies keep waiting, and the journals, once full, refuse new
//! operations `StorageBusy` (a clear, counted answer the client retries) instead of growing.

use crate::economy::Economy;
use crate::ledger::{Books, EconomyStore, JOURNAL_ENTRIES_PER_SHARD, LedgerEntry};
use crate::stats::{Counter, Stats};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// How long the committer sleeps when nothing wakes it (it is woken by the first entry after
/// each commit; this only bounds a lost wake-up).
const IDLE_PARK: Duration = Duration::from_millis(20);
/// Commit attempts after a stop was asked before the committer gives up on a failing store.
const ATTEMPTS_AFTER_STOP: u32 = 3;

/// How the committer forms groups (see the module docs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CommitPolicy {
    /// How long the first entry after an idle spell may wait for others before the committer
    /// commits (zero: at once). Every reply it holds waits up to this much longer.
    pub linger: Duration,
    /// Entries waiting at which the committer stops lingering and commits.
    pub group_target: u64,
    /// The size of the commit log's segments ([`crate::commit_log`]): a segment is folded
    /// into the redb checkpoint each time one fills.
    pub log_segment_bytes: u64,
}

impl CommitPolicy {
    /// Commit each entry as soon as the committer sees it (no lingering).
    pub const AT_ONCE: CommitPolicy =
        CommitPolicy { linger: Duration::ZERO, group_target: 1, log_segment_bytes: crate::commit_log::SEGMENT_BYTES };
    /// Longest linger accepted (a reply waits up to this much longer).
    pub const LINGER_MAX: Duration = Duration::from_millis(100);

    /// A policy lingering `linger_us` microseconds, with the default group target.
    pub fn lingering_us(linger_us: u32) -> Result<Self, String> {
        let linger = Duration::from_micros(u64::from(linger_us));
        if linger > Self::LINGER_MAX {
            return Err(format!("commit linger {linger_us} us is over the {} us allowed", Self::LINGER_MAX.as_micros()));
        }
        Ok(Self { linger, ..Self::default() })
    }

    /// This policy with log segments of `kib` KiB (0: the default,
    /// [`crate::commit_log::SEGMENT_BYTES`]).
    pub fn with_log_segment_kib(self, kib: u32) -> Result<Self, String> {
        use crate::commit_log::{SEGMENT_BYTES, SEGMENT_BYTES_MAX, SEGMENT_BYTES_MIN};
        let bytes = if kib == 0 { SEGMENT_BYTES } else { u64::from(kib) << 10 };
        if !(SEGMENT_BYTES_MIN..=SEGMENT_BYTES_MAX).contains(&bytes) {
            return Err(format!(
                "a commit log segment of {kib} KiB: {}..={} KiB allowed",
                SEGMENT_BYTES_MIN >> 10,
                SEGMENT_BYTES_MAX >> 10
            ));
        }
        Ok(Self { log_segment_bytes: bytes, ..self })
    }
}

impl Default for CommitPolicy {
    /// No linger (see the module docs for why), 16 entries as the target when one is set,
    /// segments of [`crate::commit_log::SEGMENT_BYTES`].
    fn default() -> Self {
        Self { linger: Duration::ZERO, group_target: 16, log_segment_bytes: crate::commit_log::SEGMENT_BYTES }
    }
}

/// The running committer. Dropping it stops the thread after it has made everything journaled
/// so far durable (or given up on a failing store).
pub struct Durability {
    /// Set by drop; read by the committer between rounds.
    stop: Arc<AtomicBool>,
    handle: Option<JoinHandle<()>>,
}

/// Starts the committer for `economy` (already restored from `store`), whose books are `books`,
/// forming groups by `policy`. `on_durable` is called on the committer thread after each group
/// is durable.
pub fn start(
    economy: Arc<Economy>,
    stats: Arc<Stats>,
    mut store: Box<dyn EconomyStore>,
    mut books: Books,
    policy: CommitPolicy,
    on_durable: Box<dyn Fn() + Send>,
) -> std::io::Result<Durability> {
    let stop = Arc::new(AtomicBool::new(false));
    let stopping = Arc::clone(&stop);
    let woken = Arc::clone(&economy);
    let handle = std::thread::Builder::new().name("mmo-economy-commit".into()).spawn(move || {
        // Room for one full journal; it grows (on this thread, off every operation's path) to
        // the largest group seen, at most every journal full. Reserving that maximum up front
        // (64 x 64 entries of ~480 bytes) was 1.9 MiB of heap for groups that under play are
        // a few entries.
        let mut group: Vec<LedgerEntry> = Vec::with_capacity(JOURNAL_ENTRIES_PER_SHARD);
        let ledger = economy.ledger();
        if !policy.linger.is_zero() {
            ledger.set_group_target(policy.group_target.max(1));
        }
        let mut durable = ledger.durable_through();
        // Whether the last round found nothing to commit (the next entry ends an idle spell).
        let mut idle = true;
        loop {
            let stop_asked = stopping.load(Ordering::Acquire);
            ledger.clear_pending();
            let mut cut = ledger.head();
            if cut == durable {
                if stop_asked {
                    return;
                }
                idle = true;
                std::thread::park_timeout(IDLE_PARK);
                continue;
            }
            if idle && !policy.linger.is_zero() {
                let deadline = Instant::now() + policy.linger;
                // Bounded by the deadline; a wake-up (the group target reached, a stop, or
                // none at all) only ends a wait early.
                while cut - durable < policy.group_target && !stopping.load(Ordering::Acquire) {
                    let now = Instant::now();
                    if now >= deadline {
                        break;
                    }
                    std::thread::park_timeout(deadline - now);
                    cut = ledger.head();
                }
                ledger.clear_pending();
                cut = ledger.head();
            }
            idle = false;
            let taken = economy.drain_journal(cut, &mut group);
            group.sort_unstable_by_key(|e| e.seq);
            // Every number below the cut was handed out and pushed under a lock the drain
            // took after the cut was read: the group is exactly [durable, cut).
            assert_eq!(taken as u64, cut - durable, "a group holds every entry below its cut");
            assert!(group.first().is_some_and(|e| e.seq == durable) && group.last().is_some_and(|e| e.seq == cut - 1));
            let mut after = books;
            group.iter().for_each(|e| after.add(e));
            let mut attempt = 0u32;
            loop {
                match store.commit(&group, &after) {
                    Ok(()) => break,
                    Err(e) => {
                        stats.bump(Counter::LedgerCommitFailures);
                        attempt += 1;
                        if stopping.load(Ordering::Acquire) && attempt >= ATTEMPTS_AFTER_STOP {
                            eprintln!("economy store: giving up at stop after {attempt} failed commits: {e}");
                            return;
                        }
                        if attempt.is_power_of_two() {
                            eprintln!("economy store: commit failed ({attempt} so far; retrying, nothing is told meanwhile): {e}");
                        }
                        std::thread::sleep(Duration::from_millis(u64::from(attempt.min(100))));
                    }
                }
            }
            books = after;
            stats.bump(Counter::LedgerGroups);
            stats.add(Counter::LedgerEntries, group.len() as u64);
            group.clear();
            durable = cut;
            ledger.set_durable_through(cut);
            on_durable();
        }
    })?;
    woken.set_committer(handle.thread().clone());
    Ok(Durability { stop, handle: Some(handle) })
}

impl Drop for Durability {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Release);
        if let Some(handle) = self.handle.take() {
            handle.thread().unpark();
            let _ = handle.join();
        }
    }
}
