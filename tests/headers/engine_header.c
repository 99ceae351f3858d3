/*
 * A build check, not a test that runs: the engine's header must stand on its
 * own, without a transport or an interpreter. A second front end drives the
 * engine through engine.h alone, so engine.h may not pull in core/rpc/,
 * msgpack or Lua. This file is compiled with only core/ and libuv on the
 * include path (tests/CMakeLists.txt, target engine_header_check): an
 * include of lua.h fails to compile, and the guards below catch what the
 * system include path would otherwise let through.
 */
#include "engine/engine.h"

#if defined(VIGIL_RPC_CHANNEL_H) || defined(VIGIL_RPC_SERVER_H) || \
    defined(VIGIL_RPC_DECODER_H) || defined(VIGIL_RPC_PACK_H)
#error "engine.h includes core/rpc/: the engine must not know its transport"
#endif
#if defined(MSGPACK_H) || defined(MSGPACK_VERSION_MAJOR)
#error "engine.h includes msgpack: packing belongs to the front end (api*.c)"
#endif
#if defined(LUA_VERSION_NUM) || defined(VIGIL_POLICY_H) || defined(VIGIL_LUASANDBOX_H)
#error "engine.h includes Lua or policy.h: forward-declare what it names"
#endif

/* Something to compile: the engine's API is usable from here. */
Engine *engine_header_check(uv_loop_t *loop, VigilConfig *cfg);

Engine *
engine_header_check(uv_loop_t *loop, VigilConfig *cfg)
{
  return engine_new(loop, cfg, NULL);
}
