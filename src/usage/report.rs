//! The usage report: the tokens and estimated cost of a workspace's sessions, by
//! session, by day and by model.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::PriceTable;
use crate::branch::history::View;
use crate::engine::op::{Io, OpResult, Operation};
use crate::engine::validate;
use crate::storage::{KeyRange, RangeQuery, keys, prefix_end};
use crate::types::{Order, TurnUsage};

/// What [`usage_report`] counts.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct UsageRequest {
    /// Only entries written at or after this time (ms since the Unix epoch); `None`:
    /// every entry.
    #[serde(default)]
    pub since_ms: Option<u64>,
    /// The price table to estimate costs with; `None`: the built-in one
    /// ([`PriceTable::builtin`]).
    #[serde(default)]
    pub prices: Option<PriceTable>,
}

/// The usage of one group of responses (entries that report their model and usage):
/// a session, a day, a model or all of them.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct UsageRow {
    /// What the row counts: a session key, a day (`YYYY-MM-DD`, UTC), a model id, or
    /// `total`.
    pub name: String,
    /// Responses counted.
    pub responses: u64,
    /// Prompt tokens (not read from or written to the cache).
    pub input_tokens: u64,
    /// Completion tokens.
    pub output_tokens: u64,
    /// Prompt tokens read from the provider's cache.
    pub cache_read: u64,
    /// Prompt tokens written to the provider's cache.
    pub cache_write: u64,
    /// Estimated cost in US dollars, at the price table's prices.
    pub cost_usd: f64,
    /// Responses whose model the price table does not price (no cost counted).
    pub unpriced: u64,
}

impl UsageRow {
    fn named(name: impl Into<String>) -> Self {
        UsageRow {
            name: name.into(),
            ..UsageRow::default()
        }
    }

    fn add(&mut self, usage: &TurnUsage, cost: Option<f64>) {
        self.responses = validate::add(self.responses, 1);
        self.input_tokens = validate::add(self.input_tokens, usage.input_tokens);
        self.output_tokens = validate::add(self.output_tokens, usage.output_tokens);
        self.cache_read = validate::add(self.cache_read, usage.cache_read_tokens);
        self.cache_write = validate::add(self.cache_write, usage.cache_write_tokens);
        match cost {
            Some(cost) => self.cost_usd += cost,
            None => self.unpriced = validate::add(self.unpriced, 1),
        }
    }
}

/// What [`usage_report`] found.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct UsageReport {
    /// The request's `since_ms`.
    pub since_ms: Option<u64>,
    /// One row per session with responses counted, most recently updated first.
    pub sessions: Vec<UsageRow>,
    /// One row per day (UTC) with responses counted, oldest first.
    pub days: Vec<UsageRow>,
    /// One row per model with responses counted, by model id.
    pub models: Vec<UsageRow>,
    /// Every response counted, named `total`.
    pub total: UsageRow,
}

/// The sessions read per range read of the recency index.
const SESSION_CHUNK: u32 = 64;

/// The entries read per transcript page.
const ENTRY_PAGE: usize = 256;

/// The usage of every session of the workspace: each entry of a session's own
/// transcript (active and archived; not a branch's shared history, which is its
/// parent's) that reports its model and usage (`turn_usage`), written at or after
/// `request.since_ms`, counted once under its session, its day (UTC, of its
/// `created_at`) and its model, with its cost at `request.prices` (the built-in
/// table by default). A session's row is what its entries report: with no `since_ms`,
/// the usage counters and the estimated cost its record accounted as those entries were
/// written at the same prices (less what a truncate or rollback removed since). Reads
/// and writes nothing else.
pub fn usage_report(workspace: &str, request: UsageRequest) -> Operation<UsageReport> {
    check!(
        workspace,
        validate::workspace(workspace).and_then(|()| {
            request
                .since_ms
                .map_or(Ok(()), |s| validate::count("since_ms", s))?;
            request.prices.as_ref().map_or(Ok(()), PriceTable::check)
        })
    );
    Operation::new(workspace, move |io| {
        let request = request.clone();
        async move { report(&io, request).await }
    })
}

async fn report(io: &Io, request: UsageRequest) -> OpResult<UsageReport> {
    let prices = request
        .prices
        .as_ref()
        .unwrap_or_else(|| PriceTable::builtin());
    let since = request.since_ms.unwrap_or(0);
    let mut out = UsageReport {
        since_ms: request.since_ms,
        total: UsageRow::named("total"),
        ..UsageReport::default()
    };
    let mut days: BTreeMap<String, UsageRow> = BTreeMap::new();
    let mut models: BTreeMap<String, UsageRow> = BTreeMap::new();
    let prefix = [keys::RECENCY];
    let mut end = prefix_end(&prefix);
    loop {
        let chunk = io
            .range(RangeQuery {
                range: KeyRange {
                    start: prefix.to_vec(),
                    end: end.clone(),
                },
                limit: SESSION_CHUNK,
                reverse: true,
            })
            .await?;
        let exhausted = chunk.len() < SESSION_CHUNK as usize;
        for kv in chunk {
            end = Some(kv.key.clone());
            let loaded = crate::session::decode(&kv.key, kv.value)?;
            let view = View {
                session: &loaded.session,
                identity: loaded.identity(),
                base: &[],
                active_from: loaded.active_from,
            };
            let mut row = UsageRow::named(loaded.session.key.clone());
            let mut cursor: Option<Vec<u8>> = None;
            loop {
                let (items, more) = crate::branch::history::page(
                    io,
                    &view,
                    true,
                    Order::OldestFirst,
                    cursor.as_deref(),
                    ENTRY_PAGE,
                )
                .await?;
                cursor = items.last().map(|i| i.position.clone());
                for item in &items {
                    let entry = &item.entry;
                    let Some(usage) = &entry.turn_usage else {
                        continue;
                    };
                    if entry.created_at < since {
                        continue;
                    }
                    let cost = prices.cost(usage);
                    row.add(usage, cost);
                    out.total.add(usage, cost);
                    let [y, m, d, ..] = crate::export::civil(entry.created_at);
                    let day = format!("{y:04}-{m:02}-{d:02}");
                    days.entry(day.clone())
                        .or_insert_with(|| UsageRow::named(day))
                        .add(usage, cost);
                    models
                        .entry(usage.model.clone())
                        .or_insert_with(|| UsageRow::named(usage.model.clone()))
                        .add(usage, cost);
                }
                if !more || cursor.is_none() {
                    break;
                }
            }
            if row.responses > 0 {
                out.sessions.push(row);
            }
        }
        if exhausted {
            break;
        }
    }
    out.days = days.into_values().collect();
    out.models = models.into_values().collect();
    Ok(out)
}
