//! Loom model of [`mmo_core::snapshot::SnapshotBoard`]: the tick publishing world snapshots
//! into reused buffers while network workers pin, read and un-pin them. Loom explores every
//! interleaving and reports any read of a buffer that races a write to it (the buffers are
//! loom `UnsafeCell`s under `--cfg mmo_loom`), so the model proves that a pinned snapshot is
//! never rebuilt under its reader, that a reader never pins a half-built one, that the writer
//! never waits (it skips a publication when it finds no free buffer), and that buffers are
//! reused (the writer publishes more snapshots than there are buffers).
//!
//! Run: `RUSTFLAGS="--cfg mmo_loom" cargo test -p mmo-core --release --test loom -- snapshot_board::`

use loom::sync::Arc;
use loom::thread;
use mmo_core::snapshot::{SNAPSHOT_BUFFERS, SnapshotBoard};

/// A snapshot whose two halves must agree: a torn or half-built one would not.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
struct Pair {
    tick: u64,
    twice: u64,
}

fn check(p: &Pair) {
    assert_eq!(p.twice, p.tick * 2, "a torn or half-built snapshot: {p:?}");
}

#[test]
fn pinned_snapshots_are_never_rebuilt_and_buffers_are_reused() {
    let mut builder = loom::model::Builder::new();
    builder.preemption_bound = Some(3);
    builder.check(|| {
        let (board, mut writer) = SnapshotBoard::new(Pair::default);
        let board = Arc::new(board);
        let publishes = SNAPSHOT_BUFFERS as u64 + 1;
        let reader = {
            let board = board.clone();
            thread::spawn(move || {
                let mut last = 0;
                for _ in 0..2 {
                    if let Some(s) = board.pin() {
                        check(&s);
                        assert!(s.tick >= last, "snapshots never go back in time");
                        last = s.tick;
                        // Still the same while pinned, however far the writer got.
                        thread::yield_now();
                        check(&s);
                        assert_eq!(s.tick, last);
                    }
                }
            })
        };
        let mut last_published = 0;
        for tick in 1..=publishes {
            // The writer never waits. It finds a free buffer unless the reader moves its pin
            // from one buffer to the other spare one just as the writer looks at them.
            if let Some(mut slot) = board.begin_write(&mut writer) {
                slot.tick = tick;
                slot.twice = tick * 2;
                board.publish(slot);
                last_published = tick;
            }
        }
        reader.join().unwrap();
        assert!(last_published >= publishes - 1, "one reader can make the writer skip at most once here");
        // With the reader gone, every spare buffer is free again.
        let mut slot = board.begin_write(&mut writer).expect("no reader: a free buffer");
        slot.tick = publishes + 1;
        slot.twice = (publishes + 1) * 2;
        board.publish(slot);
        let latest = board.pin().expect("published");
        assert_eq!(*latest, Pair { tick: publishes + 1, twice: (publishes + 1) * 2 });
    });
}

#[test]
fn two_readers_pinning_two_old_snapshots_make_the_writer_skip_not_wait() {
    let mut builder = loom::model::Builder::new();
    builder.preemption_bound = Some(2);
    builder.check(|| {
        let (board, mut writer) = SnapshotBoard::new(Pair::default);
        let board = Arc::new(board);
        let mut slot = board.begin_write(&mut writer).unwrap();
        *slot = Pair { tick: 1, twice: 2 };
        board.publish(slot);
        let readers: Vec<_> = (0..2)
            .map(|_| {
                let board = board.clone();
                thread::spawn(move || {
                    if let Some(s) = board.pin() {
                        check(&s);
                    }
                })
            })
            .collect();
        for tick in 2..=3u64 {
            if let Some(mut slot) = board.begin_write(&mut writer) {
                slot.tick = tick;
                slot.twice = tick * 2;
                board.publish(slot);
            }
        }
        for r in readers {
            r.join().unwrap();
        }
        check(&board.pin().unwrap());
    });
}
