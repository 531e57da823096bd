// aoi_order.hpp: the order in which a worker visits its sessions during one area-of-interest
// round: by where their players stand, along a Z-order curve over squares of kSquareM.
//
// Why: each session's area of interest is a nearest-K query on the engine's world snapshot.
// Visited in pool order (the order the players joined in), consecutive queries read unrelated
// parts of the snapshot, and between chunks the worker's kernel work (recvmmsg, sendmmsg)
// pushes the snapshot out of the core's caches. Visited by position, neighbours come one
// after another and read the same snapshot cells while they are still cached. In the
// 1,000-bot raid the Rust core's area-of-interest samples fell by 18% (perf, three
// interleaved pairs; README, "Rust core vs C++ baseline").
//
// The positions are the engine's (Session::x_m, y_m: where the engine last put the player),
// never what a client claims, and they decide only the order of the visits, never what a
// query answers. Ordering is a pass over the pool and a sort of at most capacity() 8-byte keys
// into a buffer sized once, so a round allocates nothing.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "net/admission.hpp"

namespace mmo::net {

class AoiRoundOrder {
 public:
  // Side of the squares the curve visits in turn, metres: a little under the Rust core's 5 m
  // snapshot cells, so players in one cell stay together.
  static constexpr float kSquareM = 4.0f;
  // Squares per axis the curve tells apart (16 bits each: 262 km at 4 m); beyond, positions
  // share the last square.
  static constexpr uint32_t kSquaresMax = 1u << 16;

  // Room for a table of `capacity` sessions.
  explicit AoiRoundOrder(size_t capacity) : keys_(capacity) {}

  // Orders the live sessions of `sessions` (whose capacity() must be at most this order's):
  // by Z-order of their squares, ties by pool slot.
  void order(const SessionTable& sessions) {
    const size_t slots = std::min(sessions.capacity(), keys_.size());
    size_t n = 0;
    for (size_t i = 0; i < slots; ++i) {
      if (const Session* s = sessions.at(i)) {
        const uint64_t z = z_order(square_of(s->x_m), square_of(s->y_m));
        keys_[n++] = (z << 32) | static_cast<uint32_t>(i);
      }
    }
    std::sort(keys_.begin(), keys_.begin() + static_cast<std::ptrdiff_t>(n));
    size_ = n;
  }

  // Sessions in the order.
  size_t size() const { return size_; }
  // The pool slot of the i-th session to visit (i < size()). The session may have left since
  // the order was made (SessionTable::at then answers nullptr) or its slot been reused.
  uint32_t slot(size_t i) const { return static_cast<uint32_t>(keys_[i]); }

  // The square along one axis of coordinate `v_m`: 0 for negatives and NaN, the last square
  // for anything beyond the curve.
  static uint32_t square_of(float v_m) {
    if (!(v_m > 0.0f)) return 0;
    const float square = v_m / kSquareM;
    if (!(square < static_cast<float>(kSquaresMax - 1))) return kSquaresMax - 1;
    return static_cast<uint32_t>(square);
  }

  // The Z-order (Morton) code of square (x, y): their bits interleaved, x's in the even places.
  static uint32_t z_order(uint32_t x, uint32_t y) { return spread(x) | (spread(y) << 1); }

 private:
  // The low 16 bits of `v` moved to the even bit places.
  static uint32_t spread(uint32_t v) {
    v &= 0xFFFF;
    v = (v | (v << 8)) & 0x00FF00FF;
    v = (v | (v << 4)) & 0x0F0F0F0F;
    v = (v | (v << 2)) & 0x33333333;
    v = (v | (v << 1)) & 0x55555555;
    return v;
  }

  // (Z-order code << 32) | pool slot, of the sessions live when the round was ordered; the
  // first size_ are this round's.
  std::vector<uint64_t> keys_;
  size_t size_ = 0;
};

}  // namespace mmo::net
