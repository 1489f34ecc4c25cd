use super::*;
use crate::storage::binary::{Reader, put_varint};
use crate::storage::{Batch, KeyRange};
use crate::types::{AppendRequest, Entry, Role, ToolStatus};
use std::collections::BTreeSet;

fn entry(id: u64, at: u64, text: &str) -> Entry {
    Entry::from_request(
        AppendRequest::new(Role::User, text),
        id,
        format!("m{id}"),
        at,
    )
}

#[test]
fn test_filter_terms_start_with_a_control_character() {
    for role in [Role::User, Role::Assistant, Role::Tool, Role::System] {
        assert_eq!(role_term(role), format!("{FILTER}r:{}", role.as_str()));
    }
    assert_eq!(tool_term("Bash"), "\u{1}t:bash");
    assert_eq!(error_term(), "\u{1}e");
}

#[test]
fn test_segment_round_trips() {
    let segment = invert(&[
        entry(3, 100, "parse the parser parse"),
        entry(4, 90, "Parser café"),
        entry(9, 2000, "日本語"),
    ]);
    let bytes = encode(&segment);
    let back = decode(b"g", &bytes, |_: &[u8]| Want::Keep).expect("decodes");
    assert_eq!(back, segment);
    assert_eq!(back.terms["parse"], [(0, 2)]);
    assert_eq!(back.docs[0].len, 4);
    // The created_at delta may go backwards (zigzag).
    assert_eq!(back.docs[1].created_at, 90);
    let parser = &back.terms["parser"];
    assert_eq!(back.docs[parser[1].0 as usize].id, 4);
    let only = decode(b"g", &bytes, |t: &[u8]| (t == b"cafe").into()).expect("decodes");
    assert_eq!(only.terms.keys().collect::<Vec<_>>(), ["cafe"]);
    assert_eq!(only.docs.len(), 3);
    let empty = Segment::default();
    assert_eq!(
        decode(b"g", &encode(&empty), |_: &[u8]| Want::Keep).expect("empty"),
        empty
    );
}

#[test]
fn test_skipped_postings_leave_the_wanted_terms_exact() {
    // Long lists (multi-byte deltas) and frequencies above one on the terms skipped,
    // around the terms kept.
    let mut entries = Vec::new();
    for i in 0..400u64 {
        let text = match i % 3 {
            0 => "again again again keep alpha",
            1 => "omega keep",
            _ => "again zeta zeta",
        };
        entries.push(entry(i + 1, 10 + i, text));
    }
    let segment = invert(&entries);
    let expected = |kept: &[&str]| -> BTreeMap<String, Vec<(u32, u32)>> {
        segment
            .terms
            .iter()
            .filter(|(term, _)| kept.contains(&term.as_str()))
            .map(|(term, list)| (term.clone(), list.clone()))
            .collect()
    };
    // Every format reads alike: format 1 counts postings, 2 and 3 measure them.
    for format in [INDEX_FORMAT_V1, INDEX_FORMAT_V2, INDEX_FORMAT] {
        let bytes = encode_in(format, &segment);
        for kept in [&["keep"][..], &["alpha", "zeta"], &["again"], &[]] {
            let part = decode(b"g", &bytes, |t: &[u8]| {
                kept.iter().any(|k| k.as_bytes() == t).into()
            })
            .expect("decodes");
            assert_eq!(part.terms, expected(kept), "format {format}, {kept:?}");
            assert_eq!(part.docs, segment.docs);
        }
        // `SkipRest` keeps nothing after the term it answers, and still checks it.
        // In byte order: the role's term, again, alpha, keep, omega, zeta.
        let part = decode(b"g", &bytes, |t: &[u8]| match t {
            b"alpha" | b"zeta" => Want::Keep,
            b"keep" => Want::SkipRest,
            _ => Want::Skip,
        })
        .expect("decodes");
        assert_eq!(part.terms, expected(&["alpha"]), "format {format}");
        // A value cut inside the postings of a skipped term still does not decode.
        for cut in [bytes.len() - 1, bytes.len() - 40, bytes.len() / 2] {
            for want in [Want::Skip, Want::SkipRest] {
                let err = decode(b"g\x00k", &bytes[..cut], |_: &[u8]| want).expect_err("cut");
                assert_eq!(err.code(), "corruption", "format {format}, {want:?}");
            }
        }
    }
}

#[test]
fn test_damaged_values_are_corruption() {
    for format in [INDEX_FORMAT_V1, INDEX_FORMAT_V2, INDEX_FORMAT] {
        damaged_values_are_corruption(format);
    }
}

fn damaged_values_are_corruption(format: u8) {
    let good = encode_in(
        format,
        &invert(&[entry(1, 5, "alpha beta gamma"), entry(2, 6, "beta")]),
    );
    let mut cases: Vec<Vec<u8>> = vec![
        vec![],
        vec![9],
        vec![format],
        vec![
            format, 0, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f,
        ],
        [good.as_slice(), &[0]].concat(),
        // A huge claimed count is refused before it is allocated.
        vec![format, 0xff, 0xff, 0xff, 0xff, 0x0f],
        // Ids that do not increase.
        vec![format, 2, 1, 0, 1, 0, 0, 1, 0],
    ];
    // A posting past the doc table (format 3: after the length of its one block).
    let block: &[u8] = if format == INDEX_FORMAT { &[5] } else { &[] };
    cases.push([&[format, 1, 1, 0, 1, 1], block, &[0, 1, b'a', 1, 10]].concat());
    for cut in 1..good.len() {
        cases.push(good[..cut].to_vec());
    }
    for bytes in cases {
        let err = decode(b"g\x00k", &bytes, |_: &[u8]| Want::Keep).expect_err("damaged");
        assert_eq!(err.code(), "corruption", "format {format}: {bytes:?}");
    }
}

/// A segment of `n` terms `t000`, `t001`, …, term `i` in entries `0..=i % 7`.
fn many_terms(n: u32) -> Segment {
    let mut segment = Segment {
        docs: (1..=7)
            .map(|id| Doc {
                id,
                created_at: 9,
                len: 3,
            })
            .collect(),
        terms: BTreeMap::new(),
    };
    for i in 0..n {
        let list = (0..=i % 7).map(|at| (at, 1 + at % 2)).collect();
        segment.terms.insert(format!("t{i:03}"), list);
    }
    segment
}

/// Keeps the terms from `from` to `to` (excluded), and counts the terms it is
/// asked about.
struct Between<'a> {
    from: &'a str,
    to: &'a str,
    asked: std::cell::Cell<usize>,
}

impl Wanted for &Between<'_> {
    fn want(&self, term: &[u8]) -> Want {
        self.asked.set(self.asked.get() + 1);
        if term >= self.to.as_bytes() {
            Want::SkipRest
        } else {
            (term >= self.from.as_bytes()).into()
        }
    }

    fn may_want(&self, from: &[u8], to: Option<&[u8]>) -> bool {
        to.is_none_or(|to| self.from.as_bytes() < to) && self.to.as_bytes() > from
    }
}

#[test]
fn test_blocks_of_terms_are_read_only_where_they_may_be_wanted() {
    for n in [1, 15, 16, 17, 32, 100] {
        let segment = many_terms(n);
        let bytes = encode(&segment);
        assert_eq!(
            decode(b"g", &bytes, |_: &[u8]| Want::Keep).expect("all"),
            segment
        );
        for (from, to) in [
            ("t000", "t001"),
            ("t020", "t036"),
            ("t050", "t051"),
            ("t099", "u"),
        ] {
            let between = Between {
                from,
                to,
                asked: std::cell::Cell::new(0),
            };
            let got = decode(b"g", &bytes, &between).expect("decodes");
            let expected: BTreeMap<String, Vec<(u32, u32)>> = segment
                .terms
                .iter()
                .filter(|(t, _)| t.as_str() >= from && t.as_str() < to)
                .map(|(t, l)| (t.clone(), l.clone()))
                .collect();
            assert_eq!(got.terms, expected, "{n} terms, {from}..{to}");
            // Only the blocks that hold the range, and the term after it, are read.
            let blocks = expected.len().div_ceil(TERMS_PER_BLOCK) + 1;
            assert!(
                between.asked.get() <= blocks * TERMS_PER_BLOCK + 1,
                "{n} terms, {from}..{to}: asked {}",
                between.asked.get()
            );
            // A cut value is corruption, wherever the cut and whatever is read.
            for cut in 1..bytes.len() {
                let err = decode(b"g", &bytes[..cut], &between).expect_err("cut");
                assert_eq!(err.code(), "corruption", "{n} terms, cut at {cut}");
            }
        }
    }
}

#[test]
fn test_damaged_blocks_of_terms_are_corruption() {
    // A bucket record: terms, no doc table.
    let segment = Segment {
        docs: Vec::new(),
        ..many_terms(40)
    };
    let good = encode(&segment);
    // Format, no docs, 40 terms, then the three blocks' lengths.
    assert_eq!(good[..3], [INDEX_FORMAT, 0, 40]);
    let mut lengths = Reader::new(b"g", &good[3..]);
    let first = lengths.varint().expect("length") as usize;
    let (second, third) = (
        lengths.varint().expect("length") as usize,
        lengths.varint().expect("length") as usize,
    );
    let head = good.len() - lengths.rest.len();
    assert_eq!(head + first + second + third, good.len());
    let with_lengths = |a: u64, b: u64, c: u64| {
        let mut out = good[..3].to_vec();
        for l in [a, b, c] {
            put_varint(&mut out, l);
        }
        out.extend_from_slice(&good[head..]);
        out
    };
    let (first, second, third) = (first as u64, second as u64, third as u64);
    let mut cases = vec![
        // Lengths that do not add up to the value.
        with_lengths(first, second, third - 1),
        with_lengths(first, second + 1, third),
        with_lengths(first, second, u64::MAX),
        with_lengths(first + second, 0, third),
    ];
    // The second block's first term shares a prefix with the term before it.
    let mut shares = good.clone();
    shares[head + first as usize] = 1;
    cases.push(shares);
    // Blocks out of order: the second's first term spelled after the third's.
    let mut order = good.clone();
    let at = head + first as usize + 2;
    assert_eq!(&order[at..at + 4], b"t016");
    order[at + 1] = b'9';
    cases.push(order);
    for bytes in cases {
        for want in [Want::Keep, Want::Skip, Want::SkipRest] {
            let err = decode(b"g", &bytes, |_: &[u8]| want).expect_err("damaged");
            assert_eq!(err.code(), "corruption", "{want:?}: {bytes:?}");
        }
    }
}

/// Each term of `entry` with its frequency.
fn entry_terms(entry: &Entry) -> BTreeMap<String, u32> {
    invert([entry])
        .terms
        .into_iter()
        .map(|(term, list)| (term, list[0].1))
        .collect()
}

#[test]
fn test_a_run_counts_each_term_per_entry() {
    let mut a = entry(3, 10, "parse the parser; Parse again");
    a.reasoning = Some("parse once more".into());
    a.role = Role::Assistant;
    a.tool_calls = Some(serde_json::json!([
        {"id": "c1", "name": "Bash", "input": {"command": "ls"}},
        {"id": "c2", "name": "bash", "input": {"command": "pwd"}}
    ]));
    let b = entry(7, 12, "parser parser");
    let c = entry(9, 12, "nothing shared");
    let run = Run::of([&a, &b, &c]);
    assert_eq!(
        run.docs()
            .iter()
            .map(|d| (d.id, d.created_at, d.len))
            .collect::<Vec<_>>(),
        // a: parse the parser parse again (content), parse once more (reasoning),
        // c1 bash ls c2 bash pwd (the tool calls' strings)
        [(3, 10, 14), (7, 12, 2), (9, 12, 2)]
    );
    // 11 text terms and 2 filter terms of a, the user's role of b, 2 terms of c.
    assert_eq!(run.term_count(), 16);
    let segment = run.into_segment(|_| true);
    assert_eq!(segment.terms["parse"], [(0, 3)]);
    assert_eq!(segment.terms["parser"], [(0, 1), (1, 2)]);
    assert_eq!(segment.terms["bash"], [(0, 2)]);
    assert_eq!(
        segment.terms[&tool_term("bash")],
        [(0, 1)],
        "a filter term is there or not"
    );
    assert_eq!(segment.terms[role_term(Role::User)], [(1, 1), (2, 1)]);
    let kept = Run::of([&a, &b]).into_segment(|t| t.starts_with(b"pars"));
    assert_eq!(kept.terms.keys().collect::<Vec<_>>(), ["parse", "parser"]);
    assert_eq!(kept.docs.len(), 2);
}

#[test]
fn test_a_run_of_many_distinct_terms_counts_each_as_one_count_would() {
    // Thousands of distinct terms grow the term table several times; short and long
    // terms, and terms that differ only in their last bytes, stay apart.
    let entries: Vec<Entry> = (0..40u64)
        .map(|i| {
            let words: Vec<String> = (0..150u64)
                .map(|w| match w % 3 {
                    0 => format!("w{}", (i * 150 + w) % 4000),
                    1 => format!("longer{}term{}", w, i % 5),
                    _ => format!("shared{}", w % 7),
                })
                .collect();
            entry(i + 1, 10 + i, &words.join(" "))
        })
        .collect();
    let segment = Run::of(&entries).into_segment(|_| true);
    let mut expected: BTreeMap<String, Vec<(u32, u32)>> = BTreeMap::new();
    for (doc, e) in entries.iter().enumerate() {
        let mut counts: BTreeMap<String, u32> = BTreeMap::new();
        crate::search::tokenize::each_term(&e.content, |t| {
            *counts.entry(t.term.to_owned()).or_default() += 1;
        });
        counts.insert(role_term(e.role).to_owned(), 1);
        for (term, tf) in counts {
            expected.entry(term).or_default().push((doc as u32, tf));
        }
    }
    // The table starts at 2,048 slots and doubles at half full: grown twice.
    assert!(expected.len() > 2048, "{} distinct terms", expected.len());
    assert_eq!(segment.terms, expected);
}

#[test]
fn test_a_written_run_is_its_segment_split_by_bucket() {
    let texts = [
        "fix parse_nested_list in src/parser.rs (E0502)",
        "日本語のテキスト and café crème",
        "parseNestedList again, and again; the parser",
        "",
        "zeta alpha beta gamma delta epsilon",
        // Terms alike in their first 8 bytes and after.
        "configurations configuration configure configured configuratio configurat",
    ];
    let entries: Vec<Entry> = texts
        .iter()
        .enumerate()
        .map(|(i, t)| entry(i as u64 * 2 + 5, 100 - i as u64, t))
        .collect();
    let mut batch = Batch::default();
    put_run(&mut batch, "s1", 5, &Run::of(&entries));
    let whole = invert(&entries);
    let mut expected: BTreeMap<Vec<u8>, Vec<u8>> = BTreeMap::new();
    let mut buckets: BTreeMap<u8, Segment> = BTreeMap::new();
    for (term, list) in &whole.terms {
        let part = buckets.entry(bucket(term)).or_default();
        part.terms.insert(term.clone(), list.clone());
    }
    for (b, part) in &buckets {
        expected.insert(run_key("s1", *b, 5), encode(part));
    }
    let docs = Segment {
        docs: whole.docs.clone(),
        terms: BTreeMap::new(),
    };
    expected.insert(run_key("s1", DOCS, 5), encode(&docs));
    assert!(buckets.len() > 3, "the terms spread over buckets");
    let written: BTreeMap<Vec<u8>, Vec<u8>> = batch
        .mutations
        .into_iter()
        .map(|m| match m {
            crate::storage::Mutation::Put(kv) => (kv.key, kv.value),
            other => panic!("a run only puts: {other:?}"),
        })
        .collect();
    assert_eq!(written, expected);
}

#[test]
fn test_entry_terms_cover_fields_and_filters() {
    let mut e = entry(1, 5, "see src/parser.rs");
    e.role = Role::Assistant;
    e.reasoning = Some("thinking about parseNestedList".into());
    e.tool_calls = Some(serde_json::json!([
        {"id": "c1", "type": "function", "function": {"name": "Bash", "arguments": "{\"command\":\"cargo test\"}"}},
        {"id": "c2", "name": "read_file", "input": {"path": "README.md"}}
    ]));
    let terms = entry_terms(&e);
    for t in [
        "parser",
        "nested",
        "parsenestedlist",
        "cargo",
        "readme",
        "bash",
        "read_file",
    ] {
        assert!(terms.contains_key(t), "{t}: {terms:?}");
    }
    assert!(terms.contains_key(role_term(Role::Assistant)));
    assert!(terms.contains_key(&tool_term("bash")));
    assert!(terms.contains_key(&tool_term("read_file")));
    assert!(!terms.contains_key(&error_term()));
    assert!(!terms.contains_key("path"), "object keys are not indexed");
    assert!(
        terms.contains_key("command"),
        "keys inside argument strings are text"
    );
    let mut r = entry(2, 6, "boom");
    r.role = Role::Tool;
    r.tool_status = Some(ToolStatus::Error);
    assert!(entry_terms(&r).contains_key(&error_term()));
}

#[test]
fn test_fields_are_capped() {
    let big = "é".repeat(MAX_FIELD_BYTES);
    let cut = capped(&big);
    assert!(cut.len() <= MAX_FIELD_BYTES && cut.len() + 1 >= MAX_FIELD_BYTES);
}

#[test]
fn test_a_prefix_shares_the_bucket_of_its_expansions() {
    for (prefix, term) in [
        ("pa", "parse"),
        ("pars", "parser"),
        ("日", "日本"),
        ("\u{1}r", "\u{1}r:tool"),
    ] {
        assert_eq!(bucket(prefix), bucket(term), "{prefix} {term}");
    }
    assert!((0..200).all(|i| bucket(&format!("w{i}")) < BUCKETS));
    let spread: BTreeSet<u8> = [
        "alpha", "beta", "gamma", "delta", "omega", "zeta", "kappa", "sigma",
    ]
    .iter()
    .map(|t| bucket(t))
    .collect();
    assert!(spread.len() > 3, "{spread:?}");
}

#[test]
fn test_keys_sort_runs_by_bucket_then_first_id() {
    assert!(run_key("s", 1, 500) < run_key("s", 2, 1));
    assert!(run_key("s", 1, 1) < run_key("s", 1, 2));
    assert!(KeyRange::prefix(&bucket_runs("s", 3)).contains(&run_key("s", 3, 9)));
    assert!(
        KeyRange::prefix(&keys::identity(keys::SEARCH_POSTINGS, "s"))
            .contains(&run_key("s", DOCS, 9))
    );
    assert_eq!(key_run(&run_key("s", 3, 9)).expect("run"), 9);
}
