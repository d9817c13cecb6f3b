"""The command line: parse options, call one library function, write the result."""

from __future__ import annotations

import json
import math
import os
import sys
import time
import traceback
from collections.abc import Callable
from typing import Any

import click

from dpfim import __version__
from dpfim import ledger as ledger_mod
from dpfim.api import MECHANISMS, NEIGHBOURS, Diagnostics, Options, mine_file
from dpfim.errors import DpfimError, ParameterError
from dpfim.mechanisms import lmm_tight
from dpfim.mechanisms.thresholds import gap_split, paper_split, threshold
from dpfim.params import DEFAULT_ELL_MAX, check_delta, check_eps
from dpfim.readers import COMPRESSIONS, FORMATS
from dpfim.result import check_output_path, write, write_text

CURATOR = "curator-only, not private"


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
@click.option("--eps", required=True, help="Privacy parameter epsilon > 0 (exact decimal).")
@click.option("--delta", required=True, help="Privacy parameter delta in (0, 1), e.g. 1e-6.")
@click.option("-r", "--size", default=2, show_default=True, type=int, help="Itemset size r (1-5).")
@click.option(
    "--format",
    "fmt",
    default="auto",
    show_default=True,
    type=click.Choice(("auto", *FORMATS)),
    help="Input format; auto decides by the file extension only (.csv .tsv .txt basket, "
    ".dat fimi, .jsonl jsonl, .parquet long). Required for stdin.",
)
@click.option(
    "--sep",
    default=None,
    help="Item separator for basket and long CSV files; tab as 'tab' or '\\t' "
    "[default: , (tab for .tsv)].",
)
@click.option(
    "--compression",
    default="auto",
    show_default=True,
    type=click.Choice(COMPRESSIONS),
    help="Decompression; auto decides by the extension (.gz .bz2 .xz) for a path, by the "
    "magic bytes for stdin.",
)
@click.option("--record-col", default=None, help="Long format: the record-id column.")
@click.option("--item-col", default=None, help="Long format: the item column.")
@click.option(
    "--max-record-items",
    type=int,
    default=None,
    help="Keep a uniformly random B items of longer records (record-local; keeps the guarantee).",
)
@click.option(
    "--universe-items",
    type=str,
    default=None,
    help="A public vocabulary file, one item a line: the universe is its r-subsets.",
)
@click.option(
    "--mechanism",
    default="lmm",
    show_default=True,
    type=click.Choice(MECHANISMS),
    help="Selection mechanism.",
)
@click.option(
    "--candidates",
    type=int,
    default=10,
    show_default=True,
    help="limited-domain: how many top itemsets it may consider (k-bar).",
)
@click.option(
    "--neighbours",
    default="replace",
    show_default=True,
    type=click.Choice(NEIGHBOURS),
    help="Neighbouring relation of the guarantee; n is released only under replace.",
)
@click.option(
    "--ell-max",
    type=int,
    default=DEFAULT_ELL_MAX,
    show_default=True,
    help="Data-independent cap on the margin search (open universe).",
)
@click.option(
    "--max-memory",
    default=None,
    metavar="SIZE",
    help="Memory budget of the counting, e.g. 2G or 512M [default: half the RAM, at most 8G]. "
    "Exact counting that cannot fit stops with exit 6.",
)
@click.option("--seed", type=int, default=None, help="Reproducible, NOT private run (for tests).")
@click.option(
    "--ledger", default=None, help="Persistent privacy ledger (JSON lines) to spend from."
)
@click.option(
    "--dataset", default=None, help="Data set name in the ledger [default: INPUT as given]."
)
@click.option(
    "--budget-eps", default=None, help="Total epsilon budget of the data set (first run)."
)
@click.option(
    "--budget-delta", default=None, help="Total delta budget of the data set (first run)."
)
@click.option("--raise-budget", is_flag=True, help="Change a data set's stored budget (recorded).")
@click.option("--note", default=None, help="A note stored with the ledger entry.")
@click.option(
    "-o", "--output", default=None, help="Write the result here (atomically) instead of stdout."
)
@click.option("-q", "--quiet", is_flag=True, help="No progress bars and no hints on stderr.")
@click.option("-v", "--verbose", is_flag=True, help=f"Diagnostics on stderr ({CURATOR}).")
@click.option("--debug", is_flag=True, help="Show tracebacks of errors.")
def mine(input_path: str, **opt: Any) -> None:
    """Release the most frequent r-itemset of INPUT (a path or - for stdin) under DP.

    Prints one JSON result (schema dpfim.result/1) to stdout, or writes it to -o FILE.
    The answer may be "none" ("itemset": null) when no itemset leads by a clear margin.
    Exit codes: 0 result written, 2 usage error, 3 data error (or damaged ledger),
    4 budget exhausted, 5 ledger not writable, 6 exact counting does not fit --max-memory.

    \b
    Examples:
      dpfim mine baskets.csv --eps 1 --delta 1e-6
      dpfim mine retail.dat.gz --size 3 --eps 0.5 --delta 1e-8 -o top.json
      zcat orders.csv.gz | dpfim mine - --format long --record-col customer_id \\
          --item-col item --eps 1 --delta 1e-6
    """
    check_output_path(opt["output"])
    reserve = _ledger_hook(
        opt["ledger"],
        opt["dataset"] or input_path,
        opt["budget_eps"],
        opt["budget_delta"],
        opt["raise_budget"],
        opt["note"],
        opt["seed"],
        opt["mechanism"],
    )
    library_options = (
        "fmt",
        "sep",
        "compression",
        "record_col",
        "item_col",
        "max_record_items",
        "universe_items",
        "size",
        "eps",
        "delta",
        "mechanism",
        "neighbours",
        "ell_max",
        "candidates",
        "seed",
        "max_memory",
    )
    diag = Diagnostics()
    result = mine_file(
        input_path,
        **{k: opt[k] for k in library_options},
        progress=not opt["quiet"] and sys.stderr.isatty(),
        diagnostics=diag,
        reserve=reserve,
    )
    for warning in diag.warnings:
        _say(f"warning ({CURATOR}): {warning}")
    if opt["verbose"]:
        _report(diag)
    write(result, opt["output"])
    if result["itemset"] is None and not opt["quiet"]:
        _say(_none_hint(opt["eps"], opt["delta"], opt["size"], opt["mechanism"]))


def _ledger_hook(
    path: str | None,
    dataset: str,
    budget_eps: str | None,
    budget_delta: str | None,
    raise_budget: bool,
    note: str | None,
    seed: int | None,
    mechanism: str,
) -> Callable[[Options], None] | None:
    """The reservation the library calls before the mechanism runs, or None without --ledger."""
    if path is None:
        if budget_eps or budget_delta or raise_budget or note:
            raise ParameterError(
                "--budget-eps, --budget-delta, --raise-budget and --note need --ledger"
            )
        return None
    if seed is not None:
        raise ParameterError("--seed runs are not private and cannot be spent from a --ledger")
    if (budget_eps is None) != (budget_delta is None):
        raise ParameterError("give --budget-eps and --budget-delta together")
    b_eps = None if budget_eps is None else check_eps(budget_eps)
    b_delta = None if budget_delta is None else check_delta(budget_delta)

    def reserve(opts: Options) -> None:
        ledger_mod.reserve(
            ledger_mod.Spend(
                path=path,
                dataset=dataset,
                eps=opts.eps,
                delta=opts.spent_delta,
                mechanism=mechanism,
                command=["dpfim", *sys.argv[1:]],
                budget_eps=b_eps,
                budget_delta=b_delta,
                raise_budget=raise_budget,
                note=note,
            )
        )
        pause = os.environ.get("DPFIM_TEST_PAUSE_AFTER_RESERVE")  # test-only, docs/ledger.md
        if pause:
            time.sleep(float(pause))

    return reserve


@cli.command()
@click.argument("input_path", metavar="DATA")
@click.option("-r", "--size", default=2, show_default=True, type=int, help="Itemset size r (1-5).")
@click.option(
    "--eps", "eps_list", default="0.1,0.5,1,2", show_default=True, help="Comma-separated epsilons."
)
@click.option("--delta", default="1e-6", show_default=True, help="delta for every run.")
@click.option(
    "--mechanisms",
    default=",".join(MECHANISMS),
    show_default=True,
    help="Comma-separated mechanisms to compare.",
)
@click.option("--trials", default=200, show_default=True, type=int, help="Runs per cell.")
@click.option(
    "--neighbours",
    default="add-remove",
    show_default=True,
    type=click.Choice(NEIGHBOURS),
    help="Relation the mechanisms are calibrated for (add-remove-only ones skip under replace).",
)
@click.option(
    "--universe-size",
    type=int,
    default=None,
    help="Vocabulary size |V| for em, noisy-max-laplace, permute-and-flip: K = C(|V|, r) "
    "[default: the data's own distinct items].",
)
@click.option(
    "--max-record-items",
    type=int,
    default=None,
    help="choosing's B (k = C(B, r)) [default: the longest record, so nothing is truncated].",
)
@click.option(
    "--candidates", type=int, default=10, show_default=True, help="limited-domain's k-bar."
)
@click.option(
    "--format",
    "fmt",
    default="auto",
    show_default=True,
    type=click.Choice(("auto", *FORMATS)),
    help="Input format (as for mine).",
)
@click.option("--sep", default=None, help="Item separator for basket files.")
@click.option("--record-col", default=None, help="Long format: the record-id column.")
@click.option("--item-col", default=None, help="Long format: the item column.")
@click.option("--seed", type=int, default=None, help="Reproducible evaluation.")
@click.option("--csv", "csv_path", default=None, help="Write the table as CSV here (atomically).")
@click.option(
    "--plot", "plot_path", default=None, help="Write a PNG plot here (needs dpfim[plot])."
)
@click.option("-q", "--quiet", is_flag=True, help="No progress bar.")
@click.option("--debug", is_flag=True, help="Show tracebacks of errors.")
def evaluate(input_path: str, **opt: Any) -> None:
    """Compare mechanisms on DATA by rerunning each many times. NOT PRIVATE.

    It reads exact counts and prints exact functions of them: use it on public data or data
    like yours to choose a mechanism and epsilon, never as a release. For each mechanism and
    eps: P(top) = share of runs that name a top-support itemset; mean_gap, p90_gap = support
    gap c(1) - c(selected) over runs that name an itemset; none_rate; median_ell (lmm,
    lmm-gap, lmm-tight); ms_per_run.

    \b
    Example:
      dpfim evaluate retail.dat --size 2 --eps 0.1,0.5,1,2 --trials 200 --plot retail.png
    """
    from dpfim import evaluate as ev
    from dpfim.readers import check_source as check_src
    from dpfim.readers import read_records, resolve_format

    check_output_path(opt["csv_path"], "--csv")
    check_output_path(opt["plot_path"], "--plot")
    if opt["plot_path"] is not None:
        try:
            import matplotlib  # noqa: F401
        except ImportError:
            raise ParameterError("--plot needs matplotlib: pip install 'dpfim[plot]'") from None
    eps_values = ev.parse_list(opt["eps_list"], "--eps")
    for e in eps_values:
        check_eps(e)
    check_delta(opt["delta"])
    if opt["trials"] < 1:
        raise ParameterError(f"--trials must be at least 1, got {opt['trials']}")
    mechanisms = ev.parse_list(opt["mechanisms"], "--mechanisms")
    chosen = ev.plan(mechanisms, opt["neighbours"])
    if opt["universe_size"] is not None and opt["universe_size"] < opt["size"]:
        raise ParameterError("--universe-size must be at least --size")
    check_src(input_path)
    long_cols = opt["record_col"] is not None or opt["item_col"] is not None
    decided = resolve_format(input_path, opt["fmt"], long_columns_given=long_cols)
    progress = not opt["quiet"] and sys.stderr.isatty()
    records = read_records(
        input_path,
        fmt=decided,
        sep=opt["sep"],
        record_col=opt["record_col"],
        item_col=opt["item_col"],
        progress=progress,
    )
    if opt["universe_size"] is not None and opt["universe_size"] < len(records.items):
        raise ParameterError("--universe-size is smaller than the number of distinct items")
    _say("NOT PRIVATE: evaluate reads exact counts; its output is for choosing parameters only")
    for mech, why in chosen.skipped:
        _say(f"skipping {mech}: {why}")
    universe = None
    if opt["universe_size"] is not None:
        universe = math.comb(opt["universe_size"], opt["size"])
    table = ev.evaluate(
        records,
        size=opt["size"],
        eps_values=eps_values,
        delta=opt["delta"],
        mechanisms=chosen.mechanisms,
        trials=opt["trials"],
        neighbours=opt["neighbours"],
        universe_size=universe,
        max_record_items=opt["max_record_items"],
        candidates=opt["candidates"],
        rng=opt["seed"],
        progress=progress,
    )
    header = (
        f"# NOT PRIVATE evaluation of {input_path}: r = {opt['size']}, delta = {opt['delta']}, "
        f"neighbours = {opt['neighbours']}, {opt['trials']} trials per row\n"
    )
    if opt["csv_path"] is not None:
        write_text(header + table.to_csv(index=False), opt["csv_path"], flag="--csv")
    else:
        click.echo(header + table.to_string(index=False, float_format=lambda x: f"{x:.4g}"))
    if opt["plot_path"] is not None:
        _save_plot(table, opt["plot_path"], f"{os.path.basename(input_path)}, r = {opt['size']}")


def _save_plot(table: Any, path: str, title: str) -> None:
    """Render to a temp file in the target directory, then rename: never a partial PNG."""
    import tempfile

    from dpfim import evaluate as ev

    target = os.path.abspath(path)
    fd, tmp = tempfile.mkstemp(suffix=".png", dir=os.path.dirname(target))
    os.close(fd)
    try:
        ev.plot(table, tmp, title)
        os.replace(tmp, target)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


@cli.group()
def ledger() -> None:
    """Inspect a persistent privacy ledger (see docs/ledger.md)."""


@ledger.command("verify")
@click.argument("path")
def ledger_verify(path: str) -> None:
    """Check the hash chain of PATH; report the first broken or truncated line (exit 3).

    \b
    Example:
      dpfim ledger verify /var/lib/dpfim/ledger.jsonl
    """
    lines = ledger_mod.verify(path)
    click.echo(f"{path}: ok, {lines} entries, hash chain intact")


@ledger.command("show")
@click.argument("path")
@click.option("--dataset", default=None, help="Only this data set.")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
def ledger_show(path: str, dataset: str | None, as_json: bool) -> None:
    """Runs, spent and remaining budget per data set in PATH.

    \b
    Example:
      dpfim ledger show ledger.jsonl --dataset orders
    """
    states = ledger_mod.load(path)
    if dataset is not None:
        states = {k: v for k, v in states.items() if k == dataset}
    rows: dict[str, dict[str, Any]] = {
        name: {
            "runs": st.runs,
            "budget": {"eps": str(st.budget_eps), "delta": str(st.budget_delta)},
            "spent": {"eps": str(st.spent_eps), "delta": str(st.spent_delta)},
            "remaining": {"eps": str(st.remaining_eps), "delta": str(st.remaining_delta)},
        }
        for name, st in states.items()
    }
    if as_json:
        click.echo(json.dumps(rows, indent=2))
        return
    for name, row in rows.items():
        click.echo(
            f"{name}: {row['runs']} runs; spent eps={row['spent']['eps']} "
            f"delta={row['spent']['delta']} of eps={row['budget']['eps']} "
            f"delta={row['budget']['delta']}; remaining eps={row['remaining']['eps']} "
            f"delta={row['remaining']['delta']}"
        )


def _report(diag: Diagnostics) -> None:
    for key, value in diag.facts.items():
        _say(f"[{CURATOR}] {key}: {value}")
    for key, seconds in diag.timings.items():
        _say(f"[{CURATOR}] time {key}: {seconds:.3f} s")


def _none_hint(eps: str, delta: str, size: int, mechanism: str) -> str:
    """Computed from public parameters only."""
    if mechanism == lmm_tight.NAME:
        return lmm_tight.none_hint(check_eps(eps), check_delta(delta), size)
    make = gap_split if mechanism == "lmm-gap" else paper_split
    t1 = threshold(1, make(check_eps(eps), check_delta(delta)))
    return (
        f"no {size}-itemset was certified (answer: none). At eps={eps}, delta={delta} LMM "
        f"certifies a winner only when its support leads the runner-up's by more than about "
        f"{t1} records (plus noise); a larger --eps or --delta lowers that margin."
    )


def main(argv: list[str] | None = None) -> Any:
    """Entry point: one-line errors with documented exit codes, tracebacks only with --debug."""
    args = sys.argv[1:] if argv is None else argv
    debug = "--debug" in args
    try:
        cli.main(args=args, prog_name="dpfim", standalone_mode=False)
    except click.exceptions.Exit as exc:
        sys.exit(exc.exit_code)
    except click.Abort:
        _say("aborted")
        sys.exit(130)
    except click.ClickException as exc:
        _say(f"error: {exc.format_message()}")
        sys.exit(exc.exit_code)
    except DpfimError as exc:
        if debug:
            traceback.print_exc()
        _say(f"error: {exc}")
        sys.exit(exc.exit_code)
    except MemoryError:
        _say("error: out of memory while counting exactly; dpfim never approximates (exit 1)")
        sys.exit(1)
    except KeyboardInterrupt:
        _say("interrupted")
        sys.exit(130)
    except Exception as exc:
        if debug:
            traceback.print_exc()
        _say(f"internal error: {type(exc).__name__}: {exc} (rerun with --debug)")
        sys.exit(1)
    sys.exit(0)
