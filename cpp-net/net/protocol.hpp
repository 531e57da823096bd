// protocol.hpp: the wire protocol v3 codec (docs/protocol.md), the server's side.
//
// Every decoder takes a borrowed byte span and either fills a plain struct or returns the
// reason it refused; nothing throws and nothing allocates. Every encoder writes into a
// caller-provided span and returns the bytes written, or 0 if the span is too small. The
// same layouts are encoded by the Rust codec in loadtest/src/protocol.rs; both are tested
// against docs/protocol-vectors-v3.txt.
#pragma once

#include <array>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>
#include <variant>

namespace mmo::wire {

static_assert(std::endian::native == std::endian::little,
              "the codec copies little-endian fields with memcpy; a big-endian port needs byte swaps");

inline constexpr uint16_t kMagic = 0x4F4D;  // the bytes "MO"
inline constexpr uint8_t kVersion = 3;
// Earlier versions (1 up to kVersion - 1): their datagrams are dropped as `obsolete_version`,
// counted apart from garbage, so an operator sees old clients.
inline constexpr uint8_t kObsoleteVersion = 2;  // the latest of them, for tests
inline constexpr size_t kConnectTokenSize = 128;
inline constexpr size_t kHeaderSize = 8;
inline constexpr uint16_t kFlagRetransmit = 0x0001;
inline constexpr uint16_t kKnownFlags = kFlagRetransmit;
// Largest datagram a client may send; anything longer is dropped `oversized`.
inline constexpr size_t kClientDatagramMax = 256;
// Largest reply other than STATS_REPLY (safe under any real path MTU).
inline constexpr size_t kReplyDatagramMax = 1304;
inline constexpr size_t kStatsReplyMax = 8192;
inline constexpr size_t kContactsMax = 32;
inline constexpr size_t kAoiEntriesMax = 64;
inline constexpr size_t kPayloadSize = 32;

enum class MsgType : uint8_t {
  JoinRequest = 0x01,
  JoinConfirm = 0x02,
  Move = 0x03,
  EconomyRequest = 0x04,
  Leave = 0x05,
  Ping = 0x06,
  RaidTrigger = 0x07,
  StatsRequest = 0x08,
  Attack = 0x09,
  LootClaim = 0x0A,
  TradeOffer = 0x0B,
  TradeAnswer = 0x0C,
  Grant = 0x0D,
  JoinChallenge = 0x81,
  JoinAccept = 0x82,
  MoveAck = 0x83,
  AoiSnapshot = 0x84,
  EconomyResult = 0x85,
  LeaveAck = 0x86,
  Pong = 0x87,
  RaidResult = 0x88,
  StatsReply = 0x89,
  AttackResult = 0x8A,
  KillNotice = 0x8B,
  LootResult = 0x8C,
  TradeNotice = 0x8D,
};

// Fixed sizes (for MOVE_ACK, AOI_SNAPSHOT and STATS_REPLY: the part before the list).
inline constexpr size_t kJoinRequestSize = 64;
inline constexpr size_t kJoinConfirmSize = 160;
inline constexpr size_t kMoveSize = 80;
inline constexpr size_t kEconomyRequestSize = 56;
inline constexpr size_t kLeaveSize = 32;
inline constexpr size_t kPingSize = 24;
inline constexpr size_t kRaidTriggerSize = 56;
inline constexpr size_t kStatsRequestSize = 24;
inline constexpr size_t kAttackSize = 40;
inline constexpr size_t kLootClaimSize = 32;
inline constexpr size_t kTradeOfferSize = 72;
inline constexpr size_t kTradeAnswerSize = 56;
inline constexpr size_t kGrantSize = 48;
inline constexpr size_t kJoinChallengeSize = 32;
inline constexpr size_t kJoinAcceptSize = 64;
inline constexpr size_t kMoveAckFixedSize = 20;
inline constexpr size_t kContactSize = 16;
inline constexpr size_t kAoiFixedSize = 24;
inline constexpr size_t kAoiEntrySize = 20;
inline constexpr size_t kEconomyResultSize = 32;
inline constexpr size_t kLeaveAckSize = 16;
inline constexpr size_t kPongSize = 24;
inline constexpr size_t kRaidResultSize = 40;
inline constexpr size_t kStatsReplyFixedSize = 16;
inline constexpr size_t kAttackResultSize = 32;
inline constexpr size_t kKillNoticeSize = 32;
inline constexpr size_t kLootResultSize = 32;
inline constexpr size_t kTradeNoticeSize = 72;

// No reply to an unauthenticated message is larger than the message (docs/protocol.md).
static_assert(kJoinChallengeSize <= kJoinRequestSize && kJoinAcceptSize <= kJoinConfirmSize && kPongSize <= kPingSize);
static_assert(kAttackResultSize <= kAttackSize && kLootResultSize <= kLootClaimSize);
static_assert(kEconomyResultSize <= kTradeAnswerSize && kEconomyResultSize <= kGrantSize && kTradeNoticeSize <= kTradeOfferSize);
static_assert(kAoiFixedSize + kAoiEntriesMax * kAoiEntrySize <= kReplyDatagramMax);
static_assert(kMoveAckFixedSize + kContactsMax * kContactSize <= kReplyDatagramMax);

// Why a datagram failed to decode: steps 1-8 of the documented validation order.
enum class DecodeError : uint8_t {
  Ok = 0,
  Truncated,    // shorter than a header, or than its type's size
  Oversized,    // longer than kClientDatagramMax (client messages)
  BadMagic,
  BadVersion,       // neither this version nor the previous one
  ObsoleteVersion,  // an earlier version (1 up to kVersion - 1)
  UnknownType,  // not a type of the expected direction
  BadLength,    // `length` is not the datagram's size, or the size is not the type's
  BadField,     // non-zero reserved bytes or flags, a non-finite float, an enum out of range
};

struct JoinRequest {
  uint64_t nonce = 0;
  bool operator==(const JoinRequest&) const = default;
};
// The token's bytes are opaque here: net/connect_token.hpp reads and verifies them after the
// cookie (a malformed token is a refusal the client is told, not a drop).
struct JoinConfirm {
  uint64_t nonce = 0;
  uint32_t period = 0;
  uint64_t cookie = 0;
  std::array<uint8_t, kConnectTokenSize> token{};
  bool operator==(const JoinConfirm&) const = default;
};
struct Move {
  uint64_t player_id = 0;
  uint64_t session_token = 0;
  uint32_t sequence = 0;
  uint32_t client_time_ms = 0;
  float x_m = 0;
  float y_m = 0;
  float facing_rad = 0;
  std::array<uint8_t, kPayloadSize> payload{};
  bool operator==(const Move&) const = default;
};
struct EconomyRequest {
  uint64_t player_id = 0;
  uint64_t session_token = 0;
  uint64_t transaction_id = 0;
  uint64_t counterparty_id = 0;
  int64_t gold = 0;
  int32_t item_count = 0;
  uint16_t item_kind = 0;
  uint8_t kind = 0;  // 1 transfer, 2 trade, 3 loot pickup, 4 spend
  bool operator==(const EconomyRequest&) const = default;
};
struct Leave {
  uint64_t player_id = 0;
  uint64_t session_token = 0;
  uint32_t sequence = 0;
  bool operator==(const Leave&) const = default;
};
struct Ping {
  uint64_t client_time_us = 0;
  bool operator==(const Ping&) const = default;
};
struct RaidTrigger {
  uint64_t admin_key = 0;
  uint32_t request_id = 0;
  uint32_t count = 0;
  float center_x_m = 0;
  float center_y_m = 0;
  float half_extent_m = 0;
  uint32_t lifetime_ms = 0;
  int32_t hp = 0;
  uint32_t seed = 0;
  uint8_t kind = 0;  // 2 add, 3 projectile, 4 loot
  uint8_t faction = 0;
  bool operator==(const RaidTrigger&) const = default;
};
struct StatsRequest {
  uint64_t admin_key = 0;
  uint32_t request_id = 0;
  bool operator==(const StatsRequest&) const = default;
};

// A player's attack; the server decides whether it lands and what it takes. `sequence` is the
// session's, shared with MOVE and LEAVE (one replay window covers them all).
struct Attack {
  uint64_t player_id = 0;
  uint64_t session_token = 0;
  uint64_t target_id = 0;
  uint32_t sequence = 0;
  bool operator==(const Attack&) const = default;
};

// A claim of the loot a killed add dropped (`loot_id`: the add's id). No sequence: a claim is
// idempotent (the server answers a repeat with the same contents and credits nothing), so a
// client retransmits one whose answer it lost.
struct LootClaim {
  uint64_t player_id = 0;
  uint64_t session_token = 0;
  uint64_t loot_id = 0;
  bool operator==(const LootClaim&) const = default;
};

// One side of a trade offer: gold and one stack of items.
struct TradeSide {
  int64_t gold = 0;
  int32_t item_count = 0;
  uint16_t item_kind = 0;
  bool operator==(const TradeSide&) const = default;
};
// A trade offer: `give` (into escrow) for `want`, to `counterparty_id`. Reliable like
// ECONOMY_REQUEST (resent with the same transaction id until its ECONOMY_RESULT); the offer's
// id is its transaction id.
struct TradeOffer {
  uint64_t player_id = 0;
  uint64_t session_token = 0;
  uint64_t transaction_id = 0;
  uint64_t counterparty_id = 0;
  TradeSide give;
  TradeSide want;
  bool operator==(const TradeOffer&) const = default;
};
// An answer to maker_id's offer offer_id: accept 1 or decline 0 (the maker: cancel).
struct TradeAnswer {
  uint64_t player_id = 0;
  uint64_t session_token = 0;
  uint64_t transaction_id = 0;
  uint64_t maker_id = 0;
  uint64_t offer_id = 0;
  uint8_t accept = 0;
  bool operator==(const TradeAnswer&) const = default;
};
// An admin grant: the one source of value besides starting gold and loot.
struct Grant {
  uint64_t admin_key = 0;
  uint64_t player_id = 0;
  uint64_t grant_id = 0;  // increasing per player; answered in ECONOMY_RESULT.transaction_id
  TradeSide stack;
  bool operator==(const Grant&) const = default;
};

struct JoinChallenge {
  uint64_t nonce = 0;
  uint32_t period = 0;
  uint64_t cookie = 0;
  bool operator==(const JoinChallenge&) const = default;
};
// HostFull: the joining source's IP address already holds max_sessions_per_host sessions.
// TryLater: the server admits at most --join-rate joins a second, all hosts together, or its
// table of used token ids has no room; this confirm found none left (resend it later).
// SpawnRefused: the engine refused the server's own spawn point (a configuration error).
// Token*: the connect token was refused (docs/protocol.md, "Connect tokens").
// AccountLiveElsewhere: the token's account has a live session from another address.
// TokenUsed: the token already admitted a session (one session per token).
enum class JoinStatus : uint8_t {
  Joined = 0,
  ServerFull = 1,
  SpawnRefused = 2,
  HostFull = 3,
  TryLater = 4,
  TokenMalformed = 5,
  TokenBadSignature = 6,
  TokenExpired = 7,
  TokenWrongServer = 8,
  AccountLiveElsewhere = 9,
  TokenUsed = 10,
};
inline constexpr uint8_t kJoinStatusMax = 10;
// The server picks where a player appears and on which side: the accept says where.
struct JoinAccept {
  uint64_t nonce = 0;
  uint64_t player_id = 0;
  uint64_t session_token = 0;
  JoinStatus status = JoinStatus::Joined;
  uint8_t faction = 0;
  uint32_t tick_ms = 0;
  uint64_t server_time_ms = 0;
  float spawn_x_m = 0;
  float spawn_y_m = 0;
  bool operator==(const JoinAccept&) const = default;
};
struct Contact {
  uint64_t other_id = 0;
  float distance_m = 0;
  uint8_t kind = 0;
  bool operator==(const Contact&) const = default;
};
struct MoveAck {
  uint32_t sequence = 0;
  uint32_t client_time_ms = 0;
  uint8_t result = 0;  // 0 applied, else an MmoRejectReason
  uint8_t contact_count = 0;
  std::array<Contact, kContactsMax> contacts{};
  bool operator==(const MoveAck&) const = default;
};
struct AoiEntry {
  uint64_t entity_id = 0;
  float x_m = 0;
  float y_m = 0;
  uint8_t kind = 0;
  bool operator==(const AoiEntry&) const = default;
};
struct AoiSnapshot {
  uint32_t tick = 0;
  uint16_t count = 0;
  uint64_t server_time_ms = 0;
  std::array<AoiEntry, kAoiEntriesMax> entries{};
  bool operator==(const AoiSnapshot&) const = default;
};
struct EconomyResult {
  uint64_t transaction_id = 0;
  uint64_t gold_balance = 0;
  uint8_t status = 0;
  uint8_t duplicate = 0;
  bool operator==(const EconomyResult&) const = default;
};
// The server's enum bytes the decoder holds replies to (the engine's values, mmo_core.h).
inline constexpr uint8_t kMoveResultMax = 6;      // 0 applied, 1..6 MmoRejectReason (6 dead)
inline constexpr uint8_t kEntityKindMin = 1;      // MmoEntityKind: 1 player .. 4 loot
inline constexpr uint8_t kEntityKindMax = 4;
inline constexpr uint8_t kEconomyStatusMax = 18;  // 0 applied, 1..18 MmoEconomyStatus
struct LeaveAck {
  uint64_t player_id = 0;
  bool operator==(const LeaveAck&) const = default;
};
struct Pong {
  uint64_t client_time_us = 0;
  uint64_t server_time_ms = 0;
  bool operator==(const Pong&) const = default;
};
struct RaidResult {
  uint32_t request_id = 0;
  uint32_t status = 0;
  uint32_t spawned = 0;
  uint32_t cells = 0;
  uint32_t expires_tick = 0;
  uint64_t spawn_ns = 0;
  bool operator==(const RaidResult&) const = default;
};
struct AttackResult {
  uint32_t sequence = 0;  // the attack's (echo)
  uint8_t refusal = 0;    // 0 landed, else an MmoAttackError (1..8)
  uint8_t killed = 0;     // 1 when this attack brought the target to zero
  uint8_t target_kind = 0;
  uint64_t target_id = 0;  // echo
  int32_t damage = 0;
  int32_t hp_left = 0;
  bool operator==(const AttackResult&) const = default;
};
inline constexpr uint8_t kAttackRefusalMax = 8;
// A kill, told to the players in the killer's area of interest (the killer learns of it from
// its ATTACK_RESULT).
struct KillNotice {
  uint64_t killer_id = 0;
  uint64_t target_id = 0;
  uint8_t target_kind = 0;
  bool operator==(const KillNotice&) const = default;
};
// What a claim got: the loot's contents (the server's roll) when refusal is 0, credited now or,
// when repeat is 1, by an earlier claim of the same player.
struct LootResult {
  uint64_t loot_id = 0;  // echo
  uint64_t gold = 0;
  uint32_t item_count = 0;
  uint16_t item_kind = 0;
  uint8_t refusal = 0;  // 0 claimed, else an MmoLootError (1..9)
  uint8_t repeat = 0;
  bool operator==(const LootResult&) const = default;
};
inline constexpr uint8_t kLootRefusalMax = 9;  // MmoLootError: 1..9 (8 storage busy, 9 dead)
// News of a trade offer: `Offered` to its taker (with the terms), `Accepted` or `Declined` to
// its maker.
enum class TradeEvent : uint8_t { Offered = 1, Accepted = 2, Declined = 3 };
struct TradeNotice {
  TradeEvent event = TradeEvent::Offered;
  uint64_t maker_id = 0;
  uint64_t taker_id = 0;
  uint64_t offer_id = 0;
  TradeSide give;
  TradeSide want;
  bool operator==(const TradeNotice&) const = default;
};
// The text is borrowed from the decoded datagram (or, to encode, from the caller).
struct StatsReply {
  uint32_t request_id = 0;
  std::string_view text;
  bool operator==(const StatsReply&) const = default;
};

using ClientMessage = std::variant<JoinRequest, JoinConfirm, Move, EconomyRequest, Leave, Ping, RaidTrigger, StatsRequest, Attack,
                                   LootClaim, TradeOffer, TradeAnswer, Grant>;
using ServerMessage = std::variant<JoinChallenge, JoinAccept, MoveAck, AoiSnapshot, EconomyResult, LeaveAck, Pong, RaidResult,
                                   StatsReply, AttackResult, KillNotice, LootResult, TradeNotice>;

// A decoded message and the header flags it carried.
template <typename Message>
struct Decoded {
  Message message;
  uint16_t flags = 0;
};

// Decodes a datagram a client sent, checking steps 1-8 of the validation order in order.
DecodeError decode_client(std::span<const uint8_t> datagram, Decoded<ClientMessage>& out);
// Decodes a datagram the server sent (clients and tests). Server replies may be up to
// kStatsReplyMax bytes.
DecodeError decode_server(std::span<const uint8_t> datagram, Decoded<ServerMessage>& out);

// Encoders: write the whole datagram (header included) into `out`; return its size, or 0
// if `out` is too small or a count field is above its maximum.
size_t encode(const JoinRequest& m, std::span<uint8_t> out, uint16_t flags = 0);
size_t encode(const JoinConfirm& m, std::span<uint8_t> out, uint16_t flags = 0);
size_t encode(const Move& m, std::span<uint8_t> out, uint16_t flags = 0);
size_t encode(const EconomyRequest& m, std::span<uint8_t> out, uint16_t flags = 0);
size_t encode(const Leave& m, std::span<uint8_t> out, uint16_t flags = 0);
size_t encode(const Ping& m, std::span<uint8_t> out, uint16_t flags = 0);
size_t encode(const RaidTrigger& m, std::span<uint8_t> out, uint16_t flags = 0);
size_t encode(const StatsRequest& m, std::span<uint8_t> out, uint16_t flags = 0);
size_t encode(const Attack& m, std::span<uint8_t> out, uint16_t flags = 0);
size_t encode(const LootClaim& m, std::span<uint8_t> out, uint16_t flags = 0);
size_t encode(const TradeOffer& m, std::span<uint8_t> out, uint16_t flags = 0);
size_t encode(const TradeAnswer& m, std::span<uint8_t> out, uint16_t flags = 0);
size_t encode(const Grant& m, std::span<uint8_t> out, uint16_t flags = 0);
size_t encode(const JoinChallenge& m, std::span<uint8_t> out, uint16_t flags = 0);
size_t encode(const JoinAccept& m, std::span<uint8_t> out, uint16_t flags = 0);
size_t encode(const MoveAck& m, std::span<uint8_t> out, uint16_t flags = 0);
size_t encode(const AoiSnapshot& m, std::span<uint8_t> out, uint16_t flags = 0);
size_t encode(const EconomyResult& m, std::span<uint8_t> out, uint16_t flags = 0);
size_t encode(const LeaveAck& m, std::span<uint8_t> out, uint16_t flags = 0);
size_t encode(const Pong& m, std::span<uint8_t> out, uint16_t flags = 0);
size_t encode(const RaidResult& m, std::span<uint8_t> out, uint16_t flags = 0);
size_t encode(const StatsReply& m, std::span<uint8_t> out, uint16_t flags = 0);
size_t encode(const AttackResult& m, std::span<uint8_t> out, uint16_t flags = 0);
size_t encode(const KillNotice& m, std::span<uint8_t> out, uint16_t flags = 0);
size_t encode(const LootResult& m, std::span<uint8_t> out, uint16_t flags = 0);
size_t encode(const TradeNotice& m, std::span<uint8_t> out, uint16_t flags = 0);

const char* decode_error_name(DecodeError error);

}  // namespace mmo::wire
