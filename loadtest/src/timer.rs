//! When a bot driver thread next has something to do, and how it wakes up on time for it.
//!
//! The precision the load tester promises (a move goes out within tens of microseconds of its
//! intended time, at thousands of bots) rests on three pieces, each here and each testable
//! without a clock:
//!
//! - [`SendGrid`]: intended send times fall on a grid of `tick` (1 ms by default). A thread
//!   wakes once per tick that has work and sends every move intended for it, instead of once
//!   per move: 2,000 bots at 10 Hz are 20,000 moves a second but only 1,000 wake-ups. The
//!   intended times stay exact (they *are* the grid points), so nothing is rounded in the
//!   figures; what a shared tick costs is the time to send the moves before the last one,
//!   and that lateness is measured (`send_lag`).
//! - [`Deadlines`]: each bot's next wake-up in a min-heap keyed by nanoseconds, one live entry
//!   per bot (rescheduling leaves the old entry behind as stale, skipped when it surfaces).
//!   tokio's timer wheel rounds every sleep up to a whole millisecond; this does not round.
//! - [`WakeTuner`]: the kernel wakes a sleeping thread some tens of microseconds late (timer
//!   interrupt, scheduler, a VM's virtual timer). The tuner learns how late, the way TCP
//!   learns a retransmission timeout (smoothed mean plus four mean deviations), sleeps until
//!   that much before the deadline, and spins the last stretch. The spin is capped, so a
//!   badly late wake-up costs lateness, not a core.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::time::{Duration, Instant};

/// Intended send times on a grid: `origin + n * tick`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SendGrid {
    origin: Instant,
    tick: Duration,
}

impl SendGrid {
    /// A grid from `origin` every `tick` (at least 1 µs).
    pub fn new(origin: Instant, tick: Duration) -> SendGrid {
        SendGrid { origin, tick: tick.max(Duration::from_micros(1)) }
    }

    /// The first grid point at or after `t` (the origin for anything earlier).
    pub fn round_up(&self, t: Instant) -> Instant {
        if t <= self.origin {
            return self.origin;
        }
        let since = t.duration_since(self.origin).as_nanos();
        let tick = self.tick.as_nanos();
        let ticks = since.div_ceil(tick);
        self.origin + Duration::from_nanos(u64::try_from(ticks * tick).unwrap_or(u64::MAX))
    }

    /// `offset` rounded down to a whole number of ticks.
    pub fn floor_offset(&self, offset: Duration) -> Duration {
        let tick = self.tick.as_nanos();
        Duration::from_nanos(u64::try_from(offset.as_nanos() / tick * tick).unwrap_or(u64::MAX))
    }
}

/// Every bot's next wake-up, earliest first. Slots are bot indices within one thread.
#[derive(Debug)]
pub struct Deadlines {
    base: Instant,
    heap: BinaryHeap<Reverse<(u64, u32)>>,
    /// The live deadline of each slot (ns since `base`), `None` when it has none.
    live: Vec<Option<u64>>,
}

impl Deadlines {
    /// A queue for `slots` bots, measuring time from `base` (deadlines before it count as
    /// `base`).
    pub fn new(base: Instant, slots: usize) -> Deadlines {
        assert!(u32::try_from(slots).is_ok(), "at most u32::MAX slots");
        Deadlines { base, heap: BinaryHeap::with_capacity(slots * 2 + 16), live: vec![None; slots] }
    }

    fn key(&self, t: Instant) -> u64 {
        u64::try_from(t.saturating_duration_since(self.base).as_nanos()).unwrap_or(u64::MAX)
    }

    fn instant(&self, key: u64) -> Instant {
        self.base + Duration::from_nanos(key)
    }

    /// Sets `slot`'s next wake-up to `at` (replacing any earlier setting), or clears it.
    pub fn set(&mut self, slot: usize, at: Option<Instant>) {
        let key = at.map(|t| self.key(t));
        if self.live[slot] == key {
            return;
        }
        self.live[slot] = key;
        if let Some(k) = key {
            self.heap.push(Reverse((k, slot as u32)));
        }
        // Stale entries are dropped as they surface; bound them anyway so a bot that keeps
        // moving its deadline cannot grow the heap without limit.
        if self.heap.len() > self.live.len() * 4 + 64 {
            self.compact();
        }
        debug_assert!(self.heap.len() >= self.live.iter().filter(|k| k.is_some()).count());
    }

    fn compact(&mut self) {
        let live = &self.live;
        self.heap = live.iter().enumerate().filter_map(|(i, k)| k.map(|k| Reverse((k, i as u32)))).collect();
    }

    fn drop_stale(&mut self) {
        while let Some(Reverse((k, slot))) = self.heap.peek().copied() {
            if self.live[slot as usize] == Some(k) {
                return;
            }
            self.heap.pop();
        }
    }

    /// The earliest live deadline.
    pub fn earliest(&mut self) -> Option<Instant> {
        self.drop_stale();
        self.heap.peek().map(|Reverse((k, _))| self.instant(*k))
    }

    /// A slot whose deadline is at or before `now`, earliest first; its deadline is cleared
    /// (set it again after serving it).
    pub fn pop_due(&mut self, now: Instant) -> Option<usize> {
        self.drop_stale();
        let now_key = self.key(now);
        let Reverse((k, slot)) = *self.heap.peek()?;
        if k > now_key {
            return None;
        }
        self.heap.pop();
        self.live[slot as usize] = None;
        Some(slot as usize)
    }

    /// Entries in the heap, live and stale (for the bound's tests).
    pub fn heap_len(&self) -> usize {
        self.heap.len()
    }
}

/// What to do to be awake at a deadline.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Wait {
    /// The deadline has passed: act now.
    Due,
    /// Sleep this long, then ask again.
    Sleep(Duration),
    /// Close enough: spin until the deadline.
    Spin,
}

/// Learns how late the kernel wakes this thread and plans sleeps to end that much early.
#[derive(Clone, Debug)]
pub struct WakeTuner {
    /// Smoothed oversleep, ns.
    mean_ns: f64,
    /// Smoothed mean deviation of the oversleep, ns.
    deviation_ns: f64,
    min_margin: Duration,
    max_spin: Duration,
}

impl WakeTuner {
    /// A tuner that ends sleeps at least `min_margin` early and never plans to spin longer
    /// than `max_spin`. It starts from a guess of 50 µs late (a VM's typical wake-up).
    pub fn new(min_margin: Duration, max_spin: Duration) -> WakeTuner {
        let max_spin = max_spin.max(min_margin);
        WakeTuner { mean_ns: 50_000.0, deviation_ns: 10_000.0, min_margin, max_spin }
    }

    /// How early before a deadline a sleep ends: mean oversleep plus four deviations,
    /// within `[min_margin, max_spin]`.
    pub fn margin(&self) -> Duration {
        let ns = (self.mean_ns + 4.0 * self.deviation_ns).max(0.0) as u64;
        Duration::from_nanos(ns).clamp(self.min_margin, self.max_spin)
    }

    /// What to do at `now` to be awake at `deadline`.
    pub fn plan(&self, now: Instant, deadline: Instant) -> Wait {
        if deadline <= now {
            return Wait::Due;
        }
        let left = deadline - now;
        let margin = self.margin();
        if left <= margin { Wait::Spin } else { Wait::Sleep(left - margin) }
    }

    /// A sleep meant to end at `planned` ended at `woke`: learn from it (α = 1/8, β = 1/4,
    /// as RFC 6298 does for round trips). A wake-up more than a second late is a stall of
    /// the whole machine, not the timer's habit, and is not learned from.
    pub fn observe(&mut self, planned: Instant, woke: Instant) {
        let late = woke.saturating_duration_since(planned);
        if late > Duration::from_secs(1) {
            return;
        }
        let sample = late.as_nanos() as f64;
        self.deviation_ns += ((sample - self.mean_ns).abs() - self.deviation_ns) / 4.0;
        self.mean_ns += (sample - self.mean_ns) / 8.0;
    }
}
