// main.cpp: the mmo-server executable: flags, start-up, the periodic stats line, and a clean
// shutdown on SIGINT/SIGTERM (final counters and update-latency percentiles, exit 0).
//
// SIGINT and SIGTERM are blocked in every thread (the mask is set before any thread starts)
// and the main thread takes them with sigtimedwait, so a signal never interrupts a worker
// mid-batch and the shutdown path is ordinary code, not a signal handler.
#include <signal.h>

#include <CLI/CLI.hpp>
#include <cerrno>
#include <cstdio>
#include <ctime>
#include <exception>
#include <memory>
#include <string>
#include <vector>

#ifdef MMO_WITH_MIMALLOC
#include <mimalloc.h>
#endif

#include "baseline/baseline_engine.hpp"
#include "engine/engine.hpp"
#include "net/server.hpp"

namespace {

const char* allocator_name() {
#ifdef MMO_WITH_MIMALLOC
  // Calling into the library also keeps the linker from dropping it: its malloc override is
  // what makes it the allocator of the whole process, C++ and Rust alike.
  static char name[32];
  std::snprintf(name, sizeof(name), "mimalloc %d", mi_version());
  return name;
#else
  return "glibc malloc";
#endif
}

uint64_t parse_u64(const std::string& text) {
  size_t used = 0;
  const unsigned long long v = std::stoull(text, &used, 0);  // 0x... hex or decimal
  if (used != text.size()) throw std::invalid_argument("not an integer: " + text);
  return v;
}

}  // namespace

int main(int argc, char** argv) {
  mmo::net::ServerConfig config;
  std::string engine_name = "rust";
  std::string admin_key_text = "0";
  unsigned stats_interval_s = 10;
  uint64_t starting_gold = 0;

  CLI::App app{"mmo-server: the game-state service. UDP wire protocol v1 (docs/protocol.md) in front of the Rust core or the C++ baseline."};
  app.add_option("--bind", config.bind_address, "IPv4 address to serve on")->capture_default_str();
  app.add_option("--port", config.port, "UDP port (0: any free port, printed at start)")->capture_default_str();
  app.add_option("--threads", config.threads, "I/O worker threads (0: one per core)")->capture_default_str();
  app.add_option("--tick-hz", config.tick_hz, "ticks per second (AoI snapshots go out at this rate)")
      ->check(CLI::Range(1u, 100u))
      ->capture_default_str();
  app.add_option("--engine", engine_name, "game-state engine")->check(CLI::IsMember({"rust", "baseline"}))->capture_default_str();
  app.add_option("--max-players", config.max_players, "players joined at once, at most")->check(CLI::Range(1u, 1u << 20))->capture_default_str();
  app.add_option("--stats-interval-s", stats_interval_s, "seconds between stats lines (0: none)")->capture_default_str();
  app.add_option("--admin-key", admin_key_text, "key for RAID_TRIGGER and STATS_REQUEST (decimal or 0x hex; 0 disables admin messages)")
      ->capture_default_str();
  app.add_option("--player-rate", config.per_player.rate_per_s, "messages per second per player")->capture_default_str();
  app.add_option("--player-burst", config.per_player.burst, "burst allowance per player")->capture_default_str();
  app.add_option("--address-rate", config.per_address.rate_per_s, "datagrams per second per source address")->capture_default_str();
  app.add_option("--address-burst", config.per_address.burst, "burst allowance per source address")->capture_default_str();
  app.add_option("--idle-timeout-s", config.idle_timeout_s, "end a session silent this long (0: never)")->capture_default_str();
  app.add_option("--starting-gold", starting_gold, "gold each new wallet starts with (minted at join)")->capture_default_str();
  CLI11_PARSE(app, argc, argv);

  try {
    config.admin_key = parse_u64(admin_key_text);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "mmo-server: --admin-key: %s\n", e.what());
    return 2;
  }

  // Block the shutdown signals before any thread exists, so every thread inherits the mask.
  sigset_t shutdown_signals;
  sigemptyset(&shutdown_signals);
  sigaddset(&shutdown_signals, SIGINT);
  sigaddset(&shutdown_signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &shutdown_signals, nullptr);

  std::unique_ptr<mmo::net::Server> server;
  try {
    MmoConfig core{};
    mmo_config_default(&core);
    core.player_capacity = config.max_players;
    core.tick_ms = 1000 / config.tick_hz;
    core.starting_gold = starting_gold;
    std::unique_ptr<mmo::Engine> engine;
    engine = engine_name == "rust" ? mmo::make_rust_engine(core) : mmo::make_baseline_engine(core);
    server = std::make_unique<mmo::net::Server>(config, std::move(engine));
  } catch (const std::exception& e) {
    std::fprintf(stderr, "mmo-server: %s\n", e.what());
    return 1;
  }

  server->start();
  std::printf("mmo-server: listening on %s:%u engine=%s threads=%u tick_hz=%u max_players=%u allocator=%s admin=%s\n",
              config.bind_address.c_str(), server->port(), engine_name.c_str(), server->threads(), config.tick_hz, config.max_players,
              allocator_name(), config.admin_key != 0 ? "enabled" : "disabled");
  std::fflush(stdout);

  int signal_number = 0;
  while (signal_number == 0) {
    timespec wait{};
    wait.tv_sec = stats_interval_s != 0 ? stats_interval_s : 3600;
    const int got = sigtimedwait(&shutdown_signals, nullptr, &wait);
    if (got > 0) {
      signal_number = got;
    } else if (got < 0 && errno == EAGAIN && stats_interval_s != 0) {
      std::printf("mmo-server: stats %s\n", server->stats_line().c_str());
      std::fflush(stdout);
    }
  }

  std::printf("mmo-server: %s received, shutting down\n", signal_number == SIGINT ? "SIGINT" : "SIGTERM");
  server->stop();
  std::vector<char> text(mmo::wire::kStatsReplyMax);
  const size_t n = server->format_stats(text.data(), text.size());
  std::printf("mmo-server: final counters\n%.*s", static_cast<int>(n), text.data());
  std::printf("mmo-server: final %s\n", server->stats_line().c_str());
  std::fflush(stdout);
  server.reset();
  return 0;
}
