"""The parameter table (dpfim/parameters.py): declared once, generated into every command, and an
option given where it does not apply is refused."""

from __future__ import annotations

import inspect
import re
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest
from cli_run import run

from dpfim import api, parameters
from dpfim.cli import cli
from dpfim.mechanisms import registry
from dpfim.mechanisms.base import Public
from dpfim.params import DEFAULT_ELL_MAX
from dpfim.samplers.rng import seeded_source

SAMPLE = str(Path(__file__).resolve().parents[1] / "sample_data" / "groceries_sample.csv")
C_UNIVERSE = 10_000  # a declared universe for the mechanisms that need one
CLI_SOURCE = (Path(parameters.__file__).parent / "cli.py").read_text()


def test_the_cli_declares_no_option_of_its_own():
    """Every option comes from the table: none is declared (and restated) in cli.py."""
    assert not re.findall(r"click\.option\(", CLI_SOURCE)


@pytest.mark.parametrize("command", sorted({c for p in parameters.TABLE for c in p.commands}))
def test_each_command_offers_exactly_its_table_rows(command):
    cmd = cli
    for word in command.split():
        cmd = cmd.commands[word]  # type: ignore[attr-defined]
    offered = {p.name for p in cmd.params if p.param_type_name == "option"} - {"help"}
    assert offered == {p.name for p in parameters.of(command)}


@pytest.mark.parametrize(
    ("command", "function"), [("mine", api.mine_file), ("rules", api.mine_file)]
)
def test_the_library_takes_every_keyword_the_table_passes_on(command, function):
    """In its signature, or through **more (a row added to the table only): more_keywords
    takes it without the TypeError an unknown keyword gets."""
    accepted = set(inspect.signature(function).parameters)
    extra = set(parameters.library_names(command)) - accepted
    assert parameters.more_keywords(command, "f", accepted, dict.fromkeys(extra)) == dict.fromkeys(
        extra
    )
    with pytest.raises(TypeError):
        parameters.more_keywords(command, "f", accepted, {"no_such_option": 1})


def test_mechanism_parameters_agree_with_the_table():
    """A row that applies to some mechanisms names exactly those that declare it."""
    for p in parameters.of(parameters.MINE):
        owners = p.applies.get("mechanism")
        declared = {n for n, m in registry.REGISTRY.items() if p.name in m.parameters}
        if owners is None:
            assert not declared, p.name
        else:
            assert set(owners) == declared, p.name


def test_the_light_defaults_agree_with_the_library():
    assert parameters.DEFAULT_ELL_MAX == DEFAULT_ELL_MAX
    mine_file = inspect.signature(api.mine_file).parameters
    for p in parameters.of(parameters.MINE):
        if p.name in mine_file and p.library and p.setting("mine", "type") != "flag":
            library_default = mine_file[p.name].default
            if p.default is not None and library_default is not inspect.Parameter.empty:
                assert library_default == p.default, p.name


class _Res:
    def __init__(self, args: list[str]) -> None:
        self.exit_code, out, err = run(args)
        self.output = out + err


def _run(*args: str) -> _Res:
    return _Res(list(args))


@pytest.mark.parametrize(
    ("extra", "flag"),
    [
        (["--spark-master", "local[2]"], "--spark-master"),
        (["--spark-conf", "spark.driver.memory=1g"], "--spark-conf"),
        (["--mechanism", "lmm", "--candidates", "5"], "--candidates"),
        (["--mechanism", "stability", "--ell-max", "100"], "--ell-max"),
        (["--mechanism", "choosing", "--neighbours", "add-remove", "--ell-max", "9"], "--ell-max"),
    ],
)
def test_an_option_that_does_not_apply_is_a_usage_error(extra, flag):
    res = _run("mine", SAMPLE, "--eps", "1", "--delta", "1e-6", "-q", *extra)
    assert res.exit_code == 2, res.output
    lines = res.output.strip().splitlines()
    assert len(lines) == 1 and flag in lines[0] and "applies to" in lines[0]
    assert "Traceback" not in res.output


def test_rules_and_evaluate_refuse_too():
    res = _run("rules", SAMPLE, "--eps", "1", "--delta", "1e-6", "--spark-master", "x")
    assert res.exit_code == 2 and "--spark-master applies to --engine spark" in res.output
    res = _run("evaluate", SAMPLE, "--trials", "1", "--spark-conf", "a=b")
    assert res.exit_code == 2 and "--spark-conf applies to --engine spark" in res.output


@pytest.mark.parametrize(
    "extra",
    [
        ["--mechanism", "limited-domain", "--neighbours", "add-remove", "--candidates", "5"],
        ["--mechanism", "lmm", "--ell-max", "1000"],
        ["--mechanism", "lmm-tight", "--neighbours", "add-remove", "--ell-max", "1000"],
    ],
)
def test_an_option_that_applies_is_taken(extra):
    res = _run("mine", SAMPLE, "--eps", "1", "--delta", "1e-6", "-q", "--seed", "1", *extra)
    assert res.exit_code == 0, res.output


def test_a_default_value_given_where_it_does_not_apply_is_refused_too():
    """Given on the command line, the user meant it to do something: it would do nothing."""
    res = _run(
        "mine", SAMPLE, "--eps", "1", "--delta", "1e-6", "-q", "--mechanism", "lmm",
        "--candidates", "10",
    )  # fmt: skip
    assert res.exit_code == 2 and "--candidates applies to" in res.output


class _Fixed:
    """Complete ranked counts of a made-up data set (what a mechanism run reads)."""

    def __init__(self) -> None:
        self.counts = np.array([5000 - 40 * i for i in range(100)], dtype=np.int64)
        self.threshold, self.complete, self.unlisted, self.clipped_at = 1, True, None, 0

    def ensure(self, depth: int) -> None:
        pass

    def lower_to(self, s: int) -> None:
        pass


# a mechanism's own parameters: the rows of a run that apply to some mechanisms (evaluate's
# --universe-size applies to the compared mechanisms that need a vocabulary, and owns nothing)
_OWNED = {p.name for p in parameters.of(parameters.MINE) if "mechanism" in p.applies}


@pytest.mark.parametrize("name", registry.NAMES)
def test_a_mechanism_reads_only_the_owned_parameters_it_declares(name):
    """Every owned parameter a mechanism reads from Public, run, cost, hint and ledger, is one it
    declares (so the command line never refuses a parameter that would have mattered)."""
    spec = registry.get(name)
    read: set[str] = set()

    class Recording(Public):
        def __getattribute__(self, attr: str):  # type: ignore[no-untyped-def]
            if attr in _OWNED:
                read.add(attr)
            return super().__getattribute__(attr)

    p = Recording(
        Fraction(1),
        Fraction(1, 10**6),
        (1, 2) if spec.whole_run is not None else (2,),
        "add-remove",
        max_record_items=8,
        universe_size=C_UNIVERSE if spec.needs_vocabulary else None,
    )
    if spec.check is not None:
        spec.check(p)
    spec.cost(p), spec.none_hint(p), spec.extra(p), spec.ledger_of(p)
    for seed in range(3):
        if spec.whole_run is not None:  # reads an engine's item supports: a real one
            from dpfim.engines.local import count_records
            from dpfim.readers import from_transactions

            recs = from_transactions([["a", "b"], ["a"], ["b", "c"]] * 20)
            spec.whole_run(count_records(recs, [1, 2]).counts, p, 3, seeded_source(seed))
        else:
            spec.run(_Fixed(), p, seeded_source(seed))
    assert read <= set(spec.parameters), (name, read)


@pytest.mark.parametrize(
    ("name", "body", "extra", "flag"),
    [
        ("a.dat", "1 2\n2 3\n", ["--sep", ";"], "--sep"),
        ("a.dat", "1 2\n2 3\n", ["--record-col", "r", "--item-col", "i"], "--record-col"),
        ("a.jsonl", "[1, 2]\n[2, 3]\n", ["--sep", ","], "--sep"),
        ("a.jsonl", "[1, 2]\n[2, 3]\n", ["--item-col", "i"], "--item-col"),
    ],
)
def test_a_reading_option_the_format_does_not_take_is_a_usage_error(
    tmp_path, name, body, extra, flag
):
    path = tmp_path / name
    path.write_text(body)
    for command in (["mine"], ["evaluate", "--trials", "1"]):
        res = _run(*command, str(path), "--eps", "1", "--delta", "1e-6", *extra)
        lines = res.output.strip().splitlines()
        assert res.exit_code == 2, res.output
        assert lines[-1].startswith(f"dpfim: error: {flag} applies to --format")
        assert "Traceback" not in res.output


def test_reading_options_the_format_takes_are_taken(tmp_path):
    long_csv = tmp_path / "orders.csv"
    long_csv.write_text("r,i\n1,a\n1,b\n2,a\n2,b\n")
    res = _run(
        "mine",
        str(long_csv),
        "--eps",
        "1",
        "--delta",
        "1e-6",
        "--seed",
        "1",
        "--record-col",
        "r",
        "--item-col",
        "i",
    )
    assert res.exit_code == 0, res.output
    res = _run("mine", SAMPLE, "--eps", "1", "--delta", "1e-6", "--seed", "1", "--sep", ",")
    assert res.exit_code == 0, res.output


def test_max_memory_is_the_local_engine_s_and_dataset_needs_a_ledger():
    res = _run(
        "mine", SAMPLE, "--eps", "1", "--delta", "1e-6", "--engine", "spark", "--max-memory", "1G"
    )
    assert res.exit_code == 2 and "--max-memory applies to --engine local only" in res.output
    res = _run("mine", SAMPLE, "--eps", "1", "--delta", "1e-6", "--dataset", "orders")
    assert res.exit_code == 2 and "--dataset names a data set in the ledger" in res.output


def test_evaluate_refuses_an_option_no_compared_mechanism_reads():
    res = _run(
        "evaluate", SAMPLE, "--trials", "1", "--mechanisms", "lmm,stability", "--candidates", "5"
    )
    assert res.exit_code == 2, res.output
    assert "this run uses --mechanisms lmm, stability: drop --candidates" in res.output
    res = _run("evaluate", SAMPLE, "--trials", "1", "--mechanisms", "lmm", "--universe-size", "200")
    assert res.exit_code == 2 and "--universe-size applies to --mechanism em" in res.output


def test_the_python_api_refuses_what_does_not_apply_too(tmp_path):
    from dpfim.errors import ParameterError

    with pytest.raises(ParameterError, match="--candidates applies to"):
        api.mine_file(SAMPLE, eps=1, delta="1e-6", mechanism="lmm", candidates=5, seed=1)
    with pytest.raises(ParameterError, match="--spark-master applies to --engine spark"):
        api.mine_file(SAMPLE, eps=1, delta="1e-6", spark_master="local[1]", seed=1)
    out = api.mine_file(SAMPLE, eps=1, delta="1e-6", mechanism="lmm", candidates=10, seed=1)
    assert out["itemset"] is not None


def test_a_new_mine_option_is_its_row_and_the_code_that_reads_it(monkeypatch):
    """Issue 34's target, shown with a made-up option: one row in the table (place 1) makes it a
    `mine` flag with its help, passes it from the command line to the library, validates it
    and hands it to the run's Options, where the code that uses it reads opts.param (place 2).
    Nothing else is edited."""
    import click
    from click.testing import CliRunner

    def check_level(value):
        if int(value) < 0:
            raise api.ParameterError(f"--probe-level must be >= 0, got {value}")
        return int(value)

    row = parameters.Param(
        "probe_level", ("--probe-level",), "A made-up option.", {parameters.MINE: {}},
        type=int, default=3, library=True, check=check_level,
    )  # fmt: skip
    monkeypatch.setattr(parameters, "TABLE", (*parameters.TABLE, row))
    seen = []  # place 2: the code that reads it (here: the ledger pre-check hook)

    def use(opts):
        seen.append(opts.param("probe_level"))

    # the command line: the generated options carry it to the library call
    @click.command()
    @parameters.options(parameters.MINE)
    def probe(**opt):
        names = parameters.library_names(parameters.MINE)
        api.mine_file(SAMPLE, **{k: opt[k] for k in names}, precheck=use)

    res = CliRunner().invoke(probe, ["--eps", "1", "--delta", "1e-6", "--seed", "1",
                                     "--probe-level", "5"])  # fmt: skip
    assert res.exit_code == 0, res.output
    assert "--probe-level" in CliRunner().invoke(probe, ["--help"]).output
    # the library: as a keyword, its default when not given, its check, and nothing unknown
    api.mine_file(SAMPLE, eps=1, delta="1e-6", seed=1, precheck=use)
    assert seen == [5, 3]
    with pytest.raises(ValueError, match="--probe-level must be >= 0"):
        api.mine_file(SAMPLE, eps=1, delta="1e-6", seed=1, probe_level=-1)
    with pytest.raises(TypeError, match="unexpected keyword argument 'probe_levle'"):
        api.mine_file(SAMPLE, eps=1, delta="1e-6", seed=1, probe_levle=2)
    with pytest.raises(TypeError, match="unexpected keyword argument 'seed'"):
        api.mine([["a", "b"]], eps=1, delta="1e-6", seed=1)  # mine() takes rng=, as before
