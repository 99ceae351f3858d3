#!/usr/bin/env bash
# The README's run command: installs what is missing, builds the engine and
# the client (quietly, like scripts/test.sh), then runs the demo: vigild with the bundled
# config/vigil.lua, a dev server that crashes, an agent that is told.
# Extra arguments go to the demo (examples/demo/run_demo.py --help), e.g.
#   scripts/run.sh --seed 8      (a Go panic instead of a Node error)
#   scripts/run.sh --quick
# Exits with the demo's status. Needs no terminal and no stdin.
set -euo pipefail
cd "$(dirname "$0")/.."

./scripts/install-deps.sh </dev/null

jobs=$(nproc 2>/dev/null || echo 2)
# The engine, its keeper and the command-line client (what the README's
# "Using it" block runs next); the build output is shown only if it fails.
log=$(mktemp)
trap 'rm -f "$log"' EXIT
echo "== build (build/vigild, build/vigil) ==" >&2
if ! { cmake -S . -B build -DVIGIL_WERROR=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo &&
       cmake --build build -j"$jobs" --target vigild vigil-keeper vigil; } >"$log" 2>&1; then
  cat "$log" >&2
  echo "run: the build failed" >&2
  exit 1
fi
echo "== demo ==" >&2

# Debian's python3, which has python3-msgpack (not a virtualenv's).
python=/usr/bin/python3
[ -x "$python" ] || python=python3
"$python" examples/demo/run_demo.py --vigild build/vigild --config config/vigil.lua "$@" </dev/null
