use super::*;

/// `constraint` as it was before its one-pass form: a search per word.
fn constraint_as_before(sentence: &str) -> bool {
    let lower = sentence.to_lowercase();
    let at_word = |word: &str| {
        lower.match_indices(word).any(|(at, _)| {
            lower[..at]
                .chars()
                .next_back()
                .is_none_or(|c| !c.is_alphanumeric())
        })
    };
    CONSTRAINT_WORDS.iter().any(|w| at_word(w))
        || (at_word("use ") && (lower.contains(", not ") || lower.contains(" not ")))
}

#[test]
fn test_redirects_answers_as_before() {
    let as_before = |prose: &str| {
        let lower = prose.to_lowercase();
        REDIRECT_WORDS.iter().any(|w| lower.contains(w))
    };
    let mut texts: Vec<String> = vec![
        String::new(),
        "Go on.".into(),
        "ACTUALLY, do the parser".into(),
        "İnstead of that".into(),
        "Ünd dann: Switch To the other branch".into(),
    ];
    for word in REDIRECT_WORDS {
        for around in ["", " ", "x", "é", "日"] {
            texts.push(format!("{around}{word}{around}"));
            texts.push(format!("{around}{}{around}", word.to_uppercase()));
            texts.push(format!("{around}{}", &word[..word.len() - 1]));
        }
    }
    for text in &texts {
        assert_eq!(redirects(text), as_before(text), "{text:?}");
    }
}

#[test]
fn test_constraint_answers_as_before() {
    let mut sentences: Vec<String> = vec![
        String::new(),
        "Use tabs, not spaces".into(),
        "Reuse tabs, not spaces".into(),
        "use the old one".into(),
        "İ use it, NOT that".into(),
        "The build is slow".into(),
        "Bitte keine neuen Abhängigkeiten".into(),
        "ÉVITE les globals".into(),
        "x\u{301}never again".into(),
    ];
    let joints = ["", " ", "x", "1", "é", "-", "'", "(", "İ", "\u{301}"];
    for word in CONSTRAINT_WORDS
        .iter()
        .chain(["use ", " not ", ", not "].iter())
    {
        for before in joints {
            for after in joints {
                sentences.push(format!("{before}{word}{after}"));
                sentences.push(format!("{before}{}{after}", word.to_uppercase()));
                // Overlapping occurrences: the word again from each of its bytes on.
                for (k, _) in word.char_indices().skip(1) {
                    sentences.push(format!("{before}{word}{}{after}", &word[k..]));
                    sentences.push(format!("{before}{}{word}{after}", &word[..k]));
                }
            }
        }
    }
    for sentence in &sentences {
        assert_eq!(
            constraint(sentence),
            constraint_as_before(sentence),
            "{sentence:?}"
        );
    }
}

#[test]
fn test_pasted_blocks_become_markers_and_the_words_stay() {
    let trace: String = (0..20)
        .map(|i| format!("  at frame_{i} (src/app.js:{i}:3)\n"))
        .collect();
    let text = format!(
        "The export crashes, here is the trace:\n{trace}\nCan you fix it without touching the API?"
    );
    let out = compress(&text);
    assert!(
        out.starts_with("The export crashes, here is the trace:\n[pasted 20 lines"),
        "{out}"
    );
    assert!(
        out.ends_with("Can you fix it without touching the API?"),
        "{out}"
    );
    assert!(
        out.contains("first: at frame_0 (src/app.js:0:3); last: at frame_19"),
        "{out}"
    );
    let fenced = "Look:\n```\nshort\n```\nthanks";
    assert!(compress(fenced).contains("[pasted 3 lines"));
    let plain = "Fix the CSV export.\nIt downloads an empty file.";
    assert_eq!(compress(plain), plain);
}

#[test]
fn test_constraints_in_plain_words() {
    let prose = "The notifications lag. To be clear: don't use WebSockets for the notifications, use server-sent events. Thanks!";
    assert_eq!(
        constraints(prose),
        ["To be clear: don't use WebSockets for the notifications, use server-sent events."]
    );
    assert_eq!(
        constraints("Use tabs, not spaces"),
        ["Use tabs, not spaces"]
    );
    assert_eq!(
        constraints("Bitte keine neuen Abhängigkeiten hinzufügen. Danke"),
        ["Bitte keine neuen Abhängigkeiten hinzufügen."]
    );
    assert!(constraints("Can you never do that?").is_empty());
    assert!(constraints("The build is slow. Look at it.").is_empty());
}

/// `constraints` as it was before its byte-level form: sentences found a character at
/// a time, each checked by [`constraint_as_before`].
fn constraints_as_before(prose: &str) -> Vec<String> {
    let mut out = Vec::new();
    for line in prose.lines().map(str::trim) {
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
                    && constraint_as_before(sentence)
                {
                    out.push(sentence.to_owned());
                }
                start = end;
            }
        }
    }
    out
}

/// The words of both detectors, and pieces of them.
fn detector_words() -> Vec<&'static str> {
    let mut words: Vec<&'static str> = CONSTRAINT_WORDS
        .iter()
        .chain(REDIRECT_WORDS)
        .copied()
        .collect();
    words.extend(
        CONSTRAINT_WORDS
            .iter()
            .chain(REDIRECT_WORDS)
            .filter_map(|w| w.get(..2)),
    );
    words
}

#[test]
fn test_constraints_and_redirects_answer_as_before_on_generated_requests() {
    let words = detector_words();
    let mut texts = crate::compaction::tests::generated_texts(20_000, &words);
    // Long sentences: around the 400 bytes a sentence may have.
    for len in [398, 399, 400, 401] {
        texts.push(format!("{} don't.", "x ".repeat(len / 2)));
        texts.push(format!("Never {}", "y".repeat(len - 6)));
    }
    for text in &texts {
        assert_eq!(constraints(text), constraints_as_before(text), "{text:?}");
        assert_eq!(constraint(text), constraint_as_before(text), "{text:?}");
        let lower = text.to_lowercase();
        assert_eq!(
            redirects(text),
            REDIRECT_WORDS.iter().any(|w| lower.contains(w)),
            "{text:?}"
        );
    }
}
