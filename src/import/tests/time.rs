use super::*;

#[test]
fn test_known_instants() {
    assert_eq!(parse_rfc3339_ms("1970-01-01T00:00:00Z"), Some(0));
    assert_eq!(
        parse_rfc3339_ms("2025-10-17T05:54:20.209Z"),
        Some(1_760_680_460_209)
    );
    assert_eq!(
        parse_rfc3339_ms("2024-02-29T23:59:59.5+01:00"),
        Some(1_709_247_599_500)
    );
    assert_eq!(
        parse_rfc3339_ms("2025-06-01T10:00:00.123456789Z"),
        Some(1_748_772_000_123)
    );
}

#[test]
fn test_malformed_times_are_none() {
    for bad in [
        "",
        "yesterday",
        "2025-13-01T00:00:00Z",
        "2025-06-01T10:00:00",
        "2025-06-01T10:00:00.Z",
        "1969-12-31T23:59:59Z",
        "2025-06-01T10:00:00+0100",
    ] {
        assert_eq!(parse_rfc3339_ms(bad), None, "{bad}");
    }
}
