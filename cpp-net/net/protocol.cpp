// protocol.cpp: see protocol.hpp. Layouts: docs/protocol.md.
#include "net/protocol.hpp"

#include <cmath>
#include <cstring>

namespace mmo::wire {
namespace {

// Writes little-endian fields at increasing offsets. Callers check the total size first, so
// every put stays in bounds; the assertion-free design keeps the hot path branch-light.
class Writer {
 public:
  explicit Writer(std::span<uint8_t> out) : out_(out) {}
  template <typename T>
  void put(T value) {
    std::memcpy(out_.data() + pos_, &value, sizeof(T));
    pos_ += sizeof(T);
  }
  void zeros(size_t n) {
    std::memset(out_.data() + pos_, 0, n);
    pos_ += n;
  }
  void bytes(const uint8_t* data, size_t n) {
    if (n > 0) std::memcpy(out_.data() + pos_, data, n);
    pos_ += n;
  }
  size_t pos() const { return pos_; }

 private:
  std::span<uint8_t> out_;
  size_t pos_ = 0;
};

// Reads little-endian fields; records whether any reserved byte was non-zero or any float
// non-finite. Callers check the size first; reads past the end return zero regardless.
class Reader {
 public:
  explicit Reader(std::span<const uint8_t> in, size_t pos) : in_(in), pos_(pos) {}
  template <typename T>
  T get() {
    T value{};
    if (pos_ + sizeof(T) <= in_.size()) std::memcpy(&value, in_.data() + pos_, sizeof(T));
    pos_ += sizeof(T);
    return value;
  }
  float finite() {
    float v = get<float>();
    if (!std::isfinite(v)) bad_ = true;
    return v;
  }
  void reserved(size_t n) {
    for (size_t i = 0; i < n && pos_ + i < in_.size(); ++i) {
      if (in_[pos_ + i] != 0) bad_ = true;
    }
    pos_ += n;
  }
  void copy(uint8_t* dst, size_t n) {
    if (pos_ + n <= in_.size()) std::memcpy(dst, in_.data() + pos_, n);
    pos_ += n;
  }
  const uint8_t* here() const { return in_.data() + pos_; }
  void fail() { bad_ = true; }
  bool bad() const { return bad_; }

 private:
  std::span<const uint8_t> in_;
  size_t pos_;
  bool bad_ = false;
};

// A trade side on the wire: gold i64, item_count i32, item_kind u16, 2 reserved (16 bytes).
TradeSide read_side(Reader& r) {
  TradeSide s;
  s.gold = r.get<int64_t>();
  s.item_count = r.get<int32_t>();
  s.item_kind = r.get<uint16_t>();
  r.reserved(2);
  return s;
}
void write_side(Writer& w, const TradeSide& s) {
  w.put(s.gold);
  w.put(s.item_count);
  w.put(s.item_kind);
  w.zeros(2);
}

size_t begin(std::span<uint8_t> out, MsgType type, size_t size, uint16_t flags, Writer& w) {
  if (out.size() < size || size > UINT16_MAX) return 0;
  w.put<uint16_t>(kMagic);
  w.put<uint8_t>(kVersion);
  w.put<uint8_t>(static_cast<uint8_t>(type));
  w.put<uint16_t>(static_cast<uint16_t>(size));
  w.put<uint16_t>(flags);
  return size;
}

size_t client_size(uint8_t type) {
  switch (static_cast<MsgType>(type)) {
    case MsgType::JoinRequest: return kJoinRequestSize;
    case MsgType::JoinConfirm: return kJoinConfirmSize;
    case MsgType::Move: return kMoveSize;
    case MsgType::EconomyRequest: return kEconomyRequestSize;
    case MsgType::Leave: return kLeaveSize;
    case MsgType::Ping: return kPingSize;
    case MsgType::RaidTrigger: return kRaidTriggerSize;
    case MsgType::StatsRequest: return kStatsRequestSize;
    case MsgType::Attack: return kAttackSize;
    case MsgType::LootClaim: return kLootClaimSize;
    case MsgType::TradeOffer: return kTradeOfferSize;
    case MsgType::TradeAnswer: return kTradeAnswerSize;
    case MsgType::Grant: return kGrantSize;
    default: return 0;
  }
}

// The fixed part of a server message (the whole size for fixed-size ones), 0 if unknown.
size_t server_fixed_size(uint8_t type) {
  switch (static_cast<MsgType>(type)) {
    case MsgType::JoinChallenge: return kJoinChallengeSize;
    case MsgType::JoinAccept: return kJoinAcceptSize;
    case MsgType::MoveAck: return kMoveAckFixedSize;
    case MsgType::AoiSnapshot: return kAoiFixedSize;
    case MsgType::EconomyResult: return kEconomyResultSize;
    case MsgType::LeaveAck: return kLeaveAckSize;
    case MsgType::Pong: return kPongSize;
    case MsgType::RaidResult: return kRaidResultSize;
    case MsgType::StatsReply: return kStatsReplyFixedSize;
    case MsgType::AttackResult: return kAttackResultSize;
    case MsgType::KillNotice: return kKillNoticeSize;
    case MsgType::LootResult: return kLootResultSize;
    case MsgType::TradeNotice: return kTradeNoticeSize;
    default: return 0;
  }
}

// Steps 1, 3, 4 and the header read, shared by both directions.
DecodeError check_header(std::span<const uint8_t> d, size_t max_size, uint8_t& type, uint16_t& length, uint16_t& flags) {
  if (d.size() < kHeaderSize) return DecodeError::Truncated;
  if (d.size() > max_size) return DecodeError::Oversized;
  Reader r(d, 0);
  if (r.get<uint16_t>() != kMagic) return DecodeError::BadMagic;
  if (const uint8_t version = r.get<uint8_t>(); version != kVersion) {
    return version >= 1 && version < kVersion ? DecodeError::ObsoleteVersion : DecodeError::BadVersion;
  }
  type = r.get<uint8_t>();
  length = r.get<uint16_t>();
  flags = r.get<uint16_t>();
  return DecodeError::Ok;
}

// Steps 6 and 7 for a message whose whole size is `expected`.
DecodeError check_size(std::span<const uint8_t> d, size_t expected, uint16_t length) {
  if (d.size() < expected) return DecodeError::Truncated;
  if (d.size() != expected || length != d.size()) return DecodeError::BadLength;
  return DecodeError::Ok;
}

}  // namespace

DecodeError decode_client(std::span<const uint8_t> d, Decoded<ClientMessage>& out) {
  uint8_t type = 0;
  uint16_t length = 0;
  uint16_t flags = 0;
  if (auto e = check_header(d, kClientDatagramMax, type, length, flags); e != DecodeError::Ok) return e;
  const size_t size = client_size(type);
  if (size == 0) return DecodeError::UnknownType;
  if (auto e = check_size(d, size, length); e != DecodeError::Ok) return e;
  Reader r(d, kHeaderSize);
  if ((flags & ~kKnownFlags) != 0) r.fail();
  switch (static_cast<MsgType>(type)) {
    case MsgType::JoinRequest: {
      JoinRequest m;
      m.nonce = r.get<uint64_t>();
      r.reserved(48);
      out.message = m;
      break;
    }
    case MsgType::JoinConfirm: {
      JoinConfirm m;
      m.nonce = r.get<uint64_t>();
      m.period = r.get<uint32_t>();
      r.reserved(4);
      m.cookie = r.get<uint64_t>();
      r.copy(m.token.data(), m.token.size());
      out.message = m;
      break;
    }
    case MsgType::Move: {
      Move m;
      m.player_id = r.get<uint64_t>();
      m.session_token = r.get<uint64_t>();
      m.sequence = r.get<uint32_t>();
      m.client_time_ms = r.get<uint32_t>();
      m.x_m = r.finite();
      m.y_m = r.finite();
      m.facing_rad = r.finite();
      r.reserved(4);
      r.copy(m.payload.data(), kPayloadSize);
      out.message = m;
      break;
    }
    case MsgType::EconomyRequest: {
      EconomyRequest m;
      m.player_id = r.get<uint64_t>();
      m.session_token = r.get<uint64_t>();
      m.transaction_id = r.get<uint64_t>();
      m.counterparty_id = r.get<uint64_t>();
      m.gold = r.get<int64_t>();
      m.item_count = r.get<int32_t>();
      m.item_kind = r.get<uint16_t>();
      m.kind = r.get<uint8_t>();
      r.reserved(1);
      if (m.kind < 1 || m.kind > 4) r.fail();
      out.message = m;
      break;
    }
    case MsgType::Leave: {
      Leave m;
      m.player_id = r.get<uint64_t>();
      m.session_token = r.get<uint64_t>();
      m.sequence = r.get<uint32_t>();
      r.reserved(4);
      out.message = m;
      break;
    }
    case MsgType::Ping: {
      Ping m;
      m.client_time_us = r.get<uint64_t>();
      r.reserved(8);
      out.message = m;
      break;
    }
    case MsgType::RaidTrigger: {
      RaidTrigger m;
      m.admin_key = r.get<uint64_t>();
      m.request_id = r.get<uint32_t>();
      m.count = r.get<uint32_t>();
      m.center_x_m = r.finite();
      m.center_y_m = r.finite();
      m.half_extent_m = r.finite();
      m.lifetime_ms = r.get<uint32_t>();
      m.hp = r.get<int32_t>();
      m.seed = r.get<uint32_t>();
      m.kind = r.get<uint8_t>();
      m.faction = r.get<uint8_t>();
      r.reserved(6);
      if (m.kind < 2 || m.kind > 4) r.fail();
      out.message = m;
      break;
    }
    case MsgType::StatsRequest: {
      StatsRequest m;
      m.admin_key = r.get<uint64_t>();
      m.request_id = r.get<uint32_t>();
      r.reserved(4);
      out.message = m;
      break;
    }
    case MsgType::Attack: {
      Attack m;
      m.player_id = r.get<uint64_t>();
      m.session_token = r.get<uint64_t>();
      m.target_id = r.get<uint64_t>();
      m.sequence = r.get<uint32_t>();
      r.reserved(4);
      out.message = m;
      break;
    }
    case MsgType::LootClaim: {
      LootClaim m;
      m.player_id = r.get<uint64_t>();
      m.session_token = r.get<uint64_t>();
      m.loot_id = r.get<uint64_t>();
      out.message = m;
      break;
    }
    case MsgType::TradeOffer: {
      TradeOffer m;
      m.player_id = r.get<uint64_t>();
      m.session_token = r.get<uint64_t>();
      m.transaction_id = r.get<uint64_t>();
      m.counterparty_id = r.get<uint64_t>();
      m.give = read_side(r);
      m.want = read_side(r);
      out.message = m;
      break;
    }
    case MsgType::TradeAnswer: {
      TradeAnswer m;
      m.player_id = r.get<uint64_t>();
      m.session_token = r.get<uint64_t>();
      m.transaction_id = r.get<uint64_t>();
      m.maker_id = r.get<uint64_t>();
      m.offer_id = r.get<uint64_t>();
      m.accept = r.get<uint8_t>();
      r.reserved(7);
      if (m.accept > 1) r.fail();
      out.message = m;
      break;
    }
    case MsgType::Grant: {
      Grant m;
      m.admin_key = r.get<uint64_t>();
      m.player_id = r.get<uint64_t>();
      m.grant_id = r.get<uint64_t>();
      m.stack = read_side(r);
      out.message = m;
      break;
    }
    default:
      return DecodeError::UnknownType;
  }
  if (r.bad()) return DecodeError::BadField;
  out.flags = flags;
  return DecodeError::Ok;
}

DecodeError decode_server(std::span<const uint8_t> d, Decoded<ServerMessage>& out) {
  uint8_t type = 0;
  uint16_t length = 0;
  uint16_t flags = 0;
  if (auto e = check_header(d, kStatsReplyMax, type, length, flags); e != DecodeError::Ok) return e;
  const size_t fixed = server_fixed_size(type);
  if (fixed == 0) return DecodeError::UnknownType;
  if (d.size() < fixed) return DecodeError::Truncated;
  // The variable part's count sits in the fixed part.
  size_t expected = fixed;
  if (type == static_cast<uint8_t>(MsgType::MoveAck)) {
    const size_t count = d[17];
    if (count > kContactsMax) return DecodeError::BadField;
    expected += count * kContactSize;
  } else if (type == static_cast<uint8_t>(MsgType::AoiSnapshot)) {
    const size_t count = static_cast<size_t>(d[12]) | (static_cast<size_t>(d[13]) << 8);
    if (count > kAoiEntriesMax) return DecodeError::BadField;
    expected += count * kAoiEntrySize;
  } else if (type == static_cast<uint8_t>(MsgType::StatsReply)) {
    expected += static_cast<size_t>(d[12]) | (static_cast<size_t>(d[13]) << 8);
  }
  if (auto e = check_size(d, expected, length); e != DecodeError::Ok) return e;
  Reader r(d, kHeaderSize);
  if ((flags & ~kKnownFlags) != 0) r.fail();
  switch (static_cast<MsgType>(type)) {
    case MsgType::JoinChallenge: {
      JoinChallenge m;
      m.nonce = r.get<uint64_t>();
      m.period = r.get<uint32_t>();
      r.reserved(4);
      m.cookie = r.get<uint64_t>();
      out.message = m;
      break;
    }
    case MsgType::JoinAccept: {
      JoinAccept m;
      m.nonce = r.get<uint64_t>();
      m.player_id = r.get<uint64_t>();
      m.session_token = r.get<uint64_t>();
      const uint8_t status = r.get<uint8_t>();
      if (status > kJoinStatusMax) r.fail();
      m.status = static_cast<JoinStatus>(status);
      m.faction = r.get<uint8_t>();
      r.reserved(2);
      m.tick_ms = r.get<uint32_t>();
      m.server_time_ms = r.get<uint64_t>();
      m.spawn_x_m = r.finite();
      m.spawn_y_m = r.finite();
      r.reserved(8);
      out.message = m;
      break;
    }
    case MsgType::MoveAck: {
      MoveAck m;
      m.sequence = r.get<uint32_t>();
      m.client_time_ms = r.get<uint32_t>();
      m.result = r.get<uint8_t>();
      m.contact_count = r.get<uint8_t>();
      // A refused move has no contacts.
      if (m.result > kMoveResultMax || (m.result != 0 && m.contact_count != 0)) r.fail();
      r.reserved(2);
      for (size_t i = 0; i < m.contact_count; ++i) {
        m.contacts[i].other_id = r.get<uint64_t>();
        m.contacts[i].distance_m = r.finite();
        m.contacts[i].kind = r.get<uint8_t>();
        if (m.contacts[i].kind < kEntityKindMin || m.contacts[i].kind > kEntityKindMax) r.fail();
        r.reserved(3);
      }
      out.message = m;
      break;
    }
    case MsgType::AoiSnapshot: {
      AoiSnapshot m;
      m.tick = r.get<uint32_t>();
      m.count = r.get<uint16_t>();
      r.reserved(2);
      m.server_time_ms = r.get<uint64_t>();
      for (size_t i = 0; i < m.count; ++i) {
        m.entries[i].entity_id = r.get<uint64_t>();
        m.entries[i].x_m = r.finite();
        m.entries[i].y_m = r.finite();
        m.entries[i].kind = r.get<uint8_t>();
        if (m.entries[i].kind < kEntityKindMin || m.entries[i].kind > kEntityKindMax) r.fail();
        r.reserved(3);
      }
      out.message = m;
      break;
    }
    case MsgType::EconomyResult: {
      EconomyResult m;
      m.transaction_id = r.get<uint64_t>();
      m.gold_balance = r.get<uint64_t>();
      m.status = r.get<uint8_t>();
      m.duplicate = r.get<uint8_t>();
      if (m.status > kEconomyStatusMax || m.duplicate > 1) r.fail();
      r.reserved(6);
      out.message = m;
      break;
    }
    case MsgType::LeaveAck: {
      LeaveAck m;
      m.player_id = r.get<uint64_t>();
      out.message = m;
      break;
    }
    case MsgType::Pong: {
      Pong m;
      m.client_time_us = r.get<uint64_t>();
      m.server_time_ms = r.get<uint64_t>();
      out.message = m;
      break;
    }
    case MsgType::RaidResult: {
      RaidResult m;
      m.request_id = r.get<uint32_t>();
      m.status = r.get<uint32_t>();
      m.spawned = r.get<uint32_t>();
      m.cells = r.get<uint32_t>();
      m.expires_tick = r.get<uint32_t>();
      r.reserved(4);
      m.spawn_ns = r.get<uint64_t>();
      out.message = m;
      break;
    }
    case MsgType::StatsReply: {
      StatsReply m;
      m.request_id = r.get<uint32_t>();
      const uint16_t text_len = r.get<uint16_t>();
      r.reserved(2);
      m.text = std::string_view(reinterpret_cast<const char*>(r.here()), text_len);
      out.message = m;
      break;
    }
    case MsgType::AttackResult: {
      AttackResult m;
      m.sequence = r.get<uint32_t>();
      m.refusal = r.get<uint8_t>();
      m.killed = r.get<uint8_t>();
      m.target_kind = r.get<uint8_t>();
      r.reserved(1);
      m.target_id = r.get<uint64_t>();
      m.damage = r.get<int32_t>();
      m.hp_left = r.get<int32_t>();
      if (m.refusal > kAttackRefusalMax || m.killed > 1 || m.target_kind > kEntityKindMax) r.fail();
      out.message = m;
      break;
    }
    case MsgType::LootResult: {
      LootResult m;
      m.loot_id = r.get<uint64_t>();
      m.gold = r.get<uint64_t>();
      m.item_count = r.get<uint32_t>();
      m.item_kind = r.get<uint16_t>();
      m.refusal = r.get<uint8_t>();
      m.repeat = r.get<uint8_t>();
      if (m.refusal > kLootRefusalMax || m.repeat > 1) r.fail();
      out.message = m;
      break;
    }
    case MsgType::TradeNotice: {
      TradeNotice m;
      const uint8_t event = r.get<uint8_t>();
      r.reserved(7);
      m.event = static_cast<TradeEvent>(event);
      m.maker_id = r.get<uint64_t>();
      m.taker_id = r.get<uint64_t>();
      m.offer_id = r.get<uint64_t>();
      m.give = read_side(r);
      m.want = read_side(r);
      if (event < 1 || event > 3) r.fail();
      out.message = m;
      break;
    }
    case MsgType::KillNotice: {
      KillNotice m;
      m.killer_id = r.get<uint64_t>();
      m.target_id = r.get<uint64_t>();
      m.target_kind = r.get<uint8_t>();
      r.reserved(7);
      if (m.target_kind < 1 || m.target_kind > 4) r.fail();
      out.message = m;
      break;
    }
    default:
      return DecodeError::UnknownType;
  }
  if (r.bad()) return DecodeError::BadField;
  out.flags = flags;
  return DecodeError::Ok;
}

size_t encode(const JoinRequest& m, std::span<uint8_t> out, uint16_t flags) {
  Writer w(out);
  if (begin(out, MsgType::JoinRequest, kJoinRequestSize, flags, w) == 0) return 0;
  w.put(m.nonce);
  w.zeros(48);
  return w.pos();
}

size_t encode(const JoinConfirm& m, std::span<uint8_t> out, uint16_t flags) {
  Writer w(out);
  if (begin(out, MsgType::JoinConfirm, kJoinConfirmSize, flags, w) == 0) return 0;
  w.put(m.nonce);
  w.put(m.period);
  w.zeros(4);
  w.put(m.cookie);
  w.bytes(m.token.data(), m.token.size());
  return w.pos();
}

size_t encode(const Move& m, std::span<uint8_t> out, uint16_t flags) {
  Writer w(out);
  if (begin(out, MsgType::Move, kMoveSize, flags, w) == 0) return 0;
  w.put(m.player_id);
  w.put(m.session_token);
  w.put(m.sequence);
  w.put(m.client_time_ms);
  w.put(m.x_m);
  w.put(m.y_m);
  w.put(m.facing_rad);
  w.zeros(4);
  w.bytes(m.payload.data(), kPayloadSize);
  return w.pos();
}

size_t encode(const EconomyRequest& m, std::span<uint8_t> out, uint16_t flags) {
  Writer w(out);
  if (begin(out, MsgType::EconomyRequest, kEconomyRequestSize, flags, w) == 0) return 0;
  w.put(m.player_id);
  w.put(m.session_token);
  w.put(m.transaction_id);
  w.put(m.counterparty_id);
  w.put(m.gold);
  w.put(m.item_count);
  w.put(m.item_kind);
  w.put(m.kind);
  w.zeros(1);
  return w.pos();
}

size_t encode(const Leave& m, std::span<uint8_t> out, uint16_t flags) {
  Writer w(out);
  if (begin(out, MsgType::Leave, kLeaveSize, flags, w) == 0) return 0;
  w.put(m.player_id);
  w.put(m.session_token);
  w.put(m.sequence);
  w.zeros(4);
  return w.pos();
}

size_t encode(const Ping& m, std::span<uint8_t> out, uint16_t flags) {
  Writer w(out);
  if (begin(out, MsgType::Ping, kPingSize, flags, w) == 0) return 0;
  w.put(m.client_time_us);
  w.zeros(8);
  return w.pos();
}

size_t encode(const RaidTrigger& m, std::span<uint8_t> out, uint16_t flags) {
  Writer w(out);
  if (begin(out, MsgType::RaidTrigger, kRaidTriggerSize, flags, w) == 0) return 0;
  w.put(m.admin_key);
  w.put(m.request_id);
  w.put(m.count);
  w.put(m.center_x_m);
  w.put(m.center_y_m);
  w.put(m.half_extent_m);
  w.put(m.lifetime_ms);
  w.put(m.hp);
  w.put(m.seed);
  w.put(m.kind);
  w.put(m.faction);
  w.zeros(6);
  return w.pos();
}

size_t encode(const StatsRequest& m, std::span<uint8_t> out, uint16_t flags) {
  Writer w(out);
  if (begin(out, MsgType::StatsRequest, kStatsRequestSize, flags, w) == 0) return 0;
  w.put(m.admin_key);
  w.put(m.request_id);
  w.zeros(4);
  return w.pos();
}

size_t encode(const Attack& m, std::span<uint8_t> out, uint16_t flags) {
  Writer w(out);
  if (begin(out, MsgType::Attack, kAttackSize, flags, w) == 0) return 0;
  w.put(m.player_id);
  w.put(m.session_token);
  w.put(m.target_id);
  w.put(m.sequence);
  w.zeros(4);
  return w.pos();
}

size_t encode(const TradeOffer& m, std::span<uint8_t> out, uint16_t flags) {
  Writer w(out);
  if (begin(out, MsgType::TradeOffer, kTradeOfferSize, flags, w) == 0) return 0;
  w.put(m.player_id);
  w.put(m.session_token);
  w.put(m.transaction_id);
  w.put(m.counterparty_id);
  write_side(w, m.give);
  write_side(w, m.want);
  return w.pos();
}

size_t encode(const TradeAnswer& m, std::span<uint8_t> out, uint16_t flags) {
  Writer w(out);
  if (begin(out, MsgType::TradeAnswer, kTradeAnswerSize, flags, w) == 0) return 0;
  w.put(m.player_id);
  w.put(m.session_token);
  w.put(m.transaction_id);
  w.put(m.maker_id);
  w.put(m.offer_id);
  w.put(m.accept);
  w.zeros(7);
  return w.pos();
}

size_t encode(const Grant& m, std::span<uint8_t> out, uint16_t flags) {
  Writer w(out);
  if (begin(out, MsgType::Grant, kGrantSize, flags, w) == 0) return 0;
  w.put(m.admin_key);
  w.put(m.player_id);
  w.put(m.grant_id);
  write_side(w, m.stack);
  return w.pos();
}

size_t encode(const TradeNotice& m, std::span<uint8_t> out, uint16_t flags) {
  Writer w(out);
  if (begin(out, MsgType::TradeNotice, kTradeNoticeSize, flags, w) == 0) return 0;
  w.put(static_cast<uint8_t>(m.event));
  w.zeros(7);
  w.put(m.maker_id);
  w.put(m.taker_id);
  w.put(m.offer_id);
  write_side(w, m.give);
  write_side(w, m.want);
  return w.pos();
}

size_t encode(const LootClaim& m, std::span<uint8_t> out, uint16_t flags) {
  Writer w(out);
  if (begin(out, MsgType::LootClaim, kLootClaimSize, flags, w) == 0) return 0;
  w.put(m.player_id);
  w.put(m.session_token);
  w.put(m.loot_id);
  return w.pos();
}

size_t encode(const LootResult& m, std::span<uint8_t> out, uint16_t flags) {
  Writer w(out);
  if (begin(out, MsgType::LootResult, kLootResultSize, flags, w) == 0) return 0;
  w.put(m.loot_id);
  w.put(m.gold);
  w.put(m.item_count);
  w.put(m.item_kind);
  w.put(m.refusal);
  w.put(m.repeat);
  return w.pos();
}

size_t encode(const AttackResult& m, std::span<uint8_t> out, uint16_t flags) {
  Writer w(out);
  if (begin(out, MsgType::AttackResult, kAttackResultSize, flags, w) == 0) return 0;
  w.put(m.sequence);
  w.put(m.refusal);
  w.put(m.killed);
  w.put(m.target_kind);
  w.zeros(1);
  w.put(m.target_id);
  w.put(m.damage);
  w.put(m.hp_left);
  return w.pos();
}

size_t encode(const KillNotice& m, std::span<uint8_t> out, uint16_t flags) {
  Writer w(out);
  if (begin(out, MsgType::KillNotice, kKillNoticeSize, flags, w) == 0) return 0;
  w.put(m.killer_id);
  w.put(m.target_id);
  w.put(m.target_kind);
  w.zeros(7);
  return w.pos();
}

size_t encode(const JoinChallenge& m, std::span<uint8_t> out, uint16_t flags) {
  Writer w(out);
  if (begin(out, MsgType::JoinChallenge, kJoinChallengeSize, flags, w) == 0) return 0;
  w.put(m.nonce);
  w.put(m.period);
  w.zeros(4);
  w.put(m.cookie);
  return w.pos();
}

size_t encode(const JoinAccept& m, std::span<uint8_t> out, uint16_t flags) {
  Writer w(out);
  if (begin(out, MsgType::JoinAccept, kJoinAcceptSize, flags, w) == 0) return 0;
  w.put(m.nonce);
  w.put(m.player_id);
  w.put(m.session_token);
  w.put(static_cast<uint8_t>(m.status));
  w.put(m.faction);
  w.zeros(2);
  w.put(m.tick_ms);
  w.put(m.server_time_ms);
  w.put(m.spawn_x_m);
  w.put(m.spawn_y_m);
  w.zeros(8);
  return w.pos();
}

size_t encode(const MoveAck& m, std::span<uint8_t> out, uint16_t flags) {
  if (m.contact_count > kContactsMax) return 0;
  Writer w(out);
  if (begin(out, MsgType::MoveAck, kMoveAckFixedSize + m.contact_count * kContactSize, flags, w) == 0) return 0;
  w.put(m.sequence);
  w.put(m.client_time_ms);
  w.put(m.result);
  w.put(m.contact_count);
  w.zeros(2);
  for (size_t i = 0; i < m.contact_count; ++i) {
    w.put(m.contacts[i].other_id);
    w.put(m.contacts[i].distance_m);
    w.put(m.contacts[i].kind);
    w.zeros(3);
  }
  return w.pos();
}

size_t encode(const AoiSnapshot& m, std::span<uint8_t> out, uint16_t flags) {
  if (m.count > kAoiEntriesMax) return 0;
  Writer w(out);
  if (begin(out, MsgType::AoiSnapshot, kAoiFixedSize + m.count * kAoiEntrySize, flags, w) == 0) return 0;
  w.put(m.tick);
  w.put(m.count);
  w.zeros(2);
  w.put(m.server_time_ms);
  for (size_t i = 0; i < m.count; ++i) {
    w.put(m.entries[i].entity_id);
    w.put(m.entries[i].x_m);
    w.put(m.entries[i].y_m);
    w.put(m.entries[i].kind);
    w.zeros(3);
  }
  return w.pos();
}

size_t encode(const EconomyResult& m, std::span<uint8_t> out, uint16_t flags) {
  Writer w(out);
  if (begin(out, MsgType::EconomyResult, kEconomyResultSize, flags, w) == 0) return 0;
  w.put(m.transaction_id);
  w.put(m.gold_balance);
  w.put(m.status);
  w.put(m.duplicate);
  w.zeros(6);
  return w.pos();
}

size_t encode(const LeaveAck& m, std::span<uint8_t> out, uint16_t flags) {
  Writer w(out);
  if (begin(out, MsgType::LeaveAck, kLeaveAckSize, flags, w) == 0) return 0;
  w.put(m.player_id);
  return w.pos();
}

size_t encode(const Pong& m, std::span<uint8_t> out, uint16_t flags) {
  Writer w(out);
  if (begin(out, MsgType::Pong, kPongSize, flags, w) == 0) return 0;
  w.put(m.client_time_us);
  w.put(m.server_time_ms);
  return w.pos();
}

size_t encode(const RaidResult& m, std::span<uint8_t> out, uint16_t flags) {
  Writer w(out);
  if (begin(out, MsgType::RaidResult, kRaidResultSize, flags, w) == 0) return 0;
  w.put(m.request_id);
  w.put(m.status);
  w.put(m.spawned);
  w.put(m.cells);
  w.put(m.expires_tick);
  w.zeros(4);
  w.put(m.spawn_ns);
  return w.pos();
}

size_t encode(const StatsReply& m, std::span<uint8_t> out, uint16_t flags) {
  const size_t size = kStatsReplyFixedSize + m.text.size();
  if (size > kStatsReplyMax) return 0;
  Writer w(out);
  if (begin(out, MsgType::StatsReply, size, flags, w) == 0) return 0;
  w.put(m.request_id);
  w.put(static_cast<uint16_t>(m.text.size()));
  w.zeros(2);
  w.bytes(reinterpret_cast<const uint8_t*>(m.text.data()), m.text.size());
  return w.pos();
}

const char* decode_error_name(DecodeError error) {
  switch (error) {
    case DecodeError::Ok: return "ok";
    case DecodeError::Truncated: return "truncated";
    case DecodeError::Oversized: return "oversized";
    case DecodeError::BadMagic: return "bad_magic";
    case DecodeError::BadVersion: return "bad_version";
    case DecodeError::ObsoleteVersion: return "obsolete_version";
    case DecodeError::UnknownType: return "unknown_type";
    case DecodeError::BadLength: return "bad_length";
    case DecodeError::BadField: return "bad_field";
  }
  return "unknown";
}

}  // namespace mmo::wire
