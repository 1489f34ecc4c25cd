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
    if !text.contains("```") && !text.contains('\r') && text.lines().nth(PASTED_LINES - 1).is_none()
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

/// Whether `sentence` states a constraint: a constraint word, or "use X, not Y".
/// For each byte, the words of `words` (at most 64) that start with it, as a set of
/// their indices: the detectors, which read every request a compaction removes, try
/// at a position only the words that can start there.
const fn by_first_byte(words: &[&str]) -> [u64; 256] {
    assert!(words.len() <= 64);
    let mut table = [0u64; 256];
    let mut i = 0;
    while i < words.len() {
        table[words[i].as_bytes()[0] as usize] |= 1 << i;
        i += 1;
    }
    table
}

/// Whether one of `words` starts `bytes` (`by_first` is [`by_first_byte`] of `words`).
fn starts_one(bytes: &[u8], words: &[&str], by_first: &[u64; 256]) -> bool {
    let Some(&first) = bytes.first() else {
        return false;
    };
    let mut set = by_first[usize::from(first)];
    while set != 0 {
        if bytes.starts_with(words[set.trailing_zeros() as usize].as_bytes()) {
            return true;
        }
        set &= set - 1;
    }
    false
}

const CONSTRAINT_FIRST: [u64; 256] = by_first_byte(CONSTRAINT_WORDS);

fn constraint(sentence: &str) -> bool {
    // ASCII text lowers in place of a copy per sentence (the common case).
    let mut ascii = [0u8; 400];
    let lower: std::borrow::Cow<'_, str> = match ascii.get_mut(..sentence.len()) {
        Some(buf) if sentence.is_ascii() => {
            buf.copy_from_slice(sentence.as_bytes());
            buf.make_ascii_lowercase();
            // ASCII in, ASCII out.
            std::str::from_utf8(buf).map_or_else(|_| sentence.to_lowercase().into(), Into::into)
        }
        _ => sentence.to_lowercase().into(),
    };
    // One pass over the word starts, each tried against the words (a search per word
    // would read every sentence of every removed request fifty times).
    let mut uses = false;
    let mut after_alphanumeric = false;
    for (at, c) in lower.char_indices() {
        if !after_alphanumeric {
            let rest = &lower.as_bytes()[at..];
            if starts_one(rest, CONSTRAINT_WORDS, &CONSTRAINT_FIRST) {
                return true;
            }
            uses |= rest.starts_with(b"use ");
        }
        after_alphanumeric = c.is_alphanumeric();
    }
    uses && (lower.contains(", not ") || lower.contains(" not "))
}

/// The sentences of `prose` that state a constraint, verbatim (a question is not one).
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
        let mut start = 0;
        let mut chars = line.char_indices().peekable();
        while let Some((at, c)) = chars.next() {
            let next = chars.peek().map(|&(_, n)| n);
            let ends = matches!(c, '.' | '!' | '?' | ';') && next.is_none_or(char::is_whitespace);
            if ends || next.is_none() {
                let end = at + c.len_utf8();
                let sentence = line[start..end].trim();
                if !sentence.ends_with('?')
                    && sentence.len() <= 400
                    && sentence.split_whitespace().nth(1).is_some()
                    && constraint(sentence)
                {
                    out.push(sentence.to_owned());
                }
                start = end;
            }
        }
    }
    out
}

/// Whether a request changes the task rather than continuing it ("actually …",
/// "instead …", "forget …", "new task", "change of plan", …).
pub(super) fn redirects(prose: &str) -> bool {
    if prose.is_ascii() {
        // The words are lower-case ASCII: compared ignoring case, without a lowered copy.
        let bytes = prose.as_bytes();
        return (0..bytes.len()).any(|at| {
            let rest = &bytes[at..];
            let mut set = REDIRECT_FIRST[usize::from(rest[0].to_ascii_lowercase())];
            while set != 0 {
                let word = REDIRECT_WORDS[set.trailing_zeros() as usize].as_bytes();
                if rest.len() >= word.len() && rest[..word.len()].eq_ignore_ascii_case(word) {
                    return true;
                }
                set &= set - 1;
            }
            false
        });
    }
    let lower = prose.to_lowercase();
    let bytes = lower.as_bytes();
    (0..bytes.len()).any(|at| starts_one(&bytes[at..], REDIRECT_WORDS, &REDIRECT_FIRST))
}

const REDIRECT_FIRST: [u64; 256] = by_first_byte(REDIRECT_WORDS);

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
