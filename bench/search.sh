#!/bin/bash
# bench/search.sh - another owner's redirects beside long searches (issue 23:
# "two clients searching 100 K links - another client's redirects keep their
# p99").
#
# A `q=` search reads every link of its key and filters them, so a key with
# many links makes each search long. For each store this starts a fresh
# shortd (release build, one event loop: whatever a request does on the loop,
# every connection waits for it), gives one ordinary key LINKS links (bulk
# creates of 1,000), and another key one link. Then one client (loadgen loop
# --code, one keep-alive connection, closed loop) redirects the other key's
# link for DURATION s alone, and again while two clients (loadgen loop
# --path, one connection each, closed loop) search `?q=nomatch&state=all`
# with the first key. It prints the redirect client's rate, p99 and maximum
# both times, and the searches' count, answers and latency.
#
#   bench/search.sh [SHORTD] [sqlite|pg|both]   (defaults: build/shortd, both)
#   SEARCH_LINKS=100000 SEARCH_DURATION=10 SEARCH_THREADS=1 BENCH_SEARCH_PORT (default: a free one)
#
# PostgreSQL: a throwaway server from tests/pg.sh (this script runs itself
# under it). Loopback only; bounded in time (the creates, then 2 DURATION + 5
# s, per store); every process it starts is stopped by PID. It asserts no
# timing: it fails only when a run breaks (a create that fails, a redirect
# that is not one, errors).
set -euo pipefail
cd "$(dirname "$0")/.."
BENCH_NAME=search.sh
. bench/lib.sh

SHORTD=${1:-build/shortd}
STORES=${2:-both}
LINKS=${SEARCH_LINKS:-100000}
DURATION=${SEARCH_DURATION:-10}
THREADS=${SEARCH_THREADS:-1}
PORT=${BENCH_SEARCH_PORT:-}

bench_stores bench/search.sh "$SHORTD" "$STORES"
bench_loadgen
bench_port BENCH_SEARCH_PORT

WORK=$(mktemp -d /tmp/shortd-search.XXXXXX)
PID=""
SEARCHERS=()
cleanup() {
    for s in "${SEARCHERS[@]}"; do kill "$s" 2>/dev/null && wait "$s" 2>/dev/null; done
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
key() { "$SHORTD" key create "${store[@]}" --name "$1" | awk '{w = $NF} END {print w}'; }
SEARCHER=$(key searcher)
OTHER=$(key other)

"$SHORTD" serve --listen "127.0.0.1:$PORT" "${serve[@]}" --threads "$THREADS" >"$WORK/out" 2>&1 &
PID=$!
bench_wait_up "$WORK/out"

# LINKS links of the searcher's key, 1,000 a request
t0=$(date +%s%N)
for ((i = 0; i < LINKS; i += 1000)); do
    awk -v from="$i" -v to="$((i + 1000 < LINKS ? i + 1000 : LINKS))" 'BEGIN {
        printf "{\"links\":["
        for (k = from; k < to; k++) printf "%s{\"url\":\"https://example.com/search/%d\",\"title\":\"link %d\"}", (k > from ? "," : ""), k, k
        printf "]}"
    }' >"$WORK/bulk.json"
    status=$(curl -s -o "$WORK/bulk.out" -w '%{http_code}' -X POST "http://127.0.0.1:$PORT/api/links/bulk" \
        -H "Authorization: Bearer $SEARCHER" -H 'Content-Type: application/json' --data-binary @"$WORK/bulk.json")
    [ "$status" = 200 ] ||
        { echo "search.sh: POST /api/links/bulk answered $status: $(head -c 300 "$WORK/bulk.out")" >&2; exit 1; }
    if grep -q '"error"' "$WORK/bulk.out"; then
        echo "search.sh: a bulk create failed: $(grep -o '"error":{[^}]*}' "$WORK/bulk.out" | head -1)" >&2
        exit 1
    fi
done
made_s=$(awk -v a="$t0" -v b="$(date +%s%N)" 'BEGIN {printf "%.1f", (b - a) / 1e9}')
CODE=$(curl -s -X POST "http://127.0.0.1:$PORT/api/links" -H "Authorization: Bearer $OTHER" \
    -H 'Content-Type: application/json' -d '{"url":"https://example.com/search/other"}' |
    sed -n 's/.*"code":"\([0-9A-Za-z]*\)".*/\1/p')
[[ $CODE =~ ^[0-9A-Za-z]{7}$ ]] || { echo "search.sh: the other key's create gave no code" >&2; exit 1; }
[ "$(curl -s -o /dev/null -w '%{http_code}' -I "http://127.0.0.1:$PORT/$CODE")" = 302 ] ||
    { echo "search.sh: the other key's link does not redirect" >&2; exit 1; }
one=$(curl -s -o /dev/null -w '%{http_code} %{time_total}' \
    "http://127.0.0.1:$PORT/api/links?q=nomatch&state=all" -H "Authorization: Bearer $SEARCHER")

kv() { awk -F= -v k="$1" '$1 == k {print $2}' "$2"; }
check() {
    local f=$1 what=$2
    [ "$(kv errors "$f")" = 0 ] || { echo "search.sh: $what: $(kv errors "$f") errors" >&2; exit 1; }
    [ "$(kv completed "$f")" -gt 0 ] || { echo "search.sh: $what: no answers" >&2; exit 1; }
    if [ "$what" = redirects ] && [ "$(kv status_3xx "$f")" != "$(kv completed "$f")" ]; then
        echo "search.sh: $what: $(kv completed "$f") answers, $(kv status_3xx "$f") redirects" >&2
        exit 1
    fi
}
redirects() {
    "$LOADGEN" loop -p "$PORT" -d "$DURATION" -c 1 --code "$CODE" >"$1"
    check "$1" redirects
}

redirects "$WORK/alone"
for s in 1 2; do
    "$LOADGEN" loop -p "$PORT" -d "$((DURATION + 2))" -c 1 --path '/api/links?q=nomatch&state=all' \
        --key "$SEARCHER" >"$WORK/search$s" &
    SEARCHERS+=($!)
done
sleep 1
redirects "$WORK/during"
for s in "${SEARCHERS[@]}"; do wait "$s"; done
SEARCHERS=()
check "$WORK/search1" searches
check "$WORK/search2" searches

line() { printf '%.0f/s, p99 %s us, max %s us (%s redirects)' "$(kv rate "$1")" "$(kv p99_us "$1")" "$(kv max_us "$1")" "$(kv completed "$1")"; }
echo "$STORES: $LINKS links of one key made in $made_s s; one search: ${one% *} in ${one#* } s"
echo "$STORES: another owner's redirects alone: $(line "$WORK/alone")"
echo "$STORES: during 2 clients' searches:      $(line "$WORK/during")"
for s in 1 2; do
    f=$WORK/search$s
    printf '%s: searcher %s: %s searches (%s 2xx, %s 4xx, %s 5xx), p50 %s us, p99 %s us\n' "$STORES" "$s" \
        "$(kv completed "$f")" "$(kv status_2xx "$f")" "$(kv status_4xx "$f")" "$(kv status_5xx "$f")" \
        "$(kv p50_us "$f")" "$(kv p99_us "$f")"
done
