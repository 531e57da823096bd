// connect_token.cpp: connect token layout, verification (libsodium's Ed25519) and key files.
#include "net/connect_token.hpp"

#include <sodium.h>
#include <sys/stat.h>

#include <algorithm>
#include <cstring>
#include <fstream>

namespace mmo::net {
namespace {

uint64_t u64_at(const uint8_t* p) {
  uint64_t v;
  std::memcpy(&v, p, sizeof v);  // little-endian, as the codec (static_assert in protocol.hpp)
  return v;
}

bool all_zero(const uint8_t* p, size_t n) {
  uint8_t any = 0;
  for (size_t i = 0; i < n; ++i) any |= p[i];
  return any == 0;
}

std::string hex_of(const uint8_t* p, size_t n) {
  std::string out(n * 2 + 1, '\0');
  sodium_bin2hex(out.data(), out.size(), p, n);
  out.pop_back();
  return out;
}

std::optional<std::array<uint8_t, 32>> read_hex_key(const std::string& path, const char* what, std::string& error) {
  std::ifstream f(path);
  if (!f) {
    error = std::string("cannot read the token ") + what + " " + path;
    return std::nullopt;
  }
  std::string text;
  std::getline(f, text);
  while (!text.empty() && (text.back() == '\r' || text.back() == ' ')) text.pop_back();
  std::array<uint8_t, 32> key{};
  size_t len = 0;
  const char* end = nullptr;
  if (text.size() != 64 || sodium_hex2bin(key.data(), key.size(), text.data(), text.size(), nullptr, &len, &end) != 0 || len != key.size()) {
    error = path + ": not a token " + what + " (one line of 64 hex digits, as mmo-token keygen writes)";
    return std::nullopt;
  }
  return key;
}

bool write_key_file(const std::string& path, const uint8_t* key, size_t n, mode_t mode, std::string& error) {
  const std::string tmp = path + ".tmp";
  {
    std::ofstream f(tmp, std::ios::trunc);
    if (!f) {
      error = "cannot write " + tmp;
      return false;
    }
    if (chmod(tmp.c_str(), mode) != 0) {
      error = "cannot set the mode of " + tmp;
      return false;
    }
    f << hex_of(key, n) << '\n';
    if (!f.flush()) {
      error = "cannot write " + tmp;
      return false;
    }
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    error = "cannot rename " + tmp + " to " + path;
    return false;
  }
  return true;
}

}  // namespace

bool token_crypto_ready() {
  static const bool ready = sodium_init() >= 0;
  return ready;
}

TokenSigningMessage token_signing_message(std::span<const uint8_t, kTokenSize> token) {
  TokenSigningMessage message{};
  std::memcpy(message.data(), kTokenSigningContext.data(), kTokenSigningContext.size());
  std::memcpy(message.data() + kTokenSigningContext.size(), token.data(), kTokenClaimsSize);
  return message;
}

bool parse_token_claims(std::span<const uint8_t, kTokenSize> token, TokenClaims& out) {
  const uint8_t* p = token.data();
  const size_t count = p[25];
  if (count == 0 || count > kTokenMaxServers) return false;
  if (!all_zero(p + 26, 6)) return false;
  for (size_t i = 0; i < count; ++i) {
    if (!all_zero(p + 32 + i * 8 + 6, 2)) return false;
  }
  if (!all_zero(p + 32 + count * 8, kTokenClaimsSize - 32 - count * 8)) return false;
  TokenClaims c;
  c.account_id = u64_at(p);
  c.expires_unix_ms = u64_at(p + 8);
  c.token_id = u64_at(p + 16);
  c.faction = p[24];
  c.server_count = static_cast<uint8_t>(count);
  if (c.account_id == 0 || c.token_id == 0) return false;
  for (size_t i = 0; i < count; ++i) {
    const uint8_t* s = p + 32 + i * 8;
    std::memcpy(&c.servers[i].ip_be, s, 4);  // the address's bytes in network order
    c.servers[i].port = static_cast<uint16_t>(s[4] | (s[5] << 8));
  }
  out = c;
  return true;
}

void write_token_claims(const TokenClaims& c, std::span<uint8_t, kTokenSize> token) {
  uint8_t* p = token.data();
  std::memset(p, 0, kTokenClaimsSize);
  std::memcpy(p, &c.account_id, 8);
  std::memcpy(p + 8, &c.expires_unix_ms, 8);
  std::memcpy(p + 16, &c.token_id, 8);
  p[24] = c.faction;
  p[25] = c.server_count;
  for (size_t i = 0; i < std::min<size_t>(c.server_count, kTokenMaxServers); ++i) {
    uint8_t* s = p + 32 + i * 8;
    std::memcpy(s, &c.servers[i].ip_be, 4);
    s[4] = static_cast<uint8_t>(c.servers[i].port & 0xff);
    s[5] = static_cast<uint8_t>(c.servers[i].port >> 8);
  }
}

TokenVerifier::TokenVerifier(std::array<uint8_t, kTokenPublicKeySize> public_key, TokenServer server, uint64_t max_lifetime_ms)
    : public_key_(public_key), server_(server), max_lifetime_ms_(max_lifetime_ms) {}

TokenVerdict TokenVerifier::verify(std::span<const uint8_t, kTokenSize> token, uint64_t now_unix_ms, TokenClaims& claims) const {
  TokenClaims c;
  if (!parse_token_claims(token, c)) return TokenVerdict::Malformed;
  if (c.expires_unix_ms <= now_unix_ms || c.expires_unix_ms - now_unix_ms > max_lifetime_ms_) return TokenVerdict::Expired;
  bool named = false;
  for (size_t i = 0; i < c.server_count; ++i) {
    // A server bound to 0.0.0.0 knows its port, not which of its addresses the client used.
    named |= c.servers[i].port == server_.port && (server_.ip_be == 0 || c.servers[i].ip_be == server_.ip_be);
  }
  if (!named) return TokenVerdict::WrongServer;
  const TokenSigningMessage message = token_signing_message(token);
  if (!token_crypto_ready() ||
      crypto_sign_verify_detached(token.data() + kTokenClaimsSize, message.data(), message.size(), public_key_.data()) != 0) {
    return TokenVerdict::BadSignature;
  }
  claims = c;
  return TokenVerdict::Valid;
}

std::optional<std::array<uint8_t, kTokenPublicKeySize>> read_token_public_key(const std::string& path, std::string& error) {
  return read_hex_key(path, "public key", error);
}

std::optional<std::array<uint8_t, kTokenPublicKeySize>> development_token_key(const std::string& dir, std::string& error) {
  const std::string public_path = dir + "/dev-token.pub";
  const std::string secret_path = dir + "/dev-token.secret";
  struct stat st {};
  if (stat(public_path.c_str(), &st) == 0) return read_token_public_key(public_path, error);
  if (!token_crypto_ready()) {
    error = "libsodium failed to initialise";
    return std::nullopt;
  }
  if (mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST) {
    error = "cannot create the data directory " + dir;
    return std::nullopt;
  }
  // The 32-byte seed is what mmo-token keygen's .secret holds (ed25519-dalek's SigningKey).
  std::array<uint8_t, crypto_sign_SEEDBYTES> seed{};
  randombytes_buf(seed.data(), seed.size());
  std::array<uint8_t, crypto_sign_PUBLICKEYBYTES> public_key{};
  std::array<uint8_t, crypto_sign_SECRETKEYBYTES> secret_key{};
  crypto_sign_seed_keypair(public_key.data(), secret_key.data(), seed.data());
  sodium_memzero(secret_key.data(), secret_key.size());
  const bool ok = write_key_file(secret_path, seed.data(), seed.size(), 0600, error) && write_key_file(public_path, public_key.data(), public_key.size(), 0644, error);
  sodium_memzero(seed.data(), seed.size());
  if (!ok) return std::nullopt;
  std::array<uint8_t, kTokenPublicKeySize> key{};
  std::memcpy(key.data(), public_key.data(), key.size());
  return key;
}

}  // namespace mmo::net
