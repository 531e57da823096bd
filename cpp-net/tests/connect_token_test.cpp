// Connect tokens on the server's side: the verifier against the committed vector the Rust
// minter produces (docs/connect-token-vectors.txt), every refusal and its order, hostile
// bytes, key files and the development key pair; the directory's account rules (one live
// session per account, one session per token, saved positions).
#include <gtest/gtest.h>
#include <sodium.h>
#include <arpa/inet.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>

#include <fstream>
#include <map>
#include <random>
#include <sstream>
#include <string>

#include "net/admission.hpp"
#include "net/connect_token.hpp"

namespace mmo::net {
namespace {

std::map<std::string, std::string> vectors() {
  std::ifstream in(MMO_TOKEN_VECTORS_FILE);
  std::map<std::string, std::string> v;
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream fields(line);
    std::string name, hex;
    fields >> name >> hex;
    v[name] = hex;
  }
  return v;
}

template <size_t N>
std::array<uint8_t, N> from_hex(const std::string& hex) {
  std::array<uint8_t, N> out{};
  size_t len = 0;
  EXPECT_EQ(sodium_hex2bin(out.data(), N, hex.data(), hex.size(), nullptr, &len, nullptr), 0);
  EXPECT_EQ(len, N);
  return out;
}

// The vector's token: account 42, faction 2, token id 0x1122334455667788, expires at
// 1,800,000,000,000 ms, valid for 127.0.0.1:4000.
constexpr uint64_t kVectorExpiry = 1'800'000'000'000ULL;
const TokenServer kVectorServer{htonl(0x7F000001), 4000};

struct Fixture {
  std::array<uint8_t, kTokenPublicKeySize> public_key;
  std::array<uint8_t, kTokenSize> token;
  std::array<uint8_t, 32> seed;
  Fixture() {
    EXPECT_TRUE(token_crypto_ready());
    auto v = vectors();
    public_key = from_hex<kTokenPublicKeySize>(v.at("public_key"));
    token = from_hex<kTokenSize>(v.at("token"));
    seed = from_hex<32>(v.at("secret_seed"));
  }
  // Re-signs edited claims with the vector's key (libsodium's seed keypair = ed25519-dalek's).
  void resign(std::array<uint8_t, kTokenSize>& t) const {
    std::array<uint8_t, crypto_sign_PUBLICKEYBYTES> pk{};
    std::array<uint8_t, crypto_sign_SECRETKEYBYTES> sk{};
    crypto_sign_seed_keypair(pk.data(), sk.data(), seed.data());
    const TokenSigningMessage m = token_signing_message(t);
    crypto_sign_detached(t.data() + kTokenClaimsSize, nullptr, m.data(), m.size(), sk.data());
  }
};

TEST(ConnectToken, TheRustMintedVectorVerifiesWithItsClaims) {
  Fixture f;
  const TokenVerifier verifier(f.public_key, kVectorServer, 1'000'000'000'000ULL);
  TokenClaims c;
  ASSERT_EQ(verifier.verify(f.token, kVectorExpiry - 1, c), TokenVerdict::Valid);
  EXPECT_EQ(c.account_id, 42u);
  EXPECT_EQ(c.faction, 2);
  EXPECT_EQ(c.token_id, 0x1122334455667788ULL);
  EXPECT_EQ(c.expires_unix_ms, kVectorExpiry);
  ASSERT_EQ(c.server_count, 1);
  EXPECT_EQ(c.servers[0], kVectorServer);
}

TEST(ConnectToken, EveryRefusalInItsOrder) {
  Fixture f;
  const uint64_t now = kVectorExpiry - 60'000;
  const TokenVerifier verifier(f.public_key, kVectorServer, 120'000);
  TokenClaims c;
  c.account_id = 7;  // untouched unless valid
  EXPECT_EQ(verifier.verify(f.token, kVectorExpiry, c), TokenVerdict::Expired) << "expires at its expiry";
  EXPECT_EQ(verifier.verify(f.token, kVectorExpiry - 120'001, c), TokenVerdict::Expired) << "further ahead than the longest lifetime";
  EXPECT_EQ(c.account_id, 7u);
  EXPECT_EQ(TokenVerifier(f.public_key, TokenServer{kVectorServer.ip_be, 4001}, 120'000).verify(f.token, now, c), TokenVerdict::WrongServer);
  EXPECT_EQ(TokenVerifier(f.public_key, TokenServer{htonl(0x7F000002), 4000}, 120'000).verify(f.token, now, c), TokenVerdict::WrongServer);
  EXPECT_EQ(TokenVerifier(f.public_key, TokenServer{0, 4000}, 120'000).verify(f.token, now, c), TokenVerdict::Valid)
      << "a server bound to 0.0.0.0 matches on its port";
  std::array<uint8_t, kTokenPublicKeySize> other{};
  other[0] = 1;
  EXPECT_EQ(TokenVerifier(other, kVectorServer, 120'000).verify(f.token, now, c), TokenVerdict::BadSignature);
  // A malformed token is refused before anything else, even if expired and for another server.
  auto t = f.token;
  t[26] = 1;
  EXPECT_EQ(verifier.verify(t, kVectorExpiry + 1, c), TokenVerdict::Malformed);
  // Claims edited and re-signed: the layout rules hold whatever the signature.
  for (const auto& [at, value] : std::vector<std::pair<size_t, uint8_t>>{{25, 0}, {25, 4}, {31, 1}, {38, 1}, {40, 9}, {63, 1}}) {
    auto edited = f.token;
    edited[at] = value;
    f.resign(edited);
    EXPECT_EQ(verifier.verify(edited, now, c), TokenVerdict::Malformed) << "byte " << at << " = " << +value;
  }
  auto zero_account = f.token;
  std::fill(zero_account.begin(), zero_account.begin() + 8, 0);
  f.resign(zero_account);
  EXPECT_EQ(verifier.verify(zero_account, now, c), TokenVerdict::Malformed);
  // A re-signed token naming a second server is valid for either.
  auto two = f.token;
  two[25] = 2;
  const uint32_t ip2 = htonl(0x0A000001);
  std::memcpy(two.data() + 40, &ip2, 4);
  two[44] = 0x61;
  two[45] = 0x1e;  // port 7777
  f.resign(two);
  EXPECT_EQ(TokenVerifier(f.public_key, TokenServer{ip2, 7777}, 120'000).verify(two, now, c), TokenVerdict::Valid);
  EXPECT_EQ(c.server_count, 2);
}

TEST(ConnectToken, NoFlippedBitAndNoRandomTokenIsAccepted) {
  Fixture f;
  const uint64_t now = kVectorExpiry - 60'000;
  const TokenVerifier verifier(f.public_key, kVectorServer, 120'000);
  TokenClaims c;
  for (size_t bit = 0; bit < kTokenSize * 8; ++bit) {
    auto t = f.token;
    t[bit / 8] ^= static_cast<uint8_t>(1u << (bit % 8));
    EXPECT_NE(verifier.verify(t, now, c), TokenVerdict::Valid) << "bit " << bit;
  }
  std::mt19937_64 rng(19);
  for (int i = 0; i < 20'000; ++i) {
    std::array<uint8_t, kTokenSize> t{};
    for (auto& b : t) b = static_cast<uint8_t>(rng());
    if (i % 2 == 0) std::memcpy(t.data() + 24, f.token.data() + 24, 40);  // a plausible layout, random claims and signature
    EXPECT_NE(verifier.verify(t, now, c), TokenVerdict::Valid);
  }
}

TEST(ConnectToken, PublicKeyFilesAndTheDevelopmentPair) {
  const std::string dir = ::testing::TempDir() + "mmo-token-test-" + std::to_string(getpid());
  std::string error;
  const auto key = development_token_key(dir, error);
  ASSERT_TRUE(key) << error;
  struct stat st {};
  ASSERT_EQ(stat((dir + "/dev-token.secret").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u) << "the secret is the owner's only";
  const auto again = development_token_key(dir, error);
  ASSERT_TRUE(again);
  EXPECT_EQ(*again, *key) << "an existing pair is kept";
  // The secret file's seed derives the public key (what the Rust minter does with it).
  std::ifstream secret(dir + "/dev-token.secret");
  std::string seed_hex;
  secret >> seed_hex;
  const auto seed = from_hex<32>(seed_hex);
  std::array<uint8_t, crypto_sign_PUBLICKEYBYTES> pk{};
  std::array<uint8_t, crypto_sign_SECRETKEYBYTES> sk{};
  crypto_sign_seed_keypair(pk.data(), sk.data(), seed.data());
  EXPECT_EQ(std::memcmp(pk.data(), key->data(), pk.size()), 0);
  for (const char* bad : {"", "zz", "0123", "ea4a6c63e29c520abef5507b132ec5f9954776aebebe7b92421eea691446d22", "not a key at all"}) {
    const std::string path = dir + "/bad.pub";
    std::ofstream(path) << bad << "\n";
    error.clear();
    EXPECT_FALSE(read_token_public_key(path, error)) << bad;
    EXPECT_NE(error.find("not a token public key"), std::string::npos) << error;
  }
  EXPECT_FALSE(read_token_public_key(dir + "/missing.pub", error));
}

TEST(UsedTokens, RememberedUntilExpiryThenTheSlotIsFree) {
  UsedTokens used(16);
  EXPECT_FALSE(used.used(5, 1000));
  ASSERT_TRUE(used.record(5, 2000, 1000));
  EXPECT_TRUE(used.used(5, 1999));
  EXPECT_FALSE(used.used(5, 2000)) << "expired: the expiry check refuses it anyway";
  for (uint64_t id = 100; id < 115; ++id) ASSERT_TRUE(used.record(id, 5000, 1000));
  EXPECT_FALSE(used.record(115, 5000, 1000)) << "token 5 and fifteen more, all unexpired, fill sixteen slots";
  EXPECT_TRUE(used.record(115, 5000, 2000)) << "token 5 expired: its slot is free";
  EXPECT_FALSE(used.record(116, 5000, 2000));
  EXPECT_TRUE(used.record(116, 9000, 5000)) << "once they expire, their slots are free";
  EXPECT_TRUE(used.used(116, 5000));
  EXPECT_FALSE(used.used(100, 5000));
}

TEST(SessionDirectoryAccounts, OneLiveSessionPerAccountAndOneSessionPerToken) {
  SessionDirectory d(DirectoryLimits{16, 0, 64, 16});
  const SourceAddress a{0x0100007f, 1000}, b{0x0200007f, 1000};
  ASSERT_EQ(d.add(DirectoryJoin{1, 11, a, 77, 500, 10'000}, 1000), DirectoryAdd::Added);
  EXPECT_EQ(d.precheck(b, 77, 501, 1000), DirectoryAdd::AccountLiveElsewhere);
  EXPECT_EQ(d.add(DirectoryJoin{2, 12, b, 77, 501, 10'000}, 1000), DirectoryAdd::AccountLiveElsewhere);
  EXPECT_EQ(d.add(DirectoryJoin{2, 12, b, 78, 500, 10'000}, 1000), DirectoryAdd::TokenUsed) << "token 500 admitted player 1";
  d.remove(1, 123.5f, 456.25f);
  float x = 0, y = 0;
  ASSERT_TRUE(d.saved_position(77, x, y));
  EXPECT_EQ(x, 123.5f);
  EXPECT_EQ(y, 456.25f);
  EXPECT_FALSE(d.saved_position(78, x, y));
  EXPECT_EQ(d.add(DirectoryJoin{3, 13, b, 77, 500, 10'000}, 1000), DirectoryAdd::TokenUsed) << "a replayed token, its session gone";
  EXPECT_EQ(d.add(DirectoryJoin{3, 13, b, 77, 502, 10'000}, 1000), DirectoryAdd::Added) << "a fresh token for the account";
  // A refused add leaves nothing behind: a full table does not mark the token used.
  SessionDirectory one(DirectoryLimits{1, 0, 64, 16});
  ASSERT_EQ(one.add(DirectoryJoin{1, 11, a, 1, 900, 10'000}, 1000), DirectoryAdd::Added);
  EXPECT_EQ(one.add(DirectoryJoin{2, 12, b, 2, 901, 10'000}, 1000), DirectoryAdd::Full);
  one.remove(1);
  EXPECT_EQ(one.add(DirectoryJoin{2, 12, b, 2, 901, 10'000}, 1000), DirectoryAdd::Added) << "token 901 was not used by the refusal";
  const SourceAddress c{0x0300007f, 1000};
  EXPECT_EQ(d.add(DirectoryJoin{4, 14, c, 79, 500, 10'000}, 10'000), DirectoryAdd::Added) << "token 500 expired: forgotten, refused by expiry anyway";
}

}  // namespace
}  // namespace mmo::net
