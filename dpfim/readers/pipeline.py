"""Big inputs on both cores: chunks tokenised in parallel, merged in input order.

The compiled tokenisers (dpfim/readers/_compiled.py) spend most of their time on bytes: finding
the items, hashing them, probing a table. None of that needs the shared item table, so a chunk
is tokenised (`scan`, in a worker thread: the kernels release the GIL) into a table of its own:
its records as *local* ids, numbered by first appearance within the chunk, and its distinct
items' bytes in that order. The chunks are then merged one by one in input order (`merge`):
the chunk's distinct items, in their local order, are looked up in the shared table (the
Interner, kept in step with the Vocabulary) and the new ones numbered next; the records are
renumbered and sorted again. A new item gets its id when the first chunk that holds it is
merged, at its first appearance in that chunk: the order of first appearance in the input,
exactly as the sequential reader numbers them (tests/test_reader_paths.py compares the two).

Everything stays record-local: a chunk is whole lines, each line is read by the same kernel as
in the sequential reader. A chunk the kernel gives back (a data error, a line only the line
parser reads exactly) is read, when its turn to merge comes, by the format's other paths
(`read_chunk(..., compiled=False)`), which name the bad line as before.

Imports numba (through the kernels): used for big inputs only (dpfim/readers/__init__.py).
"""

from __future__ import annotations

import os
from collections import deque
from collections.abc import Callable, Iterable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import numpy as np

from dpfim.readers.interner import Interner, interner, stops_left
from dpfim.readers.records import RecordBuilder, Vocabulary

ENABLED: bool | None = None  # None: when a core is idle (`worth_it`); True/False: always/never
WORKERS = 2  # threads tokenising chunks (the machine this was measured on has 2 cores)
AHEAD = 1  # chunks queued for the workers beyond the ones they are on


def worth_it() -> bool:
    """Whether to read on two cores: ENABLED, or by default when this process may use two CPUs
    and the machine is not busy (1-minute load average below cores - 0.5). The merge costs
    ~20 % more CPU than the sequential reader, which only an idle core pays back: on a machine
    whose cores are all taken, the sequential reader finishes first. Decided from the machine
    alone, never from the data; both readers give the same records (tests compare them)."""
    if ENABLED is not None:
        return ENABLED
    try:
        cpus = len(os.sched_getaffinity(0))
        load = os.getloadavg()[0]
    except (AttributeError, OSError):
        return False
    return cpus >= 2 and load < cpus - 0.5


KernelCall = Callable[[bytes, str, Interner], Callable[..., Any] | None]


@dataclass(frozen=True)
class Scanned:
    """One chunk tokenised into a table of its own: records as local ids (ids[:n_ids], the
    record lengths), and local item k's bytes arena[starts[k]:starts[k + 1]], k < count."""

    ids: np.ndarray
    lengths: np.ndarray
    n_ids: int
    arena: np.ndarray
    starts: np.ndarray
    count: int


def scan(chunk: bytes, sep: str, kernel_call: KernelCall) -> Scanned | None:
    """Tokenise a chunk into a table of its own (any thread); None when the kernel gives the
    chunk back (another path must read it)."""
    table = Interner(Vocabulary())
    call = kernel_call(chunk, sep, table)
    if call is None:
        return None
    kernel = table.kernel
    raw = np.frombuffer(chunk, dtype=np.uint8)
    ids = np.empty(len(chunk) // 2 + 1, dtype=np.int32)  # items are separated: a bound
    lengths = np.empty(min(len(chunk) // 8, 1 << 22) + 1, dtype=np.int64)
    other = getattr(call, "other", None)  # a Scan's handler of the kernel's own statuses
    pos = n_ids = n_rec = stops = 0
    while True:
        status, n_ids, n_rec, pos = call(raw, pos, n_ids, n_rec, ids, lengths)
        if status == kernel.OK:
            break
        if status == kernel.FULL:
            lengths = _longer(lengths, chunk, n_rec)
        elif status == kernel.ROOM:
            table.grow(1, 1 << 16)
        elif other is not None and stops_left(stops, n_rec):
            stops += 1
            if n_rec == len(lengths):
                lengths = _longer(lengths, chunk, n_rec)
            got = other(int(status), pos, n_ids, n_rec, ids, lengths)
            if got is None:
                return None
            n_ids, n_rec, pos = got
        else:
            return None
    return Scanned(ids, lengths[:n_rec].copy(), n_ids, table.arena, table.starts, table.count)


def _longer(lengths: np.ndarray, chunk: bytes, have: int) -> np.ndarray:
    more = np.empty(max(chunk.count(b"\n") + 1, 2 * len(lengths)), dtype=np.int64)
    more[:have] = lengths[:have]
    return more


def merge(got: Scanned, out: RecordBuilder, table: Interner) -> None:
    """Add a scanned chunk's records to `out` with the shared table's ids (in input order)."""
    kernel = table.kernel
    table.sync()
    before = table.count
    lut = np.empty(got.count, dtype=np.int32)
    done = 0
    while done < got.count:
        table.grow(got.count - done, int(got.starts[got.count] - got.starts[done]))
        done = kernel.intern_each(
            got.arena, got.starts, done, got.count, *table.tables(), table.open, lut
        )
    table.publish(before)
    hint = out.size_hint or 0
    dest = out.reserve(got.n_ids + 1, hint // 2 + 2)
    lengths = got.lengths
    n_ids = kernel.renumber(got.ids, lengths, len(lengths), lut, dest)
    out.commit(int(n_ids), lengths)


def read(
    pieces: Iterable[tuple[bytes, int]],
    kernel_call: KernelCall,
    sep: str,
    out: RecordBuilder,
    fallback: Callable[[bytes, int], None],
    see: Callable[[bytes, int], None] | None = None,
) -> bool:
    """Read every chunk of `pieces` into `out`: tokenised by WORKERS threads, merged in order;
    a chunk given back goes to fallback(chunk, first_line) in its turn. False (nothing read)
    when numba cannot be imported: the caller reads sequentially then."""
    table = interner(out)  # imports the kernels in this thread, before any worker needs them
    if table is None:
        return False
    pending: deque[tuple[bytes, int, Future[Scanned | None]]] = deque()

    def merge_next() -> None:
        chunk, first, future = pending.popleft()
        got = future.result()  # a worker's exception is raised here, in input order
        if got is None:
            fallback(chunk, first)
        else:
            merge(got, out, table)
            out.took("compiled")

    with ThreadPoolExecutor(WORKERS, thread_name_prefix="dpfim-scan") as pool:
        try:
            for chunk, first in pieces:
                if see is not None:
                    see(chunk, first)
                pending.append((chunk, first, pool.submit(scan, chunk, sep, kernel_call)))
                while len(pending) > WORKERS + AHEAD:
                    merge_next()
            while pending:
                merge_next()
        finally:
            for *_, future in pending:
                future.cancel()
    return True
