"""The compiled tokenisers (numba): one pass over a chunk of bytes straight to sorted,
deduplicated item ids. Imported lazily (numba costs ~0.5 s to import) and only for big inputs;
see dpfim/readers/fimi.py for the policy and dpfim/readers/interner.py for the Python side (the
item table over the Vocabulary's packed names).

Items map to ids through an open-addressing hash table over their bytes (`intern`): an item
is its byte string, whatever it spells ("007" and "7" are two items, an id of any size is an
item), ids are numbered in order of first appearance. A tokeniser accepts exactly what the line
parser accepts and reads it the same way, or gives up on the whole chunk (it never guesses):
the line parser then reads it and names the bad line. Each record's ids are sorted and
deduplicated as it ends.
"""

from __future__ import annotations

import numpy as np
from numba import njit

OK = 0
BAD_BYTE = 1  # a byte the format does not allow (or a lone \r): the line parser names the line
FULL = 4  # more records than `lengths` holds: give a longer one and go on from `detail`
ROOM = 5  # the item table needs more room: grow it (Interner.grow) and go on from `detail`
_INSERTION_UP_TO = 24
UNSEEN = -3  # a `lut` entry not filled yet
_INLINE = 16  # bytes of an item kept in its table slot: shorter items compare there alone
_MIX1 = np.uint64(0x9E3779B97F4A7C15)
_MIX2 = np.uint64(0xBF58476D1CE4E5B9)
_MIX3 = np.uint64(0x94D049BB133111EB)
_FNV_OFFSET = np.uint64(0xCBF29CE484222325)
_FNV_PRIME = np.uint64(0x100000001B3)
MAX_LOAD_NUM, MAX_LOAD_DEN = 3, 4  # at most 3/4 of the slots used
# _INLINE_NOTE: the helpers called once per item or per record are inlined into the kernels
# (numba's inline="always"): a call to a compiled function that takes arrays costs their
# reference counts and a struct per array each time, ~20 ns per item in the basket kernel
# (85 -> 60 ns an item on SKU/EAN-13 baskets).


@njit(cache=True, nogil=True, inline="always")  # see _INLINE_NOTE
def span_key(raw: np.ndarray, s: int, e: int) -> tuple[np.uint64, np.uint64, np.uint64]:
    """(hash, w0, w1) of the item raw[s:e]: w0, w1 are its first 16 bytes, little-endian, padded
    with 0xFF (a byte no UTF-8 text has), so for items of up to 16 bytes (w0, w1, length) is
    the item itself; the hash mixes them (and, past 16 bytes, every byte)."""
    width = e - s
    w0 = np.uint64(0)
    w1 = np.uint64(0)
    m0 = min(width, 8)
    for k in range(m0):
        w0 |= np.uint64(raw[s + k]) << np.uint64(8 * k)
    if m0 < 8:
        w0 |= np.uint64(0xFFFFFFFFFFFFFFFF) << np.uint64(8 * m0)
    m1 = min(width, 16) - 8
    for k in range(max(m1, 0)):
        w1 |= np.uint64(raw[s + 8 + k]) << np.uint64(8 * k)
    if m1 < 8:
        w1 = w1 | (np.uint64(0xFFFFFFFFFFFFFFFF) << np.uint64(8 * max(m1, 0)))
    z = w0 ^ (w1 * _MIX1) ^ np.uint64(width)
    if width > _INLINE:
        f = _FNV_OFFSET
        for k in range(s + _INLINE, e):
            f = (f ^ np.uint64(raw[k])) * _FNV_PRIME
        z ^= f * _MIX2
    z = (z ^ (z >> np.uint64(30))) * _MIX2
    z = (z ^ (z >> np.uint64(27))) * _MIX3
    return z ^ (z >> np.uint64(31)), w0, w1


@njit(cache=True, nogil=True, inline="always")  # see _INLINE_NOTE
def intern(
    raw: np.ndarray,
    s: int,
    e: int,
    slots: np.ndarray,
    arena: np.ndarray,
    starts: np.ndarray,
    state: np.ndarray,
    open_vocab: bool,
) -> int:
    """The id of the item whose bytes are raw[s:e]: found in the table, or (open vocabulary)
    numbered next and stored; -1 when a declared vocabulary lacks it; -2 when the table has no
    room for a new item (nothing was changed).

    The table: `slots`, (2^k, 4) uint64, open addressing with linear probing; a slot holds the
    item's hash, id + 1 (0: empty) | length << 32, and its first 16 bytes (span_key). Item k's
    bytes are arena[starts[k]:starts[k + 1]], the Vocabulary's ItemStore (longer items are
    compared there; the names are held there only). state[0] is the number of items, state[1] the
    arena bytes used."""
    h, w0, w1 = span_key(raw, s, e)
    mask = slots.shape[0] - 1
    at = np.int64(h & np.uint64(mask))
    width = e - s
    tag = np.uint64(width) << np.uint64(32)
    while True:
        meta = slots[at, 1]
        if meta == 0:
            break
        if (
            slots[at, 0] == h
            and (meta & np.uint64(0xFFFFFFFF00000000)) == tag
            and slots[at, 2] == w0
            and slots[at, 3] == w1
        ):
            got = int(meta & np.uint64(0xFFFFFFFF)) - 1
            if width <= _INLINE:
                return got
            base = starts[got]
            same = True
            for k in range(_INLINE, width):
                if arena[base + k] != raw[s + k]:
                    same = False
                    break
            if same:
                return got
        at = (at + 1) & mask
    if not open_vocab:
        return -1
    n = state[0]
    used = state[1]
    full = MAX_LOAD_DEN * (n + 1) > MAX_LOAD_NUM * slots.shape[0]
    if full or used + width > arena.shape[0] or n + 2 > starts.shape[0]:
        return -2
    for k in range(width):
        arena[used + k] = raw[s + k]
    starts[n + 1] = used + width
    slots[at, 0] = h
    slots[at, 1] = tag | np.uint64(n + 1)
    slots[at, 2] = w0
    slots[at, 3] = w1
    state[0] = n + 1
    state[1] = used + width
    return int(n)


@njit(cache=True, nogil=True)
def _intern_rarely(
    raw: np.ndarray,
    s: int,
    e: int,
    slots: np.ndarray,
    arena: np.ndarray,
    starts: np.ndarray,
    state: np.ndarray,
    open_vocab: bool,
) -> int:
    """`intern`, not inlined: for FIMI's tokeniser, which asks it only on a cache miss (inlined
    there, it slows the common path down by ~8 %)."""
    return intern(raw, s, e, slots, arena, starts, state, open_vocab)


@njit(cache=True, nogil=True)
def rehash(old: np.ndarray, new: np.ndarray, below: int) -> None:
    """Copy the slots of the items with id < below from the table `old` into the empty `new`
    (to grow it, or to forget the later items)."""
    mask = new.shape[0] - 1
    for k in range(old.shape[0]):
        meta = old[k, 1]
        if meta == 0 or np.int64(meta & np.uint64(0xFFFFFFFF)) > below:
            continue
        at = np.int64(old[k, 0] & np.uint64(mask))
        while new[at, 1] != 0:
            at = (at + 1) & mask
        for c in range(4):
            new[at, c] = old[k, c]


@njit(cache=True, nogil=True)
def insert_stored(
    slots: np.ndarray, arena: np.ndarray, starts: np.ndarray, lo: int, hi: int
) -> None:
    """Enter the stored items lo..hi-1 (distinct, absent from the table; it has room) in the
    table, as `intern` would have."""
    mask = slots.shape[0] - 1
    for k in range(lo, hi):
        s = starts[k]
        e = starts[k + 1]
        h, w0, w1 = span_key(arena, s, e)
        at = np.int64(h & np.uint64(mask))
        while slots[at, 1] != 0:
            at = (at + 1) & mask
        slots[at, 0] = h
        slots[at, 1] = (np.uint64(e - s) << np.uint64(32)) | np.uint64(k + 1)
        slots[at, 2] = w0
        slots[at, 3] = w1


@njit(cache=True, nogil=True)
def intern_record(
    raw: np.ndarray,
    bounds: np.ndarray,
    slots: np.ndarray,
    arena: np.ndarray,
    starts: np.ndarray,
    state: np.ndarray,
    open_vocab: bool,
    ids: np.ndarray,
    start: int,
) -> int:
    """One record whose items (raw[bounds[k]:bounds[k + 1]], empty ones skipped) a line
    parser gave: their ids into ids[start:], sorted, without duplicates; the new end, or -1
    when the table has no room (grow it and call again: the items stored so far keep their
    ids)."""
    n_ids = start
    for k in range(bounds.shape[0] - 1):
        if bounds[k + 1] > bounds[k]:
            got = intern(raw, bounds[k], bounds[k + 1], slots, arena, starts, state, open_vocab)
            if got == -2:
                return -1
            if got >= 0:
                ids[n_ids] = got
                n_ids += 1
    return _finish(ids, start, n_ids)


@njit(cache=True, nogil=True)
def tokenize(
    raw: np.ndarray,
    pos: int,
    n_ids: int,
    n_rec: int,
    slots: np.ndarray,
    arena: np.ndarray,
    starts: np.ndarray,
    state: np.ndarray,
    open_vocab: bool,
    lut: np.ndarray,
    ids: np.ndarray,
    lengths: np.ndarray,
    resume: np.ndarray,
) -> tuple[int, int, int, int]:
    """FIMI: (status, number of ids, number of records, detail), reading raw from byte `pos`
    (a line start) with n_ids ids and n_rec records already written.

    resume (int64[3]): on ROOM the kernel notes there (line start, byte, ids end) where it
    stopped inside the line, its ids so far left in place; called again at that line start with
    the same n_ids it goes on from that byte instead of reading the line again (a long line
    would otherwise be re-read once per growth of the table: quadratic-ish in its length).

    Bytes are digits, spaces, tabs, `\\n`, and `\\r` only right before a `\\n` or as the very
    last byte; `\\n` ends a record; a record's items are its runs of digits, as bytes (so "007"
    and "7" are different items, and a value of any size is an item). Items first seen here
    are numbered next, in order of first appearance. ids/lengths receive the records (CSR
    without indptr), each sorted and deduplicated. On FULL and ROOM, detail is the byte where
    the unfinished line starts, and the ids and records before it are kept: grow and call
    again from there. On BAD_BYTE detail is the byte's position.
    """
    n = raw.shape[0]
    start = n_ids
    line = pos
    i = pos
    if resume[0] == pos and resume[1] > pos and resume[2] >= n_ids:
        i, n_ids = resume[1], resume[2]  # the ids of raw[pos:i] are there already
    resume[0] = -1
    while i < n:
        c = raw[i]
        if 48 <= c <= 57:
            j = i + 1
            value = np.int64(c - 48)
            while j < n and 48 <= raw[j] <= 57:
                if j - i < 9:
                    value = value * 10 + (raw[j] - 48)
                j += 1
            # canonical small values ("7", not "007") go through `lut` first, a direct cache
            # of the table's answers (UNSEEN: not asked yet)
            small = (c != 48 or j - i == 1) and j - i <= 9 and value < lut.shape[0]
            got = lut[value] if small else UNSEEN
            if got == UNSEEN:
                got = _intern_rarely(raw, i, j, slots, arena, starts, state, open_vocab)
                if got == -2:
                    resume[0], resume[1], resume[2] = line, i, n_ids
                    return ROOM, start, n_rec, line
                if small:
                    lut[value] = got
            if got >= 0:
                ids[n_ids] = got
                n_ids += 1
            i = j
            continue
        if c == 10:
            if n_rec == lengths.shape[0]:
                return FULL, start, n_rec, line
            n_ids = _finish(ids, start, n_ids)
            lengths[n_rec] = n_ids - start
            n_rec += 1
            start = n_ids
            line = i + 1
        elif c == 13:
            if i + 1 < n and raw[i + 1] != 10:
                return BAD_BYTE, n_ids, n_rec, i
        elif c != 32 and c != 9:
            return BAD_BYTE, n_ids, n_rec, i
        i += 1
    if n > line:  # a last line without a newline is a record too
        if n_rec == lengths.shape[0]:
            return FULL, start, n_rec, line
        n_ids = _finish(ids, start, n_ids)
        lengths[n_rec] = n_ids - start
        n_rec += 1
    return OK, n_ids, n_rec, 0


@njit(cache=True, nogil=True, inline="always")  # see _INLINE_NOTE
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


ODD = 6  # a line the line parser reads (a doubled quote, a field past csv's size limit)
NUMBER = 7  # JSON lines: a number the number table does not spell yet (go on from `detail`)
_QUOTE = 34
_SEP, _LF, _CR, _NUL, _QUOTED = 1, 2, 3, 4, 5  # byte kinds in tokenize_csv


@njit(cache=True, nogil=True)
def _space_at_start(raw: np.ndarray, s: int, e: int) -> int:
    """The byte length of the str.isspace() character starting raw[s:e], or 0."""
    c = raw[s]
    if c == 32 or 9 <= c <= 13 or 28 <= c <= 31:
        return 1
    if c == 0xC2 and s + 1 < e and (raw[s + 1] == 0x85 or raw[s + 1] == 0xA0):
        return 2
    if s + 2 < e:
        c1 = raw[s + 1]
        c2 = raw[s + 2]
        if c == 0xE1 and c1 == 0x9A and c2 == 0x80:
            return 3
        if c == 0xE2 and c1 == 0x80 and (c2 <= 0x8A or c2 == 0xA8 or c2 == 0xA9 or c2 == 0xAF):
            return 3  # U+2000..U+200A (c2 >= 0x80: a continuation byte), U+2028/9, U+202F
        if c == 0xE2 and c1 == 0x81 and c2 == 0x9F:
            return 3
        if c == 0xE3 and c1 == 0x80 and c2 == 0x80:
            return 3
    return 0


@njit(cache=True, nogil=True)
def _space_at_end(raw: np.ndarray, s: int, e: int) -> int:
    """The byte length of the str.isspace() character ending raw[s:e], or 0 (valid UTF-8:
    a character's lead byte is found by its position alone)."""
    c = raw[e - 1]
    if c < 0x80:
        return 1 if (c == 32 or 9 <= c <= 13 or 28 <= c <= 31) else 0
    if e - 2 >= s and raw[e - 2] == 0xC2:
        return 2 if (c == 0x85 or c == 0xA0) else 0
    if e - 3 >= s and raw[e - 3] >= 0xE0:
        return 3 if _space_at_start(raw, e - 3, e) == 3 else 0
    return 0


@njit(cache=True, nogil=True, inline="always")  # see _INLINE_NOTE
def trim(raw: np.ndarray, s: int, e: int) -> tuple[int, int]:
    """raw[s:e] without the characters str.strip() drops at either end."""
    if s < e and 32 < raw[s] < 128 and 32 < raw[e - 1] < 128:
        return s, e  # the common case: no space of any kind at either end
    while s < e:
        k = _space_at_start(raw, s, e)
        if k == 0:
            break
        s += k
    while e > s:
        k = _space_at_end(raw, s, e)
        if k == 0:
            break
        e -= k
    return s, e


@njit(cache=True, nogil=True)
def _chars(raw: np.ndarray, s: int, e: int) -> int:
    count = 0
    for k in range(s, e):
        if raw[k] & 0xC0 != 0x80:
            count += 1
    return count


@njit(cache=True, nogil=True)
def tokenize_csv(
    raw: np.ndarray,
    pos: int,
    n_ids: int,
    n_rec: int,
    slots: np.ndarray,
    arena: np.ndarray,
    starts: np.ndarray,
    state: np.ndarray,
    open_vocab: bool,
    sep: int,
    limit: int,
    ids: np.ndarray,
    lengths: np.ndarray,
    resume: np.ndarray,
) -> tuple[int, int, int, int]:
    """Basket lines (valid UTF-8, an ASCII separator `sep`): as `tokenize`, with basket.py's
    line parser's fields, each trimmed as str.strip() trims, empty ones no item.

    A line's fields are what the csv module (strict, its default dialect) reads: a field that
    starts with `"` is quoted up to the next `"`, which must end the line or be followed by
    `sep`; a `"` elsewhere is an ordinary character; a quote-free line is `line.split(sep)`.
    `\\r` only right before `\\n` or last (dropped); NUL is an error. Errors (BAD_BYTE: an
    unterminated quote, a character after a closing quote, a lone `\\r`, NUL) and lines the line
    parser reads another way (ODD: a doubled quote inside quotes, which is no byte span of the
    input; a field of `limit` characters or more on a line with a quote, csv's size limit)
    give the chunk back. resume (int64[4]): as in `tokenize` (line start, the field's byte, ids
    end, the line's flags so far), so a long line is not read again when the table grows.
    """
    n = raw.shape[0]
    kind = np.zeros(256, dtype=np.uint8)  # 0: an ordinary byte
    kind[sep] = _SEP
    kind[10] = _LF
    kind[13] = _CR
    kind[0] = _NUL
    kind[_QUOTE] = _QUOTED
    start = n_ids
    line = pos
    i = pos
    quoted = False
    big = False
    if resume[0] == pos and resume[1] > pos and resume[2] >= n_ids:
        i, n_ids = resume[1], resume[2]  # the fields of raw[pos:i] are read already
        quoted, big = (resume[3] & 1) != 0, (resume[3] & 2) != 0
    resume[0] = -1
    while line < n:
        # i: the start of a field
        if i < n and raw[i] == _QUOTE:
            quoted = True
            j = i + 1
            while j < n and raw[j] != _QUOTE and raw[j] != 10:
                j += 1
            if j >= n or raw[j] == 10:
                return BAD_BYTE, n_ids, n_rec, i  # unexpected end of data
            fs = i + 1
            fe = j
            k = j + 1  # after the closing quote: sep, \n, \r\n or the end
            if k < n and raw[k] == _QUOTE:
                return ODD, n_ids, n_rec, j
            if k < n and kind[raw[k]] == _CR:
                if not (k + 1 == n or raw[k + 1] == 10):
                    return BAD_BYTE, n_ids, n_rec, k
                k += 1
            elif k < n and kind[raw[k]] != _SEP and kind[raw[k]] != _LF:
                return BAD_BYTE, n_ids, n_rec, k  # sep expected after the closing quote
            for q in range(fs, fe):
                if raw[q] == 0 or raw[q] == 13:
                    return BAD_BYTE, n_ids, n_rec, q
        else:
            j = i
            while j < n:
                t = kind[raw[j]]
                if t == 0:
                    j += 1
                elif t == _QUOTED:
                    quoted = True
                    j += 1
                else:
                    break
            fs = i
            fe = j
            k = j
            if k < n:
                t = kind[raw[k]]
                if t == _NUL:
                    return BAD_BYTE, n_ids, n_rec, k
                if t == _CR:
                    if not (k + 1 == n or raw[k + 1] == 10):
                        return BAD_BYTE, n_ids, n_rec, k
                    k += 1
        if fe - fs >= limit and _chars(raw, fs, fe) >= limit:
            big = True
        s, e = trim(raw, fs, fe)
        if e > s:
            got = intern(raw, s, e, slots, arena, starts, state, open_vocab)
            if got == -2:
                resume[0], resume[1], resume[2] = line, i, n_ids
                resume[3] = (1 if quoted else 0) | (2 if big else 0)
                return ROOM, start, n_rec, line
            if got >= 0:
                ids[n_ids] = got
                n_ids += 1
        if k < n and raw[k] == sep:
            i = k + 1
            continue
        # the line ends at k (its \n, or the end of the chunk)
        if quoted and big:
            return ODD, n_ids, n_rec, line
        if n_rec == lengths.shape[0]:
            return FULL, start, n_rec, line
        n_ids = _finish(ids, start, n_ids)
        lengths[n_rec] = n_ids - start
        n_rec += 1
        start = n_ids
        line = k + 1
        i = line
        quoted = False
        big = False
    return OK, n_ids, n_rec, 0


@njit(cache=True, nogil=True)
def _hex4(raw: np.ndarray, k: int, e: int) -> int:
    """The value of the four hex digits raw[k:k + 4] (within e), or -1."""
    if k + 4 > e:
        return -1
    v = 0
    for t in range(k, k + 4):
        c = raw[t]
        if 48 <= c <= 57:
            d = c - 48
        elif 97 <= c <= 102:
            d = c - 87
        elif 65 <= c <= 70:
            d = c - 55
        else:
            return -1
        v = v * 16 + d
    return v


@njit(cache=True, nogil=True)
def _unescape(raw: np.ndarray, s: int, e: int, buf: np.ndarray) -> int:
    """The UTF-8 bytes of the JSON string body raw[s:e] (valid UTF-8, no raw control
    characters) into buf, as json.loads decodes it; the length, or -1 for a bad escape or a
    lone surrogate (json.loads accepts one; jsonl.parse_line refuses it: the exact parser says
    so). buf holds at least e - s bytes: an escape never decodes to more bytes than it has."""
    w = 0
    k = s
    while k < e:
        c = raw[k]
        if c != 92:
            buf[w] = c
            w += 1
            k += 1
            continue
        if k + 1 >= e:
            return -1
        c = raw[k + 1]
        k += 2
        if c == 34 or c == 92 or c == 47:  # " \\ /
            buf[w] = c
        elif c == 98:
            buf[w] = 8
        elif c == 102:
            buf[w] = 12
        elif c == 110:
            buf[w] = 10
        elif c == 114:
            buf[w] = 13
        elif c == 116:
            buf[w] = 9
        elif c == 117:  # \\uXXXX; a surrogate pair is two of them
            cp = _hex4(raw, k, e)
            if cp < 0:
                return -1
            k += 4
            if 0xD800 <= cp <= 0xDBFF:
                if k + 6 > e or raw[k] != 92 or raw[k + 1] != 117:
                    return -1
                low = _hex4(raw, k + 2, e)
                if not 0xDC00 <= low <= 0xDFFF:
                    return -1
                k += 6
                cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00)
            elif 0xDC00 <= cp <= 0xDFFF:
                return -1
            if cp < 0x80:
                buf[w] = cp
            elif cp < 0x800:
                buf[w] = 0xC0 | (cp >> 6)
                buf[w + 1] = 0x80 | (cp & 0x3F)
                w += 1
            elif cp < 0x10000:
                buf[w] = 0xE0 | (cp >> 12)
                buf[w + 1] = 0x80 | ((cp >> 6) & 0x3F)
                buf[w + 2] = 0x80 | (cp & 0x3F)
                w += 2
            else:
                buf[w] = 0xF0 | (cp >> 18)
                buf[w + 1] = 0x80 | ((cp >> 12) & 0x3F)
                buf[w + 2] = 0x80 | ((cp >> 6) & 0x3F)
                buf[w + 3] = 0x80 | (cp & 0x3F)
                w += 3
        else:
            return -1
        w += 1
    return w


@njit(cache=True, nogil=True, inline="always")  # see _INLINE_NOTE
def _json_number(raw: np.ndarray, i: int, n: int) -> tuple[int, bool]:
    """The end of the JSON number starting at raw[i] (a "-" or a digit), and whether the exact
    parser spells it as written (a plain integer: not "-0", no fraction, no exponent); (-1,
    False) when no JSON number starts there (a leading zero followed by a digit included)."""
    j = i + 1 if raw[i] == 45 else i
    if j >= n or not (48 <= raw[j] <= 57):
        return -1, False
    plain = True
    if raw[j] == 48:
        j += 1
        plain = raw[i] != 45  # "-0": the exact parser's 0
    else:
        while j < n and 48 <= raw[j] <= 57:
            j += 1
    if j < n and raw[j] == 46:  # a fraction
        j += 1
        if j >= n or not (48 <= raw[j] <= 57):
            return -1, False
        while j < n and 48 <= raw[j] <= 57:
            j += 1
        plain = False
    if j < n and (raw[j] == 101 or raw[j] == 69):  # an exponent
        j += 1
        if j < n and (raw[j] == 43 or raw[j] == 45):
            j += 1
        if j >= n or not (48 <= raw[j] <= 57):
            return -1, False
        while j < n and 48 <= raw[j] <= 57:
            j += 1
        plain = False
    if j < n and 48 <= raw[j] <= 57:
        return -1, False  # a leading zero
    return j, plain


@njit(cache=True, nogil=True)
def number_texts(raw: np.ndarray, pos: int, spans: np.ndarray) -> tuple[int, int]:
    """The JSON numbers that are not plain integers ("-0", a fraction, an exponent) outside
    strings in raw[pos:], as (start, end) rows of spans, up to its length: (rows, where to go on
    from). Each is a JSON number by the scanner's own rule (`_json_number`); a superset of
    those the scanner meets does no harm (the caller only spells them), nor does bad JSON."""
    n = raw.shape[0]
    rows = 0
    i = pos
    in_string = False
    while i < n:
        c = raw[i]
        if in_string:
            if c == 92:
                i += 2
                continue
            if c == 34 or c == 10:
                in_string = False
            i += 1
            continue
        if c == 34:
            in_string = True
            i += 1
            continue
        if not (c == 45 or 48 <= c <= 57):
            i += 1
            continue
        j, plain = _json_number(raw, i, n)
        if j < 0:  # no JSON number starts here: neither does the scanner read one
            i += 1
            continue
        if not plain and j - i <= _MAX_INT_DIGITS:
            if rows == spans.shape[0]:
                return rows, i
            spans[rows, 0] = i
            spans[rows, 1] = j
            rows += 1
        i = j
    return rows, n


@njit(cache=True, nogil=True)
def intern_spans(
    raw: np.ndarray,
    spans: np.ndarray,
    slots: np.ndarray,
    arena: np.ndarray,
    starts: np.ndarray,
    state: np.ndarray,
) -> int:
    """Store each item raw[spans[k, 0]:spans[k, 1]] (numbered next if new); how many rows
    were done before the table ran out of room."""
    for k in range(spans.shape[0]):
        if intern(raw, spans[k, 0], spans[k, 1], slots, arena, starts, state, True) < 0:
            return k
    return int(spans.shape[0])


_MAX_INT_DIGITS = 1000  # longer JSON integers go to the exact parser (Python's int limits)


@njit(cache=True, nogil=True)
def _json_space(raw: np.ndarray, i: int, n: int) -> int:
    """The first position at or after i that is not a space or a tab."""
    while i < n and (raw[i] == 32 or raw[i] == 9):
        i += 1
    return i


@njit(cache=True, nogil=True)
def _line_end(raw: np.ndarray, i: int, n: int) -> int:
    """1 when raw[i] ends a line (\\n, the end, or \\r right before \\n or last), 0 when not,
    -1 for a \\r anywhere else (a data error)."""
    if i >= n or raw[i] == 10:
        return 1
    if raw[i] == 13:
        return 1 if (i + 1 == n or raw[i + 1] == 10) else -1
    return 0


@njit(cache=True, nogil=True)
def tokenize_jsonl(
    raw: np.ndarray,
    pos: int,
    n_ids: int,
    n_rec: int,
    slots: np.ndarray,
    arena: np.ndarray,
    starts: np.ndarray,
    state: np.ndarray,
    open_vocab: bool,
    nslots: np.ndarray,
    narena: np.ndarray,
    nstarts: np.ndarray,
    nstate: np.ndarray,
    spelled: np.ndarray,
    spelled_at: np.ndarray,
    ids: np.ndarray,
    lengths: np.ndarray,
    resume: np.ndarray,
) -> tuple[int, int, int, int]:
    """JSON lines (valid UTF-8), the common case: each line a flat array of strings and
    numbers, spaces and tabs around; as `tokenize` otherwise. A string's item is its text as
    json.loads decodes its escapes (`_unescape`), trimmed as str.strip() trims (empty: no
    item); an integer's is its digits as written (json.dumps(int) gives them back: JSON has no
    leading zeros); any other number ("-0", a fraction, an exponent) is looked up by its text
    in the number table (nslots .. nstate, a table like the item table), and its item is the
    exact parser's spelling of number k, spelled[spelled_at[k]:spelled_at[k + 1]]; a text not
    spelled yet stops the scan at its line with NUMBER (the caller spells the numbers from
    there on, `number_texts`, and goes on from that line). A blank line (str.isspace) is an
    empty record. A line with anything else (a bad escape, a lone surrogate, a control
    character, nesting, a literal, bad JSON) stops the scan at its start with ODD: the caller
    reads that line with the exact parser (jsonl.parse_line; Interner.add_line) and goes on
    from the next, or gives the chunk to it. NUL or a lone \\r: BAD_BYTE (the chunk to the
    exact parser, which names the line). resume (int64[3]): as in `tokenize` (line start, the
    array element's byte, ids end), so a long line is not read again when the table grows.
    """
    n = raw.shape[0]
    start = n_ids
    line = pos
    buf = np.empty(64, dtype=np.uint8)  # a string with escapes, decoded
    inside = -1  # a line resumed inside its array: the element to go on from
    if resume[0] == pos and resume[1] > pos and resume[2] >= n_ids:
        inside, n_ids = resume[1], resume[2]
    resume[0] = -1
    while line < n:
        bracket = False  # the line is an array: what follows its "]" is checked below
        elements = False  # ... and it has elements to read
        if inside >= 0:
            i = inside
            inside = -1
            bracket = elements = True
        else:
            i = _json_space(raw, line, n)
            end = _line_end(raw, i, n)
            if end < 0:
                return BAD_BYTE, n_ids, n_rec, i
            if end == 0 and raw[i] != 91:  # not "[": blank (str.isspace) or the exact parser's
                j = i
                while j < n and raw[j] != 10:
                    if raw[j] == 0 or (raw[j] == 13 and _line_end(raw, j, n) < 0):
                        return BAD_BYTE, n_ids, n_rec, j
                    j += 1
                stop = j - 1 if raw[j - 1] == 13 else j
                s, e = trim(raw, i, stop)
                if e > s:
                    return ODD, start, n_rec, line
                i = j
            elif end == 0:
                bracket = True
                i = _json_space(raw, i + 1, n)
                if i < n and raw[i] == 93:  # "]"
                    i += 1
                else:
                    elements = True
            elif i < n and raw[i] == 13:
                i += 1
        if elements:
            while True:
                if i >= n:
                    return ODD, start, n_rec, line
                el = i  # where this element starts (ROOM goes on from here)
                c = raw[i]
                if c == 34:  # a string
                    j = i + 1
                    escaped = False
                    while j < n and raw[j] != 34:
                        if raw[j] < 32:  # a control character
                            return ODD, start, n_rec, line
                        if raw[j] == 92:  # an escape: the character after it is its own
                            if j + 1 >= n or raw[j + 1] < 32:
                                return ODD, start, n_rec, line
                            escaped = True
                            j += 1
                        j += 1
                    if j >= n:
                        return ODD, start, n_rec, line
                    if escaped:
                        if buf.shape[0] < j - i:
                            buf = np.empty(2 * (j - i), dtype=np.uint8)
                        m = _unescape(raw, i + 1, j, buf)
                        if m < 0:  # a bad escape, a lone surrogate: the exact parser's
                            return ODD, start, n_rec, line
                        s, e = trim(buf, 0, m)
                        got = (
                            -3
                            if e <= s
                            else intern(buf, s, e, slots, arena, starts, state, open_vocab)
                        )
                    else:
                        s, e = trim(raw, i + 1, j)
                        got = -3
                    i = j + 1
                    if got != -3:
                        if got == -2:
                            resume[0], resume[1], resume[2] = line, el, n_ids
                            return ROOM, start, n_rec, line
                        if got >= 0:
                            ids[n_ids] = got
                            n_ids += 1
                        s = e = 0  # interned already
                elif c == 45 or 48 <= c <= 57:  # a number
                    j, plain = _json_number(raw, i, n)
                    if j < 0:
                        return ODD, start, n_rec, line
                    if j - i > _MAX_INT_DIGITS:
                        return ODD, start, n_rec, line
                    if plain:
                        s = i
                        e = j
                    else:
                        k = intern(raw, i, j, nslots, narena, nstarts, nstate, False)
                        if k < 0 or k + 1 >= spelled_at.shape[0]:
                            return NUMBER, start, n_rec, line
                        got = intern(
                            spelled,
                            spelled_at[k],
                            spelled_at[k + 1],
                            slots,
                            arena,
                            starts,
                            state,
                            open_vocab,
                        )
                        if got == -2:
                            resume[0], resume[1], resume[2] = line, el, n_ids
                            return ROOM, start, n_rec, line
                        if got >= 0:
                            ids[n_ids] = got
                            n_ids += 1
                        s = e = 0
                    i = j
                else:
                    return ODD, start, n_rec, line
                if e > s:
                    got = intern(raw, s, e, slots, arena, starts, state, open_vocab)
                    if got == -2:
                        resume[0], resume[1], resume[2] = line, el, n_ids
                        return ROOM, start, n_rec, line
                    if got >= 0:
                        ids[n_ids] = got
                        n_ids += 1
                i = _json_space(raw, i, n)
                if i < n and raw[i] == 44:  # ","
                    i = _json_space(raw, i + 1, n)
                    continue
                if i < n and raw[i] == 93:
                    i += 1
                    break
                return ODD, start, n_rec, line
        if bracket:
            i = _json_space(raw, i, n)
            end = _line_end(raw, i, n)
            if end < 0:
                return BAD_BYTE, n_ids, n_rec, i
            if end == 0:
                return ODD, start, n_rec, line
            if i < n and raw[i] == 13:
                i += 1
        # i: the line's \n, or n
        if n_rec == lengths.shape[0]:
            return FULL, start, n_rec, line
        n_ids = _finish(ids, start, n_ids)
        lengths[n_rec] = n_ids - start
        n_rec += 1
        start = n_ids
        line = i + 1
    return OK, n_ids, n_rec, 0


# The pipelined readers (dpfim/readers/pipeline.py): a chunk is tokenised by one of the kernels
# above into a table of its own (local ids, in order of first appearance within the chunk, on
# any thread), then merged in input order: its items, in their local order, are looked up in
# (or added to) the shared table, and its records are renumbered and sorted again.


@njit(cache=True, nogil=True)
def intern_each(
    local_arena: np.ndarray,
    local_starts: np.ndarray,
    done: int,
    count: int,
    slots: np.ndarray,
    arena: np.ndarray,
    starts: np.ndarray,
    state: np.ndarray,
    open_vocab: bool,
    lut: np.ndarray,
) -> int:
    """lut[k] = the shared id (-1: not in a declared vocabulary) of a chunk's local item k, for
    k from `done` on, in order (new items are numbered in this order); how far it got before the
    shared table ran out of room (count: all)."""
    for k in range(done, count):
        got = intern(
            local_arena,
            local_starts[k],
            local_starts[k + 1],
            slots,
            arena,
            starts,
            state,
            open_vocab,
        )
        if got == -2:
            return k
        lut[k] = got
    return count


@njit(cache=True, nogil=True)
def renumber(
    ids: np.ndarray, lengths: np.ndarray, n_rec: int, lut: np.ndarray, out: np.ndarray
) -> int:
    """Records given as local ids (ids, lengths[:n_rec]) -> shared ids lut[id] in `out`, each
    record sorted and deduplicated again, dropped items (-1) left out; lengths are updated in
    place; the number of ids written."""
    r = 0
    w = 0
    for k in range(n_rec):
        start = w
        for j in range(r, r + lengths[k]):
            got = lut[ids[j]]
            if got >= 0:
                out[w] = got
                w += 1
        r += lengths[k]
        w = _finish(out, start, w)
        lengths[k] = w - start
    return w
