// connect_token.hpp: the server's side of connect tokens (docs/protocol.md, "Connect tokens").
//
// A JOIN_CONFIRM carries a 128-byte token the game's backend signed with Ed25519: 64 bytes of
// claims (account, expiry, a unique token id, the account's faction, 1-3 server addresses)
// and the signature over a context string and those claims. A game server holds only the
// public key (libsodium verifies), so a stolen server cannot mint tokens; the backend mints
// (loadtest/src/token.rs, `mmo-token`). Checked here: the layout, the expiry and how far
// ahead it lies, that this server is named, and the signature, cheapest first; what needs the
// server's shared state (one live session per account, a token used once) is the session
// directory's. Nothing allocates.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>

#include "net/protocol.hpp"

namespace mmo::net {

inline constexpr size_t kTokenSize = wire::kConnectTokenSize;
inline constexpr size_t kTokenClaimsSize = 64;
inline constexpr size_t kTokenMaxServers = 3;
inline constexpr size_t kTokenPublicKeySize = 32;
// Prefixed to the claims before signing: no other message of the backend's key passes.
inline constexpr std::array<uint8_t, 20> kTokenSigningContext = {'M', 'M', 'O', '-', 'C', 'O', 'N', 'N', 'E', 'C',
                                                                 'T', '-', 'T', 'O', 'K', 'E', 'N', '-', 'v', '1'};
static_assert(kTokenClaimsSize + 64 == kTokenSize);
static_assert(32 + kTokenMaxServers * 8 <= kTokenClaimsSize);

// One IPv4 server address a token names: address in network byte order, port in host order.
struct TokenServer {
  uint32_t ip_be = 0;
  uint16_t port = 0;
  bool operator==(const TokenServer&) const = default;
};

// What a token says, read from its claims.
struct TokenClaims {
  uint64_t account_id = 0;
  uint64_t expires_unix_ms = 0;
  uint64_t token_id = 0;
  uint8_t faction = 0;
  uint8_t server_count = 0;
  std::array<TokenServer, kTokenMaxServers> servers{};
};

// Every way a token can be refused here, in checking order.
enum class TokenVerdict : uint8_t {
  Valid,
  Malformed,     // a reserved byte set, account or token id 0, 0 or more than 3 servers
  Expired,       // its expiry has passed, or lies further ahead than the longest lifetime allowed
  WrongServer,   // it does not name this server's address
  BadSignature,  // the signature is not the configured key's over these claims
};

// What the signature covers: the context string, then the token's 64 bytes of claims.
using TokenSigningMessage = std::array<uint8_t, kTokenSigningContext.size() + kTokenClaimsSize>;
TokenSigningMessage token_signing_message(std::span<const uint8_t, kTokenSize> token);

// Reads the claims' layout (no signature, no clock). Fills `out` only when it returns true.
bool parse_token_claims(std::span<const uint8_t, kTokenSize> token, TokenClaims& out);
// Lays claims out in a token's first 64 bytes (the rest untouched): what a backend signs.
// The tests and the bench mint with it (libsodium); the product's minter is the Rust one.
void write_token_claims(const TokenClaims& claims, std::span<uint8_t, kTokenSize> token);

class TokenVerifier {
 public:
  // `server`: this server's address as tokens name it. `max_lifetime_ms`: a token expiring
  // later than now + this is refused as Expired (the backend mints short-lived tokens; the
  // bound also bounds how long the server must remember used token ids).
  TokenVerifier(std::array<uint8_t, kTokenPublicKeySize> public_key, TokenServer server, uint64_t max_lifetime_ms);
  // Checks one token at `now_unix_ms`. Fills `claims` only when Valid.
  TokenVerdict verify(std::span<const uint8_t, kTokenSize> token, uint64_t now_unix_ms, TokenClaims& claims) const;
  uint64_t max_lifetime_ms() const { return max_lifetime_ms_; }

 private:
  std::array<uint8_t, kTokenPublicKeySize> public_key_;
  TokenServer server_;
  uint64_t max_lifetime_ms_;
};

// Reads a public key file (one line of 64 hex digits, as `mmo-token keygen` writes). On
// failure returns nothing and says why in `error`.
std::optional<std::array<uint8_t, kTokenPublicKeySize>> read_token_public_key(const std::string& path, std::string& error);

// The development key pair: `dir`/dev-token.pub and `dir`/dev-token.secret, created (the
// secret owner-only) when missing. Only for a server started without --token-public-key; the
// bundled load tester mints with the secret. Returns the public key, or nothing with `error`.
std::optional<std::array<uint8_t, kTokenPublicKeySize>> development_token_key(const std::string& dir, std::string& error);

// libsodium's one-time set-up (safe to call more than once, from any thread).
bool token_crypto_ready();

}  // namespace mmo::net
