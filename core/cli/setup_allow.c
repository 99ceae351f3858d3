/*
 * A project's programs and the config that allows them (see setup_allow.h).
 */
#include "cli/setup_allow.h"

#include <jansson.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/cli_paths.h"
#include "base/config_lookup.h"
#include "cli/setup_file.h"

/* The most of a marker file read to look for a name (pyproject.toml). */
#define SETUP_ALLOW_READ_MAX (1024 * 1024)

static bool
setup_allow_has(const char *root, const char *name)
{
  char path[PATH_MAX];
  struct stat st;
  return (size_t)snprintf(path, sizeof path, "%s/%s", root, name) < sizeof path &&
         stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

/* The first SETUP_ALLOW_READ_MAX bytes of root/name (NULL when absent). */
static char *
setup_allow_read(const char *root, const char *name, size_t *len)
{
  char path[PATH_MAX];
  if ((size_t)snprintf(path, sizeof path, "%s/%s", root, name) >= sizeof path)
    return NULL;
  FILE *f = fopen(path, "r");
  if (f == NULL)
    return NULL;
  char *buf = malloc(SETUP_ALLOW_READ_MAX + 1);
  size_t n = buf ? fread(buf, 1, SETUP_ALLOW_READ_MAX, f) : 0;
  fclose(f);
  if (buf == NULL)
    return NULL;
  buf[n] = '\0';
  *len = n;
  return buf;
}

static void
setup_allow_add(SetupAllow *a, const char *program, const char *why)
{
  for (size_t i = 0; i < a->n; i++)
    if (strcmp(a->program[i], program) == 0)
      return;
  if (a->n == SETUP_ALLOW_MAX)
    return;
  a->program[a->n] = program;
  snprintf(a->why[a->n], sizeof a->why[a->n], "%s", why);
  a->n++;
}

/* The package manager a package.json's project uses, and the file that
 * says so. */
static const char *
setup_allow_manager(const char *root, const char **why)
{
  static const char *const known[] = {"npm", "pnpm", "yarn", "bun", NULL};
  size_t len;
  char *text = setup_allow_read(root, "package.json", &len);
  json_t *pkg = text ? json_loadb(text, len, 0, NULL) : NULL;
  free(text);
  const char *pm = json_string_value(json_object_get(pkg, "packageManager"));
  const char *found = NULL;
  for (size_t i = 0; pm && known[i] && !found; i++)
    if (strncmp(pm, known[i], strlen(known[i])) == 0 && pm[strlen(known[i])] == '@')
      found = known[i];
  json_decref(pkg);
  if (found) {
    *why = "package.json's packageManager";
    return found;
  }
  static const struct {
    const char *file, *manager;
  } locks[] = {{"pnpm-lock.yaml", "pnpm"}, {"yarn.lock", "yarn"}, {"bun.lockb", "bun"},
               {"bun.lock", "bun"},        {"package-lock.json", "npm"}};
  for (size_t i = 0; i < sizeof locks / sizeof locks[0]; i++)
    if (setup_allow_has(root, locks[i].file)) {
      *why = locks[i].file;
      return locks[i].manager;
    }
  *why = "package.json (no lockfile: npm)";
  return "npm";
}

void
setup_allow_detect(const char *root, SetupAllow *a)
{
  memset(a, 0, sizeof *a);
  if (setup_allow_has(root, "package.json")) {
    const char *why;
    const char *pm = setup_allow_manager(root, &why);
    setup_allow_add(a, pm, why);
    setup_allow_add(a, "node", "package.json");
  }
  static const char *const makefiles[] = {"Makefile", "makefile", "GNUmakefile"};
  for (size_t i = 0; i < 3; i++)
    if (setup_allow_has(root, makefiles[i]))
      setup_allow_add(a, "make", makefiles[i]);
  if (setup_allow_has(root, "Cargo.toml"))
    setup_allow_add(a, "cargo", "Cargo.toml");
  if (setup_allow_has(root, "go.mod"))
    setup_allow_add(a, "go", "go.mod");
  size_t len;
  char *py = setup_allow_read(root, "pyproject.toml", &len);
  if (py) {
    setup_allow_add(a, "python3", "pyproject.toml");
    if (setup_allow_has(root, "uv.lock"))
      setup_allow_add(a, "uv", "uv.lock");
    else if (strstr(py, "[tool.uv"))
      setup_allow_add(a, "uv", "pyproject.toml's [tool.uv]");
    if (setup_allow_has(root, "poetry.lock"))
      setup_allow_add(a, "poetry", "poetry.lock");
    else if (strstr(py, "[tool.poetry"))
      setup_allow_add(a, "poetry", "pyproject.toml's [tool.poetry]");
    if (strstr(py, "pytest"))
      setup_allow_add(a, "pytest", "pyproject.toml");
    free(py);
  }
  static const char *const reqs[] = {"requirements.txt", "requirements-dev.txt"};
  for (size_t i = 0; i < 2; i++) {
    char *req = setup_allow_read(root, reqs[i], &len);
    if (req == NULL)
      continue;
    setup_allow_add(a, "python3", reqs[i]);
    if (strstr(req, "pytest"))
      setup_allow_add(a, "pytest", reqs[i]);
    free(req);
  }
}

/* See setup_allow.h: the one lookup every vigil program shares
 * (config_lookup.h); "own" is anything but the bundled config. */
bool
setup_allow_config(char *out, size_t size, bool *own)
{
  const char *why = NULL;
  bool found = config_lookup(NULL, out, size, &why);
  *own = !found || strcmp(why, CONFIG_LOOKUP_BUNDLED) != 0;
  return found;
}

/* Where a config's allowed_commands table is: the 1-based line of the key,
 * the offsets of its braces, and the string literals in it. Returns false
 * when the text has none that setup can read. */
typedef struct {
  size_t line, open, close;
  char entries[64][64];
  size_t n;
} SetupAllowed;

static bool
setup_allow_table(const char *text, SetupAllowed *t)
{
  memset(t, 0, sizeof *t);
  size_t line = 1;
  for (const char *p = text; *p; p++) {
    if (*p == '\n') {
      line++;
      continue;
    }
    if (p[0] == '-' && p[1] == '-') { /* a comment, to the line's end */
      while (p[1] && p[1] != '\n')
        p++;
      continue;
    }
    if (strncmp(p, "allowed_commands", 16) != 0 || (p > text && (p[-1] == '_' || p[-1] == '.')))
      continue;
    const char *q = p + 16;
    while (*q == ' ' || *q == '\t')
      q++;
    if (*q != '=')
      continue;
    q++;
    while (*q == ' ' || *q == '\t' || *q == '\n')
      q++;
    if (*q != '{')
      return false;
    t->line = line;
    t->open = (size_t)(q - text);
    int depth = 0;
    for (; *q; q++) {
      if (q[0] == '-' && q[1] == '-') {
        while (q[1] && q[1] != '\n')
          q++;
      } else if (*q == '{') {
        depth++;
      } else if (*q == '}') {
        if (--depth == 0) {
          t->close = (size_t)(q - text);
          return true;
        }
      } else if (*q == '"' || *q == '\'') {
        const char *end = strchr(q + 1, *q);
        if (end == NULL)
          return false;
        if (t->n < 64 && (size_t)(end - q - 1) < sizeof t->entries[0]) {
          memcpy(t->entries[t->n], q + 1, (size_t)(end - q - 1));
          t->entries[t->n][end - q - 1] = '\0';
          t->n++;
        }
        q = end;
      }
    }
    return false;
  }
  return false;
}

/* The programs of a not in t, as Lua strings ("pnpm", "uv"), into out. */
static size_t
setup_allow_missing(const SetupAllow *a, const SetupAllowed *t, StrBuf *out)
{
  size_t n = 0;
  for (size_t i = 0; i < a->n; i++) {
    bool have = false;
    for (size_t k = 0; k < t->n && !have; k++)
      have = strcmp(t->entries[k], a->program[i]) == 0;
    if (!have)
      strbuf_printf(out, "%s\"%s\"", n++ ? ", " : "", a->program[i]);
  }
  return n;
}

/* The bundled config with `missing` added to its allowed_commands, into
 * out. Returns false when its table cannot be found. */
static bool
setup_allow_compose(const char *bundled, const SetupAllowed *t, const char *missing,
                    const char *root, StrBuf *out)
{
  /* Before the line holding the closing brace, indented as the first
   * entry's line is. */
  size_t close_line = t->close;
  while (close_line > 0 && bundled[close_line - 1] != '\n')
    close_line--;
  if (close_line <= t->open)
    return false;
  const char *first = strchr(bundled + t->open, '\n');
  size_t indent = 0;
  while (first && (first[1 + indent] == ' ' || first[1 + indent] == '\t'))
    indent++;
  bool plain = true;
  for (const char *p = root; *p; p++)
    plain &= (unsigned char)*p >= 0x20 && *p != 0x7f;
  strbuf_append(out, bundled, close_line);
  strbuf_printf(out, "%*s%s, -- added by vigil setup for %s\n", (int)indent, "", missing,
                plain ? root : "a project");
  strbuf_puts(out, bundled + close_line);
  return true;
}

int
setup_allow_advise(const SetupAllow *a, const char *root, bool offer, bool yes, FILE *f)
{
  if (a->n == 0) {
    fprintf(f, "No build or test tool is named by %s's files (package.json, Makefile, "
               "Cargo.toml, go.mod, pyproject.toml, requirements.txt).\n",
            root);
    return 0;
  }
  fputs("This project calls for:", f);
  for (size_t i = 0; i < a->n; i++)
    fprintf(f, "%s %s (%s)", i ? "," : "", a->program[i], a->why[i]);
  fputs("\n", f);
  char config[PATH_MAX];
  bool own;
  bool found = setup_allow_config(config, sizeof config, &own);
  SetupFile file;
  StrBuf err = STRBUF_INIT;
  if (!found || setup_file_read(&file, config, &err) != 0 || !file.exists) {
    fprintf(f, "No config found (%s): the engine would allow nothing. Write %s with "
               "monitor.allowed_commands = { %s... } (config/vigil.lua of vigil's source is a "
               "start).\n",
            err.len ? strbuf_cstr(&err) : "not even the bundled one", config,
            a->program[0]);
    strbuf_free(&err);
    return 0;
  }
  SetupAllowed t;
  StrBuf missing = STRBUF_INIT;
  int rc = 0;
  if (!setup_allow_table(file.data, &t)) {
    fprintf(f, "%s has no monitor.allowed_commands table setup can read: make sure it lists "
               "the programs above, then run vigil reload.\n",
            config);
  } else if (setup_allow_missing(a, &t, &missing) == 0) {
    fprintf(f, "%s allows all of them.\n", config);
  } else if (own) {
    fprintf(f, "%s does not allow them all: add %s to monitor.allowed_commands (line %zu), then "
               "run vigil reload (a running engine reads its config again).\n",
            config, strbuf_cstr(&missing), t.line);
  } else {
    char target[PATH_MAX];
    StrBuf text = STRBUF_INIT;
    bool composed = config_lookup_user(target, sizeof target) &&
                    setup_allow_compose(file.data, &t, strbuf_cstr(&missing), root, &text);
    fprintf(f, "You have no config of your own: the engine uses %s, which does not allow %s.\n",
            config, strbuf_cstr(&missing));
    bool write = false;
    if (composed && offer && yes) {
      write = true;
    } else if (composed && offer && isatty(STDIN_FILENO)) {
      fprintf(f, "Write %s from it, with %s added? [y/N] ", target, strbuf_cstr(&missing));
      fflush(f);
      char answer[16] = "";
      write = fgets(answer, sizeof answer, stdin) != NULL && (answer[0] == 'y' || answer[0] == 'Y');
    }
    if (write) {
      SetupFile dest;
      if (setup_file_read(&dest, target, &err) != 0 || dest.exists ||
          setup_file_write(&dest, text.data, text.len, 0644, 0700, &err) != 0) {
        fprintf(f, "vigil: setup: could not write %s: %s\n", target,
                err.len ? strbuf_cstr(&err) : "it exists now");
        rc = -1;
      } else {
        fprintf(f, "wrote %s: the bundled config, allowing %s too. A running engine reads it "
                   "once restarted (vigil shutdown, then vigild --daemon --config %s), and "
                   "an engine vigil mcp or vigild --daemon starts finds it by itself.\n",
                target, strbuf_cstr(&missing), target);
      }
      setup_file_free(&dest);
    } else if (composed) {
      fprintf(f, "To allow them, run setup again with --yes: it writes %s, the bundled config "
                 "with monitor.allowed_commands gaining %s. Or copy %s there and add them "
                 "yourself.\n",
              target, strbuf_cstr(&missing), config);
    }
    strbuf_free(&text);
  }
  strbuf_free(&missing);
  strbuf_free(&err);
  setup_file_free(&file);
  return rc;
}
