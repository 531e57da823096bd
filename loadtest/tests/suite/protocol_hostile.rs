//! Hostile input: the codec never panics and names the right error. Random bytes; every
//! truncation of every committed vector; wrong magic, version, type, length, flags; a
//! non-zero byte in every reserved range; non-finite floats and out-of-range enums; lists
//! with too many entries. A datagram that decodes re-encodes to exactly the same bytes (the
//! codec is canonical), so nothing is lost or invented on the way.

use crate::common::{reserved_ranges, vectors};
use mmo_loadtest::protocol::*;
use proptest::prelude::*;

fn type_of(bytes: &[u8]) -> MessageType {
    MessageType::from_u8(bytes[3]).expect("vectors have known types")
}

/// What the server would say about `bytes`, and what the generic decoder says, for a client
/// type (both) or a server type (`decode` only).
fn both(t: MessageType, bytes: &[u8]) -> (Result<Decoded<'_>, DecodeError>, Option<Result<Decoded<'_>, DecodeError>>) {
    let client = t.is_client_to_server().then(|| decode_client(bytes));
    (decode(bytes), client)
}

fn assert_error(bytes: &[u8], want: DecodeError, what: &str) {
    assert_error_as(type_of(bytes), bytes, want, what)
}

fn assert_error_as(t: MessageType, bytes: &[u8], want: DecodeError, what: &str) {
    let (generic, client) = both(t, bytes);
    assert_eq!(generic.err(), Some(want), "{what}: decode");
    if let Some(client) = client {
        assert_eq!(client.err(), Some(want), "{what}: decode_client");
    }
}

/// Decoding then re-encoding gives the same bytes.
fn assert_canonical(bytes: &[u8]) -> Result<(), TestCaseError> {
    if let Ok(d) = decode(bytes) {
        let mut out = vec![0u8; STATS_REPLY_MAX];
        let len = encode(&d.message, d.flags, &mut out).map_err(|e| TestCaseError::fail(format!("re-encode failed: {e}")))?;
        prop_assert_eq!(&out[..len], bytes);
    }
    Ok(())
}

#[test]
fn every_truncation_of_every_vector_is_truncated() {
    for v in vectors() {
        for len in 0..v.bytes.len() {
            assert_error_as(type_of(&v.bytes), &v.bytes[..len], DecodeError::Truncated, &format!("{} cut to {len} bytes", v.name));
        }
    }
}

#[test]
fn wrong_magic_version_type_and_length_are_named() {
    for v in vectors() {
        let mut b = v.bytes.clone();
        b[0] ^= 0x01;
        assert_error(&b, DecodeError::BadMagic(u16::from_le_bytes([b[0], b[1]])), &format!("{}: magic", v.name));

        for version in [0u8, VERSION + 1, 0xFF] {
            let mut b = v.bytes.clone();
            b[2] = version;
            assert_error(&b, DecodeError::BadVersion(version), &format!("{}: version {version}", v.name));
        }
        // The previous version has its own reason: an old client, not garbage.
        let mut b = v.bytes.clone();
        b[2] = OBSOLETE_VERSION;
        assert_error(&b, DecodeError::ObsoleteVersion, &format!("{}: v1", v.name));

        // Length field one more or one less than the datagram.
        for delta in [1i32, -1] {
            let mut b = v.bytes.clone();
            let field = (u16::from_le_bytes([b[4], b[5]]) as i32 + delta) as u16;
            b[4..6].copy_from_slice(&field.to_le_bytes());
            assert_error(&b, DecodeError::BadLength, &format!("{}: length field {delta:+}", v.name));
        }
        // One byte too many (length field matching the datagram or not).
        let mut b = v.bytes.clone();
        b.push(0);
        assert_error(&b, DecodeError::BadLength, &format!("{}: trailing byte", v.name));
        let n = b.len() as u16;
        b[4..6].copy_from_slice(&n.to_le_bytes());
        assert_error(&b, DecodeError::BadLength, &format!("{}: trailing byte, length field agrees", v.name));

        // Every reserved flag bit.
        for bit in 1..16 {
            let mut b = v.bytes.clone();
            let flags = u16::from_le_bytes([b[6], b[7]]) | (1 << bit);
            b[6..8].copy_from_slice(&flags.to_le_bytes());
            assert_error(&b, DecodeError::BadField("flags"), &format!("{}: flag bit {bit}", v.name));
        }
    }
}

#[test]
fn unknown_types_and_server_types_sent_to_the_server() {
    let v = vectors().into_iter().find(|v| v.name == "move").expect("a move vector");
    for t in 0..=255u8 {
        let mut b = v.bytes.clone();
        b[3] = t;
        match MessageType::from_u8(t) {
            None => {
                assert_eq!(decode(&b).err(), Some(DecodeError::UnknownType(t)), "type {t:#04x}");
                assert_eq!(decode_client(&b).err(), Some(DecodeError::UnknownType(t)), "type {t:#04x}");
            }
            Some(mt) if !mt.is_client_to_server() => {
                assert_eq!(decode_client(&b).err(), Some(DecodeError::UnknownType(t)), "server type {t:#04x} sent to the server")
            }
            Some(_) => {}
        }
    }
}

#[test]
fn a_non_zero_reserved_byte_is_a_bad_field() {
    for v in vectors() {
        for &(from, to) in reserved_ranges(type_of(&v.bytes)) {
            for i in from..to {
                let mut b = v.bytes.clone();
                b[i] = 0x01;
                assert_error(&b, DecodeError::BadField("reserved"), &format!("{}: reserved byte {i}", v.name));
            }
        }
    }
    // Reserved bytes inside list records.
    let v = vectors().into_iter().find(|v| v.name == "move_ack_contacts").unwrap();
    for i in [20 + 13, 20 + 15, 36 + 14] {
        let mut b = v.bytes.clone();
        b[i] = 0x80;
        assert_error(&b, DecodeError::BadField("reserved"), &format!("contact reserved byte {i}"));
    }
    let v = vectors().into_iter().find(|v| v.name == "aoi_snapshot").unwrap();
    for i in [24 + 17, 24 + 19, 44 + 18] {
        let mut b = v.bytes.clone();
        b[i] = 0x80;
        assert_error(&b, DecodeError::BadField("reserved"), &format!("entry reserved byte {i}"));
    }
}

fn with_f32(name: &str, offset: usize, value: f32) -> Vec<u8> {
    let mut b = vectors().into_iter().find(|v| v.name == name).unwrap().bytes;
    b[offset..offset + 4].copy_from_slice(&value.to_le_bytes());
    b
}

fn with_u8(name: &str, offset: usize, value: u8) -> Vec<u8> {
    let mut b = vectors().into_iter().find(|v| v.name == name).unwrap().bytes;
    b[offset] = value;
    b
}

#[test]
fn non_finite_floats_and_out_of_range_enums_are_bad_fields() {
    let floats = [
        ("join_accept", 48, "spawn_x_m"),
        ("join_accept", 52, "spawn_y_m"),
        ("move", 32, "x_m"),
        ("move", 36, "y_m"),
        ("move", 40, "facing_rad"),
        ("raid_trigger", 24, "center_x_m"),
        ("raid_trigger", 28, "center_y_m"),
        ("raid_trigger", 32, "half_extent_m"),
        ("move_ack_contacts", 20 + 8, "contact.distance_m"),
        ("aoi_snapshot", 24 + 8, "entry.x_m"),
        ("aoi_snapshot", 44 + 12, "entry.y_m"),
    ];
    for (name, offset, field) in floats {
        for bad in [f32::NAN, f32::INFINITY, f32::NEG_INFINITY, f32::from_bits(0x7FC0_0001)] {
            assert_error(&with_f32(name, offset, bad), DecodeError::BadField(field), &format!("{name}.{field} = {bad}"));
        }
    }
    let enums: [(&str, usize, &[u8], &str); 9] = [
        ("join_accept", 32, &[11, 0xFF], "status"),
        ("move_ack_rejected", 16, &[7, 0xFF], "result"),
        ("economy_request", 54, &[0, 5, 0xFF], "kind"),
        ("economy_result", 24, &[19, 0xFF], "status"),
        ("economy_result", 25, &[2, 0xFF], "duplicate"),
        ("raid_trigger", 48, &[0, 1, 5, 0xFF], "kind"),
        ("move_ack_contacts", 20 + 12, &[0, 5], "contact.kind"),
        ("aoi_snapshot", 24 + 16, &[0, 5], "entry.kind"),
        // a refused move carries no contacts
        ("move_ack_contacts", 16, &[1, 4], "contact_count"),
    ];
    for (name, offset, values, field) in enums {
        for &value in values {
            assert_error(&with_u8(name, offset, value), DecodeError::BadField(field), &format!("{name}.{field} = {value}"));
        }
    }
}

#[test]
fn lists_over_their_limit_and_non_ascii_text_are_bad_fields() {
    // 33 contacts, correctly sized: over the protocol's cap.
    let mut b = vec![0u8; 20 + 16 * 33];
    b[..8].copy_from_slice(&[0x4d, 0x4f, VERSION, 0x83, 0, 0, 0, 0]);
    let n = b.len() as u16;
    b[4..6].copy_from_slice(&n.to_le_bytes());
    b[17] = 33;
    for c in 0..33 {
        b[20 + 16 * c + 12] = 1;
    }
    assert_eq!(decode(&b).err(), Some(DecodeError::BadField("contact_count")));

    let mut b = vec![0u8; 24 + 20 * 65];
    b[..8].copy_from_slice(&[0x4d, 0x4f, VERSION, 0x84, 0, 0, 0, 0]);
    let n = b.len() as u16;
    b[4..6].copy_from_slice(&n.to_le_bytes());
    b[12..14].copy_from_slice(&65u16.to_le_bytes());
    assert_eq!(decode(&b).err(), Some(DecodeError::BadField("count")));

    let mut b = vectors().into_iter().find(|v| v.name == "stats_reply").unwrap().bytes;
    b[16] = 0xC3;
    assert_eq!(decode(&b).err(), Some(DecodeError::BadField("text")));
}

#[test]
fn oversized_datagrams_are_refused_before_anything_else() {
    // The server refuses anything over 256 bytes before looking at the header.
    for len in [CLIENT_DATAGRAM_MAX + 1, 300, 1500] {
        assert_eq!(decode_client(&vec![0xFFu8; len]).err(), Some(DecodeError::Oversized), "{len} bytes");
    }
    assert_eq!(decode_client(&[0xFFu8; CLIENT_DATAGRAM_MAX]).err(), Some(DecodeError::BadMagic(0xFFFF)));
    assert_eq!(decode(&vec![0u8; STATS_REPLY_MAX + 1]).err(), Some(DecodeError::Oversized));
    // A stats reply is legal up to its cap for the generic decoder.
    let text = "x".repeat(STATS_TEXT_MAX);
    let mut out = vec![0u8; STATS_REPLY_MAX];
    let len = encode(&StatsReply { request_id: 9, text: &text }.into(), Flags::NONE, &mut out).unwrap();
    assert_eq!(len, STATS_REPLY_MAX);
    assert!(decode(&out).is_ok());
}

#[test]
fn each_error_maps_to_its_drop_reason() {
    let cases = [
        (DecodeError::Truncated, "truncated"),
        (DecodeError::Oversized, "oversized"),
        (DecodeError::BadMagic(0), "bad_magic"),
        (DecodeError::BadVersion(3), "bad_version"),
        (DecodeError::ObsoleteVersion, "obsolete_version"),
        (DecodeError::UnknownType(0x0A), "unknown_type"),
        (DecodeError::BadLength, "bad_length"),
        (DecodeError::BadField("reserved"), "bad_field"),
    ];
    for (e, name) in cases {
        assert_eq!(e.drop_reason().name(), name);
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(4096))]

    #[test]
    fn random_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..1400)) {
        let _ = decode_client(&bytes);
        assert_canonical(&bytes)?;
    }

    /// Random bytes behind a valid header for a random type and the right length field: the
    /// decoder gets past the header checks and exercises the body checks.
    #[test]
    fn random_bodies_behind_valid_headers_never_panic(
        t in proptest::sample::select(MessageType::ALL.to_vec()),
        body in proptest::collection::vec(any::<u8>(), 0..700),
        flags in 0u16..4,
    ) {
        let mut b = vec![0x4d, 0x4f, VERSION, t as u8, 0, 0, 0, 0];
        b.extend_from_slice(&body);
        let n = b.len() as u16;
        b[4..6].copy_from_slice(&n.to_le_bytes());
        b[6..8].copy_from_slice(&flags.to_le_bytes());
        let _ = decode_client(&b);
        assert_canonical(&b)?;
    }

    /// A committed vector with a few random bytes changed.
    #[test]
    fn mutated_vectors_never_panic(index in any::<prop::sample::Index>(), edits in proptest::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..4)) {
        let all = vectors();
        let mut b = all[index.index(all.len())].bytes.clone();
        for (at, value) in edits {
            let i = at.index(b.len());
            b[i] = value;
        }
        let _ = decode_client(&b);
        assert_canonical(&b)?;
    }
}

/// The combat, loot and trade replies (and the trade answer): every byte an enum or flag
/// field does not define is that field's `BadField`, every byte it defines decodes.
#[test]
fn every_undefined_byte_of_an_enum_or_flag_field_is_a_bad_field() {
    fn bytes<T: Copy>(all: &[T], as_u8: impl Fn(T) -> u8) -> Vec<u8> {
        all.iter().map(|&v| as_u8(v)).collect()
    }
    let flag = vec![0u8, 1];
    let entity_kinds = bytes(EntityKind::ALL, EntityKind::as_u8);
    let mut target_kinds = entity_kinds.clone();
    target_kinds.push(0); // a refused attack names no kind
    let cases: [(&str, usize, &str, Vec<u8>); 8] = [
        ("attack_result_killed", 12, "refusal", bytes(AttackRefusal::ALL, AttackRefusal::as_u8)),
        ("attack_result_killed", 13, "killed", flag.clone()),
        ("attack_result_refused", 14, "target_kind", target_kinds),
        ("kill_notice", 24, "target_kind", entity_kinds),
        ("loot_result_repeat", 30, "refusal", bytes(LootRefusal::ALL, LootRefusal::as_u8)),
        ("loot_result_refused", 31, "repeat", flag.clone()),
        ("trade_notice_offered", 8, "event", bytes(TradeEvent::ALL, TradeEvent::as_u8)),
        ("trade_answer", 48, "accept", flag),
    ];
    for (name, offset, field, defined) in cases {
        for value in 0..=u8::MAX {
            let b = with_u8(name, offset, value);
            if defined.contains(&value) {
                let (generic, client) = both(type_of(&b), &b);
                assert!(generic.is_ok(), "{name}.{field} = {value}: {:?}", generic.err());
                assert!(client.is_none_or(|c| c.is_ok()), "{name}.{field} = {value}: decode_client");
            } else {
                assert_error(&b, DecodeError::BadField(field), &format!("{name}.{field} = {value}"));
            }
        }
    }
}
