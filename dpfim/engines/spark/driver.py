"""records -> exact supports on Apache Spark: the driver side. No privacy here.

`SparkCounts` is the engine's `Counts` (dpfim/counts.py): a `TopDown` subclass (the threshold
policy of engines/topdown.py) whose passes are Spark jobs. It plans the reading (byte ranges for
the Python workers, or Spark's own readers; read.py runs on the executors), caches the blocks,
asks count.py's executor functions for supports, and translates the executors' data errors and
Spark's exceptions into dpfim's (`_guard`). `ENGINE` is the engine table's entry.

Counting is top-down: the threshold s starts just above the r-th largest item support and is
lowered when the mechanism asks for deeper ranks. One pass over the blocks gives the item
supports (merged by reduceByKey, kept on the cluster) and the record counts. For each s, the
items with support >= s // 2 are broadcast (one halving ahead, up to s // 8 when the items stay
few: the next lowerings need no job); every partition counts the r-itemsets of its records
restricted to them and only itemsets with support >= that are collected to the driver.

The blocks are persisted and locally checkpointed: a lost block fails the job instead of being
re-read and truncated again.
"""

from __future__ import annotations

import copy
import functools
import json
import operator
import os
import re
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from dpfim.counts import Counts, ItemIds
from dpfim.engines import Opened, byte_ranges
from dpfim.engines.byte_ranges import ByteRange
from dpfim.engines.spark import count, read
from dpfim.engines.spark.session import T, quiet, require_pyspark, session
from dpfim.engines.topdown import TopDown
from dpfim.errors import (
    InputArgumentError,
    InputError,
    InputNotFoundError,
    InputShapeError,
    ParameterError,
    RecordValueError,
)
from dpfim.inputs import FORMATS, EngineSpec, InputSpec
from dpfim.readers import long
from dpfim.readers.records import Vocabulary, truncation_key
from dpfim.samplers.rng import RandomSource

if TYPE_CHECKING:
    from pyspark import RDD
    from pyspark.sql import DataFrame, SparkSession

_READER_CONF = "spark.dpfim.reader"  # auto (default), python or jvm: who reads text input


@dataclass(frozen=True)
class SparkInput:
    """What to read, as validated by the caller (api.mine_file)."""

    source: str
    fmt: str  # basket, fimi, jsonl or long (resolved)
    sep: str
    record_col: str | None = None
    item_col: str | None = None
    universe: Sequence[str] | None = None
    max_record_items: int | None = None
    seed: int | None = None  # None: the truncation key comes from the OS CSPRNG
    # the secret key of the --max-record-items sample, drawn once on the driver (None: drawn
    # when the blocks are planned); never released
    truncation_key: bytes | None = None
    # a Spark DataFrame of baskets read from its array<string> column `items_col` in place of
    # `source` (the Python API; `_read_frame`)
    frame: DataFrame | None = None
    items_col: str = "items"


class SparkCounts(TopDown):
    """Exact supports of the r-itemsets with support >= threshold, counted by Spark.

    The `Counts` contract of dpfim/counts.py, as the local engine keeps it: `counts` holds the
    support of EVERY r-itemset with support >= `threshold` and of no other, decreasing, ties
    by the first appearance of their items in the input. Item ids: positions in the declared
    vocabulary, or (open universe) append-only in the order the items become frequent enough
    to be counted (one ItemIds table, shared by every size of one input), so an id never
    changes when the threshold falls; a row lists its items in first-appearance order.
    `usable` (records with at least r items) is a curator fact.
    """

    def __init__(self, spark: SparkSession, inp: SparkInput, size: int) -> None:
        self._spark = spark
        self._inp = inp
        self._lines: DataFrame | None = None  # the text input, to number a bad line
        self._persisted: list[DataFrame] = []
        # a DataFrame's items are kept as spelled (dpfim.readers.frames), a file's are trimmed
        trim = inp.frame is None
        self._declared = (
            list(Vocabulary(inp.universe, trim=trim).items) if inp.universe is not None else None
        )
        self._ids = ItemIds(self._declared or ())  # shared by with_size() copies
        # the run's truncation key: drawn once, so a rebuilt lineage truncates the same way
        self._key = inp.truncation_key or truncation_key(seed=inp.seed)
        self._blocks = self._guard(lambda: self._read())
        # one pass over the records: item supports and record counts, merged on the cluster
        parts = max(2, spark.sparkContext.defaultParallelism)
        self._summary = self._blocks.mapPartitions(count.summary).reduceByKey(
            count.add_summary, parts
        )
        self._summary.persist()
        self._supports: Any = self._summary.filter(count.is_item)  # items only
        heads = self._guard(lambda: self._summary.mapPartitions(count.heads).collect())
        stats = [v for kind, v in heads if kind == "stats"]
        self._n: int = stats[0][0] if stats else 0
        self._usable: tuple[int, ...] = stats[0][1] if stats else (0,) * count.SIZES
        # which reader paths read the input, chunks summed over the workers (curator-only)
        self.paths: dict[str, int] = {}
        for kind, v in heads:
            if kind == "paths":
                for path, chunks in v.items():
                    self.paths[path] = self.paths.get(path, 0) + chunks
        top = sorted((x for kind, v in heads if kind == "top" for x in v), reverse=True)
        self._top = top[: count.TOP_KNOWN]
        self._start(size)

    def with_size(self, size: int) -> SparkCounts:
        """Counts of the same records for another itemset size, from the top again (the cached
        blocks and item supports are shared; close() either one only when both are done)."""
        other = copy.copy(self)
        other._start(size)
        return other

    def _start(self, size: int) -> None:
        self._begin(size, self._top)
        self.n, self.usable = int(self._n), int(self._usable[size - 1])
        self._fetched: tuple[int, np.ndarray, np.ndarray, np.ndarray] | None = None

    @property
    def items(self) -> list[str]:
        """Names by id: only grows (the open universe learns items as the threshold falls)."""
        return self._ids.names

    def item_supports(self) -> np.ndarray:
        """The exact support of every item, by id: every item is interned (in first-appearance
        order, or declared order), as the counts would when lowered to support 1."""
        every = self._guard(lambda: self._supports.collect())
        if self._declared is None:
            every.sort(key=lambda kv: kv[1][1])
            ids = [self._ids.id_of(kv[0]) for kv in every]
        else:
            position = {item: i for i, item in enumerate(self._declared)}
            ids = [position[kv[0]] for kv in every]
        out = np.zeros(len(self.items), dtype=np.int64)
        for i, kv in zip(ids, every, strict=True):
            out[i] = int(kv[1][0])
        return out

    def weighted_item_supports(self, scale: int) -> np.ndarray:
        """By item id: the sum, over the records holding the item, of floor(scale / sqrt(the
        record's length)) (levelwise's item discovery, docs/privacy.md §23.2), in one job.
        Call item_supports() first: it interns every item."""
        job = self._blocks.flatMap(functools.partial(count.weighted_items, scale))
        found = self._guard(lambda: job.reduceByKey(operator.add).collect())
        out = np.zeros(len(self.items), dtype=np.int64)
        for name, w in found:
            out[self._ids.id_of(name)] = int(w)
        return out

    def supports(self, batch: Sequence[Sequence[int]]) -> list[int]:
        """Exact supports of a batch of itemsets (item ids), in one Spark job."""
        wanted = [tuple(self.items[int(i)] for i in ids) for ids in batch]
        asked = [names for names in wanted if names]
        found: list[int] = [0] * len(asked)
        if asked:
            job = self._blocks.map(functools.partial(count.block_supports, asked))
            found = self._guard(lambda: job.fold([0] * len(asked), count.add_lists))
        it = iter(found)
        return [int(next(it)) if names else self.n for names in wanted]

    def close(self) -> None:
        """Release the cached blocks and supports."""
        self._summary.unpersist()
        self._blocks.unpersist()
        for frame in self._persisted:
            frame.unpersist()

    # --- one threshold -------------------------------------------------------------------------

    def _count_at(self, s: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Every r-itemset with support >= s. Each counting job looks ahead (_ahead: s // 2 to
        s // 8): it collects the itemsets with support >= that; those at or above s are exposed
        now, the rest wait for the next lowerings, which then need no job."""
        ahead = self._ahead(s)
        if self._fetched is None or s < self._fetched[0]:
            self._fetched = (ahead, *self._fetch(ahead))
            self.passes += 1
        _, counts, itemsets, ties = self._fetched
        keep = counts >= s
        return counts[keep], itemsets[keep], ties[keep]

    def _ahead(self, s: int) -> int:
        """The threshold a job at s counts at: s // 2, and up to two halvings deeper (s // 8)
        while the items above it stay few enough for dense counting (known from the largest
        item supports): the mechanism usually asks for a few more ranks, each halving a job."""
        if self.size == 1:
            return s
        ahead = max(1, s // 2)
        descending = -np.asarray(self._top, dtype=np.int64)
        for _ in range(2):
            deeper = max(1, ahead // 2)
            width = int(np.searchsorted(descending, -deeper, side="right"))  # supports >= deeper
            if deeper == ahead or width >= count.TOP_KNOWN or width**self.size > count.DENSE_KEYS:
                break
            ahead = deeper
        return ahead

    def _fetch(self, s: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(supports, item ids, tie keys) of every r-itemset with support >= s, counted on the
        cluster; the tie keys are the items' positions in first-appearance (or declared) order
        among the frequent items, so ties fall as on the local engine (contract invariant 4).
        New frequent items get the next ids (open universe); known ids never change."""
        frequent: list[tuple[str, tuple[int, Any]]] = self._guard(
            lambda: self._supports.filter(functools.partial(count.support_at_least, s)).collect()
        )
        if self._declared is not None:
            position = {item: i for i, item in enumerate(self._declared)}
            frequent.sort(key=lambda kv: position[kv[0]])
            ids = np.array([position[kv[0]] for kv in frequent], dtype=np.int64)
        else:
            frequent.sort(key=lambda kv: kv[1][1])
            ids = np.array([self._ids.id_of(kv[0]) for kv in frequent], dtype=np.int64)
        support = np.array([kv[1][0] for kv in frequent], dtype=np.int64)
        if self.size == 1:
            counts, rows = support, np.arange(len(frequent), dtype=np.int64).reshape(-1, 1)
        elif len(frequent) >= self.size:
            counts, rows = self._count(s, [kv[0] for kv in frequent])
        else:
            counts, rows = np.zeros(0, np.int64), np.zeros((0, self.size), np.int64)
        if not len(rows):
            rows = np.zeros((0, self.size), dtype=np.int64)
        return counts, ids[rows], rows

    def _count(self, s: int, names: list[str]) -> tuple[np.ndarray, np.ndarray]:
        """(supports, rows of positions in `names`) of the r-itemsets with support >= s."""
        sc = self._spark.sparkContext
        width = len(names)
        bc = sc.broadcast({name: i for i, name in enumerate(names)})
        buckets = max(2, sc.defaultParallelism)
        try:
            job = (
                self._blocks.mapPartitions(
                    functools.partial(count.partial_counts, bc, width, self.size, buckets)
                )
                .reduceByKey(count.merge_pair, numPartitions=buckets)
                .mapValues(functools.partial(count.at_least, s))
                .values()
            )
            found = self._guard(lambda: job.collect())
        finally:
            bc.destroy()
        if not found:
            return np.zeros(0, np.int64), np.zeros((0, self.size), np.int64)
        keys = np.concatenate([k for k, _ in found])
        counts = np.concatenate([c for _, c in found]).astype(np.int64)
        return counts, count.decode_keys(keys, width, self.size)

    # --- reading -------------------------------------------------------------------------------

    def _read(self) -> RDD[read.Block]:
        from pyspark import StorageLevel

        inp = self._inp
        by_lines = inp.frame is None and not FORMATS[inp.fmt].needs_columns  # else grouped
        ranges = self._plan() if by_lines else None
        if inp.frame is not None:
            blocks = self._read_frame().rdd.map(read.load_block)
        elif ranges is not None:
            sc = self._spark.sparkContext
            blocks = sc.parallelize(ranges, max(1, len(ranges))).mapPartitions(
                functools.partial(read.read_ranges, inp.fmt, inp.sep, inp.universe)
            )
        else:
            if not by_lines:
                blobs = self._read_long()
            else:
                lines = self._text()
                blobs = quiet(
                    lambda: lines.mapInArrow(
                        functools.partial(
                            read.text_blocks, fmt=inp.fmt, sep=inp.sep, universe=inp.universe
                        ),
                        "blob binary",
                    )
                )
            blocks = blobs.rdd.map(read.load_block)
        if inp.max_record_items is not None:
            blocks = blocks.mapPartitions(
                functools.partial(read.truncated, inp.max_record_items, self._key)
            )
        blocks.persist(StorageLevel.MEMORY_AND_DISK)
        blocks.localCheckpoint()  # a lost block fails the run: it is never truncated twice
        return blocks

    def _plan(self) -> list[ByteRange] | None:
        """The byte ranges the Python workers read, or None when the JVM must read the input
        (--spark-conf spark.dpfim.reader=jvm, or a file the workers cannot open: a Hadoop-only
        codec, a URI scheme pyarrow.fs does not know or cannot reach from here)."""
        mode = self._spark.conf.get(_READER_CONF, "auto") or "auto"
        if mode not in ("auto", "python", "jvm"):
            raise ParameterError(f"{_READER_CONF} must be auto, python or jvm, got {mode!r}")
        if mode == "jvm":
            return None
        source = self._inp.source
        files = byte_ranges.local_files(source)
        if files is None:
            files = self._remote_files(mode)
        if files is None:  # a glob, a URI, nested directories: Spark's own file index lists it
            files = sorted(self._guard(lambda: self._spark.read.text(source).inputFiles()))
        try:
            if not all(byte_ranges.readable_here(f) for f in files):
                raise OSError("a file the Python workers cannot open")
            sizes = byte_ranges.sizes(files)
        except (OSError, ImportError, ValueError) as exc:
            if mode == "python":
                raise InputError(f"{source}: the Python workers cannot read it ({exc})") from None
            return None
        sc = self._spark.sparkContext
        jvm: Any = sc._jvm
        as_bytes = jvm.org.apache.spark.network.util.JavaUtils.byteStringAsBytes
        conf = self._spark.conf
        max_split = int(as_bytes(conf.get("spark.sql.files.maxPartitionBytes", "128m")))
        open_cost = int(as_bytes(conf.get("spark.sql.files.openCostInBytes", "4m")))
        return byte_ranges.plan(
            list(zip(files, sizes, strict=True)), max_split, open_cost, sc.defaultParallelism
        )

    def _remote_files(self, mode: str) -> list[str] | None:
        """The input's files listed through pyarrow.fs (S3, GCS, HDFS), or None for Spark's file
        index to list them (it has the cluster's Hadoop connectors, where pyarrow cannot reach)."""
        source = self._inp.source
        try:
            return byte_ranges.remote_files(source)
        except FileNotFoundError:
            raise InputNotFoundError(f"{source}: no such file", source) from None
        except (OSError, ImportError, ValueError) as exc:
            if mode == "python":
                raise InputError(f"{source}: the Python workers cannot read it ({exc})") from None
            return None

    def _text(self) -> DataFrame:
        from pyspark.sql import functions as F

        raw = self._spark.read.option("lineSep", "\n").text(self._inp.source)
        self._lines = raw.select(
            F.col("value").cast("binary").alias("line"),
            F.input_file_name().alias("file"),
            F.input_file_block_start().alias("block"),
        )
        return self._lines

    def _read_frame(self) -> DataFrame:
        """A DataFrame of baskets: one row a record, read where its partitions are (no shuffle);
        the row ids number first appearances in the frame's own row order (read.frame_blocks),
        deterministic for a given partitioning of the frame."""
        from pyspark.sql import functions as F

        inp = self._inp
        assert inp.frame is not None
        rows = inp.frame.select(
            F.monotonically_increasing_id().alias("row"), F.col(f"`{inp.items_col}`")
        )
        return quiet(
            lambda: rows.mapInArrow(
                functools.partial(read.frame_blocks, universe=inp.universe, column=inp.items_col),
                "blob binary",
            )
        )

    def _read_long(self) -> DataFrame:
        from pyspark.sql import functions as F

        inp = self._inp
        assert inp.record_col is not None and inp.item_col is not None
        if _plain(inp.source).endswith(".parquet"):
            frame = self._spark.read.parquet(inp.source)
            for col in (inp.record_col, inp.item_col):
                if col not in frame.columns:
                    shown = ", ".join(frame.columns[:10])
                    raise InputError(f"{inp.source}: no column {col!r} (columns: {shown})")
            pairs_in = frame.select(
                F.col(f"`{inp.record_col}`"),
                F.col(f"`{inp.item_col}`"),
                F.input_file_name().alias("file"),
                F.input_file_block_start().alias("block"),
                F.monotonically_increasing_id().alias("line"),
            )
            pairs = quiet(
                lambda: pairs_in.mapInArrow(
                    read.parquet_pairs,
                    "rid string, item string, file string, block long, line long",
                )
            )
        else:
            lines = self._text()
            parsed = quiet(
                lambda: lines.mapInArrow(
                    functools.partial(read.long_lines, sep=inp.sep),
                    "file string, block long, line long, fields array<string>, header boolean",
                )
            )
            parsed = parsed.persist()
            self._persisted.append(parsed)
            headers = self._guard(lambda: parsed.where("header").select("file", "fields").collect())
            if not headers:
                raise InputError(f"{inp.source}: empty file, no header with columns")
            columns = {
                row["file"]: long._header(
                    row["fields"][0],
                    self._shown(row["file"]),
                    inp.sep,
                    inp.record_col,
                    inp.item_col,
                )
                for row in headers
            }
            data = parsed.where(~F.col("header"))
            pairs = quiet(
                lambda: data.mapInArrow(
                    functools.partial(read.long_pairs, columns=columns),
                    "rid string, item string, file string, block long, line long",
                )
            )
        grouped = pairs.groupBy("rid").agg(
            F.collect_list(F.struct("item", "file", "block", "line")).alias("rows")
        )
        return quiet(
            lambda: grouped.select("rows").mapInArrow(
                functools.partial(read.grouped_blocks, universe=inp.universe), "blob binary"
            )
        )

    # --- errors --------------------------------------------------------------------------------

    def _shown(self, file: str) -> str:
        """How an error names a file: the input as given when it is one file."""
        src = self._inp.source
        plain = byte_ranges.shown(file)
        if os.path.isfile(src) and os.path.realpath(src) == os.path.realpath(plain):
            return src
        return plain

    def _guard(self, call: Callable[[], T]) -> T:
        """Run a Spark job; a data error from the executors becomes an InputError naming the
        file and line, a missing path a usage error, an unreadable input a data error."""
        try:
            return quiet(call)
        except Exception as exc:  # py4j and pyspark raise several unrelated types
            raise self._translate(exc) from None

    def _translate(self, exc: Exception) -> Exception:
        text = str(exc)
        found = re.search(re.escape(read.MARK) + r"(.*?)" + re.escape(read.MARK), text, re.S)
        if found:
            info = json.loads(found.group(1))
            if info["file"] == read.FRAME:  # a DataFrame's bad value, as frames.py refuses it
                return RecordValueError(info["message"])
            shown = self._shown(info["file"])
            line = info["line"]
            if line is None:
                return InputError(f"{shown}: {info['message']}")
            return InputError(f"{shown}:{self._line_number(info, line)}: {info['message']}")
        if "PATH_NOT_FOUND" in text or "Path does not exist" in text:
            return InputNotFoundError(f"{self._inp.source}: no such file", self._inp.source)
        causes = re.findall(
            r"Caused by: ((?:java\.io|java\.util\.zip|org\.apache\.parquet)[^\n]*)", text
        )
        if causes or "FAILED_READ_FILE" in text:
            detail = causes[-1] if causes else "damaged or unreadable file"
            return InputError(f"{self._inp.source}: cannot read the input ({detail.strip()[:200]})")
        return exc

    def _line_number(self, info: dict[str, Any], line: int) -> int:
        """The line number in its file: lines of earlier splits of the file counted first."""
        if not info["block"] or self._lines is None:
            return line
        from pyspark.sql import functions as F

        earlier = self._lines.where(
            (F.col("file") == info["file"]) & (F.col("block") < info["block"])
        )
        return int(earlier.count()) + line


def _plain(source: str) -> str:
    name = source.rstrip("/").lower()
    for suffix in (".gz", ".bz2", ".xz"):
        name = name.removesuffix(suffix)
    return name


def count_file(
    inp: SparkInput,
    size: int,
    *,
    master: str | None = None,
    conf: Mapping[str, str] | None = None,
    timings: dict[str, float] | None = None,
) -> SparkCounts:
    """Read `inp` on Spark and return its counts; the records stay on the executors.

    timings: receives the session's start-up time (curator diagnostics, never the result)."""
    check_source(inp.source)
    if FORMATS[inp.fmt].needs_columns and (inp.record_col is None or inp.item_col is None):
        raise ParameterError(f"--format {inp.fmt} needs --record-col and --item-col")
    if inp.max_record_items is not None and inp.max_record_items < 1:
        raise ParameterError(f"--max-record-items must be >= 1, got {inp.max_record_items}")
    started = time.perf_counter()
    spark = session(master, conf)
    if timings is not None:
        timings["spark start-up"] = time.perf_counter() - started
    return SparkCounts(spark, inp, size)


def check_source(source: str, compression: str = "auto") -> None:
    """Usage errors Spark would otherwise report late or not at all (and pyspark missing)."""
    require_pyspark()
    if source == "-":
        raise ParameterError(
            "--engine spark reads a path (a file, a directory of part files, hdfs://, s3a://), "
            "not stdin"
        )
    if compression != "auto":
        raise ParameterError(
            "--engine spark decompresses by the file extension (Spark's codecs: .gz, .bz2); "
            "--compression is for --engine local"
        )
    name = source.rstrip("/").lower()
    if name.endswith(".xz"):
        raise ParameterError(
            f"{source}: Spark cannot read xz; recompress as .gz or .bz2 (or use --engine local)"
        )
    if "://" not in source and not os.path.exists(source) and not any(c in source for c in "*?["):
        raise InputNotFoundError(f"{source}: no such file", source)


def check_frame(frame: Any, items_col: str) -> None:
    """Usage errors about a DataFrame of baskets, from its schema only (no Spark job)."""
    require_pyspark()
    from pyspark.sql import DataFrame
    from pyspark.sql.types import ArrayType, StringType

    if not isinstance(frame, DataFrame):
        raise InputShapeError(f"not a Spark DataFrame: {type(frame).__name__}")
    if type(frame).__module__.startswith("pyspark.sql.connect"):
        raise ParameterError(
            "a Spark Connect DataFrame is not read yet (the Spark engine needs the classic "
            "session's SparkContext)"
        )
    if items_col not in frame.columns:
        shown = ", ".join(frame.columns[:10])
        raise InputArgumentError(
            f"the DataFrame has no column {items_col!r} (items_col={items_col!r}; columns: {shown})"
        )
    dtype = frame.schema[items_col].dataType
    if not (isinstance(dtype, ArrayType) and isinstance(dtype.elementType, StringType)):
        raise InputShapeError(
            f"column {items_col!r} has type {dtype.simpleString()}: a Spark DataFrame is read "
            "as one basket a row from an array<string> column (cast it, e.g. "
            f"F.col({items_col!r}).cast('array<string>'))"
        )


class _SparkEngine:
    """Reads and counts on Spark; the records stay on the executors."""

    name = "spark"
    # one record a line: the format's own line reader on the workers (read.py); long: Spark's
    # CSV/Parquet readers, grouped by record id on the cluster (SparkCounts._read_long)
    formats = frozenset(n for n, f in FORMATS.items() if not f.needs_columns) | {"long"}

    def check(self, inp: InputSpec) -> None:
        if inp.frame is not None:
            check_frame(inp.frame, inp.items_col or "items")
            return
        check_source(inp.source, inp.compression)

    def open(
        self,
        inp: InputSpec,
        sizes: Sequence[int],
        spec: EngineSpec,
        warn: Callable[[str], None],
        rng: RandomSource,
    ) -> Opened:
        """rng is not used for a file: truncation draws on the executors, per block, from the
        OS CSPRNG (or, under --seed, from a source derived from the seed and the block); for a
        DataFrame (inp.frame) it draws the truncation key (_open_frame)."""
        from dpfim.readers import default_sep, describe_paths
        from dpfim.views import Merged

        timings: dict[str, float] = {}
        t0 = time.perf_counter()
        if inp.frame is not None:
            first = self._open_frame(inp, min(sizes), spec, rng)
        else:
            first = count_file(
                SparkInput(
                    inp.source,
                    inp.decided,
                    default_sep(inp.source, inp.sep),
                    inp.record_col,
                    inp.item_col,
                    inp.universe,
                    inp.max_record_items,
                    inp.seed,
                ),
                min(sizes),
                master=spec.master,
                conf=spec.conf,
                timings=timings,
            )
        engines = [first] + [first.with_size(r) for r in sizes if r != min(sizes)]
        engines.sort(key=lambda e: e.size)
        timings["read"] = time.perf_counter() - t0
        counts: Counts = engines[0] if len(engines) == 1 else Merged(engines)

        read_by: dict[str, Any] = {}
        if inp.frame is None and not FORMATS[inp.decided].needs_columns:  # dpfim's readers
            paths = dict(sorted(first.paths.items(), key=lambda kv: (-kv[1], kv[0])))
            read_by["read by"] = f"{inp.source} ({inp.decided}): {describe_paths(paths)}"

        def facts() -> dict[str, Any]:
            return {**read_by, "counting jobs": sum(e.passes for e in engines)}

        return Opened(
            counts,
            usable=first.usable,
            close=first.close,
            facts=facts,
            timings=timings,
            distinct_items=lambda: int(first._guard(lambda: first._supports.count())),
            longest_record=lambda: (
                int(first._guard(lambda: first._blocks.map(count.longest).max())) if first.n else 0
            ),
        )

    def _open_frame(
        self, inp: InputSpec, size: int, spec: EngineSpec, rng: RandomSource
    ) -> SparkCounts:
        """A DataFrame of baskets, counted in the frame's own session (none is started). The
        truncation key is drawn here as mine() draws it for in-memory records (from the seed,
        else from `rng`), so a seeded run keeps the same items on both engines."""
        if spec.master is not None or spec.conf:
            raise ParameterError(
                "a Spark DataFrame is counted in its own session: drop --spark-master and "
                "--spark-conf"
            )
        key = None
        if inp.max_record_items is not None:
            key = truncation_key(seed=inp.seed, rng=rng)
        return SparkCounts(
            inp.frame.sparkSession,
            SparkInput(
                read.FRAME,
                "",
                "",
                universe=inp.universe,
                max_record_items=inp.max_record_items,
                seed=inp.seed,
                truncation_key=key,
                frame=inp.frame,
                items_col=inp.items_col or "items",
            ),
            size,
        )


ENGINE = _SparkEngine()
