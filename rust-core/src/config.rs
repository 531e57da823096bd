//! The core's one configuration struct, with documented defaults and validation.
//!
//! Every size that decides a pre-allocation lives here, so an operator can see what the
//! process will reserve at start-up and no hot path has to grow a structure under load.

/// Upper bound on [`CoreConfig::aoi_k`]: an area-of-interest snapshot must fit one datagram.
pub const AOI_K_MAX: u32 = 64;
/// Upper bound on [`CoreConfig::contacts_per_move_max`].
pub const CONTACTS_PER_MOVE_MAX: u32 = 32;
/// Largest raid burst one spawn call may request.
pub const RAID_BURST_MAX: u32 = 65_536;
/// Most raid bursts alive at once ([`CoreConfig::raid_burst_capacity`]'s upper bound).
pub const RAID_BURST_CAPACITY_MAX: u32 = 65_536;
/// Most grid cells along one side of the world.
pub const MAX_CELLS_PER_SIDE: u32 = 2_048;
/// Most world-snapshot cells along one side of the world (so a cell key fits a `u32`).
pub const MAX_SNAPSHOT_CELLS_PER_SIDE: u32 = 65_536;

/// The most snapshot cells the AoI radius may span (`aoi_radius_m / snapshot_cell_m`): an
/// area-of-interest query walks up to twice this many rows (the baseline, this many rings of
/// cells), so the bound keeps one query's work bounded whatever the configuration. The
/// default spans 9.6 (48 m over 5 m cells).
pub const MAX_AOI_REACH_CELLS: f32 = 256.0;

/// The smallest world side, metres: below it the snapshot's fixed edge slack (1 mm) and the
/// float rounding of cell coordinates stop being small against a cell.
pub const MIN_WORLD_SIZE_M: f32 = 1.0;
/// Number of item kinds the economy knows (kinds `0..ITEM_KINDS`).
pub const ITEM_KINDS: usize = 16;
/// Largest gold or item amount one economy operation may carry (and the most gold a wallet
/// may start with).
pub const AMOUNT_MAX: i64 = 1 << 48;

/// Configuration of one [`crate::Engine`]. `CoreConfig::default()` is a sensible server for
/// 5,000 players and one or two raids in flight.
#[derive(Clone, Debug, PartialEq)]
pub struct CoreConfig {
    /// Side of the square world in metres; positions live in `[0, world_size_m)`. Default 4096.
    pub world_size_m: f32,
    /// Side of one collision-grid cell in metres. Default 32.
    pub cell_size_m: f32,
    /// How far past its cell's edge an entity may stray before it is moved to the next cell,
    /// so a player walking along a boundary does not thrash between two cells. Default 2.
    pub cell_hysteresis_m: f32,
    /// Fastest legal movement in metres per second. Default 12.
    pub max_speed_m_per_s: f32,
    /// Metres of the movement allowance beyond the jitter window's (see `clock_slack_ms`).
    /// Default 0.5.
    pub speed_slack_m: f32,
    /// The jitter window, milliseconds: a player's distance budget accrues `max_speed` times
    /// the server's time and is capped at `max_speed * clock_slack_ms + speed_slack_m` (3.5 m
    /// by default), the one fixed allowance by which a player may ever be ahead of the speed
    /// limit. Client clocks are never credited. Default 250.
    pub clock_slack_ms: u32,
    /// Radius in metres within which two entities are in contact. Default 8.
    pub contact_radius_m: f32,
    /// Most contact events one move may produce (nearest first is not guaranteed; the first
    /// found are kept). Default 8, at most [`CONTACTS_PER_MOVE_MAX`].
    pub contacts_per_move_max: u32,
    /// Entities in one area-of-interest snapshot. Default 32, at most [`AOI_K_MAX`].
    pub aoi_k: u32,
    /// How far a player's area of interest reaches, metres: the `aoi_k` nearest entities
    /// within this radius, as of the last tick. Default 48.
    pub aoi_radius_m: f32,
    /// Side of a cell of the tick's world snapshot, metres: the grid the area-of-interest query
    /// walks. Smaller cells read fewer entities per query in a crowd and more cells in open
    /// ground. Default 5 (the fastest of 4, 5, 6 and 8 m in `benches/benches/design/aoi.rs`).
    pub snapshot_cell_m: f32,
    /// Most players joined at once: an admission limit, not a reservation (memory follows the
    /// players joined; the tables sized by it are resident only where used). Default 8,192.
    pub player_capacity: u32,
    /// Most raid objects alive at once (an admission limit). Default 32,768.
    pub raid_object_capacity: u32,
    /// Most raid bursts alive at once. Default 256.
    pub raid_burst_capacity: u32,
    /// Number of lock shards in the grid's map (power of two). Default 128.
    pub grid_shards: u32,
    /// Tick period in milliseconds (raid lifetimes are rounded up to whole ticks). Default 50.
    pub tick_ms: u32,
    /// Hit points a player joins with. Default 1,000.
    pub player_hp: i32,
    /// Gold a new wallet starts with (minted at join, so conservation holds). Default 0.
    pub starting_gold: u64,
    /// Hit points one landed attack takes: the server's number, never the client's.
    /// Default 100.
    pub attack_damage: i32,
    /// How far an attacker may be from its target, metres (centre to centre). Default 6.
    pub attack_range_m: f32,
    /// Server milliseconds between two attacks that land from one player. Default 500.
    pub attack_cooldown_ms: u32,
    /// How long a player brought to 0 hit points stays dead, server milliseconds: the first
    /// tick at or after its death plus this respawns it with `player_hp` where it stands.
    /// Default 10,000.
    pub respawn_ms: u32,
    /// How long a player who leaves in combat stays in the world, server milliseconds. A
    /// landed hit between two players puts both in combat until this long after it; a leave
    /// (or a session's timeout) before then ends the session at once but leaves the body where
    /// it stands, attackable and killable, until the first tick at or after the last tick's
    /// time at the leave plus this (or the account's next join, which takes up from it where
    /// it stood), so leaving cannot deny a kill. 0: a leave always
    /// takes the body out at once. At most 600,000 (ten minutes). Default 10,000.
    pub logout_linger_ms: u32,
    /// How far a claimer may be from the loot it claims, metres (centre to centre). Default 6.
    pub loot_range_m: f32,
    /// The loot table's gold: each drop holds a uniform amount in
    /// `loot_gold_min..=loot_gold_max`. Defaults 5 and 50.
    pub loot_gold_min: u32,
    /// See `loot_gold_min`.
    pub loot_gold_max: u32,
    /// The loot table's items: the chance, per thousand, that a drop also holds one stack of
    /// items (a uniform kind in `0..ITEM_KINDS`, a uniform count in
    /// `1..=loot_item_count_max`). Default 250.
    pub loot_item_permille: u32,
    /// See `loot_item_permille`. Default 3.
    pub loot_item_count_max: u32,
    /// How long a trade offer stays open, server milliseconds: then its escrow goes back to its
    /// maker. Default 30,000.
    pub trade_timeout_ms: u32,
    /// The secret key of the loot rolls: a drop's contents are SipHash-2-4 under this key of
    /// the dead object's id, drawn out by SplitMix64 ([`crate::loot`]), so no client can
    /// predict them from the ids it sees or the drops it was shown. All zero (the default):
    /// the engine draws a key from the OS's random source when it is created. Set one to make
    /// rolls reproducible (a test, or both engines of a comparison rolling alike).
    pub loot_key: [u8; 16],
}

impl Default for CoreConfig {
    fn default() -> Self {
        Self {
            world_size_m: 4096.0,
            cell_size_m: 32.0,
            cell_hysteresis_m: 2.0,
            max_speed_m_per_s: 12.0,
            speed_slack_m: 0.5,
            clock_slack_ms: 250,
            contact_radius_m: 8.0,
            contacts_per_move_max: 8,
            aoi_k: 32,
            aoi_radius_m: 48.0,
            snapshot_cell_m: 5.0,
            player_capacity: 8_192,
            raid_object_capacity: 32_768,
            raid_burst_capacity: 256,
            grid_shards: 128,
            tick_ms: 50,
            player_hp: 1_000,
            starting_gold: 0,
            attack_damage: 100,
            attack_range_m: 6.0,
            attack_cooldown_ms: 500,
            respawn_ms: 10_000,
            logout_linger_ms: 10_000,
            loot_range_m: 6.0,
            loot_gold_min: 5,
            loot_gold_max: 50,
            loot_item_permille: 250,
            loot_item_count_max: 3,
            loot_key: [0; 16],
            trade_timeout_ms: 30_000,
        }
    }
}

/// Why a [`CoreConfig`] was refused.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConfigError(pub &'static str);

impl std::fmt::Display for ConfigError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "invalid core config: {}", self.0)
    }
}

impl std::error::Error for ConfigError {}

impl CoreConfig {
    /// The most a player moves in one tick at the speed limit with the movement slack,
    /// metres (1.1 m by default, 1.7 m at the server's 10 Hz): how much farther than last
    /// tick's distance a player in a viewer's area of interest may be now, used to hint the
    /// viewer's next query (see [`crate::snapshot::hint_reach_m`]).
    pub fn aoi_player_closing_m(&self) -> f32 {
        self.max_speed_m_per_s * self.tick_ms as f32 / 1_000.0 + self.speed_slack_m
    }

    /// Checks every field against the limits the core relies on.
    pub fn validate(&self) -> Result<(), ConfigError> {
        let finite_positive = |v: f32| v.is_finite() && v > 0.0;
        if !(self.world_size_m.is_finite() && self.world_size_m >= MIN_WORLD_SIZE_M) || self.world_size_m > 1_000_000.0 {
            return Err(ConfigError("world_size_m must be in [1, 1e6]"));
        }
        if !finite_positive(self.cell_size_m) || self.cell_size_m > self.world_size_m {
            return Err(ConfigError("cell_size_m must be positive and at most world_size_m"));
        }
        // Cell keys are u32 and every cell's coordinates must fit the burst rectangles' u16s.
        let cells_per_side = (self.world_size_m / self.cell_size_m).ceil();
        if cells_per_side > MAX_CELLS_PER_SIDE as f32 {
            return Err(ConfigError("world_size_m / cell_size_m must be at most MAX_CELLS_PER_SIDE (2048)"));
        }
        if !(self.cell_hysteresis_m.is_finite() && self.cell_hysteresis_m >= 0.0) {
            return Err(ConfigError("cell_hysteresis_m must be finite and non-negative"));
        }
        if !finite_positive(self.contact_radius_m) {
            return Err(ConfigError("contact_radius_m must be positive"));
        }
        // The 3x3 neighbourhood query is complete only if an entity within the contact
        // radius can be registered at most one cell away: radius + hysteresis <= cell side.
        if self.contact_radius_m + self.cell_hysteresis_m > self.cell_size_m {
            return Err(ConfigError("contact_radius_m + cell_hysteresis_m must not exceed cell_size_m"));
        }
        if !finite_positive(self.max_speed_m_per_s) {
            return Err(ConfigError("max_speed_m_per_s must be positive"));
        }
        if !(self.speed_slack_m.is_finite() && self.speed_slack_m >= 0.0) {
            return Err(ConfigError("speed_slack_m must be finite and non-negative"));
        }
        if self.contacts_per_move_max > CONTACTS_PER_MOVE_MAX {
            return Err(ConfigError("contacts_per_move_max above CONTACTS_PER_MOVE_MAX"));
        }
        if self.aoi_k == 0 || self.aoi_k > AOI_K_MAX {
            return Err(ConfigError("aoi_k must be in 1..=AOI_K_MAX"));
        }
        if !finite_positive(self.aoi_radius_m) || self.aoi_radius_m > self.world_size_m {
            return Err(ConfigError("aoi_radius_m must be positive and at most world_size_m"));
        }
        // Snapshot cell keys are u32: at most 65,536 cells along a side.
        if !finite_positive(self.snapshot_cell_m) || (self.world_size_m / self.snapshot_cell_m).ceil() > MAX_SNAPSHOT_CELLS_PER_SIDE as f32
        {
            return Err(ConfigError("snapshot_cell_m must be positive, with world_size_m / snapshot_cell_m at most 65536"));
        }
        if self.aoi_radius_m / self.snapshot_cell_m > MAX_AOI_REACH_CELLS {
            return Err(ConfigError("aoi_radius_m / snapshot_cell_m must be at most 256"));
        }
        if self.player_capacity == 0 || self.player_capacity > 1 << 24 {
            return Err(ConfigError("player_capacity must be in 1..=16M"));
        }
        if self.raid_object_capacity > 1 << 24 {
            return Err(ConfigError("raid_object_capacity must be at most 16M"));
        }
        if self.raid_burst_capacity == 0 || self.raid_burst_capacity > RAID_BURST_CAPACITY_MAX {
            return Err(ConfigError("raid_burst_capacity must be in 1..=65536"));
        }
        if !self.grid_shards.is_power_of_two() || self.grid_shards < 2 || self.grid_shards > 4096 {
            return Err(ConfigError("grid_shards must be a power of two in 2..=4096"));
        }
        if self.tick_ms == 0 || self.tick_ms > 10_000 {
            return Err(ConfigError("tick_ms must be in 1..=10000"));
        }
        if self.player_hp <= 0 {
            return Err(ConfigError("player_hp must be positive"));
        }
        if self.starting_gold > AMOUNT_MAX as u64 {
            return Err(ConfigError("starting_gold above AMOUNT_MAX"));
        }
        if self.attack_damage <= 0 {
            return Err(ConfigError("attack_damage must be positive"));
        }
        if !finite_positive(self.attack_range_m) || self.attack_range_m > self.world_size_m {
            return Err(ConfigError("attack_range_m must be positive and at most world_size_m"));
        }
        if self.attack_cooldown_ms > 3_600_000 {
            return Err(ConfigError("attack_cooldown_ms must be at most one hour"));
        }
        if self.respawn_ms == 0 || self.respawn_ms > 3_600_000 {
            return Err(ConfigError("respawn_ms must be in 1..=3600000 (one hour)"));
        }
        if self.logout_linger_ms > 600_000 {
            return Err(ConfigError("logout_linger_ms must be at most 600000 (ten minutes)"));
        }
        if !finite_positive(self.loot_range_m) || self.loot_range_m > self.world_size_m {
            return Err(ConfigError("loot_range_m must be positive and at most world_size_m"));
        }
        if self.loot_gold_min > self.loot_gold_max {
            return Err(ConfigError("loot_gold_min must be at most loot_gold_max"));
        }
        if self.loot_item_permille > 1_000 {
            return Err(ConfigError("loot_item_permille must be at most 1000"));
        }
        if self.loot_item_count_max == 0 || self.loot_item_count_max > 65_535 {
            return Err(ConfigError("loot_item_count_max must be in 1..=65535"));
        }
        if self.trade_timeout_ms == 0 || self.trade_timeout_ms > 3_600_000 {
            return Err(ConfigError("trade_timeout_ms must be in 1..=3600000"));
        }
        Ok(())
    }

    /// Number of grid cells along one side of the world.
    pub fn cells_per_side(&self) -> u32 {
        (self.world_size_m / self.cell_size_m).ceil() as u32
    }
}

#[cfg(all(test, not(mmo_loom)))]
mod tests {
    use super::*;

    #[test]
    fn default_is_valid() {
        CoreConfig::default().validate().unwrap();
        assert_eq!(CoreConfig::default().cells_per_side(), 128);
    }

    #[test]
    fn rejects_each_bad_field() {
        let bad: [fn(&mut CoreConfig); 37] = [
            |c| c.world_size_m = 0.5,
            |c| c.world_size_m = 1e-9,
            |c| c.snapshot_cell_m = c.aoi_radius_m / 257.0,
            |c| {
                // A world a nanometre wide, every length scaled down with it: each ratio check passes.
                c.world_size_m = 1e-9;
                c.cell_size_m = 1e-9 / 1024.0;
                c.cell_hysteresis_m = 0.0;
                c.contact_radius_m = 1e-9 / 2048.0;
                c.aoi_radius_m = 1e-9;
                c.attack_range_m = 1e-9;
                c.loot_range_m = 1e-9;
                c.snapshot_cell_m = 1e-9 / 60_000.0;
            },
            |c| c.aoi_radius_m = 0.0,
            |c| c.aoi_radius_m = f32::NAN,
            |c| c.snapshot_cell_m = -8.0,
            |c| c.snapshot_cell_m = c.world_size_m / 70_000.0,
            |c| c.world_size_m = f32::NAN,
            |c| c.cell_size_m = c.world_size_m / 3_000.0,
            |c| c.cell_size_m = 0.0,
            |c| c.cell_hysteresis_m = -1.0,
            |c| c.contact_radius_m = 31.0,
            |c| c.max_speed_m_per_s = f32::INFINITY,
            |c| c.aoi_k = 0,
            |c| c.aoi_k = AOI_K_MAX + 1,
            |c| c.contacts_per_move_max = CONTACTS_PER_MOVE_MAX + 1,
            |c| c.player_capacity = 0,
            |c| c.grid_shards = 100,
            |c| c.tick_ms = 0,
            |c| c.raid_burst_capacity = 0,
            |c| c.attack_damage = 0,
            |c| c.attack_range_m = 0.0,
            |c| c.attack_range_m = f32::NAN,
            |c| c.attack_range_m = c.world_size_m * 2.0,
            |c| c.attack_cooldown_ms = 3_600_001,
            |c| c.respawn_ms = 0,
            |c| c.respawn_ms = 3_600_001,
            |c| c.logout_linger_ms = 600_001,
            |c| c.loot_range_m = 0.0,
            |c| c.loot_range_m = f32::INFINITY,
            |c| c.loot_gold_min = c.loot_gold_max + 1,
            |c| c.loot_item_permille = 1_001,
            |c| c.loot_item_count_max = 0,
            |c| c.loot_item_count_max = 65_536,
            |c| c.trade_timeout_ms = 0,
            |c| c.trade_timeout_ms = 3_600_001,
        ];
        for (i, mutate) in bad.iter().enumerate() {
            let mut c = CoreConfig::default();
            mutate(&mut c);
            assert!(c.validate().is_err(), "mutation {i} should be refused");
        }
    }
}
