#!/usr/bin/env bash
# The sweeps behind docs/results/decentralization.md (about 13 minutes on 2 cores).
#   bash docs/results/decentralization-runs.sh            # OUT=runs/decentralization
#   python -m gridemu.experiments.decentralization_tables runs/decentralization --write
set -euo pipefail
OUT=${OUT:-runs/decentralization}
N=16,64,256,1024,4096
# Neighborhood averaging over every non-full topology.
gridemu sweep averaging-topology --quiet --repeat 2 --out "$OUT/neighbors" \
  --grid network.topology=ring,random:8,smallworld:8:0.1,tree:4,grid2d --grid sites.count=$N
# Gossip (push-pull with one neighbor a round), on the full graph and two sparse ones.
gridemu sweep averaging-topology --quiet --repeat 2 --out "$OUT/gossip" --set protocol.exchange=gossip \
  --grid network.topology=full,random:8,ring --grid sites.count=$N
# The all-to-all reference (Alg. 4.1 as the thesis runs it): N(N-1) reports a round, so it
# stops at 1,024 sites (4,096 would be 168 million reports).
gridemu sweep averaging-topology --quiet --repeat 2 --out "$OUT/full" \
  --grid network.topology=full --grid sites.count=16,64,256,1024
# BILB (thesis Alg. 4.3, divisible pieces) over neighborhoods, and its all-to-all reference,
# whose every site computes the plan over all N offers each round (N = 256 took 8 minutes).
gridemu sweep bilb-topology --quiet --repeat 2 --out "$OUT/bilb-neighbors" \
  --grid network.topology=ring,random:8,tree:4,grid2d --grid sites.count=16,64,256,1024
gridemu sweep bilb-topology --quiet --out "$OUT/bilb-4096" \
  --grid network.topology=ring,random:8,tree:4,grid2d --grid sites.count=4096
gridemu sweep bilb-topology --quiet --repeat 2 --out "$OUT/bilb-full" \
  --grid network.topology=full --grid sites.count=16,64
# BILB's pairwise (gossip) rounds: with the neighbor a site draws and those that drew it.
gridemu sweep bilb-topology --quiet --repeat 2 --out "$OUT/bilb-gossip" --set protocol.exchange=gossip \
  --grid network.topology=full,random:8,ring --grid sites.count=16,64,256,1024,4096
# BILB over random:8 at 256 sites: fewer rounds (min_gap) against messages and flow time.
gridemu sweep bilb-topology --quiet --repeat 2 --out "$OUT/bilb-gap" --set sites.count=256 \
  --grid protocol.min_gap=1,2,5,10
