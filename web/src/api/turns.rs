//! The turn methods of [`Spool`] (ARCHITECTURE.md, "Turns and provider forks"): a session's turns in start
//! order, one running at a time, each closing with the boundary a provider fork through it
//! copies up to. Like the rest of the class, each method only converts its arguments and
//! drives the core's operation.

use js_sys::Promise;
use spool::turns::{CloseTurn, SessionTurns, StartTurn, Turn, TurnPage, TurnPageRequest};
use spool::{Error, Operation};
use wasm_bindgen::prelude::*;

use super::{Spool, TIME, workspace_and_key};
use crate::js;

#[wasm_bindgen]
impl Spool {
    /// Starts a turn of the session `key` (`request` is the core's `StartTurn`:
    /// `turn_id`, optional `provider_turn_id`, `provider_binding`, `expected_epoch`).
    /// Rejects with `conflict` while another turn runs or when the turn id is taken.
    /// `options.nowMs` defaults to `Date.now()`. Resolves to the running turn.
    #[wasm_bindgen(js_name = startTurn, unchecked_return_type = "Promise<Turn>")]
    pub fn start_turn(
        &self,
        #[wasm_bindgen(unchecked_param_type = "string")] workspace: JsValue,
        #[wasm_bindgen(unchecked_param_type = "string")] key: JsValue,
        #[wasm_bindgen(unchecked_param_type = "StartTurn")] request: JsValue,
        #[wasm_bindgen(unchecked_optional_param_type = "TimeOptions")] options: JsValue,
    ) -> Promise {
        self.run(start_turn(&workspace, &key, request, options))
    }

    /// Settles the running turn `turnId` of the session `key`: records its boundary (the
    /// newest entry now) and what `close` gives (the core's `CloseTurn`:
    /// `provider_turn_id`, `provider_binding`, `expected_epoch`, all optional).
    /// `options.nowMs` defaults to `Date.now()`. Resolves to the settled turn.
    #[wasm_bindgen(js_name = settleTurn, unchecked_return_type = "Promise<Turn>")]
    pub fn settle_turn(
        &self,
        #[wasm_bindgen(unchecked_param_type = "string")] workspace: JsValue,
        #[wasm_bindgen(unchecked_param_type = "string")] key: JsValue,
        #[wasm_bindgen(js_name = "turnId", unchecked_param_type = "string")] turn_id: JsValue,
        #[wasm_bindgen(unchecked_optional_param_type = "CloseTurn | null")] close: JsValue,
        #[wasm_bindgen(unchecked_optional_param_type = "TimeOptions")] options: JsValue,
    ) -> Promise {
        self.run(close_turn(
            &workspace,
            &key,
            &turn_id,
            close,
            options,
            spool::settle_turn,
        ))
    }

    /// Interrupts the running turn `turnId` of the session `key`, like `settleTurn` with
    /// phase `interrupted`. Resolves to the interrupted turn.
    #[wasm_bindgen(js_name = interruptTurn, unchecked_return_type = "Promise<Turn>")]
    pub fn interrupt_turn(
        &self,
        #[wasm_bindgen(unchecked_param_type = "string")] workspace: JsValue,
        #[wasm_bindgen(unchecked_param_type = "string")] key: JsValue,
        #[wasm_bindgen(js_name = "turnId", unchecked_param_type = "string")] turn_id: JsValue,
        #[wasm_bindgen(unchecked_optional_param_type = "CloseTurn | null")] close: JsValue,
        #[wasm_bindgen(unchecked_optional_param_type = "TimeOptions")] options: JsValue,
    ) -> Promise {
        self.run(close_turn(
            &workspace,
            &key,
            &turn_id,
            close,
            options,
            spool::interrupt_turn,
        ))
    }

    /// Resolves to the turn `turnId` of the session `key`, or `null`.
    #[wasm_bindgen(js_name = getTurn, unchecked_return_type = "Promise<Turn | null>")]
    pub fn get_turn(
        &self,
        #[wasm_bindgen(unchecked_param_type = "string")] workspace: JsValue,
        #[wasm_bindgen(unchecked_param_type = "string")] key: JsValue,
        #[wasm_bindgen(js_name = "turnId", unchecked_param_type = "string")] turn_id: JsValue,
    ) -> Promise {
        self.run(get_turn(&workspace, &key, &turn_id))
    }

    /// Resolves to `{ latest, active }`: the newest turn of the session `key` and the
    /// running one (each `null` when there is none).
    #[wasm_bindgen(js_name = sessionTurns, unchecked_return_type = "Promise<SessionTurns>")]
    pub fn session_turns(
        &self,
        #[wasm_bindgen(unchecked_param_type = "string")] workspace: JsValue,
        #[wasm_bindgen(unchecked_param_type = "string")] key: JsValue,
    ) -> Promise {
        self.run(session_turns(&workspace, &key))
    }

    /// Resolves to a page of the turns of the session `key`: `{ turns, next_cursor }`,
    /// in start order or its reverse. `request` is the core's `TurnPageRequest`, every
    /// field optional: `order` ("oldest_first", the default, or "newest_first"), `limit`
    /// (1 to 1000, default 100) and `cursor` (the previous page's `next_cursor`, read in
    /// the same order). Rejects with `not_found` for an unknown session and
    /// `invalid_argument` for a bad limit or cursor.
    #[wasm_bindgen(js_name = listTurns, unchecked_return_type = "Promise<TurnPage>")]
    pub fn list_turns(
        &self,
        #[wasm_bindgen(unchecked_param_type = "string")] workspace: JsValue,
        #[wasm_bindgen(unchecked_param_type = "string")] key: JsValue,
        #[wasm_bindgen(unchecked_optional_param_type = "TurnPageRequest")] request: JsValue,
    ) -> Promise {
        self.run(list_turns(&workspace, &key, request))
    }
}

fn start_turn(
    workspace: &JsValue,
    key: &JsValue,
    request: JsValue,
    options: JsValue,
) -> Result<Operation<Turn>, Error> {
    let (workspace, key) = workspace_and_key(workspace, key)?;
    let request: StartTurn = js::object(request, "request")?;
    let options = js::options(options, "options", TIME)?;
    Ok(spool::start_turn(&workspace, &key, request, options.now()))
}

/// `settleTurn` and `interruptTurn`: `close_turn` is the core operation.
fn close_turn(
    workspace: &JsValue,
    key: &JsValue,
    turn_id: &JsValue,
    close: JsValue,
    options: JsValue,
    close_turn: fn(&str, &str, &str, CloseTurn, u64) -> Operation<Turn>,
) -> Result<Operation<Turn>, Error> {
    let (workspace, key) = workspace_and_key(workspace, key)?;
    let turn_id = js::string(turn_id, "turnId")?;
    let close: CloseTurn = js::optional_object(close, "close")?;
    let options = js::options(options, "options", TIME)?;
    Ok(close_turn(&workspace, &key, &turn_id, close, options.now()))
}

fn get_turn(
    workspace: &JsValue,
    key: &JsValue,
    turn_id: &JsValue,
) -> Result<Operation<Option<Turn>>, Error> {
    let (workspace, key) = workspace_and_key(workspace, key)?;
    let turn_id = js::string(turn_id, "turnId")?;
    Ok(spool::get_turn(&workspace, &key, &turn_id))
}

fn session_turns(workspace: &JsValue, key: &JsValue) -> Result<Operation<SessionTurns>, Error> {
    let (workspace, key) = workspace_and_key(workspace, key)?;
    Ok(spool::session_turns(&workspace, &key))
}

fn list_turns(
    workspace: &JsValue,
    key: &JsValue,
    request: JsValue,
) -> Result<Operation<TurnPage>, Error> {
    let (workspace, key) = workspace_and_key(workspace, key)?;
    let request: TurnPageRequest = js::optional_object(request, "request")?;
    Ok(spool::list_turns(&workspace, &key, request))
}
