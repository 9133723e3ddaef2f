#!/usr/bin/env bash
# The readings of thesis chapter 4 that the text leaves open (docs/results/bilb.md, "Readings"),
# measured on the homogeneous cells (α = β = 2) of Tables 4.2, 4.3 and 4.5: every run one
# period T = 1000 from empty queues, R runs (seeds) per cell, each reading a folder
#   OUT/<cut>-<timing>-<time>/{t42,t43,t45}
# with protocol.local_from swept inside (window, period). A folder already there is kept, so
# an interrupted study resumes. Then:
#   python -m gridemu.experiments.bilb_readings runs/bilb-readings --write
# About 75 minutes on 2 cores with R = 10 (72 at main 98d2bc6, the cores shared with other work).
set -euo pipefail
OUT=${OUT:-runs/bilb-readings}
R=${R:-10}
LEVELS=1,2,3,4,5,6,7,8,9,10,20,50,100,1000
sweep() { local out=${*: -1}; [ -e "$out/orgs.parquet" ] || gridemu sweep "$@"; }
# A reading: cut-TIME or whole-TIME, and "-running" for protocol.starting = running (whole only).
for reading in whole-continuous whole-discrete whole-discrete-running cut-discrete cut-continuous; do
  IFS=- read -r cut time starting <<< "$reading"
  starting=${starting:-queued}
  suffix=$([ $starting = running ] && echo -running || true)
  X="--quiet --repeat $R --set workload.until=1000.0 --grid protocol.local_from=window,period --set protocol.starting=$starting --set protocol.send=tail"
  # every setting explicit: the shipped scenarios' defaults are one reading (bilb.md, "The shipped reading")
  X="$X --set protocol.cut_running=$([ $cut = whole ] && echo false || echo true)"
  if [ $time = discrete ]; then X="$X --set protocol.discrete=true --set workload.integral=releases"
  else X="$X --set protocol.discrete=false --set workload.integral=false"; fi
  # l = 1000 and the averaging game do not depend on the BILB round timing: once, in the plan folder
  plan=$OUT/$cut-plan-$time$suffix
  sweep bilb $X --set protocol.limit=1000 --grid sites.count=5,30 --out $plan/t45
  sweep averaging-game $X --grid sites.count=2,5,10,30 --out $plan/t42
  # a check outside the target: Table 4.2 at the light load (α = β = 1)
  sweep averaging-game $X --grid sites.count=2,5,10,30 --set workload.alpha=1.0 --set workload.beta=1.0 --out $plan/t42a1
  for timing in unbounded plan; do
    # Table 4.3 (and Table 4.5's N = 2 and 10 at l = 1000): every l_k the same
    sweep bilb $X --set protocol.round_timing=$timing --grid protocol.limit=$LEVELS --grid sites.count=2,10 --out $OUT/$cut-$timing-$time$suffix/t43
  done
done
