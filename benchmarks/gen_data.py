"""Write seeded large benchmark files resampled from the shared data sets (issue 11).

    python benchmarks/gen_data.py [OUT_DIR] [--data ../shared/data] [--seed 11] [--sizes 1M,3M,10M]

OUT_DIR defaults to /tmp/dpfim-bench; never write into the repository. Files:
  fimi-1M.dat, fimi-3M.dat, fimi-10M.dat   retail.dat lines drawn with replacement, and the pair
                                           "900001 900002" planted in 40 % of them: a clear top pair
  long-3M.csv                              order_id,item (header), 3 M orders drawn the same way,
                                           ~31 M rows, one row per item of each order
With --items (issue 22; each drawn the same way, sizes from --sizes):
  fimi-tail-1M.dat                         30 % of the lines carry one more id from a long tail:
                                           log-uniform in [1, 10^12], so most are >= 2^25
  basket-1M.csv                            the same lines, every retail id spelled as a SKU
                                           ("SKU-004711-XL") or an EAN-13 barcode (13 digits,
                                           leading zeros kept), comma-separated
  jsonl-1M.jsonl                           the same lines as JSON arrays: SKUs as strings,
                                           a third of the ids as JSON numbers
Same seed, same bytes.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

PLANTED = b"900001 900002"
PLANT_RATE = 0.4
CHUNK = 500_000


def _lines(data: Path) -> list[bytes]:
    return (data / "retail.dat").read_bytes().rstrip(b"\n").split(b"\n")


def _count(text: str) -> int:
    text = text.strip().upper()
    scale = {"K": 10**3, "M": 10**6}.get(text[-1], 1)
    return int(text.rstrip("KM")) * scale


def write_fimi(lines: list[bytes], n: int, path: Path, rng: np.random.Generator) -> None:
    with path.open("wb") as out:
        for start in range(0, n, CHUNK):
            m = min(CHUNK, n - start)
            picks = rng.integers(0, len(lines), m)
            plant = rng.random(m) < PLANT_RATE
            out.write(
                b"\n".join(
                    (PLANTED + b" " + lines[i].strip()) if p else lines[i].strip()
                    for i, p in zip(picks.tolist(), plant.tolist(), strict=True)
                )
                + b"\n"
            )


def write_long(lines: list[bytes], orders: int, path: Path, rng: np.random.Generator) -> None:
    tokens = [line.split() for line in lines]
    planted = PLANTED.split()
    with path.open("wb") as out:
        out.write(b"order_id,item\n")
        for start in range(0, orders, CHUNK):
            m = min(CHUNK, orders - start)
            picks = rng.integers(0, len(lines), m)
            plant = rng.random(m) < PLANT_RATE
            rows: list[bytes] = []
            for k, (i, p) in enumerate(zip(picks.tolist(), plant.tolist(), strict=True)):
                oid = b"o%d," % (start + k)
                items = [*planted, *tokens[i]] if p else tokens[i]
                rows.extend(oid + it for it in items)
            out.write(b"\n".join(rows) + b"\n")


def _spellings(lines: list[bytes], rng: np.random.Generator) -> dict[bytes, bytes]:
    """Every retail id -> a SKU or an EAN-13 string (one fixed spelling per id)."""
    ids = sorted({t for line in lines for t in line.split()}, key=int)
    out = {}
    for t in ids:
        if rng.random() < 0.5:
            out[t] = b"SKU-%06d-%s" % (int(t), rng.choice([b"S", b"M", b"L", b"XL"]))
        else:
            out[t] = b"%013d" % int(rng.integers(0, 10**13))
    out[b"900001"], out[b"900002"] = b"SKU-900001-M", b"4006381333931"
    return out


def write_items(lines: list[bytes], n: int, out_dir: Path, label: str, seed: int) -> None:
    """The fimi-tail, basket and jsonl files of n records (see the module docstring)."""
    rng = np.random.default_rng([seed, n, 22])
    spell = _spellings(lines, rng)
    tokens = [line.split() for line in lines]
    planted = PLANTED.split()
    paths = [out_dir / f"fimi-tail-{label}.dat", out_dir / f"basket-{label}.csv"]
    paths.append(out_dir / f"jsonl-{label}.jsonl")
    files = [p.open("wb") for p in paths]
    try:
        for start in range(0, n, CHUNK):
            m = min(CHUNK, n - start)
            picks = rng.integers(0, len(lines), m).tolist()
            plant = (rng.random(m) < PLANT_RATE).tolist()
            tail = np.floor(10 ** rng.uniform(0, 12, m)).astype(np.int64).tolist()
            has_tail = (rng.random(m) < 0.3).tolist()
            numeric = rng.random(m) < 1 / 3
            fimi, basket, jsonl = [], [], []
            for k in range(m):
                items = [*planted, *tokens[picks[k]]] if plant[k] else tokens[picks[k]]
                extra = [b"%d" % tail[k]] if has_tail[k] else []
                fimi.append(b" ".join([*items, *extra]))
                names = [spell[t] for t in items]
                basket.append(b",".join(names))
                if numeric[k]:
                    jsonl.append(b"[" + b", ".join(items) + b"]")
                else:
                    jsonl.append(b"[" + b", ".join(b'"' + s + b'"' for s in names) + b"]")
            for f, rows in zip(files, (fimi, basket, jsonl), strict=True):
                f.write(b"\n".join(rows) + b"\n")
    finally:
        for f in files:
            f.close()
    for p in paths:
        print(p, p.stat().st_size)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", nargs="?", default="/tmp/dpfim-bench")
    parser.add_argument(
        "--data", default=str(Path(__file__).resolve().parent.parent.parent / "shared" / "data")
    )
    parser.add_argument("--seed", type=int, default=11)
    parser.add_argument("--sizes", default="1M,3M,10M")
    parser.add_argument("--long-orders", default="3M")
    parser.add_argument(
        "--items",
        action="store_true",
        help="only the issue-22 files (fimi-tail, basket, jsonl) of each size",
    )
    args = parser.parse_args()
    out = Path(args.out)
    repo = Path(__file__).resolve().parent.parent
    if out.resolve().is_relative_to(repo):
        parser.error("write the benchmark files outside the repository")
    out.mkdir(parents=True, exist_ok=True)
    lines = _lines(Path(args.data))
    if args.items:
        for label in args.sizes.split(","):
            write_items(lines, _count(label), out, label, args.seed)
        return
    for label in args.sizes.split(","):
        path = out / f"fimi-{label}.dat"
        write_fimi(lines, _count(label), path, np.random.default_rng([args.seed, _count(label)]))
        print(path, path.stat().st_size)
    orders = _count(args.long_orders)
    path = out / f"long-{args.long_orders}.csv"
    write_long(lines, orders, path, np.random.default_rng([args.seed, orders, 1]))
    print(path, path.stat().st_size)


if __name__ == "__main__":
    main()
