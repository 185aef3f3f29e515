# bench/lib.sh - what the ad-hoc benchmark scripts (flood404.sh, search.sh,
# uaflood.sh) share: sourced, never run. Each function exits the script
# with a message naming it ($BENCH_NAME) when it cannot do its part.

# For a script taking [SHORTD] [sqlite|pg|both] (its path $1, then those):
# 'both' runs it once per store; 'pg' runs it under tests/pg.sh (a
# throwaway server) unless one is given; returns when this run is to be
# made here.
bench_stores() {
    local self=$1 shortd=$2 stores=$3
    case "$stores" in
    sqlite | pg) ;;
    both)
        "$self" "$shortd" sqlite
        exec "$self" "$shortd" pg
        ;;
    *) echo "usage: $self [SHORTD] [sqlite|pg|both]" >&2; exit 2 ;;
    esac
    [ -x "$shortd" ] || { echo "$BENCH_NAME: $shortd is not built (make)" >&2; exit 2; }
    if [ "$stores" = pg ] && [ -z "${SHORTD_TEST_PG:-}" ]; then
        SHORTD_BIN=$shortd exec tests/pg.sh "$self" "$shortd" pg
    fi
}

# build/bench/loadgen, rebuilt when bench/loadgen.c is newer.
bench_loadgen() {
    LOADGEN=build/bench/loadgen
    if [ ! -x "$LOADGEN" ] || [ bench/loadgen.c -nt "$LOADGEN" ]; then
        mkdir -p build/bench
        cc -O2 -Wall -Wextra -o "$LOADGEN" bench/loadgen.c
    fi
}

# PORT: the one given (refused when in use), else a free one (a lost race
# shows as a failed start). $1 names the variable that sets it, for the
# message. Drawn below the kernel's ephemeral range (32768 and up): a port
# there may be the local end of an outbound connection, and bind() fails on
# it although nothing listens.
bench_port() {
    for _ in 1 2 3 4 5 6 7 8; do
        [ -n "$PORT" ] && break
        local p=$((20000 + RANDOM % 12000))
        (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null || PORT=$p
    done
    if (exec 3<>"/dev/tcp/127.0.0.1/$PORT") 2>/dev/null; then
        echo "$BENCH_NAME: port $PORT is in use (set $1)" >&2
        exit 2
    fi
}

# Waits (60 s at most) until the server of PID answers /healthz on PORT;
# its output ($1) is shown when it has exited instead.
bench_wait_up() {
    for _ in $(seq 600); do
        curl -s -o /dev/null "http://127.0.0.1:$PORT/healthz" && return 0
        kill -0 "$PID" 2>/dev/null || { cat "$1" >&2; exit 1; }
        sleep 0.1
    done
    echo "$BENCH_NAME: the server did not answer within 60 s" >&2
    exit 1
}
