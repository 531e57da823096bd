// HeldReplies (net/held_replies.hpp): economy replies wait for their ledger number to become
// durable and go out in order, once each, whichever thread sends them; a full queue refuses;
// and with a worker pushing while a committer moves the watermark, no reply is ever sent
// before it is durable or left waiting after it is. Built into `make cpp-tsan` as well.
#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <random>
#include <thread>
#include <vector>

#include "net/held_replies.hpp"
#include "net/udp.hpp"

namespace {

using namespace mmo::net;
using namespace mmo::wire;

// A bound loopback UDP socket that receives what the queue sends, and the socket it sends on.
struct Loopback {
  int receiver = -1;
  int sender = -1;
  SourceAddress to{};

  Loopback() {
    receiver = open_socket("127.0.0.1", 0, 1 << 20);
    sender = open_socket("127.0.0.1", 0, 1 << 20);
    to = SourceAddress{htonl(INADDR_LOOPBACK), htons(bound_port(receiver))};
  }
  ~Loopback() {
    close(receiver);
    close(sender);
  }
  // The transaction id of the next ECONOMY_RESULT received within `wait_ms`, if any.
  std::optional<uint64_t> next(int wait_ms) const {
    pollfd p{receiver, POLLIN, 0};
    if (poll(&p, 1, wait_ms) != 1) return std::nullopt;
    std::array<uint8_t, 2048> buf{};
    const ssize_t n = recv(receiver, buf.data(), buf.size(), MSG_DONTWAIT);
    if (n <= 0) return std::nullopt;
    Decoded<ServerMessage> d;
    if (decode_server(std::span<const uint8_t>(buf.data(), static_cast<size_t>(n)), d) != DecodeError::Ok) return std::nullopt;
    const auto* r = std::get_if<EconomyResult>(&d.message);
    if (r == nullptr) return std::nullopt;
    return r->transaction_id;
  }
};

EconomyResult reply(uint64_t transaction_id) { return EconomyResult{transaction_id, 100, 0, 0}; }

TEST(HeldReplies, RepliesWaitForTheirLedgerNumberAndGoOutInOrder) {
  Loopback net;
  auto held = std::make_unique<HeldReplies>();
  EXPECT_TRUE(held->empty());
  ASSERT_TRUE(held->push(net.to, reply(1), 10));
  ASSERT_TRUE(held->push(net.to, reply(2), 11));
  ASSERT_TRUE(held->push(net.to, reply(3), 12));
  EXPECT_FALSE(held->empty());

  held->release(net.sender, [] { return uint64_t{9}; });
  EXPECT_EQ(net.next(50), std::nullopt) << "nothing is durable yet";
  EXPECT_EQ(held->sent(), 0u);

  held->release(net.sender, [] { return uint64_t{11}; });
  EXPECT_EQ(net.next(1000), 1u);
  EXPECT_EQ(net.next(1000), 2u);
  EXPECT_EQ(net.next(50), std::nullopt) << "ledger 12 is not durable at 11";
  EXPECT_FALSE(held->empty());

  held->release(net.sender, [] { return uint64_t{12}; });
  EXPECT_EQ(net.next(1000), 3u);
  EXPECT_TRUE(held->empty());
  EXPECT_EQ(held->sent(), 3u);
  EXPECT_EQ(held->failed(), 0u);

  held->release(net.sender, [] { return UINT64_MAX; });
  EXPECT_EQ(net.next(50), std::nullopt) << "a reply goes out once";
  EXPECT_EQ(held->sent(), 3u);
}

TEST(HeldReplies, AReplyNotYetDurableHoldsBackThosePushedAfterIt) {
  Loopback net;
  auto held = std::make_unique<HeldReplies>();
  ASSERT_TRUE(held->push(net.to, reply(1), 20));
  ASSERT_TRUE(held->push(net.to, reply(2), 5));
  held->release(net.sender, [] { return uint64_t{10}; });
  EXPECT_EQ(net.next(50), std::nullopt);
  held->release(net.sender, [] { return uint64_t{20}; });
  EXPECT_EQ(net.next(1000), 1u);
  EXPECT_EQ(net.next(1000), 2u);
}

TEST(HeldReplies, AFullQueueRefusesThePushAndTakesMoreOnceItDrains) {
  Loopback net;
  auto held = std::make_unique<HeldReplies>();
  for (uint64_t i = 1; i <= HeldReplies::kCapacity; ++i) ASSERT_TRUE(held->push(net.to, reply(i), i)) << i;
  EXPECT_FALSE(held->push(net.to, reply(0), 1)) << "kCapacity replies wait: the push is refused";
  held->release(net.sender, [] { return uint64_t{HeldReplies::kCapacity / 2}; });
  // Loopback may drop some of the burst at the receiver; the kernel took every one.
  EXPECT_EQ(held->sent() + held->failed(), HeldReplies::kCapacity / 2);
  EXPECT_TRUE(held->push(net.to, reply(HeldReplies::kCapacity + 1), HeldReplies::kCapacity + 1)) << "slots freed by the send are reused";
  held->release(net.sender, [] { return UINT64_MAX; });
  EXPECT_EQ(held->sent() + held->failed(), HeldReplies::kCapacity + 1);
  EXPECT_TRUE(held->empty());
}

TEST(HeldReplies, ARefusedDestinationIsCountedAndSkipped) {
  // A port nobody is bound to: bind one, note it, let it go.
  const int probe = open_socket("127.0.0.1", 0, 1 << 16);
  const SourceAddress nobody{htonl(INADDR_LOOPBACK), htons(bound_port(probe))};
  close(probe);
  // A sender connected there: the kernel's ICMP port unreachable comes back to it as
  // ECONNREFUSED on its next send, which the queue must count and skip, not retry forever.
  const int sender = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  ASSERT_GE(sender, 0);
  const sockaddr_in sa = to_sockaddr(nobody);
  ASSERT_EQ(connect(sender, reinterpret_cast<const sockaddr*>(&sa), sizeof sa), 0);
  auto held = std::make_unique<HeldReplies>();
  for (uint64_t i = 1; i <= 100; ++i) ASSERT_TRUE(held->push(nobody, reply(i), i));
  held->release(sender, [] { return uint64_t{1}; });  // the first, which draws the ICMP
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  held->release(sender, [] { return UINT64_MAX; });
  EXPECT_GE(held->failed(), 1u) << "the refusal was counted";
  EXPECT_EQ(held->sent() + held->failed(), 100u);
  EXPECT_TRUE(held->empty());
  close(sender);
}

// Spins until `flag` is set (at most 10 s: a test that would hang fails instead).
void await(const std::atomic<bool>& flag) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (!flag.load() && std::chrono::steady_clock::now() < deadline) std::this_thread::yield();
  ASSERT_TRUE(flag.load()) << "the other thread never got there";
}

// Starts a thread that releases `held` on `fd`, paused inside its first watermark read (which
// it makes while holding the flag) until `go`; that read returns `first`, later ones `later()`.
template <typename Later>
std::thread release_paused(HeldReplies& held, int fd, std::atomic<bool>& holding, const std::atomic<bool>& go, uint64_t first, Later later) {
  return std::thread([&held, fd, &holding, &go, first, later] {
    bool paused = false;
    held.release(fd, [&] {
      if (paused) return later();
      paused = true;
      holding = true;
      await(go);
      return first;
    });
  });
}

// The two hand-offs of the protocol, each forced: the sender holding the flag is paused while
// the other thread acts.
TEST(HeldReplies, APushWhileTheCommitterSendsIsSentByItWhenTheWorkerFindsItBusy) {
  Loopback net;
  auto held = std::make_unique<HeldReplies>();
  std::atomic<bool> holding{false};
  std::atomic<bool> go{false};
  std::thread committer = release_paused(*held, net.sender, holding, go, 10, [] { return uint64_t{10}; });
  await(holding);
  ASSERT_TRUE(held->push(net.to, reply(1), 5));            // durable already (10)
  held->release(net.sender, [] { return uint64_t{10}; });  // finds the committer sending: leaves it
  go = true;
  committer.join();
  EXPECT_EQ(net.next(1000), 1u) << "the committer looked again after letting go";
  EXPECT_TRUE(held->empty());
}

TEST(HeldReplies, AWatermarkMovedWhileTheWorkerSendsIsSentByTheWorker) {
  Loopback net;
  auto held = std::make_unique<HeldReplies>();
  std::atomic<uint64_t> watermark{10};
  ASSERT_TRUE(held->push(net.to, reply(1), 15));
  std::atomic<bool> holding{false};
  std::atomic<bool> go{false};
  // Its first read, 10, is what it saw before the committer moved the watermark.
  std::thread worker = release_paused(*held, net.sender, holding, go, 10, [&] { return watermark.load(); });
  await(holding);
  watermark = 20;
  held->release(net.sender, [&] { return watermark.load(); });  // finds the worker sending: leaves it
  go = true;
  worker.join();
  EXPECT_EQ(net.next(1000), 1u) << "the worker looked again after letting go";
  EXPECT_TRUE(held->empty());
}

// A worker pushes replies with growing ledger numbers (sending at once when nothing waits and
// the number is already durable, as Worker::send_durable does) and calls release at the end
// of each "loop turn"; a committer moves the watermark in random steps and calls release after
// each. Every reply must arrive once, in order, never before the watermark reached it, and
// the last one without any release after both threads stopped.
TEST(HeldReplies, AWorkerAndACommitterTogetherSendEachReplyOnceWhenDurable) {
  constexpr uint64_t kReplies = 20'000;
  constexpr uint64_t kWindow = 128;  // replies in flight at most: the receiver's buffer holds them
  Loopback net;
  auto held = std::make_unique<HeldReplies>();
  std::atomic<uint64_t> watermark{0};
  std::atomic<uint64_t> pushed{0};    // ledger numbers handed out so far (the journal's head)
  std::atomic<uint64_t> received{0};  // replies the receiver has seen
  std::atomic<bool> failed{false};
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  auto durable = [&] { return watermark.load(std::memory_order_seq_cst); };

  std::thread receiver([&] {
    for (uint64_t expect = 1; expect <= kReplies && !failed.load();) {
      const std::optional<uint64_t> got = net.next(100);
      if (!got) {
        if (std::chrono::steady_clock::now() > deadline) failed = true;
        continue;
      }
      if (*got != expect || *got > watermark.load()) {
        ADD_FAILURE() << "received " << *got << " expecting " << expect << " with the watermark at " << watermark.load();
        failed = true;
        return;
      }
      received.store(expect++);
    }
  });
  std::thread committer([&] {
    std::mt19937_64 rng(7);
    while (watermark.load() < kReplies && !failed.load()) {
      const uint64_t head = pushed.load();
      const uint64_t w = watermark.load();
      if (head > w) {
        watermark.store(std::min<uint64_t>(head, w + 1 + rng() % 8), std::memory_order_seq_cst);
        held->release(net.sender, durable);
      }
      if (rng() % 4 == 0) std::this_thread::yield();
    }
  });
  // The worker: this thread.
  std::mt19937_64 rng(11);
  uint64_t cached_watermark = 0;
  auto tx = std::make_unique<SendBatch>();
  for (uint64_t seq = 1; seq <= kReplies && !failed.load(); ++seq) {
    // Waits for the receiver without releasing anything itself: only the protocol (the
    // committer's releases, and this thread's after its pushes) may get the window moving.
    while (seq - received.load() > kWindow && !failed.load()) {
      if (std::chrono::steady_clock::now() > deadline) {
        ADD_FAILURE() << "reply " << seq - kWindow << " never arrived: left waiting with the watermark at " << watermark.load();
        failed = true;
      }
      std::this_thread::yield();
    }
    pushed.store(seq);
    if (held->empty() && (seq <= cached_watermark || seq <= (cached_watermark = durable()))) {
      tx->commit(net.to, encode(reply(seq), tx->slot()));
      ASSERT_EQ(tx->flush(net.sender).sent, 1u);
    } else {
      ASSERT_TRUE(held->push(net.to, reply(seq), seq));
    }
    if (rng() % 3 == 0) held->release(net.sender, durable);  // the end of a loop turn
  }
  held->release(net.sender, durable);  // the worker's last loop turn
  committer.join();
  receiver.join();
  EXPECT_FALSE(failed.load());
  EXPECT_EQ(received.load(), kReplies) << "a reply was left waiting after the watermark passed it";
  EXPECT_TRUE(held->empty());
  EXPECT_EQ(held->failed(), 0u);
  // The held replies went out in sendmmsg calls of at most a batch each, and calls were
  // counted exactly when something was sent.
  EXPECT_EQ(held->send_calls() > 0, held->sent() > 0);
  EXPECT_LE(held->sent(), held->send_calls() * kBatchMax);
}

}  // namespace
