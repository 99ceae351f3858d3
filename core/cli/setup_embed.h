/*
 * Files compiled into vigil (cmake/embed.cmake): the OpenCode plugin that
 * `vigil setup opencode` writes out, from plugins/harness/opencode.js.
 * NUL-terminated; _len does not count the NUL.
 */
#ifndef VIGIL_SETUP_EMBED_H
#define VIGIL_SETUP_EMBED_H

#include <stddef.h>

extern const unsigned char setup_opencode_plugin[];
extern const size_t setup_opencode_plugin_len;

#endif
