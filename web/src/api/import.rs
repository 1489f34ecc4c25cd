//! The import methods of [`Spool`]: parse a real agent transcript (Claude Code session
//! JSONL, Codex rollout JSONL) and write a parsed session, idempotently. Parsing is the
//! core's pure function; writing is its operation. The shell only converts.

use js_sys::Promise;
use spool::import::{self, ImportFormat, ImportOutcome, ImportRequest};
use spool::{Error, Operation};
use wasm_bindgen::prelude::*;

use super::{Spool, TIME};
use crate::js;

#[wasm_bindgen]
impl Spool {
    /// Parses `text`, a log of `format` (`"claude_code"` or `"codex"`), and returns (not a
    /// promise: nothing is read or written) the `ImportedLog`: its sessions with their
    /// entries, and what was skipped (`skipped` by line type, `invalid_lines`, a cut-off
    /// `truncated_tail`). Throws a `SpoolError` (`invalid_argument`) for an unknown
    /// format or a `text` that is not a string.
    #[wasm_bindgen(js_name = parseImport, unchecked_return_type = "ImportedLog")]
    pub fn parse_import(
        &self,
        #[wasm_bindgen(unchecked_param_type = "ImportFormat")] format: JsValue,
        #[wasm_bindgen(unchecked_param_type = "string")] text: JsValue,
    ) -> Result<JsValue, JsValue> {
        parse_import(&format, &text).map_err(|e| js::error(&e))
    }

    /// Writes one parsed session (`request` is the core's `ImportRequest`: `key`,
    /// `session_id` — the identity if the import creates the session, default
    /// `crypto.randomUUID()` —, `format`, `session`, one of `parseImport`'s sessions) in
    /// one commit: creates the session if needed and appends every entry whose message id
    /// it does not hold yet, so importing the same log again imports 0. One call writes at
    /// most 1000 entries (more rejects with `invalid_argument`): import a longer session
    /// in slices, in order. `options.nowMs` defaults to `Date.now()`. Resolves to
    /// `{ created, imported, already_present, session }`.
    #[wasm_bindgen(js_name = importSession, unchecked_return_type = "Promise<ImportOutcome>")]
    pub fn import_session(
        &self,
        #[wasm_bindgen(unchecked_param_type = "string")] workspace: JsValue,
        #[wasm_bindgen(unchecked_param_type = "ImportRequest")] request: JsValue,
        #[wasm_bindgen(unchecked_optional_param_type = "TimeOptions")] options: JsValue,
    ) -> Promise {
        self.run(import_session(&workspace, request, options))
    }
}

fn parse_import(format: &JsValue, text: &JsValue) -> Result<JsValue, Error> {
    let format: ImportFormat = js::choice(format, "format")?;
    let text = js::string(text, "text")?;
    js::to_js(&import::parse(format, &text))
}

fn import_session(
    workspace: &JsValue,
    request: JsValue,
    options: JsValue,
) -> Result<Operation<ImportOutcome>, Error> {
    let workspace = js::string(workspace, "workspace")?;
    let request: ImportRequest = js::object_with_fresh_id(request, "request", "session_id", false)?;
    let options = js::options(options, "options", TIME)?;
    Ok(import::import_session(&workspace, request, options.now()))
}
