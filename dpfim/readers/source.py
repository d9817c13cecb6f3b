"""Where the bytes come from, and how they become lines — one rule for every format.

* A path or "-" (stdin). Compression is decided from public information only: a path's
  extension (`.gz`, `.bz2`, `.xz`) or `--compression`; stdin is read as it is unless
  `--compression` says otherwise. Never by the content: a first record that is itself a valid
  bz2/xz stream once replaced the whole data set when stdin's magic bytes decided.
* A compressed input must be whole: every concatenated stream is read, and anything after the
  last one (or a stream cut short) is a data error — Python's bz2/xz file readers silently drop
  trailing bytes.
* The decompressed bytes are read in chunks of whole lines (bounded memory).
* Lines end at `\n` and nowhere else. One `\r` right before a `\n` (or at the very end of the
  input) is dropped, so CRLF files read as LF files; a `\r` anywhere else is a data error naming
  its line. A UTF-8 byte-order mark at the very start of the input is dropped.
"""

from __future__ import annotations

import bz2
import contextlib
import gzip
import lzma
import mmap
import os
import sys
import zlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, BinaryIO

from dpfim.choices import COMPRESSIONS as COMPRESSIONS
from dpfim.errors import InputError, InputNotFoundError, ParameterError

_BY_SUFFIX = {".gz": "gzip", ".bz2": "bz2", ".xz": "xz"}
# Compressions we recognise by name but cannot read: a clear usage error instead of "not UTF-8".
_UNSUPPORTED = {".zst": "zstd", ".zstd": "zstd", ".lz4": "lz4", ".zip": "zip", ".7z": "7z"}
# a command that writes the decompressed bytes to stdout, for each ({} is the path)
_TO_STDOUT = {
    "zstd": "zstd -dc {}",
    "lz4": "lz4 -dc {}",
    "zip": "unzip -p {}",
    "7z": "7z x -so {}",
}
_MAGIC = ((b"\x1f\x8b", "gzip"), (b"BZh", "bz2"), (b"\xfd7zXZ\x00", "xz"))  # for hints only
_BLOCK = 1 << 16
_DECOMPRESSION_ERRORS = (OSError, EOFError, ValueError, zlib.error, lzma.LZMAError)
BOM = b"\xef\xbb\xbf"
CHUNK_BYTES = 16 << 20


def plain_name(src: str) -> str:
    """The lower-cased file name without a compression suffix (what --format auto reads)."""
    name = Path(src).name.lower()
    for suffix in (*_BY_SUFFIX, *_UNSUPPORTED):
        if name.endswith(suffix):
            return name[: -len(suffix)]
    return name


def resolve_compression(src: str, compression: str = "auto") -> str:
    """none/gzip/bz2/xz: from --compression, else a path's extension; stdin under auto: none."""
    if compression not in COMPRESSIONS:
        raise ParameterError(
            f"--compression must be one of {', '.join(COMPRESSIONS)}: {compression!r}"
        )
    if compression != "auto":
        return compression
    if src == "-":
        return "none"
    name = Path(src).name.lower()
    for suffix, label in _UNSUPPORTED.items():
        if name.endswith(suffix):
            raise ParameterError(
                f"{src}: {label}-compressed input is not supported; decompress it and pipe it "
                f"in, e.g. `{_TO_STDOUT[label].format(src)} | dpfim mine - --format FORMAT ...`"
            )
    return next((label for suffix, label in _BY_SUFFIX.items() if name.endswith(suffix)), "none")


@contextlib.contextmanager
def open_input(
    src: str, compression: str, stdin: BinaryIO | None = None
) -> Iterator[tuple[BinaryIO, BinaryIO, str]]:
    """(decompressed stream, raw stream, compression used) for a path or "-"."""
    raw: BinaryIO = (stdin or sys.stdin.buffer) if src == "-" else _open_path(src)
    try:
        yield decompressed(raw, compression), raw, compression
    finally:
        if src != "-":
            raw.close()


def decompressed(raw: BinaryIO, compression: str) -> BinaryIO:
    """The decompressed stream of `raw` (none/gzip/bz2/xz), with the rules of the module
    docstring (every stream read, trailing data an error). The Spark engine's workers read
    compressed files through this too."""
    opener: Callable[[BinaryIO], BinaryIO] = {
        "none": lambda f: f,
        "gzip": lambda f: gzip.GzipFile(fileobj=f, mode="rb"),  # raises on trailing data
        "bz2": lambda f: _Streams(f, bz2.BZ2Decompressor),
        "xz": lambda f: _Streams(f, lzma.LZMADecompressor),
    }[compression]
    return opener(raw)


def _open_path(src: str) -> BinaryIO:
    path = Path(src)
    if path.is_dir():
        raise ParameterError(f"{src}: is a directory, not a file")
    try:
        return open(path, "rb")
    except FileNotFoundError:
        raise InputNotFoundError(f"{src}: no such file", src) from None
    except PermissionError:
        raise ParameterError(f"{src}: permission denied") from None
    except OSError as exc:
        raise ParameterError(f"{src}: cannot read ({exc.strerror})") from None


class _Streams:
    """bz2/xz data as one stream of bytes: concatenated streams are all decompressed; bytes after
    the last stream that do not start another, or a stream cut short, raise (a data error)."""

    def __init__(self, raw: BinaryIO, factory: Callable[[], Any]) -> None:
        self._raw, self._factory = raw, factory
        self._dec = factory()
        self._pending = b""

    def read(self, size: int = -1) -> bytes:
        want = size if size >= 0 else 1 << 62
        parts: list[bytes] = []
        got = 0
        while got < want:
            if self._dec.eof:
                rest = self._dec.unused_data or self._raw.read(_BLOCK)
                if not rest:
                    break  # every stream complete
                self._dec, self._pending = self._factory(), rest  # the next must be a stream
            if self._pending:
                data, self._pending = self._pending, b""
            elif self._dec.needs_input:
                data = self._raw.read(_BLOCK)
                if not data:
                    raise EOFError("the data ends before the end-of-stream marker")
            else:
                data = b""
            piece = self._dec.decompress(data, max_length=min(want - got, _BLOCK * 64))
            parts.append(piece)
            got += len(piece)
        return b"".join(parts)

    def readable(self) -> bool:
        return True


def chunks(
    stream: BinaryIO, name: str, label: str, *, size: int | None = None
) -> Iterator[tuple[bytes, int]]:
    """(chunk, number of its first line): whole lines of the decompressed input, about `size`
    bytes each (default CHUNK_BYTES, read at call time: tests cut small inputs into many
    chunks); the last chunk may lack a final newline. A leading BOM is dropped."""
    size = size or CHUNK_BYTES
    if hasattr(stream, "readinto"):
        yield from _chunks_into(stream, name, label, size)
        return
    data = b""
    first_line = 1
    bom_checked = eof = False
    while not eof:
        try:
            block = stream.read(size)
        except _DECOMPRESSION_ERRORS as exc:
            raise InputError(f"{name}: damaged {label} data ({exc})") from None
        eof = not block
        data += block
        if not bom_checked and (len(data) >= len(BOM) or eof):
            data = data[len(BOM) :] if data.startswith(BOM) else data
            bom_checked = True
        cut = len(data) if eof else data.rfind(b"\n") + 1
        if cut == 0 or not bom_checked:
            continue
        piece, data = data[:cut], data[cut:]
        if piece:
            yield piece, first_line
            first_line += piece.count(b"\n")


def _chunks_into(stream: BinaryIO, name: str, label: str, size: int) -> Iterator[tuple[bytes, int]]:
    """`chunks` through one reused buffer: each chunk is copied out of it once (reading into
    fresh blocks and joining them cost two more copies and ~1 page fault per 4 KiB). The
    buffer is an anonymous memory map: a small file touches only its own size of it."""
    buf = mmap.mmap(-1, size + _SLACK)
    try:
        yield from _cut(buf, stream, name, label, size)
    finally:
        buf.close()


def _cut(
    buf: mmap.mmap, stream: BinaryIO, name: str, label: str, size: int
) -> Iterator[tuple[bytes, int]]:
    have = 0  # bytes in buf: the unfinished last line of the previous read, then new data
    first_line = 1
    at_start = True
    eof = False
    while not eof:
        if len(buf) - have < max(size // 2, 1):  # a long line fills the buffer: make room
            bigger = mmap.mmap(-1, len(buf) + max(size, len(buf)))
            bigger[:have] = buf[:have]
            buf.close()
            buf = bigger
        with memoryview(buf) as view, view[have : min(have + size, len(buf))] as into:
            try:
                got = stream.readinto(into)  # type: ignore[attr-defined]
            except _DECOMPRESSION_ERRORS as exc:
                raise InputError(f"{name}: damaged {label} data ({exc})") from None
        eof = not got
        have += got or 0
        start = 0
        if at_start:
            if have < len(BOM) and not eof:
                continue
            start = len(BOM) if buf[: len(BOM)] == BOM else 0
            at_start = False
        cut = have if eof else buf.rfind(b"\n", start, have) + 1
        if cut <= start:
            if start:  # keep the buffer starting at the first line
                buf.move(0, start, have - start)
                have -= start
            continue
        piece = buf[start:cut]
        buf.move(0, cut, have - cut)
        have -= cut
        yield piece, first_line
        first_line += _newlines(piece)


_SLACK = 1 << 16  # room for the unfinished line carried over (more is made when needed)


def _newlines(data: bytes) -> int:
    """data.count(b"\\n"), a few times faster on big chunks (bytes.count is a byte loop)."""
    if len(data) < _COUNT_BLOCK:
        return data.count(b"\n")
    import numpy as np

    raw = np.frombuffer(data, dtype=np.uint8)
    return sum(
        int(np.count_nonzero(raw[k : k + _COUNT_BLOCK] == 10))  # a cache-sized block at a time
        for k in range(0, len(raw), _COUNT_BLOCK)
    )


_COUNT_BLOCK = 1 << 18


def decode(chunk: bytes, name: str, first_line: int) -> str:
    """UTF-8 text of a chunk; undecodable bytes and NUL are data errors naming the line."""
    try:
        text = chunk.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = first_line + chunk.count(b"\n", 0, exc.start)
        where = f"{name}:{line}: not valid UTF-8 (byte 0x{chunk[exc.start]:02x})"
        looks = next((lb for magic, lb in _MAGIC if chunk.startswith(magic)), None)
        if looks and first_line == 1:
            raise LooksCompressed(where, looks) from None
        raise InputError(f"{where}; convert the file to UTF-8") from None
    nul = text.find("\0")
    if nul >= 0:
        line = first_line + text.count("\n", 0, nul)
        raise InputError(f"{name}:{line}: NUL byte (binary data?)")
    return text


class LooksCompressed(InputError):
    """Undecodable first bytes that start like a gzip, bz2 or xz stream. What to do depends on
    how the input was opened: read_records restates the hint with restate()."""

    def __init__(self, where: str, looks: str) -> None:
        self.where, self.looks = where, looks
        super().__init__(f"{where}; {compression_hint('', 'none', looks)}")

    def __reduce__(self) -> tuple[type[LooksCompressed], tuple[str, str]]:
        return LooksCompressed, (self.where, self.looks)  # picklable (Spark workers raise it)

    def restate(self, src: str, used: str) -> InputError:
        """The same error, its hint for `src` ("-": stdin) read with compression `used`."""
        return InputError(f"{self.where}; {compression_hint(src, used, self.looks)}")


def compression_hint(src: str, used: str, looks: str) -> str:
    """What to do about input that looks `looks`-compressed after reading it with `used`."""
    suffix = next(sfx for sfx, label in _BY_SUFFIX.items() if label == looks)
    if used != "none":
        return (
            f"it still looks {looks}-compressed after {used} decompression (compressed twice?): "
            "decompress it once and read the result"
        )
    if src == "-":
        return f"it looks {looks}-compressed and stdin is read as it is: pass --compression {looks}"
    if Path(src).name.lower().endswith(suffix):  # only --compression none reads a .gz as it is
        return (
            f"it looks {looks}-compressed and --compression none reads it as it is: leave "
            f"--compression out (the {suffix} name decides) or pass --compression {looks}"
        )
    if plain_name(src) != Path(src).name.lower():  # another compression's name, read as none
        return (
            f"it looks {looks}-compressed and --compression none reads it as it is: pass "
            f"--compression {looks}"
        )
    return f"it looks {looks}-compressed: name the file {suffix} or pass --compression {looks}"


def split_lines(text: str, name: str, first_line: int) -> list[str]:
    """The lines of a chunk of whole lines (see the module docstring for the `\\r` rule)."""
    if not text:
        return []
    lines = text.split("\n")
    if text.endswith("\n"):
        lines.pop()
    if "\r" in text:
        for i, line in enumerate(lines):
            if line.endswith("\r"):
                line = lines[i] = line[:-1]
            if "\r" in line:
                raise InputError(f"{name}:{first_line + i}: {CR_MESSAGE}")
    return lines


def parse_lines(
    chunk: bytes, first_line: int, name: str, parse: Callable[[str], list[str]]
) -> tuple[list[str], list[int]]:
    """(all tokens, tokens per line) of a chunk, one line at a time; `parse` raises ValueError
    with a message, reported as a data error naming the line."""
    tokens: list[str] = []
    lengths: list[int] = []
    for number, line in enumerate(split_lines(decode(chunk, name, first_line), name, first_line)):
        try:
            items = parse(line)
        except ValueError as exc:
            raise InputError(f"{name}:{first_line + number}: {exc}") from None
        tokens.extend(items)
        lengths.append(len(items))
    return tokens, lengths


CR_MESSAGE = "carriage return inside a line (lines end at \\n; only a CRLF line ending is allowed)"


def input_size(src: str) -> int | None:
    """The byte size of a regular file (for a progress bar), else None."""
    if src == "-":
        return None
    try:
        return os.stat(src).st_size
    except OSError:
        return None
