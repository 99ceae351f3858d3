/*
 * The prefix rule of a policy's body, in time linear in the body and the
 * notification (envelope_check_policy_body is its caller; envelope.h states
 * the rule). A "probe" is the first ENVELOPE_PROBE_BYTES bytes of a line's
 * escaped text (all of it when shorter), for texts of ENVELOPE_PROBE_MIN
 * bytes or more. The rule: a probe may only occur on a body line that
 * begins with one of the notification's line prefixes ("[stdout seq=N] "),
 * at or after the end of that prefix, unless the whole body line is one the
 * built-in envelope writes for the notification.
 *
 * How it stays linear: the notification's line prefixes become one sorted
 * array and its probes one hash set (with a bit filter on their first 8
 * bytes), both built once per check; each body line is then read once: its
 * prefix parsed once and looked up, and only the positions where a probe
 * would break the rule (the whole line without a valid prefix, the prefix
 * itself otherwise) are tried, each with at most one table look-up per
 * probe length (8..24). The built-in body, needed only to exempt a line that
 * contains a probe, is rendered on first need, and a line is compared with
 * the one built-in line it could equal. Hash keys are random per process, so
 * a process cannot choose lines that pile into one bucket.
 */
#ifndef VIGIL_PREFIXRULE_H
#define VIGIL_PREFIXRULE_H

#include <stddef.h>
#include <stdint.h>

#include "pipeline/notification.h"

typedef struct {
  uint64_t work; /* bytes and positions looked at, look-ups and compares */
  uint64_t seq;  /* on a refusal: the line whose text was misplaced */
} PrefixRuleResult;

/* Checks body (len bytes, already sanitized, so it holds no raw control
 * character but its newlines) against n's lines. Returns 0 when the rule
 * holds, -1 when it does not, with r->seq naming a line of n whose text is
 * misplaced. r->work is set either way. */
int prefixrule_check(const Notification *n, const char *body, size_t len, PrefixRuleResult *r);

#endif
