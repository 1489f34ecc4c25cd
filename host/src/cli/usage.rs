//! `spool usage`: the tokens and estimated cost of the workspace's sessions by day, by
//! model and by session (the core's `usage_report`), and `--prices FILE`, the price
//! table `usage` and `import` take instead of the built-in one.

use std::path::{Path, PathBuf};

use clap::Args;
use spool::usage::{PriceTable, UsageReport, UsageRequest, UsageRow};
use spool::validate::escape_invisible;
use spool_host::{Error, Spool};

use crate::cli::parse::{Since, parse_since};
use crate::cli::{print_json, render};

/// `spool usage`.
#[derive(Debug, Args)]
pub(crate) struct UsageArgs {
    /// Only responses written at or after T: ms since the Unix epoch
    /// (`1700000000000`), a UTC day (`2026-12-01`), or a duration ago (`90s`, `15m`,
    /// `2h`, `7d`).
    #[arg(long, value_name = "T", value_parser = parse_since)]
    since: Option<Since>,
    /// Estimate costs with this price table (JSON of the shape of the repository's
    /// `data/prices.json`: US dollars per million tokens per model) instead of the
    /// built-in one.
    #[arg(long, value_name = "FILE")]
    prices: Option<PathBuf>,
    /// Print the report as JSON (`{"since_ms", "sessions", "days", "models", "total"}`,
    /// each row with `name`, `responses`, `input_tokens`, `output_tokens`,
    /// `cache_read`, `cache_write`, `cost_usd` and `unpriced`).
    #[arg(long)]
    json: bool,
}

/// Reads and checks the price table at `path`: `io` when it cannot be read,
/// `invalid_argument` (naming the file and what is wrong) when it is not a table.
pub(crate) fn load_prices(path: &Path) -> Result<PriceTable, Error> {
    let text = std::fs::read_to_string(path).map_err(|source| Error::Io {
        context: format!("cannot read the price table {}", path.display()),
        source,
    })?;
    PriceTable::parse(&text).map_err(|e| Error::Spool {
        code: e.code().to_owned(),
        message: format!("{}: {e}", path.display()),
    })
}

/// `spool usage`.
pub(crate) fn run(spool: &mut Spool, args: &UsageArgs) -> Result<(), Error> {
    let prices = args.prices.as_deref().map(load_prices).transpose()?;
    let since_ms = args.since.map(|since| since.at(spool_host::system_clock()));
    let report = spool.usage_report(UsageRequest { since_ms, prices })?;
    if args.json {
        return print_json(&report);
    }
    out!("{}", text(&report, args.prices.as_deref()));
    Ok(())
}

/// A cost in US dollars, to the cent.
fn dollars(x: f64) -> String {
    format!("${x:.2}")
}

fn table(first: &str, rows: &[UsageRow], total: Option<&UsageRow>) -> String {
    let line = |r: &UsageRow, name: String| {
        vec![
            name,
            r.responses.to_string(),
            r.input_tokens.to_string(),
            r.output_tokens.to_string(),
            r.cache_read.to_string(),
            r.cache_write.to_string(),
            dollars(r.cost_usd),
        ]
    };
    let mut cells: Vec<Vec<String>> = rows
        .iter()
        .map(|r| line(r, escape_invisible(&r.name).into_owned()))
        .collect();
    if let Some(total) = total {
        cells.push(line(total, "total".into()));
    }
    render::grid(
        &[
            first,
            "RESPONSES",
            "INPUT",
            "OUTPUT",
            "CACHE READ",
            "CACHE WRITE",
            "COST (EST.)",
        ],
        &cells,
        &[1, 2, 3, 4, 5, 6],
    )
}

/// The report as text: by day, by model, by session, then where the figures come from.
fn text(report: &UsageReport, prices: Option<&Path>) -> String {
    if report.total.responses == 0 {
        return match report.since_ms {
            Some(at) => format!(
                "no responses with usage since {} in this workspace\n",
                render::time(at)
            ),
            None => "no responses with usage in this workspace\n".into(),
        };
    }
    let mut out = String::new();
    if let Some(at) = report.since_ms {
        out.push_str(&format!("since {}\n\n", render::time(at)));
    }
    out.push_str(&table("DAY (UTC)", &report.days, Some(&report.total)));
    out.push('\n');
    out.push_str(&table("MODEL", &report.models, None));
    out.push('\n');
    out.push_str(&table("SESSION", &report.sessions, None));
    let source = match prices {
        Some(path) => format!("the prices in {}", path.display()),
        None => "Spool's built-in prices (data/prices.json)".into(),
    };
    out.push_str(&format!(
        "\nTokens as the providers reported them with each response; costs are estimates \
         in US dollars at {source}, not billed amounts.\n"
    ));
    if report.total.unpriced > 0 {
        let unpriced: Vec<&str> = report
            .models
            .iter()
            .filter(|m| m.unpriced > 0)
            .map(|m| m.name.as_str())
            .collect();
        out.push_str(&format!(
            "{} response{} of models without a price (no cost counted): {}\n",
            report.total.unpriced,
            if report.total.unpriced == 1 { "" } else { "s" },
            unpriced.join(", ")
        ));
    }
    out
}
