"""bytes/stdin -> records: formats, decompression, per-record dedupe and truncation.

Parsing is record-local and decided from public information only (SPEC §3): the format comes
from the file name's extension or `--format`, compression from the extension or
`--compression`, never from the content (stdin's magic bytes excepted, documented); every line is
parsed on its own, so one changed record can never change how another record is read. The
readers stream: the input is read in chunks and only the compact records are kept.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import BinaryIO

from dpfim import inputs
from dpfim.choices import COMPRESSIONS, FORMATS
from dpfim.errors import InputNotFoundError, ParameterError
from dpfim.inputs import LineReader
from dpfim.params import check_sep
from dpfim.progress import EXACT, OFF, PercentBar, PhaseLine, Setting, progress_mode
from dpfim.readers import basket, long
from dpfim.readers.prefetch import prefetched
from dpfim.readers.records import (
    RecordBuilder,
    Records,
    Vocabulary,
    from_transactions,
    restrict,
    truncate,
    truncation_key,
)
from dpfim.readers.source import (
    LooksCompressed,
    chunks,
    decode,
    input_size,
    open_input,
    plain_name,
    resolve_compression,
    split_lines,
)
from dpfim.samplers.rng import RandomSource

__all__ = [
    "BASKET_NOTE",
    "COMPRESSIONS",
    "FORMATS",
    "Records",
    "basket_note",
    "check_source",
    "from_transactions",
    "read_records",
    "read_universe",
    "resolve_format",
    "restrict",
    "truncate",
]


def resolve_format(source: str, fmt: str, *, long_columns_given: bool = False) -> str:
    """The input format: as given, or by the file name's extension for "auto"."""
    if fmt != "auto":
        if fmt not in FORMATS:
            raise ParameterError(f"--format must be auto or one of {', '.join(FORMATS)}: {fmt!r}")
        return fmt
    if source == "-":
        raise ParameterError("reading stdin needs --format (auto decides by the file extension)")
    ext = Path(plain_name(source)).suffix
    decided = inputs.BY_SUFFIX.get(ext)
    if decided is None:
        resolve_compression(source)  # x.zst: say zstd is unsupported, not "extension '(none)'"
        raise ParameterError(
            f"{source}: cannot tell the format from the extension {ext or '(none)'!r}; "
            f"pass --format ({', '.join(FORMATS)})"
        )
    instead = inputs.FORMATS[decided].with_columns
    return instead if long_columns_given and instead is not None else decided


BASKET_NOTE = (
    "note: read as baskets, one record a line; a file with a header and a record-id column "
    "needs --record-col/--item-col"
)


def basket_note(source: str, fmt: str, *, long_columns_given: bool = False) -> str | None:
    """The public note for a .csv/.tsv that --format auto reads as baskets, else None.

    Decided from the file name and the options only, and the same text for every file: the first
    line of a basket file is a record, so it may not decide whether anything is said (a data-
    dependent "looks like long format" guess is curator-only, behind --verbose).
    """
    if fmt != "auto" or source == "-" or long_columns_given:
        return None
    return BASKET_NOTE if Path(plain_name(source)).suffix in (".csv", ".tsv") else None


def check_source(src: str) -> None:
    """Fail early, as a usage error, on a path that cannot be read as a file."""
    if src == "-":
        return
    path = Path(src)
    if path.is_dir():
        raise ParameterError(f"{src}: is a directory, not a file")
    if not path.exists():
        raise InputNotFoundError(f"{src}: no such file", src)


def default_sep(source: str, sep: str | None) -> str:
    """The item separator: as given (one character; `\\t` and `tab` mean a tab), else tab for
    .tsv files and a comma otherwise."""
    if sep is None:
        return "\t" if plain_name(source).endswith(".tsv") else ","
    return check_sep(sep)


def read_universe(path: str) -> list[str]:
    """A declared vocabulary: one item a line, trimmed, blank lines ignored, deduplicated."""
    check_source(path)
    items: list[str] = []
    with open_input(path, resolve_compression(path)) as (stream, _, label):
        for chunk, first in chunks(stream, path, label):
            items.extend(s.strip() for s in split_lines(decode(chunk, path, first), path, first))
    return list(dict.fromkeys(s for s in items if s))


def read_records(
    source: str | os.PathLike[str],
    *,
    fmt: str = "auto",
    sep: str | None = None,
    record_col: str | None = None,
    item_col: str | None = None,
    compression: str = "auto",
    max_record_items: int | None = None,
    universe: Sequence[str] | None = None,
    rng: RandomSource | None = None,
    key: bytes | None = None,
    progress: Setting = False,
    stdin: BinaryIO | None = None,
    warn: Callable[[str], None] | None = None,
    paths: Callable[[str], None] | None = None,
) -> Records:
    """Read a transaction file (or "-" for stdin) into Records.

    rng, key: the --max-record-items sample's secret key (readers.records.truncation_key), or a
    source to draw one from (default: the OS CSPRNG).
    warn: receives curator-only warnings (not private), e.g. that a basket file looks like long
    format.
    paths: receives one curator-only line saying which reader paths read the input (how many
    chunks each: a fallback can depend on the content), for `dpfim mine -v`.
    """
    src = os.fspath(source)
    check_source(src)
    decided = resolve_format(
        src, fmt, long_columns_given=record_col is not None or item_col is not None
    )
    name = "<stdin>" if src == "-" else src
    sep = default_sep(src, sep)
    if max_record_items is not None and max_record_items < 1:
        raise ParameterError(f"--max-record-items must be >= 1, got {max_record_items}")
    comp = resolve_compression(src, compression)
    vocab = Vocabulary(universe)
    form = inputs.FORMATS[decided]
    if form.needs_columns:  # grouped by record id: long CSV or Parquet
        if record_col is None or item_col is None:
            raise ParameterError(f"--format {decided} needs --record-col and --item-col")
        if plain_name(src).endswith(".parquet"):
            if src == "-" or comp != "none":
                raise ParameterError(
                    f"{name}: Parquet is read from an uncompressed file path only (it needs a "
                    "seekable file): write it to a file first"
                )
            records = long.read_parquet(src, name, record_col, item_col, vocab)
        else:
            with (
                _hint_for(src, comp),
                open_input(src, comp, stdin) as (stream, raw, label),
                _progress(stream, raw, src, progress) as read_from,
            ):
                records = long.read_csv(
                    read_from,
                    name,
                    label,
                    sep,
                    record_col,
                    item_col,
                    vocab,
                )
    else:
        builder = RecordBuilder(vocab)
        size = input_size(src)
        # compressed files: assume ~4x, so a policy by input size sees the decompressed bytes
        builder.size_hint = None if size is None else size * (1 if comp == "none" else 4)
        reader = form.line_reader()
        looks_long = _LongLook() if warn is not None and fmt == "auto" else None
        see = None if looks_long is None else lambda chunk, first: looks_long.see(chunk, first, sep)
        with (
            _hint_for(src, comp),
            open_input(src, comp, stdin) as (stream, raw, label),
            _progress(stream, raw, src, progress) as read_from,
        ):
            big = (builder.size_hint or 0) >= reader.COMPILED_FROM
            # big inputs: chunks tokenised on both cores and merged in order (pipeline.py)
            done = big and _pipelined(
                reader, chunks(read_from, name, label), name, sep, builder, see
            )
            if not done:
                # the next chunk is read while a compiled tokeniser runs (it frees the GIL)
                pieces = prefetched(chunks(read_from, name, label), big)
                with contextlib.closing(pieces):
                    for chunk, first in pieces:
                        if see is not None:
                            see(chunk, first)
                        reader.read_chunk(chunk, first, name, sep, builder)
        records = builder.build()
        if paths is not None:
            paths(f"{name} ({decided}): {describe_paths(builder.paths)}")
        if looks_long is not None and warn is not None and looks_long.verdict():
            warn(
                f"{name} looks like long format (a header and two fields a line) but is read "
                "as baskets, one record a line; for one record per id pass --record-col and "
                "--item-col, or --format basket to silence this"
            )
    if max_record_items is not None:
        # the records were just read and are ours: truncate without a second copy of the ids
        records = truncate(records, max_record_items, key or truncation_key(rng=rng), in_place=True)
    return records


def _pipelined(
    reader: LineReader,
    pieces: Iterable[tuple[bytes, int]],
    name: str,
    sep: str,
    out: RecordBuilder,
    see: Callable[[bytes, int], None] | None,
) -> bool:
    """Read a big input on both cores (dpfim/readers/pipeline.py); False (nothing read) when
    that path is off or numba is missing."""
    from dpfim.readers import pipeline

    if not pipeline.worth_it():
        return False

    def fallback(chunk: bytes, first: int) -> None:
        reader.read_chunk(chunk, first, name, sep, out, compiled=False)

    return pipeline.read(pieces, reader.kernel_call, sep, out, fallback, see)


def describe_paths(taken: dict[str, int]) -> str:
    """ "compiled (3 chunks), line parser (1 chunk)"; "no chunks" for an empty input."""
    if not taken:
        return "no chunks"
    return ", ".join(f"{p} ({k} chunk{'' if k == 1 else 's'})" for p, k in taken.items())


class _LongLook:
    """Curator-only heuristic: every line has exactly two fields, the first line looks like a
    header (its fields occur nowhere else), and first-column values repeat."""

    def __init__(self) -> None:
        self.two_fields = True
        self.header: tuple[str, str] | None = None
        self.header_seen_again = False
        self.first_col_repeats = False
        self._seen: set[str] = set()

    def see(self, chunk: bytes, first: int, sep: str) -> None:
        if not self.two_fields:
            return
        try:
            lines = chunk.decode("utf-8").split("\n")
        except UnicodeDecodeError:
            self.two_fields = False
            return
        for line in lines[:10_000]:
            if not line:
                continue
            try:
                fields = basket.parse_line(line.rstrip("\r"), sep)
            except ValueError:
                fields = []
            if len(fields) != 2:
                self.two_fields = False
                return
            if self.header is None:
                self.header = (fields[0], fields[1])
                continue
            if fields[0] in self.header or fields[1] in self.header:
                self.header_seen_again = True
            if fields[0] in self._seen:
                self.first_col_repeats = True
            self._seen.add(fields[0])

    def verdict(self) -> bool:
        return (
            self.two_fields
            and self.header is not None
            and not self.header_seen_again
            and self.first_col_repeats
        )


@contextlib.contextmanager
def _hint_for(src: str, used: str) -> Iterator[None]:
    """Input that looks compressed: the hint for how this input was opened (stdin, a .gz path
    read with --compression none, one decompressed once already)."""
    try:
        yield
    except LooksCompressed as exc:
        raise exc.restate(src, used) from None


@contextlib.contextmanager
def _progress(stream: BinaryIO, raw: BinaryIO, src: str, setting: Setting) -> Iterator[BinaryIO]:
    """`stream`, advancing a reading progress bar on stderr by how far the raw (compressed)
    input has been read (dpfim/progress.py): PUBLIC draws whole percents only, EXACT a tqdm bar
    in bytes; the bar is closed when the block ends, also on an error."""
    kind = progress_mode(setting)
    if kind == OFF:
        yield stream
        return
    size = input_size(src)
    if kind == EXACT:
        from tqdm import tqdm

        exact = tqdm(
            total=size, desc="reading", unit="B", unit_scale=True, file=sys.stderr, leave=False
        )
        try:
            yield _Counted(stream, raw, step=exact.update)  # type: ignore[misc]
        finally:
            exact.close()
        return
    bar: PercentBar | PhaseLine
    if size is None:
        bar, at = PhaseLine("reading", sys.stderr), None
    else:
        bar = PercentBar("reading", sys.stderr)
        at = (lambda pos: bar.to(pos * 100 // size)) if size else None
    done = False
    try:
        yield _Counted(stream, raw, at=at)  # type: ignore[misc]
        done = True
    finally:
        bar.close(complete=done)  # an error: the line is blanked before its message


class _Counted:
    """Reports how far the raw (compressed) input has been read: `step` receives each read's
    advance in bytes, `at` the position reached."""

    def __init__(
        self,
        stream: BinaryIO,
        raw: BinaryIO,
        *,
        step: Callable[[int], object] | None = None,
        at: Callable[[int], object] | None = None,
    ) -> None:
        self._stream, self._raw = stream, raw
        self._step, self._report = step, at
        self._at = 0

    def read(self, size: int = -1) -> bytes:
        data = self._stream.read(size)
        try:
            at = self._raw.tell()
        except (OSError, ValueError):
            at = self._at + len(data)
        if self._step is not None:
            self._step(max(0, at - self._at))
        self._at = at
        if self._report is not None:
            self._report(at)
        return data
