# Run at install time (packaging/CMakeLists.txt): writes the systemd
# services with the paths of the prefix being installed to, which may not
# be the one configured (`cmake --install --prefix P`). VIGIL_UNITS_SRC,
# VIGIL_UNITS_OUT, VIGIL_BINDIR_REL and VIGIL_DATADIR_REL are set by the
# install code before it.
set(VIGIL_INSTALL_BINDIR "${CMAKE_INSTALL_PREFIX}/${VIGIL_BINDIR_REL}")
set(VIGIL_INSTALL_DATADIR "${CMAKE_INSTALL_PREFIX}/${VIGIL_DATADIR_REL}/vigil")
configure_file(${VIGIL_UNITS_SRC}/vigild.service.in ${VIGIL_UNITS_OUT}/vigild.service @ONLY)
configure_file(${VIGIL_UNITS_SRC}/vigild-system.service.in
               ${VIGIL_UNITS_OUT}/vigild-system.service @ONLY)
