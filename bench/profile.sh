#!/usr/bin/env bash
# bench/profile.sh - where shortd spends its time under the benchmark's load:
# starts shortd on a copy of the benchmark's store of N links (bench/run.sh
# makes it: run that once with --links N first), warms its cache, runs wrk
# (bench/redirect.lua) for SECONDS under `perf record` (software cpu-clock:
# this VM has no hardware counters) until every click is stored, then prints
# the CPU of each thread and the hottest functions, all threads and per thread.
#
#   bench/profile.sh [--links N] [--seconds S] [--layout pin1|unpinned] [--binary PATH]
#
# --binary build/prof/shortd (make PROFILE=1: frame pointers) gives call
# graphs (perf report -g -i build/bench/profile/perf.data).
set -Eeuo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)
N=1000000
SECS=5
LAYOUT=unpinned
BIN=$ROOT/build/shortd
PORT=${BENCH_PORT:-28080}
while [ $# -gt 0 ]; do
    case "$1" in
    --links) N=$2; shift 2 ;;
    --seconds) SECS=$2; shift 2 ;;
    --layout) LAYOUT=$2; shift 2 ;;
    --binary) BIN=$(realpath "$2"); shift 2 ;;
    *) sed -n '2,/^set -E/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'; exit 2 ;;
    esac
done
W=$ROOT/build/bench
D=$W/data-$N
P=$W/profile
[ -s "$D/pristine.db" ] || { echo "no store of $N links: run bench/run.sh --links $N --quick first" >&2; exit 1; }
command -v perf >/dev/null || { echo "perf is missing (apt-get install linux-perf)" >&2; exit 1; }
[ -x "$W/loadgen" ] || cc -O2 -o "$W/loadgen" bench/loadgen.c
rm -rf "$P" && mkdir -p "$P"
cp "$D/pristine.db" "$P/p.db"

pin_s=""; pin_c=""; threads=2; wt=2
if [ "$LAYOUT" = pin1 ]; then pin_s="taskset -c 0"; pin_c="taskset -c 1"; threads=1; wt=1; fi
PID=""
trap '[ -n "$PID" ] && kill -TERM "$PID" 2>/dev/null; wait' EXIT
$pin_s "$BIN" serve --listen "127.0.0.1:$PORT" --db "$P/p.db" --threads $threads --log-level warn >"$P/shortd.out" 2>&1 &
PID=$!
until curl -s -o /dev/null --max-time 1 "http://127.0.0.1:$PORT/healthz"; do sleep 0.1; done
echo "warming $N links..."
$pin_c "$W/loadgen" warm -p "$PORT" -c 64 --depth 16 --codes "$D/codes.txt" --method HEAD >/dev/null

thread_ticks() { for t in /proc/"$PID"/task/*; do awk -v t="${t##*/}" -v c="$(cat "$t/comm")" '{sub(/.*\) /, ""); split($0, f, " "); print t "/" c, f[12] + f[13]}' "$t/stat"; done; }
thread_ticks | sort >"$P/t0"
perf record -e cpu-clock -F 999 -g -p "$PID" -o "$P/perf.data" 2>"$P/perf.err" &
PERF=$!
sleep 0.5
BENCH_CODES=$D/codes.txt BENCH_UAS=$ROOT/bench/uas.txt BENCH_HOST=127.0.0.1:$PORT \
    $pin_c wrk -t$wt -c64 -d"${SECS}s" -s bench/redirect.lua "http://127.0.0.1:$PORT/" | grep -E 'Requests/sec|BENCH'
t=0
while [ "$(curl -s "http://127.0.0.1:$PORT/metrics" | awk '$1 == "shortd_clicks_pending" {print $2}')" != 0 ] && [ $t -lt 600 ]; do
    sleep 0.1; t=$((t + 1))
done
echo "clicks stored $(awk "BEGIN {print $t / 10}") s after the run"
kill -INT $PERF; wait $PERF || true
thread_ticks | sort >"$P/t1"
echo
echo "== CPU per thread over the run and the drain (ticks of 1/$(getconf CLK_TCK) s; tid: main thread = $PID)"
join "$P/t0" "$P/t1" | awk '{d = $3 - $2; if (d > 0) print $1, d}' | sort -k2 -nr
echo
echo "== hottest functions, all threads (self time)"
perf report -i "$P/perf.data" --no-children --sort dso,symbol --stdio -g none 2>/dev/null | grep -E '^ +[0-9]' | head -40
echo
echo "== per thread"
perf report -i "$P/perf.data" --no-children --sort tid,symbol --stdio -g none 2>/dev/null | grep -E '^ +[0-9]' | head -60
