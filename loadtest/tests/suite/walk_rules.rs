//! The bots' random walk obeys the server's movement rules: every step is exactly the
//! configured length (speed x interval, under the 12 m/s limit) and ends inside its area.

use mmo_loadtest::rng::Rng;
use mmo_loadtest::walk::{Area, Walk};
use proptest::prelude::*;

fn check(area: Area, step_m: f32, seed: u64, steps: usize) -> Result<(), TestCaseError> {
    let mut rng = Rng::new(seed);
    let mut w = Walk::new(area, step_m, &mut rng);
    let (mut x, mut y) = w.position();
    prop_assert!(area.contains(x, y), "starts inside: {x} {y}");
    for _ in 0..steps {
        let (nx, ny, facing) = w.step(&mut rng);
        let d = (nx - x).hypot(ny - y);
        prop_assert!(d <= step_m * 1.0001 + 1e-3, "step {d} longer than {step_m}");
        prop_assert!(area.contains(nx, ny), "left the area: {nx} {ny}");
        prop_assert!(facing.is_finite() && nx.is_finite() && ny.is_finite());
        (x, y) = (nx, ny);
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn walks_in_the_world_stay_inside_and_under_the_speed(seed in any::<u64>(), speed in 0.5f32..11.9) {
        // 100 ms per step, as the bots move.
        check(Area::world(4096.0, 1.0), speed * 0.1, seed, 2_000)?;
    }

    #[test]
    fn walks_in_a_small_world_bounce_off_every_edge(seed in any::<u64>()) {
        check(Area::world(20.0, 1.0), 0.8, seed, 5_000)?;
    }

    #[test]
    fn walks_in_the_raid_circle_stay_inside(seed in any::<u64>(), r in 5.0f32..200.0) {
        check(Area::Circle { cx: 2048.0, cy: 2048.0, r }, 0.8, seed, 3_000)?;
    }
}

#[test]
fn default_walk_is_well_under_the_server_limit() {
    // 8 m/s for 100 ms is 0.8 m a step; the server allows 12 m/s * 0.1 s + 0.5 m slack.
    let step = 8.0f32 * 0.1;
    assert!(step < 12.0 * 0.1 + 0.5);
}
