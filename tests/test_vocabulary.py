"""The item vocabulary held once (issue 22): names the compiled readers number live as bytes
in the Vocabulary's ItemStore and become Python strings only when asked for; every path gives
the same names and the same ids (first appearance) as the string-per-item vocabulary did."""

from __future__ import annotations

import pickle
import sys
from pathlib import Path

import numpy as np
import pytest
from reader_paths import force_fast_readers, force_slow_readers

from dpfim import readers
from dpfim.readers import fimi
from dpfim.readers import records as records_mod
from dpfim.readers.records import ItemStore, PackedNames, RecordBuilder, Vocabulary

NAMES = ["7", "007", "0", "99999999999999999999999999", "é", "SKU-004711-XL", "a b", "\u3000x"]


def packed(names: list[str]) -> PackedNames:
    store = ItemStore()
    store.extend(names[:3])
    store.extend(names[3:])
    vocab = Vocabulary()
    vocab.store = store
    got = vocab.items
    assert isinstance(got, PackedNames)
    return got


def test_packed_names_read_like_the_list(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(records_mod, "_DECODE_BLOCK", 3)  # iteration crosses decode blocks
    names = packed(NAMES)
    assert len(names) == len(NAMES)
    assert [names[i] for i in range(len(NAMES))] == NAMES
    assert names[-1] == NAMES[-1] and names[1:4] == NAMES[1:4]
    assert list(names) == NAMES and names == NAMES and NAMES == names  # noqa: SIM300
    assert names != NAMES[:-1] and names != [*NAMES[:-1], "other"]
    assert pickle.loads(pickle.dumps(names)) == NAMES  # Spark ships blocks with their names
    with pytest.raises(IndexError):
        names[len(NAMES)]


def test_ids_stay_in_first_appearance_order_across_paths() -> None:
    """Names numbered by the Python paths (strings, then packed before a compiled chunk) and
    by the compiled tokeniser (bytes) share one sequence of ids; id_of after a compiled chunk
    finds the packed names (`007` and `7` apart) and numbers new ones next."""
    mp = pytest.MonkeyPatch()
    try:
        force_fast_readers(mp)
        vocab = Vocabulary()
        out = RecordBuilder(vocab)
        assert [vocab.id_of(s) for s in ("5", "007")] == [0, 1]
        fimi.read_chunk(b"7 007 5 123456789012345678901234567890\n", 2, "x", ",", out)
        assert out.paths == {"compiled": 1}
        assert vocab.store.count == 4 and len(vocab) == 4  # the strings were packed
        assert [vocab.id_of(s) for s in ("7", "007", "5", "8")] == [2, 1, 0, 4]
        fimi.read_chunk(b"8 9 7\n", 3, "x", ",", out)
        records = out.build()
    finally:
        mp.undo()
    expected = ["5", "007", "7", "123456789012345678901234567890", "8", "9"]
    assert isinstance(records.items, PackedNames) and records.items == expected
    plain = Vocabulary()  # the string-per-item vocabulary of the Python paths
    for name in ["5", "007", "7", "007", "5", "123456789012345678901234567890", "8", "9", "7"]:
        plain.id_of(name)
    assert list(plain.items) == expected
    assert [records.record(k) for k in range(records.n)] == [
        {"5", "007", "7", "123456789012345678901234567890"},
        {"8", "9", "7"},
    ]


def test_declared_vocabulary_read_compiled_keeps_its_ids() -> None:
    mp = pytest.MonkeyPatch()
    try:
        force_fast_readers(mp)
        out = RecordBuilder(Vocabulary(["007", " 7 ", "7", "3"]))
        fimi.read_chunk(b"7 8 007\n3 70\n", 1, "x", ",", out)
        records = out.build()
    finally:
        mp.undo()
    assert records.items == ["007", "7", "3"]
    assert [records.record(k) for k in range(records.n)] == [{"007", "7"}, {"3"}]
    assert out.vocab.id_of("3") == 2 and out.vocab.id_of("8") == -1


@pytest.mark.parametrize("force", [force_slow_readers, force_fast_readers])
def test_read_records_names_equal_on_every_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, force: object
) -> None:
    path = tmp_path / "f.csv"
    path.write_text('7,007, é ,SKU-1\n\u3000x,7,"a,b"\n007\n', encoding="utf-8")
    force(monkeypatch)  # type: ignore[operator]
    records = readers.read_records(path, fmt="basket")
    assert list(records.items) == ["7", "007", "é", "SKU-1", "x", "a,b"]
    assert isinstance(records.items, PackedNames) == (force is force_fast_readers)


def test_compiled_read_holds_no_python_string_per_item(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The observable: Python's allocator blocks in use (every str is one) after reading a
    file of 200,000 distinct items compiled, records kept. The string-per-item vocabulary
    held at least one block per item (list entries aside); the store holds none (and no
    string -> id index is built). Names are still there, decoded when asked."""
    n = 200_000
    path = tmp_path / "big.dat"
    values = [str(10**11 + 7919 * k) for k in range(n)]
    path.write_text("\n".join(" ".join(values[k : k + 10]) for k in range(0, n, 10)) + "\n")
    small = tmp_path / "small.dat"
    small.write_text("1 2\n3\n")
    force_fast_readers(monkeypatch)
    readers.read_records(small)  # kernels loaded (numba's own objects are not ours)
    before = sys.getallocatedblocks()
    records = readers.read_records(path)
    grew = sys.getallocatedblocks() - before
    assert len(records.items) == n and isinstance(records.items, PackedNames)
    assert grew < n // 20, grew
    assert records.items[0] == values[0] and records.items[n - 1] == values[-1]
    assert list(records.items) == values


def test_spark_block_ships_packed_names_and_reader_paths() -> None:
    """A Spark block read by the compiled readers carries its packed names (and the reader
    paths for `-v`) through pickling unchanged."""
    read = pytest.importorskip("dpfim.engines.spark.read")
    mp = pytest.MonkeyPatch()
    try:
        force_fast_readers(mp)
        out = RecordBuilder(Vocabulary())
        fimi.read_chunk(b"7 007 99999999999999999999\n007\n", 1, "x", ",", out)
        records = out.build()
    finally:
        mp.undo()
    block = read.Block(records, [("f", 0, 0, i) for i in range(3)], {"compiled": 1})
    back = pickle.loads(pickle.dumps(block))
    assert isinstance(back.records.items, PackedNames)
    assert back.records.items == ["7", "007", "99999999999999999999"]
    assert [back.records.record(k) for k in range(2)] == [
        {"7", "007", "99999999999999999999"},
        {"007"},
    ]
    assert back.paths == {"compiled": 1}


def test_a_kernel_run_outside_read_is_published_once() -> None:
    """A caller that runs a kernel on the table itself (not through Interner.read) publishes
    the names it numbered: they are in the store once, and sync does not enter them again."""
    from dpfim.readers.interner import Interner

    vocab = Vocabulary()
    table = Interner(vocab)
    raw = np.frombuffer(b"7 007 7\n", dtype=np.uint8)
    ids = np.zeros(8, dtype=np.int32)
    lengths = np.zeros(4, dtype=np.int64)
    before = table.count
    status, n_ids, n_rec, _ = table.kernel.tokenize(
        raw,
        0,
        0,
        0,
        *table.tables(),
        table.open,
        table.value_cache(),
        ids,
        lengths,
        np.full(3, -1, dtype=np.int64),
    )
    assert status == table.kernel.OK and (n_ids, n_rec) == (2, 1)
    table.publish(before)
    table.sync()
    assert table.count == 2 and table.in_table == 2 and vocab.items == ["7", "007"]
    assert bytes(table.arena[: table.starts[2]]) == b"7007"
    assert vocab.id_of("007") == 1 and vocab.id_of("8") == 2
    table.sync()  # "8" is packed and entered; the table then has each name once
    assert int((table.slots[:, 1] != 0).sum()) == 3
