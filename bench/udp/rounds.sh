#!/usr/bin/env bash
# bench/udp/rounds.sh latency|window: the UDP route beside the raw UDP floor (bb-bench udp-floor)
# at the same datagram size, in ROUNDS interleaved rounds; prints every run's median and, per
# configuration, the median over rounds and its ratio to the floor (and, for window, to the
# loss-free figure). BEFORE=DIR (a directory holding another build's bbrun and bb-bench) adds that
# build, at its defaults, in the same rounds.
#   latency: one-way latency at SIZES (default 8,512): floor ping-pong, route (bb-bench latency).
#   window:  1 MiB streaming at each BB_UDP_WINDOW in WINDOWS (default "256 512 1024"), loss-free
#            and under the route's own injected loss (BB_UDP_FAULTS=loss=LOSS, default 5).
#
# Environment: BIN (default target/release), ROUNDS (3), TRIALS (100 for window, 200 for
# latency), BB_UDP_MTU (1472), CHRT (default "chrt -f 10": two ranks on two cores; see
# bench/README.md "On a busy machine"; empty to run without).
set -euo pipefail
cd "$(dirname "$0")/../.."
MODE=${1:?usage: bench/udp/rounds.sh latency|window}
BIN=${BIN:-target/release}
WINDOWS=${WINDOWS:-256 512 1024}
LOSS=${LOSS:-5}
SIZES=${SIZES:-8,512}
ROUNDS=${ROUNDS:-3}
case $MODE in
latency) TRIALS=${TRIALS:-200} ;;
window) TRIALS=${TRIALS:-100} ;;
*) echo "rounds.sh: latency or window, not $MODE" >&2; exit 1 ;;
esac
export BB_UDP_MTU=${BB_UDP_MTU:-1472}
CHRT=${CHRT-chrt -f 10}
PORT=$((20000 + $$ % 20000))
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

# record LABEL CSV AWK-COLUMN: appends "LABEL-SIZE VALUE" for each size row of CSV.
record() {
    awk -F, -v label="$1" -v col="$3" -v mode="$MODE" '
        $1 ~ /^[0-9]+$/ && (mode == "latency" || $1 == 1048576) && !seen[$1]++ {
            print (mode == "latency" ? label "-" $1 "B" : label), $col
        }' <<<"$2" | tee -a "$out/runs"
}

# route DIR LABEL [ENV...]: one run of the route.
route() {
    local dir=$1 label=$2 csv
    shift 2
    if [ "$MODE" = latency ]; then
        csv=$(env BB_ROUTES=udp "$@" timeout 120 $CHRT "$dir/bbrun" -n 2 "$dir/bb-bench" latency \
            --sizes "$SIZES" --no-floor --trials "$TRIALS" --csv 2>/dev/null) || true
    else
        csv=$(env BB_ROUTES=udp "$@" timeout 120 $CHRT "$dir/bbrun" -n 2 "$dir/bb-bench" bandwidth \
            --sizes 1M --no-floor --trials "$TRIALS" --csv 2>/dev/null) || true
    fi
    record "$label" "$csv" 2
}

floor() {
    local csv
    timeout 60 "$BIN/bb-bench" udp-floor --listen 127.0.0.1:$PORT >/dev/null 2>&1 &
    sleep 0.3
    csv=$(timeout 60 $CHRT "$BIN/bb-bench" udp-floor --connect 127.0.0.1:$PORT --datagram "$BB_UDP_MTU" \
        --sizes "$([ "$MODE" = latency ] && echo "$SIZES" || echo 1M)" --trials "$TRIALS" --csv 2>/dev/null) || true
    wait || true
    if [ "$MODE" = latency ]; then
        record floor "$(awk -F, 'NF == 5' <<<"$csv")" 3
    else
        record floor "$(awk -F, 'NF == 6' <<<"$csv")" 3
    fi
}

echo "load: $(cut -d' ' -f1-3 /proc/loadavg)"
for round in $(seq "$ROUNDS"); do
    echo "== round $round"
    floor
    if [ "$MODE" = latency ]; then
        [ -z "${BEFORE:-}" ] || route "$BEFORE" before
        route "$BIN" route
    else
        if [ -n "${BEFORE:-}" ]; then
            route "$BEFORE" before-loss0
            route "$BEFORE" "before-loss$LOSS" BB_UDP_FAULTS=loss=$LOSS
        fi
        for w in $WINDOWS; do
            route "$BIN" "w$w-loss0" BB_UDP_WINDOW=$w
            route "$BIN" "w$w-loss$LOSS" BB_UDP_WINDOW=$w BB_UDP_FAULTS=loss=$LOSS
        done
    fi
done
echo "load: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "== medians over $ROUNDS rounds ($([ "$MODE" = latency ] && echo "one-way us" || echo "GB/s, 1 MiB"), datagrams of $BB_UDP_MTU B)"
awk -v mode="$MODE" '
    $2 != "" { v[$1] = v[$1] " " $2; if (!($1 in seen)) { seen[$1] = 1; names[++n] = $1 } }
    function median(s,   a, k, i, j, t) {
        k = split(s, a, " ")
        for (i = 1; i <= k; i++) for (j = i + 1; j <= k; j++) if (a[j] + 0 < a[i] + 0) { t = a[i]; a[i] = a[j]; a[j] = t }
        return k % 2 ? a[(k + 1) / 2] : (a[k / 2] + a[k / 2 + 1]) / 2
    }
    END {
        for (i = 1; i <= n; i++) m[names[i]] = median(v[names[i]])
        for (i = 1; i <= n; i++) {
            name = names[i]; line = sprintf("%-24s %8.3f", name, m[name])
            fl = name; sub(/^[^-]*(-loss[0-9.]+)?/, "floor", fl); if (mode == "window") fl = "floor"
            if (name !~ /^floor/ && (fl in m)) line = line sprintf("  x floor %5.2f", m[name] / m[fl])
            if (name ~ /loss[1-9]/) { base = name; sub(/loss[0-9.]+$/, "loss0", base); line = line sprintf("  x loss-free %4.2f", m[name] / m[base]) }
            print line
        }
    }' "$out/runs"
