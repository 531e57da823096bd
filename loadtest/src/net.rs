//! UDP sockets for bots and admin: each bound to `127.0.0.1:0` (its own port, so the server
//! sees one address per bot, as it would see one per game client) and connected to the
//! server, so `send`/`recv` need no address and the kernel filters out datagrams from
//! anyone else.

use std::io;
use std::net::{Ipv4Addr, SocketAddrV4, UdpSocket as StdUdpSocket};
use tokio::net::UdpSocket;

/// A non-blocking socket on `127.0.0.1:0` connected to `server`. Must be called inside the
/// tokio runtime.
pub fn connected_socket(server: SocketAddrV4) -> io::Result<UdpSocket> {
    let std = StdUdpSocket::bind(SocketAddrV4::new(Ipv4Addr::LOCALHOST, 0))?;
    std.connect(server)?;
    std.set_nonblocking(true)?;
    UdpSocket::from_std(std)
}

/// Whether a receive error only means "nothing there yet" or that the server is not (yet)
/// listening (an ICMP port unreachable reported on a connected socket): errors a bot
/// counts and rides out rather than a reason to stop.
pub fn is_transient(e: &io::Error) -> bool {
    matches!(e.kind(), io::ErrorKind::WouldBlock | io::ErrorKind::ConnectionRefused | io::ErrorKind::Interrupted | io::ErrorKind::TimedOut)
}
