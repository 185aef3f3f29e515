#!/bin/bash
# bench/sinkdead.sh - whether a sink that never answers slows redirects.
#
# One fresh shortd (2 event loops) on an empty SQLite file with N links
# made through the API; a wrk run of redirects (bench/redirect.lua, the
# same shape as run.sh's) with no sink; then a webhook sink (every event
# type) pointed at a listener that accepts connections and never answers,
# a few seconds for the delivery thread to be stuck on it, and the same
# wrk run again. Prints both rates and their ratio (with / without); the
# issue wants it at 1 within the noise. Both runs are on one server, so
# the journal and the store are the same; the second run's clicks also
# wait in the journal for the dead sink (it keeps what a sink has not
# taken).
#
#   bench/sinkdead.sh [SHORTD] [SECONDS] [N]     (defaults: build/shortd, 10, 1000)
#
# Loopback only; needs wrk, curl, node and python3. Bounded in time
# (2 × SECONDS + about 30 s).
set -euo pipefail
cd "$(dirname "$0")/.."

SHORTD=${1:-build/shortd}
SECONDS_EACH=${2:-10}
N=${3:-1000}
PORT=${BENCH_SINKDEAD_PORT:-18153}
DEAD_PORT=${BENCH_SINKDEAD_DEAD_PORT:-18154}
[ -x "$SHORTD" ] || { echo "sinkdead.sh: $SHORTD is missing: run 'make' first" >&2; exit 2; }
for t in wrk curl node python3; do
    command -v "$t" >/dev/null || { echo "sinkdead.sh: $t is not installed" >&2; exit 2; }
done

WORK=$(mktemp -d /tmp/shortd-sinkdead.XXXXXX)
PID="" DEAD=""
cleanup() {
    [ -n "$DEAD" ] && kill "$DEAD" 2>/dev/null || true
    if [ -n "$PID" ]; then
        kill -TERM "$PID" 2>/dev/null || true
        wait "$PID" 2>/dev/null || true
    fi
    rm -rf "$WORK"
}
trap cleanup EXIT

# The dead sink: accepts, reads, never answers; holds every connection.
python3 - "$DEAD_PORT" >"$WORK/dead.out" 2>&1 <<'EOF' &
import socket, sys, threading
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", int(sys.argv[1])))
s.listen(1024)
held = []
def hold(c):
    while c.recv(65536):
        pass
while True:
    c, _ = s.accept()
    held.append(c)
    threading.Thread(target=hold, args=(c,), daemon=True).start()
EOF
DEAD=$!

"$SHORTD" migrate --db "$WORK/db" >/dev/null
KEY=$("$SHORTD" key create --db "$WORK/db" --name bench --admin | awk '{print $NF}')
"$SHORTD" serve --listen "127.0.0.1:$PORT" --db "$WORK/db" --threads 2 >"$WORK/out" 2>&1 &
PID=$!
for _ in $(seq 200); do
    curl -s -o /dev/null "http://127.0.0.1:$PORT/healthz" && break
    kill -0 "$PID" 2>/dev/null || { cat "$WORK/out" >&2; exit 1; }
    sleep 0.1
done

# N links, their codes as redirect.lua reads them (8-byte lines), made
# through the API by one node process (a curl a link took seconds).
node -e '
    const [port, key, n] = process.argv.slice(1);
    (async () => {
        for (let i = 1; i <= Number(n); i++) {
            const r = await fetch(`http://127.0.0.1:${port}/api/links`, {
                method: "POST",
                headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
                body: JSON.stringify({ url: `https://example.com/${i}` }),
            });
            const j = await r.json();
            if (r.status !== 201) throw new Error(`create ${i}: ${r.status} ${JSON.stringify(j)}`);
            console.log(j.code);
        }
    })().catch((e) => { console.error(`sinkdead.sh: ${e.message}`); process.exit(1); });
' "$PORT" "$KEY" "$N" >"$WORK/codes.txt"
awk 'length($0) != 7 { bad = 1 } END { exit bad }' "$WORK/codes.txt" ||
    { echo "sinkdead.sh: codes are not 7 characters" >&2; exit 1; }

rate() {
    BENCH_CODES=$WORK/codes.txt BENCH_UAS=bench/uas.txt BENCH_HOST=127.0.0.1:$PORT \
        wrk -t2 -c64 -d"${SECONDS_EACH}s" -s bench/redirect.lua "http://127.0.0.1:$PORT/" |
        awk '/Requests\/sec/ {printf "%.0f", $2}'
}

before=$(rate)
"$SHORTD" sink add --db "$WORK/db" --kind webhook --endpoint "http://127.0.0.1:$DEAD_PORT/hook" >/dev/null
sleep 3 # read within a second; then its first batches are stuck
after=$(rate)
# The lag is counted every 5 s: wait for a count that includes the run.
stuck=0
for _ in $(seq 12); do
    stuck=$(curl -s "http://127.0.0.1:$PORT/metrics" |
        awk '/^shortd_sink_lag_events/ {print $2}' | head -1)
    [ "${stuck:-0}" != 0 ] && break
    sleep 0.5
done
echo "redirects without sinks:         $before/s"
echo "redirects with a dead webhook:   $after/s (its lag: ${stuck:-?} events)"
awk -v a="$after" -v b="$before" 'BEGIN { printf "ratio (with / without): %.3f\n", a / b }'
