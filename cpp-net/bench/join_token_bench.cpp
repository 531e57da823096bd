// join_token_bench: what a connect token costs the front per JOIN_CONFIRM (TokenVerifier::
// verify, libsodium's Ed25519), for each way a token can end: valid, a bad signature (what a
// forger makes the server pay), expired and malformed (refused before the signature). Prints
// the median and the fastest of several rounds, nanoseconds per token.
//
//   build/cpp/join_token_bench [--rounds N] [--tokens N]
//
// A benchmark, not a test: it asserts only that each kind got its verdict.
#include <sodium.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "net/connect_token.hpp"

namespace {

using mmo::net::kTokenClaimsSize;
using mmo::net::kTokenSize;
using Token = std::array<uint8_t, kTokenSize>;

constexpr uint64_t kNowUnixMs = 1'800'000'000'000ULL;
const mmo::net::TokenServer kServer{0x0100007f, 7777};

Token mint(const std::array<uint8_t, crypto_sign_SECRETKEYBYTES>& secret, uint64_t account, uint64_t expires) {
  mmo::net::TokenClaims claims;
  claims.account_id = account;
  claims.expires_unix_ms = expires;
  claims.token_id = account * 0x9E3779B97F4A7C15ULL | 1;
  claims.faction = 1;
  claims.server_count = 1;
  claims.servers[0] = kServer;
  Token t{};
  mmo::net::write_token_claims(claims, t);
  const auto m = mmo::net::token_signing_message(t);
  crypto_sign_detached(t.data() + kTokenClaimsSize, nullptr, m.data(), m.size(), secret.data());
  return t;
}

struct Row {
  const char* kind;
  mmo::net::TokenVerdict expected;
  std::vector<Token> tokens;
};

}  // namespace

int main(int argc, char** argv) {
  int rounds = 7;
  size_t count = 2000;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (std::string(argv[i]) == "--rounds") rounds = std::max(1, std::atoi(argv[i + 1]));
    if (std::string(argv[i]) == "--tokens") count = std::max<size_t>(1, std::strtoul(argv[i + 1], nullptr, 10));
  }
  if (!mmo::net::token_crypto_ready()) return 2;
  std::array<uint8_t, crypto_sign_PUBLICKEYBYTES> public_key{};
  std::array<uint8_t, crypto_sign_SECRETKEYBYTES> secret{};
  crypto_sign_keypair(public_key.data(), secret.data());
  const mmo::net::TokenVerifier verifier(public_key, kServer, 120'000);

  std::vector<Row> rows = {{"valid", mmo::net::TokenVerdict::Valid, {}},
                           {"bad signature", mmo::net::TokenVerdict::BadSignature, {}},
                           {"expired", mmo::net::TokenVerdict::Expired, {}},
                           {"malformed", mmo::net::TokenVerdict::Malformed, {}}};
  for (size_t i = 0; i < count; ++i) {
    const uint64_t account = i + 1;
    rows[0].tokens.push_back(mint(secret, account, kNowUnixMs + 60'000));
    Token forged = mint(secret, account, kNowUnixMs + 60'000);
    forged[kTokenClaimsSize + (i % 64)] ^= 0x20;
    rows[1].tokens.push_back(forged);
    rows[2].tokens.push_back(mint(secret, account, kNowUnixMs - 1));
    Token malformed = rows[0].tokens.back();
    malformed[25] = 0;
    rows[3].tokens.push_back(malformed);
  }
  std::printf("join_token_bench: %zu tokens of each kind, %d rounds, libsodium %s\n", count, rounds, sodium_version_string());
  std::printf("%-14s %14s %14s %12s\n", "token", "median ns/op", "fastest ns/op", "per core/s");
  int status = 0;
  for (const Row& row : rows) {
    std::vector<double> per_op;
    for (int r = 0; r < rounds; ++r) {
      size_t right = 0;
      const auto t0 = std::chrono::steady_clock::now();
      for (const Token& t : row.tokens) {
        mmo::net::TokenClaims claims;
        right += verifier.verify(t, kNowUnixMs, claims) == row.expected;
      }
      const auto t1 = std::chrono::steady_clock::now();
      if (right != row.tokens.size()) {
        std::fprintf(stderr, "join_token_bench: %s: %zu of %zu got the expected verdict\n", row.kind, right, row.tokens.size());
        status = 1;
      }
      per_op.push_back(std::chrono::duration<double, std::nano>(t1 - t0).count() / static_cast<double>(row.tokens.size()));
    }
    std::sort(per_op.begin(), per_op.end());
    const double median = per_op[per_op.size() / 2];
    std::printf("%-14s %14.0f %14.0f %12.0f\n", row.kind, median, per_op.front(), 1e9 / median);
  }
  return status;
}
