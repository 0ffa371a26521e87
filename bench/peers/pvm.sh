#!/usr/bin/env bash
# bench/peers/pvm.sh [RESULTS_DIR]: NetPIPE's NPpvm (Debian's netpipe-pvm, the binary built for
# Debian's PVM 3.4.6) under Debian's PVM and, unchanged, on Billboard's PVM library, in one
# run, alternating ROUNDS times, beside the floor: the bare shared-memory ping-pong between two
# processes (`bb-bench floor`: 1 B one-way, and its throughput at 4 MiB). Prints each round's
# 1-byte one-way latency and peak throughput, then the medians over the rounds and their
# ratios; the NetPIPE tables and floor.csv stay in RESULTS_DIR (default
# target/bench-results/pvm).
#
# Environment: DIST (default dist), UPPER (largest message, default 8388608), ROUNDS
# (default 3), PIN=1 (receiver on core 0, transmitter on core 1: on a loaded machine this is
# what shows the rings' latency; unpinned, both libraries queue behind other processes),
# RTPRIO=1 (both NetPIPE processes and the floor under `chrt -f 10`, as bench/README.md's "On
# a busy machine" says; two busy processes at most, one a core). Under Debian's PVM, NPpvm asks for direct task-to-task routes (PvmRouteDirect);
# on Billboard every message goes directly between the tasks.
set -uo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$ROOT"
DIST=$(cd "${DIST:-dist}" && pwd)
RESULTS=${1:-target/bench-results/pvm}
mkdir -p "$RESULTS"
RESULTS=$(cd "$RESULTS" && pwd)
UPPER=${UPPER:-8388608}
ROUNDS=${ROUNDS:-3}
NP=/usr/bin/NPpvm
[ -x "$NP" ] && [ -x /usr/bin/pvmd ] || { echo "needs Debian's netpipe-pvm and pvm (apt-get install netpipe-pvm pvm)" >&2; exit 1; }
[ -f "$DIST/lib/libpvm3.so.3" ] || { echo "build first: make" >&2; exit 1; }

# One NetPIPE pair: receiver, then the transmitter once the receiver has enrolled.
RX=() TX=()
[ "${PIN:-0}" = 1 ] && RX=(taskset -c 0) TX=(taskset -c 1)
RT=()
[ "${RTPRIO:-0}" = 1 ] && RT=(chrt -f 10)
RX=("${RT[@]}" "${RX[@]}") TX=("${RT[@]}" "${TX[@]}")
pair() { # $1: output table
  ( cd "$RESULTS" && timeout 600 "${RX[@]}" "$NP" -u "$UPPER" -o "$1.receiver" >/dev/null 2>&1 ) &
  local rx=$!
  sleep 1
  ( cd "$RESULTS" && timeout 600 "${TX[@]}" "$NP" -h localhost -u "$UPPER" -o "$1" >/dev/null 2>&1 )
  wait "$rx"
}

debian() { # $1: output table
  local tmp; tmp=$(mktemp -d)
  printf '* ep=/usr/bin\n' >"$tmp/hostfile"
  export PVM_ROOT=/usr/lib/pvm3 PVM_TMP=$tmp PVM_ALLOW_ROOT=1
  timeout 900 /usr/bin/pvmd "$tmp/hostfile" >/dev/null 2>&1 &
  local pvmd=$!
  sleep 1
  pair "$1"
  kill "$pvmd" 2>/dev/null; wait "$pvmd" 2>/dev/null
  rm -rf "$tmp"
  unset PVM_ROOT PVM_TMP PVM_ALLOW_ROOT
}

billboard() { # $1: output table
  local dir; dir=$(mktemp -u /tmp/bb-pvm-bench.XXXXXX)
  BB_PVM_DIR=$dir LD_LIBRARY_PATH=$DIST/lib pair "$1"
}

# 1-byte one-way time (us) and the peak throughput (Mbps) of a NetPIPE table
# (columns: bytes, Mbps, one-way seconds).
summary() {
  awk '$1 == 1 { lat = $3 * 1e6 } $2 > peak { peak = $2; at = $1 } END { printf "%.2f %.0f %d", lat, peak, at }' "$1"
}

printf "%-6s %-10s %14s %14s %12s\n" round library "1 B one-way us" "peak Mbps" "at bytes"
for r in $(seq 1 "$ROUNDS"); do
  debian "$RESULTS/debian-$r.out"
  billboard "$RESULTS/billboard-$r.out"
  for lib in debian billboard; do
    read -r lat peak at < <(summary "$RESULTS/$lib-$r.out")
    printf "%-6s %-10s %14s %14s %12s\n" "$r" "$lib" "$lat" "$peak" "$at"
  done
done
# The floor, once: its 1 B one-way time (us) and its throughput at 4 MiB (GB/s, as Mbps).
floor_lat=- floor_mbps=-
if [ -x "$DIST/bin/bb-bench" ]; then
  "${RT[@]}" "$DIST/bin/bb-bench" floor --sizes 1,4M --csv >"$RESULTS/floor.csv" 2>/dev/null
  read -r floor_lat floor_mbps < <(awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next }
    $1 == 1 { lat = $c["oneway_us_median"] } $1 == 4194304 { mbps = $c["floor_gbps_median"] * 8000 }
    END { printf "%.2f %.0f", lat, mbps }' "$RESULTS/floor.csv")
fi

# Medians over the rounds (the middle value; the mean of the two middle ones when even).
median() { sort -g | awk '{ v[NR] = $1 } END { if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
declare -A LAT PEAK
for lib in debian billboard; do
  LAT[$lib]=$(for f in "$RESULTS"/$lib-*.out; do summary "$f" | cut -d' ' -f1; done | median)
  PEAK[$lib]=$(for f in "$RESULTS"/$lib-*.out; do summary "$f" | cut -d' ' -f2; done | median)
done
echo
printf "median of %s rounds  %14s %14s\n" "$ROUNDS" "1 B one-way us" "peak Mbps"
printf "%-20s %14s %14s\n" "floor (bare shm)" "$floor_lat" "$floor_mbps" debian "${LAT[debian]}" "${PEAK[debian]}" \
  billboard "${LAT[billboard]}" "${PEAK[billboard]}"
awk -v dl="${LAT[debian]}" -v bl="${LAT[billboard]}" -v dp="${PEAK[debian]}" -v bp="${PEAK[billboard]}" \
  -v fl="$floor_lat" -v fp="$floor_mbps" 'BEGIN {
    printf "1 B latency: Debian/Billboard %.1fx", dl / bl
    if (fl + 0 > 0) printf ", Billboard/floor %.1fx", bl / fl
    printf "; peak throughput: Billboard/Debian %.2fx", bp / dp
    if (fp + 0 > 0) printf ", Billboard/floor %.2f", bp / fp
    printf "\n" }'
