#!/usr/bin/env bash
# Regenerates the runs behind docs/results/fairshare.md (about 3 minutes on 2 cores), then
# python -m gridemu.experiments.fairshare_tables $OUT prints its tables and draws its figures.
set -euo pipefail
OUT=${OUT:-runs/fairshare}
for a in historical active predictive; do
  gridemu run fairshare-swegrid --quiet --set policy.approach=$a --out $OUT/swegrid-$a
done
gridemu run fairshare-imbalanced --quiet --out $OUT/imbalanced-global
gridemu run fairshare-imbalanced --quiet --set protocol.exchange=none --out $OUT/imbalanced-local
gridemu run fairshare-imbalanced --quiet --set protocol.exchange=service --out $OUT/imbalanced-service
gridemu run fairshare-idle --quiet --out $OUT/idle
# What staleness costs: the usage refresh interval from 10 s to 30 min, imbalanced workload
gridemu sweep fairshare-imbalanced --quiet --grid protocol.refresh=10,60,300,900,1800 \
  --grid policy.approach=historical,predictive --repeat 2 --out $OUT/staleness
