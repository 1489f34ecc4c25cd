use super::*;
use crate::compaction::obligations::facts;

fn e(role: Role, content: &str) -> Entry {
    let mut entry = Entry::from_request(
        crate::types::AppendRequest::new(role, content),
        0,
        String::new(),
        0,
    );
    entry.token_count = None;
    entry
}

#[test]
fn test_every_fact_is_whole_and_the_summary_fits_its_budget() {
    let long = format!(
        "Please port the parser. {}",
        "It must keep every rule. ".repeat(40)
    );
    let removed: Vec<Entry> = std::iter::once(e(Role::User, &long))
        .chain((0..200).map(|i| e(Role::Assistant, &format!("Reading src/mod_{i}.rs now."))))
        .collect();
    let f = facts(&removed, &removed, &[]);
    let unbounded = render(&summarize(&f, usize::MAX));
    assert!(unbounded.contains(&long.trim().to_owned()));
    assert!(unbounded.contains("src/mod_0.rs (mentioned)"));
    let budget = 2_000;
    let text = render(&summarize(&f, budget));
    assert!(
        text.chars().count() <= budget,
        "{} chars",
        text.chars().count()
    );
    // The task is whole; files only mentioned gave way, the newest kept.
    assert!(text.contains(long.trim()), "{text}");
    assert!(!text.contains("src/mod_0.rs"));
    assert!(text.contains("src/mod_199.rs (mentioned)"), "{text}");
}

#[test]
fn test_facts_that_are_not_critical_stay_within_the_soft_limit() {
    let removed: Vec<Entry> = std::iter::once(e(Role::User, "Index every module."))
        .chain((0..5_000).map(|i| {
            e(
                Role::Assistant,
                &format!("Reading src/module_{i:05}.rs now."),
            )
        }))
        .collect();
    let f = facts(&removed, &removed, &[]);
    let text = render(&summarize(&f, usize::MAX));
    let chars = text.chars().count();
    assert!(chars <= SOFT_CHARS, "{chars} chars");
    assert!(text.contains("Index every module."));
    assert!(text.contains("src/module_04999.rs (mentioned)"));
    assert!(!text.contains("src/module_00000.rs"));
}
