"""A Spark DataFrame of baskets in the Python API: counted by the Spark engine in the frame's
own session, with the same counts, ties and seeded release as the same baskets in a list."""

from __future__ import annotations

import random
from typing import Any

import pytest

import dpfim
from dpfim import engines
from dpfim.engines.spark import SparkCounts, SparkInput
from dpfim.engines.spark.read import FRAME
from dpfim.errors import InputArgumentError, InputShapeError, ParameterError, RecordValueError
from dpfim.inputs import EngineSpec, InputSpec
from dpfim.readers.frames import from_baskets

pytestmark = pytest.mark.slow

EPS, DELTA = "1", "1e-6"


def _baskets(n: int = 400, seed: int = 7) -> list[list[str]]:
    """Skewed baskets with repeated items and empty baskets: 53 distinct pairs share 22
    supports, so the pair counts' tie order is tested."""
    rnd = random.Random(seed)
    items = [f"i{k}" for k in range(12)]
    out = []
    for _ in range(n):
        k = rnd.randrange(0, 6)
        basket = [items[min(int(rnd.expovariate(0.4)), 11)] for _ in range(k)]
        out.append(basket)
    return out


def _frame(spark: Any, baskets: list[list[str]], parts: int = 3, col: str = "items") -> Any:
    from pyspark.sql.types import ArrayType, StringType, StructField, StructType

    schema = StructType([StructField(col, ArrayType(StringType()))])
    return spark.createDataFrame([(b,) for b in baskets], schema).repartition(parts)


def _local_counts(baskets: list[list[str]], size: int) -> Any:
    from dpfim.engines.local import count_records

    return count_records(from_baskets(baskets), (size,)).counts


def _spark_counts(df: Any, size: int) -> SparkCounts:
    inp = SparkInput(FRAME, "", "", frame=df)
    return SparkCounts(df.sparkSession, inp, size)


@pytest.mark.parametrize("size", [1, 2])
def test_counts_and_tie_order_equal_the_local_engines(spark: Any, size: int) -> None:
    """Every support >= 1, in the same order (ties by first appearance in the frame's row
    order, which collect() shows), under the same item names."""
    df = _frame(spark, _baskets())
    rows = [list(r["items"]) for r in df.collect()]  # the frame's own row order
    local = _local_counts(rows, size)
    counts = _spark_counts(df, size)
    try:
        local.lower_to(1)
        counts.lower_to(1)
        assert local.complete and counts.complete
        assert counts.n == local.n == len(rows)
        assert list(counts.counts) == list(local.counts)
        named = [[counts.items[i] for i in row] for row in counts.itemsets]
        assert named == [[local.items[i] for i in row] for row in local.itemsets]
    finally:
        counts.close()


def test_frequent_itemsets_seeded_release_equals_the_list_ones(spark: Any) -> None:
    df = _frame(spark, _baskets(2000))
    rows = [list(r["items"]) for r in df.collect()]
    # eps 4 on 2,000 baskets: five itemsets of sizes 1 and 2 released (not an empty frame)
    kw: dict[str, Any] = {"eps": "4", "delta": DELTA, "top": 5, "sizes": "1-2", "rng": 11}
    local = dpfim.frequent_itemsets(rows, **kw)
    on_spark = dpfim.frequent_itemsets(df, **kw)
    assert len(local) == 5 and on_spark.equals(local)
    a, b = dict(local.attrs["result"]), dict(on_spark.attrs["result"])
    assert b["params"].pop("engine") == "spark" and a["params"].pop("engine") == "local"
    a.pop("created"), b.pop("created")
    assert a == b


def test_a_record_cap_keeps_the_same_items_and_items_col_names_the_column(spark: Any) -> None:
    """--max-record-items truncates the same items as mine() does on a list (the same key from
    the seed), duplicates in a row count once, and items_col names the column (FPGrowth's
    itemsCol)."""
    from dpfim.engines.local import count_records
    from dpfim.readers.records import truncate, truncation_key

    baskets = [[f"x{k % 9}" for k in range(j, j + 7)] + ["x0", "x0"] for j in range(60)]
    df = _frame(spark, baskets, parts=2, col="basket")
    rows = [list(r["basket"]) for r in df.collect()]
    capped = truncate(from_baskets(rows), 3, truncation_key(seed=5))
    local = count_records(capped, (2,)).counts
    inp = SparkInput(FRAME, "", "", max_record_items=3, seed=5, frame=df, items_col="basket")
    counts = SparkCounts(spark, inp, 2)
    try:
        local.lower_to(1)
        counts.lower_to(1)
        assert list(counts.counts) == list(local.counts)
        named = [[counts.items[i] for i in row] for row in counts.itemsets]
        assert named == [[local.items[i] for i in row] for row in local.itemsets]
    finally:
        counts.close()
    kw: dict[str, Any] = {"eps": "8", "delta": DELTA, "size": 1, "max_record_items": 3, "rng": 5}
    on_spark = dpfim.mine(df, items_col="basket", **kw)
    assert on_spark["itemset"] == dpfim.mine(rows, **kw)["itemset"] is not None


def test_null_values_are_refused_as_in_memory(spark: Any) -> None:
    with pytest.raises(RecordValueError, match=r"missing value .* is not an item"):
        dpfim.mine(_frame(spark, [["a"], ["b", None]], parts=1), eps=EPS, delta=DELTA, rng=1)
    with pytest.raises(RecordValueError, match="null array is not a basket"):
        dpfim.mine(_frame(spark, [["a"], None], parts=1), eps=EPS, delta=DELTA, rng=1)  # type: ignore[list-item]


def test_usage_errors_before_any_job(spark: Any) -> None:
    df = _frame(spark, [["a", "b"]], parts=1)
    with pytest.raises(InputArgumentError, match="no column 'basket'"):
        dpfim.mine(df, items_col="basket", eps=EPS, delta=DELTA)
    ints = spark.createDataFrame([([1, 2],)], "items array<int>")
    with pytest.raises(InputShapeError, match=r"array<int>.*array<string>"):
        dpfim.mine(ints, eps=EPS, delta=DELTA)
    with pytest.raises(InputArgumentError, match="long one"):
        dpfim.mine(df, record_col="r", item_col="i", eps=EPS, delta=DELTA)
    with pytest.raises(ParameterError, match="max_memory"):
        dpfim.mine(df, max_memory="1G", eps=EPS, delta=DELTA)
    with pytest.raises(InputArgumentError, match="items_col= names"):
        dpfim.mine([["a"]], items_col="items", eps=EPS, delta=DELTA)


def test_the_local_engine_refuses_a_frame(spark: Any) -> None:
    df = _frame(spark, [["a", "b"]], parts=1)
    inp = InputSpec("<DataFrame>", "auto", frame=df, items_col="items")
    with pytest.raises(ParameterError, match="--engine local does not read a Spark DataFrame"):
        engines.prepare(EngineSpec("local"), inp)
