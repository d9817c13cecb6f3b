"""One long record against the same items one per line (issue 35 point 4): writes the two files
and times `dpfim mine` on each, side by side, as whole processes.

    python benchmarks/bench_long_line.py [--items 2000000] [--format fimi|basket|jsonl] [--dir D]

Writes D/long.EXT (one line of N distinct items, then ten lines `1 2`) and D/short.EXT (the
same N items one a line, then the same ten lines), then prints the farm-bench command to run:

    farm-bench -n 5 --timeout 300 --vs 'dpfim mine D/short.EXT …' -- dpfim mine D/long.EXT …

Target (issue 35): the long line's wall time ≤ 1.5× and its peak memory ≤ the short file's.
Results: docs/performance.md, "One long line". NOT PRIVATE: the command prints a result of
an arbitrary synthetic file only.
"""

from __future__ import annotations

import argparse
import json
import shlex
from pathlib import Path

EXT = {"fimi": "dat", "basket": "csv", "jsonl": "jsonl"}


def write(path: Path, rows: list[list[str]], fmt: str) -> None:
    with path.open("w") as fh:
        for row in rows:
            if fmt == "fimi":
                fh.write(" ".join(row) + "\n")
            elif fmt == "basket":
                fh.write(",".join(row) + "\n")
            else:
                fh.write(json.dumps(row) + "\n")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--items", type=int, default=2_000_000)
    ap.add_argument("--format", choices=sorted(EXT), default="fimi")
    ap.add_argument("--dir", type=Path, default=Path("/tmp"))
    a = ap.parse_args()
    items = [str(1_000_000 + i) for i in range(a.items)]
    tail = [["1", "2"]] * 10
    ext = EXT[a.format]
    long, short = a.dir / f"long.{ext}", a.dir / f"short.{ext}"
    write(long, [items, *tail], a.format)
    write(short, [[x] for x in items] + tail, a.format)
    base = "dpfim mine {} --format " + a.format + " --eps 1 --delta 1e-6 -q -o /dev/null"
    b = base.format(shlex.quote(str(short)))
    print(f"farm-bench -n 5 --timeout 300 --vs {shlex.quote(b)} -- {base.format(long)}")


if __name__ == "__main__":
    main()
