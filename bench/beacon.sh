#!/usr/bin/env bash
# bench/beacon.sh - page beacons per second: shortd's GET /e (decoded,
# resolved to a site, journaled and folded: the normal configuration)
# against nginx answering 204 to the same requests, in one run, on
# loopback, each server given the same cores in turn (wrk on the others).
#
#   bench/beacon.sh [--duration S] [--threads N] [--conns N] [--smoke]
#
# --smoke: a one-second run of each, for the test suite. Needs a release
# build (make), wrk and nginx (bench/setup.sh). Prints one line per server
# and a ratio; the whole wrk output goes to $OUT (default: a temp folder).
set -euo pipefail
cd "$(dirname "$0")/.."
BENCH_NAME=beacon.sh
. bench/lib.sh

DURATION=10
THREADS=1
CONNS=64
SHORTD=${SHORTD:-build/shortd}
while [ $# -gt 0 ]; do
    case "$1" in
    --duration) DURATION=$2; shift 2 ;;
    --threads) THREADS=$2; shift 2 ;;
    --conns) CONNS=$2; shift 2 ;;
    --smoke) DURATION=1; CONNS=8; shift ;;
    *) echo "usage: bench/beacon.sh [--duration S] [--threads N] [--conns N] [--smoke]" >&2; exit 2 ;;
    esac
done
[ -x "$SHORTD" ] || { echo "$BENCH_NAME: $SHORTD is not built (make)" >&2; exit 2; }
command -v wrk >/dev/null || { echo "$BENCH_NAME: wrk is missing (bench/setup.sh)" >&2; exit 2; }
NGINX_BIN=$(command -v nginx || true)
[ -z "$NGINX_BIN" ] && [ -x /usr/sbin/nginx ] && NGINX_BIN=/usr/sbin/nginx
[ -n "$NGINX_BIN" ] || { echo "$BENCH_NAME: nginx is missing (bench/setup.sh)" >&2; exit 2; }

OUT=${OUT:-$(mktemp -d /tmp/shortd-beacon-XXXXXX)}
NCPU=$(nproc)
SERVER_CPUS=0
CLIENT_CPUS=$((NCPU > 1 ? 1 : 0))-$((NCPU - 1))
SPID=""
NPID=""
cleanup() {
    [ -n "$SPID" ] && kill "$SPID" 2>/dev/null && wait "$SPID" 2>/dev/null
    [ -n "$NPID" ] && kill "$NPID" 2>/dev/null && wait "$NPID" 2>/dev/null
    true
}
trap cleanup EXIT

# shortd, on a fresh store with the site bench.example
PORT=""
bench_port SHORTD_PORT
PORT_S=$PORT
"$SHORTD" migrate --db "$OUT/s.db" >/dev/null
KEY=$("$SHORTD" key create --db "$OUT/s.db" --name bench --admin | awk '{print $NF}')
"$SHORTD" site add --db "$OUT/s.db" bench --hosts bench.example >/dev/null
taskset -c "$SERVER_CPUS" "$SHORTD" serve --listen "127.0.0.1:$PORT_S" --db "$OUT/s.db" --threads 1 \
    >"$OUT/shortd.log" 2>&1 &
SPID=$!
PID=$SPID
bench_wait_up "$OUT/shortd.log"

# nginx: 204 to /e, nothing else
PORT=""
bench_port NGINX_PORT
PORT_N=$PORT
mkdir -p "$OUT/nginx"
cat >"$OUT/nginx/nginx.conf" <<CONF
worker_processes 1;
daemon off;
pid $OUT/nginx/nginx.pid;
error_log $OUT/nginx/error.log warn;
events { worker_connections 4096; multi_accept on; }
http {
    access_log off;
    keepalive_requests 100000000;
    client_body_temp_path $OUT/nginx/body;
    server {
        listen 127.0.0.1:$PORT_N reuseport;
        location = /e { return 204; }
        location = /healthz { return 200; }
    }
}
CONF
taskset -c "$SERVER_CPUS" "$NGINX_BIN" -p "$OUT/nginx" -c "$OUT/nginx/nginx.conf" &
NPID=$!
PID=$NPID
PORT=$PORT_N
bench_wait_up "$OUT/nginx/error.log"

run() { # name port
    BENCH_HOST=127.0.0.1:$2 taskset -c "$CLIENT_CPUS" wrk -t"$THREADS" -c"$CONNS" -d"${DURATION}s" \
        -s bench/beacon.lua "http://127.0.0.1:$2/" >"$OUT/wrk-$1.txt" 2>&1
    awk '/Requests\/sec/ {print $2}' "$OUT/wrk-$1.txt"
}
S=$(run shortd "$PORT_S")
N=$(run nginx "$PORT_N")
# Every beacon of the run was a page view of the site: the stats must say
# so once the pipeline has stored them (the mechanics, never a time).
SENT=$(awk '/requests in/ {print $1}' "$OUT/wrk-shortd.txt")
grep -q "Non-2xx" "$OUT/wrk-shortd.txt" && { echo "$BENCH_NAME: shortd answered non-2xx" >&2; exit 1; }
COUNTED=0
for _ in $(seq 100); do
    COUNTED=$(curl -s -H "Authorization: Bearer $KEY" "http://127.0.0.1:$PORT_S/api/sites/bench/stats" |
        node -e 'let t = ""; process.stdin.on("data", (d) => { t += d; });
            process.stdin.on("end", () => { try { console.log(JSON.parse(t).page_views); } catch { console.log(0); } });')
    [ "${COUNTED:-0}" -ge "$SENT" ] && break
    sleep 0.2
done
# wrk counts the answers it read in time; each connection may have had one
# more request answered as the run ended.
[ "${COUNTED:-0}" -ge "$SENT" ] && [ "${COUNTED:-0}" -le $((SENT + CONNS)) ] ||
    { echo "$BENCH_NAME: $SENT beacons sent, ${COUNTED:-0} page views counted" >&2; exit 1; }
echo "counted $COUNTED page views of $SENT beacons"
printf 'shortd  %s beacons/s\nnginx   %s requests/s (204)\nratio   %s\n' "$S" "$N" \
    "$(awk -v s="$S" -v n="$N" 'BEGIN { printf "%.2f", n ? s / n : 0 }')"
echo "wrk output and logs: $OUT"
