"""Which statistical audit covers which registered mechanism (docs/testing-privacy.md).

A mechanism registered in dpfim/mechanisms/registry.py joins every functional matrix at once;
it joins no privacy audit until someone writes one. `AUDITED` names, per mechanism, the audit
test that checks its (eps, delta) claim by sampling; `MISSING` lists the registered mechanisms
known to have none yet. `test_audit_coverage.py` (quick, not slow) fails when a registered
mechanism is in neither, or when an entry names a test that does not exist.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Mapping
from pathlib import Path

HERE = Path(__file__).resolve().parent

# mechanism name -> "file::function" of tests/audit/ that audits its privacy claim
AUDITED: dict[str, str] = {
    "lmm": "test_audit.py::test_lmm_satisfies_every_claim_on_every_pair",
    "lmm-gap": "test_audit.py::test_lmm_gap_satisfies_every_claim_on_add_remove_pairs",
    "lmm-tight": "test_audit_tight.py::test_lmm_tight_satisfies_its_claims_on_edge_pairs",
    "lmm-floor": "test_audit_floor.py::test_lmm_floor_satisfies_its_claims_on_edge_pairs",
    "em": "test_audit_baselines.py::test_every_baseline_satisfies_its_claim",
    "noisy-max-laplace": "test_audit_baselines.py::test_every_baseline_satisfies_its_claim",
    "permute-and-flip": "test_audit_baselines.py::test_every_baseline_satisfies_its_claim",
    "stability": "test_audit_baselines.py::test_every_baseline_satisfies_its_claim",
    "choosing": "test_audit_baselines.py::test_every_baseline_satisfies_its_claim",
    "limited-domain": "test_audit_baselines.py::test_every_baseline_satisfies_its_claim",
    "levelwise": "test_audit_levelwise.py::test_levelwise_satisfies_its_claim_on_edge_pairs",
}

# registered mechanisms with no statistical audit yet: known gaps, reported, not hidden
MISSING: frozenset[str] = frozenset()


def defined_tests(path: Path) -> set[str]:
    """The module-level test functions of one test file, read without importing it."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    return {
        node.name
        for node in tree.body
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
        and node.name.startswith("test_")
    }


def problems(
    names: Iterable[str],
    audited: Mapping[str, str] = AUDITED,
    missing: Iterable[str] = MISSING,
    root: Path = HERE,
) -> list[str]:
    """Every way the table disagrees with the registry's `names` and the audit files; [] if none."""
    names, missing = list(names), set(missing)
    out = [
        f"{n}: registered but has no audit (add it to AUDITED or MISSING)"
        for n in names
        if n not in audited and n not in missing
    ]
    out += [f"{n}: in AUDITED but not registered" for n in audited if n not in names]
    out += [f"{n}: in MISSING but not registered" for n in sorted(missing) if n not in names]
    out += [f"{n}: both AUDITED and MISSING" for n in sorted(missing) if n in audited]
    found: dict[Path, set[str]] = {}
    for name, node_id in audited.items():
        file, _, function = node_id.partition("::")
        path = root / file
        if not path.is_file():
            out.append(f"{name}: {node_id}: no file {file} in {root}")
            continue
        if path not in found:
            found[path] = defined_tests(path)
        if function not in found[path]:
            out.append(f"{name}: {node_id}: {file} defines no test function {function!r}")
    return out
