//! `compactWith`: compaction with a JS summarizer (the `compaction` feature).

use js_sys::Promise;
use spool::Error;
use spool::compaction::{self, CompactRequest, CompactionResult};
use wasm_bindgen::prelude::*;
use wasm_bindgen_futures::future_to_promise;

use super::{Driver, Spool, workspace_and_key};
use crate::js;

/// Options naming the time.
const TIME: &[&str] = &["nowMs"];

#[wasm_bindgen]
impl Spool {
    /// Two-phase compaction with a JS summarizer: prepares, awaits
    /// `summarize(prepared)` (a string, or a promise of one) and commits it with the
    /// prepared preimage. When no summary is needed, `summarize` is not called and the
    /// result says why (`skip_reason`). A summarizer that throws, rejects or yields no
    /// string makes the call reject with `invalid_argument` (its message carries the
    /// summarizer's), and nothing is written. `options.nowMs` defaults to `Date.now()`.
    #[wasm_bindgen(js_name = compactWith, unchecked_return_type = "Promise<CompactionResult>")]
    pub fn compact_with(
        &self,
        #[wasm_bindgen(unchecked_param_type = "string")] workspace: JsValue,
        #[wasm_bindgen(unchecked_param_type = "string")] key: JsValue,
        #[wasm_bindgen(unchecked_param_type = "CompactRequest")] request: JsValue,
        #[wasm_bindgen(unchecked_param_type = "Summarizer")] summarize: JsValue,
        #[wasm_bindgen(unchecked_optional_param_type = "TimeOptions")] options: JsValue,
    ) -> Promise {
        let tabs = self.tabs();
        let args = compact_with_args(&workspace, &key, request, summarize, options);
        future_to_promise(async move {
            let args = args.map_err(|e| js::error(&e))?;
            let result = compact_with(&tabs, args).await.map_err(|e| js::error(&e))?;
            js::to_js(&result).map_err(|e| js::error(&e))
        })
    }
}

/// The checked arguments of `compactWith`.
struct CompactWith {
    workspace: String,
    key: String,
    request: CompactRequest,
    summarize: js_sys::Function,
    now_ms: u64,
}

fn compact_with_args(
    workspace: &JsValue,
    key: &JsValue,
    request: JsValue,
    summarize: JsValue,
    options: JsValue,
) -> Result<CompactWith, Error> {
    let (workspace, key) = workspace_and_key(workspace, key)?;
    let request: CompactRequest = js::object(request, "request")?;
    let summarize = function(summarize, "summarize")?;
    let options = js::options(options, "options", TIME)?;
    Ok(CompactWith {
        workspace,
        key,
        request,
        summarize,
        now_ms: options.now(),
    })
}

/// Prepare, summarize in JS, commit. The summarizer runs between the two operations, so
/// the commit's preimage check catches any write that lands while it thinks.
async fn compact_with(tabs: &Driver, args: CompactWith) -> Result<CompactionResult, Error> {
    let CompactWith {
        workspace,
        key,
        request,
        summarize,
        now_ms,
    } = args;
    let prepare = compaction::prepare_compaction(&workspace, &key, request.clone());
    // Two operations: no lock is held while the summarizer thinks.
    let prepared = tabs.drive(prepare).await?;
    // The summarizer is async, so the plan's two steps are taken apart here:
    // `Prepared::commit_with` says when it is asked.
    let summary_text = if prepared.needs_summary() {
        run_summarizer(&summarize, &js::to_js(&prepared)?).await?
    } else {
        String::new()
    };
    let commit = prepared.commit(request, summary_text);
    let commit = compaction::commit_compaction(&workspace, &key, commit, now_ms);
    tabs.drive(commit).await
}

/// A required function argument.
fn function(value: JsValue, field: &'static str) -> Result<js_sys::Function, Error> {
    value.dyn_into::<js_sys::Function>().map_err(|value| {
        Error::invalid(
            field,
            format!("expected a function, got {}", js::describe(&value)),
        )
    })
}

/// Calls the summarizer `summarize(prepared)` and awaits the string it returns (directly
/// or through a promise). A throw, a rejection or anything but a string is an
/// [`Error::InvalidArgument`] of `summarize` carrying the JS error's message.
async fn run_summarizer(summarize: &js_sys::Function, prepared: &JsValue) -> Result<String, Error> {
    let failed = |error: JsValue| {
        Error::invalid(
            "summarize",
            format!("the summarizer failed: {}", js::error_message(&error)),
        )
    };
    let returned = summarize
        .call1(&JsValue::UNDEFINED, prepared)
        .map_err(failed)?;
    let settled = wasm_bindgen_futures::JsFuture::from(js_sys::Promise::resolve(&returned))
        .await
        .map_err(failed)?;
    settled.as_string().ok_or_else(|| {
        Error::invalid(
            "summarize",
            format!(
                "expected the summarizer to resolve to a string, got {}",
                js::describe(&settled)
            ),
        )
    })
}
