// worker.cpp: an I/O worker's loop: drain the socket with recvmmsg, admit each datagram,
// hand the batch's moves and economy requests to the engine (one call each), answer with one
// sendmmsg. Admin messages (raid trigger, stats) are handled in admin.cpp.
#include "net/worker.hpp"

#include <sys/socket.h>

#include <algorithm>
#include <variant>

namespace mmo::net {

void Worker::run() {
  server_.engine().prewarm_thread();
  std::array<epoll_event, 4> ready{};
  while (!server_.stopping_.load(std::memory_order_acquire)) {
    const int n = epoll_wait(epfd_, ready.data(), static_cast<int>(ready.size()), kEpollTimeoutMs);
    if (n > 0) {
      for (int round = 0; round < kDrainRoundsMax; ++round) {
        // The kernel writes back each name length and flags; reset them before each call.
        for (auto& m : rx_msgs_) {
          m.msg_hdr.msg_namelen = sizeof(sockaddr_in);
          m.msg_hdr.msg_flags = 0;
        }
        const int got = recvmmsg(fd_, rx_msgs_.data(), kBatchMax, MSG_DONTWAIT, nullptr);
        if (got <= 0) break;
        handle_batch(static_cast<size_t>(got));
        if (static_cast<size_t>(got) < kBatchMax) break;
      }
    }
    const uint64_t now_ms = server_.now_us() / 1000;
    if (now_ms >= next_idle_scan_ms_) {
      std::lock_guard lock(session_mutex);
      expire_idle_sessions(now_ms);
      next_idle_scan_ms_ = now_ms + 1000;
    }
  }
}

void Worker::handle_batch(size_t count) {
  const uint64_t t0_us = server_.now_us();
  counters.datagrams_received.add(count);
  batch_moves_ = 0;
  {
    std::lock_guard lock(session_mutex);
    wire::Decoded<wire::ClientMessage> decoded;
    for (size_t i = 0; i < count; ++i) {
      const mmsghdr& m = rx_msgs_[i];
      size_t len = m.msg_len;
      // A datagram larger than the buffer arrives cut; it is oversized either way.
      if ((m.msg_hdr.msg_flags & MSG_TRUNC) != 0) len = kRxBufferSize;
      if (m.msg_hdr.msg_namelen < sizeof(sockaddr_in) || rx_addrs_[i].sin_family != AF_INET) continue;
      const SourceAddress source{rx_addrs_[i].sin_addr.s_addr, rx_addrs_[i].sin_port};
      const Admitted a = admission_.admit({rx_buffers_[i].data(), len}, source, t0_us, decoded);
      if (!a.ok) {
        counters.drops[static_cast<size_t>(a.reason)].add();
        continue;
      }
      handle(decoded.message, source, a.session, t0_us);
    }
    flush_engine_batches(t0_us / 1000);
    sessions_live.store(static_cast<uint32_t>(admission_.sessions().size()), std::memory_order_relaxed);
  }
  const uint64_t t1_us = server_.now_us();
  if (batch_moves_ > 0) {
    std::lock_guard lock(latency_mutex);
    mmo_latency_record(update_latency_, t1_us - t0_us, batch_moves_);
  }
  const auto [sent, failed] = tx_.flush(fd_);
  counters.datagrams_sent.add(sent);
  counters.send_failures.add(failed);
  for (size_t i = 0; i < pending_stats_count_; ++i) send_stats(pending_stats_[i].first, pending_stats_[i].second);
  pending_stats_count_ = 0;
}

void Worker::handle(const wire::ClientMessage& message, SourceAddress source, Session* session, uint64_t now_us) {
  const uint64_t now_ms = now_us / 1000;
  std::visit(
      [&](const auto& m) {
        using T = std::decay_t<decltype(m)>;
        if constexpr (std::is_same_v<T, wire::JoinRequest>) {
          const uint32_t period = JoinCookies::period_at(now_ms);
          const wire::JoinChallenge reply{m.nonce, period, admission_.cookies().mac(source, m.nonce, period)};
          tx_.commit(source, wire::encode(reply, tx_.slot()));
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
          std::memcpy(r.payload, m.payload.data(), wire::kPayloadSize);
          move_replies_[move_count_] = source;
          ++move_count_;
          counters.moves_forwarded.add();
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
        } else if constexpr (std::is_same_v<T, wire::Leave>) {
          // Moves and trades earlier in this batch go first, in arrival order.
          flush_engine_batches(now_ms);
          end_session(session);
          tx_.commit(source, wire::encode(wire::LeaveAck{m.player_id}, tx_.slot()));
          counters.leaves.add();
        } else if constexpr (std::is_same_v<T, wire::Ping>) {
          tx_.commit(source, wire::encode(wire::Pong{m.client_time_us, now_ms}, tx_.slot()));
          counters.pongs_sent.add();
        } else if constexpr (std::is_same_v<T, wire::RaidTrigger>) {
          on_raid_trigger(m, source);
        } else if constexpr (std::is_same_v<T, wire::StatsRequest>) {
          if (pending_stats_count_ < pending_stats_.size()) pending_stats_[pending_stats_count_++] = {source, m.request_id};
          counters.stats_requests.add();
        }
      },
      message);
}

void Worker::on_join_confirm(const wire::JoinConfirm& m, SourceAddress source, uint64_t now_us) {
  const uint64_t now_ms = now_us / 1000;
  wire::JoinAccept reply{m.nonce, 0, 0, wire::JoinStatus::Joined, 1000 / std::max(1u, server_.config_.tick_hz), now_ms};
  if (Session* existing = admission_.sessions().find_source(source)) {
    if (existing->join_nonce == m.nonce) {
      // The accept was lost and the client asked again: same session, same answer.
      reply.player_id = existing->player_id;
      reply.session_token = existing->session_token;
      tx_.commit(source, wire::encode(reply, tx_.slot()));
      counters.join_retransmits.add();
      return;
    }
    // The client restarted on the same address: its old session ends first.
    flush_engine_batches(now_ms);
    end_session(existing);
  }
  MmoJoinTicket ticket{};
  const MmoStatus status = server_.engine().join(m.spawn_x_m, m.spawn_y_m, m.faction, ticket);
  if (status == MMO_OK) {
    Session s;
    s.player_id = ticket.player_id;
    s.session_token = ticket.session_token;
    s.join_nonce = m.nonce;
    s.source = source;
    s.last_seen_ms = now_ms;
    s.bucket = admission_.player_bucket(now_us);
    Session* inserted = admission_.sessions().insert(s);
    if (inserted == nullptr || !server_.directory_.add(s.player_id, s.session_token, s.source)) {
      // A table is full (or the engine handed out an id still held): undo.
      if (inserted != nullptr) admission_.sessions().remove(inserted);
      server_.engine().leave(ticket.player_id, ticket.session_token);
      reply.status = wire::JoinStatus::ServerFull;
      counters.joins_refused.add();
    } else {
      reply.player_id = ticket.player_id;
      reply.session_token = ticket.session_token;
      counters.joins_accepted.add();
    }
  } else {
    reply.status = status == MMO_ERR_OUT_OF_BOUNDS ? wire::JoinStatus::BadSpawn : wire::JoinStatus::ServerFull;
    counters.joins_refused.add();
  }
  tx_.commit(source, wire::encode(reply, tx_.slot()));
}

void Worker::end_session(Session* session) {
  server_.engine().leave(session->player_id, session->session_token);
  server_.directory_.remove(session->player_id);
  admission_.sessions().remove(session);
}

void Worker::flush_engine_batches(uint64_t now_ms) {
  if (move_count_ > 0) {
    size_t written = 0;
    const MmoStatus status = server_.engine().apply_moves({moves_.data(), move_count_}, now_ms, events_, written);
    if (status == MMO_OK) {
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
          while (e < written && events_[e].kind == MMO_EVENT_KIND_CONTACT) {
            if (ack.contact_count < wire::kContactsMax) {
              ack.contacts[ack.contact_count++] = {events_[e].other_id, events_[e].distance_m, events_[e].detail};
            }
            ++e;
          }
        }
        tx_.commit(move_replies_[r], wire::encode(ack, tx_.slot()));
      }
      batch_moves_ += move_count_;
    }
    move_count_ = 0;
  }
  if (op_count_ > 0) {
    size_t written = 0;
    const MmoStatus status = server_.engine().apply_economy({ops_.data(), op_count_}, results_, written);
    if (status == MMO_OK) {
      for (size_t i = 0; i < written; ++i) {
        const MmoEconomyResult& r = results_[i];
        tx_.commit(op_replies_[i], wire::encode(wire::EconomyResult{r.transaction_id, r.gold_balance, r.status, r.duplicate}, tx_.slot()));
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
