"""The lead a top itemset needs to be named with probability >= 0.9, per mechanism (issue 33).

A lone top: c(1) = c(2) + L over 20,000 itemsets, the rest flat (all 1000: a wall of ties) or a
slow decline (c(k) = 1000 - (k - 2) // 10). For each
mechanism, relation and eps of `evaluate`'s default grid (delta = 1e-6, r = 2) the smallest
L on a grid with P(top) >= 0.9 over TRIALS seeded runs of the mechanism itself (the counts are
handed to it directly; seeded, so NOT private, and reproducible).

    PYTHONPATH=. python benchmarks/default_lead.py [TRIALS [flat|decline]]
"""

from __future__ import annotations

import sys
from fractions import Fraction

import numpy as np

from dpfim.mechanisms import registry
from dpfim.mechanisms.base import Public
from dpfim.samplers.rng import seeded_source

DELTA = Fraction(1, 10**6)
GRID = (Fraction(1, 10), Fraction(1, 2), Fraction(1), Fraction(2))
SHAPES = {
    # a lone top over a wall of ties: no margin anywhere but at rank 1
    "flat": np.full(20_000, 1000, dtype=np.int64),
    # a lone top over a slow decline: margins open a little deeper
    "decline": np.array([1000 - k // 10 for k in range(20_000)], dtype=np.int64),
}
REST = SHAPES["flat"]


class _Counts:
    """Complete ranked counts (what a mechanism reads)."""

    def __init__(self, lead: int, rest: np.ndarray) -> None:
        self.counts = np.concatenate(([rest[0] + lead], rest))
        self.threshold, self.complete, self.unlisted, self.clipped_at = 1, True, None, 0

    def ensure(self, depth: int) -> None:
        pass

    def lower_to(self, s: int) -> None:
        pass


def p_top(name: str, neighbours: str, eps: Fraction, lead: int, trials: int, shape: str) -> float:
    spec = registry.get(name)
    p = Public(eps, DELTA, (2,), neighbours, max_record_items=64)
    counts = _Counts(lead, SHAPES[shape])
    hits = sum(spec.run(counts, p, seeded_source(seed)).index == 0 for seed in range(trials))
    return hits / trials


def lead_needed(name: str, neighbours: str, eps: Fraction, trials: int, shape: str) -> int:
    """The smallest lead on a doubling-then-bisecting search with P(top) >= 0.9."""
    lo, hi = 0, 1
    while p_top(name, neighbours, eps, hi, trials, shape) < 0.9:
        lo, hi = hi, hi * 2
    while hi - lo > max(1, hi // 100):
        mid = (lo + hi) // 2
        if p_top(name, neighbours, eps, mid, trials, shape) >= 0.9:
            hi = mid
        else:
            lo = mid
    return hi


def main(trials: int, shape: str) -> None:
    print(f"# P(top) >= 0.9, lone top, rest {shape}, r = 2, delta = 1e-6, {trials} trials")
    print("mechanism\tneighbours\t" + "\t".join(f"eps={e}" for e in GRID))
    for name, neighbours in (
        ("lmm", "replace"),
        ("lmm-floor", "replace"),
        ("lmm", "add-remove"),
        ("lmm-floor", "add-remove"),
    ):
        leads = [lead_needed(name, neighbours, eps, trials, shape) for eps in GRID]
        print(f"{name}\t{neighbours}\t" + "\t".join(str(x) for x in leads), flush=True)


if __name__ == "__main__":
    main(
        int(sys.argv[1]) if len(sys.argv) > 1 else 400, sys.argv[2] if len(sys.argv) > 2 else "flat"
    )
