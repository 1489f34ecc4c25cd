use std::cell::Cell;
use std::collections::BTreeMap;

use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

use crate::storage::record::{read, read_naming};

#[derive(Debug, PartialEq, Deserialize)]
struct Inner {
    n: u64,
    #[serde(default)]
    label: Option<String>,
}

#[derive(Debug, PartialEq, Deserialize)]
#[serde(rename_all = "snake_case")]
enum Kind {
    Plain,
    Wrapped(Inner),
    Pair(u8, i64),
    Named { x: bool },
}

#[derive(Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
struct Outer {
    inner: Inner,
    list: Vec<Inner>,
    kinds: Vec<Kind>,
    map: BTreeMap<String, Value>,
    pair: (u32, String),
    maybe: Option<Box<Outer>>,
    ratio: f64,
    signed: i32,
    bytes: Vec<u8>,
}

/// Reads `value` as `T` here and through `serde_json`'s `&Value`: both read it, to
/// the same value, or neither does.
fn same<T: DeserializeOwned + PartialEq + std::fmt::Debug>(value: Value) -> Option<T> {
    let ours = read::<T>(&value);
    let theirs = T::deserialize(&value);
    match (ours, theirs) {
        (Ok(a), Ok(b)) => {
            assert_eq!(a, b, "{value}");
            Some(a)
        }
        (Err(_), Err(_)) => None,
        (a, b) => panic!("{value}: ours {a:?}, serde_json's {b:?}"),
    }
}

fn outer() -> Value {
    json!({
        "inner": {"n": 1, "label": "a", "extra": [1, 2]},
        "list": [{"n": 2}, {"n": 3, "label": null}],
        "kinds": ["plain", {"wrapped": {"n": 4}}, {"pair": [7, -9]}, {"named": {"x": true}}],
        "map": {"k": [1, {"deep": null}], "z": 1.5},
        "pair": [5, "five"],
        "maybe": null,
        "ratio": 0.25,
        "signed": -3,
        "bytes": [0, 255],
    })
}

#[test]
fn test_reads_what_serde_json_reads() {
    let mut nested = outer();
    nested["maybe"] = outer();
    let read = same::<Outer>(nested).expect("reads");
    assert_eq!(
        read.maybe.expect("nested").inner.label.as_deref(),
        Some("a")
    );
    same::<Value>(outer()).expect("any value");
    same::<u64>(json!(u64::MAX)).expect("u64");
    same::<i64>(json!(i64::MIN)).expect("i64");
    same::<Option<u8>>(json!(null)).expect("none");
    same::<char>(json!("x")).expect("char");
    same::<()>(json!(null)).expect("unit");
    // What neither reads.
    for (field, bad) in [
        ("signed", json!(1.5)),
        ("signed", json!(u64::MAX)),
        ("pair", json!([5])),
        ("pair", json!([5, "five", 6])),
        ("kinds", json!([{"plain": 1}])),
        ("kinds", json!([{"wrapped": {"n": 1}, "plain": null}])),
        ("kinds", json!(["wrapped"])),
        ("kinds", json!(["missing"])),
        ("list", json!({"n": 1})),
        ("bytes", json!([256])),
        ("map", json!([])),
    ] {
        let mut value = outer();
        value[field] = bad;
        assert_eq!(same::<Outer>(value), None, "{field}");
    }
    let mut unknown = outer();
    unknown["surprise"] = json!(1);
    assert_eq!(same::<Outer>(unknown), None, "deny_unknown_fields holds");
}

#[test]
fn test_a_struct_is_an_object_only() {
    // `serde_json` reads a struct from an array of its fields; this reader does not
    // compile that path, and says what it got.
    let positional = json!([1, "a"]);
    assert!(Inner::deserialize(&positional).is_ok());
    let err = read::<Inner>(&positional).expect_err("an array is no struct");
    assert!(err.to_string().contains("invalid type: sequence"), "{err}");
    let err = read::<Inner>(&json!(2.5)).expect_err("a number is no struct");
    assert!(err.to_string().contains("floating point"), "{err}");
}

#[test]
fn test_a_failure_inside_a_top_level_member_is_named() {
    // Inside a member's value, at any depth: that member, with the error reading the
    // member's value alone gives.
    for (field, bad) in [
        ("signed", json!(1.5)),
        ("inner", json!({"n": "one"})),
        ("kinds", json!([{"wrapped": {"n": -1}}])),
        ("maybe", json!({"inner": 1})),
    ] {
        let mut value = outer();
        value[field] = bad.clone();
        let at = Cell::new(None);
        let err = read_naming::<Outer>(&value, &at).expect_err(field);
        assert_eq!(at.get(), Some(field), "{err}");
        let alone = match field {
            "signed" => read::<i32>(&bad).map(drop),
            "inner" => read::<Inner>(&bad).map(drop),
            "kinds" => read::<Vec<Kind>>(&bad).map(drop),
            _ => read::<Option<Box<Outer>>>(&bad).map(drop),
        };
        assert_eq!(err.to_string(), alone.expect_err(field).to_string());
    }
    // Not inside a member: an unknown or a missing member names none, even after
    // members that did read.
    let mut unknown = outer();
    unknown["surprise"] = json!(1);
    let at = Cell::new(None);
    let err = read_naming::<Outer>(&unknown, &at).expect_err("unknown");
    assert_eq!(at.get(), None, "{err}");
    let mut missing = outer();
    missing.as_object_mut().expect("object").remove("ratio");
    let at = Cell::new(None);
    let err = read_naming::<Outer>(&missing, &at).expect_err("missing");
    assert_eq!(at.get(), None, "{err}");
    assert!(err.to_string().contains("missing field `ratio`"), "{err}");
    // And what reads, reads as `read` reads it.
    let (value, at) = (outer(), Cell::new(None));
    let ok = read_naming::<Outer>(&value, &at).ok();
    assert_eq!((ok, at.get()), (read::<Outer>(&value).ok(), None));
}
