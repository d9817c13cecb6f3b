"""Neighbouring inputs at the edges of LMM, as count vectors and as record sets (r = 2).

Position k of a vector is one fixed itemset (items f"i{k}a", f"i{k}b"), so "selected position"
names the same itemset on both sides. Every pair differs in one record: replace-one, which lmm
(valid under both relations) must satisfy; pairs 5 and 6 are also add/remove pairs.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Pair:
    name: str
    d: tuple[int, ...]
    d_prime: tuple[int, ...]
    why: str
    eps: str = "1"
    delta: str = "1e-6"


PAIRS = [
    Pair(
        "at the margin",
        (1000, 571),
        (999, 572),
        "c(1) - c(2) = 429 = T(1) on D and 427 on D': the pass at rank 1 flips on the noise, so "
        "the released l and M are most sensitive here.",
    ),
    Pair(
        "ties at the top",
        (600, 600, 600),
        (601, 599, 600),
        "three-way tie: the search passes only in the zero tail and the exponential mechanism's "
        "choice among tied itemsets is what one record moves most (replace-one moves two counts "
        "in opposite directions).",
    ),
    Pair(
        "swap the top two",
        (1000, 999),
        (999, 1000),
        "one replaced record swaps the winner: any leak of the true order shows as a ratio in "
        "the selected itemset.",
    ),
    Pair(
        "lift a zero into the top l",
        (450, 0),
        (450, 1),
        "D' turns a zero-count candidate (reported as none) into a named itemset inside the "
        "top l: the candidate set itself changes.",
    ),
    Pair(
        "none half the time",
        (424,),
        (425,),
        "c(1) sits where the answer is none about half the time: the none/itemset boundary and "
        "the open-universe zero tail carry the whole decision.",
    ),
    Pair(
        "empty data set",
        (),
        (1,),
        "no itemset at all against a single one: the open-universe limit argument at its edge.",
    ),
]

# Not a DP pair: a configuration where selecting beyond the top l is visible (SPEC law says a
# rank-2 itemset is never selected when l = 1); used by the exact-distribution checks.
LOOSE = Pair(
    "loose thresholds",
    (300, 150),
    (300, 150),
    "eps = 0.1, delta = 0.9: thresholds low enough that rank-2 weight at l = 1 is visible.",
    eps="0.1",
    delta="0.9",
)


def records(counts: tuple[int, ...], filler: int = 0) -> list[list[str]]:
    """A record set whose r = 2 supports are exactly `counts` (plus `filler` 1-item records)."""
    out = [[f"i{k}a", f"i{k}b"] for k, c in enumerate(counts) for _ in range(c)]
    return out + [["z"]] * filler


def record_pair(pair: Pair) -> tuple[list[list[str]], list[list[str]]]:
    """D and D' as record sets of equal size differing in one record (replace-one)."""
    filler = max(max(pair.d, default=0), max(pair.d_prime, default=0)) + 1
    d = records(pair.d, filler)
    d_prime = records(pair.d_prime, filler)
    # equalise n with filler records: the vectors differ by a move of one record
    while len(d_prime) < len(d):
        d_prime.append(["z"])
    while len(d) < len(d_prime):
        d.append(["z"])
    return d, d_prime


# Add/remove pairs for lmm-gap (valid only under add/remove): D' = D plus one record.
GAP_PAIRS = [
    Pair(
        "gap at the margin",
        (500, 266),
        (501, 266),
        "c(1) - c(2) = 234 = T'(1) on D, 235 on D': the gap query's pass at rank 1 flips on the "
        "noise.",
    ),
    Pair(
        "gap: none half the time",
        (231,),
        (232,),
        "only the zero tail can pass, about half the time: the none/itemset boundary.",
    ),
    Pair("gap: empty data set", (), (1,), "no itemset at all against a single one."),
]
