#!/usr/bin/env bash
# The HTTP example under wrk: one instance of build/release/example/http_inventory on 3 local lock nodes and a
# store, GET and POST reserve. Prints wrk's report per scenario. Usage: bench/http_inventory/run.sh [DURATION]
# (default 10s). Needs wrk (scripts/dev setup installs it) and a release build (scripts/dev build --preset release).
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
DURATION=${1:-10s}
BIN=$ROOT/build/release/example/http_inventory
[[ -x $BIN ]] || { echo "build it first: scripts/dev build --preset release --target redlock_example_http_inventory" >&2; exit 1; }
command -v wrk >/dev/null || { echo "wrk is missing: scripts/dev setup" >&2; exit 1; }

WORK=$(mktemp -d)
PIDS=()
cleanup() {
    for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
    wait 2>/dev/null || true
    rm -rf "$WORK"
}
trap cleanup EXIT

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
URLS=()
for i in 1 2 3 4; do
    port=$(free_port)
    redis-server --port "$port" --save '' --appendonly no --dir "$WORK" >"$WORK/redis$i.log" 2>&1 &
    PIDS+=($!)
    URLS+=("redis://127.0.0.1:$port")
done
sleep 0.5
NODES="${URLS[0]},${URLS[1]},${URLS[2]}"

# start_service NAME ARGS...: one instance; waits for its "listening on" line and sets PORT.
start_service() {
    local name=$1
    shift
    "$BIN" --listen 127.0.0.1:0 --nodes "$NODES" --store "${URLS[3]}" "$@" >"$WORK/$name.out" 2>"$WORK/$name.err" &
    PIDS+=($!)
    SERVICE_PID=$!
    for _ in $(seq 100); do
        PORT=$(sed -n 's/^listening on .*:\([0-9]*\)$/\1/p' "$WORK/$name.out")
        [[ -n $PORT ]] && return 0
        sleep 0.05
    done
    echo "the service did not start: $(cat "$WORK/$name.err")" >&2
    exit 1
}
stock() { curl -sf -X PUT "http://127.0.0.1:$PORT/items/$1" -d "{\"stock\": 1000000000}" >/dev/null; }
scenario() {
    echo "== $1"
    shift
    wrk -t2 -c64 -d"$DURATION" --latency "$@"
    echo
}

start_service unlimited --rate 0
for i in $(seq 0 15); do stock "bench-$i"; done
scenario "GET /items/{id}, rate limit off" "http://127.0.0.1:$PORT/items/bench-0"
scenario "POST reserve, one item (one lock)" -s "$ROOT/bench/http_inventory/reserve.lua" "http://127.0.0.1:$PORT" -- 1
scenario "POST reserve, 16 items" -s "$ROOT/bench/http_inventory/reserve.lua" "http://127.0.0.1:$PORT" -- 16
echo "== /metrics after the POST runs (reservation outcomes, lock acquisitions)"
curl -s "http://127.0.0.1:$PORT/metrics" | grep -E '^(inventory_reservations_total|redlock_acquires_total)' || true
echo
kill "$SERVICE_PID"

start_service limited --rate 1000000000/s --burst 1000000
scenario "GET /items/{id}, rate limit on (one GCRA call per request, never limiting)" \
    "http://127.0.0.1:$PORT/items/bench-0"
