/*
 * The methods of docs/protocol.md section 5, in one table, and the glue between
 * the transports and the engine: api.c is the only file that sees both a
 * channel and a monitor. Each method reads its arguments (args.c), acts on
 * the engine (engine.c) and packs its result (wire.c); slow ones (monitor_wait,
 * a foreground process_run, monitor_stop) answer later, without blocking the
 * connection.
 */
#ifndef VIGIL_API_H
#define VIGIL_API_H

#include "engine.h"
#include "error.h"

/* Starts accepting connections on the socket at path. */
int api_listen(Engine *e, const char *path, VigilError *err);

/* Serves the one --stdio connection. */
int api_open_stdio(Engine *e, VigilError *err);

/* The names of every method (NULL-terminated), for api_info and docs. */
extern const char *const api_method_names[];

#endif
