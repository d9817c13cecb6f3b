"""The `tight` composition: the minimum over valid composition bounds, through dp-accounting.

Called by the tight accountant (dpfim.accountants.TIGHT); it imports dpfim.accounting's types
only, and dp-accounting (the optional extra `dpfim[accounting]`) only when it computes. Every
conversion is derived in docs/privacy.md, "Tight accounting":

- basic composition (exact), when its delta fits;
- PLD (privacy loss distributions, Koskela et al.; Google's dp-accounting, pessimistic
  discretisation): a pure eps cost and a bounded-range eps cost as randomised response (the
  optimal PLD of (eps, 0)), a generic (eps, delta) cost as its optimal PLD (losses +-eps and
  +inf with mass delta; Kairouz, Oh, Viswanath 2015 optimal composition); zCDP has no PLD here;
- zCDP (no generic pair present): bounded range eps -> rho = eps^2/8 (Cesar & Rogers 2021),
  pure eps -> rho = eps^2/2 (Bun & Steinke 2016), rho adds up; to (eps, delta) by
  rho + 2 sqrt(rho ln(1/delta)) (Bun & Steinke 2016, Prop. 1.3) and by dp-accounting's RDP
  conversion of the RDP curve alpha*rho (that of a Gaussian with sigma = 1/sqrt(2 rho));
- mixed (bounded-range or zCDP costs alongside pure or generic ones): the bounded-range/zCDP
  part is converted to (eps_z, delta_z) at a few fixed shares delta_z of delta and composed by
  PLD with the pure and generic costs and one (eps_z, delta_z) cost.

Floats: every eps and delta handed to the library is the exact Fraction rounded UP, every target
delta rounded DOWN, sigma rounded DOWN; the PLD grid is 1/1000 of the smallest eps (the loss is
rounded up to the grid, so the grid's slack is at most 0.1% of each eps).
"""

from __future__ import annotations

import json
import math
from collections import Counter
from collections.abc import Sequence
from fractions import Fraction
from typing import Any

from dpfim import accounting_cache
from dpfim.accounting import (
    INSTALL_HINT,
    ZCDP,
    ApproxDP,
    BoundedRange,
    Cost,
    InfeasibleError,
    Measure,
    Neighbours,
    PureDP,
    Total,
    basic,
    down,
    measure_json,
    up,
)
from dpfim.errors import ParameterError

GRID_DIVISOR = 1000
SLACK = Fraction(1, 10**6)  # added to every eps computed in floats (see _float_up)
# the shares of delta given to the zCDP part of a mixed ledger (the minimum is taken)
MIXED_SHARES = (Fraction(1, 100), Fraction(1, 20), Fraction(1, 5), Fraction(1, 2))


def _library() -> tuple[Any, Any, Any]:
    try:
        from dp_accounting import dp_event, rdp
        from dp_accounting.pld import privacy_loss_distribution as pld
    except ImportError:
        raise ParameterError(INSTALL_HINT) from None
    return pld, dp_event, rdp


def compose(costs: Sequence[Cost], delta: Fraction) -> Total:
    """The smallest eps at `delta` over the valid bounds; InfeasibleError when none reaches it.

    Kept by dpfim.accounting_cache under its exact arguments (the measures in the order they
    come, with their counts, and delta): a repeated call returns the same Total, or raises the
    same InfeasibleError, without dp-accounting."""
    measures: Counter[Measure] = Counter()
    for cost in costs:
        measures.update(cost.measures())
    args = json.dumps(
        {
            "compose": [[measure_json(m), c] for m, c in measures.items()],
            "delta": str(delta),
        },
        separators=(",", ":"),
    )
    kept = _decode(accounting_cache.get(args))
    if isinstance(kept, Total):
        return kept
    if isinstance(kept, str):
        raise InfeasibleError(kept)
    try:
        total = _compose(measures, delta)
    except InfeasibleError as exc:
        accounting_cache.put(args, {"infeasible": str(exc)})
        raise
    accounting_cache.put(
        args, {"eps": str(total.eps), "delta": str(total.delta), "accountant": total.accountant}
    )
    return total


def _decode(value: Any) -> Total | str | None:
    """A kept result: a Total, an infeasibility's message, or None (nothing usable kept)."""
    if not isinstance(value, dict):
        return None
    if set(value) == {"infeasible"} and isinstance(value["infeasible"], str):
        return str(value["infeasible"])
    if set(value) != {"eps", "delta", "accountant"} or not all(
        isinstance(v, str) for v in value.values()
    ):
        return None
    try:
        eps, delta = Fraction(value["eps"]), Fraction(value["delta"])
    except (ValueError, ZeroDivisionError):
        return None
    if eps < 0 or delta < 0:
        return None
    return Total(eps, delta, value["accountant"])


def _compose(measures: Counter[Measure], delta: Fraction) -> Total:
    """compose's computation, uncached."""
    candidates: list[Total] = []
    b = basic([Cost(Neighbours.REPLACE, tuple(measures.items()))])
    if b.delta <= delta:
        candidates.append(b)
    if not measures:
        return Total(Fraction(0), Fraction(0), "basic")
    generic = {m: c for m, c in measures.items() if isinstance(m, ApproxDP)}
    zable: dict[Measure, int] = {m: c for m, c in measures.items() if not isinstance(m, ApproxDP)}
    # the part that gains from zCDP (bounded range, zCDP); pure and generic costs are composed
    # exactly by PLD (randomised response is pure eps's optimal pair), so they stay there
    zpart: dict[Measure, int] = {
        m: c for m, c in zable.items() if isinstance(m, BoundedRange | ZCDP)
    }
    rest = {m: c for m, c in measures.items() if m not in zpart}
    has_zcdp = any(isinstance(m, ZCDP) for m in measures)
    if not has_zcdp:
        pairs = [(_pair(m), c) for m, c in measures.items()]
        eps = pld_epsilon(pairs, delta)
        if eps is not None:
            candidates.append(Total(eps, delta, "tight (PLD)"))
    if not generic:
        for eps, how in zcdp_epsilons(rho_of(zable), delta):
            candidates.append(Total(eps, delta, f"tight (zCDP, {how})"))
    if zpart and rest:
        rho = rho_of(zpart)
        for share in MIXED_SHARES:
            dz = delta * share
            ez = min(e for e, _ in zcdp_epsilons(rho, dz))
            pairs = [*((_pair(m), c) for m, c in rest.items()), ((ez, dz), 1)]
            eps = pld_epsilon(pairs, delta)
            if eps is not None:
                candidates.append(Total(eps, delta, "tight (PLD + zCDP)"))
    if not candidates:
        raise InfeasibleError(
            f"no composition bound reaches delta={float(delta):g}: the runs' own deltas add up "
            "to it or more"
        )
    return min(candidates, key=lambda t: t.eps)


def _pair(m: Measure) -> tuple[Fraction, Fraction]:
    if isinstance(m, ApproxDP):
        return m.eps, m.delta
    if isinstance(m, ZCDP):
        raise AssertionError("zCDP has no PLD here")
    return m.eps, Fraction(0)


def rho_of(measures: dict[Measure, int]) -> Fraction:
    """The zCDP of pure and bounded-range costs, exactly: eps^2/2 and eps^2/8; rho adds up."""
    rho = Fraction(0)
    for m, c in measures.items():
        if isinstance(m, BoundedRange):
            rho += c * m.eps**2 / 8
        elif isinstance(m, PureDP):
            rho += c * m.eps**2 / 2
        elif isinstance(m, ZCDP):
            rho += c * m.rho
        else:
            raise AssertionError("a generic (eps, delta) cost has no zCDP")
    return rho


def zcdp_epsilons(rho: Fraction, delta: Fraction) -> list[tuple[Fraction, str]]:
    """rho-zCDP as (eps, delta)-DP: the standard conversion and dp-accounting's RDP one."""
    if rho == 0:
        return [(Fraction(0), "rho = 0")]
    r, d = up(rho), down(delta)
    standard = r + 2 * math.sqrt(r * math.log(1 / d))
    out = [(_float_up(standard * (1 + 1e-12)), "standard conversion")]
    _, dp_event, rdp = _library()
    sigma = math.nextafter(1 / math.sqrt(2 * r), 0.0)  # rounded down: rho rounded up
    acc = rdp.RdpAccountant()
    acc.compose(dp_event.GaussianDpEvent(sigma))
    out.append((_float_up(acc.get_epsilon(d)), "RDP conversion"))
    return out


def pld_epsilon(
    pairs: Sequence[tuple[tuple[Fraction, Fraction], int]], delta: Fraction
) -> Fraction | None:
    """The PLD accountant's eps at delta for counts of (eps, delta) costs (None if unreachable)."""
    pld, _, _ = _library()
    if sum(c * d for (_, d), c in pairs) >= delta:
        return None
    smallest = min(e for (e, _), _ in pairs)
    grid = up(smallest) / GRID_DIVISOR
    total = None
    for (e, d), c in pairs:
        params = pld.common.DifferentialPrivacyParameters(up(e), up(d))
        one = pld.from_privacy_parameters(params, value_discretization_interval=grid)
        part = one.self_compose(c) if c > 1 else one
        total = part if total is None else total.compose(part)
    assert total is not None
    eps = total.get_epsilon_for_delta(down(delta))
    if not math.isfinite(eps):
        return None
    return _float_up(max(eps, 0.0))


def _float_up(x: float) -> Fraction:
    """A float result as an exact Fraction plus SLACK: the library's FFTs and sums are float
    computations, accurate to about 1e-8 here (measured against the exact optimal composition
    in tests/test_accounting.py), so a computed eps is moved up by more than that error."""
    return Fraction(math.nextafter(x, math.inf)) + SLACK
