"""`dpfim ledger show --plot spend.png`: cumulative eps over time under each accountant.

Reads a verified ledger's entries (public: budgets and the typed costs of runs, never data),
and draws, per data set, the cumulative eps after each run under `basic` (exact sums) and under
`tight` (the tight accountant's eps at the budget's delta, docs/privacy.md §20.2; drawn when
dp-accounting is installed), with the budget's eps. matplotlib (the `plot` extra) is imported
lazily, with the Agg backend.
"""

from __future__ import annotations

import datetime as dt
import io
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from dpfim import accounting
from dpfim.accountants import TIGHT
from dpfim.accounting import Cost
from dpfim.errors import ParameterError
from dpfim.ledger import DatasetState

# the tight accountant is evaluated at most at this many runs per data set (evenly spread, the
# last run always included) and drawn as straight lines between them
TIGHT_POINTS = 60


@dataclass(frozen=True)
class Series:
    """One data set's history: the time of each run, and its state (budget, typed costs)."""

    name: str
    times: list[dt.datetime]
    state: DatasetState


def series(entries: list[dict[str, Any]], states: dict[str, DatasetState]) -> list[Series]:
    """Each data set's runs in ledger order with their times (the costs come from `states`,
    which already resolved the relation of v1 lines)."""
    times: dict[str, list[dt.datetime]] = {name: [] for name in states}
    for entry in entries:
        if entry["kind"] == "spend" and entry["dataset"] in times:
            times[entry["dataset"]].append(_time(entry.get("time")))
    return [Series(name, times[name], st) for name, st in states.items()]


def _time(text: object) -> dt.datetime:
    try:
        return dt.datetime.strptime(str(text), "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=dt.UTC)
    except ValueError:
        return dt.datetime.fromtimestamp(0, dt.UTC)


def cumulative(st: DatasetState) -> tuple[list[float], list[tuple[int, float]] | None]:
    """(basic eps after each run, [(run number, tight eps)] at up to TIGHT_POINTS runs, or None
    when the tight accountant is not available or reaches no bound at the budget's delta)."""
    basic: list[float] = []
    total = Fraction(0)
    for cost in st.costs:
        total += accounting.basic([cost]).eps
        basic.append(float(total))
    n = len(st.costs)
    if n == 0 or st.budget_delta is None:
        return basic, None
    picks = sorted({max(1, round(i * n / TIGHT_POINTS)) for i in range(1, TIGHT_POINTS + 1)} | {n})
    tight: list[tuple[int, float]] = []
    for k in picks:
        try:
            eps = _tight(st.costs[:k], st.budget_delta)
        except ParameterError:  # dp-accounting missing, or no bound reaches the delta
            return basic, (tight or None)
        tight.append((k, float(eps)))
    return basic, tight


def _tight(costs: list[Cost], delta: Fraction) -> Fraction:
    return TIGHT.compose(costs, delta=delta).eps


def png(all_series: list[Series], title: str) -> bytes:
    """The plot as PNG bytes: one panel per data set, x = time of each run."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib import dates as mdates

    rows = max(1, len(all_series))
    fig, axes = plt.subplots(rows, 1, figsize=(8, 3.6 * rows), squeeze=False)
    for ax, s in zip(axes[:, 0], all_series, strict=False):
        basic, tight = cumulative(s.state)
        if s.times:
            ax.step(s.times, basic, where="post", marker="o", markersize=3, label="basic (sum)")
        if tight:
            delta = accounting.exact_text(s.state.budget_delta or Fraction(0))
            ax.plot(
                [s.times[k - 1] for k, _ in tight],
                [e for _, e in tight],
                marker="s",
                markersize=3,
                linestyle="--",
                label=f"tight (eps at delta = {delta})"
                + ("" if s.state.accountant.needs_fixed_costs else ", information only"),
            )
        if s.state.budget_eps is not None:
            ax.axhline(
                float(s.state.budget_eps),
                color="0.3",
                linestyle=":",
                label=f"budget eps = {accounting.exact_text(s.state.budget_eps)}",
            )
        what = f"{s.name!r}: {s.state.runs} runs, accountant {s.state.accountant.name}"
        ax.set_title(what, fontsize=10)
        ax.set_ylabel("cumulative epsilon")
        ax.set_ylim(bottom=0)
        ax.grid(True, alpha=0.3)
        ax.xaxis.set_major_formatter(
            mdates.ConciseDateFormatter(mdates.AutoDateLocator())  # type: ignore[no-untyped-call]
        )
        ax.legend(fontsize=8, loc="upper left")
    axes[-1, 0].set_xlabel("time of the run (UTC)")
    fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=110)
    plt.close(fig)
    return buf.getvalue()
