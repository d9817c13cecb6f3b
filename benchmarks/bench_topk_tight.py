"""FNR@K of `--top K` split by basic vs tight composition (issue 20 #6, docs/evaluation.md).

NOT PRIVATE (it reads exact counts, like `dpfim evaluate`, on public benchmark data). For each
mechanism and accountant: the per-round eps0 the split gives, and FNR@K / precision / mean
released over TRIALS runs of the real peeling code (dpfim.evaluate), on one counting of the data.

Usage:
  PYTHONPATH=. python benchmarks/bench_topk_tight.py [DATA] [--top 50] [--eps 1] \
      [--delta 1e-6] [--trials 20] [--mechanisms em] [--csv OUT.csv]
Default: retail.dat of /work/shared/data, r = 2, add-remove, em, seed 20261125.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import pandas as pd

from dpfim.evaluate import evaluate, open_for_evaluation
from dpfim.request import check_options


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("data", nargs="?", default="/work/shared/data/retail.dat")
    ap.add_argument("--size", type=int, default=2)
    ap.add_argument("--top", type=int, default=50)
    ap.add_argument("--eps", default="1")
    ap.add_argument("--delta", default="1e-6")
    ap.add_argument("--neighbours", default="add-remove")
    ap.add_argument("--trials", type=int, default=20)
    ap.add_argument("--mechanisms", default="em")
    ap.add_argument("--supports", action="store_true")
    ap.add_argument("--seed", type=int, default=20261125)
    ap.add_argument("--csv", default=None)
    args = ap.parse_args()
    opened = open_for_evaluation(args.data, size=args.size)
    rows = []
    try:
        for mech in args.mechanisms.split(","):
            for accountant in ("basic", "tight"):
                opts = check_options(
                    size=args.size,
                    eps=args.eps,
                    delta=args.delta,
                    mechanism=mech,
                    neighbours=args.neighbours,
                    universe_given=True,
                    top=args.top,
                    supports=args.supports,
                    accountant=accountant,
                )
                split = opts.split(opts.max_record_items)
                t0 = time.perf_counter()
                table = evaluate(
                    opened,
                    size=args.size,
                    eps_values=[args.eps],
                    delta=args.delta,
                    mechanisms=[mech],
                    trials=args.trials,
                    neighbours=args.neighbours,
                    rng=args.seed,
                    top=args.top,
                    supports=args.supports,
                    accountant=accountant,
                )
                row = table.iloc[0].to_dict()
                row.update(
                    accountant=accountant,
                    per_round_eps=float(split.eps0),
                    per_round_delta=float(split.delta0),
                    supports=args.supports,
                    wall_s=time.perf_counter() - t0,
                )
                rows.append(row)
                print(
                    f"{mech:18s} {accountant:5s} eps0={float(split.eps0):.7g} "
                    f"FNR@{args.top}={row['fnr_at_k']:.3f} precision={row['precision']:.3f} "
                    f"released={row['mean_released']:.1f} ({row['wall_s']:.0f} s)",
                    flush=True,
                )
    finally:
        opened.close()
    out = pd.DataFrame(rows)
    out.insert(0, "not_private", True)
    if args.csv:
        Path(args.csv).write_text(out.to_csv(index=False))


if __name__ == "__main__":
    main()
