// engine.hpp: the game-state engine as the network front sees it.
//
// The front (workers and the tick thread) talks only to this interface, so both engines are
// driven by identical network code and measured by the same instruments. Records and status
// codes are the C ABI's (ffi/include/mmo_core.h): the Rust core takes them as they are and
// the C++ baseline (cpp-net/baseline/, its own issue) implements the same semantics on them.
// Every method may be called from any thread concurrently, except tick(), which one tick
// thread calls. The area of interest is answered from the world snapshot the latest tick
// published ("as of tick T", docs/protocol.md): a player who joined after it gets
// MMO_ERR_NOT_IN_SNAPSHOT (or MMO_AOI_NOT_IN_SNAPSHOT in a batch) until the next tick.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "mmo_core.h"

namespace mmo {

class Engine {
 public:
  virtual ~Engine() = default;
  virtual std::string_view name() const = 0;
  // Joins a player of `account_id` (its wallet resumed, or created by its first join; 0: a
  // wallet for this session only). One live session per account.
  virtual MmoStatus join(uint64_t account_id, float x_m, float y_m, uint8_t faction, MmoJoinTicket& out) = 0;
  // A join with no account (tests and tools).
  MmoStatus join(float x_m, float y_m, uint8_t faction, MmoJoinTicket& out) { return join(0, x_m, y_m, faction, out); }
  virtual MmoStatus leave(uint64_t player_id, uint64_t session_token) = 0;
  // Event capacity a batch of `moves` records needs.
  virtual size_t move_events_required(size_t moves) const = 0;
  virtual MmoStatus apply_moves(std::span<const MmoMoveRecord> moves, uint64_t now_ms, std::span<MmoMoveEvent> events,
                                size_t& events_written) = 0;
  virtual MmoStatus raid_spawn(const MmoRaidSpawnRequest& request, MmoRaidReport& out) = 0;
  virtual MmoStatus damage(uint64_t attacker_id, uint64_t session_token, uint64_t target_id, int32_t amount, MmoDamageResult& out) = 0;
  // A player's attack at server time now_ms (engine.rs Engine::attack): MMO_OK with
  // out.refusal 0 (landed) or an MmoAttackError.
  virtual MmoStatus attack(uint64_t attacker_id, uint64_t session_token, uint64_t target_id, uint64_t now_ms, MmoAttackResult& out) = 0;
  // A player's claim of the loot a killed add dropped (engine.rs Engine::claim_loot): MMO_OK
  // with out.refusal 0 (the claimer's: credited now, or earlier when out.repeat is 1) or an
  // MmoLootError.
  virtual MmoStatus claim_loot(uint64_t player_id, uint64_t session_token, uint64_t loot_id, MmoLootResult& out) = 0;
  // A trade offer / an answer to one at server time now_ms (engine.rs trade_offer,
  // trade_answer): MMO_OK with out.status the economy's decision.
  virtual MmoStatus trade_offer(const MmoTradeOffer& offer, uint64_t now_ms, MmoEconomyResult& out) = 0;
  virtual MmoStatus trade_answer(const MmoTradeAnswer& answer, uint64_t now_ms, MmoEconomyResult& out) = 0;
  // An admin grant (engine.rs grant): the admin path only, never a client's request.
  virtual MmoStatus grant(uint64_t player_id, uint64_t grant_id, const MmoTradeStack& stack, MmoEconomyResult& out) = 0;
  virtual MmoStatus apply_economy(std::span<const MmoEconomyOp> ops, std::span<MmoEconomyResult> results, size_t& results_written) = 0;
  virtual MmoStatus tick(uint64_t now_ms, MmoTickInfo& out) = 0;
  virtual MmoStatus area_of_interest(uint64_t player_id, std::span<MmoAoiEntry> entries, size_t& written) = 0;
  // The areas of interest of several players from one snapshot: player i's entries (at most
  // min(k, aoi_k)) go to entries[i * k ...], their count to counts[i] (MMO_AOI_NOT_IN_SNAPSHOT
  // if the player is not in the snapshot). entries must hold players.size() * k, counts
  // players.size(); k at most 64.
  virtual MmoStatus area_of_interest_batch(std::span<const uint64_t> players, uint32_t k, std::span<MmoAoiEntry> entries,
                                           std::span<uint32_t> counts, MmoAoiBatchInfo& info) = 0;
  virtual MmoStatus stats(MmoStats& out) const = 0;
  virtual MmoStatus economy_audit(MmoEconomyAudit& out) const = 0;
  virtual MmoStatus player_view(uint64_t player_id, MmoPlayerView& out) const = 0;
  // Opens the economy's durable store in `data_dir` and starts committing (mmo_economy_open):
  // from then on an economy result may be told only once economy_durable_through() reaches its
  // ledger_seq; `on_durable(context)` is called (on another thread) after each durable group.
  // After an idle spell the committer lets a first change wait up to `commit_linger_us` for
  // others before it commits, and the commit log's segments are `log_segment_kib` KiB (0: the
  // default; see mmo_economy_open).
  // Engines that keep their economy in memory answer MMO_ERR_INVALID_ARGUMENT with a message.
  virtual MmoStatus economy_open(std::string_view data_dir, uint32_t commit_linger_us, uint32_t log_segment_kib, MmoDurableCallback on_durable,
                                 void* context, MmoRecoveryInfo& info, std::string& message) {
    (void)data_dir, (void)commit_linger_us, (void)log_segment_kib, (void)on_durable, (void)context, (void)info;
    message = std::string(name()) + " engine keeps its economy in memory (no store)";
    return MMO_ERR_INVALID_ARGUMENT;
  }
  // Every result whose ledger_seq is at most this may be told (UINT64_MAX: no store).
  virtual uint64_t economy_durable_through() const { return UINT64_MAX; }
  // Test hook: a panic inside the engine (MMO_ERR_PANIC, engine poisoned), for engines built
  // with fault_injection = 1; MMO_ERR_INVALID_ARGUMENT otherwise or where not supported.
  virtual MmoStatus debug_inject_panic() = 0;
};

// The Rust core through mmo_core.h. Throws std::runtime_error if the ABI does not match or
// the configuration is refused.
std::unique_ptr<Engine> make_rust_engine(const MmoConfig& config);

// An engine that keeps no game state (null_engine.cpp): it acknowledges every move and
// answers every area of interest empty. The comparison's floor row: the same front and
// kernel path with no engine work behind them. Not a game server.
std::unique_ptr<Engine> make_null_engine(const MmoConfig& config);

}  // namespace mmo
