// baseline_grid.hpp: the baseline's collision grid, written the conventional way: cell key ->
// std::unordered_set of std::shared_ptr<GridEntity>, the cells spread over striped
// std::shared_mutex-guarded std::unordered_maps: MmoConfig::grid_shards stripes (a power of
// two, default 128), stripe = the cell key's bits mixed by a multiplicative (Fibonacci) hash,
// so a cell's horizontal and vertical neighbours fall in unrelated stripes (`cell & 127`
// would be the column alone, and a column's cells would share one stripe).
//
// Every float computation that decides a cell, a contact or a distance is written exactly as
// the Rust core's rust-core/src/grid.rs writes it (f32 arithmetic in the same order, the same
// multiply-by-inverse for cell coordinates, saturating float-to-int casts), so the same inputs
// give the same cells and the same distances bit for bit. The project builds this code with
// -ffp-contract=off so the compiler never fuses a multiply and an add that Rust keeps apart.
//
// Concurrency contract:
// - A GridEntity's position is a std::atomic<Vec2> (8 bytes, lock-free): the owning mover
//   stores it under its own body mutex; proximity and AoI readers load it under a stripe's
//   shared lock. No entity lock is ever taken under a stripe lock, so the order "body mutex ->
//   one stripe at a time" has no cycle.
// - Writers (insert/remove) take one stripe exclusively, one cell at a time; a relocation is
//   remove, release, insert (a reader may miss the entity for that instant, never sees it
//   twice). Readers take one stripe shared per visited cell.
#pragma once

#include <atomic>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <memory>
#include <shared_mutex>
#include <span>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "baseline/baseline_util.hpp"
#include "mmo_core.h"

namespace mmo::baseline {

// A position in metres. Two floats, stored atomically as one 8-byte word.
struct Vec2 {
  float x_m = 0.0f;
  float y_m = 0.0f;
};
static_assert(sizeof(Vec2) == 8);
static_assert(std::atomic<Vec2>::is_always_lock_free, "positions are read without a lock");

// One entity as the grid sees it: a player's body or a raid object.
struct GridEntity {
  GridEntity(uint64_t id_, uint8_t kind_, Vec2 position_, uint32_t expires_tick_)
      : id(id_), kind(kind_), expires_tick(expires_tick_), position(position_) {}
  virtual ~GridEntity() = default;
  GridEntity(const GridEntity&) = delete;
  GridEntity& operator=(const GridEntity&) = delete;

  const uint64_t id;              // player id, or raid object id (bit 63 set)
  std::atomic<uint8_t> kind;      // an MmoEntityKind; a killed add becomes MMO_ENTITY_KIND_LOOT
  const uint32_t expires_tick;    // raid objects: the tick that frees them; players: UINT32_MAX
  std::atomic<Vec2> position;     // written by the owner's mover (players) or never (objects)
};

using CellKey = uint32_t;
using EntityPtr = std::shared_ptr<GridEntity>;

class Grid {
 public:
  explicit Grid(const MmoConfig& config);

  uint32_t cells_per_side() const { return cells_per_side_; }
  float cell_size_m() const { return cell_size_m_; }
  float world_size_m() const { return world_size_m_; }

  // Whether (x, y) is a finite point inside [0, world_size_m)^2.
  bool in_world(float x, float y) const {
    return finite(x) && finite(y) && x >= 0.0f && y >= 0.0f && x < world_size_m_ && y < world_size_m_;
  }
  // Column or row of a coordinate, clamped to the world's edge cells.
  uint32_t coord(float v) const {
    const uint32_t c = saturating_u32(static_cast<double>(v * inv_cell_size_));
    return c < cells_per_side_ - 1 ? c : cells_per_side_ - 1;
  }
  CellKey cell_of(float x, float y) const { return coord(y) * cells_per_side_ + coord(x); }
  // The cell an entity at (x, y) registered in `current` should be in: it stays while inside
  // `current` grown by the hysteresis margin on every side.
  CellKey cell_with_hysteresis(CellKey current, float x, float y) const;

  // Every method takes its stripe lock through `waits`, which counts and times a held lock.
  void insert(CellKey cell, const EntityPtr& entity, LockWaits& waits);
  // Removes `entity` from `cell`; false if it was not there.
  bool remove(CellKey cell, const EntityPtr& entity, LockWaits& waits);
  // Bulk insert/remove into one cell under one lock (a raid burst's share of that cell).
  void insert_all(CellKey cell, const std::vector<EntityPtr>& entities, LockWaits& waits);
  size_t remove_all(CellKey cell, const std::vector<EntityPtr>& entities, LockWaits& waits);

  // Calls visit(entity, position, distance_m) for every entity other than `exclude_id` within
  // `radius_m` of (x, y), visiting only the cells such an entity can be registered in (the
  // square (x, y) +- (radius + hysteresis)), one stripe shared lock at a time. `visit` must not
  // touch the grid.
  template <class Visit>
  void for_each_near(float x, float y, float radius_m, uint64_t exclude_id, LockWaits& waits, Visit&& visit) const;

  // Calls visit(entity, position) for every entity in the grid, one stripe's shared lock at a
  // time (the tick's copy of the world for its snapshot). `visit` must not touch the grid.
  template <class Visit>
  void for_each_entity(LockWaits& waits, Visit&& visit) const;

  // Audit and test helpers (walk the whole grid, allocate).
  struct Census {
    size_t players = 0;
    size_t objects = 0;
  };
  Census census() const;
  std::vector<CellKey> cells_containing(uint64_t id) const;

 private:
  using Cell = std::unordered_set<EntityPtr>;
  // One stripe: a lock and the cells hashed to it. Aligned to a cache line so two stripes'
  // locks never share one.
  struct alignas(64) Stripe {
    mutable std::shared_mutex mutex;
    std::unordered_map<CellKey, Cell> cells;  // guarded by mutex
  };
  // The stripe of a cell: the key's bits mixed by a multiplicative hash, so a cell's vertical
  // neighbours (key +- cells_per_side) land on unrelated stripes, not on the same column's.
  Stripe& stripe_of(CellKey cell) const { return stripes_[(cell * 0x9E3779B1u) >> stripe_shift_]; }
  Cell& cell_locked(Stripe& stripe, CellKey cell);  // creates it on first use

  uint32_t cells_per_side_;
  float cell_size_m_;
  float inv_cell_size_;
  float hysteresis_m_;
  float world_size_m_;
  uint32_t stripe_count_;
  uint32_t stripe_shift_;  // 32 - log2(stripe_count_)
  std::unique_ptr<Stripe[]> stripes_;
};

template <class Visit>
void Grid::for_each_entity(LockWaits& waits, Visit&& visit) const {
  for (uint32_t s = 0; s < stripe_count_; ++s) {
    const auto lock = waits.shared(stripes_[s].mutex);
    for (const auto& [key, members] : stripes_[s].cells) {
      for (const EntityPtr& e : members) visit(*e, e->position.load(std::memory_order_relaxed));
    }
  }
}

template <class Visit>
void Grid::for_each_near(float x, float y, float radius_m, uint64_t exclude_id, LockWaits& waits, Visit&& visit) const {
  // As grid.rs's for_each_near: the cells overlapping (x, y) +- (radius + hysteresis).
  const float r2 = radius_m * radius_m;
  const float reach = radius_m + hysteresis_m_;
  const uint32_t cx0 = coord(rs_max(x - reach, 0.0f)), cx1 = coord(x + reach);
  const uint32_t cy0 = coord(rs_max(y - reach, 0.0f)), cy1 = coord(y + reach);
  for (uint32_t cy = cy0; cy <= cy1; ++cy) {
    for (uint32_t cx = cx0; cx <= cx1; ++cx) {
      const CellKey key = cy * cells_per_side_ + cx;
      const Stripe& stripe = stripe_of(key);
      const auto lock = waits.shared(stripe.mutex);
      const auto it = stripe.cells.find(key);
      if (it == stripe.cells.end()) continue;
      for (const EntityPtr& e : it->second) {
        // Relaxed: a position is one independent value; a racing mover's old or new one will do.
        const Vec2 p = e->position.load(std::memory_order_relaxed);
        const float dx = p.x_m - x, dy = p.y_m - y;
        const float d2 = dx * dx + dy * dy;
        if (d2 <= r2 && e->id != exclude_id) visit(*e, p, std::sqrt(d2));
      }
    }
  }
}

}  // namespace mmo::baseline
