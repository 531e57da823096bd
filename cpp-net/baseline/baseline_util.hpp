// baseline_util.hpp: small helpers that reproduce Rust's arithmetic where C++ differs, and the
// admission gate. Shared by the baseline engine's files.
#pragma once

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <limits>
#include <mutex>
#include <shared_mutex>
#include <type_traits>

namespace mmo::baseline {

// Rust's `v as u32` / `v as u64` for a float: NaN and negatives give 0, values past the type's
// maximum give the maximum, the rest truncate toward zero. (A plain C++ cast of an
// out-of-range float is undefined.)
template <typename Int>
inline Int saturating_from(double v) {
  static_assert(std::is_unsigned_v<Int>);
  if (!(v > 0.0)) return 0;
  // 2^bits, exact as a double for both widths.
  if (v >= 2.0 * static_cast<double>(Int{1} << (std::numeric_limits<Int>::digits - 1))) return std::numeric_limits<Int>::max();
  return static_cast<Int>(v);
}
inline uint32_t saturating_u32(double v) { return saturating_from<uint32_t>(v); }
inline uint64_t saturating_u64(double v) { return saturating_from<uint64_t>(v); }

// Rust's a.saturating_add(b) for u32.
inline uint32_t saturating_add(uint32_t a, uint32_t b) {
  uint32_t sum = 0;
  return __builtin_add_overflow(a, b, &sum) ? std::numeric_limits<uint32_t>::max() : sum;
}

// Rust's a.saturating_mul(b) and a.saturating_add(b) for u64.
inline uint64_t saturating_mul_u64(uint64_t a, uint64_t b) {
  uint64_t product = 0;
  return __builtin_mul_overflow(a, b, &product) ? std::numeric_limits<uint64_t>::max() : product;
}
inline uint64_t saturating_add_u64(uint64_t a, uint64_t b) {
  uint64_t sum = 0;
  return __builtin_add_overflow(a, b, &sum) ? std::numeric_limits<uint64_t>::max() : sum;
}

// combat.rs SplitMix64: spawn positions and loot rolls, bit for bit.
class SplitMix64 {
 public:
  explicit SplitMix64(uint64_t state) : state_(state) {}
  uint64_t next_u64() {
    state_ += 0x9E3779B97F4A7C15ULL;
    uint64_t z = state_;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
  }
  // Uniform in [0, 1): the top 24 bits, scaled exactly.
  float unit() { return static_cast<float>(next_u64() >> 40) * (1.0f / 16777216.0f); }

 private:
  uint64_t state_;
};

// Rust's f32::max / f32::min (NaN-ignoring, like std::fmax / std::fmin).
inline float rs_max(float a, float b) { return std::fmax(a, b); }
inline float rs_min(float a, float b) { return std::fmin(a, b); }

// Rust's f32::is_finite.
inline bool finite(float v) { return std::isfinite(v); }

// Takes all `units` of a counted limit or none (capacity.rs CapacityGate::try_acquire): a CAS
// loop, so the count never passes `limit`, not even for an instant.
inline bool try_acquire(std::atomic<uint32_t>& in_use, uint32_t units, uint32_t limit) {
  uint32_t current = in_use.load(std::memory_order_relaxed);
  for (;;) {
    uint32_t next = 0;
    if (__builtin_add_overflow(current, units, &next) || next > limit) return false;
    if (in_use.compare_exchange_weak(current, next, std::memory_order_acq_rel, std::memory_order_relaxed)) return true;
  }
}

// Waits on one kind of lock, tallied per batch and added to the lock_* counters once: the
// same measurement the Rust core makes (rust-core/src/locks.rs), so the two engines' wait
// figures compare. A lock is tried first; only a held one reads the clock.
struct LockWaits {
  uint64_t contended = 0;
  uint64_t wait_ns = 0;

  template <class Lock>
  void acquire(Lock& lock) {
    if (lock.try_lock()) return;
    const auto since = std::chrono::steady_clock::now();
    lock.lock();
    contended += 1;
    wait_ns += static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - since).count());
  }
  // An exclusive lock on `m`, counting the wait if it was held.
  template <class M>
  std::unique_lock<M> unique(M& m) {
    std::unique_lock<M> lock(m, std::defer_lock);
    acquire(lock);
    return lock;
  }
  // A shared lock on `m`, counting the wait if a writer held it.
  template <class M>
  std::shared_lock<M> shared(M& m) {
    std::shared_lock<M> lock(m, std::defer_lock);
    acquire(lock);
    return lock;
  }
};

}  // namespace mmo::baseline
