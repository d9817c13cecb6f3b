"""The local engine's partitioned level counting, and its row budget on the partitioned path.

Candidates cost time, never memory: when a level's distinct candidate keys outgrow the sparse
accumulator's budget, the level is recounted in P hash classes (dpfim/engines/local.py's
docstring). These tests force P >= 4 with a tiny budget and compare with brute force
(itertools.combinations over the records) and with the one-pass engine, key for key.
"""

from __future__ import annotations

import itertools
import random
from collections import Counter

import numpy as np
import pytest

from dpfim.engines.local import BYTES_PER_DISTINCT, SupportIndex
from dpfim.readers import Records, from_transactions

# 64 KiB of scratch: the pairs of 120 items (115 KB dense) go to the sparse accumulator, in
# passes of at most 1000 distinct keys: the thousands of candidates below need P >= 4
TINY = {"scratch_bytes": 1 << 16, "accumulator_bytes": 1000 * BYTES_PER_DISTINCT}


def _random_records(seed: int, n: int = 250, items: int = 120) -> tuple[Records, list[list[int]]]:
    rng = np.random.default_rng(seed)
    rows = [
        np.sort(rng.choice(items, int(rng.integers(0, 16)), replace=False)).tolist()
        for _ in range(n)
    ]
    lengths = [len(r) for r in rows]
    records = Records(
        [str(i) for i in range(items)],
        np.concatenate(([0], np.cumsum(lengths))).astype(np.int64),
        np.array([i for r in rows for i in r], dtype=np.int32),
    )
    return records, rows


def _brute(rows: list[list[int]], r: int) -> Counter[tuple[int, ...]]:
    want: Counter[tuple[int, ...]] = Counter()
    for row in rows:
        want.update(itertools.combinations(row, r))
    return want


def _held(index: SupportIndex) -> dict[tuple[int, ...], int]:
    return dict(zip(map(tuple, index.itemsets.tolist()), index.counts.tolist(), strict=True))


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("r", [2, 3])
def test_partitioned_passes_count_exactly(seed: int, r: int) -> None:
    records, rows = _random_records(seed)
    want = _brute(rows, r)
    tiny = SupportIndex(records, r, **TINY)
    one = SupportIndex(records, r)
    for s in (12, 6, 3, 1):
        tiny.lower_to(s)
        one.lower_to(s)
        assert tiny.partitions >= 4 and tiny.passes > one.passes  # more than one pass, really
        assert one.partitions == 1
        assert _held(tiny) == {k: v for k, v in want.items() if v >= s}
        assert np.array_equal(tiny.counts, one.counts)
        assert np.array_equal(tiny.itemsets, one.itemsets)


def test_a_budget_of_one_key_still_counts_exactly() -> None:
    """The smallest budget: every class ends with at most one distinct key."""
    data = [list("abcdef"), list("abc"), list("cdef"), list("aef")]
    records = from_transactions(data)
    index = SupportIndex(records, 2, scratch_bytes=1, accumulator_bytes=1)
    index.lower_to(1)
    assert index.partitions >= 8
    want = _brute([sorted(records.items.index(x) for x in t) for t in data], 2)
    assert _held(index) == dict(want)


def _issue_23_records(long: bool) -> Records:
    """tests/test_privacy_boundaries.py's memory boundary pair: 374 records of 40 items from
    1..2999, plus the line `1` (D) or one record of 64 such items (D2, which exited 6)."""
    rnd = random.Random(5)
    lines = [rnd.sample(range(1, 3000), 40) for _ in range(374)]
    last = rnd.sample(range(1, 3000), 64) if long else [1]
    return from_transactions([[str(x) for x in line] for line in [*lines, last]])


@pytest.mark.parametrize("long", [False, True])
def test_issue_23_boundary_pair_counts_exactly_at_16_mib(long: bool) -> None:
    """Counted down to threshold 1 at 16 MiB, both used to stop with ResourceError (~280,000
    distinct pairs outgrow the room; through the CLI only D2's search got that far, so D2 exited
    6 and D did not); now both count every pair exactly, in more passes."""
    records = _issue_23_records(long)
    index = SupportIndex(records, 2, max_memory=16 << 20, rows=10**9)  # no row budget here
    index.lower_to(1)
    assert index.complete and index.partitions >= 2
    ids = {item: i for i, item in enumerate(records.items)}
    rnd = random.Random(5)
    lines = [rnd.sample(range(1, 3000), 40) for _ in range(374)]
    lines.append(rnd.sample(range(1, 3000), 64) if long else [1])
    want = _brute([sorted(ids[str(x)] for x in line) for line in lines], 2)
    assert _held(index) == dict(want)


@pytest.mark.parametrize("seed", [0, 3])
@pytest.mark.parametrize("r", [2, 3])
@pytest.mark.parametrize("budget", [7, 60, 400])
def test_the_row_budget_on_the_partitioned_path_is_max_of_c_and_the_floor(
    seed: int, r: int, budget: int
) -> None:
    """The running floor (raised as hash classes finish) ends at the level's (N + 1)-th largest
    support, whatever order the classes come in: the same max(c, T) as brute force and as the
    one-pass engine with the same budget."""
    records, rows = _random_records(seed)
    t = 0
    for k in range(2, r + 1):
        values = sorted(_brute(rows, k).values(), reverse=True)
        if len(values) > budget:
            t = max(t, values[budget])
    want = {key: v for key, v in _brute(rows, r).items() if v > t}
    tiny = SupportIndex(records, r, rows=budget, **TINY)
    one = SupportIndex(records, r, rows=budget)
    for index in (tiny, one):
        index.lower_to(1)
        assert index.clipped_at == t and index.complete
        assert _held(index) == want
    assert tiny.partitions >= 2
