#!/bin/bash
# bench/uaflood.sh - a flood of distinct user agents beside a hot link.
#
# Every click's user agent is classified (bot or person; browser, OS,
# device) by the fold thread, which caches the answer per distinct agent. A
# client that sends a new agent with every request misses that cache every
# time. This measures what that costs the others: a fresh shortd (2 event
# loops, its own new SQLite store with two links) and one client
# redirecting a hot link (wrk, closed loop, 32 connections, the 2,000
# agents of bench/uas.txt, all cached after their first sight):
#   1. alone, for HOT s;
#   2. beside a flood at RATE/s (bench/loadgen rate, open loop, on another
#      link) that always sends one and the same agent: the cost of the
#      flood's requests and clicks as such;
#   3. beside the same flood with DISTINCT distinct agents (browser agents
#      of bench/uas.txt, each with a random token appended: every one a
#      person, none in the cache).
# Each flood lasts FLOOD s, the hot client running from 1 s in to 1 s
# before its end.
# After each flood it waits for every click to be stored. It prints the hot
# client's rate in each phase and its ratio to the rate alone; for each
# flood, the peak of the clicks still to store (shortd_clicks_pending) and of
# those not yet classified (shortd_clicks_unfolded, where the binary has
# it), sampled every 0.2 s, and how long after the flood stopped they took
# to reach 0 (giving up after LIMIT s); and the classification metrics.
#
#   bench/uaflood.sh [SHORTD]        (default build/shortd)
#   UAFLOOD_RATE=15000 UAFLOOD_SECS=20 UAFLOOD_HOT_SECS=8 UAFLOOD_DISTINCT=100000
#   UAFLOOD_LIMIT=120 UAFLOOD_PORT=18145
#
# Loopback only; bounded in time (about HOT + 2 * FLOOD + the drains, each
# at most LIMIT s); stops what it started, by PID.
set -euo pipefail
cd "$(dirname "$0")/.."
BENCH_NAME=uaflood.sh
. bench/lib.sh

SHORTD=${1:-build/shortd}
RATE=${UAFLOOD_RATE:-15000}
FLOOD=${UAFLOOD_SECS:-20}
HOT=${UAFLOOD_HOT_SECS:-8}
DISTINCT=${UAFLOOD_DISTINCT:-100000}
LIMIT=${UAFLOOD_LIMIT:-120}
PORT=${UAFLOOD_PORT:-18145}
[ -x "$SHORTD" ] || { echo "uaflood.sh: $SHORTD is missing: make it first" >&2; exit 2; }
bench_loadgen

WORK=$(mktemp -d /tmp/shortd-uaflood.XXXXXX)
PID="" BG=""
cleanup() {
    [ -n "$BG" ] && kill "$BG" 2>/dev/null || true
    [ -n "$PID" ] && kill -TERM "$PID" 2>/dev/null && wait "$PID" 2>/dev/null
    rm -rf "$WORK"
}
trap cleanup EXIT

# The flood's agents: bench/uas.txt's browsers, each with a random token.
awk -v n="$DISTINCT" -v seed=23 'BEGIN { srand(seed) }
    { ua[NR] = $0 }
    END { for (i = 0; i < n; i++) printf "%s r%06x%06x\n", ua[i % NR + 1], int(rand() * 16777216), i }' \
    bench/uas.txt >"$WORK/distinct.txt"
head -n 1 bench/uas.txt >"$WORK/one.txt"
printf 'hot-lnk\n' >"$WORK/hot.txt"
printf 'fld-lnk\n' >"$WORK/flood.txt"

"$SHORTD" migrate --db "$WORK/db" >"$WORK/out" 2>&1
"$SHORTD" key create --db "$WORK/db" --name uaflood --admin >"$WORK/key.out" 2>&1
KEY=$(awk '{w=$NF} END {print w}' "$WORK/key.out")
"$SHORTD" serve --listen "127.0.0.1:$PORT" --db "$WORK/db" --threads 2 >>"$WORK/out" 2>&1 &
PID=$!
bench_wait_up "$WORK/out"
for alias in hot-lnk fld-lnk; do
    curl -s -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $KEY" \
        -H 'Content-Type: application/json' \
        -d "{\"url\":\"https://example.com/$alias\",\"alias\":\"$alias\"}" \
        "http://127.0.0.1:$PORT/api/links" | grep -q 201 || { echo "uaflood.sh: cannot create $alias" >&2; exit 1; }
done

metric() {
    curl -s "http://127.0.0.1:$PORT/metrics" | awk -v m="$1" '$1 == m {print $2; f=1} END {if (!f) print "-"}'
}

hot() {
    BENCH_CODES=$WORK/hot.txt BENCH_UAS=bench/uas.txt BENCH_HOST=127.0.0.1:$PORT \
        wrk -t1 -c32 -d"$1"s -s bench/redirect.lua "http://127.0.0.1:$PORT/" |
        awk '/Requests\/sec/ {printf "%.0f", $2}'
}

# Samples the backlog every 0.2 s while the flood runs, then until it is
# stored; prints the peaks and the drain time.
watch_backlog() {
    local flood_pid=$1 peak=0 peak_unf=0 p u stop_ns="" now
    while :; do
        p=$(metric shortd_clicks_pending)
        u=$(metric shortd_clicks_unfolded)
        [ "$p" -gt "$peak" ] && peak=$p
        [ "$u" != - ] && [ "$u" -gt "$peak_unf" ] && peak_unf=$u
        now=$(date +%s%N)
        if [ -z "$stop_ns" ] && { [ -z "$flood_pid" ] || ! kill -0 "$flood_pid" 2>/dev/null; }; then
            stop_ns=$now
        fi
        if [ -n "$stop_ns" ]; then
            [ "$p" = 0 ] && break
            [ $(((now - stop_ns) / 1000000000)) -ge "$LIMIT" ] && break
        fi
        sleep 0.2
    done
    local ms=$(((now - stop_ns) / 1000000))
    [ "$u" = - ] && peak_unf=-
    if [ "$p" = 0 ]; then
        printf 'peak pending %s, peak unfolded %s, stored %d.%03d s after the flood\n' \
            "$peak" "$peak_unf" $((ms / 1000)) $((ms % 1000))
    else
        printf 'peak pending %s, peak unfolded %s, %s still pending %s s after the flood\n' \
            "$peak" "$peak_unf" "$p" "$LIMIT"
    fi
}

flood() {
    "$LOADGEN" rate -p "$PORT" -r "$RATE" -d "$1" -c 16 --spin 0 --codes "$WORK/flood.txt" \
        --uas "$2" >"$WORK/flood.out" &
    BG=$!
}

flood_summary() {
    awk -F= '/^(rate|completed|errors|status_3xx)=/ {printf "%s=%s ", $1, $2} END {print ""}' "$WORK/flood.out"
}

echo "uaflood: $(git rev-parse --short HEAD 2>/dev/null || echo ?) $SHORTD, flood $RATE/s, $DISTINCT distinct agents, hot client $HOT s"
alone=$(hot "$HOT")
printf '%-27s %s/s\n' "hot alone:" "$alone"
# The fold thread runs at background priority (coop.h): its nice value.
fold_nice=$(for t in /proc/"$PID"/task/*; do
    [ "$(cat "$t/comm")" = shortd-fold ] && awk '{print $19}' "$t/stat"; done || true)
echo "fold thread nice: ${fold_nice:-?}"

# A flood of FLOOD s with the agents in $1, the hot client running from 1 s
# in to 1 s before its end; then the backlog's drain.
beside() {
    flood "$FLOOD" "$1"
    local flood_pid=$BG
    ( sleep 1; hot "$((FLOOD - 2))" >"$WORK/hot.rate" ) &
    local hot_pid=$!
    watch_backlog "$flood_pid" >"$WORK/backlog"
    wait "$hot_pid"
    wait "$flood_pid" || true
    BG=""
    local during
    during=$(cat "$WORK/hot.rate")
    printf '%-27s %s/s (%s of alone)\n' "hot beside $2 flood:" "$during" \
        "$(awk -v a="$during" -v b="$alone" 'BEGIN {printf "%.2f", a / b}')"
    echo "  flood: $(flood_summary)"
    echo "  backlog: $(cat "$WORK/backlog")"
}

beside "$WORK/one.txt" 1-agent
beside "$WORK/distinct.txt" distinct
curl -s "http://127.0.0.1:$PORT/metrics" | grep -E '^shortd_(clicks|classify|fold)' | grep -v '_bucket' | sed 's/^/  /'
