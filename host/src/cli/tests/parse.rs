use super::*;

#[test]
fn test_durations() {
    assert_eq!(parse_duration_ms("1500ms"), Ok(1500));
    assert_eq!(parse_duration_ms("45s"), Ok(45_000));
    assert_eq!(parse_duration_ms("15m"), Ok(900_000));
    assert_eq!(parse_duration_ms("12h"), Ok(43_200_000));
    assert_eq!(parse_duration_ms("30d"), Ok(2_592_000_000));
    assert_eq!(parse_duration_ms("250ms"), Ok(250));
    for bad in [
        "",
        "d",
        "-5",
        "3w",
        "1.5h",
        "99999999999999999999",
        "999999999999999999d",
    ] {
        assert!(parse_duration_ms(bad).is_err(), "{bad}");
    }
    // A bare number names the units rather than guessing one.
    let bare = parse_duration_ms("3").expect_err("a bare number");
    assert!(bare.contains("3s") && bare.contains("3ms"), "{bare}");
}

#[test]
fn test_key_json() {
    assert_eq!(
        parse_key_json("t=0.5"),
        Ok(("t".to_owned(), serde_json::json!(0.5)))
    );
    assert_eq!(
        parse_key_json(r#"a={"x":"="}"#),
        Ok(("a".to_owned(), serde_json::json!({"x": "="})))
    );
    assert!(parse_key_json("novalue").is_err());
    assert!(parse_key_json("=1").is_err());
    assert!(parse_key_json("k=text").is_err());
}

#[test]
fn test_since_takes_a_time_a_day_or_a_duration_ago() {
    assert_eq!(
        parse_since("1700000000000"),
        Ok(Since::At(1_700_000_000_000))
    );
    assert_eq!(parse_since("2026-12-01"), Ok(Since::At(1_796_083_200_000)));
    assert_eq!(parse_since("7d"), Ok(Since::Ago(604_800_000)));
    assert_eq!(Since::Ago(10).at(25), 15);
    for bad in ["2026-13-01", "2026-02-30", "2026-1-01", "soon", "7w"] {
        assert!(parse_since(bad).is_err(), "{bad}");
    }
    let e = parse_since("2026-13-01").expect_err("month 13");
    assert!(e.contains("YYYY-MM-DD"), "{e}");
}
