//! The admin side of the protocol: `STATS_REQUEST` / `STATS_REPLY` (the server's figures),
//! `RAID_TRIGGER` / `RAID_RESULT`, and `GRANT` / `ECONOMY_RESULT` (the economy scenario's
//! working capital), over one socket of their own.
//!
//! A stats request is idempotent, so it is resent on timeout until a reply with its
//! `request_id` arrives. A raid trigger is not (a resend would spawn a second burst), so it
//! is sent once and a missing result is reported as lost. A grant is applied at most once per
//! (player, grant id), so grants are resent until answered like stats requests. The server drops admin messages
//! with a wrong key without a reply, so "no reply" names that as the likely cause.

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

/// The admin socket and key.
pub struct AdminClient {
    socket: UdpSocket,
    key: u64,
    next_request: u32,
    buf: Vec<u8>,
    timeout: Duration,
    attempts: u32,
    /// Replies that did not decode.
    pub decode_errors: u64,
}

impl AdminClient {
    /// An admin client for `server` using `key`. Must be called inside the tokio runtime.
    pub fn connect(server: SocketAddrV4, key: u64) -> std::io::Result<AdminClient> {
        Ok(AdminClient {
            socket: connected_socket(server)?,
            key,
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

    async fn send(&self, message: Message<'_>) -> Result<(), AdminError> {
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
    /// player), all sent at once and the unanswered resent every timeout, up to the attempts.
    pub async fn grant_all(&mut self, players: &[u64], stack: TradeSide) -> Result<GrantSummary, AdminError> {
        let mut summary = GrantSummary { requested: players.len() as u64, ..GrantSummary::default() };
        let mut answered = vec![false; players.len()];
        for _ in 0..self.attempts {
            for (i, &player_id) in players.iter().enumerate().filter(|(i, _)| !answered[*i]) {
                self.send(Grant { admin_key: self.key, player_id, grant_id: i as u64 + 1, stack }.into()).await?;
                summary.sent += 1;
            }
            let deadline = Instant::now() + self.timeout;
            while answered.iter().any(|a| !a)
                && let Some(len) = self.recv_until(deadline).await?
            {
                let Ok(d) = protocol::decode(&self.buf[..len]) else {
                    self.decode_errors += 1;
                    continue;
                };
                let Message::EconomyResult(r) = d.message else { continue };
                let Some(i) = (r.transaction_id as usize).checked_sub(1).filter(|&i| i < players.len() && !answered[i]) else {
                    continue;
                };
                answered[i] = true;
                if r.status == EconomyStatus::Applied {
                    summary.applied += 1;
                    summary.gold += stack.gold.max(0) as u64;
                    summary.items += u64::from(stack.item_count.max(0) as u32);
                } else {
                    summary.refused += 1;
                }
            }
            if answered.iter().all(|a| *a) {
                break;
            }
        }
        summary.unanswered = answered.iter().filter(|a| !**a).count() as u64;
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
