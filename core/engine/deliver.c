/*
 * Delivery (see deliver.h): route, format, check, frame, fallback,
 * policy_error (deliver_prepare, which `vigil policy try` runs too, so that
 * what it shows is what an agent reads), queue. Everything a policy writes passes through
 * deliver_policy_text before an agent can read it, and the nonce that frames
 * it is drawn there, after the policy ran, so no body can contain it.
 */
#include "engine/deliver.h"

#include <string.h>

#include "render/envelope.h"
#include "base/log.h"
#include "policy/policy.h"

/* A policy_error notification's reason is cut here; the log line has it all. */
#define DELIVER_REASON_MAX 2048

/* The policy_error notification that says a policy call failed, rendered by
 * the built-in envelope (never by a policy). */
static Notification *
deliver_policy_error(const Notification *about, const char *policy, const VigilError *err)
{
  Notification *pe = notification_new(kNotifPolicyError, about->monitor_id, about->label,
                                      kModeIdle);
  StrBuf reason = STRBUF_INIT;
  /* err->msg starts with its code's name ("internal: "): the reason says it in words. */
  const char *msg = err->msg;
  const char *colon = strstr(msg, ": ");
  if (colon && (size_t)(colon - msg) < 20)
    msg = colon + 2;
  strbuf_printf(&reason, "policy %s failed; the built-in envelope was used: %s", policy, msg);
  /* A traceback can be long: the notification carries its first part. */
  if (reason.len > DELIVER_REASON_MAX)
    reason.len = DELIVER_REASON_MAX, reason.data[DELIVER_REASON_MAX] = '\0';
  pe->reason = strbuf_take(&reason);
  StrBuf text = STRBUF_INIT;
  envelope_render(pe, &text);
  pe->text = strbuf_take_fit(&text);
  return pe;
}

DeliverTextResult
deliver_policy_text(Policy *p, const Notification *n, StrBuf *text, VigilError *err)
{
  if (!policy_has_format(p))
    return kDeliverNoFormat;
  StrBuf body = STRBUF_INIT, clean = STRBUF_INIT;
  DeliverTextResult rc = kDeliverFailed;
  if (policy_format(p, n, &body, err) == 0 &&
      envelope_check_policy_body(n, strbuf_cstr(&body), body.len, &clean, err) == 0) {
    /* The nonce is drawn now, after the policy ran: the body cannot hold it. */
    char nonce[ENVELOPE_NONCE_HEX + 1];
    envelope_nonce(nonce);
    envelope_frame(strbuf_cstr(&clean), clean.len, nonce, n->style, text);
    envelope_silence_hint(n, text);
    rc = kDeliverText;
  }
  strbuf_free(&body);
  strbuf_free(&clean);
  return rc;
}

DeliverOutcome
deliver_prepare(const DeliverTarget *t, Notification *n, Notification **pe, VigilError *err)
{
  *pe = NULL;
  Policy *p = policyset_get(t->policies, t->policy, err);
  bool failed = p == NULL;
  if (p && policy_has_route(p)) {
    DeliveryMode mode = n->mode;
    bool drop = false;
    if (policy_route(p, n, &mode, &drop, err) < 0) {
      failed = true;   /* n keeps its mode */
    } else if (drop && !notification_is_ending(n->type)) {
      /* An ending cannot be dropped. */
      return kDeliverDropped;
    } else {
      /* live_safe only where the config enables live mode. */
      n->mode = mode == kModeLiveSafe && !t->live_mode_enabled ? kModeIdle : mode;
    }
  }
  StrBuf text = STRBUF_INIT;
  if (!failed && p && deliver_policy_text(p, n, &text, err) == kDeliverFailed)
    failed = true;
  if (text.len == 0) {
    strbuf_reset(&text);
    envelope_render(n, &text);
  }
  n->text = strbuf_take_fit(&text); /* kept with n while its session keeps it */
  if (!failed)
    return kDeliverWorded;
  *pe = deliver_policy_error(n, t->policy, err);
  (*pe)->mode = n->mode;
  return kDeliverPolicyFailed;
}

void
deliver_notification(const DeliverTarget *t, Monitor *m, Session *s, Notification *n)
{
  VigilError err = VIGIL_ERROR_INIT;
  Notification *pe = NULL;
  DeliverOutcome out = deliver_prepare(t, n, &pe, &err);
  if (out == kDeliverDropped) {
    /* Counted, never silent. */
    monitor_count_policy_drop(m, n);
    notification_free(n);
    return;
  }
  if (out == kDeliverPolicyFailed)
    LOG_WARN("engine", "monitor %s: %s", monitor_id(m), err.msg);
  session_push(s, n);
  if (pe)
    session_push(s, pe);
}
