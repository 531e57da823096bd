// tick.cpp: the tick thread: runs the engine's tick at the tick rate (raid expiry, the world
// snapshot) and wakes every worker to send its own sessions their areas of interest. It takes
// no lock a worker takes.
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <thread>

#include "net/server.hpp"
#include "net/thread_sched.hpp"
#include "net/worker.hpp"

namespace mmo::net {

void Server::tick_loop() {
  // The tick is background work next to the workers' replies: run it at a lower priority, so on
  // a busy core it takes a smaller share of the time than the workers (unprivileged: a thread
  // may always lower its own priority). A failure leaves the default priority; it is not fatal.
  // Niceness does not make a woken worker preempt it (EEVDF lets the running thread finish its
  // slice): a worker's shorter slice does that (--worker-slice-us, thread_sched.hpp).
  name_this_thread("mmo-tick");
  if (config_.tick_nice != 0) setpriority(PRIO_PROCESS, static_cast<id_t>(syscall(SYS_gettid)), config_.tick_nice);
  const uint64_t period_us = tick_period_us();
  uint64_t next_us = now_us() + period_us;
  while (!stopping_.load(std::memory_order_acquire)) {
    const uint64_t now = now_us();
    if (now < next_us) {
      std::this_thread::sleep_for(std::chrono::microseconds(std::min<uint64_t>(next_us - now, 50'000)));
      continue;
    }
    next_us += period_us;
    if (next_us < now) {  // more than a period behind: skip the missed ticks, do not bunch them
      ticks_late_.add();
      next_us = now + period_us;
    }
    const uint64_t t0 = now_us();
    MmoTickInfo info{};
    engine_status("tick", engine_->tick(t0 / 1000, info), tick_counters_);
    // Each worker sends its own sessions their areas of interest from the new snapshot.
    for (auto& w : workers_) w->notify_tick();
    const uint64_t t1 = now_us();
    std::lock_guard lock(tick_latency_mutex_);
    mmo_latency_record(tick_latency_, t1 - t0, 1);
  }
}

}  // namespace mmo::net
