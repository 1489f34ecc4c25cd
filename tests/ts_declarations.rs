//! The browser package's TypeScript declarations (`web/src/ts.rs`, emitted into the
//! `.d.ts`) against the JSON the core really returns: every scenario vector runs, each
//! result is matched with the declaration named after its call's result type in the
//! operation table (`spool::ops::OUTPUTS`), and the declared type must name every field
//! the value has and every field it always has must be declared required.
//! A field added on the Rust side without its declaration (or the reverse) fails here.
#![cfg(not(target_arch = "wasm32"))]

use crate::vectors;

use std::collections::{BTreeMap, BTreeSet};

use serde_json::Value;
use spool::{Command, MemoryStorage};

const TS: &str = include_str!("../web/src/ts.rs");

/// Fields of a declared object type: all of them, and the required ones.
#[derive(Debug, Default, Clone)]
struct Shape {
    fields: BTreeSet<String>,
    required: BTreeSet<String>,
}

/// The text between the `{` at `open` and its matching `}`.
fn braced(text: &str, open: usize) -> Option<&str> {
    let mut depth = 0usize;
    for (i, c) in text[open..].char_indices() {
        match c {
            '{' => depth += 1,
            '}' => {
                depth -= 1;
                if depth == 0 {
                    return text.get(open + 1..open + i);
                }
            }
            _ => {}
        }
    }
    None
}

/// Removes `/* … */` comments.
fn uncomment(text: &str) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(start) = rest.find("/*") {
        out.push_str(&rest[..start]);
        rest = rest[start..]
            .find("*/")
            .map_or("", |end| &rest[start + end + 2..]);
    }
    out.push_str(rest);
    out
}

/// The top-level members (`name:` / `name?:`) of an object type body.
fn members(body: &str) -> Shape {
    let body = uncomment(body);
    let mut shape = Shape::default();
    let mut depth = 0i32;
    let mut token = String::new();
    let chars: Vec<char> = body.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        match c {
            '{' | '(' | '[' | '<' => depth += 1,
            // `=>` of a function type is not a closing bracket.
            '>' if i > 0 && chars[i - 1] == '=' => {}
            '}' | ')' | ']' | '>' => depth -= 1,
            _ => {}
        }
        if depth == 0 && (c.is_alphanumeric() || c == '_') {
            token.push(c);
        } else {
            if depth == 0 && !token.is_empty() {
                let optional = c == '?' && chars.get(i + 1) == Some(&':');
                if c == ':' || optional {
                    // A member name only at the start of a member (after `{`, `;` or a
                    // line break), not a word inside a type.
                    let before: String = chars[..i - token.chars().count()]
                        .iter()
                        .rev()
                        .take_while(|c| c.is_whitespace())
                        .collect();
                    let start = i - token.chars().count() - before.chars().count();
                    let at_start = start == 0 || matches!(chars[start - 1], ';' | '\n' | '{');
                    if at_start || before.contains('\n') {
                        shape.fields.insert(token.clone());
                        if !optional {
                            shape.required.insert(token.clone());
                        }
                    }
                }
            }
            token.clear();
        }
        i += 1;
    }
    shape
}

/// The declarations: `export interface X {…}` and `export type X = A & B & {…};`.
fn declarations() -> BTreeMap<String, String> {
    let start = TS.find("r#\"").expect("the declarations' raw string");
    let text = &TS[start..];
    let mut out = BTreeMap::new();
    for (keyword, sep) in [("export interface ", '{'), ("export type ", '=')] {
        let mut at = 0;
        while let Some(found) = text[at..].find(keyword) {
            let begin = at + found + keyword.len();
            let name: String = text[begin..]
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect();
            let Some(sep_at) = text[begin..].find(sep).map(|i| begin + i) else {
                break;
            };
            let definition = if sep == '{' {
                braced(text, sep_at).map(|b| format!("{{{b}}}"))
            } else {
                // Up to the `;` that ends the alias (outside braces).
                let mut depth = 0i32;
                text[sep_at + 1..]
                    .char_indices()
                    .find(|(_, c)| {
                        match c {
                            '{' => depth += 1,
                            '}' => depth -= 1,
                            _ => {}
                        }
                        *c == ';' && depth == 0
                    })
                    .map(|(i, _)| text[sep_at + 1..sep_at + 1 + i].trim().to_owned())
            };
            if let Some(definition) = definition {
                out.insert(name, definition);
            }
            at = sep_at;
        }
    }
    out
}

/// The object shape a declared type stands for, when it is an object type or an
/// intersection of them (unions and primitives: `None`).
fn shape(name: &str, decls: &BTreeMap<String, String>, depth: usize) -> Option<Shape> {
    if depth > 8 {
        return None;
    }
    let definition = decls.get(name)?;
    let mut total = Shape::default();
    let mut parts = Vec::new();
    let (mut level, mut part) = (0i32, String::new());
    for c in definition.chars() {
        match c {
            '{' => level += 1,
            '}' => level -= 1,
            '|' if level == 0 => return None,
            '&' if level == 0 => {
                parts.push(std::mem::take(&mut part));
                continue;
            }
            _ => {}
        }
        part.push(c);
    }
    parts.push(part);
    for part in parts {
        let part = part.trim();
        let piece = if let Some(body) = part.strip_prefix('{') {
            members(body.strip_suffix('}')?)
        } else if part.chars().all(|c| c.is_alphanumeric() || c == '_') {
            shape(part, decls, depth + 1)?
        } else {
            return None;
        };
        total.fields.extend(piece.fields);
        total.required.extend(piece.required);
    }
    Some(total)
}

/// The declared result of every call, by core operation name, from the operation table
/// (`spool::ops::OUTPUTS`): the TypeScript name of its Rust result type (`Entry`,
/// `Session | null` for an `Option`, `Entry[]` for a `Vec`); `None` for a primitive.
fn returns() -> BTreeMap<String, Option<String>> {
    spool::ops::OUTPUTS
        .iter()
        .map(|(op, rust)| {
            let ts = crate::ts_table::ts_type(rust);
            let name = ts.trim_end_matches(" | null").trim_end_matches("[]");
            let primitive = matches!(
                name,
                "void" | "number" | "boolean" | "string" | "AdapterState"
            );
            ((*op).to_owned(), (!primitive).then_some(ts))
        })
        .collect()
}

/// An archive store that keeps nothing and reports success.
struct KeepAll;

impl spool::Archiver for KeepAll {
    fn write_archive(
        &self,
        _workspace: &str,
        _archive: &spool::ResetArchive,
    ) -> Result<(), String> {
        Ok(())
    }
}

/// Runs the vectors natively and keeps every successful result by operation.
struct Recorder {
    storage: MemoryStorage,
    results: std::rc::Rc<std::cell::RefCell<Vec<(String, Value)>>>,
}

impl vectors::VectorHost for Recorder {
    async fn exec(&mut self, workspace: &str, command: Command) -> Result<Value, vectors::Failure> {
        let op = serde_json::to_value(&command)
            .ok()
            .and_then(|v| v.get("op").and_then(Value::as_str).map(str::to_owned))
            .unwrap_or_default();
        let result =
            spool::execute_with(&self.storage, &KeepAll, workspace, command).map_err(|e| {
                vectors::Failure {
                    code: e.code().to_owned(),
                    message: e.to_string(),
                }
            })?;
        self.results.borrow_mut().push((op, result.clone()));
        Ok(result)
    }
}

#[test]
fn test_declared_result_types_match_the_core_json() {
    let decls = declarations();
    let returns = returns();
    let results = std::rc::Rc::default();
    vectors::block_on(vectors::run_all(|| {
        let results = std::rc::Rc::clone(&results);
        async move {
            Recorder {
                storage: MemoryStorage::new(),
                results,
            }
        }
    }));
    let mut problems = BTreeSet::new();
    let mut checked = BTreeSet::new();
    // Every record a call returns is declared.
    let undeclared: Vec<String> = returns
        .iter()
        .filter_map(|(op, declared)| {
            let name = declared
                .as_deref()?
                .trim_end_matches(" | null")
                .trim_end_matches("[]");
            (!decls.contains_key(name)).then(|| format!("{op} → {name}"))
        })
        .collect();
    assert!(
        undeclared.is_empty(),
        "results without a declaration: {undeclared:?}"
    );
    for (op, value) in results.borrow().iter() {
        let Some(Some(declared)) = returns.get(op) else {
            continue;
        };
        let declared = declared.trim_end_matches(" | null");
        let (name, values): (&str, Vec<&Value>) = match declared.strip_suffix("[]") {
            Some(element) => (
                element,
                value
                    .as_array()
                    .map(|a| a.iter().collect())
                    .unwrap_or_default(),
            ),
            None => (declared, vec![value]),
        };
        let Some(shape) = shape(name, &decls, 0) else {
            continue;
        };
        for value in values {
            let Some(object) = value.as_object() else {
                continue;
            };
            checked.insert(format!("{op} → {name}"));
            for key in object.keys() {
                if !shape.fields.contains(key) {
                    problems.insert(format!(
                        "{name}: `{key}` is in the core's JSON ({op}) but not declared"
                    ));
                }
            }
            for key in &shape.required {
                if !object.contains_key(key) {
                    problems.insert(format!(
                        "{name}: `{key}` is declared required but missing from {op}'s JSON"
                    ));
                }
            }
        }
    }
    assert!(
        problems.is_empty(),
        "declarations drifted:\n{}",
        problems.into_iter().collect::<Vec<_>>().join("\n")
    );
    // The check must reach the API, not pass by matching nothing.
    assert!(
        checked.len() >= 40,
        "only {} result types checked: {checked:?}",
        checked.len()
    );
}

#[test]
fn test_the_declaration_reader_sees_members_and_optionality() {
    let shape = members(
        "\n  a: string; b?: number | null;\n  c: Record<string, unknown>; d: (x: Y) => void;\n  e: { f: number };\n",
    );
    assert_eq!(
        shape.fields,
        ["a", "b", "c", "d", "e"].map(String::from).into()
    );
    assert_eq!(
        shape.required,
        ["a", "c", "d", "e"].map(String::from).into()
    );
}
