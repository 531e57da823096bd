// udp-batching-probe: what batching system calls saves a load tester on this machine's loopback.
//
// The load tester gives every bot its own UDP socket (its own source port, as a game client
// has), so it sends one datagram per send() and reads each socket with its own recvmmsg.
// The other design a tester could have: one socket for many bots, each bot its own source
// address in 127.0.0.0/8 (chosen per message with IP_PKTINFO), so a send pass is one
// sendmmsg and a read pass one recvmmsg of 64 for all of them. This probe runs both against
// an echo server in a child process that answers every datagram as mmo-server answers a move
// (a 40-byte ack and a 600-byte area of interest), at the tester's steady rate (2,000 bots at
// 10 Hz: 20 sends a millisecond, read every 5 ms), and prints the sender's CPU per datagram
// it sent or read (getrusage: user + system). The difference between the two lines is all a
// tester can save by asking the kernel fewer times; the rest is the kernel's work per
// datagram (for a sender on loopback, that includes the delivery into the receiver's socket
// and waking it).
//
//   gcc -O2 -o /tmp/udp-batching-probe loadtest/scripts/udp-batching-probe.c
//   /tmp/udp-batching-probe per-bot; /tmp/udp-batching-probe shared   [seconds, default 8]
// (make bench-smoke builds it and runs each way for one second, so it does not rot.)
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

enum { kBots = 2000, kSendsPerMs = 20, kReadEveryMs = 5, kBatch = 64 };

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

// The echo server on socket `s`: each datagram read is answered with an ack and an area of
// interest.
static void serve(int s) {
  static char in_bytes[kBatch][1500], ack[40], aoi[600];
  struct mmsghdr in[kBatch], out[2 * kBatch];
  struct iovec in_iov[kBatch], out_iov[2 * kBatch];
  struct sockaddr_in from[kBatch];
  for (;;) {
    for (int i = 0; i < kBatch; i++) {
      in_iov[i] = (struct iovec){in_bytes[i], sizeof in_bytes[i]};
      in[i] = (struct mmsghdr){.msg_hdr = {.msg_name = &from[i], .msg_namelen = sizeof from[i], .msg_iov = &in_iov[i], .msg_iovlen = 1}};
    }
    int n = recvmmsg(s, in, kBatch, 0, NULL);
    int m = 0;
    for (int i = 0; i < n; i++) {
      for (int reply = 0; reply < 2; reply++, m++) {
        out_iov[m] = reply == 0 ? (struct iovec){ack, sizeof ack} : (struct iovec){aoi, sizeof aoi};
        out[m] = (struct mmsghdr){.msg_hdr = {.msg_name = &from[i], .msg_namelen = sizeof from[i], .msg_iov = &out_iov[m], .msg_iovlen = 1}};
      }
    }
    if (m > 0) sendmmsg(s, out, (unsigned)m, 0);
  }
}

int main(int argc, char** argv) {
  const int seconds = argc == 3 ? atoi(argv[2]) : 8;
  if (argc < 2 || argc > 3 || (strcmp(argv[1], "per-bot") != 0 && strcmp(argv[1], "shared") != 0) || seconds < 1 || seconds > 3600) {
    fprintf(stderr, "usage: %s per-bot|shared [seconds, 1..3600, default 8]\n", argv[0]);
    return 2;
  }
  const int shared = strcmp(argv[1], "shared") == 0;
  // The server's socket, on a free loopback port, made before the fork so both know it.
  int server_socket = socket(AF_INET, SOCK_DGRAM, 0);
  struct sockaddr_in to = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  socklen_t to_len = sizeof to;
  int server_buffer = 8 << 20;
  setsockopt(server_socket, SOL_SOCKET, SO_RCVBUF, &server_buffer, sizeof server_buffer);
  if (bind(server_socket, (struct sockaddr*)&to, sizeof to) != 0 || getsockname(server_socket, (struct sockaddr*)&to, &to_len) != 0) {
    perror("server socket");
    return 1;
  }
  pid_t server = fork();
  if (server < 0) {
    perror("fork");
    return 1;
  }
  if (server == 0) serve(server_socket);
  close(server_socket);
  static int fds[kBots];
  int ep = epoll_create1(0), one_socket = -1;
  if (!shared) {
    // Each bot: its own socket on 127.0.0.1, connected to the server, edge-triggered in epoll.
    for (int i = 0; i < kBots; i++) {
      fds[i] = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK, 0);
      struct sockaddr_in local = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
      bind(fds[i], (struct sockaddr*)&local, sizeof local);
      connect(fds[i], (struct sockaddr*)&to, sizeof to);
      struct epoll_event e = {.events = EPOLLIN | EPOLLET, .data.u32 = (uint32_t)i};
      epoll_ctl(ep, EPOLL_CTL_ADD, fds[i], &e);
    }
  } else {
    // One socket on a free port of every local address; bot i sends from 127.1.x.y.
    one_socket = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK, 0);
    int yes = 1, buffer = 8 << 20;
    setsockopt(one_socket, IPPROTO_IP, IP_PKTINFO, &yes, sizeof yes);
    setsockopt(one_socket, SOL_SOCKET, SO_RCVBUF, &buffer, sizeof buffer);
    struct sockaddr_in any = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_ANY)};
    if (bind(one_socket, (struct sockaddr*)&any, sizeof any) != 0) {
      perror("bind shared");
      kill(server, SIGKILL);
      waitpid(server, NULL, 0);
      return 1;
    }
  }
  static char move[60], rx_bytes[kBatch][1500], control[kBatch][64];
  struct mmsghdr msgs[kBatch];
  struct iovec iov[kBatch];
  struct sockaddr_in names[kBatch];
  struct rusage before, after;
  getrusage(RUSAGE_SELF, &before);
  const double start = now_s();
  double next = start;
  long sent = 0, read = 0, calls = 0;
  int bot = 0;
  for (long ms = 1; now_s() - start < seconds; ms++) {
    const double wait = next - now_s();
    if (wait > 0) nanosleep(&(struct timespec){0, (long)(wait * 1e9)}, NULL);
    next += 0.001;
    if (!shared) {
      for (int i = 0; i < kSendsPerMs; i++, bot = (bot + 1) % kBots, calls++) sent += send(fds[bot], move, sizeof move, 0) > 0;
    } else {
      for (int i = 0; i < kSendsPerMs; i++, bot = (bot + 1) % kBots) {
        iov[i] = (struct iovec){move, sizeof move};
        names[i] = to;
        struct cmsghdr* c = (struct cmsghdr*)control[i];
        c->cmsg_level = IPPROTO_IP;
        c->cmsg_type = IP_PKTINFO;
        c->cmsg_len = CMSG_LEN(sizeof(struct in_pktinfo));
        struct in_pktinfo info = {.ipi_spec_dst.s_addr = htonl(0x7f010000u | (uint32_t)bot)};
        memcpy(CMSG_DATA(c), &info, sizeof info);
        msgs[i] = (struct mmsghdr){.msg_hdr = {.msg_name = &names[i], .msg_namelen = sizeof to, .msg_iov = &iov[i], .msg_iovlen = 1,
                                               .msg_control = control[i], .msg_controllen = CMSG_SPACE(sizeof(struct in_pktinfo))}};
      }
      const int n = sendmmsg(one_socket, msgs, kSendsPerMs, 0);
      sent += n > 0 ? n : 0;
      calls++;
    }
    if (ms % kReadEveryMs != 0) continue;
    for (int i = 0; i < kBatch; i++) {
      iov[i] = (struct iovec){rx_bytes[i], sizeof rx_bytes[i]};
      msgs[i] = (struct mmsghdr){.msg_hdr = {.msg_iov = &iov[i], .msg_iovlen = 1, .msg_control = control[i], .msg_controllen = sizeof control[i]}};
    }
    if (!shared) {
      // As the tester reads: ask epoll which sockets have input, drain each (batches of 8).
      struct epoll_event ready[256];
      int n;
      while ((n = epoll_wait(ep, ready, 256, 0)) > 0) {
        calls++;
        for (int j = 0; j < n; j++) {
          int got;
          do {
            got = recvmmsg(fds[ready[j].data.u32], msgs, 8, MSG_DONTWAIT, NULL);
            calls++;
            read += got > 0 ? got : 0;
          } while (got == 8);
        }
      }
      calls++;
    } else {
      int got;
      do {
        for (int i = 0; i < kBatch; i++) msgs[i].msg_hdr.msg_controllen = sizeof control[i];
        got = recvmmsg(one_socket, msgs, kBatch, MSG_DONTWAIT, NULL);
        calls++;
        read += got > 0 ? got : 0;
      } while (got == kBatch);
    }
  }
  getrusage(RUSAGE_SELF, &after);
  const double user_us = (double)(after.ru_utime.tv_sec - before.ru_utime.tv_sec) * 1e6 + (double)(after.ru_utime.tv_usec - before.ru_utime.tv_usec);
  const double system_us = (double)(after.ru_stime.tv_sec - before.ru_stime.tv_sec) * 1e6 + (double)(after.ru_stime.tv_usec - before.ru_stime.tv_usec);
  printf("%-7s sent %ld read %ld system calls %ld: CPU per datagram %.2f us (system %.2f us)\n", shared ? "shared" : "per-bot", sent, read, calls,
         (user_us + system_us) / (double)(sent + read), system_us / (double)(sent + read));
  kill(server, SIGKILL);
  waitpid(server, NULL, 0);
  // Nothing read back means the probe measured nothing (no loopback, a port taken).
  return read > 0 ? 0 : 1;
}
