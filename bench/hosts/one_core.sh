#!/usr/bin/env bash
# bench/hosts/one_core.sh [RESULTS_DIR]: issue 20's one-core figure taken apart. Two ranks on
# one core (taskset -c 0), 8 B one-way, in ROUNDS interleaved rounds:
#   - every route (shm = BB_ROUTES=auto, tcp, udp) with the same run's floors: the pipe
#     ping-pong (the target's reference, <= 2x), and the raw blocking TCP and UDP ping-pongs
#     (each socket route's own floor: what its kernel stack costs on top of the hand-over);
#   - MPICH and Open MPI (bench/peers/pingpong.c) on the same core (PEERS=0: left out);
#   - with BLOCK=1, TCP and UDP again with BB_WAIT_BLOCK=1 (a blocking receive, not a yield).
# Then, once, what each route does a message beyond its floor, by counting (timings swing 30 %
# between rounds on this shared machine, counts do not):
#   - system calls a message: `strace -f -c` of the job at TRIALS and 2 x TRIALS, the
#     difference over the messages it added (start-up cancels out);
#   (user-space instructions: see bench/README.md, "The message path in instructions").
# Environment: BIN (bbrun, bb-bench; default target/release), ROUNDS (5), TRIALS (200),
# RUN_TIMEOUT (120 s), PEERS (1), COUNTS (1: the strace part). Writes
# RESULTS_DIR/runs and RESULTS_DIR/summary.txt.
set -uo pipefail
# shellcheck source=common.sh
. "$(dirname "${BASH_SOURCE[0]}")/common.sh" "$@"
ROUNDS=${ROUNDS:-5}
TRIALS=${TRIALS:-200}
T=${RUN_TIMEOUT:-120}
PEERS=${PEERS:-1}
BLOCK=${BLOCK:-0}
COUNTS=${COUNTS:-1}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1

: >"$RESULTS/runs"
: >"$RESULTS/errors"
record() {
    awk -F, -v l="$1" -v c="$2" '$1 ~ /^[0-9]+$/ && $c != "" { print l, $c; exit }' <<<"$3" | tee -a "$RESULTS/runs"
}
latency() { # latency ROUTE [bb-bench options...]: the CSV of one one-core run
    local r=$1
    shift
    env BB_ROUTES="$r" taskset -c 0 timeout "$T" "$BIN/bbrun" -n 2 "$BIN/bb-bench" latency --sizes 8 --csv "$@" \
        2>>"$RESULTS/errors" || true
}

if [ "$PEERS" = 1 ]; then
    for mpi in mpich openmpi; do
        command -v "mpicc.$mpi" >/dev/null &&
            "mpicc.$mpi" -O2 -o "$RESULTS/pingpong-$mpi" "$ROOT/bench/peers/pingpong.c" -lm 2>>"$RESULTS/errors"
    done
fi

for round in $(seq "$ROUNDS"); do
    echo "== round $round, load $(cut -d' ' -f1-3 /proc/loadavg)" | tee -a "$RESULTS/runs"
    for r in auto tcp udp $([ "$BLOCK" = 1 ] && echo tcp-block udp-block); do
        csv=$(BB_WAIT_BLOCK=$([ "${r#*-}" = block ] && echo 1 || echo 0) latency "${r%-block}" --trials "$TRIALS")
        record "core-$r" 2 "$csv"
        record core-pipe 10 "$csv"
        record core-tcp-floor 11 "$csv"
        record core-udp-floor 12 "$csv"
    done
    if [ -x "$RESULTS/pingpong-mpich" ]; then
        record core-mpich 2 "$(taskset -c 0 timeout "$T" mpiexec.hydra -n 2 "$RESULTS/pingpong-mpich" latency \
            --sizes 8 --trials 100 --csv 2>>"$RESULTS/errors" || true)"
    fi
    if [ -x "$RESULTS/pingpong-openmpi" ]; then
        record core-openmpi 2 "$(taskset -c 0 timeout "$T" mpirun.openmpi --bind-to none --oversubscribe -n 2 \
            "$RESULTS/pingpong-openmpi" latency --sizes 8 --trials 100 --csv 2>>"$RESULTS/errors" || true)"
    fi
done
echo "== load $(cut -d' ' -f1-3 /proc/loadavg)" | tee -a "$RESULTS/runs"

summarize() { # summarize RUNS: medians over rounds, ratios within each run (its own floors)
    echo "| figure (8 B one-way, us) | median | x pipe (within run) | x own floor (within run) |"
    echo "|---|---|---|---|"
    awk '
        function median(s,   a, k, i, j, t) {
            k = split(s, a, " ")
            if (k == 0) return ""
            for (i = 1; i <= k; i++) for (j = i + 1; j <= k; j++) if (a[j] + 0 < a[i] + 0) { t = a[i]; a[i] = a[j]; a[j] = t }
            return k % 2 ? a[(k + 1) / 2] : (a[k / 2] + a[k / 2 + 1]) / 2
        }
        # A route line is followed by the floors of its own run; a peer line uses the last pipe.
        /^==/ { next }
        $1 == "core-pipe" { pipe = $2; v["core-pipe"] = v["core-pipe"] " " $2
                            if (last != "") xp[last] = xp[last] " " val / pipe; next }
        $1 == "core-tcp-floor" { v[$1] = v[$1] " " $2; xp["core-tcp-floor"] = xp["core-tcp-floor"] " " $2 / pipe
                                 if (last ~ /^core-tcp/) xf[last] = xf[last] " " val / $2; next }
        $1 == "core-udp-floor" { v[$1] = v[$1] " " $2; xp["core-udp-floor"] = xp["core-udp-floor"] " " $2 / pipe
                                 if (last ~ /^core-udp/) xf[last] = xf[last] " " val / $2; last = ""; next }
        $1 ~ /^core-(mpich|openmpi)$/ { v[$1] = v[$1] " " $2; if (pipe > 0) xp[$1] = xp[$1] " " $2 / pipe; next }
        { last = $1; val = $2; v[$1] = v[$1] " " $2 }
        END {
            n = split("core-pipe core-tcp-floor core-udp-floor core-auto core-tcp core-udp core-tcp-block core-udp-block core-mpich core-openmpi", rows, " ")
            for (i = 1; i <= n; i++) {
                r = rows[i]; m = median(v[r])
                if (m == "") { if (r !~ /-block$/) printf "| %s | no figure | | |\n", r; continue }
                p = (r == "core-pipe") ? "1.00" : median(xp[r]); f = median(xf[r])
                printf "| %s | %s | %s | %s |\n", r, m, (p == "") ? "-" : sprintf("%.2f", p), (f == "") ? "-" : sprintf("%.2f", f)
            }
        }' "$1"
}
summarize "$RESULTS/runs" | tee "$RESULTS/summary.txt"

[ "$COUNTS" = 1 ] || exit 0
# System calls a message, both ranks together: runs of TRIALS and 2 x TRIALS (no floors), the
# difference over the messages added (each trial of 8 B is `latency_iters(8)` round trips).
# Round trips a trial at 8 B: crates/bench/src/plan.rs latency_iters(8) (64 KiB / 8, at most 16);
# TRIALS more timed trials bring TRIALS / 10 more warm-up ones (TRIALS >= 100).
ITERS=16
counts() { # counts ROUTE TRIALS: "syscall calls" lines of strace -c over the job
    local out="$RESULTS/strace-$1-$2"
    env BB_ROUTES="$1" taskset -c 0 timeout "$T" strace -f -c -U name,calls -o "$out" "$BIN/bbrun" -n 2 \
        "$BIN/bb-bench" latency --sizes 8 --no-floor --trials "$2" --csv >/dev/null 2>>"$RESULTS/errors" || true
    awk 'NF == 2 && $2 ~ /^[0-9]+$/ && $1 != "total" { print $1, $2 }' "$out"
}
{
    echo
    echo "system calls a message (both ranks; strace -f -c at $TRIALS and $((2 * TRIALS)) trials, $ITERS round trips a trial):"
    for r in auto tcp udp; do
        a=$(counts "$r" "$TRIALS")
        b=$(counts "$r" $((2 * TRIALS)))
        join -a2 -e 0 -o 0,1.2,2.2 <(sort <<<"$a") <(sort <<<"$b") |
            awk -v r="$r" -v m=$(((TRIALS + TRIALS / 10) * ITERS * 2)) '{ d = ($3 - $2) / m; if (d >= 0.01) printf "  %s %s %.2f\n", r, $1, d }'
    done
} | tee -a "$RESULTS/summary.txt"
