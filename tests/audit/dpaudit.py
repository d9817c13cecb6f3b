"""The statistical privacy audit's machinery: sampling, DP-inequality checks, an independent
Monte Carlo of SPEC §2, and the broken variants the audit must catch (tests only).

Method (docs/testing-privacy.md): for a neighbouring pair (D, D') we draw N outputs on each side
with fixed seeds, and for every output event S with enough mass check
    P[M(D) in S] <= e^eps P[M(D') in S] + delta
with one-sided Clopper-Pearson bounds: a violation is reported only if the lower bound for the
left side exceeds e^eps times the upper bound for the right side plus delta. Every bound is at
level alpha_each = FAMILY_ALPHA / (number of bounds in the whole run) (Bonferroni), so the whole
audit raises a false alarm with probability <= FAMILY_ALPHA = 1e-4.
"""

from __future__ import annotations

import functools
import math
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any
from unittest import mock

import numpy as np
from scipy import stats

from dpfim.mechanisms import lmm, lmm_gap, search
from dpfim.mechanisms.base import Outcome, VectorCounts
from dpfim.mechanisms.thresholds import MarginShares, gap_split, paper_split, tau, threshold_runs
from dpfim.samplers.rng import seeded_source

FAMILY_ALPHA = 1e-4
MIN_MASS = 30  # events with fewer hits on the tested side are not checked (too little power)

# An output of LMM: (noisy max, ell or None for "inf", selected position or None).
Output = tuple[int, int | None, int | None]


# --- mechanisms (registry: a mechanism joins the audit with one entry) -----------------------


@dataclass(frozen=True)
class Mechanism:
    name: str
    # (counts, split, rng) -> one output
    sample: Callable[[Sequence[int], MarginShares, Any], Output]
    neighbours: str  # "replace" or "add-remove": which pairs are valid for it
    split: Callable[[Fraction, Fraction], MarginShares] = paper_split
    views: tuple[str, ...] = ("M", "ell", "I|ell", "full")


def _lmm_once(counts: Sequence[int], split: MarginShares, rng: Any) -> Output:
    vec = VectorCounts(counts)
    out = lmm.run(vec, split, rng)
    idx = None if out.index is None else vec.position(out.index)
    assert out.noisy_max is not None
    return out.noisy_max, out.ell, idx


def _lmm_gap_once(counts: Sequence[int], split: MarginShares, rng: Any) -> Output:
    vec = VectorCounts(counts)
    out = lmm_gap.run(vec, split, rng)
    idx = None if out.index is None else vec.position(out.index)
    return 0, out.ell, idx  # no noisy max is released: a constant in its place


REAL: dict[str, Mechanism] = {
    "lmm": Mechanism("lmm", _lmm_once, "replace"),
    "lmm-gap": Mechanism(
        "lmm-gap", _lmm_gap_once, "add-remove", gap_split, ("ell", "I|ell", "full")
    ),
}


class _Halved(MarginShares):
    """A split whose three noise scales are half what the thresholds assume."""

    @property
    def max_scale(self) -> Fraction:
        return super().max_scale / 2

    @property
    def offset_scale(self) -> Fraction:
        return super().offset_scale / 2

    @property
    def search_scale(self) -> Fraction:
        return super().search_scale / 2


@functools.lru_cache(maxsize=8)
def _halved_split(split: MarginShares) -> MarginShares:
    return _Halved(*(getattr(split, f) for f in split.__dataclass_fields__))


def _broken_scales(counts: Sequence[int], split: MarginShares, rng: Any) -> Output:
    return _lmm_once(counts, _halved_split(split), rng)


@functools.lru_cache(maxsize=8)
def _half_runs_list(split: MarginShares) -> list[tuple[int, int, int]]:
    runs = []
    for first, last, t in threshold_runs(split):
        runs.append((first, last, t // 2))
        if last >= 2**41:
            break
    return runs


def _broken_tau(counts: Sequence[int], split: MarginShares, rng: Any) -> Output:
    def half_runs(sp: MarginShares, start: int = 1, stop: int | None = None) -> Any:
        return iter(_half_runs_list(sp))

    def half_tau(ell: int, sp: MarginShares, *, discrete: bool = True) -> float:
        return tau(ell, sp, discrete=discrete) / 2

    with (
        mock.patch.object(search, "threshold_runs", half_runs),
        mock.patch.object(search, "tau", half_tau),
    ):
        return _lmm_once(counts, split, rng)


def _broken_em_alpha(counts: Sequence[int], split: MarginShares, rng: Any) -> Output:
    original = lmm.select_count
    with mock.patch.object(
        lmm, "select_count", lambda c, ell, a, r, rest=0: original(c, ell, a * 3, r, rest)
    ):
        return _lmm_once(counts, split, rng)


def _broken_true_max(counts: Sequence[int], split: MarginShares, rng: Any) -> Output:
    _, ell, idx = _lmm_once(counts, split, rng)
    return max(counts, default=0), ell, idx


def _broken_top_plus_5(counts: Sequence[int], split: MarginShares, rng: Any) -> Output:
    original = lmm.select_count
    with mock.patch.object(
        lmm, "select_count", lambda c, ell, a, r, rest=0: original(c, ell + 5, a, r, rest)
    ):
        return _lmm_once(counts, split, rng)


BROKEN: dict[str, Mechanism] = {
    "noise scales halved": Mechanism("noise scales halved", _broken_scales, "replace"),
    "tau halved": Mechanism("tau halved", _broken_tau, "replace"),
    "EM with alpha, not alpha/3": Mechanism("EM with alpha", _broken_em_alpha, "replace"),
    "true max released": Mechanism("true max released", _broken_true_max, "replace"),
    "selection from top l+5": Mechanism("top l+5", _broken_top_plus_5, "replace"),
}


def _chunk(args: tuple[str, bool, tuple[int, ...], MarginShares, int, int]) -> list[Output]:
    name, broken, counts, split, seed, n = args
    mech = (BROKEN if broken else REAL)[name]
    rng = seeded_source(seed)
    return [mech.sample(counts, split, rng) for _ in range(n)]


def sample(
    name: str,
    counts: Sequence[int],
    split: MarginShares,
    n: int,
    seed: int,
    *,
    broken: bool = False,
    workers: int = 2,
) -> list[Output]:
    """n outputs through the Python API, split over `workers` processes with fixed seeds."""
    per = [n // workers + (k < n % workers) for k in range(workers)]
    jobs = [(name, broken, tuple(counts), split, seed * 1000 + k, m) for k, m in enumerate(per)]
    if workers == 1:
        return _chunk(jobs[0])
    with ProcessPoolExecutor(workers) as pool:
        return [o for part in pool.map(_chunk, jobs) for o in part]


# --- events and the DP inequality -----------------------------------------------------------


def _ell_bin(ell: int | None) -> str:
    if ell is None:
        return "inf"
    return str(ell) if ell < 10 else "10+"


def events(outputs: Iterable[Output], view: str) -> Counter[Any]:
    """Counts of elementary events of one released view; tail events of M are added later."""
    out: Counter[Any] = Counter()
    for m, ell, idx in outputs:
        if view == "M":
            out[m] += 1
        elif view == "ell":
            out[_ell_bin(ell)] += 1
        elif view == "I|ell":
            out[(_ell_bin(ell), idx)] += 1
        else:  # the full release, M coarsened to a bin of width 3
            out[(m // 3, _ell_bin(ell), idx)] += 1
    return out


@dataclass
class Check:
    """One claim checked on one pair in one direction."""

    pair: str
    view: str
    direction: str
    eps: float
    delta: float
    n_events: int = 0
    violations: list[str] = field(default_factory=list)
    eps_lower_bound: float = 0.0


def _cp_lower(k: int, n: int, a: float) -> float:
    return 0.0 if k == 0 else float(stats.beta.ppf(a, k, n - k + 1))


def _cp_upper(k: int, n: int, a: float) -> float:
    return 1.0 if k == n else float(stats.beta.ppf(1 - a, k + 1, n - k))


def candidate_events(left: Counter[Any], right: Counter[Any], view: str) -> list[tuple[str, Any]]:
    """Events to test: singletons with mass, plus (for M) every upper and lower tail."""
    keys = sorted(set(left) | set(right), key=repr)
    found: list[tuple[str, Any]] = [("=", k) for k in keys if left[k] >= MIN_MASS]
    if view == "M":
        values = sorted(set(left) | set(right))
        for v in values:
            found.append((">=", v))
            found.append(("<=", v))
    return found


def _mass(counter: Counter[Any], kind: str, key: Any) -> int:
    if kind == "=":
        return counter[key]
    if kind == ">=":
        return sum(c for v, c in counter.items() if v >= key)
    return sum(c for v, c in counter.items() if v <= key)


def check_pair(
    pair: str,
    left: list[Output],
    right: list[Output],
    view: str,
    eps: float,
    delta: float,
    alpha_each: float,
    direction: str,
) -> Check:
    """P[left in S] <= e^eps P[right in S] + delta for every event S with enough mass."""
    res = Check(pair, view, direction, eps, delta)
    lc, rc = events(left, view), events(right, view)
    if view == "I|ell":  # condition on ell: compare within each ell bin separately
        return _check_conditional(res, lc, rc, alpha_each)
    for kind, key in candidate_events(lc, rc, view):
        kl, kr = _mass(lc, kind, key), _mass(rc, kind, key)
        if kl < MIN_MASS:
            continue
        res.n_events += 1
        lo = _cp_lower(kl, len(left), alpha_each)
        hi = _cp_upper(kr, len(right), alpha_each)
        if lo > math.exp(eps) * hi + delta:
            res.violations.append(
                f"{view} {kind} {key!r}: {lo:.4g} > e^{eps:.3g}*{hi:.4g}+{delta:g}"
            )
        if lo > delta and hi > 0:
            res.eps_lower_bound = max(res.eps_lower_bound, math.log((lo - delta) / hi))
    return res


def _check_conditional(res: Check, lc: Counter[Any], rc: Counter[Any], alpha_each: float) -> Check:
    for ell_bin in sorted({b for b, _ in lc} & {b for b, _ in rc}):
        nl = sum(c for (b, _), c in lc.items() if b == ell_bin)
        nr = sum(c for (b, _), c in rc.items() if b == ell_bin)
        if nl < 10 * MIN_MASS or nr < 10 * MIN_MASS:
            continue
        for (b, idx), kl in lc.items():
            if b != ell_bin or kl < MIN_MASS:
                continue
            kr = rc[(b, idx)]
            res.n_events += 1
            lo = _cp_lower(kl, nl, alpha_each)
            hi = _cp_upper(kr, nr, alpha_each)
            if lo > math.exp(res.eps) * hi + res.delta:
                res.violations.append(
                    f"I|ell={ell_bin} I={idx!r}: {lo:.4g} > e^{res.eps:.3g}*{hi:.4g}+{res.delta:g}"
                )
            if lo > res.delta and hi > 0:
                res.eps_lower_bound = max(res.eps_lower_bound, math.log((lo - res.delta) / hi))
    return res


def claims(split: MarginShares) -> dict[str, tuple[float, float]]:
    """The ledger's claims, per released view: (eps, delta)."""
    f = float
    return {
        "M": (f(split.alpha_m), 0.0),
        "ell": (f(split.alpha_m + split.alpha_s), 0.0),
        "I|ell": (f(split.alpha_a), f(split.delta)),
        "full": (f(split.eps), f(split.delta)),
    }


def n_bounds(outputs: list[Output], view: str) -> int:
    """How many Clopper-Pearson bounds one check can compute at most (for Bonferroni)."""
    c = events(outputs, view)
    return 2 * (len(c) + (2 * len(c) if view == "M" else 0))


# --- the independent Monte Carlo of SPEC §2 (numpy; not the production code) ----------------


def spec_tau(ell: np.ndarray, eps: float, delta: float) -> np.ndarray:
    """tau_discrete(l) for the paper split, written from SPEC §2."""
    a = eps / 3
    dm = ds = delta / 3
    beta = delta * math.exp(-2 * eps / 3) / 3
    return (
        (1 / a) * math.log(1 / dm)
        + (2 / a) * math.log(2 / ds)
        + (4 / a) * np.log(2 * ell * (ell + 1) / ds)
        + 2 * (1 + np.log(ell / beta) / a)
    )


def dlap(rng: np.random.Generator, scale: float, size: Any) -> np.ndarray:
    """Discrete Laplace as the difference of two geometric variables."""
    p = 1 - math.exp(-1 / scale)
    return rng.geometric(p, size) - rng.geometric(p, size)


def spec_monte_carlo(
    counts: Sequence[int], eps: float, delta: float, n: int, seed: int, cap: int = 400
) -> list[Output]:
    """SPEC §2 simulated rank by rank up to `cap` (ranks beyond it reported as "inf")."""
    rng = np.random.default_rng(seed)
    order = np.argsort(-np.asarray(counts, dtype=np.int64), kind="stable")
    c = np.zeros(cap + 2, dtype=np.int64)
    c[: len(counts)] = np.asarray(counts, dtype=np.int64)[order]
    ranks = np.arange(1, cap + 1)
    theta = np.floor(spec_tau(ranks, eps, delta) * (1 + 2.0**-40) + 2.0**-40)
    out: list[Output] = []
    for start in range(0, n, 2000):
        m = min(2000, n - start)
        big_m = c[0] + dlap(rng, 3 / eps, m)
        g = dlap(rng, 6 / eps, m)
        z = dlap(rng, 12 / eps, (m, cap))
        passed = (big_m[:, None] - c[None, 1 : cap + 1] - z - g[:, None]) > theta[None, :]
        first = np.where(passed.any(axis=1), passed.argmax(axis=1) + 1, 0)
        for k in range(m):
            ell = int(first[k])
            if ell == 0:
                out.append((int(big_m[k]), None, None))
                continue
            top = c[:ell].astype(np.float64)
            w = np.exp((eps / 3) * (top - top[0]) / 2)
            pick = int(rng.choice(ell, p=w / w.sum()))
            val = c[pick]
            if val == 0:
                out.append((int(big_m[k]), ell, None))
                continue
            ties = np.flatnonzero(c[: len(counts)] == val)  # uniform over the full tie set
            out.append((int(big_m[k]), ell, int(order[rng.choice(ties)])))
    return out


def two_sample_pvalue(a: list[Output], b: list[Output], key: Callable[[Output], Any]) -> float:
    """Chi-square test of homogeneity of two samples over the values of key (rare values pooled)."""
    ca, cb = Counter(map(key, a)), Counter(map(key, b))
    cells, rare_a, rare_b = [], 0, 0
    for k in set(ca) | set(cb):
        if ca[k] + cb[k] >= 20:
            cells.append((ca[k], cb[k]))
        else:
            rare_a, rare_b = rare_a + ca[k], rare_b + cb[k]
    if rare_a + rare_b:
        cells.append((rare_a, rare_b))
    if len(cells) < 2:
        return 1.0
    table = np.array(cells).T
    return float(stats.chi2_contingency(table).pvalue)


def ell_key(o: Output) -> Any:
    return _ell_bin(o[1]) if o[1] is None or o[1] <= 400 else "inf"


def selection_key(o: Output) -> Any:
    return (ell_key(o), o[2])


def default_split(eps: str = "1", delta: str = "1e-6", mechanism: str = "lmm") -> MarginShares:
    return REAL[mechanism].split(Fraction(eps), Fraction(delta))


__all__ = ["Outcome"]
