// baseline_engine.hpp: the C++ "before" engine, BaselineEngine: the same game-state semantics
// as the Rust core (crate mmo-core), written the way a C++ team conventionally writes it:
//
// - entities are std::shared_ptr objects on the default heap (plain std::make_shared): players
//   in one std::unordered_map behind a std::shared_mutex, raid objects in another;
// - the collision grid is cell -> std::unordered_set<std::shared_ptr<GridEntity>>, the cells
//   spread over striped std::shared_mutex maps (baseline_grid.hpp);
// - each player's movement state sits behind its own std::mutex;
// - wallets are std::shared_ptr<Wallet> in 64 mutex-guarded stripes (baseline_economy.hpp);
// - raid bursts are kept until they expire as std::vectors of their objects, in a
//   std::multimap keyed by expiry tick;
// - counters are one block of std::atomic<uint64_t> (baseline_stats.hpp);
// - the area of interest reads a per-tick copy of the world published as a
//   std::shared_ptr<const WorldSnapshot> under a mutex (baseline_snapshot.hpp).
//
// Observable behaviour matches the Rust core call for call: every status, every event and its
// order (Ack then its Contacts, or one Reject), every rejection reason and its precedence, the
// speed, clock and bounds rules, grid cells with hysteresis, contacts, AoI, raid spawn
// positions for a seed (the same SplitMix64 and the same f32 arithmetic), burst expiry ticks,
// damage, the economy, and every MmoStats counter. What is not specified, and may differ
// between the two engines (and between runs):
// - the numeric values of player ids, raid object ids and session tokens (shapes match:
//   player ids are never 0 and never have bit 63 set; raid object ids always have it; tokens
//   are random and never 0; an id that left or expired never matches again);
// - the order of a move's Contact events (both engines report the same set when the cap is
//   not reached), and which contacts a move keeps when more than contacts_per_move_max are in
//   range (the count kept and the number truncated match);
// - the order of AoI entries at exactly equal distance, and which of them are kept at the
//   aoi_k cut-off, because both engines break such ties by id and ids differ (the distances
//   returned match);
// - the lock wait counters (lock_*_contended, lock_*_wait_ns, moves_waited_*), which count
//   each engine's own locks;
// - anything decided by thread interleaving.
//
// Threads: every method may be called from any thread at once; tick() is meant for one tick
// thread (concurrent callers serialise on the tick mutex). Lock order: players/objects map
// (shared, only to copy a shared_ptr out) -> a player's body mutex -> one grid stripe at a
// time; a player's body mutex -> the dead set's mutex; economy stripes in ascending index; the
// tick mutex -> bursts mutex, then grid stripes and the objects map one at a time; the tick
// mutex -> a player's body mutex (respawns, lingers' ends). The saved-players and lingering
// mutexes are each taken alone. No
// method holds a lock while taking one earlier in that order, so there is no deadlock cycle.
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <shared_mutex>
#include <span>
#include <string_view>
#include <unordered_map>
#include <set>
#include <vector>

#include "baseline/baseline_economy.hpp"
#include "baseline/baseline_grid.hpp"
#include "baseline/baseline_snapshot.hpp"
#include "baseline/baseline_stats.hpp"
#include "engine/engine.hpp"

namespace mmo {

// The C++ baseline engine. Throws std::runtime_error where mmo_engine_new refuses the same
// configuration: wherever the Rust core's CoreConfig::validate refuses it, and for
// fault_injection > 1 or non-zero _reserved bytes.
std::unique_ptr<Engine> make_baseline_engine(const MmoConfig& config);

namespace baseline {

// Throws std::runtime_error naming the first field CoreConfig::validate would refuse.
void validate_config(const MmoConfig& config);

inline constexpr uint64_t kObjectIdTag = uint64_t{1} << 63;  // raid object ids have it, player ids never
inline constexpr uint32_t kRaidBurstMax = 65'536;             // config.rs RAID_BURST_MAX
inline constexpr uint32_t kNeverExpires = UINT32_MAX;         // a player's GridEntity::expires_tick

// A player's movement state (movement.rs BodyState). Guarded by Player::body_mutex.
struct BodyState {
  float x_m = 0.0f;
  float y_m = 0.0f;
  float facing_rad = 0.0f;
  uint32_t last_sequence = 0;    // of the last applied move (meaningless until has_moved)
  uint64_t budget_um = 0;        // distance budget left as of budget_ms (meaningless until budget_set)
  uint64_t budget_ms = 0;        // server clock the budget was last brought up to
  bool has_moved = false;        // the first move may carry any sequence
  bool budget_set = false;       // budget_um/ms hold a budget (else full): the first move, or the account's last session
  uint64_t attack_ready_ms = 0;  // server clock from which the next attack may land
  uint64_t respawn_at_ms = 0;    // 0 alive; else (dead) the server time from which the tick respawns the player
  uint64_t combat_until_ms = 0;  // in combat until then (a landed hit between players): a leave before then lingers
  CellKey cell = 0;              // the grid cell the body is registered in
  bool alive = true;             // cleared by leave, under the lock
  std::array<uint8_t, 32> payload{};
};

// One joined player: everything about them in one heap object, shared by whoever looks them up.
struct Player {
  Player(uint64_t id_, uint64_t token, uint8_t faction_, int32_t hp_, EntityPtr entity_, WalletPtr wallet_, BodyState body_)
      : id(id_), session_token(token), faction(faction_), hp(hp_), entity(std::move(entity_)), wallet(std::move(wallet_)), body(body_) {}

  // engine.rs PlayerRecord's stages: in session, its session ended while the body lingers,
  // being torn down. Each step is won by exactly one caller.
  static constexpr uint8_t kLive = 0, kLingering = 1, kLeaving = 2;
  bool advance(uint8_t from, uint8_t to) { return stage.compare_exchange_strong(from, to, std::memory_order_acq_rel); }
  // The token is this session's, and the session has not ended in a linger.
  bool in_session(uint64_t token) const { return session_token == token && stage.load(std::memory_order_acquire) != kLingering; }

  const uint64_t id;
  const uint64_t session_token;
  const uint8_t faction;
  std::atomic<uint8_t> stage{kLive};
  uint64_t linger_until_ms = 0;      // while lingering, when the linger ends; guarded by BaselineEngine::linger_mutex_
  std::atomic<int32_t> hp;           // never below 0; CAS by damage()
  const EntityPtr entity;            // the body's grid registration (its position is atomic)
  const WalletPtr wallet;
  std::mutex body_mutex;
  BodyState body;  // guarded by body_mutex
};

// One raid object: its grid entity (immutable position) plus hit points, faction and loot.
struct RaidObject final : GridEntity {
  RaidObject(uint64_t id_, uint8_t kind_, Vec2 position_, uint32_t expires_tick_, int32_t hp_, uint8_t faction_)
      : GridEntity(id_, kind_, position_, expires_tick_), hp(hp_), faction(faction_) {}
  std::atomic<int32_t> hp;
  const uint8_t faction;
  // loot.rs: 0 while it holds none; its owner once a killing attack dropped loot (the killer's
  // wallet: Wallet::loot_owner); that | kLootClaimed once claimed (one CAS wins).
  std::atomic<uint64_t> loot{0};
};

inline constexpr uint64_t kLootClaimed = uint64_t{1} << 62;  // loot.rs LOOT_CLAIMED

// loot.rs LootTable::roll: what the loot of raid object `object_id` holds.
LootContents roll_loot(const MmoConfig& config, uint64_t object_id);

class BaselineEngine final : public Engine {
 public:
  // Throws std::runtime_error on a configuration mmo_engine_new would refuse.
  explicit BaselineEngine(const MmoConfig& config);

  std::string_view name() const override { return "baseline"; }
  using Engine::join;
  // As the Rust core: an account's wallet (in memory here) outlives its sessions and is
  // resumed by its next join; one live session per account (MMO_ERR_ACCOUNT_IN_SESSION).
  MmoStatus join(uint64_t account_id, float x_m, float y_m, uint8_t faction, MmoJoinTicket& out) override;
  MmoStatus leave(uint64_t player_id, uint64_t session_token) override;
  size_t move_events_required(size_t moves) const override;
  MmoStatus apply_moves(std::span<const MmoMoveRecord> moves, uint64_t now_ms, std::span<MmoMoveEvent> events,
                        size_t& events_written) override;
  MmoStatus raid_spawn(const MmoRaidSpawnRequest& request, MmoRaidReport& out) override;
  MmoStatus damage(uint64_t attacker_id, uint64_t session_token, uint64_t target_id, int32_t amount, MmoDamageResult& out) override;
  MmoStatus attack(uint64_t attacker_id, uint64_t session_token, uint64_t target_id, uint64_t now_ms, MmoAttackResult& out) override;
  MmoStatus claim_loot(uint64_t player_id, uint64_t session_token, uint64_t loot_id, MmoLootResult& out) override;
  MmoStatus trade_offer(const MmoTradeOffer& offer, uint64_t now_ms, MmoEconomyResult& out) override;
  MmoStatus trade_answer(const MmoTradeAnswer& answer, uint64_t now_ms, MmoEconomyResult& out) override;
  MmoStatus grant(uint64_t player_id, uint64_t grant_id, const MmoTradeStack& stack, MmoEconomyResult& out) override;
  MmoStatus apply_economy(std::span<const MmoEconomyOp> ops, std::span<MmoEconomyResult> results, size_t& results_written) override;
  MmoStatus tick(uint64_t now_ms, MmoTickInfo& out) override;
  MmoStatus area_of_interest(uint64_t player_id, std::span<MmoAoiEntry> entries, size_t& written) override;
  MmoStatus area_of_interest_batch(std::span<const uint64_t> players, uint32_t k, std::span<MmoAoiEntry> entries,
                                   std::span<uint32_t> counts, MmoAoiBatchInfo& info) override;
  MmoStatus stats(MmoStats& out) const override;
  MmoStatus economy_audit(MmoEconomyAudit& out) const override;
  MmoStatus player_view(uint64_t player_id, MmoPlayerView& out) const override;
  MmoStatus debug_inject_panic() override { return MMO_ERR_INVALID_ARGUMENT; }  // nothing to poison

  // Audit and test helpers.
  const Grid& grid() const { return grid_; }
  Audit full_audit() const { return economy_.audit(); }
  uint32_t live_players() const { return players_live_.load(std::memory_order_acquire); }
  uint32_t live_raid_objects() const { return objects_live_.load(std::memory_order_acquire); }
  std::optional<int32_t> raid_object_hp(uint64_t object_id) const;

 private:
  struct MoveTally;
  // A burst waiting for its expiry tick: its objects, grouped by the cell they were put in.
  struct Burst {
    std::vector<std::pair<CellKey, std::vector<EntityPtr>>> shares;
  };

  std::shared_ptr<Player> find_player(uint64_t player_id) const;
  std::shared_ptr<RaidObject> find_object(uint64_t object_id) const;
  // One move; returns 0 and the events written, or the MmoRejectReason.
  uint8_t apply_move(const MmoMoveRecord& rec, uint64_t now_ms, std::span<MmoMoveEvent> slots, MoveTally& tally, size_t& written);
  // movement.rs MoveRules::check: 0 and the budget left after the move, or the reason.
  uint8_t check_move(const BodyState& prev, const MmoMoveRecord& rec, uint64_t now_ms, uint64_t& budget_um, uint64_t& budget_ms) const;
  MmoStatus damage_inner(uint64_t attacker_id, uint64_t session_token, uint64_t target_id, int32_t amount, MmoDamageResult& out);
  // engine.rs attack_inner: 0 and `out` filled, or the MmoAttackError.
  uint8_t attack_inner(uint64_t attacker_id, uint64_t session_token, uint64_t target_id, uint64_t now_ms, MmoAttackResult& out,
                       LockWaits& body_waits);
  // engine.rs claim_loot_inner: 0 and `out` filled, or the MmoLootError.
  uint8_t claim_loot_inner(uint64_t player_id, uint64_t session_token, uint64_t loot_id, MmoLootResult& out, LockWaits& body_waits,
                           LockWaits& economy_waits);
  // engine.rs economy_parties: the initiator (null and `refusal` set if unknown or wrong
  // session, counted) and `other_id` resolved into `other`.
  std::shared_ptr<Player> economy_parties(uint64_t player_id, uint64_t session_token, uint64_t other_id, Counterparty& other,
                                          uint8_t& refusal);
  // Counts an economy decision: the duplicate counter, or its status's (stats.rs for_economy).
  void count_economy(const Outcome& o);
  MmoEconomyResult economy_one(const MmoEconomyOp& op, LockWaits& waits);
  // The tick's copy of the world, published for area-of-interest readers.
  void publish_snapshot(uint32_t tick, uint64_t now_ms, LockWaits& waits);
  void add_lock_waits(Counter contended, Counter wait_ns, const LockWaits& waits);
  MmoStatus validate_raid(const MmoRaidSpawnRequest& request) const;

  const MmoConfig config_;
  const uint64_t speed_um_per_ms_;  // the speed limit, micrometres per millisecond, rounded down
  const uint64_t allowance_um_;     // the distance budget's cap
  Grid grid_;
  Economy economy_;
  Stats stats_;

  mutable std::shared_mutex players_mutex_;
  std::unordered_map<uint64_t, std::shared_ptr<Player>> players_;  // guarded by players_mutex_
  std::atomic<uint64_t> next_player_id_{1};
  std::atomic<uint32_t> players_live_{0};  // admission count against player_capacity

  mutable std::shared_mutex objects_mutex_;
  std::unordered_map<uint64_t, std::shared_ptr<RaidObject>> objects_;  // guarded by objects_mutex_
  std::atomic<uint64_t> next_object_key_{1};
  std::atomic<uint32_t> objects_live_{0};  // admission count against raid_object_capacity
  std::atomic<uint32_t> bursts_live_{0};   // admission count against raid_burst_capacity

  std::mutex bursts_mutex_;
  std::multimap<uint32_t, Burst> pending_bursts_;  // expires_tick -> burst; guarded by bursts_mutex_

  // engine.rs saved_players: what each account's last session left its player, by account.
  struct SavedPlayer {
    int32_t hp = 0;
    BodyState body;  // of it, join takes only what carries over (movement.rs CarriedBody): attack_ready_ms, the budget,
                     // respawn_at_ms, combat_until_ms
  };
  std::mutex saved_mutex_;
  std::unordered_map<uint64_t, SavedPlayer> saved_players_;  // guarded by saved_mutex_
  // The players who are dead, as (BodyState::respawn_at_ms, player id): the tick takes the
  // due ones from the front. Each entry is added and removed under its player's body lock
  // (or, by a join, before the player can be found).
  std::mutex dead_mutex_;
  std::set<std::pair<uint64_t, uint64_t>> dead_players_;  // guarded by dead_mutex_
  std::atomic<uint64_t> last_tick_ms_{0};      // the last finished tick's now_ms: dates deaths that come with no clock
  // engine.rs lingering / lingering_accounts: the players whose session ended in combat while
  // their body stays in the world, as (linger end, player id), and each account's one.
  std::mutex linger_mutex_;
  std::set<std::pair<uint64_t, uint64_t>> lingering_;            // guarded by linger_mutex_
  std::unordered_map<uint64_t, uint64_t> lingering_accounts_;    // account -> player id; guarded by linger_mutex_
  // engine.rs end_linger: where the body stood, for the one caller that ends `player_id`'s
  // linger (and removes it); nothing for every other.
  std::optional<Vec2> end_linger(uint64_t player_id);
  // engine.rs lingers_due: ends the lingers due by now_ms (at most 256 a tick); returns how many.
  uint64_t lingers_due(uint64_t now_ms);
  // engine.rs remove_player: the body off the grid, its state saved, the wallet released, the
  // player out of the map, for the caller that won the player's leave or linger's end. Returns
  // where the body stood.
  Vec2 remove_player(Player& player, LockWaits& body_waits);
  // engine.rs mark_in_combat: a body (its mutex held) in combat until logout_linger_ms after now_ms.
  void mark_in_combat(BodyState& body, uint64_t now_ms) const;
  // engine.rs record_hit: a landed hit between players puts `player_id` in combat from now_ms;
  // `killed` (its hit points just reached 0) also marks it dead.
  void record_hit(uint64_t player_id, uint64_t now_ms, bool killed, LockWaits& body_waits);
  uint64_t respawn_at(uint64_t died_ms) const;
  // engine.rs respawn_due: brings back every dead player due by now_ms; returns how many.
  uint64_t respawn_due(uint64_t now_ms, LockWaits& body_waits);

  std::mutex tick_mutex_;
  uint32_t tick_ = 0;                      // guarded by tick_mutex_
  // The latest world snapshot: stored by the tick, copied (a reference-counted copy of the
  // pointer, under the mutex) by every area-of-interest query. Null before the first tick.
  mutable std::mutex snapshot_mutex_;
  std::shared_ptr<const WorldSnapshot> snapshot_;  // guarded by snapshot_mutex_
  std::shared_ptr<const WorldSnapshot> current_snapshot() const;
  std::atomic<uint32_t> current_tick_{0};  // the last finished tick, for raid spawn
};

}  // namespace baseline
}  // namespace mmo
