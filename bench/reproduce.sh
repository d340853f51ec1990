#!/usr/bin/env bash
# Re-runs every figure README.md and the summary of docs/benchmarks.md state, each with the
# bench/ command the doc names, and prints per figure the documented value, the measured one,
# their ratio and PASS / FAIL at +-15 % (a documented range passes from 0.85 x its low end to
# 1.15 x its high end; the ratio is to its middle). Prints the machine (CPU model, cores,
# memory, load average before and after) first and last.
#
#   bench/reproduce.sh [--quick] [--build DIR] [--bootstrap HOST:PORT --stack-dir DIR [--pg C]]
#                      [--only ID,ID...] [--list] [--doc FILE] [--logs DIR] [--jobs N]
#
# The figures, their commands, the short (--quick) variant of each and how a figure is read
# from the command's output are ONE table in docs/benchmarks.md, between the markers
# "<!-- reproduce:begin -->" and "<!-- reproduce:end -->", so the doc and this script cannot
# disagree. Its columns:
#   id | documented | command | quick | reads
# - documented: the doc's figure, "150,153" or a range "100,503-109,890" (en dash or hyphen).
# - command: run by bash from the repository's root with $BUILD, $KAFKA, $STACK and $NDD_PG
#   set. Rows with the same command share one run.
# - quick: options for --quick. "--opt V" replaces the value of --opt when the command has it
#   once and V has no "="; anything else is added (before a lone "--", whose options belong to
#   a daemon).
# - reads: "re:REGEX" (perl; the first group of REGEX's last match in the output, commas
#   removed) or "jq:EXPR" (EXPR over the array of the output's JSON lines, in order; "median"
#   is defined). A "|" inside a cell is written "\|".
# --quick runs every command in its short form (seconds each): the ratios are printed but not
#   judged; it fails only when a command yields no figure. tests/e2e/test_bench_reproduce_quick.sh
#   runs it in the test suite.
# --jobs N: up to N commands at a time (default 1; --quick 3: the short runs mostly wait for
#   consumer groups to join, and their figures are not judged). Figures: one at a time.
# Without --bootstrap a private stack (deploy/local/stack.sh, Kafka + PostgreSQL) is started in
# a new directory and destroyed at the end. Needs what the commands need: a build (Release for
# figures), h2load, valgrind, jq, perl, python3, psql, openssl.
# Exit: 0 every figure passed (--quick: every figure measured), 1 otherwise, 2 usage.
set -uo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD=${NDD_BUILD_DIR:-$ROOT/build}
DOC=$ROOT/docs/benchmarks.md
KAFKA="" STACK="" PG=${NDD_PG:-} QUICK=0 ONLY="" LIST=0 LOGS="" JOBS=""
while [[ $# -gt 0 ]]; do
    case $1 in
    --quick) QUICK=1; shift ;;
    --build) BUILD=${2:?}; shift 2 ;;
    --bootstrap) KAFKA=${2:?}; shift 2 ;;
    --stack-dir) STACK=${2:?}; shift 2 ;;
    --pg) PG=${2:?}; shift 2 ;;
    --only) ONLY=${2:?}; shift 2 ;;
    --list) LIST=1; shift ;;
    --doc) DOC=${2:?}; shift 2 ;;
    --logs) LOGS=${2:?}; shift 2 ;;
    --jobs) JOBS=${2:?}; shift 2 ;;
    -h | --help) sed -n '2,34p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "reproduce: unknown option $1" >&2; exit 2 ;;
    esac
done
for t in jq awk perl; do command -v $t >/dev/null || { echo "reproduce: $t missing" >&2; exit 2; }; done
[[ -z $JOBS ]] && JOBS=$((QUICK ? 3 : 1))
[[ $JOBS =~ ^[1-9][0-9]*$ ]] || { echo "reproduce: --jobs wants a positive integer" >&2; exit 2; }
BUILD=$(cd "$BUILD" 2>/dev/null && pwd) || { echo "reproduce: no build directory" >&2; exit 2; }

# ---- the figures: the doc's marked table ---------------------------------------------------
# Each row as five fields separated by \x1f, the cells trimmed, backquotes and "\|" undone.
read_table() {
    awk '/<!-- reproduce:begin -->/ {on = 1; next} /<!-- reproduce:end -->/ {on = 0}
         on && /^\|/ && !/^\| *id *\|/ && !/^\|[- |]*\|$/ {
             gsub(/\\\|/, "\002")
             n = split($0, c, "|")
             out = ""
             for (i = 2; i < n; i++) {
                 v = c[i]; gsub(/^ +| +$/, "", v); gsub(/^`|`$/, "", v); gsub("\002", "|", v)
                 out = out (i > 2 ? "\037" : "") v
             }
             print out
         }' "$DOC"
}
IDS=() DOCV=() CMDS=() QUICKS=() READS=()
while IFS=$'\037' read -r id doc cmd quick reads; do
    [[ -z $id ]] && continue
    if [[ -n $ONLY && ",$ONLY," != *",$id,"* ]]; then continue; fi
    IDS+=("$id") DOCV+=("$doc") CMDS+=("$cmd") QUICKS+=("$quick") READS+=("$reads")
done < <(read_table)
((${#IDS[@]})) || { echo "reproduce: no figures in $DOC (markers reproduce:begin/end)" >&2; exit 2; }
if ((LIST)); then
    for i in "${!IDS[@]}"; do printf '%-20s %-16s %s\n' "${IDS[$i]}" "${DOCV[$i]//–/-}" "${CMDS[$i]}"; done
    exit 0
fi

# quick_command CMD QUICK: CMD with QUICK's options put in (see the header).
quick_command() {
    local -a c q
    local tail="" i j k n
    read -r -a c <<<"$1"
    read -r -a q <<<"$2"
    for ((i = 0; i < ${#c[@]}; i++)); do
        if [[ ${c[$i]} == -- ]]; then tail=" ${c[*]:$i}"; c=("${c[@]:0:$i}"); break; fi
    done
    for ((j = 0; j < ${#q[@]}; j++)); do
        k=${q[$j]}
        if [[ $k == --* && $((j + 1)) -lt ${#q[@]} && ${q[$((j + 1))]} != --* ]]; then
            n=0
            for ((i = 0; i < ${#c[@]}; i++)); do [[ ${c[$i]} == "$k" ]] && n=$((n + 1)); done
            if ((n == 1)) && [[ ${q[$((j + 1))]} != *=* ]]; then
                for ((i = 0; i < ${#c[@]}; i++)); do
                    [[ ${c[$i]} == "$k" ]] && c[$((i + 1))]=${q[$((j + 1))]}
                done
            else
                c+=("$k" "${q[$((j + 1))]}")
            fi
            j=$((j + 1))
        else
            c+=("$k")
        fi
    done
    echo "${c[*]}$tail"
}

# read_figure OUTFILE READS: the number, or nothing.
read_figure() {
    local v=""
    case $2 in
    re:*)
        v=$(tr -d ',' <"$1" | RE=${2#re:} perl -ne 'print "$1\n" if /$ENV{RE}/' | tail -n1) ;;
    jq:*)
        v=$(grep -E '^\{' "$1" | jq -s -r "def median: sort | if length == 0 then null
                else .[(length / 2) | floor] end; ${2#jq:}" 2>/dev/null | tail -n1) ;;
    esac
    [[ $v =~ ^-?[0-9]+(\.[0-9]+)?([eE][-+]?[0-9]+)?$ ]] && echo "$v"
}

# judge DOCUMENTED MEASURED: "ratio verdict" (ratio to the middle of a range).
judge() {
    local lo hi
    lo=$(sed -E 's/[–-].*//; s/,//g' <<<"$1")
    hi=$(sed -E 's/.*[–-]//; s/,//g' <<<"$1")
    awk -v lo="$lo" -v hi="$hi" -v m="$2" 'BEGIN {
        mid = (lo + hi) / 2
        printf "%.2f %s", (mid > 0 ? m / mid : 0), (m >= 0.85 * lo && m <= 1.15 * hi) ? "PASS" : "FAIL" }'
}

machine() {
    local model mem
    model=$(awk -F': ' '/^model name/ {print $2; exit}' /proc/cpuinfo)
    mem=$(awk '/^MemTotal/ {printf "%.1f GiB", $2 / 1048576}' /proc/meminfo)
    echo "machine: ${model:-unknown CPU}, $(nproc) cores, $mem, $(uname -sr)"
}
load() { cut -d' ' -f1-3 /proc/loadavg; }

# ---- the broker and PostgreSQL -------------------------------------------------------------
OWN_STACK=""
cleanup() {
    if [[ -n $OWN_STACK ]]; then
        "$ROOT/deploy/local/stack.sh" destroy --dir "$OWN_STACK" >/dev/null 2>&1 || true
    fi
}
trap cleanup EXIT
if [[ -z $KAFKA ]]; then
    OWN_STACK=$(mktemp -d /tmp/ndd-reproduce-stack.XXXXXX)
    read -r -a P < <("$ROOT/deploy/local/stack.sh" free-ports 5 | tr '\n' ' ')
    echo "starting a private stack in $OWN_STACK"
    "$ROOT/deploy/local/stack.sh" start --dir "$OWN_STACK" --kafka-port "${P[0]}" \
        --controller-port "${P[1]}" --pg-port "${P[2]}" --ssl-port "${P[3]}" \
        --sasl-port "${P[4]}" >/dev/null || { echo "reproduce: the stack did not start" >&2; exit 1; }
    KAFKA=$(. "$OWN_STACK/env" && printf %s "$NDD_KAFKA")
    PG=$(. "$OWN_STACK/env" && printf %s "${NDD_PG:-}")
    STACK=$OWN_STACK
fi
[[ -n $STACK ]] || { echo "reproduce: --bootstrap needs --stack-dir (bench/run.sh's rows)" >&2; exit 2; }
export BUILD KAFKA STACK NDD_PG=$PG NDD_KAFKA=$KAFKA NDD_BUILD_DIR=$BUILD
[[ -z $LOGS ]] && LOGS=$(mktemp -d /tmp/ndd-reproduce.XXXXXX)
mkdir -p "$LOGS"

LOAD_BEFORE=$(load)
echo "bench/reproduce.sh$( ((QUICK)) && echo " --quick (short runs: ratios not judged)") $(date -u +%FT%TZ)"
machine
echo "load average before: $LOAD_BEFORE"
echo "build: $BUILD ($(awk -F= '/^CMAKE_BUILD_TYPE/ {print $2}' "$BUILD/CMakeCache.txt" 2>/dev/null)), revision $(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null)"
echo "Kafka $KAFKA, stack $STACK; figures from $DOC; logs in $LOGS"
echo

# ---- run each distinct command once ----------------------------------------------------------
declare -A OUTFILE
UNIQ=()
for i in "${!IDS[@]}"; do
    cmd=${CMDS[$i]}
    ((QUICK)) && cmd=$(quick_command "$cmd" "${QUICKS[$i]}")
    CMDS[$i]=$cmd
    [[ -n ${OUTFILE[$cmd]:-} ]] && continue
    OUTFILE[$cmd]=$LOGS/run-${IDS[$i]}.log
    UNIQ+=("$cmd")
done
run_one() { # CMD: its output to its OUTFILE, "rc seconds" to OUTFILE.rc
    local t0=$SECONDS rc
    (cd "$ROOT" && bash -c "$1") >"${OUTFILE[$1]}" 2>&1
    rc=$?
    echo "$rc $((SECONDS - t0))" >"${OUTFILE[$1]}.rc"
    echo "  exit $rc after $((SECONDS - t0)) s: ${1:0:100}"
}
running=0
for cmd in "${UNIQ[@]}"; do
    if ((running >= JOBS)); then
        wait -n
        running=$((running - 1))
    fi
    echo "[$(date -u +%T), load $(load)] $cmd"
    run_one "$cmd" &
    running=$((running + 1))
done
wait
declare -A RC
for cmd in "${UNIQ[@]}"; do RC[$cmd]=$(cut -d' ' -f1 "${OUTFILE[$cmd]}.rc" 2>/dev/null || echo "?"); done
echo

# ---- documented beside measured --------------------------------------------------------------
fails=0
printf '%-20s %16s %12s %7s  %s\n' figure documented measured ratio verdict
for i in "${!IDS[@]}"; do
    cmd=${CMDS[$i]}
    m=$(read_figure "${OUTFILE[$cmd]}" "${READS[$i]}")
    if [[ -z $m ]]; then
        printf '%-20s %16s %12s %7s  %s\n' "${IDS[$i]}" "${DOCV[$i]//–/-}" "-" "-" \
            "NO FIGURE (exit ${RC[$cmd]}; see ${OUTFILE[$cmd]})"
        fails=$((fails + 1))
        continue
    fi
    read -r ratio verdict < <(judge "${DOCV[$i]}" "$m")
    if ((QUICK)); then
        verdict="ran"
    elif [[ $verdict == FAIL ]]; then
        fails=$((fails + 1))
    fi
    printf '%-20s %16s %12s %7s  %s\n' "${IDS[$i]}" "${DOCV[$i]//–/-}" \
        "$(awk -v m="$m" 'BEGIN {printf (m >= 100 ? "%.0f" : "%.2f"), m}')" "$ratio" "$verdict"
done
echo
machine
echo "load average before: $LOAD_BEFORE, after: $(load)"
if ((QUICK)); then
    echo "quick: $((${#IDS[@]} - fails)) of ${#IDS[@]} figures measured (short runs; not judged)"
else
    echo "$((${#IDS[@]} - fails)) of ${#IDS[@]} figures within +-15 % of the documented ones"
fi
((fails == 0))
