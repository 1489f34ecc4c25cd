//! The component shell: wit-bindgen exports over the core, storage over the WIT imports.
//!
//! This is the only file that sees generated types; everything else speaks core types.

use crate::engine::op::{ArchiveWriter, Archiver, Operation};
use crate::engine::ops::Op;
use crate::storage::{Batch, Kv, Progress, RangeQuery, Storage, StorageError};
use crate::types::ResetArchive;

wit_bindgen::generate!({
    world: "spool",
    path: "wit",
});

use exports::spool::engine::api as wit;
use spool::engine::{archive as host_archive, progress as host_progress, storage as host, types};

/// The host's reset-archive store, reached through the WIT imports: it keeps an archive
/// as its parts arrive.
struct HostArchive;

/// The archive being handed to the host, part by part.
struct HostArchiveWriter {
    workspace: String,
}

fn json_text(value: &impl serde::Serialize) -> Result<String, String> {
    serde_json::to_string(value).map_err(|e| format!("archive does not encode: {e}"))
}

impl ArchiveWriter for HostArchiveWriter {
    fn append(&mut self, entries: &[crate::types::Entry]) -> Result<(), String> {
        host_archive::append_reset_archive(&self.workspace, &json_text(&entries)?)
    }

    fn finish(self: Box<Self>, summaries: &[serde_json::Value]) -> Result<(), String> {
        host_archive::finish_reset_archive(&self.workspace, &json_text(&summaries)?)
    }
}

impl Archiver for HostArchive {
    fn write_archive(&self, workspace: &str, archive: &ResetArchive) -> Result<(), String> {
        let mut writer = self
            .archive_writer(workspace, archive)
            .unwrap_or_else(|| Err("no archive writer".into()))?;
        writer.append(&archive.transcript_entries)?;
        writer.finish(&archive.summaries)
    }

    fn archive_writer(
        &self,
        workspace: &str,
        head: &ResetArchive,
    ) -> Option<Result<Box<dyn ArchiveWriter + Send>, String>> {
        let begun = host_archive::begin_reset_archive(
            workspace,
            &host_archive::ArchiveHead {
                session_key: head.session_key.clone(),
                session_id: head.session_id.clone(),
                epoch: head.epoch,
                archived_at: head.archived_at,
            },
        );
        Some(begun.map(|()| {
            Box::new(HostArchiveWriter {
                workspace: workspace.to_owned(),
            }) as Box<dyn ArchiveWriter + Send>
        }))
    }
}

/// Drives `op` against the host's storage and archive store.
fn run<T: 'static>(op: Operation<T>) -> Result<T, wit::Error> {
    crate::engine::op::run_converting(&HostStorage, &HostArchive, op, to_wit_error)
}

/// The host's storage, reached through the WIT imports.
struct HostStorage;

/// A storage error as the core's (the conversion cannot fail: every case has its own).
fn from_wit_error(error: types::StorageError) -> StorageError {
    StorageError::from_wit(error, "storage")
        .unwrap_or_else(|e| StorageError::Backend(e.to_string()))
}

impl Storage for HostStorage {
    fn get(&self, workspace: &str, key: &[u8]) -> Result<Option<Vec<u8>>, StorageError> {
        host::get(workspace, key)
            .map(|found| found.value)
            .map_err(from_wit_error)
    }

    fn range(&self, workspace: &str, query: &RangeQuery) -> Result<Vec<Kv>, StorageError> {
        let pairs = host::range(workspace, &query.clone().into_wit()).map_err(from_wit_error)?;
        Vec::<Kv>::from_wit(pairs, "range").map_err(|e| StorageError::Backend(e.to_string()))
    }

    fn commit(&self, workspace: &str, batch: Batch) -> Result<(), StorageError> {
        host::commit(workspace, &batch.into_wit()).map_err(from_wit_error)
    }

    fn progress(&self, workspace: &str, progress: &Progress) {
        host_progress::report(workspace, &progress.phase, progress.done, progress.total);
    }
}

fn to_wit_error(error: crate::Error) -> wit::Error {
    wit::Error {
        code: error.error_code().into_wit(),
        message: error.to_string(),
    }
}

crate::wit_map!();

/// Converts a call's arguments, runs it against the host's storage and converts its
/// result: the one body behind every typed export.
fn serve<O: Op>(
    workspace: &str,
    op: Result<O, crate::Error>,
) -> Result<<O::Output as Wit>::W, wit::Error>
where
    O::Output: Wit,
{
    let op = op.map_err(to_wit_error)?;
    run(op.operation(workspace)).map(Wit::into_wit)
}

struct Component;

macro_rules! exports {
    // One entry of the table (see `for_each_op!`).
    ($( $(#[$doc:meta])* $name:ident $js:ident $Op:ident {
        $( $(#[$attr:meta])* $field:ident : $ty:ty ),* $(,)? }
        $(fills($($fill:ident $(. $sub:ident)?),* $(,)?))? -> $out:ty = $f:path; )*) => {
        impl wit::Guest for Component {
            $(
                fn $name(
                    workspace: String,
                    $($field: <$ty as Wit>::W),*
                ) -> Result<<$out as Wit>::W, wit::Error> {
                    serve(&workspace, (|| Ok(crate::engine::ops::$Op {
                        $($field: Wit::from_wit($field, stringify!($field))?),*
                    }))())
                }
            )*

            fn parse_import(format: String, text: String) -> Result<String, wit::Error> {
                let format: crate::import::ImportFormat =
                    crate::engine::wit_map::from_name(format, "format").map_err(to_wit_error)?;
                Ok(crate::engine::wit_map::to_json(&crate::import::parse(format, &text)))
            }

            fn parse_import_slice(
                format: String,
                cursor: String,
                text: String,
                last: bool,
            ) -> Result<(String, String), wit::Error> {
                let format: crate::import::ImportFormat =
                    crate::engine::wit_map::from_name(format, "format").map_err(to_wit_error)?;
                let mut cursor: crate::import::ParseCursor = if cursor.is_empty() {
                    Default::default()
                } else {
                    // Straight from the text, not through a `Value`: a cursor runs to
                    // MiBs, and a tree of it beside the text would raise the guest's peak
                    // (the bounded-memory import tests). The bytes go through the module's
                    // one text parser (`SliceRead`, as `record::parse_json`).
                    serde_json::from_slice(cursor.as_bytes()).map_err(|e| {
                        to_wit_error(crate::Error::invalid(
                            "cursor",
                            format!("not a cursor parse-import-slice returned: {e}"),
                        ))
                    })?
                };
                let log = crate::import::parse_slice(format, &mut cursor, &text, last)
                    .map_err(to_wit_error)?;
                Ok((
                    crate::engine::wit_map::to_json(&log),
                    crate::engine::wit_map::to_json(&cursor),
                ))
            }
        }
    };
}

crate::for_each_op!(exports);

export!(Component);
