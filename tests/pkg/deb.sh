#!/usr/bin/env bash
# deb.sh - the Debian package, as root on a throwaway machine (CI): make deb,
# dpkg -i, the shortd user and /var/lib/shortd exist; the installed
# /usr/bin/shortd started the way the unit starts it (as shortd, in
# /var/lib/shortd, with /etc/shortd/shortd.conf, no new privileges; there is
# no running systemd here: setpriv, which execs it as runuser would not) writes
# its setup URL (0600, the shortd user's), which makes the first admin; a key
# made with `shortd key create` as that user creates a link and redirects it; SIGTERM
# stops it cleanly; dpkg --purge leaves nothing behind. make deb builds its own
# hardened binary (build/hardened).
# Skipped when not root, or when a shortd package or user is already there.
set -euo pipefail
cd "$(dirname "$0")/../.."

fail() { echo "deb.sh: FAIL: $*" >&2; exit 1; }
if [ "$(id -u)" -ne 0 ]; then
    echo "deb.sh: skipped: dpkg -i needs root"
    exit 0
fi
if dpkg-query -W shortd >/dev/null 2>&1 || getent passwd shortd >/dev/null; then
    echo "deb.sh: skipped: a shortd package or user is already on this machine"
    exit 0
fi

deb=$(make --no-print-directory deb | tail -1)
[ -f "$deb" ] || fail "make deb made no package"
if command -v lintian >/dev/null; then
    lintian --fail-on error,warning "$deb" 2>&1 | grep -v 'running with root privileges' || true
    lintian --fail-on error,warning "$deb" >/dev/null 2>&1 || fail "lintian finds errors or warnings"
fi

pid=
cleanup() {
    [ -n "$pid" ] && kill "$pid" 2>/dev/null
    dpkg --purge shortd >/dev/null 2>&1 || true
}
trap cleanup EXIT

dpkg -i "$deb" >/dev/null || fail "dpkg -i $deb"
getent passwd shortd >/dev/null || fail "no shortd user after install"
[ "$(stat -c '%U %a' /var/lib/shortd)" = "shortd 750" ] || fail "/var/lib/shortd is $(stat -c '%U %a' /var/lib/shortd)"
[ "$(stat -c '%U:%G %a' /etc/shortd/shortd.conf)" = "root:shortd 640" ] ||
    fail "/etc/shortd/shortd.conf is $(stat -c '%U:%G %a' /etc/shortd/shortd.conf)"
/usr/bin/shortd --version | grep -q "^shortd $(cat VERSION) " || fail "the installed binary does not run"
man -w shortd >/dev/null || fail "man does not find shortd(1)"

# The unit's command line, as its user, in its working directory; the port
# comes from a flag (over the config file's listen).
port=$(node -e 'const s = require("net").createServer().listen(0, "127.0.0.1", () => { console.log(s.address().port); s.close(); })')
exec_start=$(sed -n 's/^ExecStart=//p' /lib/systemd/system/shortd.service)
log=$(mktemp)
(cd /var/lib/shortd && umask 0077 && exec setpriv --reuid=shortd --regid=shortd --clear-groups \
    --no-new-privs $exec_start --listen "127.0.0.1:$port") >"$log" 2>&1 &
pid=$!
for _ in $(seq 100); do
    curl -sf "http://127.0.0.1:$port/healthz" >/dev/null 2>&1 && break
    sleep 0.1
done
curl -sf "http://127.0.0.1:$port/healthz" >/dev/null || { cat "$log"; fail "the installed shortd does not answer"; }
setupfile=/var/lib/shortd/shortd.db.setup-url
for _ in $(seq 50); do [ -s "$setupfile" ] && break; sleep 0.1; done
[ "$(stat -c '%U %a' "$setupfile")" = "shortd 600" ] || fail "$setupfile is $(stat -c '%U %a' "$setupfile")"
token=$(sed -n 's/.*[?&]token=\([A-Za-z0-9_-]*\).*/\1/p' "$setupfile")
[ -n "$token" ] || fail "no setup token in $setupfile"
grep -q "$token" "$log" && fail "the log holds the setup token"
made=$(curl -s -o /dev/null -w '%{http_code}' -H 'Content-Type: application/json' \
    -d "{\"token\":\"$token\",\"name\":\"admin\",\"password\":\"deb-test-password\"}" \
    "http://127.0.0.1:$port/api/setup")
[ "$made" = 201 ] || { cat "$log"; fail "POST /api/setup answered $made"; }
key=$(cd /var/lib/shortd && setpriv --reuid=shortd --regid=shortd --clear-groups \
    /usr/bin/shortd key create --db /var/lib/shortd/shortd.db --name deb-test --admin | awk '{w=$NF} END {print w}')
[ -n "$key" ] || fail "shortd key create as the shortd user made no key"
code=$(curl -sf -X POST -H "Authorization: Bearer $key" -H 'Content-Type: application/json' \
    -d '{"url":"https://example.com/from-the-deb"}' "http://127.0.0.1:$port/api/links" |
    node -e 'let b = ""; process.stdin.on("data", (d) => b += d).on("end", () => console.log(JSON.parse(b).code))') ||
    { cat "$log"; fail "create"; }
where=$(curl -s -o /dev/null -w '%{http_code} %{redirect_url}' "http://127.0.0.1:$port/$code")
[ "$where" = "302 https://example.com/from-the-deb" ] || fail "GET /$code answered '$where'"
kill -TERM "$pid"
wait "$pid" || { cat "$log"; fail "shortd did not stop cleanly on SIGTERM"; }
pid=
grep -q 'stopped' "$log" || fail "no 'stopped' in the log"
[ -s /var/lib/shortd/shortd.db ] || fail "no database in /var/lib/shortd"

dpkg --purge shortd >/dev/null || fail "dpkg --purge"
left=""
for p in /usr/bin/shortd /etc/shortd /var/lib/shortd /lib/systemd/system/shortd.service \
    /etc/systemd/system/multi-user.target.wants/shortd.service \
    /usr/share/man/man1/shortd.1.gz /usr/share/bash-completion/completions/shortd /usr/share/doc/shortd; do
    [ -e "$p" ] && left="$left $p"
done
getent passwd shortd >/dev/null && left="$left user:shortd"
getent group shortd >/dev/null && left="$left group:shortd"
dpkg-query -W shortd >/dev/null 2>&1 && left="$left dpkg:shortd"
[ -z "$left" ] || fail "left after dpkg --purge:$left"
rm -f "$log"
echo "deb.sh: ok ($deb: installed, served a create and a redirect as user shortd, purged)"
