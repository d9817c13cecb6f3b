"""In-memory inputs of the Python API (issue 21, point 1): every accepted shape gives the same
seeded result as the list of baskets it encodes; every other shape raises an exception that is
both a DpfimError and a TypeError/ValueError, naming the accepted shapes."""

from __future__ import annotations

from decimal import Decimal
from fractions import Fraction
from typing import Any

import numpy as np
import pandas as pd
import pytest
from mlxtend.preprocessing import TransactionEncoder

import dpfim
from dpfim.errors import (
    DpfimError,
    InputArgumentError,
    InputShapeError,
    ParameterError,
    RecordValueError,
)
from dpfim.params import check_fraction
from dpfim.readers.frames import to_records

# items of each basket in column (sorted) order, as TransactionEncoder's columns; the top
# pairs are well separated so that eps = 2 answers, and several sizes exercise the ties
BASKETS = (
    [["beer", "chips", "milk"]] * 3000
    + [["bread", "milk"]] * 2000
    + [["beer", "chips"]] * 1200
    + [["bread"]] * 500
    + [[]] * 100
)
KW: dict[str, Any] = {"eps": "2", "delta": "1e-6", "top": 3, "sizes": "1-2", "rng": 7}


def _one_hot(baskets: list[list[str]], *, sparse: bool = False) -> pd.DataFrame:
    te = TransactionEncoder()
    arr = te.fit(baskets).transform(baskets, sparse=sparse)
    if sparse:
        return pd.DataFrame.sparse.from_spmatrix(arr, columns=te.columns_)
    return pd.DataFrame(arr, columns=te.columns_)


def _mine(data: object, **kw: Any) -> dict[str, Any]:
    out = dpfim.mine(data, **{**KW, **kw})
    out.pop("created")
    return out


@pytest.fixture(scope="module")
def expected() -> dict[str, Any]:
    out = _mine(BASKETS)
    assert len(out["itemsets"]) == 3  # an answer, so that equal results mean something
    return out


def test_expected_is_the_data() -> None:
    # milk (5000) leads beer, chips and {beer, chips} (4200 each, tied) by 800 records
    out = _mine(BASKETS)
    assert out["itemsets"][0]["items"] == ["milk"]
    assert {tuple(e["items"]) for e in out["itemsets"][1:]} <= {
        ("beer",),
        ("chips",),
        ("beer", "chips"),
    }


@pytest.mark.parametrize(
    "make",
    [
        pytest.param(lambda: _one_hot(BASKETS), id="one-hot bool (TransactionEncoder)"),
        pytest.param(lambda: _one_hot(BASKETS).astype(int), id="one-hot 0/1 int64"),
        pytest.param(lambda: _one_hot(BASKETS).astype("uint8"), id="one-hot 0/1 uint8"),
        pytest.param(lambda: _one_hot(BASKETS).astype("boolean"), id="one-hot nullable bool"),
        pytest.param(lambda: _one_hot(BASKETS, sparse=True), id="one-hot sparse bool (mlxtend)"),
        pytest.param(
            lambda: _one_hot(BASKETS).astype(pd.SparseDtype(int, 0)), id="one-hot sparse 0/1"
        ),
        pytest.param(lambda: pd.Series(BASKETS), id="Series of lists"),
        pytest.param(lambda: pd.Series([tuple(b) for b in BASKETS]), id="Series of tuples"),
        pytest.param(lambda: (list(b) for b in BASKETS), id="generator of baskets"),
        pytest.param(lambda: [tuple(b) for b in BASKETS], id="list of tuples"),
    ],
)
def test_every_shape_gives_the_baskets_seeded_result(make: Any, expected: dict[str, Any]) -> None:
    assert _mine(make()) == expected


def test_long_frame_gives_the_baskets_seeded_result(expected: dict[str, Any]) -> None:
    # an empty basket has no row in a long frame (it is simply absent)
    rows = [(k, item) for k, b in enumerate(BASKETS) for item in b]
    df = pd.DataFrame(rows, columns=["customer", "product"])
    long = _mine(df, record_col="customer", item_col="product")
    assert long == _mine([b for b in BASKETS if b])
    assert long["itemsets"] == expected["itemsets"]  # empty baskets support no itemset


def test_long_frame_groups_by_record_id() -> None:
    """Rows of one record need not be adjacent; ids are compared as trimmed strings, items
    are kept as spelled (they must match the caller's data)."""
    rows = [("7", "a"), (" 9", "b"), ("7", "c "), (9, "a"), ("7", "a"), ("8", "d")]
    df = pd.DataFrame(rows, columns=["r", "i"])
    recs = to_records(df, record_col="r", item_col="i")
    assert [recs.record(k) for k in range(recs.n)] == [{"a", "c "}, {"b", "a"}, {"d"}]


def test_columns_are_not_a_declared_vocabulary(expected: dict[str, Any]) -> None:
    """All-zero columns are absent items: adding them changes nothing (the open universe)."""
    df = _one_hot(BASKETS)
    df.insert(0, "aardvark", False)
    df["zebra"] = 0
    assert _mine(df) == expected
    assert _mine(df)["params"]["universe"] == "open"


def test_universe_declared_explicitly() -> None:
    df = _one_hot(BASKETS)
    a = _mine(df, universe=["milk", "bread", "beer", "chips", "ghost"])
    b = _mine(BASKETS, universe=["milk", "bread", "beer", "chips", "ghost"])
    assert a == b
    assert a["params"]["universe"]["declared_items"] == 5


# ---- every wrong shape raises, naming the accepted shapes --------------------------------


def _raises(data: object, kind: type[Exception], **kw: Any) -> str:
    with pytest.raises(DpfimError) as info:
        dpfim.mine(data, eps=1, delta="1e-6", **kw)
    assert isinstance(info.value, kind), type(info.value)
    return str(info.value)


STRINGS = pd.DataFrame({"customer": ["1", "1", "2"], "product": ["milk", "bread", "milk"]})


@pytest.mark.parametrize(
    ("data", "kind", "kw"),
    [
        pytest.param(STRINGS, TypeError, {}, id="frame of strings without record_col"),
        pytest.param(_one_hot(BASKETS).to_numpy(), TypeError, {}, id="numpy bool array"),
        pytest.param(np.array([["a", "b"], ["c", "d"]]), TypeError, {}, id="numpy str array"),
        pytest.param(_one_hot(BASKETS).astype(float), TypeError, {}, id="one-hot float frame"),
        pytest.param(
            _one_hot(BASKETS).astype(object), TypeError, {}, id="0/1 values in object columns"
        ),
        pytest.param(pd.Series(["milk", "bread"]), TypeError, {}, id="Series of strings"),
        pytest.param(
            pd.Series(["milk", "bread"], dtype="string"), TypeError, {}, id="Series string dtype"
        ),
        pytest.param("milk,bread", TypeError, {}, id="a string"),
        pytest.param({"milk": 1}, TypeError, {}, id="a dict"),
        pytest.param(42, TypeError, {}, id="an int"),
        pytest.param(pd.Index(["a"]), TypeError, {}, id="a pandas Index"),
        pytest.param(
            BASKETS, ValueError, {"record_col": "c", "item_col": "i"}, id="record_col on a list"
        ),
        pytest.param(STRINGS, ValueError, {"record_col": "customer"}, id="record_col only"),
        pytest.param(
            STRINGS, ValueError, {"record_col": "customer", "item_col": "x"}, id="missing column"
        ),
    ],
)
def test_wrong_shape_raises(data: object, kind: type[Exception], kw: dict[str, Any]) -> None:
    message = _raises(data, kind, **kw)
    assert isinstance(kind, type)
    if kind is TypeError:
        assert "one-hot DataFrame" in message and "record_col=" in message


@pytest.mark.parametrize(
    "data",
    [
        pytest.param(["milk", "bread"], id="flat list of strings"),
        pytest.param([["milk"], "bread"], id="one basket a string"),
        pytest.param([["milk"], 3], id="one basket an int"),
        pytest.param(pd.Series([["milk"], "bread"]), id="Series with a string element"),
        pytest.param(pd.DataFrame({"a": [0, 1, 2]}), id="one-hot int with a 2"),
        pytest.param(pd.DataFrame({"a": [0, -1]}), id="one-hot int with a -1"),
        pytest.param(
            pd.DataFrame({"a": pd.array([True, None], dtype="boolean")}), id="one-hot with NA"
        ),
        pytest.param(
            pd.DataFrame({"a": [0, 2]}).astype(pd.SparseDtype(int, 0)), id="sparse with a 2"
        ),
        pytest.param(
            pd.DataFrame({"r": [1, None], "i": ["a", "b"]}), id="long frame missing record id"
        ),
    ],
)
def test_bad_value_is_a_data_error(data: object) -> None:
    kw = {"record_col": "r", "item_col": "i"} if "r" in getattr(data, "columns", ()) else {}
    _raises(data, ValueError, **kw)
    with pytest.raises(RecordValueError) as info:
        dpfim.mine(data, eps=1, delta="1e-6", **kw)
    assert info.value.exit_code == 3  # a data error, like a line that does not parse


def test_error_classes_map_to_exit_codes() -> None:
    assert issubclass(InputShapeError, ParameterError) and InputShapeError.exit_code == 2
    assert issubclass(InputArgumentError, ParameterError) and InputArgumentError.exit_code == 2
    assert issubclass(RecordValueError, ValueError) and RecordValueError.exit_code == 3


def test_flat_list_message_names_the_shapes() -> None:
    message = _raises(["milk", "bread"], ValueError)
    assert "flat list of strings" in message and "one-hot DataFrame" in message


# ---- eps / delta as float, Decimal, Fraction -------------------------------------------


@pytest.mark.parametrize(
    ("value", "exact"),
    [
        (0.1, Fraction(1, 10)),
        (1.0, Fraction(1)),
        (1e-06, Fraction(1, 10**6)),
        (0.3, Fraction(3, 10)),  # not 5404319552844595/18014398509481984
        (Decimal("0.1"), Fraction(1, 10)),
        (Fraction(1, 3), Fraction(1, 3)),
        ("1/3", Fraction(1, 3)),
        (np.float64(0.5), Fraction(1, 2)),
    ],
)
def test_numbers_read_exactly(value: object, exact: Fraction) -> None:
    assert check_fraction(value, "eps") == exact  # type: ignore[arg-type]


@pytest.mark.parametrize("value", [float("nan"), float("inf"), Decimal("NaN"), True, [1]])
def test_bad_numbers_refused(value: object) -> None:
    with pytest.raises(ParameterError):
        check_fraction(value, "eps")  # type: ignore[arg-type]


def test_float_eps_in_mine() -> None:
    a = dpfim.mine(BASKETS, eps=2.0, delta=1e-6, rng=1)
    b = dpfim.mine(BASKETS, eps="2", delta=Decimal("0.000001"), rng=1)
    a.pop("created"), b.pop("created")
    assert a == b
