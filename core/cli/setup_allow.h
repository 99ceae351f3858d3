/*
 * The project-aware allowlist of `vigil setup` (docs/mcp.md, "What the
 * agent may run"): the programs a project's own files call for, and the
 * config that allows them.
 *
 * What each marker in the project's top adds:
 *   package.json        node, and its package manager: the one named by
 *                       its "packageManager" field, else by its lockfile
 *                       (package-lock.json npm, pnpm-lock.yaml pnpm,
 *                       yarn.lock yarn, bun.lockb or bun.lock bun), else npm
 *   Makefile            make (also makefile, GNUmakefile)
 *   Cargo.toml          cargo
 *   go.mod              go
 *   pyproject.toml      python3; uv with uv.lock or [tool.uv]; poetry with
 *                       poetry.lock or [tool.poetry]; pytest when named
 *   requirements.txt    python3; pytest when named
 * npx, pnpm dlx, bunx and yarn dlx are never added: they fetch and run any
 * package of a registry, which would make the allowlist allow anything.
 *
 * The config the engine uses is found by the lookup every vigil program
 * shares (config_lookup.h): $VIGIL_CONFIG, else ~/.config/vigil/vigil.lua
 * ($XDG_CONFIG_HOME), else the bundled one.
 * When the person has none of their own, setup offers to write
 * ~/.config/vigil/vigil.lua (or $VIGIL_CONFIG) from the bundled config with
 * the project's programs added to monitor.allowed_commands (--yes, or a
 * question when stdin is a terminal; else it prints what it would write and
 * how). A config of their own is never rewritten: setup reads the string
 * literals of its allowed_commands table and prints the entries it lacks,
 * the file and the line, and `vigil reload`.
 */
#ifndef VIGIL_SETUP_ALLOW_H
#define VIGIL_SETUP_ALLOW_H

#include <stdbool.h>
#include <stdio.h>

#include "base/strbuf.h"

#define SETUP_ALLOW_MAX 16

/* The programs a project calls for, each with the file that says so. */
typedef struct {
  const char *program[SETUP_ALLOW_MAX];
  char why[SETUP_ALLOW_MAX][64];
  size_t n;
} SetupAllow;

/* Fills a with the programs the files in root call for. */
void setup_allow_detect(const char *root, SetupAllow *a);

/* The config the engine would use (see above) into out; *own says whether
 * it is the person's (not the bundled one); false when none is found (out
 * then holds the path of the person's, to create). */
bool setup_allow_config(char *out, size_t size, bool *own);

/* Reports on f what the config lacks of a, and, with `offer`, writes the
 * person's config when there is none (yes: without asking). Returns 0, or
 * -1 after printing why a write failed. */
int setup_allow_advise(const SetupAllow *a, const char *root, bool offer, bool yes, FILE *f);

#endif
