//! # mmo-loadtest: bots that speak the wire protocol to `mmo-server`
//!
//! The load tester of the MMO backend. Each bot has its own UDP socket, joins through the
//! real handshake, and plays on a fixed schedule; every latency is measured from the
//! message's *intended* send time, so a stalled tester or server shows up as latency rather
//! than as fewer samples (no coordinated omission). Scenarios check the server's own figures
//! (`STATS_REPLY`) and exit non-zero when a check fails.
//!
//! Modules, one per concern:
//! - [`protocol`]: the wire protocol v3 codec (`docs/protocol.md`), held to the committed byte
//!   vectors in `docs/protocol-vectors-v3.txt`.
//! - [`schedule`]: intended send times, catch-up without coordinated omission, stagger.
//! - [`bot`]: one bot: join handshake, play ([`bot::Player`]), leave; the flood bot.
//! - [`driver`]: threads that each play many bots from one loop, on time to tens of µs.
//! - [`timer`]: the send grid, the deadline queue and the wake-up tuner those threads use.
//! - [`walk`]: a random walk that obeys the server's movement rules.
//! - [`economy`]: one bot's reliable economy traffic and its ledger.
//! - [`combat`]: the raid's bots attacking the adds they see, and their tally.
//! - [`raid`]: raid triggers and the during/between-raid windows.
//! - [`hostile`]: malformed and spoofed traffic, one known drop reason each.
//! - [`hostile_joins`]: joins with connect tokens the server must refuse, one known status each.
//! - [`token`]: connect tokens: minting (the backend's side, `mmo-token`), key files.
//! - [`admin`]: `STATS_REQUEST` and `RAID_TRIGGER` over the admin socket.
//! - [`server_stats`]: the server's `name value` figures.
//! - [`checks`]: pass/fail verdicts against bounds and the server's figures.
//! - [`capacity`]: `--find-capacity`, the most players within a round-trip bound.
//! - [`run`]: one run, start to finish.
//! - [`metrics`]: per-task histograms merged at the end.
//! - [`report`], [`plot`], [`progress`]: JSON, tables, `.hgrm` files, SVG, progress bar.
//! - [`cli`], [`net`], [`rng`], [`system`]: options, sockets, randomness, OS limits and usage.

pub mod admin;
pub mod bot;
pub mod capacity;
pub mod checks;
pub mod cli;
pub mod combat;
pub mod driver;
pub mod economy;
pub mod hostile;
pub mod hostile_joins;
pub mod metrics;
pub mod net;
pub mod plot;
pub mod progress;
pub mod protocol;
pub mod raid;
pub mod report;
pub mod rng;
pub mod run;
pub mod schedule;
pub mod server_stats;
pub mod system;
pub mod timer;
pub mod token;
pub mod walk;
