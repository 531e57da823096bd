// udp.cpp: see udp.hpp.
#include "net/udp.hpp"

#include <arpa/inet.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>

namespace mmo::net {

uint64_t monotonic_ns() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000ULL + static_cast<uint64_t>(ts.tv_nsec);
}

int open_socket(const std::string& address, uint16_t port, int buffer_bytes) {
  const int fd = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) throw std::runtime_error(std::string("socket: ") + std::strerror(errno));
  const int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof(one));
  // Bigger kernel queues absorb raid bursts; the kernel caps them at net.core.[rw]mem_max.
  setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &buffer_bytes, sizeof(buffer_bytes));
  setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &buffer_bytes, sizeof(buffer_bytes));
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_port = htons(port);
  if (inet_pton(AF_INET, address.c_str(), &sa.sin_addr) != 1) {
    close(fd);
    throw std::runtime_error("bind address is not an IPv4 address: " + address);
  }
  if (bind(fd, reinterpret_cast<sockaddr*>(&sa), sizeof(sa)) != 0) {
    const std::string err = std::strerror(errno);
    close(fd);
    throw std::runtime_error("bind " + address + ":" + std::to_string(port) + ": " + err);
  }
  return fd;
}

uint32_t bind_ip_be(const std::string& address) {
  in_addr a{};
  return inet_pton(AF_INET, address.c_str(), &a) == 1 ? a.s_addr : 0;
}

uint16_t bound_port(int fd) {
  sockaddr_in sa{};
  socklen_t len = sizeof(sa);
  getsockname(fd, reinterpret_cast<sockaddr*>(&sa), &len);
  return ntohs(sa.sin_port);
}

sockaddr_in to_sockaddr(SourceAddress a) {
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_addr.s_addr = a.ip_be;
  sa.sin_port = a.port_be;
  return sa;
}

SendOutcome send_datagrams(int fd, std::span<mmsghdr> msgs) {
  size_t done = 0;
  size_t undeliverable = 0;
  size_t calls = 0;
  // Only a call that moved nothing for a transient reason (a full socket buffer, a signal)
  // spends a retry. A datagram the kernel refuses outright is skipped at the cost of its own
  // call, so one unanswerable destination in a batch (a source port 0 that got through, an
  // ICMP's ECONNREFUSED, a firewall's EPERM) costs only its own reply, never the replies
  // queued after it. Bounded: every call either advances `done` or spends a retry, so at
  // most msgs.size() + kSendRetriesMax calls.
  int retries_left = kSendRetriesMax;
  while (done < msgs.size() && retries_left > 0) {
    const int n = sendmmsg(fd, msgs.data() + done, static_cast<unsigned>(msgs.size() - done), MSG_DONTWAIT);
    ++calls;
    if (n > 0) {
      done += static_cast<size_t>(n);
    } else if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR && errno != ENOBUFS) {
      done += 1;  // this datagram cannot be sent; skip it
      ++undeliverable;
    } else {
      --retries_left;
    }
  }
  return {done - undeliverable, msgs.size() - done + undeliverable, calls};
}

}  // namespace mmo::net
