use super::*;

#[test]
fn test_the_core_keeps_its_layers_and_has_no_cycle() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("../src");
    let problems = check(&src);
    assert!(problems.is_empty(), "{}", problems.join("\n"));
    assert!(graph(&src).len() > 50, "the walk found the core's modules");
}

#[test]
fn test_an_upward_name_and_a_cycle_are_found() {
    let dir = tempfile_dir();
    let write = |path: &str, text: &str| {
        let path = dir.join(path);
        std::fs::create_dir_all(path.parent().expect("a parent")).expect("mkdir");
        std::fs::write(path, text).expect("write");
    };
    write("types.rs", "use crate::transcript::append;\n");
    write(
        "transcript.rs",
        "use crate::types::Entry; // crate::engine::ops in a comment\n",
    );
    write("engine/ops.rs", "pub fn f() {}\n");
    let problems = check(&dir);
    assert!(
        problems
            .iter()
            .any(|p| p.contains("`types` (data and pure rules) names `transcript`")),
        "{problems:?}"
    );
    assert!(
        problems.iter().any(|p| p.contains("reaches itself")),
        "{problems:?}"
    );
    assert!(
        !problems.iter().any(|p| p.contains("engine::ops")),
        "{problems:?}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

fn tempfile_dir() -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("spool-layers-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}
