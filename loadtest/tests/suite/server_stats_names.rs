//! The names the load tester expects in `STATS_REPLY` agree with their sources: every field
//! of `MmoStats` in `ffi/include/mmo_core.h` and every drop reason of docs/protocol.md's
//! validation table. Parsing is generic and never fails.

use mmo_loadtest::protocol::DropReason;
use mmo_loadtest::server_stats::{ENGINE_FIELDS, ServerStats, expected_names};

const HEADER: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../ffi/include/mmo_core.h");
const PROTOCOL: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/protocol.md");

#[test]
fn engine_fields_are_the_mmo_stats_fields() {
    let header = std::fs::read_to_string(HEADER).unwrap();
    let start = header.find("typedef struct MmoStats {").expect("MmoStats in the header");
    let end = start + header[start..].find("} MmoStats;").unwrap();
    let fields: Vec<&str> =
        header[start..end].lines().map(str::trim).filter_map(|l| l.strip_prefix("uint64_t ")).map(|l| l.trim_end_matches(';')).collect();
    assert_eq!(fields, ENGINE_FIELDS, "update server_stats::ENGINE_FIELDS to match MmoStats");
}

#[test]
fn drop_reasons_are_the_protocols_table() {
    let doc = std::fs::read_to_string(PROTOCOL).unwrap();
    let table = &doc[doc.find("## Validation order and drop reasons").expect("the validation section")..];
    // Rows: | step | check | `reason` |
    let mut reasons: Vec<String> = Vec::new();
    for line in table.lines().filter(|l| l.starts_with("| ") && l.trim_end().ends_with("` |")) {
        let cell = line.trim_end().trim_end_matches('|').rsplit('|').next().unwrap().trim();
        let reason = cell.trim_matches('`').to_string();
        if !reasons.contains(&reason) {
            reasons.push(reason);
        }
    }
    let ours: Vec<&str> = DropReason::ALL.iter().map(|r| r.name()).collect();
    assert_eq!(reasons, ours, "protocol.md's drop reasons, in table order");
}

#[test]
fn expected_names_cover_engine_drops_and_the_rest() {
    let names = expected_names();
    assert!(names.contains(&"engine_economy_applied".to_string()));
    assert!(names.contains(&"drop_rate_limited_player".to_string()));
    assert!(names.contains(&"economy_conserved".to_string()));
    assert!(names.contains(&"update_latency_us_p999".to_string()));
    assert!(names.contains(&"update_service_us_p99".to_string()));
    for batching in ["worker_loop_turns", "receive_calls", "send_calls", "context_switches_voluntary", "context_switches_involuntary"] {
        assert!(names.contains(&batching.to_string()), "{batching}");
    }
    assert_eq!(names.len(), ENGINE_FIELDS.len() + DropReason::ALL.len() + 32 + 1);
}

#[test]
fn parsing_is_generic_and_missing_names_are_absent_not_errors() {
    let s = ServerStats::parse("a 1\nb 22\n\nnot-a-pair\nc x\nd 1 2\nb 23\nbig 18446744073709551615\nneg -1\n");
    assert_eq!(s.get("a"), Some(1));
    assert_eq!(s.get("b"), Some(23), "a repeated name keeps its last value");
    assert_eq!(s.get("big"), Some(u64::MAX));
    assert_eq!(s.get("c"), None);
    assert_eq!(s.get("neg"), None);
    assert_eq!(s.malformed_lines(), 4);
    assert_eq!(s.get("engine_moves_applied"), None);
    assert!(s.missing().contains(&"engine_moves_applied".to_string()));
    let before = ServerStats::parse("a 5\nz 1\n");
    assert_eq!(s.delta(&before, "a"), Some(-4));
    assert_eq!(s.delta(&before, "z"), None);
    assert_eq!(s.deltas(&before).len(), 1);
    assert_eq!(ServerStats::parse(""), ServerStats::default());
}
