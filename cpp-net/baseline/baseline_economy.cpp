// baseline_economy.cpp: see baseline_economy.hpp. The decision logic follows
// rust-core/src/economy.rs (Economy::execute and settle) step by step.
#include "baseline/baseline_economy.hpp"

#include <algorithm>
#include <functional>
#include <vector>

namespace mmo::baseline {
namespace {

enum class Recall { kDecided, kTooOld, kNew };

// What the wallet remembers about `transaction_id` (economy.rs Wallet::recall).
Recall recall(const Wallet& w, uint64_t transaction_id, Decision& decided) {
  if (w.highest_transaction >= kDedupWindow && transaction_id <= w.highest_transaction - kDedupWindow) return Recall::kTooOld;
  const Decision& d = w.decisions[transaction_id % kDedupWindow];
  if (d.transaction_id != transaction_id) return Recall::kNew;
  decided = d;
  return Recall::kDecided;
}

// Remembers a decision (economy.rs Wallet::record): refusals are remembered too, with gold 0.
void record(Wallet& w, uint64_t transaction_id, uint8_t status) {
  const uint64_t gold_after = status == MMO_ECONOMY_STATUS_APPLIED ? w.gold : 0;
  w.decisions[transaction_id % kDedupWindow] = Decision{transaction_id, gold_after, status};
  w.highest_transaction = std::max(w.highest_transaction, transaction_id);
}

// Minted and sunk amounts of one applied operation, for the initiator's stripe totals.
struct Flow {
  uint64_t minted_gold = 0;
  uint64_t minted_items = 0;
  uint64_t sunk_gold = 0;
  uint64_t sunk_items = 0;
};

// a + b, or nothing on u64 overflow (Rust's checked_add).
std::optional<uint64_t> checked_add(uint64_t a, uint64_t b) {
  uint64_t sum = 0;
  if (__builtin_add_overflow(a, b, &sum)) return std::nullopt;
  return sum;
}

// Validates `op` and, if legal, applies it to the wallets: every write or none
// (economy.rs settle, check for check). `them` is the counterparty's open wallet, if any;
// `wanted_them` whether the counterparty named a wallet other than the initiator's.
uint8_t settle(const MmoEconomyOp& op, Wallet& me, Wallet* them, Counterparty::Kind counterparty, bool wanted_them, Flow& flow) {
  const uint8_t kind = op.kind;
  if (kind < MMO_ECONOMY_KIND_TRANSFER || kind > MMO_ECONOMY_KIND_SPEND) return MMO_ECONOMY_STATUS_BAD_KIND;
  if (op.gold < 0 || op.item_count < 0) return MMO_ECONOMY_STATUS_INVALID_AMOUNT;
  if (op.gold > kAmountMax || int64_t{op.item_count} > kAmountMax) return MMO_ECONOMY_STATUS_OVERFLOW;
  const auto gold = static_cast<uint64_t>(op.gold);
  const auto count = static_cast<uint64_t>(op.item_count);
  const size_t item = op.item_kind;
  if (count > 0 && item >= kItemKinds) return MMO_ECONOMY_STATUS_UNKNOWN_ITEM;
  const bool needs_both = kind == MMO_ECONOMY_KIND_TRADE;
  const bool nothing_moves = gold == 0 && count == 0;
  const bool half_a_trade = needs_both && (gold == 0 || count == 0);
  if (nothing_moves || half_a_trade) return MMO_ECONOMY_STATUS_INVALID_AMOUNT;

  // The counterparty's wallet, or why there is none.
  Wallet* other = nullptr;
  const auto resolve = [&]() -> uint8_t {
    switch (counterparty) {
      case Counterparty::Kind::kAbsent:
      case Counterparty::Kind::kUnknown: return MMO_ECONOMY_STATUS_UNKNOWN_PLAYER;
      case Counterparty::Kind::kInitiator: return MMO_ECONOMY_STATUS_SELF_TRADE;
      case Counterparty::Kind::kWallet:
        if (!wanted_them) return MMO_ECONOMY_STATUS_SELF_TRADE;
        if (them == nullptr) return MMO_ECONOMY_STATUS_PLAYER_DEPARTED;
        other = them;
        return MMO_ECONOMY_STATUS_APPLIED;
    }
    return MMO_ECONOMY_STATUS_UNKNOWN_PLAYER;
  };
  const auto item_of = [&](const Wallet& w) { return count > 0 ? w.items[item] : uint64_t{0}; };

  switch (kind) {
    case MMO_ECONOMY_KIND_TRANSFER: {
      if (const uint8_t s = resolve(); s != MMO_ECONOMY_STATUS_APPLIED) return s;
      if (me.gold < gold) return MMO_ECONOMY_STATUS_INSUFFICIENT_FUNDS;
      if (item_of(me) < count) return MMO_ECONOMY_STATUS_INSUFFICIENT_ITEMS;
      const auto their_gold = checked_add(other->gold, gold);
      if (!their_gold) return MMO_ECONOMY_STATUS_OVERFLOW;
      const auto their_items = checked_add(item_of(*other), count);
      if (!their_items) return MMO_ECONOMY_STATUS_OVERFLOW;
      me.gold -= gold;
      other->gold = *their_gold;
      if (count > 0) {
        me.items[item] -= count;
        other->items[item] = *their_items;
      }
      return MMO_ECONOMY_STATUS_APPLIED;
    }
    case MMO_ECONOMY_KIND_TRADE: {
      if (const uint8_t s = resolve(); s != MMO_ECONOMY_STATUS_APPLIED) return s;
      if (me.gold < gold) return MMO_ECONOMY_STATUS_INSUFFICIENT_FUNDS;
      if (other->items[item] < count) return MMO_ECONOMY_STATUS_INSUFFICIENT_ITEMS;
      const auto their_gold = checked_add(other->gold, gold);
      if (!their_gold) return MMO_ECONOMY_STATUS_OVERFLOW;
      const auto my_items = checked_add(me.items[item], count);
      if (!my_items) return MMO_ECONOMY_STATUS_OVERFLOW;
      me.gold -= gold;
      other->gold = *their_gold;
      other->items[item] -= count;
      me.items[item] = *my_items;
      return MMO_ECONOMY_STATUS_APPLIED;
    }
    case MMO_ECONOMY_KIND_LOOT_PICKUP: {
      const auto my_gold = checked_add(me.gold, gold);
      if (!my_gold) return MMO_ECONOMY_STATUS_OVERFLOW;
      const auto my_items = checked_add(item_of(me), count);
      if (!my_items) return MMO_ECONOMY_STATUS_OVERFLOW;
      me.gold = *my_gold;
      if (count > 0) me.items[item] = *my_items;
      flow.minted_gold = gold;
      flow.minted_items = count;
      return MMO_ECONOMY_STATUS_APPLIED;
    }
    default: {  // MMO_ECONOMY_KIND_SPEND
      if (me.gold < gold) return MMO_ECONOMY_STATUS_INSUFFICIENT_FUNDS;
      if (item_of(me) < count) return MMO_ECONOMY_STATUS_INSUFFICIENT_ITEMS;
      me.gold -= gold;
      if (count > 0) me.items[item] -= count;
      flow.sunk_gold = gold;
      flow.sunk_items = count;
      return MMO_ECONOMY_STATUS_APPLIED;
    }
  }
}

void add_wallet(Holdings& h, const Wallet& w) {
  h.gold += w.gold;
  for (size_t k = 0; k < kItemKinds; ++k) h.items[k] += w.items[k];
}

void add_holdings(Holdings& into, const Holdings& from) {
  into.gold += from.gold;
  for (size_t k = 0; k < kItemKinds; ++k) into.items[k] += from.items[k];
}

}  // namespace

bool Audit::conserved() const {
  const auto ok = [](Total live, Total gone, Total minted, Total sunk) { return minted >= sunk && live + gone == minted - sunk; };
  if (!ok(live.gold, departed.gold, minted.gold, sunk.gold)) return false;
  for (size_t k = 0; k < kItemKinds; ++k) {
    if (!ok(live.items[k], departed.items[k], minted.items[k], sunk.items[k])) return false;
  }
  return true;
}

WalletPtr Economy::open_wallet(uint64_t owner, uint64_t starting_gold) {
  const size_t index = std::hash<uint64_t>{}(owner) % kEconomyStripes;
  auto wallet = std::make_shared<Wallet>(owner, index, starting_gold);
  Stripe& stripe = stripes_[index];
  std::lock_guard lock(stripe.mutex);
  stripe.open.emplace(owner, wallet);
  stripe.minted.gold += starting_gold;
  return wallet;
}

bool Economy::close_wallet(const WalletPtr& wallet) {
  Stripe& stripe = stripes_[wallet->stripe];
  std::lock_guard lock(stripe.mutex);
  if (!wallet->open) return false;
  add_wallet(stripe.departed, *wallet);
  wallet->open = false;
  wallet->gold = 0;
  wallet->items.fill(0);
  stripe.open.erase(wallet->owner);
  return true;
}

std::optional<Balance> Economy::balance(const Wallet& wallet) const {
  const Stripe& stripe = stripes_[wallet.stripe];
  std::lock_guard lock(stripe.mutex);
  if (!wallet.open) return std::nullopt;
  return Balance{wallet.gold, wallet.items};
}

Outcome Economy::execute(const MmoEconomyOp& op, const WalletPtr& initiator, const Counterparty& counterparty, LockWaits& waits) {
  if (op.transaction_id == 0) return Outcome{MMO_ECONOMY_STATUS_INVALID_TRANSACTION, false, 0};
  Wallet& me = *initiator;
  // The counterparty's wallet when it is another one (economy.rs `other`).
  Wallet* other = counterparty.kind == Counterparty::Kind::kWallet && counterparty.wallet && counterparty.wallet != initiator
                      ? counterparty.wallet.get()
                      : nullptr;
  // Lock the one or two stripes in ascending index, so opposite trades cannot deadlock.
  const size_t mine = me.stripe;
  const size_t theirs = other != nullptr ? other->stripe : mine;
  std::unique_lock first = waits.unique(stripes_[std::min(mine, theirs)].mutex);
  std::unique_lock<std::mutex> second;
  if (theirs != mine) second = waits.unique(stripes_[std::max(mine, theirs)].mutex);

  if (!me.open) return Outcome{MMO_ECONOMY_STATUS_PLAYER_DEPARTED, false, 0};
  Decision decided;
  switch (recall(me, op.transaction_id, decided)) {
    case Recall::kDecided: return Outcome{decided.status, true, decided.gold_after};
    case Recall::kTooOld: return Outcome{MMO_ECONOMY_STATUS_TRANSACTION_TOO_OLD, false, 0};
    case Recall::kNew: break;
  }
  Wallet* them = other != nullptr && other->open ? other : nullptr;
  Flow flow;
  const uint8_t status = settle(op, me, them, counterparty.kind, other != nullptr, flow);
  if (status == MMO_ECONOMY_STATUS_APPLIED) {
    Stripe& totals = stripes_[mine];
    totals.minted.gold += flow.minted_gold;
    totals.sunk.gold += flow.sunk_gold;
    if (flow.minted_items > 0) totals.minted.items[op.item_kind] += flow.minted_items;
    if (flow.sunk_items > 0) totals.sunk.items[op.item_kind] += flow.sunk_items;
  }
  record(me, op.transaction_id, status);
  return Outcome{status, false, status == MMO_ECONOMY_STATUS_APPLIED ? me.gold : 0};
}

Audit Economy::audit() const {
  std::vector<std::unique_lock<std::mutex>> locks;
  locks.reserve(kEconomyStripes);
  for (const Stripe& stripe : stripes_) locks.emplace_back(stripe.mutex);
  Audit audit;
  for (const Stripe& stripe : stripes_) {
    for (const auto& [owner, wallet] : stripe.open) {
      add_wallet(audit.live, *wallet);
      ++audit.open_wallets;
    }
    add_holdings(audit.minted, stripe.minted);
    add_holdings(audit.minted_by_loot, stripe.minted_by_loot);
    add_holdings(audit.sunk, stripe.sunk);
    add_holdings(audit.departed, stripe.departed);
  }
  return audit;
}

}  // namespace mmo::baseline
