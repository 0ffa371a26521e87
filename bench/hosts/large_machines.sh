#!/usr/bin/env bash
# bench/hosts/large_machines.sh [RESULTS_DIR]: the large-message machines of the shared-memory
# route (engine/single_copy.rs, shared_copy.rs, pipeline.rs), each forced by its switch, timed
# at 1 MiB and 16 MiB against a base build in the same sitting, in ROUNDS alternated rounds:
#   - single: BB_SHM_SHARED_COPY=0 (the receiver reads alone, process_vm_readv);
#   - shared: the default (the sender writes from the back while the receiver reads);
#   - pipeline: BB_SHM_SINGLE_COPY=0 (DATA chunks through the sender's data-part slots);
# each as `bbrun -n 2 bb-bench latency` (one-way us) and `bandwidth --window $WINDOW` (GB/s),
# for the build in BIN and, with BEFORE set, the one in BEFORE, alternating which goes first.
# Prints each row's median over the rounds and the median of the within-round ratios
# after / before (latency: < 1 is faster; bandwidth: > 1 is faster).
# Environment: BIN (default target/release), BEFORE (unset), ROUNDS (5), SIZES (1M,16M),
# MACHINES ("single shared pipeline": the machines to time, e.g. "pipeline" alone),
# MAX_SIZE (16M: bb-bench drops sizes past it), TRIALS (100), WINDOW (8: 16 MiB x 8 in flight
# is 128 MiB of receive buffers).
set -uo pipefail
# shellcheck source=common.sh
. "$(dirname "${BASH_SOURCE[0]}")/common.sh" "$@"
ROUNDS=${ROUNDS:-5}
SIZES=${SIZES:-1M,16M}
MAX_SIZE=${MAX_SIZE:-16M}
TRIALS=${TRIALS:-100}
WINDOW=${WINDOW:-8}
MACHINES=${MACHINES:-single shared pipeline}
machine_env() {
    case $1 in
        single) echo BB_SHM_SHARED_COPY=0 ;;
        shared) echo BB_SHM_SHARED_COPY=65536 ;;
        pipeline) echo BB_SHM_SINGLE_COPY=0 ;;
    esac
}
: >"$RESULTS/runs"
for round in $(seq "$ROUNDS"); do
    echo "== round $round, load $(cut -d' ' -f1-3 /proc/loadavg)" | tee -a "$RESULTS/runs"
    builds=("$BIN" ${BEFORE:+"$BEFORE"})
    if [ $((round % 2)) -eq 0 ] && [ ${#builds[@]} -eq 2 ]; then builds=("$BEFORE" "$BIN"); fi
    for machine in $MACHINES; do
        for bin in "${builds[@]}"; do
            build=$([ "$bin" = "$BIN" ] && echo after || echo before)
            for what in latency bandwidth; do
                extra=$([ $what = bandwidth ] && echo "--window $WINDOW")
                # shellcheck disable=SC2046,SC2086
                env $(machine_env $machine) timeout 300 "$bin/bbrun" -n 2 "$bin/bb-bench" $what --sizes "$SIZES" \
                    --max-size "$MAX_SIZE" --trials "$TRIALS" --no-floor --csv $extra 2>>"$RESULTS/errors" |
                    awk -F, -v l="$machine-$what-$build" '$1 ~ /^[0-9]+$/ { print l, $1, $2 }' | tee -a "$RESULTS/runs"
            done
        done
    done
done
# Each row's median over the rounds.
awk '!/^==/ { print $1, $2 }' "$RESULTS/runs" | sort -u | while read -r label size; do
    awk -v l="$label" -v s="$size" '$1 == l && $2 == s { print $3 }' "$RESULTS/runs" | sort -g |
        awk -v l="$label" -v s="$size" '{ a[NR] = $1 } END { if (NR) printf "%s %s median %.3f (%d rounds)\n", l, s, NR % 2 ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2, NR }'
done | tee "$RESULTS/summary.txt"
# Within each round, after / before per machine, test and size; the median over the rounds.
for machine in $MACHINES; do
    for what in latency bandwidth; do
        for size in $(awk -v l="$machine-$what-after" '$1 == l { print $2 }' "$RESULTS/runs" | sort -un); do
            awk -v a="$machine-$what-after" -v b="$machine-$what-before" -v s="$size" '
                /^==/ { x = y = "" } $2 == s && $1 == a { x = $3 } $2 == s && $1 == b { y = $3 }
                x != "" && y != "" { print x / y; x = y = "" }' "$RESULTS/runs" | sort -g |
                awk -v l="$machine-$what" -v s="$size" '{ a[NR] = $1 } END { if (NR) printf "%s %s after/before median %.3f (%d rounds, range %.3f-%.3f)\n", l, s, NR % 2 ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2, NR, a[1], a[NR] }'
        done
    done
done | tee -a "$RESULTS/summary.txt"
