"""The counting contract: what an engine gives the mechanisms, the views, naming and release.

Data flows one way, file -> records -> counts -> mechanism -> release. This module is the seam
between counting and the rest: engines (dpfim/engines/) implement `Counts`, mechanisms read
`RankedCounts` (a part of it), views (dpfim/views.py) and the release (dpfim/release.py) read
`Counts`. Engines and mechanisms import this module, never each other. No randomness and no
privacy here.

Invariants every implementation keeps (the contract suite, tests/test_contract.py, checks them
on every engine of the engine table):

1. **Top down, exact.** `counts` holds the support of EVERY itemset with support >= `threshold`
   and of no other, in decreasing order; every one of them is exact. `complete` once the
   threshold is 1: then all L nonzero-support itemsets are there and every further rank has
   support 0. `ensure(depth)` and `lower_to(s)` only ever lower the threshold.
   **Clipped** (the engine's public row budget ran out, docs/privacy.md §1.2): `complete` with
   `clipped_at` = t >= 1; the rows are exactly the itemsets with support > t, and every other
   itemset counts as t (the count function is max(c, t), t an order statistic of the data).
   Unclipped, `clipped_at` is 0. Mechanisms read "the count past the rows" as `clipped_at`.
2. **Rows are identities.** `itemsets[i]` is the itemset of `counts[i]`: item ids, padded with
   -1 to the row width when several sizes are ranked together. The same itemset always has the
   same row, whatever the threshold.
3. **Item ids are append-only and never change.** Id i names `items[i]`; `items` only grows
   (the open universe learns items as the threshold falls). With a declared vocabulary the ids
   are its positions from the start. So an id captured before a lowering still names the same
   item after it (peeling relies on this).
4. **One tie order on every engine.** Itemsets of equal support are ordered lexicographically
   by the position of their items' first appearance in the input (open universe) or in the
   declared vocabulary; within a row, items are in that order too. Seeded runs are therefore
   identical on every engine.
5. **Batch supports.** `supports(batch)` gives the exact support of each itemset of a batch in
   one go (one cluster job on Spark, not one per itemset); `support(ids)` is a batch of one.
   The support of the empty itemset is n.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import Protocol, runtime_checkable

import numpy as np

from dpfim.samplers.rng import RandomSource

Key = tuple[int, ...]

# The most rows an engine of one itemset size ever lists once clipped (its public row budget is
# at most this, docs/privacy.md §1.2): a code constant, so that choosing's threshold can bound
# how many itemsets one record can push out of the listed rows (§16) without reading any data.
MAX_LISTED = 1 << 25


class Unlisted(Protocol):
    """A declared universe's itemsets by identity, for report-noisy-max below its floor
    (release.DeclaredUniverse provides it): draw a uniform one not yet released, count one
    (its count as the mechanisms see it: max(c, clipped_at))."""

    def draw(self, rng: RandomSource) -> Key: ...

    def count(self, key: Key) -> int: ...


@runtime_checkable
class RankedCounts(Protocol):
    """What a mechanism reads: supports in decreasing order, known from the top down.

    `unlisted` is None unless the release handed the mechanism a declared universe by identity
    (then report-noisy-max may draw the itemsets below its floor instead of listing them)."""

    @property
    def counts(self) -> np.ndarray: ...

    @property
    def threshold(self) -> int: ...

    @property
    def complete(self) -> bool: ...

    @property
    def unlisted(self) -> Unlisted | None: ...

    @property
    def clipped_at(self) -> int:
        """Once complete: the count of every itemset past the rows (0 unless clipped)."""
        ...

    def ensure(self, depth: int) -> None: ...

    def lower_to(self, s: int) -> None: ...


@runtime_checkable
class Counts(RankedCounts, Protocol):
    """What an engine provides (one itemset size, or several merged): RankedCounts plus the
    identities of the rows, their names, n, and exact supports on demand."""

    @property
    def itemsets(self) -> np.ndarray: ...

    @property
    def items(self) -> Sequence[str]: ...

    @property
    def n(self) -> int: ...

    def support(self, ids: Sequence[int]) -> int: ...

    def supports(self, batch: Sequence[Sequence[int]]) -> list[int]: ...


class ItemIds:
    """An append-only table of item names: id i names `names[i]` for ever (invariant 3)."""

    def __init__(self, names: Iterable[str] = ()) -> None:
        self.names: list[str] = []
        self._ids: dict[str, int] = {}
        for name in names:
            self.id_of(name)

    def __len__(self) -> int:
        return len(self.names)

    def id_of(self, name: str) -> int:
        """The id of `name`, a new one (the next) if it has none yet."""
        found = self._ids.get(name)
        if found is None:
            found = self._ids[name] = len(self.names)
            self.names.append(name)
        return found


def tie_order(counts: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """The contract's order (invariant 4): decreasing count, ties lexicographic in `rows`,
    whose entries are first-appearance positions (or ids ordered like them)."""
    if not len(counts):
        return np.zeros(0, dtype=np.int64)
    return np.lexsort((*rows.T[::-1], -counts))


def record_weights(lengths: np.ndarray, scale: int) -> np.ndarray:
    """floor(scale / sqrt(n)) for each record length n >= 1, exactly (integer square roots):
    a record of n items then has squared weight sum n w^2 <= scale^2 (docs/privacy.md §23.2)."""
    top = int(lengths.max()) if len(lengths) else 0
    lut = np.zeros(top + 1, dtype=np.int64)
    for n in range(1, top + 1):
        lut[n] = math.isqrt(scale * scale // n)
    out: np.ndarray = lut[lengths]
    return out
