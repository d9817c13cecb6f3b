"""levelwise: the top K itemsets of sizes 1..s, peeled over a lattice grown from what is released.

Privacy and constants: docs/privacy.md §23. One run is K rounds; round t is the exponential
mechanism, weight exp(eta c(X)), over a domain that is a function of public values and of the
earlier rounds' outputs only, plus (open universe) the items the data holds:

- the items not yet released: the declared vocabulary (--universe-items), or, in the open
  universe, every item of support >= 1, with one more candidate, "bottom", of fixed score tau;
- every X of size 2..s not yet released whose (|X| - 1)-subsets have all been released (the
  Apriori condition on the released set, which stays downward closed).

A round that picks "bottom" releases nothing (the run goes on). eta = eps0 under add/remove
(counts all move the same way) and eps0 / 2 under replace-one; each round is eps0-bounded range
on a fixed domain, so the K rounds are (K eps0^2 / 8)-zCDP (adaptive composition). In the open
universe each round is within total variation delta0 of such a round (a neighbour adds at most
B = --max-record-items new items, each of weight e^eta against bottom's e^(eta tau)), so the run is
(eps, delta_z + (1 + e^eps) K delta0)-DP. The whole run's (eps, delta) is computed here, from
public values only: accountants see one generic (eps, delta) cost a run.

Counting: item supports once (the engine's size-1 counts), then the exact supports of each new
candidate (the engine's `supports`, a batch a round): never the itemsets below a floor.
"""

from __future__ import annotations

import decimal
import math
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np

from dpfim.accounting import ApproxDP, Neighbours, decimal_down, zcdp_eps, zcdp_rho_for
from dpfim.counts import Counts
from dpfim.errors import ParameterError
from dpfim.mechanisms.base import BOTH, Mechanism, Outcome, Public, Steps
from dpfim.mechanisms.lmm_floor import exp_upper
from dpfim.mechanisms.selection import select_count
from dpfim.samplers.rng import RandomSource

NAME = "levelwise"
# The open universe: the share of delta spent on "a new item outran bottom" (the rest converts
# the zCDP bound). A public constant of the code (docs/privacy.md §23.4).
BOTTOM_DELTA_SHARE = Fraction(1, 10)

Key = tuple[int, ...]


@dataclass(frozen=True)
class Calibration:
    """The public constants of one run (docs/privacy.md §23.4), exact.

    eps0: each round's bounded-range parameter; eta: the weight exp(eta c) (eps0 under
    add/remove, eps0 / 2 under replace-one); rho = K eps0^2 / 8; delta_z: the delta the zCDP
    bound is converted at; delta0: each round's distance to a bounded-range round (open
    universe; 0 declared); tau: bottom's score (open universe; None declared); eps, delta: what
    the run is, by §23.3 (at most the requested pair)."""

    eps0: Fraction
    eta: Fraction
    rho: Fraction
    delta_z: Fraction
    delta0: Fraction
    tau: int | None
    eps: Fraction
    delta: Fraction


def calibrate(
    eps: Fraction, delta: Fraction, k: int, neighbours: str, declared: bool, cap: int | None
) -> Calibration:
    """The constants for K rounds at (eps, delta); cap: B, the record-length cap (needed in
    the open universe)."""
    if declared:
        delta_z, delta0 = delta, Fraction(0)
    else:
        if cap is None:
            raise ParameterError(
                "--mechanism levelwise in the open universe needs the record-length cap (one "
                "record adds at most B new items): drop --max-record-items none, or declare "
                "the vocabulary with --universe-items FILE"
            )
        share = delta * BOTTOM_DELTA_SHARE
        delta_z = delta - share
        delta0 = decimal_down(share / ((1 + exp_upper(eps)) * k))
    rho = zcdp_rho_for(eps, delta_z)
    eps0 = decimal_down(Fraction(math.sqrt(8 * rho / k)))
    while k * eps0 * eps0 / 8 > rho:  # the float square root may round up: step down
        eps0 = decimal_down(eps0 * Fraction(999_999, 1_000_000))
    eta = eps0 if Neighbours(neighbours) is Neighbours.ADD_REMOVE else eps0 / 2
    spent_rho = k * eps0 * eps0 / 8
    spent_eps = zcdp_eps(spent_rho, delta_z)
    tau = None if declared else bottom_score(eta, delta0, cap or 1)
    spent_delta = delta_z + (1 + exp_upper(spent_eps)) * k * delta0
    if spent_eps > eps or spent_delta > delta:
        raise AssertionError(f"levelwise calibration over budget: {spent_eps}, {spent_delta}")
    return Calibration(eps0, eta, spent_rho, delta_z, delta0, tau, spent_eps, spent_delta)


def bottom_score(eta: Fraction, delta0: Fraction, cap: int) -> int:
    """tau = 1 + ceil(ln(B / delta0) / eta), an integer: the B new items of a neighbour, of
    count 1 each, then weigh at most B e^eta <= delta0 e^(eta tau) (§23.2)."""
    ctx = decimal.Context(prec=60, rounding=decimal.ROUND_CEILING)
    ratio = Fraction(cap) / delta0
    log = ctx.ln(ctx.divide(decimal.Decimal(ratio.numerator), decimal.Decimal(ratio.denominator)))
    # ln is correctly rounded to 60 digits (error < 1 ulp): 1e-50 covers it
    bound = Fraction(log) + Fraction(1, 10**50)
    return 1 + math.ceil(bound / eta)


def _calibration(p: Public, k: int) -> Calibration:
    return calibrate(
        p.eps, p.delta, k, p.neighbours, p.universe_size is not None, p.max_record_items
    )


def check(p: Public) -> None:
    """The lattice starts at single items: the sizes must be 1..s."""
    if tuple(p.sizes) != tuple(range(1, max(p.sizes) + 1)):
        raise ParameterError(
            "--mechanism levelwise ranks itemsets of sizes 1..s together (it grows them from "
            f"the released items): give --sizes 1-{max(p.sizes)}, or choose another --mechanism"
        )


# --- the run -------------------------------------------------------------------------------


class Lattice:
    """The released itemsets and the candidates they admit, with the exact supports read."""

    def __init__(self, counts: Counts, items: np.ndarray, supports: np.ndarray, s: int) -> None:
        self._counts = counts
        self.s = s
        self.released: set[Key] = set()
        self.released_items: list[int] = []
        # the candidates not yet released, by key (sorted item ids), with their exact supports
        self.items = {(int(i),): int(c) for i, c in zip(items, supports, strict=True)}
        self.sets: dict[Key, int] = {}

    def domain(self) -> tuple[list[Key], np.ndarray]:
        keys = list(self.items) + list(self.sets)
        scores = np.fromiter(
            (*self.items.values(), *self.sets.values()), dtype=np.int64, count=len(keys)
        )
        return keys, scores

    def release(self, key: Key) -> int:
        """Move `key` from the candidates to the released set; count the candidates it admits
        (supersets with one more item, every subset released). Returns its support."""
        count = self.items.pop(key) if len(key) == 1 else self.sets.pop(key)
        self.released.add(key)
        if len(key) == 1:
            self.released_items.append(key[0])
        if len(key) < self.s:
            new: list[Key] = []
            for i in self.released_items:
                if i in key:
                    continue
                cand = tuple(sorted((*key, i)))
                if cand in self.sets or cand in self.released:
                    continue
                if all(cand[:j] + cand[j + 1 :] in self.released for j in range(len(cand))):
                    new.append(cand)
            if new:
                for cand, c in zip(new, self._counts.supports(new), strict=True):
                    self.sets[cand] = int(c)
        return count


def item_supports(counts: Counts, vocabulary: int | None) -> tuple[np.ndarray, np.ndarray]:
    """(item ids, exact supports): every item of support >= 1 (open universe), or every item
    of the declared vocabulary 0..vocabulary-1, zeros included. From the engine's item
    supports (counted when the records were read: never clipped by the row budget)."""
    sup = np.asarray(counts.item_supports(), dtype=np.int64)  # type: ignore[attr-defined]
    ids = np.arange(len(sup), dtype=np.int64)
    if vocabulary is None:
        keep = sup > 0
        return ids[keep], sup[keep]
    full = np.zeros(vocabulary, dtype=np.int64)
    full[: len(sup)] = sup[:vocabulary]
    return np.arange(vocabulary, dtype=np.int64), full


def run_top(
    counts: Counts, p: Public, k: int, rng: RandomSource
) -> tuple[list[tuple[Key, int]], Outcome | None]:
    """Up to k itemsets (sorted item ids, exact support) in release order; p holds the run's
    whole selection (eps, delta). The second value is the outcome that ended the run early
    (the domain ran out), else None."""
    cal = _calibration(p, k)
    ids, sup = item_supports(counts, None if p.universe_size is None else len(counts.items))
    lattice = Lattice(counts, ids, sup, max(p.sizes))
    picks: list[tuple[Key, int]] = []
    for _ in range(k):
        keys, scores = lattice.domain()
        if cal.tau is not None:  # bottom: the last entry
            keys.append(())
            scores = np.append(scores, cal.tau)
        if not keys:
            return picks, Outcome(None, None, None)
        order = np.argsort(-scores, kind="stable")
        ranked = scores[order]
        c = select_count(ranked, len(ranked), 2 * cal.eta, rng)  # weight exp(eta c)
        lo = int(np.searchsorted(-ranked, -c, side="left"))
        hi = int(np.searchsorted(-ranked, -c, side="right"))
        key = keys[int(order[lo + rng.randbelow(hi - lo)])]
        if key == ():
            continue  # bottom: this round releases nothing
        picks.append((key, lattice.release(key)))
    return picks, None


def run_one(counts: Any, p: Public, rng: RandomSource) -> Outcome:
    """One round on its own (K = 1 through the per-round interface): the named pick."""
    picks, _ = run_top(counts, p, 1, rng)
    if not picks:
        return Outcome(None, None, None)
    key, count = picks[0]
    return Outcome(None, None, None, named=key, named_count=count)


def _cost(p: Public) -> ApproxDP:
    """The run-level pair (§23.3): what the run is charged is the requested (eps, delta); the
    computed pair (`Calibration.eps`, `.delta`) is at most that."""
    return ApproxDP(p.eps, p.delta)


def _hint(p: Public) -> str:
    return (
        "levelwise releases an itemset every round unless 'bottom' (the open universe's "
        "unseen items) wins; fewer than --top itemsets mean the rest scored near bottom"
    )


def _extra(p: Public) -> dict[str, Any]:
    return {"sizes": list(p.sizes)}


def steps_for(p: Public, k: int) -> Steps:
    cal = _calibration(p, k)
    rows: list[tuple[str, str, Fraction, Fraction]] = [
        (
            f"{k} rounds of the exponential mechanism, weight exp({cal.eta} c), over the items "
            "and the itemsets whose subsets are all released; each round "
            f"{cal.eps0}-bounded range, together {cal.rho}-zCDP",
            "itemsets (release order)",
            cal.eps,
            cal.delta_z,
        )
    ]
    if cal.tau is not None:
        rows.append(
            (
                f"open universe: bottom scores {cal.tau}; each round is within {cal.delta0} "
                "of a bounded-range round",
                "nothing",
                Fraction(0),
                cal.delta - cal.delta_z,
            )
        )
    return Steps(tuple(rows), f"(eps, delta)-DP by docs/privacy.md §23 ({p.neighbours}).")


def per_run(p: Public, k: int) -> dict[str, Any]:
    """The public constants a result prints (docs/privacy.md §23.4)."""
    cal = _calibration(p, k)
    out: dict[str, Any] = {
        "round_eps": str(cal.eps0),
        "weight": f"exp({cal.eta} c)",
        "rho": str(cal.rho),
        "proven_eps": str(cal.eps),
        "proven_delta": str(cal.delta),
    }
    if cal.tau is not None:
        out["bottom_score"] = cal.tau
        out["round_delta"] = str(cal.delta0)
    return out


MECHANISM = Mechanism(
    NAME,
    BOTH,
    run_one,
    _cost,
    _hint,
    extra=_extra,
    steps=lambda p: steps_for(p, 1),
    check=check,
    whole_run=run_top,
)

