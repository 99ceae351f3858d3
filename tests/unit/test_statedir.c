/*
 * Tests of the state directory's checks and lock (statedir.h): what an
 * engine pointed at a directory it must not trust refuses, and that two
 * engines never share one.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "statedir.h"

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
  statedir_close(&sd);

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
  char cmd[128];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", test_root);
  if (system(cmd) != 0)
    fprintf(stderr, "could not remove %s\n", test_root);
  return check_summary();
}
