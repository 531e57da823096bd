//! The committer: one thread that makes the economy's ledger entries durable in groups.
//!
//! Each round it takes a cut (the next ledger number), drains every journaled entry below it
//! ([`crate::economy::Economy::drain_journal`]), commits them and the books after them to the
//! store in one transaction (one `fsync`), and only then moves the durable watermark to the
//! cut and calls the caller's `on_durable` (the network layer wakes its workers to send the
//! replies that waited). While a commit runs, new entries gather in the journals: the next
//! round takes them all, so the group grows with the load and the `fsync`s per operation fall
//! (group commit). No economy operation waits for the disk; only its reply does.
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
use std::time::Duration;

/// How long the committer sleeps when nothing wakes it (it is woken by the first entry after
/// each commit; this only bounds a lost wake-up).
const IDLE_PARK: Duration = Duration::from_millis(20);
/// Commit attempts after a stop was asked before the committer gives up on a failing store.
const ATTEMPTS_AFTER_STOP: u32 = 3;

/// The running committer. Dropping it stops the thread after it has made everything journaled
/// so far durable (or given up on a failing store).
pub struct Durability {
    /// Set by drop; read by the committer between rounds.
    stop: Arc<AtomicBool>,
    handle: Option<JoinHandle<()>>,
}

/// Starts the committer for `economy` (already restored from `store`), whose books are `books`.
/// `on_durable` is called on the committer thread after each group is durable.
pub fn start(
    economy: Arc<Economy>,
    stats: Arc<Stats>,
    mut store: Box<dyn EconomyStore>,
    mut books: Books,
    on_durable: Box<dyn Fn() + Send>,
) -> std::io::Result<Durability> {
    let stop = Arc::new(AtomicBool::new(false));
    let stopping = Arc::clone(&stop);
    let woken = Arc::clone(&economy);
    let handle = std::thread::Builder::new().name("mmo-economy-commit".into()).spawn(move || {
        let mut group: Vec<LedgerEntry> = Vec::with_capacity(crate::economy::ECONOMY_SHARDS * JOURNAL_ENTRIES_PER_SHARD);
        let ledger = economy.ledger();
        let mut durable = ledger.durable_through();
        loop {
            let stop_asked = stopping.load(Ordering::Acquire);
            ledger.clear_pending();
            let cut = ledger.head();
            if cut == durable {
                if stop_asked {
                    return;
                }
                std::thread::park_timeout(IDLE_PARK);
                continue;
            }
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
