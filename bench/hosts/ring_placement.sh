#!/usr/bin/env bash
# bench/hosts/ring_placement.sh [RESULTS_DIR]: issue 20's ring target (4 ranks on the 2 cores,
# shared memory, <= 2 us a hop) beside its bare floors, in ROUNDS alternated rounds, each round:
#   - flag: two processes pinned to CPUs 0 and 1 bounce a counter (bench/peers/ring_floor.c,
#     under $CHRT: one process a core): the cost of a cache line between the vCPUs, which says
#     where the hypervisor placed them for the next minutes (~0.05 or ~0.19 us, bench/README.md
#     "On a busy machine");
#   - ring floor: 4 processes pass a token through counters, no library; a waiter spins SPIN
#     pauses then sched_yield()s (SPINS: the values to try, default "0 50"), and the same
#     sleeping on a futex the writer wakes (SPIN 0 and 50: a blocking hand-over);
#   - bbrun -n 4 bb-bench ring --sizes 8 (BB_ROUTES=auto), per hop; with BEFORE set, the same
#     ring with the bbrun and bb-bench in that folder too, in the same round (a change against
#     its base, interleaved: "bb-ring-before").
# No real-time priority where ranks outnumber cores. Environment: BIN (default target/release),
# BEFORE (unset), ROUNDS (5), SPINS ("0 50"), ROUND_TRIPS (rounds a floor trial, 2000),
# CHRT ("chrt -f 10").
set -uo pipefail
# shellcheck source=common.sh
. "$(dirname "${BASH_SOURCE[0]}")/common.sh" "$@"
ROUNDS=${ROUNDS:-5}
SPINS=${SPINS:-0 50}
N=${ROUND_TRIPS:-2000}
CHRT=${CHRT-chrt -f 10}
cc -O2 -o "$RESULTS/ring_floor" "$ROOT/bench/peers/ring_floor.c" || exit 1
: >"$RESULTS/runs"
for round in $(seq "$ROUNDS"); do
    echo "== round $round, load $(cut -d' ' -f1-3 /proc/loadavg)" | tee -a "$RESULTS/runs"
    timeout 60 $CHRT "$RESULTS/ring_floor" flag "$N" | sed 's/^/flag /' | tee -a "$RESULTS/runs"
    for s in $SPINS; do
        timeout 60 "$RESULTS/ring_floor" ring 4 "$N" "$s" | sed "s/^/floor-spin$s-yield /" | tee -a "$RESULTS/runs"
    done
    for s in 0 50; do
        timeout 60 "$RESULTS/ring_floor" ring 4 "$N" "$s" futex | sed "s/^/floor-spin$s-futex /" | tee -a "$RESULTS/runs"
    done
    for bin in ${BEFORE:+"$BEFORE"} "$BIN"; do
        label=bb-ring$([ "$bin" = "$BIN" ] || echo -before)
        BB_ROUTES=auto timeout 120 "$bin/bbrun" -n 4 "$bin/bb-bench" ring --sizes 8 --no-floor --csv 2>>"$RESULTS/errors" |
            awk -F, -v l="$label" '$1 ~ /^[0-9]+$/ { print l, "hop_us", $2; exit }' | tee -a "$RESULTS/runs"
    done
done
# The median of each row over the rounds, and the ring against the bare yielding ring.
for label in $(awk '!/^==/ { print $1 }' "$RESULTS/runs" | sort -u); do
    awk -v l="$label" '$1 == l { print $NF }' "$RESULTS/runs" | sort -g |
        awk -v l="$label" '{ a[NR] = $1 } END { if (NR) printf "%s median %.3f (%d rounds)\n", l, NR % 2 ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2, NR }'
done | tee "$RESULTS/summary.txt"
# Within each round, each ring over that round's bare ring that yields at once; the median.
for label in bb-ring bb-ring-before; do
    awk -v l="$label" '/^==/ { f = r = "" } $1 == "floor-spin0-yield" { f = $NF } $1 == l { r = $NF }
        f != "" && r != "" { print r / f; f = r = "" }' "$RESULTS/runs" | sort -g |
        awk -v l="$label" '{ a[NR] = $1 } END { if (NR) printf "%s / floor-spin0-yield median %.2f (%d rounds)\n", l, NR % 2 ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2, NR }'
done | tee -a "$RESULTS/summary.txt"
