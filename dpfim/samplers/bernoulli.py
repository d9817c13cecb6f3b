"""Exact Bernoulli samplers for rational probabilities (Canonne, Kamath, Steinke 2020, Alg. 1).

We write these ourselves because no maintained Python library samples Bernoulli(exp(-gamma))
exactly from integer randomness; numpy and `random` go through floats, which leak through their
rounding pattern (Mironov 2012). Every step here is integer or `Fraction` arithmetic.
"""

from __future__ import annotations

from fractions import Fraction

from dpfim.samplers.rng import RandomSource


def bernoulli(p: Fraction, rng: RandomSource) -> bool:
    """Return True with probability p, for a rational p in [0, 1]."""
    if not 0 <= p <= 1:
        raise ValueError(f"probability out of [0, 1]: {p}")
    return rng.randbelow(p.denominator) < p.numerator


def _bernoulli_exp_neg_at_most_one(gamma: Fraction, rng: RandomSource) -> bool:
    """Bernoulli(exp(-gamma)) for 0 <= gamma <= 1: CKS Algorithm 1, first branch."""
    k = 1
    while bernoulli(gamma / k, rng):
        k += 1
    return k % 2 == 1


def bernoulli_exp_neg(gamma: Fraction, rng: RandomSource) -> bool:
    """Return True with probability exp(-gamma), for a rational gamma >= 0 (CKS Algorithm 1)."""
    if gamma < 0:
        raise ValueError(f"gamma must be >= 0: {gamma}")
    whole = gamma.numerator // gamma.denominator
    for _ in range(whole):
        if not _bernoulli_exp_neg_at_most_one(Fraction(1), rng):
            return False
    return _bernoulli_exp_neg_at_most_one(gamma - whole, rng)
