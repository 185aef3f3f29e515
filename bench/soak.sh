#!/usr/bin/env bash
# bench/soak.sh - a long flood of redirects over many links: does storing
# clicks keep up? On a fresh shortd (2 event loops, unpinned, loopback) with
# a copy of the store bench/run.sh prepared for N links, its cache warmed, wrk
# (bench/redirect.lua: uniform codes unless --dist says zipf or viral, the
# benchmark's user agents, 64 connections) saturates it for DURATION
# seconds. Every 10 s (SOAK_EVERY) it samples the backlog
# (shortd_clicks_pending, shortd_clicks_unfolded,
# shortd_clicks_lag_seconds), shortd's RSS and the CPU time its store and fold
# threads have used, into samples.tsv. After the flood it waits (at most
# SOAK_DRAIN, 600 s) for every click to be stored, stops shortd and checks,
# as run.sh does, that the clicks in the store lie between the requests wrk
# saw answered with a redirect and that plus its connections. Bounded; stops
# everything it started by PID; not part of `make test` or `make bench`.
#
#   bench/soak.sh [--links N] [--duration SECONDS] [--binary PATH] [--no-warm]
#                 [--store URL] [--dist uniform|zipf|viral]
#
# --store URL: a PostgreSQL store (a cluster node's) that `shortd migrate`
# has prepared, instead of a copy of the SQLite file: the N links are copied
# in first (`shortd migrate-store`, minutes), and the node journals to a
# folder of the run's. Inside tests/pg.sh (`tests/pg.sh bench/soak.sh
# --store pg`: "pg" is its SHORTD_TEST_PG) the samples also hold the
# server's CPU seconds (its postmaster and children).
#
# Defaults: 1,000,000 links, 600 s, build/shortd. Needs bench/run.sh's data
# for N links (run `bench/run.sh --links N --prepare-only` once). Results in
# build/bench/soak-<timestamp>/; exits non-zero when the click check fails.
set -Eeuo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)
N=1000000
DURATION=600
BIN=$ROOT/build/shortd
WARM=1
STORE=""
EVERY=${SOAK_EVERY:-10}
DRAIN=${SOAK_DRAIN:-600}
CONNS=64
DIST=uniform
while [ $# -gt 0 ]; do
    case "$1" in
    --links) N=$2; shift 2 ;;
    --duration) DURATION=$2; shift 2 ;;
    --binary) BIN=$(realpath "$2"); shift 2 ;;
    --no-warm) WARM=0; shift ;;
    --store) STORE=$2; shift 2 ;;
    --dist) DIST=$2; shift 2 ;;
    *) sed -n '2,/^set -E/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'; exit 2 ;;
    esac
done
BENCH_NAME=soak
# shellcheck source=bench/lib.sh
. bench/lib.sh
W=$ROOT/build/bench
D=$W/data-$N
[[ $DIST =~ ^(uniform|zipf|viral)$ ]] || { echo "soak: --dist takes uniform, zipf or viral, not '$DIST'" >&2; exit 2; }
[ -s "$D/pristine.db" ] || { echo "soak: no store of $N links: run bench/run.sh --links $N --prepare-only first" >&2; exit 1; }
[ -x "$BIN" ] || { echo "soak: $BIN is not built (make)" >&2; exit 2; }
command -v wrk >/dev/null || { echo "soak: wrk is missing (bench/setup.sh)" >&2; exit 2; }
bench_loadgen
PORT=${SOAK_PORT:-}
bench_port SOAK_PORT
OUT=$W/soak-$(date -u +%Y%m%d-%H%M%S)
mkdir -p "$OUT"
PGPM="" # the PostgreSQL server's postmaster, inside tests/pg.sh
if [ -n "$STORE" ]; then
    [ "$STORE" = pg ] && STORE=${SHORTD_TEST_PG:?--store pg runs inside tests/pg.sh}
    [ -n "${SHORTD_TEST_PGDATA:-}" ] && PGPM=$(head -n 1 "$SHORTD_TEST_PGDATA/postmaster.pid")
    echo "soak: copying $N links into $STORE..."
    "$BIN" migrate-store --from "sqlite:$D/pristine.db" --to "$STORE" --progress never \
        >"$OUT/migrate-store.out" 2>&1 || { cat "$OUT/migrate-store.out"; exit 1; }
    psql -X -q "$STORE" -c "VACUUM ANALYZE" >/dev/null
    WHERE=(--store "$STORE" --journal "$OUT/journal")
else
    cp "$D/pristine.db" "$OUT/soak.db"
    sync "$OUT/soak.db"
    WHERE=(--db "$OUT/soak.db")
fi

PID=""
WRK=""
cleanup() {
    [ -n "$WRK" ] && kill -TERM "$WRK" 2>/dev/null
    [ -n "$PID" ] && kill -TERM "$PID" 2>/dev/null
    wait 2>/dev/null || true
}
trap cleanup EXIT
"$BIN" serve --listen "127.0.0.1:$PORT" "${WHERE[@]}" --threads 2 --log-level warn >"$OUT/shortd.out" 2>&1 &
PID=$!
bench_wait_up "$OUT/shortd.out"
TCK=$(getconf CLK_TCK)

metric() { curl -s --max-time 5 "http://127.0.0.1:$PORT/metrics" | awk -v m="$1" '$1 == m {print $2}'; }
# CPU seconds used so far by shortd's threads named $1
thread_secs() {
    local s=0 t
    for t in /proc/"$PID"/task/*; do
        [ "$(cat "$t/comm" 2>/dev/null)" = "$1" ] || continue
        s=$((s + $(awk '{sub(/.*\) /, ""); split($0, f, " "); print f[12] + f[13]}' "$t/stat")))
    done
    awk -v s="$s" -v t="$TCK" 'BEGIN {printf "%.2f", s / t}'
}
rss_mb() { awk '$1 == "VmRSS:" {printf "%.1f", $2 / 1024}' "/proc/$PID/status"; }
# CPU seconds of the PostgreSQL server (postmaster, children, ended ones); "-" without one
pg_secs() {
    [ -n "$PGPM" ] || { echo -; return; }
    local t=0 p
    for p in $PGPM $(pgrep -P "$PGPM"); do
        t=$((t + $(awk '{sub(/.*\) /, ""); split($0, f, " "); print f[12] + f[13] + f[14] + f[15]}' "/proc/$p/stat" 2>/dev/null || echo 0)))
    done
    awk -v s="$t" -v t="$TCK" 'BEGIN {printf "%.2f", s / t}'
}
sample() {
    printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$1" "$(metric shortd_clicks_pending)" \
        "$(metric shortd_clicks_unfolded)" "$(metric shortd_clicks_lag_seconds)" "$(rss_mb)" \
        "$(thread_secs shortd-store)" "$(thread_secs shortd-fold)" "$(metric shortd_clicks_keeping_up)" \
        "$(metric shortd_clicks_uncompacted)" "$(pg_secs)" |
        tee -a "$OUT/samples.tsv"
}

if [ "$WARM" = 1 ]; then
    echo "soak: warming $N links..."
    "$LOADGEN" warm -p "$PORT" -c 64 --depth 16 --codes "$D/codes.txt" --method HEAD >/dev/null
fi
printf 'second\tpending\tunfolded\tlag_s\trss_mb\tstore_cpu_s\tfold_cpu_s\tkeeping_up\tuncompacted\tpg_cpu_s\n' |
    tee "$OUT/samples.tsv"
sample 0
T0=$(date +%s)
BENCH_CODES=$D/codes.txt BENCH_UAS=$ROOT/bench/uas.txt BENCH_HOST=127.0.0.1:$PORT BENCH_DIST=$DIST \
    wrk -t2 -c"$CONNS" -d"${DURATION}s" --timeout 5s -s bench/redirect.lua "http://127.0.0.1:$PORT/" \
    >"$OUT/wrk.txt" 2>&1 &
WRK=$!
while kill -0 "$WRK" 2>/dev/null; do
    sleep "$EVERY"
    kill -0 "$WRK" 2>/dev/null && sample $(($(date +%s) - T0))
done
wait "$WRK" || { cat "$OUT/wrk.txt"; echo "soak: wrk failed" >&2; exit 1; }
WRK=""
line=$(grep '^BENCH ' "$OUT/wrk.txt") || { cat "$OUT/wrk.txt"; echo "soak: no BENCH line from wrk" >&2; exit 1; }
requests=$(sed -E 's/.* requests=([0-9]+).*/\1/' <<<"$line")
# Answers other than a redirect (a 503 past store-timeout-ms) record no click
not3xx=$(sed -E 's/.* status=([0-9]+).*/\1/' <<<"$line")
echo "soak: flood over, $requests redirects answered in ${DURATION} s; draining"
t=$((DRAIN * 10))
while [ "$(metric shortd_clicks_pending)" != 0 ] && [ $t -gt 0 ]; do
    sleep 0.1; t=$((t - 1))
    [ $((t % (EVERY * 10))) = 0 ] && sample $(($(date +%s) - T0))
done
sample $(($(date +%s) - T0))
echo "soak: drained $(($(date +%s) - T0 - DURATION)) s after the flood"
kill -TERM "$PID"
for _ in $(seq 3000); do kill -0 "$PID" 2>/dev/null || break; sleep 0.1; done
kill -0 "$PID" 2>/dev/null && { echo "soak: shortd did not stop within 300 s" >&2; exit 1; }
PID=""
COUNT="SELECT (SELECT coalesce(sum(clicks),0) FROM links) + (SELECT coalesce(sum(clicks),0) FROM link_days) + (SELECT coalesce(sum(clicks),0) FROM link_days_pending), (SELECT coalesce(sum(bot_clicks),0) FROM links) + (SELECT coalesce(sum(bots),0) FROM link_days) + (SELECT coalesce(sum(bots),0) FROM link_days_pending)"
if [ -n "$STORE" ]; then
    # a binary from before PostgreSQL appended (--binary) has no such table
    [ "$(psql -X -q -At "$STORE" -c "SELECT to_regclass('link_days_pending') IS NULL")" = t ] &&
        COUNT=${COUNT//FROM link_days_pending/FROM link_days WHERE false}
    read -r clicks bots < <(psql -X -q -At -F ' ' "$STORE" -c "$COUNT")
else
    read -r clicks bots < <(sqlite3 -separator ' ' "$OUT/soak.db" "$COUNT")
fi
stored=$((clicks + bots))
lo=$((requests - not3xx))
hi=$((lo + CONNS))
[ "$not3xx" = 0 ] || echo "soak: $not3xx answers were not redirects"
if [ "$stored" -ge "$lo" ] && [ "$stored" -le "$hi" ]; then
    echo "soak: clicks stored $stored between $lo and $hi: PASS ($OUT)"
else
    echo "soak: clicks stored $stored, expected $lo .. $hi: FAIL ($OUT)" >&2
    exit 1
fi
