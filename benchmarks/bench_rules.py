"""Rule quality of `dpfim rules` against the rules of the exact top-K itemsets (issue 21, point 5).

Reference, per data set: the exact top-K itemsets of the sizes asked for (dpfim's exact counts,
its tie order), their downward closure with exact supports, and mlxtend's association_rules on
those (confidence >= 0.1). A private run (`dpfim rules` with the same K, sizes and threshold,
seeded) finds a rule when the same (antecedents, consequents) is among its rules. Per cell
(data set x mechanism x eps): recall (share of reference rules found, mean over trials) and the
mean absolute error of confidence and lift on the rules found, pooled over trials.

    python benchmarks/bench_rules.py [--data ../shared/data] [--trials 20] [--top 20]
        [--sizes 1-2] [--eps 0.5,1,2] [--csv docs/evaluation/rules.csv]
        [--plot docs/evaluation/rules.png]

The counts are read once per data set and shared by the trials (the release never changes them;
each trial's randomness is its own seed). NOT PRIVATE: a curator-side tool on public benchmark
data; it reads exact supports.
"""

from __future__ import annotations

import argparse
import csv
import datetime as dt
import os
import platform
import statistics
import sys
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from mlxtend.frequent_patterns import association_rules  # noqa: E402

from dpfim import api, rules  # noqa: E402
from dpfim.api import Diagnostics  # noqa: E402
from dpfim.engines.local import count_records  # noqa: E402
from dpfim.readers import read_records  # noqa: E402
from dpfim.request import check_options, parse_sizes  # noqa: E402
from dpfim.views import ids_of  # noqa: E402

DATA_SETS = ["retail.dat", "groceries.csv", "T10I4D100K.dat"]
MECHANISMS = [  # (name, neighbours): every open-universe mechanism of the registry
    ("lmm", "replace"),
    ("stability", "replace"),
    ("lmm-gap", "add-remove"),
    ("lmm-tight", "add-remove"),
    ("limited-domain", "add-remove"),
]
MIN_CONF = 0.1


def reference(
    counts: Any, top: int
) -> dict[tuple[frozenset[str], frozenset[str]], tuple[float, float]]:
    """(antecedents, consequents) -> (confidence, lift) of mlxtend's rules on the exact closure
    of the exact top K (NOT PRIVATE)."""
    import pandas as pd

    counts.ensure(top)
    keys = rules.closure_keys([ids_of(row) for row in counts.itemsets[:top]])
    exact = counts.supports([list(k) for k in keys])
    n = counts.n
    frame = pd.DataFrame(
        [(c / n, frozenset(counts.items[i] for i in k)) for k, c in zip(keys, exact, strict=True)],
        columns=["support", "itemsets"],
    )
    out = association_rules(frame, num_itemsets=n, metric="confidence", min_threshold=MIN_CONF)
    return {
        (r.antecedents, r.consequents): (float(r.confidence), float(r.lift))
        for r in out.itertuples(index=False)
    }


def trial(opened: Any, opts: Any, req: Any, seed: int) -> dict[Any, tuple[float, float]]:
    keep: dict[str, Any] = {}
    api._mine(  # the library's own path on counts read once (what rules_file runs after reading)
        opened,
        opts,
        None,
        seed,
        "fimi",
        Diagnostics(),
        started="",
        engine="local",
        rules=req,
        keep=keep,
    )
    frame = keep["rules"]
    return {
        (r["antecedents"], r["consequents"]): (float(r["confidence"]), float(r["lift"]))
        for r in frame.to_dict("records")
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", default=str(REPO.parent / "shared" / "data"))
    ap.add_argument("--trials", type=int, default=20)
    ap.add_argument("--top", type=int, default=20)
    ap.add_argument("--sizes", default="1-2")
    ap.add_argument("--eps", default="0.5,1,2")
    ap.add_argument("--delta", default="1e-6")
    ap.add_argument("--sets", default=",".join(DATA_SETS))
    ap.add_argument("--csv", default=None)
    ap.add_argument("--plot", default=None)
    ap.add_argument("--from-csv", default=None, help="Only plot this earlier --csv output.")
    args = ap.parse_args()
    if args.from_csv:
        with open(args.from_csv, newline="") as f:
            next(f)  # the NOT PRIVATE header line
            plot(list(csv.DictReader(f)), args.plot)
        return
    req = rules.check_rules("confidence", MIN_CONF)
    rows = []
    for name in args.sets.split(","):
        path = Path(args.data) / name
        records = read_records(str(path), fmt="auto")
        sizes = parse_sizes(args.sizes)
        opened = count_records(records, sizes)
        ref = reference(opened.counts, args.top)
        print(f"# {name}: n = {records.n}, {len(ref)} reference rules", file=sys.stderr)
        for mech, nb in MECHANISMS:
            for eps in args.eps.split(","):
                opts = check_options(
                    size=None,
                    sizes=args.sizes,
                    eps=eps,
                    delta=args.delta,
                    mechanism=mech,
                    neighbours=nb,
                    top=args.top,
                    closure_share=req.closure_share,
                )
                recalls, conf_err, lift_err, t0 = [], [], [], time.perf_counter()
                found = 0
                for seed in range(1, args.trials + 1):
                    got = trial(opened, opts, req, seed)
                    found += len(got)
                    shared = [k for k in ref if k in got]
                    if ref:  # no reference rules: recall is undefined (reported empty)
                        recalls.append(len(shared) / len(ref))
                    conf_err += [abs(got[k][0] - ref[k][0]) for k in shared]
                    lift_err += [abs(got[k][1] - ref[k][1]) for k in shared]
                row = {
                    "data": name,
                    "mechanism": mech,
                    "neighbours": nb,
                    "eps": eps,
                    "delta": args.delta,
                    "top": args.top,
                    "sizes": args.sizes,
                    "reference_rules": len(ref),
                    "trials": args.trials,
                    "recall": round(statistics.fmean(recalls), 3) if recalls else "",
                    "rules_found_per_run": round(found / args.trials, 2),
                    "conf_mae": round(statistics.fmean(conf_err), 4) if conf_err else "",
                    "lift_mae": round(statistics.fmean(lift_err), 4) if lift_err else "",
                    "seconds_per_run": round((time.perf_counter() - t0) / args.trials, 3),
                }
                rows.append(row)
                print(",".join(str(v) for v in row.values()), file=sys.stderr)
    header = (
        f"# NOT PRIVATE: rule quality vs the exact top-{args.top} closure; "
        f"{platform.machine()} {os.cpu_count()} cores, {dt.date.today()}"
    )
    if args.csv:
        with open(args.csv, "w", newline="") as f:
            f.write(header + "\n")
            w = csv.DictWriter(f, fieldnames=list(rows[0]))
            w.writeheader()
            w.writerows(rows)
    if args.plot:
        plot(rows, args.plot)


def plot(rows: list[dict[str, Any]], path: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    sets = list(dict.fromkeys(r["data"] for r in rows))
    fig, axes = plt.subplots(2, len(sets), figsize=(4.2 * len(sets), 6.5), squeeze=False)
    for j, name in enumerate(sets):
        for mech in dict.fromkeys(r["mechanism"] for r in rows):
            cell = [r for r in rows if r["data"] == name and r["mechanism"] == mech]
            eps = [float(r["eps"]) for r in cell]
            for r in cell:
                for key in ("recall", "conf_mae"):
                    r[key] = float(r[key]) if r[key] != "" else ""
            rec = [r["recall"] if r["recall"] != "" else float("nan") for r in cell]
            axes[0][j].plot(eps, rec, marker="o", label=mech)
            mae = [r["conf_mae"] if r["conf_mae"] != "" else float("nan") for r in cell]
            axes[1][j].plot(eps, mae, marker="o", label=mech)
        n_ref = next(r["reference_rules"] for r in rows if r["data"] == name)
        axes[0][j].set_title(f"{name}: {n_ref} reference rules", fontsize=10)
        axes[0][j].set_ylim(-0.02, 1.02)
        axes[0][j].axhline(0.75, color="grey", lw=0.8, ls="--")
        axes[1][j].axhline(0.02, color="grey", lw=0.8, ls="--")
        axes[1][j].set_ylim(bottom=0)
        axes[0][j].set_ylabel("recall of the reference rules")
        axes[1][j].set_ylabel("mean |confidence error|")
        all_eps = sorted({float(r["eps"]) for r in rows})
        for ax in (axes[0][j], axes[1][j]):
            ax.set_xlim(all_eps[0] / 1.3, all_eps[-1] * 1.3)  # also when a panel has no points
            ax.set_xscale("log", base=2)
            ax.set_xlabel("epsilon (delta = 1e-6)")
            ax.grid(alpha=0.3)
    axes[0][0].legend(fontsize=8)
    fig.suptitle(
        f"dpfim rules, K = {rows[0]['top']}, sizes {rows[0]['sizes']}: rule quality vs the "
        "rules of the exact top-K (NOT PRIVATE)"
    )
    fig.tight_layout()
    fig.savefig(path, dpi=110)


if __name__ == "__main__":
    main()
