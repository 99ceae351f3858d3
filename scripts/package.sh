#!/usr/bin/env bash
# Builds the Debian package (packaging/cpack.cmake): installs what is
# missing, configures a release build for the prefix /usr in build-package/,
# builds it and runs CPack. Prints the path of the .deb it made.
#   scripts/package.sh && sudo apt-get install ./build-package/vigil_*.deb
set -euo pipefail
cd "$(dirname "$0")/.."

./scripts/install-deps.sh </dev/null
jobs=$(nproc 2>/dev/null || echo 2)
cmake -S . -B build-package -DCMAKE_BUILD_TYPE=Release -DCMAKE_INSTALL_PREFIX=/usr >/dev/null
cmake --build build-package -j"$jobs" >/dev/null
(cd build-package && cpack -G DEB >/dev/null)
ls "$PWD"/build-package/vigil_*.deb
