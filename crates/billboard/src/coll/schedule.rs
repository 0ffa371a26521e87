//! Pure index arithmetic of the tree schedules (no data moves here).

/// Binomial tree rooted at `root` over `n` ranks: the rank `rank` receives from, if any.
pub(crate) fn binomial_parent(rank: usize, root: usize, n: usize) -> Option<usize> {
    let rel = (rank + n - root) % n;
    if rel == 0 {
        return None;
    }
    let mask = 1usize << rel.trailing_zeros();
    Some((rel - mask + root) % n)
}

/// Binomial tree rooted at `root`: the ranks `rank` sends to, largest subtree first.
pub(crate) fn binomial_children(rank: usize, root: usize, n: usize) -> impl Iterator<Item = usize> {
    let rel = (rank + n - root) % n;
    let limit = if rel == 0 { n.next_power_of_two() } else { 1 << rel.trailing_zeros() };
    let masks = std::iter::successors(Some(limit >> 1), |m| Some(m >> 1)).take_while(|&m| m > 0);
    masks.filter(move |&m| rel + m < n).map(move |m| (rel + m + root) % n)
}

/// Block `k` of a vector of `len` bytes cut into `n` blocks between `elem`-byte elements:
/// `(offset, length)`. Blocks follow one another and differ by at most one element; the last
/// also takes any bytes past the last whole element.
pub(crate) fn block(k: usize, n: usize, len: usize, elem: usize) -> (usize, usize) {
    let elems = len / elem.max(1);
    let (base, extra) = (elems / n, elems % n);
    let first = |k: usize| (k * base + k.min(extra)) * elem.max(1);
    let end = if k + 1 == n { len } else { first(k + 1) };
    (first(k), end - first(k))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocks_tile_the_vector_between_elements() {
        for n in 1..9 {
            for (len, elem) in [(0, 8), (8, 8), (24, 8), (1 << 20, 8), (100, 12), (7, 4), (1000, 1)] {
                let mut at = 0;
                for k in 0..n {
                    let (d, l) = block(k, n, len, elem);
                    assert_eq!(d, at, "n={n} len={len} k={k}");
                    assert_eq!(d % elem, 0, "block {k} starts inside an element");
                    let whole = (len / elem) * elem;
                    assert!(l.abs_diff(whole / elem / n * elem) <= elem + len - whole, "n={n} len={len} k={k}: {l}");
                    at += l;
                }
                assert_eq!(at, len);
            }
        }
    }

    #[test]
    fn every_rank_but_the_root_has_one_parent_that_lists_it() {
        for n in 1..40 {
            for root in 0..n {
                assert_eq!(binomial_parent(root, root, n), None);
                let mut reached = vec![false; n];
                reached[root] = true;
                for r in 0..n {
                    for c in binomial_children(r, root, n) {
                        assert_eq!(binomial_parent(c, root, n), Some(r), "n={n} root={root}");
                        assert!(!reached[c], "rank {c} reached twice");
                        reached[c] = true;
                    }
                }
                assert!(reached.iter().all(|&x| x), "n={n} root={root}: some rank never reached");
            }
        }
    }

    #[test]
    fn the_tree_is_logarithmically_deep() {
        let n = 37;
        for r in 0..n {
            let mut depth = 0;
            let mut x = r;
            while let Some(p) = binomial_parent(x, 5, n) {
                x = p;
                depth += 1;
            }
            assert!(depth <= 6, "rank {r} is {depth} hops from the root");
        }
    }
}
