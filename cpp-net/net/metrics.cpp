// metrics.cpp: see metrics.hpp.
#include "net/metrics.hpp"

#include <arpa/inet.h>
#include <civetweb.h>
#include <sys/resource.h>

#include <array>
#include <cctype>
#include <cstdio>
#include <stdexcept>
#include <string_view>

#include "engine/stats_fields.hpp"
#include "net/server.hpp"
#include "net/worker.hpp"

namespace mmo::net {
namespace {

// Histogram bounds, microseconds (Prometheus `le`, written in seconds): 10 us .. 1 s.
constexpr std::array<uint64_t, 15> kBoundsUs = {10, 25, 50, 100, 250, 500, 1'000, 2'500, 5'000, 10'000, 25'000, 50'000, 100'000, 250'000, 1'000'000};

class Text {
 public:
  void header(std::string_view name, std::string_view type, std::string_view help) {
    out_ += "# HELP ";
    out_ += name;
    out_ += ' ';
    out_ += help;
    out_ += "\n# TYPE ";
    out_ += name;
    out_ += ' ';
    out_ += type;
    out_ += '\n';
  }
  void sample(std::string_view name, std::string_view labels, double value) {
    char number[64];
    std::snprintf(number, sizeof number, "%.17g", value);
    out_ += name;
    if (!labels.empty()) {
      out_ += '{';
      out_ += labels;
      out_ += '}';
    }
    out_ += ' ';
    out_ += number;
    out_ += '\n';
  }
  void one(std::string_view name, std::string_view type, std::string_view help, double value) {
    header(name, type, help);
    sample(name, "", value);
  }
  std::string take() { return std::move(out_); }

 private:
  std::string out_;
};

void histogram(Text& t, const Server& server, Server::Latency which, std::string_view name, std::string_view help) {
  std::array<uint64_t, kBoundsUs.size()> cumulative{};
  uint64_t count = 0, sum_us = 0;
  server.latency_buckets(which, kBoundsUs, cumulative, count, sum_us);
  t.header(name, "histogram", help);
  const std::string bucket = std::string(name) + "_bucket";
  for (size_t i = 0; i < kBoundsUs.size(); ++i) {
    char le[40];
    std::snprintf(le, sizeof le, "le=\"%g\"", static_cast<double>(kBoundsUs[i]) / 1e6);
    t.sample(bucket, le, static_cast<double>(cumulative[i]));
  }
  t.sample(bucket, "le=\"+Inf\"", static_cast<double>(count));
  t.sample(std::string(name) + "_sum", "", static_cast<double>(sum_us) / 1e6);
  t.sample(std::string(name) + "_count", "", static_cast<double>(count));
}

int serve_metrics(mg_connection* conn, void* cbdata) {
  const auto* server = static_cast<const Server*>(cbdata);
  const std::string body = prometheus_text(*server);
  mg_printf(conn,
            "HTTP/1.1 200 OK\r\nContent-Type: text/plain; version=0.0.4; charset=utf-8\r\nContent-Length: %zu\r\nConnection: close\r\n\r\n",
            body.size());
  mg_write(conn, body.data(), body.size());
  return 200;
}

}  // namespace

std::string prometheus_text(const Server& s) {
  Text t;
  auto total = [&](const Counter WorkerCounters::* field) { return static_cast<double>(s.worker_total(field)); };
  // The front.
  t.one("mmo_datagrams_received_total", "counter", "Datagrams the workers received.", total(&WorkerCounters::datagrams_received));
  t.one("mmo_datagrams_sent_total", "counter", "Datagrams the workers sent (replies and area-of-interest snapshots).",
        static_cast<double>(s.datagrams_sent_total()));
  t.one("mmo_send_failures_total", "counter", "Datagrams that could not be sent.", static_cast<double>(s.send_failures_total()));
  t.one("mmo_worker_loop_turns_total", "counter", "Turns of the workers' loops (one epoll_wait each, sleeping or not).",
        total(&WorkerCounters::loop_turns));
  t.one("mmo_receive_calls_total", "counter", "recvmmsg calls the workers made.", total(&WorkerCounters::receive_calls));
  t.one("mmo_send_calls_total", "counter", "sendmmsg and sendto calls that sent the server's datagrams.",
        static_cast<double>(s.send_calls_total()));
  t.one("mmo_join_challenges_sent_total", "counter", "Join challenges sent.", total(&WorkerCounters::challenges_sent));
  t.one("mmo_joins_accepted_total", "counter", "Joins accepted.", total(&WorkerCounters::joins_accepted));
  t.one("mmo_join_retransmits_total", "counter", "Join confirms resent by clients and answered again.", total(&WorkerCounters::join_retransmits));
  t.one("mmo_joins_refused_total", "counter", "Joins refused, for every reason (JOIN_ACCEPT status not 0).", total(&WorkerCounters::joins_refused));
  t.one("mmo_joins_refused_host_full_total", "counter", "Joins refused because their host held max_sessions_per_host sessions.",
        total(&WorkerCounters::joins_refused_host_full));
  t.one("mmo_joins_refused_rate_total", "counter", "Joins past the server's join rate (answered try later).", total(&WorkerCounters::joins_refused_rate));
  t.header("mmo_joins_refused_token_total", "counter", "Joins refused for their connect token or account, by reason (docs/protocol.md).");
  for (const auto& [reason, field] : {std::pair{"token_malformed", &WorkerCounters::joins_refused_token_malformed},
                                      std::pair{"token_bad_signature", &WorkerCounters::joins_refused_token_bad_signature},
                                      std::pair{"token_expired", &WorkerCounters::joins_refused_token_expired},
                                      std::pair{"token_wrong_server", &WorkerCounters::joins_refused_token_wrong_server},
                                      std::pair{"account_live_elsewhere", &WorkerCounters::joins_refused_account_live},
                                      std::pair{"token_used", &WorkerCounters::joins_refused_token_used}}) {
    t.sample("mmo_joins_refused_token_total", std::string("reason=\"") + reason + "\"", static_cast<double>(total(field)));
  }
  t.one("mmo_joins_refused_server_full_total", "counter", "Joins the server had no room for (answered server full).",
        total(&WorkerCounters::joins_refused_server_full));
  t.one("mmo_joins_refused_spawn_total", "counter", "Joins whose spawn point the engine refused (a configuration error).",
        total(&WorkerCounters::joins_refused_spawn));
  t.one("mmo_joins_refused_engine_busy_total", "counter",
        "Joins the engine asked to resend later: the account still in a session being ended, or the economy's disk behind.",
        total(&WorkerCounters::joins_refused_engine_busy));
  t.one("mmo_joins_at_saved_position_total", "counter", "Joins that spawned at the account's saved position.",
        total(&WorkerCounters::joins_at_saved_position));
  t.one("mmo_joins_replacing_total", "counter",
        "Joins of an account live on another port of the same host: its old session asked to end, the join answered try later.",
        total(&WorkerCounters::joins_replacing));
  t.one("mmo_sessions_replaced_total", "counter", "Sessions ended because their account joined again from another port of the same host.",
        total(&WorkerCounters::sessions_replaced));
  t.one("mmo_leaves_total", "counter", "Players who left.", total(&WorkerCounters::leaves));
  t.one("mmo_sessions_expired_total", "counter", "Sessions ended for silence.", total(&WorkerCounters::sessions_expired));
  t.one("mmo_moves_forwarded_total", "counter", "Moves handed to the engine.", total(&WorkerCounters::moves_forwarded));
  t.one("mmo_economy_forwarded_total", "counter", "Economy requests handed to the engine.", total(&WorkerCounters::economy_forwarded));
  t.one("mmo_attacks_answered_total", "counter", "ATTACKs decided by the engine and answered.", total(&WorkerCounters::attacks_answered));
  t.one("mmo_kill_notices_sent_total", "counter", "KILL_NOTICEs sent to players in a killer's area of interest.",
        total(&WorkerCounters::kill_notices_sent));
  t.one("mmo_loot_claims_answered_total", "counter", "LOOT_CLAIMs decided by the engine and answered.",
        total(&WorkerCounters::loot_claims_answered));
  t.one("mmo_trades_answered_total", "counter", "TRADE_OFFERs and TRADE_ANSWERs decided by the engine and answered.",
        total(&WorkerCounters::trades_answered));
  t.one("mmo_trade_notices_sent_total", "counter", "TRADE_NOTICEs sent (offers to takers, accepts and declines to makers).",
        total(&WorkerCounters::trade_notices_sent));
  t.one("mmo_economy_replies_held_total", "counter", "Economy replies held until their change was durable.",
        total(&WorkerCounters::economy_replies_held));
  t.one("mmo_economy_replies_dropped_total", "counter", "Economy replies dropped: the held queue was full (the client retransmits).",
        total(&WorkerCounters::economy_replies_dropped));
  t.one("mmo_grants_answered_total", "counter", "Admin GRANTs decided by the engine and answered.", total(&WorkerCounters::grants_answered));
  t.one("mmo_raid_triggers_total", "counter", "Admin raid triggers handled.", total(&WorkerCounters::raid_triggers));
  t.one("mmo_stats_requests_total", "counter", "Admin stats requests answered.", total(&WorkerCounters::stats_requests));
  t.one("mmo_pongs_sent_total", "counter", "Pings answered.", total(&WorkerCounters::pongs_sent));
  t.one("mmo_aoi_snapshots_sent_total", "counter", "Area-of-interest snapshots sent.", total(&WorkerCounters::aoi_snapshots_sent));
  t.one("mmo_aoi_rounds_overrun_total", "counter", "Area-of-interest rounds a worker had not finished when the next tick came.",
        total(&WorkerCounters::aoi_rounds_overrun));
  t.one("mmo_rx_timestamps_missing_total", "counter", "Datagrams without a kernel receive timestamp.", total(&WorkerCounters::rx_timestamps_missing));
  t.one("mmo_ticks_late_total", "counter", "Ticks skipped because the tick thread fell a whole period behind.", static_cast<double>(s.ticks_late_.get()));
  t.one("mmo_sessions_live", "gauge", "Sessions joined now.", static_cast<double>(s.sessions_live()));
  t.one("mmo_worker_slice_seconds", "gauge", "Scheduler slice the workers hold, as the kernel reports it (the least of theirs; 0 where it reports none).",
        static_cast<double>(s.worker_slice_us_held()) / 1e6);
  t.header("mmo_drops_total", "counter", "Datagrams dropped before the engine, by reason (docs/protocol.md).");
  for (size_t r = 0; r < kDropReasonCount; ++r) {
    t.sample("mmo_drops_total", std::string("reason=\"") + drop_reason_name(static_cast<DropReason>(r)) + "\"",
             static_cast<double>(s.drops_total(r)));
  }
  t.header("mmo_engine_errors_total", "counter", "Engine calls that returned an error status, by status.");
  for (size_t slot = 1; slot < kEngineStatusSlots; ++slot) {
    const char* name = mmo_status_name(static_cast<MmoStatus>(1000 + slot));
    if (std::string_view(name) == "MMO_UNKNOWN_STATUS") continue;
    t.sample("mmo_engine_errors_total", std::string("status=\"") + name + "\"", static_cast<double>(s.engine_errors_total(slot)));
  }
  t.one("mmo_engine_poisoned", "gauge", "1 once a panic inside the engine has poisoned it (the server then stops).",
        s.poisoned_.load(std::memory_order_acquire) ? 1.0 : 0.0);
  // The engine's own counters (MmoStats), each once; lock waits in seconds.
  // A poisoned engine answers no read: its series are left out rather than reported as 0
  // (a reset, to a scraper).
  MmoStats st{};
  const bool engine_readable = s.engine_->stats(st) == MMO_OK;
#define MMO_METRIC(f)                                                                                                \
  if (engine_readable) {                                                                                             \
    std::string_view field = #f;                                                                                     \
    if (field.ends_with("_wait_ns")) {                                                                               \
      const std::string name = "mmo_engine_" + std::string(field.substr(0, field.size() - 3)) + "_seconds_total";  \
      t.one(name, "counter", "Engine counter " #f ", in seconds.", static_cast<double>(st.f) / 1e9);                 \
    } else {                                                                                                         \
      t.one("mmo_engine_" #f "_total", "counter", "Engine counter " #f ".", static_cast<double>(st.f));            \
    }                                                                                                                \
  }
  MMO_STATS_FIELDS(MMO_METRIC)
#undef MMO_METRIC
  MmoEconomyAudit audit{};
  if (s.engine_->economy_audit(audit) == MMO_OK) {
  t.one("mmo_economy_live_gold", "gauge", "Gold in open wallets.", static_cast<double>(audit.live_gold));
  t.one("mmo_economy_escrowed_gold", "gauge", "Gold in escrow in open trade offers.", static_cast<double>(audit.escrowed_gold));
  t.one("mmo_economy_departed_gold", "gauge", "Gold of players who left.", static_cast<double>(audit.departed_gold));
  t.one("mmo_economy_minted_gold", "gauge", "Gold ever minted.", static_cast<double>(audit.minted_gold));
  t.one("mmo_economy_sunk_gold", "gauge", "Gold ever sunk.", static_cast<double>(audit.sunk_gold));
  t.one("mmo_economy_conserved", "gauge", "1 while live + escrowed + departed = minted - sunk, for gold and every item kind.", audit.conserved);
  t.one("mmo_economy_open_wallets", "gauge", "Open wallets.", audit.open_wallets);
  }
  // The process.
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  t.one("mmo_process_cpu_seconds_total", "counter", "User and system CPU time of the server process.",
        static_cast<double>(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) + static_cast<double>(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6);
  t.header("mmo_process_context_switches_total", "counter", "Context switches of the server's threads: voluntary (waiting), involuntary (preempted).");
  t.sample("mmo_process_context_switches_total", "kind=\"voluntary\"", static_cast<double>(ru.ru_nvcsw));
  t.sample("mmo_process_context_switches_total", "kind=\"involuntary\"", static_cast<double>(ru.ru_nivcsw));
  t.one("mmo_process_peak_resident_bytes", "gauge", "Peak resident set size of the server process.", static_cast<double>(ru.ru_maxrss) * 1024.0);
  t.one("mmo_uptime_seconds", "gauge", "Seconds since the server started.", static_cast<double>(s.now_us()) / 1e6);
  // Latency.
  histogram(t, s, Server::Latency::Update, "mmo_update_latency_seconds",
            "Server-side update latency: from a move datagram's kernel receive timestamp to the end of its batch's engine call.");
  histogram(t, s, Server::Latency::UpdateService, "mmo_update_service_seconds",
            "Server-side update service time: from the worker's read of a move datagram to the end of its batch's engine call "
            "(the update latency less the wait in the socket buffer).");
  histogram(t, s, Server::Latency::Tick, "mmo_tick_duration_seconds", "Duration of the engine's tick (expiry and the world snapshot).");
  histogram(t, s, Server::Latency::RaidSpawn, "mmo_raid_spawn_duration_seconds", "Duration of a raid burst's spawn.");
  return t.take();
}

MetricsEndpoint::MetricsEndpoint(const std::string& bind, const Server& server) : server_(server) {
  mg_init_library(0);
  const char* options[] = {"listening_ports", bind.c_str(), "num_threads", "2", "enable_keep_alive", "no", nullptr};
  mg_callbacks callbacks{};
  context_ = mg_start(&callbacks, nullptr, options);
  if (context_ == nullptr) {
    mg_exit_library();
    throw std::runtime_error("metrics: cannot listen on " + bind);
  }
  mg_set_request_handler(context_, "/metrics", serve_metrics, const_cast<Server*>(&server_));
  mg_server_port ports[1]{};
  const int n = mg_get_server_ports(context_, 1, ports);
  const std::string host = bind.substr(0, bind.rfind(':'));
  url_ = "http://" + host + ":" + std::to_string(n > 0 ? ports[0].port : 0) + "/metrics";
}

MetricsEndpoint::~MetricsEndpoint() {
  mg_stop(context_);
  mg_exit_library();
}

}  // namespace mmo::net
