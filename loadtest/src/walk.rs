//! The bots' random walk: each step covers exactly `speed * step` metres, turns a little at
//! random, and stays inside its area (the world, or the raid's circle), so every move passes
//! the server's movement rules (speed limit 12 m/s by default, world `[0, 4096)`).
//!
//! Why so careful: a move the engine refuses (`TooFast`, `OutOfBounds`) is a reply, not a
//! loss, but it is not the load we mean to measure, and the load tester counts refusals
//! against its loss bound. The engine's speed check runs on the server's clock (a distance
//! budget accruing 12 m/s, capped at a 3.5 m allowance): a walk well under the limit leaves
//! room for late moves sent back to back after a stall.

use crate::rng::Rng;
use std::f32::consts::PI;

/// Where a walker may go.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Area {
    /// An axis-aligned rectangle, `[min, max]` on each axis.
    Rect {
        /// Lowest x, metres.
        min_x: f32,
        /// Lowest y, metres.
        min_y: f32,
        /// Highest x, metres.
        max_x: f32,
        /// Highest y, metres.
        max_y: f32,
    },
    /// A disc.
    Circle {
        /// Centre x, metres.
        cx: f32,
        /// Centre y, metres.
        cy: f32,
        /// Radius, metres.
        r: f32,
    },
}

impl Area {
    /// The world `[0, size)` on each axis, less `margin` metres at every edge.
    pub fn world(size_m: f32, margin_m: f32) -> Area {
        Area::Rect { min_x: margin_m, min_y: margin_m, max_x: size_m - margin_m, max_y: size_m - margin_m }
    }

    /// Whether `(x, y)` is inside.
    pub fn contains(&self, x: f32, y: f32) -> bool {
        match *self {
            Area::Rect { min_x, min_y, max_x, max_y } => (min_x..=max_x).contains(&x) && (min_y..=max_y).contains(&y),
            Area::Circle { cx, cy, r } => (x - cx).hypot(y - cy) <= r,
        }
    }

    /// The centre.
    pub fn centre(&self) -> (f32, f32) {
        match *self {
            Area::Rect { min_x, min_y, max_x, max_y } => ((min_x + max_x) / 2.0, (min_y + max_y) / 2.0),
            Area::Circle { cx, cy, .. } => (cx, cy),
        }
    }

    /// A uniformly random point inside.
    pub fn random_point(&self, rng: &mut Rng) -> (f32, f32) {
        match *self {
            Area::Rect { min_x, min_y, max_x, max_y } => (rng.range_f32(min_x, max_x), rng.range_f32(min_y, max_y)),
            Area::Circle { cx, cy, r } => {
                let radius = r * (rng.unit_f64() as f32).sqrt() * 0.999;
                let angle = rng.range_f32(-PI, PI);
                (cx + radius * angle.cos(), cy + radius * angle.sin())
            }
        }
    }
}

/// One walker's position and heading.
#[derive(Clone, Debug)]
pub struct Walk {
    area: Area,
    x: f32,
    y: f32,
    heading: f32,
    step_m: f32,
}

impl Walk {
    /// A walker at a random point of `area` that moves `step_m` metres per step.
    pub fn new(area: Area, step_m: f32, rng: &mut Rng) -> Walk {
        let (x, y) = area.random_point(rng);
        Walk::at(area, (x, y), step_m, rng)
    }

    /// A walker at `start` (where the server put the player; inside `area`) that moves
    /// `step_m` metres per step.
    pub fn at(area: Area, start: (f32, f32), step_m: f32, rng: &mut Rng) -> Walk {
        Walk { area, x: start.0, y: start.1, heading: rng.range_f32(-PI, PI), step_m }
    }

    /// The current position.
    pub fn position(&self) -> (f32, f32) {
        (self.x, self.y)
    }

    /// The current heading, radians in `(-PI, PI]`.
    pub fn heading(&self) -> f32 {
        self.heading
    }

    /// Takes one step and returns the new position and facing. The step is exactly `step_m`
    /// long (so never faster than intended) and ends inside the area: a step that would leave
    /// it turns towards the centre instead.
    pub fn step(&mut self, rng: &mut Rng) -> (f32, f32, f32) {
        self.heading = wrap(self.heading + rng.range_f32(-0.35, 0.35));
        let (mut nx, mut ny) = (self.x + self.step_m * self.heading.cos(), self.y + self.step_m * self.heading.sin());
        if !self.area.contains(nx, ny) {
            let (cx, cy) = self.area.centre();
            self.heading = wrap((cy - self.y).atan2(cx - self.x) + rng.range_f32(-0.5, 0.5));
            nx = self.x + self.step_m * self.heading.cos();
            ny = self.y + self.step_m * self.heading.sin();
            if !self.area.contains(nx, ny) {
                // Near the centre of a tiny area: stand still rather than step outside.
                return (self.x, self.y, self.heading);
            }
        }
        self.x = nx;
        self.y = ny;
        (nx, ny, self.heading)
    }
}

fn wrap(a: f32) -> f32 {
    let mut a = a % (2.0 * PI);
    if a > PI {
        a -= 2.0 * PI;
    } else if a <= -PI {
        a += 2.0 * PI;
    }
    a
}
