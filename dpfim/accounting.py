"""Typed privacy costs and the interface of their composition: the one place where privacy
amounts are added.

A mechanism reports what it really is as a `Measure` with exact Fractions (`PureDP`,
`BoundedRange`, `ZCDP`, or a generic `ApproxDP` pair); a release's `Cost` is a multiset of
measures under one typed neighbouring relation (`Neighbours`). An `Accountant` composes costs
and splits a run's (eps, delta) among its rounds; the accountants themselves and their table
are in dpfim.accountants (imported by whoever names one):

- `basic`: sequential composition, exact rationals (sums of eps and of delta, `basic()` here).
  Valid for any adaptively chosen sequence (a privacy filter), the default.
- `tight`: the minimum over the bounds that are valid for the measures at hand (dpfim.tight,
  docs/privacy.md, "Tight accounting"). Tight composition assumes every cost was fixed before
  the first run (docs/privacy.md, "Adaptivity").

This module imports neither: the layers are accounting (types, exact sums, the Split) <- tight
(dp-accounting, an optional extra `pip install 'dpfim[accounting]'`, imported lazily) <-
accountants (the table).
"""

from __future__ import annotations

import enum
import math
from collections import Counter
from collections.abc import Callable, Hashable, Iterable, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Protocol

from dpfim.errors import ParameterError
from dpfim.params import fraction_to_float

__all__ = [
    "ZCDP",
    "Accountant",
    "ApproxDP",
    "BoundedRange",
    "Cost",
    "Measure",
    "Neighbours",
    "PureDP",
    "Split",
    "Total",
    "amount",
    "basic",
]

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

    def same_as(self, other: Cost) -> bool:
        """The same cost: the same relation and the same multiset of measures (however its
        parts are ordered or split: ((m, 2),) is ((m, 1), (m, 1)))."""
        return self.neighbours == other.neighbours and self.measures() == other.measures()

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


def relation(costs: Sequence[Cost]) -> Neighbours | None:
    """The one neighbouring relation of costs (None for none); ParameterError for two."""
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


class Accountant(Hashable, Protocol):
    """How costs compose and how a run's (eps, delta) is split among its rounds: one object per
    accountant (dpfim.accountants.ACCOUNTANTS, as PipelineDP's naive and PLD budget
    accountants). Callers look one up by name once, when they validate, and then ask it; they
    never compare its name."""

    @property
    def name(self) -> str:
        """Its name on the command line, in a result's and in the persistent ledger's JSON."""
        ...

    @property
    def exact(self) -> bool:
        """Whether its totals are exact sums (then a total says all); else computed bounds,
        shown with the typed cost they come from."""
        ...

    @property
    def requires_extra(self) -> bool:
        """Whether it needs the optional dp-accounting (a usage error when missing)."""
        ...

    @property
    def needs_fixed_costs(self) -> bool:
        """Whether its bound holds only for costs fixed before the first run (docs/privacy.md,
        "Adaptivity"): a ledger then fixes a data set's per-run cost when its budget is
        created, never raises that budget, and counts the runs left (§20.3)."""
        ...

    def compose(self, costs: Iterable[Cost], *, delta: Fraction | None = None) -> Total:
        """The composed (eps, delta) of costs (one neighbouring relation, else ParameterError);
        a bound that answers eps at a given delta needs `delta`."""
        ...

    def fits(self, costs: Iterable[Cost], budget_eps: Fraction, budget_delta: Fraction) -> bool:
        """Whether the composed costs stay within (budget_eps, budget_delta)."""
        ...

    def delta_fits(self, spent: Fraction, budget: Fraction) -> bool:
        """Whether runs whose own deltas add up to `spent` can fit a budget's delta at all."""
        ...

    def split(
        self,
        round_cost: RoundCost,
        rounds: int,
        eps_sel: Fraction,
        eps_support: Fraction,
        delta: Fraction,
    ) -> Split:
        """Each round's (eps0, delta0) for a run of `rounds` adaptive rounds (docs/privacy.md
        §19.1, §20.4)."""
        ...

    def composition(self, total: Total, rounds: int) -> str:
        """How a run's ledger says its total was composed."""
        ...

    def round_hint(self, top: int) -> str:
        """What the none hint adds about the eps each of `top` > 1 rounds gets."""
        ...


# --- splitting one run's (eps, delta) among K adaptive rounds (docs/privacy.md §20.4) -----------

SIGNIFICANT = 6  # an exact decimal of this many significant digits, rounded down
# The stated split of delta for generic (eps0, delta0) rounds under tight: the composition's own
# slack gets SLACK_SHARE of delta, the K rounds (1 - SLACK_SHARE) delta / K each; each share is
# tried and the one giving the largest eps0 is taken (a function of public parameters only).
SLACK_SHARES = (Fraction(1, 10), Fraction(1, 4), Fraction(1, 2), Fraction(3, 4))


def unit(x: Fraction) -> Fraction:
    """The last place of x > 0 at SIGNIFICANT significant decimal digits."""
    exp = 0
    while Fraction(10) ** (exp + 1) <= x:
        exp += 1
    while Fraction(10) ** exp > x:
        exp -= 1
    return Fraction(10) ** (exp - SIGNIFICANT + 1)


def decimal_down(x: Fraction) -> Fraction:
    """x > 0 rounded down to SIGNIFICANT significant decimal digits."""
    u = unit(x)
    return (x // u) * u


def exact_text(x: Fraction) -> str:
    """An exact rational as text: a fixed-point decimal when it has one, else "p/q"."""
    from decimal import Decimal, localcontext

    den = x.denominator
    for p in (2, 5):
        while den % p == 0:
            den //= p
    if den != 1:
        return f"{x.numerator}/{x.denominator}"
    with localcontext() as ctx:
        ctx.prec = len(str(abs(x.numerator))) + x.denominator.bit_length() + 5
        return format((Decimal(x.numerator) / Decimal(x.denominator)).normalize(), "f")


def largest(feasible: Callable[[Fraction], bool], lo: Fraction, hi: Fraction) -> Fraction | None:
    """The largest decimal of SIGNIFICANT digits in (lo, hi] that is feasible, found by bisection
    on the decimal grid (feasible must be monotone: true up to some point), rounded down and
    checked again after rounding; None when none above lo is found. lo is assumed feasible."""
    if feasible(hi):
        best = hi
    else:
        good, bad = lo, hi
        while bad - good > max(good, Fraction(1, 10**12)) / 10**SIGNIFICANT:
            mid = decimal_down((good + bad) / 2)
            if mid <= good:
                mid = (good + bad) / 2
            if feasible(mid):
                good = mid
            else:
                bad = mid
        best = good
    best = decimal_down(best)
    while best > lo and not feasible(best):
        best = decimal_down(best - unit(best) / 2)  # re-checked after rounding
    return best if best > lo else None


RoundCost = Callable[[Fraction, Fraction], Cost]


@dataclass(frozen=True)
class Split:
    """How one run's (eps, delta) is divided among `rounds` adaptive rounds and the supports:
    each round runs at (eps0, delta0); the supports get eps_support (pure). `accountant` is
    the one that split it; `how` says which rule gave it (docs/privacy.md §19.1 for basic,
    §20.4 for tight). The one Split of dpfim: a mechanism's division of one round's eps
    among its own steps is its Shares (dpfim.mechanisms)."""

    accountant: Accountant
    rounds: int
    eps0: Fraction
    delta0: Fraction
    eps_support: Fraction
    how: str

    def cost(self, round_cost: RoundCost) -> Cost:
        """The run's typed cost: `rounds` times the round's cost, then the supports."""
        cost = round_cost(self.eps0, self.delta0).times(self.rounds)
        if self.eps_support > 0:
            cost = cost.plus(Cost.of(PureDP(self.eps_support), cost.neighbours))
        return cost


# --- zCDP -> (eps, delta), for mechanisms calibrated to a target pair ------------------------

RHO_GRID = 10**12  # rho is a multiple of 1e-12, rounded down


def zcdp_eps(rho: Fraction, delta: Fraction) -> Fraction:
    """An upper bound, as an exact decimal Fraction, on Bun & Steinke's (2016, Prop. 1.3)
    conversion: rho-zCDP implies (rho + 2 sqrt(rho ln(1/delta)), delta)-DP."""
    import decimal

    if not 0 < delta < 1 or rho < 0:
        raise ValueError(f"need rho >= 0 and delta in (0, 1): {rho}, {delta}")
    ctx = decimal.Context(prec=60, rounding=decimal.ROUND_CEILING)
    d_rho = ctx.divide(decimal.Decimal(rho.numerator), decimal.Decimal(rho.denominator))
    log_inv = ctx.ln(ctx.divide(decimal.Decimal(delta.denominator), delta.numerator))
    eps = ctx.add(d_rho, ctx.multiply(2, ctx.sqrt(ctx.multiply(d_rho, log_inv))))
    # ln and sqrt are correctly rounded to 60 digits (error < 1 ulp); 1e-50 covers them
    return Fraction(eps) + Fraction(1, 10**50)


def zcdp_rho_for(eps: Fraction, delta: Fraction) -> Fraction:
    """The largest rho on the 1e-12 grid whose zCDP implies (eps, delta)-DP by zcdp_eps:
    rho* = (sqrt(L + eps) - sqrt(L))^2 with L = ln(1/delta), rounded down and re-checked
    exactly (docs/privacy.md §21.4)."""
    if eps <= 0:
        raise ValueError(f"eps must be > 0: {eps}")
    log_inv = math.log(fraction_to_float(1 / delta))
    guess = (math.sqrt(log_inv + float(eps)) - math.sqrt(log_inv)) ** 2
    rho = Fraction(math.floor(guess * RHO_GRID), RHO_GRID)
    while rho > 0 and zcdp_eps(rho, delta) > eps:  # float slack: step down until it checks
        rho -= Fraction(1, RHO_GRID) * max(1, int(rho * RHO_GRID) // 10**6)
    if rho <= 0:
        raise ValueError(f"no positive rho gives ({eps}, {delta})-DP")
    return rho
