"""The command line: parse options, call one library function, write the result."""

from __future__ import annotations

import sys
import traceback
from typing import Any

import click

from dpfim import __version__
from dpfim.api import MECHANISMS, NEIGHBOURS, Diagnostics, mine_file
from dpfim.errors import DpfimError
from dpfim.mechanisms.thresholds import paper_split, threshold
from dpfim.params import DEFAULT_ELL_MAX, check_delta, check_eps
from dpfim.readers import FORMATS
from dpfim.result import check_output_path, write

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
    "--sep", default=None, help="Item separator for basket files [default: , (tab for .tsv)]."
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
@click.option("--seed", type=int, default=None, help="Reproducible, NOT private run (for tests).")
@click.option(
    "-o", "--output", default=None, help="Write the result here (atomically) instead of stdout."
)
@click.option("-q", "--quiet", is_flag=True, help="No progress bars and no hints on stderr.")
@click.option("-v", "--verbose", is_flag=True, help=f"Diagnostics on stderr ({CURATOR}).")
@click.option("--debug", is_flag=True, help="Show tracebacks of errors.")
def mine(
    input_path: str,
    eps: str,
    delta: str,
    size: int,
    fmt: str,
    sep: str | None,
    record_col: str | None,
    item_col: str | None,
    max_record_items: int | None,
    universe_items: str | None,
    mechanism: str,
    neighbours: str,
    ell_max: int,
    seed: int | None,
    output: str | None,
    quiet: bool,
    verbose: bool,
    debug: bool,
) -> None:
    """Release the most frequent r-itemset of INPUT (a path or - for stdin) under DP.

    Prints one JSON result (schema dpfim.result/1) to stdout, or writes it to -o FILE.
    The answer may be "none" ("itemset": null) when no itemset leads by a clear margin.
    Exit codes: 0 result written, 2 usage error, 3 data error.

    \b
    Examples:
      dpfim mine baskets.csv --eps 1 --delta 1e-6
      dpfim mine retail.dat.gz --size 3 --eps 0.5 --delta 1e-8 -o top.json
      zcat orders.csv.gz | dpfim mine - --format long --record-col customer_id \\
          --item-col item --eps 1 --delta 1e-6
    """
    check_output_path(output)
    diag = Diagnostics()
    result = mine_file(
        input_path,
        fmt=fmt,
        sep=sep,
        record_col=record_col,
        item_col=item_col,
        max_record_items=max_record_items,
        universe_items=universe_items,
        size=size,
        eps=eps,
        delta=delta,
        mechanism=mechanism,
        neighbours=neighbours,
        ell_max=ell_max,
        seed=seed,
        progress=not quiet and sys.stderr.isatty(),
        diagnostics=diag,
    )
    for warning in diag.warnings:
        _say(f"warning ({CURATOR}): {warning}")
    if verbose:
        _report(diag)
    write(result, output)
    if result["itemset"] is None and not quiet:
        _say(_none_hint(eps, delta, size))


def _report(diag: Diagnostics) -> None:
    for key, value in diag.facts.items():
        _say(f"[{CURATOR}] {key}: {value}")
    for key, seconds in diag.timings.items():
        _say(f"[{CURATOR}] time {key}: {seconds:.3f} s")


def _none_hint(eps: str, delta: str, size: int) -> str:
    """Computed from public parameters only."""
    t1 = threshold(1, paper_split(check_eps(eps), check_delta(delta)))
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
