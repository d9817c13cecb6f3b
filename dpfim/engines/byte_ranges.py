"""Byte ranges of input files: how the Spark engine's Python workers read text formats.

The driver lists the input's files (as Spark's own file index does: a file, a directory of part
files, a glob; hidden and `_`-files skipped) and cuts each plain file into byte ranges by
Hadoop's rule; every worker opens its file itself (local paths with `open`, other URIs through
`pyarrow.fs`) and hands whole lines to dpfim's own chunk readers, as the local engine does. No
line crosses from the JVM to Python.

Hadoop's split rule: a range [start, stop) owns exactly the lines that START in it. A line starts
at byte 0 and after every `\\n`; so a range skips its first partial line unless it starts at 0 or
right after a `\\n`, and reads past `stop` to finish its last line. A UTF-8 BOM is dropped at byte
0 only. A compressed file (.gz, .bz2, .xz) cannot be split: one range is the whole file, streamed
through readers.source's decompression (every stream read, trailing data an error). Line numbers
are only needed for a data error: the lines before a range are counted then.
"""

from __future__ import annotations

import fnmatch
import math
import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO
from urllib.parse import quote, unquote, urlparse

from dpfim.readers.source import BOM, CHUNK_BYTES

# Hadoop decompresses these by extension; the workers cannot: such an input is read by the JVM.
JVM_ONLY_SUFFIXES = (".deflate", ".snappy", ".lz4", ".zst", ".zstd", ".br")
COMPRESSED = {".gz": "gzip", ".bz2": "bz2", ".xz": "xz"}
# URI schemes pyarrow.fs opens (HDFS needs libhdfs where it runs; S3 the AWS credential chain)
_PYARROW_SCHEMES = {"hdfs", "viewfs", "s3", "s3a", "s3n", "gs", "gcs", "abfs", "abfss"}
_TO_PYARROW = {"s3a": "s3", "s3n": "s3"}
# an S3-compatible store (MinIO, Ceph, a test server): the AWS SDKs' variables, most specific
# first; read here because not every pyarrow version reads them itself
_ENDPOINT_VARIABLES = ("AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL")
_GLOB = "*?["
_SKIP = 1 << 16


@dataclass(frozen=True)
class ByteRange:
    """Part of one input file: bytes [start, stop) of a plain file (its lines that start there),
    or a whole compressed file (compression != "none")."""

    file: str  # the file's URI as Spark names it (percent-encoded)
    start: int
    stop: int
    compression: str


def compression_of(uri: str) -> str:
    """none/gzip/bz2/xz, by the file name's extension (as the local engine decides)."""
    name = unquote(urlparse(uri).path).lower()
    return next((label for suffix, label in COMPRESSED.items() if name.endswith(suffix)), "none")


def readable_here(uri: str) -> bool:
    """Whether a worker can open this URI itself (else the JVM must read the input)."""
    name = unquote(urlparse(uri).path).lower()
    if name.endswith(JVM_ONLY_SUFFIXES):
        return False
    scheme = urlparse(uri).scheme.lower()
    return scheme in ("", "file") or scheme in _PYARROW_SCHEMES


def _local_path(uri: str) -> str | None:
    parsed = urlparse(uri)
    if parsed.scheme.lower() in ("", "file"):
        return unquote(parsed.path) if parsed.scheme else uri
    return None


def _filesystem(scheme: str, netloc: str) -> object:
    """The pyarrow FileSystem of a (pyarrow) scheme and authority; S3 at the endpoint that
    AWS_ENDPOINT_URL_S3 or AWS_ENDPOINT_URL names, when one is set."""
    from pyarrow import fs

    if scheme == "s3":
        endpoint = next((os.environ[v] for v in _ENDPOINT_VARIABLES if os.environ.get(v)), None)
        if endpoint:
            return fs.S3FileSystem(endpoint_override=endpoint)
    root = f"{scheme}://{netloc}/" if netloc else f"{scheme}:///"
    filesystem, _ = fs.FileSystem.from_uri(root)
    return filesystem


def _inner(scheme: str, netloc: str, path: str) -> str:
    """A path as pyarrow names it: bucket/key in object stores, the path elsewhere."""
    return netloc + path if scheme in ("s3", "gs", "gcs") else path


def _pyarrow(uri: str) -> tuple[object, str]:
    """(pyarrow FileSystem, path in it) for a non-local URI."""
    parsed = urlparse(uri)
    scheme = parsed.scheme.lower()
    scheme = _TO_PYARROW.get(scheme, scheme)
    return _filesystem(scheme, parsed.netloc), _inner(scheme, parsed.netloc, unquote(parsed.path))


def remote_files(source: str) -> list[str] | None:
    """The files of a URI that pyarrow.fs opens (a file, a directory of files, a glob in the last
    path component), listed here as URIs in name order with local_files' rules; None for
    anything else (another scheme, a glob higher up or with `{}`, a directory with
    subdirectories): then Spark's file index lists it. FileNotFoundError when nothing is there.
    Spark cannot list s3:// itself without Hadoop's S3 connector, which pyspark lacks."""
    from pyarrow import fs

    parsed = urlparse(source)
    given = parsed.scheme.lower()
    if given not in _PYARROW_SCHEMES or any(c in source for c in "{}"):
        return None
    scheme = _TO_PYARROW.get(given, given)
    folder, _, name = parsed.path.rstrip("/").rpartition("/")
    if any(c in folder for c in _GLOB):
        return None
    pattern = name if any(c in name for c in _GLOB) else None
    filesystem: Any = _filesystem(scheme, parsed.netloc)
    inner = _inner(scheme, parsed.netloc, folder if pattern else parsed.path.rstrip("/"))

    def uri(path: str) -> str:
        tail = path.removeprefix(parsed.netloc) if scheme in ("s3", "gs", "gcs") else path
        return f"{given}://{parsed.netloc}{quote(tail)}"

    if pattern is None:
        info = filesystem.get_file_info(inner)
        if info.type == fs.FileType.File:
            return [uri(info.path)]
        if info.type != fs.FileType.Directory:
            raise FileNotFoundError(source)
    out = []
    for entry in filesystem.get_file_info(fs.FileSelector(inner, allow_not_found=True)):
        name = entry.base_name
        if pattern is not None and not fnmatch.fnmatchcase(name, pattern):
            continue
        if _hidden(name):
            continue
        if entry.type != fs.FileType.File:
            return None
        out.append(uri(entry.path))
    if pattern is not None and not out:
        raise FileNotFoundError(source)
    return sorted(out)


def _hidden(name: str) -> bool:
    """Names Spark's file index skips in a directory: `_` (not a partition `k=v`), `.`, and
    files still being copied."""
    underscore = name.startswith("_") and "=" not in name
    return underscore or name.startswith(".") or name.endswith("._COPYING_")


def local_files(source: str) -> list[str] | None:
    """The files Spark would read for a local file or a directory of files, as file URIs in
    name order (in a directory, names starting with `_` or `.` are skipped, as Spark skips
    them); None for anything else (a glob, a URI, a directory with subdirectories): then
    Spark's file index lists it."""
    if "://" in source or source.startswith("file:") or any(c in source for c in "*?[{"):
        return None
    path = Path(source)
    if path.is_file():
        return [path.resolve().as_uri()]
    if not path.is_dir():
        return None
    out = []
    for entry in sorted(path.iterdir()):
        if _hidden(entry.name):
            continue
        if not entry.is_file():
            return None
        out.append(entry.resolve().as_uri())
    return out


def shown(uri: str) -> str:
    """A file URI as a path (other URIs as they are), for error messages."""
    parsed = urlparse(uri)
    return unquote(parsed.path) if parsed.scheme.lower() == "file" else uri


def sizes(uris: Sequence[str]) -> list[int]:
    """The byte size of each file (OSError if one cannot be looked at)."""
    out = []
    for uri in uris:
        path = _local_path(uri)
        if path is not None:
            out.append(os.stat(path).st_size)
            continue
        filesystem, inner = _pyarrow(uri)
        info = filesystem.get_file_info(inner)  # type: ignore[attr-defined]
        if info.size is None:
            raise OSError(f"{uri}: not a file")
        out.append(int(info.size))
    return out


def open_uri(uri: str) -> BinaryIO:
    """A seekable binary stream of the file."""
    path = _local_path(uri)
    if path is not None:
        return open(path, "rb")
    filesystem, inner = _pyarrow(uri)
    stream: BinaryIO = filesystem.open_input_file(inner)  # type: ignore[attr-defined]
    return stream


def plan(
    files: Sequence[tuple[str, int]], max_split: int, open_cost: int, parallelism: int
) -> list[ByteRange]:
    """The ranges to read: each compressed file whole, each plain file cut into ranges of about
    equal size, at most Spark's split size (min(maxPartitionBytes, max(openCostInBytes, bytes
    per core))), their number a multiple of the parallelism when that keeps them under it.
    Empty files hold no line and get no range."""
    plain = [(f, n) for f, n in files if n > 0 and compression_of(f) == "none"]
    total = sum(n + open_cost for _, n in plain)
    per_core = math.ceil(total / max(1, parallelism))
    split = max(1, min(max_split, max(open_cost, per_core)))
    out: list[ByteRange] = []
    for file, size in files:
        if size <= 0:
            continue
        compression = compression_of(file)
        if compression != "none":
            out.append(ByteRange(file, 0, size, compression))
            continue
        pieces = math.ceil(size / split)
        if len(plain) == 1 and parallelism > 1 and pieces > 1:
            pieces = math.ceil(pieces / parallelism) * parallelism  # every core as busy
        step = math.ceil(size / pieces)
        out.extend(ByteRange(file, a, min(a + step, size), "none") for a in range(0, size, step))
    return out


def range_chunks(
    f: BinaryIO, start: int, stop: int, size: int = CHUNK_BYTES
) -> Iterator[tuple[bytes, int]]:
    """(chunk, its byte offset in the file): the whole lines that start in [start, stop), about
    `size` bytes at a time; the file's last line may lack its `\\n`. A BOM at byte 0 is
    dropped (the offset still counts it)."""
    begin = 0
    if start > 0:
        f.seek(start - 1)
        begin = start - 1
        while True:  # skip through the first \n at or after start - 1
            block = f.read(_SKIP)
            if not block:
                return
            k = block.find(b"\n")
            if k >= 0:
                begin += k + 1
                break
            begin += len(block)
        if begin >= stop:
            return
    f.seek(begin)
    at = begin
    carry = b""
    while True:
        block = f.read(size)
        if not block:
            if carry:
                yield _no_bom(carry, at), at
            return
        buf = carry + block if carry else block
        end = buf.find(b"\n", max(stop - 1 - at, 0))  # the \n that ends the last owned line
        if end >= 0:
            yield _no_bom(buf[: end + 1], at), at
            return
        cut = buf.rfind(b"\n") + 1
        if cut:
            yield _no_bom(buf[:cut], at), at
        carry = buf[cut:]
        at += cut


def _no_bom(chunk: bytes, at: int) -> bytes:
    return chunk[len(BOM) :] if at == 0 and chunk.startswith(BOM) else chunk


def lines_before(f: BinaryIO, offset: int) -> int:
    """The number of `\\n` in the file's first `offset` bytes."""
    f.seek(0)
    count = 0
    left = offset
    while left > 0:
        block = f.read(min(left, CHUNK_BYTES))
        if not block:
            break
        count += block.count(b"\n")
        left -= len(block)
    return count
