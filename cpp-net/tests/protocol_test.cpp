// The C++ wire codec against docs/protocol-vectors-v3.txt (the bytes the Rust codec is held
// to as well), round trips, and hostile input.
#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <functional>
#include <limits>
#include <map>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "net/protocol.hpp"

namespace {

using namespace mmo::wire;
using Bytes = std::vector<uint8_t>;

std::map<std::string, Bytes> load_vectors() {
  std::ifstream in(MMO_VECTORS_FILE);
  EXPECT_TRUE(in.good()) << "cannot open " << MMO_VECTORS_FILE;
  std::map<std::string, Bytes> vectors;
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream fields(line);
    std::string name;
    std::string hex;
    fields >> name >> hex;
    Bytes bytes;
    for (size_t i = 0; i + 1 < hex.size(); i += 2) bytes.push_back(static_cast<uint8_t>(std::stoul(hex.substr(i, 2), nullptr, 16)));
    vectors[name] = bytes;
  }
  return vectors;
}

template <typename M>
Bytes encoded(const M& m, uint16_t flags = 0) {
  Bytes out(kStatsReplyMax);
  const size_t n = encode(m, out, flags);
  out.resize(n);
  return out;
}

Move vector_move() {
  Move m{42, 0xfeedface01020304ULL, 7, 90210, 10.25f, 20.5f, 1.5f, {}};
  for (size_t i = 0; i < kPayloadSize; ++i) m.payload[i] = static_cast<uint8_t>(i);
  return m;
}

// Each vector's message, built from the values in its comment line. A vector in the file
// with no entry here fails the test, so a new vector cannot be skipped silently.
std::map<std::string, std::function<void(const Bytes&)>> vector_checks() {
  std::map<std::string, std::function<void(const Bytes&)>> checks;
  auto client = [&](const std::string& name, auto message, uint16_t flags = 0) {
    checks[name] = [message, flags](const Bytes& bytes) {
      EXPECT_EQ(encoded(message, flags), bytes);
      Decoded<ClientMessage> d;
      ASSERT_EQ(decode_client(bytes, d), DecodeError::Ok);
      EXPECT_EQ(d.flags, flags);
      using M = decltype(message);
      ASSERT_TRUE(std::holds_alternative<M>(d.message));
      EXPECT_EQ(std::get<M>(d.message), message);
    };
  };
  auto server = [&](const std::string& name, auto message) {
    checks[name] = [message](const Bytes& bytes) {
      EXPECT_EQ(encoded(message), bytes);
      Decoded<ServerMessage> d;
      ASSERT_EQ(decode_server(bytes, d), DecodeError::Ok);
      using M = decltype(message);
      ASSERT_TRUE(std::holds_alternative<M>(d.message));
      EXPECT_EQ(std::get<M>(d.message), message);
    };
  };
  const uint64_t nonce = 0x1122334455667788ULL;
  const uint64_t token = 0xfeedface01020304ULL;
  const uint64_t object = (uint64_t{1} << 63) | 5;
  client("join_request", JoinRequest{nonce});
  server("join_challenge", JoinChallenge{nonce, 170000, 0x0123456789abcdefULL});
  JoinConfirm confirm{nonce, 170000, 0x0123456789abcdefULL, {}};
  for (size_t i = 0; i < confirm.token.size(); ++i) confirm.token[i] = static_cast<uint8_t>(i);
  client("join_confirm", confirm);
  server("join_accept", JoinAccept{nonce, 42, token, JoinStatus::Joined, 2, 50, 123456789, 100.5f, 2048.25f});
  client("move", vector_move());
  server("move_ack_rejected", MoveAck{7, 90210, 4, 0, {}});
  MoveAck contacts{8, 90310, 0, 2, {}};
  contacts.contacts[0] = {43, 3.5f, 1};
  contacts.contacts[1] = {object, 7.75f, 2};
  server("move_ack_contacts", contacts);
  AoiSnapshot aoi{99, 2, 123456789, {}};
  aoi.entries[0] = {43, 11.0f, 21.0f, 1};
  aoi.entries[1] = {object, 12.5f, 22.5f, 2};
  server("aoi_snapshot", aoi);
  client("economy_request", EconomyRequest{42, token, 1001, 43, -5, 3, 7, 2}, kFlagRetransmit);
  server("economy_result", EconomyResult{1001, 250, 5, 1});
  client("leave", Leave{42, token, 9});
  server("leave_ack", LeaveAck{42});
  client("ping", Ping{555000111});
  server("pong", Pong{555000111, 123456789});
  client("raid_trigger", RaidTrigger{0xa11ce5ec2e7ULL, 3, 11000, 2048.0f, 1024.0f, 64.0f, 5000, 100, 77, 2, 9});
  server("raid_result", RaidResult{3, 0, 11000, 16, 140, 450000});
  client("stats_request", StatsRequest{0xa11ce5ec2e7ULL, 4});
  server("stats_reply", StatsReply{4, "moves_applied 12\ndrop_replayed 3\n"});
  client("attack", Attack{42, token, object, 10});
  server("attack_result_killed", AttackResult{10, 0, 1, 2, object, 50, 0});
  server("attack_result_refused", AttackResult{11, 8, 0, 0, 43, 0, 0});
  server("kill_notice", KillNotice{42, object, 2});
  client("loot_claim", LootClaim{42, token, object});
  server("loot_result_repeat", LootResult{object, 25, 3, 7, 0, 1});
  server("loot_result_refused", LootResult{object, 0, 0, 0, 5, 0});
  client("trade_offer", TradeOffer{42, token, 1002, 43, {300, 0, 0}, {0, 2, 3}}, kFlagRetransmit);
  client("trade_answer", TradeAnswer{43, token, 77, 42, 1002, 1});
  client("grant", Grant{0xa11ce5ec2e7ULL, 43, 5, {1000, 4, 3}});
  server("trade_notice_offered", TradeNotice{TradeEvent::Offered, 42, 43, 1002, {300, 0, 0}, {0, 2, 3}});
  server("trade_notice_accepted", TradeNotice{TradeEvent::Accepted, 42, 43, 1002, {}, {}});
  return checks;
}

TEST(ProtocolVectors, EveryCommittedVectorEncodesAndDecodesExactly) {
  const auto vectors = load_vectors();
  auto checks = vector_checks();
  ASSERT_GE(vectors.size(), 22u);
  for (const auto& [name, bytes] : vectors) {
    SCOPED_TRACE(name);
    auto it = checks.find(name);
    ASSERT_NE(it, checks.end()) << "vector '" << name << "' has no check in protocol_test.cpp";
    it->second(bytes);
  }
  for (const auto& [name, check] : checks) EXPECT_TRUE(vectors.count(name)) << "check '" << name << "' has no vector in the file";
}

TEST(ProtocolVectors, EveryTruncationOfEveryVectorIsRefusedNotCrashed) {
  for (const auto& [name, bytes] : load_vectors()) {
    SCOPED_TRACE(name);
    for (size_t len = 0; len < bytes.size(); ++len) {
      const Bytes cut(bytes.begin(), bytes.begin() + static_cast<std::ptrdiff_t>(len));
      Decoded<ClientMessage> c;
      Decoded<ServerMessage> s;
      const DecodeError ce = decode_client(cut, c);
      const DecodeError se = decode_server(cut, s);
      EXPECT_NE(ce, DecodeError::Ok);
      EXPECT_NE(se, DecodeError::Ok);
      if (len < kHeaderSize) {
        EXPECT_EQ(ce, DecodeError::Truncated);
        EXPECT_EQ(se, DecodeError::Truncated);
      }
    }
  }
}

TEST(ProtocolDecode, EachHeaderFaultHasItsOwnError) {
  const Bytes move = encoded(vector_move());
  Decoded<ClientMessage> d;
  auto with = [&](size_t offset, uint8_t value) {
    Bytes b = move;
    b[offset] = value;
    return decode_client(b, d);
  };
  EXPECT_EQ(with(0, 0x00), DecodeError::BadMagic);
  EXPECT_EQ(with(2, 4), DecodeError::BadVersion) << "a version from the future is garbage";
  EXPECT_EQ(with(2, 0), DecodeError::BadVersion);
  EXPECT_EQ(with(2, 0xff), DecodeError::BadVersion);
  EXPECT_EQ(with(2, 1), DecodeError::ObsoleteVersion) << "v1: old clients, counted apart";
  EXPECT_EQ(with(2, 2), DecodeError::ObsoleteVersion) << "v2: old clients, counted apart";
  EXPECT_EQ(with(3, 0x83), DecodeError::UnknownType) << "a server type from a client";
  EXPECT_EQ(with(3, 0x0E), DecodeError::UnknownType);
  EXPECT_EQ(with(3, 0x0A), DecodeError::BadLength) << "LOOT_CLAIM is 32 bytes";
  EXPECT_EQ(with(3, 0x8A), DecodeError::UnknownType) << "ATTACK_RESULT is the server's";
  EXPECT_EQ(with(4, 81), DecodeError::BadLength) << "length field disagrees with the datagram";
  EXPECT_EQ(with(6, 2), DecodeError::BadField) << "unknown flag bit";
  EXPECT_EQ(with(44, 1), DecodeError::BadField) << "reserved byte";
  Bytes longer = move;
  longer.push_back(0);
  longer[4] = static_cast<uint8_t>(longer.size());
  EXPECT_EQ(decode_client(longer, d), DecodeError::BadLength) << "more bytes than the type's size";
  Bytes oversized(kClientDatagramMax + 1, 0);
  std::copy(move.begin(), move.end(), oversized.begin());
  EXPECT_EQ(decode_client(oversized, d), DecodeError::Oversized);
  Move nan = vector_move();
  nan.x_m = std::numeric_limits<float>::quiet_NaN();
  EXPECT_EQ(decode_client(encoded(nan), d), DecodeError::BadField);
  Move inf = vector_move();
  inf.y_m = std::numeric_limits<float>::infinity();
  EXPECT_EQ(decode_client(encoded(inf), d), DecodeError::BadField);
  EconomyRequest bad_kind{1, 2, 3, 4, 5, 6, 7, 9};
  EXPECT_EQ(decode_client(encoded(bad_kind), d), DecodeError::BadField);
  RaidTrigger player_kind{1, 2, 3, 0, 0, 1, 1, 1, 1, 1, 1};
  EXPECT_EQ(decode_client(encoded(player_kind), d), DecodeError::BadField) << "a raid may not spawn players";
  Bytes attack = encoded(Attack{1, 2, 3, 4});
  attack[37] = 1;
  EXPECT_EQ(decode_client(attack, d), DecodeError::BadField) << "ATTACK's reserved bytes";
  Decoded<ServerMessage> s;
  for (const auto& [offset, value] : std::vector<std::pair<size_t, uint8_t>>{{12, 9}, {13, 2}, {14, 5}, {15, 1}}) {
    Bytes result = encoded(AttackResult{1, 0, 0, 1, 2, 3, 4});
    result[offset] = value;
    EXPECT_EQ(decode_server(result, s), DecodeError::BadField) << "ATTACK_RESULT byte " << offset << " = " << int{value};
  }
  Bytes answer = encoded(TradeAnswer{1, 2, 3, 4, 5, 1});
  answer[48] = 2;
  EXPECT_EQ(decode_client(answer, d), DecodeError::BadField) << "TRADE_ANSWER accept is 0 or 1";
  answer[48] = 1;
  answer[50] = 1;
  EXPECT_EQ(decode_client(answer, d), DecodeError::BadField) << "TRADE_ANSWER's reserved bytes";
  Bytes offer = encoded(TradeOffer{1, 2, 3, 4, {5, 6, 7}, {8, 9, 10}});
  offer[54] = 1;
  EXPECT_EQ(decode_client(offer, d), DecodeError::BadField) << "a trade side's reserved bytes";
  for (const uint8_t event : {uint8_t{0}, uint8_t{4}}) {
    Bytes notice = encoded(TradeNotice{TradeEvent::Offered, 1, 2, 3, {}, {}});
    notice[8] = event;
    EXPECT_EQ(decode_server(notice, s), DecodeError::BadField) << "TRADE_NOTICE event " << int{event};
  }
  for (const auto& [offset, value] : std::vector<std::pair<size_t, uint8_t>>{{30, 10}, {31, 2}}) {
    Bytes result = encoded(LootResult{1, 2, 3, 4, 0, 0});
    result[offset] = value;
    EXPECT_EQ(decode_server(result, s), DecodeError::BadField) << "LOOT_RESULT byte " << offset << " = " << int{value};
  }
  for (const auto& [offset, value] : std::vector<std::pair<size_t, uint8_t>>{{24, 0}, {24, 5}, {25, 1}, {31, 1}}) {
    Bytes notice = encoded(KillNotice{1, 2, 2});
    notice[offset] = value;
    EXPECT_EQ(decode_server(notice, s), DecodeError::BadField) << "KILL_NOTICE byte " << offset << " = " << int{value};
  }
}

// Every reserved byte of every client message (the same ranges the Rust codec's tests hold,
// loadtest/tests/suite/common.rs `reserved_ranges`): any non-zero value is refused.
TEST(ProtocolDecode, EveryReservedByteOfEveryClientMessageIsRefused) {
  const std::map<std::string, std::vector<std::pair<size_t, size_t>>> reserved{
      {"join_request", {{16, 64}}}, {"join_confirm", {{20, 24}}},  {"move", {{44, 48}}},
      {"economy_request", {{55, 56}}}, {"leave", {{28, 32}}},      {"ping", {{16, 24}}},
      {"raid_trigger", {{50, 56}}},  {"stats_request", {{20, 24}}}, {"attack", {{36, 40}}},
      {"trade_offer", {{54, 56}, {70, 72}}}, {"trade_answer", {{49, 56}}}, {"grant", {{46, 48}}},
      {"loot_claim", {}},
  };
  const auto vectors = load_vectors();
  for (const auto& [name, ranges] : reserved) {
    SCOPED_TRACE(name);
    const auto it = vectors.find(name);
    ASSERT_NE(it, vectors.end());
    Decoded<ClientMessage> d;
    ASSERT_EQ(decode_client(it->second, d), DecodeError::Ok) << "the vector itself decodes";
    for (const auto& [from, to] : ranges) {
      for (size_t at = from; at < to; ++at) {
        for (const uint8_t value : {uint8_t{1}, uint8_t{0x80}, uint8_t{0xFF}}) {
          Bytes b = it->second;
          b[at] = value;
          EXPECT_EQ(decode_client(b, d), DecodeError::BadField) << "byte " << at << " = " << int{value};
        }
      }
    }
  }
}

// One enum byte of a committed vector, and the values the protocol defines for it.
struct EnumField {
  const char* vector;
  size_t offset;
  std::set<uint8_t> defined;
};

// Every value of each field's byte: the defined ones decode, every other is BadField.
template <typename Message>
void expect_only_defined_values(const std::vector<EnumField>& fields, DecodeError (*decode)(std::span<const uint8_t>, Decoded<Message>&)) {
  const auto vectors = load_vectors();
  Decoded<Message> out;
  for (const auto& field : fields) {
    SCOPED_TRACE(field.vector);
    for (unsigned value = 0; value <= 0xFF; ++value) {
      Bytes b = vectors.at(field.vector);
      b[field.offset] = static_cast<uint8_t>(value);
      const DecodeError want = field.defined.count(static_cast<uint8_t>(value)) ? DecodeError::Ok : DecodeError::BadField;
      EXPECT_EQ(decode(b, out), want) << "byte " << field.offset << " = " << value;
    }
  }
}

// The client messages' enum bytes: every value the protocol does not define is refused, every
// one it defines decodes; and no float a client sends may be NaN or infinite.
TEST(ProtocolDecode, EveryUndefinedClientEnumByteAndNonFiniteFloatIsRefused) {
  // Economy kinds 2 and 3 are retired by the engine (a result), not by the codec.
  expect_only_defined_values<ClientMessage>({{"economy_request", 54, {1, 2, 3, 4}}, {"raid_trigger", 48, {2, 3, 4}}, {"trade_answer", 48, {0, 1}}},
                                            decode_client);
  const auto vectors = load_vectors();
  Decoded<ClientMessage> d;
  const std::vector<std::pair<const char*, size_t>> floats{{"move", 32}, {"move", 36}, {"move", 40},
                                                           {"raid_trigger", 24}, {"raid_trigger", 28}, {"raid_trigger", 32}};
  for (const auto& [vector, offset] : floats) {
    for (const float bad : {std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity(),
                            -std::numeric_limits<float>::infinity()}) {
      Bytes b = vectors.at(vector);
      std::memcpy(b.data() + offset, &bad, sizeof bad);
      EXPECT_EQ(decode_client(b, d), DecodeError::BadField) << vector << " float at " << offset << " = " << bad;
    }
  }
}

// The replies' enum bytes, as the load tester's decoder holds them (decode_server serves the
// tests, the conformance runner and the fuzzer).
TEST(ProtocolDecode, EveryUndefinedReplyEnumByteIsRefused) {
  std::set<uint8_t> economy_statuses;
  for (unsigned v = 0; v <= kEconomyStatusMax; ++v) economy_statuses.insert(static_cast<uint8_t>(v));
  expect_only_defined_values<ServerMessage>({
      {"move_ack_rejected", 16, {0, 1, 2, 3, 4, 5, 6}},  // the result (no contacts: 0 is applied)
      {"move_ack_contacts", 20 + 12, {1, 2, 3, 4}},  // a contact's kind
      {"aoi_snapshot", 24 + 16, {1, 2, 3, 4}},       // an entry's kind
      {"economy_result", 24, economy_statuses},
      {"economy_result", 25, {0, 1}},
  }, decode_server);
  // A refused move carries no contacts.
  Decoded<ServerMessage> s;
  Bytes refused_with_contacts = load_vectors().at("move_ack_contacts");
  refused_with_contacts[16] = 1;
  EXPECT_EQ(decode_server(refused_with_contacts, s), DecodeError::BadField);
}

TEST(ProtocolDecode, CountsAboveTheirMaximumAreRefused) {
  MoveAck ack{1, 2, 0, 1, {}};
  Bytes b = encoded(ack);
  b[17] = static_cast<uint8_t>(kContactsMax + 1);
  Decoded<ServerMessage> d;
  EXPECT_EQ(decode_server(b, d), DecodeError::BadField);
  b[17] = 2;  // claims more contacts than the datagram holds
  EXPECT_EQ(decode_server(b, d), DecodeError::Truncated);
  ack.contact_count = static_cast<uint8_t>(kContactsMax + 1);
  EXPECT_EQ(encoded(ack).size(), 0u) << "the encoder refuses too";
}

TEST(ProtocolEncode, TooSmallABufferWritesNothingAndReturnsZero) {
  std::array<uint8_t, kMoveSize - 1> small{};
  EXPECT_EQ(encode(vector_move(), small), 0u);
  EXPECT_TRUE(std::all_of(small.begin(), small.end(), [](uint8_t b) { return b == 0; }));
}

TEST(ProtocolRoundTrip, RandomMessagesSurviveEncodeDecode) {
  std::mt19937_64 rng(12345);
  auto f = [&] { return std::uniform_real_distribution<float>(-5000.0f, 5000.0f)(rng); };
  for (int i = 0; i < 2000; ++i) {
    Move m{rng(), rng(), static_cast<uint32_t>(rng()), static_cast<uint32_t>(rng()), f(), f(), f(), {}};
    for (auto& b : m.payload) b = static_cast<uint8_t>(rng());
    Decoded<ClientMessage> d;
    ASSERT_EQ(decode_client(encoded(m), d), DecodeError::Ok);
    ASSERT_EQ(std::get<Move>(d.message), m);

    AoiSnapshot a{static_cast<uint32_t>(rng()), static_cast<uint16_t>(rng() % (kAoiEntriesMax + 1)), rng(), {}};
    auto kind = [&] { return static_cast<uint8_t>(kEntityKindMin + rng() % kEntityKindMax); };
    for (size_t k = 0; k < a.count; ++k) a.entries[k] = {rng(), f(), f(), kind()};
    Decoded<ServerMessage> s;
    ASSERT_EQ(decode_server(encoded(a), s), DecodeError::Ok);
    ASSERT_EQ(std::get<AoiSnapshot>(s.message), a);

    const auto move_result = static_cast<uint8_t>(rng() % (kMoveResultMax + 1));
    MoveAck ack{static_cast<uint32_t>(rng()), static_cast<uint32_t>(rng()), move_result,
                static_cast<uint8_t>(move_result == 0 ? rng() % (kContactsMax + 1) : 0), {}};
    for (size_t k = 0; k < ack.contact_count; ++k) ack.contacts[k] = {rng(), f(), kind()};
    ASSERT_EQ(decode_server(encoded(ack), s), DecodeError::Ok);
    ASSERT_EQ(std::get<MoveAck>(s.message), ack);

    const Attack attack{rng(), rng(), rng(), static_cast<uint32_t>(rng())};
    ASSERT_EQ(decode_client(encoded(attack), d), DecodeError::Ok);
    ASSERT_EQ(std::get<Attack>(d.message), attack);
    const AttackResult result{static_cast<uint32_t>(rng()), static_cast<uint8_t>(rng() % 9), static_cast<uint8_t>(rng() % 2),
                              static_cast<uint8_t>(rng() % 5), rng(), static_cast<int32_t>(rng()), static_cast<int32_t>(rng())};
    ASSERT_EQ(decode_server(encoded(result), s), DecodeError::Ok);
    ASSERT_EQ(std::get<AttackResult>(s.message), result);
    const LootClaim claim{rng(), rng(), rng()};
    ASSERT_EQ(decode_client(encoded(claim), d), DecodeError::Ok);
    ASSERT_EQ(std::get<LootClaim>(d.message), claim);
    const LootResult loot{rng(), rng(), static_cast<uint32_t>(rng()), static_cast<uint16_t>(rng()), static_cast<uint8_t>(rng() % 8),
                          static_cast<uint8_t>(rng() % 2)};
    ASSERT_EQ(decode_server(encoded(loot), s), DecodeError::Ok);
    ASSERT_EQ(std::get<LootResult>(s.message), loot);
  }
}

TEST(ProtocolHostile, RandomBytesNeverCrashAndRarelyDecode) {
  std::mt19937_64 rng(777);
  size_t decoded_ok = 0;
  for (int i = 0; i < 200000; ++i) {
    Bytes b(rng() % 300);
    for (auto& x : b) x = static_cast<uint8_t>(rng());
    // Half the time give it a valid header, so the per-type decoders see garbage too.
    if (b.size() >= kHeaderSize && (i & 1)) {
      b[0] = 0x4d;
      b[1] = 0x4f;
      b[2] = kVersion;
      b[4] = static_cast<uint8_t>(b.size() & 0xff);
      b[5] = static_cast<uint8_t>(b.size() >> 8);
    }
    Decoded<ClientMessage> c;
    Decoded<ServerMessage> s;
    if (decode_client(b, c) == DecodeError::Ok) ++decoded_ok;
    if (decode_server(b, s) == DecodeError::Ok) ++decoded_ok;
  }
  // Reserved bytes must be zero, so random bodies almost never pass.
  EXPECT_LT(decoded_ok, 200u);
}

}  // namespace
