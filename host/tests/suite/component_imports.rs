//! The embedded component's world: it imports only Spool's storage contract (and the
//! types it uses), its reset-archive store and its progress report, and exports
//! Spool's API. No WASI, no other capability.

use wasmparser::{Parser, Payload};

/// Calls `f` with each top-level section of `COMPONENT` (those of nested modules and
/// components are skipped).
fn for_each_top_level(mut f: impl FnMut(Payload<'_>)) {
    let mut depth = 0usize;
    for payload in Parser::new(0).parse_all(spool_host::COMPONENT) {
        match payload.expect("the component parses") {
            Payload::ModuleSection { .. } | Payload::ComponentSection { .. } => depth += 1,
            Payload::End(_) => depth = depth.saturating_sub(1),
            payload if depth == 0 => f(payload),
            _ => {}
        }
    }
}

/// The top-level import and export names of `COMPONENT`.
fn top_level_names() -> (Vec<String>, Vec<String>) {
    let (mut imports, mut exports) = (Vec::new(), Vec::new());
    for_each_top_level(|payload| match payload {
        Payload::ComponentImportSection(section) => {
            for import in section {
                imports.push(import.expect("import").name.name.to_owned());
            }
        }
        Payload::ComponentExportSection(section) => {
            for export in section {
                exports.push(export.expect("export").name.name.to_owned());
            }
        }
        _ => {}
    });
    imports.sort();
    (imports, exports)
}

#[test]
fn test_component_imports_only_spool_storage_archive_and_progress() {
    let (imports, _) = top_level_names();
    assert_eq!(
        imports,
        vec![
            "spool:engine/archive@0.1.0".to_owned(),
            "spool:engine/progress@0.1.0".to_owned(),
            "spool:engine/storage@0.1.0".to_owned(),
            "spool:engine/types@0.1.0".to_owned(),
        ],
        "the component must import exactly Spool's storage, archive and progress interfaces \
         and types"
    );
    assert!(imports.iter().all(|name| !name.starts_with("wasi:")));
}

#[test]
fn test_component_exports_spool_api() {
    let (_, exports) = top_level_names();
    assert_eq!(exports, vec!["spool:engine/api@0.1.0".to_owned()]);
}

#[test]
fn test_component_validates() {
    let mut validator = wasmparser::Validator::new_with_features(wasmparser::WasmFeatures::all());
    validator
        .validate_all(spool_host::COMPONENT)
        .expect("the embedded component is valid");
}

#[test]
fn test_component_carries_no_names_section() {
    // The names are stripped (host/build.rs); the sections around them are kept whole.
    let mut custom = Vec::new();
    for_each_top_level(|payload| {
        if let Payload::CustomSection(section) = payload {
            custom.push(section.name().to_owned());
        }
    });
    assert!(
        !custom.iter().any(|name| name == "component-name"),
        "{custom:?}"
    );
    assert!(custom.iter().any(|name| name == "producers"), "{custom:?}");
}
