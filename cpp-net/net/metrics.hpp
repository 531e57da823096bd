// metrics.hpp: the Prometheus endpoint: `GET /metrics` in the text exposition format (0.0.4),
// served by civetweb (Debian's libcivetweb) on its own threads.
//
// What it exposes: every counter of the front (datagrams, joins, drops by reason, engine call
// errors by status), every engine counter (MmoStats: moves, rejections, raid, economy, AoI,
// snapshots, lock waits), gauges (sessions, live players and raid objects, the economy's
// totals, peak RSS, the poisoned flag), and four histograms in seconds: update latency (from
// each datagram's kernel receive stamp to its batch's apply), update service time (from the
// worker's read of it to the same apply), tick duration and raid spawn duration. A scrape
// reads the same relaxed counters and merged histograms the stats text
// reads; it takes each worker's latency mutex briefly and nothing a move takes.
#pragma once

#include <string>

struct mg_context;

namespace mmo::net {

class Server;

// The Prometheus text of `server`'s figures (what /metrics serves).
std::string prometheus_text(const Server& server);

// An HTTP listener serving /metrics for `server` (which must outlive it).
class MetricsEndpoint {
 public:
  // `bind` is "address:port" (e.g. "127.0.0.1:9100"; port 0 picks a free one). Throws
  // std::runtime_error if it cannot listen.
  MetricsEndpoint(const std::string& bind, const Server& server);
  ~MetricsEndpoint();
  MetricsEndpoint(const MetricsEndpoint&) = delete;
  MetricsEndpoint& operator=(const MetricsEndpoint&) = delete;
  // "http://address:port/metrics", with the port actually bound.
  std::string url() const { return url_; }

 private:
  const Server& server_;
  mg_context* context_ = nullptr;
  std::string url_;
};

}  // namespace mmo::net
