// stats_fields.hpp: every MmoStats field by name, for code that prints or looks up counters
// by name (the server's stats text, the conformance runner). A field missing from the list is
// caught by the size check; a renamed one fails to compile.
#pragma once

#include "mmo_core.h"

#define MMO_STATS_FIELDS(X)                                                                                                        \
  X(moves_applied) X(move_rejected_unknown_player) X(move_rejected_wrong_session) X(move_rejected_stale_sequence)                  \
  X(move_rejected_too_fast) X(move_rejected_out_of_bounds) X(move_rejected_dead) X(cell_crossings) X(contacts_reported) X(contacts_truncated)             \
  X(move_batches) X(move_batches_refused) X(economy_batches_refused) X(joins) X(joins_refused_full) X(joins_refused_bounds)         \
  X(leaves) X(leaves_refused) X(leaves_lingered) X(lingers_ended) X(lingers_resumed) X(raid_bursts) X(raid_objects_spawned) X(raid_objects_despawned) X(raid_refused_capacity)            \
  X(raid_refused_invalid) X(damage_applied) X(kills) X(respawns) X(damage_rejected) X(attacks_landed) X(attack_rejected_unknown_player)        \
  X(attack_rejected_wrong_session) X(attack_rejected_attacker_dead) X(attack_rejected_unknown_target)                             \
  X(attack_rejected_friendly_fire) X(attack_rejected_target_dead) X(attack_rejected_out_of_range) X(attack_rejected_cooldown)     \
  X(loot_dropped) X(loot_claimed) X(loot_claim_repeats) X(loot_gold_claimed) X(loot_items_claimed)                                \
  X(loot_rejected_unknown_player) X(loot_rejected_wrong_session) X(loot_rejected_unknown_loot) X(loot_rejected_no_loot)           \
  X(loot_rejected_not_yours) X(loot_rejected_out_of_range) X(loot_rejected_wallet_full)                                           \
  X(economy_applied) X(economy_duplicates)                                                                                         \
  X(economy_invalid_amount) X(economy_overflow) X(economy_self_trade) X(economy_unknown_item) X(economy_insufficient_funds)        \
  X(economy_insufficient_items) X(economy_unknown_player) X(economy_player_departed) X(economy_wrong_session) X(economy_too_old)   \
  X(economy_bad_kind) X(economy_invalid_transaction) X(economy_offer_pending) X(economy_no_such_offer) X(economy_not_your_offer)     \
  X(economy_offer_expired) X(economy_kind_retired) X(economy_storage_busy) X(loot_rejected_storage_busy) X(loot_rejected_dead)              \
  X(accounts_created) X(accounts_resumed) X(joins_refused_account) X(ledger_groups) X(ledger_entries) X(ledger_commit_failures)    \
  X(trade_offers) X(trades_accepted) X(trades_declined) X(trades_cancelled)        \
  X(trades_expired) X(grants) X(grant_gold) X(grant_items) X(ticks) X(aoi_queries) X(aoi_not_in_snapshot) X(aoi_wide_looks) X(snapshots_published)         \
  X(snapshots_skipped) X(lock_grid_contended) X(lock_grid_wait_ns) X(lock_body_contended) X(lock_body_wait_ns)                    \
  X(lock_economy_contended) X(lock_economy_wait_ns) X(moves_waited_grid) X(moves_waited_body)

#define MMO_STATS_COUNT_FIELD(f) +1
static_assert(sizeof(MmoStats) == 8 * (0 MMO_STATS_FIELDS(MMO_STATS_COUNT_FIELD)), "MMO_STATS_FIELDS must list every MmoStats field");
#undef MMO_STATS_COUNT_FIELD
