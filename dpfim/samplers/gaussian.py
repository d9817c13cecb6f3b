"""Exact discrete Gaussian sampler (Canonne, Kamath, Steinke 2020, Algorithm 3).

N_Z(0, sigma^2): P(X = x) proportional to exp(-x^2 / (2 sigma^2)) on the integers, for a rational
variance sigma^2 > 0. Rejection from the discrete Laplace of scale t = floor(sigma) + 1: draw
Y ~ DLap(t), accept with probability exp(-(|Y| - sigma^2/t)^2 / (2 sigma^2)). Every quantity is
a Fraction, so the draw is exact (no floating point; see bernoulli.py for why we write it).
CKS §5.3 show the acceptance probability is bounded below by a constant, so the expected
number of trials is O(1) for every sigma.
"""

from __future__ import annotations

import math
from fractions import Fraction

from dpfim.samplers.bernoulli import bernoulli_exp_neg
from dpfim.samplers.laplace import discrete_laplace
from dpfim.samplers.rng import RandomSource


def floor_sqrt(x: Fraction) -> int:
    """floor(sqrt(x)) exactly, for a rational x >= 0: floor(sqrt(p q) / q) = isqrt(p q) // q."""
    if x < 0:
        raise ValueError(f"x must be >= 0: {x}")
    p, q = x.numerator, x.denominator
    return math.isqrt(p * q) // q


def discrete_gaussian(sigma2: Fraction, rng: RandomSource) -> int:
    """One draw from N_Z(0, sigma2), sigma2 a positive rational variance (CKS Algorithm 3)."""
    if sigma2 <= 0:
        raise ValueError(f"sigma2 must be > 0: {sigma2}")
    t = floor_sqrt(sigma2) + 1
    shift = sigma2 / t
    two_s2 = 2 * sigma2
    while True:
        y = discrete_laplace(Fraction(t), rng)
        gamma = (abs(y) - shift) ** 2 / two_s2
        if bernoulli_exp_neg(gamma, rng):
            return y
