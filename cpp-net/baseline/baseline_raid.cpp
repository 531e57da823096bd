// baseline_raid.cpp: BaselineEngine's raid bursts (spawn and the tick that expires them).
//
// Spawn follows rust-core/src/combat.rs Combat::raid_spawn exactly where it is observable:
// the same validation order, the same whole-or-nothing capacity checks, the same expiry tick
// (current tick + ceil(lifetime / tick) (at least 1) + 1, saturating), the same clamped square
// and its cells, each cell's share by cumulative rounding, and each object's position drawn
// from the same SplitMix64 (seeded with seed ^ 0xA5A5_5A5A_DEAD_BEEF) in the same order with
// the same f32 arithmetic, so a seed gives bit-identical positions in both engines. Objects
// are std::make_shared one by one; the burst keeps them (by cell) in a std::multimap keyed by
// its expiry tick until the tick frees them.
#include <algorithm>
#include <cmath>
#include <cassert>
#include <limits>
#include <mutex>

#include "baseline/baseline_engine.hpp"
#include "highwayhash/sip_hash.h"

namespace mmo::baseline {

// loot.rs LootTable::roll: three draws of SplitMix64 seeded with SipHash-2-4 of the id's 8
// little-endian bytes under c.loot_key (its two halves read little-endian, as siphasher reads
// a 16-byte key, whatever the machine). The engine fills a zero key with a random one when it
// is made (its config_); a zero key here would be a predictable roll.
LootContents roll_loot(const MmoConfig& c, uint64_t object_id) {
  highwayhash::HH_U64 key[2] = {0, 0};
  for (size_t i = 0; i < sizeof c.loot_key; ++i) key[i / 8] |= highwayhash::HH_U64{c.loot_key[i]} << (8 * (i % 8));
  assert((key[0] | key[1]) != 0 && "roll_loot needs a drawn or configured key");
  unsigned char id_bytes[8];
  for (int i = 0; i < 8; ++i) id_bytes[i] = static_cast<unsigned char>(object_id >> (8 * i));
  SplitMix64 rng(highwayhash::SipHash(key, reinterpret_cast<const char*>(id_bytes), sizeof id_bytes));
  const uint64_t span = uint64_t{c.loot_gold_max - c.loot_gold_min} + 1;
  LootContents loot;
  loot.gold = uint64_t{c.loot_gold_min} + rng.next_u64() % span;
  const bool has_items = rng.next_u64() % 1000 < uint64_t{c.loot_item_permille};
  const uint64_t stack = rng.next_u64();
  if (!has_items) return loot;
  loot.item_kind = static_cast<uint16_t>(stack % kItemKinds);
  loot.item_count = 1 + static_cast<uint32_t>((stack >> 32) % std::max<uint64_t>(c.loot_item_count_max, 1));
  return loot;
}

// combat.rs Combat::validate: kind, count, lifetime and hp, then the centre and extent.
MmoStatus BaselineEngine::validate_raid(const MmoRaidSpawnRequest& r) const {
  if (r.kind != MMO_ENTITY_KIND_ADD && r.kind != MMO_ENTITY_KIND_PROJECTILE && r.kind != MMO_ENTITY_KIND_LOOT) return MMO_ERR_BAD_ENUM;
  if (r.count == 0 || r.count > kRaidBurstMax) return MMO_ERR_INVALID_ARGUMENT;
  if (r.lifetime_ms == 0 || r.hp <= 0) return MMO_ERR_INVALID_ARGUMENT;
  const auto inside = [this](float v) { return finite(v) && v >= 0.0f && v < config_.world_size_m; };
  if (!inside(r.center_x_m) || !inside(r.center_y_m) || !finite(r.half_extent_m) || r.half_extent_m < 0.0f) return MMO_ERR_OUT_OF_BOUNDS;
  return MMO_OK;
}

MmoStatus BaselineEngine::raid_spawn(const MmoRaidSpawnRequest& req, MmoRaidReport& out) {
  if (const MmoStatus invalid = validate_raid(req); invalid != MMO_OK) {
    stats_.bump(Counter::raid_refused_invalid);
    return invalid;
  }
  // Whole or nothing: the objects, then one burst slot (giving the objects back on refusal).
  if (!try_acquire(objects_live_, req.count, config_.raid_object_capacity)) {
    stats_.bump(Counter::raid_refused_capacity);
    return MMO_ERR_CAPACITY;
  }
  if (!try_acquire(bursts_live_, 1, config_.raid_burst_capacity)) {
    objects_live_.fetch_sub(req.count, std::memory_order_acq_rel);
    stats_.bump(Counter::raid_refused_capacity);
    return MMO_ERR_CAPACITY;
  }
  // The last finished tick is current_tick; the next may already be sweeping, so the + 1
  // keeps every object alive for at least lifetime_ms and out of that sweep's reach.
  const uint32_t now_tick = current_tick_.load(std::memory_order_acquire);
  const uint32_t lifetime_ticks = std::max<uint32_t>(req.lifetime_ms / config_.tick_ms + (req.lifetime_ms % config_.tick_ms != 0), 1);
  const uint32_t expires_tick = saturating_add(saturating_add(now_tick, lifetime_ticks), 1);

  // The square, clamped to the world; a degenerate one widened to 1 mm.
  const float top = std::nextafter(config_.world_size_m, -std::numeric_limits<float>::infinity());
  const float h = rs_max(req.half_extent_m, 0.001f);
  const float x0 = rs_max(req.center_x_m - h, 0.0f), x1 = rs_min(req.center_x_m + h, top);
  const float y0 = rs_max(req.center_y_m - h, 0.0f), y1 = rs_min(req.center_y_m + h, top);
  const float area = (x1 - x0) * (y1 - y0);
  const uint32_t cx0 = grid_.coord(x0), cy0 = grid_.coord(y0);
  const uint32_t cx1 = grid_.coord(x1), cy1 = grid_.coord(y1);
  const float cell_size = grid_.cell_size_m();
  const uint32_t total_cells = (cx1 - cx0 + 1) * (cy1 - cy0 + 1);

  SplitMix64 rng(uint64_t{req.seed} ^ 0xA5A55A5ADEADBEEFULL);
  uint64_t next_key = next_object_key_.fetch_add(req.count, std::memory_order_relaxed);
  Burst burst;
  uint32_t placed_before = 0;
  double area_before = 0.0;
  uint32_t cell_index = 0;
  for (uint32_t cy = cy0; cy <= cy1; ++cy) {
    for (uint32_t cx = cx0; cx <= cx1; ++cx) {
      ++cell_index;
      // This cell's overlap with the square, and its share of the count by cumulative rounding.
      const float ox0 = rs_max(x0, static_cast<float>(cx) * cell_size), ox1 = rs_min(x1, static_cast<float>(cx + 1) * cell_size);
      const float oy0 = rs_max(y0, static_cast<float>(cy) * cell_size), oy1 = rs_min(y1, static_cast<float>(cy + 1) * cell_size);
      const auto overlap = static_cast<double>(rs_max(ox1 - ox0, 0.0f) * rs_max(oy1 - oy0, 0.0f));
      area_before += overlap;
      const uint32_t placed_after = cell_index == total_cells
                                        ? req.count
                                        : std::min(saturating_u32(static_cast<double>(req.count) * area_before / static_cast<double>(area)),
                                                   req.count);
      const uint32_t share = placed_after - placed_before;
      placed_before = placed_after;
      if (share == 0) continue;
      // A share on a cell with (numerically) no area still lands inside it.
      const float ox1c = rs_max(ox1, ox0), oy1c = rs_max(oy1, oy0);
      std::vector<EntityPtr> objects;
      objects.reserve(share);
      for (uint32_t i = 0; i < share; ++i) {
        const float x = rs_min(ox0 + rng.unit() * (ox1c - ox0), top);
        const float y = rs_min(oy0 + rng.unit() * (oy1c - oy0), top);
        objects.push_back(std::make_shared<RaidObject>(next_key++ | kObjectIdTag, req.kind, Vec2{x, y}, expires_tick, req.hp, req.faction));
      }
      burst.shares.emplace_back(cy * grid_.cells_per_side() + cx, std::move(objects));
    }
  }
  {
    std::unique_lock lock(objects_mutex_);
    for (const auto& [cell, objects] : burst.shares) {
      for (const EntityPtr& e : objects) objects_.emplace(e->id, std::static_pointer_cast<RaidObject>(e));
    }
  }
  LockWaits grid_waits;
  for (const auto& [cell, objects] : burst.shares) grid_.insert_all(cell, objects, grid_waits);
  add_lock_waits(Counter::lock_grid_contended, Counter::lock_grid_wait_ns, grid_waits);
  {
    std::lock_guard lock(bursts_mutex_);
    pending_bursts_.emplace(expires_tick, std::move(burst));
  }
  stats_.bump(Counter::raid_bursts);
  stats_.add(Counter::raid_objects_spawned, req.count);
  out = MmoRaidReport{req.count, total_cells, expires_tick, 0};
  return MMO_OK;
}

// engine.rs Engine::tick: advance, free every burst due at this tick, publish the summary.
MmoStatus BaselineEngine::tick(uint64_t now_ms, MmoTickInfo& out) {
  std::lock_guard tick_lock(tick_mutex_);
  tick_ += 1;  // wraps, as the Rust core's u32 tick
  std::vector<Burst> due;
  {
    std::lock_guard lock(bursts_mutex_);
    const auto end = pending_bursts_.upper_bound(tick_);
    for (auto it = pending_bursts_.begin(); it != end; ++it) due.push_back(std::move(it->second));
    pending_bursts_.erase(pending_bursts_.begin(), end);
  }
  uint32_t expired = 0;
  LockWaits grid_waits;
  for (const Burst& burst : due) {
    uint32_t freed = 0;
    for (const auto& [cell, objects] : burst.shares) freed += static_cast<uint32_t>(grid_.remove_all(cell, objects, grid_waits));
    {
      std::unique_lock lock(objects_mutex_);
      for (const auto& [cell, objects] : burst.shares) {
        for (const EntityPtr& e : objects) objects_.erase(e->id);
      }
    }
    objects_live_.fetch_sub(freed, std::memory_order_acq_rel);
    bursts_live_.fetch_sub(1, std::memory_order_acq_rel);
    expired += freed;
  }
  // engine.rs tick: every trade offer timed out by now goes back to its maker.
  LockWaits economy_waits;
  stats_.add(Counter::trades_expired, economy_.expire_offers(now_ms, economy_waits));
  add_lock_waits(Counter::lock_economy_contended, Counter::lock_economy_wait_ns, economy_waits);
  LockWaits body_waits;
  stats_.add(Counter::respawns, respawn_due(now_ms, body_waits));
  stats_.add(Counter::lingers_ended, lingers_due(now_ms));
  add_lock_waits(Counter::lock_body_contended, Counter::lock_body_wait_ns, body_waits);
  MmoTickInfo info{};
  publish_snapshot(tick_, now_ms, grid_waits);
  info.snapshot_entities = static_cast<uint32_t>(current_snapshot()->size());
  add_lock_waits(Counter::lock_grid_contended, Counter::lock_grid_wait_ns, grid_waits);
  info.now_ms = now_ms;
  info.tick = tick_;
  info.players_live = players_live_.load(std::memory_order_acquire);
  info.objects_live = objects_live_.load(std::memory_order_acquire);
  info.objects_expired = expired;
  info.bursts_live = bursts_live_.load(std::memory_order_acquire);
  current_tick_.store(tick_, std::memory_order_release);
  last_tick_ms_.store(now_ms, std::memory_order_release);
  stats_.bump(Counter::ticks);
  stats_.add(Counter::raid_objects_despawned, expired);
  out = info;
  return MMO_OK;
}

// The conventional per-tick copy: every entity out of the grid under its stripe locks into a
// fresh vector, indexed and published as a shared_ptr (see baseline_snapshot.hpp).
void BaselineEngine::publish_snapshot(uint32_t tick, uint64_t now_ms, LockWaits& waits) {
  std::vector<SnapshotEntry> entries;
  entries.reserve(players_live_.load(std::memory_order_relaxed) + objects_live_.load(std::memory_order_relaxed));
  grid_.for_each_entity(waits, [&](const GridEntity& e, Vec2 p) { entries.push_back(SnapshotEntry{e.id, p.x_m, p.y_m, e.kind}); });
  auto fresh = std::make_shared<const WorldSnapshot>(tick, now_ms, config_.world_size_m, config_.snapshot_cell_m, config_.aoi_radius_m,
                                                     std::move(entries));
  {
    std::lock_guard lock(snapshot_mutex_);
    snapshot_.swap(fresh);
  }
  // `fresh` now holds the previous snapshot, released here, outside the lock.
  stats_.bump(Counter::snapshots_published);
}

}  // namespace mmo::baseline
