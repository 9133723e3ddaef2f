#!/usr/bin/env bash
# Regenerates the runs behind docs/results/bilb.md, Tables 4.2-4.5, the way the thesis
# measures them: every run is one period T = 1000 from empty queues, scored on the jobs
# submitted between 0.2T and 0.8T; a row pools R runs (seeds). The thesis uses 1000 runs
# per row; we use R = ${R:-200}, and R30 = ${R30:-200} for the N = 30 rows (a run of 30
# sites takes 2-9 s here). About 2.5 hours on 2 cores (R30=30: about 70 minutes).
# EXTRA adds settings to every run: the tables use READING below (docs/results/bilb.md,
# "Readings"); EXTRA="--set protocol.cut_running=true" gives the cut column.
# Each folder's table: gridemu report DIR
set -euo pipefail
OUT=${OUT:-runs/bilb-tables}
R=${R:-200}
R30=${R30:-200}
READING=${READING:---set protocol.cut_running=false --set protocol.discrete=true --set workload.integral=releases --set protocol.starting=running --set protocol.round_timing=unbounded --set protocol.local_from=run --set protocol.send=tail}
ONE="--quiet --set workload.until=1000.0 $READING ${EXTRA:-}"
LEVELS=1,2,3,4,5,6,7,8,9,10,20,50,100,1000
for ab in 2.0 1.0; do
  HOM="--set workload.alpha=$ab --set workload.beta=$ab"
  HET="--set workload.alpha.default=$ab --set workload.beta.default=$ab"
  # Table 4.2: averaging game, p_k = 1 (N = 30 in a folder of its own, fewer runs)
  gridemu sweep averaging-game $ONE --repeat $R --grid sites.count=2,5,10 $HOM --out $OUT/t42-hom-$ab
  gridemu sweep averaging-game $ONE --repeat $R30 --grid sites.count=30 $HOM --out $OUT/t42-hom-$ab-n30
  gridemu sweep averaging-game-overloaded $ONE --repeat $R --grid sites.count=2,5,10 $HET --out $OUT/t42-het-$ab
  gridemu sweep averaging-game-overloaded $ONE --repeat $R30 --grid sites.count=30 $HET --out $OUT/t42-het-$ab-n30
  # Table 4.5: BILB, homogeneous with l = 1000; heterogeneous with the thesis's level per N
  gridemu sweep bilb $ONE --repeat $R --grid sites.count=2,5,10 --set protocol.limit=1000 $HOM --out $OUT/t45-hom-$ab
  gridemu sweep bilb $ONE --repeat $R30 --grid sites.count=30 --set protocol.limit=1000 $HOM --out $OUT/t45-hom-$ab-n30
  for nl in 2:1 5:3 10:5 30:10; do
    n=${nl%:*}
    gridemu sweep bilb-overloaded $ONE --repeat $([ $n = 30 ] && echo $R30 || echo $R) --set sites.count=$n \
      --set protocol.limit.default=${nl#*:} $HET --out $OUT/t45-het-$ab-$n
  done
done
# Table 4.3: BILB, homogeneous, every l_k the same, N = 2 and 10
gridemu sweep bilb $ONE --repeat $R --grid protocol.limit=$LEVELS --grid sites.count=2,10 --out $OUT/t43
# Table 4.4: BILB, organization 0 overloaded with l_0 = 1000, the others at the same level
gridemu sweep bilb-overloaded $ONE --repeat $R --grid protocol.limit.default=$LEVELS --grid sites.count=2,10 --out $OUT/t44
