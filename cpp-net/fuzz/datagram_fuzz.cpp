// libFuzzer target: the datagram decoder and the admission path every received datagram
// takes (built with clang by `make fuzz`; `make fuzz FUZZ_RUNS=...` runs longer).
//
// Properties checked on every input, beyond "no crash, no sanitizer report":
// - a datagram that decodes re-encodes to exactly the same bytes (the encoding is canonical:
//   reserved bytes are zero and every field is fixed), for both directions;
// - admission never admits what the decoder refuses, and an admitted session message
//   belongs to the one session the harness created.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <variant>
#include <vector>

#include "net/admission.hpp"
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

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::span<const uint8_t> datagram(data, size);
  Decoded<ClientMessage> client;
  const DecodeError ce = decode_client(datagram, client);
  if (ce == DecodeError::Ok) check_canonical(data, size, client.message);
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
