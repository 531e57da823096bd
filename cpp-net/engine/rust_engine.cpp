// rust_engine.cpp: the Engine interface over the Rust core's C ABI. A thin shim: each method
// is one call, its spans passed as (pointer, length) and borrowed for the call only.
#include <array>
#include <stdexcept>
#include <string>

#include "engine/engine.hpp"

namespace mmo {
namespace {

class RustEngine final : public Engine {
 public:
  explicit RustEngine(const MmoConfig& config) {
    if (mmo_abi_check(MMO_ABI_VERSION) != MMO_OK) {
      throw std::runtime_error("mmo_core.h does not match the linked mmo-ffi library (ABI version " + std::to_string(mmo_abi_version()) +
                               ")");
    }
    const MmoStatus status = mmo_engine_new(&config, &engine_);
    if (status != MMO_OK) throw std::runtime_error(std::string("mmo_engine_new: ") + mmo_status_name(status));
  }
  ~RustEngine() override { mmo_engine_free(engine_); }
  RustEngine(const RustEngine&) = delete;
  RustEngine& operator=(const RustEngine&) = delete;

  std::string_view name() const override { return "rust"; }
  using Engine::join;
  MmoStatus join(uint64_t account_id, float x_m, float y_m, uint8_t faction, MmoJoinTicket& out) override {
    return mmo_join(engine_, account_id, x_m, y_m, faction, &out);
  }
  MmoStatus economy_open(std::string_view data_dir, uint32_t commit_linger_us, uint32_t log_segment_kib, MmoDurableCallback on_durable,
                         void* context, MmoRecoveryInfo& info, std::string& message) override {
    std::array<char, 512> text{};
    const MmoStatus status = mmo_economy_open(engine_, reinterpret_cast<const uint8_t*>(data_dir.data()), data_dir.size(), commit_linger_us,
                                              log_segment_kib, on_durable, context, &info, text.data(), text.size());
    message = text.data();
    return status;
  }
  uint64_t economy_durable_through() const override {
    uint64_t through = 0;
    return mmo_economy_durable_through(engine_, &through) == MMO_OK ? through : 0;
  }
  MmoStatus leave(uint64_t player_id, uint64_t session_token) override { return mmo_leave(engine_, player_id, session_token); }
  size_t move_events_required(size_t moves) const override {
    size_t required = 0;
    return mmo_move_events_required(engine_, moves, &required) == MMO_OK ? required : SIZE_MAX;
  }
  MmoStatus apply_moves(std::span<const MmoMoveRecord> moves, uint64_t now_ms, std::span<MmoMoveEvent> events, size_t& written) override {
    return mmo_apply_moves(engine_, moves.data(), moves.size(), now_ms, events.data(), events.size(), &written);
  }
  MmoStatus raid_spawn(const MmoRaidSpawnRequest& request, MmoRaidReport& out) override { return mmo_raid_spawn(engine_, &request, &out); }
  MmoStatus damage(uint64_t attacker_id, uint64_t session_token, uint64_t target_id, int32_t amount, MmoDamageResult& out) override {
    return mmo_damage(engine_, attacker_id, session_token, target_id, amount, &out);
  }
  MmoStatus attack(uint64_t attacker_id, uint64_t session_token, uint64_t target_id, uint64_t now_ms, MmoAttackResult& out) override {
    return mmo_attack(engine_, attacker_id, session_token, target_id, now_ms, &out);
  }
  MmoStatus claim_loot(uint64_t player_id, uint64_t session_token, uint64_t loot_id, MmoLootResult& out) override {
    return mmo_claim_loot(engine_, player_id, session_token, loot_id, &out);
  }
  MmoStatus trade_offer(const MmoTradeOffer& offer, uint64_t now_ms, MmoEconomyResult& out) override {
    return mmo_trade_offer(engine_, &offer, now_ms, &out);
  }
  MmoStatus trade_answer(const MmoTradeAnswer& answer, uint64_t now_ms, MmoEconomyResult& out) override {
    return mmo_trade_answer(engine_, &answer, now_ms, &out);
  }
  MmoStatus grant(uint64_t player_id, uint64_t grant_id, const MmoTradeStack& stack, MmoEconomyResult& out) override {
    return mmo_grant(engine_, player_id, grant_id, &stack, &out);
  }
  MmoStatus apply_economy(std::span<const MmoEconomyOp> ops, std::span<MmoEconomyResult> results, size_t& written) override {
    return mmo_apply_economy(engine_, ops.data(), ops.size(), results.data(), results.size(), &written);
  }
  MmoStatus tick(uint64_t now_ms, MmoTickInfo& out) override { return mmo_tick(engine_, now_ms, &out); }
  MmoStatus area_of_interest(uint64_t player_id, std::span<MmoAoiEntry> entries, size_t& written) override {
    return mmo_area_of_interest(engine_, player_id, entries.data(), entries.size(), &written);
  }
  MmoStatus area_of_interest_batch(std::span<const uint64_t> players, uint32_t k, std::span<MmoAoiEntry> entries, std::span<uint32_t> counts,
                                   MmoAoiBatchInfo& info) override {
    return mmo_area_of_interest_batch(engine_, players.data(), players.size(), k, entries.data(), entries.size(), counts.data(),
                                      counts.size(), &info);
  }
  MmoStatus stats(MmoStats& out) const override { return mmo_stats(engine_, &out); }
  MmoStatus economy_audit(MmoEconomyAudit& out) const override { return mmo_economy_audit(engine_, &out); }
  MmoStatus player_view(uint64_t player_id, MmoPlayerView& out) const override { return mmo_player_view(engine_, player_id, &out); }
  MmoStatus debug_inject_panic() override { return mmo_debug_inject_panic(engine_); }

 private:
  MmoEngine* engine_ = nullptr;
};

}  // namespace

std::unique_ptr<Engine> make_rust_engine(const MmoConfig& config) { return std::make_unique<RustEngine>(config); }

}  // namespace mmo
