/*
 * A monitor's directory in the state directory (docs/restart.md): what of
 * the monitor must outlive the engine. It is made when the monitor starts,
 * holds the two spools its capture is kept in (spool.h), the listening
 * socket by which a later engine reaches its keeper, and the keeper's exit
 * file; it is removed when the engine forgets the monitor. One that an
 * engine finds at start-up was left by an engine that died without
 * stopping its monitor (monitor_keep_sweep).
 */
#ifndef VIGIL_MONITOR_KEEP_H
#define VIGIL_MONITOR_KEEP_H

#include <stdbool.h>
#include <stdint.h>

#include "error.h"
#include "spool.h"

typedef struct {
  int monitors_fd;  /* the state directory's monitors/ (borrowed) */
  char name[64];    /* the monitor's id: its directory's name */
  int dir_fd;       /* monitors/<id> */
  int listen_fd;    /* keeper.sock, listening; handed to the keeper */
  Spool spool[2];   /* stdout, stderr */
  int nspools;      /* made so far */
} MonitorKeep;

/* Makes monitors/<id> (0700, must not exist), its spools of cap bytes each
 * (monitor.capture_max_bytes) and the keeper's listening socket. On error
 * (spawn_failed naming the file and the OS error) nothing is left. */
int monitor_keep_open(MonitorKeep *k, int monitors_fd, const char *id, uint64_t cap,
                      VigilError *err);

/* Unmaps, closes and removes the directory with its files. */
void monitor_keep_close(MonitorKeep *k);

/* At start-up: every directory in monitors/ was left by an engine that
 * ended without stopping its monitor (a crash, SIGKILL). Each is reported
 * in the log (its keeper, the exit it recorded, what it spooled and lost),
 * its keeper is stopped (taking such a monitor over is a later stage of
 * docs/restart.md), and it is removed. Returns how many were found. A
 * file there that is not a private directory of ours is reported and left
 * alone. */
int monitor_keep_sweep(int monitors_fd);

#endif
