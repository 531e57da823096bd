// server_harness.hpp: what the end-to-end tests use to drive the real mmo-server binary: the
// process (started on a free port, its stdout and stderr read back, with the tests' token
// public key), a UDP client speaking the wire protocol, connect tokens minted as the game's
// backend would (libsodium signs here; the product mints in Rust, loadtest/src/token.rs, and
// both are held to docs/connect-token-vectors.txt), the join handshake, and the admin stats
// request.
#pragma once

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <sodium.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <cstring>
#include <functional>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "mmo_core.h"
#include "net/connect_token.hpp"
#include "net/protocol.hpp"

namespace mmo::test {

using namespace mmo::wire;
using Bytes = std::vector<uint8_t>;
using Clock = std::chrono::steady_clock;

constexpr uint64_t kAdminKey = 0xa11ce5ec2e7ULL;

// The tests' backend key pair: drawn once per test process; the public half is written to a
// file every ServerProcess is started with (--token-public-key).
struct TestTokenKeys {
  std::array<uint8_t, crypto_sign_PUBLICKEYBYTES> public_key{};
  std::array<uint8_t, crypto_sign_SECRETKEYBYTES> secret_key{};
  std::string public_key_path;
};
inline const TestTokenKeys& test_token_keys() {
  static const TestTokenKeys keys = [] {
    TestTokenKeys k;
    if (sodium_init() < 0) std::abort();
    crypto_sign_keypair(k.public_key.data(), k.secret_key.data());
    k.public_key_path = ::testing::TempDir() + "mmo-test-token-" + std::to_string(getpid()) + ".pub";
    std::array<char, crypto_sign_PUBLICKEYBYTES * 2 + 1> hex{};
    sodium_bin2hex(hex.data(), hex.size(), k.public_key.data(), k.public_key.size());
    std::ofstream(k.public_key_path) << hex.data() << "\n";
    return k;
  }();
  return keys;
}

inline uint64_t unix_now_ms() {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch()).count());
}

// What a test's token says (docs/protocol.md, "Connect tokens"); zeros mean: a fresh account,
// a random token id, the server on 127.0.0.1 and the client's port.
struct TokenSpec {
  uint64_t account_id = 0;
  uint8_t faction = 1;
  int64_t ttl_ms = 60'000;
  uint64_t token_id = 0;
  uint16_t server_port = 0;
  uint32_t server_ip_be = 0;
};

inline uint64_t next_test_account() {
  static std::atomic<uint64_t> next{1000};
  return next.fetch_add(1);
}

// (Re)signs a token's claims with the tests' key (after a test edits them).
inline void sign_token(std::array<uint8_t, kConnectTokenSize>& t) {
  const auto message = net::token_signing_message(t);
  crypto_sign_detached(t.data() + net::kTokenClaimsSize, nullptr, message.data(), message.size(), test_token_keys().secret_key.data());
}

// Mints a token as the backend would: the claims laid out, then Ed25519 over the context
// string and the claims, with the tests' secret key.
inline std::array<uint8_t, kConnectTokenSize> mint_token(const TokenSpec& spec, uint16_t port) {
  net::TokenClaims claims;
  claims.account_id = spec.account_id != 0 ? spec.account_id : next_test_account();
  claims.expires_unix_ms = static_cast<uint64_t>(static_cast<int64_t>(unix_now_ms()) + spec.ttl_ms);
  claims.token_id = spec.token_id;
  while (claims.token_id == 0) randombytes_buf(&claims.token_id, sizeof claims.token_id);
  claims.faction = spec.faction;
  claims.server_count = 1;
  claims.servers[0] = {spec.server_ip_be != 0 ? spec.server_ip_be : htonl(INADDR_LOOPBACK), spec.server_port != 0 ? spec.server_port : port};
  std::array<uint8_t, kConnectTokenSize> t{};
  net::write_token_claims(claims, t);
  sign_token(t);
  return t;
}

// The server process: started with --port 0, the tests' token public key (and the extra
// arguments); the port is read from its first output line.
class ServerProcess {
 public:
  explicit ServerProcess(std::vector<std::string> extra_args) {
    (void)test_token_keys();  // written before the fork
    // Each server its own economy store (its wallets would otherwise outlive the test).
    static std::atomic<unsigned> servers{0};
    data_dir_ = ::testing::TempDir() + "mmo-test-data-" + std::to_string(getpid()) + "-" + std::to_string(servers.fetch_add(1));
    std::filesystem::remove_all(data_dir_);
    int out[2];
    if (pipe(out) != 0) return;
    pid_ = fork();
    if (pid_ == 0) {
      dup2(out[1], STDOUT_FILENO);
      dup2(out[1], STDERR_FILENO);
      close(out[0]);
      close(out[1]);
      std::vector<std::string> args = {MMO_SERVER_BINARY, "--port", "0", "--threads", "2", "--admin-key", std::to_string(kAdminKey),
                                       "--stats-interval-s", "0", "--tick-hz", "20", "--token-public-key", test_token_keys().public_key_path,
                                       "--data-dir", data_dir_};
      args.insert(args.end(), extra_args.begin(), extra_args.end());
      std::vector<char*> argv;
      for (auto& a : args) argv.push_back(a.data());
      argv.push_back(nullptr);
      execv(argv[0], argv.data());
      _exit(127);
    }
    close(out[1]);
    stdout_ = fdopen(out[0], "r");
    char line[512];
    if (stdout_ != nullptr && std::fgets(line, sizeof(line), stdout_) != nullptr) {
      first_line_ = line;
      const auto at = first_line_.find("127.0.0.1:");
      if (at != std::string::npos) port_ = static_cast<uint16_t>(std::stoi(first_line_.substr(at + 10)));
    }
  }
  ~ServerProcess() {
    if (pid_ > 0 && !reaped_ && !report_if_ended()) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
    if (stdout_ != nullptr) fclose(stdout_);
    if (remove_data_dir_) std::filesystem::remove_all(data_dir_);
  }
  uint16_t port() const { return port_; }
  pid_t pid() const { return pid_; }
  // The server's --data-dir (its economy store); kept after the process when `keep` is set,
  // so a test can start another server on it.
  const std::string& data_dir() const { return data_dir_; }
  void keep_data_dir(bool keep) { remove_data_dir_ = !keep; }
  const std::string& first_line() const { return first_line_; }
  // Waits (up to `timeout`) for the process to exit on its own; returns {exit status, the
  // rest of its output}, or {-1, ""} if it is still running (it is then killed).
  std::pair<int, std::string> wait_exit(std::chrono::milliseconds timeout) {
    const auto deadline = Clock::now() + timeout;
    int status = 0;
    while (Clock::now() < deadline) {
      if (waitpid(pid_, &status, WNOHANG) == pid_) {
        reaped_ = true;
        return {status, rest_of_output()};
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return {-1, ""};
  }
  // SIGTERM, wait (bounded), and return {exit status, the rest of stdout}. A server that
  // ended before it was asked to is a test failure, reported with its status and output.
  std::pair<int, std::string> terminate() {
    if (report_if_ended()) return {-1, ""};
    kill(pid_, SIGTERM);
    std::string rest = rest_of_output();
    int status = 0;
    waitpid(pid_, &status, 0);
    reaped_ = true;
    return {status, rest};
  }

 private:
  // The server's output from where the reads so far stopped to its end (the process has
  // ended or was just asked to: the pipe closes).
  std::string rest_of_output() {
    std::string rest;
    char buf[4096];
    size_t n;
    while ((n = std::fread(buf, 1, sizeof(buf), stdout_)) > 0) rest.append(buf, n);
    return rest;
  }

  // A server that ended on its own while the test still used it (a sanitizer that halted it
  // on a report, a crash, an exit): reaps it and fails the test with its exit status and the
  // rest of its output, so the failure shows its cause rather than replies that never came.
  // Returns whether it had ended.
  bool report_if_ended() {
    int status = 0;
    if (pid_ <= 0 || reaped_ || waitpid(pid_, &status, WNOHANG) != pid_) return false;
    reaped_ = true;
    const std::string rest = rest_of_output();
    ADD_FAILURE() << "mmo-server ended while the test still used it ("
                  << (WIFEXITED(status) ? "exit status " + std::to_string(WEXITSTATUS(status)) : "signal " + std::to_string(WTERMSIG(status)))
                  << "); its output after the first line:\n"
                  << rest;
    return true;
  }

  pid_t pid_ = -1;
  FILE* stdout_ = nullptr;
  std::string first_line_;
  uint16_t port_ = 0;
  bool reaped_ = false;
  std::string data_dir_;
  bool remove_data_dir_ = true;
};

class Client {
 public:
  // A client on `local_ip` (host order; any 127.x.y.z reaches the server on Linux).
  explicit Client(uint16_t server_port, uint32_t local_ip = INADDR_LOOPBACK) {
    fd_ = socket(AF_INET, SOCK_DGRAM, 0);
    sockaddr_in local{};
    local.sin_family = AF_INET;
    local.sin_addr.s_addr = htonl(local_ip);
    bind(fd_, reinterpret_cast<sockaddr*>(&local), sizeof(local));
    server_.sin_family = AF_INET;
    server_.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    server_.sin_port = htons(server_port);
  }
  ~Client() { close(fd_); }
  uint16_t server_port() const { return ntohs(server_.sin_port); }
  int fd() const { return fd_; }
  void send_raw(const Bytes& b) { sendto(fd_, b.data(), b.size(), 0, reinterpret_cast<sockaddr*>(&server_), sizeof(server_)); }
  template <typename M>
  static Bytes encoded(const M& m, uint16_t flags = 0) {
    Bytes b(kStatsReplyMax);
    b.resize(encode(m, b, flags));
    return b;
  }
  template <typename M>
  Bytes send(const M& m, uint16_t flags = 0) {
    Bytes b = encoded(m, flags);
    send_raw(b);
    return b;
  }
  // Sends `datagrams` with one sendmmsg, in order: they reach the server's socket together, so
  // a worker that wakes for the first reads the rest in the same batch (as it would a burst).
  // Returns how many the kernel took.
  int send_together(const std::vector<Bytes>& datagrams) {
    std::vector<iovec> iovs(datagrams.size());
    std::vector<mmsghdr> msgs(datagrams.size());
    for (size_t i = 0; i < datagrams.size(); ++i) {
      iovs[i] = {const_cast<uint8_t*>(datagrams[i].data()), datagrams[i].size()};
      msgs[i].msg_hdr.msg_name = &server_;
      msgs[i].msg_hdr.msg_namelen = sizeof(server_);
      msgs[i].msg_hdr.msg_iov = &iovs[i];
      msgs[i].msg_hdr.msg_iovlen = 1;
    }
    return sendmmsg(fd_, msgs.data(), static_cast<unsigned>(msgs.size()), 0);
  }
  // Waits up to `timeout` for one server message of type A and one of type B, in either order
  // (skipping others), where wait_for<A> would drop a B that came first.
  template <typename A, typename B>
  std::pair<std::optional<A>, std::optional<B>> wait_for_both(std::chrono::milliseconds timeout = std::chrono::milliseconds(2000)) {
    std::pair<std::optional<A>, std::optional<B>> got;
    const auto deadline = Clock::now() + timeout;
    while (!(got.first && got.second)) {
      const std::optional<ServerMessage> m = next_message(deadline);
      if (!m) break;
      if (const A* a = std::get_if<A>(&*m); a != nullptr && !got.first) got.first = *a;
      if (const B* b = std::get_if<B>(&*m); b != nullptr && !got.second) got.second = *b;
    }
    return got;
  }
  // Waits up to `timeout` for a server message of type M (skipping others, e.g. AoI).
  template <typename M>
  std::optional<M> wait_for(std::chrono::milliseconds timeout = std::chrono::milliseconds(2000), const std::function<bool(const M&)>& accept = nullptr) {
    const auto deadline = Clock::now() + timeout;
    while (const std::optional<ServerMessage> next = next_message(deadline)) {
      if (const M* m = std::get_if<M>(&*next)) {
        if (!accept || accept(*m)) return *m;
      }
    }
    return std::nullopt;
  }

 private:
  // The next server message that decodes, or nothing once `deadline` passes. A message's
  // views into its datagram (a STATS_REPLY's text) point into rx_buf_: valid until the next
  // receive, so through a wait_for's accept callback.
  std::optional<ServerMessage> next_message(Clock::time_point deadline) {
    Bytes& buf = rx_buf_;
    while (Clock::now() < deadline) {
      pollfd p{fd_, POLLIN, 0};
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
      if (poll(&p, 1, static_cast<int>(std::max<long>(1, left))) <= 0) continue;
      const ssize_t n = recv(fd_, buf.data(), buf.size(), 0);
      if (n <= 0) continue;
      Decoded<ServerMessage> d;
      if (decode_server({buf.data(), static_cast<size_t>(n)}, d) == DecodeError::Ok) return d.message;
    }
    return std::nullopt;
  }

  int fd_ = -1;
  sockaddr_in server_{};
  Bytes rx_buf_ = Bytes(65536);
};

struct Joined {
  uint64_t player_id = 0;
  uint64_t token = 0;
  float x_m = 0;
  float y_m = 0;
};

// The handshake with a given token: the server's answer (any status), or nothing.
inline std::optional<JoinAccept> join_with(Client& c, uint64_t nonce, const std::array<uint8_t, kConnectTokenSize>& token) {
  c.send(JoinRequest{nonce});
  const auto challenge = c.wait_for<JoinChallenge>();
  EXPECT_TRUE(challenge.has_value());
  if (!challenge) return std::nullopt;
  EXPECT_EQ(challenge->nonce, nonce);
  JoinConfirm confirm{nonce, challenge->period, challenge->cookie, token};
  c.send(confirm);
  return c.wait_for<JoinAccept>();
}

// Joins with a fresh token for a new account of `faction`; the server picks where (the tests
// place players with --spawn-points: faction f's zone is f % count).
inline Joined join(Client& c, uint64_t nonce, uint8_t faction = 1) {
  const auto accept = join_with(c, nonce, mint_token(TokenSpec{.faction = faction}, c.server_port()));
  EXPECT_TRUE(accept.has_value());
  if (!accept) return {};
  EXPECT_EQ(accept->status, JoinStatus::Joined);
  EXPECT_NE(accept->player_id, 0u);
  EXPECT_EQ(accept->faction, faction);
  return {accept->player_id, accept->session_token, accept->spawn_x_m, accept->spawn_y_m};
}

inline std::map<std::string, uint64_t> server_stats(Client& admin, uint32_t request_id) {
  admin.send(StatsRequest{kAdminKey, request_id});
  Bytes keep;
  std::map<std::string, uint64_t> stats;
  // The reply's text is borrowed from the datagram: parse inside the accept callback.
  admin.wait_for<StatsReply>(std::chrono::milliseconds(3000), [&](const StatsReply& r) {
    if (r.request_id != request_id) return false;
    std::istringstream in{std::string(r.text)};
    std::string name;
    uint64_t value = 0;
    while (in >> name >> value) stats[name] = value;
    return true;
  });
  return stats;
}

inline Move move(const Joined& j, uint32_t seq, uint32_t client_ms, float x, float y) { return Move{j.player_id, j.token, seq, client_ms, x, y, 0, {}}; }


}  // namespace mmo::test
