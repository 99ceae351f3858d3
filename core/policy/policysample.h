/*
 * The sample notifications of `vigil policy try --sample NAME` and of a
 * policy's examples ({sample = "crash"}): realistic notifications, as the
 * engine makes them, for a policy writer to try a policy on without
 * starting a monitor that crashes (docs/policies.md section 15).
 *
 *   crash     a Python traceback on stderr: one output batch holding one
 *             crash incident (what the engine makes of the Flask app that
 *             tests/functional/test_policy_try.py runs, to the byte)
 *   loop      a crash loop's repeat summary: an output batch whose one
 *             incident entry says the crash came back 5 times in 4.2 s
 *   exit      a test run that exited with code 1, with its last lines
 *   lines     plain lines of a dev server, one matched, no incidents
 *   overload  the ending of a monitor stopped for overload, with the lines
 *             withheld by the rate limit counted
 */
#ifndef VIGIL_POLICYSAMPLE_H
#define VIGIL_POLICYSAMPLE_H

#include "pipeline/notification.h"

/* The samples' names, in the order above, NULL-terminated. */
extern const char *const policysample_names[];

/* A new notification of sample `name` (free with notification_free), or
 * NULL when there is no such sample. */
Notification *policysample_make(const char *name);

#endif
