/*
 * Where this `vigil` finds its companions, for the hint it prints when no
 * engine is listening: the `vigild` to run (the one installed or built
 * beside this executable, else whichever `vigild` is on PATH) and a config
 * file that exists, the first of:
 *
 *   1. $XDG_CONFIG_HOME/vigil/vigil.lua (~/.config/vigil/vigil.lua), the
 *      user's own;
 *   2. <bindir>/../share/vigil/vigil.lua, where an install puts the bundled
 *      config (bin/vigil, bin/vigild, share/vigil/vigil.lua);
 *   3. <source>/config/vigil.lua when this executable runs from a CMake
 *      build tree, the source directory read from the tree's CMakeCache.txt
 *      (CMAKE_HOME_DIRECTORY), so nothing about the checkout is compiled in.
 *
 * All found at run time from /proc/self/exe, so a copied or installed
 * binary gives the right answer for where it is.
 */
#ifndef VIGIL_CLI_PATHS_H
#define VIGIL_CLI_PATHS_H

#include <stdbool.h>
#include <stddef.h>

/* Longest path handled; longer ones are treated as not found. */
#define CLI_PATHS_MAX 4096

/* The vigild to suggest: an absolute path beside this executable when one
 * is there and executable, else "vigild". Writes at most size bytes. */
void cli_paths_vigild(char *out, size_t size);

/* The first config of the list above that exists, written to out; returns
 * false (out then holds the user's own path, 1., the one to create) when
 * none does. */
bool cli_paths_config(char *out, size_t size);

#endif
