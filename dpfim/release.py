"""The one release path, for K >= 1: peeling, naming, the zero-itemset sampler, noisy supports.

`release(counts, opts, rng, ...)` runs the chosen mechanism through `peel` (K = 1 is one
round), names the picks AFTER counting (ids are stable, names are read at the end), and
returns a typed `Release` that result.py turns into JSON (and that later consumers read).
Top-k on top of any registered mechanism (docs/privacy.md, top-k):

Peeling: K rounds of the chosen mechanism, round j on the counts with the itemsets released in
rounds 1..j-1 removed (a `views.Without` over the shared engine: counting is done once), each at
(eps_sel/K, delta/K). The run stops at the first "none". By basic sequential composition (exact
rationals) the K planned rounds are (eps_sel, delta)-DP, and stopping early is a post-processing
of the K-round output, so the ledger charges the planned total, never the rounds actually run.

Supports: for the m released itemsets, c(I_i) + DLap(m / eps_sup) each. One record moves each
count by at most 1 under both relations (replace-one: a count is 1 only if the record holds the
itemset; replacing it removes one record and adds one, and an itemset in both is unchanged), so
the L1 sensitivity of the m-vector is m; m is public once the selection is released.
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np

from dpfim.accountants import BASIC
from dpfim.accounting import Accountant, amount, basic, exact_text
from dpfim.counts import Counts, Key
from dpfim.mechanisms import registry
from dpfim.mechanisms.base import Outcome
from dpfim.mechanisms.registry import Mechanism, Public
from dpfim.params import fraction_to_float
from dpfim.request import (
    DEFAULT_SUPPORT_SHARE,
    MAX_TOP,
    Options,
    round_cost,
    run_cost,
    shares,
    split_of,
)
from dpfim.samplers.laplace import discrete_laplace
from dpfim.samplers.rng import RandomSource
from dpfim.views import DeclaredUniverse, Without, ids_of

__all__ = [  # the selection's request-level constants are re-exported for the release's users
    "DEFAULT_SUPPORT_SHARE",
    "MAX_TOP",
    "DeclaredUniverse",
    "Pick",
    "Release",
    "peel",
    "release",
    "run_cost",
    "shares",
]


@dataclass(frozen=True)
class Pick:
    """One released itemset. `count` is its support as the mechanisms saw it (exact; for a
    pick from the floor group of clipped counts, its exact support <= T): internal only
    (evaluate reads it), never part of a result."""

    rank: int
    ids: tuple[int, ...]
    count: int
    outcome: Outcome
    noisy_support: int | float | None = None  # levelwise's: dyadic rationals (§24)


# name_zero(view, rng) -> the ids of a uniformly random zero-count itemset not yet released
ZeroNamer = Callable[[Without, RandomSource], tuple[int, ...]]


def peel(
    counts: Counts,
    spec: Mechanism,
    p: Public,
    k: int,
    rng: RandomSource,
    name_zero: ZeroNamer | None = None,
    declared: DeclaredUniverse | None = None,
    round_p: Public | None = None,
) -> tuple[list[Pick], Outcome | None, float | None]:
    """Up to k itemsets in rank order, the outcome of the round that answered none (None
    if no round did), and the noisy n a whole-run mechanism released with its supports (else
    None); p holds the selection's whole (eps, delta).

    name_zero: how to name a zero-count pick (declared universe); None (open universe): a
    zero-count pick is the answer none and ends the run. declared: the declared universe by
    identity, so that report-noisy-max can draw the itemsets below its floor instead of
    having every nonzero count listed (noisy_max.Groups; the law is the same). round_p: one
    round's parameters (the run's Split, dpfim.accounting); None: (eps/k, delta/k), basic.
    """
    if spec.whole_run is not None:  # one mechanism for the K rounds (levelwise)
        found, last, noisy_n = spec.whole_run(counts, round_p or p, k, rng)
        width = int(counts.itemsets.shape[1])
        return (
            [
                Pick(
                    rank, key + (-1,) * (width - len(key)), count, Outcome(None, None, None), noisy
                )
                for rank, (key, count, noisy) in enumerate(found, start=1)
            ],
            last,
            noisy_n,
        )
    view = Without(counts, declared)
    if round_p is None:
        round_p = p.scaled(p.eps / k, p.delta / k)
    picks: list[Pick] = []
    for rank in range(1, k + 1):
        universe = None if p.universe_size is None else p.universe_size - len(view.removed)
        if universe is not None and universe <= 0:
            break
        out = spec.run(view, round_p.with_universe(universe), rng)
        if out.index is not None:
            key = view.key(out.index)
            count = int(view.counts[out.index])
        elif out.named is not None and out.named_count is not None:
            key, count = out.named, out.named_count
        elif out.zero_pick and name_zero is not None:
            key, count = name_zero(view, rng), view.clipped_at  # 0, or the floor T
        else:
            return picks, out, None
        ids = ids_of(key)
        if view.clipped_at and count <= view.clipped_at and ids:
            # a member of the floor group (not a row either way): its exact support, <= T, for
            # --supports; a placeholder key without items (evaluate's) keeps T
            count = view.support(ids)
        view.remove(key, count)
        picks.append(Pick(rank, key, count, out))
    return picks, None, None


def add_supports(picks: list[Pick], eps_support: Fraction, rng: RandomSource) -> list[Pick]:
    """Each pick with c(I) + DLap(m / eps_support), m = len(picks) (the L1 sensitivity)."""
    if not picks:
        return picks
    scale = Fraction(len(picks)) / eps_support
    return [
        Pick(q.rank, q.ids, q.count, q.outcome, q.count + discrete_laplace(scale, rng))
        for q in picks
    ]


def ledger(
    spec: Mechanism,
    p: Public,
    k: int,
    eps_support: Fraction,
    accountant: Accountant = BASIC,
) -> dict[str, Any]:
    """The composed ledger: K rounds at the split's (eps0, delta0) plus the supports, composed
    by the accountant (basic: exact sums, (eps_sel/K, delta/K) each; tight: the K-fold
    adaptive composition's bound at the run's delta, docs/privacy.md §20.4)."""
    sp = split_of(spec, p, k, eps_support, accountant)
    if spec.whole_run is not None:
        return whole_run_ledger(spec, p, k, sp)
    per_round = round_cost(spec, p)
    round_p = p.scaled(sp.eps0, sp.delta0)
    one = basic([per_round(sp.eps0, sp.delta0)])
    selection = per_round(sp.eps0, sp.delta0).times(k)
    cost = sp.cost(per_round)
    sel = sp.accountant.compose([selection], delta=p.delta)
    total = sp.accountant.compose([cost], delta=p.delta)
    steps = [
        {
            "step": f"peeling: {k} rounds of {spec.name}, each on the counts without the "
            f"itemsets already released, each ({one.eps}, {one.delta})-DP",
            "releases": "itemsets (rank order)",
            "eps": amount(sel.eps),
            "delta": amount(sel.delta),
        }
    ]
    if eps_support > 0:
        steps.append(
            {
                "step": "noisy supports: c(I) + DLap(m/eps_sup) for the m released itemsets "
                "(L1 sensitivity m: one record moves each count by at most 1)",
                "releases": "noisy_support",
                "eps": amount(eps_support),
                "delta": amount(Fraction(0)),
            }
        )
    out: dict[str, Any] = {
        "neighbours": p.neighbours,
        "eps": amount(total.eps),
        "delta": amount(total.delta),
        "composition": sp.accountant.composition(total, k),
        "accountant": sp.accountant.name,
        "per_round_eps": fraction_to_float(sp.eps0),
        "per_round_eps_exact": exact_text(sp.eps0),
        "per_round_delta": amount(one.delta),
        "split": sp.how,
        "steps": steps,
        "round": spec.ledger_of(round_p),
        "note": (
            f"All {k} planned rounds are charged even when the run stops early at a none: "
            "whether it stops depends on the data, so only the planned total is a valid "
            "bound (docs/privacy.md, top-k). Each run spends (eps, delta); repeated runs on the "
            "same data compose."
        ),
    }
    if not sp.accountant.exact:  # a computed bound: the typed cost it comes from
        out["cost"] = {"neighbours": str(cost.neighbours), "parts": cost.to_json()}
    return out


def whole_run_ledger(spec: Mechanism, p: Public, k: int, sp: Any) -> dict[str, Any]:
    """The ledger of a mechanism whose K rounds are one run-level cost (levelwise): the
    selection at the split's (eps0, delta0), then the supports."""
    from dpfim.mechanisms import levelwise

    round_p = p.scaled(sp.eps0, sp.delta0)
    cost = sp.cost(round_cost(spec, p))
    total = sp.accountant.compose([cost], delta=p.delta)
    steps = levelwise.steps_for(round_p, k)
    rows = [
        {"step": step, "releases": rel, "eps": amount(e), "delta": amount(d)}
        for step, rel, e, d in steps.rows
    ]
    if sp.eps_support > 0:
        rows.append(
            {
                "step": "noisy supports: c(I) + DLap(m/eps_sup) for the m released itemsets "
                "(L1 sensitivity m: one record moves each count by at most 1)",
                "releases": "noisy_support",
                "eps": amount(sp.eps_support),
                "delta": amount(Fraction(0)),
            }
        )
    out: dict[str, Any] = {
        "neighbours": p.neighbours,
        "eps": amount(total.eps),
        "delta": amount(total.delta),
        "composition": sp.accountant.composition(total, 1),
        "accountant": sp.accountant.name,
        "selection": {"eps": amount(sp.eps0), "delta": amount(sp.delta0)},  # supports included
        "levelwise": levelwise.per_run(round_p, k),
        "split": "one run-level (eps, delta) for the whole selection"
        + (", supports included (docs/privacy.md §24)" if p.support_share else "")
        + f" ({sp.accountant.name})",
        "steps": rows,
        "note": steps.note
        + " The selection is one (eps, delta) cost whatever the number of rounds it ran. "
        "Each run spends (eps, delta); repeated runs on the same data compose.",
    }
    if not sp.accountant.exact:
        out["cost"] = {"neighbours": str(cost.neighbours), "parts": cost.to_json()}
    return out


def random_zero_itemset(
    view: Without,
    vocab: int,
    sizes: Sequence[int],
    rng: RandomSource,
) -> tuple[int, ...]:
    """A uniformly random itemset of support 0 over the r-subsets (r in sizes) of a declared
    vocabulary, among those not yet released. Only reached once the counts are complete (the
    search went past every nonzero itemset), so every nonzero itemset is in view or removed.
    Clipped at t (docs/privacy.md §1.2): "support 0" reads "support <= t", the group every
    unlisted itemset belongs to. The key is padded with -1 to the view's row width.

    The size r is drawn with probability free[r] / total (free[r]: the r-subsets neither listed
    nor released). Then, commonly, uniform r-subsets are drawn until one is free (each try
    succeeds with probability >= 1/64). When fewer than 1/64 of the r-subsets are free, the
    pick-th free one in lexicographic order is unranked past the sorted lex ranks of the known
    (listed or released) r-subsets, pick uniform on [0, free[r]): memory O(rows held), within
    the row budget, never the C(vocab, r) subsets themselves. Both branches draw exactly what
    they drew when the rare one enumerated every r-subset, so seeded results are unchanged."""
    clip = view.clipped_at
    rows = view.itemsets
    width = int(rows.shape[1])
    row_widths = (rows >= 0).sum(axis=1, dtype=np.int8)  # widths <= MAX_SIZE
    widths = np.bincount(row_widths, minlength=max(sizes) + 1)
    nonzero_by_size = {r: int(widths[r]) for r in sizes}
    for key, c in view.removed.items():
        if c > clip:
            nonzero_by_size[len(ids_of(key))] += 1
    zero_released = {r: 0 for r in sizes}
    for key, c in view.removed.items():
        if c <= clip:
            zero_released[len(ids_of(key))] += 1
    free = {r: math.comb(vocab, r) - nonzero_by_size[r] - zero_released[r] for r in sizes}
    total = sum(free.values())
    if total <= 0:
        raise AssertionError("no zero-count itemset left in the declared universe")
    pick = rng.randbelow(total)
    for r in sizes:
        if pick < free[r]:
            break
        pick -= free[r]

    def pad(ids: Sequence[int]) -> Key:
        return tuple(sorted(int(i) for i in ids)) + (-1,) * (width - len(ids))

    universe = math.comb(vocab, r)
    if free[r] * 64 < universe:  # rare: the pick-th free r-subset, past the known ones
        released = [ids_of(key) for key in view.removed if len(ids_of(key)) == r]
        known = known_lex_ranks(rows[row_widths == r], released, vocab, r)  # a copy: scratch
        if len(known) != universe - free[r]:
            raise AssertionError(f"{len(known)} known {r}-subsets, expected {universe - free[r]}")
        return pad(nth_free_subset(vocab, r, known, rng.randbelow(free[r])))
    released_keys = set(view.removed)
    while True:
        pool = list(range(vocab))
        chosen: list[int] = []
        for j in range(r):  # partial Fisher-Yates: a uniform r-subset
            m = j + rng.randbelow(vocab - j)
            pool[j], pool[m] = pool[m], pool[j]
            chosen.append(pool[j])
        key = pad(chosen)
        if key not in released_keys and view.support(sorted(chosen)) <= clip:
            return key


# --- ranking r-subsets of {0, ..., vocab - 1} in lexicographic order ---------------------------
# Colex rank of c_0 < ... < c_{r-1}: sum_i C(c_i, i + 1) (independent of vocab). Lex rank: the
# colex rank reflected, x -> vocab - 1 - x maps lex order onto reversed colex order, so
# lex(c) = C(vocab, r) - 1 - colex({vocab - 1 - c_i}). itertools.combinations yields lex order.


def lex_rank(ids: Sequence[int], vocab: int) -> int:
    """The position of the r-subset `ids` (distinct, in 0..vocab-1) among all r-subsets of
    {0, ..., vocab - 1} in lexicographic order (itertools.combinations' order)."""
    r = len(ids)
    mirrored = sorted(vocab - 1 - int(c) for c in ids)
    return math.comb(vocab, r) - 1 - sum(math.comb(d, i + 1) for i, d in enumerate(mirrored))


def lex_unrank(rank: int, vocab: int, r: int) -> tuple[int, ...]:
    """The r-subset (ascending) at position `rank` in lexicographic order: O(r log vocab)."""
    if not 0 <= rank < math.comb(vocab, r):
        raise ValueError(f"rank {rank} outside [0, C({vocab}, {r}))")
    rest = math.comb(vocab, r) - 1 - rank  # the colex rank of the mirrored subset
    out: list[int] = []
    hi = vocab  # invariant: C(lo, i) <= rest < C(hi, i)
    for i in range(r, 0, -1):
        lo = i - 1
        while hi - lo > 1:
            mid = (lo + hi) // 2
            if math.comb(mid, i) <= rest:
                lo = mid
            else:
                hi = mid
        out.append(vocab - 1 - lo)
        rest -= math.comb(lo, i)
        hi = lo
    return tuple(out)  # the mirrored elements came largest first: these ascend


def known_lex_ranks(
    scratch: np.ndarray, released: Sequence[Sequence[int]], vocab: int, r: int
) -> np.ndarray:
    """The sorted lex ranks of the r-subsets given as rows (r ids each, in any order, padded
    with -1 to any width; `scratch` is a copy the caller gives up: it is sorted in place) and
    as released id lists. Column by column in int64, in place, when no intermediate can
    overflow (always in the rare branch of `random_zero_itemset`, where C(vocab, r) is below
    64/63 times the known r-subsets), else as Python ints: memory O(len(scratch))."""
    universe = math.comb(vocab, r)
    extra = [lex_rank(ids, vocab) for ids in released]
    # term * (d - j) in C(d, k) = prod (d - j) / (j + 1) is k C(d, j + 1) <= r max_m C(vocab, m)
    if r * max(math.comb(vocab, m) for m in range(r + 1)) < 2**63:
        scratch.sort(axis=1)  # -1 pads sort first: the ids are the last r columns, ascending
        n, width = scratch.shape
        colex = np.zeros(n, dtype=np.int64)
        for i in range(r):  # mirrored ids ascend from the largest id down
            d = scratch[:, width - 1 - i].astype(np.int64)
            np.subtract(vocab - 1, d, out=d)
            term = np.ones(n, dtype=np.int64)
            for j in range(i + 1):  # C(d, i + 1), exact at every step; 0 once d - j hits 0
                term *= d - j
                term //= j + 1
            colex += term
            del d, term
        ranks = np.subtract(universe - 1, colex, out=colex)
        if extra:
            ranks = np.concatenate([ranks, np.asarray(extra, dtype=np.int64)])
    else:
        rows = [lex_rank(ids_of(row), vocab) for row in scratch]
        ranks = np.asarray(rows + extra, dtype=object)
    ranks.sort()
    return ranks


def nth_free_subset(
    vocab: int, r: int, known_ranks: Sequence[int] | np.ndarray, pick: int
) -> tuple[int, ...]:
    """The pick-th (from 0) r-subset of {0, ..., vocab - 1} in lexicographic order whose lex
    rank is not in `known_ranks` (ascending, distinct). The answer x is pick plus the number of
    known ranks <= x; the j-th known rank has known[j] - j free ranks below it, a nondecreasing
    sequence, so that number is #{j : known[j] - j <= pick}, found by bisection."""
    free = math.comb(vocab, r) - len(known_ranks)
    if not 0 <= pick < free:
        raise ValueError(f"pick {pick} outside [0, {free})")
    below = bisect.bisect_right(
        range(len(known_ranks)), pick, key=lambda j: int(known_ranks[j]) - j
    )
    return lex_unrank(pick + below, vocab, r)


def true_ranks(counts: np.ndarray, picked: Sequence[int]) -> list[int]:
    """Competition ranks 1 + #{count > c} of the picked counts (evaluate only: NOT private)."""
    neg = -counts
    return [1 + int(np.searchsorted(neg, -c, side="left")) for c in picked]


@dataclass(frozen=True)
class Release:
    """What one run releases, before it is JSON: the picks in rank order with their released
    names (sorted canonical strings), the outcome of the round that answered none (None if
    none did), the extra public parameters and the ledger. `single`: the classic top-1 result
    (one size, K = 1, no supports), whose schema and ledger stay as they were."""

    spec: Mechanism
    picks: list[Pick]
    names: list[list[str]]
    last: Outcome | None
    params: dict[str, Any]
    ledger: dict[str, Any]
    top: int
    supports: bool
    single: bool
    # levelwise's supports (docs/privacy.md §24): each one's standard deviation (public: the
    # released keys and rho_s), their least-squares projection onto consistent supports (a
    # subset at least as frequent as its supersets, none negative, none above n or the noisy
    # n): post-processing; and the noisy n (add/remove)
    support_sd: list[float] | None = None
    consistent: list[float] | None = None
    noisy_n: float | None = None


def release(
    counts: Counts,
    opts: Options,
    rng: RandomSource,
    *,
    universe_size: int | None,
    max_record_items: int | None,
) -> Release:
    """Run opts.mechanism (K rounds), name the picks, add noisy supports: the whole release.

    universe_size: K of a declared universe (None: open; a zero-count pick is then none).
    In a declared universe report-noisy-max draws the itemsets of low count by identity
    (through the engine's exact supports) instead of having them all counted: the same law,
    and the same draws on every engine, so that seeded runs agree across engines."""
    spec = registry.get(opts.mechanism)
    p = opts.public(universe_size, max_record_items)
    sizes = tuple(opts.all_sizes)
    name_zero: ZeroNamer | None = None
    declared: DeclaredUniverse | None = None
    if universe_size is not None:
        vocab = len(counts.items)

        def name_zero(view: Without, source: RandomSource) -> tuple[int, ...]:
            return random_zero_itemset(view, vocab, sizes, source)

        declared = DeclaredUniverse(vocab, sizes, counts)
    round_p = opts.round_public(universe_size, max_record_items)
    picks, last, noisy_n = peel(counts, spec, p, opts.top, rng, name_zero, declared, round_p)
    eps_sup = opts.eps_support
    if opts.supports and not opts.whole_supports:  # levelwise adds its own
        picks = add_supports(picks, eps_sup, rng)
    sd, consistent, n_hat = whole_run_supports(opts, p, picks, counts, noisy_n)
    if opts.thresholded and consistent is not None and sd is not None:
        picks, sd, consistent = above(opts, counts, picks, sd, consistent, n_hat)
    items = counts.items  # read now: the open universe's names grow while counting
    names = [sort_items(items[i] for i in ids_of(q.ids)) for q in picks]
    single = opts.top == 1 and not opts.supports and len(sizes) == 1
    if single:
        params, book = spec.extra(p), spec.ledger_of(p)
    else:
        params = {"top": opts.top, **spec.extra(round_p)}
        if opts.supports:
            params["support_share"] = str(opts.support_share)
        for name in ("min_support", "min_count"):  # --top is then the cap (§25)
            if opts.param(name) is not None:
                params[name] = str(opts.param(name))
        book = ledger(spec, p, opts.top, eps_sup, opts.accountant)
    return Release(
        spec,
        picks,
        names,
        last,
        params,
        book,
        opts.top,
        opts.supports,
        single,
        sd,
        consistent,
        n_hat,
    )


def above(
    opts: Options,
    counts: Counts,
    picks: list[Pick],
    sd: list[float],
    consistent: list[float],
    n_hat: float | None,
) -> tuple[list[Pick], list[float], list[float]]:
    """--min-support / --min-count: keep the released itemsets whose consistent support is at
    least the threshold, theta times n (public under replace-one) or the noisy n (add/remove),
    or the count (with every subset: downward closed); renumbered in release order.
    Post-processing of released values (§25.1)."""
    from dpfim.mechanisms import threshold

    if opts.neighbours == "replace":
        n = float(counts.n)  # public under replace-one
    else:
        assert n_hat is not None, "add/remove: the supports come with their noisy n"
        n = n_hat
    least = threshold.bar(opts.param("min_support"), opts.param("min_count"), n)
    keep = threshold.clearing([tuple(ids_of(q.ids)) for q in picks], consistent, least)
    kept = [
        Pick(rank, q.ids, q.count, q.outcome, q.noisy_support)
        for rank, q in enumerate((picks[j] for j in keep), start=1)
    ]
    return kept, [sd[j] for j in keep], [consistent[j] for j in keep]


def whole_run_supports(
    opts: Options, p: Public, picks: list[Pick], counts: Counts, noisy_n: float | None
) -> tuple[list[float] | None, list[float] | None, float | None]:
    """levelwise's supports: (each one's standard deviation, their consistent projection, the
    consistent noisy n under add/remove). The released set is downward closed (§23.1), so
    every subset of a release is among them; the bound above is n (public under replace) or
    the noisy n released with the supports (add/remove)."""
    if not opts.whole_supports or not picks:
        return None, None, None
    from dpfim.mechanisms import levelwise
    from dpfim.rules import project

    keys = [tuple(ids_of(q.ids)) for q in picks]
    sd = levelwise.support_sds(p, opts.top, keys)
    noisy = [float(q.noisy_support or 0) for q in picks]
    if noisy_n is None:
        consistent, _ = project(keys, noisy, None, float(counts.n))
        return sd, [round(v, 6) for v in consistent], None
    consistent, n_hat = project(keys, noisy, round(noisy_n), None)
    return sd, [round(v, 6) for v in consistent], round(n_hat, 6)


def sort_items(items: Iterable[str]) -> list[str]:
    """The released order: numerically when every item is a decimal integer (FIMI ids), else
    by string. Depends on the released items only (post-processing)."""
    names = list(items)
    if all(s.isascii() and s.isdigit() for s in names):
        return sorted(names, key=lambda s: (int(s), s))
    return sorted(names)
