/*
 * Where this `vigil` finds its engine, for the hint it prints when no
 * engine is listening and for the engine `vigil mcp` starts: the `vigild`
 * to run (the one installed or built beside this executable, else
 * whichever `vigild` is on PATH), found at run time from /proc/self/exe, so
 * a copied or installed binary gives the right answer for where it is.
 * The config to give it is config_lookup's (core/base/config_lookup.h).
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

#endif
