// admission.cpp: see admission.hpp.
#include "net/admission.hpp"

#include <arpa/inet.h>
#include <sys/mman.h>
#include <sys/random.h>

#include <algorithm>
#include <cassert>
#include <charconv>
#include <cstring>
#include <limits>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <variant>

#include "highwayhash/sip_hash.h"

namespace mmo::net {

const char* drop_reason_name(DropReason reason) {
  switch (reason) {
    case DropReason::Truncated: return "truncated";
    case DropReason::Oversized: return "oversized";
    case DropReason::BadMagic: return "bad_magic";
    case DropReason::BadVersion: return "bad_version";
    case DropReason::ObsoleteVersion: return "obsolete_version";
    case DropReason::UnknownType: return "unknown_type";
    case DropReason::BadLength: return "bad_length";
    case DropReason::BadField: return "bad_field";
    case DropReason::RateLimitedAddress: return "rate_limited_address";
    case DropReason::RateLimitedHost: return "rate_limited_host";
    case DropReason::BadCookie: return "bad_cookie";
    case DropReason::CookieExpired: return "cookie_expired";
    case DropReason::BadAdminKey: return "bad_admin_key";
    case DropReason::UnknownPlayer: return "unknown_player";
    case DropReason::BadSession: return "bad_session";
    case DropReason::AddressMismatch: return "address_mismatch";
    case DropReason::Replayed: return "replayed";
    case DropReason::RateLimitedPlayer: return "rate_limited_player";
    case DropReason::BadSource: return "bad_source";
    case DropReason::AdminWrongSource: return "admin_wrong_source";
  }
  return "unknown";
}

AdminSources AdminSources::loopback() {
  AdminSources s;
  s.networks_[0] = Network{0x7f000000u, 0xff000000u};
  s.count_ = 1;
  return s;
}

std::optional<AdminSources> AdminSources::parse(std::string_view text, std::string& error) {
  AdminSources s;
  const auto trim = [](std::string_view v) {
    const auto blank = [](char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; };
    while (!v.empty() && blank(v.front())) v.remove_prefix(1);
    while (!v.empty() && blank(v.back())) v.remove_suffix(1);
    return v;
  };
  if (trim(text).empty()) return s;
  size_t entries = 0;
  while (true) {
    const size_t comma = text.find(',');
    const std::string_view entry = trim(text.substr(0, comma));
    if (++entries > kMax) {
      error = "more than " + std::to_string(kMax) + " networks";
      return std::nullopt;
    }
    const std::string shown = "\"" + std::string(entry) + "\"";
    const size_t slash = entry.find('/');
    const std::string address(entry.substr(0, slash));
    in_addr ip{};
    if (entry.empty() || inet_pton(AF_INET, address.c_str(), &ip) != 1) {
      error = shown + " is not an IPv4 address a.b.c.d with an optional /bits";
      return std::nullopt;
    }
    unsigned bits = 32;
    if (slash != std::string_view::npos) {
      const std::string_view digits = entry.substr(slash + 1);
      const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), bits);
      if (digits.empty() || ec != std::errc{} || end != digits.data() + digits.size() || bits > 32) {
        error = shown + ": the prefix length must be 0 to 32";
        return std::nullopt;
      }
    }
    const uint32_t mask = bits == 0 ? 0 : ~uint32_t{0} << (32 - bits);
    const uint32_t prefix = ntohl(ip.s_addr);
    if ((prefix & ~mask) != 0) {
      error = shown + " has bits set past its /" + std::to_string(bits) + " (write the network, or /32 for one address)";
      return std::nullopt;
    }
    s.networks_[s.count_++] = Network{prefix, mask};
    if (comma == std::string_view::npos) return s;
    text.remove_prefix(comma + 1);
  }
}

bool AdminSources::allows(uint32_t ip_be) const {
  const uint32_t ip = ntohl(ip_be);
  for (size_t i = 0; i < count_; ++i) {
    if ((ip & networks_[i].mask) == networks_[i].prefix) return true;
  }
  return false;
}

bool answerable_source(SourceAddress source) {
  const uint32_t ip = ntohl(source.ip_be);
  const uint32_t first_octet = ip >> 24;
  return source.port_be != 0 && first_octet != 0 && first_octet < 224;
}

DropReason drop_reason_of(wire::DecodeError error) {
  switch (error) {
    case wire::DecodeError::Truncated: return DropReason::Truncated;
    case wire::DecodeError::Oversized: return DropReason::Oversized;
    case wire::DecodeError::BadMagic: return DropReason::BadMagic;
    case wire::DecodeError::BadVersion: return DropReason::BadVersion;
    case wire::DecodeError::ObsoleteVersion: return DropReason::ObsoleteVersion;
    case wire::DecodeError::UnknownType: return DropReason::UnknownType;
    case wire::DecodeError::BadLength: return DropReason::BadLength;
    case wire::DecodeError::BadField:
    case wire::DecodeError::Ok: break;
  }
  return DropReason::BadField;
}

// ---- ReplayWindow ----

bool ReplayWindow::acceptable(uint32_t sequence) const {
  if (!any_) return true;
  const int32_t ahead = static_cast<int32_t>(sequence - highest_);
  if (ahead > 0) return true;
  const uint32_t behind = static_cast<uint32_t>(-static_cast<int64_t>(ahead));
  if (behind >= kWidth) return false;
  return ((seen_ >> behind) & 1) == 0;
}

void ReplayWindow::record(uint32_t sequence) {
  if (!any_) {
    any_ = true;
    highest_ = sequence;
    seen_ = 1;
    return;
  }
  const int32_t ahead = static_cast<int32_t>(sequence - highest_);
  if (ahead > 0) {
    seen_ = static_cast<uint32_t>(ahead) >= kWidth ? 0 : seen_ << ahead;
    seen_ |= 1;
    highest_ = sequence;
  } else {
    const uint32_t behind = static_cast<uint32_t>(-static_cast<int64_t>(ahead));
    if (behind < kWidth) seen_ |= uint64_t{1} << behind;
  }
}

// ---- TokenBucket ----

bool TokenBucket::take(uint64_t now_us) {
  if (now_us > last_us_) {
    tokens_ = std::min(burst_, tokens_ + static_cast<double>(now_us - last_us_) * rate_per_us_);
    last_us_ = now_us;
  }
  if (tokens_ >= 1.0) {
    tokens_ -= 1.0;
    return true;
  }
  return false;
}

// ---- AddressRateLimiter ----

uint64_t mix(uint64_t key) {
  key ^= key >> 30;
  key *= 0xbf58476d1ce4e5b9ULL;
  key ^= key >> 27;
  key *= 0x94d049bb133111ebULL;
  key ^= key >> 31;
  return key;
}

namespace {
constexpr size_t kAddressProbes = 8;

bool is_pow2(size_t n) { return n != 0 && (n & (n - 1)) == 0; }

// 128 bits from the OS's random source. A bounded loop: getrandom returns at most the request
// and fails only on EINTR early at boot.
std::array<uint64_t, 2> random_secret(const char* what) {
  std::array<uint64_t, 2> secret{};
  size_t got = 0;
  auto* bytes = reinterpret_cast<uint8_t*>(secret.data());
  for (int attempt = 0; attempt < 16 && got < sizeof(secret); ++attempt) {
    const ssize_t n = getrandom(bytes + got, sizeof(secret) - got, 0);
    if (n > 0) got += static_cast<size_t>(n);
  }
  if (got < sizeof(secret)) throw std::runtime_error(std::string("getrandom failed: no secret for ") + what);
  return secret;
}
}  // namespace

AddressRateLimiter::AddressRateLimiter(RateLimit limit, size_t slots_pow2)
    : limit_(limit), home_key_(random_secret("the address limiter's table")), slots_(slots_pow2), mask_(slots_pow2 - 1) {
  if (!is_pow2(slots_pow2)) throw std::invalid_argument("address limiter slots must be a power of two");
}

bool AddressRateLimiter::take(SourceAddress source, uint64_t now_us) {
  const uint64_t key = source.key();
  // Homes from a keyed hash: which sources share probes cannot be worked out offline, so a
  // flood cannot be aimed at one source's slot.
  const highwayhash::HH_U64 home_key[2] = {home_key_[0], home_key_[1]};
  const size_t home = highwayhash::SipHash(home_key, reinterpret_cast<const char*>(&key), sizeof(key)) & mask_;
  Slot* victim = nullptr;
  for (size_t i = 0; i < kAddressProbes; ++i) {
    Slot& slot = slots_[(home + i) & mask_];
    if (slot.key == key) {
      slot.last_us = now_us;
      return slot.bucket.take(now_us);
    }
    if (slot.key == 0) {
      victim = &slot;
      break;
    }
    if (victim == nullptr || slot.last_us < victim->last_us) victim = &slot;
  }
  // Taking over a slot whose bucket may not have refilled yet (its source was seen within the
  // time a full refill takes) forgets a debt: the newcomer then starts with one token, not the
  // burst, so a source that is pushed out by a flood and comes back does not come back full.
  // A slot that was empty, or idle long enough to be full again, gives the whole burst.
  // (A bucket that never refills, rate 0, never stops owing.)
  const double refill_us = limit_.rate_per_s > 0 ? limit_.burst / limit_.rate_per_s * 1e6 : std::numeric_limits<double>::infinity();
  const bool forgets_debt = victim->key != 0 && static_cast<double>(now_us - std::min(now_us, victim->last_us)) < refill_us;
  victim->key = key;
  victim->last_us = now_us;
  victim->bucket = TokenBucket(limit_.rate_per_s, forgets_debt ? std::min(1.0, limit_.burst) : limit_.burst, limit_.burst, now_us);
  return victim->bucket.take(now_us);
}

// ---- JoinCookies ----

JoinCookies JoinCookies::with_random_secret() { return JoinCookies(random_secret("join cookies")); }

uint64_t JoinCookies::mac(SourceAddress source, uint64_t nonce, uint32_t period) const {
  // 24 bytes: ip (4, network order), port (2, network order), 2 zero, nonce (8 LE),
  // period (4 LE), 4 zero. docs/protocol.md.
  alignas(8) char input[24] = {};
  std::memcpy(input + 0, &source.ip_be, 4);
  std::memcpy(input + 4, &source.port_be, 2);
  std::memcpy(input + 8, &nonce, 8);
  std::memcpy(input + 16, &period, 4);
  const highwayhash::HH_U64 key[2] = {secret_[0], secret_[1]};
  return highwayhash::SipHash(key, input, sizeof(input));
}

JoinCookies::Verdict JoinCookies::verify(SourceAddress source, uint64_t nonce, uint32_t period, uint64_t cookie, uint64_t now_ms) const {
  if (mac(source, nonce, period) != cookie) return Verdict::Bad;
  const uint32_t now_period = period_at(now_ms);
  if (period > now_period) return Verdict::Bad;
  if (now_period - period > 1) return Verdict::Expired;
  return Verdict::Valid;
}

// ---- KeyIndex and SessionTable ----

KeyIndex::KeyIndex(size_t slots_pow2) : keys_(slots_pow2, 0), values_(slots_pow2, kNone), mask_(slots_pow2 - 1) {
  assert(is_pow2(slots_pow2));
}

size_t KeyIndex::home(uint64_t key) const { return mix(key) & mask_; }

uint32_t KeyIndex::find(uint64_t key) const {
  // The table is at most half full, so a probe sequence always meets an empty slot.
  for (size_t i = home(key), n = 0; n <= mask_; i = (i + 1) & mask_, ++n) {
    if (keys_[i] == key) return values_[i];
    if (keys_[i] == 0) return kNone;
  }
  return kNone;
}

void KeyIndex::insert(uint64_t key, uint32_t value) {
  assert(key != 0);
  for (size_t i = home(key), n = 0; n <= mask_; i = (i + 1) & mask_, ++n) {
    if (keys_[i] == 0 || keys_[i] == key) {
      keys_[i] = key;
      values_[i] = value;
      return;
    }
  }
  assert(false && "session index full: capacity is sized at twice the pool");
}

void KeyIndex::erase(uint64_t key) {
  size_t i = home(key);
  size_t n = 0;
  for (; n <= mask_; i = (i + 1) & mask_, ++n) {
    if (keys_[i] == key) break;
    if (keys_[i] == 0) return;
  }
  if (n > mask_) return;
  // Backward-shift deletion: pull later members of the probe run into the hole when their
  // home does not lie cyclically in (hole, j].
  size_t hole = i;
  for (size_t j = (i + 1) & mask_, m = 0; m <= mask_ && keys_[j] != 0; j = (j + 1) & mask_, ++m) {
    const size_t h = home(keys_[j]);
    const bool home_in_range = hole <= j ? (hole < h && h <= j) : (hole < h || h <= j);
    if (!home_in_range) {
      keys_[hole] = keys_[j];
      values_[hole] = values_[j];
      hole = j;
    }
  }
  keys_[hole] = 0;
  values_[hole] = kNone;
}

namespace {
size_t index_slots(size_t capacity) {
  size_t slots = 16;
  while (slots < capacity * 2) slots <<= 1;
  return slots;
}
}  // namespace

SessionTable::SessionTable(size_t capacity)
    : pool_(capacity), used_(capacity, 0), by_player_(index_slots(capacity)), by_source_(index_slots(capacity)) {
  free_.reserve(capacity);
  for (size_t i = capacity; i > 0; --i) free_.push_back(static_cast<uint32_t>(i - 1));
}

Session* SessionTable::find_player(uint64_t player_id) {
  const uint32_t i = by_player_.find(player_id);
  return i == Index::kNone ? nullptr : &pool_[i];
}

Session* SessionTable::find_source(SourceAddress source) {
  const uint32_t i = by_source_.find(source.key());
  return i == Index::kNone ? nullptr : &pool_[i];
}

Session* SessionTable::insert(const Session& session) {
  if (free_.empty() || session.player_id == 0 || find_player(session.player_id) != nullptr || find_source(session.source) != nullptr) {
    return nullptr;
  }
  const uint32_t i = free_.back();
  free_.pop_back();
  pool_[i] = session;
  used_[i] = 1;
  by_player_.insert(session.player_id, i);
  by_source_.insert(session.source.key(), i);
  ++live_;
  return &pool_[i];
}

void SessionTable::remove(Session* session) {
  const auto i = static_cast<uint32_t>(session - pool_.data());
  assert(i < pool_.size() && used_[i]);
  by_player_.erase(session->player_id);
  by_source_.erase(session->source.key());
  used_[i] = 0;
  pool_[i] = Session{};
  free_.push_back(i);
  --live_;
}

// ---- Admission ----

bool admin_key_matches(uint64_t expected, uint64_t presented) {
  volatile uint64_t diff = 0;
  for (int i = 0; i < 8; ++i) diff = diff | (((expected ^ presented) >> (8 * i)) & 0xff);
  return expected != 0 && diff == 0;
}

template <typename T>
ZeroedSlots<T>::ZeroedSlots(size_t n) : bytes_(std::max<size_t>(1, n) * sizeof(T)) {
  void* p = mmap(nullptr, bytes_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) throw std::bad_alloc();
  slots_ = static_cast<T*>(p);
}

template <typename T>
ZeroedSlots<T>::~ZeroedSlots() {
  munmap(slots_, bytes_);
}

UsedTokens::UsedTokens(size_t slots_pow2) : slots_(slots_pow2), mask_(slots_pow2 - 1) {
  assert(slots_pow2 >= kProbes && (slots_pow2 & (slots_pow2 - 1)) == 0);
}

bool UsedTokens::used(uint64_t token_id, uint64_t now_unix_ms) const {
  const size_t home = mix(token_id) & mask_;
  for (size_t i = 0; i < kProbes; ++i) {
    const Slot& s = slots_[(home + i) & mask_];
    if (s.token_id == token_id && s.expires_unix_ms > now_unix_ms) return true;
  }
  return false;
}

bool UsedTokens::record(uint64_t token_id, uint64_t expires_unix_ms, uint64_t now_unix_ms) {
  const size_t home = mix(token_id) & mask_;
  for (size_t i = 0; i < kProbes; ++i) {
    Slot& s = slots_[(home + i) & mask_];
    if (s.token_id == 0 || s.expires_unix_ms <= now_unix_ms || s.token_id == token_id) {
      s = Slot{token_id, expires_unix_ms};
      return true;
    }
  }
  return false;
}

SavedPositions::SavedPositions(size_t slots_pow2) : slots_(slots_pow2), mask_(slots_pow2 - 1) {
  assert(slots_pow2 > 0 && (slots_pow2 & (slots_pow2 - 1)) == 0);
}

void SavedPositions::save(uint64_t account_id, float x_m, float y_m) { slots_[mix(account_id) & mask_] = Slot{account_id, x_m, y_m}; }

bool SavedPositions::find(uint64_t account_id, float& x_m, float& y_m) const {
  const Slot& s = slots_[mix(account_id) & mask_];
  if (s.account_id != account_id || account_id == 0) return false;
  x_m = s.x_m;
  y_m = s.y_m;
  return true;
}

SessionDirectory::SessionDirectory(const DirectoryLimits& limits)
    : max_per_host_(limits.max_per_host), table_(limits.capacity), hosts_(index_slots(limits.capacity)),
      accounts_(index_slots(limits.capacity)), used_tokens_(limits.used_token_slots_pow2), positions_(limits.saved_position_slots_pow2) {}

DirectoryAdd SessionDirectory::check_locked(SourceAddress source, uint64_t account_id, uint64_t token_id, uint64_t now_unix_ms) const {
  if (max_per_host_ != 0) {
    const uint32_t n = hosts_.find(host_key(source));
    if (n != KeyIndex::kNone && n >= max_per_host_) return DirectoryAdd::HostFull;
  }
  // A spent token first: a token that can no longer admit a session must not end one either
  // (AccountLiveElsewhere from the same host asks the live session to end).
  if (token_id != 0 && used_tokens_.used(token_id, now_unix_ms)) return DirectoryAdd::TokenUsed;
  if (account_id != 0 && accounts_.find(account_id) != KeyIndex::kNone) return DirectoryAdd::AccountLiveElsewhere;
  return DirectoryAdd::Added;
}

bool SessionDirectory::token_spent(uint64_t token_id, uint64_t now_unix_ms) const {
  std::shared_lock lock(mutex_);
  return token_id != 0 && used_tokens_.used(token_id, now_unix_ms);
}

DirectoryAdd SessionDirectory::precheck(SourceAddress source, uint64_t account_id, uint64_t token_id, uint64_t now_unix_ms) const {
  std::shared_lock lock(mutex_);
  return check_locked(source, account_id, token_id, now_unix_ms);
}

DirectoryAdd SessionDirectory::add(const DirectoryJoin& join, uint64_t now_unix_ms) {
  Session s;
  s.player_id = join.player_id;
  s.session_token = join.session_token;
  s.source = join.source;
  s.account_id = join.account_id;
  s.token_id = join.token_id;
  s.worker = join.worker;
  std::unique_lock lock(mutex_);
  if (const DirectoryAdd refusal = check_locked(join.source, join.account_id, join.token_id, now_unix_ms); refusal != DirectoryAdd::Added) {
    return refusal;
  }
  Session* inserted = table_.insert(s);
  if (inserted == nullptr) return DirectoryAdd::Full;
  if (join.token_id != 0 && !used_tokens_.record(join.token_id, join.token_expires_unix_ms, now_unix_ms)) {
    table_.remove(inserted);
    return DirectoryAdd::TokenTableFull;
  }
  const uint32_t held = hosts_.find(host_key(join.source));
  hosts_.insert(host_key(join.source), held == KeyIndex::kNone ? 1 : held + 1);
  if (join.account_id != 0) accounts_.insert(join.account_id, table_.slot_of(inserted));
  return DirectoryAdd::Added;
}

void SessionDirectory::remove(uint64_t player_id, float x_m, float y_m) {
  std::unique_lock lock(mutex_);
  Session* s = table_.find_player(player_id);
  if (s == nullptr) return;
  const uint64_t host = host_key(s->source);
  const uint32_t n = hosts_.find(host);
  assert(n != KeyIndex::kNone && n > 0 && "every directory session is counted on its host");
  if (n <= 1) {
    hosts_.erase(host);
  } else {
    hosts_.insert(host, n - 1);
  }
  if (s->account_id != 0) {
    assert(accounts_.find(s->account_id) == table_.slot_of(s) && "an account maps to its one live session");
    accounts_.erase(s->account_id);
    positions_.save(s->account_id, x_m, y_m);
  }
  table_.remove(s);
}

bool SessionDirectory::saved_position(uint64_t account_id, float& x_m, float& y_m) const {
  std::shared_lock lock(mutex_);
  return positions_.find(account_id, x_m, y_m);
}

std::optional<LiveSession> SessionDirectory::live_session_of(uint64_t account_id) const {
  std::shared_lock lock(mutex_);
  const uint32_t slot = account_id == 0 ? KeyIndex::kNone : accounts_.find(account_id);
  if (slot == KeyIndex::kNone) return std::nullopt;
  const Session* s = table_.at(slot);
  assert(s != nullptr && s->account_id == account_id && "an account maps to its live session's slot");
  return LiveSession{s->player_id, s->session_token, s->source, s->worker};
}

std::optional<SourceAddress> SessionDirectory::source_of(uint64_t player_id) const {
  std::shared_lock lock(mutex_);
  const Session* s = table_.find_player(player_id);
  if (s == nullptr) return std::nullopt;
  return s->source;
}

DropReason SessionDirectory::classify_foreign(uint64_t player_id, uint64_t session_token, SourceAddress source) const {
  std::shared_lock lock(mutex_);
  const Session* s = table_.find_player(player_id);
  if (s == nullptr) return DropReason::UnknownPlayer;
  if (s->session_token != session_token) return DropReason::BadSession;
  // The right token from an address other than the session's (the session's own address
  // always reaches the owning worker, so this is another source, or a stale entry).
  return s->source == source ? DropReason::UnknownPlayer : DropReason::AddressMismatch;
}

Admission::Admission(const AdmissionConfig& config, const JoinCookies& cookies, const SessionDirectory* directory)
    : config_(config), cookies_(cookies), directory_(directory), addresses_(config.per_address, config.address_slots_pow2),
      host_joins_(config.per_host_joins, config.address_slots_pow2),
      sessions_(config.max_sessions) {}

Admitted Admission::session_check(Session* s, uint64_t player_id, uint64_t token, SourceAddress source, const uint32_t* sequence, uint64_t now_us) {
  if (s == nullptr) {
    const DropReason reason = directory_ != nullptr ? directory_->classify_foreign(player_id, token, source) : DropReason::UnknownPlayer;
    return {false, reason, nullptr};
  }
  if (s->session_token != token) return {false, DropReason::BadSession, nullptr};
  if (!(s->source == source)) return {false, DropReason::AddressMismatch, nullptr};
  return own_session_check(s, sequence, now_us);
}

Admitted Admission::own_session_check(Session* s, const uint32_t* sequence, uint64_t now_us) {
  if (sequence != nullptr && !s->replay.acceptable(*sequence)) return {false, DropReason::Replayed, nullptr};
  if (!s->bucket.take(now_us)) return {false, DropReason::RateLimitedPlayer, nullptr};
  if (sequence != nullptr) s->replay.record(*sequence);
  s->last_seen_ms = now_us / 1000;
  return {true, DropReason::Truncated, s};
}

namespace {
// The session a session message names: player, token and (for MOVE, ATTACK and LEAVE) its
// sequence. Nothing for other messages.
struct SessionClaim {
  uint64_t player_id = 0;
  uint64_t token = 0;
  const uint32_t* sequence = nullptr;
};
std::optional<SessionClaim> session_claim(const wire::ClientMessage& message) {
  return std::visit(
      [](const auto& m) -> std::optional<SessionClaim> {
        using M = std::decay_t<decltype(m)>;
        if constexpr (std::is_same_v<M, wire::Move> || std::is_same_v<M, wire::Leave> || std::is_same_v<M, wire::Attack>) {
          return SessionClaim{m.player_id, m.session_token, &m.sequence};
        } else if constexpr (std::is_same_v<M, wire::EconomyRequest> || std::is_same_v<M, wire::LootClaim> || std::is_same_v<M, wire::TradeOffer> ||
                             std::is_same_v<M, wire::TradeAnswer>) {
          return SessionClaim{m.player_id, m.session_token, nullptr};
        } else {
          return std::nullopt;
        }
      },
      message);
}
}  // namespace

Admitted Admission::admit(std::span<const uint8_t> datagram, SourceAddress source, uint64_t now_us, wire::Decoded<wire::ClientMessage>& out) {
  // A source no reply can reach is not a client: whatever it sent is dropped before any work,
  // and a reply to it never joins a batch (where its failed send would cost a call).
  if (!answerable_source(source)) return {false, DropReason::BadSource, nullptr};
  if (const auto e = wire::decode_client(datagram, out); e != wire::DecodeError::Ok) return {false, drop_reason_of(e), nullptr};
  // A session message whose player, token and source all match a live session of this worker
  // draws on that player's bucket alone, not its address's: otherwise anyone who could spoof
  // the player's address and port could empty the address's bucket with PINGs, drop every
  // datagram of the session, and let it expire idle.
  const std::optional<SessionClaim> claim = session_claim(out.message);
  Session* claimed = claim ? sessions_.find_player(claim->player_id) : nullptr;
  if (claimed != nullptr && claimed->session_token == claim->token && claimed->source == source) {
    return own_session_check(claimed, claim->sequence, now_us);
  }
  if (!addresses_.take(source, now_us)) return {false, DropReason::RateLimitedAddress, nullptr};
  const uint64_t now_ms = now_us / 1000;
  if (const auto* m = std::get_if<wire::JoinConfirm>(&out.message)) {
    switch (cookies_.verify(source, m->nonce, m->period, m->cookie, now_ms)) {
      case JoinCookies::Verdict::Bad: return {false, DropReason::BadCookie, nullptr};
      case JoinCookies::Verdict::Expired: return {false, DropReason::CookieExpired, nullptr};
      case JoinCookies::Verdict::Valid: break;
    }
    // A confirm with a valid cookie costs a token's signature check and maybe an engine join:
    // one host, whatever its ports, gets only so many a second. Charged only once the cookie
    // proves the source receives at its address, so a party spoofing a victim's address
    // cannot spend the victim's joins (a JOIN_REQUEST, one MAC and a challenge no larger than
    // itself, is held to the per-address limit alone, as a PING is).
    if (!host_joins_.take(SourceAddress{source.ip_be, 0}, now_us)) return {false, DropReason::RateLimitedHost, nullptr};
    return {true, DropReason::Truncated, nullptr};
  }
  const auto* raid = std::get_if<wire::RaidTrigger>(&out.message);
  const auto* stats = std::get_if<wire::StatsRequest>(&out.message);
  const auto* grant = std::get_if<wire::Grant>(&out.message);
  if (raid != nullptr || stats != nullptr || grant != nullptr) {
    if (!config_.admin_sources.allows(source.ip_be)) return {false, DropReason::AdminWrongSource, nullptr};
    const uint64_t presented = raid != nullptr ? raid->admin_key : stats != nullptr ? stats->admin_key : grant->admin_key;
    if (!admin_key_matches(config_.admin_key, presented)) return {false, DropReason::BadAdminKey, nullptr};
    return {true, DropReason::Truncated, nullptr};
  }
  if (claim) return session_check(claimed, claim->player_id, claim->token, source, claim->sequence, now_us);
  // JOIN_REQUEST and PING need no session.
  return {true, DropReason::Truncated, nullptr};
}

template class ZeroedSlots<UsedTokens::Slot>;
template class ZeroedSlots<SavedPositions::Slot>;

}  // namespace mmo::net
