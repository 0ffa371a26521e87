#!/usr/bin/env bash
# bench/device/wait.sh [RESULTS_DIR]: how a rank waits, measured in the regimes of the brief on a
# machine with more cores than this one: the waiting ladder's spin phase (BB_SPIN: empty polls
# before the first sched_yield) and rank binding (bbrun --bind-to none|core), each beside MPICH
# (Hydra: no binding) and Open MPI (binds to cores by default), idle and busy (BUSY_LOOPS busy
# loops beside the job, default one a core: every core has a stranger). From the bundle
# bench/device/bundle.sh built (DEV, default .dev/), like run.sh. Jobs:
#   p2p   pingpong latency (its MPICH build, on Billboard and MPICH; its Open MPI build on Open MPI), 2 ranks, 8 B and 64 KiB
#   coll  coll (likewise) barrier and allreduce 8 B at COLL_RANKS (default: the cores)
# in ROUNDS interleaved rounds (default 2); every job under `timeout`, the whole under BUDGET
# seconds (default 150). Writes RESULTS_DIR (default $OUT, else target/bench-results/wait)/
# wait.csv (regime,impl,test,ranks,size_bytes,us_median,us_mean; impl: bb-spinN-bindB, mpich,
# openmpi) and wait.txt: per regime and row, each column's median over the rounds.
#
# Environment: DEV, BUDGET, SPINS (default "0 50 200 1000 20000"), BINDS (default "none core"),
# ROUNDS, COLL_RANKS, BUSY_LOOPS, TRIALS (default 200), REGIMES (default "idle busy"), BBRUNS
# (default "bb=<bundle>/launch/bbrun": NAME=LAUNCHER pairs, e.g. two builds side by side; the
# column is NAME-spinN-bindB).
set -uo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$ROOT"
DEV=$(cd "${DEV:-.dev}" 2>/dev/null && pwd) || { echo "wait.sh: no bundle ${DEV:-.dev} (bench/device/bundle.sh)" >&2; exit 1; }
L=$DEV/launch
RES=${1:-${OUT:-target/bench-results/wait}}
mkdir -p "$RES"
END=$(($(date +%s) + ${BUDGET:-150}))
SPINS=${SPINS:-0 50 200 1000 20000}
BINDS=${BINDS:-none core}
COLL_RANKS=${COLL_RANKS:-$(nproc)}
BUSY_LOOPS=${BUSY_LOOPS:-$(nproc)}
TRIALS=${TRIALS:-200}
export OMPI_MCA_btl_vader_single_copy_mechanism=none OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
source "$L/mode.sh"
export BBDEV_MODE=${BBDEV_MODE:-$(bbdev_mode)}
bbdev_unpack
CSV=$RES/wait.csv
echo "regime,impl,test,ranks,size_bytes,us_median,us_mean" >"$CSV"

# job REGIME IMPL TEST RANKS LAUNCHER...: one run, its rows into the CSV. pingpong's rows are
# size,median,min,mean; coll's op,ranks,size,median,min,mean.
job() {
    local regime=$1 impl=$2 test=$3 n=$4 left build=mpich
    shift 4
    [ "$impl" = openmpi ] && build=openmpi
    left=$((END - $(date +%s)))
    [ "$left" -gt 5 ] || return 1
    if [ "$test" = p2p ]; then
        timeout $((left < 30 ? left : 30)) "$@" -n "$n" "$DEV/peers/bin/pingpong-$build" latency --sizes 8,64K \
            --trials "$TRIALS" --csv 2>>"$RES/wait.log" |
            awk -F, -v p="$regime,$impl,p2p,$n" '$1 + 0 > 0 && NF >= 4 { print p "," $1 "," $2 "," $4 }' >>"$CSV"
    else
        timeout $((left < 30 ? left : 30)) "$@" -n "$n" "$DEV/peers/bin/coll-$build" --ops barrier,allreduce --sizes 8 \
            --trials 30 --csv 2>>"$RES/wait.log" |
            awk -F, -v p="$regime" -v i="$impl" '$1 != "op" && NF >= 6 { print p "," i "," $1 "," $2 "," $3 "," $4 "," $6 }' >>"$CSV"
    fi
}

LOOPS=()
stop_loops() { [ ${#LOOPS[@]} -eq 0 ] || kill "${LOOPS[@]}" 2>/dev/null; LOOPS=(); }
trap stop_loops EXIT
for regime in ${REGIMES:-idle busy}; do
    if [ "$regime" = busy ]; then for _ in $(seq "$BUSY_LOOPS"); do (while :; do :; done) & LOOPS+=($!); done; fi
    for _ in $(seq "${ROUNDS:-2}"); do
        for t in "p2p 2" "coll $COLL_RANKS"; do
            read -r test n <<<"$t"
            for b in $BINDS; do
                for s in $SPINS; do
                    for nl in ${BBRUNS:-bb=$L/bbrun}; do
                        job "$regime" "${nl%%=*}-spin$s-bind$b" "$test" "$n" env BB_SPIN="$s" "${nl#*=}" --bind-to "$b"
                    done
                done
            done
            job "$regime" mpich "$test" "$n" "$L/mpiexec.hydra"
            job "$regime" openmpi "$test" "$n" "$L/mpirun.openmpi" --oversubscribe
        done
    done
    stop_loops
done

# Per regime, test, ranks and size: each implementation's median over the rounds (the middle
# one, the lower of two), then its mean likewise in brackets.
sort -t, -k1,1 -k3,5 -k6,6g "$CSV" | awk -F, '$1 != "regime" {
        k = $1 " " $3 " " $4 " " $5; if (!(k in seen)) { seen[k] = 1; keys[++n] = k }
        med[k, $2, ++c[k, $2]] = $6; mean[k, $2, c[k, $2]] = $7; if (!($2 in col)) { col[$2] = 1; cols[++m] = $2 }
    }
    END {
        for (i = 1; i <= n; i++) {
            k = keys[i]; print k
            for (j = 1; j <= m; j++) if (c[k, cols[j]]) {
                h = int((c[k, cols[j]] + 1) / 2)
                printf "    %-22s %10s us  (mean %s)\n", cols[j], med[k, cols[j], h], mean[k, cols[j], h]
            }
        }
    }' | tee "$RES/wait.txt"
echo "load: $(cut -d' ' -f1-3 /proc/loadavg); nproc $(nproc); mode $BBDEV_MODE"
