use super::*;

fn args(query: &str) -> SearchArgs {
    SearchArgs {
        query: query.into(),
        session: None,
        agent: None,
        role: None,
        since: None,
        limit: 20,
        cursor: None,
        json: false,
    }
}

#[test]
fn test_flags_become_filters() {
    let mut a = args("\"failing test\" pars*");
    a.session = Some("agent:main:*".into());
    a.agent = Some("main".into());
    a.role = Some(RoleArg::Tool);
    a.since = Some(Since::Ago(1_000));
    assert_eq!(
        query(&a, 5_000).ok().as_deref(),
        Some("\"failing test\" pars* session:agent:main:* agent:main role:tool since:4000")
    );
    a.since = Some(Since::At(7));
    assert!(query(&a, 5_000).is_ok_and(|q| q.ends_with("since:7")));
    a.agent = Some("two words".into());
    assert!(query(&a, 0).is_err_and(|e| e.code() == "invalid_argument"));
}

#[test]
fn test_since_reads_times_and_durations() {
    assert_eq!(
        parse_since("1700000000000"),
        Ok(Since::At(1_700_000_000_000))
    );
    assert_eq!(parse_since("2h"), Ok(Since::Ago(7_200_000)));
    assert!(parse_since("soon").is_err());
    assert!(parse_since("").is_err());
}

#[test]
fn test_snippets_bold_their_highlights_on_one_line() {
    let s = spool::Snippet {
        field: "content".into(),
        text: "fix the\nparser now".into(),
        highlights: vec![(8, 14)],
    };
    assert_eq!(snippet(&s, false), "fix the parser now");
    assert_eq!(snippet(&s, true), "fix the \x1b[1mparser\x1b[0m now");
    // Ranges Spool never returns are ignored, not a panic.
    let odd = spool::Snippet {
        highlights: vec![(3, 2), (0, 99)],
        ..s
    };
    assert_eq!(snippet(&odd, true), "fix the parser now");
}
