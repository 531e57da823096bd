// libFuzzer target: the datagram decoder and the admission path every received datagram
// takes (built with clang by `make fuzz`; `make fuzz FUZZ_RUNS=...` runs longer).
//
// Properties checked on every input, beyond "no crash, no sanitizer report":
// - a datagram that decodes re-encodes to exactly the same bytes (the encoding is canonical:
//   reserved bytes are zero and every field is fixed), for both directions;
// - admission never admits what the decoder refuses, and an admitted session message
//   belongs to the one session the harness created;
// - a JOIN_CONFIRM's connect token: the verifier's Malformed agrees with the layout parser,
//   and nothing but the committed vector's exact bytes verifies under its key (the corpus's
//   join_confirm carries that token, so mutations start from a valid signature).
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <variant>
#include <vector>

#include "net/admission.hpp"
#include "net/connect_token.hpp"
#include "net/protocol.hpp"

namespace {

using namespace mmo::wire;

template <typename Message>
void check_canonical(const uint8_t* data, size_t size, const Message& message) {
  static std::vector<uint8_t> out(kStatsReplyMax);
  size_t n = 0;
  std::visit([&](const auto& m) { n = encode(m, out, 0); }, message);
  // Flags are carried outside the message; the harness compares with the flags cleared.
  if (n != size) std::abort();
  if (std::memcmp(out.data(), data, 6) != 0 || std::memcmp(out.data() + 8, data + 8, size - 8) != 0) std::abort();
}

mmo::net::Admission& admission() {
  static mmo::net::JoinCookies cookies({0x1234, 0x5678});
  static mmo::net::Admission* a = [] {
    mmo::net::AdmissionConfig config;
    config.max_sessions = 16;
    config.address_slots_pow2 = 64;
    config.admin_key = 0xa11ce;
    auto* adm = new mmo::net::Admission(config, cookies);
    mmo::net::Session s;
    s.player_id = 42;
    s.session_token = 0xfeedface01020304ULL;
    s.source = {0x0100007f, 0x1234};
    s.bucket = adm->player_bucket(0);
    adm->sessions().insert(s);
    return adm;
  }();
  return *a;
}

// docs/connect-token-vectors.txt: the key, the token, and a moment and server it is valid for.
constexpr std::array<uint8_t, 32> kVectorPublicKey = {0xea, 0x4a, 0x6c, 0x63, 0xe2, 0x9c, 0x52, 0x0a, 0xbe, 0xf5, 0x50,
                                                      0x7b, 0x13, 0x2e, 0xc5, 0xf9, 0x95, 0x47, 0x76, 0xae, 0xbe, 0xbe,
                                                      0x7b, 0x92, 0x42, 0x1e, 0xea, 0x69, 0x14, 0x46, 0xd2, 0x2c};
constexpr uint64_t kVectorNowUnixMs = 1'800'000'000'000ULL - 60'000;

const std::array<uint8_t, kConnectTokenSize>& vector_token() {
  static const std::array<uint8_t, kConnectTokenSize> token = [] {
    std::array<uint8_t, kConnectTokenSize> t{};
    const char* hex =
        "2a0000000000000000505c18a3010000887766554433221102010000000000007f000001a00f0000000000000000000000000000000000000000000000000000"
        "a77badf1e6a17a2f66533f7d012a829ffebebf7fbc2377d877b3f0a7c7694060a21a5d47ce9083a6418a80dcbc649b222cb2f9b8c6b17f39c171a2ffaf71f903";
    for (size_t i = 0; i < t.size(); ++i) t[i] = static_cast<uint8_t>(std::strtoul(std::string(hex + 2 * i, 2).c_str(), nullptr, 16));
    return t;
  }();
  return token;
}

void check_token(const JoinConfirm& confirm) {
  static const mmo::net::TokenVerifier verifier(kVectorPublicKey, mmo::net::TokenServer{0x0100007f, 4000}, 120'000);
  mmo::net::TokenClaims claims;
  const auto verdict = verifier.verify(confirm.token, kVectorNowUnixMs, claims);
  mmo::net::TokenClaims parsed;
  if ((verdict == mmo::net::TokenVerdict::Malformed) != !mmo::net::parse_token_claims(confirm.token, parsed)) std::abort();
  if (verdict == mmo::net::TokenVerdict::Valid && (confirm.token != vector_token() || claims.account_id != 42)) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::span<const uint8_t> datagram(data, size);
  Decoded<ClientMessage> client;
  const DecodeError ce = decode_client(datagram, client);
  if (ce == DecodeError::Ok) {
    check_canonical(data, size, client.message);
    if (const auto* confirm = std::get_if<JoinConfirm>(&client.message)) check_token(*confirm);
  }
  Decoded<ServerMessage> server;
  if (decode_server(datagram, server) == DecodeError::Ok) check_canonical(data, size, server.message);

  static uint64_t now_us = 0;
  now_us += 1000;
  Decoded<ClientMessage> admitted_message;
  const mmo::net::Admitted a = admission().admit(datagram, {0x0100007f, 0x1234}, now_us, admitted_message);
  if (a.ok && ce != DecodeError::Ok) std::abort();
  if (a.session != nullptr && a.session->player_id != 42) std::abort();
  return 0;
}
