#!/usr/bin/env bash
# Regenerates the runs behind docs/results/shapley.md (the Table 1, organizations and latency sweeps take about 4 minutes on 2 cores; the Table 2 one much longer). Needs the Parallel Workloads Archive
# traces (TRACES, default ../shared/traces; see the doc for where to get them).
# Table 1 style: 5 organizations, random sub-traces of 5·10^4 s, 100 instances per workload.
set -euo pipefail
OUT=${OUT:-runs/shapley}
TRACES=${TRACES:-../shared/traces}
R=${R:-100}
gridemu sweep shapley --quiet --repeat $R --set workload.path=$TRACES/LPC-EGEE-2004-1.2-cln.swf.gz \
  --set sites.procs.total=70 --out $OUT/lpc-egee
# Table 2 style: sub-traces of 5·10^5 s (20 instances; some windows take many minutes: not run to the end here)
gridemu sweep shapley --quiet --repeat ${R2:-20} --set workload.path=$TRACES/LPC-EGEE-2004-1.2-cln.swf.gz \
  --set sites.procs.total=70 --set workload.duration=500000 --set run.horizon=500000 --out $OUT/lpc-egee-long
# Figure 1: the number of organizations (LPC-EGEE)
gridemu sweep shapley --quiet --repeat ${R1:-10} --grid sites.count=2,3,5,7 \
  --set workload.path=$TRACES/LPC-EGEE-2004-1.2-cln.swf.gz --set sites.procs.total=70 --out $OUT/lpc-egee-orgs
# What latency costs the decentralized DIRECTCONTR (LPC-EGEE)
gridemu sweep shapley --quiet --repeat ${R1:-10} --grid network.latency=0.000001,0.0001,0.001,0.01 \
  --set protocol.compare='["ref"]' --set workload.path=$TRACES/LPC-EGEE-2004-1.2-cln.swf.gz \
  --set sites.procs.total=70 --out $OUT/lpc-egee-latency
