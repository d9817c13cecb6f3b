"""`dpfim evaluate`: the table's columns mean what they say, on data whose answer is known."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest
from test_cli import run

from dpfim import evaluate as ev
from dpfim.readers import from_transactions


def _records(lead: int) -> list[list[str]]:
    """Top pair (a, b) with count 40 + lead, runner-up (c, d) with 40."""
    return [["a", "b"]] * (40 + lead) + [["c", "d"]] * 40 + [["e", "f"], ["g"]] * 5


def test_a_clear_winner_is_always_found_and_a_tie_is_found_half_way() -> None:
    clear = ev.evaluate(
        from_transactions(_records(600)),
        size=2,
        eps_values=["2"],
        delta="1e-6",
        mechanisms=["lmm", "em", "stability"],
        trials=30,
        rng=1,
    )
    assert list(clear.columns) == list(ev.COLUMNS)
    assert (clear["p_top"] == 1).all() and (clear["mean_gap"] == 0).all()
    assert clear.loc[clear.mechanism == "lmm", "median_ell"].item() == 1
    close = ev.evaluate(
        from_transactions(_records(1)),
        size=2,
        eps_values=["1"],
        delta="1e-6",
        mechanisms=["lmm", "em"],
        trials=200,
        rng=2,
    )
    lmm = close[close.mechanism == "lmm"].iloc[0]
    em = close[close.mechanism == "em"].iloc[0]
    assert lmm.none_rate == 1  # a lead of 1 is far below any certifiable margin
    # em (monotone form, weights e^c): P(top) = e/(e + 1 + ...) ~ 0.73; gap is 1 when not top
    assert 0.55 < em.p_top < 0.9 and em.p90_gap == 1


def test_replace_skips_add_remove_only_mechanisms() -> None:
    p = ev.plan(["lmm", "lmm-gap", "choosing", "em"], "replace")
    assert p.mechanisms == ("lmm", "em")
    assert [m for m, _ in p.skipped] == ["lmm-gap", "choosing"]


def test_cli_writes_csv_and_plot(tmp_path: Path) -> None:
    data = tmp_path / "b.csv"
    data.write_text("\n".join(",".join(r) for r in _records(300)) + "\n")
    out_csv, out_png = tmp_path / "t.csv", tmp_path / "t.png"
    code, out, err = run(
        [
            "evaluate",
            str(data),
            "--eps",
            "0.5,2",
            "--trials",
            "5",
            "--seed",
            "3",
            "--mechanisms",
            "lmm,lmm-gap,limited-domain",
            "--csv",
            str(out_csv),
            "--plot",
            str(out_png),
        ]
    )
    assert code == 0, err
    assert "NOT PRIVATE" in err and out == ""
    lines = out_csv.read_text().splitlines()
    assert lines[0].startswith("# NOT PRIVATE")
    rows = list(csv.DictReader(lines[1:]))
    assert len(rows) == 6 and {r["mechanism"] for r in rows} == {"lmm", "lmm-gap", "limited-domain"}
    assert out_png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.mark.parametrize(
    "extra,message",
    [
        (["--mechanisms", "lmm,bogus"], "unknown bogus"),
        (["--eps", "1,x"], "--eps"),
        (["--trials", "0"], "--trials"),
        (["--universe-size", "1"], "--universe-size"),
        (["--plot", "/nonexistent/x.png"], "--plot /nonexistent/x.png"),
    ],
)
def test_bad_options_are_one_line_usage_errors(
    tmp_path: Path, extra: list[str], message: str
) -> None:
    data = tmp_path / "b.csv"
    data.write_text("a,b\n")
    code, out, err = run(["evaluate", str(data), *extra])
    assert code == 2 and out == ""
    assert message in err and len(err.strip().splitlines()) == 1
