"""The counting contract (dpfim/counts.py) on every engine of the engine table, and every feature
with every other: engine x mechanism x release mode x universe x input format.

Everything here is generated from the registries: dpfim.engines.NAMES (engines),
dpfim.mechanisms.registry.REGISTRY (mechanisms), dpfim.request.RELEASE_MODES (modes) and
dpfim.inputs.FORMATS (formats; each needs a writer in WRITERS below, and a test fails when one
has none; an engine that does not read one must refuse it). A new entry in any of them enters the
matrix without anyone editing this file.

One small generated data set (about 1,500 records, nine items with clear leads) is written once
in every format; every cell runs the real CLI, seeded, on every engine, and the JSON must equal
the local engine's apart from `created` and `params.engine`. Every `--top 5` cell must release
at least two itemsets, so that peeling really runs on every engine. A combination that cannot
work must be refused the same way on every engine (exit 2, one line on stderr).

The Spark engine runs in one shared local[2] session (its JVM start-up is the slow part).
"""

from __future__ import annotations

import itertools
import json
import random
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from dpfim import engines
from dpfim.engines import Opened
from dpfim.inputs import EngineSpec, InputSpec
from dpfim.mechanisms import registry
from dpfim.readers import FORMATS
from dpfim.request import RELEASE_MODES, release_command
from dpfim.samplers.rng import resolve
from tests.cli_run import run

N_RECORDS = 1500
ITEMS = [str(i) for i in (7, 3, 11, 5, 2, 13, 17, 19, 23)]  # first appearance != id order
SHARES = [0.92, 0.78, 0.64, 0.5, 0.36, 0.22, 0.1, 0.05, 0.02]
VOCABULARY = [*ITEMS, "29", "31"]  # two declared items that never occur
LONGEST = len(ITEMS)
EPS = "40"  # each of the 5 rounds gets 8: enough for every mechanism to lead clearly here


def records() -> list[list[str]]:
    rng = random.Random(20261125)
    out = []
    for _ in range(N_RECORDS):
        rec = [item for item, p in zip(ITEMS, SHARES, strict=True) if rng.random() < p]
        rng.shuffle(rec)
        out.append(rec)
    return out


def _basket(recs: list[list[str]], path: Path) -> list[str]:
    path = path.with_suffix(".csv")
    path.write_text("".join(",".join(r) + "\n" for r in recs))
    return [str(path), "--format", "basket"]


def _fimi(recs: list[list[str]], path: Path) -> list[str]:
    path = path.with_suffix(".dat")
    path.write_text("".join(" ".join(r) + "\n" for r in recs))
    return [str(path)]


def _long(recs: list[list[str]], path: Path) -> list[str]:
    path = path.with_suffix(".csv")
    rows = [f"r{k},{item}\n" for k, r in enumerate(recs) for item in r]
    path.write_text("record,item\n" + "".join(rows))
    return [str(path), "--record-col", "record", "--item-col", "item"]


def _jsonl(recs: list[list[str]], path: Path) -> list[str]:
    path = path.with_suffix(".jsonl")
    path.write_text("".join(json.dumps(r) + "\n" for r in recs))
    return [str(path)]


WRITERS: dict[str, Callable[[list[list[str]], Path], list[str]]] = {
    "basket": _basket,
    "fimi": _fimi,
    "long": _long,
    "jsonl": _jsonl,
}


def test_every_input_format_has_a_writer_here() -> None:
    """A new format must be added to WRITERS (then it enters the matrix by itself)."""
    assert set(WRITERS) == set(FORMATS)


@pytest.fixture(scope="module")
def inputs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, list[str]]:
    base = tmp_path_factory.mktemp("contract")
    recs = records()
    made = {fmt: WRITERS[fmt](recs, base / f"data-{fmt}") for fmt in FORMATS}
    vocab = base / "vocabulary.txt"
    vocab.write_text("\n".join(VOCABULARY) + "\n")
    made["vocabulary"] = [str(vocab)]
    return made


def _engine_args(name: str) -> list[str]:
    if name == "spark":
        pytest.importorskip("pyspark", reason="pyspark is not installed")
        return [
            "--engine",
            "spark",
            "--spark-master",
            "local[2]",
            "--spark-conf",
            "spark.ui.enabled=false",
        ]
    return ["--engine", name]


def _errors(err: str) -> list[str]:
    """stderr without the --seed warning every seeded run prints."""
    return [line for line in err.splitlines() if "--seed makes this run" not in line]


def _normalised(out: str) -> dict[str, Any]:
    result = json.loads(out)
    result.pop("created")
    result["params"].pop("engine")
    return result


# --- the matrix --------------------------------------------------------------------------------


def _cells() -> Iterator[Any]:
    for mech, mode, universe, fmt in itertools.product(
        registry.REGISTRY, RELEASE_MODES, ("open", "declared"), FORMATS
    ):
        yield pytest.param(mech, mode, universe, fmt, id=f"{mech}|{mode}|{universe}|{fmt}")


def _cli_args(
    mech: str, mode: str, universe: str, fmt: str, inputs: dict[str, list[str]]
) -> list[str]:
    spec = registry.get(mech)
    neighbours = "replace" if "replace" in spec.neighbours else "add-remove"
    command, flags = release_command(mode)
    args = [command, *inputs[fmt], "--eps", EPS, "--delta", "1e-6", "--seed", "7", "--compact"]
    args += ["--mechanism", mech, "--neighbours", neighbours, *flags, "-q"]
    if not {"--sizes", "--max-len"} & set(flags):
        args += ["--size", "2"]
    if spec.needs_record_bound:
        args += ["--max-record-items", str(LONGEST)]  # truncates nothing: no draw differs
    if universe == "declared":
        args += ["--universe-items", *inputs["vocabulary"]]
    return args


_LOCAL: dict[tuple[str, ...], tuple[int, str, str]] = {}


def _local(args: list[str]) -> tuple[int, str, str]:
    key = tuple(args)
    if key not in _LOCAL:
        _LOCAL[key] = run([*args, "--engine", "local"])
    return _LOCAL[key]


@pytest.mark.slow
@pytest.mark.parametrize("engine", [e for e in engines.NAMES if e != "local"])
@pytest.mark.parametrize(("mech", "mode", "universe", "fmt"), list(_cells()))
def test_every_engine_releases_what_the_local_engine_releases(
    engine: str, mech: str, mode: str, universe: str, fmt: str, inputs: dict[str, list[str]]
) -> None:
    args = _cli_args(mech, mode, universe, fmt, inputs)
    code, out, err = run([*args, *_engine_args(engine)])
    if fmt not in engines.get(engine).formats:  # refused by engines.prepare, before any reading
        assert code == 2 and out == "" and len(_errors(err)) == 1, err
        assert f"--engine {engine} does not read --format {fmt}" in err
        return
    want_code, want_out, want_err = _local(args)
    assert code == want_code, err
    if want_code != 0:
        assert want_code == 2, want_err  # a combination that cannot work: a usage error
        assert _errors(err) == _errors(want_err) and len(_errors(err)) == 1 and out == ""
        return
    assert _normalised(out) == _normalised(want_out)


@pytest.mark.parametrize(
    ("mech", "mode", "universe"),
    [
        pytest.param(m, mode, u, id=f"{m}|{mode}|{u}")
        for m, mode, u in itertools.product(registry.REGISTRY, RELEASE_MODES, ("open", "declared"))
    ],
)
def test_every_combination_releases_or_is_a_usage_error(
    mech: str, mode: str, universe: str, inputs: dict[str, list[str]]
) -> None:
    """On the local engine (the reference of the matrix): exit 0 with a result, or a one-line
    usage error that names the missing piece; a --top 5 cell releases at least two itemsets."""
    args = _cli_args(mech, mode, universe, "basket", inputs)
    code, out, err = _local(args)
    spec = registry.get(mech)
    if spec.needs_vocabulary and universe == "open":
        assert code == 2 and out == "" and len(_errors(err)) == 1 and "--universe-items" in err
        return
    if "--min-support" in RELEASE_MODES[mode] and spec.whole_run is None:
        assert code == 2 and out == "" and len(_errors(err)) == 1 and "--min-support" in err
        return
    if spec.whole_run is not None and not {"--sizes", "--max-len"} & set(RELEASE_MODES[mode]):
        # levelwise ranks the sizes 1..s together (grown from single items): --size 2 alone
        assert code == 2 and out == "" and len(_errors(err)) == 1 and "--sizes 1-2" in err
        return
    assert code == 0, err
    result = json.loads(out)
    if release_command(mode)[0] == "rules":
        assert len(result["selected"]) >= 2, result["selected"]
        assert len(result["closure"]) >= len(result["selected"])
    elif {"--top", "--min-support"} & set(RELEASE_MODES[mode]):
        assert len(result["itemsets"]) >= 2, result["itemsets"]
    else:
        assert result["itemset"] is not None


# --- the contract, on every engine ---------------------------------------------------------


@pytest.fixture(
    scope="module",
    params=[n if n == "local" else pytest.param(n, marks=pytest.mark.slow) for n in engines.NAMES],
)
def opened(request: pytest.FixtureRequest, inputs: dict[str, list[str]]) -> Iterator[Opened]:
    name = request.param
    spec = EngineSpec(name, "local[2]", {"spark.ui.enabled": "false"})
    if name == "spark":
        pytest.importorskip("pyspark", reason="pyspark is not installed")
    path = inputs["fimi"][0]
    inp = InputSpec(path, "auto", "fimi", " ")
    handle = engines.open_engine(spec, inp, [2], resolve(1)[0])
    yield handle
    handle.close()


def _brute_force() -> tuple[list[tuple[str, ...]], list[int]]:
    """Every nonzero pair by brute force, in the contract's order: decreasing support, ties by
    the first appearance of the items in the input."""
    recs = records()
    first: dict[str, int] = {}
    for r in recs:
        for item in r:
            first.setdefault(item, len(first))
    support: dict[tuple[str, ...], int] = {}
    for r in recs:
        for pair in itertools.combinations(sorted(set(r), key=first.__getitem__), 2):
            support[pair] = support.get(pair, 0) + 1
    ordered = sorted(support, key=lambda p: (-support[p], [first[i] for i in p]))
    return ordered, [support[p] for p in ordered]


def test_ranks_and_ties_match_brute_force(opened: Opened) -> None:
    counts = opened.counts
    counts.lower_to(1)
    assert counts.complete
    pairs, supports = _brute_force()
    got = [tuple(counts.items[i] for i in row) for row in counts.itemsets]
    assert counts.counts.tolist() == supports
    assert got == pairs


def test_ids_never_change_while_the_threshold_falls(opened: Opened) -> None:
    counts = opened.counts
    counts.ensure(1)
    names = list(counts.items)
    top = [tuple(counts.items[i] for i in row) for row in counts.itemsets]
    first_rows = [tuple(int(i) for i in row) for row in counts.itemsets]
    counts.lower_to(1)
    assert list(counts.items[: len(names)]) == names  # items only grow
    for row, named in zip(first_rows, top, strict=True):
        assert tuple(counts.items[i] for i in row) == named


def test_batch_supports_equal_the_counts(opened: Opened) -> None:
    counts = opened.counts
    counts.lower_to(1)
    batch = [list(row) for row in counts.itemsets[:10]] + [[]]
    got = counts.supports(batch)
    assert got[:-1] == counts.counts[:10].tolist()
    assert got[-1] == counts.n == N_RECORDS
    assert counts.support(batch[0]) == int(counts.counts[0])


def test_n_and_usable_are_the_records(opened: Opened) -> None:
    recs = records()
    assert opened.counts.n == len(recs)
    assert opened.usable == sum(1 for r in recs if len(r) >= 2)
    assert opened.distinct_items is not None and opened.distinct_items() == len(ITEMS)
    assert opened.longest_record is not None
    assert opened.longest_record() == max(len(r) for r in recs)
    assert np.all(np.diff(opened.counts.counts) <= 0)


@pytest.mark.slow
@pytest.mark.parametrize("engine", [e for e in engines.NAMES if e != "local"])
@pytest.mark.parametrize("fmt", FORMATS)
def test_the_record_length_cap_keeps_the_same_items_on_every_engine(
    engine: str, fmt: str, inputs: dict[str, list[str]]
) -> None:
    """--max-record-items 3 truncates most of these records: the sample depends on the record
    and the run's key only, so a seeded run gives the local engine's result on every engine."""
    args = ["mine", *inputs[fmt], "--eps", EPS, "--delta", "1e-6", "--seed", "11", "--compact"]
    args += ["--max-record-items", "3", "--top", "5", "--supports", "-q"]
    code, out, err = run([*args, *_engine_args(engine)])
    want_code, want_out, _ = _local(args)
    assert code == want_code == 0, err
    assert _normalised(out) == _normalised(want_out)
    assert json.loads(out)["params"]["max_record_items"] == 3
