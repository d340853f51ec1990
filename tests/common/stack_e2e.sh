# shellcheck shell=bash
# Shared by tests/e2e/test_stack_*.sh, which drive deploy/local/stack.sh itself: a private
# stack (own temp dir, own free ports) that the test starts, breaks and stops, and the checks
# on what a stop must leave behind. Source it right after `set -euo pipefail`:
#   SRC=${NDD_SOURCE_DIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
#   . "$SRC/tests/common/stack_e2e.sh"
# It first runs the test again under a 300 s timeout (the whole test must end by itself even
# if a server hangs). Then it gives STACK, fail, port_open, e2e_stack_prepare,
# e2e_stack_cleanup and e2e_stack_ports_closed.

if [[ -z ${NDD_E2E_TIMED:-} ]]; then
    NDD_E2E_TIMED=1 exec timeout -k 10 300 bash "$0" "$@"
fi

STACK=$SRC/deploy/local/stack.sh
fail() {
    echo "FAIL: $*" >&2
    exit 1
}
port_open() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

# Only ever destroys this test's own stack (no --dir would mean the default one).
e2e_stack_cleanup() {
    if ((${#args[@]})); then "$STACK" destroy --dir "$dir" >/dev/null 2>&1 || true; fi
    rm -rf "$dir"
}

# e2e_stack_prepare NAME: a temp dir /tmp/ndd-e2e-NAME.*, five free ports and the stack.sh
# arguments naming them (dir, kport, cport, sport (SSL), qport (SASL_SSL), pport, args); e2e_stack_cleanup runs at exit (a
# test with more to clean sets its own trap and calls it).
e2e_stack_prepare() {
    dir=$(mktemp -d "/tmp/ndd-e2e-$1.XXXXXX")
    args=()
    trap e2e_stack_cleanup EXIT
    mapfile -t ports < <("$STACK" free-ports 5)
    ((${#ports[@]} == 5)) || fail "stack.sh free-ports gave '${ports[*]}'"
    kport=${ports[0]} cport=${ports[1]} pport=${ports[2]} sport=${ports[3]} qport=${ports[4]}
    args=(--dir "$dir" --kafka-port "$kport" --controller-port "$cport" --pg-port "$pport"
        --ssl-port "$sport" --sasl-port "$qport")
}

# After a stop: none of the stack's ports answers any more.
e2e_stack_ports_closed() {
    local p
    for p in "$kport" "$cport" "$sport" "$qport" "$pport"; do
        ! port_open "$p" || fail "port $p still open after stop"
    done
}
