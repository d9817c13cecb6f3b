"""Compiled (numba) inner loops of the local engine, for large inputs only.

Imported lazily by dpfim.engines.local when the records hold at least COMPILED_MIN occurrences
and numba imports; small inputs never pay numba's import (~0.5 s). Both kernels are exact and
allocate nothing but one record's buffer: they fuse the numpy path's projection and candidate
generation into one loop per record. cache=True keeps the machine code in __pycache__ beside this
file or, where that is read-only, in numba's user-wide cache directory.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numba import njit


@njit(cache=True, nogil=True)
def project(
    indptr: Any, indices: Any, remap: Any, r0: int, r1: int, k: int, out_cols: Any, out_lens: Any
) -> tuple[int, int]:  # pragma: no cover - compiled
    """Rows r0..r1-1 restricted to remap >= 0 (local ids), rows with >= k of them kept:
    writes cols and row lengths, returns (number of cols, number of rows)."""
    n = 0
    rows = 0
    for row in range(r0, r1):
        start = n
        for e in range(indptr[row], indptr[row + 1]):
            local = remap[indices[e]]
            if local >= 0:
                out_cols[n] = local
                n += 1
        if n - start >= k:
            out_lens[rows] = n - start
            rows += 1
        else:
            n = start
    return n, rows


@njit(cache=True, nogil=True)
def count_dense(
    indptr: Any,
    indices: Any,
    remap: Any,
    r0: int,
    r1: int,
    k: int,
    width: int,
    tables: Any,
    offsets: Any,
    out: Any,
    sort: bool = False,
) -> None:  # pragma: no cover - compiled
    """Add to out[key] one for every k-itemset candidate of rows r0..r1-1: a key is
    (id of its frequent (k-1)-prefix) * width + last item; prefixes are extended one item at a
    time through the dense level tables (tables[offsets[j] + key] = id of a frequent j-itemset,
    or -1) and, from the third item on, only when the last two items form a frequent pair.
    sort: remap is not increasing (the Spark engine's block-local ids), so each record's mapped
    items are sorted first; the local engine's are ascending already."""
    buf = np.empty(64, np.int64)
    idx = np.empty(k + 1, np.int64)
    ids = np.empty(k + 1, np.int64)
    for row in range(r0, r1):
        a = indptr[row]
        b = indptr[row + 1]
        if b - a > buf.shape[0]:
            buf = np.empty(b - a, np.int64)
        m = 0
        for e in range(a, b):
            local = remap[indices[e]]
            if local >= 0:
                buf[m] = local
                m += 1
        if m < k:
            continue
        if sort and m > 24:
            buf[:m].sort()
        elif sort:
            for p in range(1, m):  # insertion sort: records are mostly short
                x = buf[p]
                q = p - 1
                while q >= 0 and buf[q] > x:
                    buf[q + 1] = buf[q]
                    q -= 1
                buf[q + 1] = x
        d = 0
        idx[0] = -1
        while d >= 0:
            idx[d] += 1
            e = idx[d]
            if e > m - (k - d):
                d -= 1
                continue
            item = buf[e]
            if d == 0:
                cur = item
            else:
                if d >= 2 and tables[offsets[2] + buf[idx[d - 1]] * width + item] < 0:
                    continue
                key = ids[d - 1] * width + item
                if d == k - 1:
                    out[key] += 1
                    continue
                cur = tables[offsets[d + 1] + key]
                if cur < 0:
                    continue
            ids[d] = cur
            d += 1
            idx[d] = e
