// held_replies.hpp: one worker's economy replies that wait for their change to be durable, and
// the rule for who sends them.
//
// An economy reply (a result, a loot result, a trade notice) may be told only once the change
// it reports is on disk: once the engine's durable watermark reaches its ledger number. The
// worker that decided it pushes it here; it is sent by whichever thread first sees it due:
//
// - the economy's committer, right after it moved the watermark (Server::on_economy_durable),
//   on the worker's socket, so the worker is never woken for it. Waking each worker through an
//   eventfd after every group instead (about 900 groups a second in a raid) woke the two
//   workers about 1,600 more times a second, preempted the committer about 250 times a second,
//   and held the economy round trip p99 about 260 us longer (docs/results/durable-send/);
// - the worker itself, at the end of each loop turn (the case where the watermark moved
//   between its check and its push).
//
// One producer (the worker), two possible senders, never at once: a sender holds `releasing_`.
// A thread that finds it held leaves the work to the holder, and the holder looks again after
// letting go if anything was pushed or the watermark moved while it held it. Every access in
// the hand-off is seq_cst (the push's tail store, the flag, the tail and watermark loads), and
// the watermark a sender reads must be a C++ atomic the committer stores seq_cst before it
// calls release (Server::economy_durable_through_): then either the holder sees the
// newcomer's push or watermark, or the newcomer finds the flag free, and no reply is left
// waiting for a group that already went by. (Plain atomics, not fences: ThreadSanitizer, which
// `make cpp-tsan` runs this under, does not model fences.)
//
// Replies go out oldest first; a reply whose change is not yet durable holds back those pushed
// after it (ledger numbers grow, so they would wait anyway). Bounded: kCapacity replies wait at
// most, a full queue refuses the push (the caller counts the drop; the client retransmits and
// gets the recorded answer), and a release makes at most kReleaseRoundsMax passes.
#pragma once

#include <sys/socket.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <span>
#include <type_traits>
#include <utility>

#include "net/admission.hpp"
#include "net/protocol.hpp"
#include "net/udp.hpp"

namespace mmo::net {

class HeldReplies {
 public:
  // At 5,000 economy operations a second and a few ms per group commit, tens wait at a time;
  // the bound only matters if the disk stalls.
  static constexpr size_t kCapacity = 4096;
  // Passes one release makes at most: each pass after the first needs a push or a watermark
  // move during the pass before it; past the bound the next release (the committer's next
  // group, the worker's next loop turn) goes on.
  static constexpr int kReleaseRoundsMax = 64;
  static_assert((kCapacity & (kCapacity - 1)) == 0, "a power of two: indexes wrap with a mask");

  HeldReplies() {
    for (size_t i = 0; i < kBatchMax; ++i) {
      msgs_[i].msg_hdr.msg_iov = &iov_[i];
      msgs_[i].msg_hdr.msg_iovlen = 1;
      msgs_[i].msg_hdr.msg_namelen = sizeof(sockaddr_in);
    }
  }
  HeldReplies(const HeldReplies&) = delete;
  HeldReplies& operator=(const HeldReplies&) = delete;

  // Producer only: whether nothing waits.
  bool empty() const { return head_.load(std::memory_order_acquire) == tail_.load(std::memory_order_relaxed); }

  // Producer only: queues `message` for `to`, to be sent once the watermark reaches
  // `ledger_seq`. False (nothing queued) when kCapacity replies already wait.
  template <typename Message>
  bool push(SourceAddress to, const Message& message, uint64_t ledger_seq) {
    const uint64_t tail = tail_.load(std::memory_order_relaxed);
    if (tail - head_.load(std::memory_order_acquire) == kCapacity) return false;
    Entry& e = entries_[tail & (kCapacity - 1)];
    e.size = static_cast<uint16_t>(wire::encode(message, std::span<uint8_t>(e.bytes)));
    e.to = to_sockaddr(to);
    e.ledger_seq = ledger_seq;
    tail_.store(tail + 1, std::memory_order_seq_cst);  // seq_cst: the hand-off (header comment)
    return true;
  }

  // Any thread: sends on `fd` every waiting reply whose ledger number is at most
  // `durable_through()`, oldest first. `durable_through` returns the watermark with a seq_cst
  // load of the atomic the committer stores (it is called with the flag held, and again after).
  // Returns at once if another thread is sending (it looks again before it stops).
  template <typename DurableThrough>
  void release(int fd, DurableThrough&& durable_through) {
    for (int round = 0; round < kReleaseRoundsMax; ++round) {
      if (releasing_.exchange(true, std::memory_order_seq_cst)) return;
      const uint64_t tail_seen = tail_.load(std::memory_order_seq_cst);
      const uint64_t through = durable_through();
      send_due(fd, through, tail_seen);
      releasing_.store(false, std::memory_order_seq_cst);
      // A push or a watermark move while the flag was held may have been left to this thread.
      if (tail_.load(std::memory_order_seq_cst) == tail_seen && durable_through() == through) return;
    }
  }

  // Replies sent, replies that could not be sent (ECONNREFUSED, a socket buffer full past the
  // retries), and the sendmmsg calls that sent them. Written by whichever thread holds the
  // flag; read by the reporter.
  uint64_t sent() const { return sent_.load(std::memory_order_relaxed); }
  uint64_t failed() const { return failed_.load(std::memory_order_relaxed); }
  uint64_t send_calls() const { return send_calls_.load(std::memory_order_relaxed); }

 private:
  // Left uninitialised (trivial, and `entries_` has no initialiser): a slot is written by its
  // push before any sender reads it, so the ring's pages (about 390 KB a worker) are touched
  // only as far as replies have waited, not zero-filled at construction. A busy economy wraps
  // the ring and touches it all anyway.
  struct Entry {
    uint64_t ledger_seq;
    sockaddr_in to;
    uint16_t size;
    // The largest reply that waits: ECONOMY_RESULT, LOOT_RESULT or TRADE_NOTICE.
    std::array<uint8_t, std::max({wire::kEconomyResultSize, wire::kLootResultSize, wire::kTradeNoticeSize})> bytes;
  };
  static_assert(std::is_trivially_default_constructible_v<Entry>);

  // Under the flag: sends the due replies among those pushed before `tail_seen`, a sendmmsg of
  // up to kBatchMax at a time straight from the ring, and frees their slots.
  void send_due(int fd, uint64_t through, uint64_t tail_seen) {
    uint64_t head = head_.load(std::memory_order_relaxed);
    for (size_t chunk = 0; chunk <= kCapacity / kBatchMax && head != tail_seen; ++chunk) {
      size_t n = 0;
      for (; n < kBatchMax && head + n != tail_seen; ++n) {
        Entry& e = entries_[(head + n) & (kCapacity - 1)];
        if (e.ledger_seq > through) break;
        iov_[n] = {e.bytes.data(), e.size};
        msgs_[n].msg_hdr.msg_name = &e.to;
      }
      if (n == 0) break;
      const SendOutcome out = send_datagrams(fd, std::span<mmsghdr>(msgs_.data(), n));
      sent_.store(sent_.load(std::memory_order_relaxed) + out.sent, std::memory_order_relaxed);
      failed_.store(failed_.load(std::memory_order_relaxed) + out.failed, std::memory_order_relaxed);
      send_calls_.store(send_calls_.load(std::memory_order_relaxed) + out.calls, std::memory_order_relaxed);
      head += n;
      head_.store(head, std::memory_order_release);  // the producer may reuse the slots now
      if (n < kBatchMax) break;
    }
  }

  // Each of the three on its own 128-byte block (two 64-byte lines: Intel's adjacent-line
  // prefetcher pulls pairs), as the worker pushes while the committer sends.
  /// Written by the producer; read by senders.
  alignas(128) std::atomic<uint64_t> tail_{0};
  /// Written by the thread holding `releasing_`; read by the producer to see free slots.
  alignas(128) std::atomic<uint64_t> head_{0};
  /// Held by the thread sending. The members below are used only by the thread holding it,
  /// except `entries_`, whose slots the producer fills before publishing them through `tail_`.
  alignas(128) std::atomic<bool> releasing_{false};
  std::atomic<uint64_t> sent_{0};
  std::atomic<uint64_t> failed_{0};
  std::atomic<uint64_t> send_calls_{0};
  std::array<iovec, kBatchMax> iov_{};
  std::array<mmsghdr, kBatchMax> msgs_{};
  std::array<Entry, kCapacity> entries_;
};

}  // namespace mmo::net
