/*
 * Which config file a vigil program means when none is named on its
 * command line: the one lookup vigild, its starters (`vigil mcp`, `vigil
 * setup`) and the CLI's "no engine" hint share, so that all of them name
 * the same file. In order:
 *
 *   1. the path given (a --config argument), taken as given;
 *   2. $VIGIL_CONFIG when set and non-empty, taken as given;
 *   3. the user's own: $XDG_CONFIG_HOME/vigil/vigil.lua when
 *      XDG_CONFIG_HOME is an absolute path, else ~/.config/vigil/vigil.lua
 *      ($HOME), when it is a regular file;
 *   4. the bundled config of the data directory (datadir.h): vigil.lua in
 *      an install's share/vigil, config/vigil.lua in a source tree, when it
 *      is a regular file.
 *
 * A path taken as given (1., 2.) is not checked: a named file that does
 * not exist is an error its reader reports, naming it, never a silent
 * fall-through to another config. Every path returned is absolute (a
 * relative one is joined to the working directory), so a daemon that
 * changes directory reads the same file.
 *
 * vigild looks the same way when no --config is given, and names the file
 * on stderr; with --no-config, or when nothing is found, it runs with no
 * config and denies every start (fail closed).
 *
 * A config's identity (config_identity) is its real path and the SHA-256
 * of its bytes: the engine reports the one it loaded (api_info "config"),
 * and `vigil mcp` compares it with the file it would have given, to say
 * when the engine runs another config or an older state of the same one.
 */
#ifndef VIGIL_CONFIG_LOOKUP_H
#define VIGIL_CONFIG_LOOKUP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/strbuf.h"

/* The longest path handled; a longer one counts as not found. */
#define CONFIG_LOOKUP_PATH_MAX 4096

/* How a config was found (config_lookup's *why), to compare with. */
#define CONFIG_LOOKUP_GIVEN "--config"
#define CONFIG_LOOKUP_ENV "$VIGIL_CONFIG"
#define CONFIG_LOOKUP_USER "the user's config"
#define CONFIG_LOOKUP_BUNDLED "the bundled config"
#define CONFIG_LOOKUP_NONE "no config found"

/* Finds the config (see above). given: a path named on the command line, or
 * NULL. Writes the path (at most n bytes) to out and, when why is not NULL,
 * sets *why to a static phrase saying how it was found (one of the
 * CONFIG_LOOKUP_* above). Returns true when a config was found; false when
 * none was, with out the user's own path (3.), the file to create, and
 * *why CONFIG_LOOKUP_NONE. Reads the
 * environment and stats files; creates nothing. */
bool config_lookup(const char *given, char *out, size_t n, const char **why);

/* The user's own config path (3. above), whether or not it exists, into
 * out; false (out "") when neither XDG_CONFIG_HOME nor HOME is an absolute
 * path or it does not fit. The file `vigil setup` writes. */
bool config_lookup_user(char *out, size_t n);

/* The most bytes of a config file config_identity reads (the engine's
 * config loader refuses a larger file anyway). */
#define CONFIG_IDENTITY_MAX_BYTES (1u << 20)

typedef struct {
  char real_path[CONFIG_LOOKUP_PATH_MAX]; /* resolved: no symlink, no ".." */
  char sha256[65];        /* of the file's bytes, lowercase hex */
  uint64_t size;          /* bytes */
} ConfigIdentity;

/* Reads path (at most CONFIG_IDENTITY_MAX_BYTES) and fills id; when text is
 * not NULL the bytes read are appended to it. Returns false (id zeroed)
 * when the file cannot be resolved, opened or read whole within the
 * bound. Blocking file I/O: the engine calls it only while it loads a
 * config. */
bool config_identity(const char *path, ConfigIdentity *id, StrBuf *text);

#endif
