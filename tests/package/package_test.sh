#!/usr/bin/env bash
# package: the Debian packages as a packager makes them and as lintian
# judges them. Runs scripts/package.sh (a build of its own, in
# BUILD/package-test) with a Maintainer and a Homepage given, then:
#   - exactly vigil, libvigilclientN and libvigilclient-dev (.deb) and their
#     -dbgsym (.ddeb) are made, each with the Maintainer and Homepage given;
#   - lintian reports no error and no warning on any of them (what does not
#     apply is overridden in the package, with the reason: docs/packaging.md);
#   - what lintian checks only in part, checked here: the binaries carry no
#     debug information or symbol table and their -dbgsym has it by build id,
#     the library package has shlibs and the ldconfig trigger, the Depends
#     are computed (libuv1 for vigil, the library for -dev), man pages are
#     gzipped, copyright is machine-readable and changelog.Debian.gz names
#     this version.
# Fails, naming it, when lintian or dpkg-deb is missing (scripts/install-deps.sh
# installs them).
#
#   package_test.sh SOURCE_DIR BUILD_DIR
set -euo pipefail
src=$1 build=$2
out=$build/package-test
maintainer="vigil test packager <packager@example.org>"
homepage="https://example.org/vigil"
fail() { echo "FAIL: $*"; exit 1; }

for tool in lintian dpkg-deb readelf; do
  command -v "$tool" >/dev/null 2>&1 || fail "$tool is not installed: run scripts/install-deps.sh"
done

"$src/scripts/package.sh" --no-deps --build-dir "$out" \
  -DVIGIL_PACKAGE_MAINTAINER="$maintainer" -DVIGIL_PACKAGE_HOMEPAGE="$homepage" \
  >"$out.log" 2>&1 || { cat "$out.log"; fail "scripts/package.sh failed"; }

version=$(sed -n 's/^CMAKE_PROJECT_VERSION:STATIC=//p' "$out/CMakeCache.txt")-1
# The library's soname version is the project's major (VIGIL_CLIENT_SOVERSION).
so=$(sed -n 's/^CMAKE_PROJECT_VERSION_MAJOR:STATIC=//p' "$out/CMakeCache.txt")
lib=libvigilclient$so
arch=$(dpkg --print-architecture)
echo "packages of $version for $arch, library package $lib"

made=$(cd "$out" && ls *.deb *.ddeb | sort | tr '\n' ' ')
want=$(printf '%s\n' "libvigilclient-dev_${version}_$arch.deb" "${lib}-dbgsym_${version}_$arch.ddeb" \
         "${lib}_${version}_$arch.deb" "vigil-dbgsym_${version}_$arch.ddeb" \
         "vigil_${version}_$arch.deb" | sort | tr '\n' ' ')
[ "$made" = "$want" ] || fail "made: $made; want: $want"

# lintian: not one error or warning, overridden tags aside.
report=$(cd "$out" && lintian --display-level '>=warning' ./*.deb ./*.ddeb 2>&1 |
         grep -v 'running with root privileges' || true)
if printf '%s\n' "$report" | grep -q '^[EW]: '; then
  printf '%s\n' "$report"
  fail "lintian reports errors or warnings (above)"
fi
echo "lintian: no error, no warning"

field() { dpkg-deb -f "$out/$1" "$2"; }
for deb in "$out"/*.deb "$out"/*.ddeb; do
  name=$(basename "$deb")
  [ "$(field "$name" Maintainer)" = "$maintainer" ] || fail "$name: Maintainer is \"$(field "$name" Maintainer)\""
done
for deb in vigil "$lib" libvigilclient-dev; do
  name=${deb}_${version}_$arch.deb
  [ "$(field "$name" Homepage)" = "$homepage" ] || fail "$name: Homepage is \"$(field "$name" Homepage)\""
  tmp=$out/unpacked-$deb
  rm -rf "$tmp" && mkdir -p "$tmp" && dpkg-deb -x "$out/$name" "$tmp"
  head -1 "$tmp/usr/share/doc/$deb/copyright" |
    grep -q '^Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/$' ||
    fail "$deb: usr/share/doc/$deb/copyright is not machine-readable"
  gzip -dc "$tmp/usr/share/doc/$deb/changelog.Debian.gz" | head -1 | grep -q "^vigil ($version) " ||
    fail "$deb: changelog.Debian.gz does not start with vigil ($version)"
done

# Depends computed by dpkg-shlibdeps, and the -dev on its library.
field "vigil_${version}_$arch.deb" Depends | grep -q 'libuv1 (>=' ||
  fail "vigil's Depends names no libuv1: $(field "vigil_${version}_$arch.deb" Depends)"
field "libvigilclient-dev_${version}_$arch.deb" Depends | grep -qF "$lib (= $version)" ||
  fail "libvigilclient-dev does not depend on $lib (= $version)"

# The library: shlibs and the ldconfig trigger.
ctrl=$out/control-$lib
rm -rf "$ctrl" && dpkg-deb -e "$out/${lib}_${version}_$arch.deb" "$ctrl"
grep -qx "libvigilclient $so $lib (>= $version)" "$ctrl/shlibs" || fail "$lib's shlibs: $(cat "$ctrl/shlibs")"
grep -qx 'activate-noawait ldconfig' "$ctrl/triggers" || fail "$lib has no ldconfig trigger"

# Stripped binaries; their debug information in -dbgsym, by build id.
dbg=$out/unpacked-dbgsym
rm -rf "$dbg" && mkdir -p "$dbg"
for d in "$out"/*.ddeb; do dpkg-deb -x "$d" "$dbg"; done
for bin in "$out/unpacked-vigil/usr/bin/vigild" "$out/unpacked-vigil/usr/bin/vigil" \
           "$out/unpacked-vigil/usr/bin/vigil-keeper" \
           "$out/unpacked-$lib/usr/lib/"*/libvigilclient.so.$so.*; do
  [ -f "$bin" ] || fail "$bin is not in the package"
  sections=$(readelf -S -W "$bin")
  case $sections in *.debug_info*|*" .symtab "*) fail "$(basename "$bin") is not stripped" ;; esac
  id=$(readelf -n "$bin" | sed -n 's/.*Build ID: \([0-9a-f]*\).*/\1/p')
  [ -n "$id" ] || fail "$(basename "$bin") has no build id"
  debug=$dbg/usr/lib/debug/.build-id/${id:0:2}/${id:2}.debug
  [ -f "$debug" ] && readelf -S -W "$debug" 2>/dev/null | grep -q '\.debug_info' ||
    fail "$(basename "$bin"): no debug information in -dbgsym at ${debug#"$dbg"}"
done

# Man pages, gzipped.
for page in man1/vigil.1 man8/vigild.8 man7/vigil-policies.7; do
  gzip -t "$out/unpacked-vigil/usr/share/man/$page.gz" 2>/dev/null || fail "$page is not gzipped in vigil"
done

# The programs of the package run (built with Debian's hardening flags).
for prog in vigild vigil; do
  "$out/unpacked-vigil/usr/bin/$prog" --version >/dev/null || fail "the packaged $prog --version failed"
done

echo "package: all checks passed"
