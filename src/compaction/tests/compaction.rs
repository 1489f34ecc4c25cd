#[test]
fn test_find_answers_as_str_find() {
    let texts = [
        "",
        "e",
        "exit",
        "Exit code 1",
        "Next I will rerun it. Next I will",
        "NNext I wil",
        "é Next I will ü",
        "日本 Command failed: cargo test",
        "Command failed:",
        "aaaab",
    ];
    let needles = [
        "",
        "e",
        "Next I will",
        "Command failed:",
        "aab",
        "ab",
        "日本",
        "ü",
    ];
    for text in texts {
        for needle in needles {
            assert_eq!(
                super::find(text, needle),
                text.find(needle),
                "{text:?} {needle:?}"
            );
        }
    }
}
