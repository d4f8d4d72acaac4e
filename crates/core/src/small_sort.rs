//! A stable insertion sort for core's two short lists (a batch's answers, at
//! most [`MAX_QUESTIONS`](crate::limits::MAX_QUESTIONS); a multi-select's
//! choices, at most [`MAX_OPTIONS`](crate::limits::MAX_OPTIONS)). The
//! standard library's stable sort (driftsort) is several KB of wasm the page
//! ships for lists this short; the order is the same, as both are stable.

/// Sorts `items` by `key`, keeping equal keys in their order (as
/// `slice::sort_by_key`). Quadratic: only for lists bounded as above.
pub(crate) fn sort_by_key<T, K: Ord>(items: &mut [T], mut key: impl FnMut(&T) -> K) {
    for end in 1..items.len() {
        let mut at = end;
        while at > 0 && key(&items[at - 1]) > key(&items[at]) {
            items.swap(at - 1, at);
            at -= 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn it_orders_as_the_standard_stable_sort_does(items in proptest::collection::vec((0u8..6, any::<u16>()), 0..40)) {
            let mut ours = items.clone();
            let mut std = items;
            super::sort_by_key(&mut ours, |(key, _)| *key);
            std.sort_by_key(|(key, _)| *key);
            prop_assert_eq!(ours, std);
        }
    }

    #[test]
    fn equal_keys_keep_their_order_and_none_sorts_first() {
        let mut items = vec![
            (Some(2), 'a'),
            (None, 'b'),
            (Some(1), 'c'),
            (Some(2), 'd'),
            (None, 'e'),
        ];
        super::sort_by_key(&mut items, |(key, _)| *key);
        assert_eq!(
            items,
            [
                (None, 'b'),
                (None, 'e'),
                (Some(1), 'c'),
                (Some(2), 'a'),
                (Some(2), 'd')
            ]
        );
    }
}
