/*
 * The engine's log: one line per event on stderr (`vigild` never logs to
 * stdout, which in --stdio mode is the wire), with a timestamp, a level and
 * the module. Lines are cut at LOG_LINE_MAX bytes and control characters in
 * them escaped, so a hostile peer or child cannot forge log lines.
 *
 * Logging never blocks the caller (the event loop): log_msg only copies the
 * line into a bounded buffer (log.buffer_bytes), and a writer thread of its
 * own does the blocking write(2) to fd 2, one write per line, leaving the
 * descriptor's flags alone (stderr may be shared with the parent). When
 * stderr is not read fast enough and the buffer is full, lines are dropped
 * and counted, and once there is room again one line says so: "N log lines
 * dropped". Whatever is buffered is written at a clean exit (log_flush, run
 * by atexit, bounded in time so a stderr nobody reads cannot hold the exit
 * up). Should the thread not start, lines are written directly, as before.
 */
#ifndef VIGIL_LOG_H
#define VIGIL_LOG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define LOG_LINE_MAX 2048

/* The buffer's bound until log_set_buffer_max says otherwise (the default of
 * log.buffer_bytes), and how long the flush at exit waits for the writer. */
#define LOG_BUFFER_DEFAULT (1u << 20)
#define LOG_FLUSH_AT_EXIT_MS 2000

typedef enum { kLogDebug = 0, kLogInfo, kLogWarn, kLogError } LogLevel;

/* Lines below this level are not written (default kLogInfo; VIGIL_LOG=debug
 * in the environment lowers it). */
void log_set_level(LogLevel level);
LogLevel log_level(void);

/* Formats and queues one line; never waits for stderr. */
void log_msg(LogLevel level, const char *module, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Sets the buffer's bound in bytes, each line's bookkeeping included
 * (log.buffer_bytes; the config allows 16 KiB..64 MiB, which always holds
 * the longest escaped line). Lines already buffered stay; a lower bound
 * only refuses new lines sooner. */
void log_set_buffer_max(size_t bytes);

/* Runs fn(len) before each line of len bytes is written to fd 2, in the
 * thread that writes it (the writer, or the caller when there is none):
 * the log file's rotation (logfile.h), which must come before the line
 * that would take the file past its bound, not after a batch of them. Set
 * once, before the first line. */
void log_set_before_line(void (*fn)(size_t len));

/* Waits at most max_ms for every buffered line to be written. Whether they
 * all were. */
bool log_flush(uint64_t max_ms);

/* Lines written, lines cut short, and lines dropped because the buffer was
 * full, since start. */
uint64_t log_lines_written(void);
uint64_t log_lines_truncated(void);
uint64_t log_lines_dropped(void);

#define LOG_DEBUG(mod, ...) log_msg(kLogDebug, mod, __VA_ARGS__)
#define LOG_INFO(mod, ...) log_msg(kLogInfo, mod, __VA_ARGS__)
#define LOG_WARN(mod, ...) log_msg(kLogWarn, mod, __VA_ARGS__)
#define LOG_ERROR(mod, ...) log_msg(kLogError, mod, __VA_ARGS__)

#endif
