"""The budget split and the margin thresholds tau(l) of the Large Margin Mechanism.

The one threshold function of dpfim. Derivation: docs/privacy.md, "Thresholds".
"""

from __future__ import annotations

import functools
import math
from collections.abc import Iterator
from dataclasses import dataclass
from fractions import Fraction

from dpfim.params import fraction_to_float, log_fraction

# Any theta >= tau is valid; a float evaluation of tau is pushed up by this much (SPEC §2).
_NUDGE = 2.0**-40


@dataclass(frozen=True)
class MarginShares:
    """How one round's (eps, delta) is shared between the margin mechanism's own steps (its
    shares; a run's division among its K rounds is accounting.Split).

    alpha_m: max estimate (0 for lmm-gap, which has none); alpha_s: margin search;
    alpha_a: selection. delta_m, delta_s: certification failure of the max estimate and the
    search; delta_leak = beta * exp(alpha_m + alpha_s): what the selection can leak.
    Invariant: the alphas sum to eps and the deltas to delta (checked).
    """

    alpha_m: Fraction
    alpha_s: Fraction
    alpha_a: Fraction
    delta_m: Fraction
    delta_s: Fraction
    delta_leak: Fraction

    def __post_init__(self) -> None:
        if self.alpha_m < 0 or self.alpha_s <= 0 or self.alpha_a <= 0:
            raise ValueError("split: alpha_s, alpha_a must be > 0 and alpha_m >= 0")
        if (self.alpha_m > 0) != (self.delta_m > 0):
            raise ValueError("split: delta_m > 0 exactly when there is a max estimate")
        if self.delta_s <= 0 or self.delta_leak <= 0 or self.delta_m < 0:
            raise ValueError("split: delta_s and delta_leak must be > 0")

    @property
    def eps(self) -> Fraction:
        return self.alpha_m + self.alpha_s + self.alpha_a

    @property
    def delta(self) -> Fraction:
        return self.delta_m + self.delta_s + self.delta_leak

    @property
    def log_beta(self) -> float:
        """ln(beta), beta = delta_leak * exp(-(alpha_m + alpha_s))."""
        return log_fraction(self.delta_leak) - fraction_to_float(self.alpha_m + self.alpha_s)

    @property
    def search_scale(self) -> Fraction:
        """Scale of each per-rank noise Z_l ~ DLap(4/alpha_s)."""
        return 4 / self.alpha_s

    @property
    def offset_scale(self) -> Fraction:
        """Scale of the shared search offset G ~ DLap(2/alpha_s)."""
        return 2 / self.alpha_s

    @property
    def max_scale(self) -> Fraction:
        """Scale of the max-estimate noise Z ~ DLap(1/alpha_m) (lmm only)."""
        return 1 / self.alpha_m


def paper_split(eps: Fraction, delta: Fraction) -> MarginShares:
    """The paper's split: alpha/3 to each step; delta_m = delta_s = delta/3,
    beta = delta * exp(-2 alpha/3) / 3, so the selection leaks beta * exp(2 alpha/3) = delta/3."""
    third = eps / 3
    return MarginShares(third, third, third, delta / 3, delta / 3, delta / 3)


def gap_split(eps: Fraction, delta: Fraction) -> MarginShares:
    """lmm-gap (SPEC §2b): alpha_s = 2 alpha/3, alpha_a = alpha/3, delta_s = delta/2,
    beta = delta * exp(-alpha_s) / 2."""
    return MarginShares(Fraction(0), 2 * eps / 3, eps / 3, Fraction(0), delta / 2, delta / 2)


@functools.lru_cache(maxsize=4096)
def tau(ell: int, split: MarginShares, *, discrete: bool = True) -> float:
    """tau(l) in records (count space), float evaluation.

    discrete=True: all noises discrete Laplace (what dpfim runs); False: the paper's continuous
    Laplace (for comparison with the paper). The max-estimate term is absent when alpha_m = 0.
    """
    if ell < 1:
        raise ValueError("ell must be >= 1")
    a_m, a_s, a_a = (fraction_to_float(a) for a in (split.alpha_m, split.alpha_s, split.alpha_a))
    ln_dm = log_fraction(split.delta_m) if split.alpha_m > 0 else 0.0
    ln_ds = log_fraction(split.delta_s)
    ln_ll1 = math.log(ell) + math.log(ell + 1)
    half = 0.0 if discrete else math.log(2)  # continuous tails are half the discrete bound
    total = 0.0
    if split.alpha_m > 0:
        total += (-ln_dm + (-half if not discrete else 0.0)) / a_m
    total += (2 / a_s) * (math.log(2) - half - ln_ds)
    total += (4 / a_s) * (math.log(2) - half + ln_ll1 - ln_ds)
    total += 2 * (1 + (math.log(ell) - split.log_beta) / a_a)
    return total


def threshold(ell: int, split: MarginShares) -> int:
    """The integer threshold T(l) = floor(theta_l), theta_l = tau(l)(1 + 2^-40) + 2^-40 >= tau(l).

    The search test is M - c(l+1) - Z_l - G > T(l), in integers.
    """
    t = tau(ell, split)
    return math.floor(t * (1 + _NUDGE) + _NUDGE)


def threshold_runs(
    split: MarginShares, start: int = 1, stop: int | None = None
) -> Iterator[tuple[int, int, int]]:
    """Yield (first, last, T) for consecutive rank ranges sharing one integer threshold.

    The partition depends on (eps, delta) only. Each range uses T(last), which is >= tau(l) for
    every l in it because tau is increasing; so the search may treat a range as identical trials.
    With start = 1 and no stop the runs come from a per-split cache.
    """
    if start == 1 and stop is None:
        yield from _cached_runs(split)
        return
    yield from _compute_runs(split, start, stop)


class _RunCache:
    """The runs of one split, computed as far as anyone has asked."""

    def __init__(self, split: MarginShares) -> None:
        self.runs: list[tuple[int, int, int]] = []
        self._gen = _compute_runs(split, 1, None)

    def __iter__(self) -> Iterator[tuple[int, int, int]]:
        i = 0
        while True:
            if i == len(self.runs):
                self.runs.append(next(self._gen))
            yield self.runs[i]
            i += 1


@functools.lru_cache(maxsize=64)
def _cached_runs(split: MarginShares) -> _RunCache:
    return _RunCache(split)


def _compute_runs(
    split: MarginShares, start: int, stop: int | None
) -> Iterator[tuple[int, int, int]]:
    first = start
    while stop is None or first <= stop:
        t_first = threshold(first, split)
        lo, hi = first, first + 1
        # Exponential then binary search for the last rank whose threshold is still t_first.
        while threshold(hi, split) <= t_first and (stop is None or hi <= stop):
            lo, hi = hi, first + 2 * (hi - first)
        if stop is not None:
            hi = min(hi, stop + 1)
        while hi - lo > 1:
            mid = (lo + hi) // 2
            if threshold(mid, split) <= t_first:
                lo = mid
            else:
                hi = mid
        last = lo
        yield first, last, max(t_first, threshold(last, split))
        first = last + 1
