"""Report-noisy-max over a huge universe, sampled exactly without drawing one noise per itemset.

The baselines `em` (Gumbel noise: the Gumbel-max form of the exponential mechanism),
`noisy-max-laplace` (Laplace noise) and `permute-and-flip` (exponential noise, which is the same
mechanism) all output argmax_I c(I) + X_I with X_I i.i.d. continuous noise of scale b over every
r-itemset of a finite universe of size K. Most of the K itemsets have count 0, and the counts that
matter are known from the top down, so we never draw K noises. Itemsets with equal count form a
group (count c, multiplicity m); the largest noisy value of a group is c + max of m noises, whose
CDF is F(x - c)^m. The walk:

1. Sample the top group's maximum V by inversion.
2. Over the following groups (decreasing count), the first one whose maximum exceeds V has the
   law of min{g : Lambda_g >= E}, E ~ Exp(1), Lambda_g the sum of the hazards -m_h ln F(V - c_h)
   of the groups before it and itself (the same inversion as the margin search, docs/privacy.md
   §7). Sample it, then its maximum conditioned on exceeding V (inversion); it becomes V.
3. Repeat until no later group exceeds V. A tail bound ends the walk: every group from g on has
   count <= c_g, so their total hazard is at most (their multiplicity) * -ln F(V - c_g). Itemsets
   below the counting engine's threshold s are bounded by count s - 1 the same way, so the deep
   counts are read only when the bound cannot decide.

With a declared universe whose itemsets can be named and counted one at a time (peeling on the
local engine), only the counts >= a public floor s* = floor(2b) + 1 are listed; the itemsets
below it are decided after the walk by drawing them one by one, in decreasing order of the
dominating value (s* - 1) + X_I, with their exact counts (docs/privacy.md §12, "Below the
floor"). The output law is the same; the engine never counts below s*.

The winner is a uniformly random member of the last group (its members are exchangeable). Noise
is continuous, so ties have probability 0. Every comparison is certified with interval arithmetic
on lazily refined uniforms; an undecided one refines every uniform and redoes the walk, so the
output is the exact argmax for the infinitely precise uniforms. Proof: docs/privacy.md §12.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from fractions import Fraction

import numpy as np
from mpmath.libmp import finf, fninf, fzero, libmpi, mpf_cmp, to_float

from dpfim.counts import RankedCounts, Unlisted
from dpfim.samplers import interval as iv
from dpfim.samplers.lazy import LazyUniform
from dpfim.samplers.rng import RandomSource

NOISES = ("gumbel", "exponential", "laplace")
_START_PREC = 128
_INF: iv.Interval = (finf, finf)


def _neg(a: iv.Interval, prec: int) -> iv.Interval:
    return libmpi.mpi_neg(a, prec)  # type: ignore[no-any-return]


def _hull2(a: iv.Interval, b: iv.Interval) -> iv.Interval:
    lo = a[0] if mpf_cmp(a[0], b[0]) <= 0 else b[0]
    hi = a[1] if mpf_cmp(a[1], b[1]) >= 0 else b[1]
    return (lo, hi)


def _ln2(prec: int) -> iv.Interval:
    return iv.log(iv.exact(2, prec), prec)


def _neg_log1m(s: iv.Interval, prec: int) -> iv.Interval:
    """-ln(1 - s) for s in [0, 1): the bracket [s, s/(1 - s)] (tight for tiny s) intersected
    with the direct interval (tight as the precision grows)."""
    one_minus = iv.sub(iv.exact(1, prec), s, prec)
    bracket = iv.hull(s, iv.div(s, one_minus, prec))
    return iv.intersect(bracket, _neg(iv.log(one_minus, prec), prec))


@dataclass(frozen=True)
class Noise:
    """A continuous noise law of scale b: its hazard h(x) = -ln F(x) and its log-quantile.

    kind: "gumbel" (F(x) = exp(-e^(-x/b))), "exponential" (F(x) = 1 - e^(-x/b) for x >= 0)
    or "laplace" (F(x) = 1 - e^(-x/b)/2 for x >= 0, e^(x/b)/2 below).
    """

    kind: str
    scale: Fraction

    def __post_init__(self) -> None:
        if self.kind not in NOISES:
            raise ValueError(f"unknown noise {self.kind!r}")
        if self.scale <= 0:
            raise ValueError("noise scale must be > 0")

    def _h_point(self, x: object, prec: int) -> iv.Interval:
        """-ln F(x) at a point x."""
        xb = iv.mul((x, x), iv.exact(1 / self.scale, prec), prec)  # x / b
        if self.kind == "gumbel":  # -ln F = e^(-x/b)
            return iv.exp(_neg(xb, prec), prec)
        if self.kind == "exponential":
            if mpf_cmp(x, fzero) <= 0:
                return _INF
            return _neg_log1m(iv.exp(_neg(xb, prec), prec), prec)
        if mpf_cmp(x, fzero) >= 0:  # laplace, upper half
            half = iv.exact(Fraction(1, 2), prec)
            return _neg_log1m(iv.mul(half, iv.exp(_neg(xb, prec), prec), prec), prec)
        return iv.sub(_ln2(prec), xb, prec)  # -(x/b - ln 2)

    def hazard_float(self, x: np.ndarray) -> np.ndarray:
        """-ln F(x) in floating point: to schedule work only, never to decide anything."""
        xb = x / float(self.scale)
        with np.errstate(over="ignore", divide="ignore", invalid="ignore"):
            t = np.exp(-xb)
            if self.kind == "gumbel":
                out: np.ndarray = t
            elif self.kind == "exponential":
                out = np.where(xb > 0, -np.log1p(-np.minimum(t, 1.0)), np.inf)
            else:
                out = np.where(xb >= 0, -np.log1p(-0.5 * np.minimum(t, 1.0)), np.log(2) - xb)
        return out

    def hazard(self, x: iv.Interval, prec: int) -> iv.Interval:
        """-ln F(x) over an interval of x (decreasing in x: evaluate at the two ends)."""
        return (self._h_point(x[1], prec)[0], self._h_point(x[0], prec)[1])

    def _q_point(self, w: object, prec: int) -> iv.Interval:
        """F^-1(e^w) at a point w <= 0."""
        if w == fninf:
            return (fninf, fninf)
        if w == fzero:
            return _INF
        b = iv.exact(self.scale, prec)
        wi = (w, w)
        if self.kind == "gumbel":  # F^-1(p) = -b ln(-ln p)
            return _neg(iv.mul(b, iv.log(_neg(wi, prec), prec), prec), prec)
        one_minus = iv.sub(iv.exact(1, prec), iv.exp(wi, prec), prec)  # 1 - p
        if self.kind == "exponential":  # -b ln(1 - p)
            return _neg(iv.mul(b, iv.log(one_minus, prec), prec), prec)
        ln2 = _ln2(prec)
        low = iv.mul(b, iv.add(ln2, wi, prec), prec)  # p <= 1/2: b (ln 2 + ln p)
        if mpf_cmp(w, _neg(ln2, prec)[0]) < 0:
            return low
        two_tail = iv.mul(iv.exact(2, prec), one_minus, prec)
        high = _neg(iv.mul(b, iv.log(two_tail, prec), prec), prec)  # p >= 1/2: -b ln(2(1 - p))
        if mpf_cmp(w, _neg(ln2, prec)[1]) > 0:
            return high
        return _hull2(low, high)  # w within the ln 2 interval: both branches are near 0

    def quantile_log(self, w: iv.Interval, prec: int) -> iv.Interval:
        """F^-1(e^w) over an interval of w <= 0 (increasing in w)."""
        return (self._q_point(w[0], prec)[0], self._q_point(w[1], prec)[1])


class _Undecided(Exception):
    """A comparison the current precision cannot decide: refine and redo the walk."""


class _Uniforms:
    """The walk's lazily refined uniforms, handed out in a fixed order on every attempt."""

    def __init__(self, rng: RandomSource) -> None:
        self._rng = rng
        self._all: list[LazyUniform] = []
        self._next = 0

    def restart(self) -> None:
        self._next = 0

    def take(self) -> LazyUniform:
        if self._next == len(self._all):
            self._all.append(LazyUniform(self._rng))
        u = self._all[self._next]
        self._next += 1
        return u

    def refine(self) -> None:
        for u in self._all:
            u.refine()

    def precision(self) -> int:
        return max([_START_PREC, *(u.precision() for u in self._all)])


@dataclass(frozen=True)
class Named:
    """The argmax is `key`, an itemset the walk drew from below the floor, of count `count`."""

    key: tuple[int, ...]
    count: int


def reveal_floor(noise: Noise) -> int:
    """The count s* = floor(2b) + 1 from which on the walk lists itemsets by count group; below
    it they are drawn one by one (`Groups`). A function of public parameters only."""
    return int(2 * noise.scale) + 1


class Groups:
    """The universe's itemsets grouped by count, read from the top down.

    Known groups: the distinct counts >= the counting engine's threshold s, each with its
    multiplicity. Everything else (counts < s, and the zero-count itemsets of the universe) is
    the rest, of multiplicity K - (known itemsets), bounded by count s - 1. Once the counts are
    complete the rest is the zero group, count 0 exactly (clipped at t: count t exactly).

    With `unlisted` and `floor` s* (docs/privacy.md §12, "Below the floor"): the known groups
    are the counts >= s* only, the engine is never asked below s*, and the rest R (every
    itemset of count < s*) is dominated by count s* - 1: the walk draws its members one by one
    in decreasing order of (s* - 1) + X_I and reads their exact counts.
    """

    def __init__(
        self,
        counts: RankedCounts,
        universe_size: int,
        unlisted: Unlisted | None = None,
        floor: int | None = None,
    ) -> None:
        self.counts = counts
        self.universe_size = universe_size
        self.unlisted = unlisted if floor is not None else None
        self.floor = floor if unlisted is not None else None
        self._refresh()

    def _refresh(self) -> None:
        known = self.counts.counts
        if self.floor is not None:  # only the counts >= floor are listed
            known = known[: int(np.searchsorted(-known, -self.floor, side="right"))]
        if len(known) > self.universe_size:
            raise ValueError("more nonzero itemsets than the universe holds")
        # counts are in decreasing order (RankedCounts): runs of equal values, found in O(N)
        starts = np.flatnonzero(np.diff(known, prepend=np.int64(-1)))
        self.values = known[starts].tolist()
        self.mult = np.diff(np.append(starts, len(known))).tolist()
        self.rest = self.universe_size - len(known)
        # suffix[g]: itemsets in groups g, g+1, ... plus the rest
        self.suffix = [0] * (len(self.mult) + 1)
        self.suffix[-1] = self.rest
        for g in range(len(self.mult) - 1, -1, -1):
            self.suffix[g] = self.suffix[g + 1] + self.mult[g]
        # floats for scheduling the tail-bound checks only (never for a decision)
        self.values_f = np.asarray(self.values, dtype=np.float64)
        self.listed_suffix_f = np.cumsum(np.asarray(self.mult, dtype=np.float64)[::-1])[::-1]
        # once complete the rest counts exactly rest_value: 0, or the clip floor t (the counts
        # are max(c, t) then, docs/privacy.md §1.2); below the floor s* it is dominated by
        # d = max(s* - 1, t) (with a clip, t >= s*: every unlisted itemset counts t exactly)
        self.rest_value = self.counts.clipped_at  # 0 unless clipped (and then complete)
        if self.floor is not None and self.below_floor:
            self.rest_bound = max(self.floor - 1, self.rest_value)  # R's dominating count
        else:
            self.rest_bound = self.rest_value if self.counts.complete else self._threshold() - 1

    @property
    def below_floor(self) -> bool:
        """Every itemset of count >= floor is listed (the engine reached the floor)."""
        assert self.floor is not None
        return self.counts.complete or self._threshold() <= self.floor

    def _threshold(self) -> int:
        return int(self.counts.threshold)

    def settle(self) -> None:
        """Before any itemset below the floor s* is read by identity: lower the engine to the
        end, so that a clip at T < s* is known and every count read is max(c, T) (the counts
        the mechanism runs on, docs/privacy.md §1.2). Only time: the row budget bounds memory.
        The rows >= s*, the rest and its bound s* - 1 stay as they were (no clip at s*)."""
        if self.floor is not None and not self.counts.complete:
            self.counts.lower_to(1)
            self._refresh()

    def deepen(self, target: int | None = None) -> bool:
        """Lower the counting threshold (more known groups); False once complete (with a
        floor: once the floor is reached). target: with a floor, a threshold worth jumping
        to (at most half the current one; never below the floor)."""
        if self.counts.complete:
            return False
        if self.floor is None:
            self.counts.ensure(2 * len(self.counts.counts) + 2)
        elif self.below_floor:
            return False
        else:
            s = self._threshold() // 2 if target is None else min(self._threshold() // 2, target)
            if s < 2 * self.floor:  # one more halving would not save a pass
                s = self.floor
            self.counts.lower_to(s)
        self._refresh()
        return True

    def rest_target(self, noise: Noise, v: iv.Interval, budget: float) -> int:
        """The largest threshold s whose rest bound (rest) h(v - (s - 1)) looks (in floating
        point) below half the budget: where deepening is worth going. A schedule only: how
        deep the engine counts never changes the outcome."""
        lo, hi = 1, max(1, self._threshold() - 1)
        x0 = to_float(v[0])
        if not budget > 0:
            return lo

        def small(s: int) -> bool:
            h = float(noise.hazard_float(np.asarray([x0 - (s - 1)], dtype=np.float64))[0])
            return float(self.rest) * h < budget / 2

        if not small(lo):
            return lo
        while lo < hi:  # small(lo) holds; find the largest such s in [lo, hi]
            mid = (lo + hi + 1) // 2
            if small(mid):
                lo = mid
            else:
                hi = mid - 1
        return lo


class _Draws:
    """The identities drawn below the floor, in order; kept across redone walks so that the
    j-th member drawn is the same on every attempt (a uniform draw without replacement)."""

    def __init__(self, groups: Groups, rng: RandomSource) -> None:
        self._groups = groups
        self._rng = rng
        self._drawn: list[Named] = []
        self._keys: set[tuple[int, ...]] = set()

    def get(self, j: int) -> Named:
        """The j-th (0-based) member of R drawn, uniform over R minus the ones before it."""
        unlisted, floor = self._groups.unlisted, self._groups.floor
        assert unlisted is not None and floor is not None
        while len(self._drawn) <= j:
            key = unlisted.draw(self._rng)  # uniform over the round's universe
            if key in self._keys:
                continue
            c = unlisted.count(key)  # max(c, T) once clipped at T
            if c > self._groups.counts.clipped_at and c >= floor:  # a listed one: not in R
                continue
            self._drawn.append(Named(key, c))
            self._keys.add(key)
        return self._drawn[j]


def argmax_group(groups: Groups, noise: Noise, rng: RandomSource) -> int | Named | None:
    """The group (index into groups.values) holding argmax c(I) + X_I, or None for the rest
    (possible only once the counts are complete: the zero-count itemsets), or, with a floor,
    the Named itemset of the rest that holds it."""
    uniforms = _Uniforms(rng)
    draws = _Draws(groups, rng)
    while True:
        uniforms.restart()
        try:
            return _walk(groups, noise, uniforms, draws, uniforms.precision())
        except _Undecided:
            uniforms.refine()


def _group_max(
    c: int, m: int, noise: Noise, u: LazyUniform, prec: int, above: iv.Interval | None
) -> iv.Interval:
    """c + max of m noises by inversion: F(Y - c)^m = U, or, conditioned on Y > V (above given,
    as the hazard -m ln F(V - c)), F(Y - c)^m = F0 + U (1 - F0) with F0 = e^-hazard."""
    uu = u.interval(prec)
    if above is None:
        target = uu
    else:
        f0 = iv.exp(_neg(above, prec), prec)
        target = iv.add(f0, iv.mul(uu, iv.sub(iv.exact(1, prec), f0, prec), prec), prec)
    if target[0] == fzero or mpf_cmp(target[0], fzero) <= 0:
        raise _Undecided
    w = iv.div(iv.log(target, prec), iv.exact(m, prec), prec)
    if mpf_cmp(w[1], fzero) > 0:
        w = (w[0], fzero)
    return iv.add(iv.exact(c, prec), noise.quantile_log(w, prec), prec)


def _walk(
    groups: Groups, noise: Noise, uniforms: _Uniforms, draws: _Draws, prec: int
) -> int | Named | None:
    if groups.floor is not None:
        return _walk_floor(groups, noise, uniforms, draws, prec)
    while not groups.values:
        if not groups.deepen():
            if groups.rest == 0:
                raise ValueError("the universe is empty")
            return None  # no itemset has a nonzero count: the zero-count group holds the max
    v = _group_max(groups.values[0], groups.mult[0], noise, uniforms.take(), prec, None)
    best: int | None = 0
    pos = 1
    while True:
        found = _first_above(groups, noise, v, pos, uniforms.take().exponential(prec), prec)
        if found is None:
            return best
        g, lam = found
        if g == len(groups.values):  # the zero-count rest (count t once clipped)
            c, m = groups.rest_value, groups.rest
        else:
            c, m = groups.values[g], groups.mult[g]
        v = _group_max(c, m, noise, uniforms.take(), prec, lam)
        best = None if g == len(groups.values) else g
        pos = g + 1
        if best is None:
            return None


def _walk_floor(
    groups: Groups, noise: Noise, uniforms: _Uniforms, draws: _Draws, prec: int
) -> int | Named:
    """With a floor s*: the maximum over the listed groups (counts >= s*) by the walk, then
    whether R's maximum beats it (docs/privacy.md §12, "Below the floor"). The two are
    independent, so deciding them one after the other is exact."""
    while not groups.values and groups.deepen():
        pass
    if not groups.values:
        if groups.rest == 0:
            raise ValueError("the universe is empty")
        return _below_floor(groups, noise, uniforms, draws, prec, None)
    v = _group_max(groups.values[0], groups.mult[0], noise, uniforms.take(), prec, None)
    best = 0
    pos = 1
    while True:
        found = _first_above(groups, noise, v, pos, uniforms.take().exponential(prec), prec)
        if found is None:
            break
        g, lam = found
        v = _group_max(groups.values[g], groups.mult[g], noise, uniforms.take(), prec, lam)
        best, pos = g, g + 1
    # R's dominating maximum (s* - 1) + max of n noises exceeds v iff E <= n h(v - (s* - 1))
    e = uniforms.take().exponential(prec)
    while True:
        if groups.rest == 0:
            return best
        lam = iv.mul(
            iv.exact(groups.rest, prec),
            noise.hazard(iv.sub(v, iv.exact(groups.rest_bound, prec), prec), prec),
            prec,
        )
        if iv.certainly_less(lam, e):  # a bound above the floor, exact below it
            return best
        if groups.below_floor:
            break
        groups.deepen(groups.rest_target(noise, v, to_float(e[0])))
    if not iv.certainly_at_most(e, lam):
        raise _Undecided
    return _below_floor(groups, noise, uniforms, draws, prec, (best, v, lam))


def _below_floor(
    groups: Groups,
    noise: Noise,
    uniforms: _Uniforms,
    draws: _Draws,
    prec: int,
    known: tuple[int, iv.Interval, iv.Interval] | None,
) -> int | Named:
    """The argmax once the walk reaches R, the n itemsets of count < s* (docs/privacy.md §12).

    Y_I = (s* - 1) + X_I >= c(I) + X_I. known = (best group, its value V, the hazard of R's
    Y-maximum at V) when the Y-maximum was found to exceed V, or None when every itemset is in
    R. The Y_I are drawn from the top down: their order statistics by inversion, the identities
    uniformly without replacement (i.i.d. continuous noise: the ranking is uniform and
    independent of the values); each drawn itemset's value c(I) + X_I = Y_I - (s* - 1 - c(I))
    is compared with the best so far, and the draws stop once the next Y falls below it.
    """
    groups.settle()  # every count read below s* is then max(c, T)
    d, n = groups.rest_bound, groups.rest
    above = None if known is None else known[2]
    y = _group_max(d, n, noise, uniforms.take(), prec, above)
    best: int | Named | None = None if known is None else known[0]
    best_v = None if known is None else known[1]
    for j in range(n):
        member = draws.get(j)
        z = iv.add(y, iv.exact(member.count - d, prec), prec)
        if best_v is None or iv.certainly_less(best_v, z):
            best, best_v = member, z
        elif not iv.certainly_less(z, best_v):
            raise _Undecided
        if j + 1 == n:
            break
        # the largest of the n - j - 1 others, given they are all below y: inversion of
        # (F(x - d) / F(y - d))^(n - j - 1)
        u = uniforms.take().interval(prec)
        if mpf_cmp(u[0], fzero) <= 0:
            raise _Undecided
        w = iv.sub(
            iv.div(iv.log(u, prec), iv.exact(n - j - 1, prec), prec),
            noise.hazard(iv.sub(y, iv.exact(d, prec), prec), prec),
            prec,
        )
        if mpf_cmp(w[1], fzero) > 0:
            w = (w[0], fzero)
        y = iv.add(iv.exact(d, prec), noise.quantile_log(w, prec), prec)
        if iv.certainly_less(y, best_v):
            break
        if not iv.certainly_less(best_v, y):
            raise _Undecided
    assert best is not None
    return best


def _first_above(
    groups: Groups, noise: Noise, v: iv.Interval, pos: int, e: iv.Interval, prec: int
) -> tuple[int, iv.Interval] | None:
    """The first group g >= pos whose maximum exceeds v (with its hazard), or None."""
    lam_sum = iv.ZERO
    g = pos
    check_at = pos
    hz = _HazardAt(noise, v, prec)
    while True:
        n_known = len(groups.values)
        # With a floor the walk covers the listed groups only (R is decided after it), and
        # the rest stands for the groups not yet listed (while above the floor) or nothing.
        listed_only = groups.floor is not None
        rest_in = not listed_only or not groups.below_floor
        listed_m = groups.suffix[g] - groups.rest
        if listed_m == 0 and (not rest_in or groups.rest == 0):
            return None
        if g >= check_at or g == n_known:
            # Tail bound: the listed itemsets from group g on have count <= c_g and the rest
            # count <= its bound, so their total hazard is at most
            # (listed multiplicity) h(v - c_g) + (rest) h(v - bound).
            tail = iv.ZERO
            if listed_m > 0:
                tail = iv.mul(
                    iv.exact(listed_m, prec),
                    hz(groups.values[g]),
                    prec,
                )
            if rest_in and groups.rest > 0:
                rest_h = hz(groups.rest_bound)
                tail = iv.add(tail, iv.mul(iv.exact(groups.rest, prec), rest_h, prec), prec)
            if iv.certainly_less(iv.add(lam_sum, tail, prec), e):
                return None
            check_at = _next_check(groups, noise, v, e, lam_sum, g, rest_in)
        if g == n_known:
            budget = to_float(e[0]) - to_float(lam_sum[1])
            target = groups.rest_target(noise, v, budget) if listed_only else None
            if groups.deepen(target):
                check_at = g
                continue  # more known groups now; g is still the first unprocessed one
            if listed_only:
                return None
            c, m = groups.rest_value, groups.rest  # complete: the zero (or clipped) group
            if m == 0:
                return None
        else:
            c, m = groups.values[g], groups.mult[g]
        lam = iv.mul(iv.exact(m, prec), hz(c), prec)
        new_sum = iv.add(lam_sum, lam, prec)
        if iv.certainly_less(new_sum, e):
            lam_sum = new_sum
            g += 1
            if g > n_known:
                return None
            continue
        if iv.certainly_at_most(e, new_sum):
            return g, lam
        raise _Undecided


class _HazardAt:
    """c -> an interval containing h(v - c), for one v, through t = e^(-(v - c)/b) =
    e^(-v/b) e^(c/b) with e^(c/b) cached per count (the same counts recur in every round of a
    peeling run). Gumbel: h = t; exponential: -ln(1 - t); Laplace: -ln(1 - t/2), both while
    v - c is certainly >= 0 (t certainly < 1), else the direct formula. Enclosures of the same
    values as Noise.hazard, with one exponential fewer per end."""

    def __init__(self, noise: Noise, v: iv.Interval, prec: int) -> None:
        self._noise, self._v, self._prec = noise, v, prec
        inv_b = iv.exact(1 / noise.scale, prec)
        self._k = iv.exp(_neg(iv.mul(v, inv_b, prec), prec), prec)
        self._one = iv.exact(1, prec)
        self._half = iv.exact(Fraction(1, 2), prec)

    def __call__(self, c: int) -> iv.Interval:
        prec = self._prec
        t = iv.mul(self._k, _exp_over(c, self._noise.scale, prec), prec)
        kind = self._noise.kind
        if kind == "gumbel":
            return t
        if iv.certainly_less(t, self._one):
            return _neg_log1m(t if kind == "exponential" else iv.mul(self._half, t, prec), prec)
        return self._noise.hazard(iv.sub(self._v, iv.exact(c, prec), prec), prec)


@functools.lru_cache(maxsize=1 << 16)
def _exp_over(c: int, scale: Fraction, prec: int) -> iv.Interval:
    """e^(c / scale) as a certified interval."""
    return iv.exp(iv.exact(Fraction(c) / scale, prec), prec)


def _next_check(
    groups: Groups,
    noise: Noise,
    v: iv.Interval,
    e: iv.Interval,
    lam_sum: iv.Interval,
    g: int,
    rest_in: bool,
) -> int:
    """Where the tail bound is next worth checking: the first group after g whose bound,
    estimated in floating point, is below half of what is left of E (or the end of the listed
    groups). A schedule only: skipping a check never changes the outcome, since every group
    on the way is then taken exactly (the bound only ends the walk early)."""
    budget = to_float(e[0]) - to_float(lam_sum[1])
    x = to_float(v[0]) - groups.values_f[g + 1 :]
    tail = groups.listed_suffix_f[g + 1 :] * noise.hazard_float(x)
    if rest_in:
        x_rest = np.asarray([to_float(v[0]) - groups.rest_bound], dtype=np.float64)
        tail = tail + float(groups.rest) * noise.hazard_float(x_rest)[0]
    with np.errstate(invalid="ignore"):
        below = np.flatnonzero(tail < budget / 2)
    return g + 1 + int(below[0]) if len(below) else len(groups.values)
