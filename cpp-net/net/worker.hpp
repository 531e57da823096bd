// worker.hpp: one I/O worker: its socket, its epoll loop, its sessions (admission.hpp) and
// the engine batches it builds from each receive batch. See server.hpp for how the workers,
// the tick thread and the reporter share the process.
#pragma once

#include <sys/epoll.h>
#include <unistd.h>

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
#include "net/server.hpp"
#include "net/udp.hpp"

namespace mmo::net {

class Worker {
 public:
  Worker(Server& server, int fd, const AdmissionConfig& admission_config)
      : server_(server), fd_(fd), admission_(admission_config, server.cookies_, &server.directory_) {
    epfd_ = epoll_create1(EPOLL_CLOEXEC);
    if (epfd_ < 0) throw std::runtime_error(std::string("epoll_create1: ") + std::strerror(errno));
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.fd = fd_;
    if (epoll_ctl(epfd_, EPOLL_CTL_ADD, fd_, &ev) != 0) throw std::runtime_error(std::string("epoll_ctl: ") + std::strerror(errno));
    for (size_t i = 0; i < kBatchMax; ++i) {
      rx_iov_[i] = {rx_buffers_[i].data(), rx_buffers_[i].size()};
      rx_msgs_[i].msg_hdr.msg_iov = &rx_iov_[i];
      rx_msgs_[i].msg_hdr.msg_iovlen = 1;
      rx_msgs_[i].msg_hdr.msg_name = &rx_addrs_[i];
    }
    events_.resize(server.engine().move_events_required(kBatchMax));
    update_latency_ = new_latency();
    raid_latency_ = new_latency();
  }
  ~Worker() {
    mmo_latency_free(update_latency_);
    mmo_latency_free(raid_latency_);
    if (epfd_ >= 0) close(epfd_);
    if (fd_ >= 0) close(fd_);
  }
  Worker(const Worker&) = delete;
  Worker& operator=(const Worker&) = delete;

  void run();

  /// Written by this worker; read by the reporter and the tick thread.
  WorkerCounters counters;
  /// Sessions live on this worker. Written by this worker under session_mutex.
  std::atomic<uint32_t> sessions_live{0};
  /// Guards admission_ (its session table): this worker holds it per batch; the tick thread
  /// holds it to copy the roster.
  std::mutex session_mutex;
  /// Guards the two histograms: this worker records under it once per batch; the reporter
  /// merges under it.
  mutable std::mutex latency_mutex;
  MmoLatency* update_latency_ = nullptr;
  MmoLatency* raid_latency_ = nullptr;

  int fd() const { return fd_; }
  // Appends (player id, source) of every session; caller holds session_mutex.
  template <typename F>
  void for_each_session(F&& f) {
    admission_.sessions().for_each([&](const Session& s) { f(s.player_id, s.source); });
  }

 private:
  void handle_batch(size_t count);
  void handle(const wire::ClientMessage& message, SourceAddress source, Session* session, uint64_t now_us);
  void on_join_confirm(const wire::JoinConfirm& m, SourceAddress source, uint64_t now_us);
  void flush_engine_batches(uint64_t now_ms);
  void expire_idle_sessions(uint64_t now_ms);
  // Admin messages (admin.cpp).
  void on_raid_trigger(const wire::RaidTrigger& m, SourceAddress source);
  void send_stats(SourceAddress to, uint32_t request_id);
  void end_session(Session* session);

  Server& server_;
  int fd_;
  int epfd_ = -1;
  Admission admission_;
  SendBatch tx_;

  std::array<std::array<uint8_t, kRxBufferSize>, kBatchMax> rx_buffers_{};
  std::array<iovec, kBatchMax> rx_iov_{};
  std::array<sockaddr_in, kBatchMax> rx_addrs_{};
  std::array<mmsghdr, kBatchMax> rx_msgs_{};

  // The batch's moves and economy requests, and who to answer.
  std::array<MmoMoveRecord, kBatchMax> moves_{};
  std::array<SourceAddress, kBatchMax> move_replies_{};
  size_t move_count_ = 0;
  std::vector<MmoMoveEvent> events_;
  std::array<MmoEconomyOp, kBatchMax> ops_{};
  std::array<SourceAddress, kBatchMax> op_replies_{};
  std::array<MmoEconomyResult, kBatchMax> results_{};
  size_t op_count_ = 0;
  // STATS_REQUESTs are answered after the batch, outside session_mutex.
  std::array<std::pair<SourceAddress, uint32_t>, 4> pending_stats_{};
  size_t pending_stats_count_ = 0;
  std::array<char, wire::kStatsReplyMax> stats_text_{};
  std::array<uint8_t, wire::kStatsReplyMax> stats_datagram_{};
  uint64_t next_idle_scan_ms_ = 0;
  uint64_t batch_moves_ = 0;
};

}  // namespace mmo::net
