#!/bin/sh
# Builds every program of the C suite with the given MPI C compiler wrapper.
#   tests/c/build.sh MPICC OUTDIR        e.g. tests/c/build.sh mpicc.mpich /tmp/ctests-mpich
# Extra compiler flags may be given in CFLAGS. Only the programs in this directory are built
# (tests/c/abi/ has its own build).
set -eu
MPICC=${1:?usage: build.sh MPICC OUTDIR}
OUT=${2:?usage: build.sh MPICC OUTDIR}
HERE=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$OUT"
CFLAGS=${CFLAGS:-"-O1 -g -Wall -Wno-unused-function -Wno-stringop-overflow"}
fail=0
for src in "$HERE"/*.c; do
    name=$(basename "$src" .c)
    if ! $MPICC $CFLAGS -pthread -o "$OUT/$name" "$src" -lm; then
        echo "build failed: $name" >&2
        fail=1
    fi
done
exit $fail
