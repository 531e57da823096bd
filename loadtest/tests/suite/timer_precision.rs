//! The driver threads' precision logic, without a clock: the send grid, the deadline queue
//! and the wake-up tuner (what it plans and what it learns). Timings are measured in runs
//! and reports, never asserted here.

use mmo_loadtest::net::ArrivalClock;
use mmo_loadtest::schedule::stagger;
use mmo_loadtest::timer::{Deadlines, SendGrid, Wait, WakeTuner};
use proptest::prelude::*;
use std::time::{Duration, Instant};

const US: Duration = Duration::from_micros(1);

#[test]
fn grid_rounds_up_onto_its_points_and_leaves_points_alone() {
    let t0 = Instant::now();
    let g = SendGrid::new(t0, Duration::from_millis(1));
    assert_eq!(g.round_up(t0), t0);
    assert_eq!(g.round_up(t0 - Duration::from_secs(1)), t0, "before the origin is the origin");
    assert_eq!(g.round_up(t0 + US), t0 + Duration::from_millis(1));
    assert_eq!(g.round_up(t0 + Duration::from_millis(3)), t0 + Duration::from_millis(3));
    assert_eq!(g.round_up(t0 + Duration::from_micros(3001)), t0 + Duration::from_millis(4));
    assert_eq!(g.floor_offset(Duration::from_micros(2999)), Duration::from_millis(2));
}

proptest! {
    #[test]
    fn grid_round_up_is_the_nearest_point_at_or_after(tick_us in 1u64..5_000, off_ns in 0u64..10_000_000_000) {
        let t0 = Instant::now();
        let g = SendGrid::new(t0, Duration::from_micros(tick_us));
        let t = t0 + Duration::from_nanos(off_ns);
        let r = g.round_up(t);
        prop_assert!(r >= t);
        prop_assert!(r - t < Duration::from_micros(tick_us));
        prop_assert_eq!((r - t0).as_nanos() % u128::from(tick_us * 1000), 0);
    }

    /// Staggered offsets snapped to the grid stay within one interval and fill it evenly:
    /// no grid point gets more than its share plus one.
    #[test]
    fn staggered_offsets_on_the_grid_share_points_evenly(bots in 1usize..5_000, interval_ms in 10u64..1_000) {
        let t0 = Instant::now();
        let tick = Duration::from_millis(1);
        let g = SendGrid::new(t0, tick);
        let interval = Duration::from_millis(interval_ms);
        let mut per_point = vec![0usize; interval_ms as usize];
        for i in 0..bots {
            let off = g.floor_offset(stagger(i, bots, interval));
            prop_assert!(off < interval);
            prop_assert_eq!(off.as_nanos() % tick.as_nanos(), 0);
            per_point[(off.as_millis()) as usize] += 1;
        }
        let share = bots.div_ceil(interval_ms as usize);
        prop_assert!(per_point.iter().all(|&n| n <= share + 1), "{per_point:?}");
    }
}

#[test]
fn deadlines_come_out_earliest_first_and_only_when_due() {
    let t0 = Instant::now();
    let mut d = Deadlines::new(t0, 4);
    d.set(0, Some(t0 + 30 * US));
    d.set(1, Some(t0 + 10 * US));
    d.set(2, Some(t0 + 20 * US));
    d.set(3, None);
    assert_eq!(d.earliest(), Some(t0 + 10 * US));
    assert_eq!(d.pop_due(t0 + 5 * US), None, "nothing is due before its time");
    assert_eq!(d.pop_due(t0 + 25 * US), Some(1));
    assert_eq!(d.pop_due(t0 + 25 * US), Some(2));
    assert_eq!(d.pop_due(t0 + 25 * US), None);
    assert_eq!(d.pop_due(t0 + 30 * US), Some(0), "due exactly at its deadline");
    assert_eq!(d.earliest(), None);
}

#[test]
fn a_rescheduled_slot_fires_once_at_its_new_time() {
    let t0 = Instant::now();
    let mut d = Deadlines::new(t0, 2);
    d.set(0, Some(t0 + 10 * US));
    d.set(0, Some(t0 + 50 * US)); // later: the old entry is stale
    d.set(1, Some(t0 + 20 * US));
    assert_eq!(d.pop_due(t0 + 40 * US), Some(1));
    assert_eq!(d.pop_due(t0 + 40 * US), None, "the stale 10 µs entry must not fire slot 0");
    d.set(1, Some(t0 + 60 * US));
    d.set(1, Some(t0 + 45 * US)); // earlier
    assert_eq!(d.pop_due(t0 + 100 * US), Some(1));
    assert_eq!(d.pop_due(t0 + 100 * US), Some(0));
    assert_eq!(d.pop_due(t0 + 100 * US), None, "each slot fires once per setting");
    d.set(0, Some(t0 + 70 * US));
    d.set(0, None);
    assert_eq!(d.pop_due(t0 + 200 * US), None, "a cleared slot never fires");
}

#[test]
fn stale_entries_stay_bounded_when_a_slot_keeps_moving() {
    let t0 = Instant::now();
    let slots = 8;
    let mut d = Deadlines::new(t0, slots);
    for k in 0..100_000u32 {
        d.set((k % 2) as usize, Some(t0 + Duration::from_micros(u64::from(1_000_000 - k))));
        assert!(d.heap_len() <= slots * 4 + 64 + 1, "heap grew to {}", d.heap_len());
    }
    assert_eq!(d.pop_due(t0 + Duration::from_secs(2)), Some(1));
    assert_eq!(d.pop_due(t0 + Duration::from_secs(2)), Some(0));
    assert_eq!(d.pop_due(t0 + Duration::from_secs(2)), None);
}

proptest! {
    /// Against a plain model: whatever the settings, slots come out in deadline order, each
    /// once, exactly those with a live deadline at or before the time asked.
    #[test]
    fn deadlines_match_a_model(ops in prop::collection::vec((0usize..16, prop::option::of(0u64..1000)), 1..300), at in 0u64..1200) {
        let t0 = Instant::now();
        let mut d = Deadlines::new(t0, 16);
        let mut model: [Option<u64>; 16] = [None; 16];
        for (slot, when) in ops {
            d.set(slot, when.map(|us| t0 + Duration::from_micros(us)));
            model[slot] = when;
        }
        let now = t0 + Duration::from_micros(at);
        let mut got = Vec::new();
        while let Some(s) = d.pop_due(now) {
            got.push(s);
        }
        let mut want: Vec<(u64, usize)> = model.iter().enumerate().filter_map(|(s, w)| w.filter(|&w| w <= at).map(|w| (w, s))).collect();
        want.sort();
        let got_times: Vec<u64> = got.iter().map(|&s| model[s].unwrap()).collect();
        prop_assert_eq!(got_times, want.iter().map(|w| w.0).collect::<Vec<_>>());
        let mut got_sorted = got.clone();
        got_sorted.sort_unstable();
        got_sorted.dedup();
        prop_assert_eq!(got_sorted.len(), got.len(), "a slot came out twice");
    }
}

#[test]
fn tuner_sleeps_far_from_a_deadline_and_spins_near_it() {
    let t = WakeTuner::new(2 * US, 200 * US);
    let now = Instant::now();
    let margin = t.margin();
    assert!(margin >= 2 * US && margin <= 200 * US);
    assert_eq!(t.plan(now, now), Wait::Due);
    assert_eq!(t.plan(now, now - US), Wait::Due);
    assert_eq!(t.plan(now, now + margin), Wait::Spin);
    assert_eq!(t.plan(now, now + Duration::from_millis(1)), Wait::Sleep(Duration::from_millis(1) - margin));
}

#[test]
fn tuner_learns_how_late_wake_ups_are() {
    let mut t = WakeTuner::new(2 * US, 500 * US);
    let t0 = Instant::now();
    for _ in 0..200 {
        t.observe(t0, t0 + 80 * US);
    }
    let m = t.margin();
    assert!(m >= 78 * US && m <= 90 * US, "steady 80 µs lateness gives a margin near 80 µs, got {m:?}");
    for _ in 0..200 {
        t.observe(t0, t0 + 5 * US);
    }
    let m = t.margin();
    assert!(m <= 10 * US, "a timer that became punctual shrinks the margin, got {m:?}");
}

#[test]
fn tuner_margin_widens_with_jitter_and_stays_within_its_bounds() {
    let t0 = Instant::now();
    let mut steady = WakeTuner::new(2 * US, 300 * US);
    let mut jittery = WakeTuner::new(2 * US, 300 * US);
    for i in 0..400u64 {
        steady.observe(t0, t0 + 50 * US);
        jittery.observe(t0, t0 + if i % 2 == 0 { 10 * US } else { 90 * US });
    }
    assert!(jittery.margin() > steady.margin(), "same mean, more jitter, wider margin");
    let mut capped = WakeTuner::new(2 * US, 100 * US);
    for _ in 0..100 {
        capped.observe(t0, t0 + Duration::from_millis(5));
    }
    assert_eq!(capped.margin(), 100 * US, "the spin never exceeds its cap");
    let mut floor = WakeTuner::new(20 * US, 100 * US);
    for _ in 0..100 {
        floor.observe(t0, t0);
    }
    assert_eq!(floor.margin(), 20 * US, "never less than the minimum");
}

#[test]
fn tuner_ignores_a_machine_stall() {
    let t0 = Instant::now();
    let mut t = WakeTuner::new(2 * US, 300 * US);
    for _ in 0..100 {
        t.observe(t0, t0 + 30 * US);
    }
    let before = t.margin();
    t.observe(t0, t0 + Duration::from_secs(3));
    assert_eq!(t.margin(), before, "a 3 s stall is not the timer's habit");
}

#[test]
fn arrival_is_placed_by_its_age_on_the_wall_clock() {
    let now = Instant::now();
    let wall = Duration::from_secs(1_800_000_000);
    let c = ArrivalClock::at(now, wall);
    assert_eq!(c.arrival(Some(wall - Duration::from_micros(250))), now - Duration::from_micros(250));
    assert_eq!(c.arrival(None), now, "no stamp: the time it was read");
    assert_eq!(c.arrival(Some(wall + Duration::from_secs(2))), now, "a stamp from the future (clock step) is not trusted");
}
