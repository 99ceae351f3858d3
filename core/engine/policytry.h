/*
 * `vigil policy try` and `vigil policy test` (docs/policies.md section 15),
 * run as `vigild --policy-try` and `vigild --policy-test`: the CLI links
 * no Lua (CMakeLists.txt), so it runs this mode of vigild, which has the
 * engine's policy code, instead of a second policy runner of its own.
 *
 * Offline and alone: no socket, no state directory, no monitor. A policy
 * file is loaded as the engine loads one (policyset_get_file: the same
 * sandbox, limits and require), and a notification (a sample,
 * policysample.h, or a wire-shaped map, notification_map.h) goes through
 * deliver_prepare, the engine's own route, format, prefix check, frame and
 * fallback.
 *
 *   vigild --policy-try FILE [--sample NAME | --notification-stdin]
 *     prints on stdout the text an agent reads (and after it the
 *     policy_error's text when the policy failed), and on stderr what
 *     route chose and why the policy failed, with file and line. Exit 0
 *     when the policy worded it (or dropped it), 1 when the policy failed
 *     to load or to word it, 2 for bad usage or a bad notification.
 *     --notification-stdin reads one msgpack map from stdin (what the CLI
 *     makes of --notification JSON).
 *   vigild --policy-test FILE
 *     runs the examples FILE carries and prints one line per example (ok /
 *     FAIL and why) and a count. Exit 0 only when there is at least one
 *     example and every one passed.
 */
#ifndef VIGIL_POLICYTRY_H
#define VIGIL_POLICYTRY_H

#include <stdbool.h>

/* Whether argv asks for one of these modes (argv[1] is --policy-try or
 * --policy-test). */
bool policytry_wanted(int argc, char **argv);

/* Runs the mode argv asks for; returns the exit status. */
int policytry_main(int argc, char **argv);

#endif
