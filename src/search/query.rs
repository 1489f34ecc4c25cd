//! The query language.
//!
//! A query is a list of space-separated items, all of which a hit must satisfy (AND):
//!
//! | item | meaning |
//! |------|---------|
//! | `word` | the term (tokenized like entry text, see [`super::tokenize`](mod@super::tokenize)); a word that tokenizes into several terms without being one identifier (`src/parser.rs`, `日本語`) is a phrase of them; an identifier of several parts (`parse_nested_list`, `parseNestedList`) is its whole term, in either spelling: its parts joined by `_` or run together (each finds the other; a prefix `parseNest*` matches the spelling written) |
//! | `"several words"` | a phrase: the terms at consecutive positions, in one field |
//! | `pars*` | a prefix: any term starting with `pars` (at least 2 characters, or one CJK character) |
//! | `role:user` | the entry's role: `user`, `assistant`, `tool` or `system` |
//! | `tool:bash` | an assistant entry whose `tool_calls` call the tool `bash` (by `name` or `function.name`) |
//! | `has:error` | a tool result whose status is `error` |
//! | `session:agent:main:main` | the session with that key; `session:agent:main:*` every key with that prefix |
//! | `agent:main` | the sessions of that agent id |
//! | `since:1700000000000` | entries created at or after that time (ms since the Unix epoch) |
//! | `until:1700000000000` | entries created before that time |
//!
//! A `name:value` item with another name is text (`http://x` searches `http` and `x`).
//! Each filter appears at most once. A query has at least one term, prefix, phrase or
//! `role:`/`tool:`/`has:` filter, at most [`MAX_QUERY_BYTES`] bytes and at most
//! [`MAX_QUERY_TERMS`] terms in all; anything else is `invalid_argument`, never a panic.

use crate::engine::error::Error;
use crate::search::tokenize::{MAX_TOKEN_BYTES, Token, cap, fold, is_cjk, tokenize};
use crate::types::Role;

/// The longest query, in bytes.
pub const MAX_QUERY_BYTES: usize = 1024;

/// The most terms (of words, phrases and prefixes together) a query may hold.
pub const MAX_QUERY_TERMS: usize = 16;

/// A text clause every hit satisfies.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Clause {
    /// The entry holds this term.
    Term(String),
    /// The entry holds a term starting with this.
    Prefix(String),
    /// The entry holds these terms at consecutive positions of one field (2 or more).
    Phrase(Vec<String>),
    /// The entry holds one of these terms: the spellings of one identifier of several
    /// parts, its own first (`parseNestedList` is `parsenestedlist` or
    /// `parse_nested_list`; `parse_nested_list` the same two).
    Spellings(Vec<String>),
}

/// Which sessions a query searches.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SessionFilter {
    /// The session with this key.
    Key(String),
    /// The sessions whose key starts with this.
    Prefix(String),
}

/// A parsed query.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Query {
    /// Text clauses, in query order.
    pub clauses: Vec<Clause>,
    /// `session:`.
    pub session: Option<SessionFilter>,
    /// `agent:`.
    pub agent: Option<String>,
    /// `role:`.
    pub role: Option<Role>,
    /// `tool:` (folded like terms).
    pub tool: Option<String>,
    /// `has:error`.
    pub has_error: bool,
    /// `since:` (inclusive).
    pub since: Option<u64>,
    /// `until:` (exclusive).
    pub until: Option<u64>,
}

impl Query {
    /// Whether `created_at` is inside the time filters.
    pub fn in_time(&self, created_at: u64) -> bool {
        self.since.is_none_or(|s| created_at >= s) && self.until.is_none_or(|u| created_at < u)
    }
}

fn bad(reason: impl Into<String>) -> Error {
    Error::invalid("query", reason)
}

/// Splits the query into items: runs of non-space characters, or quoted phrases.
fn items(text: &str) -> Result<Vec<(bool, &str)>, Error> {
    let mut out = Vec::new();
    let mut rest = text;
    loop {
        rest = rest.trim_start();
        if rest.is_empty() {
            return Ok(out);
        }
        if let Some(after) = rest.strip_prefix('"') {
            let Some(end) = after.find('"') else {
                return Err(bad("a quote `\"` is not closed"));
            };
            out.push((true, &after[..end]));
            rest = &after[end + 1..];
        } else {
            let end = rest
                .find(|c: char| c.is_whitespace() || c == '"')
                .unwrap_or(rest.len());
            out.push((false, &rest[..end]));
            rest = &rest[end..];
        }
    }
}

/// Parses `text` into a [`Query`].
pub fn parse(text: &str) -> Result<Query, Error> {
    if text.len() > MAX_QUERY_BYTES {
        return Err(bad(format!(
            "is {} bytes; the limit is {MAX_QUERY_BYTES}",
            text.len()
        )));
    }
    let mut query = Query::default();
    for (quoted, item) in items(text)? {
        if quoted {
            phrase(&mut query, item);
        } else if !filter(&mut query, item)? {
            word(&mut query, item)?;
        }
    }
    let terms: usize = query
        .clauses
        .iter()
        .map(|c| match c {
            Clause::Phrase(t) => t.len(),
            _ => 1,
        })
        .sum();
    if terms > MAX_QUERY_TERMS {
        return Err(bad(format!(
            "holds {terms} terms; the limit is {MAX_QUERY_TERMS}"
        )));
    }
    if query.clauses.is_empty() && query.role.is_none() && query.tool.is_none() && !query.has_error
    {
        return Err(bad(
            "needs a word, phrase or prefix, or a `role:`, `tool:` or `has:` filter",
        ));
    }
    Ok(query)
}

/// The leaf terms of `text` (no compounds), the terms a phrase matches.
fn leaves(tokens: &[Token]) -> Vec<String> {
    tokens
        .iter()
        .filter(|t| !t.compound)
        .map(|t| t.term.clone())
        .collect()
}

fn push_terms(query: &mut Query, terms: Vec<String>) {
    match terms.len() {
        0 => {}
        1 => query.clauses.extend(terms.into_iter().map(Clause::Term)),
        _ => query.clauses.push(Clause::Phrase(terms)),
    }
}

/// The terms of query text, tokenized as entry text without the last character of a
/// CJK run alone (a query of several CJK characters is their bigrams; one of one
/// character is a prefix, see [`word`]).
fn query_tokens(text: &str) -> Vec<Token> {
    let mut tokens = tokenize(text);
    tokens.retain(|t| !(t.compound && t.term.chars().all(is_cjk)));
    tokens
}

fn phrase(query: &mut Query, text: &str) {
    let tokens = query_tokens(text);
    push_terms(query, leaves(&tokens));
}

fn word(query: &mut Query, text: &str) -> Result<(), Error> {
    if let Some(stem) = text.strip_suffix('*') {
        let tokens = query_tokens(stem);
        let Some(last) = tokens.last() else {
            return Err(bad(format!("`{text}` has no word before `*`")));
        };
        // An identifier's whole term, else the last term, is the prefix; terms before
        // it are plain terms.
        let whole = tokens.iter().find(|t| t.compound);
        let (before, prefix) = match whole {
            Some(w) => (Vec::new(), w.term.clone()),
            None => (leaves(&tokens[..tokens.len() - 1]), last.term.clone()),
        };
        let chars = prefix.chars().count();
        if chars < 2 && !prefix.chars().all(is_cjk) {
            return Err(bad(format!(
                "the prefix `{text}` is too short (at least 2 characters)"
            )));
        }
        query.clauses.extend(before.into_iter().map(Clause::Term));
        query.clauses.push(Clause::Prefix(prefix));
        return Ok(());
    }
    let tokens = query_tokens(text);
    // One identifier (a compound first, only its parts after it): its whole term.
    if let Some(whole) = tokens.first().filter(|t| t.compound)
        && tokens[1..]
            .iter()
            .all(|t| !t.compound && t.end <= whole.end)
    {
        query
            .clauses
            .push(identifier(&whole.term, leaves(&tokens[1..])));
        return Ok(());
    }
    let single_cjk = tokens.len() == 1
        && tokens[0].term.chars().count() == 1
        && tokens[0].term.chars().all(is_cjk);
    if single_cjk {
        // A lone CJK character: every term that starts with it (the bigrams it
        // starts, and a run's last character alone), so each of its occurrences.
        query.clauses.push(Clause::Prefix(tokens[0].term.clone()));
        return Ok(());
    }
    push_terms(query, leaves(&tokens));
    Ok(())
}

/// The clause of an identifier written `whole`, of `parts`: it matches the identifier
/// however its parts are joined (by `_`, or by case changes, which fold to nothing).
fn identifier(whole: &str, parts: Vec<String>) -> Clause {
    let mut spellings = vec![whole.to_owned()];
    for other in [parts.join("_"), parts.concat()] {
        let other = cap(other);
        if !spellings.contains(&other) {
            spellings.push(other);
        }
    }
    if spellings.len() == 1 {
        Clause::Term(spellings.remove(0))
    } else {
        Clause::Spellings(spellings)
    }
}

/// Reads a `name:value` filter; false when `item` is not one (it is text).
fn filter(query: &mut Query, item: &str) -> Result<bool, Error> {
    let Some((name, value)) = item.split_once(':') else {
        return Ok(false);
    };
    let twice = |name: &str| bad(format!("`{name}:` appears twice"));
    match name {
        "role" => {
            let role = match value {
                "user" => Role::User,
                "assistant" => Role::Assistant,
                "tool" => Role::Tool,
                "system" => Role::System,
                other => {
                    return Err(bad(format!(
                        "`role:{other}`: the role is user, assistant, tool or system"
                    )));
                }
            };
            if query.role.replace(role).is_some() {
                return Err(twice(name));
            }
        }
        "tool" => {
            if value.is_empty() || value.len() > MAX_TOKEN_BYTES {
                return Err(bad(format!(
                    "`tool:` needs a tool name of 1 to {MAX_TOKEN_BYTES} bytes"
                )));
            }
            if query.tool.replace(fold(value)).is_some() {
                return Err(twice(name));
            }
        }
        "has" => {
            if value != "error" {
                return Err(bad(format!("`has:{value}`: only `has:error` exists")));
            }
            if std::mem::replace(&mut query.has_error, true) {
                return Err(twice(name));
            }
        }
        "session" => {
            let filter = match value.strip_suffix('*') {
                Some(prefix) => SessionFilter::Prefix(prefix.to_owned()),
                None if value.is_empty() => {
                    return Err(bad("`session:` needs a session key or key prefix"));
                }
                None => SessionFilter::Key(value.to_owned()),
            };
            if query.session.replace(filter).is_some() {
                return Err(twice(name));
            }
        }
        "agent" => {
            if value.is_empty() {
                return Err(bad("`agent:` needs an agent id"));
            }
            if query.agent.replace(value.to_owned()).is_some() {
                return Err(twice(name));
            }
        }
        "since" | "until" => {
            let Some(ms) = value
                .parse::<u64>()
                .ok()
                .filter(|&ms| ms <= crate::engine::validate::MAX_INTEGER)
            else {
                return Err(bad(format!(
                    "`{name}:{value}`: the time is ms since the Unix epoch (0 to 2^53 - 1)"
                )));
            };
            let slot = if name == "since" {
                &mut query.since
            } else {
                &mut query.until
            };
            if slot.replace(ms).is_some() {
                return Err(twice(name));
            }
        }
        _ => return Ok(false),
    }
    Ok(true)
}

#[cfg(test)]
#[path = "tests/query.rs"]
mod tests;
