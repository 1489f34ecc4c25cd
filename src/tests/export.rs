use super::*;

#[test]
fn test_format_time_is_rfc3339_utc() {
    assert_eq!(format_time(0), "1970-01-01T00:00:00Z");
    assert_eq!(format_time(1_760_691_600_123), "2025-10-17T09:00:00Z");
    assert_eq!(format_time(951_782_400_000), "2000-02-29T00:00:00Z");
}

#[test]
fn test_fence_is_longer_than_backticks_inside() {
    assert_eq!(fenced("", "a ```` b"), "`````\na ```` b\n`````\n");
    assert_eq!(fenced("json", "{}"), "```json\n{}\n```\n");
}
