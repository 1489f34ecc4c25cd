//! The continuity set compacted at a quarter of its tokens with the built-in summarizer
//! (see `support/continuity.rs`): the summary passes its own blocking check on every
//! session, and the context after it keeps at least 95% of the facts an agent needs,
//! every pending call id and every latest request. `cargo xtask bench continuity`
//! prints the figures.
#![cfg(not(target_arch = "wasm32"))]

#[path = "support/continuity.rs"]
mod set;

#[test]
fn test_the_continuity_set_keeps_what_an_agent_needs() {
    let cases = set::cases();
    assert!(cases.len() >= 10, "{} cases", cases.len());
    let outcomes: Vec<_> = cases.iter().map(set::measure).collect();
    for (case, outcome) in cases.iter().zip(&outcomes) {
        assert!(
            (30..=260).contains(&outcome.entries),
            "{}: {} entries",
            case.name,
            outcome.entries
        );
        assert_eq!(outcome.result.skip_reason, None, "{}", case.name);
        assert!(outcome.result.removed_count > 0, "{}", case.name);
        // Blocking mode writes the same compaction: nothing critical is missing.
        assert_eq!(
            outcome.blocking.skip_reason, None,
            "{}: blocking refused, missing {:?}",
            case.name, outcome.blocking.missing_obligations
        );
        assert_eq!(
            outcome.blocking.summary, outcome.result.summary,
            "{}",
            case.name
        );
        assert!(
            outcome.result.tokens_after <= outcome.window,
            "{}",
            case.name
        );
    }
    let kinds = set::by_kind(&outcomes);
    let lost: Vec<String> = cases
        .iter()
        .zip(&outcomes)
        .flat_map(|(case, o)| {
            o.facts
                .iter()
                .filter(|(_, kept)| !kept)
                .map(move |(f, _)| format!("{}: {}: {}", case.name, f.kind, f.text))
        })
        .collect();
    for kind in ["pending_id", "latest_request"] {
        let (kept, total) = kinds.get(kind).copied().unwrap_or_default();
        assert!(total > 0, "the set has no {kind} facts");
        assert_eq!(kept, total, "{kind}: lost {lost:#?}");
    }
    let (kept, total) = kinds
        .values()
        .fold((0, 0), |(k, t), (kk, tt)| (k + kk, t + tt));
    assert!(
        f64::from(kept) >= 0.95 * f64::from(total),
        "{kept} of {total} facts kept; lost {lost:#?}"
    );
}
