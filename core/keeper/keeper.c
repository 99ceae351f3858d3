/*
 * vigil-keeper: the process that stands between the engine and one
 * monitored program, so that the program outlives the engine
 * (docs/restart.md). The engine starts it with the descriptors and
 * arguments of keeper_wire.h; it forks the program exactly as the engine
 * would (proc_child.c), becomes its parent and subreaper, and tells the
 * engine the program's pid.
 *
 * While its engine is attached it stays off the data path: the engine
 * reads the program's pipes itself, signals it itself, and the keeper only
 * reports the exit (keeping the zombie, so the group id stays reserved,
 * until the engine has killed the survivors and says so) and reaps the
 * orphans the program leaves. When the control socket hangs up (the
 * engine died), it detaches: it drains the pipes into the spool files the
 * engine made (what does not fit is counted there), stops the program if
 * nobody comes back within keeper.unattended_ms, if its monitor's
 * directory is removed (no engine could come back) or if a later engine
 * asks it to, and when the program has ended writes its true exit status
 * to the exit file. A spool that breaks (a full file system, or its file
 * cut short: spool.h, never a SIGBUS that would end the keeper) is let go,
 * and the keeper goes on draining. It opens no path but the files of its
 * monitor's directory, through the descriptor it was given (and the
 * directory's parent, through the same, to watch it), and /dev/null.
 *
 * No libuv, no Lua, no PCRE2: a poll loop over a handful of descriptors.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <stdio.h>
#include <sys/inotify.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "proc/keeper_wire.h"
#include "proc/proc_child.h"
#include "proc/reaper.h"
#include "pipeline/spool.h"

extern char **environ;

/* How much the keeper reads from a pipe at a time while detached, and
 * how many reads make a turn (KEEPER_READ_TURNS * KEEPER_READ_BYTES, 1 MiB,
 * before poll looks at the rest). The buffer is small because every page
 * of it a drain touched stays private to the keeper until keeper_attach
 * gives it back: a keeper runs per monitor (docs/restart.md, its memory). */
#define KEEPER_READ_BYTES (16 * 1024)
#define KEEPER_READ_TURNS 64

/* The drain's buffer, mapped at the first drain of a detach and unmapped
 * by keeper_attach: a keeper that never drains never holds it, and one
 * that drained a flood gives it back once an engine reads the pipes. */
static char *keeper_drain_buf;

typedef enum { kChildRunning, kChildExited, kChildReaped } ChildState;

typedef struct {
  KeeperArgs a;
  pid_t self, child;
  ChildState state;
  bool exited;               /* the status is known (state >= kChildExited) */
  int exit_code, term_signal;
  uint64_t exit_ms;          /* monotonic, when the exit was seen */
  int64_t exit_unix_ms;
  int ctl;                   /* the engine's socket; -1 once detached */
  char ctlbuf[KEEPER_MSG_MAX_BYTES * 4];
  size_t ctllen;
  int conn;                  /* a later engine's connection, or -1 */
  char connbuf[KEEPER_MSG_MAX_BYTES * 4];
  size_t connlen;
  int sigfd;
  bool detached;
  uint64_t detach_ms;
  bool out_open[2];          /* the pipe's read end, until EOF (detached) */
  Spool spool[2];
  bool spooled[2];           /* spool[i] is open */
  int order_fd;              /* KEEPER_ORDER_NAME while detached, else -1 */
  uint64_t order_records;    /* appended to it */
  const char *cause;         /* for the exit file */
  uint64_t kill_at_ms;       /* SIGKILL due (after an unattended SIGTERM); 0: none */
  int dirwatch;              /* inotify on the monitor directory's parent while
                                detached, or -1 */
  struct rusage ru;
} Keeper;

static uint64_t
keeper_now_ms(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static int64_t
keeper_unix_ms(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Tells the engine, if one is attached; a failed send detaches later
 * (poll reports the hang-up). */
static void
keeper_tell(Keeper *k, uint32_t type, int n, int64_t a, int64_t b, int64_t c)
{
  if (k->ctl < 0)
    return;
  KeeperMsg m = {type, (uint32_t)n, {a, b, c}};
  keeper_msg_send(k->ctl, &m);
}

/* Sends sig to everything of the monitor: the program's process group
 * (its zombie keeps the id reserved until it is reaped) and every
 * descendant of the keeper, wherever it went: orphans come to the keeper,
 * its subreaper. */
static void
keeper_signal_all(Keeper *k, int sig)
{
  if (k->state != kChildReaped)
    kill(-k->child, sig);
  ReaperTable t = {0};
  reaper_scan(&t);
  PidList all = {0};
  pid_t group = k->state != kChildReaped ? k->child : 0;
  reaper_collect(&t, &k->self, 1, &group, group > 0 ? 1 : 0, &all);
  for (size_t i = 0; i < all.n; i++) {
    if (all.pids[i] != k->self && all.pids[i] > 1)
      kill(all.pids[i], sig);
  }
  pidlist_free(&all);
  reaper_table_free(&t);
  if (sig != SIGKILL && sig != SIGCONT)
    keeper_signal_all(k, SIGCONT); /* a stopped process acts on nothing else */
}

/* Reaps every child but the program (orphans the program left). */
static void
keeper_reap_others(Keeper *k)
{
  PidList kids = {0};
  reaper_children(&kids);
  for (size_t i = 0; i < kids.n; i++) {
    if (kids.pids[i] != k->child || k->state == kChildReaped)
      reaper_reap(kids.pids[i]);
  }
  pidlist_free(&kids);
}

/* Kills what is left of the monitor and reaps it, until nothing is left
 * (a killed parent hands its children to the keeper: a few rounds). */
static void
keeper_kill_leftovers(Keeper *k)
{
  for (int round = 0; round < 100; round++) {
    keeper_signal_all(k, SIGKILL);
    keeper_reap_others(k);
    PidList kids = {0};
    reaper_children(&kids);
    size_t n = 0;
    for (size_t i = 0; i < kids.n; i++)
      n += kids.pids[i] != k->child || k->state == kChildReaped; /* not its zombie */
    pidlist_free(&kids);
    if (n == 0)
      return;
    struct timespec ts = {0, 10 * 1000 * 1000};
    nanosleep(&ts, NULL);
  }
}

/* Notes the program's exit, once, keeping its zombie. */
static void
keeper_check_child(Keeper *k)
{
  if (k->state != kChildRunning)
    return;
  siginfo_t info;
  memset(&info, 0, sizeof info);
  if (waitid(P_PID, (id_t)k->child, &info, WEXITED | WNOHANG | WNOWAIT) != 0 ||
      info.si_pid == 0)
    return;
  k->state = kChildExited;
  k->exited = true;
  k->exit_ms = keeper_now_ms();
  k->exit_unix_ms = keeper_unix_ms();
  if (info.si_code == CLD_EXITED) {
    k->exit_code = info.si_status;
    k->term_signal = 0;
  } else {
    k->exit_code = -1;
    k->term_signal = info.si_status;
  }
  keeper_tell(k, kKeeperExit, 3, k->term_signal == 0 ? 1 : 2,
              k->term_signal == 0 ? k->exit_code : k->term_signal, 0);
}

/* Reaps the program's zombie, with its resource usage. */
static void
keeper_reap_child(Keeper *k)
{
  if (k->state == kChildReaped)
    return;
  int status;
  pid_t r;
  do
    r = wait4(k->child, &status, 0, &k->ru);
  while (r < 0 && errno == EINTR);
  k->state = kChildReaped;
}

static uint64_t
keeper_cpu_us(const Keeper *k)
{
  return (uint64_t)k->ru.ru_utime.tv_sec * 1000000 + (uint64_t)k->ru.ru_utime.tv_usec +
         (uint64_t)k->ru.ru_stime.tv_sec * 1000000 + (uint64_t)k->ru.ru_stime.tv_usec;
}

/* Writes the exit file: a temporary name, then renamed into place, so a
 * reader sees all of it or none. */
static void
keeper_write_exit(Keeper *k)
{
  KeeperExit x = {k->exited, k->exit_code, k->term_signal, k->cause, keeper_cpu_us(k),
                  (uint64_t)k->ru.ru_maxrss, k->exit_unix_ms};
  char text[KEEPER_EXIT_MAX_BYTES];
  size_t len = keeper_exit_format(&x, text, sizeof text);
  unlinkat(KEEPER_FD_STATE, KEEPER_EXIT_NAME ".tmp", 0);
  int fd = openat(KEEPER_FD_STATE, KEEPER_EXIT_NAME ".tmp",
                  O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0)
    return;
  bool ok = write(fd, text, len) == (ssize_t)len;
  ok = close(fd) == 0 && ok;
  if (ok)
    renameat(KEEPER_FD_STATE, KEEPER_EXIT_NAME ".tmp", KEEPER_FD_STATE, KEEPER_EXIT_NAME);
  else
    unlinkat(KEEPER_FD_STATE, KEEPER_EXIT_NAME ".tmp", 0);
}

/* The end, detached: survivors killed, the program reaped, its exit
 * written for the next engine. */
static void __attribute__((noreturn))
keeper_finish_detached(Keeper *k)
{
  keeper_kill_leftovers(k);
  keeper_reap_child(k);
  keeper_kill_leftovers(k);
  keeper_write_exit(k);
  for (int i = 0; i < 2; i++) {
    if (k->spooled[i])
      spool_close(&k->spool[i]);
  }
  _exit(0);
}

/* Starts stopping the program for cause: SIGTERM to everything of the
 * monitor now, SIGKILL after monitor.kill_grace_ms (keeper_on_time). */
static void
keeper_begin_stop(Keeper *k, const char *cause, uint64_t now)
{
  if (k->state != kChildRunning || k->kill_at_ms != 0)
    return;
  k->cause = cause;
  keeper_signal_all(k, SIGTERM);
  k->kill_at_ms = now + (uint64_t)k->a.kill_grace_ms + 1;
}

/* Whether the monitor's directory has been removed (a logout cleaning
 * $XDG_RUNTIME_DIR, a person): then no engine can ever take this keeper
 * over, and it stops its program. A removed directory has no links left,
 * which its descriptor still tells. */
static void
keeper_check_dir(Keeper *k)
{
  struct stat st;
  if (fstat(KEEPER_FD_STATE, &st) == 0 && st.st_nlink == 0)
    keeper_begin_stop(k, "removed", keeper_now_ms());
}

/* Watches, while detached, for the removal of the monitor's directory.
 * The directory's own IN_DELETE_SELF is not sent while a descriptor of it
 * is open (ours is), so the watch is on its parent (monitors/), reached
 * through our descriptor: any name deleted or moved away there wakes the
 * keeper, which then looks at its own directory's link count. Without
 * inotify (none left for this user, no /proc) the check is made at the
 * detach only; the unattended stop still comes. */
static void
keeper_watch_dir(Keeper *k)
{
  char parent[64];
  snprintf(parent, sizeof parent, "/proc/self/fd/%d/..", KEEPER_FD_STATE);
  if (k->dirwatch < 0)
    k->dirwatch = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
  if (k->dirwatch >= 0 &&
      inotify_add_watch(k->dirwatch, parent,
                        IN_DELETE | IN_MOVED_FROM | IN_DELETE_SELF | IN_MOVE_SELF | IN_ONLYDIR) <
          0) {
    close(k->dirwatch);
    k->dirwatch = -1;
  }
  keeper_check_dir(k); /* after the watch: a removal in between is not missed */
}

/* The parent directory changed: drains the events, looks again. The
 * events are only a cue, so the buffer holds one event with the longest
 * name (the least read(2) takes), not a page: every page of stack the
 * keeper once touches stays its own (a keeper runs per monitor). */
static void
keeper_on_dirwatch(Keeper *k)
{
  char buf[sizeof(struct inotify_event) + NAME_MAX + 1]
      __attribute__((aligned(__alignof__(struct inotify_event))));
  while (read(k->dirwatch, buf, sizeof buf) > 0) {
  }
  keeper_check_dir(k);
}

/* The engine is gone: the keeper reads the pipes into the spools from now
 * on, and the unattended clock starts. */
static void
keeper_detach(Keeper *k)
{
  if (k->detached)
    return;
  if (k->ctl >= 0)
    close(k->ctl);
  k->ctl = -1;
  k->detached = true;
  k->detach_ms = keeper_now_ms();
  static const char *const names[2] = {KEEPER_SPOOL_OUT_NAME, KEEPER_SPOOL_ERR_NAME};
  k->order_fd = openat(KEEPER_FD_STATE, KEEPER_ORDER_NAME,
                       O_WRONLY | O_CREAT | O_APPEND | O_NOFOLLOW | O_CLOEXEC, 0600);
  k->order_records = 0;
  for (int i = 0; i < 2; i++) {
    VigilError err = VIGIL_ERROR_INIT;
    k->spooled[i] = spool_open(&k->spool[i], KEEPER_FD_STATE, names[i], &err) == 0;
    if (!k->spooled[i] && i == 1 && k->spooled[0] &&
        faccessat(KEEPER_FD_STATE, names[i], F_OK, AT_SYMLINK_NOFOLLOW) != 0 && errno == ENOENT) {
      /* The program wrote no stderr yet: the file is made at its first
       * byte (spool_defer), of the stdout spool's capacity. */
      spool_defer(&k->spool[i], KEEPER_FD_STATE, names[i], i, k->spool[0].cap);
      k->spooled[i] = true;
    }
    int fd = i == 0 ? KEEPER_FD_OUT : KEEPER_FD_ERR;
    if (k->out_open[i])
      fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
  }
  keeper_watch_dir(k);
}

/* A later engine takes over (kKeeperAttach on its connection): it gets the
 * pipes that are still open and how the program stands, and from now on
 * reads the pipes and writes the spools itself; the keeper is its keeper,
 * attached, as it was its first engine's. What the keeper spooled is all
 * in the spools before the pipes change hands, so nothing is read twice
 * or out of order. The keeper keeps its own duplicates of the pipes, for
 * a next detach. */
static void
keeper_attach(Keeper *k)
{
  int fds[2], nfds = 0;
  int64_t mask = 0;
  for (int i = 0; i < 2; i++) {
    if (k->out_open[i]) {
      fds[nfds++] = i == 0 ? KEEPER_FD_OUT : KEEPER_FD_ERR;
      mask |= 1 << i;
    }
  }
  int64_t exited = k->state != kChildRunning;
  int64_t how = !exited ? 0 : k->term_signal == 0 ? 1 : 2;
  int64_t val = !exited ? 0 : k->term_signal == 0 ? k->exit_code : k->term_signal;
  KeeperMsg a = {kKeeperAttached, 5, {k->child, exited, how, val, mask}};
  if (!keeper_msg_send_fds(k->conn, &a, fds, nfds)) {
    close(k->conn);
    k->conn = -1;
    return;
  }
  for (int i = 0; i < 2; i++) {
    if (k->spooled[i])
      spool_close(&k->spool[i]);
    k->spooled[i] = false;
  }
  if (k->order_fd >= 0)
    close(k->order_fd);
  k->order_fd = -1;
  if (k->dirwatch >= 0)
    close(k->dirwatch); /* the directory is its engine's to keep again */
  k->dirwatch = -1;
  /* The engine reads the pipes again: the drain's pages go back to the
   * kernel, so a keeper that once drained a flood does not hold them for
   * the rest of its life. */
  if (keeper_drain_buf != NULL)
    munmap(keeper_drain_buf, KEEPER_READ_BYTES);
  keeper_drain_buf = NULL;
  k->ctl = k->conn;
  k->ctllen = 0;
  k->conn = -1;
  k->connlen = 0;
  k->detached = false;
  k->kill_at_ms = 0;
  k->cause = "exited";
}

/* Stops everything at once, for an engine that asked (kKeeperStop). */
static void
keeper_stop(Keeper *k)
{
  if (k->state == kChildRunning)
    k->cause = "stopped";
  keeper_signal_all(k, SIGKILL);
  if (!k->detached) {
    /* Its engine asked and is there: nothing to write, nothing to keep. */
    keeper_reap_child(k);
    keeper_kill_leftovers(k);
    _exit(0);
  }
  /* Detached: the exit is seen and the pipes drained as for any ending. */
}

/* Acts on one message from an engine (its own, or a later one). Returns
 * false when the rest of the buffer is not to be read as this peer's (it
 * attached: its connection is the control socket now). */
static bool
keeper_on_msg(Keeper *k, const KeeperMsg *m, bool own)
{
  if (m->type == kKeeperAttach && !own && k->detached) {
    keeper_attach(k);
    return false;
  }
  if (m->type == kKeeperStop) {
    keeper_stop(k);
  } else if (m->type == kKeeperExitAck && own && k->state == kChildExited) {
    keeper_reap_child(k);
    keeper_kill_leftovers(k);
    keeper_tell(k, kKeeperReaped, 2, (int64_t)keeper_cpu_us(k), k->ru.ru_maxrss, 0);
    _exit(0);
  }
  return true;
}

/* Reads what a socket has, acting on each whole message. Returns false
 * when the peer is gone (or spoke nonsense). */
static bool
keeper_read_msgs(Keeper *k, int fd, char *buf, size_t *len, size_t cap, bool own)
{
  ssize_t n;
  do
    n = read(fd, buf + *len, cap - *len);
  while (n < 0 && errno == EINTR);
  if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
    return true;
  if (n <= 0)
    return false;
  *len += (size_t)n;
  for (;;) {
    KeeperMsg m;
    ssize_t used = keeper_msg_decode(buf, *len, &m);
    if (used < 0)
      return false;
    if (used == 0)
      return true;
    memmove(buf, buf + used, *len - (size_t)used);
    *len -= (size_t)used;
    if (!keeper_on_msg(k, &m, own))
      return true;
  }
}

/* Records that stream i's spool now ends at its head, for a replay that
 * keeps the two streams in the order they were printed. */
static void
keeper_note_order(Keeper *k, int i)
{
  if (k->order_fd < 0 || k->order_records >= KEEPER_ORDER_MAX)
    return;
  unsigned char rec[KEEPER_ORDER_RECORD];
  uint32_t magic = KEEPER_ORDER_MAGIC, stream = (uint32_t)i;
  uint64_t head = spool_head(&k->spool[i]);
  memcpy(rec, &magic, 4);
  memcpy(rec + 4, &stream, 4);
  memcpy(rec + 8, &head, 8);
  if (write(k->order_fd, rec, sizeof rec) == (ssize_t)sizeof rec)
    k->order_records++;
  else
    k->order_records = KEEPER_ORDER_MAX; /* a gap would misorder: stop */
}

/* Drains one pipe into its spool while detached (a turn's worth). */
static void
keeper_drain(Keeper *k, int i)
{
  /* With no memory for the buffer, a few bytes at a time still drain. */
  static char scarce[256];
  if (keeper_drain_buf == NULL) {
    void *m = mmap(NULL, KEEPER_READ_BYTES, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
                   -1, 0);
    keeper_drain_buf = m == MAP_FAILED ? NULL : m;
  }
  char *buf = keeper_drain_buf != NULL ? keeper_drain_buf : scarce;
  size_t cap = keeper_drain_buf != NULL ? KEEPER_READ_BYTES : sizeof scarce;
  int fd = i == 0 ? KEEPER_FD_OUT : KEEPER_FD_ERR;
  for (int turn = 0; turn < KEEPER_READ_TURNS; turn++) {
    ssize_t n = read(fd, buf, cap);
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
      return;
    if (n <= 0) {
      k->out_open[i] = false;
      close(fd);
      return;
    }
    if (k->spooled[i] && spool_append(&k->spool[i], buf, (size_t)n)) {
      keeper_note_order(k, i);
    } else if (k->spooled[i]) {
      /* The spool broke (no room for its next blocks, or its file cut
       * short: spool.h): the keeper goes on draining, keeping nothing
       * more of this stream, as when the spool could not be opened. */
      spool_close(&k->spool[i]);
      k->spooled[i] = false;
    }
  }
}

/* A later engine connects: kept only if it runs as our user. */
static void
keeper_accept(Keeper *k)
{
  int fd = accept4(KEEPER_FD_LISTEN, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
  if (fd < 0)
    return;
  struct ucred cred;
  socklen_t len = sizeof cred;
  if (k->conn >= 0 || getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0 ||
      cred.uid != getuid()) {
    close(fd);
    return;
  }
  k->conn = fd;
  k->connlen = 0;
  /* Its first word, as to its own engine: who it is and whose keeper. */
  KeeperMsg hello = {kKeeperHello, 3, {KEEPER_PROTOCOL, k->self, k->child}};
  keeper_msg_send(fd, &hello);
}

/* Acts on the signals the keeper takes through its signalfd. */
static void
keeper_on_signals(Keeper *k)
{
  struct signalfd_siginfo si;
  bool stop = false;
  while (read(k->sigfd, &si, sizeof si) == (ssize_t)sizeof si) {
    if (si.ssi_signo == SIGTERM)
      stop = true;
  }
  keeper_check_child(k);
  keeper_reap_others(k);
  if (stop)
    keeper_stop(k);
}

/* Milliseconds until the next deadline (-1: none). */
static int
keeper_timeout(const Keeper *k, uint64_t now)
{
  uint64_t due = UINT64_MAX;
  if (k->detached && k->state == kChildRunning && k->kill_at_ms == 0)
    due = k->detach_ms + (uint64_t)k->a.unattended_ms;
  if (k->kill_at_ms != 0 && k->state == kChildRunning && k->kill_at_ms < due)
    due = k->kill_at_ms;
  if (k->detached && k->state == kChildExited && k->exit_ms + (uint64_t)k->a.drain_ms < due)
    due = k->exit_ms + (uint64_t)k->a.drain_ms;
  if (due == UINT64_MAX)
    return -1;
  return due <= now ? 0 : due - now > 60000 ? 60000 : (int)(due - now);
}

/* The deadlines that have passed. */
static void
keeper_on_time(Keeper *k, uint64_t now)
{
  if (k->detached && k->state == kChildRunning && k->kill_at_ms == 0 &&
      now >= k->detach_ms + (uint64_t)k->a.unattended_ms)
    keeper_begin_stop(k, "unattended", now);
  if (k->kill_at_ms != 0 && k->state == kChildRunning && now >= k->kill_at_ms)
    keeper_signal_all(k, SIGKILL);
  if (k->detached && k->state == kChildExited &&
      (now >= k->exit_ms + (uint64_t)k->a.drain_ms || (!k->out_open[0] && !k->out_open[1])))
    keeper_finish_detached(k);
}

static void __attribute__((noreturn))
keeper_loop(Keeper *k)
{
  for (;;) {
    struct pollfd p[7];
    int n = 0, ictl = -1, iconn = -1, ilisten = -1, iout[2] = {-1, -1}, iwatch = -1;
    p[n++] = (struct pollfd){k->sigfd, POLLIN, 0};
    if (k->ctl >= 0) {
      ictl = n;
      p[n++] = (struct pollfd){k->ctl, POLLIN, 0};
    }
    if (k->detached) {
      ilisten = n;
      p[n++] = (struct pollfd){KEEPER_FD_LISTEN, POLLIN, 0};
      if (k->conn >= 0) {
        iconn = n;
        p[n++] = (struct pollfd){k->conn, POLLIN, 0};
      }
      for (int i = 0; i < 2; i++) {
        if (k->out_open[i]) {
          iout[i] = n;
          p[n++] = (struct pollfd){i == 0 ? KEEPER_FD_OUT : KEEPER_FD_ERR, POLLIN, 0};
        }
      }
      if (k->dirwatch >= 0) {
        iwatch = n;
        p[n++] = (struct pollfd){k->dirwatch, POLLIN, 0};
      }
    }
    int r = poll(p, (nfds_t)n, keeper_timeout(k, keeper_now_ms()));
    if (r < 0 && errno != EINTR)
      _exit(70);
    if (r > 0) {
      if (p[0].revents != 0)
        keeper_on_signals(k);
      if (ictl >= 0 && p[ictl].revents != 0 &&
          !keeper_read_msgs(k, k->ctl, k->ctlbuf, &k->ctllen, sizeof k->ctlbuf, true))
        keeper_detach(k);
      for (int i = 0; i < 2; i++) {
        if (iout[i] >= 0 && p[iout[i]].revents != 0)
          keeper_drain(k, i);
      }
      if (iconn >= 0 && k->conn >= 0 && p[iconn].revents != 0 &&
          !keeper_read_msgs(k, k->conn, k->connbuf, &k->connlen, sizeof k->connbuf, false)) {
        close(k->conn);
        k->conn = -1;
      }
      if (ilisten >= 0 && p[ilisten].revents != 0)
        keeper_accept(k);
      if (iwatch >= 0 && k->dirwatch >= 0 && p[iwatch].revents != 0)
        keeper_on_dirwatch(k);
    }
    keeper_on_time(k, keeper_now_ms());
  }
}

/* Forks the program (proc_child: the same start as the engine's own) and
 * waits for its report. Returns 0, or the failed step with *e its errno. */
static int
keeper_start_child(Keeper *k, int *e)
{
  int report[2];
  if (pipe2(report, O_CLOEXEC) != 0) {
    *e = errno;
    return kChildKeeper;
  }
  ContainChild cc = {.njoin = (size_t)k->a.njoin,
                     .rlimit_as = k->a.rlimit_as,
                     .rlimit_nproc = k->a.rlimit_nproc};
  for (int i = 0; i < k->a.njoin && i < CGROUP_JOIN_MAX; i++)
    cc.join_fds[i] = KEEPER_FD_JOIN + i;
  ProcChild c = {k->a.path,
                 k->a.argv,
                 environ,
                 KEEPER_FD_CWD,
                 {0, 1, 2},
                 report[1],
                 &cc,
                 proc_child_open_max(),
                 k->a.nofile_restore,
                 {(rlim_t)k->a.nofile_cur, (rlim_t)k->a.nofile_max}};
  k->child = fork();
  if (k->child == 0)
    proc_child(&c);
  *e = errno;
  close(report[1]);
  if (k->child < 0) {
    close(report[0]);
    return kChildKeeper;
  }
  int got[2] = {0, 0};
  size_t have = 0;
  while (have < sizeof got) {
    ssize_t n = read(report[0], (char *)got + have, sizeof got - have);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      break;
    have += (size_t)n;
  }
  close(report[0]);
  if (have == 0)
    return 0;
  while (waitpid(k->child, NULL, 0) < 0 && errno == EINTR) {
  }
  *e = have == sizeof got ? got[1] : EIO;
  return got[0] != 0 ? got[0] : kChildKeeper;
}

/* Puts /dev/null on 0, 1 and 2: the program has the pipes; the keeper must
 * hold no write end (the engine would never see EOF) and must not write
 * into the program's output. */
static void
keeper_release_stdio(void)
{
  int null = open("/dev/null", O_RDWR | O_CLOEXEC);
  for (int fd = 0; fd < 3; fd++) {
    if (null >= 0)
      dup2(null, fd);
    else
      close(fd);
  }
  if (null > 2)
    close(null);
}

int
main(int argc, char **argv)
{
  /* Static rather than on main's frame (1.4 KiB): it lands in the page of
   * .data that start-up writes anyway, and the stack stays shallower, which
   * saves a stack page for many keepers (the kernel starts the stack at a
   * random offset within 8 KiB, so a deeper stack spans one more page more
   * often). */
  static Keeper keeper;
  Keeper *k = &keeper;
  k->ctl = KEEPER_FD_CONTROL;
  k->order_fd = -1;
  k->conn = -1;
  k->dirwatch = -1;
  k->out_open[0] = k->out_open[1] = true;
  k->cause = "exited";
  if (!keeper_args_parse(argc, argv, &k->a)) {
    KeeperMsg m = {kKeeperFailed, 2, {kChildKeeper, EINVAL}};
    keeper_msg_send(KEEPER_FD_CONTROL, &m);
    return 125;
  }
  k->self = getpid();
  /* Its own session: a terminal's ^C to the engine's group, or a kill of
   * the engine's group, does not reach it. */
  setsid();
  prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
  signal(SIGPIPE, SIG_IGN);
  signal(SIGHUP, SIG_IGN);
  signal(SIGINT, SIG_IGN);
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGCHLD);
  sigaddset(&set, SIGTERM);
  /* Blocked before the fork: an exit is queued for the signalfd, never
   * missed. proc_child unblocks everything in the program. */
  sigprocmask(SIG_BLOCK, &set, NULL);
  k->sigfd = signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
  int e = 0;
  int step = k->sigfd < 0 ? kChildKeeper : keeper_start_child(k, &e);
  if (k->sigfd < 0)
    e = errno;
  for (int i = 0; i < k->a.njoin; i++)
    close(KEEPER_FD_JOIN + i);
  keeper_release_stdio();
  if (step != 0) {
    KeeperMsg m = {kKeeperFailed, 2, {step, e}};
    keeper_msg_send(KEEPER_FD_CONTROL, &m);
    return 126;
  }
  fcntl(KEEPER_FD_CONTROL, F_SETFL, fcntl(KEEPER_FD_CONTROL, F_GETFL) | O_NONBLOCK);
  fcntl(KEEPER_FD_LISTEN, F_SETFL, fcntl(KEEPER_FD_LISTEN, F_GETFL) | O_NONBLOCK);
  KeeperMsg hello = {kKeeperHello, 3, {KEEPER_PROTOCOL, k->self, k->child}};
  if (!keeper_msg_send(KEEPER_FD_CONTROL, &hello))
    keeper_detach(k);
  keeper_loop(k);
}
