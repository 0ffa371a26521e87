#!/usr/bin/env bash
# bench/peers/pvm_loaded.sh: PVM's 1-byte ping-pong beside BUSY busy loops (default 2, as
# `stress` would run), the receive wait's adaptive spin (spin.rs) against a fixed 50 us spin
# (BB_PVM_SPIN_MAX_US=50: main's wait before it adapted), same library, rounds interleaved.
# Prints each round's one-way us (median of TRIALS trials of ITERS round trips), the medians,
# and how many rounds fell into waking each other (over 20 us). No pinning and no SCHED_FIFO:
# more busy processes than cores (bench/README.md "On a busy machine").
#
# Environment: DIST (default dist: lib/libpvm3.so.3, bin/bbpvmd), BUSY, ROUNDS (default 15),
# ITERS (default 1000), TRIALS (default 7).
set -uo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$ROOT"
DIST=$(cd "${DIST:-dist}" && pwd)
BUSY=${BUSY:-2} ROUNDS=${ROUNDS:-15} ITERS=${ITERS:-1000} TRIALS=${TRIALS:-7}
[ -f /usr/include/pvm3.h ] || { echo "needs Debian's pvm-dev" >&2; exit 1; }
[ -f "$DIST/lib/libpvm3.so.3" ] || { echo "build first: make" >&2; exit 1; }
WORK=$(mktemp -d /tmp/bb-pvm-loaded.XXXXXX)
pids=""
trap 'kill $pids 2>/dev/null; rm -rf "$WORK"' EXIT
cc -O2 -o "$WORK/pvm_pingpong" bench/peers/pvm_pingpong.c -lpvm3 || exit 1

median() { sort -n | awk '{ v[NR] = $1 } END { if (NR) print v[int((NR + 1) / 2)]; else print "-" }'; }
# $1: BB_PVM_SPIN_MAX_US; each setting its own agent.
one() {
  BB_PVM_DIR=$WORK/vm-$1 BB_PVMD=$DIST/bin/bbpvmd LD_LIBRARY_PATH=$DIST/lib PVM_PATH=$WORK \
    BB_PVM_SPIN_MAX_US=$1 timeout 120 "$WORK/pvm_pingpong" 1 "$ITERS" "$TRIALS" | median
}

for _ in $(seq 1 "$BUSY"); do sh -c 'while :; do :; done' & pids="$pids $!"; done
printf "load average: %s\n" "$(cut -d' ' -f1-3 /proc/loadavg)"
printf "%-6s %10s %10s\n" round fixed50 adaptive
for r in $(seq 1 "$ROUNDS"); do
  printf "%-6s %10s %10s\n" "$r" "$(one 50)" "$(one 1000)" | tee -a "$WORK/rounds"
done
printf "load average: %s\n" "$(cut -d' ' -f1-3 /proc/loadavg)"
col() { awk -v c="$1" '{ print $c }' "$WORK/rounds"; }
printf "%-6s %10s %10s\n" median "$(col 2 | median)" "$(col 3 | median)"
printf "%-6s %10s %10s\n" ">20us" "$(col 2 | awk '$1 > 20' | wc -l)" "$(col 3 | awk '$1 > 20' | wc -l)"
