"""A recomputed partition must not redraw its --max-record-items truncation (issue 19 point 4).

Spark recomputes a partition from its lineage when a task is retried, when a speculative copy
runs, or when an executor is lost before the blocks' local checkpoint is written. If truncation
drew afresh from the OS CSPRNG each time, two counting passes of one run could see different
truncated records (a record's kept items counted once under one sample and once under another).
Here the lineage of a real run's blocks is computed a second time, as Spark would, and both must
hold exactly the same truncated records; a new run must still draw a new sample. (Truncation is a
function of the record and the run's secret key, readers.records.truncate; this test failed when
each block drew from a fresh CSPRNG source on the executor.)
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from test_spark_engine import spark_counts

from dpfim.engines.spark import SparkCounts

pytestmark = pytest.mark.slow  # whole-file or Spark tests: CI runs them, the quick loop does not


def records_in_order(blocks: Any) -> list[tuple[str, ...]]:
    """Every record of an RDD of blocks, in partition, block and record order."""
    out = []
    for block in blocks.collect():
        recs = block.records
        out.extend(tuple(sorted(recs.record(k))) for k in range(recs.n))
    return out


def long_records(tmp_path: Path) -> Path:
    """2000 records of 12 items each, over four files (several partitions and blocks)."""
    folder = tmp_path / "parts"
    folder.mkdir(parents=True)
    for part in range(4):
        lines = [
            " ".join(str((part * 7919 + r * 31 + k * 101) % 400) for k in range(12))
            for r in range(500)
        ]
        (folder / f"part-{part}.dat").write_text("\n".join(lines) + "\n")
    return folder


def test_a_recomputed_partition_truncates_as_before(spark: Any, tmp_path: Path) -> None:
    counts: SparkCounts = spark_counts(long_records(tmp_path), 2, fmt="fimi", max_record_items=3)
    again = None
    try:
        assert counts._blocks.getNumPartitions() > 1
        first = records_in_order(counts._blocks)  # the cached, checkpointed blocks
        again = counts._read()  # the same lineage computed again, as a retried task runs it
        second = records_in_order(again)
        assert len(first) == 2000 and all(len(r) == 3 for r in first)
        assert second == first  # no record redrew its sample
        other = spark_counts(long_records(tmp_path / "b"), 2, fmt="fimi", max_record_items=3)
        try:  # a new run draws a new sample (the same sample has chance 220**-2000)
            assert records_in_order(other._blocks) != first
        finally:
            other.close()
    finally:
        counts.close()
        if again is not None:
            again.unpersist()
