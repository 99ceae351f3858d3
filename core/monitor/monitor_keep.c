/*
 * A monitor's directory in the state directory (monitor_keep.h): made and
 * removed with the monitor, and the sweep of those an earlier engine left.
 *
 * Paths in it are reached through the directory's descriptor (openat,
 * mkdirat), never by a path string that could be swapped on the way; the
 * socket, which has no *at call, is bound and reached as
 * /proc/self/fd/N/keeper.sock, which is that same directory and keeps the
 * path far below sun_path's 108 bytes however deep the state directory is.
 */
#include "monitor/monitor_keep.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "proc/keeper_wire.h"
#include "store/keepspec.h"
#include "base/fdcloser.h"
#include "base/log.h"
#include "base/mapfile.h"
#include "proc/procfs.h"
#include "proc/reaper.h"
#include "store/statefile.h"

/* How long the sweep waits for a leftover keeper to stop (its SIGKILLs,
 * its reap, its drain of what is left in the pipes). */
#define MONITOR_KEEP_STOP_MS 10000

/* The files a monitor's directory may hold. */
static const char *const monitor_keep_files[] = {
  "spec", "spec.tmp", "checkpoint", EVENTKEEP_NAME, KEEPER_SOCKET_NAME, KEEPER_SPOOL_OUT_NAME, KEEPER_SPOOL_ERR_NAME,
  KEEPER_SPOOL_ERR_NAME ".tmp", KEEPER_EXIT_NAME,
  KEEPER_EXIT_NAME ".tmp", KEEPER_ORDER_NAME,
};

/* The socket's address in the directory dir_fd. */
static void
monitor_keep_addr(int dir_fd, struct sockaddr_un *a)
{
  memset(a, 0, sizeof *a);
  a->sun_family = AF_UNIX;
  snprintf(a->sun_path, sizeof a->sun_path, "/proc/self/fd/%d/%s", dir_fd, KEEPER_SOCKET_NAME);
}

/* Why keeper.sock in dir_fd cannot be connected to, or NULL: it must be a
 * socket of this user's, and a symbolic link is not followed (connect
 * would follow it to whatever it names). */
static const char *
monitor_keep_socket_check(int dir_fd)
{
  struct stat st;
  if (fstatat(dir_fd, KEEPER_SOCKET_NAME, &st, AT_SYMLINK_NOFOLLOW) != 0)
    return errno == ENOENT ? KEEPER_SOCKET_NAME " is missing"
                           : KEEPER_SOCKET_NAME " cannot be examined";
  if (S_ISLNK(st.st_mode))
    return KEEPER_SOCKET_NAME " is not a socket (a symbolic link, not followed)";
  if (!S_ISSOCK(st.st_mode))
    return KEEPER_SOCKET_NAME " is not a socket";
  if (st.st_uid != getuid())
    return KEEPER_SOCKET_NAME " is another user's";
  return NULL;
}

/* Removes the directory name in monitors_fd with the files it may hold
 * (dir_fd: that directory). */
static void
monitor_keep_remove(int monitors_fd, const char *name, int dir_fd)
{
  for (size_t i = 0; i < sizeof monitor_keep_files / sizeof *monitor_keep_files; i++) {
    /* Held open across its unlink, so that freeing its blocks (which may
     * wait for the disk) is the pool's last close, not this unlink's: one
     * wait per monitor at a SIGTERM with 1000 (the spec). */
    int held = fdcloser_open_held(dir_fd, monitor_keep_files[i]);
    unlinkat(dir_fd, monitor_keep_files[i], 0);
    fdcloser_close(held);
  }
  if (unlinkat(monitors_fd, name, AT_REMOVEDIR) != 0 && errno != ENOENT)
    LOG_WARN("state", "could not remove the monitor directory %s: %s", name, strerror(errno));
}

#define CKPT_NAME "checkpoint"
#define CKPT_BYTES 4096
static const char ckpt_magic[8] = {'V', 'I', 'G', 'L', 'C', 'K', 'P', 'T'};

_Static_assert(sizeof(KeepCheckpoint) <= SPOOL_OWNER_BYTES,
               "the checkpoint fits the owner's part of a spool's header");

/* Lets the checkpoint go: unmaps its page when it is a file of its own
 * (the spool's header is the spool's to unmap). */
static void
monitor_keep_unmap_ckpt(MonitorKeep *k)
{
  if (k->ckpt != NULL && !k->ckpt_in_spool) {
    mapfile_unguard(k->ckpt_guard);
    munmap(k->ckpt, CKPT_BYTES);
  }
  k->ckpt = NULL;
  k->ckpt_guard = -1;
  k->ckpt_in_spool = false;
}

/* Whether the checkpoint's page took a SIGBUS (its file cut short). */
static bool
monitor_keep_ckpt_lost(MonitorKeep *k)
{
  if (k->ckpt_in_spool)
    return !spool_readable(&k->spool[0]);
  return mapfile_hit(k->ckpt_guard);
}

/* Checks a checkpoint read back (create false) or makes it (create true).
 * False: not believed, let go. */
static bool
monitor_keep_ckpt_sound(MonitorKeep *k, bool create)
{
  if (create) {
    memcpy(k->ckpt->magic, ckpt_magic, 8);
    k->ckpt->version = 1;
    k->ckpt->ring_next_seq = 1;
    return true;
  }
  if (memcmp(k->ckpt->magic, ckpt_magic, 8) != 0 || k->ckpt->version != 1) {
    monitor_keep_unmap_ckpt(k);
    return false;
  }
  if (k->ckpt->ring_next_seq == 0) {
    /* Made as 1 and only ever moved up: 0 is a garbled page, and believed
     * it would number the next line 0 (seqs start at 1). */
    LOG_WARN("state", "%s: its checkpoint is unsound (its next seq is 0); its counters are "
             "rebuilt from its spools", k->name);
    monitor_keep_unmap_ckpt(k);
    return false;
  }
  return true;
}

/* Maps the checkpoint page of k's directory, making it when create (its
 * block reserved first: a page written through a mapping on a full file
 * system is a SIGBUS). */
static bool
monitor_keep_map_ckpt_file(MonitorKeep *k, bool create)
{
  int fd = openat(k->dir_fd, CKPT_NAME,
                  O_RDWR | O_NOFOLLOW | O_CLOEXEC | (create ? O_CREAT | O_EXCL : 0), 0600);
  if (fd < 0)
    return false;
  struct stat st;
  bool ok = fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_uid == getuid() &&
            (st.st_mode & 077) == 0 && (create ? ftruncate(fd, CKPT_BYTES) == 0
                                               : st.st_size == CKPT_BYTES);
  int e = ok && create ? mapfile_reserve(fd, 0, CKPT_BYTES) : 0;
  if (e != 0)
    LOG_WARN("state", "monitor %s: no checkpoint in its directory (no room: %s); a restarted "
             "engine would rebuild its counters from its spools", k->name, strerror(e));
  void *map = ok && e == 0 ? mmap(NULL, CKPT_BYTES, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0)
                           : MAP_FAILED;
  close(fd);
  if (map == MAP_FAILED)
    return false;
  k->ckpt = map;
  k->ckpt_guard = mapfile_guard(map, CKPT_BYTES);
  return monitor_keep_ckpt_sound(k, create);
}

/* The monitor's checkpoint, mapped: in the owner's part of its stdout
 * spool's header (spool.h, version 2), which shares the page with that
 * header and the first bytes of output, so a quiet monitor does not hold
 * a page for it alone (issue 27); or, in a directory an engine before made
 * (its spools of version 1), the checkpoint file of its own, which is then
 * there. Made when create. False: none (no room for it, an older
 * directory without one, or one not believed), and the monitor goes on. */
static bool
monitor_keep_map_ckpt(MonitorKeep *k, bool create)
{
  void *area = k->nspools > 0 ? spool_owner_area(&k->spool[0]) : NULL;
  bool own_file = !create && faccessat(k->dir_fd, CKPT_NAME, F_OK, AT_SYMLINK_NOFOLLOW) == 0;
  if (area == NULL || own_file)
    return monitor_keep_map_ckpt_file(k, create && area == NULL);
  k->ckpt = area;
  k->ckpt_in_spool = true;
  k->ckpt_guard = -1;
  return monitor_keep_ckpt_sound(k, create);
}

/* Makes k->listen_fd: a socket listening on keeper.sock in k's directory.
 * Returns NULL, or what failed (errno says why). */
static const char *
monitor_keep_listen(MonitorKeep *k)
{
  k->listen_fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (k->listen_fd < 0)
    return "socket";
  struct sockaddr_un a;
  monitor_keep_addr(k->dir_fd, &a);
  if (bind(k->listen_fd, (struct sockaddr *)&a, sizeof a) != 0)
    return "bind " KEEPER_SOCKET_NAME;
  if (listen(k->listen_fd, 4) != 0)
    return "listen";
  return NULL;
}

/* See monitor_keep.h. */
int
monitor_keep_open(MonitorKeep *k, int monitors_fd, const char *id, uint64_t cap,
                  VigilError *err)
{
  memset(k, 0, sizeof *k);
  k->monitors_fd = monitors_fd;
  k->dir_fd = k->listen_fd = -1;
  snprintf(k->name, sizeof k->name, "%s", id);
  if (mkdirat(monitors_fd, k->name, 0700) != 0)
    return error_set(err, kErrSpawnFailed, "state directory: monitors/%s: %s", k->name,
                     strerror(errno));
  k->dir_fd = openat(monitors_fd, k->name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  const char *what = "open";
  if (k->dir_fd < 0)
    goto fail;
  /* The stderr spool's file is made at the first byte of stderr (most
   * programs write none): spool_defer. */
  if (spool_create(&k->spool[0], k->dir_fd, KEEPER_SPOOL_OUT_NAME, 0, cap, err) != 0) {
    monitor_keep_close(k);
    return -1;
  }
  spool_defer(&k->spool[1], k->dir_fd, KEEPER_SPOOL_ERR_NAME, 1, cap);
  k->nspools = 2;
  /* Without a checkpoint (no room for its page) the monitor goes on. */
  monitor_keep_map_ckpt(k, true);
  what = monitor_keep_listen(k);
  if (what == NULL)
    return 0;
fail:;
  int e = errno;
  monitor_keep_close(k);
  return error_set(err, kErrSpawnFailed, "state directory: monitors/%s: %s: %s", id, what,
                   strerror(e));
}

/* See monitor_keep.h. What a keeper before left is gone first: its exit
 * file (a later engine would take it for the new program's exit), its
 * order file (replayed already, or never needed) and its socket's name. */
int
monitor_keep_rearm(MonitorKeep *k, VigilError *err)
{
  static const char *const stale[] = {KEEPER_EXIT_NAME, KEEPER_EXIT_NAME ".tmp",
                                      KEEPER_ORDER_NAME, KEEPER_SOCKET_NAME};
  if (k->dir_fd < 0 || k->name[0] == '\0')
    return error_set(err, kErrSpawnFailed, "state directory: the monitor's directory is gone");
  for (size_t i = 0; i < sizeof stale / sizeof *stale; i++)
    if (unlinkat(k->dir_fd, stale[i], 0) != 0 && errno != ENOENT)
      return error_set(err, kErrSpawnFailed, "state directory: monitors/%s/%s: %s", k->name,
                       stale[i], strerror(errno));
  if (k->listen_fd >= 0)
    close(k->listen_fd);
  k->listen_fd = -1;
  const char *what = monitor_keep_listen(k);
  if (what == NULL)
    return 0;
  int e = errno;
  if (k->listen_fd >= 0)
    close(k->listen_fd);
  k->listen_fd = -1;
  return error_set(err, kErrSpawnFailed, "state directory: monitors/%s: %s: %s", k->name, what,
                   strerror(e));
}

/* See monitor_keep.h. */
void
monitor_keep_close_only(MonitorKeep *k)
{
  /* The last close of a removed file frees its blocks, which may wait for
   * the disk: that close is the pool's (fdcloser.h), each file held by a
   * duplicate while its module closes its own. */
  for (int i = 0; i < k->nspools; i++)
    fdcloser_hold(k->spool[i].fd);
  fdcloser_hold(k->events.fd);
  monitor_keep_unmap_ckpt(k);
  eventkeep_close(&k->events);
  for (int i = 0; i < k->nspools; i++)
    spool_close(&k->spool[i]);
  k->nspools = 0;
  if (k->listen_fd >= 0)
    close(k->listen_fd);
  fdcloser_close(k->dir_fd);
  k->listen_fd = k->dir_fd = -1;
}

/* See monitor_keep.h. A few stores into a page mapped shared. */
void
monitor_keep_set_checkpoint(MonitorKeep *k, const uint64_t v[NOTIFICATION_CHECKPOINT_WORDS])
{
  KeepCheckpoint *ck = k->ckpt;
  if (ck == NULL)
    return;
  ck->cut[0] = v[kCkptCut0];
  ck->cut[1] = v[kCkptCut1];
  ck->ring_next_seq = v[kCkptNextSeq];
  ck->lines = v[kCkptLines];
  ck->matched = v[kCkptMatched];
  ck->unmatched = v[kCkptUnmatched];
  ck->dropped = v[kCkptDropped];
  ck->notifications = v[kCkptNotifications];
  ck->nr_at_cut[0] = v[kCkptNrAtCut0];
  ck->nr_at_cut[1] = v[kCkptNrAtCut1];
  ck->told_nr[0] = v[kCkptToldNr0];
  ck->told_nr[1] = v[kCkptToldNr1];
  ck->incidents = v[kCkptIncidents];
  ck->incident_next = v[kCkptIncidentNext];
  if (monitor_keep_ckpt_lost(k)) {
    LOG_WARN("state", "monitor %s: its checkpoint's file was cut short under it (a SIGBUS "
             "caught): it goes on without a checkpoint, and a restarted engine would rebuild "
             "its counters from its spools", k->name);
    monitor_keep_unmap_ckpt(k);
  }
}

/* See monitor_keep.h. The journal's is believed only when it is past the
 * page in every respect: a cut never goes back. */
bool
monitor_keep_catch_up(MonitorKeep *k, const uint64_t v[NOTIFICATION_CHECKPOINT_WORDS])
{
  KeepCheckpoint *ck = k->ckpt;
  if (ck == NULL || v[kCkptNotifications] <= ck->notifications || v[kCkptCut0] < ck->cut[0] ||
      v[kCkptCut1] < ck->cut[1] || v[kCkptNextSeq] < ck->ring_next_seq)
    return false;
  monitor_keep_set_checkpoint(k, v);
  return true;
}

/* See monitor_keep.h. An unlinked file's mapping stays valid. */
void
monitor_keep_ended(MonitorKeep *k)
{
  if (k->dir_fd >= 0 && k->name[0] != '\0')
    monitor_keep_remove(k->monitors_fd, k->name, k->dir_fd);
  k->name[0] = '\0';
}

/* See monitor_keep.h. The files go first: their mappings stay valid
 * until closed. */
void
monitor_keep_close(MonitorKeep *k)
{
  if (k->dir_fd >= 0 && k->name[0] != '\0')
    monitor_keep_remove(k->monitors_fd, k->name, k->dir_fd);
  else if (k->name[0] != '\0')
    unlinkat(k->monitors_fd, k->name, AT_REMOVEDIR);
  monitor_keep_close_only(k);
  k->name[0] = '\0';
}

/* Reaches the keeper of a leftover directory and tells it to stop; waits
 * (bounded) for it to close the connection, which it does as it exits.
 * Returns "stopped", "gone" (nobody listening) or why not. */
static const char *
monitor_keep_stop_keeper(int dir_fd, pid_t *pid)
{
  *pid = 0;
  const char *bad = monitor_keep_socket_check(dir_fd);
  if (bad != NULL)
    return bad; /* the directory's removal stops it (keeper.c) */
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0)
    return "not reached (socket failed)";
  struct sockaddr_un a;
  monitor_keep_addr(dir_fd, &a);
  if (connect(fd, (struct sockaddr *)&a, sizeof a) != 0) {
    close(fd);
    return "gone";
  }
  struct ucred cred;
  socklen_t len = sizeof cred;
  if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0 || cred.uid != getuid()) {
    close(fd);
    return "not ours (another user's socket): left alone";
  }
  /* Its hello names it (the socket's credentials are those of the engine
   * that made it listen). */
  struct pollfd hp = {fd, POLLIN, 0};
  char hb[KEEPER_MSG_MAX_BYTES];
  KeeperMsg hello;
  ssize_t got = poll(&hp, 1, MONITOR_KEEP_STOP_MS) == 1 ? read(fd, hb, sizeof hb) : -1;
  if (got > 0 && keeper_msg_decode(hb, (size_t)got, &hello) > 0 && hello.type == kKeeperHello &&
      hello.n >= 2)
    *pid = (pid_t)hello.v[1];
  KeeperMsg stop = {kKeeperStop, 0, {0}};
  if (!keeper_msg_send(fd, &stop)) {
    close(fd);
    return "gone";
  }
  const char *result = "did not stop in time";
  struct pollfd p = {fd, POLLIN, 0};
  for (;;) {
    int r = poll(&p, 1, MONITOR_KEEP_STOP_MS);
    if (r < 0 && errno == EINTR)
      continue;
    if (r <= 0)
      break;
    char buf[64];
    ssize_t n = read(fd, buf, sizeof buf);
    if (n <= 0 && !(n < 0 && errno == EINTR)) {
      result = "stopped";
      break;
    }
  }
  close(fd);
  return result;
}


/* The exit a keeper recorded, parsed. False: none, or one that is not. */
static bool
monitor_keep_exit(int dir_fd, KeeperExit *x)
{
  int fd = openat(dir_fd, KEEPER_EXIT_NAME, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0)
    return false;
  struct stat st;
  char text[KEEPER_EXIT_MAX_BYTES];
  ssize_t n = -1;
  if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_uid == getuid() &&
      (st.st_mode & 077) == 0)
    n = read(fd, text, sizeof text);
  close(fd);
  return n > 0 && keeper_exit_parse(text, (size_t)n, x);
}

/* The exit a keeper recorded, as text for the log. */
static void
monitor_keep_exit_text(int dir_fd, char *out, size_t cap)
{
  KeeperExit x;
  if (!monitor_keep_exit(dir_fd, &x))
    snprintf(out, cap, "no exit recorded (or none that could be read)");
  else if (!x.exited)
    snprintf(out, cap, "ended (%s), status unknown", x.cause);
  else if (x.term_signal != 0)
    snprintf(out, cap, "killed by signal %d (%s)", x.term_signal, x.cause);
  else
    snprintf(out, cap, "exited with code %d (%s)", x.exit_code, x.cause);
}

/* Opens the monitor directory name (dir_fd) as k: its spools as they are. */
static int
monitor_keep_reopen(MonitorKeep *k, int monitors_fd, const char *name, int dir_fd,
                    VigilError *err)
{
  memset(k, 0, sizeof *k);
  k->monitors_fd = monitors_fd;
  k->listen_fd = -1;
  snprintf(k->name, sizeof k->name, "%.63s", name);
  k->dir_fd = fcntl(dir_fd, F_DUPFD_CLOEXEC, 3);
  if (k->dir_fd < 0)
    return error_set(err, kErrInternal, "dup: %s", strerror(errno));
  static const char *const names[2] = {KEEPER_SPOOL_OUT_NAME, KEEPER_SPOOL_ERR_NAME};
  for (int i = 0; i < 2; i++) {
    if (i == 1 && faccessat(k->dir_fd, names[i], F_OK, AT_SYMLINK_NOFOLLOW) != 0 &&
        errno == ENOENT) {
      /* No stderr was ever written: its file is still to be made. */
      spool_defer(&k->spool[i], k->dir_fd, names[i], i, k->spool[0].cap);
      k->nspools++;
      continue;
    }
    if (spool_open(&k->spool[i], k->dir_fd, names[i], err) != 0) {
      for (int j = 0; j < k->nspools; j++)
        spool_close(&k->spool[j]);
      close(k->dir_fd);
      k->dir_fd = -1;
      return -1;
    }
    k->nspools++;
  }
  /* An unsound checkpoint is not used: the counters are then rebuilt
   * from what the spools hold. */
  monitor_keep_map_ckpt(k, false);
  return 0;
}

/* Waits (bounded) for one message and its descriptors on fd. */
static bool
monitor_keep_recv(int fd, KeeperMsg *m, int *fds, int *nfds)
{
  struct pollfd p = {fd, POLLIN, 0};
  int r;
  do
    r = poll(&p, 1, MONITOR_KEEP_STOP_MS);
  while (r < 0 && errno == EINTR);
  if (r <= 0) {
    *nfds = 0;
    return false;
  }
  return keeper_msg_recv_fds(fd, m, fds, nfds);
}

/* Whether pid is still the process a spec names that was started at
 * started_at_ms (Unix ms): alive (not a zombie), the leader of its own
 * session (the keeper and its program both call setsid), this user's,
 * started no later than a second after started_at_ms (a pid used again
 * belongs to a process started later), and, when comm is given, so named.
 * Linux (/proc); elsewhere never. */
static bool
monitor_keep_same_process(pid_t pid, int64_t started_at_ms, const char *comm)
{
  ReaperProc rp;
  char path[64], name[64];
  struct stat st;
  long hz = sysconf(_SC_CLK_TCK);
  if (pid <= 1)
    return false; /* pid 0: a spec written before its keeper's hello */
  snprintf(path, sizeof path, "/proc/%d", (int)pid);
  if (pid <= 1 || hz <= 0 || !reaper_read(pid, &rp) || rp.state == 'Z' || rp.state == 'X' ||
      rp.sid != pid || stat(path, &st) != 0 || st.st_uid != getuid())
    return false;
  struct timespec boot, wall;
  clock_gettime(CLOCK_BOOTTIME, &boot);
  clock_gettime(CLOCK_REALTIME, &wall);
  int64_t age_ms = (int64_t)boot.tv_sec * 1000 + boot.tv_nsec / 1000000 -
                   (int64_t)(rp.start_ticks * 1000 / (uint64_t)hz);
  int64_t started = (int64_t)wall.tv_sec * 1000 + wall.tv_nsec / 1000000 - age_ms;
  if (started > started_at_ms + 1000)
    return false;
  if (comm == NULL)
    return true;
  ssize_t n = procfs_read_pid(pid, "comm", name, sizeof name);
  if (n > 0 && name[n - 1] == '\n')
    name[n - 1] = '\0';
  return n > 0 && strcmp(name, comm) == 0;
}

/* SIGKILL to every live process of the session sid (a program's: it
 * called setsid) and every descendant of its leader. */
static void
monitor_keep_kill_session(pid_t sid)
{
  ReaperTable t = {0};
  PidList all = {0};
  reaper_scan(&t);
  reaper_collect(&t, &sid, 1, &sid, 1, &all);
  for (size_t i = 0; i < all.n; i++)
    kill(all.pids[i], SIGKILL);
  pidlist_free(&all);
  reaper_table_free(&t);
}

/* The keeper of a monitor directory cannot be reached (why): po is filled
 * as a child that has ended, with a socket whose peer is closed standing in
 * for the keeper. The exit its keeper recorded, if any, is the exit;
 * without one the exit is unknown, and what is still there is stopped: a
 * keeper alive but unreachable is told to stop (SIGTERM: it ends its
 * program as for an unattended stop), a program whose keeper is dead (so
 * nobody reads its output) is killed. po->lost says which. Returns NULL,
 * or why not even that can be done. */
static const char *
monitor_keep_gone(int dir_fd, const KeepSpec *ks, ProcAdoptOptions *po, const char *why)
{
  KeeperExit x;
  int sv[2];
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0)
    return "no keeper, and no socket to stand in for it";
  close(sv[1]);
  po->ctl = sv[0];
  po->exited = true;
  po->keeper_gone = true;
  if (monitor_keep_exit(dir_fd, &x) && x.exited) {
    po->exit_code = x.exit_code;
    po->term_signal = x.term_signal;
    po->ended_at_ms = x.ended_unix_ms;
    return NULL;
  }
  po->status_unknown = true;
  if (monitor_keep_same_process(ks->keeper, ks->started_at_ms, KEEPER_PROGRAM)) {
    kill(ks->keeper, SIGTERM);
    snprintf(po->lost, sizeof po->lost,
             "its keeper (pid %d) could not be reached: %s; it was told to stop its program "
             "(SIGTERM), whose exit is unknown",
             (int)ks->keeper, why);
  } else if (monitor_keep_same_process(ks->pid, ks->started_at_ms, NULL)) {
    monitor_keep_kill_session(ks->pid);
    snprintf(po->lost, sizeof po->lost,
             "its keeper was gone and recorded no exit (keeper pid %d; %s); its program (pid "
             "%d), left with nobody to read its output, was killed (SIGKILL); its exit is "
             "unknown",
             (int)ks->keeper, why, (int)ks->pid);
  } else {
    snprintf(po->lost, sizeof po->lost,
             "its keeper was gone and recorded no exit (keeper pid %d; %s), and its program "
             "(pid %d) had ended too; its exit is unknown",
             (int)ks->keeper, why, (int)ks->pid);
  }
  return NULL;
}

/* Reaches the keeper of a monitor directory and has it attach to this
 * engine: po filled with the child, its state and the open pipes. A keeper
 * that cannot be reached is reported gone (monitor_keep_gone). Returns
 * NULL, or why the keeper cannot be taken. */
static const char *
monitor_keep_attach(int dir_fd, const KeepSpec *ks, ProcAdoptOptions *po)
{
  *po = (ProcAdoptOptions){.pid = ks->pid,
                           .keeper = ks->keeper,
                           .ctl = -1,
                           .out = {-1, -1},
                           .program = ks->program,
                           .started_at_ms = ks->started_at_ms,
                           .exit_drain_ms = ks->settings.exit_drain_ms};
  const char *why = monitor_keep_socket_check(dir_fd);
  int fd = why == NULL ? socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0) : -1;
  struct sockaddr_un a;
  monitor_keep_addr(dir_fd, &a);
  if (fd >= 0 && connect(fd, (struct sockaddr *)&a, sizeof a) != 0) {
    close(fd);
    fd = -1;
    why = "nobody listens on " KEEPER_SOCKET_NAME;
  }
  /* A keeper finishing (its program ended: drained, reaped, exit written)
   * may take the connection and go without a word: then it is gone. */
  KeeperMsg hello;
  int none = 0;
  bool said_hello = fd >= 0 && monitor_keep_recv(fd, &hello, NULL, &none);
  if (fd >= 0 && !said_hello) {
    close(fd);
    fd = -1;
    why = "its keeper said nothing";
  }
  if (fd < 0)
    return monitor_keep_gone(dir_fd, ks, po, why != NULL ? why : "no socket");
  struct ucred cred;
  socklen_t len = sizeof cred;
  KeeperMsg attached;
  int fds[2], nfds = 2;
  if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0 || cred.uid != getuid()) {
    close(fd);
    return "its socket is not this user's";
  }
  /* A spec written before the keeper's hello reached its engine (pid 0: a
   * start still in flight at a SIGUSR2 upgrade or a crash) names the keeper
   * only; the keeper, checked as the spec's, then tells the child. */
  /* A spec written while its keeper was still being launched (keeper 0)
   * names none: the keeper listening in the monitor's own directory, its
   * hello's pid the socket's peer, is taken as its own. */
  pid_t keeper = ks->keeper != 0 ? ks->keeper : cred.pid;
  if (hello.type != kKeeperHello ||
      hello.n < 3 || hello.v[0] != KEEPER_PROTOCOL || hello.v[1] != keeper ||
      (ks->pid != 0 ? hello.v[2] != ks->pid : hello.v[2] <= 1 || hello.v[2] > INT32_MAX)) {
    close(fd);
    return "its keeper did not answer as the spec's";
  }
  po->pid = (pid_t)hello.v[2];
  po->keeper = keeper;
  KeeperMsg attach = {kKeeperAttach, 0, {0}};
  if (!keeper_msg_send(fd, &attach) || !monitor_keep_recv(fd, &attached, fds, &nfds) ||
      attached.type != kKeeperAttached || attached.n < 5) {
    for (int i = 0; i < nfds; i++)
      close(fds[i]);
    close(fd);
    /* A keeper whose program has ended may finish its drain between its
     * hello and our attach, and go: what it left (spools, exit file) is
     * then the monitor's, as for a keeper gone before we came. */
    KeeperExit x;
    if (monitor_keep_exit(dir_fd, &x) && x.exited)
      return monitor_keep_gone(dir_fd, ks, po, "its keeper ended during the take-over");
    return "its keeper did not attach (another engine has it?)";
  }
  po->ctl = fd;
  int k = 0;
  for (int i = 0; i < 2; i++) {
    if ((attached.v[4] & (1 << i)) && k < nfds)
      po->out[i] = fds[k++];
  }
  while (k < nfds)
    close(fds[k++]);
  if (attached.v[1] == 1) {
    po->exited = true;
    po->exit_code = attached.v[2] == 1 ? (int)attached.v[3] : -1;
    po->term_signal = attached.v[2] == 2 ? (int)attached.v[3] : 0;
  }
  return NULL;
}

/* Tries to take the monitor of directory name over. Returns NULL when
 * taken, else why not (the directory is then stopped and removed). */
static const char *
monitor_keep_take(int state_fd, int monitors_fd, const char *name, int fd, MonitorKeepTake take,
                  void *ctx, char *why, size_t cap)
{
  KeepSpec ks;
  VigilError err = VIGIL_ERROR_INIT;
  if (keepspec_read(fd, &ks, &err) != 0) {
    /* Kept for a person to look at, never read again. */
    char as[320], aside[128];
    snprintf(as, sizeof as, "monitor.%.200s." KEEPSPEC_NAME, name);
    statefile_set_aside(state_fd, fd, KEEPSPEC_NAME, as, aside, sizeof aside);
    snprintf(why, cap, "%.400s%s%.80s", err.msg,
             aside[0] ? "; the spec is set aside as " : "", aside);
    return why;
  }
  const char *no = NULL;
  if (ks.session_anonymous)
    no = "its session was anonymous, and died with its connection";
  else if (strcmp(ks.id, name) != 0)
    no = "its spec names another monitor";
  ProcAdoptOptions po;
  if (no == NULL)
    no = monitor_keep_attach(fd, &ks, &po);
  if (no != NULL) {
    keepspec_free(&ks);
    return no;
  }
  MonitorKeep *keep = malloc(sizeof *keep);
  if (keep == NULL || monitor_keep_reopen(keep, monitors_fd, name, fd, &err) != 0) {
    proc_adopt_discard(&po);
    snprintf(why, cap, "%.500s", keep == NULL ? "out of memory" : err.msg);
    free(keep);
    keepspec_free(&ks);
    return why;
  }
  if (!take(ctx, keep, &ks, &po, &err)) {
    /* Its descriptors are closed: the keeper detached again, and the
     * stop that follows reaches it. */
    monitor_keep_close_only(keep);
    free(keep);
    snprintf(why, cap, "%.500s", err.msg);
    keepspec_free(&ks);
    return why;
  }
  keepspec_free(&ks);
  return NULL;
}

/* See monitor_keep.h. */
int
monitor_keep_sweep(int state_fd, int monitors_fd, MonitorKeepTake take, void *ctx)
{
  int dup_fd = fcntl(monitors_fd, F_DUPFD_CLOEXEC, 3);
  DIR *d = dup_fd >= 0 ? fdopendir(dup_fd) : NULL;
  if (d == NULL) {
    if (dup_fd >= 0)
      close(dup_fd);
    return 0;
  }
  int taken = 0;
  struct dirent *de;
  while ((de = readdir(d)) != NULL) {
    if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
      continue;
    int fd = openat(monitors_fd, de->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0 || st.st_uid != getuid() || (st.st_mode & 077) != 0) {
      LOG_WARN("state", "monitors/%s is not a private directory of this user; left alone",
               de->d_name);
      if (fd >= 0)
        close(fd);
      continue;
    }
    char why[512];
    const char *no = take != NULL ? monitor_keep_take(state_fd, monitors_fd, de->d_name, fd,
                                                      take, ctx, why, sizeof why)
                                  : "this engine takes no monitor over";
    if (no == NULL) {
      taken++;
      close(fd);
      continue;
    }
    pid_t pid;
    const char *keeper = monitor_keep_stop_keeper(fd, &pid);
    char exit_text[128];
    monitor_keep_exit_text(fd, exit_text, sizeof exit_text);
    uint64_t spooled[2] = {0, 0}, lost[2] = {0, 0};
    static const char *const names[2] = {KEEPER_SPOOL_OUT_NAME, KEEPER_SPOOL_ERR_NAME};
    for (int i = 0; i < 2; i++) {
      Spool s;
      VigilError err = VIGIL_ERROR_INIT;
      if (spool_open(&s, fd, names[i], &err) == 0) {
        spooled[i] = spool_head(&s) - spool_cut(&s);
        lost[i] = spool_lost(&s);
        spool_close(&s);
      }
    }
    LOG_WARN("state",
             "monitor %s was left by an engine that ended without stopping it and is not "
             "taken over: %s; its keeper (pid %d): %s; its program: %s; spooled after that "
             "engine: %" PRIu64 " bytes of stdout, %" PRIu64 " of stderr (%" PRIu64 " and %" PRIu64
             " lost past the spool); removed",
             de->d_name, no, (int)pid, keeper, exit_text, spooled[0], spooled[1], lost[0],
             lost[1]);
    monitor_keep_remove(monitors_fd, de->d_name, fd);
    close(fd);
  }
  closedir(d);
  return taken;
}
