"""Where data enters and where the answer leaves (issue 9): the vocabulary on every path, the
timestamp, the release order of items, and the precondition of the choosing mechanism."""

from __future__ import annotations

import datetime as dt
import json
from fractions import Fraction
from pathlib import Path

import pytest

import dpfim
from dpfim.api import mine_file, sort_items
from dpfim.errors import ParameterError
from dpfim.mechanisms import baselines
from dpfim.mechanisms.base import VectorCounts
from dpfim.readers import from_transactions
from dpfim.samplers.rng import seeded_source

BASKETS = [["milk", "bread"]] * 50 + [["tea", "jam"]] * 3 + [["secret"]]


def test_mine_applies_the_vocabulary_to_records_too() -> None:
    """dpfim.mine(Records, universe=...) ignored the vocabulary and released the data's number
    of distinct items as declared_items."""
    records = from_transactions(BASKETS)
    universe = ["milk", "bread", "eggs"]
    for data in (records, BASKETS):
        result = dpfim.mine(data, size=1, eps="0.01", delta="0.5", universe=universe, rng=3)
        assert result["params"]["universe"] == {"declared_items": 3, "size": 3}
    for seed in range(60):  # only declared items are ever named, for every mechanism kind
        for mech, nb in (("lmm", "replace"), ("em", "replace"), ("limited-domain", "add-remove")):
            out = dpfim.mine(
                records,
                size=1,
                eps="0.01",
                delta="0.5",
                universe=universe,
                mechanism=mech,
                neighbours=nb,
                rng=seed,
            )
            assert out["itemset"] is None or set(out["itemset"]) <= set(universe)


def test_created_is_the_start_of_the_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The timestamp must not carry the run time: it is taken before any data is read."""
    path = tmp_path / "b.csv"
    path.write_text("milk,bread\n" * 10)

    import dpfim.readers as readers

    real_read = readers.read_records
    stamps: list[str] = []

    def slow_read(*args: object, **kw: object) -> object:
        stamps.append(dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ"))
        import time

        time.sleep(1.1)  # the read ends in a later second than the run started
        return real_read(*args, **kw)  # type: ignore[arg-type]

    monkeypatch.setattr(readers, "read_records", slow_read)
    result = mine_file(str(path), eps="1", delta="1e-6", seed=1)
    assert result["created"] <= stamps[0]


def test_integer_items_are_released_in_numeric_order() -> None:
    assert sort_items(["11", "3", "6"]) == ["3", "6", "11"]
    assert sort_items(["007", "7", "10"]) == ["007", "7", "10"]
    assert sort_items(["b", "10", "a"]) == ["10", "a", "b"]  # not all integers: by string
    data = [["39", "48", "100"]] * 600
    out = dpfim.mine(data, size=3, eps="1", delta="1e-6", rng=1)
    assert out["itemset"] == ["39", "48", "100"]


@pytest.mark.parametrize(
    ("eps", "delta", "k", "ok"),
    [
        ("4", "0.99", 1, True),  # 16 * 0.99 <= 16
        ("4", "1e-6", 1, True),
        ("10", "0.5", 1, False),  # T = 0: 1 > 0.5
        ("10", "0.5", 4, True),  # T = 1: 4 e^-2.5 = 0.33 <= 0.5
        ("1000", "1e-4", 1, True),  # T = 1: e^-250 <= 1e-4
        ("20", "0.9", 1, False),  # T = 0: 1 > 0.9
        ("5", "0.7", 1, True),  # T = 1: e^-1.25 = 0.29 <= 0.7
    ],
)
def test_choosing_precondition_by_hand(eps: str, delta: str, k: int, ok: bool) -> None:
    """k e^(-eps T/4) <= delta for the integer T in use (docs/privacy.md §16)."""
    call = lambda: baselines.check_choosing(Fraction(eps), Fraction(delta), k)  # noqa: E731
    if ok:
        call()
    else:
        with pytest.raises(ParameterError, match="proven"):
            call()


def test_choosing_without_its_precondition_is_not_private() -> None:
    """Why the precondition exists: at eps = 10, delta = 0.5, k = 1 (T <= 0), adding one record
    {a, b} to a data set without pairs gets {a, b} named with probability ~0.93 > delta = 0.5,
    while it is never named without that record."""
    eps, delta = Fraction(10), Fraction(1, 2)
    assert baselines.choosing_threshold(eps, delta, 1) <= 0
    named = sum(
        baselines.run_choosing(VectorCounts([1]), eps, delta, 1, seeded_source(s)).index is not None
        for s in range(400)
    )
    # Binomial(400, p): p <= 0.5 would give >= 300 with probability < 1e-20.
    assert named >= 300
    with pytest.raises(ParameterError):
        baselines.check_choosing(eps, delta, 1)
    # dpfim itself takes m = max(k, M) >= 2^25 for k (the row budget, docs/privacy.md §16):
    # T = ceil(0.8 ln(4 * 2^25 / 5)) = ceil(0.8 * 17.10) = 14 there, and the condition holds
    result = dpfim.mine(
        [["x"], ["a", "b"]],
        size=2,
        eps="10",
        delta="0.5",
        mechanism="choosing",
        neighbours="add-remove",
        max_record_items=2,
        rng=1,
    )
    assert result["params"]["threshold"] == 14


def test_result_json_names_no_undeclared_or_zero_support_item(tmp_path: Path) -> None:
    """The released JSON of an open-universe run over many seeds: only items of nonzero-support
    itemsets, and no field outside SPEC §4."""
    path = tmp_path / "z.csv"
    path.write_text("a,b\na,b\nc\nd\n")
    for seed in range(100):
        result = mine_file(str(path), size=2, eps="0.01", delta="0.99", seed=seed)
        text = json.dumps(result)
        assert result["itemset"] in (None, ["a", "b"])
        for item in ("c", "d"):
            assert f'"{item}"' not in text


def test_choosing_precondition_is_checked_at_each_round_s_parameters() -> None:
    """With --top K each selection round runs at (eps/K, delta/K): that is what the proof needs.
    (10, 0.5) fails for m = 1 (T = 0), but its rounds at (5, 0.25) pass (T = 2, e^-2.5 <=
    0.25). dpfim's m is at least 2^25 (docs/privacy.md §16), so through dpfim.mine the check
    runs at each round's parameters and passes at both."""
    with pytest.raises(ParameterError, match="proven"):
        baselines.check_choosing(Fraction(10), Fraction(1, 2), 1)
    baselines.check_choosing(Fraction(5), Fraction(1, 4), 1)
    data = [["x"], ["a", "b"]] * 5
    kw = {"size": 2, "mechanism": "choosing", "neighbours": "add-remove", "max_record_items": 2}
    checked: list[tuple[Fraction, Fraction, int]] = []
    real = baselines.check_choosing

    def spy(eps: Fraction, delta: Fraction, m: int) -> None:
        checked.append((eps, delta, m))
        real(eps, delta, m)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(baselines, "check_choosing", spy)
        result = dpfim.mine(data, eps="10", delta="0.5", rng=1, top=2, **kw)
    assert result["ledger"]["eps"]["exact"] == "10"
    assert (Fraction(5), Fraction(1, 4), 1 << 25) in checked


def _pair(tmp_path: Path) -> tuple[Path, Path]:
    """Issue 23's neighbouring files (replace one line): 50 lines `1 2` plus one line of 6000
    distinct items (D), or plus the line `3` (D')."""
    common = "1 2\n" * 50
    d = tmp_path / "d.dat"
    d.write_text(common + " ".join(str(i) for i in range(10, 6010)) + "\n")
    d2 = tmp_path / "d2.dat"
    d2.write_text(common + "3\n")
    return d, d2


@pytest.mark.parametrize("mechanism", ["lmm", "lmm-gap"])
def test_one_long_record_no_longer_decides_whether_a_result_exists(
    tmp_path: Path, mechanism: str
) -> None:
    """Before the default record-length cap, D exited 6 (out of memory at --max-memory 16M:
    C(6000, 2) pairs at threshold 1) and D' exited 0, every time, at any eps: the existence of
    a result was an exact function of one record. With the cap (64 items a record) one record
    adds at most C(64, 2) = 2016 pairs, and both give a result."""
    from tests.cli_run import run

    nb = ["--neighbours", "add-remove"] if mechanism == "lmm-gap" else []
    for path in _pair(tmp_path):
        for _ in range(3):
            args = ["mine", str(path), "--eps", "1", "--delta", "1e-6", "--max-memory", "16M"]
            code, out, err = run([*args, "--mechanism", mechanism, *nb, "-q"])
            assert code == 0, err
            assert err == ""
            assert json.loads(out)["params"]["max_record_items"] == 64


@pytest.mark.slow  # about 40 s: 18 million candidate pairs, in several passes
def test_without_the_cap_the_long_record_decides_the_run_time_and_the_user_is_told(
    tmp_path: Path,
) -> None:
    """The opt-out keeps whole records, with a warning that says what then depends on one
    record: the work (C(6000, 2) = 18 million candidate pairs, counted in several passes within
    --max-memory 16M), no longer whether a result exists."""
    from dpfim.engines import local
    from tests.cli_run import run

    d, d2 = _pair(tmp_path)
    args = ["--eps", "1", "--delta", "1e-6", "--max-memory", "16M", "--max-record-items", "none"]
    passes: list[int] = []
    real = local.SupportIndex._count_level

    def spy(self: local.SupportIndex, *a: object, **k: object) -> object:
        out = real(self, *a, **k)  # type: ignore[arg-type]
        passes.append(self.partitions)
        return out

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(local.SupportIndex, "_count_level", spy)
        for path in (d, d2):
            passes.clear()
            code, out, err = run(["mine", str(path), *args])
            assert code == 0 and json.loads(out)["params"]["max_record_items"] == "none", err
            assert "--max-record-items none keeps whole records" in err
            if path == d:
                assert max(passes) > 1  # the long record's pairs: several passes
            else:
                assert max(passes) == 1


def _memory_boundary_pair(tmp_path: Path) -> tuple[Path, Path]:
    """A file near --max-memory 16M at r = 2: 374 records of 40 items drawn from 1..2999 (about
    280,000 distinct pairs, each one counted at the threshold the search reaches) plus the line
    `1` (D), or plus one record of 64 such items (D2: one line replaced, a B-item record)."""
    import random

    rnd = random.Random(5)
    lines = [" ".join(str(x) for x in rnd.sample(range(1, 3000), 40)) for _ in range(374)]
    long_record = " ".join(str(x) for x in rnd.sample(range(1, 3000), 64))
    d, d2 = tmp_path / "d.dat", tmp_path / "d2.dat"
    d.write_text("\n".join([*lines, "1"]) + "\n")
    d2.write_text("\n".join([*lines, long_record]) + "\n")
    return d, d2


def test_the_memory_boundary_pair_is_a_boundary(tmp_path: Path) -> None:
    """The pair sits at the budget's own boundary (docs/privacy.md §1.2): at --max-memory 16M
    the search reaches a threshold where D2's candidate pairs (one line replaced by a 64-item
    record) outgrow what D's fit in. Until issue 23 that decided the exit status (0 on D, 6 on
    D2, every time); now it decides only how many hash-class passes each takes, so the test
    below is about a real boundary."""
    from dpfim.engines import local
    from tests.cli_run import run

    d, d2 = _memory_boundary_pair(tmp_path)
    args = ["--eps", "1", "--delta", "1e-6", "--max-memory", "16M", "-q", "--seed", "1"]
    classes: dict[Path, int] = {}
    real = local.SupportIndex._lower

    def spy(self: local.SupportIndex, s: int) -> None:
        real(self, s)
        classes[current] = max(classes.get(current, 1), self.partitions)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(local.SupportIndex, "_lower", spy)
        for current in (d, d2):
            code, _, err = run(["mine", str(current), *args])
            assert code == 0, err
    assert classes[d2] > classes[d], classes


def test_one_b_item_record_at_the_memory_boundary_does_not_decide_the_exit_status(
    tmp_path: Path,
) -> None:
    """Issue 23, point 1: neighbouring files at the memory budget's boundary give the same exit
    status, a result on both and the same (empty, -q) stderr, every time."""
    from tests.cli_run import run

    d, d2 = _memory_boundary_pair(tmp_path)
    args = ["--eps", "1", "--delta", "1e-6", "--max-memory", "16M", "-q"]
    for path in (d, d2):
        for _ in range(3):
            code, out, err = run(["mine", str(path), *args])
            assert (code, err) == (0, "")
            result = json.loads(out)
            assert "itemset" in result and result["private"] is True
