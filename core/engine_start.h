/*
 * What engine.c's start (engine_start) takes from the checks in
 * engine_start.c; engine.h has the public half (engine_check_start,
 * engine_check_config).
 */
#ifndef VIGIL_ENGINE_START_H
#define VIGIL_ENGINE_START_H

#include "engine.h"

/* The caps on running monitors: `in_session` run in the session named
 * `session` and `total` in the engine (limit_exceeded naming the setting). */
int engine_check_counts(const VigilConfig *cfg, const char *session, size_t in_session,
                        size_t total, VigilError *err);

/* The settings a start runs under: the config's, with process_run's own
 * runtime cap in place of max_runtime_ms when it asks for more. */
VigilSettings engine_settings(const VigilConfig *cfg, const StartRequest *req);

/* What monitor_start is given for a checked start: the request, with the
 * opened cwd, the config's search path and inherit list (borrowed). */
MonitorSpec engine_spec(const VigilConfig *cfg, const StartRequest *req, const StartPlan *plan);

#endif
