use super::*;

#[test]
fn test_time_formats_known_instants() {
    assert_eq!(time(0), "1970-01-01 00:00:00 UTC");
    assert_eq!(time(951_782_400_000), "2000-02-29 00:00:00 UTC");
    assert_eq!(time(1_700_000_000_123), "2023-11-14 22:13:20 UTC");
}

#[test]
fn test_durations_read_naturally() {
    assert_eq!(duration(1_530), "1.5 s");
    assert_eq!(duration(200_000), "3 min 20 s");
    assert_eq!(duration(7_500_000), "2 h 5 min");
    assert_eq!(duration(273_600_000), "3 d 4 h");
}

#[test]
fn test_listed_keys_show_their_invisible_characters() {
    let stored = Session::new("agent:main:\u{202E}niam", "s1", 1);
    for out in [table(std::slice::from_ref(&stored)), session(&stored)] {
        assert!(!out.chars().any(spool::validate::is_invisible), "{out}");
        assert!(out.contains("agent:main:\\u{202e}niam"), "{out}");
    }
}
