use super::*;

fn clauses(text: &str) -> Vec<Clause> {
    parse(text).expect("parses").clauses
}

fn term(t: &str) -> Clause {
    Clause::Term(t.into())
}

#[test]
fn test_words_are_and_terms() {
    assert_eq!(clauses("Parser  CAFÉ"), [term("parser"), term("cafe")]);
}

#[test]
fn test_identifiers_are_their_whole_term() {
    let spellings = |s: &[&str]| Clause::Spellings(s.iter().map(|t| t.to_string()).collect());
    assert_eq!(
        clauses("parse_nested_list"),
        [spellings(&["parse_nested_list", "parsenestedlist"])]
    );
    assert_eq!(
        clauses("parseNestedList"),
        [spellings(&["parsenestedlist", "parse_nested_list"])]
    );
    assert_eq!(
        clauses("PARSE_NESTED_LIST"),
        [spellings(&["parse_nested_list", "parsenestedlist"])]
    );
    assert_eq!(
        clauses("sha256Sum"),
        [spellings(&["sha256sum", "sha256_sum"])]
    );
    assert_eq!(clauses("E0502"), [term("e0502")]);
}

#[test]
fn test_paths_and_cjk_words_are_phrases() {
    assert_eq!(
        clauses("src/parser.rs"),
        [Clause::Phrase(vec![
            "src".into(),
            "parser".into(),
            "rs".into()
        ])]
    );
    assert_eq!(
        clauses("日本語"),
        [Clause::Phrase(vec!["日本".into(), "本語".into()])]
    );
    assert_eq!(clauses("日本*"), [Clause::Prefix("日本".into())]);
    assert_eq!(clauses("日本"), [term("日本")]);
    assert_eq!(
        clauses("\"日本語\""),
        [Clause::Phrase(vec!["日本".into(), "本語".into()])]
    );
    assert_eq!(clauses("日"), [Clause::Prefix("日".into())]);
}

#[test]
fn test_quoted_phrases() {
    assert_eq!(
        clauses("\"Nested List\" x"),
        [
            Clause::Phrase(vec!["nested".into(), "list".into()]),
            term("x")
        ]
    );
    assert_eq!(clauses("\"one\""), [term("one")]);
    assert_eq!(
        clauses("\"parse_nested\""),
        [Clause::Phrase(vec!["parse".into(), "nested".into()])]
    );
}

#[test]
fn test_prefixes() {
    assert_eq!(clauses("pars*"), [Clause::Prefix("pars".into())]);
    assert_eq!(
        clauses("parse_nest*"),
        [Clause::Prefix("parse_nest".into())]
    );
    assert_eq!(
        clauses("src/pa*"),
        [term("src"), Clause::Prefix("pa".into())]
    );
    assert_eq!(parse("p*").expect_err("short").code(), "invalid_argument");
    assert_eq!(parse("*").expect_err("empty").code(), "invalid_argument");
}

#[test]
fn test_filters() {
    let q =
        parse("role:tool tool:Bash has:error session:agent:x:* agent:main since:5 until:9 boom")
            .expect("parses");
    assert_eq!(q.role, Some(Role::Tool));
    assert_eq!(q.tool.as_deref(), Some("bash"));
    assert!(q.has_error);
    assert_eq!(q.session, Some(SessionFilter::Prefix("agent:x:".into())));
    assert_eq!(q.agent.as_deref(), Some("main"));
    assert_eq!((q.since, q.until), (Some(5), Some(9)));
    assert_eq!(q.clauses, [term("boom")]);
    assert!(q.in_time(5) && q.in_time(8) && !q.in_time(9) && !q.in_time(4));
    let q = parse("session:agent:main:main role:user").expect("parses");
    assert_eq!(
        q.session,
        Some(SessionFilter::Key("agent:main:main".into()))
    );
    // Unknown names are text.
    assert_eq!(
        clauses("http://example"),
        [Clause::Phrase(vec!["http".into(), "example".into()])]
    );
}

#[test]
fn test_filters_alone_need_an_indexed_one() {
    assert!(parse("role:tool").is_ok());
    assert!(parse("has:error since:3").is_ok());
    for text in [
        "since:3",
        "session:a",
        "agent:x",
        "",
        "   ",
        "\"\"",
        "!!! ...",
    ] {
        assert_eq!(
            parse(text).expect_err(text).code(),
            "invalid_argument",
            "{text}"
        );
    }
}

#[test]
fn test_bad_input_is_invalid_argument() {
    let cases = [
        "\"open".to_owned(),
        "role:robot x".to_owned(),
        "has:warnings x".to_owned(),
        "since:soon x".to_owned(),
        "until:-1 x".to_owned(),
        "since:99999999999999999999 x".to_owned(),
        "role:user role:tool".to_owned(),
        "tool: x".to_owned(),
        "session: x".to_owned(),
        "x".repeat(MAX_QUERY_BYTES + 1),
        (0..=MAX_QUERY_TERMS).map(|i| format!("w{i} ")).collect(),
    ];
    for text in cases {
        let err = parse(&text).expect_err(&text);
        assert_eq!(err.code(), "invalid_argument", "{text}");
    }
}

#[test]
fn test_hostile_queries_never_panic() {
    for text in [
        "\u{0}", "\"\"\"", "::::", "*:*", "role:", "\u{301}*", "日*", "🙂🙂",
    ] {
        let _ = parse(text);
    }
    assert_eq!(clauses("日*"), [Clause::Prefix("日".into())]);
}
