"""Noisy supports of a downward-closed set of itemsets through their parity coefficients.

Privacy and constants: docs/privacy.md §24. For a released set D that is downward closed (every
non-empty subset of a member is a member), the supports c(X), X in D, and n are an invertible
linear function of the parity coefficients

    f(S) = sum over records x of (-1)^{|x & S|} = sum_{T subset of S} (-2)^{|T|} c(T),  c({}) = n,

for S in D and S = {} (add/remove; n is public under replace-one). One record moves EVERY
coefficient by exactly 1 in absolute value (add/remove; by 0 or 2 under replace-one), whatever
the record holds, so the vector (f(S))_S with independent N_Z(0, sigma_S^2), sigma_S^2 =
kappa u^2 / (2 rho_s p_S) (kappa = 1 add/remove, 4 replace; u the records one privacy unit
contributes; p_S > 0 summing to 1), is rho_s-zCDP. The supports are read back exactly:

    c(X) = 2^{-|X|} sum_{S subset of X} (-1)^{|S|} f(S),

so each estimate is unbiased with variance 4^{-|X|} sum_{S subset of X} sigma_S^2: a support of
an itemset of size r averages 2^r coefficients, where adding noise to each of the m supports
directly costs sensitivity sqrt(m) on every one. The shares p_S are a function of D only (public
once D is released): p_S proportional to sqrt(sum of 4^{-|X|} over the X in D that contain S),
the allocation that minimises the sum of the variances (Lagrange; docs/privacy.md §24.3).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction

from dpfim.choices import INTERVAL_Z  # noqa: F401  (the stated interval's z, §24.4)
from dpfim.samplers.gaussian import discrete_gaussian
from dpfim.samplers.rng import RandomSource

Key = tuple[int, ...]
# p_S = r_S / sum(r): r_S = round(sqrt(a_S) * SHARE_SCALE), at least 1 (exact rationals)
SHARE_SCALE = 1 << 20


@dataclass(frozen=True)
class Plan:
    """The public part of a release of D's supports: the coefficients measured (in order; the
    empty set first under add/remove), their variances, and each support's variance."""

    coefficients: tuple[Key, ...]
    sigma2: tuple[Fraction, ...]
    variances: tuple[Fraction, ...]  # of each key's estimate, in the order of the keys
    n_variance: Fraction | None  # of the noisy n (add/remove), None under replace-one


@dataclass(frozen=True)
class Estimates:
    """Unbiased noisy supports of the keys (exact dyadic rationals) and the noisy n."""

    supports: tuple[Fraction, ...]
    noisy_n: Fraction | None
    plan: Plan


def subsets(key: Key) -> list[Key]:
    """Every subset of key, the empty one included, as sorted tuples."""
    return [sub for r in range(len(key) + 1) for sub in itertools.combinations(key, r)]


def plan(keys: Sequence[Key], rho_s: Fraction, replace: bool, unit: int = 1) -> Plan:
    """The coefficients, their noise and each estimate's variance, from public values only: the
    released keys (sorted item ids, downward closed), rho_s, the relation and u."""
    if rho_s <= 0:
        raise ValueError(f"rho_s must be > 0: {rho_s}")
    members = set(keys)
    for key in keys:
        missing = [s for s in subsets(key)[1:-1] if s not in members]
        if missing:
            raise ValueError(f"not downward closed: {key} without {missing[0]}")
    coefficients: list[Key] = list(keys) if replace else [(), *keys]
    weight = {c: 0.0 for c in coefficients}  # a_S = sum over X in D, X >= S, of 4^{-|X|}
    for key in keys:
        for sub in subsets(key):
            if sub in weight:
                weight[sub] += 4.0 ** -len(key)
    raw = {c: max(1, round(math.sqrt(weight[c]) * SHARE_SCALE)) for c in coefficients}
    total = sum(raw.values())
    kappa = 4 if replace else 1
    sigma2 = {c: Fraction(kappa * unit * unit * total, 2 * raw[c]) / rho_s for c in coefficients}
    variances = []
    for key in keys:
        var = sum((sigma2[s] for s in subsets(key) if s in sigma2), Fraction(0))
        variances.append(var / 4 ** len(key))
    return Plan(
        tuple(coefficients),
        tuple(sigma2[c] for c in coefficients),
        tuple(variances),
        None if replace else sigma2[()],
    )


def exact_coefficient(key: Key, support: dict[Key, int]) -> int:
    """f(S) = sum over T subset of S of (-2)^{|T|} c(T), with c({}) = n in support[()]."""
    return sum((-2) ** len(t) * support[t] for t in subsets(key))


def release(
    keys: Sequence[Key],
    exact: Sequence[int],
    n: int,
    rho_s: Fraction,
    replace: bool,
    rng: RandomSource,
    unit: int = 1,
) -> Estimates:
    """The noisy supports of keys (downward closed; exact[i] the support of keys[i], n the
    records): one discrete Gaussian a coefficient, then the exact inversion (§24)."""
    p = plan(keys, rho_s, replace, unit)
    support = dict(zip(keys, exact, strict=True))
    support[()] = n
    noisy = {
        c: exact_coefficient(c, support) + discrete_gaussian(s2, rng)
        for c, s2 in zip(p.coefficients, p.sigma2, strict=True)
    }
    if replace:
        noisy[()] = n  # public under replace-one: f({}) = n exactly
    out = tuple(
        Fraction(sum((-1) ** len(s) * noisy[s] for s in subsets(key)), 2 ** len(key))
        for key in keys
    )
    return Estimates(out, None if replace else Fraction(noisy[()]), p)
