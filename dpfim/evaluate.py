"""`dpfim evaluate`: how each mechanism does on a data set, for choosing parameters. NOT PRIVATE.

It reads exact counts and reports exact functions of them (which itemset is on top, support
gaps). Use it on public data or data like the data you will protect; never publish its output as
a private release. Exact counts are computed once (one SupportIndex, deepened on demand) and every
trial reruns only the mechanism.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np
import pandas as pd

from dpfim.api import (
    ADD_REMOVE_ONLY,
    FINITE_UNIVERSE,
    MECHANISMS,
    check_options,
    run_mechanism,
)
from dpfim.engines.local import SupportIndex
from dpfim.errors import ParameterError
from dpfim.readers import Records
from dpfim.samplers.rng import RandomSource, resolve

COLUMNS = (
    "mechanism",
    "eps",
    "trials",
    "p_top",
    "mean_gap",
    "p90_gap",
    "none_rate",
    "median_ell",
    "ms_per_run",
)


@dataclass(frozen=True)
class Plan:
    mechanisms: tuple[str, ...]
    skipped: tuple[tuple[str, str], ...]  # (mechanism, why)


def parse_list(text: str, what: str) -> list[str]:
    items = [t.strip() for t in text.split(",") if t.strip()]
    if not items:
        raise ParameterError(f"{what}: give a comma-separated list")
    return items


def plan(mechanisms: Sequence[str], neighbours: str) -> Plan:
    """Which mechanisms run under this neighbouring relation (the others are skipped, said why)."""
    unknown = [m for m in mechanisms if m not in MECHANISMS]
    if unknown:
        raise ParameterError(
            f"--mechanisms: unknown {', '.join(unknown)} (choose from {', '.join(MECHANISMS)})"
        )
    run, skipped = [], []
    for m in dict.fromkeys(mechanisms):
        if m in ADD_REMOVE_ONLY and neighbours != "add-remove":
            skipped.append((m, "valid only under --neighbours add-remove"))
        else:
            run.append(m)
    return Plan(tuple(run), tuple(skipped))


def evaluate(
    records: Records,
    *,
    size: int,
    eps_values: Sequence[str],
    delta: str,
    mechanisms: Sequence[str],
    trials: int,
    neighbours: str = "add-remove",
    universe_size: int | None = None,
    max_record_items: int | None = None,
    candidates: int = 10,
    rng: RandomSource | int | None = None,
    progress: bool = False,
) -> pd.DataFrame:
    """One row per mechanism x eps (see COLUMNS). universe_size: K for the mechanisms that need a
    finite universe (default: C(d, r) for the d distinct items of the data)."""
    if trials < 1:
        raise ParameterError(f"--trials must be at least 1, got {trials}")
    source, _ = resolve(rng)
    chosen = plan(mechanisms, neighbours).mechanisms
    if universe_size is None:
        universe_size = math.comb(len(records.items), size)
    lengths = np.diff(records.indptr)
    growth_b = max_record_items or max(size, int(lengths.max()) if len(lengths) else size)
    index = SupportIndex(records, size, progress=progress)
    index.ensure(1)
    c1 = int(index.counts[0]) if len(index.counts) else 0
    jobs = [(m, e) for m in chosen for e in eps_values]
    bar = None
    if progress:
        from tqdm import tqdm

        bar = tqdm(total=len(jobs) * trials, desc="evaluate", unit="run", leave=False)
    rows = []
    for mech, eps in jobs:
        opts = check_options(
            size=size,
            eps=eps,
            delta=delta,
            mechanism=mech,
            neighbours=neighbours,
            candidates=candidates,
            universe_given=True,
            max_record_items=growth_b,
        )
        # Only the mechanisms that need a finite universe get one; the others run as they would
        # in `dpfim mine` without --universe-items (open universe, "none" possible).
        k = universe_size if mech in FINITE_UNIVERSE else None
        picked: list[int | None] = []
        ells: list[float] = []
        spent = 0.0
        for _ in range(trials):
            t0 = time.perf_counter()
            out, _, _ = run_mechanism(index, opts, source, k, max_record_items=growth_b)
            spent += time.perf_counter() - t0
            if out.index is not None:
                picked.append(int(index.counts[out.index]))
            else:
                picked.append(0 if out.zero_pick else None)
            if mech in ("lmm", "lmm-gap", "lmm-tight"):
                ells.append(math.inf if out.ell is None else float(out.ell))
            if bar is not None:
                bar.update(1)
        rows.append(_row(mech, Fraction(eps), picked, ells, c1, spent / trials))
    if bar is not None:
        bar.close()
    return pd.DataFrame(rows, columns=list(COLUMNS))


def _row(
    mech: str, eps: Fraction, picked: list[int | None], ells: list[float], c1: int, sec: float
) -> dict[str, Any]:
    answered = np.array([c for c in picked if c is not None], dtype=float)
    gaps = c1 - answered
    n = len(picked)
    return {
        "mechanism": mech,
        "eps": float(eps),
        "trials": n,
        "p_top": float(np.sum(answered == c1)) / n if c1 > 0 else 0.0,
        "mean_gap": float(gaps.mean()) if len(gaps) else math.nan,
        "p90_gap": float(np.percentile(gaps, 90)) if len(gaps) else math.nan,
        "none_rate": (n - len(answered)) / n,
        "median_ell": float(np.median(ells)) if ells else math.nan,
        "ms_per_run": 1000 * sec,
    }


def plot(table: pd.DataFrame, path: str, title: str) -> None:
    """Mean gap and P(top) against eps, one line per mechanism (matplotlib, extra `plot`)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (ax_gap, ax_top) = plt.subplots(1, 2, figsize=(11, 4.2))
    for mech, part in table.groupby("mechanism", sort=False):
        part = part.sort_values("eps")
        ax_gap.plot(part["eps"], part["mean_gap"], marker="o", label=str(mech))
        ax_top.plot(part["eps"], part["p_top"], marker="o", label=str(mech))
    for ax in (ax_gap, ax_top):
        ax.set_xscale("log")
        ax.set_xlabel("epsilon")
        ax.grid(True, alpha=0.3)
    ax_gap.set_ylabel("mean support gap c(1) - c(selected), answered runs")
    ax_top.set_ylabel("P(selected is a top-support itemset)")
    ax_top.set_ylim(-0.02, 1.02)
    ax_top.legend(fontsize=8, loc="lower right")
    fig.suptitle(f"{title} (NOT PRIVATE: evaluation on exact counts)", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
