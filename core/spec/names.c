/*
 * The names a caller chooses on the wire (see names.h).
 */
#include "spec/names.h"

#include <string.h>

bool
name_word_ok(const char *s, size_t n, size_t max)
{
  if (s == NULL || n == 0 || n > max)
    return false;
  for (size_t i = 0; i < n; i++) {
    char ch = s[i];
    bool ok = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
              ch == '.' || ch == '_' || ch == '-' || ch == ':';
    if (!ok)
      return false;
  }
  return true;
}

bool
session_name_ok(const char *name)
{
  return name != NULL && name_word_ok(name, strlen(name), SESSION_NAME_MAX) &&
         strncmp(name, "anon-", 5) != 0;
}
