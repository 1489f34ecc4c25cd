//! The JSON form of the search records ([`crate::search`]), as every surface carries
//! them: the field names of the Rust structs, a snippet's `highlights` as `[start, end]`
//! pairs (byte offsets into its `text`), unknown fields rejected on the way in.
//!
//! Declared here, beside the other surface plumbing, so that the search module keeps
//! only the search itself: each implementation forwards to a `serde(remote)` mirror of
//! the record, which the compiler checks field by field against the record.

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::search::backfill::IndexProgress;
use crate::search::{SearchHit, SearchPage, SearchRequest, Snippet};
use crate::types::Role;

/// Implements `Serialize` and `Deserialize` of `$t` through its remote mirror `$def`.
macro_rules! through {
    ($($t:ty => $def:ident),* $(,)?) => {$(
        impl Serialize for $t {
            fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                $def::serialize(self, serializer)
            }
        }

        impl<'de> Deserialize<'de> for $t {
            fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<$t, D::Error> {
                $def::deserialize(deserializer)
            }
        }
    )*};
}

through!(
    SearchRequest => SearchRequestDef,
    Snippet => SnippetDef,
    SearchHit => SearchHitDef,
    SearchPage => SearchPageDef,
    IndexProgress => IndexProgressDef,
);

#[derive(Serialize, Deserialize)]
#[serde(remote = "SearchRequest", deny_unknown_fields)]
struct SearchRequestDef {
    query: String,
    #[serde(default = "crate::engine::ops::search_limit")]
    limit: u32,
    #[serde(default)]
    cursor: Option<String>,
}

#[derive(Serialize, Deserialize)]
#[serde(remote = "Snippet", deny_unknown_fields)]
struct SnippetDef {
    field: String,
    text: String,
    highlights: Vec<(u32, u32)>,
}

#[derive(Serialize, Deserialize)]
#[serde(remote = "SearchHit", deny_unknown_fields)]
struct SearchHitDef {
    session_key: String,
    session_id: String,
    entry_id: u64,
    message_id: String,
    role: Role,
    created_at: u64,
    score: f64,
    snippet: Snippet,
}

#[derive(Serialize, Deserialize)]
#[serde(remote = "SearchPage", deny_unknown_fields)]
struct SearchPageDef {
    hits: Vec<SearchHit>,
    next_cursor: Option<String>,
    #[serde(default)]
    unindexed: u64,
}

#[derive(Serialize, Deserialize)]
#[serde(remote = "IndexProgress", deny_unknown_fields)]
struct IndexProgressDef {
    session_key: Option<String>,
    indexed_entries: u32,
    pending_entries: u64,
    sessions_checked: u32,
    next_cursor: Option<String>,
}

#[cfg(test)]
#[path = "tests/search_json.rs"]
mod tests;
