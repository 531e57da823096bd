//! Batched receives with kernel timestamps, on real loopback sockets: every queued datagram
//! comes back in order with its bytes and a stamp no later than the time it was read, an
//! oversized one is flagged truncated, and an empty socket reads as nothing (not an error).

use mmo_loadtest::net::{ArrivalClock, RX_BATCH, RX_BUF, Readiness, RxBatch, enable_rx_timestamps};
use std::net::UdpSocket;
use std::os::fd::AsRawFd;
use std::time::Instant;

fn pair() -> (UdpSocket, UdpSocket) {
    let rx = UdpSocket::bind("127.0.0.1:0").unwrap();
    let tx = UdpSocket::bind("127.0.0.1:0").unwrap();
    tx.connect(rx.local_addr().unwrap()).unwrap();
    rx.set_nonblocking(true).unwrap();
    enable_rx_timestamps(rx.as_raw_fd()).unwrap();
    (rx, tx)
}

#[test]
fn a_batch_holds_every_queued_datagram_with_its_kernel_stamp() {
    let (rx, tx) = pair();
    let before = Instant::now();
    for i in 0..(RX_BATCH + 3) as u8 {
        tx.send(&[i; 40]).unwrap();
    }
    let mut batch = RxBatch::new();
    let first = batch.recv(rx.as_raw_fd()).unwrap();
    assert_eq!(first, RX_BATCH, "a full batch when more are queued");
    let clock = ArrivalClock::read();
    for k in 0..first {
        let d = batch.get(k);
        assert_eq!(d.bytes, &[k as u8; 40][..], "in order, intact");
        assert!(!d.truncated);
        let at = clock.arrival(d.arrived_realtime);
        assert!(d.arrived_realtime.is_some(), "SO_TIMESTAMPNS stamps loopback datagrams");
        // Microsecond slack for the two clocks being read a few ns apart.
        assert!(at + std::time::Duration::from_millis(1) >= before && at <= clock.now());
    }
    assert_eq!(batch.recv(rx.as_raw_fd()).unwrap(), 3, "the rest on the next call");
    assert_eq!(batch.get(2).bytes[0], (RX_BATCH + 2) as u8);
    assert_eq!(batch.recv(rx.as_raw_fd()).unwrap(), 0, "empty is nothing, not an error");
}

#[test]
fn an_oversized_datagram_is_flagged_truncated() {
    let (rx, tx) = pair();
    tx.send(&vec![7u8; RX_BUF + 100]).unwrap();
    let mut batch = RxBatch::new();
    assert_eq!(batch.recv(rx.as_raw_fd()).unwrap(), 1);
    let d = batch.get(0);
    assert!(d.truncated);
    assert_eq!(d.bytes.len(), RX_BUF);
}

#[test]
fn readiness_reports_each_arrival_once_for_exactly_the_sockets_with_input() {
    let sockets: Vec<(UdpSocket, UdpSocket)> = (0..5).map(|_| pair()).collect();
    let mut r = Readiness::new(8).unwrap();
    for (i, (rx, _)) in sockets.iter().enumerate() {
        r.add(rx.as_raw_fd(), i as u64).unwrap();
    }
    assert_eq!(r.ready().unwrap().count(), 0);
    sockets[1].1.send(b"a").unwrap();
    sockets[4].1.send(b"b").unwrap();
    // Loopback delivery is synchronous with send, so both are queued now.
    let mut got: Vec<u64> = r.ready().unwrap().collect();
    got.sort_unstable();
    assert_eq!(got, vec![1, 4]);
    assert_eq!(r.ready().unwrap().count(), 0, "edge-triggered: each arrival is reported once");
    sockets[1].1.send(b"c").unwrap();
    sockets[4].1.send(b"d").unwrap();
    r.remove(sockets[4].0.as_raw_fd()).unwrap();
    assert_eq!(r.ready().unwrap().collect::<Vec<_>>(), vec![1], "a new arrival is reported again; a removed socket is not");
    let mut batch = RxBatch::new();
    assert_eq!(batch.recv(sockets[1].0.as_raw_fd()).unwrap(), 2, "both of its datagrams are still there to read");
    assert_eq!(r.ready().unwrap().count(), 0);
}
