//! The Codex importer on the shapes real rollouts have (Codex CLI and Codex Desktop):
//! prompts written only as UI events, images, reasoning, web searches, compactions,
//! cached tokens, context messages, failed and aborted tool calls, and growing logs.
#![cfg(not(target_arch = "wasm32"))]

use serde_json::Value;
use spool::import::{self, ImportFormat, ImportRequest, ImportedEntry, ImportedLog};
use spool::{EntryKind, MemoryStorage, Role, ToolStatus, run};

const DESKTOP: &str = include_str!("fixtures/import/codex-shapes/desktop-prompts.jsonl");
const IMAGES: &str = include_str!("fixtures/import/codex-shapes/images.jsonl");
const REASONING: &str = include_str!("fixtures/import/codex-shapes/reasoning.jsonl");
const WEB_SEARCH: &str = include_str!("fixtures/import/codex-shapes/web-search.jsonl");
const COMPACTION: &str = include_str!("fixtures/import/codex-shapes/compaction.jsonl");
const CACHE: &str = include_str!("fixtures/import/codex-shapes/cache-usage.jsonl");
const CONTEXT: &str = include_str!("fixtures/import/codex-shapes/context.jsonl");
const FAILURES: &str = include_str!("fixtures/import/codex-shapes/tool-failures.jsonl");
const ROLLOUT: &str = include_str!(
    "fixtures/import/codex/2025/10/17/rollout-2025-10-17T05-50-00-0199f0a1-7c2e-7d40-9b1a-5e6f7a8b9c0d.jsonl"
);
const LEGACY: &str = include_str!("fixtures/import/codex-legacy.jsonl");
const TOKEN_FIRST: &str = include_str!("fixtures/import/codex-shapes/token-count-first.jsonl");

const ALL: [(&str, &str); 11] = [
    ("desktop-prompts", DESKTOP),
    ("images", IMAGES),
    ("reasoning", REASONING),
    ("web-search", WEB_SEARCH),
    ("compaction", COMPACTION),
    ("cache-usage", CACHE),
    ("context", CONTEXT),
    ("tool-failures", FAILURES),
    ("rollout", ROLLOUT),
    ("legacy", LEGACY),
    ("token-count-first", TOKEN_FIRST),
];

fn entries(log: &ImportedLog) -> &[ImportedEntry] {
    &log.sessions[0].entries
}

/// The fixture's lines as JSON, numbered from 1.
fn lines(text: &str) -> Vec<(u64, Value)> {
    text.lines()
        .enumerate()
        .filter_map(|(i, l)| serde_json::from_str(l).ok().map(|v| (i as u64 + 1, v)))
        .collect()
}

/// The line number an entry's id names (`<thread>:<line>` or `<thread>:<line>.<n>`).
fn line_of(entry: &ImportedEntry) -> u64 {
    let tail = entry.message_id.rsplit(':').next().expect("an id");
    tail.split('.')
        .next()
        .expect("a line")
        .parse()
        .expect("a number")
}

#[test]
fn test_desktop_prompts_written_only_as_events_are_imported_once() {
    let log = import::parse_codex(DESKTOP);
    let users: Vec<&ImportedEntry> = entries(&log)
        .iter()
        .filter(|e| e.role == Role::User)
        .collect();
    // Every prompt the fixture holds, in either form, once per turn: a turn starts at a
    // prompt that follows model output (or nothing).
    let mut expected: Vec<String> = Vec::new();
    let mut output_since_prompt = true;
    for (_, line) in lines(DESKTOP) {
        let p = &line["payload"];
        let prompt = match (line["type"].as_str(), p["type"].as_str()) {
            (Some("event_msg"), Some("user_message")) => p["message"].as_str(),
            (Some("response_item"), Some("message")) if p["role"] == "user" => {
                p["content"][0]["text"].as_str()
            }
            (Some("response_item"), Some(_)) => {
                output_since_prompt = true;
                None
            }
            _ => None,
        };
        if let Some(prompt) = prompt
            && output_since_prompt
        {
            expected.push(prompt.to_owned());
            output_since_prompt = false;
        }
    }
    let got: Vec<&str> = users.iter().map(|e| e.content.as_str()).collect();
    assert_eq!(got, expected);
    assert_eq!(users.len(), 7, "three prompts exist only as events");
    // The first of the two forms is kept, whichever it is.
    let first_of = |text: &str| -> u64 {
        lines(DESKTOP)
            .iter()
            .find(|(_, l)| {
                l["payload"]["message"] == text || l["payload"]["content"][0]["text"] == text
            })
            .expect(text)
            .0
    };
    for user in &users[3..5] {
        assert_eq!(line_of(user), first_of(&user.content), "{user:?}");
    }
    assert_eq!(log.skipped.get("event_msg:user_message"), Some(&1));
    assert_eq!(log.skipped.get("response_item:message"), Some(&1));
}

#[test]
fn test_input_images_become_attachments_and_the_text_stays_the_text() {
    let log = import::parse_codex(IMAGES);
    let users: Vec<&ImportedEntry> = entries(&log)
        .iter()
        .filter(|e| e.role == Role::User)
        .collect();
    assert_eq!(users.len(), 2, "the echoed prompt is not imported twice");
    assert_eq!(users[0].content, "What is wrong in this screenshot?");
    assert_eq!(users[1].content, "And in this one?");
    // What the fixture inlines, decoded here from its data URLs.
    let data_urls: Vec<(String, Vec<u8>)> = lines(IMAGES)
        .iter()
        .filter_map(|(_, l)| {
            let p = &l["payload"];
            let urls: Vec<&str> = match p["type"].as_str() {
                Some("message") => p["content"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(|c| c["image_url"].as_str())
                    .collect(),
                Some("user_message") if p["message"] == "And in this one?" => p["images"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(Value::as_str)
                    .collect(),
                _ => Vec::new(),
            };
            (!urls.is_empty()).then_some(urls)
        })
        .flatten()
        .filter_map(|url| {
            let (head, body) = url.strip_prefix("data:")?.split_once(',')?;
            Some((head.replace(";base64", ""), decode(body)))
        })
        .collect();
    assert_eq!(data_urls.len(), 2);
    let first = &users[0].attachments;
    assert_eq!(first.len(), 2, "{first:?}");
    assert_eq!(first[0].kind, "image");
    assert_eq!(
        first[0].media_type.as_deref(),
        Some(data_urls[0].0.as_str())
    );
    assert_eq!(first[0].size, data_urls[0].1.len() as u64);
    assert_eq!(
        first[0].sha256.as_deref(),
        Some(sha256(&data_urls[0].1).as_str())
    );
    assert_eq!(
        first[1].source.as_deref(),
        Some("https://example.com/diagram.png")
    );
    assert_eq!(first[1].sha256, None);
    let second = &users[1].attachments;
    assert_eq!(second.len(), 2, "an inlined and a local image");
    assert_eq!(second[0].size, data_urls[1].1.len() as u64);
    assert_eq!(second[1].source.as_deref(), Some("/home/dev/shots/two.png"));
    // A tool output's image (a `view_image` result) is an attachment of the tool entry.
    let tool = entries(&log)
        .iter()
        .find(|e| e.role == Role::Tool)
        .expect("a tool result");
    assert_eq!(tool.content, "Image: after.png");
    assert_eq!(tool.attachments.len(), 1);
    assert_eq!(
        tool.attachments[0].sha256, first[0].sha256,
        "the same picture"
    );
    assert_eq!(log.attachments, 5);
    let inlined: u64 =
        data_urls.iter().map(|(_, b)| b.len() as u64).sum::<u64>() + tool.attachments[0].size;
    assert_eq!(log.attachment_bytes_not_stored, inlined);
}

#[test]
fn test_a_repeated_session_line_does_not_rename_the_thread() {
    let first = DESKTOP.lines().next().expect("a session line");
    let other = first.replace(
        "019cb0a1-0d0e-7a11-9c2d-3e4f5a6b7c01",
        "019c0000-0000-7000-8000-000000000999",
    );
    let mut lines: Vec<&str> = DESKTOP.lines().collect();
    lines.insert(6, &other);
    let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
    let log = import::parse_codex(&text);
    let session = &log.sessions[0];
    assert_eq!(
        session.provider_session_id,
        "019cb0a1-0d0e-7a11-9c2d-3e4f5a6b7c01"
    );
    assert!(
        session.entries.iter().all(|e| e
            .message_id
            .starts_with("019cb0a1-0d0e-7a11-9c2d-3e4f5a6b7c01:")),
        "{:?}",
        session.entries
    );
    assert_eq!(log.skipped.get("session_meta"), Some(&1));
}

#[test]
fn test_reasoning_items_are_kept_as_reasoning_with_encrypted_content_as_a_size() {
    let log = import::parse_codex(REASONING);
    let fixture = lines(REASONING);
    let reasoning: Vec<(&ImportedEntry, &Value)> = entries(&log)
        .iter()
        .filter(|e| e.reasoning.is_some())
        .map(|e| {
            let line = &fixture
                .iter()
                .find(|(n, _)| *n == line_of(e))
                .expect("line")
                .1;
            (e, &line["payload"])
        })
        .collect();
    assert_eq!(reasoning.len(), 2, "the third reasoning item holds nothing");
    for (entry, item) in &reasoning {
        assert_eq!(item["type"], "reasoning");
        assert_eq!((entry.role, entry.content.as_str()), (Role::Assistant, ""));
        let mut expected: Vec<String> = item["summary"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|s| s["text"].as_str().map(str::to_owned))
            .collect();
        let encrypted = item["encrypted_content"].as_str().expect("encrypted");
        expected.push(format!("[encrypted reasoning: {} bytes]", encrypted.len()));
        assert_eq!(
            entry.reasoning.as_deref(),
            Some(expected.join("\n\n").as_str())
        );
        assert!(
            !entry.reasoning.as_deref().unwrap_or("").contains(encrypted),
            "the encrypted blob itself is not kept"
        );
    }
    assert_eq!(log.skipped.get("response_item:reasoning"), Some(&1));
    assert_eq!(log.skipped.get("event_msg:agent_reasoning"), Some(&1));
}

#[test]
fn test_web_searches_are_tool_calls_with_their_query_and_status() {
    let log = import::parse_codex(WEB_SEARCH);
    let items: Vec<Value> = lines(WEB_SEARCH)
        .into_iter()
        .map(|(_, l)| l["payload"].clone())
        .filter(|p| p["type"] == "web_search_call")
        .collect();
    let searches: Vec<&ImportedEntry> = entries(&log)
        .iter()
        .filter(|e| {
            e.tool_calls
                .as_ref()
                .is_some_and(|c| c[0]["name"] == "web_search")
        })
        .collect();
    assert_eq!(searches.len(), items.len());
    for (entry, item) in searches.iter().zip(&items) {
        assert_eq!(entry.role, Role::Assistant);
        let call = &entry.tool_calls.as_ref().expect("a call")[0];
        let action = item.get("action").cloned().unwrap_or(serde_json::json!({}));
        assert_eq!(call["arguments"], action);
        assert_eq!(call["status"], item["status"]);
        assert!(call.get("id").is_none(), "no result answers a web search");
        let status = match item["status"].as_str() {
            Some("completed") => Some(ToolStatus::Ok),
            Some("failed") => Some(ToolStatus::Error),
            _ => None,
        };
        assert_eq!(entry.tool_status, status);
    }
    assert_eq!(
        searches[0].tool_calls.as_ref().expect("call")[0]["arguments"]["query"],
        "serde untagged enum attribute"
    );
    assert_eq!(log.skipped.get("event_msg:web_search_end"), Some(&1));
    assert_eq!(log.skipped.get("response_item:tool_search_call"), Some(&1));
}

#[test]
fn test_compaction_is_a_summary_entry_and_earlier_entries_are_kept() {
    let log = import::parse_codex(COMPACTION);
    let all = entries(&log);
    let summaries: Vec<&ImportedEntry> = all
        .iter()
        .filter(|e| e.kind == Some(EntryKind::Summary))
        .collect();
    let compacted: Vec<(u64, Value)> = lines(COMPACTION)
        .into_iter()
        .filter(|(_, l)| l["type"] == "compacted")
        .collect();
    assert_eq!(
        summaries.len(),
        compacted.len(),
        "the marker events are echoes"
    );
    assert_eq!(summaries[0].role, Role::System);
    assert_eq!(
        summaries[0].content,
        compacted[0].1["payload"]["message"]
            .as_str()
            .expect("message")
    );
    assert_eq!(line_of(summaries[0]), compacted[0].0);
    let encrypted = compacted[1].1["payload"]["replacement_history"][0]["encrypted_content"]
        .as_str()
        .expect("encrypted");
    assert_eq!(
        summaries[1].content,
        format!("[encrypted compaction summary: {} bytes]", encrypted.len())
    );
    // Every message and call before the first compaction is still there, in order.
    let before: Vec<u64> = lines(COMPACTION)
        .into_iter()
        .filter(|(n, l)| *n < compacted[0].0 && l["type"] == "response_item")
        .map(|(n, _)| n)
        .collect();
    let kept: Vec<u64> = all
        .iter()
        .map(line_of)
        .filter(|n| *n < compacted[0].0)
        .collect();
    assert_eq!(kept, before);
    assert_eq!(log.skipped.get("event_msg:context_compacted"), Some(&2));
}

/// `(input without cache, cache read, output)` summed over the fixture's responses: a
/// `token_count` whose running total did not change repeats the previous one.
fn fixture_usage(text: &str) -> (u64, u64, u64) {
    let mut previous: Option<Value> = None;
    let mut sum = (0, 0, 0);
    for (_, line) in lines(text) {
        let p = &line["payload"];
        if p["type"] != "token_count" || p["info"].is_null() {
            continue;
        }
        let total = p["info"]["total_token_usage"].clone();
        if previous.as_ref() == Some(&total) {
            continue;
        }
        previous = Some(total);
        let last = &p["info"]["last_token_usage"];
        let n = |k: &str| last[k].as_u64().expect(k);
        sum.0 += n("input_tokens") - n("cached_input_tokens");
        sum.1 += n("cached_input_tokens");
        sum.2 += n("output_tokens");
    }
    sum
}

#[test]
fn test_cached_input_tokens_are_cache_reads_and_not_input() {
    for text in [CACHE, COMPACTION, TOKEN_FIRST] {
        let log = import::parse_codex(text);
        let usages: Vec<&spool::TurnUsage> = entries(&log)
            .iter()
            .filter_map(|e| e.turn_usage.as_ref())
            .collect();
        let parsed = usages.iter().fold((0, 0, 0), |s, u| {
            (
                s.0 + u.input_tokens,
                s.1 + u.cache_read_tokens,
                s.2 + u.output_tokens,
            )
        });
        let expected = fixture_usage(text);
        assert!(expected.1 > 0, "the fixture reads from the cache");
        assert_eq!(parsed, expected);
        assert!(usages.iter().all(|u| u.cache_write_tokens == 0));
    }
    let usage = entries(&import::parse_codex(CACHE))
        .iter()
        .find_map(|e| e.turn_usage.clone())
        .expect("usage");
    assert_eq!(usage.model, "gpt-5.1-codex-max");
    // Imported, the session counts them apart.
    let storage = MemoryStorage::new();
    let session = import::parse_codex(CACHE).sessions.remove(0);
    let outcome = run(
        &storage,
        import::import_session(
            "w",
            ImportRequest {
                key: "import:codex:cache".into(),
                session_id: "cache".into(),
                format: ImportFormat::Codex,
                session,
                parent_key: None,
                prices: None,
            },
            9_999_999_999_999,
        ),
    )
    .expect("imported");
    let (input, cache_read, output) = fixture_usage(CACHE);
    assert_eq!(
        (
            outcome.session.input_tokens,
            outcome.session.cache_read,
            outcome.session.output_tokens
        ),
        (input, cache_read, output)
    );
}

/// Codex 0.5x writes a request's `token_count` before the request's items, and an
/// automatic compaction's request writes one and no item: every count is imported, on
/// the first assistant (or summary) entry of its request.
#[test]
fn test_a_token_count_written_before_its_items_goes_on_the_entries_after_it() {
    let log = import::parse_codex(TOKEN_FIRST);
    let all = entries(&log);
    let fixture = lines(TOKEN_FIRST);
    // Each counted request (a new running total): its line and its uncached input.
    let mut counts: Vec<(u64, u64)> = Vec::new();
    let mut previous = None;
    for (number, line) in &fixture {
        let info = &line["payload"]["info"];
        if line["payload"]["type"] != "token_count" || info.is_null() {
            continue;
        }
        if previous.as_ref() == Some(&info["total_token_usage"]) {
            continue;
        }
        previous = Some(info["total_token_usage"].clone());
        let last = &info["last_token_usage"];
        let n = |k: &str| last[k].as_u64().expect(k);
        counts.push((*number, n("input_tokens") - n("cached_input_tokens")));
    }
    assert_eq!(counts.len(), 5);
    // Where each count went: the first entry after its line that can hold usage.
    let holders: Vec<(u64, u64)> = all
        .iter()
        .filter_map(|e| e.turn_usage.as_ref().map(|u| (line_of(e), u.input_tokens)))
        .collect();
    let expected: Vec<(u64, u64)> = counts
        .iter()
        .map(|(at, input)| {
            let holder = all
                .iter()
                .find(|e| {
                    line_of(e) > *at
                        && (e.role == Role::Assistant || e.kind == Some(EntryKind::Summary))
                })
                .expect("an entry after the count");
            (line_of(holder), *input)
        })
        .collect();
    assert_eq!(holders, expected);
    let summary = all
        .iter()
        .find(|e| e.kind == Some(EntryKind::Summary))
        .expect("the compaction");
    assert!(
        summary.turn_usage.is_some(),
        "the compaction request's usage"
    );
    let input: u64 = holders.iter().map(|(_, i)| i).sum();
    assert_eq!(input, 71_933);
    // The repeated running total is counted, not applied again.
    assert_eq!(log.skipped.get("event_msg:token_count"), Some(&1));
    // A count that no entry follows has nothing to go on: counted, not imported.
    let cut = fixture
        .iter()
        .rfind(|(_, l)| l["type"] == "compacted")
        .expect("a compaction")
        .0;
    let head: String = TOKEN_FIRST
        .lines()
        .take(cut as usize - 1)
        .map(|l| format!("{l}\n"))
        .collect();
    let head = import::parse_codex(&head);
    assert_eq!(head.skipped.get("event_msg:token_count"), Some(&1));
    let imported: u64 = entries(&head)
        .iter()
        .filter_map(|e| e.turn_usage.as_ref())
        .map(|u| u.input_tokens)
        .sum();
    assert_eq!(imported, counts[..3].iter().map(|(_, i)| i).sum::<u64>());
}

#[test]
fn test_developer_and_environment_messages_are_context_entries() {
    let log = import::parse_codex(CONTEXT);
    let all = entries(&log);
    let kinds: Vec<(Role, Option<EntryKind>)> = all.iter().map(|e| (e.role, e.kind)).collect();
    assert_eq!(
        kinds,
        [
            (Role::System, Some(EntryKind::Context)),
            (Role::System, Some(EntryKind::Context)),
            (Role::System, Some(EntryKind::Context)),
            (Role::User, None),
            (Role::Assistant, None),
        ]
    );
    assert!(all[2].content.starts_with("<environment_context>"));
    assert_eq!(all[3].content, "Make the lint pass.");
    // The rollout fixture's environment block is context too.
    let rollout = import::parse_codex(ROLLOUT);
    assert_eq!(entries(&rollout)[0].kind, Some(EntryKind::Context));
}

#[test]
fn test_failed_and_aborted_tool_calls_keep_their_status() {
    let log = import::parse_codex(FAILURES);
    let status = |call: &str| -> Vec<Option<ToolStatus>> {
        entries(&log)
            .iter()
            .filter(|e| e.role == Role::Tool && e.tool_call_id.as_deref() == Some(call))
            .map(|e| e.tool_status)
            .collect()
    };
    use ToolStatus::{Cancelled, Error, Ok};
    assert_eq!(status("call_f1"), [Some(Error)], "structured exit_code 2");
    assert_eq!(status("call_f2"), [Some(Error)], "Exit code: 2");
    assert_eq!(
        status("call_f3"),
        [Some(Error)],
        "Process exited with code 101"
    );
    assert_eq!(status("call_f4"), [Some(Ok)], "Process exited with code 0");
    assert_eq!(status("call_f5"), [Some(Ok)], "the patch applied");
    assert_eq!(status("call_f6"), [Some(Cancelled)], "timed out");
    assert_eq!(status("call_f7"), [Some(Cancelled)], "aborted by user");
    // A call the aborted turn left without an output is answered as cancelled.
    assert_eq!(status("call_f8"), [Some(Cancelled)]);
    let aborted = entries(&log)
        .iter()
        .find(|e| e.tool_call_id.as_deref() == Some("call_f8"))
        .expect("answered");
    assert!(aborted.content.contains("interrupted"), "{aborted:?}");
    assert_eq!(
        log.skipped.get("event_msg:turn_aborted"),
        Some(&1),
        "the first abort found every call answered"
    );
}

#[test]
fn test_every_prefix_of_a_rollout_parses_to_a_prefix_of_the_whole() {
    for (name, text) in ALL {
        let whole = import::parse_codex(text);
        let whole = whole.sessions.first().map_or(&[][..], |s| &s.entries[..]);
        let mut end = 0;
        for line in text.split_inclusive('\n') {
            end += line.len();
            let part = import::parse_codex(&text[..end]);
            let part = part.sessions.first().map_or(&[][..], |s| &s.entries[..]);
            assert!(part.len() <= whole.len(), "{name} at byte {end}");
            for (p, w) in part.iter().zip(whole) {
                assert_eq!(
                    (&p.message_id, &p.content),
                    (&w.message_id, &w.content),
                    "{name} at byte {end}"
                );
                assert!(
                    p.turn_usage.is_none() || p.turn_usage == w.turn_usage,
                    "{name} at byte {end}: {p:?} vs {w:?}"
                );
                let mut p = p.clone();
                p.turn_usage.clone_from(&w.turn_usage);
                assert_eq!(&p, w, "{name} at byte {end}");
            }
        }
    }
}

/// Standard base64, padded or not.
fn decode(text: &str) -> Vec<u8> {
    let value = |b: u8| -> u32 {
        match b {
            b'A'..=b'Z' => u32::from(b - b'A'),
            b'a'..=b'z' => u32::from(b - b'a') + 26,
            b'0'..=b'9' => u32::from(b - b'0') + 52,
            b'+' => 62,
            b'/' => 63,
            _ => panic!("not base64: {b}"),
        }
    };
    let (mut out, mut acc, mut bits) = (Vec::new(), 0u32, 0u32);
    for b in text.bytes().filter(|b| *b != b'=') {
        acc = (acc << 6) | value(b);
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
            acc &= (1 << bits) - 1;
        }
    }
    out
}

fn sha256(bytes: &[u8]) -> String {
    use sha2::Digest as _;
    sha2::Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

#[test]
fn test_every_entry_of_every_fixture_is_written_as_parsed() {
    for (i, (name, text)) in ALL.into_iter().enumerate() {
        let storage = MemoryStorage::new();
        let session = import::parse_codex(text).sessions.remove(0);
        let parsed = session.entries.clone();
        let key = format!("import:codex:{i}");
        let outcome = run(
            &storage,
            import::import_session(
                "w",
                ImportRequest {
                    key: key.clone(),
                    session_id: format!("s{i}"),
                    format: ImportFormat::Codex,
                    session,
                    parent_key: None,
                    prices: None,
                },
                9_999_999_999_999,
            ),
        )
        .expect(name);
        assert!(
            outcome.adjusted.is_empty(),
            "{name}: {:?}",
            outcome.adjusted
        );
        assert_eq!(outcome.imported, parsed.len() as u64, "{name}");
        let page = run(
            &storage,
            spool::read_page(
                "w",
                &key,
                spool::PageRequest {
                    order: spool::Order::OldestFirst,
                    cursor: None,
                    limit: 100,
                },
            ),
        )
        .expect("page");
        for (stored, parsed) in page.entries.iter().zip(&parsed) {
            assert_eq!(
                (
                    &stored.message_id,
                    &stored.reasoning,
                    &stored.attachments,
                    stored.kind,
                    stored.tool_status
                ),
                (
                    &parsed.message_id,
                    &parsed.reasoning,
                    &parsed.attachments,
                    parsed.kind,
                    parsed.tool_status
                ),
                "{name}"
            );
        }
    }
}

/// A rollout parsed a slice at a time and each slice imported as it comes makes what
/// the whole file makes: the same entries, usage included (a `token_count` in a later
/// slice than its entry updates it), the same counts, the same line numbers.
#[test]
fn test_a_rollout_imported_slice_by_slice_equals_the_whole() {
    for (name, text) in ALL {
        crate::support::slices::check(ImportFormat::Codex, name, text);
    }
}

#[test]
fn test_a_slice_must_be_whole_lines_and_a_spool_export_is_read_whole() {
    let mut cursor = import::ParseCursor::default();
    let cut = import::parse_slice(ImportFormat::Codex, &mut cursor, "{\"type\":", false)
        .expect_err("a cut line in a middle slice");
    assert_eq!(cut.code(), "invalid_argument");
    let export = import::parse_slice(ImportFormat::Spool, &mut cursor, "", true)
        .expect_err("a Spool export is parsed whole");
    assert_eq!(export.code(), "invalid_argument");
    // The end of a file may be a line cut short: the tail, numbered in the file.
    let mut cursor = import::ParseCursor::default();
    let first =
        import::parse_slice(ImportFormat::Codex, &mut cursor, "\n\n", false).expect("blank lines");
    assert_eq!(first.lines, 0);
    let end =
        import::parse_slice(ImportFormat::Codex, &mut cursor, "{\"type\":", true).expect("the end");
    assert_eq!(end.truncated_tail, Some(3));
}

/// A legacy rollout (a bare header line, bare items, `record_type: state` lines) written
/// with CRLF line ends reads as the same rollout with LF ones, whole or a slice at a
/// time.
#[test]
fn test_a_legacy_rollout_with_crlf_line_ends_reads_as_with_lf() {
    let crlf = LEGACY.replace('\n', "\r\n");
    assert!(crlf.contains("\r\n") && LEGACY.lines().count() > 3);
    let lf = import::parse_codex(LEGACY);
    let got = import::parse_codex(&crlf);
    assert_eq!(got.sessions, lf.sessions);
    assert!(!got.sessions[0].entries.is_empty());
    assert_eq!(
        (&got.skipped, &got.invalid_lines, got.truncated_tail),
        (&lf.skipped, &lf.invalid_lines, lf.truncated_tail)
    );
    assert_eq!(got.skipped.get("state"), Some(&1));
    assert!(
        got.sessions[0]
            .entries
            .iter()
            .all(|e| !e.content.ends_with('\r')),
        "no carriage return is content"
    );
    crate::support::slices::check(ImportFormat::Codex, "legacy-crlf", &crlf);
}
