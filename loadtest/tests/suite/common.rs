//! Shared by the protocol tests: reads `docs/protocol-vectors-v3.txt` and builds, for each named
//! vector, the message its comment line describes.

#![allow(dead_code)] // each protocol test uses a different part of this module

use mmo_loadtest::protocol::*;
use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet};

/// The committed vectors file, read at test time so a new or changed vector is seen.
pub const VECTORS_PATH: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/protocol-vectors-v3.txt");

/// One vector: its name, the comment line above it, and its bytes.
#[derive(Clone, Debug)]
pub struct Vector {
    pub name: String,
    pub comment: String,
    pub bytes: Vec<u8>,
    pub line: usize,
}

/// Every vector in the file, in order. Panics on a malformed file (a vector line without a
/// comment line above it, bad hex, a duplicate name).
pub fn vectors() -> Vec<Vector> {
    let text = std::fs::read_to_string(VECTORS_PATH).unwrap_or_else(|e| panic!("reading {VECTORS_PATH}: {e}"));
    let mut out: Vec<Vector> = Vec::new();
    let mut comment: Option<String> = None;
    for (i, raw) in text.lines().enumerate() {
        let line = raw.trim();
        if line.is_empty() {
            comment = None;
            continue;
        }
        if let Some(c) = line.strip_prefix('#') {
            comment = Some(c.trim().to_string());
            continue;
        }
        let (name, hex) = line.split_once(' ').unwrap_or_else(|| panic!("line {}: expected `<name> <hex>`", i + 1));
        let comment = comment.take().unwrap_or_else(|| panic!("line {}: vector `{name}` has no comment line above it", i + 1));
        let bytes = decode_hex(hex.trim()).unwrap_or_else(|| panic!("line {}: bad hex for `{name}`", i + 1));
        assert!(out.iter().all(|v| v.name != name), "line {}: duplicate vector name `{name}`", i + 1);
        out.push(Vector { name: name.to_string(), comment, bytes, line: i + 1 });
    }
    assert!(!out.is_empty(), "no vectors in {VECTORS_PATH}");
    out
}

pub fn decode_hex(s: &str) -> Option<Vec<u8>> {
    if !s.len().is_multiple_of(2) {
        return None;
    }
    (0..s.len()).step_by(2).map(|i| u8::from_str_radix(s.get(i..i + 2)?, 16).ok()).collect()
}

pub fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// The `key=value` pairs of a comment line. Values run to the next space, except `[...]`
/// lists and `"..."` strings (with `\n`, `\\` and `\"` escapes). Every key must be read by the
/// builder ([`Fields::assert_all_used`]), so a value added to a comment cannot be ignored.
pub struct Fields {
    map: BTreeMap<String, String>,
    used: RefCell<BTreeSet<String>>,
}

impl Fields {
    pub fn parse(comment: &str) -> Fields {
        let mut map = BTreeMap::new();
        let chars: Vec<char> = comment.chars().collect();
        let mut i = 0;
        while i < chars.len() {
            while i < chars.len() && chars[i] == ' ' {
                i += 1;
            }
            if i >= chars.len() {
                break;
            }
            let key_start = i;
            while i < chars.len() && chars[i] != '=' {
                assert!(chars[i] != ' ', "comment `{comment}`: expected key=value");
                i += 1;
            }
            let key: String = chars[key_start..i].iter().collect();
            i += 1; // '='
            let mut value = String::new();
            match chars.get(i) {
                Some('"') => {
                    i += 1;
                    while i < chars.len() && chars[i] != '"' {
                        if chars[i] == '\\' {
                            i += 1;
                            value.push(match chars.get(i) {
                                Some('n') => '\n',
                                Some('\\') => '\\',
                                Some('"') => '"',
                                other => panic!("comment `{comment}`: unknown escape {other:?}"),
                            });
                        } else {
                            value.push(chars[i]);
                        }
                        i += 1;
                    }
                    assert!(i < chars.len(), "comment `{comment}`: unterminated string");
                    i += 1;
                }
                Some('[') => {
                    let mut depth = 0;
                    while i < chars.len() {
                        match chars[i] {
                            '[' => depth += 1,
                            ']' => depth -= 1,
                            _ => {}
                        }
                        value.push(chars[i]);
                        i += 1;
                        if depth == 0 {
                            break;
                        }
                    }
                }
                _ => {
                    while i < chars.len() && chars[i] != ' ' {
                        value.push(chars[i]);
                        i += 1;
                    }
                }
            }
            assert!(map.insert(key.clone(), value).is_none(), "comment `{comment}`: key `{key}` twice");
        }
        Fields { map, used: RefCell::new(BTreeSet::new()) }
    }

    pub fn has(&self, key: &str) -> bool {
        self.map.contains_key(key)
    }

    pub fn raw(&self, key: &str) -> &str {
        self.used.borrow_mut().insert(key.to_string());
        self.map.get(key).unwrap_or_else(|| panic!("comment has no `{key}`: {:?}", self.map))
    }

    pub fn int(&self, key: &str) -> i128 {
        parse_int(self.raw(key))
    }
    pub fn u64(&self, key: &str) -> u64 {
        u64::try_from(self.int(key)).unwrap()
    }
    pub fn u32(&self, key: &str) -> u32 {
        u32::try_from(self.int(key)).unwrap()
    }
    pub fn u16(&self, key: &str) -> u16 {
        u16::try_from(self.int(key)).unwrap()
    }
    pub fn u8(&self, key: &str) -> u8 {
        u8::try_from(self.int(key)).unwrap()
    }
    pub fn i64(&self, key: &str) -> i64 {
        i64::try_from(self.int(key)).unwrap()
    }
    pub fn i32(&self, key: &str) -> i32 {
        i32::try_from(self.int(key)).unwrap()
    }
    pub fn f32(&self, key: &str) -> f32 {
        self.raw(key).parse().unwrap_or_else(|e| panic!("`{key}`: {e}"))
    }
    pub fn text(&self, key: &str) -> String {
        self.raw(key).to_string()
    }
    pub fn enumerated<T: TryFrom<u8>>(&self, key: &str) -> T {
        T::try_from(self.u8(key)).unwrap_or_else(|_| panic!("`{key}` out of range"))
    }

    /// `payload=00..1f`: the bytes from the first to the last value, counting up.
    pub fn byte_range<const N: usize>(&self, key: &str) -> [u8; N] {
        let (a, b) = self.raw(key).split_once("..").expect("a..b");
        let (a, b) = (u8::from_str_radix(a, 16).unwrap(), u8::from_str_radix(b, 16).unwrap());
        assert_eq!(usize::from(b - a) + 1, N, "`{key}` must cover {N} bytes");
        std::array::from_fn(|i| a + i as u8)
    }

    /// `<prefix>_gold= <prefix>_item_count= <prefix>_item_kind=`: a trade side.
    pub fn side(&self, prefix: &str) -> TradeSide {
        TradeSide {
            gold: self.i64(&format!("{prefix}_gold")),
            item_count: self.i32(&format!("{prefix}_item_count")),
            item_kind: self.u16(&format!("{prefix}_item_kind")),
        }
    }

    /// `flags=RETRANSMIT` (absent: no flag).
    pub fn flags(&self) -> Flags {
        if !self.has("flags") {
            return Flags::NONE;
        }
        match self.raw("flags") {
            "RETRANSMIT" => Flags::RETRANSMIT,
            other => panic!("unknown flags `{other}`"),
        }
    }

    /// `[(a,b,c),(d,e,f)]`: the tuples' fields as strings.
    pub fn tuples(&self, key: &str) -> Vec<Vec<String>> {
        let raw = self.raw(key);
        let inner = raw.strip_prefix('[').and_then(|r| r.strip_suffix(']')).expect("[...]");
        if inner.trim().is_empty() {
            return Vec::new();
        }
        inner
            .split("),")
            .map(|t| t.trim().trim_start_matches('(').trim_end_matches(')').split(',').map(|f| f.trim().to_string()).collect())
            .collect()
    }

    /// Keys no accessor has read.
    pub fn unused(&self) -> Vec<String> {
        let used = self.used.borrow();
        self.map.keys().filter(|k| !used.contains(*k)).cloned().collect()
    }

    pub fn assert_all_used(&self, name: &str) {
        let unused = self.unused();
        assert!(unused.is_empty(), "vector `{name}`: comment values not used by the test: {unused:?}");
    }
}

pub fn parse_int(s: &str) -> i128 {
    let (neg, digits) = match s.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, s),
    };
    let v = match digits.strip_prefix("0x") {
        Some(h) => i128::from_str_radix(h, 16),
        None => digits.parse(),
    }
    .unwrap_or_else(|e| panic!("bad integer `{s}`: {e}"));
    if neg { -v } else { v }
}

/// A message built from a comment, owning what the message borrows.
pub enum Spec {
    Fixed(Message<'static>),
    MoveAck { sequence: u32, client_time_ms: u32, result: MoveResult, contacts: Vec<Contact> },
    Aoi { tick: u32, server_time_ms: u64, entries: Vec<AoiEntry> },
    Stats { request_id: u32, text: String },
}

impl Spec {
    pub fn message(&self) -> Message<'_> {
        match self {
            Spec::Fixed(m) => *m,
            Spec::MoveAck { sequence, client_time_ms, result, contacts } => Message::MoveAck(MoveAck {
                sequence: *sequence,
                client_time_ms: *client_time_ms,
                result: *result,
                contacts: WireList::from_items(contacts),
            }),
            Spec::Aoi { tick, server_time_ms, entries } => {
                Message::AoiSnapshot(AoiSnapshot { tick: *tick, server_time_ms: *server_time_ms, entries: WireList::from_items(entries) })
            }
            Spec::Stats { request_id, text } => Message::StatsReply(StatsReply { request_id: *request_id, text }),
        }
    }
}

fn kind_of(s: &str) -> EntityKind {
    EntityKind::try_from(u8::try_from(parse_int(s)).unwrap()).unwrap()
}

/// Builds the message a vector's comment describes, or `None` for a vector name this test
/// does not know (which the vector test turns into a failure).
pub fn build(name: &str, f: &Fields) -> Option<(Spec, Flags)> {
    let fixed = |m: Message<'static>| Some(Spec::Fixed(m));
    let spec = match name {
        "join_request" => fixed(JoinRequest { nonce: f.u64("nonce") }.into()),
        "join_challenge" => fixed(JoinChallenge { nonce: f.u64("nonce"), period: f.u32("period"), cookie: f.u64("cookie") }.into()),
        "join_confirm" => fixed(
            JoinConfirm { nonce: f.u64("nonce"), period: f.u32("period"), cookie: f.u64("cookie"), token: f.byte_range("token") }.into(),
        ),
        "join_accept" => fixed(
            JoinAccept {
                nonce: f.u64("nonce"),
                player_id: f.u64("player_id"),
                session_token: f.u64("session_token"),
                status: f.enumerated("status"),
                faction: f.u8("faction"),
                tick_ms: f.u32("tick_ms"),
                server_time_ms: f.u64("server_time_ms"),
                spawn_x_m: f.f32("spawn_x_m"),
                spawn_y_m: f.f32("spawn_y_m"),
            }
            .into(),
        ),
        "move" => fixed(
            Move {
                player_id: f.u64("player_id"),
                session_token: f.u64("session_token"),
                sequence: f.u32("sequence"),
                client_time_ms: f.u32("client_time_ms"),
                x_m: f.f32("x_m"),
                y_m: f.f32("y_m"),
                facing_rad: f.f32("facing_rad"),
                payload: f.byte_range("payload"),
            }
            .into(),
        ),
        "move_ack_rejected" | "move_ack_contacts" => {
            let contacts: Vec<Contact> = if f.has("contacts") {
                f.tuples("contacts")
                    .iter()
                    .map(|t| Contact {
                        other_id: u64::try_from(parse_int(&t[0])).unwrap(),
                        distance_m: t[1].parse().unwrap(),
                        kind: kind_of(&t[2]),
                    })
                    .collect()
            } else {
                Vec::new()
            };
            if f.has("contact_count") {
                assert_eq!(f.u8("contact_count") as usize, contacts.len(), "`{name}`: contact_count disagrees with contacts");
            }
            Some(Spec::MoveAck {
                sequence: f.u32("sequence"),
                client_time_ms: f.u32("client_time_ms"),
                result: f.enumerated("result"),
                contacts,
            })
        }
        "aoi_snapshot" => {
            let entries: Vec<AoiEntry> = f
                .tuples("entries")
                .iter()
                .map(|t| AoiEntry {
                    entity_id: u64::try_from(parse_int(&t[0])).unwrap(),
                    x_m: t[1].parse().unwrap(),
                    y_m: t[2].parse().unwrap(),
                    kind: kind_of(&t[3]),
                })
                .collect();
            assert_eq!(f.u16("count") as usize, entries.len(), "`{name}`: count disagrees with entries");
            Some(Spec::Aoi { tick: f.u32("tick"), server_time_ms: f.u64("server_time_ms"), entries })
        }
        "economy_request" => fixed(
            EconomyRequest {
                player_id: f.u64("player_id"),
                session_token: f.u64("session_token"),
                transaction_id: f.u64("transaction_id"),
                counterparty_id: f.u64("counterparty_id"),
                gold: f.i64("gold"),
                item_count: f.i32("item_count"),
                item_kind: f.u16("item_kind"),
                kind: f.enumerated("kind"),
            }
            .into(),
        ),
        "economy_result" => fixed(
            EconomyResult {
                transaction_id: f.u64("transaction_id"),
                gold_balance: f.u64("gold_balance"),
                status: f.enumerated("status"),
                duplicate: match f.u8("duplicate") {
                    0 => false,
                    1 => true,
                    d => panic!("duplicate={d}"),
                },
            }
            .into(),
        ),
        "leave" => {
            fixed(Leave { player_id: f.u64("player_id"), session_token: f.u64("session_token"), sequence: f.u32("sequence") }.into())
        }
        "leave_ack" => fixed(LeaveAck { player_id: f.u64("player_id") }.into()),
        "ping" => fixed(Ping { client_time_us: f.u64("client_time_us") }.into()),
        "pong" => fixed(Pong { client_time_us: f.u64("client_time_us"), server_time_ms: f.u64("server_time_ms") }.into()),
        "raid_trigger" => fixed(
            RaidTrigger {
                admin_key: f.u64("admin_key"),
                request_id: f.u32("request_id"),
                count: f.u32("count"),
                center_x_m: f.f32("center_x_m"),
                center_y_m: f.f32("center_y_m"),
                half_extent_m: f.f32("half_extent_m"),
                lifetime_ms: f.u32("lifetime_ms"),
                hp: f.i32("hp"),
                seed: f.u32("seed"),
                kind: f.enumerated("kind"),
                faction: f.u8("faction"),
            }
            .into(),
        ),
        "raid_result" => fixed(
            RaidResult {
                request_id: f.u32("request_id"),
                status: f.u32("status"),
                spawned: f.u32("spawned"),
                cells: f.u32("cells"),
                expires_tick: f.u32("expires_tick"),
                spawn_ns: f.u64("spawn_ns"),
            }
            .into(),
        ),
        "stats_request" => fixed(StatsRequest { admin_key: f.u64("admin_key"), request_id: f.u32("request_id") }.into()),
        "stats_reply" => Some(Spec::Stats { request_id: f.u32("request_id"), text: f.text("text") }),
        "attack" => fixed(
            Attack {
                player_id: f.u64("player_id"),
                session_token: f.u64("session_token"),
                target_id: f.u64("target_id"),
                sequence: f.u32("sequence"),
            }
            .into(),
        ),
        "attack_result_killed" | "attack_result_refused" => fixed(
            AttackResult {
                sequence: f.u32("sequence"),
                refusal: f.enumerated("refusal"),
                killed: match f.u8("killed") {
                    0 => false,
                    1 => true,
                    k => panic!("killed={k}"),
                },
                target_kind: match f.u8("target_kind") {
                    0 => None,
                    k => Some(kind_of(&k.to_string())),
                },
                target_id: f.u64("target_id"),
                damage: f.i32("damage"),
                hp_left: f.i32("hp_left"),
            }
            .into(),
        ),
        "kill_notice" => fixed(
            KillNotice {
                killer_id: f.u64("killer_id"),
                target_id: f.u64("target_id"),
                target_kind: kind_of(&f.u8("target_kind").to_string()),
            }
            .into(),
        ),
        "loot_claim" => {
            fixed(LootClaim { player_id: f.u64("player_id"), session_token: f.u64("session_token"), loot_id: f.u64("loot_id") }.into())
        }
        "loot_result_repeat" | "loot_result_refused" => fixed(
            LootResult {
                loot_id: f.u64("loot_id"),
                gold: f.u64("gold"),
                item_count: f.u32("item_count"),
                item_kind: f.u16("item_kind"),
                refusal: f.enumerated("refusal"),
                repeat: match f.u8("repeat") {
                    0 => false,
                    1 => true,
                    r => panic!("repeat={r}"),
                },
            }
            .into(),
        ),
        "trade_offer" => fixed(
            TradeOffer {
                player_id: f.u64("player_id"),
                session_token: f.u64("session_token"),
                transaction_id: f.u64("transaction_id"),
                counterparty_id: f.u64("counterparty_id"),
                give: f.side("give"),
                want: f.side("want"),
            }
            .into(),
        ),
        "trade_answer" => fixed(
            TradeAnswer {
                player_id: f.u64("player_id"),
                session_token: f.u64("session_token"),
                transaction_id: f.u64("transaction_id"),
                maker_id: f.u64("maker_id"),
                offer_id: f.u64("offer_id"),
                accept: f.u8("accept") == 1,
            }
            .into(),
        ),
        "grant" => fixed(
            Grant { admin_key: f.u64("admin_key"), player_id: f.u64("player_id"), grant_id: f.u64("grant_id"), stack: f.side("stack") }
                .into(),
        ),
        "trade_notice_offered" | "trade_notice_accepted" => fixed(
            TradeNotice {
                event: f.enumerated("event"),
                maker_id: f.u64("maker_id"),
                taker_id: f.u64("taker_id"),
                offer_id: f.u64("offer_id"),
                give: f.side("give"),
                want: f.side("want"),
            }
            .into(),
        ),
        _ => None,
    }?;
    Some((spec, f.flags()))
}

/// The reserved byte ranges of each fixed part, from the tables in docs/protocol.md (list
/// records' reserved bytes are tested separately).
pub fn reserved_ranges(t: MessageType) -> &'static [(usize, usize)] {
    match t {
        MessageType::JoinRequest => &[(16, 64)],
        MessageType::JoinChallenge => &[(20, 24)],
        MessageType::JoinConfirm => &[(20, 24)],
        MessageType::JoinAccept => &[(34, 36), (56, 64)],
        MessageType::Move => &[(44, 48)],
        MessageType::MoveAck => &[(18, 20)],
        MessageType::AoiSnapshot => &[(14, 16)],
        MessageType::EconomyRequest => &[(55, 56)],
        MessageType::EconomyResult => &[(26, 32)],
        MessageType::Leave => &[(28, 32)],
        MessageType::LeaveAck => &[],
        MessageType::Ping => &[(16, 24)],
        MessageType::Pong => &[],
        MessageType::RaidTrigger => &[(50, 56)],
        MessageType::RaidResult => &[(28, 32)],
        MessageType::StatsRequest => &[(20, 24)],
        MessageType::StatsReply => &[(14, 16)],
        MessageType::Attack => &[(36, 40)],
        MessageType::AttackResult => &[(15, 16)],
        MessageType::KillNotice => &[(25, 32)],
        MessageType::LootClaim => &[],
        MessageType::LootResult => &[],
        MessageType::TradeOffer => &[(54, 56), (70, 72)],
        MessageType::TradeAnswer => &[(49, 56)],
        MessageType::Grant => &[(46, 48)],
        MessageType::TradeNotice => &[(9, 16), (54, 56), (70, 72)],
    }
}
