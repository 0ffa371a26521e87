#!/usr/bin/env bash
# bench/busy/run.sh: waiting measured three ways (ARCHITECTURE.md, "How we measure"): an idle
# machine, two busy loops beside the job (strangers competing for both cores), and more ranks
# than cores; Billboard's MPI library and MPICH, the same program (steady.c, built with
# mpicc.mpich) in the same minutes. Environment: BBRUN (default dist/bin/bbrun), SIZES (default
# "0 65536 1048576"), SECONDS per run (default 3).
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$ROOT"
BBRUN=${BBRUN:-dist/bin/bbrun}
SIZES=${SIZES:-0 65536 1048576}
SECONDS_EACH=${SECONDS:-3}
command -v mpicc.mpich >/dev/null || { echo "busy/run.sh: needs mpicc.mpich (apt-get install libmpich-dev)" >&2; exit 1; }
OUT=$(mktemp -d)
LOOPS=()
cleanup() { for p in "${LOOPS[@]}"; do kill "$p" 2>/dev/null || true; done; rm -rf "$OUT"; }
trap cleanup EXIT
mpicc.mpich -O2 -o "$OUT/steady" bench/busy/steady.c
run() { # label launcher...
    local label=$1; shift
    for s in $SIZES; do
        printf '%-22s %8s B  %s\n' "$label" "$s" "$(timeout 120 "$@" "$OUT/steady" "$SECONDS_EACH" "$s" 2>&1 | grep '^n=' || echo failed)"
    done
}
both() { run "billboard $1" "$BBRUN" -n "$2"; run "mpich $1" mpirun.mpich -n "$2"; }
both idle 2
for _ in 1 2; do (while :; do :; done) & LOOPS+=($!); done
both "2 busy loops" 2
for p in "${LOOPS[@]}"; do kill "$p"; done; LOOPS=()
both "4 ranks, 2 pinging" 4
