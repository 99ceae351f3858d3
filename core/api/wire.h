/*
 * The msgpack form of what the engine tells its peers: notifications, monitor
 * entries and status, lines, events, counters (docs/protocol.md sections 5 and
 * 6). Every documented key is always present, nil when it has no value yet,
 * so a gateway can index without checking. Times are RFC 3339 strings.
 */
#ifndef VIGIL_WIRE_H
#define VIGIL_WIRE_H

#include <msgpack.h>
#include <stdbool.h>
#include <stdint.h>

#include "pipeline/eventlog.h"
#include "monitor/monitor.h"
#include "pipeline/notification.h"
#include "pipeline/ring.h"
#include "proc/ports.h"

/* Small helpers: a NUL-terminated string (nil when NULL), a key. Strings
 * are packed by rpc_pack_str, so they are valid UTF-8 on the wire whatever
 * bytes they hold. */
void wire_str(msgpack_packer *pk, const char *s);
void wire_strn(msgpack_packer *pk, const char *s, size_t len);
void wire_key(msgpack_packer *pk, const char *key);
void wire_time(msgpack_packer *pk, int64_t epoch_ms); /* nil when 0 */
/* A 64-bit fingerprint as the 16 hex digits the envelope and events show. */
void wire_fingerprint(msgpack_packer *pk, uint64_t fp);
void wire_signal(msgpack_packer *pk, int sig);        /* name, nil when 0 */

/* The notification map of `vigil.notification`. */
void wire_notification(msgpack_packer *pk, const Notification *n);

/* {seq, stream, text, pattern, truncated} */
void wire_ring_line(msgpack_packer *pk, const RingLine *line);

/* {lines, matched, unmatched, dropped, suppressed, notifications,
 *  stdout_bytes, stderr_bytes} (plus vigil's extra counters). */
void wire_counters(msgpack_packer *pk, const MonitorCounters *c);

/* An event map {id, type, at, pattern, line, exit_code, signal, reason,
 * exceeded}. */
void wire_event(msgpack_packer *pk, const Event *ev);

/* monitor_output's `incident`: {id, kind, fingerprint, pattern,
 * pattern_name, first_seq, last_seq, lines (how many were kept),
 * truncated_lines, missing (kept lines the ring has evicted since)}. */
void wire_incident_record(msgpack_packer *pk, const IncidentRecord *rec, uint64_t missing);

/* The "exit_code" and "signal" keys of an ended (or running) monitor: the
 * code when it exited by itself, the signal's name when one ended it, nil
 * otherwise. Packs two key/value pairs into an open map. */
void wire_exit_status(msgpack_packer *pk, const Monitor *m);

/* {cpu_ms, memory_peak_bytes, io_read_bytes, io_write_bytes} */
void wire_resource_usage(msgpack_packer *pk, const ProcExit *x);

/* A monitor_list entry (with why it ended: reason, exceeded); with status,
 * also duration_ms, resource_usage and start: the monitor's start map
 * (startmap.h), start_len msgpack bytes sent as they are, nil when start is
 * NULL. Its `ports` come from scan (ports.h), which the caller makes once
 * for every entry of its answer and frees. */
void wire_monitor(msgpack_packer *pk, const Monitor *m, bool status, const char *start,
                  size_t start_len, PortScan *scan);

#endif
