"""Every test starts with an empty accounting cache of its own (dpfim.accounting_cache): no
test reads what another one composed, and none writes into the user's cache directory."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from dpfim import accounting_cache


@pytest.fixture(autouse=True)
def _own_accounting_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setenv("DPFIM_CACHE_DIR", str(tmp_path / "dpfim-cache"))
    monkeypatch.delenv("DPFIM_NO_CACHE", raising=False)
    accounting_cache.clear_memory()
    yield
    accounting_cache.clear_memory()
