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

from dpfim import engines
from dpfim import release as topk
from dpfim.api import check_options, run_mechanism
from dpfim.choices import INTERVAL_Z
from dpfim.counts import Counts
from dpfim.engines import Opened
from dpfim.engines.local import count_records
from dpfim.errors import InputError, ParameterError
from dpfim.inputs import EngineSpec, InputSpec, check_record_cap
from dpfim.mechanisms import registry
from dpfim.params import check_delta, check_eps
from dpfim.progress import OFF, Setting, progress_mode
from dpfim.readers import Records, basket_note
from dpfim.readers.records import truncate, truncation_key
from dpfim.request import DEFAULT_CANDIDATES, parse_sizes
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
# With --top K: FNR@K against the true top K (an itemset tied with the K-th true count is a
# member), precision of the released itemsets, mean |true rank - released rank| (picks of
# nonzero count), the median relative error |s - true| / true of the released supports s
# (--supports only; levelwise's consistent supports, docs/privacy.md §24) and the share of the
# released itemsets whose true support is inside the stated 95 % interval s +- z sd (levelwise).
TOPK_COLUMNS = (
    "mechanism",
    "eps",
    "top",
    "trials",
    "fnr_at_k",
    "precision",
    "mean_rank_error",
    "median_rel_support_error",
    "interval_coverage",
    "mean_released",
    "ms_per_run",
)

# With --min-support (levelwise): precision = released members of the exact frequent set /
# released, recall = released members / the exact set (every itemset of the sizes with support
# >= ceil(theta n)), the consistent supports' median relative error, the stated intervals'
# coverage, the mean number released.
THRESHOLD_COLUMNS = (
    "mechanism",
    "eps",
    "min_support",
    "trials",
    "true_frequent",
    "precision",
    "recall",
    "median_rel_support_error",
    "interval_coverage",
    "mean_released",
    "ms_per_run",
)


@dataclass(frozen=True)
class MechanismChoice:
    mechanisms: tuple[str, ...]
    skipped: tuple[tuple[str, str], ...]  # (mechanism, why)


def parse_list(text: str, what: str) -> list[str]:
    items = [t.strip() for t in text.split(",") if t.strip()]
    if not items:
        raise ParameterError(f"{what}: give a comma-separated list")
    return items


def choose_mechanisms(
    mechanisms: Sequence[str], neighbours: str, sizes: Sequence[int] = (2,)
) -> MechanismChoice:
    """Which mechanisms run under this neighbouring relation and these ranked sizes (the others
    are skipped, said why: levelwise needs --sizes 1-s).

    A choice in which nothing can run is a usage error, never an empty table.
    """
    unknown = [m for m in mechanisms if m not in registry.REGISTRY]
    if unknown:
        raise ParameterError(
            f"--mechanisms: unknown {', '.join(unknown)} (choose from {', '.join(registry.NAMES)})"
        )
    run, skipped = [], []
    for m in dict.fromkeys(mechanisms):
        if neighbours not in registry.get(m).neighbours:
            valid = " or ".join(sorted(registry.get(m).neighbours))
            skipped.append((m, f"valid only under --neighbours {valid}"))
        elif registry.get(m).whole_run is not None and tuple(sizes) != tuple(
            range(1, max(sizes) + 1)
        ):
            skipped.append((m, f"ranks sizes 1..s together: give --sizes 1-{max(sizes)}"))
        else:
            run.append(m)
    if not run:
        raise ParameterError(
            f"--mechanisms: none of {', '.join(dict.fromkeys(mechanisms))} can run under "
            f"--neighbours {neighbours} with these sizes; "
            + "; ".join(f"{m} {why}" for m, why in skipped)
        )
    return MechanismChoice(tuple(run), tuple(skipped))


@dataclass(frozen=True)
class Evaluation:
    """What `dpfim evaluate` prints and writes (NOT PRIVATE as a whole)."""

    table: pd.DataFrame
    size: int
    delta: str
    neighbours: str
    trials: int
    source: str

    def text(self) -> str:
        """The table as printed, under a NOT PRIVATE header line."""
        header = (
            f"# NOT PRIVATE evaluation of {self.source}: r = {self.size}, delta = {self.delta}, "
            f"neighbours = {self.neighbours}, {self.trials} trials per row\n"
        )
        body = str(self.table.to_string(index=False, float_format=lambda x: f"{x:.4g}"))
        return header + body + "\n"

    def csv(self) -> str:
        """The table as CSV: no comment line (CSV readers reject it), a not_private column."""
        labelled = self.table.copy()
        labelled.insert(0, "not_private", True)
        for col, value in (("size", self.size), ("delta", self.delta)):
            labelled[col] = value
        labelled["neighbours"] = self.neighbours
        return str(labelled.to_csv(index=False))

    def title(self, name: str) -> str:
        return plot_title(name, self.size, self.delta, self.neighbours, self.trials)


def evaluate_file(
    source: str,
    *,
    size: int,
    sizes: str | None = None,
    eps_list: str,
    delta: str,
    mechanisms: str,
    trials: int,
    neighbours: str,
    top: int,
    supports: bool,
    support_share: str | None,
    accountant: str,
    universe_size: int | None,
    max_record_items: int | str | None,
    candidates: int,
    fmt: str,
    sep: str | None,
    compression: str,
    record_col: str | None,
    item_col: str | None,
    engine: str,
    spark_master: str | None,
    spark_conf: Any,
    seed: int | None,
    progress: Setting,
    say: Any,
    notes: bool,
    min_support: str | None = None,
) -> Evaluation:
    """`dpfim evaluate SOURCE`: usage errors before any data is read, then the table. `say`
    prints a line on stderr (the NOT PRIVATE line always; with `notes` the basket note and the
    skipped mechanisms)."""
    eps_values = parse_list(eps_list, "--eps")
    for e in eps_values:
        check_eps(e)
    check_delta(delta)
    if trials < 1:
        raise ParameterError(f"--trials must be at least 1, got {trials}")
    if min_support is not None:  # levelwise over sizes 1-5 unless --sizes says otherwise
        from dpfim.request import DEFAULT_THRESHOLD_SIZES

        sizes = sizes or f"1-{max(DEFAULT_THRESHOLD_SIZES)}"
        mechanisms = "levelwise"
    ranked_sizes = parse_sizes(sizes) if sizes is not None else (size,)
    chosen = choose_mechanisms(parse_list(mechanisms, "--mechanisms"), neighbours, ranked_sizes)
    if sizes is not None:
        size = min(ranked_sizes)
    check_options(  # --top, --support-share: usage errors before any data is read
        size=None if sizes is not None else size,
        sizes=sizes,
        eps=eps_values[0],
        delta=delta,
        # valid under both relations; the mechanisms are checked per run
        mechanism="lmm" if min_support is None else "levelwise",
        neighbours=neighbours,
        top=top,
        supports=supports,
        support_share=support_share,
        accountant=accountant,
        more={} if min_support is None else {"min_support": _min_support(min_support)},
    )
    if universe_size is not None and universe_size < size:
        raise ParameterError("--universe-size must be at least --size")
    opened = open_for_evaluation(
        source,
        size=size,
        sizes=ranked_sizes,
        fmt=fmt,
        sep=sep,
        record_col=record_col,
        item_col=item_col,
        compression=compression,
        max_record_items=max_record_items,
        seed=seed,
        engine=EngineSpec(engine, spark_master, spark_conf, None, progress),
    )
    try:
        assert opened.distinct_items is not None
        if universe_size is not None and universe_size < opened.distinct_items():
            raise ParameterError("--universe-size is smaller than the number of distinct items")
        say("NOT PRIVATE: evaluate reads exact counts; its output is for choosing parameters only")
        if notes:
            long_cols = record_col is not None or item_col is not None
            note = basket_note(source, fmt, long_columns_given=long_cols)
            if note is not None:
                say(note)
            for mech, why in chosen.skipped:
                say(f"skipping {mech}: {why}")
        table = evaluate(
            opened,
            size=size,
            sizes=ranked_sizes,
            eps_values=eps_values,
            delta=delta,
            mechanisms=chosen.mechanisms,
            trials=trials,
            neighbours=neighbours,
            universe_size=None
            if universe_size is None
            else sum(math.comb(universe_size, r) for r in ranked_sizes),
            max_record_items=max_record_items,
            candidates=candidates,
            rng=seed,
            progress=progress,
            top=top,
            supports=supports,
            support_share=support_share,
            accountant=accountant,
            min_support=min_support,
        )
    finally:
        opened.close()
    return Evaluation(table, size, delta, neighbours, trials, source)


def _min_support(value: str) -> Fraction:
    from dpfim.parameters import _min_support as check

    return Fraction(check(value))


def open_for_evaluation(
    source: str,
    *,
    size: int,
    fmt: str = "auto",
    sep: str | None = None,
    record_col: str | None = None,
    item_col: str | None = None,
    compression: str = "auto",
    max_record_items: int | str | None = None,
    seed: int | None = None,
    engine: EngineSpec | None = None,
    sizes: Sequence[int] | None = None,
) -> Opened:
    """Read and count `source` with the chosen engine, exactly as `dpfim mine` would (the same
    record-length cap, no vocabulary): what `dpfim evaluate` runs on. close() it when done."""
    spec = engine or EngineSpec()
    cap = check_record_cap(max_record_items)
    given = InputSpec(source, fmt, "", sep, record_col, item_col, compression, cap, None, seed)
    inp = engines.prepare(spec, given)
    return engines.open_engine(spec, inp, list(sizes or [size]), resolve(None)[0])


def evaluate(
    data: Records | Opened,
    *,
    size: int,
    sizes: Sequence[int] | None = None,
    eps_values: Sequence[str],
    delta: str,
    mechanisms: Sequence[str],
    trials: int,
    neighbours: str = "replace",
    universe_size: int | None = None,
    max_record_items: int | str | None = None,
    candidates: int = DEFAULT_CANDIDATES,
    rng: RandomSource | int | None = None,
    progress: Setting = False,
    top: int = 1,
    supports: bool = False,
    support_share: str | None = None,
    accountant: str = "basic",
    min_support: str | None = None,
) -> pd.DataFrame:
    """One row per mechanism x eps (COLUMNS; TOPK_COLUMNS when top > 1 or supports;
    THRESHOLD_COLUMNS with min_support, levelwise only: precision and recall against the exact
    frequent itemsets of the sizes, the supports' error and the intervals' coverage).

    accountant: how top-K splits (eps, delta) among the rounds, as mine --accountant.

    universe_size: K for the mechanisms that need a finite universe (default: C(d, r) for the d
    distinct items of the data). Mechanisms not valid under `neighbours` are skipped.
    """
    if trials < 1:
        raise ParameterError(f"--trials must be at least 1, got {trials}")
    random_source, _ = resolve(rng)
    ranked_sizes = tuple(sizes) if sizes else (size,)
    size = min(ranked_sizes)
    chosen = choose_mechanisms(
        mechanisms, neighbours, tuple(sizes) if sizes else (size,)
    ).mechanisms
    cap = check_record_cap(max_record_items)
    if isinstance(data, Records):
        if cap is not None:  # as mine: the default cap applies here too
            key = truncation_key(seed=rng) if isinstance(rng, int) else truncation_key()
            data = truncate(data, cap, key)
        opened = count_records(data, list(ranked_sizes), progress=progress)
    else:
        opened = data  # an engine read it, with the cap
    assert opened.distinct_items is not None and opened.longest_record is not None
    distinct = opened.distinct_items()
    vocabulary_given = universe_size is not None  # levelwise then runs on it, without bottom
    if universe_size is None:
        universe_size = sum(math.comb(distinct, r) for r in ranked_sizes)
    finite = [m for m in chosen if registry.get(m).needs_vocabulary]
    if finite and universe_size < 1:
        raise InputError(
            f"the data has {distinct} distinct item(s), fewer than r = {size}: the "
            f"finite universe of {', '.join(finite)} would be empty; pass --universe-size N "
            "(N >= r) or leave them out of --mechanisms"
        )
    # choosing's B: the cap (records hold at most that many items); with no cap, the longest
    # record (evaluate is not private: an exact function of the data is fine here)
    growth_b = cap if cap is not None else max(max(ranked_sizes), opened.longest_record())
    ranked = opened.counts
    ranked.ensure(max(top, 1))
    c1 = int(ranked.counts[0]) if len(ranked.counts) else 0
    jobs = [(m, e) for m in chosen for e in eps_values]
    bar = None
    if progress_mode(progress) != OFF:
        from tqdm import tqdm

        bar = tqdm(total=len(jobs) * trials, desc="evaluate", unit="run", leave=False)
    rows = []
    if min_support is not None:
        return _threshold_table(
            ranked,
            eps_values,
            delta,
            neighbours,
            ranked_sizes,
            growth_b,
            top,
            support_share,
            accountant,
            min_support,
            trials,
            random_source,
            bar,
            universe_size if vocabulary_given else None,
        )
    topk_mode = top > 1 or supports
    for mech, eps in jobs:
        opts = check_options(
            size=None if len(ranked_sizes) > 1 else size,
            sizes=ranked_sizes if len(ranked_sizes) > 1 else None,
            eps=eps,
            delta=delta,
            mechanism=mech,
            neighbours=neighbours,
            candidates=candidates,
            universe_given=True,
            max_record_items=growth_b,
            top=top,
            supports=supports,
            support_share=support_share,
            accountant=accountant,
        )
        # Only the mechanisms that need a finite universe get one; the others run as they would
        # in `dpfim mine` without --universe-items (open universe, "none" possible).
        spec = registry.get(mech)
        k = (
            universe_size
            if spec.needs_vocabulary or (vocabulary_given and spec.whole_run)
            else None
        )
        if topk_mode:
            rows.append(_topk_row(ranked, opts, k, growth_b, trials, random_source, bar))
            continue
        picked: list[int | None] = []
        ells: list[float] = []
        spent = 0.0
        for _ in range(trials):
            t0 = time.perf_counter()
            out, _, _ = run_mechanism(ranked, opts, random_source, k, max_record_items=growth_b)
            spent += time.perf_counter() - t0
            if out.index is not None:
                picked.append(int(ranked.counts[out.index]))
            else:
                picked.append(0 if out.zero_pick else None)
            if "ell" in registry.get(mech).releases:
                ells.append(math.inf if out.ell is None else float(out.ell))
            if bar is not None:
                bar.update(1)
        rows.append(_row(mech, Fraction(eps), picked, ells, c1, spent / trials))
    if bar is not None:
        bar.close()
    return pd.DataFrame(rows, columns=list(TOPK_COLUMNS if topk_mode else COLUMNS))


def _topk_row(
    ranked: Counts,
    opts: Any,
    universe_size: int | None,
    growth_b: int,
    trials: int,
    random_source: RandomSource,
    bar: Any,
) -> dict[str, Any]:
    """Top-k metrics of one mechanism x eps over `trials` runs of the real peeling code."""
    spec = registry.get(opts.mechanism)
    p = opts.public(universe_size, growth_b)
    round_p = opts.round_public(universe_size, growth_b)  # the run's split (basic or tight)
    eps_sup = opts.eps_support
    k = opts.top
    kth = int(ranked.counts[k - 1]) if len(ranked.counts) >= k else 0

    def namer(view: Any, rng: RandomSource) -> tuple[int, ...]:
        # Which zero-count itemset is named does not change any metric (its count is 0), so a
        # distinct placeholder identity stands for it (it is removed from later rounds).
        placeholder: tuple[int, ...] = (-2 - int(view.removed_zero),)
        return placeholder + (-1,) * (int(opts.size) - 1)

    fnr: list[float] = []
    precision: list[float] = []
    rank_err: list[int] = []
    rel_err: list[float] = []
    covered: list[bool] = []
    released: list[int] = []
    spent = 0.0
    for _ in range(trials):
        t0 = time.perf_counter()
        picks, _, noisy_n = topk.peel(
            ranked, spec, p, k, random_source, namer if universe_size else None, round_p=round_p
        )
        sds, consistent, _ = topk.whole_run_supports(opts, round_p, picks, ranked, noisy_n)
        if opts.supports and not opts.whole_supports:  # levelwise adds its own
            picks = topk.add_supports(picks, eps_sup, random_source)
        spent += time.perf_counter() - t0
        counts = [q.count for q in picks]
        hits = sum(1 for c in counts if c >= kth)
        fnr.append(1 - min(hits, k) / k)
        released.append(len(picks))
        if picks:
            precision.append(hits / len(picks))
            # rank error over the picks of nonzero count: a zero-count pick's true rank would
            # need every itemset of every size counted (minutes and gigabytes on retail, 1-5)
            nonzero = [q for q in picks if q.count > 0]
            true = topk.true_ranks(ranked.counts, [q.count for q in nonzero])
            rank_err.extend(abs(t - q.rank) for t, q in zip(true, nonzero, strict=True))
        # the support a result gives: the consistent one where the mechanism makes it (§24)
        given = consistent or [q.noisy_support for q in picks]
        for j, (q, s) in enumerate(zip(picks, given, strict=True)):
            if s is not None and q.count > 0:
                rel_err.append(abs(s - q.count) / q.count)
            if sds is not None and q.noisy_support is not None:  # the stated interval
                covered.append(abs(q.noisy_support - q.count) <= INTERVAL_Z * sds[j])
        if bar is not None:
            bar.update(1)
    return {
        "mechanism": opts.mechanism,
        "eps": float(opts.eps),
        "top": k,
        "trials": trials,
        "fnr_at_k": float(np.mean(fnr)),
        "precision": float(np.mean(precision)) if precision else math.nan,
        "mean_rank_error": float(np.mean(rank_err)) if rank_err else math.nan,
        "median_rel_support_error": float(np.median(rel_err)) if rel_err else math.nan,
        "interval_coverage": float(np.mean(covered)) if covered else math.nan,
        "mean_released": float(np.mean(released)),
        "ms_per_run": 1000 * spent / trials,
    }


def _threshold_table(
    ranked: Counts,
    eps_values: Sequence[str],
    delta: str,
    neighbours: str,
    sizes: tuple[int, ...],
    growth_b: int,
    top: int,
    support_share: str | None,
    accountant: str,
    min_support: str,
    trials: int,
    random_source: RandomSource,
    bar: Any,
    universe_size: int | None,
) -> pd.DataFrame:
    """--min-support: one row per eps of levelwise (the only mechanism that takes it)."""
    from dpfim.mechanisms import levelwise, threshold

    rows = []
    ids, sup = levelwise.item_supports(ranked, None)
    exact: set[tuple[int, ...]] | None = None
    for eps in eps_values:
        opts = check_options(
            sizes=sizes if len(sizes) > 1 else None,
            size=sizes[0] if len(sizes) == 1 else None,
            eps=eps,
            delta=delta,
            mechanism="levelwise",
            neighbours=neighbours,
            universe_given=universe_size is not None,
            max_record_items=growth_b,
            top=top,
            supports=True,
            support_share=support_share,
            accountant=accountant,
            more={"min_support": Fraction(min_support)},
        )
        if exact is None:  # the exact answer: every itemset of support >= ceil(theta n)
            t = threshold.threshold_count(ranked.n, Fraction(min_support), None)
            exact = set()
            for c, key in threshold.ranked_itemsets(ranked, ids, sup, max(sizes)):
                if c < t:
                    break
                exact.add(key)
        rows.append(
            _threshold_row(ranked, opts, universe_size, growth_b, trials, random_source, bar, exact)
        )
    return pd.DataFrame(rows, columns=list(THRESHOLD_COLUMNS))


def _threshold_row(
    ranked: Counts,
    opts: Any,
    universe_size: int | None,
    growth_b: int,
    trials: int,
    random_source: RandomSource,
    bar: Any,
    exact: set[tuple[int, ...]],
) -> dict[str, Any]:
    """Precision and recall of `trials` runs of the real release path at the threshold."""
    from dpfim.views import ids_of

    spec = registry.get(opts.mechanism)
    p = opts.public(universe_size, growth_b)
    round_p = opts.round_public(universe_size, growth_b)
    precision, recall, rel_err, covered, released = [], [], [], [], []
    spent = 0.0
    for _ in range(trials):
        t0 = time.perf_counter()
        picks, _, noisy_n = topk.peel(ranked, spec, p, opts.top, random_source, round_p=round_p)
        sds, consistent, n_hat = topk.whole_run_supports(opts, round_p, picks, ranked, noisy_n)
        if consistent is not None and sds is not None:
            picks, sds, consistent = topk.above(opts, ranked, picks, sds, consistent, n_hat)
        spent += time.perf_counter() - t0
        keys = [tuple(ids_of(q.ids)) for q in picks]
        hits = sum(1 for key in keys if key in exact)
        precision.append(hits / len(keys) if keys else 1.0)
        recall.append(hits / len(exact) if exact else 1.0)
        released.append(len(keys))
        for j, q in enumerate(picks):
            if q.count > 0 and consistent is not None:
                rel_err.append(abs(consistent[j] - q.count) / q.count)
            if sds is not None and q.noisy_support is not None:
                covered.append(abs(q.noisy_support - q.count) <= INTERVAL_Z * sds[j])
        if bar is not None:
            bar.update(1)
    return {
        "mechanism": opts.mechanism,
        "eps": float(opts.eps),
        "min_support": float(opts.param("min_support")),
        "trials": trials,
        "true_frequent": len(exact),
        "precision": float(np.mean(precision)),
        "recall": float(np.mean(recall)),
        "median_rel_support_error": float(np.median(rel_err)) if rel_err else math.nan,
        "interval_coverage": float(np.mean(covered)) if covered else math.nan,
        "mean_released": float(np.mean(released)),
        "ms_per_run": 1000 * spent / trials,
    }


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


# One panel per question a person choosing a mechanism asks: (column, y label, is it a rate?)
_PANELS = {
    "top1": (
        ("p_top", "P(top): names a top-support itemset", True),
        ("none_rate", "none rate: answers none", True),
        ("mean_gap", "mean support gap c(1) - c(selected)\n(runs that name an itemset)", False),
    ),
    "topk": (
        ("precision", "precision of the released itemsets", True),
        ("fnr_at_k", "FNR@K: share of the true top K not released", True),
        ("mean_released", "itemsets released (mean)", False),
    ),
}
_MARKERS = ("o", "s", "^", "D", "v", "P", "X", "<", ">", "*")
_STYLES = ("-", "--", "-.", ":")


def plot_title(data: str, size: int, delta: str, neighbours: str, trials: int) -> str:
    """The plot's title: the data set and every public parameter the table depends on."""
    return (
        f"{data}: r = {size}, δ = {delta}, {neighbours} neighbours, {trials} trials per point\n"
        "NOT PRIVATE: evaluation on exact counts"
    )


def figure(table: pd.DataFrame, title: str) -> Any:
    """The evaluation as a matplotlib Figure: one panel per metric, one line per mechanism.

    Equal lines stay visible: each mechanism has its own marker and line style, and is drawn
    slightly offset (a small step along the log eps axis and up or down, said in the figure).
    Ticks are the evaluated eps values, as plain numbers.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib import ticker

    panels = _PANELS["topk" if "fnr_at_k" in table else "top1"]
    mechs = list(dict.fromkeys(table["mechanism"]))
    eps_values = sorted(set(float(e) for e in table["eps"]))
    fig, axes = plt.subplots(1, len(panels), figsize=(4.6 * len(panels) + 1.8, 4.4))
    spans = []  # each panel's y range: rates 0..1, the others 0..max (never a flat ±0.04 axis)
    for col, _, rate in panels:
        top = float(np.nanmax(table[col].astype(float))) if table[col].notna().any() else 0.0
        spans.append(1.0 if rate else max(1.0, top * 1.08 if math.isfinite(top) else 1.0))
    for i, mech in enumerate(mechs):
        part = table[table["mechanism"] == mech].sort_values("eps")
        shift = i - (len(mechs) - 1) / 2
        x = part["eps"].astype(float).to_numpy() * 10 ** (0.015 * shift)
        for ax, (col, _, _), span in zip(axes, panels, spans, strict=True):
            y = part[col].astype(float).to_numpy() + 0.007 * span * shift
            ax.plot(
                x,
                y,
                marker=_MARKERS[i % len(_MARKERS)],
                linestyle=_STYLES[i % len(_STYLES)],
                markersize=6,
                markerfacecolor="none" if i % 2 else None,
                label=str(mech),
            )
    for ax, (_, label, _), span in zip(axes, panels, spans, strict=True):
        ax.set_xscale("log")
        ax.set_xticks(eps_values)
        ax.xaxis.set_major_formatter(ticker.FuncFormatter(lambda v, _pos: f"{v:g}"))
        ax.xaxis.set_minor_locator(ticker.NullLocator())
        ax.set_xlim(min(eps_values) / 1.4, max(eps_values) * 1.4)
        ax.set_xlabel("epsilon")
        ax.set_ylabel(label, fontsize=9)
        ax.grid(True, alpha=0.3)
        ax.yaxis.set_major_formatter(ticker.FuncFormatter(lambda v, _pos: f"{v:g}"))
        ax.set_ylim(-0.07 * span, 1.07 * span)
    handles, labels = axes[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="center right", fontsize=8, title="mechanism")
    fig.suptitle(title, fontsize=10)
    fig.text(
        0.45,
        0.01,
        "each mechanism is drawn slightly offset (along eps, and up or down by 0.7% of the axis "
        "per mechanism) so that equal lines stay visible",
        ha="center",
        fontsize=7,
        color="0.4",
    )
    fig.tight_layout(rect=(0, 0.03, 0.87, 1))
    return fig


def plot(table: pd.DataFrame, path: str, title: str) -> None:
    """Write figure(table, title) as a PNG (matplotlib, the `plot` extra)."""
    import matplotlib.pyplot as plt

    fig = figure(table, title)
    fig.savefig(path, dpi=110)
    plt.close(fig)
