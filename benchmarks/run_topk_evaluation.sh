#!/usr/bin/env bash
# Regenerates docs/evaluation/topk-*.csv: `dpfim evaluate --top K --supports` on retail r = 2,
# K in {5, 10, 25, 50}, eps in {0.5, 1, 2}, every mechanism (NOT PRIVATE output).
# Usage: bash benchmarks/run_topk_evaluation.sh [DATA_DIR] [TRIALS] [CHOOSING_TRIALS]
# choosing reruns the exponential mechanism over every nonzero pair in each round (seconds per
# round on retail), so it gets fewer trials and only K = 5 and 10.
set -euo pipefail
data=${1:-../shared/data}
trials=${2:-20}
choosing_trials=${3:-2}
out=docs/evaluation
mkdir -p "$out"
mechs=lmm,lmm-gap,em,noisy-max-laplace,permute-and-flip,stability,limited-domain
for k in 5 10 25 50; do
  /usr/bin/time -f "top $k %e s %M KB" dpfim evaluate "$data/retail.dat" --size 2 --top "$k" \
    --supports --eps 0.5,1,2 --delta 1e-6 --neighbours add-remove --trials "$trials" \
    --seed 20261123 -q --mechanisms "$mechs" --csv "$out/topk-retail-r2-k$k.csv"
done
for k in 5 10; do
  /usr/bin/time -f "choosing top $k %e s %M KB" dpfim evaluate "$data/retail.dat" --size 2 \
    --top "$k" --supports --eps 0.5,1,2 --delta 1e-6 --neighbours add-remove \
    --trials "$choosing_trials" --seed 20261123 -q --mechanisms choosing \
    --csv "$out/topk-retail-r2-k$k-choosing.csv"
done
