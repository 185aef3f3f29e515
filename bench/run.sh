#!/usr/bin/env bash
# bench/run.sh - shortd against nginx, side by side, on loopback, bounded in
# time (see bench/README.md). For each N in --links it:
#   1. generates N codes (bench/loadgen gen), bulk-loads them into a fresh
#      SQLite store (sqlite3 .import, one transaction) and into an nginx map;
#   2. for each layout (pin1: server on core 0 with 1 worker, wrk -t1 -c64 on
#      core 1; unpinned: 2 worker threads/processes, wrk -t2 -c64): starts
#      nginx and shortd (release build, normal configuration: analytics on),
#      warms shortd's cache with a HEAD of every code (HEAD is never counted)
#      and measures RSS before/after, then runs wrk (bench/redirect.lua:
#      random codes, 2,000 user agents) alternately against shortd and nginx,
#      --pairs times, taking each server's CPU time (utime+stime of all its
#      threads/processes, /proc) over the run and, for shortd, until every
#      click of the run is in the store;
#   3. pin1 only: latency at a constant rate of half shortd's median peak, for
#      both servers, alternately, --pairs times (bench/loadgen rate, open loop,
#      on core 1; the medians of each percentile are reported);
#      unpinned only: durable creates (bench/loadgen create, POST /api/links),
#      once per --create-connections count (group commit batches what the
#      connections have in flight, so the rate depends on how many there are);
#      unpinned (the last layout) only, at 100,000 links and more: the same
#      throughput runs with skewed codes (--workloads: zipf, s = 1, and viral,
#      half the requests to one link; bench/redirect.lua), reported as layouts
#      "unpinned zipf" and "unpinned viral";
#   4. stops shortd with SIGTERM (it flushes every click) and checks that the
#      clicks in the store lie between the requests the load generators saw
#      completed and that plus the connections open when they stopped.
# Then writes bench/results/latest.md and latest.png (plus timestamped copies).
#
#   bench/run.sh [--links 1000,1000000] [--duration 5] [--pairs 3] [--quick]
#                [--smoke] [--layouts pin1,unpinned] [--no-nginx] [--out DIR]
#                [--connections 64] [--create-connections 64,256] [--wait-quiet SECONDS]
#                [--workloads uniform,zipf,viral]
#                [--prepare-only]   (generate and load the data of --links, then stop)
#                [--report RUN_DIR] (render a finished run's results again into --out)
set -Eeuo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)
COMMAND="bench/run.sh${*:+ $*}"
[ -n "${BENCH_LINKS:-}" ] && COMMAND="BENCH_LINKS=$BENCH_LINKS $COMMAND"

LINKS=${BENCH_LINKS:-1000,1000000}
DURATION=5
PAIRS=3
LAYOUTS=pin1,unpinned
WORKLOADS=uniform,zipf,viral
CONNS=64
CREATE_CONNS=64,256
FOREIGN_MAX=${BENCH_FOREIGN_MAX:-10}
RETRIES=${BENCH_RETRIES:-2}
RETRY_BUDGET=${BENCH_RETRY_BUDGET:-150}
SEED=${BENCH_SEED:-42}
SMOKE=0
LINKS_SET=""
PREPARE_ONLY=""
REPORT_DIR=""
WAIT_QUIET=""
NGINX=auto
OUT=""
PORT_S=${BENCH_PORT:-28080}
PORT_N=$((PORT_S + 1))
WORK=$ROOT/build/bench

usage() {
    sed -n '2,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'
    exit "${1:-0}"
}

while [ $# -gt 0 ]; do
    case "$1" in
    --links) LINKS=$2; LINKS_SET=1; shift 2 ;;
    --duration) DURATION=$2; shift 2 ;;
    --pairs) PAIRS=$2; shift 2 ;;
    --layouts) LAYOUTS=$2; shift 2 ;;
    --workloads) WORKLOADS=$2; shift 2 ;;
    --connections) CONNS=$2; shift 2 ;;
    --create-connections) CREATE_CONNS=$2; shift 2 ;;
    --quick) DURATION=2; PAIRS=1; shift ;;
    --smoke) SMOKE=1; [ -n "$LINKS_SET" ] || LINKS=1000; DURATION=1; PAIRS=1; shift ;;
    --no-nginx) NGINX=no; shift ;;
    --wait-quiet) WAIT_QUIET=$2; shift 2 ;;
    --prepare-only) PREPARE_ONLY=1; shift ;;
    --report) REPORT_DIR=$2; shift 2 ;;
    --out) OUT=$2; shift 2 ;;
    -h | --help) usage 0 ;;
    *) echo "run.sh: unknown option $1" >&2; usage 2 ;;
    esac
done
# the smoke run is about mechanics: no waiting for quiet, no repeats
if [ "$SMOKE" = 1 ]; then RETRIES=0; fi
if [ -z "$WAIT_QUIET" ]; then
    if [ "$SMOKE" = 1 ]; then WAIT_QUIET=0; else WAIT_QUIET=180; fi
fi
if [ -z "$OUT" ]; then
    if [ "$SMOKE" = 1 ]; then OUT=$WORK/smoke-results; else OUT=$ROOT/bench/results; fi
fi

log() { printf '%s bench: %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
fail() { log "FAILED: $*"; exit 1; }
[[ $WORKLOADS =~ ^(uniform|zipf|viral)(,(uniform|zipf|viral))*$ ]] ||
    fail "--workloads takes uniform, zipf and viral separated by commas, not '$WORKLOADS'"
[[ $CREATE_CONNS =~ ^[1-9][0-9]*(,[1-9][0-9]*)*$ ]] ||
    fail "--create-connections takes connection counts separated by commas, not '$CREATE_CONNS'"

# --- tools ----------------------------------------------------------------
for t in wrk sqlite3 taskset curl cc; do
    command -v "$t" >/dev/null 2>&1 || fail "$t is missing: run bench/setup.sh (make bench does)"
done
NGINX_BIN=$(command -v nginx || true)
[ -z "$NGINX_BIN" ] && [ -x /usr/sbin/nginx ] && NGINX_BIN=/usr/sbin/nginx
if [ "$NGINX" = no ] || [ -z "$NGINX_BIN" ]; then
    [ "$NGINX" = auto ] && [ "$SMOKE" = 0 ] && fail "nginx is missing: run bench/setup.sh"
    NGINX=no
else
    NGINX=yes
fi
[ -x "$ROOT/build/shortd" ] || fail "build/shortd is missing: run make"
mkdir -p "$WORK" "$OUT"
# one binary for the whole run, even if build/shortd is rebuilt meanwhile;
# the commit is the one checked out now (the binary was built from it)
COMMIT=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)
if [ -n "$(git status --porcelain -- src Makefile 2>/dev/null)" ]; then COMMIT="$COMMIT (+ uncommitted changes in src/)"; fi
NOTE=""
SHORTD=$WORK/shortd
cp "$ROOT/build/shortd" "$SHORTD.tmp" && mv "$SHORTD.tmp" "$SHORTD"
SHORTD_MD5=$(md5sum <"$SHORTD" | cut -c1-12)
LOADGEN=$WORK/loadgen
if [ ! -x "$LOADGEN" ] || [ bench/loadgen.c -nt "$LOADGEN" ]; then
    cc -O2 -Wall -Wextra -o "$LOADGEN" bench/loadgen.c || fail "cannot build bench/loadgen.c"
fi
UAS=$ROOT/bench/uas.txt
[ -s "$UAS" ] || node bench/gen-uas.mjs >"$UAS"
NCPU=$(nproc)
TCK=$(getconf CLK_TCK)
if [ "$NCPU" -lt 2 ]; then
    log "only $NCPU core: the pin1 layout needs 2; running unpinned only"
    LAYOUTS=unpinned
fi

# --- processes we start, stopped by PID -------------------------------------
SHORTD_PID=""
NGINX_PID=""
cleanup() {
    local rc=$?
    [ -n "$SHORTD_PID" ] && kill -TERM "$SHORTD_PID" 2>/dev/null && wait_exit "$SHORTD_PID" 60
    [ -n "$NGINX_PID" ] && kill -TERM "$NGINX_PID" 2>/dev/null && wait_exit "$NGINX_PID" 20
    exit $rc
}
trap cleanup EXIT
trap 'exit 130' INT TERM
trap 'log "error (status $?) at line $LINENO: $BASH_COMMAND"' ERR

# wait_exit PID SECONDS: waits for a child to exit; SIGKILL after the timeout
wait_exit() {
    local pid=$1 t=$(($2 * 10))
    while kill -0 "$pid" 2>/dev/null && [ $t -gt 0 ]; do sleep 0.1; t=$((t - 1)); done
    if kill -0 "$pid" 2>/dev/null; then
        log "PID $pid did not exit in $2 s: SIGKILL"
        kill -KILL "$pid" 2>/dev/null || true
    fi
    wait "$pid" 2>/dev/null || true
}

# cpu_ticks PID...: utime+stime of the processes (all their threads)
cpu_ticks() {
    local sum=0 pid line rest
    for pid in "$@"; do
        read -r line <"/proc/$pid/stat" || continue
        rest=${line##*) }
        # shellcheck disable=SC2086
        set -- $rest
        sum=$((sum + ${12} + ${13}))
    done
    echo $sum
}
# thread_ticks PID: "tid comm ticks" per thread
thread_ticks() {
    local t line rest comm
    for t in /proc/"$1"/task/*; do
        read -r line <"$t/stat" 2>/dev/null || continue
        comm=${line#*(}; comm=${comm%%)*}; comm=${comm// /_}
        rest=${line##*) }
        # shellcheck disable=SC2086
        set -- $rest
        echo "${t##*/} $comm $((${12} + ${13}))"
    done
}
rss_kib() { awk '/^VmRSS:/ {print $2}' "/proc/$1/status"; }
anon_kib() { awk '/^RssAnon:/ {print $2}' "/proc/$1/status"; }
pss_kib() { local s=0 p; for p in "$@"; do s=$((s + $(awk '/^Pss:/ {print $2}' "/proc/$p/smaps_rollup"))); done; echo $s; }
nginx_pids() { echo "$NGINX_PID" $(pgrep -P "$NGINX_PID" || true); }
metric() { curl -s --max-time 5 "http://127.0.0.1:$PORT_S/metrics" | awk -v m="$1" '$1 == m {print $2}'; }
calc() { awk "BEGIN { printf \"%s\", $1 }"; }
median() { tr ' ' '\n' | grep -v '^$' | sort -g | awk '{a[NR]=$1} END {if (NR == 0) print "nan"; else if (NR % 2) print a[(NR+1)/2]; else print (a[NR/2]+a[NR/2+1])/2}'; }
pin_server() { [ "$1" = pin1 ] && echo "taskset -c 0" || true; }
pin_client() { [ "$1" = pin1 ] && echo "taskset -c 1" || true; }
threads_of() { [ "$1" = pin1 ] && echo 1 || echo 2; }

# --- data -------------------------------------------------------------------
# current_schema: a hash of the schema a fresh store gets from build/shortd
CURRENT_SCHEMA=""
current_schema() {
    if [ -z "$CURRENT_SCHEMA" ]; then
        local p=$WORK/schema-probe.db
        rm -f "$p" "$p-wal" "$p-shm"
        "$SHORTD" migrate --db "$p" >/dev/null 2>&1 || fail "shortd migrate"
        CURRENT_SCHEMA=$( (sqlite3 "$p" .schema; sqlite3 "$p" 'PRAGMA user_version'; sqlite3 "$p" 'PRAGMA page_size') | md5sum | cut -c1-12)
        rm -f "$p" "$p-wal" "$p-shm"
    fi
    echo "$CURRENT_SCHEMA"
}

# prepare N: codes, CSV, nginx map, a pristine store with an admin key
prepare() {
    local n=$1 d=$WORK/data-$1
    # the data depends on the generator and on the store's schema (as the
    # binary creates it today)
    local stamp
    stamp="seed=$SEED gen=$(sed -n '/^static int cmd_gen/,/^}/p' bench/loadgen.c | md5sum | cut -c1-12) schema=$(current_schema)"
    if [ -f "$d/stamp" ] && [ "$(cat "$d/stamp")" = "$stamp" ]; then
        log "N=$n: reusing the generated data in $d"
        return
    fi
    rm -rf "$d" && mkdir -p "$d"
    log "N=$n: generating codes"
    "$LOADGEN" gen "$n" "$SEED" "$d/codes.txt" "$d/links.csv" "$d/map.conf" >"$d/gen.txt"
    log "N=$n: creating the store and loading $n links"
    "$SHORTD" migrate --db "$d/pristine.db" >"$d/key.out" 2>&1 || { cat "$d/key.out"; fail "shortd migrate"; }
    "$SHORTD" key create --db "$d/pristine.db" --name bench --admin >"$d/key.out" 2>&1 ||
        { cat "$d/key.out"; fail "shortd key create"; }
    awk '{w=$NF} END {print w}' "$d/key.out" >"$d/key"
    local owner now
    owner=$(sqlite3 "$d/pristine.db" "SELECT id FROM api_keys WHERE name = 'bench'")
    now=$(($(date +%s%N) / 1000000))
    # a fresh file, thrown away if this fails (no stamp): no journal while
    # loading, a page cache big enough for the indexes, WAL mode at the end
    sqlite3 "$d/pristine.db" >/dev/null <<EOF || fail "bulk load"
PRAGMA journal_mode = OFF;
PRAGMA synchronous = OFF;
PRAGMA cache_size = -2000000;
BEGIN;
CREATE TEMP TABLE bench_in (code TEXT, url TEXT);
.import --csv --schema temp $d/links.csv bench_in
INSERT INTO links (code, owner, url, created_at, changed_at, state)
    SELECT code, $owner, url, $now, $now, 0 FROM temp.bench_in;
COMMIT;
PRAGMA journal_mode = WAL;
EOF
    local got
    got=$(sqlite3 "$d/pristine.db" "SELECT count(*) FROM links")
    [ "$got" = "$n" ] || fail "loaded $got links, wanted $n"
    rm -f "$d/links.csv"
    echo "$stamp" >"$d/stamp"
}

# --- servers ----------------------------------------------------------------
start_shortd() {
    local layout=$1 db=$2
    rm -rf "$db" "$db-wal" "$db-shm" "$db.clicks"
    cp "$DATA/pristine.db" "$db"
    # The copy's pages on disk before shortd starts: otherwise its first
    # checkpoint's fsync, or the kernel's flusher on the load generator's
    # core, writes back hundreds of MB during the measured runs.
    sync "$db"
    # shellcheck disable=SC2046
    $(pin_server "$layout") "$SHORTD" serve --listen "127.0.0.1:$PORT_S" --db "$db" \
        --threads "$(threads_of "$layout")" >"$RUN/shortd-$layout.out" 2>&1 &
    SHORTD_PID=$!
    local t=300
    until curl -s -o /dev/null --max-time 1 "http://127.0.0.1:$PORT_S/healthz"; do
        kill -0 "$SHORTD_PID" 2>/dev/null || { cat "$RUN/shortd-$layout.out"; fail "shortd exited"; }
        t=$((t - 1)); [ $t -gt 0 ] || fail "shortd did not start"
        sleep 0.1
    done
}

stop_shortd() {
    kill -TERM "$SHORTD_PID"
    wait_exit "$SHORTD_PID" 300
    SHORTD_PID=""
}

# warm_pass FILE: a HEAD of every code (each a cache miss the first time)
warm_pass() {
    # shellcheck disable=SC2046
    $(pin_client "$L") "$LOADGEN" warm -p "$PORT_S" -c 64 --depth 16 --codes "$DATA/codes.txt" \
        --method HEAD >"$1" || fail "warm-up"
}

start_nginx() {
    local layout=$1 prefix=$WORK/nginx-$1
    rm -rf "$prefix" && mkdir -p "$prefix"
    local hash=1024
    while [ $hash -lt $((N * 2)) ]; do hash=$((hash * 2)); done
    sed -e "s|@WORKERS@|$(threads_of "$layout")|" -e "s|@PREFIX@|$prefix|g" -e "s|@PORT@|$PORT_N|" \
        -e "s|@HASH_MAX@|$hash|" -e "s|@MAPFILE@|$DATA/map.conf|" bench/nginx.conf.in >"$prefix/nginx.conf"
    # shellcheck disable=SC2046
    $(pin_server "$layout") "$NGINX_BIN" -p "$prefix" -c "$prefix/nginx.conf" -e "$prefix/error.log" \
        >"$prefix/stdout.log" 2>&1 &
    NGINX_PID=$!
    local code t=6000
    code=$(head -c 7 "$DATA/codes.txt")
    until [ "$(curl -s -o /dev/null -w '%{http_code}' --max-time 1 "http://127.0.0.1:$PORT_N/$code")" = 302 ]; do
        kill -0 "$NGINX_PID" 2>/dev/null || { cat "$prefix/error.log"; fail "nginx exited"; }
        t=$((t - 1)); [ $t -gt 0 ] || fail "nginx did not start"
        sleep 0.1
    done
}

stop_nginx() {
    kill -QUIT "$NGINX_PID"
    wait_exit "$NGINX_PID" 30
    NGINX_PID=""
}

# --- measurements -------------------------------------------------------------
# Other processes on this shared box (tests, builds) disturb a run: each run
# measures the CPU time other processes used meanwhile (utime + stime, and
# cutime + cstime for their children that ended, of every process but the
# servers, this script and kernel threads; kernel threads are left out as
# they mostly write back what shortd wrote) and is repeated, up to RETRIES
# times, when that exceeds FOREIGN_MAX % of one core. The last attempt is kept.
others_ticks() {
    { cat /proc/[0-9]*/stat 2>/dev/null || true; } | awk -v ex=" $$ $* " '{
        pid = $1
        sub(/^.*\) /, "")   # after "(comm) ": $1 state, $2 ppid, $12.. utime stime cutime cstime
        if (index(ex, " " pid " ") || pid == 2 || $2 == 2) next
        s += $12 + $13 + $14 + $15
    } END { print s + 0 }'
}
# foreign_pct TICKS0 TICKS1 SECONDS: % of one core used by others
foreign_pct() { calc "($2 - $1) * 100 / $TCK / $3"; }
disturbed() { awk -v f="$1" -v m="$FOREIGN_MAX" 'BEGIN { exit !(f > m) }'; }

# retry_allowed T0_NS: repeats cost time (a discarded attempt, from T0_NS on,
# and the wait for quiet); none once RETRY_BUDGET seconds went to them
RETRY_SPENT=0
retry_allowed() {
    [ "$RETRY_SPENT" -lt "$RETRY_BUDGET" ] || return 1
    RETRY_SPENT=$((RETRY_SPENT + ($(date +%s%N) - $1) / 1000000000 + 5))
    return 0
}

# wait_quiet SECONDS: waits (at most SECONDS) for 2 s in which other
# processes use less than FOREIGN_MAX % of a core
wait_quiet() {
    local until=$(($(date +%s) + $1)) o0 o1 f
    [ "$1" -gt 0 ] || return 0
    while :; do
        o0=$(others_ticks)
        sleep 2
        o1=$(others_ticks)
        f=$(foreign_pct "$o0" "$o1" 2)
        disturbed "$f" || return 0
        if [ "$(date +%s)" -ge "$until" ]; then
            log "the machine is still busy ($(printf '%.0f' "$f") % of a core used by others): starting anyway"
            return 0
        fi
        log "waiting for a quiet machine: others use $(printf '%.0f' "$f") % of a core"
        sleep 3
    done
}

# Waits (at most 60 s) until shortd has stored every click it answered;
# prints what is still pending (0 when done).
wait_clicks_stored() {
    local t=600 pending
    pending=$(metric shortd_clicks_pending)
    while [ "${pending:-0}" != 0 ] && [ $t -gt 0 ]; do
        sleep 0.1; t=$((t - 1)); pending=$(metric shortd_clicks_pending)
    done
    echo "${pending:-0}"
}

# wrk_run SERVER LAYOUT PAIR [WORKLOAD]: one throughput run, appended to
# runs.tsv under the layout's name, followed by the workload's when it is not
# uniform
wrk_run() {
    local server=$1 layout=$2 pair=$3 dist=${4:-uniform} port pids c0 c1 drain=0 pending=0 attempt
    local label=$layout
    [ "$dist" = uniform ] || label="$layout $dist"
    if [ "$server" = shortd ]; then port=$PORT_S; pids=$SHORTD_PID; else port=$PORT_N; pids=$(nginx_pids); fi
    local threads=1 out=$RUN/wrk-$server-$layout-$dist-$pair.txt
    [ "$layout" = pin1 ] || threads=2
    for ((attempt = 1; ; attempt++)); do
        local o0 t0 o1 t1
        # shellcheck disable=SC2086
        o0=$(others_ticks $pids); t0=$(date +%s%N)
        # shellcheck disable=SC2086
        c0=$(cpu_ticks $pids)
        [ "$server" = shortd ] && thread_ticks "$SHORTD_PID" | sort >"$RUN/threads0"
        # shellcheck disable=SC2046
        BENCH_CODES=$DATA/codes.txt BENCH_UAS=$UAS BENCH_HOST=127.0.0.1:$port BENCH_DIST=$dist \
            $(pin_client "$layout") wrk -t"$threads" -c"$CONNS" -d"${DURATION}s" --timeout 5s \
            -s bench/redirect.lua "http://127.0.0.1:$port/" >"$out" 2>&1 ||
            { cat "$out"; fail "wrk"; }
        # shortd: the CPU of a run includes the analytics work its clicks
        # cause, so the meter runs until every click of the run is in the
        # store (bounded)
        if [ "$server" = shortd ]; then
            local d0
            d0=$(date +%s%N)
            pending=$(wait_clicks_stored)
            drain=$(calc "($(date +%s%N) - $d0) / 1e9")
        fi
        # shellcheck disable=SC2086
        c1=$(cpu_ticks $pids)
        # shellcheck disable=SC2086
        o1=$(others_ticks $pids); t1=$(date +%s%N)
        [ "$server" = shortd ] && thread_ticks "$SHORTD_PID" | sort >"$RUN/threads1"
        local line requests dur errs rps cpu_us foreign
        line=$(grep '^BENCH ' "$out") || { cat "$out"; fail "no BENCH line from wrk"; }
        requests=$(sed -E 's/.* requests=([0-9]+).*/\1/' <<<"$line")
        dur=$(sed -E 's/.* duration_us=([0-9]+).*/\1/' <<<"$line")
        errs=$(awk '{s=0; for (i=2;i<=NF;i++) { split($i,kv,"="); if (kv[1] ~ /^(connect|read|write|status|timeout)$/) s+=kv[2] } print s}' <<<"$line")
        rps=$(calc "$requests / ($dur / 1e6)")
        cpu_us=$(calc "($c1 - $c0) * 1e6 / $TCK / $requests")
        foreign=$(foreign_pct "$o0" "$o1" "$(calc "($t1 - $t0) / 1e9")")
        if [ "$server" = shortd ]; then
            CLICKS_LO=$((CLICKS_LO + requests))
            CLICKS_HI=$((CLICKS_HI + requests + CONNS))
        fi
        local note=""
        [ "$server" = shortd ] && note=", clicks stored $(printf '%.1f' "$drain") s after the run"
        log "N=$N $label $server #$pair: $(printf '%.0f' "$rps") req/s, $(printf '%.2f' "$cpu_us") us CPU/req, $errs errors$note; other load $(printf '%.0f' "$foreign") % of a core"
        if disturbed "$foreign" && [ "$attempt" -le "$RETRIES" ] && retry_allowed "$t0"; then
            log "  disturbed by other processes: again"
            local w0
            w0=$(date +%s)
            wait_quiet 30
            RETRY_SPENT=$((RETRY_SPENT + $(date +%s) - w0))
            continue
        fi
        printf '%s\t%s\t%s\t%s\t%.0f\t%.3f\t%s\t%s\t%s\t%s\t%.1f\t%s\n' "$N" "$label" "$server" "$pair" "$rps" "$cpu_us" \
            "$requests" "$errs" "$drain" "${pending:-0}" "$foreign" "$attempt" >>"$RUN/runs.tsv"
        # shortd's CPU per thread: N layout pair tid comm us/request
        if [ "$server" = shortd ]; then
            join "$RUN/threads0" "$RUN/threads1" | awk -v n="$N" -v l="$label" -v p="$pair" -v r="$requests" -v tck="$TCK" \
                '{ printf "%s\t%s\t%s\t%s\t%s\t%.3f\n", n, l, p, $1, $2, ($5 - $3) * 1e6 / tck / r }' >>"$RUN/threads.tsv"
        fi
        return 0
    done
}

kv() { awk -F= -v k="$1" '$1 == k {print $2}' "$2"; }

# latency SERVER RATE LAYOUT PAIR: constant-rate load (from core 1 in pin1)
latency_run() {
    local server=$1 rate=$2 layout=$3 pair=$4 port f attempt pids
    if [ "$server" = shortd ]; then port=$PORT_S; pids=$SHORTD_PID; else port=$PORT_N; pids=$(nginx_pids); fi
    f=$RUN/latency-$server-$N.txt
    for ((attempt = 1; ; attempt++)); do
        local o0 t0 o1 t1 foreign
        # shellcheck disable=SC2086
        o0=$(others_ticks $pids); t0=$(date +%s%N)
        # shellcheck disable=SC2046
        $(pin_client "$layout") "$LOADGEN" rate -p "$port" -r "$rate" -d "$DURATION" -c "$CONNS" \
            --codes "$DATA/codes.txt" --uas "$UAS" >"$f" || fail "loadgen rate"
        # shellcheck disable=SC2086
        o1=$(others_ticks $pids); t1=$(date +%s%N)
        foreign=$(foreign_pct "$o0" "$o1" "$(calc "($t1 - $t0) / 1e9")")
        # shortd stores the run's clicks before anything else runs, or its
        # catching up would land in nginx's run on the same core
        [ "$server" = shortd ] && wait_clicks_stored >/dev/null
        if [ "$server" = shortd ]; then
            CLICKS_LO=$((CLICKS_LO + $(kv status_3xx "$f")))
            CLICKS_HI=$((CLICKS_HI + $(kv status_3xx "$f") + $(kv in_flight_at_stop "$f") + $(kv errors "$f")))
        fi
        log "N=$N latency $server at $rate/s: p50 $(kv p50_us "$f") us, p99 $(kv p99_us "$f") us, p99.9 $(kv p999_us "$f") us; other load $(printf '%.0f' "$foreign") % of a core"
        if disturbed "$foreign" && [ "$attempt" -le "$RETRIES" ] && retry_allowed "$t0"; then
            log "  disturbed by other processes: again"
            local w0
            w0=$(date +%s)
            wait_quiet 30
            RETRY_SPENT=$((RETRY_SPENT + $(date +%s) - w0))
            continue
        fi
        printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%.1f\t%s\t%s\t%s\n' "$N" "$server" "$rate" "$(kv rate "$f")" "$(kv p50_us "$f")" \
            "$(kv p99_us "$f")" "$(kv p999_us "$f")" "$(kv max_us "$f")" "$(kv errors "$f")" "$(kv wake_late_max_us "$f")" \
            "$foreign" "$attempt" "$(kv wake_late_avg_us "$f")" "$pair" >>"$RUN/latency.tsv"
        return 0
    done
}

create_run() {
    local f key other c
    key=$(cat "$DATA/key")
    for c in ${CREATE_CONNS//,/ }; do
        f=$RUN/create-$N-c$c.txt
        "$LOADGEN" create -p "$PORT_S" -d "$DURATION" -c "$c" --key "$key" >"$f" || fail "loadgen create"
        other=$(($(kv completed "$f") - $(kv status_201 "$f")))
        printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$N" "$(kv created_per_s "$f")" "$(kv p50_us "$f")" \
            "$(kv p99_us "$f")" "$(kv p999_us "$f")" "$other" "$(kv errors "$f")" "$c" >>"$RUN/create.tsv"
        log "N=$N creates with $c connections: $(kv created_per_s "$f")/s, p99 $(kv p99_us "$f") us, $other not 201"
    done
}

# --- the report -----------------------------------------------------------------
# Everything the report shows besides the TSVs; saved in RUN/env so that
# `run.sh --report RUN` can render a finished run again.
REPORT_VARS="NOTE KERNEL DATE_UTC COMMAND NGINX_VERSION WRK_VERSION SHORTD_MD5 RETRY_BUDGET FOREIGN_MAX RETRIES
    NCPU CPU_MODEL MEM_GIB COMMIT LINKS DURATION PAIRS CONNS CREATE_CONNS NGINX ELAPSED STAMP LAYOUTS WORKLOADS"
render_report() {
    # shellcheck disable=SC2086
    export RUN $REPORT_VARS
    node bench/report.mjs "$RUN" >"$RUN/results.md" || fail "report"
    cp "$RUN/results.md" "$OUT/latest.md"
    cp "$RUN/results.md" "$OUT/$STAMP.md"
    if command -v gnuplot >/dev/null 2>&1 && [ -s "$RUN/chart.dat" ]; then
        gnuplot -e "dat='$RUN/chart.dat'; out='$RUN/chart.png'; sub='$NCPU cores, $CPU_MODEL; commit ${COMMIT%% *}; $DATE_UTC; ${DURATION} s runs, medians of up to $PAIRS'" \
            bench/chart.gp 2>"$RUN/gnuplot.err" || log "gnuplot failed: $(cat "$RUN/gnuplot.err")"
        if [ -s "$RUN/chart.png" ]; then
            cp "$RUN/chart.png" "$OUT/latest.png"
            cp "$RUN/chart.png" "$OUT/$STAMP.png"
        fi
    fi
    log "done in ${ELAPSED}s: $OUT/latest.md"
    cat "$OUT/latest.md"
}
if [ -n "$REPORT_DIR" ]; then
    RUN=$(realpath "$REPORT_DIR")
    [ -s "$RUN/env" ] || fail "$RUN/env is missing"
    # shellcheck disable=SC1091
    . "$RUN/env"
    render_report
    exit 0
fi

# --- the run ------------------------------------------------------------------
for p in $PORT_S $PORT_N; do
    if (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then fail "port $p is in use (set BENCH_PORT)"; fi
done
STAMP=$(date -u +%Y%m%d-%H%M%S)
RUN=$WORK/run-$STAMP
mkdir -p "$RUN"
: >"$RUN/runs.tsv"; : >"$RUN/threads.tsv"; : >"$RUN/latency.tsv"; : >"$RUN/create.tsv"; : >"$RUN/memory.tsv"; : >"$RUN/checks.tsv"
T_START=$(date +%s)
log "links=$LINKS duration=${DURATION}s pairs=$PAIRS layouts=$LAYOUTS nginx=$NGINX -> $RUN"

IFS=, read -r -a NS <<<"$LINKS"
if [ -n "$PREPARE_ONLY" ]; then
    for N in "${NS[@]}"; do prepare "$N"; done
    log "data ready in $WORK/data-*"
    exit 0
fi
wait_quiet "$WAIT_QUIET"
IFS=, read -r -a LS <<<"$LAYOUTS"
for N in "${NS[@]}"; do
    prepare "$N"
    DATA=$WORK/data-$N
    AVG_URL=$(kv avg_url_bytes "$DATA/gen.txt")
    # nginx builds its map's hash at start by trying table sizes one after
    # another: for 10 M codes that took over 10 minutes of CPU (measured), so
    # above NGINX_MAX_LINKS shortd runs alone (the 10 M target compares
    # shortd's rate with its own at 1 K links).
    NG=$NGINX
    [ "$N" -gt "${NGINX_MAX_LINKS:-1000000}" ] && NG=no
    for L in "${LS[@]}"; do
        CLICKS_LO=0; CLICKS_HI=0
        [ "$NG" = yes ] && start_nginx "$L"
        start_shortd "$L" "$WORK/run.db"
        sleep 0.5
        rss0=$(rss_kib "$SHORTD_PID"); anon0=$(anon_kib "$SHORTD_PID")
        t0=$(date +%s%N)
        warm_pass "$RUN/warm-$N-$L.txt"
        # A miss can wait past store-timeout-ms and get 503 while the
        # warm-up saturates both cores, since the misses' store threads run
        # at background-nice (bench/HISTORY.md, "A cold cache of ten million
        # links"): a second pass, as a client retrying, fills what it left.
        w5=$(kv status_5xx "$RUN/warm-$N-$L.txt")
        if [ "$w5" != 0 ] && [ $(($(kv status_3xx "$RUN/warm-$N-$L.txt") + w5)) = "$N" ]; then
            log "N=$N $L: $w5 codes of the warm-up answered 503; a second pass"
            mv "$RUN/warm-$N-$L.txt" "$RUN/warm-$N-$L-first.txt"
            warm_pass "$RUN/warm-$N-$L.txt"
        fi
        warm_s=$(calc "($(date +%s%N) - $t0) / 1e9")
        [ "$(kv status_3xx "$RUN/warm-$N-$L.txt")" = "$N" ] || fail "warm-up: not every code answered 302 ($(tr '\n' ' ' <"$RUN/warm-$N-$L.txt"))"
        # shortd's housekeeping grows the cache's hash table once a second:
        # let the last growth of the warm-up finish before measuring
        sleep 2
        rss1=$(rss_kib "$SHORTD_PID"); anon1=$(anon_kib "$SHORTD_PID")
        entries=$(metric shortd_cache_entries)
        ng_pss=""
        [ "$NG" = yes ] && ng_pss=$(pss_kib $(nginx_pids))
        per=$(calc "($rss1 - $rss0) * 1024 / $N - $AVG_URL")
        printf '%s\t%s\t%s\t%s\t%s\t%s\t%.1f\t%s\t%s\t%s\t%s\n' "$N" "$L" "$rss0" "$rss1" "$entries" "$AVG_URL" "$per" \
            "${ng_pss:-}" "$warm_s" "$anon0" "$anon1" >>"$RUN/memory.tsv"
        log "N=$N $L: warmed $entries entries in ${warm_s}s; RSS $rss0 -> $rss1 KiB: $(printf '%.1f' "$per") bytes/link beyond the URL"

        for ((p = 1; p <= PAIRS; p++)); do
            wrk_run shortd "$L" "$p"
            sleep 0.5
            if [ "$NG" = yes ]; then wrk_run nginx "$L" "$p"; sleep 0.5; fi
        done

        # latency in the first layout (pin1: the generator on its own core),
        # durable creates in the last
        if [ "$L" = "${LS[0]}" ]; then
            peak=$(awk -F'\t' -v n="$N" -v l="$L" '$1 == n && $2 == l && $3 == "shortd" {print $5}' "$RUN/runs.tsv" | median)
            half=$(calc "int($peak / 2)")
            for ((p = 1; p <= PAIRS; p++)); do
                latency_run shortd "$half" "$L" "$p"
                if [ "$NG" = yes ]; then latency_run nginx "$half" "$L" "$p"; fi
            done
        fi
        # skewed codes in the last layout, where at 1 K links every code is
        # hot whatever the law (the smoke run tries each once)
        if [ "$L" = "${LS[${#LS[@]}-1]}" ] && { [ "$N" -ge 100000 ] || [ "$SMOKE" = 1 ]; }; then
            for W in ${WORKLOADS//,/ }; do
                [ "$W" = uniform ] && continue
                for ((p = 1; p <= PAIRS; p++)); do
                    wrk_run shortd "$L" "$p" "$W"
                    sleep 0.5
                    if [ "$NG" = yes ]; then wrk_run nginx "$L" "$p" "$W"; sleep 0.5; fi
                done
            done
        fi
        [ "$L" = "${LS[${#LS[@]}-1]}" ] && create_run
        [ "$NG" = yes ] && stop_nginx
        stop_shortd
        read -r clicks bots < <(sqlite3 -separator ' ' "$WORK/run.db" "SELECT (SELECT coalesce(sum(clicks),0) FROM links) + (SELECT coalesce(sum(clicks),0) FROM link_days) + (SELECT coalesce(sum(clicks),0) FROM link_days_pending), (SELECT coalesce(sum(bot_clicks),0) FROM links) + (SELECT coalesce(sum(bots),0) FROM link_days) + (SELECT coalesce(sum(bots),0) FROM link_days_pending)")
        stored=$((clicks + bots))
        ok=PASS
        [ "$stored" -ge "$CLICKS_LO" ] && [ "$stored" -le "$CLICKS_HI" ] || ok=FAIL
        printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$N" "$L" "$clicks" "$bots" "$CLICKS_LO" "$CLICKS_HI" "$ok" >>"$RUN/checks.tsv"
        log "N=$N $L: clicks stored $clicks (+$bots bot) vs completed $CLICKS_LO .. $CLICKS_HI: $ok"
    done
done
ELAPSED=$(($(date +%s) - T_START))

# --- report -------------------------------------------------------------------
CPU_MODEL=$(awk -F': ' '/^model name/ {print $2; exit}' /proc/cpuinfo)
MEM_GIB=$(awk '/^MemTotal/ {printf "%.1f", $2 / 1048576}' /proc/meminfo)
KERNEL=$(uname -r)
DATE_UTC=$(date -u -d "@$T_START" '+%Y-%m-%d %H:%M UTC')
NGINX_VERSION=""
[ "$NGINX" = yes ] && NGINX_VERSION=$("$NGINX_BIN" -v 2>&1 | sed 's/.*version: //')
WRK_VERSION=$( (wrk -v 2>&1 || true) | head -1 | awk '{print "wrk " $2}')
for v in $REPORT_VARS; do declare -p "$v"; done >"$RUN/env"
render_report

# mechanics that must hold in every run (no timing is asserted)
bad=0
awk -F'\t' '$7 != "PASS" {exit 1}' "$RUN/checks.tsv" || { log "the click check failed"; bad=1; }
awk -F'\t' '$7 == 0 || $8 != 0 {exit 1}' "$RUN/runs.tsv" || { log "a run had errors or no requests"; bad=1; }
exit $bad
