"""Every registered mechanism has a statistical privacy audit (tests/audit/audited.py).

Quick: it reads the audit files without running them, so it runs in the quick loop although
every audit it points to is marked slow.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from audited import AUDITED, MISSING, problems

from dpfim.mechanisms import registry


def test_every_registered_mechanism_has_an_audit() -> None:
    assert problems(registry.NAMES) == []


@pytest.mark.parametrize(
    "name",
    [
        pytest.param(n, marks=pytest.mark.xfail(reason=f"{n} has no privacy audit", strict=True))
        if n in MISSING
        else n
        for n in registry.NAMES
    ],
)
def test_each_mechanism_is_audited(name: str) -> None:
    # a known gap (MISSING) shows as XFAIL in the summary; strict: closing it fails until removed
    assert name in AUDITED


def test_the_check_reports_a_mechanism_without_an_audit() -> None:
    names = (*registry.NAMES, "fake-mechanism")
    assert problems(names) == [
        "fake-mechanism: registered but has no audit (add it to AUDITED or MISSING)"
    ]
    assert problems(names, missing={"fake-mechanism"}) == []


def test_the_check_reports_an_audit_test_that_does_not_exist() -> None:
    table = {
        **AUDITED,
        "lmm": "test_audit.py::test_lmm_was_renamed",
        "em": "test_audit_gone.py::test_every_baseline_satisfies_its_claim",
    }
    assert problems(registry.NAMES, table) == [
        "lmm: test_audit.py::test_lmm_was_renamed: test_audit.py defines no test function "
        "'test_lmm_was_renamed'",
        f"em: test_audit_gone.py::test_every_baseline_satisfies_its_claim: no file "
        f"test_audit_gone.py in {Path(__file__).resolve().parent}",
    ]


def test_the_check_reports_stale_entries() -> None:
    names = tuple(n for n in registry.NAMES if n != "choosing")
    assert problems(names, missing={"choosing"}) == [
        "choosing: in AUDITED but not registered",
        "choosing: in MISSING but not registered",
        "choosing: both AUDITED and MISSING",
    ]
