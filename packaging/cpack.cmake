# The Debian package, through CPack: `cpack -G DEB` in a build directory
# (built with -DCMAKE_INSTALL_PREFIX=/usr, the package's own prefix) makes
# vigil_VERSION_ARCH.deb with everything `cmake --install` puts in place.
# Its dependencies are read from the binaries (dpkg-shlibdeps), so they
# name the libuv, PCRE2, msgpack, Lua and jansson packages of the machine
# that built it.
set(CPACK_PACKAGE_NAME vigil)
set(CPACK_PACKAGE_VENDOR "the vigil authors")
set(CPACK_PACKAGE_CONTACT "vigil maintainers <vigil@localhost>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY
    "notification engine for AI agents watching long-lived commands")
set(CPACK_PACKAGE_DESCRIPTION
    "vigild runs dev servers, test watchers, log tails and builds in the background \
for an AI agent and tells it, inside its own turns, the moment their output matters: \
crash patterns, incidents instead of lines, rate limits, and every notification framed \
as an untrusted observation. vigil is its command-line client and MCP server.")
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_RESOURCE_FILE_LICENSE ${CMAKE_SOURCE_DIR}/LICENSE)
set(CPACK_GENERATOR DEB)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION devel)
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_HOMEPAGE "https://example.invalid/vigil")
set(CPACK_DEBIAN_PACKAGE_SUGGESTS "coreutils, nodejs, python3-msgpack")
set(CPACK_STRIP_FILES OFF)
set(CPACK_SOURCE_IGNORE_FILES "/build[^/]*/" "/\\\\.git/" "node_modules")
include(CPack)
