# Shared by bench/adapter/steady.sh, bench/aggregation/steady.sh and (steady_wait_count)
# bench/broker/run.sh (sourced, not run): the CPU of a process or thread from /proc, and one
# stderr line per thread of a daemon with its CPU and voluntary context switches (its
# wake-ups), where a steady rate's fixed cost shows; the simulator's run (using the caller's
# NFSIM and WORK) and the wait for a count to arrive.

# utime + stime in seconds of /proc/PID or /proc/PID/task/TID (the directory).
steady_cpu_s() { awk -v hz="$(getconf CLK_TCK)" '{print ($14+$15)/hz}' "$1/stat"; }

steady_threads() {
    local t
    for t in /proc/"$1"/task/*; do
        echo "thread $(cat "$t/comm") cpu $(steady_cpu_s "$t") vcsw $(awk '/^voluntary_ctxt/ {print $2}' "$t/status")" >&2
    done
}

# The figures' JSON members for N copies between CPU readings A and B:
# "cpu_s":B-A,"per_cpu_s":N/(B-A) (0 when no tick passed).
steady_figures() {
    awk -v n="$1" -v a="$2" -v b="$3" \
        'BEGIN {printf "\"cpu_s\":%.2f,\"per_cpu_s\":%.0f", b - a, (b > a ? n / (b - a) : 0)}'
}

# steady_sim TAG ARGS...: ndd-nf-sim ($NFSIM) with the steady runs' copies (3,400-byte SCP) and
# ARGS, its output in $WORK/nfsim-TAG.json and .log; prints how many copies the broker
# acknowledged (a paced run may round up by one), or fails the run.
steady_sim() {
    local tag=$1 n
    shift
    "$NFSIM" --size 3400 --nf-mix SCP=1 --quiet "$@" >"$WORK/nfsim-$tag.json" 2>"$WORK/nfsim-$tag.log" ||
        { echo "steady: ndd-nf-sim failed (see $WORK/nfsim-$tag.log)" >&2; exit 1; }
    n=$(grep -o '"acked":[0-9]*' "$WORK/nfsim-$tag.json" | head -1 | cut -d: -f2)
    [[ -n $n ]] || { echo "steady: ndd-nf-sim reported nothing (see $WORK)" >&2; exit 1; }
    echo "$n"
}

# steady_wait_count N INTERVAL CMD...: runs CMD (which prints a count) every INTERVAL seconds
# until the count reaches N or 60 s pass; prints the last count (0 when CMD printed none).
steady_wait_count() {
    local want=$1 every=$2 got deadline=$((SECONDS + 60))
    shift 2
    while :; do
        got=$("$@" || true)
        ((${got:-0} >= want || SECONDS >= deadline)) && break
        sleep "$every"
    done
    echo "${got:-0}"
}
