"""dpfim: the most frequent r-itemset under (eps, delta)-differential privacy (LMM)."""

from __future__ import annotations

__version__ = "0.1.0"


_API = ("mine", "mine_file", "frequent_itemsets", "association_rules", "rules_file")


def __getattr__(name: str) -> object:
    # Lazy so that `dpfim --help` and the readers do not pay for importing the counting stack.
    if name in _API:
        from dpfim import api

        return getattr(api, name)
    raise AttributeError(name)


__all__ = [
    "__version__",
    "association_rules",
    "frequent_itemsets",
    "mine",
    "mine_file",
    "rules_file",
]
