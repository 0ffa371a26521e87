#!/usr/bin/env bash
# bench/peers/pvm_calls.sh: instructions per PVM call on the small-message path, counted by
# callgrind. `pvm_pingpong.c` (built against Debian's pvm3.h) runs on Billboard's library
# (LIB: a folder with libpvm3.so.3, default target/release through a link; BBPVMD: the agent,
# default target/release/bbpvmd) with the timing task under callgrind and its echo at full
# speed, and the timer pauses before each receive (PAUSE_US, default 300): the reply is there
# when it asks, so a receive counts one look at the ring and no wait. Prints each call's inclusive instructions per call for the
# timer's side of a round trip (initsend + pkbyte + send, recv + upkbyte).
#
# Environment: SIZE (default 1), ITERS (round trips, default 2000).
set -uo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$ROOT"
SIZE=${SIZE:-1} ITERS=${ITERS:-2000}
WORK=$(mktemp -d /tmp/bb-pvm-calls.XXXXXX)
trap 'rm -rf "$WORK"' EXIT
LIB=${LIB:-} BBPVMD=${BBPVMD:-$ROOT/target/release/bbpvmd}
if [ -z "$LIB" ]; then
  LIB=$WORK/lib && mkdir -p "$LIB" && ln -s "$ROOT/target/release/libpvm.so" "$LIB/libpvm3.so.3"
fi
cc -O2 -g -o "$WORK/pvm_pingpong" bench/peers/pvm_pingpong.c -lpvm3 || exit 1
PAUSE_US=${PAUSE_US:-300} BB_PVM_DIR=$WORK/vm BB_PVMD=$BBPVMD LD_LIBRARY_PATH=$LIB PVM_PATH=$WORK \
  timeout 600 valgrind --tool=callgrind --callgrind-out-file="$WORK/cg.out" \
  "$WORK/pvm_pingpong" "$SIZE" "$ITERS" 1 >/dev/null 2>"$WORK/vg.log" || { cat "$WORK/vg.log"; exit 1; }
callgrind_annotate --inclusive=yes "$WORK/cg.out" 2>/dev/null >"$WORK/incl"
# Calls per function: the timer makes 2 * ITERS + 2 of each (warm-up and timed trial: ITERS each).
calls=$((2 * ITERS))
total=0
for f in pvm_initsend pvm_pkbyte pvm_send pvm_recv pvm_upkbyte; do
  ir=$(awk -v f="$f" '$0 ~ ("[:*]" f " ") || $0 ~ (" " f " ") || $0 ~ (":" f "$") { gsub(",", "", $1); print $1; exit }' "$WORK/incl")
  awk -v f="$f" -v ir="${ir:-0}" -v n="$calls" 'BEGIN { printf "%-14s %8.0f instructions a call\n", f, ir / n }'
done
[ -n "${KEEP:-}" ] && cp "$WORK/cg.out" "$KEEP"
