// baseline_grid.cpp: see baseline_grid.hpp.
#include "baseline/baseline_grid.hpp"

#include <algorithm>
#include <bit>
#include <mutex>

namespace mmo::baseline {

Grid::Grid(const MmoConfig& config)
    : cells_per_side_(static_cast<uint32_t>(std::ceil(config.world_size_m / config.cell_size_m))),
      cell_size_m_(config.cell_size_m),
      inv_cell_size_(1.0f / config.cell_size_m),
      hysteresis_m_(config.cell_hysteresis_m),
      world_size_m_(config.world_size_m),
      stripe_count_(config.grid_shards),
      stripe_shift_(32 - static_cast<uint32_t>(std::countr_zero(config.grid_shards))),
      stripes_(std::make_unique<Stripe[]>(config.grid_shards)) {}

CellKey Grid::cell_with_hysteresis(CellKey current, float x, float y) const {
  const uint32_t cx = current % cells_per_side_, cy = current / cells_per_side_;
  const float x0 = static_cast<float>(cx) * cell_size_m_, y0 = static_cast<float>(cy) * cell_size_m_;
  const float h = hysteresis_m_;
  const bool inside = x >= x0 - h && x < x0 + cell_size_m_ + h && y >= y0 - h && y < y0 + cell_size_m_ + h;
  return inside ? current : cell_of(x, y);
}

Grid::Cell& Grid::cell_locked(Stripe& stripe, CellKey cell) { return stripe.cells.try_emplace(cell).first->second; }

void Grid::insert(CellKey cell, const EntityPtr& entity, LockWaits& waits) {
  Stripe& stripe = stripe_of(cell);
  const auto lock = waits.unique(stripe.mutex);
  cell_locked(stripe, cell).insert(entity);
}

bool Grid::remove(CellKey cell, const EntityPtr& entity, LockWaits& waits) {
  Stripe& stripe = stripe_of(cell);
  const auto lock = waits.unique(stripe.mutex);
  const auto it = stripe.cells.find(cell);
  return it != stripe.cells.end() && it->second.erase(entity) == 1;
}

void Grid::insert_all(CellKey cell, const std::vector<EntityPtr>& entities, LockWaits& waits) {
  Stripe& stripe = stripe_of(cell);
  const auto lock = waits.unique(stripe.mutex);
  Cell& members = cell_locked(stripe, cell);
  members.reserve(members.size() + entities.size());
  members.insert(entities.begin(), entities.end());
}

size_t Grid::remove_all(CellKey cell, const std::vector<EntityPtr>& entities, LockWaits& waits) {
  Stripe& stripe = stripe_of(cell);
  const auto lock = waits.unique(stripe.mutex);
  const auto it = stripe.cells.find(cell);
  if (it == stripe.cells.end()) return 0;
  size_t removed = 0;
  for (const EntityPtr& e : entities) removed += it->second.erase(e);
  return removed;
}

Grid::Census Grid::census() const {
  Census census;
  for (uint32_t s = 0; s < stripe_count_; ++s) {
    std::shared_lock lock(stripes_[s].mutex);
    for (const auto& [key, members] : stripes_[s].cells) {
      for (const EntityPtr& e : members) (e->kind == MMO_ENTITY_KIND_PLAYER ? census.players : census.objects) += 1;
    }
  }
  return census;
}

std::vector<CellKey> Grid::cells_containing(uint64_t id) const {
  std::vector<CellKey> found;
  for (uint32_t s = 0; s < stripe_count_; ++s) {
    std::shared_lock lock(stripes_[s].mutex);
    for (const auto& [key, members] : stripes_[s].cells) {
      if (std::any_of(members.begin(), members.end(), [id](const EntityPtr& e) { return e->id == id; })) found.push_back(key);
    }
  }
  std::sort(found.begin(), found.end());
  return found;
}

}  // namespace mmo::baseline
