"""Benchmark `dpfim mine` as a whole process on the shared FIMI data sets.

For each data set, r = 1, 2, 3 and eps in {0.1, 1} (delta = 1e-6), measures the median wall time
and peak RSS of `python -m dpfim mine ... --seed S --quiet` over several runs, beside
  (a) the floor: reading the file and splitting it into Python sets in a fresh process, and
  (b) mlxtend's fpgrowth finding the same top itemsets: every r-itemset with support at least
      c(l+1), where l is the rank dpfim stopped at (all nonzero ones when it answered none),
      including one-hot encoding, with a time limit.

    python benchmarks/bench_mine.py [--data ../shared/data] [--runs 3] [--write docs/performance.md]

Curator-side tool: it prints exact supports of public benchmark data, never of user data.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import statistics
import subprocess
import sys
import textwrap
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
DATA_SETS = ["retail.dat", "T10I4D100K.dat", "mushroom.dat", "BMS-WebView-2.dat", "groceries.csv"]

# A child that runs a command and reports its own peak RSS (KiB) and wall time as JSON.
RUNNER = textwrap.dedent(
    """
    import json, resource, subprocess, sys, time
    t = time.perf_counter()
    p = subprocess.run(sys.argv[1:], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    wall = time.perf_counter() - t
    rss = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    print(json.dumps({"wall": wall, "rss_kib": rss, "rc": p.returncode,
                      "out": p.stdout.decode()[-4000:], "err": p.stderr.decode()[-400:]}))
    """
)

FLOOR = textwrap.dedent(
    """
    import sys
    sep = None if sys.argv[1].endswith(".dat") else ","
    with open(sys.argv[1], encoding="utf-8") as fh:
        records = [set(line.split(sep)) for line in fh]
    print(len(records))
    """
)

MLXTEND = textwrap.dedent(
    """
    import json, sys, time
    import pandas as pd
    from mlxtend.frequent_patterns import fpgrowth
    from mlxtend.preprocessing import TransactionEncoder
    path, r, s = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    t = time.perf_counter()
    sep = None if path.endswith(".dat") else ","
    with open(path, encoding="utf-8") as fh:
        data = [sorted({x.strip() for x in line.split(sep) if x.strip()}) for line in fh]
    enc = TransactionEncoder()
    onehot = enc.fit(data).transform(data, sparse=True)
    frame = pd.DataFrame.sparse.from_spmatrix(onehot, columns=enc.columns_)
    found = fpgrowth(frame, min_support=(s - 0.5) / len(data), use_colnames=True, max_len=r)
    found = found[found["itemsets"].map(len) == r]
    print(json.dumps({"wall": time.perf_counter() - t, "found": int(len(found))}))
    """
)


def measure(cmd: list[str], timeout: float | None = None) -> dict[str, object]:
    try:
        proc = subprocess.run(
            [sys.executable, "-c", RUNNER, *cmd],
            capture_output=True,
            text=True,
            timeout=timeout,
            check=True,
        )
    except subprocess.TimeoutExpired:
        return {"timeout": True}
    return json.loads(proc.stdout)  # type: ignore[no-any-return]


def support_at(path: Path, r: int, rank: int | None) -> int:
    """c(rank) among r-itemsets (exact, via dpfim's own engine), or 1 for all nonzero."""
    sys.path.insert(0, str(REPO))
    from dpfim.counting import SupportIndex
    from dpfim.readers import read_records

    if rank is None:
        return 1
    index = SupportIndex(read_records(path), r)
    index.ensure(rank)
    return int(index.counts[rank - 1]) if len(index.counts) >= rank else 1


def machine() -> str:
    cpu = "unknown CPU"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    mem = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    import numpy

    return (
        f"{cpu}, {os.cpu_count()} cores, {mem:.0f} GiB RAM; {platform.system()} "
        f"{platform.release()}; Python {platform.python_version()}, numpy {numpy.__version__}"
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--data", type=Path, default=REPO.parent / "shared" / "data")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--sizes", default="1,2,3")
    ap.add_argument("--eps", default="0.1,1")
    ap.add_argument("--mlxtend-timeout", type=float, default=300.0)
    ap.add_argument("--write", type=Path, help="write the markdown report here")
    ap.add_argument("--only", default=None, help="comma-separated data set file names")
    args = ap.parse_args()

    rows = []
    for name in args.only.split(",") if args.only else DATA_SETS:
        path = args.data / name
        if not path.exists():
            print(f"skip {name}: not in {args.data}", file=sys.stderr)
            continue
        floor = statistics.median(
            float(measure([sys.executable, "-c", FLOOR, str(path)])["wall"])  # type: ignore[arg-type]
            for _ in range(args.runs)
        )
        for r in map(int, args.sizes.split(",")):
            for eps in args.eps.split(","):
                runs = [
                    measure(
                        [
                            sys.executable,
                            "-m",
                            "dpfim",
                            "mine",
                            str(path),
                            "--size",
                            str(r),
                            "--eps",
                            eps,
                            "--delta",
                            "1e-6",
                            "--seed",
                            str(k),
                            "--quiet",
                        ]
                    )
                    for k in range(args.runs)
                ]
                bad = [x for x in runs if x["rc"] != 0]
                if bad:
                    raise SystemExit(f"dpfim failed on {name} r={r}: {bad[0]['err']}")
                wall = statistics.median(float(x["wall"]) for x in runs)  # type: ignore[arg-type]
                rss = max(int(x["rss_kib"]) for x in runs) / 1024  # type: ignore[call-overload]
                ell = json.loads(str(runs[0]["out"]))["ell"]
                s = support_at(path, r, None if ell == "inf" else int(ell) + 1)
                ml = measure(
                    [sys.executable, "-c", MLXTEND, str(path), str(r), str(s)],
                    timeout=args.mlxtend_timeout,
                )
                # in-process: encoding + fpgrowth after pandas/mlxtend are imported;
                # whole: the process, as dpfim is measured (interpreter, imports included)
                failed = ml.get("timeout") or ml.get("rc")
                ml_inner = None if failed else float(json.loads(str(ml["out"]))["wall"])
                ml_wall = None if failed else float(ml["wall"])  # type: ignore[arg-type]
                rows.append((name, r, eps, ell, wall, rss, floor, s, ml_inner, ml_wall))
                shown = "timeout" if ml_wall is None else f"{ml_wall:.2f}"
                print(
                    f"{name} r={r} eps={eps} ell={ell}: dpfim {wall:.2f}s {rss:.0f}MiB, "
                    f"floor {floor:.2f}s, mlxtend(s>={s}) {shown}",
                    file=sys.stderr,
                )

    lines = [
        "| data set | r | ε | ℓ (seed 0) | dpfim wall (s) | peak RSS (MiB) | floor (s) | "
        "dpfim / floor | mlxtend support ≥ | mlxtend in-process (s) | mlxtend process (s) | "
        "mlxtend process / dpfim |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for name, r, eps, ell, wall, rss, floor, s, ml_inner, ml_wall in rows:
        limit = f"> {args.mlxtend_timeout:.0f}"
        inner = limit if ml_inner is None else f"{ml_inner:.2f}"
        ml = limit if ml_wall is None else f"{ml_wall:.2f}"
        ratio = (
            f"> {args.mlxtend_timeout / wall:.0f}×" if ml_wall is None else f"{ml_wall / wall:.1f}×"
        )
        lines.append(
            f"| {name} | {r} | {eps} | {ell} | {wall:.2f} | {rss:.0f} | {floor:.2f} | "
            f"{wall / floor:.1f}× | {s} | {inner} | {ml} | {ratio} |"
        )
    table = "\n".join(lines)
    print(table)
    if args.write:
        header = (
            f"Measured {dt.date.today().isoformat()} by `python benchmarks/bench_mine.py "
            f"--runs {args.runs}` on: {machine()}.\n\n"
            "Wall time and peak RSS are of the whole `python -m dpfim mine ... --quiet` process "
            f"(median / max of {args.runs} seeded runs), including interpreter start-up and "
            "imports. The floor is a fresh Python process that reads the file and splits every "
            "line into a set. mlxtend runs fpgrowth (reading and sparse one-hot encoding "
            "included) at the "
            "support of rank ℓ+1, which yields the same top-ℓ itemsets dpfim's search needed; "
            "ℓ = inf means dpfim answered none, and mlxtend is then asked for every nonzero "
            "itemset. Its time is given in-process (after pandas and mlxtend are imported) "
            "and as a whole process like dpfim's; the ratio uses the whole process.\n\n"
        )
        args.write.write_text(header + table + "\n")


if __name__ == "__main__":
    main()
