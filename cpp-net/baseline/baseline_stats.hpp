// baseline_stats.hpp: the baseline engine's counters, one std::atomic<uint64_t> per MmoStats
// field, in one block.
//
// The conventional layout: every counter is a relaxed atomic in one shared array, so threads
// that count different things can still write the same cache line (the Rust core stripes its
// counters per thread to avoid that; this is the "before"). Move batches tally on the stack
// and add once per batch, as any reviewed hot path would.
//
// Counted in exactly the situations the Rust core counts (rust-core/src/engine.rs, stats.rs).
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>

#include "engine/stats_fields.hpp"
#include "mmo_core.h"

namespace mmo::baseline {

// One counter per MmoStats field, in declaration order, from the one list of them
// (engine/stats_fields.hpp); its size assertion catches a field missing from the list.
enum class Counter : size_t {
#define MMO_BASELINE_COUNTER_ENUM(name) name,
  MMO_STATS_FIELDS(MMO_BASELINE_COUNTER_ENUM)
#undef MMO_BASELINE_COUNTER_ENUM
      kCount
};

inline constexpr size_t kCounterCount = static_cast<size_t>(Counter::kCount);
static_assert(sizeof(MmoStats) == kCounterCount * sizeof(uint64_t), "MmoStats has a field this list lacks (or the reverse)");

class Stats {
 public:
  // Adds `n` (relaxed: each counter is independent; readers get a value it held at some
  // instant, as with the Rust core).
  void add(Counter c, uint64_t n) {
    if (n != 0) counters_[static_cast<size_t>(c)].fetch_add(n, std::memory_order_relaxed);
  }
  void bump(Counter c) { add(c, 1); }

  MmoStats snapshot() const {
    MmoStats out{};
#define MMO_BASELINE_COUNTER_READ(name) out.name = counters_[static_cast<size_t>(Counter::name)].load(std::memory_order_relaxed);
    MMO_STATS_FIELDS(MMO_BASELINE_COUNTER_READ)
#undef MMO_BASELINE_COUNTER_READ
    return out;
  }

 private:
  std::array<std::atomic<uint64_t>, kCounterCount> counters_{};
};

// The counter for a move rejection reason (MmoRejectReason 1..=5, in MmoStats order).
inline Counter counter_for_reject(uint8_t reason) {
  static_assert(static_cast<size_t>(Counter::move_rejected_dead) - static_cast<size_t>(Counter::move_rejected_unknown_player) ==
                MMO_REJECT_REASON_DEAD - MMO_REJECT_REASON_UNKNOWN_PLAYER);
  return static_cast<Counter>(static_cast<size_t>(Counter::move_rejected_unknown_player) + (reason - MMO_REJECT_REASON_UNKNOWN_PLAYER));
}

// The counter for an economy status decided now (not a duplicate), as stats.rs
// Counter::for_economy.
inline Counter counter_for_economy(uint8_t status) {
  switch (status) {
    case MMO_ECONOMY_STATUS_APPLIED: return Counter::economy_applied;
    case MMO_ECONOMY_STATUS_INVALID_AMOUNT: return Counter::economy_invalid_amount;
    case MMO_ECONOMY_STATUS_OVERFLOW: return Counter::economy_overflow;
    case MMO_ECONOMY_STATUS_SELF_TRADE: return Counter::economy_self_trade;
    case MMO_ECONOMY_STATUS_UNKNOWN_ITEM: return Counter::economy_unknown_item;
    case MMO_ECONOMY_STATUS_INSUFFICIENT_FUNDS: return Counter::economy_insufficient_funds;
    case MMO_ECONOMY_STATUS_INSUFFICIENT_ITEMS: return Counter::economy_insufficient_items;
    case MMO_ECONOMY_STATUS_UNKNOWN_PLAYER: return Counter::economy_unknown_player;
    case MMO_ECONOMY_STATUS_PLAYER_DEPARTED: return Counter::economy_player_departed;
    case MMO_ECONOMY_STATUS_WRONG_SESSION: return Counter::economy_wrong_session;
    case MMO_ECONOMY_STATUS_TRANSACTION_TOO_OLD: return Counter::economy_too_old;
    case MMO_ECONOMY_STATUS_BAD_KIND: return Counter::economy_bad_kind;
    case MMO_ECONOMY_STATUS_OFFER_PENDING: return Counter::economy_offer_pending;
    case MMO_ECONOMY_STATUS_NO_SUCH_OFFER: return Counter::economy_no_such_offer;
    case MMO_ECONOMY_STATUS_NOT_YOUR_OFFER: return Counter::economy_not_your_offer;
    case MMO_ECONOMY_STATUS_OFFER_EXPIRED: return Counter::economy_offer_expired;
    case MMO_ECONOMY_STATUS_KIND_RETIRED: return Counter::economy_kind_retired;
    default: return Counter::economy_invalid_transaction;
  }
}

}  // namespace mmo::baseline
