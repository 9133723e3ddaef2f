#!/usr/bin/env bash
# The round order and the sent end (docs/results/bilb.md, "Round order and the sent end"):
# Table 4.2 (averaging game) and Table 4.3 (BILB, l = 1, 3, 5) at N = 2 under the tables'
# reading, for each of protocol.round_order (after_releases, before_releases) and
# protocol.send (tail, head). R = 30 runs per cell (seeds 1-30). Two queues, one per core:
#   bash docs/results/bilb-order.sh a & bash docs/results/bilb-order.sh b; wait
#   python -m gridemu.experiments.bilb_order runs/bilb-order --write
set -euo pipefail
OUT=${OUT:-runs/bilb-order}
R=${R:-30}
READING="--set protocol.cut_running=false --set protocol.discrete=true --set workload.integral=releases --set protocol.starting=running --set protocol.round_timing=unbounded --set protocol.local_from=run"
ONE="--quiet --backend inprocess --set workload.until=1000.0 --set sites.count=2 $READING"
sweep() { local out=${*: -1}; [ -e "$out/orgs.parquet" ] || gridemu sweep "$@"; }
both() {
  local order=$1 send=$2 opts="--set protocol.round_order=$1 --set protocol.send=$2"
  sweep averaging-game $ONE $opts --repeat $R --set workload.alpha=2.0 --set workload.beta=2.0 --out $OUT/t42-$order-$send
  sweep bilb $ONE $opts --repeat $R --grid protocol.limit=1,3,5 --out $OUT/t43-$order-$send
}
case ${1:-a} in
a) both after_releases tail; both after_releases head ;;
b) both before_releases tail; both before_releases head ;;
esac
