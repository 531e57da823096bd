//! Loom model of the ledger's cut ([`mmo_core::ledger`]): operations take a number from the
//! real [`Ledger`] while holding their shard locks (two shards, each a journal under a mutex,
//! as the economy's) and push their entry before letting go; the committer reads the cut and
//! drains the shards one at a time. In every interleaving the committer finds every entry
//! below its cut, nothing above it, and a dependent operation (one that saw another's effect
//! through a shared shard) never lands in an earlier group than what it depends on.
//!
//! Run: `RUSTFLAGS="--cfg mmo_loom" cargo test -p mmo-core --release --test loom_ledger`
#![cfg(mmo_loom)]

use loom::sync::{Arc, Mutex};
use loom::thread;
use mmo_core::ledger::Ledger;

/// A shard: its journal (entry numbers) and a wallet balance operations change.
#[derive(Default)]
struct Shard {
    journal: Vec<u64>,
    balance: u64,
    /// The numbers of the operations that changed it, in the order they held its lock.
    touched: Vec<u64>,
}

/// One operation: locks `shards` in ascending order, changes them, takes a number and pushes
/// it into the first one's journal, as `Economy::execute` does. Returns its number.
fn operate(ledger: &Ledger, shards: &[Mutex<Shard>; 2], which: &[usize]) -> u64 {
    let mut guards: Vec<_> = which.iter().map(|&i| shards[i].lock().unwrap()).collect();
    for g in guards.iter_mut() {
        g.balance += 1;
    }
    let seq = ledger.take_seq();
    for g in guards.iter_mut() {
        g.touched.push(seq);
    }
    guards[0].journal.push(seq);
    seq
}

/// The committer's round: the cut, then every shard drained of the entries below it.
fn commit_round(ledger: &Ledger, shards: &[Mutex<Shard>; 2]) -> (u64, Vec<u64>) {
    let cut = ledger.head();
    let mut group = Vec::new();
    for shard in shards.iter() {
        let mut s = shard.lock().unwrap();
        let below = s.journal.iter().take_while(|&&n| n < cut).count();
        group.extend(s.journal.drain(..below));
    }
    group.sort_unstable();
    (cut, group)
}

#[test]
fn a_cut_finds_every_entry_below_it_and_only_those() {
    loom::model(|| {
        let ledger = Arc::new(Ledger::new());
        let shards = Arc::new([Mutex::new(Shard::default()), Mutex::new(Shard::default())]);
        let (l1, s1) = (ledger.clone(), shards.clone());
        // A two-shard operation (a trade) and a one-shard operation on the second shard.
        let trade = thread::spawn(move || operate(&l1, &s1, &[0, 1]));
        let (l2, s2) = (ledger.clone(), shards.clone());
        let spend = thread::spawn(move || operate(&l2, &s2, &[1]));
        let (cut, group) = commit_round(&ledger, &shards);
        assert_eq!(group, (0..cut).collect::<Vec<_>>(), "the group is exactly [0, cut)");
        let (a, b) = (trade.join().unwrap(), spend.join().unwrap());
        // What the first round did not take, a second round after both finished takes.
        let (cut2, rest) = commit_round(&ledger, &shards);
        assert_eq!(cut2, 2);
        assert_eq!(rest, (cut..2).collect::<Vec<_>>());
        // Both touched shard 1: whichever held its lock later took the higher number, so a
        // group (a prefix of the numbers) that holds the later one holds the earlier one too.
        let mut numbers = [a, b];
        numbers.sort_unstable();
        assert_eq!(numbers, [0, 1]);
        for shard in shards.iter() {
            let s = shard.lock().unwrap();
            assert!(s.touched.windows(2).all(|w| w[0] < w[1]), "numbers follow each shard's lock order: {:?}", s.touched);
        }
        assert_eq!(shards[1].lock().unwrap().balance, 2);
    });
}
