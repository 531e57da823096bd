//! The committed byte vectors (`docs/protocol-vectors-v3.txt`): for each vector, the message
//! its comment line describes encodes to exactly its bytes, and its bytes decode back to that
//! message. A vector this test does not know fails it, so a new vector cannot be skipped.

use crate::common::{Fields, build, hex, vectors};
use mmo_loadtest::protocol::*;
use std::collections::BTreeSet;

#[test]
fn every_vector_encodes_to_its_bytes_and_decodes_to_its_values() {
    let mut unknown = Vec::new();
    let mut types_seen = BTreeSet::new();
    for v in vectors() {
        let fields = Fields::parse(&v.comment);
        let Some((spec, flags)) = build(&v.name, &fields) else {
            unknown.push(format!("{} (line {})", v.name, v.line));
            continue;
        };
        fields.assert_all_used(&v.name);
        let message = spec.message();
        types_seen.insert(message.message_type());

        let mut out = [0xAAu8; STATS_REPLY_MAX];
        let len = encode(&message, flags, &mut out).unwrap_or_else(|e| panic!("{}: encode failed: {e}", v.name));
        assert_eq!(len, message.encoded_len(), "{}: encoded_len", v.name);
        assert_eq!(hex(&out[..len]), hex(&v.bytes), "{}: encoded bytes differ from the vector (line {})", v.name, v.line);

        let decoded = decode(&v.bytes).unwrap_or_else(|e| panic!("{}: decode failed: {e}", v.name));
        assert_eq!(decoded.message, message, "{}: decoded values differ from the comment", v.name);
        assert_eq!(decoded.flags, flags, "{}: decoded flags", v.name);

        let as_server_sees_it = decode_client(&v.bytes);
        if message.message_type().is_client_to_server() {
            assert_eq!(as_server_sees_it, Ok(decoded), "{}: the server's view differs", v.name);
        } else {
            assert_eq!(as_server_sees_it, Err(DecodeError::UnknownType(message.message_type() as u8)), "{}", v.name);
        }
    }
    assert!(unknown.is_empty(), "vectors this test does not handle (add them to tests/suite/common.rs `build`): {unknown:?}");
    let missing: Vec<&str> = MessageType::ALL.iter().filter(|t| !types_seen.contains(t)).map(|t| t.name()).collect();
    assert!(missing.is_empty(), "message types without a vector: {missing:?}");
}

#[test]
fn an_unknown_vector_name_is_not_handled() {
    // The guard above relies on `build` refusing names it does not know.
    assert!(build("move_v2", &Fields::parse("player_id=1")).is_none());
}

#[test]
fn a_comment_value_the_builder_ignores_is_reported() {
    let fields = Fields::parse("nonce=0x1 extra=5");
    let _ = build("join_request", &fields).unwrap();
    assert_eq!(fields.unused(), vec!["extra".to_string()], "an unused comment value must fail the vector test");
}

#[test]
fn comment_parser_reads_lists_strings_and_signs() {
    let f = Fields::parse(r#"a=-5 b=[(1,2.5,3),(0x10,4,5)] c="x y\nz" d=0xff"#);
    assert_eq!(f.i64("a"), -5);
    assert_eq!(f.tuples("b"), vec![vec!["1", "2.5", "3"], vec!["0x10", "4", "5"]]);
    assert_eq!(f.text("c"), "x y\nz");
    assert_eq!(f.u8("d"), 255);
    f.assert_all_used("parser");
}
