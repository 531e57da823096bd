//! Raid windows split move round trips into during-raid and between-raids by overlap, and
//! the burst summary's spawn-time median and max.

use mmo_loadtest::raid::{Burst, RaidSummary, RaidWindows, STATUS_CAPACITY};

#[test]
fn a_move_overlapping_a_window_counts_as_during_the_raid() {
    let w = RaidWindows::default();
    assert!(!w.overlaps(0, u64::MAX - 1), "no window yet");
    w.begin(0, 1_000);
    // Open window: everything from its start on overlaps.
    assert!(w.overlaps(1_500, 1_600));
    assert!(w.overlaps(900, 1_000), "acked at the trigger's send");
    assert!(!w.overlaps(100, 999), "acked before the trigger");
    w.finish(0, 5_000);
    assert!(w.overlaps(4_000, 9_000), "sent inside, acked after");
    assert!(w.overlaps(500, 9_000), "a long wait across the whole window");
    assert!(!w.overlaps(5_001, 6_000), "after the window");
    // Later bursts keep earlier windows until the slot is reused.
    w.begin(1, 10_000);
    w.finish(1, 12_000);
    assert!(w.overlaps(4_500, 4_600) && w.overlaps(11_000, 11_000));
    assert!(!w.overlaps(6_000, 9_999));
    for n in 2..6 {
        w.begin(n, 20_000 * n);
        w.finish(n, 20_000 * n + 1_000);
    }
    assert!(!w.overlaps(4_500, 4_600), "window 0's slot was reused");
}

fn burst(status: Option<u32>, spawned: u32, spawn_ms: Option<f64>) -> Burst {
    Burst { request_id: 1, sent_at_ms: 0.0, round_trip_ms: spawn_ms, status, spawned, cells: 16, spawn_ms }
}

#[test]
fn spawn_summary_uses_successful_bursts() {
    let s = RaidSummary::new(
        vec![
            burst(Some(0), 100, Some(0.4)),
            burst(Some(0), 100, Some(0.9)),
            burst(Some(0), 100, Some(0.5)),
            burst(None, 0, None),
            burst(Some(1004), 0, Some(0.0)),
        ],
        100,
    );
    assert_eq!((s.triggers, s.results, s.failed, s.refused_capacity), (5, 4, 1, 0));
    assert_eq!(s.spawn_ms.median, 0.5);
    assert_eq!(s.spawn_ms.max, 0.9);
    let even = RaidSummary::new(vec![burst(Some(0), 100, Some(1.0)), burst(Some(0), 90, Some(2.0))], 100);
    assert_eq!(even.spawn_ms.median, 1.5);
    assert_eq!(even.failed, 1, "a short burst is a failure");
    assert_eq!(RaidSummary::new(Vec::new(), 1).spawn_ms.max, 0.0);
}

#[test]
fn bursts_refused_for_capacity_are_failures_named_as_such() {
    let s =
        RaidSummary::new(vec![burst(Some(0), 100, Some(0.4)), burst(Some(STATUS_CAPACITY), 0, Some(0.0)), burst(Some(1005), 0, None)], 100);
    assert_eq!((s.failed, s.refused_capacity), (2, 1));
    let checks = mmo_loadtest::checks::raid(&s);
    let complete = checks.iter().find(|c| c.name == "raid_spawns_complete").expect("the check");
    assert!(!complete.passed);
    assert!(complete.detail.contains("1 of them refused as past the server's raid capacity"), "{}", complete.detail);
}
