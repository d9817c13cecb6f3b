"""The parameter table: every option of every command, declared once.

One row per parameter: its flag, type, default, help, the commands that offer it (with what a
command says differently), the engine or mechanism it applies to. The command line's options are
generated from it (`options(command)`), the library keywords a run passes on are read from it
(`library_names`), and an option given where it does not apply is refused from it
(`not_applying`). A new `mine` option is one row here plus the code that uses it.

Light on purpose: `dpfim --help` imports this module, so it imports no numpy and no mechanism
(the mechanism names come from dpfim.choices; tests check them against the registry).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from dpfim.choices import (
    ACCOUNTANTS,
    COMPRESSIONS,
    DEFAULT_RULES_SIZES,
    DEFAULT_RULES_TOP,
    ENGINES,
    FORMATS,
    MECHANISM_DEFAULT_HELP,
    MECHANISMS,
    NEIGHBOURS,
    RULE_METRICS,
)

CURATOR = "curator-only, not private"
DEFAULT_ELL_MAX = 2**40  # dpfim.params.DEFAULT_ELL_MAX (tests check they agree)

# The commands that take parameters from this table.
MINE, RULES, EVALUATE = "mine", "rules", "evaluate"
PLAN, CREATE, SHOW = "ledger plan", "ledger create", "ledger show"
VERIFY, HEAD = "ledger verify", "ledger head"
RUNS = (MINE, RULES)  # a release run: privacy, selection, input, engine, ledger and output


def _parse_conf(_ctx: Any, _param: Any, pairs: Iterable[str]) -> dict[str, str]:
    from dpfim.inputs import parse_conf  # imported when a command runs, not for --help

    return parse_conf(pairs)


@dataclass(frozen=True)
class Param:
    """One parameter. `commands` maps each command that offers it to what that command says
    differently (a default, a help text, required); `applies`: the engines or mechanisms it
    applies to (refused elsewhere when given); `library`: a release run passes it on to
    dpfim.api under `name`."""

    name: str
    flags: tuple[str, ...]
    help: str
    commands: Mapping[str, Mapping[str, Any]]
    type: Any = str  # str, int, "flag", or a tuple of choices
    default: Any = None
    show_default: bool = False
    required: bool = False
    metavar: str | None = None
    multiple: bool = False
    callback: Callable[[Any, Any, Any], Any] | None = None
    applies: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    library: bool = False
    # the value's validation where no entry point's own code does it (a new option's row):
    # value -> the value the request keeps (raise ParameterError naming the flag)
    check: Callable[[Any], Any] | None = None

    @property
    def flag(self) -> str:
        """The long flag, as messages name it."""
        return self.flags[-1]

    def setting(self, command: str, key: str) -> Any:
        return self.commands[command].get(key, getattr(self, key))


def _min_support(value: Any) -> Any:
    from fractions import Fraction

    from dpfim.errors import ParameterError
    from dpfim.params import check_fraction

    theta = check_fraction(value, "--min-support")
    if not 0 < theta <= 1:
        raise ParameterError(f"--min-support must be a fraction in (0, 1], got {value}")
    return Fraction(theta)


def _positive_int(flag: str, most: int | None = None) -> Callable[[Any], int]:
    def check(value: Any) -> int:
        from dpfim.errors import ParameterError

        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ParameterError(f"{flag} must be a whole number >= 1, got {value!r}")
        if most is not None and value > most:
            raise ParameterError(f"{flag} must be at most {most}, got {value}")
        return value

    return check


def _for(*commands: str, **same: Any) -> dict[str, dict[str, Any]]:
    return {c: dict(same) for c in commands}


_SIZES_HELP = "Rank itemsets of several sizes together: 2,3 or a range 1-3 (instead of --size)"

TABLE: tuple[Param, ...] = (
    # the guarantee
    Param(
        "eps",
        ("--eps",),
        "Privacy parameter epsilon > 0 (exact decimal).",
        {
            **_for(*RUNS),
            CREATE: {"help": "tight: each run's --eps (as mine).", "required": False},
        },
        required=True,
        library=True,
    ),
    Param(
        "eps_list",
        ("--eps",),
        "Comma-separated epsilons.",
        {EVALUATE: {}},
        default="0.1,0.5,1,2",
        show_default=True,
    ),
    Param(
        "delta",
        ("--delta",),
        "Privacy parameter delta in (0, 1), e.g. 1e-6.",
        {
            **_for(*RUNS),
            EVALUATE: {
                "help": "delta for every run.",
                "default": "1e-6",
                "show_default": True,
                "required": False,
            },
            PLAN: {"help": "Each run's delta (mechanisms that spend one).", "required": False},
            CREATE: {"help": "tight: each run's --delta (as mine).", "required": False},
        },
        required=True,
        library=True,
    ),
    # what is selected
    Param(
        "size",
        ("-r", "--size"),
        "Itemset size r (1-5) [default: 2].",
        {
            MINE: {},
            RULES: {"help": "Itemset size r (1-5)."},
            EVALUATE: {"help": "Itemset size r (1-5).", "default": 2, "show_default": True},
            PLAN: {"help": "Itemset size r."},
            CREATE: {"help": "Each run's itemset size r."},
        },
        type=int,
        library=True,
    ),
    Param(
        "sizes",
        ("--sizes",),
        _SIZES_HELP + ".",
        {
            MINE: {},
            RULES: {"help": f"{_SIZES_HELP} [default: {DEFAULT_RULES_SIZES}]."},
            EVALUATE: {
                "help": "Several sizes ranked together (1-3), as mine --sizes: the true "
                "top K is over all of them (with --top)."
            },
            PLAN: {"help": "Several sizes ranked together (2,3 or 1-3)."},
            CREATE: {"help": "Each run's --sizes."},
        },
        library=True,
    ),
    Param(
        "top",
        ("--top",),
        "Release up to K distinct itemsets in rank order (peeling: K rounds at eps/K, delta/K "
        "each; stops at the first none, the full budget is charged).",
        {
            MINE: {},
            RULES: {"default": DEFAULT_RULES_TOP},
            EVALUATE: {
                "help": "Evaluate top-K releases (as mine --top K): FNR@K, precision, rank error."
            },
            PLAN: {"help": "Itemsets per run (--top K)."},
            CREATE: {"help": "Each run's --top K."},
        },
        type=int,
        default=1,
        show_default=True,
        library=True,
    ),
    Param(
        "min_support",
        ("--min-support",),
        "Release every itemset whose support is at least this fraction of the records "
        "(mlxtend's min_support), up to DP error: how many is chosen privately, at most --top "
        "(default 500 here), over --sizes (default 1-5) or --max-len; runs levelwise "
        "(docs/privacy.md §25).",
        {
            **_for(*RUNS),
            EVALUATE: {
                "help": "Evaluate levelwise at this threshold (sizes 1-5 unless --sizes): "
                "precision and recall against the exact frequent itemsets, supports' error, "
                "intervals' coverage."
            },
        },
        type=str,
        metavar="THETA",
        library=True,
        check=_min_support,
    ),
    Param(
        "min_count",
        ("--min-count",),
        "As --min-support, with the threshold as a number of records.",
        _for(*RUNS),
        type=int,
        metavar="C",
        library=True,
        check=_positive_int("--min-count"),
    ),
    Param(
        "max_len",
        ("--max-len",),
        "Itemsets of sizes 1..L (mlxtend's max_len): the same as --sizes 1-L.",
        _for(*RUNS),
        type=int,
        metavar="L",
        library=True,
        check=_positive_int("--max-len", 5),
    ),
    Param(
        "supports",
        ("--supports",),
        "Also release a noisy support (exact discrete Laplace) of each released itemset.",
        {
            MINE: {},
            EVALUATE: {"help": "Also release noisy supports (as mine --supports)."},
            PLAN: {"help": "Each run also releases noisy supports."},
            CREATE: {"help": "Each run releases noisy supports."},
        },
        type="flag",
        library=True,
    ),
    Param(
        "support_share",
        ("--support-share",),
        "Share of --eps spent on --supports [default: 0.25]; the rest selects (levelwise: "
        "the share of its zCDP budget, docs/privacy.md §24).",
        {
            MINE: {},
            EVALUATE: {"help": "As mine --support-share [default: 0.25]."},
            PLAN: {"help": "Share of eps for the supports."},
            CREATE: {"help": "Each run's --support-share."},
        },
        library=True,
    ),
    Param(
        "mechanism",
        ("--mechanism",),
        f"Selection mechanism [default: {MECHANISM_DEFAULT_HELP}].",
        _for(*RUNS, PLAN, CREATE),
        type=MECHANISMS,
        default=None,
        library=True,
    ),
    Param(
        "mechanisms",
        ("--mechanisms",),
        "Comma-separated mechanisms to compare.",
        {EVALUATE: {}},
        default=",".join(MECHANISMS),
        show_default=True,
    ),
    Param(
        "candidates",
        ("--candidates",),
        "limited-domain: how many top itemsets it may consider (k-bar); lmm-floor: its default "
        "rank l_d.",
        {
            **_for(*RUNS),
            EVALUATE: {"help": "limited-domain's k-bar."},
            PLAN: {"help": "limited-domain's k."},
            CREATE: {"help": "limited-domain's k."},
        },
        type=int,
        default=10,
        show_default=True,
        applies={"mechanism": ("limited-domain", "lmm-floor")},
        library=True,
    ),
    Param(
        "neighbours",
        ("--neighbours",),
        "Neighbouring relation of the guarantee; n is released only under replace.",
        {
            **_for(*RUNS, PLAN, CREATE),
            EVALUATE: {
                "help": "Relation the mechanisms are calibrated for; the default is mine's "
                "(replace, the paper's model). Mechanisms valid only under add-remove are "
                "skipped, each said on stderr."
            },
        },
        type=NEIGHBOURS,
        default="replace",
        show_default=True,
        library=True,
    ),
    Param(
        "ell_max",
        ("--ell-max",),
        "Data-independent cap on the margin search (open universe).",
        _for(*RUNS),
        type=int,
        default=DEFAULT_ELL_MAX,
        show_default=True,
        applies={"mechanism": ("lmm", "lmm-gap", "lmm-tight", "lmm-floor")},
        library=True,
    ),
    Param(
        "accountant",
        ("--accountant",),
        "How composition is counted [default: basic, or the --ledger data set's]: mine's "
        "--top K rounds get eps/K each (basic) or the largest eps0 whose adaptive composition "
        "fits (tight, docs/privacy.md §20.4; pip install 'dpfim[accounting]'); fixed with a "
        "data set's budget in --ledger (tight there also fixes the per-run cost: §20.3).",
        {
            **_for(*RUNS),
            EVALUATE: {
                "help": "How --top K splits (eps, delta) among its rounds, as mine --accountant.",
                "default": "basic",
                "show_default": True,
            },
            PLAN: {
                "help": "basic: sums; tight: PLD / zCDP via dp-accounting (pip install "
                "'dpfim[accounting]').",
                "default": "basic",
                "show_default": True,
            },
            CREATE: {
                "help": "How the data set's runs compose; tight fixes the per-run cost given "
                "here (docs/privacy.md §20.3).",
                "default": "basic",
                "show_default": True,
            },
        },
        type=ACCOUNTANTS,
    ),
    # rules
    Param(
        "metric",
        ("--metric",),
        "The rule metric --min-threshold applies to (mlxtend's association_rules).",
        {RULES: {}},
        type=RULE_METRICS,
        default="confidence",
        show_default=True,
    ),
    Param(
        "min_threshold",
        ("--min-threshold",),
        "Keep the rules whose --metric is at least this.",
        {RULES: {}},
        default="0.1",
        show_default=True,
    ),
    Param(
        "closure_share",
        ("--closure-share",),
        "Share of --eps spent on the closure's noisy supports (and n under add-remove) "
        "[default: 0.5]; the rest selects the top K.",
        {RULES: {}},
    ),
    Param(
        "closure_noise",
        ("--closure-noise",),
        "The closure's noise: auto picks the one with less expected error from K, the sizes, "
        "B, eps and delta (public values only); gaussian spends a tenth of --delta.",
        {RULES: {}},
        type=("auto", "laplace", "gaussian"),
        default="auto",
        show_default=True,
    ),
    # evaluate's grid
    Param(
        "trials",
        ("--trials",),
        "Runs per cell.",
        {EVALUATE: {}},
        type=int,
        default=200,
        show_default=True,
    ),
    Param(
        "universe_size",
        ("--universe-size",),
        "Vocabulary size |V| for em, noisy-max-laplace, permute-and-flip: K = C(|V|, r) "
        "[default: the data's own distinct items]. Given, levelwise runs as with a declared "
        "vocabulary (the data's items, no bottom).",
        {EVALUATE: {}},
        type=int,
        applies={"mechanism": ("em", "noisy-max-laplace", "permute-and-flip", "levelwise")},
    ),
    # the input
    Param(
        "fmt",
        ("--format",),
        "Input format; auto decides by the file extension only (.csv .tsv .txt basket, .dat "
        "fimi, .jsonl jsonl, .parquet long). Required for stdin.",
        _for(*RUNS, EVALUATE),
        type=("auto", *FORMATS),
        default="auto",
        show_default=True,
        library=True,
    ),
    Param(
        "sep",
        ("--sep",),
        "Item separator for basket and long CSV files: one character; tab as 'tab' or '\\t' "
        "[default: , (tab for .tsv)].",
        _for(*RUNS, EVALUATE),
        library=True,
    ),
    Param(
        "compression",
        ("--compression",),
        "Decompression; auto decides by the extension (.gz .bz2 .xz) for a path; stdin is "
        "read as it is unless this names its compression.",
        _for(*RUNS, EVALUATE),
        type=COMPRESSIONS,
        default="auto",
        show_default=True,
        library=True,
    ),
    Param(
        "record_col",
        ("--record-col",),
        "Long format: the record-id column.",
        _for(*RUNS, EVALUATE),
        library=True,
    ),
    Param(
        "item_col",
        ("--item-col",),
        "Long format: the item column.",
        _for(*RUNS, EVALUATE),
        library=True,
    ),
    Param(
        "max_record_items",
        ("--max-record-items",),
        "Keep a uniformly random B items of longer records (record-local; keeps the "
        "guarantee) [default: 64]. 'none' keeps whole records: one long record can then "
        "decide the run time.",
        {
            **_for(*RUNS),
            EVALUATE: {
                "help": "Records keep at most B items, as in mine (also choosing's B, k = "
                "C(B, r)) [default: 64]; 'none' keeps whole records (choosing's B is then the "
                "longest record)."
            },
        },
        metavar="B|none",
        library=True,
    ),
    Param(
        "universe_items",
        ("--universe-items",),
        "A public vocabulary file, one item a line: the universe is its r-subsets.",
        _for(*RUNS),
        library=True,
    ),
    # who counts
    Param(
        "max_memory",
        ("--max-memory",),
        "Memory budget of the counting, e.g. 2G or 512M [default: half the RAM, at most 8G]. "
        "Sets how many itemsets the counting holds; past that the counts are clipped "
        "(docs/privacy.md 1.2), never a stop.",
        _for(*RUNS),
        metavar="SIZE",
        applies={"engine": ("local",)},  # Spark's memory is its own (--spark-conf)
        library=True,
    ),
    Param(
        "engine",
        ("--engine",),
        "Who reads and counts: this process, or Apache Spark (pip install 'dpfim[spark]'); "
        "the mechanism always runs here.",
        _for(*RUNS, EVALUATE),
        type=ENGINES,
        default="local",
        show_default=True,
        library=True,
    ),
    Param(
        "spark_master",
        ("--spark-master",),
        "Spark master URL [default: local[*]].",
        _for(*RUNS, EVALUATE),
        applies={"engine": ("spark",)},
        library=True,
    ),
    Param(
        "spark_conf",
        ("--spark-conf",),
        "Spark configuration, repeatable (e.g. spark.driver.memory=2g).",
        _for(*RUNS, EVALUATE),
        metavar="KEY=VALUE",
        multiple=True,
        callback=_parse_conf,
        applies={"engine": ("spark",)},
        library=True,
    ),
    Param(
        "seed",
        ("--seed",),
        "Reproducible, NOT private run (for tests); always warns on stderr.",
        {**_for(*RUNS), EVALUATE: {"help": "Reproducible evaluation."}},
        type=int,
        library=True,
    ),
    # the ledger and the budget
    Param(
        "ledger",
        ("--ledger",),
        "Persistent privacy ledger (JSON lines) to spend from.",
        _for(*RUNS),
    ),
    Param(
        "dataset",
        ("--dataset",),
        "Data set name in the ledger [default: INPUT as given; required for stdin].",
        {
            **_for(*RUNS),
            CREATE: {"help": "The data set name (as mine --dataset).", "required": True},
            SHOW: {"help": "Only this data set."},
        },
    ),
    Param(
        "budget_eps",
        ("--budget-eps",),
        "Total epsilon budget of the data set (first run).",
        {
            **_for(*RUNS),
            **_for(PLAN, CREATE, help="The budget's epsilon (exact decimal).", required=True),
        },
    ),
    Param(
        "budget_delta",
        ("--budget-delta",),
        "Total delta budget of the data set (first run).",
        {
            **_for(*RUNS),
            **_for(PLAN, CREATE, help="The budget's delta, e.g. 1e-6.", required=True),
        },
    ),
    Param(
        "raise_budget",
        ("--raise-budget",),
        "Change a data set's stored budget to --budget-eps/--budget-delta (recorded).",
        _for(*RUNS),
        type="flag",
    ),
    Param(
        "runs",
        ("--runs",),
        "How many runs the budget must last.",
        {PLAN: {}},
        type=int,
        required=True,
    ),
    Param(
        "note",
        ("--note",),
        "A note stored with the ledger entry.",
        {**_for(*RUNS), CREATE: {"help": "A note stored with the budget line."}},
    ),
    # what is written where
    Param(
        "output",
        ("-o", "--output"),
        "Write the result here instead of stdout: a regular file is replaced atomically (mode "
        "kept, or 0666 minus umask); a device, FIFO or /dev/fd/N is written in place.",
        _for(*RUNS),
    ),
    Param(
        "csv_path",
        ("--csv",),
        "Also write the rules as CSV here (atomically), with a private column; the JSON still "
        "goes to stdout or -o.",
        {
            MINE: {
                "help": "Also write the released itemsets as CSV here (atomically): rank, items, "
                "size, noisy support and fraction, sd, interval, how the support was made, a "
                "private column; the JSON still goes to stdout or -o."
            },
            RULES: {},
            EVALUATE: {"help": "Write the table as CSV here (atomically)."},
        },
    ),
    Param(
        "plot_path",
        ("--plot",),
        "Write a PNG plot here (needs dpfim[plot]).",
        {
            EVALUATE: {},
            SHOW: {
                "help": "Also draw cumulative eps over time under each accountant into this "
                "PNG (needs dpfim[plot]).",
                "metavar": "PNG",
            },
        },
    ),
    Param("as_json", ("--json",), "Machine-readable output.", {SHOW: {}}, type="flag"),
    Param(
        "expect_head",
        ("--expect-head",),
        "A head printed earlier by `dpfim ledger head` (the 64 hex digits after sha256=): it "
        "must still be in the chain.",
        {VERIFY: {}},
        metavar="SHA256",
    ),
    Param(
        "init",
        ("--init",),
        "Write the head file of a ledger from before head files existed (refused if one exists).",
        {HEAD: {}},
        type="flag",
    ),
    Param(
        "fail_on_none",
        ("--fail-on-none",),
        "Exit 8 when the answer is none (the result is still written and the spend charged): "
        "for cron and shell scripts.",
        {MINE: {}},
        type="flag",
    ),
    Param(
        "compact",
        ("--compact",),
        "One-line JSON (for pipelines and log files).",
        _for(*RUNS),
        type="flag",
    ),
    Param(
        "quiet",
        ("-q", "--quiet"),
        "Nothing on stderr but errors and the --seed warning (no progress, notes or hints).",
        {
            **_for(*RUNS),
            EVALUATE: {"help": "Nothing on stderr but errors and the NOT PRIVATE line."},
        },
        type="flag",
    ),
    Param(
        "verbose",
        ("-v", "--verbose"),
        f"Diagnostics on stderr ({CURATOR}).",
        _for(*RUNS),
        type="flag",
    ),
    Param(
        "debug",
        ("--debug",),
        "Show tracebacks of errors.",
        _for(*RUNS, EVALUATE),
        type="flag",
    ),
)

BY_NAME: dict[tuple[str, str], Param] = {
    (command, p.name): p for p in TABLE for command in p.commands
}


def of(command: str) -> tuple[Param, ...]:
    """The parameters `command` offers, in table order."""
    return tuple(p for p in TABLE if command in p.commands)


def library_names(command: str) -> tuple[str, ...]:
    """The keywords a run of `command` passes on to dpfim.api."""
    return tuple(p.name for p in of(command) if p.library)


def more_keywords(
    command: str, entry: str, own: Iterable[str], given: Mapping[str, Any]
) -> dict[str, Any]:
    """The keywords an entry point of `command` takes beyond its own signature (`own`): the
    library rows of the table, so that a new option is its row plus the code that reads it
    (`Options.param(name)`). Anything else is the TypeError Python itself would raise."""
    rows = {p.name: p for p in of(command) if p.library and p.name not in set(own)}
    out: dict[str, Any] = {}
    for name, value in given.items():
        if name not in rows:
            raise TypeError(f"{entry}() got an unexpected keyword argument {name!r}")
        check = rows[name].check
        out[name] = value if check is None or value is None else check(value)
    return out


def default(command: str, name: str) -> Any:
    """A row's default for `command`."""
    (row,) = (p for p in of(command) if p.name == name)
    return row.setting(command, "default")


def options(command: str) -> Callable[[Callable[..., Any]], Any]:
    """The click options of `command`, generated from the table (in table order)."""
    import click

    def one(p: Param) -> Callable[[Any], Any]:
        kw: dict[str, Any] = {"help": p.setting(command, "help")}
        kind = p.setting(command, "type")
        if kind == "flag":
            kw["is_flag"] = True
        else:
            kw["type"] = click.Choice(kind) if isinstance(kind, tuple) else kind
            default = p.setting(command, "default")
            if default is not None or not (p.setting(command, "required") or p.multiple):
                kw["default"] = default
            for key in ("show_default", "required", "multiple"):
                value = p.setting(command, key) if key != "multiple" else p.multiple
                if value:  # else click's own
                    kw[key] = value
            if p.setting(command, "metavar") is not None:
                kw["metavar"] = p.setting(command, "metavar")
            if p.callback is not None:
                kw["callback"] = p.callback
        return click.option(*p.flags, p.name, **kw)

    decorators = [one(p) for p in of(command)]

    def decorate(function: Callable[..., Any]) -> Any:
        for decorator in reversed(decorators):
            function = decorator(function)
        return function

    return decorate


def not_applying(command: str, given: Iterable[str], values: Mapping[str, Any]) -> str | None:
    """A usage error for the first parameter given where it does not apply (the engine or the
    mechanism that `values` name does not read it), or None. `given`: the names the user set."""
    given = set(given)
    for p in of(command):
        if p.name not in given:
            continue
        for on, names in p.applies.items():
            value = values.get(on)
            if value is None:
                continue
            used = tuple(value) if isinstance(value, (list, tuple)) else (value,)
            if not set(used) & set(names):  # a list (evaluate's --mechanisms): any of them
                which, flag = ", ".join(names), f"--{on}" + ("s" if len(used) > 1 else "")
                return (
                    f"{p.flag} applies to --{on} {which} only; this run uses {flag} "
                    f"{', '.join(used)}: drop {p.flag}"
                )
    return None


def given_in_library(command: str, values: Mapping[str, Any]) -> list[str]:
    """The parameters a library call set (the CLI knows what was typed; a keyword call only
    what differs from the table's default): a value that is not None, empty or False and not
    the command's default."""
    return [
        p.name
        for p in of(command)
        if p.name in values
        and values[p.name] not in (None, False, (), {})
        and values[p.name] != p.setting(command, "default")
    ]


_FLAG = re.compile(r"(?<![\w-])--[a-z][a-z0-9-]*")


def _keywords() -> dict[str, str]:
    out: dict[str, str] = {}
    for p in TABLE:
        for flag in p.flags:
            if flag.startswith("--"):
                out.setdefault(flag, p.name)  # the run's row first (--eps: eps, not eps_list)
    return out


def for_python(message: str, renames: Mapping[str, str] | None = None) -> str:
    """A message written for the command line with each flag of the table named by its Python
    keyword instead (`--eps must be > 0` -> `eps must be > 0`); `renames` overrides a keyword
    where a function calls it otherwise (mine(): --universe-items is `universe`)."""
    keywords = {**_keywords(), **(renames or {})}
    return _FLAG.sub(lambda m: keywords.get(m.group(0), m.group(0)), message)
