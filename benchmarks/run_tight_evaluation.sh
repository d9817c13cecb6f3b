#!/usr/bin/env bash
# lmm-tight against lmm-gap and limited-domain on the shared data (docs/evaluation.md, "lmm-tight").
# Usage: bash benchmarks/run_tight_evaluation.sh [DATA_DIR] [TRIALS]   (NOT PRIVATE output)
set -euo pipefail
data=${1:-../shared/data}
trials=${2:-150}
out=docs/evaluation/tight
mkdir -p "$out"
for ds in retail.dat T10I4D100K.dat BMS-WebView-2.dat groceries.csv mushroom.dat; do
  for r in 1 2 3; do
    name="${ds%.*}-r$r"
    echo "== $name" >&2
    /usr/bin/time -f "$name %e s %M KB" dpfim evaluate "$data/$ds" --size "$r" \
      --eps 0.1,0.5,1,2 --delta 1e-6 --neighbours add-remove --trials "$trials" --seed 20261123 -q \
      --mechanisms lmm-gap,limited-domain,lmm-tight --csv "$out/$name.csv"
  done
done
# A synthetic case where the certified rank must exceed 10 (40-way tie at the top).
python benchmarks/make_tied_top.py "$out/tied-top.csv.data"
dpfim evaluate "$out/tied-top.csv.data" --format basket --size 2 --eps 0.1,0.5,1,2 --delta 1e-6 \
  --neighbours add-remove \
  --trials "$trials" --seed 20261123 -q --mechanisms lmm-gap,limited-domain,lmm-tight \
  --csv "$out/tied-top-r2.csv"
rm -f "$out/tied-top.csv.data"
