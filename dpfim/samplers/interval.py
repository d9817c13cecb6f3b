"""Certified interval arithmetic for the two places that must compare irrational quantities
exactly: the margin search's first pass and the exponential mechanism's inversion.

A thin layer over mpmath's interval functions (`mpmath.libmp.libmpi`, outward rounding): an
interval is a pair of raw mpf values (lo, hi) that is guaranteed to contain the true value.
We use the functional layer rather than `mpmath.iv` objects because it is ~3x faster and keeps
the precision an explicit argument instead of global state.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any

from mpmath.libmp import (
    finf,
    from_int,
    from_rational,
    fzero,
    libmpi,
    mpf_ceil,
    mpf_cmp,
    round_ceiling,
    round_floor,
    to_int,
)

Interval = tuple[Any, Any]

ZERO: Interval = (fzero, fzero)


def exact(x: int | Fraction, prec: int) -> Interval:
    """The tightest interval around a rational at this precision."""
    if isinstance(x, int):
        return (from_int(x, prec, round_floor), from_int(x, prec, round_ceiling))
    p, q = x.numerator, x.denominator
    return (from_rational(p, q, prec, round_floor), from_rational(p, q, prec, round_ceiling))


def add(a: Interval, b: Interval, prec: int) -> Interval:
    return libmpi.mpi_add(a, b, prec)  # type: ignore[no-any-return]


def sub(a: Interval, b: Interval, prec: int) -> Interval:
    return libmpi.mpi_sub(a, b, prec)  # type: ignore[no-any-return]


def mul(a: Interval, b: Interval, prec: int) -> Interval:
    return libmpi.mpi_mul(a, b, prec)  # type: ignore[no-any-return]


def div(a: Interval, b: Interval, prec: int) -> Interval:
    return libmpi.mpi_div(a, b, prec)  # type: ignore[no-any-return]


def exp(a: Interval, prec: int) -> Interval:
    return libmpi.mpi_exp(a, prec)  # type: ignore[no-any-return]


def log(a: Interval, prec: int) -> Interval:
    return libmpi.mpi_log(a, prec)  # type: ignore[no-any-return]


def hull(lo: Interval, hi: Interval) -> Interval:
    """The interval from lo's lower end to hi's upper end."""
    return (lo[0], hi[1])


def intersect(a: Interval, b: Interval) -> Interval:
    """The intersection of two intervals that both contain the same value."""
    lo = a[0] if mpf_cmp(a[0], b[0]) >= 0 else b[0]
    hi = a[1] if mpf_cmp(a[1], b[1]) <= 0 else b[1]
    return (lo, hi)


def certainly_less(a: Interval, b: Interval) -> bool:
    """True only if every point of a is < every point of b."""
    return bool(mpf_cmp(a[1], b[0]) < 0)


def certainly_at_most(a: Interval, b: Interval) -> bool:
    """True only if every point of a is <= every point of b."""
    return bool(mpf_cmp(a[1], b[0]) <= 0)


def ceil_if_certain(a: Interval) -> int | None:
    """ceil(x) for every x in a, or None when the interval straddles an integer boundary."""
    if a[1] == finf:
        return None
    lo, hi = to_int(mpf_ceil(a[0])), to_int(mpf_ceil(a[1]))
    return int(lo) if lo == hi else None


def is_finite(a: Interval) -> bool:
    return bool(a[1] != finf)
