#!/usr/bin/env bash
# Regenerates the runs behind docs/results/bilb.md, Tables 4.2-4.5, the way the thesis
# measures them: every run is one period T = 1000 from empty queues, scored on the jobs
# submitted between 0.2T and 0.8T; a row pools R runs (seeds). The thesis uses 1000 runs
# per row, we use R = ${R:-20}. About 30 minutes on 2 cores.
# EXTRA adds settings to every run: EXTRA="--set protocol.cut_running=false" for the
# reading that keeps running pieces whole. Each folder's table: gridemu report DIR
set -euo pipefail
OUT=${OUT:-runs/bilb-tables}
R=${R:-20}
ONE="--quiet --repeat $R --set workload.until=1000.0 ${EXTRA:-}"
LEVELS=1,2,3,4,5,6,7,8,9,10,20,50,100,1000
for ab in 2.0 1.0; do
  # Table 4.2: averaging game, p_k = 1
  gridemu sweep averaging-game $ONE --grid sites.count=2,5,10,30 --set workload.alpha=$ab --set workload.beta=$ab --out $OUT/t42-hom-$ab
  gridemu sweep averaging-game-overloaded $ONE --grid sites.count=2,5,10,30 \
    --set workload.alpha.default=$ab --set workload.beta.default=$ab --out $OUT/t42-het-$ab
  # Table 4.5: BILB, homogeneous with l = 1000; heterogeneous with the thesis's level per N
  gridemu sweep bilb $ONE --grid sites.count=2,5,10,30 --set protocol.limit=1000 \
    --set workload.alpha=$ab --set workload.beta=$ab --out $OUT/t45-hom-$ab
  for nl in 2:1 5:3 10:5 30:10; do
    gridemu sweep bilb-overloaded $ONE --set sites.count=${nl%:*} --set protocol.limit.default=${nl#*:} \
      --set workload.alpha.default=$ab --set workload.beta.default=$ab --out $OUT/t45-het-$ab-${nl%:*}
  done
done
# Table 4.3: BILB, homogeneous, every l_k the same, N = 2 and 10
gridemu sweep bilb $ONE --grid protocol.limit=$LEVELS --grid sites.count=2,10 --out $OUT/t43
# Table 4.4: BILB, organization 0 overloaded with l_0 = 1000, the others at the same level
gridemu sweep bilb-overloaded $ONE --grid protocol.limit.default=$LEVELS --grid sites.count=2,10 --out $OUT/t44
