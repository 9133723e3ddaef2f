#!/usr/bin/env bash
# The runs behind the negotiated columns of docs/results/molba.md: Tables 5.1 (uni) and 5.2
# (swf) with protocol.mode = "negotiated", in the "owners" reading, R = ${R:-5} instances per
# (N, n, m) (15 per row), on the grid of thesis section 5.6.1. Unlike molba-tables.sh, every
# N has seeds of its own (N = 2: seed 1.., 5: 100001.., 10: 200001.., 20: 300001..; m adds
# 1000 per step), so the four N of a row do not share their jobs' p and q (the rigid
# workloads draw owners, then q and p, from one stream: with one seed for every N only the
# owners differ). Every run's summary holds the central reference's scores beside the
# executed one (score_reference: MOLBA+ILBA on the whole instance, which the replicated
# mode executes exactly). Then: python -m gridemu.experiments.molba_tables $OUT --negotiated --write.
set -euo pipefail
OUT=${OUT:-runs/molba-negotiated}
R=${R:-5}
j=0
for N in 2 5 10 20; do
  i=0
  for m in 32 128 512; do
    seed=$((1 + 1000 * i + 100000 * j))
    for ds in uni swf; do
      scenario=molba
      [ "$ds" = swf ] && scenario=molba-swf
      gridemu sweep $scenario --quiet --repeat $R --grid workload.jobs=10,50,100,500 --set sites.count=$N \
        --set sites.procs=$m --set run.seed=$seed --set protocol.machines=owners --set protocol.mode=negotiated \
        --backend inprocess --out $OUT/$ds-N$N-m$m
    done
    i=$((i + 1))
  done
  j=$((j + 1))
done
