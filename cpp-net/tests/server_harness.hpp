// server_harness.hpp: what the end-to-end tests use to drive the real mmo-server binary: the
// process (started on a free port, its stdout and stderr read back), a UDP client speaking the
// wire protocol, the join handshake, and the admin stats request.
#pragma once

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <functional>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "mmo_core.h"
#include "net/protocol.hpp"

namespace mmo::test {

using namespace mmo::wire;
using Bytes = std::vector<uint8_t>;
using Clock = std::chrono::steady_clock;

constexpr uint64_t kAdminKey = 0xa11ce5ec2e7ULL;

// The server process: started with --port 0 (and the extra arguments); the port is read from
// its first output line.
class ServerProcess {
 public:
  explicit ServerProcess(std::vector<std::string> extra_args) {
    int out[2];
    if (pipe(out) != 0) return;
    pid_ = fork();
    if (pid_ == 0) {
      dup2(out[1], STDOUT_FILENO);
      dup2(out[1], STDERR_FILENO);
      close(out[0]);
      close(out[1]);
      std::vector<std::string> args = {MMO_SERVER_BINARY, "--port", "0", "--threads", "2", "--admin-key", std::to_string(kAdminKey),
                                       "--stats-interval-s", "0", "--tick-hz", "20"};
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
    if (pid_ > 0 && !reaped_) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
    if (stdout_ != nullptr) fclose(stdout_);
  }
  uint16_t port() const { return port_; }
  const std::string& first_line() const { return first_line_; }
  // Waits (up to `timeout`) for the process to exit on its own; returns {exit status, the
  // rest of its output}, or {-1, ""} if it is still running (it is then killed).
  std::pair<int, std::string> wait_exit(std::chrono::milliseconds timeout) {
    const auto deadline = Clock::now() + timeout;
    int status = 0;
    while (Clock::now() < deadline) {
      if (waitpid(pid_, &status, WNOHANG) == pid_) {
        reaped_ = true;
        std::string rest;
        char buf[4096];
        size_t n;
        while ((n = std::fread(buf, 1, sizeof(buf), stdout_)) > 0) rest.append(buf, n);
        return {status, rest};
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return {-1, ""};
  }
  // SIGTERM, wait (bounded), and return {exit status, the rest of stdout}.
  std::pair<int, std::string> terminate() {
    kill(pid_, SIGTERM);
    std::string rest;
    char buf[4096];
    size_t n;
    while ((n = std::fread(buf, 1, sizeof(buf), stdout_)) > 0) rest.append(buf, n);
    int status = 0;
    waitpid(pid_, &status, 0);
    reaped_ = true;
    return {status, rest};
  }

 private:
  pid_t pid_ = -1;
  FILE* stdout_ = nullptr;
  std::string first_line_;
  uint16_t port_ = 0;
  bool reaped_ = false;
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
  void send_raw(const Bytes& b) { sendto(fd_, b.data(), b.size(), 0, reinterpret_cast<sockaddr*>(&server_), sizeof(server_)); }
  template <typename M>
  Bytes send(const M& m, uint16_t flags = 0) {
    Bytes b(kStatsReplyMax);
    b.resize(encode(m, b, flags));
    send_raw(b);
    return b;
  }
  // Waits up to `timeout` for a server message of type M (skipping others, e.g. AoI).
  template <typename M>
  std::optional<M> wait_for(std::chrono::milliseconds timeout = std::chrono::milliseconds(2000), const std::function<bool(const M&)>& accept = nullptr) {
    const auto deadline = Clock::now() + timeout;
    Bytes buf(65536);
    while (Clock::now() < deadline) {
      pollfd p{fd_, POLLIN, 0};
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
      if (poll(&p, 1, static_cast<int>(std::max<long>(1, left))) <= 0) continue;
      const ssize_t n = recv(fd_, buf.data(), buf.size(), 0);
      if (n <= 0) continue;
      Decoded<ServerMessage> d;
      if (decode_server({buf.data(), static_cast<size_t>(n)}, d) != DecodeError::Ok) continue;
      if (const M* m = std::get_if<M>(&d.message)) {
        if (!accept || accept(*m)) return *m;
      }
    }
    return std::nullopt;
  }

 private:
  int fd_ = -1;
  sockaddr_in server_{};
};

struct Joined {
  uint64_t player_id = 0;
  uint64_t token = 0;
};

inline Joined join(Client& c, uint64_t nonce, float x, float y, uint8_t faction = 1) {
  c.send(JoinRequest{nonce});
  const auto challenge = c.wait_for<JoinChallenge>();
  EXPECT_TRUE(challenge.has_value());
  if (!challenge) return {};
  EXPECT_EQ(challenge->nonce, nonce);
  c.send(JoinConfirm{nonce, challenge->period, faction, challenge->cookie, x, y});
  const auto accept = c.wait_for<JoinAccept>();
  EXPECT_TRUE(accept.has_value());
  if (!accept) return {};
  EXPECT_EQ(accept->status, JoinStatus::Joined);
  EXPECT_NE(accept->player_id, 0u);
  return {accept->player_id, accept->session_token};
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
