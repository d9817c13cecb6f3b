"""dpfim: the most frequent r-itemset under (eps, delta)-differential privacy (LMM)."""

from __future__ import annotations

__version__ = "0.1.0"


def __getattr__(name: str) -> object:
    # Lazy so that `dpfim --help` and the readers do not pay for importing the counting stack.
    if name in ("mine", "mine_file"):
        from dpfim import api

        return getattr(api, name)
    raise AttributeError(name)


__all__ = ["__version__", "mine", "mine_file"]
