// baseline_engine.cpp: BaselineEngine's players, movement, combat, economy front door, AoI and
// readers. Raid spawn and the tick are in baseline_raid.cpp. Each method follows the matching
// one in rust-core/src/engine.rs; comments name the Rust rule a check mirrors.
#include "baseline/baseline_engine.hpp"

#include <sys/random.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <stdexcept>
#include <string>

namespace mmo {

std::unique_ptr<Engine> make_baseline_engine(const MmoConfig& config) { return std::make_unique<baseline::BaselineEngine>(config); }

namespace baseline {
namespace {

static_assert(sizeof(MmoMoveRecord) == 72 && sizeof(MmoMoveEvent) == 32 && sizeof(MmoEconomyOp) == 48, "records as mmo_core.h");
static_assert(sizeof(MmoEconomyResult) == 40 && sizeof(MmoAoiEntry) == 24 && sizeof(MmoConfig) == 144, "records as mmo_core.h");
static_assert(sizeof(BodyState::payload) == sizeof(MmoMoveRecord::payload));

[[noreturn]] void refuse(const char* why) { throw std::runtime_error(std::string("invalid baseline engine config: ") + why); }

// loot.rs LootTable::new: a zero loot key is replaced by one from the OS's random source.
MmoConfig with_loot_key(MmoConfig c) {
  const auto zero = [&] { return std::all_of(std::begin(c.loot_key), std::end(c.loot_key), [](uint8_t b) { return b == 0; }); };
  while (zero()) {
    if (getrandom(c.loot_key, sizeof c.loot_key, 0) != static_cast<ssize_t>(sizeof c.loot_key)) {
      throw std::runtime_error("the OS random source is unavailable (the loot key)");
    }
  }
  return c;
}

// A random, non-zero session token from the OS random source (as players.rs does).
uint64_t new_session_token() {
  for (;;) {
    uint64_t token = 0;
    if (getrandom(&token, sizeof token, 0) != static_cast<ssize_t>(sizeof token)) {
      token = (uint64_t{std::random_device{}()} << 32) ^ std::random_device{}();
    }
    if (token != 0) return token;
  }
}

// combat.rs Health::damage: a CAS loop saturating at 0; exactly one caller sees the kill.
// combat.rs Health::damage_reporting: a saturating CAS; `*taken` (if given) gets the hit
// points this call took.
MmoDamageResult hit(std::atomic<int32_t>& hp, int32_t amount, int32_t* taken = nullptr) {
  MmoDamageResult r{};
  int32_t current = hp.load(std::memory_order_acquire);
  for (;;) {
    if (current <= 0) {
      r.outcome = 3;  // already dead
      return r;
    }
    const int32_t next = std::max(current - amount, 0);  // current > 0 and amount > 0: no overflow
    if (hp.compare_exchange_weak(current, next, std::memory_order_acq_rel, std::memory_order_acquire)) {
      r.outcome = next == 0 ? 2 : 1;
      r.hp_left = next;
      if (taken != nullptr) *taken = current - next;
      return r;
    }
  }
}

// The FFI's batch rule: an input and an output that share bytes are refused.
template <class In, class Out>
bool overlap(std::span<In> in, std::span<Out> out) {
  if (in.empty() || out.empty()) return false;
  const auto in0 = reinterpret_cast<uintptr_t>(in.data()), in1 = in0 + in.size_bytes();
  const auto out0 = reinterpret_cast<uintptr_t>(out.data()), out1 = out0 + out.size_bytes();
  return in0 < out1 && out0 < in1;
}

}  // namespace

// config.rs CoreConfig::validate, check for check and in the same f32 arithmetic, plus
// mmo_engine_new's own refusals of fault_injection > 1 and non-zero reserved bytes.
void validate_config(const MmoConfig& c) {
  if (c.fault_injection > 1) refuse("fault_injection must be 0 or 1");
  for (const uint8_t b : c._reserved) {
    if (b != 0) refuse("_reserved bytes must be zero");
  }
  const auto finite_positive = [](float v) { return std::isfinite(v) && v > 0.0f; };
  if (!(std::isfinite(c.world_size_m) && c.world_size_m >= 1.0f) || c.world_size_m > 1'000'000.0f) refuse("world_size_m must be in [1, 1e6]");
  if (!finite_positive(c.cell_size_m) || c.cell_size_m > c.world_size_m) refuse("cell_size_m must be positive and at most world_size_m");
  const float cells_per_side = std::ceil(c.world_size_m / c.cell_size_m);
  if (cells_per_side > 2048.0f) refuse("world_size_m / cell_size_m must be at most MAX_CELLS_PER_SIDE (2048)");
  if (!(std::isfinite(c.cell_hysteresis_m) && c.cell_hysteresis_m >= 0.0f)) refuse("cell_hysteresis_m must be finite and non-negative");
  if (!finite_positive(c.contact_radius_m)) refuse("contact_radius_m must be positive");
  if (c.contact_radius_m + c.cell_hysteresis_m > c.cell_size_m) refuse("contact_radius_m + cell_hysteresis_m must not exceed cell_size_m");
  if (!finite_positive(c.max_speed_m_per_s)) refuse("max_speed_m_per_s must be positive");
  if (!(std::isfinite(c.speed_slack_m) && c.speed_slack_m >= 0.0f)) refuse("speed_slack_m must be finite and non-negative");
  if (c.contacts_per_move_max > 32) refuse("contacts_per_move_max above CONTACTS_PER_MOVE_MAX");
  if (c.aoi_k == 0 || c.aoi_k > 64) refuse("aoi_k must be in 1..=AOI_K_MAX");
  if (!finite_positive(c.aoi_radius_m) || c.aoi_radius_m > c.world_size_m) refuse("aoi_radius_m must be positive and at most world_size_m");
  if (!finite_positive(c.snapshot_cell_m) || std::ceil(c.world_size_m / c.snapshot_cell_m) > 65'536.0f) {
    refuse("snapshot_cell_m must be positive, with world_size_m / snapshot_cell_m at most 65536");
  }
  // config.rs MAX_AOI_REACH_CELLS: bounds the rings a query walks.
  if (c.aoi_radius_m / c.snapshot_cell_m > 256.0f) refuse("aoi_radius_m / snapshot_cell_m must be at most 256");
  if (c.player_capacity == 0 || c.player_capacity > (1u << 24)) refuse("player_capacity must be in 1..=16M");
  if (c.raid_object_capacity > (1u << 24)) refuse("raid_object_capacity must be at most 16M");
  if (c.raid_burst_capacity == 0 || c.raid_burst_capacity > 65'536) refuse("raid_burst_capacity must be in 1..=65536");
  if (c.grid_shards < 2 || c.grid_shards > 4096 || (c.grid_shards & (c.grid_shards - 1)) != 0) {
    refuse("grid_shards must be a power of two in 2..=4096");
  }
  if (c.tick_ms == 0 || c.tick_ms > 10'000) refuse("tick_ms must be in 1..=10000");
  if (c.player_hp <= 0) refuse("player_hp must be positive");
  if (c.starting_gold > static_cast<uint64_t>(kAmountMax)) refuse("starting_gold above AMOUNT_MAX");
  if (c.attack_damage <= 0) refuse("attack_damage must be positive");
  if (!finite_positive(c.attack_range_m) || c.attack_range_m > c.world_size_m) refuse("attack_range_m must be positive and at most world_size_m");
  if (c.attack_cooldown_ms > 3'600'000) refuse("attack_cooldown_ms must be at most one hour");
  if (c.respawn_ms == 0 || c.respawn_ms > 3'600'000) refuse("respawn_ms must be in 1..=3600000 (one hour)");
  if (c.logout_linger_ms > 600'000) refuse("logout_linger_ms must be at most 600000 (ten minutes)");
  if (!finite_positive(c.loot_range_m) || c.loot_range_m > c.world_size_m) refuse("loot_range_m must be positive and at most world_size_m");
  if (c.loot_gold_min > c.loot_gold_max) refuse("loot_gold_min must be at most loot_gold_max");
  if (c.loot_item_permille > 1'000) refuse("loot_item_permille must be at most 1000");
  if (c.loot_item_count_max == 0 || c.loot_item_count_max > 65'535) refuse("loot_item_count_max must be in 1..=65535");
  if (c.trade_timeout_ms == 0 || c.trade_timeout_ms > 3'600'000) refuse("trade_timeout_ms must be in 1..=3600000");
}

// Validates before any member is built (the grid sizes itself from the config).
static const MmoConfig& validated(const MmoConfig& config) {
  validate_config(config);
  return config;
}

static uint64_t speed_um_per_ms(const MmoConfig& c) { return saturating_u64(static_cast<double>(c.max_speed_m_per_s) * 1000.0); }

BaselineEngine::BaselineEngine(const MmoConfig& config)
    : config_(with_loot_key(validated(config))),
      speed_um_per_ms_(speed_um_per_ms(config)),
      allowance_um_(saturating_add_u64(saturating_mul_u64(speed_um_per_ms_, config.clock_slack_ms),
                                   saturating_u64(static_cast<double>(config.speed_slack_m) * 1'000'000.0))),
      grid_(config) {
  // Sized up front, as a reviewed server would: no rehash under load.
  players_.reserve(config.player_capacity);
  objects_.reserve(config.raid_object_capacity);
}

std::shared_ptr<Player> BaselineEngine::find_player(uint64_t player_id) const {
  std::shared_lock lock(players_mutex_);
  const auto it = players_.find(player_id);
  return it == players_.end() ? nullptr : it->second;
}

std::shared_ptr<RaidObject> BaselineEngine::find_object(uint64_t object_id) const {
  std::shared_lock lock(objects_mutex_);
  const auto it = objects_.find(object_id);
  return it == objects_.end() ? nullptr : it->second;
}

MmoStatus BaselineEngine::join(uint64_t account_id, float x_m, float y_m, uint8_t faction, MmoJoinTicket& out) {
  if (!grid_.in_world(x_m, y_m)) {
    stats_.bump(Counter::joins_refused_bounds);
    return MMO_ERR_OUT_OF_BOUNDS;
  }
  // engine.rs join_account: the account's player still lingering ends its leave now, and this
  // join takes up from it where the body stood.
  if (account_id != 0) {
    uint64_t lingering_id = 0;
    {
      std::lock_guard lock(linger_mutex_);
      if (const auto it = lingering_accounts_.find(account_id); it != lingering_accounts_.end()) lingering_id = it->second;
    }
    if (const auto stood = lingering_id != 0 ? end_linger(lingering_id) : std::nullopt) {
      stats_.bump(Counter::lingers_resumed);
      x_m = stood->x_m;
      y_m = stood->y_m;
    }
  }
  if (!try_acquire(players_live_, 1, config_.player_capacity)) {
    stats_.bump(Counter::joins_refused_full);
    return MMO_ERR_SERVER_FULL;
  }
  const uint64_t id = next_player_id_.fetch_add(1, std::memory_order_relaxed);
  WalletPtr wallet;
  const AccountOpen opened = economy_.open_account(account_id, id, config_.starting_gold, wallet);
  if (opened == AccountOpen::kInSession) {
    players_live_.fetch_sub(1, std::memory_order_acq_rel);
    stats_.bump(Counter::joins_refused_account);
    return MMO_ERR_ACCOUNT_IN_SESSION;
  }
  if (account_id != 0) stats_.bump(opened == AccountOpen::kCreated ? Counter::accounts_created : Counter::accounts_resumed);
  const uint64_t token = new_session_token();
  const CellKey cell = grid_.cell_of(x_m, y_m);
  // engine.rs join_account: an account's player comes back as its last session left it.
  SavedPlayer saved{config_.player_hp, BodyState{}};
  if (account_id != 0) {
    std::lock_guard lock(saved_mutex_);
    if (const auto it = saved_players_.find(account_id); it != saved_players_.end()) {
      saved = it->second;
      saved_players_.erase(it);
    }
  }
  BodyState body;  // a fresh body with what the account's last one carries over
  body.attack_ready_ms = saved.body.attack_ready_ms;
  body.budget_um = saved.body.budget_um;
  body.budget_ms = saved.body.budget_ms;
  body.budget_set = saved.body.budget_set;
  body.respawn_at_ms = saved.body.respawn_at_ms;
  body.combat_until_ms = saved.body.combat_until_ms;
  body.x_m = x_m;
  body.y_m = y_m;
  body.cell = cell;
  if (body.respawn_at_ms != 0) {
    std::lock_guard lock(dead_mutex_);
    dead_players_.emplace(body.respawn_at_ms, id);
  }
  auto entity = std::make_shared<GridEntity>(id, MMO_ENTITY_KIND_PLAYER, Vec2{x_m, y_m}, kNeverExpires);
  auto player = std::make_shared<Player>(id, token, faction, saved.hp, entity, std::move(wallet), body);
  // In the grid before the player can be found, so the first move finds its registration.
  LockWaits grid_waits;
  grid_.insert(cell, entity, grid_waits);
  add_lock_waits(Counter::lock_grid_contended, Counter::lock_grid_wait_ns, grid_waits);
  {
    std::unique_lock lock(players_mutex_);
    players_.emplace(id, std::move(player));
  }
  stats_.bump(Counter::joins);
  out = MmoJoinTicket{id, token, 0, x_m, y_m, 0};  // no slot hint: this engine finds a player by id
  return MMO_OK;
}

// engine.rs leave: out of combat the player goes at once; in combat (a landed hit between
// players within logout_linger_ms, by the last tick's clock) only the session ends and the
// body lingers until the first tick at or after the last tick's time plus logout_linger_ms.
MmoStatus BaselineEngine::leave(uint64_t player_id, uint64_t session_token) {
  const auto player = find_player(player_id);
  MmoStatus refused = MMO_OK;
  if (!player) {
    refused = MMO_ERR_UNKNOWN_PLAYER;
  } else if (player->session_token != session_token) {
    refused = MMO_ERR_WRONG_SESSION;
  }
  if (refused != MMO_OK) {
    stats_.bump(Counter::leaves_refused);
    return refused;
  }
  LockWaits body_waits;
  if (config_.logout_linger_ms > 0) {
    const uint64_t now_ms = last_tick_ms_.load(std::memory_order_acquire);
    bool lingers = false;
    {
      const auto body_lock = body_waits.unique(player->body_mutex);
      lingers = player->body.alive && player->body.combat_until_ms > now_ms && player->advance(Player::kLive, Player::kLingering);
    }
    if (lingers) {
      {
        std::lock_guard lock(linger_mutex_);
        player->linger_until_ms = saturating_add_u64(now_ms, config_.logout_linger_ms);
        lingering_.emplace(player->linger_until_ms, player_id);
        if (player->wallet->account != 0) lingering_accounts_.insert_or_assign(player->wallet->account, player_id);
      }
      add_lock_waits(Counter::lock_body_contended, Counter::lock_body_wait_ns, body_waits);
      stats_.bump(Counter::leaves);
      stats_.bump(Counter::leaves_lingered);
      return MMO_OK;
    }
  }
  if (!player->advance(Player::kLive, Player::kLeaving)) {  // another leave won, or the player lingers
    add_lock_waits(Counter::lock_body_contended, Counter::lock_body_wait_ns, body_waits);
    stats_.bump(Counter::leaves_refused);
    return MMO_ERR_UNKNOWN_PLAYER;
  }
  remove_player(*player, body_waits);
  stats_.bump(Counter::leaves);
  return MMO_OK;
}

std::optional<Vec2> BaselineEngine::end_linger(uint64_t player_id) {
  const auto player = find_player(player_id);
  if (!player || !player->advance(Player::kLingering, Player::kLeaving)) return std::nullopt;
  {
    std::lock_guard lock(linger_mutex_);
    lingering_.erase({player->linger_until_ms, player_id});
    const uint64_t account = player->wallet->account;
    if (const auto it = lingering_accounts_.find(account); account != 0 && it != lingering_accounts_.end() && it->second == player_id) {
      lingering_accounts_.erase(it);
    }
  }
  LockWaits body_waits;
  return remove_player(*player, body_waits);
}

uint64_t BaselineEngine::lingers_due(uint64_t now_ms) {
  std::vector<uint64_t> due;
  {
    std::lock_guard lock(linger_mutex_);
    for (auto it = lingering_.begin(); it != lingering_.end() && it->first <= now_ms && due.size() < 256; ++it) due.push_back(it->second);
  }
  uint64_t ended = 0;
  for (const uint64_t id : due) ended += end_linger(id).has_value() ? 1 : 0;
  return ended;
}

Vec2 BaselineEngine::remove_player(Player& player, LockWaits& body_waits) {
  const uint64_t player_id = player.id;
  LockWaits grid_waits;
  SavedPlayer saved;
  Vec2 stood{};
  {
    const auto body_lock = body_waits.unique(player.body_mutex);
    BodyState& body = player.body;
    body.alive = false;
    stood = Vec2{body.x_m, body.y_m};
    grid_.remove(body.cell, player.entity, grid_waits);
    // engine.rs leave: every hit point taken as it is read, the death dated if the kill found
    // the body gone before it could.
    saved.hp = player.hp.exchange(0, std::memory_order_acq_rel);
    saved.body = body;
    if (body.respawn_at_ms != 0) {
      std::lock_guard lock(dead_mutex_);
      dead_players_.erase({body.respawn_at_ms, player_id});
    } else if (saved.hp == 0) {
      saved.body.respawn_at_ms = respawn_at(last_tick_ms_.load(std::memory_order_acquire));
    }
    body.respawn_at_ms = 0;
  }
  add_lock_waits(Counter::lock_grid_contended, Counter::lock_grid_wait_ns, grid_waits);
  add_lock_waits(Counter::lock_body_contended, Counter::lock_body_wait_ns, body_waits);
  if (player.wallet->account != 0) {  // saved before the wallet is released: the next join binds it first
    std::lock_guard lock(saved_mutex_);
    saved_players_.insert_or_assign(player.wallet->account, saved);
  }
  economy_.release(player.wallet);  // an account's stays; a session's goes to the departed totals
  {
    std::unique_lock lock(players_mutex_);
    players_.erase(player_id);
  }
  players_live_.fetch_sub(1, std::memory_order_acq_rel);
  return stood;
}

size_t BaselineEngine::move_events_required(size_t moves) const {
  size_t required = 0;
  const size_t per_move = 1 + size_t{config_.contacts_per_move_max};
  return __builtin_mul_overflow(moves, per_move, &required) ? SIZE_MAX : required;
}

// Per-batch counts, added to the shared counters once per batch.
struct BaselineEngine::MoveTally {
  uint64_t applied = 0;
  std::array<uint64_t, 7> rejected{};  // by MmoRejectReason
  uint64_t crossings = 0;
  uint64_t contacts = 0;
  uint64_t truncated = 0;
  LockWaits grid_waits;
  LockWaits body_waits;
  uint64_t moves_waited_grid = 0;
  uint64_t moves_waited_body = 0;
};

void BaselineEngine::add_lock_waits(Counter contended, Counter wait_ns, const LockWaits& waits) {
  stats_.add(contended, waits.contended);
  stats_.add(wait_ns, waits.wait_ns);
}

MmoStatus BaselineEngine::apply_moves(std::span<const MmoMoveRecord> moves, uint64_t now_ms, std::span<MmoMoveEvent> events,
                                      size_t& events_written) {
  if (overlap(moves, events)) return MMO_ERR_INVALID_ARGUMENT;
  const size_t per_move = 1 + size_t{config_.contacts_per_move_max};
  size_t required = 0;
  if (__builtin_mul_overflow(moves.size(), per_move, &required)) required = SIZE_MAX;
  if (events.size() < required) {
    stats_.bump(Counter::move_batches_refused);
    return MMO_ERR_BUFFER_TOO_SMALL;  // nothing applied
  }
  MoveTally tally;
  size_t total = 0;
  for (const MmoMoveRecord& rec : moves) {
    // Each record owns the next 1 + contacts_per_move_max slots; it writes from the first.
    const std::span<MmoMoveEvent> slots = events.subspan(total, per_move);
    size_t written = 0;
    const uint8_t reason = apply_move(rec, now_ms, slots, tally, written);
    if (reason == 0) {
      total += written;
      continue;
    }
    MmoMoveEvent reject{};
    reject.player_id = rec.player_id;
    reject.sequence = rec.sequence;
    reject.kind = MMO_EVENT_KIND_REJECT;
    reject.detail = reason;
    slots[0] = reject;
    tally.rejected[reason] += 1;
    total += 1;
  }
  stats_.bump(Counter::move_batches);
  stats_.add(Counter::moves_applied, tally.applied);
  for (uint8_t reason = MMO_REJECT_REASON_UNKNOWN_PLAYER; reason <= MMO_REJECT_REASON_DEAD; ++reason) {
    stats_.add(counter_for_reject(reason), tally.rejected[reason]);
  }
  stats_.add(Counter::cell_crossings, tally.crossings);
  stats_.add(Counter::contacts_reported, tally.contacts);
  stats_.add(Counter::contacts_truncated, tally.truncated);
  add_lock_waits(Counter::lock_grid_contended, Counter::lock_grid_wait_ns, tally.grid_waits);
  add_lock_waits(Counter::lock_body_contended, Counter::lock_body_wait_ns, tally.body_waits);
  stats_.add(Counter::moves_waited_grid, tally.moves_waited_grid);
  stats_.add(Counter::moves_waited_body, tally.moves_waited_body);
  events_written = total;
  return MMO_OK;
}

// movement.rs MoveRules::check: sequence, then bounds, then the distance budget, which accrues
// the speed limit times the *server's* time, capped at the allowance (client clocks are never
// credited). Integer micrometres, a move's length rounded up: the same verdict as the core's.
uint8_t BaselineEngine::check_move(const BodyState& prev, const MmoMoveRecord& rec, uint64_t now_ms, uint64_t& budget_um,
                                   uint64_t& budget_ms) const {
  // Newer in serial arithmetic (RFC 1982): the wrapped difference as i32 is positive. The
  // first move may carry any sequence, as the front's replay window admits any first one.
  if (prev.has_moved && static_cast<int32_t>(rec.sequence - prev.last_sequence) <= 0) return MMO_REJECT_REASON_STALE_SEQUENCE;
  if (!grid_.in_world(rec.x_m, rec.y_m) || !finite(rec.facing_rad)) return MMO_REJECT_REASON_OUT_OF_BOUNDS;
  uint64_t left_um = allowance_um_, at_ms = now_ms;  // full before the first move (unless a join resumed one)
  if (prev.budget_set) {
    const uint64_t elapsed_ms = now_ms > prev.budget_ms ? now_ms - prev.budget_ms : 0;
    left_um = std::min(saturating_add_u64(prev.budget_um, saturating_mul_u64(speed_um_per_ms_, elapsed_ms)), allowance_um_);
    at_ms = std::max(now_ms, prev.budget_ms);
  }
  const double dx = static_cast<double>(rec.x_m) - static_cast<double>(prev.x_m);
  const double dy = static_cast<double>(rec.y_m) - static_cast<double>(prev.y_m);
  const uint64_t length_um = saturating_u64(std::ceil(std::sqrt(dx * dx + dy * dy) * 1'000'000.0));
  if (length_um > left_um) return MMO_REJECT_REASON_TOO_FAST;
  budget_um = left_um - length_um;
  budget_ms = at_ms;
  return 0;
}

uint8_t BaselineEngine::apply_move(const MmoMoveRecord& rec, uint64_t now_ms, std::span<MmoMoveEvent> slots, MoveTally& tally,
                                   size_t& written) {
  const auto player = find_player(rec.player_id);
  if (!player) return MMO_REJECT_REASON_UNKNOWN_PLAYER;
  if (!player->in_session(rec.session_token)) return MMO_REJECT_REASON_WRONG_SESSION;
  const float x = rec.x_m, y = rec.y_m;
  const uint64_t grid_waited = tally.grid_waits.contended, body_waited = tally.body_waits.contended;
  {
    const auto body_lock = tally.body_waits.unique(player->body_mutex);
    BodyState& body = player->body;
    if (!body.alive) return MMO_REJECT_REASON_UNKNOWN_PLAYER;  // left while we looked it up
    if (body.respawn_at_ms != 0) return MMO_REJECT_REASON_DEAD;
    uint64_t budget_um = 0, budget_ms = 0;
    if (const uint8_t reason = check_move(body, rec, now_ms, budget_um, budget_ms); reason != 0) return reason;
    body.x_m = x;
    body.y_m = y;
    body.facing_rad = rec.facing_rad;
    body.last_sequence = rec.sequence;
    body.budget_um = budget_um;
    body.budget_ms = budget_ms;
    body.has_moved = true;
    body.budget_set = true;
    std::memcpy(body.payload.data(), rec.payload, body.payload.size());
    player->entity->position.store(Vec2{x, y}, std::memory_order_relaxed);
    const CellKey cell = grid_.cell_with_hysteresis(body.cell, x, y);
    if (cell != body.cell) {
      // Remove, release, insert: never in two cells, briefly in none.
      grid_.remove(body.cell, player->entity, tally.grid_waits);
      grid_.insert(cell, player->entity, tally.grid_waits);
      body.cell = cell;
      tally.crossings += 1;
    }
  }
  tally.applied += 1;
  MmoMoveEvent ack{};
  ack.player_id = rec.player_id;
  ack.sequence = rec.sequence;
  ack.kind = MMO_EVENT_KIND_ACK;
  slots[0] = ack;
  written = 1;
  const size_t cap = slots.size();
  grid_.for_each_near(x, y, config_.contact_radius_m, rec.player_id, tally.grid_waits, [&](const GridEntity& other, Vec2, float distance_m) {
    if (written < cap) {
      MmoMoveEvent contact{};
      contact.player_id = rec.player_id;
      contact.other_id = other.id;
      contact.sequence = rec.sequence;
      contact.distance_m = distance_m;
      contact.kind = MMO_EVENT_KIND_CONTACT;
      contact.detail = other.kind;
      slots[written++] = contact;
    } else {
      tally.truncated += 1;
    }
  });
  tally.contacts += written - 1;
  tally.moves_waited_grid += tally.grid_waits.contended > grid_waited ? 1 : 0;
  tally.moves_waited_body += tally.body_waits.contended > body_waited ? 1 : 0;
  return 0;
}

MmoStatus BaselineEngine::damage(uint64_t attacker_id, uint64_t session_token, uint64_t target_id, int32_t amount, MmoDamageResult& out) {
  MmoDamageResult result{};
  const MmoStatus status = damage_inner(attacker_id, session_token, target_id, amount, result);
  if (status == MMO_OK && result.outcome != 3) {
    stats_.bump(Counter::damage_applied);
    if (result.outcome == 2) stats_.bump(Counter::kills);
  } else {
    stats_.bump(Counter::damage_rejected);  // refused, or already dead
  }
  if (status == MMO_OK) out = result;
  return status;
}

// engine.rs damage_inner: attacker, session, amount, then a raid object or a player target.
MmoStatus BaselineEngine::damage_inner(uint64_t attacker_id, uint64_t session_token, uint64_t target_id, int32_t amount,
                                       MmoDamageResult& out) {
  const auto attacker = find_player(attacker_id);
  if (!attacker) return MMO_ERR_UNKNOWN_PLAYER;
  if (!attacker->in_session(session_token)) return MMO_ERR_WRONG_SESSION;
  const uint8_t faction = attacker->faction;
  if (amount <= 0) return MMO_ERR_INVALID_ARGUMENT;
  if ((target_id & kObjectIdTag) != 0) {
    if (const auto object = find_object(target_id)) {
      if (object->faction == faction) return MMO_ERR_FRIENDLY_FIRE;
      out = hit(object->hp, amount);
      return MMO_OK;
    }
  }
  const auto target = find_player(target_id);
  if (!target) return MMO_ERR_UNKNOWN_TARGET;
  if (target->faction == faction) return MMO_ERR_FRIENDLY_FIRE;
  out = hit(target->hp, amount);
  if (out.outcome == 1 || out.outcome == 2) {  // this call has no clock of its own: the hit is dated by the last tick
    const uint64_t now_ms = last_tick_ms_.load(std::memory_order_acquire);
    LockWaits body_waits;
    record_hit(attacker_id, now_ms, false, body_waits);
    record_hit(target_id, now_ms, out.outcome == 2, body_waits);
    add_lock_waits(Counter::lock_body_contended, Counter::lock_body_wait_ns, body_waits);
  }
  return MMO_OK;
}

uint64_t BaselineEngine::respawn_at(uint64_t died_ms) const { return std::max<uint64_t>(saturating_add_u64(died_ms, config_.respawn_ms), 1); }

void BaselineEngine::mark_in_combat(BodyState& body, uint64_t now_ms) const {
  body.combat_until_ms = std::max(body.combat_until_ms, saturating_add_u64(now_ms, config_.logout_linger_ms));
}

void BaselineEngine::record_hit(uint64_t player_id, uint64_t now_ms, bool killed, LockWaits& body_waits) {
  const auto player = find_player(player_id);
  if (!player) return;  // left: its leave dates a death
  const auto body_lock = body_waits.unique(player->body_mutex);
  if (!player->body.alive) return;
  mark_in_combat(player->body, now_ms);
  if (!killed || player->body.respawn_at_ms != 0) return;
  player->body.respawn_at_ms = respawn_at(now_ms);
  std::lock_guard lock(dead_mutex_);
  dead_players_.emplace(player->body.respawn_at_ms, player_id);
}

uint64_t BaselineEngine::respawn_due(uint64_t now_ms, LockWaits& body_waits) {
  std::vector<std::pair<uint64_t, uint64_t>> due;
  {
    std::lock_guard lock(dead_mutex_);
    for (auto it = dead_players_.begin(); it != dead_players_.end() && it->first <= now_ms; ++it) due.push_back(*it);
  }
  uint64_t respawned = 0;
  for (const auto& [at_ms, id] : due) {
    const auto player = find_player(id);
    if (!player) continue;  // a join not in the map yet: its entry stays for the next tick
    const auto body_lock = body_waits.unique(player->body_mutex);
    BodyState& body = player->body;
    if (!body.alive || body.respawn_at_ms != at_ms) continue;
    int32_t expected = 0;
    player->hp.compare_exchange_strong(expected, config_.player_hp, std::memory_order_acq_rel);
    body.respawn_at_ms = 0;
    {
      std::lock_guard lock(dead_mutex_);
      dead_players_.erase({at_ms, id});
    }
    respawned += 1;
  }
  return respawned;
}

MmoStatus BaselineEngine::attack(uint64_t attacker_id, uint64_t session_token, uint64_t target_id, uint64_t now_ms, MmoAttackResult& out) {
  MmoAttackResult result{};
  LockWaits body_waits;
  const uint8_t refusal = attack_inner(attacker_id, session_token, target_id, now_ms, result, body_waits);
  // engine.rs attack_inner: the victim is in combat now, and a killed one is dead until the
  // tick respawns it (recorded with the attacker's body lock released: two body locks are
  // never held at once).
  if (refusal == 0 && result.target_kind == MMO_ENTITY_KIND_PLAYER) record_hit(target_id, now_ms, result.killed != 0, body_waits);
  add_lock_waits(Counter::lock_body_contended, Counter::lock_body_wait_ns, body_waits);
  if (refusal == 0) {
    stats_.bump(Counter::attacks_landed);
    stats_.bump(Counter::damage_applied);
    if (result.killed != 0) stats_.bump(Counter::kills);
    if (result.killed != 0 && result.target_kind == MMO_ENTITY_KIND_ADD) stats_.bump(Counter::loot_dropped);
  } else {
    result = MmoAttackResult{};
    result.refusal = refusal;
    static constexpr Counter kRefused[] = {Counter::attack_rejected_unknown_player, Counter::attack_rejected_wrong_session,
                                           Counter::attack_rejected_attacker_dead,  Counter::attack_rejected_unknown_target,
                                           Counter::attack_rejected_friendly_fire,  Counter::attack_rejected_target_dead,
                                           Counter::attack_rejected_out_of_range,   Counter::attack_rejected_cooldown};
    static_assert(std::size(kRefused) == MMO_ATTACK_ERROR_COOLDOWN);
    stats_.bump(kRefused[refusal - 1]);
  }
  out = result;
  return MMO_OK;
}

// engine.rs attack_inner: the attacker (alive, session), the target (object or player, other
// faction, alive), range from the attacker's body, cooldown on the server's clock, then the
// configured damage. The attacker's body lock is held from the range check to the cooldown's
// update, so one player's concurrent attacks land once per cooldown.
uint8_t BaselineEngine::attack_inner(uint64_t attacker_id, uint64_t session_token, uint64_t target_id, uint64_t now_ms,
                                     MmoAttackResult& out, LockWaits& body_waits) {
  const auto attacker = find_player(attacker_id);
  if (!attacker) return MMO_ATTACK_ERROR_UNKNOWN_PLAYER;
  if (!attacker->in_session(session_token)) return MMO_ATTACK_ERROR_WRONG_SESSION;
  if (attacker->hp.load(std::memory_order_acquire) <= 0) return MMO_ATTACK_ERROR_ATTACKER_DEAD;
  std::shared_ptr<RaidObject> object;
  std::shared_ptr<Player> player;
  if ((target_id & kObjectIdTag) != 0) object = find_object(target_id);
  if (!object) {
    player = find_player(target_id);
    if (!player) return MMO_ATTACK_ERROR_UNKNOWN_TARGET;
  }
  const uint8_t faction = object ? object->faction : player->faction;
  const Vec2 at = object ? object->position.load(std::memory_order_relaxed) : player->entity->position.load(std::memory_order_relaxed);
  std::atomic<int32_t>& hp = object ? object->hp : player->hp;
  if (faction == attacker->faction) return MMO_ATTACK_ERROR_FRIENDLY_FIRE;
  if (hp.load(std::memory_order_acquire) <= 0) return MMO_ATTACK_ERROR_TARGET_DEAD;
  const auto body_lock = body_waits.unique(attacker->body_mutex);
  BodyState& body = attacker->body;
  if (!body.alive) return MMO_ATTACK_ERROR_UNKNOWN_PLAYER;  // left while we looked it up
  // engine.rs attack_inner: killed since its hit points were read (the mark may lag the kill;
  // the hit points do not, and only the tick gives them back, under this lock).
  if (body.respawn_at_ms != 0 || attacker->hp.load(std::memory_order_acquire) <= 0) return MMO_ATTACK_ERROR_ATTACKER_DEAD;
  const float dx = at.x_m - body.x_m, dy = at.y_m - body.y_m;
  if (dx * dx + dy * dy > config_.attack_range_m * config_.attack_range_m) return MMO_ATTACK_ERROR_OUT_OF_RANGE;
  if (now_ms < body.attack_ready_ms) return MMO_ATTACK_ERROR_COOLDOWN;
  int32_t taken = 0;
  const MmoDamageResult r = hit(hp, config_.attack_damage, &taken);
  if (r.outcome == 3) return MMO_ATTACK_ERROR_TARGET_DEAD;  // another attack took the last hit points
  body.attack_ready_ms = saturating_add_u64(now_ms, config_.attack_cooldown_ms);
  if (player) mark_in_combat(body, now_ms);
  out.hp_left = r.hp_left;
  out.killed = r.outcome == 2 ? 1 : 0;
  out.target_kind = object ? object->kind.load() : static_cast<uint8_t>(MMO_ENTITY_KIND_PLAYER);
  out.damage = taken;
  // The one killing attack drops the add's loot: the killer's wallet's owner tag on it (the
  // account's, not the session's), the corpse shown as loot.
  if (out.killed != 0 && object && out.target_kind == MMO_ENTITY_KIND_ADD) {
    object->loot.store(attacker->wallet->loot_owner(), std::memory_order_release);
    object->kind.store(MMO_ENTITY_KIND_LOOT, std::memory_order_relaxed);
  }
  return 0;
}

MmoStatus BaselineEngine::claim_loot(uint64_t player_id, uint64_t session_token, uint64_t loot_id, MmoLootResult& out) {
  MmoLootResult result{};
  LockWaits body_waits, economy_waits;
  const uint8_t refusal = claim_loot_inner(player_id, session_token, loot_id, result, body_waits, economy_waits);
  add_lock_waits(Counter::lock_body_contended, Counter::lock_body_wait_ns, body_waits);
  add_lock_waits(Counter::lock_economy_contended, Counter::lock_economy_wait_ns, economy_waits);
  if (refusal == 0 && result.repeat != 0) {
    stats_.bump(Counter::loot_claim_repeats);
  } else if (refusal == 0) {
    stats_.bump(Counter::loot_claimed);
    stats_.add(Counter::loot_gold_claimed, result.gold);
    stats_.add(Counter::loot_items_claimed, result.item_count);
  } else {
    result = MmoLootResult{};
    result.refusal = refusal;
    static constexpr Counter kRefused[] = {Counter::loot_rejected_unknown_player, Counter::loot_rejected_wrong_session,
                                           Counter::loot_rejected_unknown_loot,   Counter::loot_rejected_no_loot,
                                           Counter::loot_rejected_not_yours,      Counter::loot_rejected_out_of_range,
                                           Counter::loot_rejected_wallet_full};
    static_assert(std::size(kRefused) == MMO_LOOT_ERROR_WALLET_FULL);
    stats_.bump(refusal == MMO_LOOT_ERROR_DEAD ? Counter::loot_rejected_dead : kRefused[refusal - 1]);
  }
  out = result;
  return MMO_OK;
}

// engine.rs claim_loot_inner: the claimer (live, session), the object (exists, holds loot, a
// kill of the claimer's account or session), range from the claimer's body, then one CAS taken with the credit under the
// claimer's wallet stripe.
uint8_t BaselineEngine::claim_loot_inner(uint64_t player_id, uint64_t session_token, uint64_t loot_id, MmoLootResult& out,
                                         LockWaits& body_waits, LockWaits& economy_waits) {
  const auto player = find_player(player_id);
  if (!player) return MMO_LOOT_ERROR_UNKNOWN_PLAYER;
  if (!player->in_session(session_token)) return MMO_LOOT_ERROR_WRONG_SESSION;
  const auto object = (loot_id & kObjectIdTag) != 0 ? find_object(loot_id) : nullptr;
  if (!object) return MMO_LOOT_ERROR_UNKNOWN_LOOT;
  const uint64_t state = object->loot.load(std::memory_order_acquire);
  if (state == 0) return MMO_LOOT_ERROR_NO_LOOT;
  if ((state & ~kLootClaimed) != player->wallet->loot_owner()) return MMO_LOOT_ERROR_NOT_YOURS;
  const LootContents contents = roll_loot(config_, loot_id);
  out.gold = contents.gold;
  out.item_kind = contents.item_kind;
  out.item_count = contents.item_count;
  if ((state & kLootClaimed) != 0) {
    out.repeat = 1;
    const auto balance = economy_.balance(*player->wallet);
    out.gold_after = balance ? balance->gold : 0;
    return 0;
  }
  {
    const auto body_lock = body_waits.unique(player->body_mutex);
    const BodyState& body = player->body;
    if (!body.alive) return MMO_LOOT_ERROR_UNKNOWN_PLAYER;  // left while we looked it up
    if (body.respawn_at_ms != 0) return MMO_LOOT_ERROR_DEAD;
    const Vec2 at = object->position.load(std::memory_order_relaxed);
    const float dx = at.x_m - body.x_m, dy = at.y_m - body.y_m;
    if (dx * dx + dy * dy > config_.loot_range_m * config_.loot_range_m) return MMO_LOOT_ERROR_OUT_OF_RANGE;
  }
  const auto take = [&] {
    uint64_t expected = state;
    return object->loot.compare_exchange_strong(expected, state | kLootClaimed, std::memory_order_acq_rel);
  };
  switch (economy_.credit_loot(player->wallet, contents, take, economy_waits, out.gold_after)) {
    case LootCredit::kCredited: return 0;
    case LootCredit::kTakenAlready: out.repeat = 1; return 0;
    case LootCredit::kDeparted: return MMO_LOOT_ERROR_UNKNOWN_PLAYER;
    case LootCredit::kFull: return MMO_LOOT_ERROR_WALLET_FULL;
  }
  return MMO_LOOT_ERROR_WALLET_FULL;  // unreachable: every LootCredit is handled above
}

MmoStatus BaselineEngine::apply_economy(std::span<const MmoEconomyOp> ops, std::span<MmoEconomyResult> results, size_t& results_written) {
  if (overlap(ops, results)) return MMO_ERR_INVALID_ARGUMENT;
  if (results.size() < ops.size()) {
    stats_.bump(Counter::economy_batches_refused);
    return MMO_ERR_BUFFER_TOO_SMALL;  // nothing applied
  }
  LockWaits waits;
  for (size_t i = 0; i < ops.size(); ++i) results[i] = economy_one(ops[i], waits);
  add_lock_waits(Counter::lock_economy_contended, Counter::lock_economy_wait_ns, waits);
  results_written = ops.size();
  return MMO_OK;
}

// engine.rs economy_parties: the initiator (live, right session) and `other_id` resolved.
std::shared_ptr<Player> BaselineEngine::economy_parties(uint64_t player_id, uint64_t session_token, uint64_t other_id,
                                                        Counterparty& other, uint8_t& refusal) {
  auto player = find_player(player_id);
  if (!player) {
    stats_.bump(Counter::economy_unknown_player);
    refusal = MMO_ECONOMY_STATUS_UNKNOWN_PLAYER;
    return nullptr;
  }
  if (!player->in_session(session_token)) {
    stats_.bump(Counter::economy_wrong_session);
    refusal = MMO_ECONOMY_STATUS_WRONG_SESSION;
    return nullptr;
  }
  if (other_id == 0) {
    other.kind = Counterparty::Kind::kAbsent;
  } else if (other_id == player_id) {
    other.kind = Counterparty::Kind::kInitiator;
  } else if (const auto p = find_player(other_id)) {
    other.kind = Counterparty::Kind::kWallet;
    other.wallet = p->wallet;
  } else {
    other.kind = Counterparty::Kind::kUnknown;
  }
  return player;
}

void BaselineEngine::count_economy(const Outcome& o) {
  stats_.bump(o.duplicate ? Counter::economy_duplicates : counter_for_economy(o.status));
}

static MmoEconomyResult economy_result(uint64_t transaction_id, uint64_t player_id, const Outcome& o) {
  MmoEconomyResult r{};
  r.transaction_id = transaction_id;
  r.player_id = player_id;
  r.status = o.status;
  r.duplicate = o.duplicate ? 1 : 0;
  r.gold_balance = o.gold_after;
  return r;
}

MmoStatus BaselineEngine::trade_offer(const MmoTradeOffer& offer, uint64_t now_ms, MmoEconomyResult& out) {
  LockWaits waits;
  Counterparty taker;
  uint8_t refusal = 0;
  const auto maker = economy_parties(offer.player_id, offer.session_token, offer.counterparty_id, taker, refusal);
  if (!maker) {
    out = economy_result(offer.transaction_id, offer.player_id, Outcome{refusal, false, 0});
    return MMO_OK;
  }
  bool closed_expired = false;
  const Outcome o = economy_.offer(offer, maker->wallet, taker, now_ms, config_.trade_timeout_ms, waits, closed_expired);
  count_economy(o);
  if (o.status == MMO_ECONOMY_STATUS_APPLIED && !o.duplicate) stats_.bump(Counter::trade_offers);
  if (closed_expired) stats_.bump(Counter::trades_expired);
  add_lock_waits(Counter::lock_economy_contended, Counter::lock_economy_wait_ns, waits);
  out = economy_result(offer.transaction_id, offer.player_id, o);
  return MMO_OK;
}

MmoStatus BaselineEngine::trade_answer(const MmoTradeAnswer& answer, uint64_t now_ms, MmoEconomyResult& out) {
  LockWaits waits;
  Counterparty maker;
  uint8_t refusal = 0;
  const auto me = economy_parties(answer.player_id, answer.session_token, answer.maker_id, maker, refusal);
  if (!me) {
    out = economy_result(answer.transaction_id, answer.player_id, Outcome{refusal, false, 0});
    return MMO_OK;
  }
  TradeClose close = TradeClose::kNone;
  const Outcome o = economy_.answer(answer, me->wallet, maker, now_ms, waits, close);
  count_economy(o);
  switch (close) {
    case TradeClose::kNone: break;
    case TradeClose::kAccepted: stats_.bump(Counter::trades_accepted); break;
    case TradeClose::kDeclined: stats_.bump(Counter::trades_declined); break;
    case TradeClose::kCancelled: stats_.bump(Counter::trades_cancelled); break;
    case TradeClose::kExpired: stats_.bump(Counter::trades_expired); break;
  }
  add_lock_waits(Counter::lock_economy_contended, Counter::lock_economy_wait_ns, waits);
  out = economy_result(answer.transaction_id, answer.player_id, o);
  return MMO_OK;
}

MmoStatus BaselineEngine::grant(uint64_t player_id, uint64_t grant_id, const MmoTradeStack& stack, MmoEconomyResult& out) {
  const auto player = find_player(player_id);
  if (!player) {
    stats_.bump(Counter::economy_unknown_player);
    out = economy_result(grant_id, player_id, Outcome{MMO_ECONOMY_STATUS_UNKNOWN_PLAYER, false, 0});
    return MMO_OK;
  }
  LockWaits waits;
  const Outcome o = economy_.grant(player->wallet, grant_id, stack, waits);
  add_lock_waits(Counter::lock_economy_contended, Counter::lock_economy_wait_ns, waits);
  if (o.status == MMO_ECONOMY_STATUS_APPLIED && !o.duplicate) {
    stats_.bump(Counter::grants);
    stats_.add(Counter::grant_gold, static_cast<uint64_t>(stack.gold));
    stats_.add(Counter::grant_items, static_cast<uint32_t>(stack.item_count));
  } else {
    count_economy(o);
  }
  out = economy_result(grant_id, player_id, o);
  return MMO_OK;
}

// engine.rs economy_one: player and session here, counterparty resolved to a wallet, then
// the economy decides (and records) the rest.
MmoEconomyResult BaselineEngine::economy_one(const MmoEconomyOp& op, LockWaits& waits) {
  Counterparty counterparty;
  uint8_t refusal = 0;
  const auto player = economy_parties(op.player_id, op.session_token, op.counterparty_id, counterparty, refusal);
  if (!player) return economy_result(op.transaction_id, op.player_id, Outcome{refusal, false, 0});
  const Outcome outcome = economy_.execute(op, player->wallet, counterparty, waits);
  count_economy(outcome);
  return economy_result(op.transaction_id, op.player_id, outcome);
}

std::shared_ptr<const WorldSnapshot> BaselineEngine::current_snapshot() const {
  std::lock_guard lock(snapshot_mutex_);
  return snapshot_;
}

MmoStatus BaselineEngine::area_of_interest(uint64_t player_id, std::span<MmoAoiEntry> entries, size_t& written) {
  // The caller's candidate buffer, kept per thread and reused (reserved once it has grown).
  thread_local std::vector<AoiCandidate> scratch;
  if (!find_player(player_id)) {
    stats_.bump(Counter::aoi_not_in_snapshot);
    return MMO_ERR_UNKNOWN_PLAYER;
  }
  const std::shared_ptr<const WorldSnapshot> snapshot = current_snapshot();
  const SnapshotEntry* viewer = snapshot ? snapshot->find(player_id) : nullptr;
  if (viewer == nullptr) {
    stats_.bump(Counter::aoi_not_in_snapshot);
    return MMO_ERR_NOT_IN_SNAPSHOT;
  }
  const size_t k = std::min(entries.size(), size_t{config_.aoi_k});
  stats_.bump(Counter::aoi_queries);
  written = snapshot->nearest(*viewer, entries.first(k), scratch);
  return MMO_OK;
}

MmoStatus BaselineEngine::area_of_interest_batch(std::span<const uint64_t> players, uint32_t k, std::span<MmoAoiEntry> entries,
                                                 std::span<uint32_t> counts, MmoAoiBatchInfo& info) {
  thread_local std::vector<AoiCandidate> scratch;
  if (k > 64) return MMO_ERR_INVALID_ARGUMENT;
  if (overlap(players, entries) || overlap(players, counts) || overlap(entries, counts)) return MMO_ERR_INVALID_ARGUMENT;
  if (entries.size() / std::max<size_t>(k, 1) < players.size() && k != 0) return MMO_ERR_BUFFER_TOO_SMALL;
  if (counts.size() < players.size()) return MMO_ERR_BUFFER_TOO_SMALL;
  const std::shared_ptr<const WorldSnapshot> snapshot = current_snapshot();
  const size_t per_player = std::min<size_t>(k, config_.aoi_k);
  MmoAoiBatchInfo result{};
  if (snapshot) {
    result.tick = snapshot->tick();
    result.now_ms = snapshot->now_ms();
  }
  for (size_t i = 0; i < players.size(); ++i) {
    // A departed player may still be in the snapshot; only live players get an answer.
    const SnapshotEntry* viewer = snapshot && find_player(players[i]) ? snapshot->find(players[i]) : nullptr;
    if (viewer == nullptr) {
      counts[i] = MMO_AOI_NOT_IN_SNAPSHOT;
      continue;
    }
    counts[i] = static_cast<uint32_t>(snapshot->nearest(*viewer, entries.subspan(i * k, per_player), scratch));
    result.found += 1;
  }
  stats_.add(Counter::aoi_queries, result.found);
  stats_.add(Counter::aoi_not_in_snapshot, players.size() - result.found);
  info = result;
  return MMO_OK;
}

MmoStatus BaselineEngine::stats(MmoStats& out) const {
  out = stats_.snapshot();
  return MMO_OK;
}

MmoStatus BaselineEngine::economy_audit(MmoEconomyAudit& out) const {
  const Audit a = economy_.audit();
  const auto saturate = [](Total v) { return v > UINT64_MAX ? UINT64_MAX : static_cast<uint64_t>(v); };
  MmoEconomyAudit audit{};
  audit.live_gold = saturate(a.live.gold);
  audit.departed_gold = saturate(a.departed.gold);
  audit.minted_gold = saturate(a.minted.gold);
  audit.sunk_gold = saturate(a.sunk.gold);
  audit.loot_minted_gold = saturate(a.minted_by_loot.gold);
  audit.grant_minted_gold = saturate(a.minted_by_grant.gold);
  audit.escrowed_gold = saturate(a.escrowed.gold);
  audit.open_offers = a.open_offers;
  Total grant_items = 0;
  for (const Total v : a.minted_by_grant.items) grant_items += v;
  audit.grant_minted_items = saturate(grant_items);
  Total loot_items = 0;
  for (const Total v : a.minted_by_loot.items) loot_items += v;
  audit.loot_minted_items = saturate(loot_items);
  audit.open_wallets = a.open_wallets;
  audit.conserved = a.conserved() ? 1 : 0;
  out = audit;
  return MMO_OK;
}

MmoStatus BaselineEngine::player_view(uint64_t player_id, MmoPlayerView& out) const {
  const auto player = find_player(player_id);
  if (!player) return MMO_ERR_UNKNOWN_PLAYER;
  BodyState body;
  {
    std::lock_guard body_lock(player->body_mutex);
    body = player->body;
  }
  if (!body.alive) return MMO_ERR_UNKNOWN_PLAYER;
  const auto balance = economy_.balance(*player->wallet);
  if (!balance) return MMO_ERR_UNKNOWN_PLAYER;
  MmoPlayerView view{};
  view.x_m = body.x_m;
  view.y_m = body.y_m;
  view.last_sequence = body.last_sequence;
  view.cell = body.cell;
  view.hp = player->hp.load(std::memory_order_acquire);
  view.faction = player->faction;
  view.gold = balance->gold;
  std::copy(balance->items.begin(), balance->items.end(), std::begin(view.items));
  out = view;
  return MMO_OK;
}

std::optional<int32_t> BaselineEngine::raid_object_hp(uint64_t object_id) const {
  const auto object = find_object(object_id);
  if (!object) return std::nullopt;
  return object->hp.load(std::memory_order_acquire);
}

}  // namespace baseline
}  // namespace mmo
