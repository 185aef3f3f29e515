# bench/fresh.sh - sourced by the scripts that measure one fresh server
# (mixed.sh, contention.sh): fresh_shortd SHORTD DATA WORK PORT [ARGS...]
# copies DATA's store of links into WORK, starts SHORTD on it (2 event
# loops, ARGS passed to 'shortd serve') and returns once it answers, with
# its process id in PID; on a failed start it prints the server's output
# and exits.
fresh_shortd() {
    local shortd=$1 data=$2 work=$3 port=$4
    shift 4
    cp "$data/pristine.db" "$work/db"
    sync "$work/db"
    "$shortd" serve --listen "127.0.0.1:$port" --db "$work/db" --threads 2 "$@" >"$work/out" 2>&1 &
    PID=$!
    for _ in $(seq 600); do
        curl -s -o /dev/null "http://127.0.0.1:$port/healthz" && return 0
        kill -0 "$PID" 2>/dev/null || { cat "$work/out" >&2; exit 1; }
        sleep 0.1
    done
    echo "fresh_shortd: $shortd did not answer within a minute" >&2
    exit 1
}
