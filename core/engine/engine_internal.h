/*
 * What engine.c and engine_start.c share and nothing else includes: the
 * hooks every monitor of the engine reports through (engine.c's), which a
 * start (engine_start.c) and a takeover (engine.c) both give.
 */
#ifndef VIGIL_ENGINE_INTERNAL_H
#define VIGIL_ENGINE_INTERNAL_H

#include "monitor/monitor.h"

extern const MonitorHooks engine__monitor_hooks;

#endif
