"""Every selection mechanism in one place: what it needs, what it costs, how it runs.

api.py, cli.py, evaluate.py and the privacy audit read this table instead of listing mechanisms
themselves. Adding a mechanism is one file (its `run`, its cost) plus one `Spec` entry below.

Everything a Spec computes from `Public` is a function of public parameters only (never of the
data): the cost charged, the extra parameters printed in the result, the "none" hint.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from dpfim.ledger import margin_ledger
from dpfim.mechanisms import baselines, lmm, lmm_gap, lmm_tight
from dpfim.mechanisms.base import Outcome, RankedCounts
from dpfim.mechanisms.baselines import Cost
from dpfim.mechanisms.thresholds import Split, gap_split, paper_split, threshold
from dpfim.params import DEFAULT_ELL_MAX, fraction_to_float, log_fraction
from dpfim.samplers.rng import RandomSource

NEIGHBOURS = ("replace", "add-remove")
BOTH = frozenset(NEIGHBOURS)
ADD_REMOVE = frozenset({"add-remove"})


@dataclass(frozen=True)
class Public:
    """The public parameters one mechanism run may depend on.

    sizes: the itemset sizes ranked together (one size for --size r); universe_size: K of a
    declared finite universe, or None for the open universe; max_record_items: the record-length
    bound B, or None.
    """

    eps: Fraction
    delta: Fraction
    sizes: tuple[int, ...] = (2,)
    neighbours: str = "replace"
    ell_max: int = DEFAULT_ELL_MAX
    candidates: int = 10
    max_record_items: int | None = None
    universe_size: int | None = None

    def scaled(self, eps: Fraction, delta: Fraction) -> Public:
        """The same parameters with another (eps, delta): one round of a composition."""
        return dataclasses.replace(self, eps=eps, delta=delta)

    def with_universe(self, universe_size: int | None) -> Public:
        return dataclasses.replace(self, universe_size=universe_size)

    @property
    def growth(self) -> int:
        """How many counted itemsets one record can hold: sum of C(B, r) (choosing's k)."""
        if self.max_record_items is None:
            raise ValueError("the growth bound needs max_record_items")
        return sum(math.comb(self.max_record_items, r) for r in self.sizes)


@dataclass(frozen=True)
class Spec:
    """One mechanism as the rest of dpfim sees it.

    neighbours: the relations its guarantee holds under; needs_vocabulary: it refuses the open
    universe (--universe-items); needs_record_bound: it needs --max-record-items; pure: it spends
    no delta; releases: result fields besides the itemset ("noisy_max", "ell");
    run(counts, public, rng); cost(public) -> Cost; ledger(public) -> the result's ledger dict;
    extra(public) -> extra public parameters for the result; none_hint(public) -> one sentence;
    check(public): raises ParameterError where the mechanism's proof does not apply.
    """

    name: str
    neighbours: frozenset[str]
    run: Callable[[RankedCounts, Public, RandomSource], Outcome]
    cost: Callable[[Public], Cost]
    none_hint: Callable[[Public], str]
    extra: Callable[[Public], dict[str, Any]] = lambda p: {}
    ledger: Callable[[Public], dict[str, Any]] | None = None
    needs_vocabulary: bool = False
    needs_record_bound: bool = False
    pure: bool = False
    releases: tuple[str, ...] = ()
    check: Callable[[Public], None] | None = None  # preconditions of its proof (usage errors)

    def ledger_of(self, p: Public) -> dict[str, Any]:
        """The per-run ledger printed in the result."""
        if self.ledger is not None:
            return self.ledger(p)
        return baselines.cost_ledger(self.cost(p), p.neighbours)


def _fmt(x: Fraction | float) -> str:
    return f"{float(x):g}"


# --- lmm and lmm-gap ------------------------------------------------------------------------


def _margin_cost(split: Split, with_max: bool) -> Cost:
    steps = []
    if with_max:
        steps.append(("noisy max", "noisy_max", split.alpha_m, split.delta_m))
    steps.append(("margin search", "ell", split.alpha_s, split.delta_s))
    steps.append(("restricted exponential mechanism", "itemset", split.alpha_a, split.delta_leak))
    return Cost(split.eps, split.delta, tuple(steps), "(eps, delta)-DP (Large Margin Mechanism).")


def _margin_extra(split: Split, p: Public) -> dict[str, Any]:
    return {
        "ell_max": p.ell_max,
        "split": {
            "alpha_m": str(split.alpha_m),
            "alpha_s": str(split.alpha_s),
            "alpha_a": str(split.alpha_a),
            "delta_m": str(split.delta_m),
            "delta_s": str(split.delta_s),
            "beta_times_e^(alpha_m+alpha_s)": str(split.delta_leak),
        },
    }


def _margin_hint(name: str, split: Split, p: Public) -> str:
    return (
        f"{name} certifies a winner only when its support leads the runner-up's by more than "
        f"about {threshold(1, split)} records (plus noise)"
    )


def _run_lmm(counts: RankedCounts, p: Public, rng: RandomSource) -> Outcome:
    return lmm.run(
        counts, paper_split(p.eps, p.delta), rng, ell_max=p.ell_max, universe_size=p.universe_size
    )


def _run_lmm_gap(counts: RankedCounts, p: Public, rng: RandomSource) -> Outcome:
    return lmm_gap.run(
        counts, gap_split(p.eps, p.delta), rng, ell_max=p.ell_max, universe_size=p.universe_size
    )


LMM = Spec(
    "lmm",
    BOTH,
    _run_lmm,
    lambda p: _margin_cost(paper_split(p.eps, p.delta), True),
    lambda p: _margin_hint("LMM", paper_split(p.eps, p.delta), p),
    extra=lambda p: _margin_extra(paper_split(p.eps, p.delta), p),
    ledger=lambda p: margin_ledger(paper_split(p.eps, p.delta), p.neighbours, with_max=True),
    releases=("noisy_max", "ell"),
)
LMM_GAP = Spec(
    "lmm-gap",
    ADD_REMOVE,
    _run_lmm_gap,
    lambda p: _margin_cost(gap_split(p.eps, p.delta), False),
    lambda p: _margin_hint("lmm-gap", gap_split(p.eps, p.delta), p),
    extra=lambda p: _margin_extra(gap_split(p.eps, p.delta), p),
    ledger=lambda p: margin_ledger(gap_split(p.eps, p.delta), p.neighbours, with_max=False),
    releases=("ell",),
)


def _tight_hint(p: Public) -> str:
    sp = lmm_tight.default_split(p.eps, p.delta)
    return (
        f"lmm-tight answers when the top support leads the runner-up's by more than about "
        f"{lmm_tight.threshold(0, sp)} records, or the 17th by about {lmm_tight.threshold(4, sp)} "
        "(plus noise)"
    )


LMM_TIGHT = Spec(
    lmm_tight.NAME,
    frozenset(lmm_tight.NEIGHBOURS),
    lambda c, p, rng: lmm_tight.run(
        c, p.eps, p.delta, rng, ell_max=p.ell_max, universe_size=p.universe_size
    ),
    lambda p: lmm_tight.cost(p.eps, p.delta),
    _tight_hint,
    extra=lambda p: {
        "ell_max": p.ell_max,
        "split": lmm_tight.split_params(lmm_tight.default_split(p.eps, p.delta)),
    },
    releases=("ell",),
)


# --- the pure report-noisy-max family over a declared universe ------------------------------


def _finite(p: Public) -> int:
    if p.universe_size is None:
        raise ValueError("this mechanism needs a finite universe")
    return p.universe_size


def _pure_hint(p: Public) -> str:
    return (
        "this mechanism always names an itemset of the declared universe; a none answer "
        "means the universe holds no itemset"
    )


def _pure(name: str, runner: Callable[..., Outcome]) -> Spec:
    return Spec(
        name,
        BOTH,
        lambda c, p, rng: runner(c, p.eps, p.neighbours, _finite(p), rng),
        lambda p: baselines.pure_cost(name, p.eps, p.neighbours),
        _pure_hint,
        needs_vocabulary=True,
        pure=True,
    )


# --- stability, choosing, limited-domain ----------------------------------------------------


def _stability_hint(p: Public) -> str:
    t = baselines.stability_threshold(p.eps, p.delta)
    return (
        f"stability names the top itemset only when its support leads the runner-up's by more "
        f"than {t} records (plus noise, threshold 1 + ceil((4/eps) ln(1/delta)))"
    )


def _choosing_hint(p: Public) -> str:
    t = baselines.choosing_threshold(p.eps, p.delta, p.growth)
    return (
        f"choosing names an itemset only when the top support exceeds {t} records (plus noise; "
        f"threshold ceil((8/eps) ln(4k/(eps delta))), k = {p.growth})"
    )


def _limited_domain_hint(p: Public) -> str:
    margin = 1 + log_fraction(Fraction(p.candidates) / p.delta) / fraction_to_float(p.eps)
    return (
        f"limited-domain names an itemset only when its support beats the "
        f"{p.candidates + 1}-th highest by about {margin:.0f} records or more (plus Gumbel "
        f"noise; margin 1 + ln(k-bar/delta)/eps with k-bar = {p.candidates})"
    )


STABILITY = Spec(
    "stability",
    BOTH,
    lambda c, p, rng: baselines.run_stability(c, p.eps, p.delta, rng),
    lambda p: baselines.stability_cost(p.eps, p.delta),
    _stability_hint,
    extra=lambda p: {"threshold": baselines.stability_threshold(p.eps, p.delta)},
)
CHOOSING = Spec(
    "choosing",
    ADD_REMOVE,
    lambda c, p, rng: baselines.run_choosing(c, p.eps, p.delta, p.growth, rng),
    lambda p: baselines.choosing_cost(p.eps, p.delta, p.growth),
    _choosing_hint,
    extra=lambda p: {
        "growth_bound": p.growth,
        "threshold": baselines.choosing_threshold(p.eps, p.delta, p.growth),
    },
    needs_record_bound=True,
    check=lambda p: baselines.check_choosing(p.eps, p.delta, p.growth),
)
LIMITED_DOMAIN = Spec(
    "limited-domain",
    ADD_REMOVE,
    lambda c, p, rng: baselines.run_limited_domain(c, p.eps, p.delta, p.candidates, rng),
    lambda p: baselines.limited_domain_cost(p.eps, p.delta, p.candidates),
    _limited_domain_hint,
    extra=lambda p: {"candidates": p.candidates},
)

REGISTRY: dict[str, Spec] = {
    s.name: s
    for s in (
        LMM,
        LMM_GAP,
        LMM_TIGHT,
        _pure("em", baselines.run_em),
        _pure("noisy-max-laplace", baselines.run_noisy_max_laplace),
        _pure("permute-and-flip", baselines.run_permute_and_flip),
        STABILITY,
        CHOOSING,
        LIMITED_DOMAIN,
    )
}
NAMES: tuple[str, ...] = tuple(REGISTRY)


def get(name: str) -> Spec:
    """The Spec of a mechanism name (KeyError for an unknown one; callers validate first)."""
    return REGISTRY[name]


def none_hint(name: str, p: Public, what: str) -> str:
    """The curator's one-line hint after a "none" answer, from public parameters only."""
    return (
        f"no {what} was certified (answer: none). At eps={_fmt(p.eps)}, delta={_fmt(p.delta)} "
        f"{get(name).none_hint(p)}; a larger --eps or --delta lowers that margin."
    )
