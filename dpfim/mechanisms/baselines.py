"""The comparison mechanisms of SPEC §6, in count space, each sampled exactly.

Every mechanism reads sensitivity-1 counts only (a record adds or removes at most 1 to every
count). Under replace-one neighbours counts are not monotone (one may rise while another falls),
so the exponential mechanism and both report-noisy-max variants use their general forms (scale
2/eps); under add/remove all counts move the same way and the monotone forms (scale 1/eps) are
valid. Each `run_*` docstring states its privacy; docs/privacy.md §12-§17 has the proofs.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from fractions import Fraction

import numpy as np

from dpfim.accounting import ApproxDP, BoundedRange, Measure, PureDP
from dpfim.counts import MAX_LISTED
from dpfim.errors import ParameterError
from dpfim.mechanisms.base import ADD_REMOVE, BOTH, Mechanism, Outcome, Public, RankedCounts, Steps
from dpfim.mechanisms.noisy_max import Groups, Named, Noise, argmax_group, reveal_floor
from dpfim.mechanisms.selection import groups as groups_of
from dpfim.mechanisms.selection import pick_member, select_count
from dpfim.params import fraction_to_float, log_fraction
from dpfim.samplers import interval as iv
from dpfim.samplers.laplace import discrete_laplace
from dpfim.samplers.lazy import LazyUniform
from dpfim.samplers.rng import RandomSource

_UP = 1 + 2.0**-40


def round_up(x: float) -> int:
    """An integer >= x for a float x computed to a few ulps (the margin of thresholds.threshold)."""
    return math.ceil(x * _UP + 2.0**-40)


# --- report-noisy-max family over a finite universe ------------------------------------------


def noisy_max_scale(eps: Fraction, neighbours: str) -> Fraction:
    """2/eps in general (replace-one), 1/eps for monotone counts (add/remove)."""
    return (1 if neighbours == "add-remove" else 2) / eps


def _noisy_argmax(
    counts: RankedCounts, universe_size: int, noise: Noise, rng: RandomSource
) -> Outcome:
    groups = Groups(counts, universe_size, counts.unlisted, reveal_floor(noise))
    g = argmax_group(groups, noise, rng)
    if g is None:
        return Outcome(None, None, None, zero_pick=True)
    if isinstance(g, Named):
        return Outcome(None, None, None, named=g.key, named_count=g.count)
    return Outcome(None, None, pick_member(counts.counts, groups.values[g], rng))


def run_em(
    counts: RankedCounts, eps: Fraction, neighbours: str, universe_size: int, rng: RandomSource
) -> Outcome:
    """The exponential mechanism over the whole finite universe (McSherry & Talwar 2007).

    P(I) proportional to exp(eps c(I) / 2) (replace-one; the general form for sensitivity 1), or
    exp(eps c(I)) under add/remove (monotone counts). (eps, 0)-DP. Sampled as the Gumbel-max
    argmax c(I) + Gumbel(scale 2/eps, resp. 1/eps), which has exactly this law; the zero-count
    itemsets are one group sampled in aggregate. Precondition: a finite universe of K itemsets.
    """
    return _noisy_argmax(
        counts, universe_size, Noise("gumbel", noisy_max_scale(eps, neighbours)), rng
    )


def run_noisy_max_laplace(
    counts: RankedCounts, eps: Fraction, neighbours: str, universe_size: int, rng: RandomSource
) -> Outcome:
    """Report noisy max with Laplace noise (Bhaskar et al. KDD 2010; Dwork & Roth Claim 3.9).

    argmax_I c(I) + Lap(2/eps) (replace-one) or + Lap(1/eps) (add/remove: monotone counting
    queries). (eps, 0)-DP; only the argmax is released, never a noisy value. Precondition: a
    finite universe of K itemsets (the zero-count ones sampled in aggregate).
    """
    noise = Noise("laplace", noisy_max_scale(eps, neighbours))
    return _noisy_argmax(counts, universe_size, noise, rng)


def run_permute_and_flip(
    counts: RankedCounts, eps: Fraction, neighbours: str, universe_size: int, rng: RandomSource
) -> Outcome:
    """Permute-and-flip (McKenna & Sheldon 2020), run as report noisy max with exponential noise,
    which has the same output law (Ding et al. 2021).

    argmax_I c(I) + Exp(scale 2/eps) (replace-one), Exp(scale 1/eps) under add/remove
    (monotone). (eps, 0)-DP. Precondition: a finite universe of K itemsets.
    """
    noise = Noise("exponential", noisy_max_scale(eps, neighbours))
    return _noisy_argmax(counts, universe_size, noise, rng)


def pure_steps(name: str, eps: Fraction, neighbours: str) -> Steps:
    form = "monotone form" if neighbours == "add-remove" else "general form"
    b = noisy_max_scale(eps, neighbours)
    step = {
        "em": f"exponential mechanism over the universe, weight exp(c/{b})",
        "noisy-max-laplace": f"argmax of c + Lap({b})",
        "permute-and-flip": f"permute-and-flip: argmax of c + Exp({b})",
    }[name]
    return Steps(
        ((step, "itemset", eps, Fraction(0)),),
        f"(eps, 0)-DP, {form} for {neighbours} neighbours. delta is not used.",
    )


def _finite(p: Public) -> int:
    if p.universe_size is None:
        raise ValueError("this mechanism needs a finite universe")
    return p.universe_size


def _pure_hint(p: Public) -> str:
    return (
        "this mechanism always names an itemset of the declared universe; a none answer "
        "means the universe holds no itemset"
    )


def _pure(
    name: str,
    runner: Callable[[RankedCounts, Fraction, str, int, RandomSource], Outcome],
    measure: Callable[[Fraction], Measure],
) -> Mechanism:
    return Mechanism(
        name,
        BOTH,
        lambda c, p, rng: runner(c, p.eps, p.neighbours, _finite(p), rng),
        lambda p: measure(p.eps),
        _pure_hint,
        steps=lambda p: pure_steps(name, p.eps, p.neighbours),
        needs_vocabulary=True,
        pure=True,
    )


# Privacy (docs/privacy.md, "Tight accounting"): the exponential mechanism is eps-bounded range
# under both relations (Durfee & Rogers 2019; its general and monotone forms both have log
# probability ratios within an interval of width eps). Report-noisy-max with Laplace or
# exponential noise is pure eps-DP only: it is NOT bounded range (privacy-loss ranges of 1.13 eps
# and 1.80 eps on small cases, issue 20), so it is never charged as such.
EM = _pure("em", run_em, BoundedRange)
NOISY_MAX_LAPLACE = _pure("noisy-max-laplace", run_noisy_max_laplace, PureDP)
PERMUTE_AND_FLIP = _pure("permute-and-flip", run_permute_and_flip, PureDP)


# --- stability (A_dist) ------------------------------------------------------------------------


def stability_threshold(eps: Fraction, delta: Fraction) -> int:
    """T = 1 + ceil((4/eps) ln(1/delta)): P(DLap(4/eps) >= T - 1) <= delta (docs/privacy.md §15)."""
    return 1 + round_up(float(4 / eps) * -log_fraction(delta))


def run_stability(
    counts: RankedCounts, eps: Fraction, delta: Fraction, rng: RandomSource
) -> Outcome:
    """The stability-based (gap) mechanism A_dist (Smith & Thakurta 2013, as stated in
    Beimel, Nissim, Stemmer 2013).

    gap = c(1) - c(2); release the top itemset (a uniformly random one of the tied top) if
    gap + DLap(4/eps) > T with T = 1 + ceil((4/eps) ln(1/delta)), else none. (eps, delta)-DP
    under replace-one and add/remove (the gap has sensitivity 2, resp. 1; if the top differs
    between neighbours, the gap is at most 2 and the release has probability <= delta).
    Works in the open universe: c(2) = 0 if fewer than two itemsets occur.
    """
    counts.ensure(2)
    known = counts.counts
    rest = counts.clipped_at  # past the listed rows (0 unless clipped at t)
    c1 = int(known[0]) if len(known) else rest
    c2 = int(known[1]) if len(known) > 1 else rest
    noisy_gap = c1 - c2 + discrete_laplace(4 / eps, rng)
    if noisy_gap <= stability_threshold(eps, delta):
        return Outcome(None, None, None)
    if c1 == rest:
        return Outcome(None, None, None, zero_pick=True)
    return Outcome(None, None, pick_member(known, c1, rng))


def stability_steps(eps: Fraction, delta: Fraction) -> Steps:
    return Steps(
        (
            (
                f"noisy gap c(1) - c(2) + DLap({4 / eps}) against threshold "
                "1 + ceil((4/eps) ln(1/delta))",
                "itemset",
                eps,
                delta,
            ),
        ),
        "(eps, delta)-DP (A_dist). delta bounds the chance of releasing a top itemset that is "
        "not stable between neighbours.",
    )


def _stability_hint(p: Public) -> str:
    t = stability_threshold(p.eps, p.delta)
    return (
        f"stability names the top itemset only when its support leads the runner-up's by more "
        f"than {t} records (plus noise, threshold 1 + ceil((4/eps) ln(1/delta)))"
    )


STABILITY = Mechanism(
    "stability",
    BOTH,
    lambda c, p, rng: run_stability(c, p.eps, p.delta, rng),
    lambda p: ApproxDP(p.eps, p.delta),
    _stability_hint,
    extra=lambda p: {"threshold": stability_threshold(p.eps, p.delta)},
    steps=lambda p: stability_steps(p.eps, p.delta),
)


# --- choosing (Beimel, Nissim, Stemmer 2013) ---------------------------------------------------


def check_choosing(eps: Fraction, delta: Fraction, growth: int) -> None:
    """The proof of docs/privacy.md §16 needs k e^(-eps T / 4) <= delta for the integer
    threshold T in use (implied by eps^2 delta <= 16 k, so always true for eps <= 4).

    Outside it the proof says nothing, and at some such points the mechanism does fail: at
    eps = 10, delta = 0.5, k = 1 (T = 0) one added record {a, b} is named with probability
    ~0.93 > delta. Evaluated in floats with a margin towards refusing.
    """
    t = choosing_threshold(eps, delta, growth)
    if math.log(growth) - fraction_to_float(eps) * t / 4 > log_fraction(delta) - 1e-9:
        raise ParameterError(
            f"--mechanism choosing is proven (eps, delta)-DP only when m e^(-eps T/4) <= delta "
            f"(m = max(k, M) = {growth}, T = {t}); lower --eps or --delta (docs/privacy.md §16)"
        )


def choosing_threshold(eps: Fraction, delta: Fraction, growth: int) -> int:
    """T = ceil((8/eps) ln(4k/(eps delta))), k the growth bound (docs/privacy.md §16)."""
    log_term = log_fraction(Fraction(4 * growth) / (eps * delta))
    return round_up(float(8 / eps) * log_term)


def run_choosing(
    counts: RankedCounts, eps: Fraction, delta: Fraction, growth: int, rng: RandomSource
) -> Outcome:
    """The choosing mechanism (Beimel, Nissim, Stemmer 2013) for k-bounded growth.

    A record truncated to B items holds at most k = C(B, r) r-itemsets, so adding it raises at
    most k counts, each by 1 (k-bounded growth). If c(1) + DLap(4/eps) <= T with
    T = ceil((8/eps) ln(4k/(eps delta))), answer none; otherwise the exponential mechanism with
    weight exp(eps c(I)/4) over the itemsets with c(I) >= 1 (sampled as Gumbel-max, exactly).
    (eps, delta)-DP under add/remove neighbours. Precondition: --max-record-items B. Works in the
    open universe (it only ever names itemsets that occur). Needs every nonzero count.

    Clipped counts (the engine's row budget ran out at the floor T, docs/privacy.md §1.2): the
    quality is q(I) = max(c(I) - T, 0) and the listed itemsets are those with q >= 1. Adding a
    record either keeps T (then at most k qualities rise) or raises it by 1 (then at most M
    listed itemsets fall out), so the threshold takes m = max(k, M) for k (§16); `growth` is m.
    """
    counts.lower_to(1)  # every nonzero count (or every count > t), in one pass where it can
    t = counts.clipped_at
    c1 = (int(counts.counts[0]) if len(counts.counts) else t) - t
    if c1 + discrete_laplace(4 / eps, rng) <= choosing_threshold(eps, delta, growth):
        return Outcome(None, None, None)
    if c1 == 0:  # cannot pass by more than the threshold allows; no itemset occurs
        return Outcome(None, None, None)
    groups = Groups(counts, len(counts.counts))  # Gumbel-max: the shift by t changes nothing
    g = argmax_group(groups, Noise("gumbel", 4 / eps), rng)
    assert isinstance(g, int)
    return Outcome(None, None, pick_member(counts.counts, groups.values[g], rng))


def choosing_steps(eps: Fraction, delta: Fraction, growth: int) -> Steps:
    return Steps(
        (
            (
                f"noisy top count c(1) + DLap({4 / eps}) against "
                f"ceil((8/eps) ln(4m/(eps delta))), m = max(k, M) = {growth}",
                "whether an itemset is named",
                eps / 4,
                Fraction(0),
            ),
            (
                f"exponential mechanism exp(c/{4 / eps}) over the itemsets that occur",
                "itemset",
                3 * eps / 4,
                delta,
            ),
        ),
        "(eps, delta)-DP under add/remove neighbours (m-bounded growth one way, m = max(k, M), "
        "k = C(B, r), M the most itemsets listed). "
        "Only the check and the selection together are (eps, delta)-DP: the per-step amounts "
        "split eps for accounting; the selection alone is not (3 eps/4, delta)-DP.",
    )


def choosing_m(p: Public) -> int:
    """m = max(k, M): k = sum of C(B, r), the itemsets one record holds; M the most itemsets
    the engines ever list (MAX_LISTED a size), which bounds how many leave the listed rows
    when one added record raises the clip floor (docs/privacy.md §16)."""
    return max(p.growth, len(p.sizes) * MAX_LISTED)


def _choosing_hint(p: Public) -> str:
    m = choosing_m(p)
    t = choosing_threshold(p.eps, p.delta, m)
    return (
        f"choosing names an itemset only when the top support exceeds {t} records (plus noise; "
        f"threshold ceil((8/eps) ln(4m/(eps delta))), m = max(k, M) = {m})"
    )


CHOOSING = Mechanism(
    "choosing",
    ADD_REMOVE,
    lambda c, p, rng: run_choosing(c, p.eps, p.delta, choosing_m(p), rng),
    lambda p: ApproxDP(p.eps, p.delta),
    _choosing_hint,
    extra=lambda p: {
        "growth_bound": p.growth,
        "listed_bound": len(p.sizes) * MAX_LISTED,
        "threshold": choosing_threshold(p.eps, p.delta, choosing_m(p)),
    },
    steps=lambda p: choosing_steps(p.eps, p.delta, choosing_m(p)),
    needs_record_bound=True,
    check=lambda p: check_choosing(p.eps, p.delta, choosing_m(p)),
)


# --- limited domain (Durfee & Rogers 2019), top-1 ----------------------------------------------


def run_limited_domain(
    counts: RankedCounts, eps: Fraction, delta: Fraction, candidates: int, rng: RandomSource
) -> Outcome:
    """The limited-domain mechanism (Durfee & Rogers 2019, Algorithm 1 with k = 1).

    Only the top k-bar counts h_1..h_k and h_(k+1) are read. With Gumbel(1/eps) noise on each of
    the top k-bar and on the threshold h_bot = h_(k+1) + 1 + ln(k-bar/delta)/eps, release the
    noisy argmax if it beats the noisy threshold, else none. By the Gumbel-max identity this is
    the exponential mechanism over {top k-bar} + {none} with weights e^(eps h_i) and
    e^(eps h_bot) = (k-bar/delta) e^(eps (h_(k+1) + 1)), sampled here exactly in that form.
    (eps, delta)-DP under add/remove neighbours (counts move together); open universe.
    """
    counts.ensure(candidates + 1)
    known = counts.counts
    rest = counts.clipped_at  # past the listed rows (0 unless clipped at t)
    h_next = int(known[candidates]) if len(known) > candidates else rest
    if _limited_domain_says_none(known, candidates, h_next, eps, delta, rng, rest):
        return Outcome(None, None, None)
    c = select_count(known, candidates, 2 * eps, rng, rest)  # weights exp(eps c)
    if c == rest:
        return Outcome(None, None, None, zero_pick=True)
    return Outcome(None, None, pick_member(known, c, rng))


def _limited_domain_says_none(
    known: np.ndarray,
    candidates: int,
    h_next: int,
    eps: Fraction,
    delta: Fraction,
    rng: RandomSource,
    rest: int = 0,
) -> bool:
    """Bernoulli(w_bot / (w_bot + W)) with W = sum over the top k-bar of e^(eps (h_i - c1)) and
    w_bot = (k/delta) e^(eps (h_next + 1 - c1)), decided on a lazily refined uniform."""
    values, mult = groups_of(known, candidates, rest)
    c1 = int(values[0])
    u = LazyUniform(rng)
    while True:
        prec = u.precision()
        total = iv.ZERO
        for c, m in zip(values.tolist(), mult.tolist(), strict=True):
            w = iv.exp(iv.exact(eps * (c - c1), prec), prec)
            total = iv.add(total, iv.mul(iv.exact(m, prec), w, prec), prec)
        w_bot = iv.mul(
            iv.exact(Fraction(candidates) / delta, prec),
            iv.exp(iv.exact(eps * (h_next + 1 - c1), prec), prec),
            prec,
        )
        p = iv.div(w_bot, iv.add(w_bot, total, prec), prec)
        x = u.interval(prec)
        if iv.certainly_less(x, p):
            return True
        if iv.certainly_at_most(p, x):
            return False
        u.refine()


def limited_domain_steps(eps: Fraction, delta: Fraction, candidates: int) -> Steps:
    return Steps(
        (
            (
                f"Gumbel({1 / eps}) noise on the top {candidates} counts and on the threshold "
                f"h_({candidates + 1}) + 1 + ln({candidates}/delta)/eps",
                "itemset",
                eps,
                delta,
            ),
        ),
        "(eps, delta)-DP under add/remove neighbours (Durfee & Rogers 2019, k = 1).",
    )


def _limited_domain_hint(p: Public) -> str:
    margin = 1 + log_fraction(Fraction(p.candidates) / p.delta) / fraction_to_float(p.eps)
    return (
        f"limited-domain names an itemset only when its support beats the "
        f"{p.candidates + 1}-th highest by about {margin:.0f} records or more (plus Gumbel "
        f"noise; margin 1 + ln(k-bar/delta)/eps with k-bar = {p.candidates})"
    )


LIMITED_DOMAIN = Mechanism(
    "limited-domain",
    ADD_REMOVE,
    lambda c, p, rng: run_limited_domain(c, p.eps, p.delta, p.candidates, rng),
    lambda p: ApproxDP(p.eps, p.delta),
    _limited_domain_hint,
    extra=lambda p: {"candidates": p.candidates},
    steps=lambda p: limited_domain_steps(p.eps, p.delta, p.candidates),
    parameters=("candidates",),
)
