#!/usr/bin/env bash
# pg.sh - runs a command against a throwaway PostgreSQL, e.g.
#   tests/pg.sh build/asan/unit_tests
#   tests/pg.sh node --test tests/e2e/pg.test.mjs
# It creates a cluster in a temporary directory (as the postgres user when
# run as root: PostgreSQL refuses to run as root), starts it on a free
# loopback port with its socket in that directory, creates a database,
# applies shortd's migrations with `shortd migrate` ($SHORTD_BIN, default
# build/asan/shortd), exports its URL as SHORTD_TEST_PG, runs the command,
# and always stops PostgreSQL and removes the directory afterwards, whatever
# the command did. Exits with the command's status (or 2 when PostgreSQL
# could not be set up). Durability is switched off: the data is thrown away.
set -euo pipefail
cd "$(dirname "$0")/.."

if [ $# -eq 0 ]; then
    echo "usage: tests/pg.sh COMMAND [ARGS...]" >&2
    exit 2
fi

bindir="$(pg_config --bindir 2>/dev/null || true)"
if [ ! -x "$bindir/initdb" ]; then
    bindir="$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)"
fi
if [ ! -x "$bindir/initdb" ]; then
    echo "pg.sh: PostgreSQL's server programs are not installed (apt-get install postgresql)" >&2
    exit 2
fi
shortd="${SHORTD_BIN:-build/asan/shortd}"
if [ ! -x "$shortd" ]; then
    echo "pg.sh: $shortd is not built (make asan, or set SHORTD_BIN)" >&2
    exit 2
fi

as=()
if [ "$(id -u)" -eq 0 ]; then
    as=(runuser -u postgres --)
fi

tmp="$(mktemp -d /tmp/shortd-pg.XXXXXX)"
[ ${#as[@]} -gt 0 ] && chown postgres: "$tmp"
data="$tmp/data"
started=""

cleanup() {
    if [ -n "$started" ]; then
        "${as[@]}" "$bindir/pg_ctl" -D "$data" -m immediate -w -t 30 stop >/dev/null 2>&1 || true
        # pg_ctl gave up: stop the postmaster by the pid it wrote.
        if [ -f "$data/postmaster.pid" ]; then
            pid="$(head -n 1 "$data/postmaster.pid" 2>/dev/null || true)"
            [ -n "$pid" ] && kill -9 "$pid" 2>/dev/null || true
        fi
    fi
    rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

fail() {
    echo "pg.sh: $*" >&2
    [ -f "$tmp/log" ] && tail -n 20 "$tmp/log" >&2
    exit 2
}

"${as[@]}" "$bindir/initdb" -D "$data" -A trust -U postgres -E UTF8 --locale=C --no-sync \
    >"$tmp/initdb.log" 2>&1 || { cat "$tmp/initdb.log" >&2; fail "initdb failed"; }

# A port nothing listens on; a lost race with another process shows as a
# failed start, and the next port is tried.
port=""
for try in 1 2 3 4 5 6 7 8; do
    p=$((20000 + RANDOM % 12000)) # below the ephemeral range (bench/lib.sh)
    if (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then
        continue
    fi
    opts="-p $p -k $tmp -c listen_addresses=127.0.0.1 -c max_connections=200"
    opts="$opts -c fsync=off -c synchronous_commit=off -c full_page_writes=off"
    if "${as[@]}" "$bindir/pg_ctl" -D "$data" -l "$tmp/log" -w -t 60 -o "$opts" start \
        >/dev/null 2>&1; then
        port="$p"
        started=1
        break
    fi
    started=1   # a half-started server is stopped by cleanup too
    "${as[@]}" "$bindir/pg_ctl" -D "$data" -m immediate -w stop >/dev/null 2>&1 || true
    started=""
    echo "pg.sh: could not start on port $p (try $try)" >&2
done
[ -n "$port" ] || fail "could not start PostgreSQL"

"${as[@]}" "$bindir/psql" -X -q -h "$tmp" -p "$port" -U postgres -d postgres \
    -c "CREATE DATABASE shortd_test" >/dev/null || fail "cannot create the database"
url="postgres://postgres@127.0.0.1:$port/shortd_test"
"$shortd" migrate --store "$url" >"$tmp/migrate.log" 2>&1 ||
    { cat "$tmp/migrate.log" >&2; fail "shortd migrate failed"; }

export SHORTD_TEST_PG="$url"
# How a test stops and restarts this PostgreSQL (fault tests):
#   ${SHORTD_TEST_PGUSER:+runuser -u $SHORTD_TEST_PGUSER --} $SHORTD_TEST_PGCTL -D $SHORTD_TEST_PGDATA \
#       -l $SHORTD_TEST_PGLOG -w -o "$SHORTD_TEST_PGOPTS" start   (and -m fast -w stop)
export SHORTD_TEST_PGCTL="$bindir/pg_ctl"
export SHORTD_TEST_PGDATA="$data"
export SHORTD_TEST_PGOPTS="$opts"
export SHORTD_TEST_PGLOG="$tmp/log"
export SHORTD_TEST_PGUSER="${as[2]:-}"
echo "pg.sh: PostgreSQL $("$bindir/postgres" --version | awk '{print $3}') on 127.0.0.1:$port" >&2
. "$(dirname "$0")/run-child.sh"
run_child "$@"
