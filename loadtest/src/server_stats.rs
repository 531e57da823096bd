//! The server's own figures, from `STATS_REPLY`: `name value` lines parsed into a map.
//!
//! The load tester judges the server by what the server itself counted (drops per reason,
//! economy totals, engine counters), fetched before and after a run so a check can use the
//! delta and ignore what earlier runs left in the counters. Parsing is generic: any name is
//! kept, a malformed line is counted and skipped, and a figure the server did not send is
//! reported as absent (`None`, and listed by [`ServerStats::missing`]), never a crash.

use crate::protocol::DropReason;
use std::collections::BTreeMap;

/// Every field of `MmoStats` (`ffi/include/mmo_core.h`), from the core's one list of its
/// counters; the server reports each as `engine_<field>`. A test checks it against the header.
pub const ENGINE_FIELDS: [&str; mmo_core::stats::COUNTER_COUNT] = mmo_core::stats::COUNTER_NAMES;

/// Figures the server reports besides `engine_*` and `drop_*`.
pub const OTHER_NAMES: [&str; 32] = [
    "datagrams_received",
    "datagrams_sent",
    "worker_loop_turns",
    "receive_calls",
    "send_calls",
    "context_switches_voluntary",
    "context_switches_involuntary",
    "sessions_live",
    "worker_slice_us",
    "aoi_snapshots_sent",
    "attacks_answered",
    "loot_claims_answered",
    "update_latency_us_p50",
    "update_latency_us_p99",
    "update_latency_us_p999",
    "update_latency_us_max",
    "update_latency_count",
    "update_service_us_p50",
    "update_service_us_p99",
    "update_service_us_p999",
    "update_service_us_max",
    "raid_spawn_us_median",
    "raid_spawn_us_max",
    "raid_spawns",
    "cpu_user_us",
    "cpu_system_us",
    "peak_rss_kb",
    "economy_live_gold",
    "economy_escrowed_gold",
    "economy_departed_gold",
    "economy_minted_gold",
    "economy_sunk_gold",
];

/// `economy_conserved`: 1 when the server's audit found the books balanced.
pub const ECONOMY_CONSERVED: &str = "economy_conserved";

/// The name of the server counter for a drop reason: `drop_<reason>`.
pub fn drop_counter(reason: DropReason) -> String {
    format!("drop_{}", reason.name())
}

/// Every name the server is expected to report.
pub fn expected_names() -> Vec<String> {
    let mut names: Vec<String> = ENGINE_FIELDS.iter().map(|f| format!("engine_{f}")).collect();
    names.extend(DropReason::ALL.iter().map(|r| drop_counter(*r)));
    names.extend(OTHER_NAMES.iter().map(|n| n.to_string()));
    names.push(ECONOMY_CONSERVED.to_string());
    names
}

/// One `STATS_REPLY`, parsed.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ServerStats {
    values: BTreeMap<String, u64>,
    malformed_lines: usize,
}

impl ServerStats {
    /// Parses `name value` lines (values unsigned decimal). Blank lines are ignored; a line
    /// that is not one name and one `u64` is counted in [`Self::malformed_lines`]; a repeated
    /// name keeps its last value.
    pub fn parse(text: &str) -> ServerStats {
        let mut stats = ServerStats::default();
        for line in text.lines() {
            let line = line.trim();
            if line.is_empty() {
                continue;
            }
            let mut parts = line.split_whitespace();
            match (parts.next(), parts.next().map(str::parse::<u64>), parts.next()) {
                (Some(name), Some(Ok(value)), None) => {
                    stats.values.insert(name.to_string(), value);
                }
                _ => stats.malformed_lines += 1,
            }
        }
        stats
    }

    /// The figure `name`, if the server reported it.
    pub fn get(&self, name: &str) -> Option<u64> {
        self.values.get(name).copied()
    }

    /// `self[name] - before[name]` (negative if the counter went down, e.g. a restarted
    /// server), or `None` if either lacks it.
    pub fn delta(&self, before: &ServerStats, name: &str) -> Option<i128> {
        Some(i128::from(self.get(name)?) - i128::from(before.get(name)?))
    }

    /// Every figure.
    pub fn values(&self) -> &BTreeMap<String, u64> {
        &self.values
    }

    /// Lines that could not be parsed.
    pub fn malformed_lines(&self) -> usize {
        self.malformed_lines
    }

    /// The expected names (see [`expected_names`]) the server did not report.
    pub fn missing(&self) -> Vec<String> {
        expected_names().into_iter().filter(|n| !self.values.contains_key(n)).collect()
    }

    /// Every name both snapshots have, with `self - before`.
    pub fn deltas(&self, before: &ServerStats) -> BTreeMap<String, i128> {
        self.values.keys().filter_map(|k| Some((k.clone(), self.delta(before, k)?))).collect()
    }

    /// A snapshot holding exactly `pairs` (for tests and fakes).
    pub fn from_pairs<'a>(pairs: impl IntoIterator<Item = (&'a str, u64)>) -> ServerStats {
        ServerStats { values: pairs.into_iter().map(|(k, v)| (k.to_string(), v)).collect(), malformed_lines: 0 }
    }
}
