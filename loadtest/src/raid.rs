//! The raid scenario's admin side: a `RAID_TRIGGER` every `--raid-every`, the spawn time each
//! `RAID_RESULT` reports, and the "raid windows" that split the players' move round trips
//! into during-raid and between-raids.
//!
//! A raid window runs from the trigger's send until `window_after` (default 1 s) after its
//! result arrived: the burst itself, then the tick that expires nothing yet but serves the
//! larger snapshots. A move counts as during a raid when its life, from its intended send time
//! to its ack, overlaps any window, so a move queued just before a burst and held up by it is
//! charged to the burst. The windows live in a few atomics the admin task writes and every
//! bot reads (no lock; a reader that catches a slot mid-update just skips it).

use crate::admin::{AdminClient, AdminError};
use crate::protocol::{EntityKind, RaidTrigger};
use crate::schedule::{Epoch, Pacer, Schedule};
use serde::Serialize;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// The raid scenario's settings.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RaidPlan {
    /// Time between triggers.
    pub every: Duration,
    /// Objects per burst.
    pub objects: u32,
    /// Their lifetime, milliseconds.
    pub lifetime_ms: u32,
    /// The raid's centre, metres.
    pub center_x_m: f32,
    /// The raid's centre, metres.
    pub center_y_m: f32,
    /// Objects spawn in the square of this half side around the centre.
    pub half_extent_m: f32,
    /// Players spawn and walk within this radius of the centre.
    pub player_radius_m: f32,
    /// The window stays open this long after the result.
    pub window_after: Duration,
    /// Wait this long for a result before counting the burst lost.
    pub result_timeout: Duration,
}

const SLOTS: usize = 4;
const UNUSED: u64 = u64::MAX;

/// The last few raid windows, in microseconds since the run's [`Epoch`].
pub struct RaidWindows {
    starts: [AtomicU64; SLOTS],
    ends: [AtomicU64; SLOTS],
}

impl Default for RaidWindows {
    fn default() -> Self {
        RaidWindows { starts: std::array::from_fn(|_| AtomicU64::new(UNUSED)), ends: std::array::from_fn(|_| AtomicU64::new(UNUSED)) }
    }
}

impl RaidWindows {
    /// Opens window `n` at `start_us`; it stays open until [`Self::finish`].
    pub fn begin(&self, n: u64, start_us: u64) {
        let slot = (n % SLOTS as u64) as usize;
        self.starts[slot].store(UNUSED, Ordering::Release);
        self.ends[slot].store(u64::MAX, Ordering::Release);
        self.starts[slot].store(start_us.min(UNUSED - 1), Ordering::Release);
    }

    /// Closes window `n` at `end_us`.
    pub fn finish(&self, n: u64, end_us: u64) {
        self.ends[(n % SLOTS as u64) as usize].store(end_us, Ordering::Release);
    }

    /// Whether `[from_us, to_us]` overlaps any window.
    pub fn overlaps(&self, from_us: u64, to_us: u64) -> bool {
        (0..SLOTS).any(|i| {
            let start = self.starts[i].load(Ordering::Acquire);
            if start == UNUSED {
                return false;
            }
            let end = self.ends[i].load(Ordering::Acquire);
            // Skip a slot rewritten while we read it.
            if self.starts[i].load(Ordering::Acquire) != start {
                return false;
            }
            start <= to_us && end >= from_us
        })
    }
}

/// One burst as the admin side saw it.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Burst {
    /// The trigger's request id.
    pub request_id: u32,
    /// When the trigger was sent, milliseconds since the run's start.
    pub sent_at_ms: f64,
    /// Trigger to result, milliseconds (`None`: no result).
    pub round_trip_ms: Option<f64>,
    /// The engine call's status (0 is `MMO_OK`).
    pub status: Option<u32>,
    /// Objects spawned.
    pub spawned: u32,
    /// Grid cells they landed in.
    pub cells: u32,
    /// The engine's spawn time, as measured by the server, milliseconds.
    pub spawn_ms: Option<f64>,
}

/// `RAID_RESULT.status` of a burst refused because the objects alive with it would pass the
/// server's raid object capacity, or the bursts alive its burst capacity (`MMO_ERR_CAPACITY`;
/// the server's `raid_object_capacity`, 32,768 objects by default, and `raid_burst_capacity`,
/// 256).
pub const STATUS_CAPACITY: u32 = 1011;

/// The bursts of a run, summarised.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct RaidSummary {
    /// Triggers sent.
    pub triggers: u64,
    /// Results received.
    pub results: u64,
    /// Results with a non-zero status or fewer objects than asked for.
    pub failed: u64,
    /// Of those, bursts the server refused as past its raid object capacity
    /// ([`STATUS_CAPACITY`]): the load asked for more live objects than the server holds.
    pub refused_capacity: u64,
    /// Median and largest engine spawn time (server-measured), milliseconds.
    pub spawn_ms: SpawnMs,
    /// Every burst.
    pub bursts: Vec<Burst>,
}

/// Median and max of the server-measured spawn times, milliseconds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct SpawnMs {
    /// Median.
    pub median: f64,
    /// Largest.
    pub max: f64,
}

impl RaidSummary {
    /// Summarises `bursts` of `objects` each.
    pub fn new(bursts: Vec<Burst>, objects: u32) -> RaidSummary {
        let mut spawn: Vec<f64> = bursts.iter().filter(|b| b.status == Some(0)).filter_map(|b| b.spawn_ms).collect();
        spawn.sort_by(f64::total_cmp);
        let median = match spawn.len() {
            0 => 0.0,
            n if n % 2 == 1 => spawn[n / 2],
            n => (spawn[n / 2 - 1] + spawn[n / 2]) / 2.0,
        };
        RaidSummary {
            triggers: bursts.len() as u64,
            results: bursts.iter().filter(|b| b.status.is_some()).count() as u64,
            failed: bursts.iter().filter(|b| b.status.is_some_and(|s| s != 0) || (b.status.is_some() && b.spawned != objects)).count()
                as u64,
            refused_capacity: bursts.iter().filter(|b| b.status == Some(STATUS_CAPACITY)).count() as u64,
            spawn_ms: SpawnMs { median, max: spawn.last().copied().unwrap_or(0.0) },
            bursts,
        }
    }
}

/// The trigger for burst `n` (the admin key and request id are filled in by the client).
pub fn trigger(plan: &RaidPlan, n: u64) -> RaidTrigger {
    RaidTrigger {
        admin_key: 0,
        request_id: 0,
        count: plan.objects,
        center_x_m: plan.center_x_m,
        center_y_m: plan.center_y_m,
        half_extent_m: plan.half_extent_m,
        lifetime_ms: plan.lifetime_ms,
        hp: 100,
        seed: n as u32,
        kind: EntityKind::Add,
        faction: 200,
    }
}

/// Fires a burst at `first + n * every` for every such time before `end` (or until `stop`),
/// opening and closing the raid windows, and returns what each burst reported.
pub async fn drive(
    admin: &mut AdminClient,
    plan: &RaidPlan,
    windows: &RaidWindows,
    epoch: Epoch,
    first: Instant,
    end: Instant,
    stop: &AtomicBool,
) -> Result<Vec<Burst>, AdminError> {
    let mut pacer = Pacer::until(Schedule::new(first, plan.every), end);
    let mut bursts = Vec::new();
    while let Some(deadline) = pacer.next_deadline() {
        tokio::time::sleep_until(deadline.into()).await;
        if stop.load(Ordering::Relaxed) {
            break;
        }
        let Some((n, _)) = pacer.take_due(Instant::now()) else { continue };
        let sent = Instant::now();
        windows.begin(n, epoch.micros(sent));
        let request_id = admin.send_raid(trigger(plan, n)).await?;
        let result = admin.raid_result(request_id, sent + plan.result_timeout).await?;
        let got = Instant::now();
        windows.finish(n, epoch.micros(got + plan.window_after));
        bursts.push(Burst {
            request_id,
            sent_at_ms: epoch.micros(sent) as f64 / 1e3,
            round_trip_ms: result.map(|_| got.duration_since(sent).as_secs_f64() * 1e3),
            status: result.map(|r| r.status),
            spawned: result.map_or(0, |r| r.spawned),
            cells: result.map_or(0, |r| r.cells),
            spawn_ms: result.map(|r| r.spawn_ns as f64 / 1e6),
        });
    }
    Ok(bursts)
}
