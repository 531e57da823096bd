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

// Gold and one item stack, validated (economy.rs Stack).
struct Stack {
  uint64_t gold = 0;
  size_t item_kind = 0;
  uint64_t item_count = 0;
  bool operator==(const Stack&) const = default;
};

struct Wallet;

// A wallet's one open trade offer (economy.rs OpenOffer); `give` is in escrow.
struct OpenOffer {
  uint64_t offer_id = 0;
  std::weak_ptr<Wallet> taker;
  uint64_t taker_id = 0;
  Stack give;
  Stack want;
  uint64_t expires_ms = 0;
};

struct Wallet {
  Wallet(uint64_t owner_, uint64_t account_, size_t stripe_, uint64_t gold_) : owner(owner_), account(account_), stripe(stripe_), gold(gold_) {}
  const uint64_t owner;    // the id of the player whose join opened it (its key in its stripe)
  const uint64_t account;  // the account it belongs to for good; 0: one session's wallet
  // Who a raid drop credited to this wallet belongs to (economy.rs WalletHandle::loot_owner):
  // the id of the join that opened it, never reused, so an account's drops survive its
  // reconnects and a session wallet's drops are that session's alone.
  uint64_t loot_owner() const { return owner; }
  const size_t stripe;   // which stripe's mutex guards the fields below
  // Guarded by the stripe's mutex:
  bool open = true;
  uint64_t gold;
  std::array<uint64_t, kItemKinds> items{};
  uint64_t highest_transaction = 0;
  std::array<Decision, kDedupWindow> decisions{};
  std::optional<OpenOffer> offer;  // its open trade offer, escrow included
  uint64_t last_grant = 0;         // the highest admin grant id applied
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

// What one loot drop holds (loot.rs LootContents).
struct LootContents {
  uint64_t gold = 0;
  uint16_t item_kind = 0;
  uint32_t item_count = 0;
};

// How an answer closed an offer (economy.rs TradeClose).
enum class TradeClose { kNone, kAccepted, kDeclined, kCancelled, kExpired };

// Economy::credit_loot's answer (economy.rs LootCredit / LootCreditError).
enum class LootCredit { kCredited, kTakenAlready, kDeparted, kFull };

struct Audit {
  Holdings live;
  Holdings departed;
  Holdings minted;
  Holdings minted_by_loot;   // the part of `minted` loot claims created
  Holdings minted_by_grant;  // the part of `minted` admin grants created
  Holdings escrowed;         // held by open trade offers
  uint32_t open_offers = 0;
  Holdings sunk;
  uint32_t open_wallets = 0;
  bool conserved() const;
};

// Economy::open_account's answer.
enum class AccountOpen { kCreated, kResumed, kInSession };

class Economy {
 public:
  // Opens a wallet for `owner` holding `starting_gold` (minted): for one session, or (from
  // open_account) for good, as `account`'s.
  WalletPtr open_wallet(uint64_t owner, uint64_t starting_gold, uint64_t account = 0);
  // economy.rs open_account: the wallet of `account` for a joining session (player `owner`):
  // the account's own, resumed, or a new one with `starting_gold` made by its first join;
  // kInSession (and no wallet) while another session holds it. Account 0: a wallet for this
  // session only. `out` is written unless kInSession.
  AccountOpen open_account(uint64_t account, uint64_t owner, uint64_t starting_gold, WalletPtr& out);
  // economy.rs release: the session using `wallet` ended. An account's wallet stays, unbound,
  // its open offer too (until it times out), its decisions with it; a session's own wallet
  // closes (close_wallet). False if it was not open.
  bool release(const WalletPtr& wallet);
  // Moves a session wallet's holdings to its stripe's departed totals and closes it; false if
  // closed, or if it belongs to an account (those never close: see release).
  bool close_wallet(const WalletPtr& wallet);
  std::optional<Balance> balance(const Wallet& wallet) const;
  // Decides one operation whose player id and session the caller has checked.
  // Waits on the stripe locks are added to `waits`.
  Outcome execute(const MmoEconomyOp& op, const WalletPtr& initiator, const Counterparty& counterparty, LockWaits& waits);
  // economy.rs credit_loot: under the wallet's stripe lock, once the wallet is known to have
  // room, `take` (the claim's CAS) and the credit happen together; books the loot as minted
  // and as minted by loot. `gold_after` is the wallet's gold afterwards.
  template <typename Take>
  LootCredit credit_loot(const WalletPtr& wallet, const LootContents& loot, Take&& take, LockWaits& waits, uint64_t& gold_after);
  // economy.rs offer: `taker` as the engine resolved it; also says whether it closed the
  // maker's timed-out offer.
  Outcome offer(const MmoTradeOffer& offer, const WalletPtr& maker, const Counterparty& taker, uint64_t now_ms, uint32_t timeout_ms,
                LockWaits& waits, bool& closed_expired);
  // economy.rs answer: `maker` as the engine resolved answer.maker_id.
  Outcome answer(const MmoTradeAnswer& answer, const WalletPtr& me, const Counterparty& maker, uint64_t now_ms, LockWaits& waits,
                 TradeClose& close);
  // economy.rs expire_offers: every offer timed out by now_ms.
  uint32_t expire_offers(uint64_t now_ms, LockWaits& waits);
  // economy.rs grant.
  Outcome grant(const WalletPtr& wallet, uint64_t grant_id, const MmoTradeStack& stack, LockWaits& waits);
  // Locks every stripe (ascending) and reads the whole economy at one instant.
  Audit audit() const;

 private:
  struct alignas(64) Stripe {
    mutable std::mutex mutex;
    // Guarded by mutex:
    std::unordered_map<uint64_t, WalletPtr> open;  // owner id -> wallet
    Holdings minted;
    Holdings minted_by_loot;
    Holdings minted_by_grant;
    Holdings sunk;
    Holdings departed;
    uint32_t open_offers = 0;             // wallets of this stripe with an open offer
    uint64_t next_expiry_ms = UINT64_MAX;  // no open offer here times out before this
  };
  std::array<Stripe, kEconomyStripes> stripes_;
  // The account index (economy.rs `accounts`), one mutex, taken at joins and leaves only:
  // account -> its wallet and whether a session holds it.
  struct AccountEntry {
    WalletPtr wallet;
    bool bound = false;
  };
  std::mutex accounts_mutex_;
  std::unordered_map<uint64_t, AccountEntry> accounts_;  // guarded by accounts_mutex_
};

template <typename Take>
LootCredit Economy::credit_loot(const WalletPtr& wallet, const LootContents& loot, Take&& take, LockWaits& waits, uint64_t& gold_after) {
  Stripe& stripe = stripes_[wallet->stripe];
  const auto lock = waits.unique(stripe.mutex);
  if (loot.item_count > 0 && loot.item_kind >= kItemKinds) return LootCredit::kFull;
  if (!wallet->open) return LootCredit::kDeparted;
  uint64_t gold = 0, items = 0;
  if (__builtin_add_overflow(wallet->gold, loot.gold, &gold) ||
      __builtin_add_overflow(wallet->items[loot.item_kind], uint64_t{loot.item_count}, &items)) {
    return LootCredit::kFull;
  }
  if (!take()) {
    gold_after = wallet->gold;
    return LootCredit::kTakenAlready;
  }
  wallet->gold = gold;
  wallet->items[loot.item_kind] = items;
  for (Holdings* h : {&stripe.minted, &stripe.minted_by_loot}) {
    h->gold += loot.gold;
    h->items[loot.item_kind] += loot.item_count;
  }
  gold_after = gold;
  return LootCredit::kCredited;
}

}  // namespace mmo::baseline
