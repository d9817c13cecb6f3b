"""The command line: parse options, call one library function, write the result."""

from __future__ import annotations

import contextlib
import errno
import json
import os
import signal
import sys
import threading
import time
import traceback
from collections.abc import Callable, Iterator
from fractions import Fraction
from typing import TYPE_CHECKING, Any

import click

from dpfim import __version__, parameters
from dpfim.choices import DEFAULT_CLOSURE_SHARE, DEFAULT_RULES_SIZES
from dpfim.errors import DpfimError, Interrupted, NoneAnswer, OutputError, ParameterError
from dpfim.params import check_delta, check_eps, format_amount
from dpfim.progress import EXACT, OFF, PUBLIC
from dpfim.result import (
    check_not_overwriting,
    check_output_path,
    itemsets_csv,
    rules_csv,
    write,
    write_bytes,
    write_text,
)

if TYPE_CHECKING:
    from dpfim import ledger as ledger_mod
    from dpfim.api import Diagnostics, Options
else:

    class _Lazy:
        """A module imported on first use (the ledger: ~20 ms that --help need not pay)."""

        def __init__(self, name: str) -> None:
            self._name = name

        def __getattr__(self, attr: str) -> Any:
            import importlib

            return getattr(importlib.import_module(self._name), attr)

    ledger_mod = _Lazy("dpfim.ledger")

# Light imports only above this line: `dpfim --help` and `--version` must not pay for numpy,
# pandas, numba or pyarrow (dpfim.api and the readers are imported when a command runs).


def _ledger() -> Any:
    from dpfim import ledger

    return ledger


def _api() -> Any:
    from dpfim import api

    return api


def _basket_note(source: str, fmt: str, *, long_columns_given: bool) -> str | None:
    from dpfim.readers import basket_note

    return basket_note(source, fmt, long_columns_given=long_columns_given)


CURATOR = parameters.CURATOR
NO_CAP_WARNING = (
    "warning: --max-record-items none keeps whole records: one long record can then add "
    "C(items, r) candidates, and the run time (and the memory the records take) depends on it "
    "without bound, which is outside the guarantee (docs/privacy.md, Record-length cap)"
)
SEED_WARNING = (
    f"warning ({CURATOR}): --seed makes this run reproducible and NOT private; "
    "never publish its result"
)


def _say(message: str) -> None:
    click.echo(f"dpfim: {message}", err=True)


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="dpfim")
def cli() -> None:
    """dpfim: which r-itemset is bought together most often, under (eps, delta)-DP.

    \b
    Example:
      dpfim mine transactions.csv --eps 1 --delta 1e-6
    """


@cli.command()
@click.argument("input_path", metavar="INPUT")
@parameters.options(parameters.MINE)
def mine(input_path: str, **opt: Any) -> None:
    """Release the most frequent r-itemset of INPUT (a path or - for stdin) under DP.

    Prints one JSON result (schema dpfim.result/1) to stdout, or writes it to -o FILE.
    The answer may be "none" ("itemset": null) when no itemset leads by a clear margin.
    With --top K: "itemsets", up to K distinct itemsets in rank order.
    Exit codes: 0 result written, 2 usage error, 3 data error (or damaged ledger),
    4 budget exhausted, 5 ledger not writable, 6 out of memory (the machine's memory ran out
    holding the data), 7 result not writable, 8 the answer is none (only with --fail-on-none),
    130 interrupted (Ctrl-C), 143 terminated (SIGTERM), 129 hung up (SIGHUP).

    \b
    Examples:
      dpfim mine baskets.csv --eps 1 --delta 1e-6
      dpfim mine retail.dat.gz --size 3 --eps 0.5 --delta 1e-8 -o top.json
      dpfim mine retail.dat --top 10 --supports --eps 2 --delta 1e-6
      zcat orders.csv.gz | dpfim mine - --format long --record-col customer_id \\
          --item-col item --eps 1 --delta 1e-6
      dpfim mine hdfs:///orders/ --format long --record-col customer_id \\
          --item-col item --eps 1 --delta 1e-6 --engine spark
    """
    csv_path = opt.pop("csv_path")
    result = _release_run(
        parameters.MINE,
        input_path,
        opt,
        _api().mine_file,
        outputs={"--csv": csv_path},
        after=_csv_writer(csv_path, itemsets_csv),
    )
    opt["split_accountant"] = result["ledger"].get("accountant", "basic")
    released = result["itemsets"] if "itemsets" in result else [result["itemset"]]
    none = not released or released[0] is None  # the released answer only
    if not opt["quiet"]:
        _mine_notes(input_path, opt, released, none, result["params"].get("top", 1))
    if none and opt["fail_on_none"]:
        raise NoneAnswer(
            "the answer is none (--fail-on-none): the result is written, the spend charged"
        )


def _mine_notes(
    input_path: str, opt: dict[str, Any], released: list[Any], none: bool, cap: int
) -> None:
    """The basket note and, for a none, a short --top K or a threshold's release near its cap,
    what it means (public values and the released answer)."""
    long_cols = opt["record_col"] is not None or opt["item_col"] is not None
    note = _basket_note(input_path, opt["fmt"], long_columns_given=long_cols)
    if note is not None:
        _say(note)
    if opt["min_support"] is not None or opt["min_count"] is not None:
        if none:
            _say("no itemset cleared the threshold (a private answer): lower it or raise --eps")
        elif len(released) >= 0.9 * cap:  # the count is chosen privately, at most the cap
            _say(
                f"released {len(released)} itemsets, near the cap --top {cap}: more may clear "
                "the threshold; raise --top to let them (docs/cli.md)"
            )
    elif none:
        _say(_none_hint(opt))
    elif len(released) < opt["top"]:
        _say(
            f"released {len(released)} of --top {opt['top']}: round {len(released) + 1} answered "
            "none; the full (eps, delta) is charged (docs/privacy.md §19)"
        )


@cli.command()
@click.argument("input_path", metavar="INPUT")
@parameters.options(parameters.RULES)
def rules(input_path: str, **opt: Any) -> None:
    """Private association rules of INPUT (a path or - for stdin) under DP.

    Selects the top K itemsets privately (any --mechanism, as mine --top K), releases noisy
    supports of every non-empty subset of them (the downward closure; exact discrete Laplace
    scaled to its size) and, under --neighbours add-remove, a noisy n; makes them consistent
    and derives the rules with mlxtend's association_rules (post-processing). The ledger
    charges selection + supports + n once: --eps is split 1/2 selection, 1/2 closure by
    default (--closure-share). Prints one JSON result (schema dpfim.rules/1). Exit codes as
    for mine.

    \b
    Examples:
      dpfim rules retail.dat --eps 2 --delta 1e-6
      dpfim rules baskets.csv --eps 1 --delta 1e-6 --top 30 --sizes 1-3 \\
          --metric lift --min-threshold 1.2 --csv rules.csv
      dpfim rules retail.dat --eps 2 --delta 1e-6 --mechanism limited-domain \\
          --neighbours add-remove \\
          --ledger budget.jsonl --budget-eps 10 --budget-delta 1e-5
    """
    if opt["size"] is None and opt["sizes"] is None:
        opt["sizes"] = DEFAULT_RULES_SIZES
    csv_path = opt.pop("csv_path")
    extra = {k: opt[k] for k in ("metric", "min_threshold", "closure_share", "closure_noise")}
    result = _release_run(
        parameters.RULES,
        input_path,
        opt,
        _api().rules_file,
        extra=extra,
        outputs={"--csv": csv_path},
        after=_csv_writer(csv_path, rules_csv),
    )
    if not opt["quiet"] and not result["selected"]:
        _say(_none_hint({**opt, "closure_share": opt["closure_share"] or DEFAULT_CLOSURE_SHARE}))
    elif not opt["quiet"] and not result["rules"]:  # public: the released selection and rules
        sizes = sorted({len(s["items"]) for s in result["selected"]})
        _say(
            f"no rule: {len(result['selected'])} itemset(s) of size {sizes} selected, none "
            f"gives a rule with {opt['metric']} >= {opt['min_threshold']} (a rule needs a "
            "selected itemset of 2 or more items); try --sizes 2-3, a lower --min-threshold "
            "or more --eps"
        )


def _csv_writer(
    path: str | None, render: Callable[[dict[str, Any]], str]
) -> Callable[[dict[str, Any]], None]:
    """--csv: write render(result) to path after the JSON (atomically), or nothing."""

    def write_csv(result: dict[str, Any]) -> None:
        if path is not None:
            write_text(render(result), path, flag="--csv")

    return write_csv


def _release_run(
    command: str,
    input_path: str,
    opt: dict[str, Any],
    run: Callable[..., dict[str, Any]],
    *,
    extra: dict[str, Any] | None = None,
    outputs: dict[str, str | None] | None = None,
    after: Callable[[dict[str, Any]], None] | None = None,
) -> dict[str, Any]:
    """What mine and rules share: usage checks before any work, the ledger hooks, the run
    (`run`: mine_file or rules_file), the curator's diagnostics, the JSON written; `after`
    writes any further output (rules --csv) under the same ledger annotation."""
    _check_applies(command, opt)
    check_output_path(opt["output"])
    if opt["quiet"] and opt["verbose"]:
        raise ParameterError("--quiet and --verbose contradict each other: give one")
    ledger_hooks = _ledger_hooks(input_path, opt)
    extra = _with_accountant(run, input_path, opt, extra or {})
    _check_release_outputs(input_path, opt, outputs or {})
    if opt["seed"] is not None:
        _say(SEED_WARNING)
    diag = _api().Diagnostics()
    try:
        # -q: an engine's child processes (Spark's JVM) write straight to fd 2; dpfim's own
        # errors are printed after this block, on the real stderr (every engine alike)
        with _fd2_silenced(opt["quiet"]):
            result = run(
                input_path,
                **{k: opt[k] for k in parameters.library_names(command)},
                **extra,
                progress=_progress_setting(opt),
                diagnostics=diag,
                precheck=_precheck(ledger_hooks, quiet=opt["quiet"]),
                reserve=_reserve(ledger_hooks) if ledger_hooks else None,
            )
        if opt["verbose"]:
            _report(diag)
        if ledger_hooks is not None and ledger_hooks.after is not None:
            result["ledger"]["remaining"] = ledger_hooks.after.remaining_json()
        write(result, opt["output"], compact=opt["compact"])
        if after is not None:
            after(result)
    except DpfimError as exc:
        raise ledger_hooks.annotate(exc) if ledger_hooks else exc from None
    if not opt["quiet"] and ledger_hooks is not None and ledger_hooks.after is not None:
        _say(_left_line(ledger_hooks.dataset, ledger_hooks.after))
    return result


def _with_accountant(
    run: Callable[..., Any], input_path: str, opt: dict[str, Any], extra: dict[str, Any]
) -> dict[str, Any]:
    """mine: how --top K splits (eps, delta), the data set's accountant; rules splits by basic
    composition (--accountant tight applies to its ledger only)."""
    if run is _api().mine_file:
        return {**extra, "accountant": _split_accountant(input_path, opt)}
    if _composes_exactly(opt["accountant"]) is False and not opt["ledger"]:
        raise ParameterError(
            "dpfim rules splits its budget by basic composition: --accountant tight applies "
            "to its --ledger only"
        )
    return extra


def _check_release_outputs(
    input_path: str, opt: dict[str, Any], outputs: dict[str, str | None]
) -> None:
    """-o (checked writable before) and any further output (rules --csv): never an input or a
    ledger."""
    inputs = {
        "INPUT": input_path,
        "--ledger": opt["ledger"],
        "--ledger's head file": _ledger().head_path(opt["ledger"]) if opt["ledger"] else None,
        "--universe-items": opt["universe_items"],
    }
    check_not_overwriting(opt["output"], "-o", inputs)
    for flag, path in outputs.items():
        check_output_path(path, flag)
        check_not_overwriting(path, flag, {**inputs, "-o": opt["output"]})
        _ledger().refuse_ledger(path, flag)
    _ledger().refuse_ledger(opt["output"], "-o")  # also without --ledger (docs/ledger.md)


def _left_line(dataset: str, left: ledger_mod.DatasetState) -> str:
    """What a data set has left after a run (public: the budget and the public spends)."""
    line = (
        f"ledger: data set {dataset!r} has eps="
        f"{format_amount(left.remaining_eps, fixed=True)}, delta="
        f"{format_amount(left.remaining_delta, fixed=True)} left ({left.accountant.name}"
    )
    if left.accountant.needs_fixed_costs:
        line += f": {_runs_left(left)}"
    return line + ")"


def _check_applies(command: str, opt: dict[str, Any]) -> None:
    """Refuse an option the user gave where it does not apply (the table's `applies`)."""
    ctx = click.get_current_context()
    given = [
        name
        for name in opt
        if ctx.get_parameter_source(name) not in (None, click.core.ParameterSource.DEFAULT)
    ]
    values = dict(opt)
    if "mechanism" in opt and opt["mechanism"] is None:  # the default the run will get
        from dpfim.request import default_mechanism

        sizes = opt.get("sizes") or opt.get("size")
        if sizes is None and command == parameters.RULES:
            sizes = DEFAULT_RULES_SIZES
        bounded = str(opt.get("max_record_items")).lower() != "none" or bool(
            opt.get("universe_items")
        )
        values["mechanism"] = default_mechanism(opt.get("top") or 1, sizes, bounded)
    if "mechanisms" in opt:  # evaluate compares several: an option applies if one reads it
        values["mechanism"] = [m.strip() for m in opt["mechanisms"].split(",") if m.strip()]
    message = parameters.not_applying(command, given, values)
    if message is not None:
        raise ParameterError(message)


def _progress_setting(opt: dict[str, Any]) -> str:
    """Bars only on a terminal and not with -q; without -v they show only what public
    parameters decide (docs/cli.md, "Streams"); the exact figures need -v (curator-only)."""
    if opt["quiet"] or not sys.stderr.isatty():
        return OFF
    return EXACT if opt["verbose"] else PUBLIC


def _composes_exactly(name: str | None) -> bool | None:
    """Whether the --accountant given composes by exact sums (None: none given)."""
    from dpfim.accountants import get_accountant

    return None if name is None else get_accountant(name).exact


def _split_accountant(input_path: str, opt: dict[str, Any]) -> str:
    """mine's --accountant: as given; else, with --ledger, the data set's (basic for a new one);
    else basic. A different one than the data set's is refused by the ledger (exit 2)."""
    if opt["accountant"] is not None:
        return str(opt["accountant"])
    if opt["ledger"] is None or not os.path.isfile(opt["ledger"]):
        return "basic"
    try:
        states = ledger_mod.load(opt["ledger"])
    except DpfimError:  # unreadable or damaged: the ledger's own pre-check reports it
        return "basic"
    st = states.get(opt["dataset"] or input_path)
    return "basic" if st is None or st.budget_eps is None else st.accountant.name


def _ledger_hooks(input_path: str, opt: dict[str, Any]) -> ledger_mod.LedgerRun | None:
    """Validate the ledger options (usage errors, before any work); None without --ledger."""
    if opt["raise_budget"] and (opt["budget_eps"] is None or opt["budget_delta"] is None):
        raise ParameterError("--raise-budget needs the new --budget-eps and --budget-delta")
    if opt["dataset"] is not None and not opt["dataset"].strip():
        raise ParameterError("--dataset must not be empty")
    if opt["ledger"] is None:
        if opt["budget_eps"] or opt["budget_delta"] or opt["raise_budget"] or opt["note"]:
            raise ParameterError(
                "--budget-eps, --budget-delta, --raise-budget and --note need --ledger"
            )
        if opt["dataset"] is not None:
            raise ParameterError("--dataset names a data set in the ledger: it needs --ledger")
        return None
    if opt["seed"] is not None:
        raise ParameterError("--seed runs are not private and cannot be spent from a --ledger")
    if input_path == "-" and opt["dataset"] is None:
        raise ParameterError(
            "reading stdin with --ledger needs --dataset NAME (spends add up per data set name)"
        )
    if (opt["budget_eps"] is None) != (opt["budget_delta"] is None):
        raise ParameterError("give --budget-eps and --budget-delta together")
    b_eps, b_delta = opt["budget_eps"], opt["budget_delta"]
    from dpfim.ledger import LedgerRun

    return LedgerRun(
        path=opt["ledger"],
        dataset=opt["dataset"] or input_path,
        mechanism=opt["mechanism"],
        command=["dpfim", *sys.argv[1:]],
        budget_eps=None if b_eps is None else check_eps(b_eps),
        budget_delta=None if b_delta is None else check_delta(b_delta),
        raise_budget=opt["raise_budget"],
        note=opt["note"],
        accountant=opt["accountant"],
    )


def _precheck(run: ledger_mod.LedgerRun | None, *, quiet: bool) -> Callable[[Options], None]:
    """What runs once the options are valid and before the input is read: the ledger's
    read-only budget check, then (unless -q) the --max-record-items none warning, shown
    before reading so that a run which never ends has shown it too."""

    def precheck(opts: Options) -> None:
        if run is not None:
            run.check(opts.cost())
        if not quiet and opts.max_record_items is None:  # none: records are kept whole
            _say(NO_CAP_WARNING)

    return precheck


def _reserve(run: ledger_mod.LedgerRun) -> Callable[[Options], None]:
    def reserve(opts: Options) -> None:
        run.reserve(opts.cost())
        pause = os.environ.get("DPFIM_TEST_PAUSE_AFTER_RESERVE")  # test-only, docs/ledger.md
        if pause:
            time.sleep(float(pause))

    return reserve


@cli.command()
@click.argument("input_path", metavar="DATA")
@parameters.options(parameters.EVALUATE)
def evaluate(input_path: str, **opt: Any) -> None:
    """Compare mechanisms on DATA by rerunning each many times. NOT PRIVATE.

    It reads exact counts and prints exact functions of them: use it on public data or data
    like yours to choose a mechanism and epsilon, never as a release. For each mechanism and
    eps: P(top) = share of runs that name a top-support itemset; mean_gap, p90_gap = support
    gap c(1) - c(selected) over runs that name an itemset; none_rate; median_ell (lmm,
    lmm-gap, lmm-tight, lmm-floor); ms_per_run.

    \b
    Example:
      dpfim evaluate retail.dat --size 2 --eps 0.1,0.5,1,2 --trials 200 --plot retail.png
    """
    from dpfim import evaluate as ev

    _check_applies(parameters.EVALUATE, opt)
    _check_evaluate_outputs(input_path, opt)
    # evaluate's output is NOT PRIVATE as a whole: its bars keep the exact figures
    progress = EXACT if not opt["quiet"] and sys.stderr.isatty() else OFF
    quiet, csv_path, plot_path = opt.pop("quiet"), opt.pop("csv_path"), opt.pop("plot_path")
    opt.pop("debug")
    done = ev.evaluate_file(
        input_path,
        **opt,
        progress=progress,
        say=_say,
        notes=not quiet,
    )
    # the table is always printed, also when --csv or --plot write it elsewhere
    write_text(done.text(), None, flag=None)  # evaluate has no -o: its table goes to stdout
    if csv_path is not None:
        write_text(done.csv(), csv_path, flag="--csv")
    if plot_path is not None:
        name = "stdin" if input_path == "-" else os.path.basename(input_path)
        _save_plot(done.table, plot_path, done.title(name))


def _check_evaluate_outputs(input_path: str, opt: dict[str, Any]) -> None:
    """--csv and --plot: writable paths, not an input, not a ledger; a PNG we can draw."""
    check_output_path(opt["csv_path"], "--csv")
    check_output_path(opt["plot_path"], "--plot")
    if opt["plot_path"] is not None and not opt["plot_path"].lower().endswith(".png"):
        raise ParameterError(f"--plot {opt['plot_path']}: dpfim writes PNG; name it *.png")
    for flag in ("csv_path", "plot_path"):
        check_not_overwriting(opt[flag], f"--{flag[:-5]}", {"DATA": input_path})
        _ledger().refuse_ledger(opt[flag], f"--{flag[:-5]}")
    if opt["plot_path"] is not None:
        try:
            import matplotlib  # noqa: F401
        except ImportError:
            raise ParameterError("--plot needs matplotlib: pip install 'dpfim[plot]'") from None


def _save_plot(table: Any, path: str, title: str) -> None:
    """Render in a private temp directory, then write through the one output writer."""
    import tempfile
    from pathlib import Path

    from dpfim import evaluate as ev

    with tempfile.TemporaryDirectory(prefix="dpfim-plot-") as tmp:
        png = os.path.join(tmp, "plot.png")
        ev.plot(table, png, title)
        data = Path(png).read_bytes()
    write_bytes(data, path, flag="--plot")


@cli.group()
def ledger() -> None:
    """Inspect a persistent privacy ledger (see docs/ledger.md)."""


@ledger.command("verify")
@click.argument("path")
@parameters.options(parameters.VERIFY)
def ledger_verify(path: str, expect_head: str | None) -> None:
    """Check the hash chain of PATH and its head file; report what is broken (exit 3).

    \b
    Example:
      dpfim ledger verify /var/lib/dpfim/ledger.jsonl
    """
    lines = _ledger().verify(path, expect_head)
    head = _ledger().head(path)
    write_text(
        f"{path}: ok, {_plural(lines, 'entry', 'entries')}, hash chain intact, "
        f"head {head.text()}\n",
        None,
        flag=None,
    )


@ledger.command("plan")
@parameters.options(parameters.PLAN)
def ledger_plan(**opt: Any) -> None:
    """The largest per-run eps that keeps --runs runs inside a budget, as one JSON object.

    Reads no ledger and no data. `per_run_eps_exact` is an exact decimal, rounded down and
    checked again after rounding. No feasible eps (e.g. runs x delta >= budget delta): exit 4.

    \b
    Example:
      dpfim ledger plan --budget-eps 2 --budget-delta 1e-6 --runs 365 \\
          --mechanism lmm --delta 1e-9 --accountant tight
    """
    from dpfim.plan import plan

    write_text(json.dumps(plan(**opt), indent=2) + "\n", None, flag=None)


@ledger.command("create")
@click.argument("path")
@parameters.options(parameters.CREATE)
def ledger_create(path: str, **opt: Any) -> None:
    """Create a data set's budget in PATH without spending (a new PATH is created).

    With --accountant tight the run options (--eps, --delta, --mechanism, --top, ...) fix the
    cost every run of the data set must have (docs/privacy.md §20.3); without this command the
    first run fixes it. A data set that has a budget: exit 2; one run does not fit: exit 4.

    \b
    Example:
      dpfim ledger create ledger.jsonl --dataset orders --budget-eps 2 --budget-delta 1e-6 \\
          --accountant tight --mechanism em --neighbours add-remove --eps 0.04 --delta 1e-6
    """
    dataset = opt["dataset"]
    st = ledger_mod.create_budget(
        path,
        dataset=dataset,
        budget_eps=opt["budget_eps"],
        budget_delta=opt["budget_delta"],
        accountant=opt["accountant"],
        neighbours=opt["neighbours"],
        note=opt["note"],
        command=["dpfim", *sys.argv[1:]],
        run={k: opt[k] for k in ledger_mod.RUN_OPTIONS},
    )
    line = f"{path}: created data set {dataset!r}: " + _state_line(dataset, st).split(": ", 1)[1]
    write_text(line + "\n", None, flag=None)


@ledger.command("head")
@click.argument("path")
@parameters.options(parameters.HEAD)
def ledger_head(path: str, init: bool) -> None:
    """Print the verified chain head of PATH (seq and SHA-256 of the last line).

    Log it somewhere the ledger's writers cannot change; `ledger verify --expect-head`
    later proves that no spend recorded up to then was removed or rewritten.

    \b
    Example:
      dpfim ledger head ledger.jsonl | logger -t dpfim-ledger
    """
    if init and not os.path.exists(path):
        raise ParameterError(f"{path}: no such ledger file")
    head = _ledger().init_head(path) if init else _ledger().head(path)
    write_text(head.text() + "\n", None, flag=None)


@ledger.command("show")
@click.argument("path")
@parameters.options(parameters.SHOW)
def ledger_show(path: str, dataset: str | None, as_json: bool, plot_path: str | None) -> None:
    """Runs, spent and remaining budget per data set in PATH (amounts as exact decimals).

    \b
    Example:
      dpfim ledger show ledger.jsonl --dataset orders
      dpfim ledger show ledger.jsonl --plot spend.png
    """
    if plot_path is not None:
        _check_plot_path(plot_path, path)
    entries = ledger_mod.read(path)
    states = ledger_mod.state(entries)
    if dataset is not None:
        if dataset not in states:
            known = ", ".join(repr(k) for k in states) or "none"
            raise ParameterError(f"{path}: no data set {dataset!r} (known: {known})")
        states = {dataset: states[dataset]}
    if plot_path is not None:
        from dpfim import spendplot

        title = f"{path}: cumulative epsilon per run, under basic and tight composition"
        write_bytes(
            spendplot.png(spendplot.series(entries, states), title), plot_path, flag="--plot"
        )
    if as_json:
        rows = [st.summary(name) for name, st in states.items()]
        write_text(
            json.dumps(rows[0] if len(rows) == 1 else rows, indent=2) + "\n", None, flag=None
        )
        return
    write_text(
        "".join(_state_line(name, st) + "\n" for name, st in states.items()), None, flag=None
    )


def _check_plot_path(plot_path: str, ledger_path: str) -> None:
    """--plot: a usage error before anything is read when it names a ledger, its head file
    or a non-PNG name, or when matplotlib is missing."""
    check_output_path(plot_path, "--plot")
    if not plot_path.lower().endswith(".png"):
        raise ParameterError(f"--plot {plot_path}: dpfim writes PNG; name it *.png")
    check_not_overwriting(
        plot_path,
        "--plot",
        {"PATH": ledger_path, "PATH's head file": ledger_mod.head_path(ledger_path)},
    )
    ledger_mod.refuse_ledger(plot_path, "--plot")
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        raise ParameterError("--plot needs matplotlib: pip install 'dpfim[plot]'") from None


def _plural(count: int, one: str, many: str) -> str:
    return f"{count} {one if count == 1 else many}"


def _runs_left(st: ledger_mod.DatasetState) -> str:
    """ "N more runs of its fixed cost fit" for a tight data set (docs/privacy.md §20.3)."""
    left = st.runs_left()
    if left is None:
        return "how many more runs fit needs dp-accounting: pip install 'dpfim[accounting]'"
    at_least = "at least " if left == ledger_mod.RUNS_LEFT_CAP else ""
    return f"{at_least}{_plural(left or 0, 'more run', 'more runs')} of its fixed cost fit"


def _state_line(name: str, st: ledger_mod.DatasetState) -> str:
    def f(x: Fraction | None) -> str:
        return format_amount(x, fixed=True)

    line = (
        f"{name}: {_plural(st.runs, 'run', 'runs')}; spent eps={f(st.spent_eps)} "
        f"delta={f(st.spent_delta)} of eps={f(st.budget_eps)} delta={f(st.budget_delta)}; "
        f"remaining eps={f(st.remaining_eps)} delta={f(st.remaining_delta)} ({st.accountant.name})"
    )
    tight = st.tight_spent()
    if tight is not None:
        line += f"; tight: eps={float(tight.eps):.6g} at delta={f(tight.delta)}"
        if not st.tight_is_guarantee:
            line += " (information, not a guarantee: the runs' costs differ, §20.3)"
    if st.accountant.needs_fixed_costs and st.per_run is not None:
        line += f"; {_runs_left(st)}, each {st.per_run.describe()}"
    if st.over_budget:
        line += " (more was spent than the current budget: nothing remains)"
    return line


def _report(diag: Diagnostics) -> None:
    """-v: the curator's warnings, facts and timings (exact: never without -v)."""
    for warning in diag.warnings:
        _say(f"warning ({CURATOR}): {warning}")
    for key, value in diag.facts.items():
        _say(f"[{CURATOR}] {key}: {value}")
    for key, seconds in diag.timings.items():
        _say(f"[{CURATOR}] time {key}: {seconds:.3f} s")


def _none_hint(opt: dict[str, Any]) -> str:
    """Each mechanism's own hint, from the public parameters only."""
    api = _api()
    opts = api.check_options(
        size=opt["size"],
        sizes=opt["sizes"],
        eps=opt["eps"],
        delta=opt["delta"],
        mechanism=opt["mechanism"],
        neighbours=opt["neighbours"],
        candidates=opt["candidates"],
        universe_given=True,
        max_record_items=opt["max_record_items"],
        top=opt["top"],
        supports=opt.get("supports", False),
        support_share=opt.get("support_share"),
        closure_share=opt.get("closure_share"),
        accountant=opt.get("split_accountant", "basic"),
        closure_noise=opt.get("closure_noise"),
    )
    return str(api.none_hint(opts, opts.max_record_items))


def main(argv: list[str] | None = None) -> Any:
    """Entry point: one-line errors with documented exit codes, tracebacks only with --debug."""
    args = sys.argv[1:] if argv is None else argv
    _reserve_standard_fds()
    previous = _catch_signals()
    try:
        code = cli.main(args=args, prog_name="dpfim", standalone_mode=False)
    except SystemExit as exc:
        # click's wrapper is PacifyFlushWrapper in click 8.1, _PacifyFlushWrapper in 8.2+
        if exc.code == 1 and type(sys.stdout).__name__.lstrip("_") == "PacifyFlushWrapper":
            # click's own answer to EPIPE (--help, --version, any echo into a closed pipe): it
            # exits 1, our code for a bug; the output could not be written, which is exit 7
            _say("error: cannot write the output (Broken pipe)")
            sys.exit(OutputError.exit_code)
        raise
    except (Exception, KeyboardInterrupt) as exc:
        sys.exit(_exit_status(exc, debug="--debug" in args))
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
    sys.exit(code if isinstance(code, int) else 0)


def _exit_status(exc: BaseException, *, debug: bool) -> int:
    """The documented exit status of what a command raised, after its one line on stderr."""
    if isinstance(exc, click.exceptions.NoArgsIsHelpError):
        click.echo(exc.ctx.get_help() if exc.ctx else "Usage: dpfim --help", err=True)
        return 2
    if isinstance(exc, click.exceptions.Exit):
        return exc.exit_code
    if isinstance(exc, (click.Abort, KeyboardInterrupt)):  # EOF at a prompt, or an interrupt
        _say("interrupted")
        return 130
    if isinstance(exc, click.UsageError):
        hint = f" (try '{exc.ctx.command_path} --help')" if exc.ctx else ""
        _say(f"error: {exc.format_message()}{hint}")
        return exc.exit_code
    if isinstance(exc, click.ClickException):
        _say(f"error: {exc.format_message()}")
        return exc.exit_code
    if isinstance(exc, Interrupted):
        _say(str(exc))
        return exc.exit_code
    if isinstance(exc, MemoryError):
        _say("error: out of memory (dpfim never approximates); see --max-record-items")
        return 6
    if isinstance(exc, OSError) and exc.errno in (errno.ENOSPC, errno.EPIPE, errno.EDQUOT):
        _discard_stdout()  # click's own output (--help, --version) could not be written
        _say(f"error: cannot write the output ({exc.strerror})")
        return OutputError.exit_code
    if debug:
        traceback.print_exc()
    if isinstance(exc, DpfimError):
        if isinstance(exc, OutputError):
            _discard_stdout()
        _say(f"error: {exc}")
        return exc.exit_code
    _say(f"internal error: {type(exc).__name__}: {exc} (rerun with --debug)")
    return 1


def _reserve_standard_fds() -> None:
    """Put /dev/null on a closed fd 0, 1 or 2, so that no file opened later takes its number
    (a ledger opened as fd 1 must never receive the result). sys.stdout stays None when
    stdout was closed, and writing the result then fails as an output error (exit 7)."""
    for fd in (0, 1, 2):
        try:
            os.fstat(fd)
        except OSError:
            null = os.open(os.devnull, os.O_RDWR)
            if null != fd:
                os.dup2(null, fd)
                os.close(null)


# What a signal says and the exit code (128 + its number, as a shell reports a killed process)
_SIGNALS = {
    signal.SIGINT: ("interrupted", 130),
    signal.SIGTERM: ("terminated (SIGTERM)", 143),
    signal.SIGHUP: ("hung up (SIGHUP)", 129),
}


def _catch_signals() -> dict[int, Any]:
    """Ctrl-C, SIGTERM (cron, systemd, timeout) and SIGHUP raise Interrupted: one line naming
    what was charged, no partial output (the writers remove their temporary files), and exit
    130/143/129. (KeyboardInterrupt would make click print a blank line and "Aborted!"; the
    default SIGTERM would end the process silently.) Returns the handlers it replaced; a signal
    that is ignored (nohup, a background job) or handled by an embedding program is left alone."""
    if threading.current_thread() is not threading.main_thread():
        return {}
    defaults = {signal.SIGINT: signal.default_int_handler}
    previous: dict[int, Any] = {}
    for signum, (message, code) in _SIGNALS.items():
        if signal.getsignal(signum) is not defaults.get(signum, signal.SIG_DFL):
            continue

        def handler(_signum: int, _frame: Any, message: str = message, code: int = code) -> None:
            raise Interrupted(message, exit_code=code)

        previous[signum] = signal.signal(signum, handler)
    return previous


@contextlib.contextmanager
def _fd2_silenced(on: bool) -> Iterator[None]:
    """Point file descriptor 2 at /dev/null inside the block (child processes such as Spark's
    JVM keep it); Python's own sys.stderr is restored with it at the end."""
    if not on:
        yield
        return
    with contextlib.suppress(AttributeError, ValueError, OSError):
        sys.stderr.flush()
    saved = os.dup(2)
    null = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(null, 2)
        yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)
        os.close(null)


def _discard_stdout() -> None:
    """After a failed write to stdout (full disk, closed pipe) drop what is still buffered, so
    that the interpreter's final flush does not fail again and change the exit code."""
    stream = sys.stdout
    if stream is None:
        return
    try:
        stream.flush()
    except (OSError, ValueError):
        try:
            null = os.open(os.devnull, os.O_WRONLY)
            os.dup2(null, stream.fileno())
            os.close(null)
        except (OSError, ValueError):
            pass
