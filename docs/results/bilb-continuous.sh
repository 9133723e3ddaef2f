#!/usr/bin/env bash
# The "continuous" variant of docs/results/bilb.md: Tables 4.2-4.5 measured on one run of
# ten periods per row (queues carried from one period to the next), where the thesis runs
# every period from empty queues (bilb-tables.sh). One `gridemu sweep` per table block,
# results under ${OUT:-runs/bilb-continuous}. About 25 minutes on 2 cores.
# Print a table from a sweep with: gridemu report DIR   (DIR holding runs.parquet)
set -euo pipefail
OUT=${OUT:-runs/bilb-continuous}
LEVELS=1,2,3,4,5,6,7,8,9,10,20,50,100,1000
# The scenarios' former defaults (cut, continuous; before they took the tables' reading)
FORMER="--set protocol.cut_running=true --set protocol.discrete=false --set workload.integral=false --set protocol.starting=queued --set protocol.round_timing=plan --set protocol.local_from=window --set protocol.send=tail"
# Table 4.2: averaging game, p_k = 1, N = 2, 5, 10, 30, alpha = beta = 2 and 1
for ab in 2.0 1.0; do
  gridemu sweep averaging-game --quiet $FORMER --grid sites.count=2,5,10,30 --set workload.alpha=$ab --set workload.beta=$ab --out $OUT/t42-hom-$ab
  gridemu sweep averaging-game-overloaded --quiet $FORMER --grid sites.count=2,5,10,30 \
    --set workload.alpha.default=$ab --set workload.beta.default=$ab --out $OUT/t42-het-$ab
done
# Table 4.3: BILB, homogeneous, every l_k fixed to the same level, N = 2 and 10
gridemu sweep bilb --quiet $FORMER --grid protocol.limit=$LEVELS --grid sites.count=2,10 --out $OUT/t43
# Table 4.4: BILB, organization 0 overloaded with l_0 = 1000, the others at the same level
gridemu sweep bilb-overloaded --quiet $FORMER --grid protocol.limit.default=$LEVELS --grid sites.count=2,10 --out $OUT/t44
# Table 4.5: BILB with the levels of the thesis's rows
for ab in 2.0 1.0; do
  gridemu sweep bilb --quiet $FORMER --grid sites.count=2,5,10,30 --set protocol.limit=1000 \
    --set workload.alpha=$ab --set workload.beta=$ab --out $OUT/t45-hom-$ab
  for nl in 2:1 5:3 10:5 30:10; do
    gridemu sweep bilb-overloaded --quiet $FORMER --set sites.count=${nl%:*} --set protocol.limit.default=${nl#*:} \
      --set workload.alpha.default=$ab --set workload.beta.default=$ab --out $OUT/t45-het-$ab-${nl%:*}
  done
done
