/*
 * Where vigil's own files are: the Lua modules policies `require` (lua/)
 * and the bundled policies (plugins/), with the bundled config beside
 * them when installed.
 *
 * Found, in order: $VIGIL_DATA_DIR when set (an override, for a
 * relocated or hand-made tree); else the install's data directory,
 * relative to the running executable (an install to any prefix, or a
 * package unpacked anywhere, finds its own files: bin/vigild ->
 * share/vigil, the relative path fixed at build time from the install
 * layout); else the source tree the executable was built from (running
 * from a build directory). The first that holds a plugins/ directory
 * wins; nothing found leaves ".", and the policies then fail to load with
 * their path in the error.
 */
#ifndef VIGIL_DATADIR_H
#define VIGIL_DATADIR_H

/* The data directory (found once, then cached). */
const char *datadir_path(void);

/* How it was found, for the start-up log: "VIGIL_DATA_DIR", "the
 * install", "the source tree" or "nothing found". */
const char *datadir_source(void);

#endif
