/*
 * What engine.c's start (engine_start) takes from the checks in
 * engine_start.c; engine.h has the public half (engine_check_start,
 * engine_check_config).
 */
#ifndef VIGIL_ENGINE_START_H
#define VIGIL_ENGINE_START_H

#include "engine/engine.h"

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

/* Sets err to the refusal sub of the config's i-th monitor (from 0): its
 * code, then "FILE: monitors[N] (label "L"): " and sub's own message.
 * Returns -1. */
int engine_config_entry_fail(const VigilConfig *cfg, size_t i, const VigilError *sub,
                             VigilError *err);

/* Whether the config's entry starts at boot: it has no group, or
 * autostart. */
bool engine_config_entry_boots(const ConfigMonitor *cm);

#endif
