#!/usr/bin/env bash
# bench/device/rma.sh [RESULTS_DIR]: one-sided communication (bench/peers/rma.c, as
# bench/peers/rma.sh runs it here) from the bundle bench/device/bundle.sh built (DEV, default
# .dev/), for a lent machine with no MPI: the MPICH build on Billboard and on MPICH, the Open MPI
# build on Open MPI, ROUNDS interleaved rounds (default 3), every test at each rank count of
# TESTS; prints per (test, ranks, bytes) the median over rounds of each run's median and
# billboard / min(MPICH, Open MPI). Writes RESULTS_DIR (default $OUT, else
# target/bench-results/device-rma)/rma.txt. The whole stays under BUDGET seconds (default 150).
#
# Environment: DEV, BUDGET, ROUNDS, TRIALS (default 200), TESTS (default "put_flush:2
# fetch_op:2 cas:2 lock:2 lock:8 lock:16 fence:2 fence:16"), SIZES (fence; default 8,8K,1M).
set -uo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$ROOT"
DEV=$(cd "${DEV:-.dev}" 2>/dev/null && pwd) || { echo "rma.sh: no bundle ${DEV:-.dev}" >&2; exit 1; }
L=$DEV/launch
RES=${1:-${OUT:-target/bench-results/device-rma}}
mkdir -p "$RES"
END=$(($(date +%s) + ${BUDGET:-150}))
TESTS=${TESTS:-put_flush:2 fetch_op:2 cas:2 lock:2 lock:8 lock:16 fence:2 fence:16}
export OMPI_MCA_btl_vader_single_copy_mechanism=none OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
source "$L/mode.sh"
export BBDEV_MODE=${BBDEV_MODE:-$(bbdev_mode)}
bbdev_unpack

RAW=$RES/raw.txt
: >"$RAW"
# run IMPL TEST RANKS LAUNCHER PROGRAM: the rows of one run, tagged, into RAW
run() {
    local left=$((END - $(date +%s)))
    [ "$left" -gt 5 ] || return 1
    timeout $((left < 40 ? left : 40)) "$4" -n "$3" "$5" "$2" --trials "${TRIALS:-200}" --sizes "${SIZES:-8,8K,1M}" \
        2>/dev/null | awk -v impl="$1" -v np="$3" '$1 != "test" && NF >= 5 { print impl, $1, np, $2, $3 }' >>"$RAW"
}
for _ in $(seq "${ROUNDS:-3}"); do
    for t in $TESTS; do
        test=${t%%:*} np=${t##*:}
        run billboard "$test" "$np" "$L/bbrun" "$DEV/peers/bin/rma-mpich"
        run mpich "$test" "$np" "$L/mpiexec.hydra" "$DEV/peers/bin/rma-mpich"
        run openmpi "$test" "$np" "$L/mpirun.openmpi" "$DEV/peers/bin/rma-openmpi"
    done
done
sort -k2,4 -k1,1 -k5,5g "$RAW" | awk '{
        k = $2 " " $3 " " $4; if (!(k in seen)) { seen[k] = 1; keys[++n] = k }
        all[k, $1, ++c[k, $1]] = $5
    }
    function med(k, i) { return c[k, i] ? all[k, i, int((c[k, i] + 1) / 2)] : "" }
    END {
        printf "%-10s %5s %8s %10s %10s %10s %8s\n", "test", "ranks", "bytes", "billboard", "MPICH", "Open MPI", "bb/best"
        for (j = 1; j <= n; j++) {
            k = keys[j]; split(k, p, " "); b = med(k, "billboard"); m = med(k, "mpich"); o = med(k, "openmpi")
            best = m; if (o != "" && (best == "" || o + 0 < best + 0)) best = o
            r = (b == "" || best == "" || best + 0 == 0) ? "-" : sprintf("%.2f", b / best)
            printf "%-10s %5s %8s %10s %10s %10s %8s\n", p[1], p[2], p[3], b == "" ? "-" : b, m == "" ? "-" : m, o == "" ? "-" : o, r
        }
    }' | tee "$RES/rma.txt"
echo "load: $(cut -d' ' -f1-3 /proc/loadavg); nproc $(nproc); mode $BBDEV_MODE"
