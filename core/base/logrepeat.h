/*
 * A log line that a peer could make the engine write without end (a
 * refused connection, from a flood of them), said at most once per window
 * with the rest counted: the first occurrence of a window is logged in full
 * by the caller, later ones are only counted, and when the window ends one
 * line gives the count ("refused 1234 more connections in the last 10 s:
 * rpc.max_connections (64) reached"). A window with a count opens the next
 * one; a quiet window closes, and the next occurrence is logged in full
 * again. So a flood costs a log line per window, never one per occurrence,
 * and nothing goes uncounted.
 */
#ifndef VIGIL_LOGREPEAT_H
#define VIGIL_LOGREPEAT_H

#include <stdbool.h>
#include <stdint.h>
#include <uv.h>

/* The window of the refusals' log lines (rpc/server.c, api.c). */
#define LOGREPEAT_WINDOW_MS 10000

typedef struct LogRepeat LogRepeat;

/* A counter for lines of module, worded "<verb> N more <noun> in the last
 * W s: <reason>", with a window of window_ms (> 0). Its timer never keeps
 * the loop alive. */
LogRepeat *logrepeat_new(uv_loop_t *loop, const char *module, const char *verb,
                         const char *noun, uint64_t window_ms);

/* One more occurrence, for reason (copied; the count's line gives the
 * latest). True when it is the first of its window: the caller logs it in
 * full. False: counted. */
bool logrepeat_hit(LogRepeat *r, const char *reason);

/* Occurrences counted and not yet told (tests). */
uint64_t logrepeat_pending(const LogRepeat *r);

/* Says what is counted and not yet told, then frees r (after its timer's
 * close: the loop must run once more). NULL is ignored. */
void logrepeat_free(LogRepeat *r);

#endif
