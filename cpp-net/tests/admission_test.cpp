// Admission: every drop reason in validation order, the replay window, both rate limiters,
// join cookies (expiry, address binding) and the session table.
#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <limits>
#include <map>
#include <memory>
#include <random>
#include <set>
#include <vector>

#include "net/admission.hpp"
#include "net/aoi_order.hpp"
#include "net/udp.hpp"

namespace {

using namespace mmo::net;
using namespace mmo::wire;
using Bytes = std::vector<uint8_t>;

template <typename M>
Bytes encoded(const M& m, uint16_t flags = 0) {
  Bytes out(kStatsReplyMax);
  out.resize(encode(m, out, flags));
  return out;
}

const SourceAddress kAlice{0x0100007f, 0x1234};
const SourceAddress kMallory{0x0100007f, 0x9999};
constexpr uint64_t kAdminKey = 0xa11ce;
constexpr uint64_t kSecondUs = 1'000'000;

struct Fixture : ::testing::Test {
  JoinCookies cookies{{0x0706050403020100ULL, 0x0f0e0d0c0b0a0908ULL}};
  AdmissionConfig config = [] {
    AdmissionConfig c;
    c.per_address = {1000, 1000};
    c.per_player = {1000, 1000};
    c.max_sessions = 64;
    c.address_slots_pow2 = 64;
    c.admin_key = kAdminKey;
    return c;
  }();
  std::unique_ptr<Admission> admission = std::make_unique<Admission>(config, cookies);
  Decoded<ClientMessage> out;

  Admitted admit(const Bytes& b, SourceAddress from = kAlice, uint64_t now_us = 50 * kSecondUs) { return admission->admit(b, from, now_us, out); }

  Session* join(uint64_t player_id, uint64_t token, SourceAddress from = kAlice) {
    Session s;
    s.player_id = player_id;
    s.session_token = token;
    s.source = from;
    s.bucket = admission->player_bucket(0);
    return admission->sessions().insert(s);
  }

  Move move(uint64_t player_id, uint64_t token, uint32_t sequence) { return Move{player_id, token, sequence, 0, 1, 1, 0, {}}; }
};

TEST_F(Fixture, AttacksShareTheSessionsReplayWindowAndChecks) {
  join(7, 77);
  ASSERT_TRUE(admit(encoded(move(7, 77, 5))).ok);
  EXPECT_EQ(admit(encoded(Attack{7, 77, 99, 5})).reason, DropReason::Replayed) << "a move's sequence is spent";
  const Admitted a = admit(encoded(Attack{7, 77, 99, 6}));
  ASSERT_TRUE(a.ok);
  EXPECT_NE(a.session, nullptr);
  EXPECT_EQ(admit(encoded(move(7, 77, 6))).reason, DropReason::Replayed) << "an attack's sequence is spent";
  EXPECT_EQ(admit(encoded(Attack{7, 78, 99, 7})).reason, DropReason::BadSession);
  EXPECT_EQ(admit(encoded(Attack{7, 77, 99, 7}), kMallory).reason, DropReason::AddressMismatch);
  EXPECT_EQ(admit(encoded(Attack{8, 77, 99, 7})).reason, DropReason::UnknownPlayer);
}

TEST_F(Fixture, EveryDropReasonInValidationOrder) {
  join(7, 77);
  const Bytes good = encoded(move(7, 77, 1));
  std::map<DropReason, int> seen;
  auto expect_drop = [&](const Bytes& b, DropReason reason, SourceAddress from = kAlice) {
    const Admitted a = admit(b, from);
    EXPECT_FALSE(a.ok) << drop_reason_name(reason);
    EXPECT_EQ(a.reason, reason) << "expected " << drop_reason_name(reason) << ", got " << drop_reason_name(a.reason);
    seen[reason]++;
  };
  // From a source no reply can reach: dropped first, even a well-formed move of a live session.
  for (const uint32_t ip : {0x7f000001u, 0x00000000u, 0x00ffffffu, 0xe0000001u, 0xefffffffu, 0xf0000001u, 0xffffffffu}) {
    const uint16_t port = ip == 0x7f000001u ? 0 : 0x1234;
    expect_drop(good, DropReason::BadSource, SourceAddress{htonl(ip), htons(port)});
  }
  EXPECT_TRUE(answerable_source(kAlice));
  EXPECT_TRUE(answerable_source(SourceAddress{htonl(0x0a000001u), htons(1)}));
  EXPECT_TRUE(answerable_source(SourceAddress{htonl(0xdfffffffu), htons(65535)}));
  expect_drop(Bytes(5, 0), DropReason::Truncated);
  expect_drop(Bytes(kClientDatagramMax + 1, 0), DropReason::Oversized);
  Bytes b = good;
  b[0] = 0;
  expect_drop(b, DropReason::BadMagic);
  b = good;
  b[2] = 9;
  expect_drop(b, DropReason::BadVersion);
  b = good;
  b[2] = kObsoleteVersion;
  expect_drop(b, DropReason::ObsoleteVersion);
  b = good;
  b[3] = 0x55;
  expect_drop(b, DropReason::UnknownType);
  expect_drop(Bytes(good.begin(), good.begin() + 40), DropReason::Truncated);
  b = good;
  b[4] = 99;
  expect_drop(b, DropReason::BadLength);
  b = good;
  b[45] = 1;
  expect_drop(b, DropReason::BadField);
  expect_drop(encoded(JoinConfirm{1, JoinCookies::period_at(50'000), 12345, {}}), DropReason::BadCookie);
  const uint32_t old_period = JoinCookies::period_at(20'000);
  expect_drop(encoded(JoinConfirm{1, old_period, cookies.mac(kAlice, 1, old_period), {}}), DropReason::CookieExpired);
  // From outside the admin networks (loopback by default): dropped before the key is read,
  // the right key included.
  const SourceAddress outsider{htonl(0x0a000001u), htons(0x1234)};
  expect_drop(encoded(StatsRequest{kAdminKey, 1}), DropReason::AdminWrongSource, outsider);
  expect_drop(encoded(RaidTrigger{kAdminKey + 1, 1, 10, 5, 5, 5, 100, 1, 1, 2, 0}), DropReason::BadAdminKey);
  expect_drop(encoded(StatsRequest{0, 1}), DropReason::BadAdminKey);
  expect_drop(encoded(move(8, 77, 1)), DropReason::UnknownPlayer);
  expect_drop(encoded(move(7, 78, 1)), DropReason::BadSession);
  expect_drop(encoded(move(7, 77, 1)), DropReason::AddressMismatch, kMallory);
  ASSERT_TRUE(admit(good).ok);
  expect_drop(good, DropReason::Replayed);
  EXPECT_EQ(seen.size() + 3, kDropReasonCount) << "rate limits are covered by their own tests";
}

TEST_F(Fixture, AdminMessagesAreAnsweredOnlyFromTheAdminNetworks) {
  std::string error;
  const auto sources = AdminSources::parse(" 10.1.0.0/16, 192.0.2.7 ,127.0.0.1/32", error);
  ASSERT_TRUE(sources) << error;
  config.admin_sources = *sources;
  admission = std::make_unique<Admission>(config, cookies);
  const auto at = [](uint32_t ip) { return SourceAddress{htonl(ip), htons(4000)}; };
  for (const uint32_t ip : {0x0a010000u, 0x0a01ffffu, 0xc0000207u, 0x7f000001u}) {
    EXPECT_TRUE(admit(encoded(StatsRequest{kAdminKey, 1}), at(ip)).ok) << std::hex << ip;
    EXPECT_EQ(admit(encoded(StatsRequest{kAdminKey ^ 1, 1}), at(ip)).reason, DropReason::BadAdminKey) << std::hex << ip;
  }
  for (const uint32_t ip : {0x0a020000u, 0x0a00ffffu, 0xc0000206u, 0xc0000208u, 0x7f000002u, 0x08080808u}) {
    EXPECT_EQ(admit(encoded(StatsRequest{kAdminKey, 1}), at(ip)).reason, DropReason::AdminWrongSource) << std::hex << ip;
    EXPECT_EQ(admit(encoded(Grant{kAdminKey, 7, 1, {1000, 4, 3}}), at(ip)).reason, DropReason::AdminWrongSource) << std::hex << ip;
    EXPECT_EQ(admit(encoded(RaidTrigger{kAdminKey, 1, 10, 5, 5, 5, 100, 1, 1, 2, 0}), at(ip)).reason, DropReason::AdminWrongSource)
        << std::hex << ip;
  }
  // Session traffic is not held to the admin networks.
  join(7, 77, at(0x08080808u));
  EXPECT_TRUE(admit(encoded(move(7, 77, 1)), at(0x08080808u)).ok);
  // None: answered from nowhere, loopback included.
  config.admin_sources = *AdminSources::parse("", error);
  admission = std::make_unique<Admission>(config, cookies);
  EXPECT_EQ(admit(encoded(StatsRequest{kAdminKey, 1}), at(0x7f000001u)).reason, DropReason::AdminWrongSource);
  // Any: 0.0.0.0/0.
  config.admin_sources = *AdminSources::parse("0.0.0.0/0", error);
  admission = std::make_unique<Admission>(config, cookies);
  EXPECT_TRUE(admit(encoded(StatsRequest{kAdminKey, 1}), at(0x08080808u)).ok);
}

TEST(AdminSourcesText, ParsesNetworksAndRefusesWhatIsNotOne) {
  std::string error;
  const auto three = AdminSources::parse("127.0.0.0/8,10.0.0.0/24,\n\t203.0.113.9", error);
  ASSERT_TRUE(three) << error;
  ASSERT_EQ(three->networks().size(), 3u);
  EXPECT_EQ(three->networks()[0].prefix, 0x7f000000u);
  EXPECT_EQ(three->networks()[0].mask, 0xff000000u);
  EXPECT_EQ(three->networks()[1].mask, 0xffffff00u);
  EXPECT_EQ(three->networks()[2].prefix, 0xcb007109u);
  EXPECT_EQ(three->networks()[2].mask, 0xffffffffu);
  ASSERT_TRUE(AdminSources::parse("  ", error));
  EXPECT_TRUE(AdminSources::parse("  ", error)->networks().empty());
  EXPECT_EQ(AdminSources::loopback().networks().size(), 1u);
  EXPECT_TRUE(AdminSources::loopback().allows(htonl(0x7f123456u)));
  EXPECT_FALSE(AdminSources::loopback().allows(htonl(0x80000001u)));
  std::string sixteen, seventeen;
  for (int i = 0; i < 16; ++i) sixteen += (i ? "," : "") + std::string("10.0.0.") + std::to_string(i);
  seventeen = sixteen + ",10.0.0.16";
  EXPECT_TRUE(AdminSources::parse(sixteen, error)) << error;
  const std::vector<std::pair<std::string, std::string>> bad = {
      {"localhost", "\"localhost\" is not an IPv4 address"},
      {"10.0.0.0/33", "prefix length must be 0 to 32"},
      {"10.0.0.0/", "prefix length must be 0 to 32"},
      {"10.0.0.0/-1", "prefix length must be 0 to 32"},
      {"10.0.0.0/8x", "prefix length must be 0 to 32"},
      {"10.0.0.5/24", "\"10.0.0.5/24\" has bits set past its /24"},
      {"1.2.3.4/0", "has bits set past its /0"},
      {"10.0.0.1,,10.0.0.2", "\"\" is not an IPv4 address"},
      {"10.0.0.1,", "\"\" is not an IPv4 address"},
      {"::1", "is not an IPv4 address"},
      {"10.0.0.256", "is not an IPv4 address"},
      {seventeen, "more than 16 networks"},
  };
  for (const auto& [text, want] : bad) {
    error.clear();
    EXPECT_FALSE(AdminSources::parse(text, error)) << text;
    EXPECT_NE(error.find(want), std::string::npos) << text << ": " << error;
  }
}

TEST(SessionDirectoryHosts, OneHostHoldsAtMostItsCapWhateverItsPorts) {
  SessionDirectory directory(64, 3);
  const auto at = [](uint32_t ip, uint16_t port) { return SourceAddress{htonl(ip), htons(port)}; };
  const uint32_t host = 0x7F000002, other = 0x7F000003;
  for (uint16_t port = 1; port <= 3; ++port) {
    EXPECT_TRUE(directory.host_has_room(at(host, port)));
    EXPECT_EQ(directory.add(port, 100 + port, at(host, port)), DirectoryAdd::Added);
  }
  EXPECT_FALSE(directory.host_has_room(at(host, 9)));
  EXPECT_EQ(directory.add(4, 104, at(host, 4)), DirectoryAdd::HostFull) << "a fourth port of the same host";
  EXPECT_EQ(directory.add(5, 105, at(other, 1)), DirectoryAdd::Added) << "another host is not affected";
  directory.remove(2);
  EXPECT_TRUE(directory.host_has_room(at(host, 4)));
  EXPECT_EQ(directory.add(4, 104, at(host, 4)), DirectoryAdd::Added) << "a leave frees the host's slot";
  EXPECT_EQ(directory.add(6, 106, at(host, 6)), DirectoryAdd::HostFull);
  for (const uint64_t p : {1, 3, 4}) directory.remove(p);
  directory.remove(99);  // unknown: nothing
  for (uint16_t port = 10; port < 13; ++port) EXPECT_EQ(directory.add(port, port, at(host, port)), DirectoryAdd::Added);
  SessionDirectory unlimited(64, 0);
  for (uint16_t port = 1; port < 40; ++port) EXPECT_EQ(unlimited.add(port, port, at(host, port)), DirectoryAdd::Added);
}

TEST_F(Fixture, ASpoofHashedToAnotherWorkerIsStillNamedBySessionDirectory) {
  // Two workers: the victim's session lives on the first; the spoofer's datagrams arrive at
  // the second (SO_REUSEPORT hashes by source), which asks the shared directory.
  SessionDirectory directory(64, 0);
  Admission owner(config, cookies, &directory);
  Admission other(config, cookies, &directory);
  Session s;
  s.player_id = 7;
  s.session_token = 77;
  s.source = kAlice;
  s.bucket = owner.player_bucket(0);
  ASSERT_NE(owner.sessions().insert(s), nullptr);
  ASSERT_EQ(directory.add(7, 77, kAlice), DirectoryAdd::Added);
  Decoded<ClientMessage> d;
  EXPECT_EQ(other.admit(encoded(move(7, 78, 1)), kMallory, 1000, d).reason, DropReason::BadSession);
  EXPECT_EQ(other.admit(encoded(move(7, 77, 1)), kMallory, 1000, d).reason, DropReason::AddressMismatch);
  EXPECT_EQ(other.admit(encoded(move(8, 77, 1)), kMallory, 1000, d).reason, DropReason::UnknownPlayer);
  EXPECT_TRUE(owner.admit(encoded(move(7, 77, 1)), kAlice, 1000, d).ok);
  directory.remove(7);
  EXPECT_EQ(other.admit(encoded(move(7, 77, 2)), kMallory, 1000, d).reason, DropReason::UnknownPlayer) << "gone after leave";
}

TEST_F(Fixture, AdmittedMessagesCarryTheirSession) {
  Session* s = join(7, 77);
  const Admitted a = admit(encoded(move(7, 77, 1)));
  ASSERT_TRUE(a.ok);
  EXPECT_EQ(a.session, s);
  EXPECT_EQ(std::get<Move>(out.message).sequence, 1u);
  const Admitted e = admit(encoded(EconomyRequest{7, 77, 1, 0, 10, 0, 0, 3}));
  ASSERT_TRUE(e.ok);
  EXPECT_EQ(e.session, s);
  // Economy requests carry no sequence: a resend is the engine's to de-duplicate.
  EXPECT_TRUE(admit(encoded(EconomyRequest{7, 77, 1, 0, 10, 0, 0, 3}, kFlagRetransmit)).ok);
  EXPECT_TRUE(admit(encoded(JoinRequest{5}), kMallory).ok) << "no session needed to ask to join";
  EXPECT_TRUE(admit(encoded(Ping{5}), kMallory).ok);
  EXPECT_TRUE(admit(encoded(StatsRequest{kAdminKey, 1})).ok);
}

TEST_F(Fixture, CookiesBindAddressNonceAndTime) {
  const uint64_t now_ms = 1'000'000;
  const uint32_t period = JoinCookies::period_at(now_ms);
  const uint64_t cookie = cookies.mac(kAlice, 42, period);
  EXPECT_EQ(cookies.verify(kAlice, 42, period, cookie, now_ms), JoinCookies::Verdict::Valid);
  EXPECT_EQ(cookies.verify(kMallory, 42, period, cookie, now_ms), JoinCookies::Verdict::Bad) << "another port";
  SourceAddress other_ip = kAlice;
  other_ip.ip_be ^= 0x01000000;
  EXPECT_EQ(cookies.verify(other_ip, 42, period, cookie, now_ms), JoinCookies::Verdict::Bad) << "another address";
  EXPECT_EQ(cookies.verify(kAlice, 43, period, cookie, now_ms), JoinCookies::Verdict::Bad) << "another nonce";
  EXPECT_EQ(cookies.verify(kAlice, 42, period, cookie ^ 1, now_ms), JoinCookies::Verdict::Bad);
  // Lifetime: valid through the next period, expired after.
  EXPECT_EQ(cookies.verify(kAlice, 42, period, cookie, now_ms + JoinCookies::kPeriodMs), JoinCookies::Verdict::Valid);
  EXPECT_EQ(cookies.verify(kAlice, 42, period, cookie, now_ms + 2 * JoinCookies::kPeriodMs), JoinCookies::Verdict::Expired);
  // A period from the future, even with its own valid MAC, is refused.
  EXPECT_EQ(cookies.verify(kAlice, 42, period + 1, cookies.mac(kAlice, 42, period + 1), now_ms), JoinCookies::Verdict::Bad);
  // Another secret, another cookie.
  JoinCookies other({1, 2});
  EXPECT_NE(other.mac(kAlice, 42, period), cookie);
}

TEST(ReplayWindow, AcceptsNewAndReorderedOnceRefusesReplaysAndTheTooOld) {
  ReplayWindow w;
  EXPECT_TRUE(w.acceptable(100));
  w.record(100);
  EXPECT_FALSE(w.acceptable(100));
  EXPECT_TRUE(w.acceptable(101));
  EXPECT_TRUE(w.acceptable(99)) << "reordered within the window";
  w.record(99);
  EXPECT_FALSE(w.acceptable(99));
  w.record(150);
  EXPECT_TRUE(w.acceptable(120));
  EXPECT_FALSE(w.acceptable(100)) << "seen before the slide";
  EXPECT_TRUE(w.acceptable(87)) << "150 - 63 is the oldest the window holds";
  EXPECT_FALSE(w.acceptable(86)) << "64 below the highest: too old";
  w.record(150 + 1000);
  EXPECT_FALSE(w.acceptable(150)) << "a jump forward clears the window";
  EXPECT_TRUE(w.acceptable(1150 - 63));
}

TEST(ReplayWindow, WrapsAroundTheU32) {
  ReplayWindow w;
  w.record(0xFFFFFFF0u);
  EXPECT_TRUE(w.acceptable(5)) << "5 is 21 ahead of 0xFFFFFFF0 in serial arithmetic";
  w.record(5);
  EXPECT_FALSE(w.acceptable(0xFFFFFFF0u));
  EXPECT_TRUE(w.acceptable(0xFFFFFFF1u));
  EXPECT_FALSE(w.acceptable(5));
}

TEST(ReplayWindow, MatchesAReferenceSetModel) {
  std::mt19937 rng(9);
  ReplayWindow w;
  std::set<uint32_t> seen;
  uint32_t highest = 0;
  bool any = false;
  for (int i = 0; i < 20000; ++i) {
    const uint32_t seq = 1000 + static_cast<uint32_t>(rng() % 400);
    const bool model = !any || seq > highest || (highest - seq < 64 && !seen.count(seq));
    ASSERT_EQ(w.acceptable(seq), model) << "seq " << seq << " highest " << highest;
    if (model) {
      w.record(seq);
      seen.insert(seq);
      if (!any || seq > highest) highest = seq;
      any = true;
    }
  }
}

TEST(TokenBucket, AllowsTheBurstThenTheRate) {
  TokenBucket b(10, 5, 0);
  int taken = 0;
  for (int i = 0; i < 100; ++i) taken += b.take(0);
  EXPECT_EQ(taken, 5) << "the burst, no more, at one instant";
  EXPECT_FALSE(b.take(50'000)) << "half a token after 50 ms";
  EXPECT_TRUE(b.take(100'000)) << "one token after 100 ms";
  taken = 0;
  for (uint64_t t = 100'000; t <= 10'100'000; t += 1'000) taken += b.take(t);
  EXPECT_NEAR(taken, 100, 1) << "10 per second for 10 s";
  EXPECT_FALSE(b.take(5)) << "time going backwards earns nothing";
}

TEST_F(Fixture, PerPlayerRateLimitDropsTheFlood) {
  config.per_player = {10, 20};
  admission = std::make_unique<Admission>(config, cookies);
  join(7, 77);
  int ok = 0;
  int limited = 0;
  for (uint32_t seq = 1; seq <= 100; ++seq) {
    const Admitted a = admit(encoded(move(7, 77, seq)));
    ok += a.ok;
    limited += !a.ok && a.reason == DropReason::RateLimitedPlayer;
  }
  EXPECT_EQ(ok, 20);
  EXPECT_EQ(limited, 80);
  // A limited message's sequence is not recorded: it may come again once tokens return.
  EXPECT_TRUE(admit(encoded(move(7, 77, 50)), kAlice, 50 * kSecondUs + kSecondUs).ok);
}

TEST_F(Fixture, PerAddressRateLimitComesBeforeSessionChecks) {
  config.per_address = {1, 3};
  admission = std::make_unique<Admission>(config, cookies);
  int limited = 0;
  for (int i = 0; i < 10; ++i) limited += admit(encoded(Ping{1}), kMallory).reason == DropReason::RateLimitedAddress;
  EXPECT_EQ(limited, 7);
  EXPECT_TRUE(admit(encoded(Ping{1}), kAlice).ok) << "another address has its own bucket";
  // Bad packets are refused before they cost a token.
  EXPECT_EQ(admit(Bytes(3, 0), kAlice).reason, DropReason::Truncated);
}

// Someone spoofing a player's exact address and port empties that address's bucket with PINGs
// and bad-token moves: the player's own session messages (player, token and source matching
// its session) draw on its player bucket alone and are still admitted; the spoofer's are not.
TEST_F(Fixture, ASpooferOfAPlayersAddressCannotSpendItsSessionsTraffic) {
  config.per_address = {1, 3};
  admission = std::make_unique<Admission>(config, cookies);
  join(7, 77);
  int limited = 0;
  for (int i = 0; i < 10; ++i) limited += admit(encoded(Ping{1})).reason == DropReason::RateLimitedAddress;
  EXPECT_EQ(limited, 7) << "the spoofed PINGs empty Alice's address bucket";
  EXPECT_EQ(admit(encoded(move(7, 78, 1))).reason, DropReason::RateLimitedAddress) << "a wrong token is held to the address's bucket";
  for (uint32_t seq = 1; seq <= 20; ++seq) EXPECT_TRUE(admit(encoded(move(7, 77, seq))).ok) << "Alice's move " << seq;
  EXPECT_EQ(admit(encoded(move(7, 77, 20))).reason, DropReason::Replayed) << "her session's own checks still apply";
}

TEST_F(Fixture, JoinsPerHostAreLimitedWhateverThePortOtherMessagesAreNot) {
  config.per_host_joins = {1, 3};
  admission = std::make_unique<Admission>(config, cookies);
  const uint32_t period = JoinCookies::period_at(50'000);
  auto confirm_from = [&](SourceAddress from, uint64_t now_us = 50 * kSecondUs) {
    return admit(encoded(JoinConfirm{from.port_be, period, cookies.mac(from, from.port_be, period), {}}), from, now_us);
  };
  int limited = 0;
  // Ten confirms with valid cookies from ten ports of one host: the host's bucket holds three.
  for (uint16_t port = 1; port <= 10; ++port) limited += confirm_from(SourceAddress{0x0200007f, port}).reason == DropReason::RateLimitedHost;
  EXPECT_EQ(limited, 7);
  EXPECT_TRUE(confirm_from(SourceAddress{0x0300007f, 1}).ok) << "another host has its own bucket";
  EXPECT_TRUE(admit(encoded(Ping{1}), SourceAddress{0x0200007f, 11}).ok) << "only joins draw on the host's bucket";
  EXPECT_TRUE(admit(encoded(JoinRequest{1}), SourceAddress{0x0200007f, 12}).ok)
      << "a join request is held to the address limit only: it proves nothing about its source";
  EXPECT_EQ(admit(encoded(JoinConfirm{1, period, 0, {}}), SourceAddress{0x0200007f, 13}).reason, DropReason::BadCookie)
      << "a confirm with a bad cookie is refused for it, and spends none of the host's joins";
  EXPECT_TRUE(confirm_from(SourceAddress{0x0200007f, 14}, 60 * kSecondUs).ok) << "the bucket refills";
}

// A party that can spoof a host's address, but never receives there, floods join requests and
// confirms with made-up cookies from that address's ports: none of it reaches the host's join
// bucket, so the host's own confirm still joins.
TEST_F(Fixture, SpoofedJoinsCannotSpendAHostsJoinBucket) {
  config.per_host_joins = {1, 3};
  // Room for every spoofed port, so this is about the host's bucket alone: with 4,096 slots
  // the 1,000 sources' keyed homes left 8 occupied probes in a row in about one run in twenty,
  // and a source that then took over another's slot started with one token (the request's),
  // so its confirm was refused for the address, not the cookie. At 65,536 slots (a load of
  // 1.5%) that takes 8 homes in one 8-slot window: never seen in 20,000 runs.
  config.address_slots_pow2 = 65536;
  admission = std::make_unique<Admission>(config, cookies);
  const uint32_t period = JoinCookies::period_at(50'000);
  for (uint16_t port = 100; port < 1100; ++port) {
    const SourceAddress spoofed{0x0200007f, port};
    EXPECT_TRUE(admit(encoded(JoinRequest{port}), spoofed).ok);
    EXPECT_EQ(admit(encoded(JoinConfirm{port, period, port * 7919ULL, {}}), spoofed).reason, DropReason::BadCookie);
  }
  const SourceAddress victim{0x0200007f, 7};
  EXPECT_TRUE(admit(encoded(JoinConfirm{5, period, cookies.mac(victim, 5, period), {}}), victim).ok);
}

TEST(AddressRateLimiter, ATableFullOfSpoofedSourcesStaysBounded) {
  AddressRateLimiter limiter({1, 1}, 64);
  for (uint32_t ip = 1; ip <= 10000; ++ip) EXPECT_TRUE(limiter.take({ip, 1}, ip)) << "a new source starts with its burst";
  EXPECT_TRUE(limiter.take({20000, 1}, 20000));
  EXPECT_FALSE(limiter.take({20000, 1}, 20000)) << "a remembered source spends its bucket";
}

// A source that spent its bucket and is then pushed out of the table by a flood of other
// sources comes back with one token, not a full burst: eviction forgets the quiet, it does not
// refill the busy. (Before, the newcomer's bucket started full, so a host out of join tokens
// could spoof a few sources at its own slot and get the whole burst back.) While a flood
// churns the table every newcomer starts that way; once the slots have been quiet for a
// refill time, a newcomer gets the whole burst.
TEST(AddressRateLimiter, AFloodNeverRefillsASourceItPushesOut) {
  AddressRateLimiter limiter({1, 100}, 64);
  const SourceAddress busy{0x0100007f, 7};
  const uint64_t t = 1'000'000;
  int taken = 0;
  for (int i = 0; i < 200; ++i) taken += limiter.take(busy, t);
  EXPECT_EQ(taken, 100);
  for (uint32_t i = 1; i <= 10'000; ++i) limiter.take(SourceAddress{htonl(0x0a000000u + i), 9}, t + i);
  taken = 0;
  for (int i = 0; i < 200; ++i) taken += limiter.take(busy, t + 20'000);
  EXPECT_LE(taken, 1) << "pushed out and back within a refill time: one token at most";
  // Once the flood's sources have been quiet for a whole refill time (100 tokens at 1/s), a
  // newcomer that takes over one of their slots owes nothing: it starts with the burst.
  taken = 0;
  for (int i = 0; i < 200; ++i) taken += limiter.take(SourceAddress{0x0200007f, 7}, t + 200'000'000);
  EXPECT_EQ(taken, 100);
}

TEST(SessionTable, InsertFindRemoveAcrossManyChurns) {
  SessionTable table(100);
  std::mt19937_64 rng(3);
  std::map<uint64_t, SourceAddress> model;
  for (int i = 0; i < 20000; ++i) {
    if (model.size() < 100 && (rng() % 2 == 0 || model.empty())) {
      const uint64_t id = 1 + rng() % 5000;
      const SourceAddress src{static_cast<uint32_t>(rng()) | 1, static_cast<uint16_t>(rng())};
      Session s;
      s.player_id = id;
      s.source = src;
      bool src_taken = false;
      for (const auto& [pid, a] : model) src_taken |= a == src;
      Session* got = table.insert(s);
      if (model.count(id) || src_taken) {
        EXPECT_EQ(got, nullptr);
      } else {
        ASSERT_NE(got, nullptr);
        model[id] = src;
      }
    } else {
      auto it = model.begin();
      std::advance(it, static_cast<long>(rng() % model.size()));
      Session* s = table.find_player(it->first);
      ASSERT_NE(s, nullptr);
      ASSERT_EQ(table.find_source(it->second), s);
      table.remove(s);
      EXPECT_EQ(table.find_player(it->first), nullptr);
      EXPECT_EQ(table.find_source(it->second), nullptr);
      model.erase(it);
    }
    ASSERT_EQ(table.size(), model.size());
  }
  for (const auto& [id, src] : model) {
    ASSERT_NE(table.find_player(id), nullptr);
    EXPECT_EQ(table.find_player(id)->source, src);
  }
  EXPECT_EQ(table.insert(Session{}), nullptr) << "player id 0 is never a session";
}

TEST(SessionTable, RefusesWhenFull) {
  SessionTable table(2);
  Session a;
  a.player_id = 1;
  a.source = {1, 1};
  Session b = a;
  b.player_id = 2;
  b.source = {2, 2};
  Session c = a;
  c.player_id = 3;
  c.source = {3, 3};
  EXPECT_NE(table.insert(a), nullptr);
  EXPECT_NE(table.insert(b), nullptr);
  EXPECT_EQ(table.insert(c), nullptr);
}

TEST(AdminKey, DisabledKeyMatchesNothing) {
  EXPECT_FALSE(admin_key_matches(0, 0));
  EXPECT_TRUE(admin_key_matches(5, 5));
  EXPECT_FALSE(admin_key_matches(5, 4));
}

// A full send batch hands out no slot (an encoder writes nothing into it and returns 0, and a
// commit of 0 bytes is a no-op), so an over-long receive batch's replies cannot write past it;
// the worker flushes first (Worker::send_reply).
TEST(SendBatchLimits, AFullBatchHandsOutNoSlotAndKeepsItsCount) {
  auto batch = std::make_unique<SendBatch>();
  for (size_t i = 0; i < kBatchMax; ++i) {
    ASSERT_FALSE(batch->full());
    batch->commit(kAlice, encode(Pong{i, i}, batch->slot()));
  }
  EXPECT_TRUE(batch->full());
  EXPECT_TRUE(batch->slot().empty());
  EXPECT_EQ(encode(Pong{1, 1}, batch->slot()), 0u);
  batch->commit(kAlice, encode(Pong{1, 1}, batch->slot()));
  EXPECT_EQ(batch->size(), kBatchMax);
}

// A reply the kernel refuses outright (here: to port 0, EINVAL) costs only itself: every other
// reply of the batch, before and after it, is sent, and the refused ones are counted failed
// (before, each refusal spent up to two of the batch's eight retries, and a few of them in one
// batch gave up on every reply queued behind them).
TEST(SendBatchLimits, AnUnanswerableDestinationCostsOnlyItsOwnReply) {
  const int receiver = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK, 0);
  const int sender = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK, 0);
  ASSERT_GE(receiver, 0);
  ASSERT_GE(sender, 0);
  sockaddr_in bound{};
  bound.sin_family = AF_INET;
  bound.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(bind(receiver, reinterpret_cast<sockaddr*>(&bound), sizeof(bound)), 0);
  socklen_t len = sizeof(bound);
  ASSERT_EQ(getsockname(receiver, reinterpret_cast<sockaddr*>(&bound), &len), 0);
  const SourceAddress good{bound.sin_addr.s_addr, bound.sin_port};
  const SourceAddress unanswerable{bound.sin_addr.s_addr, 0};
  auto batch = std::make_unique<SendBatch>();
  size_t refused = 0;
  for (size_t i = 0; i < kBatchMax; ++i) {
    const bool bad = i % 5 == 2;  // 13 of 64, spread through the batch
    refused += bad;
    batch->commit(bad ? unanswerable : good, encode(Pong{i, i}, batch->slot()));
  }
  const SendOutcome outcome = batch->flush(sender);
  EXPECT_EQ(outcome.sent, kBatchMax - refused);
  EXPECT_EQ(outcome.failed, refused);
  EXPECT_LE(outcome.calls, kBatchMax + static_cast<size_t>(kSendRetriesMax));
  std::array<uint8_t, 256> buf{};
  size_t received = 0;
  while (recv(receiver, buf.data(), buf.size(), MSG_DONTWAIT) > 0) ++received;
  EXPECT_EQ(received, kBatchMax - refused) << "every reply to a reachable player arrived";
  close(sender);
  close(receiver);
}

}  // namespace

TEST(AoiRoundOrder, ZOrderInterleavesTheSquaresBitsXFirst) {
  EXPECT_EQ(AoiRoundOrder::z_order(0, 0), 0u);
  EXPECT_EQ(AoiRoundOrder::z_order(1, 0), 1u);
  EXPECT_EQ(AoiRoundOrder::z_order(0, 1), 2u);
  EXPECT_EQ(AoiRoundOrder::z_order(3, 3), 15u);
  EXPECT_EQ(AoiRoundOrder::z_order(0xFFFF, 0), 0x55555555u);
  EXPECT_EQ(AoiRoundOrder::z_order(0xFFFF, 0xFFFF), 0xFFFFFFFFu);
}

TEST(AoiRoundOrder, AnyCoordinateMapsToASquareOnTheCurve) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  EXPECT_EQ(AoiRoundOrder::square_of(0.0f), 0u);
  EXPECT_EQ(AoiRoundOrder::square_of(3.99f), 0u);
  EXPECT_EQ(AoiRoundOrder::square_of(4.0f), 1u);
  EXPECT_EQ(AoiRoundOrder::square_of(4095.0f), 1023u);
  EXPECT_EQ(AoiRoundOrder::square_of(-1.0f), 0u);
  EXPECT_EQ(AoiRoundOrder::square_of(-inf), 0u);
  EXPECT_EQ(AoiRoundOrder::square_of(nan), 0u);
  EXPECT_EQ(AoiRoundOrder::square_of(1e30f), AoiRoundOrder::kSquaresMax - 1);
  EXPECT_EQ(AoiRoundOrder::square_of(inf), AoiRoundOrder::kSquaresMax - 1);
}

// Every live session exactly once, none that left, in Z-order of their squares (ties by pool
// slot), through churn: checked against the order computed independently.
TEST(AoiRoundOrder, VisitsEveryLiveSessionOnceByWhereItsPlayerStands) {
  SessionTable table(64);
  AoiRoundOrder order(table.capacity());
  std::mt19937_64 rng(11);
  uint64_t next_id = 1;
  for (int round = 0; round < 200; ++round) {
    if (table.size() < 64 && (rng() % 3 != 0 || table.size() == 0)) {
      Session s;
      s.player_id = next_id++;
      s.source = {static_cast<uint32_t>(s.player_id), 1};
      s.x_m = static_cast<float>(rng() % 4096) + 0.5f;
      s.y_m = static_cast<float>(rng() % 4096) + 0.5f;
      ASSERT_NE(table.insert(s), nullptr);
    } else {
      std::vector<Session*> live;
      table.for_each([&](Session& s) { live.push_back(&s); });
      table.remove(live[rng() % live.size()]);
    }
    order.order(table);
    std::vector<std::pair<uint32_t, uint32_t>> expected;  // (z, slot)
    for (size_t i = 0; i < table.capacity(); ++i) {
      if (const Session* s = table.at(i)) {
        const uint32_t sx = static_cast<uint32_t>(s->x_m / 4.0f), sy = static_cast<uint32_t>(s->y_m / 4.0f);
        uint32_t z = 0;
        for (int b = 0; b < 16; ++b) z |= ((sx >> b) & 1u) << (2 * b) | ((sy >> b) & 1u) << (2 * b + 1);
        expected.emplace_back(z, static_cast<uint32_t>(i));
      }
    }
    std::sort(expected.begin(), expected.end());
    ASSERT_EQ(order.size(), table.size());
    for (size_t i = 0; i < order.size(); ++i) ASSERT_EQ(order.slot(i), expected[i].second) << "place " << i;
  }
}

TEST(AoiRoundOrder, NeighboursComeTogetherWhateverOrderTheyJoinedIn) {
  SessionTable table(8);
  AoiRoundOrder order(table.capacity());
  const float places[][2] = {{10, 10}, {3000, 3000}, {11, 11}, {3001, 3001}, {12, 10}, {3002, 3000}};
  for (size_t i = 0; i < std::size(places); ++i) {
    Session s;
    s.player_id = i + 1;
    s.source = {static_cast<uint32_t>(i + 1), 1};
    s.x_m = places[i][0];
    s.y_m = places[i][1];
    ASSERT_NE(table.insert(s), nullptr);
  }
  order.order(table);
  ASSERT_EQ(order.size(), 6u);
  std::vector<uint64_t> players;
  for (size_t i = 0; i < order.size(); ++i) players.push_back(table.at(order.slot(i))->player_id);
  EXPECT_EQ(players, (std::vector<uint64_t>{1, 3, 5, 2, 4, 6})) << "the three near (10, 10) first, then the three near (3000, 3000)";
}
