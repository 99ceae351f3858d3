/*
 * What the connection needs of an argument builder (vigil_args, args.c):
 * the first refusal, and the params array a request carries.
 */
#ifndef VIGIL_CLIENT_ARGS_H
#define VIGIL_CLIENT_ARGS_H

#include "vigil/client.h"

/* 0, or -1 with err set to the first refusal of an adder. */
int args_check(const vigil_args *args, const char *method, vigil_error *err);

/* Packs the params of a message: [] for NULL or no keys, else [{...}],
 * with key: value (a string) added when both are non-NULL and args has no
 * entry of that key (a default the library gives, the host's own wins). */
void args_pack_params(const vigil_args *args, msgpack_packer *pk, const char *key,
                      const char *value);

#endif
