"""Every selection mechanism in one place: the registry only collects the objects.

Each mechanism module exports one `Mechanism` (dpfim/mechanisms/base.py: run, typed cost,
none-hint, valid neighbours, needs, extra parameters); api.py, cli.py, evaluate.py and the
privacy audit read this table instead of listing mechanisms themselves. Adding a mechanism is
one file plus one line below, and one line in tests/audit/audited.py naming its privacy audit
(tests/audit/test_audit_coverage.py fails until it is there).

Everything a Mechanism computes from `Public` is a function of public parameters only (never
of the data): the cost charged, the extra parameters printed in the result, the "none" hint.
"""

from __future__ import annotations

from dpfim.mechanisms import baselines, levelwise, lmm, lmm_floor, lmm_gap, lmm_tight
from dpfim.mechanisms.base import ADD_REMOVE, BOTH, Mechanism, Public

__all__ = ["ADD_REMOVE", "BOTH", "NAMES", "REGISTRY", "Mechanism", "Public", "get"]

REGISTRY: dict[str, Mechanism] = {
    m.name: m
    for m in (
        lmm.MECHANISM,
        lmm_gap.MECHANISM,
        lmm_tight.MECHANISM,
        lmm_floor.MECHANISM,
        baselines.EM,
        baselines.NOISY_MAX_LAPLACE,
        baselines.PERMUTE_AND_FLIP,
        baselines.STABILITY,
        baselines.CHOOSING,
        baselines.LIMITED_DOMAIN,
        levelwise.MECHANISM,
    )
}
NAMES: tuple[str, ...] = tuple(REGISTRY)


def get(name: str) -> Mechanism:
    """The Mechanism of a name (KeyError for an unknown one; callers validate first)."""
    return REGISTRY[name]


def none_hint(name: str, p: Public, what: str) -> str:
    """The curator's one-line hint after a "none" answer, from public parameters only."""
    return (
        f"no {what} was certified (answer: none). At eps={float(p.eps):g}, "
        f"delta={float(p.delta):g} {get(name).none_hint(p)}; a larger --eps or --delta lowers "
        "that margin."
    )
