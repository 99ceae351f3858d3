/*
 * The harnesses `vigil setup` knows (docs/mcp.md, "vigil setup"): for each,
 * where its MCP servers, hooks and plugins live for a project and for the
 * user, and a function that adds vigil's entries to a plan (setup_plan.h)
 * or, with remove, takes out exactly those. One file per harness that needs
 * more than JSON (setup_codex.c: TOML and Codex's hook trust; setup_goose.c:
 * YAML); the JSON ones are here, on the shared pieces of setup_hooks.h.
 *
 * Every entry runs the vigil that runs setup, by its absolute path: `vigil
 * mcp` for the MCP server, `vigil hook HARNESS EVENT` for a hook (the
 * contract between setup and hook, issue 23); with `vigil --nats URL
 * --engine NAME setup`, `vigil --nats URL --engine NAME mcp` and `... hook
 * HARNESS EVENT`, the engine on another machine.
 */
#ifndef VIGIL_SETUP_HARNESS_H
#define VIGIL_SETUP_HARNESS_H

#include <jansson.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>

#include "cli/setup_plan.h"
#include "base/strbuf.h"

/* The most bytes of the options put in every entry (a NATS URL, an engine
 * name and a session name, with the options' own names). */
#define SETUP_OPTIONS_MAX 1280

typedef enum {
  kSetupProject = 0, /* the project's own files (cli_project.h's root) */
  kSetupUser,        /* the user's, for every project */
} SetupScope;

typedef struct {
  SetupScope scope;
  bool remove;
  char root[PATH_MAX];        /* the project's top (kSetupProject) */
  char home[PATH_MAX];        /* $HOME */
  char config_home[PATH_MAX]; /* $XDG_CONFIG_HOME, else ~/.config */
  char vigil[PATH_MAX];       /* this executable, absolute */
  /* vigil's own options that every entry puts before its subcommand, as
   * setup was given them: --nats URL --engine NAME (docs/fleet.md section
   * 6: the harness reaches that engine through the broker) and --session
   * NAME (the hooks and the MCP server share that session's cursor). */
  const char *options[6];
  size_t n_options;
  bool remote; /* --nats among them */
  /* "<vigil> [options] hook ", every word quoted for a shell when it needs
   * to be (a quote can take four bytes). */
  char hook_prefix[4 * (PATH_MAX + SETUP_OPTIONS_MAX) + 16];
} SetupContext;

typedef struct {
  const char *name;   /* as typed: "claude-code" */
  const char *title;  /* as shown: "Claude Code" */
  bool has_project;   /* a project-level place exists */
  /* Adds the harness's changes (or, with ctx->remove, their removal) to
   * plan. Returns 0, or -1 with err set (the plan is then not applied). */
  int (*plan)(const SetupContext *ctx, SetupPlan *plan, StrBuf *err);
} SetupHarness;

/* The harness called name, or NULL. */
const SetupHarness *setup_harness_find(const char *name);

/* Every harness (*n of them), in the order the help names them. */
const SetupHarness *setup_harness_list(size_t *n);

/* The harnesses with more than JSON (their own files). */
int setup_codex_plan(const SetupContext *ctx, SetupPlan *plan, StrBuf *err);
int setup_goose_plan(const SetupContext *ctx, SetupPlan *plan, StrBuf *err);

/* Codex's trust of vigil's hooks, asked of the codex on PATH
 * (setup_codex.c). setup_codex_trust_begin runs before the plan of `vigil
 * setup codex` is applied (for --remove, it learns which trust entries are
 * vigil's while hooks.json still names them); setup_codex_trust_end runs
 * after, records (or clears) the trust, and prints what it did, or the one
 * step the person must take, to f. */
typedef struct {
  bool found;            /* a codex is on PATH ... */
  char codex[PATH_MAX];  /* ... here */
  json_t *keys;          /* trust key -> hash of vigil's hooks */
  char *error;           /* why they could not be learned */
} SetupCodexTrust;

void setup_codex_trust_begin(const SetupContext *ctx, SetupCodexTrust *t);
void setup_codex_trust_end(const SetupContext *ctx, SetupCodexTrust *t, bool dry_run, FILE *f);

#endif
