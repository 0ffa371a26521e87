#!/usr/bin/env bash
# bench/peers/mpiio_syscalls.sh [DIR]: the system calls behind bench/peers/mpiio.c (one run per
# pattern, on Billboard and on MPICH, under strace -f): how many pwrite/pread calls reach the
# data file and how many bytes each moves, its fsyncs and fcntl locks, and how the ranks wait
# (sched_yield, futex, nanosleep calls). Counts, not timings: the repeatable side of mpiio.sh
# on a shared machine. A collective write of one block per rank (pattern blocks) should be one
# pwrite of CHUNK bytes per rank and call on both, no data exchanged, as ROMIO's
# romio_cb_write=automatic does when the accesses do not interleave.
#
# Environment: BBRUN (default dist/bin/bbrun), SIZE (default 64M), CHUNK (default 16M), RANKS
# (default 4), PATTERNS (default "blocks interleaved": PATTERN[/CB], as mpiio.sh).
set -uo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$ROOT"
DIR=${1:-/tmp}
BBRUN=${BBRUN:-dist/bin/bbrun}
SIZE=${SIZE:-64M}
CHUNK=${CHUNK:-16M}
RANKS=${RANKS:-4}
PATTERNS=${PATTERNS:-blocks interleaved}
command -v strace >/dev/null || { echo "mpiio_syscalls.sh: needs strace" >&2; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"; rm -f "$DIR/bb-mpiio-sys-$$.dat"' EXIT
mpicc.mpich -O2 -Wall -o "$work/mpiio" bench/peers/mpiio.c || exit 1
file="$DIR/bb-mpiio-sys-$$.dat"
calls='pwrite64,pread64,fsync,fdatasync,fcntl,sched_yield,futex,nanosleep,clock_nanosleep,ppoll,poll'
# Per implementation (one strace file per process, -ff, so no call is split in two lines):
# data-file calls (-y names the file of each descriptor) and waiting calls.
summary() {
    cat "$1".* | awk -v f="<$file>" '
        /(pwrite64|pread64)\(/ && index($0, f) {
            op = ($0 ~ /pwrite64\(/) ? "pwrite" : "pread"
            n[op]++; b = $NF; bytes[op] += b
            if (!(op in lo) || b < lo[op]) lo[op] = b
            if (b > hi[op]) hi[op] = b
        }
        /fsync\(|fdatasync\(/ && index($0, f) { sync++ }
        /fcntl\(.*F_SETLKW?/ && index($0, f) { locks++ }
        /sched_yield\(/ { yields++ }
        /futex\(/ { futex++ }
        /nanosleep\(/ { sleeps++ }
        /poll\(/ { polls++ }
        END {
            for (op in n) printf "%s %d calls %d bytes (per call %d..%d) ", op, n[op], bytes[op], lo[op], hi[op]
            printf "| fsync %d locks %d | sched_yield %d futex %d nanosleep %d poll %d\n", sync, locks, yields, futex, sleeps, polls
        }'
}
printf '%-22s %-9s %s   (%s ranks, %s file, %s calls)\n' pattern library "system calls" "$RANKS" "$SIZE" "$CHUNK"
for p in $PATTERNS; do
    [[ $p == */* ]] || p="$p/automatic"
    args=("$work/mpiio" "$file" --size "$SIZE" --chunk "$CHUNK" --pattern "${p%/*}" --cb "${p#*/}")
    timeout 600 strace -f -qq -y -e trace="$calls" -e signal=none -ff -o "$work/bb" \
        "$BBRUN" -n "$RANKS" "${args[@]}" >/dev/null 2>&1
    printf '%-22s %-9s %s\n' "$p" billboard "$(summary "$work/bb")"
    timeout 600 strace -f -qq -y -e trace="$calls" -e signal=none -ff -o "$work/mpich" \
        mpirun.mpich -n "$RANKS" "${args[@]}" >/dev/null 2>&1
    printf '%-22s %-9s %s\n' "$p" mpich "$(summary "$work/mpich")"
    rm -f "$work"/bb.* "$work"/mpich.*
done
