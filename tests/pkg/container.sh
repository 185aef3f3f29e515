#!/usr/bin/env bash
# container.sh - builds the Containerfile with podman and runs it: the Debian
# 12 base image is made here, without a registry, by mmdebstrap from the
# Debian archive this machine's apt uses (cached as build/container/
# debian-12.tar and imported as localhost/shortd-debian:12), then the image is
# built, started with its port on 127.0.0.1, and must answer its health
# check, a create and a redirect, run as a user other than root, and pass
# `shortd doctor` inside; the container and its volume are removed at the end.
#
# Skips (exit 0, saying why) when podman or mmdebstrap is missing, unless
# SHORTD_CONTAINER_REQUIRED=1. Run as root (rootful podman).
set -euo pipefail
cd "$(dirname "$0")/../.."

BASE_TAG=localhost/shortd-debian:12
IMAGE=localhost/shortd:test
CACHE=build/container
NAME="shortd-test-$$"
start=$(date +%s)

say() { echo "container: $*"; }
die() { echo "container: FAIL: $*" >&2; exit 1; }

for tool in podman mmdebstrap curl; do
    if ! command -v "$tool" >/dev/null 2>&1; then
        [ "${SHORTD_CONTAINER_REQUIRED:-0}" = 1 ] && die "$tool is not installed (scripts/setup.sh installs it)"
        say "skip: $tool is not installed"
        exit 0
    fi
done

# The Debian archive apt uses here (deb822 or one-line sources), for the base.
mirror=$(grep -hoE '^(URIs:|deb) +https?://[^ ]+/debian/?( |$)' /etc/apt/sources.list /etc/apt/sources.list.d/* 2>/dev/null |
    awk '{print $2}' | head -n1 || true)
security=$(grep -hoE '^(URIs:|deb) +https?://[^ ]+/debian-security/?( |$)' /etc/apt/sources.list /etc/apt/sources.list.d/* 2>/dev/null |
    awk '{print $2}' | head -n1 || true)
mirror=${mirror:-http://deb.debian.org/debian}
security=${security:-http://deb.debian.org/debian-security}

mkdir -p "$CACHE"
tar="$CACHE/debian-12.tar"
if [ ! -f "$tar" ] || [ ! -s "$tar" ]; then
    rm -rf "$tar" # a directory an earlier version of this script left
    say "making the Debian 12 base with mmdebstrap from $mirror (once; cached as $tar)"
    # --format: the name ends in .part, from which mmdebstrap would guess a
    # directory, not a tarball
    rm -rf "$tar.part"
    mmdebstrap --quiet --variant=minbase --format=tar bookworm "$tar.part" \
        "deb $mirror bookworm main" "deb $mirror bookworm-updates main" \
        "deb $security bookworm-security main" || die "mmdebstrap failed"
    mv "$tar.part" "$tar"
fi
if ! podman image exists "$BASE_TAG"; then
    podman import --quiet "$tar" "$BASE_TAG" >/dev/null || die "podman import $tar failed"
fi

# podman's defaults (crun, an RLIMIT_NOFILE of 1048576) fail on some hosts:
# crun refuses hybrid cgroups that leave a controller on cgroup v2, and
# without CAP_SYS_RESOURCE no limit may rise above the hard one. runc and
# the limits this shell has then do.
flags=()
if ! err=$(podman run --rm "$BASE_TAG" true 2>&1); then
    say "podman run with its defaults failed ($err); trying runc and this shell's limits"
    command -v runc >/dev/null 2>&1 || die "podman cannot run containers here, and runc is not installed"
    nofile=$(ulimit -Hn)
    [ "$nofile" = unlimited ] && nofile=1048576
    nproc=$(ulimit -Hu)
    { [ "$nproc" = unlimited ] || [ "$nproc" -gt 32768 ]; } && nproc=32768
    flags=(--runtime runc --ulimit "nofile=$nofile:$nofile" --ulimit "nproc=$nproc:$nproc")
    err=$(podman run --rm "${flags[@]}" "$BASE_TAG" true 2>&1) || die "podman cannot run containers here: $err"
fi

# This host's CA bundle goes to the build's npm ci: a proxy that intercepts
# TLS and that this host trusts is then trusted there too.
ca=()
[ -s /etc/ssl/certs/ca-certificates.crt ] && ca=(-v /etc/ssl/certs/ca-certificates.crt:/etc/build-ca.crt:ro)
say "building $IMAGE from the Containerfile"
podman build "${flags[@]}" "${ca[@]}" --format docker --build-arg "BASE=$BASE_TAG" \
    --build-arg "COMMIT=$(git describe --always --dirty 2>/dev/null || echo unknown)" -t "$IMAGE" . \
    >"$CACHE/build.log" 2>&1 || { tail -n 40 "$CACHE/build.log"; die "podman build failed (log: $CACHE/build.log)"; }

port=$(node -e "const s=require('net').createServer().listen(0,'127.0.0.1',()=>{console.log(s.address().port);s.close()})")
cleanup() { podman rm -f -v "$NAME" >/dev/null 2>&1 || true; }
trap cleanup EXIT
# (Without systemd, podman says it cannot schedule the health check's timer;
# `podman healthcheck run` below runs it all the same.)
podman run -d --name "$NAME" "${flags[@]}" -p "127.0.0.1:$port:8080" "$IMAGE" >/dev/null \
    2>"$CACHE/run.log" || { cat "$CACHE/run.log"; die "podman run $IMAGE failed"; }
url="http://127.0.0.1:$port"

for _ in $(seq 1 100); do
    curl -fsS -o /dev/null "$url/healthz" 2>/dev/null && break
    sleep 0.2
done
curl -fsS "$url/healthz" >/dev/null || { podman logs "$NAME" | tail -n 20; die "no answer on $url/healthz"; }
podman healthcheck run "$NAME" || die "the image's HEALTHCHECK failed"
uid=$(podman exec "$NAME" id -u)
[ "$uid" != 0 ] || die "shortd runs as root in the container"

# The first start's setup URL makes the first admin; a script's key comes
# from `shortd key create` in the container.
setup=$(podman exec "$NAME" cat /var/lib/shortd/shortd.db.setup-url)
token=$(printf '%s' "$setup" | sed -n 's/.*[?&]token=\([A-Za-z0-9_-]*\).*/\1/p')
[ -n "$token" ] || die "no setup URL in /var/lib/shortd/shortd.db.setup-url"
made=$(curl -sS -o /dev/null -w '%{http_code}' -H 'Content-Type: application/json' \
    -d "{\"token\":\"$token\",\"name\":\"admin\",\"password\":\"container-password\"}" "$url/api/setup")
[ "$made" = 201 ] || die "POST /api/setup answered $made"
key=$(podman exec "$NAME" shortd key create --db /var/lib/shortd/shortd.db --name container-test --admin |
    awk '{w=$NF} END {print w}')
[ -n "$key" ] || die "shortd key create in the container made no key"
dest="https://example.com/from-a-container?x=1"
created=$(curl -fsS -H "Authorization: Bearer $key" -H 'Content-Type: application/json' \
    -d "{\"url\":\"$dest\"}" "$url/api/links") || die "POST /api/links failed"
code=$(node -e 'console.log(JSON.parse(process.argv[1]).code)' "$created")
got=$(curl -sS -o /dev/null -w '%{http_code} %{redirect_url}' "$url/$code")
[ "$got" = "302 $dest" ] || die "GET /$code answered '$got', not '302 $dest'"

want=$(git describe --always --dirty 2>/dev/null || echo unknown)
version=$(podman exec "$NAME" shortd --version)
case "$version" in *"($want)"*) ;; *) die "the image's shortd --version says '$version', not the commit $want" ;; esac
podman exec "$NAME" shortd doctor >"$CACHE/doctor.txt" ||
    { cat "$CACHE/doctor.txt"; die "shortd doctor in the container found a failure"; }

say "ok: built, healthy, created /$code and redirected it, as uid $uid, doctor clean ($(($(date +%s) - start)) s)"
