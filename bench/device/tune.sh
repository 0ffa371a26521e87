#!/usr/bin/env bash
# bench/device/tune.sh [RESULTS_DIR]: Billboard's collective algorithms forced one at a time
# (BB_COLL_*), each at RANKS ranks beside the table's own choice, MPICH and Open MPI in the same
# run: the figures that set select.rs's switch points on a machine with more cores than this
# one. Runs from the bundle bench/device/bundle.sh built (DEV, default .dev/), like run.sh, with
# bench/peers/coll.c (its MPICH build on Billboard and on MPICH, its Open MPI build on Open MPI).
# Every job runs under `timeout`; the whole stays under BUDGET seconds (default 300).
# Writes RESULTS_DIR (default $OUT, else target/bench-results/tune)/tune.csv:
#   impl,op,ranks,size_bytes,us_median,us_min,us_mean   (impl: table, a forced BB_COLL_ value,
#   mpich, openmpi)
# and prints, per op, rank count and size, each column's median over the rounds and its ratio to
# the best peer.
#
# Environment: DEV, BUDGET, RANKS (default "8 16"), TRIALS (default 30), CASES (which of the
# ops below, default all), ROUNDS (default 1: interleaved rounds of every job), BUSY_LOOPS
# (default 0: busy loops running beside every job, waiting under load), BBDEV_MODE=direct|loader.
set -uo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$ROOT"
DEV=$(cd "${DEV:-.dev}" 2>/dev/null && pwd) || { echo "tune.sh: no bundle ${DEV:-.dev} (bench/device/bundle.sh)" >&2; exit 1; }
L=$DEV/launch
RES=${1:-${OUT:-target/bench-results/tune}}
mkdir -p "$RES"
RANKS=${RANKS:-8 16}
TRIALS=${TRIALS:-30}
END=$(($(date +%s) + ${BUDGET:-300}))
export OMPI_MCA_btl_vader_single_copy_mechanism=none OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
source "$L/mode.sh"
export BBDEV_MODE=${BBDEV_MODE:-$(bbdev_mode)}
bbdev_unpack

# op | sizes | the values of its switch to force
ALL=(
    "barrier|8|post dissemination board board-leader"
    "bcast|8,512,8K,64K|post tree board"
    "gather|8,512,2K,8K,64K|linear binomial board"
    "scatter|8,512,2K,8K,64K|linear binomial board"
    "allgather|8,512,8K|post doubling bruck ring board"
    "allreduce|8,512,8K|post tree doubling board"
    "reduce|8,512,8K|post tree board"
    "alltoall|8,512,8K|linear pairwise board"
)
CSV=$RES/tune.csv
echo "impl,op,ranks,size_bytes,us_median,us_min,us_mean" >"$CSV"

# job IMPL OP RANKS SIZES ENV LAUNCHER PROGRAM: one run of coll, its rows into the CSV as IMPL
job() {
    local impl=$1 op=$2 n=$3 sizes=$4 env=$5 launcher=$6 program=$7
    local left=$((END - $(date +%s)))
    [ "$left" -gt 5 ] || return 1
    env $env timeout $((left < 40 ? left : 40)) "$launcher" -n "$n" "$program" --ops "$op" --sizes "$sizes" --trials "$TRIALS" --csv \
        2>>"$RES/tune.log" | awk -F, -v impl="$impl" '$1 != "op" && NF >= 6 { print impl "," $0 }' >>"$CSV"
}

LOOPS=()
trap 'kill "${LOOPS[@]}" 2>/dev/null' EXIT
for _ in $(seq "${BUSY_LOOPS:-0}"); do (while :; do :; done) & LOOPS+=($!); done
for _ in $(seq "${ROUNDS:-1}"); do
for n in $RANKS; do
    for c in "${ALL[@]}"; do
        IFS='|' read -r op sizes algorithms <<<"$c"
        [ -z "${CASES:-}" ] || [[ ",$CASES," == *",$op,"* ]] || continue
        switch=BB_COLL_${op^^}
        job table "$op" "$n" "$sizes" "" "$L/bbrun" "$DEV/peers/bin/coll-mpich"
        for a in $algorithms; do
            job "$a" "$op" "$n" "$sizes" "$switch=$a" "$L/bbrun" "$DEV/peers/bin/coll-mpich"
        done
        job mpich "$op" "$n" "$sizes" "" "$L/mpiexec.hydra" "$DEV/peers/bin/coll-mpich"
        job openmpi "$op" "$n" "$sizes" "" "$L/mpirun.openmpi" "$DEV/peers/bin/coll-openmpi"
    done
done
done
kill "${LOOPS[@]}" 2>/dev/null

# One line per op, rank count and size: every column's median (over the rounds: the middle
# one, the lower of two), then / the best peer.
sort -t, -k1,4 -k5,5g "$CSV" | awk -F, '$1 != "impl" {
        k = $2 " " $3 " " $4; if (!(k in seen)) { seen[k] = 1; keys[++n] = k }
        all[k, $1, ++c[k, $1]] = $5; if (!($1 in col)) { col[$1] = 1; cols[++m] = $1 }
    }
    END {
        for (kc in c) { split(kc, p, SUBSEP); v[p[1], p[2]] = all[p[1], p[2], int((c[kc] + 1) / 2)] }
        for (i = 1; i <= n; i++) {
            k = keys[i]; best = ""
            if ((k, "mpich") in v) best = v[k, "mpich"]
            if ((k, "openmpi") in v && (best == "" || v[k, "openmpi"] + 0 < best + 0)) best = v[k, "openmpi"]
            line = sprintf("%-22s", k)
            for (j = 1; j <= m; j++) if ((k, cols[j]) in v) {
                r = best == "" ? "" : sprintf(" (%.2f)", v[k, cols[j]] / best)
                line = line sprintf("  %s %s%s", cols[j], v[k, cols[j]], cols[j] ~ /^(mpich|openmpi)$/ ? "" : r)
            }
            print line
        }
    }' "$CSV" | tee "$RES/tune.txt"
echo "load: $(cut -d' ' -f1-3 /proc/loadavg); nproc $(nproc); mode $BBDEV_MODE"
