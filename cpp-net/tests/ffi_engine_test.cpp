// The Rust core driven through mmo_core.h only: joins, moves and their events, raid spawn,
// economy with retransmits, stats, and every error status the boundary can return (NULL,
// empty, misaligned, too-small buffer, bad enum value, stale id, wrong session, panic).
#include <gtest/gtest.h>

#include <array>
#include <cstring>
#include <vector>

#include "mmo_core.h"

namespace {

// RAII owner of an engine: the _new/_free pair.
class Engine {
public:
    explicit Engine(bool fault_injection = false, uint64_t starting_gold = 1000) {
        MmoConfig config{};
        EXPECT_EQ(mmo_config_default(&config), MMO_OK);
        config.world_size_m = 1024.0f;
        config.player_capacity = 64;
        config.raid_object_capacity = 20000;
        config.raid_burst_capacity = 8;
        config.starting_gold = starting_gold;
        config.fault_injection = fault_injection ? 1 : 0;
        EXPECT_EQ(mmo_engine_new(&config, &engine_), MMO_OK);
    }
    ~Engine() { mmo_engine_free(engine_); }
    Engine(const Engine&) = delete;
    Engine& operator=(const Engine&) = delete;
    const MmoEngine* get() const { return engine_; }

    MmoJoinTicket join(float x, float y, uint8_t faction = 1) const {
        MmoJoinTicket ticket{};
        EXPECT_EQ(mmo_join(engine_, 0, x, y, faction, &ticket), MMO_OK);
        return ticket;
    }

    MmoStats stats() const {
        MmoStats s{};
        EXPECT_EQ(mmo_stats(engine_, &s), MMO_OK);
        return s;
    }

    std::vector<MmoMoveEvent> moves(const std::vector<MmoMoveRecord>& batch, uint64_t now_ms) const {
        size_t required = 0;
        EXPECT_EQ(mmo_move_events_required(engine_, batch.size(), &required), MMO_OK);
        std::vector<MmoMoveEvent> events(required);
        size_t written = 0;
        EXPECT_EQ(mmo_apply_moves(engine_, batch.data(), batch.size(), now_ms, events.data(), events.size(), &written), MMO_OK);
        events.resize(written);
        return events;
    }

    MmoEconomyResult economy(const MmoEconomyOp& op) const {
        MmoEconomyResult result{};
        size_t written = 0;
        EXPECT_EQ(mmo_apply_economy(engine_, &op, 1, &result, 1, &written), MMO_OK);
        EXPECT_EQ(written, 1u);
        return result;
    }

private:
    MmoEngine* engine_ = nullptr;
};

MmoMoveRecord move(const MmoJoinTicket& who, uint32_t seq, uint32_t client_ms, float x, float y) {
    MmoMoveRecord m{};
    m.player_id = who.player_id;
    m.session_token = who.session_token;
    m.slot_hint = who.slot_hint;
    m.sequence = seq;
    m.client_time_ms = client_ms;
    m.x_m = x;
    m.y_m = y;
    std::memset(m.payload, 0xAB, sizeof m.payload);
    return m;
}

MmoEconomyOp economy_op(const MmoJoinTicket& who, uint64_t txn, MmoEconomyKind kind, uint64_t counterparty, int64_t gold) {
    MmoEconomyOp op{};
    op.player_id = who.player_id;
    op.session_token = who.session_token;
    op.transaction_id = txn;
    op.counterparty_id = counterparty;
    op.gold = gold;
    op.kind = kind;
    return op;
}

MmoRaidSpawnRequest raid(uint32_t count) {
    MmoRaidSpawnRequest r{};
    r.center_x_m = 500.0f;
    r.center_y_m = 500.0f;
    r.half_extent_m = 40.0f;
    r.count = count;
    r.lifetime_ms = 100;
    r.hp = 10;
    r.seed = 3;
    r.kind = MMO_ENTITY_KIND_ADD;
    r.faction = 9;
    return r;
}

TEST(FfiAbi, VersionAndStatusNames) {
    EXPECT_EQ(mmo_abi_version(), static_cast<uint32_t>(MMO_ABI_VERSION));
    EXPECT_EQ(mmo_abi_check(MMO_ABI_VERSION), MMO_OK);
    EXPECT_EQ(mmo_abi_check(0), MMO_ERR_ABI_MISMATCH);
    EXPECT_STREQ(mmo_status_name(MMO_OK), "MMO_OK");
    EXPECT_STREQ(mmo_status_name(MMO_ERR_POISONED), "MMO_ERR_POISONED");
    EXPECT_STREQ(mmo_status_name(4242), "MMO_UNKNOWN_STATUS");
}

TEST(FfiEngine, InvalidConfigAndNullOutputsAreRefused) {
    MmoConfig config{};
    ASSERT_EQ(mmo_config_default(&config), MMO_OK);
    MmoEngine* engine = nullptr;
    EXPECT_EQ(mmo_engine_new(nullptr, &engine), MMO_ERR_NULL_POINTER);
    EXPECT_EQ(mmo_engine_new(&config, nullptr), MMO_ERR_NULL_POINTER);
    config.aoi_k = 0;
    EXPECT_EQ(mmo_engine_new(&config, &engine), MMO_ERR_INVALID_CONFIG);
    EXPECT_EQ(engine, nullptr) << "outputs are written only on success";
    EXPECT_EQ(mmo_config_default(nullptr), MMO_ERR_NULL_POINTER);
    mmo_engine_free(nullptr);  // ignored
}

TEST(FfiEngine, NullEngineIsRefusedEverywhere) {
    MmoJoinTicket ticket{};
    MmoStats stats{};
    MmoTickInfo info{};
    size_t n = 0;
    EXPECT_EQ(mmo_join(nullptr, 0, 1, 1, 1, &ticket), MMO_ERR_NULL_POINTER);
    EXPECT_EQ(mmo_leave(nullptr, 1, 1), MMO_ERR_NULL_POINTER);
    EXPECT_EQ(mmo_stats(nullptr, &stats), MMO_ERR_NULL_POINTER);
    EXPECT_EQ(mmo_tick(nullptr, 0, &info), MMO_ERR_NULL_POINTER);
    EXPECT_EQ(mmo_apply_moves(nullptr, nullptr, 0, 0, nullptr, 0, &n), MMO_ERR_NULL_POINTER);
}

TEST(FfiMoves, JoinMoveAckAndContact) {
    Engine e;
    auto a = e.join(100.0f, 100.0f);
    auto b = e.join(104.0f, 100.0f, 2);
    ASSERT_NE(a.player_id, b.player_id);
    auto events = e.moves({move(a, 1, 0, 101.0f, 100.0f)}, 1000);
    ASSERT_EQ(events.size(), 2u);
    EXPECT_EQ(events[0].kind, MMO_EVENT_KIND_ACK);
    EXPECT_EQ(events[0].player_id, a.player_id);
    EXPECT_EQ(events[1].kind, MMO_EVENT_KIND_CONTACT);
    EXPECT_EQ(events[1].other_id, b.player_id);
    EXPECT_EQ(events[1].detail, MMO_ENTITY_KIND_PLAYER);
    EXPECT_NEAR(events[1].distance_m, 3.0f, 1e-4f);
    MmoPlayerView view{};
    ASSERT_EQ(mmo_player_view(e.get(), a.player_id, &view), MMO_OK);
    EXPECT_EQ(view.x_m, 101.0f);
    EXPECT_EQ(view.last_sequence, 1u);
    EXPECT_EQ(e.stats().moves_applied, 1u);
}

TEST(FfiMoves, RejectionsArriveAsEvents) {
    Engine e;
    auto a = e.join(100.0f, 100.0f);
    auto wrong_session = move(a, 2, 100, 100.5f, 100.0f);
    wrong_session.session_token ^= 1;
    auto stale_id = move(a, 2, 100, 100.5f, 100.0f);
    stale_id.player_id += 1000;
    auto events = e.moves({move(a, 1, 0, 100.5f, 100.0f), move(a, 1, 50, 100.6f, 100.0f), wrong_session, stale_id,
                           move(a, 3, 100, 300.0f, 100.0f), move(a, 4, 100, -5.0f, 100.0f)},
                          1000);
    ASSERT_EQ(events.size(), 6u);
    EXPECT_EQ(events[0].kind, MMO_EVENT_KIND_ACK);
    const std::array<uint8_t, 5> expected = {MMO_REJECT_REASON_STALE_SEQUENCE, MMO_REJECT_REASON_WRONG_SESSION,
                                             MMO_REJECT_REASON_UNKNOWN_PLAYER, MMO_REJECT_REASON_TOO_FAST,
                                             MMO_REJECT_REASON_OUT_OF_BOUNDS};
    for (size_t i = 0; i < expected.size(); ++i) {
        EXPECT_EQ(events[i + 1].kind, MMO_EVENT_KIND_REJECT) << i;
        EXPECT_EQ(events[i + 1].detail, expected[i]) << i;
    }
    auto s = e.stats();
    EXPECT_EQ(s.move_rejected_stale_sequence, 1u);
    EXPECT_EQ(s.move_rejected_wrong_session, 1u);
    EXPECT_EQ(s.move_rejected_unknown_player, 1u);
    EXPECT_EQ(s.move_rejected_too_fast, 1u);
    EXPECT_EQ(s.move_rejected_out_of_bounds, 1u);
}

TEST(FfiMoves, EmptyNullAndTooSmallBuffers) {
    Engine e;
    auto a = e.join(100.0f, 100.0f);
    size_t written = 99;
    // (NULL, 0) is an empty batch.
    EXPECT_EQ(mmo_apply_moves(e.get(), nullptr, 0, 0, nullptr, 0, &written), MMO_OK);
    EXPECT_EQ(written, 0u);
    // NULL with a length is refused, input or output.
    MmoMoveEvent events[64];
    EXPECT_EQ(mmo_apply_moves(e.get(), nullptr, 1, 0, events, 64, &written), MMO_ERR_NULL_POINTER);
    auto m = move(a, 1, 0, 100.5f, 100.0f);
    EXPECT_EQ(mmo_apply_moves(e.get(), &m, 1, 0, nullptr, 64, &written), MMO_ERR_NULL_POINTER);
    EXPECT_EQ(mmo_apply_moves(e.get(), &m, 1, 0, events, 64, nullptr), MMO_ERR_NULL_POINTER);
    // Too small for the worst case: refused whole, nothing applied, count untouched.
    size_t required = 0;
    ASSERT_EQ(mmo_move_events_required(e.get(), 1, &required), MMO_OK);
    written = 77;
    EXPECT_EQ(mmo_apply_moves(e.get(), &m, 1, 0, events, required - 1, &written), MMO_ERR_BUFFER_TOO_SMALL);
    EXPECT_EQ(written, 77u);
    MmoPlayerView view{};
    ASSERT_EQ(mmo_player_view(e.get(), a.player_id, &view), MMO_OK);
    EXPECT_EQ(view.last_sequence, 0u);
    EXPECT_EQ(e.stats().move_batches_refused, 1u);
    // An absurd length does not overflow the size computation.
    EXPECT_EQ(mmo_move_events_required(e.get(), SIZE_MAX, &required), MMO_ERR_INVALID_ARGUMENT);
}

TEST(FfiMoves, MisalignedPointersAreRefused) {
    Engine e;
    auto a = e.join(100.0f, 100.0f);
    alignas(8) unsigned char raw[sizeof(MmoMoveRecord) + 8];
    auto m = move(a, 1, 0, 100.5f, 100.0f);
    std::memcpy(raw + 4, &m, sizeof m);
    const auto* misaligned = reinterpret_cast<const MmoMoveRecord*>(raw + 4);
    MmoMoveEvent events[64];
    size_t written = 0;
    EXPECT_EQ(mmo_apply_moves(e.get(), misaligned, 1, 0, events, 64, &written), MMO_ERR_MISALIGNED_POINTER);
    alignas(8) unsigned char out_raw[sizeof(MmoStats) + 8];
    EXPECT_EQ(mmo_stats(e.get(), reinterpret_cast<MmoStats*>(out_raw + 4)), MMO_ERR_MISALIGNED_POINTER);
}

TEST(FfiRaid, SpawnExpireAndBadRequests) {
    Engine e;
    MmoRaidReport report{};
    ASSERT_EQ(mmo_raid_spawn(e.get(), nullptr, &report), MMO_ERR_NULL_POINTER);
    auto request = raid(11000);
    ASSERT_EQ(mmo_raid_spawn(e.get(), &request, &report), MMO_OK);
    EXPECT_EQ(report.spawned, 11000u);
    auto too_many = raid(10000);
    EXPECT_EQ(mmo_raid_spawn(e.get(), &too_many, &report), MMO_ERR_CAPACITY);
    auto bad_kind = raid(10);
    bad_kind.kind = 200;
    EXPECT_EQ(mmo_raid_spawn(e.get(), &bad_kind, &report), MMO_ERR_BAD_ENUM);
    auto player_kind = raid(10);
    player_kind.kind = MMO_ENTITY_KIND_PLAYER;
    EXPECT_EQ(mmo_raid_spawn(e.get(), &player_kind, &report), MMO_ERR_BAD_ENUM);
    auto zero = raid(0);
    EXPECT_EQ(mmo_raid_spawn(e.get(), &zero, &report), MMO_ERR_INVALID_ARGUMENT);
    auto outside = raid(10);
    outside.center_x_m = -1.0f;
    EXPECT_EQ(mmo_raid_spawn(e.get(), &outside, &report), MMO_ERR_OUT_OF_BOUNDS);
    MmoTickInfo info{};
    for (uint64_t t = 1; t <= 3; ++t) {
        ASSERT_EQ(mmo_tick(e.get(), t * 50, &info), MMO_OK);
    }
    EXPECT_EQ(info.objects_live, 0u);
    auto s = e.stats();
    EXPECT_EQ(s.raid_objects_spawned, 11000u);
    EXPECT_EQ(s.raid_objects_despawned, 11000u);
    EXPECT_EQ(s.raid_refused_capacity, 1u);
}

TEST(FfiAoi, NearestFirstAsOfTheLastTickAndUnknownPlayer) {
    Engine e;
    auto a = e.join(200.0f, 200.0f);
    auto near = e.join(201.0f, 200.0f);
    e.join(205.0f, 200.0f);
    MmoAoiEntry entries[8];
    size_t n = 0;
    EXPECT_EQ(mmo_area_of_interest(e.get(), a.player_id, entries, 8, &n), MMO_ERR_NOT_IN_SNAPSHOT) << "no tick yet";
    MmoTickInfo info{};
    ASSERT_EQ(mmo_tick(e.get(), 50, &info), MMO_OK);
    EXPECT_EQ(info.snapshot_entities, 3u);
    ASSERT_EQ(mmo_area_of_interest(e.get(), a.player_id, entries, 8, &n), MMO_OK);
    ASSERT_EQ(n, 2u);
    EXPECT_EQ(entries[0].entity_id, near.player_id);
    EXPECT_LE(entries[0].distance_m, entries[1].distance_m);
    EXPECT_EQ(mmo_area_of_interest(e.get(), 999999, entries, 8, &n), MMO_ERR_UNKNOWN_PLAYER);
    ASSERT_EQ(mmo_area_of_interest(e.get(), a.player_id, nullptr, 0, &n), MMO_OK);
    EXPECT_EQ(n, 0u);
    // The batch form, as a network worker calls it: one snapshot for every player of a chunk.
    const uint64_t players[3] = {a.player_id, 999999, near.player_id};
    MmoAoiEntry batch[3 * 4];
    uint32_t counts[3] = {};
    MmoAoiBatchInfo batch_info{};
    ASSERT_EQ(mmo_area_of_interest_batch(e.get(), players, 3, 4, batch, 12, counts, 3, &batch_info), MMO_OK);
    EXPECT_EQ(counts[0], 2u);
    EXPECT_EQ(counts[1], MMO_AOI_NOT_IN_SNAPSHOT);
    EXPECT_EQ(counts[2], 2u);
    EXPECT_EQ(batch[0].entity_id, near.player_id);
    EXPECT_EQ(batch[8].entity_id, a.player_id);
    EXPECT_EQ(batch_info.tick, info.tick);
    EXPECT_EQ(batch_info.now_ms, 50u);
    EXPECT_EQ(batch_info.found, 2u);
    EXPECT_EQ(mmo_area_of_interest_batch(e.get(), players, 3, 4, batch, 11, counts, 3, &batch_info), MMO_ERR_BUFFER_TOO_SMALL);
}

TEST(FfiEconomy, RetransmitsApplyOnceAndBooksBalance) {
    Engine e;
    auto a = e.join(10.0f, 10.0f);
    auto b = e.join(20.0f, 10.0f);
    auto transfer = economy_op(a, 1, MMO_ECONOMY_KIND_TRANSFER, b.player_id, 300);
    auto first = e.economy(transfer);
    EXPECT_EQ(first.status, MMO_ECONOMY_STATUS_APPLIED);
    EXPECT_EQ(first.duplicate, 0);
    EXPECT_EQ(first.gold_balance, 700u);
    for (int i = 0; i < 3; ++i) {
        auto again = e.economy(transfer);
        EXPECT_EQ(again.status, MMO_ECONOMY_STATUS_APPLIED);
        EXPECT_EQ(again.duplicate, 1);
        EXPECT_EQ(again.gold_balance, 700u);
    }
    MmoPlayerView view{};
    ASSERT_EQ(mmo_player_view(e.get(), b.player_id, &view), MMO_OK);
    EXPECT_EQ(view.gold, 1300u);
    // Per-record refusals: bad enum value, wrong session, self-trade, insufficient funds.
    auto bad_kind = economy_op(a, 2, MMO_ECONOMY_KIND_TRANSFER, b.player_id, 1);
    bad_kind.kind = 99;
    EXPECT_EQ(e.economy(bad_kind).status, MMO_ECONOMY_STATUS_BAD_KIND);
    auto wrong_session = economy_op(a, 3, MMO_ECONOMY_KIND_SPEND, 0, 1);
    wrong_session.session_token ^= 1;
    EXPECT_EQ(e.economy(wrong_session).status, MMO_ECONOMY_STATUS_WRONG_SESSION);
    EXPECT_EQ(e.economy(economy_op(a, 4, MMO_ECONOMY_KIND_TRANSFER, a.player_id, 1)).status, MMO_ECONOMY_STATUS_SELF_TRADE);
    EXPECT_EQ(e.economy(economy_op(a, 5, MMO_ECONOMY_KIND_SPEND, 0, 5000)).status, MMO_ECONOMY_STATUS_INSUFFICIENT_FUNDS);
    // A batch with room for fewer results than operations is refused whole.
    MmoEconomyOp ops[2] = {economy_op(a, 6, MMO_ECONOMY_KIND_SPEND, 0, 1), economy_op(a, 7, MMO_ECONOMY_KIND_SPEND, 0, 1)};
    MmoEconomyResult results[1];
    size_t written = 0;
    EXPECT_EQ(mmo_apply_economy(e.get(), ops, 2, results, 1, &written), MMO_ERR_BUFFER_TOO_SMALL);
    EXPECT_EQ(mmo_apply_economy(e.get(), nullptr, 0, nullptr, 0, &written), MMO_OK);
    EXPECT_EQ(written, 0u);
    MmoEconomyAudit audit{};
    ASSERT_EQ(mmo_economy_audit(e.get(), &audit), MMO_OK);
    EXPECT_EQ(audit.conserved, 1);
    EXPECT_EQ(audit.live_gold, 2000u);
    EXPECT_EQ(e.stats().economy_duplicates, 3u);
}

TEST(FfiPlayers, LeaveStaleIdAndWrongSession) {
    Engine e;
    auto a = e.join(10.0f, 10.0f);
    EXPECT_EQ(mmo_leave(e.get(), a.player_id, a.session_token ^ 1), MMO_ERR_WRONG_SESSION);
    EXPECT_EQ(mmo_leave(e.get(), a.player_id, a.session_token), MMO_OK);
    EXPECT_EQ(mmo_leave(e.get(), a.player_id, a.session_token), MMO_ERR_UNKNOWN_PLAYER);
    MmoPlayerView view{};
    EXPECT_EQ(mmo_player_view(e.get(), a.player_id, &view), MMO_ERR_UNKNOWN_PLAYER);
    MmoJoinTicket ticket{};
    EXPECT_EQ(mmo_join(e.get(), 0, -1.0f, 10.0f, 1, &ticket), MMO_ERR_OUT_OF_BOUNDS);
    EXPECT_EQ(ticket.player_id, 0u) << "outputs are written only on success";
    MmoDamageResult hit{};
    auto b = e.join(12.0f, 10.0f, 2);
    auto c = e.join(13.0f, 10.0f, 3);
    EXPECT_EQ(mmo_damage(e.get(), b.player_id, b.session_token, c.player_id, 10, &hit), MMO_OK);
    EXPECT_EQ(hit.outcome, 1);
    EXPECT_EQ(mmo_damage(e.get(), b.player_id, b.session_token, a.player_id, 10, &hit), MMO_ERR_UNKNOWN_TARGET);
    EXPECT_EQ(mmo_damage(e.get(), b.player_id, b.session_token, c.player_id, 0, &hit), MMO_ERR_INVALID_ARGUMENT);
}

TEST(FfiPlayers, ServerFullAndFriendlyFire) {
    MmoConfig config{};
    ASSERT_EQ(mmo_config_default(&config), MMO_OK);
    config.player_capacity = 2;
    MmoEngine* engine = nullptr;
    ASSERT_EQ(mmo_engine_new(&config, &engine), MMO_OK);
    MmoJoinTicket a{}, b{}, c{};
    ASSERT_EQ(mmo_join(engine, 0, 10.0f, 10.0f, 4, &a), MMO_OK);
    ASSERT_EQ(mmo_join(engine, 0, 11.0f, 10.0f, 4, &b), MMO_OK);
    EXPECT_EQ(mmo_join(engine, 0, 12.0f, 10.0f, 4, &c), MMO_ERR_SERVER_FULL);
    EXPECT_EQ(c.player_id, 0u);
    MmoDamageResult hit{};
    EXPECT_EQ(mmo_damage(engine, a.player_id, a.session_token, b.player_id, 5, &hit), MMO_ERR_FRIENDLY_FIRE);
    EXPECT_EQ(mmo_damage(engine, a.player_id, a.session_token ^ 1, b.player_id, 5, &hit), MMO_ERR_WRONG_SESSION);
    config._reserved[3] = 1;
    MmoEngine* refused = nullptr;
    EXPECT_EQ(mmo_engine_new(&config, &refused), MMO_ERR_INVALID_ARGUMENT) << "reserved bytes must be zero";
    EXPECT_EQ(refused, nullptr);
    mmo_engine_free(engine);
}

TEST(FfiPanic, CaughtAtTheBoundaryAndPoisonsTheEngine) {
    Engine plain;
    EXPECT_EQ(mmo_debug_inject_panic(plain.get()), MMO_ERR_INVALID_ARGUMENT) << "disabled unless configured";
    Engine e(/*fault_injection=*/true);
    auto a = e.join(10.0f, 10.0f);
    EXPECT_EQ(mmo_debug_inject_panic(e.get()), MMO_ERR_PANIC);
    // The process is still here; the engine refuses further work.
    MmoStats stats{};
    EXPECT_EQ(mmo_stats(e.get(), &stats), MMO_ERR_POISONED);
    EXPECT_EQ(mmo_leave(e.get(), a.player_id, a.session_token), MMO_ERR_POISONED);
    // Other engines are unaffected.
    EXPECT_EQ(plain.stats().joins, 0u);
}

}  // namespace
