#!/usr/bin/env bash
# bench/setup.sh - installs, from Debian's packages, what the benchmark needs
# beyond the build (scripts/setup.sh): nginx (the baseline), wrk (the load),
# gnuplot (the chart), util-linux's taskset, sqlite3 (loading links), procps.
# Idempotent and quick when everything is there: asks dpkg first, calls
# apt-get only for what is missing. nginx's package must not start a system
# nginx: the benchmark runs its own on its own port.
set -euo pipefail

pkgs=(nginx wrk gnuplot-nox sqlite3 util-linux procps gcc)

missing=()
for p in "${pkgs[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
# any gnuplot will do
if [[ " ${missing[*]} " == *" gnuplot-nox "* ]] && command -v gnuplot >/dev/null 2>&1; then
    missing=("${missing[@]/gnuplot-nox/}")
fi
want=()
for p in "${missing[@]}"; do [ -n "$p" ] && want+=("$p"); done
[ ${#want[@]} -eq 0 ] && exit 0

echo "bench/setup: installing ${want[*]}"
sudo=""
[ "$(id -u)" -ne 0 ] && sudo="sudo"
export DEBIAN_FRONTEND=noninteractive
log=/tmp/shortd-bench-setup.log
# keep the package's own nginx service from starting (policy-rc.d exit 101),
# unless the machine already has a policy
policy_added=""
if [ ! -e /usr/sbin/policy-rc.d ] && [ -z "$sudo" ]; then
    printf '#!/bin/sh\nexit 101\n' >/usr/sbin/policy-rc.d && chmod +x /usr/sbin/policy-rc.d && policy_added=1
fi
cleanup() { [ -n "$policy_added" ] && rm -f /usr/sbin/policy-rc.d; return 0; }
trap cleanup EXIT
if ! $sudo apt-get install -y -q "${want[@]}" >"$log" 2>&1; then
    $sudo apt-get update -q >>"$log" 2>&1
    $sudo apt-get install -y -q "${want[@]}" >>"$log" 2>&1 ||
        { cat "$log"; echo "bench/setup: apt-get install failed" >&2; exit 1; }
fi
