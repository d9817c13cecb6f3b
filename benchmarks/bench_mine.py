"""Benchmark `dpfim mine` as a whole process on the shared frequent-itemset data sets.

For each data set, r = 1, 2, 3 and eps in {0.1, 1} (delta = 1e-6), measures the median wall time
and the peak RSS of `dpfim mine PATH --size R --eps E --delta 1e-6 --seed 1 --quiet` over several
runs (each in a fresh child that reads its own RUSAGE_CHILDREN), beside
  (a) the floor: a fresh Python process that reads the file and splits every line into a set;
  (b) mlxtend: TransactionEncoder (sparse) + fpgrowth at min_support = c(l+1), the support of the
      (l+1)-th most frequent r-itemset, where l is the rank dpfim stopped at; this returns the same
      top-l itemsets dpfim needed (every nonzero itemset when dpfim answered none, l = inf).
      c(l+1) comes from a simple exact counter in this script, independent of dpfim's engine.

    python benchmarks/bench_mine.py [--data ../shared/data] [--runs 3] [--write docs/performance.md]

Curator-side tool on public benchmark data: it prints exact supports, which dpfim never releases.
"""

from __future__ import annotations

import argparse
import csv
import datetime as dt
import itertools
import json
import os
import platform
import statistics
import subprocess
import sys
import textwrap
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
DATA_SETS = ["retail.dat", "T10I4D100K.dat", "mushroom.dat", "BMS-WebView-2.dat", "groceries.csv"]
BEGIN = "<!-- bench_mine.py: generated table begins -->"
END = "<!-- bench_mine.py: generated table ends -->"

# A fresh child that runs one command and reports the command's peak RSS (KiB, the maximum over
# its waited-for children, i.e. that one command), wall time and exit status as JSON. The timeout
# and the address-space cap apply to the command only; subprocess.run kills it on timeout.
RUNNER = textwrap.dedent(
    """
    import json, resource, subprocess, sys, time
    timeout, mem = float(sys.argv[1]), int(sys.argv[2])
    def cap():
        if mem > 0:
            resource.setrlimit(resource.RLIMIT_AS, (mem, mem))
    t = time.perf_counter()
    try:
        p = subprocess.run(sys.argv[3:], capture_output=True, timeout=timeout or None,
                           preexec_fn=cap)
    except subprocess.TimeoutExpired:
        print(json.dumps({"timeout": True}))
        sys.exit(0)
    wall = time.perf_counter() - t
    rss = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    print(json.dumps({"wall": wall, "rss_kib": rss, "rc": p.returncode,
                      "out": p.stdout.decode()[-4000:], "err": p.stderr.decode()[-600:]}))
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
    import csv, json, sys, time
    import pandas as pd
    from mlxtend.frequent_patterns import fpgrowth
    from mlxtend.preprocessing import TransactionEncoder
    path, r, s = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    t = time.perf_counter()
    with open(path, encoding="utf-8", newline="") as fh:
        rows = (line.split() for line in fh) if path.endswith(".dat") else csv.reader(fh)
        data = [sorted({x.strip() for x in row if x.strip()}) for row in rows]
    enc = TransactionEncoder()
    onehot = enc.fit(data).transform(data, sparse=True)
    frame = pd.DataFrame.sparse.from_spmatrix(onehot, columns=enc.columns_)
    # fpgrowth keeps count >= ceil(min_support * n) = s; the half avoids float round-off there.
    found = fpgrowth(frame, min_support=(s - 0.5) / len(data), use_colnames=True, max_len=r)
    found = found[found["itemsets"].map(len) == r]
    print(json.dumps({"wall": time.perf_counter() - t, "found": int(len(found))}))
    """
)


def measure(cmd: list[str], timeout: float = 0.0, mem_bytes: int = 0) -> dict[str, object]:
    """Run cmd in a fresh measuring child; {"timeout": True} if it ran out of time."""
    proc = subprocess.run(
        [sys.executable, "-c", RUNNER, str(timeout), str(mem_bytes), *cmd],
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(proc.stdout)  # type: ignore[no-any-return]


def dpfim_command() -> list[str]:
    """The installed `dpfim` script beside this interpreter, else `python -m dpfim`."""
    script = Path(sys.executable).parent / "dpfim"
    return [str(script)] if script.exists() else [sys.executable, "-m", "dpfim"]


def read_records(path: Path) -> list[frozenset[str]]:
    """Records as sets of trimmed items (FIMI: whitespace-separated; CSV: csv-module fields)."""
    with path.open(encoding="utf-8", newline="") as fh:
        rows = (line.split() for line in fh) if path.suffix == ".dat" else csv.reader(fh)
        return [frozenset(x.strip() for x in row if x.strip()) for row in rows]


class ExactCounter:
    """The support of the k-th most frequent r-itemset, by level-wise exact counting.

    frequent(r, s) holds every r-itemset with support >= s, with its exact support: an r-itemset
    that frequent has all its (r-1)-subsets in frequent(r-1, s), so only items of those are
    combined, and every record is counted. kth() lowers s by halves until k itemsets reach it.
    """

    def __init__(self, records: list[frozenset[str]]) -> None:
        self.records = records
        self.items = Counter(i for rec in records for i in rec)
        self.cache: dict[tuple[int, int], dict[tuple[str, ...], int]] = {}

    def frequent(self, r: int, s: int) -> dict[tuple[str, ...], int]:
        if (r, s) not in self.cache:
            found: dict[tuple[str, ...], int]
            if r == 1:
                found = {(i,): c for i, c in self.items.items() if c >= s}
            else:
                keep = {i for itemset in self.frequent(r - 1, s) for i in itemset}
                counts: Counter[tuple[str, ...]] = Counter()
                for rec in self.records:
                    items = sorted(rec & keep)
                    if len(items) >= r:
                        counts.update(itertools.combinations(items, r))
                found = {k: c for k, c in counts.items() if c >= s}
            self.cache[(r, s)] = found
        return self.cache[(r, s)]

    def kth(self, r: int, k: int) -> int:
        """c(k) among r-itemsets; 0 when fewer than k have nonzero support."""
        s = max(self.items.values(), default=1)
        while True:
            supports = sorted(self.frequent(r, s).values(), reverse=True)
            if len(supports) >= k:
                return supports[k - 1]
            if s == 1:
                return 0
            s = max(1, s // 2)

    def at_least(self, r: int, s: int) -> int | None:
        """How many r-itemsets have support >= s, if already counted at or below s."""
        known = [t for (q, t) in self.cache if q == r and t <= s]
        if not known:
            return None
        return sum(c >= s for c in self.frequent(r, max(known)).values())


@dataclass
class Row:
    name: str
    r: int
    eps: str
    ell: str
    wall: float
    rss_mib: float
    floor: float
    support: int
    ml_found: int | None = None
    ml_inner: float | None = None
    ml_wall: float | None = None
    ml_rss_mib: float | None = None
    ml_failure: str | None = None  # "timeout", "memory" or "error"


def run_dpfim(path: Path, r: int, eps: str, runs: int) -> tuple[str, float, float] | None:
    """(ell, median wall, max peak RSS MiB) of `runs` seeded runs, or None if dpfim failed."""
    cmd = [*dpfim_command(), "mine", str(path), "--size", str(r), "--eps", eps]
    cmd += ["--delta", "1e-6", "--seed", "1", "--quiet"]
    results = [measure(cmd) for _ in range(runs)]
    bad = [x for x in results if x["rc"] != 0]
    if bad:
        print(f"  dpfim failed (exit {bad[0]['rc']}): {bad[0]['err']}", file=sys.stderr)
        return None
    ells = {str(json.loads(str(x["out"]))["ell"]) for x in results}
    if len(ells) != 1:
        print(f"  warning: --seed 1 gave different l: {sorted(ells)}", file=sys.stderr)
    wall = statistics.median(float(x["wall"]) for x in results)  # type: ignore[arg-type]
    rss = max(int(x["rss_kib"]) for x in results) / 1024  # type: ignore[call-overload]
    return ells.pop(), wall, rss


def run_mlxtend(path: Path, row: Row, args: argparse.Namespace) -> None:
    """Fill row's mlxtend fields: 1 run if slow, else the median of args.runs."""
    cmd = [sys.executable, "-c", MLXTEND, str(path), str(row.r), str(row.support)]
    mem = int(args.mlxtend_mem_gib * 2**30)
    results: list[dict[str, object]] = []
    for k in range(args.runs):
        res = measure(cmd, timeout=args.mlxtend_timeout, mem_bytes=mem)
        if res.get("timeout"):
            row.ml_failure = "timeout"
            return
        if res["rc"] != 0:
            row.ml_failure = "memory" if "MemoryError" in str(res["err"]) else "error"
            print(f"  mlxtend failed: {str(res['err']).strip()[-300:]}", file=sys.stderr)
            return
        results.append(res)
        if k == 0 and float(res["wall"]) > args.mlxtend_repeat_below:  # type: ignore[arg-type]
            break
    inner = [json.loads(str(x["out"])) for x in results]
    row.ml_found = int(inner[0]["found"])
    row.ml_inner = statistics.median(float(x["wall"]) for x in inner)
    row.ml_wall = statistics.median(float(x["wall"]) for x in results)  # type: ignore[arg-type]
    row.ml_rss_mib = max(int(x["rss_kib"]) for x in results) / 1024  # type: ignore[call-overload]


def bench(args: argparse.Namespace) -> list[Row]:
    rows: list[Row] = []
    names = args.only.split(",") if args.only else DATA_SETS
    for name in names:
        path = args.data / name
        if not path.exists():
            print(f"skip {name}: not found in {args.data}", file=sys.stderr)
            continue
        floor = statistics.median(
            float(measure([sys.executable, "-c", FLOOR, str(path)])["wall"])  # type: ignore[arg-type]
            for _ in range(args.runs)
        )
        counter = ExactCounter(read_records(path))
        for r in map(int, args.sizes.split(",")):
            for eps in args.eps.split(","):
                got = run_dpfim(path, r, eps, args.runs)
                if got is None:
                    continue
                ell, wall, rss = got
                support = 1 if ell == "inf" else max(1, counter.kth(r, int(ell) + 1))
                row = Row(name, r, eps, ell, wall, rss, floor, support)
                if not args.no_mlxtend:
                    run_mlxtend(path, row, args)
                    want = counter.at_least(r, support) if support > 1 else None
                    if row.ml_found is not None and want is not None and row.ml_found != want:
                        print(
                            f"  warning: mlxtend found {row.ml_found}, exact {want}",
                            file=sys.stderr,
                        )
                rows.append(row)
                shown = f"{row.ml_wall:.2f}s" if row.ml_wall is not None else row.ml_failure
                print(
                    f"{name} r={r} eps={eps} l={ell}: dpfim {wall:.2f}s {rss:.0f} MiB, "
                    f"floor {floor:.2f}s, mlxtend (support >= {support}) {shown}",
                    file=sys.stderr,
                )
    return rows


def table(rows: list[Row], timeout: float, mem_gib: float) -> str:
    lines = [
        "| data set | r | ε | ℓ (seed 1) | dpfim wall (s) | dpfim peak RSS (MiB) | floor (s) | "
        "dpfim / floor | mlxtend support ≥ | r-itemsets found | mlxtend in-process (s) | "
        "mlxtend process (s) | mlxtend peak RSS (MiB) | mlxtend process / dpfim |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for x in rows:
        if x.ml_wall is not None:
            ml = [str(x.ml_found), f"{x.ml_inner:.2f}", f"{x.ml_wall:.2f}", f"{x.ml_rss_mib:.0f}"]
            ratio = f"{x.ml_wall / x.wall:.1f}×"
        elif x.ml_failure == "timeout":
            ml = ["-", f"> {timeout:.0f}", f"> {timeout:.0f}", "-"]
            ratio = f"> {timeout / x.wall:.0f}×"
        elif x.ml_failure == "memory":
            ml = ["-", "-", "-", f"> {mem_gib * 1024:.0f}"]
            ratio = "-"
        else:
            ml, ratio = ["-"] * 4, "-"
        lines.append(
            f"| {x.name} | {x.r} | {x.eps} | {x.ell} | {x.wall:.2f} | {x.rss_mib:.0f} | "
            f"{x.floor:.2f} | {x.wall / x.floor:.1f}× | {x.support} | {' | '.join(ml)} | {ratio} |"
        )
    return "\n".join(lines)


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
    import mlxtend  # type: ignore[import-untyped]
    import numpy
    import pandas

    return (
        f"{cpu}, {os.cpu_count()} cores, {mem:.0f} GiB RAM; {platform.system()} "
        f"{platform.release()}; Python {platform.python_version()}, numpy {numpy.__version__}, "
        f"pandas {pandas.__version__}, mlxtend {mlxtend.__version__}"
    )


def report(rows: list[Row], args: argparse.Namespace) -> str:
    return (
        f"Measured {dt.date.today().isoformat()} by `python benchmarks/bench_mine.py "
        f"--runs {args.runs}` on: {machine()}.\n\n"
        "Wall time and peak RSS are of the whole `dpfim mine PATH --size r --eps ε --delta 1e-6 "
        f"--seed 1 --quiet` process (median wall and largest peak of {args.runs} runs), "
        "interpreter start-up and imports included. The floor is a fresh Python process that "
        "reads the file and splits every line into a set. mlxtend runs TransactionEncoder "
        "(sparse) + fpgrowth at min_support = c(ℓ+1), the exact support of the (ℓ+1)-th "
        "r-itemset (from a plain counter in the script), so it returns the top-ℓ itemsets dpfim "
        "needed; ℓ = inf means dpfim answered none, and mlxtend is then asked for every nonzero "
        "r-itemset. Its time is given in-process (reading, encoding and fpgrowth, after pandas "
        "and mlxtend are imported) and as a whole process like dpfim's, median of "
        f"{args.runs} runs or 1 run when it takes over {args.mlxtend_repeat_below:.0f} s, capped "
        f"at {args.mlxtend_timeout:.0f} s and {args.mlxtend_mem_gib:g} GiB of address space; "
        "the ratio uses the whole process.\n\n"
        + table(rows, args.mlxtend_timeout, args.mlxtend_mem_gib)
    )


def write(path: Path, text: str) -> None:
    """Replace the generated part of path, keeping any hand-written text around it."""
    block = f"{BEGIN}\n{text}\n{END}"
    old = path.read_text(encoding="utf-8") if path.exists() else ""
    if BEGIN in old and END in old:
        new = old[: old.index(BEGIN)] + block + old[old.index(END) + len(END) :]
    elif "\n## " in old:  # an older generated preamble without markers: replace it
        new = "# Performance\n\n" + block + "\n" + old[old.index("\n## ") :]
    else:
        new = "# Performance\n\n" + block + "\n"
    path.write_text(new, encoding="utf-8")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--data", type=Path, default=REPO.parent / "shared" / "data")
    ap.add_argument("--only", help="comma-separated data set file names (default: all five)")
    ap.add_argument("--sizes", default="1,2,3")
    ap.add_argument("--eps", default="0.1,1")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--no-mlxtend", action="store_true")
    ap.add_argument("--mlxtend-timeout", type=float, default=300.0, help="seconds (default 300)")
    ap.add_argument("--mlxtend-mem-gib", type=float, default=12.0, help="address-space cap")
    ap.add_argument(
        "--mlxtend-repeat-below",
        type=float,
        default=20.0,
        help="repeat mlxtend only when its first run took fewer seconds (default 20)",
    )
    ap.add_argument("--write", type=Path, help="write the report into this markdown file")
    args = ap.parse_args()

    rows = bench(args)
    print(table(rows, args.mlxtend_timeout, args.mlxtend_mem_gib))
    if args.write:
        write(args.write, report(rows, args))


if __name__ == "__main__":
    main()
