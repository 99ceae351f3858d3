/*
 * Tests of a project directory's session name (cli_project.h): stable for a
 * directory, different for two directories (those two built to collide
 * under the former 32-bit FNV-1a included), the same through a symbolic link
 * as for its target and for the working directory, 128 bits wide, within the
 * engine's bound on a session name, and refused (not made up) for a
 * directory that cannot be resolved; the project a directory is in: a
 * subdirectory of a repository is in the repository's project (a package
 * of a monorepo too), a manifest marks a project without version control,
 * and the home directory is nobody's project but its own.
 */
#include <errno.h>
#include <stdbool.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "cli/cli_project.h"

static char tmp[512]; /* a temp dir's path, short */

/* A fresh directory under the temp dir (resolved: /tmp may be a link). */
static void
make_tmp(void)
{
  char tmpl[] = "/tmp/vigil-test-project-XXXXXX";
  char *d = mkdtemp(tmpl);
  char real[PATH_MAX];
  if (d == NULL || realpath(d, real) == NULL || strlen(real) >= sizeof tmp)
    abort();
  memcpy(tmp, real, strlen(real) + 1);
}

static void
path_in(char *out, size_t cap, const char *name)
{
  snprintf(out, cap, "%s/%s", tmp, name);
}

/* The former default's hash, to build two colliding paths. */
static uint32_t
fnv1a32(const char *s)
{
  uint32_t h = 2166136261u;
  for (const unsigned char *p = (const unsigned char *)s; *p; p++)
    h = (h ^ *p) * 16777619u;
  return h;
}

TEST(test_project_session_stable_wide_and_bounded)
{
  char a[PATH_MAX], one[64], two[64];
  path_in(a, sizeof a, "alpha");
  CHECK_INT(mkdir(a, 0700), 0);
  CHECK_INT(cli_project_session(a, one, sizeof one), 0);
  CHECK_INT(cli_project_session(a, two, sizeof two), 0);
  CHECK_STR(one, two);
  CHECK_INT(strlen(one), CLI_PROJECT_SESSION_SIZE - 1);
  CHECK(strlen(one) <= 64);
  CHECK(strncmp(one, "mcp-", 4) == 0);
  CHECK_INT(strspn(one + 4, "0123456789abcdef"), 32); /* 128 bits */
  /* "a/" and "a/." are the same directory. */
  char dotted[PATH_MAX + 4];
  snprintf(dotted, sizeof dotted, "%s/./", a);
  CHECK_INT(cli_project_session(dotted, two, sizeof two), 0);
  CHECK_STR(one, two);
  /* Too small a buffer is refused, not cut. */
  char small[CLI_PROJECT_SESSION_SIZE - 1];
  CHECK_INT(cli_project_session(a, small, sizeof small), -1);
}

/* The i-th of many names: 10 letters from a mix of i (names that differ
 * only in a short counter suffix hardly ever collide under FNV-1a, whose
 * last steps are close to a bijection of the last bytes). */
static void
name_of(uint32_t i, char *out)
{
  uint64_t v = (uint64_t)i * 0x9e3779b97f4a7c15ull + 12345;
  v ^= v >> 29;
  v *= 0xbf58476d1ce4e5b9ull;
  v ^= v >> 32;
  for (int k = 0; k < 10; k++, v /= 26)
    out[k] = (char)('a' + v % 26);
  out[10] = '\0';
}

/* A name's hash and its number, sorted by hash to find a collision. */
typedef struct {
  uint32_t hash;
  uint32_t index;
} Named;

static int
named_cmp(const void *a, const void *b)
{
  const Named *x = a, *y = b;
  return x->hash < y->hash ? -1 : x->hash > y->hash;
}

TEST(test_project_session_differs_even_for_fnv_collisions)
{
  /* A birthday search: 2^19 names give about 32 colliding pairs under a
   * 32-bit hash (none at all: a chance of e^-32). */
  enum { kNames = 1 << 19 };
  Named *names = calloc(kNames, sizeof *names);
  char p[PATH_MAX], q[PATH_MAX];
  char name[11];
  for (uint32_t i = 0; i < kNames; i++) {
    name_of(i, name);
    snprintf(p, sizeof p, "%s/%s", tmp, name);
    names[i] = (Named){fnv1a32(p), i};
  }
  qsort(names, kNames, sizeof *names, named_cmp);
  long pair = -1;
  for (long i = 1; i < kNames && pair < 0; i++)
    if (names[i].hash == names[i - 1].hash)
      pair = i;
  if (pair < 0) {
    free(names);
    check_fail(__FILE__, __LINE__, "no FNV-1a collision among %d names", kNames);
    return;
  }
  name_of(names[pair - 1].index, name);
  snprintf(p, sizeof p, "%s/%s", tmp, name);
  name_of(names[pair].index, name);
  snprintf(q, sizeof q, "%s/%s", tmp, name);
  free(names);
  CHECK_INT(fnv1a32(p), fnv1a32(q));
  CHECK_INT(mkdir(p, 0700), 0);
  CHECK_INT(mkdir(q, 0700), 0);
  char sp[64], sq[64];
  CHECK_INT(cli_project_session(p, sp, sizeof sp), 0);
  CHECK_INT(cli_project_session(q, sq, sizeof sq), 0);
  CHECK(strcmp(sp, sq) != 0);
}

TEST(test_project_session_symlink_and_cwd)
{
  char target[PATH_MAX], link[PATH_MAX], direct[64], via_link[64], via_cwd[64];
  path_in(target, sizeof target, "target");
  path_in(link, sizeof link, "link");
  CHECK_INT(mkdir(target, 0700), 0);
  CHECK_INT(symlink(target, link), 0);
  CHECK_INT(cli_project_session(target, direct, sizeof direct), 0);
  CHECK_INT(cli_project_session(link, via_link, sizeof via_link), 0);
  CHECK_STR(direct, via_link);
  char saved[PATH_MAX];
  if (getcwd(saved, sizeof saved) == NULL)
    abort();
  CHECK_INT(chdir(link), 0);
  CHECK_INT(cli_project_session(NULL, via_cwd, sizeof via_cwd), 0);
  CHECK_INT(chdir(saved), 0);
  CHECK_STR(direct, via_cwd);
}

TEST(test_project_session_unresolvable_is_refused)
{
  char gone[PATH_MAX], out[64];
  path_in(gone, sizeof gone, "never-made");
  errno = 0;
  CHECK_INT(cli_project_session(gone, out, sizeof out), -1);
  CHECK_INT(errno, ENOENT);
}

/* Makes the directories of a relative path under the temp dir (mkdir -p)
 * and writes its full path to out. */
static void
make_dirs(char *out, size_t cap, const char *rel)
{
  snprintf(out, cap, "%s/%s", tmp, rel);
  for (char *p = out + strlen(tmp) + 1; *p; p++) {
    if (*p != '/')
      continue;
    *p = '\0';
    mkdir(out, 0700);
    *p = '/';
  }
  mkdir(out, 0700);
}

/* Creates an empty file (a marker) at the relative path under the temp dir. */
static void
touch(const char *rel)
{
  char path[PATH_MAX];
  snprintf(path, sizeof path, "%s/%s", tmp, rel);
  FILE *f = fopen(path, "w");
  if (f == NULL)
    abort();
  fclose(f);
}

/* cli_project_session of a relative path under the temp dir equals that
 * of another. */
static bool
same_session(const char *a, const char *b)
{
  char pa[PATH_MAX], pb[PATH_MAX], sa[64], sb[64];
  snprintf(pa, sizeof pa, "%s/%s", tmp, a);
  snprintf(pb, sizeof pb, "%s/%s", tmp, b);
  if (cli_project_session(pa, sa, sizeof sa) != 0 || cli_project_session(pb, sb, sizeof sb) != 0)
    return false;
  return strcmp(sa, sb) == 0;
}

/* The root of a relative path under the temp dir, relative to it again. */
static const char *
root_of(const char *rel, bool *marked)
{
  static char root[PATH_MAX];
  char path[PATH_MAX];
  snprintf(path, sizeof path, "%s/%s", tmp, rel);
  if (cli_project_root(path, root, sizeof root, marked) != 0)
    return "(error)";
  size_t n = strlen(tmp);
  if (strncmp(root, tmp, n) == 0 && root[n] == '/')
    return root + n + 1;
  return root;
}

TEST(test_project_root_is_the_repository)
{
  char d[PATH_MAX];
  make_dirs(d, sizeof d, "repo/.git");
  make_dirs(d, sizeof d, "repo/src/deep/er");
  make_dirs(d, sizeof d, "repo/packages/web/src");
  touch("repo/packages/web/package.json");
  bool marked = false;
  CHECK_STR(root_of("repo/src/deep/er", &marked), "repo");
  CHECK(marked);
  /* A package of a monorepo is in the repository's project: the harness
   * was started at the top. */
  CHECK_STR(root_of("repo/packages/web/src", NULL), "repo");
  CHECK(same_session("repo/src/deep/er", "repo"));
  CHECK(same_session("repo/packages/web/src", "repo"));
  /* A .git file (a worktree, a submodule) marks a repository too: the
   * submodule is a project of its own. */
  make_dirs(d, sizeof d, "repo/vendor/lib/src");
  touch("repo/vendor/lib/.git");
  CHECK_STR(root_of("repo/vendor/lib/src", NULL), "repo/vendor/lib");
  CHECK(!same_session("repo/vendor/lib/src", "repo"));
}

TEST(test_project_root_by_manifest_or_itself)
{
  char d[PATH_MAX];
  make_dirs(d, sizeof d, "plain/app/sub");
  touch("plain/app/Cargo.toml");
  bool marked = false;
  CHECK_STR(root_of("plain/app/sub", &marked), "plain/app");
  CHECK(marked);
  make_dirs(d, sizeof d, "harness-only/x");
  make_dirs(d, sizeof d, "harness-only/.codex");
  CHECK_STR(root_of("harness-only/x", NULL), "harness-only");
  /* No marker anywhere up to home: the directory is its own project. */
  make_dirs(d, sizeof d, "loose/a/b");
  marked = true;
  CHECK_STR(root_of("loose/a/b", &marked), "loose/a/b");
  CHECK(!marked);
  CHECK(!same_session("loose/a/b", "loose/a"));
}

TEST(test_project_root_never_home)
{
  /* A home directory kept in git, holding harness directories: a
   * directory under it without markers is still its own project, and
   * home is the project of home alone. */
  char home[PATH_MAX], d[PATH_MAX];
  make_dirs(home, sizeof home, "home");
  make_dirs(d, sizeof d, "home/.git");
  make_dirs(d, sizeof d, "home/.claude");
  make_dirs(d, sizeof d, "home/Downloads/thing");
  char *saved = getenv("HOME") ? strdup(getenv("HOME")) : NULL;
  setenv("HOME", home, 1);
  CHECK_STR(root_of("home/Downloads/thing", NULL), "home/Downloads/thing");
  CHECK_STR(root_of("home", NULL), "home");
  make_dirs(d, sizeof d, "home/code/.git");
  make_dirs(d, sizeof d, "home/code/lib");
  CHECK_STR(root_of("home/code/lib", NULL), "home/code");
  if (saved) {
    setenv("HOME", saved, 1);
    free(saved);
  } else {
    unsetenv("HOME");
  }
}

int
main(void)
{
  make_tmp();
  /* The walk up stops at home: the temp dir is home for these tests, so
   * nothing above it (a /tmp/package.json) can change their answers. */
  setenv("HOME", tmp, 1);
  RUN(test_project_root_is_the_repository);
  RUN(test_project_root_by_manifest_or_itself);
  RUN(test_project_root_never_home);
  RUN(test_project_session_stable_wide_and_bounded);
  RUN(test_project_session_differs_even_for_fnv_collisions);
  RUN(test_project_session_symlink_and_cwd);
  RUN(test_project_session_unresolvable_is_refused);
  char cmd[PATH_MAX + 16];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmp);
  if (system(cmd) != 0)
    fprintf(stderr, "could not remove %s\n", tmp);
  return check_summary();
}
