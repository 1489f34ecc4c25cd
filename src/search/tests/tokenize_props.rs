use super::*;
use proptest::prelude::*;

proptest! {
    /// Any text: terms are non-empty, capped, folded, with offsets on character
    /// boundaries in order; and parsing it as a query never panics.
    #[test]
    fn test_any_text_tokenizes_within_bounds(text in "\\PC{0,200}|[a-zA-Z_/.:* \"日本é\u{301}\u{0}]{0,80}") {
        let mut last = 0;
        for t in tokenize(&text) {
            prop_assert!(!t.term.is_empty() && t.term.len() <= MAX_TOKEN_BYTES);
            prop_assert!(text.is_char_boundary(t.start) && text.is_char_boundary(t.end));
            prop_assert!(t.start < t.end && t.start >= last);
            prop_assert_eq!(fold(&t.term), t.term.clone());
            last = t.start;
        }
        let _ = crate::search::query::parse(&text);
    }

    #[test]
    fn test_the_byte_scan_gives_the_terms_of_the_character_scan(
        text in "\\PC{0,200}|[a-zA-Z0-9_/.:* \"日本語é\u{301}ßÉ\u{0}\u{2003}]{0,120}"
    ) {
        prop_assert_eq!(tokenize(&text), by_characters(&text));
    }

    /// An ASCII word splits the same read as bytes or as characters.
    #[test]
    fn test_ascii_words_split_alike_as_bytes(word in "[a-zA-Z0-9_]{1,40}") {
        let (mut bytes, mut chars) = (Vec::new(), Vec::new());
        word_parts(&word, 0, word.len(), &mut bytes);
        split_parts(word.char_indices(), 0, word.len(), &mut chars);
        prop_assert_eq!(bytes, chars);
    }
}

/// The terms of `text` as the tokenizer found them before it scanned bytes: one
/// character at a time. Kept as the reference the byte scan must match, term for
/// term, so what earlier builds indexed is still found.
fn by_characters(text: &str) -> Vec<Token> {
    let mut out = Vec::new();
    let mut f = |t: TermAt<'_>| out.push(t.token());
    let mut scan = Scan {
        pos: 0,
        buf: String::new(),
        parts: Vec::new(),
    };
    let mut run = Vec::new();
    let mut chars = text.char_indices().peekable();
    while let Some(&(start, c)) = chars.peek() {
        if is_cjk(c) {
            run.clear();
            while let Some(&(at, c)) = chars.peek() {
                if !is_cjk(c) {
                    break;
                }
                run.push((at, c));
                chars.next();
            }
            scan.cjk(&run, &mut f);
        } else if is_word(c) {
            let mut end = start;
            while let Some(&(at, c)) = chars.peek() {
                if !is_word(c) {
                    break;
                }
                end = at + c.len_utf8();
                chars.next();
            }
            scan.word(text, start, end, &mut f);
        } else {
            chars.next();
        }
    }
    out
}
