//! # mmo-loadtest: bots that speak the wire protocol to `mmo-server`
//!
//! The load tester of the MMO backend. Its modules, one per concern:
//! - [`protocol`]: the wire protocol v1 codec (`docs/protocol.md`), held to the committed
//!   byte vectors in `docs/protocol-vectors-v1.txt`.

pub mod protocol;
