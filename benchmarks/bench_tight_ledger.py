"""A `dpfim mine` run on a tight data set against the same run on a basic one (issue 34).

Builds, in a scratch directory, a 4-record file and two ledgers of N spends each (one run
writes the budget and the first spend, the other spends are appended with the hash chain and
head kept valid), one data set `tight` and one `basic`, then times whole `python -m dpfim mine`
processes in turn (tight, basic, tight, ...), the ledger restored before each run so that every
run sees N entries: the median wall seconds of each and the median of the paired ratios. The
accounting cache is the scratch directory's own (DPFIM_CACHE_DIR): the first run fills it and is
not counted, unless --cold, which empties it before every tight run. --grow times the nightly
case instead: the ledger is not restored, each run adds a spend.

Usage:
  PYTHONPATH=. python benchmarks/bench_tight_ledger.py [--entries 2 365] [--runs 9] [--cold]
      [--grow]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

RUN = ["--eps", "0.05", "--delta", "1e-9", "--neighbours", "add-remove", "--dataset", "d"]


def mine(tmp: Path, ledger: Path, accountant: str, *extra: str) -> list[str]:
    return [
        sys.executable, "-m", "dpfim", "mine", str(tmp / "tiny.csv"), *RUN,
        "--accountant", accountant, "--ledger", str(ledger), "-q", "-o", os.devnull, *extra,
    ]  # fmt: skip


def build(tmp: Path, accountant: str, entries: int, env: dict[str, str]) -> Path:
    """A ledger of `entries` spends of one data set under the accountant."""
    path = tmp / f"{accountant}{entries}.jsonl"
    budget = ["--budget-eps", "10" if accountant == "tight" else "100", "--budget-delta", "1e-6"]
    subprocess.run(mine(tmp, path, accountant, *budget), env=env, check=True)
    lines = path.read_bytes().splitlines()
    last = json.loads(lines[-1])
    prev, seq, out = hashlib.sha256(lines[-1]).hexdigest(), last["seq"], b""
    for _ in range(entries - 1):
        seq += 1
        line = json.dumps({**last, "seq": seq, "prev": prev}, separators=(",", ":")).encode()
        out += line + b"\n"
        prev = hashlib.sha256(line).hexdigest()
    with open(path, "ab") as fh:
        fh.write(out)
    Path(f"{path}.head").write_text(json.dumps({"v": 1, "seq": seq, "sha256": prev}))
    return path


def timed(cmd: list[str], env: dict[str, str]) -> float:
    start = time.perf_counter()
    subprocess.run(cmd, env=env, check=True)
    return time.perf_counter() - start


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--entries", type=int, nargs="+", default=[2, 365])
    ap.add_argument("--runs", type=int, default=9)
    ap.add_argument("--cold", action="store_true", help="an empty cache before every tight run")
    ap.add_argument("--grow", action="store_true", help="the ledger grows by one spend a run")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        tmp = Path(scratch)
        (tmp / "tiny.csv").write_text("a,b\na,b,c\nb,c\na,c\n")
        cache = tmp / "cache"
        env = {**os.environ, "DPFIM_CACHE_DIR": str(cache)}
        for entries in args.entries:
            ledgers = {acc: build(tmp, acc, entries, env) for acc in ("tight", "basic")}
            saved = {
                acc: (p.read_bytes(), Path(f"{p}.head").read_bytes()) for acc, p in ledgers.items()
            }
            walls: dict[str, list[float]] = {"tight": [], "basic": []}
            for i in range(args.runs + 1):
                for acc, path in ledgers.items():
                    if not args.grow:
                        path.write_bytes(saved[acc][0])
                        Path(f"{path}.head").write_bytes(saved[acc][1])
                    if args.cold and acc == "tight":
                        shutil.rmtree(cache, ignore_errors=True)
                    wall = timed(mine(tmp, path, acc), env)
                    if i > 0:  # the first pair warms up (and fills the cache)
                        walls[acc].append(wall)
            ratios = [t / b for t, b in zip(walls["tight"], walls["basic"], strict=True)]
            mode = (" (cold)" if args.cold else "") + (" (growing)" if args.grow else "")
            print(
                f"{entries} entries{mode}: "
                f"tight {statistics.median(walls['tight']):.2f} s (max {max(walls['tight']):.2f}), "
                f"basic {statistics.median(walls['basic']):.2f} s, "
                f"tight/basic {statistics.median(ratios):.2f}x (median of {args.runs} pairs)"
            )


if __name__ == "__main__":
    main()
