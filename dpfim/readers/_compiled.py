"""The compiled FIMI tokeniser (numba): one pass over a chunk of bytes straight to sorted,
deduplicated item ids. Imported lazily (numba costs ~0.5 s to import) and only for big inputs;
see dpfim/readers/fimi.py for the policy and the Python side (vocabulary sync, fallbacks).

`tokenize` accepts exactly what the line parser accepts and reads it the same way, or gives up
on the whole chunk (it never guesses): bytes are digits, spaces, tabs, `\\n`, and `\\r` only
right before a `\\n` or as the very last byte of the input; `\\n` ends a record; a record's items
are its runs of digits. A token maps to an id through `lut` only when it is canonical (no
leading zero, so its string is `str(value)`) and its value fits; otherwise the chunk goes back
to the general path. Each record's ids are sorted and deduplicated as it ends.
"""

from __future__ import annotations

import numpy as np
from numba import njit

OK = 0
BAD_BYTE = 1  # a byte the format does not allow (or a lone \r): the line parser names the line
NOT_CANONICAL = 2  # a token with a leading zero or too long: the general path reads the chunk
TOO_BIG = 3  # a canonical value past the table: grow the table and try again
FULL = 4  # more records than `lengths` holds: give a longer one and try again
UNSEEN = -2  # lut entry of a value not in the (open) vocabulary yet
_MAX_DIGITS = 9  # values < 10^9 fit in int64 arithmetic and in the table's index range
_INSERTION_UP_TO = 24


@njit(cache=True, nogil=True)
def tokenize(
    raw: np.ndarray,
    lut: np.ndarray,
    next_id: int,
    open_vocab: bool,
    ids: np.ndarray,
    lengths: np.ndarray,
    new_values: np.ndarray,
) -> tuple[int, int, int, int, int]:
    """(status, number of ids, number of records, number of new values, detail).

    ids/lengths receive the records (CSR without indptr); values first seen here get ids
    next_id, next_id + 1, ... in order of first appearance, are written to lut and listed in
    new_values. On a status other than OK the caller must undo the new lut entries
    (new_values[:number of new values]); detail is the byte position (BAD_BYTE,
    NOT_CANONICAL) or the value (TOO_BIG).
    """
    n = raw.shape[0]
    cap = lut.shape[0]
    n_ids = 0
    n_rec = 0
    n_new = 0
    start = 0
    i = 0
    while i < n:
        c = raw[i]
        if 48 <= c <= 57:
            j = i
            value = 0
            while j < n and 48 <= raw[j] <= 57:
                if j - i < _MAX_DIGITS:
                    value = value * 10 + (raw[j] - 48)
                j += 1
            width = j - i
            if (c == 48 and width > 1) or width > _MAX_DIGITS:
                if open_vocab or c == 48:
                    return NOT_CANONICAL, n_ids, n_rec, n_new, i
                i = j  # a declared vocabulary: a canonical value past the table is not in it
                continue
            if value >= cap:
                if open_vocab:
                    return TOO_BIG, n_ids, n_rec, n_new, value
                i = j
                continue
            got = lut[value]
            if got == UNSEEN:
                got = next_id + n_new
                lut[value] = got
                new_values[n_new] = value
                n_new += 1
            if got >= 0:
                ids[n_ids] = got
                n_ids += 1
            i = j
            continue
        if c == 10:
            if n_rec == lengths.shape[0]:
                return FULL, n_ids, n_rec, n_new, i
            n_ids = _finish(ids, start, n_ids)
            lengths[n_rec] = n_ids - start
            n_rec += 1
            start = n_ids
        elif c == 13:
            if i + 1 < n and raw[i + 1] != 10:
                return BAD_BYTE, n_ids, n_rec, n_new, i
        elif c != 32 and c != 9:
            return BAD_BYTE, n_ids, n_rec, n_new, i
        i += 1
    if n > 0 and raw[n - 1] != 10:  # a last line without a newline is a record too
        if n_rec == lengths.shape[0]:
            return FULL, n_ids, n_rec, n_new, n
        n_ids = _finish(ids, start, n_ids)
        lengths[n_rec] = n_ids - start
        n_rec += 1
    return OK, n_ids, n_rec, n_new, 0


@njit(cache=True, nogil=True)
def _finish(ids: np.ndarray, start: int, stop: int) -> int:
    """Sort ids[start:stop] and drop duplicates in place; the new stop."""
    m = stop - start
    if m < 2:
        return stop
    if m <= _INSERTION_UP_TO:
        for k in range(start + 1, stop):
            x = ids[k]
            p = k - 1
            while p >= start and ids[p] > x:
                ids[p + 1] = ids[p]
                p -= 1
            ids[p + 1] = x
    else:
        ids[start:stop].sort()
    w = start + 1
    for k in range(start + 1, stop):
        if ids[k] != ids[w - 1]:
            ids[w] = ids[k]
            w += 1
    return w


@njit(cache=True, nogil=True)
def group(records: np.ndarray, items: np.ndarray, n_records: int) -> tuple[np.ndarray, np.ndarray]:
    """Long format: rows (record number, item id; -1: dropped) -> (indices, lengths) of the
    records 0..n_records-1, each sorted and deduplicated (a counting sort by record)."""
    starts = np.zeros(n_records + 1, dtype=np.int64)
    for k in range(records.shape[0]):
        if items[k] >= 0:
            starts[records[k] + 1] += 1
    for r in range(n_records):
        starts[r + 1] += starts[r]
    out = np.empty(starts[n_records], dtype=np.int32)
    at = starts[:n_records].copy()
    for k in range(records.shape[0]):
        if items[k] >= 0:
            r = records[k]
            out[at[r]] = items[k]
            at[r] += 1
    lengths = np.empty(n_records, dtype=np.int64)
    w = 0
    for r in range(n_records):
        stop = _finish(out, starts[r], starts[r + 1])
        m = stop - starts[r]
        if w != starts[r]:
            for k in range(m):
                out[w + k] = out[starts[r] + k]
        w += m
        lengths[r] = m
    return out[:w], lengths
