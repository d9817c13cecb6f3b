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
# the default selection mechanism (issue 33: the large-margin member with the smallest lead;
# docs/privacy.md §22, §22.8 for replace-one); --mechanism lmm is the paper's Algorithm 1
DEFAULT_MECHANISM = "lmm-floor"
# the default of --top K >= 2 over --sizes 1-s (issue 31: docs/privacy.md §23); K = 1, or sizes
# that do not start at 1, keep DEFAULT_MECHANISM
TOP_K_MECHANISM = "levelwise"
MECHANISM_DEFAULT_HELP = (
    f"{TOP_K_MECHANISM} for --top K >= 2 over --sizes 1-s, else {DEFAULT_MECHANISM}"
)
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
    "levelwise",
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
# The stated default split: half of eps selects, half releases the closure's supports (and n
# under add/remove, as one more coordinate of the same vector).
DEFAULT_CLOSURE_SHARE = Fraction(1, 2)
# The consumers' defaults (dpfim rules, api.rules_file / association_rules: the top 50 of
# sizes 1-2; api.frequent_itemsets: sizes 1-3, so that mlxtend finds rules of three items)
DEFAULT_RULES_TOP = 50
DEFAULT_RULES_SIZES = "1-2"
DEFAULT_FREQUENT_SIZES = "1-3"

# A support's stated interval: estimate +- z sd, z the standard normal's 97.5th percentile (a
# 95 % interval; levelwise's estimate is a sum of independent discrete Gaussians, measured in
# docs/privacy.md §24.4); rules' intervals hold at >= 95 % by a union bound (§21.5)
INTERVAL_Z = 1.959963984540054
INTERVAL_LEVEL = 0.95
