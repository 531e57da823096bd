//! The core's design choices, measured: one criterion binary, a module per topic, each
//! module's benchmark groups named after it (`aoi_*`, `grid_*`, `raid_*`, ...), so
//! `cargo bench -p mmo-benches --bench design -- '^aoi'` runs one topic and `-- --test` (make
//! bench-smoke) runs every benchmark once.
//!
//! Why one binary: every bench binary is its own thin-LTO link of the core and criterion,
//! about half a minute each on the development VM; linked as one, the smoke run in CI
//! compiles once. The economy store's bench (`economy_store.rs`) keeps a binary of its own:
//! it is not a criterion bench (it prints commit-time percentiles from its own loop).
//!
//! Every module runs under the allocator the server runs with ([`mmo_core::allocator`]);
//! the allocator bench passes the allocators it compares explicitly.

use criterion::criterion_main;

#[global_allocator]
static GLOBAL: mmo_core::allocator::Selected = mmo_core::allocator::SELECTED;

mod allocator;
mod aoi;
mod arena;
mod false_sharing;
mod ffi;
mod grid;
mod raid;
mod snapshot;

criterion_main!(
    aoi::benches,
    raid::benches,
    ffi::benches,
    arena::benches,
    grid::benches,
    snapshot::benches,
    allocator::benches,
    false_sharing::benches
);
