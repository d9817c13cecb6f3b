"""Readers: every format, compression by magic bytes, record-local parsing, truncation, errors."""

from __future__ import annotations

import bz2
import gzip
import io
import json
import lzma
from collections import Counter
from pathlib import Path

import pytest

from dpfim.errors import InputError, ParameterError
from dpfim.readers import (
    Records,
    from_transactions,
    read_records,
    read_universe,
    resolve_format,
    truncate,
)
from dpfim.samplers.rng import seeded_source

SHARED = Path(__file__).resolve().parent.parent.parent / "shared" / "data"


def as_sets(records: Records) -> list[set[str]]:
    return [
        {records.items[i] for i in records.indices[records.indptr[k] : records.indptr[k + 1]]}
        for k in range(records.n)
    ]


def write(tmp_path: Path, name: str, content: str | bytes) -> Path:
    path = tmp_path / name
    path.write_bytes(content.encode() if isinstance(content, str) else content)
    return path


def test_basket_trims_dedupes_and_keeps_blank_lines(tmp_path: Path) -> None:
    path = write(tmp_path, "b.csv", "milk, bread ,milk\n\n  \neggs,,\r\n")
    assert as_sets(read_records(path)) == [{"milk", "bread"}, set(), set(), {"eggs"}]


def test_basket_honours_quoting_within_a_line(tmp_path: Path) -> None:
    path = write(tmp_path, "b.csv", '"cheese, sliced",milk\n"a ""b""",c\n')
    assert as_sets(read_records(path)) == [{"cheese, sliced", "milk"}, {'a "b"', "c"}]


def test_a_quote_never_spans_lines(tmp_path: Path) -> None:
    path = write(tmp_path, "b.csv", 'milk,"open\nclosed",bread\n')
    with pytest.raises(InputError, match=r"b\.csv:1"):
        read_records(path)


def test_tsv_basket_uses_tabs(tmp_path: Path) -> None:
    path = write(tmp_path, "b.tsv", "a\tb,c\n")
    assert as_sets(read_records(path)) == [{"a", "b,c"}]


def test_fimi(tmp_path: Path) -> None:
    path = write(tmp_path, "f.dat", "1 2 3 \n\n3  4 4\n5")
    assert as_sets(read_records(path)) == [{"1", "2", "3"}, set(), {"3", "4"}, {"5"}]


def test_jsonl(tmp_path: Path) -> None:
    path = write(tmp_path, "j.jsonl", '["a", " b", 3]\n\n[]\n["a", "a"]\n')
    assert as_sets(read_records(path)) == [{"a", "b", "3"}, set(), set(), {"a"}]


def test_long_csv_groups_by_record_id(tmp_path: Path) -> None:
    path = write(tmp_path, "l.csv", "cid,item,x\n1,a,z\n2,b,z\n1,b,z\n1,a,z\n3,,z\n")
    records = read_records(path, record_col="cid", item_col="item")
    assert as_sets(records) == [{"a", "b"}, {"b"}, set()]


def test_long_parquet(tmp_path: Path) -> None:
    pd = pytest.importorskip("pandas")
    pytest.importorskip("pyarrow")
    path = tmp_path / "l.parquet"
    pd.DataFrame({"cid": [1, 1, 2], "item": ["a", "b", "a"]}).to_parquet(path)
    records = read_records(path, record_col="cid", item_col="item")
    assert as_sets(records) == [{"a", "b"}, {"a"}]


@pytest.mark.parametrize(
    ("compress", "suffix"), [(gzip.compress, ".gz"), (bz2.compress, ".bz2"), (lzma.compress, ".xz")]
)
def test_compression_is_decided_by_the_extension(
    tmp_path: Path, compress: object, suffix: str
) -> None:
    packed = compress(b"a,b\nc\n")  # type: ignore[operator]
    assert as_sets(read_records(write(tmp_path, "x.csv" + suffix, packed))) == [{"a", "b"}, {"c"}]
    # Without the extension the bytes are read as they are: the content never decides.
    with pytest.raises(InputError, match="not valid UTF-8"):
        read_records(write(tmp_path, "x.csv", packed))
    # --compression overrides the name, for paths and stdin.
    label = suffix_label(suffix)
    assert as_sets(read_records(write(tmp_path, "y.csv", packed), compression=label))
    stdin = io.BytesIO(packed)
    got = read_records("-", fmt="basket", stdin=stdin, compression=label)
    assert as_sets(got) == [{"a", "b"}, {"c"}]
    # stdin is read as it is by default (a hint says what to do), never sniffed
    with pytest.raises(InputError, match=f"--compression {label}"):
        read_records("-", fmt="basket", stdin=io.BytesIO(packed))


@pytest.mark.parametrize("compress", [bz2.compress, lzma.compress, gzip.compress])
def test_a_compressed_input_must_be_whole(tmp_path: Path, compress: object) -> None:
    """Concatenated streams are all read; trailing bytes or a cut stream are a data error
    (Python's bz2/xz readers silently drop what follows the first stream)."""
    one, two = compress(b"a,b\n"), compress(b"c\n")  # type: ignore[operator]
    suffix = {bz2.compress: ".bz2", lzma.compress: ".xz", gzip.compress: ".gz"}[compress]
    path = write(tmp_path, "x.csv" + suffix, one + two)
    assert as_sets(read_records(path)) == [{"a", "b"}, {"c"}]
    for bad in (one + b"x,y\n", one[:-3]):
        with pytest.raises(InputError, match="damaged"):
            read_records(write(tmp_path, "x.csv" + suffix, bad))


def suffix_label(suffix: str) -> str:
    return {".gz": "gzip", ".bz2": "bz2", ".xz": "xz"}[suffix]


def test_a_first_record_that_looks_compressed_is_just_text(tmp_path: Path) -> None:
    # issue 9: magic bytes let the first record turn a plain file into a data error
    path = write(tmp_path, "x.csv", "BZh91AY,milk\nbread,milk\n")
    assert as_sets(read_records(path)) == [{"BZh91AY", "milk"}, {"bread", "milk"}]
    path = write(tmp_path, "x.dat", "\x1f\x8b 1\n")
    with pytest.raises(InputError, match=r"x\.dat:1"):
        read_records(path)


def test_plain_data_under_a_gz_name_is_a_data_error(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="damaged gzip"):
        read_records(write(tmp_path, "x.csv.gz", "a,b\n"))


def test_stdin_is_never_sniffed() -> None:
    """A first record that is a whole xz stream (no newline inside) once replaced the data set
    when stdin's magic bytes chose the decompressor (found in review)."""
    evil = lzma.compress(b"a,b\n" * 50)
    while b"\n" in evil:
        evil = lzma.compress(evil[:8] + b"a,b\n" * 50)
    data = evil + b"\n" + b"x,y\n" * 50
    with pytest.raises(InputError, match=r"<stdin>:1: not valid UTF-8"):
        read_records("-", fmt="basket", stdin=io.BytesIO(data))


def test_unsupported_compression_says_what_to_do(tmp_path: Path) -> None:
    with pytest.raises(ParameterError, match="zstd -dc"):
        read_records(write(tmp_path, "x.csv.zst", b"(\xb5/\xfd"))


def test_damaged_compressed_data_is_a_data_error(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="damaged gzip"):
        packed = gzip.compress("".join(f"item{k},other{k * 7}\n" for k in range(5000)).encode())
        read_records(write(tmp_path, "x.csv.gz", packed[: len(packed) // 2]))


def test_stdin(tmp_path: Path) -> None:
    records = read_records("-", fmt="jsonl", stdin=io.BytesIO(b'["x","y"]\n'))
    assert as_sets(records) == [{"x", "y"}]


@pytest.mark.parametrize(
    ("name", "fmt", "cols", "expected"),
    [
        ("a.dat", "auto", False, "fimi"),
        ("a.dat.gz", "auto", False, "fimi"),
        ("a.csv", "auto", False, "basket"),
        ("a.csv", "auto", True, "long"),
        ("a.jsonl.xz", "auto", False, "jsonl"),
        ("a.parquet", "auto", False, "long"),
        ("a.xyz", "fimi", False, "fimi"),
    ],
)
def test_format_from_extension_only(name: str, fmt: str, cols: bool, expected: str) -> None:
    assert resolve_format(name, fmt, long_columns_given=cols) == expected


@pytest.mark.parametrize("name", ["a.xyz", "noext", "-"])
def test_undecidable_format_is_a_usage_error(name: str) -> None:
    with pytest.raises(ParameterError, match="--format"):
        resolve_format(name, "auto")


def test_universe_filters_items_and_fixes_the_vocabulary(tmp_path: Path) -> None:
    path = write(tmp_path, "b.csv", "a,b,z\nz\n")
    records = read_records(path, universe=["b", "a", "c", "a"])
    assert records.items == ["b", "a", "c"]
    assert as_sets(records) == [{"a", "b"}, set()]
    vocab = write(tmp_path, "v.txt", " b\n\na\nb\n")
    assert read_universe(str(vocab)) == ["b", "a"]


def test_truncation_keeps_exactly_b_items_uniformly(tmp_path: Path) -> None:
    lines = "".join(f"a,b,c,d,e,t{k}\nx,y\n" for k in range(2000))  # 2000 distinct long records
    path = write(tmp_path, "b.csv", lines)
    records = read_records(path, max_record_items=2, rng=seeded_source(1))
    sets = as_sets(records)
    assert all(len(s) == 2 for s in sets)
    assert all(s == {"x", "y"} for s in sets[1::2])
    kept = Counter(item for s in sets[::2] for item in s)
    # each of the 6 items of a record is kept with probability 2/6: 667 expected of 2000;
    # sd = sqrt(2000 * 1/3 * 2/3) = 21, so 5 sd = 105 (false alarm ~ 6e-7 per item)
    assert all(abs(kept[i] - 2000 / 3) < 105 for i in "abcde")
    again = read_records(path, max_record_items=2, rng=seeded_source(1))
    assert as_sets(again) == sets


def test_truncation_is_a_function_of_the_record_and_the_key() -> None:
    """The same record keeps the same items wherever it is (every engine, every retried Spark
    task, every copy of it); another key gives another, equally uniform, choice."""
    from dpfim.readers.records import truncation_key

    items = [f"i{k}" for k in range(10)]
    recs = from_transactions([items, ["z", *items], items])
    key = truncation_key(seed=5)
    cut = truncate(recs, 3, key)
    first, _, third = (cut.record(k) for k in range(3))
    assert first == third and len(first) == 3
    assert truncate(recs, 3, key).record(0) == first
    others = {frozenset(truncate(recs, 3, truncation_key(seed=s)).record(0)) for s in range(30)}
    assert len(others) > 10  # 120 possible subsets: 30 keys do not all agree


def test_truncate_leaves_short_records_alone() -> None:
    from dpfim.readers import from_transactions

    records = from_transactions([["a", "b"], ["c"]])
    assert truncate(records, 2, seeded_source(1)) is records


@pytest.mark.parametrize(
    ("name", "content", "where"),
    [
        ("g.csv", bytes(range(256)), "g.csv:1"),  # a NUL on line 1 (the first error)
        ("h.csv", b"ok\n" + bytes(range(11, 256)), "h.csv:2"),
        ("u.csv", b"ok\ncaf\xe9\n", "u.csv:2"),
        ("n.csv", b"a\x00b\n", "n.csv:1"),
        ("f.dat", b"1 2\n3 x4\n", "f.dat:2"),
        ("j.jsonl", b'["a"]\n{"a": 1}\n', "j.jsonl:2"),
        ("k.jsonl", b'["a"]\n[1, [2]]\n', "k.jsonl:2"),
        ("m.jsonl", b'["a"\n', "m.jsonl:1"),
    ],
)
def test_parse_errors_name_file_and_line(
    tmp_path: Path, name: str, content: bytes, where: str
) -> None:
    with pytest.raises(InputError, match=where.replace(".", r"\.")):
        read_records(write(tmp_path, name, content))


def test_long_format_errors(tmp_path: Path) -> None:
    path = write(tmp_path, "l.csv", "a,b\n1,2\n")
    with pytest.raises(InputError, match="no column 'cid'"):
        read_records(path, record_col="cid", item_col="b")
    with pytest.raises(ParameterError):
        read_records(path, fmt="long")
    with pytest.raises(InputError):
        read_records(write(tmp_path, "e.csv", ""), record_col="a", item_col="b")


def test_unreadable_paths_are_usage_errors(tmp_path: Path) -> None:
    with pytest.raises(ParameterError, match="no such file"):
        read_records(tmp_path / "missing.csv")
    with pytest.raises(ParameterError, match="directory"):
        read_records(tmp_path)


@pytest.mark.slow
def test_a_10_mb_line_is_one_record(tmp_path: Path) -> None:
    path = write(tmp_path, "big.csv", ",".join(f"i{k}" for k in range(1_500_000)) + "\n")
    records = read_records(path)
    assert records.n == 1 and len(records.indices) == 1_500_000


def test_groceries_items_round_trip() -> None:
    path = SHARED / "groceries.csv"
    if not path.exists():
        pytest.skip(f"{path} is absent")
    naive = [
        {item.strip() for item in line.split(",") if item.strip()}
        for line in path.read_text().splitlines()
    ]
    assert as_sets(read_records(path)) == naive
    items = set(read_records(path).items)
    assert "cream cheese" in items and "rolls/buns" in items and "cream cheese " not in items


def test_jsonl_sample_matches_basket_sample() -> None:
    here = Path(__file__).resolve().parent.parent / "sample_data"
    basket = as_sets(read_records(here / "groceries_sample.csv"))
    assert as_sets(read_records(here / "groceries_sample.jsonl")) == basket
    long = read_records(
        here / "groceries_sample_long.csv", record_col="customer_id", item_col="item"
    )
    assert as_sets(long) == [s for s in basket if s]  # long format has no empty baskets
    first = json.loads((here / "groceries_sample.jsonl").read_text().splitlines()[0])
    assert basket[0] == set(first)
