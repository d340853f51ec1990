#!/usr/bin/env bash
# Fetches each /metrics URL given and runs Prometheus' own linter on it.
#   deploy/prometheus/check-metrics.sh http://127.0.0.1:9101/metrics [URL...]
# Exit 0 only when every URL answered and `promtool check metrics` had nothing to say.
# Needs curl and promtool (Debian packages curl and prometheus).
set -uo pipefail

if [ $# -eq 0 ]; then
    echo "usage: $0 URL..." >&2
    exit 2
fi
for tool in curl promtool; do
    if ! command -v "$tool" >/dev/null 2>&1; then
        echo "check-metrics: $tool is not installed (apt-get install ${tool/promtool/prometheus})" >&2
        exit 2
    fi
done

status=0
for url in "$@"; do
    if ! body=$(curl -sS --fail --max-time 10 "$url"); then
        echo "FAIL $url: no answer" >&2
        status=1
        continue
    fi
    if ! out=$(printf '%s\n' "$body" | promtool check metrics 2>&1) || [ -n "$out" ]; then
        echo "FAIL $url: promtool check metrics said:" >&2
        printf '%s\n' "$out" >&2
        status=1
        continue
    fi
    echo "ok   $url ($(printf '%s\n' "$body" | grep -vc '^#') samples)"
done
exit $status
