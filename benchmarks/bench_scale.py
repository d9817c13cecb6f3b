"""Whole-process scale benchmark on the files of benchmarks/gen_data.py (issue 11).

    python benchmarks/gen_data.py /tmp/dpfim-bench
    python benchmarks/bench_scale.py [--dir /tmp/dpfim-bench] [--sizes 1M,3M] [--runs 1]

For each FIMI file and r = 2, 3, side by side in the same run, each as a whole process under
/usr/bin/time (wall seconds, peak RSS):
  dpfim     python -m dpfim mine FILE --size r --eps 1 --delta 1e-6 --seed 1 --quiet --verbose
            (its --verbose phase times: reading, counting, mechanism)
  floor     python -c "for l in open(f): l.split()"  (the Python read-and-split floor)
  pyfim     fim.fpgrowth at the support threshold dpfim's counting reached (so it returns the
            itemsets dpfim enumerated), reading with the same split; "absent" if not installed
and on the long file (order_id,item) for r = 2: dpfim --format long, and DuckDB computing the
top pair by a self-join of the orders restricted to items with support >= the same threshold.
Curator-side tool on synthetic data: it prints exact supports, which dpfim never releases.

    python benchmarks/gen_data.py /tmp/dpfim-bench --items --sizes 1M
    python benchmarks/bench_scale.py --items 1M [--runs 3]

--items LABEL (issue 22): the item-spelling inputs of that size (fimi-tail, basket of SKU /
EAN-13 strings, JSON lines) for r = 2, side by side, all four in turn in each repetition:
  dpfim     as above, with which reader path read the input (from -v)
  floor     a fresh python3 reading the file in binary, one set per line: set(line.split())
            (FIMI), set(line.rstrip(b"\\r\\n").split(b",")) (basket), set(json.loads(line))
  DuckDB    the top pair by a self-join of the distinct (record, item) rows restricted to
            items with support >= dpfim's counting threshold (2 threads)
  polars    the same query with polars' lazy API
DuckDB and polars are bench-only (pip install duckdb polars); "absent" if not installed.
"""

from __future__ import annotations

import argparse
import datetime as dt
import functools
import os
import platform
import re
import subprocess
import sys
from pathlib import Path

PY = sys.executable
FLOOR = "import sys\nfor l in open(sys.argv[1]): l.split()"
PYFIM = """
import sys, fim
r, s = int(sys.argv[2]), int(sys.argv[3])
tracts = [l.split() for l in open(sys.argv[1])]
found = fim.fpgrowth(tracts, target="s", supp=-s, zmin=r, zmax=r)
print(len(found), max((c for _, c in found), default=0))
"""
DUCKDB = """
import sys, duckdb
path, s = sys.argv[1], int(sys.argv[2])
con = duckdb.connect()
con.execute("SET threads TO 2")
con.execute("SET enable_progress_bar = false")
q = f'''
WITH t AS (SELECT * FROM read_csv('{path}', header=true, all_varchar=true)),
freq AS (SELECT item FROM t GROUP BY item HAVING count(*) >= {s}),
p AS (SELECT DISTINCT t.order_id, t.item FROM t JOIN freq USING (item))
SELECT a.item, b.item, count(*) AS c FROM p a JOIN p b
  ON a.order_id = b.order_id AND a.item < b.item
GROUP BY 1, 2 ORDER BY c DESC LIMIT 2
'''
print(con.execute(q).fetchall())
"""


ITEM_FLOORS = {
    "fimi": "import sys\nfor l in open(sys.argv[1], 'rb'): set(l.split())",
    "basket": "import sys\nfor l in open(sys.argv[1], 'rb'): set(l.rstrip(b'\\r\\n').split(b','))",
    "jsonl": "import sys, json\nfor l in open(sys.argv[1], 'rb'): set(json.loads(l))",
}
DUCKDB_ITEMS = r"""
import sys, duckdb
path, kind, s = sys.argv[1], sys.argv[2], int(sys.argv[3])
split = {
    "fimi": "string_split_regex(trim(line), '[ \\t]+')",
    "basket": "string_split(rtrim(line, chr(13)), ',')",
    "jsonl": "from_json(line, '[\"VARCHAR\"]')",
}[kind]
con = duckdb.connect()
con.execute("SET threads TO 2")
con.execute("SET enable_progress_bar = false")
lines = (
    "SELECT row_number() OVER () AS rid, line FROM read_csv('" + path + "', "
    "columns={'line': 'VARCHAR'}, header=false, delim=chr(30), quote='', escape='', "
    "auto_detect=false)"
)
q = (
    "WITH l AS (" + lines + "), "
    "t AS (SELECT DISTINCT rid, trim(item) AS item FROM (SELECT rid, unnest(" + split + ") "
    "AS item FROM l) WHERE trim(item) <> ''), "
    "freq AS (SELECT item FROM t GROUP BY item HAVING count(*) >= " + str(s) + "), "
    "p AS (SELECT t.rid, t.item FROM t JOIN freq USING (item)) "
    "SELECT a.item, b.item, count(*) AS c FROM p a JOIN p b "
    "ON a.rid = b.rid AND a.item < b.item GROUP BY 1, 2 ORDER BY c DESC, 1, 2 LIMIT 2"
)
print(con.execute(q).fetchall())
"""
POLARS_ITEMS = r"""
import sys, polars as pl
path, kind, s = sys.argv[1], sys.argv[2], int(sys.argv[3])
lines = pl.scan_csv(
    path, has_header=False, separator=chr(30), quote_char=None, new_columns=["line"],
    schema_overrides={"line": pl.String},
).with_row_index("rid")
line = pl.col("line").str.strip_chars_end("\r")
if kind == "fimi":
    items = line.str.strip_chars().str.replace_all("[ \t]+", " ").str.split(" ")
elif kind == "basket":
    items = line.str.split(",")
else:  # the flat arrays of strings and integers gen_data.py writes
    items = line.str.strip_chars("[] ").str.replace_all('"', "").str.split(", ")
t = (
    lines.select("rid", items.alias("item")).explode("item")
    .with_columns(pl.col("item").str.strip_chars()).filter(pl.col("item") != "").unique()
)
freq = t.group_by("item").len().filter(pl.col("len") >= s).select("item")
p = t.join(freq, on="item")
top = (
    p.join(p, on="rid", suffix="_b").filter(pl.col("item") < pl.col("item_b"))
    .group_by("item", "item_b").len()
    .sort(["len", "item", "item_b"], descending=[True, False, False]).head(2)
)
print(top.collect().rows())
"""


def timed(cmd: list[str], timeout: float) -> dict[str, object]:
    """Run one command under /usr/bin/time: wall s, peak RSS MiB, exit code, stdout, stderr."""
    full = ["/usr/bin/time", "-f", "@@TIME %e %M", *cmd]
    try:
        p = subprocess.run(full, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"wall": None, "rss": None, "rc": "timeout", "out": "", "err": ""}
    match = re.search(r"@@TIME ([\d.]+) (\d+)", p.stderr)
    wall, rss = (float(match[1]), int(match[2]) / 1024) if match else (None, None)
    return {"wall": wall, "rss": rss, "rc": p.returncode, "out": p.stdout, "err": p.stderr}


def median_run(cmd: list[str], runs: int, timeout: float) -> dict[str, object]:
    results = [timed(cmd, timeout) for _ in range(runs)]
    ok = [r for r in results if isinstance(r["wall"], float)]
    if not ok:
        return results[-1]
    best = sorted(ok, key=lambda r: float(r["wall"]))[len(ok) // 2]  # type: ignore[arg-type]
    best = dict(best)
    best["rss"] = max(float(r["rss"]) for r in ok)  # type: ignore[arg-type]
    best["walls"] = [r["wall"] for r in ok]
    return best


def phase(err: str, name: str) -> float | None:
    m = re.search(rf"time {re.escape(name)}: ([\d.]+) s", err)
    return float(m[1]) if m else None


def fact(err: str, name: str) -> int | None:
    m = re.search(rf"{re.escape(name)}: (\d+)", err)
    return int(m[1]) if m else None


def fmt(x: object, spec: str = ".2f") -> str:
    return "—" if x is None else format(x, spec) if isinstance(x, float) else str(x)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dir", default="/tmp/dpfim-bench")
    parser.add_argument("--sizes", default="1M,3M,10M")
    parser.add_argument("--sizes-r", default="2,3")
    parser.add_argument("--long", default="long-3M.csv")
    parser.add_argument("--runs", type=int, default=1)
    parser.add_argument("--timeout", type=float, default=900)
    parser.add_argument("--no-pyfim", action="store_true")
    parser.add_argument("--items", default=None, help="only the issue-22 inputs of this size")
    args = parser.parse_args()
    d = Path(args.dir)
    if args.items is not None:
        items_table(d, args.items, args.runs, args.timeout)
        return
    try:
        import fim  # noqa: F401

        have_pyfim = not args.no_pyfim
    except ImportError:
        have_pyfim = False
    try:
        import duckdb  # noqa: F401

        have_duckdb = True
    except ImportError:
        have_duckdb = False
    mem = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    print(
        f"Measured {dt.datetime.now(dt.UTC):%Y-%m-%d %H:%M} UTC on {platform.machine()}, "
        f"{os.cpu_count()} cores, {mem:.0f} GiB RAM, Python {platform.python_version()}; "
        f"median of {args.runs} run(s), whole processes under /usr/bin/time.\n"
    )
    print(
        "| input | r | dpfim wall (s) | dpfim peak RSS (MiB) | read (s) | count (s) | "
        "floor (s) | dpfim / floor | pyfim fpgrowth wall (s), RSS (MiB) |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    for label in args.sizes.split(","):
        path = d / f"fimi-{label}.dat"
        if not path.exists():
            print(f"| {path.name} | absent: run benchmarks/gen_data.py |")
            continue
        floor = median_run([PY, "-c", FLOOR, str(path)], args.runs, args.timeout)
        for r in map(int, args.sizes_r.split(",")):
            cmd = [PY, "-m", "dpfim", "mine", str(path), "--size", str(r), "--eps", "1"]
            cmd += ["--delta", "1e-6", "--seed", "1", "--quiet", "--verbose"]
            res = median_run(cmd, args.runs, args.timeout)
            err = str(res["err"])
            s = fact(err, "support threshold reached")
            ref = "absent"
            if have_pyfim and s is not None:
                p = median_run([PY, "-c", PYFIM, str(path), str(r), str(s)], 1, args.timeout)
                ref = f"{fmt(p['wall'])}, {fmt(p['rss'], '.0f')} (rc {p['rc']})"
            ratio = (
                float(res["wall"]) / float(floor["wall"])  # type: ignore[arg-type]
                if isinstance(res["wall"], float) and isinstance(floor["wall"], float)
                else None
            )
            print(
                f"| {path.name} | {r} | {fmt(res['wall'])} (rc {res['rc']}) | "
                f"{fmt(res['rss'], '.0f')} | {fmt(phase(err, 'read'))} | "
                f"{fmt(phase(err, 'count'))} | {fmt(floor['wall'])} | "
                f"{fmt(ratio, '.1f')}× | {ref} |",
                flush=True,
            )
    path = d / args.long
    if path.exists():
        cmd = [PY, "-m", "dpfim", "mine", str(path), "--format", "long", "--record-col"]
        cmd += ["order_id", "--item-col", "item", "--size", "2", "--eps", "1", "--delta"]
        cmd += ["1e-6", "--seed", "1", "--quiet", "--verbose"]
        res = median_run(cmd, args.runs, args.timeout)
        err = str(res["err"])
        s = fact(err, "support threshold reached")
        print(
            f"\nlong {path.name}, r = 2: dpfim {fmt(res['wall'])} s (rc {res['rc']}), "
            f"{fmt(res['rss'], '.0f')} MiB; read {fmt(phase(err, 'read'))} s, "
            f"count {fmt(phase(err, 'count'))} s; threshold reached {s}"
        )
        if have_duckdb and s is not None:
            ddb = median_run([PY, "-c", DUCKDB, str(path), str(s)], args.runs, args.timeout)
            print(
                f"long {path.name}, DuckDB self-join with item-support pruning (s = {s}): "
                f"{fmt(ddb['wall'])} s, {fmt(ddb['rss'], '.0f')} MiB (rc {ddb['rc']}) "
                f"{str(ddb['out']).strip()}"
            )
        else:
            print("DuckDB: not installed (pip install duckdb)")
    if not have_pyfim:
        print("\npyfim: not installed or skipped (pip install pyfim)")


def _have(module: str) -> bool:
    try:
        __import__(module)
    except ImportError:
        return False
    return True


def _load() -> str:
    with open("/proc/loadavg") as f:
        return " ".join(f.read().split()[:3])


def items_table(d: Path, label: str, runs: int, timeout: float) -> None:
    """The issue-22 table: per input, dpfim, the floor, DuckDB and polars side by side (each
    repetition runs all four in turn; medians of `runs`)."""
    mem = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    print(
        f"Measured {dt.datetime.now(dt.UTC):%Y-%m-%d %H:%M} UTC on {platform.machine()}, "
        f"{os.cpu_count()} cores, {mem:.0f} GiB RAM, Python {platform.python_version()}, "
        f"load average {_load()} at the start; median of {runs} run(s) (peak RSS: the "
        "largest), whole processes under /usr/bin/time, r = 2.\n"
    )
    print(
        "| input | dpfim s / MiB | path | floor s | ÷ floor | DuckDB s / MiB | ÷ DuckDB | "
        "polars s / MiB | ÷ polars | top pair (dpfim; DuckDB; polars) |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|")
    tools = [t for t in ("duckdb", "polars") if _have(t)]
    scripts = {"duckdb": DUCKDB_ITEMS, "polars": POLARS_ITEMS}
    for kind, name in (
        ("fimi", f"fimi-tail-{label}.dat"),
        ("basket", f"basket-{label}.csv"),
        ("jsonl", f"jsonl-{label}.jsonl"),
    ):
        path = d / name
        if not path.exists():
            print(f"| {name} | absent: run benchmarks/gen_data.py --items |")
            continue
        cmd = [PY, "-m", "dpfim", "mine", str(path), "--size", "2", "--eps", "1"]
        cmd += ["--delta", "1e-9", "--seed", "1", "--verbose"]
        floor_cmd = [PY, "-c", ITEM_FLOORS[kind], str(path)]
        got: dict[str, list[dict[str, object]]] = {k: [] for k in ("dpfim", "floor", *tools)}
        for _ in range(runs):
            got["dpfim"].append(timed(cmd, timeout))
            got["floor"].append(timed(floor_cmd, timeout))
            s = fact(str(got["dpfim"][-1]["err"]), "support threshold reached")
            for tool in tools:
                if s is not None:
                    script = [PY, "-c", scripts[tool], str(path), kind, str(s)]
                    got[tool].append(timed(script, timeout))
        med = {k: _median(v) for k, v in got.items()}
        dp = med["dpfim"]
        m = re.search(r"read by: .*?\): (.*)", str(dp.get("err", "")))
        way = m[1] if m else "?"

        ratio = functools.partial(_ratio, med)
        cell = functools.partial(_cell, med)
        tops = [_released_pair(str(dp.get("out", "")))]
        tops += [str(med.get(k, {}).get("out", "")).strip()[:80] for k in tools]
        print(
            f"| {name} | {cell('dpfim')} | {way} | {fmt(med['floor'].get('wall'))} | "
            f"{ratio('floor')} | {cell('duckdb')} | {ratio('duckdb')} | {cell('polars')} | "
            f"{ratio('polars')} | {'; '.join(tops)} |",
            flush=True,
        )
    print(f"\nload average {_load()} at the end")


def _ratio(med: dict[str, dict[str, object]], other: str) -> str:
    a, b = med["dpfim"].get("wall"), med.get(other, {}).get("wall")
    return fmt(a / b, ".2f") if isinstance(a, float) and isinstance(b, float) else "—"


def _cell(med: dict[str, dict[str, object]], k: str) -> str:
    r = med.get(k, {})
    if not r:
        return "absent"
    rc = "" if r.get("rc") in (0, None) else f" (rc {r['rc']})"
    return f"{fmt(r.get('wall'))} / {fmt(r.get('rss'), '.0f')}{rc}"


def _median(results: list[dict[str, object]]) -> dict[str, object]:
    ok = [r for r in results if isinstance(r["wall"], float)]
    if not ok:
        return results[-1] if results else {}
    best = dict(sorted(ok, key=lambda r: float(r["wall"]))[len(ok) // 2])  # type: ignore[arg-type]
    best["rss"] = max(float(r["rss"]) for r in ok)  # type: ignore[arg-type]
    return best


def _released_pair(out: str) -> str:
    import json

    try:
        result = json.loads(out)
    except ValueError:
        return "?"
    found = result.get("itemset") or (result.get("itemsets") or [None])[0]
    return str(found.get("items") if isinstance(found, dict) else found)


if __name__ == "__main__":
    main()
