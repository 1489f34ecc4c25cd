//! The transcript parser of [`Spool`]: parse a real agent transcript (Claude Code, Codex,
//! pi, Gemini CLI or opencode) with the core's pure function; `importSession`, a table
//! call, writes a parsed session. The shell only converts.

use spool::Error;
use spool::import::{self, ImportFormat};
use wasm_bindgen::prelude::*;

use super::Spool;
use crate::js;

#[wasm_bindgen]
impl Spool {
    /// Parses `text`, a log of `format` (`"claude_code"`, `"codex"`, `"pi"`, `"gemini"`,
    /// `"opencode"` or `"spool"`), and returns (not a
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

    /// Parses `text` like `parseImport` and plans its sessions (not a promise: nothing is
    /// read or written): `{log, sessions}`, `log` without its sessions and `sessions` in
    /// the order to import them, each with its `key`, its `link` (`branch`: call `branch`
    /// first; `child`: pass `parent_key` to `importSession`) and its `slice_ends`. The
    /// same plan the CLI follows.
    #[wasm_bindgen(js_name = planImport, unchecked_return_type = "ImportPlan")]
    pub fn plan_import(
        &self,
        #[wasm_bindgen(unchecked_param_type = "ImportFormat")] format: JsValue,
        #[wasm_bindgen(unchecked_param_type = "string")] text: JsValue,
    ) -> Result<JsValue, JsValue> {
        let plan = || -> Result<JsValue, Error> {
            let format: ImportFormat = js::choice(&format, "format")?;
            let text = js::string(&text, "text")?;
            js::to_js(&import::ImportPlan::of(import::parse(format, &text)))
        };
        plan().map_err(|e| js::error(&e))
    }
}

fn parse_import(format: &JsValue, text: &JsValue) -> Result<JsValue, Error> {
    let format: ImportFormat = js::choice(format, "format")?;
    let text = js::string(text, "text")?;
    js::to_js(&import::parse(format, &text))
}
