// baseline_snapshot.cpp: see baseline_snapshot.hpp.
#include "baseline/baseline_snapshot.hpp"

#include <algorithm>
#include <cmath>

#include "baseline/baseline_util.hpp"

namespace mmo::baseline {

WorldSnapshot::WorldSnapshot(uint32_t tick, uint64_t now_ms, float world_size_m, float cell_m, float radius_m,
                             std::vector<SnapshotEntry> entries)
    : tick_(tick),
      now_ms_(now_ms),
      cell_m_(cell_m),
      inv_cell_(1.0f / cell_m),
      side_(static_cast<uint32_t>(std::fmax(std::ceil(world_size_m / cell_m), 1.0f))),
      radius_m_(radius_m),
      entries_(std::move(entries)) {
  by_id_.reserve(entries_.size());
  for (uint32_t i = 0; i < entries_.size(); ++i) {
    const SnapshotEntry& e = entries_[i];
    if (e.kind == MMO_ENTITY_KIND_PLAYER) by_id_.emplace(e.id, i);
    cells_[coord(e.y_m) * side_ + coord(e.x_m)].push_back(i);
  }
}

// As snapshot.rs SnapshotGeometry::coord: Rust's saturating `as u32`, clamped to the edge.
uint32_t WorldSnapshot::coord(float v) const {
  const uint32_t c = saturating_u32(static_cast<double>(v * inv_cell_));
  return c < side_ - 1 ? c : side_ - 1;
}

const SnapshotEntry* WorldSnapshot::find(uint64_t id) const {
  const auto it = by_id_.find(id);
  return it == by_id_.end() ? nullptr : &entries_[it->second];
}

size_t WorldSnapshot::nearest(const SnapshotEntry& viewer, std::span<MmoAoiEntry> out, std::vector<AoiCandidate>& scratch) const {
  const size_t k = out.size();
  if (k == 0) return 0;
  scratch.clear();
  const float r2 = radius_m_ * radius_m_;
  const int64_t vcx = coord(viewer.x_m), vcy = coord(viewer.y_m), side = side_;
  const auto nearer = [](const AoiCandidate& a, const AoiCandidate& b) { return a.d2 != b.d2 ? a.d2 < b.d2 : a.id < b.id; };
  const auto visit = [&](int64_t cx, int64_t cy) {
    if (cx < 0 || cy < 0 || cx >= side || cy >= side) return;
    const auto it = cells_.find(static_cast<uint32_t>(cy * side + cx));
    if (it == cells_.end()) return;
    for (const uint32_t i : it->second) {
      const SnapshotEntry& e = entries_[i];
      const float dx = e.x_m - viewer.x_m, dy = e.y_m - viewer.y_m;
      const float d2 = dx * dx + dy * dy;
      if (d2 <= r2 && e.id != viewer.id) scratch.push_back({d2, e.id, i});
    }
  };
  // Ring r: the cells at Chebyshev distance r from the viewer's. Everything in ring r + 1 or
  // beyond is at least r cells' width away (the viewer is inside its own cell), so once k
  // candidates are nearer than that, the rest cannot change the answer.
  const int64_t rings = static_cast<int64_t>(std::ceil(radius_m_ * inv_cell_)) + 1;
  for (int64_t r = 0; r <= rings; ++r) {
    if (r == 0) {
      visit(vcx, vcy);
    } else {
      for (int64_t d = -r; d <= r; ++d) {
        visit(vcx + d, vcy - r);
        visit(vcx + d, vcy + r);
      }
      for (int64_t d = -r + 1; d <= r - 1; ++d) {
        visit(vcx - r, vcy + d);
        visit(vcx + r, vcy + d);
      }
    }
    const float beyond_m = static_cast<float>(r) * cell_m_ - 1e-3f;  // slack for cell rounding
    if (beyond_m > radius_m_) break;
    if (scratch.size() >= k && beyond_m > 0.0f) {
      std::nth_element(scratch.begin(), scratch.begin() + static_cast<std::ptrdiff_t>(k - 1), scratch.end(), nearer);
      if (scratch[k - 1].d2 < beyond_m * beyond_m) break;
    }
  }
  const size_t n = std::min(k, scratch.size());
  std::partial_sort(scratch.begin(), scratch.begin() + static_cast<std::ptrdiff_t>(n), scratch.end(), nearer);
  for (size_t i = 0; i < n; ++i) {
    const SnapshotEntry& e = entries_[scratch[i].index];
    MmoAoiEntry entry{};
    entry.entity_id = e.id;
    entry.x_m = e.x_m;
    entry.y_m = e.y_m;
    entry.distance_m = std::sqrt(scratch[i].d2);
    entry.kind = e.kind;
    out[i] = entry;
  }
  return n;
}

}  // namespace mmo::baseline
