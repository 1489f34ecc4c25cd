use super::*;

#[test]
fn test_written_bytes_counts_puts_deletes_and_range_bounds() {
    let mut batch = Batch::default();
    batch.require_absent(b"ignored".to_vec());
    batch.put(b"ab".to_vec(), b"xyz".to_vec());
    batch.delete(b"k".to_vec());
    batch.delete_range(KeyRange {
        start: b"s1".to_vec(),
        end: Some(b"e".to_vec()),
    });
    batch.delete_range(KeyRange::prefix(&[]));
    // 2 + 3, 1, 2 + 1, and an open range from the empty key: 0.
    assert_eq!(batch.written_bytes(), 9);
    assert_eq!(Batch::default().written_bytes(), 0);
}
