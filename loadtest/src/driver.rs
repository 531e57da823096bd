//! Bot driver threads: each plays many bots from one loop, on time to within tens of
//! microseconds.
//!
//! Why not one tokio task per bot (how the tester began): tokio's timer rounds every sleep up
//! to a whole millisecond and wakes each task separately, so at 2,000 bots moves went out
//! 12 ms late at p99 while both cores sat mostly idle, and the tester, not the server, set the
//! tail it reported. Here a thread owns its bots outright and runs one loop:
//!
//! 1. **Read.** Every `read_period` (`--read-period-ms`, 5 ms), ask `epoll` which of its sockets have
//!    input (without waiting) and drain each with `recvmmsg`. Every datagram carries the
//!    kernel's receive timestamp (`SO_TIMESTAMPNS`), so a reply's arrival time is when it
//!    reached the machine, however long the thread took to read it.
//! 2. **Send.** Serve every bot whose deadline ([`Deadlines`]) has come: its moves intended
//!    for this grid point ([`SendGrid`]), its economy requests and resends, its hostile
//!    duties.
//! 3. **Wait.** Sleep until just before the next deadline and spin the rest ([`WakeTuner`]).
//!
//! A thread never blocks on a socket and never shares a bot, so nothing is locked per packet;
//! the only shared writes are the progress counters, once a second per thread.

use crate::bot::{BotReport, Latencies, PlayPlan};
use crate::bot::{Player, Session};
use crate::metrics::Merged;
use crate::net::{ArrivalClock, Readiness, RxBatch, enable_rx_timestamps};
use crate::rng::Rng;
use crate::system;
use crate::timer::{Deadlines, SendGrid, Wait, WakeTuner};
use crate::walk::Walk;
use serde::Serialize;
use std::io;
use std::net::UdpSocket;
use std::os::fd::AsRawFd;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

/// How a driver thread runs (the defaults are the command line's: `--send-tick-us`,
/// `--read-period-ms`, `--max-spin-us`, `--pin`, `--driver-nice`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DriverConfig {
    /// Spacing of the send grid: moves are intended on multiples of it.
    pub tick: Duration,
    /// How often the thread reads its sockets. Arrival times come from the kernel's stamps,
    /// so reading less often costs no precision, only delays economy bookkeeping; each
    /// read pass costs one `epoll_wait` and one `recvmmsg` per socket with input.
    pub read_period: Duration,
    /// The longest a thread spins before a deadline (the rest it sleeps).
    pub max_spin: Duration,
    /// Pin the thread to this CPU.
    pub cpu: Option<usize>,
    /// Run the thread at this niceness (below 0 needs `CAP_SYS_NICE`).
    pub nice: i32,
}

/// A joined bot handed to a driver thread.
pub struct Bot {
    /// Its session (socket non-blocking).
    pub session: Session<UdpSocket>,
    /// Its walk, starting at the session's spawn point.
    pub walk: Walk,
    /// Its random choices.
    pub rng: Rng,
}

/// What the driver threads did, merged over threads (the JSON report carries it as is, each
/// histogram as its summary).
#[derive(Clone, Debug, Default, Serialize)]
pub struct DriverReport {
    /// Driver threads.
    pub threads: u32,
    /// Threads that could not be pinned to their CPU (and ran unpinned), or not given their
    /// niceness, with the reason.
    pub pin_errors: Vec<String>,
    /// Times a thread woke to serve due bots or read.
    pub wakes: u64,
    /// Sleeps taken.
    pub sleeps: u64,
    /// How late each sleep ended after its planned end, µs (what the tuner learns from).
    pub oversleep_us: Merged,
    /// Time spent spinning to deadlines, µs.
    pub spin_us: u64,
    /// `recvmmsg` calls that returned datagrams.
    pub reads: u64,
    /// Datagrams read.
    pub datagrams: u64,
    /// Datagrams the kernel did not timestamp (their arrival is the time they were read).
    pub unstamped: u64,
    /// Datagrams cut short by the receive buffer.
    pub truncated: u64,
    /// Read errors other than "nothing queued".
    pub read_errors: u64,
    /// The largest spin margin any thread settled on, µs.
    pub margin_us_max: u64,
    /// How long each read batch took, µs (up to 64 sockets with input, drained).
    pub read_pass_us: Merged,
    /// How long each send pass took, µs (every bot due at one wake-up).
    pub send_pass_us: Merged,
}

impl DriverReport {
    /// Adds another thread's report.
    pub fn add(&mut self, o: &DriverReport) {
        self.threads += o.threads;
        self.pin_errors.extend(o.pin_errors.iter().cloned());
        self.wakes += o.wakes;
        self.sleeps += o.sleeps;
        self.oversleep_us.add(&o.oversleep_us);
        self.spin_us += o.spin_us;
        self.reads += o.reads;
        self.datagrams += o.datagrams;
        self.unstamped += o.unstamped;
        self.truncated += o.truncated;
        self.read_errors += o.read_errors;
        self.margin_us_max = self.margin_us_max.max(o.margin_us_max);
        self.read_pass_us.add(&o.read_pass_us);
        self.send_pass_us.add(&o.send_pass_us);
    }
}

/// What one driver thread hands back.
pub struct Played {
    /// Each bot's session (for `LEAVE`) and report, in the order given.
    pub bots: Vec<(Session<UdpSocket>, BotReport)>,
    /// The thread's own figures.
    pub report: DriverReport,
    /// Its bots' latency histograms.
    pub latencies: Latencies,
}

/// `recvmmsg` calls per socket per read pass, at most: a socket that keeps filling cannot
/// starve the others or the sends. What is left (more than 64 datagrams in one read period,
/// far beyond a bot's 30 a second) is read after the socket's next arrival.
const READS_PER_SOCKET: usize = 4;

/// Ready sockets read per read batch: about a quarter of a millisecond of receives, so a
/// send is never held up longer than that by reading.
const READY_BATCH: usize = 64;

/// How often a thread adds its bots' counts to the shared progress counters.
const FLUSH_EVERY: Duration = Duration::from_secs(1);

struct Loop {
    players: Vec<Player>,
    done: Vec<bool>,
    active: usize,
    deadlines: Deadlines,
    grid: SendGrid,
    readiness: Readiness,
    rx: RxBatch,
    tuner: WakeTuner,
    report: DriverReport,
    latencies: Latencies,
}

impl Loop {
    fn reschedule(&mut self, i: usize, now: Instant) {
        if self.done[i] {
            return;
        }
        if self.players[i].finished(now) {
            self.done[i] = true;
            self.active -= 1;
            self.deadlines.set(i, None);
            // Its input is no longer read; stop being told about it.
            let _ = self.readiness.remove(self.players[i].fd());
        } else {
            self.deadlines.set(i, Some(self.players[i].next_wake(&self.grid)));
        }
    }

    /// Reads up to [`READY_BATCH`] sockets with input; returns whether more may be waiting.
    /// One batch at a time, so the burst of snapshots after each server tick (one per bot,
    /// all at once) is read between sends rather than holding them up for milliseconds.
    fn read(&mut self) -> bool {
        let clock = ArrivalClock::read();
        let mut tokens = [0u64; READY_BATCH];
        let mut n = 0;
        match self.readiness.ready() {
            Ok(ready) => {
                for t in ready {
                    tokens[n] = t;
                    n += 1;
                }
            }
            Err(_) => {
                self.report.read_errors += 1;
                return false;
            }
        }
        for &t in &tokens[..n] {
            self.read_socket(t as usize, &clock);
        }
        n == READY_BATCH
    }

    fn read_socket(&mut self, i: usize, clock: &ArrivalClock) {
        if self.done[i] {
            return;
        }
        let fd = self.players[i].fd();
        for _ in 0..READS_PER_SOCKET {
            let got = match self.rx.recv(fd) {
                Ok(n) => n,
                Err(_) => {
                    // An ICMP port unreachable (the server went away) or worse: the bot counts it.
                    self.players[i].on_recv_error();
                    self.report.read_errors += 1;
                    break;
                }
            };
            if got == 0 {
                break;
            }
            self.report.reads += 1;
            self.report.datagrams += got as u64;
            for k in 0..got {
                let d = self.rx.get(k);
                if d.arrived_realtime.is_none() {
                    self.report.unstamped += 1;
                }
                if d.truncated {
                    self.report.truncated += 1;
                }
                let arrival = clock.arrival(d.arrived_realtime);
                self.players[i].on_datagram(d.bytes, d.truncated, arrival, &mut self.latencies);
            }
            if got < crate::net::RX_BATCH {
                break;
            }
        }
        // A result may have settled an economy request and moved its resend.
        self.reschedule(i, clock.now());
    }

    /// Sleeps until `target`, without spinning and without learning from the lateness.
    fn sleep_until(&mut self, target: Instant) {
        let now = Instant::now();
        if target > now {
            std::thread::sleep(target - now);
            self.report.sleeps += 1;
        }
    }

    /// Sleeps and spins until `target`.
    fn wait_until(&mut self, target: Instant) {
        loop {
            let now = Instant::now();
            match self.tuner.plan(now, target) {
                Wait::Due => return,
                Wait::Spin => {
                    while Instant::now() < target {
                        std::hint::spin_loop();
                    }
                    self.report.spin_us += now.elapsed().as_micros() as u64;
                    return;
                }
                Wait::Sleep(d) => {
                    let planned = now + d;
                    std::thread::sleep(d);
                    let woke = Instant::now();
                    self.tuner.observe(planned, woke);
                    self.report.sleeps += 1;
                    self.report.oversleep_us.record(woke.saturating_duration_since(planned).as_micros() as u64);
                }
            }
        }
    }
}

/// Plays `bots` until the plan's end (plus drain, plus economy settling) on the calling
/// thread, and returns each bot's session (for `LEAVE`) and report, in the order given.
pub fn drive(bots: Vec<Bot>, plan: &Arc<PlayPlan>, config: DriverConfig) -> io::Result<Played> {
    // Presized, like the bots' latencies: recording on the thread's schedule never allocates.
    let mut report = DriverReport {
        threads: 1,
        oversleep_us: Merged::presized(),
        read_pass_us: Merged::presized(),
        send_pass_us: Merged::presized(),
        ..DriverReport::default()
    };
    if let Some(cpu) = config.cpu
        && let Err(e) = system::pin_current_thread(cpu)
    {
        report.pin_errors.push(format!("cpu {cpu}: {e}"));
    }
    if config.nice != 0
        && let Err(e) = system::set_thread_nice(config.nice)
    {
        report.pin_errors.push(format!("nice {}: {e}", config.nice));
    }
    // The kernel may otherwise defer a sleep's end by up to 50 µs to batch wake-ups.
    system::set_timer_slack(Duration::from_nanos(1));
    let grid = SendGrid::new(plan.move_start, config.tick);
    let readiness = Readiness::new(READY_BATCH)?;
    let mut players = Vec::with_capacity(bots.len());
    for (i, b) in bots.into_iter().enumerate() {
        let fd = b.session.socket.as_raw_fd();
        enable_rx_timestamps(fd)?;
        readiness.add(fd, i as u64)?;
        players.push(Player::new(b.session, Arc::clone(plan), b.walk, b.rng, &grid));
    }
    let n = players.len();
    let start = Instant::now();
    let mut l = Loop {
        deadlines: Deadlines::new(start.min(plan.move_start), n),
        done: vec![false; n],
        active: n,
        players,
        grid,
        readiness,
        rx: RxBatch::new(),
        tuner: WakeTuner::new(Duration::from_micros(2), config.max_spin),
        report,
        latencies: Latencies::new(),
    };
    for i in 0..n {
        l.reschedule(i, start);
    }
    let mut next_read = start;
    let mut next_flush = start + FLUSH_EVERY;
    let mut stopped = false;
    while l.active > 0 {
        let now = Instant::now();
        l.report.wakes += 1;
        if !stopped && plan.stop.load(Ordering::Relaxed) {
            stopped = true;
            for i in 0..n {
                l.players[i].stop_early(now);
                l.reschedule(i, now);
            }
        }
        // Reads first, so a result that settles an economy request cancels its resend.
        if now >= next_read {
            let more = l.read();
            // More ready sockets: read the next batch right after this wake-up's sends.
            next_read = if more { now } else { now + config.read_period };
            l.report.read_pass_us.record(now.elapsed().as_micros() as u64);
        }
        // Every bot due now; the loop is bounded by the bots' count (each is served once, and
        // its next deadline is after `now`, or it is due again only on the next turn).
        let sends_from = Instant::now();
        let mut served = 0;
        for _ in 0..n {
            let Some(i) = l.deadlines.pop_due(now) else { break };
            l.players[i].on_wake(now, &mut l.latencies);
            l.reschedule(i, now);
            served += 1;
        }
        if served > 0 {
            l.report.send_pass_us.record(sends_from.elapsed().as_micros() as u64);
        }
        if now >= next_flush {
            l.players.iter_mut().for_each(Player::flush_live);
            next_flush = now + FLUSH_EVERY;
        }
        if l.active == 0 {
            break;
        }
        // Only a send is worth spinning for: reads use the kernel's arrival stamps and the
        // flush is bookkeeping, so for those a plain sleep (however late) is enough.
        let chores = next_read.min(next_flush);
        match l.deadlines.earliest() {
            Some(send) if send <= chores => l.wait_until(send),
            _ => l.sleep_until(chores),
        }
    }
    l.report.margin_us_max = l.tuner.margin().as_micros() as u64;
    let bots = l.players.into_iter().map(Player::finish).collect();
    Ok(Played { bots, report: l.report, latencies: l.latencies })
}
