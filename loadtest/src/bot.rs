//! One bot: a UDP socket of its own, the join handshake, then play (moves on a fixed
//! schedule, acks matched by sequence, area-of-interest snapshots, and, per scenario,
//! economy transactions and hostile duties), then `LEAVE`.
//!
//! Why it is built this way:
//! - **One socket per bot, many bots per thread.** The server binds a session to one
//!   (address, port), and its kernel hash sends each address to one worker, so real clients
//!   look like this. Joining and leaving are tokio tasks (a handful of round trips each);
//!   play is a [`Player`] driven by a [`crate::driver`] thread that owns it outright: no
//!   lock and no shared counter per packet.
//! - **Measured from intended send times.** Move `k` is intended for
//!   `move_start + stagger + k * interval` ([`crate::schedule`]); its round trip is measured
//!   from that time to its ack, matched by sequence (`sequence = 2 * (k + 1)`, even, so an
//!   `ATTACK` can take the odd sequence between two moves; the ack echoes it).
//!   A bot that falls behind sends the overdue moves at once, each still measured from its
//!   own intended time and carrying `client_time_ms` = its intended time (echoed, for the
//!   round trip). The server's speed rule reckons on its own clock; a walk at 8 m/s against
//!   its 12 m/s limit and 3.5 m allowance absorbs a catch-up after a stall of up to ~0.4 s.
//! - **Arrival is the kernel's receive time.** A reply's round trip ends at its
//!   `SO_TIMESTAMPNS` stamp, not when the driver read it.
//! - **No allocation per packet.** Send buffers live in the bot, receive buffers in its
//!   thread; decoding borrows; histograms grow only when a new largest value arrives.
//! - **Warm-up excluded by intended time.** Only moves intended in
//!   `[measure_start, end)` count as sent, acked or lost, and only their round trips are
//!   recorded.

use crate::combat::{CombatAgent, CombatPlan, CombatTally};
use crate::economy::{EconomyAgent, EconomyPlan, EconomyTally};
use crate::hostile::{CraftContext, HostileKind, SentCounts, Victim, craft};
use crate::metrics::Merged;
use crate::net::{bot_socket, is_transient};
use crate::protocol::{
    self, Attack, Flags, JoinConfirm, JoinRequest, JoinStatus, Leave, LootClaim, Message, Move, MoveAck, MoveResult, PAYLOAD_LEN,
};
use crate::raid::RaidWindows;
use crate::rng::Rng;
use crate::schedule::{Epoch, Pacer, Schedule, elapsed_us, stagger};
use crate::timer::SendGrid;
use crate::walk::Walk;
use std::net::{SocketAddrV4, UdpSocket as StdUdpSocket};
use std::os::fd::{AsRawFd, RawFd};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};
use tokio::net::UdpSocket;

/// Receive buffer size for the join and leave exchanges.
const RECV_BUF: usize = crate::net::RX_BUF;

/// How to join.
#[derive(Clone)]
pub struct JoinPlan {
    /// The server.
    pub server: SocketAddrV4,
    /// Wait this long for each reply before resending.
    pub attempt_timeout: Duration,
    /// Sends of each of `JOIN_REQUEST` and `JOIN_CONFIRM` before giving up.
    pub attempts: u32,
    /// Mints each bot's connect token, as the game's backend would.
    pub tokens: Arc<crate::token::Issuer>,
    /// The side the bots' accounts are on (the server maps it to a starting zone).
    pub faction: u8,
}

/// A joined bot. Its socket is tokio's while joining and leaving, a plain non-blocking one
/// while a driver thread plays it.
pub struct Session<S = UdpSocket> {
    /// The bot's index in the run.
    pub index: usize,
    /// Its socket (connected to the server).
    pub socket: S,
    /// Its player id.
    pub player_id: u64,
    /// Its session token.
    pub session_token: u64,
    /// Where the server put it (`JOIN_ACCEPT`).
    pub spawn: (f32, f32),
    /// The server's clock at the accept: (when the accept arrived, `server_time_ms`).
    pub server_clock: (Instant, u64),
    /// The bot's own clock zero (its `client_time_ms` counts from here).
    pub clock: Instant,
    /// The next sequence the session may use (moves and leave share it).
    pub next_sequence: u32,
}

impl<S> Session<S> {
    /// The socket, and the rest of the session without it.
    fn split(self) -> (S, Session<()>) {
        let Session { index, socket, player_id, session_token, spawn, server_clock, clock, next_sequence } = self;
        (socket, Session { index, socket: (), player_id, session_token, spawn, server_clock, clock, next_sequence })
    }

    /// The same session over another socket type.
    fn with_socket<T>(self, socket: T) -> Session<T> {
        Session {
            index: self.index,
            socket,
            player_id: self.player_id,
            session_token: self.session_token,
            spawn: self.spawn,
            server_clock: self.server_clock,
            clock: self.clock,
            next_sequence: self.next_sequence,
        }
    }

    /// The server's cookie period (`server_time_ms / 10_000`) at `now`, estimated from the
    /// accept.
    pub fn server_period(&self, now: Instant) -> u32 {
        let ms = self.server_clock.1 + now.saturating_duration_since(self.server_clock.0).as_millis() as u64;
        (ms / 10_000) as u32
    }

    /// The session as a victim for spoofing.
    pub fn victim(&self) -> Victim {
        Victim { player_id: self.player_id, session_token: self.session_token }
    }
}

impl Session<UdpSocket> {
    /// The session with its socket taken out of tokio (still non-blocking), for a driver
    /// thread. Must be called inside the runtime.
    pub fn into_std(self) -> std::io::Result<Session<StdUdpSocket>> {
        let (socket, rest) = self.split();
        Ok(rest.with_socket(socket.into_std()?))
    }
}

impl Session<StdUdpSocket> {
    /// The session handed back to tokio (for `LEAVE`). Must be called inside the runtime.
    pub fn into_tokio(self) -> std::io::Result<Session<UdpSocket>> {
        let (socket, rest) = self.split();
        Ok(rest.with_socket(UdpSocket::from_std(socket)?))
    }
}

/// Why a bot could not join.
#[derive(Debug, thiserror::Error)]
pub enum JoinError {
    /// No `JOIN_CHALLENGE` arrived.
    #[error("no JOIN_CHALLENGE after {0} requests")]
    NoChallenge(u32),
    /// No `JOIN_ACCEPT` arrived.
    #[error("no JOIN_ACCEPT after {0} confirms")]
    NoAccept(u32),
    /// The server refused.
    #[error("join refused: {0:?}")]
    Refused(JoinStatus),
    /// A socket error.
    #[error("socket: {0}")]
    Io(#[from] std::io::Error),
}

/// What a join cost.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct JoinStats {
    /// From the first `JOIN_REQUEST` to the `JOIN_ACCEPT`, microseconds.
    pub handshake_us: u64,
    /// `JOIN_REQUEST`s sent.
    pub requests: u32,
    /// `JOIN_CONFIRM`s sent.
    pub confirms: u32,
    /// `JOIN_ACCEPT`s saying try later (the server's join rate was spent).
    pub try_later: u32,
}

async fn send(socket: &UdpSocket, bytes: &[u8]) -> bool {
    socket.send(bytes).await.is_ok()
}

/// Receives one datagram into `buf` before `deadline`; `None` at the deadline.
async fn recv_until(socket: &UdpSocket, buf: &mut [u8], deadline: Instant) -> std::io::Result<Option<usize>> {
    loop {
        let now = Instant::now();
        if now >= deadline {
            return Ok(None);
        }
        match tokio::time::timeout(deadline - now, socket.recv(buf)).await {
            Err(_) => return Ok(None),
            Ok(Ok(n)) => return Ok(Some(n)),
            // Port unreachable (server not up yet) or nothing there: wait out this attempt.
            Ok(Err(e)) if is_transient(&e) => tokio::time::sleep_until(deadline.into()).await,
            Ok(Err(e)) => return Err(e),
        }
    }
}

/// Joins through the handshake: `JOIN_REQUEST` until a `JOIN_CHALLENGE` for our nonce, then
/// `JOIN_CONFIRM` with a fresh connect token until a `JOIN_ACCEPT` for it. A resent confirm
/// (same nonce, same address) gets the same session back, so a lost accept never makes a
/// second player. The server decides where the player appears: the session's `spawn`.
pub async fn join(index: usize, plan: &JoinPlan, rng: &mut Rng) -> (Result<Session, JoinError>, JoinStats) {
    join_with_token(index, plan, plan.tokens.token_for(index, plan.faction), rng).await
}

/// [`join`] presenting a given connect token (the hostile scenario's forged, expired and
/// replayed ones).
pub async fn join_with_token(
    index: usize,
    plan: &JoinPlan,
    token: [u8; crate::token::TOKEN_SIZE],
    rng: &mut Rng,
) -> (Result<Session, JoinError>, JoinStats) {
    let mut stats = JoinStats::default();
    let result = join_inner(index, plan, token, rng, &mut stats).await;
    (result, stats)
}

async fn join_inner(
    index: usize,
    plan: &JoinPlan,
    token: [u8; crate::token::TOKEN_SIZE],
    rng: &mut Rng,
    stats: &mut JoinStats,
) -> Result<Session, JoinError> {
    let socket = bot_socket(plan.server, index)?;
    let nonce = rng.next_u64() | 1;
    let clock = Instant::now();
    let mut out = [0u8; protocol::CLIENT_DATAGRAM_MAX];
    let mut buf = [0u8; RECV_BUF];
    let mut challenge = None;
    'requests: for attempt in 0..plan.attempts {
        let flags = if attempt == 0 { Flags::NONE } else { Flags::RETRANSMIT };
        let n = protocol::encode(&JoinRequest { nonce }.into(), flags, &mut out).expect("a join request always encodes");
        send(&socket, &out[..n]).await;
        stats.requests += 1;
        let deadline = Instant::now() + plan.attempt_timeout;
        while let Some(n) = recv_until(&socket, &mut buf, deadline).await? {
            if let Ok(d) = protocol::decode(&buf[..n])
                && let Message::JoinChallenge(c) = d.message
                && c.nonce == nonce
            {
                challenge = Some(c);
                break 'requests;
            }
        }
    }
    let challenge = challenge.ok_or(JoinError::NoChallenge(plan.attempts))?;
    let confirm = JoinConfirm { nonce, period: challenge.period, cookie: challenge.cookie, token };
    'confirms: for attempt in 0..plan.attempts {
        let flags = if attempt == 0 { Flags::NONE } else { Flags::RETRANSMIT };
        let n = protocol::encode(&confirm.into(), flags, &mut out).expect("a join confirm always encodes");
        send(&socket, &out[..n]).await;
        stats.confirms += 1;
        let deadline = Instant::now() + plan.attempt_timeout;
        while let Some(n) = recv_until(&socket, &mut buf, deadline).await? {
            if let Ok(d) = protocol::decode(&buf[..n])
                && let Message::JoinAccept(a) = d.message
                && a.nonce == nonce
            {
                if a.status == JoinStatus::TryLater {
                    // The server's join rate is spent: the same confirm again after the timeout.
                    stats.try_later += 1;
                    tokio::time::sleep_until(deadline.into()).await;
                    continue 'confirms;
                }
                if a.status != JoinStatus::Joined {
                    return Err(JoinError::Refused(a.status));
                }
                let now = Instant::now();
                stats.handshake_us = elapsed_us(clock, now);
                return Ok(Session {
                    index,
                    socket,
                    player_id: a.player_id,
                    session_token: a.session_token,
                    spawn: (a.spawn_x_m, a.spawn_y_m),
                    server_clock: (now, a.server_time_ms),
                    clock,
                    next_sequence: 1,
                });
            }
        }
    }
    Err(JoinError::NoAccept(plan.attempts))
}

/// Counters every bot adds to now and then (about once a second), for the progress bar.
#[derive(Debug, Default)]
pub struct LiveCounters {
    /// Moves sent (measured window).
    pub moves_sent: AtomicU64,
    /// Acks received (measured window).
    pub acks: AtomicU64,
}

/// Hostile duties of the bots: a `bad_session` or `replayed` datagram from their own socket.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct DutyPlan {
    /// Time between one bot's duties.
    pub interval: Duration,
}

/// What every bot of a run shares.
pub struct PlayPlan {
    /// The run's time zero.
    pub epoch: Epoch,
    /// Moves start (before the stagger) at this time.
    pub move_start: Instant,
    /// Time between one bot's moves.
    pub move_interval: Duration,
    /// Moves intended from here on are measured.
    pub measure_start: Instant,
    /// No move is intended at or after this.
    pub end: Instant,
    /// Keep receiving this long after `end` for late acks.
    pub drain: Duration,
    /// Keep resending unanswered economy requests this long after `end + drain`.
    pub economy_settle: Duration,
    /// Bots in the run (for staggering).
    pub bots: usize,
    /// Economy traffic, if any.
    pub economy: Option<EconomyPlan>,
    /// Hostile duties, if any.
    pub duties: Option<DutyPlan>,
    /// Attacks on the raid's adds, if any.
    pub combat: Option<CombatPlan>,
    /// Raid windows to classify round trips by, if any.
    pub raid_windows: Option<Arc<RaidWindows>>,
    /// Every joined bot's player id (trade partners).
    pub peers: Arc<[u64]>,
    /// Progress counters.
    pub live: Arc<LiveCounters>,
    /// Set to stop early (Ctrl-C).
    pub stop: Arc<AtomicBool>,
}

/// The latency histograms of every bot one driver thread plays. The thread owns them (no
/// lock, no atomic), and they are allocated before play ([`Merged::presized`]), so recording
/// never allocates on the thread's schedule.
#[derive(Clone, Debug)]
pub struct Latencies {
    /// Move round trips, microseconds, from intended send time.
    pub move_rtt: Merged,
    /// Move round trips from the actual send (diagnostic: leaves out the tester's own
    /// lateness, so it is *not* free of coordinated omission).
    pub move_rtt_from_send: Merged,
    /// How late each measured move went out after its intended time, microseconds.
    pub send_lag: Merged,
    /// Move round trips overlapping a raid window.
    pub move_rtt_raid: Merged,
    /// Move round trips not overlapping any raid window.
    pub move_rtt_calm: Merged,
    /// Time between a bot's consecutive snapshots, microseconds.
    pub aoi_gap: Merged,
    /// Economy round trips (first send's intended time to result), microseconds.
    pub economy_rtt: Merged,
}

impl Default for Latencies {
    fn default() -> Self {
        Latencies::new()
    }
}

impl Latencies {
    /// Empty histograms, presized.
    pub fn new() -> Latencies {
        Latencies {
            move_rtt: Merged::presized(),
            move_rtt_from_send: Merged::presized(),
            send_lag: Merged::presized(),
            move_rtt_raid: Merged::presized(),
            move_rtt_calm: Merged::presized(),
            aoi_gap: Merged::presized(),
            economy_rtt: Merged::presized(),
        }
    }

    /// Adds another thread's histograms.
    pub fn add(&mut self, o: &Latencies) {
        self.move_rtt.add(&o.move_rtt);
        self.move_rtt_from_send.add(&o.move_rtt_from_send);
        self.send_lag.add(&o.send_lag);
        self.move_rtt_raid.add(&o.move_rtt_raid);
        self.move_rtt_calm.add(&o.move_rtt_calm);
        self.aoi_gap.add(&o.aoi_gap);
        self.economy_rtt.add(&o.economy_rtt);
    }
}

/// What one bot saw while playing (its latencies go to its thread's [`Latencies`]).
#[derive(Clone, Debug, Default)]
pub struct BotReport {
    /// Moves intended in the measured window (sent, or attempted).
    pub moves_sent: u64,
    /// Of those, moves acknowledged (any result).
    pub acks: u64,
    /// Of those, acks with a non-zero result, by result byte (one slot per result the codec
    /// decodes).
    pub rejected: [u64; MoveResult::ALL.len()],
    /// Acks for a sequence already acknowledged.
    pub duplicate_acks: u64,
    /// Acks too old to match (more than the ack window behind).
    pub late_acks: u64,
    /// Acks for a sequence never sent.
    pub unexpected_acks: u64,
    /// Acks whose `client_time_ms` is not the echo of their move's.
    pub echo_mismatches: u64,
    /// Contacts reported in acks.
    pub contacts: u64,
    /// Snapshots received in the measured window.
    pub aoi_snapshots: u64,
    /// Datagrams that did not decode.
    pub decode_errors: u64,
    /// Decoded datagrams of a type a playing bot does not expect.
    pub unexpected_messages: u64,
    /// Receive errors (e.g. port unreachable).
    pub recv_errors: u64,
    /// Send errors.
    pub send_errors: u64,
    /// The most overdue moves sent at once (how far the task fell behind).
    pub max_behind: u64,
    /// The economy ledger.
    pub economy: EconomyTally,
    /// Attacks and what they got.
    pub combat: CombatTally,
    /// Hostile duties sent.
    pub hostile: SentCounts,
}

/// Acks seen, by sequence, over the last [`ACK_WINDOW`] sequences.
struct AckWindow {
    bits: [u64; ACK_WINDOW / 64],
}

const ACK_WINDOW: usize = 4096;

enum AckState {
    New,
    Duplicate,
    TooOld,
}

impl AckWindow {
    fn sent(&mut self, seq: u32) {
        let i = seq as usize % ACK_WINDOW;
        self.bits[i / 64] &= !(1 << (i % 64));
    }

    fn acked(&mut self, seq: u32, highest_sent: u32) -> AckState {
        if highest_sent.wrapping_sub(seq) as usize >= ACK_WINDOW {
            return AckState::TooOld;
        }
        let i = seq as usize % ACK_WINDOW;
        let bit = 1u64 << (i % 64);
        if self.bits[i / 64] & bit != 0 {
            return AckState::Duplicate;
        }
        self.bits[i / 64] |= bit;
        AckState::New
    }
}

/// A sent move, kept to replay it byte for byte.
#[derive(Clone, Copy, Default)]
struct SentMove {
    sequence: u32,
    /// When it actually went out, µs since the run's epoch.
    sent_us: u64,
    client_time_ms: u32,
    x: f32,
    y: f32,
    facing: f32,
}

const RECENT_MOVES: usize = 64;

/// The wire sequence of move `k` (0-based): even, so an `ATTACK` sent after it can take the
/// odd one before the next move's ([`crate::combat`]).
fn move_sequence(k: u64) -> u32 {
    (k + 1).wrapping_mul(2) as u32
}

fn payload(player_id: u64, sequence: u32) -> [u8; PAYLOAD_LEN] {
    let mut p = [0u8; PAYLOAD_LEN];
    p[..8].copy_from_slice(&player_id.to_le_bytes());
    p[8..12].copy_from_slice(&sequence.to_le_bytes());
    for (i, b) in p[12..].iter_mut().enumerate() {
        *b = (sequence as u8).wrapping_add(i as u8);
    }
    p
}

/// One bot at play, driven by a [`crate::driver`] thread: everything it sends and receives,
/// without a system call of its own but `send`.
pub struct Player {
    session: Session<StdUdpSocket>,
    plan: Arc<PlayPlan>,
    rng: Rng,
    walk: Walk,
    moves: Pacer,
    acks: AckWindow,
    recent: [SentMove; RECENT_MOVES],
    last_applied: Option<u32>,
    last_aoi: Option<Instant>,
    economy: Option<EconomyAgent>,
    combat: Option<CombatAgent>,
    duties: Option<Pacer>,
    report: BotReport,
    flushed: (u64, u64),
    /// Keep reading until here (the plan's end plus drain, or sooner after a stop).
    finish: Instant,
    /// Stop even with economy requests unanswered here.
    hard_stop: Instant,
    out: [u8; protocol::CLIENT_DATAGRAM_MAX + 64],
}

impl Player {
    /// A bot ready to play `plan` from its session. Its moves are intended at
    /// `move_start + offset + k * move_interval`, the offset spreading the bots evenly over
    /// one interval and rounded down onto `grid` so a thread serves many bots per wake-up.
    /// `walk` must start at the session's spawn point.
    pub fn new(session: Session<StdUdpSocket>, plan: Arc<PlayPlan>, walk: Walk, rng: Rng, grid: &SendGrid) -> Player {
        let offset = |interval: Duration| grid.floor_offset(stagger(session.index, plan.bots, interval));
        let moves = Pacer::until(Schedule::new(plan.move_start + offset(plan.move_interval), plan.move_interval), plan.end);
        let economy = plan.economy.map(|p| {
            let start = plan.move_start + offset(p.interval);
            EconomyAgent::new(p, session.player_id, session.session_token, Schedule::new(start, p.interval), plan.end, plan.measure_start)
        });
        let duties = plan.duties.map(|d| Pacer::until(Schedule::new(plan.move_start + offset(d.interval), d.interval), plan.end));
        let combat = plan.combat.map(|c| CombatAgent::new(c, plan.move_start + offset(c.interval)));
        let finish = plan.end + plan.drain;
        Player {
            session,
            rng,
            walk,
            moves,
            acks: AckWindow { bits: [0; ACK_WINDOW / 64] },
            recent: [SentMove::default(); RECENT_MOVES],
            last_applied: None,
            last_aoi: None,
            economy,
            combat,
            duties,
            report: BotReport::default(),
            flushed: (0, 0),
            finish,
            hard_stop: finish + plan.economy_settle,
            plan,
            out: [0u8; protocol::CLIENT_DATAGRAM_MAX + 64],
        }
    }

    /// The bot's socket.
    pub fn fd(&self) -> RawFd {
        self.session.socket.as_raw_fd()
    }

    fn client_ms(&self, t: Instant) -> u32 {
        t.saturating_duration_since(self.session.clock).as_millis() as u32
    }

    fn in_measured_window(&self, intended: Instant) -> bool {
        intended >= self.plan.measure_start && intended < self.plan.end
    }

    fn send_out(&mut self, len: usize) -> bool {
        // Non-blocking: a full send buffer is a send error, counted, never a stall.
        let ok = self.session.socket.send(&self.out[..len]).is_ok();
        if !ok {
            self.report.send_errors += 1;
        }
        ok
    }

    fn send_move(&mut self, k: u64, intended: Instant, lat: &mut Latencies) {
        let number = (k + 1) as u32;
        let sequence = move_sequence(k);
        let (x, y, facing) = self.walk.step(&mut self.rng);
        let now = Instant::now();
        let sent = SentMove { sequence, sent_us: self.plan.epoch.micros(now), client_time_ms: self.client_ms(intended), x, y, facing };
        self.recent[number as usize % RECENT_MOVES] = sent;
        self.acks.sent(number);
        // The next move's: newer than this move and than an attack sent after it.
        self.session.next_sequence = sequence.wrapping_add(2);
        if self.in_measured_window(intended) {
            self.report.moves_sent += 1;
            lat.send_lag.record(elapsed_us(intended, now));
        }
        let len = self.encode_move(&sent, self.session.session_token);
        self.send_out(len);
    }

    fn encode_move(&mut self, m: &SentMove, token: u64) -> usize {
        let message = Move {
            player_id: self.session.player_id,
            session_token: token,
            sequence: m.sequence,
            client_time_ms: m.client_time_ms,
            x_m: m.x,
            y_m: m.y,
            facing_rad: m.facing,
            payload: payload(self.session.player_id, m.sequence),
        };
        protocol::encode(&message.into(), Flags::NONE, &mut self.out).expect("walk positions are finite")
    }

    fn duty(&mut self, j: u64) {
        let kind = HostileKind::BOT_DUTIES[((self.session.index as u64 + j) % 2) as usize];
        let len = match kind {
            HostileKind::Replayed => {
                // Only a move the server recorded (acked) is a sure `replayed`.
                let Some(seq) = self.last_applied else { return };
                let m = self.recent[(seq / 2) as usize % RECENT_MOVES];
                if m.sequence != seq {
                    return;
                }
                self.encode_move(&m, self.session.session_token)
            }
            _ => {
                let ctx = CraftContext { victim: self.session.victim(), admin_key: 0, period: 0 };
                let mut buf = [0u8; crate::hostile::CRAFT_MAX];
                let n = craft(kind, j, &ctx, &mut buf);
                self.out[..n].copy_from_slice(&buf[..n]);
                n
            }
        };
        if self.send_out(len) {
            self.report.hostile.bump(kind);
        }
    }

    /// Sends everything due at `now`: overdue moves oldest first (each measured from its own
    /// intended time), economy requests and resends, hostile duties.
    pub fn on_wake(&mut self, now: Instant, lat: &mut Latencies) {
        if now >= self.finish {
            if let Some(agent) = &mut self.economy {
                agent.end_of_run();
            }
            if let Some(agent) = &mut self.combat {
                agent.end_of_run();
            }
        }
        let behind = self.moves.behind(now);
        self.report.max_behind = self.report.max_behind.max(behind);
        while let Some((k, intended)) = self.moves.take_due(now) {
            self.send_move(k, intended, lat);
        }
        if let Some(agent) = &mut self.economy {
            let sends = agent.poll(now, &mut self.rng, &self.plan.peers);
            for o in sends.into_iter().flatten() {
                let n = protocol::encode(&o.request.message(), o.flags, &mut self.out).expect("economy requests always encode");
                self.send_out(n);
            }
        }
        while let Some((j, _)) = self.duties.as_mut().and_then(|d| d.take_due(now)) {
            self.duty(j);
        }
        let last_move = self.moves.taken().checked_sub(1).map(move_sequence);
        let Some(agent) = &mut self.combat else { return };
        agent.on_timeout(now);
        let (order, claim) = (agent.poll(now, last_move), agent.poll_claim(now));
        let (player_id, session_token) = (self.session.player_id, self.session.session_token);
        if let Some(order) = order {
            let attack = Attack { player_id, session_token, target_id: order.target_id, sequence: order.sequence };
            let n = protocol::encode(&attack.into(), Flags::NONE, &mut self.out).expect("attacks always encode");
            self.send_out(n);
        }
        if let Some(loot_id) = claim {
            let n = protocol::encode(&LootClaim { player_id, session_token, loot_id }.into(), Flags::NONE, &mut self.out)
                .expect("claims always encode");
            self.send_out(n);
        }
    }

    /// Whether nothing the server may have applied awaits its answer: no economy
    /// transaction, no loot claim.
    fn settled(&self) -> bool {
        self.economy.as_ref().is_none_or(EconomyAgent::settled) && self.combat.as_ref().is_none_or(CombatAgent::settled)
    }

    /// When the bot next has something to do: its next move exactly, anything else rounded
    /// up onto `grid` (a resend a few hundred microseconds late costs nothing, and sharing
    /// the moves' wake-ups saves one each).
    pub fn next_wake(&self, grid: &SendGrid) -> Instant {
        let end = if self.settled() { self.finish } else { self.hard_stop };
        let later = [
            self.economy.as_ref().and_then(EconomyAgent::next_deadline),
            self.duties.as_ref().and_then(Pacer::next_deadline),
            self.combat.as_ref().and_then(CombatAgent::next_deadline),
        ];
        let mut wake = grid.round_up(end);
        for d in later.into_iter().flatten() {
            wake = wake.min(grid.round_up(d));
        }
        self.moves.next_deadline().map_or(wake, |m| m.min(wake))
    }

    /// Whether the bot is done at `now`: past its drain with nothing awaiting its answer
    /// (no economy transaction, no loot claim), or past the hard stop.
    pub fn finished(&self, now: Instant) -> bool {
        (now >= self.finish && self.settled()) || now >= self.hard_stop
    }

    /// Stops starting anything new (Ctrl-C): drains for the plan's drain from `now`.
    pub fn stop_early(&mut self, now: Instant) {
        self.moves.stop();
        if let Some(agent) = &mut self.economy {
            agent.stop_starting();
        }
        if let Some(d) = &mut self.duties {
            d.stop();
        }
        self.finish = self.finish.min(now + self.plan.drain);
        self.hard_stop = self.hard_stop.min(self.finish + self.plan.economy_settle);
    }

    /// A receive failed (e.g. an ICMP port unreachable on the connected socket).
    pub fn on_recv_error(&mut self) {
        self.report.recv_errors += 1;
    }

    fn on_ack(&mut self, ack: &MoveAck<'_>, now: Instant, lat: &mut Latencies) {
        // Moves carry even sequences: move number `n` (1-based) is sequence `2n`.
        let highest = self.moves.taken() as u32;
        let number = ack.sequence / 2;
        if !ack.sequence.is_multiple_of(2) || number == 0 || number > highest {
            self.report.unexpected_acks += 1;
            return;
        }
        match self.acks.acked(number, highest) {
            AckState::Duplicate => {
                self.report.duplicate_acks += 1;
                return;
            }
            AckState::TooOld => {
                self.report.late_acks += 1;
                return;
            }
            AckState::New => {}
        }
        let sent = self.recent[number as usize % RECENT_MOVES];
        if sent.sequence == ack.sequence && sent.client_time_ms != ack.client_time_ms {
            self.report.echo_mismatches += 1;
        }
        if ack.result == MoveResult::Applied {
            self.last_applied = Some(self.last_applied.map_or(ack.sequence, |s| s.max(ack.sequence)));
            self.report.contacts += ack.contacts.len() as u64;
        }
        let intended = self.moves.schedule().intended(u64::from(number - 1));
        if !self.in_measured_window(intended) {
            return;
        }
        self.report.acks += 1;
        if ack.result != MoveResult::Applied {
            self.report.rejected[usize::from(ack.result.as_u8())] += 1;
        }
        let rtt = elapsed_us(intended, now);
        lat.move_rtt.record(rtt);
        if sent.sequence == ack.sequence {
            let now_us = self.plan.epoch.micros(now);
            lat.move_rtt_from_send.record(now_us.saturating_sub(sent.sent_us).max(1));
        }
        if let Some(windows) = &self.plan.raid_windows {
            let epoch = self.plan.epoch;
            if windows.overlaps(epoch.micros(intended), epoch.micros(now)) {
                lat.move_rtt_raid.record(rtt);
            } else {
                lat.move_rtt_calm.record(rtt);
            }
        }
    }

    /// A datagram that reached the machine at `arrival`. One cut short by the receive buffer
    /// counts as undecodable.
    pub fn on_datagram(&mut self, bytes: &[u8], truncated: bool, arrival: Instant, lat: &mut Latencies) {
        let message = match protocol::decode(bytes) {
            Ok(d) if !truncated => d.message,
            _ => {
                self.report.decode_errors += 1;
                return;
            }
        };
        let now = arrival;
        match message {
            Message::MoveAck(ack) => self.on_ack(&ack, now, lat),
            Message::AoiSnapshot(s) => {
                if let Some(agent) = &mut self.combat {
                    agent.on_snapshot(self.walk.position(), &s.entries);
                }
                let measuring = now >= self.plan.measure_start && now < self.plan.end;
                if let Some(prev) = self.last_aoi
                    && measuring
                {
                    lat.aoi_gap.record(elapsed_us(prev, now));
                }
                if measuring {
                    self.report.aoi_snapshots += 1;
                }
                self.last_aoi = Some(now);
            }
            Message::EconomyResult(r) => match &mut self.economy {
                Some(agent) => {
                    if let Some(us) = agent.on_result(now, &r) {
                        lat.economy_rtt.record(us);
                    }
                }
                None => self.report.unexpected_messages += 1,
            },
            Message::AttackResult(r) => match &mut self.combat {
                Some(agent) => agent.on_result(&r, now),
                None => self.report.unexpected_messages += 1,
            },
            Message::LootResult(r) => match &mut self.combat {
                Some(agent) => {
                    // Loot newly the bot's (its first answer saying so) is stock to trade.
                    if agent.on_loot_result(&r)
                        && let Some(economy) = &mut self.economy
                    {
                        economy.on_loot(r.item_kind, r.item_count);
                    }
                }
                None => self.report.unexpected_messages += 1,
            },
            Message::TradeNotice(n) => match &mut self.economy {
                Some(agent) => agent.on_trade_notice(&n, now),
                None => self.report.unexpected_messages += 1,
            },
            // Kills near a bot that does not fight are news it may ignore.
            Message::KillNotice(k) => {
                if let Some(agent) = &mut self.combat {
                    agent.on_kill_notice(k.target_id);
                }
            }
            // A late duplicate of the handshake's replies is harmless.
            Message::JoinChallenge(_) | Message::JoinAccept(_) => {}
            _ => self.report.unexpected_messages += 1,
        }
    }

    /// Adds what the bot counted since the last flush to the progress counters.
    pub fn flush_live(&mut self) {
        let (m, a) = self.flushed;
        self.plan.live.moves_sent.fetch_add(self.report.moves_sent - m, Ordering::Relaxed);
        self.plan.live.acks.fetch_add(self.report.acks - a, Ordering::Relaxed);
        self.flushed = (self.report.moves_sent, self.report.acks);
    }

    /// Ends play: economy requests still unanswered are abandoned (counted unknown), and the
    /// session (for `LEAVE`) and the report are handed back.
    pub fn finish(mut self) -> (Session<StdUdpSocket>, BotReport) {
        if let Some(agent) = &mut self.economy {
            agent.abandon_in_flight();
            self.report.economy = agent.tally;
        }
        if let Some(agent) = &mut self.combat {
            agent.abandon_claim();
            self.report.combat = agent.tally;
        }
        self.flush_live();
        (self.session, self.report)
    }
}

/// What a `LEAVE` got.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LeaveOutcome {
    /// `LEAVE_ACK` received.
    Acked,
    /// No ack after every attempt (the server may still have ended the session).
    NoAck,
}

/// Sends `LEAVE` with the session's next sequence until `LEAVE_ACK` (at most `attempts`).
pub async fn leave(session: &Session, attempts: u32, timeout: Duration) -> LeaveOutcome {
    let mut out = [0u8; 64];
    let mut buf = [0u8; RECV_BUF];
    let leave = Leave { player_id: session.player_id, session_token: session.session_token, sequence: session.next_sequence };
    for attempt in 0..attempts {
        let flags = if attempt == 0 { Flags::NONE } else { Flags::RETRANSMIT };
        let n = protocol::encode(&leave.into(), flags, &mut out).expect("a leave always encodes");
        let _ = session.socket.send(&out[..n]).await;
        let deadline = Instant::now() + timeout;
        while let Ok(Some(n)) = recv_until(&session.socket, &mut buf, deadline).await {
            if let Ok(d) = protocol::decode(&buf[..n])
                && let Message::LeaveAck(a) = d.message
                && a.player_id == session.player_id
            {
                return LeaveOutcome::Acked;
            }
        }
    }
    LeaveOutcome::NoAck
}

/// What the flood bot sent and got back.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct FloodTally {
    /// Moves sent.
    pub sent: u64,
    /// Acks received (each for a move the server let through).
    pub acked: u64,
    /// Send errors.
    pub send_errors: u64,
}

/// Sends `MOVE`s far above the per-player rate from one joined session, standing still (so
/// every move the server lets through passes the speed rule), from `start` until `end` (or
/// `stop`), then drains acks for `drain`.
pub async fn flood(session: Session, rate: f64, start: Instant, end: Instant, drain: Duration, stop: &AtomicBool) -> (Session, FloodTally) {
    let mut tally = FloodTally::default();
    if rate <= 0.0 {
        return (session, tally);
    }
    let mut pacer = Pacer::until(Schedule::new(start, Duration::from_secs_f64(1.0 / rate)), end);
    let mut out = [0u8; 128];
    let mut buf = [0u8; RECV_BUF];
    let mut sequence = session.next_sequence;
    let sleep = tokio::time::sleep_until(start.into());
    tokio::pin!(sleep);
    let finish = end + drain;
    loop {
        let now = Instant::now();
        if stop.load(Ordering::Relaxed) {
            pacer.stop();
        }
        while pacer.take_due(now).is_some() {
            let m = Move {
                player_id: session.player_id,
                session_token: session.session_token,
                sequence,
                client_time_ms: now.saturating_duration_since(session.clock).as_millis() as u32,
                x_m: session.spawn.0,
                y_m: session.spawn.1,
                facing_rad: 0.0,
                payload: payload(session.player_id, sequence),
            };
            sequence = sequence.wrapping_add(1);
            let n = protocol::encode(&m.into(), Flags::NONE, &mut out).expect("a spawn point is finite");
            tally.sent += 1;
            if session.socket.send(&out[..n]).await.is_err() {
                tally.send_errors += 1;
            }
        }
        if now >= finish {
            break;
        }
        sleep.as_mut().reset(pacer.next_deadline().unwrap_or(finish).min(finish).into());
        let got = tokio::select! {
            biased;
            r = session.socket.recv(&mut buf) => Some(r),
            () = &mut sleep => None,
        };
        if let Some(Ok(n)) = got
            && let Ok(d) = protocol::decode(&buf[..n])
            && let Message::MoveAck(_) = d.message
        {
            tally.acked += 1;
        }
    }
    let mut session = session;
    session.next_sequence = sequence;
    (session, tally)
}
