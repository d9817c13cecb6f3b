"""The margin search (SPEC §2 step 2, §2b step 1), sampled exactly without simulating every rank.

Given base = M - G (lmm) or c(1) - G (lmm-gap), rank l passes iff Z_l < t_l = base - c(l+1) - T(l)
with Z_l ~ DLap(b), b = 4/alpha_s, independently. Only the first passing rank is released, so we
sample it directly by inversion of its survival function: with hazard lambda_l = -ln(1 - p_l) and
E ~ Exp(1), the first pass is min{l : lambda_1 + ... + lambda_l >= E}. Ranks that share c(l+1) and
T(l) form runs with one hazard. All comparisons are certified (dpfim.samplers.interval); an
undecided comparison draws more bits of E and the walk is redone. A tail bound ends the search
with "no pass" without reading deeper counts. Proof: docs/privacy.md, "Sampling the search".
"""

from __future__ import annotations

import functools
from fractions import Fraction

import numpy as np

from dpfim.mechanisms.base import RankedCounts
from dpfim.mechanisms.thresholds import MarginShares, tau, threshold_runs
from dpfim.samplers import interval as iv
from dpfim.samplers.lazy import LazyUniform
from dpfim.samplers.rng import RandomSource

_UNDECIDED = -1
_CHECK_EVERY = 16  # runs between tail-bound checks while counts are still nonzero
_LOWER = 1 - 2.0**-40


class _Hazards:
    """lambda(t) = -ln P(Z >= t) intervals for Z ~ DLap(b), cached per t."""

    def __init__(self, scale: Fraction, prec: int) -> None:
        self.prec = prec
        self.inv_b = iv.exact(1 / scale, prec)
        self.q = iv.exp(iv.sub(iv.ZERO, self.inv_b, prec), prec)
        self.one_plus_q = iv.add(iv.exact(1, prec), self.q, prec)
        self.log1pq = iv.log(self.one_plus_q, prec)
        self._cache: dict[int, iv.Interval] = {}

    def tail_p(self, exponent: iv.Interval) -> iv.Interval:
        """exp(-exponent / b) / (1 + q)."""
        p = self.prec
        e = iv.exp(iv.sub(iv.ZERO, iv.mul(exponent, self.inv_b, p), p), p)
        return iv.div(e, self.one_plus_q, p)

    def hazard(self, t: int) -> iv.Interval:
        got = self._cache.get(t)
        if got is not None:
            return got
        p = self.prec
        if t >= 1:  # 1 - p_l = P(Z >= t) = q^t / (1 + q)
            lam = iv.add(iv.mul(iv.exact(t, p), self.inv_b, p), self.log1pq, p)
        else:  # p_l = P(Z >= 1 - t) = q^(1-t) / (1 + q)
            pl = self.tail_p(iv.exact(1 - t, p))
            one_minus = iv.sub(iv.exact(1, p), pl, p)
            # p <= -ln(1 - p) <= p / (1 - p) stays tight for tiny p; the direct -ln(1 - p)
            # tightens as the precision grows. Both contain lambda, so does their intersection.
            bounds = iv.hull(pl, iv.div(pl, one_minus, p))
            lam = iv.intersect(bounds, iv.sub(iv.ZERO, iv.log(one_minus, p), p))
        self._cache[t] = lam
        return lam


@functools.lru_cache(maxsize=32)
def _hazards(scale: Fraction, prec: int) -> _Hazards:
    return _Hazards(scale, prec)


def first_pass(
    base: int, split: MarginShares, counts: RankedCounts, last_rank: int, rng: RandomSource
) -> int | None:
    """The first rank l <= last_rank that passes the margin test, or None if none does.

    Reads counts only as deep as the search can reach; calls counts.ensure to go deeper.
    """
    if last_rank < 1:
        return None
    u = LazyUniform(rng)
    while True:
        prec = u.precision()
        found = _walk(base, split, counts, last_rank, u.exponential(prec), prec)
        if found != _UNDECIDED:
            return found if found > 0 else None
        u.refine()


def _walk(
    base: int,
    split: MarginShares,
    counts: RankedCounts,
    last_rank: int,
    e: iv.Interval,
    prec: int,
) -> int:
    """One certified pass over the ranks: a rank, 0 for "no pass", or _UNDECIDED."""
    hz = _hazards(split.search_scale, prec)
    runs = threshold_runs(split)  # cached; ranks past last_rank are never reached
    _, run_last, run_t = next(runs)
    lam_sum = iv.ZERO
    ell = 1
    n_runs = 0
    neg: np.ndarray = -counts.counts
    while ell <= last_rank:
        while ell > run_last:
            _, run_last, run_t = next(runs)
        known = len(counts.counts)
        if ell + 1 <= known:
            c = int(counts.counts[ell])
            end_count = int(np.searchsorted(neg, -c, side="right")) - 1
        elif counts.complete:  # past the rows: count 0, or the clip floor t
            c, end_count = counts.clipped_at, last_rank
        else:
            if _tail_below(ell, base, lam_sum, e, split, hz):
                return 0
            counts.ensure(max(ell + 1, 2 * known))
            neg = -counts.counts
            continue
        end = min(end_count, run_last, last_rank)
        m = end - ell + 1
        lam = hz.hazard(base - c - run_t)
        new_sum = iv.add(lam_sum, iv.mul(iv.exact(m, prec), lam, prec), prec)
        if iv.certainly_less(new_sum, e):
            lam_sum, ell = new_sum, end + 1
            n_runs += 1
            check = c == 0 or n_runs % _CHECK_EVERY == 0
            if check and ell <= last_rank and _tail_below(ell, base, lam_sum, e, split, hz):
                return 0
            continue
        if not iv.certainly_at_most(e, new_sum):
            return _UNDECIDED
        j = iv.ceil_if_certain(iv.div(iv.sub(e, lam_sum, prec), lam, prec))
        if j is None:
            return _UNDECIDED
        if not 1 <= j <= m:
            raise AssertionError("margin search: first pass outside its run")
        return ell + j - 1
    return 0


def _tail_below(
    a: int, base: int, lam_sum: iv.Interval, e: iv.Interval, split: MarginShares, hz: _Hazards
) -> bool:
    """Certify that no rank >= a can pass: lam_sum + (hazard of all ranks >= a) < E.

    Uses only c >= 0: for l >= a, T(l) > tau(l) - 1 and tau(l) >= tau(a) + b ln(l(l+1)/(a(a+1))),
    so sum_{l>=a} p_l <= exp(-(tau(a) - base)/b) (a+1)/(1+q) when base <= tau(a).
    """
    tau_lo = tau(a, split) * _LOWER - 2.0**-40
    if base > tau_lo:
        return False
    p = hz.prec
    gap = iv.sub(iv.exact(Fraction(tau_lo), p), iv.exact(base, p), p)
    p_max = hz.tail_p(gap)
    p_sum = iv.mul(p_max, iv.exact(a + 1, p), p)
    bound = iv.div(p_sum, iv.sub(iv.exact(1, p), p_max, p), p)
    return iv.certainly_less(iv.add(lam_sum, bound, p), e)
