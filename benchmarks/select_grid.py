"""Exact P(top) of every registered mechanism on a grid of count-profile shapes (NOT PRIVATE).

    python benchmarks/select_grid.py [--eps 0.1,0.5,1,2] [--r 1,2,3] [--csv FILE] [--lone]

An evaluation tool (issue 24): it builds count profiles, never reads data, and prints exact
functions of them. "P(top)": the probability that the mechanism names an itemset whose support
is c(1). delta = 1e-6, add/remove neighbours, open universe for the mechanisms that run there;
em, noisy-max-laplace and permute-and-flip get the profile's own vocabulary (K = C(V, r)
r-itemsets, zero counts included); choosing gets B = 64 items a record (k = C(64, r), dpfim's
default record cap).

Shapes (`profiles`):
* lone-g: one itemset of count 1 + g (a lead of g) over a background of 200 r count-1 itemsets,
  g in {10, 15, 20, 25, 30, 40, 60}; vocabulary V = 1000 items.
* near-k: n = 3196 records; the top within 1 % of n: c(1), c(2), c(3) = 3184, 3180, 3170 (the
  issue's dense data set), ranks 4..k evenly from 3165 down to 3110, then the gap: c(k+1) = 3098
  (c(1) - 86), and a tail falling by 2 a rank for 1000 ranks. k in {2, 5, 10, 50} (k = 2: only the
  top two before the gap, c(3) = 3098); near-10 is the issue's data set (c(11) = 3098). V = 120.
* tied-t: t itemsets at 1000, 200 at 50, a background of 200 r at 1 (benchmarks/make_tied_top.py's
  shape with a background); t in {2, 5, 20}. V = 2t + 400.
* wall: n = 1000 records; 4 items in every record, 20 items i = 1..20 each missing from i records
  (disjoint), 100 items each in 5 records of their own; c(S) = n - sum of the i in S for S of the
  first two kinds, 5 for S with one item of the third, 0 otherwise. V = 124 (the data's own).

Exact laws: lmm-tight and limited-domain as benchmarks/tight_exact.py (closed form over the
offset, truncation <= 1e-14); lmm-floor the same way (below); lmm and lmm-gap as intervals from
tight_exact.lmm_gap_exact (width < 1e-6 here); stability and choosing in closed form; em in closed
form; noisy-max-laplace and permute-and-flip by adaptive quadrature of a one-dimensional integral
(scipy.integrate.quad; the largest error estimate is printed at the end; these two are numerical
integrals, not sums).

lmm-floor (docs/privacy.md §22): G >= 0 is one-sided geometric; given G = g the tested ranks
(shallowest first) pass independently, P(pass at l_j | g) = P(nu > T_j + g - F_j);
P(top) = sum_g P(G = g) [sum_j prod_(i<j)(1 - p_i)
p_j P_LD(top | l_j, alpha) + prod_j (1 - p_j) P_LD(top | l_d, eps - eps1)].
"""

from __future__ import annotations

import argparse
import csv
import math
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path

import numpy as np
from scipy import integrate

sys.path.insert(0, str(Path(__file__).resolve().parent))

import itertools

import tight_exact as te

from dpfim.mechanisms import lmm_floor as lf
from dpfim.mechanisms import registry
from dpfim.mechanisms.baselines import choosing_threshold, stability_threshold
from dpfim.mechanisms.thresholds import paper_split
from dpfim.params import DEFAULT_ELL_MAX

DELTA = Fraction(1, 10**6)
EPSILONS = ("0.1", "0.5", "1", "2")
SIZES = (1, 2, 3)
LEADS = (10, 15, 20, 25, 30, 40, 60)
NEAR_K = (2, 5, 10, 50)
TIED_T = (2, 5, 20)
RECORD_ITEMS = 64  # choosing's B: dpfim's default record-length cap (docs/privacy.md §1.1)
QUAD_ERR = [0.0]  # the largest error estimate of a quadrature so far (printed by main)
BOUND_WIDTH = [0.0]  # the widest interval of a mechanism bounded from the top counts only


@dataclass
class Shape:
    """A count profile: (count, multiplicity) groups in descending count, the vocabulary size."""

    name: str
    groups: list[tuple[int, int]]  # nonzero counts only
    vocabulary: int
    r: int

    @property
    def universe(self) -> int:
        return max(math.comb(self.vocabulary, self.r), sum(m for _, m in self.groups))

    def profile(self) -> te.Profile:
        return te.Profile.of(np.repeat([c for c, _ in self.groups], [m for _, m in self.groups]))


def _merge(pairs: list[tuple[int, int]]) -> list[tuple[int, int]]:
    acc: dict[int, int] = {}
    for c, m in pairs:
        if c > 0 and m > 0:
            acc[c] = acc.get(c, 0) + m
    return sorted(acc.items(), reverse=True)


def lone(g: int, r: int) -> Shape:
    return Shape(f"lone-{g}", [(1 + g, 1), (1, 200 * r)], 1000, r)


def near(k: int, r: int) -> Shape:
    top = [3184, 3180, 3170][: min(k, 3)]
    if k > 3:
        top += [round(x) for x in np.linspace(3165, 3110, k - 3)]
    tail = [(3098 - 2 * i, 1) for i in range(1000)]
    return Shape(f"near-{k}", _merge([(c, 1) for c in top] + tail), 120, r)


def tied(t: int, r: int) -> Shape:
    return Shape(f"tied-{t}", [(1000, t), (50, 200), (1, 200 * r)], 2 * t + 400, r)


def wall(r: int, n: int = 1000, walls: int = 4, near_items: int = 20, rare: int = 100) -> Shape:
    """Counts of the r-itemsets of the wall model (module docstring), by type."""
    # the multiset of sums over j-subsets of {1..near_items}: a polynomial in two variables
    sums: list[dict[int, int]] = [{0: 1}] + [{} for _ in range(r)]
    for i in range(1, near_items + 1):
        for j in range(r, 0, -1):
            for s, m in sums[j - 1].items():
                sums[j][s + i] = sums[j].get(s + i, 0) + m
    pairs: list[tuple[int, int]] = []
    for j in range(0, r + 1):  # j near items, r - j wall items, no rare item
        for s, m in sums[j].items():
            pairs.append((n - s, math.comb(walls, r - j) * m))
    # one rare item (two never meet): count 5, the other r - 1 items wall or near
    pairs.append((5, rare * math.comb(walls + near_items, r - 1)))
    return Shape("wall", _merge(pairs), walls + near_items + rare, r)


def profiles(r: int) -> Iterator[Shape]:
    yield from (lone(g, r) for g in LEADS)
    yield from (near(k, r) for k in NEAR_K)
    yield from (tied(t, r) for t in TIED_T)
    yield wall(r)


# --- exact P(top) per mechanism -----------------------------------------------------------------


def floor_exact(prof: te.Profile, eps: Fraction, delta: Fraction, default_rank: int = 10) -> float:
    """Exact P(top) of lmm-floor (open universe, ell_max = 2^40): the offset G >= 0 summed up to
    B with P(G > B) = q^(B+1) <= 1e-14, the ranks in the code's order (`lmm_floor.ranks`)."""
    sp = lf.make_split(eps, delta)
    q1, q2 = math.exp(-float(sp.eps1)), math.exp(-float(sp.eps2))
    b = math.ceil(math.log(1e-14) / math.log(q1))
    g = np.arange(0, b + 1, dtype=np.int64)
    alive = (1 - q1) * np.power(q1, g.astype(np.float64))  # P(G = g and no pass so far)
    lid = -math.log(float(delta))
    c1 = prof.c1
    p = 0.0
    for rank in lf.ranks(default_rank, DEFAULT_ELL_MAX):
        f = c1 - prof.c(rank + 1)
        pas = te._dlap_tail(q2, lf.threshold(rank, sp) + g - f + 1)  # nu >= T + g - F + 1
        mass = float((alive * pas).sum())
        alive = alive * (1 - pas)
        if mass > 1e-18:
            p += mass * te.p_top_selection(prof, rank, float(sp.alpha), lid)
    return p + float(alive.sum()) * te.p_top_selection(
        prof, default_rank, float(sp.alpha_default), lid
    )


def em_exact(shape: Shape, eps: Fraction) -> float:
    """exp(eps c) over the universe (add/remove), zero counts included."""
    e, c1 = float(eps), shape.groups[0][0]
    listed = sum(m for _, m in shape.groups)
    z = sum(m * math.exp(e * (c - c1)) for c, m in shape.groups)
    z += (shape.universe - listed) * math.exp(-e * c1)
    return shape.groups[0][1] / z


def _noisy_max_quad(shape: Shape, eps: Fraction, kind: str) -> float:
    """P(argmax c + X is a top itemset), X i.i.d. Laplace(1/eps) or Exponential(1/eps)."""
    b = 1 / float(eps)
    c1, t = shape.groups[0]
    listed = sum(m for _, m in shape.groups)
    rest = [(c1 - c, m) for c, m in shape.groups[1:]] + [(c1, shape.universe - listed)]

    def log_cdf(y: float) -> float:
        if kind == "laplace":
            return math.log1p(-0.5 * math.exp(-y / b)) if y >= 0 else math.log(0.5) + y / b
        return math.log1p(-math.exp(-y / b)) if y > 0 else -math.inf

    def integrand(x: float) -> float:
        dens = math.exp(-abs(x) / b) / (2 * b) if kind == "laplace" else math.exp(-x / b) / b
        s = (t - 1) * log_cdf(x) if t > 1 else 0.0
        for d, m in rest:
            if m:
                s += m * log_cdf(x + d)
        return t * dens * math.exp(s) if s > -700 else 0.0

    # the top's own noise x has density < e^(-60)/b outside [-60b, 60b]: left out (error
    # <= 2e^(-60)); the integrand has kinks at 0 and where x + d = 0
    lo, hi = (-60 * b if kind == "laplace" else 0.0), 60 * b
    edges = sorted({lo, 0.0, hi, *(-d for d, _ in rest if lo < -d < hi)})
    total, err = 0.0, 0.0
    for a, z in itertools.pairwise(edges):
        if z > a:
            v, e = integrate.quad(integrand, a, z, limit=400, epsabs=1e-12, epsrel=1e-10)
            total, err = total + v, err + e
    QUAD_ERR[0] = max(QUAD_ERR[0], err)
    return total


def stability_exact(prof: te.Profile, eps: Fraction, delta: Fraction) -> float:
    q = math.exp(-float(eps) / 4)
    gap = prof.c1 - prof.c(2)
    if gap == 0 and prof.tied_top(2) == 2:  # a tied top: released with P(X > T) (any top)
        pass
    k = stability_threshold(eps, delta) - gap + 1  # X >= T - gap + 1
    return float(te._dlap_tail(q, np.array([k]))[0])


def choosing_exact(
    shape: Shape, eps: Fraction, delta: Fraction, record_items: int = RECORD_ITEMS
) -> float:
    k = math.comb(record_items, shape.r)
    q = math.exp(-float(eps) / 4)
    c1, t = shape.groups[0]
    pas = float(te._dlap_tail(q, np.array([choosing_threshold(eps, delta, k) - c1 + 1]))[0])
    e = float(eps) / 4
    z = sum(m * math.exp(e * (c - c1)) for c, m in shape.groups)
    return pas * t / z


# The shared data (../shared/data/README.md): distinct items V and the longest record B.
SHARED = {  # distinct items V, and choosing's B: the default record cap 64 (longest: 76, 29,
    # 161, 32, 23 records; the cap truncates 17 of retail's and 50 of BMS-WebView-2's records,
    # which these exact counts do not)
    "retail.dat": (16470, RECORD_ITEMS),
    "T10I4D100K.dat": (870, RECORD_ITEMS),
    "BMS-WebView-2.dat": (3340, RECORD_ITEMS),
    "groceries.csv": (169, RECORD_ITEMS),
    "mushroom.dat": (119, RECORD_ITEMS),
}


def all_exact(
    shape: Shape,
    eps: Fraction,
    delta: Fraction = DELTA,
    prof: te.Profile | None = None,
    record_items: int = RECORD_ITEMS,
) -> dict[str, float]:
    """P(top) of every registered mechanism on one shape (keys: registry names). With `prof`
    given (a shared data set's top counts, maybe incomplete), the mechanisms that need every
    nonzero count (em, noisy-max-laplace, permute-and-flip, choosing) get, when it is not
    complete, the lower end of an interval: the itemsets not read have counts between 0 (the
    upper end) and the last count read (the lower end); the largest width is kept in
    BOUND_WIDTH."""
    complete = prof is None or prof.complete
    prof = shape.profile() if prof is None else prof
    out: dict[str, float] = {}
    for name in registry.NAMES:
        if not complete and name in ("em", "noisy-max-laplace", "permute-and-flip", "choosing"):
            lo, hi = _bounds(name, shape, prof, eps, delta, record_items)
            BOUND_WIDTH[0] = max(BOUND_WIDTH[0], hi - lo)
            out[name] = lo
            continue
        if name == "lmm":
            lo, hi, _ = te.lmm_gap_exact(prof, eps, delta, split=paper_split(eps, delta))
            out[name] = (lo + hi) / 2  # an interval of width < 1e-6 here (module docstring)
        elif name == "lmm-gap":
            lo, hi, _err = te.lmm_gap_exact(prof, eps, delta)
            out[name] = (lo + hi) / 2
        elif name == "lmm-tight":
            out[name] = te.tight_exact(prof, te.TightParams.shipped(eps, delta)).p_top
        elif name == "lmm-floor":
            out[name] = floor_exact(prof, eps, delta)
        elif name == "limited-domain":
            out[name] = te.p_top_limited_domain(prof, eps, delta)
        elif name == "em":
            out[name] = em_exact(shape, eps)
        elif name == "noisy-max-laplace":
            out[name] = _noisy_max_quad(shape, eps, "laplace")
        elif name == "permute-and-flip":
            out[name] = _noisy_max_quad(shape, eps, "exponential")
        elif name == "stability":
            out[name] = stability_exact(prof, eps, delta)
        elif name == "choosing":
            out[name] = choosing_exact(shape, eps, delta, record_items)
        else:
            raise KeyError(f"no exact P(top) for {name}")
    return out


def lone_lead(name: str, eps: Fraction, r: int, target: float = 0.9) -> int | None:
    """The smallest lead g (1..200) at which `name` reaches P(top) >= target on lone-g."""
    for g in range(1, 201):
        if all_exact_one(name, lone(g, r), eps) >= target:
            return g
    return None


def _bounds(
    name: str, shape: Shape, prof: te.Profile, eps: Fraction, delta: Fraction, b: int
) -> tuple[float, float]:
    """(lo, hi) for a mechanism that needs every count, from the top counts of `prof` only."""
    read = sum(m for _, m in shape.groups)
    rest = max(0, math.comb(shape.vocabulary, shape.r) - read)
    last = int(prof.counts[-1])
    heavy = Shape(shape.name, [*shape.groups, (last, rest)], shape.vocabulary, shape.r)
    if name == "em":
        return em_exact(heavy, eps), em_exact(shape, eps)
    if name == "choosing":
        return choosing_exact(heavy, eps, delta, b), choosing_exact(shape, eps, delta, b)
    kind = "laplace" if name == "noisy-max-laplace" else "exponential"
    return _noisy_max_quad(heavy, eps, kind), _noisy_max_quad(shape, eps, kind)


def all_exact_one(name: str, shape: Shape, eps: Fraction) -> float:
    prof = shape.profile()
    if name == "lmm-floor":
        return floor_exact(prof, eps, DELTA)
    if name == "lmm-tight":
        return te.tight_exact(prof, te.TightParams.shipped(eps, DELTA)).p_top
    if name == "limited-domain":
        return te.p_top_limited_domain(prof, eps, DELTA)
    if name == "em":
        return em_exact(shape, eps)
    return all_exact(shape, eps)[name]


def shared(data: str, eps_list: list[str], sizes: list[int], depth: int) -> list[dict[str, object]]:
    """Every mechanism on the shared data sets (top `depth` counts, cached like tight_exact)."""
    rows: list[dict[str, object]] = []
    for ds, (vocab, longest) in SHARED.items():
        for r in sizes:
            prof = te.load_profile(data, ds, r, depth, Path("/tmp/dpfim-tight-exact"))
            vals, mult = np.unique(prof.counts, return_counts=True)
            shape = Shape(
                ds.split(".")[0],
                [(int(v), int(m)) for v, m in zip(vals[::-1], mult[::-1], strict=False)],
                vocab,
                r,
            )
            for e in eps_list:
                p = all_exact(shape, Fraction(e), prof=prof, record_items=longest)
                rows.append({"shape": shape.name, "r": r, "eps": e, **p})
                print(
                    f"{shape.name:13s} r={r} eps={e:4s} "
                    + " ".join(f"{n}={v:.4f}" for n, v in p.items()),
                    flush=True,
                )
    return rows


def _groups_of(sh: Shape, prof: te.Profile) -> Shape:
    vals, mult = np.unique(prof.counts, return_counts=True)
    groups = [(int(v), int(m)) for v, m in zip(vals[::-1], mult[::-1], strict=True)]
    return Shape(sh.name, groups, sh.vocabulary, sh.r)


def update(path: str, name: str, data: str | None) -> None:
    """Recompute one mechanism's column of a CSV written by this script (the others are kept):
    for retuning one mechanism without recomputing every other one."""
    with open(path, newline="") as fh:
        rows = list(csv.DictReader(fh))
    shapes: dict[tuple[str, int], tuple[Shape, te.Profile | None, int]] = {}
    for row in rows:
        key = (row["shape"], int(row["r"]))
        if key not in shapes:
            if data is None:
                sh = next(s for s in profiles(key[1]) if s.name == key[0])
                shapes[key] = (sh, None, RECORD_ITEMS)
            else:
                ds = next(d for d in SHARED if d.split(".")[0] == key[0])
                prof = te.load_profile(data, ds, key[1], 2**20 + 1, Path("/tmp/dpfim-tight-exact"))
                shapes[key] = (Shape(key[0], [], SHARED[ds][0], key[1]), prof, SHARED[ds][1])
        sh, prof, b = shapes[key]
        p = prof if prof is not None else sh.profile()
        eps = Fraction(row["eps"])
        if name == "lmm-floor":
            row[name] = f"{floor_exact(p, eps, DELTA):.6f}"
        elif name == "choosing":
            if prof is not None and not prof.complete:
                row[name] = f"{_bounds(name, _groups_of(sh, prof), prof, eps, DELTA, b)[0]:.6f}"
            else:
                shp = sh if prof is None else _groups_of(sh, prof)
                row[name] = f"{choosing_exact(shp, eps, DELTA, b):.6f}"
        elif name in ("noisy-max-laplace", "permute-and-flip"):
            if prof is not None and not prof.complete:
                continue
            if prof is not None:  # a shared data set: its groups, as in shared()
                vals, mult = np.unique(prof.counts, return_counts=True)
                groups = [(int(v), int(m)) for v, m in zip(vals[::-1], mult[::-1], strict=True)]
                sh = Shape(sh.name, groups, sh.vocabulary, sh.r)
            kind = "laplace" if name == "noisy-max-laplace" else "exponential"
            row[name] = f"{_noisy_max_quad(sh, eps, kind):.6f}"
        else:
            raise KeyError(f"--update does not support {name}")
    with open(path, "w", newline="") as fh:
        w = csv.DictWriter(fh, list(rows[0]))
        w.writeheader()
        w.writerows(rows)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--shared", default=None, help="DATA_DIR: the shared data instead of the grid")
    ap.add_argument("--depth", type=int, default=2**20 + 1)
    ap.add_argument("--eps", default=",".join(EPSILONS))
    ap.add_argument("--r", default="1,2,3")
    ap.add_argument("--csv", default=None)
    ap.add_argument("--lone", action="store_true", help="also the lead needed for 0.9 at eps=1")
    ap.add_argument("--update", default=None, help="CSV: recompute --column's column only")
    ap.add_argument("--column", default="lmm-floor", help="for --update")
    args = ap.parse_args()
    if args.update:
        update(args.update, args.column, args.shared)
        print(f"largest quadrature error estimate: {QUAD_ERR[0]:.1e}")
        return
    names = list(registry.NAMES)
    rows: list[dict[str, object]] = []
    if args.shared:
        rows = shared(
            args.shared, args.eps.split(","), [int(x) for x in args.r.split(",")], args.depth
        )
    for r in [] if args.shared else (int(x) for x in args.r.split(",")):
        for shape in profiles(r):
            for e in args.eps.split(","):
                p = all_exact(shape, Fraction(e))
                rows.append({"shape": shape.name, "r": r, "eps": e, **p})
                print(
                    f"{shape.name:9s} r={r} eps={e:4s} "
                    + " ".join(f"{n}={p[n]:.4f}" for n in names),
                    flush=True,
                )
    if args.csv:
        with open(args.csv, "w", newline="") as fh:
            w = csv.DictWriter(fh, ["shape", "r", "eps", *names])
            w.writeheader()
            for row in rows:
                w.writerow({k: (f"{v:.6f}" if isinstance(v, float) else v) for k, v in row.items()})
    print(f"largest quadrature error estimate: {QUAD_ERR[0]:.1e}")
    print(f"widest interval from the top counts only: {BOUND_WIDTH[0]:.1e}")
    if args.lone:
        for n in ("lmm-floor", "lmm-tight", "limited-domain", "em"):
            print(n, "lead for 0.9 at eps=1, r=2:", lone_lead(n, Fraction(1), 2))


if __name__ == "__main__":
    main()
