#!/usr/bin/env bash
# Figures 4.3-4.5: strategies learned over P periods of T = 1000 in one continuous run each
# (queues carried from period to period), until they settle. EXTRA adds settings to every
# run (the reading, docs/results/bilb.md). Then
#   python -m gridemu.experiments.bilb_learning $OUT --write
# About 15 minutes on 2 cores with P = 100 (2026-11-27; the N = 10 runs take most of it).
set -euo pipefail
OUT=${OUT:-runs/bilb-learning}
P=${P:-100}
X="--backend inprocess --quiet --set workload.until=$((P * 1000)).0 ${EXTRA:-}"
HOM="--set workload.alpha=2.0 --set workload.beta=2.0"
run() { gridemu run "$@" && gridemu report "${@: -1}" > /dev/null; }
run averaging-game-learning $X $HOM --out $OUT/fig43a &
run averaging-game-learning $X --out $OUT/fig43b
wait
run bilb-learning $X $HOM --set sites.count=2 --out $OUT/fig44a &
run bilb-learning $X --set sites.count=2 --out $OUT/fig45a
wait
run bilb-learning $X $HOM --out $OUT/fig44b &
run bilb-learning $X --out $OUT/fig45b
wait
