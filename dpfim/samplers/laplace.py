"""Exact discrete Laplace sampler (Canonne, Kamath, Steinke 2020, Algorithm 2).

DLap(b): P(X = x) = (1 - q) / (1 + q) * q^|x| with q = exp(-1/b), for a rational scale b > 0.
Only integer draws and `Fraction` arithmetic; see bernoulli.py for why we write it ourselves.
"""

from __future__ import annotations

from fractions import Fraction

from dpfim.samplers.bernoulli import bernoulli_exp_neg
from dpfim.samplers.rng import RandomSource


def discrete_laplace(scale: Fraction, rng: RandomSource) -> int:
    """One draw from DLap(scale); scale = t/s in lowest terms (CKS Alg. 2 with inputs s, t)."""
    if scale <= 0:
        raise ValueError(f"scale must be > 0: {scale}")
    t, s = scale.numerator, scale.denominator
    while True:
        u = rng.randbelow(t)
        if not bernoulli_exp_neg(Fraction(u, t), rng):
            continue
        v = 0
        while bernoulli_exp_neg(Fraction(1), rng):
            v += 1
        y = (u + t * v) // s
        negative = rng.randbelow(2) == 1
        if negative and y == 0:
            continue
        return -y if negative else y


def geometric(scale: Fraction, rng: RandomSource) -> int:
    """One draw from the geometric law on {0, 1, 2, ...}: P(Y = y) = (1 - q) q^y, q = exp(-1/b)
    for the rational scale b = t/s (the magnitude step of CKS Alg. 2, without the sign).

    X = U + tV with U uniform on {0..t-1} kept with probability exp(-U/t) and V ~ Geometric(1 -
    e^(-1)) has P(X = x) proportional to e^(-x/t); Y = floor(X/s) then has P(Y = y) proportional
    to e^(-ys/t) = q^y. One-sided: P(Y = y) <= e^(1/b) P(Y = y + 1) for every integer y (lmm-floor's
    offset, docs/privacy.md §22.2)."""
    if scale <= 0:
        raise ValueError(f"scale must be > 0: {scale}")
    t, s = scale.numerator, scale.denominator
    while True:
        u = rng.randbelow(t)
        if bernoulli_exp_neg(Fraction(u, t), rng):
            break
    v = 0
    while bernoulli_exp_neg(Fraction(1), rng):
        v += 1
    return (u + t * v) // s
