#!/usr/bin/env bash
# Table 4.2's homogeneous alpha = beta = 2 rows from the shipped averaging-game scenario, with
# no other flag than the run's length: the shipped reading, which sends the head of the queue
# (Tables 4.2-4.5 in bilb.md send the tail). One period T = 1000 per run, R runs a row (seeds
# 1..R), as bilb-tables.sh. About 15 minutes on 2 busy cores. Then:
#   python -m gridemu.experiments.bilb_tables --t42-shipped runs/bilb-t42-shipped [--write]
set -euo pipefail
OUT=${OUT:-runs/bilb-t42-shipped}
R=${R:-200}
gridemu sweep averaging-game --quiet --set workload.until=1000.0 --repeat "$R" --grid sites.count=2,5,10,30 --out "$OUT"
