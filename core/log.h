/*
 * The engine's log: one line per event on stderr (`vigild` never logs to
 * stdout, which in --stdio mode is the wire), with a timestamp, a level and
 * the module. Lines are cut at LOG_LINE_MAX bytes and control characters in
 * them escaped, so a hostile peer or child cannot forge log lines. Writing
 * is a single write(2) per line; stderr is not buffered in the engine.
 */
#ifndef VIGIL_LOG_H
#define VIGIL_LOG_H

#include <stdint.h>

#define LOG_LINE_MAX 2048

typedef enum { kLogDebug = 0, kLogInfo, kLogWarn, kLogError } LogLevel;

/* Lines below this level are not written (default kLogInfo; VIGIL_LOG=debug
 * in the environment lowers it). */
void log_set_level(LogLevel level);
LogLevel log_level(void);

void log_msg(LogLevel level, const char *module, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Lines written and lines cut short since start. */
uint64_t log_lines_written(void);
uint64_t log_lines_truncated(void);

#define LOG_DEBUG(mod, ...) log_msg(kLogDebug, mod, __VA_ARGS__)
#define LOG_INFO(mod, ...) log_msg(kLogInfo, mod, __VA_ARGS__)
#define LOG_WARN(mod, ...) log_msg(kLogWarn, mod, __VA_ARGS__)
#define LOG_ERROR(mod, ...) log_msg(kLogError, mod, __VA_ARGS__)

#endif
