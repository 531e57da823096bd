//! When each message is meant to go out, so latency is measured without coordinated omission.
//!
//! A bot does not "send, wait, send again": message `k` is *intended* for
//! `start + k * interval`, whatever happened before it. If the bot's task falls behind (the
//! machine stalled, the runtime was busy), [`Pacer::take_due`] hands out every message whose
//! intended time has passed, each with its own intended time, and the round trip is measured
//! from that time, not from when the late send actually happened. A stall therefore shows up
//! in the latency distribution as the long waits it caused, instead of silently thinning the
//! samples (the "coordinated omission" a closed-loop tester suffers). Nothing is skipped: a
//! late message is sent late, never dropped.
//!
//! [`stagger`] spreads the bots' schedules (and joins) evenly over one interval, so 500 bots
//! at 10 Hz send a steady 5,000 messages a second instead of 500 at once every 100 ms.

use std::time::{Duration, Instant};

/// The run's time zero. Times shared between tasks (raid windows) are microseconds since it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Epoch(Instant);

impl Epoch {
    /// An epoch at `start`.
    pub fn at(start: Instant) -> Epoch {
        Epoch(start)
    }

    /// The epoch's instant.
    pub fn instant(self) -> Instant {
        self.0
    }

    /// Microseconds from the epoch to `t` (0 if `t` is earlier).
    pub fn micros(self, t: Instant) -> u64 {
        u64::try_from(t.saturating_duration_since(self.0).as_micros()).unwrap_or(u64::MAX)
    }

    /// The instant `us` microseconds after the epoch.
    pub fn at_micros(self, us: u64) -> Instant {
        self.0 + Duration::from_micros(us)
    }
}

/// Microseconds from `from` to `to`, at least 1 (a histogram records values from 1), and 0 is
/// never reported for a reply that did arrive.
pub fn elapsed_us(from: Instant, to: Instant) -> u64 {
    u64::try_from(to.saturating_duration_since(from).as_micros()).unwrap_or(u64::MAX).max(1)
}

/// A fixed-rate schedule: message `k` is intended for `start + k * interval`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Schedule {
    start: Instant,
    interval: Duration,
}

impl Schedule {
    /// A schedule from `start` every `interval` (at least 1 µs).
    pub fn new(start: Instant, interval: Duration) -> Schedule {
        Schedule { start, interval: interval.max(Duration::from_micros(1)) }
    }

    /// The intended time of message 0.
    pub fn start(&self) -> Instant {
        self.start
    }

    /// Time between intended sends.
    pub fn interval(&self) -> Duration {
        self.interval
    }

    /// The intended send time of message `k`.
    pub fn intended(&self, k: u64) -> Instant {
        let nanos = self.interval.as_nanos().saturating_mul(u128::from(k));
        self.start + Duration::from_nanos(u64::try_from(nanos).unwrap_or(u64::MAX))
    }

    /// The number of messages whose intended time is at or before `now`.
    pub fn count_due(&self, now: Instant) -> u64 {
        if now < self.start {
            return 0;
        }
        let since = now.duration_since(self.start).as_nanos();
        u64::try_from(since / self.interval.as_nanos() + 1).unwrap_or(u64::MAX)
    }

    /// The first message whose intended time is at or after `t`.
    pub fn first_at_or_after(&self, t: Instant) -> u64 {
        if t <= self.start {
            return 0;
        }
        let since = t.duration_since(self.start).as_nanos();
        let step = self.interval.as_nanos();
        u64::try_from(since.div_ceil(step)).unwrap_or(u64::MAX)
    }
}

/// Hands out the messages of a [`Schedule`] in order, each once, from `next` up to (not
/// including) `end`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Pacer {
    schedule: Schedule,
    next: u64,
    end: u64,
}

impl Pacer {
    /// Messages `0..end` of `schedule`.
    pub fn new(schedule: Schedule, end: u64) -> Pacer {
        Pacer { schedule, next: 0, end }
    }

    /// Every message of `schedule` intended before `end_time`.
    pub fn until(schedule: Schedule, end_time: Instant) -> Pacer {
        Pacer::new(schedule, schedule.first_at_or_after(end_time))
    }

    /// The schedule.
    pub fn schedule(&self) -> &Schedule {
        &self.schedule
    }

    /// The index of the next message to send.
    pub fn next_index(&self) -> u64 {
        self.next
    }

    /// How many messages have been handed out.
    pub fn taken(&self) -> u64 {
        self.next
    }

    /// The intended time of the next message, or `None` once all have been handed out.
    pub fn next_deadline(&self) -> Option<Instant> {
        (self.next < self.end).then(|| self.schedule.intended(self.next))
    }

    /// The next message and its intended time, if that time is at or before `now`. Call in a
    /// loop: after a stall it returns every overdue message, oldest first, each with its own
    /// intended time.
    pub fn take_due(&mut self, now: Instant) -> Option<(u64, Instant)> {
        let deadline = self.next_deadline()?;
        if deadline > now {
            return None;
        }
        let k = self.next;
        self.next += 1;
        Some((k, deadline))
    }

    /// How many messages are overdue at `now` (intended at or before it, not yet handed out).
    pub fn behind(&self, now: Instant) -> u64 {
        self.schedule.count_due(now).min(self.end).saturating_sub(self.next)
    }

    /// Whether every message has been handed out.
    pub fn is_done(&self) -> bool {
        self.next >= self.end
    }

    /// Messages not handed out yet.
    pub fn left(&self) -> u64 {
        self.end.saturating_sub(self.next)
    }

    /// Hands out nothing more (an early stop).
    pub fn stop(&mut self) {
        self.end = self.next;
    }
}

/// The offset of participant `index` of `count` when their starts are spread evenly over
/// `window`: `index * window / count`, so offsets are distinct (while `window` has at least
/// `count` nanoseconds) and all lie in `[0, window)`.
pub fn stagger(index: usize, count: usize, window: Duration) -> Duration {
    if count == 0 {
        return Duration::ZERO;
    }
    let nanos = window.as_nanos() * (index % count) as u128 / count as u128;
    Duration::from_nanos(u64::try_from(nanos).unwrap_or(u64::MAX))
}
