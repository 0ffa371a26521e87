#!/usr/bin/env bash
# bench/peers/mpiio_overlap.sh [DIR]: does a nonblocking write overlap computation
# (bench/peers/mpiio_overlap.c: one rank, a 64 MiB MPI_File_iwrite_at, 50 ms of computing,
# MPI_Wait, against the same write done blocking before the computing) on Billboard (the
# MPICH-built binary on our library), MPICH and Open MPI, interleaved for ROUNDS rounds (default
# 5). Prints per library the medians over the rounds of: the write alone, write then compute,
# iwrite + compute + wait, and the share of the write hidden (1 = all, 0 = none).
#
# Environment: BBRUN (default dist/bin/bbrun), MIB (64), COMPUTE (0.05 s), ROUNDS (5), and
# BBRUN_OLD: a second Billboard build to compare (e.g. main's dist/bin/bbrun).
set -uo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$ROOT"
DIR=${1:-/tmp}
BBRUN=${BBRUN:-dist/bin/bbrun}
MIB=${MIB:-64}
COMPUTE=${COMPUTE:-0.05}
ROUNDS=${ROUNDS:-5}
work=$(mktemp -d)
file="$DIR/bb-overlap-$$.dat"
trap 'rm -rf "$work"; rm -f "$file"' EXIT
mpicc.mpich -O2 -Wall -o "$work/mpich" bench/peers/mpiio_overlap.c || exit 1
have_ompi=0
if command -v mpicc.openmpi >/dev/null && mpicc.openmpi -O2 -Wall -o "$work/ompi" bench/peers/mpiio_overlap.c; then
    have_ompi=1
fi
args=("$file" "$MIB" "$COMPUTE" 9)
for round in $(seq "$ROUNDS"); do
    timeout 120 "$BBRUN" -n 1 "$work/mpich" "${args[@]}" | sed 's/^/billboard /' >>"$work/all"
    if [ -n "${BBRUN_OLD:-}" ]; then
        timeout 120 "$BBRUN_OLD" -n 1 "$work/mpich" "${args[@]}" | sed 's/^/billboard-old /' >>"$work/all"
    fi
    timeout 120 mpiexec.mpich -n 1 "$work/mpich" "${args[@]}" | sed 's/^/mpich /' >>"$work/all"
    if [ $have_ompi = 1 ]; then
        timeout 120 mpirun.openmpi --allow-run-as-root -n 1 "$work/ompi" "${args[@]}" 2>/dev/null | sed 's/^/openmpi /' >>"$work/all"
    fi
    echo "round $round done" >&2
done
median() { sort -n | awk '{v[NR] = $1} END {print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }
printf '%-14s %8s %8s %8s %7s   (%s MiB, %s s computing, median of %s rounds of 9, seconds; load %s)\n' \
    library write serial overlap hidden "$MIB" "$COMPUTE" "$ROUNDS" "$(cut -d' ' -f1 /proc/loadavg)"
for lib in billboard billboard-old mpich openmpi; do
    grep -q "^$lib " "$work/all" || continue
    row=()
    for f in 3 5 7 9; do row+=("$(awk -v l="$lib" -v f="$f" '$1 == l {print $(f)}' "$work/all" | median)"); done
    printf '%-14s %8s %8s %8s %7s\n' "$lib" "${row[@]}"
done
