/*
 * Going into the background (daemon.h).
 *
 * The word on the pipe is one line, "ready PATH\n". Anything else,
 * including the pipe closing because the child exited or crashed, means
 * the start failed; the parent then reads the tail of the log file the
 * child wrote its reason to. On "ready" it shows the warnings the start
 * logged (they went to the file, where nobody at the terminal sees them). The parent never touches the event loop or
 * the log: it is gone before either exists.
 */
#include "daemon/daemon.h"

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

#include "base/error.h"
#include "base/log.h"
#include "daemon/logfile.h"

/* Opens the log at path for reading: only a regular file of our own,
 * reached without following a symbolic link: a log path that another user
 * replaced with a link (or a FIFO) must not make the engine print the file
 * it points at, or hang on it. Returns the descriptor (st filled), or -1. */
static int
daemon_open_log(const char *path, struct stat *st)
{
  int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
  if (fd >= 0 && (fstat(fd, st) != 0 || !S_ISREG(st->st_mode) || st->st_uid != geteuid())) {
    close(fd);
    fd = -1;
  }
  return fd;
}

/* Prints the last DAEMON_LOG_TAIL_BYTES of the log at path to stderr. */
static void
daemon_print_log_tail(const char *path)
{
  struct stat st;
  int fd = daemon_open_log(path, &st);
  if (fd < 0)
    return;
  char buf[DAEMON_LOG_TAIL_BYTES];
  off_t from = st.st_size > (off_t)sizeof buf ? st.st_size - (off_t)sizeof buf : 0;
  ssize_t n = pread(fd, buf, sizeof buf, from);
  close(fd);
  if (n > 0)
    fwrite(buf, 1, (size_t)n, stderr);
}

/* The size of the log file at path before the child writes to it, where
 * its start's lines will begin; 0 when there is none yet. */
static off_t
daemon_log_size(const char *path)
{
  struct stat st;
  return lstat(path, &st) == 0 && S_ISREG(st.st_mode) ? st.st_size : 0;
}

/* Prints on stderr the warnings and errors the engine logged while it
 * started (from offset from of the log at path, at most
 * DAEMON_WARN_BYTES, at most DAEMON_WARN_LINES of them), as
 * "vigild: warning: MODULE: TEXT": what the terminal would have shown had
 * the engine not gone into the background. A log rotated meanwhile is
 * read from its start. */
static void
daemon_print_warnings(const char *path, off_t from)
{
  struct stat st;
  int fd = daemon_open_log(path, &st);
  if (fd < 0)
    return;
  if (st.st_size < from)
    from = 0;
  static char buf[DAEMON_WARN_BYTES + 1];
  ssize_t n = pread(fd, buf, DAEMON_WARN_BYTES, from);
  close(fd);
  if (n <= 0)
    return;
  buf[n] = '\0';
  int shown = 0, more = 0;
  for (char *line = buf, *nl; line < buf + n && (nl = strchr(line, '\n')) != NULL;
       line = nl + 1) {
    *nl = '\0';
    /* "TIME vigild LEVEL MODULE: TEXT" (log.c); the text is escaped there. */
    char *at = strstr(line, " vigild ");
    if (at == NULL)
      continue;
    at += strlen(" vigild ");
    const char *word = strncmp(at, "warn ", 5) == 0    ? "warning"
                       : strncmp(at, "error ", 6) == 0 ? "error"
                                                       : NULL;
    if (word == NULL)
      continue;
    if (shown == DAEMON_WARN_LINES) {
      more++;
      continue;
    }
    /* The engine's own module is the program's name already said. */
    const char *text = strchr(at, ' ') + 1;
    if (strncmp(text, "vigild: ", 8) == 0)
      text += 8;
    fprintf(stderr, "vigild: %s: %s\n", word, text);
    shown++;
  }
  if (more > 0)
    fprintf(stderr, "vigild: and %d more in %s\n", more, path);
}

/* The parent's side: waits for the child's word, then exits. */
static void
daemon_wait_for_child(int fd, pid_t child, const char *log_path, off_t log_start)
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
    daemon_print_warnings(log_path, log_start);
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
  off_t log_start = daemon_log_size(log_path);
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
    daemon_wait_for_child(pipefd[0], child, log_path, log_start);
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
  /* The parent shows the warnings of the start from the file: they must
   * be in it before it is told. */
  log_flush(1000);
  char word[4200];
  int n = snprintf(word, sizeof word, "ready %s\n", listen_path);
  if (n > 0 && write(fd, word, (size_t)n < sizeof word ? (size_t)n : sizeof word - 1) < 0) {
    /* the parent is gone (killed while waiting): nobody to tell */
  }
  close(fd);
}
