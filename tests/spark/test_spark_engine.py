"""--engine spark against the local engine: the same records, the same exact counts, the same
released JSON for a seeded run, the same errors and exit codes (local[2], one shared session)."""

from __future__ import annotations

import gzip
import json
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from click.testing import CliRunner

from dpfim.api import mine_file
from dpfim.cli import main
from dpfim.engines.local import SupportIndex
from dpfim.engines.spark import SparkCounts, SparkInput, count_file
from dpfim.readers import Records, default_sep, read_records, resolve_format

pytestmark = pytest.mark.slow  # whole-file or Spark tests: CI runs them, the quick loop does not


SHARED = Path(__file__).resolve().parents[3] / "shared" / "data"


def spark_counts(path: Path | str, size: int, **kw: Any) -> SparkCounts:
    src = str(path)
    long_cols = "record_col" in kw
    fmt = resolve_format(src, kw.pop("fmt", "auto"), long_columns_given=long_cols)
    sep = default_sep(src, kw.pop("sep", None))
    return count_file(SparkInput(src, fmt, sep, **kw), size)


def named(items: Sequence[str], itemsets: np.ndarray, counts: np.ndarray) -> list[Any]:
    """The ranking by item names, in order: ties too (item ids by first appearance in both)."""
    return [
        (tuple(items[int(i)] for i in row), int(c)) for row, c in zip(itemsets, counts, strict=True)
    ]


def spark_records(counts: SparkCounts) -> Counter[frozenset[str]]:
    """The records Spark holds, as a multiset of item sets (collected here for the test)."""
    out: Counter[frozenset[str]] = Counter()
    for block in counts._blocks.collect():
        recs = block.records
        for k in range(recs.n):
            out[frozenset(recs.record(k))] += 1
    return out


def local_records(records: Records) -> Counter[frozenset[str]]:
    return Counter(frozenset(records.record(k)) for k in range(records.n))


def assert_same_counts(
    path: Path, size: int, depths: list[int], remote: SparkCounts | None = None, **kw: Any
) -> None:
    local = read_records(path, **kw)
    index = SupportIndex(local, size)
    owned = remote is None
    remote = spark_counts(path, size, **kw) if remote is None else remote.with_size(size)
    try:
        assert remote.n == local.n
        assert remote.threshold == index.threshold
        for depth in depths:
            index.ensure(depth)
            remote.ensure(depth)
            assert remote.threshold == index.threshold
            assert remote.complete == index.complete
            np.testing.assert_array_equal(remote.counts, index.counts)
            assert named(remote.items, remote.itemsets, remote.counts) == named(
                local.items, index.itemsets, index.counts
            )
    finally:
        if owned:
            remote.close()


def run(args: list[str]) -> tuple[int, str, str]:
    runner = CliRunner()
    with runner.isolation() as (out, err, *_):
        try:
            main(args)
            code = 0
        except SystemExit as exc:
            code = int(exc.code or 0)
        return code, out.getvalue().decode(), err.getvalue().decode()


def shared(name: str) -> Path:
    path = SHARED / name
    if not path.exists():
        pytest.skip(f"shared data set {path} is absent")
    return path


# --- exact counts ---------------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize(
    "name", ["mushroom.dat", "retail.dat", "T10I4D100K.dat", "BMS-WebView-2.dat", "groceries.csv"]
)
def test_shared_data_sets_same_counts_as_local(spark: Any, name: str) -> None:
    """r = 1, 2, 3 from one read of the data set."""
    remote = spark_counts(shared(name), 1)
    try:
        for size in (1, 2, 3):
            assert_same_counts(shared(name), size, [1, 20, 300], remote=remote)
    finally:
        remote.close()


@pytest.mark.slow
def test_groceries_complete_pair_counts(spark: Any) -> None:
    """Every nonzero pair count (the search reaches s = 1), as locally."""
    assert_same_counts(shared("groceries.csv"), 2, [1, 10**9])


def test_random_data_same_counts_as_local(spark: Any, tmp_path: Path) -> None:
    rng = np.random.default_rng(20261123)
    words = [f"w{k}" for k in range(30)]
    lines = []
    for _ in range(1500):
        k = int(rng.integers(0, 9))
        lines.append(",".join(str(w) for w in rng.choice(words, size=k, replace=True)))
    path = tmp_path / "random.csv"
    path.write_text("\n".join(lines) + "\n")
    remote = spark_counts(path, 1)
    try:
        for size in (1, 2, 3):
            assert_same_counts(path, size, [1, 10**9], remote=remote)
    finally:
        remote.close()


# --- the same records -----------------------------------------------------------------------


TRICKY = {
    "blank.csv": b"a,b\n\n\nb,c\n\n",
    "bom_crlf.csv": b"\xef\xbb\xbfa,b\r\nb , c ,,\r\n\r\nc,a,a\r\n",
    "quoted.csv": b'"x,y",z\n"say ""hi""",z\n  ,\n"a",\n',
    "tabs.tsv": b"a\tb\tc\nb\t\tc\n",
    "no_final_newline.csv": b"a,b\nb,c",
    "cr_at_end.csv": b"a,b\nb,c\r",
    "items.dat": b"1 2 3\n007 7\n\n3 2 1 1\n",
    "items.jsonl": b'["a", " b", 3, 1.5]\n\n["a"]\n[]\n',
    "long.csv": b"rid,item\n1,a\n2,b\n\n1,b\n3,\n2,a\n",
    "unicode_breaks.csv": b"a\x0bb,c\n\xc2\x85x,\xe2\x80\xa8y\n\x1cz\x0c\n\xef\xbb\xbfq\n",
    "long_bom_crlf.tsv": b'\xef\xbb\xbfrid\titem\r\n1\ta\r\n1\t"b"\r\n',
}


@pytest.mark.parametrize("name", sorted(TRICKY))
def test_tricky_files_give_the_same_records(spark: Any, tmp_path: Path, name: str) -> None:
    path = tmp_path / name
    path.write_bytes(TRICKY[name])
    kw: dict[str, Any] = {}
    if name.startswith("long"):
        kw = {"record_col": "rid", "item_col": "item"}
    local = read_records(path, **kw)
    remote = spark_counts(path, 1, **kw)
    try:
        assert remote.n == local.n
        assert spark_records(remote) == local_records(local)
    finally:
        remote.close()


def test_gzip_and_directory_of_part_files(spark: Any, tmp_path: Path) -> None:
    data = shared("groceries.csv").read_bytes()
    gz = tmp_path / "groceries.csv.gz"
    gz.write_bytes(gzip.compress(data))
    lines = data.split(b"\n")
    parts = tmp_path / "parts"
    parts.mkdir()
    third = len(lines) // 3
    for k, chunk in enumerate((lines[:third], lines[third : 2 * third], lines[2 * third :])):
        (parts / f"part-{k:05d}.csv").write_bytes(b"\n".join(chunk).rstrip(b"\n") + b"\n")
    local = read_records(shared("groceries.csv"))
    for path, fmt in ((gz, "auto"), (parts, "basket")):
        remote = spark_counts(path, 2, fmt=fmt)
        try:
            assert spark_records(remote) == local_records(local)
        finally:
            remote.close()


def test_long_parquet_same_records(spark: Any, tmp_path: Path) -> None:
    pa = pytest.importorskip("pyarrow")
    import pyarrow.parquet as pq

    table = pa.table(
        {
            "rid": [1, 2, 1, 3, 2, None, 1],
            "item": ["a", " b", "b", None, "a", "c", "a"],
            "price": [1.0, 2.5, 3.0, 1.0, 2.0, 1.0, 7.0],
        }
    )
    path = tmp_path / "orders.parquet"
    pq.write_table(table, path)
    for item_col in ("item", "price"):
        kw = {"record_col": "rid", "item_col": item_col}
        local = read_records(path, **kw)
        remote = spark_counts(path, 1, **kw)
        try:
            assert spark_records(remote) == local_records(local)
        finally:
            remote.close()


def test_truncation_keeps_at_most_b_items_of_each_record(spark: Any) -> None:
    path = shared("mushroom.dat")
    local = local_records(read_records(path))
    remote = spark_counts(path, 2, max_record_items=5)
    try:
        got = spark_records(remote)
        assert sum(got.values()) == sum(local.values())
        assert all(len(r) == 5 for r in got)  # every mushroom record has 23 items
        originals = list(local)
        assert all(any(r <= o for o in originals) for r in got)
    finally:
        remote.close()


# --- the CLI: same JSON, same errors --------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "extra"),
    [
        ("mushroom.dat", ["--size", "2"]),
        ("groceries.csv", ["--size", "2", "--mechanism", "lmm-gap", "--neighbours", "add-remove"]),
        ("groceries.csv", ["--size", "3", "--mechanism", "stability"]),
        ("retail.dat", ["--mechanism", "lmm-tight", "--neighbours", "add-remove"]),
    ],
)
def test_seeded_run_releases_the_same_json(spark: Any, name: str, extra: list[str]) -> None:
    args = ["mine", str(shared(name)), "--eps", "0.5", "--delta", "1e-6", "--seed", "7", *extra]
    results = []
    for engine in ("local", "spark"):
        code, out, err = run([*args, "--engine", engine])
        assert code == 0, err
        result = json.loads(out)
        assert result["params"].pop("engine") == engine
        result.pop("created")
        results.append(result)
    assert results[0] == results[1]


def test_library_engine_option(spark: Any) -> None:
    path = str(shared("groceries.csv"))
    a = mine_file(path, eps=1, delta="1e-6", seed=3, engine="spark")
    b = mine_file(path, eps=1, delta="1e-6", seed=3)
    assert a["itemset"] == b["itemset"] == ["other vegetables", "whole milk"]
    assert a["params"]["engine"] == "spark"


BAD = {
    "bad.dat": b"1 2\n3 x\n",
    "quote.csv": b'a,b\n"a,b\n',
    "cr.csv": b"a,b\na\rb\n",
    "utf8.csv": b"a,b\n\xff\n",
    "nul.csv": b"a\nb\x00\n",
    "bad.jsonl": b'["a"]\n{"a": 1}\n',
    "long.csv": b"rid,item\n1,a\n2,b,c\n",
    "nocol.csv": b"rid,thing\n1,a\n",
    "empty_long.csv": b"",
}


@pytest.mark.parametrize("name", sorted(BAD))
def test_bad_input_same_error_and_exit_code(spark: Any, tmp_path: Path, name: str) -> None:
    path = tmp_path / name
    path.write_bytes(BAD[name])
    args = ["mine", str(path), "--eps", "1", "--delta", "1e-6"]
    if "long" in name or "nocol" in name:
        args += ["--record-col", "rid", "--item-col", "item"]
    local = run(args)
    remote = run([*args, "--engine", "spark"])
    assert local[0] == 3, local
    assert (remote[0], remote[2]) == (local[0], local[2])


def test_damaged_gzip_is_a_data_error(spark: Any, tmp_path: Path) -> None:
    data = gzip.compress(b"a,b\n" * 5000)
    path = tmp_path / "cut.csv.gz"
    path.write_bytes(data[: len(data) // 2])
    args = ["mine", str(path), "--eps", "1", "--delta", "1e-6"]
    local = run(args)
    remote = run([*args, "--engine", "spark"])
    assert local[0] == remote[0] == 3
    assert remote[2].count("\n") == 1
    # the workers decompress with dpfim's own source: the local engine's message exactly
    assert remote[2] == local[2]
    assert f"{path}: damaged gzip data" in remote[2]


def test_bad_line_in_a_later_split_is_numbered_in_its_file(spark: Any, tmp_path: Path) -> None:
    """A file split across partitions: the line number counts the earlier splits' lines."""
    lines = [b"1 2 3"] * 40_000 + [b"4 x"] + [b"5 6"] * 10
    path = tmp_path / "big.dat"
    path.write_bytes(b"\n".join(lines) + b"\n")
    args = ["mine", str(path), "--eps", "1", "--delta", "1e-6"]
    conf = ["--spark-conf", "spark.sql.files.maxPartitionBytes=65536"]
    local = run(args)
    remote = run([*args, "--engine", "spark", *conf])
    assert local[0] == 3
    assert ":40001:" in local[2]
    assert (remote[0], remote[2]) == (local[0], local[2])


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["/nonexistent/x.csv"], "no such file"),
        (["-", "--format", "basket"], "not stdin"),
        (["x.dat.xz"], "xz"),
        (["x.csv", "--compression", "gzip"], "--compression"),
        (["x.csv", "--spark-conf", "nonsense"], "KEY=VALUE"),
    ],
)
def test_spark_usage_errors(spark: Any, args: list[str], needle: str) -> None:
    code, _, err = run(["mine", *args, "--eps", "1", "--delta", "1e-6", "--engine", "spark"])
    assert code == 2
    assert needle in err
    assert err.count("\n") == 1


@pytest.mark.parametrize("mechanism", ["em", "lmm"])
def test_seeded_run_with_a_declared_universe(spark: Any, tmp_path: Path, mechanism: str) -> None:
    universe = tmp_path / "vocab.txt"
    universe.write_text("whole milk\nother vegetables\nrolls/buns\nsoda\nyogurt\nnot in the data\n")
    args = ["mine", str(shared("groceries.csv")), "--eps", "0.1", "--delta", "1e-6"]
    args += ["--seed", "11", "--mechanism", mechanism, "--universe-items", str(universe)]
    results = []
    for engine in ("local", "spark"):
        code, out, err = run([*args, "--engine", engine])
        assert code == 0, err
        result = json.loads(out)
        result["params"].pop("engine")
        result.pop("created")
        results.append(result)
    assert results[0] == results[1]
    assert results[0]["params"]["universe"]["declared_items"] == 6


@pytest.mark.parametrize(("name", "content"), [("d.dat", b"1 2\n2 3\n"), ("d.jsonl", b"[1, 2]\n")])
def test_verbose_says_which_reader_path_read_the_input(
    spark: Any, tmp_path: Path, name: str, content: bytes
) -> None:
    """-v on Spark names the reader paths that read the input on the workers, summed over
    them, as the local engine does (curator-only); without -v nothing is said."""
    path = tmp_path / name
    path.write_bytes(content * 20)
    args = ["mine", str(path), "--eps", "1", "--delta", "1e-6", "--seed", "1"]
    said = {}
    for engine in ("local", "spark"):
        code, out, err = run([*args, "--engine", engine, "-v"])
        assert code == 0, err
        lines = [x for x in err.splitlines() if "read by: " in x]
        assert len(lines) == 1 and "[curator-only, not private]" in lines[0]
        assert "read by" not in out
        said[engine] = lines[0].split("read by: ", 1)[1]
    fmt = "fimi" if name.endswith(".dat") else "jsonl"
    for line in said.values():
        assert line.startswith(f"{path} ({fmt}): ")
    path_names = {
        e: {p.split(" (")[0] for p in s.split("): ", 1)[1].split(", ")} for e, s in said.items()
    }
    assert path_names["spark"] == path_names["local"]  # small files: the small-input path
    code, _, err = run([*args, "--engine", "spark"])
    assert code == 0 and "read by" not in err
