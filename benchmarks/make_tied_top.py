"""A synthetic basket file where the certified rank must exceed 10 (docs/evaluation.md).

    python benchmarks/make_tied_top.py OUT.csv

40 disjoint pairs each bought together 1000 times (a 40-way tie at the top), then 200 pairs
bought 50 times each. Any top pair is a correct answer. limited-domain with its default 10
candidates sees h_11 = h_1 and answers none; a mechanism that may choose l >= 40 can answer.
"""

from __future__ import annotations

import sys


def main() -> None:
    with open(sys.argv[1], "w", encoding="utf-8") as out:
        for k in range(40):
            out.write(f"top{k}a,top{k}b\n" * 1000)
        for k in range(200):
            out.write(f"low{k}a,low{k}b\n" * 50)


if __name__ == "__main__":
    main()
