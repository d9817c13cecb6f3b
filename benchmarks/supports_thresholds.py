"""Issue 32's supports and --min-support, against PrivBasis and mlxtend. NOT PRIVATE.

Every run here is seeded (--seed): the results say "private": false and the runs are
reproducible, which is what a benchmark needs and what a private release must never be. The
data are read exactly to score the runs. All parts use add/remove neighbours, the tight
accountant, delta = 1e-6 and the sizes 1-5 (levelwise; dpfim/mechanisms/levelwise.py).

Part 1, supports vs PrivBasis (--supports-vs-privbasis). Cells: retail and mushroom x
K = 50, 100 x eps = 0.5, 1, --runs runs a cell (default 30), open universe (universe_size None),
supports on at the default share (1/4). Each run is one dpfim.evaluate.evaluate(..., trials=1)
call, as benchmarks/topk_field.py makes them (the counts object is reused; one seeded source a
cell, drawn on across the calls). Per cell: the median over runs of each run's median relative
error |s - c| / c of the released supports s (MRE; evaluate scores the CONSISTENT supports,
the least-squares projection of docs/privacy.md §24 that a result gives as
`consistent_support`), FNR@K mean +- standard error (sd / sqrt(runs)) in the same runs, mean
released, and evaluate's interval coverage in those runs. The MRE of the raw unbiased
`noisy_support` is measured in the same runs for reference: evaluate() calls
dpfim.release.whole_run_supports once a run with the picks (their exact and noisy supports);
this script wraps that function with a recorder that calls the original and keeps its inputs
and output (nothing in dpfim is changed; the recorded consistent MRE is checked against
evaluate's row). Target per cell (issue 32): MRE <= PrivBasis's and mean FNR <= PrivBasis's
FNR. PrivBasis (Li, Qardaji, Su, Cao, PVLDB 5(11), 2012) is QUOTED, not run: its MRE from
issue 32 and its FNR from issue 31 (benchmarks/topk_field.py's PRIVBASIS_REL_ERR and
PRIVBASIS_FNR), measured with its authors' code under add/remove, delta 1e-6, sizes 1-5.

Part 2, interval coverage (--coverage). For each of part 1's 8 cells, the released set R of
the cell's first seeded run (its item-id keys and exact supports, recorded as above; the same
run whether part 1 ran or not). The support noise is drawn after, and independently of, the
selection (docs/privacy.md §24.4: the stated law holds conditionally on R), so the coverage of
the stated interval is measured by redrawing only the supports: --draws (default 1,000) calls
of dpfim.mechanisms.parity.release(keys, exact, n, rho_s, replace=False, rng) with the run's
rho_s (levelwise._calibration(p, K).rho_supports), each counting the itemsets whose exact
support is inside noisy +- 1.959964 sd, sd from parity.plan(...).variances (what
levelwise.support_sds gives a result). Reported: the pooled coverage in percentage points, a
standard error from the per-draw coverage shares (the itemsets of one draw share coefficients,
so they are not independent), the coverage by itemset size, and the target band [93, 98].
For comparison only, on --consistent-draws (default 200) draws: the coverage of intervals of
the same half-width centred on the consistent projection (dpfim.rules.project, called as
release.whole_run_supports does). That is NOT what a result states.

Part 3, threshold curve vs mlxtend (--threshold-curve). dpfim.api.mine(records, eps, delta,
min_support=theta, neighbours="add-remove", accountant="tight", rng=seed): K chosen privately
(dpfim/mechanisms/threshold.py; default cap 500, sizes 1-5), levelwise releases K itemsets with
supports, and only those whose consistent support is >= theta * n_hat are kept. Truth: mlxtend
fpgrowth(min_support=theta, max_len=5) on the one-hot sparse frame of the records as read
(TransactionEncoder().fit(recs).transform(recs, sparse=True), pd.DataFrame.sparse.from_spmatrix).
dpfim caps records at 64 items (a uniformly random subset, its default): 17 of retail's 88,162
records are longer, none of T10I4D100K's; the truth is the uncapped data, what a user compares
against. Per cell: mean precision (released itemsets in the truth / released; a run releasing
nothing has no precision and is left out of the mean, and counted), mean recall (released in
the truth / true count), mean released, mean K chosen (recorded by wrapping
dpfim.mechanisms.threshold.choose_k, as above), true count, seconds per api.mine call (wall
clock; it includes building the records' counts each call) and the mechanism's seconds
(api.Diagnostics). A refused run (a dpfim ParameterError, e.g. "can tell from zero": public
refusals apply to --min-count, or to --min-support under replace-one, not here) is recorded
as such with its message. Grids: retail theta in {0.005, 0.01, 0.02, 0.05} x eps in
{0.1, 0.5, 1, 2}, --runs-threshold runs a cell (default 20); T10I4D100K theta in
{0.005, 0.01, 0.02} x eps in {0.5, 1, 2}, --runs-t10 (default 5) runs a cell, to check the
figures are not tuned to retail. Target (issue 32): retail theta = 0.01 at eps = 1: precision
>= 0.9 and recall >= 0.9. mlxtend's exact fpgrowth is timed per theta for reference (after one
untimed warm-up call).

Seeds: each part and cell derives its own seed from (--seed, part, data, K or theta, eps) by
SHA-256 (cell_seed); part 1's reading uses --seed for the record-length cap's truncation key,
part 3 passes an int seed per run to api.mine (which derives the truncation key from it).

Usage (from the repository root):

    PYTHONPATH=. python benchmarks/supports_thresholds.py --data-dir ../shared/data --seed 32
        [--supports-vs-privbasis] [--coverage] [--threshold-curve]  (none given: all three)
        [--runs 30] [--draws 1000] [--consistent-draws 200] [--runs-threshold 20] [--runs-t10 5]
        [--out benchmarks/results/supports_thresholds.json]
        [--markdown docs/evaluation/supports-thresholds.md]
        [--plot docs/evaluation/supports-thresholds.png]

Without the data folder the script says so and exits 0. Cost (2 shared cores, measured with
1-2 runs a cell): part 1 about 4.5 s a run on retail at K = 50 and 100 alike (one profiled run:
5.1 of 5.7 s in the open universe's item discovery, one exact discrete Gaussian draw for each of
retail's 16,470 items), 0.2-0.4 s on mushroom; part 2 about 10 ms a draw; part 3 3-9 s a run on
retail, 9-24 s on T10I4D100K.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import os
import platform
import subprocess
import sys
import time
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np

import dpfim.release as dpfim_release
from dpfim import api
from dpfim.errors import ParameterError
from dpfim.evaluate import evaluate, open_for_evaluation
from dpfim.mechanisms import levelwise, parity, threshold
from dpfim.release import ids_of
from dpfim.rules import project
from dpfim.samplers.rng import seeded_source

sys.path.insert(0, str(Path(__file__).resolve().parent))
from topk_field import PRIVBASIS_FNR, PRIVBASIS_REL_ERR

SIZES = (1, 2, 3, 4, 5)
DELTA = "1e-6"
NEIGHBOURS = "add-remove"
ACCOUNTANT = "tight"
Z = parity.INTERVAL_Z  # 1.959963984540054
BAND = (93.0, 98.0)
FILES = {"retail": "retail.dat", "mushroom": "mushroom.dat", "T10I4D100K": "T10I4D100K.dat"}
P1_SETS = ("retail", "mushroom")
P1_TOPS = (50, 100)
P1_EPS = ("0.5", "1")
P3_GRIDS = {
    "retail": (("0.005", "0.01", "0.02", "0.05"), ("0.1", "0.5", "1", "2")),
    "T10I4D100K": (("0.005", "0.01", "0.02"), ("0.5", "1", "2")),
}
P3_TARGET = ("retail", "0.01", "1", 0.9, 0.9)  # data, theta, eps, precision >=, recall >=
CAP = 500  # --min-support's default cap on K (--top)
TOL = 1e-9


def say(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


def cell_seed(seed: int, *parts: object) -> int:
    text = "supports_thresholds " + " ".join(str(p) for p in (seed, *parts))
    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "big")


def median(values: list[float]) -> float:
    finite = [v for v in values if not math.isnan(v)]
    return float(np.median(finite)) if finite else math.nan


def mean(values: list[float]) -> float:
    finite = [float(v) for v in values if not math.isnan(float(v))]
    return float(np.mean(finite)) if finite else math.nan


def se(values: list[float]) -> float:
    return float(np.std(values, ddof=1) / math.sqrt(len(values))) if len(values) > 1 else math.nan


# --- recording what evaluate() passes to whole_run_supports ---------------------------------


class Recorder:
    """Wraps dpfim.release.whole_run_supports (which evaluate() calls through the module, once
    a run): calls the original and keeps its inputs and output. Changes nothing."""

    def __init__(self) -> None:
        self.original = dpfim_release.whole_run_supports
        self.last: dict[str, Any] | None = None

    def __call__(self, opts: Any, p: Any, picks: list[Any], counts: Any, noisy_n: Any) -> Any:
        out = self.original(opts, p, picks, counts, noisy_n)
        self.last = {"p": p, "top": opts.top, "picks": list(picks), "n": counts.n, "out": out}
        return out

    def __enter__(self) -> Recorder:
        dpfim_release.whole_run_supports = self  # type: ignore[assignment]
        return self

    def __exit__(self, *exc: object) -> None:
        dpfim_release.whole_run_supports = self.original  # type: ignore[assignment]


class KRecorder:
    """Wraps dpfim.mechanisms.threshold.choose_k (levelwise's scan calls it through the module):
    keeps the K it chose. Changes nothing."""

    def __init__(self) -> None:
        self.original = threshold.choose_k
        self.chosen: list[int] = []

    def __call__(self, *args: Any, **kwargs: Any) -> int:
        k = self.original(*args, **kwargs)
        self.chosen.append(int(k))
        return k

    def __enter__(self) -> KRecorder:
        threshold.choose_k = self  # type: ignore[assignment]
        return self

    def __exit__(self, *exc: object) -> None:
        threshold.choose_k = self.original  # type: ignore[assignment]


# --- part 1 ----------------------------------------------------------------------------------


@dataclass
class SupportCell:
    data: str
    top: int
    eps: str
    fnr: list[float] = field(default_factory=list)
    released: list[int] = field(default_factory=list)
    mre: list[float] = field(default_factory=list)  # evaluate's: consistent supports
    mre_raw: list[float] = field(default_factory=list)  # the unbiased noisy_support
    coverage: list[float] = field(default_factory=list)  # evaluate's interval_coverage
    ms: list[float] = field(default_factory=list)
    first_run: dict[str, Any] | None = None  # R of the first run, for part 2
    wall_s: float = 0.0

    def summary(self) -> dict[str, Any]:
        pb_mre = PRIVBASIS_REL_ERR[(self.data, self.top)][Fraction(self.eps)]
        pb_fnr = PRIVBASIS_FNR[(self.data, self.top)][Fraction(self.eps)]
        mre = median(self.mre)
        fnr = mean(self.fnr)
        mre_ok = mre <= pb_mre + TOL
        fnr_ok = fnr <= pb_fnr + TOL
        return {
            "data": self.data,
            "top": self.top,
            "eps": self.eps,
            "runs": len(self.fnr),
            "mre_consistent": mre,
            "mre_raw": median(self.mre_raw),
            "fnr_mean": fnr,
            "fnr_se": se(self.fnr),
            "released_mean": mean(self.released),
            "interval_coverage_in_runs": mean(self.coverage),
            "ms_per_run": mean(self.ms),
            "wall_s": self.wall_s,
            "privbasis_mre": pb_mre,
            "privbasis_fnr": pb_fnr,
            "mre_ok": mre_ok,
            "fnr_ok": fnr_ok,
            "verdict": "PASS" if mre_ok and fnr_ok else "MISS",
            "per_run": {
                "fnr": self.fnr,
                "released": self.released,
                "mre_consistent": self.mre,
                "mre_raw": self.mre_raw,
                "interval_coverage": self.coverage,
                "ms": self.ms,
            },
        }


def relative_errors(picks: list[Any], values: list[float]) -> list[float]:
    return [abs(v - q.count) / q.count for q, v in zip(picks, values, strict=True) if q.count > 0]


def run_support_cell(
    cell: SupportCell, opened: Any, runs: int, seed: int, recorder: Recorder
) -> SupportCell:
    rng = seeded_source(cell_seed(seed, "supports", cell.data, cell.top, cell.eps))
    t_cell = time.perf_counter()
    for run in range(runs):
        row = evaluate(
            opened,
            size=1,
            sizes=SIZES,
            eps_values=[cell.eps],
            delta=DELTA,
            mechanisms=["levelwise"],
            trials=1,
            neighbours=NEIGHBOURS,
            universe_size=None,
            rng=rng,
            top=cell.top,
            supports=True,
            accountant=ACCOUNTANT,
        ).iloc[0]
        rec = recorder.last
        assert rec is not None
        picks = rec["picks"]
        _, consistent, _ = rec["out"]
        rel_c = relative_errors(picks, consistent or [])
        rel_r = relative_errors(picks, [float(q.noisy_support) for q in picks])
        mre_c = float(row["median_rel_support_error"])
        if rel_c and abs(float(np.median(rel_c)) - mre_c) > 1e-12:
            raise AssertionError(
                f"recorded consistent MRE {np.median(rel_c)} != evaluate's {mre_c}"
            )
        cell.fnr.append(float(row["fnr_at_k"]))
        cell.released.append(round(float(row["mean_released"])))
        cell.mre.append(mre_c)
        cell.mre_raw.append(float(np.median(rel_r)) if rel_r else math.nan)
        cell.coverage.append(float(row["interval_coverage"]))
        cell.ms.append(float(row["ms_per_run"]))
        if run == 0:
            cell.first_run = {
                "keys": [tuple(int(i) for i in ids_of(q.ids)) for q in picks],
                "exact": [int(q.count) for q in picks],
                "n": int(rec["n"]),
                "rho_s": levelwise._calibration(rec["p"], rec["top"]).rho_supports,
            }
        recorder.last = None
    cell.wall_s = time.perf_counter() - t_cell
    return cell


def part1(args: argparse.Namespace, data_dir: Path, runs: int) -> tuple[list[SupportCell], dict]:
    cells: list[SupportCell] = []
    info: dict[str, Any] = {}
    with Recorder() as recorder:
        for name in P1_SETS:
            path = data_dir / FILES[name]
            t0 = time.perf_counter()
            opened = open_for_evaluation(str(path), size=1, sizes=SIZES, seed=args.seed)
            info[name] = {"open_s": time.perf_counter() - t0}
            try:
                for k in P1_TOPS:
                    for eps in P1_EPS:
                        cell = run_support_cell(
                            SupportCell(name, k, eps), opened, runs, args.seed, recorder
                        )
                        cells.append(cell)
                        s = cell.summary()
                        say(
                            f"part 1 {name} K={k} eps={eps}: MRE {s['mre_consistent']:.4f} "
                            f"(raw {s['mre_raw']:.4f}; PrivBasis {s['privbasis_mre']:g}), FNR "
                            f"{s['fnr_mean']:.3f} ± {s['fnr_se']:.3f} (PrivBasis "
                            f"{s['privbasis_fnr']:g}), released {s['released_mean']:.1f}: "
                            f"{s['verdict']}, {cell.wall_s:.1f} s"
                        )
            finally:
                opened.close()
    return cells, info


# --- part 2 ----------------------------------------------------------------------------------


def coverage_cell(
    first: dict[str, Any], draws: int, consistent_draws: int, seed: int, label: tuple
) -> dict[str, Any]:
    keys, exact, n, rho_s = first["keys"], first["exact"], first["n"], first["rho_s"]
    plan = parity.plan(keys, rho_s, False)
    sd = np.sqrt(np.array([float(v) for v in plan.variances]))
    truth = np.asarray(exact, dtype=np.float64)
    size = np.array([len(k) for k in keys])
    rng = seeded_source(cell_seed(seed, "coverage", *label))
    t0 = time.perf_counter()
    inside = np.zeros((draws, len(keys)), dtype=bool)
    for d in range(draws):
        est = parity.release(keys, exact, n, rho_s, False, rng)
        noisy = np.array([float(s) for s in est.supports])
        inside[d] = np.abs(noisy - truth) <= Z * sd
    stated_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    inside_c = np.zeros((consistent_draws, len(keys)), dtype=bool)
    for d in range(consistent_draws):
        est = parity.release(keys, exact, n, rho_s, False, rng)
        assert est.noisy_n is not None
        noisy = [float(s) for s in est.supports]
        cons, _ = project(keys, noisy, round(float(est.noisy_n)), None)  # as whole_run_supports
        inside_c[d] = np.abs(np.round(np.asarray(cons), 6) - truth) <= Z * sd
    consistent_s = time.perf_counter() - t0
    per_draw = inside.mean(axis=1)
    per_draw_c = inside_c.mean(axis=1)
    pooled = 100 * float(inside.mean())
    by_size = {
        str(r): {
            "itemsets": int(np.sum(size == r)),
            "coverage_pp": 100 * float(inside[:, size == r].mean()),
        }
        for r in sorted(set(size.tolist()))
    }
    return {
        "itemsets": len(keys),
        "sizes": {str(r): int(np.sum(size == r)) for r in sorted(set(size.tolist()))},
        "rho_s": str(rho_s),
        "rho_s_float": float(rho_s),
        "sd_median": float(np.median(sd)),
        "draws": draws,
        "coverage_pp": pooled,
        "coverage_se_pp": 100 * float(np.std(per_draw, ddof=1) / math.sqrt(draws)),
        "by_size": by_size,
        "in_band": BAND[0] <= pooled <= BAND[1],
        "verdict": "PASS" if BAND[0] <= pooled <= BAND[1] else "MISS",
        "stated_s": stated_s,
        "consistent_draws": consistent_draws,
        "consistent_centred_coverage_pp": 100 * float(inside_c.mean())
        if consistent_draws
        else math.nan,
        "consistent_centred_se_pp": (
            100 * float(np.std(per_draw_c, ddof=1) / math.sqrt(consistent_draws))
            if consistent_draws > 1
            else math.nan
        ),
        "consistent_s": consistent_s,
    }


def first_runs_for_coverage(
    args: argparse.Namespace, data_dir: Path, cells: list[SupportCell]
) -> list[SupportCell]:
    """Part 1's cells with their first run's R; run one seeded run a cell if part 1 did not."""
    if cells:
        return cells
    return part1(args, data_dir, 1)[0]


def part2(
    args: argparse.Namespace, data_dir: Path, cells: list[SupportCell]
) -> list[dict[str, Any]]:
    out = []
    for cell in first_runs_for_coverage(args, data_dir, cells):
        assert cell.first_run is not None
        label = (cell.data, cell.top, cell.eps)
        res = coverage_cell(cell.first_run, args.draws, args.consistent_draws, args.seed, label)
        res.update(data=cell.data, top=cell.top, eps=cell.eps)
        out.append(res)
        say(
            f"part 2 {cell.data} K={cell.top} eps={cell.eps}: |R| {res['itemsets']}, stated "
            f"coverage {res['coverage_pp']:.2f} pp ± {res['coverage_se_pp']:.2f} "
            f"({res['verdict']}); consistent-centred {res['consistent_centred_coverage_pp']:.2f} "
            f"pp; {res['stated_s'] + res['consistent_s']:.1f} s"
        )
    return out


# --- part 3 ----------------------------------------------------------------------------------


def read_fimi(path: Path) -> list[list[str]]:
    with open(path) as f:
        return [line.split() for line in f if line.strip()]


def mlxtend_truth(recs: list[list[str]], thetas: list[str]) -> tuple[dict, dict]:
    """{theta: set of frozensets of item names}, and timings: fpgrowth(max_len=5) on the
    one-hot sparse frame, after one untimed warm-up call."""
    import pandas as pd
    from mlxtend.frequent_patterns import fpgrowth
    from mlxtend.preprocessing import TransactionEncoder

    t0 = time.perf_counter()
    te = TransactionEncoder()
    matrix = te.fit(recs).transform(recs, sparse=True)
    frame = pd.DataFrame.sparse.from_spmatrix(matrix, columns=te.columns_)
    timings: dict[str, Any] = {"encode_s": time.perf_counter() - t0}
    fpgrowth(frame, min_support=0.5, max_len=5, use_colnames=True)  # warm-up, untimed
    truth = {}
    for theta in thetas:
        t0 = time.perf_counter()
        found = fpgrowth(frame, min_support=float(theta), max_len=5, use_colnames=True)
        timings[theta] = time.perf_counter() - t0
        truth[theta] = {frozenset(str(i) for i in s) for s in found["itemsets"]}
    del frame, matrix
    return truth, timings


@dataclass
class ThresholdCell:
    data: str
    theta: str
    eps: str
    true_count: int
    precision: list[float] = field(default_factory=list)
    recall: list[float] = field(default_factory=list)
    released: list[int] = field(default_factory=list)
    chosen_k: list[int] = field(default_factory=list)
    seconds: list[float] = field(default_factory=list)
    mechanism_s: list[float] = field(default_factory=list)
    refused: list[str] = field(default_factory=list)

    def summary(self) -> dict[str, Any]:
        empty = sum(1 for r in self.released if r == 0)
        return {
            "data": self.data,
            "theta": self.theta,
            "eps": self.eps,
            "runs": len(self.released) + len(self.refused),
            "answered": len(self.released),
            "refused": len(self.refused),
            "refusal_messages": sorted(set(self.refused)),
            "true_count": self.true_count,
            "precision_mean": mean(self.precision),
            "precision_se": se(self.precision),
            "runs_releasing_nothing": empty,
            "recall_mean": mean(self.recall),
            "recall_se": se(self.recall),
            "released_mean": mean(self.released),
            "chosen_k_mean": mean(self.chosen_k) if self.chosen_k else math.nan,
            "s_per_run": mean(self.seconds),
            "mechanism_s_per_run": mean(self.mechanism_s),
            "per_run": {
                "precision": self.precision,
                "recall": self.recall,
                "released": self.released,
                "chosen_k": self.chosen_k,
                "s": self.seconds,
                "mechanism_s": self.mechanism_s,
            },
        }


def run_threshold_cell(
    cell: ThresholdCell, recs: list[list[str]], truth: set, runs: int, seed: int
) -> ThresholdCell:
    for run in range(runs):
        diag = api.Diagnostics()
        with KRecorder() as krec:
            t0 = time.perf_counter()
            try:
                result = api.mine(
                    recs,
                    eps=cell.eps,
                    delta=DELTA,
                    min_support=cell.theta,
                    neighbours=NEIGHBOURS,
                    accountant=ACCOUNTANT,
                    rng=cell_seed(seed, "threshold", cell.data, cell.theta, cell.eps, run),
                    diagnostics=diag,
                )
            except ParameterError as exc:
                cell.refused.append(str(exc))
                continue
            seconds = time.perf_counter() - t0
        found = {frozenset(s["items"]) for s in result["itemsets"]}
        hits = len(found & truth)
        cell.released.append(len(found))
        if found:
            cell.precision.append(hits / len(found))
        cell.recall.append(hits / len(truth) if truth else math.nan)
        if krec.chosen:
            cell.chosen_k.append(krec.chosen[-1])
        cell.seconds.append(seconds)
        cell.mechanism_s.append(float(diag.timings.get("mechanism", math.nan)))
    return cell


def part3(args: argparse.Namespace, data_dir: Path) -> tuple[list[ThresholdCell], dict]:
    cells: list[ThresholdCell] = []
    info: dict[str, Any] = {}
    for name, (thetas, eps_list) in P3_GRIDS.items():
        path = data_dir / FILES[name]
        if not path.exists():
            say(f"part 3: skipping {name}: {path} not found")
            continue
        runs = args.runs_threshold if name == "retail" else args.runs_t10
        recs = read_fimi(path)
        truth, timings = mlxtend_truth(recs, list(thetas))
        info[name] = {
            "records": len(recs),
            "records_over_64_items": sum(1 for r in recs if len(r) > 64),
            "runs_per_cell": runs,
            "mlxtend_fpgrowth_s": {t: timings[t] for t in thetas},
            "mlxtend_encode_s": timings["encode_s"],
            "true_counts": {t: len(truth[t]) for t in thetas},
        }
        say(f"part 3 {name}: mlxtend counts {info[name]['true_counts']}, times {timings}")
        t_grid = time.perf_counter()
        for theta in thetas:
            for eps in eps_list:
                cell = run_threshold_cell(
                    ThresholdCell(name, theta, eps, len(truth[theta])),
                    recs,
                    truth[theta],
                    runs,
                    args.seed,
                )
                cells.append(cell)
                s = cell.summary()
                say(
                    f"part 3 {name} theta={theta} eps={eps}: precision {s['precision_mean']:.3f}, "
                    f"recall {s['recall_mean']:.3f}, released {s['released_mean']:.1f} (K "
                    f"{s['chosen_k_mean']:.1f}) of {s['true_count']}, refused {s['refused']}, "
                    f"{s['s_per_run']:.2f} s/run"
                )
        info[name]["grid_s"] = time.perf_counter() - t_grid
        del truth, recs
    return cells, info


# --- output ----------------------------------------------------------------------------------


def f3(x: float, fmt: str = ".3f") -> str:
    return "n/a" if x is None or (isinstance(x, float) and math.isnan(x)) else format(x, fmt)


def table(cols: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    lines += ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join(lines)


def part1_md(summaries: list[dict[str, Any]]) -> str:
    rows = []
    for s in summaries:
        rows.append(
            [
                s["data"],
                str(s["top"]),
                s["eps"],
                str(s["runs"]),
                f3(s["mre_consistent"], ".4f"),
                f3(s["mre_raw"], ".4f"),
                f"{s['privbasis_mre']:g}",
                f"{f3(s['fnr_mean'])} ± {f3(s['fnr_se'])}",
                f"{s['privbasis_fnr']:g}",
                f3(s["released_mean"], ".1f"),
                f3(100 * s["interval_coverage_in_runs"], ".1f"),
                f3(s["ms_per_run"], ".0f"),
                f"**{s['verdict']}**"
                + (
                    ""
                    if s["verdict"] == "PASS"
                    else f" ({'MRE' if not s['mre_ok'] else ''}"
                    f"{' & ' if not s['mre_ok'] and not s['fnr_ok'] else ''}"
                    f"{'FNR' if not s['fnr_ok'] else ''})"
                ),
            ]
        )
    cols = [
        "data",
        "K",
        "ε",
        "runs",
        "MRE dpfim (consistent)",
        "MRE dpfim (raw noisy_support, reference)",
        "MRE PrivBasis (quoted)",
        "FNR dpfim ± SE",
        "FNR PrivBasis (quoted)",
        "released",
        "interval coverage in these runs (%)",
        "ms / run",
        "target",
    ]
    return table(cols, rows)


def part2_md(cov: list[dict[str, Any]]) -> str:
    rows = []
    for c in cov:
        sizes = ", ".join(
            f"{r}: {v['coverage_pp']:.1f} ({v['itemsets']})" for r, v in c["by_size"].items()
        )
        rows.append(
            [
                c["data"],
                str(c["top"]),
                c["eps"],
                str(c["itemsets"]),
                str(c["draws"]),
                f"{c['coverage_pp']:.2f} ± {c['coverage_se_pp']:.2f}",
                f"[{BAND[0]:g}, {BAND[1]:g}]",
                f"**{c['verdict']}**",
                sizes,
                f"{c['consistent_centred_coverage_pp']:.2f} ± {c['consistent_centred_se_pp']:.2f}"
                f" ({c['consistent_draws']} draws)",
            ]
        )
    cols = [
        "data",
        "K",
        "ε",
        "|R|",
        "draws",
        "stated interval coverage (pp) ± SE",
        "target band",
        "target",
        "by size: coverage (itemsets)",
        "consistent-centred, NOT stated (pp)",
    ]
    return table(cols, rows)


def part3_md(summaries: list[dict[str, Any]], data: str) -> str:
    rows = []
    for s in summaries:
        if s["data"] != data:
            continue
        refused = (
            f"{s['refused']} ({'; '.join(m[:80] for m in s['refusal_messages'])})"
            if s["refused"]
            else "0"
        )
        rows.append(
            [
                s["theta"],
                s["eps"],
                str(s["runs"]),
                refused,
                str(s["true_count"]),
                f3(s["chosen_k_mean"], ".1f"),
                f3(s["released_mean"], ".1f"),
                f3(s["precision_mean"])
                + (
                    f" ({s['runs_releasing_nothing']} empty)" if s["runs_releasing_nothing"] else ""
                ),
                f3(s["recall_mean"]),
                f3(s["s_per_run"], ".2f"),
                f3(s["mechanism_s_per_run"], ".2f"),
            ]
        )
    cols = [
        "θ",
        "ε",
        "runs",
        "refused",
        "true count (mlxtend)",
        "K chosen",
        "released",
        "precision",
        "recall",
        "s / run (api.mine)",
        "mechanism s / run",
    ]
    return table(cols, rows)


def p3_target(summaries: list[dict[str, Any]]) -> dict[str, Any] | None:
    data, theta, eps, p_min, r_min = P3_TARGET
    for s in summaries:
        if (s["data"], s["theta"], s["eps"]) == (data, theta, eps):
            ok = (s["precision_mean"] >= p_min - TOL) and (s["recall_mean"] >= r_min - TOL)
            return {
                "cell": f"{data} θ={theta} ε={eps}",
                "precision_mean": s["precision_mean"],
                "recall_mean": s["recall_mean"],
                "verdict": "PASS" if ok else "MISS",
            }
    return None


def shell(cmd: list[str]) -> str | None:
    try:
        return subprocess.run(
            cmd, cwd=Path(__file__).resolve().parent, capture_output=True, text=True, check=True
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return None


def machine() -> dict[str, Any]:
    return {
        "cores": os.cpu_count(),
        "python": platform.python_version(),
        "platform": platform.platform(),
        "processor": platform.processor() or platform.machine(),
        "note": "2 cores shared with other work; one benchmark process at a time",
    }


def report(result: dict[str, Any]) -> str:
    m = result["machine"]
    parts = [
        "# Issue 32: supports and --min-support, against PrivBasis and mlxtend "
        "(NOT PRIVATE evaluation)",
        "",
        'Every run is seeded (reproducible, `"private": false`): a benchmark, never a private '
        "release. Add/remove neighbours, the tight accountant, δ = 1e-6, sizes 1-5, "
        "`levelwise`. Method and sources: the docstring of `benchmarks/supports_thresholds.py`.",
        "",
        f"- date: {result['date']}",
        f"- commit: {result['dpfim_commit']}"
        + (" (worktree had uncommitted changes)" if result["dirty"] else ""),
        f"- machine: {m['cores']} cores (shared), Python {m['python']}, {m['platform']}",
        f"- command: `{result['command']}`",
        f"- seed: {result['seed']}; total {result['total_s'] / 60:.1f} min",
    ]
    if "part1" in result:
        p1 = result["part1"]
        passes = sum(1 for s in p1["cells"] if s["verdict"] == "PASS")
        parts += [
            "",
            "## 1. Supports vs PrivBasis",
            "",
            f"{p1['runs']} runs a cell, open universe, supports share 1/4. MRE: the median over "
            "runs of each run's median relative error of the released supports; dpfim's "
            "target is on the consistent supports (`consistent_support`, what evaluate scores); "
            "the raw unbiased `noisy_support` is given for reference, same runs. FNR@K: mean ± "
            "standard error over the same runs. PrivBasis quoted (its authors' code, "
            "add/remove, δ = 1e-6, sizes 1-5): MRE from issue 32, FNR from issue 31. Target: "
            "MRE ≤ PrivBasis's and mean FNR ≤ PrivBasis's FNR.",
            "",
            part1_md(p1["cells"]),
            "",
            f"{passes} of {len(p1['cells'])} cells PASS.",
        ]
    if "part2" in result:
        p2 = result["part2"]
        passes = sum(1 for c in p2["cells"] if c["verdict"] == "PASS")
        pooled = p2["pooled_all_cells_pp"]
        parts += [
            "",
            "## 2. Coverage of the stated 95 % interval",
            "",
            "R: the released set of each cell's first seeded run of part 1. The supports alone "
            f"are redrawn {p2['draws']} times with `parity.release` at the run's ρ_s (the noise is "
            "drawn after, and independently of, the selection), and each exact support is "
            "checked against noisy ± 1.959964·sd (sd from `parity.plan`). Coverage pooled over "
            "draws and itemsets, in percentage points; SE from the per-draw coverage shares. "
            "The last column centres the same half-width on the consistent projection "
            f"(`dpfim.rules.project`, {p2['consistent_draws']} draws): for comparison only, "
            "NOT the interval a result states.",
            "",
            part2_md(p2["cells"]),
            "",
            f"{passes} of {len(p2['cells'])} cells inside [{BAND[0]:g}, {BAND[1]:g}]; all cells "
            f"pooled: {pooled:.2f} pp.",
        ]
    if "part3" in result:
        p3 = result["part3"]
        info = p3["data"]
        parts += [
            "",
            "## 3. --min-support θ vs mlxtend's exact fpgrowth",
            "",
            "`dpfim.api.mine(records, eps=ε, delta=1e-6, min_support=θ, "
            "neighbours='add-remove', accountant='tight', rng=seed)` (cap 500, sizes 1-5) "
            "against the truth `fpgrowth(min_support=θ, max_len=5)` on the one-hot sparse "
            "frame. Precision: released itemsets in the truth / released (runs releasing "
            "nothing left out of the mean and counted); recall: released in the truth / true "
            "count; K chosen: the privately chosen number of itemsets levelwise released "
            "before the θ·n̂ filter. s / run: one api.mine call (wall clock, building the "
            "counts included); mechanism s: its Diagnostics timing. Under add/remove with "
            "--min-support no threshold is refused from public values; the refused column "
            "would count any ParameterError.",
        ]
        for name in info:
            d = info[name]
            times = ", ".join(f"θ={t}: {v:.2f} s" for t, v in d["mlxtend_fpgrowth_s"].items())
            parts += [
                "",
                f"### {name} ({d['runs_per_cell']} runs a cell)",
                "",
                f"{d['records']:,} records ({d['records_over_64_items']} longer than dpfim's "
                f"default 64-item cap; the truth is the uncapped data). mlxtend fpgrowth, exact, "
                f"for reference: {times} (after an untimed warm-up; encoding "
                f"{d['mlxtend_encode_s']:.1f} s). Grid wall time {d['grid_s'] / 60:.1f} min.",
                "",
                part3_md(p3["cells"], name),
            ]
        tgt = p3.get("target")
        if tgt:
            parts += [
                "",
                f"Target {tgt['cell']}: precision ≥ 0.9 and recall ≥ 0.9: precision "
                f"{tgt['precision_mean']:.3f}, recall {tgt['recall_mean']:.3f}: "
                f"**{tgt['verdict']}**.",
            ]
        over = [
            f"{n} θ={t} ({c} true)"
            for n in info
            for t, c in info[n]["true_counts"].items()
            if c > CAP
        ]
        if over:
            parts += [
                "",
                f"More true itemsets than the default cap {CAP} (recall is then at most "
                f"{CAP} / true count): {', '.join(over)}.",
            ]
    if result.get("plot"):
        parts += ["", f"![figure]({Path(result['plot']).name})"]
    return "\n".join(parts) + "\n"


def plot(result: dict[str, Any], path: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib import ticker

    panels = []
    if "part3" in result and any(s["data"] == "retail" for s in result["part3"]["cells"]):
        panels += ["precision", "recall"]
    if "part1" in result:
        panels.append("mre")
    if not panels:
        return
    ratios = [1.6 if panel == "mre" else 1.0 for panel in panels]
    fig, axes = plt.subplots(
        1,
        len(panels),
        figsize=(5.2 * sum(ratios), 4.8),
        squeeze=False,
        gridspec_kw={"width_ratios": ratios},
    )
    for ax, panel in zip(axes[0], panels, strict=True):
        if panel in ("precision", "recall"):
            cells = [s for s in result["part3"]["cells"] if s["data"] == "retail"]
            eps_list = list(dict.fromkeys(s["eps"] for s in cells))
            for i, eps in enumerate(eps_list):
                mine = sorted(
                    (s for s in cells if s["eps"] == eps), key=lambda s: float(s["theta"])
                )
                shift = 10 ** (0.01 * (i - (len(eps_list) - 1) / 2))
                ax.errorbar(
                    [float(s["theta"]) * shift for s in mine],
                    [s[f"{panel}_mean"] for s in mine],
                    yerr=[0 if math.isnan(s[f"{panel}_se"]) else s[f"{panel}_se"] for s in mine],
                    marker="os^D"[i % 4],
                    capsize=3,
                    label=f"ε = {eps}",
                )
            ax.axhline(0.9, color="0.5", linestyle=":", linewidth=1)
            ax.set_xscale("log")
            thetas = sorted({float(s["theta"]) for s in cells})
            ax.set_xticks(thetas)
            ax.xaxis.set_major_formatter(ticker.FuncFormatter(lambda v, _p: f"{v:g}"))
            ax.xaxis.set_minor_locator(ticker.NullLocator())
            ax.set_ylim(-0.03, 1.03)
            ax.set_xlabel("θ (min_support)")
            ax.set_ylabel(f"{panel} vs mlxtend fpgrowth (mean ± SE)")
            ax.set_title(f"retail --min-support: {panel}", fontsize=10)
            ax.grid(True, alpha=0.3)
            ax.legend(fontsize=8)
        else:
            cells = result["part1"]["cells"]
            labels = [f"{s['data']}\nK={s['top']}, ε={s['eps']}" for s in cells]
            x = np.arange(len(cells))
            w = 0.27
            ax.bar(
                x - w,
                [s["privbasis_mre"] for s in cells],
                w,
                label="PrivBasis (quoted)",
                color="0.6",
            )
            ax.bar(x, [s["mre_consistent"] for s in cells], w, label="dpfim consistent")
            ax.bar(
                x + w, [s["mre_raw"] for s in cells], w, label="dpfim raw noisy_support", alpha=0.6
            )
            ax.set_yscale("log")
            ax.set_xticks(x)
            ax.set_xticklabels(labels, fontsize=7)
            ax.set_ylabel("median relative support error (median over runs)")
            ax.set_title("supports: dpfim vs PrivBasis (lower is better)", fontsize=10)
            ax.grid(True, axis="y", alpha=0.3)
            ax.legend(fontsize=8)
    fig.suptitle(
        "levelwise, add/remove, tight, δ = 1e-6, sizes 1-5 — NOT PRIVATE evaluation (seeded)",
        fontsize=10,
    )
    fig.tight_layout(rect=(0, 0, 1, 0.95))
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--data-dir", default="../shared/data")
    ap.add_argument("--seed", type=int, default=32, help="reproducible (and NOT private) runs")
    ap.add_argument("--supports-vs-privbasis", action="store_true", help="part 1")
    ap.add_argument("--coverage", action="store_true", help="part 2")
    ap.add_argument("--threshold-curve", action="store_true", help="part 3")
    ap.add_argument("--runs", type=int, default=30, help="part 1 runs a cell (>= 20)")
    ap.add_argument("--draws", type=int, default=1000, help="part 2 draws a cell")
    ap.add_argument("--consistent-draws", type=int, default=200)
    ap.add_argument("--runs-threshold", type=int, default=20, help="part 3, retail")
    ap.add_argument("--runs-t10", type=int, default=5, help="part 3, T10I4D100K")
    ap.add_argument("--out", default=None)
    ap.add_argument("--markdown", default=None)
    ap.add_argument("--plot", default=None)
    args = ap.parse_args(argv)
    if min(args.runs, args.draws, args.runs_threshold, args.runs_t10) < 1:
        ap.error("runs and draws must be at least 1")
    data_dir = Path(args.data_dir)
    if not all((data_dir / FILES[n]).exists() for n in P1_SETS):
        print(f"skipping: {data_dir} lacks retail.dat / mushroom.dat (pass --data-dir)")
        return 0
    chosen = [args.supports_vs_privbasis, args.coverage, args.threshold_curve]
    do1, do2, do3 = chosen if any(chosen) else (True, True, True)
    t0 = time.perf_counter()
    result: dict[str, Any] = {
        "not_private": True,
        "task": "issue 32: parity supports vs PrivBasis, their interval coverage, "
        "--min-support vs mlxtend",
        "date": shell(["date"]),
        "dpfim_commit": shell(["git", "rev-parse", "HEAD"]),
        "dirty": bool(shell(["git", "status", "--porcelain"])),
        "machine": machine(),
        "command": "PYTHONPATH=. python benchmarks/supports_thresholds.py "
        + " ".join(sys.argv[1:] if argv is None else argv),
        "seed": args.seed,
        "delta": DELTA,
        "neighbours": NEIGHBOURS,
        "accountant": ACCOUNTANT,
        "sizes": list(SIZES),
        "quoted": {
            "privbasis_mre": {
                f"{d}/{k}": {f"{float(e):g}": v for e, v in row.items()}
                for (d, k), row in PRIVBASIS_REL_ERR.items()
            },
            "privbasis_fnr": {
                f"{d}/{k}": {f"{float(e):g}": v for e, v in row.items()}
                for (d, k), row in PRIVBASIS_FNR.items()
            },
            "source": "PrivBasis with its authors' code, add/remove, delta 1e-6, sizes 1-5: "
            "MRE issue 32, FNR issue 31",
        },
    }
    cells1: list[SupportCell] = []
    if do1:
        t1 = time.perf_counter()
        cells1, info1 = part1(args, data_dir, args.runs)
        result["part1"] = {
            "runs": args.runs,
            "data": info1,
            "cells": [c.summary() for c in cells1],
            "seconds": time.perf_counter() - t1,
        }
    if do2:
        t2 = time.perf_counter()
        cov = part2(args, data_dir, cells1)
        pooled = sum(c["coverage_pp"] * c["itemsets"] for c in cov) / sum(
            c["itemsets"] for c in cov
        )
        result["part2"] = {
            "draws": args.draws,
            "consistent_draws": args.consistent_draws,
            "band_pp": list(BAND),
            "cells": cov,
            "pooled_all_cells_pp": pooled,
            "seconds": time.perf_counter() - t2,
        }
    if do3:
        t3 = time.perf_counter()
        cells3, info3 = part3(args, data_dir)
        summaries = [c.summary() for c in cells3]
        result["part3"] = {
            "data": info3,
            "cap": CAP,
            "cells": summaries,
            "target": p3_target(summaries),
            "seconds": time.perf_counter() - t3,
        }
    result["total_s"] = time.perf_counter() - t0
    result["plot"] = args.plot
    text = report(result)
    print(text)
    say(f"total {result['total_s']:.1f} s")
    if args.plot:
        plot(result, args.plot)
    if args.markdown:
        Path(args.markdown).write_text(text)
    if args.out:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(json.dumps(result, indent=1, allow_nan=True, default=str) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
