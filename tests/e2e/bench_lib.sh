# Shared by the e2e tests of bench/ (sourced, not run; not a test itself).

# bench_test_begin NAME [VAR]: fails the test (exit 1: a test that cannot run has proved
# nothing) unless tests/run.sh set VAR
# (NDD_TEST_KAFKA by default; NDD_TEST_STACK_DIR for a test that needs the stack's directory);
# else sets OUT (a temporary file, removed at exit). fail MESSAGE prints it and OUT, exits 1.
bench_test_begin() {
    local var=${2:-NDD_TEST_KAFKA}
    if [[ -z ${!var:-} ]]; then
        echo "FAIL: $var is not set (tests/run.sh starts the suite's stack and sets it)"
        exit 1
    fi
    OUT=$(mktemp "/tmp/ndd-$1.XXXXXX")
    trap 'rm -f "$OUT"' EXIT
}
fail() {
    echo "FAIL: $*"
    cat "$OUT"
    exit 1
}

# broker_check_run OUT LABEL: OUT has the run line of LABEL (copies the simulator had
# acknowledged, 2,000 or more at 1,000/s for 2 s, and a positive broker CPU per copy) and the
# table row of LABEL. Calls the test's fail on the first miss.
broker_check_run() {
    local line copies us
    line=$(grep -F "$2"$'\t' "$1") || fail "no run line for '$2'"
    copies=$(sed -n 's/.* copies=\([0-9]*\).*/\1/p' <<<"$line")
    us=$(sed -n 's/.*broker_us_per_copy=\([0-9.]*\).*/\1/p' <<<"$line")
    ((copies >= 2000)) || fail "'$2': $copies copies acknowledged, want at least 2,000"
    awk -v u="$us" 'BEGIN { exit !(u > 0) }' || fail "'$2': broker CPU per copy '$us'"
    grep -qF "| $2 | " "$1" || fail "no table row for '$2'"
}
