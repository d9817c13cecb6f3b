"""P(top) of the lmm-tight design options on the hard cells of the shared data (NOT PRIVATE).

    python benchmarks/tight_options_ptop.py [DATA_DIR] [TRIALS]

Runs, on exact counts, the two implemented shapes of docs/lmm-tight-design.md:
O5 (certified grid: the search certifies c(1) - c(l+1) >= gamma_l with a union bound over the
grid, then the restricted exponential mechanism; at l = 1 the top itemset) and O7 (lmm-tight as
shipped: the search only chooses l, the thresholded selection's "none" absorbs the instability)
with kappa = (0, 0) and as shipped, next to lmm-gap and limited-domain (k = 10). The cells are those
where lmm-gap or lmm-tight's first versions lost to limited-domain. delta = 1e-6, add/remove,
seed 7.
"""

from __future__ import annotations

import functools
import math
import sys
from collections.abc import Callable
from fractions import Fraction
from typing import Any

import tight_margins as tm

from dpfim.engines.local import SupportIndex
from dpfim.mechanisms import baselines, lmm_gap
from dpfim.mechanisms import lmm_tight as lt
from dpfim.mechanisms.base import Outcome, count_at, count_below
from dpfim.mechanisms.selection import pick_member, select_count
from dpfim.mechanisms.thresholds import gap_split
from dpfim.readers import read_records, resolve_format
from dpfim.samplers.laplace import discrete_laplace
from dpfim.samplers.rng import RandomSource, seeded_source

DELTA = Fraction(1, 10**6)
CELLS = [
    ("groceries.csv", 2, "0.1"),
    ("groceries.csv", 3, "0.5"),
    ("groceries.csv", 3, "1"),
    ("groceries.csv", 3, "2"),
    ("mushroom.dat", 2, "0.1"),
    ("mushroom.dat", 2, "0.5"),
    ("mushroom.dat", 2, "1"),
    ("T10I4D100K.dat", 2, "0.1"),
    ("T10I4D100K.dat", 3, "0.1"),
    ("BMS-WebView-2.dat", 2, "0.1"),
    ("BMS-WebView-2.dat", 3, "0.1"),
]


@functools.cache
def _o5_thresholds(eps: Fraction) -> tuple[Fraction, Fraction, list[int]]:
    """O5 at its optimised shares (0.3, 0.3; delta 0.25 / 1/3 / rest): e1, alpha, T_j."""
    e1, e2 = Fraction(3, 10) * eps, Fraction(3, 10) * eps
    aa = eps - e1 - e2
    d0, dg = DELTA / 4, DELTA / 3
    beta = float(DELTA - d0 - dg)
    ts = [tm._smallest_s(functools.partial(tm.tail_offset, e1, prec=tm.PREC), d0)]
    for j in range(1, 41):
        tail = functools.partial(tm.tail_difference, e1, e2, prec=tm.PREC)
        gamma = math.ceil(tm._gamma_ar(1 << j, float(aa), beta))
        ts.append(tm._smallest_s(tail, dg / (j * (j + 1))) + gamma - 2)
    return e1, aa, ts


def run_o5(idx: SupportIndex, eps: Fraction, rng: RandomSource) -> Outcome:
    e1, aa, ts = _o5_thresholds(eps)
    c1 = count_at(idx, 1)
    g = discrete_laplace(1 / e1, rng)
    for j, rank in enumerate(lt.grid(2**40)):
        nu = 0 if j == 0 else discrete_laplace(1 / (Fraction(3, 10) * eps), rng)
        if count_below(idx, rank + 1, c1 + nu - g - ts[j]):
            idx.ensure(rank + 1)
            c = select_count(idx.counts, rank, 2 * aa, rng)
            return Outcome(None, rank, None if c == 0 else pick_member(idx.counts, c, rng))
    return Outcome(None, None, None)


def runners() -> dict[str, Callable[[SupportIndex, Fraction, RandomSource], Outcome]]:
    return {
        "lmm-gap": lambda i, e, r: lmm_gap.run(i, gap_split(e, DELTA), r),
        "limited-domain": lambda i, e, r: baselines.run_limited_domain(i, e, DELTA, 10, r),
        "O5 certified grid": run_o5,
        "O7 kappa=(0, 0)": lambda i, e, r: lt.run_split(
            i, lt.default_split(e, DELTA), r, kappa=(0, 0)
        ),
        "O7 lmm-tight (as shipped)": lambda i, e, r: lt.run(i, e, DELTA, r),
    }


def main() -> None:
    data = sys.argv[1] if len(sys.argv) > 1 else "../shared/data"
    trials = int(sys.argv[2]) if len(sys.argv) > 2 else 100
    cache: dict[tuple[str, int], Any] = {}
    names = list(runners())
    print("| data, r, eps | " + " | ".join(names) + " |")
    print("|---|" + "---|" * len(names))
    for ds, r, eps in CELLS:
        if (ds, r) not in cache:
            path = f"{data}/{ds}"
            fmt = resolve_format(path, "auto", long_columns_given=False)
            cache[(ds, r)] = SupportIndex(read_records(path, fmt=fmt), r)
        idx = cache[(ds, r)]
        idx.ensure(2)
        row = []
        for run in runners().values():
            rng = seeded_source(7)
            top = 0
            for _ in range(trials):
                o = run(idx, Fraction(eps), rng)
                top += o.index is not None and idx.counts[o.index] == idx.counts[0]
            row.append(f"{top / trials:.2f}")
        print(f"| {ds.split('.')[0]}, {r}, {eps} | " + " | ".join(row) + " |", flush=True)


if __name__ == "__main__":
    main()
