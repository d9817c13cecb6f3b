"""The counting engine against brute force (hypothesis) and mlxtend's fpgrowth (real data)."""

from __future__ import annotations

import itertools
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpfim.engines.local import SupportIndex
from dpfim.readers import Records, from_transactions, read_records

SHARED = Path(__file__).resolve().parent.parent.parent / "shared" / "data"

transactions = st.lists(st.lists(st.sampled_from("abcdefgh"), max_size=7), max_size=40)


def brute_force(data: list[list[str]], r: int) -> Counter[tuple[str, ...]]:
    counts: Counter[tuple[str, ...]] = Counter()
    for t in data:
        counts.update(itertools.combinations(sorted(set(t)), r))
    return counts


def known(index: SupportIndex, records: Records) -> dict[tuple[str, ...], int]:
    return {
        tuple(sorted(records.items[i] for i in row)): int(c)
        for row, c in zip(index.itemsets, index.counts, strict=True)
    }


@settings(max_examples=150, deadline=None)
@given(data=transactions, r=st.integers(1, 5), depths=st.lists(st.integers(1, 60), max_size=4))
def test_every_itemset_above_the_threshold_and_nothing_else(
    data: list[list[str]], r: int, depths: list[int]
) -> None:
    records = from_transactions(data)
    truth = brute_force(data, r)
    index = SupportIndex(records, r)
    for depth in [*depths, 10**9]:
        index.ensure(depth)
        assert known(index, records) == {k: v for k, v in truth.items() if v >= index.threshold}
        assert (np.diff(index.counts) <= 0).all()
        assert len(index.counts) >= depth or index.complete
    assert index.complete and len(index.counts) == len(truth)


@settings(max_examples=60, deadline=None)
@given(data=transactions, itemset=st.sets(st.sampled_from("abcdefgh"), min_size=1, max_size=3))
def test_support_of_one_itemset(data: list[list[str]], itemset: set[str]) -> None:
    records = from_transactions(data, universe=list("abcdefgh"))
    ids = sorted(records.items.index(x) for x in itemset)
    want = sum(itemset <= set(t) for t in data)
    assert SupportIndex(records, 2).support(ids) == want


def test_threshold_only_lowers_as_far_as_asked() -> None:
    data = [["a", "b"]] * 50 + [["c", "d"]] * 20 + [["e", "f"]] * 3
    index = SupportIndex(from_transactions(data), 2)
    index.ensure(1)
    assert index.counts.tolist() == [50] and not index.complete
    index.ensure(2)
    assert index.counts.tolist()[:2] == [50, 20]


def test_sizes_outside_1_to_5_are_refused() -> None:
    with pytest.raises(ValueError):
        SupportIndex(from_transactions([["a"]]), 6)


def _shared(name: str) -> Path:
    path = SHARED / name
    if not path.exists():
        pytest.skip(f"{path} is absent (the shared benchmark data sets are not here)")
    return path


@pytest.mark.parametrize(
    ("name", "top", "second"),
    [
        ("retail.dat", (("39", "48"), 29142), 11414),
        ("mushroom.dat", (("85", "86"), 7924), 7914),
        ("T10I4D100K.dat", None, None),
        ("groceries.csv", (("other vegetables", "whole milk"), 736), 557),
    ],
)
def test_known_top_pairs(name: str, top: tuple[tuple[str, str], int] | None, second: int) -> None:
    records = read_records(_shared(name))
    index = SupportIndex(records, 2)
    index.ensure(2)
    if top is None:  # T10I4D100K: the README gives the supports only
        assert index.counts[:2].tolist() == [1336, 1194]
        return
    items, support = top
    assert tuple(sorted(records.items[i] for i in index.itemsets[0])) == items
    assert index.counts[:2].tolist() == [support, second]


def _mlxtend_supports(records: Records, r: int, s: int) -> dict[tuple[str, ...], int]:
    """The independent oracle: fpgrowth on the same records at min support s/n."""
    import pandas as pd
    from mlxtend.frequent_patterns import fpgrowth

    lists = [
        [records.items[i] for i in records.indices[records.indptr[k] : records.indptr[k + 1]]]
        for k in range(records.n)
    ]
    columns = sorted(records.items)
    pos = {c: j for j, c in enumerate(columns)}
    onehot = np.zeros((len(lists), len(columns)), dtype=bool)
    for k, t in enumerate(lists):
        onehot[k, [pos[x] for x in t]] = True
    frame = pd.DataFrame(onehot, columns=columns)
    # (s - 0.5)/n sits strictly between two attainable supports: no float boundary trouble.
    found = fpgrowth(frame, min_support=(s - 0.5) / len(lists), use_colnames=True, max_len=r)
    out = {}
    for sup, items in zip(found["support"], found["itemsets"], strict=True):
        if len(items) == r:
            out[tuple(sorted(items))] = round(sup * len(lists))
    return out


@pytest.mark.slow
@pytest.mark.parametrize(
    ("name", "r", "s"),
    [
        ("groceries.csv", 2, 40),
        ("groceries.csv", 3, 15),
        ("mushroom.dat", 2, 2000),
        ("mushroom.dat", 3, 3000),
    ],
)
def test_against_mlxtend_fpgrowth(name: str, r: int, s: int) -> None:
    records = read_records(_shared(name))
    index = SupportIndex(records, r)
    while index.threshold > s:
        index.ensure(len(index.counts) + 1)
    got = {k: v for k, v in known(index, records).items() if v >= s}
    want = _mlxtend_supports(records, r, s)
    assert len(want) > 10
    assert got == want


@pytest.mark.slow
def test_sample_data_against_mlxtend() -> None:
    path = Path(__file__).resolve().parent.parent / "sample_data" / "groceries_sample.csv"
    records = read_records(path)
    index = SupportIndex(records, 2)
    index.ensure(10**9)
    got = {k: v for k, v in known(index, records).items() if v >= 200}
    assert got == _mlxtend_supports(records, 2, 200)
