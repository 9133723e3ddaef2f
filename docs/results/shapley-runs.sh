#!/usr/bin/env bash
# Regenerates the runs behind docs/results/shapley.md, then its tables and figure:
#   bash docs/results/shapley-runs.sh [STAGE ...]        # stages: table1 table2 contended ricc ricc-long orgs first latency
#                                                        #   and warm warm-long warm-ricc warm-ricc-long facts (not in the default)
#   python -m gridemu.experiments.shapley_tables runs/shapley --write
#   python -m gridemu.experiments.shapley_warm tables runs/shapley-warm --write
#   python -m gridemu.experiments.shapley_warm tables docs/results/data/shapley-warm --write   # RICC Table 2 warm
# Needs the Parallel Workloads Archive traces (TRACES, default ../shared/traces; see the doc).
# The setup of both papers ([S] section 5.1, [L] section 6.2): 5 organizations, the trace's users
# spread uniformly over them, parallel jobs split into sequential copies, the trace's machine
# size (LPC-EGEE 70, RICC 8192) split over the organizations by Zipf or uniformly, random
# windows of 5·10^4 s (Table 1) or 5·10^5 s (Table 2). Each run computes every algorithm on the
# same window, so the algorithms are compared window by window.
# Times on 2 cores (sweeps use both): table1 3 min, table2 and contended 17 min together,
# ricc 20 min, orgs 9 min, first 20 min, latency 1 min, ricc-long an hour (15 min a part).
set -euo pipefail
OUT=${OUT:-runs/shapley}
TRACES=${TRACES:-../shared/traces}
R=${R:-100}          # windows per cell of Tables 1 and 2 (a fifth more are drawn: see EXTRA)
R1=${R1:-10}         # windows per point of the organization sweeps
R3=${R3:-100}        # windows of the RICC Table 2 cell
LPC=$TRACES/LPC-EGEE-2004-1.2-cln.swf.gz
RICC=$TRACES/RICC-2010-2.swf.gz
LONG=(--set workload.duration=500000 --set run.horizon=500000)
STAGES=${*:-table1 table2 contended ricc ricc-long orgs first latency}
# Warm-start windows and DIRECTCONTR - FAIRSHARE under every reading (shapley_warm.py: the same
# windows as the sweeps, seeds 1.., each algorithm on the pure functions; per window the cold, the
# FCFS-warm and the same-algorithm-warm instances, W = --same-warmup). WARM = windows a split.
# What shapley.md reports: LPC-EGEE and RICC Table 1 in full (100 windows a split) and RICC Table 2
# (100 uniform windows, run over three sessions: its CSV is kept, and a run resumes from it: a seed
# already in the CSV is not run again). CPU seconds a
# window, unloaded: LPC 5·10^4 s 1.3, LPC 5·10^5 s 7, RICC 5·10^4 s 73 before 59256a3 (REF on 8192
# processors; seed 1: 32.5 s before, 21.4 s after 9c2fdcf), RICC 5·10^5 s 79-437 s of wall time (median
# 189 s) at nice 19 with little else running (up to 1,382 s beside other work). Two processes with SEEDS=LO-HI
# split the work.
WARM=${WARM:-100}
WOUT=${WOUT:-runs/shapley-warm}
KEPT=${KEPT:-docs/results/data/shapley-warm}   # warm-ricc-long's CSV, in the repository
warm() { python -m gridemu.experiments.shapley_warm run "$@"; }
# Some windows hold no job (LPC-EGEE has gaps of days): Δψ/p_tot is 0/0 there, the run
# stops with "has no job to run" and the sweep lists it in failures.csv and exits 1. A fifth
# more windows are drawn, and shapley_tables.py keeps the first R with jobs by seed.
EXTRA=$((R + R / 5))
sweep() { gridemu sweep shapley --quiet --overwrite "$@" || [ $? -eq 1 ]; }
for stage in $STAGES; do
  case $stage in
    table1)     # [S] Table 1: LPC-EGEE, 70 processors
      sweep --repeat "$EXTRA" --grid sites.procs.dist=zipf,uniform --set workload.path="$LPC" \
        --set sites.procs.total=70 --out "$OUT/lpc-egee" ;;
    table2)     # [S] Table 2 and [L] Table 1: the same with windows of 5·10^5 s
      sweep --repeat "$EXTRA" --grid sites.procs.dist=zipf,uniform --set workload.path="$LPC" \
        --set sites.procs.total=70 "${LONG[@]}" --out "$OUT/lpc-egee-long" ;;
    contended)  # Table 2's cell where the organizations compete: [L]'s 17 processors ("almost continuously busy")
      sweep --repeat "$EXTRA" --grid sites.procs.dist=zipf,uniform --set workload.path="$LPC" \
        --set sites.procs.total=17 "${LONG[@]}" --out "$OUT/lpc-egee-17" ;;
    ricc)       # [S] Table 1: RICC, 8192 processors
      sweep --repeat "$EXTRA" --grid sites.procs.dist=zipf,uniform --set workload.path="$RICC" \
        --set sites.procs.total=8192 --out "$OUT/ricc" ;;
    ricc-long)  # [S] Table 2 and [L] Table 1 on RICC: uniform only, as [L]; in parts of 25
      # windows (seeds), each kept as it finishes: a window takes about a minute
      for first in $(seq "${FROM:-1}" 25 "$R3"); do   # FROM=76: only the parts not yet run
        sweep --repeat $((R3 - first + 1 < 25 ? R3 - first + 1 : 25)) --set run.seed="$first" \
          --grid sites.procs.dist=uniform --set workload.path="$RICC" --set sites.procs.total=8192 \
          "${LONG[@]}" --out "$OUT/ricc-long/part-$first"
      done ;;
    orgs)       # [L] Figure 4: the number of organizations on 17 and 30 processors, uniform and Zipf
      sweep --repeat "$R1" --grid sites.count=2,3,4,5,6,7,8 --grid sites.procs.total=17,30 \
        --grid sites.procs.dist=uniform,zipf --set workload.path="$LPC" "${LONG[@]}" \
        --set protocol.compare='["ref","rand","directcontr","roundrobin","fairshare"]' --out "$OUT/lpc-egee-orgs" ;;
    first)      # [L] Figure 4 as written: the first 5·10^6 s of LPC-EGEE (from its first submission,
      # 3,585,977 s: 16.6 processors of work on average, "about 16 times greater than 5 million"), one run a point
      sweep --repeat 1 --grid sites.count=2,3,4,5,6,7,8 --grid sites.procs.total=17,30 --grid sites.procs.dist=uniform,zipf \
        --set workload.path="$LPC" --set workload.t_start=3585977 --set workload.duration=5000000 \
        --set run.horizon=5000000 --set protocol.compare='["ref","rand","directcontr","roundrobin","fairshare"]' \
        --out "$OUT/lpc-egee-first" ;;
    latency)    # what latency costs the decentralized DIRECTCONTR
      sweep --repeat "$R1" --grid network.latency=0.000001,0.0001,0.001,0.01 --set protocol.compare='["ref"]' \
        --set workload.path="$LPC" --set sites.procs.total=70 --out "$OUT/lpc-egee-latency" ;;
    warm)       # [S] Table 1 on LPC-EGEE, cold and warm
      for d in zipf uniform; do
        warm "$LPC" --procs 70 --duration 50000 --dist $d --windows "$WARM" --same-warmup 500000 --out "$WOUT/lpc-egee-$d.csv"
      done ;;
    warm-long)  # [S] Table 2 and [L] Table 1 on LPC-EGEE, cold and warm
      for d in zipf uniform; do
        warm "$LPC" --procs 70 --duration 500000 --dist $d --windows "$WARM" --same-warmup 500000 --out "$WOUT/lpc-egee-long-$d.csv"
      done ;;
    warm-ricc)  # [S] Table 1 on RICC, cold and warm (uniform first: [L]'s split)
      for d in uniform zipf; do
        warm "$RICC" --procs 8192 --duration 50000 --dist $d --windows "$WARM" --same-warmup 50000 --out "$WOUT/ricc-$d.csv"
      done ;;
    warm-ricc-long)  # [S] Table 2 and [L] Table 1 on RICC, uniform (as ricc-long)
      # Its CSV is kept in the repository ($KEPT): the 100 windows take more CPU than one session has
      # (2 to 8 minutes each on a quiet core), so each session resumes from what the last one kept.
      # SEEDS=LO-HI: exactly those seeds, so a second process can take another part (both append)
      warm "$RICC" --procs 8192 --duration 500000 --dist uniform --windows "$WARM" --same-warmup 500000 \
        ${SEEDS:+--seeds "$SEEDS"} --out "$KEPT/ricc-long-uniform.csv" ;;
    facts)      # the traces' span, work and disjoint windows (the prose figures of shapley.md)
      python -m gridemu.experiments.shapley_warm trace-facts "$LPC" "$RICC" --write
      # how often the bounded warm-up (W) leaves the whole-trace backlog, on FCFS
      python -m gridemu.experiments.shapley_warm warmup-check "$LPC:70:50000:500000" "$LPC:70:500000:500000" \
        "$RICC:8192:50000:50000" --write ;;
    *) echo "shapley-runs.sh: unknown stage $stage" >&2; exit 2 ;;
  esac
done
