//! The price table: what a response's usage costs, per model.
//!
//! A table is data: US dollars per million tokens of input, output, cache reads and
//! cache writes, for the model ids listed with each price, each price with the day it
//! was read and where ([`ModelPrice::date`], [`ModelPrice::source`]). Spool's own table
//! is `data/prices.json` in the repository, built in ([`PriceTable::builtin`]); a host
//! passes a user's table ([`PriceTable::parse`]) where a call takes one.

use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};

use crate::engine::error::Error;
use crate::types::TurnUsage;

/// The built-in table's JSON text (`data/prices.json`).
pub const BUILTIN_PRICES_JSON: &str = include_str!("../../data/prices.json");

/// A price table (the shape of `data/prices.json`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PriceTable {
    /// What the table is, for its readers (ignored).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub about: Option<String>,
    /// The prices, each for the models it lists.
    pub prices: Vec<ModelPrice>,
}

/// The price of one model (or of several ids priced alike), in US dollars per million
/// tokens.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ModelPrice {
    /// The model ids this price is for, as agents write them in their logs (matched
    /// exactly).
    pub models: Vec<String>,
    /// Per million prompt tokens (not read from or written to the cache).
    pub input: f64,
    /// Per million completion tokens.
    pub output: f64,
    /// Per million prompt tokens read from the provider's cache.
    pub cache_read: f64,
    /// Per million prompt tokens written to the provider's cache.
    pub cache_write: f64,
    /// The day the price was read at `source` (`YYYY-MM-DD`).
    pub date: String,
    /// Where the price was read (a URL).
    pub source: String,
}

impl PriceTable {
    /// Spool's own table (`data/prices.json`), parsed once.
    pub fn builtin() -> &'static PriceTable {
        static TABLE: std::sync::OnceLock<PriceTable> = std::sync::OnceLock::new();
        TABLE.get_or_init(|| {
            // A test parses the file: it is data of this build, never a user's input.
            PriceTable::parse(BUILTIN_PRICES_JSON).expect("data/prices.json is a price table")
        })
    }

    /// Parses and checks a price table's JSON text: an `invalid_argument` on field
    /// `prices` saying what is wrong (not JSON of this shape, a price that is negative
    /// or not a number, a price without models, a model listed twice, a date that is
    /// not `YYYY-MM-DD`, an empty source).
    pub fn parse(text: &str) -> Result<PriceTable, Error> {
        // Through a `Value` and the core's one reader (`record::from_json`): a reader
        // of the table's own from the text would be a second one in the module.
        let table: PriceTable = crate::storage::record::from_json(text.as_bytes())
            .map_err(|e| Error::invalid("prices", format!("is not a price table: {e}")))?;
        table.check()?;
        Ok(table)
    }

    /// Checks a table (see [`PriceTable::parse`]).
    pub fn check(&self) -> Result<(), Error> {
        let mut seen = BTreeSet::new();
        for (i, price) in self.prices.iter().enumerate() {
            let at = |what: String| Error::invalid("prices", format!("price {i}: {what}"));
            if price.models.is_empty() {
                return Err(at("lists no model".into()));
            }
            for model in &price.models {
                crate::engine::validate::id("prices.models", model)
                    .map_err(|e| at(format!("model {model:?}: {e}")))?;
                if !seen.insert(model.as_str()) {
                    return Err(at(format!("model {model:?} is priced twice")));
                }
            }
            for (name, value) in [
                ("input", price.input),
                ("output", price.output),
                ("cache_read", price.cache_read),
                ("cache_write", price.cache_write),
            ] {
                if !value.is_finite() || value < 0.0 {
                    return Err(at(format!(
                        "{name} is {value}: a price is a number of dollars, 0 or more"
                    )));
                }
            }
            if !is_date(&price.date) {
                return Err(at(format!("date {:?} is not YYYY-MM-DD", price.date)));
            }
            if price.source.trim().is_empty() {
                return Err(at("has no source".into()));
            }
        }
        Ok(())
    }

    /// The price of `model`, if the table lists it.
    pub fn price(&self, model: &str) -> Option<&ModelPrice> {
        self.prices
            .iter()
            .find(|p| p.models.iter().any(|m| m == model))
    }

    /// What `usage` costs in US dollars at this table's price of its model: `None`
    /// when the table does not price that model (a usage of no tokens costs `0` whatever
    /// its model).
    pub fn cost(&self, usage: &TurnUsage) -> Option<f64> {
        let tokens = [
            usage.input_tokens,
            usage.output_tokens,
            usage.cache_read_tokens,
            usage.cache_write_tokens,
        ];
        if tokens.iter().all(|&n| n == 0) {
            return Some(0.0);
        }
        let p = self.price(&usage.model)?;
        let rates = [p.input, p.output, p.cache_read, p.cache_write];
        let micro: f64 = tokens
            .iter()
            .zip(rates)
            .map(|(&n, rate)| n as f64 * rate)
            .sum();
        Some(micro / 1_000_000.0)
    }
}

fn is_date(text: &str) -> bool {
    let b = text.as_bytes();
    b.len() == 10
        && b.iter().enumerate().all(|(i, c)| match i {
            4 | 7 => *c == b'-',
            _ => c.is_ascii_digit(),
        })
}
