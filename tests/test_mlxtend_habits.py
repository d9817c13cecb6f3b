"""The Python API keeps mlxtend's habits: the behaviours of mlxtend's frequent-pattern suite
(mlxtend/frequent_patterns/tests/test_fpbase.py: shapes, types, errors, keywords) run against
dpfim.frequent_itemsets, with a large eps, delta 1e-6 and a fixed seed; plus the exceptions,
names and empty frames a pandas user of mlxtend expects.

Ported and passing: FPTestEdgeCases.test_empty; FPTestErrors.test_itemsets_type,
test_raise_error_if_input_is_not_binary (the exception type, not mlxtend's wording),
test_sparsedataframe_notzero_column (dpfim also reads what mlxtend refuses there);
FPTestEx1.test_frozenset_selection and test_sparse (shapes and equality, not which itemsets),
test_sparse_with_zero (whole frames: equal data, equal seeded release);
FPTestEx1All.test_low_memory_flag (no such keyword, and dpfim refuses it rather than ignore it).
Skipped, with the reason in each: what DP rightly changes (exact supports, which itemsets
appear) and the keywords dpfim does not offer (max_len, min_support).
"""

from __future__ import annotations

import inspect
from typing import Any

import numpy as np
import pandas as pd
import pytest
from mlxtend.frequent_patterns import association_rules as mlx_rules
from mlxtend.frequent_patterns import fpgrowth
from scipy.sparse import csr_matrix

import dpfim
from dpfim.errors import InputNotFoundError, ParameterError, RecordValueError

EPS, DELTA, SEED = 50, "1e-6", 7

# mlxtend's example: 5 transactions, 11 items (FPTestEx1, FPTestErrors)
ONE_ARY = np.array(
    [
        [0, 0, 0, 1, 0, 1, 1, 1, 1, 0, 1],
        [0, 0, 1, 1, 0, 1, 0, 1, 1, 0, 1],
        [1, 0, 0, 1, 0, 1, 1, 0, 0, 0, 0],
        [0, 1, 0, 0, 0, 1, 1, 0, 0, 1, 1],
        [0, 1, 0, 1, 1, 1, 0, 0, 1, 0, 0],
    ]
)
COLS = [
    "Apple",
    "Corn",
    "Dill",
    "Eggs",
    "Ice cream",
    "Kidney Beans",
    "Milk",
    "Nutmeg",
    "Onion",
    "Unicorn",
    "Yogurt",
]
# the same rows weighted 500..100 times: 1,500 records with distinct supports, so that a
# private release is not empty (5 records are far below any margin at delta 1e-6)
WEIGHTS = [500, 400, 300, 200, 100]


def _fi(data: Any, **kw: Any) -> pd.DataFrame:
    frame: pd.DataFrame = dpfim.frequent_itemsets(data, eps=EPS, delta=DELTA, rng=SEED, **kw)
    return frame


def _df() -> pd.DataFrame:
    return pd.DataFrame(ONE_ARY, columns=COLS)


def _weighted(cols: list[str] = COLS) -> pd.DataFrame:
    return pd.DataFrame(np.repeat(ONE_ARY, WEIGHTS, axis=0), columns=cols)


def _same(a: pd.DataFrame, b: pd.DataFrame) -> None:
    """Equal frames: the same rows in the same order (mlxtend's compare_dataframes, exactly)."""
    assert list(a.columns) == list(b.columns) == ["support", "itemsets"]
    assert list(a["itemsets"]) == list(b["itemsets"])
    assert list(a["support"]) == list(b["support"])


# ---- FPTestEdgeCases ------------------------------------------------------------------------


def test_empty() -> None:
    res = _fi(pd.DataFrame([[]]))
    assert res.shape == (0, 2)
    assert list(res.columns) == ["support", "itemsets"]
    assert res.dtypes.to_dict() == {"support": np.float64, "itemsets": object}


# ---- FPTestErrors ---------------------------------------------------------------------------


def test_itemsets_type() -> None:
    df = _weighted()
    positions = _fi(df, use_colnames=False)  # mlxtend's default
    names = _fi(df, use_colnames=True)
    assert len(positions) > 0
    assert all(isinstance(s, frozenset) for s in positions["itemsets"])
    assert all(isinstance(s, frozenset) for s in names["itemsets"])
    assert all(isinstance(i, int) and 0 <= i < len(COLS) for s in positions["itemsets"] for i in s)
    assert [frozenset(COLS[i] for i in s) for s in positions["itemsets"]] == list(names["itemsets"])
    _same(_fi(df), positions)  # the default is use_colnames=False, as mlxtend's


def test_raise_error_if_input_is_not_binary() -> None:
    """A ValueError, dense and sparse (dpfim's message names the row and column; mlxtend's
    says "The allowed values for a DataFrame are True, False, 0, 1. Found value 2")."""
    df2 = _df()
    df2.iloc[3, 3] = 2
    for frame in (df2, df2.astype(pd.SparseDtype("int", fill_value=0))):
        with pytest.raises(ValueError, match="value 2 in a one-hot frame"):
            _fi(frame)


def test_sparsedataframe_notzero_column() -> None:
    """Integer column names: mlxtend reads them from 0 and refuses them from 1 (a pandas
    limitation of its own); dpfim reads both, the same as string names."""
    named = _fi(_weighted().astype(pd.SparseDtype("int", 0)))
    for first in (0, 1):
        dfs = _weighted().astype(pd.SparseDtype("int", 0))
        dfs.columns = [i + first for i in range(len(dfs.columns))]
        _same(_fi(dfs), named)


# ---- FPTestEx1 ------------------------------------------------------------------------------


def test_frozenset_selection() -> None:
    for df in (_df(), _weighted()):
        res = _fi(df, use_colnames=True)
        assert res.values.shape == _fi(df).values.shape
        assert res[res["itemsets"] == "nothing"].values.shape == (0, 2)


def test_sparse() -> None:
    dense = _fi(_weighted(), use_colnames=True)
    assert len(dense) > 0
    for fill in (0, False):
        sdf = _weighted().astype(pd.SparseDtype(type(fill), fill_value=fill))
        res = _fi(sdf, use_colnames=True)
        assert res.values.shape == _fi(_weighted()).values.shape
        assert res[res["itemsets"] == "nothing"].values.shape == (0, 2)
        _same(res, dense)


def test_sparse_with_zero() -> None:
    """Explicitly stored zeros in a sparse frame are zeros: the same seeded release."""
    ary = np.repeat(ONE_ARY, WEIGHTS, axis=0)
    ary2 = ary.copy()
    ary2[3, :] = 1
    sparse = csr_matrix(ary2)
    sparse[3, :] = ary[3, :]  # stored entries that are now 0
    sdf = pd.DataFrame.sparse.from_spmatrix(sparse, columns=COLS)
    _same(_fi(sdf), _fi(_weighted()))


_DP_VALUES = (
    "DP changes the values: the release holds a private top-K's downward closure with noisy "
    "supports, not every itemset above min_support with its exact support"
)


@pytest.mark.skip(reason=f"FPTestEx1.test_frozenset_selection/test_sparse membership: {_DP_VALUES}")
def test_selection_holds_milk_and_kidney_beans() -> None:
    """mlxtend asserts {Milk, Kidney Beans} is among its 5-record example's itemsets."""


@pytest.mark.skip(reason=f"FPTestEx1All.test_default: {_DP_VALUES}")
def test_default_exact_supports() -> None:
    """mlxtend asserts the exact supports 0.8, 1.0, 0.6, ... of its example."""


@pytest.mark.skip(reason=f"FPTestEx2All.test_output (min_support=0.001): {_DP_VALUES}")
def test_output_exact_supports() -> None:
    """mlxtend asserts support 0.25 for each of a, b, c, d, e and {c, d}."""


def test_max_len() -> None:
    """mlxtend's max_len=2 bounds the itemsets' size (FPTestEx1All.test_max_len)."""
    assert _fi(_weighted(), max_len=2)["itemsets"].map(len).max() == 2


def test_min_support_zero_is_a_value_error() -> None:
    """mlxtend refuses min_support=0.0 with a ValueError (FPTestEx3All.test_output3)."""
    with pytest.raises(ValueError, match="min_support"):
        _fi(_weighted(), min_support=0.0)


def test_sizes_bound_the_size() -> None:
    """dpfim's counterpart of max_len: sizes='1-2' releases itemsets of at most 2 items."""
    df = _weighted()
    assert _fi(df)["itemsets"].map(len).max() == 3  # the default sizes 1-3
    assert _fi(df, sizes="1-2")["itemsets"].map(len).max() == 2


def test_low_memory_flag() -> None:
    """mlxtend runs this only for an algorithm with low_memory=; dpfim has none (nor verbose=)
    and refuses them rather than ignore them."""
    params = inspect.signature(dpfim.frequent_itemsets).parameters
    assert "low_memory" not in params and "verbose" not in params
    for kw in ({"low_memory": True}, {"verbose": 1}):
        with pytest.raises(TypeError, match="unexpected keyword"):
            _fi(_df(), **kw)


# ---- the exceptions a Python user catches ---------------------------------------------------


@pytest.mark.parametrize(
    ("kw", "message"),
    [
        ({"eps": 0}, "eps must be > 0"),
        ({"delta": 2}, "delta must be in (0, 1)"),
        ({"top": 0}, "top must be an integer"),
        ({"size": 9}, "size must be an integer"),
        ({"mechanism": "nope"}, "mechanism must be"),
        ({"max_record_items": "x"}, "max_record_items takes"),
        ({"closure_share": 1}, "closure_share must be in (0, 1)"),
    ],
)
def test_a_bad_keyword_is_a_value_error_naming_the_keyword(
    kw: dict[str, Any], message: str
) -> None:
    args: dict[str, Any] = {"eps": EPS, "delta": DELTA, "rng": SEED, **kw}
    for call in (dpfim.frequent_itemsets, dpfim.association_rules, dpfim.mine):
        if call is dpfim.mine and "closure_share" in kw:
            continue
        with pytest.raises(ValueError) as info:
            call(_weighted(), **args)
        assert isinstance(info.value, ParameterError) and info.value.exit_code == 2
        assert str(info.value).startswith(message), str(info.value)
        assert "--" not in str(info.value)


def test_a_bad_metric_is_a_value_error() -> None:
    with pytest.raises(ValueError, match=r"^metric must be one of"):
        dpfim.association_rules(_weighted(), eps=EPS, delta=DELTA, rng=SEED, metric="bogus")


def test_a_wrong_type_is_a_type_error() -> None:
    with pytest.raises(TypeError, match="numpy array has no item names"):
        _fi(np.repeat(ONE_ARY, WEIGHTS, axis=0))
    with pytest.raises(TypeError, match="use_colnames must be True or False"):
        _fi(_weighted(), use_colnames="yes")


def test_a_missing_path_is_a_file_not_found_error(tmp_path: Any) -> None:
    path = str(tmp_path / "nope.csv")
    for call in (dpfim.mine_file, dpfim.rules_file):
        with pytest.raises(FileNotFoundError) as info:
            call(path, eps=EPS, delta=DELTA, seed=SEED)
        exc = info.value
        assert isinstance(exc, InputNotFoundError) and exc.exit_code == 2
        assert str(exc) == f"{path}: no such file"  # the CLI's line, not "[Errno 2] ..."
        assert exc.filename == path


def test_the_cli_still_reports_a_missing_path_as_a_usage_error(tmp_path: Any) -> None:
    """InputNotFoundError is an OSError too; the CLI's dispatch still sends it to exit 2 with
    its message (its errno is none of the output errors' checked before DpfimError)."""
    from cli_run import run

    path = str(tmp_path / "nope.csv")
    code, out, err = run(["mine", path, "--eps", "1", "--delta", "1e-6"])
    assert (code, out, err) == (2, "", f"dpfim: error: {path}: no such file\n")
    code, out, err = run(["mine", "-", "--eps", "0", "--delta", "1e-6", "--format", "basket"])
    assert code == 2 and "--eps must be > 0" in err


# ---- names, missing items, empty frames -----------------------------------------------------

SPELLED = [" Apple", "Corn ", "Dill", "Eggs", "Ice  cream", "Kidney Beans ", *COLS[6:]]


def _shapes(cols: list[str]) -> dict[str, tuple[Any, dict[str, Any]]]:
    """The weighted example in every in-memory shape."""
    onehot = _weighted(cols)
    baskets = [[c for c, v in zip(cols, row, strict=True) if v] for row in onehot.to_numpy()]
    long = pd.DataFrame(
        [(k, item) for k, b in enumerate(baskets) for item in b], columns=["r", "i"]
    )
    return {
        "one-hot": (onehot, {"use_colnames": True}),
        "lists": (baskets, {}),
        "Series": (pd.Series(baskets), {}),
        "long": (long, {"record_col": "r", "item_col": "i"}),
    }


def test_item_names_are_kept_as_spelled() -> None:
    released = {}
    for shape, (data, kw) in _shapes(SPELLED).items():
        names = {i for s in _fi(data, **kw)["itemsets"] for i in s}
        assert names and names <= set(SPELLED), shape
        assert "Kidney Beans " in names, shape
        released[shape] = _fi(data, **kw)
    for frame in released.values():
        _same(frame, released["lists"])  # every shape: the same seeded release


@pytest.mark.parametrize("missing", [None, float("nan"), np.nan, pd.NA, pd.NaT])
def test_a_missing_item_is_refused_the_same_way_in_every_shape(missing: object) -> None:
    baskets: list[list[Any]] = [["a", "b"], ["a", missing]]
    long = pd.DataFrame({"r": [0, 0, 1, 1], "i": ["a", "b", "a", missing]}, dtype=object)
    cases = [(baskets, {}), (pd.Series(baskets), {}), (long, {"record_col": "r", "item_col": "i"})]
    for data, kw in cases:
        with pytest.raises(ValueError) as info:
            dpfim.mine(data, eps=EPS, delta=DELTA, rng=SEED, **kw)
        assert isinstance(info.value, RecordValueError)
        assert str(info.value).endswith(
            ": a missing value (None, NaN, NA or NaT) is not an item; drop it or name it"
        )


def test_empty_rules_have_mlxtend_columns_and_dtypes() -> None:
    ours = dpfim.association_rules(_df(), eps=EPS, delta=DELTA, rng=SEED)  # 5 records: none
    theirs = mlx_rules(
        fpgrowth(_df().astype(bool), min_support=0.5, use_colnames=True),
        num_itemsets=5,
        min_threshold=1.1,  # no rule reaches it
    )
    assert len(ours) == len(theirs) == 0
    assert list(ours.columns) == list(theirs.columns)
    assert ours.dtypes.to_dict() == theirs.dtypes.to_dict()


def test_empty_itemsets_have_mlxtend_columns_and_dtypes() -> None:
    ours = _fi(_df())  # 5 records: nothing clears a margin at delta 1e-6
    theirs = fpgrowth(_df().astype(bool), min_support=1.0)
    theirs = theirs[theirs["support"] > 1.0]  # mlxtend's frame, emptied
    assert len(ours) == 0
    assert list(ours.columns) == list(theirs.columns)
    assert ours.dtypes.to_dict() == theirs.dtypes.to_dict()
