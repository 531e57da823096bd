//! Property tests of the codec: every message of every type, with arbitrary field values and
//! flags, encodes to exactly `encoded_len` bytes and decodes back to itself; the server's view
//! (`decode_client`) accepts every client message; a buffer one byte short is refused.

use mmo_loadtest::protocol::*;
use proptest::prelude::*;

fn finite() -> impl Strategy<Value = f32> {
    prop_oneof![
        -1.0e6f32..1.0e6f32,
        Just(0.0f32),
        Just(-0.0f32),
        Just(f32::MAX),
        Just(f32::MIN),
        Just(f32::MIN_POSITIVE),
        Just(f32::EPSILON),
        // subnormals are finite too
        Just(1.0e-40f32),
    ]
}

fn flags() -> impl Strategy<Value = Flags> {
    prop_oneof![Just(Flags::NONE), Just(Flags::RETRANSMIT)]
}

fn pick<T: Copy + std::fmt::Debug + 'static>(all: &'static [T]) -> impl Strategy<Value = T> {
    proptest::sample::select(all)
}

fn entity_kind() -> impl Strategy<Value = EntityKind> {
    pick(EntityKind::ALL)
}

fn contact() -> impl Strategy<Value = Contact> {
    (any::<u64>(), finite(), entity_kind()).prop_map(|(other_id, distance_m, kind)| Contact { other_id, distance_m, kind })
}

fn aoi_entry() -> impl Strategy<Value = AoiEntry> {
    (any::<u64>(), finite(), finite(), entity_kind()).prop_map(|(entity_id, x_m, y_m, kind)| AoiEntry { entity_id, x_m, y_m, kind })
}

/// Every fixed-size message type.
fn fixed_message() -> impl Strategy<Value = Message<'static>> {
    prop_oneof![
        any::<u64>().prop_map(|nonce| JoinRequest { nonce }.into()),
        (any::<u64>(), any::<u32>(), any::<u64>()).prop_map(|(nonce, period, cookie)| JoinChallenge { nonce, period, cookie }.into()),
        (any::<u64>(), any::<u32>(), any::<u64>(), any::<[u8; 32]>(), any::<[u8; 32]>(), any::<[u8; 32]>(), any::<[u8; 32]>()).prop_map(
            |(nonce, period, cookie, a, b, c, d)| {
                let token = std::array::from_fn(|i| [a, b, c, d][i / 32][i % 32]);
                JoinConfirm { nonce, period, cookie, token }.into()
            }
        ),
        (any::<u64>(), any::<u64>(), any::<u64>(), pick(JoinStatus::ALL), any::<u8>(), any::<u32>(), any::<u64>(), finite(), finite())
            .prop_map(|(nonce, player_id, session_token, status, faction, tick_ms, server_time_ms, spawn_x_m, spawn_y_m)| JoinAccept {
                nonce,
                player_id,
                session_token,
                status,
                faction,
                tick_ms,
                server_time_ms,
                spawn_x_m,
                spawn_y_m,
            }
            .into()),
        (any::<u64>(), any::<u64>(), any::<u32>(), any::<u32>(), finite(), finite(), finite(), any::<[u8; 32]>()).prop_map(
            |(player_id, session_token, sequence, client_time_ms, x_m, y_m, facing_rad, payload)| Move {
                player_id,
                session_token,
                sequence,
                client_time_ms,
                x_m,
                y_m,
                facing_rad,
                payload
            }
            .into()
        ),
        (any::<u64>(), any::<u64>(), any::<u64>(), any::<u64>(), any::<i64>(), any::<i32>(), any::<u16>(), pick(EconomyKind::ALL))
            .prop_map(|(player_id, session_token, transaction_id, counterparty_id, gold, item_count, item_kind, kind)| EconomyRequest {
                player_id,
                session_token,
                transaction_id,
                counterparty_id,
                gold,
                item_count,
                item_kind,
                kind
            }
            .into()),
        (any::<u64>(), any::<u64>(), pick(EconomyStatus::ALL), any::<bool>()).prop_map(
            |(transaction_id, gold_balance, status, duplicate)| EconomyResult { transaction_id, gold_balance, status, duplicate }.into()
        ),
        (any::<u64>(), any::<u64>(), any::<u32>()).prop_map(|(player_id, session_token, sequence)| Leave {
            player_id,
            session_token,
            sequence
        }
        .into()),
        any::<u64>().prop_map(|player_id| LeaveAck { player_id }.into()),
        any::<u64>().prop_map(|client_time_us| Ping { client_time_us }.into()),
        (any::<u64>(), any::<u64>()).prop_map(|(client_time_us, server_time_ms)| Pong { client_time_us, server_time_ms }.into()),
        (
            any::<u64>(),
            any::<u32>(),
            any::<u32>(),
            finite(),
            finite(),
            finite(),
            any::<u32>(),
            any::<i32>(),
            any::<u32>(),
            pick(&[EntityKind::Add, EntityKind::Projectile, EntityKind::Loot]),
            any::<u8>()
        )
            .prop_map(
                |(admin_key, request_id, count, center_x_m, center_y_m, half_extent_m, lifetime_ms, hp, seed, kind, faction)| {
                    RaidTrigger {
                        admin_key,
                        request_id,
                        count,
                        center_x_m,
                        center_y_m,
                        half_extent_m,
                        lifetime_ms,
                        hp,
                        seed,
                        kind,
                        faction,
                    }
                    .into()
                }
            ),
        (any::<u32>(), any::<u32>(), any::<u32>(), any::<u32>(), any::<u32>(), any::<u64>()).prop_map(
            |(request_id, status, spawned, cells, expires_tick, spawn_ns)| RaidResult {
                request_id,
                status,
                spawned,
                cells,
                expires_tick,
                spawn_ns
            }
            .into()
        ),
        (any::<u64>(), any::<u32>()).prop_map(|(admin_key, request_id)| StatsRequest { admin_key, request_id }.into()),
    ]
}

/// Encodes, checks the length and the one-byte-short refusal, decodes, and compares.
fn round_trip(message: &Message<'_>, flags: Flags) -> Result<(), TestCaseError> {
    let mut out = vec![0x5Au8; STATS_REPLY_MAX + 1];
    let len = encode(message, flags, &mut out).map_err(|e| TestCaseError::fail(format!("encode: {e}")))?;
    prop_assert_eq!(len, message.encoded_len());
    prop_assert_eq!(u16::from_le_bytes([out[4], out[5]]) as usize, len, "length field");
    let decoded = decode(&out[..len]).map_err(|e| TestCaseError::fail(format!("decode: {e}")))?;
    prop_assert_eq!(decoded.message, *message);
    prop_assert_eq!(decoded.flags, flags);
    if message.message_type().is_client_to_server() {
        prop_assert_eq!(decode_client(&out[..len]), Ok(decoded));
        prop_assert!(len <= CLIENT_DATAGRAM_MAX);
    }
    let mut short = vec![0u8; len - 1];
    prop_assert_eq!(encode(message, flags, &mut short), Err(EncodeError::BufferTooSmall { needed: len }));
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2048))]

    #[test]
    fn fixed_messages_round_trip(message in fixed_message(), flags in flags()) {
        round_trip(&message, flags)?;
    }

    #[test]
    fn move_acks_round_trip(
        sequence in any::<u32>(),
        client_time_ms in any::<u32>(),
        result in pick(MoveResult::ALL),
        contacts in proptest::collection::vec(contact(), 0..=MOVE_ACK_CONTACTS_MAX),
        flags in flags(),
    ) {
        let contacts = if result == MoveResult::Applied { contacts } else { Vec::new() };
        let ack = MoveAck { sequence, client_time_ms, result, contacts: WireList::from_items(&contacts) };
        round_trip(&ack.into(), flags)?;
    }

    #[test]
    fn aoi_snapshots_round_trip(
        tick in any::<u32>(),
        server_time_ms in any::<u64>(),
        entries in proptest::collection::vec(aoi_entry(), 0..=AOI_ENTRIES_MAX),
        flags in flags(),
    ) {
        let snapshot = AoiSnapshot { tick, server_time_ms, entries: WireList::from_items(&entries) };
        round_trip(&snapshot.into(), flags)?;
    }

    #[test]
    fn stats_replies_round_trip(request_id in any::<u32>(), text in "[ -~\n]{0,600}", flags in flags()) {
        round_trip(&StatsReply { request_id, text: &text }.into(), flags)?;
    }
}

#[test]
fn the_largest_lists_round_trip_and_one_more_is_refused() {
    let contacts = vec![Contact { other_id: 7, distance_m: 1.5, kind: EntityKind::Add }; MOVE_ACK_CONTACTS_MAX + 1];
    let full = MoveAck {
        sequence: 1,
        client_time_ms: 2,
        result: MoveResult::Applied,
        contacts: WireList::from_items(&contacts[..MOVE_ACK_CONTACTS_MAX]),
    };
    round_trip(&full.into(), Flags::NONE).unwrap();
    let over = MoveAck { contacts: WireList::from_items(&contacts), ..full };
    let mut out = [0u8; 2048];
    assert!(matches!(encode(&over.into(), Flags::NONE, &mut out), Err(EncodeError::TooLong { max: MOVE_ACK_CONTACTS_MAX, .. })));

    let entries = vec![AoiEntry { entity_id: 1, x_m: 1.0, y_m: 2.0, kind: EntityKind::Loot }; AOI_ENTRIES_MAX + 1];
    let full = AoiSnapshot { tick: 1, server_time_ms: 2, entries: WireList::from_items(&entries[..AOI_ENTRIES_MAX]) };
    round_trip(&full.into(), Flags::NONE).unwrap();
    assert_eq!(Message::from(full).encoded_len(), 24 + 20 * 64);
    let over = AoiSnapshot { entries: WireList::from_items(&entries), ..full };
    assert!(matches!(encode(&over.into(), Flags::NONE, &mut out), Err(EncodeError::TooLong { max: AOI_ENTRIES_MAX, .. })));

    let text = "a".repeat(STATS_TEXT_MAX);
    round_trip(&StatsReply { request_id: 1, text: &text }.into(), Flags::NONE).unwrap();
    let text = "a".repeat(STATS_TEXT_MAX + 1);
    let mut big = vec![0u8; STATS_REPLY_MAX * 2];
    assert!(matches!(
        encode(&StatsReply { request_id: 1, text: &text }.into(), Flags::NONE, &mut big),
        Err(EncodeError::TooLong { field: "text", .. })
    ));
    assert_eq!(
        encode(&StatsReply { request_id: 1, text: "caf\u{e9}" }.into(), Flags::NONE, &mut big),
        Err(EncodeError::InvalidField("text"))
    );
}

#[test]
fn a_raid_of_players_and_non_finite_floats_are_refused_by_encode() {
    let trigger = RaidTrigger {
        admin_key: 1,
        request_id: 2,
        count: 3,
        center_x_m: 1.0,
        center_y_m: 1.0,
        half_extent_m: 1.0,
        lifetime_ms: 1,
        hp: 1,
        seed: 1,
        kind: EntityKind::Player,
        faction: 0,
    };
    let mut out = [0u8; 64];
    assert_eq!(encode(&trigger.into(), Flags::NONE, &mut out), Err(EncodeError::InvalidField("kind")));
    let trigger = RaidTrigger { kind: EntityKind::Add, half_extent_m: f32::INFINITY, ..trigger };
    assert_eq!(encode(&trigger.into(), Flags::NONE, &mut out), Err(EncodeError::InvalidField("half_extent_m")));
    let accept = JoinAccept {
        nonce: 1,
        player_id: 1,
        session_token: 1,
        status: JoinStatus::Joined,
        faction: 1,
        tick_ms: 50,
        server_time_ms: 1,
        spawn_x_m: f32::NEG_INFINITY,
        spawn_y_m: 0.0,
    };
    assert_eq!(encode(&accept.into(), Flags::NONE, &mut out), Err(EncodeError::InvalidField("spawn_x_m")));
    let entries = [AoiEntry { entity_id: 1, x_m: f32::NAN, y_m: 0.0, kind: EntityKind::Player }];
    let snapshot = AoiSnapshot { tick: 1, server_time_ms: 1, entries: WireList::from_items(&entries) };
    let mut big = [0u8; 128];
    assert_eq!(encode(&snapshot.into(), Flags::NONE, &mut big), Err(EncodeError::InvalidField("entry.x_m")));
}
