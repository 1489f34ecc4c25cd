use super::contained;

#[test]
fn finds_what_contains_finds() {
    let text = "Error: test t3 failed in src/a.rs; Exit code 101.\nDecision: keep the parser in src/b.rs.\n";
    let needles = [
        "Error: test t3 failed in src/a.rs; Exit code 101.",
        "Error: test t3 failed in src/a.rs; Exit code 102.",
        "keep the parser",
        "src/b.rs.\n",
        "",
        "z",
        "Decision: keep the parser in src/b.rs.\n and more text than the text holds at all",
        text,
    ];
    let expected: Vec<bool> = needles.iter().map(|n| text.contains(n)).collect();
    assert_eq!(
        expected,
        [true, false, true, true, true, false, false, true]
    );
    assert_eq!(contained(text, &needles), expected);
}

#[test]
fn needles_sharing_an_anchor_are_told_apart() {
    let head = "a".repeat(40);
    let text = format!("{head}b {head}c");
    let needles = [format!("{head}b"), format!("{head}c"), format!("{head}d")];
    assert_eq!(contained(&text, &needles), [true, true, false]);
}

#[test]
fn an_empty_text_contains_only_the_empty_needle() {
    assert_eq!(contained("", &["", "a"]), [true, false]);
}

/// Every string over `letters` of each length in `lengths`.
fn all(letters: &[char], lengths: std::ops::RangeInclusive<usize>) -> Vec<String> {
    let mut out = Vec::new();
    for len in lengths {
        let mut word = vec![0usize; len];
        loop {
            out.push(word.iter().map(|&i| letters[i]).collect());
            // The next word, as a number in base `letters.len()`.
            let Some(at) = word.iter().rposition(|&i| i + 1 < letters.len()) else {
                break;
            };
            word[at] += 1;
            word[at + 1..].fill(0);
        }
    }
    out
}

#[test]
fn agrees_with_str_contains_on_every_small_case() {
    // Short needles, and needles past the anchor length whose starts repeat.
    let mut needles = all(&['a', 'b'], 1..=4);
    for tail in ["", "b", "ab", "ba"] {
        needles.push(format!("{}{tail}", "a".repeat(33)));
    }
    let mut texts = all(&['a', 'b', '\n'], 0..=7);
    texts.extend(
        all(&['a', 'b'], 8..=11)
            .into_iter()
            .map(|t| format!("{}{t}", "a".repeat(30))),
    );
    for text in &texts {
        let expected: Vec<bool> = needles.iter().map(|n| text.contains(n.as_str())).collect();
        assert_eq!(contained(text, &needles), expected, "{text:?}");
    }
}

#[test]
fn agrees_with_str_contains_on_needles_that_start_alike() {
    // Needles sharing long starts (many per anchor), prefixes of one another, equal
    // ones, and needles of every length around the anchor lengths, against texts made
    // of them and of pieces of them.
    let mut state = 0x2545_F491_4F6C_DD1D_u64;
    let mut next = move |below: usize| {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        (state % below as u64) as usize
    };
    let heads = [
        "Next I will run `cargo test -p m",
        "keep the parser in src/module",
        "src/module1/file",
        "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
        "é日",
        "",
    ];
    let tails = [
        "1",
        "12",
        "2",
        "1`.",
        "3` and read x.rs.",
        "a",
        "ab",
        "b",
        "日",
        "",
    ];
    for round in 0..300 {
        let mut needles: Vec<String> = Vec::new();
        for _ in 0..1 + next(60) {
            let mut needle = String::from(heads[next(heads.len())]);
            for _ in 0..next(4) {
                needle.push_str(tails[next(tails.len())]);
            }
            // Cut to any length (at a character boundary), sometimes.
            if next(3) == 0 {
                let cut = next(needle.len() + 1);
                let cut = (0..=cut).rev().find(|&c| needle.is_char_boundary(c));
                needle.truncate(cut.unwrap_or(0));
            }
            needles.push(needle);
        }
        // Equal needles.
        needles.push(needles[next(needles.len())].clone());
        let mut text = String::new();
        for _ in 0..next(40) {
            let piece = &needles[next(needles.len())];
            match next(4) {
                0 => text.push_str(tails[next(tails.len())]),
                1 => {
                    let cut = (0..=next(piece.len() + 1).min(piece.len()))
                        .rev()
                        .find(|&c| piece.is_char_boundary(c))
                        .unwrap_or(0);
                    text.push_str(&piece[..cut]);
                }
                _ => text.push_str(piece),
            }
            if next(2) == 0 {
                text.push(' ');
            }
        }
        let expected: Vec<bool> = needles.iter().map(|n| text.contains(n.as_str())).collect();
        assert_eq!(
            contained(&text, &needles),
            expected,
            "round {round}: {text:?} {needles:?}"
        );
    }
}
