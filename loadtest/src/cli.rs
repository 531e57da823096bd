//! Command-line options (clap derive). Defaults are sized for the 2-core development VM, where
//! the load tester and the server share the machine: 500 bots at 10 Hz is 5,000 moves a
//! second plus their acks and 20 Hz snapshots, well under the ~200k datagrams/s loopback
//! ceiling, leaving most of both cores to the server.

use clap::{Parser, ValueEnum};
use std::net::SocketAddrV4;
use std::path::PathBuf;
use std::time::Duration;

/// What to run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Scenario {
    /// Players moving for `--duration`.
    Steady,
    /// Players in a raid area while bursts of raid objects spawn every `--raid-every`.
    Raid,
    /// Loot, then concurrent transfers and trades with retransmits and duplicates; checks the
    /// server's books.
    Economy,
    /// Steady play plus malformed, spoofed, replayed and flooding traffic; checks the server's
    /// drop counters.
    Hostile,
}

/// The scheduling class every tester thread runs in (`--sched`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, ValueEnum)]
pub enum TesterSched {
    /// The default class (`SCHED_OTHER`), the server's.
    #[default]
    Normal,
    /// `SCHED_IDLE`: any runnable thread of another class preempts the tester as it wakes, and
    /// the kernel counts a CPU running only the tester as idle when it places a woken thread.
    Idle,
}

impl TesterSched {
    /// The class's name in the report.
    pub fn name(self) -> &'static str {
        match self {
            TesterSched::Normal => "normal",
            TesterSched::Idle => "idle",
        }
    }
}

impl Scenario {
    /// The scenario's name.
    pub fn name(self) -> &'static str {
        match self {
            Scenario::Steady => "steady",
            Scenario::Raid => "raid",
            Scenario::Economy => "economy",
            Scenario::Hostile => "hostile",
        }
    }

    /// Whether the scenario's checks need the server's figures (so `--admin-key`).
    pub fn needs_admin(self) -> bool {
        !matches!(self, Scenario::Steady)
    }
}

/// Parses a u64 in decimal or `0x` hexadecimal.
pub fn parse_u64(s: &str) -> Result<u64, String> {
    let s = s.trim();
    let parsed = match s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        Some(hex) => u64::from_str_radix(&hex.replace('_', ""), 16),
        None => s.replace('_', "").parse(),
    };
    parsed.map_err(|e| format!("`{s}` is not a u64 (decimal or 0x hex): {e}"))
}

fn parse_admin_rate(s: &str) -> Result<f64, String> {
    match s.trim().parse::<f64>() {
        Ok(r) if r.is_finite() && (1.0..=1_000_000.0).contains(&r) => Ok(r),
        _ => Err(format!("`{s}`: admin datagrams per second, 1 to 1000000")),
    }
}

fn parse_duration(s: &str) -> Result<Duration, String> {
    humantime::parse_duration(s).map_err(|e| format!("`{s}`: {e} (e.g. 20s, 500ms, 2m)"))
}

fn parse_cpu(s: &str) -> Result<usize, String> {
    let cpu: usize = s.trim().parse().map_err(|e| format!("`{s}`: {e}"))?;
    let allowed = crate::system::allowed_cpus();
    if allowed.is_empty() || allowed.contains(&cpu) {
        Ok(cpu)
    } else {
        Err(format!("cpu {cpu} is not one this process may run on ({allowed:?})"))
    }
}

fn parse_ratio(s: &str) -> Result<f64, String> {
    let v: f64 = s.parse().map_err(|e| format!("`{s}`: {e}"))?;
    if (0.0..=1.0).contains(&v) { Ok(v) } else { Err(format!("`{s}` is not between 0 and 1")) }
}

fn parse_speed(s: &str) -> Result<f32, String> {
    let v: f32 = s.parse().map_err(|e| format!("`{s}`: {e}"))?;
    if v > 0.0 && v < 12.0 { Ok(v) } else { Err(format!("`{s}`: the walk must stay under the server's 12 m/s speed limit")) }
}

/// Load tester for mmo-server: bots that join through the real handshake and play over UDP,
/// latency measured from each message's intended send time (no coordinated omission), with
/// scenario checks against the server's own figures. Exits 0 when every check passes, 1 when
/// one fails, 2 on a usage or setup error.
#[derive(Clone, Debug, Parser)]
#[command(name = "mmo-loadtest", version)]
pub struct Cli {
    /// The server's address.
    #[arg(long, default_value = "127.0.0.1:7777")]
    pub server: SocketAddrV4,

    /// What to run.
    #[arg(long, value_enum, default_value_t = Scenario::Steady)]
    pub scenario: Scenario,

    /// Bots, each with its own UDP socket and session.
    #[arg(long, default_value_t = 500, value_parser = clap::value_parser!(u32).range(1..=100_000))]
    pub players: u32,

    /// Measured play time, after the warm-up (e.g. 20s, 2m).
    #[arg(long, default_value = "20s", value_parser = parse_duration)]
    pub duration: Duration,

    /// Play before measuring starts; its samples are discarded.
    #[arg(long, default_value = "2s", value_parser = parse_duration)]
    pub warmup: Duration,

    /// After the last move, keep listening this long for late acks.
    #[arg(long, default_value = "1s", value_parser = parse_duration)]
    pub drain: Duration,

    /// Time between one bot's moves, milliseconds.
    #[arg(long, default_value_t = 100, value_parser = clap::value_parser!(u64).range(1..=60_000))]
    pub move_interval_ms: u64,

    /// Walking speed, m/s (the server allows 12; the default keeps well under).
    #[arg(long, default_value_t = 8.0, value_parser = parse_speed)]
    pub speed: f32,

    /// Side of the server's world, metres (bots stay inside it).
    #[arg(long, default_value_t = 4096.0)]
    pub world_size: f32,

    /// Joins started per second (bots' joins are staggered at this rate).
    #[arg(long, default_value_t = 1000.0)]
    pub join_rate: f64,

    /// Wait this long for each handshake reply before resending.
    #[arg(long, default_value = "500ms", value_parser = parse_duration)]
    pub join_timeout: Duration,

    /// Sends of JOIN_REQUEST (and of JOIN_CONFIRM) before a bot gives up.
    #[arg(long, default_value_t = 10)]
    pub join_attempts: u32,

    /// The backend's private key the bots' connect tokens are signed with (`mmo-token
    /// keygen`'s .secret; the default is the development pair mmo-server creates in its data
    /// directory when started without --token-public-key).
    #[arg(long, default_value = "mmo-data/dev-token.secret")]
    pub token_secret_key: std::path::PathBuf,

    /// Bot i plays account ACCOUNT_BASE + i (default: a random base, so runs do not share
    /// accounts).
    #[arg(long)]
    pub account_base: Option<u64>,

    /// How long each bot's connect token admits (at most the server's token_max_lifetime_s).
    #[arg(long, default_value = "60s", value_parser = parse_duration)]
    pub token_ttl: Duration,

    /// Print the starting zones a load test expects the server to have (for
    /// `mmo-server --spawn-points`) and exit.
    #[arg(long)]
    pub print_spawn_points: bool,

    /// Bot driver threads, each playing its share of the bots from one loop. 0 (the
    /// default): one per 4,000 bots, at most one per core (one thread keeps 2,000 bots at
    /// 10 Hz within tens of microseconds of their schedule here, at a fraction of a core).
    #[arg(long, default_value_t = 0, value_parser = clap::value_parser!(u32).range(0..=256))]
    pub threads: u32,

    /// Pin driver thread `t` to CPU `PIN[t % len]` (comma-separated, e.g. `2,3`), so a run
    /// on a bigger machine keeps the tester off the server's cores.
    #[arg(long, value_delimiter = ',', value_parser = parse_cpu)]
    pub pin: Vec<usize>,

    /// Spacing of the send grid, microseconds: bots' intended send times are spread over
    /// the move interval on multiples of it, so a driver thread wakes once per grid point
    /// (1,000 times a second by default) rather than once per move.
    #[arg(long, default_value_t = 1000, value_parser = clap::value_parser!(u64).range(10..=100_000))]
    pub send_tick_us: u64,

    /// The longest a driver thread spins before a send, microseconds: it sleeps until its
    /// learned wake-up lateness before the deadline and spins the rest, at most this long.
    /// More spin buys precision on a machine with a jittery timer at the cost of CPU.
    #[arg(long, default_value_t = 50, value_parser = clap::value_parser!(u64).range(0..=10_000))]
    pub max_spin_us: u64,

    /// Niceness of the bot driver threads (default 0, the server's). On a machine the tester
    /// shares with the server, a server busy on every core (the area of interest after each
    /// tick) delays the tester's sends; a negative value lets a driver thread preempt it for
    /// the few hundred microseconds a grid point's sends take, at the cost of the server's
    /// own latency. Below 0 needs CAP_SYS_NICE; refused, the threads run at 0 and the report
    /// says so. Ignored with `--sched idle` (that class has no niceness).
    #[arg(long, default_value_t = 0, allow_negative_numbers = true, value_parser = clap::value_parser!(i32).range(-20..=19))]
    pub driver_nice: i32,

    /// Scheduling class of every tester thread, set before the first one starts. `idle`
    /// (`SCHED_IDLE`) is for a tester sharing the server's CPUs: a server thread woken by a
    /// datagram (an I/O worker asleep in `epoll_wait`) then runs at once instead of queueing
    /// behind the tester for the rest of its time slice, which niceness does not change on
    /// this kernel's scheduler (EEVDF runs the current task to its deadline). The tester's
    /// sends and round trips wait for the server's threads instead (see `send_lag_us`), and the
    /// server, woken for nearly every datagram, reads fewer per call and spends more CPU per
    /// update than beside a tester in the normal class. `--driver-nice` has no effect here.
    #[arg(long, value_enum, default_value_t = TesterSched::Normal)]
    pub sched: TesterSched,

    /// How often a driver thread reads its sockets, milliseconds. Round trips end at each
    /// reply's kernel receive stamp, so reading less often costs no precision; it only delays
    /// the economy's bookkeeping and saves receive calls (more replies per call).
    #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u64).range(1..=100))]
    pub read_period_ms: u64,

    /// The server's admin key (decimal or 0x hex), for STATS_REQUEST and RAID_TRIGGER.
    /// Required by the raid, economy and hostile scenarios.
    #[arg(long, value_parser = parse_u64)]
    pub admin_key: Option<u64>,

    /// Admin datagrams (stats requests, raid triggers, grants) per second at most, in bursts
    /// of a twentieth of a second's worth: they all come from one socket, and the server
    /// limits each source address (its `--address-rate`, 400 by default). The economy
    /// scenario's grants, one per bot, go out at this pace, their answers read in between.
    #[arg(long, default_value_t = crate::admin::DEFAULT_RATE_PER_S, value_parser = parse_admin_rate)]
    pub admin_rate: f64,

    /// Fail when more than this share of measured moves goes unacknowledged. 1% is generous
    /// for loopback: with 80-byte moves and acks and snapshots of at most 1.3 KB, a datagram
    /// is lost only when a socket buffer overflows, which at the default load means the server
    /// (or the VM) stalled; the slack absorbs the tens-of-milliseconds stalls this shared VM
    /// shows without hiding a server that sheds load.
    #[arg(long, default_value_t = 0.01, value_parser = parse_ratio)]
    pub max_loss: f64,

    /// Write the report as JSON here.
    #[arg(long)]
    pub json: Option<PathBuf>,

    /// Write an `.hgrm` percentile distribution per metric and an SVG percentile plot here.
    #[arg(long)]
    pub out_dir: Option<PathBuf>,

    /// No progress bar (it is also hidden when stderr is not a terminal).
    #[arg(long)]
    pub quiet: bool,

    /// Send LEAVE for every bot at the end.
    #[arg(long, default_value_t = true, action = clap::ArgAction::Set)]
    pub leave_at_end: bool,

    /// Seed of every random choice (walks, nonces, counterparties).
    #[arg(long, default_value_t = 1)]
    pub seed: u64,

    /// Search for the most players the server holds within --rtt-p99-max and --max-loss:
    /// steps of --capacity-step bots from --capacity-start, each a whole run of --duration,
    /// then bisection. Reports every step, why the first failing one failed, and whether the
    /// tester itself was the limit.
    #[arg(long, help_heading = "Capacity search")]
    pub find_capacity: bool,

    /// Capacity search: a step passes when the move round trip p99 is at most this.
    #[arg(long, default_value = "2ms", value_parser = parse_duration, help_heading = "Capacity search")]
    pub rtt_p99_max: Duration,

    /// Capacity search: bots in the first step.
    #[arg(long, default_value_t = 500, value_parser = clap::value_parser!(u32).range(1..=100_000), help_heading = "Capacity search")]
    pub capacity_start: u32,

    /// Capacity search: bots added per step.
    #[arg(long, default_value_t = 500, value_parser = clap::value_parser!(u32).range(1..=100_000), help_heading = "Capacity search")]
    pub capacity_step: u32,

    /// Capacity search: never try more bots than this.
    #[arg(long, default_value_t = 20_000, value_parser = clap::value_parser!(u32).range(1..=100_000), help_heading = "Capacity search")]
    pub capacity_max: u32,

    /// Capacity search: bisection steps between the last passing and first failing step.
    #[arg(long, default_value_t = 2, value_parser = clap::value_parser!(u32).range(0..=10), help_heading = "Capacity search")]
    pub capacity_refine: u32,

    /// Raid: time between RAID_TRIGGERs.
    #[arg(long, default_value = "5s", value_parser = parse_duration, help_heading = "Raid")]
    pub raid_every: Duration,

    /// Raid: objects per burst.
    #[arg(long, default_value_t = 11_000, help_heading = "Raid")]
    pub raid_objects: u32,

    /// Raid: object lifetime, milliseconds.
    #[arg(long, default_value_t = 3000, help_heading = "Raid")]
    pub raid_lifetime_ms: u32,

    /// Raid: centre x, metres.
    #[arg(long, default_value_t = 2048.0, help_heading = "Raid")]
    pub raid_x: f32,

    /// Raid: centre y, metres.
    #[arg(long, default_value_t = 2048.0, help_heading = "Raid")]
    pub raid_y: f32,

    /// Raid: players spawn and walk within this radius of the centre, metres.
    #[arg(long, default_value_t = 100.0, help_heading = "Raid")]
    pub raid_radius: f32,

    /// Raid: objects spawn in the square of this half side around the centre, metres.
    #[arg(long, default_value_t = 60.0, help_heading = "Raid")]
    pub raid_half_extent: f32,

    /// Raid: a move counts as "during a raid" until this long after the burst's result.
    #[arg(long, default_value = "1s", value_parser = parse_duration, help_heading = "Raid")]
    pub raid_window_after: Duration,

    /// Raid: bots attack the adds they see within this range, metres (the server's
    /// `attack_range_m` decides; 0 turns attacking off).
    #[arg(long, default_value_t = 5.5, help_heading = "Raid")]
    pub attack_range_m: f32,

    /// Raid: at most one attack per bot per this long, milliseconds (the server's cooldown
    /// decides).
    #[arg(long, default_value_t = 500, value_parser = clap::value_parser!(u64).range(1..), help_heading = "Raid")]
    pub attack_interval_ms: u64,

    /// Raid: time between one bot's offers of an item it looted (for some gold, to a random
    /// other bot), milliseconds; 0: the raid's bots do not trade.
    #[arg(long, default_value_t = 1000, help_heading = "Raid")]
    pub loot_trade_interval_ms: u64,

    /// Economy: time between one bot's transactions, milliseconds.
    #[arg(long, default_value_t = 500, value_parser = clap::value_parser!(u64).range(1..), help_heading = "Economy")]
    pub economy_interval_ms: u64,

    /// Economy: resend an unanswered request after this long, milliseconds.
    #[arg(long, default_value_t = 200, value_parser = clap::value_parser!(u64).range(1..), help_heading = "Economy")]
    pub economy_timeout_ms: u64,

    /// Economy: share of requests deliberately sent twice (same transaction id, RETRANSMIT).
    #[arg(long, default_value_t = 0.1, value_parser = parse_ratio, help_heading = "Economy")]
    pub economy_duplicates: f64,

    /// Economy: after the run, keep resending unanswered requests this long.
    #[arg(long, default_value = "10s", value_parser = parse_duration, help_heading = "Economy")]
    pub economy_settle: Duration,

    /// Hostile: malformed and spoofed datagrams per second, over all kinds but flooding.
    #[arg(long, default_value_t = 200.0, help_heading = "Hostile")]
    pub hostile_rate: f64,

    /// Hostile: the flood bot's moves per second (the server allows 60 per player by default).
    #[arg(long, default_value_t = 300.0, help_heading = "Hostile")]
    pub flood_rate: f64,

    /// Hostile: sockets the malformed traffic is spread over.
    #[arg(long, default_value_t = 8, value_parser = clap::value_parser!(u32).range(1..=1024), help_heading = "Hostile")]
    pub hostile_sockets: u32,

    /// Hostile: joins of each kind with a token the server must refuse (forged, expired,
    /// wrong server, malformed, replayed), each from its own account.
    #[arg(long, default_value_t = 8, help_heading = "Hostile")]
    pub hostile_token_attacks: u32,
}

impl Cli {
    /// The bot driver threads to run: `--threads`, or for 0 one per 4,000 bots (at least
    /// one, at most one per core).
    pub fn driver_threads(&self) -> usize {
        if self.threads > 0 {
            return self.threads as usize;
        }
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        (self.players as usize).div_ceil(4000).clamp(1, cores)
    }

    /// Time between one bot's moves.
    pub fn move_interval(&self) -> Duration {
        Duration::from_millis(self.move_interval_ms)
    }
}
