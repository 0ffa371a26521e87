#!/usr/bin/env bash
# bench/hosts/run.sh RESULTS_DIR: Billboard's TCP route between two "hosts" (network namespaces)
# beside the raw TCP floor between the same two, in one run. ROUTE=udp: the UDP route
# (BB_ROUTES=udp) beside the raw UDP floor (bb-bench udp-floor) instead.
#
# Creates two namespaces joined by a veth pair (10.232.0.1/24 and 10.232.0.2/24), then runs
#   - Billboard: bbrun --launcher 'ip netns exec {host}' --host A:1,B:1 bb-bench
#     latency|bandwidth|exchange (rank 0 in A, rank 1 in B: the TCP route);
#   - bb-bench tcp-floor: ping-pong latency (0 B..64 KiB) and one-way streaming bandwidth
#     (64 KiB, 1 MiB, 4 MiB), each with polled (busy-polling non-blocking) and blocking sockets,
#     listener in the first namespace, driver in the second;
#   - NetPIPE's NPtcp (Debian package netpipe-tcp) between the same two ends, as a reference:
#     blocking sockets, and its times are the best of a few trials (ours are medians).
# Writes into RESULTS_DIR: tcp-floor-latency.csv, tcp-floor-bandwidth.csv, nptcp.out (NetPIPE's
# columns: bytes, Mbps, seconds one-way), nptcp.log, billboard-{latency,bandwidth,exchange}.csv
# and summary.txt (with Billboard / polled-floor ratios). The namespaces and
# everything started in them are removed on every exit path.
#
# Needs root and iproute2. Environment:
#   BB_BENCH        bb-bench to run (default dist/bin/, then target/release/, else built)
#   TRIALS          timed trials per size (default 200)
#   SKIP_INSTALL=1  do not try to install netpipe-tcp (NPtcp is then skipped if missing)
#   RUN_TIMEOUT     seconds each run may take (default 300)
#   ROUTE           tcp (default) or udp; with udp, BB_UDP_MTU (default 1472) is the datagram size
#                   of both the route and the floor, and NPtcp is skipped
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
RESULTS=${1:?usage: bench/hosts/run.sh RESULTS_DIR}
mkdir -p "$RESULTS"
RESULTS=$(cd "$RESULTS" && pwd)
TRIALS=${TRIALS:-200}
RUN_TIMEOUT=${RUN_TIMEOUT:-300}
NET=10.232.0
PORT=7311
ROUTE=${ROUTE:-tcp}
case $ROUTE in
tcp) ;;
udp) export BB_ROUTES=udp BB_UDP_MTU=${BB_UDP_MTU:-1472} SKIP_INSTALL=1 ;;
*) echo "hosts/run.sh: ROUTE must be tcp or udp, not $ROUTE" >&2; exit 1 ;;
esac
# Names unique to this run (interface names have at most 15 characters).
NS_A=bbfloor-$$-a NS_B=bbfloor-$$-b VETH_A=bbf$$a VETH_B=bbf$$b

log() { printf 'hosts/run.sh: %s\n' "$*" >&2; }

[ "$(id -u)" = 0 ] || { log "needs root (network namespaces)"; exit 1; }
command -v ip >/dev/null || { log "needs iproute2 (ip)"; exit 1; }

cd "$ROOT"
BB_BENCH=${BB_BENCH:-}
for candidate in "$BB_BENCH" dist/bin/bb-bench target/release/bb-bench; do
    [ -n "$candidate" ] && [ -x "$candidate" ] && { BB_BENCH=$candidate; break; }
done
if [ -z "$BB_BENCH" ] || [ ! -x "$BB_BENCH" ]; then
    log "building bb-bench"
    cargo build --release -q -p bench
    BB_BENCH=target/release/bb-bench
fi
BB_BENCH=$(cd "$(dirname "$BB_BENCH")" && pwd)/$(basename "$BB_BENCH")

if ! command -v NPtcp >/dev/null && [ "${SKIP_INSTALL:-0}" != 1 ]; then
    log "installing netpipe-tcp"
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q netpipe-tcp >"$RESULTS/apt.log" 2>&1 ||
        { apt-get update -q >>"$RESULTS/apt.log" 2>&1 &&
          DEBIAN_FRONTEND=noninteractive apt-get install -y -q netpipe-tcp >>"$RESULTS/apt.log" 2>&1; } ||
        log "could not install netpipe-tcp (see $RESULTS/apt.log): NPtcp is skipped"
fi

# --- the namespaces, removed whatever happens -------------------------------------------
PIDS=()
cleanup() {
    local pid
    for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done
    for pid in "${PIDS[@]}"; do wait "$pid" 2>/dev/null || true; done
    ip netns del "$NS_A" 2>/dev/null || true
    ip netns del "$NS_B" 2>/dev/null || true   # takes the veth pair with it
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# shellcheck source=netns.sh
. "$ROOT/bench/hosts/netns.sh"
two_hosts_up
# Starts a command in a namespace, in the background and under the run timeout. `ip netns exec`
# and `timeout` exec in turn, so the pid in PIDS is the command's own timeout: killing it stops
# the command. Waiting with `wait` rather than in the foreground lets a TERM or INT run the trap
# at once (bash runs traps between commands, and `wait` is one it interrupts).
start_in() { # namespace command...
    local ns=$1
    shift
    ip netns exec "$ns" timeout "$RUN_TIMEOUT" "$@" &
    PIDS+=($!)
}

# --- raw TCP floor: polled and blocking, listener in A, driver in B ----------------------
tcp_floor() { # test csv
    start_in "$NS_A" "$BB_BENCH" tcp-floor --listen "$NET.1:$PORT" 2>>"$RESULTS/tcp-floor.log"
    local listener=$!
    start_in "$NS_B" "$BB_BENCH" tcp-floor --connect "$NET.1:$PORT" --test "$1" --trials "$TRIALS" --csv \
        >"$RESULTS/$2" 2>>"$RESULTS/tcp-floor.log"
    wait $!
    wait "$listener"
}
# The UDP floor prints its latency and bandwidth CSVs as two blocks; the median is column 3
# (after size and datagram), where the TCP floor's is column 2.
FLOOR_COLUMN=2
if [ "$ROUTE" = udp ]; then
    FLOOR_COLUMN=3
    log "bb-bench udp-floor, datagrams of $BB_UDP_MTU B, $NET.2 -> $NET.1"
    start_in "$NS_A" "$BB_BENCH" udp-floor --listen "$NET.1:$PORT" 2>>"$RESULTS/udp-floor.log"
    listener=$!
    start_in "$NS_B" "$BB_BENCH" udp-floor --connect "$NET.1:$PORT" --datagram "$BB_UDP_MTU" --trials "$TRIALS" \
        --sizes 0,1,8,64,512,4K,64K --stream-sizes 64K,1M,4M --csv >"$RESULTS/udp-floor.csv" 2>>"$RESULTS/udp-floor.log"
    wait $!
    wait "$listener"
    awk -v RS= 'NR == 1' "$RESULTS/udp-floor.csv" >"$RESULTS/udp-floor-latency.csv"
    awk -v RS= 'NR == 2' "$RESULTS/udp-floor.csv" >"$RESULTS/udp-floor-bandwidth.csv"
else
    log "bb-bench tcp-floor latency, $NET.2 -> $NET.1"
    tcp_floor latency tcp-floor-latency.csv
    log "bb-bench tcp-floor bandwidth"
    tcp_floor bandwidth tcp-floor-bandwidth.csv
fi

# --- Billboard's TCP route between the same two ends ---------------------------------------
BBRUN=$(dirname "$BB_BENCH")/bbrun
[ -x "$BBRUN" ] || BBRUN=$ROOT/dist/bin/bbrun
for kind in latency bandwidth exchange; do
    log "Billboard $kind over $ROUTE, $NS_A:1,$NS_B:1"
    timeout "$RUN_TIMEOUT" "$BBRUN" --launcher 'ip netns exec {host}' --host "$NS_A:1,$NS_B:1" \
        "$BB_BENCH" "$kind" --csv --no-floor --trials "$TRIALS" --sizes 0,1,8,64,512,4K,64K,1M,4M \
        >"$RESULTS/billboard-$kind.csv" 2>>"$RESULTS/billboard.log" ||
        log "  failed: $(tail -n 1 "$RESULTS/billboard.log")"
done

# --- NetPIPE: same two ends, 1 B .. 4 MiB, no perturbed sizes -----------------------------
NP_ARGS=(-p 0 -u 4194304)
if [ "$ROUTE" = tcp ] && command -v NPtcp >/dev/null; then
    log "NPtcp $NET.2 -> $NET.1"
    start_in "$NS_A" NPtcp "${NP_ARGS[@]}" >>"$RESULTS/nptcp.log" 2>&1
    receiver=$!
    sleep 1 # NPtcp's transmitter does not retry a refused connection
    start_in "$NS_B" NPtcp -h "$NET.1" "${NP_ARGS[@]}" -o "$RESULTS/nptcp.out" >>"$RESULTS/nptcp.log" 2>&1
    wait $!
    wait "$receiver" || true
fi

# --- summary --------------------------------------------------------------------------------
{
    echo "# raw $ROUTE floor between two network namespaces (veth), bb-bench $ROUTE-floor, medians"
    echo "# latency: one-way us = round trip / 2"
    column -t -s, "$RESULTS/$ROUTE-floor-latency.csv"
    echo
    echo "# bandwidth: GB/s (1e9 B/s)"
    column -t -s, "$RESULTS/$ROUTE-floor-bandwidth.csv"
    if [ -s "$RESULTS/nptcp.out" ]; then
        echo
        echo "# NPtcp (blocking sockets; best of its trials): one-way us and GB/s"
        awk 'BEGIN { printf "%-10s %12s %10s\n", "bytes", "oneway_us", "gbps" }
             $1 ~ /^(1|8|64|512|4096|65536|1048576|4194304)$/ {
                 printf "%-10d %12.2f %10.3f\n", $1, $3 * 1e6, $2 / 8000 }' "$RESULTS/nptcp.out"
    fi
    echo
    echo "# Billboard over $ROUTE between the same namespaces (medians) and its ratio to the polled floor"
    for kind in latency bandwidth; do
        [ -s "$RESULTS/billboard-$kind.csv" ] || continue
        echo "## $kind"
        awk -F, -v col="$FLOOR_COLUMN" '
            FNR == 1 { file++ }
            file == 1 && FNR > 1 { floor[$1] = $col }
            file == 2 && FNR == 1 { print "size_bytes,billboard,polled_floor,bb/floor"; next }
            file == 2 { r = (floor[$1] > 0 ? sprintf("%.2f", $2 / floor[$1]) : "-")
                        printf "%s,%s,%s,%s\n", $1, $2, ($1 in floor ? floor[$1] : "-"), r }
        ' "$RESULTS/$ROUTE-floor-$kind.csv" "$RESULTS/billboard-$kind.csv" | column -t -s,
    done
    if [ -s "$RESULTS/billboard-exchange.csv" ]; then
        echo "## exchange (both ranks send and receive at once; us per message)"
        cut -d, -f1,2 "$RESULTS/billboard-exchange.csv" | column -t -s,
    fi
} >"$RESULTS/summary.txt"
cat "$RESULTS/summary.txt"
