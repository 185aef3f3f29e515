#!/usr/bin/env bash
# redis.sh - runs a command against a throwaway Redis, e.g.
#   tests/redis.sh build/asan/unit_tests
#   tests/pg.sh tests/redis.sh build/asan/unit_tests     (both servers)
# It writes a config into a temporary directory (loopback only, a free port,
# no persistence: save "" and appendonly no; DEBUG allowed from loopback, for
# tests that stall Redis with DEBUG SLEEP; pid file and log in that
# directory), starts redis-server with it, exports its URL as
# SHORTD_TEST_REDIS and the config's path as SHORTD_TEST_REDIS_CONF (a test
# that stops Redis starts it again with `redis-server CONF --daemonize yes`,
# on the same port, writing the same pid file), runs the command, and always
# stops Redis by its pid (the pid file's too, after such a restart) and
# removes the directory afterwards, whatever the command did. Exits with the
# command's status (or 2 when Redis could not be started).
set -euo pipefail
cd "$(dirname "$0")/.."

if [ $# -eq 0 ]; then
    echo "usage: tests/redis.sh COMMAND [ARGS...]" >&2
    exit 2
fi
server="$(command -v redis-server || true)"
if [ -z "$server" ]; then
    echo "redis.sh: redis-server is not installed (apt-get install redis-server)" >&2
    exit 2
fi

tmp="$(mktemp -d /tmp/shortd-redis.XXXXXX)"
conf="$tmp/redis.conf"
pid=""

# Stops one pid: TERM, then KILL if it is still there after 5 s.
stop_pid() {
    local p="$1"
    kill -TERM "$p" 2>/dev/null || return 0
    for _ in $(seq 50); do
        kill -0 "$p" 2>/dev/null || return 0
        sleep 0.1
    done
    kill -KILL "$p" 2>/dev/null || true
}

cleanup() {
    [ -n "$pid" ] && stop_pid "$pid"
    if [ -f "$tmp/redis.pid" ]; then
        p="$(head -n 1 "$tmp/redis.pid" 2>/dev/null || true)"
        [ -n "$p" ] && stop_pid "$p"
    fi
    rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# Answers PING within a second?
alive() {
    local reply=""
    exec 3<>"/dev/tcp/127.0.0.1/$1" || return 1
    printf 'PING\r\n' >&3
    read -r -t 1 reply <&3 || true
    exec 3<&- 3>&-
    [ "${reply%$'\r'}" = "+PONG" ]
}

# A port nothing listens on; a lost race with another process shows as a
# server that exits at once, and the next port is tried.
port=""
for try in 1 2 3 4 5 6 7 8; do
    p=$((20000 + RANDOM % 12000)) # below the ephemeral range (bench/lib.sh)
    if (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then
        continue
    fi
    cat >"$conf" <<EOF
bind 127.0.0.1
port $p
dir $tmp
pidfile $tmp/redis.pid
logfile $tmp/redis.log
save ""
appendonly no
daemonize no
enable-debug-command local
EOF
    "$server" "$conf" --save '' --appendonly no &
    pid=$!
    for _ in $(seq 50); do
        kill -0 "$pid" 2>/dev/null || break
        if alive "$p" 2>/dev/null; then
            port="$p"
            break
        fi
        sleep 0.1
    done
    [ -n "$port" ] && break
    stop_pid "$pid"
    pid=""
    echo "redis.sh: could not start on port $p (try $try)" >&2
done
if [ -z "$port" ]; then
    [ -f "$tmp/redis.log" ] && tail -n 20 "$tmp/redis.log" >&2
    echo "redis.sh: could not start Redis" >&2
    exit 2
fi

export SHORTD_TEST_REDIS="redis://127.0.0.1:$port"
export SHORTD_TEST_REDIS_CONF="$conf"
version="$("$server" --version | sed -n 's/.* v=\([^ ]*\).*/\1/p')"
echo "redis.sh: Redis $version on 127.0.0.1:$port" >&2
. "$(dirname "$0")/run-child.sh"
run_child "$@"
