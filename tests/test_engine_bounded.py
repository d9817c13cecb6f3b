"""The local engine's bounded counting: exact in tiny slices, bounded scratch, a clear error.

Exactness is checked against brute force (hypothesis, and the shared data sets), with the
engine forced into its smallest slices and its sparse accumulator (scratch_bytes tiny), so that
records, and one record's candidates, are split across slices.
"""

from __future__ import annotations

import itertools
import json
import tracemalloc
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from cli_run import run
from hypothesis import given, settings
from hypothesis import strategies as st
from test_engine_local import brute_force, known

from dpfim.api import mine
from dpfim.cli import main
from dpfim.engines.local import SupportIndex, default_max_memory
from dpfim.errors import ParameterError
from dpfim.params import check_memory
from dpfim.readers import Records, from_transactions, read_records

SHARED = Path(__file__).resolve().parent.parent.parent / "shared" / "data"

# Long records over a small alphabet: many candidates per record, ties, empty records.
records_strategy = st.lists(st.lists(st.sampled_from("abcdefghij"), max_size=10), max_size=30)


@settings(max_examples=120, deadline=None)
@given(
    data=records_strategy,
    r=st.integers(1, 5),
    scratch=st.sampled_from([1, 200, 3000, None]),
    depths=st.lists(st.integers(1, 80), max_size=3),
    budget=st.sampled_from([1, 48 * 20, None]),
)
def test_tiny_slices_count_exactly(
    data: list[list[str]], r: int, scratch: int | None, depths: list[int], budget: int | None
) -> None:
    """budget: the sparse accumulator's, in bytes; 1 (one key a pass) and 20 keys force the
    hash-class passes whenever the accumulator is sparse."""
    records = from_transactions(data)
    truth = brute_force(data, r)
    index = SupportIndex(records, r, scratch_bytes=scratch, accumulator_bytes=budget)
    for depth in [*depths, 10**9]:
        index.ensure(depth)
        assert known(index, records) == {k: v for k, v in truth.items() if v >= index.threshold}
        assert (np.diff(index.counts) <= 0).all()
    assert index.complete and len(index.counts) == len(truth)


@settings(max_examples=120, deadline=None)
@given(data=records_strategy, r=st.integers(1, 5), depths=st.lists(st.integers(1, 80), max_size=3))
@pytest.mark.slow
def test_compiled_kernels_count_exactly(data: list[list[str]], r: int, depths: list[int]) -> None:
    pytest.importorskip("numba")
    records = from_transactions(data)
    truth = brute_force(data, r)
    index = SupportIndex(records, r, compiled=True)
    assert index._kernels is not None
    for depth in [*depths, 10**9]:
        index.ensure(depth)
        assert known(index, records) == {k: v for k, v in truth.items() if v >= index.threshold}
    assert index.complete and len(index.counts) == len(truth)


def test_compiled_projection_matches_numpy() -> None:
    """A projection cache built by the kernel and by numpy gives the same counts at every depth."""
    pytest.importorskip("numba")
    rng = np.random.default_rng(11)
    data = []
    for _ in range(3000):  # five popular items, and rare ones: the popular ones are projected
        popular = [f"p{i}" for i in range(5) if rng.random() < 0.5]
        data.append(popular + [f"r{x}" for x in rng.choice(500, rng.integers(0, 9))])
    records = from_transactions(data)
    a = SupportIndex(records, 3, compiled=True)
    b = SupportIndex(records, 3, compiled=False)
    for depth in (1, 10, 100, 10**9):
        a.ensure(depth)
        b.ensure(depth)
        assert np.array_equal(a.counts, b.counts) and np.array_equal(a.itemsets, b.itemsets)
        if depth == 1:
            assert a._proj is not None and b._proj is not None
            assert np.array_equal(a._proj.indices, b._proj.indices)
    assert a.complete


@settings(max_examples=40, deadline=None)
@given(data=records_strategy, itemset=st.sets(st.sampled_from("abcdefghij"), max_size=4))
def test_support_in_tiny_slices(data: list[list[str]], itemset: set[str]) -> None:
    records = from_transactions(data, universe=list("abcdefghij"))
    ids = sorted(records.items.index(x) for x in itemset)
    want = sum(itemset <= set(t) for t in data)
    assert SupportIndex(records, 2, scratch_bytes=1).support(ids) == want


def _shared(name: str) -> Records:
    path = SHARED / name
    if not path.exists():
        pytest.skip(f"{path} is absent (the shared benchmark data sets are not here)")
    return read_records(path)


def _brute(records: Records, r: int, s: int) -> dict[tuple[str, ...], int]:
    """Every r-itemset with support >= s, by Apriori in plain Python (independent of numpy)."""
    rows = [
        records.indices[records.indptr[k] : records.indptr[k + 1]].tolist()
        for k in range(records.n)
    ]
    item_support = Counter(i for row in rows for i in row)
    frequent = {i for i, c in item_support.items() if c >= s}
    counts: Counter[tuple[int, ...]] = Counter()
    for row in rows:
        kept = [i for i in row if i in frequent]
        counts.update(itertools.combinations(kept, r))
    return {tuple(sorted(records.items[i] for i in key)): c for key, c in counts.items() if c >= s}


@pytest.mark.slow
@pytest.mark.parametrize(
    ("name", "r", "depth"),
    [
        ("retail.dat", 1, 200),
        ("retail.dat", 2, 300),
        ("retail.dat", 3, 20),
        ("T10I4D100K.dat", 2, 20),
        ("BMS-WebView-2.dat", 3, 20),
        ("groceries.csv", 3, 10**9),
    ],
)
def test_shared_data_against_brute_force(name: str, r: int, depth: int) -> None:
    records = _shared(name)
    fast = SupportIndex(records, r)
    small = SupportIndex(records, r, scratch_bytes=1 << 16)
    for d in (1, depth // 4, depth):
        fast.ensure(d)
        small.ensure(d)
        assert fast.threshold == small.threshold
        assert np.array_equal(fast.counts, small.counts)
        assert np.array_equal(fast.itemsets, small.itemsets)
    assert known(fast, records) == _brute(records, r, fast.threshold)


def _huge(n_items: int = 1_000_000, copies: int = 300) -> Records:
    """One record with n_items distinct items, and `copies` records {a, b}: the top pair."""
    big = Records(
        ["a", "b", *(f"x{i}" for i in range(n_items))],
        np.array([0, n_items + 2], dtype=np.int64),
        np.arange(n_items + 2, dtype=np.int32),
    )
    pairs = np.tile(np.array([0, 1], dtype=np.int32), copies)
    indptr = np.concatenate((big.indptr, n_items + 2 + 2 * np.arange(1, copies + 1)))
    return Records(big.items, indptr.astype(np.int64), np.concatenate((big.indices, pairs)))


def test_a_record_of_a_million_items() -> None:
    """Its pairs used to stop the count with ResourceError (5e11 distinct candidate keys at
    threshold 1: whether a result existed was decided by one record, docs/privacy.md §1.1).
    Candidates now cost time, not memory: counting them all would take hours (the default
    record-length cap, 64 items, is what bounds that). Above threshold 1 the item supports
    prune them: only a and b are frequent."""
    records = _huge()
    singles = SupportIndex(records, 1, max_memory=64 << 20)
    singles.ensure(3)
    # a million items of support 1 exceed the row budget (16 MiB / 80 bytes = 209,715 rows):
    # clipped at T = 1, the two items above it are the rows (docs/privacy.md §1.2)
    assert singles.counts.tolist() == [301, 301] and singles.clipped_at == 1
    pairs = SupportIndex(records, 2, max_memory=64 << 20)
    pairs.ensure(1)  # pruned by item supports: only a and b are frequent
    assert pairs.counts.tolist() == [301] and pairs.threshold > 1


def test_a_long_record_is_counted_exactly_in_passes() -> None:
    """Where the old accumulator refused (ResourceError, --max-record-items named), the level
    is now counted exactly in several hash-class passes: one record of 1,500 items has
    1.1 M pairs of support 1 (~54 MB of accumulator at 48 bytes a key) at --max-memory 32M."""
    records = _huge(n_items=1500)
    pairs = SupportIndex(records, 2, max_memory=32 << 20, rows=10**9)  # no row budget here
    pairs.lower_to(1)
    assert pairs.partitions >= 4
    n = 1502
    assert len(pairs.counts) == n * (n - 1) // 2
    assert pairs.counts[0] == 301 and pairs.itemsets[0].tolist() == [0, 1]
    assert (pairs.counts[1:] == 1).all()
    keys = pairs.itemsets[:, 0].astype(np.int64) * n + pairs.itemsets[:, 1]
    assert (pairs.itemsets[:, 0] < pairs.itemsets[:, 1]).all() and len(np.unique(keys)) == len(keys)


def test_scratch_stays_bounded_on_long_records() -> None:
    """40 records of 250 items: 1.2 M pair occurrences (10 MB as int64 keys at once), counted
    in slices of a 256 KiB scratch; tracemalloc sees numpy's allocations."""
    rng = np.random.default_rng(5)
    rows = [np.sort(rng.choice(280, 250, replace=False)).astype(np.int32) for _ in range(40)]
    records = Records(
        [str(i) for i in range(280)],
        np.arange(0, 250 * 41, 250, dtype=np.int64),
        np.concatenate(rows),
    )
    index = SupportIndex(records, 2, scratch_bytes=1 << 18)
    tracemalloc.start()
    try:
        index.ensure(10**9)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    want: Counter[tuple[int, ...]] = Counter()
    for row in rows:
        want.update(itertools.combinations(row.tolist(), 2))
    got = dict(zip(map(tuple, index.itemsets.tolist()), index.counts.tolist(), strict=True))
    assert index.complete and got == want
    # the result (~39k itemsets, ~1.5 MB with its sort) plus a few scratch slices, not 10 MB
    assert peak < 6 << 20  # the default 256 MiB scratch peaks at ~51 MB here


def test_a_long_record_no_longer_stops_the_cli(tmp_path: Path) -> None:
    """A 3,000-item record (4.5 M pairs of support 1, ~216 MB of accumulator) at --max-memory
    64M used to exit 6 ("never approximates", --max-record-items named) with
    --max-record-items none: the level is now counted exactly, in several passes, and the
    run succeeds (its time, not its existence, depends on the record). The old 200,000-item
    record (2e10 pairs) would now count for hours: bounding that is the record-length cap's
    job (on by default), not the accumulator's."""
    path = tmp_path / "huge.dat"
    big = " ".join(str(i) for i in range(3, 3_003))
    path.write_text(big + "\n" + "1 2\n" * 1000)
    args = ["mine", str(path), "--eps", "1", "--delta", "1e-6", "--max-memory", "64M"]
    code, out, err = run([*args, "--max-record-items", "none", "-q"])
    assert code == 0, err
    assert json.loads(out)["itemset"] == ["1", "2"]
    for cap in (["--max-record-items", "100"], []):  # the default cap (64) too
        code, out, err = run([*args, *cap])
        assert code == 0
        assert json.loads(out)["itemset"] == ["1", "2"]


@pytest.mark.parametrize(
    ("text", "want"),
    [("2G", 2 << 30), ("512M", 512 << 20), ("1.5GiB", 3 << 29), ("64mb", 64 << 20)],
)
def test_memory_sizes(text: str, want: int) -> None:
    assert check_memory(text) == want


@pytest.mark.parametrize("text", ["", "lots", "1k", "-2G", "nanG", "0"])
def test_bad_memory_sizes(text: str) -> None:
    with pytest.raises(ParameterError, match="--max-memory"):
        check_memory(text)


def test_bad_max_memory_is_a_usage_error(tmp_path: Path) -> None:
    path = tmp_path / "b.csv"
    path.write_text("a,b\n")
    code, _, err = run(["mine", str(path), "--eps", "1", "--delta", "1e-6", "--max-memory", "x"])
    assert code == 2 and "--max-memory" in err


def test_default_budget_is_a_safe_fraction() -> None:
    assert 16 << 20 <= default_max_memory() <= 8 << 30


def test_api_takes_max_memory() -> None:
    data = [["a", "b"]] * 900 + [["a", "c"]] * 100
    result = mine(data, eps="1", delta="1e-6", rng=3, max_memory="256M")
    assert result["itemset"] == ["a", "b"]
    assert main is not None


@pytest.mark.parametrize("sizes", ["2", "1-3"])
def test_several_sizes_share_one_memory_budget(sizes: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """--sizes runs one engine per size at once over the same records: together they get
    --max-memory (the records counted once), not one budget each."""
    import dpfim.api

    budgets: list[int] = []
    data_bytes: list[int] = []

    class Recording(SupportIndex):
        def __init__(self, records: Records, size: int, **kw: Any) -> None:
            super().__init__(records, size, **kw)
            budgets.append(self.max_memory)
            data_bytes.append(records.indptr.nbytes + records.indices.nbytes)

    import dpfim.engines.local

    monkeypatch.setattr(dpfim.engines.local, "SupportIndex", Recording)
    data = [["a", "b", "c"]] * 900 + [["a", "c"]] * 100
    mine(data, sizes=sizes, top=2, eps="1", delta="1e-6", rng=3, max_memory="64M")
    assert len(budgets) == len(dpfim.api.parse_sizes(sizes))
    held = data_bytes[0]
    assert held + sum(b - held for b in budgets) <= 64 << 20
    assert min(budgets) >= (64 << 20) // len(budgets)


@settings(max_examples=100, deadline=None)
@given(
    lengths=st.lists(st.integers(0, 40), max_size=8),
    limit=st.integers(1, 50),
    data=st.data(),
)
def test_partner_slices(lengths: list[int], limit: int, data: st.DataObject) -> None:
    """Every (occurrence, later position in its record) pair exactly once, in slices of at most
    `limit`, even when one occurrence has more partners than a slice holds."""
    from dpfim.engines.local import _partners

    ends = np.repeat(np.cumsum(lengths), lengths).astype(np.int64)
    total = int(sum(lengths))
    pos = np.array(
        sorted(data.draw(st.sets(st.integers(0, max(total - 1, 0)), max_size=total))),
        dtype=np.int64,
    )[:total]
    want = [(i, q) for i, p in enumerate(pos.tolist()) for q in range(p + 1, int(ends[p]))]
    got: list[tuple[int, int]] = []
    for parent, partner in _partners(pos, ends, limit):
        assert len(parent) <= limit
        got.extend(zip(parent.tolist(), partner.tolist(), strict=True))
    assert got == want
