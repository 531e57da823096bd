//! mmo-crash-test: an acknowledged economy operation survives `kill -9`.
//!
//! Starts `mmo-server` (the Rust engine, its economy durable in a fresh data directory) and
//! runs an economy storm against it: every bot's account transfers gold to random others and
//! spends some, one operation in flight per bot, with immediate duplicates and retransmits on
//! a short timeout. At a random moment the server is killed with SIGKILL; it is restarted on
//! the same data directory and port, every bot joins again with a new connect token, and then:
//!
//! 1. every operation still in flight is retransmitted with its transaction id until it is
//!    answered: the server either answers it from its durable window (decided before the
//!    kill) or decides it now (it was never durable, so never told);
//! 2. every bot's last acknowledged operation is retransmitted: it must come back as a
//!    duplicate with exactly the answer first told (present, and not applied again);
//! 3. every account's balance is read (an admin grant of 1 gold, which answers the balance
//!    after it) and must equal the balance this tool computed from the answers it was told;
//! 4. the server's books must balance: conserved, live gold = the sum of those balances,
//!    minted = starting gold x accounts + grants, sunk = what the acknowledged spends sank.
//!
//! Any difference is a lost acknowledged operation, one applied twice, or an answer that
//! changed; the tool says which and exits 1. `make crash-test` runs 100 kills; `make test` 10.
//!
//! The server's commit log gets small segments (`--log-segment-kib`, 256 KiB by default against
//! the product's 1 MiB), so each storm fills several and kills land while segments switch and
//! while full ones are folded into `economy.redb` on the checkpoint thread.

use anyhow::{Context, Result, bail};
use clap::Parser;
use mmo_loadtest::admin::AdminClient;
use mmo_loadtest::bot::{self, JoinPlan, Session};
use mmo_loadtest::net::is_transient;
use mmo_loadtest::protocol::{self, EconomyKind, EconomyRequest, EconomyStatus, Flags, Message, TradeSide};
use mmo_loadtest::rng::Rng;
use mmo_loadtest::token::{Issuer, TokenMinter};
use std::io::{BufRead, BufReader};
use std::net::{Ipv4Addr, SocketAddrV4, UdpSocket as StdUdpSocket};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::net::UdpSocket;

const ADMIN_KEY: u64 = 0x00c0_ffee_d00d;
const STARTING_GOLD: u64 = 1_000;
const FACTION: u8 = 2;

#[derive(Parser, Debug)]
#[command(
    name = "mmo-crash-test",
    about = "kill -9 the server during economy storms; check no acknowledged operation is lost or applied twice"
)]
struct Args {
    /// The server binary.
    #[arg(long, default_value = "build/cpp/mmo-server")]
    server: PathBuf,
    /// How many times the server is killed (and restarted).
    #[arg(long, default_value_t = 100)]
    kills: u32,
    /// Bots, one account each.
    #[arg(long, default_value_t = 48)]
    accounts: usize,
    /// Each storm lasts a random time between these (then the kill), milliseconds.
    #[arg(long, default_value_t = 100)]
    storm_ms_min: u64,
    #[arg(long, default_value_t = 1_200)]
    storm_ms_max: u64,
    /// Percent of operations sent twice back to back (a duplicated datagram).
    #[arg(long, default_value_t = 10)]
    duplicate_percent: u64,
    /// Resend an unanswered operation after this long, milliseconds.
    #[arg(long, default_value_t = 20)]
    retransmit_ms: u64,
    /// The server's commit log segment size (`--economy-log-segment-kib`): small, so that
    /// segments switch and are checkpointed during every storm.
    #[arg(long, default_value_t = 256)]
    log_segment_kib: u32,
    /// Seed for the storm's choices.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Working directory (key pair, the server's data directory, its logs); a fresh temporary
    /// one by default, removed when every check passed.
    #[arg(long)]
    work_dir: Option<PathBuf>,
}

/// One operation a bot asked for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Op {
    transaction_id: u64,
    kind: EconomyKind,
    /// Transfer: the receiving bot.
    to: Option<usize>,
    gold: u64,
}

/// What the server first told about an operation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Told {
    status: EconomyStatus,
    gold: u64,
}

/// What this tool knows of one account, from what it was told.
#[derive(Clone, Debug, Default)]
struct Account {
    gold: u64,
    next_transaction: u64,
    next_grant: u64,
    /// Sent, not yet answered with a decision.
    in_flight: Option<Op>,
    /// The last operation answered with a decision, and that answer.
    last_told: Option<(Op, Told)>,
}

#[derive(Debug, Default)]
struct Model {
    accounts: Vec<Account>,
    sunk: u64,
    grants: u64,
    /// Answers that differed from the first answer to the same transaction.
    changed_answers: Vec<String>,
}

impl Model {
    /// Applies the first decision told for `op` of account `a`; checks any later one against it.
    fn told(&mut self, a: usize, op: Op, told: Told, first: bool) {
        if !first {
            if let Some((last, was)) = self.accounts[a].last_told
                && last == op
                && was != told
            {
                self.changed_answers.push(format!("account {a} transaction {}: told {was:?}, then {told:?}", op.transaction_id));
            }
            return;
        }
        if told.status == EconomyStatus::Applied {
            self.accounts[a].gold -= op.gold;
            match op.to {
                Some(to) => self.accounts[to].gold += op.gold,
                None => self.sunk += op.gold,
            }
        }
        self.accounts[a].in_flight = None;
        self.accounts[a].last_told = Some((op, told));
    }
}

#[derive(Debug, Default)]
struct Tally {
    told: u64,
    sent: u64,
    duplicates_sent: u64,
    resolved_after_restart: u64,
    /// Of those, answered from the window: durable before the kill but never told.
    resolved_as_decided: u64,
    present_after_restart: u64,
    storage_busy: u64,
}

fn free_port() -> Result<u16> {
    let s = StdUdpSocket::bind(SocketAddrV4::new(Ipv4Addr::LOCALHOST, 0))?;
    Ok(s.local_addr()?.port())
}

struct Server {
    child: Child,
    /// "opened in X ms" from its economy line.
    store_open_ms: f64,
}

fn start_server(args: &Args, port: u16, work: &std::path::Path, round: u32) -> Result<Server> {
    let log = std::fs::File::create(work.join(format!("server-{round}.log")))?;
    let mut child = Command::new(&args.server)
        .args(["--port", &port.to_string(), "--engine", "rust", "--economy-store", "durable", "--threads", "2", "--stats-interval-s", "0"])
        .args(["--admin-key", &ADMIN_KEY.to_string(), "--starting-gold", &STARTING_GOLD.to_string()])
        .args(["--economy-log-segment-kib", &args.log_segment_kib.to_string()])
        .arg("--data-dir")
        .arg(work.join("data"))
        .arg("--token-public-key")
        .arg(work.join("keys/token.pub"))
        .args(["--spawn-points", mmo_loadtest::run::LOADTEST_SPAWN_POINTS])
        .stdout(Stdio::piped())
        .stderr(log)
        .spawn()
        .with_context(|| format!("starting {}", args.server.display()))?;
    let stdout = child.stdout.take().expect("piped");
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    let deadline = Instant::now() + Duration::from_secs(20);
    let (mut listening, mut store_open_ms) = (false, f64::NAN);
    while Instant::now() < deadline && !(listening && store_open_ms.is_finite()) {
        match rx.recv_timeout(Duration::from_millis(100)) {
            Ok(line) if line.starts_with("mmo-server: listening on") => listening = true,
            Ok(line) if line.starts_with("mmo-server: economy ") => {
                if !line.contains("durable") {
                    bail!("the server's economy is not durable: {line}");
                }
                store_open_ms =
                    line.split("opened in ").nth(1).and_then(|t| t.split(' ').next()).and_then(|t| t.parse().ok()).unwrap_or(0.0);
            }
            Ok(_) => {}
            Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {
                if let Some(status) = child.try_wait()? {
                    bail!("mmo-server exited with {status} at start (see {}/server-{round}.log)", work.display());
                }
            }
            Err(_) => bail!("mmo-server closed its output at start (see {}/server-{round}.log)", work.display()),
        }
    }
    if !listening {
        bail!("mmo-server did not start in 20 s (see {}/server-{round}.log)", work.display());
    }
    Ok(Server { child, store_open_ms })
}

fn request(session: &Session, op: &Op, sessions: &[Session]) -> EconomyRequest {
    EconomyRequest {
        player_id: session.player_id,
        session_token: session.session_token,
        transaction_id: op.transaction_id,
        counterparty_id: op.to.map_or(0, |to| sessions[to].player_id),
        gold: op.gold as i64,
        item_count: 0,
        item_kind: 0,
        kind: op.kind,
    }
}

async fn send(socket: &UdpSocket, message: Message<'_>, flags: Flags) {
    let mut out = [0u8; 128];
    let n = protocol::encode(&message, flags, &mut out).expect("client messages encode");
    let _ = socket.send(&out[..n]).await;
}

/// Receives an `ECONOMY_RESULT` for `transaction_id` before `deadline`.
async fn result_for(socket: &UdpSocket, transaction_id: u64, deadline: Instant) -> Option<protocol::EconomyResult> {
    let mut buf = [0u8; 2048];
    loop {
        let now = Instant::now();
        if now >= deadline {
            return None;
        }
        match tokio::time::timeout(deadline - now, socket.recv(&mut buf)).await {
            Err(_) => return None,
            Ok(Ok(n)) => {
                if let Ok(d) = protocol::decode(&buf[..n])
                    && let Message::EconomyResult(r) = d.message
                    && r.transaction_id == transaction_id
                {
                    return Some(r);
                }
            }
            Ok(Err(e)) if is_transient(&e) => tokio::time::sleep(Duration::from_millis(2)).await,
            Ok(Err(_)) => return None,
        }
    }
}

/// What the bots of one storm share.
struct Storm {
    sessions: Arc<Vec<Session>>,
    model: Arc<Mutex<Model>>,
    tally: Arc<Mutex<Tally>>,
    /// Wakes the bots waiting for an answer when the server was killed.
    stop: tokio::sync::Notify,
    /// Set once the server was killed.
    stopped: std::sync::atomic::AtomicBool,
    args: Arc<Args>,
    seed: u64,
}

/// One bot's storm: operations one at a time until the kill, returning with its in-flight one
/// (if any) left in the model.
async fn storm(a: usize, storm: Arc<Storm>) {
    let Storm { sessions, model, tally, stop, stopped, args, seed } = &*storm;
    let mut rng = Rng::for_index(*seed, a as u64);
    let accounts = sessions.len();
    let me = &sessions[a];
    while !stopped.load(std::sync::atomic::Ordering::Acquire) {
        let op = {
            let mut m = model.lock().unwrap();
            let acc = &mut m.accounts[a];
            acc.next_transaction += 1;
            let transaction_id = acc.next_transaction;
            let op = if rng.chance(0.2) {
                Op { transaction_id, kind: EconomyKind::Spend, to: None, gold: 1 + rng.below(5) }
            } else {
                let to = (a + 1 + rng.below(accounts as u64 - 1) as usize) % accounts;
                Op { transaction_id, kind: EconomyKind::Transfer, to: Some(to), gold: 1 + rng.below(40) }
            };
            acc.in_flight = Some(op);
            op
        };
        let req = request(me, &op, sessions);
        send(&me.socket, req.into(), Flags::NONE).await;
        let mut sent = 1;
        if rng.below(100) < args.duplicate_percent {
            send(&me.socket, req.into(), Flags::NONE).await;
            tally.lock().unwrap().duplicates_sent += 1;
        }
        loop {
            let deadline = Instant::now() + Duration::from_millis(args.retransmit_ms);
            let answer = tokio::select! {
                r = result_for(&me.socket, op.transaction_id, deadline) => r,
                () = stop.notified() => None,
            };
            match answer {
                Some(r) if r.status == EconomyStatus::StorageBusy => tally.lock().unwrap().storage_busy += 1,
                Some(r) => {
                    model.lock().unwrap().told(a, op, Told { status: r.status, gold: r.gold_balance }, true);
                    tally.lock().unwrap().told += 1;
                    break;
                }
                None => {}
            }
            if stopped.load(std::sync::atomic::Ordering::Acquire) {
                break;
            }
            send(&me.socket, req.into(), Flags::RETRANSMIT).await;
            sent += 1;
        }
        tally.lock().unwrap().sent += sent;
        // A late duplicate answer of this op is read (and compared) by the next result_for
        // only if it carries the next id, so it is simply skipped there.
    }
}

/// Sends `message` until an `ECONOMY_RESULT` for `id` (not StorageBusy) comes back.
async fn ask(socket: &UdpSocket, message: Message<'_>, id: u64, what: &str) -> Result<protocol::EconomyResult> {
    for attempt in 0..200 {
        send(socket, message, if attempt == 0 { Flags::NONE } else { Flags::RETRANSMIT }).await;
        if let Some(r) = result_for(socket, id, Instant::now() + Duration::from_millis(50)).await
            && r.status != EconomyStatus::StorageBusy
        {
            return Ok(r);
        }
    }
    bail!("{what}: no answer in 10 s")
}

async fn join_all(args: &Args, plan: &JoinPlan, seed: u64) -> Result<Vec<Session>> {
    let mut sessions = Vec::with_capacity(args.accounts);
    let mut rng = Rng::new(seed);
    for i in 0..args.accounts {
        let (result, _) = bot::join(i, plan, &mut rng).await;
        sessions.push(result.with_context(|| format!("bot {i} could not join"))?);
    }
    Ok(sessions)
}

/// Steps 1-4 of the module docs, after a restart. Returns the problems found.
async fn check_after_restart(
    sessions: &[Session],
    model: &Mutex<Model>,
    tally: &Mutex<Tally>,
    admin: &mut AdminClient,
) -> Result<Vec<String>> {
    let mut problems = Vec::new();
    // 1. Resolve what was in flight.
    for (a, s) in sessions.iter().enumerate() {
        let in_flight = model.lock().unwrap().accounts[a].in_flight;
        if let Some(op) = in_flight {
            let r = ask(&s.socket, request(s, &op, sessions).into(), op.transaction_id, "an in-flight operation").await?;
            model.lock().unwrap().told(a, op, Told { status: r.status, gold: r.gold_balance }, true);
            let mut t = tally.lock().unwrap();
            t.resolved_after_restart += 1;
            t.resolved_as_decided += u64::from(r.duplicate);
        }
    }
    // 2. The last told operation of each bot is present, with the answer told.
    for (a, s) in sessions.iter().enumerate() {
        let last = model.lock().unwrap().accounts[a].last_told;
        if let Some((op, told)) = last {
            let r = ask(&s.socket, request(s, &op, sessions).into(), op.transaction_id, "a told operation").await?;
            let again = Told { status: r.status, gold: r.gold_balance };
            if !r.duplicate || again != told {
                problems.push(format!(
                    "account {a} transaction {}: told {told:?}; after the restart {again:?} (duplicate: {})",
                    op.transaction_id, r.duplicate
                ));
            } else {
                tally.lock().unwrap().present_after_restart += 1;
            }
        }
    }
    // 3. Balances, read by a grant of 1 gold each.
    for (a, s) in sessions.iter().enumerate() {
        // Unique across accounts (a late answer to another account's grant cannot pass for
        // this one's) and increasing per account, as grant ids must be.
        let grant_id = {
            let mut m = model.lock().unwrap();
            m.accounts[a].next_grant += 1;
            m.accounts[a].next_grant * sessions.len() as u64 + a as u64 + 1
        };
        let stack = TradeSide { gold: 1, item_count: 0, item_kind: 0 };
        let r = admin.grant(s.player_id, grant_id, stack).await.context("a balance grant")?;
        let mut m = model.lock().unwrap();
        if r.status != EconomyStatus::Applied {
            problems.push(format!("account {a}: grant {grant_id} refused {:?}", r.status));
            continue;
        }
        m.accounts[a].gold += 1;
        m.grants += 1;
        if r.gold_balance != m.accounts[a].gold {
            problems.push(format!("account {a}: the server has {} gold, the answers told make it {}", r.gold_balance, m.accounts[a].gold));
            m.accounts[a].gold = r.gold_balance; // report each difference once
        }
    }
    // 4. The books.
    let stats = admin.stats().await.context("the server's figures")?;
    let m = model.lock().unwrap();
    let live: u64 = m.accounts.iter().map(|a| a.gold).sum();
    let want = [
        ("economy_conserved", 1),
        ("economy_live_gold", live),
        ("economy_minted_gold", STARTING_GOLD * m.accounts.len() as u64 + m.grants),
        ("economy_sunk_gold", m.sunk),
    ];
    for (name, value) in want {
        if stats.get(name) != Some(value) {
            problems.push(format!("books: {name} is {:?}, expected {value}", stats.get(name)));
        }
    }
    problems.extend(m.changed_answers.iter().cloned());
    Ok(problems)
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<()> {
    let args = Arc::new(Args::parse());
    if args.accounts < 2 || args.storm_ms_max < args.storm_ms_min {
        bail!("--accounts must be at least 2 and --storm-ms-max at least --storm-ms-min");
    }
    let (work, temporary) = match &args.work_dir {
        Some(dir) => (dir.clone(), false),
        None => (std::env::temp_dir().join(format!("mmo-crash-test-{}", std::process::id())), true),
    };
    let _ = std::fs::remove_dir_all(&work);
    std::fs::create_dir_all(work.join("keys"))?;
    let minter = TokenMinter::generate()?;
    minter.write_key_pair(&work.join("keys"), "token")?;
    let port = free_port()?;
    let server_addr = SocketAddrV4::new(Ipv4Addr::LOCALHOST, port);
    let plan = JoinPlan {
        server: server_addr,
        attempt_timeout: Duration::from_millis(200),
        attempts: 50,
        tokens: Arc::new(Issuer::new(minter, 1_000_000, server_addr, Duration::from_secs(60))),
        faction: FACTION,
    };
    let model = Arc::new(Mutex::new(Model {
        accounts: vec![Account { gold: STARTING_GOLD, ..Account::default() }; args.accounts],
        ..Model::default()
    }));
    let tally = Arc::new(Mutex::new(Tally::default()));
    let mut rng = Rng::new(args.seed);
    let mut open_ms = Vec::new();
    let mut restart_ms = Vec::new();
    let started = Instant::now();
    let mut problems_total = 0usize;
    for round in 0..=args.kills {
        let t0 = Instant::now();
        let mut server = start_server(&args, port, &work, round)?;
        restart_ms.push(t0.elapsed().as_secs_f64() * 1e3);
        if round > 0 {
            open_ms.push(server.store_open_ms);
        }
        let sessions = Arc::new(join_all(&args, &plan, rng.next_u64()).await?);
        let mut admin = AdminClient::connect(server_addr, ADMIN_KEY, mmo_loadtest::admin::DEFAULT_RATE_PER_S)?;
        if round > 0 {
            let problems = check_after_restart(&sessions, &model, &tally, &mut admin).await?;
            for p in &problems {
                eprintln!("mmo-crash-test: after kill {round}: {p}");
            }
            problems_total += problems.len();
            if problems_total > 20 {
                bail!("stopping: {problems_total} problems");
            }
        }
        if round == args.kills {
            let _ = server.child.kill();
            let _ = server.child.wait();
            break;
        }
        // The storm, then the kill at a random moment of it.
        let shared = Arc::new(Storm {
            sessions: Arc::clone(&sessions),
            model: Arc::clone(&model),
            tally: Arc::clone(&tally),
            stop: tokio::sync::Notify::new(),
            stopped: std::sync::atomic::AtomicBool::new(false),
            args: Arc::clone(&args),
            seed: rng.next_u64(),
        });
        let bots: Vec<_> = (0..args.accounts).map(|a| tokio::spawn(storm(a, Arc::clone(&shared)))).collect();
        let storm_ms = args.storm_ms_min + rng.below(args.storm_ms_max - args.storm_ms_min + 1);
        tokio::time::sleep(Duration::from_millis(storm_ms)).await;
        server.child.kill().context("kill -9")?;
        server.child.wait()?;
        shared.stopped.store(true, std::sync::atomic::Ordering::Release);
        shared.stop.notify_waiters();
        for b in bots {
            b.await?;
        }
        let t = tally.lock().unwrap();
        eprintln!(
            "mmo-crash-test: kill {}/{} after {storm_ms} ms: {} operations told so far, {} in flight at the kill",
            round + 1,
            args.kills,
            t.told,
            model.lock().unwrap().accounts.iter().filter(|a| a.in_flight.is_some()).count()
        );
    }
    let t = tally.lock().unwrap();
    let median = |v: &mut Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v.get(v.len() / 2).copied().unwrap_or(f64::NAN)
    };
    let max = |v: &[f64]| v.iter().copied().fold(f64::NAN, f64::max);
    // Every start makes two segments (the active one and the next); every switch one more.
    let segments_made = std::fs::read_dir(work.join("data"))
        .map(|dir| {
            dir.filter_map(|e| e.ok()?.file_name().to_str()?.strip_prefix("economy-")?.strip_suffix(".log")?.parse::<u64>().ok())
                .max()
                .map_or(0, |n| n + 1)
        })
        .unwrap_or(0);
    println!(
        "mmo-crash-test: commit log: {segments_made} segments made, {} switches (and checkpoints) during storms",
        segments_made.saturating_sub(2 * (u64::from(args.kills) + 1))
    );
    println!(
        "mmo-crash-test: {} kills, {} accounts, {:.0} s: {} operations told ({} sent with retransmits, {} duplicated on purpose, {} storage busy); \
         after restarts {} in-flight operations resolved ({} of them durable before the kill but never told), {} told operations checked present; store open median {:.1} ms, max {:.1} ms; \
         restart to listening median {:.0} ms; {} problems",
        args.kills,
        args.accounts,
        started.elapsed().as_secs_f64(),
        t.told,
        t.sent,
        t.duplicates_sent,
        t.storage_busy,
        t.resolved_after_restart,
        t.resolved_as_decided,
        t.present_after_restart,
        median(&mut open_ms.clone()),
        max(&open_ms),
        median(&mut restart_ms.clone()),
        problems_total
    );
    if problems_total > 0 {
        bail!(
            "{problems_total} problems: acknowledged operations lost, applied twice, or answered differently (logs in {})",
            work.display()
        );
    }
    println!("mmo-crash-test: PASS: 0 acknowledged operations lost, 0 applied twice, books balanced after every restart");
    if temporary {
        let _ = std::fs::remove_dir_all(&work);
    }
    Ok(())
}
