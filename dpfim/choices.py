"""The names the command line offers as choices, in a module that imports nothing heavy, so
that `dpfim --help` and `dpfim --version` start without numpy, pandas, numba or pyarrow (the
modules that implement them re-export these; tests check the mechanism names against the
registry)."""

from __future__ import annotations

from fractions import Fraction

from dpfim import inputs

ACCOUNTANTS = ("basic", "tight")
FORMATS = tuple(inputs.FORMATS)  # the names, in the order of the one format table
COMPRESSIONS = ("auto", "none", "gzip", "bz2", "xz")
ENGINES = ("local", "spark")
NEIGHBOURS = ("replace", "add-remove")
MECHANISMS = (
    "lmm",
    "lmm-gap",
    "lmm-tight",
    "lmm-floor",
    "em",
    "noisy-max-laplace",
    "permute-and-flip",
    "stability",
    "choosing",
    "limited-domain",
)
# mlxtend's metrics that need no original data (representativity needs df_orig)
RULE_METRICS = (
    "confidence",
    "lift",
    "support",
    "leverage",
    "conviction",
    "zhangs_metric",
    "jaccard",
    "certainty",
    "kulczynski",
)
DEFAULT_CLOSURE_SHARE = Fraction(1, 2)
