#!/usr/bin/env bash
# bench/hosts/targets.sh [RESULTS_DIR]: every figure of issue 20's "Benchmarks and targets" in one
# sitting, in ROUNDS interleaved rounds, and a table: figure, median over rounds, its reference,
# the ratio, the target and whether it is met.
#
#   one core       taskset -c 0 bbrun -n 2 bb-bench latency --sizes 8, over shm (auto), TCP and
#                  UDP; reference: the same runs' pipe ping-pong (target <= 2x). Beside it the
#                  same runs' raw blocking TCP and UDP ping-pongs on that core (the socket floors:
#                  the raw socket alone may pass 2x the pipe), and each route against its own
#                  floor (<= 1.1x, the target where the floor itself is over 2x)
#   ring, 1 host   bbrun -n 4 bb-bench ring --sizes 8 on the 2 cores, shm / TCP / UDP
#                  (targets: shm <= 2 us, TCP <= 20 us per hop)
#   ring, 2 hosts  two network namespaces x 2 ranks, shm+TCP (auto), TCP, UDP (target <= 20 us)
#   1 rank a host  two namespaces, 8 B one-way: the TCP route against bb-bench tcp-floor polled
#                  (<= 1.1x), the UDP route against bb-bench udp-floor (<= 1.2x); 1 MiB
#                  streaming of the UDP route against the floor's (>= 0.8x) and under 5 % loss
#                  (the route's own BB_UDP_FAULTS: this kernel has no netem) against loss-free
#                  (>= 0.5x). These runs, and their floors, under $CHRT (one rank a core).
#
# Needs root (namespaces). Environment: BIN (bbrun and bb-bench; default target/release), ROUNDS
# (3), TRIALS (200, at least 100; streaming takes 100), RUN_TIMEOUT (120 s a run), BB_UDP_MTU (1472: the
# route's datagrams and the floor's), CHRT (default "chrt -f 10"; empty: none; never used where
# ranks outnumber cores, see bench/README.md "On a busy machine"). Writes RESULTS_DIR/runs (every
# run's median) and RESULTS_DIR/summary.txt. The namespaces are removed on every exit path.
set -euo pipefail
# shellcheck source=common.sh
. "$(dirname "${BASH_SOURCE[0]}")/common.sh" "$@"
ROUNDS=${ROUNDS:-3}
TRIALS=${TRIALS:-200}
T=${RUN_TIMEOUT:-120}
export BB_UDP_MTU=${BB_UDP_MTU:-1472}
CHRT=${CHRT-chrt -f 10}
NET=10.233.0
PORT=$((20000 + $$ % 20000))
NS_A=bbtg-$$-a NS_B=bbtg-$$-b VETH_A=bbt$$a VETH_B=bbt$$b
[ "$(id -u)" = 0 ] || { echo "targets.sh: needs root (network namespaces)" >&2; exit 1; }

cleanup() {
    ip netns pids "$NS_A" 2>/dev/null | xargs -r kill 2>/dev/null || true
    ip netns pids "$NS_B" 2>/dev/null | xargs -r kill 2>/dev/null || true
    ip netns del "$NS_A" 2>/dev/null || true
    ip netns del "$NS_B" 2>/dev/null || true
}
trap cleanup EXIT
trap 'exit 130' INT TERM
# shellcheck source=netns.sh
. "$ROOT/bench/hosts/netns.sh"
two_hosts_up

: >"$RESULTS/runs"
: >"$RESULTS/errors"
# record LABEL COLUMN CSV: the first data row's COLUMN, as "LABEL VALUE" (nothing if the run failed).
record() {
    awk -F, -v l="$1" -v c="$2" '$1 ~ /^[0-9]+$/ && $c != "" { print l, $c; exit }' <<<"$3" | tee -a "$RESULTS/runs"
}
HOSTS=(--launcher 'ip netns exec {host}')
bb() { timeout "$T" "$BIN/bbrun" "$@" 2>>"$RESULTS/errors" || true; }

for round in $(seq "$ROUNDS"); do
    echo "== round $round, load $(cut -d' ' -f1-3 /proc/loadavg)" | tee -a "$RESULTS/runs"
    for r in auto tcp udp; do
        csv=$(env BB_ROUTES=$r taskset -c 0 timeout "$T" "$BIN/bbrun" -n 2 "$BIN/bb-bench" latency \
            --sizes 8 --trials "$TRIALS" --csv 2>>"$RESULTS/errors" || true)
        record "core-$r" 2 "$csv"
        record core-pipe 10 "$csv"
        record core-tcp-floor 11 "$csv"
        record core-udp-floor 12 "$csv"
    done
    for r in auto tcp udp; do
        record "ring4-$r" 2 "$(BB_ROUTES=$r bb -n 4 "$BIN/bb-bench" ring --sizes 8 --no-floor \
            --trials "$TRIALS" --csv)"
        record "hosts2x2-$r" 2 "$(BB_ROUTES=$r bb "${HOSTS[@]}" --host "$NS_A:2,$NS_B:2" \
            "$BIN/bb-bench" ring --sizes 8 --no-floor --trials "$TRIALS" --csv)"
    done
    # One rank a host: the floors (listener in A, driver in B), then the routes.
    ip netns exec "$NS_A" timeout "$T" "$BIN/bb-bench" tcp-floor --listen "$NET.1:$PORT" >/dev/null 2>&1 &
    record tcp-floor 2 "$(ip netns exec "$NS_B" timeout "$T" $CHRT "$BIN/bb-bench" tcp-floor \
        --connect "$NET.1:$PORT" --test latency --wait polled --sizes 8 --trials "$TRIALS" --csv 2>/dev/null || true)"
    wait || true
    ip netns exec "$NS_A" timeout "$T" "$BIN/bb-bench" udp-floor --listen "$NET.1:$((PORT + 1))" >/dev/null 2>&1 &
    sleep 0.3
    csv=$(ip netns exec "$NS_B" timeout "$T" $CHRT "$BIN/bb-bench" udp-floor --connect "$NET.1:$((PORT + 1))" \
        --datagram "$BB_UDP_MTU" --sizes 8 --stream-sizes 1M --trials "$TRIALS" --csv 2>/dev/null || true)
    wait || true
    record udp-floor 3 "$(awk -F, 'NF == 5' <<<"$csv")"
    record udp-floor-1M 3 "$(awk -F, 'NF == 6' <<<"$csv")"
    for r in tcp udp; do
        record "hosts1x1-$r" 2 "$(env BB_ROUTES=$r $CHRT timeout "$T" "$BIN/bbrun" "${HOSTS[@]}" --host "$NS_A:1,$NS_B:1" \
            "$BIN/bb-bench" latency --sizes 8 --no-floor --trials "$TRIALS" --csv 2>>"$RESULTS/errors" || true)"
    done
    for loss in 0 5; do
        faults=()
        [ "$loss" = 0 ] || faults=(BB_UDP_FAULTS=loss=$loss)
        record "udp-1M-loss$loss" 2 "$(env BB_ROUTES=udp "${faults[@]}" $CHRT timeout "$T" "$BIN/bbrun" "${HOSTS[@]}" \
            --host "$NS_A:1,$NS_B:1" "$BIN/bb-bench" bandwidth --sizes 1M --no-floor --trials 100 --csv \
            2>>"$RESULTS/errors" || true)"
    done
done
echo "== load $(cut -d' ' -f1-3 /proc/loadavg)" | tee -a "$RESULTS/runs"

# row(what, label, reference label ("-": the target bounds the figure itself), "<=" or ">=", target).
awk '
    $1 !~ /^==/ { v[$1] = v[$1] " " $2 }
    function median(s,   a, k, i, j, t) {
        k = split(s, a, " ")
        if (k == 0) return ""
        for (i = 1; i <= k; i++) for (j = i + 1; j <= k; j++) if (a[j] + 0 < a[i] + 0) { t = a[i]; a[i] = a[j]; a[j] = t }
        return k % 2 ? a[(k + 1) / 2] : (a[k / 2] + a[k / 2 + 1]) / 2
    }
    function row(what, label, ref, op, target,   m, r, x, met) {
        m = median(v[label]); r = (ref == "-") ? "-" : median(v[ref])
        if (m == "" || r == "") { printf "| %s | %s | %s | - | %s %s | no figure |\n", what, m, r, op, target; return }
        x = (ref == "-") ? m : m / r
        met = (op == "<=") ? (x <= target) : (x >= target)
        printf "| %s | %s | %s | %.2f | %s %s | %s |\n", what, m, r, x, op, target, met ? "met" : "NOT met"
    }
    END {
        print "| figure | median | reference | ratio (or value) | target | |"
        print "|---|---|---|---|---|---|"
        row("one core, 8 B one-way, shm (us; ref: pipe)", "core-auto", "core-pipe", "<=", 2)
        row("one core, 8 B one-way, TCP", "core-tcp", "core-pipe", "<=", 2)
        row("one core, 8 B one-way, UDP", "core-udp", "core-pipe", "<=", 2)
        row("one core, raw blocking TCP (ref: pipe)", "core-tcp-floor", "core-pipe", "<=", 2)
        row("one core, raw blocking UDP (ref: pipe)", "core-udp-floor", "core-pipe", "<=", 2)
        row("one core, TCP (ref: raw blocking TCP)", "core-tcp", "core-tcp-floor", "<=", 1.1)
        row("one core, UDP (ref: raw blocking UDP)", "core-udp", "core-udp-floor", "<=", 1.1)
        row("ring 4 ranks, 2 cores, shm (us per hop)", "ring4-auto", "-", "<=", 2)
        row("ring 4 ranks, 2 cores, TCP", "ring4-tcp", "-", "<=", 20)
        row("ring 4 ranks, 2 cores, UDP", "ring4-udp", "-", "<=", 20)
        row("ring 2 hosts x 2, shm+TCP", "hosts2x2-auto", "-", "<=", 20)
        row("ring 2 hosts x 2, TCP", "hosts2x2-tcp", "-", "<=", 20)
        row("ring 2 hosts x 2, UDP", "hosts2x2-udp", "-", "<=", 20)
        row("1 rank a host, 8 B, TCP (ref: polled TCP)", "hosts1x1-tcp", "tcp-floor", "<=", 1.1)
        row("1 rank a host, 8 B, UDP (ref: polled UDP)", "hosts1x1-udp", "udp-floor", "<=", 1.2)
        row("1 rank a host, UDP 1 MiB GB/s (ref: raw UDP)", "udp-1M-loss0", "udp-floor-1M", ">=", 0.8)
        row("same, 5 % loss (ref: loss-free)", "udp-1M-loss5", "udp-1M-loss0", ">=", 0.5)
    }' "$RESULTS/runs" >"$RESULTS/summary.txt"
cat "$RESULTS/summary.txt"
