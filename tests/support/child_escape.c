/*
 * Test helper: child_escape MODE THEN [ignore-term] starts a descendant that
 * leaves the monitor's process group the way MODE says, prints
 * "escapee PID" once it is in place, then either exits 0 (THEN "exit") or
 * sleeps for five minutes (THEN "stay"). The escapee puts /dev/null on its
 * stdin, stdout and stderr (so it holds no pipe of the monitor) and sleeps
 * for five minutes; with "ignore-term" it ignores SIGTERM, so only SIGKILL
 * ends it.
 *
 *   setsid      a child that calls setsid(): a new session and group
 *   setpgid     a child that calls setpgid(0, 0): a new group, same session
 *   doublefork  a child that calls setsid() and forks the escapee, then
 *               exits and is reaped: the escapee is an orphan (adopted by
 *               the nearest subreaper, or init)
 *   storm       as doublefork, then, with THEN "stay", keeps double-forking
 *               escapees (one every 2 ms, at most 400) for as long as it
 *               lives, so that some are forked between a scan of its tree
 *               and the kill; each escapee also double-forks one escapee
 *               of its own. All of them carry the same command line, so a
 *               test finds every one still alive in /proc (give a unique
 *               extra argument, e.g. a tag, after THEN).
 */
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

/* In the escapee: detach from the monitor's pipes, tell the parent its pid
 * through fd, and sleep. */
static void
escapee(int fd, bool ignore_term)
{
  if (ignore_term)
    signal(SIGTERM, SIG_IGN);
  int null = open("/dev/null", O_RDWR);
  for (int i = 0; i < 3; i++)
    dup2(null, i);
  pid_t me = getpid();
  if (write(fd, &me, sizeof me) != sizeof me)
    _exit(1);
  close(fd);
  for (int i = 0; i < 300; i++)
    sleep(1);
  _exit(0);
}

/* A double fork from the caller: a middle process in a new session forks
 * the escapee and exits; the caller reaps the middle. With nested, the
 * escapee double-forks one of its own before it sleeps. */
static void
storm_once(bool nested)
{
  pid_t mid = fork();
  if (mid < 0)
    return;
  if (mid == 0) {
    setsid();
    pid_t inner = fork();
    if (inner != 0)
      _exit(0);
    int null = open("/dev/null", O_RDWR);
    for (int i = 0; i < 3; i++)
      dup2(null, i);
    if (nested)
      storm_once(false);
    for (int i = 0; i < 300; i++)
      sleep(1);
    _exit(0);
  }
  waitpid(mid, NULL, 0);
}

int
main(int argc, char **argv)
{
  if (argc < 3) {
    fprintf(stderr, "usage: child_escape setsid|setpgid|doublefork|storm exit|stay [ignore-term|TAG]\n");
    return 2;
  }
  const char *mode = argv[1];
  bool stay = strcmp(argv[2], "stay") == 0;
  bool ignore_term = argc > 3 && strcmp(argv[3], "ignore-term") == 0;
  int p[2];
  if (pipe(p) != 0)
    return 1;
  fflush(stdout);
  pid_t pid = fork();
  if (pid < 0)
    return 1;
  if (pid == 0) {
    close(p[0]);
    if (strcmp(mode, "setpgid") == 0) {
      setpgid(0, 0);
      escapee(p[1], ignore_term);
    }
    setsid();
    if (strcmp(mode, "doublefork") == 0 || strcmp(mode, "storm") == 0) {
      pid_t inner = fork();
      if (inner < 0)
        _exit(1);
      if (inner > 0)
        _exit(0); /* the escapee's parent goes: it is an orphan now */
    }
    escapee(p[1], ignore_term);
  }
  close(p[1]);
  pid_t got = 0;
  if (read(p[0], &got, sizeof got) != sizeof got)
    return 1;
  if (strcmp(mode, "doublefork") == 0 || strcmp(mode, "storm") == 0)
    waitpid(pid, NULL, 0); /* the middle process, so the escapee is orphaned for sure */
  printf("escapee %d\n", (int)got);
  fflush(stdout);
  if (stay && strcmp(mode, "storm") == 0) {
    for (int i = 0; i < 400; i++) {
      storm_once(true);
      usleep(2000);
    }
  }
  if (stay) {
    for (int i = 0; i < 300; i++)
      sleep(1);
  }
  return 0;
}
