/*
 * What a denial adds to say how to fix it (config_hint.h): the key's line
 * in the loaded config's text, and the sentence naming the file, the line,
 * the entry and the reload.
 */
#include "engine/config_hint.h"

#include <ctype.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

/* Each key's name (the part after "monitor.") and full name. */
static const char *const config_hint_names[kConfigKeyCount] = {
  "allowed_commands", "allow_shell", "allow_persistent", "env_allow",
};

/* Whether c may be part of a Lua name. */
static bool
config_hint_name_char(char c)
{
  return isalnum((unsigned char)c) || c == '_';
}

/* Whether the code of one line (comment cut off) sets name: the name as a
 * whole word followed, after blanks, by "=" (not "=="). */
static bool
config_hint_line_sets(const char *code, size_t len, const char *name)
{
  size_t nlen = strlen(name);
  for (size_t i = 0; i + nlen <= len; i++) {
    if (memcmp(code + i, name, nlen) != 0)
      continue;
    if (i > 0 && config_hint_name_char(code[i - 1]))
      continue;
    size_t j = i + nlen;
    if (j < len && config_hint_name_char(code[j]))
      continue;
    while (j < len && (code[j] == ' ' || code[j] == '\t'))
      j++;
    if (j < len && code[j] == '=' && (j + 1 >= len || code[j + 1] != '='))
      return true;
  }
  return false;
}

/* See config_hint.h. */
void
config_hint_find_lines(const char *text, size_t len, ConfigKeyLines *lines)
{
  memset(lines, 0, sizeof *lines);
  int lineno = 1;
  size_t pos = 0;
  while (pos < len) {
    const char *nl = memchr(text + pos, '\n', len - pos);
    size_t end = nl ? (size_t)(nl - text) : len;
    /* The code before a comment ("--" in a string is rare in a config and
     * would only hide a line, never invent one). */
    size_t code = pos;
    while (code + 1 < end && !(text[code] == '-' && text[code + 1] == '-'))
      code++;
    if (code + 1 >= end)
      code = end;
    for (int k = 0; k < kConfigKeyCount; k++) {
      if (lines->line[k] == 0 &&
          config_hint_line_sets(text + pos, code - pos, config_hint_names[k]))
        lines->line[k] = lineno;
    }
    pos = end + 1;
    lineno++;
  }
}

/* See config_hint.h. */
void
config_hint_append(const char *config_path, const ConfigKeyLines *lines, ConfigKey key,
                   const char *entry, long reload_pid, VigilError *err)
{
  if (err == NULL || !err->set || key < 0 || key >= kConfigKeyCount)
    return;
  const char *name = config_hint_names[key];
  bool is_list = key == kConfigKeyAllowedCommands || key == kConfigKeyEnvAllow;
  char change[600];
  if (is_list)
    snprintf(change, sizeof change, "add %s to monitor.%s", entry ? entry : "the entry", name);
  else
    snprintf(change, sizeof change, "set monitor.%s = true", name);
  size_t used = strlen(err->msg);
  char *out = err->msg + used;
  size_t room = sizeof err->msg - used;
  if (config_path == NULL) {
    snprintf(out, room,
             ". The engine runs with no config file (vigild was started with --no-config, or "
             "found none), so "
             "it allows nothing: to fix, write a config that does (%s; the bundled "
             "config/vigil.lua is a start) and restart the engine with --config FILE",
             change);
    return;
  }
  int line = lines ? lines->line[key] : 0;
  char where[96];
  if (line > 0)
    snprintf(where, sizeof where, " (set at line %d)", line);
  else
    snprintf(where, sizeof where, " (not set there: add it inside its monitor = { ... } table)");
  char reload[96] = "";
  if (reload_pid > 0)
    snprintf(reload, sizeof reload, ", then reload the engine: kill -HUP %ld (or vigil reload)",
             reload_pid);
  snprintf(out, room, ". To fix: %s in %s%s%s", change, config_path, where, reload);
}
