"""The record contract: what every reader produces, built incrementally, chunk by chunk.

A record is a set of item strings (trimmed, compared exactly, empty strings are not items).
`Records` holds them as a CSR matrix of item ids. Everything here is record-local: how one record
is stored never depends on another record's content (item ids are numbered by first appearance,
which changes no count and no selection probability: ties are broken uniformly at random).
"""

from __future__ import annotations

import hashlib
import operator
import secrets
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from itertools import pairwise
from typing import Any, overload

import numpy as np

from dpfim.readers import recordkey
from dpfim.samplers.rng import RandomSource

# From this many tokens in one chunk on, pandas' hash table pays for its import (~0.5 s; about 3x
# faster than a dict at 10^6 tokens); below it the import would dominate for small files.
_PANDAS_FROM = 1_000_000
_RESERVE_MAX = 1 << 28  # ids (1 GiB of address space) in one buffer at most


@dataclass(frozen=True)
class Records:
    """Transactions as a CSR matrix of item ids.

    items[i] is the canonical (trimmed) string of item id i (a list, or for inputs read by the
    compiled readers a PackedNames: the same strings, held as bytes and decoded when asked).
    Record k holds the item ids indices[indptr[k]:indptr[k + 1]], sorted ascending and without
    duplicates.
    """

    items: Sequence[str]
    indptr: np.ndarray  # int64, length n + 1
    indices: np.ndarray  # int32

    @property
    def n(self) -> int:
        return len(self.indptr) - 1

    def record(self, k: int) -> set[str]:
        """Record k as a set of item strings (tests, diagnostics)."""
        return {self.items[i] for i in self.indices[self.indptr[k] : self.indptr[k + 1]]}


_DECODE_BLOCK = 1 << 16  # names decoded at once when iterating a PackedNames


def _decode(arena: np.ndarray, starts: np.ndarray, lo: int, hi: int) -> list[str]:
    """The names lo..hi-1 of a packed table, decoded in one step (ASCII: one decode, slices)."""
    if hi <= lo:
        return []
    base = int(starts[lo])
    data = arena[base : int(starts[hi])].tobytes()
    cuts = (starts[lo : hi + 1] - base).tolist()
    if data.isascii():  # byte offsets are character offsets
        text = data.decode("ascii")
        return [text[a:b] for a, b in pairwise(cuts)]
    return [data[a:b].decode("utf-8") for a, b in pairwise(cuts)]


class ItemStore:
    """Item names packed as UTF-8 bytes, back to back: name k is arena[starts[k]:starts[k + 1]];
    state = [names, bytes used]. The layout the compiled tokenisers extend in place
    (dpfim/readers/interner.py): a name they number is stored once, here, and becomes a Python
    string only when asked for. The arrays are grown by doubling (replaced: hold the store,
    not its arrays)."""

    def __init__(self) -> None:
        self.arena = np.zeros(0, dtype=np.uint8)
        self.starts = np.zeros(1, dtype=np.int64)
        self.state = np.zeros(2, dtype=np.int64)

    @property
    def count(self) -> int:
        return int(self.state[0])

    def reserve(self, items: int, size: int) -> None:
        """Room for `items` more names of `size` more bytes (and one spare start)."""
        n, used = self.count, int(self.state[1])
        if n + items + 2 > len(self.starts):
            cap = max(2 * len(self.starts), n + items + 2)
            self.starts = _grown(self.starts, cap, n + 1)
        if used + size > len(self.arena):
            self.arena = _grown(self.arena, max(2 * len(self.arena), used + size), used)

    def extend(self, names: Sequence[str]) -> None:
        """Append names (in this order: they are the next ids)."""
        if not names:
            return
        data = [s.encode("utf-8") for s in names]
        raw = b"".join(data)
        self.reserve(len(data), len(raw))
        n, used = self.count, int(self.state[1])
        self.arena[used : used + len(raw)] = np.frombuffer(raw, dtype=np.uint8)
        ends = np.fromiter(map(len, data), dtype=np.int64, count=len(data))
        np.cumsum(ends, out=ends)
        self.starts[n + 1 : n + 1 + len(data)] = ends + used
        self.state[0] = n + len(data)
        self.state[1] = used + len(raw)

    def rewind(self, count: int) -> None:
        """Forget the names from id `count` on."""
        self.state[0] = count
        self.state[1] = self.starts[count]

    def trim(self) -> None:
        """Give back the room grown for names that never came (the arrays are copied)."""
        n, used = self.count, int(self.state[1])
        if len(self.arena) > used:
            self.arena = self.arena[:used].copy()
        if len(self.starts) > n + 1:
            self.starts = self.starts[: n + 1].copy()

    def names(self, lo: int, hi: int) -> list[str]:
        return _decode(self.arena, self.starts, lo, hi)


class PackedNames(Sequence[str]):
    """The item names of a Records read (partly) by the compiled readers: the ItemStore's
    packed bytes (ids 0..len(starts)-2), then any names other paths added after them, as
    strings. A name is decoded when it is asked for (released itemsets, `-v` lines); the
    vocabulary of a big input is never a Python object per item unless something iterates it.
    Compares equal to a list of the same strings."""

    __slots__ = ("arena", "starts", "tail")

    def __init__(self, arena: np.ndarray, starts: np.ndarray, tail: list[str]) -> None:
        self.arena, self.starts, self.tail = arena, starts, tail

    def __len__(self) -> int:
        return len(self.starts) - 1 + len(self.tail)

    @overload
    def __getitem__(self, i: int) -> str: ...

    @overload
    def __getitem__(self, i: slice) -> list[str]: ...

    def __getitem__(self, i: int | slice) -> str | list[str]:
        if isinstance(i, slice):
            return [self[k] for k in range(*i.indices(len(self)))]
        k = operator.index(i)
        packed = len(self.starts) - 1
        if k < 0:
            k += len(self)
        if 0 <= k < packed:
            return self.arena[self.starts[k] : self.starts[k + 1]].tobytes().decode("utf-8")
        if packed <= k < len(self):
            return self.tail[k - packed]
        raise IndexError(f"item id {i} out of range")

    def __iter__(self) -> Iterator[str]:
        packed = len(self.starts) - 1
        for lo in range(0, packed, _DECODE_BLOCK):
            yield from _decode(self.arena, self.starts, lo, min(lo + _DECODE_BLOCK, packed))
        yield from self.tail

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Sequence) or isinstance(other, (str, bytes)):
            return NotImplemented
        return len(self) == len(other) and all(a == b for a, b in zip(self, other, strict=True))

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"PackedNames({len(self)} items)"


class Vocabulary:
    """Item string -> id. Open: ids by first appearance. Declared: the declared items only;
    anything else maps to -1 (dropped), as does the empty string.

    Names are held once: those the compiled readers numbered as bytes in `store` (an
    ItemStore, which they extend in place), those the other paths numbered as strings after
    them (`pack` moves these into the store: the compiled readers do before a chunk). The
    string -> id index is built only when a path asks it (id_of): a big input read by the
    compiled readers alone never builds it, nor any Python string per item."""

    def __init__(self, declared: Sequence[str] | None = None, *, trim: bool = True) -> None:
        """trim: declared items are trimmed as the file readers trim items; False for the
        in-memory inputs, whose items keep their exact spelling (dpfim/readers/frames.py)."""
        self.declared = declared is not None
        self.store = ItemStore()
        self._tail: list[str] = []  # ids store.count.., not packed yet
        self._index: dict[str, int] = {}  # complete for ids 0..len(_index)-1
        self.linked = False  # a compiled reader's table extends the store (Interner)
        if declared is not None:
            names = (d.strip() for d in declared) if trim else iter(declared)
            self._tail = list(dict.fromkeys(s for s in names if s))
            self._index = {item: i for i, item in enumerate(self._tail)}

    def __len__(self) -> int:
        return self.store.count + len(self._tail)

    @property
    def items(self) -> Sequence[str]:
        """The names by id: the list itself while nothing is packed, else a PackedNames over
        the store's arrays as they are now (later names are not in it)."""
        if self.store.count == 0:
            return self._tail
        n = self.store.count
        store = self.store
        return PackedNames(
            store.arena[: int(store.starts[n])], store.starts[: n + 1], list(self._tail)
        )

    def pack(self) -> None:
        """Move the names other paths added into the store (their ids stay)."""
        if self._tail:
            self.store.extend(self._tail)
            self._tail = []

    def id_of(self, item: str) -> int:
        got = self._index.get(item)  # an indexed id is final: ids never change
        if got is not None:
            return got
        n = len(self) if self.linked else len(self._tail)  # unlinked: nothing is packed
        if len(self._index) < n:
            self._catch_up()
            got = self._index.get(item)
            if got is not None:
                return got
        if self.declared or not item:
            return -1
        self._index[item] = n
        self._tail.append(item)
        return n

    def _catch_up(self) -> None:
        start, packed = len(self._index), self.store.count
        for lo in range(start, packed, _DECODE_BLOCK):
            hi = min(lo + _DECODE_BLOCK, packed)
            self._index.update(zip(self.store.names(lo, hi), range(lo, hi), strict=True))
        start = max(start, packed)
        tail = self._tail[start - packed :]
        self._index.update(zip(tail, range(start, start + len(tail)), strict=True))

    def ids(self, tokens: Sequence[str]) -> np.ndarray:
        """The ids (int64, -1 = dropped) of a chunk of trimmed tokens."""
        codes, uniques = factorize(tokens)
        lut = np.fromiter((self.id_of(u) for u in uniques), dtype=np.int64, count=len(uniques))
        return lut[codes] if len(codes) else np.zeros(0, dtype=np.int64)


def _grown(arr: np.ndarray, size: int, keep: int) -> np.ndarray:
    out = np.zeros(size, dtype=arr.dtype)
    out[:keep] = arr[:keep]
    return out


def factorize(tokens: Sequence[str]) -> tuple[np.ndarray, list[str]]:
    """(codes, uniques in order of first appearance) of a list of strings."""
    if len(tokens) >= _PANDAS_FROM:
        import pandas as pd

        codes, uniques = pd.factorize(np.asarray(tokens, dtype=object))
        return codes.astype(np.int64, copy=False), list(uniques)
    local: dict[str, int] = {}
    codes_arr = np.fromiter(
        (local.setdefault(t, len(local)) for t in tokens), dtype=np.int64, count=len(tokens)
    )
    return codes_arr, list(local)


class RecordBuilder:
    """Collects records chunk by chunk: each chunk's records are sorted and deduplicated at once,
    so memory holds only the compact ids (4 bytes per item occurrence) and the record lengths."""

    def __init__(self, vocab: Vocabulary) -> None:
        self.vocab = vocab
        self._ids: list[np.ndarray] = []
        self._lengths: list[np.ndarray] = []
        self.size_hint: int | None = None  # the input's byte size, when known (reader policy)
        self.scratch: dict[str, object] = {}  # a format reader's state across chunks
        self._buf = np.zeros(0, dtype=np.int32)  # ids written in place (reserve/commit)
        self._used = 0
        self.paths: dict[str, int] = {}  # which reader path read how many chunks (curator-only)

    def took(self, path: str) -> None:
        """Note that a chunk was read by `path` (for `dpfim mine -v`)."""
        self.paths[path] = self.paths.get(path, 0) + 1

    def add_tokens(self, tokens: Sequence[str], lengths: Sequence[int] | np.ndarray) -> None:
        """Records given as their trimmed tokens, concatenated, and each record's token count."""
        self.add_ids(self.vocab.ids(tokens), np.asarray(lengths, dtype=np.int64))

    def add_ids(self, ids: np.ndarray, lengths: np.ndarray) -> None:
        """Records given as item ids (-1: dropped), concatenated, and their lengths."""
        n = len(lengths)
        if n == 0:
            return
        self._seal()
        width = max(len(self.vocab), 1)
        rows = np.repeat(np.arange(n, dtype=np.int64), lengths)
        keep = ids >= 0
        key = rows[keep] * width + ids[keep]
        key.sort(kind="stable")  # rows are already in order: timsort is near-linear here
        if len(key):
            key = key[np.concatenate(([True], key[1:] != key[:-1]))]  # duplicates count once
        rows, item_ids = np.divmod(key, width)
        self._ids.append(item_ids.astype(np.int32))
        self._lengths.append(np.bincount(rows, minlength=n).astype(np.int64))

    def add_sorted(self, ids: np.ndarray, lengths: np.ndarray) -> None:
        """Records whose ids (int32, all >= 0) are already sorted and deduplicated within each
        record, concatenated, and their lengths (int64)."""
        if len(lengths):
            self._seal()
            self._ids.append(ids)
            self._lengths.append(lengths)

    def reserve(self, count: int, expected: int = 0) -> np.ndarray:
        """A writable int32 array of at least `count` free slots: sorted, deduplicated ids
        written to its start and then `commit`ted join the records without a copy. `expected`
        (the likely total over the whole input) sizes a new buffer: untouched slots cost
        address space, not memory, so one buffer for the whole input saves the final copy."""
        if len(self._buf) - self._used < count:
            self._seal()
            self._buf = np.empty(max(count, min(expected, _RESERVE_MAX)), dtype=np.int32)
        return self._buf[self._used :]

    def commit(self, n_ids: int, lengths: np.ndarray) -> None:
        """The next records: their ids are the first n_ids slots `reserve` gave."""
        self._used += n_ids
        self._lengths.append(lengths)

    def _seal(self) -> None:
        if self._used:
            self._ids.append(self._buf[: self._used])
            self._buf = self._buf[self._used :]
            self._used = 0

    def build(self) -> Records:
        self._seal()
        self._buf = np.zeros(0, dtype=np.int32)
        # the readers' per-input state goes first (the compiled readers' hash table: the names
        # it numbered stay in the vocabulary's store, trimmed to their size)
        self.scratch.clear()
        self.vocab.store.trim()
        if len(self._ids) == 1:
            indices = self._ids[0]  # one buffer (a big file read by a compiled reader): no copy
        else:
            indices = np.concatenate(self._ids) if self._ids else np.zeros(0, np.int32)
        self._ids = []
        # record offsets straight from the chunks' lengths, each chunk's freed once summed
        pieces, self._lengths = self._lengths[::-1], []
        indptr = np.zeros(sum(len(x) for x in pieces) + 1, dtype=np.int64)
        at = 0
        while pieces:
            piece = pieces.pop()
            part = indptr[at + 1 : at + 1 + len(piece)]
            np.cumsum(piece, out=part)
            part += indptr[at]
            at += len(piece)
        if indices.nbytes >= _TRIM_FROM:
            _give_back_heap()
        return Records(self.vocab.items, indptr, indices)


def _give_back_heap() -> None:
    """Return the heap's free pages to the OS (glibc; elsewhere nothing): the chunks' small
    arrays freed by build would otherwise stay resident in the middle of the heap, counted in
    the process's peak while counting allocates afresh."""
    global _TRIM
    if _TRIM is None:
        try:
            import ctypes

            _TRIM = ctypes.CDLL("libc.so.6").malloc_trim
        except (OSError, AttributeError):
            _TRIM = False
    if _TRIM:
        _TRIM(0)


_TRIM: Any = None
_TRIM_FROM = 64 << 20  # bytes of item ids: below, the freed heap is small (and re-faulting costs)


def from_transactions(
    transactions: Iterable[Iterable[object]], *, universe: Sequence[str] | None = None
) -> Records:
    """Records from in-memory transactions (the Python API); items are str()-ed and trimmed."""
    builder = RecordBuilder(Vocabulary(universe))
    tokens: list[str] = []
    lengths: list[int] = []
    for t in transactions:
        row = [str(item).strip() for item in t]
        tokens.extend(row)
        lengths.append(len(row))
        if len(tokens) >= 1 << 20:
            builder.add_tokens(tokens, lengths)
            tokens, lengths = [], []
    builder.add_tokens(tokens, lengths)
    return builder.build()


def restrict(records: Records, universe: Sequence[str]) -> Records:
    """The same records seen through a declared vocabulary: undeclared items dropped, ids
    renumbered in the vocabulary's order (what reading with --universe-items gives)."""
    vocab = Vocabulary(universe)
    lut = np.fromiter((vocab.id_of(s) for s in records.items), np.int64, len(records.items))
    builder = RecordBuilder(vocab)
    builder.add_ids(
        lut[records.indices] if len(records.indices) else np.zeros(0, np.int64),
        np.diff(records.indptr),
    )
    return builder.build()


KEY_BYTES = 32


def truncation_key(seed: int | None = None, rng: RandomSource | None = None) -> bytes:
    """The secret key of one run's --max-record-items sample (see `truncate`): 256 bits from
    the OS CSPRNG, or (not private) derived from a --seed, or drawn from a seeded source. Drawn
    once per run on the machine that plans the run (the Spark driver ships it to the executors),
    never released, never written anywhere."""
    if seed is not None:
        return hashlib.sha256(f"dpfim truncation key {seed}".encode()).digest()
    if rng is not None:
        return rng.randbelow(1 << (8 * KEY_BYTES)).to_bytes(KEY_BYTES, "big")
    return secrets.token_bytes(KEY_BYTES)


def truncate(
    records: Records, limit: int, key: bytes | RandomSource, *, in_place: bool = False
) -> Records:
    """Keep `limit` items of each longer record, a uniformly random subset (record-local, SPEC §3).

    The subset is a function of the record alone and of a secret per-run key: the `limit` items
    of smallest keyed priority p(x) = PRF(key, ρ(R) ‖ d(x)), ρ(R) the sum of the items' keyed
    128-bit digests d (dpfim/readers/recordkey.py, docs/privacy.md §1.1). For a random key the
    priorities of one record's distinct items are independent and uniform, so the kept set is a
    uniformly random `limit`-subset, independent between records with different item sets
    (identical item sets keep the same items; two sets share ρ with probability 2^-128).
    Because it depends on nothing but the record and the key, every engine, every part of a
    Spark job and every retried task keeps the same items of the same record, and a seeded
    run truncates the same way on every engine. Privacy: the key is drawn independently of the
    data and never released; neighbouring inputs still differ in one (truncated) record for
    every key, so the mechanisms' guarantees hold for each key and
    hence for the mixture (docs/privacy.md, "Record-length cap").

    in_place: the kept ids are moved left within records.indices instead of copied (no second
    array of the size of the data: for a caller that owns the records and drops them).
    """
    lengths = np.diff(records.indptr)
    long_rows = np.flatnonzero(lengths > limit)
    if not len(long_rows):
        return records
    secret = key if isinstance(key, bytes) else truncation_key(rng=key)
    row_starts = records.indptr[long_rows]
    row_stops = records.indptr[long_rows + 1]
    arena, name_at = _names_of(records.items, records.indices, row_starts, row_stops)
    keys = recordkey.subkeys(secret)
    dropped = recordkey.dropped(
        arena, name_at, records.indices, row_starts, row_stops, limit, keys
    )  # ascending: rows in order, each row's positions sorted
    del arena, name_at
    np.minimum(lengths, limit, out=lengths)
    # in place: the caller's indptr is rewritten and the kept ids move left in blocks, so the
    # only scratch of the data's size is `lengths` (one int64 per record)
    indptr = records.indptr if in_place else np.zeros_like(records.indptr)
    indptr[0] = 0
    np.cumsum(lengths, out=indptr[1:])
    del lengths
    if in_place:
        return Records(records.items, indptr, _compact(records.indices, dropped))
    keep = np.ones(len(records.indices), dtype=bool)
    keep[dropped] = False
    return Records(records.items, indptr, records.indices[keep])


def _names_of(
    items: Sequence[str], ids: np.ndarray, row_starts: np.ndarray, row_stops: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """(arena, starts): item i's UTF-8 name is arena[starts[i]:starts[i + 1]] for every item of
    the rows ids[row_starts[j]:row_stops[j]]. The packed store itself when they are all in it
    (no copy); else a packed table indexed by item id in which only these items have bytes."""
    packed = len(items.starts) - 1 if isinstance(items, PackedNames) else 0
    need = np.zeros(len(items), dtype=bool)
    for a, b in zip(row_starts.tolist(), row_stops.tolist(), strict=True):
        need[ids[a:b]] = True
    if isinstance(items, PackedNames) and not need[packed:].any():
        return items.arena, items.starts
    wanted = np.flatnonzero(need)
    del need
    pieces: list[np.ndarray] = []
    widths = np.zeros(len(items) + 1, dtype=np.int64)
    for lo in range(0, len(wanted), _DECODE_BLOCK):  # a block of names as bytes at a time
        block = wanted[lo : lo + _DECODE_BLOCK]
        data = [items[i].encode("utf-8") for i in block.tolist()]
        widths[block + 1] = [len(d) for d in data]
        pieces.append(np.frombuffer(b"".join(data), dtype=np.uint8))
    np.cumsum(widths, out=widths)
    arena = np.empty(int(widths[-1]), dtype=np.uint8)  # pages become memory as they are filled
    at = 0
    pieces.reverse()
    while pieces:  # each block's bytes freed as soon as they are in the arena
        piece = pieces.pop()
        arena[at : at + len(piece)] = piece
        at += len(piece)
    return arena, widths


_COMPACT_BLOCK = 1 << 20


def _compact(ids: np.ndarray, dropped: np.ndarray) -> np.ndarray:
    """ids without the positions `dropped` (ascending), the rest moved left in place, a block
    of _COMPACT_BLOCK positions at a time."""
    write = a = int(dropped[0])
    n = len(ids)
    while a < n:
        b = min(a + _COMPACT_BLOCK, n)
        lo, hi = np.searchsorted(dropped, (a, b)).tolist()
        if lo == hi:
            ids[write : write + b - a] = ids[a:b]  # overlapping: numpy copies as memmove does
            write += b - a
        else:
            mask = np.ones(b - a, dtype=bool)
            mask[dropped[lo:hi] - a] = False
            kept = ids[a:b][mask]
            ids[write : write + len(kept)] = kept
            write += len(kept)
        a = b
    return ids[:write]
