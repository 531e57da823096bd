// worker.hpp: one I/O worker: its socket, its epoll loop, its sessions (admission.hpp) and
// the engine batches it builds from each receive batch. See server.hpp for how the workers,
// the tick thread and the reporter share the process.
#pragma once

#include <sys/epoll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <mutex>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "net/admission.hpp"
#include "net/aoi_order.hpp"
#include "net/aoi_pace.hpp"
#include "net/held_replies.hpp"
#include "net/server.hpp"
#include "net/udp.hpp"

namespace mmo::net {

// One I/O worker. Only its own thread touches its sessions, buffers and engine batches; other
// threads read its counters (relaxed atomics) and merge its histograms (under latency_mutex),
// and the tick thread writes its eventfd.
class Worker {
 public:
  // Takes ownership of `fd`. Throws std::runtime_error if epoll or the eventfd cannot be set up.
  Worker(Server& server, uint16_t index, int fd, const AdmissionConfig& admission_config);
  ~Worker();
  Worker(const Worker&) = delete;
  Worker& operator=(const Worker&) = delete;

  void run();
  // Called by the tick thread after it published a world snapshot: wakes this worker to send
  // its sessions their areas of interest.
  void notify_tick();
  // Called by the engine's committer thread after a group of economy changes became durable:
  // sends, on this worker's socket and from the committer's thread, the replies that waited
  // for it (held_replies.hpp), so this worker is not woken for them.
  void release_durable();
  // Called by any worker: asks this one to end one of its sessions (its account is joining
  // again from another port of the same host). Done on this worker's next loop turn (within
  // kEpollTimeoutMs); a request that finds the queue full is dropped (the joining client
  // resends, and its join asks again).
  void request_end(uint64_t player_id, uint64_t session_token);

  /// Written by this worker; read by the reporter.
  WorkerCounters counters;
  /// Sessions live on this worker. Written by this worker; read by the reporter.
  std::atomic<uint32_t> sessions_live{0};
  /// The scheduler slice this worker's thread holds, in microseconds, as the kernel reports
  /// it (thread_slice_us: the default where none was asked for or it was refused; 0 where the
  /// kernel reports none). Written by this worker as it starts; read by the reporter.
  std::atomic<uint32_t> slice_us{0};
  /// Guards the three histograms: this worker records under it once per batch; the reporter
  /// merges under it.
  mutable std::mutex latency_mutex;
  /// Each applied move: from its datagram's kernel receive stamp to the end of its batch's
  /// engine call (the wait in the socket buffer included).
  MmoLatency* update_latency_ = nullptr;
  /// Each applied move: from the worker's read of its datagram to the end of its batch's
  /// engine call, the server's own time. The update latency less this is the time the
  /// datagram waited to be read (the worker asleep, waiting for a CPU, or busy with others).
  MmoLatency* update_service_ = nullptr;
  MmoLatency* raid_latency_ = nullptr;

  int fd() const { return fd_; }
  // Read by the reporter (its counters).
  const HeldReplies& held_replies() const { return held_; }

 private:
  // Sessions per area-of-interest chunk: one engine call and one sendmmsg each.
  static constexpr size_t kAoiChunk = kBatchMax;

  // Reads the socket until it is empty (at most kDrainRoundsMax batches); returns datagrams read.
  size_t drain_socket();
  void handle_batch(size_t count);
  void handle(const wire::ClientMessage& message, SourceAddress source, Session* session, uint64_t now_us, uint64_t arrival_ns);
  void on_join_confirm(const wire::JoinConfirm& m, SourceAddress source, uint64_t now_us);
  void flush_engine_batches(uint64_t now_ms);
  // Whether a move of `player_id` waits in this receive batch's engine batch.
  bool move_pending_for(uint64_t player_id) const;
  void expire_idle_sessions(uint64_t now_ms);
  // Sends the next chunk of this tick's area-of-interest round: at most `sessions_max` sessions
  // (and at most kAoiChunk).
  void send_aoi_chunk(size_t sessions_max);
  void flush_replies();
  // Queues a reply, flushing the batch first when it is full (a receive batch's replies can
  // outnumber its datagrams: kill notices), so no reply is ever dropped for want of a slot.
  template <typename Message>
  void send_reply(SourceAddress to, const Message& message) {
    if (tx_.full()) flush_replies();
    tx_.commit(to, wire::encode(message, tx_.slot()));
  }
  // An economy reply (result, loot result, trade notice): sent now if the change it reports
  // is durable (ledger_seq <= the engine's durable watermark) and nothing waits before it,
  // else held, in order, until it is (held_replies.hpp: the committer sends it, or this worker
  // at the end of its loop turn). A full held queue drops it, counted: the client retransmits
  // and gets the recorded answer, which waits for the same change.
  template <typename Message>
  void send_durable(SourceAddress to, const Message& message, uint64_t ledger_seq) {
    if (ledger_seq == 0) return send_reply(to, message);
    if (held_.empty() && (ledger_seq <= durable_through_ ||
                          ledger_seq <= (durable_through_ = economy_durable_through()))) {
      return send_reply(to, message);
    }
    if (!held_.push(to, message, ledger_seq)) {
      counters.economy_replies_dropped.add();
      return;
    }
    counters.economy_replies_held.add();
  }
  // Sends the held replies whose changes are now durable (on this worker's thread).
  void release_held();
  // The front's durable watermark (Server::economy_durable_through_), read seq_cst as the
  // hand-off in held_replies.hpp needs.
  uint64_t economy_durable_through() const { return server_.economy_durable_through_.load(std::memory_order_seq_cst); }
  // Tells the players in the killer's area of interest (as of the last tick) of a kill.
  // TRADE_OFFER / TRADE_ANSWER: decided by the engine at once (economy requests batched before
  // them go first), answered with ECONOMY_RESULT, and news told with TRADE_NOTICE.
  void on_trade_offer(const wire::TradeOffer& m, SourceAddress source, uint64_t now_ms);
  void on_trade_answer(const wire::TradeAnswer& m, SourceAddress source, uint64_t now_ms);
  // Sends `notice` to the player's session address, if it still has one.
  void tell_trade(uint64_t player_id, const wire::TradeNotice& notice, uint64_t ledger_seq);
  void tell_kill(uint64_t killer_id, uint64_t target_id, uint8_t target_kind);
  // Admin messages (admin.cpp).
  void on_raid_trigger(const wire::RaidTrigger& m, SourceAddress source);
  void send_stats(SourceAddress to, uint32_t request_id);
  void end_session(Session* session);
  // Ends the sessions other workers asked this one to end (request_end).
  void end_requested_sessions(uint64_t now_ms);

  Server& server_;
  const uint16_t index_;
  // Sessions other workers asked this one to end: (player id, session token). Written by any
  // worker under end_requests_mutex_; taken by this worker.
  static constexpr size_t kEndRequestsMax = 256;
  std::mutex end_requests_mutex_;
  std::array<std::pair<uint64_t, uint64_t>, kEndRequestsMax> end_requests_{};  // guarded by end_requests_mutex_
  size_t end_request_count_ = 0;                                               // guarded by end_requests_mutex_
  std::atomic<bool> end_requests_pending_{false};
  int fd_;
  int epfd_ = -1;
  int tick_fd_ = -1;  // eventfd the tick thread writes after each published snapshot
  // Economy replies waiting for their change to be durable (this worker pushes; the
  // committer or this worker sends).
  HeldReplies held_;
  // Server::economy_durable_through_ as this worker last read it (it only grows).
  uint64_t durable_through_ = 0;
  Admission admission_;
  SendBatch tx_;

  std::array<std::array<uint8_t, kRxBufferSize>, kBatchMax> rx_buffers_{};
  std::array<iovec, kBatchMax> rx_iov_{};
  std::array<sockaddr_in, kBatchMax> rx_addrs_{};
  // Each message's control data: the kernel's receive timestamp (SO_TIMESTAMPNS).
  struct alignas(cmsghdr) RxControl {
    uint8_t bytes[CMSG_SPACE(sizeof(timespec))];
  };
  std::array<RxControl, kBatchMax> rx_control_{};
  std::array<mmsghdr, kBatchMax> rx_msgs_{};

  // The batch's moves and economy requests, and who to answer.
  std::array<MmoMoveRecord, kBatchMax> moves_{};
  // Each move's session, found by admission: who to answer (its address is the move's
  // source), and where to record an applied move. Every one is still live when the batch is
  // flushed: leaves, restarts and replacements flush the batch before they end a session.
  std::array<Session*, kBatchMax> move_sessions_{};
  // Each move's datagram's kernel receive time (CLOCK_REALTIME, ns): its latency starts there.
  std::array<uint64_t, kBatchMax> move_arrival_ns_{};
  // When this batch's datagrams were read (CLOCK_REALTIME, ns): its moves' service time
  // starts there.
  uint64_t batch_read_ns_ = 0;
  size_t move_count_ = 0;
  std::vector<MmoMoveEvent> events_;
  std::array<MmoEconomyOp, kBatchMax> ops_{};
  std::array<SourceAddress, kBatchMax> op_replies_{};
  std::array<MmoEconomyResult, kBatchMax> results_{};
  size_t op_count_ = 0;
  std::array<char, wire::kStatsReplyMax> stats_text_{};
  std::array<uint8_t, wire::kStatsReplyMax> stats_datagram_{};
  uint64_t next_idle_scan_ms_ = 0;
  // Until when (server_.now_us()) this worker polls instead of sleeping (0: not polling); set
  // after each turn that read datagrams (ServerConfig::idle_poll_us).
  uint64_t poll_until_us_ = 0;

  // This tick's area-of-interest round: the sessions live when this worker saw the tick, in
  // the order of where their players stand (aoi_order.hpp), the next of them to visit, the
  // round's pace (ServerConfig::aoi_spread_pct of the tick period from then; the sessions are
  // spread evenly over it, each where its player's place in the order puts it), and the
  // chunk's buffers.
  bool aoi_pending_ = false;
  AoiRoundOrder aoi_order_;
  size_t aoi_cursor_ = 0;
  AoiPace aoi_pace_;
  std::array<uint64_t, kAoiChunk> aoi_players_{};
  std::array<SourceAddress, kAoiChunk> aoi_sources_{};
  std::array<uint32_t, kAoiChunk> aoi_counts_{};
  std::vector<MmoAoiEntry> aoi_entries_;
  // The killer's area of interest when a kill is told (no allocation per kill).
  std::array<MmoAoiEntry, wire::kAoiEntriesMax> kill_witnesses_{};
  wire::AoiSnapshot aoi_datagram_;
};

}  // namespace mmo::net
