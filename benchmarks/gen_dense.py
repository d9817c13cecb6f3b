"""Write a seeded dense FIMI file: categorical records one-hot encoded, mushroom's shape, larger.

    python benchmarks/gen_dense.py [OUT] [--records 50000] [--attributes 35] [--seed 31]

Each record has one value of each of `attributes` categorical attributes (so every record holds
exactly that many items, 30-40 by default), drawn from one of four latent classes: each class
prefers a value per attribute (probability 0.55-0.95, decreasing with the attribute's index),
the rest spread over the attribute's other 2-5 values. Frequent itemsets therefore run deep
(many long itemsets of high support, strong ties), which is what stresses a top-K miner on dense
data (issue 31, "counting that keeps up"). Items are integers; attribute a's values are
100 a + v. OUT defaults to /tmp/dpfim-bench/dense.dat; never write into the repository. Same
seed, same bytes.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np


def generate(records: int, attributes: int, seed: int) -> list[str]:
    rng = np.random.default_rng(seed)
    classes = 4
    values = rng.integers(3, 7, size=attributes)  # 3..6 values an attribute
    favourite = rng.integers(0, values[None, :], size=(classes, attributes))
    strength = np.linspace(0.95, 0.55, attributes)
    cls = rng.choice(classes, size=records, p=[0.4, 0.3, 0.2, 0.1])
    lines = []
    for r in range(records):
        c = cls[r]
        keep = rng.random(attributes) < strength
        other = rng.integers(0, values)
        chosen = np.where(keep, favourite[c], other)
        lines.append(" ".join(str(100 * a + int(v)) for a, v in enumerate(chosen)))
    return lines


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out", nargs="?", default="/tmp/dpfim-bench/dense.dat")
    ap.add_argument("--records", type=int, default=50_000)
    ap.add_argument("--attributes", type=int, default=35)
    ap.add_argument("--seed", type=int, default=31)
    args = ap.parse_args()
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text("\n".join(generate(args.records, args.attributes, args.seed)) + "\n")
    print(out)


if __name__ == "__main__":
    main()
