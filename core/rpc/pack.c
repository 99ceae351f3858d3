/*
 * The engine's str packer (see pack.h). The check is one pass over the
 * bytes; only a string that fails it is copied, escaped, into a buffer.
 */
#include "rpc/pack.h"

#include "base/strbuf.h"
#include "base/utf8.h"

void
rpc_pack_str(msgpack_packer *pk, const char *s, size_t len)
{
  if (utf8_valid(s, len)) {
    msgpack_pack_str(pk, len);
    msgpack_pack_str_body(pk, s, len);
    return;
  }
  StrBuf esc = STRBUF_INIT;
  utf8_escape_invalid(&esc, s, len);
  msgpack_pack_str(pk, esc.len);
  msgpack_pack_str_body(pk, strbuf_cstr(&esc), esc.len);
  strbuf_free(&esc);
}
