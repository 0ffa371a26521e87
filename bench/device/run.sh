#!/usr/bin/env bash
# bench/device/run.sh [RESULTS_DIR]: one timed benchmark pass on a lent machine with no MPI
# installed, from the bundle bench/device/bundle.sh built (DEV, default .dev/, carried beside the
# tree). Everything runs under `timeout`; the whole stays under BUDGET seconds (default 390):
#   (0) the machine: nproc, uname -a, glibc, load, /dev/shm, ptrace scope; the bundle's mode
#       (direct, or through the carried loader when the host's glibc is older), and a smoke run of
#       each MPI (2 ranks), which picks fallbacks where one fails: Open MPI without CMA
#       (btl_vader_single_copy_mechanism=none), then without binding and over lo; MPICH/UCX without
#       CMA and /proc links, then Hydra's fork launcher on localhost
#   (a) the floor: bb-bench floor
#   (b) one-way latency, 2 ranks, SIZES (default 8,1K,64K,1M): bb-bench latency on Billboard,
#       pingpong (built for MPICH) on Billboard ("bb MPI"), on MPICH and (Open MPI build) on Open MPI
#   (c) collectives (bench/peers/coll.sh with the bundle's launchers and binaries): OPS at
#       COLL_SIZES, RANKS (default "8 16"), ROUNDS (default 2) interleaved rounds
#   (d) the same at BUSY_RANKS (default 16) ranks with BUSY_LOOPS (default 4) busy loops beside the job
# and prints medians with billboard / min(MPICH, Open MPI). RESULTS_DIR (default $OUT, else
# target/bench-results/device) receives at most 7 files: summary.txt (what stdout shows),
# machine.txt, floor.csv, latency.csv, coll.csv, coll-busy.csv, log.txt.
#
# Environment: DEV, BUDGET, SIZES, TRIALS (p2p, default 200), OPS, COLL_SIZES (default 8,8K,1M),
# COLL_TRIALS (default 30), BUSY_TRIALS (default 10), RANKS, ROUNDS, BUSY_RANKS, BUSY_LOOPS,
# SHORT=1 (few trials: a test of the script), BBDEV_MODE=direct|loader (skip the detection).
set -uo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$ROOT"
START=$(date +%s)
BUDGET=${BUDGET:-390}
END=$((START + BUDGET))
DEV=$(cd "${DEV:-.dev}" 2>/dev/null && pwd) || { echo "run.sh: no bundle ${DEV:-.dev} (bench/device/bundle.sh)" >&2; exit 1; }
RES=${1:-${OUT:-target/bench-results/device}}
mkdir -p "$RES"
RES=$(cd "$RES" && pwd)
WORK=$(mktemp -d "${TMPDIR:-/tmp}/bbdev.XXXXXX")
SIZES=${SIZES:-8,1K,64K,1M}
OPS=${OPS:-barrier,bcast,allreduce,reduce,allgather,alltoall,gather,scatter}
COLL_SIZES=${COLL_SIZES:-8,8K,1M}
RANKS=${RANKS:-8 16}
ROUNDS=${ROUNDS:-2}
BUSY_RANKS=${BUSY_RANKS:-16}
BUSY_LOOPS=${BUSY_LOOPS:-4}
if [ "${SHORT:-0}" = 1 ]; then
    TRIALS=${TRIALS:-100} COLL_TRIALS=${COLL_TRIALS:-10} BUSY_TRIALS=${BUSY_TRIALS:-10}
else
    TRIALS=${TRIALS:-200} COLL_TRIALS=${COLL_TRIALS:-30} BUSY_TRIALS=${BUSY_TRIALS:-10}
fi
L=$DEV/launch
LOG=$RES/log.txt
SUMMARY=$RES/summary.txt
: >"$LOG"
: >"$SUMMARY"
LOOPS=()
cleanup() {
    local p
    for p in "${LOOPS[@]}"; do kill "$p" 2>/dev/null; done
    rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

say() { printf '%s\n' "$*" | tee -a "$SUMMARY"; }  # the summary: stdout and summary.txt
log() { printf '[%4ds] %s\n' $(($(date +%s) - START)) "$*" | tee -a "$LOG" >&2; }
left() { echo $((END - $(date +%s))); }
# limit SECONDS: SECONDS, or less where the budget ends first (at least 1)
limit() { local l; l=$(($(left) - 5)); [ "$l" -gt "$1" ] && l=$1; [ "$l" -lt 1 ] && l=1; echo "$l"; }

# step NAME SECONDS OUTPUT COMMAND...: runs under a timeout; stderr into WORK/NAME.err; on failure
# logs the exit status and the last lines of stderr and empties OUTPUT.
step() {
    local name=$1 secs=$2 out=$3 rc
    shift 3
    if [ "$(left)" -lt 8 ]; then log "$name: skipped, out of time"; : >"$out"; return 1; fi
    secs=$(limit "$secs")
    timeout -k 5 "$secs" "$@" >"$out" 2>"$WORK/$name.err"
    rc=$?
    if [ "$rc" != 0 ]; then
        log "$name: failed (exit $rc$([ "$rc" = 124 ] && echo ", timed out after ${secs}s")): $*"
        tail -n 5 "$WORK/$name.err" | sed 's/^/    /' | tee -a "$LOG" >&2
        : >"$out"
        return 1
    fi
    return 0
}

# --- (0) the machine, the bundle's mode, smoke runs -----------------------------------------
# Can one process read another's memory (the single-copy route of Billboard, Open MPI's CMA)?
cat >"$WORK/vm_readv.py" <<'EOF'
import ctypes, os, time
libc = ctypes.CDLL(None, use_errno=True)
class iovec(ctypes.Structure):
    _fields_ = [("base", ctypes.c_void_p), ("len", ctypes.c_size_t)]
src = ctypes.create_string_buffer(b"billboard", 16)
dst = ctypes.create_string_buffer(16)
r, w = os.pipe()
pid = os.fork()
if pid == 0:
    os.write(w, b"x"); time.sleep(5); os._exit(0)
os.read(r, 1)
local, remote = iovec(ctypes.addressof(dst), 16), iovec(ctypes.addressof(src), 16)
n = libc.process_vm_readv(pid, ctypes.byref(local), 1, ctypes.byref(remote), 1, 0)
err = ctypes.get_errno()
os.kill(pid, 9); os.waitpid(pid, 0)
print("ok" if n == 16 and dst.raw[:9] == b"billboard" else "fails: %s" % os.strerror(err))
EOF
{
    echo "date: $(date -u '+%F %T UTC')"
    echo "nproc: $(nproc)  cpus online: $(cat /sys/devices/system/cpu/online 2>/dev/null)"
    echo "uname: $(uname -a)"
    echo "cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //')"
    echo "glibc: $(ldd --version 2>&1 | head -n 1)  getconf: $(getconf GNU_LIBC_VERSION 2>&1)"
    echo "bundle: needs glibc $(cat "$DEV/GLIBC_NEEDED"), $(cat "$DEV/GLIBC_BUILT"); $(du -sh "$DEV" | cut -f1)"
    echo "load: $(cat /proc/loadavg)"
    echo "mem: $(grep -E 'MemTotal|MemAvailable' /proc/meminfo | tr -s ' ' | tr '\n' ' ')"
    echo "/dev/shm: $(df -h /dev/shm 2>&1 | tail -n 1)"
    echo "ptrace_scope: $(cat /proc/sys/kernel/yama/ptrace_scope 2>&1)"
    echo "process_vm_readv from a child: $(timeout 10 python3 "$WORK/vm_readv.py" 2>&1 | tail -n 1)"
    echo "dmesg: $(dmesg 2>/dev/null | head -n 2 | tr '\n' ' ')"
    echo "user: $(id -u)  ulimit -l: $(ulimit -l)  ulimit -n: $(ulimit -n)"
} >"$RES/machine.txt" 2>&1
say "== machine"
grep -E '^(date|nproc|uname|cpu|glibc|bundle|load|/dev/shm|ptrace|process_vm)' "$RES/machine.txt" | tee -a "$SUMMARY"

# Open MPI's shared-memory BTL aborts where its single copy (CMA) is refused: go without
if ! grep -q '^process_vm_readv from a child: ok' "$RES/machine.txt"; then
    export OMPI_MCA_btl_vader_single_copy_mechanism=none
fi
source "$L/mode.sh"
export BBDEV_MODE=${BBDEV_MODE:-$(bbdev_mode)}
bbdev_unpack
SMOKE=(--ops barrier,allreduce --sizes 8,1M --trials 10 --csv)
smoke() { # NAME LAUNCHER... : 2 ranks of coll
    local name=$1
    shift
    step "smoke-$name" 20 "$WORK/smoke-$name.csv" "$@" -n 2 "${SMOKE[@]}" && [ -s "$WORK/smoke-$name.csv" ]
}
MPIRUN_MPICH="$L/mpiexec.hydra"
MPIRUN_OPENMPI="$L/mpirun.openmpi"
COLL_MPICH="$DEV/peers/bin/coll-mpich"
COLL_OPENMPI="$DEV/peers/bin/coll-openmpi"
smoke_all() {
    OK_BB=0 OK_MPICH=0 OK_OMPI=0
    # twice for Billboard, in case the first start is slow
    if smoke billboard "$L/bbrun" "$COLL_MPICH" || smoke billboard "$L/bbrun" "$COLL_MPICH"; then OK_BB=1; fi
    smoke mpich $MPIRUN_MPICH "$COLL_MPICH" && OK_MPICH=1
    smoke openmpi $MPIRUN_OPENMPI "$COLL_OPENMPI" && OK_OMPI=1
}
smoke_all
if [ $((OK_BB + OK_MPICH + OK_OMPI)) = 0 ]; then
    other=$([ "$BBDEV_MODE" = direct ] && echo loader || echo direct)
    log "nothing ran in $BBDEV_MODE mode; trying $other"
    BBDEV_MODE=$other
    smoke_all
fi
if [ "$OK_MPICH" = 0 ] && [ "$(left)" -gt 200 ]; then
    log "MPICH: retrying with UCX_TLS=self,posix,sysv,tcp UCX_POSIX_USE_PROC_LINK=n"
    export UCX_TLS=self,posix,sysv,tcp UCX_POSIX_USE_PROC_LINK=n
    smoke mpich $MPIRUN_MPICH "$COLL_MPICH" && OK_MPICH=1 || unset UCX_TLS UCX_POSIX_USE_PROC_LINK
fi
if [ "$OK_MPICH" = 0 ] && [ "$(left)" -gt 200 ]; then
    log "MPICH: retrying with -launcher fork -hosts localhost (no network, no name for this host?)"
    MPIRUN_MPICH="$L/mpiexec.hydra -launcher fork -hosts localhost"
    smoke mpich $MPIRUN_MPICH "$COLL_MPICH" && OK_MPICH=1
fi
if [ "$OK_OMPI" = 0 ] && [ "$(left)" -gt 200 ]; then
    log "Open MPI: retrying with btl_vader_single_copy_mechanism=none"
    export OMPI_MCA_btl_vader_single_copy_mechanism=none
    if ! smoke openmpi $MPIRUN_OPENMPI "$COLL_OPENMPI"; then
        log "Open MPI: retrying with --bind-to none, btl self,vader and oob over lo too"
        MPIRUN_OPENMPI="$L/mpirun.openmpi --bind-to none --mca btl self,vader --mca oob_tcp_if_include lo"
        smoke openmpi $MPIRUN_OPENMPI "$COLL_OPENMPI" && OK_OMPI=1
    else
        OK_OMPI=1
    fi
fi
say "mode: $BBDEV_MODE; smoke (2 ranks, barrier+allreduce 1M): billboard=$OK_BB mpich=$OK_MPICH openmpi=$OK_OMPI;" \
    "env: ${UCX_TLS:+UCX_TLS=$UCX_TLS }${OMPI_MCA_btl_vader_single_copy_mechanism:+vader_single_copy=none }launchers: ${MPIRUN_MPICH##*/}, ${MPIRUN_OPENMPI##*/}"
export BBDEV_MODE

# --- (a) the floor, (b) latency ------------------------------------------------------------
say ""
say "== floor and one-way latency, 2 ranks (us, median of trimmed trials; bb/best = billboard / min(MPICH, Open MPI))"
P2P=(--csv --sizes "$SIZES" --trials "$TRIALS")
step floor 30 "$WORK/floor.csv" "$L/bb-bench" floor "${P2P[@]}"
cp "$WORK/floor.csv" "$RES/floor.csv"
step lat-billboard 25 "$WORK/lat-billboard.csv" "$L/bbrun" -n 2 "$DEV/bb/bin/bb-bench" latency "${P2P[@]}"
step lat-bbmpi 25 "$WORK/lat-bbmpi.csv" "$L/bbrun" -n 2 "$DEV/peers/bin/pingpong-mpich" latency "${P2P[@]}"
[ "$OK_MPICH" = 1 ] && step lat-mpich 25 "$WORK/lat-mpich.csv" $MPIRUN_MPICH -n 2 "$DEV/peers/bin/pingpong-mpich" latency "${P2P[@]}"
[ "$OK_OMPI" = 1 ] && step lat-openmpi 25 "$WORK/lat-openmpi.csv" $MPIRUN_OPENMPI --oversubscribe -n 2 \
    "$DEV/peers/bin/pingpong-openmpi" latency "${P2P[@]}"
for f in floor lat-billboard lat-bbmpi lat-mpich lat-openmpi; do [ -e "$WORK/$f.csv" ] || : >"$WORK/$f.csv"; done
# Joined by size_bytes, columns looked up by header name.
awk -F, -v OFS=, -v out="$RES/latency.csv" -v w="$WORK/" '
    FNR == 1 { delete col; for (i = 1; i <= NF; i++) col[$i] = i; f = FILENAME; next }
    function get(name) { return (name in col && $col[name] != "") ? $col[name] : "" }
    {
        s = $1; if (!(s in seen)) { seen[s] = 1; order[++n] = s }
        if (f == w "floor.csv") fl[s] = get("oneway_us_median")
        if (f == w "lat-billboard.csv") { bb[s] = get("oneway_us_median"); if (get("floor_oneway_us_median") != "") fr[s] = get("floor_oneway_us_median") }
        if (f == w "lat-bbmpi.csv") bx[s] = get("oneway_us_median")
        if (f == w "lat-mpich.csv") mp[s] = get("oneway_us_median")
        if (f == w "lat-openmpi.csv") om[s] = get("oneway_us_median")
    }
    function best(a, b) { return a == "" ? b : (b == "" || a + 0 < b + 0 ? a : b) }
    function ratio(a, b) { return (a == "" || b == "" || b + 0 == 0) ? "-" : sprintf("%.2f", a / b) }
    function show(v) { return v == "" ? "-" : v }
    END {
        print "size_bytes,floor_us,billboard_us,billboard_mpi_us,mpich_us,openmpi_us,billboard_over_best,billboard_mpi_over_best" > out
        printf "%9s %9s %10s %10s %10s %10s %8s %9s\n", "size", "floor", "billboard", "bb MPI", "MPICH", "Open MPI", "bb/best", "bbMPI/best"
        for (i = 1; i <= n; i++) {
            s = order[i]; F = (s in fr) ? fr[s] : fl[s]; B = best(mp[s], om[s])
            print s, F, bb[s], bx[s], mp[s], om[s], ratio(bb[s], B), ratio(bx[s], B) > out
            printf "%9s %9s %10s %10s %10s %10s %8s %9s\n", s, show(F), show(bb[s]), show(bx[s]), show(mp[s]), show(om[s]), ratio(bb[s], B), ratio(bx[s], B)
        }
    }' "$WORK/floor.csv" "$WORK/lat-billboard.csv" "$WORK/lat-bbmpi.csv" "$WORK/lat-mpich.csv" "$WORK/lat-openmpi.csv" \
    2>"$RES/latency.csv" | tee -a "$SUMMARY"

# --- (c) collectives, (d) under load -------------------------------------------------------
# coll NAME RANKS ROUNDS TRIALS DEADLINE: bench/peers/coll.sh on the bundle; prints its table and
# a line: the geometric mean of bb/best over the rows, and in how many billboard is the fastest.
coll() {
    local name=$1 ranks=$2 rounds=$3 trials=$4 deadline=$5
    local mpich=$MPIRUN_MPICH ompi=$MPIRUN_OPENMPI
    # a launcher that failed its smoke run stays out (`false`: an empty column)
    [ "$OK_MPICH" = 1 ] || mpich=false
    [ "$OK_OMPI" = 1 ] || ompi=false
    BBRUN=$L/bbrun MPIRUN_MPICH=$mpich MPIRUN_OPENMPI=$ompi COLL_MPICH=$COLL_MPICH COLL_OPENMPI=$COLL_OPENMPI \
        RANKS=$ranks ROUNDS=$rounds TRIALS=$trials OPS=$OPS SIZES=$COLL_SIZES DEADLINE=$deadline RUN_TIMEOUT=120 \
        bench/peers/coll.sh "$WORK/$name" 2>>"$LOG" >/dev/null
    # coll.sh's table without its "before" columns
    # its columns: op ranks size floor before billboard MPICH "Open MPI" before/best bb/best
    awk 'NR == 1 { printf "%-10s %5s %8s %9s %11s %11s %11s %8s\n", "op", "ranks", "size", "floor", "billboard", "MPICH", "Open MPI", "bb/best"; next }
        { printf "%-10s %5s %8s %9s %11s %11s %11s %8s\n", $1, $2, $3, $4, $6, $7, $8, $10 }' "$WORK/$name/summary.txt" 2>/dev/null |
        tee -a "$SUMMARY"
    awk 'NR > 1 && $6 + 0 > 0 && ($7 + 0 > 0 || $8 + 0 > 0) {
            best = $7 + 0 > 0 && ($8 + 0 == 0 || $7 + 0 < $8 + 0) ? $7 : $8
            r = $6 / best; n++; s += log(r); if (r <= 1) w++ }
        END { if (n) printf "geomean bb/best %.2f over %d rows; billboard fastest in %d\n", exp(s / n), n, w + 0 }' \
        "$WORK/$name/summary.txt" 2>/dev/null | tee -a "$SUMMARY"
    awk 'BEGIN { print "impl,op,ranks,size_bytes,us_median,us_min,us_mean" } { print }' \
        "$WORK/$name/all.csv" >"$RES/$name.csv" 2>/dev/null
}
say ""
say "== collectives (us per call, slowest rank; median over $ROUNDS rounds of run medians), ranks: $RANKS; load: $(cut -d' ' -f1-3 /proc/loadavg)"
# (c) gets what is left but two fifths, kept for (d)
now=$(date +%s)
coll coll "$RANKS" "$ROUNDS" "$COLL_TRIALS" $((END - (END - now) * 2 / 5))

say ""
say "== under load: $BUSY_RANKS ranks beside $BUSY_LOOPS busy loops, 1 round; load before: $(cut -d' ' -f1-3 /proc/loadavg)"
for _ in $(seq "$BUSY_LOOPS"); do (while :; do :; done) & LOOPS+=($!); done
coll coll-busy "$BUSY_RANKS" 1 "$BUSY_TRIALS" $((END - 10))
for p in "${LOOPS[@]}"; do kill "$p" 2>/dev/null; done
LOOPS=()
say ""
say "done in $(($(date +%s) - START)) s; load: $(cut -d' ' -f1-3 /proc/loadavg); mode $BBDEV_MODE; files in $RES"
