"""levelwise's lattice (dpfim/mechanisms/levelwise.py): what each round may choose from.

The privacy argument needs the domain of round t to be a function of the kept (or declared)
items and of the earlier outputs only: the items not yet released, and every X of size 2..s not
yet released whose (|X| - 1)-subsets have all been released. These tests check that the Lattice
offers exactly that set (nothing more: the released set stays downward closed; nothing less: a
candidate left out would be a data-free mistake of utility, or, if the rule looked at the data,
of privacy), that a run never releases an itemset twice, that zero-count itemsets of a declared
vocabulary are candidates like any other, and that --sizes must start at 1. Quick: no
statistics (the privacy audit is tests/audit/test_audit_levelwise.py).
"""

from __future__ import annotations

import itertools
import math
import random
from fractions import Fraction

import numpy as np
import pytest

from dpfim.engines.local import count_records
from dpfim.errors import ParameterError
from dpfim.mechanisms import levelwise as lw
from dpfim.mechanisms.base import Public
from dpfim.readers.frames import from_baskets
from dpfim.samplers.rng import resolve

Key = tuple[int, ...]


def generated(n: int = 150, n_items: int = 10, seed: int = 7) -> list[list[str]]:
    """Baskets of 1..5 items, item k drawn with weight 1/(k+1) (a few frequent, a long tail),
    with correlated pairs: i0 and i1 often together."""
    rnd = random.Random(seed)
    names = [f"i{k}" for k in range(n_items)]
    weights = [1 / (k + 1) for k in range(n_items)]
    out = []
    for _ in range(n):
        basket = set(rnd.choices(names, weights, k=rnd.randint(1, 5)))
        if "i0" in basket and rnd.random() < 0.6:
            basket.add("i1")
        out.append(sorted(basket))
    return out


def support(baskets: list[list[str]], names: tuple[str, ...]) -> int:
    return sum(1 for b in baskets if set(names) <= set(b))


def admissible(released: set[Key], items: list[int], s: int) -> set[Key]:
    """By brute force: the itemsets over `items` of sizes 1..s, not released, whose
    (|X| - 1)-subsets are all released (items: no condition)."""
    out: set[Key] = set()
    for r in range(1, s + 1):
        for x in itertools.combinations(sorted(items), r):
            if x in released:
                continue
            if r == 1 or all(x[:j] + x[j + 1 :] in released for j in range(r)):
                out.add(x)
    return out


def inadmissible(lattice: lw.Lattice) -> list[Key]:
    """The offered itemsets of size >= 2 with a (|X| - 1)-subset not released, or released."""
    keys, _ = lattice.domain()
    return [
        x
        for x in keys
        if x in lattice.released
        or (len(x) > 1 and not all(x[:j] + x[j + 1 :] in lattice.released for j in range(len(x))))
    ]


def public(
    sizes: tuple[int, ...], vocabulary: int | None = None, eps: str = "3", cap: int = 5
) -> Public:
    universe = None if vocabulary is None else sum(math.comb(vocabulary, r) for r in sizes)
    return Public(
        Fraction(eps),
        Fraction(1, 20),
        sizes,
        "add-remove",
        max_record_items=cap,
        universe_size=universe,
    )


@pytest.mark.parametrize("subset", [None, (0, 1, 3, 4, 7)], ids=["all items", "kept items"])
def test_the_lattice_offers_exactly_the_itemsets_whose_subsets_are_released(
    subset: tuple[int, ...] | None,
) -> None:
    baskets = generated()
    records = from_baskets(baskets)
    counts = count_records(records, (1, 2, 3)).counts
    ids, sup = lw.item_supports(counts, None)
    if subset is not None:  # the open universe's kept items: a subset
        keep = np.isin(ids, subset)
        ids, sup = ids[keep], sup[keep]
    items = [int(i) for i in ids]
    lattice = lw.Lattice(counts, ids, sup, 3)
    rnd = random.Random(11)
    order = []
    while True:
        keys, scores = lattice.domain()
        assert len(set(keys)) == len(keys)
        assert set(keys) == admissible(lattice.released, items, 3)
        assert inadmissible(lattice) == []
        for x, c in zip(keys, scores.tolist(), strict=True):  # exact supports
            assert c == support(baskets, tuple(records.items[i] for i in x)), x
        if not keys:
            break
        key = keys[rnd.randrange(len(keys))]
        assert lattice.release(key) == support(baskets, tuple(records.items[i] for i in key))
        order.append(key)
    # every itemset of sizes 1..3 over the items was offered once and released once
    n = len(items)
    assert len(order) == len(set(order)) == n + n * (n - 1) // 2 + n * (n - 1) * (n - 2) // 6
    assert lattice.released == set(order)


def test_the_closure_check_flags_an_itemset_with_an_unreleased_subset() -> None:
    """The check above has teeth: a lattice offering {0, 1} before {1} is released fails it
    (such a lattice would still be private -- its domain is data-free -- but not levelwise)."""
    records = from_baskets([["a", "b"], ["a"], ["b", "c"]])
    counts = count_records(records, (1, 2)).counts
    ids, sup = lw.item_supports(counts, None)
    lattice = lw.Lattice(counts, ids, sup, 2)
    lattice.release((0,))
    assert inadmissible(lattice) == []
    lattice.sets[(0, 1)] = 1
    assert inadmissible(lattice) == [(0, 1)]


@pytest.mark.parametrize("declared", [False, True], ids=["open universe", "declared vocabulary"])
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_a_run_keeps_the_released_set_downward_closed(declared: bool, seed: int) -> None:
    baskets = generated(seed=seed)
    names = sorted({i for b in baskets for i in b})
    records = from_baskets(baskets, universe=names if declared else None)
    counts = count_records(records, (1, 2, 3)).counts
    p = public((1, 2, 3), len(names) if declared else None)
    rng, _ = resolve(seed)
    picks, end, _ = lw.run_top(counts, p, 25, rng)
    assert end is None and len(picks) == 25  # the domain never ran out here
    keys = [k for k, _, _ in picks]
    assert len(set(keys)) == len(keys)
    for t, (key, count, _) in enumerate(picks):
        assert list(key) == sorted(key) and 1 <= len(key) <= 3
        assert count == support(baskets, tuple(records.items[i] for i in key))
        if len(key) > 1:  # every (|X| - 1)-subset was released in an earlier round
            assert all(key[:j] + key[j + 1 :] in keys[:t] for j in range(len(key))), picks


def test_sizes_must_run_from_one() -> None:
    for sizes in [(2, 3), (2,), (1, 3), (3,)]:
        with pytest.raises(ParameterError, match="sizes 1-"):
            lw.check(public(sizes))
    for sizes in [(1,), (1, 2), (1, 2, 3)]:
        lw.check(public(sizes))


@pytest.mark.parametrize("declared", [False, True], ids=["open universe", "declared vocabulary"])
def test_a_run_never_releases_an_itemset_twice(declared: bool) -> None:
    """K beyond the whole lattice: every itemset of sizes 1..2 over the items, once, then the
    run ends (the domain ran out)."""
    baskets = [["a"]] * 30 + [["b"]] * 25 + [["a", "b"]] * 20 + [["c"]] * 25 + [["a", "c"]] * 5
    records = from_baskets(baskets, universe=["a", "b", "c", "d"] if declared else None)
    counts = count_records(records, (1, 2)).counts
    p = public((1, 2), 4 if declared else None, eps="8", cap=2)
    for seed in range(5):
        rng, _ = resolve(seed)
        picks, end, _ = lw.run_top(counts, p, 50, rng)
        keys = [k for k, _, _ in picks]
        assert len(keys) == len(set(keys))
        assert end is not None  # ended early: nothing left to release
        n = 4 if declared else 3  # open: a, b, c all far above T; d is not in the data
        assert len(keys) == n + n * (n - 1) // 2
        every = [x for r in (1, 2) for x in itertools.combinations(range(n), r)]
        assert set(keys) == set(every)


def test_a_declared_vocabulary_releases_zero_count_items() -> None:
    """Zero-count items (and itemsets over them) are in the domain of a declared vocabulary:
    public candidates, chosen with weight exp(0) = 1. In the open universe they do not exist."""
    baskets = [["a"]] * 3 + [["b"]] * 2 + [["a", "b"]]
    vocabulary = ["a", "b", "q", "r"]
    records = from_baskets(baskets, universe=vocabulary)
    counts = count_records(records, (1, 2)).counts
    ids, sup = lw.item_supports(counts, len(counts.items))
    assert ids.tolist() == [0, 1, 2, 3] and sup.tolist() == [4, 3, 0, 0]
    p = public((1, 2), 4, eps="1")
    zero_first = 0
    released_zero: set[tuple[str, ...]] = set()
    for seed in range(200):
        rng, _ = resolve(seed)
        picks, _, _ = lw.run_top(counts, p, 3, rng)
        named = [(tuple(records.items[i] for i in key), c) for key, c, _ in picks]
        for names, c in named:
            if c == 0:
                released_zero.add(names)
                assert support(baskets, names) == 0
        zero_first += named[0][1] == 0
    assert ("q",) in released_zero and ("r",) in released_zero
    assert zero_first > 0  # a zero-count item won the first round in some runs
    assert any(len(x) == 2 for x in released_zero)  # and a zero-count pair a later one
    # open universe: the items of support 0 are no candidates at all
    open_counts = count_records(from_baskets(baskets), (1, 2)).counts
    ids, sup = lw.item_supports(open_counts, None)
    assert sup.tolist() == [4, 3] and 0 not in sup
