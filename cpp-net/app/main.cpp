// main.cpp: the mmo-server executable: settings (defaults, then --config FILE, then flags;
// settings.hpp), start-up, the periodic stats line, a clean shutdown on SIGINT/SIGTERM (final
// counters and update-latency percentiles, exit 0), and a stop with exit status 3 and a
// one-line reason when the engine is poisoned (a panic inside it left its state unknown; a
// supervisor restarts the process).
//
// SIGINT and SIGTERM are blocked in every thread (the mask is set before any thread starts)
// and the main thread takes them with sigtimedwait, so a signal never interrupts a worker
// mid-batch and the shutdown path is ordinary code, not a signal handler.
#include <signal.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <exception>
#include <memory>
#include <string>
#include <vector>

#ifdef MMO_WITH_MIMALLOC
#include <mimalloc.h>
#endif

#include "app/settings.hpp"
#include "baseline/baseline_engine.hpp"
#include "engine/engine.hpp"
#include "net/metrics.hpp"
#include "net/server.hpp"

namespace {

// Exit statuses: 0 clean shutdown, 1 start-up failure, 2 bad settings, 3 engine poisoned.
constexpr int kExitStartup = 1;
constexpr int kExitSettings = 2;
constexpr int kExitPoisoned = 3;
// How often the main thread looks for a poisoned engine between signals.
constexpr long kWatchIntervalNs = 100'000'000;

const char* allocator_name() {
#ifdef MMO_WITH_MIMALLOC
  // Calling into the library also keeps the linker from dropping it: its malloc override is
  // what makes it the allocator of the whole process, C++ and Rust alike.
  static char name[64];
  std::snprintf(name, sizeof(name), "mimalloc-%d(decommit_delay_ms=%ld)", mi_version(), mi_option_get(mi_option_decommit_delay));
  return name;
#else
  return "glibc malloc";
#endif
}

void print_final(const mmo::net::Server& server) {
  std::vector<char> text(mmo::wire::kStatsReplyMax);
  const size_t n = server.format_stats(text.data(), text.size());
  std::printf("mmo-server: final counters\n%.*s", static_cast<int>(n), text.data());
  std::printf("mmo-server: final %s\n", server.stats_line().c_str());
  std::fflush(stdout);
}

}  // namespace

int main(int argc, char** argv) {
  // stdout's buffer lives in the binary, not on the heap: glibc would otherwise malloc it on the
  // first printf and never free it, and the soak's "bytes still allocated at exit" is meant to
  // read 0. Line-buffered so each status line reaches a log or pipe as it is written.
  static char stdout_buffer[BUFSIZ];
  std::setvbuf(stdout, stdout_buffer, _IOLBF, sizeof stdout_buffer);
#ifdef MMO_WITH_MIMALLOC
  // Freed pages go back to the kernel at once rather than after mimalloc's default 25 ms: the
  // server's steady state allocates nothing, so what it frees is start-up, join and the
  // economy committer's transient memory, and holding it only raises the peak. Measured
  // (docs/results/history.md, the run of bfceae8): peak RSS of a 1,000-bot raid run 35.1-35.4 MB
  // before, 34.3-34.7 MB after, CPU per update unchanged within the runs' spread.
  // `set_default` leaves a value the operator gave in MIMALLOC_DECOMMIT_DELAY alone.
  mi_option_set_default(mi_option_decommit_delay, 0);
#endif
  mmo::app::Settings settings;
  try {
    settings = mmo::app::Settings::defaults();
    // The file first (flags override it): find --config before the full parse.
    CLI::App pre;
    pre.allow_extras();
    pre.set_help_flag();
    std::string config_path;
    pre.add_option("--config", config_path);
    pre.parse(argc, argv);
    if (!config_path.empty()) mmo::app::load_file(config_path, settings);
  } catch (const mmo::app::SettingsError& e) {
    std::fprintf(stderr, "mmo-server: %s\n", e.what());
    return kExitSettings;
  } catch (const CLI::ParseError& e) {
    std::fprintf(stderr, "mmo-server: %s\n", e.what());
    return kExitSettings;
  }

  CLI::App app{"mmo-server: the game-state service. UDP wire protocol v3 (docs/protocol.md) in front of the Rust core or the C++ baseline."};
  std::string config_path;
  bool print_config = false;
  bool print_flags_table = false;
  uint32_t inject_panic_after_moves = 0;
  app.add_option("--config", config_path, "TOML file of settings (mmo.example.toml lists them all); flags override it");
  app.add_flag("--print-config", print_config, "print the effective configuration as TOML and exit");
  app.add_flag("--print-flags-table", print_flags_table, "print the flags as a Markdown table (the README's) and exit")->group("");
  // A test hook: poisons the engine after this many moves (an injected panic inside it), so
  // the end-to-end test can watch the server stop with its reason. Hidden from --help.
  app.add_option("--debug-inject-panic-after-moves", inject_panic_after_moves)->group("");
  mmo::app::add_flags(app, settings);
  CLI11_PARSE(app, argc, argv);
  try {
    settings.finish();
    mmo::app::check_combinations(settings);
  } catch (const mmo::app::SettingsError& e) {
    std::fprintf(stderr, "mmo-server: %s\n", e.what());
    return kExitSettings;
  }
  if (print_flags_table) {
    std::fputs(mmo::app::flags_table().c_str(), stdout);
    return 0;
  }
  if (print_config) {
    std::fputs(mmo::app::to_toml(settings).c_str(), stdout);
    return 0;
  }
  // The connect-token key: the operator's (the backend keeps the private half), or else a
  // development pair in the data directory that the bundled load tester mints with.
  {
    std::string error;
    const bool development = settings.token_public_key_path.empty();
    const auto key = development ? mmo::net::development_token_key(settings.data_dir, error)
                                 : mmo::net::read_token_public_key(settings.token_public_key_path, error);
    if (!key) {
      std::fprintf(stderr, "mmo-server: %s\n", error.c_str());
      return kExitSettings;
    }
    settings.server.token_public_key = *key;
    if (development) {
      std::fprintf(stderr,
                   "mmo-server: warning: development setup: admitting connect tokens signed with %s/dev-token.secret; "
                   "give --token-public-key the backend's key in production\n",
                   settings.data_dir.c_str());
    }
  }
  settings.core.fault_injection = inject_panic_after_moves != 0 ? 1 : 0;
  settings.server.inject_panic_after_moves = inject_panic_after_moves;

  // Block the shutdown signals before any thread exists, so every thread inherits the mask.
  sigset_t shutdown_signals;
  sigemptyset(&shutdown_signals);
  sigaddset(&shutdown_signals, SIGINT);
  sigaddset(&shutdown_signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &shutdown_signals, nullptr);

  std::unique_ptr<mmo::net::Server> server;
  std::unique_ptr<mmo::net::MetricsEndpoint> metrics;
  try {
    std::unique_ptr<mmo::Engine> engine = settings.engine == "rust"       ? mmo::make_rust_engine(settings.core)
                                          : settings.engine == "baseline" ? mmo::make_baseline_engine(settings.core)
                                                                          : mmo::make_null_engine(settings.core);
    server = std::make_unique<mmo::net::Server>(settings.server, std::move(engine));
    if (!settings.metrics_bind.empty()) metrics = std::make_unique<mmo::net::MetricsEndpoint>(settings.metrics_bind, *server);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "mmo-server: %s\n", e.what());
    return kExitStartup;
  }

  server->start();
  const bool durable = !settings.server.economy_data_dir.empty();
  std::printf("mmo-server: listening on %s:%u engine=%s threads=%u tick_hz=%u max_players=%u allocator=%s admin=%s metrics=%s economy=%s\n",
              settings.server.bind_address.c_str(), server->port(), settings.engine.c_str(), server->threads(), settings.server.tick_hz,
              settings.server.max_players, allocator_name(), settings.server.admin_key != 0 ? "enabled" : "disabled",
              metrics ? metrics->url().c_str() : "off", durable ? "durable" : "memory");
  std::printf("mmo-server: economy %s\n", server->economy_report().c_str());
  if (settings.economy_store == "durable" && !durable) {
    std::printf("mmo-server: note: the %s engine keeps its economy in memory (economy_store = \"durable\" applies to rust)\n",
                settings.engine.c_str());
  }
  std::fflush(stdout);

  int signal_number = 0;
  auto next_stats = std::chrono::steady_clock::now() + std::chrono::seconds(settings.stats_interval_s);
  while (signal_number == 0) {
    timespec wait{0, kWatchIntervalNs};
    const int got = sigtimedwait(&shutdown_signals, nullptr, &wait);
    if (got > 0) {
      signal_number = got;
      break;
    }
    if (const std::string reason = server->poisoned_reason(); !reason.empty()) {
      // The engine's state is unknown after a panic inside it: stop serving rather than drop
      // every move and trade silently while looking alive. A supervisor restarts the process.
      server->stop();
      std::fprintf(stderr, "mmo-server: stopping: the engine is poisoned (%s)\n", reason.c_str());
      print_final(*server);
      return kExitPoisoned;
    }
    if (settings.stats_interval_s != 0 && std::chrono::steady_clock::now() >= next_stats) {
      std::printf("mmo-server: stats %s\n", server->stats_line().c_str());
      std::fflush(stdout);
      next_stats += std::chrono::seconds(settings.stats_interval_s);
    }
  }

  std::printf("mmo-server: %s received, shutting down\n", signal_number == SIGINT ? "SIGINT" : "SIGTERM");
  metrics.reset();
  server->stop();
  print_final(*server);
  server.reset();
  return 0;
}
