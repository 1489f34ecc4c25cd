//! The core's layers (ARCHITECTURE.md, "Layers"), checked: every module of `src/` is
//! in one layer, and no module names (`crate::…`) a module of a higher layer, so data
//! flows down and operations sit on top; nor do modules name each other in a cycle.
//! A path names the longest module it starts with; comments and test modules
//! (`tests`, and the files of `tests/` folders) do not count.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// Layers, lowest first: module paths (a path covers its submodules; the longest
/// match wins); a module in none is an operation (layer 3).
const LAYERS: &[(u8, &[&str])] = &[
    (
        0,
        &[
            "engine::error",
            "engine::validate",
            "engine::op",
            "types",
            "order",
            "storage",
            "compaction::types",
            "compaction::tokens",
            "compaction::calls",
            "compaction::coverage",
            "compaction::contained",
            "compaction::obligations",
            "compaction::plan",
            "compaction::requests",
            "compaction::summarize",
            "provider_fork::types",
            "resume::rules",
            "search::tokenize",
            "search::query",
            "import::claude",
            "import::codex",
            "import::time",
            "import::plan",
            "usage::prices",
        ],
    ),
    (1, &["session", "session::codec"]),
    (2, &["branch::history", "search::index"]),
    (3, &["session::lifecycle", "session::states"]),
    (
        4,
        &[
            "engine",
            "engine::ops",
            "engine::component",
            "engine::wit_map",
            "engine::search_json",
        ],
    ),
];

/// What the layers are called, for messages.
const NAMES: [&str; 5] = [
    "data and pure rules",
    "the record layer",
    "shared history and index upkeep",
    "operations",
    "the table and the boundary",
];

fn layer(module: &str) -> u8 {
    if module.is_empty() {
        return 4; // lib.rs: the crate's surface
    }
    LAYERS
        .iter()
        .flat_map(|(layer, paths)| paths.iter().map(move |p| (*layer, *p)))
        .filter(|(_, p)| module == *p || module.starts_with(&format!("{p}::")))
        .max_by_key(|(_, p)| p.len())
        .map_or(3, |(layer, _)| layer)
}

/// `src/a/b.rs` → `a::b`, `src/a/mod.rs` → `a`, `src/lib.rs` → ``.
fn module_of(src: &Path, file: &Path) -> String {
    let relative = file.strip_prefix(src).unwrap_or(file).with_extension("");
    let mut parts: Vec<String> = relative
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    if parts.last().is_some_and(|p| p == "mod" || p == "lib") {
        parts.pop();
    }
    parts.join("::")
}

/// The code of a file: comments and a trailing `#[cfg(test)] mod tests` left out.
fn code(text: &str) -> String {
    let text = match text.find("#[cfg(test)]\nmod tests") {
        Some(at) => &text[..at],
        None => text,
    };
    text.lines()
        .map(|line| line.split("//").next().unwrap_or_default())
        .collect::<Vec<_>>()
        .join("\n")
}

fn files(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("read src").flatten() {
        let path = entry.path();
        if path.is_dir() {
            files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// Every module of `src` with the modules it names.
fn graph(src: &Path) -> BTreeMap<String, BTreeSet<String>> {
    let mut paths = Vec::new();
    files(src, &mut paths);
    let texts: BTreeMap<String, String> = paths
        .iter()
        .map(|p| {
            (
                module_of(src, p),
                std::fs::read_to_string(p).expect("a source file"),
            )
        })
        .filter(|(m, _)| !m.split("::").any(|part| part == "tests"))
        .collect();
    let modules: BTreeSet<&str> = texts.keys().map(String::as_str).collect();
    let mut graph = BTreeMap::new();
    for (module, text) in &texts {
        let mut named = BTreeSet::new();
        let code = code(text);
        for (at, _) in code.match_indices("crate::") {
            let rest = &code[at + "crate::".len()..];
            let path: String = rest
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_' || *c == ':')
                .collect();
            let segments: Vec<&str> = path.split("::").filter(|s| !s.is_empty()).collect();
            let target = (1..=segments.len())
                .rev()
                .map(|k| segments[..k].join("::"))
                .find(|candidate| modules.contains(candidate.as_str()));
            if let Some(target) = target
                && target != *module
            {
                named.insert(target);
            }
        }
        graph.insert(module.clone(), named);
    }
    graph
}

/// The violations of the layers, and the cycles, in `src`.
pub(crate) fn check(src: &Path) -> Vec<String> {
    let graph = graph(src);
    let mut problems = Vec::new();
    for (module, named) in &graph {
        for target in named {
            let (from, to) = (layer(module), layer(target));
            if to > from {
                problems.push(format!(
                    "`{module}` ({}) names `{target}` ({}), a higher layer",
                    NAMES[from as usize], NAMES[to as usize]
                ));
            }
        }
    }
    // A cycle within one layer: a module that reaches itself.
    for start in graph.keys() {
        let mut seen = BTreeSet::new();
        let mut stack: Vec<&String> = graph[start].iter().collect();
        while let Some(next) = stack.pop() {
            if next == start {
                problems.push(format!(
                    "`{start}` reaches itself through the modules it names"
                ));
                break;
            }
            if seen.insert(next) {
                stack.extend(graph.get(next).into_iter().flatten());
            }
        }
    }
    problems
}

#[cfg(test)]
#[path = "tests/layers.rs"]
mod tests;
