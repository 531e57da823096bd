// settings.cpp: see settings.hpp. The table is visit_settings(); everything else visits it.
#define TOML_EXCEPTIONS 1
#include "app/settings.hpp"

#include <CLI/CLI.hpp>
#include <sodium.h>
#include <arpa/inet.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <limits>
#include <optional>
#include <set>
#include <sstream>
#include <toml++/toml.h>
#include <type_traits>

namespace mmo::app {
namespace {

// A number setting: its field, its range (inclusive), and where it lives.
template <class T>
struct Number {
  const char* section;
  const char* key;
  const char* flag;
  T& field;
  double min;
  double max;
  const char* help;
};

struct Text {
  const char* section;
  const char* key;
  const char* flag;
  std::string& field;
  const char* help;
  bool secret = false;  // a key: --help does not show its value (it may come from --config)
};

// Every setting, in the order the file and the flags table list them. `v` is called with a
// Number<T> or a Text for each; ranges are the ones the front and the core check (the core's
// are CoreConfig::validate's, rust-core/src/config.rs; cross-field rules such as
// contact_radius_m + cell_hysteresis_m <= cell_size_m are checked by the engine at start).
template <class V>
void visit_settings(Settings& s, V&& v) {
  constexpr double kU32 = 4294967295.0;
  // [server]: the network front and the process.
  v(Text{"server", "bind", "--bind", s.server.bind_address, "IPv4 address to serve on"});
  v(Number<uint16_t>{"server", "port", "--port", s.server.port, 0, 65535, "UDP port (0: any free port, printed at start)"});
  v(Number<unsigned>{"server", "threads", "--threads", s.server.threads, 0, 256, "I/O worker threads (0: one per core)"});
  v(Number<unsigned>{"server", "tick_hz", "--tick-hz", s.server.tick_hz, 1, 100, "ticks per second (areas of interest go out at this rate)"});
  v(Number<int>{"server", "tick_nice", "--tick-nice", s.server.tick_nice, 0, 19,
                "niceness of the tick thread, so on a busy core it gets a smaller share than the workers (0: the process's)"});
  v(Number<unsigned>{"server", "aoi_spread_pct", "--aoi-spread-pct", s.server.aoi_spread_pct, 0, 90,
                     "share of the tick period each worker spreads its areas of interest over, in the order of where its players stand (0: all at once after the tick)"});
  v(Number<unsigned>{"server", "idle_poll_us", "--idle-poll-us", s.server.idle_poll_us, 0, 1000,
                     "after reading datagrams, a worker polls its socket this long before it sleeps, so the next datagram needs no wake-up (costs the CPU it spins; 0: never)"});
  v(Number<unsigned>{"server", "worker_slice_us", "--worker-slice-us", s.server.worker_slice_us, 0, 100000,
                     "scheduler slice each worker thread asks for, microseconds (Linux 6.12+; the kernel takes 100 and up): shorter than other threads' slices, a worker woken by a datagram preempts them at once (0: the kernel's default)"});
  v(Text{"server", "engine", "--engine", s.engine, "game-state engine: rust, baseline, or null (no game state: the comparison's floor)"});
  v(Number<uint32_t>{"server", "max_players", "--max-players", s.server.max_players, 1, 1 << 24,
                     "players joined at once, at most (also the core's player_capacity)"});
  v(Number<uint32_t>{"server", "max_sessions_per_host", "--max-sessions-per-host", s.server.max_sessions_per_host, 0, 1 << 24,
                     "live sessions one source IP address may hold, whatever its ports (0: no limit): one host cannot fill the server"});
  v(Number<unsigned>{"server", "idle_timeout_s", "--idle-timeout-s", s.server.idle_timeout_s, 0, 86400, "end a session silent this long (0: never)"});
  v(Number<double>{"server", "player_rate", "--player-rate", s.server.per_player.rate_per_s, 1, 1e6, "messages per second per player"});
  v(Number<double>{"server", "player_burst", "--player-burst", s.server.per_player.burst, 1, 1e6, "burst allowance per player"});
  v(Number<double>{"server", "address_rate", "--address-rate", s.server.per_address.rate_per_s, 1, 1e7, "datagrams per second per source address (a live session's own messages draw on its player's rate instead)"});
  v(Number<double>{"server", "address_burst", "--address-burst", s.server.per_address.burst, 1, 1e7, "burst allowance per source address"});
  v(Number<double>{"server", "host_join_rate", "--host-join-rate", s.server.per_host_joins.rate_per_s, 1, 1e7,
                   "JOIN_CONFIRMs with a valid cookie per second per source IP address, whatever the port (per worker)"});
  v(Number<double>{"server", "join_rate", "--join-rate", s.server.joins.rate_per_s, 1, 1e7,
                   "sessions the whole server creates per second, all hosts together (past it a join is answered try later)"});
  v(Number<double>{"server", "join_burst", "--join-burst", s.server.joins.burst, 1, 1e7, "burst allowance of join_rate"});
  v(Number<double>{"server", "host_join_burst", "--host-join-burst", s.server.per_host_joins.burst, 1, 1e7, "burst allowance of host_join_rate"});
  v(Number<uint32_t>{"server", "address_table_slots", "--address-table-slots", s.server.address_table_slots, 64, 1 << 24,
                     "source addresses the rate limiter tracks (a power of two; the quietest are forgotten first)"});
  v(Number<int>{"server", "socket_buffer_bytes", "--socket-buffer-bytes", s.server.socket_buffer_bytes, 65536, 1 << 30,
                "each worker socket's kernel receive and send buffers (capped by net.core.[rw]mem_max)"});
  v(Text{"server", "token_public_key", "--token-public-key", s.token_public_key_path,
         "file holding the backend's Ed25519 public key that signs connect tokens (mmo-token keygen's .pub; empty: a development key pair in data_dir)"});
  v(Text{"server", "data_dir", "--data-dir", s.data_dir,
         "directory for the server's files (the economy's store: economy.redb and its commit log economy-*.log; the development token key pair)"});
  v(Text{"server", "economy_store", "--economy-store", s.economy_store,
         "durable: wallets of accounts in data_dir (commit log + economy.redb), every economy result told only once on disk (rust engine); "
         "memory: kept in memory only (the baseline and null engines always)"});
  v(Number<uint32_t>{"server", "economy_commit_linger_us", "--economy-commit-linger-us", s.server.economy_commit_linger_us, 0, 100000,
                     "after an idle spell, how long the durable store lets an economy change wait for others (or for 16 of them) "
                     "before it commits: fewer commits and fsyncs under a trickle of trades and loot, replies up to this much later"});
  v(Number<uint32_t>{"server", "economy_log_segment_kib", "--economy-log-segment-kib", s.server.economy_log_segment_kib, 0, 1048576,
                     "size of the durable store's commit log segments (0: 1024); each full one is folded into economy.redb on a "
                     "thread of its own, and a restart reads at most three (64 and up)"});
  v(Text{"server", "public_address", "--public-address", s.public_address_text,
         "IPv4:port a connect token must name to admit here (empty: the bind address and the bound port)"});
  v(Number<uint32_t>{"server", "token_max_lifetime_s", "--token-max-lifetime-s", s.token_max_lifetime_s, 1, 86400,
                     "a connect token expiring further ahead than this is refused as expired (used token ids are remembered this long)"});
  v(Text{"server", "spawn_points", "--spawn-points", s.spawn_points_text,
         "starting zones as x,y,radius metres separated by ';': a new account of faction f appears in zone f % count"});
  v(Number<uint32_t>{"server", "saved_positions", "--saved-positions", s.server.saved_positions, 1, 1 << 24,
                     "accounts whose last position the server remembers as their next spawn (in memory; rounded up to a power of two)"});
  v(Text{"server", "admin_key", "--admin-key", s.admin_key_text, "key for RAID_TRIGGER, STATS_REQUEST and GRANT (decimal or 0x hex; 0 disables admin messages)",
         true});
  v(Text{"server", "admin_sources", "--admin-sources", s.admin_sources_text,
         "IPv4 networks admin messages are answered from, a.b.c.d[/bits] separated by ',' (at most 16; empty: none; "
         "0.0.0.0/0: any); from elsewhere they are dropped admin_wrong_source before their key is looked at"});
  v(Number<unsigned>{"server", "stats_interval_s", "--stats-interval-s", s.stats_interval_s, 0, 86400, "seconds between stats lines (0: none)"});
  v(Text{"server", "metrics_bind", "--metrics-bind", s.metrics_bind, "serve Prometheus metrics at http://ADDRESS:PORT/metrics (empty: off)"});
  // [core]: the game-state engine (MmoConfig; either engine).
  v(Number<float>{"core", "world_size_m", "--world-size-m", s.core.world_size_m, 1, 1e6, "side of the square world, metres"});
  v(Number<float>{"core", "cell_size_m", "--cell-size-m", s.core.cell_size_m, 1, 1e6,
                  "side of a collision-grid cell, metres (world_size_m / cell_size_m at most 2048)"});
  v(Number<float>{"core", "cell_hysteresis_m", "--cell-hysteresis-m", s.core.cell_hysteresis_m, 0, 1e6,
                  "how far past its cell an entity may stray before it changes cell, metres"});
  v(Number<float>{"core", "max_speed_m_per_s", "--max-speed-m-per-s", s.core.max_speed_m_per_s, 0.001, 1e6, "fastest legal movement, metres per second"});
  v(Number<float>{"core", "speed_slack_m", "--speed-slack-m", s.core.speed_slack_m, 0, 1e6, "movement allowance beyond the jitter window's, metres"});
  v(Number<uint32_t>{"core", "clock_slack_ms", "--clock-slack-ms", s.core.clock_slack_ms, 0, kU32,
                     "jitter window: a player's distance budget is capped at speed * this + speed_slack_m, milliseconds"});
  v(Number<float>{"core", "contact_radius_m", "--contact-radius-m", s.core.contact_radius_m, 0.001, 1e6,
                  "contact radius, metres (contact_radius_m + cell_hysteresis_m at most cell_size_m)"});
  v(Number<uint32_t>{"core", "contacts_per_move_max", "--contacts-per-move-max", s.core.contacts_per_move_max, 0, 32, "contact events one move reports, at most"});
  v(Number<uint32_t>{"core", "aoi_k", "--aoi-k", s.core.aoi_k, 1, 64, "entities in one area-of-interest snapshot"});
  v(Number<float>{"core", "aoi_radius_m", "--aoi-radius-m", s.core.aoi_radius_m, 0.001, 1e6, "area-of-interest radius, metres (at most world_size_m)"});
  v(Number<float>{"core", "snapshot_cell_m", "--snapshot-cell-m", s.core.snapshot_cell_m, 0.001, 1e6,
                  "side of a world-snapshot cell, metres (world_size_m / snapshot_cell_m at most 65536, aoi_radius_m / snapshot_cell_m at most 256)"});
  v(Number<uint32_t>{"core", "raid_object_capacity", "--raid-object-capacity", s.core.raid_object_capacity, 0, 1 << 24,
                     "raid objects alive at once, at most (a burst that would exceed it is refused whole)"});
  v(Number<uint32_t>{"core", "raid_burst_capacity", "--raid-burst-capacity", s.core.raid_burst_capacity, 1, 65536, "raid bursts alive at once, at most"});
  v(Number<uint32_t>{"core", "grid_shards", "--grid-shards", s.core.grid_shards, 2, 4096, "lock shards of the collision grid (a power of two)"});
  v(Number<int32_t>{"core", "player_hp", "--player-hp", s.core.player_hp, 1, 2147483647.0, "hit points a player joins with"});
  v(Number<uint64_t>{"core", "starting_gold", "--starting-gold", s.core.starting_gold, 0, 281474976710656.0, "gold each new wallet starts with (minted at join)"});
  v(Number<int32_t>{"core", "attack_damage", "--attack-damage", s.core.attack_damage, 1, 2147483647.0, "hit points one landed attack takes"});
  v(Number<float>{"core", "attack_range_m", "--attack-range-m", s.core.attack_range_m, 0.001, 1e6, "how far an attacker may be from its target, metres"});
  v(Number<uint32_t>{"core", "attack_cooldown_ms", "--attack-cooldown-ms", s.core.attack_cooldown_ms, 0, 3600000,
                     "server milliseconds between two landed attacks of one player"});
  v(Number<uint32_t>{"core", "respawn_ms", "--respawn-ms", s.core.respawn_ms, 1, 3600000,
                     "server milliseconds a killed player stays dead (no moves, attacks or loot claims) before the tick respawns it"});
  v(Number<uint32_t>{"core", "logout_linger_ms", "--logout-linger-ms", s.core.logout_linger_ms, 0, 600000,
                     "server milliseconds a player who leaves (or times out) within this long of a landed hit between players stays "
                     "in the world, attackable, after its session ends (0: leaving takes the body out at once)"});
  v(Number<float>{"core", "loot_range_m", "--loot-range-m", s.core.loot_range_m, 0.001, 1e6, "how far a claimer may be from the loot it claims, metres"});
  v(Number<uint32_t>{"core", "loot_gold_min", "--loot-gold-min", s.core.loot_gold_min, 0, 4294967295.0,
                     "least gold one drop holds (the loot table; at most loot_gold_max)"});
  v(Number<uint32_t>{"core", "loot_gold_max", "--loot-gold-max", s.core.loot_gold_max, 0, 4294967295.0, "most gold one drop holds"});
  v(Number<uint32_t>{"core", "loot_item_permille", "--loot-item-permille", s.core.loot_item_permille, 0, 1000,
                     "chance per thousand that a drop also holds a stack of items"});
  v(Number<uint32_t>{"core", "loot_item_count_max", "--loot-item-count-max", s.core.loot_item_count_max, 1, 65535,
                     "most items in a dropped stack"});
  v(Number<uint32_t>{"core", "trade_timeout_ms", "--trade-timeout-ms", s.core.trade_timeout_ms, 1, 3600000,
                     "server milliseconds a trade offer stays open (then its escrow goes back to its maker)"});
  v(Text{"core", "loot_key", "--loot-key", s.loot_key_text,
         "secret key of the loot rolls, 32 hex digits (empty: a random key each start); whoever knows it can predict every drop", true});
}

std::string key_of(const char* section, const char* key) { return std::string(section) + "." + key; }

template <class T>
std::string show(T v) {
  std::ostringstream o;
  if constexpr (std::is_floating_point_v<T>) {
    o << static_cast<double>(v);
    // TOML needs a decimal point (or exponent) for a float.
    if (o.str().find_first_of(".eEn") == std::string::npos) o << ".0";
  } else {
    o << +v;
  }
  return o.str();
}

std::string range_of(double min, double max, bool integer) {
  std::ostringstream o;
  if (integer) {
    o << std::fixed;
    o.precision(0);
  }
  o << min << ".." << max;
  return o.str();
}

// Reads the file's values into the settings.
struct FileReader {
  const toml::table& root;
  std::set<std::string>& known;

  const toml::node* find(const char* section, const char* key) const {
    known.insert(key_of(section, key));
    const toml::node* sec = root.get(section);
    if (sec == nullptr) return nullptr;
    const toml::table* table = sec->as_table();
    if (table == nullptr) throw SettingsError(std::string("[") + section + "] must be a table");
    return table->get(key);
  }

  template <class T>
  void operator()(const Number<T>& n) const {
    const toml::node* node = find(n.section, n.key);
    if (node == nullptr) return;
    double value = 0;
    if (const auto i = node->value_exact<int64_t>()) {
      value = static_cast<double>(*i);
    } else if (const auto f = node->value_exact<double>(); f && std::is_floating_point_v<T>) {
      value = *f;
    } else {
      throw SettingsError(key_of(n.section, n.key) + " must be " + (std::is_floating_point_v<T> ? "a number" : "an integer") + " in " +
                          range_of(n.min, n.max, !std::is_floating_point_v<T>));
    }
    if (!(value >= n.min && value <= n.max)) {
      const std::string shown = std::is_floating_point_v<T> ? show(value) : std::to_string(static_cast<long long>(value));
      throw SettingsError(key_of(n.section, n.key) + " = " + shown + " is out of range " + range_of(n.min, n.max, !std::is_floating_point_v<T>));
    }
    n.field = static_cast<T>(value);
  }

  void operator()(const Text& t) const {
    const toml::node* node = find(t.section, t.key);
    if (node == nullptr) return;
    const auto v = node->value_exact<std::string>();
    if (!v) throw SettingsError(key_of(t.section, t.key) + " must be a string");
    t.field = *v;
  }
};

struct RangeChecker {
  template <class T>
  void operator()(const Number<T>& n) const {
    const double value = static_cast<double>(n.field);
    if (!(value >= n.min && value <= n.max)) {
      throw SettingsError(key_of(n.section, n.key) + " = " + show(n.field) + " is out of range " + range_of(n.min, n.max, !std::is_floating_point_v<T>));
    }
  }
  void operator()(const Text&) const {}
};

struct TomlWriter {
  std::ostringstream& out;
  std::string& section;
  void open(const char* s) {
    if (section == s) return;
    out << (section.empty() ? "" : "\n") << "[" << s << "]\n";
    section = s;
  }
  template <class T>
  void operator()(const Number<T>& n) {
    open(n.section);
    out << "# " << n.help << ". Range " << range_of(n.min, n.max, !std::is_floating_point_v<T>) << ".\n";
    out << n.key << " = " << show(n.field) << "\n";
  }
  void operator()(const Text& t) {
    open(t.section);
    out << "# " << t.help << ".\n";
    out << t.key << " = \"" << t.field << "\"\n";
  }
};

struct TableWriter {
  std::ostringstream& out;
  template <class T>
  void operator()(const Number<T>& n) {
    out << "| `" << n.flag << "` | `" << n.section << "." << n.key << "` | " << show(n.field) << " | "
        << range_of(n.min, n.max, !std::is_floating_point_v<T>) << " | " << n.help << " |\n";
  }
  void operator()(const Text& t) {
    out << "| `" << t.flag << "` | `" << t.section << "." << t.key << "` | \"" << t.field << "\" | text | " << t.help << " |\n";
  }
};

struct FlagAdder {
  CLI::App& app;
  template <class T>
  void operator()(const Number<T>& n) const {
    app.add_option(n.flag, n.field, n.help)->capture_default_str();
  }
  void operator()(const Text& t) const {
    CLI::Option* option = app.add_option(t.flag, t.field, t.help);
    if (!t.secret) option->capture_default_str();
  }
};

uint64_t parse_u64(const std::string& text) {
  // std::stoull alone takes a sign ("-1" wraps to 2^64 - 1), leading spaces and "+": a key
  // is digits only.
  if (text.empty() || !std::isdigit(static_cast<unsigned char>(text.front()))) throw std::invalid_argument("not an integer");
  size_t used = 0;
  const unsigned long long v = std::stoull(text, &used, 0);  // 0x... hex or decimal
  if (used != text.size()) throw std::invalid_argument("not an integer");
  return v;
}

}  // namespace

Settings Settings::defaults() {
  Settings s;
  if (mmo_config_default(&s.core) != MMO_OK) throw SettingsError("mmo_config_default failed");
  s.core.player_capacity = s.server.max_players;
  return s;
}

void Settings::finish() {
  // Flags reach here unchecked (a file's values were checked as it was read): nothing below
  // may divide by or size from a value out of its range.
  visit_settings(*this, RangeChecker{});
  if (engine != "rust" && engine != "baseline" && engine != "null") {
    throw SettingsError("server.engine = \"" + engine + "\" must be \"rust\", \"baseline\" or \"null\"");
  }
  try {
    server.admin_key = parse_u64(admin_key_text);
  } catch (const std::exception&) {
    throw SettingsError("server.admin_key = \"" + admin_key_text + "\" must be an integer (decimal or 0x hex)");
  }
  std::string sources_error;
  const std::optional<net::AdminSources> sources = net::AdminSources::parse(admin_sources_text, sources_error);
  if (!sources) throw SettingsError("server.admin_sources: " + sources_error);
  server.admin_sources = *sources;
  // core.loot_key: 32 hex digits, the key's bytes in order; empty leaves it zero (the engine
  // draws one). An all-zero key would be drawn over too, so it is refused as a mistake.
  std::fill(std::begin(core.loot_key), std::end(core.loot_key), uint8_t{0});
  if (!loot_key_text.empty()) {
    // libsodium's decoder, as the token keys' (net/connect_token.cpp): every digit used, no
    // separators, exactly the key's bytes.
    size_t len = 0;
    const char* end = nullptr;
    bool ok = loot_key_text.size() == 2 * sizeof core.loot_key &&
              sodium_hex2bin(core.loot_key, sizeof core.loot_key, loot_key_text.data(), loot_key_text.size(), nullptr, &len, &end) == 0 &&
              len == sizeof core.loot_key;
    ok = ok && std::any_of(std::begin(core.loot_key), std::end(core.loot_key), [](uint8_t b) { return b != 0; });
    if (!ok) throw SettingsError("core.loot_key must be 32 hex digits, not all zero (or empty: a random key each start)");
  }
  if (economy_store != "durable" && economy_store != "memory") {
    throw SettingsError("server.economy_store = \"" + economy_store + "\" must be \"durable\" or \"memory\"");
  }
  server.economy_data_dir = economy_store == "durable" && engine == "rust" ? data_dir : std::string();
  core.player_capacity = server.max_players;
  core.tick_ms = 1000 / server.tick_hz;
  server.token_max_lifetime_ms = uint64_t{token_max_lifetime_s} * 1000;
  server.public_ip_be = 0;
  server.public_port = 0;
  if (!public_address_text.empty()) {
    const auto colon = public_address_text.rfind(':');
    in_addr ip{};
    size_t used = 0;
    unsigned long port = 0;
    try {
      if (colon != std::string::npos) port = std::stoul(public_address_text.substr(colon + 1), &used, 10);
    } catch (const std::exception&) {
      used = 0;
    }
    if (colon == std::string::npos || used != public_address_text.size() - colon - 1 || port == 0 || port > 65535 ||
        inet_pton(AF_INET, public_address_text.substr(0, colon).c_str(), &ip) != 1) {
      throw SettingsError("server.public_address = \"" + public_address_text + "\" must be IPv4:port, e.g. 203.0.113.7:7777");
    }
    server.public_ip_be = ip.s_addr;
    server.public_port = static_cast<uint16_t>(port);
  }
  server.spawn_points.clear();
  std::istringstream points(spawn_points_text);
  std::string point;
  while (std::getline(points, point, ';')) {
    net::SpawnPoint p;
    char comma1 = 0, comma2 = 0;
    std::istringstream in(point);
    if (!(in >> p.x_m >> comma1 >> p.y_m >> comma2 >> p.radius_m) || comma1 != ',' || comma2 != ',' || !(in >> std::ws).eof() ||
        !std::isfinite(p.x_m) || !std::isfinite(p.y_m) || !std::isfinite(p.radius_m) || p.radius_m < 0 || p.x_m - p.radius_m < 0 ||
        p.y_m - p.radius_m < 0 || p.x_m + p.radius_m >= core.world_size_m || p.y_m + p.radius_m >= core.world_size_m) {
      throw SettingsError("server.spawn_points: \"" + point + "\" must be x,y,radius in metres, the whole disc inside the world [0, " +
                          show(core.world_size_m) + ")");
    }
    server.spawn_points.push_back(p);
  }
  if (server.spawn_points.empty() || server.spawn_points.size() > 256) {
    throw SettingsError("server.spawn_points = \"" + spawn_points_text + "\" must list 1 to 256 zones as x,y,radius;x,y,radius...");
  }
}

void load_file(const std::string& path, Settings& s) {
  toml::table root;
  try {
    root = toml::parse_file(path);
  } catch (const toml::parse_error& e) {
    std::ostringstream o;
    o << path << ":" << e.source().begin.line << ":" << e.source().begin.column << ": " << e.description();
    throw SettingsError(o.str());
  }
  std::set<std::string> known;
  visit_settings(s, FileReader{root, known});
  for (const auto& [section, node] : root) {
    const toml::table* table = node.as_table();
    if (table == nullptr) throw SettingsError(std::string(section.str()) + " is not a setting (settings sit in [server] and [core])");
    for (const auto& [key, value] : *table) {
      const std::string name = std::string(section.str()) + "." + std::string(key.str());
      if (known.count(name) == 0) throw SettingsError(name + " is not a setting (mmo-server --print-config lists them)");
    }
  }
}

void check_combinations(Settings& s) {
  const uint32_t slots = s.server.address_table_slots;
  if ((slots & (slots - 1)) != 0) throw SettingsError("server.address_table_slots = " + std::to_string(slots) + " must be a power of two");
  // The rules between the core's settings are the engine's own (CoreConfig::validate),
  // asked through the C ABI so they are stated once; its message names the fields.
  char why[256] = {};
  if (mmo_config_check(&s.core, why, sizeof why) != MMO_OK) throw SettingsError(std::string("[core]: ") + why);
}

std::string to_toml(Settings& s) {
  std::ostringstream out;
  std::string section;
  out << "# mmo-server configuration: mmo-server --config FILE. Flags override the file.\n"
         "# Every setting with its default; generated by `mmo-server --print-config`.\n\n";
  visit_settings(s, TomlWriter{out, section});
  return out.str();
}

std::string flags_table() {
  Settings s = Settings::defaults();
  std::ostringstream out;
  out << "| flag | config key | default | range | what |\n|---|---|---|---|---|\n";
  visit_settings(s, TableWriter{out});
  return out.str();
}

void add_flags(CLI::App& app, Settings& s) { visit_settings(s, FlagAdder{app}); }

}  // namespace mmo::app
