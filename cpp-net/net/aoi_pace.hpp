// aoi_pace.hpp: the pace of one worker's area-of-interest round. The sessions live when the
// tick arrives are spread evenly over a span (ServerConfig::aoi_spread_pct of the tick period),
// so the round is not one burst on every core that the moves arriving after the tick queue
// behind. Pure arithmetic on the caller's clock: the worker owns one and asks it, each loop
// turn, how many sessions are due and how long it may sleep.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>

namespace mmo::net {

class AoiPace {
 public:
  // A round of `sessions` sessions starting at `start_us`, spread over `span_us` (0: all now).
  void start(uint64_t start_us, uint64_t span_us, size_t sessions) {
    start_us_ = start_us;
    span_us_ = span_us;
    sessions_ = sessions;
    sent_ = 0;
  }
  // `n` more of the round's sessions were visited (sent, or gone since the tick).
  void sent(size_t n) { sent_ += n; }
  size_t sent() const { return sent_; }

  // How many of the round's sessions are due by `now_us` counting from the first (due at the
  // start): the round's share of the elapsed span, rounded down, plus one; SIZE_MAX once the
  // span has passed (then every session left in the round, those live at its start, is due).
  size_t due(uint64_t now_us) const {
    const uint64_t elapsed_us = now_us - std::min(now_us, start_us_);
    if (elapsed_us >= span_us_) return SIZE_MAX;
    return static_cast<size_t>((static_cast<unsigned __int128>(sessions_) * elapsed_us) / span_us_) + 1;
  }
  // How many sessions to visit now: those due and not yet visited.
  size_t owed(uint64_t now_us) const {
    const size_t d = due(now_us);
    return d > sent_ ? d - sent_ : 0;
  }
  // How long the worker may wait for input before the next session is due, in whole
  // milliseconds (epoll_wait's grain), between 1 and `max_ms`; 0 if one is due now.
  int wait_ms(uint64_t now_us, int max_ms) const {
    if (owed(now_us) > 0) return 0;
    // Nothing owed: the span is not over, so sent <= sessions, and session `sent` (counting
    // from 0) is due once the elapsed time reaches span * sent / sessions.
    const uint64_t due_at_us = start_us_ + static_cast<uint64_t>((static_cast<unsigned __int128>(span_us_) * sent_) / std::max<size_t>(1, sessions_));
    const uint64_t wait_us = due_at_us > now_us ? due_at_us - now_us : 0;
    return static_cast<int>(std::clamp<uint64_t>((wait_us + 999) / 1000, 1, static_cast<uint64_t>(std::max(1, max_ms))));
  }

 private:
  uint64_t start_us_ = 0;
  uint64_t span_us_ = 0;
  size_t sessions_ = 0;  // sessions live when the round began
  size_t sent_ = 0;      // sessions visited so far
};

}  // namespace mmo::net
