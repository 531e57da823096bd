// server.cpp: see server.hpp for the threads and what they share.
#include "server.hpp"

#include "stats_fields.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <stdexcept>
#include <variant>

namespace mmo::net {
namespace {

constexpr size_t kBatchMax = 64;         // datagrams per recvmmsg / sendmmsg
constexpr size_t kRxBufferSize = 2048;   // > kClientDatagramMax, so an oversized datagram is seen as such
constexpr int kDrainRoundsMax = 16;      // recvmmsg calls per epoll wake-up, at most
constexpr int kEpollTimeoutMs = 100;     // how soon a worker notices stop and runs its idle scan
constexpr int kSendRetriesMax = 8;       // sendmmsg calls to flush one batch, at most
constexpr uint64_t kLatencyHighestUs = 60'000'000;
constexpr int kSocketBufferBytes = 4 << 20;
static_assert(kRxBufferSize > wire::kClientDatagramMax);

uint64_t monotonic_ns() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000ULL + static_cast<uint64_t>(ts.tv_nsec);
}

MmoLatency* new_latency() {
  MmoLatency* h = nullptr;
  if (mmo_latency_new(kLatencyHighestUs, 3, &h) != MMO_OK) throw std::runtime_error("mmo_latency_new failed");
  return h;
}

int open_socket(const std::string& address, uint16_t port) {
  const int fd = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) throw std::runtime_error(std::string("socket: ") + std::strerror(errno));
  const int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof(one));
  // Bigger kernel queues absorb raid bursts; the kernel caps them at net.core.[rw]mem_max.
  setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &kSocketBufferBytes, sizeof(kSocketBufferBytes));
  setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &kSocketBufferBytes, sizeof(kSocketBufferBytes));
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_port = htons(port);
  if (inet_pton(AF_INET, address.c_str(), &sa.sin_addr) != 1) {
    close(fd);
    throw std::runtime_error("bind address is not an IPv4 address: " + address);
  }
  if (bind(fd, reinterpret_cast<sockaddr*>(&sa), sizeof(sa)) != 0) {
    const std::string err = std::strerror(errno);
    close(fd);
    throw std::runtime_error("bind " + address + ":" + std::to_string(port) + ": " + err);
  }
  return fd;
}

uint16_t bound_port(int fd) {
  sockaddr_in sa{};
  socklen_t len = sizeof(sa);
  getsockname(fd, reinterpret_cast<sockaddr*>(&sa), &len);
  return ntohs(sa.sin_port);
}

sockaddr_in to_sockaddr(SourceAddress a) {
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_addr.s_addr = a.ip_be;
  sa.sin_port = a.port_be;
  return sa;
}

// Outgoing datagrams of one batch, flushed with sendmmsg. Preallocated; at most kBatchMax.
class SendBatch {
 public:
  SendBatch() {
    for (size_t i = 0; i < kBatchMax; ++i) {
      iov_[i] = {buffers_[i].data(), 0};
      msgs_[i].msg_hdr.msg_iov = &iov_[i];
      msgs_[i].msg_hdr.msg_iovlen = 1;
      msgs_[i].msg_hdr.msg_name = &addrs_[i];
      msgs_[i].msg_hdr.msg_namelen = sizeof(sockaddr_in);
    }
  }
  bool full() const { return count_ == kBatchMax; }
  size_t size() const { return count_; }
  // The next slot's buffer; commit() it with the encoded size (0 discards it).
  std::span<uint8_t> slot() { return {buffers_[count_].data(), buffers_[count_].size()}; }
  void commit(SourceAddress to, size_t bytes) {
    if (bytes == 0 || count_ == kBatchMax) return;
    addrs_[count_] = to_sockaddr(to);
    iov_[count_].iov_len = bytes;
    ++count_;
  }
  // Sends everything; returns {sent, failed}. Retries a partial send a bounded number of
  // times (the socket buffer was momentarily full), then gives up on the rest.
  std::pair<size_t, size_t> flush(int fd) {
    size_t done = 0;
    for (int attempt = 0; attempt < kSendRetriesMax && done < count_; ++attempt) {
      const int n = sendmmsg(fd, msgs_.data() + done, static_cast<unsigned>(count_ - done), MSG_DONTWAIT);
      if (n > 0) {
        done += static_cast<size_t>(n);
      } else if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
        done += 1;  // this datagram cannot be sent (e.g. ECONNREFUSED from an ICMP); skip it
        ++undeliverable_;
      }
    }
    const size_t failed = count_ - done + undeliverable_;
    const size_t sent = done - undeliverable_;
    count_ = 0;
    undeliverable_ = 0;
    return {sent, failed};
  }

 private:
  std::array<std::array<uint8_t, wire::kReplyDatagramMax>, kBatchMax> buffers_{};
  std::array<iovec, kBatchMax> iov_{};
  std::array<sockaddr_in, kBatchMax> addrs_{};
  std::array<mmsghdr, kBatchMax> msgs_{};
  size_t count_ = 0;
  size_t undeliverable_ = 0;
};

}  // namespace

// ---------------------------------------------------------------------------------------
// Worker

class Worker {
 public:
  Worker(Server& server, int fd, const AdmissionConfig& admission_config)
      : server_(server), fd_(fd), admission_(admission_config, server.cookies_, &server.directory_) {
    epfd_ = epoll_create1(EPOLL_CLOEXEC);
    if (epfd_ < 0) throw std::runtime_error(std::string("epoll_create1: ") + std::strerror(errno));
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.fd = fd_;
    if (epoll_ctl(epfd_, EPOLL_CTL_ADD, fd_, &ev) != 0) throw std::runtime_error(std::string("epoll_ctl: ") + std::strerror(errno));
    for (size_t i = 0; i < kBatchMax; ++i) {
      rx_iov_[i] = {rx_buffers_[i].data(), rx_buffers_[i].size()};
      rx_msgs_[i].msg_hdr.msg_iov = &rx_iov_[i];
      rx_msgs_[i].msg_hdr.msg_iovlen = 1;
      rx_msgs_[i].msg_hdr.msg_name = &rx_addrs_[i];
    }
    events_.resize(server.engine().move_events_required(kBatchMax));
    update_latency_ = new_latency();
    raid_latency_ = new_latency();
  }
  ~Worker() {
    mmo_latency_free(update_latency_);
    mmo_latency_free(raid_latency_);
    if (epfd_ >= 0) close(epfd_);
    if (fd_ >= 0) close(fd_);
  }
  Worker(const Worker&) = delete;
  Worker& operator=(const Worker&) = delete;

  void run();

  /// Written by this worker; read by the reporter and the tick thread.
  WorkerCounters counters;
  /// Sessions live on this worker. Written by this worker under session_mutex.
  std::atomic<uint32_t> sessions_live{0};
  /// Guards admission_ (its session table): this worker holds it per batch; the tick thread
  /// holds it to copy the roster.
  std::mutex session_mutex;
  /// Guards the two histograms: this worker records under it once per batch; the reporter
  /// merges under it.
  mutable std::mutex latency_mutex;
  MmoLatency* update_latency_ = nullptr;
  MmoLatency* raid_latency_ = nullptr;

  int fd() const { return fd_; }
  // Appends (player id, source) of every session; caller holds session_mutex.
  template <typename F>
  void for_each_session(F&& f) {
    admission_.sessions().for_each([&](const Session& s) { f(s.player_id, s.source); });
  }

 private:
  void handle_batch(size_t count);
  void handle(const wire::ClientMessage& message, SourceAddress source, Session* session, uint64_t now_us);
  void on_join_confirm(const wire::JoinConfirm& m, SourceAddress source, uint64_t now_us);
  void flush_engine_batches(uint64_t now_ms);
  void expire_idle_sessions(uint64_t now_ms);
  void send_stats(SourceAddress to, uint32_t request_id);
  void end_session(Session* session);

  Server& server_;
  int fd_;
  int epfd_ = -1;
  Admission admission_;
  SendBatch tx_;

  std::array<std::array<uint8_t, kRxBufferSize>, kBatchMax> rx_buffers_{};
  std::array<iovec, kBatchMax> rx_iov_{};
  std::array<sockaddr_in, kBatchMax> rx_addrs_{};
  std::array<mmsghdr, kBatchMax> rx_msgs_{};

  // The batch's moves and economy requests, and who to answer.
  std::array<MmoMoveRecord, kBatchMax> moves_{};
  std::array<SourceAddress, kBatchMax> move_replies_{};
  size_t move_count_ = 0;
  std::vector<MmoMoveEvent> events_;
  std::array<MmoEconomyOp, kBatchMax> ops_{};
  std::array<SourceAddress, kBatchMax> op_replies_{};
  std::array<MmoEconomyResult, kBatchMax> results_{};
  size_t op_count_ = 0;
  // STATS_REQUESTs are answered after the batch, outside session_mutex.
  std::array<std::pair<SourceAddress, uint32_t>, 4> pending_stats_{};
  size_t pending_stats_count_ = 0;
  std::array<char, wire::kStatsReplyMax> stats_text_{};
  std::array<uint8_t, wire::kStatsReplyMax> stats_datagram_{};
  uint64_t next_idle_scan_ms_ = 0;
  uint64_t batch_moves_ = 0;
};

void Worker::run() {
  server_.engine().prewarm_thread();
  std::array<epoll_event, 4> ready{};
  while (!server_.stopping_.load(std::memory_order_acquire)) {
    const int n = epoll_wait(epfd_, ready.data(), static_cast<int>(ready.size()), kEpollTimeoutMs);
    if (n > 0) {
      for (int round = 0; round < kDrainRoundsMax; ++round) {
        // The kernel writes back each name length and flags; reset them before each call.
        for (auto& m : rx_msgs_) {
          m.msg_hdr.msg_namelen = sizeof(sockaddr_in);
          m.msg_hdr.msg_flags = 0;
        }
        const int got = recvmmsg(fd_, rx_msgs_.data(), kBatchMax, MSG_DONTWAIT, nullptr);
        if (got <= 0) break;
        handle_batch(static_cast<size_t>(got));
        if (static_cast<size_t>(got) < kBatchMax) break;
      }
    }
    const uint64_t now_ms = server_.now_us() / 1000;
    if (now_ms >= next_idle_scan_ms_) {
      std::lock_guard lock(session_mutex);
      expire_idle_sessions(now_ms);
      next_idle_scan_ms_ = now_ms + 1000;
    }
  }
}

void Worker::handle_batch(size_t count) {
  const uint64_t t0_us = server_.now_us();
  counters.datagrams_received.add(count);
  batch_moves_ = 0;
  {
    std::lock_guard lock(session_mutex);
    wire::Decoded<wire::ClientMessage> decoded;
    for (size_t i = 0; i < count; ++i) {
      const mmsghdr& m = rx_msgs_[i];
      size_t len = m.msg_len;
      // A datagram larger than the buffer arrives cut; it is oversized either way.
      if ((m.msg_hdr.msg_flags & MSG_TRUNC) != 0) len = kRxBufferSize;
      if (m.msg_hdr.msg_namelen < sizeof(sockaddr_in) || rx_addrs_[i].sin_family != AF_INET) continue;
      const SourceAddress source{rx_addrs_[i].sin_addr.s_addr, rx_addrs_[i].sin_port};
      const Admitted a = admission_.admit({rx_buffers_[i].data(), len}, source, t0_us, decoded);
      if (!a.ok) {
        counters.drops[static_cast<size_t>(a.reason)].add();
        continue;
      }
      handle(decoded.message, source, a.session, t0_us);
    }
    flush_engine_batches(t0_us / 1000);
    sessions_live.store(static_cast<uint32_t>(admission_.sessions().size()), std::memory_order_relaxed);
  }
  const uint64_t t1_us = server_.now_us();
  if (batch_moves_ > 0) {
    std::lock_guard lock(latency_mutex);
    mmo_latency_record(update_latency_, t1_us - t0_us, batch_moves_);
  }
  const auto [sent, failed] = tx_.flush(fd_);
  counters.datagrams_sent.add(sent);
  counters.send_failures.add(failed);
  for (size_t i = 0; i < pending_stats_count_; ++i) send_stats(pending_stats_[i].first, pending_stats_[i].second);
  pending_stats_count_ = 0;
}

void Worker::handle(const wire::ClientMessage& message, SourceAddress source, Session* session, uint64_t now_us) {
  const uint64_t now_ms = now_us / 1000;
  std::visit(
      [&](const auto& m) {
        using T = std::decay_t<decltype(m)>;
        if constexpr (std::is_same_v<T, wire::JoinRequest>) {
          const uint32_t period = JoinCookies::period_at(now_ms);
          const wire::JoinChallenge reply{m.nonce, period, admission_.cookies().mac(source, m.nonce, period)};
          tx_.commit(source, wire::encode(reply, tx_.slot()));
          counters.challenges_sent.add();
        } else if constexpr (std::is_same_v<T, wire::JoinConfirm>) {
          on_join_confirm(m, source, now_us);
        } else if constexpr (std::is_same_v<T, wire::Move>) {
          MmoMoveRecord& r = moves_[move_count_];
          r = MmoMoveRecord{};
          r.player_id = m.player_id;
          r.session_token = m.session_token;
          r.sequence = m.sequence;
          r.client_time_ms = m.client_time_ms;
          r.x_m = m.x_m;
          r.y_m = m.y_m;
          r.facing_rad = m.facing_rad;
          std::memcpy(r.payload, m.payload.data(), wire::kPayloadSize);
          move_replies_[move_count_] = source;
          ++move_count_;
          counters.moves_forwarded.add();
        } else if constexpr (std::is_same_v<T, wire::EconomyRequest>) {
          MmoEconomyOp& op = ops_[op_count_];
          op = MmoEconomyOp{};
          op.player_id = m.player_id;
          op.session_token = m.session_token;
          op.transaction_id = m.transaction_id;
          op.counterparty_id = m.counterparty_id;
          op.gold = m.gold;
          op.item_count = m.item_count;
          op.item_kind = m.item_kind;
          op.kind = m.kind;
          op_replies_[op_count_] = source;
          ++op_count_;
          counters.economy_forwarded.add();
        } else if constexpr (std::is_same_v<T, wire::Leave>) {
          // Moves and trades earlier in this batch go first, in arrival order.
          flush_engine_batches(now_ms);
          end_session(session);
          tx_.commit(source, wire::encode(wire::LeaveAck{m.player_id}, tx_.slot()));
          counters.leaves.add();
        } else if constexpr (std::is_same_v<T, wire::Ping>) {
          tx_.commit(source, wire::encode(wire::Pong{m.client_time_us, now_ms}, tx_.slot()));
          counters.pongs_sent.add();
        } else if constexpr (std::is_same_v<T, wire::RaidTrigger>) {
          MmoRaidSpawnRequest request{};
          request.center_x_m = m.center_x_m;
          request.center_y_m = m.center_y_m;
          request.half_extent_m = m.half_extent_m;
          request.count = m.count;
          request.lifetime_ms = m.lifetime_ms;
          request.hp = m.hp;
          request.seed = m.seed;
          request.kind = m.kind;
          request.faction = m.faction;
          MmoRaidReport report{};
          const uint64_t t0 = monotonic_ns();
          const MmoStatus status = server_.engine().raid_spawn(request, report);
          const uint64_t spawn_ns = monotonic_ns() - t0;
          if (status == MMO_OK) {
            std::lock_guard lock(latency_mutex);
            mmo_latency_record(raid_latency_, spawn_ns / 1000, 1);
          }
          const wire::RaidResult reply{m.request_id, status, status == MMO_OK ? report.spawned : 0, report.cells, report.expires_tick, spawn_ns};
          tx_.commit(source, wire::encode(reply, tx_.slot()));
          counters.raid_triggers.add();
        } else if constexpr (std::is_same_v<T, wire::StatsRequest>) {
          if (pending_stats_count_ < pending_stats_.size()) pending_stats_[pending_stats_count_++] = {source, m.request_id};
          counters.stats_requests.add();
        }
      },
      message);
}

void Worker::on_join_confirm(const wire::JoinConfirm& m, SourceAddress source, uint64_t now_us) {
  const uint64_t now_ms = now_us / 1000;
  wire::JoinAccept reply{m.nonce, 0, 0, wire::JoinStatus::Joined, 1000 / std::max(1u, server_.config_.tick_hz), now_ms};
  if (Session* existing = admission_.sessions().find_source(source)) {
    if (existing->join_nonce == m.nonce) {
      // The accept was lost and the client asked again: same session, same answer.
      reply.player_id = existing->player_id;
      reply.session_token = existing->session_token;
      tx_.commit(source, wire::encode(reply, tx_.slot()));
      counters.join_retransmits.add();
      return;
    }
    // The client restarted on the same address: its old session ends first.
    flush_engine_batches(now_ms);
    end_session(existing);
  }
  MmoJoinTicket ticket{};
  const MmoStatus status = server_.engine().join(m.spawn_x_m, m.spawn_y_m, m.faction, ticket);
  if (status == MMO_OK) {
    Session s;
    s.player_id = ticket.player_id;
    s.session_token = ticket.session_token;
    s.join_nonce = m.nonce;
    s.source = source;
    s.last_seen_ms = now_ms;
    s.bucket = admission_.player_bucket(now_us);
    Session* inserted = admission_.sessions().insert(s);
    if (inserted == nullptr || !server_.directory_.add(s.player_id, s.session_token, s.source)) {
      // A table is full (or the engine handed out an id still held): undo.
      if (inserted != nullptr) admission_.sessions().remove(inserted);
      server_.engine().leave(ticket.player_id, ticket.session_token);
      reply.status = wire::JoinStatus::ServerFull;
      counters.joins_refused.add();
    } else {
      reply.player_id = ticket.player_id;
      reply.session_token = ticket.session_token;
      counters.joins_accepted.add();
    }
  } else {
    reply.status = status == MMO_ERR_OUT_OF_BOUNDS ? wire::JoinStatus::BadSpawn : wire::JoinStatus::ServerFull;
    counters.joins_refused.add();
  }
  tx_.commit(source, wire::encode(reply, tx_.slot()));
}

void Worker::end_session(Session* session) {
  server_.engine().leave(session->player_id, session->session_token);
  server_.directory_.remove(session->player_id);
  admission_.sessions().remove(session);
}

void Worker::flush_engine_batches(uint64_t now_ms) {
  if (move_count_ > 0) {
    size_t written = 0;
    const MmoStatus status = server_.engine().apply_moves({moves_.data(), move_count_}, now_ms, events_, written);
    if (status == MMO_OK) {
      size_t e = 0;
      for (size_t r = 0; r < move_count_; ++r) {
        wire::MoveAck ack;
        ack.sequence = moves_[r].sequence;
        ack.client_time_ms = moves_[r].client_time_ms;
        if (e < written && events_[e].kind == MMO_EVENT_KIND_REJECT) {
          ack.result = events_[e].detail;
          ++e;
        } else if (e < written && events_[e].kind == MMO_EVENT_KIND_ACK) {
          ++e;
          while (e < written && events_[e].kind == MMO_EVENT_KIND_CONTACT) {
            if (ack.contact_count < wire::kContactsMax) {
              ack.contacts[ack.contact_count++] = {events_[e].other_id, events_[e].distance_m, events_[e].detail};
            }
            ++e;
          }
        }
        tx_.commit(move_replies_[r], wire::encode(ack, tx_.slot()));
      }
      batch_moves_ += move_count_;
    }
    move_count_ = 0;
  }
  if (op_count_ > 0) {
    size_t written = 0;
    const MmoStatus status = server_.engine().apply_economy({ops_.data(), op_count_}, results_, written);
    if (status == MMO_OK) {
      for (size_t i = 0; i < written; ++i) {
        const MmoEconomyResult& r = results_[i];
        tx_.commit(op_replies_[i], wire::encode(wire::EconomyResult{r.transaction_id, r.gold_balance, r.status, r.duplicate}, tx_.slot()));
      }
    }
    op_count_ = 0;
  }
}

void Worker::expire_idle_sessions(uint64_t now_ms) {
  const uint64_t idle_ms = uint64_t{server_.config_.idle_timeout_s} * 1000;
  if (idle_ms == 0) return;
  // Ending a session reshuffles the indexes, not the pool, so removing while visiting the
  // pool is safe; the visit is bounded by the pool's capacity.
  admission_.sessions().for_each([&](Session& s) {
    if (s.player_id != 0 && now_ms > s.last_seen_ms + idle_ms) {
      end_session(&s);
      counters.sessions_expired.add();
    }
  });
  sessions_live.store(static_cast<uint32_t>(admission_.sessions().size()), std::memory_order_relaxed);
}

void Worker::send_stats(SourceAddress to, uint32_t request_id) {
  const size_t text_len = server_.format_stats(stats_text_.data(), stats_text_.size() - wire::kStatsReplyFixedSize);
  const size_t bytes = wire::encode(wire::StatsReply{request_id, {stats_text_.data(), text_len}}, stats_datagram_);
  if (bytes == 0) return;
  const sockaddr_in sa = to_sockaddr(to);
  if (sendto(fd_, stats_datagram_.data(), bytes, MSG_DONTWAIT, reinterpret_cast<const sockaddr*>(&sa), sizeof(sa)) == static_cast<ssize_t>(bytes)) {
    counters.datagrams_sent.add();
  } else {
    counters.send_failures.add();
  }
}

// ---------------------------------------------------------------------------------------
// Server

Server::Server(const ServerConfig& config, std::unique_ptr<Engine> engine)
    : config_(config), engine_(std::move(engine)), cookies_(JoinCookies::with_random_secret()), directory_(config.max_players) {
  start_ns_ = monotonic_ns();
  unsigned threads = config_.threads != 0 ? config_.threads : std::max(1u, std::thread::hardware_concurrency());
  AdmissionConfig ac;
  ac.per_address = config_.per_address;
  ac.per_player = config_.per_player;
  ac.max_sessions = config_.max_players;
  ac.admin_key = config_.admin_key;
  tick_latency_ = new_latency();
  merged_update_ = new_latency();
  merged_raid_ = new_latency();
  uint16_t port = config_.port;
  for (unsigned i = 0; i < threads; ++i) {
    const int fd = open_socket(config_.bind_address, port);
    if (i == 0) port = bound_port(fd);  // with --port 0 the others join the first one's port
    workers_.push_back(std::make_unique<Worker>(*this, fd, ac));
  }
  port_ = port;
}

Server::~Server() {
  stop();
  workers_.clear();
  mmo_latency_free(tick_latency_);
  mmo_latency_free(merged_update_);
  mmo_latency_free(merged_raid_);
}

uint64_t Server::now_us() const { return (monotonic_ns() - start_ns_) / 1000; }

void Server::start() {
  if (started_) return;
  started_ = true;
  for (auto& w : workers_) threads_.emplace_back([&w] { w->run(); });
  tick_thread_ = std::thread([this] { tick_loop(); });
}

void Server::stop() {
  stopping_.store(true, std::memory_order_release);
  for (auto& t : threads_) {
    if (t.joinable()) t.join();
  }
  if (tick_thread_.joinable()) tick_thread_.join();
}

void Server::tick_loop() {
  engine_->prewarm_thread();
  const uint64_t period_us = 1'000'000 / std::max(1u, config_.tick_hz);
  std::vector<std::pair<uint64_t, SourceAddress>> roster;
  roster.reserve(config_.max_players);
  std::vector<MmoAoiEntry> entries(wire::kAoiEntriesMax);
  SendBatch tx;
  auto flush = [&](int fd) {
    const auto [sent, failed] = tx.flush(fd);
    aoi_snapshots_sent_.add(sent);
    aoi_send_failures_.add(failed);
  };
  wire::AoiSnapshot snapshot;
  uint64_t next_us = now_us() + period_us;
  while (!stopping_.load(std::memory_order_acquire)) {
    const uint64_t now = now_us();
    if (now < next_us) {
      std::this_thread::sleep_for(std::chrono::microseconds(std::min<uint64_t>(next_us - now, 50'000)));
      continue;
    }
    next_us += period_us;
    if (next_us < now) {  // more than a period behind: skip the missed ticks, do not bunch them
      ticks_late_.add();
      next_us = now + period_us;
    }
    const uint64_t t0 = now_us();
    MmoTickInfo info{};
    engine_->tick(t0 / 1000, info);
    for (auto& w : workers_) {
      roster.clear();
      {
        std::lock_guard lock(w->session_mutex);
        w->for_each_session([&](uint64_t player_id, SourceAddress source) {
          if (roster.size() < roster.capacity()) roster.emplace_back(player_id, source);
        });
      }
      for (const auto& [player_id, source] : roster) {
        size_t written = 0;
        if (engine_->area_of_interest(player_id, entries, written) != MMO_OK) continue;  // left meanwhile
        snapshot.tick = info.tick;
        snapshot.server_time_ms = t0 / 1000;
        snapshot.count = static_cast<uint16_t>(std::min(written, wire::kAoiEntriesMax));
        for (size_t i = 0; i < snapshot.count; ++i) snapshot.entries[i] = {entries[i].entity_id, entries[i].x_m, entries[i].y_m, entries[i].kind};
        tx.commit(source, wire::encode(snapshot, tx.slot()));
        if (tx.full()) flush(w->fd());
      }
      flush(w->fd());
    }
    const uint64_t t1 = now_us();
    std::lock_guard lock(tick_latency_mutex_);
    mmo_latency_record(tick_latency_, t1 - t0, 1);
  }
}

struct Server::LatencyFigures {
  MmoLatencySummary update{};
  MmoLatencySummary raid{};
  MmoLatencySummary tick{};
};

uint64_t Server::worker_total(const Counter WorkerCounters::* field) const {
  uint64_t t = 0;
  for (const auto& w : workers_) t += (w->counters.*field).get();
  return t;
}

uint64_t Server::drops_total(size_t reason) const {
  uint64_t t = 0;
  for (const auto& w : workers_) t += w->counters.drops[reason].get();
  return t;
}

uint64_t Server::sessions_live() const {
  uint64_t t = 0;
  for (const auto& w : workers_) t += w->sessions_live.load(std::memory_order_relaxed);
  return t;
}

Server::LatencyFigures Server::merged_latency() const {
  LatencyFigures f;
  std::lock_guard merge_lock(merge_mutex_);
  mmo_latency_reset(merged_update_);
  mmo_latency_reset(merged_raid_);
  for (const auto& w : workers_) {
    std::lock_guard lock(w->latency_mutex);
    mmo_latency_merge(merged_update_, w->update_latency_);
    mmo_latency_merge(merged_raid_, w->raid_latency_);
  }
  mmo_latency_summary(merged_update_, &f.update);
  mmo_latency_summary(merged_raid_, &f.raid);
  std::lock_guard tick_lock(tick_latency_mutex_);
  mmo_latency_summary(tick_latency_, &f.tick);
  return f;
}


size_t Server::format_stats(char* out, size_t capacity) const {
  size_t pos = 0;
  bool overflow = false;
  auto line = [&](const char* prefix, const char* name, uint64_t value) {
    if (overflow) return;
    const int n = std::snprintf(out + pos, capacity - pos, "%s%s %llu\n", prefix, name, static_cast<unsigned long long>(value));
    if (n < 0 || static_cast<size_t>(n) >= capacity - pos) {
      overflow = true;
      return;
    }
    pos += static_cast<size_t>(n);
  };
  MmoStats s{};
  engine_->stats(s);
#define MMO_STATS_LINE(f) line("engine_", #f, s.f);
  MMO_STATS_FIELDS(MMO_STATS_LINE)
#undef MMO_STATS_LINE
  auto total = [&](const Counter WorkerCounters::* field) { return worker_total(field); };
  for (size_t r = 0; r < kDropReasonCount; ++r) line("drop_", drop_reason_name(static_cast<DropReason>(r)), drops_total(r));
  line("", "datagrams_received", total(&WorkerCounters::datagrams_received));
  line("", "datagrams_sent", total(&WorkerCounters::datagrams_sent) + aoi_snapshots_sent_.get());
  line("", "send_failures", total(&WorkerCounters::send_failures) + aoi_send_failures_.get());
  line("", "challenges_sent", total(&WorkerCounters::challenges_sent));
  line("", "joins_accepted", total(&WorkerCounters::joins_accepted));
  line("", "join_retransmits", total(&WorkerCounters::join_retransmits));
  line("", "joins_refused", total(&WorkerCounters::joins_refused));
  line("", "leaves", total(&WorkerCounters::leaves));
  line("", "sessions_expired", total(&WorkerCounters::sessions_expired));
  line("", "sessions_live", sessions_live());
  line("", "moves_forwarded", total(&WorkerCounters::moves_forwarded));
  line("", "economy_forwarded", total(&WorkerCounters::economy_forwarded));
  line("", "raid_triggers", total(&WorkerCounters::raid_triggers));
  line("", "stats_requests", total(&WorkerCounters::stats_requests));
  line("", "pongs_sent", total(&WorkerCounters::pongs_sent));
  line("", "aoi_snapshots_sent", aoi_snapshots_sent_.get());
  line("", "ticks_late", ticks_late_.get());
  const LatencyFigures f = merged_latency();
  line("", "update_latency_count", f.update.count);
  line("", "update_latency_us_p50", f.update.p50);
  line("", "update_latency_us_p99", f.update.p99);
  line("", "update_latency_us_p999", f.update.p999);
  line("", "update_latency_us_max", f.update.max);
  line("", "raid_spawns", f.raid.count);
  line("", "raid_spawn_us_median", f.raid.p50);
  line("", "raid_spawn_us_max", f.raid.max);
  line("", "tick_us_p50", f.tick.p50);
  line("", "tick_us_p99", f.tick.p99);
  line("", "tick_us_max", f.tick.max);
  MmoEconomyAudit audit{};
  engine_->economy_audit(audit);
  line("", "economy_live_gold", audit.live_gold);
  line("", "economy_departed_gold", audit.departed_gold);
  line("", "economy_minted_gold", audit.minted_gold);
  line("", "economy_sunk_gold", audit.sunk_gold);
  line("", "economy_conserved", audit.conserved);
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  line("", "cpu_user_us", static_cast<uint64_t>(ru.ru_utime.tv_sec) * 1'000'000 + static_cast<uint64_t>(ru.ru_utime.tv_usec));
  line("", "cpu_system_us", static_cast<uint64_t>(ru.ru_stime.tv_sec) * 1'000'000 + static_cast<uint64_t>(ru.ru_stime.tv_usec));
  line("", "peak_rss_kb", static_cast<uint64_t>(ru.ru_maxrss));
  line("", "uptime_ms", now_us() / 1000);
  return overflow ? 0 : pos;
}

std::string Server::stats_line() const {
  MmoStats s{};
  engine_->stats(s);
  uint64_t drops = 0;
  for (size_t r = 0; r < kDropReasonCount; ++r) drops += drops_total(r);
  const uint64_t sessions = sessions_live();
  const uint64_t received = worker_total(&WorkerCounters::datagrams_received);
  const LatencyFigures f = merged_latency();
  char buf[512];
  std::snprintf(buf, sizeof(buf),
                "uptime_ms=%llu players=%llu datagrams_received=%llu moves_applied=%llu drops=%llu aoi_sent=%llu raid_bursts=%llu "
                "update_latency_us p50=%llu p99=%llu p999=%llu max=%llu",
                static_cast<unsigned long long>(now_us() / 1000), static_cast<unsigned long long>(sessions),
                static_cast<unsigned long long>(received), static_cast<unsigned long long>(s.moves_applied),
                static_cast<unsigned long long>(drops), static_cast<unsigned long long>(aoi_snapshots_sent_.get()),
                static_cast<unsigned long long>(s.raid_bursts), static_cast<unsigned long long>(f.update.p50),
                static_cast<unsigned long long>(f.update.p99), static_cast<unsigned long long>(f.update.p999),
                static_cast<unsigned long long>(f.update.max));
  return buf;
}

}  // namespace mmo::net
