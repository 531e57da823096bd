//! The engine configuration as C fills it (`MmoConfig`), its conversions to and from the
//! core's `CoreConfig`, and `mmo_config_default`.

use crate::boundary::{boundary, out_ptr};
use crate::status::{MMO_OK, MmoStatus};
use mmo_core::CoreConfig;
use std::mem::{align_of, offset_of, size_of};

/// Engine configuration. Field meanings and defaults: `mmo_core::CoreConfig`; fill it with
/// [`mmo_config_default`] and change what you need.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct MmoConfig {
    /// Side of the square world, metres.
    pub world_size_m: f32,
    /// Side of a grid cell, metres.
    pub cell_size_m: f32,
    /// Cell-change hysteresis margin, metres.
    pub cell_hysteresis_m: f32,
    /// Speed limit, metres per second.
    pub max_speed_m_per_s: f32,
    /// Metres of the movement allowance beyond the jitter window's.
    pub speed_slack_m: f32,
    /// Contact radius, metres.
    pub contact_radius_m: f32,
    /// Area-of-interest radius, metres.
    pub aoi_radius_m: f32,
    /// Side of a world-snapshot cell, metres.
    pub snapshot_cell_m: f32,
    /// Reach of an attack, metres.
    pub attack_range_m: f32,
    /// Jitter window, milliseconds: the distance budget's cap is
    /// `max_speed_m_per_s * clock_slack_ms + speed_slack_m`.
    pub clock_slack_ms: u32,
    /// Contact events per move, at most.
    pub contacts_per_move_max: u32,
    /// Entities per area-of-interest snapshot.
    pub aoi_k: u32,
    /// Players joined at once, at most.
    pub player_capacity: u32,
    /// Raid objects alive at once, at most.
    pub raid_object_capacity: u32,
    /// Raid bursts alive at once, at most.
    pub raid_burst_capacity: u32,
    /// Lock shards of the grid map (power of two).
    pub grid_shards: u32,
    /// Tick period, milliseconds.
    pub tick_ms: u32,
    /// Server milliseconds between two landed attacks of one player.
    pub attack_cooldown_ms: u32,
    /// Hit points a player joins with.
    pub player_hp: i32,
    /// Hit points one landed attack takes.
    pub attack_damage: i32,
    /// How far a claimer may be from the loot it claims, metres.
    pub loot_range_m: f32,
    /// Least gold one drop holds.
    pub loot_gold_min: u32,
    /// Most gold one drop holds.
    pub loot_gold_max: u32,
    /// Chance per thousand that a drop also holds a stack of items.
    pub loot_item_permille: u32,
    /// Most items in a dropped stack.
    pub loot_item_count_max: u32,
    /// How long a trade offer stays open, milliseconds.
    pub trade_timeout_ms: u32,
    /// How long a player brought to 0 hit points stays dead, server milliseconds (1..=3,600,000).
    pub respawn_ms: u32,
    /// How long a player who leaves in combat stays in the world, server milliseconds
    /// (0..=600,000; 0: leaving takes the body out at once).
    pub logout_linger_ms: u32,
    /// Gold a new wallet starts with.
    pub starting_gold: u64,
    /// The secret key of the loot rolls (SipHash-2-4); all zero: the engine draws one from the
    /// OS's random source when it is created.
    pub loot_key: [u8; 16],
    /// 1 enables [`mmo_debug_inject_panic`](crate::mmo_debug_inject_panic) on this engine (tests only); 0 in production.
    pub fault_injection: u8,
    /// Zero (checked: a non-zero value is [`MMO_ERR_INVALID_ARGUMENT`](crate::MMO_ERR_INVALID_ARGUMENT), so these bytes can
    /// carry new fields later).
    pub _reserved: [u8; 7],
}

const _: () = assert!(size_of::<MmoConfig>() == 144 && align_of::<MmoConfig>() == 8);
const _: () = assert!(offset_of!(MmoConfig, loot_range_m) == 80 && offset_of!(MmoConfig, trade_timeout_ms) == 100);
const _: () = assert!(offset_of!(MmoConfig, respawn_ms) == 104 && offset_of!(MmoConfig, logout_linger_ms) == 108);
const _: () = assert!(offset_of!(MmoConfig, starting_gold) == 112 && offset_of!(MmoConfig, loot_key) == 120);
const _: () = assert!(offset_of!(MmoConfig, fault_injection) == 136);

impl From<&CoreConfig> for MmoConfig {
    fn from(c: &CoreConfig) -> Self {
        Self {
            world_size_m: c.world_size_m,
            cell_size_m: c.cell_size_m,
            cell_hysteresis_m: c.cell_hysteresis_m,
            max_speed_m_per_s: c.max_speed_m_per_s,
            speed_slack_m: c.speed_slack_m,
            contact_radius_m: c.contact_radius_m,
            aoi_radius_m: c.aoi_radius_m,
            snapshot_cell_m: c.snapshot_cell_m,
            attack_range_m: c.attack_range_m,
            attack_cooldown_ms: c.attack_cooldown_ms,
            attack_damage: c.attack_damage,
            loot_range_m: c.loot_range_m,
            loot_gold_min: c.loot_gold_min,
            loot_gold_max: c.loot_gold_max,
            loot_item_permille: c.loot_item_permille,
            loot_item_count_max: c.loot_item_count_max,
            trade_timeout_ms: c.trade_timeout_ms,
            respawn_ms: c.respawn_ms,
            logout_linger_ms: c.logout_linger_ms,
            loot_key: c.loot_key,
            clock_slack_ms: c.clock_slack_ms,
            contacts_per_move_max: c.contacts_per_move_max,
            aoi_k: c.aoi_k,
            player_capacity: c.player_capacity,
            raid_object_capacity: c.raid_object_capacity,
            raid_burst_capacity: c.raid_burst_capacity,
            grid_shards: c.grid_shards,
            tick_ms: c.tick_ms,
            player_hp: c.player_hp,
            starting_gold: c.starting_gold,
            fault_injection: 0,
            _reserved: [0; 7],
        }
    }
}

impl From<&MmoConfig> for CoreConfig {
    fn from(c: &MmoConfig) -> Self {
        Self {
            world_size_m: c.world_size_m,
            cell_size_m: c.cell_size_m,
            cell_hysteresis_m: c.cell_hysteresis_m,
            max_speed_m_per_s: c.max_speed_m_per_s,
            speed_slack_m: c.speed_slack_m,
            clock_slack_ms: c.clock_slack_ms,
            contact_radius_m: c.contact_radius_m,
            aoi_radius_m: c.aoi_radius_m,
            snapshot_cell_m: c.snapshot_cell_m,
            attack_range_m: c.attack_range_m,
            attack_cooldown_ms: c.attack_cooldown_ms,
            attack_damage: c.attack_damage,
            loot_range_m: c.loot_range_m,
            loot_gold_min: c.loot_gold_min,
            loot_gold_max: c.loot_gold_max,
            loot_item_permille: c.loot_item_permille,
            loot_item_count_max: c.loot_item_count_max,
            loot_key: c.loot_key,
            trade_timeout_ms: c.trade_timeout_ms,
            respawn_ms: c.respawn_ms,
            logout_linger_ms: c.logout_linger_ms,
            contacts_per_move_max: c.contacts_per_move_max,
            aoi_k: c.aoi_k,
            player_capacity: c.player_capacity,
            raid_object_capacity: c.raid_object_capacity,
            raid_burst_capacity: c.raid_burst_capacity,
            grid_shards: c.grid_shards,
            tick_ms: c.tick_ms,
            player_hp: c.player_hp,
            starting_gold: c.starting_gold,
        }
    }
}

/// Writes the default configuration into `*out`.
///
/// # Safety
/// `out` must be NULL or point to writable memory for one `MmoConfig`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn mmo_config_default(out: *mut MmoConfig) -> MmoStatus {
    boundary(|| {
        let out = check!(out_ptr(out));
        // SAFETY: checked by out_ptr; writable per the contract.
        unsafe { out.write(MmoConfig::from(&CoreConfig::default())) };
        MMO_OK
    })
}
