#!/usr/bin/env bash
# install.sh - make install into a scratch PREFIX (and DESTDIR): every file
# lands where it should, the installed binary runs, the unit passes
# `systemd-analyze verify` and its exposure is what the README quotes, the
# completion is installed; make uninstall removes everything but the config.
# Needs a release build (make all).
set -euo pipefail
cd "$(dirname "$0")/../.."

fail() { echo "install.sh: FAIL: $*" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# DESTDIR: the staged tree of a package build.
make --no-print-directory install DESTDIR="$tmp/stage" PREFIX=/usr >/dev/null
for f in usr/bin/shortd usr/share/man/man1/shortd.1 usr/lib/systemd/system/shortd.service \
    usr/share/bash-completion/completions/shortd etc/shortd/shortd.conf \
    usr/share/doc/shortd/shortd.conf.example usr/share/doc/shortd/LICENSE; do
    [ -f "$tmp/stage/$f" ] || fail "make install DESTDIR=... did not install /$f"
done
grep -qx 'ExecStart=/usr/bin/shortd serve --config /etc/shortd/shortd.conf' \
    "$tmp/stage/usr/lib/systemd/system/shortd.service" || fail "the unit's ExecStart is not /usr/bin/shortd"
grep -qx 'db = /var/lib/shortd/shortd.db' "$tmp/stage/etc/shortd/shortd.conf" ||
    fail "the installed config does not keep the data in /var/lib/shortd"
# The installed config is a valid one: serve --help with it parses it... and
# every setting of the example is in it.
diff <(sed 's|^db = .*|db = /var/lib/shortd/shortd.db|' "$tmp/stage/usr/share/doc/shortd/shortd.conf.example") \
    "$tmp/stage/etc/shortd/shortd.conf" >/dev/null || fail "the config differs from the example beyond db"

# An existing config is never overwritten.
echo "log-level = warn" >"$tmp/stage/etc/shortd/shortd.conf"
make --no-print-directory install DESTDIR="$tmp/stage" PREFIX=/usr >/dev/null
grep -qx 'log-level = warn' "$tmp/stage/etc/shortd/shortd.conf" || fail "make install overwrote the config"

# PREFIX: a tree the unit can be verified in (its ExecStart names BINDIR).
p=$tmp/prefix
make --no-print-directory install PREFIX="$p" SYSCONFDIR="$p/etc" >/dev/null
"$p/bin/shortd" --version | grep -q "^shortd $(cat VERSION) (" || fail "the installed binary does not run"
unit=$p/lib/systemd/system/shortd.service
grep -q "^ExecStart=$p/bin/shortd serve " "$unit" || fail "ExecStart does not follow PREFIX"
out=$(MANPATH=$p/share/man systemd-analyze verify "$unit" 2>&1) || fail "systemd-analyze verify: $out"
[ -z "$out" ] || fail "systemd-analyze verify warns: $out"
exposure=$(systemd-analyze security --offline=yes "$unit" 2>&1 | sed -n 's/.*Overall exposure level for shortd.service: \([0-9.]*\).*/\1/p')
[ -n "$exposure" ] || fail "systemd-analyze security gave no exposure figure"
grep -q "exposure level of $exposure" README.md ||
    fail "systemd-analyze security says $exposure; the README quotes another figure"
MANPATH=$p/share/man man -w shortd >/dev/null || fail "man does not find the installed page"

make --no-print-directory uninstall PREFIX="$p" SYSCONFDIR="$p/etc" >/dev/null
left=$(cd "$p" && find . -type f | sort)
[ "$left" = "./etc/shortd/shortd.conf" ] || fail "make uninstall left: $left"

echo "install.sh: ok (exposure $exposure)"
