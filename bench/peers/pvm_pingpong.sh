#!/usr/bin/env bash
# bench/peers/pvm_pingpong.sh: PVM's small-message latency beside its peers, in one run,
# alternating ROUNDS times: `pvm_pingpong.c` (built once against Debian's PVM, run unchanged)
# on Billboard's PVM library (DIST/lib), on a second build of it for an A/B (BASE: a folder
# with lib/libpvm3.so.3 and bin/bbpvmd; optional), and under Debian's pvmd (direct routes);
# beside the native API's ping-pong (`bbrun -n 2 bb-bench latency`) and its floor (the bare
# shared-memory ping-pong, reported by the same command). Prints each round's one-way time
# in us at SIZE bytes (median of its trials), then the medians over rounds and the ratios.
#
# Environment: DIST (default dist), BASE, SIZE (default 1), ITERS (round trips a trial,
# default 20000), TRIALS (default 21), ROUNDS (default 5). Each process pins itself (the timer
# to core 0, the echo to core 1) and runs under SCHED_FIFO 10, as bench/README.md's "On a
# busy machine" says: two ranks, two cores, never more.
set -uo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$ROOT"
DIST=$(cd "${DIST:-dist}" && pwd)
SIZE=${SIZE:-1} ITERS=${ITERS:-20000} TRIALS=${TRIALS:-21} ROUNDS=${ROUNDS:-5}
[ -x /usr/bin/pvmd ] && [ -f /usr/include/pvm3.h ] || { echo "needs Debian's pvm and pvm-dev" >&2; exit 1; }
[ -f "$DIST/lib/libpvm3.so.3" ] || { echo "build first: make" >&2; exit 1; }
# Without our library where LD_LIBRARY_PATH points, Debian's would load and measure itself.
[ -z "${BASE:-}" ] || [ -f "$BASE/lib/libpvm3.so.3" ] || { echo "BASE=$BASE has no lib/libpvm3.so.3" >&2; exit 1; }
WORK=$(mktemp -d /tmp/bb-pvm-pingpong.XXXXXX)
trap 'rm -rf "$WORK"' EXIT
cc -O2 -o "$WORK/pvm_pingpong" bench/peers/pvm_pingpong.c -lpvm3 || exit 1
export PIN=1 RTPRIO=1

median() { sort -n | awk '{ v[NR] = $1 } END { if (NR) print v[int((NR + 1) / 2)]; else print "-" }'; }

# One run of the ping-pong on a Billboard library: $1 its lib folder, $2 its bbpvmd, $3 a name
# for its agent's folder: each library its own agent (a lingering agent of the other build
# would spawn the echo with that build's library, and two builds need not speak alike).
ours() {
  BB_PVM_DIR=$WORK/vm-$3 BB_PVMD=$2 LD_LIBRARY_PATH=$1 PVM_PATH=$WORK \
    timeout 300 "$WORK/pvm_pingpong" "$SIZE" "$ITERS" "$TRIALS" | median
}

debian() {
  local tmp; tmp=$(mktemp -d "$WORK/debian.XXXXXX")
  printf '* ep=%s\n' "$WORK" >"$tmp/hostfile"
  (
    export PVM_ROOT=/usr/lib/pvm3 PVM_TMP=$tmp PVM_ALLOW_ROOT=1
    timeout 300 /usr/bin/pvmd "$tmp/hostfile" >/dev/null 2>&1 &
    pvmd=$!
    sleep 1
    timeout 300 "$WORK/pvm_pingpong" "$SIZE" "$((ITERS / 10))" "$TRIALS" | median
    kill "$pvmd" 2>/dev/null
    wait "$pvmd" 2>/dev/null
  )
}

# The native API and its floor: bb-bench's CSV row for SIZE (columns named in its header).
native() {
  timeout 300 taskset -c 0,1 chrt -f 10 "$DIST/bin/bbrun" -n 2 "$DIST/bin/bb-bench" latency --sizes "$SIZE" --csv 2>/dev/null |
    awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next }
      { print $c["oneway_us_median"], $c["floor_oneway_us_median"] }'
}

printf "load average: %s\n" "$(cut -d' ' -f1-3 /proc/loadavg)"
printf "%-6s %10s %10s %10s %10s %10s\n" round billboard base debian native floor
for r in $(seq 1 "$ROUNDS"); do
  new=$(ours "$DIST/lib" "$DIST/bin/bbpvmd" new)
  base=-
  [ -n "${BASE:-}" ] && base=$(ours "$BASE/lib" "$BASE/bin/bbpvmd" base)
  deb=$(debian)
  read -r nat floor < <(native)
  printf "%-6s %10s %10s %10s %10s %10s\n" "$r" "$new" "$base" "$deb" "${nat:--}" "${floor:--}" | tee -a "$WORK/rounds"
done
printf "load average: %s\n" "$(cut -d' ' -f1-3 /proc/loadavg)"
col() { awk -v c="$1" '{ print $c }' "$WORK/rounds" | median; }
new=$(col 2) base=$(col 3) deb=$(col 4) nat=$(col 5) floor=$(col 6)
printf "%-6s %10s %10s %10s %10s %10s\n" median "$new" "$base" "$deb" "$nat" "$floor"
awk -v n="$new" -v b="$base" -v d="$deb" -v a="$nat" -v f="$floor" 'BEGIN {
  if (a > 0) printf "billboard / native %.2fx, / floor %.2fx\n", n / a, n / f
  if (n > 0) printf "debian / billboard %.1fx\n", d / n
  if (b > 0) printf "billboard / base %.3f\n", n / b
}'
