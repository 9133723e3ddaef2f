#!/usr/bin/env bash
# The runs behind docs/results/bilb.md beyond Tables 4.2-4.5: the learning figures
# (Figs. 4.3-4.5), what stale offers cost, and how
# often rounds run.
# About 20 minutes on 2 cores. Results under ${OUT:-runs/bilb-extra}.
set -euo pipefail
OUT=${OUT:-runs/bilb-extra}
# Figures 4.3-4.5: strategies learned over 30 periods (report.png of each run)
HOM="--set workload.alpha=2.0 --set workload.beta=2.0"
gridemu run averaging-game-learning --backend inprocess --quiet --out $OUT/fig43a $HOM && gridemu report $OUT/fig43a > /dev/null
gridemu run averaging-game-learning --backend inprocess --quiet --out $OUT/fig43b && gridemu report $OUT/fig43b > /dev/null
gridemu run bilb-learning --backend inprocess --quiet --out $OUT/fig44a $HOM --set sites.count=2 && gridemu report $OUT/fig44a > /dev/null
gridemu run bilb-learning --backend inprocess --quiet --out $OUT/fig44b $HOM && gridemu report $OUT/fig44b > /dev/null
gridemu run bilb-learning --backend inprocess --quiet --out $OUT/fig45a --set sites.count=2 && gridemu report $OUT/fig45a > /dev/null
gridemu run bilb-learning --backend inprocess --quiet --out $OUT/fig45b && gridemu report $OUT/fig45b > /dev/null
ONE="--quiet --repeat 20 --set workload.until=1000.0"
# Staleness: the same grid with slower links
gridemu sweep bilb-overloaded $ONE --grid network.latency=0.001,0.1,0.5,1.0,2.0 --out $OUT/staleness
# How often rounds run: min_gap (the least time between rounds) at l = 1 and l = 1000
gridemu sweep bilb $ONE --set sites.count=10 --grid protocol.min_gap=1,5,20 --grid protocol.limit=1,1000 --out $OUT/gap
