# Shared start-up of the ndd-admin benchmarks (sourced by propagation.sh, mixed.sh,
# console.sh; the same steps run.sh performs inline): a schema of its own (dropped at the end),
# an admin and a viewer token, ndd-admin started and waited for, the processes it started
# stopped by PID on exit, CPU seconds from /proc, and the machine's description.
#
#   . bench/admin/common.sh
#   bench_admin_init "$BUILD"                 # ADMIN, SCHEMA, WORK; cleanup on exit
#   bench_admin_tokens                        # ADMIN_TOKEN, VIEW_TOKEN
#   bench_admin_start PORT [admin options]    # ADMIN_PID, URL
#   bench_spawn LOG cmd args...               # runs cmd in the background, stopped on exit
#   bench_cpu PID                             # utime + stime in seconds
#   bench_machine                             # one line: CPUs, model, memory, load average

BENCH_PIDS=()

bench_admin_cleanup() {
  local p
  for p in "${BENCH_PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${BENCH_PIDS[@]}"; do wait "$p" 2>/dev/null || true; done
  if [ -n "${SCHEMA:-}" ] && [ -n "${NDD_PG:-}" ]; then
    psql "$NDD_PG" -q -c "DROP SCHEMA IF EXISTS $SCHEMA CASCADE" >/dev/null 2>&1 || true
  fi
  if [ -n "${WORK:-}" ]; then
    if [ -n "${NDD_BENCH_KEEP:-}" ]; then echo "logs kept in $WORK" >&2; else rm -rf "$WORK"; fi
  fi
}

bench_admin_init() {
  BUILD=$1
  : "${NDD_PG:?set NDD_PG to a libpq conninfo (deploy/local/stack.sh start prints it)}"
  ADMIN=$BUILD/admin/ndd-admin
  [ -x "$ADMIN" ] || { echo "no $ADMIN (build first, ideally -DCMAKE_BUILD_TYPE=Release)" >&2; exit 2; }
  SCHEMA="ndd_bench_$$_$RANDOM"
  WORK=$(mktemp -d)
  trap bench_admin_cleanup EXIT
}

bench_admin_tokens() {
  ADMIN_TOKEN=$("$ADMIN" token create --role admin --name bench-admin --db-schema "$SCHEMA" 2>/dev/null)
  VIEW_TOKEN=$("$ADMIN" token create --role viewer --name bench-viewer --db-schema "$SCHEMA" 2>/dev/null)
  [ -n "$ADMIN_TOKEN" ] && [ -n "$VIEW_TOKEN" ] || { echo "token create failed" >&2; exit 1; }
}

bench_spawn() {
  local log=$1
  shift
  "$@" >"$log" 2>&1 &
  BENCH_PIDS+=($!)
  BENCH_LAST_PID=$!
}

# bench_admin_start PORT [options]: without --bootstrap in the options the admin runs without
# Kafka (NDD_KAFKA is unset for it, as run.sh does).
bench_admin_start() {
  local port=$1
  shift
  if printf '%s\n' "$@" | grep -qx -- --bootstrap; then
    bench_spawn "$WORK/admin.log" "$ADMIN" --db-schema "$SCHEMA" --http.port "$port" --log.level warn "$@"
  else
    bench_spawn "$WORK/admin.log" env -u NDD_KAFKA "$ADMIN" --db-schema "$SCHEMA" --http.port "$port" \
      --log.level warn "$@"
  fi
  ADMIN_PID=$BENCH_LAST_PID
  URL=http://127.0.0.1:$port
  local _
  for _ in $(seq 1 300); do curl -sf "$URL/healthz" >/dev/null && return 0; sleep 0.1; done
  echo "ndd-admin did not answer on $URL within 30 s; see $WORK/admin.log" >&2
  cat "$WORK/admin.log" >&2
  exit 1
}

bench_cpu() { awk -v hz="$(getconf CLK_TCK)" '{print ($14 + $15) / hz}' "/proc/$1/stat"; }

bench_machine() {
  local model mem
  model=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1)
  mem=$(awk '/^MemTotal/ {printf "%.1f GiB", $2 / 1048576}' /proc/meminfo)
  echo "$(nproc) CPUs ($model), $mem, load average $(cut -d' ' -f1-3 /proc/loadavg)"
}
