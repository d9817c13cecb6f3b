"""Benchmark `dpfim mine --engine spark` (local[N]) against the local engine on large FIMI files.

For each size (records), a FIMI file is made by resampling the lines of retail.dat with a seeded
numpy generator (into --work, never into the repository). Each engine runs `dpfim mine FILE
--size R --eps 1 --delta 1e-9 --seed 1 --verbose` as a whole child process; the script reads the
child's own timings from --verbose (Spark start-up, read, count + mechanism) and samples the
resident memory of the process tree every 0.1 s: the Python driver, the JVM (in local mode the
driver JVM is also the executor), and the Python workers.

With --fpgrowth, Spark MLlib's FPGrowth runs on the same file as a reference, at minSupport =
the support of the top r-itemset (what the issue measured): it mines every frequent itemset of
every size at that support, far more than dpfim needs.

    python benchmarks/bench_spark.py --records 1000000 3000000 10000000 [--fpgrowth 1000000]
    python benchmarks/bench_spark.py --records 10000000 --fpgrowth 10000000 --pairs 2

--pairs N runs dpfim on Spark and FPGrowth alternately N times (the machine's load changes; each
row records the 1-minute load average before and after the run).

Curator-side tool on public benchmark data: it prints exact supports, which dpfim never releases.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
SHARED = REPO.parent / "shared" / "data"


def make_file(records: int, work: Path, seed: int = 20261123) -> Path:
    """`records` lines drawn uniformly with replacement from retail.dat (seeded)."""
    path = work / f"retail_{records}.dat"
    if path.exists():
        return path
    lines = (SHARED / "retail.dat").read_bytes().rstrip(b"\n").split(b"\n")
    rng = np.random.default_rng(seed)
    tmp = path.with_suffix(".tmp")
    with open(tmp, "wb") as out:
        for start in range(0, records, 1_000_000):
            picks = rng.integers(0, len(lines), min(1_000_000, records - start))
            out.write(b"\n".join(lines[i] for i in picks.tolist()) + b"\n")
    tmp.rename(path)
    return path


def _tree_rss(root: int) -> dict[str, int]:
    """RSS (bytes) of root and its descendants, by role: driver, jvm, workers (summed)."""
    children: dict[int, list[int]] = {}
    names: dict[int, str] = {}
    rss: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                stat = f.read()
            with open(f"/proc/{entry}/statm") as f:
                pages = int(f.read().split()[1])
        except OSError:
            continue
        pid = int(entry)
        name = stat[stat.index("(") + 1 : stat.rindex(")")]
        ppid = int(stat[stat.rindex(")") + 2 :].split()[1])
        children.setdefault(ppid, []).append(pid)
        names[pid] = name
        rss[pid] = pages * os.sysconf("SC_PAGE_SIZE")
    out = {"driver": rss.get(root, 0), "jvm": 0, "workers": 0}
    todo = list(children.get(root, []))
    while todo:
        pid = todo.pop()
        todo.extend(children.get(pid, []))
        role = "jvm" if names.get(pid) == "java" else "workers"
        out[role] += rss.get(pid, 0)
    return out


def run(cmd: list[str]) -> dict[str, object]:
    """Run cmd; wall time, peak RSS by role, the --verbose timings it printed, and the load
    average before and after."""
    load_before = os.getloadavg()[0]
    peak = {"driver": 0, "jvm": 0, "workers": 0}
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    done = threading.Event()

    def sample() -> None:
        while not done.is_set():
            for role, value in _tree_rss(proc.pid).items():
                peak[role] = max(peak[role], value)
            done.wait(0.1)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    out, err = proc.communicate()
    wall = time.perf_counter() - start
    done.set()
    sampler.join()
    text = err.decode(errors="replace")
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed ({proc.returncode}): {text[-2000:]}")
    timings = {
        m.group(1): float(m.group(2)) for m in re.finditer(r"time ([\w +-]+): ([0-9.]+) s", text)
    }
    return {
        "wall": wall,
        "timings": timings,
        "peak_mib": {k: v / 2**20 for k, v in peak.items()},
        "itemset": json.loads(out)["itemset"],
        "load": [round(load_before, 2), round(os.getloadavg()[0], 2)],
    }


def mine(path: Path, size: int, engine: str, master: str) -> dict[str, object]:
    cmd = [
        sys.executable, "-m", "dpfim", "mine", str(path), "--size", str(size),
        "--eps", "1", "--delta", "1e-9", "--seed", "1", "--verbose", "--quiet",
    ]  # fmt: skip
    if engine == "spark":
        cmd += ["--engine", "spark", "--spark-master", master]
    return run(cmd)


FPGROWTH = """
import sys, time, warnings
warnings.filterwarnings("ignore")
t0 = time.perf_counter()
from pyspark.sql import SparkSession, functions as F
from pyspark.ml.fpm import FPGrowth
spark = (SparkSession.builder.master(sys.argv[2]).config("spark.ui.enabled", "false")
         .config("spark.driver.memory", sys.argv[4]).getOrCreate())
spark.sparkContext.setLogLevel("ERROR")
t1 = time.perf_counter()
lines = spark.read.option("lineSep", "\\n").text(sys.argv[1])
baskets = lines.select(F.array_distinct(F.split(F.trim("value"), "[ \\t]+")).alias("items"))
n = baskets.count()
model = FPGrowth(itemsCol="items", minSupport=float(sys.argv[3]) / n).fit(baskets)
found = model.freqItemsets.count()
t2 = time.perf_counter()
print(f"time spark start-up: {t1 - t0:.3f} s", file=sys.stderr)
print(f"time fpgrowth: {t2 - t1:.3f} s", file=sys.stderr)
print('{"itemset": null, "frequent_itemsets": %d}' % found)
"""


def fpgrowth(path: Path, support: int, master: str, memory: str) -> dict[str, object]:
    return run([sys.executable, "-c", FPGROWTH, str(path), master, str(support), memory])


def top_support(path: Path, size: int) -> int:
    from dpfim.engines.local import SupportIndex
    from dpfim.readers import read_records

    index = SupportIndex(read_records(path), size)
    index.ensure(1)
    return int(index.counts[0])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--records", type=int, nargs="+", default=[1_000_000, 3_000_000, 10_000_000])
    ap.add_argument("--size", type=int, default=2)
    ap.add_argument("--master", default="local[2]")
    ap.add_argument("--work", type=Path, default=Path("/tmp/dpfim-bench-spark"))
    ap.add_argument("--fpgrowth", type=int, nargs="*", default=[], help="sizes to run it on")
    ap.add_argument("--fpgrowth-memory", default="12g", help="spark.driver.memory for FPGrowth")
    ap.add_argument("--pairs", type=int, default=1, help="Spark / FPGrowth runs, alternating")
    ap.add_argument("--json", type=Path, default=None, help="also write the results here")
    args = ap.parse_args()
    args.work.mkdir(parents=True, exist_ok=True)
    results = []
    for records in args.records:
        path = make_file(records, args.work)
        row: dict[str, object] = {"records": records, "bytes": path.stat().st_size}
        row["local"] = mine(path, args.size, "local", args.master)
        support = top_support(path, args.size) if records in args.fpgrowth else None
        for k in range(args.pairs):
            key = "" if k == 0 else f" {k + 1}"
            row["spark" + key] = mine(path, args.size, "spark", args.master)
            assert row["local"]["itemset"] == row["spark" + key]["itemset"]  # type: ignore[index]
            if support is not None:
                row["fpgrowth" + key] = fpgrowth(path, support, args.master, args.fpgrowth_memory)
            print(json.dumps(row), flush=True)
        results.append(row)
    if args.json is not None:
        args.json.write_text(json.dumps(results, indent=1) + "\n")


if __name__ == "__main__":
    main()
