from __future__ import annotations

import os

import pytest


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if item.get_closest_marker("audit_large") and os.environ.get("DPFIM_AUDIT_LARGE") != "1":
            item.add_marker(pytest.mark.skip(reason="set DPFIM_AUDIT_LARGE=1 for the 10^6 audit"))
