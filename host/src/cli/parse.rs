//! Argument parsers of the `spool` CLI (their errors are usage errors: exit 2).

use std::collections::BTreeMap;

use serde_json::Value;
use spool::validate::{quote, shorten_quoted};

/// Any JSON value.
pub(crate) fn parse_json(text: &str) -> Result<Value, String> {
    serde_json::from_str(text)
        .map_err(|e| format!("not valid JSON: {}", shorten_quoted(&e.to_string())))
}

/// A JSON object (e.g. an agent's adapter state).
pub(crate) fn parse_json_object(text: &str) -> Result<BTreeMap<String, Value>, String> {
    match serde_json::from_str(text) {
        Ok(Value::Object(map)) => Ok(map.into_iter().collect()),
        Ok(_) => Err("not a JSON object".into()),
        Err(e) => Err(format!(
            "not valid JSON: {}",
            shorten_quoted(&e.to_string())
        )),
    }
}

/// `KEY=JSON`, e.g. `temperature=0.2` or `tags=["a","b"]`.
pub(crate) fn parse_key_json(text: &str) -> Result<(String, Value), String> {
    let (key, value) = text
        .split_once('=')
        .ok_or_else(|| format!("{} is not KEY=JSON", quote(text)))?;
    if key.is_empty() {
        return Err(format!("{} has an empty key", quote(text)));
    }
    let value = serde_json::from_str(value).map_err(|e| {
        format!(
            "the value of {} is not valid JSON ({}); quote strings: KEY='\"text\"'",
            quote(key),
            shorten_quoted(&e.to_string())
        )
    })?;
    Ok((key.to_owned(), value))
}

/// A duration in milliseconds, written as a whole number with its unit: `ms`, `s`, `m`,
/// `h` or `d` (`250ms`, `45s`, `15m`, `12h`, `30d`). A bare number is refused, naming the
/// units: `3` could mean three milliseconds or three seconds.
pub(crate) fn parse_duration_ms(text: &str) -> Result<u64, String> {
    let text = text.trim();
    let split = text
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    if number.is_empty() {
        return Err(format!(
            "{} is not a duration: write a number with its unit, d, h, m, s or ms (e.g. 30s)",
            quote(text)
        ));
    }
    let factor: u64 = match unit {
        "" => {
            return Err(format!(
                "{} has no unit: write {number}s for seconds (or {number}ms, {number}m, {number}h, {number}d)",
                quote(text)
            ));
        }
        "ms" => 1,
        "s" => 1_000,
        "m" => 60_000,
        "h" => 3_600_000,
        "d" => 86_400_000,
        other => {
            return Err(format!(
                "unknown unit {} in {}: use d, h, m, s or ms",
                quote(other),
                quote(text)
            ));
        }
    };
    number
        .parse::<u64>()
        .ok()
        .and_then(|n| n.checked_mul(factor))
        .ok_or_else(|| format!("{} is too long a duration", quote(text)))
}

/// The value of `--since`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Since {
    /// This time (ms since the Unix epoch).
    At(u64),
    /// This long before now (ms).
    Ago(u64),
}

impl Since {
    /// The time meant, `now_ms` being now.
    pub(crate) fn at(self, now_ms: u64) -> u64 {
        match self {
            Since::At(ms) => ms,
            Since::Ago(ms) => now_ms.saturating_sub(ms),
        }
    }
}

/// `--since`: plain digits are a time (ms since the Unix epoch), `YYYY-MM-DD` the start
/// of that day (UTC), a number with a unit a duration ago.
pub(crate) fn parse_since(text: &str) -> Result<Since, String> {
    let text = text.trim();
    if !text.is_empty() && text.bytes().all(|b| b.is_ascii_digit()) {
        return text
            .parse()
            .map(Since::At)
            .map_err(|_| format!("{} is too large a time", quote(text)));
    }
    if text.len() == 10 && text.as_bytes()[4] == b'-' && text.as_bytes()[7] == b'-' {
        // A day that does not exist (`2026-02-30`) is refused, not carried over.
        return spool::import::parse_rfc3339_ms(&format!("{text}T00:00:00Z"))
            .filter(|&ms| {
                let [y, m, d, ..] = spool::export::civil(ms);
                format!("{y:04}-{m:02}-{d:02}") == text
            })
            .map(Since::At)
            .ok_or_else(|| format!("{} is not a day (YYYY-MM-DD)", quote(text)));
    }
    parse_duration_ms(text).map(Since::Ago).map_err(|e| {
        format!(
            "{e}; or give a day (2026-12-01) or the time itself in ms since the Unix epoch \
             (1700000000000)"
        )
    })
}

#[cfg(test)]
#[path = "tests/parse.rs"]
mod tests;
