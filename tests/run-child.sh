# run-child.sh - sourced by tests/pg.sh and tests/redis.sh: runs their command
# in the background, so that a TERM or INT sent to the script stops the
# command and the server at once rather than after the command has ended,
# and exits with the command's status (the script's EXIT trap then stops the
# server).
run_child() {
    set +e
    child=""
    trap '[ -n "$child" ] && kill -TERM "$child" 2>/dev/null; exit 143' TERM
    trap '[ -n "$child" ] && kill -INT "$child" 2>/dev/null; exit 130' INT
    (exec "$@") &
    child=$!
    wait "$child"
    status=$?
    set -e
    exit $status
}
