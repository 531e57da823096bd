// server.cpp: the server's life: binding every worker's socket, starting the threads, and
// the shutdown (stop: every thread told, then joined). See server.hpp for the threads and
// what they share.
#include "net/server.hpp"

#include <algorithm>
#include <stdexcept>
#include <thread>

#include "net/udp.hpp"
#include "net/worker.hpp"

namespace mmo::net {

MmoLatency* new_latency() {
  MmoLatency* h = nullptr;
  if (mmo_latency_new(kLatencyHighestUs, 3, &h) != MMO_OK) throw std::runtime_error("mmo_latency_new failed");
  return h;
}

Server::Server(const ServerConfig& config, std::unique_ptr<Engine> engine)
    : config_(config), engine_(std::move(engine)), cookies_(JoinCookies::with_random_secret()), directory_(config.max_players, config.max_sessions_per_host),
      join_rate_(config.joins.rate_per_s, config.joins.burst, 0) {  // now_us() counts from the start
  start_ns_ = monotonic_ns();
  unsigned threads = config_.threads != 0 ? config_.threads : std::max(1u, std::thread::hardware_concurrency());
  AdmissionConfig ac;
  ac.per_address = config_.per_address;
  ac.per_host_joins = config_.per_host_joins;
  ac.per_player = config_.per_player;
  ac.max_sessions = config_.max_players;
  ac.admin_key = config_.admin_key;
  ac.address_slots_pow2 = config_.address_table_slots;
  tick_latency_ = new_latency();
  merged_update_ = new_latency();
  merged_raid_ = new_latency();
  uint16_t port = config_.port;
  for (unsigned i = 0; i < threads; ++i) {
    const int fd = open_socket(config_.bind_address, port, config_.socket_buffer_bytes);
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

MmoStatus Server::engine_status(const char* call, MmoStatus status, WorkerCounters& counters) {
  if (status == MMO_OK) return status;
  counters.engine_errors[engine_status_slot(status)].add();
  if ((status == MMO_ERR_PANIC || status == MMO_ERR_POISONED) && !poisoned_.load(std::memory_order_acquire)) {
    std::lock_guard lock(poisoned_mutex_);
    if (poisoned_reason_.empty()) poisoned_reason_ = std::string(call) + " returned " + mmo_status_name(status);
    poisoned_.store(true, std::memory_order_release);
  }
  return status;
}

std::string Server::poisoned_reason() const {
  if (!poisoned_.load(std::memory_order_acquire)) return {};
  std::lock_guard lock(poisoned_mutex_);
  return poisoned_reason_;
}

uint64_t Server::engine_errors_total(size_t slot) const {
  uint64_t t = tick_counters_.engine_errors[slot].get();
  for (const auto& w : workers_) t += w->counters.engine_errors[slot].get();
  return t;
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

}  // namespace mmo::net
