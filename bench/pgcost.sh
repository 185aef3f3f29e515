#!/usr/bin/env bash
# pgcost.sh - what storing clicks costs PostgreSQL's server, beside what it
# costs shortd (build/bench/storecost): the server's CPU time per link day,
# merged (STORECOST_MERGE, as before PostgreSQL appended) and appended, then
# compacting the appended rows, twice: into an empty table of day rows, then
# into one that holds every link day. Run inside tests/pg.sh, which starts the
# throwaway server (durability off) and stops it:
#
#   tests/pg.sh bench/pgcost.sh [--links N] [--batches B] [--only-append]
#                               [--also SQL]
#
# --also SQL repeats the appending and compacting on one more copy, with SQL
# run on it first (a schema change to try); --only-append leaves out the
# merging.
#
# The store of N links (bench/run.sh --links N --prepare-only) is copied in
# once with `shortd migrate-store`; each measurement runs on a copy of that
# database of its own (CREATE DATABASE ... TEMPLATE), so each starts from
# the same table. The server's CPU is utime+stime of the postmaster and its
# children from /proc, those that ended (the storecost's backend) included,
# over the step, a VACUUM of the rows it left dead and a CHECKPOINT that
# writes the pages it changed (each would land in a later step otherwise).
# STORECOST=PATH runs another build of storecost (another commit's, to
# compare). Not part of make test.
set -euo pipefail
cd "$(dirname "$0")/.."

N=1000000
BATCHES=10
ALSO=""
MERGE=1
while [ $# -gt 0 ]; do
    case "$1" in
    --links) N="$2"; shift 2 ;;
    --batches) BATCHES="$2"; shift 2 ;;
    --also) ALSO="$2"; shift 2 ;;
    --only-append) MERGE=0; shift ;;
    *) sed -n '2,/^set -e/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//' >&2; exit 2 ;;
    esac
done
: "${SHORTD_TEST_PG:?run me inside tests/pg.sh}"
D="build/bench/data-$N"
[ -s "$D/pristine.db" ] || { echo "pgcost: no store of $N links: run bench/run.sh --links $N --prepare-only first" >&2; exit 1; }
STORECOST=${STORECOST:-build/bench/storecost} # another build to compare with
[ -x "$STORECOST" ] || make --no-print-directory build/bench/storecost >/dev/null
pm=$(head -n 1 "$SHORTD_TEST_PGDATA/postmaster.pid")
base="${SHORTD_TEST_PG%/*}"
hz=$(getconf CLK_TCK)

# utime+stime (and the ended children's) of the postmaster and its children, in ticks
server_ticks() {
    local t=0 p f
    for p in $pm $(pgrep -P "$pm"); do
        f=$(cut -d ')' -f 2 "/proc/$p/stat" 2>/dev/null) || continue
        # fields after the name: state=1 ... utime=12 stime=13 cutime=14 cstime=15
        set -- $f
        t=$((t + ${12} + ${13} + ${14} + ${15}))
    done
    echo "$t"
}

psql_admin() { psql -X -q -At "$base/postgres" -c "$1"; }

echo "pgcost: copying $N links into PostgreSQL (shortd migrate-store)" >&2
build/shortd migrate-store --from "sqlite:$D/pristine.db" --to "$SHORTD_TEST_PG" --progress never >/dev/null
psql -X -q "$SHORTD_TEST_PG" -c "VACUUM ANALYZE" >/dev/null

# A fresh copy of the loaded database; its URL in $copy_url
copy=0
fresh_copy() {
    copy=$((copy + 1))
    psql_admin "CREATE DATABASE pgcost_$copy TEMPLATE shortd_test" >/dev/null
    copy_url="$base/pgcost_$copy"
}

# measure URL WHAT BATCHES [VAR=VALUE...]: storecost's output, then the
# server's CPU per link day stored (per row, for WHAT=compacting)
measure() {
    local url="$1" what="$2" batches="$3"
    shift 3
    local t0 t1 out n
    t0=$(server_ticks)
    out=$(env "$@" "$STORECOST" "$url" "$D/codes.txt" bench/uas.txt "$batches")
    # The dead rows this left are this step's to clean up, not the next's
    # (autovacuum would do it during the next measurement otherwise)
    psql -X -q "$url" -c "VACUUM" -c "CHECKPOINT" >/dev/null
    sleep 1 # the backends' exit reaped into the postmaster's times
    t1=$(server_ticks)
    echo "$out"
    if [ "$what" = compacting ]; then
        n=$(echo "$out" | awk '/^compacted/ {print $2}')
    else
        n=$(echo "$out" | awk -F '\t' '/^[0-9]+\t/ {n += $2} END {print n + 0}')
    fi
    awk -v t=$((t1 - t0)) -v hz="$hz" -v n="${n:-0}" -v w="$what" 'BEGIN {
        printf "server, %s: %.2f s of CPU for %d %s: %.2f us each\n", w, t / hz, n,
            w == "compacting" ? "rows" : "link days", n ? t / hz * 1e6 / n : 0 }'
}

if [ "$MERGE" = 1 ]; then
    echo "== merged into the day rows (STORECOST_MERGE=1), $BATCHES batches"
    fresh_copy
    measure "$copy_url" merging "$BATCHES" STORECOST_MERGE=1
fi
# The same clicks twice (storecost draws the same codes each run): first
# into an empty table of day rows, then into one that holds each link day.
passes() {
    for pass in 1 2; do
        echo "== appended, $BATCHES batches, then compacted (pass $pass$1)"
        measure "$copy_url" appending "$BATCHES" STORECOST_NO_COMPACT=1
        measure "$copy_url" compacting 0
    done
}
fresh_copy
passes ""
if [ -n "$ALSO" ]; then
    fresh_copy
    psql -X -q "$copy_url" -c "$ALSO" >/dev/null
    passes ", after: $ALSO"
fi
