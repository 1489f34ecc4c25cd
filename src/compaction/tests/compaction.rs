#[test]
fn test_find_answers_as_str_find() {
    let texts = [
        "",
        "e",
        "exit",
        "Exit code 1",
        "Next I will rerun it. Next I will",
        "NNext I wil",
        "é Next I will ü",
        "日本 Command failed: cargo test",
        "Command failed:",
        "aaaab",
    ];
    let needles = [
        "",
        "e",
        "Next I will",
        "Command failed:",
        "aab",
        "ab",
        "日本",
        "ü",
    ];
    for text in texts {
        for needle in needles {
            assert_eq!(
                super::find(text, needle),
                text.find(needle),
                "{text:?} {needle:?}"
            );
        }
    }
}

/// Texts for the detectors' equivalence tests: `count` of them, made of `extra` and of
/// pieces that sit on the detectors' edges (every white space character and
/// characters sharing their first byte, CRLF, blank lines, markers, paths,
/// identifiers, backticks, sentence ends, non-ASCII words), in random order and case,
/// from a fixed seed.
pub(in crate::compaction) fn generated_texts(count: usize, extra: &[&str]) -> Vec<String> {
    const PIECES: &[&str] = &[
        "a",
        "word",
        "The",
        "change",
        "keeps",
        "x",
        "1",
        "src/main.rs",
        "a.rs",
        "Cargo.toml",
        "./run.sh",
        "x.",
        "e.g.",
        ".",
        "..",
        "/",
        "https://x.com/a.rs",
        "(src/lib.rs)",
        "\"dir/a.py\",",
        "123e4567-e89b-12d3-a456-426614174000",
        "deadbeefdeadbeef1",
        "0123456789abcdef",
        "abcdefabcdefabcdef",
        "averylongwordwithoutadot",
        "fifteen_chars_x",
        "sixteen_chars_xy",
        "`cargo test -p x`",
        "`x`",
        "`",
        "``",
        "```",
        "Next I will",
        "Next I will run it. Then",
        "Next I will",
        "Command failed:",
        "Command failed: make all",
        "$ ",
        "$ ls -la",
        "Goal:",
        "Goal: ship it",
        "Constraint:",
        "Decision: keep",
        "[pasted ",
        "[Request interrupted by user",
        "use ",
        "not",
        " not ",
        ", not ",
        "Use",
        ".",
        "!",
        "?",
        ";",
        ",",
        ". ",
        "? ",
        "! ",
        "; ",
        "'",
        " ",
        " ",
        " ",
        "  ",
        "\t",
        "\n",
        "\n",
        "\r\n",
        "\r",
        "\n\n",
        "\n \n",
        "\x0B",
        "\x0C",
        "\x00",
        "\u{1F}",
        "\u{85}",
        "\u{A0}",
        "\u{1680}",
        "\u{2000}",
        "\u{200A}",
        "\u{2028}",
        "\u{2029}",
        "\u{202F}",
        "\u{205F}",
        "\u{3000}",
        "\u{84}",
        "\u{A9}",
        "\u{1681}",
        "\u{180E}",
        "\u{200B}",
        "\u{2010}",
        "\u{3001}",
        "é",
        "日本",
        "İ",
        "ß",
        "\u{301}",
        "Ünd",
        "ÉVITE",
        "não",
        "🦀",
    ];
    let mut state = 0x9E37_79B9_7F4A_7C15_u64;
    let mut next = move |below: usize| {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        (state % below as u64) as usize
    };
    (0..count)
        .map(|_| {
            let mut text = String::new();
            for _ in 0..next(48) {
                let piece = match next(3) {
                    0 if !extra.is_empty() => extra[next(extra.len())],
                    _ => PIECES[next(PIECES.len())],
                };
                match next(8) {
                    0 => text.push_str(&piece.to_uppercase()),
                    1 => text.push_str(&piece.to_lowercase()),
                    _ => text.push_str(piece),
                }
                if next(3) == 0 {
                    text.push(' ');
                }
            }
            text
        })
        .collect()
}

#[test]
fn test_words_answer_as_split_whitespace() {
    for text in generated_texts(20_000, &[]) {
        assert!(super::words(&text).eq(text.split_whitespace()), "{text:?}");
    }
}

#[test]
fn test_find_answers_as_str_find_on_generated_texts() {
    let needles = [
        "```",
        "Next I will",
        "Command failed:",
        "\n",
        " not ",
        "日本",
        "é",
    ];
    for text in generated_texts(5_000, &[]) {
        for needle in needles {
            assert_eq!(
                super::find(&text, needle),
                text.find(needle),
                "{text:?} {needle:?}"
            );
        }
    }
}

#[test]
fn test_compare_answers_as_slice_cmp() {
    let mut texts = generated_texts(300, &[]);
    // Pairs that start alike, for every length of what they share.
    let long = "Next I will run `cargo test -p m1` and read src/module1/file1.rs.";
    for cut in 0..=long.len() {
        texts.push(long[..cut].to_owned());
        texts.push(format!("{}~", &long[..cut]));
        texts.push(format!("{}\0", &long[..cut]));
    }
    for a in &texts {
        for b in &texts {
            let (a, b) = (a.as_bytes(), b.as_bytes());
            assert_eq!(super::compare(a, b), a.cmp(b), "{a:?} {b:?}");
            let common = a.iter().zip(b).take_while(|(x, y)| x == y).count();
            assert_eq!(super::common_prefix(a, b), common, "{a:?} {b:?}");
        }
    }
}
