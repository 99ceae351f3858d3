/*
 * How a denial says to fix it (docs/protocol.md section 4). A start the
 * config refuses (a program not in monitor.allowed_commands, a shell
 * command with allow_shell false, a persistent monitor with
 * allow_persistent false, an env variable monitor.env_deny refuses) is
 * answered with the refusal's own words, then what to change: the config
 * file the engine loaded (or that it runs with none), the line of that
 * file where the key is set (found in the file's text when it was loaded;
 * else where to add it), the exact entry or value to write, and how to
 * make the running engine read it again (SIGHUP to its pid, exact whatever
 * its socket; or `vigil reload`, the config_reload method, when the CLI
 * reaches it).
 *
 * The lines are found once, at load, in the text the engine read: a
 * denial never touches the file. A line is the first, outside a `--`
 * comment, where the key's name stands as a word followed by `=`; a config
 * that builds its table otherwise gets "add it" instead of a line.
 */
#ifndef VIGIL_CONFIG_HINT_H
#define VIGIL_CONFIG_HINT_H

#include <stddef.h>

#include "base/error.h"

/* The config keys a denial can name. */
typedef enum {
  kConfigKeyAllowedCommands = 0, /* monitor.allowed_commands */
  kConfigKeyAllowShell,          /* monitor.allow_shell */
  kConfigKeyAllowPersistent,     /* monitor.allow_persistent */
  kConfigKeyEnvAllow,            /* monitor.env_allow */
  kConfigKeyCount,
} ConfigKey;

/* Where each key is set in a config's text: a 1-based line, 0 when not
 * found. */
typedef struct {
  int line[kConfigKeyCount];
} ConfigKeyLines;

/* Finds each key's line in len bytes of text (see above). */
void config_hint_find_lines(const char *text, size_t len, ConfigKeyLines *lines);

/* Appends to err's message (an error already set) what to change: in
 * config_path (NULL: the engine runs with no config file) at the line
 * lines gives for key, the entry to add (a quoted string for a list key;
 * ignored for the two booleans, which are set to true), and how to reload
 * the engine of pid reload_pid (0: none is running that would, as for the
 * config's own monitors at boot or --check-config: the reload is left
 * out). Truncated at the message's bound like every error. */
void config_hint_append(const char *config_path, const ConfigKeyLines *lines, ConfigKey key,
                        const char *entry, long reload_pid, VigilError *err);

#endif
