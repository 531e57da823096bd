// The C++ baseline engine (cpp-net/baseline/): its rules one by one, the same operations run
// against the Rust core and compared result by result (random scenarios; raid spawn positions
// bit for bit), and a multi-threaded stress test mirroring rust-core/tests/suite/engine_stress.rs
// (also run under ThreadSanitizer: cmake -DMMO_TSAN=ON).
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <bit>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <random>
#include <cstring>
#include <iostream>
#include <limits>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "baseline/baseline_engine.hpp"

namespace {

using mmo::baseline::BaselineEngine;
using mmo::baseline::kItemKinds;
using mmo::baseline::kObjectIdTag;
using mmo::baseline::LootContents;
using mmo::baseline::roll_loot;

// CoreConfig::default(), written out (checked against mmo_config_default below).
MmoConfig default_config() {
  MmoConfig c{};
  c.world_size_m = 4096.0f;
  c.cell_size_m = 32.0f;
  c.cell_hysteresis_m = 2.0f;
  c.max_speed_m_per_s = 12.0f;
  c.speed_slack_m = 0.5f;
  c.contact_radius_m = 8.0f;
  c.clock_slack_ms = 250;
  c.contacts_per_move_max = 8;
  c.aoi_k = 32;
  c.player_capacity = 8192;
  c.raid_object_capacity = 32768;
  c.raid_burst_capacity = 256;
  c.aoi_radius_m = 48.0f;
  c.snapshot_cell_m = 5.0f;
  c.grid_shards = 128;
  c.tick_ms = 50;
  c.player_hp = 1000;
  c.starting_gold = 0;
  c.attack_damage = 100;
  c.attack_range_m = 6.0f;
  c.attack_cooldown_ms = 500;
  c.respawn_ms = 10'000;
  c.logout_linger_ms = 10'000;
  c.loot_range_m = 6.0f;
  c.loot_gold_min = 5;
  c.loot_gold_max = 50;
  c.loot_item_permille = 250;
  c.loot_item_count_max = 3;
  c.trade_timeout_ms = 30'000;
  return c;
}

// rust-core/tests/common/mod.rs small_config(): a 1 km world, modest capacities.
MmoConfig small_config() {
  MmoConfig c = default_config();
  c.world_size_m = 1024.0f;
  c.player_capacity = 256;
  c.raid_object_capacity = 16384;
  c.raid_burst_capacity = 16;
  return c;
}

struct Who {
  uint64_t id = 0;
  uint64_t token = 0;
};

Who join(mmo::Engine& e, float x, float y, uint8_t faction = 1) {
  MmoJoinTicket t{};
  EXPECT_EQ(e.join(x, y, faction, t), MMO_OK);
  return Who{t.player_id, t.session_token};
}

MmoMoveRecord mv(Who who, uint32_t seq, uint32_t client_ms, float x, float y) {
  MmoMoveRecord m{};
  m.player_id = who.id;
  m.session_token = who.token;
  m.sequence = seq;
  m.client_time_ms = client_ms;
  m.x_m = x;
  m.y_m = y;
  return m;
}

std::vector<MmoMoveEvent> apply(mmo::Engine& e, const std::vector<MmoMoveRecord>& batch, uint64_t now_ms) {
  std::vector<MmoMoveEvent> events(e.move_events_required(batch.size()));
  size_t written = 0;
  EXPECT_EQ(e.apply_moves(batch, now_ms, events, written), MMO_OK);
  events.resize(written);
  return events;
}

// The one event of a single refused move, or its Ack.
MmoMoveEvent apply_one(mmo::Engine& e, const MmoMoveRecord& m, uint64_t now_ms) {
  const auto events = apply(e, {m}, now_ms);
  EXPECT_FALSE(events.empty());
  return events.empty() ? MmoMoveEvent{} : events[0];
}

uint8_t reject_of(mmo::Engine& e, const MmoMoveRecord& m, uint64_t now_ms) {
  const MmoMoveEvent ev = apply_one(e, m, now_ms);
  return ev.kind == MMO_EVENT_KIND_REJECT ? ev.detail : 0;
}

MmoEconomyOp op(Who who, uint64_t txn, uint8_t kind, uint64_t counterparty, int64_t gold, uint16_t item_kind = 0, int32_t item_count = 0) {
  MmoEconomyOp o{};
  o.player_id = who.id;
  o.session_token = who.token;
  o.transaction_id = txn;
  o.counterparty_id = counterparty;
  o.gold = gold;
  o.item_count = item_count;
  o.item_kind = item_kind;
  o.kind = kind;
  return o;
}

MmoEconomyResult grant(mmo::Engine& e, Who who, uint64_t id, int64_t gold, uint16_t item_kind = 0, int32_t item_count = 0) {
  MmoEconomyResult r{};
  EXPECT_EQ(e.grant(who.id, id, MmoTradeStack{gold, item_count, item_kind, 0}, r), MMO_OK);
  return r;
}

MmoEconomyResult run_op(mmo::Engine& e, const MmoEconomyOp& o) {
  MmoEconomyResult r{};
  size_t written = 0;
  EXPECT_EQ(e.apply_economy({&o, 1}, {&r, 1}, written), MMO_OK);
  EXPECT_EQ(written, 1u);
  return r;
}

MmoRaidSpawnRequest raid(float x, float y, uint32_t count, uint32_t lifetime_ms) {
  MmoRaidSpawnRequest r{};
  r.center_x_m = x;
  r.center_y_m = y;
  r.half_extent_m = 40.0f;
  r.count = count;
  r.lifetime_ms = lifetime_ms;
  r.hp = 50;
  r.seed = 7;
  r.kind = MMO_ENTITY_KIND_ADD;
  r.faction = 9;
  return r;
}

MmoStats stats_of(const mmo::Engine& e) {
  MmoStats s{};
  EXPECT_EQ(e.stats(s), MMO_OK);
  return s;
}

MmoPlayerView view_of(const mmo::Engine& e, uint64_t id) {
  MmoPlayerView v{};
  EXPECT_EQ(e.player_view(id, v), MMO_OK);
  return v;
}

MmoTickInfo tick(mmo::Engine& e, uint64_t now_ms) {
  MmoTickInfo info{};
  EXPECT_EQ(e.tick(now_ms, info), MMO_OK);
  return info;
}

MmoEconomyAudit audit_of(const mmo::Engine& e) {
  MmoEconomyAudit a{};
  EXPECT_EQ(e.economy_audit(a), MMO_OK);
  return a;
}

// ---------------------------------------------------------------------------------------------
// Configuration

TEST(BaselineConfig, DefaultMatchesTheRustDefaultAndIsAccepted) {
  MmoConfig rust{};
  ASSERT_EQ(mmo_config_default(&rust), MMO_OK);
  const MmoConfig mine = default_config();
  EXPECT_EQ(std::memcmp(&rust, &mine, sizeof mine), 0);
  EXPECT_NO_THROW(mmo::make_baseline_engine(mine));
  EXPECT_EQ(mmo::make_baseline_engine(mine)->name(), "baseline");
}

TEST(BaselineConfig, RefusesExactlyWhatTheRustCoreRefuses) {
  using Mutation = void (*)(MmoConfig&);
  // Each of these is refused (config.rs rejects_each_bad_field and every other check), and
  // the boundary values next to them are accepted; both engines agree on every one.
  const std::vector<std::pair<Mutation, bool>> cases = {
      {[](MmoConfig& c) { c.world_size_m = NAN; }, false},
      {[](MmoConfig& c) { c.world_size_m = 1'000'001.0f; }, false},
      {[](MmoConfig& c) { c.world_size_m = 1'000'000.0f, c.cell_size_m = 1000.0f, c.snapshot_cell_m = 16.0f; }, true},
      {[](MmoConfig& c) { c.world_size_m = 1'000'000.0f, c.cell_size_m = 1000.0f; }, false},  // 125,000 snapshot cells a side
      {[](MmoConfig& c) { c.world_size_m = -1.0f; }, false},
      {[](MmoConfig& c) { c.cell_size_m = c.world_size_m / 3000.0f; }, false},
      {[](MmoConfig& c) { c.cell_size_m = 2.0f, c.contact_radius_m = 1.0f, c.cell_hysteresis_m = 1.0f; }, true},  // 2048 cells
      {[](MmoConfig& c) { c.cell_size_m = 0.0f; }, false},
      {[](MmoConfig& c) { c.cell_size_m = 5000.0f; }, false},
      {[](MmoConfig& c) { c.cell_hysteresis_m = -1.0f; }, false},
      {[](MmoConfig& c) { c.cell_hysteresis_m = INFINITY; }, false},
      {[](MmoConfig& c) { c.contact_radius_m = 31.0f; }, false},
      {[](MmoConfig& c) { c.contact_radius_m = 30.0f; }, true},
      {[](MmoConfig& c) { c.contact_radius_m = 0.0f; }, false},
      {[](MmoConfig& c) { c.max_speed_m_per_s = INFINITY; }, false},
      {[](MmoConfig& c) { c.max_speed_m_per_s = 0.0f; }, false},
      {[](MmoConfig& c) { c.speed_slack_m = -0.1f; }, false},
      {[](MmoConfig& c) { c.speed_slack_m = 0.0f; }, true},
      {[](MmoConfig& c) { c.contacts_per_move_max = 33; }, false},
      {[](MmoConfig& c) { c.contacts_per_move_max = 0; }, true},
      {[](MmoConfig& c) { c.aoi_k = 0; }, false},
      {[](MmoConfig& c) { c.aoi_k = 65; }, false},
      {[](MmoConfig& c) { c.aoi_k = 64; }, true},
      {[](MmoConfig& c) { c.player_capacity = 0; }, false},
      {[](MmoConfig& c) { c.player_capacity = (1u << 24) + 1; }, false},
      {[](MmoConfig& c) { c.raid_object_capacity = (1u << 24) + 1; }, false},
      {[](MmoConfig& c) { c.raid_object_capacity = 0; }, true},
      {[](MmoConfig& c) { c.raid_burst_capacity = 0; }, false},
      {[](MmoConfig& c) { c.raid_burst_capacity = 65'537; }, false},
      {[](MmoConfig& c) { c.aoi_radius_m = 0.0f; }, false},
      {[](MmoConfig& c) { c.aoi_radius_m = 1025.0f; }, false},
      {[](MmoConfig& c) { c.aoi_radius_m = 1024.0f; }, true},
      {[](MmoConfig& c) { c.snapshot_cell_m = 0.0f; }, false},
      {[](MmoConfig& c) { c.snapshot_cell_m = 1024.0f / 70'000.0f; }, false},
      {[](MmoConfig& c) { c.snapshot_cell_m = 1.0f; }, true},
      {[](MmoConfig& c) { c.snapshot_cell_m = 0.25f; }, true},    // the 48 m radius spans 192 cells
      {[](MmoConfig& c) { c.snapshot_cell_m = 0.18f; }, false},   // 267 cells: past MAX_AOI_REACH_CELLS
      {[](MmoConfig& c) { c.world_size_m = 0.5f; }, false},
      {[](MmoConfig& c) {  // a nanometre world, every length scaled with it: each ratio holds
         c.world_size_m = 1e-9f, c.cell_size_m = 1e-9f / 1024.0f, c.cell_hysteresis_m = 0.0f, c.contact_radius_m = 1e-9f / 2048.0f;
         c.aoi_radius_m = c.attack_range_m = c.loot_range_m = 1e-9f, c.snapshot_cell_m = 1e-9f / 60'000.0f;
       },
       false},
      {[](MmoConfig& c) { c.grid_shards = 100; }, false},
      {[](MmoConfig& c) { c.grid_shards = 1; }, false},
      {[](MmoConfig& c) { c.grid_shards = 8192; }, false},
      {[](MmoConfig& c) { c.grid_shards = 2; }, true},
      {[](MmoConfig& c) { c.tick_ms = 0; }, false},
      {[](MmoConfig& c) { c.tick_ms = 10'001; }, false},
      {[](MmoConfig& c) { c.player_hp = 0; }, false},
      {[](MmoConfig& c) { c.starting_gold = (uint64_t{1} << 48) + 1; }, false},
      {[](MmoConfig& c) { c.starting_gold = uint64_t{1} << 48; }, true},
      {[](MmoConfig& c) { c.attack_damage = 0; }, false},
      {[](MmoConfig& c) { c.attack_damage = 1; }, true},
      {[](MmoConfig& c) { c.attack_range_m = 0.0f; }, false},
      {[](MmoConfig& c) { c.attack_range_m = NAN; }, false},
      {[](MmoConfig& c) { c.attack_range_m = 1025.0f; }, false},
      {[](MmoConfig& c) { c.attack_range_m = 1024.0f; }, true},
      {[](MmoConfig& c) { c.attack_cooldown_ms = 3'600'001; }, false},
      {[](MmoConfig& c) { c.attack_cooldown_ms = 0; }, true},
      {[](MmoConfig& c) { c.respawn_ms = 0; }, false},
      {[](MmoConfig& c) { c.respawn_ms = 3'600'001; }, false},
      {[](MmoConfig& c) { c.respawn_ms = 3'600'000; }, true},
      {[](MmoConfig& c) { c.respawn_ms = 1; }, true},
      {[](MmoConfig& c) { c.logout_linger_ms = 600'001; }, false},
      {[](MmoConfig& c) { c.logout_linger_ms = 600'000; }, true},
      {[](MmoConfig& c) { c.logout_linger_ms = 0; }, true},
      {[](MmoConfig& c) { c.loot_range_m = 0.0f; }, false},
      {[](MmoConfig& c) { c.loot_range_m = INFINITY; }, false},
      {[](MmoConfig& c) { c.loot_range_m = 1024.0f; }, true},
      {[](MmoConfig& c) { c.loot_gold_min = 51; }, false},
      {[](MmoConfig& c) { c.loot_gold_min = 50; }, true},
      {[](MmoConfig& c) { c.loot_item_permille = 1001; }, false},
      {[](MmoConfig& c) { c.loot_item_permille = 1000; }, true},
      {[](MmoConfig& c) { c.loot_item_count_max = 0; }, false},
      {[](MmoConfig& c) { c.loot_item_count_max = 65'536; }, false},
      {[](MmoConfig& c) { c.loot_item_count_max = 65'535; }, true},
      {[](MmoConfig& c) { c.trade_timeout_ms = 0; }, false},
      {[](MmoConfig& c) { c.trade_timeout_ms = 3'600'001; }, false},
      {[](MmoConfig& c) { c.trade_timeout_ms = 3'600'000; }, true},
      {[](MmoConfig& c) { c.fault_injection = 2; }, false},
      {[](MmoConfig& c) { c._reserved[3] = 1; }, false},
  };
  for (size_t i = 0; i < cases.size(); ++i) {
    MmoConfig c = small_config();
    c.player_capacity = 16;
    c.raid_object_capacity = 64;
    cases[i].first(c);
    bool baseline_ok = true, rust_ok = true;
    try {
      mmo::make_baseline_engine(c);
    } catch (const std::runtime_error&) {
      baseline_ok = false;
    }
    try {
      mmo::make_rust_engine(c);
    } catch (const std::runtime_error&) {
      rust_ok = false;
    }
    EXPECT_EQ(baseline_ok, cases[i].second) << "case " << i;
    EXPECT_EQ(baseline_ok, rust_ok) << "case " << i;
  }
}

// ---------------------------------------------------------------------------------------------
// Players

TEST(BaselinePlayers, JoinHandsOutWellShapedIdsAndTokens) {
  BaselineEngine e(small_config());
  std::set<uint64_t> ids, tokens;
  for (int i = 0; i < 100; ++i) {
    const Who w = join(e, 10.0f + i, 20.0f, 1);
    EXPECT_NE(w.id, 0u);
    EXPECT_EQ(w.id & kObjectIdTag, 0u);
    EXPECT_NE(w.token, 0u);
    ids.insert(w.id);
    tokens.insert(w.token);
  }
  EXPECT_EQ(ids.size(), 100u);
  EXPECT_EQ(tokens.size(), 100u);
  const Who w = join(e, 100.0f, 40.0f, 3);
  const MmoPlayerView v = view_of(e, w.id);
  EXPECT_EQ(v.x_m, 100.0f);
  EXPECT_EQ(v.y_m, 40.0f);
  EXPECT_EQ(v.cell, 1u * 32 + 3);  // 32 cells per side in a 1024 m world
  EXPECT_EQ(v.hp, 1000);
  EXPECT_EQ(v.faction, 3);
  EXPECT_EQ(v.last_sequence, 0u);
  EXPECT_EQ(e.live_players(), 101u);
  EXPECT_EQ(stats_of(e).joins, 101u);
}

TEST(BaselinePlayers, JoinRefusesOutOfBoundsThenFull) {
  MmoConfig c = small_config();
  c.player_capacity = 2;
  BaselineEngine e(c);
  MmoJoinTicket t{0xDEAD, 0xBEEF, 0, 0.0f, 0.0f, 0};
  for (const auto& [x, y] : std::vector<std::pair<float, float>>{{-0.1f, 5.0f}, {5.0f, 1024.0f}, {NAN, 1.0f}, {1.0f, INFINITY}}) {
    EXPECT_EQ(e.join(x, y, 1, t), MMO_ERR_OUT_OF_BOUNDS);
  }
  EXPECT_EQ(t.player_id, 0xDEADu) << "outputs only on success";
  join(e, 0.0f, 0.0f);
  join(e, 1023.9f, 1023.9f);
  EXPECT_EQ(e.join(5.0f, 5.0f, 1, t), MMO_ERR_SERVER_FULL);
  EXPECT_EQ(e.join(-5.0f, 5.0f, 1, t), MMO_ERR_OUT_OF_BOUNDS) << "bounds are checked before capacity";
  const MmoStats s = stats_of(e);
  EXPECT_EQ(s.joins, 2u);
  EXPECT_EQ(s.joins_refused_bounds, 5u);
  EXPECT_EQ(s.joins_refused_full, 1u);
}

TEST(BaselinePlayers, LeaveRefusalsAndStaleIds) {
  MmoConfig c = small_config();
  c.starting_gold = 70;
  BaselineEngine e(c);
  const Who a = join(e, 50.0f, 50.0f);
  EXPECT_EQ(e.leave(a.id, a.token ^ 1), MMO_ERR_WRONG_SESSION);
  EXPECT_EQ(e.leave(0, a.token), MMO_ERR_UNKNOWN_PLAYER);
  EXPECT_EQ(e.leave(a.id | kObjectIdTag, a.token), MMO_ERR_UNKNOWN_PLAYER);
  EXPECT_EQ(e.leave(a.id, a.token), MMO_OK);
  EXPECT_EQ(e.leave(a.id, a.token), MMO_ERR_UNKNOWN_PLAYER);
  MmoPlayerView v{};
  EXPECT_EQ(e.player_view(a.id, v), MMO_ERR_UNKNOWN_PLAYER);
  EXPECT_EQ(reject_of(e, mv(a, 1, 0, 50.0f, 50.0f), 0), MMO_REJECT_REASON_UNKNOWN_PLAYER);
  const Who b = join(e, 50.0f, 50.0f);
  EXPECT_NE(b.id, a.id) << "an id that left never matches again";
  EXPECT_TRUE(e.grid().cells_containing(a.id).empty());
  const MmoEconomyAudit audit = audit_of(e);
  EXPECT_EQ(audit.departed_gold, 70u);
  EXPECT_EQ(audit.minted_gold, 140u);
  EXPECT_EQ(audit.live_gold, 70u);
  EXPECT_EQ(audit.open_wallets, 1u);
  EXPECT_EQ(audit.conserved, 1);
  const MmoStats s = stats_of(e);
  EXPECT_EQ(s.leaves, 1u);
  EXPECT_EQ(s.leaves_refused, 4u);
  EXPECT_EQ(s.move_rejected_unknown_player, 1u);
}

// ---------------------------------------------------------------------------------------------
// Movement rules (movement.rs tests, through the engine)

MmoConfig rules_config() {
  MmoConfig c = small_config();
  c.max_speed_m_per_s = 10.0f;  // 0.01 m/ms, as movement.rs's RULES
  c.speed_slack_m = 0.5f;
  c.clock_slack_ms = 250;
  return c;
}

// An engine with one player at (100, 100) whose last move was sequence 10 at server 5,000 ms
// and spent its whole 3 m budget (10 m/s * 250 ms + 0.5 m): movement.rs's test state.
struct Moved {
  BaselineEngine e{rules_config()};
  Who who;
  Moved() {
    who = join(e, 97.0f, 100.0f);
    EXPECT_EQ(apply_one(e, mv(who, 10, 1000, 100.0f, 100.0f), 5000).kind, MMO_EVENT_KIND_ACK);
  }
};

TEST(BaselineMoves, SequenceMustBeNewerInSerialArithmetic) {
  {
    Moved m;
    EXPECT_EQ(reject_of(m.e, mv(m.who, 10, 1100, 100.0f, 100.0f), 5100), MMO_REJECT_REASON_STALE_SEQUENCE);
    EXPECT_EQ(reject_of(m.e, mv(m.who, 9, 1100, 100.0f, 100.0f), 5100), MMO_REJECT_REASON_STALE_SEQUENCE);
    EXPECT_EQ(reject_of(m.e, mv(m.who, 11, 1100, 100.0f, 100.0f), 5100), 0);
  }
  {
    // Walk the sequence to u32::MAX - 1 (two hops of 2^31 - 1), then wrap.
    Moved m;
    EXPECT_EQ(reject_of(m.e, mv(m.who, 0x7FFFFFFFu, 1100, 100.0f, 100.0f), 5100), 0);
    EXPECT_EQ(reject_of(m.e, mv(m.who, UINT32_MAX - 1, 1200, 100.0f, 100.0f), 5200), 0);
    EXPECT_EQ(reject_of(m.e, mv(m.who, UINT32_MAX - 5, 1300, 100.0f, 100.0f), 5300), MMO_REJECT_REASON_STALE_SEQUENCE);
    EXPECT_EQ(reject_of(m.e, mv(m.who, 3, 1300, 100.0f, 100.0f), 5300), 0) << "wraps around";
    EXPECT_EQ(view_of(m.e, m.who.id).last_sequence, 3u);
  }
}

TEST(BaselineMoves, TheFirstMayCarryAnySequence) {
  // The front's replay window admits any first sequence; so must the engine.
  for (const uint32_t first : {0u, 1u, 0x7FFFFFFFu, 0x80000000u, 0x80000001u, UINT32_MAX}) {
    BaselineEngine e(rules_config());
    const Who w = join(e, 100.0f, 100.0f);
    EXPECT_EQ(reject_of(e, mv(w, first, 0, 100.0f, 100.0f), 5000), 0) << first;
    EXPECT_EQ(reject_of(e, mv(w, first, 0, 100.0f, 100.0f), 5050), MMO_REJECT_REASON_STALE_SEQUENCE) << first;
    EXPECT_EQ(reject_of(e, mv(w, first + 1, 0, 100.0f, 100.0f), 5050), 0) << first;
  }
}

TEST(BaselineMoves, TheBudgetAccruesWithServerTimeOnly) {
  const auto check = [](uint32_t client_ms, uint64_t now_ms, float x, uint8_t expected) {
    Moved m;
    EXPECT_EQ(reject_of(m.e, mv(m.who, 11, client_ms, x, 100.0f), now_ms), expected) << client_ms << " ms to x=" << x;
  };
  // 100 ms of server time at 10 m/s: 1 m, whatever the client's clock claims.
  for (const uint32_t client_ms : {0u, 1100u, 11000u, UINT32_MAX}) {
    check(client_ms, 5100, 100.99f, 0);
    check(client_ms, 5100, 101.01f, MMO_REJECT_REASON_TOO_FAST);
  }
  // Capped at the 3 m allowance, however long the player stood still.
  check(0, 3'605'000, 102.99f, 0);
  check(0, 3'605'000, 103.01f, MMO_REJECT_REASON_TOO_FAST);
  // An older batch clock accrues nothing.
  check(0, 4000, 100.0f, 0);
  check(0, 4000, 100.01f, MMO_REJECT_REASON_TOO_FAST);
  // What one move leaves is all the next move in the same batch has.
  {
    Moved m;
    EXPECT_EQ(reject_of(m.e, mv(m.who, 11, 0, 100.25f, 100.0f), 5100), 0);
    EXPECT_EQ(reject_of(m.e, mv(m.who, 12, 0, 101.01f, 100.0f), 5100), MMO_REJECT_REASON_TOO_FAST);
    EXPECT_EQ(reject_of(m.e, mv(m.who, 12, 0, 100.99f, 100.0f), 5100), 0);
  }
  // First move: the budget is full (3 m).
  for (const auto& [x, expected] : std::vector<std::pair<float, uint8_t>>{{102.99f, 0}, {103.01f, MMO_REJECT_REASON_TOO_FAST}}) {
    BaselineEngine e(rules_config());
    const Who w = join(e, 100.0f, 100.0f);
    EXPECT_EQ(reject_of(e, mv(w, 1, 0, x, 100.0f), 5000), expected);
  }
}

// The property movement.rs's proptest checks, on a seeded random walk: over every window of
// server time the applied moves cover at most speed * window + allowance, whatever the client
// claims its clock says.
TEST(BaselineMoves, NoSequenceOfMovesBeatsTheSpeedLimit) {
  std::mt19937_64 rng(0x5EED);
  for (int round = 0; round < 64; ++round) {
    MmoConfig c = rules_config();
    c.max_speed_m_per_s = std::uniform_real_distribution<float>(1.0f, 20.0f)(rng);
    c.clock_slack_ms = std::uniform_int_distribution<uint32_t>(0, 500)(rng);
    c.speed_slack_m = std::uniform_real_distribution<float>(0.0f, 1.0f)(rng);
    BaselineEngine e(c);
    const Who w = join(e, 500.0f, 500.0f);
    const double speed_um_per_ms = std::floor(static_cast<double>(c.max_speed_m_per_s) * 1000.0);
    const double allowance_um = speed_um_per_ms * c.clock_slack_ms + std::floor(static_cast<double>(c.speed_slack_m) * 1e6);
    float x = 500.0f, y = 500.0f;
    uint64_t now_ms = 1000;
    std::vector<std::pair<uint64_t, double>> applied;  // (server ms, true length in µm)
    for (uint32_t seq = 1; seq <= 160; ++seq) {
      now_ms += std::uniform_int_distribution<uint64_t>(0, 400)(rng);
      const float step = std::uniform_real_distribution<float>(0.0f, 8.0f)(rng);
      const float angle = std::uniform_real_distribution<float>(0.0f, 6.2831853f)(rng);
      const float nx = x + step * std::cos(angle), ny = y + step * std::sin(angle);
      const auto client_ms = static_cast<uint32_t>(rng());
      if (reject_of(e, mv(w, seq, client_ms, nx, ny), now_ms) != 0) continue;
      const double dx = static_cast<double>(nx) - x, dy = static_cast<double>(ny) - y;
      applied.emplace_back(now_ms, std::sqrt(dx * dx + dy * dy) * 1e6);
      x = nx;
      y = ny;
    }
    ASSERT_FALSE(applied.empty());
    for (size_t a = 0; a <= applied.size(); ++a) {
      const uint64_t start_ms = a == 0 ? applied.front().first : applied[a - 1].first;
      double covered_um = 0;
      for (size_t b = a == 0 ? 0 : a; b < applied.size(); ++b) {
        covered_um += applied[b].second;
        ASSERT_LE(covered_um, speed_um_per_ms * static_cast<double>(applied[b].first - start_ms) + allowance_um)
            << "round " << round << " window " << a << ".." << b;
      }
    }
  }
}

TEST(BaselineMoves, EveryRejectReasonAndItsPrecedence) {
  Moved m;
  BaselineEngine& e = m.e;
  const Who w = m.who;
  Who wrong = w;
  wrong.token ^= 0x5A;
  EXPECT_EQ(reject_of(e, mv(Who{0, w.token}, 11, 1100, 100.0f, 100.0f), 5100), MMO_REJECT_REASON_UNKNOWN_PLAYER);
  EXPECT_EQ(reject_of(e, mv(Who{w.id | kObjectIdTag, w.token}, 11, 1100, 100.0f, 100.0f), 5100), MMO_REJECT_REASON_UNKNOWN_PLAYER);
  // Wrong session beats a stale sequence; a stale sequence beats out of bounds; out of bounds
  // beats too fast.
  EXPECT_EQ(reject_of(e, mv(wrong, 5, 1100, -1.0f, 100.0f), 5100), MMO_REJECT_REASON_WRONG_SESSION);
  EXPECT_EQ(reject_of(e, mv(w, 10, 1100, -1.0f, 100.0f), 5100), MMO_REJECT_REASON_STALE_SEQUENCE);
  EXPECT_EQ(reject_of(e, mv(w, 11, 1100, 2000.0f, 100.0f), 5100), MMO_REJECT_REASON_OUT_OF_BOUNDS);
  for (const float bad : {-0.001f, 1024.0f, NAN, INFINITY, -INFINITY}) {
    EXPECT_EQ(reject_of(e, mv(w, 11, 1100, bad, 100.0f), 5100), MMO_REJECT_REASON_OUT_OF_BOUNDS) << bad;
    EXPECT_EQ(reject_of(e, mv(w, 11, 1100, 100.0f, bad), 5100), MMO_REJECT_REASON_OUT_OF_BOUNDS) << bad;
  }
  MmoMoveRecord nan_facing = mv(w, 11, 1100, 100.0f, 100.0f);
  nan_facing.facing_rad = NAN;
  EXPECT_EQ(reject_of(e, nan_facing, 5100), MMO_REJECT_REASON_OUT_OF_BOUNDS);
  EXPECT_EQ(reject_of(e, mv(w, 11, 1100, 150.0f, 100.0f), 5100), MMO_REJECT_REASON_TOO_FAST);
  // A refused move changes nothing.
  const MmoPlayerView v = view_of(e, w.id);
  EXPECT_EQ(v.last_sequence, 10u);
  EXPECT_EQ(v.x_m, 100.0f);
  const MmoMoveEvent reject = apply_one(e, mv(w, 10, 1100, 100.0f, 100.0f), 5100);
  EXPECT_EQ(reject.player_id, w.id);
  EXPECT_EQ(reject.sequence, 10u);
  EXPECT_EQ(reject.other_id, 0u);
  EXPECT_EQ(reject.distance_m, 0.0f);
  const MmoStats s = stats_of(e);
  EXPECT_EQ(s.move_rejected_unknown_player, 2u);
  EXPECT_EQ(s.move_rejected_wrong_session, 1u);
  EXPECT_EQ(s.move_rejected_stale_sequence, 2u);
  EXPECT_EQ(s.move_rejected_out_of_bounds, 12u);
  EXPECT_EQ(s.move_rejected_too_fast, 1u);
  EXPECT_EQ(s.moves_applied, 1u);
}

TEST(BaselineMoves, AppliedMoveStoresStateAndAcks) {
  Moved m;
  MmoMoveRecord r = mv(m.who, 11, 1100, 100.5f, 100.25f);
  r.facing_rad = 1.5f;
  const MmoMoveEvent ack = apply_one(m.e, r, 5100);
  EXPECT_EQ(ack.kind, MMO_EVENT_KIND_ACK);
  EXPECT_EQ(ack.detail, 0);
  EXPECT_EQ(ack.player_id, m.who.id);
  EXPECT_EQ(ack.sequence, 11u);
  const MmoPlayerView v = view_of(m.e, m.who.id);
  EXPECT_EQ(v.x_m, 100.5f);
  EXPECT_EQ(v.y_m, 100.25f);
  EXPECT_EQ(v.last_sequence, 11u);
}

TEST(BaselineGrid, CellsAndHysteresis) {
  BaselineEngine e(default_config());  // 128 cells per side
  const auto& g = e.grid();
  EXPECT_EQ(g.cell_of(0.0f, 0.0f), 0u);
  EXPECT_EQ(g.cell_of(33.0f, 0.0f), 1u);
  EXPECT_EQ(g.cell_of(0.0f, 33.0f), 128u);
  EXPECT_EQ(g.cell_of(4095.9f, 4095.9f), 128u * 128 - 1);
  const auto home = g.cell_of(31.0f, 10.0f);
  EXPECT_EQ(g.cell_with_hysteresis(home, 33.0f, 10.0f), home);  // 1 m past the edge: stays
  EXPECT_EQ(g.cell_with_hysteresis(home, 35.0f, 10.0f), g.cell_of(35.0f, 10.0f));
  const auto next = g.cell_of(35.0f, 10.0f);
  EXPECT_EQ(g.cell_with_hysteresis(next, 31.0f, 10.0f), next);  // and does not bounce back
}

TEST(BaselineGrid, WalkingAcrossABoundaryCrossesOnceWithHysteresis) {
  BaselineEngine e(small_config());
  const Who w = join(e, 30.0f, 10.0f);
  const uint32_t home = view_of(e, w.id).cell;
  uint32_t seq = 0, t = 0;
  uint64_t now = 1000;
  const auto walk = [&](float x) {
    EXPECT_EQ(apply_one(e, mv(w, ++seq, t += 300, x, 10.0f), now += 300).kind, MMO_EVENT_KIND_ACK);  // 3.6 m + 0.5 m allowed
    return view_of(e, w.id).cell;
  };
  EXPECT_EQ(walk(31.0f), home);
  EXPECT_EQ(walk(33.5f), home);  // inside the 2 m margin
  EXPECT_EQ(walk(34.5f), home + 1);
  EXPECT_EQ(walk(31.0f), home + 1);  // walking back 3.5 m: still within the next cell's margin
  EXPECT_EQ(walk(29.5f), home);
  EXPECT_EQ(stats_of(e).cell_crossings, 2u);
  EXPECT_EQ(e.grid().cells_containing(w.id), std::vector<uint32_t>{home});
}

// ---------------------------------------------------------------------------------------------
// Contacts and AoI

TEST(BaselineContacts, WithinRadiusAcrossCellsAndCapped) {
  MmoConfig c = small_config();
  c.contacts_per_move_max = 3;
  BaselineEngine e(c);
  const Who mover = join(e, 30.0f, 10.0f);
  const Who edge = join(e, 38.0f, 10.0f);   // exactly 8 m once the mover is at 30: in contact
  const Who far = join(e, 38.5f, 10.0f);    // 8.5 m: not
  const Who near = join(e, 33.0f, 12.0f);   // in the next cell
  auto events = apply(e, {mv(mover, 1, 100, 30.0f, 10.0f)}, 1000);
  ASSERT_EQ(events.size(), 3u);
  EXPECT_EQ(events[0].kind, MMO_EVENT_KIND_ACK);
  std::map<uint64_t, float> got;
  for (size_t i = 1; i < events.size(); ++i) {
    EXPECT_EQ(events[i].kind, MMO_EVENT_KIND_CONTACT);
    EXPECT_EQ(events[i].detail, MMO_ENTITY_KIND_PLAYER);
    EXPECT_EQ(events[i].player_id, mover.id);
    EXPECT_EQ(events[i].sequence, 1u);
    got[events[i].other_id] = events[i].distance_m;
  }
  EXPECT_EQ(got.count(far.id), 0u);
  EXPECT_EQ(got.at(edge.id), 8.0f);
  EXPECT_EQ(got.at(near.id), std::sqrt(13.0f));
  // Two more in range: four candidates, three kept, one truncated.
  join(e, 31.0f, 10.0f);
  join(e, 29.0f, 10.0f);
  events = apply(e, {mv(mover, 2, 200, 30.0f, 10.0f)}, 1100);
  EXPECT_EQ(events.size(), 4u);
  const MmoStats s = stats_of(e);
  EXPECT_EQ(s.contacts_reported, 5u);
  EXPECT_EQ(s.contacts_truncated, 1u);
}

TEST(BaselineAoi, NearestFirstCappedAndExcludingTheViewer) {
  MmoConfig c = small_config();
  c.aoi_k = 5;
  BaselineEngine e(c);
  std::vector<Who> row;
  for (int i = 0; i < 20; ++i) row.push_back(join(e, 100.0f + static_cast<float>(i), 100.0f));
  const Who viewer = join(e, 109.25f, 100.0f);
  std::array<MmoAoiEntry, 64> out{};
  size_t n = 0;
  EXPECT_EQ(e.area_of_interest(viewer.id, out, n), MMO_ERR_NOT_IN_SNAPSHOT) << "no tick yet";
  tick(e, 0);
  ASSERT_EQ(e.area_of_interest(viewer.id, out, n), MMO_OK);
  ASSERT_EQ(n, 5u);  // aoi_k caps a larger buffer
  const std::vector<float> want = {0.25f, 0.75f, 1.25f, 1.75f, 2.25f};
  const std::vector<uint64_t> ids = {row[9].id, row[10].id, row[8].id, row[11].id, row[7].id};
  for (size_t i = 0; i < n; ++i) {
    EXPECT_EQ(out[i].distance_m, want[i]);
    EXPECT_EQ(out[i].entity_id, ids[i]);
    EXPECT_EQ(out[i].kind, MMO_ENTITY_KIND_PLAYER);
    EXPECT_EQ(out[i].y_m, 100.0f);
  }
  std::array<MmoAoiEntry, 2> two{};
  ASSERT_EQ(e.area_of_interest(viewer.id, two, n), MMO_OK);
  EXPECT_EQ(n, 2u);  // and a smaller buffer caps aoi_k
  ASSERT_EQ(e.area_of_interest(viewer.id, std::span<MmoAoiEntry>{}, n), MMO_OK);
  EXPECT_EQ(n, 0u);
  size_t untouched = 77;
  EXPECT_EQ(e.area_of_interest(viewer.id ^ 0x100, out, untouched), MMO_ERR_UNKNOWN_PLAYER);
  EXPECT_EQ(untouched, 77u);
  EXPECT_EQ(stats_of(e).aoi_queries, 3u);
  EXPECT_EQ(stats_of(e).aoi_not_in_snapshot, 2u);  // before the tick, and the unknown player
}

// ---------------------------------------------------------------------------------------------
// Raid bursts

TEST(BaselineRaid, SpawnsInsideTheSquareAndExpiresOnTime) {
  BaselineEngine e(small_config());
  tick(e, 0);
  MmoRaidReport report{};
  ASSERT_EQ(e.raid_spawn(raid(500.0f, 500.0f, 11000, 120), report), MMO_OK);
  EXPECT_EQ(report.spawned, 11000u);
  EXPECT_EQ(report.cells, 9u);  // 460..540 m: cells 14..16 on each axis
  EXPECT_EQ(report.expires_tick, 1u + 3 + 1);  // 120 ms at 50 ms ticks: 3 whole ticks after the current one
  EXPECT_EQ(e.live_raid_objects(), 11000u);
  EXPECT_EQ(e.grid().census().objects, 11000u);
  const Who p = join(e, 500.0f, 500.0f, 1);
  EXPECT_EQ(tick(e, 50).snapshot_entities, 11001u) << "the next tick's snapshot holds them";
  std::array<MmoAoiEntry, 64> aoi{};
  size_t n = 0;
  ASSERT_EQ(e.area_of_interest(p.id, aoi, n), MMO_OK);
  ASSERT_EQ(n, 32u);
  for (size_t i = 0; i < n; ++i) {
    EXPECT_EQ(aoi[i].kind, MMO_ENTITY_KIND_ADD);
    EXPECT_NE(aoi[i].entity_id & kObjectIdTag, 0u);
    EXPECT_TRUE(aoi[i].x_m >= 460.0f && aoi[i].x_m <= 540.0f && aoi[i].y_m >= 460.0f && aoi[i].y_m <= 540.0f);
    EXPECT_EQ(e.raid_object_hp(aoi[i].entity_id), 50);
  }
  for (const uint64_t now_ms : {100, 150}) EXPECT_EQ(tick(e, now_ms).objects_expired, 0u) << "alive for at least 120 ms";
  const MmoTickInfo info = tick(e, 200);
  EXPECT_EQ(info.tick, 5u);
  EXPECT_EQ(info.objects_expired, 11000u);
  EXPECT_EQ(info.objects_live, 0u);
  EXPECT_EQ(info.bursts_live, 0u);
  EXPECT_EQ(info.players_live, 1u);
  EXPECT_EQ(info.now_ms, 200u);
  EXPECT_EQ(e.grid().census().objects, 0u);
  EXPECT_EQ(e.grid().census().players, 1u);
  EXPECT_EQ(e.raid_object_hp(aoi[0].entity_id), std::nullopt) << "expired ids miss";
  const MmoStats s = stats_of(e);
  EXPECT_EQ(s.raid_bursts, 1u);
  EXPECT_EQ(s.raid_objects_spawned, 11000u);
  EXPECT_EQ(s.raid_objects_despawned, 11000u);
  EXPECT_EQ(s.ticks, 5u);
}

TEST(BaselineRaid, WholeOrNothingAndInvalidRequests) {
  BaselineEngine e(small_config());  // 16,384 objects, 16 bursts
  MmoRaidReport report{};
  ASSERT_EQ(e.raid_spawn(raid(300.0f, 300.0f, 16000, 1000), report), MMO_OK);
  MmoRaidReport untouched{1, 2, 3, 4};
  EXPECT_EQ(e.raid_spawn(raid(300.0f, 300.0f, 385, 1000), untouched), MMO_ERR_CAPACITY);
  EXPECT_EQ(untouched.spawned, 1u);
  EXPECT_EQ(e.live_raid_objects(), 16000u) << "a refused burst leaves nothing behind";
  ASSERT_EQ(e.raid_spawn(raid(300.0f, 300.0f, 384, 1000), report), MMO_OK);
  EXPECT_EQ(e.grid().census().objects, 16384u);

  BaselineEngine b(small_config());
  for (int i = 0; i < 16; ++i) ASSERT_EQ(b.raid_spawn(raid(300.0f, 300.0f, 1, 1000), report), MMO_OK);
  EXPECT_EQ(b.raid_spawn(raid(300.0f, 300.0f, 1, 1000), report), MMO_ERR_CAPACITY) << "burst slots are capped too";
  EXPECT_EQ(b.live_raid_objects(), 16u);

  const auto with = [](auto mutate) {
    MmoRaidSpawnRequest r = raid(300.0f, 300.0f, 10, 100);
    mutate(r);
    return r;
  };
  const std::vector<std::pair<MmoRaidSpawnRequest, MmoStatus>> bad = {
      {with([](auto& r) { r.kind = MMO_ENTITY_KIND_PLAYER; }), MMO_ERR_BAD_ENUM},
      {with([](auto& r) { r.kind = 99; }), MMO_ERR_BAD_ENUM},
      {with([](auto& r) { r.kind = 0, r.count = 0; }), MMO_ERR_BAD_ENUM},  // kind is checked first
      {with([](auto& r) { r.count = 0; }), MMO_ERR_INVALID_ARGUMENT},
      {with([](auto& r) { r.count = 65537; }), MMO_ERR_INVALID_ARGUMENT},
      {with([](auto& r) { r.lifetime_ms = 0; }), MMO_ERR_INVALID_ARGUMENT},
      {with([](auto& r) { r.hp = 0; }), MMO_ERR_INVALID_ARGUMENT},
      {with([](auto& r) { r.hp = -3, r.center_x_m = -1.0f; }), MMO_ERR_INVALID_ARGUMENT},
      {with([](auto& r) { r.center_x_m = -1.0f; }), MMO_ERR_OUT_OF_BOUNDS},
      {with([](auto& r) { r.center_y_m = NAN; }), MMO_ERR_OUT_OF_BOUNDS},
      {with([](auto& r) { r.center_y_m = 1024.0f; }), MMO_ERR_OUT_OF_BOUNDS},
      {with([](auto& r) { r.half_extent_m = INFINITY; }), MMO_ERR_OUT_OF_BOUNDS},
      {with([](auto& r) { r.half_extent_m = -0.5f; }), MMO_ERR_OUT_OF_BOUNDS},
  };
  BaselineEngine c(small_config());
  for (size_t i = 0; i < bad.size(); ++i) EXPECT_EQ(c.raid_spawn(bad[i].first, report), bad[i].second) << "case " << i;
  EXPECT_EQ(stats_of(c).raid_refused_invalid, bad.size());
  EXPECT_EQ(stats_of(e).raid_refused_capacity, 1u);
  EXPECT_EQ(stats_of(b).raid_refused_capacity, 1u);
}

TEST(BaselineRaid, ExpiryTickArithmetic) {
  MmoConfig c = small_config();
  c.tick_ms = 50;
  BaselineEngine e(c);
  MmoRaidReport r{};
  const auto expires = [&](uint32_t lifetime_ms) {
    EXPECT_EQ(e.raid_spawn(raid(300.0f, 300.0f, 1, lifetime_ms), r), MMO_OK);
    return r.expires_tick;
  };
  EXPECT_EQ(expires(1), 0u + 1 + 1);  // at least one tick
  EXPECT_EQ(expires(50), 0u + 1 + 1);
  EXPECT_EQ(expires(51), 0u + 2 + 1);
  for (int i = 0; i < 7; ++i) tick(e, 50u * (i + 1));
  EXPECT_EQ(expires(100), 7u + 2 + 1);
  EXPECT_EQ(expires(UINT32_MAX), 7u + (UINT32_MAX / 50 + 1) + 1);
}

// ---------------------------------------------------------------------------------------------
// Damage

TEST(BaselineDamage, OutcomesRefusalsAndFriendlyFire) {
  MmoConfig c = small_config();
  c.player_hp = 30;
  BaselineEngine e(c);
  const Who a = join(e, 10.0f, 10.0f, 1);
  const Who b = join(e, 12.0f, 10.0f, 2);
  const Who ally = join(e, 14.0f, 10.0f, 1);
  MmoDamageResult r{};
  EXPECT_EQ(e.damage(a.id, a.token, b.id, 12, r), MMO_OK);
  EXPECT_EQ(r.outcome, 1);
  EXPECT_EQ(r.hp_left, 18);
  EXPECT_EQ(e.damage(a.id, a.token, b.id, 100, r), MMO_OK);
  EXPECT_EQ(r.outcome, 2);
  EXPECT_EQ(r.hp_left, 0);
  EXPECT_EQ(e.damage(a.id, a.token, b.id, 1, r), MMO_OK);
  EXPECT_EQ(r.outcome, 3);
  EXPECT_EQ(view_of(e, b.id).hp, 0);
  MmoDamageResult untouched{7, 7, {}};
  EXPECT_EQ(e.damage(a.id, a.token, ally.id, 5, untouched), MMO_ERR_FRIENDLY_FIRE);
  EXPECT_EQ(e.damage(a.id, a.token, a.id, 5, untouched), MMO_ERR_FRIENDLY_FIRE);
  EXPECT_EQ(e.damage(a.id, a.token, 999'999, 5, untouched), MMO_ERR_UNKNOWN_TARGET);
  EXPECT_EQ(e.damage(a.id, a.token, kObjectIdTag | 5, 5, untouched), MMO_ERR_UNKNOWN_TARGET);
  EXPECT_EQ(e.damage(a.id, a.token, 999'999, 0, untouched), MMO_ERR_INVALID_ARGUMENT) << "the amount before the target";
  EXPECT_EQ(e.damage(a.id, a.token ^ 1, b.id, -1, untouched), MMO_ERR_WRONG_SESSION) << "the session before the amount";
  EXPECT_EQ(e.damage(999'999, a.token, b.id, 5, untouched), MMO_ERR_UNKNOWN_PLAYER);
  EXPECT_EQ(untouched.hp_left, 7);
  // Raid objects: hits, kills, and the object's faction.
  MmoRaidReport report{};
  MmoRaidSpawnRequest req = raid(10.0f, 10.0f, 1, 10'000);
  req.half_extent_m = 1.0f;  // within the area of interest's radius
  req.hp = 10;
  req.faction = 1;
  ASSERT_EQ(e.raid_spawn(req, report), MMO_OK);
  req.faction = 5;
  req.center_x_m = 20.0f;
  ASSERT_EQ(e.raid_spawn(req, report), MMO_OK);
  tick(e, 0);
  std::array<MmoAoiEntry, 8> aoi{};
  size_t n = 0;
  ASSERT_EQ(e.area_of_interest(a.id, aoi, n), MMO_OK);
  std::vector<uint64_t> objects;
  for (size_t i = 0; i < n; ++i) {
    if (aoi[i].kind == MMO_ENTITY_KIND_ADD) objects.push_back(aoi[i].entity_id);
  }
  ASSERT_EQ(objects.size(), 2u);
  for (const uint64_t id : objects) {
    const MmoStatus s = e.damage(a.id, a.token, id, 4, r);
    if (s == MMO_ERR_FRIENDLY_FIRE) continue;
    ASSERT_EQ(s, MMO_OK);
    EXPECT_EQ(r.outcome, 1);
    EXPECT_EQ(r.hp_left, 6);
    EXPECT_EQ(e.damage(a.id, a.token, id, 6, r), MMO_OK);
    EXPECT_EQ(r.outcome, 2);
    EXPECT_EQ(e.raid_object_hp(id), 0);
  }
  const MmoStats s = stats_of(e);
  EXPECT_EQ(s.damage_applied, 4u);
  EXPECT_EQ(s.kills, 2u);
  EXPECT_EQ(s.damage_rejected, 1u + 7u + 1u);  // already dead, seven refusals, the friendly object
}

// ---------------------------------------------------------------------------------------------
// Loot

TEST(BaselineLoot, RollsTheSameContentsAsTheCore) {
  // loot.rs a_known_roll_matches_the_baseline_vector rolls the same key (TEST_KEY: bytes
  // 0x00..0x0F) and id.
  MmoConfig keyed = default_config();
  for (uint8_t i = 0; i < 16; ++i) keyed.loot_key[i] = i;
  const LootContents loot = roll_loot(keyed, 0x800000000000002AULL);
  EXPECT_EQ(loot.gold, 7u);
  EXPECT_EQ(loot.item_kind, 7u);
  EXPECT_EQ(loot.item_count, 3u);
  // And every roll stays inside the table.
  for (uint64_t id = 1; id < 2000; ++id) {
    const LootContents l = roll_loot(keyed, id | kObjectIdTag);
    ASSERT_GE(l.gold, 5u);
    ASSERT_LE(l.gold, 50u);
    ASSERT_LE(l.item_count, 3u);
    ASSERT_LT(l.item_kind, kItemKinds);
  }
}

TEST(BaselineLoot, RacingClaimsOfOneDropCreditOnce) {
  MmoConfig c = small_config();
  c.starting_gold = 1000;
  for (uint8_t i = 0; i < 16; ++i) c.loot_key[i] = static_cast<uint8_t>(i + 1);  // a key of our own: rolls this test can predict
  for (int round = 0; round < 20; ++round) {
    BaselineEngine e(c);
    MmoRaidSpawnRequest req = raid(300.0f, 300.0f, 1, 60'000);
    req.half_extent_m = 0.0f;
    req.hp = 100;
    MmoRaidReport report{};
    ASSERT_EQ(e.raid_spawn(req, report), MMO_OK);
    const Who killer = join(e, 298.0f, 300.0f);
    tick(e, 50);
    std::array<MmoAoiEntry, 4> aoi{};
    size_t n = 0;
    ASSERT_EQ(e.area_of_interest(killer.id, aoi, n), MMO_OK);
    ASSERT_EQ(n, 1u);
    const uint64_t add = aoi[0].entity_id;
    MmoAttackResult hit{};
    ASSERT_EQ(e.attack(killer.id, killer.token, add, 1000, hit), MMO_OK);
    ASSERT_EQ(hit.killed, 1);
    const LootContents expected = roll_loot(c, add);
    std::atomic<int> credited{0};
    std::vector<std::thread> claimers;
    for (int t = 0; t < 4; ++t) {
      claimers.emplace_back([&] {
        MmoLootResult r{};
        EXPECT_EQ(e.claim_loot(killer.id, killer.token, add, r), MMO_OK);
        EXPECT_EQ(r.refusal, 0);
        EXPECT_EQ(r.gold, expected.gold);
        if (r.repeat == 0) credited.fetch_add(1);
      });
    }
    for (std::thread& t : claimers) t.join();
    EXPECT_EQ(credited.load(), 1);
    EXPECT_EQ(view_of(e, killer.id).gold, 1000 + expected.gold);
    const MmoEconomyAudit a = audit_of(e);
    EXPECT_EQ(a.conserved, 1);
    EXPECT_EQ(a.loot_minted_gold, expected.gold);
    EXPECT_EQ(a.loot_minted_items, expected.item_count);
  }
}

// ---------------------------------------------------------------------------------------------
// Trades

TEST(BaselineTrades, RacingAcceptsOfOneOfferMoveItOnceAndSpendsNeverTouchTheEscrow) {
  MmoConfig c = small_config();
  c.starting_gold = 1000;
  for (int round = 0; round < 20; ++round) {
    BaselineEngine e(c);
    const Who a = join(e, 10.0f, 10.0f, 1), b = join(e, 20.0f, 10.0f, 2);
    MmoTradeOffer o{};
    o.player_id = a.id, o.session_token = a.token, o.transaction_id = 1, o.counterparty_id = b.id;
    o.give.gold = 800;
    o.want.gold = 10;
    MmoEconomyResult r{};
    ASSERT_EQ(e.trade_offer(o, 0, r), MMO_OK);
    ASSERT_EQ(r.status, MMO_ECONOMY_STATUS_APPLIED);
    std::atomic<int> accepted{0}, spent{0};
    std::vector<std::thread> threads;
    for (uint64_t t = 0; t < 4; ++t) {
      threads.emplace_back([&, t] {
        MmoTradeAnswer ans{};
        ans.player_id = b.id, ans.session_token = b.token, ans.transaction_id = 1 + t, ans.maker_id = a.id, ans.offer_id = 1, ans.accept = 1;
        MmoEconomyResult out{};
        EXPECT_EQ(e.trade_answer(ans, 10, out), MMO_OK);
        if (out.status == MMO_ECONOMY_STATUS_APPLIED) accepted.fetch_add(1);
      });
    }
    threads.emplace_back([&] {
      // 200 gold outside the escrow (plus 10 once accepted): spends of 50 never reach the 800.
      for (uint64_t t = 2; t < 7; ++t) {
        if (run_op(e, op(a, t, MMO_ECONOMY_KIND_SPEND, 0, 50)).status == MMO_ECONOMY_STATUS_APPLIED) spent.fetch_add(1);
      }
    });
    for (std::thread& t : threads) t.join();
    EXPECT_EQ(accepted.load(), 1);
    EXPECT_GE(spent.load(), 4);
    EXPECT_EQ(view_of(e, b.id).gold, 1000u - 10u + 800u);
    EXPECT_EQ(view_of(e, a.id).gold, 200u + 10u - 50u * static_cast<uint64_t>(spent.load()));
    EXPECT_EQ(audit_of(e).conserved, 1);
    EXPECT_EQ(audit_of(e).open_offers, 0u);
  }
}

// ---------------------------------------------------------------------------------------------
// Economy

TEST(BaselineEconomy, StatusesInValidationOrder) {
  MmoConfig c = small_config();
  c.starting_gold = 100;
  BaselineEngine e(c);
  const Who a = join(e, 10.0f, 10.0f);
  const Who b = join(e, 12.0f, 10.0f);
  const Who gone = join(e, 14.0f, 10.0f);
  ASSERT_EQ(e.leave(gone.id, gone.token), MMO_OK);
  uint64_t txn = 0;
  const auto status = [&](uint8_t kind, uint64_t to, int64_t gold, uint16_t item = 0, int32_t count = 0) {
    return run_op(e, op(a, ++txn, kind, to, gold, item, count)).status;
  };
  constexpr uint8_t T = MMO_ECONOMY_KIND_TRANSFER, TR = MMO_ECONOMY_KIND_TRADE, L = MMO_ECONOMY_KIND_LOOT_PICKUP,
                    S = MMO_ECONOMY_KIND_SPEND;
  EXPECT_EQ(status(0, b.id, 5), MMO_ECONOMY_STATUS_BAD_KIND);
  EXPECT_EQ(status(9, b.id, -5), MMO_ECONOMY_STATUS_BAD_KIND) << "the kind before the amount";
  EXPECT_EQ(status(T, b.id, -5), MMO_ECONOMY_STATUS_INVALID_AMOUNT);
  EXPECT_EQ(status(T, b.id, 5, 0, -1), MMO_ECONOMY_STATUS_INVALID_AMOUNT);
  EXPECT_EQ(status(T, b.id, (int64_t{1} << 48) + 1), MMO_ECONOMY_STATUS_OVERFLOW);
  EXPECT_EQ(status(T, b.id, int64_t{1} << 48), MMO_ECONOMY_STATUS_INSUFFICIENT_FUNDS);
  EXPECT_EQ(status(T, b.id, 5, 16, 1), MMO_ECONOMY_STATUS_UNKNOWN_ITEM);
  EXPECT_EQ(status(T, b.id, 5, 16, 0), MMO_ECONOMY_STATUS_APPLIED) << "no items: the kind does not matter";
  EXPECT_EQ(status(T, b.id, 0), MMO_ECONOMY_STATUS_INVALID_AMOUNT);
  EXPECT_EQ(status(TR, b.id, 5), MMO_ECONOMY_STATUS_KIND_RETIRED) << "a trade without the other side's consent";
  EXPECT_EQ(status(TR, b.id, -5, 1, 1), MMO_ECONOMY_STATUS_KIND_RETIRED) << "retired before the amounts are read";
  EXPECT_EQ(status(T, 0, 5), MMO_ECONOMY_STATUS_UNKNOWN_PLAYER);
  EXPECT_EQ(status(T, gone.id, 5), MMO_ECONOMY_STATUS_UNKNOWN_PLAYER);
  EXPECT_EQ(status(T, a.id, 5), MMO_ECONOMY_STATUS_SELF_TRADE);
  EXPECT_EQ(status(T, a.id, 0), MMO_ECONOMY_STATUS_INVALID_AMOUNT) << "amounts before the counterparty";
  EXPECT_EQ(status(T, b.id, 96), MMO_ECONOMY_STATUS_INSUFFICIENT_FUNDS);
  EXPECT_EQ(status(T, b.id, 1, 2, 1), MMO_ECONOMY_STATUS_INSUFFICIENT_ITEMS);
  EXPECT_EQ(status(TR, b.id, 1, 2, 1), MMO_ECONOMY_STATUS_KIND_RETIRED);
  EXPECT_EQ(status(L, 12345, 10), MMO_ECONOMY_STATUS_KIND_RETIRED) << "a client names no loot";
  EXPECT_EQ(grant(e, a, 1, 0, 2, 3).status, MMO_ECONOMY_STATUS_APPLIED);
  EXPECT_EQ(grant(e, a, 2, 10).status, MMO_ECONOMY_STATUS_APPLIED);
  EXPECT_EQ(status(S, b.id, 1, 2, 4), MMO_ECONOMY_STATUS_INSUFFICIENT_ITEMS);
  EXPECT_EQ(status(S, 0, 200), MMO_ECONOMY_STATUS_INSUFFICIENT_FUNDS);
  EXPECT_EQ(status(S, 0, 5, 2, 1), MMO_ECONOMY_STATUS_APPLIED);
  EXPECT_EQ(status(T, b.id, 10, 2, 2), MMO_ECONOMY_STATUS_APPLIED);
  // b now holds 2 of item 2: a offers 20 gold for them and b accepts.
  MmoTradeOffer offer{a.id, a.token, ++txn, b.id, {20, 0, 0, 0}, {0, 2, 2, 0}};
  MmoEconomyResult traded{};
  ASSERT_EQ(e.trade_offer(offer, 0, traded), MMO_OK);
  EXPECT_EQ(traded.status, MMO_ECONOMY_STATUS_APPLIED);
  ASSERT_EQ(e.trade_answer(MmoTradeAnswer{b.id, b.token, 1, a.id, offer.transaction_id, 1, {}}, 0, traded), MMO_OK);
  EXPECT_EQ(traded.status, MMO_ECONOMY_STATUS_APPLIED);
  // Grants up to a large balance.
  for (uint64_t id = 3; id < 6; ++id) EXPECT_EQ(grant(e, a, id, int64_t{1} << 48).status, MMO_ECONOMY_STATUS_APPLIED);
  const MmoPlayerView va = view_of(e, a.id), vb = view_of(e, b.id);
  EXPECT_EQ(va.gold, 100u - 5 + 10 - 5 - 10 - 20 + 3 * (uint64_t{1} << 48));
  EXPECT_EQ(va.items[2], 3u - 1 - 2 + 2);
  EXPECT_EQ(vb.gold, 100u + 5 + 10 + 20);
  EXPECT_EQ(vb.items[2], 0u);
  // Session and player checks come first and are not recorded.
  MmoEconomyOp wrong = op(a, ++txn, S, 0, 1);
  wrong.session_token ^= 1;
  EXPECT_EQ(run_op(e, wrong).status, MMO_ECONOMY_STATUS_WRONG_SESSION);
  EXPECT_EQ(run_op(e, op(gone, ++txn, S, 0, 1)).status, MMO_ECONOMY_STATUS_UNKNOWN_PLAYER);
  EXPECT_EQ(run_op(e, op(a, 0, S, 0, 1)).status, MMO_ECONOMY_STATUS_INVALID_TRANSACTION);
  const MmoEconomyAudit audit = audit_of(e);
  EXPECT_EQ(audit.conserved, 1);
  EXPECT_EQ(audit.open_wallets, 2u);
  EXPECT_EQ(audit.sunk_gold, 5u);
  EXPECT_EQ(audit.departed_gold, 100u);
  const MmoStats s = stats_of(e);
  EXPECT_EQ(s.economy_applied, 5u);
  EXPECT_EQ(s.economy_kind_retired, 4u);
  EXPECT_EQ(s.grants, 5u);
  EXPECT_EQ(s.economy_bad_kind, 2u);
  EXPECT_EQ(s.economy_invalid_amount, 4u);
  EXPECT_EQ(s.economy_overflow, 1u);
  EXPECT_EQ(s.economy_unknown_item, 1u);
  EXPECT_EQ(s.economy_unknown_player, 3u);
  EXPECT_EQ(s.economy_self_trade, 1u);
  EXPECT_EQ(s.economy_insufficient_funds, 3u);
  EXPECT_EQ(s.economy_insufficient_items, 2u);
  EXPECT_EQ(s.economy_wrong_session, 1u);
  EXPECT_EQ(s.economy_invalid_transaction, 1u);
}

TEST(BaselineEconomy, BalanceOverflowIsRefused) {
  MmoConfig c = small_config();
  c.starting_gold = uint64_t{1} << 48;
  BaselineEngine e(c);
  const Who a = join(e, 10.0f, 10.0f);
  const Who b = join(e, 10.0f, 10.0f);
  // Grants of 2^48 at a time until one more would overflow: b then holds 65,535 * 2^48.
  uint64_t id = 0;
  for (uint32_t i = 0; i < 65'534; ++i) ASSERT_EQ(grant(e, b, ++id, int64_t{1} << 48).status, 0);
  EXPECT_EQ(view_of(e, b.id).gold, UINT64_MAX - (uint64_t{1} << 48) + 1);
  EXPECT_EQ(grant(e, b, ++id, int64_t{1} << 48).status, MMO_ECONOMY_STATUS_OVERFLOW);
  EXPECT_EQ(run_op(e, op(a, 1, MMO_ECONOMY_KIND_TRANSFER, b.id, int64_t{1} << 48)).status, MMO_ECONOMY_STATUS_OVERFLOW);
  const MmoEconomyAudit audit = audit_of(e);
  EXPECT_EQ(audit.conserved, 1);
  EXPECT_EQ(audit.minted_gold, UINT64_MAX) << "saturates";
}

TEST(BaselineEconomy, RetransmitsAreAnsweredFromTheWindowAndOldIdsRefused) {
  MmoConfig c = small_config();
  c.starting_gold = 1000;
  BaselineEngine e(c);
  const Who a = join(e, 10.0f, 10.0f);
  const Who b = join(e, 12.0f, 10.0f);
  const MmoEconomyOp pay = op(a, 1, MMO_ECONOMY_KIND_TRANSFER, b.id, 10);
  const MmoEconomyResult first = run_op(e, pay);
  EXPECT_EQ(first.status, MMO_ECONOMY_STATUS_APPLIED);
  EXPECT_EQ(first.duplicate, 0);
  EXPECT_EQ(first.gold_balance, 990u);
  EXPECT_EQ(first.transaction_id, 1u);
  EXPECT_EQ(first.player_id, a.id);
  for (int i = 0; i < 3; ++i) {
    const MmoEconomyResult again = run_op(e, pay);
    EXPECT_EQ(again.status, MMO_ECONOMY_STATUS_APPLIED);
    EXPECT_EQ(again.duplicate, 1);
    EXPECT_EQ(again.gold_balance, 990u);
  }
  // A refusal is remembered too (with gold 0), even after the balance would allow it.
  const MmoEconomyOp too_much = op(a, 2, MMO_ECONOMY_KIND_SPEND, 0, 5000);
  EXPECT_EQ(run_op(e, too_much).status, MMO_ECONOMY_STATUS_INSUFFICIENT_FUNDS);
  ASSERT_EQ(grant(e, a, 1, 10'000).status, MMO_ECONOMY_STATUS_APPLIED);
  const MmoEconomyResult again = run_op(e, too_much);
  EXPECT_EQ(again.status, MMO_ECONOMY_STATUS_INSUFFICIENT_FUNDS);
  EXPECT_EQ(again.duplicate, 1);
  EXPECT_EQ(again.gold_balance, 0u);
  // Jump to 40: ids at or below 8 are too old; 9..=40 are remembered or new.
  ASSERT_EQ(run_op(e, op(a, 40, MMO_ECONOMY_KIND_SPEND, 0, 1)).status, MMO_ECONOMY_STATUS_APPLIED);
  EXPECT_EQ(run_op(e, pay).status, MMO_ECONOMY_STATUS_TRANSACTION_TOO_OLD);
  EXPECT_EQ(run_op(e, op(a, 8, MMO_ECONOMY_KIND_SPEND, 0, 1)).status, MMO_ECONOMY_STATUS_TRANSACTION_TOO_OLD);
  const MmoEconomyResult nine = run_op(e, op(a, 9, MMO_ECONOMY_KIND_SPEND, 0, 1));
  EXPECT_EQ(nine.status, MMO_ECONOMY_STATUS_APPLIED) << "inside the window, never seen: applied now";
  EXPECT_EQ(nine.duplicate, 0);
  EXPECT_EQ(run_op(e, op(a, 9, MMO_ECONOMY_KIND_SPEND, 0, 1)).duplicate, 1);
  // Another player's transaction ids are their own.
  EXPECT_EQ(run_op(e, op(b, 1, MMO_ECONOMY_KIND_SPEND, 0, 1)).duplicate, 0);
  const MmoStats s = stats_of(e);
  EXPECT_EQ(s.economy_duplicates, 5u);
  EXPECT_EQ(s.economy_too_old, 2u);
  EXPECT_EQ(s.economy_applied, 4u);
  EXPECT_EQ(audit_of(e).conserved, 1);
}

TEST(BaselineBatches, TooSmallAndOverlappingBuffersApplyNothing) {
  BaselineEngine e(small_config());
  const Who a = join(e, 10.0f, 10.0f);
  const std::vector<MmoMoveRecord> two = {mv(a, 1, 100, 10.0f, 10.0f), mv(a, 2, 200, 10.0f, 10.0f)};
  EXPECT_EQ(e.move_events_required(2), 18u);
  EXPECT_EQ(e.move_events_required(SIZE_MAX), SIZE_MAX);
  std::vector<MmoMoveEvent> events(17);
  size_t written = 99;
  EXPECT_EQ(e.apply_moves(two, 0, events, written), MMO_ERR_BUFFER_TOO_SMALL);
  EXPECT_EQ(written, 99u);
  EXPECT_EQ(view_of(e, a.id).last_sequence, 0u);
  // Input and output sharing bytes.
  std::vector<MmoMoveEvent> raw(64);
  const std::span<const MmoMoveRecord> alias(reinterpret_cast<const MmoMoveRecord*>(raw.data()), 2);
  EXPECT_EQ(e.apply_moves(alias, 0, std::span<MmoMoveEvent>(raw).subspan(2), written), MMO_ERR_INVALID_ARGUMENT);
  MmoEconomyResult result{};
  const MmoEconomyOp o = op(a, 1, MMO_ECONOMY_KIND_SPEND, 0, 1);
  const std::array<MmoEconomyOp, 2> ops = {o, o};
  EXPECT_EQ(e.apply_economy(ops, {&result, 1}, written), MMO_ERR_BUFFER_TOO_SMALL);
  EXPECT_EQ(written, 99u);
  EXPECT_EQ(e.apply_moves({}, 0, {}, written), MMO_OK);
  EXPECT_EQ(written, 0u);
  const MmoStats s = stats_of(e);
  EXPECT_EQ(s.move_batches_refused, 1u);
  EXPECT_EQ(s.economy_batches_refused, 1u);
  EXPECT_EQ(s.move_batches, 1u);
  EXPECT_EQ(s.economy_applied, 0u);
}

// ---------------------------------------------------------------------------------------------
// Differential: the same operations against the Rust core and the baseline, compared result by
// result. Ids differ between the engines; the test maps each engine's ids to one another.

// xorshift64*, as the Rust stress test's generator.
struct Rng {
  uint64_t s;
  uint64_t next() {
    s ^= s >> 12;
    s ^= s << 25;
    s ^= s >> 27;
    return s * 0x2545F4914F6CDD1DULL;
  }
  uint64_t below(uint64_t n) { return next() % n; }
  float unit() { return static_cast<float>(next() >> 40) / 16777216.0f; }
  bool chance(unsigned percent) { return below(100) < percent; }
};

uint32_t bits(float f) {
  uint32_t b = 0;
  std::memcpy(&b, &f, sizeof b);
  return b;
}

class Differential {
 public:
  explicit Differential(const MmoConfig& config) : rust_(mmo::make_rust_engine(config)), base_(mmo::make_baseline_engine(config)), config_(config) {}

  // A joined (or once-joined) player, in both engines.
  struct Player {
    MmoJoinTicket r{}, b{};
    bool live = true;
    uint32_t seq = 0;
    uint32_t client_ms = 0;
    float x = 0, y = 0;
    uint64_t next_txn = 1;
    uint64_t next_grant = 0;
    float hx = 0.5f, hy = 0.3f;  // heading, metres per metre of step
  };

  void run(uint64_t seed, int steps) {
    Rng rng{seed * 0x9E3779B97F4A7C15ULL + 1};
    for (step_ = 0; step_ < steps && !::testing::Test::HasFatalFailure(); ++step_) {
      const uint64_t roll = rng.below(100);
      if (roll < 8 || players_.size() < 4) {
        join(rng);
      } else if (roll < 11) {
        leave(rng);
      } else if (roll < 50) {
        moves(rng);
      } else if (roll < 55) {
        spawn(rng);
      } else if (roll < 62) {
        ticks(rng);
      } else if (roll < 66) {
        damage(rng);
      } else if (roll < 70) {
        attack(rng);
      } else if (roll < 72) {
        claim(rng);
      } else if (roll < 74) {
        skirmish(rng);
      } else if (roll < 80) {
        economy(rng);
      } else if (roll < 85) {
        trade(rng);
      } else if (roll < 95) {
        aoi(rng);
      } else {
        views();
      }
    }
    compare_stats();
    compare_audit();
  }

  size_t objects_mapped() const { return object_r_to_b_.size(); }
  size_t capped_moves() const { return capped_moves_; }

 private:
  std::string where() const { return "step " + std::to_string(step_); }

  void join(Rng& rng) {
    float x = 300.0f + rng.unit() * 200.0f, y = 300.0f + rng.unit() * 200.0f;
    if (rng.chance(5)) x = rng.chance(50) ? -1.0f : config_.world_size_m;
    const auto faction = static_cast<uint8_t>(rng.below(3));
    Player p;
    const MmoStatus sr = rust_->join(x, y, faction, p.r), sb = base_->join(x, y, faction, p.b);
    ASSERT_EQ(sr, sb) << where();
    if (sr != MMO_OK) return;
    ASSERT_NE(p.b.player_id, 0u);
    ASSERT_EQ(p.b.player_id & kObjectIdTag, 0u);
    p.x = x;
    p.y = y;
    player_b_to_r_[p.b.player_id] = p.r.player_id;
    players_.push_back(p);
  }

  Player& any_player(Rng& rng) { return players_[rng.below(players_.size())]; }

  void leave(Rng& rng) {
    Player& p = any_player(rng);
    const bool wrong = rng.chance(20);
    const MmoStatus sr = rust_->leave(p.r.player_id, p.r.session_token ^ (wrong ? 1 : 0));
    const MmoStatus sb = base_->leave(p.b.player_id, p.b.session_token ^ (wrong ? 1 : 0));
    ASSERT_EQ(sr, sb) << where();
    if (sr == MMO_OK) p.live = false;
  }

  void moves(Rng& rng) {
    std::vector<MmoMoveRecord> r_batch, b_batch;
    const size_t n = 1 + rng.below(8);
    now_ms_ += 60 + rng.below(80);
    for (size_t i = 0; i < n; ++i) {
      Player& p = any_player(rng);
      // Mostly a legal step along the player's heading (so players cross cells); sometimes a
      // stale sequence, a jump, a bad clock, NaN, a wrong token.
      uint32_t seq = p.seq + 1;
      if (rng.chance(5)) seq = p.seq - static_cast<uint32_t>(rng.below(3));
      if (rng.chance(2)) seq = p.seq + 0x80000000u;
      uint32_t client_ms = p.client_ms + 90 + static_cast<uint32_t>(rng.below(80));
      if (rng.chance(5)) client_ms = p.client_ms - 100;
      if (rng.chance(10)) p.hx = rng.unit() - 0.5f, p.hy = rng.unit() - 0.5f;
      if (p.x < 150.0f || p.x > 850.0f) p.hx = p.x < 150.0f ? 0.6f : -0.6f;
      if (p.y < 150.0f || p.y > 850.0f) p.hy = p.y < 150.0f ? 0.6f : -0.6f;
      const float step = rng.chance(8) ? 6.0f : 1.6f;
      float x = p.x + p.hx * step + (rng.unit() - 0.5f) * 0.2f, y = p.y + p.hy * step + (rng.unit() - 0.5f) * 0.2f;
      if (rng.chance(3)) x = rng.chance(50) ? -0.5f : NAN;
      MmoMoveRecord m{};
      m.sequence = seq;
      m.client_time_ms = client_ms;
      m.x_m = x;
      m.y_m = y;
      m.facing_rad = rng.chance(2) ? INFINITY : rng.unit();
      for (size_t k = 0; k < sizeof m.payload; ++k) m.payload[k] = static_cast<uint8_t>(rng.next());
      MmoMoveRecord mr = m, mb = m;
      mr.player_id = p.r.player_id;
      mr.session_token = p.r.session_token;
      mb.player_id = p.b.player_id;
      mb.session_token = p.b.session_token;
      if (rng.chance(3)) mr.session_token ^= 2, mb.session_token ^= 2;
      // The front passes back the join ticket's slot hint; sometimes a wrong one (another
      // slot, none, or past every slot), which must not change the Rust core's answer. The
      // baseline ignores the field.
      mr.slot_hint = rng.chance(10) ? static_cast<uint32_t>(rng.below(8)) : p.r.slot_hint;
      mb.slot_hint = mr.slot_hint;
      r_batch.push_back(mr);
      b_batch.push_back(mb);
      // What the test believes the player's state is, if the move is applied (checked below).
      pending_.push_back({&p, seq, client_ms, x, y});
    }
    std::vector<MmoMoveEvent> er(rust_->move_events_required(n)), eb(base_->move_events_required(n));
    ASSERT_EQ(er.size(), eb.size());
    size_t wr = 0, wb = 0;
    ASSERT_EQ(rust_->apply_moves(r_batch, now_ms_, er, wr), MMO_OK);
    ASSERT_EQ(base_->apply_moves(b_batch, now_ms_, eb, wb), MMO_OK);
    ASSERT_EQ(wr, wb) << where();
    size_t ia = 0, ib = 0;
    for (size_t k = 0; k < n; ++k) {
      ASSERT_LT(ia, wr);
      ASSERT_LT(ib, wb);
      const MmoMoveEvent& a = er[ia++];
      const MmoMoveEvent& b = eb[ib++];
      ASSERT_EQ(a.kind, b.kind) << where() << " move " << k;
      ASSERT_EQ(a.detail, b.detail) << where() << " move " << k;
      ASSERT_EQ(a.sequence, b.sequence);
      ASSERT_EQ(a.player_id, r_batch[k].player_id);
      ASSERT_EQ(b.player_id, b_batch[k].player_id);
      ASSERT_EQ(b.other_id, 0u);
      ASSERT_EQ(bits(b.distance_m), 0u);
      if (a.kind == MMO_EVENT_KIND_ACK) {
        auto& [p, seq, client_ms, x, y] = pending_[k];
        p->seq = seq;
        p->client_ms = client_ms;
        p->x = x;
        p->y = y;
      }
      std::vector<std::string> cr, cb;
      while (ia < wr && er[ia].kind == MMO_EVENT_KIND_CONTACT) cr.push_back(contact_key(er[ia++], true));
      while (ib < wb && eb[ib].kind == MMO_EVENT_KIND_CONTACT) {
        ASSERT_EQ(eb[ib].player_id, b_batch[k].player_id);
        ASSERT_EQ(eb[ib].sequence, b_batch[k].sequence);
        cb.push_back(contact_key(eb[ib++], false));
      }
      ASSERT_EQ(cr.size(), cb.size()) << where() << " contacts of move " << k;
      if (cr.size() < config_.contacts_per_move_max) {  // not capped: the same set
        std::sort(cr.begin(), cr.end());
        std::sort(cb.begin(), cb.end());
        ASSERT_EQ(cr, cb) << where() << " contacts of move " << k;
      } else {
        ++capped_moves_;
      }
    }
    ASSERT_EQ(ia, wr);
    ASSERT_EQ(ib, wb);
    pending_.clear();
  }

  // A contact as comparable text: players by the Rust id, objects by kind and distance.
  std::string contact_key(const MmoMoveEvent& ev, bool rust) const {
    std::ostringstream s;
    if (ev.detail == MMO_ENTITY_KIND_PLAYER) {
      s << "P" << (rust ? ev.other_id : player_b_to_r_.at(ev.other_id));
    } else {
      s << "O" << int{ev.detail};
    }
    s << "@" << bits(ev.distance_m);
    return s.str();
  }

  void spawn(Rng& rng) {
    MmoRaidSpawnRequest r{};
    r.center_x_m = 250.0f + rng.unit() * 300.0f;
    r.center_y_m = 250.0f + rng.unit() * 300.0f;
    if (rng.chance(10)) r.center_x_m = rng.unit() * config_.world_size_m;  // maybe by the edge
    if (rng.chance(5)) r.center_y_m = std::nextafter(config_.world_size_m, 0.0f);
    r.half_extent_m = rng.chance(10) ? 0.0f : rng.unit() * 90.0f;
    r.count = 1 + static_cast<uint32_t>(rng.below(rng.chance(20) ? 4000 : 300));
    r.lifetime_ms = 1 + static_cast<uint32_t>(rng.below(400));
    r.hp = 1 + static_cast<int32_t>(rng.below(30));
    r.seed = static_cast<uint32_t>(rng.next());
    r.kind = static_cast<uint8_t>(2 + rng.below(3));
    r.faction = static_cast<uint8_t>(rng.below(3));
    if (rng.chance(5)) r.kind = static_cast<uint8_t>(rng.below(6));
    if (rng.chance(3)) r.hp = 0;
    if (rng.chance(3)) r.half_extent_m = -1.0f;
    MmoRaidReport a{}, b{};
    const MmoStatus sr = rust_->raid_spawn(r, a), sb = base_->raid_spawn(r, b);
    ASSERT_EQ(sr, sb) << where();
    ASSERT_EQ(a.spawned, b.spawned);
    ASSERT_EQ(a.cells, b.cells) << where();
    ASSERT_EQ(a.expires_tick, b.expires_tick) << where();
  }

  void ticks(Rng& rng) {
    const int n = 1 + static_cast<int>(rng.below(4));
    for (int i = 0; i < n; ++i) {
      now_ms_ += 50;
      MmoTickInfo a{}, b{};
      ASSERT_EQ(rust_->tick(now_ms_, a), MMO_OK);
      ASSERT_EQ(base_->tick(now_ms_, b), MMO_OK);
      ASSERT_EQ(std::memcmp(&a, &b, sizeof a), 0) << where() << ": tick " << a.tick << "/" << b.tick << " expired " << a.objects_expired
                                                  << "/" << b.objects_expired << " live " << a.objects_live << "/" << b.objects_live;
    }
  }

  // Any attacker (a wrong token sometimes) at any target (objects, players, ghosts) at the
  // current clock or a little later: both engines must agree on every field.
  void attack(Rng& rng) { attack_as(any_player(rng), rng); }

  void attack_as(Player& attacker, Rng& rng) {
    // Mostly the nearest other player (so attacks land, and meet cooldowns and deaths), else
    // any target.
    const Player* nearest = nullptr;
    float best = INFINITY;
    for (const Player& p : players_) {
      const float d = std::hypot(p.x - attacker.x, p.y - attacker.y);
      if (&p != &attacker && p.live && d < best) best = d, nearest = &p;
    }
    auto [tr, tb] = nearest != nullptr && rng.chance(70) ? std::pair{nearest->r.player_id, nearest->b.player_id} : any_target(rng);
    // Often an add the attacker's last area of interest showed within reach (kills drop loot).
    if (const auto reach = within_reach_.find(static_cast<size_t>(&attacker - players_.data())); reach != within_reach_.end() && rng.chance(50)) {
      std::tie(tr, tb) = reach->second;
    }
    const bool wrong = rng.chance(5);
    const uint64_t now_ms = now_ms_ + rng.below(600);
    // Sometimes twice at once: the second meets the cooldown (or the kill).
    for (int repeat = rng.chance(30) ? 2 : 1; repeat > 0; --repeat) {
      MmoAttackResult a{}, b{};
      ASSERT_EQ(rust_->attack(attacker.r.player_id, attacker.r.session_token ^ wrong, tr, now_ms, a), MMO_OK) << where();
      ASSERT_EQ(base_->attack(attacker.b.player_id, attacker.b.session_token ^ wrong, tb, now_ms, b), MMO_OK) << where();
      ASSERT_EQ(std::memcmp(&a, &b, sizeof a), 0) << where() << ": refusal " << int{a.refusal} << "/" << int{b.refusal};
      if (a.killed != 0 && a.target_kind == MMO_ENTITY_KIND_ADD) drops_.push_back(Drop{&attacker - players_.data(), tr, tb});
    }
  }

  // A claim: mostly of a drop by its killer (sometimes by another player, or with a wrong
  // token, or twice), else of any target. The loot table has one outcome (gold only), so the
  // engines' different object ids roll the same contents and every field must agree.
  void claim(Rng& rng) {
    size_t claimer_index = static_cast<size_t>(rng.below(players_.size()));
    auto [tr, tb] = any_target(rng);
    if (!drops_.empty() && rng.chance(75)) {
      const Drop& d = drops_[rng.below(drops_.size())];
      tr = d.r, tb = d.b;
      if (!rng.chance(20)) claimer_index = static_cast<size_t>(d.killer);
    }
    const Player& claimer = players_[claimer_index];
    const bool wrong = rng.chance(5);
    for (int repeat = rng.chance(30) ? 2 : 1; repeat > 0; --repeat) {
      MmoLootResult a{}, b{};
      ASSERT_EQ(rust_->claim_loot(claimer.r.player_id, claimer.r.session_token ^ wrong, tr, a), MMO_OK) << where();
      ASSERT_EQ(base_->claim_loot(claimer.b.player_id, claimer.b.session_token ^ wrong, tb, b), MMO_OK) << where();
      ASSERT_EQ(std::memcmp(&a, &b, sizeof a), 0) << where() << ": refusal " << int{a.refusal} << "/" << int{b.refusal};
    }
  }

  // A target as (Rust id, baseline id): a raid object both engines spawned, a player, or an id
  // neither ever handed out.
  std::pair<uint64_t, uint64_t> any_target(Rng& rng) {
    const uint64_t pick = rng.below(10);
    if (pick < 5 && !object_r_to_b_.empty()) {
      auto it = object_r_to_b_.begin();
      std::advance(it, static_cast<long>(rng.below(object_r_to_b_.size())));
      return {it->first, it->second};
    }
    if (pick < 9) {
      const Player& t = any_player(rng);
      return {t.r.player_id, t.b.player_id};
    }
    const uint64_t ghost = rng.chance(50) ? 0x00ffffffffffff01ULL : 0x80ffffffffffff01ULL;
    return {ghost, ghost};
  }

  void damage(Rng& rng) {
    Player& attacker = any_player(rng);
    const auto [tr, tb] = any_target(rng);
    const int32_t amount = rng.chance(5) ? -static_cast<int32_t>(rng.below(3)) : static_cast<int32_t>(1 + rng.below(400));
    const bool wrong = rng.chance(5);
    MmoDamageResult a{}, b{};
    const MmoStatus sr = rust_->damage(attacker.r.player_id, attacker.r.session_token ^ wrong, tr, amount, a);
    const MmoStatus sb = base_->damage(attacker.b.player_id, attacker.b.session_token ^ wrong, tb, amount, b);
    ASSERT_EQ(sr, sb) << where();
    ASSERT_EQ(std::memcmp(&a, &b, sizeof a), 0) << where();
  }

  // A random trade step from any player: an offer to another (any sides, sometimes bad
  // amounts, a ghost or itself), an answer to a recent offer (its taker or anyone, accept or
  // decline, the maker cancelling), or an admin grant; sometimes a retransmit. Both engines
  // must agree on every field of every result (the clock advances, so offers time out too).
  void trade(Rng& rng) {
    trade_step(rng, rng.below(10));
    // Half the time the latest offer is answered at once (before the clock lets it time out).
    if (!offers_.empty() && rng.chance(50) && !::testing::Test::HasFatalFailure()) trade_step(rng, 5, offers_.size() - 1);
  }

  void trade_step(Rng& rng, uint64_t kind, size_t offer_index = SIZE_MAX) {
    Player& p = any_player(rng);
    const auto side = [&] {
      MmoTradeStack s{};
      s.gold = rng.chance(40) ? 0 : static_cast<int64_t>(rng.below(300));
      s.item_count = rng.chance(50) ? 0 : static_cast<int32_t>(rng.below(4));
      s.item_kind = static_cast<uint16_t>(rng.below(rng.chance(3) ? 20 : 4));
      if (rng.chance(2)) s.gold = -3;
      return s;
    };
    MmoEconomyResult a{}, b{};
    if (kind < 4) {
      const Player& taker = rng.chance(5) ? p : any_player(rng);
      MmoTradeOffer o{};
      o.transaction_id = rng.chance(5) && p.next_txn > 1 ? p.next_txn - 1 : p.next_txn++;
      o.give = side();
      o.want = side();
      MmoTradeOffer r = o, bo = o;
      r.player_id = p.r.player_id, r.session_token = p.r.session_token, r.counterparty_id = taker.r.player_id;
      bo.player_id = p.b.player_id, bo.session_token = p.b.session_token, bo.counterparty_id = taker.b.player_id;
      if (rng.chance(4)) r.counterparty_id = bo.counterparty_id = 0x00ffffffffffff01ULL;
      ASSERT_EQ(rust_->trade_offer(r, now_ms_, a), MMO_OK);
      ASSERT_EQ(base_->trade_offer(bo, now_ms_, b), MMO_OK);
      if (a.status == MMO_ECONOMY_STATUS_APPLIED && a.duplicate == 0) {
        offers_.push_back(OfferRef{&p - players_.data(), &taker - players_.data(), o.transaction_id});
      }
    } else if (kind < 8 && !offers_.empty()) {
      const OfferRef& ref = offers_[offer_index < offers_.size() ? offer_index : rng.below(offers_.size())];
      const Player& maker = players_[static_cast<size_t>(ref.maker)];
      const uint64_t pick = rng.below(10);
      Player& who = pick < 6 ? players_[static_cast<size_t>(ref.taker)] : pick < 8 ? players_[static_cast<size_t>(ref.maker)] : any_player(rng);
      MmoTradeAnswer ans{};
      ans.transaction_id = who.next_txn++;
      ans.offer_id = rng.chance(5) ? ref.offer_id + 1 : ref.offer_id;
      ans.accept = rng.chance(70) ? 1 : 0;
      MmoTradeAnswer r = ans, ba = ans;
      r.player_id = who.r.player_id, r.session_token = who.r.session_token, r.maker_id = maker.r.player_id;
      ba.player_id = who.b.player_id, ba.session_token = who.b.session_token, ba.maker_id = maker.b.player_id;
      ASSERT_EQ(rust_->trade_answer(r, now_ms_, a), MMO_OK);
      ASSERT_EQ(base_->trade_answer(ba, now_ms_, b), MMO_OK);
    } else {
      const uint64_t grant_id = rng.chance(10) ? p.next_grant : ++p.next_grant;
      const MmoTradeStack s = side();
      ASSERT_EQ(rust_->grant(p.r.player_id, grant_id, s, a), MMO_OK);
      ASSERT_EQ(base_->grant(p.b.player_id, grant_id, s, b), MMO_OK);
      a.player_id = b.player_id = 0;  // the ids differ between engines; everything else must not
    }
    if (kind < 8) a.player_id = b.player_id = 0;
    ASSERT_EQ(std::memcmp(&a, &b, sizeof a), 0) << where() << ": trade step " << kind << " status " << int{a.status} << "/" << int{b.status};
  }

  void economy(Rng& rng) {
    const size_t n = 1 + rng.below(6);
    std::vector<MmoEconomyOp> r_ops, b_ops;
    // Ops whose id jumps to the step limit, and whose player's counter follows only if the
    // engines took the id.
    std::vector<std::pair<size_t, Player*>> far_jumps;
    for (size_t i = 0; i < n; ++i) {
      Player& p = any_player(rng);
      MmoEconomyOp o{};
      o.transaction_id = p.next_txn;
      const uint64_t t = rng.below(20);
      if (t == 0) {
        o.transaction_id = 0;
      } else if (t < 4 && p.next_txn > 1) {
        o.transaction_id = p.next_txn - 1 - rng.below(std::min<uint64_t>(p.next_txn - 1, 40));  // a retransmit, maybe too old
      } else if (t == 4) {
        o.transaction_id = p.next_txn += rng.below(50);
        ++p.next_txn;
      } else if (t == 5 && rng.chance(25)) {
        // The highest decided id is at most next_txn - 1, so this is at, or just past, the
        // farthest a new id may jump from it (refused past it, recorded nowhere).
        o.transaction_id = p.next_txn - 1 + uint64_t{MMO_TRANSACTION_STEP_MAX} + rng.below(3);
        far_jumps.emplace_back(i, &p);
      } else {
        ++p.next_txn;
      }
      o.kind = static_cast<uint8_t>(rng.chance(4) ? rng.below(7) : 1 + rng.below(4));
      o.gold = static_cast<int64_t>(rng.below(80));
      if (rng.chance(30)) o.gold = 0;
      if (rng.chance(3)) o.gold = -1;
      if (rng.chance(3)) o.gold = (int64_t{1} << 48) + static_cast<int64_t>(rng.below(2));
      o.item_count = static_cast<int32_t>(rng.below(4));
      if (rng.chance(2)) o.item_count = -2;
      o.item_kind = static_cast<uint16_t>(rng.below(18));
      MmoEconomyOp r = o, b = o;
      r.player_id = p.r.player_id;
      r.session_token = p.r.session_token;
      b.player_id = p.b.player_id;
      b.session_token = p.b.session_token;
      if (rng.chance(3)) r.session_token ^= 4, b.session_token ^= 4;
      const uint64_t c = rng.below(10);
      if (c < 6) {
        const Player& other = any_player(rng);
        r.counterparty_id = other.r.player_id;
        b.counterparty_id = other.b.player_id;
      } else if (c < 7) {
        r.counterparty_id = p.r.player_id;
        b.counterparty_id = p.b.player_id;
      } else if (c < 8) {
        r.counterparty_id = b.counterparty_id = 0x00ffffffffffff01ULL;
      }  // else 0
      r_ops.push_back(r);
      b_ops.push_back(b);
    }
    std::vector<MmoEconomyResult> rr(n), rb(n);
    size_t wr = 0, wb = 0;
    ASSERT_EQ(rust_->apply_economy(r_ops, rr, wr), MMO_OK);
    ASSERT_EQ(base_->apply_economy(b_ops, rb, wb), MMO_OK);
    ASSERT_EQ(wr, wb);
    for (size_t i = 0; i < n; ++i) {
      ASSERT_EQ(rr[i].status, rb[i].status) << where() << " op " << i << " kind " << int{r_ops[i].kind} << " txn " << r_ops[i].transaction_id;
      ASSERT_EQ(rr[i].duplicate, rb[i].duplicate) << where() << " op " << i;
      ASSERT_EQ(rr[i].gold_balance, rb[i].gold_balance) << where() << " op " << i;
      ASSERT_EQ(rr[i].transaction_id, rb[i].transaction_id);
      ASSERT_EQ(rb[i].player_id, b_ops[i].player_id);
    }
    for (const auto& [i, p] : far_jumps) {
      if (rr[i].status != MMO_ECONOMY_STATUS_INVALID_TRANSACTION) p->next_txn = std::max(p->next_txn, r_ops[i].transaction_id + 1);
    }
    compare_audit();
  }

  void aoi(Rng& rng) { aoi_of(any_player(rng), rng.below(70)); }

  // A skirmish: a few adds spawned around a live player, seen by them after a tick, fought
  // (after the cooldown) and their loot claimed: the path from a kill to a claim, every step
  // compared.
  void skirmish(Rng& rng) {
    Player& p = any_player(rng);
    if (!p.live) return;
    MmoRaidSpawnRequest r{};
    r.center_x_m = p.x;
    r.center_y_m = p.y;
    r.half_extent_m = 1.0f + rng.unit() * 3.0f;
    r.count = 1 + static_cast<uint32_t>(rng.below(3));
    r.lifetime_ms = 2000;
    r.hp = 1 + static_cast<int32_t>(rng.below(config_.attack_damage * 2));
    r.seed = static_cast<uint32_t>(rng.next());
    r.kind = MMO_ENTITY_KIND_ADD;
    r.faction = 9;
    MmoRaidReport a{}, b{};
    const MmoStatus sr = rust_->raid_spawn(r, a), sb = base_->raid_spawn(r, b);
    ASSERT_EQ(sr, sb) << where();
    if (sr != MMO_OK) return;
    now_ms_ += 600;  // past the cooldown
    MmoTickInfo ta{}, tb{};
    ASSERT_EQ(rust_->tick(now_ms_, ta), MMO_OK);
    ASSERT_EQ(base_->tick(now_ms_, tb), MMO_OK);
    aoi_of(p, 64);
    for (int swing = 0; swing < 4 && !::testing::Test::HasFatalFailure(); ++swing) {
      now_ms_ += 1200;  // past any cooldown the last swing left
      attack_as(p, rng);
    }
    for (int grab = 0; grab < 2 && !::testing::Test::HasFatalFailure(); ++grab) claim(rng);
  }

  void aoi_of(const Player& p, size_t capacity) {
    std::vector<MmoAoiEntry> a(capacity), b(capacity);
    size_t na = 0, nb = 0;
    const MmoStatus sr = rust_->area_of_interest(p.r.player_id, a, na), sb = base_->area_of_interest(p.b.player_id, b, nb);
    ASSERT_EQ(sr, sb) << where();
    if (sr != MMO_OK) return;
    ASSERT_EQ(na, nb) << where();
    if (na == 0) return;
    // Distances match in order; entries strictly nearer than the last distance match as sets
    // (order among equal distances, and which equal-distance ones make the cut, is unspecified).
    for (size_t i = 0; i < na; ++i) ASSERT_EQ(bits(a[i].distance_m), bits(b[i].distance_m)) << where() << " entry " << i;
    const float last = a[na - 1].distance_m;
    std::map<std::tuple<uint32_t, uint32_t, uint32_t, uint8_t>, uint64_t> ka, kb;
    for (size_t i = 0; i < na; ++i) {
      if (a[i].distance_m == last) continue;
      ka[{bits(a[i].distance_m), bits(a[i].x_m), bits(a[i].y_m), a[i].kind}] = a[i].entity_id;
      kb[{bits(b[i].distance_m), bits(b[i].x_m), bits(b[i].y_m), b[i].kind}] = b[i].entity_id;
    }
    ASSERT_EQ(ka.size(), kb.size());
    for (const auto& [key, rid] : ka) {
      const auto it = kb.find(key);
      ASSERT_NE(it, kb.end()) << where() << ": an AoI entry only the Rust core has";
      const uint64_t bid = it->second;
      if (std::get<3>(key) == MMO_ENTITY_KIND_PLAYER) {
        ASSERT_EQ(player_b_to_r_.at(bid), rid);
      } else {
        ASSERT_NE(bid & kObjectIdTag, 0u);
        const auto [pos, fresh] = object_r_to_b_.emplace(rid, bid);
        ASSERT_EQ(pos->second, bid) << where() << ": one object, two ids";
        if (std::get<3>(key) == MMO_ENTITY_KIND_ADD && std::bit_cast<float>(std::get<0>(key)) < 5.5f) {
          within_reach_[static_cast<size_t>(&p - players_.data())] = {rid, bid};
        }
      }
    }
  }

  void views() {
    for (const Player& p : players_) {
      MmoPlayerView a{}, b{};
      const MmoStatus sr = rust_->player_view(p.r.player_id, a), sb = base_->player_view(p.b.player_id, b);
      ASSERT_EQ(sr, sb) << where();
      ASSERT_EQ(std::memcmp(&a, &b, sizeof a), 0) << where() << ": cells " << a.cell << "/" << b.cell << " gold " << a.gold << "/" << b.gold;
      if (sr == MMO_OK) {
        ASSERT_EQ(a.x_m, p.x);
        ASSERT_EQ(a.last_sequence, p.seq);
      }
    }
  }

  void compare_stats() {
    const MmoStats a = stats_of(*rust_), b = stats_of(*base_);
    // What the run covered (the counters are equal, so either engine's).
    std::cout << "  moves " << a.moves_applied << " applied, " << (a.move_rejected_unknown_player + a.move_rejected_wrong_session +
                                                                 a.move_rejected_stale_sequence + a.move_rejected_too_fast +
                                                                 a.move_rejected_out_of_bounds)
              << " rejected (too fast " << a.move_rejected_too_fast << "), crossings " << a.cell_crossings << ", contacts "
              << a.contacts_reported << " (+" << a.contacts_truncated << " truncated); raids " << a.raid_bursts << " ("
              << a.raid_objects_despawned << " objects expired); damage " << a.damage_applied << "/" << a.kills << " kills/"
              << a.damage_rejected << " refused; attacks " << a.attacks_landed << " landed, "
              << a.attack_rejected_cooldown << " cooldown, " << a.attack_rejected_out_of_range << " out of range; loot " << a.loot_dropped
              << " dropped, " << a.loot_claimed << " claimed, " << a.loot_rejected_out_of_range << " out of range; trades " << a.trade_offers
              << " offered, " << a.trades_accepted << " accepted, " << a.trades_declined << " declined, " << a.trades_expired
              << " expired, " << a.grants << " grants; economy " << a.economy_applied << " applied, " << a.economy_duplicates << " dups, "
              << a.economy_too_old << " too old, " << a.economy_insufficient_funds << " no funds; aoi " << a.aoi_queries << "\n";
    const auto* pa = reinterpret_cast<const uint64_t*>(&a);
    const auto* pb = reinterpret_cast<const uint64_t*>(&b);
    // aoi_wide_looks counts the Rust core's second looks after a per-player hint fell short;
    // the baseline has no hint (it always reports 0), and the answers are compared above.
    const size_t wide_looks = offsetof(MmoStats, aoi_wide_looks) / sizeof(uint64_t);
    for (size_t i = 0; i < sizeof a / sizeof(uint64_t); ++i) {
      if (i != wide_looks) {
        EXPECT_EQ(pa[i], pb[i]) << "MmoStats field " << i;
      }
    }
  }

  void compare_audit() {
    const MmoEconomyAudit a = audit_of(*rust_), b = audit_of(*base_);
    ASSERT_EQ(std::memcmp(&a, &b, sizeof a), 0) << where();
    ASSERT_EQ(b.conserved, 1);
  }

  struct Pending {
    Player* p;
    uint32_t seq;
    uint32_t client_ms;
    float x, y;
  };

  std::unique_ptr<mmo::Engine> rust_, base_;
  MmoConfig config_;
  std::vector<Player> players_;
  std::vector<Pending> pending_;
  std::unordered_map<uint64_t, uint64_t> player_b_to_r_;
  std::map<uint64_t, uint64_t> object_r_to_b_;
  // Adds an attack killed (their loot), as (killer's index, Rust id, baseline id).
  struct Drop {
    ptrdiff_t killer;
    uint64_t r, b;
  };
  std::vector<Drop> drops_;
  // Offers both engines opened, as (maker's index, taker's index, offer id).
  struct OfferRef {
    ptrdiff_t maker, taker;
    uint64_t offer_id;
  };
  std::vector<OfferRef> offers_;
  // Per player index: the last add its area of interest showed within attack range.
  std::unordered_map<size_t, std::pair<uint64_t, uint64_t>> within_reach_;
  uint64_t now_ms_ = 1000;
  int step_ = 0;
  size_t capped_moves_ = 0;
};

TEST(BaselineDifferential, RandomScenariosMatchTheRustCore) {
  for (uint64_t seed = 1; seed <= 12 && !HasFatalFailure(); ++seed) {
    MmoConfig c = small_config();
    c.starting_gold = seed * 37;
    c.contacts_per_move_max = static_cast<uint32_t>(seed % 4 == 0 ? 2 : 8);
    c.aoi_k = static_cast<uint32_t>(8 + seed * 4);
    c.raid_object_capacity = 6000;
    c.raid_burst_capacity = 12;
    c.player_capacity = 48;
    c.tick_ms = static_cast<uint32_t>(20 + seed * 5);
    c.loot_gold_min = c.loot_gold_max = static_cast<uint32_t>(seed * 11);  // one outcome: see claim()
    c.loot_item_permille = 0;
    c.trade_timeout_ms = static_cast<uint32_t>(2000 + seed * 1000);  // some offers time out within a run
    if (seed % 3 == 0) c.cell_hysteresis_m = 0.0f, c.cell_size_m = 20.0f;
    Differential d(c);
    SCOPED_TRACE("seed " + std::to_string(seed));
    d.run(seed, 2500);
    EXPECT_GT(d.objects_mapped(), 0u);
    if (c.contacts_per_move_max == 2) {
      EXPECT_GT(d.capped_moves(), 0u);
    }
  }
}

// Raid positions bit for bit: bursts of every shape (edges, corners, zero extents, huge and
// tiny cells), then every object seen by probe players placed over the square.
TEST(BaselineDifferential, RaidSpawnPositionsAreBitIdentical) {
  Rng rng{0xC0FFEE};
  for (int round = 0; round < 40 && !HasFatalFailure(); ++round) {
    MmoConfig c = small_config();
    c.world_size_m = round % 5 == 0 ? 777.7f : 1024.0f;
    c.cell_size_m = round % 4 == 0 ? 9.5f : 32.0f;
    c.contact_radius_m = 6.0f;
    c.aoi_k = 64;
    c.raid_object_capacity = 70'000;
    c.player_capacity = 2048;
    const auto rust = mmo::make_rust_engine(c);
    const auto base = mmo::make_baseline_engine(c);
    MmoRaidSpawnRequest r{};
    const float w = c.world_size_m;
    const int shape = round % 6;
    r.center_x_m = shape == 0 ? 0.0f : shape == 1 ? std::nextafter(w, 0.0f) : rng.unit() * w;
    r.center_y_m = shape == 2 ? std::nextafter(w, 0.0f) : rng.unit() * w;
    r.half_extent_m = shape == 3 ? 0.0f : shape == 4 ? 2000.0f : rng.unit() * 60.0f;
    r.count = shape == 4 ? 65'536 : 1 + static_cast<uint32_t>(rng.below(3000));
    r.lifetime_ms = 1000;
    r.hp = 5;
    r.seed = static_cast<uint32_t>(rng.next());
    r.kind = MMO_ENTITY_KIND_LOOT;
    MmoRaidReport a{}, b{};
    ASSERT_EQ(rust->raid_spawn(r, a), MMO_OK);
    ASSERT_EQ(base->raid_spawn(r, b), MMO_OK);
    ASSERT_EQ(std::memcmp(&a, &b, sizeof a), 0) << "round " << round;
    // Probes over the square: every AoI answer matches entry for entry.
    const float h = std::max(r.half_extent_m, 1.0f);
    for (int probe = 0; probe < 12; ++probe) {
      const float px = std::clamp(r.center_x_m + (rng.unit() - 0.5f) * 2.0f * h, 0.0f, std::nextafter(w, 0.0f));
      const float py = std::clamp(r.center_y_m + (rng.unit() - 0.5f) * 2.0f * h, 0.0f, std::nextafter(w, 0.0f));
      MmoJoinTicket tr{}, tb{};
      ASSERT_EQ(rust->join(px, py, 1, tr), MMO_OK);
      ASSERT_EQ(base->join(px, py, 1, tb), MMO_OK);
      MmoTickInfo ia{}, ib{};
      ASSERT_EQ(rust->tick(static_cast<uint64_t>(probe) * 50, ia), MMO_OK);
      ASSERT_EQ(base->tick(static_cast<uint64_t>(probe) * 50, ib), MMO_OK);
      ASSERT_EQ(ia.snapshot_entities, ib.snapshot_entities);
      std::array<MmoAoiEntry, 64> ea{}, eb{};
      size_t na = 0, nb = 0;
      ASSERT_EQ(rust->area_of_interest(tr.player_id, ea, na), MMO_OK);
      ASSERT_EQ(base->area_of_interest(tb.player_id, eb, nb), MMO_OK);
      ASSERT_EQ(na, nb);
      const auto key = [](const MmoAoiEntry& e) { return std::make_tuple(bits(e.distance_m), bits(e.x_m), bits(e.y_m), e.kind); };
      std::multiset<std::tuple<uint32_t, uint32_t, uint32_t, uint8_t>> sa, sb;
      for (size_t i = 0; i < na; ++i) {
        ASSERT_EQ(bits(ea[i].distance_m), bits(eb[i].distance_m)) << "round " << round << " probe " << probe << " entry " << i;
        if (ea[i].distance_m != ea[na - 1].distance_m) sa.insert(key(ea[i])), sb.insert(key(eb[i]));
      }
      ASSERT_EQ(sa, sb) << "round " << round << " probe " << probe;
      ASSERT_EQ(rust->leave(tr.player_id, tr.session_token), MMO_OK);
      ASSERT_EQ(base->leave(tb.player_id, tb.session_token), MMO_OK);
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Multi-threaded stress (rust-core/tests/suite/engine_stress.rs): worker, tick and auditor threads
// against one engine; conservation and at-most-once checked during and after.

constexpr size_t kWorkers = 2;
constexpr uint64_t kOpsPerWorker = 250'000;
constexpr size_t kPlayersPerWorker = 150;
constexpr size_t kSharedPlayers = 8;
constexpr uint64_t kStartingGold = 1000;
constexpr size_t kItems = 16;

struct Delta {
  __int128 gold = 0;
  std::array<__int128, kItems> items{};
};

struct WorkerLog {
  uint64_t ops = 0;
  uint64_t applied_first_time = 0;
  uint64_t duplicates_seen = 0;
  uint64_t moves_acked = 0;
  uint64_t mismatches = 0;  // a retransmit that did not repeat its first decision, and the like
  std::unordered_map<uint64_t, Delta> deltas;
  std::vector<uint64_t> departed;
  std::vector<uint64_t> live;
};

void record_applied(WorkerLog& log, const MmoEconomyOp& o) {
  const __int128 g = o.gold, c = o.item_count;
  const size_t k = o.item_kind;
  Delta& me = log.deltas[o.player_id];
  switch (o.kind) {
    case MMO_ECONOMY_KIND_TRANSFER: {
      Delta& them = log.deltas[o.counterparty_id];
      them.gold += g;
      me.gold -= g;
      if (c > 0) them.items[k] += c, me.items[k] -= c;
      break;
    }
    case MMO_ECONOMY_KIND_TRADE:
    case MMO_ECONOMY_KIND_LOOT_PICKUP: break;  // retired: refused, never applied
    default:
      me.gold -= g;
      if (c > 0) me.items[k] -= c;
      break;
  }
}

struct Mine {
  Who who;
  float x, y;
  uint32_t seq = 0;
  uint32_t client_ms = 0;
  // Server clock of the last walking step: the player walks again only once the clock has
  // moved on (a 50 ms tick buys 0.6 m at 12 m/s, more than a step), so every move fits its
  // distance budget; in between it sends stand-still moves.
  uint64_t walked_ms = 0;
  uint64_t next_txn = 1;
};

struct Shared {
  Who who;
  std::atomic<uint32_t> seq{0};
};

WorkerLog stress_worker(BaselineEngine& e, size_t index, std::vector<std::atomic<uint64_t>>& directory, std::vector<Shared>& shared,
                        std::atomic<uint64_t>& clock) {
  Rng rng{0x9E3779B9 + index * 7919};
  WorkerLog log;
  std::vector<Mine> mine;
  for (size_t slot = 0; slot < kPlayersPerWorker; ++slot) {
    const float x = 50.0f + rng.unit() * 900.0f, y = 50.0f + rng.unit() * 900.0f;
    const Who who = join(e, x, y, static_cast<uint8_t>(slot % 3));
    directory[index * kPlayersPerWorker + slot].store(who.id, std::memory_order_release);
    mine.push_back(Mine{who, x, y});
  }
  std::vector<MmoMoveRecord> batch;
  std::vector<MmoMoveEvent> events(e.move_events_required(16));
  std::vector<std::pair<MmoEconomyOp, MmoEconomyResult>> recent;
  const auto same = [](const MmoEconomyResult& a, const MmoEconomyResult& b) {
    return a.duplicate == 1 && a.status == b.status && a.gold_balance == b.gold_balance;
  };
  while (log.ops < kOpsPerWorker) {
    const uint64_t roll = rng.below(100);
    const uint64_t now_ms = clock.load(std::memory_order_acquire);
    if (roll < 60) {
      // 15 moves of this worker's players and one of a shared player.
      batch.clear();
      for (int i = 0; i < 15; ++i) {
        Mine& p = mine[rng.below(kPlayersPerWorker)];
        p.seq += 1;
        p.client_ms += 100;
        const float stride = now_ms > p.walked_ms ? 0.7f : 0.0f;  // at most 0.5 m a step
        const float nx = std::clamp(p.x + (rng.unit() - 0.5f) * stride, 1.0f, 1020.0f);
        const float ny = std::clamp(p.y + (rng.unit() - 0.5f) * stride, 1.0f, 1020.0f);
        p.walked_ms = now_ms;
        batch.push_back(mv(p.who, p.seq, p.client_ms, nx, ny));
        p.x = nx;
        p.y = ny;
      }
      Shared& s = shared[rng.below(kSharedPlayers)];
      const uint32_t seq = s.seq.fetch_add(1, std::memory_order_acq_rel) + 1;
      const MmoPlayerView here = view_of(e, s.who.id);  // shared players stand still
      batch.push_back(mv(s.who, seq, seq * 100, here.x_m, here.y_m));
      size_t written = 0;
      EXPECT_EQ(e.apply_moves(batch, now_ms, events, written), MMO_OK);
      uint64_t acks = 0, rejects = 0;
      for (size_t i = 0; i < written; ++i) {
        acks += events[i].kind == MMO_EVENT_KIND_ACK;
        rejects += events[i].kind == MMO_EVENT_KIND_REJECT;
      }
      if (acks + rejects != 16 || acks < 15) ++log.mismatches;  // own players' moves are always legal
      log.moves_acked += acks;
      log.ops += 16;
    } else if (roll < 88) {
      // An economy request, sent 1-3 times, perhaps retransmitted later.
      Mine& p = mine[rng.below(kPlayersPerWorker)];
      const uint64_t other = directory[rng.below(directory.size())].load(std::memory_order_acquire);
      static constexpr uint8_t kKinds[] = {MMO_ECONOMY_KIND_TRANSFER, MMO_ECONOMY_KIND_TRADE, MMO_ECONOMY_KIND_LOOT_PICKUP,
                                           MMO_ECONOMY_KIND_SPEND};
      const uint8_t kind = kKinds[rng.below(4)];
      const MmoEconomyOp o = op(p.who, p.next_txn++, kind, other, static_cast<int64_t>(rng.below(60)), static_cast<uint16_t>(rng.below(4)),
                                static_cast<int32_t>(rng.below(3)));
      const uint64_t copies = 1 + rng.below(3);
      const MmoEconomyResult first = run_op(e, o);
      if (first.duplicate != 0) ++log.mismatches;  // a fresh transaction id is never a duplicate
      if (first.duplicate == 0 && first.status == MMO_ECONOMY_STATUS_APPLIED) {
        log.applied_first_time += 1;
        record_applied(log, o);
      }
      for (uint64_t c = 1; c < copies; ++c) {
        if (!same(run_op(e, o), first)) ++log.mismatches;
        log.duplicates_seen += 1;
      }
      if (recent.size() == 8) {
        const auto [old, old_first] = recent.front();
        recent.erase(recent.begin());
        if (!same(run_op(e, old), old_first)) ++log.mismatches;  // still inside the window
        log.duplicates_seen += 1;
      }
      recent.emplace_back(o, first);
      log.ops += copies + 1;
    } else if (roll < 92) {
      MmoRaidSpawnRequest r = raid(100.0f + rng.unit() * 800.0f, 100.0f + rng.unit() * 800.0f, 1 + static_cast<uint32_t>(rng.below(300)),
                                   1 + static_cast<uint32_t>(rng.below(200)));
      r.seed = static_cast<uint32_t>(rng.next());
      MmoRaidReport report{};
      const MmoStatus s = e.raid_spawn(r, report);  // may be refused at capacity: whole or nothing
      if (s != MMO_OK && s != MMO_ERR_CAPACITY) ++log.mismatches;
      log.ops += 1;
    } else if (roll < 97) {
      const Mine& p = mine[rng.below(kPlayersPerWorker)];
      const uint64_t target = directory[rng.below(directory.size())].load(std::memory_order_acquire);
      MmoDamageResult r{};
      (void)e.damage(p.who.id, p.who.token, target, 1 + static_cast<int32_t>(rng.below(20)), r);
      log.ops += 1;
    } else {
      // Churn: one of this worker's players leaves and a new one takes the slot.
      const size_t slot = rng.below(kPlayersPerWorker);
      const Who old = mine[slot].who;
      if (e.leave(old.id, old.token) != MMO_OK) ++log.mismatches;
      log.departed.push_back(old.id);
      std::erase_if(recent, [&](const auto& entry) { return entry.first.player_id == old.id; });
      const float x = 50.0f + rng.unit() * 900.0f, y = 50.0f + rng.unit() * 900.0f;
      const Who who = join(e, x, y, 1);
      directory[index * kPlayersPerWorker + slot].store(who.id, std::memory_order_release);
      mine[slot] = Mine{who, x, y};
      log.ops += 2;
    }
  }
  for (const Mine& p : mine) log.live.push_back(p.who.id);
  return log;
}

TEST(BaselineStress, MixedOperationsKeepConservationAndAtMostOnce) {
  MmoConfig c = small_config();
  c.starting_gold = kStartingGold;
  c.player_capacity = 1024;
  c.raid_object_capacity = 20'000;
  c.raid_burst_capacity = 64;
  c.logout_linger_ms = 0;  // a leave departs at once: the audits count departed wallets (the linger has its own tests)
  BaselineEngine e(c);
  std::vector<std::atomic<uint64_t>> directory(kWorkers * kPlayersPerWorker);
  std::vector<Shared> shared(kSharedPlayers);
  for (size_t i = 0; i < kSharedPlayers; ++i) shared[i].who = join(e, 500.0f + static_cast<float>(i), 500.0f, 1);
  std::atomic<uint64_t> clock{1000};
  std::atomic<bool> done{false};
  std::atomic<uint64_t> audits{0}, broken_audits{0};

  std::thread ticker([&] {
    while (!done.load(std::memory_order_acquire)) {
      const uint64_t now = clock.fetch_add(50, std::memory_order_acq_rel) + 50;
      tick(e, now);
      std::this_thread::sleep_for(std::chrono::microseconds(500));
    }
  });
  std::thread auditor([&] {
    while (!done.load(std::memory_order_acquire)) {
      if (!e.full_audit().conserved()) broken_audits.fetch_add(1, std::memory_order_relaxed);
      audits.fetch_add(1, std::memory_order_relaxed);
      std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
  });
  std::vector<WorkerLog> logs(kWorkers);
  std::vector<std::thread> workers;
  for (size_t i = 0; i < kWorkers; ++i) workers.emplace_back([&, i] { logs[i] = stress_worker(e, i, directory, shared, clock); });
  for (std::thread& t : workers) t.join();
  done.store(true, std::memory_order_release);
  ticker.join();
  auditor.join();

  uint64_t total_ops = 0;
  for (const WorkerLog& log : logs) {
    total_ops += log.ops;
    EXPECT_EQ(log.mismatches, 0u);
  }
  EXPECT_GE(total_ops, 200'000u);
  EXPECT_GT(audits.load(), 0u);
  EXPECT_EQ(broken_audits.load(), 0u) << "conservation broken mid-run";

  // Every live balance is what the applied decisions imply.
  std::unordered_map<uint64_t, Delta> expected;
  for (const WorkerLog& log : logs) {
    for (const auto& [id, d] : log.deltas) {
      Delta& x = expected[id];
      x.gold += d.gold;
      for (size_t k = 0; k < kItems; ++k) x.items[k] += d.items[k];
    }
  }
  const mmo::baseline::Audit audit = e.full_audit();
  EXPECT_TRUE(audit.conserved());
  __int128 departed_gold = 0;
  for (const WorkerLog& log : logs) {
    for (const uint64_t id : log.live) {
      const MmoPlayerView v = view_of(e, id);
      const Delta d = expected.count(id) ? expected[id] : Delta{};
      EXPECT_TRUE(static_cast<__int128>(v.gold) == static_cast<__int128>(kStartingGold) + d.gold) << "player " << id << " gold";
      for (size_t k = 0; k < kItems; ++k) EXPECT_TRUE(static_cast<__int128>(v.items[k]) == d.items[k]) << "player " << id << " item " << k;
    }
    for (const uint64_t id : log.departed) departed_gold += static_cast<__int128>(kStartingGold) + (expected.count(id) ? expected[id].gold : 0);
  }
  EXPECT_TRUE(static_cast<__int128>(audit.departed.gold) == departed_gold) << "departed wallets kept exactly their balances";

  const MmoStats s = stats_of(e);
  uint64_t applied = 0, duplicates = 0, acked = 0;
  for (const WorkerLog& log : logs) applied += log.applied_first_time, duplicates += log.duplicates_seen, acked += log.moves_acked;
  EXPECT_EQ(s.economy_applied, applied) << "no decision applied twice";
  EXPECT_EQ(s.economy_duplicates, duplicates);
  EXPECT_EQ(s.moves_applied, acked);

  // Drain the raids; the grid holds exactly the live players, each once.
  uint64_t now = clock.load();
  for (int i = 0; i < 10; ++i) tick(e, now += 50);
  EXPECT_EQ(e.live_raid_objects(), 0u);
  std::vector<uint64_t> live;
  for (const WorkerLog& log : logs) live.insert(live.end(), log.live.begin(), log.live.end());
  for (const Shared& sh : shared) live.push_back(sh.who.id);
  const auto census = e.grid().census();
  EXPECT_EQ(census.players, live.size());
  EXPECT_EQ(census.objects, 0u);
  for (const uint64_t id : live) EXPECT_EQ(e.grid().cells_containing(id), std::vector<uint32_t>{view_of(e, id).cell});
  for (const WorkerLog& log : logs) {
    for (const uint64_t id : log.departed) EXPECT_TRUE(e.grid().cells_containing(id).empty());
  }
}

}  // namespace
