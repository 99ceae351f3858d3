/*
 * Tests of the state directory's checks and lock (statedir.h): what an
 * engine pointed at a directory it must not trust refuses, that two
 * engines never share one, the monitors directory in it (made private,
 * held open, refused on the same rules) and what a failed start takes back.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "store/statedir.h"

/* A fresh temporary directory, and paths in it. */
static char test_root[64];

typedef struct {
  char s[128];
} Path;

static Path
in_root(const char *name)
{
  Path p;
  snprintf(p.s, sizeof p.s, "%s/%s", test_root, name);
  return p;
}

static mode_t
mode_of(const char *path)
{
  struct stat st;
  return lstat(path, &st) == 0 ? (st.st_mode & 07777) : (mode_t)-1;
}

/* Whether fd is the directory at path (not a link to it). */
static bool
same_file(int fd, const char *path)
{
  struct stat a, b;
  return fd >= 0 && fstat(fd, &a) == 0 && lstat(path, &b) == 0 && S_ISDIR(b.st_mode) &&
         a.st_dev == b.st_dev && a.st_ino == b.st_ino;
}

/* A state directory made by hand, private, with a monitors entry made by
 * make_monitors (a directory, a link, a file) in it. */
static Path
state_with_monitors(const char *name, void (*make_monitors)(const char *path))
{
  Path dir = in_root(name);
  mkdir(dir.s, 0700);
  char monitors[160];
  snprintf(monitors, sizeof monitors, "%s/%s", dir.s, STATEDIR_MONITORS_NAME);
  make_monitors(monitors);
  return dir;
}

TEST(a_missing_directory_is_made_private_and_locked)
{
  Path dir = in_root("fresh");
  const char *path = dir.s;
  StateDir sd;
  VigilError err = VIGIL_ERROR_INIT;
  mode_t old = umask(0); /* a permissive umask must not open it up */
  int rc = statedir_open(&sd, path, &err);
  umask(old);
  CHECK_INT(rc, 0);
  CHECK(sd.made);
  CHECK_INT(mode_of(path), 0700);
  char lock[160];
  snprintf(lock, sizeof lock, "%s/%s", path, STATEDIR_LOCK_NAME);
  CHECK_INT(mode_of(lock), 0600);
  FILE *f = fopen(lock, "r");
  long pid = 0;
  CHECK(f != NULL && fscanf(f, "%ld", &pid) == 1);
  if (f)
    fclose(f);
  CHECK_INT(pid, getpid());
  /* The monitors directory: made private too, and held open. */
  char monitors[160];
  snprintf(monitors, sizeof monitors, "%s/%s", path, STATEDIR_MONITORS_NAME);
  CHECK_INT(mode_of(monitors), 0700);
  CHECK(same_file(sd.monitors_fd, monitors));
  CHECK(fcntl(sd.monitors_fd, F_GETFD) & FD_CLOEXEC);
  statedir_close(&sd);
  CHECK_INT(sd.monitors_fd, -1);

  /* Opened again: found, not made, the same checks passing. */
  CHECK_INT(statedir_open(&sd, path, &err), 0);
  CHECK(!sd.made);
  statedir_close(&sd);
}

TEST(a_directory_others_can_read_is_refused_and_left_alone)
{
  Path dir = in_root("open");
  const char *path = dir.s;
  CHECK_INT(mkdir(path, 0700), 0);
  CHECK_INT(chmod(path, 0755), 0);
  StateDir sd;
  VigilError err = VIGIL_ERROR_INIT;
  CHECK_INT(statedir_open(&sd, path, &err), -1);
  CHECK_CONTAINS(err.msg, "state.dir");
  CHECK_CONTAINS(err.msg, path);
  CHECK_CONTAINS(err.msg, "mode 0755");
  CHECK_CONTAINS(err.msg, "others");
  CHECK_INT(mode_of(path), 0755); /* never changed */
  char lock[160];
  snprintf(lock, sizeof lock, "%s/%s", path, STATEDIR_LOCK_NAME);
  CHECK(access(lock, F_OK) != 0); /* nothing made in it */

  CHECK_INT(chmod(path, 0710), 0);
  err = (VigilError)VIGIL_ERROR_INIT;
  CHECK_INT(statedir_open(&sd, path, &err), -1);
  CHECK_CONTAINS(err.msg, "its group");
}

TEST(a_symbolic_link_is_refused)
{
  Path target_dir = in_root("real");
  const char *target = target_dir.s;
  CHECK_INT(mkdir(target, 0700), 0);
  Path link_name = in_root("link");
  const char *link = link_name.s;
  CHECK_INT(symlink(target, link), 0);
  StateDir sd;
  VigilError err = VIGIL_ERROR_INIT;
  CHECK_INT(statedir_open(&sd, link, &err), -1);
  CHECK_CONTAINS(err.msg, "symbolic link");
  CHECK_CONTAINS(err.msg, link);
}

TEST(a_file_is_not_a_directory)
{
  Path dir = in_root("file");
  const char *path = dir.s;
  int fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0600);
  CHECK(fd >= 0);
  if (fd >= 0)
    close(fd);
  StateDir sd;
  VigilError err = VIGIL_ERROR_INIT;
  CHECK_INT(statedir_open(&sd, path, &err), -1);
  CHECK_CONTAINS(err.msg, "not a directory");
}

TEST(a_linked_lock_file_is_refused)
{
  /* A lock file that is a link could make the engine write its pid where
   * the link points. */
  Path dir = in_root("badlock");
  const char *path = dir.s;
  CHECK_INT(mkdir(path, 0700), 0);
  char lock[160];
  snprintf(lock, sizeof lock, "%s/%s", path, STATEDIR_LOCK_NAME);
  Path elsewhere = in_root("elsewhere");
  CHECK_INT(symlink(elsewhere.s, lock), 0);
  StateDir sd;
  VigilError err = VIGIL_ERROR_INIT;
  CHECK_INT(statedir_open(&sd, path, &err), -1);
  CHECK_CONTAINS(err.msg, STATEDIR_LOCK_NAME);
  CHECK(access(elsewhere.s, F_OK) != 0); /* nothing written through it */
}

TEST(a_foreign_owner_is_refused)
{
  if (geteuid() != 0) {
    printf("     (skipped: needs root to give a directory away)\n");
    return;
  }
  Path dir = in_root("foreign");
  const char *path = dir.s;
  CHECK_INT(mkdir(path, 0700), 0);
  CHECK_INT(chown(path, 65534, 65534), 0);
  StateDir sd;
  VigilError err = VIGIL_ERROR_INIT;
  CHECK_INT(statedir_open(&sd, path, &err), -1);
  CHECK_CONTAINS(err.msg, "belongs to uid 65534");

  /* The same for the monitors directory in a state directory of ours. */
  Path ours = in_root("foreign-monitors");
  CHECK_INT(mkdir(ours.s, 0700), 0);
  char monitors[160];
  snprintf(monitors, sizeof monitors, "%s/%s", ours.s, STATEDIR_MONITORS_NAME);
  CHECK_INT(mkdir(monitors, 0700), 0);
  CHECK_INT(chown(monitors, 65534, 65534), 0);
  error_clear(&err);
  CHECK_INT(statedir_open(&sd, ours.s, &err), -1);
  CHECK_CONTAINS(err.msg, monitors);
  CHECK_CONTAINS(err.msg, "belongs to uid 65534");
}

TEST(a_second_engine_is_refused_naming_the_first)
{
  Path dir = in_root("shared");
  const char *path = dir.s;
  StateDir first;
  VigilError err = VIGIL_ERROR_INIT;
  CHECK_INT(statedir_open(&first, path, &err), 0);

  /* Another process, as a second engine would be. */
  int pipefd[2];
  CHECK_INT(pipe(pipefd), 0);
  pid_t pid = fork();
  if (pid == 0) {
    StateDir second;
    VigilError e2 = VIGIL_ERROR_INIT;
    int rc = statedir_open(&second, path, &e2);
    ssize_t w = write(pipefd[1], e2.msg, strlen(e2.msg));
    (void)w;
    _exit(rc == 0 ? 0 : 1);
  }
  close(pipefd[1]);
  char msg[512] = "";
  ssize_t n = read(pipefd[0], msg, sizeof msg - 1);
  msg[n > 0 ? n : 0] = '\0';
  close(pipefd[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 1);
  char want[64];
  snprintf(want, sizeof want, "in use by another engine (pid %ld)", (long)getpid());
  CHECK_CONTAINS(msg, want);

  /* Once the first lets go (or dies: the kernel drops a flock with its
   * last descriptor), the directory can be taken again. */
  statedir_close(&first);
  CHECK_INT(statedir_open(&first, path, &err), 0);
  statedir_close(&first);
}

static void
monitors_0750(const char *path)
{
  mkdir(path, 0700);
  chmod(path, 0750);
}

static void
monitors_0770(const char *path)
{
  mkdir(path, 0700);
  chmod(path, 0770);
}

static void
monitors_0705(const char *path)
{
  mkdir(path, 0700);
  chmod(path, 0705);
}

static void
monitors_link(const char *path)
{
  char target[4096];
  if (snprintf(target, sizeof target, "%s-elsewhere", path) >= (int)sizeof target)
    return;
  mkdir(target, 0700);
  if (symlink(target, path) != 0)
    perror("symlink");
}

static void
monitors_file(const char *path)
{
  int fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0600);
  if (fd >= 0)
    close(fd);
}

TEST(an_existing_private_monitors_directory_is_kept)
{
  Path dir = state_with_monitors("kept", monitors_0705);
  char monitors[160];
  snprintf(monitors, sizeof monitors, "%s/%s", dir.s, STATEDIR_MONITORS_NAME);
  CHECK_INT(chmod(monitors, 0700), 0);
  char inside[200];
  snprintf(inside, sizeof inside, "%s/mon_1", monitors);
  CHECK_INT(mkdir(inside, 0700), 0);
  StateDir sd;
  VigilError err = VIGIL_ERROR_INIT;
  CHECK_INT(statedir_open(&sd, dir.s, &err), 0);
  CHECK_STR(err.msg, "");
  CHECK(!sd.made);
  CHECK(same_file(sd.monitors_fd, monitors));
  /* Reached from the descriptor, not the path. */
  struct stat st;
  CHECK_INT(fstatat(sd.monitors_fd, "mon_1", &st, AT_SYMLINK_NOFOLLOW), 0);
  statedir_close(&sd);
  CHECK_INT(mode_of(inside), 0700);
}

TEST(a_monitors_directory_open_to_group_or_others_is_refused_and_left_alone)
{
  struct {
    const char *name;
    void (*make)(const char *);
    mode_t mode;
    const char *who;
  } cases[] = {
    {"m0750", monitors_0750, 0750, "its group"},
    {"m0770", monitors_0770, 0770, "its group"},
    {"m0705", monitors_0705, 0705, "others"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    Path dir = state_with_monitors(cases[i].name, cases[i].make);
    char monitors[160], want[64];
    snprintf(monitors, sizeof monitors, "%s/%s", dir.s, STATEDIR_MONITORS_NAME);
    StateDir sd;
    VigilError err = VIGIL_ERROR_INIT;
    CHECK_INT(statedir_open(&sd, dir.s, &err), -1);
    CHECK_CONTAINS(err.msg, "state.dir");
    CHECK_CONTAINS(err.msg, monitors);
    snprintf(want, sizeof want, "mode %04o", (unsigned)cases[i].mode);
    CHECK_CONTAINS(err.msg, want);
    CHECK_CONTAINS(err.msg, cases[i].who);
    CHECK_INT(mode_of(monitors), cases[i].mode); /* never chmod'ed */
    CHECK_INT(sd.monitors_fd, -1);
    /* The lock was let go: once put right, the directory opens. */
    CHECK_INT(chmod(monitors, 0700), 0);
    error_clear(&err);
    CHECK_INT(statedir_open(&sd, dir.s, &err), 0);
    statedir_close(&sd);
  }
}

TEST(a_monitors_link_or_file_is_refused)
{
  Path dir = state_with_monitors("mlink", monitors_link);
  char monitors[160], target[200];
  snprintf(monitors, sizeof monitors, "%s/%s", dir.s, STATEDIR_MONITORS_NAME);
  snprintf(target, sizeof target, "%s-elsewhere", monitors);
  StateDir sd;
  VigilError err = VIGIL_ERROR_INIT;
  CHECK_INT(statedir_open(&sd, dir.s, &err), -1);
  CHECK_CONTAINS(err.msg, monitors);
  CHECK_CONTAINS(err.msg, "symbolic link");
  CHECK_INT(mode_of(target), 0700);
  struct stat st;
  CHECK(lstat(monitors, &st) == 0 && S_ISLNK(st.st_mode)); /* left as it was */

  dir = state_with_monitors("mfile", monitors_file);
  snprintf(monitors, sizeof monitors, "%s/%s", dir.s, STATEDIR_MONITORS_NAME);
  error_clear(&err);
  CHECK_INT(statedir_open(&sd, dir.s, &err), -1);
  CHECK_CONTAINS(err.msg, monitors);
  CHECK_CONTAINS(err.msg, "not a directory");
  CHECK(lstat(monitors, &st) == 0 && S_ISREG(st.st_mode));
}

TEST(a_failed_start_takes_back_only_what_it_made)
{
  /* Made by this open: abandoned, nothing is left. */
  Path made = in_root("abandoned");
  StateDir sd;
  VigilError err = VIGIL_ERROR_INIT;
  CHECK_INT(statedir_open(&sd, made.s, &err), 0);
  statedir_abandon(&sd);
  CHECK(access(made.s, F_OK) != 0);
  CHECK_INT(sd.monitors_fd, -1);

  /* There before: abandoned, it stays with what it holds. */
  Path found = in_root("found");
  CHECK_INT(mkdir(found.s, 0700), 0);
  char keep[160];
  snprintf(keep, sizeof keep, "%s/keep", found.s);
  CHECK_INT(mkdir(keep, 0700), 0);
  CHECK_INT(statedir_open(&sd, found.s, &err), 0);
  statedir_abandon(&sd);
  CHECK_INT(mode_of(found.s), 0700);
  CHECK_INT(mode_of(keep), 0700);

  /* Made, but something else was put in it meanwhile: only the empty
   * parts go. */
  Path busy = in_root("busy");
  CHECK_INT(statedir_open(&sd, busy.s, &err), 0);
  char mon[160];
  snprintf(mon, sizeof mon, "%s/%s/mon_1", busy.s, STATEDIR_MONITORS_NAME);
  CHECK_INT(mkdir(mon, 0700), 0);
  statedir_abandon(&sd);
  CHECK_INT(mode_of(mon), 0700);
}

int
main(void)
{
  snprintf(test_root, sizeof test_root, "/tmp/vigil-statedir-XXXXXX");
  if (mkdtemp(test_root) == NULL) {
    perror("mkdtemp");
    return 1;
  }
  RUN(a_missing_directory_is_made_private_and_locked);
  RUN(a_directory_others_can_read_is_refused_and_left_alone);
  RUN(a_symbolic_link_is_refused);
  RUN(a_file_is_not_a_directory);
  RUN(a_linked_lock_file_is_refused);
  RUN(a_foreign_owner_is_refused);
  RUN(a_second_engine_is_refused_naming_the_first);
  RUN(an_existing_private_monitors_directory_is_kept);
  RUN(a_monitors_directory_open_to_group_or_others_is_refused_and_left_alone);
  RUN(a_monitors_link_or_file_is_refused);
  RUN(a_failed_start_takes_back_only_what_it_made);
  char cmd[128];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", test_root);
  if (system(cmd) != 0)
    fprintf(stderr, "could not remove %s\n", test_root);
  return check_summary();
}
