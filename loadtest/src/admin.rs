//! The admin side of the protocol: `STATS_REQUEST` / `STATS_REPLY` (the server's figures),
//! `RAID_TRIGGER` / `RAID_RESULT`, and `GRANT` / `ECONOMY_RESULT` (the economy scenario's
//! working capital), over one socket of their own.
//!
//! A stats request is idempotent, so it is resent on timeout until a reply with its
//! `request_id` arrives. A raid trigger is not (a resend would spawn a second burst), so it
//! is sent once and a missing result is reported as lost. A grant is applied at most once per
//! (player, grant id), so grants are resent until answered like stats requests. The server drops admin messages
//! with a wrong key without a reply, so "no reply" names that as the likely cause.
//!
//! Every admin datagram comes from this one socket, and the server limits what one source
//! address may send (`--address-rate`, 400 a second after a burst of 800, by default): past it
//! the datagrams are dropped before they are read. So the client paces its sends
//! ([`AdminPace`], `--admin-rate`), and the grants (one per bot, thousands at a time) go out
//! at that pace with their answers read in between, so neither the server's limit nor this
//! socket's receive buffer drops them.

use crate::net::{connected_socket, is_transient};
use crate::protocol::{self, EconomyStatus, Flags, Grant, Message, RaidResult, RaidTrigger, STATS_REPLY_MAX, StatsRequest, TradeSide};
use crate::server_stats::ServerStats;
use serde::Serialize;
use std::net::SocketAddrV4;
use std::time::{Duration, Instant};
use tokio::net::UdpSocket;

/// Why the server's figures or a raid result could not be had.
#[derive(Debug, thiserror::Error)]
pub enum AdminError {
    /// No reply after every attempt.
    #[error(
        "no STATS_REPLY from the server after {0} attempts (is it running, and is --admin-key the server's key? it drops admin messages with a wrong key without a reply)"
    )]
    NoReply(u32),
    /// A socket error.
    #[error("admin socket: {0}")]
    Io(#[from] std::io::Error),
    /// A message could not be encoded (a bug).
    #[error("encoding an admin message: {0}")]
    Encode(#[from] protocol::EncodeError),
}

/// What the grants before an economy run did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct GrantSummary {
    /// Players granted to.
    pub requested: u64,
    /// Grants the server applied (first-time or, for a resend, recorded as applied).
    pub applied: u64,
    /// Grants it refused.
    pub refused: u64,
    /// Grants never answered (after every resend).
    pub unanswered: u64,
    /// `GRANT` datagrams sent, resends included.
    pub sent: u64,
    /// Gold the applied grants created.
    pub gold: u64,
    /// Items the applied grants created.
    pub items: u64,
}

/// Admin datagrams a second by default (`--admin-rate`): under the server's default
/// per-address limit of 400, with room for another client's requests from the same address.
pub const DEFAULT_RATE_PER_S: f64 = 300.0;

/// A token bucket for the admin socket's sends: `rate_per_s` a second, in bursts of at most
/// [`AdminPace::BURST_S`] of that. The bursts are short because the answers come back as fast
/// as the sends go out, and a socket's default receive buffer (this one's, and the server's
/// where `net.core.rmem_max` caps it) holds only a few hundred small datagrams.
#[derive(Clone, Copy, Debug)]
pub struct AdminPace {
    rate_per_s: f64,
    burst: f64,
    tokens: f64,
    at: Instant,
}

impl AdminPace {
    /// The longest burst, in seconds' worth of the rate.
    pub const BURST_S: f64 = 0.05;
    /// Slack on the token count for the rounding of elapsed times.
    const EPSILON: f64 = 1e-9;

    /// A full bucket at `now`, its bursts [`AdminPace::BURST_S`] of the rate.
    pub fn new(rate_per_s: f64, now: Instant) -> AdminPace {
        AdminPace::with_burst(rate_per_s, Self::BURST_S * rate_per_s, now)
    }

    /// A full bucket at `now` holding at most `burst` sends (at least one).
    pub fn with_burst(rate_per_s: f64, burst: f64, now: Instant) -> AdminPace {
        assert!(rate_per_s.is_finite() && rate_per_s > 0.0, "a positive send rate");
        let burst = burst.max(1.0);
        AdminPace { rate_per_s, burst, tokens: burst, at: now }
    }

    /// Takes a send at `now` if the pace allows one.
    pub fn try_take(&mut self, now: Instant) -> bool {
        if now > self.at {
            self.tokens = (self.tokens + (now - self.at).as_secs_f64() * self.rate_per_s).min(self.burst);
            self.at = now;
        }
        if self.tokens >= 1.0 - Self::EPSILON {
            self.tokens = (self.tokens - 1.0).max(0.0);
            true
        } else {
            false
        }
    }

    /// When the next send is allowed (`now` if it is already).
    pub fn next_at(&self, now: Instant) -> Instant {
        let tokens = self.tokens + now.saturating_duration_since(self.at).as_secs_f64() * self.rate_per_s;
        if tokens >= 1.0 - Self::EPSILON { now } else { now + Duration::from_nanos(((1.0 - tokens) / self.rate_per_s * 1e9).ceil() as u64) }
    }
}

/// The admin socket and key.
pub struct AdminClient {
    socket: UdpSocket,
    key: u64,
    /// Paces every send (see the module doc).
    pace: AdminPace,
    next_request: u32,
    buf: Vec<u8>,
    timeout: Duration,
    attempts: u32,
    /// Replies that did not decode.
    pub decode_errors: u64,
}

impl AdminClient {
    /// An admin client for `server` using `key`, sending at most `rate_per_s` datagrams a
    /// second ([`AdminPace`]). Must be called inside the tokio runtime.
    pub fn connect(server: SocketAddrV4, key: u64, rate_per_s: f64) -> std::io::Result<AdminClient> {
        Ok(AdminClient {
            socket: connected_socket(server)?,
            key,
            pace: AdminPace::new(rate_per_s, Instant::now()),
            next_request: 1,
            buf: vec![0u8; STATS_REPLY_MAX + 1],
            timeout: Duration::from_millis(500),
            attempts: 6,
            decode_errors: 0,
        })
    }

    fn request_id(&mut self) -> u32 {
        let id = self.next_request;
        self.next_request = self.next_request.wrapping_add(1).max(1);
        id
    }

    /// Sends `message` once the pace allows it.
    async fn send(&mut self, message: Message<'_>) -> Result<(), AdminError> {
        loop {
            let now = Instant::now();
            if self.pace.try_take(now) {
                break;
            }
            tokio::time::sleep_until(self.pace.next_at(now).into()).await;
        }
        self.send_now(message).await
    }

    /// Sends `message` now (the caller took it from the pace).
    async fn send_now(&self, message: Message<'_>) -> Result<(), AdminError> {
        let mut out = [0u8; 64];
        let len = protocol::encode(&message, Flags::NONE, &mut out)?;
        match self.socket.send(&out[..len]).await {
            Ok(_) => Ok(()),
            Err(e) if is_transient(&e) => Ok(()),
            Err(e) => Err(e.into()),
        }
    }

    /// Fetches the server's figures, resending the request on timeout.
    pub async fn stats(&mut self) -> Result<ServerStats, AdminError> {
        for _ in 0..self.attempts {
            let request_id = self.request_id();
            self.send(StatsRequest { admin_key: self.key, request_id }.into()).await?;
            let deadline = Instant::now() + self.timeout;
            while let Some(len) = self.recv_until(deadline).await? {
                match protocol::decode(&self.buf[..len]) {
                    Ok(d) => {
                        if let Message::StatsReply(reply) = d.message
                            && reply.request_id == request_id
                        {
                            return Ok(ServerStats::parse(reply.text));
                        }
                    }
                    Err(_) => self.decode_errors += 1,
                }
            }
        }
        Err(AdminError::NoReply(self.attempts))
    }

    /// Sends one raid trigger (its `admin_key` and `request_id` are filled in here) and
    /// returns its request id. Never resent: see the module docs.
    pub async fn send_raid(&mut self, trigger: RaidTrigger) -> Result<u32, AdminError> {
        let request_id = self.request_id();
        self.send(RaidTrigger { admin_key: self.key, request_id, ..trigger }.into()).await?;
        Ok(request_id)
    }

    /// Waits until `deadline` for the result of raid `request_id`.
    pub async fn raid_result(&mut self, request_id: u32, deadline: Instant) -> Result<Option<RaidResult>, AdminError> {
        while let Some(len) = self.recv_until(deadline).await? {
            match protocol::decode(&self.buf[..len]) {
                Ok(d) => {
                    if let Message::RaidResult(r) = d.message
                        && r.request_id == request_id
                    {
                        return Ok(Some(r));
                    }
                }
                Err(_) => self.decode_errors += 1,
            }
        }
        Ok(None)
    }

    /// Grants `stack` to `player_id` as grant `grant_id` and returns its answer, resending on
    /// timeout and after a `StorageBusy` answer (not a decision: the server's disk was behind).
    pub async fn grant(&mut self, player_id: u64, grant_id: u64, stack: TradeSide) -> Result<protocol::EconomyResult, AdminError> {
        for _ in 0..self.attempts {
            self.send(Grant { admin_key: self.key, player_id, grant_id, stack }.into()).await?;
            let deadline = Instant::now() + self.timeout;
            while let Some(len) = self.recv_until(deadline).await? {
                match protocol::decode(&self.buf[..len]) {
                    Ok(d) => {
                        if let Message::EconomyResult(r) = d.message
                            && r.transaction_id == grant_id
                            && r.status != EconomyStatus::StorageBusy
                        {
                            return Ok(r);
                        }
                    }
                    Err(_) => self.decode_errors += 1,
                }
            }
        }
        Err(AdminError::NoReply(self.attempts))
    }

    /// Grants `stack` to each of `players` (grant id = its index + 1, so each answer names its
    /// player), sent at the admin pace with the answers read in between; each round resends
    /// the grants still unanswered a timeout after its last send, up to the attempts. A
    /// `StorageBusy` answer is not a decision (the server's disk was behind): that grant is
    /// resent too.
    pub async fn grant_all(&mut self, players: &[u64], stack: TradeSide) -> Result<GrantSummary, AdminError> {
        let mut summary = GrantSummary { requested: players.len() as u64, ..GrantSummary::default() };
        let mut answered = vec![false; players.len()];
        let mut left = players.len();
        for _ in 0..self.attempts {
            if left == 0 {
                break;
            }
            let round: Vec<usize> = (0..players.len()).filter(|&i| !answered[i]).collect();
            let mut next = 0;
            let mut deadline = Instant::now() + self.timeout;
            while left > 0 {
                let now = Instant::now();
                while next < round.len() && self.pace.try_take(now) {
                    let i = round[next];
                    next += 1;
                    if answered[i] {
                        // Answered meanwhile (a late answer to the round before): the token
                        // is spent on nothing, which only slows the round a little.
                        continue;
                    }
                    self.send_now(Grant { admin_key: self.key, player_id: players[i], grant_id: i as u64 + 1, stack }.into()).await?;
                    summary.sent += 1;
                    deadline = now + self.timeout;
                }
                // Read until the next send is allowed, or, with the round sent, until its deadline.
                let until = if next < round.len() { self.pace.next_at(Instant::now()) } else { deadline };
                let Some(len) = self.recv_until(until).await? else {
                    if next < round.len() {
                        continue;
                    }
                    break;
                };
                let Ok(d) = protocol::decode(&self.buf[..len]) else {
                    self.decode_errors += 1;
                    continue;
                };
                let Message::EconomyResult(r) = d.message else { continue };
                if r.status == EconomyStatus::StorageBusy {
                    continue;
                }
                let Some(i) = (r.transaction_id as usize).checked_sub(1).filter(|&i| i < players.len() && !answered[i]) else {
                    continue;
                };
                answered[i] = true;
                left -= 1;
                if r.status == EconomyStatus::Applied {
                    summary.applied += 1;
                    summary.gold += stack.gold.max(0) as u64;
                    summary.items += u64::from(stack.item_count.max(0) as u32);
                } else {
                    summary.refused += 1;
                }
            }
        }
        summary.unanswered = left as u64;
        Ok(summary)
    }

    /// Receives one datagram into `self.buf`, or `None` at `deadline`.
    async fn recv_until(&mut self, deadline: Instant) -> Result<Option<usize>, AdminError> {
        loop {
            let now = Instant::now();
            if now >= deadline {
                return Ok(None);
            }
            match tokio::time::timeout(deadline - now, self.socket.recv(&mut self.buf)).await {
                Err(_) => return Ok(None),
                Ok(Ok(len)) => return Ok(Some(len)),
                Ok(Err(e)) if is_transient(&e) => tokio::time::sleep(Duration::from_millis(5)).await,
                Ok(Err(e)) => return Err(e.into()),
            }
        }
    }
}
