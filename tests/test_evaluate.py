"""`dpfim evaluate`: the table's columns mean what they say, on data whose answer is known."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest
from cli_run import run

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
        neighbours="add-remove",
    )
    lmm = close[close.mechanism == "lmm"].iloc[0]
    em = close[close.mechanism == "em"].iloc[0]
    assert lmm.none_rate == 1  # a lead of 1 is far below any certifiable margin
    # em (monotone form, weights e^c): P(top) = e/(e + 1 + ...) ~ 0.73; gap is 1 when not top
    assert 0.55 < em.p_top < 0.9 and em.p90_gap == 1


def test_replace_skips_add_remove_only_mechanisms() -> None:
    p = ev.choose_mechanisms(["lmm", "lmm-gap", "choosing", "em"], "replace")
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
            "--neighbours",
            "add-remove",
            "--csv",
            str(out_csv),
            "--plot",
            str(out_png),
        ]
    )
    assert code == 0, err
    assert "NOT PRIVATE" in err
    assert out.startswith("# NOT PRIVATE evaluation of") and "limited-domain" in out
    rows = list(csv.DictReader(out_csv.read_text().splitlines()))
    assert len(rows) == 6 and {r["mechanism"] for r in rows} == {"lmm", "lmm-gap", "limited-domain"}
    assert all(r["not_private"] == "True" for r in rows)
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


# --- issue 10: #8 (empty data, nothing runnable), #9 (CSV readers), #17 (neighbours default) ---


@pytest.mark.parametrize("content", ["", "a\n", "\n\n"])
def test_empty_or_one_item_data_with_a_finite_universe_is_a_data_error(
    tmp_path: Path, content: str
) -> None:
    data = tmp_path / "d.csv"
    data.write_text(content)
    code, out, err = run(
        ["evaluate", str(data), "--mechanisms", "em,noisy-max-laplace,permute-and-flip"]
    )
    assert code == 3 and out == ""
    last = err.strip().splitlines()[-1]
    assert "internal error" not in err and "fewer than r = 2" in last and "--universe-size" in last


def test_nothing_runnable_under_the_neighbours_is_a_usage_error(tmp_path: Path) -> None:
    data = tmp_path / "d.csv"
    data.write_text("a,b\n" * 5)
    code, out, err = run(
        ["evaluate", str(data), "--mechanisms", "lmm-gap,choosing", "--neighbours", "replace"]
    )
    assert code == 2 and out == ""
    assert "Empty DataFrame" not in err and len(err.strip().splitlines()) == 1
    assert "none of lmm-gap, choosing can run under --neighbours replace" in err


def test_csv_is_readable_by_pandas_and_keeps_the_not_private_label(tmp_path: Path) -> None:
    import pandas as pd

    data = tmp_path / "b.csv"
    data.write_text("\n".join(",".join(r) for r in _records(300)) + "\n")
    out_csv = tmp_path / "t.csv"
    code, _, err = run(
        [
            "evaluate",
            str(data),
            "--eps",
            "1",
            "--trials",
            "3",
            "--seed",
            "1",
            "--mechanisms",
            "lmm,stability",
            "--csv",
            str(out_csv),
        ]
    )
    assert code == 0, err
    assert not out_csv.read_text().startswith("#")
    table = pd.read_csv(out_csv)
    assert list(table["mechanism"]) == ["lmm", "stability"]
    assert table["not_private"].all() and "NOT PRIVATE" in err
    assert set(table["neighbours"]) == {"replace"} and set(table["size"]) == {2}


def test_evaluate_defaults_to_replace_like_mine_and_says_what_it_skips(tmp_path: Path) -> None:
    data = tmp_path / "b.csv"
    data.write_text("\n".join(",".join(r) for r in _records(300)) + "\n")
    code, out, err = run(
        [
            "evaluate",
            str(data),
            "--eps",
            "1",
            "--trials",
            "2",
            "--seed",
            "1",
            "--mechanisms",
            "lmm,lmm-gap,limited-domain",
        ]
    )
    assert code == 0, err
    assert "skipping lmm-gap" in err and "skipping limited-domain" in err
    assert "neighbours = replace" in out
    code, help_text, _ = run(["evaluate", "--help"])
    assert "replace" in help_text.split("--neighbours")[1].split("--")[0]


def test_the_table_is_printed_also_with_csv(tmp_path: Path) -> None:
    """Issue 23: with --csv the table no longer printed; a person reads it, a program the CSV."""
    data = tmp_path / "b.dat"
    data.write_text("1 2\n" * 50)
    args = ["evaluate", str(data), "--eps", "1", "--mechanisms", "lmm", "--trials", "2"]
    code, out, err = run([*args, "--seed", "1", "--csv", str(tmp_path / "t.csv")])
    assert code == 0, err
    assert out.startswith("# NOT PRIVATE evaluation of") and "lmm" in out
    assert (tmp_path / "t.csv").read_text().startswith("not_private,mechanism")


def _fake_table(mechs: list[str], gap: float = 0.0) -> object:
    import pandas as pd

    rows = [
        {"mechanism": m, "eps": e, "p_top": 1.0, "mean_gap": gap, "none_rate": 0.0}
        for m in mechs
        for e in (0.1, 0.5, 1.0, 2.0)
    ]
    return pd.DataFrame(rows)


def test_plot_panels_are_readable() -> None:
    """Issue 23 point 5: P(top) and none rate in separate panels; equal lines stay apart; plain
    tick labels (no 6x10^-1); a gap axis that is not a flat +-0.04; the title as given."""
    pytest.importorskip("matplotlib")
    import matplotlib.pyplot as plt

    mechs = ["lmm", "lmm-gap", "em", "stability"]  # four identical lines
    fig = ev.figure(_fake_table(mechs), "T")
    try:
        labels = [ax.get_ylabel() for ax in fig.axes]
        top = next(ax for ax in fig.axes if ax.get_ylabel().startswith("P(top)"))
        none = next(ax for ax in fig.axes if ax.get_ylabel().startswith("none rate"))
        assert top is not none
        gap = next(ax for ax in fig.axes if "gap" in ax.get_ylabel())
        assert gap.get_ylim()[1] >= 1, labels
        for ax in (top, none):
            ys = [tuple(line.get_ydata()) for line in ax.get_lines()]
            xs = [tuple(line.get_xdata()) for line in ax.get_lines()]
            assert len(set(ys)) == len(mechs) and len(set(xs)) == len(mechs)
            assert {line.get_marker() for line in ax.get_lines()} == {"o", "s", "^", "D"}
        fig.canvas.draw()
        for ax in fig.axes:
            ticks = [t.get_text() for t in ax.get_xticklabels() + ax.get_yticklabels()]
            assert ticks and all(t and "$" not in t and "times" not in t for t in ticks), ticks
        assert "0.1" in [t.get_text() for t in top.get_xticklabels()]
        assert any(t.get_text() == "T" for t in fig.texts)  # the suptitle
    finally:
        plt.close(fig)


def test_plot_title_names_data_r_delta_and_relation(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("matplotlib")
    seen: list[str] = []

    def fake_plot(table: object, path: str, title: str) -> None:
        seen.append(title)
        Path(path).write_bytes(b"\x89PNG\r\n\x1a\n")

    monkeypatch.setattr(ev, "plot", fake_plot)
    data = tmp_path / "shop.dat"
    data.write_text("1 2\n" * 50)
    args = ["evaluate", str(data), "--eps", "1", "--mechanisms", "lmm", "--trials", "2"]
    code, out, err = run(
        [*args, "--seed", "1", "--delta", "1e-7", "--plot", str(tmp_path / "p.png")]
    )
    assert code == 0, err
    assert out.startswith("# NOT PRIVATE")  # the table is printed with --plot too
    assert len(seen) == 1
    assert "shop.dat" in seen[0] and "r = 2" in seen[0] and "δ = 1e-7" in seen[0]
    assert "replace neighbours" in seen[0] and "NOT PRIVATE" in seen[0]
