//! Every key tag lives in `src/storage/keys.rs`: no other file of the core declares a tag or
//! builds a key from a bare tag byte, so two kinds of record can never share one
//! unnoticed (`keys::TAGS` lists them and its unit tests check they are unique).
#![cfg(not(target_arch = "wasm32"))]

use std::path::{Path, PathBuf};

fn sources(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("read src/") {
        let path = entry.expect("entry").path();
        if path.is_dir() {
            sources(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

#[test]
fn test_no_file_but_keys_declares_or_spells_a_tag() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    sources(&src, &mut files);
    assert!(files.len() > 10, "{files:?}");
    let spelled = [
        ": u8 = b'",
        "KeyBuf::new(b'",
        "identity(b'",
        "prefix(&[b'",
        "[keys::ENTRY, b'",
    ];
    let mut found = Vec::new();
    for file in files.iter().filter(|f| !f.ends_with("keys.rs")) {
        let text = std::fs::read_to_string(file).expect("a source file");
        for (n, line) in text.lines().enumerate() {
            if spelled.iter().any(|s| line.contains(s)) {
                found.push(format!("{}:{}: {}", file.display(), n + 1, line.trim()));
            }
        }
    }
    assert!(
        found.is_empty(),
        "tags outside src/storage/keys.rs:\n{}",
        found.join("\n")
    );
}
