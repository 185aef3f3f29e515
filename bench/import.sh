#!/usr/bin/env bash
# bench/import.sh - the import benchmark (issue 26): `shortd import yourls`
# of a YOURLS mysqldump into a fresh SQLite store and into PostgreSQL,
# timed; prints the wall time, links/s and visits/s of each, and checks that
# the import's summary counts every link and log row of the dump.
#
#   bench/import.sh [--smoke] [--links N] [--visits M] [--stores sqlite|pg|both] [SHORTD]
#
# Defaults: 1,000,000 links and 10,000,000 log rows, both stores, the
# release binary build/shortd. --smoke: 2,000 links and 20,000 rows, for
# scripts/test.sh (checks the mechanics, never a time). The dump is made
# once by tests/data/make-yourls.mjs (--plain: no awkward rows) and kept in
# build/bench/import/; each run imports into a new store in a scratch
# folder there. PostgreSQL is tests/pg.sh's throwaway server (durability
# off: its figures are the store's work, not the disk's) unless
# SHORTD_TEST_PG names one; each run gets a schema of its own.
set -euo pipefail
cd "$(dirname "$0")/.."

links=1000000 visits=10000000 stores=both shortd=build/shortd
while [ $# -gt 0 ]; do
    case "$1" in
    --smoke) links=2000 visits=20000 ;;
    --links) links=$2; shift ;;
    --visits) visits=$2; shift ;;
    --stores) stores=$2; shift ;;
    -*) echo "usage: bench/import.sh [--smoke] [--links N] [--visits M] [--stores sqlite|pg|both] [SHORTD]" >&2; exit 2 ;;
    *) shortd=$1 ;;
    esac
    shift
done
case "$stores" in sqlite | pg | both) ;; *) echo "import.sh: --stores sqlite|pg|both" >&2; exit 2 ;; esac
[ -x "$shortd" ] || { echo "import.sh: $shortd is not built (make)" >&2; exit 2; }

# PostgreSQL: run the pg part under tests/pg.sh when no server is given.
if [ "$stores" = both ]; then
    "$0" --links "$links" --visits "$visits" --stores sqlite "$shortd"
    exec "$0" --links "$links" --visits "$visits" --stores pg "$shortd"
fi
if [ "$stores" = pg ] && [ -z "${SHORTD_TEST_PG:-}" ]; then
    SHORTD_BIN=$shortd exec tests/pg.sh "$0" --links "$links" --visits "$visits" --stores pg "$shortd"
fi

data=build/bench/import
mkdir -p "$data"
dump=$data/yourls-$links-$visits.sql
expect=$data/yourls-$links-$visits.json
if [ ! -s "$dump" ] || [ ! -s "$expect" ] || [ tests/data/make-yourls.mjs -nt "$dump" ]; then
    echo "import.sh: making $dump ($links links, $visits log rows)"
    node tests/data/make-yourls.mjs --plain --links "$links" --visits "$visits" \
        --out "$dump.tmp" --expect "$expect"
    mv "$dump.tmp" "$dump"
fi
want_links=$(node -e 'console.log(JSON.parse(require("fs").readFileSync(process.argv[1])).links)' "$expect")
want_visits=$(node -e 'console.log(JSON.parse(require("fs").readFileSync(process.argv[1])).visits)' "$expect")

work=$(mktemp -d "$data/run.XXXXXX")
schema=""
cleanup() {
    rm -rf "$work"
    if [ -n "$schema" ]; then
        psql -X -q -d "$SHORTD_TEST_PG" -c "DROP SCHEMA IF EXISTS $schema CASCADE" >/dev/null 2>&1 || true
    fi
}
trap cleanup EXIT

if [ "$stores" = sqlite ]; then
    target=(--db "$work/shortd.db")
else
    schema=bench_import_$$
    PGOPTIONS='-c client_min_messages=warning' psql -X -q -v ON_ERROR_STOP=1 -d "$SHORTD_TEST_PG" \
        -c "DROP SCHEMA IF EXISTS $schema CASCADE; CREATE SCHEMA $schema"
    sep='?'
    case "$SHORTD_TEST_PG" in *\?*) sep='&' ;; esac
    target=(--store "$SHORTD_TEST_PG${sep}options=-csearch_path%3D$schema")
fi
"$shortd" migrate "${target[@]}" >/dev/null
"$shortd" key create "${target[@]}" --name bench --admin >/dev/null

# The reader reads the dump twice (links, then the log) and reports its
# progress in bytes of both passes: the progress line crossing half its total
# is the end of the links' pass, which splits the wall time in two. A
# history larger than memory is stored after the log (a "history:" line):
# its first line's time is the end of reading the log.
load=$(cut -d' ' -f1-3 /proc/loadavg)
start=$(date +%s.%N)
"$shortd" import yourls "$dump" "${target[@]}" --json --progress always 2>&1 >"$work/summary.json" |
    node -e '
const t0 = Date.now();
let half = null, history = null, rest = "";
process.stdin.setEncoding("utf8");
process.stdin.on("data", (d) => {
  const parts = (rest + d).split(/[\r\n]/);
  rest = parts.pop();
  for (const p of parts) {
    if (history === null && /^history: /.test(p.trim())) history = Date.now() - t0;
    const m = /^import: ([\d,]+) of ([\d,]+) bytes/.exec(p.trim());
    if (!m) { if (p.trim() && !/^history: /.test(p.trim())) process.stderr.write(p + "\n"); continue; }
    const done = Number(m[1].replace(/,/g, "")), total = Number(m[2].replace(/,/g, ""));
    if (half === null && done >= total / 2) half = Date.now() - t0;
  }
});
process.stdin.on("end", () => console.log([half, history].map((t) => t === null ? "" : (t / 1000).toFixed(1)).join(" ")));
' >"$work/links-secs" 2>"$work/stderr" ||
    { tail -n 20 "$work/stderr" >&2; echo "import.sh: the import failed" >&2; exit 1; }
end=$(date +%s.%N)

read -r link_secs history_at <"$work/links-secs" || true
node - "$work/summary.json" "$stores" "$links" "$visits" "$want_links" "$want_visits" "$start" "$end" "$load" \
    "${link_secs:-}" "${history_at:-}" <<'EOF'
const [file, store, links, visits, wantLinks, wantVisits, start, end, load, linkSecs, historyAt] = process.argv.slice(2);
const s = JSON.parse(require('fs').readFileSync(file, 'utf8').trim().split('\n').pop());
const secs = Number(end) - Number(start);
const fmt = (n) => Math.round(n).toLocaleString('en-US');
const split = linkSecs
  ? `links ${Number(linkSecs).toFixed(1)} s (${fmt(s.links_imported / linkSecs)}/s), ` +
    `log ${(secs - linkSecs).toFixed(1)} s (${fmt(s.visits / (secs - linkSecs))} visits/s` +
    (historyAt ? `; read ${(historyAt - linkSecs).toFixed(1)} s, history stored ${(secs - historyAt).toFixed(1)} s)` : ')')
  : `${fmt(s.links_imported / secs)} links/s, ${fmt(s.visits / secs)} visits/s over the whole`;
console.log(`import.sh: ${store}: ${fmt(links)} links + ${fmt(visits)} log rows in ${secs.toFixed(1)} s: ` +
            `${split} (bots ${fmt(s.visit_bots)}; load before: ${load})`);
const bad = [];
if (s.links_imported !== Number(wantLinks)) bad.push(`links imported ${s.links_imported}, not ${wantLinks}`);
if (s.visits !== Number(wantVisits)) bad.push(`visits ${s.visits}, not ${wantVisits}`);
if (s.refused !== 0) bad.push(`${s.refused} rows refused`);
if (bad.length) { console.error(`import.sh: ${store}: ${bad.join('; ')}`); process.exit(1); }
EOF
