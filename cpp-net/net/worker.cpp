// worker.cpp: an I/O worker's loop: drain the socket with recvmmsg, admit each datagram,
// hand the batch's moves and economy requests to the engine (one call each), answer with one
// sendmmsg; after each tick, send its sessions their areas of interest in chunks paced over
// the tick period (aoi_pace.hpp), draining the socket between chunks. Admin messages (raid
// trigger, stats) are handled in admin.cpp.
#include "net/worker.hpp"

#include <sys/eventfd.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <stdexcept>
#include <string>
#include <variant>

#include "net/thread_sched.hpp"

// The wire's enums end where the engine's do (protocol.hpp cannot include the engine header).
static_assert(mmo::wire::kMoveResultMax == MMO_REJECT_REASON_DEAD, "MOVE_ACK.result: every MmoRejectReason");
static_assert(mmo::wire::kLootRefusalMax == MMO_LOOT_ERROR_DEAD, "LOOT_RESULT.refusal: every MmoLootError");
static_assert(mmo::wire::kAttackRefusalMax == MMO_ATTACK_ERROR_COOLDOWN, "ATTACK_RESULT.refusal: every MmoAttackError");

namespace mmo::net {

namespace {

constexpr uint64_t kTickEvent = 1;    // epoll data: the tick's eventfd
constexpr uint64_t kSocketEvent = 2;  // epoll data: the UDP socket

// One spin of a polling loop: tells the CPU this is a wait (x86 PAUSE: the sibling
// hyperthread gets the core, and the loop's exit does not flush the pipeline on a memory-order
// mis-speculation).
inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

uint64_t realtime_ns() {
  timespec ts{};
  clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000ULL + static_cast<uint64_t>(ts.tv_nsec);
}

// The kernel's receive timestamp of a message (SO_TIMESTAMPNS, CLOCK_REALTIME), or 0.
uint64_t receive_timestamp_ns(const msghdr& hdr) {
  for (const cmsghdr* c = CMSG_FIRSTHDR(&hdr); c != nullptr; c = CMSG_NXTHDR(const_cast<msghdr*>(&hdr), const_cast<cmsghdr*>(c))) {
    if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_TIMESTAMPNS && c->cmsg_len >= CMSG_LEN(sizeof(timespec))) {
      timespec ts{};
      std::memcpy(&ts, CMSG_DATA(c), sizeof ts);
      return static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000ULL + static_cast<uint64_t>(ts.tv_nsec);
    }
  }
  return 0;
}

void epoll_add(int epfd, int fd, uint64_t tag) {
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.u64 = tag;
  if (epoll_ctl(epfd, EPOLL_CTL_ADD, fd, &ev) != 0) throw std::runtime_error(std::string("epoll_ctl: ") + std::strerror(errno));
}

}  // namespace

Worker::Worker(Server& server, uint16_t index, int fd, const AdmissionConfig& admission_config)
    : server_(server),
      index_(index),
      fd_(fd),
      admission_(admission_config, server.cookies_, &server.directory_),
      aoi_order_(admission_.sessions().capacity()) {
  epfd_ = epoll_create1(EPOLL_CLOEXEC);
  if (epfd_ < 0) throw std::runtime_error(std::string("epoll_create1: ") + std::strerror(errno));
  tick_fd_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (tick_fd_ < 0) throw std::runtime_error(std::string("eventfd: ") + std::strerror(errno));
  epoll_add(epfd_, fd_, kSocketEvent);
  epoll_add(epfd_, tick_fd_, kTickEvent);
  // The kernel stamps each datagram as it arrives; its wait in the socket buffer counts.
  const int one = 1;
  if (setsockopt(fd_, SOL_SOCKET, SO_TIMESTAMPNS, &one, sizeof one) != 0) {
    throw std::runtime_error(std::string("setsockopt SO_TIMESTAMPNS: ") + std::strerror(errno));
  }
  for (size_t i = 0; i < kBatchMax; ++i) {
    rx_iov_[i] = {rx_buffers_[i].data(), rx_buffers_[i].size()};
    rx_msgs_[i].msg_hdr.msg_iov = &rx_iov_[i];
    rx_msgs_[i].msg_hdr.msg_iovlen = 1;
    rx_msgs_[i].msg_hdr.msg_name = &rx_addrs_[i];
    rx_msgs_[i].msg_hdr.msg_control = rx_control_[i].bytes;
  }
  events_.resize(server.engine().move_events_required(kBatchMax));
  aoi_entries_.resize(kAoiChunk * wire::kAoiEntriesMax);
  update_latency_ = new_latency(kUpdateLatencyDigits);
  update_service_ = new_latency(kUpdateLatencyDigits);
  raid_latency_ = new_latency(kRaidSpawnLatencyDigits);
}

Worker::~Worker() {
  mmo_latency_free(update_latency_);
  mmo_latency_free(update_service_);
  mmo_latency_free(raid_latency_);
  if (tick_fd_ >= 0) close(tick_fd_);
  if (epfd_ >= 0) close(epfd_);
  if (fd_ >= 0) close(fd_);
}

void Worker::notify_tick() {
  const uint64_t one = 1;
  // Cannot block (EFD_NONBLOCK); fails only if the counter would overflow, which a worker
  // that reads it every wake-up never lets happen.
  [[maybe_unused]] const ssize_t n = write(tick_fd_, &one, sizeof one);
}

void Worker::release_durable() {
  held_.release(fd_, [this] { return economy_durable_through(); });
}

void Worker::release_held() {
  if (held_.empty()) return;
  held_.release(fd_, [this] { return durable_through_ = economy_durable_through(); });
}

void Worker::run() {
  name_this_thread("mmo-worker-" + std::to_string(index_));
  if (const unsigned slice = server_.worker_slice_us(); slice != 0) {
    if (const int error = request_thread_slice_us(slice); error != 0) {
      std::fprintf(stderr, "mmo-server: worker %u: scheduler slice of %u us refused (%s); it keeps the kernel's default\n",
                   static_cast<unsigned>(index_), slice, std::strerror(error));
    }
  }
  slice_us.store(thread_slice_us(), std::memory_order_relaxed);
  std::array<epoll_event, 4> ready{};
  const unsigned idle_poll_us = server_.idle_poll_us();
  while (!server_.stopping_.load(std::memory_order_acquire)) {
    int n = 0;
    counters.loop_turns.add();
    if (poll_until_us_ != 0) {
      // Polling after a busy turn: look without sleeping; the turn's other duties (held
      // replies, the area-of-interest pace, the idle scan) still run below between looks.
      n = epoll_wait(epfd_, ready.data(), static_cast<int>(ready.size()), 0);
      if (n == 0) {
        if (server_.now_us() >= poll_until_us_) poll_until_us_ = 0;
        cpu_relax();
      }
    } else {
      // With an area-of-interest round under way, only peek at the sockets between chunks, or
      // sleep until its next session is due.
      const int timeout_ms = aoi_pending_ ? aoi_pace_.wait_ms(server_.now_us(), kEpollTimeoutMs) : kEpollTimeoutMs;
      n = epoll_wait(epfd_, ready.data(), static_cast<int>(ready.size()), timeout_ms);
    }
    size_t datagrams = 0;
    for (int i = 0; i < n; ++i) {
      if (ready[i].data.u64 == kTickEvent) {
        uint64_t ticks = 0;
        if (read(tick_fd_, &ticks, sizeof ticks) == sizeof ticks) {
          if (aoi_pending_) counters.aoi_rounds_overrun.add();
          aoi_pending_ = true;
          aoi_cursor_ = 0;
          aoi_order_.order(admission_.sessions());
          aoi_pace_.start(server_.now_us(), server_.aoi_spread_us(), aoi_order_.size());
        }
      } else {
        datagrams += drain_socket();
      }
    }
    if (datagrams > 0 && idle_poll_us > 0) poll_until_us_ = server_.now_us() + idle_poll_us;
    release_held();
    if (aoi_pending_) {
      const size_t owed = aoi_pace_.owed(server_.now_us());
      if (owed > 0) send_aoi_chunk(owed);
    }
    const uint64_t now_ms = server_.now_us() / 1000;
    if (end_requests_pending_.load(std::memory_order_acquire)) end_requested_sessions(now_ms);
    if (now_ms >= next_idle_scan_ms_) {
      expire_idle_sessions(now_ms);
      next_idle_scan_ms_ = now_ms + 1000;
    }
  }
}

size_t Worker::drain_socket() {
  size_t datagrams = 0;
  for (int round = 0; round < kDrainRoundsMax; ++round) {
    // The kernel writes back each name length, control length and flags; reset them first.
    for (auto& m : rx_msgs_) {
      m.msg_hdr.msg_namelen = sizeof(sockaddr_in);
      m.msg_hdr.msg_controllen = sizeof(RxControl::bytes);
      m.msg_hdr.msg_flags = 0;
    }
    const int got = recvmmsg(fd_, rx_msgs_.data(), kBatchMax, MSG_DONTWAIT, nullptr);
    counters.receive_calls.add();
    if (got <= 0) break;
    datagrams += static_cast<size_t>(got);
    handle_batch(static_cast<size_t>(got));
    if (static_cast<size_t>(got) < kBatchMax) break;
  }
  return datagrams;
}

void Worker::handle_batch(size_t count) {
  const uint64_t t0_us = server_.now_us();
  const uint64_t read_ns = realtime_ns();
  batch_read_ns_ = read_ns;
  counters.datagrams_received.add(count);
  wire::Decoded<wire::ClientMessage> decoded;
  for (size_t i = 0; i < count; ++i) {
    const mmsghdr& m = rx_msgs_[i];
    size_t len = m.msg_len;
    // A datagram larger than the buffer arrives cut; it is oversized either way.
    if ((m.msg_hdr.msg_flags & MSG_TRUNC) != 0) len = kRxBufferSize;
    // No IPv4 source to answer (an IPv4 socket gives none; counted should one ever come).
    if (m.msg_hdr.msg_namelen < sizeof(sockaddr_in) || rx_addrs_[i].sin_family != AF_INET) {
      counters.drops[static_cast<size_t>(DropReason::BadSource)].add();
      continue;
    }
    const SourceAddress source{rx_addrs_[i].sin_addr.s_addr, rx_addrs_[i].sin_port};
    const Admitted a = admission_.admit({rx_buffers_[i].data(), len}, source, t0_us, decoded);
    if (!a.ok) {
      counters.drops[static_cast<size_t>(a.reason)].add();
      continue;
    }
    uint64_t arrival_ns = receive_timestamp_ns(m.msg_hdr);
    if (arrival_ns == 0) {
      counters.rx_timestamps_missing.add();
      arrival_ns = read_ns;
    }
    handle(decoded.message, source, a.session, t0_us, arrival_ns);
  }
  flush_engine_batches(t0_us / 1000);
  sessions_live.store(static_cast<uint32_t>(admission_.sessions().size()), std::memory_order_relaxed);
  flush_replies();
}

void Worker::tell_kill(uint64_t killer_id, uint64_t target_id, uint8_t target_kind) {
  size_t n = 0;
  const MmoStatus status = server_.engine().area_of_interest(killer_id, kill_witnesses_, n);
  if (status == MMO_ERR_NOT_IN_SNAPSHOT) return;  // joined since the last tick: nobody to tell yet
  if (server_.engine_status("area_of_interest", status, counters) != MMO_OK) return;
  const wire::KillNotice notice{killer_id, target_id, target_kind};
  for (size_t i = 0; i < n; ++i) {
    const MmoAoiEntry& e = kill_witnesses_[i];
    if (e.kind != MMO_ENTITY_KIND_PLAYER || e.entity_id == killer_id) continue;
    const auto to = server_.directory_.source_of(e.entity_id);
    if (!to) continue;  // left since the tick
    send_reply(*to, notice);
    counters.kill_notices_sent.add();
  }
}

namespace {
MmoTradeStack abi_side(const wire::TradeSide& s) { return MmoTradeStack{s.gold, s.item_count, s.item_kind, 0}; }
wire::EconomyResult wire_result(const MmoEconomyResult& r) { return wire::EconomyResult{r.transaction_id, r.gold_balance, r.status, r.duplicate}; }
}  // namespace

void Worker::on_trade_offer(const wire::TradeOffer& m, SourceAddress source, uint64_t now_ms) {
  // Economy requests earlier in this batch go first (a gift, then an offer of what it left).
  if (op_count_ > 0) flush_engine_batches(now_ms);
  const MmoTradeOffer offer{m.player_id, m.session_token, m.transaction_id, m.counterparty_id, abi_side(m.give), abi_side(m.want)};
  MmoEconomyResult r{};
  if (server_.engine_status("trade_offer", server_.engine().trade_offer(offer, now_ms, r), counters) != MMO_OK) return;
  send_durable(source, wire_result(r), r.ledger_seq);
  counters.trades_answered.add();
  // A new offer (not a retransmit's answer) is news for its taker.
  if (r.status == MMO_ECONOMY_STATUS_APPLIED && r.duplicate == 0) {
    tell_trade(m.counterparty_id, wire::TradeNotice{wire::TradeEvent::Offered, m.player_id, m.counterparty_id, m.transaction_id, m.give, m.want},
               r.ledger_seq);
  }
}

void Worker::on_trade_answer(const wire::TradeAnswer& m, SourceAddress source, uint64_t now_ms) {
  if (op_count_ > 0) flush_engine_batches(now_ms);
  const MmoTradeAnswer answer{m.player_id, m.session_token, m.transaction_id, m.maker_id, m.offer_id, m.accept, {}};
  MmoEconomyResult r{};
  if (server_.engine_status("trade_answer", server_.engine().trade_answer(answer, now_ms, r), counters) != MMO_OK) return;
  send_durable(source, wire_result(r), r.ledger_seq);
  counters.trades_answered.add();
  // The taker's accept or decline is news for the maker (a maker's own cancel is not).
  if (r.status == MMO_ECONOMY_STATUS_APPLIED && r.duplicate == 0 && m.maker_id != m.player_id) {
    const auto event = m.accept != 0 ? wire::TradeEvent::Accepted : wire::TradeEvent::Declined;
    tell_trade(m.maker_id, wire::TradeNotice{event, m.maker_id, m.player_id, m.offer_id, {}, {}}, r.ledger_seq);
  }
}

void Worker::tell_trade(uint64_t player_id, const wire::TradeNotice& notice, uint64_t ledger_seq) {
  const auto to = server_.directory_.source_of(player_id);
  if (!to) return;  // left since
  send_durable(*to, notice, ledger_seq);
  counters.trade_notices_sent.add();
}

void Worker::flush_replies() {
  const SendOutcome out = tx_.flush(fd_);
  counters.datagrams_sent.add(out.sent);
  counters.send_failures.add(out.failed);
  counters.send_calls.add(out.calls);
}

void Worker::send_aoi_chunk(size_t sessions_max) {
  SessionTable& sessions = admission_.sessions();
  const size_t chunk_max = std::min(kAoiChunk, sessions_max);
  size_t n = 0;
  while (aoi_cursor_ < aoi_order_.size() && n < chunk_max) {
    if (const Session* s = sessions.at(aoi_order_.slot(aoi_cursor_))) {
      aoi_players_[n] = s->player_id;
      aoi_sources_[n] = s->source;
      ++n;
    }
    ++aoi_cursor_;
  }
  if (aoi_cursor_ >= aoi_order_.size()) aoi_pending_ = false;
  aoi_pace_.sent(n);
  if (n == 0) return;
  constexpr uint32_t k = static_cast<uint32_t>(wire::kAoiEntriesMax);
  MmoAoiBatchInfo info{};
  const MmoStatus status = server_.engine_status(
      "area_of_interest_batch", server_.engine().area_of_interest_batch({aoi_players_.data(), n}, k, aoi_entries_, {aoi_counts_.data(), n}, info),
      counters);
  if (status != MMO_OK) return;
  aoi_datagram_.tick = info.tick;
  aoi_datagram_.server_time_ms = info.now_ms;
  for (size_t i = 0; i < n; ++i) {
    if (aoi_counts_[i] == MMO_AOI_NOT_IN_SNAPSHOT) continue;  // joined after the tick, or left
    aoi_datagram_.count = static_cast<uint16_t>(std::min<size_t>(aoi_counts_[i], wire::kAoiEntriesMax));
    const MmoAoiEntry* entries = aoi_entries_.data() + i * k;
    for (size_t e = 0; e < aoi_datagram_.count; ++e) {
      aoi_datagram_.entries[e] = {entries[e].entity_id, entries[e].x_m, entries[e].y_m, entries[e].kind};
    }
    send_reply(aoi_sources_[i], aoi_datagram_);
    counters.aoi_snapshots_sent.add();
  }
  flush_replies();
}

void Worker::handle(const wire::ClientMessage& message, SourceAddress source, Session* session, uint64_t now_us, uint64_t arrival_ns) {
  const uint64_t now_ms = now_us / 1000;
  std::visit(
      [&](const auto& m) {
        using T = std::decay_t<decltype(m)>;
        if constexpr (std::is_same_v<T, wire::JoinRequest>) {
          const uint32_t period = JoinCookies::period_at(now_ms);
          const wire::JoinChallenge reply{m.nonce, period, admission_.cookies().mac(source, m.nonce, period)};
          send_reply(source, reply);
          counters.challenges_sent.add();
        } else if constexpr (std::is_same_v<T, wire::JoinConfirm>) {
          on_join_confirm(m, source, now_us);
        } else if constexpr (std::is_same_v<T, wire::Move>) {
          MmoMoveRecord& r = moves_[move_count_];
          r = MmoMoveRecord{};
          r.player_id = m.player_id;
          r.session_token = m.session_token;
          r.sequence = m.sequence;
          r.client_time_ms = m.client_time_ms;
          r.x_m = m.x_m;
          r.y_m = m.y_m;
          r.facing_rad = m.facing_rad;
          r.slot_hint = session != nullptr ? session->slot_hint : 0;
          std::memcpy(r.payload, m.payload.data(), wire::kPayloadSize);
          move_sessions_[move_count_] = session;
          move_arrival_ns_[move_count_] = arrival_ns;
          ++move_count_;
          counters.moves_forwarded.add();
          if (server_.config_.inject_panic_after_moves != 0 && counters.moves_forwarded.get() == server_.config_.inject_panic_after_moves) {
            // The test hook (--debug-inject-panic-after-moves): a panic inside the engine.
            server_.engine_status("debug_inject_panic", server_.engine().debug_inject_panic(), counters);
          }
        } else if constexpr (std::is_same_v<T, wire::EconomyRequest>) {
          MmoEconomyOp& op = ops_[op_count_];
          op = MmoEconomyOp{};
          op.player_id = m.player_id;
          op.session_token = m.session_token;
          op.transaction_id = m.transaction_id;
          op.counterparty_id = m.counterparty_id;
          op.gold = m.gold;
          op.item_count = m.item_count;
          op.item_kind = m.item_kind;
          op.kind = m.kind;
          op_replies_[op_count_] = source;
          ++op_count_;
          counters.economy_forwarded.add();
        } else if constexpr (std::is_same_v<T, wire::Attack>) {
          // A move of the attacker or the target earlier in this batch goes first, so the
          // range check sees where it put them; other players' moves stay batched. The attack
          // is then decided at once, on the server's clock.
          if (move_pending_for(m.player_id) || move_pending_for(m.target_id)) flush_engine_batches(now_ms);
          MmoAttackResult r{};
          if (server_.engine_status("attack", server_.engine().attack(m.player_id, m.session_token, m.target_id, now_ms, r), counters) !=
              MMO_OK) {
            return;
          }
          const wire::AttackResult reply{m.sequence, r.refusal, r.killed, r.target_kind, m.target_id, r.damage, r.hp_left};
          send_reply(source, reply);
          counters.attacks_answered.add();
          if (r.killed != 0) tell_kill(m.player_id, m.target_id, r.target_kind);
        } else if constexpr (std::is_same_v<T, wire::LootClaim>) {
          // The claimer's move earlier in this batch goes first (the range check sees it), and
          // so do the batch's economy requests: a spend before a claim is decided on the
          // balance without the loot, as its sender sent them.
          if (op_count_ > 0 || move_pending_for(m.player_id)) flush_engine_batches(now_ms);
          MmoLootResult r{};
          if (server_.engine_status("claim_loot", server_.engine().claim_loot(m.player_id, m.session_token, m.loot_id, r), counters) !=
              MMO_OK) {
            return;
          }
          send_durable(source, wire::LootResult{m.loot_id, r.gold, r.item_count, r.item_kind, r.refusal, r.repeat}, r.ledger_seq);
          counters.loot_claims_answered.add();
        } else if constexpr (std::is_same_v<T, wire::TradeOffer>) {
          on_trade_offer(m, source, now_ms);
        } else if constexpr (std::is_same_v<T, wire::TradeAnswer>) {
          on_trade_answer(m, source, now_ms);
        } else if constexpr (std::is_same_v<T, wire::Grant>) {
          // Admin: answered at once (admission checked the key), after the batch's economy
          // requests, which arrived first.
          if (op_count_ > 0) flush_engine_batches(now_ms);
          MmoEconomyResult r{};
          if (server_.engine_status("grant", server_.engine().grant(m.player_id, m.grant_id, abi_side(m.stack), r), counters) != MMO_OK) return;
          send_durable(source, wire_result(r), r.ledger_seq);
          counters.grants_answered.add();
        } else if constexpr (std::is_same_v<T, wire::Leave>) {
          // Moves and trades earlier in this batch go first, in arrival order.
          flush_engine_batches(now_ms);
          end_session(session);
          send_reply(source, wire::LeaveAck{m.player_id});
          counters.leaves.add();
        } else if constexpr (std::is_same_v<T, wire::Ping>) {
          send_reply(source, wire::Pong{m.client_time_us, now_ms});
          counters.pongs_sent.add();
        } else if constexpr (std::is_same_v<T, wire::RaidTrigger>) {
          on_raid_trigger(m, source);
        } else if constexpr (std::is_same_v<T, wire::StatsRequest>) {
          // Answered at once, each of them: nothing here holds a lock the reporter needs. Counted
          // first, so a reply's text includes its own request.
          counters.stats_requests.add();
          send_stats(source, m.request_id);
        }
      },
      message);
}

void Worker::on_join_confirm(const wire::JoinConfirm& m, SourceAddress source, uint64_t now_us) {
  const uint64_t now_ms = now_us / 1000;
  wire::JoinAccept reply;
  reply.nonce = m.nonce;
  reply.tick_ms = static_cast<uint32_t>(server_.tick_period_us() / 1000);
  reply.server_time_ms = now_ms;
  const auto refuse = [&](wire::JoinStatus status, Counter* reason) {
    reply.status = status;
    counters.joins_refused.add();
    if (reason != nullptr) reason->add();
    send_reply(source, reply);
  };
  Session* existing = admission_.sessions().find_source(source);
  if (existing != nullptr && existing->join_nonce == m.nonce) {
    // The accept was lost and the client asked again (the cookie proved the address): same
    // session, same answer, whatever its token's expiry since.
    reply.player_id = existing->player_id;
    reply.session_token = existing->session_token;
    reply.faction = existing->faction;
    reply.spawn_x_m = existing->x_m;
    reply.spawn_y_m = existing->y_m;
    send_reply(source, reply);
    counters.join_retransmits.add();
    return;
  }
  // One host may not fill the server, however many ports it joins from: refused before the
  // signature is checked, the costliest step of a join (a restart frees its own place).
  if (existing == nullptr && !server_.directory_.host_has_room(source)) return refuse(wire::JoinStatus::HostFull, &counters.joins_refused_host_full);
  // The backend's word: who this is, on which side, until when, for which server.
  const uint64_t now_unix_ms = realtime_ns() / 1'000'000;
  TokenClaims claims;
  switch (server_.tokens_->verify(m.token, now_unix_ms, claims)) {
    case TokenVerdict::Valid: break;
    case TokenVerdict::Malformed: return refuse(wire::JoinStatus::TokenMalformed, &counters.joins_refused_token_malformed);
    case TokenVerdict::Expired: return refuse(wire::JoinStatus::TokenExpired, &counters.joins_refused_token_expired);
    case TokenVerdict::WrongServer: return refuse(wire::JoinStatus::TokenWrongServer, &counters.joins_refused_token_wrong_server);
    case TokenVerdict::BadSignature: return refuse(wire::JoinStatus::TokenBadSignature, &counters.joins_refused_token_bad_signature);
  }
  if (existing != nullptr) {
    // A spent token ends nothing, not even a session at its own address (a restarted client
    // asks its backend for a fresh token).
    if (server_.directory_.token_spent(claims.token_id, now_unix_ms)) {
      return refuse(wire::JoinStatus::TokenUsed, &counters.joins_refused_token_used);
    }
    // The client restarted on the same address with a fresh token: its old session ends first.
    flush_engine_batches(now_ms);
    end_session(existing);
  }
  const auto directory_refusal = [&](DirectoryAdd why) {
    switch (why) {
      case DirectoryAdd::HostFull: return refuse(wire::JoinStatus::HostFull, &counters.joins_refused_host_full);
      case DirectoryAdd::AccountLiveElsewhere: return refuse(wire::JoinStatus::AccountLiveElsewhere, &counters.joins_refused_account_live);
      case DirectoryAdd::TokenUsed: return refuse(wire::JoinStatus::TokenUsed, &counters.joins_refused_token_used);
      case DirectoryAdd::TokenTableFull: return refuse(wire::JoinStatus::TryLater, &counters.joins_refused_rate);
      case DirectoryAdd::Full: return refuse(wire::JoinStatus::ServerFull, &counters.joins_refused_server_full);
      case DirectoryAdd::Added: break;
    }
  };
  // A cheap early look (one host may not fill the server; one live session per account; one
  // session per token) before the join rate and the engine; add() below decides under the lock.
  if (const DirectoryAdd early = server_.directory_.precheck(source, claims.account_id, claims.token_id, now_unix_ms); early != DirectoryAdd::Added) {
    if (early == DirectoryAdd::AccountLiveElsewhere) {
      const std::optional<LiveSession> live = server_.directory_.live_session_of(claims.account_id);
      if (live && live->source.ip_be == source.ip_be) {
        // The same host on another port: the player restarted its client. The old session's
        // worker ends it; this confirm, resent, then joins.
        server_.workers_[live->worker]->request_end(live->player_id, live->session_token);
        counters.joins_replacing.add();
        return refuse(wire::JoinStatus::TryLater, nullptr);
      }
    }
    return directory_refusal(early);
  }
  bool admitted = false;
  {
    std::lock_guard lock(server_.join_rate_mutex_);
    admitted = server_.join_rate_.take(now_us);
  }
  // The whole server admits --join-rate joins a second: the client resends later.
  if (!admitted) return refuse(wire::JoinStatus::TryLater, &counters.joins_refused_rate);
  float x_m = 0, y_m = 0;
  const bool saved = server_.spawn_for(claims.account_id, claims.faction, x_m, y_m);
  MmoJoinTicket ticket{};
  const MmoStatus status = server_.engine_status("join", server_.engine().join(claims.account_id, x_m, y_m, claims.faction, ticket), counters);
  if (status != MMO_OK) {
    // The account still in a session the engine is ending, or the economy's disk behind:
    // the client resends.
    if (status == MMO_ERR_OUT_OF_BOUNDS) return refuse(wire::JoinStatus::SpawnRefused, &counters.joins_refused_spawn);
    if (status == MMO_ERR_ACCOUNT_IN_SESSION || status == MMO_ERR_STORAGE_BUSY) {
      return refuse(wire::JoinStatus::TryLater, &counters.joins_refused_engine_busy);
    }
    return refuse(wire::JoinStatus::ServerFull, &counters.joins_refused_server_full);
  }
  // Where the engine put the player: the spawn point asked for, or where its account's
  // lingering body stood.
  x_m = ticket.x_m;
  y_m = ticket.y_m;
  Session s;
  s.player_id = ticket.player_id;
  s.session_token = ticket.session_token;
  s.slot_hint = ticket.slot_hint;
  s.join_nonce = m.nonce;
  s.account_id = claims.account_id;
  s.token_id = claims.token_id;
  s.faction = claims.faction;
  s.source = source;
  s.last_seen_ms = now_ms;
  s.x_m = x_m;
  s.y_m = y_m;
  s.bucket = admission_.player_bucket(now_us);
  Session* inserted = admission_.sessions().insert(s);
  const DirectoryAdd added =
      inserted == nullptr ? DirectoryAdd::Full
                          : server_.directory_.add(
                                DirectoryJoin{s.player_id, s.session_token, source, claims.account_id, claims.token_id, claims.expires_unix_ms, index_},
                                now_unix_ms);
  if (added != DirectoryAdd::Added) {
    // A table is full, or another worker's join took the host's last place, the account or
    // the token since the early look: undo. (An account that came back still in combat
    // lingers after this leave as after any other, and its next join takes up from it.)
    if (inserted != nullptr) admission_.sessions().remove(inserted);
    server_.engine_status("leave", server_.engine().leave(ticket.player_id, ticket.session_token), counters);
    return directory_refusal(added);
  }
  reply.player_id = ticket.player_id;
  reply.session_token = ticket.session_token;
  reply.faction = claims.faction;
  reply.spawn_x_m = x_m;
  reply.spawn_y_m = y_m;
  counters.joins_accepted.add();
  if (saved) counters.joins_at_saved_position.add();
  send_reply(source, reply);
}

void Worker::request_end(uint64_t player_id, uint64_t session_token) {
  std::lock_guard lock(end_requests_mutex_);
  if (end_request_count_ < kEndRequestsMax) end_requests_[end_request_count_++] = {player_id, session_token};
  end_requests_pending_.store(true, std::memory_order_release);
}

void Worker::end_requested_sessions(uint64_t now_ms) {
  std::array<std::pair<uint64_t, uint64_t>, kEndRequestsMax> taken;
  size_t n = 0;
  {
    std::lock_guard lock(end_requests_mutex_);
    n = end_request_count_;
    std::copy_n(end_requests_.begin(), n, taken.begin());
    end_request_count_ = 0;
    end_requests_pending_.store(false, std::memory_order_relaxed);
  }
  for (size_t i = 0; i < n; ++i) {
    // The session may have left, expired or been replaced since: end it only if it is still
    // the one asked about.
    Session* s = admission_.sessions().find_player(taken[i].first);
    if (s == nullptr || s->session_token != taken[i].second) continue;
    flush_engine_batches(now_ms);
    end_session(s);
    counters.sessions_replaced.add();
  }
  sessions_live.store(static_cast<uint32_t>(admission_.sessions().size()), std::memory_order_relaxed);
}

void Worker::end_session(Session* session) {
  server_.engine_status("leave", server_.engine().leave(session->player_id, session->session_token), counters);
  server_.directory_.remove(session->player_id, session->x_m, session->y_m);
  admission_.sessions().remove(session);
}

bool Worker::move_pending_for(uint64_t player_id) const {
  for (size_t r = 0; r < move_count_; ++r) {
    if (moves_[r].player_id == player_id) return true;
  }
  return false;
}

void Worker::flush_engine_batches(uint64_t now_ms) {
  if (move_count_ > 0) {
    size_t written = 0;
    const MmoStatus status =
        server_.engine_status("apply_moves", server_.engine().apply_moves({moves_.data(), move_count_}, now_ms, events_, written), counters);
    if (status == MMO_OK) {
      // Server-side update latency: from each datagram's arrival in the kernel to the end of
      // its batch's apply; and its service time, from the batch's read to the same end (every
      // move of a batch shares it: one record of the batch's size).
      const uint64_t applied_ns = realtime_ns();
      {
        std::lock_guard lock(latency_mutex);
        for (size_t r = 0; r < move_count_; ++r) {
          const uint64_t arrival_ns = move_arrival_ns_[r];
          mmo_latency_record(update_latency_, applied_ns > arrival_ns ? (applied_ns - arrival_ns) / 1000 : 0, 1);
        }
        mmo_latency_record(update_service_, applied_ns > batch_read_ns_ ? (applied_ns - batch_read_ns_) / 1000 : 0, move_count_);
      }
      size_t e = 0;
      for (size_t r = 0; r < move_count_; ++r) {
        wire::MoveAck ack;
        ack.sequence = moves_[r].sequence;
        ack.client_time_ms = moves_[r].client_time_ms;
        if (e < written && events_[e].kind == MMO_EVENT_KIND_REJECT) {
          ack.result = events_[e].detail;
          ++e;
        } else if (e < written && events_[e].kind == MMO_EVENT_KIND_ACK) {
          ++e;
          // Applied: where the player now is (saved for its account when the session ends).
          move_sessions_[r]->x_m = moves_[r].x_m;
          move_sessions_[r]->y_m = moves_[r].y_m;
          while (e < written && events_[e].kind == MMO_EVENT_KIND_CONTACT) {
            if (ack.contact_count < wire::kContactsMax) {
              ack.contacts[ack.contact_count++] = {events_[e].other_id, events_[e].distance_m, events_[e].detail};
            }
            ++e;
          }
        }
        send_reply(move_sessions_[r]->source, ack);
      }
    }
    move_count_ = 0;
  }
  if (op_count_ > 0) {
    size_t written = 0;
    const MmoStatus status =
        server_.engine_status("apply_economy", server_.engine().apply_economy({ops_.data(), op_count_}, results_, written), counters);
    if (status == MMO_OK) {
      for (size_t i = 0; i < written; ++i) {
        const MmoEconomyResult& r = results_[i];
        send_durable(op_replies_[i], wire_result(r), r.ledger_seq);
      }
    }
    op_count_ = 0;
  }
}

void Worker::expire_idle_sessions(uint64_t now_ms) {
  const uint64_t idle_ms = uint64_t{server_.config_.idle_timeout_s} * 1000;
  if (idle_ms == 0) return;
  // Ending a session reshuffles the indexes, not the pool, so removing while visiting the
  // pool is safe; the visit is bounded by the pool's capacity.
  admission_.sessions().for_each([&](Session& s) {
    if (s.player_id != 0 && now_ms > s.last_seen_ms + idle_ms) {
      end_session(&s);
      counters.sessions_expired.add();
    }
  });
  sessions_live.store(static_cast<uint32_t>(admission_.sessions().size()), std::memory_order_relaxed);
}

}  // namespace mmo::net
