// server.hpp: mmo-server's running parts: the I/O workers (worker.hpp/.cpp), the tick thread
// (tick.cpp), the figures they report and the admin messages (admin.cpp), and the server's
// lifecycle (server.cpp: bind, start, stop).
//
// Threads and what they share:
// - N workers, each with its own SO_REUSEPORT UDP socket and epoll loop. The kernel hashes
//   each (source address, port) to one socket, so each client's session lives in exactly one
//   worker's SessionTable, which only that worker touches (no lock). A worker drains up to 64
//   datagrams per recvmmsg, admits them (admission.hpp), hands the batch's moves to the engine
//   in one call and its economy requests in another, and flushes every reply with one
//   sendmmsg. After each tick it sends its own sessions their area-of-interest snapshots,
//   read from the engine's published world snapshot in chunks of at most 64 players (one
//   engine call and one sendmmsg per chunk), paced over aoi_spread_pct of the tick period and
//   draining its socket between chunks.
// - One tick thread: runs the engine's tick at the tick rate (expiry, world snapshot) and then
//   wakes every worker through its eventfd. It touches no session and takes no lock a worker
//   takes: no worker ever waits on the tick.
// - With a durable economy, the engine's committer thread calls on_economy_durable after each
//   group it made durable: it publishes the watermark and sends, on each worker's socket, the
//   economy replies that waited for it (held_replies.hpp). It touches no session; a worker is
//   not woken for it.
// - The reporter (whoever calls format_stats/stats_line: the main thread, or a worker
//   answering STATS_REQUEST) reads counters (relaxed atomics, one writer each) and merges the
//   workers' latency histograms under each worker's latency mutex.
#pragma once

#include <algorithm>
#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "net/admission.hpp"
#include "net/connect_token.hpp"
#include "engine/engine.hpp"

namespace mmo::net {

// A starting zone: a player of faction f with no saved position appears in spawn point
// f % count, uniformly in its disc (where, from the account id: the same account, the same
// place).
struct SpawnPoint {
  float x_m = 2048;
  float y_m = 2048;
  float radius_m = 1900;
};

struct ServerConfig {
  std::string bind_address = "127.0.0.1";
  uint16_t port = 7777;  // 0: any free port (read it back with Server::port())
  unsigned threads = 0;  // 0: one per core
  unsigned tick_hz = 10;
  int tick_nice = 10;  // the tick thread's niceness (0: the process's)
  // Share of the tick period over which a worker spreads its area-of-interest round, in
  // percent (0: all at once after the tick). Spread, the round is not a burst on every core
  // that the moves arriving after the tick queue behind.
  unsigned aoi_spread_pct = 80;
  // After a loop turn that read datagrams, a worker keeps polling its socket without sleeping
  // for this long before it blocks in epoll_wait (0: never). A datagram that arrives meanwhile
  // is read at once: no wake-up, whose cross-CPU interrupt the sender pays and whose
  // scheduling delay the datagram waits. The cost is the CPU the worker spins.
  unsigned idle_poll_us = 0;
  // The scheduler slice each worker thread asks for, in microseconds (thread_sched.hpp; 0:
  // the kernel's default, 1.4 ms on two CPUs). Shorter than the other threads' slices, a
  // worker woken by a datagram preempts them at once instead of waiting out the running
  // one's slice (EEVDF, Linux 6.12+; older kernels ignore it). Off by default: on the
  // development VM it moved neither the workers' wake-up delays nor the update tail
  // (README "A worker's scheduler slice").
  unsigned worker_slice_us = 0;
  uint32_t max_players = 8192;
  uint32_t max_sessions_per_host = 64;  // live sessions one source IP address may hold (0: no limit)
  uint64_t admin_key = 0;
  AdminSources admin_sources = AdminSources::loopback();  // where admin messages are answered from
  RateLimit per_address{400, 800};
  RateLimit per_player{60, 120};
  RateLimit per_host_joins{100, 200};  // valid-cookie JOIN_CONFIRMs per second per source IP address, per worker
  RateLimit joins{1000, 2000};         // sessions created per second, the whole server
  unsigned idle_timeout_s = 30;
  uint32_t address_table_slots = 16384;     // source addresses the rate limiter tracks (power of two)
  int socket_buffer_bytes = 4 << 20;         // SO_RCVBUF / SO_SNDBUF of each worker socket
  uint32_t inject_panic_after_moves = 0;     // test hook: poison the engine after this many moves (0: never)
  // Connect tokens: the backend's public key, the address tokens must name (public_ip_be 0:
  // any of this host's addresses; public_port 0: the port bound), and the longest lifetime a
  // token may claim (it also bounds how long used token ids are remembered).
  std::array<uint8_t, kTokenPublicKeySize> token_public_key{};
  uint32_t public_ip_be = 0;
  uint16_t public_port = 0;
  uint64_t token_max_lifetime_ms = 120'000;
  std::vector<SpawnPoint> spawn_points{SpawnPoint{}};
  uint32_t saved_positions = 65536;  // accounts whose last position is remembered (a power of two)
  // Directory of the economy's durable store (empty: the engine keeps its economy in memory).
  std::string economy_data_dir;
  // How long the store's committer lets a change wait for others after an idle spell.
  uint32_t economy_commit_linger_us = 0;
  // Size of the store's commit log segments in KiB (0: the engine's default).
  uint32_t economy_log_segment_kib = 0;
};

// Engine statuses counted by kind: slot (status - 1000) for the error codes 1001..1099, slot
// 0 for anything else that is not MMO_OK.
inline constexpr size_t kEngineStatusSlots = 100;
inline size_t engine_status_slot(MmoStatus status) {
  return status > 1000 && status < 1000 + kEngineStatusSlots ? status - 1000 : 0;
}

// A counter with one writer thread: the writer adds without a read-modify-write bus lock;
// readers see a value at most a few updates old.
class Counter {
 public:
  void add(uint64_t n = 1) { value_.store(value_.load(std::memory_order_relaxed) + n, std::memory_order_relaxed); }
  uint64_t get() const { return value_.load(std::memory_order_relaxed); }

 private:
  std::atomic<uint64_t> value_{0};
};

// One worker's counters. Written by that worker only; read by the reporter. Each worker's
// block starts on its own 128-byte boundary (two 64-byte lines: Intel's adjacent-line
// prefetcher pulls pairs), so workers never write a line another worker writes.
struct alignas(128) WorkerCounters {
  Counter datagrams_received;
  Counter datagrams_sent;
  Counter send_failures;
  // The datagram path's system calls, so batching can be read off the counters: turns of the
  // worker's loop (one epoll_wait each, sleeping or not), recvmmsg calls (each drain ends with
  // a short or empty one), and sendmmsg/sendto calls (replies, area-of-interest chunks, stats).
  Counter loop_turns;
  Counter receive_calls;
  Counter send_calls;
  Counter challenges_sent;
  Counter joins_accepted;
  Counter join_retransmits;
  Counter joins_refused;
  // Of those, joins from a host already holding max_sessions_per_host sessions.
  Counter joins_refused_host_full;
  // Of those, joins past the server's join rate, or with the used-token table full (answered
  // try later).
  Counter joins_refused_rate;
  // Of those, joins whose connect token was refused, by reason (malformed, bad signature,
  // expired, wrong server), whose account had a live session from another address, and whose
  // token had already admitted a session.
  Counter joins_refused_token_malformed;
  Counter joins_refused_token_bad_signature;
  Counter joins_refused_token_expired;
  Counter joins_refused_token_wrong_server;
  Counter joins_refused_account_live;
  Counter joins_refused_token_used;
  // Of those, joins the server had no room for (its session tables, or the engine, full),
  // whose spawn the engine refused, and that the engine asked to resend later (the account
  // still in a session it is ending, or the economy's disk behind).
  Counter joins_refused_server_full;
  Counter joins_refused_spawn;
  Counter joins_refused_engine_busy;
  // Joins that spawned at the account's saved position (the others at a spawn point).
  Counter joins_at_saved_position;
  // Joins of an account live on another port of the same host: its old session was asked to
  // end and the join answered try later (the resent confirm joins).
  Counter joins_replacing;
  // Sessions this worker ended because their account joined again from the same host.
  Counter sessions_replaced;
  Counter leaves;
  Counter sessions_expired;
  Counter moves_forwarded;
  Counter economy_forwarded;
  // ATTACKs answered (landed or refused by the engine's rules: the engine counts which).
  Counter attacks_answered;
  // KILL_NOTICEs sent to the players in a killer's area of interest.
  Counter kill_notices_sent;
  // LOOT_CLAIMs answered (claimed or refused by the engine's rules: the engine counts which).
  Counter loot_claims_answered;
  // TRADE_OFFERs and TRADE_ANSWERs answered (the engine counts what each decided).
  Counter trades_answered;
  // TRADE_NOTICEs sent (offers to takers, accepts and declines to makers).
  Counter trade_notices_sent;
  // GRANTs answered.
  Counter grants_answered;
  // Economy replies (results, loot results, trade notices) held until their change was
  // durable, and those dropped because the held queue was full (the client retransmits and
  // gets the recorded answer).
  Counter economy_replies_held;
  Counter economy_replies_dropped;
  Counter raid_triggers;
  Counter stats_requests;
  Counter pongs_sent;
  Counter aoi_snapshots_sent;
  // Engine calls that returned something other than MMO_OK, by status.
  Counter engine_errors[kEngineStatusSlots];
  // Ticks whose area-of-interest round this worker had not finished when the next tick woke it
  // (the rest of that round is skipped: the newer snapshot supersedes it).
  Counter aoi_rounds_overrun;
  // Datagrams whose kernel receive timestamp was missing (their latency starts at the read).
  Counter rx_timestamps_missing;
  Counter drops[kDropReasonCount];
};

class Worker;

// A fresh latency histogram (microseconds, 1..kLatencyHighestUs, `significant_digits`
// decimal digits: udp.hpp's k*LatencyDigits); throws on failure.
MmoLatency* new_latency(uint8_t significant_digits);

class Server {
 public:
  // Binds every worker's socket (throws std::runtime_error on failure); starts nothing.
  Server(const ServerConfig& config, std::unique_ptr<Engine> engine);
  ~Server();
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  void start();
  // Stops and joins every thread. Idempotent.
  void stop();
  uint16_t port() const { return port_; }
  unsigned threads() const { return static_cast<unsigned>(workers_.size()); }
  Engine& engine() { return *engine_; }
  uint64_t now_us() const;
  // The tick period (the tick thread's, the one JOIN_ACCEPT tells clients).
  uint64_t tick_period_us() const { return uint64_t{1'000'000} / std::max(1u, config_.tick_hz); }
  // How long a worker spreads one area-of-interest round over: aoi_spread_pct of the tick period.
  uint64_t aoi_spread_us() const { return tick_period_us() * config_.aoi_spread_pct / 100; }
  unsigned idle_poll_us() const { return config_.idle_poll_us; }
  unsigned worker_slice_us() const { return config_.worker_slice_us; }
  // Where a joining account appears: its saved position, else its faction's spawn point.
  // Returns whether the position was the saved one.
  bool spawn_for(uint64_t account_id, uint8_t faction, float& x_m, float& y_m) const;
  // Every engine call's status goes through here: a non-OK one is counted by kind (`counters`
  // is the calling thread's block), and MMO_ERR_PANIC or MMO_ERR_POISONED marks the engine
  // poisoned with a reason. Returns `status`.
  MmoStatus engine_status(const char* call, MmoStatus status, WorkerCounters& counters);
  // Empty while the engine is healthy; otherwise why it is not (the first poisoning call).
  std::string poisoned_reason() const;
  // Sums of every worker's counters and the tick thread's, for the reporters.
  uint64_t engine_errors_total(size_t slot) const;
  // The server's latency histograms (microseconds): update latency, update service time (the
  // part of it after the worker read the datagram), raid spawn and tick durations.
  enum class Latency { Update, UpdateService, RaidSpawn, Tick };
  // Cumulative counts of one histogram at ascending `bounds_us` (the Prometheus `le` shape),
  // its count and its sum in microseconds; the workers' histograms merged first. Thread-safe.
  void latency_buckets(Latency which, std::span<const uint64_t> bounds_us, std::span<uint64_t> cumulative, uint64_t& count,
                       uint64_t& sum_us) const;

  // Every figure as `name value` lines (the STATS_REPLY text); returns the bytes written
  // (0 if `capacity` is too small). Thread-safe.
  size_t format_stats(char* out, size_t capacity) const;
  // A one-line summary for the periodic log.
  std::string stats_line() const;
  // How the economy is kept: "memory", or "durable" with what opening the store found.
  const std::string& economy_report() const { return economy_report_; }

 private:
  friend class Worker;
  friend std::string prometheus_text(const Server& server);
  void tick_loop();
  // The engine's committer made a group durable: sends, on its own thread, every worker's
  // economy replies that waited for it (held_replies.hpp).
  static void on_economy_durable(void* server);
  struct LatencyFigures;
  LatencyFigures merged_latency() const;
  // Sums over the workers (relaxed reads; each a moment's value, not one snapshot).
  uint64_t worker_total(const Counter WorkerCounters::* field) const;
  uint64_t drops_total(size_t reason) const;
  // Datagrams sent, and that could not be sent: the workers' own batches and their held
  // economy replies (which the committer may send on their sockets).
  uint64_t datagrams_sent_total() const;
  uint64_t send_failures_total() const;
  // sendmmsg/sendto calls: the workers' and their held replies' (whoever sent those).
  uint64_t send_calls_total() const;
  uint64_t sessions_live() const;
  // The scheduler slice the workers hold, in microseconds, as the kernel reports it (the
  // least of theirs; 0 where the kernel reports none, thread_sched.hpp).
  uint64_t worker_slice_us_held() const;

  ServerConfig config_;
  std::unique_ptr<Engine> engine_;
  JoinCookies cookies_;
  SessionDirectory directory_;
  // Checks connect tokens (set once at construction, read by the workers).
  std::unique_ptr<TokenVerifier> tokens_;
  // Joins the whole server admits a second (--join-rate): taken by a worker before each new
  // session; a mutex is enough at this rate.
  std::mutex join_rate_mutex_;
  TokenBucket join_rate_;  // guarded by join_rate_mutex_
  uint16_t port_ = 0;
  std::string economy_report_ = "memory";
  /// The engine's durable watermark as the front knows it: every economy change with a ledger
  /// number up to it is on disk. Set at construction, then written (seq_cst) only by the
  /// committer's callback, before it sends what waited; read (seq_cst) by the workers. Its
  /// own atomic, not the engine's, so the hand-off in held_replies.hpp is between C++ atomics.
  std::atomic<uint64_t> economy_durable_through_{0};
  /// Set by ~Server, under economy_callback_mutex_, before it frees the engine; read by the
  /// committer's callback under the same mutex, which then calls nothing. Freeing the engine
  /// joins the committer, and the committer's last group can still call back meanwhile: it
  /// must not read engine_ (unique_ptr::reset has already nulled it) nor call into an engine
  /// being freed. Only the committer and ~Server take the mutex, so it is never contended on
  /// any player's path.
  std::mutex economy_callback_mutex_;
  bool economy_closing_ = false;  // guarded by economy_callback_mutex_
  std::vector<std::unique_ptr<Worker>> workers_;
  std::vector<std::thread> threads_;
  std::thread tick_thread_;
  std::atomic<bool> stopping_{false};
  bool started_ = false;
  uint64_t start_ns_ = 0;
  /// Written by the tick thread; read by the reporter.
  Counter ticks_late_;
  /// The tick thread's own counters block (only its engine errors are used).
  WorkerCounters tick_counters_;
  /// Set once, by the first call that finds the engine poisoned; read by the main thread.
  std::atomic<bool> poisoned_{false};
  mutable std::mutex poisoned_mutex_;
  std::string poisoned_reason_;  // guarded by poisoned_mutex_
  /// Tick durations (µs). Written by the tick thread under tick_latency_mutex_.
  mutable std::mutex tick_latency_mutex_;
  MmoLatency* tick_latency_ = nullptr;
  /// Scratch histograms the reporter merges into, under merge_mutex_.
  mutable std::mutex merge_mutex_;
  MmoLatency* merged_update_ = nullptr;
  MmoLatency* merged_service_ = nullptr;
  MmoLatency* merged_raid_ = nullptr;
};

}  // namespace mmo::net
