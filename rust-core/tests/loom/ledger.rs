//! Loom model of the economy's locking and the ledger's cut ([`mmo_core::economy`],
//! [`mmo_core::ledger`]), with the real [`Ledger`] and the economy's lock order: an operation
//! locks its wallets (each its own mutex) in ascending key, then its initiator's home books
//! (journal and totals, a mutex per home); it changes the wallets and the totals, takes a
//! number and pushes its entry into that journal before letting go of anything. The committer
//! reads the cut and drains the homes one at a time; the audit locks every wallet in key order,
//! then every home.
//!
//! In every interleaving: the committer finds every entry below its cut and nothing above it;
//! two operations on a common wallet are numbered in the order they held it (so a group, a
//! prefix of the numbers, never holds a later change to a wallet without the earlier ones); the
//! audit sees the books balance (no operation half done); nothing deadlocks.
//!
//! Run: `RUSTFLAGS="--cfg mmo_loom" cargo test -p mmo-core --release --test loom -- ledger::`

use loom::sync::{Arc, Mutex};
use loom::thread;
use mmo_core::ledger::Ledger;

/// A wallet: a balance, and the numbers of the operations that changed it, in the order they
/// held its lock.
#[derive(Default)]
struct Wallet {
    gold: u64,
    touched: Vec<u64>,
}

/// A home's books: its journal (entry numbers) and what its operations sank.
#[derive(Default)]
struct HomeBooks {
    journal: Vec<u64>,
    sunk: u64,
}

/// Two wallets (keys 0 and 1) and two homes, as the economy lays them out.
struct Economy {
    wallets: [Mutex<Wallet>; 2],
    homes: [Mutex<HomeBooks>; 2],
    ledger: Ledger,
}

const STARTING_GOLD: u64 = 10;

impl Economy {
    fn new() -> Self {
        let wallet = || Mutex::new(Wallet { gold: STARTING_GOLD, touched: Vec::new() });
        Self { wallets: [wallet(), wallet()], homes: Default::default(), ledger: Ledger::new() }
    }

    /// One operation: `from` pays one gold to `to` (a transfer) or, with `to` None, sinks it
    /// (a spend); journaled in home `home`. Wallets in ascending key, then the home, as
    /// `Economy::execute` does. Returns its number.
    fn operate(&self, from: usize, to: Option<usize>, home: usize) -> u64 {
        let mut keys = vec![from];
        keys.extend(to);
        keys.sort_unstable();
        let mut guards: Vec<_> = keys.iter().map(|&k| (k, self.wallets[k].lock().unwrap())).collect();
        let mut books = self.homes[home].lock().unwrap();
        for (k, w) in guards.iter_mut() {
            if *k == from {
                w.gold -= 1;
            } else {
                w.gold += 1;
            }
        }
        if to.is_none() {
            books.sunk += 1;
        }
        let seq = self.ledger.take_seq();
        for (_, w) in guards.iter_mut() {
            w.touched.push(seq);
        }
        books.journal.push(seq);
        seq
    }

    /// The committer's round: the cut, then every home drained of the entries below it.
    fn commit_round(&self) -> (u64, Vec<u64>) {
        let cut = self.ledger.head();
        let mut group = Vec::new();
        for home in self.homes.iter() {
            let mut b = home.lock().unwrap();
            let below = b.journal.iter().take_while(|&&n| n < cut).count();
            group.extend(b.journal.drain(..below));
        }
        group.sort_unstable();
        (cut, group)
    }

    /// The audit: every wallet in key order, then every home; whether gold is conserved.
    fn audit_balances(&self) -> bool {
        let wallets: Vec<_> = self.wallets.iter().map(|w| w.lock().unwrap()).collect();
        let homes: Vec<_> = self.homes.iter().map(|h| h.lock().unwrap()).collect();
        let live: u64 = wallets.iter().map(|w| w.gold).sum();
        let sunk: u64 = homes.iter().map(|h| h.sunk).sum();
        live + sunk == STARTING_GOLD * 2
    }
}

#[test]
fn a_cut_finds_every_entry_below_it_and_only_those() {
    loom::model(|| {
        let eco = Arc::new(Economy::new());
        // A transfer from wallet 1 to wallet 0 journaled in home 1, and a spend from wallet 1
        // journaled in home 0: they share wallet 1 but not a home.
        let e1 = eco.clone();
        let trade = thread::spawn(move || e1.operate(1, Some(0), 1));
        let e2 = eco.clone();
        let spend = thread::spawn(move || e2.operate(1, None, 0));
        let (cut, group) = eco.commit_round();
        assert_eq!(group, (0..cut).collect::<Vec<_>>(), "the group is exactly [0, cut)");
        let (a, b) = (trade.join().unwrap(), spend.join().unwrap());
        // What the first round did not take, a second round after both finished takes.
        let (cut2, rest) = eco.commit_round();
        assert_eq!(cut2, 2);
        assert_eq!(rest, (cut..2).collect::<Vec<_>>());
        let mut numbers = [a, b];
        numbers.sort_unstable();
        assert_eq!(numbers, [0, 1]);
        // Both touched wallet 1: whichever held it later took the higher number.
        for w in eco.wallets.iter() {
            let w = w.lock().unwrap();
            assert!(w.touched.windows(2).all(|p| p[0] < p[1]), "numbers follow each wallet's lock order: {:?}", w.touched);
        }
        assert_eq!(eco.wallets[1].lock().unwrap().gold, STARTING_GOLD - 2);
        assert!(eco.audit_balances());
    });
}

#[test]
fn opposite_transfers_and_the_audit_never_deadlock_and_the_audit_sees_no_half_operation() {
    loom::model(|| {
        let eco = Arc::new(Economy::new());
        // Transfers in opposite directions (each locks both wallets in key order), journaled
        // in different homes, while the audit reads.
        let e1 = eco.clone();
        let there = thread::spawn(move || e1.operate(0, Some(1), 0));
        let e2 = eco.clone();
        let back = thread::spawn(move || e2.operate(1, Some(0), 1));
        assert!(eco.audit_balances(), "the audit saw an operation half done");
        there.join().unwrap();
        back.join().unwrap();
        assert!(eco.audit_balances());
        let (cut, group) = eco.commit_round();
        assert_eq!((cut, group), (2, vec![0, 1]));
    });
}
