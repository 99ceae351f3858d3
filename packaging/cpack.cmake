# The Debian packages, through CPack: `cpack -G DEB` in a build directory
# configured by scripts/package.sh (a RelWithDebInfo build for the prefix
# /usr with -DVIGIL_DEBIAN=ON) makes one package per install component:
#   vigil               (component engine)     vigild, vigil, vigil-keeper,
#                       the bundled config, policies and Lua modules, man
#                       pages, completions, the systemd user units, the docs
#   libvigilclientN     (component client)     the C client library's
#                       shared object, named after its soname (N is
#                       VIGIL_CLIENT_SOVERSION), with shlibs and the
#                       ldconfig trigger
#   libvigilclient-dev  (component client_dev) the header, the .so link,
#                       the static archive and vigil-client.pc
# and, for each package with binaries, a PKG-dbgsym .ddeb: CPack splits the
# debug information out (objcopy --only-keep-debug, into
# /usr/lib/debug/.build-id/) and strips the binaries it ships.
# Depends are read from the binaries (dpkg-shlibdeps), so they name the
# libuv, PCRE2, msgpack, Lua, jansson and libyaml packages of the machine
# that built it. docs/packaging.md says what lintian says of them and why.
#
# The Maintainer and Homepage fields are settings the packager gives:
#   -DVIGIL_PACKAGE_MAINTAINER="Name <address>"   (also the changelog's)
#   -DVIGIL_PACKAGE_HOMEPAGE=https://...          (empty: no Homepage field)
# The defaults are placeholders, said as such: the project has no address of
# its own, so the default maintainer is at example.invalid (a name that can
# never resolve) and scripts/package.sh warns while it is in use.
set(VIGIL_PACKAGE_MAINTAINER "vigil packager <packager@example.invalid>" CACHE STRING
    "The packages' Maintainer: \"Name <address>\" of whoever builds and ships them")
set(VIGIL_PACKAGE_HOMEPAGE "" CACHE STRING
    "The packages' Homepage field (an http(s) URL); empty leaves the field out")
set(VIGIL_DEBIAN_REVISION 1 CACHE STRING "The Debian revision of the packages' version")

set(VIGIL_CLIENT_PACKAGE libvigilclient${VIGIL_CLIENT_SOVERSION})
set(VIGIL_DEBIAN_VERSION ${PROJECT_VERSION}-${VIGIL_DEBIAN_REVISION})

set(CPACK_PACKAGE_NAME vigil)
set(CPACK_PACKAGE_VENDOR "the vigil authors")
set(CPACK_PACKAGE_CONTACT "${VIGIL_PACKAGE_MAINTAINER}")
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
# No CPACK_PACKAGE_DESCRIPTION_SUMMARY: CPack would put it in front of every
# component's description (a duplicated synopsis, for lintian); each
# description below starts with its own.
set(CPACK_RESOURCE_FILE_LICENSE ${CMAKE_SOURCE_DIR}/LICENSE)
set(CPACK_GENERATOR DEB)
set(CPACK_DEB_COMPONENT_INSTALL ON)
set(CPACK_COMPONENTS_ALL engine client client_dev)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_RELEASE ${VIGIL_DEBIAN_REVISION})
set(CPACK_DEBIAN_PACKAGE_MAINTAINER "${VIGIL_PACKAGE_MAINTAINER}")
if(VIGIL_PACKAGE_HOMEPAGE)
  set(CPACK_DEBIAN_PACKAGE_HOMEPAGE "${VIGIL_PACKAGE_HOMEPAGE}")
endif()
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_GENERATE_SHLIBS ON)
# The library is 0.x: any release may change what it exports without a new
# soname yet, so a program built against this version needs at least it.
set(CPACK_DEBIAN_PACKAGE_GENERATE_SHLIBS_POLICY ">=")
set(CPACK_DEBIAN_DEBUGINFO_PACKAGE ON)
set(CPACK_STRIP_FILES OFF)   # the dbgsym split strips them, keeping the debug info
set(CPACK_SOURCE_IGNORE_FILES "/build[^/]*/" "/\\\\.git/" "node_modules")

# vigil: the engine and the command-line client.
set(CPACK_DEBIAN_ENGINE_PACKAGE_NAME vigil)
set(CPACK_DEBIAN_ENGINE_PACKAGE_SECTION devel)
set(CPACK_DEBIAN_ENGINE_PACKAGE_SUGGESTS "nodejs, python3-msgpack")
set(CPACK_DEBIAN_ENGINE_DESCRIPTION
"notification engine for AI agents watching long-lived commands
vigild runs dev servers, test watchers, log tails and builds in the
background for an AI agent and tells it, inside its own turns, the moment
their output matters: crash patterns, incidents instead of lines, rate
limits, and every notification framed as an untrusted observation.
vigil is its command-line client and an MCP server for agent harnesses.
")

# libvigilclientN: the shared library alone. Its triggers file activates
# ldconfig (Debian policy 8.1.1); the shlibs file CPack writes lets
# dpkg-shlibdeps name this package for programs linked with it.
set(CPACK_DEBIAN_CLIENT_PACKAGE_NAME ${VIGIL_CLIENT_PACKAGE})
set(CPACK_DEBIAN_CLIENT_PACKAGE_SECTION libs)
set(CPACK_DEBIAN_CLIENT_DESCRIPTION
"C client library for the vigil notification engine
libvigilclient speaks vigil's msgpack-rpc to vigild over a Unix socket or
vigild --stdio: it starts and stops monitors and hands the host the
notifications the engine pushes, resuming a session after the last one
handled. This package holds the shared library.
")
set(CPACK_DEBIAN_CLIENT_PACKAGE_CONTROL_EXTRA ${CMAKE_SOURCE_DIR}/packaging/debian/triggers)

# libvigilclient-dev: what a host builds with.
set(CPACK_DEBIAN_CLIENT_DEV_PACKAGE_NAME libvigilclient-dev)
set(CPACK_DEBIAN_CLIENT_DEV_PACKAGE_SECTION libdevel)
set(CPACK_DEBIAN_CLIENT_DEV_PACKAGE_DEPENDS
    "${VIGIL_CLIENT_PACKAGE} (= ${VIGIL_DEBIAN_VERSION}), libmsgpack-dev")
set(CPACK_DEBIAN_CLIENT_DEV_DESCRIPTION
"C client library for the vigil notification engine (development files)
libvigilclient speaks vigil's msgpack-rpc to vigild over a Unix socket or
vigild --stdio. This package holds the header vigil/client.h, the static
library, the link to the shared one and vigil-client.pc, so a host builds
with pkg-config --cflags --libs vigil-client.
")
include(CPack)
