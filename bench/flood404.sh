#!/bin/bash
# bench/flood404.sh - a hot cached link beside a flood of distinct unknown
# codes (issue 23: "the hot link keeps at least 80 % of its rate alone").
#
# Every unknown code is a store lookup (a miss is remembered only after the
# first), and redirects are never rate limited, so a client asking for a new
# unknown code each time makes the server read the store at its full rate.
# For each store this starts a fresh shortd (release build, 2 event loops, a
# store of one link), warms that link, then measures its redirects from one
# client (loadgen loop --code, HOT_CONNS keep-alive connections, closed loop)
# for DURATION s alone, and again while another client (loadgen loop
# --unknown, FLOOD_CONNS connections, closed loop) asks for distinct unknown
# codes as fast as it is answered. It prints both rates, their ratio (the
# issue's bar: >= 0.80), both p99s and the flood's own rate and answers.
#
#   bench/flood404.sh [SHORTD] [sqlite|pg|both]   (defaults: build/shortd, both)
#   FLOOD_DURATION=5 FLOOD_HOT_CONNS=64 FLOOD_CONNS=64 BENCH_FLOOD_PORT (default: a free one)
#
# PostgreSQL: a throwaway server from tests/pg.sh (this script runs itself
# under it). Loopback only; bounded in time (about 2 x (2 DURATION + 5) s per
# store); every process it starts is stopped by PID. It asserts no timing:
# it fails only when a run breaks (a hot-link answer that is not a redirect,
# errors, no answers to the flood).
set -euo pipefail
cd "$(dirname "$0")/.."
BENCH_NAME=flood404.sh
. bench/lib.sh

SHORTD=${1:-build/shortd}
STORES=${2:-both}
DURATION=${FLOOD_DURATION:-5}
HOT_CONNS=${FLOOD_HOT_CONNS:-64}
FLOOD_CONNS=${FLOOD_CONNS:-64}
PORT=${BENCH_FLOOD_PORT:-}

bench_stores bench/flood404.sh "$SHORTD" "$STORES"
bench_loadgen
bench_port BENCH_FLOOD_PORT

WORK=$(mktemp -d /tmp/shortd-flood404.XXXXXX)
PID=""
FLOOD=""
cleanup() {
    [ -n "$FLOOD" ] && kill "$FLOOD" 2>/dev/null && wait "$FLOOD" 2>/dev/null
    [ -n "$PID" ] && kill -TERM "$PID" 2>/dev/null && wait "$PID" 2>/dev/null
    rm -rf "$WORK"
}
trap cleanup EXIT

if [ "$STORES" = sqlite ]; then
    "$SHORTD" migrate --db "$WORK/db" >/dev/null
    store=(--db "$WORK/db")
    serve=(--db "$WORK/db")
else
    store=(--db "$SHORTD_TEST_PG")
    serve=(--store "$SHORTD_TEST_PG" --journal "$WORK/journal")
fi
"$SHORTD" key create "${store[@]}" --name flood404 --admin >/dev/null
CODE=$("$SHORTD" link create "${store[@]}" --url https://example.com/flood404/hot | awk '{w = $NF} END {print w}')
[[ $CODE =~ ^[0-9A-Za-z]{7}$ ]] || { echo "flood404.sh: shortd link create printed no code" >&2; exit 1; }

"$SHORTD" serve --listen "127.0.0.1:$PORT" "${serve[@]}" --threads 2 >"$WORK/out" 2>&1 &
PID=$!
bench_wait_up "$WORK/out"
[ "$(curl -s -o /dev/null -w '%{http_code}' -I "http://127.0.0.1:$PORT/$CODE")" = 302 ] ||
    { echo "flood404.sh: the hot link does not redirect" >&2; cat "$WORK/out" >&2; exit 1; }

kv() { awk -F= -v k="$1" '$1 == k {print $2}' "$2"; }
# checks a loadgen result: errors, and (hot) every answer a redirect
check() {
    local f=$1 what=$2
    [ "$(kv errors "$f")" = 0 ] || { echo "flood404.sh: $what: $(kv errors "$f") errors" >&2; exit 1; }
    [ "$(kv completed "$f")" -gt 0 ] || { echo "flood404.sh: $what: no answers" >&2; exit 1; }
    if [ "$what" != flood ] && [ "$(kv status_3xx "$f")" != "$(kv completed "$f")" ]; then
        echo "flood404.sh: $what: $(kv completed "$f") answers, $(kv status_3xx "$f") redirects" >&2
        exit 1
    fi
}

"$LOADGEN" loop -p "$PORT" -d "$DURATION" -c "$HOT_CONNS" --code "$CODE" >"$WORK/alone"
check "$WORK/alone" "hot link alone"
"$LOADGEN" loop -p "$PORT" -d "$((DURATION + 2))" -c "$FLOOD_CONNS" --unknown >"$WORK/flood" &
FLOOD=$!
sleep 1
"$LOADGEN" loop -p "$PORT" -d "$DURATION" -c "$HOT_CONNS" --code "$CODE" >"$WORK/during"
wait "$FLOOD"
FLOOD=""
check "$WORK/during" "hot link during the flood"
check "$WORK/flood" flood

alone=$(kv rate "$WORK/alone")
during=$(kv rate "$WORK/during")
printf '%s: hot link alone %.0f/s (p99 %s us); during the flood %.0f/s (p99 %s us): ratio %.2f (bar 0.80)\n' \
    "$STORES" "$alone" "$(kv p99_us "$WORK/alone")" "$during" "$(kv p99_us "$WORK/during")" \
    "$(awk -v a="$alone" -v d="$during" 'BEGIN {print d / a}')"
printf '%s: the flood: %.0f/s distinct unknown codes (%s 404, %s 503, p99 %s us) on %s connections\n' \
    "$STORES" "$(kv rate "$WORK/flood")" "$(kv status_4xx "$WORK/flood")" "$(kv status_5xx "$WORK/flood")" \
    "$(kv p99_us "$WORK/flood")" "$FLOOD_CONNS"
