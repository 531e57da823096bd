// conformance.cpp: the scenario language of docs/conformance.md and its runner.
#include "conformance/conformance.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <iterator>
#include <map>
#include <optional>
#include <sstream>
#include <stdexcept>

#include "engine/stats_fields.hpp"

namespace mmo::conformance {
namespace {

constexpr uint64_t kWrongTokenMask = 0x5a5a5a5a5a5a5a5aULL;
constexpr uint64_t kGhostPlayerId = 0x00ffffffffffff01ULL;   // never handed out by either engine
constexpr uint64_t kGhostObjectId = 0x80ffffffffffff01ULL;
constexpr float kFloatTolerance = 1e-3f;
constexpr size_t kBlockLinesMax = 256;

std::vector<std::string> split(std::string_view s) {
  std::vector<std::string> out;
  std::istringstream in{std::string(s)};
  std::string t;
  while (in >> t) out.push_back(t);
  return out;
}

std::string status_text(MmoStatus s) { return s == MMO_OK ? "ok" : mmo_status_name(s); }

const char* kind_label(uint8_t kind) {
  switch (kind) {
    case MMO_ENTITY_KIND_ADD: return "add";
    case MMO_ENTITY_KIND_PROJECTILE: return "projectile";
    case MMO_ENTITY_KIND_LOOT: return "loot";
    case MMO_ENTITY_KIND_PLAYER: return "player";
    default: return "?kind";
  }
}

std::optional<uint8_t> entity_kind(const std::string& name) {
  if (name == "add") return MMO_ENTITY_KIND_ADD;
  if (name == "projectile") return MMO_ENTITY_KIND_PROJECTILE;
  if (name == "loot") return MMO_ENTITY_KIND_LOOT;
  if (name == "player") return MMO_ENTITY_KIND_PLAYER;
  return std::nullopt;
}

const char* reject_name(uint8_t reason) {
  switch (reason) {
    case MMO_REJECT_REASON_UNKNOWN_PLAYER: return "unknown_player";
    case MMO_REJECT_REASON_WRONG_SESSION: return "wrong_session";
    case MMO_REJECT_REASON_STALE_SEQUENCE: return "stale_sequence";
    case MMO_REJECT_REASON_TOO_FAST: return "too_fast";
    case MMO_REJECT_REASON_OUT_OF_BOUNDS: return "out_of_bounds";
    case MMO_REJECT_REASON_DEAD: return "dead";
    default: return "?reason";
  }
}

const char* economy_status_name(uint8_t status) {
  static const char* const names[] = {"applied",         "invalid_amount",     "overflow",       "self_trade",     "unknown_item",
                                      "insufficient_funds", "insufficient_items", "unknown_player", "player_departed", "wrong_session",
                                      "transaction_too_old", "bad_kind",         "invalid_transaction", "offer_pending", "no_such_offer",
                                      "not_your_offer",  "offer_expired",      "kind_retired"};
  return status < std::size(names) ? names[status] : "?status";
}

std::optional<uint8_t> economy_kind(const std::string& name) {
  if (name == "transfer") return MMO_ECONOMY_KIND_TRANSFER;
  if (name == "trade") return MMO_ECONOMY_KIND_TRADE;
  if (name == "loot") return MMO_ECONOMY_KIND_LOOT_PICKUP;
  if (name == "spend") return MMO_ECONOMY_KIND_SPEND;
  return std::nullopt;
}

// A parse or usage error in the scenario itself (as opposed to an engine mismatch).
struct ScenarioError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// key=value arguments of one command; `take` marks a key used, `finish` refuses leftovers.
class Args {
 public:
  explicit Args(const std::vector<std::string>& tokens, size_t from) {
    for (size_t i = from; i < tokens.size(); ++i) {
      const auto eq = tokens[i].find('=');
      if (eq == std::string::npos) {
        flags_.push_back(tokens[i]);
      } else {
        kv_[tokens[i].substr(0, eq)] = tokens[i].substr(eq + 1);
      }
    }
  }
  std::optional<std::string> text(const std::string& key) {
    auto it = kv_.find(key);
    if (it == kv_.end()) return std::nullopt;
    std::string v = it->second;
    kv_.erase(it);
    return v;
  }
  std::string need(const std::string& key) {
    auto v = text(key);
    if (!v) throw ScenarioError("missing " + key + "=");
    return *v;
  }
  double number(const std::string& key) { return std::stod(need(key)); }
  double number_or(const std::string& key, double fallback) {
    auto v = text(key);
    return v ? std::stod(*v) : fallback;
  }
  int64_t integer(const std::string& key) { return std::stoll(need(key), nullptr, 0); }
  int64_t integer_or(const std::string& key, int64_t fallback) {
    auto v = text(key);
    return v ? std::stoll(*v, nullptr, 0) : fallback;
  }
  bool flag(const std::string& name) {
    auto it = std::find(flags_.begin(), flags_.end(), name);
    if (it == flags_.end()) return false;
    flags_.erase(it);
    return true;
  }
  const std::vector<std::string>& flags() const { return flags_; }
  void finish() {
    if (!kv_.empty()) throw ScenarioError("unknown argument " + kv_.begin()->first + "=");
    if (!flags_.empty()) throw ScenarioError("unknown word '" + flags_.front() + "'");
  }

 private:
  std::map<std::string, std::string> kv_;
  std::vector<std::string> flags_;
};

// Expands "add*3" into three "add" labels.
std::vector<std::string> expand_labels(const std::vector<std::string>& words) {
  std::vector<std::string> out;
  for (const auto& w : words) {
    const auto star = w.find('*');
    if (star == std::string::npos) {
      out.push_back(w);
    } else {
      const int n = std::stoi(w.substr(star + 1));
      for (int i = 0; i < n && i < 1024; ++i) out.push_back(w.substr(0, star));
    }
  }
  return out;
}

std::string join_words(const std::vector<std::string>& words) {
  std::string s;
  for (const auto& w : words) s += (s.empty() ? "" : " ") + w;
  return s.empty() ? "none" : s;
}

class Runner {
 public:
  Runner(const std::string& name, const EngineFactory& make) : name_(name), make_(make) { mmo_config_default(&config_); }

  void run(std::string_view text) {
    std::vector<std::string> lines;
    {
      std::istringstream in{std::string(text)};
      std::string line;
      while (std::getline(in, line)) lines.push_back(line);
    }
    for (size_t i = 0; i < lines.size() && !aborted_; ++i) {
      line_ = static_cast<int>(i + 1);
      const std::string& raw = lines[i];
      const auto hash = raw.find('#');
      const std::string line = raw.substr(0, hash);
      if (split(line).empty()) continue;
      try {
        const auto [command, expect] = split_expectation(line);
        if (command.empty()) throw ScenarioError("empty command");
        if (command[0] == "moves" || command[0] == "economy") {
          std::vector<std::pair<int, std::string>> block;
          size_t j = i + 1;
          for (; j < lines.size(); ++j) {
            const std::string inner = lines[j].substr(0, lines[j].find('#'));
            const auto words = split(inner);
            if (words.empty()) continue;
            if (words[0] == "end") break;
            if (block.size() >= kBlockLinesMax) throw ScenarioError("block longer than 256 lines");
            block.emplace_back(static_cast<int>(j + 1), inner);
          }
          if (j == lines.size()) throw ScenarioError("block without 'end'");
          if (command[0] == "moves") {
            moves(command, block);
          } else {
            economy(block);
          }
          i = j;
        } else {
          step(command, expect);
        }
      } catch (const ScenarioError& e) {
        fail(std::string("scenario error: ") + e.what());
        aborted_ = true;
      } catch (const std::exception& e) {
        fail(std::string("scenario error (bad number?): ") + e.what());
        aborted_ = true;
      }
    }
  }

  Result result() && {
    Result r;
    r.name = name_;
    r.steps = steps_;
    r.failures = std::move(failures_);
    return r;
  }

 private:
  struct Player {
    uint64_t id = 0;
    uint64_t token = 0;
    uint32_t slot_hint = 0;  // the join ticket's, passed back with every move as the front does
  };

  static std::pair<std::vector<std::string>, std::vector<std::string>> split_expectation(const std::string& line) {
    const auto arrow = line.find("->");
    if (arrow == std::string::npos) return {split(line), {}};
    return {split(line.substr(0, arrow)), split(line.substr(arrow + 2))};
  }

  void fail(const std::string& what) { failures_.push_back(name_ + ":" + std::to_string(line_) + ": " + what); }

  void check(bool ok, const std::string& what) {
    ++checks_;
    if (!ok) fail(what);
  }

  template <typename T>
  void expect_eq(const std::string& what, const T& expected, const T& actual) {
    std::ostringstream m;
    m << what << ": expected " << expected << ", got " << actual;
    check(expected == actual, m.str());
  }

  void expect_near(const std::string& what, double expected, double actual) {
    std::ostringstream m;
    m << what << ": expected " << expected << ", got " << actual;
    check(std::fabs(expected - actual) <= kFloatTolerance, m.str());
  }

  Engine& engine() {
    if (!engine_) engine_ = make_(config_);
    return *engine_;
  }

  Player& player(const std::string& alias) {
    auto it = players_.find(alias);
    if (it == players_.end()) throw ScenarioError("unknown alias '" + alias + "' (join it first)");
    return it->second;
  }

  uint64_t token_for(const Player& p, Args& args) {
    const bool wrong = args.text("token").value_or("") == "wrong";
    return wrong ? p.token ^ kWrongTokenMask : p.token;
  }

  std::string label(uint64_t id, uint8_t kind) const {
    for (const auto& [alias, p] : players_) {
      if (p.id == id) return alias;
    }
    return kind_label(kind);
  }

  // A status expectation: "ok" or an MMO_ERR_ name.
  void expect_status(const std::vector<std::string>& expect, MmoStatus actual, const std::string& what) {
    if (expect.empty()) throw ScenarioError("missing '-> ok' or '-> MMO_ERR_...'");
    expect_eq(what + " status", expect[0], status_text(actual));
  }

  void step(const std::vector<std::string>& cmd, const std::vector<std::string>& expect) {
    ++steps_;
    const std::string& op = cmd[0];
    if (op == "config") return configure(cmd, expect);
    if (op == "join") return join(cmd, expect);
    if (op == "leave") return leave(cmd, expect);
    if (op == "tick") return tick(cmd, expect);
    if (op == "raid") return raid(cmd, expect);
    if (op == "damage") return damage(cmd, expect);
    if (op == "attack") return attack(cmd, expect);
    if (op == "claim") return claim(cmd, expect);
    if (op == "offer") return offer(cmd, expect);
    if (op == "answer") return answer(cmd, expect);
    if (op == "grant") return grant(cmd, expect);
    if (op == "aoi") return aoi(cmd, expect);
    if (op == "player") return view(cmd, expect);
    if (op == "stats") return stats(cmd);
    if (op == "audit") return audit(expect);
    throw ScenarioError("unknown command '" + op + "'");
  }

  void configure(const std::vector<std::string>& cmd, const std::vector<std::string>& expect) {
    if (engine_) throw ScenarioError("config must come before every other command");
    Args a(cmd, 1);
    auto f = [&](const char* key, float& field) { field = static_cast<float>(a.number_or(key, field)); };
    auto u = [&](const char* key, uint32_t& field) { field = static_cast<uint32_t>(a.integer_or(key, field)); };
    f("world_size_m", config_.world_size_m);
    f("cell_size_m", config_.cell_size_m);
    f("cell_hysteresis_m", config_.cell_hysteresis_m);
    f("max_speed_m_per_s", config_.max_speed_m_per_s);
    f("speed_slack_m", config_.speed_slack_m);
    f("contact_radius_m", config_.contact_radius_m);
    f("aoi_radius_m", config_.aoi_radius_m);
    f("snapshot_cell_m", config_.snapshot_cell_m);
    u("clock_slack_ms", config_.clock_slack_ms);
    u("contacts_per_move_max", config_.contacts_per_move_max);
    u("aoi_k", config_.aoi_k);
    u("player_capacity", config_.player_capacity);
    u("raid_object_capacity", config_.raid_object_capacity);
    u("raid_burst_capacity", config_.raid_burst_capacity);
    u("tick_ms", config_.tick_ms);
    config_.player_hp = static_cast<int32_t>(a.integer_or("player_hp", config_.player_hp));
    config_.starting_gold = static_cast<uint64_t>(a.integer_or("starting_gold", static_cast<int64_t>(config_.starting_gold)));
    config_.attack_damage = static_cast<int32_t>(a.integer_or("attack_damage", config_.attack_damage));
    f("attack_range_m", config_.attack_range_m);
    u("attack_cooldown_ms", config_.attack_cooldown_ms);
    u("respawn_ms", config_.respawn_ms);
    u("logout_linger_ms", config_.logout_linger_ms);
    f("loot_range_m", config_.loot_range_m);
    u("loot_gold_min", config_.loot_gold_min);
    u("loot_gold_max", config_.loot_gold_max);
    u("loot_item_permille", config_.loot_item_permille);
    u("loot_item_count_max", config_.loot_item_count_max);
    if (auto key = a.text("loot_key")) {  // 32 hex digits, the key's bytes in order
      if (key->size() != 2 * sizeof config_.loot_key || key->find_first_not_of("0123456789abcdefABCDEF") != std::string::npos) {
        throw ScenarioError("loot_key must be 32 hex digits");
      }
      for (size_t i = 0; i < sizeof config_.loot_key; ++i) config_.loot_key[i] = static_cast<uint8_t>(std::stoul(key->substr(2 * i, 2), nullptr, 16));
    }
    u("trade_timeout_ms", config_.trade_timeout_ms);
    a.finish();
    if (!expect.empty() && expect[0] == "invalid") {
      bool refused = false;
      try {
        engine_ = make_(config_);
      } catch (const std::exception&) {
        refused = true;
      }
      check(refused, "config: expected the engine to refuse this configuration, it accepted it");
      aborted_ = true;  // nothing further can run without an engine
    }
  }

  void join(const std::vector<std::string>& cmd, const std::vector<std::string>& expect) {
    if (cmd.size() < 2) throw ScenarioError("join <alias> x= y= [faction=] [account=]");
    Args a(cmd, 2);
    const float x = static_cast<float>(a.number("x"));
    const float y = static_cast<float>(a.number("y"));
    const auto faction = static_cast<uint8_t>(a.integer_or("faction", 1));
    const auto account = static_cast<uint64_t>(a.integer_or("account", 0));
    a.finish();
    MmoJoinTicket t{};
    const MmoStatus s = engine().join(account, x, y, faction, t);
    expect_status(expect, s, "join " + cmd[1]);
    if (s == MMO_OK) {
      check(t.player_id != 0 && t.session_token != 0, "join: id and token must be non-zero");
      check((t.player_id >> 63) == 0, "join: player ids never have bit 63 set");
      players_[cmd[1]] = {t.player_id, t.session_token, t.slot_hint};
    }
  }

  void leave(const std::vector<std::string>& cmd, const std::vector<std::string>& expect) {
    if (cmd.size() < 2) throw ScenarioError("leave <alias>");
    Args a(cmd, 2);
    Player& p = player(cmd[1]);
    const uint64_t token = token_for(p, a);
    a.finish();
    expect_status(expect, engine().leave(p.id, token), "leave " + cmd[1]);
  }

  void moves(const std::vector<std::string>& cmd, const std::vector<std::pair<int, std::string>>& block) {
    Args head(cmd, 1);
    const auto now_ms = static_cast<uint64_t>(head.integer("now"));
    head.finish();
    std::vector<MmoMoveRecord> records;
    std::vector<std::vector<std::string>> expects;
    std::vector<int> lines;
    for (const auto& [line, text] : block) {
      line_ = line;
      const auto [words, expect] = split_expectation(text);
      if (words.empty()) throw ScenarioError("empty move line");
      Player& p = player(words[0]);
      Args a(words, 1);
      MmoMoveRecord r{};
      r.player_id = p.id;
      r.session_token = token_for(p, a);
      r.slot_hint = p.slot_hint;
      r.sequence = static_cast<uint32_t>(a.integer("seq"));
      r.client_time_ms = static_cast<uint32_t>(a.integer("t"));
      r.x_m = static_cast<float>(a.number("x"));
      r.y_m = static_cast<float>(a.number("y"));
      r.facing_rad = static_cast<float>(a.number_or("facing", 0));
      for (size_t i = 0; i < sizeof(r.payload); ++i) r.payload[i] = static_cast<uint8_t>(i + r.sequence);
      a.finish();
      records.push_back(r);
      expects.push_back(expect);
      lines.push_back(line);
    }
    std::vector<MmoMoveEvent> events(std::max<size_t>(1, engine().move_events_required(records.size())));
    size_t written = 0;
    line_ = lines.empty() ? line_ : lines.front();
    const MmoStatus s = engine().apply_moves(records, now_ms, events, written);
    check(s == MMO_OK, "moves: batch status " + status_text(s));
    if (s != MMO_OK) return;
    size_t e = 0;
    for (size_t r = 0; r < records.size(); ++r) {
      line_ = lines[r];
      ++steps_;
      const auto& expect = expects[r];
      if (expect.empty()) throw ScenarioError("move without '-> ack ...' or '-> reject=...'");
      if (e >= written || events[e].player_id != records[r].player_id || events[e].sequence != records[r].sequence) {
        check(false, "moves: no event for this move (events out of order or missing)");
        return;
      }
      const MmoMoveEvent& first = events[e++];
      std::vector<std::string> got_contacts;
      while (first.kind == MMO_EVENT_KIND_ACK && e < written && events[e].kind == MMO_EVENT_KIND_CONTACT) {
        check(events[e].player_id == records[r].player_id, "moves: a contact event names another mover");
        got_contacts.push_back(label(events[e].other_id, events[e].detail));
        ++e;
      }
      Args a(expect, 1);
      if (expect[0] == "ack") {
        expect_eq<std::string>("move", "ack", first.kind == MMO_EVENT_KIND_ACK ? "ack" : std::string("reject=") + reject_name(first.detail));
        std::vector<std::string> want;
        if (auto c = a.text("contacts")) {
          std::string list = *c;
          std::replace(list.begin(), list.end(), ',', ' ');
          want = expand_labels(split(list));
        }
        expect_eq("move contacts", join_words(want), join_words(match_any(want, got_contacts)));
      } else if (expect[0].rfind("reject=", 0) == 0) {
        const std::string got = first.kind == MMO_EVENT_KIND_REJECT ? std::string("reject=") + reject_name(first.detail) : "ack";
        expect_eq("move", expect[0], got);
      } else {
        throw ScenarioError("move expectation must be 'ack [contacts=...]' or 'reject=<reason>'");
      }
      a.finish();
    }
    check(e == written, "moves: events left over after the last move");
  }

  // Contacts are a set: sorted. An expected "any" stands for one contact the engine may pick
  // freely (which contacts a capped move keeps is unspecified): each "any" consumes one
  // actual contact that no named label claimed.
  static std::vector<std::string> match_any(std::vector<std::string>& want, std::vector<std::string> got) {
    std::sort(want.begin(), want.end());
    std::sort(got.begin(), got.end());
    const auto any = static_cast<size_t>(std::count(want.begin(), want.end(), "any"));
    if (any == 0) return got;
    std::vector<std::string> named;
    std::copy_if(want.begin(), want.end(), std::back_inserter(named), [](const std::string& w) { return w != "any"; });
    std::vector<std::string> rest;
    std::set_difference(got.begin(), got.end(), named.begin(), named.end(), std::back_inserter(rest));
    std::vector<std::string> out;
    std::set_intersection(got.begin(), got.end(), named.begin(), named.end(), std::back_inserter(out));
    for (size_t i = 0; i < rest.size(); ++i) out.push_back(i < any ? "any" : rest[i]);
    std::sort(out.begin(), out.end());
    return out;
  }

  void economy(const std::vector<std::pair<int, std::string>>& block) {
    std::vector<MmoEconomyOp> ops;
    std::vector<std::vector<std::string>> expects;
    std::vector<int> lines;
    for (const auto& [line, text] : block) {
      line_ = line;
      const auto [words, expect] = split_expectation(text);
      if (words.size() < 2) throw ScenarioError("<alias> <transfer|trade|loot|spend> tx= ...");
      Player& p = player(words[0]);
      Args a(words, 2);
      MmoEconomyOp op{};
      op.player_id = p.id;
      op.session_token = token_for(p, a);
      op.transaction_id = static_cast<uint64_t>(a.integer("tx"));
      if (words[1] == "raw") {
        op.kind = static_cast<uint8_t>(a.integer("kind"));
      } else {
        const auto k = economy_kind(words[1]);
        if (!k) throw ScenarioError("unknown economy kind '" + words[1] + "'");
        op.kind = *k;
      }
      if (auto to = a.text("to")) {
        op.counterparty_id = *to == "ghost" ? kGhostPlayerId : *to == "self" ? p.id : player(*to).id;
      }
      op.gold = a.integer_or("gold", 0);
      op.item_count = static_cast<int32_t>(a.integer_or("items", 0));
      op.item_kind = static_cast<uint16_t>(a.integer_or("item", 0));
      a.finish();
      ops.push_back(op);
      expects.push_back(expect);
      lines.push_back(line);
    }
    std::vector<MmoEconomyResult> results(std::max<size_t>(1, ops.size()));
    size_t written = 0;
    const MmoStatus s = engine().apply_economy(ops, results, written);
    check(s == MMO_OK && written == ops.size(), "economy: batch status " + status_text(s));
    if (s != MMO_OK) return;
    for (size_t i = 0; i < ops.size(); ++i) {
      line_ = lines[i];
      ++steps_;
      const auto& expect = expects[i];
      if (expect.empty()) throw ScenarioError("economy line without '-> <status> ...'");
      const MmoEconomyResult& r = results[i];
      expect_eq<std::string>("economy status", expect[0], economy_status_name(r.status));
      Args a(expect, 1);
      expect_eq<uint64_t>("economy transaction echo", ops[i].transaction_id, r.transaction_id);
      expect_eq<int>("economy duplicate", a.flag("duplicate") ? 1 : 0, r.duplicate);
      if (auto b = a.text("balance")) expect_eq<uint64_t>("economy balance", std::stoull(*b), r.gold_balance);
      a.finish();
    }
  }

  // An economy result's expectation: <status> [balance=] [duplicate].
  void expect_economy(const std::string& what, const std::vector<std::string>& expect, uint64_t transaction_id, const MmoEconomyResult& r) {
    if (expect.empty()) throw ScenarioError(what + " needs '-> <status> [balance=] [duplicate]'");
    expect_eq<std::string>(what + " status", expect[0], economy_status_name(r.status));
    Args e(expect, 1);
    expect_eq<uint64_t>(what + " transaction echo", transaction_id, r.transaction_id);
    expect_eq<int>(what + " duplicate", e.flag("duplicate") ? 1 : 0, r.duplicate);
    if (auto b = e.text("balance")) expect_eq<uint64_t>(what + " balance", std::stoull(*b), r.gold_balance);
    e.finish();
  }

  // A trade stack from `<prefix>_gold= <prefix>_items= <prefix>_item=`.
  static MmoTradeStack stack_arg(Args& a, const std::string& prefix) {
    MmoTradeStack s{};
    s.gold = a.integer_or(prefix + "_gold", 0);
    s.item_count = static_cast<int32_t>(a.integer_or(prefix + "_items", 0));
    s.item_kind = static_cast<uint16_t>(a.integer_or(prefix + "_item", 0));
    return s;
  }

  // offer <maker> <taker|self|ghost> tx= now= [give_gold= give_items= give_item=] [want_...] [token=wrong]
  void offer(const std::vector<std::string>& cmd, const std::vector<std::string>& expect) {
    if (cmd.size() < 3) throw ScenarioError("offer <maker> <taker> tx= now= ...");
    Player& maker = player(cmd[1]);
    Args a(cmd, 3);
    MmoTradeOffer o{};
    o.player_id = maker.id;
    o.session_token = token_for(maker, a);
    o.transaction_id = static_cast<uint64_t>(a.integer("tx"));
    o.counterparty_id = cmd[2] == "ghost" ? kGhostPlayerId : cmd[2] == "self" ? maker.id : player(cmd[2]).id;
    const auto now_ms = static_cast<uint64_t>(a.integer("now"));
    o.give = stack_arg(a, "give");
    o.want = stack_arg(a, "want");
    a.finish();
    MmoEconomyResult r{};
    expect_eq<std::string>("offer call", "ok", status_text(engine().trade_offer(o, now_ms, r)));
    expect_economy("offer", expect, o.transaction_id, r);
  }

  // answer <who> <maker> accept|decline offer=<maker's tx> tx= now= [token=wrong]
  void answer(const std::vector<std::string>& cmd, const std::vector<std::string>& expect) {
    if (cmd.size() < 4) throw ScenarioError("answer <who> <maker> accept|decline offer= tx= now=");
    Player& who = player(cmd[1]);
    Args a(cmd, 4);
    MmoTradeAnswer ans{};
    ans.player_id = who.id;
    ans.session_token = token_for(who, a);
    ans.transaction_id = static_cast<uint64_t>(a.integer("tx"));
    ans.maker_id = cmd[2] == "ghost" ? kGhostPlayerId : player(cmd[2]).id;
    ans.offer_id = static_cast<uint64_t>(a.integer("offer"));
    if (cmd[3] != "accept" && cmd[3] != "decline") throw ScenarioError("answer: accept or decline");
    ans.accept = cmd[3] == "accept" ? 1 : 0;
    const auto now_ms = static_cast<uint64_t>(a.integer("now"));
    a.finish();
    MmoEconomyResult r{};
    expect_eq<std::string>("answer call", "ok", status_text(engine().trade_answer(ans, now_ms, r)));
    expect_economy("answer", expect, ans.transaction_id, r);
  }

  // grant <alias|ghost> id= [gold=] [items=] [item=]
  void grant(const std::vector<std::string>& cmd, const std::vector<std::string>& expect) {
    if (cmd.size() < 2) throw ScenarioError("grant <alias> id= ...");
    const uint64_t id = cmd[1] == "ghost" ? kGhostPlayerId : player(cmd[1]).id;
    Args a(cmd, 2);
    const auto grant_id = static_cast<uint64_t>(a.integer("id"));
    MmoTradeStack s{};
    s.gold = a.integer_or("gold", 0);
    s.item_count = static_cast<int32_t>(a.integer_or("items", 0));
    s.item_kind = static_cast<uint16_t>(a.integer_or("item", 0));
    a.finish();
    MmoEconomyResult r{};
    expect_eq<std::string>("grant call", "ok", status_text(engine().grant(id, grant_id, s, r)));
    expect_economy("grant", expect, grant_id, r);
  }

  void tick(const std::vector<std::string>& cmd, const std::vector<std::string>& expect) {
    Args head(cmd, 1);
    const auto now_ms = static_cast<uint64_t>(head.integer("now"));
    head.finish();
    MmoTickInfo info{};
    const MmoStatus s = engine().tick(now_ms, info);
    check(s == MMO_OK, "tick: status " + status_text(s));
    Args a(expect, 0);
    if (auto v = a.text("tick")) expect_eq<uint64_t>("tick number", std::stoull(*v), info.tick);
    if (auto v = a.text("players")) expect_eq<uint64_t>("tick players_live", std::stoull(*v), info.players_live);
    if (auto v = a.text("objects")) expect_eq<uint64_t>("tick objects_live", std::stoull(*v), info.objects_live);
    if (auto v = a.text("expired")) expect_eq<uint64_t>("tick objects_expired", std::stoull(*v), info.objects_expired);
    if (auto v = a.text("bursts")) expect_eq<uint64_t>("tick bursts_live", std::stoull(*v), info.bursts_live);
    a.finish();
  }

  void raid(const std::vector<std::string>& cmd, const std::vector<std::string>& expect) {
    Args a(cmd, 1);
    MmoRaidSpawnRequest r{};
    r.center_x_m = static_cast<float>(a.number("x"));
    r.center_y_m = static_cast<float>(a.number("y"));
    r.half_extent_m = static_cast<float>(a.number("half"));
    r.count = static_cast<uint32_t>(a.integer("count"));
    r.lifetime_ms = static_cast<uint32_t>(a.integer("lifetime"));
    r.hp = static_cast<int32_t>(a.integer_or("hp", 10));
    r.seed = static_cast<uint32_t>(a.integer_or("seed", 1));
    const std::string kind = a.text("kind").value_or("add");
    const auto k = entity_kind(kind);
    r.kind = k ? *k : static_cast<uint8_t>(std::stoi(kind));
    r.faction = static_cast<uint8_t>(a.integer_or("faction", 9));
    a.finish();
    MmoRaidReport report{};
    const MmoStatus s = engine().raid_spawn(r, report);
    expect_status(expect, s, "raid");
    if (s != MMO_OK || expect.empty() || expect[0] != "ok") return;
    Args e(expect, 1);
    if (auto v = e.text("spawned")) expect_eq<uint64_t>("raid spawned", std::stoull(*v), report.spawned);
    if (auto v = e.text("cells")) expect_eq<uint64_t>("raid cells", std::stoull(*v), report.cells);
    if (auto v = e.text("expires")) expect_eq<uint64_t>("raid expires_tick", std::stoull(*v), report.expires_tick);
    e.finish();
  }

  uint64_t target_id(const std::string& target) {
    if (target == "ghost") return kGhostPlayerId;
    if (target == "ghost_object") return kGhostObjectId;
    if (target.rfind("aoi:", 0) == 0) {
      // aoi:<alias>:<index>: the entity at that place in the alias's AoI snapshot.
      const auto colon = target.find(':', 4);
      if (colon == std::string::npos) throw ScenarioError("target aoi:<alias>:<index>");
      const Player& viewer = player(target.substr(4, colon - 4));
      const size_t index = std::stoul(target.substr(colon + 1));
      std::vector<MmoAoiEntry> entries(64);
      size_t n = 0;
      if (engine().area_of_interest(viewer.id, entries, n) != MMO_OK || index >= n) throw ScenarioError("no AoI entry " + target);
      return entries[index].entity_id;
    }
    return player(target).id;
  }

  void damage(const std::vector<std::string>& cmd, const std::vector<std::string>& expect) {
    if (cmd.size() < 3) throw ScenarioError("damage <attacker> <target> amount=");
    Player& attacker = player(cmd[1]);
    const uint64_t target = target_id(cmd[2]);
    Args a(cmd, 3);
    const uint64_t token = token_for(attacker, a);
    const auto amount = static_cast<int32_t>(a.integer("amount"));
    a.finish();
    MmoDamageResult r{};
    const MmoStatus s = engine().damage(attacker.id, token, target, amount, r);
    if (expect.empty()) throw ScenarioError("damage needs '-> hit|killed|dead hp=' or '-> MMO_ERR_...'");
    if (expect[0].rfind("MMO_", 0) == 0) {
      expect_eq<std::string>("damage status", expect[0], status_text(s));
      return;
    }
    expect_eq<std::string>("damage status", "ok", status_text(s));
    static const char* const outcomes[] = {"?", "hit", "killed", "dead"};
    expect_eq<std::string>("damage outcome", expect[0], r.outcome <= 3 ? outcomes[r.outcome] : "?");
    Args e(expect, 1);
    if (auto v = e.text("hp")) expect_eq<int64_t>("damage hp_left", std::stoll(*v), r.hp_left);
    e.finish();
  }

  // attack <attacker> <target> now=<ms> [token=wrong] -> landed damage= hp= [killed] | refused=<reason>
  void attack(const std::vector<std::string>& cmd, const std::vector<std::string>& expect) {
    if (cmd.size() < 3) throw ScenarioError("attack <attacker> <target> now=");
    Player& attacker = player(cmd[1]);
    const uint64_t target = target_id(cmd[2]);
    Args a(cmd, 3);
    const uint64_t token = token_for(attacker, a);
    const auto now_ms = static_cast<uint64_t>(a.integer("now"));
    a.finish();
    MmoAttackResult r{};
    const MmoStatus s = engine().attack(attacker.id, token, target, now_ms, r);
    expect_eq<std::string>("attack status", "ok", status_text(s));
    if (expect.empty()) throw ScenarioError("attack needs '-> landed damage= hp= [killed]' or '-> refused=<reason>'");
    static const char* const refusals[] = {"landed",        "unknown_player", "wrong_session", "attacker_dead", "unknown_target",
                                           "friendly_fire", "target_dead",    "out_of_range",  "cooldown"};
    const std::string got = r.refusal < std::size(refusals) ? refusals[r.refusal] : "?";
    if (expect[0].rfind("refused=", 0) == 0) {
      expect_eq<std::string>("attack refusal", expect[0].substr(8), got);
      return;
    }
    expect_eq<std::string>("attack result", expect[0], got);
    Args e(expect, 1);
    if (auto v = e.text("damage")) expect_eq<int64_t>("attack damage", std::stoll(*v), r.damage);
    if (auto v = e.text("hp")) expect_eq<int64_t>("attack hp_left", std::stoll(*v), r.hp_left);
    expect_eq<int64_t>("attack killed", e.flag("killed") ? 1 : 0, r.killed);
    e.finish();
  }

  // claim <claimer> <loot> [token=wrong] -> claimed [gold=] [items=] [gold_after=] [repeat] | refused=<reason>
  void claim(const std::vector<std::string>& cmd, const std::vector<std::string>& expect) {
    if (cmd.size() < 3) throw ScenarioError("claim <claimer> <loot>");
    Player& claimer = player(cmd[1]);
    const uint64_t loot = target_id(cmd[2]);
    Args a(cmd, 3);
    const uint64_t token = token_for(claimer, a);
    a.finish();
    MmoLootResult r{};
    const MmoStatus s = engine().claim_loot(claimer.id, token, loot, r);
    expect_eq<std::string>("claim status", "ok", status_text(s));
    if (expect.empty()) throw ScenarioError("claim needs '-> claimed [gold=] [items=] [gold_after=] [repeat]' or '-> refused=<reason>'");
    static const char* const refusals[] = {"claimed",     "unknown_player", "wrong_session", "unknown_loot", "no_loot",
                                           "not_yours",   "out_of_range",   "wallet_full",   "storage_busy", "dead"};
    static_assert(std::size(refusals) == MMO_LOOT_ERROR_DEAD + 1);
    const std::string got = r.refusal < std::size(refusals) ? refusals[r.refusal] : "?";
    if (expect[0].rfind("refused=", 0) == 0) {
      expect_eq<std::string>("claim refusal", expect[0].substr(8), got);
      return;
    }
    expect_eq<std::string>("claim result", expect[0], got);
    Args e(expect, 1);
    if (auto v = e.text("gold")) expect_eq<uint64_t>("claim gold", std::stoull(*v), r.gold);
    if (auto v = e.text("items")) expect_eq<uint64_t>("claim item_count", std::stoull(*v), r.item_count);
    if (auto v = e.text("gold_after")) expect_eq<uint64_t>("claim gold_after", std::stoull(*v), r.gold_after);
    expect_eq<int64_t>("claim repeat", e.flag("repeat") ? 1 : 0, r.repeat);
    e.finish();
  }

  void aoi(const std::vector<std::string>& cmd, const std::vector<std::string>& expect) {
    if (cmd.size() < 2) throw ScenarioError("aoi <alias>");
    Player& p = player(cmd[1]);
    std::vector<MmoAoiEntry> entries(64);
    size_t n = 0;
    const MmoStatus s = engine().area_of_interest(p.id, entries, n);
    if (!expect.empty() && expect[0].rfind("MMO_", 0) == 0) {
      expect_eq<std::string>("aoi status", expect[0], status_text(s));
      return;
    }
    expect_eq<std::string>("aoi status", "ok", status_text(s));
    std::vector<std::string> got;
    for (size_t i = 0; i < n; ++i) {
      got.push_back(label(entries[i].entity_id, entries[i].kind));
      if (i > 0) check(entries[i - 1].distance_m <= entries[i].distance_m + kFloatTolerance, "aoi: not nearest first");
    }
    std::vector<std::string> want = expect.size() == 1 && expect[0] == "none" ? std::vector<std::string>{} : expand_labels(expect);
    expect_eq("aoi entries", join_words(want), join_words(got));
  }

  void view(const std::vector<std::string>& cmd, const std::vector<std::string>& expect) {
    if (cmd.size() < 2) throw ScenarioError("player <alias>");
    Player& p = player(cmd[1]);
    MmoPlayerView v{};
    const MmoStatus s = engine().player_view(p.id, v);
    if (!expect.empty() && expect[0].rfind("MMO_", 0) == 0) {
      expect_eq<std::string>("player status", expect[0], status_text(s));
      return;
    }
    expect_eq<std::string>("player status", "ok", status_text(s));
    Args a(expect, 0);
    if (auto x = a.text("x")) expect_near("player x", std::stod(*x), v.x_m);
    if (auto y = a.text("y")) expect_near("player y", std::stod(*y), v.y_m);
    if (auto q = a.text("seq")) expect_eq<uint64_t>("player last_sequence", std::stoull(*q), v.last_sequence);
    if (auto h = a.text("hp")) expect_eq<int64_t>("player hp", std::stoll(*h), v.hp);
    if (auto g = a.text("gold")) expect_eq<uint64_t>("player gold", std::stoull(*g), v.gold);
    if (auto c = a.text("cell")) expect_eq<uint64_t>("player cell", std::stoull(*c), v.cell);
    if (auto f = a.text("faction")) expect_eq<uint64_t>("player faction", std::stoull(*f), v.faction);
    for (int k = 0; k < 16; ++k) {
      if (auto it = a.text("item" + std::to_string(k))) expect_eq<uint64_t>("player item" + std::to_string(k), std::stoull(*it), v.items[k]);
    }
    a.finish();
  }

  void stats(const std::vector<std::string>& cmd) {
    MmoStats s{};
    check(engine().stats(s) == MMO_OK, "stats call failed");
    Args a(cmd, 1);
#define MMO_CONFORMANCE_STAT(f) \
  if (auto v = a.text(#f)) expect_eq<uint64_t>("stats " #f, std::stoull(*v), s.f);
    MMO_STATS_FIELDS(MMO_CONFORMANCE_STAT)
#undef MMO_CONFORMANCE_STAT
    a.finish();
  }

  void audit(const std::vector<std::string>& expect) {
    MmoEconomyAudit au{};
    check(engine().economy_audit(au) == MMO_OK, "audit call failed");
    Args a(expect, 0);
    if (auto v = a.text("conserved")) expect_eq<uint64_t>("audit conserved", std::stoull(*v), au.conserved);
    if (auto v = a.text("live")) expect_eq<uint64_t>("audit live_gold", std::stoull(*v), au.live_gold);
    if (auto v = a.text("departed")) expect_eq<uint64_t>("audit departed_gold", std::stoull(*v), au.departed_gold);
    if (auto v = a.text("minted")) expect_eq<uint64_t>("audit minted_gold", std::stoull(*v), au.minted_gold);
    if (auto v = a.text("sunk")) expect_eq<uint64_t>("audit sunk_gold", std::stoull(*v), au.sunk_gold);
    if (auto v = a.text("wallets")) expect_eq<uint64_t>("audit open_wallets", std::stoull(*v), au.open_wallets);
    if (auto v = a.text("loot_gold")) expect_eq<uint64_t>("audit loot_minted_gold", std::stoull(*v), au.loot_minted_gold);
    if (auto v = a.text("loot_items")) expect_eq<uint64_t>("audit loot_minted_items", std::stoull(*v), au.loot_minted_items);
    if (auto v = a.text("grant_gold")) expect_eq<uint64_t>("audit grant_minted_gold", std::stoull(*v), au.grant_minted_gold);
    if (auto v = a.text("grant_items")) expect_eq<uint64_t>("audit grant_minted_items", std::stoull(*v), au.grant_minted_items);
    if (auto v = a.text("escrowed")) expect_eq<uint64_t>("audit escrowed_gold", std::stoull(*v), au.escrowed_gold);
    if (auto v = a.text("offers")) expect_eq<uint64_t>("audit open_offers", std::stoull(*v), au.open_offers);
    a.finish();
  }

  std::string name_;
  const EngineFactory& make_;
  MmoConfig config_{};
  std::unique_ptr<Engine> engine_;
  std::map<std::string, Player> players_;
  std::vector<std::string> failures_;
  int line_ = 0;
  int steps_ = 0;
  int checks_ = 0;
  bool aborted_ = false;
};

}  // namespace

Result run_text(std::string_view text, const std::string& name, const EngineFactory& make) {
  Runner runner(name, make);
  runner.run(text);
  return std::move(runner).result();
}

Result run_file(const std::string& path, const EngineFactory& make) {
  std::ifstream in(path);
  if (!in) {
    Result r;
    r.name = path;
    r.failures.push_back(path + ": cannot open");
    return r;
  }
  std::stringstream buf;
  buf << in.rdbuf();
  const auto slash = path.find_last_of('/');
  return run_text(buf.str(), slash == std::string::npos ? path : path.substr(slash + 1), make);
}

}  // namespace mmo::conformance
