/*
 * Going into the background (daemon.h).
 *
 * The word on the pipe is one line, "ready PATH\n". Anything else,
 * including the pipe closing because the child exited or crashed, means
 * the start failed; the parent then reads the tail of the log file the
 * child wrote its reason to. The parent never touches the event loop or
 * the log: it is gone before either exists.
 */
#include "daemon.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "error.h"
#include "logfile.h"

/* Prints the last DAEMON_LOG_TAIL_BYTES of the log at path to stderr. Only
 * a regular file of our own, reached without following a symbolic link: a
 * log path that another user replaced with a link (or a FIFO) must not make
 * the engine print the file it points at, or hang on it. */
static void
daemon_print_log_tail(const char *path)
{
  int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
  if (fd < 0)
    return;
  struct stat st;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_uid != geteuid()) {
    close(fd);
    return;
  }
  char buf[DAEMON_LOG_TAIL_BYTES];
  off_t from = st.st_size > (off_t)sizeof buf ? st.st_size - (off_t)sizeof buf : 0;
  ssize_t n = pread(fd, buf, sizeof buf, from);
  close(fd);
  if (n > 0)
    fwrite(buf, 1, (size_t)n, stderr);
}

/* The parent's side: waits for the child's word, then exits. */
static void
daemon_wait_for_child(int fd, pid_t child, const char *log_path)
{
  char word[4200];
  size_t got = 0;
  for (;;) {
    ssize_t n = read(fd, word + got, sizeof word - 1 - got);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      break;
    got += (size_t)n;
    if (got == sizeof word - 1 || memchr(word, '\n', got) != NULL)
      break;
  }
  word[got] = '\0';
  if (strncmp(word, "ready ", 6) == 0) {
    char *nl = strchr(word, '\n');
    if (nl != NULL)
      *nl = '\0';
    printf("vigild: listening on %s (pid %ld); log: %s\n", word + 6, (long)child, log_path);
    fflush(stdout);
    _exit(0);
  }
  int status = 0;
  pid_t r;
  while ((r = waitpid(child, &status, 0)) < 0 && errno == EINTR) {
  }
  fprintf(stderr, "vigild: the engine did not start (%s); the end of its log, %s:\n",
          r == child && WIFEXITED(status)     ? "it exited"
          : r == child && WIFSIGNALED(status) ? strsignal(WTERMSIG(status))
                                              : "it went away",
          log_path);
  daemon_print_log_tail(log_path);
  _exit(1);
}

int
daemon_detach(const char *log_path, uint64_t log_max_bytes)
{
  int pipefd[2];
  if (pipe2(pipefd, O_CLOEXEC) != 0) {
    fprintf(stderr, "vigild: --daemon: pipe: %s\n", strerror(errno));
    return -1;
  }
  fflush(NULL);
  pid_t child = fork();
  if (child < 0) {
    fprintf(stderr, "vigild: --daemon: fork: %s\n", strerror(errno));
    close(pipefd[0]);
    close(pipefd[1]);
    return -1;
  }
  if (child > 0) {
    close(pipefd[1]);
    daemon_wait_for_child(pipefd[0], child, log_path);
  }
  close(pipefd[0]);
  /* A session of its own: no controlling terminal, so closing the
   * terminal sends it no SIGHUP (which would reload its config) and no
   * job-control stop reaches it. */
  setsid();
  int null = open("/dev/null", O_RDWR | O_CLOEXEC);
  if (null >= 0) {
    dup2(null, 0);
    dup2(null, 1);
    if (null > 2)
      close(null);
  }
  VigilError err = VIGIL_ERROR_INIT;
  if (logfile_open(log_path, log_max_bytes, &err) != 0) {
    /* stderr is still the terminal's: say it there, and the parent sees
     * the pipe close. */
    fprintf(stderr, "vigild: %s\n", err.msg);
    _exit(1);
  }
  return pipefd[1];
}

void
daemon_ready(int fd, const char *listen_path)
{
  if (fd < 0)
    return;
  char word[4200];
  int n = snprintf(word, sizeof word, "ready %s\n", listen_path);
  if (n > 0 && write(fd, word, (size_t)n < sizeof word ? (size_t)n : sizeof word - 1) < 0) {
    /* the parent is gone (killed while waiting): nobody to tell */
  }
  close(fd);
}
