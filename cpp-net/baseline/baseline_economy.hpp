// baseline_economy.hpp: wallets, reliable economy operations and conservation, the
// conventional way: each wallet is a std::shared_ptr<Wallet> held by its player; wallets are
// spread over 64 stripes, each a std::mutex with the stripe's open wallets (an
// std::unordered_map) and its minted / sunk / departed totals.
//
// Semantics are rust-core/src/economy.rs's, decision for decision: the same validation order,
// the same statuses, the same de-duplication window (the last DEDUP_WINDOW = 32 transaction ids
// per wallet, a ring indexed by id % 32, and "too old" at or below highest - 32), the same
// recorded gold, starting gold minted at open, departed holdings at close, and the audit's
// conservation rule live + departed == minted - sunk for gold and every item kind.
//
// Concurrency contract: an operation locks the initiator's stripe and, if different, the
// counterparty's, always in ascending stripe index, checks, writes both wallets and the
// stripe totals, and records its decision before unlocking; nobody sees half of it. The audit
// locks all 64 stripes in ascending order. Wallet fields are guarded by their stripe's mutex.
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <unordered_map>

#include "baseline/baseline_util.hpp"
#include "mmo_core.h"

namespace mmo::baseline {

inline constexpr size_t kEconomyStripes = 64;
inline constexpr size_t kDedupWindow = 32;          // economy.rs DEDUP_WINDOW
inline constexpr int64_t kAmountMax = int64_t{1} << 48;  // config.rs AMOUNT_MAX
inline constexpr size_t kItemKinds = 16;             // config.rs ITEM_KINDS
static_assert(sizeof(MmoPlayerView::items) / sizeof(uint64_t) == kItemKinds);

// Exact totals: a u128 cannot overflow from u64 balances (as the Rust core's Holdings).
using Total = unsigned __int128;

struct Holdings {
  Total gold = 0;
  std::array<Total, kItemKinds> items{};
};

struct Balance {
  uint64_t gold = 0;
  std::array<uint64_t, kItemKinds> items{};
};

// One remembered decision: the transaction id, the status, and the gold left if applied.
struct Decision {
  uint64_t transaction_id = 0;
  uint64_t gold_after = 0;
  uint8_t status = 0;
};

struct Wallet {
  Wallet(uint64_t owner_, size_t stripe_, uint64_t gold_) : owner(owner_), stripe(stripe_), gold(gold_) {}
  const uint64_t owner;  // the player id
  const size_t stripe;   // which stripe's mutex guards the fields below
  // Guarded by the stripe's mutex:
  bool open = true;
  uint64_t gold;
  std::array<uint64_t, kItemKinds> items{};
  uint64_t highest_transaction = 0;
  std::array<Decision, kDedupWindow> decisions{};
};

using WalletPtr = std::shared_ptr<Wallet>;

// The other side of an operation, as the engine resolved it from counterparty_id.
struct Counterparty {
  enum class Kind { kAbsent, kInitiator, kUnknown, kWallet };
  Kind kind = Kind::kAbsent;
  WalletPtr wallet;  // for kWallet
};

struct Outcome {
  uint8_t status = MMO_ECONOMY_STATUS_APPLIED;
  bool duplicate = false;
  uint64_t gold_after = 0;
};

struct Audit {
  Holdings live;
  Holdings departed;
  Holdings minted;
  Holdings sunk;
  uint32_t open_wallets = 0;
  bool conserved() const;
};

class Economy {
 public:
  // Opens a wallet for `owner` holding `starting_gold` (minted).
  WalletPtr open_wallet(uint64_t owner, uint64_t starting_gold);
  // Moves a wallet's holdings to its stripe's departed totals and closes it; false if closed.
  bool close_wallet(const WalletPtr& wallet);
  std::optional<Balance> balance(const Wallet& wallet) const;
  // Decides one operation whose player id and session the caller has checked.
  // Waits on the stripe locks are added to `waits`.
  Outcome execute(const MmoEconomyOp& op, const WalletPtr& initiator, const Counterparty& counterparty, LockWaits& waits);
  // Locks every stripe (ascending) and reads the whole economy at one instant.
  Audit audit() const;

 private:
  struct alignas(64) Stripe {
    mutable std::mutex mutex;
    // Guarded by mutex:
    std::unordered_map<uint64_t, WalletPtr> open;  // owner id -> wallet
    Holdings minted;
    Holdings sunk;
    Holdings departed;
  };
  std::array<Stripe, kEconomyStripes> stripes_;
};

}  // namespace mmo::baseline
