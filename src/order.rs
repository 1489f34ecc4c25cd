//! Stable sorting through one shared sort.
//!
//! `slice::sort_by` compiles a whole merge sort for every element type and comparator it
//! is called with, about 4 KB of module each. [`sort_by`] sorts the positions of the
//! elements instead, with one comparator type, so the sort itself is compiled once; each
//! caller adds only the small permutation of its own element type. It is for the
//! core's short lists (a page, a session's obligations, a fork's entries); hot sorts of
//! long lists keep `slice::sort_by`.
//!
//! Collecting into a `BTreeSet` or `BTreeMap` sorts too: `collect()` buffers the items
//! and compiles a whole stable sort for every item type *and iterator type* it collects
//! from. [`set_of`] and [`map_of`] insert one item at a time instead, for the same
//! small collections.

use std::cmp::Ordering;
use std::collections::{BTreeMap, BTreeSet};

/// Sorts `items` by `cmp`, keeping equal elements in their order (like
/// `slice::sort_by`).
pub(crate) fn sort_by<T>(items: &mut [T], cmp: impl Fn(&T, &T) -> Ordering) {
    let order = stable_order(items.len(), &|a, b| cmp(&items[a], &items[b]));
    permute(items, order);
}

/// Sorts `items` by `key`, keeping elements with equal keys in their order (like
/// `slice::sort_by_key`).
pub(crate) fn sort_by_key<T, K: Ord>(items: &mut [T], key: impl Fn(&T) -> K) {
    sort_by(items, |a, b| key(a).cmp(&key(b)));
}

/// The set of `items`, inserted one at a time (see the module docs).
pub(crate) fn set_of<T: Ord>(items: impl IntoIterator<Item = T>) -> BTreeSet<T> {
    let mut set = BTreeSet::new();
    set.extend(items);
    set
}

/// The map of `items`, inserted one at a time, a later value replacing an earlier one of
/// the same key (like `collect()`).
pub(crate) fn map_of<K: Ord, V>(items: impl IntoIterator<Item = (K, V)>) -> BTreeMap<K, V> {
    let mut map = BTreeMap::new();
    map.extend(items);
    map
}

/// The positions `0..n` in the order `cmp` sorts them, equal ones in their order.
fn stable_order(n: usize, cmp: &dyn Fn(usize, usize) -> Ordering) -> Vec<usize> {
    let mut order: Vec<usize> = (0..n).collect();
    order.sort_by(|&a, &b| cmp(a, b));
    order
}

/// Rearranges `items` so that position `i` holds what was at `order[i]` (`order` is a
/// permutation of the positions), by following each cycle of the permutation once.
fn permute<T>(items: &mut [T], mut order: Vec<usize>) {
    for start in 0..items.len() {
        let mut at = start;
        // A position already placed points at itself.
        while order[at] != at {
            let from = order[at];
            order[at] = at;
            if from == start {
                break;
            }
            items.swap(at, from);
            at = from;
        }
    }
}

#[cfg(test)]
#[path = "tests/order.rs"]
mod tests;
