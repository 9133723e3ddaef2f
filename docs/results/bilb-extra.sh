#!/usr/bin/env bash
# The runs behind docs/results/bilb.md beyond the thesis's tables: what stale offers cost and
# how often rounds run (the learning figures are bilb-learning.sh). Then
#   python -m gridemu.experiments.bilb_extra $OUT --write
# About 10 minutes on 2 cores. Results under ${OUT:-runs/bilb-extra}.
set -euo pipefail
OUT=${OUT:-runs/bilb-extra}
# The scenarios' former defaults (cut, continuous; before they took the tables' reading)
FORMER="--set protocol.cut_running=true --set protocol.discrete=false --set workload.integral=false --set protocol.starting=queued --set protocol.round_timing=plan --set protocol.local_from=window --set protocol.send=tail"
ONE="--quiet --repeat 20 --set workload.until=1000.0 $FORMER"
# Staleness: the same grid with slower links
gridemu sweep bilb-overloaded $ONE --grid network.latency=0.001,0.1,0.5,1.0,2.0 --out $OUT/staleness
# How often rounds run: min_gap (the least time between rounds) at l = 1 and l = 1000
gridemu sweep bilb $ONE --set sites.count=10 --grid protocol.min_gap=1,5,20 --grid protocol.limit=1,1000 --out $OUT/gap
