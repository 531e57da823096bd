// udp.hpp: the UDP plumbing every part of the front shares: the batch sizes, the socket
// set-up, the monotonic clock, and SendBatch (outgoing datagrams flushed with one sendmmsg).
#pragma once

#include <netinet/in.h>
#include <sys/socket.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <utility>

#include "net/admission.hpp"
#include "net/protocol.hpp"

namespace mmo::net {

constexpr size_t kBatchMax = 64;         // datagrams per recvmmsg / sendmmsg
constexpr size_t kRxBufferSize = 2048;   // > kClientDatagramMax, so an oversized datagram is seen as such
constexpr int kDrainRoundsMax = 16;      // recvmmsg calls per epoll wake-up, at most
constexpr int kEpollTimeoutMs = 100;     // how soon a worker notices stop and runs its idle scan
constexpr int kSendRetriesMax = 8;       // sendmmsg calls that sent nothing for a transient reason, per batch, at most
constexpr uint64_t kLatencyHighestUs = 60'000'000;
// Significant decimal digits of each histogram. Update latency, the product's headline
// figure, and its service time (the same moves, compared percentile for percentile) keep 3
// (0.1%; 17,408 counts, 136 KiB each, if its values ever reach 60 s: the counts grow with
// the largest value recorded, ffi/src/latency.rs). Tick durations and raid spawns,
// ten and a handful of values a second, get 2 (1%; at most 2,560 counts, 20 KiB): the tick's
// histogram, each worker's raid-spawn one and the reporter's merged raid-spawn one, which
// every report resets (writing each count).
constexpr uint8_t kUpdateLatencyDigits = 3;
constexpr uint8_t kTickLatencyDigits = 2;
constexpr uint8_t kRaidSpawnLatencyDigits = 2;
static_assert(kRxBufferSize > wire::kClientDatagramMax);


// Nanoseconds on CLOCK_MONOTONIC.
uint64_t monotonic_ns();
// A non-blocking SO_REUSEPORT UDP socket bound to address:port with kernel buffers of
// `buffer_bytes` each way (throws std::runtime_error).
int open_socket(const std::string& address, uint16_t port, int buffer_bytes);
// The port a socket is bound to.
uint16_t bound_port(int fd);
// An IPv4 address's bytes in network order (0 for 0.0.0.0 or anything unparsable).
uint32_t bind_ip_be(const std::string& address);
sockaddr_in to_sockaddr(SourceAddress a);
// What one send_datagrams call did: datagrams sent, datagrams given up on, and the sendmmsg
// system calls it made (0 for nothing to send; more than 1 only after a partial send).
struct SendOutcome {
  size_t sent = 0;
  size_t failed = 0;
  size_t calls = 0;
};

// Sends `msgs` with sendmmsg, continuing after a partial send. A call that sends nothing for a
// transient reason (EAGAIN, EINTR, ENOBUFS: the socket buffer momentarily full) spends one of
// kSendRetriesMax retries; once they are spent the rest is given up. A datagram the kernel
// refuses outright (EINVAL for port 0, ECONNREFUSED from an ICMP, EPERM from a firewall) is
// skipped and counted failed without spending a retry, so it costs only its own reply.
SendOutcome send_datagrams(int fd, std::span<mmsghdr> msgs);

// Outgoing datagrams of one batch, flushed with sendmmsg. Preallocated; at most kBatchMax.
class SendBatch {
 public:
  SendBatch() {
    for (size_t i = 0; i < kBatchMax; ++i) {
      iov_[i] = {buffers_[i].data(), 0};
      msgs_[i].msg_hdr.msg_iov = &iov_[i];
      msgs_[i].msg_hdr.msg_iovlen = 1;
      msgs_[i].msg_hdr.msg_name = &addrs_[i];
      msgs_[i].msg_hdr.msg_namelen = sizeof(sockaddr_in);
    }
  }
  bool full() const { return count_ == kBatchMax; }
  size_t size() const { return count_; }
  // The next slot's buffer; commit() it with the encoded size (0 discards it). Empty when the
  // batch is full (an encoder then writes nothing and returns 0): callers flush first.
  std::span<uint8_t> slot() {
    if (count_ == kBatchMax) return {};
    return {buffers_[count_].data(), buffers_[count_].size()};
  }
  void commit(SourceAddress to, size_t bytes) {
    if (bytes == 0 || count_ == kBatchMax) return;
    addrs_[count_] = to_sockaddr(to);
    iov_[count_].iov_len = bytes;
    ++count_;
  }
  // Sends everything (send_datagrams) and empties the batch.
  SendOutcome flush(int fd) {
    const auto result = send_datagrams(fd, std::span<mmsghdr>(msgs_.data(), count_));
    count_ = 0;
    return result;
  }

 private:
  std::array<std::array<uint8_t, wire::kReplyDatagramMax>, kBatchMax> buffers_{};
  std::array<iovec, kBatchMax> iov_{};
  std::array<sockaddr_in, kBatchMax> addrs_{};
  std::array<mmsghdr, kBatchMax> msgs_{};
  size_t count_ = 0;
};

}  // namespace mmo::net
