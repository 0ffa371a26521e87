#!/usr/bin/env bash
# bench/peers/coll.sh [RESULTS_DIR]: collective completion times (bench/peers/coll.c) on
# Billboard (the MPICH-built binary run unchanged on our library), MPICH and Open MPI,
# interleaved: ROUNDS rounds, each running the three one after another at every rank count,
# so a busy neighbour hurts all three alike. Prints per (op, ranks, size) the median over rounds
# of each run's median, and billboard / min(MPICH, Open MPI); then (ratios.txt) the median over
# rounds of each round's own ratios, billboard against the better peer, each peer, a memcpy of
# the size (bench/peers/memcpy_floor.c, once a round) and the before build. A 2-rank reduce's
# "floor" column is bench/peers/reduce_pipeline.c (the board's cells bare, no MPI). CSVs land in RESULTS_DIR
# (default target/bench-results/coll), and `bb-bench plot` (beside BBRUN, or BB_BENCH) draws
# them into RESULTS_DIR/svg: one SVG per collective and rank count.
#
# Environment: BBRUN (default dist/bin/bbrun), BBRUN_BEFORE (another build's bbrun, e.g. of the
# commit before a change: an extra "before" column, same rounds), RANKS (default "2 4"), OPS (default
# "reduce,allreduce"), SIZES (default "8K,64K,1M"), TRIALS (default 200), ROUNDS (default 3),
# RUN_TIMEOUT (default 300 s per run). To run prebuilt binaries through other launchers (a bundle
# such as bench/device/run.sh's, with no MPI installed): COLL_MPICH and COLL_OPENMPI (the two
# builds of coll.c; nothing is compiled when both are set), MPIRUN_MPICH (default mpirun.mpich),
# MPIRUN_OPENMPI (default mpirun.openmpi; --oversubscribe is added; both may carry options),
# DEADLINE (a `date +%s`: every run gets an equal share of the time left to it, at most RUN_TIMEOUT,
# so a slow run cannot starve the runs after it; a run cut short keeps the rows it printed).
set -uo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$ROOT"
RESULTS=${1:-target/bench-results/coll}
mkdir -p "$RESULTS/bin"
BBRUN=${BBRUN:-dist/bin/bbrun}
RANKS=${RANKS:-2 4}
OPS=${OPS:-reduce,allreduce}
SIZES=${SIZES:-8K,64K,1M}
TRIALS=${TRIALS:-200}
ROUNDS=${ROUNDS:-3}
RUN_TIMEOUT=${RUN_TIMEOUT:-300}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
log() { printf 'coll.sh: %s\n' "$*" >&2; }

# Under a real-time policy (`chrt -f`) a busy-polling rank is never preempted by a rank of the
# same priority, so more ranks than cores livelock: the ranks that run spin forever on the ones
# that never get a core (and `timeout`, real-time too, never runs to end them). Refuse that.
if [ "$(chrt -p $$ 2>/dev/null | grep -c 'SCHED_FIFO\|SCHED_RR')" != 0 ]; then
    for np in ${RANKS//,/ }; do
        if [ "$np" -gt "$(nproc)" ]; then
            log "refusing: $np ranks on $(nproc) cores under a real-time policy (chrt) livelock; drop chrt or RANKS=$np"
            exit 2
        fi
    done
fi

MPIRUN_MPICH=${MPIRUN_MPICH:-mpirun.mpich}
MPIRUN_OPENMPI=${MPIRUN_OPENMPI:-mpirun.openmpi}
DEADLINE=${DEADLINE:-}
CFLAGS=(-O2 -Wall -Wextra -Wno-stringop-overflow)
COLL_MPICH=${COLL_MPICH:-}
COLL_OPENMPI=${COLL_OPENMPI:-}
if [ -z "$COLL_MPICH" ] || [ -z "$COLL_OPENMPI" ]; then
    COLL_MPICH=$RESULTS/bin/coll-mpich COLL_OPENMPI=$RESULTS/bin/coll-openmpi
    mpicc.mpich "${CFLAGS[@]}" -o "$COLL_MPICH" bench/peers/coll.c || { log "mpicc.mpich failed"; exit 1; }
    if command -v mpicc.openmpi >/dev/null; then
        mpicc.openmpi "${CFLAGS[@]}" -o "$COLL_OPENMPI" bench/peers/coll.c || log "mpicc.openmpi failed"
    else
        log "no mpicc.openmpi (apt-get install openmpi-bin libopenmpi-dev): its column stays empty"
    fi
fi

# The bare floor of a barrier (bench/peers/coll_floor.c, no MPI), a column of its own where
# barrier is measured and the ranks have a core each (it only polls).
COLL_FLOOR=${COLL_FLOOR:-$RESULTS/bin/coll-floor}
[ -x "$COLL_FLOOR" ] || cc -O2 -o "$COLL_FLOOR" bench/peers/coll_floor.c || log "no floor: cc failed"
floor_runs() { [ -x "$COLL_FLOOR" ] && [[ ",$OPS," == *,barrier,* ]] && [ "$1" -le "$(nproc)" ]; }
# The floor of a 2-rank reduce (bench/peers/reduce_pipeline.c, no MPI): the board's cells bare,
# the poster copying cell by cell into shared memory, the root folding each; it spins, so only
# where the 2 ranks have a core each.
REDUCE_FLOOR=${REDUCE_FLOOR:-$RESULTS/bin/reduce-floor}
[ -x "$REDUCE_FLOOR" ] || cc -O2 -o "$REDUCE_FLOOR" bench/peers/reduce_pipeline.c || log "no reduce floor: cc failed"
reduce_floor_runs() { [ -x "$REDUCE_FLOOR" ] && [[ ",$OPS," == *,reduce,* ]] && [ "$1" = 2 ] && [ "$(nproc)" -ge 2 ]; }
# The floor of the large sizes (bench/peers/memcpy_floor.c): one process's memcpy of each size,
# once a round, printed as op `memcpy` beside the collectives of that round.
MEMCPY_FLOOR=${MEMCPY_FLOOR:-$RESULTS/bin/memcpy-floor}
[ -x "$MEMCPY_FLOOR" ] || cc -O2 -o "$MEMCPY_FLOOR" bench/peers/memcpy_floor.c || log "no memcpy floor: cc failed"

ARGS=(--csv --ops "$OPS" --sizes "$SIZES" --trials "$TRIALS")
: >"$RESULTS/all.csv"
: >"$RESULTS/rounds.csv"
ROUND=0
run() { # name ranks command...
    local name=$1 np=$2
    shift 2
    local limit=$RUN_TIMEOUT
    if [ -n "$DEADLINE" ]; then
        local left=$((DEADLINE - $(date +%s)))
        [ "$left" -lt 5 ] && { log "$name -n $np skipped: past DEADLINE"; RUNS_LEFT=$((RUNS_LEFT - 1)); return; }
        left=$((left / (RUNS_LEFT > 0 ? RUNS_LEFT : 1)))
        [ "$left" -lt "$limit" ] && limit=$left
        RUNS_LEFT=$((RUNS_LEFT - 1))
    fi
    timeout -k 5 "$limit" "$@" "${ARGS[@]}" 2>"$RESULTS/$name-$np.err" |
        awk -F, -v name="$name" '/^[a-z_]+,[0-9]+,[0-9]+,[0-9.]+,/ { print name "," $0 }' |
        tee -a "$RESULTS/all.csv" | sed "s/^/$ROUND,/" >>"$RESULTS/rounds.csv" ||
        log "$name -n $np failed: $(tail -n 1 "$RESULTS/$name-$np.err")"
}
IMPLS=$(( $([ -x "$BBRUN" ] && echo 1 || echo 0) + $([ -n "${BBRUN_BEFORE:-}" ] && echo 1 || echo 0) + 1 +
    $([ -x "$COLL_OPENMPI" ] && echo 1 || echo 0) ))
RUNS_LEFT=$((ROUNDS * $(echo $RANKS | wc -w) * IMPLS))
[ -x "$MEMCPY_FLOOR" ] && RUNS_LEFT=$((RUNS_LEFT + ROUNDS))
for np in $RANKS; do floor_runs "$np" && RUNS_LEFT=$((RUNS_LEFT + ROUNDS)); done
for np in $RANKS; do reduce_floor_runs "$np" && RUNS_LEFT=$((RUNS_LEFT + ROUNDS)); done
for round in $(seq "$ROUNDS"); do
    ROUND=$round
    [ -x "$MEMCPY_FLOOR" ] && run memcpy 1 "$MEMCPY_FLOOR"
    for np in $RANKS; do
        log "round $round, $np ranks"
        floor_runs "$np" && run floor "$np" "$COLL_FLOOR" --ranks "$np"
        reduce_floor_runs "$np" && run floor "$np" "$REDUCE_FLOOR"
        [ -x "$BBRUN" ] && run billboard "$np" "$BBRUN" -n "$np" "$COLL_MPICH"
        [ -n "${BBRUN_BEFORE:-}" ] && run before "$np" "$BBRUN_BEFORE" -n "$np" "$COLL_MPICH"
        run mpich "$np" $MPIRUN_MPICH -n "$np" "$COLL_MPICH"
        [ -x "$COLL_OPENMPI" ] &&
            run openmpi "$np" $MPIRUN_OPENMPI --oversubscribe -n "$np" "$COLL_OPENMPI"
    done
done

# Median over rounds of each run's median, per (implementation, op, ranks, size).
sort -t, -k2,2 -k3,3n -k4,4n "$RESULTS/all.csv" | awk -F, '
    function median(key,    n, i, j, v, t) {
        n = split(vals[key], v, " ")
        for (i = 2; i <= n; i++) for (j = i; j > 1 && v[j - 1] + 0 > v[j] + 0; j--) { t = v[j]; v[j] = v[j - 1]; v[j - 1] = t }
        return n % 2 ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2
    }
    { k = $2 "," $3 "," $4; if (!(k in seen)) { seen[k] = 1; order[++m] = k }; vals[$1 "," k] = vals[$1 "," k] " " $5 }
    END {
        printf "%-14s %5s %9s %9s %11s %11s %11s %11s %9s %9s\n", "op", "ranks", "size", "floor", "before", "billboard", "MPICH", "Open MPI", "before/best", "bb/best"
        for (i = 1; i <= m; i++) {
            k = order[i]; split(k, f, ",")
            b = ("billboard," k in vals) ? median("billboard," k) : ""
            x = ("before," k in vals) ? median("before," k) : ""
            p = ("mpich," k in vals) ? median("mpich," k) : ""
            o = ("openmpi," k in vals) ? median("openmpi," k) : ""
            best = p == "" ? o : (o == "" || p + 0 < o + 0 ? p : o)
            r = (b == "" || best == "") ? "-" : sprintf("%.2f", b / best)
            rx = (x == "" || best == "") ? "-" : sprintf("%.2f", x / best)
            fl = ("floor," k in vals) ? median("floor," k) : "-"
            printf "%-14s %5s %9s %9s %11s %11s %11s %11s %9s %9s\n", f[1], f[2], f[3], fl, x == "" ? "-" : x, b, p, o, rx, r
        }
    }' | tee "$RESULTS/summary.txt"
# The machine is shared: a ratio means something only within one round. Per (op, ranks, size):
# the median over rounds of billboard / better peer, and of billboard / the round's memcpy of
# the size (rounds.csv: round,implementation,op,ranks,size,median,...).
awk -F, '
    function median(s,    n, i, j, v, t) {
        n = split(s, v, " ")
        for (i = 2; i <= n; i++) for (j = i; j > 1 && v[j - 1] + 0 > v[j] + 0; j--) { t = v[j]; v[j] = v[j - 1]; v[j - 1] = t }
        return n % 2 ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2
    }
    $2 == "memcpy" { mc[$1 "," $5] = $6; next }
    { k = $3 "," $4 "," $5; if (!(k in seen)) { seen[k] = 1; order[++m] = k }; t[$1 "," $2 "," k] = $6; r[$1] = 1 }
    END {
        printf "%-14s %5s %9s %13s %13s %13s %13s %13s\n", "op", "ranks", "size", "bb/best", "bb/MPICH", "bb/OpenMPI", "bb/memcpy", "bb/before"
        for (i = 1; i <= m; i++) {
            k = order[i]; split(k, f, ","); q = ""; qm = ""; qo = ""; qc = ""; qb = ""
            for (x in r) {
                b = t[x ",billboard," k]; p = t[x ",mpich," k]; o = t[x ",openmpi," k]
                if (b == "") continue
                best = p == "" ? o : (o == "" || p + 0 < o + 0 ? p : o)
                if (best != "") q = q " " b / best
                if (p != "") qm = qm " " b / p
                if (o != "") qo = qo " " b / o
                if ((x "," f[3]) in mc) qc = qc " " b / mc[x "," f[3]]
                if (t[x ",before," k] != "") qb = qb " " b / t[x ",before," k]
            }
            printf "%-14s %5s %9s %13s %13s %13s %13s %13s\n", f[1], f[2], f[3], q == "" ? "-" : sprintf("%.2f", median(q)),
                qm == "" ? "-" : sprintf("%.2f", median(qm)), qo == "" ? "-" : sprintf("%.2f", median(qo)),
                qc == "" ? "-" : sprintf("%.1f", median(qc)), qb == "" ? "-" : sprintf("%.2f", median(qb))
        }
    }' "$RESULTS/rounds.csv" | tee "$RESULTS/ratios.txt"
# One SVG per collective and rank count (time against size, a line per implementation).
BB_BENCH=${BB_BENCH:-$(dirname "$BBRUN")/bb-bench}
if [ -x "$BB_BENCH" ]; then
    "$BB_BENCH" plot "$RESULTS/all.csv" "$RESULTS/svg" >/dev/null && log "plots in $RESULTS/svg" || log "bb-bench plot failed"
else
    log "no $BB_BENCH: no plots (bb-bench plot $RESULTS/all.csv DIR draws them)"
fi
