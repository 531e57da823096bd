// baseline_snapshot.hpp: the world as of one tick, the conventional way.
//
// The Rust core publishes an immutable snapshot per tick for the area of interest
// (rust-core/src/snapshot.rs) and answers "the aoi_k nearest entities within aoi_radius_m, as
// of the last tick, ties by id". The baseline gives the same answers the way a C++ team
// usually would: at the tick it copies every entity out of the grid under the grid's stripe
// locks into a fresh std::vector on the heap, indexes it with std::unordered_maps (cell ->
// entry indexes, player id -> entry), and publishes it as a std::shared_ptr<const
// WorldSnapshot> under a mutex; a reader copies the shared_ptr under it (an atomic reference
// count) and queries it.
//
// The query is written competently: it visits snapshot cells in rings around the viewer and
// stops once the ring can no longer hold anything nearer than the k-th candidate (or lies
// beyond the radius), collects candidates into a scratch vector the caller keeps (reserved once,
// reused), and sorts only the first k with std::partial_sort by (squared distance, id).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <unordered_map>
#include <vector>

#include "mmo_core.h"

namespace mmo::baseline {

struct SnapshotEntry {
  uint64_t id = 0;
  float x_m = 0.0f;
  float y_m = 0.0f;
  uint8_t kind = 0;
};

// A candidate during a query: squared distance, id, entry index.
struct AoiCandidate {
  float d2 = 0.0f;
  uint64_t id = 0;
  uint32_t index = 0;
};

class WorldSnapshot {
 public:
  // Indexes `entries` (every entity at the tick) by cells of `cell_m` over a world of
  // `world_size_m`.
  WorldSnapshot(uint32_t tick, uint64_t now_ms, float world_size_m, float cell_m, float radius_m, std::vector<SnapshotEntry> entries);

  uint32_t tick() const { return tick_; }
  uint64_t now_ms() const { return now_ms_; }
  size_t size() const { return entries_.size(); }
  // The entry of player `id`, or nullptr if the snapshot does not hold it.
  const SnapshotEntry* find(uint64_t id) const;
  // Writes the out.size() entities nearest `viewer` within the radius (not the viewer), nearest
  // first, ties by id; returns how many. `scratch` is the caller's reusable candidate buffer.
  size_t nearest(const SnapshotEntry& viewer, std::span<MmoAoiEntry> out, std::vector<AoiCandidate>& scratch) const;

 private:
  uint32_t coord(float v) const;
  uint32_t tick_;
  uint64_t now_ms_;
  float cell_m_;
  float inv_cell_;
  uint32_t side_;
  float radius_m_;
  std::vector<SnapshotEntry> entries_;
  std::unordered_map<uint64_t, uint32_t> by_id_;                 // player id -> entry
  std::unordered_map<uint32_t, std::vector<uint32_t>> cells_;  // cell key -> entries
};

}  // namespace mmo::baseline
