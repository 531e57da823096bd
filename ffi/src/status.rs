//! Status codes: what every fallible call returns, their names, and the ABI version.

/// Version of this ABI. Bumped on any change to a function signature or record layout.
pub const MMO_ABI_VERSION: u32 = 11;

/// Result of a call: [`MMO_OK`] or an error code in 1001..=1099.
pub type MmoStatus = u32;

/// Success.
pub const MMO_OK: MmoStatus = 0;
/// A required pointer was NULL (or a non-empty slice had a NULL pointer).
pub const MMO_ERR_NULL_POINTER: MmoStatus = 1001;
/// A pointer was not aligned for its type.
pub const MMO_ERR_MISALIGNED_POINTER: MmoStatus = 1002;
/// An output buffer cannot hold the worst case for the batch; nothing was applied.
pub const MMO_ERR_BUFFER_TOO_SMALL: MmoStatus = 1003;
/// The configuration was refused by `CoreConfig::validate`.
pub const MMO_ERR_INVALID_CONFIG: MmoStatus = 1004;
/// An argument is out of range (non-positive amount, length too large, disabled hook).
pub const MMO_ERR_INVALID_ARGUMENT: MmoStatus = 1005;
/// An integer that should name an enum value does not.
pub const MMO_ERR_BAD_ENUM: MmoStatus = 1006;
/// No live player has that id.
pub const MMO_ERR_UNKNOWN_PLAYER: MmoStatus = 1007;
/// The session token does not match the player's.
pub const MMO_ERR_WRONG_SESSION: MmoStatus = 1008;
/// Player capacity is reached.
pub const MMO_ERR_SERVER_FULL: MmoStatus = 1009;
/// A position is outside the world or not finite.
pub const MMO_ERR_OUT_OF_BOUNDS: MmoStatus = 1010;
/// Raid object or burst capacity is reached; nothing was spawned.
pub const MMO_ERR_CAPACITY: MmoStatus = 1011;
/// The caller was built against another ABI version.
pub const MMO_ERR_ABI_MISMATCH: MmoStatus = 1012;
/// The damage target is not a live player or raid object.
pub const MMO_ERR_UNKNOWN_TARGET: MmoStatus = 1013;
/// Attacker and target are of the same faction.
pub const MMO_ERR_FRIENDLY_FIRE: MmoStatus = 1014;
/// The player is live but not in the latest world snapshot (joined after the last tick, or no
/// tick has run yet); its area of interest exists from the next tick.
pub const MMO_ERR_NOT_IN_SNAPSHOT: MmoStatus = 1015;
/// The account is already in a live session (one session per account).
pub const MMO_ERR_ACCOUNT_IN_SESSION: MmoStatus = 1016;
/// The economy's store is open and the join names no account (0).
pub const MMO_ERR_ACCOUNT_REQUIRED: MmoStatus = 1017;
/// The economy's journals are full (its disk is behind): try again.
pub const MMO_ERR_STORAGE_BUSY: MmoStatus = 1018;
/// The economy's store could not be opened, read, or its books did not balance; or it was
/// already open, or players had joined.
pub const MMO_ERR_STORAGE: MmoStatus = 1019;
/// An earlier call panicked while changing this engine's state; it must be recreated.
pub const MMO_ERR_POISONED: MmoStatus = 1098;
/// The core panicked during this call (caught; see [`MMO_ERR_POISONED`]).
pub const MMO_ERR_PANIC: MmoStatus = 1099;

/// The static, NUL-terminated name of a status code (`mmo_status_name`).
pub(crate) fn status_name(status: MmoStatus) -> &'static [u8] {
    match status {
        MMO_OK => b"MMO_OK\0",
        MMO_ERR_NULL_POINTER => b"MMO_ERR_NULL_POINTER\0",
        MMO_ERR_MISALIGNED_POINTER => b"MMO_ERR_MISALIGNED_POINTER\0",
        MMO_ERR_BUFFER_TOO_SMALL => b"MMO_ERR_BUFFER_TOO_SMALL\0",
        MMO_ERR_INVALID_CONFIG => b"MMO_ERR_INVALID_CONFIG\0",
        MMO_ERR_INVALID_ARGUMENT => b"MMO_ERR_INVALID_ARGUMENT\0",
        MMO_ERR_BAD_ENUM => b"MMO_ERR_BAD_ENUM\0",
        MMO_ERR_UNKNOWN_PLAYER => b"MMO_ERR_UNKNOWN_PLAYER\0",
        MMO_ERR_WRONG_SESSION => b"MMO_ERR_WRONG_SESSION\0",
        MMO_ERR_SERVER_FULL => b"MMO_ERR_SERVER_FULL\0",
        MMO_ERR_OUT_OF_BOUNDS => b"MMO_ERR_OUT_OF_BOUNDS\0",
        MMO_ERR_CAPACITY => b"MMO_ERR_CAPACITY\0",
        MMO_ERR_ABI_MISMATCH => b"MMO_ERR_ABI_MISMATCH\0",
        MMO_ERR_UNKNOWN_TARGET => b"MMO_ERR_UNKNOWN_TARGET\0",
        MMO_ERR_FRIENDLY_FIRE => b"MMO_ERR_FRIENDLY_FIRE\0",
        MMO_ERR_NOT_IN_SNAPSHOT => b"MMO_ERR_NOT_IN_SNAPSHOT\0",
        MMO_ERR_ACCOUNT_IN_SESSION => b"MMO_ERR_ACCOUNT_IN_SESSION\0",
        MMO_ERR_ACCOUNT_REQUIRED => b"MMO_ERR_ACCOUNT_REQUIRED\0",
        MMO_ERR_STORAGE_BUSY => b"MMO_ERR_STORAGE_BUSY\0",
        MMO_ERR_STORAGE => b"MMO_ERR_STORAGE\0",
        MMO_ERR_POISONED => b"MMO_ERR_POISONED\0",
        MMO_ERR_PANIC => b"MMO_ERR_PANIC\0",
        _ => b"MMO_UNKNOWN_STATUS\0",
    }
}
