//! UDP sockets for bots and admin: each bound to a loopback address and port 0 (its own port,
//! so the server sees one address per bot, as it would see one per game client; against a
//! loopback server the bots are spread over [`BOTS_PER_HOST`]-bot groups of loopback
//! addresses, 127.0.0.1, 127.0.0.2, ..., so a run of thousands of bots stays inside the
//! server's per-host session cap as real players on many hosts would) and connected to the
//! server, so `send`/`recv` need no address and the kernel filters out datagrams from
//! anyone else. For the bot driver threads: kernel receive timestamps, batched receives
//! (`recvmmsg`) and a readiness set (`epoll`) polled without waiting.

use std::io;
use std::net::{Ipv4Addr, SocketAddrV4, UdpSocket as StdUdpSocket};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::time::{Duration, Instant};
use tokio::net::UdpSocket;

/// Bots sharing one loopback address: half the server's default `max_sessions_per_host` (64).
pub const BOTS_PER_HOST: usize = 32;

/// A non-blocking socket on `127.0.0.1:0` connected to `server`. Must be called inside the
/// tokio runtime.
pub fn connected_socket(server: SocketAddrV4) -> io::Result<UdpSocket> {
    socket_on(Ipv4Addr::LOCALHOST, server)
}

/// Bot `index`'s socket: against a loopback server, on loopback address
/// `127.0.0.1 + index / BOTS_PER_HOST` (every 127.x.y.z reaches a loopback server on Linux
/// without set-up); otherwise as [`connected_socket`].
pub fn bot_socket(server: SocketAddrV4, index: usize) -> io::Result<UdpSocket> {
    if !server.ip().is_loopback() {
        return connected_socket(server);
    }
    let host = u32::try_from(index / BOTS_PER_HOST).unwrap_or(u32::MAX).min(0x00FF_FFFE);
    socket_on(Ipv4Addr::from(u32::from(Ipv4Addr::LOCALHOST) + host), server)
}

fn socket_on(local: Ipv4Addr, server: SocketAddrV4) -> io::Result<UdpSocket> {
    let std = StdUdpSocket::bind(SocketAddrV4::new(local, 0))?;
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

/// Asks the kernel to stamp each datagram `socket` receives with the time it arrived
/// (`SO_TIMESTAMPNS`, `CLOCK_REALTIME`), read back by [`RxBatch`]. A round trip then ends
/// when the reply reached the machine, not when a busy tester got round to reading it.
pub fn enable_rx_timestamps(fd: RawFd) -> io::Result<()> {
    let on: libc::c_int = 1;
    // SAFETY: `on` outlives the call and its size is passed.
    let rc = unsafe {
        libc::setsockopt(fd, libc::SOL_SOCKET, libc::SO_TIMESTAMPNS, (&raw const on).cast(), size_of::<libc::c_int>() as libc::socklen_t)
    };
    if rc == 0 { Ok(()) } else { Err(io::Error::last_os_error()) }
}

/// Datagrams [`RxBatch::recv`] takes from one socket in one system call.
pub const RX_BATCH: usize = 16;

/// Receive buffer per datagram: the largest reply a bot gets is an `AOI_SNAPSHOT` of 64
/// entries (1,304 bytes); a larger one arrives truncated, is flagged so, and fails to decode.
pub const RX_BUF: usize = 2048;

/// Room for one `SCM_TIMESTAMPNS` control message (a 16-byte header and a 16-byte timespec),
/// in `u64`s so it is aligned for `cmsghdr`.
const CMSG_WORDS: usize = 8;

/// The wall clock now (`CLOCK_REALTIME`), the clock kernel receive timestamps are in.
pub fn realtime_now() -> Duration {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: `ts` is valid and writable for the call.
    unsafe { libc::clock_gettime(libc::CLOCK_REALTIME, &mut ts) };
    Duration::new(ts.tv_sec.max(0) as u64, ts.tv_nsec.clamp(0, 999_999_999) as u32)
}

/// Up to [`RX_BATCH`] datagrams from one socket, each with its kernel receive timestamp,
/// taken with one `recvmmsg`. Buffers are allocated once per driver thread and reused.
pub struct RxBatch {
    bufs: Box<[[u8; RX_BUF]; RX_BATCH]>,
    cmsgs: Box<[[u64; CMSG_WORDS]; RX_BATCH]>,
    iovs: [libc::iovec; RX_BATCH],
    hdrs: [libc::mmsghdr; RX_BATCH],
    received: usize,
}

/// One datagram of an [`RxBatch`].
#[derive(Clone, Copy, Debug)]
pub struct Datagram<'a> {
    /// Its bytes (cut at [`RX_BUF`] if it was larger; see `truncated`).
    pub bytes: &'a [u8],
    /// Whether the kernel cut it to fit the buffer.
    pub truncated: bool,
    /// When it arrived, as `CLOCK_REALTIME` since the Unix epoch, if the kernel stamped it.
    pub arrived_realtime: Option<Duration>,
}

impl Default for RxBatch {
    fn default() -> Self {
        RxBatch::new()
    }
}

impl RxBatch {
    /// Empty buffers.
    pub fn new() -> RxBatch {
        RxBatch {
            bufs: Box::new([[0; RX_BUF]; RX_BATCH]),
            cmsgs: Box::new([[0; CMSG_WORDS]; RX_BATCH]),
            iovs: [libc::iovec { iov_base: std::ptr::null_mut(), iov_len: 0 }; RX_BATCH],
            // SAFETY: an all-zero mmsghdr (null pointers, zero lengths) is a valid value.
            hdrs: unsafe { std::mem::zeroed() },
            received: 0,
        }
    }

    /// Takes what `fd` has queued, up to [`RX_BATCH`] datagrams, without blocking. `Ok(0)`
    /// when nothing is queued.
    pub fn recv(&mut self, fd: RawFd) -> io::Result<usize> {
        self.received = 0;
        for i in 0..RX_BATCH {
            self.iovs[i] = libc::iovec { iov_base: self.bufs[i].as_mut_ptr().cast(), iov_len: RX_BUF };
            // SAFETY: as in `new`, all-zero is a valid msghdr; the pointers set below stay
            // valid while `self` is borrowed mutably, i.e. for the whole call.
            let mut h: libc::msghdr = unsafe { std::mem::zeroed() };
            h.msg_iov = &raw mut self.iovs[i];
            h.msg_iovlen = 1;
            h.msg_control = self.cmsgs[i].as_mut_ptr().cast();
            h.msg_controllen = size_of::<[u64; CMSG_WORDS]>() as _;
            self.hdrs[i] = libc::mmsghdr { msg_hdr: h, msg_len: 0 };
        }
        // SAFETY: every header points into buffers owned by `self` with their true lengths.
        let n = unsafe { libc::recvmmsg(fd, self.hdrs.as_mut_ptr(), RX_BATCH as libc::c_uint, libc::MSG_DONTWAIT, std::ptr::null_mut()) };
        if n < 0 {
            let e = io::Error::last_os_error();
            return if e.kind() == io::ErrorKind::WouldBlock { Ok(0) } else { Err(e) };
        }
        self.received = n as usize;
        debug_assert!(self.received <= RX_BATCH);
        Ok(self.received)
    }

    /// Datagram `i` of the last [`Self::recv`].
    pub fn get(&self, i: usize) -> Datagram<'_> {
        assert!(i < self.received, "datagram {i} of {}", self.received);
        let h = &self.hdrs[i];
        let len = (h.msg_len as usize).min(RX_BUF);
        let truncated = h.msg_hdr.msg_flags & libc::MSG_TRUNC != 0;
        let mut arrived_realtime = None;
        // SAFETY: the header was filled by the kernel in `recv`; CMSG_* walk only within
        // `msg_controllen` of the buffer it points to.
        unsafe {
            let mut c = libc::CMSG_FIRSTHDR(&raw const h.msg_hdr);
            while !c.is_null() {
                if (*c).cmsg_level == libc::SOL_SOCKET && (*c).cmsg_type == libc::SCM_TIMESTAMPNS {
                    let ts: libc::timespec = std::ptr::read_unaligned(libc::CMSG_DATA(c).cast());
                    arrived_realtime = Some(Duration::new(ts.tv_sec.max(0) as u64, ts.tv_nsec.clamp(0, 999_999_999) as u32));
                }
                c = libc::CMSG_NXTHDR(&raw const h.msg_hdr, c);
            }
        }
        Datagram { bytes: &self.bufs[i][..len], truncated, arrived_realtime }
    }
}

/// Converts kernel receive timestamps to [`Instant`]s: one pair of clock readings taken
/// together, and each timestamp placed by its age on the wall clock. Read the clocks again
/// for every batch of reads so a wall-clock step (NTP) is absorbed at once.
#[derive(Clone, Copy, Debug)]
pub struct ArrivalClock {
    now: Instant,
    realtime: Duration,
}

impl ArrivalClock {
    /// Both clocks now.
    pub fn read() -> ArrivalClock {
        ArrivalClock { now: Instant::now(), realtime: realtime_now() }
    }

    /// Both clocks as given (for tests).
    pub fn at(now: Instant, realtime: Duration) -> ArrivalClock {
        ArrivalClock { now, realtime }
    }

    /// The instant `now` stands for.
    pub fn now(&self) -> Instant {
        self.now
    }

    /// When a datagram stamped `arrived` reached the machine; `now` for one without a stamp
    /// or with a stamp in the future (a clock step).
    pub fn arrival(&self, arrived: Option<Duration>) -> Instant {
        match arrived.and_then(|t| self.realtime.checked_sub(t)) {
            Some(age) => self.now.checked_sub(age).unwrap_or(self.now),
            None => self.now,
        }
    }
}

/// Which of many sockets have something to read (`epoll`), asked without waiting: a driver
/// thread sleeps on its timers, not on its sockets. Edge-triggered: a socket is reported once
/// per arrival, so the caller must read it until it is empty (a short `recvmmsg` batch says
/// so); in exchange `epoll_wait` does not re-poll every socket that still holds input, which
/// at 2,000 sockets was a tenth of the tester's CPU.
pub struct Readiness {
    epoll: OwnedFd,
    events: Vec<libc::epoll_event>,
}

impl Readiness {
    /// An empty set reporting at most `batch` ready sockets per [`Self::ready`].
    pub fn new(batch: usize) -> io::Result<Readiness> {
        // SAFETY: plain system call; the returned descriptor is owned below.
        let fd = unsafe { libc::epoll_create1(libc::EPOLL_CLOEXEC) };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: `fd` is a fresh descriptor nothing else owns.
        let epoll = unsafe { OwnedFd::from_raw_fd(fd) };
        Ok(Readiness { epoll, events: vec![libc::epoll_event { events: 0, u64: 0 }; batch.max(1)] })
    }

    /// Watches `fd` for input, reporting it as `token`.
    pub fn add(&self, fd: RawFd, token: u64) -> io::Result<()> {
        let mut ev = libc::epoll_event { events: (libc::EPOLLIN | libc::EPOLLET) as u32, u64: token };
        // SAFETY: `ev` is valid for the call; the kernel copies it.
        if unsafe { libc::epoll_ctl(self.epoll.as_raw_fd(), libc::EPOLL_CTL_ADD, fd, &mut ev) } == 0 {
            Ok(())
        } else {
            Err(io::Error::last_os_error())
        }
    }

    /// Stops watching `fd`.
    pub fn remove(&self, fd: RawFd) -> io::Result<()> {
        let mut ev = libc::epoll_event { events: 0, u64: 0 };
        // SAFETY: as in `add` (the event is ignored by EPOLL_CTL_DEL but must be non-null on
        // old kernels).
        if unsafe { libc::epoll_ctl(self.epoll.as_raw_fd(), libc::EPOLL_CTL_DEL, fd, &mut ev) } == 0 {
            Ok(())
        } else {
            Err(io::Error::last_os_error())
        }
    }

    /// The tokens of sockets with input queued now (at most the batch size; ask again for
    /// more).
    pub fn ready(&mut self) -> io::Result<impl Iterator<Item = u64> + '_> {
        // SAFETY: `events` is valid and writable for `len` entries.
        let n = unsafe { libc::epoll_wait(self.epoll.as_raw_fd(), self.events.as_mut_ptr(), self.events.len() as libc::c_int, 0) };
        let n = if n >= 0 {
            n as usize
        } else {
            let e = io::Error::last_os_error();
            if e.kind() != io::ErrorKind::Interrupted {
                return Err(e);
            }
            0
        };
        Ok(self.events[..n].iter().map(|e: &libc::epoll_event| e.u64))
    }
}
