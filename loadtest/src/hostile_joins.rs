//! The hostile scenario's joins: handshakes that complete the cookie round trip honestly and
//! then present a connect token the server must refuse, one known `JOIN_ACCEPT` status and
//! one server counter per kind (`docs/protocol.md`, "Connect tokens"):
//!
//! | kind | the token | expected status | server counter |
//! |---|---|---|---|
//! | forged | signed with a key the server does not know | 6 bad signature | `joins_refused_token_bad_signature` |
//! | expired | expired a minute ago | 7 expired | `joins_refused_token_expired` |
//! | wrong_server | names another port of the server's address | 8 wrong server | `joins_refused_token_wrong_server` |
//! | malformed | a reserved byte set | 5 malformed | `joins_refused_token_malformed` |
//! | replayed | one that already admitted a session, presented again after it left | 10 token used | `joins_refused_token_used` |
//!
//! Each attack uses its own account and its own bot index (a loopback address apart from the
//! players'), so nothing else in the run moves these counters and the checks can be exact.

use crate::bot::{self, JoinError, JoinPlan, LeaveOutcome};
use crate::protocol::JoinStatus;
use crate::rng::Rng;
use crate::token::TokenMinter;
use std::collections::BTreeMap;
use std::net::SocketAddrV4;
use std::time::Duration;

/// One kind of refused join.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum TokenAttack {
    /// Signed with a key the server does not know.
    Forged,
    /// Expired a minute ago.
    Expired,
    /// Valid for another port of the server's address.
    WrongServer,
    /// A reserved byte set.
    Malformed,
    /// Already used by a session that has left.
    Replayed,
}

impl TokenAttack {
    /// Every kind.
    pub const ALL: [TokenAttack; 5] =
        [TokenAttack::Forged, TokenAttack::Expired, TokenAttack::WrongServer, TokenAttack::Malformed, TokenAttack::Replayed];

    /// What the server must answer.
    pub fn expected(self) -> JoinStatus {
        match self {
            TokenAttack::Forged => JoinStatus::TokenBadSignature,
            TokenAttack::Expired => JoinStatus::TokenExpired,
            TokenAttack::WrongServer => JoinStatus::TokenWrongServer,
            TokenAttack::Malformed => JoinStatus::TokenMalformed,
            TokenAttack::Replayed => JoinStatus::TokenUsed,
        }
    }

    /// The server's counter for it.
    pub fn counter(self) -> &'static str {
        match self {
            TokenAttack::Forged => "joins_refused_token_bad_signature",
            TokenAttack::Expired => "joins_refused_token_expired",
            TokenAttack::WrongServer => "joins_refused_token_wrong_server",
            TokenAttack::Malformed => "joins_refused_token_malformed",
            TokenAttack::Replayed => "joins_refused_token_used",
        }
    }

    /// Its name in checks and reports.
    pub fn name(self) -> &'static str {
        match self {
            TokenAttack::Forged => "forged",
            TokenAttack::Expired => "expired",
            TokenAttack::WrongServer => "wrong_server",
            TokenAttack::Malformed => "malformed",
            TokenAttack::Replayed => "replayed",
        }
    }
}

/// What the attacks sent and were told.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TokenAttackTally {
    /// Refused joins attempted, per kind (a confirm the server answered).
    pub sent: BTreeMap<TokenAttack, u64>,
    /// Of those, answered with the expected status.
    pub refused_as_expected: BTreeMap<TokenAttack, u64>,
    /// Answers other than the expected one (or none), as text, for the report.
    pub surprises: Vec<String>,
}

/// Bot indexes for the attacks: far above any run's players, so their sockets sit on loopback
/// addresses of their own and their accounts are the issuer's base plus these.
const FIRST_INDEX: usize = 10_000_000;

/// Runs `per_kind` attacks of each kind, one after another.
pub async fn run(plan: &JoinPlan, per_kind: u32, rng: &mut Rng) -> TokenAttackTally {
    let mut tally = TokenAttackTally::default();
    let stranger = TokenMinter::generate().expect("the operating system's random source");
    let mut index = FIRST_INDEX;
    for round in 0..per_kind {
        for kind in TokenAttack::ALL {
            index += 1;
            let mut claims = plan.tokens.claims_for(index, plan.faction);
            let token = match kind {
                TokenAttack::Forged => stranger.mint(&claims).expect("valid claims"),
                TokenAttack::Expired => {
                    claims.expires_unix_ms = claims.expires_unix_ms.saturating_sub(plan.tokens.ttl.as_millis() as u64 + 60_000);
                    plan.tokens.mint(&claims)
                }
                TokenAttack::WrongServer => {
                    claims.servers = vec![SocketAddrV4::new(*plan.server.ip(), plan.server.port().wrapping_add(1).max(1))];
                    plan.tokens.mint(&claims)
                }
                TokenAttack::Malformed => {
                    let mut t = plan.tokens.mint(&claims);
                    t[26] = 1; // a reserved byte: refused before the signature is read
                    t
                }
                TokenAttack::Replayed => {
                    let t = plan.tokens.mint(&claims);
                    // An honest session first, then it leaves: the token has admitted one.
                    match bot::join_with_token(index, plan, t, rng).await.0 {
                        Ok(session) => {
                            if bot::leave(&session, 5, Duration::from_millis(300)).await != LeaveOutcome::Acked {
                                tally.surprises.push(format!("replayed #{round}: the honest session's leave was not acknowledged"));
                                continue;
                            }
                        }
                        Err(e) => {
                            tally.surprises.push(format!("replayed #{round}: the honest join failed: {e}"));
                            continue;
                        }
                    }
                    t
                }
            };
            match bot::join_with_token(index, plan, token, rng).await.0 {
                Err(JoinError::Refused(status)) => {
                    *tally.sent.entry(kind).or_default() += 1;
                    if status == kind.expected() {
                        *tally.refused_as_expected.entry(kind).or_default() += 1;
                    } else {
                        tally.surprises.push(format!("{} #{round}: told {status:?}", kind.name()));
                    }
                }
                Ok(_) => {
                    *tally.sent.entry(kind).or_default() += 1;
                    tally.surprises.push(format!("{} #{round}: joined", kind.name()));
                }
                Err(e) => tally.surprises.push(format!("{} #{round}: {e}", kind.name())),
            }
        }
    }
    tally
}
