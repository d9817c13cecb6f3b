"""Clipping at the public row budget (docs/privacy.md §1.1, "The row budget").

When the itemsets a lowering would hold exceed the engine's public row budget N (from
--max-memory alone), the engine clips at T(D) = max over levels k of the (N + 1)-th largest
k-itemset support, and the counts are complete at that floor: max(c(I), T(D)) for every I.
Three things are checked here, each so that it can fail:

1. the clipped engine holds exactly max(c, T) against brute force, whatever the order of the
   lowerings that reach the floor (lazily, by ensure, or in one lower_to);
2. every mechanism x release mode x universe (generated from the registries) releases, seeded,
   exactly what it releases when the counts were clipped before it read any of them: so the
   lazy engine IS the mechanism run on max(c, T), the count function the proof is about;
3. T moves by at most 1 between neighbours, so max(c, T) does too (the fact the proof uses).
"""

from __future__ import annotations

import collections
import itertools
import json
import random
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from dpfim.engines import local
from dpfim.engines.local import SupportIndex
from dpfim.mechanisms import registry
from dpfim.readers import from_transactions
from dpfim.request import RELEASE_MODES, release_command
from tests.cli_run import run


def _records(seed: int, n: int = 300, items: int = 30, longest: int = 8) -> list[list[int]]:
    rnd = random.Random(seed)
    return [rnd.sample(range(items), rnd.randint(1, longest)) for _ in range(n)]


def _supports(recs: list[list[int]], k: int) -> collections.Counter[tuple[int, ...]]:
    out: collections.Counter[tuple[int, ...]] = collections.Counter()
    for rec in recs:
        out.update(itertools.combinations(sorted(set(rec)), k))
    return out


def _floor(recs: list[list[int]], size: int, budget: int) -> int:
    """T(D) by brute force: the largest (N + 1)-th support over the levels 2..size (0 if no
    level has more than N itemsets)."""
    t = 0
    for k in range(2, size + 1):
        values = sorted(_supports(recs, k).values(), reverse=True)
        if len(values) > budget:
            t = max(t, values[budget])
    return t


def _held(index: SupportIndex) -> dict[tuple[int, ...], int]:
    names = index.items
    return {
        tuple(sorted(int(names[i]) for i in row)): int(c)
        for row, c in zip(index.itemsets, index.counts, strict=True)
    }


@pytest.mark.parametrize("size", [2, 3])
@pytest.mark.parametrize("budget", [6, 40, 300])
@pytest.mark.parametrize("seed", [1, 2])
def test_the_clipped_engine_holds_max_of_c_and_the_floor(seed: int, budget: int, size: int) -> None:
    recs = _records(seed)
    records = from_transactions([[str(i) for i in r] for r in recs])
    want_t = _floor(recs, size, budget)
    want = {key: c for key, c in _supports(recs, size).items() if c > want_t}
    for how in ("lower_to", "ensure"):
        index = SupportIndex(records, size, rows=budget)
        if how == "lower_to":
            index.lower_to(1)
        else:
            while not index.complete:
                index.ensure(len(index.counts) + 1)
        assert index.clipped_at == want_t
        assert index.complete
        assert _held(index) == want
        assert len(index.counts) <= budget or want_t == 0
        assert list(index.counts) == sorted(index.counts, reverse=True)


def test_no_clip_when_the_budget_holds_everything() -> None:
    recs = _records(3)
    records = from_transactions([[str(i) for i in r] for r in recs])
    index = SupportIndex(records, 2, rows=10**9)
    index.lower_to(1)
    assert index.clipped_at == 0 and index.threshold == 1
    assert _held(index) == dict(_supports(recs, 2))


def test_rows_above_the_floor_never_change_while_it_is_reached() -> None:
    """What a mechanism read before the clip stays true after it: every row seen at a
    threshold above T is still a row, with the same count and the same identity."""
    recs = _records(4, n=400)
    records = from_transactions([[str(i) for i in r] for r in recs])
    index = SupportIndex(records, 2, rows=25)
    seen: dict[tuple[int, ...], int] = {}
    while not index.complete:
        index.ensure(len(index.counts) + 1)
        held = _held(index)
        for key, c in seen.items():
            assert held.get(key) == c
        seen = held
    assert index.clipped_at > 0


def test_a_floor_imposed_from_another_size_keeps_the_rows_above_it() -> None:
    recs = _records(5)
    records = from_transactions([[str(i) for i in r] for r in recs])
    index = SupportIndex(records, 2, rows=10**9)
    index.impose_floor(6)
    assert index.clipped_at == 6 and index.complete
    assert _held(index) == {k: c for k, c in _supports(recs, 2).items() if c > 6}


@pytest.mark.parametrize("seed", range(6))
def test_the_floor_moves_by_at_most_one_between_neighbours(seed: int) -> None:
    """T is a maximum of order statistics, each moved by at most 1 by one record, so max(c, T)
    is a count function of sensitivity 1, and under add/remove T never decreases when a record
    is added (choosing's k-bounded growth on max(c - T, 0) rests on that)."""
    recs = _records(seed, n=120, items=12, longest=6)
    rnd = random.Random(seed)
    other = rnd.sample(range(12), rnd.randint(1, 6))
    for budget in (2, 10, 30):
        t = _floor(recs, 3, budget)
        replaced = _floor([*recs[:-1], other], 3, budget)
        added = _floor([*recs, other], 3, budget)
        assert abs(t - replaced) <= 1
        assert t <= added <= t + 1


# --- every mechanism x mode x universe: the lazy clip is the mechanism on max(c, T) ----------

EPS = "40"
ITEMS = [str(i) for i in range(1, 25)]


def _cells() -> Iterator[Any]:
    for mech, mode, universe in itertools.product(
        registry.REGISTRY, RELEASE_MODES, ("open", "declared")
    ):
        yield pytest.param(mech, mode, universe, id=f"{mech}|{mode}|{universe}")


@pytest.fixture(scope="module")
def clip_inputs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Records with clear leaders (item i in a record with probability falling in i) and a
    long tail of pairs, so that a budget of 30 rows clips below the leaders."""
    rnd = random.Random(20261125)
    shares = [0.9 * 0.85**i for i in range(len(ITEMS))]
    lines = []
    for _ in range(800):
        rec = [item for item, p in zip(ITEMS, shares, strict=True) if rnd.random() < p]
        lines.append(" ".join(rec) if rec else ITEMS[-1])
    root = tmp_path_factory.mktemp("clip")
    data, vocab = root / "d.dat", root / "vocab.txt"
    data.write_text("\n".join(lines) + "\n")
    vocab.write_text("\n".join([*ITEMS, "98", "99"]) + "\n")
    return {"data": data, "vocab": vocab}


def _args(mech: str, mode: str, universe: str, inputs: dict[str, Path]) -> list[str]:
    spec = registry.get(mech)
    neighbours = "replace" if "replace" in spec.neighbours else "add-remove"
    command, flags = release_command(mode)
    args = [command, str(inputs["data"]), "--eps", EPS, "--delta", "1e-6", "--seed", "11"]
    args += ["--mechanism", mech, "--neighbours", neighbours, *flags, "-q", "--compact"]
    if "--sizes" not in flags:
        args += ["--size", "2"]
    if spec.needs_record_bound:
        args += ["--max-record-items", str(len(ITEMS))]
    if universe == "declared":
        args += ["--universe-items", str(inputs["vocab"])]
    return args


@pytest.mark.parametrize(("mech", "mode", "universe"), list(_cells()))
def test_every_mechanism_on_lazily_clipped_counts_is_the_mechanism_on_max_c_t(
    mech: str,
    mode: str,
    universe: str,
    clip_inputs: dict[str, Path],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    args = _args(mech, mode, universe, clip_inputs)
    monkeypatch.setattr(local, "row_budget", lambda *a, **k: 30)
    clipped: list[int] = []
    real_lower = SupportIndex._lower

    def spy(self: SupportIndex, s: int) -> None:
        real_lower(self, s)
        clipped.append(self.clipped_at)

    monkeypatch.setattr(SupportIndex, "_lower", spy)
    lazy = run(args)
    lazy_clipped = any(clipped)

    real_init = SupportIndex.__init__

    def eager(self: SupportIndex, *a: Any, **k: Any) -> None:
        real_init(self, *a, **k)
        self.lower_to(1)  # clip before any mechanism reads a count
        assert self.size == 1 or self.clipped_at > 0  # the budget of 30 rows clips here

    monkeypatch.setattr(SupportIndex, "__init__", eager)
    clipped.clear()
    first = run(args)
    assert lazy[0] == first[0], lazy[2] + first[2]
    if lazy[0] != 0:  # a combination that cannot work: the same usage error
        assert lazy[0] == 2 and lazy[2] == first[2]
        return
    want, got = json.loads(first[1]), json.loads(lazy[1])
    want.pop("created")
    got.pop("created")
    assert got == want
    if mech == "choosing":
        assert lazy_clipped  # it reads every count: the lazy run reached the floor too


def test_the_matrix_above_reaches_the_floor_lazily_somewhere(
    clip_inputs: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Guard for the test above: with the budget of 30 rows, a run that reads every count
    (choosing) is clipped mid-run, after it has read the top counts."""
    monkeypatch.setattr(local, "row_budget", lambda *a, **k: 30)
    states: list[tuple[int, int]] = []
    real_lower = SupportIndex._lower

    def spy(self: SupportIndex, s: int) -> None:
        real_lower(self, s)
        states.append((s, self.clipped_at))

    monkeypatch.setattr(SupportIndex, "_lower", spy)
    args = _args("choosing", "top 1", "open", clip_inputs)
    code, out, err = run(args)
    assert code == 0, err
    assert json.loads(out)["itemset"] is not None
    assert states and states[-1][1] > 0
    assert np.all(np.diff([c for _, c in states]) >= 0)


# --- every mechanism reads the floor as the count past the rows ---------------------------------


class _Clipped:
    """Complete counts clipped at t: rows `listed` (all > t), every other itemset counts t."""

    def __init__(self, listed: list[int], t: int) -> None:
        self._counts = np.asarray(sorted(listed, reverse=True), dtype=np.int64)
        self.clipped_at = t
        self.complete = True
        self.threshold = t + 1
        self.unlisted = None

    @property
    def counts(self) -> np.ndarray:
        return self._counts

    def ensure(self, depth: int) -> None:
        pass

    def lower_to(self, s: int) -> None:
        pass


def _public(name: str, universe: int | None) -> registry.Public:
    from fractions import Fraction

    spec = registry.get(name)
    neighbours = "replace" if "replace" in spec.neighbours else "add-remove"
    return registry.Public(
        Fraction(2),
        Fraction(1, 10**6),
        (2,),
        neighbours,
        candidates=6,
        max_record_items=8,
        universe_size=universe,
    )


@pytest.mark.parametrize(
    "listed",
    [[140, 131, 131, 125, 118, 117, 117, 116], [117, 116, 116], [116]],
    ids=["leaders", "near-the-floor", "one-row"],
)
@pytest.mark.parametrize("universe", [None, 40])
@pytest.mark.parametrize("name", registry.NAMES)
def test_every_mechanism_on_counts_clipped_at_t_is_the_mechanism_on_the_counts_minus_t(
    name: str, universe: int | None, listed: list[int]
) -> None:
    """Every mechanism reads differences of counts only (choosing: max(c - t, 0) by design),
    so on max(c, t) it must decide, draw for draw, what it decides on max(c - t, 0), the same
    listed itemsets with the rest at count 0. A mechanism that reads a count past the rows as
    0 instead of t (the bug this guards against) decides differently."""
    from dpfim.mechanisms.base import VectorCounts
    from dpfim.samplers.rng import seeded_source

    spec = registry.get(name)
    if spec.needs_vocabulary and universe is None:
        pytest.skip("needs a finite universe")
    if spec.whole_run is not None:
        pytest.skip("levelwise never reads the ranked, clipped counts (docs/privacy.md §23.3)")
    t = 115
    p = _public(name, universe)
    for seed in range(40):
        got = spec.run(_Clipped(listed, t), p, seeded_source(seed))  # type: ignore[arg-type]
        want = spec.run(VectorCounts([c - t for c in listed]), p, seeded_source(seed))
        noisy = None if want.noisy_max is None else want.noisy_max + t  # lmm releases c(1)+noise
        assert (got.index, got.zero_pick, got.ell, got.noisy_max) == (
            want.index,
            want.zero_pick,
            want.ell,
            noisy,
        ), seed


# --- report-noisy-max below its floor s* (docs/privacy.md §12) with 0 < T < s* -----------------


@pytest.mark.parametrize("mech", ["em", "noisy-max-laplace", "permute-and-flip"])
def test_below_the_floor_path_reads_counts_clipped_at_t_even_when_t_is_below_the_floor(
    mech: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """At a small eps the walk's floor s* is above every count, and a row budget clips at a T
    between 1 and s* - 1: the engine does not clip while the walk stops at s*, yet the
    itemsets drawn below s* must be read as max(c, T). Draw for draw, the lazy run must equal
    the run whose engine clipped before anything was read (a review found it reading the exact
    c instead: 5.5x the probability eps = 0.1 allows, on a pair of neighbours)."""
    from dpfim.mechanisms import noisy_max

    rnd = random.Random(8)
    recs = [rnd.sample(range(1, 16), 5) for _ in range(60)]
    data, vocab = tmp_path / "d.dat", tmp_path / "v.txt"
    data.write_text("".join(" ".join(map(str, r)) + "\n" for r in recs))
    vocab.write_text("".join(f"{i}\n" for i in range(1, 18)))
    budget = 20
    t = _floor(recs, 2, budget)
    assert 0 < t < 40 and max(_supports(recs, 2).values()) < 40  # s* >= 41 at eps 0.1
    monkeypatch.setattr(local, "row_budget", lambda *a, **k: budget)
    spec = registry.get(mech)
    neighbours = "replace" if "replace" in spec.neighbours else "add-remove"
    args = ["mine", str(data), "--eps", "0.1", "--delta", "1e-6", "--size", "2", "--top", "3"]
    args += ["--mechanism", mech, "--neighbours", neighbours, "-q", "--compact"]
    args += ["--universe-items", str(vocab)]
    real_init = SupportIndex.__init__

    def eager(self: SupportIndex, *a: Any, **k: Any) -> None:
        real_init(self, *a, **k)
        self.lower_to(1)

    below: list[int] = []
    real_below = noisy_max._below_floor

    def spy(*a: Any, **k: Any) -> Any:
        below.append(1)
        return real_below(*a, **k)

    monkeypatch.setattr(noisy_max, "_below_floor", spy)
    for seed in range(12):
        lazy = run([*args, "--seed", str(seed)])
        with monkeypatch.context() as mp:
            mp.setattr(SupportIndex, "__init__", eager)
            first = run([*args, "--seed", str(seed)])
        assert lazy[0] == first[0] == 0, lazy[2] + first[2]
        got, want = json.loads(lazy[1]), json.loads(first[1])
        got.pop("created")
        want.pop("created")
        assert got == want, seed
    assert below  # the walk really went below its floor


@pytest.mark.parametrize("mech", ["em", "lmm"])  # a draw below s*; a zero pick named
def test_noisy_supports_of_a_pick_from_the_floor_group_are_of_its_exact_support(
    mech: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """--supports adds noise to c(I): for a pick from the floor group (every itemset with
    support <= T counts T for the selection) that is its exact support, not T. Items 98 and 99
    are declared and never occur: a pair holding one has support 0, while T >= 2 here."""
    import dpfim

    recs = [[str(x) for x in r] for r in _records(9, n=200, items=12, longest=6)]
    monkeypatch.setattr(local, "row_budget", lambda *a, **k: 6)
    vocab = [str(i) for i in range(12)] + ["98", "99"]
    seen = 0
    for seed in range(60):
        out = dpfim.mine(
            recs,
            size=2,
            eps="1000",
            delta="1e-6",
            mechanism=mech,
            universe=vocab,
            top=8,  # at most 6 rows: later rounds pick from the floor group
            supports=True,
            support_share="0.999",
            rng=seed,
        )
        for pick in out["itemsets"]:
            if {"98", "99"} & set(pick["items"]):
                seen += 1
                assert abs(pick["noisy_support"]) <= 2, pick  # DLap(3/999): 0 almost surely
    assert seen > 0


@pytest.mark.parametrize("mech", ["lmm", "em"])
def test_evaluate_top_k_runs_on_clipped_counts(mech: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """evaluate names zero-group picks by placeholder keys (no items): on clipped counts their
    count is the floor T, never the support of the empty set (n), which made peeling look for
    them among the rows and fail (a review's repro)."""
    from dpfim import evaluate as ev

    monkeypatch.setattr(local, "row_budget", lambda *a, **k: 6)
    rnd = random.Random(9)
    recs = [[str(rnd.randrange(12)) for _ in range(rnd.randint(2, 6))] for _ in range(200)]
    table = ev.evaluate(
        from_transactions(recs),
        size=2,
        eps_values=["1000"],
        delta="1e-6",
        mechanisms=[mech],
        trials=5,
        rng=1,
        top=12,
        universe_size=80,
    )
    assert len(table) == 1
