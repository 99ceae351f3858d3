/*
 * The engine's pidfile (pidfile.c): its name beside the socket, what a
 * reader accepts, a stale file replaced, and what is never touched: a
 * symbolic link (nor what it points at), or a file that names another pid
 * at exit.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "base/pidfile.h"

static char dir[64];

static void
put(const char *name, const char *text)
{
  char path[128];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  FILE *f = fopen(path, "w");
  CHECK(f != NULL);
  fputs(text, f);
  fclose(f);
}

/* name's path in the test's directory (two calls may share a line). */
static const char *
at(const char *name)
{
  static char paths[2][128];
  static int next;
  char *path = paths[next++ % 2];
  snprintf(path, sizeof paths[0], "%s/%s", dir, name);
  return path;
}

TEST(its_name_is_the_sockets_with_pid_for_sock)
{
  char out[PIDFILE_PATH_MAX];
  CHECK_INT(pidfile_path("/run/user/1000/vigil/vigil.sock", out, sizeof out), 0);
  CHECK_STR(out, "/run/user/1000/vigil/vigil.pid");
  CHECK_INT(pidfile_path("/tmp/x/engine", out, sizeof out), 0);
  CHECK_STR(out, "/tmp/x/engine.pid");
  /* A file called ".sock" keeps its name: ".pid" would be another's. */
  CHECK_INT(pidfile_path("/tmp/x/.sock", out, sizeof out), 0);
  CHECK_STR(out, "/tmp/x/.sock.pid");
  CHECK_INT(pidfile_path("v.sock", out, sizeof out), 0);
  CHECK_STR(out, "v.pid");
  char small[8];
  CHECK_INT(pidfile_path("/tmp/x/vigil.sock", small, sizeof small), -1);
  CHECK_STR(small, "");
}

TEST(a_reader_takes_only_a_pid)
{
  put("good", "4242\n");
  CHECK_INT(pidfile_read(at("good")), 4242);
  put("bare", "4242");
  CHECK_INT(pidfile_read(at("bare")), 4242);
  static const char *const bad[] = {"", "x\n", "-1\n", "0\n", "42 43\n", "99999999999\n", NULL};
  for (size_t i = 0; bad[i] != NULL; i++) {
    put("bad", bad[i]);
    CHECK_INT(pidfile_read(at("bad")), 0);
  }
  CHECK_INT(pidfile_read(at("missing")), 0);
  /* Through a link: not read. */
  CHECK_INT(symlink(at("good"), at("link")), 0);
  CHECK_INT(pidfile_read(at("link")), 0);
}

TEST(a_stale_file_is_replaced_and_a_link_left_alone)
{
  VigilError err = VIGIL_ERROR_INIT;
  pid_t stale = -1;
  put("vigil.pid", "999999\n");
  CHECK_INT(pidfile_write(at("vigil.pid"), 4242, &stale, &err), 0);
  CHECK_INT(stale, 999999);
  CHECK_INT(pidfile_read(at("vigil.pid")), 4242);
  struct stat st;
  CHECK_INT(lstat(at("vigil.pid.4242.tmp"), &st), -1); /* no temporary left */
  /* A symbolic link: neither it nor its target changes. */
  put("target", "keep\n");
  CHECK_INT(symlink(at("target"), at("l.pid")), 0);
  CHECK_INT(pidfile_write(at("l.pid"), 4242, &stale, &err), -1);
  CHECK(strstr(err.msg, "is a symbolic link, not a pidfile this engine wrote") != NULL);
  char buf[16] = {0};
  int fd = open(at("target"), O_RDONLY);
  CHECK(fd >= 0 && read(fd, buf, sizeof buf - 1) == 5);
  close(fd);
  CHECK_STR(buf, "keep\n");
  /* A directory is not a pidfile either. */
  VigilError err2 = VIGIL_ERROR_INIT;
  CHECK_INT(mkdir(at("d.pid"), 0700), 0);
  CHECK_INT(pidfile_write(at("d.pid"), 4242, &stale, &err2), -1);
  CHECK(strstr(err2.msg, "not a regular file") != NULL);
}

TEST(removed_only_while_it_names_the_engine)
{
  VigilError err = VIGIL_ERROR_INIT;
  pid_t stale = 0;
  CHECK_INT(pidfile_write(at("r.pid"), 4242, &stale, &err), 0);
  CHECK_INT(stale, 0);
  pidfile_remove(at("r.pid"), 4243); /* a later engine's: kept */
  CHECK_INT(pidfile_read(at("r.pid")), 4242);
  pidfile_remove(at("r.pid"), 4242);
  CHECK_INT(access(at("r.pid"), F_OK), -1);
}

int
main(void)
{
  snprintf(dir, sizeof dir, "/tmp/vigil-pidfile-XXXXXX");
  CHECK(mkdtemp(dir) != NULL);
  RUN(its_name_is_the_sockets_with_pid_for_sock);
  RUN(a_reader_takes_only_a_pid);
  RUN(a_stale_file_is_replaced_and_a_link_left_alone);
  RUN(removed_only_while_it_names_the_engine);
  char cmd[128];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  if (system(cmd) != 0)
    fprintf(stderr, "could not remove %s\n", dir);
  return check_summary();
}
