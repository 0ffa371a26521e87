#!/usr/bin/env bash
# bench/peers/mpiio.sh [DIR]: MPI-IO bandwidth (bench/peers/mpiio.c) of a 4-rank collective
# write, sync and read of one large file in DIR (default /tmp), on Billboard (the MPICH-built
# binary run unchanged on our library) and on MPICH (mpirun.mpich), interleaved: ROUNDS rounds,
# each running both one after the other, per pattern. Prints the median of each rate over the
# rounds and Billboard / MPICH.
#
# Environment: BBRUN (default dist/bin/bbrun), SIZE (default 1G), CHUNK (default 16M), RANKS
# (default 4), ROUNDS (default 5), PATTERNS (default "blocks interleaved interleaved/enable":
# PATTERN[/CB], CB the collective-buffering hints, default automatic).
set -uo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$ROOT"
DIR=${1:-/tmp}
BBRUN=${BBRUN:-dist/bin/bbrun}
SIZE=${SIZE:-1G}
CHUNK=${CHUNK:-16M}
RANKS=${RANKS:-4}
ROUNDS=${ROUNDS:-5}
PATTERNS=${PATTERNS:-blocks interleaved interleaved/enable}
work=$(mktemp -d)
trap 'rm -rf "$work"; rm -f "$DIR/bb-mpiio-$$.dat"' EXIT
mpicc.mpich -O2 -Wall -o "$work/mpiio" bench/peers/mpiio.c || exit 1
file="$DIR/bb-mpiio-$$.dat"
for round in $(seq "$ROUNDS"); do
    for p in $PATTERNS; do
        [[ $p == */* ]] || p="$p/automatic"
        args=("$work/mpiio" "$file" --size "$SIZE" --chunk "$CHUNK" --pattern "${p%/*}" --cb "${p#*/}")
        timeout 600 "$BBRUN" -n "$RANKS" "${args[@]}" 2>/dev/null | sed 's/^/billboard /' >>"$work/all"
        timeout 600 mpirun.mpich -n "$RANKS" "${args[@]}" 2>/dev/null | sed 's/^/mpich /' >>"$work/all"
    done
    echo "round $round done" >&2
done
median() { sort -n | awk '{v[NR] = $1} END {print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }
printf '%-22s %-10s %10s %10s %8s   (%s ranks, %s file, %s calls, median of %s rounds, MB/s)\n' \
    pattern phase billboard mpich ratio "$RANKS" "$SIZE" "$CHUNK" "$ROUNDS"
for p in $PATTERNS; do
    [[ $p == */* ]] || p="$p/automatic"
    for col in 4:write 5:write+sync 6:read; do
        f=${col%%:*} phase=${col#*:}
        b=$(awk -v p="$p" -v f="$f" '$1 == "billboard" && $2 == p {print $(f)}' "$work/all" | median)
        m=$(awk -v p="$p" -v f="$f" '$1 == "mpich" && $2 == p {print $(f)}' "$work/all" | median)
        printf '%-22s %-10s %10s %10s %8.2f\n' "$p" "$phase" "$b" "$m" "$(echo "$b / $m" | bc -l)"
    done
done
