#!/usr/bin/env bash
# Builds vigil in Release and runs every benchmark in turn: ingest, latency,
# idle, policy, prefixcheck, signal, scale, capacity, fleet (bench/README.md says what each measures and its target). Prints the
# figures; nothing is compared against a threshold here, and the exit status
# is non-zero only when a build or a benchmark itself failed.
#
#   bench/run.sh [--quick] [ingest|latency|idle|policy|prefixcheck|signal|scale|capacity|fleet ...]
#
# --quick runs smaller versions (a 50 MiB log once, 50 latency lines, 3 s idle
# windows, a 20 s signal scenario, 100 monitors for 10 s, a fleet of 3 x 20
# monitors for 15 s) to check the benchmarks work, not to quote. Naming benchmarks
# runs only those. The build goes to build-release/ (VIGIL_BENCH_BUILD_DIR
# to change it), so a developer's build/ is left alone.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${VIGIL_BENCH_BUILD_DIR:-$root/build-release}"

quick=0
which=()
for a in "$@"; do
  case "$a" in
    --quick) quick=1 ;;
    ingest|latency|idle|policy|prefixcheck|signal|scale|capacity|fleet) which+=("$a") ;;
    -h|--help) sed -n '2,13p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "run.sh: unknown argument \"$a\" (--quick, ingest, latency, idle, policy, prefixcheck, signal, scale, capacity, fleet)" >&2; exit 2 ;;
  esac
done
[ "${#which[@]}" -eq 0 ] && which=(ingest latency idle policy prefixcheck signal scale capacity fleet)

# What the benchmarks need that a fresh machine lacks (the toolchain and
# libraries, strace for idle, python3-msgpack for signal, nats-server for
# fleet), installed the way
# the README's commands do. Not root and no sudo: it says what is missing,
# and the benchmarks that need nothing more still run.
"$root/scripts/install-deps.sh" --debian-only ||
  echo "run.sh: could not install every dependency; some benchmarks may fail" >&2

echo "== build (Release) in $build"
mkdir -p "$build"
log="$build/bench-build.log"
# Every program a benchmark starts, vigild's keeper (the state directory's,
# docs/restart.md) included: a fresh clone has nothing built.
targets=(vigild vigil-keeper vigil gen_log ingest latency latency_child idle policy prefixcheck
         scale scale_child capacity fleet)
if ! { cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release &&
       cmake --build "$build" -j"$(nproc 2>/dev/null || echo 2)" --target "${targets[@]}"; } \
       >"$log" 2>&1; then
  cat "$log" >&2
  echo "run.sh: the build failed (log: $log)" >&2
  exit 1
fi
warnings=$(grep -c 'warning:' "$log" || true)
[ "$warnings" -gt 0 ] && echo "   ($warnings compiler warnings while building: $log)"

echo "== machine: $(nproc 2>/dev/null || echo '?') cpus, $(uname -sr)," \
     "$(grep -m1 'model name' /proc/cpuinfo 2>/dev/null | cut -d: -f2 | sed 's/^ *//')"

# Runs one benchmark under a time bound (a hang must not stall the rest).
bench() {
  local limit="$1"
  shift
  local rc=0
  timeout --foreground -k 5 "$limit" "$@" || rc=$?
  if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then
    echo "run.sh: $(basename "$1") did not finish in $limit s and was killed" >&2
  elif [ "$rc" -ne 0 ]; then
    echo "run.sh: $(basename "$1") failed (exit $rc)" >&2
  fi
  return "$rc"
}

status=0
for b in "${which[@]}"; do
  echo
  echo "== $b"
  case "$b" in
    ingest)
      # Both figures: the wire one (vigild on cat of a cached file, against
      # cat | cat and cat | grep, with the built-in crash set's run beside
      # the five patterns') and the in-process, generator-bound one.
      if [ "$quick" -eq 1 ]; then args=(--bytes 50m --runs 1); else args=(); fi
      bench 300 "$build/bench/ingest" "${args[@]}" || status=1 ;;
    latency)
      if [ "$quick" -eq 1 ]; then args=(--lines 50); else args=(); fi
      bench 600 "$build/bench/latency" "${args[@]}" || status=1 ;;
    idle)
      if [ "$quick" -eq 1 ]; then args=(--seconds 3); else args=(); fi
      bench 300 "$build/bench/idle" "${args[@]}" || status=1 ;;
    policy)
      # The cost of a Lua policy per notification, then the ingest ratios
      # with every line batched and a policy formatting every notification
      # (target: the wire ratios within 10% of the plain ingest run's).
      if [ "$quick" -eq 1 ]; then args=(--calls 2000); iargs=(--bytes 50m --runs 1);
      else args=(); iargs=(); fi
      bench 300 "$build/bench/policy" "${args[@]}" || status=1
      bench 300 "$build/bench/ingest" --notify-lines --policy xml "${iargs[@]}" || status=1 ;;
    prefixcheck)
      # The prefix-rule check of a policy's body on its worst cases.
      if [ "$quick" -eq 1 ]; then args=(--seconds 0.2 --limit 20); else args=(); fi
      bench 300 "$build/bench/prefixcheck" "${args[@]}" || status=1 ;;
    signal)
      # Incidents, not lines: a scripted noisy dev server through vigild
      # (config/vigil.lua, no policy) and through emulations of the peers.
      # A Python script (Debian's python3 with python3-msgpack).
      if [ "$quick" -eq 1 ]; then args=(--quick); else args=(); fi
      bench 300 "$root/bench/signal" --vigild "$build/vigild" "${args[@]}" || status=1 ;;
    scale)
      # 1000 monitors on one engine, then one flooding monitor among 100
      # quiet ones (about 2.5 min; the quick one 100 monitors for 10 s).
      if [ "$quick" -eq 1 ]; then
        args=(--monitors 100 --seconds 10 --match-min 2000 --match-max 4000 --quiet 20 --fair-seconds 6)
      else args=(); fi
      bench 600 "$build/bench/scale" "${args[@]}" || status=1 ;;
    capacity)
      # The largest N the machine serves (its control on a ladder), vigil at
      # that N, and the engine's own CPU per 1000 monitors with children
      # that cost nothing (about 2.5 min; the quick one up to 100 monitors).
      if [ "$quick" -eq 1 ]; then args=(--max 100 --seconds 4 --cheap 100); else args=(); fi
      bench 600 "$build/bench/capacity" "${args[@]}" || status=1 ;;
    fleet)
      # 3 engines x 100 monitors publishing 1000 notifications/s into a
      # private nats-server, timed over the socket and through JetStream,
      # then ingest's wire figure without and with NATS (about 4 min; the
      # quick one 3 x 20 monitors for 15 s and a 50 MiB ingest once).
      if [ "$quick" -eq 1 ]; then
        args=(--monitors 20 --seconds 15 --ingest-bytes 50m --ingest-runs 1 --ingest-rounds 1)
      else args=(); fi
      bench 900 "$build/bench/fleet" "${args[@]}" || status=1 ;;
  esac
done
exit "$status"
