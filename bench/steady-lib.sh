# Shared by bench/adapter/steady.sh and bench/aggregation/steady.sh (sourced, not run): the CPU
# of a process or thread from /proc, and one stderr line per thread of a daemon with its CPU
# and voluntary context switches (its wake-ups), where a steady rate's fixed cost shows.

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
