use super::*;
use crate::types::AppendRequest;

/// The word detectors as they were before their fast paths: the fast ones must
/// answer the same on every word.
fn path_as_before(token: &str) -> bool {
    let name = token.rsplit('/').next().unwrap_or(token);
    let has_ext = name
        .rsplit_once('.')
        .is_some_and(|(stem, ext)| !stem.is_empty() && FILE_EXTENSIONS.contains(&ext));
    has_ext && !token.contains("://") && token.chars().all(|c| !c.is_whitespace())
}

fn identifier_as_before(token: &str) -> bool {
    let hex = |s: &str| !s.is_empty() && s.chars().all(|c| c.is_ascii_hexdigit());
    let parts: Vec<&str> = token.split('-').collect();
    let uuid = parts.len() == 5
        && parts.iter().map(|p| p.len()).eq([8, 4, 4, 4, 12])
        && parts.iter().all(|p| hex(p));
    let long_hex = token.len() >= 16 && hex(token) && token.chars().any(|c| c.is_ascii_digit());
    uuid || long_hex
}

#[test]
fn test_word_detectors_answer_as_before_on_every_shape() {
    let mut words: Vec<String> = [
        "",
        ".",
        "/",
        "a.rs",
        ".rs",
        "dir/.rs",
        "dir/a.rs",
        "/a.rs",
        "a/b",
        "a.b/c",
        "a.b/c.rs",
        "x.tar.gz",
        "a.",
        "a..rs",
        "src/",
        "https://x.com/a.rs",
        "file://a/b.py",
        "é/ü.rs",
        "日本.rs",
        "dir/日本.toml",
        "main.rs:12",
        "a.RS",
        "Cargo.toml",
        "./run.sh",
        "../x/y.md",
        "a/b/c.d/e",
        "no_extension",
        "123e4567-e89b-12d3-a456-426614174000",
        "123e4567-e89b-12d3-a456-42661417400",
        "123e4567-e89b-12d3-a456-4266141740000",
        "123e4567e89b12d3a456426614174000",
        "123e4567-e89b-12d3-a456-42661417400g",
        "-23e4567-e89b-12d3-a456-426614174000",
        "deadbeefdeadbeef",
        "deadbeefdeadbee1",
        "0123456789abcde",
        "0123456789abcdef",
        "abcdefabcdefabcdef",
        "ABCDEF0123456789",
        "a-b-c-d-e",
        "--------",
    ]
    .iter()
    .map(|w| (*w).to_owned())
    .collect();
    // Every word of up to four characters over an alphabet of the separators that
    // matter, and a few of 16 and 36.
    let alphabet = ['a', '.', '/', '-', '1', 'é', ':'];
    let mut frontier = vec![String::new()];
    for _ in 0..4 {
        let mut next = Vec::new();
        for w in &frontier {
            for c in alphabet {
                let mut longer = w.clone();
                longer.push(c);
                next.push(longer);
            }
        }
        words.extend(next.iter().map(|w| format!("{w}rs")));
        words.extend(next.iter().cloned());
        frontier = next;
    }
    for w in frontier.iter().take(200) {
        words.push(format!("{w}0123456789ab"));
        words.push(format!("{w}-e89b-12d3-a456-426614174000"));
    }
    for w in &words {
        assert_eq!(looks_like_path(w), path_as_before(w), "path: {w:?}");
        assert_eq!(
            looks_like_identifier(w),
            identifier_as_before(w),
            "identifier: {w:?}"
        );
    }
}

fn e(role: Role, content: &str) -> Entry {
    let mut entry = Entry::from_request(AppendRequest::new(role, content), 0, String::new(), 0);
    entry.token_count = None;
    entry
}

fn texts(obligations: &[Obligation], kind: ObligationKind) -> Vec<&str> {
    obligations
        .iter()
        .filter(|o| o.kind == kind)
        .map(|o| o.text.as_str())
        .collect()
}

#[test]
fn test_extracts_every_kind_from_an_agent_conversation() {
    use ObligationKind as K;
    let mut call = e(
        Role::Assistant,
        "Next I will run uv run pytest tests/test_session/test_manager.py.",
    );
    call.tool_calls = Some(serde_json::json!([{"id": "call_exec_1"}, {"id": "call_pending"}]));
    let mut result = e(
        Role::Tool,
        "Command failed: uv run pytest tests/test_session/test_manager.py\nExit code 1\nError: missing summary_payload column",
    );
    result.tool_call_id = Some("call_exec_1".into());
    let removed = vec![
        e(
            Role::User,
            "Goal: finish continuity work.\nConstraint: do not enable coverage blocking by default.\nKeep src/opensquilla/session/models.py and docs/Long Task Report.md.\nCan you check run 3f2a9c4e-1b2d-4c5e-8f90-1a2b3c4d5e6f?",
        ),
        call,
        result.clone(),
        e(
            Role::Assistant,
            "Decision: keep the schema. Run `cargo test --workspace` after.",
        ),
    ];
    let all = removed.clone();
    let carried = ["goal: an older goal".into(), "a fact in other words".into()];
    let o = extract(&removed, &all, &carried);
    // A carried description keeps its kind; other carried text stays as it is.
    assert_eq!(
        texts(&o, K::Goal),
        ["an older goal", "finish continuity work."]
    );
    assert_eq!(
        texts(&o, K::Constraint),
        [
            "do not enable coverage blocking by default.",
            "Keep src/opensquilla/session/models.py and docs/Long Task Report.md."
        ]
    );
    assert_eq!(
        texts(&o, K::NextAction),
        ["Next I will run uv run pytest tests/test_session/test_manager.py."]
    );
    assert_eq!(texts(&o, K::ToolCall), ["call_exec_1"]);
    assert_eq!(texts(&o, K::PendingTool), ["call_pending"]);
    assert!(texts(&o, K::File).contains(&"src/opensquilla/session/models.py"));
    assert!(texts(&o, K::File).contains(&"tests/test_session/test_manager.py"));
    assert!(
        texts(&o, K::Failure).contains(
            &"tool call call_exec_1 failed (exit 1): Error: missing summary_payload column"
        ),
        "{:?}",
        texts(&o, K::Failure)
    );
    assert!(texts(&o, K::Failure).contains(&"uv run pytest tests/test_session/test_manager.py"));
    assert_eq!(
        texts(&o, K::Identifier),
        ["3f2a9c4e-1b2d-4c5e-8f90-1a2b3c4d5e6f"]
    );
    assert_eq!(texts(&o, K::Command), ["cargo test --workspace"]);
    assert_eq!(
        texts(&o, K::Decision),
        ["keep the schema. Run `cargo test --workspace` after."]
    );
    assert_eq!(texts(&o, K::CarryForward), ["a fact in other words"]);
    assert_eq!(texts(&o, K::Question).len(), 1);
    assert!(
        o.iter()
            .filter(|x| x.kind == K::Question || x.kind == K::Command)
            .all(|x| !x.critical)
    );
}

#[test]
fn test_every_obligation_is_extracted_however_many_there_are() {
    let removed: Vec<Entry> = (0..100)
        .map(|i| e(Role::User, &format!("Goal: step {i}\nedit src/file_{i}.rs")))
        .collect();
    let o = extract(&removed, &removed, &[]);
    let files = texts(&o, ObligationKind::File);
    assert_eq!(files.len(), 100);
    assert_eq!(files.first(), Some(&"src/file_0.rs"));
    assert_eq!(texts(&o, ObligationKind::Goal).len(), 100);
}

#[test]
fn test_duplicates_collapse_and_plain_words_are_not_paths() {
    let removed = vec![e(
        Role::User,
        "see main.rs and main.rs, version 1.2, e.g. foo",
    )];
    let o = extract(&removed, &removed, &[]);
    assert_eq!(
        o.iter().filter(|x| x.kind == ObligationKind::File).count(),
        1
    );
    assert!(o.iter().all(|x| x.text != "1.2" && x.text != "e.g"));
}

/// `from_text` as it was before its fast paths: every word trimmed and checked.
fn from_text_as_before(entry: &Entry, out: &mut Vec<Obligation>) {
    use ObligationKind as K;
    for line in entry
        .content
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
    {
        for (marker, kind) in [
            ("Goal:", K::Goal),
            ("Constraint:", K::Constraint),
            ("Decision:", K::Decision),
        ] {
            if let Some(rest) = line.strip_prefix(marker) {
                out.push(Obligation::new(kind, rest.trim()));
            }
        }
        if let Some(i) = line.find("Next I will") {
            let sentence = &line[i..];
            let end = sentence.find(". ").map_or(sentence.len(), |e| e + 1);
            out.push(Obligation::new(K::NextAction, &sentence[..end]));
        }
        if let Some(i) = line.find("Command failed:") {
            let rest = line[i + "Command failed:".len()..].trim();
            if !rest.is_empty() {
                out.push(Obligation::new(K::Failure, rest));
            }
        }
        if let Some(command) = line.strip_prefix("$ ") {
            out.push(Obligation::new(K::Command, command.trim()));
        }
        let mut quoted = line.split('`');
        while let (Some(_), Some(inside)) = (quoted.next(), quoted.next()) {
            if inside.contains(' ') && !inside.is_empty() {
                out.push(Obligation::new(K::Command, inside));
            }
        }
        for token in line.split_whitespace().map(trim_token) {
            if path_as_before(token) {
                let mut file = Obligation::new(K::File, token);
                file.critical = false;
                out.push(file);
            } else if identifier_as_before(token) {
                out.push(Obligation::new(K::Identifier, token));
            }
        }
        if entry.role == Role::User && line.ends_with('?') {
            out.push(Obligation::new(K::Question, line));
        }
    }
}

#[test]
fn test_text_detectors_answer_as_before_on_generated_messages() {
    let texts = crate::compaction::tests::generated_texts(20_000, &[]);
    for (i, text) in texts.iter().enumerate() {
        let entry = e([Role::User, Role::Assistant][i % 2], text);
        let (mut now, mut before) = (Vec::new(), Vec::new());
        from_text(&entry, &mut now);
        from_text_as_before(&entry, &mut before);
        assert_eq!(now, before, "{text:?}");
    }
}

#[test]
fn test_the_status_is_the_newest_agent_message_as_before() {
    let texts = crate::compaction::tests::generated_texts(2_000, &[]);
    for text in &texts {
        assert_eq!(
            first_paragraph(text),
            text.split("\n\n").next().unwrap_or_default(),
            "{text:?}"
        );
    }
    let mut entries: Vec<Entry> = texts
        .iter()
        .enumerate()
        .map(|(i, text)| e([Role::User, Role::Assistant][i % 2], text))
        .collect();
    // Long ones too: their sentences are cut to the status's length.
    entries.extend(
        texts
            .iter()
            .take(200)
            .map(|text| e(Role::Assistant, &format!("{text}. ").repeat(40))),
    );
    let long = entries.len() - 200;
    // As it was when each message of the agent chose its sentences as it came.
    for removed in [0, 1, 2, 3, 10, 101, 1000]
        .map(|n| &entries[..n])
        .into_iter()
        .chain((long..entries.len()).map(|n| &entries[n..=n]))
    {
        let status_before = removed
            .iter()
            .rfind(|e| e.role == Role::Assistant && !e.content.trim().is_empty())
            .map(|e| {
                let paragraph = e.content.trim().split("\n\n").next().unwrap_or_default();
                sentences_within(paragraph, STATUS)
            });
        assert_eq!(facts(removed, removed, &[]).status, status_before);
    }
}
