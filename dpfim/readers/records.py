"""The record contract: what every reader produces, built incrementally, chunk by chunk.

A record is a set of item strings (trimmed, compared exactly, empty strings are not items).
`Records` holds them as a CSR matrix of item ids. Everything here is record-local: how one record
is stored never depends on another record's content (item ids are numbered by first appearance,
which changes no count and no selection probability: ties are broken uniformly at random).
"""

from __future__ import annotations

import hashlib
import secrets
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from dpfim.samplers.rng import RandomSource

# From this many tokens in one chunk on, pandas' hash table pays for its import (~0.5 s; about 3x
# faster than a dict at 10^6 tokens); below it the import would dominate for small files.
_PANDAS_FROM = 1_000_000
_RESERVE_MAX = 1 << 28  # ids (1 GiB of address space) in one buffer at most


@dataclass(frozen=True)
class Records:
    """Transactions as a CSR matrix of item ids.

    items[i] is the canonical (trimmed) string of item id i. Record k holds the item ids
    indices[indptr[k]:indptr[k + 1]], sorted ascending and without duplicates.
    """

    items: list[str]
    indptr: np.ndarray  # int64, length n + 1
    indices: np.ndarray  # int32

    @property
    def n(self) -> int:
        return len(self.indptr) - 1

    def record(self, k: int) -> set[str]:
        """Record k as a set of item strings (tests, diagnostics)."""
        return {self.items[i] for i in self.indices[self.indptr[k] : self.indptr[k + 1]]}


class Vocabulary:
    """Item string -> id. Open: ids by first appearance. Declared: the declared items only;
    anything else maps to -1 (dropped), as does the empty string."""

    def __init__(self, declared: Sequence[str] | None = None) -> None:
        self.declared = declared is not None
        self.items: list[str] = []
        self._index: dict[str, int] = {}
        if declared is not None:
            self.items = list(dict.fromkeys(s for s in (d.strip() for d in declared) if s))
            self._index = {item: i for i, item in enumerate(self.items)}

    def __len__(self) -> int:
        return len(self.items)

    def id_of(self, item: str) -> int:
        if len(self._index) < len(self.items):
            self._catch_up()
        got = self._index.get(item)
        if got is not None:
            return got
        if self.declared or not item:
            return -1
        self._index[item] = len(self.items)
        self.items.append(item)
        return len(self.items) - 1

    def append_new(self, items: Iterable[str]) -> None:
        """Append items known to be absent (a compiled reader numbered them already: they get
        the next ids, in this order). The string -> id index catches up only when a path that
        asks it (id_of) runs: a big input read by the compiled readers alone never builds it."""
        self.items.extend(items)

    def _catch_up(self) -> None:
        start = len(self._index)
        self._index.update(zip(self.items[start:], range(start, len(self.items)), strict=True))

    def ids(self, tokens: Sequence[str]) -> np.ndarray:
        """The ids (int64, -1 = dropped) of a chunk of trimmed tokens."""
        codes, uniques = factorize(tokens)
        lut = np.fromiter((self.id_of(u) for u in uniques), dtype=np.int64, count=len(uniques))
        return lut[codes] if len(codes) else np.zeros(0, dtype=np.int64)


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
        lengths = np.concatenate(self._lengths) if self._lengths else np.zeros(0, np.int64)
        if len(self._ids) == 1:
            indices = self._ids[0]  # one buffer (a big file read by a compiled reader): no copy
        else:
            indices = np.concatenate(self._ids) if self._ids else np.zeros(0, np.int32)
        indptr = np.zeros(len(lengths) + 1, dtype=np.int64)
        np.cumsum(lengths, out=indptr[1:])
        self._ids, self._lengths = [], []
        return Records(self.vocab.items, indptr, indices)


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
    whose keyed BLAKE2b digest (key, the record's item set, the item) is smallest. For a random
    key the digests of one record's distinct items are independent and uniform, so the kept set
    is a uniformly random `limit`-subset, independent between records with different item sets
    (identical records keep the same items). Because it depends on nothing but the record and
    the key, every engine, every part of a Spark job and every retried task keeps the same items
    of the same record, and a seeded run truncates the same way on every engine. Privacy: the
    key is drawn independently of the data and never released; neighbouring inputs still differ
    in one (truncated) record for every key, so the mechanisms' guarantees hold for each key and
    hence for the mixture (docs/privacy.md, "Record-length cap").

    in_place: the kept ids are moved left within records.indices instead of copied (no second
    array of the size of the data: for a caller that owns the records and drops them).
    """
    lengths = np.diff(records.indptr)
    if not (lengths > limit).any():
        return records
    secret = key if isinstance(key, bytes) else truncation_key(rng=key)
    keep = np.ones(len(records.indices), dtype=bool)
    for row in np.flatnonzero(lengths > limit).tolist():
        start, stop = int(records.indptr[row]), int(records.indptr[row + 1])
        names = [records.items[int(i)].encode() for i in records.indices[start:stop]]
        record = hashlib.blake2b(b"\x00".join(sorted(names)), key=secret).digest()
        rank = sorted(
            range(len(names)),
            key=lambda j: (
                hashlib.blake2b(names[j], key=secret, salt=record[:16]).digest(),
                names[j],
            ),
        )
        keep[np.asarray(rank[limit:], dtype=np.int64) + start] = False
    kept_lengths = np.minimum(lengths, limit)
    indptr = np.concatenate(([0], np.cumsum(kept_lengths))).astype(np.int64)
    dropped = np.flatnonzero(~keep)
    if not in_place or len(dropped) > 1 + len(keep) // 256:  # many runs: one vectorised copy
        return Records(records.items, indptr, records.indices[keep])
    ids = records.indices
    write = int(dropped[0])
    bounds = [*dropped[1:].tolist(), len(ids)]
    for gone, stop in zip(dropped.tolist(), bounds, strict=True):
        run = stop - gone - 1  # the kept ids between this dropped one and the next
        if run:
            ids[write : write + run] = ids[gone + 1 : stop].copy()
            write += run
    return Records(records.items, indptr, ids[:write])
