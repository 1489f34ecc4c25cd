//! Progress bars on stderr, shown only when stderr is a terminal: for the entries an
//! import writes or an export reads, and for what a long call reports from inside the
//! component ([`spool::Progress`]: a compaction's passes, a reset's archive).

use std::io::IsTerminal;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use spool_host::Spool;

/// A bar of `total` entries named `message` (a spinner when `total` is 0); hidden
/// unless `show`.
pub(crate) fn bar(show: bool, message: String, total: u64) -> ProgressBar {
    if !show {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr());
    restyle(&bar, total);
    bar.set_message(message);
    bar
}

/// A bar of the `total` bytes of a file read a slice at a time, named `message`;
/// hidden unless `show`.
pub(crate) fn bytes(show: bool, message: String, total: u64) -> ProgressBar {
    if !show {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::with_draw_target(Some(total), ProgressDrawTarget::stderr());
    if let Ok(style) =
        ProgressStyle::with_template("{msg} [{bar:30}] {binary_bytes}/{binary_total_bytes}")
    {
        bar.set_style(style.progress_chars("=> "));
    }
    bar.set_message(message);
    bar
}

/// Sets the bar's length and the style that goes with it: a bar with a known total, a
/// count without.
fn restyle(bar: &ProgressBar, total: u64) {
    let template = if total == 0 {
        "{spinner} {msg} {pos} entries"
    } else {
        "{msg} [{bar:30}] {pos}/{len} entries"
    };
    if let Ok(style) = ProgressStyle::with_template(template) {
        bar.set_style(style.progress_chars("=> "));
    }
    if total == 0 {
        bar.unset_length();
    } else {
        bar.set_length(total);
    }
}

/// Shows what `spool`'s calls report on a bar until the returned bar is finished
/// (`finish_and_clear`); nothing unless stderr is a terminal.
pub(crate) fn follow(spool: &mut Spool) -> ProgressBar {
    let bar = bar(std::io::stderr().is_terminal(), String::new(), 0);
    if bar.is_hidden() {
        return bar;
    }
    let shown = bar.clone();
    let mut phase = String::new();
    spool.on_progress(move |p| {
        if p.phase != phase {
            phase.clone_from(&p.phase);
            restyle(&shown, p.total);
            shown.set_message(p.phase.clone());
        }
        shown.set_position(p.done);
    });
    bar
}
