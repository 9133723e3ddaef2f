#!/usr/bin/env bash
# Table 4.3 at N = 2, low levels (docs/results/bilb.md, "Table 4.3 at N = 2: how fast idle
# sites are fed"): the emulator's check of bilb_n2.py's reference runs, for the tables' reading and
# the plan timed reading with min_gap = 5, at N = 2, every level of bilb_n2.py, R = 40 runs
# (seeds 1-40; about 3 minutes on 2 busy cores). Then:
#   python -m gridemu.experiments.bilb_n2 --write      # reads runs/bilb-n2 (--emulator DIR)
set -euo pipefail
OUT=${OUT:-runs/bilb-n2}
R=${R:-40}
READING="--set protocol.cut_running=false --set protocol.discrete=true --set workload.integral=releases --set protocol.starting=running --set protocol.round_timing=unbounded --set protocol.local_from=run --set protocol.send=tail --set protocol.round_order=after_releases"
ONE="--quiet --backend inprocess --set workload.until=1000.0 --set sites.count=2 --grid protocol.limit=1,2,3,4,5,10,1000 --repeat $R $READING"
sweep() { local out=${*: -1}; [ -e "$out/orgs.parquet" ] || gridemu sweep "$@"; }
sweep bilb $ONE --out $OUT/tail
sweep bilb $ONE --set protocol.round_timing=plan --set protocol.min_gap=5 --out $OUT/plan-gap5
