//! Whole runs of the load tester against the in-process fake server (`fake_server/`), linked
//! as one test binary of their own (`cargo test -p mmo-loadtest --test fake_server_runs`; one
//! topic: `... --test fake_server_runs capacity_search::`): every scenario end to end, and a
//! whole capacity search. They stay out of the `suite` binary so that their runs, each with
//! its sockets, threads and timers, never share a process with the unit-sized tests there.

mod capacity_search;
mod fake_server;
mod scenarios;
