"""levelwise: the top K itemsets of sizes 1..s, peeled over a lattice grown from what is released.

Privacy and constants: docs/privacy.md §23. A run has two parts (three with --supports: the
released itemsets' supports, read back from their noisy parity coefficients with a share of
the same budget, §24 and dpfim/mechanisms/parity.py), composed in zCDP:

1. The items (open universe only; a declared vocabulary is public and skips this): every item
   of the data gets its weighted support, each record weighing floor(M / sqrt(its length)) (so
   one record moves the vector by at most M in L2), plus discrete Gaussian noise; the items
   above a threshold T are kept. Only which items are kept is used. This is (rho_items)-zCDP on
   the items both neighbours hold, and within total variation delta1 of that (an item only one
   neighbour holds is kept with probability that sums to at most delta1).
2. K rounds; round t is the exponential mechanism, weight exp(eta c(X)), over a domain that is a
   function of the kept (or declared) items and of the earlier rounds' outputs only: the items
   not yet released, and every X of size 2..s not yet released whose (|X| - 1)-subsets have all
   been released (the released set stays downward closed). eta = eps0 under add/remove (counts
   all move the same way) and eps0 / 2 under replace-one: each round is eps0-bounded range, so
   the K rounds are (K eps0^2 / 8)-zCDP under adaptive composition.

The run is (eps, delta_z + (1 + e^eps) delta1)-DP with eps from the total rho at delta_z; the
whole run's (eps, delta) is computed here from public values only, and accountants see one
generic (eps, delta) cost a run.

Counting: item supports once (the engine's, when the records are read), then the exact
supports of each round's new candidates (the engine's `supports`, one batch a round): never the
itemsets below a floor.
"""

from __future__ import annotations

import decimal
import functools
import math
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, cast

import numpy as np

from dpfim.accounting import ApproxDP, Neighbours, decimal_down, zcdp_eps, zcdp_rho_for
from dpfim.counts import Counts
from dpfim.errors import ParameterError
from dpfim.mechanisms import parity, threshold
from dpfim.mechanisms.base import BOTH, Mechanism, Outcome, Public, Steps
from dpfim.mechanisms.lmm_floor import exp_upper
from dpfim.mechanisms.selection import select_count
from dpfim.samplers.gaussian import discrete_gaussian
from dpfim.samplers.rng import RandomSource

NAME = "levelwise"
# The open universe's item discovery (docs/privacy.md §23.2): its share of the run's zCDP, the
# share of delta spent on "an item the neighbour lacks was released", and the weight scale M.
# Public constants of the code, fixed before any data set was measured (§23.4).
ITEM_RHO_SHARE = Fraction(1, 4)
ITEM_DELTA_SHARE = Fraction(1, 10)
WEIGHT_SCALE = 1 << 16
# --min-support's scan (§25): its share of the run's zCDP, taken before the supports' and the
# selection's; fixed before any data set was measured
SCAN_RHO_SHARE = Fraction(1, 4)

Key = tuple[int, ...]


@dataclass(frozen=True)
class Calibration:
    """The public constants of one run (docs/privacy.md §23.4), exact.

    eps0: each lattice round's bounded-range parameter; eta: the weight exp(eta c) (eps0 under
    add/remove, eps0 / 2 under replace-one); rho: what the run spends in zCDP (items + rounds);
    delta_z: the delta that zCDP is converted at; open universe only: sigma2, the item
    discovery's discrete Gaussian variance (in weight units), threshold T (an item is kept when
    its weighted support plus noise exceeds T) and delta1, its distance to a zCDP release;
    eps, delta: what the run is, by §23.3 (at most the requested pair); rho_supports: the
    zCDP of the noisy supports (--supports; §24), part of rho; rho_scan: the threshold scan's
    (--min-support; §25), part of rho."""

    eps0: Fraction
    eta: Fraction
    rho: Fraction
    delta_z: Fraction
    sigma2: Fraction | None
    threshold: int | None
    delta1: Fraction
    eps: Fraction
    delta: Fraction
    rho_supports: Fraction = Fraction(0)
    rho_scan: Fraction = Fraction(0)
    # the budget: rho at delta_z, and the rounds' share of it (a run with a threshold spends
    # K eps0(K)^2 / 8 <= rounds_budget for the K it drew: its proof charges the budget, §25.2)
    budget_rho: Fraction = Fraction(0)
    rounds_budget: Fraction = Fraction(0)

    def threshold_pair(self) -> tuple[Fraction, Fraction]:
        """The (eps, delta) §25.2 proves for a run with a threshold: the whole budget's."""
        eps = zcdp_eps(self.budget_rho, self.delta_z)
        return eps, self.delta_z + (1 + exp_upper(eps)) * self.delta1


@functools.lru_cache(maxsize=64)
def calibrate(
    eps: Fraction,
    delta: Fraction,
    k: int,
    neighbours: str,
    declared: bool,
    cap: int | None,
    support_share: Fraction = Fraction(0),
    scan_share: Fraction = Fraction(0),
) -> Calibration:
    """The constants for K rounds at (eps, delta); cap: B, the record-length cap (needed in
    the open universe: one record holds at most B items); support_share: the share of the
    zCDP budget for the noisy supports (0: none); scan_share: the share for the threshold
    scan that chose K (--min-support, §25; 0: K was given)."""
    replace = Neighbours(neighbours) is Neighbours.REPLACE
    if declared:
        delta_z, delta1 = delta, Fraction(0)
    else:
        if cap is None:
            raise ParameterError(
                "--mechanism levelwise in the open universe needs the record-length cap (one "
                "record holds at most B items): drop --max-record-items none, or declare "
                "the vocabulary with --universe-items FILE"
            )
        share = delta * ITEM_DELTA_SHARE
        delta_z = delta - share
        delta1 = decimal_down(share / (1 + exp_upper(eps)))
    rho = zcdp_rho_for(eps, delta_z)
    rho_supports = rho * support_share
    rho_scan = rho * scan_share
    rest = rho - rho_supports - rho_scan
    rho_items = Fraction(0) if declared else rest * ITEM_RHO_SHARE
    rho_rounds = rest - rho_items
    eps0 = decimal_down(Fraction(math.sqrt(8 * rho_rounds / k)))
    while k * eps0 * eps0 / 8 > rho_rounds:  # the float square root may round up: step down
        eps0 = decimal_down(eps0 * Fraction(999_999, 1_000_000))
    eta = eps0 / 2 if replace else eps0
    sigma2: Fraction | None = None
    threshold: int | None = None
    if not declared:
        # L2 sensitivity of the weighted item supports: M (add/remove), sqrt(2) M (replace)
        sens2 = (2 if replace else 1) * WEIGHT_SCALE * WEIGHT_SCALE
        sigma2 = Fraction(sens2) / (2 * rho_items)
        threshold = item_threshold(sigma2, delta1, cap or 1)
    spent_rho = rho_items + k * eps0 * eps0 / 8 + rho_supports + rho_scan
    spent_eps = zcdp_eps(spent_rho, delta_z)
    spent_delta = delta_z + (1 + exp_upper(spent_eps)) * delta1
    if spent_eps > eps or spent_delta > delta:
        raise AssertionError(f"levelwise calibration over budget: {spent_eps}, {spent_delta}")
    return Calibration(
        eps0,
        eta,
        spent_rho,
        delta_z,
        sigma2,
        threshold,
        delta1,
        spent_eps,
        spent_delta,
        rho_supports,
        rho_scan,
        rho,
        rho_rounds,
    )


def item_threshold(sigma2: Fraction, delta1: Fraction, cap: int) -> int:
    """An integer T with n exp(-(T + 1 - w(n))^2 / (2 sigma2)) <= delta1 for every
    record length n = 1..B, w(n) = floor(M / sqrt(n)): a record of n items the neighbour lacks
    brings at most n new items, each of weighted support w(n), and each is kept only if its
    discrete Gaussian noise is >= T + 1 - w(n) (§23.2). A guess from 60-digit decimals (whose
    ln and sqrt round to nearest), then certified exactly from one below the guess: each n's
    bound is checked with a certified upper bound of the exponential, and T raised until every
    n passes."""
    ctx = decimal.Context(prec=60)
    s2 = ctx.divide(decimal.Decimal(sigma2.numerator), decimal.Decimal(sigma2.denominator))
    guess = 0
    for n in range(1, cap + 1):
        ratio = Fraction(n) / delta1
        log = ctx.ln(
            ctx.divide(decimal.Decimal(ratio.numerator), decimal.Decimal(ratio.denominator))
        )
        root = Fraction(ctx.sqrt(ctx.multiply(ctx.multiply(2, s2), log)))
        guess = max(guess, math.isqrt(WEIGHT_SCALE * WEIGHT_SCALE // n) - 1 + math.ceil(root))
    threshold = max(guess - 1, 0)  # the guess may be one too high: certify from below it
    while not _threshold_holds(threshold, sigma2, delta1, cap):
        threshold += 1
    return threshold


def _threshold_holds(t: int, sigma2: Fraction, delta1: Fraction, cap: int) -> bool:
    """n e^(-m^2 / (2 sigma2)) <= delta1 with m = t + 1 - w(n) > 0, for n = 1..B, exactly
    (an upper bound of the exponential from certified interval arithmetic)."""
    for n in range(1, cap + 1):
        m = t + 1 - math.isqrt(WEIGHT_SCALE * WEIGHT_SCALE // n)
        if m <= 0 or n * exp_upper(-Fraction(m * m) / (2 * sigma2)) > delta1:
            return False
    return True


def support_sds(p: Public, k: int, keys: list[Key]) -> list[float]:
    """The standard deviation of each released support of a run of K = k (§24): public, a
    function of the released keys and the run's rho_s."""
    plan = parity.plan(keys, _calibration(p, k).rho_supports, _replace(p))
    return [math.sqrt(float(v)) for v in plan.variances]


def _calibration(p: Public, k: int) -> Calibration:
    declared = p.universe_size is not None
    scan = SCAN_RHO_SHARE if p.thresholded else Fraction(0)
    return calibrate(
        p.eps, p.delta, max(k, 1), p.neighbours, declared, p.max_record_items, p.support_share, scan
    )


def scan_eps(p: Public) -> Fraction:
    """ε_t of the threshold scan (§25): pure DP with ε_t²/2 <= its share of rho."""
    return threshold.eps_for(_calibration(p, 1).rho_scan)


def check_threshold_count(p: Public, t: int, cap: int) -> None:
    """A count threshold the choice cannot certify at this budget is refused (public values)."""
    least = threshold.smallest_count(scan_eps(p), cap)
    if t < least:
        flag = "--min-count" if p.min_count is not None else "--min-support"
        raise ParameterError(
            f"{flag}: a threshold of {t} records is below the {least} records this --eps can "
            f"tell from zero (docs/privacy.md §25.3): raise {flag} or --eps"
        )


def check(p: Public) -> None:
    """The lattice starts at single items: the sizes must be 1..s. A --min-count below what
    the scan can certify is refused before any data is read."""
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
            new = threshold.admitted(key, self.released_items, self.released, self.sets)
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
) -> tuple[list[tuple[Key, int, float | None]], Outcome | None, float | None]:
    """Up to k itemsets (sorted item ids, exact support, noisy support or None) in release
    order; p holds the run's whole (eps, delta) and, with --supports, their share. Then the
    outcome that ended the run early (the domain ran out), else None, and the noisy n
    (--supports under add/remove, else None). The supports are read back from noisy parity
    coefficients (§24): exact dyadic rationals, released as floats (exact in binary)."""
    if p.thresholded:  # Part 0 (§25): K chosen privately, at most the cap k
        counts = cast(Counts, _Remembered(counts))  # the ranks and the rounds count alike
        k = _scan(counts, p, k, rng)
        if k == 0:
            return [], Outcome(None, None, None), None
    picks, last = _select(counts, p, k, rng)
    cal = _calibration(p, k)
    if not cal.rho_supports or not picks:
        return [(key, c, None) for key, c in picks], last, None
    keys = [key for key, _ in picks]
    est = parity.release(keys, [c for _, c in picks], counts.n, cal.rho_supports, _replace(p), rng)
    noisy_n = None if est.noisy_n is None else float(est.noisy_n)
    found = [(key, c, float(s)) for (key, c), s in zip(picks, est.supports, strict=True)]
    return found, last, noisy_n


def _scan(counts: Counts, p: Public, cap: int, rng: RandomSource) -> int:
    """How many itemsets clear the threshold, by the exponential mechanism over the ranks of
    every itemset of sizes 1..s (§25); the threshold checked against public values first
    (under replace-one n is public, so ceil(theta n) is)."""
    t = threshold.threshold_count(counts.n, p.min_support, p.min_count)
    if p.min_count is not None or _replace(p):
        check_threshold_count(p, t, cap)
    declared = p.universe_size is not None
    ids, sup = item_supports(counts, len(counts.items) if declared else None)
    ranks = threshold.ranked_supports(counts, ids, sup, max(p.sizes))
    return threshold.choose_k(ranks, t, scan_eps(p), cap, rng)


def _threshold_text(p: Public) -> str:
    if p.min_count is not None:
        return f"--min-count {p.min_count}"
    return f"--min-support {p.min_support} (ceil(theta n) records)"


class _Remembered:
    """Counts whose `supports` keeps what it read: the threshold's exact ranks and then the
    rounds ask for many of the same itemsets, counted once (an engine pass or Spark job each)."""

    def __init__(self, counts: Counts) -> None:
        self._counts = counts
        self._known: dict[Key, int] = {}

    def supports(self, batch: list[Key]) -> list[int]:
        keys = [tuple(b) for b in batch]
        missing = [key for key in keys if key not in self._known]
        if missing:
            self._known.update(zip(missing, map(int, self._counts.supports(missing)), strict=True))
        return [self._known[key] for key in keys]

    def __getattr__(self, name: str) -> Any:
        return getattr(self._counts, name)


def _replace(p: Public) -> bool:
    return Neighbours(p.neighbours) is Neighbours.REPLACE


def _select(
    counts: Counts, p: Public, k: int, rng: RandomSource
) -> tuple[list[tuple[Key, int]], Outcome | None]:
    """Parts I and II: up to k (sorted item ids, exact support) in release order."""
    cal = _calibration(p, k)
    declared = p.universe_size is not None
    ids, sup = item_supports(counts, len(counts.items) if declared else None)
    if not declared:
        assert cal.sigma2 is not None and cal.threshold is not None
        ids, sup = discover_items(counts, ids, sup, cal.sigma2, cal.threshold, rng)
    lattice = Lattice(counts, ids, sup, max(p.sizes))
    picks: list[tuple[Key, int]] = []
    for _ in range(k):
        keys, scores = lattice.domain()
        if not keys:
            return picks, Outcome(None, None, None)
        order = np.argsort(-scores, kind="stable")
        ranked = scores[order]
        c = select_count(ranked, len(ranked), 2 * cal.eta, rng)  # weight exp(eta c)
        lo = int(np.searchsorted(-ranked, -c, side="left"))
        hi = int(np.searchsorted(-ranked, -c, side="right"))
        key = keys[int(order[lo + rng.randbelow(hi - lo)])]
        picks.append((key, lattice.release(key)))
    return picks, None


def discover_items(
    counts: Counts,
    ids: np.ndarray,
    sup: np.ndarray,
    sigma2: Fraction,
    threshold: int,
    rng: RandomSource,
) -> tuple[np.ndarray, np.ndarray]:
    """The open universe's items (§23.2): each item of support >= 1 is kept when its weighted
    support (records weigh floor(M / sqrt(length))) plus N_Z(0, sigma2) exceeds T. Only which
    items are kept leaves this function, never a noisy value."""
    weighted = np.asarray(
        counts.weighted_item_supports(WEIGHT_SCALE),  # type: ignore[attr-defined]
        dtype=np.int64,
    )
    keep = [
        j
        for j, i in enumerate(ids.tolist())
        if int(weighted[i]) + discrete_gaussian(sigma2, rng) > threshold
    ]
    return ids[keep], sup[keep]


def run_one(counts: Any, p: Public, rng: RandomSource) -> Outcome:
    """One round on its own (K = 1 through the per-round interface): the named pick."""
    picks, _ = _select(counts, p, 1, rng)
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
        "levelwise releases an itemset every round while its domain (the kept items and the "
        "itemsets over them) has one left"
    )


def _extra(p: Public) -> dict[str, Any]:
    return {"sizes": list(p.sizes)}


def steps_for(p: Public, k: int) -> Steps:
    cal = _calibration(p, k)
    rows: list[tuple[str, str, Fraction, Fraction]] = []
    if p.thresholded:
        rows.append(
            (
                f"how many clear {_threshold_text(p)}: K in 0..{k} by the exponential mechanism, "
                f"weight exp({scan_eps(p)} u(K) / 2), u from the exact ranks of every itemset "
                f"(sensitivity 1; docs/privacy.md §25), {scan_eps(p)}-DP, rho {cal.rho_scan}; "
                "its rho is in the total below",
                "K (not printed: the number of itemsets the rounds release, before the filter)",
                Fraction(0),
                Fraction(0),
            )
        )
    if cal.sigma2 is not None:
        rows.append(
            (
                f"items: weighted supports (records weigh floor({WEIGHT_SCALE}/sqrt(length))) "
                f"+ N_Z(0, {cal.sigma2}), kept above {cal.threshold}; within {cal.delta1} "
                "of a zCDP release",
                "which items are kept (not printed; its rho is in the total below)",
                Fraction(0),
                cal.delta - cal.delta_z,
            )
        )
    rounds = f"K <= {k}" if p.thresholded else str(k)
    each = f"each round {cal.eps0}-bounded range; with the items and the supports {cal.rho}-zCDP"
    eps = cal.eps
    if p.thresholded:  # the proof charges the whole budget, whatever K was drawn (§25.2)
        each = (
            f"each round sqrt(8 * {cal.rounds_budget} / K)-bounded range; with the threshold's "
            f"choice, the items and the supports {cal.budget_rho}-zCDP"
        )
        eps = cal.threshold_pair()[0]
    rows.append(
        (
            f"{rounds} rounds of the exponential mechanism, weight exp(eta c), over the items "
            f"and the itemsets whose subsets are all released; {each}",
            "itemsets (release order)",
            eps,
            cal.delta_z,
        )
    )
    if cal.rho_supports:
        rows.append(
            (
                "noisy supports: the released set's parity coefficients (and n under "
                f"add/remove) + N_Z(0, {4 if _replace(p) else 1} / (2 rho_s p_S)), read back "
                f"exactly (docs/privacy.md §24), rho_s = {cal.rho_supports}; its rho is in the "
                "total above",
                "noisy_support",
                Fraction(0),
                Fraction(0),
            )
        )
    return Steps(tuple(rows), f"(eps, delta)-DP by docs/privacy.md §23 ({p.neighbours}).")


def per_run(p: Public, k: int) -> dict[str, Any]:
    """The public constants a result prints (docs/privacy.md §23.4)."""
    cal = _calibration(p, k)
    out: dict[str, Any] = {
        "round_eps": str(cal.eps0),
        "weight": f"exp({cal.eta} c)",
    }
    proven, rho = (cal.eps, cal.delta), cal.rho
    if p.thresholded:  # K is drawn: the proof charges the whole budget, whatever K (§25.2)
        out = {
            "threshold": _threshold_text(p),
            "threshold_eps": str(scan_eps(p)),
            "rounds_rho": str(cal.rounds_budget),
            "round_eps": f"sqrt(8 * rounds_rho / K) for the K drawn (at most {k})",
            "weight": "exp(round_eps c)" if not _replace(p) else "exp(round_eps / 2 * c)",
        }
        proven, rho = cal.threshold_pair(), cal.budget_rho
    out |= {
        "rho": str(rho),
        "proven_eps": float(proven[0]),
        "proven_delta": float(proven[1]),
    }
    if cal.rho_supports:
        out["support_rho"] = str(cal.rho_supports)
        out["supports_via"] = "parity coefficients (docs/privacy.md §24)"
    if cal.sigma2 is not None:
        out["item_sigma2"] = str(cal.sigma2)
        out["item_threshold"] = cal.threshold
        out["item_delta"] = str(cal.delta1)
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
