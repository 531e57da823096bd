// admission.hpp: what stands between a received datagram and an engine.
//
// Each I/O worker owns one Admission: it decodes a datagram and checks it in the documented
// order (docs/protocol.md, "Validation order and drop reasons"), cheapest first, and either
// admits it (with the decoded message and, for session messages, the sender's session) or
// names the one reason it was dropped. Everything here is per worker and single-threaded by
// construction: SO_REUSEPORT sends every datagram of one (address, port) to the same worker,
// so a session lives in exactly one worker's table. Nothing allocates after construction.
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <new>
#include <type_traits>
#include <optional>
#include <shared_mutex>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "net/protocol.hpp"

namespace mmo::net {

// Every reason a datagram is dropped (docs/protocol.md's table gives the order they are
// checked in: BadSource first, RateLimitedHost after the cookie). Names: drop_reason_name().
enum class DropReason : uint8_t {
  Truncated,
  Oversized,
  BadMagic,
  BadVersion,
  ObsoleteVersion,
  UnknownType,
  BadLength,
  BadField,
  RateLimitedAddress,
  RateLimitedHost,
  BadCookie,
  CookieExpired,
  BadAdminKey,
  UnknownPlayer,
  BadSession,
  AddressMismatch,
  Replayed,
  RateLimitedPlayer,
  BadSource,  // checked first (step 0 of docs/protocol.md's table); last here so the others keep their values
  AdminWrongSource,  // step 12, before the admin key; appended for the same reason
};
inline constexpr size_t kDropReasonCount = 20;
const char* drop_reason_name(DropReason reason);
DropReason drop_reason_of(wire::DecodeError error);

// An IPv4 source: address and port in network byte order, as the kernel hands them over.
struct SourceAddress {
  uint32_t ip_be = 0;
  uint16_t port_be = 0;
  // A unique non-zero key for (ip, port) (no real source is 0.0.0.0:0).
  uint64_t key() const { return (static_cast<uint64_t>(ip_be) << 16) | port_be; }
  bool operator==(const SourceAddress&) const = default;
};

// The IPv4 networks admin messages (RAID_TRIGGER, STATS_REQUEST, GRANT) are answered from
// (`--admin-sources`). A holder of the admin key anywhere else can neither act nor have a
// STATS_REPLY, up to 8 KB for a 24-byte request, sent to an address it spoofs. A fixed list:
// checked per admin message with no allocation and no lock. Empty: admin messages are
// answered from nowhere.
class AdminSources {
 public:
  static constexpr size_t kMax = 16;
  // A network in host byte order: `prefix` with every bit past `mask` zero.
  struct Network {
    uint32_t prefix = 0;
    uint32_t mask = 0;
  };
  // 127.0.0.0/8, the default: admin tools on the server's own host.
  static AdminSources loopback();
  // "a.b.c.d[/bits]" entries separated by ',' (blanks around an entry allowed), at most kMax;
  // "" gives none. nullopt, with `error` saying which entry and why, for a malformed address,
  // bits outside 0..32, an address with bits set past its prefix (10.0.0.5/24: a typo for
  // 10.0.0.0/24 or 10.0.0.5/32?), an empty entry or more than kMax entries.
  static std::optional<AdminSources> parse(std::string_view text, std::string& error);
  bool allows(uint32_t ip_be) const;
  std::span<const Network> networks() const { return {networks_.data(), count_}; }

 private:
  std::array<Network, kMax> networks_{};
  size_t count_ = 0;
};

// Whether a reply to `source` could be delivered: port not 0, and an IPv4 address that can be
// a datagram's sender (not 0.0.0.0/8, multicast 224.0.0.0/4, or 240.0.0.0/4 with the
// broadcast address). The kernel delivers datagrams from such sources (a raw socket forges
// them); a reply to one fails at sendmmsg.
bool answerable_source(SourceAddress source);

// SplitMix64's finaliser: spreads a key's bits over all 64 (table homes for addresses, player
// ids, accounts and token ids; an account's place in its starting zone).
uint64_t mix(uint64_t key);

// A 64-message anti-replay window over u32 sequences (serial arithmetic, RFC 1982 style):
// bit i of `seen_` is `highest_ - i`. A sequence already seen, or 64 or more below the
// highest, is a replay.
class ReplayWindow {
 public:
  static constexpr uint32_t kWidth = 64;
  bool acceptable(uint32_t sequence) const;
  // Records a sequence that acceptable() allowed.
  void record(uint32_t sequence);

 private:
  uint32_t highest_ = 0;
  uint64_t seen_ = 0;
  bool any_ = false;
};

// A token bucket: `rate_per_s` tokens a second up to `burst`. Starts full.
class TokenBucket {
 public:
  TokenBucket() = default;
  TokenBucket(double rate_per_s, double burst, uint64_t now_us) : TokenBucket(rate_per_s, burst, burst, now_us) {}
  // A bucket holding `tokens` (at most `burst`) now.
  TokenBucket(double rate_per_s, double tokens, double burst, uint64_t now_us)
      : rate_per_us_(rate_per_s / 1e6), burst_(burst), tokens_(std::min(tokens, burst)), last_us_(now_us) {}
  // Takes one token if there is one.
  bool take(uint64_t now_us);

 private:
  double rate_per_us_ = 0;
  double burst_ = 0;
  double tokens_ = 0;
  uint64_t last_us_ = 0;
};

struct RateLimit {
  double rate_per_s = 0;
  double burst = 0;
};

// Per-source-address token buckets in a fixed table (open addressing, 8 probes, homes from a
// SipHash under a per-process random key). When every probed slot belongs to another address,
// the least recently used one is taken over: the table bounds memory under a flood of spoofed
// sources, at the price of forgetting the quietest ones. A newcomer that takes over a slot
// seen within one refill time starts with one token, not the burst, so being pushed out by a
// flood never refills a source.
class AddressRateLimiter {
 public:
  AddressRateLimiter(RateLimit limit, size_t slots_pow2);
  bool take(SourceAddress source, uint64_t now_us);

 private:
  struct Slot {
    uint64_t key = 0;
    uint64_t last_us = 0;
    TokenBucket bucket;
  };
  RateLimit limit_;
  std::array<uint64_t, 2> home_key_;
  std::vector<Slot> slots_;
  size_t mask_;
};

// Stateless join cookies: SipHash-2-4 under a secret over (source, nonce, period).
class JoinCookies {
 public:
  static constexpr uint64_t kPeriodMs = 10'000;
  enum class Verdict { Valid, Bad, Expired };
  explicit JoinCookies(std::array<uint64_t, 2> secret) : secret_(secret) {}
  // A fresh secret from the OS's random source.
  static JoinCookies with_random_secret();
  static uint32_t period_at(uint64_t now_ms) { return static_cast<uint32_t>(now_ms / kPeriodMs); }
  uint64_t mac(SourceAddress source, uint64_t nonce, uint32_t period) const;
  Verdict verify(SourceAddress source, uint64_t nonce, uint32_t period, uint64_t cookie, uint64_t now_ms) const;

 private:
  std::array<uint64_t, 2> secret_;
};

// One joined client, as its worker knows it.
struct Session {
  uint64_t player_id = 0;
  uint64_t session_token = 0;
  uint64_t join_nonce = 0;
  // The connect token's account and id (the token that admitted this session).
  uint64_t account_id = 0;
  uint64_t token_id = 0;
  uint8_t faction = 0;
  // The owning worker's index (kept in the session directory's copy).
  uint16_t worker = 0;
  // The join ticket's slot hint, passed back in every move record of this session (the Rust
  // core then finds the body without an arena lookup; other engines ignore it).
  uint32_t slot_hint = 0;
  SourceAddress source;
  uint64_t last_seen_ms = 0;
  // Where the engine last put the player (its spawn, then each applied move): saved for the
  // account when the session ends. Written by the owning worker only.
  float x_m = 0;
  float y_m = 0;
  ReplayWindow replay;
  TokenBucket bucket;
};

// An open-addressing map from non-zero u64 keys to u32 values, at most half full by the
// owner's sizing (so every probe run ends), with backward-shift deletion. Fixed at
// construction: nothing allocates after it.
class KeyIndex {
 public:
  explicit KeyIndex(size_t slots_pow2);
  uint32_t find(uint64_t key) const;  // kNone if absent
  void insert(uint64_t key, uint32_t value);
  void erase(uint64_t key);
  static constexpr uint32_t kNone = UINT32_MAX;

 private:
  size_t home(uint64_t key) const;
  std::vector<uint64_t> keys_;  // 0 = empty
  std::vector<uint32_t> values_;
  size_t mask_;
};

// Sessions of one worker, in a fixed pool with two fixed open-addressing indexes (player id
// and source address). Linear probing with backward-shift deletion, so no tombstones build up.
class SessionTable {
 public:
  explicit SessionTable(size_t capacity);
  size_t size() const { return live_; }
  size_t capacity() const { return pool_.size(); }
  Session* find_player(uint64_t player_id);
  Session* find_source(SourceAddress source);
  // nullptr when full.
  Session* insert(const Session& session);
  void remove(Session* session);
  // The session in pool slot `i` (i < capacity()), or nullptr if the slot is free: lets a
  // caller walk the table in steps, resuming where it stopped.
  Session* at(size_t i) { return used_[i] ? &pool_[i] : nullptr; }
  const Session* at(size_t i) const { return used_[i] ? &pool_[i] : nullptr; }
  // The pool slot of a session of this table.
  uint32_t slot_of(const Session* session) const { return static_cast<uint32_t>(session - pool_.data()); }
  // Visits every live session (up to capacity() of them).
  template <typename F>
  void for_each(F&& f) {
    for (size_t i = 0; i < pool_.size(); ++i) {
      if (used_[i]) f(pool_[i]);
    }
  }

 private:
  using Index = KeyIndex;
  std::vector<Session> pool_;
  std::vector<uint8_t> used_;
  std::vector<uint32_t> free_;
  Index by_player_;
  Index by_source_;
  size_t live_ = 0;
};

// What SessionDirectory::add (and its early look, precheck) decided.
enum class DirectoryAdd { Added, Full, HostFull, AccountLiveElsewhere, TokenUsed, TokenTableFull };

// A fixed array of trivially copyable slots, all zero at first, mapped straight from the
// operating system (anonymous mmap): its pages are zero-filled on first touch, so a large
// table costs resident memory only as its slots are written. (A std::vector writes every
// zero up front, and an allocator's calloc may too: mimalloc's did, 256 MiB resident for an
// untouched 256 MiB table.) Throws std::bad_alloc.
template <typename T>
class ZeroedSlots {
  static_assert(std::is_trivially_copyable_v<T> && std::is_trivially_default_constructible_v<T>, "all-zero bytes must be a valid T");

 public:
  explicit ZeroedSlots(size_t n);
  ~ZeroedSlots();
  ZeroedSlots(const ZeroedSlots&) = delete;
  ZeroedSlots& operator=(const ZeroedSlots&) = delete;
  T& operator[](size_t i) { return slots_[i]; }
  const T& operator[](size_t i) const { return slots_[i]; }

 private:
  T* slots_ = nullptr;
  size_t bytes_ = 0;
};

// Connect token ids that admitted a session, each remembered until its token expires (a used
// token is refused; an expired one is refused anyway, so forgetting it then is safe). A fixed
// open-addressing table: an id sits in one of kProbes slots from its home; a slot whose token
// has expired is free. Nothing allocates after construction.
class UsedTokens {
 public:
  static constexpr size_t kProbes = 16;
  explicit UsedTokens(size_t slots_pow2);
  bool used(uint64_t token_id, uint64_t now_unix_ms) const;
  // Records an id; false when every probed slot holds an unexpired token (the caller answers
  // try later: the table is sized for the join rate times the longest token lifetime).
  bool record(uint64_t token_id, uint64_t expires_unix_ms, uint64_t now_unix_ms);

 private:
  struct Slot {
    uint64_t token_id;
    uint64_t expires_unix_ms;
  };
  ZeroedSlots<Slot> slots_;
  size_t mask_;
};

// Each account's last position, saved when its session ends and used as its next spawn: a
// fixed direct-mapped table (an account whose slot another account has taken since spawns at
// a spawn point instead). In memory only: it does not outlive the process.
class SavedPositions {
 public:
  explicit SavedPositions(size_t slots_pow2);
  void save(uint64_t account_id, float x_m, float y_m);
  bool find(uint64_t account_id, float& x_m, float& y_m) const;

 private:
  struct Slot {
    uint64_t account_id;
    float x_m;
    float y_m;
  };
  ZeroedSlots<Slot> slots_;
  size_t mask_;
};

// A join as the directory records it.
struct DirectoryJoin {
  uint64_t player_id = 0;
  uint64_t session_token = 0;
  SourceAddress source;
  uint64_t account_id = 0;
  uint64_t token_id = 0;
  uint64_t token_expires_unix_ms = 0;
  uint16_t worker = 0;
};

// An account's live session, wherever it lives.
struct LiveSession {
  uint64_t player_id = 0;
  uint64_t session_token = 0;
  SourceAddress source;
  uint16_t worker = 0;
};

struct DirectoryLimits {
  size_t capacity = 8192;
  // Live sessions one source IP address may hold, whatever its ports (0: no limit). Workers
  // see only their own ports' sessions, so the count lives here.
  uint32_t max_per_host = 64;
  size_t used_token_slots_pow2 = 1 << 12;
  size_t saved_position_slots_pow2 = 1 << 12;
};

// Every worker's sessions, as (player id, token, source, account, token id, owning worker)
// only, shared by the workers: a datagram for a session another worker owns is classified
// correctly (a spoofer's packets hash to another worker than the victim's, and must still
// count as `bad_session` or `address_mismatch`, not `unknown_player`), and the rules that span
// workers are decided here: live sessions per host, one live session per account, one session
// per token, and each account's saved position. Written on join and leave; read when a join
// is decided and when a worker's own table misses. One reader-writer lock: it is never taken
// on the path of a legitimate move (that one hits its worker's own table).
class SessionDirectory {
 public:
  explicit SessionDirectory(const DirectoryLimits& limits);
  SessionDirectory(size_t capacity, uint32_t max_per_host) : SessionDirectory(DirectoryLimits{capacity, max_per_host}) {}
  // Adds a session, unless its host already holds max_per_host, its token already admitted
  // one, its account has a live session (from any address: the caller ends a session of the
  // same address first), or the table is full (checked in that order).
  DirectoryAdd add(const DirectoryJoin& join, uint64_t now_unix_ms);
  // The same checks as add() but the table's, without adding (a cheap early refusal before the
  // engine is asked; add() decides).
  DirectoryAdd precheck(SourceAddress source, uint64_t account_id, uint64_t token_id, uint64_t now_unix_ms) const;
  // A session with no account (tests of the host cap).
  DirectoryAdd add(uint64_t player_id, uint64_t session_token, SourceAddress source) { return add(DirectoryJoin{player_id, session_token, source}, 0); }
  // Whether a join from this host could be added now.
  bool host_has_room(SourceAddress source) const { return precheck(source, 0, 0, 0) != DirectoryAdd::HostFull; }
  // Whether `token_id` already admitted a session (and has not expired).
  bool token_spent(uint64_t token_id, uint64_t now_unix_ms) const;
  // Ends a session; its account's position is saved.
  void remove(uint64_t player_id, float x_m, float y_m);
  void remove(uint64_t player_id) { remove(player_id, 0, 0); }
  // The account's saved position, if the table still has it.
  bool saved_position(uint64_t account_id, float& x_m, float& y_m) const;
  // The account's live session, if it has one.
  std::optional<LiveSession> live_session_of(uint64_t account_id) const;
  // The reason to drop a session message whose player this worker does not hold.
  DropReason classify_foreign(uint64_t player_id, uint64_t session_token, SourceAddress source) const;
  // The address of a player's session, whichever worker owns it (kill notices).
  std::optional<SourceAddress> source_of(uint64_t player_id) const;

 private:
  static uint64_t host_key(SourceAddress source) { return (uint64_t{1} << 32) | source.ip_be; }
  DirectoryAdd check_locked(SourceAddress source, uint64_t account_id, uint64_t token_id, uint64_t now_unix_ms) const;
  uint32_t max_per_host_;
  mutable std::shared_mutex mutex_;
  mutable SessionTable table_;  // guarded by mutex_
  KeyIndex hosts_;              // host key -> its live sessions; guarded by mutex_
  KeyIndex accounts_;           // account id -> its session's slot in table_; guarded by mutex_
  UsedTokens used_tokens_;      // guarded by mutex_
  SavedPositions positions_;    // guarded by mutex_
};

struct AdmissionConfig {
  RateLimit per_address{400, 800};
  RateLimit per_player{60, 120};
  // JOIN_CONFIRMs with a valid cookie per source IP address, whatever the port (per worker).
  RateLimit per_host_joins{100, 200};
  size_t max_sessions = 8192;
  size_t address_slots_pow2 = 16384;
  // 0: admin messages are always refused.
  uint64_t admin_key = 0;
  // Where admin messages may come from; checked before the key.
  AdminSources admin_sources = AdminSources::loopback();
};

// What admit() decided.
struct Admitted {
  bool ok = false;
  DropReason reason = DropReason::Truncated;  // when !ok
  Session* session = nullptr;                 // MOVE, ECONOMY_REQUEST, LEAVE
};

class Admission {
 public:
  // `directory` may be null (one worker, or tests): then a miss is always `unknown_player`.
  Admission(const AdmissionConfig& config, const JoinCookies& cookies, const SessionDirectory* directory = nullptr);
  // Checks one datagram from `source` at `now_us` (monotonic, microseconds since start).
  // Fills `out` when it returns ok.
  Admitted admit(std::span<const uint8_t> datagram, SourceAddress source, uint64_t now_us, wire::Decoded<wire::ClientMessage>& out);
  SessionTable& sessions() { return sessions_; }
  const JoinCookies& cookies() const { return cookies_; }
  // A new session's per-player bucket.
  TokenBucket player_bucket(uint64_t now_us) const { return TokenBucket(config_.per_player.rate_per_s, config_.per_player.burst, now_us); }

 private:
  // The session checks (steps 13 to 17) of a message naming `player_id`, whose session in this
  // worker's table, if any, admit() has already looked up (`s`, or nullptr).
  Admitted session_check(Session* s, uint64_t player_id, uint64_t token, SourceAddress source, const uint32_t* sequence, uint64_t now_us);
  // The checks left once a message is known to be session `s`'s (player, token and source
  // matched): the replay window, then the player's bucket.
  Admitted own_session_check(Session* s, const uint32_t* sequence, uint64_t now_us);
  AdmissionConfig config_;
  const JoinCookies& cookies_;
  const SessionDirectory* directory_;
  AddressRateLimiter addresses_;
  AddressRateLimiter host_joins_;  // keyed by the IP address alone
  SessionTable sessions_;
};

// Constant-time equality of two admin keys (no early exit on the first differing byte).
bool admin_key_matches(uint64_t expected, uint64_t presented);

}  // namespace mmo::net
