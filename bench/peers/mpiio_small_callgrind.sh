#!/usr/bin/env bash
# bench/peers/mpiio_small_callgrind.sh [DIR]: instructions of one small MPI_File_write_at
# (bench/peers/mpiio_small.c, one rank, WRITES x TRIALS writes of BYTES bytes at explicit
# offsets through the default view), counted by callgrind inside MPI_File_write_at only
# (--toggle-collect), on Billboard (dist/lib), on another build of ours (BEFORE: a dist/lib
# folder, e.g. /work/main/dist/lib) and on MPICH, the same MPICH-built binary each time, as a
# singleton (no launcher). Instruction counts repeat exactly where timings on a shared machine
# do not. Prints instructions per write for each and the ratios to MPICH.
#
# Environment: WRITES (1000), TRIALS (6), BYTES (64), BEFORE (unset: not measured).
set -uo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$ROOT"
DIR=${1:-/tmp}
WRITES=${WRITES:-1000}
TRIALS=${TRIALS:-6}
BYTES=${BYTES:-64}
work=$(mktemp -d)
trap 'rm -rf "$work"; rm -f "$DIR"/bb-mpiio-small-$$-*.dat' EXIT
mpicc.mpich -O2 -o "$work/mpiio_small" bench/peers/mpiio_small.c || exit 1

# Instructions per write with the library in folder $1 ("" for MPICH's own).
per_write() {
    local out="$work/cg.$RANDOM" file="$DIR/bb-mpiio-small-$$-$RANDOM.dat"
    LD_LIBRARY_PATH="$1" timeout 600 valgrind --tool=callgrind --callgrind-out-file="$out" \
        --toggle-collect='*MPI_File_write_at' "$work/mpiio_small" "$file" "$WRITES" "$BYTES" "$TRIALS" \
        >/dev/null 2>"$work/log" || { tail -5 "$work/log" >&2; echo "?"; return; }
    rm -f "$file"
    local total
    total=$(grep -m1 '^summary:' "$out" | awk '{print $2}')
    echo "$total $WRITES $TRIALS" | awk '{printf "%.1f", $1 / ($2 * $3)}'
}

ours=$(per_write "$ROOT/dist/lib")
mpich=$(per_write "")
printf '%-10s %12s %8s   (%s B MPI_File_write_at, %s writes, callgrind instructions a write)\n' \
    library instructions /mpich "$BYTES" "$((WRITES * TRIALS))"
printf '%-10s %12s %8.2f\n' billboard "$ours" "$(echo "$ours / $mpich" | bc -l)"
if [ -n "${BEFORE:-}" ]; then
    before=$(per_write "$BEFORE")
    printf '%-10s %12s %8.2f\n' before "$before" "$(echo "$before / $mpich" | bc -l)"
fi
printf '%-10s %12s %8.2f\n' mpich "$mpich" 1
