"""The closure release's public arithmetic (docs/privacy.md §21.1, §21.4): its sensitivity, the
choice between discrete Laplace and discrete Gaussian noise, and the Gaussian's variance. Every
function here reads public values only (K, the sizes, B, the relation, eps, delta, and the size M
of a released closure); dpfim/rules.py releases, dpfim/request.py resolves `auto` with these."""

from __future__ import annotations

import math
from collections.abc import Sequence
from fractions import Fraction

from dpfim.accounting import zcdp_rho_for
from dpfim.errors import ParameterError

NOISES = ("auto", "laplace", "gaussian")
DEFAULT_NOISE = "auto"
# With Gaussian noise the closure spends this share of delta (the selection the rest); with
# Laplace noise it is pure and the selection keeps all of delta.
GAUSSIAN_DELTA_SHARE = Fraction(1, 10)
NOISE_NAMES = {
    "laplace": "discrete Laplace (exact sampler, dpfim/samplers/laplace.py)",
    "gaussian": "discrete Gaussian (exact sampler, dpfim/samplers/gaussian.py)",
}


def planned_sensitivity(
    top: int, sizes: Sequence[int], neighbours: str, max_record_items: int | None
) -> int:
    """The largest Delta a run can need, from public parameters only: a closure of K itemsets
    of at most r items holds at most K (2^r - 1) itemsets."""
    r = max(sizes)
    return sensitivity(top * (2**r - 1), neighbours, r, max_record_items)


def expected_abs_error(noise: str, delta_1: int, eps_c: Fraction, delta_c: Fraction) -> float:
    """E|noise| per coordinate at sensitivity delta_1: 2q / (1 - q^2), q = exp(-eps_c/Delta),
    for the discrete Laplace; sigma sqrt(2/pi) (the continuous value, which the discrete
    Gaussian's is within a fraction of a count of) for the discrete Gaussian."""
    if noise == "laplace":
        q = math.exp(-float(eps_c) / delta_1)
        return 2 * q / (1 - q * q)
    sigma2 = gaussian_variance(delta_1, zcdp_rho_for(eps_c, delta_c))
    return math.sqrt(float(sigma2)) * math.sqrt(2 / math.pi)


def gaussian_variance(delta_1: int, rho: Fraction) -> Fraction:
    """sigma^2 = Delta_2^2 / (2 rho): the counts move by at most 1 each, on at most delta_1
    coordinates, so Delta_2^2 <= delta_1 (docs/privacy.md §21.4)."""
    return Fraction(delta_1) / (2 * rho)


def choose_noise(
    noise: str,
    top: int,
    sizes: Sequence[int],
    neighbours: str,
    max_record_items: int | None,
    eps_c: Fraction,
    delta: Fraction,
) -> str:
    """`auto`: the noise with the smaller expected error at the planned (largest) Delta, from
    public parameters only (K, sizes, B, the relation, eps_c, delta); else as given."""
    if noise != "auto":
        return noise
    d1 = planned_sensitivity(top, sizes, neighbours, max_record_items)
    delta_c = delta * GAUSSIAN_DELTA_SHARE
    lap = expected_abs_error("laplace", d1, eps_c, delta_c)
    gauss = expected_abs_error("gaussian", d1, eps_c, delta_c)
    return "gaussian" if gauss < lap else "laplace"


def check_noise(noise: str | None) -> str:
    """--closure-noise: auto (the default), laplace or gaussian (a usage error otherwise)."""
    noise = DEFAULT_NOISE if noise is None else noise
    if noise not in NOISES:
        raise ParameterError(f"--closure-noise must be one of {', '.join(NOISES)}: {noise!r}")
    return noise


def sensitivity(m: int, neighbours: str, max_size: int, max_record_items: int | None) -> int:
    """The L1 sensitivity of (closure counts[, n]): M (+1 for n under add/remove), at most
    what one record of at most B items can hold (docs/privacy.md, the closure release)."""
    if m == 0:
        return 1 if neighbours == "add-remove" else 0
    held = m
    if max_record_items is not None:
        per_record = sum(math.comb(max_record_items, j) for j in range(1, max_size + 1))
        held = min(m, per_record if neighbours == "add-remove" else 2 * per_record)
    return held + 1 if neighbours == "add-remove" else held
