#!/usr/bin/env bash
# bench/peers/rma_targets.sh [RESULTS_DIR]: issue 18's targets in one sitting, for each kind of
# window in WINDOWS: `rma.sh` (Billboard, MPICH, Open MPI interleaved, with the store + flag
# floor in every round) on put_flush, fetch_op, cas (8 B, 2 ranks), lock (8 ranks), fence and
# put_bytes (SIZES, 2 ranks), and before each kind one run of Billboard's point-to-point
# bandwidth at 1 MiB (`bb-bench bandwidth`); then each target, met or not, with its ratio:
#   put_flush   <= 0.5 x the better peer and <= 3 x the floor
#   fetch_op, cas  <= 0.5 x the better peer
#   put_bytes 1 MiB  >= the point-to-point bandwidth (here a flush after each put, not after a
#               window of puts: a lower bound on the put bandwidth)
#   fence       <= 0.7 x the better peer at every size
#   lock, 8 ranks  microseconds per acquisition (met below 100 us; a time slice is milliseconds)
#
# Environment: WINDOWS (default "allocate allocate_shared create shared dynamic dynamic_alloc";
# rma.c's --window kinds: shared is MPI_Win_create on anonymous shared memory, allocate_shared
# MPI_Win_allocate_shared),
# BEFORE_WINDOWS (the kinds that also get BBRUN_BEFORE's column, default WINDOWS), SIZES
# (default 8,8K,64K,1M,4M), RUN_TIMEOUT (default 30 s: MPICH's lock at 8 ranks on 2 cores runs
# for minutes), and rma.sh's own (BBRUN, BBRUN_BEFORE, TRIALS, ROUNDS, CHRT).
set -uo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$ROOT"
RESULTS=${1:-target/bench-results/rma-targets}
WINDOWS=${WINDOWS:-allocate allocate_shared create shared dynamic dynamic_alloc}
BEFORE_WINDOWS=${BEFORE_WINDOWS:-$WINDOWS}
BBRUN=${BBRUN:-dist/bin/bbrun}
export SIZES=${SIZES:-8,8K,64K,1M,4M} RUN_TIMEOUT=${RUN_TIMEOUT:-30}
export TESTS="put_flush:2 fetch_op:2 cas:2 lock:8 fence:2 put_bytes:2"
before=${BBRUN_BEFORE:-}
mkdir -p "$RESULTS"
: >"$RESULTS/p2p.txt"
for kind in $WINDOWS; do
    timeout -k 5 120 "$BBRUN" -n 2 "$(dirname "$BBRUN")/bb-bench" bandwidth --sizes 1M --trials 100 --no-floor --csv \
        2>/dev/null | awk -F, 'NR > 1 { print $2 }' >>"$RESULTS/p2p.txt"
    unset BBRUN_BEFORE
    case " $BEFORE_WINDOWS " in *" $kind "*) [ -n "$before" ] && export BBRUN_BEFORE=$before ;; esac
    WINDOW=$kind BBRUN=$BBRUN bench/peers/rma.sh "$RESULTS/$kind" >/dev/null
done

p2p=$(sort -g "$RESULTS/p2p.txt" | awk '{ v[++n] = $1 } END { if (n) print n % 2 ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2 }')
printf 'point-to-point bandwidth 1 MiB: %s GB/s (median of %s runs)\n' "${p2p:-?}" "$(wc -l <"$RESULTS/p2p.txt")"
printf '%-9s %-10s %8s %10s %10s %10s %10s %8s %8s  %s\n' window test size before billboard MPICH "Open MPI" bef/best bb/best target
for kind in $WINDOWS; do
    awk -v kind="$kind" -v p2p="${p2p:-0}" '
        /^floor:/ { floor = $(NF - 4); next }
        $1 == "test" { next }
        {
            test = $1; size = $3; bb = $5; best = ($6 == "-" ? $7 : ($7 == "-" || $6 + 0 < $7 + 0 ? $6 : $7))
            r = $9; verdict = ""
            if (bb == "-") verdict = "no figure"
            else if (test == "put_flush") verdict = sprintf("%s (%.2f x floor %s)", (r != "-" && r <= 0.5 && bb / floor <= 3) ? "met" : "not met", bb / floor, floor)
            else if (test == "fetch_op" || test == "cas") verdict = (r != "-" && r <= 0.5) ? "met" : "not met"
            else if (test == "fence") verdict = (r != "-" && r <= 0.7) ? "met" : "not met"
            else if (test == "lock") verdict = (bb < 100) ? "met" : "not met"
            else if (test == "put_bytes" && size == 1048576) {
                gbps = size / (bb * 1000)
                verdict = sprintf("%s (%.2f GB/s vs p2p %s)", gbps >= p2p ? "met" : "not met", gbps, p2p)
            } else next
            printf "%-9s %-10s %8s %10s %10s %10s %10s %8s %8s  %s\n", kind, test, size, $4, bb, $6, $7, $8, r, verdict
        }' "$RESULTS/$kind/summary.txt"
done | tee "$RESULTS/targets.txt"
