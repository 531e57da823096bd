//! The economy with a store: accounts own wallets across sessions and restarts, a result is
//! numbered and durable before it may be told, a retransmit after a restart gets its original
//! answer, the books balance after every restart, a stalled disk is a counted `StorageBusy`
//! (bounded journals), and a torn store file is an error or a repair, never a panic.

use crate::common::*;
use mmo_core::durability::CommitPolicy;
use mmo_core::ledger::{Books, EconomyStore, LedgerEntry, Recovered, StoredWallet, WalletImage};
use mmo_core::records::{EconomyKind::*, EconomyResult, EconomyStatus, TradeStack};
use mmo_core::store::{RedbStore, STORE_FILE};
use mmo_core::{CoreConfig, Engine, JoinError};
use std::io;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

const STARTING_GOLD: u64 = 1_000;

fn config() -> CoreConfig {
    CoreConfig { starting_gold: STARTING_GOLD, ..small_config() }
}

fn durable_engine(dir: &Path) -> Engine {
    let e = Engine::new(config()).unwrap();
    e.open_store(dir, CommitPolicy::default(), Box::new(|| {})).unwrap();
    e
}

fn join_account(e: &Engine, account: u64) -> Who {
    let t = e.join_account(account, 100.0 + account as f32, 100.0, 1).unwrap();
    Who::of(t)
}

/// Waits (bounded) until the result may be told.
fn wait_durable(e: &Engine, r: &EconomyResult) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while e.economy_durable_through() < r.ledger_seq {
        assert!(Instant::now() < deadline, "ledger_seq {} never became durable", r.ledger_seq);
        std::thread::sleep(Duration::from_micros(200));
    }
}

#[test]
fn an_account_keeps_its_wallet_across_sessions_and_one_session_at_a_time() {
    let dir = temp_dir("sessions");
    let e = durable_engine(&dir);
    let a = join_account(&e, 7);
    let b = join_account(&e, 8);
    assert_eq!(e.join_account(7, 10.0, 10.0, 1).unwrap_err(), JoinError::AccountInSession);
    assert_eq!(e.join(10.0, 10.0, 1).unwrap_err(), JoinError::AccountRequired, "a store is open: every session has an account");
    let r = run_op(&e, op(a, 1, Transfer, b.id, 300, 0, 0));
    assert_eq!((status(&r), r.gold_balance), (EconomyStatus::Applied, 700));
    assert!(r.ledger_seq > 0, "an applied result waits for its entry");
    e.leave(a.id, a.token).unwrap();
    let a2 = join_account(&e, 7);
    assert_ne!(a2.id, a.id, "a new session");
    // The same wallet: a retransmit of transaction 1 is answered from its window.
    let again = run_op(&e, op(a2, 1, Transfer, b.id, 300, 0, 0));
    assert_eq!((status(&again), again.duplicate, again.gold_balance), (EconomyStatus::Applied, 1, 700));
    let audit = e.economy_audit();
    assert!(audit.is_conserved());
    assert_eq!(audit.live.gold, 2 * u128::from(STARTING_GOLD), "two accounts, each minted once");
    drop(e);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn every_told_result_survives_a_restart_and_a_retransmit_gets_the_original_answer() {
    let dir = temp_dir("restart");
    let mut told = Vec::new();
    {
        let e = durable_engine(&dir);
        let a = join_account(&e, 1);
        let b = join_account(&e, 2);
        let grant = e.grant(b.id, 1, &TradeStack { gold: 50, item_count: 4, item_kind: 3, _reserved: 0 });
        wait_durable(&e, &grant);
        for txn in 1..=40u64 {
            // Transfers, a spend, and refusals (recorded too: a retransmit must not apply them).
            let o = match txn % 4 {
                0 => op(a, txn, Spend, 0, 7, 0, 0),
                1 => op(a, txn, Transfer, b.id, 11, 0, 0),
                2 => op(a, txn, Transfer, b.id, 1 << 40, 0, 0), // insufficient funds
                _ => op(b, txn, Transfer, a.id, 5, 3, 1),
            };
            let r = run_op(&e, o);
            wait_durable(&e, &r);
            told.push((o, r));
        }
        assert!(e.economy_audit().is_conserved());
        // Dropped here like a crash after the last told result: nothing untold matters.
    }
    let e = Engine::new(config()).unwrap();
    let recovery = e.open_store(&dir, CommitPolicy::default(), Box::new(|| {})).unwrap();
    assert_eq!(recovery.accounts, 2);
    assert!(recovery.entries >= 43, "2 creations, a grant, 40 decisions: {}", recovery.entries);
    assert!(recovery.repairs.is_empty(), "{:?}", recovery.repairs);
    let audit = e.economy_audit();
    assert!(audit.is_conserved(), "the books balance after the restart: {audit:?}");
    assert_eq!(audit.minted_by_grant.gold, 50);
    let a = join_account(&e, 1);
    let b = join_account(&e, 2);
    // The last 32 decisions of each account are in its window: each retransmit gets exactly
    // what was told, flagged duplicate, and applies nothing.
    let before = e.economy_audit();
    let mut checked = 0;
    for (o, r) in told.iter().rev() {
        let who = if o.player_id == told[0].0.player_id { a } else { b };
        let mut again = *o;
        again.player_id = who.id;
        again.session_token = who.token;
        again.counterparty_id = if who.id == a.id { b.id } else { a.id };
        if o.kind == Spend as u8 {
            again.counterparty_id = 0;
        }
        let r2 = run_op(&e, again);
        if status(&r2) == EconomyStatus::TransactionTooOld {
            continue;
        }
        assert_eq!((r2.status, r2.gold_balance, r2.duplicate), (r.status, r.gold_balance, 1), "transaction {}", o.transaction_id);
        checked += 1;
    }
    assert!(checked >= 32, "{checked} retransmits answered from the window");
    assert_eq!(e.economy_audit(), before, "no retransmit applied anything");
    drop(e);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// The window after a restart answers as before it, when ids jump: the store keeps a slot's
/// last decision even once its id has fallen below the window, and a restore must not answer
/// the slot's id inside the window (never decided) with it.
#[test]
fn a_restart_keeps_the_window_exactly_when_ids_jump() {
    let dir = temp_dir("window-jumps");
    let window = mmo_core::economy::DEDUP_WINDOW as u64;
    {
        let e = durable_engine(&dir);
        let a = join_account(&e, 1);
        let b = join_account(&e, 2);
        // Account 1: id 3, then a jump to 40. Id 3's row stays in the store, in the slot of
        // id 35, which is inside the window and was never decided.
        for txn in [3, 40] {
            let r = run_op(&e, op(a, txn, Spend, 0, 1, 0, 0));
            assert_eq!(status(&r), EconomyStatus::Applied);
            wait_durable(&e, &r);
        }
        // Account 2: a window not yet full (highest 7).
        for txn in [2, 7] {
            let r = run_op(&e, op(b, txn, Spend, 0, 1, 0, 0));
            wait_durable(&e, &r);
        }
    }
    let e = Engine::new(config()).unwrap();
    let recovery = e.open_store(&dir, CommitPolicy::default(), Box::new(|| {})).unwrap();
    assert!(recovery.repairs.is_empty(), "{:?}", recovery.repairs);
    let a = join_account(&e, 1);
    let b = join_account(&e, 2);
    let spend = |who: Who, txn: u64| run_op(&e, op(who, txn, Spend, 0, 1, 0, 0));
    let answer = |r: EconomyResult| (status(&r), r.duplicate, r.gold_balance);
    assert_eq!(answer(spend(a, 40)), (EconomyStatus::Applied, 1, STARTING_GOLD - 2), "the newest decision is remembered");
    assert_eq!(status(&spend(a, 3)), EconomyStatus::TransactionTooOld);
    assert_eq!(status(&spend(a, 40 - window)), EconomyStatus::TransactionTooOld);
    assert_eq!(answer(spend(a, 35)), (EconomyStatus::Applied, 0, STARTING_GOLD - 3), "id 35 shares id 3's slot and is new");
    assert_eq!(answer(spend(a, 35)), (EconomyStatus::Applied, 1, STARTING_GOLD - 3));
    assert_eq!(answer(spend(a, 40 - window + 1)), (EconomyStatus::Applied, 0, STARTING_GOLD - 4), "the window's oldest id is new");
    assert_eq!(answer(spend(b, 2)), (EconomyStatus::Applied, 1, STARTING_GOLD - 1));
    assert_eq!(answer(spend(b, 7)), (EconomyStatus::Applied, 1, STARTING_GOLD - 2));
    assert_eq!(answer(spend(b, 5)), (EconomyStatus::Applied, 0, STARTING_GOLD - 3), "an id below a window not yet full is new");
    assert!(e.economy_audit().is_conserved());
    drop(e);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn concurrent_transfers_are_all_there_after_a_restart() {
    let dir = temp_dir("concurrent");
    let accounts = 16u64;
    let balances: Vec<u64>;
    {
        let e = Arc::new(durable_engine(&dir));
        let who: Vec<Who> = (1..=accounts).map(|acc| join_account(&e, acc)).collect();
        let threads: Vec<_> = (0..4)
            .map(|t| {
                let (e, who) = (Arc::clone(&e), who.clone());
                std::thread::spawn(move || {
                    let mut seed = 0x9e37_79b9_u64 + t;
                    let mut txn = vec![0u64; who.len()];
                    for _ in 0..2_000 {
                        seed ^= seed << 13;
                        seed ^= seed >> 7;
                        seed ^= seed << 17;
                        // Each thread initiates only from its own quarter of the accounts, so
                        // transaction ids stay increasing per account.
                        let from = (t as usize) * 4 + (seed % 4) as usize;
                        let to = (seed >> 8) as usize % who.len();
                        txn[from] += 1;
                        run_op(&e, op(who[from], txn[from], Transfer, who[to].id, (seed >> 20) as i64 % 40 + 1, 0, 0));
                    }
                })
            })
            .collect();
        threads.into_iter().for_each(|t| t.join().unwrap());
        let audit = e.economy_audit();
        assert!(audit.is_conserved());
        balances = who.iter().map(|w| e.player(w.id).unwrap().gold).collect();
        // Dropping the engine stops the committer after a last group: everything is durable.
    }
    let e = durable_engine(&dir);
    for (acc, gold) in (1..=accounts).zip(&balances) {
        let w = join_account(&e, acc);
        assert_eq!(e.player(w.id).unwrap().gold, *gold, "account {acc}");
    }
    let audit = e.economy_audit();
    assert!(audit.is_conserved());
    assert_eq!(audit.live.gold, u128::from(accounts * STARTING_GOLD));
    let stats = e.stats();
    assert_eq!(stats.accounts_resumed, accounts);
    drop(e);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A store whose commits block while `stalled` is set and fail while `failing` is set.
struct StallingStore {
    stalled: Arc<AtomicBool>,
    failing: Arc<AtomicBool>,
    commits: Arc<AtomicU64>,
    entries: Arc<Mutex<Vec<LedgerEntry>>>,
}

impl EconomyStore for StallingStore {
    fn commit(&mut self, entries: &[LedgerEntry], _books: &Books) -> io::Result<()> {
        while self.stalled.load(Ordering::Acquire) {
            std::thread::sleep(Duration::from_millis(1));
        }
        if self.failing.load(Ordering::Acquire) {
            return Err(io::Error::other("disk full (test)"));
        }
        self.commits.fetch_add(1, Ordering::AcqRel);
        self.entries.lock().unwrap().extend_from_slice(entries);
        Ok(())
    }
    fn load(&mut self) -> io::Result<Recovered> {
        Ok(Recovered::default())
    }
}

#[test]
fn after_an_idle_spell_the_committer_lingers_until_its_group_target_then_commits_once() {
    let commits = Arc::new(AtomicU64::new(0));
    let entries = Arc::new(Mutex::new(Vec::new()));
    let store = StallingStore {
        stalled: Arc::new(AtomicBool::new(false)),
        failing: Arc::new(AtomicBool::new(false)),
        commits: Arc::clone(&commits),
        entries: Arc::clone(&entries),
    };
    let e = Engine::new(config()).unwrap();
    // A linger far longer than the test: only the fourth entry can end it.
    let policy = CommitPolicy { linger: Duration::from_secs(600), group_target: 4, ..CommitPolicy::default() };
    e.open_store_with(Box::new(store), policy, Box::new(|| {})).unwrap();
    let a = join_account(&e, 1); // entry 0: account 1 created (wakes the idle committer)
    let b = join_account(&e, 2); // entry 1
    let first = run_op(&e, op(a, 1, Transfer, b.id, 5, 0, 0)); // entry 2
    assert_eq!((e.economy_durable_through(), commits.load(Ordering::Acquire)), (0, 0), "lingering: nothing committed yet");
    let fourth = run_op(&e, op(b, 1, Transfer, a.id, 1, 0, 0)); // entry 3: the group target
    wait_durable(&e, &fourth);
    assert!(first.ledger_seq < fourth.ledger_seq);
    assert_eq!(commits.load(Ordering::Acquire), 1, "one commit for the four");
    assert_eq!(entries.lock().unwrap().iter().map(|e| e.seq).collect::<Vec<_>>(), vec![0, 1, 2, 3]);
    assert_eq!((e.stats().ledger_groups, e.stats().ledger_entries), (1, 4));
    // Stopping does not wait out a linger: a lone entry is committed at once by the stop.
    let lone = run_op(&e, op(a, 2, Spend, 0, 1, 0, 0));
    let started = Instant::now();
    drop(e);
    assert!(started.elapsed() < Duration::from_secs(60), "the stop waited out the linger");
    assert_eq!(entries.lock().unwrap().last().map(|e| e.seq + 1), Some(lone.ledger_seq), "the lone entry was committed at the stop");
}

#[test]
fn commit_linger_is_bounded() {
    assert!(CommitPolicy::lingering_us(100_000).is_ok());
    assert!(CommitPolicy::lingering_us(100_001).unwrap_err().contains("100000"));
    assert_eq!(CommitPolicy::lingering_us(0).unwrap().linger, Duration::ZERO);
}

#[test]
fn a_stalled_disk_holds_every_result_and_full_journals_refuse_storage_busy() {
    let (stalled, failing) = (Arc::new(AtomicBool::new(true)), Arc::new(AtomicBool::new(false)));
    let commits = Arc::new(AtomicU64::new(0));
    let entries = Arc::new(Mutex::new(Vec::new()));
    let store = StallingStore {
        stalled: Arc::clone(&stalled),
        failing: Arc::clone(&failing),
        commits: Arc::clone(&commits),
        entries: Arc::clone(&entries),
    };
    let e = Engine::new(config()).unwrap();
    e.open_store_with(Box::new(store), CommitPolicy::default(), Box::new(|| {})).unwrap();
    // Joins create accounts (entries); the committer takes the first group and stalls in it.
    let a = join_account(&e, 1);
    let b = join_account(&e, 2);
    let mut results = Vec::new();
    let mut busy = 0;
    for txn in 1..=10_000u64 {
        let r = run_op(&e, op(a, txn, Transfer, b.id, 1, 0, 0));
        if status(&r) == EconomyStatus::StorageBusy {
            busy += 1;
            assert_eq!((r.ledger_seq, r.duplicate), (0, 0), "nothing decided, nothing to wait for");
            // Not recorded: the same id is decided once the disk catches up.
            break;
        }
        results.push(r);
    }
    assert_eq!(busy, 1, "a shard's journal is bounded");
    assert!(results.len() <= 64 * 2, "at most a journal's worth waits: {}", results.len());
    assert!(results.iter().all(|r| r.ledger_seq > e.economy_durable_through()), "nothing is durable while the disk stalls");
    // The disk comes back failing: still nothing is durable, and the failures are counted.
    failing.store(true, Ordering::Release);
    stalled.store(false, Ordering::Release);
    let deadline = Instant::now() + Duration::from_secs(10);
    while e.stats().ledger_commit_failures < 3 {
        assert!(Instant::now() < deadline);
        std::thread::sleep(Duration::from_millis(5));
    }
    assert!(results.iter().all(|r| r.ledger_seq > e.economy_durable_through()));
    // It recovers: everything is durable, in one or more groups, in number order.
    failing.store(false, Ordering::Release);
    for r in &results {
        wait_durable(&e, r);
    }
    let committed = entries.lock().unwrap().clone();
    assert!(committed.windows(2).all(|w| w[1].seq == w[0].seq + 1), "groups hold every number once, in order");
    assert_eq!(committed.first().map(|e| e.seq), Some(0));
    let retry = run_op(&e, op(a, results.len() as u64 + 1, Transfer, b.id, 1, 0, 0));
    assert_eq!(status(&retry), EconomyStatus::Applied, "the refused id is decided now");
    assert!(e.stats().economy_storage_busy >= 1);
    assert!(e.economy_audit().is_conserved());
}

#[test]
fn a_torn_store_file_is_an_error_or_a_repair_never_a_panic_and_never_unbalanced_books() {
    let dir = temp_dir("torn");
    {
        let e = durable_engine(&dir);
        let a = join_account(&e, 1);
        let b = join_account(&e, 2);
        for txn in 1..=200u64 {
            let r = run_op(&e, op(a, txn, Transfer, b.id, 1, 0, 0));
            wait_durable(&e, &r);
        }
    }
    let file = dir.join(STORE_FILE);
    let original = std::fs::read(&file).unwrap();
    let mut outcomes = (0, 0);
    // Truncated at several points, and with its tail overwritten.
    let mut variants: Vec<Vec<u8>> = [7, 4, 2].iter().map(|d| original[..original.len() * (d - 1) / d].to_vec()).collect();
    let mut scribbled = original.clone();
    let n = scribbled.len();
    scribbled[n - 4096..].iter_mut().for_each(|b| *b ^= 0x5a);
    variants.push(scribbled);
    for bytes in variants {
        std::fs::write(&file, &bytes).unwrap();
        let e = Engine::new(config()).unwrap();
        match e.open_store(&dir, CommitPolicy::default(), Box::new(|| {})) {
            Ok(recovery) => {
                outcomes.0 += 1;
                assert!(e.economy_audit().is_conserved(), "a store that opens has balanced books ({recovery:?})");
            }
            Err(message) => {
                outcomes.1 += 1;
                assert!(!message.is_empty());
            }
        }
    }
    assert_eq!(outcomes.0 + outcomes.1, 4);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_store_opens_once_and_before_any_join() {
    let dir = temp_dir("once");
    let e = Engine::new(config()).unwrap();
    let _ = join(&e, 10.0, 10.0, 1);
    assert!(e.open_store(&dir, CommitPolicy::default(), Box::new(|| {})).is_err(), "players joined without accounts");
    // Nobody live any more, but a wallet was opened (its starting gold minted) and closed: the
    // books hold gold the store would not know of, so the store still refuses to open.
    let e = Engine::new(config()).unwrap();
    let gone = join(&e, 10.0, 10.0, 1);
    e.leave(gone.id, gone.token).unwrap();
    assert_eq!(e.live_players(), 0);
    let refused = e.open_store(&dir, CommitPolicy::default(), Box::new(|| {}));
    assert!(refused.is_err_and(|why| why.contains("minted or sunk")), "a wallet came and went before the store");
    let e = durable_engine(&dir);
    assert!(e.open_store(&dir, CommitPolicy::default(), Box::new(|| {})).is_err(), "already open");
    // Without a store, results wait for nothing.
    let plain = engine();
    let a = join(&plain, 10.0, 10.0, 1);
    let r = run_op(&plain, op(a, 1, Spend, 0, 1, 0, 0));
    assert_eq!(r.ledger_seq, 0);
    assert_eq!(plain.economy_durable_through(), u64::MAX);
    drop(e);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn redb_store_is_the_one_behind_the_trait() {
    // The engine's default store is this file in the data directory.
    let dir = temp_dir("file");
    let mut store = RedbStore::open(&dir).unwrap();
    assert!(store.load().unwrap().wallets.is_empty());
    assert_eq!(store.path(), dir.join(STORE_FILE));
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A store that loads what it was given and commits anything.
struct GivenStore(Recovered);

impl EconomyStore for GivenStore {
    fn commit(&mut self, _entries: &[LedgerEntry], _books: &Books) -> io::Result<()> {
        Ok(())
    }
    fn load(&mut self) -> io::Result<Recovered> {
        Ok(self.0.clone())
    }
}

/// A store whose contents fail the restore's checks (here: a wallet holding gold the books
/// never minted, after another that loaded fine) is refused, and leaves nothing behind: no
/// wallet, no account, the books as they were, the ledger off. Its accounts are not resumed
/// by a join, and a good store opens afterwards.
#[test]
fn a_store_refused_at_restore_leaves_the_economy_as_it_was() {
    let stored = |account: u64, gold: u64| StoredWallet {
        image: WalletImage { account, gold, ..WalletImage::default() },
        ..StoredWallet::default()
    };
    let mut unbalanced = Recovered { wallets: vec![stored(7, 300), stored(8, 200)], ..Recovered::default() };
    unbalanced.books.minted_gold = 300;
    let e = Engine::new(config()).unwrap();
    let refused = e.open_store_with(Box::new(GivenStore(unbalanced.clone())), CommitPolicy::default(), Box::new(|| {}));
    assert!(refused.unwrap_err().contains("do not balance"));
    let audit = e.economy_audit();
    assert!(audit.is_conserved());
    assert_eq!((audit.open_wallets, audit.live.gold, audit.minted.gold), (0, 0, 0), "nothing of the refused store stays");
    assert_eq!(e.economy_durable_through(), u64::MAX, "no ledger: nothing held back");
    // A twin that balances opens: the refused attempt left no wallets to trip over.
    unbalanced.books.minted_gold = 500;
    e.open_store_with(Box::new(GivenStore(unbalanced)), CommitPolicy::default(), Box::new(|| {})).unwrap();
    let a = join_account(&e, 7);
    assert_eq!(e.player(a.id).unwrap().gold, 300, "account 7 resumed from the store that opened");
    assert_eq!(e.economy_audit().minted.gold, 500);
}
