//! Pure index arithmetic of the schedules (no data moves here): binomial trees, blocks of a
//! vector, rings, recursive doubling (with the fold that makes any count a power of two),
//! Bruck's and the dissemination pattern. Ranks here are indices into whatever group a
//! schedule addresses (a communicator, one host's members, the hosts' leaders).

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

/// The ring's neighbours of `me` among `n`: `(left, right)`, who it receives from and sends to.
pub(crate) fn ring_neighbours(me: usize, n: usize) -> (usize, usize) {
    ((me + n - 1) % n, (me + 1) % n)
}

/// `(k + i) mod n` for any signed step `i` (ring and Bruck block indices).
pub(crate) fn wrap(k: usize, i: isize, n: usize) -> usize {
    (k as isize + i).rem_euclid(n as isize) as usize
}

/// Where a rank stands in recursive doubling over `n` ranks that are not a power of two
/// (Thakur, Rabenseifner and Gropp 2005): the first `2 * (n - p)` ranks, `p` the largest power
/// of two not above `n`, pair up, the even one of each pair hands its vector to the odd one
/// and sits the doubling out; every other rank takes part under a new rank below `p`.
/// Ranks keep their order under the new numbering, so rank order survives for
/// non-commutative operators.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Doubling {
    /// Hands its vector to `partner` (the next rank) and receives the result from it at the end.
    SitsOut { partner: usize },
    /// Takes part as `new` (below `p`); `folds` is the rank whose vector it takes in first.
    TakesPart { new: usize, folds: Option<usize> },
}

/// The largest power of two not above `n` (`n >= 1`).
pub(crate) fn power_of_two_below(n: usize) -> usize {
    1 << (usize::BITS - 1 - n.max(1).leading_zeros())
}

/// This rank's place in recursive doubling (see [`Doubling`]).
pub(crate) fn doubling(me: usize, n: usize) -> Doubling {
    let extra = n - power_of_two_below(n);
    match me {
        _ if me >= 2 * extra => Doubling::TakesPart { new: me - extra, folds: None },
        _ if me.is_multiple_of(2) => Doubling::SitsOut { partner: me + 1 },
        _ => Doubling::TakesPart { new: me / 2, folds: Some(me - 1) },
    }
}

/// The rank that takes part in recursive doubling over `n` ranks under new rank `new`.
pub(crate) fn doubling_rank(new: usize, n: usize) -> usize {
    let extra = n - power_of_two_below(n);
    if new < extra {
        2 * new + 1
    } else {
        new + extra
    }
}

/// The combining steps of a reduction over `n` vectors in the binomial tree's order, for a
/// rank that holds them all (the root of a post or board reduction): `(from, into)` slot
/// pairs, each `into = from ⊕ into`, in order; the result ends in slot `n - 1`.
///
/// It is the order of the binomial tree into rank 0 (`reduce.rs`), and of recursive doubling
/// for a power of two of ranks: at distance `m`, the partial result of ranks `r..r+m` is
/// combined, as `in`, with that of `r+m..r+2m`, as `inout`. The partial result of `r..r+m`
/// lies in slot `min(r + m, n) - 1`, so no table is needed. Reductions that fold in another
/// order (right to left, `v0 ⊕ (v1 ⊕ (… ⊕ v(n-1)))`) round differently: results that differ
/// in the last bits between algorithms are allowed by MPI, but the standard strongly
/// recommends the same result for the same arguments in the same order (MPI 4.0 section
/// 6.9.1), and ScaLAPACK's eigensolvers lose orthogonality without it (xdsep's PDSYEVX rows
/// failed 10 of 30 runs with a right-to-left fold at the root, 0 of 30 in the tree's order).
///
/// Only odd slots and slot `n - 1` are written (`into`). An odd slot is written first at
/// distance 1, the only distance whose `from` is even (an untouched vector); at every larger
/// distance `from` is odd, a slot written before. [`folded_into`] says which slots are written.
///
/// A plain counter pair, not a chain of iterator adapters: the board's allreduce of 8 B walks
/// it in every call (the adapters cost ~90 instructions a call, callgrind).
pub(crate) fn binomial_fold(n: usize) -> BinomialFold {
    BinomialFold { n, m: 1, r: 0 }
}

/// The steps of [`binomial_fold`]: distance `m`, pair `r..r+2m` next.
pub(crate) struct BinomialFold {
    n: usize,
    m: usize,
    r: usize,
}

impl Iterator for BinomialFold {
    type Item = (usize, usize);

    #[inline]
    fn next(&mut self) -> Option<(usize, usize)> {
        let n = self.n;
        while self.m < n {
            let (m, r) = (self.m, self.r);
            if r + m < n {
                self.r = r + 2 * m;
                return Some((r + m - 1, (r + 2 * m).min(n) - 1));
            }
            (self.m, self.r) = (2 * m, 0);
        }
        None
    }
}

/// Whether [`binomial_fold`] over `n` vectors writes into slot `k` (see there): a rank whose
/// own vector lies there folds a copy of it.
pub(crate) fn folded_into(k: usize, n: usize) -> bool {
    n > 1 && (k + 1 == n || k % 2 == 1)
}

/// Bruck's rounds (and the dissemination barrier's) over `n` ranks: the distances 1, 2, 4, ...
/// below `n`. In the round of distance `d`, `me` sends to `me - d` and receives from `me + d`
/// (Bruck, Ho, Kipnis, Upfal and Weathersby 1997, the all-gather without final rotation when
/// blocks are addressed in place); in the dissemination barrier the other way round.
pub(crate) fn distances(n: usize) -> impl Iterator<Item = usize> {
    std::iter::successors(Some(1usize), |d| d.checked_mul(2)).take_while(move |&d| d < n)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The expression the tree of `reduce.rs` computes at rank 0 for `n` ranks: each rank's
    /// accumulator takes in the one `mask` above it, lower ranks on the left.
    fn tree_expression(n: usize) -> String {
        let mut acc: Vec<String> = (0..n).map(|r| format!("v{r}")).collect();
        let mut mask = 1;
        while mask < n {
            for r in (0..n).step_by(2 * mask).filter(|&r| r + mask < n) {
                acc[r] = format!("({} {})", acc[r], acc[r + mask]);
            }
            mask <<= 1;
        }
        acc.swap_remove(0)
    }

    #[test]
    fn the_binomial_fold_computes_the_trees_expression_in_slots() {
        for n in 1..70 {
            let mut slot: Vec<String> = (0..n).map(|r| format!("v{r}")).collect();
            let mut used = vec![false; n];
            for (from, into) in binomial_fold(n) {
                assert!(from < into && !used[from], "n {n}: slot {from} read after it was folded in");
                slot[into] = format!("({} {})", slot[from], slot[into]);
                used[from] = true;
            }
            assert_eq!(slot[n - 1], tree_expression(n), "n {n}");
            assert_eq!(used.iter().filter(|&&u| u).count(), n - 1, "n {n}: every vector but one folded in");
        }
    }

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

    #[test]
    fn doubling_pairs_the_extra_ranks_and_renumbers_the_rest_in_order() {
        for n in 1..40 {
            let p = power_of_two_below(n);
            assert!(p <= n && 2 * p > n);
            let mut seen = vec![None; p];
            for me in 0..n {
                match doubling(me, n) {
                    Doubling::SitsOut { partner } => {
                        assert_eq!(doubling(partner, n), Doubling::TakesPart { new: partner / 2, folds: Some(me) });
                    }
                    Doubling::TakesPart { new, .. } => {
                        assert!(new < p, "n={n} me={me}");
                        assert!(seen[new].replace(me).is_none(), "new rank {new} twice");
                        assert_eq!(doubling_rank(new, n), me);
                    }
                }
            }
            let order: Vec<usize> = seen.into_iter().map(Option::unwrap).collect();
            assert!(order.windows(2).all(|w| w[0] < w[1]), "n={n}: new ranks out of order: {order:?}");
        }
    }

    #[test]
    fn bruck_rounds_cover_every_block_once() {
        for n in 1..20 {
            // After the round of distance d, rank j holds blocks j .. j + min(2d, n).
            for j in 0..n {
                let mut held = 1;
                for d in distances(n) {
                    let count = d.min(n - d);
                    assert_eq!(held, d, "n={n}");
                    held += count;
                }
                assert_eq!(held, n, "n={n} j={j}");
            }
            assert_eq!(wrap(0, -1, n.max(1)), n.max(1) - 1);
            assert_eq!(ring_neighbours(0, n.max(1)), (n.max(1) - 1, 1 % n.max(1)));
        }
    }
}
