#!/usr/bin/env bash
# Regenerates the runs behind docs/results/molba.md, Tables 5.1 (uni) and 5.2 (swf): the
# full grid of thesis section 5.6.1, N in {2, 5, 10, 20} organizations, n in {10, 50, 100,
# 500} jobs, m in {32, 128, 512} processors per machine, R = ${R:-50} instances each, in two
# readings of which organizations bring a machine (protocol.machines): "all" (section 5.1's
# model: every organization owns machine k) and "owners" (only those that own a job: the
# reading the thesis's tables agree with). 2 readings x 2 datasets x 4 x 4 x 3 x 50 = 9600
# runs of the decentralized molba protocol, about 2 hours on 2 busy cores (docs/results/molba.md: ~86 and
# ~40 minutes for the two readings with PER_N=1; READINGS="all" or
# "owners" runs one reading). Every m has seeds of its own (m = 32: 1..R, 128: 1001..,
# 512: 2001..), so the 150 instances a row pools are 150 independent draws (with one seed
# range for all m, a row held R draws three times over); both readings draw the same
# instances. With one seed for every N, the four N of a (seed, n, m) share their jobs' p and q
# (the rigid workloads draw owners, then q and p, from one stream): PER_N=1 gives every N seeds
# of its own instead (N = 2: +0, 5: +100000, 10: +200000, 20: +300000), one sweep per (N, m)
# in folders ending -N<N>-m<m>, which molba_tables.py reads too. The published tables were run
# with it, one reading per sweep (OUT=runs/molba-pern READINGS=owners, OUT=runs/molba-all-pern
# READINGS=all). Then: python -m gridemu.experiments.molba_tables $OUT --write.
set -euo pipefail
OUT=${OUT:-runs/molba-tables}
R=${R:-50}
READINGS=${READINGS:-all owners}
PER_N=${PER_N:-0}
for reading in $READINGS; do
  suffix=""
  [ "$reading" = all ] || suffix="-$reading"
  i=0
  for m in 32 128 512; do
    for ds in uni swf; do
      scenario=molba
      [ "$ds" = swf ] && scenario=molba-swf
      if [ "$PER_N" = 1 ]; then
        j=0
        for N in 2 5 10 20; do
          gridemu sweep $scenario --quiet --repeat $R --grid workload.jobs=10,50,100,500 --set sites.count=$N \
            --set sites.procs=$m --set run.seed=$((1 + 1000 * i + 100000 * j)) --set protocol.machines=$reading \
            --out $OUT/$ds$suffix-N$N-m$m
          j=$((j + 1))
        done
      else
        gridemu sweep $scenario --quiet --repeat $R --grid sites.count=2,5,10,20 --grid workload.jobs=10,50,100,500 \
          --set sites.procs=$m --set run.seed=$((1 + 1000 * i)) --set protocol.machines=$reading \
          --out $OUT/$ds$suffix-m$m
      fi
    done
    i=$((i + 1))
  done
done
