use super::{base64_decode, dechunk};

#[test]
fn test_base64_decodes_padded_and_unpadded_tails() {
    assert_eq!(base64_decode("aGVsbG8=").as_deref(), Ok(&b"hello"[..]));
    assert_eq!(base64_decode("aGk=").as_deref(), Ok(&b"hi"[..]));
    assert_eq!(base64_decode("YWJj").as_deref(), Ok(&b"abc"[..]));
    assert!(base64_decode("a$==").is_err());
}

#[test]
fn test_chunked_bodies_are_joined() {
    assert_eq!(dechunk(b"3\r\n{\"a\r\n2\r\n\":\r\n0\r\n\r\n"), b"{\"a\":");
}
