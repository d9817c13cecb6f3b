"""The statistical privacy audit of --min-support / --min-count (dpfim/mechanisms/threshold.py).

With a threshold, how many itemsets K levelwise releases is chosen by the exponential mechanism
over k = 0..cap, weight exp(eps_t u(k) / 2), u(k) = -(max(0, t - c_(k)) + max(0, c_(k+1) - t +
1)), c_(k) the k-th largest support over every itemset of sizes 1..s, t = ceil(theta n) or the
count; the claim is that u moves by at most 1 between neighbours (n moving too under
add/remove), so the choice is eps_t-DP, and the run composes it in zCDP with the rest. Two
audits, each with the machinery of dpaudit (one-sided Clopper-Pearson bounds, every output event
with >= 30 hits, both directions; Bonferroni over every bound of one test function, so each
function raises a false alarm with probability <= 1e-4 for fresh seeds; the seeds are fixed, so
the result is deterministic).

Part A, the choice alone: `threshold.choose_k(iter(ranks), t, eps_t, cap, rng)` with the
ranks c_(1..cap+1) computed by brute force from the records (every itemset of sizes 1..s over
the items of either side, zero counts included; not dpfim's counting), eps_t = 2 (weight
exp(u): a factor 2 shows), seeded sources (`seeded_source`), N = 10,000 runs per side over two
processes. The view is K: every value and every upper and lower tail {K >= k}, {K <= k}
(dpaudit's "M" view); the claim (eps_t, 0). 1,368 bounds, each at 7.3e-8. The pairs
(`CHOICES`):
  * CROSSING (add/remove, sizes 1-3, cap 30): 4 x abcde, 2 x a, b, 3 x f, plus z on D';
    theta 1/2, n 10 -> 11, so t = ceil(theta n) 5 -> 6 while no count near t moves: a (6) and
    b (5 = t) clear on D, a only on D'; the 23 other itemsets over abcde sit at 4 = t - 1;
  * LOWERED (replace, sizes 1-2, cap 26): 4 x abcdef, 2 x a, b, 3 x g, one abcdef -> z, count
    5: every count near t falls by one (a 6 -> 5, b 5 -> 4, 19 itemsets 4 -> 3): the mirror
    of the moving threshold with n fixed;
  * LIFTED (add/remove, sizes 1-2, cap 14): 4 x abcd, 6 x x, plus abcd on D'; theta 5/11
    keeps t = 5 (n 10 and 11) while the record lifts ten itemsets 4 -> 5: the number clearing
    t jumps 1 -> 11 (the order statistics at t are dense);
  * TINY (add/remove, sizes 1-3, cap 40): {ac} against {ac, a}, theta 3/5: t 1 -> 2 and
    a 1 -> 2; every zero-count itemset sits at t - 1 on D.
Why these are the worst cases: in CROSSING, LOWERED and TINY u moves by exactly 1 at EVERY k (+1
below the last clearing itemset, -1 from it on), and D's mass sits on a block of m ranks at t -
1 (utility -1, moving to -2); with a = eps_t / 2 the ratio at K = K* - 1 is about e^a (1 + (m +
1) e^-a) / (1 + e^-a + m e^-2a), which tends to e^{eps_t} as m grows: sensitivity 1 is attained
and the factor 2 in exp(eps_t u / 2) is needed. Exact eps of the four pairs (from the law,
computed here): 1.72, 1.66, 1.00 and 1.79 (claim 2); measured eps lower bounds: 1.43, 1.36, 0.73
and 1.33. The sensitivity itself was also checked exhaustively outside this file (every multiset
of <= 5 records over three items, the empty record included, sizes 1..3, every add and every
replace neighbour, t = ceil(theta n) for theta = a/b, b <= 7, and every count 0..7: 1.35 million
comparisons, max |u_D(k) - u_D'(k)| = 1); tests/test_threshold.py keeps a random brute force of
it.

Part B, the whole run: `dpfim.release.peel` -- the code `dpfim mine --min-support/--min-count`
runs -- with the registry's levelwise entry and a `Public` carrying min_support or min_count and
support_share 1/4 (a threshold implies --supports: the CLI's split, scan 1/4 of rho, supports
1/4, the items and the rounds the rest), on counts from the local engine (`count_records`) of
record sets built in memory, N = 3,000 runs per side. The view is the released itemsets (item
names) in release order, as a set, and how many (a post-processing each: the noisy supports and
the final "clears the bar" filter are dropped), against the run's whole claim (3, 0.05); 1,584
bounds, each at 6.3e-8. eps_t is then 0.51 (0.50 in the open universe).
The pairs (`RUNS`):
  * RUN_CROSSING (declared abcx, add/remove, sizes 1-2, cap 4): 19 x abc, 2 x a, b, 18 x x,
    plus x on D'; theta 1/2: n 40 -> 41, t 20 -> 21, a and b clear on D, a only on D'. t = 20
    is below the 21 records eps_t certifies at cap 4, which the run must not refuse: n is
    private under add/remove;
  * RUN_OPEN (open universe, replace, sizes 1-2, cap 3): 21 x ab, 10 x a, 10 x b, 20 x c, one
    ab -> x, --min-count 21 (the least this budget certifies at cap 3): a, b, ab clear on D, a
    and b on D'; a and b pass the item phase in about 96 % of the runs, c in 72 %, x never;
  * RUN_LIFTED (declared abcx, add/remove, sizes 1-3, cap 7): 22 x abc, 2 x x, plus abc on D',
    --min-count 23: nothing clears on D, all seven itemsets over abc on D'.
Measured eps lower bound: 0 on every check (for no event does a side's lower bound minus delta
exceed the other side's upper bound):
the scan's eps_t = 0.51 sits inside a claim of 3 (zCDP's conversion: eps_t = sqrt(rho / 2)
while eps = rho + 2 sqrt(rho ln(1/delta))), so this audit has power only for gross mistakes, and
a factor 2 on the choice (eps_t 1.02 inside 3) is invisible here: that is what Part A is for.

Broken variants (patched inside the sampling processes, never by editing threshold or levelwise):
  * "sensitivity taken as 1/2" (select_count's alpha doubled through threshold: weight
    exp(eps_t u), a 2 eps_t = 4 -DP choice): exact eps 2.93 (CROSSING), 2.83 (LOWERED), 3.12
    (TINY); at N = 6,000 runs per side the measured lower bound is 2.50, 2.44 and 2.63
    (claim 2): caught on both relations;
  * "utility -|k - K*|" (K* the number clearing t: the natural utility, whose sensitivity is
    the number of itemsets one record moves across t: every itemset of sizes 1..s inside it):
    4.93 on LIFTED (N = 2,000);
  * whole run, "K exact" (K = min(cap, the number clearing t), no noise): 4.27 on RUN_CROSSING
    (N = 1,000; claim 3);
  * whole run, "ceil(theta n) refused by the public check" (the certifiable-count check of
    --min-count applied to ceil(theta n) under add/remove, where n is private: D is refused
    in every run, D' never): 4.16 on RUN_CROSSING.
Not an entry of tests/audit/audited.py: AUDITED is keyed by registered mechanism, and the
threshold is an option of levelwise (whose entry is test_audit_levelwise.py); a "threshold" key
would fail test_audit_coverage.py as not registered.
"""

from __future__ import annotations

import itertools
import math
import os
from collections import Counter
from collections.abc import Iterator
from concurrent.futures import ProcessPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from fractions import Fraction
from typing import Any
from unittest import mock

import dpaudit as A
import numpy as np
import pytest

from dpfim import release
from dpfim.engines.local import count_records
from dpfim.errors import ParameterError
from dpfim.mechanisms import levelwise as lw
from dpfim.mechanisms import registry
from dpfim.mechanisms import threshold as th
from dpfim.mechanisms.base import Public
from dpfim.readers.frames import from_baskets
from dpfim.samplers.rng import resolve, seeded_source

N = int(os.environ.get("DPFIM_AUDIT_N_THRESHOLD", 10000))  # runs per side, choose_k alone
N_BROKEN = int(os.environ.get("DPFIM_AUDIT_N_THRESHOLD_BROKEN", 6000))
N_RUN = int(os.environ.get("DPFIM_AUDIT_N_THRESHOLD_RUN", 3000))  # runs per side, whole run
N_RUN_BROKEN = int(os.environ.get("DPFIM_AUDIT_N_THRESHOLD_RUN_BROKEN", 1000))
EPS_T = Fraction(2)  # the choice's eps alone: weight exp(u), so a factor 2 shows
SPEC = registry.get("levelwise")
ADD, REPLACE = "add-remove", "replace"


def times(record: str, n: int) -> tuple[str, ...]:
    """n copies of a record written as a string of one-letter items ("ab" = {a, b})."""
    return (record,) * n


# --- the choice alone: pairs, brute-force ranks, the exact law ------------------------------


@dataclass(frozen=True)
class Choice:
    """A neighbouring pair for `threshold.choose_k` alone: records, sizes 1..s, the threshold
    (a fraction theta of n, ceil(theta n), or a count) and the cap."""

    name: str
    neighbours: str
    d: tuple[str, ...]
    d_prime: tuple[str, ...]
    s: int
    cap: int
    why: str
    theta: Fraction | None = None
    count: int | None = None

    def records(self, prime: bool) -> tuple[str, ...]:
        return self.d_prime if prime else self.d

    def t(self, prime: bool) -> int:
        """ceil(theta n) (n moves under add/remove) or the count, exactly."""
        if self.count is not None:
            return self.count
        assert self.theta is not None
        return math.ceil(self.theta * len(self.records(prime)))

    def ranks(self, prime: bool) -> tuple[int, ...]:
        """c_(1..cap+1) by brute force: the support of every itemset of sizes 1..s over the
        items of either side (zero counts included; the rest of the universe is zeros),
        sorted decreasing, padded with zeros."""
        items = sorted({i for r in self.d + self.d_prime for i in r})
        recs = [set(r) for r in self.records(prime)]
        counts = sorted(
            (
                sum(1 for r in recs if set(x) <= r)
                for size in range(1, self.s + 1)
                for x in itertools.combinations(items, size)
            ),
            reverse=True,
        )
        return tuple(counts + [0] * (self.cap + 1))[: self.cap + 1]


def utility(ranks: tuple[int, ...], t: int, cap: int) -> list[int]:
    """u(k) = -(max(0, t - c_(k)) + max(0, c_(k+1) - t + 1)), c_(0) = +infinity, k = 0..cap,
    written from the statement (not threshold.utilities)."""
    above = [0] + [max(0, t - c) for c in ranks[:cap]]  # c_(0) = +infinity: nothing lacks
    below = [max(0, c - t + 1) for c in ranks[: cap + 1]]
    return [-(a + b) for a, b in zip(above, below, strict=True)]


def exact_law(pair: Choice, prime: bool, eps: float) -> np.ndarray:
    """P(K = k) proportional to exp(eps u(k) / 2) (floats: for the docstring's numbers)."""
    u = np.array(utility(pair.ranks(prime), pair.t(prime), pair.cap), dtype=float)
    w = np.exp(eps * (u - u.max()) / 2)
    return w / w.sum()


def exact_eps(pair: Choice, eps: float) -> float:
    """max over k of |ln P_D(k) / P_D'(k)|: the pair's exact eps (pure DP, singletons)."""
    p, q = exact_law(pair, False, eps), exact_law(pair, True, eps)
    return float(np.max(np.abs(np.log(p / q))))


# A block of itemsets at t - 1 under the last clearing one (c = t), which one record moves
# below (t up by one, or every count down by one): u moves by +1 at every k < K* and by -1 at
# every k >= K*, and D's mass sits on the block (many k of utility -1), so the ratio at K* - 1
# is close to e^{eps_t} (it tends to e^{eps_t} as the block grows).
BLOCK5 = times("abcde", 4) + times("a", 2) + ("b",) + times("f", 3)  # a 6, b 5, 23 at 4, f 3
BLOCK6 = times("abcdef", 4) + times("a", 2) + ("b",) + times("g", 3)  # a 6, b 5, 19 at 4, g 3
CROSSING = Choice(
    "add/remove: ceil(theta n) moves, a dense block at t - 1, sizes 1-3",
    ADD,
    BLOCK5,
    (*BLOCK5, "z"),
    3,
    30,
    "n 10 -> 11 at theta 1/2: t 5 -> 6 while no count near t moves (z: 0 -> 1); a (6) and b "
    "(5 = t) clear on D, a only on D'; the 23 other itemsets of abcde sit at 4 = t - 1",
    theta=Fraction(1, 2),
)
LOWERED = Choice(
    "replace: a record under every itemset near t taken out, sizes 1-2",
    REPLACE,
    BLOCK6,
    (*BLOCK6[1:], "z"),
    2,
    26,
    "abcdef -> z lowers a 6 -> 5, b 5 -> 4 and the 19 other itemsets of abcdef 4 -> 3 at the "
    "count t = 5: the mirror of the moving threshold, under replace-one (n fixed)",
    count=5,
)
BLOCK_LIFT = times("abcd", 4) + times("x", 6)
LIFTED = Choice(
    "add/remove: ceil(theta n) stays, one record lifts ten itemsets to t, sizes 1-2",
    ADD,
    BLOCK_LIFT,
    (*BLOCK_LIFT, "abcd"),
    2,
    14,
    "theta 5/11: t = 5 at n = 10 and 11; abcd lifts a, b, c, d and their six pairs 4 -> 5: "
    "the number of itemsets clearing t jumps 1 -> 11 (the order statistics at t are dense)",
    theta=Fraction(5, 11),
)
TINY = Choice(
    "add/remove: one record, t 1 -> 2, the zero-count itemsets as the block, sizes 1-3",
    ADD,
    ("ac",),
    ("ac", "a"),
    3,
    40,
    "theta 3/5: t 1 -> 2 as n 1 -> 2, a 1 -> 2; every itemset of count 0 is at t - 1 on D, "
    "so the cap (40) sets the block's size (the exact eps grows with it)",
    theta=Fraction(3, 5),
)
CHOICES = [CROSSING, LOWERED, LIFTED, TINY]


# --- the whole run: pairs -------------------------------------------------------------------


@dataclass(frozen=True)
class Run:
    """A neighbouring pair for the whole levelwise run with a threshold (`release.peel`)."""

    name: str
    neighbours: str
    d: tuple[str, ...]
    d_prime: tuple[str, ...]
    cap: int  # --top: the cap of K
    s: int
    why: str
    theta: Fraction | None = None
    count: int | None = None
    vocabulary: str | None = None
    eps: Fraction = Fraction(3)
    delta: Fraction = Fraction(1, 20)
    share: Fraction = Fraction(1, 4)  # --support-share's default (a threshold implies --supports)

    @property
    def longest(self) -> int:
        return max(len(r) for r in self.d + self.d_prime)

    def public(self) -> Public:
        sizes = tuple(range(1, self.s + 1))
        universe = (
            None
            if self.vocabulary is None
            else sum(math.comb(len(self.vocabulary), r) for r in sizes)
        )
        return Public(
            self.eps,
            self.delta,
            sizes,
            self.neighbours,
            max_record_items=self.longest,
            universe_size=universe,
            support_share=self.share,
            min_support=self.theta,
            min_count=self.count,
        )


RUN_CROSS_BASE = times("abc", 19) + times("a", 2) + ("b",) + times("x", 18)
RUN_CROSSING = Run(
    "declared, add/remove: ceil(theta n) moves, sizes 1-2",
    ADD,
    RUN_CROSS_BASE,
    (*RUN_CROSS_BASE, "x"),
    4,
    2,
    "n 40 -> 41 at theta 1/2: t 20 -> 21; a (21) and b (20) clear on D, a only on D'; c, ab, "
    "ac, bc at 19, x 18 -> 19. t = 20 is below the 21 records this budget certifies at cap 4: "
    "under add/remove n is private, so the run must not refuse it (it does not)",
    theta=Fraction(1, 2),
    vocabulary="abcx",
)
RUN_OPEN_BASE = times("ab", 21) + times("a", 10) + times("b", 10) + times("c", 20)
RUN_OPEN = Run(
    "open, replace: a record under three itemsets at t replaced, sizes 1-2",
    REPLACE,
    RUN_OPEN_BASE,
    (*RUN_OPEN_BASE[1:], "x"),
    3,
    2,
    "--min-count 21 (the least this budget certifies at cap 3): ab -> x lowers a 31 -> 30, "
    "b 31 -> 30 and ab 21 -> 20 (a, b, ab clear on D, a and b on D'); c 20; the open "
    "universe's items: a and b (weighted 24.8 M, T = 17.7 M, sd 4.0 M) are kept in about 96 % "
    "of the runs, c (20 M) in 72 %, x (M, only on D') never",
    count=21,
)
RUN_LIFT_BASE = times("abc", 22) + times("x", 2)
RUN_LIFTED = Run(
    "declared, add/remove: one record lifts all seven itemsets of abc to t, sizes 1-3",
    ADD,
    RUN_LIFT_BASE,
    (*RUN_LIFT_BASE, "abc"),
    7,
    3,
    "--min-count 23 (the least this budget certifies at cap 7): nothing clears on D (22), "
    "all seven itemsets of sizes 1-3 over abc on D' (23)",
    count=23,
    vocabulary="abcx",
)
RUNS = [RUN_CROSSING, RUN_OPEN, RUN_LIFTED]
RUN_VIEWS = ("ordered", "set", "count")


# --- broken variants ------------------------------------------------------------------------


def _exact_k(ranks: Iterator[int], t: int, eps_t: Fraction, cap: int, rng: Any) -> int:
    """K = how many itemsets clear t (at most the cap), released without noise."""
    return sum(1 for c in itertools.islice(ranks, cap) if c >= t)


def _counting_utilities(ranks: Iterator[int], t: int, cap: int) -> np.ndarray:
    """u(k) = -|k - K*|, K* the number clearing t: the natural utility, whose sensitivity is
    the number of itemsets one record moves across t (every itemset of sizes 1..s inside
    it), not 1."""
    c = list(itertools.islice(ranks, cap + 1))
    clear = sum(1 for v in c if v >= t)
    return -np.abs(np.arange(cap + 1, dtype=np.int64) - clear)


def _checked_scan(original: Any) -> Any:
    def scan(counts: Any, p: Public, cap: int, rng: Any) -> int:
        t = th.threshold_count(counts.n, p.min_support, p.min_count)
        lw.check_threshold_count(p, t, cap)  # under add/remove too, where n is private
        return int(original(counts, p, cap, rng))

    return scan


@contextmanager
def variant(name: str) -> Iterator[None]:
    """Patch threshold (inside the sampling processes) for a broken variant; "real": none."""
    patches = []
    if name == "sensitivity taken as 1/2":  # weight exp(eps_t u): twice the claimed eps
        original = th.select_count
        patches.append(
            mock.patch.object(
                th, "select_count", lambda c, ell, a, r, rest=0: original(c, ell, 2 * a, r, rest)
            )
        )
    elif name == "utility -|k - K*|":
        patches.append(mock.patch.object(th, "utilities", _counting_utilities))
    elif name == "K exact":
        patches.append(mock.patch.object(th, "choose_k", _exact_k))
    elif name == "ceil(theta n) refused by the public check":
        patches.append(mock.patch.object(lw, "_scan", _checked_scan(lw._scan)))
    elif name != "real":
        raise ValueError(name)
    for p in patches:
        p.start()
    try:
        yield
    finally:
        for p in reversed(patches):
            p.stop()


# --- sampling -------------------------------------------------------------------------------


def _choice_chunk(args: tuple[Choice, bool, str, int, int]) -> list[A.Output]:
    pair, prime, name, seed, n = args
    rng = seeded_source(seed)
    ranks, t = pair.ranks(prime), pair.t(prime)
    with variant(name):
        return [(th.choose_k(iter(ranks), t, EPS_T, pair.cap, rng), None, None) for _ in range(n)]


def _run_chunk(args: tuple[Run, bool, str, int, int]) -> list[A.Output]:
    pair, prime, name, seed, n = args
    rng, private = resolve(seed)
    assert not private
    baskets = [list(r) for r in (pair.d_prime if prime else pair.d)]
    universe = None if pair.vocabulary is None else list(pair.vocabulary)
    records = from_baskets(baskets, universe=universe)
    p = pair.public()
    counts = count_records(records, p.sizes).counts
    out: list[A.Output] = []
    with variant(name):
        for _ in range(n):
            try:
                picks, _, _ = release.peel(counts, SPEC, p, pair.cap, rng)
            except ParameterError:
                out.append((0, 1, None))  # the run refused: an output like any other
                continue
            sel = tuple(tuple(sorted(records.items[i] for i in q.ids if i >= 0)) for q in picks)
            out.append((0, 1, sel))  # the supports are dropped: a post-processing
    return out


def sample(chunk: Any, pair: Any, prime: bool, seed: int, n: int, name: str = "real") -> Any:
    """n outputs of one side over two processes with fixed seeds."""
    jobs = [(pair, prime, name, seed * 1000 + j, n // 2 + (j < n % 2)) for j in range(2)]
    with ProcessPoolExecutor(2) as pool:
        return [o for part in pool.map(chunk, jobs) for o in part]


# --- the DP inequality, Bonferroni over one test function ------------------------------------


def bonferroni(
    tests: list[tuple[str, list[A.Output], list[A.Output], str, float, float]],
) -> list[A.Check]:
    """check_pair in both directions on every (label, D's outputs, D''s, view, eps, delta),
    each bound at FAMILY_ALPHA / (the number of bounds of the whole list)."""
    total = sum(A.n_bounds(side, view) for _, d, dp, view, _, _ in tests for side in (d, dp))
    alpha_each = A.FAMILY_ALPHA / total
    return [
        A.check_pair(label, left, right, view, eps, delta, alpha_each, direction)
        for label, d, dp, view, eps, delta in tests
        for left, right, direction in ((d, dp, "D vs D'"), (dp, d, "D' vs D"))
    ]


def choice_checks(samples: list[tuple[Choice, list[A.Output], list[A.Output]]]) -> list[A.Check]:
    """The value of K and its upper and lower tails (dpaudit's "M" view), claim (eps_t, 0)."""
    return bonferroni([(p.name, d, dp, "M", float(EPS_T), 0.0) for p, d, dp in samples])


def run_view(outputs: list[A.Output], name: str) -> list[A.Output]:
    """The released itemsets in order; as a set; how many (None: the run refused)."""
    if name == "ordered":
        return outputs
    if name == "set":
        return [(m, ell, sel and tuple(sorted(sel))) for m, ell, sel in outputs]
    return [(m, ell, sel and len(sel)) for m, ell, sel in outputs]


def run_checks(samples: list[tuple[Run, list[A.Output], list[A.Output]]]) -> list[A.Check]:
    return bonferroni(
        [
            (
                f"{p.name} [{v}]",
                run_view(d, v),
                run_view(dp, v),
                "full",
                float(p.eps),
                float(p.delta),
            )
            for p, d, dp in samples
            for v in RUN_VIEWS
        ]
    )


def summary(checks: list[A.Check]) -> list[tuple[str, str, float]]:
    return [(c.pair[:48], c.direction, round(c.eps_lower_bound, 3)) for c in checks]


# --- the audits -----------------------------------------------------------------------------


@pytest.mark.slow
def test_the_choice_of_k_is_eps_t_dp_on_worst_case_pairs() -> None:
    for pair in CHOICES:  # the pairs are what they say: neighbours, u moving by exactly 1
        u = utility(pair.ranks(False), pair.t(False), pair.cap)
        v = utility(pair.ranks(True), pair.t(True), pair.cap)
        moves = [b - a for a, b in zip(u, v, strict=True)]
        assert max(map(abs, moves)) == 1, (pair.name, moves)
        assert exact_eps(pair, float(EPS_T)) <= float(EPS_T) + 1e-9
        d, dp = Counter(pair.d), Counter(pair.d_prime)
        diff = sum(((d - dp) + (dp - d)).values())
        assert diff == (1 if pair.neighbours == ADD else 2), pair.name
    samples = [
        (
            p,
            sample(_choice_chunk, p, False, 100 + 2 * k, N),
            sample(_choice_chunk, p, True, 101 + 2 * k, N),
        )
        for k, p in enumerate(CHOICES)
    ]
    checks = choice_checks(samples)
    print("threshold choice audit, N =", N, summary(checks))
    print("exact eps", [(p.name[:30], round(exact_eps(p, float(EPS_T)), 3)) for p in CHOICES])
    bad = [f"{c.pair} {c.direction}: {v}" for c in checks for v in c.violations]
    assert not bad, bad
    assert all(c.n_events > 0 for c in checks)


@pytest.mark.slow
def test_the_whole_run_with_a_threshold_satisfies_its_claim() -> None:
    for pair in RUNS:
        SPEC.check(pair.public())
        if pair.count is not None:  # what the command line lets through (public values)
            lw.check_threshold_count(pair.public(), pair.count, pair.cap)
    samples = [
        (
            p,
            sample(_run_chunk, p, False, 300 + 2 * k, N_RUN),
            sample(_run_chunk, p, True, 301 + 2 * k, N_RUN),
        )
        for k, p in enumerate(RUNS)
    ]
    checks = run_checks(samples)
    print("threshold run audit, N =", N_RUN, summary(checks))
    bad = [f"{c.pair} {c.direction}: {v}" for c in checks for v in c.violations]
    assert not bad, bad
    assert all(c.n_events > 0 for c in checks)
    released = {}
    for p, d, dp in samples:
        assert all(sel is not None for _, _, sel in d + dp), p.name  # never refused
        released[p.name] = [Counter(len(sel) for _, _, sel in side) for side in (d, dp)]
        print(p.name[:30], [sorted(c.items()) for c in released[p.name]])
    # the choice moves with the threshold: fewer clear on D' (crossing, open), more (lifted)
    for p, fewer in ((RUN_CROSSING, True), (RUN_OPEN, True), (RUN_LIFTED, False)):
        d_mean, dp_mean = (sum(k * c for k, c in r.items()) / N_RUN for r in released[p.name])
        assert (dp_mean < d_mean) == fewer, (p.name, d_mean, dp_mean)


HALF = "sensitivity taken as 1/2"
BROKEN_CHOICES = [
    (HALF, CROSSING, "crossing", N_BROKEN),
    (HALF, LOWERED, "lowered", N_BROKEN),
    (HALF, TINY, "tiny", N_BROKEN),
    ("utility -|k - K*|", LIFTED, "lifted", 2000),
]


@pytest.mark.slow
@pytest.mark.parametrize(
    "name,pair,key,n", BROKEN_CHOICES, ids=[f"{b[0]} ({b[2]})" for b in BROKEN_CHOICES]
)
def test_the_choice_audit_catches_a_broken_variant(
    name: str, pair: Choice, key: str, n: int
) -> None:
    samples = [
        (
            pair,
            sample(_choice_chunk, pair, False, 900, n, name),
            sample(_choice_chunk, pair, True, 901, n, name),
        )
    ]
    checks = choice_checks(samples)
    print(name, summary(checks))
    assert any(c.violations for c in checks), summary(checks)


BROKEN_RUNS = [
    ("K exact", RUN_CROSSING),
    ("ceil(theta n) refused by the public check", RUN_CROSSING),
]


@pytest.mark.slow
@pytest.mark.parametrize("name,pair", BROKEN_RUNS, ids=[b[0] for b in BROKEN_RUNS])
def test_the_run_audit_catches_a_broken_variant(name: str, pair: Run) -> None:
    samples = [
        (
            pair,
            sample(_run_chunk, pair, False, 950, N_RUN_BROKEN, name),
            sample(_run_chunk, pair, True, 951, N_RUN_BROKEN, name),
        )
    ]
    checks = run_checks(samples)
    print(name, summary(checks))
    assert any(c.violations for c in checks), summary(checks)
