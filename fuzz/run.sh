#!/usr/bin/env bash
# run.sh NAME SECONDS - runs the libFuzzer target build/fuzz/NAME: first every
# input in fuzz/regressions/NAME/ once (inputs that crashed it before), then
# SECONDS of fuzzing, one process, on a scratch copy of fuzz/corpus/NAME/ in
# build/fuzz/work/NAME/ (the committed corpus is never written). A crash
# leaves its input in build/fuzz/crashes/NAME/ and makes the exit status
# non-zero. FUZZ_ARGS adds libFuzzer flags (e.g. -max_len=4096).
set -uo pipefail
cd "$(dirname "$0")/.."

name=${1:?usage: fuzz/run.sh NAME SECONDS}
secs=${2:?usage: fuzz/run.sh NAME SECONDS}
bin=build/fuzz/$name
work=build/fuzz/work/$name
crashes=build/fuzz/crashes/$name
log=build/fuzz/logs/$name.log
export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"

rm -rf "$work"
mkdir -p "$work" "$crashes" "$(dirname "$log")"
[ -d "fuzz/corpus/$name" ] && cp -R "fuzz/corpus/$name/." "$work/"

regs=()
if [ -d "fuzz/regressions/$name" ]; then
    for f in "fuzz/regressions/$name"/*; do [ -f "$f" ] && regs+=("$f"); done
fi
if [ ${#regs[@]} -gt 0 ] && ! "$bin" "${regs[@]}" >"$log" 2>&1; then
    tail -n 40 "$log"
    echo "fuzz: $name FAILED on a regression input (log: $log)" >&2
    exit 1
fi

# shellcheck disable=SC2086
if ! "$bin" -max_total_time="$secs" -timeout=10 -rss_limit_mb=1024 -print_final_stats=1 \
    -artifact_prefix="$crashes/" ${FUZZ_ARGS:-} "$work" >>"$log" 2>&1; then
    tail -n 40 "$log"
    echo "fuzz: $name FAILED: input in $crashes/ (log: $log)" >&2
    exit 1
fi
runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)
echo "fuzz: $name ok, ${#regs[@]} regression inputs, ${runs:-?} runs in ${secs}s"
