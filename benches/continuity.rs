//! The continuity benchmark: each session of `tests/fixtures/continuity/` compacted at
//! a quarter of its tokens with the built-in summarizer, and the share of the facts an
//! agent needs that the context after it keeps, per session and per kind of fact.
//! `cargo bench -p spool --bench continuity` (`cargo xtask bench continuity`).

#[path = "../tests/support/continuity.rs"]
mod continuity;

fn percent(kept: u32, total: u32) -> String {
    if total == 0 {
        return "-".into();
    }
    format!("{:.1}%", 100.0 * f64::from(kept) / f64::from(total))
}

fn main() {
    let cases = continuity::cases();
    let outcomes: Vec<_> = cases.iter().map(continuity::measure).collect();
    println!(
        "continuity: {} sessions compacted to a quarter of their tokens (built-in summarizer)",
        cases.len()
    );
    println!(
        "  {:<28} {:>7} {:>8} {:>14} {:>19} {:>9} {:>8}",
        "session", "entries", "window", "tokens", "coverage", "blocking", "facts"
    );
    for (case, o) in cases.iter().zip(&outcomes) {
        let kept = o.facts.iter().filter(|(_, k)| *k).count() as u32;
        let blocking = match o.blocking.skip_reason.as_deref() {
            None => "passes".to_owned(),
            Some(reason) => reason.to_owned(),
        };
        println!(
            "  {:<28} {:>7} {:>8} {:>6} → {:>5} {:>19} {:>9} {:>8}",
            case.name,
            o.entries,
            o.window,
            o.result.tokens_before,
            o.result.tokens_after,
            o.result.coverage_status,
            blocking,
            format!("{kept}/{}", o.facts.len())
        );
        for (fact, kept) in &o.facts {
            if !kept {
                println!("      lost {}: {}", fact.kind, fact.text);
            }
        }
    }
    let kinds = continuity::by_kind(&outcomes);
    println!("  kept per kind of fact (goal: ≥ 95% overall, 100% pending ids and latest request):");
    let (mut kept, mut total) = (0, 0);
    for (kind, (k, t)) in &kinds {
        println!("    {kind:<16} {k:>4}/{t:<4} {:>7}", percent(*k, *t));
        kept += k;
        total += t;
    }
    println!(
        "    {:<16} {kept:>4}/{total:<4} {:>7}",
        "overall",
        percent(kept, total)
    );
    let refused = outcomes
        .iter()
        .filter(|o| o.blocking.skip_reason.is_some())
        .count();
    println!(
        "  blocking mode: {} of {} sessions pass their own coverage check",
        outcomes.len() - refused,
        outcomes.len()
    );
}
