#!/usr/bin/env bash
# Regenerates the runs behind docs/results/molba.md, Tables 5.1 (uni) and 5.2 (swf): the
# full grid of thesis section 5.6.1, N in {2, 5, 10, 20} organizations, n in {10, 50, 100,
# 500} jobs, m in {32, 128, 512} processors per machine, R = ${R:-50} instances each,
# 2 x 4 x 4 x 3 x 50 = 4800 runs of the decentralized molba protocol. Every m has seeds of
# its own (m = 32: 1..R, 128: 1001.., 512: 2001..), so the 150 instances a row pools are 150
# independent draws (with one seed range for all m, a row held R draws three times over).
# About 12 minutes on 2 cores. Then: python docs/results/molba_owners.py $OUT and
# python docs/results/molba_tables.py $OUT --write.
set -euo pipefail
OUT=${OUT:-runs/molba-tables}
R=${R:-50}
GRID="--grid sites.count=2,5,10,20 --grid workload.jobs=10,50,100,500"
i=0
for m in 32 128 512; do
  seed=$((1 + 1000 * i))
  gridemu sweep molba --quiet --repeat $R $GRID --set sites.procs=$m --set run.seed=$seed --out $OUT/uni-m$m
  gridemu sweep molba-swf --quiet --repeat $R $GRID --set sites.procs=$m --set run.seed=$seed --out $OUT/swf-m$m
  i=$((i + 1))
done
