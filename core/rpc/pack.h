/*
 * The one way the engine packs a msgpack str: every string it sends, from
 * a key to an error message to an envelope, goes through rpc_pack_str, which
 * guarantees valid UTF-8 on the wire whatever bytes a caller slipped into
 * it. A peer with a strict decoder can therefore never lose its connection
 * to a string another peer chose (issue 7: a label of b"web\xff" on one
 * connection broke every other connection of its session).
 */
#ifndef VIGIL_RPC_PACK_H
#define VIGIL_RPC_PACK_H

#include <msgpack.h>
#include <stddef.h>

/* Packs s[0..len) as a msgpack str. Valid UTF-8 is packed as it is; a string
 * that is not is packed escaped (utf8_escape_invalid: bad bytes as \xNN,
 * backslashes doubled), so what a person reads shows the bytes that came
 * in. Everything the engine sends as str must be packed here. */
void rpc_pack_str(msgpack_packer *pk, const char *s, size_t len);

#endif
