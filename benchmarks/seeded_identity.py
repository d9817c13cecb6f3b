"""Seeded results of a fixed command set on the shared data, to show a refactor changes none.

Every mechanism, neighbouring relation and accountant is given explicitly (defaults may change
between the two commits; a refactor must not change what a given request releases). Each run is
seeded (NOT private) and its JSON is kept without the fields that name the run rather than the
data (`created`, `version`).

    python benchmarks/seeded_identity.py snap OUT_DIR        # run the set, one file a command
    python benchmarks/seeded_identity.py compare A_DIR B_DIR # exit 1 on any difference

Run it with PYTHONPATH pointing at the checkout under test (or from its installed venv).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

DATA = Path(
    os.environ.get("DPFIM_SHARED_DATA", Path(__file__).resolve().parents[2] / "shared" / "data")
)
SEED = "20261207"
DROP = ("created", "version")

# name -> arguments after `dpfim`
COMMANDS: dict[str, list[str]] = {}


def _add(name: str, *args: str) -> None:
    COMMANDS[name] = [*args, "--seed", SEED]


_MUSH = str(DATA / "mushroom.dat")
_RETAIL = str(DATA / "retail.dat")
_GROC = str(DATA / "groceries.csv")
_common = ("--eps", "1", "--delta", "1e-6", "--accountant", "basic")
for data_name, path in (("mushroom", _MUSH), ("groceries", _GROC)):
    _add(
        f"{data_name}-lmm-replace",
        "mine",
        path,
        *_common,
        "--mechanism",
        "lmm",
        "--neighbours",
        "replace",
    )
    _add(
        f"{data_name}-lmm-addremove",
        "mine",
        path,
        *_common,
        "--mechanism",
        "lmm",
        "--neighbours",
        "add-remove",
    )
    for mech in ("lmm-gap", "lmm-tight", "lmm-floor", "limited-domain", "choosing"):
        _add(
            f"{data_name}-{mech}",
            "mine",
            path,
            *_common,
            "--mechanism",
            mech,
            "--neighbours",
            "add-remove",
        )
    _add(
        f"{data_name}-stability",
        "mine",
        path,
        *_common,
        "--mechanism",
        "stability",
        "--neighbours",
        "replace",
    )
    _add(
        f"{data_name}-floor-top10-sizes",
        "mine",
        path,
        "--eps",
        "2",
        "--delta",
        "1e-6",
        "--mechanism",
        "lmm-floor",
        "--neighbours",
        "add-remove",
        "--accountant",
        "basic",
        "--sizes",
        "1-3",
        "--top",
        "10",
        "--supports",
    )
    _add(
        f"{data_name}-floor-top10-tight",
        "mine",
        path,
        "--eps",
        "2",
        "--delta",
        "1e-6",
        "--mechanism",
        "lmm-floor",
        "--neighbours",
        "add-remove",
        "--accountant",
        "tight",
        "--sizes",
        "1-3",
        "--top",
        "10",
    )
    _add(
        f"{data_name}-lmm-top5-supports",
        "mine",
        path,
        "--eps",
        "4",
        "--delta",
        "1e-6",
        "--mechanism",
        "lmm",
        "--neighbours",
        "replace",
        "--accountant",
        "basic",
        "--top",
        "5",
        "--supports",
        "--support-share",
        "0.3",
    )
    _add(
        f"{data_name}-rules",
        "rules",
        path,
        "--eps",
        "2",
        "--delta",
        "1e-6",
        "--mechanism",
        "lmm-floor",
        "--neighbours",
        "add-remove",
        "--top",
        "10",
        "--sizes",
        "1-2",
    )
_add(
    "retail-floor-top5-size3",
    "mine",
    _RETAIL,
    "--eps",
    "2",
    "--delta",
    "1e-6",
    "--mechanism",
    "lmm-floor",
    "--neighbours",
    "add-remove",
    "--accountant",
    "basic",
    "--size",
    "3",
    "--top",
    "5",
    "--max-record-items",
    "32",
)
_add(
    "retail-ld-top3",
    "mine",
    _RETAIL,
    "--eps",
    "2",
    "--delta",
    "1e-6",
    "--mechanism",
    "limited-domain",
    "--candidates",
    "20",
    "--neighbours",
    "add-remove",
    "--accountant",
    "basic",
    "--top",
    "3",
)


def _strip(value: object) -> object:
    if isinstance(value, dict):
        return {k: _strip(v) for k, v in value.items() if k not in DROP}
    if isinstance(value, list):
        return [_strip(v) for v in value]
    return value


def snap(out: Path) -> int:
    out.mkdir(parents=True, exist_ok=True)
    for name, args in COMMANDS.items():
        proc = subprocess.run(
            [sys.executable, "-m", "dpfim", *args], capture_output=True, text=True, check=False
        )
        record: dict[str, object] = {"args": args, "exit": proc.returncode}
        try:
            record["result"] = _strip(json.loads(proc.stdout))
        except json.JSONDecodeError:
            record["stdout"] = proc.stdout
            record["stderr"] = proc.stderr.strip().splitlines()[-1:] if proc.stderr else []
        (out / f"{name}.json").write_text(json.dumps(record, indent=1, sort_keys=True) + "\n")
        print(f"{name}: exit {proc.returncode}", flush=True)
    return 0


def compare(a: Path, b: Path) -> int:
    names = sorted({p.name for p in a.glob("*.json")} | {p.name for p in b.glob("*.json")})
    differ = [
        n
        for n in names
        if not (a / n).exists()
        or not (b / n).exists()
        or (a / n).read_text() != (b / n).read_text()
    ]
    for n in differ:
        print(f"differs: {n}")
    print(f"{len(names) - len(differ)} of {len(names)} identical")
    return 1 if differ else 0


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "snap":
        sys.exit(snap(Path(sys.argv[2])))
    if len(sys.argv) == 4 and sys.argv[1] == "compare":
        sys.exit(compare(Path(sys.argv[2]), Path(sys.argv[3])))
    sys.exit(__doc__)
