"""The library entry points: mine() on records, mine_file() on a path (what the CLI calls)."""

from __future__ import annotations

import itertools
import math
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import TYPE_CHECKING, Any

import numpy as np

from dpfim import topk
from dpfim.engines.local import SupportIndex, default_max_memory
from dpfim.errors import ParameterError, memory_phase
from dpfim.mechanisms import registry
from dpfim.mechanisms.base import Outcome, RankedCounts
from dpfim.params import (
    DEFAULT_ELL_MAX,
    check_delta,
    check_ell_max,
    check_eps,
    check_fraction,
    check_memory,
    check_size,
    fraction_to_float,
)
from dpfim.readers import (
    Records,
    check_source,
    default_sep,
    from_transactions,
    read_records,
    read_universe,
    resolve_format,
    restrict,
    truncate,
)
from dpfim.result import build, utc_now
from dpfim.samplers.rng import RandomSource, resolve
from dpfim.views import Identified, Merged, ids_of

# Read from the registry (dpfim/mechanisms/registry.py); kept as names for the Python API.
MECHANISMS = registry.NAMES
FINITE_UNIVERSE = tuple(n for n, s in registry.REGISTRY.items() if s.needs_vocabulary)
ADD_REMOVE_ONLY = tuple(n for n, s in registry.REGISTRY.items() if "replace" not in s.neighbours)
PURE = tuple(n for n, s in registry.REGISTRY.items() if s.pure)

if TYPE_CHECKING:
    from dpfim.engines.spark import SparkCounts
DEFAULT_CANDIDATES = 10
NEIGHBOURS = ("replace", "add-remove")
ENGINES = ("local", "spark")


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
    top: int = 1
    sizes: tuple[int, ...] = ()  # several sizes ranked together (--sizes); () means (size,)
    supports: bool = False
    support_share: Fraction = topk.DEFAULT_SUPPORT_SHARE

    @property
    def spent_delta(self) -> Fraction:
        """The delta a run actually spends: 0 for the pure-DP baselines."""
        return Fraction(0) if registry.get(self.mechanism).pure else self.delta

    @property
    def all_sizes(self) -> tuple[int, ...]:
        return self.sizes or (self.size,)

    def public(self, universe_size: int | None, max_record_items: int | None) -> registry.Public:
        """The mechanism's public parameters for the selection (its share of eps)."""
        eps_sel, _ = topk.shares(self.eps, self.supports, self.support_share)
        return registry.Public(
            eps_sel,
            self.delta,
            self.all_sizes,
            self.neighbours,
            self.ell_max,
            self.candidates,
            max_record_items,
            universe_size,
        )


def check_options(
    *,
    size: int | None,
    eps: str | int | Fraction,
    delta: str | int | Fraction,
    mechanism: str = "lmm",
    neighbours: str = "replace",
    ell_max: int = DEFAULT_ELL_MAX,
    candidates: int = DEFAULT_CANDIDATES,
    universe_given: bool = False,
    max_record_items: int | None = None,
    top: int = 1,
    sizes: str | Sequence[int] | None = None,
    supports: bool = False,
    support_share: str | Fraction | None = None,
) -> Options:
    """Validate every public parameter before any data is read (usage errors come first)."""
    if mechanism not in registry.REGISTRY:
        raise ParameterError(f"--mechanism must be one of {', '.join(MECHANISMS)}: {mechanism!r}")
    if neighbours not in NEIGHBOURS:
        raise ParameterError(f"--neighbours must be one of {', '.join(NEIGHBOURS)}: {neighbours!r}")
    spec = registry.get(mechanism)
    if neighbours not in spec.neighbours:
        raise ParameterError(
            f"--mechanism {mechanism} is valid only under add/remove neighbours: "
            "pass --neighbours add-remove (it then does not release n)"
        )
    if spec.needs_vocabulary and not universe_given:
        raise ParameterError(
            f"--mechanism {mechanism} needs a finite universe: declare the public vocabulary "
            "with --universe-items FILE"
        )
    if spec.needs_record_bound and max_record_items is None:
        raise ParameterError(
            f"--mechanism {mechanism} needs --max-record-items B (its growth bound is C(B, r))"
        )
    if candidates < 1:
        raise ParameterError(f"--candidates must be at least 1, got {candidates}")
    if isinstance(top, bool) or not isinstance(top, int) or not 1 <= top <= topk.MAX_TOP:
        raise ParameterError(f"--top must be an integer from 1 to {topk.MAX_TOP}, got {top!r}")
    if sizes is not None and size is not None:
        raise ParameterError("give --size or --sizes, not both")
    parsed = () if sizes is None else parse_sizes(sizes)
    if support_share is not None and not supports:
        raise ParameterError("--support-share needs --supports")
    share = topk.DEFAULT_SUPPORT_SHARE
    if support_share is not None:
        share = check_fraction(support_share, "--support-share")
        if not 0 < share < 1:
            raise ParameterError(f"--support-share must be in (0, 1), got {support_share}")
    opts = Options(
        check_size(parsed[0] if parsed else 2 if size is None else size),
        check_eps(eps),
        check_delta(delta),
        mechanism,
        neighbours,
        check_ell_max(ell_max),
        candidates,
        top,
        parsed if len(parsed) > 1 else (),
        supports,
        share,
    )
    if max_record_items is not None and max_record_items < max(opts.all_sizes):
        raise ParameterError(
            f"--max-record-items must be at least --size ({max(opts.all_sizes)}), "
            f"got {max_record_items}"
        )
    if spec.check is not None and (max_record_items is not None or not spec.needs_record_bound):
        # its proof's preconditions, at the (eps, delta) each selection round really gets
        p = opts.public(None, max_record_items)
        spec.check(p.scaled(p.eps / opts.top, p.delta / opts.top))
    return opts


def none_hint(opts: Options, max_record_items: int | None = None) -> str:
    """The curator's hint after a "none" answer: the chosen mechanism's own margin, at the
    (eps, delta) one selection round gets. Public parameters only."""
    p = opts.public(None, max_record_items)
    round_p = p.scaled(p.eps / opts.top, p.delta / opts.top)
    sizes = "/".join(map(str, opts.all_sizes))
    hint = registry.none_hint(opts.mechanism, round_p, f"{sizes}-itemset")
    if opts.top > 1:
        hint += f" (with --top {opts.top} each round gets eps/{opts.top}, delta/{opts.top})"
    return hint


def parse_sizes(text: str | Sequence[int]) -> tuple[int, ...]:
    """--sizes "2,3" or "1-3" (or a sequence of ints): distinct sizes, ascending."""
    if not isinstance(text, str):
        values = [check_size(int(v)) for v in text]
    else:
        values = []
        for part in (t.strip() for t in text.split(",")):
            lo, dash, hi = part.partition("-")
            try:
                bounds = (int(lo), int(hi)) if dash else (int(part), int(part))
            except ValueError:
                raise ParameterError(f"--sizes must be like 2,3 or 1-3, got {text!r}") from None
            if bounds[0] > bounds[1]:
                raise ParameterError(f"--sizes: empty range {part!r}")
            values.extend(check_size(v) for v in range(bounds[0], bounds[1] + 1))
    if not values:
        raise ParameterError("--sizes: give at least one size")
    return tuple(sorted(set(values)))


def mine(
    records: Records | Iterable[Iterable[str]],
    *,
    size: int | None = None,
    sizes: str | Sequence[int] | None = None,
    top: int = 1,
    supports: bool = False,
    support_share: str | Fraction | None = None,
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
    """The most frequent r-itemset (or the top K, of one or several sizes) under
    (eps, delta)-DP, as a dpfim.result/1 dict.

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
        top=top,
        sizes=sizes,
        supports=supports,
        support_share=support_share,
    )
    budget = check_memory(max_memory)
    if not isinstance(records, Records):
        records = from_transactions(records, universe=universe)
    elif universe is not None:  # the vocabulary applies on every path (issue 9)
        records = restrict(records, universe)
    source, _ = resolve(rng)  # one source for truncation and mechanism
    if max_record_items is not None:
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
    size: int | None = None,
    sizes: str | Sequence[int] | None = None,
    top: int = 1,
    supports: bool = False,
    support_share: str | Fraction | None = None,
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
    engine: str = "local",
    spark_master: str | None = None,
    spark_conf: Mapping[str, str] | None = None,
    precheck: Callable[[Options], None] | None = None,
    max_memory: int | str | None = None,
) -> dict[str, Any]:
    """Read a transaction file (path or "-") and mine it; what `dpfim mine` runs.

    precheck: called with the validated options before the input is touched; the persistent
    ledger checks there, read-only, that the budget allows the spend (which depends on public
    parameters only), so an exhausted budget stops the run before any data is read.
    reserve: called with the validated options after the input has been read and before the
    mechanism runs; the persistent ledger reserves the spend there (and may refuse).
    engine: "local", or "spark" (the `spark` extra): the file is read and counted by Spark
    (spark_master, spark_conf: the session), the mechanism runs here, unchanged.
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
        top=top,
        sizes=sizes,
        supports=supports,
        support_share=support_share,
    )
    if engine not in ENGINES:
        raise ParameterError(f"--engine must be one of {', '.join(ENGINES)}: {engine!r}")
    if engine == "spark" and len(opts.all_sizes) > 1:
        raise ParameterError("--sizes with --engine spark is not supported yet: run one --size")
    budget = check_memory(max_memory)
    long_cols = record_col is not None or item_col is not None
    if engine == "spark":
        from dpfim.engines import spark

        spark.check_source(source, compression)
    else:
        check_source(source)
    decided = resolve_format(source, fmt, long_columns_given=long_cols)
    if precheck is not None:
        precheck(opts)
    universe = read_universe(universe_items) if universe_items is not None else None
    source_rng, _ = resolve(seed)
    t0 = time.perf_counter()
    data: Records | SparkCounts
    if engine == "spark":
        data = spark.count_file(
            spark.SparkInput(
                source,
                decided,
                default_sep(source, sep),
                record_col,
                item_col,
                universe,
                max_record_items,
                seed,
            ),
            opts.size,
            master=spark_master,
            conf=spark_conf,
            timings=diag.timings,
        )
    else:
        with memory_phase("reading"):
            data = read_records(
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
    try:
        if reserve is not None:
            reserve(opts)
        return _mine(
            data,
            opts,
            universe,
            source_rng if seed is not None else None,
            decided,
            progress,
            diag,
            max_record_items=max_record_items,
            started=started,
            engine=engine,
            max_memory=budget,
        )
    finally:
        if not isinstance(data, Records):
            data.close()


def _mine(
    data: Records | SparkCounts,
    opts: Options,
    universe: Sequence[str] | None,
    rng: RandomSource | int | None,
    fmt: str | None,
    progress: bool,
    diag: Diagnostics,
    *,
    max_record_items: int | None = None,
    started: str,
    engine: str = "local",
    max_memory: int | None = None,
) -> dict[str, Any]:
    """Count `data` (records, or counts an engine has prepared) and run the mechanism."""
    source, private = resolve(rng)
    sizes = opts.all_sizes
    universe_size = None
    if isinstance(data, Records):
        n, usable = data.n, int((np.diff(data.indptr) >= min(sizes)).sum())
    else:
        n, usable = data.n, data.usable
    if universe is not None:
        vocab = len(data.items)
        if vocab < max(sizes):
            raise ParameterError(
                f"--universe-items declares {vocab} items, fewer than --size {max(sizes)}"
            )
        universe_size = sum(math.comb(vocab, r) for r in sizes)
    _curator_warnings(n, usable, opts, diag, declared=universe is not None)

    t0 = time.perf_counter()
    with memory_phase("counting"):  # the mechanism deepens the exact counts as it searches
        engines: list[Any] = [data]  # an engine's prepared counts (one size: mine_file checks)
        if isinstance(data, Records):
            share = _memory_share(data, max_memory, len(sizes))
            engines = [SupportIndex(data, r, progress=progress, max_memory=share) for r in sizes]
        index: Any = engines[0] if len(engines) == 1 else Merged(engines)
        if opts.top == 1 and not opts.supports and len(sizes) == 1:
            out, params_extra, ledger = run_mechanism(
                index, opts, source, universe_size, max_record_items=max_record_items
            )
            itemset = _name(
                out, index, data.items, opts.size, source, declared=universe is not None
            )
            fields: dict[str, Any] = {"itemset": itemset}
            fields.update(_round_fields(registry.get(opts.mechanism), out))
        else:
            fields, params_extra, ledger = _release_topk(
                index,
                data.items,
                opts,
                source,
                universe_size,
                max_record_items,
                fast_support=isinstance(data, Records),
            )
    if isinstance(data, Records):
        counting = sum(e.seconds for e in engines)
        diag.timings["count"] = counting
        diag.timings["mechanism"] = time.perf_counter() - t0 - counting
        diag.facts["memory budget (MiB)"] = (max_memory or default_max_memory()) >> 20
        diag.facts["counting passes over the records"] = sum(e.passes for e in engines)
    else:
        diag.timings["count+mechanism"] = time.perf_counter() - t0
    diag.facts.update(
        {
            "peak RSS so far (MiB)": _peak_rss_mib(),
            "n": n,
            "itemsets enumerated": len(index.counts),
            "support threshold reached": index.threshold,
            "all nonzero itemsets enumerated (L known)": index.complete,
        }
    )
    if index.complete:
        diag.facts["L"] = len(index.counts)

    params: dict[str, Any] = {
        **({"size": opts.size} if len(sizes) == 1 else {"sizes": list(sizes)}),
        "eps": fraction_to_float(opts.eps),
        "delta": fraction_to_float(opts.delta),
        "mechanism": opts.mechanism,
        "neighbours": opts.neighbours,
        "format": fmt,
        "engine": engine,
        "universe": "open"
        if universe is None
        else {
            "declared_items": len(data.items),
            "size": universe_size,
        },
        **params_extra,
    }
    if max_record_items is not None:
        params["max_record_items"] = max_record_items
    if opts.neighbours == "replace":
        fields["n"] = n
        fields["n_note"] = (
            "n is public under replace-one neighbours; never released under add-remove"
        )
    return build(**fields, params=params, ledger=ledger, private=private, created=started)


def _memory_share(records: Records, max_memory: int | None, engines: int) -> int:
    """Each size's counting engine's part of the one --max-memory budget: the records are held
    once and shared, the rest is split evenly (with --sizes 1-3 three engines count at once)."""
    total = default_max_memory() if max_memory is None else max_memory
    if engines == 1:
        return total
    data_bytes = records.indptr.nbytes + records.indices.nbytes
    return data_bytes + max(0, total - data_bytes) // engines


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
    """Run opts.mechanism once on ranked counts: (outcome, extra public params, ledger)."""
    spec = registry.get(opts.mechanism)
    if spec.needs_vocabulary and universe_size is None:
        raise ParameterError(f"--mechanism {spec.name} needs a finite universe")
    if spec.needs_record_bound and max_record_items is None:
        raise ParameterError(f"--mechanism {spec.name} needs --max-record-items B")
    p = opts.public(universe_size, max_record_items)
    return spec.run(counts, p, rng), spec.extra(p), spec.ledger_of(p)


def _release_topk(
    counts: Identified,
    items: Sequence[str],
    opts: Options,
    rng: RandomSource,
    universe_size: int | None,
    max_record_items: int | None,
    *,
    fast_support: bool = False,
) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
    """--top K, --sizes or --supports: (result fields, extra public params, composed ledger).

    fast_support: the engine answers single supports quickly (local), so report-noisy-max
    draws the itemsets of low count by identity instead of having them all counted."""
    spec = registry.get(opts.mechanism)
    p = opts.public(universe_size, max_record_items)
    namer: topk.ZeroNamer | None = None
    declared: topk.DeclaredUniverse | None = None
    if universe_size is not None:
        vocab, sizes = len(items), opts.all_sizes

        def namer(view: Any, source: RandomSource) -> tuple[int, ...]:
            return topk.random_zero_itemset(view, vocab, sizes, source, _support_of(counts))

        if fast_support:
            declared = topk.DeclaredUniverse(vocab, tuple(sizes), _support_of(counts))

    picks, last = topk.peel(counts, spec, p, opts.top, rng, namer, declared)
    _, eps_sup = topk.shares(opts.eps, opts.supports, opts.support_share)
    if opts.supports:
        picks = topk.add_supports(picks, eps_sup, rng)
    round_p = p.scaled(p.eps / opts.top, p.delta / opts.top)
    extra = {"top": opts.top, **spec.extra(round_p)}
    if opts.supports:
        extra["support_share"] = str(opts.support_share)
    entries = []
    for q in picks:
        entry: dict[str, Any] = {"rank": q.rank, "items": _names(q.ids, items)}
        if opts.supports:
            entry["noisy_support"] = q.noisy_support
        entry.update(_round_fields(spec, q.outcome))
        entries.append(entry)
    fields: dict[str, Any]
    if opts.top == 1:
        fields = {"itemset": entries[0]["items"] if entries else None}
        if opts.supports:
            fields["noisy_support"] = picks[0].noisy_support if picks else None
        fields.update(_round_fields(spec, picks[0].outcome if picks else last))
    else:
        fields = {"itemsets": entries}
    return fields, extra, topk.ledger(spec, p, opts.top, eps_sup)


def _round_fields(spec: registry.Spec, out: Outcome | None) -> dict[str, Any]:
    """What a mechanism releases besides the itemset (its noisy max, its stopping rank)."""
    fields: dict[str, Any] = {}
    if out is None:
        return fields
    if "noisy_max" in spec.releases and out.noisy_max is not None:
        fields["noisy_max"] = out.noisy_max
    if "ell" in spec.releases:
        fields["ell"] = "inf" if out.ell is None else out.ell
    return fields


def _support_of(counts: Any) -> Callable[[list[int]], int]:
    def support(ids: list[int]) -> int:
        return int(counts.support(ids))

    return support


def _names(ids: Sequence[int], items: Sequence[str]) -> list[str]:
    return sort_items(items[i] for i in ids_of(ids))


def _name(
    out: Outcome,
    index: SupportIndex | SparkCounts,
    items: Sequence[str],
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
        ids = _random_zero_subset(index, len(items), size, rng)
    else:
        return None
    return sort_items(items[int(i)] for i in ids)


def sort_items(items: Iterable[str]) -> list[str]:
    """The released order: numerically when every item is a decimal integer (FIMI ids), else
    by string. Depends on the released items only (post-processing)."""
    names = list(items)
    if all(s.isascii() and s.isdigit() for s in names):
        return sorted(names, key=lambda s: (int(s), s))
    return sorted(names)


def _random_zero_subset(
    index: SupportIndex | SparkCounts, vocab: int, size: int, rng: RandomSource
) -> list[int]:
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


def _curator_warnings(
    n: int, usable: int, opts: Options, diag: Diagnostics, *, declared: bool = False
) -> None:
    """Curator-only warnings (stderr, --verbose): they depend on the data and are not private."""
    smallest = min(opts.all_sizes)
    if n == 0 or usable == 0:
        answer = (  # a declared vocabulary names a zero-count pick (SPEC §4)
            "none or a uniformly random itemset of the declared vocabulary (every count is 0)"
            if declared
            else "almost surely none"
        )
        diag.warnings.append(
            "no usable records (empty input, or every record has fewer than "
            f"{smallest} items, after dropping items outside a declared vocabulary); the "
            f"mechanism still ran and its answer is {answer}"
        )
    if opts.neighbours == "replace" and n > 0 and opts.delta >= Fraction(1, n):
        diag.warnings.append(
            f"delta = {float(opts.delta):g} is at least 1/n for this data; such a delta allows "
            "releasing a whole record with probability delta. Use a smaller --delta"
        )
