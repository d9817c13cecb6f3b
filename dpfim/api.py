"""The library entry points: mine() on records, mine_file() on a path (what the CLI calls).

Both validate one request (dpfim/request.py), open the counts through the engine table
(dpfim/engines: `open_engine`), and release through the one release path (dpfim/release.py).
No engine is named here.
"""

from __future__ import annotations

import inspect
import math
import sys
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from fractions import Fraction
from functools import wraps
from typing import TYPE_CHECKING, Any, ParamSpec, TypeVar

from dpfim import engines, parameters
from dpfim.choices import (
    DEFAULT_FREQUENT_SIZES,
    DEFAULT_RULES_SIZES,
    DEFAULT_RULES_TOP,
)
from dpfim.counts import Counts
from dpfim.engines import Opened
from dpfim.engines.local import count_records
from dpfim.errors import InputArgumentError, ParameterError, memory_phase
from dpfim.inputs import EngineSpec, InputSpec
from dpfim.mechanisms import registry
from dpfim.mechanisms.base import Outcome, RankedCounts
from dpfim.params import DEFAULT_ELL_MAX, Number, check_memory, fraction_to_float
from dpfim.progress import Setting
from dpfim.readers import (
    Records,
    read_universe,
    restrict,
    truncate,
)
from dpfim.readers.frames import to_records
from dpfim.readers.records import truncation_key
from dpfim.release import Release, release, sort_items
from dpfim.request import (
    ADD_REMOVE_ONLY,
    DEFAULT_CANDIDATES,
    FINITE_UNIVERSE,
    MECHANISMS,
    NEIGHBOURS,
    PURE,
    Options,
    check_options,
    none_hint,
    parse_sizes,
)
from dpfim.result import (
    RULES_SCHEMA,
    SCHEMA,
    build,
    release_fields,
    selected_entries,
    utc_now,
)
from dpfim.samplers.rng import RandomSource, resolve

if TYPE_CHECKING:
    from dpfim.rules import RulesRequest

ENGINES = engines.NAMES
__all__ = [
    "ADD_REMOVE_ONLY",
    "DEFAULT_CANDIDATES",
    "ENGINES",
    "FINITE_UNIVERSE",
    "MECHANISMS",
    "NEIGHBOURS",
    "PURE",
    "Diagnostics",
    "Options",
    "association_rules",
    "check_options",
    "frequent_itemsets",
    "mine",
    "mine_file",
    "none_hint",
    "parse_sizes",
    "rules_file",
    "run_mechanism",
    "sort_items",
]


_P = ParamSpec("_P")
_R = TypeVar("_R")
# mine()'s keywords where the command line's flag has another name
_IN_MEMORY_NAMES = {"--universe-items": "universe", "--seed": "rng"}


def _python_messages(func: Callable[_P, _R]) -> Callable[_P, _R]:
    """A usage error raised inside an in-memory entry point names the Python keyword, not the
    command line's flag (`eps must be > 0`); mine_file and rules_file, which the CLI runs,
    keep the flags (the CLI's messages are unchanged)."""

    @wraps(func)
    def call(*args: _P.args, **kwargs: _P.kwargs) -> _R:
        try:
            return func(*args, **kwargs)
        except ParameterError as exc:
            text = str(exc)
            named = parameters.for_python(text, _IN_MEMORY_NAMES)
            if named != text:
                exc.args = (named, *exc.args[1:])
            raise

    return call


@dataclass
class Diagnostics:
    """Curator-only facts about a run (exact, NOT private): printed with --verbose only."""

    timings: dict[str, float] = field(default_factory=dict)
    facts: dict[str, Any] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)


@_python_messages
def mine(
    records: Records | Iterable[Iterable[str]] | Any,
    *,
    record_col: str | None = None,
    item_col: str | None = None,
    items_col: str | None = None,
    size: int | None = None,
    sizes: str | Sequence[int] | None = None,
    top: int = 1,
    supports: bool = False,
    support_share: str | Fraction | None = None,
    eps: Number,
    delta: Number,
    mechanism: str | None = None,
    neighbours: str = "replace",
    ell_max: int = DEFAULT_ELL_MAX,
    candidates: int = DEFAULT_CANDIDATES,
    max_record_items: int | str | None = None,
    universe: Sequence[str] | None = None,
    rng: RandomSource | int | None = None,
    fmt: str | None = None,
    progress: Setting = False,
    diagnostics: Diagnostics | None = None,
    max_memory: int | str | None = None,
    accountant: str = "basic",
    _rules: RulesRequest | None = None,
    _keep: dict[str, Any] | None = None,
    **more: Any,
) -> dict[str, Any]:
    """The most frequent r-itemset (or the top K, of one or several sizes) under
    (eps, delta)-DP, as a dpfim.result/1 dict.

    records: an iterable of baskets (iterables of items), a pandas one-hot DataFrame (bool or
    0/1 columns named by item, dense or sparse: mlxtend's TransactionEncoder output), a long
    DataFrame with record_col= and item_col=, a pandas Series of baskets, or a Records. The
    shape is decided from the type and dtypes only; any other shape raises InputShapeError (a
    TypeError), a bad value inside a frame RecordValueError (a ValueError). One record (one
    row of a one-hot frame, one record id of a long frame) is the privacy unit; a one-hot
    frame's columns are not a declared vocabulary (all-zero columns are absent items).
    A pyspark.sql.DataFrame is read one basket a row from its array<string> column `items_col`
    (default "items", as pyspark.ml.fpm.FPGrowth's itemsCol) and counted by the Spark engine in
    the frame's own session: its records stay on the executors (engines/spark/driver.py).
    eps, delta: text or int (exact decimals), Fraction or Decimal (exact), or float (read by
    its shortest decimal representation: 0.1 is exactly 1/10).
    universe: a declared public vocabulary (then records must not have been read with another).
    rng: None for the secure source, an int seed or a RandomSource for tests ("private": false).
    max_record_items: records keep at most this many items, a uniformly random subset (default
    DEFAULT_MAX_RECORD_ITEMS = 64; NO_CAP = "none" opts out, and memory failures then depend on
    the data: docs/privacy.md, "Record-length cap").
    max_memory: the counting's memory budget in bytes or as "2G", "512M" (default: half the
    RAM, at most 8 GiB); exact counting that cannot fit raises ResourceError.
    accountant: how top=K splits (eps, delta) among the rounds: "basic" (eps/K, delta/K each)
    or "tight" (the largest per-round eps whose K-fold adaptive composition stays within
    (eps, delta), docs/privacy.md §20.4; needs `pip install 'dpfim[accounting]'`).
    progress: bars on stderr (dpfim/progress.py). True or "public": only what public parameters
    decide (no counting bar here); "exact": the exact figures, curator-only (what -v shows).
    """
    started = utc_now()  # before any data is read: the end time would carry the run time
    more = parameters.more_keywords(parameters.MINE, "mine", _named(), more)
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
        closure_share=None if _rules is None else _rules.closure_share,
        accountant=accountant,
        closure_noise=None if _rules is None else _rules.noise,
        more=more,
    )
    if _is_spark_frame(records):
        return _mine_frame(
            records,
            opts,
            items_col=items_col,
            long=record_col is not None or item_col is not None,
            max_memory=max_memory,
            universe=universe,
            rng=rng,
            fmt=fmt,
            progress=progress,
            diag=diagnostics or Diagnostics(),
            started=started,
            rules=_rules,
            keep=_keep,
        )
    if items_col is not None:
        raise InputArgumentError(
            "items_col= names the array column of a Spark DataFrame; for a long pandas "
            "DataFrame pass record_col= and item_col="
        )
    budget = check_memory(max_memory)
    if not isinstance(records, Records):
        records = to_records(records, record_col=record_col, item_col=item_col, universe=universe)
    elif universe is not None:  # the vocabulary applies on every path (issue 9)
        records = restrict(records, universe)
    source, _ = resolve(rng)
    if opts.max_record_items is not None:
        if isinstance(rng, int):
            key = truncation_key(seed=rng)  # as mine_file and every engine derive it
        else:
            key = truncation_key(rng=source if rng is not None else None)
        records = truncate(records, opts.max_record_items, key)
    with memory_phase("counting"):
        opened = count_records(records, opts.all_sizes, max_memory=budget, progress=progress)
    return _mine(
        opened,
        opts,
        universe,
        source,
        fmt,
        diagnostics or Diagnostics(),
        started=started,
        engine="local",
        rules=_rules,
        keep=_keep,
    )


def _is_spark_frame(data: object) -> bool:
    """A pyspark.sql.DataFrame (only if pyspark is imported: no import here)."""
    sql = sys.modules.get("pyspark.sql")
    return sql is not None and isinstance(data, sql.DataFrame)


def _mine_frame(
    frame: Any,
    opts: Options,
    *,
    items_col: str | None,
    long: bool,
    max_memory: int | str | None,
    universe: Sequence[str] | None,
    rng: RandomSource | int | None,
    fmt: str | None,
    progress: Setting,
    diag: Diagnostics,
    started: str,
    rules: RulesRequest | None,
    keep: dict[str, Any] | None,
) -> dict[str, Any]:
    """mine() on a Spark DataFrame of baskets: counted by the Spark engine in the frame's own
    session (the records stay on the executors), released here as for any engine."""
    if long:
        raise InputArgumentError(
            "a Spark DataFrame is read one basket a row from its array column items_col=; a "
            "long one (record_col=/item_col=) is not read yet: group it first, e.g. "
            "df.groupBy(record).agg(F.collect_list(item).alias('items'))"
        )
    if max_memory is not None:
        raise ParameterError(
            "max_memory applies to the local engine; a Spark DataFrame is counted on Spark"
        )
    engine_spec = EngineSpec("spark", progress=progress)
    given = InputSpec(
        "<DataFrame>",
        "auto",
        max_record_items=opts.max_record_items,
        universe=tuple(universe) if universe is not None else None,
        seed=rng if isinstance(rng, int) and not isinstance(rng, bool) else None,
        frame=frame,
        items_col=items_col or "items",
    )
    inp = engines.prepare(engine_spec, given)
    source, _ = resolve(rng)
    opened = engines.open_engine(
        engine_spec, inp, opts.all_sizes, source, warn=diag.warnings.append
    )
    try:
        return _mine(
            opened,
            opts,
            universe,
            source,
            fmt,
            diag,
            started=started,
            engine=engine_spec.name,
            rules=rules,
            keep=keep,
        )
    finally:
        opened.close()


def _named() -> frozenset[str]:
    """The table parameters mine() or mine_file() name in their own signatures: every other
    library row of the table reaches the request through **more (Options.param)."""
    return frozenset(inspect.signature(mine_file).parameters) | frozenset(
        inspect.signature(mine).parameters
    )


def mine_file(
    source: str,
    *,
    fmt: str = "auto",
    sep: str | None = None,
    record_col: str | None = None,
    item_col: str | None = None,
    compression: str = "auto",
    max_record_items: int | str | None = None,
    universe_items: str | None = None,
    size: int | None = None,
    sizes: str | Sequence[int] | None = None,
    top: int = 1,
    supports: bool = False,
    support_share: str | Fraction | None = None,
    eps: Number,
    delta: Number,
    mechanism: str | None = None,
    neighbours: str = "replace",
    ell_max: int = DEFAULT_ELL_MAX,
    candidates: int = DEFAULT_CANDIDATES,
    seed: int | None = None,
    progress: Setting = False,
    diagnostics: Diagnostics | None = None,
    reserve: Callable[[Options], None] | None = None,
    engine: str = "local",
    spark_master: str | None = None,
    spark_conf: Mapping[str, str] | None = None,
    precheck: Callable[[Options], None] | None = None,
    max_memory: int | str | None = None,
    accountant: str = "basic",
    _rules: RulesRequest | None = None,
    **more: Any,
) -> dict[str, Any]:
    """Read a transaction file (path or "-") and mine it; what `dpfim mine` runs.

    precheck: called with the validated options before the input is touched; the persistent
    ledger checks there, read-only, that the budget allows the spend (which depends on public
    parameters only), so an exhausted budget stops the run before any data is read.
    reserve: called with the validated options after the input has been read and before the
    mechanism runs; the persistent ledger reserves the spend there (and may refuse).
    engine: "local", or "spark" (the `spark` extra): the file is read and counted by Spark
    (spark_master, spark_conf: the session), the mechanism runs here, unchanged.
    max_memory, accountant, progress: as in mine(); a file's reading bar draws its whole
    percents read (an input of unknown size: a line without numbers).
    """
    started = utc_now()  # before any data is read: the end time would carry the run time
    call = {k: v for k, v in locals().items() if k != "more"}
    more = parameters.more_keywords(parameters.MINE, "mine_file", _named(), more)
    call.update(more)
    refusal = parameters.not_applying(
        parameters.MINE, parameters.given_in_library(parameters.MINE, call), call
    )
    if refusal is not None:
        raise ParameterError(refusal)
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
        closure_share=None if _rules is None else _rules.closure_share,
        accountant=accountant,
        closure_noise=None if _rules is None else _rules.noise,
        more=more,
    )
    engine_spec = EngineSpec(
        engines.get(engine).name,
        spark_master,
        dict(spark_conf or {}),
        check_memory(max_memory),
        progress,
    )
    given = InputSpec(
        source, fmt, "", sep, record_col, item_col, compression, opts.max_record_items, None, seed
    )
    inp = engines.prepare(engine_spec, given)
    decided = inp.decided
    if precheck is not None:
        precheck(opts)
    if universe_items is not None:
        inp = replace(inp, universe=tuple(read_universe(universe_items)))
    universe = inp.universe
    source_rng, _ = resolve(seed)  # one source for truncation and mechanism
    opened = engines.open_engine(
        engine_spec, inp, opts.all_sizes, source_rng, warn=diag.warnings.append
    )
    try:
        if reserve is not None:
            reserve(opts)
        return _mine(
            opened,
            opts,
            universe,
            source_rng if seed is not None else None,
            decided,
            diag,
            started=started,
            engine=engine_spec.name,
            rules=_rules,
        )
    finally:
        opened.close()


def _mine(
    opened: Opened,
    opts: Options,
    universe: Sequence[str] | None,
    rng: RandomSource | int | None,
    fmt: str | None,
    diag: Diagnostics,
    *,
    started: str,
    engine: str,
    rules: RulesRequest | None = None,
    keep: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Run the release on an engine's counts and build the result (a rules result when
    `rules` is given: the closure is released on the same counts; `keep` then receives the
    Closure and the rules frame for the Python API)."""
    source, private = resolve(rng)
    counts = opened.counts
    sizes = opts.all_sizes
    universe_size = None
    if universe is not None:
        vocab = len(counts.items)
        if vocab < max(sizes):
            raise ParameterError(
                f"--universe-items declares {vocab} items, fewer than --size {max(sizes)}"
            )
        universe_size = sum(math.comb(vocab, r) for r in sizes)
    _curator_warnings(counts.n, opened.usable, opts, diag, declared=universe is not None)

    counted = opened.counting_seconds
    counted_before = counted() if counted is not None else 0.0  # the engine's opening counts
    t0 = time.perf_counter()
    with memory_phase("counting"):  # the mechanism deepens the exact counts as it searches
        rel = release(
            counts,
            opts,
            source,
            universe_size=universe_size,
            max_record_items=opts.max_record_items,
        )
    elapsed = time.perf_counter() - t0
    diag.timings.update(opened.timings)
    facts = opened.facts()
    if counted is not None:
        counting = counted()
        diag.timings["count"] = counting  # all of it, from the engine's opening on
        # the mechanism: this window less the counting done inside it (not the opening's,
        # which came before t0: subtracting that gave `time mechanism: -0.064 s`). That
        # counting is disjoint sub-intervals of the window on the same clock, so only float
        # rounding can take the difference below 0.
        diag.timings["mechanism"] = max(0.0, elapsed - (counting - counted_before))
    else:
        diag.timings["count+mechanism"] = elapsed
    diag.facts.update(facts)
    diag.facts.update(
        {
            "peak RSS so far (MiB)": _peak_rss_mib(),
            "n": counts.n,
            "itemsets enumerated": len(counts.counts),
            "support threshold reached": counts.threshold,
            "all nonzero itemsets enumerated (L known)": counts.complete and not counts.clipped_at,
        }
    )
    if counts.clipped_at:  # the row budget ran out (docs/privacy.md §1.2)
        diag.facts["counts clipped at (support)"] = counts.clipped_at
    elif counts.complete:
        diag.facts["L"] = len(counts.counts)

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
            "declared_items": len(counts.items),
            "size": universe_size,
        },
        **rel.params,
    }
    params["max_record_items"] = "none" if opts.max_record_items is None else opts.max_record_items
    schema, book = SCHEMA, rel.ledger
    if rules is None:
        fields = release_fields(rel)
    else:
        fields, book = _rules_fields(counts, rel, opts, rules, source, opts.max_record_items, keep)
        schema = RULES_SCHEMA
        params["closure_share"] = str(rules.closure_share)
        params["closure_noise"] = opts.closure_noise
        if rules.rules:
            params["metric"] = rules.metric
            params["min_threshold"] = rules.min_threshold
    if opts.neighbours == "replace":
        fields["n"] = counts.n
        fields["n_note"] = (
            "n is public under replace-one neighbours; never released under add-remove"
        )
    return build(
        schema=schema, **fields, params=params, ledger=book, private=private, created=started
    )


def _rules_fields(
    counts: Counts,
    rel: Release,
    opts: Options,
    req: RulesRequest,
    source: RandomSource,
    max_record_items: int | None,
    keep: dict[str, Any] | None,
) -> tuple[dict[str, Any], dict[str, Any]]:
    """The closure release on the selection (dpfim/rules.py), the rules, and the ledger."""
    from dpfim import rules

    eps_closure = opts.eps * req.closure_share
    with memory_phase("counting"):
        closure = rules.release_closure(
            counts,
            rel,
            eps_closure,
            opts.neighbours,
            max_record_items,
            source,
            noise=opts.closure_noise,
            delta_closure=opts.closure_delta,
        )
    frame = None
    records = None
    # --min-support: the rules come from the closure's itemsets that clear it (mlxtend's
    # frequent itemsets, then rules); the whole closure is still released
    basis = closure if not opts.thresholded else rules.clearing(closure, opts)
    if req.rules and keep is not None:  # the Python API returns mlxtend's frame itself
        frame = rules.rules_frame(basis, req)
        records = frame.to_dict("records")
    elif req.rules:
        records = rules.rules_records(basis, req)
    fields: dict[str, Any] = {"selected": selected_entries(rel)}
    fields.update(rules.rules_fields(closure, records, req, sort_items))
    if keep is not None:
        keep.update(closure=closure, rules=frame, basis=basis)
    book = rules.rules_ledger(
        rel,
        opts.cost(None, max_record_items),
        eps_closure,
        opts.neighbours,
        closure,
        opts.closure_delta,
    )
    return fields, book


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


# --- consumers of a Release: association rules and mlxtend-shaped itemsets (dpfim/rules.py) ---


def rules_file(
    source: str,
    *,
    metric: str = "confidence",
    min_threshold: Number = "0.1",
    closure_share: Number | None = None,
    closure_noise: str | None = None,
    top: int = DEFAULT_RULES_TOP,
    sizes: str | Sequence[int] | None = None,
    **kwargs: Any,
) -> dict[str, Any]:
    """Private association rules of a transaction file, as a dpfim.rules/1 dict: what
    `dpfim rules` runs. Takes every option of mine_file (the ledger hooks too); the top-K
    selection spends eps * (1 - closure_share), the closure's noisy supports (and n under
    add/remove) eps * closure_share (default 1/2); docs/privacy.md, the closure release.
    closure_noise: "auto" (default: the one with less expected error, from public values),
    "laplace" or "gaussian" (docs/privacy.md §21.4). sizes: default "1-2" unless size= is given."""
    from dpfim.rules import check_rules, worker

    req = check_rules(metric, min_threshold, closure_share, noise=closure_noise)
    with worker():  # pandas + mlxtend load in a forked child while the file is read
        return mine_file(
            source, top=top, sizes=_sizes(sizes, kwargs, DEFAULT_RULES_SIZES), _rules=req, **kwargs
        )


@_python_messages
def association_rules(
    data: Any,
    *,
    eps: Number,
    delta: Number,
    top: int = DEFAULT_RULES_TOP,
    sizes: str | Sequence[int] | None = None,
    metric: str = "confidence",
    min_threshold: Number = 0.1,
    closure_share: Number | None = None,
    closure_noise: str | None = None,
    **kwargs: Any,
) -> Any:
    """Private association rules as mlxtend's rules DataFrame (antecedents, consequents as
    frozensets; support, confidence, lift, ...), computed by mlxtend's association_rules from
    the consistent noisy supports of the downward closure of a private top-K selection.

    data: any input mine() accepts (a list of baskets, a one-hot or long DataFrame, a Series
    of baskets). The whole dpfim.rules/1 result (ledger included) is in `.attrs["result"]`.
    Takes every keyword of mine() (mechanism, neighbours, rng, universe, ...); sizes: default
    "1-2" unless size= is given; closure_noise: as in rules_file."""
    from dpfim.rules import check_rules

    req = check_rules(metric, min_threshold, closure_share, noise=closure_noise)
    keep: dict[str, Any] = {}
    sizes = _sizes(sizes, kwargs, DEFAULT_RULES_SIZES)
    result = mine(
        data, eps=eps, delta=delta, top=top, sizes=sizes, _rules=req, _keep=keep, **kwargs
    )
    frame = keep["rules"]
    frame.attrs["result"] = result
    return frame


@_python_messages
def frequent_itemsets(
    data: Any,
    *,
    eps: Number,
    delta: Number,
    top: int | None = None,
    sizes: str | Sequence[int] | None = None,
    use_colnames: bool | None = None,
    closure_share: Number | None = None,
    closure_noise: str | None = None,
    min_support: Number | None = None,
    max_len: int | None = None,
    **kwargs: Any,
) -> Any:
    """Private frequent itemsets shaped like mlxtend's fpgrowth/apriori output: a DataFrame
    with `support` (a noisy fraction of n) and `itemsets` (frozensets) that holds the whole
    downward closure of a private top-K selection (so that mlxtend's association_rules finds
    every antecedent), with the n to pass as `num_itemsets` in `.attrs["num_itemsets"]`
    (noisy under add/remove) and the dpfim.rules/1 result in `.attrs["result"]`.

    use_colnames: as mlxtend's on a one-hot DataFrame: False (the default) gives column
    positions, True the column names. Other inputs (lists, Series, long frames) have no column
    positions: their itemsets hold item names (the default, or True; False is refused).
    sizes: default "1-3" unless size= or max_len= is given; closure_noise: as in rules_file.
    min_support: mlxtend's (a fraction of n): the itemsets whose support clears it, how many
    chosen privately (at most top, default 500; sizes 1-5 unless max_len or sizes is given;
    docs/privacy.md §25), and the frame keeps the rows whose noisy support is >= min_support.
    Neither min_support nor min_count: the top 50 (DEFAULT_RULES_TOP) of sizes 1-3."""
    from dpfim.rules import check_rules, itemsets_frame

    thresholded = min_support is not None or kwargs.get("min_count") is not None
    if min_support is not None:
        kwargs["min_support"] = min_support
    if max_len is not None:
        kwargs["max_len"] = max_len
    if top is None:
        top = 1 if thresholded else DEFAULT_RULES_TOP  # 1: the threshold's default cap
    if use_colnames is not None and not isinstance(use_colnames, bool):
        raise TypeError(f"use_colnames must be True or False, got {use_colnames!r}")
    labels = None
    if not use_colnames:
        pd = sys.modules.get("pandas")
        one_hot = (
            pd is not None
            and isinstance(data, pd.DataFrame)
            and kwargs.get("record_col") is None
            and kwargs.get("item_col") is None
        )
        if one_hot:  # mlxtend's default: column positions
            labels = {str(c): j for j, c in enumerate(data.columns)}
        elif use_colnames is False:  # None: no column positions, the items' names
            raise InputArgumentError(
                "use_colnames=False needs a one-hot DataFrame (its column positions); pass "
                "use_colnames=True for item names"
            )
    req = check_rules(closure_share=closure_share, rules=False, noise=closure_noise)
    keep: dict[str, Any] = {}
    if not thresholded and max_len is None:
        sizes = _sizes(sizes, kwargs, DEFAULT_FREQUENT_SIZES)
    result = mine(
        data, eps=eps, delta=delta, top=top, sizes=sizes, _rules=req, _keep=keep, **kwargs
    )
    # --min-support: the closure's itemsets that clear it (and every subset), as the rules use
    frame = itemsets_frame(keep["basis"], labels=labels)
    frame.attrs["result"] = result
    return frame


def _sizes(sizes: str | Sequence[int] | None, kwargs: dict[str, Any], default: str) -> Any:
    """The consumers' sizes default, unless the caller gave size= (one size) or sizes=."""
    return default if sizes is None and kwargs.get("size") is None else sizes
