//! Loom model of [`mmo_core::tick::TickBoard`]'s sequence lock: a reader racing the tick's
//! writes always gets every field from one publication, never a mix.
//!
//! Run: `RUSTFLAGS="--cfg mmo_loom" cargo test -p mmo-core --release --test loom -- tick_board::`

use loom::sync::Arc;
use loom::thread;
use mmo_core::tick::{TickBoard, TickInfo};

fn info(tick: u32) -> TickInfo {
    TickInfo {
        tick,
        now_ms: u64::from(tick) * 50,
        players_live: tick * 3,
        objects_live: tick * 5,
        objects_expired: tick * 7,
        bursts_live: tick * 11,
        snapshot_entities: tick * 13,
    }
}

#[test]
fn readers_see_whole_publications() {
    let mut builder = loom::model::Builder::new();
    // The reader's retry loop yields; bound the exploration so the model finishes quickly.
    builder.preemption_bound = Some(3);
    builder.check(|| {
        let board = Arc::new(TickBoard::new());
        board.publish(&info(1));
        let writer_board = board.clone();
        let writer = thread::spawn(move || {
            writer_board.publish(&info(2));
            writer_board.publish(&info(3));
        });
        let seen = board.read();
        assert!(seen == info(1) || seen == info(2) || seen == info(3), "torn read: {seen:?}");
        writer.join().unwrap();
        assert_eq!(board.read(), info(3));
        assert_eq!(board.current_tick(), 3);
    });
}
