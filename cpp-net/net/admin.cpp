// admin.cpp: the figures the server reports (the STATS_REPLY text, the periodic stats line)
// and the admin messages' answers: everything that reads the counters and histograms every
// other part writes.
#include <sys/resource.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <string_view>
#include <utility>

#include "engine/stats_fields.hpp"
#include "net/server.hpp"
#include "net/worker.hpp"

namespace mmo::net {

void Worker::on_raid_trigger(const wire::RaidTrigger& m, SourceAddress source) {
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
  const MmoStatus status = server_.engine_status("raid_spawn", server_.engine().raid_spawn(request, report), counters);
  const uint64_t spawn_ns = monotonic_ns() - t0;
  if (status == MMO_OK) {
    std::lock_guard lock(latency_mutex);
    mmo_latency_record(raid_latency_, spawn_ns / 1000, 1);
  }
  const wire::RaidResult reply{m.request_id, status, status == MMO_OK ? report.spawned : 0, report.cells, report.expires_tick, spawn_ns};
  send_reply(source, reply);
  counters.raid_triggers.add();
}

void Worker::send_stats(SourceAddress to, uint32_t request_id) {
  const size_t text_len = server_.format_stats(stats_text_.data(), stats_text_.size() - wire::kStatsReplyFixedSize);
  const size_t bytes = wire::encode(wire::StatsReply{request_id, {stats_text_.data(), text_len}}, stats_datagram_);
  if (bytes == 0) return;
  const sockaddr_in sa = to_sockaddr(to);
  counters.send_calls.add();
  if (sendto(fd_, stats_datagram_.data(), bytes, MSG_DONTWAIT, reinterpret_cast<const sockaddr*>(&sa), sizeof(sa)) == static_cast<ssize_t>(bytes)) {
    counters.datagrams_sent.add();
  } else {
    counters.send_failures.add();
  }
}

struct Server::LatencyFigures {
  MmoLatencySummary update{};
  MmoLatencySummary service{};
  MmoLatencySummary raid{};
  MmoLatencySummary tick{};
};

uint64_t Server::worker_total(const Counter WorkerCounters::* field) const {
  uint64_t t = 0;
  for (const auto& w : workers_) t += (w->counters.*field).get();
  return t;
}

uint64_t Server::datagrams_sent_total() const {
  uint64_t t = worker_total(&WorkerCounters::datagrams_sent);
  for (const auto& w : workers_) t += w->held_replies().sent();
  return t;
}

uint64_t Server::send_failures_total() const {
  uint64_t t = worker_total(&WorkerCounters::send_failures);
  for (const auto& w : workers_) t += w->held_replies().failed();
  return t;
}

uint64_t Server::send_calls_total() const {
  uint64_t t = worker_total(&WorkerCounters::send_calls);
  for (const auto& w : workers_) t += w->held_replies().send_calls();
  return t;
}

uint64_t Server::drops_total(size_t reason) const {
  uint64_t t = 0;
  for (const auto& w : workers_) t += w->counters.drops[reason].get();
  return t;
}

uint64_t Server::worker_slice_us_held() const {
  uint32_t held = UINT32_MAX;
  for (const auto& w : workers_) held = std::min(held, w->slice_us.load(std::memory_order_relaxed));
  return workers_.empty() ? 0 : held;
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
  mmo_latency_reset(merged_service_);
  mmo_latency_reset(merged_raid_);
  for (const auto& w : workers_) {
    std::lock_guard lock(w->latency_mutex);
    mmo_latency_merge(merged_update_, w->update_latency_);
    mmo_latency_merge(merged_service_, w->update_service_);
    mmo_latency_merge(merged_raid_, w->raid_latency_);
  }
  mmo_latency_summary(merged_update_, &f.update);
  mmo_latency_summary(merged_service_, &f.service);
  mmo_latency_summary(merged_raid_, &f.raid);
  std::lock_guard tick_lock(tick_latency_mutex_);
  mmo_latency_summary(tick_latency_, &f.tick);
  return f;
}


void Server::latency_buckets(Latency which, std::span<const uint64_t> bounds_us, std::span<uint64_t> cumulative, uint64_t& count,
                             uint64_t& sum_us) const {
  count = 0;
  sum_us = 0;
  std::fill(cumulative.begin(), cumulative.end(), 0);
  const size_t n = std::min(bounds_us.size(), cumulative.size());
  if (which == Latency::Tick) {
    std::lock_guard tick_lock(tick_latency_mutex_);
    mmo_latency_buckets(tick_latency_, bounds_us.data(), n, cumulative.data(), &count, &sum_us);
    return;
  }
  // The reporter's scratch histogram of `which` and each worker's own one, named once.
  const auto [merged, per_worker] = [&]() -> std::pair<MmoLatency*, MmoLatency* Worker::*> {
    switch (which) {
      case Latency::Update: return {merged_update_, &Worker::update_latency_};
      case Latency::UpdateService: return {merged_service_, &Worker::update_service_};
      default: return {merged_raid_, &Worker::raid_latency_};
    }
  }();
  std::lock_guard merge_lock(merge_mutex_);
  mmo_latency_reset(merged);
  for (const auto& w : workers_) {
    std::lock_guard lock(w->latency_mutex);
    mmo_latency_merge(merged, (*w).*per_worker);
  }
  mmo_latency_buckets(merged, bounds_us.data(), n, cumulative.data(), &count, &sum_us);
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
  // A poisoned engine answers no call, reads included: its counters and books are then left
  // out (engine_readable 0) rather than printed as zeros, which would read as a reset and
  // as books that do not balance.
  MmoStats s{};
  const bool engine_readable = engine_->stats(s) == MMO_OK;
  line("", "engine_readable", engine_readable ? 1 : 0);
#define MMO_STATS_LINE(f) \
  if (engine_readable) line("engine_", #f, s.f);
  MMO_STATS_FIELDS(MMO_STATS_LINE)
#undef MMO_STATS_LINE
  auto total = [&](const Counter WorkerCounters::* field) { return worker_total(field); };
  for (size_t r = 0; r < kDropReasonCount; ++r) line("drop_", drop_reason_name(static_cast<DropReason>(r)), drops_total(r));
  line("", "datagrams_received", total(&WorkerCounters::datagrams_received));
  line("", "datagrams_sent", datagrams_sent_total());
  line("", "send_failures", send_failures_total());
  line("", "worker_loop_turns", total(&WorkerCounters::loop_turns));
  line("", "receive_calls", total(&WorkerCounters::receive_calls));
  line("", "send_calls", send_calls_total());
  line("", "challenges_sent", total(&WorkerCounters::challenges_sent));
  line("", "joins_accepted", total(&WorkerCounters::joins_accepted));
  line("", "join_retransmits", total(&WorkerCounters::join_retransmits));
  line("", "joins_refused", total(&WorkerCounters::joins_refused));
  line("", "joins_refused_host_full", total(&WorkerCounters::joins_refused_host_full));
  line("", "joins_refused_rate", total(&WorkerCounters::joins_refused_rate));
  line("", "joins_refused_token_malformed", total(&WorkerCounters::joins_refused_token_malformed));
  line("", "joins_refused_token_bad_signature", total(&WorkerCounters::joins_refused_token_bad_signature));
  line("", "joins_refused_token_expired", total(&WorkerCounters::joins_refused_token_expired));
  line("", "joins_refused_token_wrong_server", total(&WorkerCounters::joins_refused_token_wrong_server));
  line("", "joins_refused_account_live", total(&WorkerCounters::joins_refused_account_live));
  line("", "joins_refused_token_used", total(&WorkerCounters::joins_refused_token_used));
  line("", "joins_refused_server_full", total(&WorkerCounters::joins_refused_server_full));
  line("", "joins_refused_spawn", total(&WorkerCounters::joins_refused_spawn));
  line("", "joins_refused_engine_busy", total(&WorkerCounters::joins_refused_engine_busy));
  line("", "joins_at_saved_position", total(&WorkerCounters::joins_at_saved_position));
  line("", "joins_replacing", total(&WorkerCounters::joins_replacing));
  line("", "sessions_replaced", total(&WorkerCounters::sessions_replaced));
  line("", "leaves", total(&WorkerCounters::leaves));
  line("", "sessions_expired", total(&WorkerCounters::sessions_expired));
  line("", "sessions_live", sessions_live());
  line("", "worker_slice_us", worker_slice_us_held());
  line("", "moves_forwarded", total(&WorkerCounters::moves_forwarded));
  line("", "economy_forwarded", total(&WorkerCounters::economy_forwarded));
  line("", "attacks_answered", total(&WorkerCounters::attacks_answered));
  line("", "kill_notices_sent", total(&WorkerCounters::kill_notices_sent));
  line("", "loot_claims_answered", total(&WorkerCounters::loot_claims_answered));
  line("", "trades_answered", total(&WorkerCounters::trades_answered));
  line("", "trade_notices_sent", total(&WorkerCounters::trade_notices_sent));
  line("", "economy_replies_held", total(&WorkerCounters::economy_replies_held));
  line("", "economy_replies_dropped", total(&WorkerCounters::economy_replies_dropped));
  line("", "grants_answered", total(&WorkerCounters::grants_answered));
  line("", "raid_triggers", total(&WorkerCounters::raid_triggers));
  line("", "stats_requests", total(&WorkerCounters::stats_requests));
  line("", "pongs_sent", total(&WorkerCounters::pongs_sent));
  line("", "aoi_snapshots_sent", total(&WorkerCounters::aoi_snapshots_sent));
  line("", "aoi_rounds_overrun", total(&WorkerCounters::aoi_rounds_overrun));
  line("", "rx_timestamps_missing", total(&WorkerCounters::rx_timestamps_missing));
  // Engine calls refused or failed, by status (every named status, zero or not).
  for (size_t slot = 1; slot < kEngineStatusSlots; ++slot) {
    const char* name = mmo_status_name(static_cast<MmoStatus>(1000 + slot));
    if (std::string_view(name) == "MMO_UNKNOWN_STATUS") continue;
    char lower[64];
    size_t n = 0;
    for (const char* c = name + 4; *c != 0 && n + 1 < sizeof lower; ++c) lower[n++] = static_cast<char>(std::tolower(static_cast<unsigned char>(*c)));
    lower[n] = 0;
    line("engine_status_", lower, engine_errors_total(slot));
  }
  line("", "engine_poisoned", poisoned_.load(std::memory_order_acquire) ? 1 : 0);
  line("", "ticks_late", ticks_late_.get());
  const LatencyFigures f = merged_latency();
  line("", "update_latency_count", f.update.count);
  line("", "update_latency_us_p50", f.update.p50);
  line("", "update_latency_us_p99", f.update.p99);
  line("", "update_latency_us_p999", f.update.p999);
  line("", "update_latency_us_max", f.update.max);
  line("", "update_service_us_p50", f.service.p50);
  line("", "update_service_us_p99", f.service.p99);
  line("", "update_service_us_p999", f.service.p999);
  line("", "update_service_us_max", f.service.max);
  line("", "raid_spawns", f.raid.count);
  line("", "raid_spawn_us_median", f.raid.p50);
  line("", "raid_spawn_us_max", f.raid.max);
  line("", "tick_us_p50", f.tick.p50);
  line("", "tick_us_p99", f.tick.p99);
  line("", "tick_us_max", f.tick.max);
  MmoEconomyAudit audit{};
  if (engine_->economy_audit(audit) == MMO_OK) {
    line("", "economy_live_gold", audit.live_gold);
    line("", "economy_escrowed_gold", audit.escrowed_gold);
    line("", "economy_departed_gold", audit.departed_gold);
    line("", "economy_minted_gold", audit.minted_gold);
    line("", "economy_sunk_gold", audit.sunk_gold);
    line("", "economy_conserved", audit.conserved);
  }
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  line("", "cpu_user_us", static_cast<uint64_t>(ru.ru_utime.tv_sec) * 1'000'000 + static_cast<uint64_t>(ru.ru_utime.tv_usec));
  line("", "cpu_system_us", static_cast<uint64_t>(ru.ru_stime.tv_sec) * 1'000'000 + static_cast<uint64_t>(ru.ru_stime.tv_usec));
  line("", "context_switches_voluntary", static_cast<uint64_t>(ru.ru_nvcsw));
  line("", "context_switches_involuntary", static_cast<uint64_t>(ru.ru_nivcsw));
  line("", "peak_rss_kb", static_cast<uint64_t>(ru.ru_maxrss));
  line("", "uptime_ms", now_us() / 1000);
  return overflow ? 0 : pos;
}

std::string Server::stats_line() const {
  MmoStats s{};
  const bool engine_readable = engine_->stats(s) == MMO_OK;
  uint64_t drops = 0;
  for (size_t r = 0; r < kDropReasonCount; ++r) drops += drops_total(r);
  const uint64_t sessions = sessions_live();
  const uint64_t received = worker_total(&WorkerCounters::datagrams_received);
  const LatencyFigures f = merged_latency();
  // The engine's two counts, or "unreadable" for a poisoned engine (not zeros).
  char moves[24] = "unreadable", bursts[24] = "unreadable";
  if (engine_readable) {
    std::snprintf(moves, sizeof(moves), "%llu", static_cast<unsigned long long>(s.moves_applied));
    std::snprintf(bursts, sizeof(bursts), "%llu", static_cast<unsigned long long>(s.raid_bursts));
  }
  char buf[512];
  std::snprintf(buf, sizeof(buf),
                "uptime_ms=%llu players=%llu datagrams_received=%llu moves_applied=%s drops=%llu aoi_sent=%llu raid_bursts=%s "
                "update_latency_us p50=%llu p99=%llu p999=%llu max=%llu service_us p99=%llu",
                static_cast<unsigned long long>(now_us() / 1000), static_cast<unsigned long long>(sessions),
                static_cast<unsigned long long>(received), moves, static_cast<unsigned long long>(drops),
                static_cast<unsigned long long>(worker_total(&WorkerCounters::aoi_snapshots_sent)), bursts,
                static_cast<unsigned long long>(f.update.p50),
                static_cast<unsigned long long>(f.update.p99), static_cast<unsigned long long>(f.update.p999),
                static_cast<unsigned long long>(f.update.max), static_cast<unsigned long long>(f.service.p99));
  return buf;
}

}  // namespace mmo::net
