/*
 * The environment a child gets (see childenv.h): the deny and allow rules
 * for a caller's variables, the inherit filter for the engine's own, and the
 * PREFIX* patterns both are written in.
 *
 * Why a deny list and not an allow list for the caller's variables: an
 * agent legitimately sets many variables (PORT, NODE_ENV, RUST_LOG,
 * PYTHONUNBUFFERED), and those only configure the program the allowlist
 * already let run. What must not pass is a variable that makes something
 * else run: a library loaded into the program, a script sourced before it,
 * a module imported at its start. Those turn "may run make" into "may run
 * anything as the engine's user", which is what the allowlist exists to
 * prevent.
 *
 * The line-buffering additions (childenv_build's second layer) use the
 * same hook on purpose, with a library the engine chose: coreutils'
 * libstdbuf, which is what `stdbuf -oL` preloads. It sets the buffering of
 * stdout from _STDBUF_O before main, so every dynamically linked program
 * that writes with C stdio (and whatever it starts: the variables are
 * inherited) writes each line as it ends. A statically linked or setuid
 * program ignores LD_PRELOAD and stays as it was; Python buffers on its own,
 * hence PYTHONUNBUFFERED. Node, Go and Rust write each call unbuffered
 * already.
 */
#include "proc/childenv.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "spec/gate.h"
#include "base/memory.h"

#define CHILDENV_STRINGIFY_(x) #x
#define CHILDENV_STRINGIFY(x) CHILDENV_STRINGIFY_(x)

/* The default monitor.env_deny. Each entry is a variable (or a family) by
 * which the caller, not the program the allowlist let run, would choose
 * code that runs as the engine's user:
 *  - a start-up hook of the loader or of an interpreter, which makes a
 *    program run code that is not its own before (or instead of) its own;
 *  - a program the child runs by name or by a variable (PATH, EDITOR, CC,
 *    ...): the allowlist judged argv[0], not what argv[0] then starts;
 *  - a file or directory the child reads such code or such a name from (a
 *    config file, a module search path, a tool's home).
 * The list cannot name every variable every tool reads: it covers the
 * loader, the shells, the programs of the default allowlist (config/
 * vigil.lua) and what those commonly start (git, the C toolchain, package
 * managers). A deployment that allows another tool adds that tool's
 * variables. Names are compared without regard to ASCII case
 * (childenv_check): npm reads npm_config_* in any case, and a "Path" is no
 * reason to let a "PATH" through. */
const char *const childenv_default_deny[] = {
  /* --- start-up hooks of the loader and the libraries every program has */
  /* The dynamic loader: LD_PRELOAD and LD_AUDIT load a library into every
   * dynamic program (its constructor runs first); LD_LIBRARY_PATH replaces
   * the libraries it links. The whole family, so a new one is covered. */
  "LD_*",
  /* macOS's loader has the same hooks under these names. */
  "DYLD_*",
  /* glibc loads gconv modules (shared objects) from here for iconv. */
  "GCONV_PATH",
  /* Parsed by the loader of every program; it has held a memory-corruption
   * bug that gave root (CVE-2023-4911), and it changes how malloc behaves. */
  "GLIBC_TUNABLES",
  /* OpenSSL reads its configuration file at start in every program that
   * uses it (Python's ssl, curl, git's https); the file can load an engine
   * or a provider, a shared object, from any path. The other two are where
   * those are looked for. */
  "OPENSSL_CONF",
  "OPENSSL_ENGINES",
  "OPENSSL_MODULES",
  /* A terminfo database of the caller's choosing, parsed by every curses
   * program; its parser has held memory-corruption bugs (CVE-2023-29491). */
  "TERMINFO",
  "TERMINFO_DIRS",

  /* --- shells */
  /* bash sources $BASH_ENV before every non-interactive script; sh, dash
   * and ksh source $ENV. A Makefile recipe or an npm script is such a
   * script. */
  "BASH_ENV",
  "ENV",
  /* bash imports these as functions: BASH_FUNC_make%% replaces `make` in
   * every bash script the child runs. */
  "BASH_FUNC_*",
  /* bash applies them at start: SHELLOPTS=xtrace runs the expansions of a
   * PS4 the caller also sets (command substitution included). */
  "SHELLOPTS",
  "BASHOPTS",
  /* Expanded, command substitution included, before each line a tracing
   * script runs (set -x; pyenv's shims trace with PYENV_DEBUG). bash
   * ignores it in the environment only when it runs as root. */
  "PS4",
  /* `cd sub` in a script (a Makefile recipe) enters sub under a CDPATH
   * directory before ./sub, in sh and bash alike: the script then runs the
   * caller's ./configure. */
  "CDPATH",
  /* zsh sources $ZDOTDIR/.zshenv at every start, `zsh -c` and scripts
   * included. */
  "ZDOTDIR",

  /* --- programs run by name or by a variable */
  /* Where every program the child runs by name is found: `#!/usr/bin/env
   * node` (npm, and any such script), execvp(), system(). The engine never
   * searches it for argv[0] (proc_resolve.c), but the child does, so the
   * caller's PATH would choose the interpreter of an allowlisted script
   * (issue 22). The child keeps the engine's PATH (monitor.env_inherit). */
  "PATH",
  /* The shell, editor, pager and browser tools start: git commit runs
   * $EDITOR, npm's `npm docs` $BROWSER, many tools `$SHELL -c`. */
  "SHELL",
  "EDITOR",
  "VISUAL",
  "SUDO_EDITOR",
  "PAGER",
  "MANPAGER",
  /* less: LESSOPEN and LESSCLOSE are commands it runs on every file; a
   * "+!cmd" in LESS runs a shell command at start. */
  "LESS*",
  "BROWSER",
  /* The programs ssh and sudo run to ask for a password. */
  "SSH_ASKPASS",
  "SUDO_ASKPASS",
  /* A Makefile's $(PYTHON), and node-gyp's Python (npm install of any
   * native module). */
  "PYTHON",

  /* --- where configuration is read from (configuration names programs) */
  /* ~/.gitconfig (core.sshCommand, core.fsmonitor: a command git status
   * runs), ~/.npmrc (script-shell), ~/.cargo/config.toml (rustc-wrapper),
   * ~/.zshenv, and Python's user site-packages, whose .pth files run at
   * every start of python3: a HOME of the caller's choosing is all of
   * these at once. The child keeps the engine's HOME (env_inherit). */
  "HOME",
  /* The XDG base directories stand for HOME's parts: git, pip and others
   * read their configuration from $XDG_CONFIG_HOME, go keeps its build
   * cache (compiled code it links without rebuilding) in $XDG_CACHE_HOME. */
  "XDG_*",

  /* --- git: nearly every GIT_ variable chooses a program or a file git
   * reads commands from (GIT_SSH_COMMAND, GIT_EXEC_PATH, GIT_ASKPASS,
   * GIT_EDITOR, GIT_PAGER, GIT_EXTERNAL_DIFF, GIT_PROXY_COMMAND,
   * GIT_TEMPLATE_DIR's hooks, GIT_DIR's config, GIT_CONFIG_COUNT /
   * GIT_CONFIG_PARAMETERS / GIT_CONFIG_GLOBAL, which set any config key), and
   * git adds new ones. The whole family; the harmless names (the author
   * and committer, GIT_TERMINAL_PROMPT) are in the default env_allow. */
  "GIT_*",

  /* --- node and its package managers */
  /* node: --require / --import in NODE_OPTIONS loads a module first;
   * NODE_PATH is searched for a module the project does not have; the REPL
   * runs NODE_REPL_EXTERNAL_MODULE in its place. */
  "NODE_OPTIONS",
  "NODE_PATH",
  "NODE_REPL_EXTERNAL_MODULE",
  /* npm reads every setting from npm_config_NAME, in any case:
   * script-shell runs every npm script, userconfig and globalconfig name
   * an npmrc, registry chooses where the packages whose install scripts
   * run come from. yarn (and pnpm, which reads npm_config_* too) have their
   * own families; corepack downloads and runs the package manager itself
   * (COREPACK_NPM_REGISTRY, COREPACK_HOME). */
  "npm_config_*",
  "YARN_*",
  "PNPM_*",
  "COREPACK_*",

  /* --- python */
  /* Python runs $PYTHONSTARTUP (interactive) and imports from $PYTHONPATH
   * before its own library; PYTHONHOME replaces that library (site.py,
   * encodings, imported at every start). PYTHONUSERBASE holds the user
   * site-packages, whose .pth files run at every start; bytecode is read
   * from PYTHONPYCACHEPREFIX in place of the source's; PYTHONEXECUTABLE is
   * what multiprocessing and sys.executable's users start (macOS);
   * PYTHONBREAKPOINT names a callable imported at breakpoint(). */
  "PYTHONSTARTUP",
  "PYTHONPATH",
  "PYTHONHOME",
  "PYTHONUSERBASE",
  "PYTHONPYCACHEPREFIX",
  "PYTHONEXECUTABLE",
  "PYTHONBREAKPOINT",
  /* pip's settings: an index or a config file of the caller's choosing is
   * the code pip installs and runs (setup.py, build backends). */
  "PIP_*",
  /* pytest: -p in PYTEST_ADDOPTS loads a plugin, and so does each module
   * PYTEST_PLUGINS names (-c and -o there read the caller's ini). */
  "PYTEST_ADDOPTS",
  "PYTEST_PLUGINS",
  /* pyenv's shims (python3 on many machines) run the Python that
   * PYENV_VERSION and PYENV_ROOT choose. */
  "PYENV_*",

  /* --- make and the C toolchain */
  /* GNU make: MAKEFLAGS (and MFLAGS, GNUMAKEFLAGS) carry options such as
   * --eval=$(shell ...) and variable overrides; MAKEFILES names makefiles
   * read first; MAKE is what a recursive $(MAKE) runs. */
  "MAKE*",
  "MFLAGS",
  "GNUMAKEFLAGS",
  /* make imports every variable of its environment, and one overrides
   * make's built-in default of the same name: CC=/tmp/x/cc makes $(CC)
   * run it in every recipe and built-in rule. The programs of make's
   * built-in rules and of the toolchain a build commonly calls by variable
   * (autotools, cargo's cc crate, cgo): */
  "AR", "AS", "CC", "CXX", "CPP", "FC", "LD", "NM", "RANLIB", "STRIP", "OBJCOPY", "OBJDUMP",
  "M4", "LEX", "YACC", "RM", "PC", "CO", "GET", "LINT", "MAKEINFO", "TEX", "TEXI2DVI",
  "WEAVE", "CWEAVE", "TANGLE", "CTANGLE", "M2C",
  /* ... and the options they are given: a compiler driver's -wrapper runs
   * a program around every step, -B and -specs= choose its programs,
   * -fplugin loads a library; ar --plugin loads one too. */
  "CFLAGS", "CXXFLAGS", "CPPFLAGS", "LDFLAGS", "LDLIBS", "FFLAGS", "ASFLAGS", "ARFLAGS",
  "LFLAGS", "YFLAGS", "PFLAGS", "RFLAGS", "GFLAGS", "COFLAGS", "LINTFLAGS",
  /* gcc finds its own programs (cc1, as, collect2) under these, and the
   * headers and libraries it builds into the program here. */
  "GCC_EXEC_PREFIX",
  "COMPILER_PATH",
  "LIBRARY_PATH",
  "CPATH",
  "C_INCLUDE_PATH",
  "CPLUS_INCLUDE_PATH",
  "OBJC_INCLUDE_PATH",
  /* pkg-config: the program, and the .pc files whose flags (-wrapper
   * included) a build passes to the compiler. */
  "PKG_CONFIG*",
  /* ccache runs CCACHE_PREFIX around the compiler and reads CCACHE_COMPILER
   * and a config file of these. */
  "CCACHE_*",
  /* CMake reads CMAKE_TOOLCHAIN_FILE (CMake code) and the compiler and
   * linker launchers from its environment. */
  "CMAKE_*",

  /* --- rust */
  /* cargo reads every setting from CARGO_NAME (build.rustc-wrapper,
   * target.<triple>.runner and linker, the registries); CARGO_HOME is its
   * config and installed programs; CARGO is the cargo a subcommand or a
   * build script runs. RUSTC*, RUSTDOC* name the compiler and its wrappers,
   * RUSTFLAGS its options (-C linker=), RUSTUP_TOOLCHAIN may be a path to a
   * toolchain. */
  "CARGO",
  "CARGO_*",
  "RUSTC*",
  "RUSTDOC*",
  "RUSTFLAGS",
  "RUSTUP_*",

  /* --- go */
  /* GOFLAGS holds -toolexec (a program run around every tool) and -exec;
   * GOROOT and GOTOOLCHAIN choose the toolchain; GOENV names a file of all
   * these settings; GOPATH, GOMODCACHE and GOCACHE hold code and compiled
   * packages go uses without checking again; GOPROXY with GOSUMDB,
   * GONOSUMDB, GOPRIVATE, GONOPROXY or GOINSECURE chooses the source of
   * the dependencies it builds, GOVCS the version control programs it
   * runs, GOWORK a go.work that replaces modules; GOBIN is where go
   * install writes programs. cgo passes CGO_CFLAGS and CGO_LDFLAGS to the
   * compiler unchecked (what #cgo lines may not). */
  "GOFLAGS", "GOROOT", "GOTOOLCHAIN", "GOENV", "GOPATH", "GOMODCACHE", "GOCACHE", "GOPROXY",
  "GOSUMDB", "GONOSUMDB", "GOPRIVATE", "GONOPROXY", "GOINSECURE", "GOVCS", "GOWORK", "GOBIN",
  "CGO_*",

  /* --- perl, ruby, the JVM */
  /* perl: PERL5OPT adds -M options (a module loaded first); PERL5LIB and
   * PERLLIB are searched before perl's own library for `use strict`, which
   * nearly every script loads while compiling. */
  "PERL5OPT",
  "PERL5LIB",
  "PERLLIB",
  /* ruby: RUBYOPT adds -r (a library required first); RUBYLIB is searched
   * first for rubygems, which every ruby requires at start. Gems (and
   * their plugins, loaded by gem and bundle) come from GEM_HOME and
   * GEM_PATH; bundler evaluates the Gemfile BUNDLE_GEMFILE names. */
  "RUBYOPT",
  "RUBYLIB",
  "GEM_HOME",
  "GEM_PATH",
  "BUNDLE_*",
  /* The JVM reads options from these; -javaagent runs a jar's agent first.
   * JAVA_OPTS, MAVEN_OPTS and GRADLE_OPTS are given to the JVM by the
   * launch scripts; they and gradle and maven run $JAVA_HOME/bin/java;
   * CLASSPATH chooses the classes; gradle runs the init scripts of
   * GRADLE_USER_HOME. */
  "JAVA_TOOL_OPTIONS",
  "JDK_JAVA_OPTIONS",
  "_JAVA_OPTIONS",
  "JAVA_OPTS",
  "JAVA_HOME",
  "CLASSPATH",
  "MAVEN_OPTS",
  "MAVEN_ARGS",
  "GRADLE_OPTS",
  "GRADLE_USER_HOME",

  /* --- the trust anchors of what a build downloads */
  /* With a certificate authority of the caller's (or no check at all) and
   * a proxy of its choosing (HTTPS_PROXY passes), pip install or npm
   * install gets its packages, whose install scripts run, from the
   * caller's server. */
  "SSL_CERT_FILE",
  "SSL_CERT_DIR",
  "REQUESTS_CA_BUNDLE",
  "CURL_CA_BUNDLE",
  "NODE_EXTRA_CA_CERTS",
  "NODE_TLS_REJECT_UNAUTHORIZED",
  NULL,
};

/* The default monitor.env_allow: names of a denied family that choose
 * nothing that runs. git's identity (who a commit is by, and when) and
 * GIT_TERMINAL_PROMPT (0: fail rather than prompt); cargo's output style,
 * incremental builds and job count; whether cgo is on; CMake's parallel
 * build level. */
const char *const childenv_default_allow[] = {
  "GIT_AUTHOR_NAME", "GIT_AUTHOR_EMAIL", "GIT_AUTHOR_DATE", "GIT_COMMITTER_NAME",
  "GIT_COMMITTER_EMAIL", "GIT_COMMITTER_DATE", "GIT_TERMINAL_PROMPT", "CARGO_TERM_*",
  "CARGO_INCREMENTAL", "CARGO_BUILD_JOBS", "CGO_ENABLED", "CMAKE_BUILD_PARALLEL_LEVEL", NULL,
};

/* The default monitor.env_inherit: what a program needs to find its tools,
 * its home, its locale and its terminal type, and nothing that is a
 * credential. */
const char *const childenv_default_inherit[] = {
  "PATH", "HOME", "USER", "LOGNAME", "LANG", "LC_*", "TERM", "TZ", "TMPDIR", NULL,
};

/* Whether a and b (n bytes each) are equal, or with nocase equal but for
 * ASCII case. Not strncasecmp: that follows the locale. */
static bool
childenv_same(const char *a, const char *b, size_t n, bool nocase)
{
  if (!nocase)
    return memcmp(a, b, n) == 0;
  for (size_t i = 0; i < n; i++) {
    unsigned char x = (unsigned char)a[i], y = (unsigned char)b[i];
    if (x >= 'A' && x <= 'Z')
      x = (unsigned char)(x - 'A' + 'a');
    if (y >= 'A' && y <= 'Z')
      y = (unsigned char)(y - 'A' + 'a');
    if (x != y)
      return false;
  }
  return true;
}

/* childenv_match, with nocase ignoring ASCII case. */
static bool
childenv_match_how(const char *pattern, const char *name, size_t len, bool nocase)
{
  size_t plen = strlen(pattern);
  if (plen > 0 && pattern[plen - 1] == '*')
    return len >= plen - 1 && childenv_same(pattern, name, plen - 1, nocase);
  return plen == len && childenv_same(pattern, name, len, nocase);
}

/* The first pattern of list that matches, ignoring case or not. */
static const char *
childenv_match_list(const char *const *list, const char *name, size_t len, bool nocase)
{
  for (size_t i = 0; list != NULL && list[i] != NULL; i++) {
    if (childenv_match_how(list[i], name, len, nocase))
      return list[i];
  }
  return NULL;
}

/* See childenv.h. */
bool
childenv_match(const char *pattern, const char *name, size_t len)
{
  return childenv_match_how(pattern, name, len, false);
}

/* See childenv.h. */
const char *
childenv_match_any(const char *const *list, const char *name, size_t len)
{
  return childenv_match_list(list, name, len, false);
}

/* See childenv.h. */
const char *
childenv_match_any_nocase(const char *const *list, const char *name, size_t len)
{
  return childenv_match_list(list, name, len, true);
}

/* See childenv.h. */
const char *
childenv_pattern_problem(const char *pattern)
{
  size_t len = strlen(pattern);
  if (len == 0)
    return "must not be empty";
  if (len > CHILDENV_PATTERN_MAX)
    return "must be at most " CHILDENV_STRINGIFY(CHILDENV_PATTERN_MAX) " bytes";
  for (size_t i = 0; i < len; i++) {
    unsigned char c = (unsigned char)pattern[i];
    if (c == '=')
      return "must not contain \"=\" (it names a variable, without a value)";
    if (c <= ' ' || c == 0x7f)
      return "must not contain a space or a control character";
    if (c == '*' && i != len - 1)
      return "may hold \"*\" only as its last character (NAME or PREFIX*)";
  }
  return NULL;
}

/* See childenv.h. */
int
childenv_check(char *const *env, const char *const *deny, const char *const *allow,
               VigilError *err)
{
  return childenv_check_at(env, deny, allow, NULL, err);
}

/* See childenv.h. */
int
childenv_check_at(char *const *env, const char *const *deny, const char *const *allow,
                  size_t *at, VigilError *err)
{
  for (size_t i = 0; env != NULL && env[i] != NULL; i++) {
    if (at != NULL)
      *at = i;
    const char *eq = strchr(env[i], '=');
    size_t len = eq ? (size_t)(eq - env[i]) : strlen(env[i]);
    char *name = xmemdupz(env[i], len);
    char quoted[GATE_QUOTE_BUF];
    gate_quote(quoted, name);
    free(name);
    if (eq == NULL || len == 0)
      return error_set(err, kErrInvalidParams,
                       "env: variable name %s must be non-empty, without \"=\"", quoted);
    const char *hit = childenv_match_any_nocase(deny, env[i], len);
    if (hit == NULL || childenv_match_any_nocase(allow, env[i], len) != NULL)
      continue;
    char entry[GATE_QUOTE_BUF];
    gate_quote(entry, hit);
    return error_set(err, kErrDenied,
                     "env: %s is refused by monitor.env_deny (entry %s): it can make the "
                     "program run other code; a deployment that needs it lists it in "
                     "monitor.env_allow",
                     quoted, entry);
  }
  return 0;
}

/* See childenv.h. Judged as childenv_check_at judges one entry. */
size_t
childenv_drop(char **env, const char *const *deny, const char *const *allow, char ***names)
{
  size_t kept = 0, dropped = 0, total = 0;
  while (env != NULL && env[total] != NULL)
    total++;
  char **out = NULL;
  for (size_t i = 0; i < total; i++) {
    const char *eq = strchr(env[i], '=');
    size_t len = eq ? (size_t)(eq - env[i]) : 0;
    if (len == 0 || childenv_match_any_nocase(deny, env[i], len) == NULL ||
        childenv_match_any_nocase(allow, env[i], len) != NULL) {
      env[kept++] = env[i];
      continue;
    }
    if (names != NULL) {
      if (out == NULL)
        out = xcalloc(total + 1, sizeof *out);
      out[dropped] = xmemdupz(env[i], len);
    }
    dropped++;
    free(env[i]);
  }
  if (env != NULL)
    env[kept] = NULL;
  if (names != NULL)
    *names = out;
  return dropped;
}

/* The length of the name in "NAME=VALUE", or 0 when there is no '='. */
static size_t
childenv_name_len(const char *kv)
{
  const char *eq = strchr(kv, '=');
  return eq ? (size_t)(eq - kv) : 0;
}

/* Whether list (NULL-terminated, may be NULL) has an entry for the name of
 * length len that kv starts with. */
static bool
childenv_sets(char *const *list, const char *kv, size_t len)
{
  for (size_t i = 0; list != NULL && list[i] != NULL; i++) {
    if (childenv_name_len(list[i]) == len && memcmp(list[i], kv, len) == 0)
      return true;
  }
  return false;
}

/* --- line buffering -------------------------------------------------------- */

/* See childenv.h. */
const char *const childenv_stdbuf_paths[] = {
  "/usr/libexec/coreutils/libstdbuf.so",
  "/usr/lib/coreutils/libstdbuf.so",
  "/usr/lib/x86_64-linux-gnu/coreutils/libstdbuf.so",
  "/usr/lib/aarch64-linux-gnu/coreutils/libstdbuf.so",
  "/usr/lib64/coreutils/libstdbuf.so",
  "/usr/local/libexec/coreutils/libstdbuf.so",
  NULL,
};

/* The variables the additions set or merge, as "NAME=" prefixes. */
#define CHILDENV_PYTHON "PYTHONUNBUFFERED="
#define CHILDENV_STDBUF_OUT "_STDBUF_O="
#define CHILDENV_PRELOAD "LD_PRELOAD="
#define CHILDENV_ASAN "ASAN_OPTIONS="
/* What ASAN_OPTIONS gets in front: ASan refuses to start when a library
 * other than its runtime comes first among the loaded ones, which a
 * preload always does. Later options override earlier ones, so a caller's
 * own verify_asan_link_order still decides. */
#define CHILDENV_ASAN_LINK_ORDER "verify_asan_link_order=0"

/* Whether st (of a file or a directory) is one no other user can change:
 * owned by root or by the engine's user, writable by neither group nor
 * others. */
static bool
childenv_trusted(const struct stat *st)
{
  return (st->st_uid == 0 || st->st_uid == geteuid()) && (st->st_mode & (S_IWGRP | S_IWOTH)) == 0;
}

/* See childenv.h. The directory is checked too: one writable by others
 * would let them put another file in the library's place. */
const char *
childenv_stdbuf_find(const char *const *paths)
{
  for (size_t i = 0; paths != NULL && paths[i] != NULL; i++) {
    struct stat st, dir;
    const char *slash = strrchr(paths[i], '/');
    if (slash == NULL || stat(paths[i], &st) != 0 || !S_ISREG(st.st_mode) ||
        !childenv_trusted(&st))
      continue;
    char *parent = xmemdupz(paths[i], slash == paths[i] ? 1 : (size_t)(slash - paths[i]));
    bool ok = stat(parent, &dir) == 0 && childenv_trusted(&dir);
    free(parent);
    if (ok)
      return paths[i];
  }
  return NULL;
}

/* See childenv.h. Spawns happen on the engine's loop thread only, so a
 * plain flag is enough. */
const char *
childenv_stdbuf(void)
{
  static bool looked;
  static const char *found;
  if (!looked) {
    found = childenv_stdbuf_find(childenv_stdbuf_paths);
    looked = true;
  }
  return found;
}

/* The value of the last entry of list (NULL-terminated, may be NULL) that
 * sets the name of "NAME=" prefix, or NULL. */
static const char *
childenv_value(char *const *list, const char *prefix)
{
  const char *value = NULL;
  size_t len = strlen(prefix);
  for (size_t i = 0; list != NULL && list[i] != NULL; i++) {
    if (strncmp(list[i], prefix, len) == 0)
      value = list[i] + len;
  }
  return value;
}

/* The value the child would get for the name of "NAME=" prefix without
 * the merge: extra's, else the inherited one. */
static const char *
childenv_base(const char *const *inherit, char *const *extra, const char *prefix)
{
  const char *v = childenv_value(extra, prefix);
  if (v == NULL && childenv_match_any(inherit, prefix, strlen(prefix) - 1) != NULL)
    v = childenv_value(environ, prefix);
  return v;
}

/* Whether the LD_PRELOAD value list (entries separated by ':' or ' ')
 * holds lib. */
static bool
childenv_preloads(const char *list, const char *lib)
{
  size_t len = strlen(lib);
  for (const char *p = list; *p != '\0';) {
    size_t n = strcspn(p, ": ");
    if (n == len && memcmp(p, lib, len) == 0)
      return true;
    p += n;
    if (*p != '\0')
      p++;
  }
  return false;
}

/* Writes "PREFIXfirst[:rest]" at *at (advancing it) and returns it: rest
 * joined only when non-empty. */
static char *
childenv_join(char **at, const char *prefix, const char *first, const char *rest)
{
  char *s = *at;
  size_t n = (size_t)sprintf(s, "%s%s%s%s", prefix, first, rest && *rest ? ":" : "",
                             rest && *rest ? rest : "");
  *at += n + 1;
  return s;
}

/* The bytes childenv_join needs for these parts, its NUL included. */
static size_t
childenv_join_size(const char *prefix, const char *first, const char *rest)
{
  return strlen(prefix) + strlen(first) + (rest && *rest ? 1 + strlen(rest) : 0) + 1;
}

/* Whether the name of kv (len bytes) is one of the NULL-terminated "NAME="
 * prefixes in names. */
static bool
childenv_named(const char *const *names, const char *kv, size_t len)
{
  for (size_t i = 0; names[i] != NULL; i++) {
    if (strlen(names[i]) == len + 1 && memcmp(names[i], kv, len) == 0)
      return true;
  }
  return false;
}

/* See childenv.h. */
char **
childenv_build(const char *const *inherit, char *const *extra, const ChildLineBuffering *lb)
{
  if (inherit == NULL)
    inherit = childenv_default_inherit;
  size_t n = 0, m = 0;
  while (environ != NULL && environ[n] != NULL)
    n++;
  while (extra != NULL && extra[m] != NULL)
    m++;

  /* Layer 2, and the two merged variables (with their sizes, to allocate
   * them in the same block as the array). */
  static char python[] = CHILDENV_PYTHON "1";
  static char stdbuf_out[] = CHILDENV_STDBUF_OUT "L";
  char *adds[3] = {NULL, NULL, NULL};
  const char *merged_names[3] = {NULL, NULL, NULL};
  const char *first = NULL, *rest = NULL, *asan = NULL;
  size_t nadds = 0, bytes = 0;
  if (lb != NULL && lb->line_buffered) {
    adds[nadds++] = python;
    if (lb->stdbuf != NULL) {
      adds[nadds++] = stdbuf_out;
      /* The library first, then what the child would have preloaded
       * anyway; kept as it is when the library is there already. */
      first = lb->stdbuf;
      rest = childenv_base(inherit, extra, CHILDENV_PRELOAD);
      if (rest != NULL && childenv_preloads(rest, first))
        first = rest, rest = NULL;
      asan = childenv_base(inherit, extra, CHILDENV_ASAN);
      bytes = childenv_join_size(CHILDENV_PRELOAD, first, rest) +
              childenv_join_size(CHILDENV_ASAN, CHILDENV_ASAN_LINK_ORDER, asan);
      merged_names[0] = CHILDENV_PRELOAD;
      merged_names[1] = CHILDENV_ASAN;
    }
  }
  size_t slots = n + nadds + m + 2 + 1;
  char **env = xmalloc(slots * sizeof *env + bytes);
  char *strings = (char *)(env + slots);
  size_t k = 0;
  for (size_t i = 0; i < n; i++) {
    size_t len = childenv_name_len(environ[i]);
    if (len > 0 && childenv_match_any(inherit, environ[i], len) != NULL &&
        !childenv_sets(adds, environ[i], len) && !childenv_sets(extra, environ[i], len) &&
        !childenv_named(merged_names, environ[i], len))
      env[k++] = environ[i];
  }
  for (size_t i = 0; i < nadds; i++) {
    if (!childenv_sets(extra, adds[i], childenv_name_len(adds[i])))
      env[k++] = adds[i];
  }
  for (size_t i = 0; i < m; i++) {
    size_t len = childenv_name_len(extra[i]);
    if (len > 0 && !childenv_sets(extra + i + 1, extra[i], len) &&
        !childenv_named(merged_names, extra[i], len))
      env[k++] = extra[i];
  }
  if (merged_names[0] != NULL) {
    env[k++] = childenv_join(&strings, CHILDENV_PRELOAD, first, rest);
    env[k++] = childenv_join(&strings, CHILDENV_ASAN, CHILDENV_ASAN_LINK_ORDER, asan);
  }
  env[k] = NULL;
  return env;
}
