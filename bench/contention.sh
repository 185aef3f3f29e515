#!/bin/bash
# bench/contention.sh - how fast the stored counts catch up while other
# processes keep every core busy.
#
# Folding and storing clicks run at a lower priority than anything else on
# the machine (background-nice, background-idle): a redirect never waits
# for them, and they wait for everyone. This measures what that costs: a
# fresh shortd (2 event loops) on a copy of run.sh's store of N links, a
# 3 s wrk run of redirects with nothing else running, then HOGS CPU-bound
# shell loops (default 2, one per core) at the normal priority. It prints
# the clicks still to store (shortd_clicks_pending in /metrics) every 5 s,
# and how long they took to reach 0, giving up after LIMIT s.
#
#   bench/contention.sh [SHORTD] [N] [SERVE-ARGS...]
#       (defaults: build/shortd, 1000; e.g. --background-idle false)
#   CONTENTION_HOGS=2 CONTENTION_LIMIT=60
#
# Needs the data run.sh prepared for N (build/bench/data-N). Loopback only;
# bounded in time (LIMIT + 10 s).
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/fresh.sh

SHORTD=${1:-build/shortd}
N=${2:-1000}
shift $(($# < 2 ? $# : 2))
HOGS=${CONTENTION_HOGS:-2}
LIMIT=${CONTENTION_LIMIT:-60}
DATA=build/bench/data-$N
PORT=${BENCH_CONTENTION_PORT:-18143}
for f in "$SHORTD" "$DATA/pristine.db" "$DATA/codes.txt"; do
    [ -e "$f" ] || { echo "contention.sh: $f is missing: run 'make bench' (or bench/run.sh --links $N) first" >&2; exit 2; }
done

WORK=$(mktemp -d /tmp/shortd-contention.XXXXXX)
PID=""
HOG_PIDS=()
cleanup() {
    for h in "${HOG_PIDS[@]}"; do kill "$h" 2>/dev/null || true; done
    [ -n "$PID" ] && kill -TERM "$PID" 2>/dev/null && wait "$PID" 2>/dev/null
    rm -rf "$WORK"
}
trap cleanup EXIT

fresh_shortd "$SHORTD" "$DATA" "$WORK" "$PORT" "$@"

pending() {
    curl -s "http://127.0.0.1:$PORT/metrics" | awk '/^shortd_clicks_pending / {print $2}'
}

BENCH_CODES=$DATA/codes.txt BENCH_UAS=bench/uas.txt BENCH_HOST=127.0.0.1:$PORT \
    wrk -t2 -c64 -d3s -s bench/redirect.lua "http://127.0.0.1:$PORT/" |
    awk '/Requests\/sec/ {printf "redirects: %.0f/s for 3 s\n", $2}'
for _ in $(seq "$HOGS"); do
    timeout "$((LIMIT + 10))" sh -c 'while :; do :; done' &
    HOG_PIDS+=($!)
done
start=$(date +%s%N)
left=$(pending)
echo "pending: $left, with $HOGS CPU-bound loops from now"
elapsed=0 shown=0
while [ "$left" != 0 ] && [ "$elapsed" -lt "$LIMIT" ]; do
    sleep 1
    elapsed=$(( ($(date +%s%N) - start) / 1000000000 ))
    left=$(pending)
    if [ "$elapsed" -ge $((shown + 5)) ]; then
        shown=$((elapsed - elapsed % 5))
        echo "  after ${elapsed} s: $left"
    fi
done
ms=$(( ($(date +%s%N) - start) / 1000000 ))
if [ "$left" = 0 ]; then
    echo "stored: all, in $((ms / 1000)).$(printf %03d $((ms % 1000))) s"
else
    echo "stored: not all; $left still pending after ${LIMIT} s"
fi
