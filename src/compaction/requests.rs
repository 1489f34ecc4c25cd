//! What a compaction reads of the user's own words: a request with what it pasted
//! compressed, the constraints it states, and whether it changes the task.

use super::summarize::fingerprint;

/// Lines a block must have before it can count as pasted output rather than prose.
const PASTED_LINES: usize = 6;
/// Characters of a pasted block's first and last lines kept in its marker.
const MARKER_LINE: usize = 100;

fn shorten(line: &str) -> String {
    let line = line.trim();
    match line.char_indices().nth(MARKER_LINE) {
        Some((cut, _)) => format!("{}…", &line[..cut]),
        None => line.to_owned(),
    }
}

/// The one-line stand-in of a pasted block: its size, fingerprint, first and last line.
fn marker(lines: &[&str]) -> String {
    let text = lines.join("\n");
    let body: Vec<&str> = lines
        .iter()
        .copied()
        .filter(|l| !l.trim().is_empty() && !l.trim_start().starts_with("```"))
        .collect();
    let first = body.first().map(|l| shorten(l)).unwrap_or_default();
    let last = body.last().map(|l| shorten(l)).unwrap_or_default();
    format!(
        "[pasted {} lines, {} bytes, fnv64 {}; first: {first}; last: {last}]",
        lines.len(),
        text.len(),
        fingerprint(text.as_bytes())
    )
}

/// Whether a line reads as a person's sentence: mostly letters and spaces, several
/// words, not indented like code or output.
fn prose_line(line: &str) -> bool {
    if line.starts_with("    ") || line.starts_with('\t') {
        return false;
    }
    let t = line.trim();
    let words = t.split_whitespace().count();
    let letters = t
        .chars()
        .filter(|c| {
            c.is_alphabetic() || c.is_whitespace() || matches!(c, ',' | '.' | '\'' | '?' | '!')
        })
        .count();
    let total = t.chars().count().max(1);
    words >= 3 && letters * 100 / total >= 85
}

/// The request as a summary carries it: the user's words verbatim, each pasted block
/// (fenced in ```, or a run of six or more lines that do not read as prose) replaced by
/// a one-line marker.
pub(super) fn compress(text: &str) -> String {
    // Fewer lines than a pasted run needs and no fence: nothing to replace.
    if super::find(text, "```").is_none()
        && !text.contains('\r')
        && text.lines().nth(PASTED_LINES - 1).is_none()
    {
        return text.trim().to_owned();
    }
    let lines: Vec<&str> = text.lines().collect();
    let mut out: Vec<String> = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        let line = lines[i];
        if line.trim_start().starts_with("```") {
            let end = (i + 1..lines.len())
                .find(|&j| lines[j].trim_start().starts_with("```"))
                .map_or(lines.len(), |j| j + 1);
            out.push(marker(&lines[i..end]));
            i = end;
            continue;
        }
        // A run of non-prose lines, long enough to be something pasted.
        let run = lines[i..]
            .iter()
            .take_while(|l| {
                !l.trim_start().starts_with("```") && (l.trim().is_empty() || !prose_line(l))
            })
            .count();
        let content = lines[i..i + run]
            .iter()
            .filter(|l| !l.trim().is_empty())
            .count();
        if content >= PASTED_LINES {
            // Blank lines at its edges stay as they were.
            let lead = lines[i..i + run]
                .iter()
                .take_while(|l| l.trim().is_empty())
                .count();
            let trail = lines[i..i + run]
                .iter()
                .rev()
                .take_while(|l| l.trim().is_empty())
                .count();
            out.extend(std::iter::repeat_n(String::new(), lead));
            out.push(marker(&lines[i + lead..i + run - trail]));
            out.extend(std::iter::repeat_n(String::new(), trail));
            i += run;
            continue;
        }
        out.push(line.to_owned());
        i += 1;
    }
    out.join("\n").trim().to_owned()
}

/// Words that start or carry a constraint, lower case, matched at word starts: English,
/// German, French, Spanish, Italian and Portuguese.
const CONSTRAINT_WORDS: &[&str] = &[
    "don't",
    "dont",
    "do not",
    "never",
    "always",
    "must",
    "mustn't",
    "make sure",
    "avoid",
    "only ",
    "no more",
    "without",
    "instead of",
    "rather than",
    "keep ",
    "stick to",
    "should not",
    "shouldn't",
    "under no circumstances",
    "not allowed",
    "no new",
    "please no",
    "nicht",
    "keine",
    "kein ",
    "niemals",
    "immer",
    "nur ",
    "ne pas",
    "n'utilise",
    "jamais",
    "toujours",
    "évite",
    "surtout pas",
    "no uses",
    "no utilices",
    "nunca",
    "siempre",
    "evita",
    "non usare",
    "mai ",
    "sempre",
    "não",
];

/// For each byte, the words of `words` (at most 64) that have it at `index`, as a set
/// of their indices: the detectors, which read every request a compaction removes, try
/// at a position only the words whose first two bytes are there.
const fn by_byte(words: &[&str], index: usize) -> [u64; 256] {
    assert!(words.len() <= 64);
    let mut table = [0u64; 256];
    let mut i = 0;
    while i < words.len() {
        // A word shorter than `index + 1` bytes fails the build here.
        table[words[i].as_bytes()[index] as usize] |= 1 << i;
        i += 1;
    }
    table
}

/// Whether one of `words` starts `bytes` (`first` and `second` are [`by_byte`] of
/// `words` at 0 and 1).
fn starts_one(bytes: &[u8], words: &[&str], first: &[u64; 256], second: &[u64; 256]) -> bool {
    let [b0, b1, ..] = *bytes else {
        return false;
    };
    let mut set = first[usize::from(b0)] & second[usize::from(b1)];
    while set != 0 {
        if bytes.starts_with(words[set.trailing_zeros() as usize].as_bytes()) {
            return true;
        }
        set &= set - 1;
    }
    false
}

const CONSTRAINT_FIRST: [u64; 256] = by_byte(CONSTRAINT_WORDS, 0);
const CONSTRAINT_SECOND: [u64; 256] = by_byte(CONSTRAINT_WORDS, 1);

/// `table` with each upper-case ASCII letter standing for its lower-case one (the words
/// are lower case).
const fn any_case(mut table: [u64; 256]) -> [u64; 256] {
    let mut b = b'a';
    while b <= b'z' {
        table[b.to_ascii_uppercase() as usize] = table[b as usize];
        b += 1;
    }
    table
}

const CONSTRAINT_ANY_CASE: [[u64; 256]; 2] =
    [any_case(CONSTRAINT_FIRST), any_case(CONSTRAINT_SECOND)];

/// Whether `sentence` states a constraint: a constraint word at a word start, or
/// "use X, not Y".
fn constraint(sentence: &str) -> bool {
    if sentence.is_ascii() {
        // The common case: the words compared ignoring ASCII case, without a lowered
        // copy (a word with a non-ASCII byte is never a candidate).
        let bytes = sentence.as_bytes();
        let mut uses = false;
        let mut after_alphanumeric = false;
        for (at, &b) in bytes.iter().enumerate() {
            if !after_alphanumeric {
                let here = |word: &[u8]| {
                    bytes
                        .get(at..at + word.len())
                        .is_some_and(|here| here.eq_ignore_ascii_case(word))
                };
                let mut set = bytes.get(at + 1).map_or(0, |&next| {
                    CONSTRAINT_ANY_CASE[0][usize::from(b)]
                        & CONSTRAINT_ANY_CASE[1][usize::from(next)]
                });
                while set != 0 {
                    if here(CONSTRAINT_WORDS[set.trailing_zeros() as usize].as_bytes()) {
                        return true;
                    }
                    set &= set - 1;
                }
                uses |= b | 0x20 == b'u' && here(b"use ");
            }
            after_alphanumeric = b.is_ascii_alphanumeric();
        }
        // ", not " holds " not ".
        return uses && bytes.windows(5).any(|w| w.eq_ignore_ascii_case(b" not "));
    }
    let lower = sentence.to_lowercase();
    // One pass over the word starts, each tried against the words (a search per word
    // would read every sentence of every removed request fifty times).
    let mut uses = false;
    let mut after_alphanumeric = false;
    for (at, c) in lower.char_indices() {
        if !after_alphanumeric {
            let rest = &lower.as_bytes()[at..];
            if starts_one(
                rest,
                CONSTRAINT_WORDS,
                &CONSTRAINT_FIRST,
                &CONSTRAINT_SECOND,
            ) {
                return true;
            }
            uses |= rest.starts_with(b"use ");
        }
        after_alphanumeric = c.is_alphanumeric();
    }
    uses && (lower.contains(", not ") || lower.contains(" not "))
}

/// The sentences of `prose` that state a constraint, verbatim (a question is not one).
/// A sentence ends at `.`, `!`, `?` or `;` followed by white space, and at the end of
/// its line.
pub(super) fn constraints(prose: &str) -> Vec<String> {
    let mut out = Vec::new();
    for line in prose.lines().map(str::trim) {
        // A marked line is the marker detectors' (`Constraint: …` is one already).
        if line.starts_with("[pasted ")
            || ["Goal:", "Constraint:", "Decision:"]
                .iter()
                .any(|m| line.starts_with(m))
        {
            continue;
        }
        let mut keep = |sentence: &str| {
            let sentence = sentence.trim();
            if !sentence.ends_with('?')
                && sentence.len() <= 400
                && super::words(sentence).nth(1).is_some()
                && constraint(sentence)
            {
                out.push(sentence.to_owned());
            }
        };
        let bytes = line.as_bytes();
        let mut start = 0;
        // The last character ends a sentence whatever it is: the ends before it.
        for at in 0..bytes.len().saturating_sub(1) {
            if matches!(bytes[at], b'.' | b'!' | b'?' | b';')
                && super::space_at(line, at + 1).is_some()
            {
                keep(&line[start..at + 1]);
                start = at + 1;
            }
        }
        if start < line.len() {
            keep(&line[start..]);
        }
    }
    out
}

/// Whether a request changes the task rather than continuing it ("actually …",
/// "instead …", "forget …", "new task", "change of plan", …).
pub(super) fn redirects(prose: &str) -> bool {
    if prose.is_ascii() {
        // Every word has five bytes or more, so among the first three positions of an
        // occurrence one is a multiple of three and starts three of its bytes: only
        // those positions are read, each against the words having those three bytes
        // at 0, 1 or 2 (either case), then compared ignoring ASCII case.
        let bytes = prose.as_bytes();
        let mut at = 0;
        while at + 2 < bytes.len() {
            let mut set = REDIRECT_TRIGRAMS[0][usize::from(bytes[at])]
                & REDIRECT_TRIGRAMS[1][usize::from(bytes[at + 1])]
                & REDIRECT_TRIGRAMS[2][usize::from(bytes[at + 2])];
            while set != 0 {
                let bit = set.trailing_zeros() as usize;
                let word = REDIRECT_WORDS[bit / 3].as_bytes();
                if at.checked_sub(bit % 3).is_some_and(|start| {
                    bytes
                        .get(start..start + word.len())
                        .is_some_and(|here| here.eq_ignore_ascii_case(word))
                }) {
                    return true;
                }
                set &= set - 1;
            }
            at += 3;
        }
        return false;
    }
    let lower = prose.to_lowercase();
    let bytes = lower.as_bytes();
    (0..bytes.len()).any(|at| {
        starts_one(
            &bytes[at..],
            REDIRECT_WORDS,
            &REDIRECT_FIRST,
            &REDIRECT_SECOND,
        )
    })
}

const REDIRECT_FIRST: [u64; 256] = by_byte(REDIRECT_WORDS, 0);
const REDIRECT_SECOND: [u64; 256] = by_byte(REDIRECT_WORDS, 1);

/// For `j` of 0, 1 and 2 and each byte, the redirect words that have it at `offset + j`
/// for an `offset` of 0, 1 or 2 (either case), as a set of bits `3 × word + offset`.
const REDIRECT_TRIGRAMS: [[u64; 256]; 3] = {
    assert!(REDIRECT_WORDS.len() * 3 <= 64);
    let mut tables = [[0u64; 256]; 3];
    let mut w = 0;
    while w < REDIRECT_WORDS.len() {
        let word = REDIRECT_WORDS[w].as_bytes();
        assert!(word.len() >= 5);
        let mut offset = 0;
        while offset < 3 {
            let mut j = 0;
            while j < 3 {
                let b = word[offset + j];
                let bit = 1u64 << (3 * w + offset);
                tables[j][b as usize] |= bit;
                tables[j][b.to_ascii_uppercase() as usize] |= bit;
                j += 1;
            }
            offset += 1;
        }
        w += 1;
    }
    tables
};

/// Words that turn a request into a new task, lower case, found anywhere.
const REDIRECT_WORDS: &[&str] = &[
    "actually",
    "instead",
    "forget",
    "new task",
    "change of plan",
    "scratch that",
    "never mind",
    "nevermind",
    "different",
    "switch to",
    "priority",
    "more important",
    "first,",
    "before that",
    "stop working on",
    "put that aside",
    "park that",
];

/// Whether a request only acknowledges or nudges ("ok", "go on", "you stopped — carry
/// on"): it leans on the request before it.
pub(super) fn nudge(prose: &str) -> bool {
    prose.chars().nth(60).is_none()
}

#[cfg(test)]
#[path = "tests/requests.rs"]
mod tests;
