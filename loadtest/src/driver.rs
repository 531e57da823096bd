//! Bot driver threads: each plays many bots from one loop, on time to within tens of
//! microseconds.
//!
//! Why not one tokio task per bot (how the tester began): tokio's timer rounds every sleep up
//! to a whole millisecond and wakes each task separately, so at 2,000 bots moves went out
//! 12 ms late at p99 while both cores sat mostly idle, and the tester, not the server, set the
//! tail it reported. Here a thread owns its bots outright and runs one loop:
//!
//! 1. **Send.** Serve every bot whose deadline ([`Deadlines`]) has come: its moves intended
//!    for this grid point ([`SendGrid`]), its economy requests and resends, its hostile
//!    duties.
//! 2. **Read, in the gaps.** Every `read_period` (`--read-period-ms`, 5 ms), ask `epoll` which
//!    of its sockets have input (without waiting) and drain each with `recvmmsg`, one socket
//!    at a time and only while the next send is more than [`READ_GUARD`] away: a read pass
//!    never makes a send late; the sockets it had no time for are read in the next gap.
//!    Every datagram carries the kernel's receive timestamp (`SO_TIMESTAMPNS`), so a reply's
//!    arrival time is when it reached the machine, however long the thread took to read it.
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
    /// How long each read pass took, µs (sockets with input drained one by one until none is
    /// left or the next send is near).
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

/// Ready sockets asked of `epoll` at a time (the read pass reads them one by one, as time
/// before the next send allows, and keeps the rest for the next gap).
pub const READY_BATCH: usize = 64;

/// A read pass stops this long before the next send is due: more than one socket's drain
/// (a few `recvmmsg` calls, about 10 µs on loopback), so the read in progress when the
/// guard is reached ends before the send.
pub const READ_GUARD: Duration = Duration::from_micros(30);

/// What [`ReadyQueue::next`] hands the read pass.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NextSocket {
    /// Read this socket (its `epoll` token).
    Read(u64),
    /// Every socket reported ready was read, and `epoll` reported no more.
    Done,
    /// The pass has had its four batches: sockets may be left; the next pass goes on.
    Bound,
    /// `epoll` failed.
    Failed,
}

/// The sockets `epoll` reported ready that no read pass has read yet. `epoll` is
/// edge-triggered here (a socket is reported once per arrival, not while it holds input), so
/// a pass that runs out of time must keep what it was told, or those sockets' input would
/// wait for their next arrival.
#[derive(Debug)]
pub struct ReadyQueue {
    tokens: [u64; READY_BATCH],
    next: usize,
    len: usize,
    /// Refills in this pass (reset by [`Self::begin_pass`]).
    refills: u32,
}

impl Default for ReadyQueue {
    fn default() -> Self {
        Self::new()
    }
}

impl ReadyQueue {
    /// Batches of [`READY_BATCH`] sockets one pass asks `epoll` for, at most, so a socket set
    /// that never empties still hands the thread back to its sends.
    pub const REFILLS_PER_PASS: u32 = 4;

    /// An empty queue.
    pub const fn new() -> ReadyQueue {
        ReadyQueue { tokens: [0; READY_BATCH], next: 0, len: 0, refills: 0 }
    }

    /// Sockets kept from an earlier pass, not read yet.
    pub fn kept(&self) -> usize {
        self.len - self.next
    }

    /// Starts a read pass.
    pub fn begin_pass(&mut self) {
        self.refills = 0;
    }

    /// The next socket to read: a kept one, or, with none kept, one of up to [`READY_BATCH`]
    /// more from `refill` (`epoll_wait` without waiting). A refill of fewer than a whole batch
    /// means nothing else was ready then, so the pass is done once those are read.
    pub fn next(&mut self, refill: impl FnOnce(&mut [u64; READY_BATCH]) -> io::Result<usize>) -> NextSocket {
        if self.next == self.len {
            let last_was_partial = self.len < READY_BATCH;
            self.next = 0;
            self.len = 0;
            if self.refills > 0 && last_was_partial {
                return NextSocket::Done;
            }
            if self.refills == Self::REFILLS_PER_PASS {
                return NextSocket::Bound;
            }
            self.refills += 1;
            match refill(&mut self.tokens) {
                Ok(0) => return NextSocket::Done,
                Ok(n) => self.len = n.min(READY_BATCH),
                Err(_) => return NextSocket::Failed,
            }
        }
        let t = self.tokens[self.next];
        self.next += 1;
        NextSocket::Read(t)
    }
}

/// How often a thread adds its bots' counts to the shared progress counters.
const FLUSH_EVERY: Duration = Duration::from_secs(1);

struct Loop {
    players: Vec<Player>,
    done: Vec<bool>,
    active: usize,
    deadlines: Deadlines,
    grid: SendGrid,
    readiness: Readiness,
    ready: ReadyQueue,
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

    /// Reads sockets with input, one at a time, until none is left or `until` (the next
    /// send less [`READ_GUARD`]) comes; returns whether more may be waiting. The snapshots
    /// every bot gets each server tick are thus read between sends, never ahead of one.
    fn read(&mut self, until: Option<Instant>) -> bool {
        let clock = ArrivalClock::read();
        self.ready.begin_pass();
        // Bounded: every turn reads a socket, and a pass takes at most REFILLS_PER_PASS
        // batches after what it kept (`next` says Bound after that).
        for _ in 0..READY_BATCH * (ReadyQueue::REFILLS_PER_PASS as usize + 2) {
            if until.is_some_and(|u| Instant::now() >= u) {
                return true;
            }
            let readiness = &mut self.readiness;
            let next = self.ready.next(|batch| {
                let mut n = 0;
                for t in readiness.ready()? {
                    batch[n] = t;
                    n += 1;
                }
                Ok(n)
            });
            match next {
                NextSocket::Read(t) => self.read_socket(t as usize, &clock),
                NextSocket::Done => return false,
                NextSocket::Bound => return true,
                NextSocket::Failed => {
                    self.report.read_errors += 1;
                    return false;
                }
            }
        }
        true
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
        ready: ReadyQueue::new(),
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
        // Then read, in the time left before the next send (a result that settles an economy
        // request moves its resend, so it is read before that resend whenever there is time).
        if now >= next_read {
            let read_from = Instant::now();
            let until = l.deadlines.earliest().map(|d| d.checked_sub(READ_GUARD).unwrap_or(d));
            let more = l.read(until);
            // More to read: go on in the next gap, right after the next sends.
            next_read = match (more, until) {
                (true, Some(u)) => u + READ_GUARD,
                (true, None) => Instant::now(),
                (false, _) => read_from + config.read_period,
            };
            l.report.read_pass_us.record(read_from.elapsed().as_micros() as u64);
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
