//! The driver's read pass ([`ReadyQueue`]): what `epoll` reported is read exactly once, even
//! when a pass runs out of time before the next send (edge-triggered `epoll` would not report
//! those sockets again), and a pass always ends. Logic only: the refills are scripted, no
//! socket and no clock.

use mmo_loadtest::driver::{NextSocket, READY_BATCH, ReadyQueue};
use std::io;

/// A refill that hands out `n` fresh tokens counting up from `*counter`.
fn fresh(counter: &mut u64, n: usize) -> impl FnOnce(&mut [u64; READY_BATCH]) -> io::Result<usize> + '_ {
    move |batch| {
        for slot in batch.iter_mut().take(n) {
            *slot = *counter;
            *counter += 1;
        }
        Ok(n)
    }
}

fn no_refill(_: &mut [u64; READY_BATCH]) -> io::Result<usize> {
    panic!("asked epoll again while sockets it reported were still unread")
}

#[test]
fn sockets_a_pass_had_no_time_for_are_read_by_the_next_without_asking_epoll_again() {
    let mut q = ReadyQueue::new();
    let mut counter = 0;
    q.begin_pass();
    assert_eq!(q.next(fresh(&mut counter, READY_BATCH)), NextSocket::Read(0));
    for t in 1..10 {
        assert_eq!(q.next(no_refill), NextSocket::Read(t));
    }
    // Out of time: the pass stops here, with the rest of the batch kept.
    assert_eq!(q.kept(), READY_BATCH - 10);
    q.begin_pass();
    for t in 10..READY_BATCH as u64 {
        assert_eq!(q.next(no_refill), NextSocket::Read(t));
    }
    // That batch was whole, so more may be ready: epoll is asked again.
    assert_eq!(q.next(fresh(&mut counter, 3)), NextSocket::Read(64));
    assert_eq!(q.next(no_refill), NextSocket::Read(65));
    assert_eq!(q.next(no_refill), NextSocket::Read(66));
    // A batch short of whole: nothing else was ready, the pass is done without asking.
    assert_eq!(q.next(no_refill), NextSocket::Done);
    assert_eq!(q.kept(), 0);
}

#[test]
fn a_pass_with_nothing_ready_is_done_and_a_failure_is_reported() {
    let mut q = ReadyQueue::new();
    let mut counter = 0;
    q.begin_pass();
    assert_eq!(q.next(fresh(&mut counter, 0)), NextSocket::Done);
    q.begin_pass();
    assert_eq!(q.next(|_| Err(io::Error::other("epoll_wait failed"))), NextSocket::Failed);
    assert_eq!(q.kept(), 0);
}

#[test]
fn a_socket_set_that_never_empties_still_ends_the_pass_and_loses_nothing() {
    let mut q = ReadyQueue::new();
    let mut counter = 0;
    let mut read = Vec::new();
    for pass in 0..3 {
        q.begin_pass();
        let mut turns = 0;
        loop {
            turns += 1;
            assert!(turns <= READY_BATCH * 8, "pass {pass} did not end");
            match q.next(fresh(&mut counter, READY_BATCH)) {
                NextSocket::Read(t) => read.push(t),
                NextSocket::Bound => break,
                other => panic!("pass {pass}: {other:?}"),
            }
        }
        assert_eq!(read.len(), READY_BATCH * ReadyQueue::REFILLS_PER_PASS as usize * (pass + 1));
    }
    // Every token handed out was read, once, in order.
    assert_eq!(read, (0..counter).collect::<Vec<_>>());
}

#[test]
fn a_pass_that_ran_out_of_time_mid_batch_reads_the_rest_then_asks_for_more() {
    // Interleave passes that stop after k reads (k = 1..=7): every token is read exactly once.
    let mut q = ReadyQueue::new();
    let mut counter = 0;
    let mut read = Vec::new();
    for k in (1..=7).cycle().take(200) {
        q.begin_pass();
        for _ in 0..k {
            match q.next(fresh(&mut counter, 40)) {
                NextSocket::Read(t) => read.push(t),
                NextSocket::Done => break,
                other => panic!("{other:?}"),
            }
        }
    }
    let kept = q.kept() as u64;
    assert_eq!(read.len() as u64 + kept, counter);
    assert_eq!(read, (0..read.len() as u64).collect::<Vec<_>>());
}
