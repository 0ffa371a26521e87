#!/usr/bin/env bash
# bench/peers/run.sh [RESULTS_DIR]: Billboard against the floor and its peers, in one run.
#
# Measures, with the same methodology (warm-up, >= 100 trials, 10% trim, median):
#   - the floor of the bare channel (bb-bench floor),
#   - Billboard (bbrun -n 2 bb-bench latency|bandwidth; their CSVs carry the floor measured
#     in the same run, which then wins over the standalone floor),
#   - MPICH and Open MPI (bench/peers/pingpong.c built with each one's mpicc),
#   - the MPICH-built binary run unchanged on Billboard's MPI library ("bb MPI"),
# writes every CSV into RESULTS_DIR (default target/bench-results/) and prints merged tables:
# size, floor, billboard, MPICH, Open MPI, billboard/floor and billboard/best-MPI ratios.
# For latency best-MPI = min(MPICH, Open MPI); for bandwidth it is the max (the better one).
#
# Environment:
#   BB_BENCH, BBRUN   paths of bb-bench and bbrun (default dist/bin/, then target/release/)
#   TRIALS            timed trials per size (default 200)
#   MAX_SIZE          largest message in bytes (default 4194304)
#   SKIP_INSTALL=1    do not try to install the MPI packages
# Every run is under a timeout; a run that fails leaves its column empty and says why.
set -uo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$ROOT"
RESULTS=${1:-target/bench-results}
mkdir -p "$RESULTS/bin"
RESULTS=$(cd "$RESULTS" && pwd)
TRIALS=${TRIALS:-200}
MAX_SIZE=${MAX_SIZE:-4194304}
RUN_TIMEOUT=${RUN_TIMEOUT:-600}
COMMON=(--trials "$TRIALS" --max-size "$MAX_SIZE")
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1

log() { printf 'run.sh: %s\n' "$*" >&2; }

# --- (a) the MPI packages -----------------------------------------------------------------
install_mpi() {
    local pkgs=(mpich libmpich-dev openmpi-bin libopenmpi-dev)
    command -v mpicc.mpich >/dev/null && command -v mpicc.openmpi >/dev/null && return 0
    [ "${SKIP_INSTALL:-0}" = 1 ] && { log "MPI compilers missing and SKIP_INSTALL=1"; return 1; }
    log "installing ${pkgs[*]}"
    # Only refresh the package lists when the plain install fails: it is slow and rarely needed.
    DEBIAN_FRONTEND=noninteractive apt-get install -y "${pkgs[@]}" >"$RESULTS/apt.log" 2>&1 ||
        { apt-get update >>"$RESULTS/apt.log" 2>&1 &&
          DEBIAN_FRONTEND=noninteractive apt-get install -y "${pkgs[@]}" >>"$RESULTS/apt.log" 2>&1; } ||
        { log "apt-get install failed, see $RESULTS/apt.log"; return 1; }
}

# --- (b) the peers ------------------------------------------------------------------------
# -Wno-stringop-overflow: GCC misreads MPICH's MPI_STATUSES_IGNORE (a sentinel pointer) as a
# zero-sized array and warns on every MPI_Waitall.
CFLAGS=(-O2 -Wall -Wextra -Wno-stringop-overflow)
build_peer() { # name compiler
    "$2" "${CFLAGS[@]}" -o "$RESULTS/bin/pingpong-$1" bench/peers/pingpong.c -lm 2>"$RESULTS/build-$1.log" ||
        { log "building pingpong with $2 failed, see $RESULTS/build-$1.log"; return 1; }
}

find_tool() { # env-value name
    local candidate
    for candidate in "$1" "dist/bin/$2" "target/release/$2"; do
        [ -n "$candidate" ] && [ -x "$candidate" ] && { echo "$candidate"; return 0; }
    done
    return 1
}

# run OUTPUT COMMAND...: runs under the timeout; on failure empties OUTPUT and logs why.
run() {
    local out=$1
    shift
    log "$(basename "$out" .csv): $*"
    timeout -k 10 "$RUN_TIMEOUT" "$@" >"$out" 2>"${out%.csv}.err"
    local rc=$?
    if [ "$rc" != 0 ]; then
        log "  failed (exit $rc$([ "$rc" = 124 ] && echo ", timed out")): $(tail -n 1 "${out%.csv}.err")"
        : >"$out"
    fi
}

install_mpi && MPI_OK=1 || MPI_OK=0
if [ "$MPI_OK" = 1 ]; then
    build_peer mpich mpicc.mpich || true
    build_peer openmpi mpicc.openmpi || true
fi

BB_BENCH=$(find_tool "${BB_BENCH:-}" bb-bench) || {
    log "no bb-bench in \$BB_BENCH, dist/bin or target/release; building it"
    cargo build --release -p bench >"$RESULTS/cargo.log" 2>&1 || { log "cargo build failed, see $RESULTS/cargo.log"; exit 1; }
    BB_BENCH=$(find_tool "" bb-bench) || { log "bb-bench still not found (CARGO_TARGET_DIR set? pass BB_BENCH)"; exit 1; }
}
BBRUN=$(find_tool "${BBRUN:-}" bbrun) || BBRUN=""

# --- (c) the runs -------------------------------------------------------------------------
run "$RESULTS/floor.csv" "$BB_BENCH" floor --csv "${COMMON[@]}"
for kind in latency bandwidth; do
    if [ -n "$BBRUN" ]; then
        run "$RESULTS/billboard-$kind.csv" "$BBRUN" -n 2 "$BB_BENCH" "$kind" --csv "${COMMON[@]}"
    else
        log "no bbrun found (set BBRUN): billboard columns left empty"
        : >"$RESULTS/billboard-$kind.csv"
    fi
    # The very binary built with mpicc.mpich, run on Billboard's MPI library by our bbrun.
    if [ -n "$BBRUN" ] && [ -x "$RESULTS/bin/pingpong-mpich" ] && [ -e "$(dirname "$BBRUN")/../lib/libmpich.so.12" ]; then
        run "$RESULTS/bbmpi-$kind.csv" "$BBRUN" -n 2 "$RESULTS/bin/pingpong-mpich" "$kind" --csv "${COMMON[@]}"
    else
        log "no Billboard MPI library beside bbrun (make it with 'make'): the 'bb MPI' column is left empty"
        : >"$RESULTS/bbmpi-$kind.csv"
    fi
    for mpi in mpich openmpi; do
        exe="$RESULTS/bin/pingpong-$mpi"
        if [ ! -x "$exe" ]; then : >"$RESULTS/$mpi-$kind.csv"; continue; fi
        case $mpi in
            mpich) run "$RESULTS/$mpi-$kind.csv" mpirun.mpich -n 2 "$exe" "$kind" --csv "${COMMON[@]}" ;;
            openmpi) run "$RESULTS/$mpi-$kind.csv" mpirun.openmpi --allow-run-as-root --oversubscribe -n 2 \
                "$exe" "$kind" --csv "${COMMON[@]}" ;;
        esac
    done
done

# --- (d) the merged tables ----------------------------------------------------------------
# merge KIND METRIC FLOOR_COLUMN: joins the CSVs by size_bytes (columns looked up by header
# name), writes RESULTS/KIND.csv and prints an aligned table.
merge() {
    local kind=$1 metric=$2 floor_col=$3 better=$4
    awk -F, -v OFS=, -v metric="$metric" -v floor_col="$floor_col" \
        -v ff="$RESULTS/floor.csv" -v bf="$RESULTS/billboard-$kind.csv" \
        -v mf="$RESULTS/mpich-$kind.csv" -v of="$RESULTS/openmpi-$kind.csv" -v xf="$RESULTS/bbmpi-$kind.csv" '
        FNR == 1 { delete col; for (i = 1; i <= NF; i++) col[$i] = i; next }
        function get(name) { return (name in col && $col[name] != "") ? $col[name] : "" }
        {
            s = $1; seen[s] = 1
            if (FILENAME == ff) floor_alone[s] = get(floor_col)
            if (FILENAME == bf) { bb[s] = get(metric "_median"); floor_run[s] = get("floor_" metric "_median") }
            if (FILENAME == mf) mp[s] = get(metric "_median")
            if (FILENAME == of) om[s] = get(metric "_median")
            if (FILENAME == xf) bx[s] = get(metric "_median")
        }
        END {
            for (s in seen) {
                f = (s in floor_run && floor_run[s] != "") ? floor_run[s] : floor_alone[s]
                print s, f, bb[s], mp[s], om[s], bx[s]
            }
        }' "$RESULTS/floor.csv" "$RESULTS/billboard-$kind.csv" "$RESULTS/mpich-$kind.csv" "$RESULTS/openmpi-$kind.csv" \
           "$RESULTS/bbmpi-$kind.csv" |
    sort -t, -k1,1n |
    awk -F, -v OFS=, -v better="$better" -v out="$RESULTS/$kind.csv" -v metric="$metric" '
        function best(a, b) {
            if (a == "") return b; if (b == "") return a
            return better == "lower" ? (a + 0 < b + 0 ? a : b) : (a + 0 > b + 0 ? a : b)
        }
        function ratio(a, b) { return (a == "" || b == "" || b + 0 == 0) ? "" : sprintf("%.3f", a / b) }
        function show(v) { return v == "" ? "-" : v }
        function hsize(n) {
            if (n >= 1048576 && n % 1048576 == 0) return (n / 1048576) " MiB"
            if (n >= 1024 && n % 1024 == 0) return (n / 1024) " KiB"
            return n " B"
        }
        BEGIN {
            u = metric == "gbps" ? "GB/s" : "us"
            print "size_bytes", "floor_" metric, "billboard_" metric, "mpich_" metric, "openmpi_" metric,
                "billboard_mpi_" metric, "billboard_over_floor", "billboard_over_best_mpi",
                "billboard_mpi_over_best_mpi", "billboard_mpi_over_native" > out
            printf "%9s %11s %11s %11s %11s %11s %9s %11s %11s %10s\n", "size", "floor " u, "billboard", "MPICH", "Open MPI",
                "bb MPI", "bb/floor", "bb/best-MPI", "bbMPI/best", "MPI/native"
        }
        {
            r1 = ratio($3, $2); r2 = ratio($3, best($4, $5)); r3 = ratio($6, best($4, $5)); r4 = ratio($6, $3)
            print $1, $2, $3, $4, $5, $6, r1, r2, r3, r4 > out
            printf "%9s %11s %11s %11s %11s %11s %9s %11s %11s %10s\n", hsize($1), show($2), show($3), show($4), show($5),
                show($6), show(r1), show(r2), show(r3), show(r4)
        }'
}

{
    echo
    echo "== latency: one-way us (round trip / 2), median of trimmed trials; bb/best-MPI = billboard / min(MPICH, Open MPI)"
    merge latency oneway_us oneway_us_median lower
    echo
    echo "== bandwidth: GB/s (1e9 B/s), window of 64; floor = max(memcpy, process_vm_readv, shared copy); bb/best-MPI = billboard / max(MPICH, Open MPI)"
    merge bandwidth gbps floor_gbps_median higher
} | tee "$RESULTS/summary.txt"
log "CSVs and summary.txt in $RESULTS"
