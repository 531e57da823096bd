// server.cpp: the server's life: binding every worker's socket, starting the threads, and
// the shutdown (stop: every thread told, then joined). See server.hpp for the threads and
// what they share.
#include "net/server.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <stdexcept>
#include <thread>

#include "net/udp.hpp"
#include "net/worker.hpp"

namespace mmo::net {

MmoLatency* new_latency(uint8_t significant_digits) {
  MmoLatency* h = nullptr;
  if (mmo_latency_new(kLatencyHighestUs, significant_digits, &h) != MMO_OK) throw std::runtime_error("mmo_latency_new failed");
  return h;
}

namespace {

size_t pow2_at_least(double n) {
  size_t p = 1;
  while (static_cast<double>(p) < n && p < (size_t{1} << 30)) p <<= 1;
  return p;
}

DirectoryLimits directory_limits(const ServerConfig& c) {
  DirectoryLimits l;
  l.capacity = c.max_players;
  l.max_per_host = c.max_sessions_per_host;
  // Every used token id is remembered until it expires: at most the join rate's tokens over the
  // longest lifetime, plus a burst, plus the live sessions; twice that keeps probe runs short.
  const double lifetime_s = static_cast<double>(c.token_max_lifetime_ms) / 1000.0;
  l.used_token_slots_pow2 = std::max<size_t>(UsedTokens::kProbes, pow2_at_least(2.0 * (c.joins.rate_per_s * lifetime_s + c.joins.burst + c.max_players)));
  l.saved_position_slots_pow2 = pow2_at_least(std::max<uint32_t>(1, c.saved_positions));
  return l;
}

}  // namespace

Server::Server(const ServerConfig& config, std::unique_ptr<Engine> engine)
    : config_(config), engine_(std::move(engine)), cookies_(JoinCookies::with_random_secret()), directory_(directory_limits(config)),
      join_rate_(config.joins.rate_per_s, config.joins.burst, 0) {  // now_us() counts from the start
  if (config_.spawn_points.empty()) throw std::invalid_argument("no spawn point");
  if (!token_crypto_ready()) throw std::runtime_error("libsodium failed to initialise");
  start_ns_ = monotonic_ns();
  unsigned threads = config_.threads != 0 ? config_.threads : std::max(1u, std::thread::hardware_concurrency());
  AdmissionConfig ac;
  ac.per_address = config_.per_address;
  ac.per_host_joins = config_.per_host_joins;
  ac.per_player = config_.per_player;
  ac.max_sessions = config_.max_players;
  ac.admin_key = config_.admin_key;
  ac.admin_sources = config_.admin_sources;
  ac.address_slots_pow2 = config_.address_table_slots;
  tick_latency_ = new_latency(kTickLatencyDigits);
  merged_update_ = new_latency(kUpdateLatencyDigits);
  merged_service_ = new_latency(kUpdateLatencyDigits);
  merged_raid_ = new_latency(kRaidSpawnLatencyDigits);
  uint16_t port = config_.port;
  for (unsigned i = 0; i < threads; ++i) {
    const int fd = open_socket(config_.bind_address, port, config_.socket_buffer_bytes);
    if (i == 0) port = bound_port(fd);  // with --port 0 the others join the first one's port
    workers_.push_back(std::make_unique<Worker>(*this, static_cast<uint16_t>(i), fd, ac));
  }
  port_ = port;
  const TokenServer self{config_.public_ip_be != 0 ? config_.public_ip_be : bind_ip_be(config_.bind_address),
                         config_.public_port != 0 ? config_.public_port : port_};
  tokens_ = std::make_unique<TokenVerifier>(config_.token_public_key, self, config_.token_max_lifetime_ms);
  if (!config_.economy_data_dir.empty()) {
    MmoRecoveryInfo info{};
    std::string message;
    const MmoStatus status = engine_->economy_open(config_.economy_data_dir, config_.economy_commit_linger_us, config_.economy_log_segment_kib, &Server::on_economy_durable, this, info, message);
    if (status != MMO_OK) throw std::runtime_error("economy store in " + config_.economy_data_dir + ": " + message);
    char line[256];
    std::snprintf(line, sizeof line, "durable (%s/economy.redb and its commit log: %llu accounts, %llu entries, opened in %.1f ms%s%s)",
                  config_.economy_data_dir.c_str(), static_cast<unsigned long long>(info.accounts),
                  static_cast<unsigned long long>(info.entries), static_cast<double>(info.elapsed_us) / 1000.0,
                  info.repaired != 0 ? "; " : "", info.repaired != 0 ? message.c_str() : "");
    economy_report_ = line;
  }
  // Before any worker runs, so before any economy change (an engine without a durable store
  // reports everything durable: UINT64_MAX).
  economy_durable_through_.store(engine_->economy_durable_through(), std::memory_order_seq_cst);
}

void Server::on_economy_durable(void* context) {
  // Runs on the committer thread while the engine lives; ~Server frees the engine (joining
  // that thread) before the workers, and says so first (economy_closing_), since the
  // committer's last group may call back while the engine is being freed.
  auto* server = static_cast<Server*>(context);
  const std::lock_guard lock(server->economy_callback_mutex_);
  if (server->economy_closing_) return;
  // The watermark only grows: an engine that cannot answer (poisoned: its read says 0)
  // leaves it where it was.
  const uint64_t through = server->engine_->economy_durable_through();
  uint64_t was = server->economy_durable_through_.load(std::memory_order_seq_cst);
  while (through > was && !server->economy_durable_through_.compare_exchange_weak(was, through, std::memory_order_seq_cst)) {
  }
  for (auto& w : server->workers_) w->release_durable();
}

bool Server::spawn_for(uint64_t account_id, uint8_t faction, float& x_m, float& y_m) const {
  if (directory_.saved_position(account_id, x_m, y_m)) return true;
  const SpawnPoint& p = config_.spawn_points[faction % config_.spawn_points.size()];
  // Uniform in the disc: radius from the square root of a uniform draw, angle uniform.
  const uint64_t h = mix(account_id + 0x9e3779b97f4a7c15ULL);  // SplitMix64's first output for the account
  const double u = static_cast<double>(h >> 40) / static_cast<double>(uint64_t{1} << 24);
  const double a = static_cast<double>(h & 0xffffff) / static_cast<double>(uint64_t{1} << 24) * 6.283185307179586;
  const double r = static_cast<double>(p.radius_m) * std::sqrt(u);
  x_m = static_cast<float>(p.x_m + r * std::cos(a));
  y_m = static_cast<float>(p.y_m + r * std::sin(a));
  return false;
}

Server::~Server() {
  stop();
  {
    // From here the committer's callback calls nothing: it waits for one under way to end.
    const std::lock_guard lock(economy_callback_mutex_);
    economy_closing_ = true;
  }
  engine_.reset();  // stops the economy's committer, the one thread that calls into the workers
  workers_.clear();
  mmo_latency_free(tick_latency_);
  mmo_latency_free(merged_update_);
  mmo_latency_free(merged_service_);
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
