//! The tokenizer shared by indexing and queries: text in, terms with byte offsets out.
//!
//! Rules (the same for entries and queries, so a query term matches what was indexed):
//! - A **word** is a maximal run of Unicode letters, digits, combining marks and `_`;
//!   every other character (spaces, punctuation, `/`, `.`, `-`, control characters,
//!   symbols) separates words. A run of CJK characters (Han, Hiragana, Katakana, Hangul)
//!   is never part of a word.
//! - A word is split into **parts** at `_` and at case changes (`parseNested` →
//!   `parse` `nested`, `HTTPServer` → `http` `server`, `sha256Sum` → `sha256` `sum`).
//!   Letters and digits are not split (`E0502` stays `e0502`). When a word has more than
//!   one part, the whole word (its `_` at either end trimmed) is also a term, marked
//!   [`Token::compound`], so `parse_nested_list` and `parseNestedList` are findable
//!   whole and by any part (a query of one spelling also looks up the other, see
//!   [`super::query`](mod@super::query)).
//! - Terms are folded: lower-cased, combining marks dropped, the accented letters of
//!   Latin-1 and Latin Extended-A mapped to their base letters (`café` = `cafe`,
//!   `Straße` = `strasse`).
//! - A CJK run of one character is one term; a longer run gives its overlapping
//!   character bigrams (`日本語` → `日本` `本語`) and, marked [`Token::compound`] (not
//!   used by phrases), its last character alone (`語`), so that every character of a
//!   run starts a term and a one-character query (a prefix) finds each of them.
//! - A term is at most [`MAX_TOKEN_BYTES`] bytes: longer ones are cut at a character
//!   boundary (a query term is cut the same way, so it still matches).
//!
//! Positions: each part and each CJK bigram (or one-character run) takes the next
//! position; a compound term shares the position of its first part, a CJK run's last
//! character alone that of the run's last bigram. Phrases match consecutive positions
//! of non-compound terms.

/// The longest term, in bytes (UTF-8); longer terms are cut to this.
pub const MAX_TOKEN_BYTES: usize = 64;

/// One term of a text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Token {
    /// The folded term.
    pub term: String,
    /// Byte offset in the text of its first character.
    pub start: usize,
    /// Byte offset in the text after its last character.
    pub end: usize,
    /// Its position (see the module documentation).
    pub pos: u32,
    /// Whether it is the whole of a word of several parts, or the last character of a
    /// CJK run alone: a term that phrases do not use.
    pub compound: bool,
}

/// Whether `c` is tokenized as CJK (by character bigrams).
pub fn is_cjk(c: char) -> bool {
    matches!(c as u32,
        0x3040..=0x30ff      // Hiragana, Katakana
        | 0x3400..=0x4dbf    // CJK extension A
        | 0x4e00..=0x9fff    // CJK unified ideographs
        | 0xac00..=0xd7af    // Hangul syllables
        | 0xf900..=0xfaff    // CJK compatibility ideographs
        | 0x20000..=0x3134f  // CJK extensions B to G
    )
}

fn is_mark(c: char) -> bool {
    matches!(c as u32, 0x0300..=0x036f | 0x1ab0..=0x1aff | 0x1dc0..=0x1dff | 0x20d0..=0x20ff | 0xfe20..=0xfe2f)
}

fn is_word(c: char) -> bool {
    if c.is_ascii() {
        return c.is_ascii_alphanumeric() || c == '_';
    }
    !is_cjk(c) && (c.is_alphanumeric() || is_mark(c))
}

/// Base letters of U+0100..=U+017F (Latin Extended-A), lower case.
const LATIN_EXT_A: &[u8; 128] = b"aaaaaaccccccccddddeeeeeeeeeegggggggghhhhiiiiiiiiiijjjjkkkllllllllllnnnnnnnnnoooooooorrrrrrssssssssttttttuuuuuuuuuuuuwwyyyzzzzzzs";

/// Appends the folded form of `c` to `out`.
fn fold_into(c: char, out: &mut String) {
    for l in c.to_lowercase() {
        if is_mark(l) {
            continue;
        }
        let code = l as u32;
        let base = match l {
            'à'..='å' => 'a',
            'æ' => {
                out.push_str("ae");
                continue;
            }
            'ç' => 'c',
            'è'..='ë' => 'e',
            'ì'..='ï' => 'i',
            'ð' => 'd',
            'ñ' => 'n',
            'ò'..='ö' | 'ø' => 'o',
            'ù'..='ü' => 'u',
            'ý' | 'ÿ' => 'y',
            'þ' => {
                out.push_str("th");
                continue;
            }
            'ß' => {
                out.push_str("ss");
                continue;
            }
            'œ' => {
                out.push_str("oe");
                continue;
            }
            'ĳ' => {
                out.push_str("ij");
                continue;
            }
            _ if (0x100..0x180).contains(&code) => char::from(LATIN_EXT_A[(code - 0x100) as usize]),
            other => other,
        };
        out.push(base);
    }
}

/// The folded form of `text` (lower case, accents removed), as terms are stored.
pub fn fold(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    fold_onto(text, &mut out);
    out
}

/// Appends the folded form of `text` to `out`.
fn fold_onto(text: &str, out: &mut String) {
    // Most text is ASCII: lower case is all its folding.
    if text.is_ascii() {
        let from = out.len();
        out.push_str(text);
        out[from..].make_ascii_lowercase();
    } else {
        text.chars().for_each(|c| fold_into(c, out));
    }
}

/// Cuts `term` to at most [`MAX_TOKEN_BYTES`] at a character boundary.
pub(crate) fn cap(mut term: String) -> String {
    cap_in_place(&mut term);
    term
}

fn cap_in_place(term: &mut String) {
    if term.len() > MAX_TOKEN_BYTES {
        let mut at = MAX_TOKEN_BYTES;
        while !term.is_char_boundary(at) {
            at -= 1;
        }
        term.truncate(at);
    }
}

/// One term as [`each_term`] hands it over: the folded term (valid during the call) and
/// what a [`Token`] says of it.
pub(crate) struct TermAt<'a> {
    pub(crate) term: &'a str,
    pub(crate) start: usize,
    pub(crate) end: usize,
    pub(crate) pos: u32,
    pub(crate) compound: bool,
}

impl TermAt<'_> {
    /// The term as an owned [`Token`].
    fn token(&self) -> Token {
        Token {
            term: self.term.to_owned(),
            start: self.start,
            end: self.end,
            pos: self.pos,
            compound: self.compound,
        }
    }
}

/// The terms of `text`, in text order (a compound term before its parts).
pub fn tokenize(text: &str) -> Vec<Token> {
    let mut out = Vec::new();
    each_term(text, |t| out.push(t.token()));
    out
}

/// Calls `f` with every term of `text`, in the order and with the positions of
/// [`tokenize`], folding each into one reused buffer: indexing sees every term without
/// an allocation per term.
pub(crate) fn each_term(text: &str, mut f: impl FnMut(TermAt<'_>)) {
    let mut scan = Scan {
        pos: 0,
        buf: String::new(),
        parts: Vec::new(),
    };
    let mut run = Vec::new();
    let bytes = text.as_bytes();
    let mut at = 0;
    // Most text is ASCII: its bytes are classified without decoding characters.
    while let Some(&b) = bytes.get(at) {
        if b.is_ascii() {
            if is_word_byte(b) {
                // The common word, lower-case ASCII letters and digits, is found in the
                // same pass as its end.
                let mut end = at;
                while bytes
                    .get(end)
                    .is_some_and(|&b| b.is_ascii_lowercase() || b.is_ascii_digit())
                {
                    end += 1;
                }
                let simple = end - at <= MAX_TOKEN_BYTES
                    && !bytes
                        .get(end)
                        .is_some_and(|&b| b >= 0x80 || is_word_byte(b));
                if !simple {
                    end = word_end(text, at);
                    scan.word(text, at, end, &mut f);
                } else {
                    scan.simple(text, at, end, &mut f);
                }
                at = end;
            } else {
                at += 1;
            }
            continue;
        }
        let c = char_at(text, at);
        if is_cjk(c) {
            run.clear();
            let mut next = at;
            while bytes.get(next).is_some_and(|b| !b.is_ascii()) {
                let c = char_at(text, next);
                if !is_cjk(c) {
                    break;
                }
                run.push((next, c));
                next += c.len_utf8();
            }
            scan.cjk(&run, &mut f);
            at = next;
        } else if is_word(c) {
            let end = word_end(text, at);
            scan.word(text, at, end, &mut f);
            at = end;
        } else {
            at += c.len_utf8();
        }
    }
}

/// Splits the word `text[start..end]` into parts (byte ranges of `text`) at `_` and at
/// case changes: a part starts at an upper-case letter after a lower-case letter or a
/// digit, or before a lower-case letter after upper-case ones (`HTTPServer`).
fn word_parts(text: &str, start: usize, end: usize, parts: &mut Vec<(usize, usize)>) {
    let word = &text[start..end];
    // Most words are ASCII: their characters are their bytes, nothing to decode.
    if word.is_ascii() {
        let chars = word.bytes().enumerate().map(|(i, b)| (i, char::from(b)));
        split_parts(chars, start, end, parts);
    } else {
        split_parts(word.char_indices(), start, end, parts);
    }
}

/// [`word_parts`] of the characters `chars` (with their byte offsets in the word) of the
/// word `start..end`.
fn split_parts(
    chars: impl Iterator<Item = (usize, char)>,
    start: usize,
    end: usize,
    parts: &mut Vec<(usize, usize)>,
) {
    let mut part_start: Option<usize> = None;
    let mut prev = '_';
    let mut chars = chars.peekable();
    while let Some((i, c)) = chars.next() {
        let at = start + i;
        if c == '_' {
            if let Some(s) = part_start.take() {
                parts.push((s, at));
            }
        } else if let Some(s) = part_start {
            let next_lower = chars.peek().is_some_and(|&(_, n)| n.is_lowercase());
            let boundary = c.is_uppercase()
                && (prev.is_lowercase()
                    || prev.is_numeric()
                    || (prev.is_uppercase() && next_lower));
            if boundary {
                parts.push((s, at));
                part_start = Some(at);
            }
        } else {
            part_start = Some(at);
        }
        prev = c;
    }
    if let Some(s) = part_start {
        parts.push((s, end));
    }
}

/// Whether the ASCII byte `b` is a word character.
fn is_word_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_'
}

/// The character starting at byte `at` of `text` (a character boundary).
fn char_at(text: &str, at: usize) -> char {
    text[at..]
        .chars()
        .next()
        .unwrap_or(char::REPLACEMENT_CHARACTER)
}

/// The end of the word of `text` starting at byte `start` (a word character).
fn word_end(text: &str, start: usize) -> usize {
    let bytes = text.as_bytes();
    let mut end = start;
    while let Some(&b) = bytes.get(end) {
        if b.is_ascii() {
            if !is_word_byte(b) {
                break;
            }
            end += 1;
        } else {
            let c = char_at(text, end);
            if !is_word(c) {
                break;
            }
            end += c.len_utf8();
        }
    }
    end
}

/// The state of [`each_term`]: the next position, the term buffer, a word's parts.
struct Scan {
    pos: u32,
    buf: String,
    parts: Vec<(usize, usize)>,
}

impl Scan {
    /// Hands `f` the characters `chars` (unfolded: CJK has no case) as one term.
    fn emit_chars(
        &mut self,
        chars: &[(usize, char)],
        end: usize,
        pos: u32,
        compound: bool,
        f: &mut impl FnMut(TermAt<'_>),
    ) {
        self.buf.clear();
        self.buf.extend(chars.iter().map(|&(_, c)| c));
        f(TermAt {
            term: &self.buf,
            start: chars.first().map_or(end, |&(at, _)| at),
            end,
            pos,
            compound,
        });
    }

    fn cjk(&mut self, run: &[(usize, char)], f: &mut impl FnMut(TermAt<'_>)) {
        let end_of = |i: usize| run[i].0 + run[i].1.len_utf8();
        if run.len() == 1 {
            self.emit_chars(run, end_of(0), self.pos, false, f);
            self.pos = self.pos.saturating_add(1);
            return;
        }
        for i in 0..run.len() - 1 {
            self.emit_chars(&run[i..i + 2], end_of(i + 1), self.pos, false, f);
            self.pos = self.pos.saturating_add(1);
        }
        let last = run.len() - 1;
        let pos = self.pos.saturating_sub(1);
        self.emit_chars(&run[last..], end_of(last), pos, true, f);
    }

    /// Hands `f` the word `text[start..end]` of lower-case ASCII letters and digits, at
    /// most [`MAX_TOKEN_BYTES`]: one part, already folded, handed over as it is.
    fn simple(&mut self, text: &str, start: usize, end: usize, f: &mut impl FnMut(TermAt<'_>)) {
        f(TermAt {
            term: &text[start..end],
            start,
            end,
            pos: self.pos,
            compound: false,
        });
        self.pos = self.pos.saturating_add(1);
    }

    /// Splits the word `text[start..end]` into parts and hands `f` its terms.
    fn word(&mut self, text: &str, start: usize, end: usize, f: &mut impl FnMut(TermAt<'_>)) {
        let mut parts = std::mem::take(&mut self.parts);
        parts.clear();
        word_parts(text, start, end, &mut parts);
        if let Some(&(first, _)) = parts.first() {
            if parts.len() > 1 {
                let last = parts.last().map_or(end, |&(_, e)| e);
                self.emit_folded(&text[first..last], first, last, true, f);
            }
            for &(s, e) in parts.iter() {
                if self.emit_folded(&text[s..e], s, e, false, f) {
                    self.pos = self.pos.saturating_add(1);
                }
            }
        }
        self.parts = parts;
    }

    /// Hands `f` the folded `raw` at the current position; false when it folds to
    /// nothing (only marks).
    fn emit_folded(
        &mut self,
        raw: &str,
        start: usize,
        end: usize,
        compound: bool,
        f: &mut impl FnMut(TermAt<'_>),
    ) -> bool {
        self.buf.clear();
        fold_onto(raw, &mut self.buf);
        cap_in_place(&mut self.buf);
        if self.buf.is_empty() {
            return false;
        }
        f(TermAt {
            term: &self.buf,
            start,
            end,
            pos: self.pos,
            compound,
        });
        true
    }
}

#[cfg(test)]
#[path = "tests/tokenize.rs"]
mod tests;

#[cfg(all(test, not(target_arch = "wasm32")))]
#[path = "tests/tokenize_props.rs"]
mod props;
