"""The file-level privacy audit of the closure release (issue 21, point 4).

Neighbouring FILES in, the released dpfim.rules/1 JSON out (through `rules_file`, what
`dpfim rules` runs). The selection is one 3-itemset far ahead of the rest, so the release's
variable part is the closure's noisy supports: M = 7 counts (and a noisy n under add/remove).
One record changed moves all of them by 1, so the privacy loss is largest on the events
    E_k = {the selection is {a, b, c} and at least k coordinates are >= their count on D}
(and the mirrored events with <= the count on D'), which order the outputs by their
likelihood ratio. Each is checked in both directions against the claimed (eps, delta) with
one-sided Clopper-Pearson bounds, Bonferroni over every bound of this module: the family
false-alarm rate is <= 1e-4, and the seeds are fixed, so the outcome is deterministic.

The broken variant scales the noise to K (= 1, the number of selected itemsets) instead of M:
its loss on E_6 is about e^5 against the claimed e^2; the test asserts the audit catches it.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from unittest import mock

import dpaudit as A
import pytest

from dpfim import rules as R
from dpfim.api import rules_file

FAMILY_ALPHA = 1e-4
RUNS = 600
EPS, DELTA = "2", "1e-6"
BIG = "a,b,c\n" * 2000 + "d,e,f\n" * 50


@dataclass(frozen=True)
class Pair:
    name: str
    d: str
    d_prime: str
    options: dict[str, Any]


PAIRS = [
    Pair("replace: an abc record becomes def", BIG, BIG.replace("a,b,c\n", "d,e,f\n", 1), {}),
    Pair(
        "add/remove: an abc record removed (noisy n too)",
        BIG,
        BIG.replace("a,b,c\n", "", 1),
        {"neighbours": "add-remove", "mechanism": "lmm-gap"},
    ),
    Pair(
        "replace, discrete Gaussian closure noise",
        BIG,
        BIG.replace("a,b,c\n", "d,e,f\n", 1),
        {"closure_noise": "gaussian"},
    ),
]
COORDS = 8  # at most 7 closure counts + n


def outputs(path: Path, pair: Pair, seeds: range) -> list[tuple[tuple[str, ...], tuple[int, ...]]]:
    """(selection, noisy closure supports [+ noisy n]) per seeded run."""
    out = []
    for seed in seeds:
        r = rules_file(str(path), eps=EPS, delta=DELTA, top=1, sizes="3", seed=seed, **pair.options)
        chosen = tuple(x for e in r["selected"] for x in e["items"])
        values = [e["noisy_support"] for e in r["closure"]]
        if "noisy_n" in r:
            values.append(r["noisy_n"])
        out.append((chosen, tuple(values)))
    return out


def exact(text: str) -> tuple[int, ...]:
    """The closure counts of {a, b, c} (7 subsets, all equal here) and n."""
    c = text.count("a,b,c\n")
    return (c,) * 7 + (text.count("\n"),)


def events(outs: list[Any], ref_hi: tuple[int, ...], ref_lo: tuple[int, ...]) -> Counter[Any]:
    """Counts of E_k (>= D's counts, k coordinates or more) and F_k (<= D''s counts)."""
    got: Counter[Any] = Counter()
    for chosen, values in outs:
        if chosen != ("a", "b", "c"):
            continue
        up = sum(v >= h for v, h in zip(values, ref_hi, strict=False))
        down = sum(v <= lo for v, lo in zip(values, ref_lo, strict=False))
        for k in range(up + 1):
            got[("E", k)] += 1
        for k in range(down + 1):
            got[("F", k)] += 1
    return got


def violations(left: list[Any], right: list[Any], ref: tuple[Any, Any], alpha: float) -> list[str]:
    found = []
    lc, rc = events(left, *ref), events(right, *ref)
    for key, kl in lc.items():
        if kl < A.MIN_MASS:
            continue
        lo = A._cp_lower(kl, len(left), alpha)
        hi = A._cp_upper(rc[key], len(right), alpha)
        if lo > math.exp(float(EPS)) * hi + float(DELTA):
            found.append(f"{key}: {lo:.3g} > e^{EPS}*{hi:.3g}+{DELTA}")
    return found


def n_bounds() -> int:
    # per pair (and the broken run): 2 families x (COORDS + 1) events x 2 directions x 2 bounds
    return (len(PAIRS) + 1) * 2 * (COORDS + 1) * 2 * 2


def audit(tmp_path: Path, pair: Pair) -> list[str]:
    d, d2 = tmp_path / "d.csv", tmp_path / "d2.csv"
    d.write_text(pair.d)
    d2.write_text(pair.d_prime)
    left = outputs(d, pair, range(1, RUNS + 1))
    right = outputs(d2, pair, range(10**6, 10**6 + RUNS))
    ref = (exact(pair.d), exact(pair.d_prime))
    alpha = FAMILY_ALPHA / n_bounds()
    sel = Counter(c for c, _ in left)
    assert sel[("a", "b", "c")] == RUNS, sel  # the selection is fixed: the closure is audited
    return violations(left, right, ref, alpha) + violations(right, left, ref, alpha)


@pytest.mark.slow
@pytest.mark.parametrize("pair", PAIRS, ids=[p.name for p in PAIRS])
def test_closure_release_is_private_at_file_level(tmp_path: Path, pair: Pair) -> None:
    bad = audit(tmp_path, pair)
    assert not bad, f"{pair.name}: " + "; ".join(bad[:3])


@pytest.mark.slow
def test_audit_catches_noise_scaled_to_k_instead_of_m(tmp_path: Path) -> None:
    """The broken variant: Delta = K (here 1) instead of M = 7."""

    def broken(m: int, neighbours: str, max_size: int, b: int | None) -> int:
        return 1  # K, the number of selected itemsets

    with mock.patch.object(R, "sensitivity", broken):
        bad = audit(tmp_path, PAIRS[0])
    assert bad, "the audit did not catch noise scaled to K instead of M"
