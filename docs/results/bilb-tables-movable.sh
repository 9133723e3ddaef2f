#!/usr/bin/env bash
# The rerun of Tables 4.3 and 4.5 (α = β = 2) after BILB's plan learned the movable load
# (docs/results/bilb.md, "Tables 4.2-4.5"): the commands of bilb-tables.sh, fewer runs, each
# sweep split in parts (FOLDER-part-*, which bilb_tables.py puts together) so that an
# interrupted rerun keeps what it has and resumes (keep OUT apart from bilb-tables.sh's: a sweep
# and its parts are read together). Two queues, one per core:
#   bash docs/results/bilb-tables-movable.sh a & bash docs/results/bilb-tables-movable.sh b; wait
#   python -m gridemu.experiments.bilb_tables runs/bilb-tables --write --tables 4.3,4.5 --before 0a22a79
# R = 20 runs per cell (seeds 1-20; N = 2: R2 = 40; N = 30: R30 = 10); about 25 minutes on
# 2 busy cores. R=200 R2=200 R30=200 gives the page's usual 200 runs (about 2 hours).
# Two more queues, run later, one at a time: c, Table 4.5's α = β = 1 rows (the same R, R2, R30;
# about 5 minutes); d, Table 4.4 (R44 = 60 runs per cell at N = 10, R44_2 = 200 at N = 2; about
# 15 minutes). Then --tables 4.4,4.5 writes them.
set -euo pipefail
OUT=${OUT:-runs/bilb-tables}
R=${R:-20}
R2=${R2:-40}
R30=${R30:-10}
READING="--set protocol.cut_running=false --set protocol.discrete=true --set workload.integral=releases --set protocol.starting=running --set protocol.round_timing=unbounded --set protocol.local_from=run --set protocol.send=tail"
ONE="--quiet --backend inprocess --set workload.until=1000.0 $READING"
HOM="--set workload.alpha=2.0 --set workload.beta=2.0"
HET="--set workload.alpha.default=2.0 --set workload.beta.default=2.0"
sweep() { local out=${*: -1}; [ -e "$out/orgs.parquet" ] || gridemu sweep "$@"; }
t43() { sweep bilb $ONE --repeat $R --grid protocol.limit=$1 --grid sites.count=10 --out $OUT/t43-part-10-$1; }
case ${1:-a} in
a)
  for lv in 1 3 5 7 9 20 100; do t43 $lv; done
  sweep bilb $ONE --repeat $R --grid sites.count=5 --set protocol.limit=1000 $HOM --out $OUT/t45-hom-2.0-part-5
  sweep bilb-overloaded $ONE --repeat $R --set sites.count=10 --set protocol.limit.default=5 $HET --out $OUT/t45-het-2.0-10
  sweep bilb-overloaded $ONE --repeat $R --set sites.count=5 --set protocol.limit.default=3 $HET --out $OUT/t45-het-2.0-5
  sweep bilb $ONE --repeat $R2 --grid protocol.limit=1,2,3,4,5,6,7 --grid sites.count=2 --out $OUT/t43-part-2-a
  sweep bilb-overloaded $ONE --repeat $R30 --set sites.count=30 --set protocol.limit.default=10 $HET --out $OUT/t45-het-2.0-30
  ;;
b)
  for lv in 2 4 6 8 10 50 1000; do t43 $lv; done
  sweep bilb $ONE --repeat $R30 --grid sites.count=30 --set protocol.limit=1000 $HOM --out $OUT/t45-hom-2.0-n30
  sweep bilb-overloaded $ONE --repeat $R2 --set sites.count=2 --set protocol.limit.default=1 $HET --out $OUT/t45-het-2.0-2
  sweep bilb $ONE --repeat $R2 --grid protocol.limit=8,9,10,20,50,100,1000 --grid sites.count=2 --out $OUT/t43-part-2-b
  # Table 4.5's N = 2 and 10 rows at l = 1000 are Table 4.3's l = 1000 cells (the same runs)
  sweep bilb $ONE --repeat $R2 --grid sites.count=2 --set protocol.limit=1000 $HOM --out $OUT/t45-hom-2.0-part-2
  sweep bilb $ONE --repeat $R --grid sites.count=10 --set protocol.limit=1000 $HOM --out $OUT/t45-hom-2.0-part-10
  ;;
c)
  ONE1="$ONE --set workload.alpha=1.0 --set workload.beta=1.0"
  HET1="--set workload.alpha.default=1.0 --set workload.beta.default=1.0"
  sweep bilb $ONE1 --repeat $R2 --grid sites.count=2 --set protocol.limit=1000 --out $OUT/t45-hom-1.0-part-2
  sweep bilb $ONE1 --repeat $R --grid sites.count=5 --set protocol.limit=1000 --out $OUT/t45-hom-1.0-part-5
  sweep bilb $ONE1 --repeat $R --grid sites.count=10 --set protocol.limit=1000 --out $OUT/t45-hom-1.0-part-10
  sweep bilb $ONE1 --repeat $R30 --grid sites.count=30 --set protocol.limit=1000 --out $OUT/t45-hom-1.0-n30
  for nl in 2:1:$R2 5:3:$R 10:5:$R 30:10:$R30; do
    IFS=: read -r n lv r <<<"$nl"
    sweep bilb-overloaded $ONE --repeat "$r" --set sites.count="$n" --set protocol.limit.default="$lv" $HET1 \
      --out "$OUT/t45-het-1.0-$n"
  done
  ;;
d)
  # in parts of 20 seeds at N = 10 (run.seed = 1, 21, ...) and 40 at N = 2, so that more runs only
  # add parts: R44 runs per level at N = 10 (default 60), R44_2 at N = 2 (default 200)
  for ((s = 1; s <= ${R44:-60}; s += 20)); do
    for lv in 1 2 3 4 5 6 7 8 9 10 20 50 100 1000; do
      sweep bilb-overloaded $ONE $HET --set run.seed=$s --repeat 20 --grid protocol.limit.default=$lv \
        --grid sites.count=10 --out $OUT/t44-part-10-$lv-s$s
    done
  done
  for ((s = 1; s <= ${R44_2:-200}; s += 40)); do
    sweep bilb-overloaded $ONE $HET --set run.seed=$s --repeat 40 \
      --grid protocol.limit.default=1,2,3,4,5,6,7,8,9,10,20,50,100,1000 --grid sites.count=2 --out $OUT/t44-part-2-s$s
  done
  ;;
esac
