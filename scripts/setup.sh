#!/usr/bin/env bash
# setup.sh - installs, from Debian's packages, what building and testing shortd
# needs. Idempotent and quick when everything is there: it asks dpkg first and
# calls apt-get only for what is missing.
set -euo pipefail

pkgs=(
    build-essential pkg-config
    libuv1-dev node-llhttp libsqlite3-dev libsodium-dev libjansson-dev liburcu-dev zlib1g-dev
    libdeflate-dev  # the click journal's CRC-32 (src/clicks/journal.c)
    libmaxminddb-dev libmaxmind-db-writer-perl libpcre2-dev
    postgresql libpq-dev redis-server libhiredis-dev
    libqrencode-dev libpng-dev
    libssl-dev      # libcrypto: the MD5 and SHA-1 of YOURLS's timestamped signatures
    libcrypt-dev    # libxcrypt's crypt_r: bcrypt hashes of imported Kutt link passwords
    libcsv-dev      # CSV parsing of `shortd import` (src/import/csvread.c)
    libcurl4-openssl-dev  # HTTP client of the event sinks (src/events/) and the alert channels (src/ops/notify.c)
    sqlite3 curl nodejs
    chromium zbar-tools
    # the fuzz targets (make fuzz): clang and its libFuzzer and sanitizer runtimes
    clang libclang-rt-14-dev
    faketime        # moves a running server's wall clock (tests/e2e/clock.test.mjs)
    # the packaging tests (tests/pkg/): the man page rendered, the unit verified,
    # the Debian package checked
    man-db groff-base systemd lintian adduser
    # the container test (tests/pkg/container.sh): rootful podman, runc where crun
    # cannot run (hybrid cgroups), and mmdebstrap to make the Debian 12 base image
    podman runc mmdebstrap
    mariadb-server  # a real mariadb-dump of YOURLS's tables (tests/e2e/import-yourls.test.mjs)
    prometheus      # only its promtool, which checks docs/alerts.yml (tests/e2e/ops.test.mjs)
)

missing=()
for p in "${pkgs[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
# node may come from outside Debian (a newer build on PATH): that is enough.
if command -v node >/dev/null 2>&1; then
    missing=("${missing[@]/nodejs/}")
fi
want=()
for p in "${missing[@]}"; do [ -n "$p" ] && want+=("$p"); done
# npm fetches what package-lock.json pins at build time: the isbot pattern
# list, uPlot for the dashboard, playwright-core for the browser tests
# (which drive Debian's chromium and decode QR codes with zbarimg).
command -v npm >/dev/null 2>&1 || want+=(npm)
[ ${#want[@]} -eq 0 ] && exit 0

echo "setup: installing ${want[*]}"
sudo=""
[ "$(id -u)" -ne 0 ] && sudo="sudo"
export DEBIAN_FRONTEND=noninteractive
if ! $sudo apt-get install -y -q "${want[@]}" >/tmp/shortd-setup.log 2>&1; then
    $sudo apt-get update -q >>/tmp/shortd-setup.log 2>&1
    $sudo apt-get install -y -q "${want[@]}" >>/tmp/shortd-setup.log 2>&1 ||
        { cat /tmp/shortd-setup.log; echo "setup: apt-get install failed" >&2; exit 1; }
fi
# Debian's prometheus package starts its server where an init system runs
# it; the tests need only promtool. A prometheus the install left running is
# stopped, by its own PID (no systemctl in a container).
if [[ " ${want[*]} " == *" prometheus "* ]]; then
    for pid in $(pgrep -x prometheus 2>/dev/null || true); do
        if [ "$(readlink "/proc/$pid/exe" 2>/dev/null)" = /usr/bin/prometheus ]; then
            $sudo kill "$pid" 2>/dev/null || true
        fi
    done
fi
