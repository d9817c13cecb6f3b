"""The one place where public parameters are validated and normalised."""

from __future__ import annotations

import math
from decimal import Decimal, InvalidOperation, localcontext
from fractions import Fraction

from dpfim.errors import ParameterError

MAX_SIZE = 5
DEFAULT_ELL_MAX = 2**40


# What a privacy parameter may be given as: the CLI passes text, the Python API any of these.
Number = str | int | float | Decimal | Fraction


def check_fraction(value: Number, name: str) -> Fraction:
    """Read a number as an exact rational, e.g. "0.1" -> Fraction(1, 10).

    Text is read as an exact decimal (or a ratio "p/q"); a float by its shortest decimal
    representation, repr(0.1) == "0.1" -> 1/10 (not the binary double 0.1000000000000000055...);
    a Decimal or Fraction exactly.
    """
    if isinstance(value, Fraction):
        return value
    if isinstance(value, bool):
        raise ParameterError(f"{name} must be a number, got {value!r}")
    if isinstance(value, int):
        return Fraction(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ParameterError(f"{name} must be finite, got {value!r}")
        return Fraction(repr(float(value)))  # float(): numpy scalars repr as np.float64(…)
    if isinstance(value, Decimal):
        if not value.is_finite():
            raise ParameterError(f"{name} must be finite, got {value!r}")
        return Fraction(value)
    if not isinstance(value, str):
        raise ParameterError(f"{name} must be a number, got {type(value).__name__} {value!r}")
    text = value.strip()
    if "/" in text:  # an exact ratio as the ledger prints it, e.g. "1/3"
        return _check_ratio(text, name, value)
    try:
        dec = Decimal(text)
    except InvalidOperation:
        raise ParameterError(f"{name} must be a decimal number, got {value!r}") from None
    if not dec.is_finite():
        raise ParameterError(f"{name} must be finite, got {value!r}")
    return Fraction(dec)


def _check_ratio(text: str, name: str, value: object) -> Fraction:
    num, _, den = text.partition("/")
    if not (num.strip().lstrip("+-").isdigit() and den.strip().isdigit()) or int(den) == 0:
        raise ParameterError(f"{name} must be a decimal number or a ratio p/q, got {value!r}")
    return Fraction(int(num), int(den))


def format_amount(x: Fraction | None, *, plain: bool = False, fixed: bool = False) -> str:
    """A privacy amount for people: an exact decimal when there is one ("1.59", "1e-7"),
    otherwise a rounded decimal with the exact ratio ("0.333333 (exactly 1/3)").

    plain: the exact ratio alone ("1/3") instead of both, for JSON. fixed: decimals in fixed
    point ("0.000001", as docs/ledger.md shows them), never "1e-6". check_fraction accepts
    every form back exactly.
    """
    if x is None:
        return "unset"
    den = x.denominator
    twos_fives = den
    for p in (2, 5):
        while twos_fives % p == 0:
            twos_fives //= p
    if twos_fives != 1:
        if plain:
            return f"{x.numerator}/{x.denominator}"
        return f"{fraction_to_float(x):.6g} (exactly {x.numerator}/{x.denominator})"
    with localcontext() as ctx:
        ctx.prec = len(str(abs(x.numerator))) + den.bit_length() + 5
        dec = (Decimal(x.numerator) / Decimal(den)).normalize()
    if dec == 0:
        return "0"
    return format(dec, "e") if dec.adjusted() < -4 and not fixed else format(dec, "f")


def check_sep(sep: str) -> str:
    """The item separator: one character; "\\t" (as typed in a shell) or "tab" is a tab.

    A quote or a line break cannot separate items (CSV quoting and records use them).
    """
    if sep == "\\t" or sep.lower() == "tab":
        return "\t"
    if len(sep) != 1 or sep in ('"', "\n", "\r"):
        raise ParameterError(f"--sep must be a single character, \\t or tab, got {sep!r}")
    return sep


# Below this the thresholds (~ 1/ε · ln(1/δ)) leave the float range used for τ̂ and the
# hazard arithmetic, and no useful answer is possible anyway: at ε = 1e-6 the margin needed is
# already ~4e8 records.
MIN_EPS = Fraction(1, 10**6)


def check_eps(value: Number) -> Fraction:
    """epsilon > 0 as an exact rational."""
    eps = check_fraction(value, "--eps")
    if eps <= 0:
        raise ParameterError(f"--eps must be > 0, got {value}")
    if eps < MIN_EPS:
        raise ParameterError(f"--eps must be at least 1e-6, got {value}")
    if eps > 1000:
        raise ParameterError(f"--eps must be at most 1000, got {value}")
    return eps


def check_delta(value: Number) -> Fraction:
    """delta in (0, 1) as an exact rational."""
    delta = check_fraction(value, "--delta")
    if not 0 < delta < 1:
        raise ParameterError(f"--delta must be in (0, 1), got {value}")
    if delta < Fraction(1, 10**300):
        raise ParameterError(f"--delta must be at least 1e-300, got {value}")
    return delta


def check_size(value: int) -> int:
    """The itemset size r, 1..MAX_SIZE."""
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_SIZE:
        raise ParameterError(f"--size must be an integer from 1 to {MAX_SIZE}, got {value!r}")
    return value


def check_ell_max(value: int) -> int:
    """The data-independent cap on the margin search, 1..2^62."""
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= 2**62:
        raise ParameterError(f"--ell-max must be an integer from 1 to 2^62, got {value!r}")
    return value


def fraction_to_float(x: Fraction) -> float:
    """For JSON output and float threshold evaluation only; never on a sampling path."""
    return x.numerator / x.denominator if abs(x.numerator) < 2**1000 else float(x)


def log_fraction(x: Fraction) -> float:
    """ln(x) for a positive rational, accurate even when x is far outside the float range."""
    return math.log(x.numerator) - math.log(x.denominator)


_UNITS = {"": 1, "K": 2**10, "M": 2**20, "G": 2**30, "T": 2**40}
MIN_MEMORY = 16 * 2**20


def check_memory(value: str | int | None) -> int | None:
    """A memory budget in bytes: an integer, or a number with K, M, G or T (binary units,
    an optional trailing B or iB), e.g. "2G", "512M", "1.5GiB". None keeps the default."""
    if value is None:
        return None
    if isinstance(value, bool):
        raise ParameterError(f"--max-memory must be a size such as 2G or 512M, got {value!r}")
    if isinstance(value, int):
        size = value
    else:
        text = str(value).strip().upper().removesuffix("IB").removesuffix("B")
        unit = text[-1:] if text[-1:] in _UNITS else ""
        try:
            number = Decimal(text[: len(text) - len(unit)].strip())
        except InvalidOperation:
            number = Decimal("NaN")
        if not number.is_finite():
            raise ParameterError(f"--max-memory must be a size such as 2G or 512M, got {value!r}")
        size = int(number * _UNITS[unit])
    if size < MIN_MEMORY:
        raise ParameterError(f"--max-memory must be at least 16M, got {value!r}")
    return size
