//! One run, start to finish: join every bot, read the server's figures, play the scenario,
//! read the figures again, leave, and judge.
//!
//! Timeline (every phase is driven by absolute instants, so a slow phase never shifts the
//! measured window's meaning):
//!
//! ```text
//! joins, staggered at --join-rate ─┐ (hostile: probe spoofers) ─ stats "before" ─┐
//!   move_start ── warm-up ── measure_start ───── --duration ───── end ── drain ──┴─ stats "after" ── LEAVE
//! ```
//!
//! Bots join before the "before" snapshot and leave after the "after" one, so the deltas
//! between the two hold only the scenario's own traffic: joins do not mint into the economy
//! deltas, and a resent `LEAVE` after its ack (dropped `unknown_player`) does not land in the
//! drop deltas.

use crate::admin::AdminClient;
use crate::admin::GrantSummary;
use crate::bot::{self, BotReport, DutyPlan, FloodTally, JoinPlan, Latencies, LeaveOutcome, LiveCounters, PlayPlan, Session};
use crate::checks::{self, Check};
use crate::cli::{Cli, Scenario};
use crate::combat::{CombatPlan, CombatTally};
use crate::driver::{self, Bot, DriverConfig, DriverReport, Played};
use crate::economy::{EconomyMode, EconomyPlan, EconomyTally};
use crate::hostile::{self, HostileKind, HostilePlan, ProbeReport, SentCounts, Victim};
use crate::hostile_joins::{self, TokenAttackTally};
use crate::metrics::Merged;
use crate::net::connected_socket;
use crate::progress::Progress;
use crate::protocol::DropReason;
use crate::protocol::MoveResult;
use crate::protocol::TradeSide;
use crate::raid::{self, RaidPlan, RaidSummary, RaidWindows};
use crate::rng::Rng;
use crate::schedule::Epoch;
use crate::server_stats::ServerStats;
use crate::system::{HostSteal, ProcessUsage, StealReading, UdpCounters, raise_nofile};
use crate::token::{self, TokenMinter};
use crate::walk::{Area, Walk};
use anyhow::{Context, bail};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// The side the raid scenario's bots' accounts are on: the server's starting zone for it
/// ([`LOADTEST_SPAWN_POINTS`]: zone 1) lies inside the raid area.
pub const RAID_FACTION: u8 = 1;
/// The side every other scenario's bots are on: zone 0 of [`LOADTEST_SPAWN_POINTS`], the
/// whole default world (steady play spreads over it).
pub const PLAYER_FACTION: u8 = 2;
/// The server's starting zones a load test expects (`mmo-server --spawn-points`; faction f
/// starts in zone f % 2): the world for steady play, the raid area for the raid's bots.
/// `mmo-loadtest --print-spawn-points` prints it for the scripts that start servers.
pub const LOADTEST_SPAWN_POINTS: &str = "2048,2048,1900;2048,2048,95";

/// Every bot's report, merged.
#[derive(Clone, Debug, Default)]
pub struct Totals {
    /// Measured moves sent.
    pub moves_sent: u64,
    /// Of those, acknowledged.
    pub acks: u64,
    /// Acks with a non-zero result, by result.
    pub rejected: [u64; MoveResult::ALL.len()],
    /// Acks for an already acknowledged sequence.
    pub duplicate_acks: u64,
    /// Acks too old to match.
    pub late_acks: u64,
    /// Acks for a sequence never sent.
    pub unexpected_acks: u64,
    /// Acks not echoing their move's `client_time_ms`.
    pub echo_mismatches: u64,
    /// Contacts reported.
    pub contacts: u64,
    /// Every bot's attacks and what they got.
    pub combat: CombatTally,
    /// Snapshots received in the measured window.
    pub aoi_snapshots: u64,
    /// Undecodable datagrams.
    pub decode_errors: u64,
    /// Unexpected message types.
    pub unexpected_messages: u64,
    /// Receive errors.
    pub recv_errors: u64,
    /// Send errors.
    pub send_errors: u64,
    /// Most overdue moves any bot sent at once.
    pub max_behind: u64,
    /// Every driver thread's latency histograms, merged.
    pub latencies: Latencies,
    /// The economy ledger.
    pub economy: EconomyTally,
    /// Hostile duties sent by bots.
    pub hostile: SentCounts,
}

impl Totals {
    fn add(&mut self, r: &BotReport) {
        self.moves_sent += r.moves_sent;
        self.acks += r.acks;
        for (a, b) in self.rejected.iter_mut().zip(r.rejected) {
            *a += b;
        }
        self.duplicate_acks += r.duplicate_acks;
        self.late_acks += r.late_acks;
        self.unexpected_acks += r.unexpected_acks;
        self.echo_mismatches += r.echo_mismatches;
        self.contacts += r.contacts;
        self.combat.add(&r.combat);
        self.aoi_snapshots += r.aoi_snapshots;
        self.decode_errors += r.decode_errors;
        self.unexpected_messages += r.unexpected_messages;
        self.recv_errors += r.recv_errors;
        self.send_errors += r.send_errors;
        self.max_behind = self.max_behind.max(r.max_behind);
        self.economy.add(&r.economy);
        self.hostile.add(&r.hostile);
    }

    /// Acks with a non-zero result.
    pub fn rejected_total(&self) -> u64 {
        self.rejected.iter().sum()
    }
}

/// The hostile scenario's own results.
#[derive(Clone, Debug, Default)]
pub struct HostileOutcome {
    /// Everything sent, per kind (bots' duties, the controller, the flood).
    pub sent: SentCounts,
    /// The flood bot's tally.
    pub flood: FloodTally,
    /// What probing for spoofing sockets found.
    pub probe: ProbeReport,
    /// Joins with tokens the server must refuse.
    pub token_attacks: TokenAttackTally,
}

/// Everything a run produced.
#[derive(Debug)]
pub struct RunResult {
    /// The options it ran with.
    pub cli: Cli,
    /// Bots that joined (the flood bot not counted).
    pub joined: usize,
    /// Join failures by reason.
    pub join_failures: BTreeMap<String, u64>,
    /// Handshake times, µs.
    pub join_us: Merged,
    /// Every bot's report, merged.
    pub totals: Totals,
    /// The raid scenario's bursts.
    pub raid: Option<RaidSummary>,
    /// The hostile scenario's traffic.
    pub hostile: Option<HostileOutcome>,
    /// The economy scenario's grants of working capital, before play.
    pub grants: Option<GrantSummary>,
    /// The server's figures before play.
    pub server_before: Option<ServerStats>,
    /// The server's figures after play.
    pub server_after: Option<ServerStats>,
    /// Seconds between reading the server's figures before and after play.
    pub server_window_s: Option<f64>,
    /// Why the server's figures are missing, if they are.
    pub server_error: Option<String>,
    /// `LEAVE`s acknowledged.
    pub leaves_acked: u64,
    /// `LEAVE`s never acknowledged.
    pub leaves_unacked: u64,
    /// The load tester's own CPU and memory over the run.
    pub usage: ProcessUsage,
    /// The load tester's CPU while the bots played (joins and leaves left out).
    pub play_usage: ProcessUsage,
    /// Wall time the bots played (start of the driver threads to their end), seconds.
    pub play_wall_s: f64,
    /// What the bot driver threads did.
    pub driver: DriverReport,
    /// The kernel's UDP counters over the run (machine-wide).
    pub udp: Option<UdpCounters>,
    /// The hypervisor's steal over the run (`/proc/stat`), if readable.
    pub host_steal: Option<HostSteal>,
    /// Whether Ctrl-C stopped the run early.
    pub interrupted: bool,
    /// Seconds actually measured (`--duration`, or less if interrupted).
    pub measured_s: f64,
    /// The checks and their verdicts.
    pub checks: Vec<Check>,
}

/// Splits the joined bots over the driver threads (bot `i` to thread `i % threads`, so each
/// thread's bots are spread evenly over the send interval) and starts them, each on its own
/// OS thread, pinned where `--pin` says.
fn spawn_drivers(
    sessions: Vec<(Session, Walk, Rng)>,
    plan: &Arc<PlayPlan>,
    cli: &Cli,
) -> anyhow::Result<Vec<tokio::sync::oneshot::Receiver<std::io::Result<Played>>>> {
    let threads = cli.driver_threads().min(sessions.len().max(1));
    let mut groups: Vec<Vec<Bot>> = (0..threads).map(|_| Vec::with_capacity(sessions.len() / threads + 1)).collect();
    for (k, (s, walk, rng)) in sessions.into_iter().enumerate() {
        let session = s.into_std().context("taking a bot's socket out of tokio")?;
        groups[k % threads].push(Bot { session, walk, rng });
    }
    let mut out = Vec::with_capacity(threads);
    for (t, bots) in groups.into_iter().enumerate() {
        let config = DriverConfig {
            tick: Duration::from_micros(cli.send_tick_us),
            max_spin: Duration::from_micros(cli.max_spin_us),
            read_period: Duration::from_millis(cli.read_period_ms),
            cpu: (!cli.pin.is_empty()).then(|| cli.pin[t % cli.pin.len()]),
            nice: cli.driver_nice,
        };
        let plan = Arc::clone(plan);
        let (tx, rx) = tokio::sync::oneshot::channel();
        std::thread::Builder::new()
            .name(format!("bots-{t}"))
            .spawn(move || {
                let _ = tx.send(driver::drive(bots, &plan, config));
            })
            .context("starting a bot driver thread")?;
        out.push(rx);
    }
    Ok(out)
}

fn join_failure_kind(e: &bot::JoinError) -> String {
    match e {
        bot::JoinError::NoChallenge(_) => "no JOIN_CHALLENGE".into(),
        bot::JoinError::NoAccept(_) => "no JOIN_ACCEPT".into(),
        bot::JoinError::Refused(s) => format!("refused: {s:?}"),
        bot::JoinError::Io(e) => format!("socket: {e}"),
    }
}

/// Runs the scenario `cli` describes. `Err` is a setup failure (no server, a bad option, no
/// admin reply where the scenario needs one); a run that completes returns its checks, passed
/// or not.
pub async fn run(cli: Cli, progress: &Progress) -> anyhow::Result<RunResult> {
    let scenario = cli.scenario;
    let admin_key = match (cli.admin_key, scenario.needs_admin()) {
        (None, true) => bail!("--scenario {} checks the server's own figures and needs --admin-key", scenario.name()),
        (key, _) => key,
    };
    let players = cli.players as usize;
    let hostile = scenario == Scenario::Hostile;
    let total_bots = players + usize::from(hostile);
    let hostile_plan = HostilePlan::from_cli(&cli);
    let fds = total_bots as u64 + hostile_plan.pool_sockets as u64 + hostile_plan.max_probes as u64 + 64;
    raise_nofile(fds)?;
    let usage0 = ProcessUsage::now();
    let udp0 = UdpCounters::read();
    let steal0 = StealReading::read();
    let epoch = Epoch::at(Instant::now());
    let stop = Arc::new(AtomicBool::new(false));
    let stopped_at_us = Arc::new(AtomicU64::new(u64::MAX));
    {
        let (stop, stopped_at_us) = (Arc::clone(&stop), Arc::clone(&stopped_at_us));
        // SIGINT (Ctrl-C) or SIGTERM: stop sending, drain, report what was measured.
        tokio::spawn(async move {
            let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()).ok();
            let terminated = async {
                match term.as_mut() {
                    Some(t) => t.recv().await,
                    None => std::future::pending().await,
                }
            };
            let got = tokio::select! {
                r = tokio::signal::ctrl_c() => r.is_ok(),
                r = terminated => r.is_some(),
            };
            if got {
                stopped_at_us.store(epoch.micros(Instant::now()), Ordering::Relaxed);
                stop.store(true, Ordering::Relaxed);
            }
        });
    }

    let mut admin = match admin_key {
        Some(key) => Some(AdminClient::connect(cli.server, key, cli.admin_rate).context("admin socket")?),
        None => None,
    };
    let raid_plan = RaidPlan {
        every: cli.raid_every,
        objects: cli.raid_objects,
        lifetime_ms: cli.raid_lifetime_ms,
        center_x_m: cli.raid_x,
        center_y_m: cli.raid_y,
        half_extent_m: cli.raid_half_extent,
        player_radius_m: cli.raid_radius,
        window_after: cli.raid_window_after,
        result_timeout: Duration::from_secs(2),
    };
    let area = match scenario {
        Scenario::Raid => Area::Circle { cx: raid_plan.center_x_m, cy: raid_plan.center_y_m, r: raid_plan.player_radius_m },
        _ => Area::world(cli.world_size, 1.0),
    };
    let step_m = cli.speed * cli.move_interval().as_secs_f32();

    // Joins, staggered.
    progress.phase(&format!("joining {total_bots} bots"));
    let minter =
        TokenMinter::from_file(&cli.token_secret_key).context("the load tester mints its bots' connect tokens (--token-secret-key)")?;
    let account_base = cli.account_base.unwrap_or_else(|| token::random_token_id() >> 24);
    let issuer = token::Issuer::new(minter, account_base, cli.server, cli.token_ttl);
    let faction = if scenario == Scenario::Raid { RAID_FACTION } else { PLAYER_FACTION };
    let join_plan =
        JoinPlan { server: cli.server, attempt_timeout: cli.join_timeout, attempts: cli.join_attempts, tokens: Arc::new(issuer), faction };
    let join_start = Instant::now();
    let mut handles = Vec::with_capacity(total_bots);
    for i in 0..total_bots {
        let mut rng = Rng::for_index(cli.seed, i as u64);
        let delay = Duration::from_secs_f64(i as f64 / cli.join_rate.max(1.0));
        let plan = join_plan.clone();
        handles.push(tokio::spawn(async move {
            tokio::time::sleep_until((join_start + delay).into()).await;
            let (result, stats) = bot::join(i, &plan, &mut rng).await;
            (result, stats, rng)
        }));
    }
    let mut sessions: Vec<(Session, Walk, Rng)> = Vec::with_capacity(total_bots);
    let mut flood_session = None;
    let mut join_failures: BTreeMap<String, u64> = BTreeMap::new();
    let mut join_us = Merged::new();
    let mut outside_area = 0usize;
    for h in handles {
        let (result, stats, mut rng) = h.await.context("a join task panicked")?;
        match result {
            Ok(s) => {
                join_us.record(stats.handshake_us);
                // The server put the player somewhere: the walk starts there.
                outside_area += usize::from(!area.contains(s.spawn.0, s.spawn.1));
                let walk = Walk::at(area, s.spawn, step_m, &mut rng);
                if hostile && s.index == players {
                    flood_session = Some(s);
                } else {
                    sessions.push((s, walk, rng));
                }
            }
            Err(e) => *join_failures.entry(join_failure_kind(&e)).or_default() += 1,
        }
    }
    let joined = sessions.len();
    if outside_area > 0 {
        bail!(
            "{outside_area} bots were put outside the scenario's area ({area:?}) by the server; start mmo-server with \
             --spawn-points \"{LOADTEST_SPAWN_POINTS}\" (faction {RAID_FACTION}'s starting zone inside the raid's --raid-radius)"
        );
    }
    progress.note(&format!("joined {joined} of {players} bots in {:.1} s", join_start.elapsed().as_secs_f64()));
    if joined == 0 {
        let why = join_failures.keys().next().cloned().unwrap_or_default();
        bail!("no bot could join {} ({why}); is mmo-server running there?", cli.server);
    }
    let peers: Arc<[u64]> = sessions.iter().map(|(s, _, _)| s.player_id).collect();

    // Hostile set-up: find spoofing sockets while nothing else is being dropped.
    let mut probe = ProbeReport::default();
    let mut spoofers = Vec::new();
    let mut pool = Vec::new();
    if hostile && let Some(admin) = admin.as_mut() {
        progress.phase("probing for address-mismatch sockets");
        let victims: Vec<Victim> = sessions.iter().take(64).map(|(s, _, _)| s.victim()).collect();
        let (found, report) = hostile::probe_spoofers(admin, cli.server, &victims, &hostile_plan).await?;
        spoofers = found;
        probe = report;
        for _ in 0..hostile_plan.pool_sockets {
            pool.push(connected_socket(cli.server)?);
        }
    }

    let mut server_error = None;
    let server_before_at = Instant::now();
    let server_before = match admin.as_mut() {
        Some(admin) => match admin.stats().await {
            Ok(s) => Some(s),
            Err(e) if scenario.needs_admin() => return Err(e).context("the server's figures before the run"),
            Err(e) => {
                server_error = Some(e.to_string());
                None
            }
        },
        None => {
            server_error = Some("not fetched (no --admin-key)".into());
            None
        }
    };

    // The economy's working capital: one admin grant per bot (after the figures before the run,
    // so the run's minted gold is exactly the grants).
    let grants = match (scenario, admin.as_mut()) {
        (Scenario::Economy, Some(admin)) => {
            progress.phase(&format!("granting {joined} bots their working capital"));
            let p = EconomyPlan::default();
            let stack = TradeSide { gold: p.grant_gold, item_count: p.grant_items, item_kind: p.item_kind };
            Some(admin.grant_all(&peers, stack).await.context("granting the bots' working capital")?)
        }
        _ => None,
    };

    // Play.
    let move_start = Instant::now() + Duration::from_millis(200);
    let measure_start = move_start + cli.warmup;
    let end = measure_start + cli.duration;
    let live = Arc::new(LiveCounters::default());
    let raid_windows = (scenario == Scenario::Raid).then(|| Arc::new(RaidWindows::default()));
    let economy = match scenario {
        Scenario::Economy => Some(EconomyPlan {
            interval: Duration::from_millis(cli.economy_interval_ms),
            timeout: Duration::from_millis(cli.economy_timeout_ms),
            duplicate_ratio: cli.economy_duplicates,
            ..EconomyPlan::default()
        }),
        // The raid's bots trade what they loot (and answer the offers they are told of).
        Scenario::Raid if cli.loot_trade_interval_ms > 0 && cli.attack_range_m > 0.0 => Some(EconomyPlan {
            mode: EconomyMode::Loot,
            interval: Duration::from_millis(cli.loot_trade_interval_ms),
            timeout: Duration::from_millis(cli.economy_timeout_ms),
            duplicate_ratio: cli.economy_duplicates,
            ..EconomyPlan::default()
        }),
        _ => None,
    };
    let plan = Arc::new(PlayPlan {
        epoch,
        move_start,
        move_interval: cli.move_interval(),
        measure_start,
        end,
        drain: cli.drain,
        economy_settle: cli.economy_settle,
        bots: joined,
        economy,
        duties: hostile.then(|| DutyPlan { interval: hostile_plan.duty_interval(joined) }),
        combat: (scenario == Scenario::Raid && cli.attack_range_m > 0.0)
            .then(|| CombatPlan { range_m: cli.attack_range_m, interval: Duration::from_millis(cli.attack_interval_ms) }),
        raid_windows: raid_windows.clone(),
        peers,
        live: Arc::clone(&live),
        stop: Arc::clone(&stop),
    });
    // The server's clock, for the cookie period a bad-cookie datagram claims.
    let clock = sessions.first().map(|(s, _, _)| s.server_clock);
    progress.start_play(move_start, measure_start, end, cli.drain, Arc::clone(&live), Arc::clone(&stop));
    let play_usage0 = ProcessUsage::now();
    let play_started = Instant::now();
    let drivers = spawn_drivers(sessions, &plan, &cli)?;

    // The raid driver borrows the admin client for the run and hands it back at the end.
    let raid_handle = if let Some(windows) = raid_windows.clone()
        && let Some(mut admin) = admin.take()
    {
        let stop = Arc::clone(&stop);
        // First burst half an interval into the measured window, so both sides of it are measured.
        let first = measure_start + raid_plan.every / 2;
        Some(tokio::spawn(async move {
            let bursts = raid::drive(&mut admin, &raid_plan, &windows, epoch, first, end, &stop).await;
            (admin, bursts)
        }))
    } else {
        None
    };
    let controller = hostile.then(|| {
        let stop = Arc::clone(&stop);
        let key = admin_key.unwrap_or(0);
        let period = move |now: Instant| match clock {
            Some((at, ms)) => ((ms + now.saturating_duration_since(at).as_millis() as u64) / 10_000) as u32,
            None => 0,
        };
        let pool = std::mem::take(&mut pool);
        let spoofers = std::mem::take(&mut spoofers);
        tokio::spawn(async move { hostile::run_controller(hostile_plan, pool, spoofers, key, period, move_start, end, &stop).await })
    });
    let token_attacks = hostile.then(|| {
        let plan = join_plan.clone();
        let per_kind = cli.hostile_token_attacks;
        let mut rng = Rng::new(cli.seed ^ 0x70C3_A77A_C4E5);
        tokio::spawn(async move { hostile_joins::run(&plan, per_kind, &mut rng).await })
    });
    let flood_handle = match flood_session.take() {
        Some(s) if hostile => {
            let stop = Arc::clone(&stop);
            let (rate, drain) = (hostile_plan.flood_rate, cli.drain);
            Some(tokio::spawn(async move { bot::flood(s, rate, move_start, end, drain, &stop).await }))
        }
        _ => None,
    };

    let mut totals = Totals::default();
    let mut sessions = Vec::with_capacity(joined + 1);
    let mut driver = DriverReport::default();
    for d in drivers {
        let played = d.await.context("a bot driver thread stopped without a result")?.context("a bot driver thread failed")?;
        driver.add(&played.report);
        totals.latencies.add(&played.latencies);
        for (session, report) in played.bots {
            totals.add(&report);
            sessions.push(session.into_tokio().context("handing a bot's socket back to tokio")?);
        }
    }
    let play_usage = ProcessUsage::now().since(&play_usage0);
    let play_wall_s = play_started.elapsed().as_secs_f64();
    let raid = match raid_handle {
        Some(h) => {
            let (a, bursts) = h.await.context("the raid task panicked")?;
            admin = Some(a);
            Some(RaidSummary::new(bursts.context("raid triggers")?, raid_plan.objects))
        }
        None => None,
    };
    let hostile_outcome = match controller {
        Some(h) => {
            let mut sent = h.await.context("the hostile task panicked")?;
            sent.add(&totals.hostile);
            let flood = match flood_handle {
                Some(h) => {
                    let (s, tally) = h.await.context("the flood task panicked")?;
                    sessions.push(s);
                    tally
                }
                None => FloodTally::default(),
            };
            sent.add_n(HostileKind::Flooding, flood.sent);
            let token_attacks = match token_attacks {
                Some(h) => h.await.context("the token attack task panicked")?,
                None => TokenAttackTally::default(),
            };
            Some(HostileOutcome { sent, flood, probe, token_attacks })
        }
        None => None,
    };
    let interrupted = stop.load(Ordering::Relaxed);
    let measured_until = epoch.micros(end).min(stopped_at_us.load(Ordering::Relaxed));
    let measured_s = measured_until.saturating_sub(epoch.micros(measure_start)) as f64 / 1e6;
    progress.phase("reading the server's figures");

    let server_after = match admin.as_mut() {
        Some(admin) if server_before.is_some() => match admin.stats().await {
            Ok(s) => Some(s),
            Err(e) => {
                server_error = Some(format!("after the run: {e}"));
                None
            }
        },
        _ => None,
    };
    let server_window_s = server_after.is_some().then(|| server_before_at.elapsed().as_secs_f64());

    let (mut leaves_acked, mut leaves_unacked) = (0, 0);
    if cli.leave_at_end {
        progress.phase("leaving");
        let handles: Vec<_> =
            sessions.into_iter().map(|s| tokio::spawn(async move { bot::leave(&s, 3, Duration::from_millis(300)).await })).collect();
        for h in handles {
            match h.await.context("a leave task panicked")? {
                LeaveOutcome::Acked => leaves_acked += 1,
                LeaveOutcome::NoAck => leaves_unacked += 1,
            }
        }
    }

    let usage = ProcessUsage::now().since(&usage0);
    let udp = match (udp0, UdpCounters::read()) {
        (Some(a), Some(b)) => Some(b.since(&a)),
        _ => None,
    };
    let host_steal = match (steal0, StealReading::read()) {
        (Some(a), Some(b)) => b.since(&a),
        _ => None,
    };

    let mut result = RunResult {
        cli,
        joined,
        join_failures,
        join_us,
        totals,
        raid,
        hostile: hostile_outcome,
        grants,
        server_before,
        server_after,
        server_window_s,
        server_error,
        leaves_acked,
        leaves_unacked,
        usage,
        play_usage,
        play_wall_s,
        driver,
        udp,
        host_steal,
        interrupted,
        measured_s,
        checks: Vec::new(),
    };
    result.checks = judge(&result);
    Ok(result)
}

/// The run's checks: joins, loss and refusals always; each scenario's own checks; and, when
/// the server's figures are missing for a scenario that needs them, a failing check saying so.
pub fn judge(r: &RunResult) -> Vec<Check> {
    let cli = &r.cli;
    let t = &r.totals;
    let mut checks = vec![
        checks::joins(cli.players as usize, r.joined),
        checks::loss(t.moves_sent, t.acks, cli.max_loss),
        checks::rejects(t.moves_sent, t.rejected_total(), cli.max_loss),
        checks::replies(t.decode_errors, t.unexpected_acks, t.echo_mismatches),
    ];
    if r.interrupted {
        checks.push(Check::new("completed", false, "interrupted (SIGINT or SIGTERM) before the planned end"));
    }
    if let Some(raid) = &r.raid {
        checks.extend(checks::raid(raid));
    }
    let figures = r.server_before.as_ref().zip(r.server_after.as_ref());
    match (cli.scenario, figures) {
        (Scenario::Economy, Some((before, after))) => {
            checks.extend(checks::economy(before, after, &t.economy, &r.grants.unwrap_or_default()))
        }
        (Scenario::Raid, Some((before, after))) if cli.attack_range_m > 0.0 => {
            checks.extend(checks::combat(before, after, &t.combat));
            if cli.loot_trade_interval_ms > 0 {
                checks.extend(checks::loot_trades(before, after, &t.economy, &t.combat));
            }
        }
        (Scenario::Hostile, Some((before, after))) => {
            let h = r.hostile.clone().unwrap_or_default();
            let mut by_reason = h.sent.by_reason();
            by_reason.remove(&DropReason::RateLimitedPlayer);
            let plan = HostilePlan::from_cli(cli);
            let spoofers = usize::try_from(h.probe.found).unwrap_or(usize::MAX).min(plan.want_spoofers);
            checks.extend(checks::drops(before, after, &by_reason, &h.flood, cli.max_loss, plan.sources_past_limits(spoofers)));
            checks.extend(checks::token_attacks(before, after, &h.token_attacks));
            checks.push(Check::new(
                "address_mismatch_tested",
                h.probe.found > 0,
                format!(
                    "{} of {} probe sockets shared a victim's server worker ({} ambiguous); address_mismatch datagrams sent: {}",
                    h.probe.found,
                    h.probe.probes,
                    h.probe.ambiguous,
                    h.sent.get(HostileKind::AddressMismatch)
                ),
            ));
        }
        (Scenario::Economy | Scenario::Hostile, None) => checks.push(Check::new(
            "server_figures",
            false,
            format!("the server's figures are needed and missing: {}", r.server_error.clone().unwrap_or_default()),
        )),
        _ => {}
    }
    checks
}
