"""The library entry points: mine() on records, mine_file() on a path (what the CLI calls)."""

from __future__ import annotations

import itertools
import math
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

from dpfim.engines.local import SupportIndex
from dpfim.errors import ParameterError, memory_phase
from dpfim.ledger import margin_ledger
from dpfim.mechanisms import baselines, lmm, lmm_gap, lmm_tight
from dpfim.mechanisms.base import Outcome, RankedCounts
from dpfim.mechanisms.thresholds import gap_split, paper_split
from dpfim.params import (
    DEFAULT_ELL_MAX,
    check_delta,
    check_ell_max,
    check_eps,
    check_memory,
    check_size,
    fraction_to_float,
)
from dpfim.readers import (
    Records,
    check_source,
    from_transactions,
    read_records,
    read_universe,
    resolve_format,
    restrict,
    truncate,
)
from dpfim.result import build, utc_now
from dpfim.samplers.rng import RandomSource, resolve

MECHANISMS = (
    "lmm",
    "lmm-gap",
    "lmm-tight",
    "em",
    "noisy-max-laplace",
    "permute-and-flip",
    "stability",
    "choosing",
    "limited-domain",
)
# Baselines that need a finite universe (SPEC §6): they refuse to run without one.
FINITE_UNIVERSE = ("em", "noisy-max-laplace", "permute-and-flip")
# Their published analyses need counts that move together (docs/privacy.md §10, §16, §17).
ADD_REMOVE_ONLY = ("lmm-gap", "lmm-tight", "choosing", "limited-domain")
PURE = ("em", "noisy-max-laplace", "permute-and-flip")
DEFAULT_CANDIDATES = 10
NEIGHBOURS = ("replace", "add-remove")


@dataclass
class Diagnostics:
    """Curator-only facts about a run (exact, NOT private): printed with --verbose only."""

    timings: dict[str, float] = field(default_factory=dict)
    facts: dict[str, Any] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class Options:
    """Validated public parameters of one run."""

    size: int
    eps: Fraction
    delta: Fraction
    mechanism: str
    neighbours: str
    ell_max: int
    candidates: int = DEFAULT_CANDIDATES

    @property
    def spent_delta(self) -> Fraction:
        """The delta a run actually spends: 0 for the pure-DP baselines."""
        return Fraction(0) if self.mechanism in PURE else self.delta


def check_options(
    *,
    size: int,
    eps: str | int | Fraction,
    delta: str | int | Fraction,
    mechanism: str = "lmm",
    neighbours: str = "replace",
    ell_max: int = DEFAULT_ELL_MAX,
    candidates: int = DEFAULT_CANDIDATES,
    universe_given: bool = False,
    max_record_items: int | None = None,
) -> Options:
    """Validate every public parameter before any data is read (usage errors come first)."""
    if mechanism not in MECHANISMS:
        raise ParameterError(f"--mechanism must be one of {', '.join(MECHANISMS)}: {mechanism!r}")
    if neighbours not in NEIGHBOURS:
        raise ParameterError(f"--neighbours must be one of {', '.join(NEIGHBOURS)}: {neighbours!r}")
    if mechanism in ADD_REMOVE_ONLY and neighbours != "add-remove":
        raise ParameterError(
            f"--mechanism {mechanism} is valid only under add/remove neighbours: "
            "pass --neighbours add-remove (it then does not release n)"
        )
    if mechanism in FINITE_UNIVERSE and not universe_given:
        raise ParameterError(
            f"--mechanism {mechanism} needs a finite universe: declare the public vocabulary "
            "with --universe-items FILE"
        )
    if mechanism == "choosing" and max_record_items is None:
        raise ParameterError(
            "--mechanism choosing needs --max-record-items B (its growth bound is C(B, r))"
        )
    if candidates < 1:
        raise ParameterError(f"--candidates must be at least 1, got {candidates}")
    if mechanism == "choosing" and max_record_items is not None:
        growth = math.comb(max_record_items, check_size(size))
        baselines.check_choosing(check_eps(eps), check_delta(delta), growth)
    return Options(
        check_size(size),
        check_eps(eps),
        check_delta(delta),
        mechanism,
        neighbours,
        check_ell_max(ell_max),
        candidates,
    )


def mine(
    records: Records | Iterable[Iterable[str]],
    *,
    size: int = 2,
    eps: str | int | Fraction,
    delta: str | int | Fraction,
    mechanism: str = "lmm",
    neighbours: str = "replace",
    ell_max: int = DEFAULT_ELL_MAX,
    candidates: int = DEFAULT_CANDIDATES,
    max_record_items: int | None = None,
    universe: Sequence[str] | None = None,
    rng: RandomSource | int | None = None,
    fmt: str | None = None,
    progress: bool = False,
    diagnostics: Diagnostics | None = None,
    max_memory: int | str | None = None,
) -> dict[str, Any]:
    """The most frequent r-itemset under (eps, delta)-DP, as a dpfim.result/1 dict.

    records: a Records, or any iterable of transactions (iterables of item strings).
    universe: a declared public vocabulary (then records must not have been read with another).
    rng: None for the secure source, an int seed or a RandomSource for tests ("private": false).
    max_memory: the counting's memory budget in bytes or as "2G", "512M" (default: half the
    RAM, at most 8 GiB); exact counting that cannot fit raises ResourceError.
    """
    started = utc_now()  # before any data is read: the end time would carry the run time
    opts = check_options(
        size=size,
        eps=eps,
        delta=delta,
        mechanism=mechanism,
        neighbours=neighbours,
        ell_max=ell_max,
        candidates=candidates,
        universe_given=universe is not None,
        max_record_items=max_record_items,
    )
    budget = check_memory(max_memory)
    if not isinstance(records, Records):
        records = from_transactions(records, universe=universe)
    elif universe is not None:  # the vocabulary applies on every path (issue 9)
        records = restrict(records, universe)
    source, _ = resolve(rng)  # one source for truncation and mechanism
    if max_record_items is not None:
        if max_record_items < opts.size:
            raise ParameterError(
                f"max_record_items must be at least size ({opts.size}), got {max_record_items}"
            )
        records = truncate(records, max_record_items, source)
    return _mine(
        records,
        opts,
        universe,
        source,
        fmt,
        progress,
        diagnostics or Diagnostics(),
        max_record_items=max_record_items,
        started=started,
        max_memory=budget,
    )


def mine_file(
    source: str,
    *,
    fmt: str = "auto",
    sep: str | None = None,
    record_col: str | None = None,
    item_col: str | None = None,
    compression: str = "auto",
    max_record_items: int | None = None,
    universe_items: str | None = None,
    size: int = 2,
    eps: str | int | Fraction,
    delta: str | int | Fraction,
    mechanism: str = "lmm",
    neighbours: str = "replace",
    ell_max: int = DEFAULT_ELL_MAX,
    candidates: int = DEFAULT_CANDIDATES,
    seed: int | None = None,
    progress: bool = False,
    diagnostics: Diagnostics | None = None,
    reserve: Callable[[Options], None] | None = None,
    precheck: Callable[[Options], None] | None = None,
    max_memory: int | str | None = None,
) -> dict[str, Any]:
    """Read a transaction file (path or "-") and mine it; what `dpfim mine` runs.

    precheck: called with the validated options before the input is touched; the persistent
    ledger checks there, read-only, that the budget allows the spend (which depends on public
    parameters only), so an exhausted budget stops the run before any data is read.
    reserve: called with the validated options after the input has been read and before the
    mechanism runs; the persistent ledger reserves the spend there (and may refuse).
    max_memory: as in mine().
    """
    started = utc_now()  # before any data is read: the end time would carry the run time
    diag = diagnostics or Diagnostics()
    opts = check_options(
        size=size,
        eps=eps,
        delta=delta,
        mechanism=mechanism,
        neighbours=neighbours,
        ell_max=ell_max,
        candidates=candidates,
        universe_given=universe_items is not None,
        max_record_items=max_record_items,
    )
    if max_record_items is not None and max_record_items < opts.size:
        raise ParameterError(
            f"--max-record-items must be at least --size ({opts.size}), got {max_record_items}"
        )
    budget = check_memory(max_memory)
    long_cols = record_col is not None or item_col is not None
    check_source(source)
    decided = resolve_format(source, fmt, long_columns_given=long_cols)
    if precheck is not None:
        precheck(opts)
    universe = read_universe(universe_items) if universe_items is not None else None
    source_rng, _ = resolve(seed)
    t0 = time.perf_counter()
    with memory_phase("reading"):
        records = read_records(
            source,
            fmt=fmt,  # as given: an explicit --format basket silences the long-format warning
            sep=sep,
            record_col=record_col,
            item_col=item_col,
            compression=compression,
            max_record_items=max_record_items,
            universe=universe,
            rng=source_rng,
            progress=progress,
            warn=diag.warnings.append,
        )
    diag.timings["read"] = time.perf_counter() - t0
    if reserve is not None:
        reserve(opts)
    return _mine(
        records,
        opts,
        universe,
        source_rng if seed is not None else None,
        decided,
        progress,
        diag,
        max_record_items=max_record_items,
        started=started,
        max_memory=budget,
    )


def _mine(
    records: Records,
    opts: Options,
    universe: Sequence[str] | None,
    rng: RandomSource | int | None,
    fmt: str | None,
    progress: bool,
    diag: Diagnostics,
    *,
    max_record_items: int | None = None,
    started: str,
    max_memory: int | None = None,
) -> dict[str, Any]:
    source, private = resolve(rng)
    universe_size = None
    if universe is not None:
        vocab = len(records.items)
        if vocab < opts.size:
            raise ParameterError(
                f"--universe-items declares {vocab} items, fewer than --size {opts.size}"
            )
        universe_size = math.comb(vocab, opts.size)
    _curator_warnings(records, opts, diag)

    t0 = time.perf_counter()
    with memory_phase("counting"):  # the mechanism deepens the exact counts as it searches
        index = SupportIndex(records, opts.size, progress=progress, max_memory=max_memory)
        out, params_extra, ledger = run_mechanism(
            index, opts, source, universe_size, max_record_items=max_record_items
        )
    itemset = _name(out, index, records, opts.size, source, declared=universe is not None)
    diag.timings["count"] = index.seconds
    diag.timings["mechanism"] = time.perf_counter() - t0 - index.seconds
    diag.facts.update(
        {
            "memory budget (MiB)": index.max_memory >> 20,
            "counting passes over the records": index.passes,
            "peak RSS so far (MiB)": _peak_rss_mib(),
            "n": records.n,
            "itemsets enumerated": len(index.counts),
            "support threshold reached": index.threshold,
            "all nonzero itemsets enumerated (L known)": index.complete,
        }
    )
    if index.complete:
        diag.facts["L"] = len(index.counts)

    params: dict[str, Any] = {
        "size": opts.size,
        "eps": fraction_to_float(opts.eps),
        "delta": fraction_to_float(opts.delta),
        "mechanism": opts.mechanism,
        "neighbours": opts.neighbours,
        "format": fmt,
        "universe": "open"
        if universe is None
        else {
            "declared_items": len(records.items),
            "size": universe_size,
        },
        **params_extra,
    }
    if max_record_items is not None:
        params["max_record_items"] = max_record_items
    fields: dict[str, Any] = {"itemset": itemset}
    if out.noisy_max is not None:  # lmm only; lmm-gap has none and computes none
        fields["noisy_max"] = out.noisy_max
    if opts.mechanism in ("lmm", "lmm-gap", "lmm-tight"):
        fields["ell"] = "inf" if out.ell is None else out.ell
    if opts.neighbours == "replace":
        fields["n"] = records.n
        fields["n_note"] = (
            "n is public under replace-one neighbours; never released under add-remove"
        )
    return build(**fields, params=params, ledger=ledger, private=private, created=started)


def _peak_rss_mib() -> int:
    """This process's peak resident memory (Linux reports KiB, macOS bytes)."""
    import resource
    import sys

    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return int(peak >> 20 if sys.platform == "darwin" else peak >> 10)


def run_mechanism(
    counts: RankedCounts,
    opts: Options,
    rng: RandomSource,
    universe_size: int | None,
    *,
    max_record_items: int | None = None,
) -> tuple[Outcome, dict[str, Any], dict[str, Any]]:
    """Run opts.mechanism on ranked counts: (outcome, extra public params, ledger)."""
    name = opts.mechanism
    if name in ("lmm", "lmm-gap"):
        gap = name == "lmm-gap"
        split = (gap_split if gap else paper_split)(opts.eps, opts.delta)
        run = lmm_gap.run if gap else lmm.run
        out = run(counts, split, rng, ell_max=opts.ell_max, universe_size=universe_size)
        extra = {
            "ell_max": opts.ell_max,
            "split": {
                "alpha_m": str(split.alpha_m),
                "alpha_s": str(split.alpha_s),
                "alpha_a": str(split.alpha_a),
                "delta_m": str(split.delta_m),
                "delta_s": str(split.delta_s),
                "beta_times_e^(alpha_m+alpha_s)": str(split.delta_leak),
            },
        }
        return out, extra, margin_ledger(split, opts.neighbours, with_max=not gap)
    if name == lmm_tight.NAME:
        out = lmm_tight.run(
            counts, opts.eps, opts.delta, rng, ell_max=opts.ell_max, universe_size=universe_size
        )
        tight = lmm_tight.default_split(opts.eps, opts.delta)
        extra = {"ell_max": opts.ell_max, "split": lmm_tight.split_params(tight)}
        cost = lmm_tight.cost(opts.eps, opts.delta)
        return out, extra, baselines.cost_ledger(cost, opts.neighbours)
    if name in FINITE_UNIVERSE:
        if universe_size is None:
            raise ParameterError(f"--mechanism {name} needs a finite universe")
        runner = {
            "em": baselines.run_em,
            "noisy-max-laplace": baselines.run_noisy_max_laplace,
            "permute-and-flip": baselines.run_permute_and_flip,
        }[name]
        out = runner(counts, opts.eps, opts.neighbours, universe_size, rng)
        cost = baselines.pure_cost(name, opts.eps, opts.neighbours)
        return out, {}, baselines.cost_ledger(cost, opts.neighbours)
    if name == "stability":
        out = baselines.run_stability(counts, opts.eps, opts.delta, rng)
        cost = baselines.stability_cost(opts.eps, opts.delta)
        extra = {"threshold": baselines.stability_threshold(opts.eps, opts.delta)}
        return out, extra, baselines.cost_ledger(cost, opts.neighbours)
    if name == "choosing":
        if max_record_items is None:
            raise ParameterError("--mechanism choosing needs --max-record-items B")
        growth = math.comb(max_record_items, opts.size)
        out = baselines.run_choosing(counts, opts.eps, opts.delta, growth, rng)
        cost = baselines.choosing_cost(opts.eps, opts.delta, growth)
        extra = {
            "growth_bound": growth,
            "threshold": baselines.choosing_threshold(opts.eps, opts.delta, growth),
        }
        return out, extra, baselines.cost_ledger(cost, opts.neighbours)
    if name == "limited-domain":
        out = baselines.run_limited_domain(counts, opts.eps, opts.delta, opts.candidates, rng)
        cost = baselines.limited_domain_cost(opts.eps, opts.delta, opts.candidates)
        return out, {"candidates": opts.candidates}, baselines.cost_ledger(cost, opts.neighbours)
    raise ParameterError(f"unknown --mechanism {name}")


def _name(
    out: Outcome,
    index: SupportIndex,
    records: Records,
    size: int,
    rng: RandomSource,
    *,
    declared: bool,
) -> list[str] | None:
    """The selected itemset as sorted canonical strings, or None for the answer "none".

    A zero-count pick is named only in a declared universe. In the open universe it is "none":
    the limit argument of docs/privacy.md §6 covers exactly that, and naming a zero-count
    r-subset of the data's items would reveal which items occur (issue 9).
    """
    if out.index is not None:
        ids = index.itemsets[out.index]
    elif out.zero_pick and declared:
        ids = _random_zero_subset(index, len(records.items), size, rng)
    else:
        return None
    return sort_items(records.items[int(i)] for i in ids)


def sort_items(items: Iterable[str]) -> list[str]:
    """The released order: numerically when every item is a decimal integer (FIMI ids), else
    by string. Depends on the released items only (post-processing)."""
    names = list(items)
    if all(s.isascii() and s.isdigit() for s in names):
        return sorted(names, key=lambda s: (int(s), s))
    return sorted(names)


def _random_zero_subset(index: SupportIndex, vocab: int, size: int, rng: RandomSource) -> list[int]:
    """A uniformly random r-subset of the declared vocabulary with support 0 (by rejection).

    Only reached when the search passed beyond every nonzero itemset, so at least one exists and
    every nonzero one is known. When zero-count subsets are rare, enumerate them instead.
    """
    universe = math.comb(vocab, size)
    nonzero = len(index.counts)
    if (universe - nonzero) * 64 < universe:
        known = {tuple(int(i) for i in row) for row in index.itemsets}
        zeros = [c for c in itertools.combinations(range(vocab), size) if c not in known]
        return list(zeros[rng.randbelow(len(zeros))])
    while True:
        chosen: list[int] = []
        pool = list(range(vocab))
        for k in range(size):  # partial Fisher-Yates: a uniform r-subset
            j = k + rng.randbelow(vocab - k)
            pool[k], pool[j] = pool[j], pool[k]
            chosen.append(pool[k])
        if index.support(sorted(chosen)) == 0:
            return sorted(chosen)


def _curator_warnings(records: Records, opts: Options, diag: Diagnostics) -> None:
    """Curator-only warnings (stderr): they depend on the data and are not private."""
    n = records.n
    lengths = records.indptr[1:] - records.indptr[:-1]
    if n == 0 or not (lengths >= opts.size).any():
        diag.warnings.append(
            "no usable records (empty input, or every record has fewer than "
            f"{opts.size} items); the mechanism still ran and its answer is almost surely none"
        )
    if opts.neighbours == "replace" and n > 0 and opts.delta >= Fraction(1, n):
        diag.warnings.append(
            f"delta = {float(opts.delta):g} is at least 1/n for this data; such a delta allows "
            "releasing a whole record with probability delta. Use a smaller --delta"
        )
