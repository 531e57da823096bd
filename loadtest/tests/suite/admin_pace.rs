//! The admin client's pace: grants for thousands of bots from one socket reach a server that
//! limits each source address, as the real one does (`--address-rate`), and every one is
//! answered.

use mmo_loadtest::admin::{AdminClient, AdminPace};
use mmo_loadtest::protocol::{self, EconomyResult, EconomyStatus, Flags, Message, STATS_REPLY_MAX, TradeSide};
use std::net::{Ipv4Addr, SocketAddrV4, UdpSocket};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

#[test]
fn the_pace_allows_its_burst_then_its_rate() {
    let t0 = Instant::now();
    let mut pace = AdminPace::new(100.0, t0);
    let burst = (0..1_000).take_while(|_| pace.try_take(t0)).count();
    assert_eq!(burst, 5, "a burst of a twentieth of a second's worth");
    assert!(!pace.try_take(t0));
    let next = pace.next_at(t0);
    assert_eq!(next - t0, Duration::from_millis(10), "one send per 10 ms at 100 a second");
    assert!(!pace.try_take(t0 + Duration::from_millis(9)));
    assert!(pace.try_take(next));
    // A second later, never more than the burst however long it waited; over a second of
    // sends as they are allowed, the rate.
    let later = next + Duration::from_secs(3_600);
    assert_eq!((0..1_000).take_while(|_| pace.try_take(later)).count(), 5);
    let (mut now, mut sent) = (later, 0);
    while now < later + Duration::from_secs(1) {
        now = pace.next_at(now);
        sent += usize::from(pace.try_take(now));
    }
    assert!((99..=101).contains(&sent), "{sent} in a second at 100 a second");
    let much_later = now + Duration::from_secs(3_600);
    assert_eq!(pace.next_at(much_later + Duration::from_secs(1)), much_later + Duration::from_secs(1));
}

/// A server that answers every GRANT as applied, but drops what one source sends past
/// `rate_per_s` after a burst of half a second's worth (the real server's address limit,
/// scaled; the burst lets this thread be descheduled for a while on a busy machine without
/// dropping what queued meanwhile). Returns its address, its thread (which returns the grants
/// it answered once stopped), and the stop flag.
fn rate_limited_granter(rate_per_s: f64) -> (SocketAddrV4, std::thread::JoinHandle<u64>, Arc<AtomicBool>) {
    let socket = UdpSocket::bind(SocketAddrV4::new(Ipv4Addr::LOCALHOST, 0)).unwrap();
    socket.set_read_timeout(Some(Duration::from_millis(20))).unwrap();
    // Room for what queues while this thread waits for a core (the kernel caps it at
    // net.core.rmem_max).
    let bytes: libc::c_int = 4 << 20;
    // SAFETY: a valid socket and a c_int option value of the size given.
    unsafe {
        use std::os::fd::AsRawFd;
        libc::setsockopt(
            socket.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_RCVBUF,
            (&raw const bytes).cast(),
            size_of::<libc::c_int>() as libc::socklen_t,
        );
    }
    let addr = match socket.local_addr().unwrap() {
        std::net::SocketAddr::V4(a) => a,
        other => panic!("not IPv4: {other}"),
    };
    let stop = Arc::new(AtomicBool::new(false));
    let stop_in = stop.clone();
    let granter = std::thread::spawn(move || {
        let mut answered = 0u64;
        let mut limit = AdminPace::with_burst(rate_per_s, rate_per_s / 2.0, Instant::now());
        let (mut buf, mut out) = (vec![0u8; 2048], vec![0u8; STATS_REPLY_MAX]);
        while !stop_in.load(Ordering::Relaxed) {
            let Ok((len, from)) = socket.recv_from(&mut buf) else { continue };
            if !limit.try_take(Instant::now()) {
                continue;
            }
            if let Ok(d) = protocol::decode(&buf[..len])
                && let Message::Grant(g) = d.message
            {
                let result =
                    EconomyResult { transaction_id: g.grant_id, gold_balance: 0, status: EconomyStatus::Applied, duplicate: false };
                let n = protocol::encode(&result.into(), Flags::NONE, &mut out).unwrap();
                let _ = socket.send_to(&out[..n], from);
                answered += 1;
            }
        }
        answered
    });
    (addr, granter, stop)
}

#[test]
fn grants_for_thousands_of_bots_go_out_at_the_pace_and_are_all_answered() {
    let (server, granter, stop) = rate_limited_granter(1_000.0);
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let players: Vec<u64> = (1..=3_000).collect();
    let stack = TradeSide { gold: 10, item_count: 0, item_kind: 0 };
    let summary = runtime.block_on(async {
        let mut admin = AdminClient::connect(server, 1, 750.0).unwrap();
        admin.grant_all(&players, stack).await.unwrap()
    });
    stop.store(true, Ordering::Relaxed);
    let answered = granter.join().expect("the granter thread");
    assert_eq!((summary.requested, summary.applied, summary.refused, summary.unanswered), (3_000, 3_000, 0, 0), "{summary:?}");
    assert_eq!(summary.sent, 3_000, "under the server's limit nothing is dropped, so nothing is resent");
    assert_eq!(summary.gold, 30_000);
    assert_eq!(answered, 3_000, "each grant answered once");
}
