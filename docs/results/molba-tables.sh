#!/usr/bin/env bash
# Regenerates the runs behind docs/results/molba.md, Tables 5.1 (uni) and 5.2 (swf): the
# full grid of thesis section 5.6.1, N in {2, 5, 10, 20} organizations, n in {10, 50, 100,
# 500} jobs, m in {32, 128, 512} processors per machine, R = ${R:-50} instances (seeds) each,
# 2 x 4 x 4 x 3 x 50 = 4800 runs of the decentralized molba protocol. About 25 minutes on
# 2 cores. Then: python docs/results/molba_tables.py (reads $OUT, writes the tables).
set -euo pipefail
OUT=${OUT:-runs/molba-tables}
R=${R:-50}
GRID="--grid sites.count=2,5,10,20 --grid workload.jobs=10,50,100,500 --grid sites.procs=32,128,512"
gridemu sweep molba --quiet --repeat $R $GRID --out $OUT/uni
gridemu sweep molba-swf --quiet --repeat $R $GRID --out $OUT/swf
