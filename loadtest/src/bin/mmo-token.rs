//! `mmo-token`: the backend's side of connect tokens, for operators and tests.
//!
//! - `mmo-token keygen --out-dir DIR [--name NAME]`: a fresh Ed25519 key pair,
//!   `DIR/NAME.pub` (give it to every game server: `mmo-server --token-public-key`) and
//!   `DIR/NAME.secret` (owner-only; it stays with the login or matchmaking service).
//! - `mmo-token mint --secret-key FILE --account N --server ADDR [--server ADDR]... --ttl 30s`:
//!   prints one token in hex.
//! - `mmo-token inspect --public-key FILE TOKEN_HEX`: checks the layout and signature and
//!   prints the claims.

use anyhow::{Context, bail};
use clap::{Parser, Subcommand};
use mmo_loadtest::token::{self, Claims, TOKEN_SIZE, TokenMinter};
use std::net::SocketAddrV4;
use std::path::PathBuf;
use std::time::Duration;

#[derive(Parser)]
#[command(name = "mmo-token", version, about = "Connect tokens for mmo-server: key pairs, minting, inspection")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Writes a fresh key pair: DIR/NAME.pub for game servers, DIR/NAME.secret for the backend.
    Keygen {
        /// Where the two files go (created if missing).
        #[arg(long)]
        out_dir: PathBuf,
        /// The files' base name.
        #[arg(long, default_value = "token")]
        name: String,
    },
    /// Prints a token (hex) for one account.
    Mint {
        /// The backend's private key (`keygen`'s .secret).
        #[arg(long)]
        secret_key: PathBuf,
        /// The account id (non-zero).
        #[arg(long)]
        account: u64,
        /// A game server the token admits to, IPv4:port (1 to 3 of them).
        #[arg(long = "server", required = true)]
        servers: Vec<SocketAddrV4>,
        /// How long the token admits, from now (e.g. 30s, 2m).
        #[arg(long, value_parser = humantime::parse_duration, default_value = "30s")]
        ttl: Duration,
        /// The account's faction.
        #[arg(long, default_value_t = 1)]
        faction: u8,
        /// The token's unique id (random if not given).
        #[arg(long)]
        token_id: Option<u64>,
    },
    /// Checks a token's layout and signature and prints its claims.
    Inspect {
        /// A game server's public key (`keygen`'s .pub).
        #[arg(long)]
        public_key: PathBuf,
        /// The token, hex.
        token: String,
    },
}

fn main() -> anyhow::Result<()> {
    match Cli::parse().command {
        Command::Keygen { out_dir, name } => {
            let (public, secret) = TokenMinter::generate()?.write_key_pair(&out_dir, &name)?;
            println!("public key (game servers): {}", public.display());
            println!("private key (the backend only): {}", secret.display());
        }
        Command::Mint { secret_key, account, servers, ttl, faction, token_id } => {
            let minter = TokenMinter::from_file(&secret_key)?;
            let claims = Claims {
                account_id: account,
                expires_unix_ms: token::unix_now_ms().saturating_add(u64::try_from(ttl.as_millis()).unwrap_or(u64::MAX)),
                token_id: token_id.unwrap_or_else(token::random_token_id),
                faction,
                servers,
            };
            println!("{}", token::hex(&minter.mint(&claims)?));
        }
        Command::Inspect { public_key, token: text } => {
            let key = token::read_public_key(&public_key)?;
            let Some(bytes) = token::parse_hex::<TOKEN_SIZE>(&text) else {
                bail!("a token is {} hex digits", TOKEN_SIZE * 2);
            };
            let claims = token::verify(&key, &bytes).context("the token does not verify")?;
            let now = token::unix_now_ms();
            println!("account_id {}", claims.account_id);
            println!("token_id {:#018x}", claims.token_id);
            println!("faction {}", claims.faction);
            println!("servers {}", claims.servers.iter().map(ToString::to_string).collect::<Vec<_>>().join(" "));
            if claims.expires_unix_ms > now {
                println!("expires_unix_ms {} (in {} ms)", claims.expires_unix_ms, claims.expires_unix_ms - now);
            } else {
                println!("expires_unix_ms {} (expired {} ms ago)", claims.expires_unix_ms, now - claims.expires_unix_ms);
            }
        }
    }
    Ok(())
}
