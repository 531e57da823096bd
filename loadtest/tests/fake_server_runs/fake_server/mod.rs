//! A small in-process stand-in for `mmo-server`, enough to run the load tester's scenarios
//! end to end inside `cargo test`: the join handshake with a cookie, moves with acks, AoI
//! snapshots per tick (listing the raid's adds near each player), attacks on those adds
//! (range, a 500 ms cooldown, 100 damage, dead), the economy with at-most-once by (player,
//! transaction id), leave, stats and raid replies, and the validation table's drop reasons (steps 1 to 8 through the
//! codec's `decode_client`, then cookie, admin key, session, address, replay window and a
//! per-player token bucket). It can also misbehave on purpose (lose economy results, apply
//! duplicates again, answer with hostile replies) to prove the checks catch it. One thread, blocking socket; not fast.

use mmo_loadtest::protocol::*;
use mmo_loadtest::token::{self, TokenError, TokenMinter};
use std::collections::{BTreeMap, HashMap};
use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4, UdpSocket};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// How the fake behaves.
#[derive(Clone, Copy, Debug)]
pub struct FakeConfig {
    pub admin_key: u64,
    /// Radius of faction 1's starting zone (the raid's bots), metres.
    pub raid_zone_m: f32,
    pub tick: Duration,
    /// Lose every n-th first-time economy result (0: none).
    pub lose_every_nth_economy_result: u64,
    /// Apply a resent transaction again and answer it as new (breaks at-most-once).
    pub apply_duplicates_again: bool,
    /// Per-player token bucket: rate per second and burst.
    pub player_rate: f64,
    pub player_burst: f64,
    /// With more players than this joined, leave every 3rd move unanswered, as an
    /// overloaded server would (0: never). The capacity search must find this number.
    pub overloaded_above_players: usize,
    /// After every n-th move's ack (0: never), four hostile replies to the same bot: the ack
    /// again, an ack for a sequence it never sent, an ack with an undefined result byte, and
    /// an economy result it asked for nowhere.
    pub hostile_replies_every_nth_move: u64,
}

impl Default for FakeConfig {
    fn default() -> Self {
        FakeConfig {
            admin_key: 0xA11CE,
            raid_zone_m: 95.0,
            tick: Duration::from_millis(100),
            lose_every_nth_economy_result: 0,
            apply_duplicates_again: false,
            player_rate: 60.0,
            player_burst: 120.0,
            overloaded_above_players: 0,
            hostile_replies_every_nth_move: 0,
        }
    }
}

pub struct FakeServer {
    pub addr: SocketAddrV4,
    /// The private key file its tokens must be signed with (`--token-secret-key`).
    pub token_secret_key: String,
    stop: Arc<AtomicBool>,
    handle: Option<JoinHandle<()>>,
    /// Rounds of hostile replies sent (`FakeConfig::hostile_replies_every_nth_move`).
    hostile_rounds: Arc<AtomicU64>,
}

impl FakeServer {
    /// The load tester's command line against this server: its address, admin key and token
    /// key, quiet, with `args` after them.
    pub fn tester_cli(&self, args: &[&str]) -> mmo_loadtest::cli::Cli {
        let addr = self.addr.to_string();
        let head = ["mmo-loadtest", "--server", &addr, "--quiet", "--admin-key", "0xa11ce", "--token-secret-key", &self.token_secret_key];
        <mmo_loadtest::cli::Cli as clap::Parser>::parse_from(head.iter().chain(args))
    }

    pub fn start(config: FakeConfig) -> FakeServer {
        let socket = UdpSocket::bind(SocketAddrV4::new(Ipv4Addr::LOCALHOST, 0)).unwrap();
        socket.set_read_timeout(Some(Duration::from_millis(2))).unwrap();
        let addr = match socket.local_addr().unwrap() {
            SocketAddr::V4(a) => a,
            SocketAddr::V6(_) => unreachable!(),
        };
        // Its backend's key pair, as the real server's: the public half verifies.
        let minter = TokenMinter::generate().unwrap();
        let dir = std::env::temp_dir().join(format!("mmo-fake-server-{}-{}", std::process::id(), addr.port()));
        let _ = std::fs::remove_dir_all(&dir);
        let (_, secret) = minter.write_key_pair(&dir, "token").unwrap();
        let public_key = minter.public_key();
        let stop = Arc::new(AtomicBool::new(false));
        let stop2 = Arc::clone(&stop);
        let hostile_rounds = Arc::new(AtomicU64::new(0));
        let state = State::new(config, public_key, Arc::clone(&hostile_rounds));
        let handle = std::thread::spawn(move || state.serve(&socket, &stop2));
        FakeServer { addr, token_secret_key: secret.to_string_lossy().into_owned(), stop, handle: Some(handle), hostile_rounds }
    }

    /// Rounds of hostile replies sent so far (four datagrams each).
    pub fn hostile_rounds(&self) -> u64 {
        self.hostile_rounds.load(Ordering::Relaxed)
    }
}

impl Drop for FakeServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
    }
}

/// A joined player (the map's key is its id).
struct Session {
    /// Its side (the token's).
    faction: u8,
    token: u64,
    nonce: u64,
    addr: SocketAddr,
    highest_seq: u32,
    /// Where its last move put it.
    x: f32,
    y: f32,
    /// Its next attack may land from here (ms since start).
    attack_ready_ms: u64,
    gold: u64,
    items: u64,
    tokens: f64,
    refilled: Instant,
}

struct State {
    config: FakeConfig,
    public_key: [u8; 32],
    /// Token ids that admitted a session.
    used_tokens: std::collections::HashSet<u64>,
    start: Instant,
    sessions: HashMap<u64, Session>,
    by_addr: HashMap<SocketAddr, u64>,
    next_id: u64,
    decided: HashMap<(u64, u64), (EconomyStatus, u64)>,
    counters: BTreeMap<String, u64>,
    economy_results: u64,
    tick: u32,
    moves_seen: u64,
    /// Rounds of hostile replies sent; read by the test through [`FakeServer::hostile_rounds`].
    hostile_rounds: Arc<AtomicU64>,
    /// The last raid's adds: (id, x, y, hp).
    adds: Vec<(u64, f32, f32, i32)>,
    /// Loot of killed adds: id -> (killer, claimed).
    loot: HashMap<u64, (u64, bool)>,
    /// Open offers by maker: (offer id, taker, escrowed give, want). One item kind per
    /// session here, so item stacks are plain counts.
    offers: HashMap<u64, (u64, u64, TradeSide, TradeSide)>,
}

const FAKE_ADDS: usize = 64;
const ATTACK_RANGE_M: f32 = 6.0;

fn cookie(addr: SocketAddr, nonce: u64) -> u64 {
    let mut h: u64 = 0xCBF2_9CE4_8422_2325;
    for b in addr.to_string().bytes().chain(nonce.to_le_bytes()) {
        h = (h ^ u64::from(b)).wrapping_mul(0x1000_0000_01B3);
    }
    h
}

impl State {
    fn new(config: FakeConfig, public_key: [u8; 32], hostile_rounds: Arc<AtomicU64>) -> State {
        let mut counters = BTreeMap::new();
        for r in DropReason::ALL {
            counters.insert(format!("drop_{}", r.name()), 0);
        }
        for n in [
            "engine_moves_applied",
            "engine_economy_applied",
            "engine_economy_duplicates",
            "economy_minted_gold",
            "economy_sunk_gold",
            "economy_departed_gold",
            "engine_attacks_landed",
            "engine_kills",
            "engine_attack_rejected_unknown_target",
            "engine_attack_rejected_friendly_fire",
            "engine_attack_rejected_target_dead",
            "engine_attack_rejected_out_of_range",
            "engine_attack_rejected_cooldown",
            "engine_loot_claimed",
            "engine_grants",
            "engine_trade_offers",
            "engine_trades_accepted",
            "engine_trades_declined",
            "engine_loot_gold_claimed",
            "engine_loot_items_claimed",
            "engine_loot_claim_repeats",
            "engine_loot_rejected_no_loot",
            "engine_loot_rejected_not_yours",
            "joins_refused_token_malformed",
            "joins_refused_token_bad_signature",
            "joins_refused_token_expired",
            "joins_refused_token_wrong_server",
            "joins_refused_token_used",
        ] {
            counters.insert(n.to_string(), 0);
        }
        State {
            public_key,
            used_tokens: std::collections::HashSet::new(),
            config,
            start: Instant::now(),
            sessions: HashMap::new(),
            by_addr: HashMap::new(),
            next_id: 1,
            decided: HashMap::new(),
            counters,
            economy_results: 0,
            tick: 0,
            moves_seen: 0,
            hostile_rounds,
            adds: Vec::new(),
            loot: HashMap::new(),
            offers: HashMap::new(),
        }
    }

    fn bump(&mut self, name: &str, n: u64) {
        *self.counters.entry(name.to_string()).or_default() += n;
    }

    fn drop_for(&mut self, reason: DropReason) {
        self.bump(&format!("drop_{}", reason.name()), 1);
    }

    fn now_ms(&self) -> u64 {
        self.start.elapsed().as_millis() as u64
    }

    fn serve(mut self, socket: &UdpSocket, stop: &AtomicBool) {
        let mut buf = [0u8; 2048];
        let mut next_tick = Instant::now() + self.config.tick;
        while !stop.load(Ordering::Relaxed) {
            if let Ok((n, from)) = socket.recv_from(&mut buf) {
                self.bump("datagrams_received", 1);
                // Datagrams over 256 bytes arrive whole (2 KB buffer) and are refused as oversized.
                self.handle(socket, &buf[..n], from);
            }
            if Instant::now() >= next_tick {
                next_tick += self.config.tick;
                self.tick += 1;
                let mut out = [0u8; 1400];
                for s in self.sessions.values() {
                    // The live adds within 48 m, up to 8 (not sorted: the bots pick the nearest).
                    let near: Vec<AoiEntry> = self
                        .adds
                        .iter()
                        .filter(|a| a.3 > 0 && (a.1 - s.x).hypot(a.2 - s.y) <= 48.0)
                        .take(8)
                        .map(|a| AoiEntry { entity_id: a.0, x_m: a.1, y_m: a.2, kind: EntityKind::Add })
                        .collect();
                    let snapshot = AoiSnapshot { tick: self.tick, server_time_ms: self.now_ms(), entries: WireList::from_items(&near) };
                    let n = encode(&snapshot.into(), Flags::NONE, &mut out).unwrap();
                    let _ = socket.send_to(&out[..n], s.addr);
                }
            }
        }
    }

    fn reply(&self, socket: &UdpSocket, to: SocketAddr, message: Message<'_>) {
        let mut out = vec![0u8; STATS_REPLY_MAX];
        let n = encode(&message, Flags::NONE, &mut out).unwrap();
        let _ = socket.send_to(&out[..n], to);
    }

    /// Steps 13 to 17 for a session message: the player's id, or the reason it is dropped.
    fn admit(&mut self, player_id: u64, token: u64, from: SocketAddr, sequence: Option<u32>) -> Result<u64, DropReason> {
        let config = self.config;
        let s = self.sessions.get_mut(&player_id).ok_or(DropReason::UnknownPlayer)?;
        if s.token != token {
            return Err(DropReason::BadSession);
        }
        if s.addr != from {
            return Err(DropReason::AddressMismatch);
        }
        if let Some(seq) = sequence
            && seq <= s.highest_seq
        {
            return Err(DropReason::Replayed);
        }
        let now = Instant::now();
        s.tokens = (s.tokens + now.duration_since(s.refilled).as_secs_f64() * config.player_rate).min(config.player_burst);
        s.refilled = now;
        if s.tokens < 1.0 {
            return Err(DropReason::RateLimitedPlayer);
        }
        s.tokens -= 1.0;
        if let Some(seq) = sequence {
            s.highest_seq = seq;
        }
        Ok(player_id)
    }

    fn handle(&mut self, socket: &UdpSocket, bytes: &[u8], from: SocketAddr) {
        let decoded = match decode_client(bytes) {
            Ok(d) => d,
            Err(e) => return self.drop_for(e.drop_reason()),
        };
        match decoded.message {
            Message::JoinRequest(r) => {
                self.reply(socket, from, JoinChallenge { nonce: r.nonce, period: 0, cookie: cookie(from, r.nonce) }.into())
            }
            Message::JoinConfirm(c) => {
                if c.cookie != cookie(from, c.nonce) {
                    return self.drop_for(DropReason::BadCookie);
                }
                let retransmit = self.by_addr.get(&from).is_some_and(|id| self.sessions[id].nonce == c.nonce);
                // The real server's checks, in its order (a retransmit is answered again first).
                let verdict = match token::verify(&self.public_key, &c.token) {
                    _ if retransmit => Ok(None),
                    Err(TokenError::Malformed) => Err(JoinStatus::TokenMalformed),
                    Err(TokenError::BadSignature) => Err(JoinStatus::TokenBadSignature),
                    Ok(claims) if claims.expires_unix_ms <= token::unix_now_ms() => Err(JoinStatus::TokenExpired),
                    Ok(claims) if !claims.servers.iter().any(|s| SocketAddr::V4(*s) == socket.local_addr().unwrap()) => {
                        Err(JoinStatus::TokenWrongServer)
                    }
                    Ok(claims) if self.used_tokens.contains(&claims.token_id) => Err(JoinStatus::TokenUsed),
                    Ok(claims) => Ok(Some(claims)),
                };
                let claims = match verdict {
                    Ok(Some(claims)) => {
                        self.used_tokens.insert(claims.token_id);
                        claims
                    }
                    Ok(None) => token::Claims { account_id: 1, expires_unix_ms: 0, token_id: 1, faction: 0, servers: vec![] },
                    Err(status) => {
                        let counter = match status {
                            JoinStatus::TokenMalformed => "joins_refused_token_malformed",
                            JoinStatus::TokenBadSignature => "joins_refused_token_bad_signature",
                            JoinStatus::TokenExpired => "joins_refused_token_expired",
                            JoinStatus::TokenWrongServer => "joins_refused_token_wrong_server",
                            _ => "joins_refused_token_used",
                        };
                        self.bump(counter, 1);
                        let refusal = JoinAccept {
                            nonce: c.nonce,
                            player_id: 0,
                            session_token: 0,
                            status,
                            faction: 0,
                            tick_ms: self.config.tick.as_millis() as u32,
                            server_time_ms: self.now_ms(),
                            spawn_x_m: 0.0,
                            spawn_y_m: 0.0,
                        };
                        return self.reply(socket, from, refusal.into());
                    }
                };
                // The load test's zones: faction 1 in the raid area, the others over the world.
                let h = claims.account_id.wrapping_mul(0x9E37_79B9_7F4A_7C15);
                let (cx, cy, r) =
                    if claims.faction % 2 == 1 { (2048.0, 2048.0, self.config.raid_zone_m) } else { (2048.0, 2048.0, 1900.0) };
                let (u, a) = ((h >> 40) as f32 / (1u64 << 24) as f32, (h & 0xff_ffff) as f32 / (1u64 << 24) as f32 * std::f32::consts::TAU);
                let spawn = (cx + r * u.sqrt() * a.cos(), cy + r * u.sqrt() * a.sin());
                let id = match self.by_addr.get(&from).copied() {
                    Some(id) if self.sessions[&id].nonce == c.nonce => id,
                    _ => {
                        let id = self.next_id;
                        self.next_id += 1;
                        self.sessions.insert(
                            id,
                            Session {
                                faction: claims.faction,
                                token: id.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1,
                                nonce: c.nonce,
                                addr: from,
                                highest_seq: 0,
                                x: spawn.0,
                                y: spawn.1,
                                attack_ready_ms: 0,
                                gold: 0,
                                items: 0,
                                tokens: self.config.player_burst,
                                refilled: Instant::now(),
                            },
                        );
                        self.by_addr.insert(from, id);
                        id
                    }
                };
                let session = &self.sessions[&id];
                let accept = JoinAccept {
                    nonce: c.nonce,
                    player_id: id,
                    session_token: session.token,
                    status: JoinStatus::Joined,
                    faction: session.faction,
                    tick_ms: self.config.tick.as_millis() as u32,
                    server_time_ms: self.now_ms(),
                    spawn_x_m: session.x,
                    spawn_y_m: session.y,
                };
                self.reply(socket, from, accept.into());
            }
            Message::Move(m) => match self.admit(m.player_id, m.session_token, from, Some(m.sequence)) {
                Err(r) => self.drop_for(r),
                Ok(_) => {
                    self.moves_seen += 1;
                    let overloaded = self.config.overloaded_above_players;
                    if overloaded > 0 && self.sessions.len() > overloaded && self.moves_seen.is_multiple_of(3) {
                        return;
                    }
                    self.bump("engine_moves_applied", 1);
                    if let Some(s) = self.sessions.get_mut(&m.player_id) {
                        (s.x, s.y) = (m.x_m, m.y_m);
                    }
                    let ack = MoveAck {
                        sequence: m.sequence,
                        client_time_ms: m.client_time_ms,
                        result: MoveResult::Applied,
                        contacts: WireList::empty(),
                    };
                    self.reply(socket, from, ack.into());
                    let every = self.config.hostile_replies_every_nth_move;
                    if every > 0 && self.moves_seen.is_multiple_of(every) {
                        self.reply(socket, from, ack.into());
                        self.reply(socket, from, MoveAck { sequence: m.sequence | 1, ..ack }.into());
                        let mut out = [0u8; 64];
                        let n = encode(&ack.into(), Flags::NONE, &mut out).unwrap();
                        out[16] = 0xFF; // the result: no such MoveResult
                        let _ = socket.send_to(&out[..n], from);
                        let stray =
                            EconomyResult { transaction_id: 999, gold_balance: 1, status: EconomyStatus::Applied, duplicate: false };
                        self.reply(socket, from, stray.into());
                        self.hostile_rounds.fetch_add(1, Ordering::Relaxed);
                    }
                }
            },
            Message::Attack(a) => match self.admit(a.player_id, a.session_token, from, Some(a.sequence)) {
                Err(r) => self.drop_for(r),
                Ok(id) => {
                    let result = self.attack(id, &a);
                    self.reply(socket, from, result.into());
                }
            },
            Message::LootClaim(c) => match self.admit(c.player_id, c.session_token, from, None) {
                Err(r) => self.drop_for(r),
                Ok(id) => {
                    let result = self.claim(id, c.loot_id);
                    self.reply(socket, from, result.into());
                }
            },
            Message::TradeOffer(o) => match self.admit(o.player_id, o.session_token, from, None) {
                Err(reason) => self.drop_for(reason),
                Ok(id) => self.trade_offer(socket, from, id, &o),
            },
            Message::TradeAnswer(a) => match self.admit(a.player_id, a.session_token, from, None) {
                Err(reason) => self.drop_for(reason),
                Ok(id) => self.trade_answer(socket, from, id, &a),
            },
            Message::Grant(g) => {
                if g.admin_key != self.config.admin_key {
                    return self.drop_for(DropReason::BadAdminKey);
                }
                self.grant(socket, from, &g);
            }
            Message::EconomyRequest(r) => match self.admit(r.player_id, r.session_token, from, None) {
                Err(reason) => self.drop_for(reason),
                Ok(id) => self.economy(socket, from, id, &r),
            },
            Message::Leave(l) => match self.admit(l.player_id, l.session_token, from, Some(l.sequence)) {
                Err(r) => self.drop_for(r),
                Ok(id) => {
                    let s = self.sessions.remove(&id).unwrap();
                    self.by_addr.remove(&s.addr);
                    self.bump("economy_departed_gold", s.gold);
                    self.reply(socket, from, LeaveAck { player_id: id }.into());
                }
            },
            Message::Ping(p) => self.reply(socket, from, Pong { client_time_us: p.client_time_us, server_time_ms: self.now_ms() }.into()),
            Message::StatsRequest(r) => {
                if r.admin_key != self.config.admin_key {
                    return self.drop_for(DropReason::BadAdminKey);
                }
                let live: u64 = self.sessions.values().map(|s| s.gold).sum();
                let mut text = String::new();
                for (k, v) in &self.counters {
                    text.push_str(&format!("{k} {v}\n"));
                }
                let escrowed: u64 = self.offers.values().map(|o| o.2.gold.max(0) as u64).sum();
                text.push_str(&format!(
                    "economy_live_gold {live}\neconomy_escrowed_gold {escrowed}\neconomy_conserved 1\nsessions_live {}\n",
                    self.sessions.len()
                ));
                self.reply(socket, from, StatsReply { request_id: r.request_id, text: &text }.into());
            }
            Message::RaidTrigger(t) => {
                if t.admin_key != self.config.admin_key {
                    return self.drop_for(DropReason::BadAdminKey);
                }
                // A few adds around the centre (the real burst's first FAKE_ADDS, near enough).
                let base = (u64::from(t.seed) << 16) | (1 << 63);
                self.adds = (0..FAKE_ADDS.min(t.count as usize))
                    .map(|i| {
                        let angle = i as f32 * 0.7;
                        let r = 1.0 + (i % 16) as f32 * 1.5;
                        (base | i as u64, t.center_x_m + r * angle.cos(), t.center_y_m + r * angle.sin(), t.hp)
                    })
                    .collect();
                let result = RaidResult {
                    request_id: t.request_id,
                    status: 0,
                    spawned: t.count,
                    cells: 16,
                    expires_tick: self.tick + 30,
                    spawn_ns: 450_000,
                };
                self.reply(socket, from, result.into());
            }
            _ => self.drop_for(DropReason::UnknownType),
        }
    }

    /// The engine's attack rules, simplified: target, dead, range, cooldown, then 100 damage.
    fn attack(&mut self, id: u64, a: &Attack) -> AttackResult {
        let now_ms = self.now_ms();
        let (x, y, ready) = {
            let s = &self.sessions[&id];
            (s.x, s.y, s.attack_ready_ms)
        };
        let refused = |refusal| AttackResult {
            sequence: a.sequence,
            refusal,
            killed: false,
            target_kind: None,
            target_id: a.target_id,
            damage: 0,
            hp_left: 0,
        };
        let Some(add) = self.adds.iter_mut().find(|t| t.0 == a.target_id) else {
            self.bump("engine_attack_rejected_unknown_target", 1);
            return refused(AttackRefusal::UnknownTarget);
        };
        let refusal = if add.3 <= 0 {
            Some(("engine_attack_rejected_target_dead", AttackRefusal::TargetDead))
        } else if (add.1 - x).hypot(add.2 - y) > ATTACK_RANGE_M {
            Some(("engine_attack_rejected_out_of_range", AttackRefusal::OutOfRange))
        } else if now_ms < ready {
            Some(("engine_attack_rejected_cooldown", AttackRefusal::Cooldown))
        } else {
            None
        };
        if let Some((counter, refusal)) = refusal {
            self.bump(counter, 1);
            return refused(refusal);
        }
        let damage = add.3.min(100);
        add.3 -= damage;
        let (hp_left, killed) = (add.3, add.3 == 0);
        self.sessions.get_mut(&id).unwrap().attack_ready_ms = now_ms + 500;
        self.bump("engine_attacks_landed", 1);
        if killed {
            self.bump("engine_kills", 1);
            self.loot.insert(a.target_id, (id, false));
        }
        AttackResult {
            sequence: a.sequence,
            refusal: AttackRefusal::Landed,
            killed,
            target_kind: Some(EntityKind::Add),
            target_id: a.target_id,
            damage,
            hp_left,
        }
    }

    /// The engine's loot rules, simplified: the killer claims once (10..16 gold, one item),
    /// a repeat is answered again.
    fn claim(&mut self, id: u64, loot_id: u64) -> LootResult {
        let refused = |refusal| LootResult { loot_id, gold: 0, item_count: 0, item_kind: 0, refusal, repeat: false };
        let Some(&(killer, claimed)) = self.loot.get(&loot_id) else {
            self.bump("engine_loot_rejected_no_loot", 1);
            return refused(LootRefusal::NoLoot);
        };
        if killer != id {
            self.bump("engine_loot_rejected_not_yours", 1);
            return refused(LootRefusal::NotYours);
        }
        let gold = 10 + loot_id % 7;
        if claimed {
            self.bump("engine_loot_claim_repeats", 1);
        } else {
            self.loot.insert(loot_id, (killer, true));
            let s = self.sessions.get_mut(&id).unwrap();
            s.gold += gold;
            s.items += 1;
            self.bump("economy_minted_gold", gold);
            self.bump("engine_loot_claimed", 1);
            self.bump("engine_loot_gold_claimed", gold);
            self.bump("engine_loot_items_claimed", 1);
        }
        LootResult { loot_id, gold, item_count: 1, item_kind: 2, refusal: LootRefusal::Claimed, repeat: claimed }
    }

    /// One reliable economy request of player `id`: a resend of a decided transaction is
    /// answered from the record (unless configured to apply it again), else `apply` decides.
    fn reliable(&mut self, socket: &UdpSocket, from: SocketAddr, id: u64, txn: u64, apply: impl FnOnce(&mut State) -> EconomyStatus) {
        let key = (id, txn);
        if let Some(&(status, balance)) = self.decided.get(&key)
            && !self.config.apply_duplicates_again
        {
            self.bump("engine_economy_duplicates", 1);
            let result = EconomyResult { transaction_id: txn, gold_balance: balance, status, duplicate: true };
            return self.reply(socket, from, result.into());
        }
        let status = apply(self);
        if status == EconomyStatus::Applied {
            self.bump("engine_economy_applied", 1);
        }
        let balance = if status == EconomyStatus::Applied { self.sessions[&id].gold } else { 0 };
        self.decided.insert(key, (status, balance));
        self.economy_results += 1;
        let n = self.config.lose_every_nth_economy_result;
        if n > 0 && self.economy_results.is_multiple_of(n) {
            return; // lost on the way back
        }
        let result = EconomyResult { transaction_id: txn, gold_balance: balance, status, duplicate: false };
        self.reply(socket, from, result.into());
    }

    /// Gifts only (the retired kinds are refused, spending is not played).
    fn economy(&mut self, socket: &UdpSocket, from: SocketAddr, id: u64, r: &EconomyRequest) {
        let (gold, to) = (r.gold.max(0) as u64, r.counterparty_id);
        let kind = r.kind;
        self.reliable(socket, from, id, r.transaction_id, |st| match kind {
            EconomyKind::Transfer => match st.sessions.get(&to) {
                None => EconomyStatus::UnknownPlayer,
                Some(_) if to == id => EconomyStatus::SelfTrade,
                Some(_) if st.sessions[&id].gold < gold => EconomyStatus::InsufficientFunds,
                Some(_) => {
                    st.sessions.get_mut(&id).unwrap().gold -= gold;
                    st.sessions.get_mut(&to).unwrap().gold += gold;
                    EconomyStatus::Applied
                }
            },
            EconomyKind::Trade | EconomyKind::LootPickup => EconomyStatus::KindRetired,
            EconomyKind::Spend => EconomyStatus::BadKind,
        });
    }

    /// The engine's offer rules, simplified: one open offer per maker, its gold in escrow.
    fn trade_offer(&mut self, socket: &UdpSocket, from: SocketAddr, id: u64, o: &TradeOffer) {
        let mut notify = None;
        let o = *o;
        self.reliable(socket, from, id, o.transaction_id, |st| {
            let (gold, items) = (o.give.gold.max(0) as u64, o.give.item_count.max(0) as u64);
            if !st.sessions.contains_key(&o.counterparty_id) {
                return EconomyStatus::UnknownPlayer;
            }
            if st.offers.contains_key(&id) {
                return EconomyStatus::OfferPending;
            }
            let me = &st.sessions[&id];
            if me.gold < gold {
                return EconomyStatus::InsufficientFunds;
            }
            if me.items < items {
                return EconomyStatus::InsufficientItems;
            }
            let me = st.sessions.get_mut(&id).unwrap();
            me.gold -= gold;
            me.items -= items;
            st.offers.insert(id, (o.transaction_id, o.counterparty_id, o.give, o.want));
            st.bump("engine_trade_offers", 1);
            notify = Some(o.counterparty_id);
            EconomyStatus::Applied
        });
        if let Some(taker) = notify.and_then(|t| self.sessions.get(&t).map(|s| s.addr)) {
            let n = TradeNotice {
                event: TradeEvent::Offered,
                maker_id: id,
                taker_id: o.counterparty_id,
                offer_id: o.transaction_id,
                give: o.give,
                want: o.want,
            };
            self.reply(socket, taker, n.into());
        }
    }

    fn trade_answer(&mut self, socket: &UdpSocket, from: SocketAddr, id: u64, a: &TradeAnswer) {
        let mut notify = None;
        let a = *a;
        self.reliable(socket, from, id, a.transaction_id, |st| {
            let Some(&(offer_id, taker, give, want)) = st.offers.get(&a.maker_id) else { return EconomyStatus::NoSuchOffer };
            if offer_id != a.offer_id {
                return EconomyStatus::NoSuchOffer;
            }
            if taker != id {
                return EconomyStatus::NotYourOffer;
            }
            let n = |v: i64| v.max(0) as u64;
            let (give_gold, give_items, want_gold, want_items) =
                (n(give.gold), n(give.item_count.into()), n(want.gold), n(want.item_count.into()));
            if a.accept && st.sessions[&id].gold < want_gold {
                return EconomyStatus::InsufficientFunds;
            }
            if a.accept && st.sessions[&id].items < want_items {
                return EconomyStatus::InsufficientItems;
            }
            st.offers.remove(&a.maker_id);
            if a.accept {
                let me = st.sessions.get_mut(&id).unwrap();
                me.gold = me.gold - want_gold + give_gold;
                me.items = me.items - want_items + give_items;
                if let Some(m) = st.sessions.get_mut(&a.maker_id) {
                    m.gold += want_gold;
                    m.items += want_items;
                }
                st.bump("engine_trades_accepted", 1);
            } else {
                if let Some(m) = st.sessions.get_mut(&a.maker_id) {
                    m.gold += give_gold;
                    m.items += give_items;
                }
                st.bump("engine_trades_declined", 1);
            }
            notify = Some(if a.accept { TradeEvent::Accepted } else { TradeEvent::Declined });
            EconomyStatus::Applied
        });
        if let Some(event) = notify
            && let Some(maker) = self.sessions.get(&a.maker_id).map(|s| s.addr)
        {
            let n = TradeNotice {
                event,
                maker_id: a.maker_id,
                taker_id: id,
                offer_id: a.offer_id,
                give: TradeSide::default(),
                want: TradeSide::default(),
            };
            self.reply(socket, maker, n.into());
        }
    }

    /// Admin grants: applied once per (player, id), booked as minted.
    fn grant(&mut self, socket: &UdpSocket, from: SocketAddr, g: &Grant) {
        let key = (g.player_id, u64::MAX - g.grant_id);
        let status = match (self.decided.get(&key), self.sessions.get_mut(&g.player_id)) {
            (Some(&(status, _)), _) => status,
            (None, None) => EconomyStatus::UnknownPlayer,
            (None, Some(s)) => {
                s.gold += g.stack.gold.max(0) as u64;
                s.items += g.stack.item_count.max(0) as u64;
                self.bump("economy_minted_gold", g.stack.gold.max(0) as u64);
                self.bump("engine_grants", 1);
                self.decided.insert(key, (EconomyStatus::Applied, 0));
                EconomyStatus::Applied
            }
        };
        let result = EconomyResult { transaction_id: g.grant_id, gold_balance: 0, status, duplicate: false };
        self.reply(socket, from, result.into());
    }
}
