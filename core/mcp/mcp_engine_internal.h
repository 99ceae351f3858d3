/*
 * What the two halves of `vigil mcp`'s engine link share (mcp_engine.h):
 * mcp_engine.c connects, starts an engine, keeps the notifications and
 * says what happens to the link; mcp_link.c is the thread that makes the
 * attempts, carries the calls and reads the connection. Nothing else
 * includes this.
 */
#ifndef VIGIL_MCP_ENGINE_INTERNAL_H
#define VIGIL_MCP_ENGINE_INTERNAL_H

#include "mcp/mcp_engine.h"

/* Starts the link's thread (the link up, after mcp_engine_open's first
 * connect). Returns 0, or -1 with m->cli.err set. */
int mcp_link__start(McpEngine *m);

/* Stops the link's thread and waits for it; a call still waiting fails.
 * Nothing when it does not run. */
void mcp_link__stop(McpEngine *m);

/* One attempt (the link's thread, without the lock): connect and open the
 * session, resuming after last; when nothing listens and spawning is
 * allowed, start an engine and connect to it. Returns 0, or -1 with
 * m->cli.err set. The caller says the link is up. */
int mcp_engine__attempt(McpEngine *m, uint64_t last);

/* The connection ended (the lock held): closes it, says so on stderr with
 * why, and starts retrying (or goes down when retrying is off). */
void mcp_engine__lost(McpEngine *m, const char *why);

/* Retrying passed its bound (the lock held): the link is down until the
 * next call; said on stderr. */
void mcp_engine__give_up(McpEngine *m);

/* The link came back, resumed after last: counted and said on stderr. */
void mcp_engine__back(McpEngine *m, uint64_t last);

/* Whether a kept notification is newer than since_seq (the lock held). */
bool mcp_engine__has_after(const McpEngine *m, uint64_t since_seq);

/* Keeps notification j (owned) of seq, unless received or delivered
 * already (then freed), and tells on_notification. */
void mcp_engine__received(McpEngine *m, uint64_t seq, json_t *j);

/* Through NATS (mcp_natsfetch.c): starts the thread that reads the
 * engine's notifications above the newest received when woken; wakes it
 * (any thread); stops it (after the link stopped). */
int mcp_natsfetch__start(McpEngine *m);
void mcp_natsfetch__wake(McpEngine *m);
void mcp_natsfetch__stop(McpEngine *m);

#endif
