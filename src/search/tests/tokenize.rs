use super::*;

fn terms(text: &str) -> Vec<String> {
    tokenize(text).into_iter().map(|t| t.term).collect()
}

#[test]
fn test_snake_case_gives_whole_and_parts() {
    assert_eq!(
        terms("parse_nested_list"),
        ["parse_nested_list", "parse", "nested", "list"]
    );
    assert_eq!(terms("__init__"), ["init"]);
}

#[test]
fn test_camel_case_gives_whole_and_parts() {
    assert_eq!(
        terms("parseNestedList"),
        ["parsenestedlist", "parse", "nested", "list"]
    );
    assert_eq!(terms("HTTPServer"), ["httpserver", "http", "server"]);
    assert_eq!(terms("sha256Sum"), ["sha256sum", "sha256", "sum"]);
}

#[test]
fn test_paths_split_on_separators() {
    assert_eq!(terms("src/parser.rs"), ["src", "parser", "rs"]);
    assert_eq!(terms("--dry-run"), ["dry", "run"]);
}

#[test]
fn test_error_codes_stay_whole() {
    assert_eq!(
        terms("error[E0502]: cannot borrow"),
        ["error", "e0502", "cannot", "borrow"]
    );
}

#[test]
fn test_case_and_accents_fold() {
    assert_eq!(terms("Café CAFÉ cafe"), ["cafe", "cafe", "cafe"]);
    assert_eq!(terms("Straße Łódź Œuvre"), ["strasse", "lodz", "oeuvre"]);
    // Decomposed: e + combining acute accent.
    assert_eq!(terms("cafe\u{301}"), ["cafe"]);
    assert_eq!(fold("ÀÉÎÕÜ"), "aeiou");
}

#[test]
fn test_cjk_gives_bigrams_and_single_characters() {
    assert_eq!(terms("日本語"), ["日本", "本語", "語"]);
    let ends: Vec<_> = tokenize("日本語")
        .into_iter()
        .map(|t| (t.pos, t.compound))
        .collect();
    assert_eq!(ends, [(0, false), (1, false), (1, true)]);
    assert_eq!(terms("字"), ["字"]);
    assert_eq!(terms("abc日本def"), ["abc", "日本", "本", "def"]);
    assert_eq!(terms("한국어"), ["한국", "국어", "어"]);
}

#[test]
fn test_offsets_point_into_the_text() {
    let text = "see Café_Menu, 日本";
    for t in tokenize(text) {
        assert!(text.is_char_boundary(t.start) && text.is_char_boundary(t.end));
        assert_eq!(
            fold(&text[t.start..t.end]).replace('_', ""),
            t.term.replace('_', "")
        );
    }
    let parts: Vec<(usize, usize)> = tokenize("ab cd").iter().map(|t| (t.start, t.end)).collect();
    assert_eq!(parts, [(0, 2), (3, 5)]);
}

#[test]
fn test_positions_of_parts_follow_each_other() {
    let toks = tokenize("a parseNested b");
    let pos: Vec<(String, u32, bool)> = toks
        .into_iter()
        .map(|t| (t.term, t.pos, t.compound))
        .collect();
    assert_eq!(
        pos,
        [
            ("a".into(), 0, false),
            ("parsenested".into(), 1, true),
            ("parse".into(), 1, false),
            ("nested".into(), 2, false),
            ("b".into(), 3, false)
        ]
    );
}

#[test]
fn test_huge_tokens_are_capped_at_a_char_boundary() {
    let long = "é".repeat(100);
    let toks = tokenize(&long);
    assert_eq!(toks.len(), 1);
    assert!(toks[0].term.len() <= MAX_TOKEN_BYTES);
    assert_eq!(toks[0].term, "e".repeat(MAX_TOKEN_BYTES));
    let long = "ж".repeat(100);
    let toks = tokenize(&long);
    assert!(toks[0].term.len() <= MAX_TOKEN_BYTES && toks[0].term.len() >= MAX_TOKEN_BYTES - 1);
}

#[test]
fn test_hostile_input_never_panics() {
    assert!(tokenize("").is_empty());
    assert!(tokenize("\u{0}\u{1}\u{7f}\t\r\n  ").is_empty());
    assert_eq!(terms("a\u{0}b\u{200b}c"), ["a", "b", "c"]);
    // Lone combining marks and replacement characters.
    assert!(tokenize("\u{301}\u{301}").is_empty());
    assert!(tokenize("\u{fffd}\u{fffd}").is_empty());
    assert_eq!(terms("\u{301}x"), ["x"]);
    let mixed: String = (0u32..0x3000).filter_map(char::from_u32).collect();
    let toks = tokenize(&mixed);
    assert!(
        toks.iter()
            .all(|t| !t.term.is_empty() && t.term.len() <= MAX_TOKEN_BYTES)
    );
}
