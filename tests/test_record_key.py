"""The --max-record-items sample's keys (dpfim/readers/recordkey.py, docs/privacy.md §1.1): the
PRF against its published vectors, the compiled selection against the Python definition, and
the record key's injectivity (issue 35 point 2: records that joined to the same string)."""

from __future__ import annotations

import random
from pathlib import Path

import numpy as np
import pytest

from dpfim.readers import read_records, recordkey
from dpfim.readers.records import Records, truncate, truncation_key

# SipHash-2-4, key 00 01 .. 0f, message 00 01 .. (n-1): the reference implementation's
# vectors.h (Aumasson and Bernstein), n = 0 .. 16, each digest as its little-endian bytes.
VECTORS = [
    "310e0edd47db6f72", "fd67dc93c539f874", "5a4fa9d909806c0d", "2d7efbd796666785",
    "b7877127e09427cf", "8da699cd64557618", "cee3fe586e46c9cb", "37d1018bf50002ab",
    "6224939a79f5f593", "b0e4a90bdf82009e", "f3b9dd94c5bb5d7a", "a7ad6b22462fb3f4",
    "fbe50e86bc8f1e75", "903d84c02756ea14", "eef27a8e90ca23f7", "e545be4961ca29a1",
    "db9bc2577fcc2a3f",
]  # fmt: skip
K0 = int.from_bytes(bytes(range(8)), "little")
K1 = int.from_bytes(bytes(range(8, 16)), "little")


@pytest.mark.parametrize("n", range(len(VECTORS)))
def test_siphash_matches_the_reference_vectors(n: int) -> None:
    want = int.from_bytes(bytes.fromhex(VECTORS[n]), "little")
    assert recordkey.siphash24(K0, K1, bytes(range(n))) == want
    compiled = pytest.importorskip("dpfim.readers._recordkey_compiled")
    data = np.arange(64, dtype=np.uint8)
    assert int(compiled.siphash24(np.uint64(K0), np.uint64(K1), data, 0, n)) == want
    assert int(compiled.siphash24(np.uint64(K0), np.uint64(K1), data, 3, 3 + n)) == (
        recordkey.siphash24(K0, K1, bytes(range(3, 3 + n)))
    )


def _records(rows: list[list[str]]) -> Records:
    names: dict[str, int] = {}
    ids: list[int] = []
    indptr = [0]
    for row in rows:
        ids += sorted({names.setdefault(x, len(names)) for x in row})
        indptr.append(len(ids))
    return Records(list(names), np.asarray(indptr, np.int64), np.asarray(ids, np.int32))


def test_compiled_selection_is_the_definition() -> None:
    """truncate keeps exactly recordkey.kept's items (the Python definition), for records of
    several lengths, multi-byte names and names that are prefixes of each other."""
    rng = random.Random(7)
    alphabet = ["a", "b", "é", "\u0000", "1", "xyz", "🍎"]
    rows = []
    for _ in range(40):
        m = rng.randrange(1, 60)
        rows.append(list({"".join(rng.choices(alphabet, k=rng.randrange(1, 6))) for _ in range(m)}))
    records = _records(rows)
    for seed in range(3):
        key = truncation_key(seed=seed)
        keys = recordkey.subkeys(key)
        cut = truncate(records, 5, key)
        for k, row in enumerate(rows):
            want = set(row) if len(row) <= 5 else recordkey.kept(keys, row, 5)
            assert cut.record(k) == want


@pytest.mark.slow
def test_python_fallback_is_the_compiled_selection() -> None:
    """Without numba the same sample comes out (the fallback is the definition)."""
    rows = [[f"item{i}" for i in range(k, k + 30)] for k in range(6)]
    records = _records(rows)
    keys = recordkey.subkeys(truncation_key(seed=3))
    arena = np.frombuffer("".join(records.items).encode(), dtype=np.uint8)
    starts = np.zeros(len(records.items) + 1, np.int64)
    np.cumsum([len(x.encode()) for x in records.items], out=starts[1:])
    lo, hi = records.indptr[:-1], records.indptr[1:]
    compiled = recordkey.dropped(arena, starts, records.indices, lo, hi, 4, keys)
    python = recordkey._dropped_python(arena, starts, records.indices, lo, hi, 4, keys)
    assert compiled.tolist() == python.tolist() and len(compiled) == 6 * (30 - 4)


def test_records_that_joined_to_one_string_are_sampled_independently() -> None:
    """["a\\0b", s1..s9] and ["a", "b", s1..s9]: the old key hashed the sorted names joined with
    NUL, so both records had one salt and their kept parts of s1..s9 were nested in every draw
    (issue 35: 4,000 of 4,000). With ρ a sum of per-item PRF digests they are independent.
    Under independence, B = 3 of 10 and 11 items, the kept parts of the shared 9 are nested in
    a fraction q ≈ 0.06 of draws (simulated below from two independent uniform samples); 400
    seeded draws then have mean ≈ 25 and sd ≈ 5: the test asserts < 100 (15 sd: no false
    alarm in practice), while the old key gives 400."""
    shared = [f"s{i}" for i in range(9)]
    joined = _records([["a\u0000b", *shared], ["a", "b", *shared]])

    def nested(x: set[str], y: set[str]) -> bool:
        x, y = x & set(shared), y & set(shared)
        return x <= y or y <= x

    hits = 0
    for seed in range(400):
        cut = truncate(joined, 3, truncation_key(seed=seed))
        hits += nested(cut.record(0), cut.record(1))
    rng = random.Random(1)
    first, second = ["a\u0000b", *shared], ["a", "b", *shared]
    q = (
        sum(nested(set(rng.sample(first, 3)), set(rng.sample(second, 3))) for _ in range(20_000))
        / 20_000
    )
    assert 0.03 < q < 0.1
    assert hits < 100


def test_the_kept_items_depend_on_the_item_set_not_its_order(tmp_path: Path) -> None:
    """The same record spelled in another order, in a file whose other records number the
    items differently, keeps the same items (ρ is a sum over the set; ids never enter)."""
    items = [f"x{i}" for i in range(50)]
    a = tmp_path / "a.jsonl"
    b = tmp_path / "b.jsonl"
    a.write_text('["x7"]\n' + "[" + ",".join(f'"{x}"' for x in items) + "]\n")
    b.write_text('["x40", "x3"]\n' + "[" + ",".join(f'"{x}"' for x in reversed(items)) + "]\n")
    key = truncation_key(seed=11)
    ra = read_records(a, max_record_items=8, key=key)
    rb = read_records(b, max_record_items=8, key=key)
    assert ra.record(1) == rb.record(1) and len(ra.record(1)) == 8
    other = read_records(a, max_record_items=8, key=truncation_key(seed=12))
    assert other.record(1) != ra.record(1)  # another key, another sample (P = 1/C(50,8))


def test_the_sample_is_the_same_over_packed_names_and_their_tail(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Records read by the compiled readers hold their names packed (PackedNames), those read
    after by a line parser as a tail of strings: truncate reads the packed bytes directly or
    packs the names it needs, and keeps exactly the definition's items either way."""
    from reader_paths import force_fast_readers

    from dpfim.readers import basket
    from dpfim.readers.records import PackedNames, RecordBuilder, Vocabulary

    force_fast_readers(monkeypatch)
    out = RecordBuilder(Vocabulary())
    first = ",".join(f"p{k}" for k in range(40)) + "\n"
    basket.read_chunk(first.encode(), 1, "x", ",", out)  # compiled: packed names
    second = '"d""e",' + ",".join(f"t{k}" for k in range(30)) + ",p1,p2\n"
    basket.read_chunk(second.encode(), 2, "x", ",", out)  # a doubled quote: line parser
    records = out.build()
    assert isinstance(records.items, PackedNames) and records.items.tail  # both branches
    key = truncation_key(seed=4)
    keys = recordkey.subkeys(key)
    rows = [sorted(records.record(k)) for k in range(records.n)]
    for limit in (1, 5, 32):
        cut = truncate(records, limit, key)
        for k, row in enumerate(rows):
            want = set(row) if len(row) <= limit else recordkey.kept(keys, row, limit)
            assert cut.record(k) == want
    only_packed = Records(records.items, records.indptr[:2], records.indices[: records.indptr[1]])
    cut = truncate(only_packed, 7, key)
    assert cut.record(0) == recordkey.kept(keys, rows[0], 7)


def test_a_record_keeps_at_least_one_item() -> None:
    """limit 0 would index an empty heap: refused (the CLI and readers refuse it earlier)."""
    records = _records([["a", "b", "c"]])
    with pytest.raises(ValueError, match="at least 1"):
        truncate(records, 0, truncation_key(seed=1))
