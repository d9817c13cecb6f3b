"""The layers below the mechanisms load none: an engine, the readers and the input specs are
importable without the mechanism registry (docs/architecture.md, "The seams")."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import dpfim
from dpfim import choices, engines, inputs

ROOT = Path(dpfim.__file__).parent.parent


def _loaded(module: str) -> list[str]:
    """The dpfim modules (and numpy) a fresh interpreter has loaded after `import module`."""
    code = (
        f"import sys, json, {module}\n"
        "print(json.dumps(sorted(m for m in sys.modules if m.startswith('dpfim') or m == 'numpy')))"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True
    )
    loaded: list[str] = json.loads(out.stdout)
    return loaded


@pytest.mark.parametrize(
    "module", ["dpfim.engines.local", "dpfim.engines", "dpfim.readers", "dpfim.inputs"]
)
def test_below_the_mechanisms_no_mechanism_is_loaded(module: str) -> None:
    loaded = _loaded(module)
    assert module in loaded
    assert [m for m in loaded if m.startswith(("dpfim.mechanisms", "dpfim.request"))] == []


def test_the_input_specs_load_no_numpy() -> None:
    """dpfim.inputs is as light as the CLI's choices (--help imports it through them)."""
    assert "numpy" not in _loaded("dpfim.inputs")


def test_one_format_table() -> None:
    """The names the CLI offers are the table's; a suffix names one format; every engine reads
    formats of the table only."""
    assert tuple(inputs.FORMATS) == choices.FORMATS
    suffixes = [s for f in inputs.FORMATS.values() for s in f.suffixes]
    assert len(suffixes) == len(set(suffixes)) == len(inputs.BY_SUFFIX)
    for name, form in inputs.FORMATS.items():
        assert form.name == name
        assert form.with_columns is None or inputs.FORMATS[form.with_columns].needs_columns
    for name in engines.NAMES:
        assert engines.get(name).formats <= set(inputs.FORMATS)


def test_architecture_names_every_module() -> None:
    """docs/architecture.md lists each module and its one job: a new module joins the page."""
    root = Path(__file__).resolve().parents[1]
    page = (root / "docs" / "architecture.md").read_text()
    missing = []
    for path in sorted((root / "dpfim").rglob("*.py")):
        rel = path.relative_to(root / "dpfim").as_posix()
        name = path.name if path.name != "__init__.py" else path.parent.name + "/"
        if rel not in page and path.name not in page and name not in page:
            missing.append(rel)
    assert not missing, f"docs/architecture.md does not name: {missing}"
