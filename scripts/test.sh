#!/usr/bin/env bash
# The README's test command: installs what is missing, then builds and runs
# every test twice, through ctest: a normal -Werror build (build/) and an
# AddressSanitizer + UndefinedBehaviorSanitizer build (build-asan/).
# Exits non-zero if either run fails.
set -euo pipefail
cd "$(dirname "$0")/.."

./scripts/install-deps.sh

jobs=$(nproc 2>/dev/null || echo 2)
status=0

echo "== build (-Werror) =="
cmake -S . -B build -DVIGIL_WERROR=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build -j"$jobs" >/dev/null
echo "== tests =="
(cd build && ctest --output-on-failure -j"$jobs") || status=1

echo "== build (AddressSanitizer + UBSan) =="
cmake -S . -B build-asan -DVIGIL_WERROR=ON -DVIGIL_SANITIZE=ON -DCMAKE_BUILD_TYPE=Debug >/dev/null
cmake --build build-asan -j"$jobs" >/dev/null
echo "== tests under sanitizers =="
(cd build-asan && ctest --output-on-failure -j"$jobs") || status=1

exit $status
