"""Markdown tables of docs/evaluation.md, "lmm-floor (issue 24)", from select_grid.py's CSVs.

    python benchmarks/select_table.py docs/evaluation/select/grid.csv [.../shared.csv]

Per cell: every registered mechanism's exact P(top), lmm-floor in bold; then the cells where
lmm-floor is below a target: limited-domain's or stability's P(top) - 0.01, 0.99 on tied tops
(where limited-domain or lmm-tight reach it), em's - 0.05 on the wall of ties.
"""

from __future__ import annotations

import csv
import math
import sys

SHORT = {
    "lmm": "lmm",
    "lmm-gap": "gap",
    "lmm-tight": "tight",
    "lmm-floor": "**floor**",
    "em": "em",
    "noisy-max-laplace": "nml",
    "permute-and-flip": "pf",
    "stability": "stab",
    "choosing": "choos",
    "limited-domain": "LD",
}


def fmt(x: str) -> str:
    v = float(x)
    return "-" if math.isnan(v) else f"{v:.3f}"


def table(path: str) -> list[dict[str, str]]:
    with open(path, newline="") as fh:
        rows = list(csv.DictReader(fh))
    names = [n for n in rows[0] if n not in ("shape", "r", "eps")]
    print("| shape | r | ε | " + " | ".join(SHORT.get(n, n) for n in names) + " |")
    print("|---|---|---|" + "---|" * len(names))
    for row in rows:
        cells = [fmt(row[n]) for n in names]
        cells = [f"**{c}**" if n == "lmm-floor" else c for n, c in zip(names, cells, strict=True)]
        print(f"| {row['shape']} | {row['r']} | {row['eps']} | " + " | ".join(cells) + " |")
    return rows


def misses(rows: list[dict[str, str]]) -> None:
    out = []
    for row in rows:
        f = float(row["lmm-floor"])
        where = f"{row['shape']} r = {row['r']} ε = {row['eps']}"
        for ref in ("limited-domain", "stability"):
            if f < float(row[ref]) - 0.01:
                out.append(f"{where}: {f:.4f} < {ref} {float(row[ref]):.4f} − 0.01")
        if row["shape"].startswith("tied") and f < 0.99:
            out.append(
                f"{where}: {f:.4f} < 0.99 (tied top; lmm-tight {float(row['lmm-tight']):.4f})"
            )
        if row["shape"] == "wall" and f < float(row["em"]) - 0.05:
            out.append(f"{where}: {f:.4f} < em {float(row['em']):.4f} − 0.05")
    print(f"\n{len(out)} cells below a target:")
    for line in out:
        print("*", line)


if __name__ == "__main__":
    for p in sys.argv[1:]:
        misses(table(p))
        print()
