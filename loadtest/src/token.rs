//! Connect tokens: the credential a game's backend (login or matchmaking) issues and a
//! `JOIN_CONFIRM` carries, so only players the backend vouched for get into `mmo-server`.
//!
//! A token is 128 bytes: 64 bytes of claims (account, expiry, a unique token id, the
//! account's faction, the server addresses it is valid for) and an Ed25519 signature over a
//! context string and those claims (`docs/protocol.md`, "Connect tokens"). The backend holds
//! the private key and mints; a game server holds only the public key and verifies (libsodium
//! in the C++ front), so a stolen server cannot mint. This module is the minting side: the
//! `mmo-token` tool, the load tester's bots and the tests all mint through [`TokenMinter`].
//! [`verify`] is here for `mmo-token inspect` and for the tests that hold both codecs to the
//! same bytes.

use ed25519_dalek::{Signature, Signer, SigningKey, Verifier, VerifyingKey};
use std::fmt::Write as _;
use std::net::{Ipv4Addr, SocketAddrV4};
use std::path::Path;

/// A token's size on the wire.
pub const TOKEN_SIZE: usize = 128;
/// The signed claims' size (the first half of a token).
pub const CLAIMS_SIZE: usize = 64;
/// Most server addresses one token names.
pub const MAX_SERVERS: usize = 3;
/// Prefixed to the claims before signing, so no other Ed25519 message of the same key
/// (another product, another version) can pass for a token.
pub const SIGNING_CONTEXT: &[u8; 20] = b"MMO-CONNECT-TOKEN-v1";

const _: () = assert!(CLAIMS_SIZE + 64 == TOKEN_SIZE);
const _: () = assert!(32 + MAX_SERVERS * 8 <= CLAIMS_SIZE);

/// What a token says. Every field is the backend's word, never the client's.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Claims {
    /// The account (non-zero). One live session per account.
    pub account_id: u64,
    /// When the token stops admitting, milliseconds since the Unix epoch (the server's clock).
    pub expires_unix_ms: u64,
    /// Unique per token (random): a token admits one session, and a server remembers the ids
    /// it used until they expire.
    pub token_id: u64,
    /// The account's side; the server puts the player on it.
    pub faction: u8,
    /// The game servers this token is valid for (1 to [`MAX_SERVERS`]).
    pub servers: Vec<SocketAddrV4>,
}

/// Why a token is not valid (the server's refusal reasons, less those needing its state).
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum TokenError {
    /// Not the documented layout: a reserved byte set, account or token id 0, no server or
    /// more than [`MAX_SERVERS`].
    #[error("malformed token")]
    Malformed,
    /// The signature is not the key's over these claims.
    #[error("bad signature")]
    BadSignature,
}

/// Why claims cannot be minted.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum MintError {
    /// Account 0 or token id 0.
    #[error("the account id and the token id must be non-zero")]
    ZeroId,
    /// No server, or more than [`MAX_SERVERS`].
    #[error("a token names 1 to {MAX_SERVERS} servers, not {0}")]
    ServerCount(usize),
}

impl Claims {
    /// The 64 signed bytes.
    pub fn encode(&self) -> Result<[u8; CLAIMS_SIZE], MintError> {
        if self.account_id == 0 || self.token_id == 0 {
            return Err(MintError::ZeroId);
        }
        if self.servers.is_empty() || self.servers.len() > MAX_SERVERS {
            return Err(MintError::ServerCount(self.servers.len()));
        }
        let mut out = [0u8; CLAIMS_SIZE];
        out[0..8].copy_from_slice(&self.account_id.to_le_bytes());
        out[8..16].copy_from_slice(&self.expires_unix_ms.to_le_bytes());
        out[16..24].copy_from_slice(&self.token_id.to_le_bytes());
        out[24] = self.faction;
        out[25] = self.servers.len() as u8;
        for (i, server) in self.servers.iter().enumerate() {
            let at = 32 + i * 8;
            out[at..at + 4].copy_from_slice(&server.ip().octets());
            out[at + 4..at + 6].copy_from_slice(&server.port().to_le_bytes());
        }
        Ok(out)
    }

    /// Reads the 64 signed bytes, refusing anything [`Claims::encode`] would not write.
    pub fn decode(bytes: &[u8; CLAIMS_SIZE]) -> Result<Claims, TokenError> {
        let u64_at = |at: usize| u64::from_le_bytes(bytes[at..at + 8].try_into().expect("8 bytes"));
        let count = usize::from(bytes[25]);
        let used_end = 32 + count.min(MAX_SERVERS) * 8;
        let reserved_clear = bytes[26..32].iter().all(|&b| b == 0)
            && (0..count.min(MAX_SERVERS)).all(|i| bytes[32 + i * 8 + 6..32 + i * 8 + 8].iter().all(|&b| b == 0))
            && bytes[used_end..].iter().all(|&b| b == 0);
        let claims = Claims {
            account_id: u64_at(0),
            expires_unix_ms: u64_at(8),
            token_id: u64_at(16),
            faction: bytes[24],
            servers: (0..count.min(MAX_SERVERS))
                .map(|i| {
                    let at = 32 + i * 8;
                    let ip = Ipv4Addr::new(bytes[at], bytes[at + 1], bytes[at + 2], bytes[at + 3]);
                    SocketAddrV4::new(ip, u16::from_le_bytes([bytes[at + 4], bytes[at + 5]]))
                })
                .collect(),
        };
        if !reserved_clear || count == 0 || count > MAX_SERVERS || claims.account_id == 0 || claims.token_id == 0 {
            return Err(TokenError::Malformed);
        }
        Ok(claims)
    }
}

fn signed_message(claims: &[u8; CLAIMS_SIZE]) -> [u8; SIGNING_CONTEXT.len() + CLAIMS_SIZE] {
    let mut m = [0u8; SIGNING_CONTEXT.len() + CLAIMS_SIZE];
    m[..SIGNING_CONTEXT.len()].copy_from_slice(SIGNING_CONTEXT);
    m[SIGNING_CONTEXT.len()..].copy_from_slice(claims);
    m
}

/// The backend's signing side: a private key that mints tokens.
pub struct TokenMinter {
    key: SigningKey,
}

impl TokenMinter {
    /// A minter for the private key whose 32-byte seed this is.
    pub fn from_seed(seed: [u8; 32]) -> TokenMinter {
        TokenMinter { key: SigningKey::from_bytes(&seed) }
    }

    /// A fresh key pair from the operating system's random source.
    pub fn generate() -> std::io::Result<TokenMinter> {
        let mut seed = [0u8; 32];
        getrandom::fill(&mut seed).map_err(|e| std::io::Error::other(e.to_string()))?;
        Ok(TokenMinter::from_seed(seed))
    }

    /// Reads a private key file (`mmo-token keygen`'s `.secret`: the seed in hex).
    pub fn from_file(path: &Path) -> anyhow::Result<TokenMinter> {
        let text = std::fs::read_to_string(path).map_err(|e| anyhow::anyhow!("reading the token private key {}: {e}", path.display()))?;
        let seed = parse_hex::<32>(&text).ok_or_else(|| anyhow::anyhow!("{}: not a token private key (64 hex digits)", path.display()))?;
        Ok(TokenMinter::from_seed(seed))
    }

    /// The seed (what the `.secret` file holds).
    pub fn seed(&self) -> [u8; 32] {
        self.key.to_bytes()
    }

    /// The public key a game server verifies with (what the `.pub` file holds).
    pub fn public_key(&self) -> [u8; 32] {
        self.key.verifying_key().to_bytes()
    }

    /// Signs the claims into a token.
    pub fn mint(&self, claims: &Claims) -> Result<[u8; TOKEN_SIZE], MintError> {
        let body = claims.encode()?;
        let signature = self.key.sign(&signed_message(&body));
        let mut out = [0u8; TOKEN_SIZE];
        out[..CLAIMS_SIZE].copy_from_slice(&body);
        out[CLAIMS_SIZE..].copy_from_slice(&signature.to_bytes());
        Ok(out)
    }

    /// Writes `<dir>/<name>.pub` (readable by all) and `<dir>/<name>.secret` (owner only), each
    /// one line of hex. Refuses to replace an existing file.
    pub fn write_key_pair(&self, dir: &Path, name: &str) -> anyhow::Result<(std::path::PathBuf, std::path::PathBuf)> {
        use std::io::Write as _;
        use std::os::unix::fs::OpenOptionsExt as _;
        std::fs::create_dir_all(dir).map_err(|e| anyhow::anyhow!("creating {}: {e}", dir.display()))?;
        let public = dir.join(format!("{name}.pub"));
        let secret = dir.join(format!("{name}.secret"));
        for (path, bytes, mode) in [(&secret, self.seed(), 0o600), (&public, self.public_key(), 0o644)] {
            let mut f = std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .mode(mode)
                .open(path)
                .map_err(|e| anyhow::anyhow!("creating {}: {e}", path.display()))?;
            writeln!(f, "{}", hex(&bytes)).map_err(|e| anyhow::anyhow!("writing {}: {e}", path.display()))?;
        }
        Ok((public, secret))
    }
}

/// The load tester's stand-in for a login service: mints each bot's connect token.
pub struct Issuer {
    minter: TokenMinter,
    /// Bot `i` plays account `account_base + i`.
    pub account_base: u64,
    /// The game server the tokens name.
    pub server: SocketAddrV4,
    /// How long each token admits, from when it is minted.
    pub ttl: std::time::Duration,
}

impl Issuer {
    /// An issuer for accounts `account_base + i` (non-zero), valid for `server`.
    pub fn new(minter: TokenMinter, account_base: u64, server: SocketAddrV4, ttl: std::time::Duration) -> Issuer {
        Issuer { minter, account_base: account_base.max(1), server, ttl }
    }

    /// A fresh token (a new token id) for bot `index`'s account, on `faction`'s side.
    pub fn token_for(&self, index: usize, faction: u8) -> [u8; TOKEN_SIZE] {
        self.mint(&self.claims_for(index, faction))
    }

    /// The claims [`Issuer::token_for`] signs, for a caller to change before [`Issuer::mint`].
    pub fn claims_for(&self, index: usize, faction: u8) -> Claims {
        Claims {
            account_id: self.account_base.wrapping_add(index as u64).max(1),
            expires_unix_ms: unix_now_ms().saturating_add(self.ttl.as_millis() as u64),
            token_id: random_token_id(),
            faction,
            servers: vec![self.server],
        }
    }

    /// Signs any claims with this issuer's key.
    pub fn mint(&self, claims: &Claims) -> [u8; TOKEN_SIZE] {
        self.minter.mint(claims).expect("an account id and a token id that are non-zero, one to three servers")
    }
}

/// Reads a public key file (`mmo-token keygen`'s `.pub`).
pub fn read_public_key(path: &Path) -> anyhow::Result<[u8; 32]> {
    let text = std::fs::read_to_string(path).map_err(|e| anyhow::anyhow!("reading the token public key {}: {e}", path.display()))?;
    parse_hex::<32>(&text).ok_or_else(|| anyhow::anyhow!("{}: not a token public key (64 hex digits)", path.display()))
}

/// Checks a token's layout and signature (not its expiry or server: those need a clock and an
/// address, and the server checks them).
pub fn verify(public_key: &[u8; 32], token: &[u8; TOKEN_SIZE]) -> Result<Claims, TokenError> {
    let body: &[u8; CLAIMS_SIZE] = token[..CLAIMS_SIZE].try_into().expect("64 bytes");
    let claims = Claims::decode(body)?;
    let key = VerifyingKey::from_bytes(public_key).map_err(|_| TokenError::BadSignature)?;
    let signature = Signature::from_bytes(token[CLAIMS_SIZE..].try_into().expect("64 bytes"));
    key.verify(&signed_message(body), &signature).map_err(|_| TokenError::BadSignature)?;
    Ok(claims)
}

/// Lower-case hex.
pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().fold(String::with_capacity(bytes.len() * 2), |mut s, b| {
        let _ = write!(s, "{b:02x}");
        s
    })
}

/// Parses hex into exactly `N` bytes (surrounding whitespace ignored).
pub fn parse_hex<const N: usize>(text: &str) -> Option<[u8; N]> {
    let text = text.trim();
    if text.len() != N * 2 || !text.is_ascii() {
        return None;
    }
    let mut out = [0u8; N];
    for (i, byte) in out.iter_mut().enumerate() {
        *byte = u8::from_str_radix(&text[i * 2..i * 2 + 2], 16).ok()?;
    }
    Some(out)
}

/// Milliseconds since the Unix epoch now.
pub fn unix_now_ms() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_millis() as u64)
}

/// A random non-zero token id.
pub fn random_token_id() -> u64 {
    loop {
        let mut b = [0u8; 8];
        getrandom::fill(&mut b).expect("the operating system's random source");
        let id = u64::from_le_bytes(b);
        if id != 0 {
            return id;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn claims() -> Claims {
        Claims {
            account_id: 42,
            expires_unix_ms: 1_800_000_000_000,
            token_id: 0x1122_3344_5566_7788,
            faction: 1,
            servers: vec!["127.0.0.1:4000".parse().unwrap(), "10.1.2.3:65535".parse().unwrap()],
        }
    }

    #[test]
    fn a_minted_token_verifies_and_reads_back_its_claims() {
        let minter = TokenMinter::from_seed([7; 32]);
        let token = minter.mint(&claims()).unwrap();
        assert_eq!(verify(&minter.public_key(), &token), Ok(claims()));
    }

    #[test]
    fn any_flipped_bit_is_refused() {
        let minter = TokenMinter::from_seed([7; 32]);
        let token = minter.mint(&claims()).unwrap();
        for bit in 0..TOKEN_SIZE * 8 {
            let mut t = token;
            t[bit / 8] ^= 1 << (bit % 8);
            assert!(verify(&minter.public_key(), &t).is_err(), "bit {bit} flipped still verifies");
        }
    }

    #[test]
    fn another_key_is_a_bad_signature() {
        let token = TokenMinter::from_seed([7; 32]).mint(&claims()).unwrap();
        assert_eq!(verify(&TokenMinter::from_seed([8; 32]).public_key(), &token), Err(TokenError::BadSignature));
    }

    #[test]
    fn malformed_layouts_are_refused_before_the_signature() {
        let minter = TokenMinter::from_seed([7; 32]);
        let token = minter.mint(&claims()).unwrap();
        for (at, value) in [(25, 0u8), (25, 4), (26, 1), (31, 1), (38, 1), (48, 1), (63, 1)] {
            let mut t = token;
            t[at] = value;
            assert_eq!(verify(&minter.public_key(), &t), Err(TokenError::Malformed), "byte {at} = {value}");
        }
        let mut zero_account = token;
        zero_account[..8].fill(0);
        assert_eq!(verify(&minter.public_key(), &zero_account), Err(TokenError::Malformed));
    }

    #[test]
    fn minting_refuses_what_a_server_would_refuse() {
        let minter = TokenMinter::from_seed([7; 32]);
        assert_eq!(minter.mint(&Claims { account_id: 0, ..claims() }), Err(MintError::ZeroId));
        assert_eq!(minter.mint(&Claims { token_id: 0, ..claims() }), Err(MintError::ZeroId));
        assert_eq!(minter.mint(&Claims { servers: vec![], ..claims() }), Err(MintError::ServerCount(0)));
        let four = vec!["127.0.0.1:1".parse().unwrap(); 4];
        assert_eq!(minter.mint(&Claims { servers: four, ..claims() }), Err(MintError::ServerCount(4)));
    }

    #[test]
    fn key_files_round_trip_and_are_never_overwritten() {
        let dir = std::env::temp_dir().join(format!("mmo-token-test-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let minter = TokenMinter::from_seed([9; 32]);
        let (public, secret) = minter.write_key_pair(&dir, "k").unwrap();
        assert_eq!(read_public_key(&public).unwrap(), minter.public_key());
        assert_eq!(TokenMinter::from_file(&secret).unwrap().seed(), [9; 32]);
        use std::os::unix::fs::PermissionsExt as _;
        assert_eq!(std::fs::metadata(&secret).unwrap().permissions().mode() & 0o777, 0o600);
        assert!(minter.write_key_pair(&dir, "k").is_err(), "an existing key pair is kept");
        std::fs::write(&public, "not hex\n").unwrap();
        assert!(read_public_key(&public).is_err());
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn the_committed_vector_is_what_minting_produces() {
        // docs/connect-token-vectors.txt: the C++ verifier accepts the same bytes.
        let text = include_str!("../../docs/connect-token-vectors.txt");
        let value = |name: &str| {
            text.lines()
                .find_map(|l| l.strip_prefix(name).and_then(|rest| rest.strip_prefix(' ')))
                .unwrap_or_else(|| panic!("{name} in the vectors"))
        };
        let minter = TokenMinter::from_seed(parse_hex::<32>(value("secret_seed")).unwrap());
        assert_eq!(hex(&minter.public_key()), value("public_key"));
        let claims = Claims {
            account_id: 42,
            expires_unix_ms: 1_800_000_000_000,
            token_id: 0x1122_3344_5566_7788,
            faction: 2,
            servers: vec!["127.0.0.1:4000".parse().unwrap()],
        };
        let token = minter.mint(&claims).unwrap();
        assert_eq!(hex(&token), value("token"));
        assert_eq!(verify(&minter.public_key(), &token), Ok(claims));
    }

    #[test]
    fn hex_parses_only_exact_lengths() {
        assert_eq!(parse_hex::<2>(" 0aFf\n"), Some([0x0a, 0xff]));
        assert_eq!(parse_hex::<2>("0aF"), None);
        assert_eq!(parse_hex::<2>("0aFfe1"), None);
        assert_eq!(parse_hex::<2>("zz00"), None);
        assert_eq!(parse_hex::<1>("é0"), None);
    }
}
