// baseline_grid.cpp: see baseline_grid.hpp.
#include "baseline/baseline_grid.hpp"

#include <algorithm>
#include <mutex>

namespace mmo::baseline {

Grid::Grid(const MmoConfig& config)
    : cells_per_side_(static_cast<uint32_t>(std::ceil(config.world_size_m / config.cell_size_m))),
      cell_size_m_(config.cell_size_m),
      inv_cell_size_(1.0f / config.cell_size_m),
      hysteresis_m_(config.cell_hysteresis_m),
      world_size_m_(config.world_size_m),
      member_capacity_(config.cell_member_capacity),
      stripe_mask_(config.grid_shards - 1),
      stripes_(std::make_unique<Stripe[]>(config.grid_shards)) {}

CellKey Grid::cell_with_hysteresis(CellKey current, float x, float y) const {
  const uint32_t cx = current % cells_per_side_, cy = current / cells_per_side_;
  const float x0 = static_cast<float>(cx) * cell_size_m_, y0 = static_cast<float>(cy) * cell_size_m_;
  const float h = hysteresis_m_;
  const bool inside = x >= x0 - h && x < x0 + cell_size_m_ + h && y >= y0 - h && y < y0 + cell_size_m_ + h;
  return inside ? current : cell_of(x, y);
}

Grid::Cell& Grid::cell_locked(Stripe& stripe, CellKey cell) {
  auto [it, inserted] = stripe.cells.try_emplace(cell);
  if (inserted) it->second.reserve(member_capacity_);
  return it->second;
}

void Grid::insert(CellKey cell, const EntityPtr& entity) {
  Stripe& stripe = stripe_of(cell);
  std::unique_lock lock(stripe.mutex);
  cell_locked(stripe, cell).insert(entity);
}

bool Grid::remove(CellKey cell, const EntityPtr& entity) {
  Stripe& stripe = stripe_of(cell);
  std::unique_lock lock(stripe.mutex);
  const auto it = stripe.cells.find(cell);
  return it != stripe.cells.end() && it->second.erase(entity) == 1;
}

void Grid::insert_all(CellKey cell, const std::vector<EntityPtr>& entities) {
  Stripe& stripe = stripe_of(cell);
  std::unique_lock lock(stripe.mutex);
  Cell& members = cell_locked(stripe, cell);
  members.reserve(members.size() + entities.size());
  members.insert(entities.begin(), entities.end());
}

size_t Grid::remove_all(CellKey cell, const std::vector<EntityPtr>& entities) {
  Stripe& stripe = stripe_of(cell);
  std::unique_lock lock(stripe.mutex);
  const auto it = stripe.cells.find(cell);
  if (it == stripe.cells.end()) return 0;
  size_t removed = 0;
  for (const EntityPtr& e : entities) removed += it->second.erase(e);
  return removed;
}

size_t Grid::nearest_k(float x, float y, uint64_t exclude_id, std::span<MmoAoiEntry> out) const {
  const size_t k = out.size();
  if (k == 0) return 0;
  // As grid.rs's nearest_k: every member of the up-to-nine cells around (x, y)'s cell is a
  // candidate. Collect them, then keep the k nearest.
  std::vector<MmoAoiEntry> candidates;
  const int64_t cx = coord(x), cy = coord(y), side = cells_per_side_;
  for (int64_t ny = cy - 1; ny <= cy + 1; ++ny) {
    for (int64_t nx = cx - 1; nx <= cx + 1; ++nx) {
      if (nx < 0 || ny < 0 || nx >= side || ny >= side) continue;
      const auto key = static_cast<CellKey>(ny * side + nx);
      const Stripe& stripe = stripe_of(key);
      std::shared_lock lock(stripe.mutex);
      const auto it = stripe.cells.find(key);
      if (it == stripe.cells.end()) continue;
      for (const EntityPtr& e : it->second) {
        if (e->id == exclude_id) continue;
        const Vec2 p = e->position.load(std::memory_order_relaxed);
        const float dx = p.x_m - x, dy = p.y_m - y;
        MmoAoiEntry entry{};
        entry.entity_id = e->id;
        entry.x_m = p.x_m;
        entry.y_m = p.y_m;
        entry.distance_m = std::sqrt(dx * dx + dy * dy);
        entry.kind = e->kind;
        candidates.push_back(entry);
      }
    }
  }
  const size_t n = std::min(k, candidates.size());
  const auto nearer = [](const MmoAoiEntry& a, const MmoAoiEntry& b) { return a.distance_m < b.distance_m; };
  std::partial_sort(candidates.begin(), candidates.begin() + static_cast<std::ptrdiff_t>(n), candidates.end(), nearer);
  std::copy_n(candidates.begin(), n, out.begin());
  return n;
}

Grid::Census Grid::census() const {
  Census census;
  for (uint32_t s = 0; s <= stripe_mask_; ++s) {
    std::shared_lock lock(stripes_[s].mutex);
    for (const auto& [key, members] : stripes_[s].cells) {
      for (const EntityPtr& e : members) (e->kind == MMO_ENTITY_KIND_PLAYER ? census.players : census.objects) += 1;
    }
  }
  return census;
}

std::vector<CellKey> Grid::cells_containing(uint64_t id) const {
  std::vector<CellKey> found;
  for (uint32_t s = 0; s <= stripe_mask_; ++s) {
    std::shared_lock lock(stripes_[s].mutex);
    for (const auto& [key, members] : stripes_[s].cells) {
      if (std::any_of(members.begin(), members.end(), [id](const EntityPtr& e) { return e->id == id; })) found.push_back(key);
    }
  }
  std::sort(found.begin(), found.end());
  return found;
}

}  // namespace mmo::baseline
