// null_engine.cpp: an engine that keeps no game state, for measuring the floor under the real
// ones. The comparison's `null-engine` row runs the same network front, the same kernel path
// and the same load against it, so a real engine's cost is its row minus this one.
//
// What it does, and no more: a join hands out a fresh id and a token; every move is
// acknowledged (one ACK event, no contacts, nothing checked); an area of interest is empty
// (count 0, so the front still sends one AOI_SNAPSHOT per player per tick, as it does for a
// real engine); a raid burst reports the requested count spawned and keeps nothing; every
// economy request is answered UNKNOWN_PLAYER (it keeps no wallets). The counters the front and
// the harness read (moves applied, joins, leaves, ticks, bursts) are atomics, added once per
// call, not per move.
#include <algorithm>
#include <atomic>
#include <cstring>

#include "engine/engine.hpp"

namespace mmo {
namespace {

class NullEngine final : public Engine {
 public:
  explicit NullEngine(const MmoConfig& config) : player_capacity_(config.player_capacity) {}

  std::string_view name() const override { return "null"; }
  using Engine::join;
  MmoStatus join(uint64_t, float x_m, float y_m, uint8_t, MmoJoinTicket& out) override {
    if (live_.load(std::memory_order_relaxed) >= player_capacity_) {
      joins_refused_full_.fetch_add(1, std::memory_order_relaxed);
      return MMO_ERR_SERVER_FULL;
    }
    const uint64_t id = next_id_.fetch_add(1, std::memory_order_relaxed);
    live_.fetch_add(1, std::memory_order_relaxed);
    joins_.fetch_add(1, std::memory_order_relaxed);
    // A token the front stores and checks; the null engine never checks it itself.
    out = MmoJoinTicket{id, (id * 0x9E3779B97F4A7C15ull) | 1, 0, x_m, y_m, 0};
    return MMO_OK;
  }
  MmoStatus leave(uint64_t, uint64_t) override {
    live_.fetch_sub(1, std::memory_order_relaxed);
    leaves_.fetch_add(1, std::memory_order_relaxed);
    return MMO_OK;
  }
  size_t move_events_required(size_t moves) const override { return moves; }
  MmoStatus apply_moves(std::span<const MmoMoveRecord> moves, uint64_t, std::span<MmoMoveEvent> events, size_t& written) override {
    if (events.size() < moves.size()) return MMO_ERR_BUFFER_TOO_SMALL;
    for (size_t i = 0; i < moves.size(); ++i) {
      MmoMoveEvent e{};
      e.player_id = moves[i].player_id;
      e.sequence = moves[i].sequence;
      e.kind = MMO_EVENT_KIND_ACK;
      events[i] = e;
    }
    written = moves.size();
    moves_applied_.fetch_add(moves.size(), std::memory_order_relaxed);
    move_batches_.fetch_add(1, std::memory_order_relaxed);
    return MMO_OK;
  }
  MmoStatus raid_spawn(const MmoRaidSpawnRequest& request, MmoRaidReport& out) override {
    raid_bursts_.fetch_add(1, std::memory_order_relaxed);
    raid_objects_.fetch_add(request.count, std::memory_order_relaxed);
    out = MmoRaidReport{request.count, 0, tick_.load(std::memory_order_relaxed), 0};
    return MMO_OK;
  }
  MmoStatus damage(uint64_t, uint64_t, uint64_t, int32_t, MmoDamageResult&) override { return MMO_ERR_UNKNOWN_PLAYER; }
  MmoStatus attack(uint64_t, uint64_t, uint64_t, uint64_t, MmoAttackResult& out) override {
    out = MmoAttackResult{};
    out.refusal = MMO_ATTACK_ERROR_UNKNOWN_PLAYER;  // the null engine keeps no players
    return MMO_OK;
  }
  // The null engine keeps no players: every economy request is refused unknown_player.
  static MmoEconomyResult nobody(uint64_t transaction_id, uint64_t player_id) {
    MmoEconomyResult r{};
    r.transaction_id = transaction_id;
    r.player_id = player_id;
    r.status = MMO_ECONOMY_STATUS_UNKNOWN_PLAYER;
    return r;
  }
  MmoStatus trade_offer(const MmoTradeOffer& offer, uint64_t, MmoEconomyResult& out) override {
    out = nobody(offer.transaction_id, offer.player_id);
    return MMO_OK;
  }
  MmoStatus trade_answer(const MmoTradeAnswer& answer, uint64_t, MmoEconomyResult& out) override {
    out = nobody(answer.transaction_id, answer.player_id);
    return MMO_OK;
  }
  MmoStatus grant(uint64_t player_id, uint64_t grant_id, const MmoTradeStack&, MmoEconomyResult& out) override {
    out = nobody(grant_id, player_id);
    return MMO_OK;
  }
  MmoStatus claim_loot(uint64_t, uint64_t, uint64_t, MmoLootResult& out) override {
    out = MmoLootResult{};
    out.refusal = MMO_LOOT_ERROR_UNKNOWN_PLAYER;
    return MMO_OK;
  }
  MmoStatus apply_economy(std::span<const MmoEconomyOp> ops, std::span<MmoEconomyResult> results, size_t& written) override {
    if (results.size() < ops.size()) return MMO_ERR_BUFFER_TOO_SMALL;
    for (size_t i = 0; i < ops.size(); ++i) {
      MmoEconomyResult r{};
      r.transaction_id = ops[i].transaction_id;
      r.player_id = ops[i].player_id;
      r.status = MMO_ECONOMY_STATUS_UNKNOWN_PLAYER;
      results[i] = r;
    }
    written = ops.size();
    return MMO_OK;
  }
  MmoStatus tick(uint64_t now_ms, MmoTickInfo& out) override {
    const uint32_t tick = tick_.fetch_add(1, std::memory_order_relaxed) + 1;
    MmoTickInfo info{};
    info.now_ms = now_ms;
    info.tick = tick;
    info.players_live = static_cast<uint32_t>(live_.load(std::memory_order_relaxed));
    out = info;
    return MMO_OK;
  }
  MmoStatus area_of_interest(uint64_t, std::span<MmoAoiEntry>, size_t& written) override {
    written = 0;
    return MMO_OK;
  }
  MmoStatus area_of_interest_batch(std::span<const uint64_t> players, uint32_t k, std::span<MmoAoiEntry> entries, std::span<uint32_t> counts,
                                   MmoAoiBatchInfo& info) override {
    if (k > 64 || counts.size() < players.size() || entries.size() < players.size() * k) return MMO_ERR_BUFFER_TOO_SMALL;
    std::fill_n(counts.begin(), players.size(), 0u);
    MmoAoiBatchInfo i{};
    i.tick = tick_.load(std::memory_order_relaxed);
    i.found = static_cast<uint32_t>(players.size());
    info = i;
    return MMO_OK;
  }
  MmoStatus stats(MmoStats& out) const override {
    MmoStats s{};
    s.moves_applied = moves_applied_.load(std::memory_order_relaxed);
    s.move_batches = move_batches_.load(std::memory_order_relaxed);
    s.joins = joins_.load(std::memory_order_relaxed);
    s.joins_refused_full = joins_refused_full_.load(std::memory_order_relaxed);
    s.leaves = leaves_.load(std::memory_order_relaxed);
    s.raid_bursts = raid_bursts_.load(std::memory_order_relaxed);
    s.raid_objects_spawned = raid_objects_.load(std::memory_order_relaxed);
    s.ticks = tick_.load(std::memory_order_relaxed);
    out = s;
    return MMO_OK;
  }
  MmoStatus economy_audit(MmoEconomyAudit& out) const override {
    out = MmoEconomyAudit{};
    out.conserved = 1;  // nothing minted, nothing held
    return MMO_OK;
  }
  MmoStatus player_view(uint64_t, MmoPlayerView&) const override { return MMO_ERR_UNKNOWN_PLAYER; }
  MmoStatus debug_inject_panic() override { return MMO_ERR_INVALID_ARGUMENT; }

 private:
  const uint64_t player_capacity_;
  std::atomic<uint64_t> next_id_{1};
  std::atomic<uint64_t> live_{0};
  std::atomic<uint64_t> joins_{0};
  std::atomic<uint64_t> joins_refused_full_{0};
  std::atomic<uint64_t> leaves_{0};
  std::atomic<uint64_t> moves_applied_{0};
  std::atomic<uint64_t> move_batches_{0};
  std::atomic<uint64_t> raid_bursts_{0};
  std::atomic<uint64_t> raid_objects_{0};
  std::atomic<uint32_t> tick_{0};
};

}  // namespace

std::unique_ptr<Engine> make_null_engine(const MmoConfig& config) { return std::make_unique<NullEngine>(config); }

}  // namespace mmo
