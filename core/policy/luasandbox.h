/*
 * A sandboxed Lua 5.4 state, the only way the engine runs Lua (the config
 * and the policies). What it allows: the base library without dofile,
 * loadfile and print (load only of text chunks), string, table, math and
 * utf8. No io, os, package, debug, no require, no bytecode. What it bounds:
 * memory (an allocator that refuses past a cap) and instructions (a count
 * hook that raises an error neither pcall nor an xpcall message handler can
 * swallow or outrun, per call), where the work done inside every C function
 * a sandbox can reach (the libraries' and the host's) is charged as
 * instructions too, before or as it is done, and Lua's pattern functions
 * are bounded copies (luapattern.h) that also stop a single call past
 * LUAPATTERN_MAX_STEPS; plus a wall-clock limit per run or call of 1 s +
 * 100 ns per budgeted instruction, read by the hook every 100 instructions,
 * by every charge (so at every call of a C function, and between the pieces
 * of a chunk being compiled) and by the allocator. A chunk or call that
 * errors, loops or runs out of memory fails with a message carrying a
 * traceback; the state stays usable. luasandbox_libs.c has the audit of
 * every C function a sandbox can reach and what bounds it.
 */
#ifndef VIGIL_LUASANDBOX_H
#define VIGIL_LUASANDBOX_H

#include <lua.h>
#include <stddef.h>
#include <stdint.h>

#include "base/error.h"

typedef struct {
  size_t memory_max;         /* bytes the state may allocate in all */
  uint64_t instruction_max;  /* VM instructions per chunk or call */
  uint64_t time_max_ms;      /* wall clock per chunk or call; 0: 1 s + 100 ns per
                                budgeted instruction (the backstop of luasandbox.c) */
} LuaSandboxLimits;

#define LUASANDBOX_DEFAULT_MEMORY (16u << 20)
#define LUASANDBOX_DEFAULT_INSTRUCTIONS 10000000u

/* Bytes a C function looks at one by one (case mapping, escaping, parsing
 * a numeral or a chunk, decoding UTF-8) per instruction charged: about what
 * one VM instruction costs. Bytes copied in bulk (memcpy) are charged by the
 * allocator instead, at a rate of its own (luasandbox.c). */
#define LUASANDBOX_SCAN_BYTES 4

/* Bytes of a chunk handed to Lua's parser at a time (luasandbox_load, and
 * base load's reader function); each piece is charged before the parser
 * reads it, so the clock is read at least this often while a chunk
 * compiles. The parser's cost per byte has no fixed bound (a name is looked
 * up through every local of every enclosing function: some microseconds a
 * byte at worst), so a piece is small. */
#define LUASANDBOX_LOAD_PIECE 1024

/* What separates Lua's message from the traceback in an error message; a
 * caller that wants only the message cuts there. */
#define LUASANDBOX_TRACEBACK "\nstack traceback:"

typedef struct LuaSandbox LuaSandbox;

/* A new state with the libraries above. Zero fields of limits (or limits
 * NULL) take the defaults. Returns NULL only when memory_max is too small to
 * hold the libraries themselves (some tens of KiB). */
LuaSandbox *luasandbox_new(const LuaSandboxLimits *limits);
/* Closes the state; NULL is ignored. */
void luasandbox_free(LuaSandbox *sb);
/* The state, to push arguments and read results; the sandbox owns it. */
lua_State *luasandbox_state(LuaSandbox *sb);

/* Loads text (never bytecode) named chunkname ("@path" for a file, so errors
 * read "path:LINE: ...", with the whole path even where Lua would shorten
 * it) and runs it under the budget with the sandbox's globals as its
 * environment, leaving its nresults results (or LUA_MULTRET) on the stack.
 * On failure returns -1 with err (invalid_params) holding Lua's message
 * (file:line: what), then, for a runtime error, LUASANDBOX_TRACEBACK and the
 * traceback; nothing is pushed. Running out of memory reads "memory limit of
 * N bytes exceeded", passing the budget "instruction budget of N exceeded",
 * passing the wall-clock limit "time limit of N ms exceeded", a pattern
 * call past its bound "pattern too complex: step limit of N exceeded". */
int luasandbox_run(LuaSandbox *sb, const char *chunk, size_t len, const char *chunkname,
                   int nresults, VigilError *err);

/* Reads a whole file into memory (at most max bytes) and runs it as above,
 * named "@path". A missing or unreadable file, or one over max, is an error
 * naming the path. */
int luasandbox_run_file(LuaSandbox *sb, const char *path, size_t max, int nresults,
                        VigilError *err);

/* Calls the function below nargs arguments on the stack, under the budget
 * (lua_pcall with a traceback handler). Same failure contract. */
int luasandbox_call(LuaSandbox *sb, int nargs, int nresults, VigilError *err);

/* For C functions a host adds to a sandbox (and the sandbox's own wrappers):
 * counts n instructions of work done in C against the current run or call,
 * and raises the limit error (naming the Lua line that called the C
 * function) when that passes the budget or the wall-clock limit. Call it
 * only from a C function running inside luasandbox_run or _call, before the
 * work. */
void luasandbox_charge(lua_State *L, uint64_t n);

/* The same for work over `bytes` bytes looked at one by one: charges
 * 1 + bytes / LUASANDBOX_SCAN_BYTES. */
void luasandbox_charge_bytes(lua_State *L, size_t bytes);

/* Compiles the text chunk (len bytes; never bytecode) as lua_load does,
 * handing it to Lua's parser LUASANDBOX_LOAD_PIECE bytes at a time and
 * charging each piece (luasandbox_charge_bytes) before
 * the parser reads it, so a chunk that is long or slow to parse is stopped by the budget or
 * the clock between two pieces. Pushes the function, or the error message,
 * and returns lua_load's status; past a limit the message is the limit's
 * and the next instruction raises it again. Only inside a run or call of
 * the sandbox (luasandbox_run loads its own chunk this way). */
int luasandbox_load(lua_State *L, const char *chunk, size_t len, const char *chunkname);

/* Reads the file at path (at most max bytes; a UTF-8 byte order mark at its
 * start is skipped) and compiles it with luasandbox_load, named "@path".
 * Pushes the function or a message ("path: cannot open: ...", "path: larger
 * than N bytes", or Lua's), and returns LUA_OK or an error status. For
 * require. */
int luasandbox_load_file(lua_State *L, const char *path, size_t max);

/* Bytes allocated now, and allocations refused (over memory_max) since
 * luasandbox_new. */
size_t luasandbox_memory(const LuaSandbox *sb);
size_t luasandbox_refusals(const LuaSandbox *sb);

#endif
