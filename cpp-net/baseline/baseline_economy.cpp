// baseline_economy.cpp: see baseline_economy.hpp. The decision logic follows
// rust-core/src/economy.rs (Economy::execute and settle) step by step.
#include "baseline/baseline_economy.hpp"

#include <algorithm>
#include <functional>
#include <vector>

namespace mmo::baseline {
namespace {

enum class Recall { kDecided, kTooOld, kTooFar, kNew };

// What the wallet remembers about `transaction_id` (economy.rs Wallet::earlier); an id more
// than MMO_TRANSACTION_STEP_MAX above the highest is refused, so no client can move its
// window to the top of the range.
Recall recall(const Wallet& w, uint64_t transaction_id, Decision& decided) {
  if (w.highest_transaction >= kDedupWindow && transaction_id <= w.highest_transaction - kDedupWindow) return Recall::kTooOld;
  if (transaction_id > w.highest_transaction && transaction_id - w.highest_transaction > uint64_t{MMO_TRANSACTION_STEP_MAX}) return Recall::kTooFar;
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

// Sunk amounts of one applied operation, for the initiator's stripe totals (no client request
// mints).
struct Flow {
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
  // economy.rs settle: a client no longer names its loot nor takes another's items unasked.
  if (kind == MMO_ECONOMY_KIND_TRADE || kind == MMO_ECONOMY_KIND_LOOT_PICKUP) return MMO_ECONOMY_STATUS_KIND_RETIRED;
  if (op.gold < 0 || op.item_count < 0) return MMO_ECONOMY_STATUS_INVALID_AMOUNT;
  if (op.gold > kAmountMax || int64_t{op.item_count} > kAmountMax) return MMO_ECONOMY_STATUS_OVERFLOW;
  const auto gold = static_cast<uint64_t>(op.gold);
  const auto count = static_cast<uint64_t>(op.item_count);
  const size_t item = op.item_kind;
  if (count > 0 && item >= kItemKinds) return MMO_ECONOMY_STATUS_UNKNOWN_ITEM;
  if (gold == 0 && count == 0) return MMO_ECONOMY_STATUS_INVALID_AMOUNT;

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

// economy.rs Wallet::has / can_take / take_out / put_in / settle_expired_offer.
uint8_t has(const Wallet& w, const Stack& s) {
  if (w.gold < s.gold) return MMO_ECONOMY_STATUS_INSUFFICIENT_FUNDS;
  if (s.item_count > 0 && w.items[s.item_kind] < s.item_count) return MMO_ECONOMY_STATUS_INSUFFICIENT_ITEMS;
  return MMO_ECONOMY_STATUS_APPLIED;
}
bool can_take(const Wallet& w, const Stack& s) {
  return checked_add(w.gold, s.gold) && (s.item_count == 0 || checked_add(w.items[s.item_kind], s.item_count));
}
void take_out(Wallet& w, const Stack& s) {
  w.gold -= s.gold;
  if (s.item_count > 0) w.items[s.item_kind] -= s.item_count;
}
void put_in(Wallet& w, const Stack& s) {
  w.gold += s.gold;
  if (s.item_count > 0) w.items[s.item_kind] += s.item_count;
}
// economy.rs Wallet::return_escrow: closes the open offer, if any, its escrow back.
bool return_escrow(Wallet& w) {
  if (!w.offer) return false;
  put_in(w, w.offer->give);
  w.offer.reset();
  return true;
}
bool settle_expired_offer(Wallet& w, uint64_t now_ms) { return w.offer && now_ms >= w.offer->expires_ms && return_escrow(w); }
// economy.rs fits_after: `w`, having given `out`, can take `in`.
bool fits_after(const Wallet& w, const Stack& out, const Stack& in) {
  const bool gold_ok = checked_add(w.gold - out.gold, in.gold).has_value();
  const bool same_kind = out.item_count > 0 && out.item_kind == in.item_kind;
  const uint64_t held = w.items[in.item_kind] - (same_kind ? out.item_count : 0);
  return gold_ok && (in.item_count == 0 || checked_add(held, in.item_count));
}
// economy.rs stack_of: 0 and `out`, or the refusal.
uint8_t stack_of(const MmoTradeStack& s, Stack& out) {
  if (s.gold < 0 || s.item_count < 0) return MMO_ECONOMY_STATUS_INVALID_AMOUNT;
  if (s.gold > kAmountMax || int64_t{s.item_count} > kAmountMax) return MMO_ECONOMY_STATUS_OVERFLOW;
  const auto count = static_cast<uint64_t>(s.item_count);
  if (count > 0 && s.item_kind >= kItemKinds) return MMO_ECONOMY_STATUS_UNKNOWN_ITEM;
  out = Stack{static_cast<uint64_t>(s.gold), count > 0 ? size_t{s.item_kind} : 0, count};
  return MMO_ECONOMY_STATUS_APPLIED;
}

}  // namespace

bool Audit::conserved() const {
  const auto ok = [](Total live, Total gone, Total minted, Total sunk) { return minted >= sunk && live + gone == minted - sunk; };
  if (!ok(live.gold + escrowed.gold, departed.gold, minted.gold, sunk.gold)) return false;
  for (size_t k = 0; k < kItemKinds; ++k) {
    if (!ok(live.items[k] + escrowed.items[k], departed.items[k], minted.items[k], sunk.items[k])) return false;
  }
  return true;
}

WalletPtr Economy::open_wallet(uint64_t owner, uint64_t starting_gold, uint64_t account) {
  auto wallet = std::make_shared<Wallet>(owner, account, std::hash<uint64_t>{}(owner) % kEconomyStripes, starting_gold);
  Stripe& stripe = stripes_[wallet->stripe];
  std::lock_guard lock(stripe.mutex);
  stripe.open.emplace(owner, wallet);
  stripe.minted.gold += starting_gold;
  return wallet;
}

AccountOpen Economy::open_account(uint64_t account, uint64_t owner, uint64_t starting_gold, WalletPtr& out) {
  if (account == 0) {
    out = open_wallet(owner, starting_gold);
    return AccountOpen::kCreated;
  }
  // The index is held while the wallet is found or made, so two joins of one account cannot
  // both create it, nor both bind it.
  std::lock_guard index_lock(accounts_mutex_);
  auto [it, inserted] = accounts_.try_emplace(account);
  AccountEntry& entry = it->second;
  if (!inserted) {
    if (entry.bound) return AccountOpen::kInSession;
    entry.bound = true;
    out = entry.wallet;
    return AccountOpen::kResumed;
  }
  out = open_wallet(owner, starting_gold, account);
  entry = AccountEntry{out, true};
  return AccountOpen::kCreated;
}

bool Economy::release(const WalletPtr& wallet) {
  if (wallet->account == 0) return close_wallet(wallet);
  std::lock_guard index_lock(accounts_mutex_);
  const auto it = accounts_.find(wallet->account);
  if (it == accounts_.end() || it->second.wallet != wallet || !it->second.bound) return false;
  it->second.bound = false;
  return true;
}

bool Economy::close_wallet(const WalletPtr& wallet) {
  Stripe& stripe = stripes_[wallet->stripe];
  std::lock_guard lock(stripe.mutex);
  if (!wallet->open || wallet->account != 0) return false;
  // An open offer closes with its maker: the escrow goes back into the wallet first.
  if (return_escrow(*wallet)) --stripe.open_offers;
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
    case Recall::kTooFar: return Outcome{MMO_ECONOMY_STATUS_INVALID_TRANSACTION, false, 0};
    case Recall::kNew: break;
  }
  Wallet* them = other != nullptr && other->open ? other : nullptr;
  Flow flow;
  const uint8_t status = settle(op, me, them, counterparty.kind, other != nullptr, flow);
  if (status == MMO_ECONOMY_STATUS_APPLIED) {
    Stripe& totals = stripes_[mine];
    totals.sunk.gold += flow.sunk_gold;
    if (flow.sunk_items > 0) totals.sunk.items[op.item_kind] += flow.sunk_items;
  }
  record(me, op.transaction_id, status);
  return Outcome{status, false, status == MMO_ECONOMY_STATUS_APPLIED ? me.gold : 0};
}

Outcome Economy::offer(const MmoTradeOffer& offer, const WalletPtr& maker, const Counterparty& taker, uint64_t now_ms,
                       uint32_t timeout_ms, LockWaits& waits, bool& closed_expired) {
  closed_expired = false;
  if (offer.transaction_id == 0) return Outcome{MMO_ECONOMY_STATUS_INVALID_TRANSACTION, false, 0};
  Wallet& w = *maker;
  Stripe& stripe = stripes_[w.stripe];
  const auto lock = waits.unique(stripe.mutex);
  if (!w.open) return Outcome{MMO_ECONOMY_STATUS_PLAYER_DEPARTED, false, 0};
  Decision decided;
  switch (recall(w, offer.transaction_id, decided)) {
    case Recall::kDecided: return Outcome{decided.status, true, decided.gold_after};
    case Recall::kTooOld: return Outcome{MMO_ECONOMY_STATUS_TRANSACTION_TOO_OLD, false, 0};
    case Recall::kTooFar: return Outcome{MMO_ECONOMY_STATUS_INVALID_TRANSACTION, false, 0};
    case Recall::kNew: break;
  }
  closed_expired = settle_expired_offer(w, now_ms);
  if (closed_expired) --stripe.open_offers;
  const auto decide = [&]() -> uint8_t {
    Stack give, want;
    if (const uint8_t s = stack_of(offer.give, give); s != MMO_ECONOMY_STATUS_APPLIED) return s;
    if (const uint8_t s = stack_of(offer.want, want); s != MMO_ECONOMY_STATUS_APPLIED) return s;
    if (give == Stack{} && want == Stack{}) return MMO_ECONOMY_STATUS_INVALID_AMOUNT;
    switch (taker.kind) {
      case Counterparty::Kind::kAbsent:
      case Counterparty::Kind::kUnknown: return MMO_ECONOMY_STATUS_UNKNOWN_PLAYER;
      case Counterparty::Kind::kInitiator: return MMO_ECONOMY_STATUS_SELF_TRADE;
      case Counterparty::Kind::kWallet:
        if (taker.wallet == maker) return MMO_ECONOMY_STATUS_SELF_TRADE;
        break;
    }
    if (w.offer) return MMO_ECONOMY_STATUS_OFFER_PENDING;
    if (const uint8_t s = has(w, give); s != MMO_ECONOMY_STATUS_APPLIED) return s;
    take_out(w, give);
    w.offer = OpenOffer{offer.transaction_id, taker.wallet, offer.counterparty_id, give, want, saturating_add_u64(now_ms, timeout_ms)};
    ++stripe.open_offers;
    stripe.next_expiry_ms = std::min(stripe.next_expiry_ms, w.offer->expires_ms);
    return MMO_ECONOMY_STATUS_APPLIED;
  };
  const uint8_t status = decide();
  record(w, offer.transaction_id, status);
  return Outcome{status, false, status == MMO_ECONOMY_STATUS_APPLIED ? w.gold : 0};
}

Outcome Economy::answer(const MmoTradeAnswer& answer, const WalletPtr& me, const Counterparty& maker, uint64_t now_ms, LockWaits& waits,
                        TradeClose& close) {
  close = TradeClose::kNone;
  if (answer.transaction_id == 0) return Outcome{MMO_ECONOMY_STATUS_INVALID_TRANSACTION, false, 0};
  Wallet& w = *me;
  Wallet* maker_w = maker.kind == Counterparty::Kind::kWallet && maker.wallet && maker.wallet != me ? maker.wallet.get() : nullptr;
  const size_t mine = w.stripe;
  const size_t theirs = maker_w != nullptr ? maker_w->stripe : mine;
  std::unique_lock first = waits.unique(stripes_[std::min(mine, theirs)].mutex);
  std::unique_lock<std::mutex> second;
  if (theirs != mine) second = waits.unique(stripes_[std::max(mine, theirs)].mutex);
  if (!w.open) return Outcome{MMO_ECONOMY_STATUS_PLAYER_DEPARTED, false, 0};
  Decision decided;
  switch (recall(w, answer.transaction_id, decided)) {
    case Recall::kDecided: return Outcome{decided.status, true, decided.gold_after};
    case Recall::kTooOld: return Outcome{MMO_ECONOMY_STATUS_TRANSACTION_TOO_OLD, false, 0};
    case Recall::kTooFar: return Outcome{MMO_ECONOMY_STATUS_INVALID_TRANSACTION, false, 0};
    case Recall::kNew: break;
  }
  const bool cancelling = maker.kind == Counterparty::Kind::kInitiator || (maker.kind == Counterparty::Kind::kWallet && maker.wallet == me);
  const auto decide = [&]() -> uint8_t {
    if (maker.kind == Counterparty::Kind::kAbsent || maker.kind == Counterparty::Kind::kUnknown) return MMO_ECONOMY_STATUS_UNKNOWN_PLAYER;
    if (cancelling) {
      if (answer.accept != 0) return MMO_ECONOMY_STATUS_SELF_TRADE;
      if (!w.offer || w.offer->offer_id != answer.offer_id) return MMO_ECONOMY_STATUS_NO_SUCH_OFFER;
      if (now_ms >= w.offer->expires_ms) {
        settle_expired_offer(w, now_ms);
        close = TradeClose::kExpired;
        return MMO_ECONOMY_STATUS_OFFER_EXPIRED;
      }
      return_escrow(w);
      close = TradeClose::kCancelled;
      return MMO_ECONOMY_STATUS_APPLIED;
    }
    if (maker_w == nullptr || !maker_w->open) return MMO_ECONOMY_STATUS_PLAYER_DEPARTED;
    if (!maker_w->offer || maker_w->offer->offer_id != answer.offer_id) return MMO_ECONOMY_STATUS_NO_SUCH_OFFER;
    const OpenOffer offer = *maker_w->offer;
    if (now_ms >= offer.expires_ms) {
      settle_expired_offer(*maker_w, now_ms);
      close = TradeClose::kExpired;
      return MMO_ECONOMY_STATUS_OFFER_EXPIRED;
    }
    if (offer.taker.lock() != me || offer.taker_id != answer.player_id) return MMO_ECONOMY_STATUS_NOT_YOUR_OFFER;
    if (answer.accept == 0) {
      return_escrow(*maker_w);
      close = TradeClose::kDeclined;
      return MMO_ECONOMY_STATUS_APPLIED;
    }
    if (const uint8_t s = has(w, offer.want); s != MMO_ECONOMY_STATUS_APPLIED) return s;
    if (!fits_after(w, offer.want, offer.give) || !can_take(*maker_w, offer.want)) return MMO_ECONOMY_STATUS_OVERFLOW;
    take_out(w, offer.want);
    put_in(*maker_w, offer.want);
    put_in(w, offer.give);
    maker_w->offer.reset();
    close = TradeClose::kAccepted;
    return MMO_ECONOMY_STATUS_APPLIED;
  };
  const uint8_t status = decide();
  if (close != TradeClose::kNone) --stripes_[cancelling ? mine : theirs].open_offers;
  record(w, answer.transaction_id, status);
  return Outcome{status, false, status == MMO_ECONOMY_STATUS_APPLIED ? w.gold : 0};
}

uint32_t Economy::expire_offers(uint64_t now_ms, LockWaits& waits) {
  uint32_t expired = 0;
  for (Stripe& stripe : stripes_) {
    const auto lock = waits.unique(stripe.mutex);
    if (now_ms < stripe.next_expiry_ms) continue;
    uint32_t closed = 0;
    uint64_t next = UINT64_MAX;
    for (auto& [owner, wallet] : stripe.open) {
      closed += settle_expired_offer(*wallet, now_ms) ? 1 : 0;
      if (wallet->offer) next = std::min(next, wallet->offer->expires_ms);
    }
    stripe.open_offers -= closed;
    stripe.next_expiry_ms = next;
    expired += closed;
  }
  return expired;
}

Outcome Economy::grant(const WalletPtr& wallet, uint64_t grant_id, const MmoTradeStack& stack, LockWaits& waits) {
  if (grant_id == 0) return Outcome{MMO_ECONOMY_STATUS_INVALID_TRANSACTION, false, 0};
  Wallet& w = *wallet;
  Stripe& stripe = stripes_[w.stripe];
  const auto lock = waits.unique(stripe.mutex);
  if (!w.open) return Outcome{MMO_ECONOMY_STATUS_PLAYER_DEPARTED, false, 0};
  if (grant_id == w.last_grant) return Outcome{MMO_ECONOMY_STATUS_APPLIED, true, w.gold};
  if (grant_id < w.last_grant) return Outcome{MMO_ECONOMY_STATUS_TRANSACTION_TOO_OLD, false, 0};
  Stack s;
  if (const uint8_t status = stack_of(stack, s); status != MMO_ECONOMY_STATUS_APPLIED) return Outcome{status, false, 0};
  if (s == Stack{}) return Outcome{MMO_ECONOMY_STATUS_INVALID_AMOUNT, false, 0};
  if (!can_take(w, s)) return Outcome{MMO_ECONOMY_STATUS_OVERFLOW, false, 0};
  put_in(w, s);
  w.last_grant = grant_id;
  for (Holdings* h : {&stripe.minted, &stripe.minted_by_grant}) {
    h->gold += s.gold;
    h->items[s.item_kind] += s.item_count;
  }
  return Outcome{MMO_ECONOMY_STATUS_APPLIED, false, w.gold};
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
      if (wallet->offer) {
        audit.escrowed.gold += wallet->offer->give.gold;
        audit.escrowed.items[wallet->offer->give.item_kind] += wallet->offer->give.item_count;
        ++audit.open_offers;
      }
    }
    add_holdings(audit.minted, stripe.minted);
    add_holdings(audit.minted_by_grant, stripe.minted_by_grant);
    add_holdings(audit.minted_by_loot, stripe.minted_by_loot);
    add_holdings(audit.sunk, stripe.sunk);
    add_holdings(audit.departed, stripe.departed);
  }
  return audit;
}

}  // namespace mmo::baseline
