//! Usage and cost: the price table ([`PriceTable`]), the cost estimate a response's
//! usage adds to its session, and the usage report ([`usage_report`]).
//!
//! **Where a session's cost comes from.** Spool never writes a provider-billed figure
//! itself (`billed_cost_usd` holds only what a writer brought, such as a restored Spool
//! export); it adds an *estimate* for every entry that reports its model and usage
//! (`turn_usage`), at the price table's price of that model: input, output, cache-read
//! and cache-write tokens each times its price per million tokens, in US dollars. The
//! estimate goes to `estimated_cost_usd`, `estimated_cost_component_usd` and
//! `total_cost_usd` (never to `billed_cost_usd`), and `cost_source` becomes `estimated`
//! (`mixed` when the session also has a billed cost). A usage whose model the table
//! does not price adds no cost and counts in `missing_cost_entries`.

mod prices;
mod report;

pub use prices::{BUILTIN_PRICES_JSON, ModelPrice, PriceTable};
pub use report::{UsageReport, UsageRequest, UsageRow, usage_report};

use crate::engine::validate;
use crate::types::{Session, TurnUsage};

/// Adds the cost estimate of `usage` at `prices` to `session` (see the module docs).
pub(crate) fn charge(session: &mut Session, usage: &TurnUsage, prices: &PriceTable) {
    match prices.cost(usage) {
        Some(cost) => add_estimate(session, cost),
        None => session.missing_cost_entries = validate::add(session.missing_cost_entries, 1),
    }
}

/// Takes back what [`charge`] added for `usage` at `prices` (a usage rewritten in
/// place), never below zero.
pub(crate) fn refund(session: &mut Session, usage: &TurnUsage, prices: &PriceTable) {
    match prices.cost(usage) {
        Some(cost) => add_estimate(session, -cost),
        None => session.missing_cost_entries = session.missing_cost_entries.saturating_sub(1),
    }
}

fn add_estimate(session: &mut Session, cost: f64) {
    if cost == 0.0 {
        return;
    }
    for figure in [
        &mut session.estimated_cost_usd,
        &mut session.estimated_cost_component_usd,
        &mut session.total_cost_usd,
    ] {
        *figure = (*figure + cost).max(0.0);
    }
    if cost > 0.0 {
        session.cost_source = match session.cost_source.as_str() {
            "billed" | "mixed" => "mixed",
            _ => "estimated",
        }
        .to_owned();
    }
}

#[cfg(test)]
#[path = "tests/prices.rs"]
mod tests;
