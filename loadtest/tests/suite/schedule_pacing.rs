//! Send scheduling: intended times on a fixed grid, catch-up after a stall that keeps every
//! message's own intended time (no coordinated omission), nothing skipped or sent twice, and
//! staggered starts spread evenly.

use mmo_loadtest::schedule::{Epoch, Pacer, Schedule, elapsed_us, stagger};
use std::time::{Duration, Instant};

const MS: Duration = Duration::from_millis(1);

#[test]
fn intended_times_are_start_plus_k_intervals() {
    let t0 = Instant::now();
    let s = Schedule::new(t0, 100 * MS);
    for k in [0u64, 1, 2, 10, 1_000, 1_000_000] {
        assert_eq!(s.intended(k), t0 + 100 * MS * k as u32);
    }
    assert_eq!(s.count_due(t0 - MS), 0);
    assert_eq!(s.count_due(t0), 1);
    assert_eq!(s.count_due(t0 + 99 * MS), 1);
    assert_eq!(s.count_due(t0 + 100 * MS), 2);
    assert_eq!(s.first_at_or_after(t0), 0);
    assert_eq!(s.first_at_or_after(t0 + MS), 1);
    assert_eq!(s.first_at_or_after(t0 + 100 * MS), 1);
    assert_eq!(s.first_at_or_after(t0 + 101 * MS), 2);
}

#[test]
fn on_time_sends_come_one_per_interval() {
    let t0 = Instant::now();
    let mut p = Pacer::new(Schedule::new(t0, 100 * MS), 5);
    assert_eq!(p.take_due(t0 - MS), None, "nothing before its time");
    assert_eq!(p.next_deadline(), Some(t0));
    assert_eq!(p.take_due(t0), Some((0, t0)));
    assert_eq!(p.take_due(t0 + 50 * MS), None);
    assert_eq!(p.next_deadline(), Some(t0 + 100 * MS));
    assert_eq!(p.take_due(t0 + 100 * MS), Some((1, t0 + 100 * MS)));
}

#[test]
fn a_stall_releases_every_overdue_message_with_its_own_intended_time() {
    let t0 = Instant::now();
    let interval = 100 * MS;
    let mut p = Pacer::new(Schedule::new(t0, interval), 100);
    assert_eq!(p.take_due(t0), Some((0, t0)));
    // The task sleeps through 350 ms: messages 1, 2 and 3 are overdue at once.
    let woke = t0 + 350 * MS;
    assert_eq!(p.behind(woke), 3);
    let mut released = Vec::new();
    while let Some(m) = p.take_due(woke) {
        released.push(m);
    }
    assert_eq!(released, vec![(1, t0 + interval), (2, t0 + 2 * interval), (3, t0 + 3 * interval)]);
    assert_eq!(p.behind(woke), 0);
    // Their latency, if acked at `woke + 1 ms`, counts from their intended times: the stall
    // shows up as 251, 151 and 51 ms, not as three 1 ms round trips.
    let acked = woke + MS;
    let rtts: Vec<u64> = released.iter().map(|(_, t)| elapsed_us(*t, acked)).collect();
    assert_eq!(rtts, vec![251_000, 151_000, 51_000]);
    // And the schedule goes on where it was: message 4 at t0 + 400 ms, not 100 ms after the
    // late sends.
    assert_eq!(p.next_deadline(), Some(t0 + 4 * interval));
}

#[test]
fn nothing_is_skipped_or_sent_twice_whatever_the_wake_ups() {
    let t0 = Instant::now();
    let mut p = Pacer::until(Schedule::new(t0, 10 * MS), t0 + 1000 * MS);
    let mut seen = Vec::new();
    // Irregular wake-ups, some long, some early.
    let mut now = t0;
    for step in [0u32, 3, 25, 1, 90, 7, 300, 2, 600] {
        now += step * MS;
        while let Some((k, t)) = p.take_due(now) {
            assert!(t <= now);
            seen.push(k);
        }
    }
    assert!(p.is_done());
    assert_eq!(seen, (0..100).collect::<Vec<u64>>(), "every message of [t0, t0+1s) exactly once, in order");
    assert_eq!(p.take_due(now + 1000 * MS), None);
}

#[test]
fn until_excludes_the_end_and_stop_ends_early() {
    let t0 = Instant::now();
    let p = Pacer::until(Schedule::new(t0, 100 * MS), t0 + 300 * MS);
    assert_eq!(p.clone().next_deadline(), Some(t0));
    let mut q = p;
    let mut n = 0;
    while q.take_due(t0 + 10_000 * MS).is_some() {
        n += 1;
    }
    assert_eq!(n, 3, "intended at 0, 100 and 200 ms; 300 ms is the end");
    let mut r = p;
    r.take_due(t0);
    r.stop();
    assert!(r.is_done());
    assert_eq!(r.take_due(t0 + 10_000 * MS), None);
    assert_eq!(r.taken(), 1);
}

#[test]
fn stagger_spreads_starts_evenly_within_the_window() {
    let window = 100 * MS;
    let n = 500;
    let offsets: Vec<Duration> = (0..n).map(|i| stagger(i, n, window)).collect();
    assert_eq!(offsets[0], Duration::ZERO);
    assert!(offsets.iter().all(|o| *o < window));
    assert!(offsets.windows(2).all(|w| w[0] < w[1]), "distinct and increasing");
    // Evenly: consecutive gaps are window / n (200 µs here).
    assert!(offsets.windows(2).all(|w| w[1] - w[0] == Duration::from_micros(200)));
    assert_eq!(stagger(3, 0, window), Duration::ZERO);
    assert_eq!(stagger(n + 1, n, window), stagger(1, n, window));
}

#[test]
fn staggered_bots_send_at_a_steady_aggregate_rate() {
    // 10 bots at 100 ms, staggered over one interval: every 10 ms one of them is due.
    let t0 = Instant::now();
    let mut pacers: Vec<Pacer> =
        (0..10).map(|i| Pacer::until(Schedule::new(t0 + stagger(i, 10, 100 * MS), 100 * MS), t0 + 1000 * MS)).collect();
    for step in 0..100u32 {
        let now = t0 + step * 10 * MS;
        let due: usize = pacers.iter_mut().map(|p| std::iter::from_fn(|| p.take_due(now)).count()).sum();
        assert_eq!(due, 1, "at {step} x 10 ms");
    }
}

#[test]
fn epoch_micros_round_trip_and_elapsed_is_at_least_one() {
    let t0 = Instant::now();
    let e = Epoch::at(t0);
    assert_eq!(e.micros(t0 + Duration::from_micros(1234)), 1234);
    assert_eq!(e.micros(t0), 0);
    assert_eq!(e.at_micros(1234), t0 + Duration::from_micros(1234));
    assert_eq!(elapsed_us(t0, t0), 1);
    assert_eq!(elapsed_us(t0 + MS, t0), 1, "a clock read out of order never gives 0 or a negative");
}
