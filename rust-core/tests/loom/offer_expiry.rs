//! Loom model of the economy's offer-expiry protocol ([`mmo_core::economy`]'s
//! `Home::next_expiry_ms` and `Economy::expire_offers`): an offer is made under its maker's
//! wallet lock and then lowers the home's `next_expiry_ms` (fetch_min) before the lock is let
//! go; the tick's sweep skips the home while `now < next_expiry_ms`, else takes the home's member
//! list, stores `u64::MAX`, visits each wallet under its lock (closing what is due, noting the
//! earliest later timeout) and lowers `next_expiry_ms` by what it noted.
//!
//! In every interleaving of a sweep with an offer made meanwhile, no offer is forgotten: after
//! both, every offer still open has `next_expiry_ms` at or below its timeout, so the next sweep
//! at or after that timeout visits the home and closes it.
//!
//! Run: `RUSTFLAGS="--cfg mmo_loom" cargo test -p mmo-core --release --test loom -- offer_expiry::`

use loom::sync::atomic::{AtomicU64, Ordering};
use loom::sync::{Arc, Mutex};
use loom::thread;

/// One home of two wallets, each with at most one open offer (its timeout, server ms).
struct Home {
    members: Mutex<()>,
    wallets: [Mutex<Option<u64>>; 2],
    next_expiry_ms: AtomicU64,
}

impl Home {
    /// An offer timing out at `expires_ms` from wallet `w`, as `Economy::offer` makes it.
    fn offer(&self, w: usize, expires_ms: u64) {
        let mut wallet = self.wallets[w].lock().unwrap();
        *wallet = Some(expires_ms);
        self.next_expiry_ms.fetch_min(expires_ms, Ordering::AcqRel);
    }

    /// One sweep at `now_ms`, as `Economy::expire_offers` runs it for a home; returns how many
    /// offers it closed.
    fn sweep(&self, now_ms: u64) -> u32 {
        if now_ms < self.next_expiry_ms.load(Ordering::Acquire) {
            return 0;
        }
        let _members = self.members.lock().unwrap();
        self.next_expiry_ms.store(u64::MAX, Ordering::Release);
        let (mut closed, mut next) = (0, u64::MAX);
        for wallet in &self.wallets {
            let mut offer = wallet.lock().unwrap();
            match *offer {
                Some(expires_ms) if now_ms >= expires_ms => {
                    *offer = None;
                    closed += 1;
                }
                Some(expires_ms) => next = next.min(expires_ms),
                None => {}
            }
        }
        self.next_expiry_ms.fetch_min(next, Ordering::AcqRel);
        closed
    }
}

#[test]
fn an_offer_made_during_a_sweep_is_never_forgotten() {
    loom::model(|| {
        // Wallet 0's offer (timeout 10) is due; wallet 1 makes one (timeout 20) while the tick
        // sweeps at 15: it may or may not be seen, but it must not be lost.
        let home = Arc::new(Home {
            members: Mutex::new(()),
            wallets: [Mutex::new(Some(10)), Mutex::new(None)],
            next_expiry_ms: AtomicU64::new(10),
        });
        let maker = {
            let home = Arc::clone(&home);
            thread::spawn(move || home.offer(1, 20))
        };
        let first = home.sweep(15);
        maker.join().unwrap();
        assert_eq!(first, 1, "the due offer closed");
        for wallet in &home.wallets {
            if let Some(expires_ms) = *wallet.lock().unwrap() {
                assert!(home.next_expiry_ms.load(Ordering::Acquire) <= expires_ms, "an open offer the sweeps would skip");
            }
        }
        // The next sweep at or after its timeout closes it.
        assert_eq!(home.sweep(20), 1);
        assert_eq!(home.next_expiry_ms.load(Ordering::Acquire), u64::MAX);
    });
}

#[test]
fn an_offer_made_during_a_sweep_that_finds_another_not_yet_due_keeps_the_earlier_timeout() {
    loom::model(|| {
        // Wallet 0's offer times out at 30 (not due at 15); wallet 1 makes one timing out at
        // 20 during the sweep: afterwards the home must be due again by 20, not 30 (earlier
        // only costs a visit that finds nothing due).
        let home = Arc::new(Home {
            members: Mutex::new(()),
            wallets: [Mutex::new(Some(30)), Mutex::new(None)],
            next_expiry_ms: AtomicU64::new(15),
        });
        let maker = {
            let home = Arc::clone(&home);
            thread::spawn(move || home.offer(1, 20))
        };
        assert_eq!(home.sweep(15), 0);
        maker.join().unwrap();
        assert!(home.next_expiry_ms.load(Ordering::Acquire) <= 20, "the offer timing out at 20 would be skipped");
        assert_eq!(home.sweep(19), 0);
        assert_eq!(home.sweep(20), 1);
        assert!(home.next_expiry_ms.load(Ordering::Acquire) <= 30);
        assert_eq!(home.sweep(30), 1);
    });
}
