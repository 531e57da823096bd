// tick.cpp: the tick thread: runs the engine's tick at the tick rate and sends every joined
// client its area-of-interest snapshot through the socket of the worker that owns the session.
#include <algorithm>
#include <chrono>
#include <thread>
#include <utility>
#include <vector>

#include "net/server.hpp"
#include "net/worker.hpp"

namespace mmo::net {

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

}  // namespace mmo::net
