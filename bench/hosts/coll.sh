#!/usr/bin/env bash
# bench/hosts/coll.sh [RESULTS_DIR]: collective completion times (bench/peers/coll.c, built for
# MPICH, run unchanged on our library) on two "hosts" (network namespaces joined by a veth
# pair) of RANKS_PER_HOST ranks each: the hierarchy with its host phases on the board
# (coll/hier_board.rs) beside the same hierarchy by messages (BB_BOARD=0: the host phases by
# the schedule of hier.rs, what every build did before) and, with OPENMPI=1, Open MPI (mpirun
# in the first namespace, its daemons started through `ip netns exec`, names resolved by
# /etc/netns/NAME/hosts; on this VM it starts but does not run usefully: barrier 37-47 ms a
# call, then TCP peers hang up, its daemons sharing one hostname whose shared-memory segment
# names collide; OMPI_BTL picks its transports), interleaved: ROUNDS rounds, each
# running all of them one after another. Prints per (op, size) the median over rounds of each
# run's median and the ratios; CSVs in RESULTS_DIR (default target/bench-results/hosts-coll).
#
# The machine has 2 cores: 2 hosts x 2 ranks are 4 busy-polling ranks on 2 cores, so every
# figure includes ranks waiting for a core (no chrt: more ranks than cores would livelock).
#
# Needs root and iproute2. Environment: BBRUN (default dist/bin/bbrun), RANKS_PER_HOST
# (default 2), SLOTS (ranks on the first and second host, default both RANKS_PER_HOST: SLOTS=1,2
# for uneven hosts), OPS (default barrier,bcast,reduce,allreduce), SIZES (default 8,1K), TRIALS
# (default 200), ROUNDS (default 5), RUN_TIMEOUT (default 120 s per run), OPENMPI (default 0),
# ALT (settings for a third run each round, the board's with them: ALT='BB_HIER_PARTS_MAX=2048'
# sets a change's old value beside its new one; column "alt"), BEFORE (another build's bbrun,
# e.g. main's dist/bin/bbrun copied aside: a fourth run each round, the board's settings with
# that build; column "before", ratio board/before).
set -uo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$ROOT"
RESULTS=${1:-target/bench-results/hosts-coll}
mkdir -p "$RESULTS/bin"
RESULTS=$(cd "$RESULTS" && pwd)
BBRUN=${BBRUN:-dist/bin/bbrun}
PER=${RANKS_PER_HOST:-2}
SLOTS=${SLOTS:-$PER,$PER}
SLOTS_A=${SLOTS%%,*} SLOTS_B=${SLOTS#*,}
OPS=${OPS:-barrier,bcast,reduce,allreduce}
SIZES=${SIZES:-8,1K}
TRIALS=${TRIALS:-200}
ROUNDS=${ROUNDS:-5}
RUN_TIMEOUT=${RUN_TIMEOUT:-120}
OPENMPI=${OPENMPI:-0}
NET=10.233.0
NS_A=bbcoll-$$-a NS_B=bbcoll-$$-b VETH_A=bbc$$a VETH_B=bbc$$b
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
log() { printf 'hosts/coll.sh: %s\n' "$*" >&2; }

[ "$(id -u)" = 0 ] || { log "needs root (network namespaces)"; exit 1; }
mpicc.mpich -O2 -o "$RESULTS/bin/coll-mpich" bench/peers/coll.c || { log "mpicc.mpich failed"; exit 1; }
[ "$OPENMPI" = 1 ] && { mpicc.openmpi -O2 -o "$RESULTS/bin/coll-openmpi" bench/peers/coll.c || OPENMPI=0; }

cleanup() {
    ip netns del "$NS_A" 2>/dev/null || true
    ip netns del "$NS_B" 2>/dev/null || true # takes the veth pair with it
    rm -rf "/etc/netns/$NS_A" "/etc/netns/$NS_B"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
# shellcheck source=netns.sh
. "$ROOT/bench/hosts/netns.sh"
two_hosts_up
# `ip netns exec` mounts this over /etc/hosts: Open MPI names the hosts.
for ns in "$NS_A" "$NS_B"; do
    mkdir -p "/etc/netns/$ns"
    printf '127.0.0.1 localhost\n%s.1 %s\n%s.2 %s\n' "$NET" "$NS_A" "$NET" "$NS_B" >"/etc/netns/$ns/hosts"
done
# Open MPI's rsh launcher runs `AGENT HOST COMMAND...`, COMMAND a shell line.
AGENT=$RESULTS/bin/netns-agent
printf '#!/bin/sh\nns=$1; shift\nexec ip netns exec "$ns" sh -c "$*"\n' >"$AGENT"
chmod +x "$AGENT"

ARGS=(--csv --ops "$OPS" --sizes "$SIZES" --trials "$TRIALS")
N=$((SLOTS_A + SLOTS_B))
: >"$RESULTS/all.csv"
run() { # name command...
    local name=$1
    shift
    timeout -k 5 "$RUN_TIMEOUT" "$@" "${ARGS[@]}" 2>>"$RESULTS/$name.err" |
        awk -F, -v name="$name" '/^[a-z_]+,[0-9]+,[0-9]+,[0-9.]+,/ { print name "," $0 }' >>"$RESULTS/all.csv" ||
        log "$name failed: $(tail -n 1 "$RESULTS/$name.err")"
}
BB=("$BBRUN" --launcher 'ip netns exec {host}' --host "$NS_A:$SLOTS_A,$NS_B:$SLOTS_B" -n "$N" "$RESULTS/bin/coll-mpich")
OMPI=(ip netns exec "$NS_A" mpirun.openmpi --oversubscribe --host "$NS_A:$SLOTS_A,$NS_B:$SLOTS_B" -n "$N"
    --mca plm_rsh_agent "$AGENT" --mca btl "${OMPI_BTL:-self,vader,tcp}" --mca btl_tcp_if_include "$NET.0/24"
    --mca oob_tcp_if_include "$NET.0/24" "$RESULTS/bin/coll-openmpi")
for round in $(seq "$ROUNDS"); do
    log "round $round of $ROUNDS, load $(cut -d' ' -f1-3 /proc/loadavg)"
    run board "${BB[@]}"
    run messages env BB_BOARD=0 "${BB[@]}"
    # shellcheck disable=SC2086 # ALT is a list of settings
    [ -n "${ALT:-}" ] && run alt env $ALT "${BB[@]}"
    [ -n "${BEFORE:-}" ] && run before "$BEFORE" "${BB[@]:1}"
    [ "$OPENMPI" = 1 ] && run openmpi "${OMPI[@]}"
done

sort -t, -k2,2 -k4,4n "$RESULTS/all.csv" | awk -F, '
    function median(key,    n, i, j, v, t) {
        n = split(vals[key], v, " ")
        for (i = 2; i <= n; i++) for (j = i; j > 1 && v[j - 1] + 0 > v[j] + 0; j--) { t = v[j]; v[j] = v[j - 1]; v[j - 1] = t }
        return n % 2 ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2
    }
    { k = $2 "," $3 "," $4; if (!(k in seen)) { seen[k] = 1; order[++m] = k }; vals[$1 "," k] = vals[$1 "," k] " " $5 }
    END {
        printf "%-10s %5s %7s %10s %10s %10s %11s %10s %10s %10s %12s\n", "op", "ranks", "size", "messages", "board", "Open MPI", "board/msgs", "board/ompi", "alt/msgs", "before", "board/before"
        for (i = 1; i <= m; i++) {
            k = order[i]; split(k, f, ",")
            b = ("board," k in vals) ? median("board," k) : ""
            x = ("messages," k in vals) ? median("messages," k) : ""
            o = ("openmpi," k in vals) ? median("openmpi," k) : ""
            rx = (b == "" || x == "") ? "-" : sprintf("%.2f", b / x)
            ro = (b == "" || o == "") ? "-" : sprintf("%.2f", b / o)
            a = ("alt," k in vals) ? median("alt," k) : ""
            ra = (a == "" || x == "") ? "-" : sprintf("%.2f", a / x)
            p = ("before," k in vals) ? median("before," k) : ""
            rp = (b == "" || p == "") ? "-" : sprintf("%.2f", b / p)
            printf "%-10s %5s %7s %10s %10s %10s %11s %10s %10s %10s %12s\n", f[1], f[2], f[3], x == "" ? "-" : x, b == "" ? "-" : b, o == "" ? "-" : o, rx, ro, ra, p == "" ? "-" : p, rp
        }
    }' | tee "$RESULTS/summary.txt"
