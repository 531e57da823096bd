//! The wire protocol v3 codec (`docs/protocol.md`), the load tester's half of the two codecs
//! held to the committed byte vectors in `docs/protocol-vectors-v3.txt` (the other half is the
//! server's C++ codec).
//!
//! Why it looks the way it does:
//! - **No allocation.** [`encode`] writes into a caller-provided `&mut [u8]` and returns the
//!   datagram's length; [`decode`] borrows from the received bytes (the variable parts of
//!   `MOVE_ACK`, `AOI_SNAPSHOT` and `STATS_REPLY` are views into them), so a bot's receive
//!   loop decodes every datagram without touching the heap.
//! - **No panic on any input.** Every read goes through bounds-checked helpers that cannot
//!   panic, and each message is read only after its size has been checked. Hostile or corrupt
//!   bytes give a typed [`DecodeError`].
//! - **Both directions.** Every message type encodes and decodes, so round trips test all of
//!   them. [`decode`] accepts any message type; [`decode_client`] judges a datagram the way
//!   the server does (validation steps 1 to 8 of the protocol's table), which the hostile
//!   scenario uses to check that each malformed datagram it sends is refused for the reason
//!   it counts it under.
//! - **Encode success implies decode success.** [`encode`] refuses what [`decode`] would
//!   refuse (a non-finite float, too many list entries, a raid of kind `Player`, ...), so a
//!   message that encodes always decodes back to itself.
//!
//! Validation order in [`decode`] (cheapest first, the first failure wins): header present
//! ([`DecodeError::Truncated`]), size cap ([`DecodeError::Oversized`]), magic, version, known
//! type, the type's size reached (`Truncated`: every strict prefix of a valid datagram is
//! `Truncated`), exact size and `length` field ([`DecodeError::BadLength`]), then flags,
//! reserved bytes, floats and enum fields ([`DecodeError::BadField`]).

use std::fmt;

/// `magic`: the bytes `4d 4f` ("MO") read as a little-endian `u16`.
pub const MAGIC: u16 = 0x4F4D;
/// The protocol version this codec speaks.
pub const VERSION: u8 = 3;
/// The latest version before [`VERSION`]: the server drops datagrams of every earlier version
/// (1 up to this) as `obsolete_version`.
pub const OBSOLETE_VERSION: u8 = 2;
/// The connect token a `JOIN_CONFIRM` carries ([`crate::token`]).
pub const CONNECT_TOKEN_SIZE: usize = 128;
/// Size of the header every message starts with.
pub const HEADER_LEN: usize = 8;
/// The largest datagram a client may send (`CLIENT_DATAGRAM_MAX`); larger ones are dropped
/// `oversized` by the server.
pub const CLIENT_DATAGRAM_MAX: usize = 256;
/// The largest server reply other than `STATS_REPLY`: an `AOI_SNAPSHOT` of [`AOI_ENTRIES_MAX`]
/// entries, 24 + 20 bytes each (1,304, under any real MTU).
pub const SERVER_DATAGRAM_MAX: usize = 24 + 20 * AOI_ENTRIES_MAX;
/// The largest `STATS_REPLY`, and the largest datagram [`decode`] accepts at all.
pub const STATS_REPLY_MAX: usize = 8192;
/// The most contacts a `MOVE_ACK` carries.
pub const MOVE_ACK_CONTACTS_MAX: usize = 32;
/// The most entries an `AOI_SNAPSHOT` carries (the server's `aoi_k` is at most 64).
pub const AOI_ENTRIES_MAX: usize = 64;
/// Size of a `MOVE`'s opaque game payload.
pub const PAYLOAD_LEN: usize = 32;
/// The most text bytes a `STATS_REPLY` carries.
pub const STATS_TEXT_MAX: usize = STATS_REPLY_MAX - STATS_REPLY_BASE;

const MOVE_ACK_BASE: usize = 20;
const AOI_BASE: usize = 24;
const STATS_REPLY_BASE: usize = 16;

// ---------------------------------------------------------------------------------------------
// Message types, flags, enums
// ---------------------------------------------------------------------------------------------

/// A message type (the header's `type` byte). Client-to-server types are `0x01..0x3F`,
/// server-to-client types `0x81..0xBF`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[repr(u8)]
pub enum MessageType {
    /// `JOIN_REQUEST`, client to server, 64 bytes.
    JoinRequest = 0x01,
    /// `JOIN_CONFIRM`, client to server, 64 bytes.
    JoinConfirm = 0x02,
    /// `MOVE`, client to server, 80 bytes.
    Move = 0x03,
    /// `ECONOMY_REQUEST`, client to server, 56 bytes.
    EconomyRequest = 0x04,
    /// `LEAVE`, client to server, 32 bytes.
    Leave = 0x05,
    /// `PING`, client to server, 24 bytes.
    Ping = 0x06,
    /// `RAID_TRIGGER`, admin to server, 56 bytes.
    RaidTrigger = 0x07,
    /// `STATS_REQUEST`, admin to server, 24 bytes.
    StatsRequest = 0x08,
    /// `ATTACK`, client to server, 40 bytes.
    Attack = 0x09,
    /// `LOOT_CLAIM`, client to server, 32 bytes.
    LootClaim = 0x0A,
    /// `TRADE_OFFER`, client to server, 72 bytes.
    TradeOffer = 0x0B,
    /// `TRADE_ANSWER`, client to server, 56 bytes.
    TradeAnswer = 0x0C,
    /// `GRANT`, admin to server, 48 bytes.
    Grant = 0x0D,
    /// `JOIN_CHALLENGE`, server to client, 32 bytes.
    JoinChallenge = 0x81,
    /// `JOIN_ACCEPT`, server to client, 48 bytes.
    JoinAccept = 0x82,
    /// `MOVE_ACK`, server to client, 20 + 16 x contacts bytes.
    MoveAck = 0x83,
    /// `AOI_SNAPSHOT`, server to client, 24 + 20 x entries bytes.
    AoiSnapshot = 0x84,
    /// `ECONOMY_RESULT`, server to client, 32 bytes.
    EconomyResult = 0x85,
    /// `LEAVE_ACK`, server to client, 16 bytes.
    LeaveAck = 0x86,
    /// `PONG`, server to client, 24 bytes.
    Pong = 0x87,
    /// `RAID_RESULT`, server to admin, 40 bytes.
    RaidResult = 0x88,
    /// `STATS_REPLY`, server to admin, 16 + text bytes.
    StatsReply = 0x89,
    /// `ATTACK_RESULT`, server to client, 32 bytes.
    AttackResult = 0x8A,
    /// `KILL_NOTICE`, server to client, 32 bytes.
    KillNotice = 0x8B,
    /// `LOOT_RESULT`, server to client, 32 bytes.
    LootResult = 0x8C,
    /// `TRADE_NOTICE`, server to client, 72 bytes.
    TradeNotice = 0x8D,
}

impl MessageType {
    /// Every message type, in type-byte order.
    pub const ALL: [MessageType; 26] = [
        MessageType::JoinRequest,
        MessageType::JoinConfirm,
        MessageType::Move,
        MessageType::EconomyRequest,
        MessageType::Leave,
        MessageType::Ping,
        MessageType::RaidTrigger,
        MessageType::StatsRequest,
        MessageType::Attack,
        MessageType::LootClaim,
        MessageType::TradeOffer,
        MessageType::TradeAnswer,
        MessageType::Grant,
        MessageType::JoinChallenge,
        MessageType::JoinAccept,
        MessageType::MoveAck,
        MessageType::AoiSnapshot,
        MessageType::EconomyResult,
        MessageType::LeaveAck,
        MessageType::Pong,
        MessageType::RaidResult,
        MessageType::StatsReply,
        MessageType::AttackResult,
        MessageType::KillNotice,
        MessageType::LootResult,
        MessageType::TradeNotice,
    ];

    /// The type for a `type` byte, if it is one.
    pub fn from_u8(byte: u8) -> Option<MessageType> {
        MessageType::ALL.into_iter().find(|t| *t as u8 == byte)
    }

    /// Whether clients (and admins) send this type to the server.
    pub fn is_client_to_server(self) -> bool {
        (self as u8) < 0x80
    }

    /// The fixed size of the type, or for the three variable types the size of their fixed
    /// part (a datagram shorter than this is `truncated`).
    pub fn base_size(self) -> usize {
        match self {
            MessageType::JoinRequest => 64,
            MessageType::JoinConfirm => 160,
            MessageType::Move => 80,
            MessageType::EconomyRequest | MessageType::RaidTrigger => 56,
            MessageType::Leave
            | MessageType::JoinChallenge
            | MessageType::EconomyResult
            | MessageType::AttackResult
            | MessageType::KillNotice
            | MessageType::LootClaim
            | MessageType::LootResult => 32,
            MessageType::Attack => 40,
            MessageType::TradeOffer | MessageType::TradeNotice => 72,
            MessageType::TradeAnswer => 56,
            MessageType::Grant => 48,
            MessageType::Ping | MessageType::StatsRequest | MessageType::Pong => 24,
            MessageType::JoinAccept => 64,
            MessageType::MoveAck => MOVE_ACK_BASE,
            MessageType::AoiSnapshot => AOI_BASE,
            MessageType::LeaveAck | MessageType::StatsReply => 16,
            MessageType::RaidResult => 40,
        }
    }

    /// Bytes per list entry (contact, AoI entry, text byte); 0 for fixed-size types.
    pub fn entry_size(self) -> usize {
        match self {
            MessageType::MoveAck => Contact::SIZE,
            MessageType::AoiSnapshot => AoiEntry::SIZE,
            MessageType::StatsReply => 1,
            _ => 0,
        }
    }

    /// The protocol's name for the type, e.g. `"MOVE_ACK"`.
    pub fn name(self) -> &'static str {
        match self {
            MessageType::JoinRequest => "JOIN_REQUEST",
            MessageType::JoinConfirm => "JOIN_CONFIRM",
            MessageType::Move => "MOVE",
            MessageType::EconomyRequest => "ECONOMY_REQUEST",
            MessageType::Leave => "LEAVE",
            MessageType::Ping => "PING",
            MessageType::RaidTrigger => "RAID_TRIGGER",
            MessageType::StatsRequest => "STATS_REQUEST",
            MessageType::JoinChallenge => "JOIN_CHALLENGE",
            MessageType::JoinAccept => "JOIN_ACCEPT",
            MessageType::MoveAck => "MOVE_ACK",
            MessageType::AoiSnapshot => "AOI_SNAPSHOT",
            MessageType::EconomyResult => "ECONOMY_RESULT",
            MessageType::LeaveAck => "LEAVE_ACK",
            MessageType::Pong => "PONG",
            MessageType::RaidResult => "RAID_RESULT",
            MessageType::StatsReply => "STATS_REPLY",
            MessageType::Attack => "ATTACK",
            MessageType::AttackResult => "ATTACK_RESULT",
            MessageType::KillNotice => "KILL_NOTICE",
            MessageType::LootClaim => "LOOT_CLAIM",
            MessageType::LootResult => "LOOT_RESULT",
            MessageType::TradeOffer => "TRADE_OFFER",
            MessageType::TradeAnswer => "TRADE_ANSWER",
            MessageType::Grant => "GRANT",
            MessageType::TradeNotice => "TRADE_NOTICE",
        }
    }
}

/// The header's `flags`. Only bit 0, `RETRANSMIT`, is defined; a value of this type never has
/// another bit set, so every `Flags` encodes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Flags(u16);

impl Flags {
    /// No flag set.
    pub const NONE: Flags = Flags(0);
    /// Bit 0: the message is a resend (informational; clients set it on retransmits).
    pub const RETRANSMIT: Flags = Flags(1);
    /// The bits the protocol defines; any other bit makes a datagram `bad_field`.
    pub const KNOWN_BITS: u16 = 1;

    /// The flags for `bits`, or `None` if a reserved bit is set.
    pub fn from_bits(bits: u16) -> Option<Flags> {
        (bits & !Flags::KNOWN_BITS == 0).then_some(Flags(bits))
    }

    /// The raw bits.
    pub fn bits(self) -> u16 {
        self.0
    }

    /// Whether `RETRANSMIT` is set.
    pub fn is_retransmit(self) -> bool {
        self.0 & Flags::RETRANSMIT.0 != 0
    }
}

/// Defines a `u8` wire enum with `TryFrom<u8>`, `ALL` and `as_u8`.
macro_rules! wire_enum {
    ($(#[$meta:meta])* $name:ident { $($(#[$vmeta:meta])* $variant:ident = $value:expr,)+ }) => {
        $(#[$meta])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
        #[repr(u8)]
        pub enum $name {
            $($(#[$vmeta])* $variant = $value,)+
        }

        impl $name {
            /// Every value, in wire order.
            pub const ALL: &'static [$name] = &[$($name::$variant,)+];

            /// The wire byte.
            pub fn as_u8(self) -> u8 {
                self as u8
            }
        }

        impl TryFrom<u8> for $name {
            type Error = u8;

            fn try_from(byte: u8) -> Result<Self, u8> {
                $name::ALL.iter().copied().find(|v| *v as u8 == byte).ok_or(byte)
            }
        }
    };
}

wire_enum! {
    /// `JOIN_ACCEPT.status`.
    JoinStatus {
        /// Joined: `player_id` and `session_token` are valid.
        Joined = 0,
        /// The server is full.
        ServerFull = 1,
        /// The engine refused the server's own spawn point (a configuration error).
        SpawnRefused = 2,
        /// The source's IP address already holds the server's `max_sessions_per_host`.
        HostFull = 3,
        /// The server's join rate is spent for now: resend the confirm later.
        TryLater = 4,
        /// The connect token is not the documented layout.
        TokenMalformed = 5,
        /// The connect token's signature is not the backend's.
        TokenBadSignature = 6,
        /// The connect token has expired (or claims a lifetime past the server's longest).
        TokenExpired = 7,
        /// The connect token does not name this server.
        TokenWrongServer = 8,
        /// The token's account has a live session from another address.
        AccountLiveElsewhere = 9,
        /// The token already admitted a session.
        TokenUsed = 10,
    }
}

wire_enum! {
    /// `MOVE_ACK.result`: 0 applied, else the engine's reject reason.
    MoveResult {
        /// The move was applied.
        Applied = 0,
        /// No live player has that id.
        UnknownPlayer = 1,
        /// The session token does not match.
        WrongSession = 2,
        /// The sequence is not newer than the last applied one.
        StaleSequence = 3,
        /// Faster than the speed limit.
        TooFast = 4,
        /// Outside the world.
        OutOfBounds = 5,
        /// The player is dead until the server respawns it.
        Dead = 6,
    }
}

wire_enum! {
    /// `ATTACK_RESULT.refusal`: 0 landed, else the engine's reason (`MmoAttackError`).
    AttackRefusal {
        /// The attack landed.
        Landed = 0,
        /// The attacker is not a live player.
        UnknownPlayer = 1,
        /// The session token does not match.
        WrongSession = 2,
        /// The attacker has no hit points left.
        AttackerDead = 3,
        /// No live player or raid object has the target's id.
        UnknownTarget = 4,
        /// Same faction (or the attacker itself).
        FriendlyFire = 5,
        /// The target has no hit points left.
        TargetDead = 6,
        /// Farther than the server's attack range.
        OutOfRange = 7,
        /// Sooner than the cooldown after the attacker's last landed attack.
        Cooldown = 8,
    }
}

wire_enum! {
    /// `LOOT_RESULT.refusal`: 0 claimed, else the engine's reason (`MmoLootError`).
    LootRefusal {
        /// The loot is the claimer's (credited now, or earlier when `repeat`).
        Claimed = 0,
        /// The claimer is not a live player.
        UnknownPlayer = 1,
        /// The session token does not match.
        WrongSession = 2,
        /// No raid object has that id (never spawned, or its burst expired).
        UnknownLoot = 3,
        /// The object holds no loot (alive, not an add, or not killed by an attack).
        NoLoot = 4,
        /// Another account's kill (another session's, when the killer joined with no account).
        NotYours = 5,
        /// Farther than the server's loot range.
        OutOfRange = 6,
        /// The claimer's wallet cannot hold it.
        WalletFull = 7,
        /// The server's economy journal was full: the loot stays; claim again.
        StorageBusy = 8,
        /// The claimer is dead until the server respawns it.
        Dead = 9,
    }
}

wire_enum! {
    /// The kind of an entity (contacts, AoI entries, raid objects).
    EntityKind {
        /// A joined player (never a raid object's kind).
        Player = 1,
        /// A raid add.
        Add = 2,
        /// A raid projectile.
        Projectile = 3,
        /// Loot on the ground.
        Loot = 4,
    }
}

wire_enum! {
    /// `ECONOMY_REQUEST.kind`.
    EconomyKind {
        /// Move gold and/or items to the counterparty.
        Transfer = 1,
        /// Pay the counterparty gold for their items: both sides or neither.
        Trade = 2,
        /// Mint gold and/or items into the player's wallet.
        LootPickup = 3,
        /// Sink gold and/or items at a vendor.
        Spend = 4,
    }
}

wire_enum! {
    /// `ECONOMY_RESULT.status`: the engine's economy status (`MmoEconomyStatus`).
    EconomyStatus {
        /// Applied (with `duplicate` set: applied earlier, this is the recorded outcome).
        Applied = 0,
        /// An amount is zero where it must not be, or negative.
        InvalidAmount = 1,
        /// An amount is too large, or a balance would overflow.
        Overflow = 2,
        /// The counterparty is the initiator.
        SelfTrade = 3,
        /// Unknown item kind.
        UnknownItem = 4,
        /// Not enough gold.
        InsufficientFunds = 5,
        /// Not enough items.
        InsufficientItems = 6,
        /// No live player has that id (initiator or counterparty).
        UnknownPlayer = 7,
        /// The player or counterparty left while the request was applied.
        PlayerDeparted = 8,
        /// The session token does not match.
        WrongSession = 9,
        /// Older than the de-duplication window: never applied now.
        TransactionTooOld = 10,
        /// Not an economy kind.
        BadKind = 11,
        /// Transaction id 0, or more than 2^20 above the account's highest.
        InvalidTransaction = 12,
        /// The maker already has an open trade offer.
        OfferPending = 13,
        /// No open offer with that id.
        NoSuchOffer = 14,
        /// An answer to another player's offer.
        NotYourOffer = 15,
        /// The offer timed out.
        OfferExpired = 16,
        /// A kind clients may no longer request (a trade without consent, a loot pickup).
        KindRetired = 17,
        /// The server's economy journal was full (its disk behind): nothing decided; retransmit.
        StorageBusy = 18,
    }
}

/// Why the server drops a datagram: the protocol's validation table, one counter each
/// (`drop_<name>` in `STATS_REPLY`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum DropReason {
    /// Shorter than a header, or than its type's size.
    Truncated,
    /// Longer than [`CLIENT_DATAGRAM_MAX`].
    Oversized,
    /// Wrong magic.
    BadMagic,
    /// Neither this version nor the previous one.
    BadVersion,
    /// An earlier protocol version (1 up to [`OBSOLETE_VERSION`]): an old client.
    ObsoleteVersion,
    /// Not a client-to-server type.
    UnknownType,
    /// Not exactly the type's size, or `length` disagrees.
    BadLength,
    /// A reserved byte or flag bit set, a float not finite, an enum out of range.
    BadField,
    /// The source address's token bucket was empty.
    RateLimitedAddress,
    /// Too many join confirms with a valid cookie from the source's IP address (whatever the port).
    RateLimitedHost,
    /// `JOIN_CONFIRM` cookie does not match the source and nonce (or is from the future).
    BadCookie,
    /// `JOIN_CONFIRM` cookie from an older period.
    CookieExpired,
    /// Admin message from an address outside the server's `--admin-sources` (before its key).
    AdminWrongSource,
    /// Admin message with the wrong key.
    BadAdminKey,
    /// Session message for a player this worker has no session for.
    UnknownPlayer,
    /// Session message with the wrong session token.
    BadSession,
    /// Session message from another address than the session's.
    AddressMismatch,
    /// `MOVE`/`LEAVE` sequence already seen or older than the replay window.
    Replayed,
    /// The player's token bucket was empty.
    RateLimitedPlayer,
    /// The source no reply can reach (port 0, or an address that cannot send: 0.0.0.0/8,
    /// multicast, 240.0.0.0/4). Checked before anything else.
    BadSource,
}

impl DropReason {
    /// Every reason, in the order of the protocol's validation table.
    pub const ALL: [DropReason; 20] = [
        DropReason::BadSource,
        DropReason::Truncated,
        DropReason::Oversized,
        DropReason::BadMagic,
        DropReason::BadVersion,
        DropReason::ObsoleteVersion,
        DropReason::UnknownType,
        DropReason::BadLength,
        DropReason::BadField,
        DropReason::RateLimitedAddress,
        DropReason::BadCookie,
        DropReason::CookieExpired,
        DropReason::RateLimitedHost,
        DropReason::AdminWrongSource,
        DropReason::BadAdminKey,
        DropReason::UnknownPlayer,
        DropReason::BadSession,
        DropReason::AddressMismatch,
        DropReason::Replayed,
        DropReason::RateLimitedPlayer,
    ];

    /// The reason's name in the protocol (and, prefixed with `drop_`, its server counter).
    pub fn name(self) -> &'static str {
        match self {
            DropReason::Truncated => "truncated",
            DropReason::Oversized => "oversized",
            DropReason::BadMagic => "bad_magic",
            DropReason::BadVersion => "bad_version",
            DropReason::ObsoleteVersion => "obsolete_version",
            DropReason::UnknownType => "unknown_type",
            DropReason::BadLength => "bad_length",
            DropReason::BadField => "bad_field",
            DropReason::RateLimitedAddress => "rate_limited_address",
            DropReason::RateLimitedHost => "rate_limited_host",
            DropReason::BadCookie => "bad_cookie",
            DropReason::CookieExpired => "cookie_expired",
            DropReason::AdminWrongSource => "admin_wrong_source",
            DropReason::BadAdminKey => "bad_admin_key",
            DropReason::UnknownPlayer => "unknown_player",
            DropReason::BadSession => "bad_session",
            DropReason::AddressMismatch => "address_mismatch",
            DropReason::Replayed => "replayed",
            DropReason::RateLimitedPlayer => "rate_limited_player",
            DropReason::BadSource => "bad_source",
        }
    }
}

impl fmt::Display for DropReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

// ---------------------------------------------------------------------------------------------
// Errors
// ---------------------------------------------------------------------------------------------

/// Why bytes are not a valid v3 datagram. Each variant is one of the server's drop reasons
/// (see [`DecodeError::drop_reason`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum DecodeError {
    /// Shorter than the header, or than the size its type (and list count) needs.
    #[error("truncated datagram")]
    Truncated,
    /// Longer than the cap ([`STATS_REPLY_MAX`] for [`decode`], [`CLIENT_DATAGRAM_MAX`] for
    /// [`decode_client`]).
    #[error("oversized datagram")]
    Oversized,
    /// `magic` is not [`MAGIC`].
    #[error("bad magic {0:#06x}")]
    BadMagic(u16),
    /// `version` is neither [`VERSION`] nor an earlier one.
    #[error("bad version {0}")]
    BadVersion(u8),
    /// `version` is an earlier one (1 up to [`OBSOLETE_VERSION`]).
    #[error("obsolete protocol version (1 to {OBSOLETE_VERSION})")]
    ObsoleteVersion,
    /// `type` is not a known type ([`decode`]) or not a client-to-server type
    /// ([`decode_client`]).
    #[error("unknown message type {0:#04x}")]
    UnknownType(u8),
    /// Not exactly the type's size, or the `length` field disagrees with the datagram's size.
    #[error("bad length")]
    BadLength,
    /// A field's value is not allowed: the named field.
    #[error("bad field `{0}`")]
    BadField(&'static str),
}

impl DecodeError {
    /// The drop reason the server counts this failure under.
    pub fn drop_reason(self) -> DropReason {
        match self {
            DecodeError::Truncated => DropReason::Truncated,
            DecodeError::Oversized => DropReason::Oversized,
            DecodeError::BadMagic(_) => DropReason::BadMagic,
            DecodeError::BadVersion(_) => DropReason::BadVersion,
            DecodeError::ObsoleteVersion => DropReason::ObsoleteVersion,
            DecodeError::UnknownType(_) => DropReason::UnknownType,
            DecodeError::BadLength => DropReason::BadLength,
            DecodeError::BadField(_) => DropReason::BadField,
        }
    }
}

/// Why a message could not be encoded. Nothing written to the buffer is meaningful then.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum EncodeError {
    /// The output buffer is shorter than the datagram.
    #[error("output buffer too small: {needed} bytes needed")]
    BufferTooSmall {
        /// The datagram's size.
        needed: usize,
    },
    /// A list or text is longer than the protocol allows.
    #[error("too many entries in `{field}`: {len}, at most {max}")]
    TooLong {
        /// The list's name.
        field: &'static str,
        /// Its length.
        len: usize,
        /// The protocol's limit.
        max: usize,
    },
    /// A field's value is not allowed (non-finite float, non-ASCII text, a raid of kind
    /// `Player`, contacts on a refused move): the named field.
    #[error("invalid field `{0}`")]
    InvalidField(&'static str),
}

// ---------------------------------------------------------------------------------------------
// Byte helpers: bounds-checked, never panicking. Reads past the end give 0 and writes past
// the end are ignored; the codec checks sizes before it reads or writes, so neither happens.
// ---------------------------------------------------------------------------------------------

fn array_at<const N: usize>(b: &[u8], off: usize) -> [u8; N] {
    let mut a = [0u8; N];
    if let Some(s) = off.checked_add(N).and_then(|end| b.get(off..end)) {
        a.copy_from_slice(s);
    }
    a
}

fn u8_at(b: &[u8], off: usize) -> u8 {
    b.get(off).copied().unwrap_or(0)
}
fn u16_at(b: &[u8], off: usize) -> u16 {
    u16::from_le_bytes(array_at(b, off))
}
fn u32_at(b: &[u8], off: usize) -> u32 {
    u32::from_le_bytes(array_at(b, off))
}
fn u64_at(b: &[u8], off: usize) -> u64 {
    u64::from_le_bytes(array_at(b, off))
}
fn i32_at(b: &[u8], off: usize) -> i32 {
    i32::from_le_bytes(array_at(b, off))
}
fn i64_at(b: &[u8], off: usize) -> i64 {
    i64::from_le_bytes(array_at(b, off))
}
fn f32_at(b: &[u8], off: usize) -> f32 {
    f32::from_le_bytes(array_at(b, off))
}

fn put(b: &mut [u8], off: usize, bytes: &[u8]) {
    if let Some(s) = off.checked_add(bytes.len()).and_then(|end| b.get_mut(off..end)) {
        s.copy_from_slice(bytes);
    }
}

/// Whether `b[from..to]` is all zero (reserved bytes).
fn zeroed(b: &[u8], from: usize, to: usize) -> bool {
    b.get(from..to).is_some_and(|s| s.iter().all(|&x| x == 0))
}

fn reserved(b: &[u8], from: usize, to: usize) -> Result<(), DecodeError> {
    if zeroed(b, from, to) { Ok(()) } else { Err(DecodeError::BadField("reserved")) }
}

fn finite_at(b: &[u8], off: usize, field: &'static str) -> Result<f32, DecodeError> {
    let v = f32_at(b, off);
    if v.is_finite() { Ok(v) } else { Err(DecodeError::BadField(field)) }
}

fn enum_at<T: TryFrom<u8>>(b: &[u8], off: usize, field: &'static str) -> Result<T, DecodeError> {
    T::try_from(u8_at(b, off)).map_err(|_| DecodeError::BadField(field))
}

fn check_finite(v: f32, field: &'static str) -> Result<(), EncodeError> {
    if v.is_finite() { Ok(()) } else { Err(EncodeError::InvalidField(field)) }
}

// ---------------------------------------------------------------------------------------------
// Lists inside replies
// ---------------------------------------------------------------------------------------------

mod sealed {
    pub trait Sealed {}
}

/// A fixed-size record inside a variable-length reply ([`Contact`], [`AoiEntry`]).
pub trait WireRecord: Copy + PartialEq + fmt::Debug + sealed::Sealed {
    /// Bytes per record.
    const SIZE: usize;
    /// Reads a record from `b` (at least [`Self::SIZE`] bytes, already [checked](Self::check)).
    fn read(b: &[u8]) -> Self;
    /// Checks a record's bytes: reserved bytes, floats, enums.
    fn check(b: &[u8]) -> Result<(), DecodeError>;
    /// Checks the record's values ([`Self::write`] then [`Self::check`] succeeds).
    fn validate(&self) -> Result<(), EncodeError>;
    /// Writes the record into `b` (at least [`Self::SIZE`] zeroed bytes).
    fn write(&self, b: &mut [u8]);
}

/// A list of records in a reply: either decoded bytes borrowed from a datagram (checked, so
/// reading them cannot fail) or records to encode borrowed from the caller. Two lists are
/// equal when they hold the same records, whichever form they are in.
#[derive(Clone, Copy)]
pub struct WireList<'a, T> {
    repr: ListRepr<'a, T>,
}

#[derive(Clone, Copy)]
enum ListRepr<'a, T> {
    Wire(&'a [u8]),
    Items(&'a [T]),
}

impl<'a, T: WireRecord> WireList<'a, T> {
    /// A list of the given records (to encode).
    pub fn from_items(items: &'a [T]) -> Self {
        WireList { repr: ListRepr::Items(items) }
    }

    /// An empty list.
    pub fn empty() -> Self {
        WireList { repr: ListRepr::Items(&[]) }
    }

    /// Checks `count` records' bytes and wraps them.
    fn from_wire(bytes: &'a [u8]) -> Result<Self, DecodeError> {
        for chunk in bytes.chunks(T::SIZE) {
            T::check(chunk)?;
        }
        Ok(WireList { repr: ListRepr::Wire(bytes) })
    }

    /// Number of records.
    pub fn len(&self) -> usize {
        match self.repr {
            ListRepr::Wire(b) => b.len() / T::SIZE,
            ListRepr::Items(items) => items.len(),
        }
    }

    /// Whether the list is empty.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The record at `index`.
    pub fn get(&self, index: usize) -> Option<T> {
        match self.repr {
            ListRepr::Wire(b) => {
                let start = index.checked_mul(T::SIZE)?;
                b.get(start..start.checked_add(T::SIZE)?).map(T::read)
            }
            ListRepr::Items(items) => items.get(index).copied(),
        }
    }

    /// The records in order.
    pub fn iter(&self) -> impl Iterator<Item = T> + '_ {
        (0..self.len()).filter_map(|i| self.get(i))
    }
}

impl<T: WireRecord> PartialEq for WireList<'_, T> {
    fn eq(&self, other: &Self) -> bool {
        self.len() == other.len() && self.iter().zip(other.iter()).all(|(a, b)| a == b)
    }
}

impl<T: WireRecord> fmt::Debug for WireList<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

/// One contact in a `MOVE_ACK`: another entity within the contact radius after the move.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Contact {
    /// The other entity's id (a player id, or a raid object's id with the top bit set).
    pub other_id: u64,
    /// Distance in metres (finite).
    pub distance_m: f32,
    /// What the other entity is.
    pub kind: EntityKind,
}

impl sealed::Sealed for Contact {}
impl WireRecord for Contact {
    const SIZE: usize = 16;

    fn read(b: &[u8]) -> Self {
        Contact { other_id: u64_at(b, 0), distance_m: f32_at(b, 8), kind: EntityKind::try_from(u8_at(b, 12)).unwrap_or(EntityKind::Player) }
    }

    fn check(b: &[u8]) -> Result<(), DecodeError> {
        finite_at(b, 8, "contact.distance_m")?;
        enum_at::<EntityKind>(b, 12, "contact.kind")?;
        reserved(b, 13, 16)
    }

    fn validate(&self) -> Result<(), EncodeError> {
        check_finite(self.distance_m, "contact.distance_m")
    }

    fn write(&self, b: &mut [u8]) {
        put(b, 0, &self.other_id.to_le_bytes());
        put(b, 8, &self.distance_m.to_le_bytes());
        put(b, 12, &[self.kind.as_u8()]);
    }
}

/// One entry of an `AOI_SNAPSHOT`: an entity near the player.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct AoiEntry {
    /// The entity's id.
    pub entity_id: u64,
    /// Position, metres (finite).
    pub x_m: f32,
    /// Position, metres (finite).
    pub y_m: f32,
    /// What the entity is.
    pub kind: EntityKind,
}

impl sealed::Sealed for AoiEntry {}
impl WireRecord for AoiEntry {
    const SIZE: usize = 20;

    fn read(b: &[u8]) -> Self {
        AoiEntry {
            entity_id: u64_at(b, 0),
            x_m: f32_at(b, 8),
            y_m: f32_at(b, 12),
            kind: EntityKind::try_from(u8_at(b, 16)).unwrap_or(EntityKind::Player),
        }
    }

    fn check(b: &[u8]) -> Result<(), DecodeError> {
        finite_at(b, 8, "entry.x_m")?;
        finite_at(b, 12, "entry.y_m")?;
        enum_at::<EntityKind>(b, 16, "entry.kind")?;
        reserved(b, 17, 20)
    }

    fn validate(&self) -> Result<(), EncodeError> {
        check_finite(self.x_m, "entry.x_m")?;
        check_finite(self.y_m, "entry.y_m")
    }

    fn write(&self, b: &mut [u8]) {
        put(b, 0, &self.entity_id.to_le_bytes());
        put(b, 8, &self.x_m.to_le_bytes());
        put(b, 12, &self.y_m.to_le_bytes());
        put(b, 16, &[self.kind.as_u8()]);
    }
}

// ---------------------------------------------------------------------------------------------
// Messages
// ---------------------------------------------------------------------------------------------

/// `JOIN_REQUEST` (0x01, 64 bytes): asks for a challenge.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct JoinRequest {
    /// Client-chosen, echoed in the challenge.
    pub nonce: u64,
}

/// `JOIN_CHALLENGE` (0x81, 32 bytes): the stateless cookie to echo in `JOIN_CONFIRM`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct JoinChallenge {
    /// The request's nonce.
    pub nonce: u64,
    /// `server_time_ms / 10_000` when the cookie was made.
    pub period: u32,
    /// SipHash-2-4 over the source address, nonce and period.
    pub cookie: u64,
}

/// `JOIN_CONFIRM` (0x02, 160 bytes): answers the challenge and presents the backend's
/// connect token. Where the player appears and on which side are the server's to decide.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct JoinConfirm {
    /// As in the request.
    pub nonce: u64,
    /// From the challenge.
    pub period: u32,
    /// From the challenge.
    pub cookie: u64,
    /// The connect token, opaque to the codec ([`crate::token`] mints it).
    pub token: [u8; CONNECT_TOKEN_SIZE],
}

/// `JOIN_ACCEPT` (0x82, 64 bytes): the session and where the server put the player, or why
/// there is no session.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct JoinAccept {
    /// The confirm's nonce.
    pub nonce: u64,
    /// The new player's id (0 unless joined).
    pub player_id: u64,
    /// The session token every session message carries (0 unless joined).
    pub session_token: u64,
    /// Joined, or why not.
    pub status: JoinStatus,
    /// The player's side (the token's; 0 unless joined).
    pub faction: u8,
    /// The server's tick period, milliseconds.
    pub tick_ms: u32,
    /// Milliseconds since the server started.
    pub server_time_ms: u64,
    /// Where the server put the player, metres (0 unless joined).
    pub spawn_x_m: f32,
    /// Where the server put the player, metres (0 unless joined).
    pub spawn_y_m: f32,
}

/// `MOVE` (0x03, 80 bytes): a position update.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Move {
    /// The player.
    pub player_id: u64,
    /// The session token.
    pub session_token: u64,
    /// One higher per message of the session (moves and leave share it).
    pub sequence: u32,
    /// The client's clock, milliseconds; echoed in the ack.
    pub client_time_ms: u32,
    /// Position, metres (finite).
    pub x_m: f32,
    /// Position, metres (finite).
    pub y_m: f32,
    /// Facing, radians (finite).
    pub facing_rad: f32,
    /// Opaque game bytes, forwarded as is.
    pub payload: [u8; PAYLOAD_LEN],
}

/// `MOVE_ACK` (0x83, 20 + 16 x contacts bytes): the move's outcome and its contacts.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct MoveAck<'a> {
    /// The move's sequence (echo).
    pub sequence: u32,
    /// The move's `client_time_ms` (echo).
    pub client_time_ms: u32,
    /// Applied, or the engine's reject reason.
    pub result: MoveResult,
    /// Contacts after the move (empty unless applied; at most [`MOVE_ACK_CONTACTS_MAX`]).
    pub contacts: WireList<'a, Contact>,
}

/// `AOI_SNAPSHOT` (0x84, 24 + 20 x entries bytes): the nearest entities, once per tick.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct AoiSnapshot<'a> {
    /// The server tick.
    pub tick: u32,
    /// Milliseconds since the server started.
    pub server_time_ms: u64,
    /// Nearest first, at most [`AOI_ENTRIES_MAX`].
    pub entries: WireList<'a, AoiEntry>,
}

/// `ECONOMY_REQUEST` (0x04, 56 bytes): a reliable economy operation (resent until answered).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EconomyRequest {
    /// The initiator.
    pub player_id: u64,
    /// The initiator's session token.
    pub session_token: u64,
    /// Increasing per player; 0 is invalid. Resends carry the same id.
    pub transaction_id: u64,
    /// The other player (0 for loot pickup and spend).
    pub counterparty_id: u64,
    /// Gold amount.
    pub gold: i64,
    /// Item amount.
    pub item_count: i32,
    /// Item kind.
    pub item_kind: u16,
    /// What the operation does.
    pub kind: EconomyKind,
}

/// `ECONOMY_RESULT` (0x85, 32 bytes): the recorded outcome of a transaction.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EconomyResult {
    /// The request's transaction id (echo).
    pub transaction_id: u64,
    /// The initiator's gold right after it applied (0 if it did not).
    pub gold_balance: u64,
    /// The engine's economy status.
    pub status: EconomyStatus,
    /// Whether this answers a resend (the outcome was decided earlier).
    pub duplicate: bool,
}

/// `LEAVE` (0x05, 32 bytes): ends the session.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Leave {
    /// The player.
    pub player_id: u64,
    /// The session token.
    pub session_token: u64,
    /// The session's next sequence.
    pub sequence: u32,
}

/// `LEAVE_ACK` (0x86, 16 bytes): the session is gone.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LeaveAck {
    /// The player who left.
    pub player_id: u64,
}

/// `PING` (0x06, 24 bytes): needs no session.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Ping {
    /// The client's clock, microseconds; echoed.
    pub client_time_us: u64,
}

/// `PONG` (0x87, 24 bytes).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Pong {
    /// The ping's `client_time_us` (echo).
    pub client_time_us: u64,
    /// Milliseconds since the server started.
    pub server_time_ms: u64,
}

/// `RAID_TRIGGER` (0x07, 56 bytes, admin): spawn a burst of raid objects.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RaidTrigger {
    /// The server's admin key.
    pub admin_key: u64,
    /// Echoed in the result.
    pub request_id: u32,
    /// Objects to spawn.
    pub count: u32,
    /// Centre, metres (finite).
    pub center_x_m: f32,
    /// Centre, metres (finite).
    pub center_y_m: f32,
    /// Half the side of the square they spawn in, metres (finite).
    pub half_extent_m: f32,
    /// How long they live, milliseconds.
    pub lifetime_ms: u32,
    /// Hit points each.
    pub hp: i32,
    /// Seed of their positions.
    pub seed: u32,
    /// Add, projectile or loot (never `Player`).
    pub kind: EntityKind,
    /// Their faction.
    pub faction: u8,
}

/// `RAID_RESULT` (0x88, 40 bytes, admin).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RaidResult {
    /// The trigger's request id (echo).
    pub request_id: u32,
    /// The engine call's `MmoStatus` (0 is `MMO_OK`).
    pub status: u32,
    /// Objects spawned.
    pub spawned: u32,
    /// Grid cells they landed in.
    pub cells: u32,
    /// The tick they expire at.
    pub expires_tick: u32,
    /// How long the engine's spawn call took, nanoseconds (measured by the server).
    pub spawn_ns: u64,
}

/// `STATS_REQUEST` (0x08, 24 bytes, admin).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StatsRequest {
    /// The server's admin key.
    pub admin_key: u64,
    /// Echoed in the reply.
    pub request_id: u32,
}

/// `STATS_REPLY` (0x89, 16 + text bytes, admin): `name value` lines.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StatsReply<'a> {
    /// The request's id (echo).
    pub request_id: u32,
    /// ASCII, one `name value` pair per `\n`-terminated line; at most [`STATS_TEXT_MAX`] bytes.
    pub text: &'a str,
}

/// `ATTACK` (0x09, 40 bytes): a player attacks a player or raid object. The server decides
/// whether it lands (range, cooldown, faction, both alive) and what it takes. `sequence` is the
/// session's, shared with `MOVE` and `LEAVE`: one replay window covers all three.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Attack {
    /// The attacker.
    pub player_id: u64,
    /// The attacker's session token.
    pub session_token: u64,
    /// A player's id or a raid object's.
    pub target_id: u64,
    /// The session's next sequence.
    pub sequence: u32,
}

/// `ATTACK_RESULT` (0x8A, 32 bytes): what the server decided about an `ATTACK`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AttackResult {
    /// The attack's sequence (echo).
    pub sequence: u32,
    /// [`AttackRefusal::Landed`] or why not.
    pub refusal: AttackRefusal,
    /// This attack brought the target to zero hit points (exactly one attack per target does).
    pub killed: bool,
    /// The target's kind when it landed.
    pub target_kind: Option<EntityKind>,
    /// The attack's target (echo).
    pub target_id: u64,
    /// Hit points taken: the server's `attack_damage`, or what the target had left.
    pub damage: i32,
    /// Hit points the target has left.
    pub hp_left: i32,
}

/// `KILL_NOTICE` (0x8B, 32 bytes): a kill, told to the players in the killer's area of
/// interest (the killer learns of it from its `ATTACK_RESULT`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct KillNotice {
    /// Who landed the killing attack.
    pub killer_id: u64,
    /// Who or what died.
    pub target_id: u64,
    /// Its kind.
    pub target_kind: EntityKind,
}

/// `LOOT_CLAIM` (0x0A, 32 bytes): a claim of the loot a killed add dropped. Idempotent: a
/// repeat is answered again with the same contents, so it carries no sequence.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LootClaim {
    /// The claimer.
    pub player_id: u64,
    /// The claimer's session token.
    pub session_token: u64,
    /// The dead add's id.
    pub loot_id: u64,
}

/// `LOOT_RESULT` (0x8C, 32 bytes): what a claim got.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LootResult {
    /// The claim's loot id (echo).
    pub loot_id: u64,
    /// Gold the loot holds (credited unless `repeat`).
    pub gold: u64,
    /// Items it holds (0: gold only).
    pub item_count: u32,
    /// Their kind.
    pub item_kind: u16,
    /// [`LootRefusal::Claimed`] or why not.
    pub refusal: LootRefusal,
    /// This answers a claim already credited.
    pub repeat: bool,
}

/// One side of a trade: gold and one stack of items (16 bytes on the wire, 2 reserved).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TradeSide {
    /// Gold.
    pub gold: i64,
    /// Items (0: gold only).
    pub item_count: i32,
    /// Their kind.
    pub item_kind: u16,
}

/// `TRADE_OFFER` (0x0B, 72 bytes): `give` (into escrow) for `want`, to the counterparty.
/// Reliable like `ECONOMY_REQUEST`; the offer's id is its transaction id.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TradeOffer {
    /// The maker.
    pub player_id: u64,
    /// The maker's session token.
    pub session_token: u64,
    /// The maker's transaction id (and the offer's id).
    pub transaction_id: u64,
    /// The taker.
    pub counterparty_id: u64,
    /// What the maker gives.
    pub give: TradeSide,
    /// What the maker wants.
    pub want: TradeSide,
}

/// `TRADE_ANSWER` (0x0C, 56 bytes): the taker accepts or declines (the maker: cancels).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TradeAnswer {
    /// Who answers.
    pub player_id: u64,
    /// Their session token.
    pub session_token: u64,
    /// Their transaction id.
    pub transaction_id: u64,
    /// The offer's maker.
    pub maker_id: u64,
    /// The offer's id.
    pub offer_id: u64,
    /// Accept (or decline).
    pub accept: bool,
}

/// `GRANT` (0x0D, 48 bytes, admin): the one source of value besides starting gold and loot.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Grant {
    /// The server's admin key.
    pub admin_key: u64,
    /// Whom.
    pub player_id: u64,
    /// Increasing per player; answered in `ECONOMY_RESULT.transaction_id`.
    pub grant_id: u64,
    /// What.
    pub stack: TradeSide,
}

wire_enum! {
    /// `TRADE_NOTICE.event`.
    TradeEvent {
        /// An offer for the receiver (its taker), with the terms.
        Offered = 1,
        /// The receiver's offer was accepted.
        Accepted = 2,
        /// The receiver's offer was declined.
        Declined = 3,
    }
}

/// `TRADE_NOTICE` (0x8D, 72 bytes): news of a trade offer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TradeNotice {
    /// What happened.
    pub event: TradeEvent,
    /// The offer's maker.
    pub maker_id: u64,
    /// Its taker.
    pub taker_id: u64,
    /// Its id.
    pub offer_id: u64,
    /// What the maker gives (`Offered` only; zero otherwise).
    pub give: TradeSide,
    /// What the maker wants (`Offered` only).
    pub want: TradeSide,
}

/// Any v3 message. Variable-length replies borrow their lists from the datagram (decoded) or
/// from the caller (to encode).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Message<'a> {
    /// A [`JoinRequest`].
    JoinRequest(JoinRequest),
    /// A [`JoinConfirm`].
    JoinConfirm(JoinConfirm),
    /// A [`Move`].
    Move(Move),
    /// A [`EconomyRequest`].
    EconomyRequest(EconomyRequest),
    /// A [`Leave`].
    Leave(Leave),
    /// A [`Ping`].
    Ping(Ping),
    /// A [`RaidTrigger`].
    RaidTrigger(RaidTrigger),
    /// A [`StatsRequest`].
    StatsRequest(StatsRequest),
    /// A [`JoinChallenge`].
    JoinChallenge(JoinChallenge),
    /// A [`JoinAccept`].
    JoinAccept(JoinAccept),
    /// A [`MoveAck`].
    MoveAck(MoveAck<'a>),
    /// A [`AoiSnapshot`].
    AoiSnapshot(AoiSnapshot<'a>),
    /// A [`EconomyResult`].
    EconomyResult(EconomyResult),
    /// A [`LeaveAck`].
    LeaveAck(LeaveAck),
    /// A [`Pong`].
    Pong(Pong),
    /// A [`RaidResult`].
    RaidResult(RaidResult),
    /// A [`StatsReply`].
    StatsReply(StatsReply<'a>),
    /// An [`Attack`].
    Attack(Attack),
    /// An [`AttackResult`].
    AttackResult(AttackResult),
    /// A [`KillNotice`].
    KillNotice(KillNotice),
    /// A [`LootClaim`].
    LootClaim(LootClaim),
    /// A [`LootResult`].
    LootResult(LootResult),
    /// A [`TradeOffer`].
    TradeOffer(TradeOffer),
    /// A [`TradeAnswer`].
    TradeAnswer(TradeAnswer),
    /// A [`Grant`].
    Grant(Grant),
    /// A [`TradeNotice`].
    TradeNotice(TradeNotice),
}

macro_rules! impl_from_message {
    ($($name:ident),+) => {
        $(impl From<$name> for Message<'_> {
            fn from(m: $name) -> Self {
                Message::$name(m)
            }
        })+
    };
}
impl_from_message!(
    JoinRequest,
    JoinConfirm,
    Move,
    EconomyRequest,
    Leave,
    Ping,
    RaidTrigger,
    StatsRequest,
    JoinChallenge,
    JoinAccept,
    EconomyResult,
    LeaveAck,
    Pong,
    RaidResult,
    Attack,
    AttackResult,
    KillNotice,
    LootClaim,
    LootResult,
    TradeOffer,
    TradeAnswer,
    Grant,
    TradeNotice
);
impl<'a> From<MoveAck<'a>> for Message<'a> {
    fn from(m: MoveAck<'a>) -> Self {
        Message::MoveAck(m)
    }
}
impl<'a> From<AoiSnapshot<'a>> for Message<'a> {
    fn from(m: AoiSnapshot<'a>) -> Self {
        Message::AoiSnapshot(m)
    }
}
impl<'a> From<StatsReply<'a>> for Message<'a> {
    fn from(m: StatsReply<'a>) -> Self {
        Message::StatsReply(m)
    }
}

impl Message<'_> {
    /// The message's type.
    pub fn message_type(&self) -> MessageType {
        match self {
            Message::JoinRequest(_) => MessageType::JoinRequest,
            Message::JoinConfirm(_) => MessageType::JoinConfirm,
            Message::Move(_) => MessageType::Move,
            Message::EconomyRequest(_) => MessageType::EconomyRequest,
            Message::Leave(_) => MessageType::Leave,
            Message::Ping(_) => MessageType::Ping,
            Message::RaidTrigger(_) => MessageType::RaidTrigger,
            Message::StatsRequest(_) => MessageType::StatsRequest,
            Message::JoinChallenge(_) => MessageType::JoinChallenge,
            Message::JoinAccept(_) => MessageType::JoinAccept,
            Message::MoveAck(_) => MessageType::MoveAck,
            Message::AoiSnapshot(_) => MessageType::AoiSnapshot,
            Message::EconomyResult(_) => MessageType::EconomyResult,
            Message::LeaveAck(_) => MessageType::LeaveAck,
            Message::Pong(_) => MessageType::Pong,
            Message::RaidResult(_) => MessageType::RaidResult,
            Message::StatsReply(_) => MessageType::StatsReply,
            Message::Attack(_) => MessageType::Attack,
            Message::AttackResult(_) => MessageType::AttackResult,
            Message::KillNotice(_) => MessageType::KillNotice,
            Message::LootClaim(_) => MessageType::LootClaim,
            Message::LootResult(_) => MessageType::LootResult,
            Message::TradeOffer(_) => MessageType::TradeOffer,
            Message::TradeAnswer(_) => MessageType::TradeAnswer,
            Message::Grant(_) => MessageType::Grant,
            Message::TradeNotice(_) => MessageType::TradeNotice,
        }
    }

    /// The number of list entries (contacts, AoI entries, text bytes); 0 for fixed types.
    fn entries(&self) -> usize {
        match self {
            Message::MoveAck(m) => m.contacts.len(),
            Message::AoiSnapshot(m) => m.entries.len(),
            Message::StatsReply(m) => m.text.len(),
            _ => 0,
        }
    }

    /// The size of the encoded datagram.
    pub fn encoded_len(&self) -> usize {
        let t = self.message_type();
        t.base_size().saturating_add(t.entry_size().saturating_mul(self.entries()))
    }

    /// Encodes into `out`; see [`encode`].
    pub fn encode(&self, flags: Flags, out: &mut [u8]) -> Result<usize, EncodeError> {
        encode(self, flags, out)
    }
}

/// A decoded datagram: its header flags and its message.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Decoded<'a> {
    /// The header's flags.
    pub flags: Flags,
    /// The message.
    pub message: Message<'a>,
}

// ---------------------------------------------------------------------------------------------
// Encode
// ---------------------------------------------------------------------------------------------

/// Encodes `message` with `flags` into the front of `out` and returns the datagram's length.
/// Reserved bytes are written as zero. Nothing is allocated. Fails, without a usable result in
/// `out`, if `out` is too short, a list or text is too long, or a field is invalid (see
/// [`EncodeError`]); every message that encodes decodes back to itself.
pub fn encode(message: &Message<'_>, flags: Flags, out: &mut [u8]) -> Result<usize, EncodeError> {
    validate(message)?;
    let len = message.encoded_len();
    let buf = out.get_mut(..len).ok_or(EncodeError::BufferTooSmall { needed: len })?;
    buf.fill(0);
    let t = message.message_type();
    put(buf, 0, &MAGIC.to_le_bytes());
    put(buf, 2, &[VERSION, t as u8]);
    // `validate` capped every list, so the length fits in the u16 (at most 8,192).
    put(buf, 4, &(len as u16).to_le_bytes());
    put(buf, 6, &flags.bits().to_le_bytes());
    let b = buf;
    match message {
        Message::JoinRequest(m) => put(b, 8, &m.nonce.to_le_bytes()),
        Message::JoinChallenge(m) => {
            put(b, 8, &m.nonce.to_le_bytes());
            put(b, 16, &m.period.to_le_bytes());
            put(b, 24, &m.cookie.to_le_bytes());
        }
        Message::JoinConfirm(m) => {
            put(b, 8, &m.nonce.to_le_bytes());
            put(b, 16, &m.period.to_le_bytes());
            put(b, 24, &m.cookie.to_le_bytes());
            put(b, 32, &m.token);
        }
        Message::JoinAccept(m) => {
            put(b, 8, &m.nonce.to_le_bytes());
            put(b, 16, &m.player_id.to_le_bytes());
            put(b, 24, &m.session_token.to_le_bytes());
            put(b, 32, &[m.status.as_u8(), m.faction]);
            put(b, 36, &m.tick_ms.to_le_bytes());
            put(b, 40, &m.server_time_ms.to_le_bytes());
            put(b, 48, &m.spawn_x_m.to_le_bytes());
            put(b, 52, &m.spawn_y_m.to_le_bytes());
        }
        Message::Move(m) => {
            put(b, 8, &m.player_id.to_le_bytes());
            put(b, 16, &m.session_token.to_le_bytes());
            put(b, 24, &m.sequence.to_le_bytes());
            put(b, 28, &m.client_time_ms.to_le_bytes());
            put(b, 32, &m.x_m.to_le_bytes());
            put(b, 36, &m.y_m.to_le_bytes());
            put(b, 40, &m.facing_rad.to_le_bytes());
            put(b, 48, &m.payload);
        }
        Message::MoveAck(m) => {
            put(b, 8, &m.sequence.to_le_bytes());
            put(b, 12, &m.client_time_ms.to_le_bytes());
            put(b, 16, &[m.result.as_u8(), m.contacts.len() as u8]);
            write_list(b, MOVE_ACK_BASE, &m.contacts);
        }
        Message::AoiSnapshot(m) => {
            put(b, 8, &m.tick.to_le_bytes());
            put(b, 12, &(m.entries.len() as u16).to_le_bytes());
            put(b, 16, &m.server_time_ms.to_le_bytes());
            write_list(b, AOI_BASE, &m.entries);
        }
        Message::EconomyRequest(m) => {
            put(b, 8, &m.player_id.to_le_bytes());
            put(b, 16, &m.session_token.to_le_bytes());
            put(b, 24, &m.transaction_id.to_le_bytes());
            put(b, 32, &m.counterparty_id.to_le_bytes());
            put(b, 40, &m.gold.to_le_bytes());
            put(b, 48, &m.item_count.to_le_bytes());
            put(b, 52, &m.item_kind.to_le_bytes());
            put(b, 54, &[m.kind.as_u8()]);
        }
        Message::EconomyResult(m) => {
            put(b, 8, &m.transaction_id.to_le_bytes());
            put(b, 16, &m.gold_balance.to_le_bytes());
            put(b, 24, &[m.status.as_u8(), u8::from(m.duplicate)]);
        }
        Message::Leave(m) => {
            put(b, 8, &m.player_id.to_le_bytes());
            put(b, 16, &m.session_token.to_le_bytes());
            put(b, 24, &m.sequence.to_le_bytes());
        }
        Message::LeaveAck(m) => put(b, 8, &m.player_id.to_le_bytes()),
        Message::Ping(m) => put(b, 8, &m.client_time_us.to_le_bytes()),
        Message::Pong(m) => {
            put(b, 8, &m.client_time_us.to_le_bytes());
            put(b, 16, &m.server_time_ms.to_le_bytes());
        }
        Message::RaidTrigger(m) => {
            put(b, 8, &m.admin_key.to_le_bytes());
            put(b, 16, &m.request_id.to_le_bytes());
            put(b, 20, &m.count.to_le_bytes());
            put(b, 24, &m.center_x_m.to_le_bytes());
            put(b, 28, &m.center_y_m.to_le_bytes());
            put(b, 32, &m.half_extent_m.to_le_bytes());
            put(b, 36, &m.lifetime_ms.to_le_bytes());
            put(b, 40, &m.hp.to_le_bytes());
            put(b, 44, &m.seed.to_le_bytes());
            put(b, 48, &[m.kind.as_u8(), m.faction]);
        }
        Message::RaidResult(m) => {
            put(b, 8, &m.request_id.to_le_bytes());
            put(b, 12, &m.status.to_le_bytes());
            put(b, 16, &m.spawned.to_le_bytes());
            put(b, 20, &m.cells.to_le_bytes());
            put(b, 24, &m.expires_tick.to_le_bytes());
            put(b, 32, &m.spawn_ns.to_le_bytes());
        }
        Message::StatsRequest(m) => {
            put(b, 8, &m.admin_key.to_le_bytes());
            put(b, 16, &m.request_id.to_le_bytes());
        }
        Message::StatsReply(m) => {
            put(b, 8, &m.request_id.to_le_bytes());
            put(b, 12, &(m.text.len() as u16).to_le_bytes());
            put(b, STATS_REPLY_BASE, m.text.as_bytes());
        }
        Message::Attack(m) => {
            put(b, 8, &m.player_id.to_le_bytes());
            put(b, 16, &m.session_token.to_le_bytes());
            put(b, 24, &m.target_id.to_le_bytes());
            put(b, 32, &m.sequence.to_le_bytes());
        }
        Message::AttackResult(m) => {
            put(b, 8, &m.sequence.to_le_bytes());
            put(b, 12, &[m.refusal.as_u8(), u8::from(m.killed), m.target_kind.map_or(0, EntityKind::as_u8)]);
            put(b, 16, &m.target_id.to_le_bytes());
            put(b, 24, &m.damage.to_le_bytes());
            put(b, 28, &m.hp_left.to_le_bytes());
        }
        Message::KillNotice(m) => {
            put(b, 8, &m.killer_id.to_le_bytes());
            put(b, 16, &m.target_id.to_le_bytes());
            put(b, 24, &[m.target_kind.as_u8()]);
        }
        Message::LootClaim(m) => {
            put(b, 8, &m.player_id.to_le_bytes());
            put(b, 16, &m.session_token.to_le_bytes());
            put(b, 24, &m.loot_id.to_le_bytes());
        }
        Message::LootResult(m) => {
            put(b, 8, &m.loot_id.to_le_bytes());
            put(b, 16, &m.gold.to_le_bytes());
            put(b, 24, &m.item_count.to_le_bytes());
            put(b, 28, &m.item_kind.to_le_bytes());
            put(b, 30, &[m.refusal.as_u8(), u8::from(m.repeat)]);
        }
        Message::TradeOffer(m) => {
            put(b, 8, &m.player_id.to_le_bytes());
            put(b, 16, &m.session_token.to_le_bytes());
            put(b, 24, &m.transaction_id.to_le_bytes());
            put(b, 32, &m.counterparty_id.to_le_bytes());
            put_side(b, 40, &m.give);
            put_side(b, 56, &m.want);
        }
        Message::TradeAnswer(m) => {
            put(b, 8, &m.player_id.to_le_bytes());
            put(b, 16, &m.session_token.to_le_bytes());
            put(b, 24, &m.transaction_id.to_le_bytes());
            put(b, 32, &m.maker_id.to_le_bytes());
            put(b, 40, &m.offer_id.to_le_bytes());
            put(b, 48, &[u8::from(m.accept)]);
        }
        Message::Grant(m) => {
            put(b, 8, &m.admin_key.to_le_bytes());
            put(b, 16, &m.player_id.to_le_bytes());
            put(b, 24, &m.grant_id.to_le_bytes());
            put_side(b, 32, &m.stack);
        }
        Message::TradeNotice(m) => {
            put(b, 8, &[m.event.as_u8()]);
            put(b, 16, &m.maker_id.to_le_bytes());
            put(b, 24, &m.taker_id.to_le_bytes());
            put(b, 32, &m.offer_id.to_le_bytes());
            put_side(b, 40, &m.give);
            put_side(b, 56, &m.want);
        }
    }
    Ok(len)
}

fn put_side(b: &mut [u8], at: usize, s: &TradeSide) {
    put(b, at, &s.gold.to_le_bytes());
    put(b, at + 8, &s.item_count.to_le_bytes());
    put(b, at + 12, &s.item_kind.to_le_bytes());
}

fn side_at(b: &[u8], at: usize) -> Result<TradeSide, DecodeError> {
    reserved(b, at + 14, at + 16)?;
    Ok(TradeSide { gold: i64_at(b, at), item_count: i32_at(b, at + 8), item_kind: u16_at(b, at + 12) })
}

fn write_list<T: WireRecord>(b: &mut [u8], base: usize, list: &WireList<'_, T>) {
    for (i, record) in list.iter().enumerate() {
        let start = base + i * T::SIZE;
        if let Some(slot) = b.get_mut(start..start + T::SIZE) {
            record.write(slot);
        }
    }
}

fn validate_list<T: WireRecord>(list: &WireList<'_, T>, field: &'static str, max: usize) -> Result<(), EncodeError> {
    if list.len() > max {
        return Err(EncodeError::TooLong { field, len: list.len(), max });
    }
    list.iter().try_for_each(|r| r.validate())
}

/// Refuses what [`decode`] would refuse, so that encode success implies decode success.
fn validate(message: &Message<'_>) -> Result<(), EncodeError> {
    match message {
        Message::JoinAccept(m) => {
            check_finite(m.spawn_x_m, "spawn_x_m")?;
            check_finite(m.spawn_y_m, "spawn_y_m")
        }
        Message::Move(m) => {
            check_finite(m.x_m, "x_m")?;
            check_finite(m.y_m, "y_m")?;
            check_finite(m.facing_rad, "facing_rad")
        }
        Message::MoveAck(m) => {
            validate_list(&m.contacts, "contacts", MOVE_ACK_CONTACTS_MAX)?;
            if m.result != MoveResult::Applied && !m.contacts.is_empty() {
                return Err(EncodeError::InvalidField("contact_count"));
            }
            Ok(())
        }
        Message::AoiSnapshot(m) => validate_list(&m.entries, "entries", AOI_ENTRIES_MAX),
        Message::RaidTrigger(m) => {
            check_finite(m.center_x_m, "center_x_m")?;
            check_finite(m.center_y_m, "center_y_m")?;
            check_finite(m.half_extent_m, "half_extent_m")?;
            if m.kind == EntityKind::Player {
                return Err(EncodeError::InvalidField("kind"));
            }
            Ok(())
        }
        Message::StatsReply(m) => {
            if m.text.len() > STATS_TEXT_MAX {
                return Err(EncodeError::TooLong { field: "text", len: m.text.len(), max: STATS_TEXT_MAX });
            }
            if !m.text.is_ascii() {
                return Err(EncodeError::InvalidField("text"));
            }
            Ok(())
        }
        _ => Ok(()),
    }
}

// ---------------------------------------------------------------------------------------------
// Decode
// ---------------------------------------------------------------------------------------------

/// Decodes one datagram of any message type (both directions), borrowing its lists and text.
/// Never panics; see the module docs for the order of checks. Accepts up to
/// [`STATS_REPLY_MAX`] bytes.
pub fn decode(buf: &[u8]) -> Result<Decoded<'_>, DecodeError> {
    decode_with(buf, STATS_REPLY_MAX, false)
}

/// Judges a datagram as the server does (validation steps 1 to 8): at most
/// [`CLIENT_DATAGRAM_MAX`] bytes and a client-to-server type, otherwise as [`decode`]. The
/// error's [`DecodeError::drop_reason`] is the counter the server should bump.
pub fn decode_client(buf: &[u8]) -> Result<Decoded<'_>, DecodeError> {
    decode_with(buf, CLIENT_DATAGRAM_MAX, true)
}

fn decode_with(buf: &[u8], max: usize, client_only: bool) -> Result<Decoded<'_>, DecodeError> {
    if buf.len() < HEADER_LEN {
        return Err(DecodeError::Truncated);
    }
    if buf.len() > max {
        return Err(DecodeError::Oversized);
    }
    let magic = u16_at(buf, 0);
    if magic != MAGIC {
        return Err(DecodeError::BadMagic(magic));
    }
    match u8_at(buf, 2) {
        VERSION => {}
        1..=OBSOLETE_VERSION => return Err(DecodeError::ObsoleteVersion),
        other => return Err(DecodeError::BadVersion(other)),
    }
    let type_byte = u8_at(buf, 3);
    let t =
        MessageType::from_u8(type_byte).filter(|t| !client_only || t.is_client_to_server()).ok_or(DecodeError::UnknownType(type_byte))?;
    if buf.len() < t.base_size() {
        return Err(DecodeError::Truncated);
    }
    let count = match t {
        MessageType::MoveAck => usize::from(u8_at(buf, 17)),
        MessageType::AoiSnapshot | MessageType::StatsReply => usize::from(u16_at(buf, 12)),
        _ => 0,
    };
    let size = t.base_size() + t.entry_size() * count;
    if buf.len() < size {
        return Err(DecodeError::Truncated);
    }
    if buf.len() != size || usize::from(u16_at(buf, 4)) != size {
        return Err(DecodeError::BadLength);
    }
    let flags = Flags::from_bits(u16_at(buf, 6)).ok_or(DecodeError::BadField("flags"))?;
    let message = decode_body(t, buf, count)?;
    Ok(Decoded { flags, message })
}

/// Reads the body of a datagram whose size is exactly right for `t` with `count` entries.
fn decode_body(t: MessageType, b: &[u8], count: usize) -> Result<Message<'_>, DecodeError> {
    Ok(match t {
        MessageType::JoinRequest => {
            reserved(b, 16, 64)?;
            Message::JoinRequest(JoinRequest { nonce: u64_at(b, 8) })
        }
        MessageType::JoinChallenge => {
            reserved(b, 20, 24)?;
            Message::JoinChallenge(JoinChallenge { nonce: u64_at(b, 8), period: u32_at(b, 16), cookie: u64_at(b, 24) })
        }
        MessageType::JoinConfirm => {
            reserved(b, 20, 24)?;
            Message::JoinConfirm(JoinConfirm {
                nonce: u64_at(b, 8),
                period: u32_at(b, 16),
                cookie: u64_at(b, 24),
                token: b[32..32 + CONNECT_TOKEN_SIZE].try_into().expect("the size was checked"),
            })
        }
        MessageType::JoinAccept => {
            reserved(b, 34, 36)?;
            reserved(b, 56, 64)?;
            Message::JoinAccept(JoinAccept {
                nonce: u64_at(b, 8),
                player_id: u64_at(b, 16),
                session_token: u64_at(b, 24),
                status: enum_at(b, 32, "status")?,
                faction: u8_at(b, 33),
                tick_ms: u32_at(b, 36),
                server_time_ms: u64_at(b, 40),
                spawn_x_m: finite_at(b, 48, "spawn_x_m")?,
                spawn_y_m: finite_at(b, 52, "spawn_y_m")?,
            })
        }
        MessageType::Move => {
            reserved(b, 44, 48)?;
            Message::Move(Move {
                player_id: u64_at(b, 8),
                session_token: u64_at(b, 16),
                sequence: u32_at(b, 24),
                client_time_ms: u32_at(b, 28),
                x_m: finite_at(b, 32, "x_m")?,
                y_m: finite_at(b, 36, "y_m")?,
                facing_rad: finite_at(b, 40, "facing_rad")?,
                payload: array_at(b, 48),
            })
        }
        MessageType::MoveAck => {
            reserved(b, 18, 20)?;
            let result: MoveResult = enum_at(b, 16, "result")?;
            if count > MOVE_ACK_CONTACTS_MAX || (result != MoveResult::Applied && count > 0) {
                return Err(DecodeError::BadField("contact_count"));
            }
            let contacts = WireList::from_wire(b.get(MOVE_ACK_BASE..).unwrap_or_default())?;
            Message::MoveAck(MoveAck { sequence: u32_at(b, 8), client_time_ms: u32_at(b, 12), result, contacts })
        }
        MessageType::AoiSnapshot => {
            reserved(b, 14, 16)?;
            if count > AOI_ENTRIES_MAX {
                return Err(DecodeError::BadField("count"));
            }
            let entries = WireList::from_wire(b.get(AOI_BASE..).unwrap_or_default())?;
            Message::AoiSnapshot(AoiSnapshot { tick: u32_at(b, 8), server_time_ms: u64_at(b, 16), entries })
        }
        MessageType::EconomyRequest => {
            reserved(b, 55, 56)?;
            Message::EconomyRequest(EconomyRequest {
                player_id: u64_at(b, 8),
                session_token: u64_at(b, 16),
                transaction_id: u64_at(b, 24),
                counterparty_id: u64_at(b, 32),
                gold: i64_at(b, 40),
                item_count: i32_at(b, 48),
                item_kind: u16_at(b, 52),
                kind: enum_at(b, 54, "kind")?,
            })
        }
        MessageType::EconomyResult => {
            reserved(b, 26, 32)?;
            let duplicate = match u8_at(b, 25) {
                0 => false,
                1 => true,
                _ => return Err(DecodeError::BadField("duplicate")),
            };
            Message::EconomyResult(EconomyResult {
                transaction_id: u64_at(b, 8),
                gold_balance: u64_at(b, 16),
                status: enum_at(b, 24, "status")?,
                duplicate,
            })
        }
        MessageType::Leave => {
            reserved(b, 28, 32)?;
            Message::Leave(Leave { player_id: u64_at(b, 8), session_token: u64_at(b, 16), sequence: u32_at(b, 24) })
        }
        MessageType::LeaveAck => Message::LeaveAck(LeaveAck { player_id: u64_at(b, 8) }),
        MessageType::Ping => {
            reserved(b, 16, 24)?;
            Message::Ping(Ping { client_time_us: u64_at(b, 8) })
        }
        MessageType::Pong => Message::Pong(Pong { client_time_us: u64_at(b, 8), server_time_ms: u64_at(b, 16) }),
        MessageType::RaidTrigger => {
            reserved(b, 50, 56)?;
            let kind: EntityKind = enum_at(b, 48, "kind")?;
            if kind == EntityKind::Player {
                return Err(DecodeError::BadField("kind"));
            }
            Message::RaidTrigger(RaidTrigger {
                admin_key: u64_at(b, 8),
                request_id: u32_at(b, 16),
                count: u32_at(b, 20),
                center_x_m: finite_at(b, 24, "center_x_m")?,
                center_y_m: finite_at(b, 28, "center_y_m")?,
                half_extent_m: finite_at(b, 32, "half_extent_m")?,
                lifetime_ms: u32_at(b, 36),
                hp: i32_at(b, 40),
                seed: u32_at(b, 44),
                kind,
                faction: u8_at(b, 49),
            })
        }
        MessageType::RaidResult => {
            reserved(b, 28, 32)?;
            Message::RaidResult(RaidResult {
                request_id: u32_at(b, 8),
                status: u32_at(b, 12),
                spawned: u32_at(b, 16),
                cells: u32_at(b, 20),
                expires_tick: u32_at(b, 24),
                spawn_ns: u64_at(b, 32),
            })
        }
        MessageType::StatsRequest => {
            reserved(b, 20, 24)?;
            Message::StatsRequest(StatsRequest { admin_key: u64_at(b, 8), request_id: u32_at(b, 16) })
        }
        MessageType::StatsReply => {
            reserved(b, 14, 16)?;
            let bytes = b.get(STATS_REPLY_BASE..).unwrap_or_default();
            // ASCII is UTF-8, so the conversion cannot fail once the check passed.
            let text = match std::str::from_utf8(bytes) {
                Ok(text) if text.is_ascii() => text,
                _ => return Err(DecodeError::BadField("text")),
            };
            Message::StatsReply(StatsReply { request_id: u32_at(b, 8), text })
        }
        MessageType::Attack => {
            reserved(b, 36, 40)?;
            Message::Attack(Attack {
                player_id: u64_at(b, 8),
                session_token: u64_at(b, 16),
                target_id: u64_at(b, 24),
                sequence: u32_at(b, 32),
            })
        }
        MessageType::AttackResult => {
            reserved(b, 15, 16)?;
            let killed = match u8_at(b, 13) {
                0 => false,
                1 => true,
                _ => return Err(DecodeError::BadField("killed")),
            };
            let target_kind = match u8_at(b, 14) {
                0 => None,
                _ => Some(enum_at(b, 14, "target_kind")?),
            };
            Message::AttackResult(AttackResult {
                sequence: u32_at(b, 8),
                refusal: enum_at(b, 12, "refusal")?,
                killed,
                target_kind,
                target_id: u64_at(b, 16),
                damage: i32_at(b, 24),
                hp_left: i32_at(b, 28),
            })
        }
        MessageType::KillNotice => {
            reserved(b, 25, 32)?;
            Message::KillNotice(KillNotice {
                killer_id: u64_at(b, 8),
                target_id: u64_at(b, 16),
                target_kind: enum_at(b, 24, "target_kind")?,
            })
        }
        MessageType::LootClaim => {
            Message::LootClaim(LootClaim { player_id: u64_at(b, 8), session_token: u64_at(b, 16), loot_id: u64_at(b, 24) })
        }
        MessageType::LootResult => {
            let repeat = match u8_at(b, 31) {
                0 => false,
                1 => true,
                _ => return Err(DecodeError::BadField("repeat")),
            };
            Message::LootResult(LootResult {
                loot_id: u64_at(b, 8),
                gold: u64_at(b, 16),
                item_count: u32_at(b, 24),
                item_kind: u16_at(b, 28),
                refusal: enum_at(b, 30, "refusal")?,
                repeat,
            })
        }
        MessageType::TradeOffer => Message::TradeOffer(TradeOffer {
            player_id: u64_at(b, 8),
            session_token: u64_at(b, 16),
            transaction_id: u64_at(b, 24),
            counterparty_id: u64_at(b, 32),
            give: side_at(b, 40)?,
            want: side_at(b, 56)?,
        }),
        MessageType::TradeAnswer => {
            reserved(b, 49, 56)?;
            let accept = match u8_at(b, 48) {
                0 => false,
                1 => true,
                _ => return Err(DecodeError::BadField("accept")),
            };
            Message::TradeAnswer(TradeAnswer {
                player_id: u64_at(b, 8),
                session_token: u64_at(b, 16),
                transaction_id: u64_at(b, 24),
                maker_id: u64_at(b, 32),
                offer_id: u64_at(b, 40),
                accept,
            })
        }
        MessageType::Grant => {
            Message::Grant(Grant { admin_key: u64_at(b, 8), player_id: u64_at(b, 16), grant_id: u64_at(b, 24), stack: side_at(b, 32)? })
        }
        MessageType::TradeNotice => {
            reserved(b, 9, 16)?;
            Message::TradeNotice(TradeNotice {
                event: enum_at(b, 8, "event")?,
                maker_id: u64_at(b, 16),
                taker_id: u64_at(b, 24),
                offer_id: u64_at(b, 32),
                give: side_at(b, 40)?,
                want: side_at(b, 56)?,
            })
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_type_byte_round_trips_and_sizes_match_the_table() {
        for t in MessageType::ALL {
            assert_eq!(MessageType::from_u8(t as u8), Some(t));
        }
        let sizes: Vec<(u8, usize)> = MessageType::ALL.iter().map(|t| (*t as u8, t.base_size())).collect();
        assert_eq!(
            sizes,
            [
                (0x01, 64),
                (0x02, 160),
                (0x03, 80),
                (0x04, 56),
                (0x05, 32),
                (0x06, 24),
                (0x07, 56),
                (0x08, 24),
                (0x09, 40),
                (0x0A, 32),
                (0x0B, 72),
                (0x0C, 56),
                (0x0D, 48),
                (0x81, 32),
                (0x82, 64),
                (0x83, 20),
                (0x84, 24),
                (0x85, 32),
                (0x86, 16),
                (0x87, 24),
                (0x88, 40),
                (0x89, 16),
                (0x8A, 32),
                (0x8B, 32),
                (0x8C, 32),
                (0x8D, 72)
            ]
        );
        assert!(MessageType::from_u8(0x00).is_none() && MessageType::from_u8(0x0E).is_none() && MessageType::from_u8(0x80).is_none());
    }

    #[test]
    fn flags_refuse_reserved_bits() {
        assert_eq!(Flags::from_bits(1), Some(Flags::RETRANSMIT));
        assert!(Flags::from_bits(2).is_none() && Flags::from_bits(0x8000).is_none());
        assert!(Flags::RETRANSMIT.is_retransmit() && !Flags::NONE.is_retransmit());
    }

    #[test]
    fn helpers_do_not_panic_out_of_range() {
        let b = [1u8, 2, 3];
        assert_eq!(u64_at(&b, 0), 0);
        assert_eq!(u64_at(&b, usize::MAX), 0);
        assert_eq!(u8_at(&b, 9), 0);
        let mut w = [0u8; 3];
        put(&mut w, usize::MAX, &[1, 2]);
        put(&mut w, 2, &[1, 2]);
        assert_eq!(w, [0, 0, 0]);
        assert!(!zeroed(&b, 2, 9));
    }

    #[test]
    fn encode_refuses_what_decode_refuses() {
        let mut out = [0u8; 128];
        let bad_move = Move {
            player_id: 1,
            session_token: 2,
            sequence: 3,
            client_time_ms: 4,
            x_m: f32::NAN,
            y_m: 0.0,
            facing_rad: 0.0,
            payload: [0; 32],
        };
        assert_eq!(encode(&bad_move.into(), Flags::NONE, &mut out), Err(EncodeError::InvalidField("x_m")));
        let contacts = [Contact { other_id: 1, distance_m: 1.0, kind: EntityKind::Player }];
        let refused_with_contacts =
            MoveAck { sequence: 1, client_time_ms: 1, result: MoveResult::TooFast, contacts: WireList::from_items(&contacts) };
        assert_eq!(encode(&refused_with_contacts.into(), Flags::NONE, &mut out), Err(EncodeError::InvalidField("contact_count")));
        let ok = Message::Move(Move { x_m: 1.0, ..bad_move });
        assert_eq!(encode(&ok, Flags::NONE, &mut out[..79]), Err(EncodeError::BufferTooSmall { needed: 80 }));
        assert_eq!(encode(&ok, Flags::NONE, &mut out), Ok(80));
    }
}
