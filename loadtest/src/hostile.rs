//! The hostile scenario's traffic: datagrams built to be dropped for one known reason each,
//! and the bookkeeping to check that the server dropped exactly those, for exactly those
//! reasons.
//!
//! Each kind targets one row of the protocol's validation table:
//!
//! | kind | what is sent | from | expected drop |
//! |---|---|---|---|
//! | bad_magic, bad_version, obsolete_version, unknown_type, truncated, oversized, bad_length, bad_field | a `MOVE` (or header) broken in that one way (obsolete_version: a well-formed v1 `MOVE`) | a pool socket | that reason |
//! | bad_cookie | a `JOIN_CONFIRM` with a current period and a made-up cookie | a pool socket | `bad_cookie` |
//! | bad_admin_key | a `STATS_REQUEST` with the wrong key | a pool socket | `bad_admin_key` |
//! | unknown_player | a `MOVE` for a player id nobody has | a pool socket | `unknown_player` |
//! | address_mismatch | a victim bot's `MOVE` (right id and token) | a socket the server serves on the victim's worker | `address_mismatch` |
//! | bad_session | the bot's own `MOVE` with a wrong token | the bot's socket | `bad_session` |
//! | replayed | the bot's last acknowledged `MOVE`, byte for byte | the bot's socket | `replayed` |
//! | flooding | `MOVE`s far above the per-player rate | a dedicated flood bot | at least the unacknowledged ones as `rate_limited_player` |
//!
//! Three subtleties decide whether the counts can match exactly:
//! - **Sessions are per worker.** The server's I/O workers each own the sessions of the
//!   addresses the kernel's `SO_REUSEPORT` hash sends them, and step 13 asks "does *this
//!   worker* have a session for the player". A spoofed `MOVE` from a random socket lands on a
//!   random worker, where it is `unknown_player` unless that worker is the victim's. So the
//!   scenario first *probes*: it sends one spoofed `MOVE` per candidate socket and reads the
//!   server's counters around it; a candidate whose probe counted `address_mismatch` shares
//!   the victim's worker and is kept ([`probe_spoofers`]). `bad_session` and `replayed` are
//!   sent from the bot's own socket, which by construction reaches the bot's worker.
//! - **Rate limits come after the cheap checks.** Steps 1 to 8 drop before the per-address
//!   token bucket (step 9), but later kinds spend its tokens; they are spread over a pool of
//!   sockets so none comes near `--address-rate`.
//! - **Replays must be of moves the server recorded.** The replay window records a sequence
//!   only once its message passed every check, so a bot replays only a move whose ack it has
//!   seen; replaying a lost one would be a legitimate (if stale) move.
//!
//! Everything here builds bytes with [`crate::protocol`], and the unit tests run each
//! crafted datagram through [`crate::protocol::decode_client`] (the server's steps 1 to 8) to
//! prove it fails, or passes, where it should.

use crate::admin::{AdminClient, AdminError};
use crate::net::connected_socket;
use crate::protocol::{self, DropReason, Flags, JoinConfirm, Message, Move, StatsRequest};
use crate::rng::Rng;
use crate::schedule::{Pacer, Schedule};
use crate::server_stats::drop_counter;
use serde::Serialize;
use std::collections::BTreeMap;
use std::net::SocketAddrV4;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};
use tokio::net::UdpSocket;

/// One kind of hostile traffic.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum HostileKind {
    /// Wrong magic.
    BadMagic,
    /// Wrong version.
    BadVersion,
    /// The previous protocol version: an old client's well-formed `MOVE`.
    ObsoleteVersion,
    /// A type the server does not accept (unassigned, or a server-to-client type).
    UnknownType,
    /// Shorter than a header, or than a `MOVE`.
    Truncated,
    /// Longer than 256 bytes.
    Oversized,
    /// A `length` field that disagrees, or a `MOVE` with extra bytes.
    BadLength,
    /// A non-zero reserved byte, a reserved flag bit, or a non-finite coordinate.
    BadField,
    /// A `JOIN_CONFIRM` with a made-up cookie.
    BadCookie,
    /// A `STATS_REQUEST` with the wrong key.
    BadAdminKey,
    /// A `MOVE` for a player nobody has.
    UnknownPlayer,
    /// A bot's `MOVE` with a wrong session token.
    BadSession,
    /// A victim's `MOVE` from another address.
    AddressMismatch,
    /// A bot's acknowledged `MOVE` sent again.
    Replayed,
    /// `MOVE`s above the per-player rate.
    Flooding,
}

impl HostileKind {
    /// Kinds sent by the hostile controller task.
    pub const CONTROLLER: [HostileKind; 12] = [
        HostileKind::BadMagic,
        HostileKind::BadVersion,
        HostileKind::ObsoleteVersion,
        HostileKind::UnknownType,
        HostileKind::Truncated,
        HostileKind::Oversized,
        HostileKind::BadLength,
        HostileKind::BadField,
        HostileKind::BadCookie,
        HostileKind::BadAdminKey,
        HostileKind::UnknownPlayer,
        HostileKind::AddressMismatch,
    ];
    /// Kinds each bot sends from its own socket.
    pub const BOT_DUTIES: [HostileKind; 2] = [HostileKind::BadSession, HostileKind::Replayed];
    /// Kinds sharing `--hostile-rate` (all but flooding, which has its own rate).
    pub const RATED: usize = HostileKind::CONTROLLER.len() + HostileKind::BOT_DUTIES.len();

    /// The drop reason the server should count it under.
    pub fn expected_drop(self) -> DropReason {
        match self {
            HostileKind::BadMagic => DropReason::BadMagic,
            HostileKind::BadVersion => DropReason::BadVersion,
            HostileKind::ObsoleteVersion => DropReason::ObsoleteVersion,
            HostileKind::UnknownType => DropReason::UnknownType,
            HostileKind::Truncated => DropReason::Truncated,
            HostileKind::Oversized => DropReason::Oversized,
            HostileKind::BadLength => DropReason::BadLength,
            HostileKind::BadField => DropReason::BadField,
            HostileKind::BadCookie => DropReason::BadCookie,
            HostileKind::BadAdminKey => DropReason::BadAdminKey,
            HostileKind::UnknownPlayer => DropReason::UnknownPlayer,
            HostileKind::BadSession => DropReason::BadSession,
            HostileKind::AddressMismatch => DropReason::AddressMismatch,
            HostileKind::Replayed => DropReason::Replayed,
            HostileKind::Flooding => DropReason::RateLimitedPlayer,
        }
    }

    /// Whether it passes validation steps 1 to 8 (and so spends an address token at step 9).
    pub fn passes_static_checks(self) -> bool {
        !matches!(
            self,
            HostileKind::BadMagic
                | HostileKind::BadVersion
                | HostileKind::ObsoleteVersion
                | HostileKind::UnknownType
                | HostileKind::Truncated
                | HostileKind::Oversized
                | HostileKind::BadLength
                | HostileKind::BadField
        )
    }
}

/// A session to impersonate.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Victim {
    /// Its player id.
    pub player_id: u64,
    /// Its session token.
    pub session_token: u64,
}

/// What a crafted datagram needs to know besides its kind.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CraftContext {
    /// The session a spoofed `MOVE` impersonates (address mismatch, bad session).
    pub victim: Victim,
    /// The server's admin key (a bad-key request uses another).
    pub admin_key: u64,
    /// The server's current cookie period (`server_time_ms / 10_000`).
    pub period: u32,
}

/// The largest crafted datagram.
pub const CRAFT_MAX: usize = 300;

fn valid_move(player_id: u64, session_token: u64, sequence: u32) -> Move {
    Move {
        player_id,
        session_token,
        sequence,
        client_time_ms: sequence.wrapping_mul(100),
        x_m: 100.0,
        y_m: 100.0,
        facing_rad: 0.0,
        payload: [0x5A; protocol::PAYLOAD_LEN],
    }
}

fn put_move(m: Move, out: &mut [u8]) -> usize {
    protocol::encode(&m.into(), Flags::NONE, out).unwrap_or(0)
}

/// Builds datagram number `variant` of `kind` into `out` (at least [`CRAFT_MAX`] bytes) and
/// returns its length. Variants rotate through the ways a kind can be broken. Not for
/// [`HostileKind::Replayed`] and [`HostileKind::Flooding`], which the bots send themselves
/// (returns 0).
pub fn craft(kind: HostileKind, variant: u64, ctx: &CraftContext, out: &mut [u8]) -> usize {
    if out.len() < CRAFT_MAX {
        return 0;
    }
    let fake = 0x7FFF_FFF0_0000_0000 | (variant & 0xFFFF_FFFF);
    let n = put_move(valid_move(fake, variant ^ 0x1234_5678, 1 + (variant as u32 & 0xFFFF)), out);
    match kind {
        HostileKind::BadMagic => {
            out[..2].copy_from_slice(if variant.is_multiple_of(2) { b"OM" } else { b"\0\0" });
            n
        }
        HostileKind::BadVersion => {
            out[2] = [0u8, protocol::VERSION + 1, 0xFF][(variant % 3) as usize];
            n
        }
        HostileKind::ObsoleteVersion => {
            out[2] = protocol::OBSOLETE_VERSION;
            n
        }
        HostileKind::UnknownType => {
            out[3] = [0x00u8, 0x0E, 0x3F, 0x81, 0x8D][(variant % 5) as usize];
            n
        }
        HostileKind::Truncated => {
            if variant.is_multiple_of(2) {
                4
            } else {
                40
            }
        }
        HostileKind::Oversized => {
            out[n..CRAFT_MAX].fill(0);
            out[4..6].copy_from_slice(&(CRAFT_MAX as u16).to_le_bytes());
            CRAFT_MAX
        }
        HostileKind::BadLength => {
            if variant.is_multiple_of(2) {
                out[4..6].copy_from_slice(&((n + 1) as u16).to_le_bytes());
                n
            } else {
                out[n..n + 4].fill(0);
                out[4..6].copy_from_slice(&((n + 4) as u16).to_le_bytes());
                n + 4
            }
        }
        HostileKind::BadField => {
            match variant % 3 {
                0 => out[44] = 1,                                          // a reserved byte
                1 => out[6] = 0x02,                                        // a reserved flag bit
                _ => out[32..36].copy_from_slice(&f32::NAN.to_le_bytes()), // x_m not finite
            }
            n
        }
        HostileKind::BadCookie => {
            // The cookie is checked before the token: a forged cookie with no token at all.
            let confirm = JoinConfirm {
                nonce: fake,
                period: ctx.period,
                cookie: variant.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1,
                token: [0; protocol::CONNECT_TOKEN_SIZE],
            };
            protocol::encode(&confirm.into(), Flags::NONE, out).unwrap_or(0)
        }
        HostileKind::BadAdminKey => {
            let request =
                StatsRequest { admin_key: ctx.admin_key ^ 0x00BA_DC0F_FEE0_0000 ^ (variant << 1 | 1), request_id: variant as u32 };
            protocol::encode(&Message::StatsRequest(request), Flags::NONE, out).unwrap_or(0)
        }
        HostileKind::UnknownPlayer => n,
        HostileKind::AddressMismatch => put_move(valid_move(ctx.victim.player_id, ctx.victim.session_token, 1), out),
        HostileKind::BadSession => {
            put_move(valid_move(ctx.victim.player_id, ctx.victim.session_token ^ 0x5A5A_5A5A_0000_0001, 1 + variant as u32), out)
        }
        HostileKind::Replayed | HostileKind::Flooding => 0,
    }
}

/// Hostile datagrams sent, per kind.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SentCounts(BTreeMap<HostileKind, u64>);

impl SentCounts {
    /// Counts one more of `kind`.
    pub fn bump(&mut self, kind: HostileKind) {
        *self.0.entry(kind).or_default() += 1;
    }

    /// Adds `n` of `kind`.
    pub fn add_n(&mut self, kind: HostileKind, n: u64) {
        *self.0.entry(kind).or_default() += n;
    }

    /// Adds another count.
    pub fn add(&mut self, other: &SentCounts) {
        for (k, v) in &other.0 {
            self.add_n(*k, *v);
        }
    }

    /// How many of `kind` were sent.
    pub fn get(&self, kind: HostileKind) -> u64 {
        self.0.get(&kind).copied().unwrap_or(0)
    }

    /// Sent datagrams per expected drop reason.
    pub fn by_reason(&self) -> BTreeMap<DropReason, u64> {
        let mut m = BTreeMap::new();
        for (k, v) in &self.0 {
            *m.entry(k.expected_drop()).or_default() += v;
        }
        m
    }
}

/// How the hostile scenario sends.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct HostilePlan {
    /// Datagrams per second over all rated kinds (see [`HostileKind::RATED`]).
    pub rate: f64,
    /// The flood bot's `MOVE`s per second.
    pub flood_rate: f64,
    /// Sockets the controller spreads its datagrams over.
    pub pool_sockets: usize,
    /// Candidate sockets to probe for address-mismatch spoofing, at most.
    pub max_probes: usize,
    /// Spoofing sockets wanted.
    pub want_spoofers: usize,
}

/// The server's default per-address rate limit (`--address-rate`), datagrams a second.
pub const SERVER_ADDRESS_RATE_DEFAULT: f64 = 400.0;

impl HostilePlan {
    /// The plan the command line asks for.
    pub fn from_cli(cli: &crate::cli::Cli) -> HostilePlan {
        HostilePlan {
            rate: cli.hostile_rate,
            flood_rate: cli.flood_rate,
            pool_sockets: cli.hostile_sockets as usize,
            max_probes: 32,
            want_spoofers: 4,
        }
    }

    /// Datagrams per second of one rated kind.
    pub fn per_kind_rate(&self) -> f64 {
        self.rate / HostileKind::RATED as f64
    }

    /// Whether some hostile source sends more than half the server's default per-address
    /// limit (step 9), so that the server may drop some of its datagrams at that limit rather
    /// than for the reason they were built for: a pool socket (the bad-cookie, bad-admin-key
    /// and unknown-player kinds, each datagram from a random one of them) past half of
    /// [`SERVER_ADDRESS_RATE_DEFAULT`], or a spoofer (`spoofers` found share the
    /// address-mismatch kind) likewise. The host's join limit is not one of them: it is
    /// charged only for confirms with a valid cookie, which no hostile kind sends. The bots'
    /// own duties (bad session, replayed) are spread over every bot and stay far below. The
    /// drop check counts exactly when this is false, and lets the address limit count the
    /// shortfall (and says so) when it is true.
    pub fn sources_past_limits(&self, spoofers: usize) -> bool {
        let k = self.per_kind_rate();
        let pool = 3.0 * k / self.pool_sockets.max(1) as f64;
        let spoofer = if spoofers > 0 { k / spoofers as f64 } else { 0.0 };
        pool.max(spoofer) > SERVER_ADDRESS_RATE_DEFAULT / 2.0
    }

    /// The interval between one bot's hostile duties when `bots` bots share the two duty kinds.
    pub fn duty_interval(&self, bots: usize) -> Duration {
        let per_bot = self.per_kind_rate() * HostileKind::BOT_DUTIES.len() as f64 / bots.max(1) as f64;
        Duration::from_secs_f64(if per_bot > 0.0 { 1.0 / per_bot } else { 1e9 })
    }
}

/// A socket that reaches a victim's worker from another address.
pub struct Spoofer {
    /// The socket.
    pub socket: UdpSocket,
    /// The session it impersonates.
    pub victim: Victim,
}

/// What probing found.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct ProbeReport {
    /// Candidates tried.
    pub probes: u64,
    /// Candidates that shared their victim's worker.
    pub found: u64,
    /// Probes whose effect on the counters was neither one address mismatch nor one unknown
    /// player (lost, or other drops at the same time).
    pub ambiguous: u64,
}

/// Finds sockets whose datagrams the server handles on a victim's worker: for each candidate,
/// one spoofed `MOVE` and the server's drop counters before and after it. Call while no other
/// traffic is being dropped (before play starts), since it reads counter deltas.
pub async fn probe_spoofers(
    admin: &mut AdminClient,
    server: SocketAddrV4,
    victims: &[Victim],
    plan: &HostilePlan,
) -> Result<(Vec<Spoofer>, ProbeReport), AdminError> {
    let mut found = Vec::new();
    let mut report = ProbeReport::default();
    if victims.is_empty() || plan.want_spoofers == 0 {
        return Ok((found, report));
    }
    let mismatch = drop_counter(DropReason::AddressMismatch);
    let unknown = drop_counter(DropReason::UnknownPlayer);
    let mut before = admin.stats().await?;
    let mut out = [0u8; CRAFT_MAX];
    for probe in 0..plan.max_probes {
        if found.len() >= plan.want_spoofers {
            break;
        }
        let victim = victims[probe % victims.len()];
        let socket = connected_socket(server)?;
        let ctx = CraftContext { victim, admin_key: 0, period: 0 };
        let len = craft(HostileKind::AddressMismatch, probe as u64, &ctx, &mut out);
        socket.send(&out[..len]).await?;
        report.probes += 1;
        tokio::time::sleep(Duration::from_millis(20)).await;
        let after = admin.stats().await?;
        let (m, u) = (after.delta(&before, &mismatch), after.delta(&before, &unknown));
        match (m, u) {
            (Some(1), Some(0)) => {
                report.found += 1;
                found.push(Spoofer { socket, victim });
            }
            (Some(0), Some(1)) => {}
            _ => report.ambiguous += 1,
        }
        before = after;
    }
    Ok((found, report))
}

/// Sends the controller's kinds at their share of `plan.rate` from `start` until `end` (or
/// `stop`), spreading datagrams that spend address tokens over `pool`, and returns what it
/// sent. `period` gives the server's cookie period at an instant.
#[allow(clippy::too_many_arguments)]
pub async fn run_controller(
    plan: HostilePlan,
    pool: Vec<UdpSocket>,
    spoofers: Vec<Spoofer>,
    admin_key: u64,
    period: impl Fn(Instant) -> u32,
    start: Instant,
    end: Instant,
    stop: &AtomicBool,
) -> SentCounts {
    let mut sent = SentCounts::default();
    let kinds: Vec<HostileKind> =
        HostileKind::CONTROLLER.iter().copied().filter(|k| *k != HostileKind::AddressMismatch || !spoofers.is_empty()).collect();
    let rate = plan.per_kind_rate() * kinds.len() as f64;
    if pool.is_empty() || rate <= 0.0 {
        return sent;
    }
    let mut pacer = Pacer::until(Schedule::new(start, Duration::from_secs_f64(1.0 / rate)), end);
    let mut out = [0u8; CRAFT_MAX];
    let mut rng = Rng::new(0x4057_11E5);
    while let Some(deadline) = pacer.next_deadline() {
        tokio::time::sleep_until(deadline.into()).await;
        if stop.load(Ordering::Relaxed) {
            break;
        }
        let now = Instant::now();
        while let Some((k, _)) = pacer.take_due(now) {
            let kind = kinds[(k % kinds.len() as u64) as usize];
            let variant = k / kinds.len() as u64;
            let (socket, victim) = match kind {
                HostileKind::AddressMismatch => {
                    let s = &spoofers[(variant % spoofers.len() as u64) as usize];
                    (&s.socket, s.victim)
                }
                _ => (&pool[rng.below(pool.len() as u64) as usize], Victim { player_id: 0, session_token: 0 }),
            };
            let ctx = CraftContext { victim, admin_key, period: period(now) };
            let len = craft(kind, variant, &ctx, &mut out);
            if len > 0 && socket.send(&out[..len]).await.is_ok() {
                sent.bump(kind);
            }
        }
    }
    sent
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::decode_client;

    fn ctx() -> CraftContext {
        CraftContext { victim: Victim { player_id: 42, session_token: 0xFEED }, admin_key: 0xA11CE, period: 17 }
    }

    #[test]
    fn statically_broken_kinds_fail_the_servers_checks_for_their_reason() {
        let mut out = [0u8; CRAFT_MAX];
        for kind in HostileKind::CONTROLLER.iter().copied().filter(|k| !k.passes_static_checks()) {
            for variant in 0..30 {
                let len = craft(kind, variant, &ctx(), &mut out);
                assert!(len > 0);
                let err = decode_client(&out[..len]).expect_err("must be refused");
                assert_eq!(err.drop_reason(), kind.expected_drop(), "{kind:?} variant {variant}: {err}");
            }
        }
    }

    #[test]
    fn later_kinds_pass_the_static_checks_as_the_message_they_pretend_to_be() {
        let mut out = [0u8; CRAFT_MAX];
        for variant in 0..30 {
            for kind in [
                HostileKind::BadCookie,
                HostileKind::BadAdminKey,
                HostileKind::UnknownPlayer,
                HostileKind::AddressMismatch,
                HostileKind::BadSession,
            ] {
                let len = craft(kind, variant, &ctx(), &mut out);
                let d = decode_client(&out[..len]).unwrap_or_else(|e| panic!("{kind:?} variant {variant}: {e}"));
                match (kind, d.message) {
                    (HostileKind::BadCookie, Message::JoinConfirm(c)) => assert_eq!(c.period, 17),
                    (HostileKind::BadAdminKey, Message::StatsRequest(r)) => assert_ne!(r.admin_key, 0xA11CE),
                    (HostileKind::UnknownPlayer, Message::Move(m)) => assert!(m.player_id >= 0x7FFF_FFF0_0000_0000),
                    (HostileKind::AddressMismatch, Message::Move(m)) => {
                        assert_eq!((m.player_id, m.session_token), (42, 0xFEED))
                    }
                    (HostileKind::BadSession, Message::Move(m)) => {
                        assert_eq!(m.player_id, 42);
                        assert_ne!(m.session_token, 0xFEED);
                    }
                    other => panic!("{other:?}"),
                }
            }
        }
    }

    #[test]
    fn rates_split_evenly() {
        let plan = HostilePlan { rate: 140.0, flood_rate: 300.0, pool_sockets: 8, max_probes: 8, want_spoofers: 2 };
        assert!((plan.per_kind_rate() - 10.0).abs() < 1e-9);
        // 100 bots share 2 duty kinds at 10/s each: one duty per bot every 5 s.
        assert_eq!(plan.duty_interval(100), Duration::from_secs(5));
        let mut s = SentCounts::default();
        s.bump(HostileKind::Flooding);
        s.add_n(HostileKind::Truncated, 3);
        assert_eq!(s.by_reason().get(&DropReason::RateLimitedPlayer), Some(&1));
        assert_eq!(s.get(HostileKind::Truncated), 3);
    }

    #[test]
    fn a_plan_is_past_the_limits_when_one_source_sends_past_half_a_default_limit() {
        let plan = |rate: f64, pool_sockets: usize| HostilePlan { rate, flood_rate: 300.0, pool_sockets, max_probes: 32, want_spoofers: 4 };
        // The default: 200/s over 14 kinds, 8 pool sockets, 4 spoofers: about 14 a second from
        // the busiest source.
        assert!(!plan(200.0, 8).sources_past_limits(4));
        // A pool socket carries three kinds spread over the pool: with one socket, the edge is
        // where three kinds' rate reaches half of 400/s. Bad-cookie joins, however many, spend
        // nothing of the host's join limit (only valid cookies do), so a wide pool at a high
        // rate stays under.
        let pool_edge = SERVER_ADDRESS_RATE_DEFAULT / 2.0 / 3.0 * HostileKind::RATED as f64;
        assert!(!plan(pool_edge, 1).sources_past_limits(64));
        assert!(plan(pool_edge + 1.0, 1).sources_past_limits(64));
        assert!(!plan(10_000.0, 256).sources_past_limits(256), "714/s per kind, 8.4/s per pool socket: far under the address limit");
        // 20,000/s over 8 sockets is far past.
        assert!(plan(20_000.0, 8).sources_past_limits(4));
    }
}
