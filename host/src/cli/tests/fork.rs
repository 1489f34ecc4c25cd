use super::*;
use spool::provider_fork::Disposition;

#[test]
fn test_derived_ids_are_stable_uuids() {
    let a = derived_id("default", "request-1");
    assert_eq!(a, derived_id("default", "request-1"));
    assert_ne!(a, derived_id("default", "request-2"));
    assert_ne!(a, derived_id("other", "request-1"));
    assert_eq!(a.len(), 36);
    assert_eq!(a.matches('-').count(), 4);
}

#[test]
fn test_a_disposition_json_parses_as_the_core_defines_it() {
    let accepted: Disposition =
        serde_json::from_str(r#"{"disposition":"accepted"}"#).expect("accepted");
    assert!(matches!(accepted, Disposition::Accepted { .. }));
}
