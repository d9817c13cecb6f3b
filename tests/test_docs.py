"""Every `dpfim ...` example in README.md and docs/cli.md runs, so the docs cannot drift.

The pattern of sqlite-utils' tests/test_docs.py: read the code blocks out of the documents,
run each example, check what it prints. An example is a line of a code block (fenced, or
indented by four spaces) that runs `dpfim`, with `\\` continuations joined; a leading
`pip install ... &&` is dropped. Placeholder file names become sample files (SAMPLES below); the
example runs in a temporary directory, through a `dpfim` on PATH that runs this checkout.

Skip rule (each skip says which): an example is not run when it needs something a test run does
not have — a cluster or Spark (`--engine spark`, `hdfs://`, `s3a://`, `spark-submit`), cron or
systemd (a line that starts with a schedule), or is a synopsis with placeholders (`INPUT`, `DATA`,
`LEDGER`, `[options]`, `show|verify|head`). `| jq ...` runs when jq is installed and is dropped
otherwise; `--plot` examples need matplotlib (the `plot` extra).
"""

from __future__ import annotations

import gzip
import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
DOCUMENTS = ("README.md", "docs/cli.md")
SAMPLE = REPO / "sample_data"

SKIP = (
    (re.compile(r"--engine spark|hdfs://|s3a://|spark-submit"), "needs Spark or a cluster"),
    (re.compile(r"^[0-9*@]"), "a crontab line: needs cron"),
    (re.compile(r"\bINPUT\b|\bDATA\b|\bLEDGER\b|\[options\]|\|verify\|"), "a synopsis"),
)


def _blocks(text: str) -> list[list[str]]:
    """The code blocks of a Markdown text: fenced (not json or python) and 4-space indented."""
    blocks: list[list[str]] = []
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.startswith("```"):
            lang = line[3:].strip()
            end = next(j for j in range(i + 1, len(lines)) if lines[j].startswith("```"))
            if lang not in ("json", "python"):
                blocks.append(lines[i + 1 : end])
            i = end + 1
        elif line.startswith("    ") and (i == 0 or not lines[i - 1].strip()):
            block = []
            while i < len(lines) and (lines[i].startswith("    ") or not lines[i].strip()):
                block.append(lines[i][4:])
                i += 1
            blocks.append(block)
        else:
            i += 1
    return blocks


def examples() -> list[tuple[str, str]]:
    """(document, command) for every line of a code block that runs dpfim."""
    found = []
    for doc in DOCUMENTS:
        for block in _blocks((REPO / doc).read_text()):
            joined = "\n".join(block).replace("\\\n", " ")
            for line in joined.splitlines():
                command = re.sub(r"\s+", " ", line.split(" # ")[0]).strip()
                if re.search(r"(^|\s)dpfim( |$)", command):
                    found.append((doc, command))
    return found


EXAMPLES = examples()


def _fimi(path: Path) -> Path:
    """The sample baskets as a FIMI file (items as integers): what retail.dat stands for."""
    ids: dict[str, int] = {}
    out = []
    for line in (SAMPLE / "groceries_sample.csv").read_text().splitlines():
        items = [s.strip() for s in line.split(",") if s.strip()]
        out.append(" ".join(str(ids.setdefault(s, len(ids) + 1)) for s in items))
    path.write_text("\n".join(out) + "\n")
    return path


def _samples(tmp: Path) -> dict[str, Path]:
    """Placeholder file name in the docs -> a sample file with that format."""
    retail = _fimi(tmp / "sample-retail.dat")
    retail_gz = tmp / "sample-retail.dat.gz"
    retail_gz.write_bytes(gzip.compress(retail.read_bytes()))
    orders_jsonl = tmp / "sample-orders.jsonl.gz"
    orders_jsonl.write_bytes(gzip.compress((SAMPLE / "groceries_sample.jsonl").read_bytes()))
    return {
        "baskets.csv": SAMPLE / "groceries_sample.csv",
        "transactions.csv": SAMPLE / "groceries_sample.csv",
        "orders.csv": SAMPLE / "groceries_sample_long.csv",  # customer_id,item
        "orders.jsonl.gz": orders_jsonl,
        "retail.dat.gz": retail_gz,
        "retail.dat": retail,
    }


def _prepare(command: str, tmp: Path) -> str:
    command = re.sub(r"^pip install \S+ && ", "", command)
    if shutil.which("jq") is None:
        command = re.sub(r" \| jq .*$", "", command)
    command = re.sub(r"(?<![\w/.-])sample_data/", f"{SAMPLE}/", command)
    for name, path in _samples(tmp).items():  # a whole file name only: not retail.dat in .dat.gz
        command = re.sub(rf"(?<![\w/.-]){re.escape(name)}(?![\w.])", str(path), command)
    return command


def _dpfim_on_path(tmp: Path) -> dict[str, str]:
    """An environment whose `dpfim` runs this checkout with this interpreter."""
    bin_dir = tmp / "bin"
    bin_dir.mkdir()
    shim = bin_dir / "dpfim"
    shim.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m dpfim "$@"\n')
    shim.chmod(0o755)
    path = os.pathsep.join([str(bin_dir), os.environ.get("PATH", "")])
    pythonpath = os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))
    return {**os.environ, "PATH": path, "PYTHONPATH": pythonpath}


def test_the_documents_have_examples() -> None:
    """The extraction itself: a broken parser must not make this file pass vacuously."""
    docs = {doc for doc, _ in EXAMPLES}
    assert docs == set(DOCUMENTS)
    assert len(EXAMPLES) >= 10, EXAMPLES


@pytest.mark.parametrize(("doc", "command"), EXAMPLES, ids=[c for _, c in EXAMPLES])
def test_example_runs(tmp_path: Path, doc: str, command: str) -> None:
    for pattern, reason in SKIP:
        if pattern.search(command):
            pytest.skip(f"{doc}: {reason}")
    if "--plot" in command and importlib.util.find_spec("matplotlib") is None:
        pytest.skip(f"{doc}: --plot needs matplotlib (pip install 'dpfim[plot]')")
    if not (SAMPLE / "groceries_sample.csv").exists():
        pytest.skip("sample_data/ not generated")
    shell = _prepare(command, tmp_path)
    done = subprocess.run(
        ["bash", "-o", "pipefail", "-c", shell],
        cwd=tmp_path,
        env=_dpfim_on_path(tmp_path),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, f"{doc}: {command}\n{shell}\n{done.stderr}"
    assert "Traceback" not in done.stderr
    words = command.split()
    if "-o" in words:
        written = tmp_path / words[words.index("-o") + 1]
        assert json.loads(written.read_text())["schema"] == "dpfim.result/1"
        assert done.stdout == ""
        _answers(doc, command, json.loads(written.read_text()))
    elif "--plot" in words:
        assert (tmp_path / words[words.index("--plot") + 1]).read_bytes()[:4] == b"\x89PNG"
        assert done.stdout.startswith("# NOT PRIVATE")
    elif "| jq" in command:
        pass  # jq's output depends on the data: the exit status (pipefail) is the check
    elif words[:2] == ["dpfim", "mine"] and "--help" not in words:
        assert json.loads(done.stdout)["schema"] == "dpfim.result/1"
        _answers(doc, command, json.loads(done.stdout))
    else:
        assert done.stdout.strip(), f"{doc}: {command} printed nothing"


def _answers(doc: str, command: str, result: dict[str, object]) -> None:
    """A documented `dpfim mine` example gives an answer on the data it names (issue 33), not
    "none": one run is a noisy draw, so an example must answer with a clear lead, not by luck."""
    released = result.get("itemsets", [result.get("itemset")])
    assert isinstance(released, list) and released and released[0] is not None, (
        f"{doc}: `{command}` answered none"
    )


def test_readme_sample_output_shows_every_field() -> None:
    """The README's JSON shows the fields (and params) a run on the sample data really has."""
    if not (SAMPLE / "groceries_sample.csv").exists():
        pytest.skip("sample_data/ not generated")
    from cli_run import run

    readme = (REPO / "README.md").read_text()
    shown = json.loads(readme.split("```json\n", 1)[1].split("```", 1)[0])
    code, out, err = run(
        ["mine", str(SAMPLE / "groceries_sample.csv"), "--eps", "1", "--delta", "1e-6"]
    )
    assert code == 0, err
    real = json.loads(out)
    assert list(shown) == list(real)
    assert list(shown["params"]) == list(real["params"])
    assert {k: v for k, v in shown["params"].items() if k not in ("split", "ell_max")} == {
        k: v for k, v in real["params"].items() if k not in ("split", "ell_max")
    }
