// mmo-server as an operator runs it: a settings file (a raid beyond the default capacity once
// the file raises it, flags overriding the file, bad keys named), the committed example file
// and the README's flags table kept equal to what the binary prints, the Prometheus endpoint,
// a poisoned engine stopping the server with its reason, every admin stats request
// answered, and the null engine (the comparison's floor) acknowledging moves.
#include <gtest/gtest.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <regex>
#include <sstream>
#include <string>

#include "net/aoi_pace.hpp"
#include "net/thread_sched.hpp"
#include "net/udp.hpp"
#include "server_harness.hpp"

namespace {

using namespace mmo::wire;
using namespace mmo::test;

// Runs a shell command; returns {exit status, stdout and stderr}.
std::pair<int, std::string> run(const std::string& command) {
  std::string out;
  FILE* p = popen((command + " 2>&1").c_str(), "r");
  if (p == nullptr) return {-1, ""};
  std::array<char, 4096> buf{};
  size_t n;
  while ((n = std::fread(buf.data(), 1, buf.size(), p)) > 0) out.append(buf.data(), n);
  const int status = pclose(p);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, out};
}

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// A settings file in the test's temporary directory.
std::string write_settings(const std::string& name, const std::string& text) {
  const std::string path = ::testing::TempDir() + name;
  std::ofstream(path) << text;
  return path;
}

RaidResult raid(Client& admin, uint32_t request_id, uint32_t count) {
  admin.send(RaidTrigger{kAdminKey, request_id, count, 2000, 2000, 100, 2000, 10, 7, 2, 9});
  const auto r = admin.wait_for<RaidResult>(std::chrono::milliseconds(5000), [&](const RaidResult& m) { return m.request_id == request_id; });
  EXPECT_TRUE(r.has_value());
  return r.value_or(RaidResult{});
}

// The area-of-interest round's pace: pure arithmetic on a given clock (no timing).
TEST(AoiPace, WithNoSpanTheWholeRoundIsDueAtOnce) {
  mmo::net::AoiPace pace;
  pace.start(5'000, 0, 1000);
  EXPECT_EQ(pace.due(5'000), SIZE_MAX);
  EXPECT_EQ(pace.owed(5'000), SIZE_MAX);
  EXPECT_EQ(pace.wait_ms(5'000, 100), 0);
  pace.sent(1000);
  EXPECT_EQ(pace.wait_ms(5'000, 100), 0);  // sessions that joined since are due too
}

TEST(AoiPace, SessionsAreDueEvenlyOverTheSpanAndAllOnceItEnds) {
  mmo::net::AoiPace pace;
  pace.start(1'000'000, 80'000, 1000);
  EXPECT_EQ(pace.due(1'000'000), 1u);       // the first at once
  EXPECT_EQ(pace.due(1'040'000), 501u);     // half the span: half the sessions, plus the first
  EXPECT_EQ(pace.due(1'079'999), 1000u);    // never more than the round before the span ends
  EXPECT_EQ(pace.due(1'080'000), SIZE_MAX); // then everything left
  EXPECT_EQ(pace.due(999'000), 1u);         // a clock before the start counts as the start
  size_t last = 0;
  for (uint64_t t = 1'000'000; t < 1'080'000; t += 37) {
    const size_t d = pace.due(t);
    EXPECT_GE(d, last) << t;
    EXPECT_LE(d, 1000u) << t;
    last = d;
  }
}

TEST(AoiPace, AWorkerSleepsUntilTheNextSessionIsDueAndNoMillisecondLonger) {
  for (const size_t sessions : {1u, 3u, 64u, 1000u, 5000u}) {
    mmo::net::AoiPace pace;
    const uint64_t start = 77'000;
    pace.start(start, 80'000, sessions);
    uint64_t now = start;
    // Bounded: each turn either sends what is owed or sleeps at least 1 ms of an 80 ms span.
    for (int turn = 0; turn < 200'000 && pace.sent() < sessions; ++turn) {
      const size_t owed = pace.owed(now);
      if (owed > 0) {
        EXPECT_EQ(pace.wait_ms(now, 100), 0);
        pace.sent(std::min<size_t>({owed, 64, sessions - pace.sent()}));  // a chunk: at most 64, of those left
        continue;
      }
      const int wait = pace.wait_ms(now, 100);
      ASSERT_GE(wait, 1);
      EXPECT_GT(pace.owed(now + static_cast<uint64_t>(wait) * 1000), 0u) << "slept past nothing: " << sessions << " at " << now;
      if (wait > 1) {
        EXPECT_EQ(pace.owed(now + static_cast<uint64_t>(wait - 1) * 1000), 0u) << "woke a millisecond late";
      }
      now += static_cast<uint64_t>(wait) * 1000;
    }
    EXPECT_EQ(pace.sent(), sessions);
    EXPECT_LE(now, start + 80'000) << "every session went out within the span";
  }
}

TEST(ServerOperations, TheSettingsFileRaisesTheRaidCapacityAndFlagsOverrideIt) {
  // 40,000 objects: more than the default capacity (32,768) holds.
  {
    ServerProcess server({});
    ASSERT_NE(server.port(), 0) << server.first_line();
    Client admin(server.port());
    const RaidResult r = raid(admin, 1, 40'000);
    EXPECT_EQ(r.status, MMO_ERR_CAPACITY) << "refused whole at the default capacity";
    EXPECT_EQ(r.spawned, 0u);
  }
  const std::string path = write_settings("raid.toml",
                                          "[server]\n"
                                          "tick_hz = 5\n"
                                          "[core]\n"
                                          "raid_object_capacity = 100000\n");
  ServerProcess server({"--config", path});  // the harness passes --tick-hz 20 after this
  ASSERT_NE(server.port(), 0) << server.first_line();
  EXPECT_NE(server.first_line().find("tick_hz=20"), std::string::npos) << "the flag overrides the file: " << server.first_line();
  Client admin(server.port());
  const RaidResult r = raid(admin, 2, 40'000);
  EXPECT_EQ(r.status, MMO_OK);
  EXPECT_EQ(r.spawned, 40'000u);
  const auto stats = server_stats(admin, 3);
  EXPECT_EQ(stats.at("engine_raid_objects_spawned"), 40'000u);
  const auto [status, rest] = server.terminate();
  EXPECT_EQ(WEXITSTATUS(status), 0) << rest;
}

TEST(ServerOperations, AdminMessagesFromOutsideTheAdminSourcesAreDroppedWithTheRightKey) {
  ServerProcess server({"--admin-sources", "127.0.0.1/32"});
  ASSERT_NE(server.port(), 0) << server.first_line();
  Client outsider(server.port(), 0x7f000002);  // loopback, but not the one admin address
  outsider.send(StatsRequest{kAdminKey, 1});
  outsider.send(RaidTrigger{kAdminKey, 2, 100, 1000, 1000, 10, 1000, 10, 1, 2, 9});
  outsider.send(Grant{kAdminKey, 1, 1, {1000, 0, 0}});
  EXPECT_FALSE(outsider.wait_for<StatsReply>(std::chrono::milliseconds(300))) << "no stats to an address outside --admin-sources";
  Client admin(server.port());
  const auto stats = server_stats(admin, 3);
  ASSERT_FALSE(stats.empty()) << "answered at 127.0.0.1";
  EXPECT_EQ(stats.at("drop_admin_wrong_source"), 3u);
  EXPECT_EQ(stats.at("drop_bad_admin_key"), 0u);
  EXPECT_EQ(stats.at("engine_raid_bursts"), 0u);
  EXPECT_EQ(stats.at("engine_raid_objects_spawned"), 0u);
}

TEST(ServerOperations, BadSettingsNameTheKeyAndTheRange) {
  const std::string bin = MMO_SERVER_BINARY;
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"[core]\nraid_object_capacity = 99999999\n", "core.raid_object_capacity = 99999999 is out of range 0..16777216"},
      {"[core]\nworld_size = 4096.0\n", "core.world_size is not a setting"},
      {"[core]\naoi_k = \"many\"\n", "core.aoi_k must be an integer in 1..64"},
      {"[server]\nport = 1.5\n", "server.port must be an integer in 0..65535"},
      {"[server]\naddress_table_slots = 1000\n", "server.address_table_slots = 1000 must be a power of two"},
      {"[core]\ncell_size_m = 8.0\ncontact_radius_m = 8.0\n", "contact_radius_m + cell_hysteresis_m must not exceed cell_size_m"},
      {"[server]\nengine = \"python\"\n", "server.engine = \"python\" must be \"rust\", \"baseline\" or \"null\""},
      {"[logging]\nlevel = 3\n", "logging.level is not a setting"},
      {"[core\n", "raid-bad-9.toml:1:"},
      {"[core]\nloot_key = \"00112233\"\n", "core.loot_key must be 32 hex digits"},
      {"[core]\nloot_key = \"0123456789abcdef0123456789abcdeg\"\n", "core.loot_key must be 32 hex digits"},
      {"[core]\nloot_key = \"00000000000000000000000000000000\"\n", "core.loot_key must be 32 hex digits, not all zero"},
      {"[server]\nadmin_sources = \"10.0.0.5/24\"\n", "server.admin_sources: \"10.0.0.5/24\" has bits set past its /24"},
      {"[server]\nadmin_sources = \"admin.example\"\n", "server.admin_sources: \"admin.example\" is not an IPv4 address"},
  };
  for (size_t i = 0; i < cases.size(); ++i) {
    const std::string path = write_settings("raid-bad-" + std::to_string(i + 1) + ".toml", cases[i].first);
    const auto [status, out] = run(bin + " --config " + path + " --port 0");
    EXPECT_EQ(status, 2) << cases[i].first << out;
    EXPECT_NE(out.find(cases[i].second), std::string::npos) << "wanted '" << cases[i].second << "' in: " << out;
  }
  const auto [status, out] = run(bin + " --aoi-k 65");
  EXPECT_EQ(status, 2);
  EXPECT_NE(out.find("core.aoi_k = 65 is out of range 1..64"), std::string::npos) << out;
}

TEST(ServerOperations, TheExampleFileAndTheReadmeTableAreWhatTheBinaryPrints) {
  const std::string bin = MMO_SERVER_BINARY;
  const auto [s1, printed] = run(bin + " --print-config");
  ASSERT_EQ(s1, 0) << printed;
  EXPECT_EQ(printed, read_file(MMO_EXAMPLE_CONFIG)) << "regenerate with: make settings-docs";
  // The example, read back, is the configuration it describes.
  const auto [s2, again] = run(bin + " --config " + MMO_EXAMPLE_CONFIG + " --print-config");
  ASSERT_EQ(s2, 0) << again;
  EXPECT_EQ(again, printed);
  const auto [s3, table] = run(bin + " --print-flags-table");
  ASSERT_EQ(s3, 0);
  EXPECT_NE(read_file(MMO_README).find(table), std::string::npos) << "the README's flags table is stale: make settings-docs";
}

// GET /metrics over a plain socket.
std::string http_get(const std::string& url) {
  const auto host_start = url.find("://") + 3;
  const auto colon = url.find(':', host_start);
  const auto slash = url.find('/', colon);
  const std::string host = url.substr(host_start, colon - host_start);
  const int port = std::stoi(url.substr(colon + 1, slash - colon - 1));
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_port = htons(static_cast<uint16_t>(port));
  inet_pton(AF_INET, host.c_str(), &sa.sin_addr);
  if (connect(fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa) != 0) {
    close(fd);
    return "";
  }
  const std::string request = "GET " + url.substr(slash) + " HTTP/1.1\r\nHost: " + host + "\r\nConnection: close\r\n\r\n";
  send(fd, request.data(), request.size(), 0);
  std::string response;
  std::array<char, 8192> buf{};
  ssize_t n;
  while ((n = recv(fd, buf.data(), buf.size(), 0)) > 0) response.append(buf.data(), static_cast<size_t>(n));
  close(fd);
  return response;
}

// The metrics URL the server printed in its first line (`metrics=http://...`); empty if none.
std::string metrics_url(const std::string& first_line) {
  const auto at = first_line.find("metrics=http://");
  if (at == std::string::npos) return {};
  return first_line.substr(at + 8, first_line.find_first_of(" \n", at) - at - 8);
}

// A server with /metrics on and one joined player, for the tests of the endpoint.
class MetricsEndpoint : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_NE(server_.port(), 0) << server_.first_line();
    url_ = metrics_url(server_.first_line());
    ASSERT_FALSE(url_.empty()) << server_.first_line();
    client_.emplace(server_.port());
    joined_ = join(*client_, 7);
  }
  // One scrape: the whole HTTP response.
  std::string scrape_response() const { return http_get(url_); }
  // The exposition alone, past an HTTP response's headers.
  static std::string exposition(const std::string& response) { return response.substr(response.find("\r\n\r\n") + 4); }
  // One scrape: the exposition alone.
  std::string scrape() const { return exposition(scrape_response()); }

  ServerProcess server_{{"--metrics-bind", "127.0.0.1:0", "--spawn-points", "1000,1000,0"}};
  std::string url_;
  std::optional<Client> client_;
  Joined joined_{};
};

TEST_F(MetricsEndpoint, IsServedInThePrometheusTextFormat) {
  Client& a = *client_;
  a.send(move(joined_, 1, 100, 1001, 1000));
  ASSERT_TRUE(a.wait_for<MoveAck>());
  Bytes bad(kMoveSize);
  encode(move(joined_, 2, 200, 1001, 1000), bad);
  bad[0] ^= 0xff;
  a.send_raw(bad);
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  const std::string response = scrape_response();
  ASSERT_EQ(response.rfind("HTTP/1.1 200", 0), 0u) << response.substr(0, 200);
  EXPECT_NE(response.find("Content-Type: text/plain; version=0.0.4"), std::string::npos);
  const std::string body = exposition(response);
  for (const char* line : {"mmo_engine_moves_applied_total 1", "mmo_drops_total{reason=\"bad_magic\"} 1", "mmo_sessions_live 1",
                           "mmo_update_latency_seconds_count 1", "mmo_update_latency_seconds_bucket{le=\"+Inf\"} 1",
                           "mmo_update_service_seconds_count 1", "mmo_engine_poisoned 0",
                           "# TYPE mmo_tick_duration_seconds histogram", "mmo_engine_errors_total{status=\"MMO_ERR_PANIC\"} 0"}) {
    EXPECT_NE(body.find(line), std::string::npos) << line;
  }
  // promtool (Debian's prometheus package, installed by make deps) validates the format.
  const std::string file = ::testing::TempDir() + "metrics.txt";
  std::ofstream(file) << body;
  const auto [status, out] = run("promtool check metrics < " + file);
  EXPECT_EQ(status, 0) << out;
}

// The Grafana dashboard (docs/grafana/mmo-server.json) names only metrics the server exports,
// and every panel's query parses (promtool checks them as recording rules).
TEST_F(MetricsEndpoint, TheGrafanaDashboardQueriesOnlyWhatTheServerExports) {
  client_->send(move(joined_, 1, 100, 1001, 1000));
  ASSERT_TRUE(client_->wait_for<MoveAck>());
  const std::string body = scrape();

  const std::string dashboard = read_file(MMO_GRAFANA_DASHBOARD);
  const std::regex expr_field(R"re("expr":\s*"((?:[^"\\]|\\.)*)")re");
  const std::regex metric_name(R"re(\bmmo_[a-z0-9_]+)re");
  std::string rules = "groups:\n  - name: dashboard\n    rules:\n";
  size_t queries = 0;
  for (auto it = std::sregex_iterator(dashboard.begin(), dashboard.end(), expr_field); it != std::sregex_iterator(); ++it) {
    std::string expr;  // JSON unescaped: the dashboard's queries escape only quotes
    const std::string raw = (*it)[1].str();
    for (size_t i = 0; i < raw.size(); ++i) expr += (raw[i] == '\\' && i + 1 < raw.size()) ? raw[++i] : raw[i];
    for (auto m = std::sregex_iterator(expr.begin(), expr.end(), metric_name); m != std::sregex_iterator(); ++m) {
      const std::string name = m->str();
      const bool exported = body.find("\n" + name + " ") != std::string::npos || body.find("\n" + name + "{") != std::string::npos;
      EXPECT_TRUE(exported) << name << " (in the dashboard's query " << expr << ") is not in /metrics";
    }
    std::string quoted;  // a YAML single-quoted scalar: quotes doubled
    for (const char c : expr) quoted += (c == '\'') ? std::string("''") : std::string(1, c);
    rules += "      - record: dashboard:query_" + std::to_string(queries++) + "\n        expr: '" + quoted + "'\n";
  }
  EXPECT_GE(queries, 20u) << "the dashboard's queries were not found";
  const std::string file = ::testing::TempDir() + "dashboard-rules.yml";
  std::ofstream(file) << rules;
  const auto [status, out] = run("promtool check rules " + file + " 2>&1");
  EXPECT_EQ(status, 0) << out;
}

// The value of the sample `name` (with its labels, if any) in a Prometheus text body; -1 if absent.
double metric_value(const std::string& body, const std::string& name) {
  const auto at = body.find("\n" + name + " ");
  if (at == std::string::npos) return -1;
  return std::stod(body.substr(at + name.size() + 2));
}

TEST_F(MetricsEndpoint, TheSystemCallCountersAccountForEveryDatagram) {
  Client& a = *client_;
  // One move at a time, each answered before the next is sent: each arrives on its own, so
  // each costs at least one loop turn, one recvmmsg and one sendmmsg of its own.
  constexpr uint32_t kMoves = 20;
  for (uint32_t seq = 1; seq <= kMoves; ++seq) {
    a.send(move(joined_, seq, 100 * seq, 1000.0f + 0.1f * static_cast<float>(seq), 1000));
    ASSERT_TRUE(a.wait_for<MoveAck>()) << "move " << seq;
  }
  const std::string body = scrape();
  const double received = metric_value(body, "mmo_datagrams_received_total");
  const double sent = metric_value(body, "mmo_datagrams_sent_total");
  const double turns = metric_value(body, "mmo_worker_loop_turns_total");
  const double receives = metric_value(body, "mmo_receive_calls_total");
  const double sends = metric_value(body, "mmo_send_calls_total");
  EXPECT_GE(received, kMoves) << body;
  EXPECT_GE(turns, kMoves);
  EXPECT_GE(receives, kMoves);
  EXPECT_GE(sends, kMoves);
  // A recvmmsg or sendmmsg carries at most a batch.
  EXPECT_LE(received, receives * static_cast<double>(mmo::net::kBatchMax));
  EXPECT_LE(sent, sends * static_cast<double>(mmo::net::kBatchMax));
  // The worker slept between the moves.
  EXPECT_GT(metric_value(body, "mmo_process_context_switches_total{kind=\"voluntary\"}"), 0);
  EXPECT_GE(metric_value(body, "mmo_process_context_switches_total{kind=\"involuntary\"}"), 0);
}

TEST(ServerOperations, APoisonedEngineStopsTheServerWithItsReason) {
  ServerProcess server({"--engine", "rust", "--debug-inject-panic-after-moves", "3", "--spawn-points", "1000,1000,0"});
  ASSERT_NE(server.port(), 0) << server.first_line();
  Client a(server.port());
  const Joined ja = join(a, 9);
  for (uint32_t seq = 1; seq <= 3; ++seq) a.send(move(ja, seq, seq * 100, 1000, 1000));
  const auto [status, rest] = server.wait_exit(std::chrono::milliseconds(5000));
  ASSERT_NE(status, -1) << "the server kept running with a poisoned engine";
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 3);
  EXPECT_NE(rest.find("mmo-server: stopping: the engine is poisoned (debug_inject_panic returned MMO_ERR_PANIC)"), std::string::npos) << rest;
  EXPECT_NE(rest.find("engine_status_err_panic 1"), std::string::npos) << rest;
  EXPECT_NE(rest.find("engine_poisoned 1"), std::string::npos) << rest;
  // The final counters say the engine could not be read, instead of printing its counters
  // and books as zeros (which would read as a reset and as books that do not balance).
  EXPECT_NE(rest.find("engine_readable 0"), std::string::npos) << rest;
  EXPECT_EQ(rest.find("engine_moves_applied "), std::string::npos) << rest;
  EXPECT_EQ(rest.find("economy_conserved "), std::string::npos) << rest;
  EXPECT_NE(rest.find("moves_applied=unreadable"), std::string::npos) << rest;
}

// The server's threads by name (/proc/PID/task/*/comm), name -> thread id.
std::map<std::string, int> threads_by_name(pid_t pid) {
  std::map<std::string, int> threads;
  for (const auto& task : std::filesystem::directory_iterator("/proc/" + std::to_string(pid) + "/task")) {
    std::string name = read_file(task.path().string() + "/comm");
    while (!name.empty() && name.back() == '\n') name.pop_back();
    threads[name] = std::stoi(task.path().filename().string());
  }
  return threads;
}

// The server's stats and threads once its workers and tick thread have started: each thread
// names itself as it starts, and a worker records its slice then (at most a second).
std::pair<std::map<std::string, uint64_t>, std::map<std::string, int>> once_started(const ServerProcess& server, Client& admin) {
  const auto deadline = Clock::now() + std::chrono::seconds(1);
  for (uint32_t id = 1;; ++id) {
    auto stats = server_stats(admin, id);
    auto threads = threads_by_name(server.pid());
    const bool named = threads.contains("mmo-worker-0") && threads.contains("mmo-worker-1") && threads.contains("mmo-tick");
    const bool recorded = stats.contains("worker_slice_us") && stats.at("worker_slice_us") != 0;
    if ((named && recorded) || Clock::now() >= deadline) return {stats, threads};
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

TEST(ServerOperations, WorkersHoldTheSchedulerSliceTheyAskForAndTheTickKeepsTheDefault) {
  ServerProcess server({"--worker-slice-us", "300"});
  ASSERT_NE(server.port(), 0) << server.first_line();
  Client admin(server.port());
  const auto [stats, threads] = once_started(server, admin);
  for (const char* name : {"mmo-worker-0", "mmo-worker-1", "mmo-tick"}) ASSERT_TRUE(threads.contains(name)) << name;
  const uint32_t tick_slice = mmo::net::thread_slice_us(threads.at("mmo-tick"));
  if (tick_slice == 0) GTEST_SKIP() << "this kernel reports no per-thread scheduler slice (Linux < 6.12)";
  EXPECT_EQ(mmo::net::thread_slice_us(threads.at("mmo-worker-0")), 300u);
  EXPECT_EQ(mmo::net::thread_slice_us(threads.at("mmo-worker-1")), 300u);
  EXPECT_NE(tick_slice, 300u) << "only the workers ask for a slice";
  ASSERT_TRUE(stats.contains("worker_slice_us"));
  EXPECT_EQ(stats.at("worker_slice_us"), 300u);

  // Asking for none leaves the kernel's default, the tick thread's, and the stats say which.
  ServerProcess plain({"--worker-slice-us", "0"});
  ASSERT_NE(plain.port(), 0) << plain.first_line();
  Client plain_admin(plain.port());
  const auto [plain_stats, plain_threads] = once_started(plain, plain_admin);
  ASSERT_TRUE(plain_threads.contains("mmo-worker-0") && plain_threads.contains("mmo-tick"));
  const uint32_t default_slice = mmo::net::thread_slice_us(plain_threads.at("mmo-tick"));
  EXPECT_EQ(mmo::net::thread_slice_us(plain_threads.at("mmo-worker-0")), default_slice);
  EXPECT_EQ(plain_stats.at("worker_slice_us"), default_slice);
}

TEST(ServerOperations, TheNullEngineAcknowledgesMovesAndSendsEmptyAreasOfInterest) {
  // The comparison's floor row: the same front, no game state behind it.
  ServerProcess server({"--engine", "null", "--spawn-points", "1000,1000,0"});
  ASSERT_NE(server.port(), 0) << server.first_line();
  EXPECT_NE(server.first_line().find("engine=null"), std::string::npos) << server.first_line();
  Client a(server.port()), b(server.port());
  const Joined ja = join(a, 11);
  const Joined jb = join(b, 12);
  EXPECT_NE(ja.player_id, jb.player_id);
  a.send(move(ja, 1, 100, 1001, 1000));
  const auto ack = a.wait_for<MoveAck>();
  ASSERT_TRUE(ack.has_value());
  EXPECT_EQ(ack->sequence, 1u);
  EXPECT_EQ(ack->contact_count, 0u) << "no contacts: b stands a metre away, but the null engine keeps no grid";
  const auto snap = a.wait_for<AoiSnapshot>(std::chrono::milliseconds(2000));
  ASSERT_TRUE(snap.has_value()) << "one snapshot per player per tick, as for a real engine";
  EXPECT_EQ(snap->count, 0u);
}

TEST(ServerOperations, EveryAdminStatsRequestIsAnswered) {
  ServerProcess server({});
  ASSERT_NE(server.port(), 0) << server.first_line();
  Client admin(server.port());
  // Requests go back to back in windows of ten: a reply is several kilobytes, and forty of them
  // unread at once overflow this client's default receive buffer (the kernel drops them at the
  // client, which is not what this test is about).
  constexpr uint32_t kRequests = 40;
  constexpr uint32_t kWindow = 10;
  std::set<uint32_t> answered;
  for (uint32_t first = 1; first <= kRequests; first += kWindow) {
    for (uint32_t id = first; id < first + kWindow; ++id) admin.send(StatsRequest{kAdminKey, id});
    while (answered.size() < first + kWindow - 1) {
      const auto reply = admin.wait_for<StatsReply>(std::chrono::milliseconds(3000));
      if (!reply) break;
      answered.insert(reply->request_id);
    }
  }
  EXPECT_EQ(answered.size(), kRequests) << "every request back to back gets its reply";
  const auto stats = server_stats(admin, 1000);
  EXPECT_EQ(stats.at("stats_requests"), kRequests + 1);
  EXPECT_EQ(stats.at("send_failures"), 0u) << "the server sent every reply";
}

}  // namespace
