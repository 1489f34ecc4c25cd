use super::*;

#[test]
fn test_varints_round_trip_at_every_width() {
    for n in [0, 1, 127, 128, 300, 1 << 35, u64::MAX - 1, u64::MAX] {
        let mut out = Vec::new();
        put_varint(&mut out, n);
        let mut reader = Reader::new(b"k", &out);
        assert_eq!(reader.varint().expect("reads"), n);
        reader.finish().expect("all read");
    }
}

#[test]
fn test_malformed_parts_are_corruption() {
    let overlong = [0xff; 11];
    let too_big = [0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02];
    for value in [&overlong[..], &too_big[..], &[0x80][..], &[5, b'a'][..]] {
        let mut reader = Reader::new(b"k", value);
        let err = reader.bytes().expect_err("malformed");
        assert_eq!(err.code(), "corruption", "{value:?}");
    }
    assert_eq!(
        Reader::new(b"k", &[1, 0xff])
            .text()
            .expect_err("not UTF-8")
            .code(),
        "corruption"
    );
    assert_eq!(
        Reader::new(b"k", &[1]).fixed64().expect_err("short").code(),
        "corruption"
    );
    assert_eq!(
        Reader::new(b"k", &[1])
            .finish()
            .expect_err("trailing")
            .code(),
        "corruption"
    );
}
