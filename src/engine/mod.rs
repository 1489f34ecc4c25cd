//! The operation machinery: the sans-IO [`op::Operation`] and its drivers, the
//! operation table ([`ops`]) every surface is expanded from, how types cross the WIT
//! boundary ([`wit_map`]), argument validation and the error type; and the component
//! shell that exports the table over WIT (`component.rs`, wasm32 only).

pub(crate) mod error;
pub(crate) mod op;
pub mod ops;
mod search_json;
pub mod validate;
pub mod wit_map;

#[cfg(all(feature = "component", target_arch = "wasm32"))]
#[allow(unsafe_code, missing_docs, unreachable_pub)]
mod component;
