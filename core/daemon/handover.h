/*
 * The graceful restart (docs/restart.md, stage 4): on SIGUSR2, vigild
 * replaces its own image with the binary at the path it was started from
 * (a new build installed there is what an upgrade wants), keeping its pid
 * and its listening socket, so no host is ever refused a connection and
 * every keeper and child keeps its parent.
 *
 * Everything else goes the way of a crash, on purpose, so there is one
 * way back and it is the tested one: every other descriptor is
 * close-on-exec, so each keeper sees its engine's socket close and drains
 * its program's output into the spool; every session's journal and every
 * monitor's checkpoint are current (they are written as things happen,
 * and between two turns of the loop nothing is half done); the new image
 * takes the epoch, the sessions and the monitors back from the state
 * directory, as after a crash, then listens on the socket handed over.
 * Hosts see their connection close and resume with last_seq, as after any
 * disconnect.
 */
#ifndef VIGIL_HANDOVER_H
#define VIGIL_HANDOVER_H

#include <stdbool.h>

#include "base/error.h"

/* The environment variable that carries the listening socket's number
 * across the exec (removed by the new image as it reads it, so no child
 * inherits it). */
#define HANDOVER_LISTEN_ENV "VIGIL_HANDOVER_LISTEN_FD"
/* Set to 1 alongside it when the socket's file is not the engine's to
 * remove (a service manager made it: activation.h). */
#define HANDOVER_KEEP_FILE_ENV "VIGIL_HANDOVER_KEEP_SOCKET_FILE"

/* Replaces this process's image with exe, argv, handing over listen_fd
 * (and whether its file is to be left in place at exit). Returns only on
 * failure (-1 with err), having undone what it changed: the old image
 * goes on as before. */
int handover_exec(const char *exe, char *const argv[], int listen_fd, bool keep_file,
                  VigilError *err);

/* The socket an earlier image handed over, or -1 when none; *keep_file
 * says whether its file is to be left in place. The variables are removed
 * either way. */
int handover_listen_fd(bool *keep_file);

#endif
