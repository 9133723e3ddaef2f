#!/usr/bin/env bash
# Regenerates the runs behind docs/results/dedicated.md (thesis chapter 3), then writes their tables:
#   bash docs/results/dedicated-runs.sh [STAGE ...]   # stages below; default: all, in order
# Each stage saves its per-instance results under runs/dedicated-*/ and writes its tables into
# dedicated.md; `--from DIR [--from DIR ...] --write` re-formats saved results without computing.
# Times are CPU seconds on 2 cores (two worker processes), measured on a machine shared with
# other jobs: expect them as upper bounds.
#   checks       Table 3.3's fronts and Tables 3.5/3.7's σ bounds by brute force: ~1 min
#   exact        small, small-3, exponential (Tables 3.1-3.12, 3.14-3.19): ~2 min
#   readings     Tables 3.5-3.11's figures under five readings of the job split: ~10 min
#   large        *large*, 50 instances a cell, N = 2..8 (Tables 3.13, 3.20-3.22), capped at 50,000 steps: ~70 min
#   large-10     the same for N = 9, 10 (beyond the thesis): ~60 min
#   game         the emulated game (dedicated_game.py), its sweep by N to 10: ~65 min at nice 19 (ran; resumes from runs/dedicated-game)
#   uncapped     *large*, N = 2, the walks as printed (a walk still going after 1,000,000 steps is given up)
#                (N = 2 is where the capped walks mostly end; for N >= 3 most walks pass any cap tried)
#   What ran for the doc (the machine was shared with five other jobs; see dedicated.md): checks,
#   checks, readings with 25 instances a *small* cell (3,176 s wall), and the *large* run tagged 50
#   (N = 2..8, one N at a time on one worker, 3,899 s wall in all), then N = 9 and 10 the same way (2,497 s):
#   the lines marked "ran" below. Ran later: uncapped, N = 2, n = 20 and 25 (84 s wall), and N = 3, n = 15 and 20
#   (809 s wall on one worker), and N = 4, n = 10 to 25 (892 s wall on two workers).
set -euo pipefail
T="python -m gridemu.experiments.dedicated_tables"
STAGES=${*:-checks exact readings large large-10 uncapped game}
for stage in $STAGES; do
  case $stage in
    checks)   python -m gridemu.experiments.dedicated_checks ;;
    exact)    $T --sets small,small-3,exponential --out runs/dedicated-exact --write ;;
    readings) $T --sets readings --readings-per-cell 50 --out runs/dedicated-readings --write ;;
    # ran: $T --sets readings --readings-per-cell 25 --out runs/ch3-readings --write
    large)    $T --sets large --large-per-cell 50 --max-steps 50000 --out runs/dedicated-large --write ;;
    # ran: for n in 2 3 4 5 6 7 8; do $T --sets large --orgs $n --large-per-cell 50 --max-steps 50000 --workers 1 \
    #        --out runs/ch3-large-50-N$n --tag 50; done; $T --from runs/ch3-large-50-N2 ... --from runs/ch3-large-50-N8 --tag 50 --write
    large-10) $T --sets large --orgs 9,10 --large-per-cell 50 --max-steps 50000 --out runs/dedicated-large-10 --tag n910 --write ;;
    # ran: for n in 9 10; do $T --sets large --orgs $n --large-per-cell 50 --max-steps 50000 --workers 1 \
    #        --out runs/ch3-large-50-N$n --tag 50; done; $T --from runs/ch3-large-50-N9 --from runs/ch3-large-50-N10 --tag n910 --write
    uncapped) $T --sets large --orgs 2 --large-per-cell 50 --max-steps none --give-up 1000000 --out runs/dedicated-uncapped --tag uncapped --write ;;
    # ran: $T --sets large --orgs 2 --jobs 20,25 --large-per-cell 50 --max-steps none --give-up 500000 --out runs/ch3-uncapped --tag uncapped --write
    #      $T --sets large --orgs 3 --jobs 15,20 --large-per-cell 50 --max-steps none --give-up 500000 --workers 1 \
    #        --out runs/ch3-uncapped-N3 --tag uncapped; $T --from runs/ch3-uncapped-N3 --tag uncapped-n3 --write
    #      $T --sets large --orgs 4 --jobs 15,20 --large-per-cell 50 --max-steps none --give-up 500000 \
    #        --out runs/ch3-uncapped-N4 --tag uncapped; the same with --jobs 10,25 --out runs/ch3-uncapped-N4b;
    #        $T --from runs/ch3-uncapped-N4 --from runs/ch3-uncapped-N4b --tag uncapped-n4 --write
    game)     python -m gridemu.experiments.dedicated_game --orgs 2,3,4,5,6,7,8,9,10 --write ;;
    *) echo "unknown stage $stage" >&2; exit 2 ;;
  esac
done
