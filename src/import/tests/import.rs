use super::*;

#[test]
fn test_inline_attachment_decodes_base64_and_data_urls() {
    let plain = inline_attachment("image", Some("image/png"), "aGVsbG8=").expect("base64");
    assert_eq!(plain.size, 5);
    assert_eq!(
        plain.sha256.as_deref(),
        Some("2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824")
    );
    let url = inline_attachment("image", None, "data:image/jpeg;base64,aGVsbG8").expect("url");
    assert_eq!(
        (url.size, url.media_type.as_deref()),
        (5, Some("image/jpeg"))
    );
    assert_eq!(url.sha256, plain.sha256);
    assert!(inline_attachment("image", None, "not base64!").is_none());
    assert!(inline_attachment("image", None, "data:text/plain,hello").is_none());
    assert!(decode_base64("QQ").is_some_and(|b| b == b"A"));
    assert!(decode_base64("Q").is_none(), "a lone group is not a byte");
}

#[test]
fn test_strip_ansi_removes_colours_and_osc_sequences_only() {
    assert_eq!(strip_ansi("\u{1b}[1;32mok\u{1b}[0m done"), "ok done");
    assert_eq!(strip_ansi("\u{1b}]0;title\u{7}x\u{1b}]8;;u\u{1b}\\y"), "xy");
    assert_eq!(strip_ansi("plain [text] é"), "plain [text] é");
    assert_eq!(strip_ansi("cut \u{1b}["), "cut ");
}
