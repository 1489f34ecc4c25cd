//! The local-branch methods of [`Spool`] (ARCHITECTURE.md, "Branches"): branch a session under a new key,
//! with or without its history, and read the tree. Like the rest of the class, each
//! method only converts its arguments and drives the core's operation; what a branch
//! inherits and how it shares its parent's history are the core's business.

use js_sys::Promise;
use spool::{Branch, BranchRequest, Error, LineageView, Operation};
use wasm_bindgen::prelude::*;

use super::{Spool, TIME, workspace_and_key};
use crate::js;

#[wasm_bindgen]
impl Spool {
    /// Creates the session `childKey` as a branch of `parentKey` (`request` is the core's
    /// `BranchRequest`: `child_session_id` — default `crypto.randomUUID()` —,
    /// `fork_transcript`, `fork_before_message_id`, `max_fork_tokens`; absent, an empty
    /// branch). With `fork_transcript` the child inherits the parent's history; with
    /// `fork_before_message_id` only the canonical prefix strictly before that message (an
    /// unknown id rejects with `not_found`, "Transcript message not found", and creates
    /// nothing); over `max_fork_tokens` it is created without history. A missing parent
    /// is `not_found`, a taken `childKey` `conflict`. `options.nowMs` defaults to
    /// `Date.now()`. Resolves to the child with its lineage.
    #[wasm_bindgen(unchecked_return_type = "Promise<Branch>")]
    pub fn branch(
        &self,
        #[wasm_bindgen(unchecked_param_type = "string")] workspace: JsValue,
        #[wasm_bindgen(js_name = "parentKey", unchecked_param_type = "string")] parent_key: JsValue,
        #[wasm_bindgen(js_name = "childKey", unchecked_param_type = "string")] child_key: JsValue,
        #[wasm_bindgen(unchecked_optional_param_type = "BranchRequest | null")] request: JsValue,
        #[wasm_bindgen(unchecked_optional_param_type = "TimeOptions")] options: JsValue,
    ) -> Promise {
        self.run(branch(
            &workspace,
            &parent_key,
            &child_key,
            request,
            options,
        ))
    }

    /// Resolves to the session `key` with its lineage (`parent_session_key`,
    /// `spawn_depth`, `forked_from_parent`, `fork_point`, `fork_count`) and its direct
    /// branches in `children`, in key order. A missing key is `not_found`.
    #[wasm_bindgen(unchecked_return_type = "Promise<LineageView>")]
    pub fn lineage(
        &self,
        #[wasm_bindgen(unchecked_param_type = "string")] workspace: JsValue,
        #[wasm_bindgen(unchecked_param_type = "string")] key: JsValue,
    ) -> Promise {
        self.run(lineage(&workspace, &key))
    }

    /// Resolves to the sessions branched from the session `key`, in key order, each with
    /// its lineage. A missing key is `not_found`.
    #[wasm_bindgen(js_name = listChildren, unchecked_return_type = "Promise<Branch[]>")]
    pub fn list_children(
        &self,
        #[wasm_bindgen(unchecked_param_type = "string")] workspace: JsValue,
        #[wasm_bindgen(unchecked_param_type = "string")] key: JsValue,
    ) -> Promise {
        self.run(list_children(&workspace, &key))
    }
}

fn branch(
    workspace: &JsValue,
    parent_key: &JsValue,
    child_key: &JsValue,
    request: JsValue,
    options: JsValue,
) -> Result<Operation<Branch>, Error> {
    let workspace = js::string(workspace, "workspace")?;
    let parent_key = js::string(parent_key, "parentKey")?;
    let child_key = js::string(child_key, "childKey")?;
    let request: BranchRequest =
        js::object_with_fresh_id(request, "request", "child_session_id", true)?;
    let options = js::options(options, "options", TIME)?;
    Ok(spool::branch(
        &workspace,
        &parent_key,
        &child_key,
        request,
        options.now(),
    ))
}

fn lineage(workspace: &JsValue, key: &JsValue) -> Result<Operation<LineageView>, Error> {
    let (workspace, key) = workspace_and_key(workspace, key)?;
    Ok(spool::lineage(&workspace, &key))
}

fn list_children(workspace: &JsValue, key: &JsValue) -> Result<Operation<Vec<Branch>>, Error> {
    let (workspace, key) = workspace_and_key(workspace, key)?;
    Ok(spool::list_children(&workspace, &key))
}
