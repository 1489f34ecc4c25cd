use std::path::Path;

use super::{Function, OTHER, category, functions, report, without_disambiguators};

/// A LEB128 number.
fn leb(mut n: u64) -> Vec<u8> {
    let mut out = Vec::new();
    loop {
        let byte = (n & 0x7f) as u8;
        n >>= 7;
        if n == 0 {
            out.push(byte);
            return out;
        }
        out.push(byte | 0x80);
    }
}

fn section(id: u8, body: &[u8]) -> Vec<u8> {
    let mut out = vec![id];
    out.extend(leb(body.len() as u64));
    out.extend(body);
    out
}

fn name(text: &str) -> Vec<u8> {
    let mut out = leb(text.len() as u64);
    out.extend(text.as_bytes());
    out
}

/// A module importing one function and a memory, defining two functions with bodies
/// of `sizes`, named in its `name` section by `names` (function index, name).
fn module(sizes: [usize; 2], names: &[(u64, &str)]) -> Vec<u8> {
    let mut bytes = b"\0asm\x01\0\0\0".to_vec();
    let mut imports = leb(2);
    imports.extend(name("env"));
    imports.extend(name("f"));
    imports.extend([0, 0]);
    imports.extend(name("env"));
    imports.extend(name("memory"));
    imports.extend([2, 1, 1, 2]);
    bytes.extend(section(2, &imports));
    let mut code = leb(2);
    for size in sizes {
        code.extend(leb(size as u64));
        code.extend(vec![0u8; size]);
    }
    bytes.extend(section(10, &code));
    let mut subsection = leb(names.len() as u64);
    for (index, text) in names {
        subsection.extend(leb(*index));
        subsection.extend(name(text));
    }
    let mut custom = name("name");
    custom.push(1);
    custom.extend(leb(subsection.len() as u64));
    custom.extend(subsection);
    bytes.extend(section(0, &custom));
    bytes
}

#[test]
fn functions_are_named_past_the_imported_ones_and_demangled() {
    // Index 0 is the imported function; the module's own start at 1.
    let bytes = module(
        [3, 200],
        &[(0, "f"), (1, "_RNvCs1234_5spool4main"), (2, "plain")],
    );
    let found = functions(&bytes).expect("parses");
    assert_eq!(
        found,
        [
            Function {
                name: "spool::main".into(),
                size: 3
            },
            Function {
                name: "plain".into(),
                size: 200
            },
        ]
    );
}

#[test]
fn a_damaged_module_is_an_error_not_a_panic() {
    let bytes = module([3, 200], &[(1, "a")]);
    for cut in [4, 9, 20, bytes.len() - 3] {
        assert!(functions(&bytes[..cut]).is_err(), "cut at {cut}");
    }
    assert!(functions(b"not wasm at all").is_err());
}

#[test]
fn categories_go_to_the_first_match() {
    let args = "<spool::storage::value_de::Top>::visit_object::<<spool::engine::ops::Branch \
                as serde_core::de::Deserialize>::deserialize::__Visitor>";
    assert_eq!(category(args), "call arguments (the table's structs)");
    assert_eq!(
        category("<spool::types::Entry as serde_core::ser::Serialize>::serialize::<X>"),
        "serde writers"
    );
    assert_eq!(
        category("core::ptr::drop_in_place::<spool::search::Lookup>"),
        "drop glue"
    );
    assert_eq!(category("spool::search::tokenize"), "core: search");
    assert_eq!(category("dlmalloc::malloc"), OTHER);
}

#[test]
fn the_report_adds_up_each_category_and_lists_the_largest() {
    let functions = [
        Function {
            name: "spool::search::a".into(),
            size: 30,
        },
        Function {
            name: "spool::search::b".into(),
            size: 50,
        },
        Function {
            name: "dlmalloc::malloc".into(),
            size: 20,
        },
    ];
    let text = report(&functions, 1, Path::new("m.wasm"));
    assert!(text.contains("3 functions, 100 bytes"), "{text}");
    assert!(
        text.contains("       80  80.0%     2 fns  core: search"),
        "{text}"
    );
    assert!(text.contains("       20  20.0%     1 fns  std"), "{text}");
    assert!(
        text.contains("the 1 largest functions:\n       50  spool::search::b\n"),
        "{text}"
    );
    assert!(!text.contains("spool::search::a\n"), "{text}");
}

#[test]
fn crate_disambiguators_are_dropped_and_other_brackets_kept() {
    assert_eq!(
        without_disambiguators("<spool[bdf5c908d2e4ef17]::x as core[c5930c85a12de822]::T>"),
        "<spool::x as core::T>"
    );
    assert_eq!(
        without_disambiguators("[u8; 4usize] and [] and [zz]"),
        "[u8; 4usize] and [] and [zz]"
    );
}
