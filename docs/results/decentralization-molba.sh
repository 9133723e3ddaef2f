#!/usr/bin/env bash
# The MOLBA sweeps behind docs/results/decentralization.md, "MOLBA" (about 6 minutes on 2 cores).
#   bash docs/results/decentralization-molba.sh            # OUT=runs/decentralization
#   python -m gridemu.experiments.decentralization_molba runs/decentralization --write
set -euo pipefail
OUT=${OUT:-runs/decentralization}
# The shipped molba scenario (organizations of 128 processors, uni jobs with Zipf owners)
# with 10 jobs per organization. Replicated MOLBA (every job offered to every site, the
# central plan at each) stops at 100 organizations (one run there takes about 25 s).
for n in 5 20 100; do
  gridemu sweep molba --quiet --repeat 3 --out "$OUT/molba-$n" --set sites.count=$n --set workload.jobs=$((10 * n)) \
    --grid protocol.mode=replicated,aggregates
done
gridemu sweep molba --quiet --repeat 3 --out "$OUT/molba-500" --set sites.count=500 --set workload.jobs=5000 \
  --grid protocol.mode=aggregates
