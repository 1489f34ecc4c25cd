//! Token estimates and cost estimates of imported and appended usage, and the usage
//! report: its rows are the sessions' figures, its totals their sums.
#![cfg(not(target_arch = "wasm32"))]

use spool::compaction::entry_tokens;
use spool::import::{self, ImportFormat};
use spool::usage::{PriceTable, UsageReport, UsageRequest, usage_report};
use spool::{AppendRequest, MemoryStorage, Role, Session, TurnUsage, run};

use crate::support;

const CLAUDE: &str = include_str!(
    "fixtures/import/claude-code/-home-dev-acme/6f1c2a7e-2b4d-4e8a-9d3f-1a2b3c4d5e6f.jsonl"
);
const CLAUDE_SHAPES: [&str; 3] = [
    include_str!("fixtures/import/claude-shapes/parallel-tools.jsonl"),
    include_str!("fixtures/import/claude-shapes/compaction.jsonl"),
    include_str!("fixtures/import/claude-shapes/task-agent.jsonl"),
];
const CODEX: &str = include_str!(
    "fixtures/import/codex/2025/10/17/rollout-2025-10-17T05-50-00-0199f0a1-7c2e-7d40-9b1a-5e6f7a8b9c0d.jsonl"
);
const CODEX_CACHE: &str = include_str!("fixtures/import/codex-shapes/cache-usage.jsonl");

/// A storage holding every fixture above, imported as `spool import` plans it.
fn imported() -> MemoryStorage {
    let storage = MemoryStorage::new();
    for text in std::iter::once(CLAUDE).chain(CLAUDE_SHAPES) {
        let log = import::parse(ImportFormat::ClaudeCode, text);
        support::slices::import_planned(&storage, ImportFormat::ClaudeCode, log.sessions);
    }
    for text in [CODEX, CODEX_CACHE] {
        let log = import::parse(ImportFormat::Codex, text);
        support::slices::import_planned(&storage, ImportFormat::Codex, log.sessions);
    }
    storage
}

fn sessions(storage: &MemoryStorage) -> Vec<Session> {
    run(storage, spool::list_sessions("w", 1000, None))
        .expect("list")
        .sessions
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9 * a.abs().max(b.abs()).max(1.0)
}

#[test]
fn test_imported_sessions_count_each_entry_at_the_compaction_estimate() {
    let storage = imported();
    for s in sessions(&storage) {
        let entries = support::entries(&storage, "w", &s.key, true);
        assert!(entries.iter().all(|e| e.token_count.is_none()), "{}", s.key);
        let estimate: u64 = entries.iter().map(entry_tokens).sum();
        assert!(estimate > 0, "{}", s.key);
        assert_eq!(s.total_tokens, estimate, "{}", s.key);
        assert_eq!(
            s.metadata["import"]["tokens"], "estimated",
            "{}: says the figure is an estimate",
            s.key
        );
    }
}

#[test]
fn test_imported_usage_is_priced_at_the_builtin_table_as_an_estimate() {
    let storage = imported();
    let builtin = PriceTable::builtin();
    let mut priced = 0;
    for s in sessions(&storage) {
        let usages: Vec<TurnUsage> = support::entries(&storage, "w", &s.key, true)
            .into_iter()
            .filter_map(|e| e.turn_usage)
            .collect();
        let expected: f64 = usages.iter().filter_map(|u| builtin.cost(u)).sum();
        let unpriced = usages.iter().filter(|u| builtin.cost(u).is_none()).count();
        assert!(close(s.estimated_cost_usd, expected), "{}: {s:?}", s.key);
        assert!(close(s.total_cost_usd, expected), "{}", s.key);
        assert_eq!(s.billed_cost_usd, 0.0, "{}: nothing is billed", s.key);
        assert_eq!(s.missing_cost_entries, unpriced as u64, "{}", s.key);
        if expected > 0.0 {
            assert_eq!(s.cost_source, "estimated", "{}", s.key);
            priced += 1;
        }
    }
    assert!(
        priced >= 4,
        "Claude and Codex sessions are priced: {priced}"
    );
}

#[test]
fn test_an_import_takes_the_price_table_it_is_given() {
    const MODEL: &str = "claude-sonnet-4-5-20250929";
    let table = PriceTable::parse(
        r#"{"prices": [{"models": ["claude-sonnet-4-5-20250929"], "input": 100, "output": 0,
            "cache_read": 0, "cache_write": 0, "date": "2026-12-01", "source": "https://example.test"}]}"#,
    )
    .expect("table");
    let storage = MemoryStorage::new();
    let log = import::parse(ImportFormat::ClaudeCode, CLAUDE);
    let mut outcomes = Vec::new();
    for (i, session) in log.sessions.into_iter().enumerate() {
        let request = import::ImportRequest {
            key: format!(
                "import:t:{}",
                import::sanitize_id(&session.provider_session_id)
            ),
            session_id: format!("s{i}"),
            format: ImportFormat::ClaudeCode,
            session,
            parent_key: None,
            prices: Some(table.clone()),
        };
        outcomes.push(run(&storage, import::import_session("w", request, 1)).expect("import"));
    }
    let mut input = 0;
    for o in &outcomes {
        let s = &o.session;
        let entries = support::entries(&storage, "w", &s.key, true);
        let usages: Vec<&TurnUsage> = entries
            .iter()
            .filter_map(|e| e.turn_usage.as_ref())
            .collect();
        let priced: u64 = usages
            .iter()
            .filter(|u| u.model == MODEL)
            .map(|u| u.input_tokens)
            .sum();
        assert!(
            close(s.estimated_cost_usd, priced as f64 * 100.0 / 1e6),
            "{s:?}"
        );
        let unpriced = usages.iter().filter(|u| table.cost(u).is_none()).count();
        assert_eq!(s.missing_cost_entries, unpriced as u64);
        input += priced;
    }
    assert!(input > 0, "the fixture's responses name {MODEL}");
}

#[test]
fn test_a_bad_price_table_is_an_invalid_argument_naming_prices() {
    let mut table = PriceTable::builtin().clone();
    table.prices[0].output = f64::NAN;
    let request = UsageRequest {
        since_ms: None,
        prices: Some(table.clone()),
    };
    let e = run(&MemoryStorage::new(), usage_report("w", request)).expect_err("NaN price");
    assert_eq!(e.code(), "invalid_argument");
    assert!(e.to_string().contains("prices"), "{e}");
    let log = import::parse(ImportFormat::ClaudeCode, CLAUDE);
    let request = import::ImportRequest {
        key: "import:t:x".into(),
        session_id: "s1".into(),
        format: ImportFormat::ClaudeCode,
        session: log.sessions[0].clone(),
        parent_key: None,
        prices: Some(table),
    };
    let e = run(
        &MemoryStorage::new(),
        import::import_session("w", request, 1),
    )
    .expect_err("NaN price");
    assert_eq!(e.code(), "invalid_argument");
}

#[test]
fn test_an_append_with_usage_adds_its_estimate_and_an_unpriced_model_is_counted() {
    let storage = MemoryStorage::new();
    run(
        &storage,
        spool::create_session("w", "agent:a:main", "s1", 1),
    )
    .expect("create");
    let mut request = AppendRequest::new(Role::Assistant, "done");
    request.turn_usage = Some(TurnUsage {
        cache_read_tokens: 1_000_000,
        ..TurnUsage::new("gpt-5-codex", 2_000_000, 100_000)
    });
    run(
        &storage,
        spool::append_entry("w", "agent:a:main", request, 2),
    )
    .expect("append");
    let usage = TurnUsage::new("no-such-model", 10, 10);
    let mut request = AppendRequest::new(Role::Assistant, "again");
    request.turn_usage = Some(usage);
    run(
        &storage,
        spool::append_entry("w", "agent:a:main", request, 3),
    )
    .expect("append");
    let s = run(&storage, spool::get_session("w", "agent:a:main"))
        .expect("get")
        .expect("there");
    let price = PriceTable::builtin().price("gpt-5-codex").expect("priced");
    let expected = (2.0 * price.input + 0.1 * price.output + price.cache_read) / 1.0;
    assert!(close(s.estimated_cost_usd, expected), "{s:?}");
    assert_eq!(
        (s.cost_source.as_str(), s.missing_cost_entries),
        ("estimated", 1)
    );
    assert_eq!(s.billed_cost_usd, 0.0);
}

#[test]
fn test_a_log_imported_while_it_grows_ends_with_the_cost_of_a_fresh_import() {
    let text = CLAUDE_SHAPES[0];
    let prefix: String = text.lines().take(5).map(|l| format!("{l}\n")).collect();
    let grown = MemoryStorage::new();
    for t in [prefix.as_str(), text] {
        let log = import::parse(ImportFormat::ClaudeCode, t);
        support::slices::import_planned(&grown, ImportFormat::ClaudeCode, log.sessions);
    }
    let fresh = MemoryStorage::new();
    let log = import::parse(ImportFormat::ClaudeCode, text);
    support::slices::import_planned(&fresh, ImportFormat::ClaudeCode, log.sessions);
    let (a, b) = (sessions(&grown), sessions(&fresh));
    assert_eq!(a.len(), b.len());
    for (a, b) in a.iter().zip(&b) {
        assert!(
            close(a.estimated_cost_usd, b.estimated_cost_usd),
            "{a:?} {b:?}"
        );
        assert!(b.estimated_cost_usd > 0.0);
        assert_eq!(a.missing_cost_entries, b.missing_cost_entries);
    }
}

fn report(storage: &MemoryStorage, since_ms: Option<u64>) -> UsageReport {
    run(
        storage,
        usage_report(
            "w",
            UsageRequest {
                since_ms,
                prices: None,
            },
        ),
    )
    .expect("report")
}

fn figures(row: &spool::usage::UsageRow) -> [u64; 6] {
    [
        row.responses,
        row.input_tokens,
        row.output_tokens,
        row.cache_read,
        row.cache_write,
        row.unpriced,
    ]
}

fn summed<'a>(rows: impl IntoIterator<Item = &'a spool::usage::UsageRow>) -> ([u64; 6], f64) {
    rows.into_iter().fold(([0; 6], 0.0), |(mut n, cost), row| {
        for (n, x) in n.iter_mut().zip(figures(row)) {
            *n += x;
        }
        (n, cost + row.cost_usd)
    })
}

#[test]
fn test_the_usage_report_totals_equal_the_sum_of_the_sessions_figures() {
    let storage = imported();
    let all = sessions(&storage);
    let r = report(&storage, None);
    // Each session's row is its record's figures.
    let with_usage: Vec<&Session> = all
        .iter()
        .filter(|s| s.input_tokens + s.output_tokens > 0)
        .collect();
    assert_eq!(r.sessions.len(), with_usage.len());
    for s in &with_usage {
        let row = r
            .sessions
            .iter()
            .find(|row| row.name == s.key)
            .expect("a row per session");
        assert_eq!(
            [
                row.input_tokens,
                row.output_tokens,
                row.cache_read,
                row.cache_write
            ],
            [s.input_tokens, s.output_tokens, s.cache_read, s.cache_write],
            "{}",
            s.key
        );
        assert!(close(row.cost_usd, s.estimated_cost_usd), "{}", s.key);
        assert_eq!(row.unpriced, s.missing_cost_entries, "{}", s.key);
    }
    // The totals are the sums of the sessions' figures, and of the days' and models'.
    let tokens = |f: fn(&Session) -> u64| all.iter().map(f).sum::<u64>();
    assert_eq!(
        [
            r.total.input_tokens,
            r.total.output_tokens,
            r.total.cache_read,
            r.total.cache_write
        ],
        [
            tokens(|s| s.input_tokens),
            tokens(|s| s.output_tokens),
            tokens(|s| s.cache_read),
            tokens(|s| s.cache_write)
        ]
    );
    let cost: f64 = all.iter().map(|s| s.estimated_cost_usd).sum();
    assert!(
        cost > 0.0 && close(r.total.cost_usd, cost),
        "{} {cost}",
        r.total.cost_usd
    );
    for rows in [&r.sessions, &r.days, &r.models] {
        let (n, cost) = summed(rows.iter());
        assert_eq!(n, figures(&r.total));
        assert!(close(cost, r.total.cost_usd));
    }
    assert!(r.days.len() >= 2, "the fixtures span days: {:?}", r.days);
    assert!(r.days.windows(2).all(|w| w[0].name < w[1].name));
    assert!(r.models.iter().any(|m| m.name.starts_with("claude-")));
    assert!(r.models.iter().any(|m| m.name.starts_with("gpt-")));
}

#[test]
fn test_since_counts_only_the_entries_written_from_then_on() {
    let storage = imported();
    let r = report(&storage, None);
    let last_day = r.days.last().expect("days").clone();
    let [y, m, d]: [u64; 3] = {
        let mut parts = last_day
            .name
            .split('-')
            .map(|p| p.parse::<u64>().expect("digits"));
        [(); 3].map(|()| parts.next().expect("three parts"))
    };
    // The first millisecond of the last day, from the civil date.
    let since = (0..)
        .map(|day: u64| day * 86_400_000)
        .find(|&ms| spool::export::civil(ms)[..3] == [y, m, d])
        .expect("a day");
    let later = report(&storage, Some(since));
    assert_eq!(later.days, vec![last_day.clone()]);
    assert_eq!(figures(&later.total), figures(&last_day));
    let never = report(&storage, Some(u64::from(u32::MAX) * 1_000_000));
    assert_eq!((never.total.responses, never.sessions.len()), (0, 0));
}
