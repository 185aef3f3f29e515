#!/bin/bash
# bench/mixed.sh - creates while redirects keep both cores busy.
#
# The benchmark (run.sh) measures creates and redirects apart. This puts
# them together, the way a busy server sees them: a fresh shortd (unpinned,
# 2 event loops) on a copy of run.sh's store of N links, two saturating
# wrk runs (so that clicks wait to be stored, as after any burst), then a
# third one of 12 s with loadgen making creates on 4 connections for 6 s in
# its middle. It prints wrk's rates and the creates' rate and latency.
#
#   bench/mixed.sh [SHORTD] [N]     (defaults: build/shortd, 1000000)
#   MIXED_SMOKE=1: runs of 1, 1 and 4 s, creates for 2 s (the test suite's)
#
# Needs the data run.sh prepared for N (build/bench/data-N). Loopback only;
# bounded in time (about a minute, most of it warming the cache).
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/fresh.sh

SHORTD=${1:-build/shortd}
N=${2:-1000000}
DATA=build/bench/data-$N
PORT=${BENCH_MIXED_PORT:-18141}
LOADGEN=build/bench/loadgen
for f in "$SHORTD" "$LOADGEN" "$DATA/pristine.db" "$DATA/codes.txt" "$DATA/key"; do
    [ -e "$f" ] || { echo "mixed.sh: $f is missing: run 'make bench' (or bench/run.sh --links $N) first" >&2; exit 2; }
done

WORK=$(mktemp -d /tmp/shortd-mixed.XXXXXX)
PID=""
cleanup() {
    [ -n "$PID" ] && kill -TERM "$PID" 2>/dev/null && wait "$PID" 2>/dev/null
    rm -rf "$WORK"
}
trap cleanup EXIT

fresh_shortd "$SHORTD" "$DATA" "$WORK" "$PORT"
"$LOADGEN" warm -p "$PORT" -c 64 --depth 16 --codes "$DATA/codes.txt" --method HEAD >/dev/null

redirects() {
    BENCH_CODES=$DATA/codes.txt BENCH_UAS=bench/uas.txt BENCH_HOST=127.0.0.1:$PORT \
        wrk -t2 -c64 -d"$1"s -s bench/redirect.lua "http://127.0.0.1:$PORT/" |
        awk '/Requests\/sec/ {printf "redirects: %.0f/s\n", $2}'
}
# Seconds: the first two runs, the third, creates start into it, for.
read -r RUN LONG LEAD CREATES <<<"$([ -n "${MIXED_SMOKE:-}" ] && echo 1 4 1 2 || echo 5 12 3 6)"
redirects "$RUN"
redirects "$RUN"
redirects "$LONG" &
WRK=$!
sleep "$LEAD"
"$LOADGEN" create -p "$PORT" -d "$CREATES" -c 4 --key "$(cat "$DATA/key")" >"$WORK/creates"
wait "$WRK"
awk -F= '/^(created_per_s|p50_us|p99_us|max_us|status_201|errors)=/ {printf "%s=%s ", $1, $2} END {print ""}' \
    "$WORK/creates" | sed 's/^/creates: /'
