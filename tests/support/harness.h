/*
 * A monitor harness for tests with real children: starts one monitor on a
 * private loop, collects every notification and event, runs the loop until
 * the monitor has finished (an event, never a sleep), and checks the
 * invariant every monitor keeps: exactly one ending notification, last.
 */
#ifndef VIGIL_HARNESS_H
#define VIGIL_HARNESS_H

#include "check.h"
#include "monitor/monitor.h"

#define MAX_NOTES 4096

typedef struct {
  uv_loop_t loop;
  VigilSettings settings;
  Monitor *m;
  Notification *notes[MAX_NOTES];
  size_t nnotes;
  size_t nevents;
  bool finished;
  bool stop_on_first_output; /* call monitor_stop at the first output notification */
  uint64_t first_output_at;  /* uv_now of the first output notification */
  bool output_while_running; /* an output notification arrived before the exit was seen */
} Harness;

extern const MonitorHooks harness_hooks;

/* A fresh loop and default settings (short grace and drain). */
void harness_init(Harness *h);
/* Starts the monitor; records a failure and returns false if it fails. */
bool harness_start(Harness *h, MonitorSpec *spec);
/* Runs the loop until the monitor finishes, at most ms. */
bool harness_wait(Harness *h, uint64_t ms);
/* Frees the monitor, closes the loop, checks the child is gone. */
void harness_close(Harness *h);
/* The ending notification, checking it is the only one and the last. */
Notification *harness_ending(Harness *h);
/* Every delivered output line, in order, each followed by '\n' (free it). */
char *harness_output_text(Harness *h);
/* How many notifications of a type arrived. */
size_t harness_count(Harness *h, NotificationType type);

/* argv for /bin/sh -c script. */
#define SH(script) ((char *const[]){"/bin/sh", "-c", (char *)(script), NULL})

#endif
