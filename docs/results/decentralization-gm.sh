#!/usr/bin/env bash
# The GM sweeps behind docs/results/decentralization.md, "Greedy migration" (about 6 minutes on 2 cores).
#   bash docs/results/decentralization-gm.sh            # OUT=runs/decentralization
#   python -m gridemu.experiments.decentralization_gm runs/decentralization --write
set -euo pipefail
OUT=${OUT:-runs/decentralization}
# Decentralized GM: d = 0 (local GM, no message), 1, 2, 4 sampled sites, 16 to 1,024 sites.
gridemu sweep gm-scale --quiet --repeat 2 --out "$OUT/gm-sampled" \
  --grid protocol.samples=0,1,2,4 --grid sites.count=16,64,256
gridemu sweep gm-scale --quiet --out "$OUT/gm-sampled-1024" \
  --grid protocol.samples=0,1,2,4 --grid sites.count=1024
# Over a random graph of degree 8 (samples among the neighbors).
gridemu sweep gm-scale --quiet --out "$OUT/gm-sampled-random8" --set network.topology=random:8 \
  --grid protocol.samples=2 --grid sites.count=16,64,256,1024
# GM replicated at every site (the reference): 2(N-1) broadcasts a job; 64 sites take
# about 40 s, 256 would take about 10 minutes.
gridemu sweep gm-scale --quiet --repeat 2 --out "$OUT/gm-replicated" --set protocol.mode=replicated \
  --grid sites.count=16,64
