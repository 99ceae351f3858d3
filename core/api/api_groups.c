/*
 * The methods of the config's named groups (docs/protocol.md section 5,
 * group_up): group_up, group_down and group_list, over engine_group.h. A
 * group's monitors live in the sessions their entries name, whatever the
 * caller's session, so these calls act engine-wide, like the config does.
 */
#include "api/api_call.h"

#include <stdlib.h>
#include <string.h>

#include "engine/engine_group.h"
#include "monitor/monitor.h"
#include "api/wire.h"

/* The longest `group` read before its grammar is checked: a longer one is
 * refused by that check all the same, with its value shown cut. */
#define API_GROUP_ARG_MAX 4096

/* Reads the optional `group` into *group (NULL: every group) and checks
 * that it is a known group's name. Returns 0 or -1 with the call's error. */
static int
api_group_arg(Call *call, char **group)
{
  *group = NULL;
  if (args_str(&call->args, "group", API_GROUP_ARG_MAX, group, &call->err) < 0)
    return -1;
  if (*group == NULL)
    return 0;
  char quoted[GATE_QUOTE_BUF];
  gate_quote(quoted, *group);
  if (!config_group_name_ok(*group))
    error_set(&call->err, kErrInvalidParams, "group must be 1..%d of A-Z a-z 0-9 . _ -, got %s",
              CONFIG_GROUP_MAX, quoted);
  else if (!engine_group_known(call->e, *group)) {
    StrBuf names = STRBUF_INIT;
    engine_group_names(call->e, &names);
    error_set(&call->err, kErrInvalidParams, "group: no group %s in %s (its groups: %s)", quoted,
              call->e->config_path ? call->e->config_path : "the configuration",
              strbuf_cstr(&names));
    strbuf_free(&names);
  }
  if (!call->err.set)
    return 0;
  free(*group);
  *group = NULL;
  return -1;
}

/* [{monitor_id, label, session}] of the hits. */
static void
api_group_pack_hits(msgpack_packer *pk, const char *key, const EngineGroupHits *h)
{
  wire_key(pk, key);
  msgpack_pack_array(pk, h->n);
  for (size_t i = 0; i < h->n; i++) {
    MonRecord *r = h->recs[i];
    msgpack_pack_map(pk, 3);
    wire_key(pk, "monitor_id");
    wire_str(pk, monitor_id(r->monitor));
    wire_key(pk, "label");
    wire_str(pk, monitor_label(r->monitor));
    wire_key(pk, "session");
    wire_str(pk, r->session ? session_name(r->session) : NULL);
  }
}

/* group_up: docs/protocol.md section 5, "group_up". */
void
api_group_up(Call *call)
{
  char *group;
  if (api_group_arg(call, &group) != 0)
    return;
  EngineGroupHits started, running;
  if (engine_group_up(call->e, group, &started, &running, &call->err) == 0) {
    msgpack_pack_map(&call->pk, 2);
    api_group_pack_hits(&call->pk, "started", &started);
    api_group_pack_hits(&call->pk, "running", &running);
    engine_group_hits_free(&started);
    engine_group_hits_free(&running);
  }
  free(group);
}

/* group_down: docs/protocol.md section 5, "group_down". */
void
api_group_down(Call *call)
{
  char *group;
  if (api_group_arg(call, &group) != 0)
    return;
  EngineGroupHits stopped;
  engine_group_down(call->e, group, &stopped);
  msgpack_pack_map(&call->pk, 1);
  api_group_pack_hits(&call->pk, "stopped", &stopped);
  engine_group_hits_free(&stopped);
  free(group);
}

/* Whether the config's entry k is in group g. */
static bool
api_group_in(const VigilConfig *cfg, size_t k, const char *g)
{
  return cfg->monitors[k].group != NULL && strcmp(cfg->monitors[k].group, g) == 0;
}

/* Whether entry i is the first of its group (false without a group). */
static bool
api_group_first(const VigilConfig *cfg, size_t i)
{
  const char *g = cfg->monitors[i].group;
  for (size_t k = 0; g && k < i; k++)
    if (api_group_in(cfg, k, g))
      return false;
  return g != NULL;
}

/* group_list: docs/protocol.md section 5, "group_list". The groups in the
 * order the config first names them, each entry's monitor as
 * engine_group_record finds it. */
void
api_group_list(Call *call)
{
  const VigilConfig *cfg = &call->e->config;
  msgpack_packer *pk = &call->pk;
  size_t ngroups = 0;
  for (size_t i = 0; i < cfg->nmonitors; i++)
    ngroups += api_group_first(cfg, i);
  msgpack_pack_map(pk, 1);
  wire_key(pk, "groups");
  msgpack_pack_array(pk, ngroups);
  for (size_t i = 0; i < cfg->nmonitors; i++) {
    if (!api_group_first(cfg, i))
      continue;
    const char *g = cfg->monitors[i].group;
    size_t n = 0;
    for (size_t k = i; k < cfg->nmonitors; k++)
      n += api_group_in(cfg, k, g);
    msgpack_pack_map(pk, 2);
    wire_key(pk, "group");
    wire_str(pk, g);
    wire_key(pk, "monitors");
    msgpack_pack_array(pk, n);
    for (size_t k = i; k < cfg->nmonitors; k++) {
      if (!api_group_in(cfg, k, g))
        continue;
      const ConfigMonitor *cm = &cfg->monitors[k];
      MonRecord *r = engine_group_record(call->e, cm, false);
      msgpack_pack_map(pk, 4);
      wire_key(pk, "label");
      wire_str(pk, cm->req.label);
      wire_key(pk, "session");
      wire_str(pk, cm->session);
      wire_key(pk, "monitor_id");
      wire_str(pk, r ? monitor_id(r->monitor) : NULL);
      wire_key(pk, "state");
      wire_str(pk, r ? monitor_state_name(monitor_state(r->monitor)) : NULL);
    }
  }
}
