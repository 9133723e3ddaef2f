#!/usr/bin/env bash
# The DIRECTCONTR sweeps behind docs/results/decentralization.md, "DIRECTCONTR" (about 15 minutes on 2 cores).
#   bash docs/results/decentralization-directcontr.sh            # OUT=runs/decentralization
#   python -m gridemu.experiments.decentralization_directcontr runs/decentralization --write
set -euo pipefail
OUT=${OUT:-runs/decentralization}
# Sampled DIRECTCONTR, d = 0 (each organization alone) to 8, 10 to 300 organizations. The
# summary measures Δψ/p_tot against RAND(N) and runs centralized DIRECTCONTR on the same jobs.
gridemu sweep shapley-scale --quiet --repeat 2 --out "$OUT/directcontr-sampled" \
  --grid protocol.choices=0,1,2,4,8 --grid sites.count=10,30,100
gridemu sweep shapley-scale --quiet --repeat 2 --out "$OUT/directcontr-sampled-300" \
  --grid protocol.choices=0,2,8 --grid sites.count=300
# 1,000 organizations (135,000 jobs): the run alone; RAND(N) would schedule 20,000 sampled
# coalitions of about 67,000 jobs each, some 20 times its work at 300 organizations, for a 7 s run: no fairness figure.
gridemu sweep shapley-scale --quiet --out "$OUT/directcontr-sampled-1000" --set 'protocol.compare=[]' \
  --grid protocol.choices=2 --grid sites.count=1000
# DIRECTCONTR replicated at every site (the reference): 2(N-1) broadcasts a job, the clock
# stretched by 4L per time unit.
gridemu sweep shapley-scale --quiet --repeat 2 --out "$OUT/directcontr-replicated" --set protocol.mode=replicated \
  --grid sites.count=10,30,100
gridemu sweep shapley-scale --quiet --out "$OUT/directcontr-replicated-300" --set protocol.mode=replicated \
  --grid sites.count=300
# What latency costs each mode, 30 organizations.
gridemu sweep shapley-scale --quiet --repeat 2 --out "$OUT/directcontr-latency" --set sites.count=30 \
  --grid protocol.mode=replicated,sampled --grid network.latency=0.001,0.01,0.1
