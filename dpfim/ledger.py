"""Privacy accounting for one run: the guarantee as it is, step by step (SPEC §4)."""

from __future__ import annotations

from fractions import Fraction
from typing import Any

from dpfim.mechanisms.thresholds import Split
from dpfim.params import fraction_to_float


def amount(x: Fraction) -> dict[str, Any]:
    """A privacy amount as a JSON number and as the exact rational it is."""
    return {"value": fraction_to_float(x), "exact": str(x)}


def margin_ledger(split: Split, neighbours: str, *, with_max: bool) -> dict[str, Any]:
    """The ledger of lmm (with_max) or lmm-gap: per-step epsilons and where delta comes from."""
    steps: list[dict[str, Any]] = []
    if with_max:
        steps.append(
            {
                "step": "noisy max M = c(1) + DLap(1/alpha_m)",
                "releases": "noisy_max",
                "eps": amount(split.alpha_m),
                "delta": amount(Fraction(0)),
            }
        )
    steps.append(
        {
            "step": "margin search (sparse vector, G ~ DLap(2/alpha_s), Z_l ~ DLap(4/alpha_s))",
            "releases": "ell",
            "eps": amount(split.alpha_s),
            "delta": amount(Fraction(0)),
        }
    )
    steps.append(
        {
            "step": "restricted exponential mechanism over the top ell",
            "releases": "itemset",
            "eps": amount(split.alpha_a),
            "delta": "see delta_sources: e^alpha_a multiplicative only when the margin holds",
        }
    )
    sources = {}
    if with_max:
        sources["max_certification_failure"] = amount(split.delta_m)
    sources["search_certification_failure"] = amount(split.delta_s)
    sources["selection_leak"] = amount(split.delta_leak)
    return {
        "neighbours": neighbours,
        "eps": amount(split.eps),
        "delta": amount(split.delta),
        "steps": steps,
        "delta_sources": sources,
        "note": (
            "The run as a whole is (eps, delta)-DP. The total delta is not a sum of per-step "
            "deltas: it is the chance that the margin is certified wrongly plus what the "
            "selection can leak (beta * e^(alpha_m + alpha_s)). Each run spends (eps, delta); "
            "repeated runs on the same data compose."
        ),
    }
