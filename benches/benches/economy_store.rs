//! What the economy's store costs: the group commit's latency by group size, and the time to
//! open a store that a million operations wrote.
//!
//! Part 1 commits groups of 1, 16, 64 and 256 ledger entries (two-wallet transfers among
//! 10,000 accounts) to each store in a fresh directory, one commit per group, and reports each
//! size's p50 / p99 / max commit time: the floor under every acknowledged economy operation's
//! latency. The stores: `LoggedStore`, the server's (one record appended and `fdatasync`ed
//! per group, with its segment switches and the checkpoint thread folding full segments into
//! redb meanwhile), and `RedbStore` alone (a B-tree transaction per group). A commit the log
//! refuses at a switch because no segment is prepared yet (its checkpoint thread is two
//! segments behind) is retried, as the committer retries it, and the retries count in that
//! commit's time.
//!
//! Part 2 runs 1,000,000 operations (transfers and spends among 1,000 accounts, from two
//! threads) through an engine with a store open (the server's: the commit log in front of
//! redb), drops it (the committer makes everything durable), then opens the store again in a
//! fresh engine three times and reports the median time `Engine::open_store` took (open redb,
//! replay the log's segments, check the books, checkpoint).
//!
//! Part 3 prices one commit of one entry in CPU, the committer's cost under a trickle of
//! operations: `LoggedStore::commit` and `RedbStore::commit` of a one-entry group against the
//! floor an append-only log stands on (a 512-byte record written into a preallocated file and
//! `fdatasync`ed), all on the calling thread's clock (`/proc/thread-self/schedstat`: user and
//! kernel time, the fsync's writeback included; the log's checkpoint thread is not on it).
//!
//! `cargo bench -p mmo-benches --bench economy_store`; with `-- --test` (make bench-smoke) the
//! sizes shrink to a smoke run.

use mmo_core::commit_log::LoggedStore;
use mmo_core::durability::CommitPolicy;
use mmo_core::ledger::{Books, DecisionImage, EconomyStore, LedgerEntry, WalletImage};
use mmo_core::records::{EconomyKind, EconomyOp, EconomyResult, EconomyStatus};
use mmo_core::store::RedbStore;
use mmo_core::{CoreConfig, Engine};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("mmo-bench-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    sorted[((sorted.len() as f64 - 1.0) * p).round() as usize]
}

/// Commits a group, retrying what the store refuses (at a switch, the log's checkpoint thread
/// two segments behind) as the committer would, at most `COMMIT_ATTEMPTS` times.
fn commit_retrying(store: &mut dyn EconomyStore, group: &[LedgerEntry], books: &Books) {
    const COMMIT_ATTEMPTS: u32 = 100;
    for attempt in 1..=COMMIT_ATTEMPTS {
        match store.commit(group, books) {
            Ok(()) => return,
            Err(e) if attempt == COMMIT_ATTEMPTS => panic!("a commit failed {attempt} times: {e}"),
            Err(_) => std::thread::sleep(Duration::from_millis(1)),
        }
    }
}

/// The stores part 1 and part 3 compare: the server's, then redb alone.
const STORES: [&str; 2] = ["commit log (LoggedStore)", "redb (RedbStore)"];

fn open_store(name: &str, dir: &std::path::Path) -> Box<dyn EconomyStore> {
    let mut store: Box<dyn EconomyStore> =
        if name.starts_with("redb") { Box::new(RedbStore::open(dir).unwrap()) } else { Box::new(LoggedStore::open(dir).unwrap()) };
    store.load().unwrap();
    store
}

fn group_commits(groups_per_size: usize) {
    println!("economy_store: group commit, one commit per group (the log: one fdatasync), {groups_per_size} groups per size");
    println!("{:>26} {:>6} {:>10} {:>10} {:>10} {:>16}", "store", "group", "p50_us", "p99_us", "max_us", "entries_per_s");
    for name in STORES {
        for size in [1usize, 16, 64, 256] {
            let dir = temp_dir(&format!("commit-{size}"));
            let mut store = open_store(name, &dir);
            let mut books = Books::default();
            let mut times = Vec::with_capacity(groups_per_size);
            let mut seq = 0u64;
            let mut x = 0x9e37_79b9_7f4a_7c15u64;
            let started = Instant::now();
            for _ in 0..groups_per_size {
                let group: Vec<LedgerEntry> = (0..size)
                    .map(|_| {
                        x ^= x << 13;
                        x ^= x >> 7;
                        x ^= x << 17;
                        let a = 1 + x % 10_000;
                        let b = 1 + (x >> 20) % 10_000;
                        let n = seq;
                        let image = |account, gold| WalletImage {
                            account,
                            gold,
                            highest_transaction: n + 1,
                            decision: DecisionImage { transaction_id: n + 1, gold_after: gold, status: 0 },
                            ..WalletImage::default()
                        };
                        seq += 1;
                        LedgerEntry { seq, wallets: [image(a, x % 1000), image(b, x % 777)], wallet_count: 2, ..LedgerEntry::default() }
                    })
                    .collect();
                group.iter().for_each(|e| books.add(e));
                let t = Instant::now();
                commit_retrying(store.as_mut(), &group, &books);
                times.push(t.elapsed());
            }
            let total = started.elapsed();
            times.sort();
            println!(
                "{:>26} {:>6} {:>10} {:>10} {:>10} {:>16.0}",
                name,
                size,
                percentile(&times, 0.5).as_micros(),
                percentile(&times, 0.99).as_micros(),
                times.last().unwrap().as_micros(),
                (size * groups_per_size) as f64 / total.as_secs_f64()
            );
            drop(store);
            let _ = std::fs::remove_dir_all(&dir);
        }
    }
}

fn run(e: &Engine, op: &EconomyOp) -> EconomyResult {
    let mut out = [EconomyResult::default()];
    loop {
        e.apply_economy(std::slice::from_ref(op), &mut out).unwrap();
        if out[0].status != EconomyStatus::StorageBusy as u8 {
            return out[0];
        }
        std::thread::sleep(Duration::from_micros(200)); // the committer is behind: as a client would, retry
    }
}

fn recovery(operations: u64, accounts: u64) {
    let dir = temp_dir("recovery");
    let config = CoreConfig { starting_gold: 1_000_000, player_capacity: accounts as u32 + 16, ..CoreConfig::default() };
    let written = Instant::now();
    {
        let e = Arc::new(Engine::new(config.clone()).unwrap());
        e.open_store(&dir, CommitPolicy::default(), Box::new(|| {})).unwrap();
        let players: Vec<_> = (1..=accounts).map(|a| e.join_account(a, 100.0, 100.0, 1).unwrap()).collect();
        let players = Arc::new(players);
        let threads: Vec<_> = (0..2u64)
            .map(|t| {
                let (e, players) = (Arc::clone(&e), Arc::clone(&players));
                std::thread::spawn(move || {
                    // Thread t initiates from the accounts of its parity (ids stay increasing).
                    let mine: Vec<usize> = (0..players.len()).filter(|i| *i as u64 % 2 == t).collect();
                    let mut next_tx = vec![0u64; players.len()];
                    let mut x = 0x2545_f491_4f6c_dd1du64 + t;
                    for _ in 0..operations / 2 {
                        x ^= x << 13;
                        x ^= x >> 7;
                        x ^= x << 17;
                        let from = mine[(x % mine.len() as u64) as usize];
                        let to = ((x >> 24) % players.len() as u64) as usize;
                        next_tx[from] += 1;
                        let spend = x.is_multiple_of(5);
                        let op = EconomyOp {
                            player_id: players[from].player_id,
                            session_token: players[from].session_token,
                            transaction_id: next_tx[from],
                            counterparty_id: if spend { 0 } else { players[to].player_id },
                            gold: (x >> 40) as i64 % 50 + 1,
                            kind: if spend { EconomyKind::Spend } else { EconomyKind::Transfer } as u8,
                            ..EconomyOp::default()
                        };
                        run(&e, &op);
                    }
                })
            })
            .collect();
        threads.into_iter().for_each(|t| t.join().unwrap());
        assert!(e.economy_audit().is_conserved());
    }
    let written = written.elapsed();
    // redb's file and the log's segments.
    let size_mb = std::fs::read_dir(&dir).unwrap().filter_map(|f| f.ok()?.metadata().ok()).map(|m| m.len()).sum::<u64>() as f64 / 1e6;
    let mut opens = Vec::new();
    for _ in 0..3 {
        let e = Engine::new(config.clone()).unwrap();
        let t = Instant::now();
        let r = e.open_store(&dir, CommitPolicy::default(), Box::new(|| {})).unwrap();
        opens.push(t.elapsed());
        assert_eq!(r.accounts, accounts);
        assert!(r.entries >= operations, "{} entries for {operations} operations", r.entries);
        assert!(e.economy_audit().is_conserved());
    }
    opens.sort();
    println!(
        "economy_store: recovery after {operations} operations among {accounts} accounts (written in {:.1} s, store {size_mb:.1} MB): \
         open_store median {:.1} ms (min {:.1}, max {:.1})",
        written.as_secs_f64(),
        opens[1].as_secs_f64() * 1e3,
        opens[0].as_secs_f64() * 1e3,
        opens[2].as_secs_f64() * 1e3
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// The calling thread's CPU time so far (user and kernel), in nanoseconds.
fn thread_cpu_ns() -> u64 {
    std::fs::read_to_string("/proc/thread-self/schedstat")
        .ok()
        .and_then(|s| s.split_whitespace().next().and_then(|n| n.parse().ok()))
        .unwrap_or(0)
}

/// Runs `commit` `count` times; returns (wall p50, CPU per commit).
fn price(count: usize, mut commit: impl FnMut(u64)) -> (Duration, Duration) {
    let mut times = Vec::with_capacity(count);
    let cpu_before = thread_cpu_ns();
    for i in 0..count as u64 {
        let t = Instant::now();
        commit(i);
        times.push(t.elapsed());
    }
    let cpu = Duration::from_nanos((thread_cpu_ns() - cpu_before) / count as u64);
    times.sort();
    (percentile(&times, 0.5), cpu)
}

fn cost_per_commit(commits: usize) {
    use std::os::unix::fs::FileExt;
    println!("economy_store: one one-entry commit, {commits} commits each (CPU: the committing thread's user + kernel time)");
    println!("{:>34} {:>10} {:>16}", "commit", "p50_us", "cpu_us_per_commit");
    let dir = temp_dir("per-commit");
    // Each store rewrites 10,000 accounts' wallets, one entry per commit.
    let one_entry = |i: u64| {
        let a = 1 + (i * 7_919) % 10_000;
        let image = WalletImage {
            account: a,
            gold: i,
            highest_transaction: i + 1,
            decision: DecisionImage { transaction_id: i + 1, gold_after: i, status: 0 },
            ..WalletImage::default()
        };
        LedgerEntry { seq: 10_001 + i, wallets: [image, WalletImage::default()], wallet_count: 1, ..LedgerEntry::default() }
    };
    let warm: Vec<LedgerEntry> = (1..=10_000u64)
        .map(|a| LedgerEntry {
            seq: a,
            wallets: [WalletImage { account: a, gold: a, ..WalletImage::default() }, WalletImage::default()],
            wallet_count: 1,
            ..LedgerEntry::default()
        })
        .collect();
    for name in STORES {
        let dir = dir.join(name.split(' ').next().unwrap_or("store"));
        std::fs::create_dir_all(&dir).unwrap();
        let mut store = open_store(name, &dir);
        let mut books = Books { entries: 0, ..Books::default() };
        for chunk in warm.chunks(1_000) {
            chunk.iter().for_each(|e| books.add(e));
            commit_retrying(store.as_mut(), chunk, &books);
        }
        let (p50, cpu) = price(commits, |i| {
            let entry = one_entry(i);
            books.add(&entry);
            commit_retrying(store.as_mut(), std::slice::from_ref(&entry), &books);
        });
        println!("{:>34} {:>10} {:>16}", name, p50.as_micros(), cpu.as_micros());
    }
    let record = [0x5au8; 512];
    let log = std::fs::OpenOptions::new().create(true).truncate(true).read(true).write(true).open(dir.join("append.log")).unwrap();
    let room = (commits + 1) * record.len();
    log.write_all_at(&vec![0u8; room], 0).unwrap();
    log.sync_all().unwrap();
    let (p50, cpu) = price(commits, |i| {
        log.write_all_at(&record, i * record.len() as u64).unwrap();
        log.sync_data().unwrap();
    });
    println!("{:>34} {:>10} {:>16}", "append 512 B + fdatasync (floor)", p50.as_micros(), cpu.as_micros());
    let _ = std::fs::remove_dir_all(&dir);
}

fn main() {
    let smoke = std::env::args().any(|a| a == "--test");
    if smoke {
        group_commits(20);
        recovery(10_000, 100);
        cost_per_commit(20);
    } else {
        group_commits(1_000);
        recovery(1_000_000, 1_000);
        cost_per_commit(2_000);
    }
}
