/*
 * A monitor's start map: the monitor_start arguments that, sent again to
 * monitor_start, start the same thing (docs/protocol.md, monitor_status's
 * `start`). It is packed once, when the monitor starts, from the request as
 * read and what the engine resolved for it (the absolute cwd, the policy,
 * the envelope, the runtime cap, line buffering, the mode), and kept as
 * msgpack bytes: monitor_status sends it as it is, and a kept monitor's
 * spec (keepspec.h) carries it, so a monitor an engine takes over after a
 * restart still reports it.
 *
 * What a client needs to start the monitor again and nothing the engine
 * made up on its own: the label is nil when the monitor id stood in for it,
 * patterns nil when the built-in crash patterns were used (a new start gets
 * them again, as they are then), env holds the request's variables only,
 * never the inherited environment. Every key is always there (nil where it
 * does not apply), which monitor_start reads as absent.
 *
 * Its argv and env values can hold secrets (an API key, a token): it is
 * sent only to a caller that asks for it, its env values only to one that
 * asks for them too (startmap_redact), and never through a tool a model
 * calls.
 */
#ifndef VIGIL_STARTMAP_H
#define VIGIL_STARTMAP_H

#include <stddef.h>
#include <stdint.h>

#include "monitor/monitor.h"
#include "engine/monitor_fields.h"

/* The keys of the map, in the order they are packed. */
#define STARTMAP_KEYS 32

/* Packs the start map of a start: req as read, spec as engine_spec made it
 * (with the opened cwd), the policy it runs under and the runtime cap the
 * settings give when req has none. Returns the bytes (free them), their
 * length in *len. */
char *startmap_pack(const StartRequest *req, const MonitorSpec *spec, const char *policy,
                    int64_t max_runtime_ms, size_t *len);

/* The start map in start (start_len bytes, as startmap_pack made it or a
 * kept spec brought back) with env's values nil and its names kept: what
 * monitor_status tells a caller that asked for the start but not for its
 * env values (docs/protocol.md, monitor_status). A map so redacted is
 * refused by monitor_start (env values must be strings), never started
 * with its variables missing. Returns the bytes (free them), their length
 * in *len, or NULL when start is not a msgpack map. */
char *startmap_redact(const char *start, size_t start_len, size_t *len);

#endif
