/*
 * Delivery: the single place a monitor's notification becomes the text an
 * agent reads and is handed to its session. In order: the policy's route
 * (which may change the mode or drop an output notification, counted), its
 * format (the body), the prefix check and escaping of that body
 * (envelope_check_policy_body), the frame with a nonce drawn after the
 * policy ran, the built-in envelope as the fallback, a policy_error
 * notification when a policy call failed, and the session's queue.
 *
 * The incident stage (incidents, not lines) is to sit right before this one.
 */
#ifndef VIGIL_DELIVER_H
#define VIGIL_DELIVER_H

#include <stdbool.h>

#include "base/error.h"
#include "monitor/monitor.h"
#include "pipeline/notification.h"
#include "session/session.h"
#include "base/strbuf.h"

typedef struct Policy Policy;
typedef struct PolicySet PolicySet;

/* Where and how one monitor's notifications are delivered. */
typedef struct {
  PolicySet *policies;     /* the set in force (replaced whole by a reload) */
  const char *policy;      /* the monitor's policy, looked up per notification */
  bool live_mode_enabled;  /* monitor.live_mode_enabled: else live_safe becomes idle */
} DeliverTarget;

/* What deliver_prepare made of a notification. */
typedef enum {
  kDeliverWorded = 0,   /* n->text is the policy's (or the built-in) envelope */
  kDeliverPolicyFailed, /* n->text is the built-in envelope; *pe the policy_error */
  kDeliverDropped,      /* the policy's route dropped n (not an ending): nothing set */
} DeliverOutcome;

/* Everything delivery does to n before it is queued, with nothing counted
 * or queued: the policy's route (n->mode set; live_safe becomes idle
 * unless t->live_mode_enabled), its format, checked and framed, and the
 * built-in envelope as the fallback. On kDeliverPolicyFailed, *pe is the
 * policy_error notification to queue after n (owned by the caller) and err
 * has the whole message; else *pe is NULL. The engine (deliver_notification)
 * and `vigil policy try` (policytry.h) both run this, so the two cannot
 * word a notification differently. */
DeliverOutcome deliver_prepare(const DeliverTarget *t, Notification *n, Notification **pe,
                               VigilError *err);

/* Routes, words and queues n (owned) in s. A failing policy call costs that
 * notification its policy (the built-in envelope and the mode it had are
 * used) and adds a policy_error notification after it. */
void deliver_notification(const DeliverTarget *t, Monitor *m, Session *s, Notification *n);

/* What the engine does with a policy's format: the body, checked and escaped
 * (envelope_check_policy_body), framed with a nonce drawn after the policy
 * ran. Returns kDeliverText with the envelope appended to text,
 * kDeliverNoFormat when the policy has no format (nothing appended),
 * kDeliverFailed with err when the call or the check failed. */
typedef enum {
  kDeliverText = 0,
  kDeliverNoFormat,
  kDeliverFailed,
} DeliverTextResult;

DeliverTextResult deliver_policy_text(Policy *p, const Notification *n, StrBuf *text,
                                      VigilError *err);

#endif
