"""Item bytes -> ids in compiled code, in step with a Vocabulary (the compiled readers' side).

An `Interner` is a hash table over the names in the Vocabulary's ItemStore (records.py: one
byte arena with the names back to back, name k is arena[starts[k]:starts[k + 1]]), which the
compiled tokenisers (dpfim/readers/_compiled.py) read and extend in place: 32-byte slots of
(hash, id, length, first 16 bytes), open addressing. A name is stored once, in the store; the
table only points at it. Ids are the Vocabulary's: before a chunk, the names other paths added
since are packed into the store and entered in the table (`sync`); the names a chunk numbers
are appended to the store by the kernel, so one item never gets two ids and ids stay in order
of first appearance whichever path read which chunk.

A tokeniser that runs out of room stops at the start of its current line and says so; `grow`
makes room and it goes on from there (records are lines, so nothing is read twice into a
record). A chunk given up on (a data error: the line parser reads it and names the line) is
forgotten (`forget`): the items it numbered leave the table and the store.

Imports numba (through the kernels): construct one only for big inputs.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from dpfim.readers.records import RecordBuilder, Vocabulary

_START_ITEMS = 1 << 15
_START_BYTES = 1 << 20
_LUT = 1 << 20


def big_input(first_line: int, out: RecordBuilder, compiled_from: int) -> bool:
    """Whether a chunk is the compiled readers' (a format's size rule, COMPILED_FROM bytes):
    any chunk after the first, or an input of at least `compiled_from` bytes (0: always)."""
    hint = out.size_hint
    return first_line > 1 or compiled_from == 0 or (hint is not None and hint >= compiled_from)


def read_compiled(
    chunk: bytes,
    sep: str,
    out: RecordBuilder,
    kernel_call: Callable[[bytes, str, Interner], Callable[..., Any] | None],
) -> bool:
    """Read a chunk into `out` with a format's compiled tokeniser (its `kernel_call`); False
    when another path must read it (numba missing, the chunk refused or given back: the line
    parser then reads it, or names its bad line)."""
    table = interner(out)
    if table is None:
        return False
    call = kernel_call(chunk, sep, table)
    return call is not None and table.read(chunk, out, call) == table.kernel.OK


def interner(out: RecordBuilder) -> Interner | None:
    """The compiled readers' table of `out` (one per RecordBuilder, shared by the formats),
    or None when numba cannot be imported (the other paths read every chunk then)."""
    if "interner" not in out.scratch:
        try:
            out.scratch["interner"] = Interner(out.vocab)
        except ImportError:
            out.scratch["interner"] = None
    got = out.scratch["interner"]
    return got if isinstance(got, Interner) else None


class Scan:
    """A tokeniser bound to its table, as Interner.read and pipeline.scan run it:
    call(raw, pos, n_ids, n_rec, ids, lengths) is the kernel; other(status, pos, n_ids, n_rec,
    ids, lengths), if any, handles the kernel's own statuses (e.g. a line it leaves to a line
    parser: Interner.add_line) and returns where to go on, (n_ids, n_rec, pos), or None to give
    the chunk up."""

    def __init__(self, call: Callable[..., Any], other: Callable[..., Any] | None = None) -> None:
        self.call = call
        self.other = other

    def __call__(self, *args: Any) -> Any:
        return self.call(*args)


def stops_left(stops: int, n_rec: int) -> bool:
    """Whether a chunk may stop for `other` once more: when such stops are common in a chunk,
    it is given up whole (the other path is faster then)."""
    return stops < 64 + n_rec // 16


class Interner:
    def __init__(self, vocab: Vocabulary) -> None:
        from dpfim.readers import _compiled as kernel

        self.kernel: Any = kernel
        self.vocab = vocab
        self.store = vocab.store
        vocab.linked = True
        self.open = not vocab.declared
        self.slots = np.zeros((2 * _START_ITEMS, 4), dtype=np.uint64)
        self.in_table = 0  # the store's names 0..in_table-1 are in the table
        self.store.reserve(_START_ITEMS, _START_BYTES)
        self.lengths = np.zeros(0, dtype=np.int64)  # per-chunk record lengths (reused)
        self.lut = np.zeros(0, dtype=np.int32)  # FIMI: canonical value -> id, a cache
        self.scratch: dict[str, Any] = {}  # a format's own tables that go with this one

    def value_cache(self) -> np.ndarray:
        """A direct cache value -> id for canonical numbers below _LUT (FIMI's common case: a
        hit costs one read of a small table); entries are filled from the table as asked."""
        if len(self.lut) == 0:
            self.lut = np.full(_LUT, self.kernel.UNSEEN, dtype=np.int32)
        return self.lut

    @property
    def count(self) -> int:
        return self.store.count

    @property
    def arena(self) -> np.ndarray:
        """The store's bytes (name k is arena[starts[k]:starts[k + 1]], k < count)."""
        return self.store.arena

    @property
    def starts(self) -> np.ndarray:
        return self.store.starts

    def publish(self, before: int) -> None:
        """Note that a kernel called outside `read` numbered the names since `before`: they are
        in the store and the table already (nothing is copied; `sync` must not enter them
        again)."""
        del before
        self.in_table = self.count

    def tables(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """The arguments the kernels take for the table, in their order."""
        store = self.store
        return self.slots, store.arena, store.starts, store.state

    def sync(self) -> None:
        """Pack the names other paths added into the store and enter every stored name the
        table lacks."""
        self.vocab.pack()
        if self.in_table < self.count:
            self.grow(0, 0)
            self.kernel.insert_stored(
                self.slots, self.store.arena, self.store.starts, self.in_table, self.count
            )
            self.in_table = self.count
        assert self.count == len(self.vocab)

    def grow(self, items: int = 1, size: int = 1) -> None:
        """Room for at least `items` more items of `size` more bytes (and at least double one of
        the tables that is full)."""
        n = self.count
        k = self.kernel
        slots = len(self.slots)
        while k.MAX_LOAD_DEN * (n + items + 1) > k.MAX_LOAD_NUM * slots:
            slots *= 2
        if slots != len(self.slots):
            self._rehash(slots, n)
        self.store.reserve(items, size)

    def forget(self, before: int) -> None:
        """Drop the items numbered since `before` (a chunk given up on)."""
        self.in_table = min(self.in_table, before)
        if self.count == before:
            return
        self.store.rewind(before)
        self._rehash(len(self.slots), before)
        self.in_table = before
        self.lut.fill(self.kernel.UNSEEN)

    def _rehash(self, size: int, below: int) -> None:
        old, self.slots = self.slots, np.zeros((size, 4), dtype=np.uint64)
        self.kernel.rehash(old, self.slots, below)

    def read(self, chunk: bytes, out: RecordBuilder, call: Callable[..., Any]) -> int:
        """Run a tokeniser over a chunk into `out`: call(raw, pos, n_ids, n_rec, ids, lengths)
        is the kernel with the table's arguments bound (a Scan, whose `other` handles the
        kernel's own statuses). The kernel's final status: OK (the records are committed, the
        new items stored), or another (nothing is kept: another path must read the chunk)."""
        other = getattr(call, "other", None)
        kernel = self.kernel
        raw = np.frombuffer(chunk, dtype=np.uint8)
        hint = out.size_hint or 0
        ids = out.reserve(len(chunk) // 2 + 1, hint // 2 + 2)  # items are separated: a bound
        lengths = self.record_lengths(chunk)
        self.sync()
        before = self.count
        pos = n_ids = n_rec = stops = 0
        while True:
            status, n_ids, n_rec, pos = call(raw, pos, n_ids, n_rec, ids, lengths)
            if status == kernel.OK:
                break
            if status == kernel.FULL:
                lengths = self.more_lengths(chunk, n_rec)
            elif status == kernel.ROOM:
                self.grow(1, 1 << 16)
            elif other is not None and stops_left(stops, n_rec):
                stops += 1
                if n_rec == len(lengths):
                    lengths = self.more_lengths(chunk, n_rec)
                got = other(int(status), pos, n_ids, n_rec, ids, lengths)
                if got is None:
                    self.forget(before)
                    return int(status)
                n_ids, n_rec, pos = got
            else:
                self.forget(before)
                return int(status)
        self.in_table = self.count  # the kernel entered and stored each name it numbered
        out.commit(n_ids, lengths[:n_rec].astype(np.int32))  # kept until build: 4 bytes each
        return int(status)

    def add_line(
        self,
        chunk: bytes,
        pos: int,
        n_ids: int,
        n_rec: int,
        ids: np.ndarray,
        lengths: np.ndarray,
        parse: Callable[[str], list[str]],
    ) -> tuple[int, int, int] | None:
        """The line starting at chunk[pos] read by the line parser `parse` into record n_rec
        (its ids from ids[n_ids], its length into lengths[n_rec], which must exist), its items
        numbered in the order parse gives them (the order a line parser numbers them in):
        (n_ids, n_rec, pos) after it, or None when the line is a data error (NUL, a lone \\r,
        or what parse refuses: the line parser's path names it)."""
        end = chunk.find(b"\n", pos)
        end = len(chunk) if end < 0 else end
        line = chunk[pos : end - 1 if end > pos and chunk[end - 1] == 13 else end]
        if b"\r" in line or b"\0" in line:
            return None
        try:
            items = parse(line.decode("utf-8"))
        except (ValueError, UnicodeDecodeError):
            return None
        data = [item.encode("utf-8") for item in items]
        bounds = np.zeros(len(data) + 1, dtype=np.int64)
        np.cumsum([len(d) for d in data], out=bounds[1:])
        raw = np.frombuffer(b"".join(data), dtype=np.uint8)
        add = self.kernel.intern_record
        while (stop := add(raw, bounds, *self.tables(), self.open, ids, n_ids)) < 0:
            self.grow(len(data), len(raw))
        lengths[n_rec] = stop - n_ids
        return stop, n_rec + 1, end + 1

    def id_of(self, item: bytes) -> int:
        """The id of one item (numbered next if new; -1: a declared vocabulary lacks it)."""
        raw = np.frombuffer(item, dtype=np.uint8)
        while (got := self.kernel.intern(raw, 0, len(raw), *self.tables(), self.open)) == -2:
            self.grow(1, len(raw))
        return int(got)

    def record_lengths(self, chunk: bytes) -> np.ndarray:
        """Scratch for a chunk's record lengths (grown when a kernel says FULL)."""
        want = min(len(chunk) // 8, 1 << 22) + 1
        if len(self.lengths) < want:
            self.lengths = np.empty(want, dtype=np.int64)
        return self.lengths

    def more_lengths(self, chunk: bytes, have: int) -> np.ndarray:
        more = np.empty(max(chunk.count(b"\n") + 1, 2 * len(self.lengths)), dtype=np.int64)
        more[:have] = self.lengths[:have]
        self.lengths = more
        return more
