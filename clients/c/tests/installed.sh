#!/bin/sh
# client_c_installed: libvigilclient as a user gets it. Installs only the
# "client" and "client_dev" components of the build (the shared library;
# what a host builds with) into a temporary prefix, checks that
# exactly the header, the libraries and vigil-client.pc went there, then
# builds installed_program.c with `pkg-config --cflags --libs vigil-client`
# (PKG_CONFIG_PATH at the prefix, nothing from the source tree) and runs it
# against the installed shared library; links it once more with the static
# archive; and compiles the header as C++ when there is a C++ compiler.
# Exit 77 (skipped) when pkg-config or cc is missing.
#
#   installed.sh CMAKE BUILD_DIR TESTS_DIR SANITIZE(0|1)
set -eu
cmake=$1 build=$2 tests=$3 sanitize=$4

for tool in pkg-config cc; do
  if ! command -v "$tool" >/dev/null 2>&1; then
    echo "skipped: no $tool"
    exit 77
  fi
done

tmp=$(mktemp -d /tmp/vigil-client-installed-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
prefix=$tmp/prefix

for component in client client_dev; do
  "$cmake" --install "$build" --component "$component" --prefix "$prefix" >>"$tmp/install.log"
done

# Only the components: the header, the libraries and the .pc file.
found=$(cd "$prefix" && find . \( -type f -o -type l \) | sort | tr '\n' ' ')
case $found in
  *bin/*|*share/*) echo "FAIL: installed more than the client: $found"; exit 1 ;;
esac
for want in include/vigil/client.h libvigilclient.a libvigilclient.so libvigilclient.so.0 \
            pkgconfig/vigil-client.pc; do
  case $found in
    *"$want "*) ;;
    *) echo "FAIL: $want not installed (got: $found)"; exit 1 ;;
  esac
done

pc=$(find "$prefix" -name vigil-client.pc)
PKG_CONFIG_PATH=$(dirname "$pc")
export PKG_CONFIG_PATH
libdir=$(pkg-config --variable=libdir vigil-client)
[ -f "$libdir/libvigilclient.so.0" ] || { echo "FAIL: the .pc's libdir $libdir is wrong"; exit 1; }

san=
if [ "$sanitize" = 1 ]; then
  san="-fsanitize=address,undefined -fno-omit-frame-pointer"
fi

# shellcheck disable=SC2046,SC2086 # the flags are words
cc -std=c11 -Wall -Wextra -Werror -pedantic $san -o "$tmp/program" "$tests/installed_program.c" \
  $(pkg-config --cflags --libs vigil-client)
LD_LIBRARY_PATH=$libdir "$tmp/program" "$build/vigild"
if ldd "$tmp/program" >/dev/null 2>&1; then
  LD_LIBRARY_PATH=$libdir ldd "$tmp/program" | grep -q "$libdir/libvigilclient.so.0" ||
    { echo "FAIL: the program did not load the installed library"; exit 1; }
fi

# The static archive is complete: linked with it alone (and msgpack-c).
# shellcheck disable=SC2046,SC2086
cc -std=c11 $san -o "$tmp/program-static" "$tests/installed_program.c" \
  $(pkg-config --cflags vigil-client) "$libdir/libvigilclient.a" $(pkg-config --libs msgpack)
"$tmp/program-static" "$build/vigild" >/dev/null

if command -v c++ >/dev/null 2>&1; then
  # shellcheck disable=SC2046
  c++ -std=c++11 -Wall -Wextra -Werror -fsyntax-only -x c++ "$tests/header_check.cpp" \
    $(pkg-config --cflags vigil-client)
  echo "the header compiles as C++"
fi
echo "ok: built and ran against the installed library ($prefix)"
