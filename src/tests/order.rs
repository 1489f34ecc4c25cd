use super::*;

#[test]
fn test_sorts_like_the_standard_stable_sort() {
    // Keys with many ties, tagged with their original position to check stability.
    let mut seed = 0x2545_f491_4f6c_dd1du64;
    for len in [0usize, 1, 2, 3, 7, 20, 64, 300] {
        let items: Vec<(u64, usize)> = (0..len)
            .map(|i| {
                seed ^= seed << 13;
                seed ^= seed >> 7;
                seed ^= seed << 17;
                (seed % 5, i)
            })
            .collect();
        let mut expected = items.clone();
        expected.sort_by_key(|item| item.0);
        let mut sorted = items.clone();
        sort_by_key(&mut sorted, |item| item.0);
        assert_eq!(sorted, expected, "length {len}");
        let mut reversed = items;
        sort_by(&mut reversed, |a, b| b.0.cmp(&a.0));
        expected.sort_by_key(|item| std::cmp::Reverse(item.0));
        assert_eq!(reversed, expected, "length {len}, descending");
    }
}

#[test]
fn test_set_and_map_match_collect() {
    let items = [5u8, 3, 5, 1, 3, 9];
    assert_eq!(
        set_of(items),
        items.iter().copied().collect::<BTreeSet<_>>()
    );
    let pairs = [(2u8, "a"), (1, "b"), (2, "c"), (0, "d")];
    let map = map_of(pairs);
    assert_eq!(map, pairs.iter().copied().collect::<BTreeMap<_, _>>());
    assert_eq!(map.get(&2), Some(&"c"), "the later value of a key wins");
}
