"""Issue 31's field comparison: the top-K itemsets of sizes 1-5 with noisy supports. NOT PRIVATE.

The task: release the K most frequent itemsets of sizes 1..5 together, each with a noisy support,
at (eps, delta = 1e-6). Scored per run, then averaged over --runs runs:

- FNR@K: the share of the true top K not released. An itemset tied with the K-th largest true
  support counts as a member: a released itemset is a hit iff its true support is >= the K-th
  largest true support over all itemsets of sizes 1-5; FNR = 1 - min(hits, K) / K (as
  dpfim.evaluate._topk_row scores it);
- precision: hits / released; mean released;
- median relative error |noisy - true| / true of the released noisy supports;
- time per run (the mechanism only: the data is read and counted once per data set).

Each cell prints "mean FNR ± standard error (mean released)"; the standard error is
sd(per-run FNR) / sqrt(runs). dpfim's evaluate() returns means over its trials only, so every
run here is one evaluate(..., trials=1) call (the counts object is reused, so a call costs one run
of the mechanism) and the per-run values come from its row. The median relative support error of
a cell is therefore the median over runs of each run's median (evaluate pools within a call).

Rows (methods):

1. dpfim `levelwise` (dpfim/mechanisms/levelwise.py) through dpfim.evaluate.evaluate, sizes
   (1, 2, 3, 4, 5), --supports (share 1/4), delta 1e-6, in two forms: "open" (open universe,
   universe_size None: a "bottom" candidate guards the unseen items) and "declared" (the data's
   vocabulary declared: universe_size = sum over r = 1..5 of C(d, r), d distinct items; evaluate
   then runs levelwise on the data's items without bottom). Two settings (tables): add-remove
   neighbours with the tight accountant (issue 31's setting) and the defaults, replace-one
   neighbours with the basic accountant.
2. "oracle CDP peeling", written here after the "CDP peeling" baseline of Gillenwater, Joseph,
   Muñoz Medina and Ribero, "A Joint Exponential Mechanism for Differentially Private Top-k",
   ICML 2022 (Google Research dp_topk): K rounds of the exponential mechanism, each a Gumbel-max
   c + Gumbel(scale) with scale 1/eps0 under add/remove (counts all move the same way) and
   2/eps0 under replace-one, each round removing the previous picks; each round is
   eps0-bounded-range, so eps0^2/8-zCDP, and K rounds are rho = K eps0^2 / 8, rho the largest
   zCDP whose Bun-Steinke conversion rho + 2 sqrt(rho ln(1/delta)) <= eps_sel
   (dpfim.accounting.zcdp_rho_for). It gets the SAME selection budget as dpfim's run, eps_sel =
   eps * 3/4, and the same support budget, eps_sup = eps / 4: c + Laplace(m / eps_sup) for its m
   picks (numpy noise: a reference, not shipped code). Its domain is the ORACLE domain, the
   exact top of the itemsets of sizes 1-5 read from the counts (not private: an optimistic
   reference). Domain, ties included: every itemset whose support is >= the 10,000th largest
   support (so possibly a little more than 10,000 itemsets; the size is printed). The counts
   object lists every itemset of support >= its threshold (dpfim/counts.py, invariant 1) and
   ensure(10000) lowers the threshold to at most the 10,000th support, so no tied itemset is
   missing; the script checks the threshold, that nothing is clipped and that the listed counts
   are in decreasing order. Its accounting is its own (zCDP) in both tables.
3. PrivBasis (Li, Qardaji, Su, Cao, "PrivBasis: Frequent Itemset Mining with Differential
   Privacy", PVLDB 5(11), 2012): QUOTED, not run, not implemented here (its code has no
   licence). The figures are issue 31's, measured with its authors' code (add/remove, delta
   1e-6, sizes 1-5): FNR at eps 0.1 / 0.5 / 1, the median relative support error at eps 0.5 /
   1 and 2-6 s per run (retail, K = 100, eps = 1). The replace-one table repeats them for
   reference (they were measured under add/remove). Issue 31's own measurements of the oracle
   CDP peeling are quoted beside this script's, as a check of the implementation here.

PrivSuper (N. Wang, X. Xiao, Y. Yang, Z. Zhang, Y. Gu, G. Yu, "PrivSuper: A Superset-First
Approach to Frequent Itemset Mining under Differential Privacy", ICDE 2017, pp. 809-820 -- not
"Wang, Li et al."): no published figure on retail or mushroom with a matching metric (FNR or
F-score of the top-k itemsets of sizes 1-5) could be found with the reference search available
to this project (abstract and citation records only; no full text, no table), so no PrivSuper
row is given; no number is invented.

Targets (issue 31), per cell and per levelwise form: at eps >= 0.5 a cell PASSes if
mean FNR <= min(PrivBasis, oracle measured here + 0.02) + one standard error and mean released
>= 0.95 K; at eps < 0.5 (0.1) if mean FNR <= PrivBasis. Cells without a quoted PrivBasis figure
are "n/a". The targets are issue 31's for the add-remove table; the replace-one table prints the
same check for reference.

--seed makes everything reproducible (and NOT private, which is fine for a benchmark): the
truncation key of the default record-length cap (64 items) comes from it, each cell gets its
own seeded source derived from (seed, setting, data, K, eps, method) and passed as evaluate's
rng (one source per cell, drawn on across its trials=1 calls: an int rng would repeat the same
run), and the oracle's numpy generator is seeded the same way. The truth (FNR, the oracle
domain) is the data as dpfim reads it, under that cap (retail has records longer than 64 items).

Usage (from the repository root, beside ../shared/data):

    PYTHONPATH=. python benchmarks/topk_field.py [--data-dir ../shared/data] [--runs 20]
        [--eps 0.1,0.5,1] [--top 50,100] [--sets retail,mushroom] [--seed 20261131]
        [--settings add-remove:tight,replace:basic] [--methods oracle,open,declared]
        [--out results.json] [--markdown table.md] [--plot fig.png] [--k500]

--k500 runs only the single cell retail, K = 500, eps = 1 (add-remove, tight) and reports FNR,
released and time per run for each method. Without ../shared/data the script says so and exits 0.

Cost (2 shared cores, seeded, measured with 1-3 runs a cell): levelwise 0.4-0.55 s a run on
retail K = 50, 0.9-1.4 s on retail K = 100, about 5 s on retail K = 500, 0.06-0.1 s on
mushroom K = 50 and 0.13-0.22 s on mushroom K = 100; the oracle 10-60 ms (125 ms at K = 500).
Once per data set: reading and counting (1-11 s), the oracle domain (retail 11-17 s, mushroom
7-9 s) and, on retail, the first declared-vocabulary run that releases a zero-support itemset
(eps 0.1, or K = 500): evaluate() then lists every itemset of sizes 1-5 to rank it (about 2 min
and 1.3 GB, outside the per-run time; the later runs reuse the listing).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import platform
import subprocess
import sys
import time
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np

from dpfim.accounting import zcdp_rho_for
from dpfim.evaluate import evaluate, open_for_evaluation
from dpfim.samplers.rng import seeded_source

SIZES = (1, 2, 3, 4, 5)
DELTA = "1e-6"
SUPPORT_SHARE = Fraction(1, 4)  # dpfim's default --support-share: the supports get eps / 4
ORACLE_DEPTH = 10_000
FILES = {"retail": "retail.dat", "mushroom": "mushroom.dat"}
METHODS = ("oracle", "open", "declared")
LABELS = {
    "privbasis": "PrivBasis (quoted)",
    "oracle": "oracle CDP peeling",
    "open": "levelwise open",
    "declared": "levelwise declared",
}

Q = Fraction
# Issue 31: PrivBasis with its authors' code, add/remove, delta 1e-6, sizes 1-5. FNR@K.
PRIVBASIS_FNR: dict[tuple[str, int], dict[Fraction, float]] = {
    ("retail", 50): {Q("0.1"): 0.56, Q("0.5"): 0.054, Q("1"): 0.018},
    ("retail", 100): {Q("0.1"): 0.89, Q("0.5"): 0.51, Q("1"): 0.15},
    ("mushroom", 50): {Q("0.1"): 0.092, Q("0.5"): 0.020, Q("1"): 0.020},
    ("mushroom", 100): {Q("0.1"): 0.25, Q("0.5"): 0.051, Q("1"): 0.030},
}
# Issue 31: median relative support error of PrivBasis's released supports.
PRIVBASIS_REL_ERR: dict[tuple[str, int], dict[Fraction, float]] = {
    ("retail", 50): {Q("0.5"): 0.0135, Q("1"): 0.0074},
    ("retail", 100): {Q("0.5"): 0.19, Q("1"): 0.034},
    ("mushroom", 50): {Q("0.5"): 0.0054, Q("1"): 0.0027},
    ("mushroom", 100): {Q("0.5"): 0.0185, Q("1"): 0.0094},
}
PRIVBASIS_TIME = "2-6 s per run (retail, K = 100, eps = 1; issue 31)"
# Issue 31's own measurement of the oracle CDP peeling (same cells, add/remove).
ISSUE_ORACLE_FNR: dict[tuple[str, int], dict[Fraction, float]] = {
    ("retail", 50): {Q("0.1"): 0.16, Q("0.5"): 0.024, Q("1"): 0.014},
    ("retail", 100): {Q("0.1"): 0.48, Q("0.5"): 0.060, Q("1"): 0.035},
    ("mushroom", 50): {Q("0.1"): 0.15, Q("0.5"): 0.004, Q("1"): 0.000},
    ("mushroom", 100): {Q("0.1"): 0.30, Q("0.5"): 0.036, Q("1"): 0.008},
}
TOL = 1e-9  # float slack in the target comparisons (an FNR of 1 - 49/50 is 0.0200000...02)
PRIVSUPER_NOTE = (
    "PrivSuper (Wang, Xiao, Yang, Zhang, Gu, Yu, ICDE 2017): no published figure on retail or "
    "mushroom with a matching metric was found (abstract and citation records only); no row."
)


@dataclass
class Cell:
    """One method x setting x data x K x eps: the per-run values and their summary."""

    setting: str
    data: str
    top: int
    eps: str
    method: str
    fnr: list[float] = field(default_factory=list)
    precision: list[float] = field(default_factory=list)
    released: list[int] = field(default_factory=list)
    rel_err: list[float] = field(default_factory=list)  # each run's median
    ms: list[float] = field(default_factory=list)
    wall_s: float = 0.0
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def runs(self) -> int:
        return len(self.fnr)

    def mean(self, values: list[float] | list[int]) -> float:
        finite = [float(v) for v in values if not math.isnan(float(v))]
        return float(np.mean(finite)) if finite else math.nan

    @property
    def fnr_mean(self) -> float:
        return self.mean(self.fnr)

    @property
    def fnr_se(self) -> float:
        if self.runs < 2:
            return math.nan
        return float(np.std(self.fnr, ddof=1) / math.sqrt(self.runs))

    @property
    def rel_err_median(self) -> float:
        finite = [v for v in self.rel_err if not math.isnan(v)]
        return float(np.median(finite)) if finite else math.nan

    def summary(self) -> dict[str, Any]:
        return {
            "setting": self.setting,
            "data": self.data,
            "top": self.top,
            "eps": self.eps,
            "method": self.method,
            "runs": self.runs,
            "fnr_mean": self.fnr_mean,
            "fnr_se": self.fnr_se,
            "precision_mean": self.mean(self.precision),
            "released_mean": self.mean(self.released),
            "median_rel_support_error": self.rel_err_median,
            "ms_per_run": self.mean(self.ms),
            "wall_s": self.wall_s,
            "per_run": {
                "fnr": self.fnr,
                "precision": self.precision,
                "released": self.released,
                "median_rel_support_error": self.rel_err,
                "ms": self.ms,
            },
            **self.extra,
        }


# --- the oracle CDP peeling ------------------------------------------------------------------


@dataclass(frozen=True)
class OracleDomain:
    counts: np.ndarray  # the exact supports of the domain, decreasing
    boundary: int  # the ORACLE_DEPTH-th largest support: the domain is every count >= it
    seconds: float


def oracle_domain(opened: Any) -> OracleDomain:
    """Every itemset of sizes 1-5 whose support is >= the 10,000th largest (ties included)."""
    t0 = time.perf_counter()
    ranked = opened.counts
    ranked.ensure(ORACLE_DEPTH)
    counts = np.asarray(ranked.counts, dtype=np.int64)
    if len(counts) < ORACLE_DEPTH:  # fewer nonzero itemsets than that: all of them
        if not ranked.complete:
            raise AssertionError("ensure() stopped short of the depth without being complete")
        boundary = int(counts[-1]) if len(counts) else 0
    else:
        boundary = int(counts[ORACLE_DEPTH - 1])
    # Ties: invariant 1 of dpfim/counts.py lists EVERY itemset of support >= threshold; the
    # boundary's ties are all listed iff the threshold is at most the boundary and unclipped.
    if int(ranked.threshold) > boundary or int(ranked.clipped_at) >= boundary:
        raise AssertionError(
            f"the counts may miss itemsets tied at {boundary}: threshold {ranked.threshold}, "
            f"clipped at {ranked.clipped_at}"
        )
    if len(counts) > 1 and np.any(np.diff(counts) > 0):
        raise AssertionError("the counts are not in decreasing order")
    domain = counts[counts >= boundary].copy()
    return OracleDomain(domain, boundary, time.perf_counter() - t0)


def oracle_eps0(eps: Fraction, k: int) -> tuple[Fraction, float, float]:
    """(eps_sel, rho, eps0): each round eps0-bounded range, K rounds rho = K eps0^2 / 8-zCDP,
    rho the largest that converts to (eps_sel, delta)-DP."""
    eps_sel = eps * (1 - SUPPORT_SHARE)
    rho = zcdp_rho_for(eps_sel, Fraction(DELTA))
    return eps_sel, float(rho), math.sqrt(8 * float(rho) / k)


def oracle_run(
    domain: np.ndarray, k: int, eps: Fraction, neighbours: str, gen: np.random.Generator
) -> tuple[np.ndarray, np.ndarray]:
    """One run: K Gumbel-max rounds over the domain, each removing its pick; then the noisy
    supports c + Laplace(m / eps_sup). Returns (true supports, noisy supports) of the picks."""
    _, _, eps0 = oracle_eps0(eps, k)
    scale = (1.0 if neighbours == "add-remove" else 2.0) / eps0
    eps_sup = float(eps * SUPPORT_SHARE)
    alive = np.ones(len(domain), dtype=bool)
    scores = domain.astype(np.float64)
    picks: list[int] = []
    for _ in range(min(k, len(domain))):
        noisy = scores + gen.gumbel(0.0, scale, size=len(domain))
        noisy[~alive] = -np.inf
        i = int(np.argmax(noisy))
        alive[i] = False
        picks.append(i)
    true = domain[np.asarray(picks, dtype=np.int64)]
    m = len(picks)
    noisy_sup = true + gen.laplace(0.0, m / eps_sup, size=m) if m else true.astype(float)
    return true, noisy_sup


def score(true: np.ndarray, kth: int, k: int) -> tuple[float, float]:
    """(FNR@K, precision) of released itemsets with these true supports."""
    hits = int(np.sum(true >= kth))
    fnr = 1 - min(hits, k) / k
    precision = hits / len(true) if len(true) else math.nan
    return fnr, precision


# --- the cells -------------------------------------------------------------------------------


def cell_seed(seed: int, *parts: object) -> int:
    text = "topk_field " + " ".join(str(p) for p in (seed, *parts))
    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "big")


def run_oracle(
    cell: Cell, dom: OracleDomain, kth: int, neighbours: str, runs: int, seed: int | None
) -> Cell:
    eps = Fraction(cell.eps)
    gen = np.random.default_rng(
        None if seed is None else cell_seed(seed, cell.setting, cell.data, cell.top, cell.eps, "o")
    )
    eps_sel, rho, eps0 = oracle_eps0(eps, cell.top)
    t_cell = time.perf_counter()
    for _ in range(runs):
        t0 = time.perf_counter()
        true, noisy = oracle_run(dom.counts, cell.top, eps, neighbours, gen)
        cell.ms.append(1000 * (time.perf_counter() - t0))
        fnr, precision = score(true, kth, cell.top)
        cell.fnr.append(fnr)
        cell.precision.append(precision)
        cell.released.append(len(true))
        rel = np.abs(noisy - true) / true
        cell.rel_err.append(float(np.median(rel)) if len(rel) else math.nan)
    cell.wall_s = time.perf_counter() - t_cell
    cell.extra = {
        "oracle_domain_size": len(dom.counts),
        "oracle_boundary_support": dom.boundary,
        "eps_sel": float(eps_sel),
        "rho": rho,
        "eps0": eps0,
        "gumbel_scale": (1.0 if neighbours == "add-remove" else 2.0) / eps0,
    }
    return cell


def run_levelwise(
    cell: Cell,
    opened: Any,
    universe: int | None,
    neighbours: str,
    accountant: str,
    runs: int,
    seed: int | None,
) -> Cell:
    rng = (
        None
        if seed is None
        else seeded_source(
            cell_seed(seed, cell.setting, cell.data, cell.top, cell.eps, cell.method)
        )
    )
    t_cell = time.perf_counter()
    for _ in range(runs):
        row = evaluate(
            opened,
            size=1,
            sizes=SIZES,
            eps_values=[cell.eps],
            delta=DELTA,
            mechanisms=["levelwise"],
            trials=1,
            neighbours=neighbours,
            universe_size=universe,
            rng=rng,
            top=cell.top,
            supports=True,
            accountant=accountant,
        ).iloc[0]
        cell.fnr.append(float(row["fnr_at_k"]))
        cell.precision.append(float(row["precision"]))
        cell.released.append(round(float(row["mean_released"])))
        cell.rel_err.append(float(row["median_rel_support_error"]))
        cell.ms.append(float(row["ms_per_run"]))
    cell.wall_s = time.perf_counter() - t_cell
    cell.extra = {"universe_size": universe}
    return cell


def kth_support(opened: Any, k: int) -> int:
    ranked = opened.counts
    ranked.ensure(k)
    return int(ranked.counts[k - 1]) if len(ranked.counts) >= k else 0


def say(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


def run_grid(
    args: argparse.Namespace,
    data_dir: Path,
    sets: list[str],
    settings: list[tuple[str, str]],
    tops: list[int],
    eps_list: list[str],
    methods: list[str],
) -> tuple[list[Cell], dict[str, Any]]:
    cells: list[Cell] = []
    info: dict[str, Any] = {}
    for name in sets:
        path = data_dir / FILES.get(name, name)
        if not path.exists():
            say(f"skipping {name}: {path} not found")
            continue
        t0 = time.perf_counter()
        opened = open_for_evaluation(str(path), size=1, sizes=SIZES, seed=args.seed)
        try:
            distinct = int(opened.distinct_items())
            universe = sum(math.comb(distinct, r) for r in SIZES)
            info[name] = {
                "path": str(path),
                "open_s": time.perf_counter() - t0,
                "distinct_items": distinct,
                "declared_universe_size": universe,
            }
            dom = None
            if "oracle" in methods:
                dom = oracle_domain(opened)
                info[name].update(
                    oracle_domain_size=len(dom.counts),
                    oracle_boundary_support=dom.boundary,
                    oracle_domain_s=dom.seconds,
                )
                say(
                    f"{name}: oracle domain {len(dom.counts)} itemsets (support >= "
                    f"{dom.boundary}, ties included), {dom.seconds:.1f} s"
                )
            for setting in settings:
                neighbours, accountant = setting
                label = f"{neighbours}:{accountant}"
                for k in tops:
                    t_k = time.perf_counter()
                    kth = kth_support(opened, k)
                    info[name][f"kth_support_K{k}"] = kth
                    info[name][f"kth_s_K{k}"] = time.perf_counter() - t_k
                    for eps in eps_list:
                        for method in methods:
                            cell = Cell(label, name, k, eps, method)
                            if method == "oracle":
                                assert dom is not None
                                run_oracle(cell, dom, kth, neighbours, args.runs, args.seed)
                            else:
                                uni = universe if method == "declared" else None
                                run_levelwise(
                                    cell, opened, uni, neighbours, accountant, args.runs, args.seed
                                )
                            cells.append(cell)
                            say(
                                f"{label} {name} K={k} eps={eps} {method}: FNR "
                                f"{fmt_cell(cell)}, {cell.mean(cell.ms):.0f} ms/run, "
                                f"{cell.wall_s:.1f} s"
                            )
        finally:
            opened.close()
    return cells, info


# --- output ----------------------------------------------------------------------------------


def num(x: float, digits: int = 3) -> str:
    return "n/a" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x:.{digits}g}"


def se_str(se: float) -> str:
    return "n/a" if math.isnan(se) else f"{se:.3f}"


def fmt_cell(cell: Cell | None) -> str:
    if cell is None:
        return "-"
    return f"{cell.fnr_mean:.3f} ± {se_str(cell.fnr_se)} ({cell.mean(cell.released):.1f})"


def quoted(table: dict[tuple[str, int], dict[Fraction, float]], data: str, k: int, eps: str):
    return table.get((data, k), {}).get(Fraction(eps))


def find(cells: list[Cell], setting: str, data: str, k: int, eps: str, method: str) -> Cell | None:
    for c in cells:
        if (c.setting, c.data, c.top, c.eps, c.method) == (setting, data, k, eps, method):
            return c
    return None


def fnr_table(
    cells: list[Cell], setting: str, sets: list[str], tops: list[int], eps_list: list[str]
) -> str:
    methods = [m for m in METHODS if any(c.method == m for c in cells)]
    cols = ["data / K"]
    for eps in eps_list:
        cols += [f"ε={eps} {LABELS['privbasis']}"] + [f"ε={eps} {LABELS[m]}" for m in methods]
    lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    for data in sets:
        for k in tops:
            if not any(c.data == data and c.top == k and c.setting == setting for c in cells):
                continue
            row = [f"{data} / {k}"]
            for eps in eps_list:
                pb = quoted(PRIVBASIS_FNR, data, k, eps)
                row.append("n/a" if pb is None else f"{pb:g}")
                row += [fmt_cell(find(cells, setting, data, k, eps, m)) for m in methods]
            lines.append("| " + " | ".join(row) + " |")
    return "\n".join(lines)


def detail_table(cells: list[Cell], setting: str, eps_list: list[str]) -> str:
    cols = [
        "data",
        "K",
        "ε",
        "method",
        "runs",
        "FNR ± SE",
        "precision",
        "released",
        "median rel. support error",
        "ms / run",
    ]
    lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    for c in cells:
        if c.setting != setting:
            continue
        se = c.fnr_se
        lines.append(
            "| "
            + " | ".join(
                [
                    c.data,
                    str(c.top),
                    c.eps,
                    LABELS[c.method],
                    str(c.runs),
                    f"{c.fnr_mean:.3f} ± {se_str(se)}",
                    num(c.mean(c.precision)),
                    f"{c.mean(c.released):.1f}",
                    num(c.rel_err_median),
                    f"{c.mean(c.ms):.0f}",
                ]
            )
            + " |"
        )
    data_k = dict.fromkeys((c.data, c.top) for c in cells if c.setting == setting)
    for data, k in data_k:
        for eps, err in sorted(PRIVBASIS_REL_ERR.get((data, k), {}).items()):
            if not any(Fraction(e) == eps for e in eps_list):
                continue
            row = [data, str(k), f"{float(eps):g}", LABELS["privbasis"], "-"]
            row += [f"{quoted(PRIVBASIS_FNR, data, k, str(eps)):g}", "-", "-", f"{err:g}", "-"]
            lines.append("| " + " | ".join(row) + " |")
    return "\n".join(lines)


def oracle_check_table(cells: list[Cell], setting: str) -> str:
    cols = ["data / K", "ε", "oracle FNR, issue 31 (quoted)", "oracle FNR ± SE, measured here"]
    lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    for c in cells:
        if c.setting != setting or c.method != "oracle":
            continue
        q = quoted(ISSUE_ORACLE_FNR, c.data, c.top, c.eps)
        lines.append(
            f"| {c.data} / {c.top} | {c.eps} | {'n/a' if q is None else f'{q:g}'} | "
            f"{c.fnr_mean:.3f} ± {se_str(c.fnr_se)} |"
        )
    return "\n".join(lines)


def targets(cells: list[Cell], setting: str) -> list[dict[str, Any]]:
    """Issue 31's targets per cell and levelwise form (see the module docstring)."""
    out = []
    for c in cells:
        if c.setting != setting or c.method not in ("open", "declared"):
            continue
        pb = quoted(PRIVBASIS_FNR, c.data, c.top, c.eps)
        se = 0.0 if math.isnan(c.fnr_se) else c.fnr_se
        released = c.mean(c.released)
        entry: dict[str, Any] = {
            "setting": setting,
            "data": c.data,
            "top": c.top,
            "eps": c.eps,
            "method": c.method,
            "fnr_mean": c.fnr_mean,
            "fnr_se": c.fnr_se,
            "released_mean": released,
        }
        if pb is None:
            entry.update(verdict="n/a", why="no quoted PrivBasis figure for this cell")
        elif Fraction(c.eps) >= Fraction("0.5"):
            oracle = find(cells, setting, c.data, c.top, c.eps, "oracle")
            bound = pb if oracle is None else min(pb, oracle.fnr_mean + 0.02)
            fnr_ok = c.fnr_mean <= bound + se + TOL
            ok = fnr_ok and released >= 0.95 * c.top
            entry.update(
                verdict="PASS" if ok else "MISS",
                why=(
                    f"FNR {c.fnr_mean:.3f} <= min(PrivBasis {pb:g}, oracle "
                    f"{'n/a' if oracle is None else f'{oracle.fnr_mean:.3f}'} + 0.02) = "
                    f"{bound:.3f} + SE {se:.3f}: {fnr_ok}; released "
                    f"{released:.1f} >= {0.95 * c.top:g}: {released >= 0.95 * c.top}"
                ),
            )
        else:
            ok = c.fnr_mean <= pb + TOL
            entry.update(
                verdict="PASS" if ok else "MISS",
                why=f"FNR {c.fnr_mean:.3f} <= PrivBasis {pb:g}: {ok}",
            )
        out.append(entry)
    return out


def targets_text(checks: list[dict[str, Any]]) -> str:
    lines = []
    for t in checks:
        lines.append(
            f"- {t['verdict']:4s} {t['data']} K={t['top']} ε={t['eps']} "
            f"{LABELS[t['method']]}: {t['why']}"
        )
    return "\n".join(lines)


def report(
    cells: list[Cell],
    settings: list[tuple[str, str]],
    sets: list[str],
    tops: list[int],
    eps_list: list[str],
    runs: int,
    info: dict[str, Any],
) -> tuple[str, list[dict[str, Any]]]:
    parts = [
        "# Issue 31: top-K itemsets of sizes 1-5 with noisy supports (NOT PRIVATE evaluation)",
        "",
        f"δ = {DELTA}, supports on (share 1/4), {runs} runs per cell. Cell: mean FNR@K ± "
        "standard error (mean released). PrivBasis: quoted from issue 31 (its authors' code, "
        f"add/remove); its time: {PRIVBASIS_TIME}. Oracle CDP peeling: measured here over the "
        "exact top-10,000 itemsets (ties included; not private, an optimistic reference).",
        "",
        PRIVSUPER_NOTE,
        "",
    ]
    for name, d in info.items():
        line = f"- {name}: {d['distinct_items']} distinct items"
        if "oracle_domain_size" in d:
            line += (
                f"; oracle domain {d['oracle_domain_size']} itemsets (support >= "
                f"{d['oracle_boundary_support']}), built in {d['oracle_domain_s']:.1f} s"
            )
        parts.append(line)
    all_checks: list[dict[str, Any]] = []
    for neighbours, accountant in settings:
        setting = f"{neighbours}:{accountant}"
        if not any(c.setting == setting for c in cells):
            continue
        note = (
            "issue 31's setting"
            if neighbours == "add-remove"
            else "dpfim's defaults; PrivBasis figures are add/remove, repeated for reference"
        )
        checks = targets(cells, setting)
        all_checks += checks
        parts += [
            "",
            f"## neighbours = {neighbours}, accountant = {accountant} ({note})",
            "",
            fnr_table(cells, setting, sets, tops, eps_list),
            "",
            "### Details",
            "",
            detail_table(cells, setting, eps_list),
        ]
        if neighbours == "add-remove" and any(
            c.setting == setting and c.method == "oracle" for c in cells
        ):
            parts += [
                "",
                "### Oracle CDP peeling: issue 31's measurement (add/remove) and this one",
                "",
                oracle_check_table(cells, setting),
            ]
        if checks:
            parts += [
                "",
                "### Targets (issue 31)"
                + ("" if neighbours == "add-remove" else ", for reference under replace-one"),
                "",
                targets_text(checks),
            ]
    return "\n".join(parts) + "\n", all_checks


def plot(cells: list[Cell], settings: list[tuple[str, str]], path: str, runs: int) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib import ticker

    rows = [f"{n}:{a}" for n, a in settings if any(c.setting == f"{n}:{a}" for c in cells)]
    panels = list(dict.fromkeys((c.data, c.top) for c in cells))
    if not rows or not panels:
        return
    width = max(8.0, 4.2 * len(panels))  # room for the title and the legend
    fig, axes = plt.subplots(
        len(rows), len(panels), figsize=(width, 3.6 * len(rows) + 0.8), squeeze=False
    )
    styles = {
        "oracle": ("s", "--"),
        "open": ("o", "-"),
        "declared": ("^", "-."),
    }
    for i, setting in enumerate(rows):
        for j, (data, k) in enumerate(panels):
            ax = axes[i][j]
            pb = PRIVBASIS_FNR.get((data, k), {})
            if pb:
                xs = sorted(pb)
                ax.plot(
                    [float(x) for x in xs],
                    [pb[x] for x in xs],
                    "k:",
                    marker="x",
                    label="PrivBasis (quoted, add/remove)",
                )
            for n, method in enumerate(METHODS):
                mine = sorted(
                    (
                        c
                        for c in cells
                        if (c.setting, c.data, c.top, c.method) == (setting, data, k, method)
                    ),
                    key=lambda c: Fraction(c.eps),
                )
                if not mine:
                    continue
                marker, line = styles[method]
                shift = 10 ** (0.012 * (n - 1))  # a small offset along eps keeps bars apart
                ax.errorbar(
                    [float(Fraction(c.eps)) * shift for c in mine],
                    [c.fnr_mean for c in mine],
                    yerr=[0.0 if math.isnan(c.fnr_se) else c.fnr_se for c in mine],
                    marker=marker,
                    linestyle=line,
                    capsize=3,
                    label=LABELS[method],
                )
            ax.set_xscale("log")
            eps_values = sorted({float(Fraction(c.eps)) for c in cells} | {float(x) for x in pb})
            ax.set_xticks(eps_values)
            ax.xaxis.set_major_formatter(ticker.FuncFormatter(lambda v, _p: f"{v:g}"))
            ax.xaxis.set_minor_locator(ticker.NullLocator())
            ax.set_ylim(-0.03, 1.03)
            ax.set_xlabel("ε")
            ax.set_ylabel("FNR@K (mean ± SE)")
            ax.set_title(f"{data}, K = {k}\n{setting}", fontsize=9)
            ax.grid(True, alpha=0.3)
    handles, labels = axes[0][0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=2, fontsize=8)
    fig.suptitle(
        f"Top-K itemsets of sizes 1-5, δ = {DELTA}, supports on, {runs} runs per point\n"
        "NOT PRIVATE evaluation; the oracle's domain is the exact top 10,000",
        fontsize=10,
    )
    fig.tight_layout(rect=(0, 0.08 + 0.3 / len(rows) / 3.6, 1, 0.94))
    fig.savefig(path, dpi=110)
    plt.close(fig)


def commit_of_repo() -> str | None:
    try:
        out = subprocess.run(
            ["git", "rev-parse", "HEAD"],
            cwd=Path(__file__).resolve().parent,
            capture_output=True,
            text=True,
            check=True,
        )
        return out.stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return None


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--data-dir", default="../shared/data")
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--eps", default="0.1,0.5,1")
    ap.add_argument("--top", default="50,100")
    ap.add_argument("--sets", default="retail,mushroom")
    ap.add_argument(
        "--settings",
        default="add-remove:tight,replace:basic",
        help="neighbours:accountant pairs, one table each",
    )
    ap.add_argument("--methods", default=",".join(METHODS), help="of oracle,open,declared")
    ap.add_argument("--seed", type=int, default=None, help="reproducible (and not private) runs")
    ap.add_argument("--out", default=None, help="JSON: every cell, with its per-run values")
    ap.add_argument("--markdown", default=None)
    ap.add_argument("--plot", default=None)
    ap.add_argument(
        "--k500",
        action="store_true",
        help="only the single cell retail, K = 500, eps = 1 (add-remove, tight)",
    )
    args = ap.parse_args(argv)
    if args.runs < 1:
        ap.error("--runs must be at least 1")
    data_dir = Path(args.data_dir)
    if not data_dir.is_dir():
        print(
            f"skipping: the data folder {data_dir} is missing (issue 31's comparison needs "
            "retail.dat and mushroom.dat there; pass --data-dir)"
        )
        return 0
    methods = [m.strip() for m in args.methods.split(",") if m.strip()]
    if not methods or any(m not in METHODS for m in methods):
        ap.error(f"--methods: choose from {','.join(METHODS)}")
    settings = []
    for s in args.settings.split(","):
        neighbours, _, accountant = s.strip().partition(":")
        if neighbours not in ("add-remove", "replace") or accountant not in ("basic", "tight"):
            ap.error(f"--settings: neighbours:accountant, got {s!r}")
        settings.append((neighbours, accountant))
    if args.k500:
        sets, tops, eps_list, settings = ["retail"], [500], ["1"], [("add-remove", "tight")]
    else:
        sets = [s.strip() for s in args.sets.split(",") if s.strip()]
        tops = [int(k) for k in args.top.split(",") if k.strip()]
        eps_list = [e.strip() for e in args.eps.split(",") if e.strip()]
    for e in eps_list:
        if Fraction(e) <= 0:
            ap.error("--eps: positive values")
    t0 = time.perf_counter()
    cells, info = run_grid(args, data_dir, sets, settings, tops, eps_list, methods)
    if not cells:
        print(f"skipping: none of {', '.join(sets)} found in {data_dir}")
        return 0
    if args.k500:
        lines = [
            "# retail, K = 500, ε = 1, add-remove, tight, supports on (NOT PRIVATE evaluation)",
            "",
            "| method | runs | FNR ± SE | released | median rel. support error | ms / run |",
            "|---|---|---|---|---|---|",
        ]
        for c in cells:
            lines.append(
                f"| {LABELS[c.method]} | {c.runs} | {c.fnr_mean:.3f} ± {se_str(c.fnr_se)} | "
                f"{c.mean(c.released):.1f} | {num(c.rel_err_median)} | {c.mean(c.ms):.0f} |"
            )
        text, checks = "\n".join(lines) + "\n", []
    else:
        text, checks = report(cells, settings, sets, tops, eps_list, args.runs, info)
    print(text)
    total = time.perf_counter() - t0
    say(f"total {total:.1f} s")
    if args.markdown:
        Path(args.markdown).write_text(text)
    if args.plot and not args.k500:
        plot(cells, settings, args.plot, args.runs)
    if args.out:
        result = {
            "not_private": True,
            "task": "issue 31: top-K itemsets of sizes 1-5 with noisy supports",
            "dpfim_commit": commit_of_repo(),
            "python": platform.python_version(),
            "argv": sys.argv[1:],
            "seed": args.seed,
            "runs": args.runs,
            "delta": DELTA,
            "support_share": str(SUPPORT_SHARE),
            "sizes": list(SIZES),
            "data": info,
            "cells": [c.summary() for c in cells],
            "targets": checks,
            "quoted": {
                "privbasis_fnr": _jsonable(PRIVBASIS_FNR),
                "privbasis_median_rel_support_error": _jsonable(PRIVBASIS_REL_ERR),
                "privbasis_time": PRIVBASIS_TIME,
                "issue31_oracle_fnr": _jsonable(ISSUE_ORACLE_FNR),
                "source": "issue 31 (PrivBasis measured with its authors' code; add/remove, "
                "delta 1e-6, sizes 1-5)",
                "privsuper": PRIVSUPER_NOTE,
            },
            "total_s": total,
        }
        Path(args.out).write_text(json.dumps(result, indent=1, allow_nan=True) + "\n")
    return 0


def _jsonable(table: dict[tuple[str, int], dict[Fraction, float]]) -> dict[str, Any]:
    return {
        f"{d}/{k}": {f"{float(e):g}": v for e, v in row.items()} for (d, k), row in table.items()
    }


if __name__ == "__main__":
    sys.exit(main())
