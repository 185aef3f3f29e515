#!/usr/bin/env bash
# test.sh - every test of `make test`: the C unit tests, then the end-to-end
# tests that start the real (sanitizer-built) binary and talk HTTP to it, then
# the dashboard's tests in a real browser against that binary, then a smoke
# run of the benchmark script.
# Exits non-zero when any test fails.
set -uo pipefail
cd "$(dirname "$0")/.."

export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0:exitcode=23}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"
export TSAN_OPTIONS="${TSAN_OPTIONS:-halt_on_error=1:second_deadlock_stack=1}"
export SHORTD_BIN="${SHORTD_BIN:-build/asan/shortd}"

status=0
# Each section's header says when it began, to find what makes the suite long.
T0=$(date +%s)
section() { echo "== $1 [at $(($(date +%s) - T0)) s]"; }
section "unit tests (build/asan/unit_tests, SQLite, a throwaway PostgreSQL and Redis)"
tests/pg.sh tests/redis.sh build/asan/unit_tests || status=1

# The same tests built with ThreadSanitizer: a race or lock-order report
# stops the run with exit 66 (halt_on_error), so it fails the suite.
# Skipped there: single-threaded tests that are slow under TSan (half of
# its time) and have no threads for it to watch; ASan runs them.
section "unit tests under ThreadSanitizer (build/tsan/unit_tests, a report fails them)"
UNIT_SKIP=classify_,day_every_day,scramble_,sqlgen_,rfc3339_,cache_grow_and_churn \
    tests/pg.sh tests/redis.sh build/tsan/unit_tests || status=1

section "fuzz smoke pass (make fuzz-smoke: each fuzz/*.c target for seconds, its regressions replayed)"
make --no-print-directory -j"$(nproc)" fuzz-smoke || status=1

# The page script's source (web/site/) under node on a fake window: the
# payload of every beacon; the built script in Chromium is tests/browser/.
section "page script (node --test tests/site/)"
node --test tests/site/ || status=1

# Four files at a time on any machine: many tests wait on a server's timers
# (sweeps, metrics, alert confirmations), and at two the cores sat idle for
# 43 % of the section.
section "end-to-end tests ($SHORTD_BIN, node --test, with a throwaway PostgreSQL)"
tests/pg.sh node --test --test-concurrency=4 tests/e2e/ || status=1

section "end-to-end tests on PostgreSQL (SHORTD_E2E_STORE=pg: every server on a schema of its own)"
tests/pg.sh env SHORTD_E2E_STORE=pg node --test --test-concurrency=4 tests/e2e/ || status=1

# The cluster: several nodes on one PostgreSQL and one Redis, which the tests
# stop and restart, so it gets servers of its own.
section "cluster tests (4 nodes, PostgreSQL and Redis stopped under load)"
tests/pg.sh tests/redis.sh node --test tests/e2e/cluster.test.mjs || status=1
section "cluster rate limit tests (2 nodes sharing limits through Redis, Redis killed)"
tests/pg.sh tests/redis.sh node --test tests/e2e/cluster-ratelimit.test.mjs || status=1
section "cluster blocklist tests (2 nodes: a host blocked on one is refused by the other)"
tests/pg.sh tests/redis.sh node --test tests/e2e/cluster-blocklist.test.mjs || status=1
section "cluster key tests (2 nodes: a key revoked with the CLI is refused by both)"
tests/pg.sh tests/redis.sh node --test tests/e2e/cluster-keys.test.mjs || status=1
section "cluster session tests (2 nodes: a sign-in on one works on the other, a sign-out ends it on both)"
tests/pg.sh tests/redis.sh node --test tests/e2e/cluster-sessions.test.mjs || status=1
# One node with PostgreSQL, then Redis, frozen (SIGSTOP) for 10 s under load:
# it stops the servers it shares, so they are its own too (about 30 s).
section "storage frozen (PostgreSQL, then Redis, SIGSTOPped under load: cached redirects keep their latency)"
tests/pg.sh tests/redis.sh env SHORTD_E2E_STORE=pg node --test tests/e2e/storage-freeze.test.mjs || status=1
# Two nodes alerting on one PostgreSQL, frozen under them: it stops the
# servers it shares, so it runs alone too (about 40 s).
section "alerts of a cluster (2 nodes, one sends; PostgreSQL frozen: one alert, one all-clear)"
tests/pg.sh tests/redis.sh env SHORTD_E2E_STORE=pg node --test --test-name-pattern='two nodes' \
    tests/e2e/alerts.test.mjs || status=1

# The packaging, with the release binary `make test` built: make install into
# scratch trees, then the Debian package installed, run as its own user and
# purged (as root only; the machine is a throwaway one in CI).
section "packaging (make install into a DESTDIR, make deb, dpkg -i, run, dpkg --purge)"
tests/pkg/install.sh || status=1
tests/pkg/deb.sh || status=1
# The Containerfile: a Debian 12 base made by mmdebstrap (cached in
# build/container/), podman build, then the image must answer a create and a
# redirect; it skips where podman is missing.
section "container (tests/pkg/container.sh: podman build, run, create and redirect)"
tests/pkg/container.sh || status=1

# The dashboard in Debian's chromium (playwright-core, from package-lock.json),
# against the same binary; screenshots land in tests/browser/screenshots/.
section "browser tests (chromium, node --test)"
node --test tests/browser/ || status=1

# The benchmark's own script, so it cannot rot: 1,000 links, 1 s runs, one
# pair, both layouts, against nginx, with the release binary `make test`
# built; it checks its mechanics (the click count among them), never a time.
section "benchmark smoke run (bench/run.sh --smoke)"
{ bench/setup.sh && bench/run.sh --smoke --out build/bench/smoke-results; } || status=1
# ... and the two one-server scripts, on the 1,000 links it prepared.
section "bench/mixed.sh and bench/contention.sh on 1,000 links"
MIXED_SMOKE=1 bench/mixed.sh build/shortd 1000 || status=1
CONTENTION_HOGS=1 CONTENTION_LIMIT=20 bench/contention.sh build/shortd 1000 || status=1
# The import benchmark's script on a small YOURLS dump, into SQLite and a
# throwaway PostgreSQL: it checks every link and log row arrives, never a time.
section "import benchmark smoke run (bench/import.sh --smoke: 2,000 links, 20,000 log rows)"
bench/import.sh --smoke build/shortd || status=1
# The page beacon's benchmark: a 1 s run against nginx; checks that every
# beacon sent is a page view in the stats, never a time.
section "beacon benchmark smoke run (bench/beacon.sh --smoke)"
bench/beacon.sh --smoke || status=1
section "dead sink benchmark smoke run (bench/sinkdead.sh: 1 s runs, 100 links)"
bench/sinkdead.sh build/shortd 1 100 || status=1

section "done"
exit $status
