//! The load tester's integration tests, one module per topic, linked as one test binary
//! (`cargo test -p mmo-loadtest --test suite`; one topic: `... --test suite protocol_hostile::`).
//!
//! One binary instead of one per file: each binary links the whole load tester, tokio
//! included, so fourteen of them cost CI most of its compile time for the crate. The runs of
//! whole scenarios against the in-process fake server (`tests/fake_server_runs/`) are a
//! binary of their own, so they never share a process with the tests here.

mod admin_pace;
mod checks_drops;
mod checks_economy;
mod common;
mod driver_reads;
mod economy_ledger;
mod net_rx_batch;
mod plot_output;
mod protocol_hostile;
mod protocol_roundtrip;
mod protocol_vectors;
mod raid_windows;
mod schedule_pacing;
mod server_stats_names;
mod timer_precision;
mod walk_rules;
