// settings.hpp: every setting of mmo-server, written down once.
//
// One table (visit_settings) lists each setting with its section and key in the TOML file,
// its command-line flag, its type, its allowed range, its default and what it means. Visitors
// of that table read a TOML file (toml++), register the flags (CLI11), check every value
// against its range, print the effective configuration as TOML (--print-config, and the
// committed example file mmo.example.toml) and print the README's flags table
// (--print-flags-table). A setting added to the table is in all of them; a test checks that the
// example file and the README's table are what the binary prints.
//
// Precedence: defaults, then the file given with --config, then flags.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>

#include "mmo_core.h"
#include "net/server.hpp"

namespace CLI {
class App;
}

namespace mmo::app {

// What the process runs with.
struct Settings {
  net::ServerConfig server;
  MmoConfig core{};
  std::string engine = "rust";
  unsigned stats_interval_s = 10;
  std::string admin_key_text = "0";
  // Networks admin messages are answered from (parsed into server.admin_sources by finish()).
  std::string admin_sources_text = "127.0.0.0/8";
  std::string loot_key_text;  // core.loot_key as 32 hex digits; empty: the engine draws one
  // "host:port" of the Prometheus endpoint; empty: none.
  std::string metrics_bind;
  // Connect tokens: the public key file (empty: the development key pair in data_dir), the
  // address tokens must name (empty: the bind address and bound port), the longest lifetime.
  std::string token_public_key_path;
  std::string data_dir = "mmo-data";
  // "durable" (the rust engine's wallets in data_dir/economy.redb) or "memory".
  std::string economy_store = "durable";
  std::string public_address_text;
  uint32_t token_max_lifetime_s = 120;
  // Starting zones, "x,y,radius;..." (parsed into server.spawn_points by finish()).
  std::string spawn_points_text = "2048,2048,1900";

  // The defaults: the front's, and mmo_config_default()'s for the core.
  static Settings defaults();
  // Fills what is derived from other settings (core.player_capacity from server.max_players,
  // core.tick_ms from server.tick_hz, the admin key and sources, public address and spawn
  // points from their text). Checks every value's range first, so nothing is derived from one
  // out of range (tick_hz = 0 would divide by zero). Throws SettingsError naming the first key
  // out of range and its range. (The token key file is read by main, not here.)
  void finish();
};

// A setting that cannot be used: names the key and what it must be.
struct SettingsError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Applies the TOML file at `path` over `s`. Throws SettingsError naming the key for an unknown
// key, a wrong type or a value out of range, and for a file that does not parse (with its line).
void load_file(const std::string& path, Settings& s);

// Throws SettingsError for a value finish() does not check alone: address_table_slots not a
// power of two, or a combination the core refuses (asked through mmo_config_check). Run it
// after finish(), which checked each value's range and fills the core's derived fields.
void check_combinations(Settings& s);

// The configuration as a commented TOML file (the example file is this with the defaults).
std::string to_toml(Settings& s);

// The README's flags table (Markdown), from the defaults.
std::string flags_table();

// Registers one flag per setting on `app` (CLI11), bound to `s`'s fields: a flag given on the
// command line overwrites what the defaults or the file put there.
void add_flags(CLI::App& app, Settings& s);

}  // namespace mmo::app
