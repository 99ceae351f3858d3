#!/usr/bin/env bash
# Builds the Debian packages (packaging/cpack.cmake): installs what is
# missing, configures a RelWithDebInfo build for the prefix /usr with the
# Debian files (-DVIGIL_DEBIAN=ON) in build-package/, builds what the
# packages hold and runs CPack. Prints the paths of the packages it made:
# vigil, libvigilclientN, libvigilclient-dev (.deb) and their -dbgsym (.ddeb).
#
#   scripts/package.sh [--build-dir DIR] [--no-deps] [-DSETTING=VALUE ...]   (DIR: absolute, or in the checkout)
#   sudo apt-get install ./build-package/vigil_*.deb ./build-package/libvigilclient0_*.deb
#
# Give the packages your own Maintainer and Homepage (docs/packaging.md):
#   scripts/package.sh -DVIGIL_PACKAGE_MAINTAINER="Ada Lovelace <ada@example.org>" \
#                      -DVIGIL_PACKAGE_HOMEPAGE=https://example.org/vigil
# Without them the Maintainer is a placeholder (at example.invalid) and this
# script says so. --no-deps skips scripts/install-deps.sh (the packaging test
# runs it so, after the suite's own set-up).
set -euo pipefail
cd "$(dirname "$0")/.."

build=build-package
deps=1
settings=()
while [ $# -gt 0 ]; do
  case $1 in
    --build-dir) build=${2:?"--build-dir needs a directory"}; shift 2 ;;
    --no-deps) deps=0; shift ;;
    -D*) settings+=("$1"); shift ;;
    *) echo "package: unknown argument \"$1\" (--build-dir DIR, --no-deps, -DSETTING=VALUE)" >&2
       exit 2 ;;
  esac
done

case $build in /*) ;; *) build=$PWD/$build ;; esac

if [ "$deps" = 1 ]; then
  ./scripts/install-deps.sh </dev/null
fi
# The changelog's date is the last commit's, so the same tree packs to the
# same bytes (packaging/CMakeLists.txt).
if [ -z "${SOURCE_DATE_EPOCH:-}" ] && git rev-parse --git-dir >/dev/null 2>&1; then
  SOURCE_DATE_EPOCH=$(git log -1 --format=%ct)
  export SOURCE_DATE_EPOCH
fi

jobs=$(nproc 2>/dev/null || echo 2)
# Only what the packages hold is built (not the tests and benchmarks):
# CMAKE_SKIP_INSTALL_ALL_DEPENDENCY keeps CPack from building everything,
# and an installed file whose target is missing here fails the install.
# Debian's hardening flags (dpkg-buildflags: fortified functions, stack
# protector, full RELRO with immediate binding), as a Debian build has them;
# CMake reads no CPPFLAGS, so they go in front of CFLAGS.
export DEB_BUILD_MAINT_OPTIONS=${DEB_BUILD_MAINT_OPTIONS:-hardening=+all}
cflags="$(dpkg-buildflags --get CPPFLAGS) $(dpkg-buildflags --get CFLAGS)"
ldflags=$(dpkg-buildflags --get LDFLAGS)
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_INSTALL_PREFIX=/usr \
      -DVIGIL_DEBIAN=ON -DVIGIL_SANITIZE=OFF -DCMAKE_SKIP_INSTALL_ALL_DEPENDENCY=ON \
      -DCMAKE_C_FLAGS="$cflags" -DCMAKE_EXE_LINKER_FLAGS="$ldflags" \
      -DCMAKE_SHARED_LINKER_FLAGS="$ldflags" "${settings[@]}" >/dev/null
cmake --build "$build" -j"$jobs" --target vigild vigil vigil-keeper vigilclient \
      vigilclient_static man debian_changelog >/dev/null
rm -f "$build"/*.deb "$build"/*.ddeb
(cd "$build" && cpack -G DEB >/dev/null)

# CPack 3.25's -dbgsym packages list their files in DEBIAN/md5sums by the
# build directory's absolute paths, and have no /usr/share/doc. Each is
# unpacked and packed again with md5sums of its own files and, as
# debhelper's have, its doc directory a link to the package it debugs
# (which it depends on, exactly this version).
for ddeb in "$build"/*.ddeb; do
  [ -e "$ddeb" ] || continue
  tree=$(mktemp -d "$build/dbgsym-XXXXXX")
  chmod 755 "$tree"
  dpkg-deb -R "$ddeb" "$tree"
  find "$tree/usr" -type f -exec chmod 644 {} +
  pkg=$(dpkg-deb -f "$ddeb" Package)
  (cd "$tree" && find usr -type f -print0 | sort -z | xargs -0 md5sum >DEBIAN/md5sums)
  mkdir -p "$tree/usr/share/doc"
  ln -s "${pkg%-dbgsym}" "$tree/usr/share/doc/$pkg"
  dpkg-deb --root-owner-group -Zxz -b "$tree" "$ddeb" >/dev/null
  rm -rf "$tree"
done

maintainer=$(sed -n 's/^VIGIL_PACKAGE_MAINTAINER:STRING=//p' "$build/CMakeCache.txt")
case $maintainer in
  *@example.invalid*)
    echo "package: the Maintainer is the placeholder \"$maintainer\";" \
         "set -DVIGIL_PACKAGE_MAINTAINER=\"Name <address>\" before shipping (docs/packaging.md)" >&2 ;;
esac
ls "$build"/*.deb "$build"/*.ddeb
