"""How many itemsets clear a support threshold, privately: the exponential mechanism over ranks.

Privacy and constants: docs/privacy.md §25. With `--min-support θ` (or `--min-count c`) the
number K of itemsets to release is not given: it is chosen by the exponential mechanism over
k = 0..cap with the utility

    u(k) = -( max(0, t - c_(k)) + max(0, c_(k+1) - t + 1) ),   c_(0) = +infinity,

c_(k) the k-th largest support over EVERY itemset of the sizes 1..s (the order statistics of
all counts, zero counts included) and t = ceil(θ n) (or c). u(k) = 0 exactly when
c_(k) >= t > c_(k+1) (k itemsets clear the threshold); it falls by one for each record the
k-th support lacks or the (k+1)-th has in excess. One record moves every order statistic by at
most one and ceil(θ n) by at most one (under replace-one n is fixed), so each max(0, .) moves by
at most one; and the two cannot move the same way at once (both rising would need
c_(k+1)' >= t' > c_(k)', both falling c_(k+1) >= t > c_(k), each against the order), so u
moves by at most 1 under both relations (§25.2): weight exp(ε_t u / 2) is ε_t-DP, so
(ε_t²/2)-zCDP; levelwise then releases the top K with the rest of its budget.

Why not AboveThreshold along the ranks: its first-passage stop is biased down wherever many
ranks sit near t (measured: retail, θ = 0.005, ε_t = 0.09, 580 itemsets clear t, the scan
stopped at 378 on average; the exponential mechanism's mean 595, sd 97); §25.4.

The utilities are computed exactly and lazily: `ranked_supports` pops the itemsets in decreasing
order of support from the lattice levelwise grows (an itemset is a candidate once all its
subsets were popped; by anti-monotonicity the popped supports are the sorted order statistics),
so only the top cap + 1 itemsets are counted, never "every itemset above a floor".
"""

from __future__ import annotations

import heapq
import itertools
import math
from collections.abc import Iterator
from fractions import Fraction

import numpy as np

from dpfim.counts import Counts
from dpfim.mechanisms.selection import pick_member, select_count
from dpfim.samplers.rng import RandomSource

Key = tuple[int, ...]
# a threshold below smallest_count(eps_t, cap) records is refused from public values: the
# ranks whose utility is at most -t (where the counts have run out) could then hold more than
# 1/TAIL of the mechanism's mass (§25.3)
TAIL = 40


def admitted(key: Key, items: list[int], released: set[Key], seen: set[Key] | dict) -> list[Key]:
    """The lattice step levelwise and the exact ranks share: the supersets of `key` with one
    more item of `items` (released single items) whose every (|X| - 1)-subset is in `released`,
    and which are not already in `released` or `seen` (the candidates known)."""
    new = []
    for i in items:
        if i in key:
            continue
        cand = tuple(sorted((*key, i)))
        if cand in seen or cand in released:
            continue
        if all(cand[:j] + cand[j + 1 :] in released for j in range(len(cand))):
            new.append(cand)
    return new


def bar(min_support: Fraction | None, min_count: int | None, n: float) -> float:
    """The consistent support an itemset must reach (§25.1's post-processing): the count, or
    theta times n (public under replace-one; the noisy n under add/remove)."""
    if min_count is not None:
        return float(min_count)
    assert min_support is not None
    return float(min_support) * n


def clearing(keys: list[Key], consistent: list[float], least: float) -> list[int]:
    """The positions of the keys whose consistent support and every subset's reach `least`:
    the projection is monotone only up to its tolerance, so the subsets are checked and what
    is kept is downward closed whatever the rounding (§25.1)."""
    passed = {k for k, v in zip(keys, consistent, strict=True) if v >= least}
    return [
        j
        for j, k in enumerate(keys)
        if all(sub in passed for r in range(1, len(k) + 1) for sub in itertools.combinations(k, r))
    ]


def ranked_supports(counts: Counts, ids: np.ndarray, sup: np.ndarray, s: int) -> Iterator[int]:
    """c_(1), c_(2), ...: the supports of every itemset of sizes 1..s over the items `ids`
    (exact supports `sup`) in decreasing order, then zeros for ever (the itemsets of support 0,
    of which there are more than any cap)."""
    for c, _ in ranked_itemsets(counts, ids, sup, s):
        yield c
    while True:
        yield 0


def ranked_itemsets(
    counts: Counts, ids: np.ndarray, sup: np.ndarray, s: int
) -> Iterator[tuple[int, Key]]:
    """(support, sorted item ids) of every itemset of sizes 1..s and support >= 1 over the
    items `ids`, in decreasing order of support (an exact Apriori by priority)."""
    heap = [(-int(c), (int(i),)) for i, c in zip(ids, sup, strict=True) if c > 0]
    heapq.heapify(heap)
    popped: set[Key] = set()
    items: list[int] = []
    queued: set[Key] = set()
    while heap:
        neg, key = heapq.heappop(heap)
        yield -neg, key
        popped.add(key)
        if len(key) == 1:
            items.append(key[0])
        if len(key) >= s:
            continue
        new = admitted(key, items, popped, queued)
        queued.update(new)
        if new:
            for cand, c in zip(new, counts.supports(new), strict=True):
                if c > 0:
                    heapq.heappush(heap, (-int(c), cand))


def eps_for(rho_scan: Fraction) -> Fraction:
    """ε_t with ε_t²/2 <= rho_scan: a decimal rounded down (pure ε-DP is (ε²/2)-zCDP)."""
    from dpfim.accounting import decimal_down

    eps = decimal_down(Fraction(math.sqrt(2 * rho_scan)))
    while eps * eps / 2 > rho_scan:
        eps = decimal_down(eps * Fraction(999_999, 1_000_000))
    return eps


def smallest_count(eps_t: Fraction, cap: int) -> int:
    """The smallest threshold count the choice can certify at ε_t (§25.3): every k with
    u(k) <= -t together weighs at most (cap + 1) exp(-ε_t t / 2) <= 1 / TAIL against the best
    k (u = 0, or the cap's), so t >= 2 ln(TAIL (cap + 1)) / ε_t records, rounded up."""
    return math.ceil(2 * math.log(TAIL * (cap + 1)) / float(eps_t))


def threshold_count(n: int, min_support: Fraction | None, min_count: int | None) -> int:
    """t: ceil(θ n), or the given count (exact)."""
    if min_count is not None:
        return min_count
    assert min_support is not None
    return math.ceil(min_support * n)


def utilities(ranks: Iterator[int], t: int, cap: int) -> np.ndarray:
    """u(0..cap) from c_(1..cap+1) (exact integers, <= 0)."""
    c = np.fromiter(itertools.islice(ranks, cap + 1), dtype=np.int64, count=cap + 1)
    above = np.maximum(0, t - c[:cap])  # k = 1..cap: max(0, t - c_(k))
    below = np.maximum(0, c - t + 1)  # k = 0..cap: max(0, c_(k+1) - t + 1)
    return -(np.concatenate([[0], above]) + below)


def choose_k(ranks: Iterator[int], t: int, eps_t: Fraction, cap: int, rng: RandomSource) -> int:
    """K in 0..cap with probability proportional to exp(ε_t u(K) / 2) (§25.1), drawn exactly:
    the utilities shifted to >= 1 (the law is shift-invariant), a utility value by the exact
    exponential-mechanism sampler (weight exp(α c / 2) with α = ε_t), then a uniform k among
    the ranks of that value."""
    u = utilities(ranks, t, cap)
    scores = u - int(u.min()) + 1
    order = np.argsort(-scores, kind="stable")
    ranked = scores[order]
    value = select_count(ranked, len(ranked), eps_t, rng)
    return int(order[pick_member(ranked, value, rng)])
