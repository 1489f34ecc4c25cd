//! The table calls of [`Spool`]: one method per entry of the core's operation table
//! ([`spool::for_each_op!`]), derived from it, so a new entry gets its JS method with no
//! code here.
//!
//! Every table method takes the same two arguments: `spool.jsName(workspace, args)`, where
//! `args` is a plain object with the call's fields in `snake_case`: exactly the core
//! `Command` JSON minus `"op"` (`spool.appendEntry("default", { key, request: { role:
//! "user", content: "hi" } })`). The shell fills in what the core never reads itself
//! before the arguments are read ([`defaults`]): `now_ms` (`Date.now()`) and the ids a
//! call gives what it creates (`crypto.randomUUID()`). The arguments are then read into
//! the call's struct (`spool::ops::AppendEntry`, …) with its own `serde` rules (unknown
//! fields reject), its operation is driven like every other (the workspace's Web Lock,
//! one transaction, change notifications) and its result crosses as plain JSON.

use std::cell::Cell;

use js_sys::Promise;
use serde_json::{Map, Value};
use spool::{Error, Op, Operation};
use wasm_bindgen::prelude::*;

use super::Spool;
use crate::js;

/// Fills in what the table says a host fills in for the call `name`
/// ([`spool::ops::Call::fill_in`]) where the caller left it out: `now_ms` (`Date.now()`)
/// and fresh ids (`crypto.randomUUID()`).
fn defaults(name: &str, args: &mut Map<String, Value>) -> Result<(), Error> {
    let Some(call) = spool::ops::Call::named(name) else {
        return Ok(());
    };
    call.fill_in(args, |field| match field {
        "now_ms" => Ok(js::now_ms().into()),
        id => js::random_uuid(id).map(Value::from),
    })
}

/// A field of a table call: its name, and whether the core defaults it when absent.
type Field = (&'static str, bool);

/// Whether a call's arguments get the shell's defaults ([`defaults`]): the typed methods'
/// do, `execute`'s do not.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Fill {
    Defaults,
    Nothing,
}

/// The operation of the table call `O` (whose fields are `fields`) in `workspace` with the
/// arguments `args`. A field the core does not default must be given, even one that may
/// be `null` (`updateRoleAdapterState`'s `state`, whose `null` clears: a forgotten one
/// must not). An argument that does not parse is named in the error when the failure is
/// inside its value; otherwise (a missing or unknown field) the error names `args`.
fn operation<O: Op>(
    fields: &[Field],
    workspace: &str,
    mut args: Map<String, Value>,
    fill: Fill,
) -> Result<Operation<O::Output>, Error> {
    if fill == Fill::Defaults {
        defaults(O::NAME, &mut args)?;
    }
    for (field, defaulted) in fields {
        if !defaulted && !args.contains_key(*field) {
            return Err(Error::invalid(field, "missing (give null for none)"));
        }
    }
    // Read from the arguments in place: a clone of them first (a turn of a thousand
    // entries, a whole transcript to import) would hold them twice.
    let args = Value::Object(args);
    let at = Cell::new(None);
    match spool::record::read_naming::<O>(&args, &at) {
        Ok(op) => Ok(op.operation(workspace)),
        Err(e) => Err(unparsed(fields, at.get(), &e)),
    }
}

/// The error of arguments that do not parse: it names the argument whose value does not
/// (`at`, one of `fields`), or `args` when the failure is not inside one (a missing or an
/// unknown field).
fn unparsed(fields: &[Field], at: Option<&str>, e: &serde_json::Error) -> Error {
    let field = at
        .and_then(|at| fields.iter().find(|(name, _)| *name == at))
        .map_or("args", |(name, _)| *name);
    Error::unparsed(field, "does not parse", e)
}

/// One method per table entry, the dispatch by name of `execute`, and the names of the
/// methods.
macro_rules! js_calls {
    // One entry of the table (see `for_each_op!`).
    ($( $(#[doc = $doc:literal])* $(#[web = $web:literal])? $name:ident $js:ident $Op:ident {
        $( $(#[$attr:meta])* $field:ident : $ty:ty ),* $(,)? }
        $(fills($($fill:ident $(. $sub:ident)?),* $(,)?))? -> $out:ty = $f:path; )*) => {
        $(
            // A call of an optional feature is built with it (`#[web = "…"]`): an impl
            // block of its own, so that the `cfg` drops the whole export.
            $(#[cfg(feature = $web)])?
            #[wasm_bindgen]
            impl Spool {
                $(#[doc = $doc])*
                ///
                /// `args`: the call's fields in `snake_case` (its `Command` JSON without
                /// `op`); what the table's `fills` names defaults to `Date.now()`
                /// (`now_ms`) or `crypto.randomUUID()` (an id). Its TypeScript signature
                /// is generated from the table into `web/src/ts.rs` (`CallArgs`,
                /// `CallResults`).
                #[wasm_bindgen(js_name = $js, skip_typescript)]
                pub fn $name(&self, workspace: JsValue, args: JsValue) -> Promise {
                    let call = js::string(&workspace, "workspace").and_then(|workspace| {
                        Ok((workspace, js::args(args)?))
                    });
                    match call {
                        Ok((workspace, args)) => {
                            self.call_named(stringify!($name), &workspace, args, Fill::Defaults)
                        }
                        Err(e) => self.run::<()>(Err(e)),
                    }
                }
            }
        )*

        impl Spool {
            /// Runs the table call `name` in `workspace` with `args` (`fill`: whether the
            /// shell's defaults are filled in); a name not in the table is
            /// `invalid_argument`.
            pub(crate) fn call_named(
                &self,
                name: &str,
                workspace: &str,
                args: Map<String, Value>,
                fill: Fill,
            ) -> Promise {
                match name {
                    $(
                    $(#[cfg(feature = $web)])?
                    stringify!($name) => self.run(operation::<spool::ops::$Op>(
                        &[$((
                            stringify!($field),
                            stringify!($(#[$attr])*).contains("default"),
                        )),*],
                        workspace,
                        args,
                        fill,
                    )),
                    $(
                    #[cfg(not(feature = $web))]
                    stringify!($name) => self.run::<()>(Err(not_built(stringify!($js), $web))),
                    )?
                    )*
                    other => self.run::<()>(Err(Error::invalid(
                        "op",
                        format!(
                            "unknown call {} (`Spool.spoolCalls()` lists them)",
                            spool::validate::quote(other)
                        ),
                    ))),
                }
            }
        }

        /// Every table call's name, the name of its JS method and whether this build has
        /// it (a call of a feature left out has none: see [`not_built`]), in table order.
        const CALL_NAMES: &[(&str, &str, bool)] = &[$((
            stringify!($name),
            stringify!($js),
            true $(&& cfg!(feature = $web))?,
        )),*];

        /// The table calls as data, for tooling (the demo page's Operations panel): one
        /// `{ name, js_name, doc, fields: [{ name, type, optional }] }` per call, in table
        /// order. A field is optional when the core defaults it or the shell fills it in.
        #[wasm_bindgen(js_name = spoolCalls, unchecked_return_type = "SpoolCall[]")]
        pub fn spool_calls() -> JsValue {
            // A table read by one loop: code per call and field was 17 KB of the module.
            const CALLS: &[(bool, &str, &str, &str, &[(&str, &str, &str)])] = &[$((
                true $(&& cfg!(feature = $web))?,
                stringify!($name),
                stringify!($js),
                concat!($($doc, "\n"),*),
                &[$((stringify!($field), stringify!($ty), stringify!($(#[$attr])*))),*],
            )),*];
            let calls: Vec<CallInfo> = CALLS
                .iter()
                .filter(|call| call.0)
                .map(|&(_, name, js_name, doc, fields)| CallInfo {
                    name,
                    js_name,
                    doc,
                    fields: fields
                        .iter()
                        .map(|&(field, ty, attrs)| FieldInfo::new(name, field, ty, attrs))
                        .collect(),
                })
                .collect();
            js::to_js(&calls).unwrap_or(JsValue::NULL)
        }
    };
}

spool::for_each_op!(js_calls);

/// Every table call this build has: its name and the name of its JS method, in table
/// order. A build without one of the optional features (see the crate docs, "Features")
/// lacks that feature's calls.
pub fn js_names() -> impl Iterator<Item = (&'static str, &'static str)> {
    CALL_NAMES
        .iter()
        .filter(|(_, _, built)| *built)
        .map(|&(name, js, _)| (name, js))
}

/// The error of a call whose feature this build leaves out (through `execute`; the
/// method itself is absent): `invalid_argument`, naming the feature to build with.
// Unused in a build with every feature.
#[allow(dead_code)]
fn not_built(js_name: &str, feature: &str) -> Error {
    Error::invalid(
        "op",
        format!(
            "`{js_name}` is not in this build of the package: it comes with the \
             spool-web feature `{feature}`"
        ),
    )
}

/// One entry of [`spool_calls`].
#[derive(serde::Serialize)]
struct CallInfo {
    name: &'static str,
    js_name: &'static str,
    doc: &'static str,
    fields: Vec<FieldInfo>,
}

/// One field of a [`CallInfo`].
#[derive(serde::Serialize)]
struct FieldInfo {
    name: &'static str,
    #[serde(rename = "type")]
    ty: String,
    optional: bool,
}

impl FieldInfo {
    /// The field `name` of the call `call`, of Rust type `ty` with attributes `attrs`.
    fn new(call: &str, name: &'static str, ty: &str, attrs: &str) -> FieldInfo {
        let ty = ty.replace("$crate :: ", "").replace(" :: ", "::");
        let drawn = spool::ops::Call::named(call).is_some_and(|call| {
            call.fills
                .iter()
                .any(|fill| fill.split('.').next() == Some(name))
        });
        let optional = drawn || attrs.contains("default") || ty.starts_with("Option");
        FieldInfo { name, ty, optional }
    }
}
