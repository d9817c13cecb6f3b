"""Each reader's remaining fallback against its compiled path (issue 22: a fallback that remains
must be no slower than 1.5x the compiled path). Reads one file with read_records, forcing the
path by the readers' own size thresholds, and prints the seconds it took.

    python benchmarks/bench_paths.py compiled|fallback FILE [--format fimi|basket|jsonl]

Time it as a whole process, side by side, e.g.
    farm-bench -n 5 --vs 'python benchmarks/bench_paths.py fallback F' -- \\
        python benchmarks/bench_paths.py compiled F
Inputs: benchmarks/gen_data.py --items --sizes 1M (seeded). NOT PRIVATE: it only reads.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from dpfim.readers import basket, fimi, jsonl, read_records

BIG = 1 << 62


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("path", choices=["compiled", "fallback"])
    ap.add_argument("file")
    ap.add_argument("--format", default="auto")
    a = ap.parse_args()
    at = 0 if a.path == "compiled" else BIG
    fimi.COMPILED_FROM = at
    basket.COMPILED_FROM = at
    jsonl.COMPILED_FROM = at
    t0 = time.perf_counter()
    records = read_records(a.file, fmt=a.format, max_record_items=64)
    print(
        f"{a.path}: {records.n} records, {len(records.items)} items, "
        f"{time.perf_counter() - t0:.2f} s"
    )


if __name__ == "__main__":
    main()
