/* Layout assertions shared by the C11 and C++20 header tests: sizes and offsets of every
 * record that crosses the ABI, matching the Rust side's compile-time assertions. */
#ifndef MMO_FFI_LAYOUT_H
#define MMO_FFI_LAYOUT_H

#include <stddef.h>
#include "mmo_core.h"

#ifdef __cplusplus
#define MMO_STATIC_ASSERT(cond, msg) static_assert(cond, msg)
#else
#define MMO_STATIC_ASSERT(cond, msg) _Static_assert(cond, msg)
#endif

MMO_STATIC_ASSERT(sizeof(MmoMoveRecord) == 72, "MmoMoveRecord size");
MMO_STATIC_ASSERT(offsetof(MmoMoveRecord, sequence) == 16, "MmoMoveRecord.sequence");
MMO_STATIC_ASSERT(offsetof(MmoMoveRecord, x_m) == 24, "MmoMoveRecord.x_m");
MMO_STATIC_ASSERT(offsetof(MmoMoveRecord, slot_hint) == 36, "MmoMoveRecord.slot_hint");
MMO_STATIC_ASSERT(offsetof(MmoMoveRecord, payload) == 40, "MmoMoveRecord.payload");
MMO_STATIC_ASSERT(sizeof(MmoMoveEvent) == 32, "MmoMoveEvent size");
MMO_STATIC_ASSERT(offsetof(MmoMoveEvent, kind) == 24, "MmoMoveEvent.kind");
MMO_STATIC_ASSERT(offsetof(MmoMoveEvent, detail) == 25, "MmoMoveEvent.detail");
MMO_STATIC_ASSERT(sizeof(MmoRaidSpawnRequest) == 32, "MmoRaidSpawnRequest size");
MMO_STATIC_ASSERT(offsetof(MmoRaidSpawnRequest, kind) == 28, "MmoRaidSpawnRequest.kind");
MMO_STATIC_ASSERT(sizeof(MmoEconomyOp) == 48, "MmoEconomyOp size");
MMO_STATIC_ASSERT(offsetof(MmoEconomyOp, gold) == 32, "MmoEconomyOp.gold");
MMO_STATIC_ASSERT(offsetof(MmoEconomyOp, kind) == 46, "MmoEconomyOp.kind");
MMO_STATIC_ASSERT(sizeof(MmoEconomyResult) == 40, "MmoEconomyResult size");
MMO_STATIC_ASSERT(offsetof(MmoEconomyResult, status) == 24, "MmoEconomyResult.status");
MMO_STATIC_ASSERT(sizeof(MmoAoiEntry) == 24, "MmoAoiEntry size");
MMO_STATIC_ASSERT(offsetof(MmoAoiEntry, kind) == 20, "MmoAoiEntry.kind");
MMO_STATIC_ASSERT(sizeof(MmoConfig) == 144, "MmoConfig size");
MMO_STATIC_ASSERT(offsetof(MmoConfig, aoi_radius_m) == 24, "MmoConfig.aoi_radius_m");
MMO_STATIC_ASSERT(offsetof(MmoConfig, loot_range_m) == 80, "MmoConfig.loot_range_m");
MMO_STATIC_ASSERT(offsetof(MmoConfig, trade_timeout_ms) == 100, "MmoConfig.trade_timeout_ms");
MMO_STATIC_ASSERT(offsetof(MmoConfig, respawn_ms) == 104, "MmoConfig.respawn_ms");
MMO_STATIC_ASSERT(offsetof(MmoConfig, logout_linger_ms) == 108, "MmoConfig.logout_linger_ms");
MMO_STATIC_ASSERT(offsetof(MmoConfig, starting_gold) == 112, "MmoConfig.starting_gold");
MMO_STATIC_ASSERT(offsetof(MmoConfig, loot_key) == 120, "MmoConfig.loot_key");
MMO_STATIC_ASSERT(offsetof(MmoConfig, fault_injection) == 136, "MmoConfig.fault_injection");
MMO_STATIC_ASSERT(sizeof(MmoJoinTicket) == 32, "MmoJoinTicket size");
MMO_STATIC_ASSERT(offsetof(MmoJoinTicket, x_m) == 20, "MmoJoinTicket.x_m");
MMO_STATIC_ASSERT(offsetof(MmoJoinTicket, slot_hint) == 16, "MmoJoinTicket.slot_hint");
MMO_STATIC_ASSERT(sizeof(MmoRaidReport) == 16, "MmoRaidReport size");
MMO_STATIC_ASSERT(sizeof(MmoTickInfo) == 32, "MmoTickInfo size");
MMO_STATIC_ASSERT(offsetof(MmoTickInfo, tick) == 8, "MmoTickInfo.tick");
MMO_STATIC_ASSERT(offsetof(MmoTickInfo, snapshot_entities) == 28, "MmoTickInfo.snapshot_entities");
MMO_STATIC_ASSERT(sizeof(MmoAoiBatchInfo) == 16, "MmoAoiBatchInfo size");
MMO_STATIC_ASSERT(offsetof(MmoAoiBatchInfo, found) == 12, "MmoAoiBatchInfo.found");
MMO_STATIC_ASSERT(MMO_AOI_NOT_IN_SNAPSHOT == 0xFFFFFFFFu, "MMO_AOI_NOT_IN_SNAPSHOT");
MMO_STATIC_ASSERT(sizeof(MmoDamageResult) == 8, "MmoDamageResult size");
MMO_STATIC_ASSERT(sizeof(MmoAttackResult) == 16, "MmoAttackResult size");
MMO_STATIC_ASSERT(offsetof(MmoAttackResult, refusal) == 8, "MmoAttackResult.refusal");
MMO_STATIC_ASSERT(sizeof(MmoLootResult) == 32, "MmoLootResult size");
MMO_STATIC_ASSERT(offsetof(MmoLootResult, ledger_seq) == 24, "MmoLootResult.ledger_seq");
MMO_STATIC_ASSERT(offsetof(MmoEconomyResult, ledger_seq) == 32, "MmoEconomyResult.ledger_seq");
MMO_STATIC_ASSERT(sizeof(MmoRecoveryInfo) == 32, "MmoRecoveryInfo size");
MMO_STATIC_ASSERT(offsetof(MmoLootResult, refusal) == 22, "MmoLootResult.refusal");
MMO_STATIC_ASSERT(sizeof(MmoEconomyAudit) == 88, "MmoEconomyAudit size");
MMO_STATIC_ASSERT(offsetof(MmoEconomyAudit, conserved) == 80, "MmoEconomyAudit.conserved");
MMO_STATIC_ASSERT(sizeof(MmoTradeStack) == 16, "MmoTradeStack size");
MMO_STATIC_ASSERT(sizeof(MmoTradeOffer) == 64 && offsetof(MmoTradeOffer, want) == 48, "MmoTradeOffer");
MMO_STATIC_ASSERT(sizeof(MmoTradeAnswer) == 48 && offsetof(MmoTradeAnswer, accept) == 40, "MmoTradeAnswer");
MMO_STATIC_ASSERT(sizeof(MmoPlayerView) == 160, "MmoPlayerView size");
MMO_STATIC_ASSERT(offsetof(MmoPlayerView, gold) == 24, "MmoPlayerView.gold");
MMO_STATIC_ASSERT(sizeof(MmoStats) % 8 == 0, "MmoStats is whole u64 counters");
MMO_STATIC_ASSERT(sizeof(MmoEventKind) == 1 && sizeof(MmoEconomyStatus) == 1 && sizeof(MmoAttackError) == 1 && sizeof(MmoLootError) == 1, "wire enums are one byte");
MMO_STATIC_ASSERT(MMO_OK == 0 && MMO_ERR_PANIC == 1099, "status range");

#endif
