"""Typed privacy costs and their composition: the one place where privacy amounts are added.

A mechanism reports what it really is as a `Measure` with exact Fractions (`PureDP`,
`BoundedRange`, `ZCDP`, or a generic `ApproxDP` pair); a release's `Cost` is a multiset of
measures under one typed neighbouring relation (`Neighbours`). `compose` is the only function
that adds them up, under an accountant:

- `basic`: sequential composition, exact rationals (sums of eps and of delta). Valid for any
  adaptively chosen sequence (a privacy filter), the default.
- `tight`: the minimum over the bounds that are valid for the measures at hand (docs/privacy.md,
  "Tight accounting"): basic; Google's dp-accounting PLD accountant (pure eps as randomised
  response, a generic (eps, delta) pair as its optimal PLD, bounded range as pure), pessimistic
  discretisation on a grid of 1/1000 of the smallest eps; for bounded-range and pure costs zCDP
  (rho = eps^2/8, resp. eps^2/2) converted with the standard formula and with dp-accounting's
  RDP conversion. Tight composition assumes every cost was fixed before the first run
  (docs/privacy.md, "Adaptivity").

dp-accounting is an optional extra (`pip install 'dpfim[accounting]'`), imported lazily.
"""

from __future__ import annotations

import enum
import math
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from dpfim.errors import ParameterError
from dpfim.params import fraction_to_float

__all__ = [
    "ACCOUNTANTS",
    "ZCDP",
    "ApproxDP",
    "BoundedRange",
    "Cost",
    "Measure",
    "Neighbours",
    "PureDP",
    "Total",
    "amount",
    "compose",
]

ACCOUNTANTS = ("basic", "tight")
INSTALL_HINT = "the tight accountant needs Google's dp-accounting: pip install 'dpfim[accounting]'"


class Neighbours(enum.StrEnum):
    """The neighbouring relation a guarantee holds under (a type, compared equal to its name)."""

    REPLACE = "replace"
    ADD_REMOVE = "add-remove"


@dataclass(frozen=True)
class PureDP:
    """eps-DP (delta = 0)."""

    eps: Fraction


@dataclass(frozen=True)
class BoundedRange:
    """eps-bounded range (Durfee & Rogers 2019): implies eps-DP and (eps^2/8)-zCDP."""

    eps: Fraction


@dataclass(frozen=True)
class ZCDP:
    """rho-zero-concentrated DP (Bun & Steinke 2016)."""

    rho: Fraction


@dataclass(frozen=True)
class ApproxDP:
    """A generic (eps, delta)-DP guarantee, nothing more known."""

    eps: Fraction
    delta: Fraction


Measure = PureDP | BoundedRange | ZCDP | ApproxDP


def measure_name(m: Measure) -> str:
    return {PureDP: "pure", BoundedRange: "bounded-range", ZCDP: "zcdp", ApproxDP: "approx"}[
        type(m)
    ]


def measure_json(m: Measure) -> dict[str, str]:
    """A measure as the ledger line stores it: its kind and its exact parameters."""
    if isinstance(m, ZCDP):
        return {"measure": "zcdp", "rho": str(m.rho)}
    out = {"measure": measure_name(m), "eps": str(m.eps)}
    if isinstance(m, ApproxDP):
        out["delta"] = str(m.delta)
    return out


def measure_from_json(obj: dict[str, Any]) -> Measure:
    """The inverse of measure_json (ValueError / KeyError / TypeError on a bad object)."""
    kind = obj["measure"]
    if kind == "zcdp":
        return ZCDP(_nonneg(obj["rho"]))
    eps = _nonneg(obj["eps"])
    if kind == "pure":
        return PureDP(eps)
    if kind == "bounded-range":
        return BoundedRange(eps)
    if kind == "approx":
        return ApproxDP(eps, _nonneg(obj["delta"]))
    raise ValueError(f"unknown measure {kind!r}")


def _nonneg(text: object) -> Fraction:
    if not isinstance(text, str):
        raise TypeError("amounts are exact strings")
    x = Fraction(text)
    if x < 0:
        raise ValueError("negative amount")
    return x


def approx(m: Measure) -> tuple[Fraction, Fraction]:
    """The (eps, delta) pair a measure implies exactly (zCDP has none without a delta)."""
    if isinstance(m, ApproxDP):
        return m.eps, m.delta
    if isinstance(m, ZCDP):
        raise ValueError("a zCDP cost has no exact (eps, delta) pair: use the tight accountant")
    return m.eps, Fraction(0)


@dataclass(frozen=True)
class Cost:
    """What one release spends: measures with multiplicities, under one neighbouring relation."""

    neighbours: Neighbours
    parts: tuple[tuple[Measure, int], ...]

    @classmethod
    def of(cls, measure: Measure, neighbours: Neighbours | str, times: int = 1) -> Cost:
        return cls(Neighbours(neighbours), ((measure, times),))

    def times(self, k: int) -> Cost:
        """The k-fold composition of this cost."""
        return Cost(self.neighbours, tuple((m, c * k) for m, c in self.parts))

    def plus(self, other: Cost) -> Cost:
        """This cost followed by another one (the same relation only)."""
        if other.neighbours != self.neighbours:
            raise ParameterError(
                f"costs under {self.neighbours} and {other.neighbours} neighbours do not compose "
                "(docs/privacy.md, 'Tight accounting': no conversion is applied)"
            )
        return Cost(self.neighbours, self.parts + other.parts)

    def measures(self) -> Counter[Measure]:
        out: Counter[Measure] = Counter()
        for m, c in self.parts:
            out[m] += c
        return out

    def to_json(self) -> list[dict[str, Any]]:
        return [{**measure_json(m), "count": c} for m, c in self.parts]

    def describe(self) -> str:
        """One line for people, e.g. "50 x bounded-range eps=0.06 + pure eps=0.25 (add-remove)"."""
        from dpfim.params import format_amount

        def one(m: Measure) -> str:
            if isinstance(m, ZCDP):
                return f"zcdp rho={format_amount(m.rho)}"
            out = f"{measure_name(m)} eps={format_amount(m.eps)}"
            if isinstance(m, ApproxDP):
                out += f" delta={format_amount(m.delta)}"
            return out

        parts = " + ".join((f"{c} x " if c > 1 else "") + one(m) for m, c in self.parts)
        return f"{parts} ({self.neighbours})"

    @classmethod
    def from_json(cls, neighbours: str, parts: Any) -> Cost:
        if not isinstance(parts, list) or not parts:
            raise ValueError("a cost is a non-empty list")
        out = []
        for part in parts:
            count = part["count"]
            if not isinstance(count, int) or isinstance(count, bool) or count < 1:
                raise ValueError("bad count")
            out.append((measure_from_json(part), count))
        return cls(Neighbours(neighbours), tuple(out))


@dataclass(frozen=True)
class Total:
    """A composed total: (eps, delta)-DP. `accountant` says which bound gave it."""

    eps: Fraction
    delta: Fraction
    accountant: str = "basic"


def amount(x: Fraction) -> dict[str, Any]:
    """A privacy amount as a JSON number and as the exact rational it is."""
    return {"value": fraction_to_float(x), "exact": str(x)}


def _relation(costs: Sequence[Cost]) -> Neighbours | None:
    relations = {c.neighbours for c in costs}
    if len(relations) > 1:
        raise ParameterError(
            "costs under replace and add-remove neighbours do not compose (docs/privacy.md, "
            "'Tight accounting': no conversion is applied)"
        )
    return next(iter(relations), None)


def basic(costs: Iterable[Cost]) -> Total:
    """Sequential composition in exact rationals: sum of eps, sum of delta."""
    eps, delta = Fraction(0), Fraction(0)
    for cost in costs:
        for m, c in cost.parts:
            e, d = approx(m)
            eps += c * e
            delta += c * d
    return Total(eps, delta, "basic")


def compose(
    costs: Iterable[Cost], accountant: str = "basic", *, delta: Fraction | None = None
) -> Total:
    """The composed (eps, delta) of costs under an accountant.

    basic: exact sums (delta is ignored). tight: the smallest eps at `delta` over the valid
    bounds (basic included when its delta fits); raises ParameterError when no bound reaches
    `delta` (e.g. the costs' own deltas already exceed it).
    """
    costs = list(costs)
    _relation(costs)
    if accountant == "basic":
        return basic(costs)
    if accountant != "tight":
        raise ParameterError(f"unknown accountant {accountant!r} (choose from basic, tight)")
    if delta is None:
        raise ValueError("the tight accountant answers eps at a given delta")
    from dpfim import tight  # lazily: dp-accounting is an optional extra

    return tight.compose(costs, delta)


def fits(
    costs: Iterable[Cost], accountant: str, budget_eps: Fraction, budget_delta: Fraction
) -> bool:
    """Whether the composed costs stay within (budget_eps, budget_delta) under the accountant."""
    costs = list(costs)
    if accountant == "basic":
        total = basic(costs)
        return total.eps <= budget_eps and total.delta <= budget_delta
    try:
        total = compose(costs, accountant, delta=budget_delta)
    except InfeasibleError:
        return False
    return total.eps <= budget_eps and total.delta <= budget_delta


class InfeasibleError(ParameterError):
    """No valid bound reaches the requested delta (the costs' own deltas are too large)."""


def up(x: Fraction) -> float:
    """The smallest float >= x (a privacy parameter handed to floating-point code)."""
    f = float(x)
    return f if Fraction(f) >= x else math.nextafter(f, math.inf)


def down(x: Fraction) -> float:
    """The largest float <= x."""
    f = float(x)
    return f if Fraction(f) <= x else math.nextafter(f, -math.inf)
